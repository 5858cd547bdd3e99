/* xyz_writer.h — writes a frame as XYZ or extended XYZ (Lattice, pbc,
 * Properties=species:S:1:pos:R:3, Step, Time), the format xyz_reader.c reads
 * back. Positions are written with 10 decimals. */
#ifndef MDNL_XYZ_WRITER_H
#define MDNL_XYZ_WRITER_H

#include "frame.h"
#include "mdnl.h"

#include <stdio.h>

MDNL_BEGIN_C

/* MDNL_ERR_RESOURCE when the stream reports a write error. */
mdnl_status mdnl_xyz_write(FILE *fp, const mdnl_frame *f, int extended);

/* Extended XYZ with the extras an extended XYZ reader kept (NULL: as
 * mdnl_xyz_write): the other Properties columns after pos, the other comment
 * keys after Step and Time. The extras must belong to this frame (same atom
 * count). */
struct mdnl_xyz_extras;
mdnl_status mdnl_xyz_write_extras(FILE *fp, const mdnl_frame *f, const struct mdnl_xyz_extras *ex);

MDNL_END_C

#endif

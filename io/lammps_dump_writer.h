/* lammps_dump_writer.h — writes a frame as a LAMMPS text dump (`dump custom`
 * with the columns id type element x y z), the format
 * io/lammps_dump_reader.c and LAMMPS' read_dump / rerun read back. */
#ifndef MDNL_LAMMPS_DUMP_WRITER_H
#define MDNL_LAMMPS_DUMP_WRITER_H

#include "frame.h"
#include "mdnl.h"

#include <stdio.h>

MDNL_BEGIN_C

/* The box: the cell's lengths and angles in LAMMPS' restricted triclinic
 * form (a along x, b in the xy plane; a cell given otherwise is rotated,
 * positions with it, fractional coordinates kept), the origin at 0, flags pp
 * on periodic axes and ff on open ones; an open frame without a cell gets
 * its atoms' bounding box (ff ff ff). ids are 1..N in the frame's order,
 * types the species' indices + 1, element the species' names; numbers with
 * 10 significant digits (the box with 17). MDNL_ERR_RESOURCE on a write
 * error. */
mdnl_status mdnl_lammps_dump_write(FILE *fp, const mdnl_frame *f);

MDNL_END_C

#endif

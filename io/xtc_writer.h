/* xtc_writer.h — GROMACS XTC output, frame by frame (the twin of
 * xtc_reader.h). Positions and the box are written in nm (Å / 10, or as they
 * are when `native`), compressed at `precision` (1000: 0.001 nm). Every atom
 * is sent as a full-range coordinate without the reference writer's runs of
 * small differences: a valid stream for every XTC reader, about a fifth
 * larger than GROMACS' for water. Frames of at most 9 atoms are plain floats,
 * as XTC requires. */
#ifndef MDNL_XTC_WRITER_H
#define MDNL_XTC_WRITER_H

#include "frame.h"
#include "mdnl.h"

#include <stdbool.h>
#include <stdio.h>

MDNL_BEGIN_C

/* Appends one frame. MDNL_ERR_INPUT when a coordinate times the precision
 * does not fit in an int, or the step does not fit in XTC's int;
 * MDNL_ERR_RESOURCE when the write fails. */
mdnl_status mdnl_xtc_write(FILE *fp, const mdnl_frame *f, bool native, float precision);

MDNL_END_C

#endif

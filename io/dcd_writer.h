/* dcd_writer.h — DCD output (the twin of dcd_reader.h): a little-endian
 * CHARMM-style file (version 24) with 4-byte markers, read by CHARMM, NAMD,
 * VMD, MDAnalysis and mdnl. Positions are Å as they are (float32). When the
 * first frame has a cell, every frame carries a unit cell record
 * (A, cos gamma, B, cos beta, cos alpha, C); DCD cannot hold a cell's
 * orientation, so a cell that is not already a along x and b in the xy plane
 * is turned into that orientation, the positions with it (through fractional
 * coordinates). A frame without a cell in such a file gets a zero cell (as
 * MDAnalysis writes). The header's frame count, ISTART, NSAVC and DELTA are
 * filled in at the end from the steps and times seen, so the output must be
 * a seekable file (not standard output). */
#ifndef MDNL_DCD_WRITER_H
#define MDNL_DCD_WRITER_H

#include "frame.h"
#include "mdnl.h"

#include <stdbool.h>
#include <stdio.h>

MDNL_BEGIN_C

typedef struct mdnl_dcd_writer {
    FILE *fp; /* borrowed */
    int64_t nframes, natoms;
    bool cell;
    int64_t step0, step1; /* steps of the first two frames */
    double time0, time1;
    bool has_time;
    float *buf; /* one coordinate record, owned */
} mdnl_dcd_writer;

/* Appends a frame (the first writes the header). MDNL_ERR_INPUT when the
 * atom count changes between frames (DCD holds one). */
mdnl_status mdnl_dcd_write(mdnl_dcd_writer *w, const mdnl_frame *f);
/* Rewrites the header with the final counts and frees the buffer. */
mdnl_status mdnl_dcd_finish(mdnl_dcd_writer *w);
void mdnl_dcd_writer_free(mdnl_dcd_writer *w); /* frees the buffer; safe twice */

MDNL_END_C

#endif

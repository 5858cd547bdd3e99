/* trr_reader.h — streaming reader of GROMACS TRR trajectories (XDR,
 * big-endian, magic 1993), written from the format's public description
 * (docs/formats.md). The header gives the byte size of each block
 * (box, virial, pressure, x, v, f); single or double precision follows from
 * those sizes. Positions and the box are converted from nm to Å (x 10) unless
 * `native`; velocities and forces are skipped.
 *
 * A frame without positions (x size 0: GROMACS writes velocities or forces
 * more often than positions) is skipped: such frames are not counted, and
 * frame indices number the frames that hold positions. TRR carries no
 * species (every atom is "X"; --topology). A box of zeros, or no box, is an
 * open frame. Errors as the XTC reader's. The calling thread reads the
 * headers in order; worker threads read and convert the blocks
 * (io/binary_pool.h). Reached through io/reader.h. */
#ifndef MDNL_TRR_READER_H
#define MDNL_TRR_READER_H

#include "frame.h"
#include "mdnl.h"

#include <stdbool.h>
#include <stdint.h>

MDNL_BEGIN_C

typedef struct mdnl_trr_reader mdnl_trr_reader;

bool mdnl_trr_sniff(const unsigned char *head, size_t n); /* magic 1993, big-endian */
mdnl_status mdnl_trr_open(const char *path, bool native, mdnl_trr_reader **out);
mdnl_status mdnl_trr_next(mdnl_trr_reader *r, mdnl_frame *f);
mdnl_status mdnl_trr_skip(mdnl_trr_reader *r);
/* Workers decoding frames (--threads; <= 1: the calling thread), and the
 * frames that will be read (io/binary_pool.h); before the first read. */
void mdnl_trr_set_threads(mdnl_trr_reader *r, int threads);
void mdnl_trr_select(mdnl_trr_reader *r, int64_t start, int64_t stop, int64_t step);
mdnl_status mdnl_trr_count(mdnl_trr_reader *r, int64_t *n); /* frames with positions; walks the headers */
void mdnl_trr_close(mdnl_trr_reader *r);

MDNL_END_C

#endif

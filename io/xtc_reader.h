/* xtc_reader.h — streaming reader of GROMACS XTC trajectories (XDR,
 * big-endian, magic 1995), written from the format's public description
 * (docs/formats.md). The compressed coordinates ("xdr3dfcoord") are
 * decoded exactly as the reference decoder does: every coordinate is the
 * float32 integer * (float)(1 / precision) the reference returns, bit for bit
 * (tests/test_binary_formats.c checks this against MDAnalysis). Positions and
 * the box are converted from nm to Å (x 10, in double) unless `native`.
 *
 * XTC carries no species: every atom is "X" (--topology supplies names).
 * A box of zeros is an open frame; any other box is periodic in x, y, z.
 *
 * Errors are MDNL_ERR_INPUT, "FILE: frame K, byte OFFSET: expected ...,
 * found ...". Every count in a header is bounded by the bytes left in the
 * file before anything is allocated, and the bit decoder never reads past
 * the frame's byte count. The calling thread reads the headers in order;
 * worker threads read and decode the coordinates (io/binary_pool.h).
 * Reached through io/reader.h. */
#ifndef MDNL_XTC_READER_H
#define MDNL_XTC_READER_H

#include "frame.h"
#include "mdnl.h"

#include <stdbool.h>
#include <stdint.h>

MDNL_BEGIN_C

typedef struct mdnl_xtc_reader mdnl_xtc_reader;

/* Whether the first 4 bytes are XTC's magic (1995, big-endian). */
bool mdnl_xtc_sniff(const unsigned char *head, size_t n);

mdnl_status mdnl_xtc_open(const char *path, bool native, mdnl_xtc_reader **out);
mdnl_status mdnl_xtc_next(mdnl_xtc_reader *r, mdnl_frame *f); /* MDNL_END after the last frame */
mdnl_status mdnl_xtc_skip(mdnl_xtc_reader *r);                /* reads the header, seeks past the data */
mdnl_status mdnl_xtc_count(mdnl_xtc_reader *r, int64_t *n);   /* walks the headers; the cursor stays */
void mdnl_xtc_close(mdnl_xtc_reader *r);                       /* NULL is a no-op */
/* Workers decoding frames (--threads; <= 1: the calling thread), and the
 * frames that will be read (io/binary_pool.h); before the first read.
 * Frames, values and errors are the same for every count. */
void mdnl_xtc_set_threads(mdnl_xtc_reader *r, int threads);
void mdnl_xtc_select(mdnl_xtc_reader *r, int64_t start, int64_t stop, int64_t step);

/* Decodes one block of compressed coordinates (the bytes after the byte
 * count) into natoms * 3 floats, exactly as the reference decoder: a test
 * and fuzz hook. `minint`, `maxint` and `smallidx` are the block's header
 * values. Returns 0 on success, else a static description of the defect. */
const char *mdnl_xtc_decode(const uint8_t *buf, size_t nbytes, int64_t natoms, float precision,
                            const int32_t minint[3], const int32_t maxint[3], int32_t smallidx, float *out);

MDNL_END_C

#endif

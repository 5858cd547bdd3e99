/* xdr.h — what the binary trajectory readers and writers share (XTC, TRR:
 * io/xtc_*.c, io/trr_reader.c; DCD: io/dcd_*.c): a file opened for
 * reading with its size known (every count in a header is bounded by the
 * bytes that are left before anything is allocated), exact reads that name
 * the file, the frame and the byte offset when they come up short, and the
 * byte-order helpers (XDR is big-endian; DCD is either).
 *
 * Error messages follow SPEC §7 with the byte offset in place of a line:
 * "FILE: frame K, byte OFFSET: expected ..., found ...". */
#ifndef MDNL_XDR_H
#define MDNL_XDR_H

#include "frame.h"
#include "mdnl.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

MDNL_BEGIN_C

typedef struct mdnl_bfile {
    FILE *fp;
    char *path;   /* owned */
    int64_t size; /* bytes in the file */
    int64_t pos;  /* offset of the next byte read */
} mdnl_bfile;

/* Opens a regular file for reading. MDNL_ERR_INPUT for a missing file, a
 * directory or anything that is not a regular file ("PATH: ..."; `what`
 * names the format expected). */
mdnl_status mdnl_bfile_open(mdnl_bfile *b, const char *path, const char *what);
void mdnl_bfile_close(mdnl_bfile *b); /* safe on a zeroed struct */

/* A zeroed reader struct of `size` bytes whose first member is an
 * mdnl_bfile, opened on `path`: the common start of every binary reader's
 * _open. NULL with *st set (and the error recorded) on failure; the reader
 * frees it with free() after mdnl_bfile_close. */
void *mdnl_bfile_reader_new(size_t size, const char *path, const char *what, mdnl_status *st);

/* Reads exactly n bytes. Returns 1 when they were read, 0 at a clean end of
 * file (no byte left), -1 when the file ends inside them (b->pos is then
 * unchanged, so the caller can name where the short record began). */
int mdnl_bfile_read(mdnl_bfile *b, void *buf, size_t n);
/* Moves to an absolute offset within the file; MDNL_ERR_INPUT beyond it. */
mdnl_status mdnl_bfile_seek(mdnl_bfile *b, int64_t offset);
/* Records MDNL_ERR_INPUT "FILE: frame K, byte AT: MESSAGE" and returns it. */
mdnl_status mdnl_bfile_error(const mdnl_bfile *b, int64_t frame, int64_t at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Counts the frames from the cursor to the end by calling skip(r) until
 * MDNL_END, then puts the cursor and *frame (the reader's index of the next
 * frame, which skip advances) back. *n is the index the end is reached at. */
mdnl_status mdnl_bfile_count(mdnl_bfile *b, int64_t *frame, mdnl_status (*skip)(void *r), void *r, int64_t *n);
static inline int64_t mdnl_bfile_left(const mdnl_bfile *b) { return b->size - b->pos; }

/* Big- and little-endian loads and stores. */
static inline uint32_t mdnl_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static inline uint32_t mdnl_le32(const uint8_t *p)
{
    return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | (uint32_t)p[0];
}
static inline uint64_t mdnl_be64(const uint8_t *p) { return (uint64_t)mdnl_be32(p) << 32 | mdnl_be32(p + 4); }
static inline uint64_t mdnl_le64(const uint8_t *p) { return (uint64_t)mdnl_le32(p + 4) << 32 | mdnl_le32(p); }
static inline int32_t mdnl_be_i32(const uint8_t *p) { return (int32_t)mdnl_be32(p); }
static inline float mdnl_be_f32(const uint8_t *p)
{
    uint32_t u = mdnl_be32(p);
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}
static inline double mdnl_be_f64(const uint8_t *p)
{
    uint64_t u = mdnl_be64(p);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}
static inline void mdnl_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}
static inline void mdnl_put_be_f32(uint8_t *p, float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    mdnl_put_be32(p, u);
}

/* Gives every atom of f the one species "X" (files without species: XTC,
 * TRR, DCD; --topology replaces them). f must hold room for f->natoms. */
void mdnl_frame_species_unknown(mdnl_frame *f);

MDNL_END_C

#endif

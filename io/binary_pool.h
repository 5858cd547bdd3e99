/* binary_pool.h — frames of a binary trajectory with per-frame byte extents
 * (XTC, DCD, TRR: io/xtc_reader.c, io/dcd_reader.c, io/trr_reader.c)
 * decoded by the worker pool of io/chunk_pool.h, delivered in file order.
 *
 * The calling thread walks the file in order with the format's head(): it
 * finds where frame k's bytes are (DCD: arithmetic, its frames have a fixed
 * size; TRR, XTC: the frame's header, which gives the block sizes or the
 * compressed byte count) and checks what needs the order (a truncated file,
 * a bad header). Workers then `pread` those bytes themselves and run the
 * format's decode() into a frame of their slot, allocated by the caller's
 * frame allocator (mdnl_frame's pos_alloc: pinned host memory on the CUDA
 * backend), which next() swaps into the caller's frame (mdnl_frame_take):
 * no copy on the calling thread.
 *
 * Memory: at most a window of frames, 2 x threads, fewer when frames are
 * large (about 256 MiB of frames and bytes in flight; at least 2 frames).
 * With threads <= 1 nothing starts: next() reads and decodes on the calling
 * thread, through the same two functions, straight into the caller's frame
 * (the pool holds no frame), so that one thread and many give the same
 * frames and the same errors. An error of head() or decode() is reported
 * when its frame's turn comes, with the message it had; skip() reports
 * head()'s errors only (a skipped frame is not decoded). Frames a selection
 * (mdnl_bin_pool_select) leaves out are not decoded. */
#ifndef MDNL_BINARY_POOL_H
#define MDNL_BINARY_POOL_H

#include "frame.h"
#include "mdnl.h"
#include "xdr.h"

#include <stdbool.h>
#include <stdint.h>

MDNL_BEGIN_C

/* Where one frame is, as head() found it. */
typedef struct mdnl_bin_frame {
    int64_t index;   /* the frame's index (for messages) */
    int64_t at, len; /* the bytes decode() needs: offset in the file, count */
    /* The format's own header of the frame (TRR: its block sizes). */
    _Alignas(8) unsigned char head[128];
} mdnl_bin_frame;

typedef struct mdnl_bin_ops {
    /* On the calling thread, in file order: the next frame into *h;
     * MDNL_END at a clean end; an error recorded. */
    mdnl_status (*head)(void *ctx, mdnl_bin_frame *h);
    /* On any thread: the frame from its h->len bytes, read from h->at, into
     * f (mdnl_frame_reserve, positions, box, step, time, species "X"); an
     * error recorded with mdnl_bfile_error. Reads nothing but ctx's
     * constant fields. */
    mdnl_status (*decode)(void *ctx, const mdnl_bin_frame *h, const uint8_t *bytes, mdnl_frame *f);
} mdnl_bin_ops;

typedef struct mdnl_bin_pool mdnl_bin_pool;

/* A pool reading `b` (borrowed: open until mdnl_bin_pool_close) with
 * `threads` workers; no thread starts before the first next or skip. */
mdnl_status mdnl_bin_pool_open(const mdnl_bin_ops *ops, void *ctx, const mdnl_bfile *b, int threads,
                               mdnl_bin_pool **out);
/* Workers for the reads to come (--threads); before the first read only. */
void mdnl_bin_pool_set_threads(mdnl_bin_pool *p, int threads);
/* Frames start, start + step, ... before stop (stop < 0: to the end) are
 * decoded ahead; the others only when next() asks for them. */
void mdnl_bin_pool_select(mdnl_bin_pool *p, int64_t start, int64_t stop, int64_t step);
mdnl_status mdnl_bin_pool_next(mdnl_bin_pool *p, mdnl_frame *f);
mdnl_status mdnl_bin_pool_skip(mdnl_bin_pool *p);
void mdnl_bin_pool_close(mdnl_bin_pool *p); /* NULL is a no-op */

MDNL_END_C

#endif

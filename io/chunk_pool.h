/* chunk_pool.h — an ordered parallel map for the writers and the H5MD
 * reader: N worker threads make numbered pieces (compressed HDF5 chunks,
 * formatted TSV row blocks, decoded frames of positions) into buffers, and
 * the calling thread takes them in order, 0, 1, 2, ..., so that what it
 * writes or returns is what one thread would.
 *
 * Workers never call HDF5 or stdio: only the calling thread does (the serial
 * HDF5 library is not thread-safe), inside `take`. At most `window` pieces
 * are made ahead of the one being taken, so memory is window buffers, not
 * the whole output. With one thread (or one job) everything runs inline on
 * the calling thread, with no thread started.
 *
 * Errors: `make` returns false when it cannot (out of memory); the caller
 * learns it when that piece's turn comes (`take` is not called for it), so
 * the first failure in output order is the one reported. A failing `take`
 * stops the workers. Either way no later piece is taken. */
#ifndef MDNL_CHUNK_POOL_H
#define MDNL_CHUNK_POOL_H

#include "mdnl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

MDNL_BEGIN_C

/* One piece's buffer; reused from piece to piece of the same slot. */
typedef struct mdnl_pool_buf {
    unsigned char *data;
    size_t len, cap;
    unsigned flags; /* for the job's own use (an HDF5 filter mask) */
} mdnl_pool_buf;

/* Grows b to at least n bytes (contents kept); false when out of memory. */
bool mdnl_pool_buf_reserve(mdnl_pool_buf *b, size_t n);

/* On a worker: makes piece k into b (b->len = its size). */
typedef bool (*mdnl_pool_make_fn)(void *ctx, int64_t k, mdnl_pool_buf *b);
/* On the calling thread, in order of k. */
typedef mdnl_status (*mdnl_pool_take_fn)(void *ctx, int64_t k, const mdnl_pool_buf *b);

/* Runs make for k = 0..njobs-1 on `threads` workers (<= 1: inline) and take
 * in order. A make failure returns MDNL_ERR_RESOURCE with "WHAT: out of host
 * memory"; a take failure returns take's status. */
mdnl_status mdnl_pool_map(int threads, int64_t njobs, void *ctx, mdnl_pool_make_fn make, mdnl_pool_take_fn take,
                          const char *what);

/* The pool itself, for a caller that takes pieces one at a time (a reader
 * asked for one frame per call). Workers make piece k only once the caller
 * has posted it (k < the last mdnl_pool_post) and its slot is free: a
 * reader prepares piece k's description (with HDF5, on its own thread)
 * before it posts k, and may do so for k < mdnl_pool_room(). Piece k lives
 * in slot k % mdnl_pool_window(), so per-slot scratch of the caller's is
 * the worker's alone while it makes k. With threads <= 1 no thread starts:
 * mdnl_pool_wait makes the piece itself (window 1). */
typedef struct mdnl_pool mdnl_pool;
mdnl_status mdnl_pool_start(int threads, int window, void *ctx, mdnl_pool_make_fn make, const char *what,
                            mdnl_pool **out);
int mdnl_pool_window(const mdnl_pool *p);
/* Pieces below this may be posted: those taken plus the window. */
int64_t mdnl_pool_room(const mdnl_pool *p);
/* Lets workers make the pieces below njobs (a no-op unless it grows). */
void mdnl_pool_post(mdnl_pool *p, int64_t njobs);
/* Waits for the next piece in order (posted before), *k its number, *b its
 * buffer until mdnl_pool_release. MDNL_ERR_RESOURCE with "WHAT: out of host
 * memory" when make failed; release it all the same. */
mdnl_status mdnl_pool_wait(mdnl_pool *p, int64_t *k, mdnl_pool_buf **b);
void mdnl_pool_release(mdnl_pool *p);
/* Stops the workers (each finishes the piece it makes), frees the pool;
 * NULL is a no-op. */
void mdnl_pool_stop(mdnl_pool *p);

/* The CPUs this process may run on (sched_getaffinity), at least 1. */
int mdnl_cpus_available(void);

/* Shuffles then deflates n bytes of elements of `elsize` bytes at
 * `level` into b, as HDF5's shuffle + deflate filter pipeline does: the
 * shuffle is HDF5's, the deflate a zlib stream made by ISA-L's igzip
 * (level 1) or libdeflate (other levels), not zlib's compress2 bytes; any
 * inflate, HDF5's filter included, decodes it to the same shuffled chunk.
 * b->flags is the chunk's filter mask (0, or 0x2 when the stream did not
 * fit its bound and the chunk is stored shuffled only, as HDF5 stores it
 * when its optional deflate filter fails). False when out of memory. */
bool mdnl_shuffle_deflate(const void *src, size_t n, size_t elsize, int level, mdnl_pool_buf *b);

MDNL_END_C

#endif

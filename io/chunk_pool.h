/* chunk_pool.h — an ordered parallel map for the writers: N worker threads
 * make numbered pieces of output (compressed HDF5 chunks, formatted TSV row
 * blocks) into buffers, and the calling thread takes them in order, 0, 1,
 * 2, ..., so that what it writes is the bytes one thread would write.
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

/* The CPUs this process may run on (sched_getaffinity), at least 1. */
int mdnl_cpus_available(void);

/* Shuffles then deflates n bytes of elements of `elsize` bytes at zlib
 * `level` into b, as HDF5's shuffle + deflate filter pipeline does (same
 * bytes): b->flags is the chunk's filter mask (0, or 0x2 when deflate did
 * not shrink the chunk within HDF5's bound and the chunk is stored
 * shuffled only, as HDF5 stores it when its optional deflate filter fails).
 * False when out of memory. */
bool mdnl_shuffle_deflate(const void *src, size_t n, size_t elsize, int level, mdnl_pool_buf *b);

MDNL_END_C

#endif

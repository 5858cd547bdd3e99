/* cuda_check.cuh — CUDA error checking and a grow-only device buffer, shared
 * by every CUDA translation unit in kernels/.
 *
 * MDNL_CUDA_CHECK(call) evaluates a CUDA runtime call; on failure it records
 * "CALL failed at FILE:LINE: cudaErrorName: description" with mdnl_error()
 * (MDNL_ERR_RESOURCE, SPEC §7 exit 4) and makes the enclosing function
 * return that status. It is meant for functions returning mdnl_status.
 *
 * MDNL_CUDA_LAUNCHED(stream) goes after every kernel launch: it checks the
 * launch error, and in a debugging build (cmake -DMDNL_CUDA_SYNC=ON) it
 * also synchronizes
 * the stream, so that an asynchronous fault is reported at the launch that
 * caused it rather than at some later call. (llm.c cudaCheck, GPUMD
 * STRONG_DEBUG; unlike GPUMD, library code never exits.)
 */
#ifndef MDNL_CUDA_CHECK_CUH
#define MDNL_CUDA_CHECK_CUH

#include "mdnl.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdlib.h>

/* Records the failure of `call_text` and returns MDNL_ERR_RESOURCE. */
static inline mdnl_status mdnl_cuda_fail(cudaError_t e, const char *call_text, const char *file, int line)
{
    return mdnl_error(MDNL_ERR_RESOURCE, "CUDA: %s failed at %s:%d: %s: %s", call_text, file, line,
                      cudaGetErrorName(e), cudaGetErrorString(e));
}

#define MDNL_CUDA_CHECK(call)                                                                                          \
    do {                                                                                                               \
        cudaError_t mdnl_cuda_e_ = (call);                                                                             \
        if (mdnl_cuda_e_ != cudaSuccess) {                                                                             \
            (void)cudaGetLastError(); /* clear a non-sticky error so that later calls can proceed */                  \
            return mdnl_cuda_fail(mdnl_cuda_e_, #call, __FILE__, __LINE__);                                            \
        }                                                                                                              \
    } while (0)

/* Whether to synchronize after each launch (a debugging build: cmake
 * -DMDNL_CUDA_SYNC=ON). */
static inline int mdnl_cuda_sync_debug(void)
{
#if defined(MDNL_CUDA_SYNC) && MDNL_CUDA_SYNC
    return 1;
#else
    return 0;
#endif
}

#define MDNL_CUDA_LAUNCHED(stream)                                                                                     \
    do {                                                                                                               \
        MDNL_CUDA_CHECK(cudaGetLastError());                                                                           \
        if (mdnl_cuda_sync_debug())                                                                                    \
            MDNL_CUDA_CHECK(cudaStreamSynchronize(stream));                                                            \
    } while (0)

/* A device buffer that only grows: reserve() keeps the allocation when it is
 * large enough, so a buffer reused frame after frame allocates once. Growing
 * discards the content. Zero-initialise; free with mdnl_dbuf_free(). The
 * pointer is owned by the struct and valid until the next reserve or free. */
typedef struct mdnl_dbuf {
    void *ptr;
    size_t cap;
} mdnl_dbuf;

static inline mdnl_status mdnl_dbuf_reserve(mdnl_dbuf *b, size_t bytes, const char *what)
{
    if (bytes <= b->cap && b->ptr)
        return MDNL_OK;
    if (b->ptr) {
        cudaError_t e = cudaFree(b->ptr);
        b->ptr = NULL;
        b->cap = 0;
        if (e != cudaSuccess)
            return mdnl_cuda_fail(e, "cudaFree", __FILE__, __LINE__);
    }
    /* Over-allocate a little so that slowly growing sizes don't reallocate
     * every frame (not past what size_t holds: a wrapped size would allocate
     * too little). */
    size_t want = bytes <= SIZE_MAX / 2 ? bytes + bytes / 8 + 256 : bytes;
    cudaError_t e = cudaMalloc(&b->ptr, want);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        b->ptr = NULL;
        /* SPEC §7: exit 4 with the numbers, what was needed and what is free. */
        size_t free_b = 0, total_b = 0;
        if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
            (void)cudaGetLastError();
            return mdnl_error(MDNL_ERR_RESOURCE, "CUDA: out of device memory for %s: needed %zu bytes (%s)", what,
                              want, cudaGetErrorString(e));
        }
        return mdnl_error(MDNL_ERR_RESOURCE,
                          "CUDA: out of device memory for %s: needed %zu bytes, %zu bytes free of %zu (%s)", what,
                          want, free_b, total_b, cudaGetErrorString(e));
    }
    b->cap = want;
    return MDNL_OK;
}

/* reserve(), and a new allocation is zeroed (cudaMemsetAsync on `stream`):
 * for a buffer a kernel reads in whole words past what was written this
 * frame (dense-walk's slab), so that no read is of uninitialised memory. */
static inline mdnl_status mdnl_dbuf_reserve_zeroed(mdnl_dbuf *b, size_t bytes, const char *what, cudaStream_t stream)
{
    const size_t before = b->cap;
    mdnl_status st = mdnl_dbuf_reserve(b, bytes, what);
    if (st == MDNL_OK && b->cap != before) { /* a growth always changes cap */
        cudaError_t e = cudaMemsetAsync(b->ptr, 0, b->cap, stream);
        if (e != cudaSuccess)
            return mdnl_cuda_fail(e, "cudaMemsetAsync", __FILE__, __LINE__);
    }
    return st;
}

static inline void mdnl_dbuf_free(mdnl_dbuf *b)
{
    if (!b)
        return;
    if (b->ptr)
        cudaFree(b->ptr);
    b->ptr = NULL;
    b->cap = 0;
}

#endif

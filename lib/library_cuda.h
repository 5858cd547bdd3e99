/* library_cuda.h — the CUDA pieces the library (library.c) adds to the
 * kernels': the ordering after the caller's stream and the calling thread's
 * device. (The image shifts and vectors of a device list are the kernels':
 * pair_shift_cuda.h.) Plain C; the functions exist only in CUDA builds. */
#ifndef MDNL_LIBRARY_CUDA_H
#define MDNL_LIBRARY_CUDA_H

#include "mdnl.h"

#include <stdint.h>

MDNL_BEGIN_C

/* An event; one per library context. Free with mdnl_lib_cuda_free. */
typedef struct mdnl_lib_cuda mdnl_lib_cuda;

mdnl_status mdnl_lib_cuda_create(mdnl_lib_cuda **out);
void mdnl_lib_cuda_free(mdnl_lib_cuda *c); /* NULL is a no-op */

/* Records the handle's event on `stream` (a cudaStream_t; NULL: the legacy
 * default stream) and returns it as a cudaEvent_t in *event: work queued
 * after a wait on it sees everything the caller queued on that stream. */
mdnl_status mdnl_lib_cuda_mark(mdnl_lib_cuda *c, void *stream, void **event);

/* Makes `device` the calling thread's current CUDA device and returns the
 * one it replaces (-1 when it cannot: then nothing changed), so that a
 * library call runs on its context's device and restores the caller's. */
int mdnl_lib_cuda_swap_device(int device);

/* Waits for everything queued on `stream`. */
mdnl_status mdnl_lib_cuda_sync(void *stream);

MDNL_END_C

#endif

/* cuda_host.h — page-locked (pinned) host memory for buffers that are copied
 * to the device every frame: copies from them run at full PCIe speed and
 * asynchronously. Plain C; exists only in CUDA builds (guard with
 * MDNL_HAVE_CUDA). */
#ifndef MDNL_CUDA_HOST_H
#define MDNL_CUDA_HOST_H

#include "mdnl.h"
#include "nlist.h"
#include "nlist_cuda.h"

#include <stddef.h>

/* Frames a pipeline may have in flight on the device at once (each with its
 * own completion event in the energy and histogram handles). */
#define MDNL_CUDA_TICKETS 4

MDNL_BEGIN_C

/* `bytes` of pinned host memory, or NULL with MDNL_ERR_RESOURCE recorded
 * (naming `what`). Free with mdnl_cuda_host_free. */
void *mdnl_cuda_host_alloc(size_t bytes, const char *what);
void mdnl_cuda_host_free(void *p); /* NULL is a no-op */

/* Waits for all queued device work (after a failure, before buffers it may
 * still write are freed). */
void mdnl_cuda_device_sync(void);

/* Makes the cudaStream_t `stream` wait for the cudaEvent_t `event`. */
mdnl_status mdnl_cuda_stream_wait(void *stream, void *event);

/* Copies a device CSR (nlist_cuda.h) built on `stream` into a host list
 * (resized with mdnl_nlist_reserve) and waits for the copy. */
mdnl_status mdnl_nlist_download_cuda(void *stream, const mdnl_nlist_dev *dev, mdnl_nlist *out);

/* Starts the CUDA runtime and the primary context of device 0 (what the
 * first CUDA call of a process pays, a few tenths of a second), so that a
 * caller can do it on a thread of its own while it opens its input.
 * MDNL_ERR_RESOURCE when no device is usable. */
mdnl_status mdnl_cuda_start(void);

MDNL_END_C

#endif

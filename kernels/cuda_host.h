/* cuda_host.h — page-locked (pinned) host memory for buffers that are copied
 * to the device every frame: copies from them run at full PCIe speed and
 * asynchronously. Plain C; exists only in CUDA builds (guard with
 * MDNL_HAVE_CUDA). */
#ifndef MDNL_CUDA_HOST_H
#define MDNL_CUDA_HOST_H

#include "mdnl.h"

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

MDNL_END_C

#endif

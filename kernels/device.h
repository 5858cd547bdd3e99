/* device.h — whether a CUDA device can be used. Implemented by device.cu in
 * CUDA builds and by device_none.c otherwise. */
#ifndef MDNL_DEVICE_H
#define MDNL_DEVICE_H

#include "mdnl.h"

MDNL_BEGIN_C

/* Number of usable CUDA devices: 0 when built without CUDA, when no driver
 * or device is present, or when the runtime reports an error. */
int mdnl_cuda_device_count(void);

/* The device the calling thread computes on: its override (below), else 0.
 * An MPI rank's device reaches its context through mdnl_opts.device. */
int mdnl_cuda_device_index(void);

/* The calling thread's device, overriding device 0 for
 * everything this thread creates and launches (k >= 0), or no override
 * (k < 0). Returns the override it replaces, so that a library call
 * (include/mdnl/mdnl.h: the context's device) restores it on return. */
int mdnl_cuda_use_device(int k);

/* One line naming the chosen device (e.g. "NVIDIA H100 80GB HBM3, sm_90"), or
 * "none". The string is static. */
const char *mdnl_cuda_device_name(void);

/* The chosen device's theoretical memory bandwidth in bytes per second:
 * 2 (double data rate) x the peak memory clock x the bus width in bytes,
 * from the runtime's device attributes; 0 when unknown (no device, built
 * without CUDA, or an attribute the runtime does not report). */
double mdnl_cuda_device_bandwidth(void);

MDNL_END_C

#endif

/* device.h — whether a CUDA device can be used. Implemented by device.cu in
 * CUDA builds and by device_none.c otherwise. */
#ifndef MDNL_DEVICE_H
#define MDNL_DEVICE_H

#include "mdnl.h"

MDNL_BEGIN_C

/* Number of usable CUDA devices: 0 when built without CUDA, when no driver
 * or device is present, or when the runtime reports an error. */
int mdnl_cuda_device_count(void);

/* One line naming device 0 (e.g. "NVIDIA H100 80GB HBM3, sm_90"), or
 * "none". The string is static. */
const char *mdnl_cuda_device_name(void);

MDNL_END_C

#endif

/* device_none.c — device.h for builds without CUDA: there is never a device. */
#include "device.h"

int mdnl_cuda_device_count(void) { return 0; }

const char *mdnl_cuda_device_name(void) { return "none (built without CUDA)"; }

int mdnl_cuda_device_index(void) { return 0; }

double mdnl_cuda_device_bandwidth(void) { return 0; }

int mdnl_cuda_use_device(int k)
{
    (void)k;
    return -1;
}

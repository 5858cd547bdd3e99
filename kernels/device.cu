/* device.cu — device.h for CUDA builds: asks the runtime, never fails. */
#include "device.h"

#include <cuda_runtime.h>
#include <stdio.h>

extern "C" int mdnl_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky "no driver" error */
        return 0;
    }
    return n;
}

/* A library context's device, for the calls it makes on this thread (-1: none). */
static thread_local int thread_device = -1;

extern "C" int mdnl_cuda_device_index(void)
{
    return thread_device >= 0 ? thread_device : 0;
}

extern "C" int mdnl_cuda_use_device(int k)
{
    const int before = thread_device;
    thread_device = k >= 0 ? k : -1;
    return before;
}

extern "C" const char *mdnl_cuda_device_name(void)
{
    static char name[320];
    cudaDeviceProp p;
    if (mdnl_cuda_device_count() < 1 || cudaGetDeviceProperties(&p, mdnl_cuda_device_index()) != cudaSuccess)
        return "none";
    snprintf(name, sizeof name, "%s, sm_%d%d, %.0f GiB", p.name, p.major, p.minor,
             (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    return name;
}

extern "C" double mdnl_cuda_device_bandwidth(void)
{
    int khz = 0, bits = 0;
    if (mdnl_cuda_device_count() < 1 ||
        cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, mdnl_cuda_device_index()) != cudaSuccess ||
        cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, mdnl_cuda_device_index()) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    return 2.0 * (double)khz * 1e3 * (double)bits / 8.0;
}

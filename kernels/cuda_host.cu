/* cuda_host.cu — pinned host memory (see cuda_host.h). */
#include "cuda_host.h"

#include <cuda_runtime.h>

extern "C" void *mdnl_cuda_host_alloc(size_t bytes, const char *what)
{
    void *p = NULL;
    cudaError_t e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        mdnl_error(MDNL_ERR_RESOURCE, "CUDA: cannot pin %zu bytes of host memory for %s: %s", bytes, what,
                   cudaGetErrorString(e));
        return NULL;
    }
    return p;
}

extern "C" void mdnl_cuda_host_free(void *p)
{
    if (p)
        (void)cudaFreeHost(p);
}

extern "C" void mdnl_cuda_device_sync(void)
{
    (void)cudaDeviceSynchronize();
    (void)cudaGetLastError();
}

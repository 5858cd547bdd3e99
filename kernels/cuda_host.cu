/* cuda_host.cu — pinned host memory (see cuda_host.h). */
#include "cuda_check.cuh"
#include "cuda_host.h"
#include "device.h"

#include <cuda_runtime.h>

extern "C" void *mdnl_cuda_host_alloc(size_t bytes, const char *what)
{
    void *p = NULL;
    /* any thread (the reader's frames): on this process's device, so that an
     * MPI rank on device k never makes a context on device 0 */
    cudaError_t e = cudaSetDevice(mdnl_cuda_device_index());
    if (e == cudaSuccess)
        e = cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable);
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
    if (p) {
        (void)cudaSetDevice(mdnl_cuda_device_index());
        (void)cudaFreeHost(p);
    }
}

extern "C" void mdnl_cuda_device_sync(void)
{
    (void)cudaDeviceSynchronize();
    (void)cudaGetLastError();
}

extern "C" mdnl_status mdnl_cuda_stream_wait(void *stream, void *event)
{
    MDNL_CUDA_CHECK(cudaStreamWaitEvent((cudaStream_t)stream, (cudaEvent_t)event, 0));
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_nlist_download_cuda(void *stream_, const mdnl_nlist_dev *dev, mdnl_nlist *out)
{
    cudaStream_t stream = (cudaStream_t)stream_;
    mdnl_status st = mdnl_nlist_reserve(out, dev->natoms, dev->npairs);
    if (st != MDNL_OK)
        return st;
    MDNL_CUDA_CHECK(cudaMemcpyAsync(out->offsets, dev->d_offsets, (size_t)(dev->natoms + 1) * sizeof(int64_t),
                                    cudaMemcpyDeviceToHost, stream));
    if (dev->npairs > 0) {
        MDNL_CUDA_CHECK(
            cudaMemcpyAsync(out->j, dev->d_j, (size_t)dev->npairs * sizeof(int32_t), cudaMemcpyDeviceToHost, stream));
        MDNL_CUDA_CHECK(
            cudaMemcpyAsync(out->d, dev->d_d, (size_t)dev->npairs * sizeof(float), cudaMemcpyDeviceToHost, stream));
    }
    MDNL_CUDA_CHECK(cudaStreamSynchronize(stream));
    out->natoms = dev->natoms;
    out->npairs = dev->npairs;
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_cuda_start(void)
{
    MDNL_CUDA_CHECK(cudaSetDevice(mdnl_cuda_device_index()));
    MDNL_CUDA_CHECK(cudaFree(0)); /* the documented way to make the runtime create the context now */
    return MDNL_OK;
}

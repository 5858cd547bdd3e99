/* library_cuda.cu — the library's CUDA glue (contract in library_cuda.h):
 * an event after the caller's stream, the calling thread's device. */
#include "cuda_check.cuh"
#include "library_cuda.h"

#include <cuda_runtime.h>
#include <stdlib.h>

struct mdnl_lib_cuda {
    cudaEvent_t mark;
};

extern "C" mdnl_status mdnl_lib_cuda_create(mdnl_lib_cuda **out)
{
    *out = (mdnl_lib_cuda *)calloc(1, sizeof(mdnl_lib_cuda));
    if (!*out)
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for the library's CUDA handle");
    MDNL_CUDA_CHECK(cudaEventCreateWithFlags(&(*out)->mark, cudaEventDisableTiming));
    return MDNL_OK;
}

extern "C" void mdnl_lib_cuda_free(mdnl_lib_cuda *c)
{
    if (!c)
        return;
    if (c->mark)
        cudaEventDestroy(c->mark);
    free(c);
}

extern "C" mdnl_status mdnl_lib_cuda_mark(mdnl_lib_cuda *c, void *stream, void **event)
{
    MDNL_CUDA_CHECK(cudaEventRecord(c->mark, (cudaStream_t)stream));
    *event = (void *)c->mark;
    return MDNL_OK;
}

extern "C" int mdnl_lib_cuda_swap_device(int device)
{
    int before = -1;
    if (cudaGetDevice(&before) != cudaSuccess || (before != device && cudaSetDevice(device) != cudaSuccess)) {
        (void)cudaGetLastError();
        return -1;
    }
    return before;
}

extern "C" mdnl_status mdnl_lib_cuda_sync(void *stream)
{
    MDNL_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
    return MDNL_OK;
}

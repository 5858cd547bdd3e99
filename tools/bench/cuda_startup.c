/* cuda_startup.c — what the first CUDA calls of a process cost, step by step
 * (the start-up `mdnl run` pays once, ~0.2-0.3 s on the H100 host). Prints one
 * line per step with its wall milliseconds; run it under different
 * CUDA_MODULE_LOADING values to compare. Built with the project when CUDA is
 * found (target cuda_startup). */
#define _POSIX_C_SOURCE 200809L
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double t_last;
static void step(const char *what, cudaError_t e)
{
    double t = now();
    printf("%-44s %9.2f ms%s%s\n", what, 1e3 * (t - t_last),
           e == cudaSuccess ? "" : "  FAILED: ", e == cudaSuccess ? "" : cudaGetErrorString(e));
    t_last = t;
}

int main(void)
{
    const char *ml = getenv("CUDA_MODULE_LOADING");
    printf("# CUDA_MODULE_LOADING=%s\n", ml ? ml : "(unset: lazy by default since CUDA 12.2)");
    const double t0 = now();
    t_last = t0;
    int n = 0, drv = 0, rt = 0;
    step("cudaGetDeviceCount (driver init)", cudaGetDeviceCount(&n));
    step("cudaDriverGetVersion/RuntimeGetVersion",
         cudaDriverGetVersion(&drv) == cudaSuccess ? cudaRuntimeGetVersion(&rt) : cudaErrorUnknown);
    step("cudaSetDevice(0)", cudaSetDevice(0));
    step("cudaFree(0) (primary context)", cudaFree(0));
    cudaStream_t s;
    step("cudaStreamCreateWithFlags", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    void *h = NULL, *d = NULL;
    step("cudaHostAlloc 2.3 MB (pinned)", cudaHostAlloc(&h, 2341344, cudaHostAllocPortable));
    step("cudaHostAlloc 2.3 MB again", cudaHostAlloc(&d, 2341344, cudaHostAllocPortable));
    cudaFreeHost(d);
    d = NULL;
    step("cudaMalloc 16 MB", cudaMalloc(&d, 16 << 20));
    step("cudaMemcpyAsync 2.3 MB H2D + sync", cudaMemcpyAsync(d, h, 2341344, cudaMemcpyHostToDevice, s) == cudaSuccess
                                                  ? cudaStreamSynchronize(s)
                                                  : cudaErrorUnknown);
    step("cudaMemcpyAsync 2.3 MB H2D + sync again",
         cudaMemcpyAsync(d, h, 2341344, cudaMemcpyHostToDevice, s) == cudaSuccess ? cudaStreamSynchronize(s)
                                                                                  : cudaErrorUnknown);
    printf("%-44s %9.2f ms  (%d device(s), driver %d, runtime %d)\n", "total", 1e3 * (now() - t0), n, drv, rt);
    cudaFree(d);
    cudaFreeHost(h);
    cudaStreamDestroy(s);
    return 0;
}

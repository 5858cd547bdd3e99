/* coord.cu — the CUDA coordination count (contract in coord.h, launcher in
 * coord_cuda.h; tested against coord_cpu.c in tests/test_coord_gpu.c). */
#include "cells_cuda.cuh"
#include "coord.h"
#include "coord_cuda.h"
#include "cuda_check.cuh"

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#define CBLOCK 256

struct coord_cols {
    int n; /* 0: one column of every neighbor */
    int32_t a[MDNL_COORD_MAX_COLS], b[MDNL_COORD_MAX_COLS];
};

struct mdnl_coord_cuda {
    cudaStream_t stream;
    int own_stream, timing;
    cudaEvent_t ev0, ev1;
    mdnl_cells_cuda cells;
    mdnl_dbuf pos, species, counts;
};

/* Thread per sorted slot; counts[i * max(1, n) + p]. */
template <bool COLS>
__global__ void __launch_bounds__(CBLOCK)
    coord_kernel(const __grid_constant__ mdnl_geom g, const mdnl_cells_view c, const mdnl_prune pr,
                 const int32_t *__restrict__ species, const coord_cols cols, int32_t *__restrict__ counts)
{
    const int is = blockIdx.x * CBLOCK + threadIdx.x;
    if (is >= c.natoms)
        return;
    const int i = c.order[is];
    if (!COLS) {
        int n = 0;
        mdnl_for_each_pair_pruned_part(g, c, pr, is, 0, 1, [&](int, float, int, int, int, int) { ++n; });
        counts[i] = n;
        return;
    }
    const int32_t si = __ldg(species + i);
    int cnt[MDNL_COORD_MAX_COLS];
    bool any = false;
#pragma unroll
    for (int p = 0; p < MDNL_COORD_MAX_COLS; ++p) {
        cnt[p] = 0;
        any |= p < cols.n && cols.a[p] == si;
    }
    if (any)
        mdnl_for_each_pair_pruned_part(g, c, pr, is, 0, 1, [&](int j, float, int, int, int, int) {
            const int32_t sj = __ldg(species + j);
#pragma unroll
            for (int p = 0; p < MDNL_COORD_MAX_COLS; ++p)
                cnt[p] += p < cols.n && cols.a[p] == si && cols.b[p] == sj;
        });
    for (int p = 0; p < cols.n; ++p)
        counts[(int64_t)i * cols.n + p] = cnt[p];
}

extern "C" mdnl_status mdnl_coord_cuda_create(void *stream, mdnl_coord_cuda **out)
{
    *out = NULL;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        (void)cudaGetLastError();
        return mdnl_error(MDNL_ERR_RESOURCE, "CUDA: no usable device for the coordination count");
    }
    mdnl_coord_cuda *c = (mdnl_coord_cuda *)calloc(1, sizeof *c);
    if (!c)
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for the CUDA coordination handle");
    cudaError_t err = cudaSuccess;
    if (stream) {
        c->stream = (cudaStream_t)stream;
    } else {
        err = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
        c->own_stream = err == cudaSuccess;
    }
    if (err == cudaSuccess)
        err = cudaEventCreate(&c->ev0);
    if (err == cudaSuccess)
        err = cudaEventCreate(&c->ev1);
    if (err != cudaSuccess) {
        mdnl_status st = mdnl_cuda_fail(err, "coordination handle", __FILE__, __LINE__);
        mdnl_coord_cuda_free(c);
        return st;
    }
    *out = c;
    return MDNL_OK;
}

extern "C" void mdnl_coord_cuda_free(mdnl_coord_cuda *c)
{
    if (!c)
        return;
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    mdnl_cells_cuda_free(&c->cells);
    mdnl_dbuf_free(&c->pos);
    mdnl_dbuf_free(&c->species);
    mdnl_dbuf_free(&c->counts);
    if (c->ev0)
        cudaEventDestroy(c->ev0);
    if (c->ev1)
        cudaEventDestroy(c->ev1);
    if (c->own_stream)
        cudaStreamDestroy(c->stream);
    free(c);
}

extern "C" void mdnl_coord_cuda_set_timing(mdnl_coord_cuda *c, int on) { c->timing = on; }

extern "C" mdnl_status mdnl_coord_cuda_last_ms(mdnl_coord_cuda *c, double *ms)
{
    float f = 0.0f;
    MDNL_CUDA_CHECK(cudaEventSynchronize(c->ev1));
    MDNL_CUDA_CHECK(cudaEventElapsedTime(&f, c->ev0, c->ev1));
    *ms = (double)f;
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_coord_frame_cuda(mdnl_coord_cuda *c, const mdnl_geom *g, const float (*h_pos4)[4],
                                             const int32_t *h_species, int32_t ncols, const int32_t (*pairs)[2],
                                             int32_t *h_counts)
{
    if (ncols < 0 || ncols > MDNL_COORD_MAX_COLS)
        return mdnl_error(MDNL_ERR_USAGE, "coord: at most %d species pairs, got %d", MDNL_COORD_MAX_COLS, ncols);
    const int64_t n = g->natoms;
    if (n == 0)
        return MDNL_OK;
    const int nc = ncols > 0 ? ncols : 1;
    mdnl_status st;
    if ((st = mdnl_dbuf_reserve(&c->pos, (size_t)n * sizeof(float4), "coord positions")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->species, (size_t)n * sizeof(int32_t), "coord species")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->counts, (size_t)n * nc * sizeof(int32_t), "coordination counts")) != MDNL_OK)
        return st;
    if (c->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(c->ev0, c->stream));
    MDNL_CUDA_CHECK(
        cudaMemcpyAsync(c->pos.ptr, h_pos4, (size_t)n * sizeof(float4), cudaMemcpyHostToDevice, c->stream));
    if (ncols > 0)
        MDNL_CUDA_CHECK(cudaMemcpyAsync(c->species.ptr, h_species, (size_t)n * sizeof(int32_t),
                                        cudaMemcpyHostToDevice, c->stream));
    mdnl_geom grid = *g;
    if ((st = mdnl_cells_cuda_build(&c->cells, &grid, (const float4 *)c->pos.ptr, c->stream)) != MDNL_OK)
        return st;
    const mdnl_prune pr = mdnl_prune_args(&grid);
    coord_cols cols;
    memset(&cols, 0, sizeof cols);
    cols.n = ncols;
    for (int p = 0; p < ncols; ++p)
        cols.a[p] = pairs[p][0], cols.b[p] = pairs[p][1];
    const int nb = (int)((n + CBLOCK - 1) / CBLOCK);
    if (ncols > 0)
        coord_kernel<true><<<nb, CBLOCK, 0, c->stream>>>(grid, c->cells.view, pr, (const int32_t *)c->species.ptr,
                                                         cols, (int32_t *)c->counts.ptr);
    else
        coord_kernel<false><<<nb, CBLOCK, 0, c->stream>>>(grid, c->cells.view, pr, (const int32_t *)c->species.ptr,
                                                          cols, (int32_t *)c->counts.ptr);
    MDNL_CUDA_LAUNCHED(c->stream);
    if (c->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(c->ev1, c->stream));
    MDNL_CUDA_CHECK(cudaMemcpyAsync(h_counts, c->counts.ptr, (size_t)n * nc * sizeof(int32_t),
                                    cudaMemcpyDeviceToHost, c->stream));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return MDNL_OK;
}

/* library_cuda.cu — the library's CUDA glue (contract in library_cuda.h):
 * an event after the caller's stream, the calling thread's device, and the
 * occupancy guard of device positions (the host twin is core/geometry.c's
 * occupancy()).
 *
 * Kernels of the guard (thread -> data), grid-stride: occ_count_kernel, a
 * thread per atom (16 bytes read, an atomic add on its cell's count);
 * occ_window_kernel, a thread per cell summing the stencil window along one
 * axis (three launches: z, y, x; 3 reads a cell while the stencil is 1);
 * occ_reduce_kernel, a thread per cell (12 bytes read), a warp-shuffle
 * reduction and three atomics a block. For 1M atoms and ~100k cells: 16 MB
 * read and a few MB of cell arrays (napkin math: ~20 us on an H200) plus the
 * read-back's synchronisation; a frame whose atoms cannot reach the limits
 * wherever they are (mdnl_work_cells_bounded, any frame of ~1,000 atoms
 * under the default limit) skips it. */
#include "cuda_check.cuh"
#include "device.h"
#include "library_cuda.h"
#include "mdnl/mdnl.h"

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OBLOCK 256

/* What the guard reads back: the sums of n_c x window_c and n_c^2 over the
 * cells, the densest cell as (count << 32 | ~cell) (the largest count, then
 * the lowest cell, as the host's scan), and the first atom in a cell. */
struct occ_result {
    double candidates, squares;
    unsigned long long densest, atom;
};

struct mdnl_lib_cuda {
    cudaEvent_t mark;
    mdnl_dbuf count, win_a, win_b, occ;
    occ_result *h_occ; /* pinned */
};

/* Row-major cell of a wrapped position (the binning's mdnl_cell_coord). */
__device__ static long long occ_cell(const mdnl_geom &g, float4 p)
{
    const long long cx = mdnl_cell_coord(&g, p.x, p.y, p.z, 0), cy = mdnl_cell_coord(&g, p.x, p.y, p.z, 1),
                    cz = mdnl_cell_coord(&g, p.x, p.y, p.z, 2);
    return (cx * g.ncell[1] + cy) * g.ncell[2] + cz;
}

__global__ void __launch_bounds__(OBLOCK)
    occ_count_kernel(const __grid_constant__ mdnl_geom g, long long n, const float4 *__restrict__ pos,
                     unsigned int *__restrict__ count)
{
    for (long long i = (long long)blockIdx.x * OBLOCK + threadIdx.x; i < n; i += (long long)gridDim.x * OBLOCK)
        atomicAdd(&count[occ_cell(g, pos[i])], 1u);
}

/* out[c] = the sum of in[] over the window -s..s around c along one axis of
 * `len` cells `stride` apart: cyclic on a periodic axis (a window longer
 * than the axis wraps again: each (cell, shift) a visit of its own), clipped
 * on an open one (core/geometry.c window_line). */
template <typename T>
__global__ void __launch_bounds__(OBLOCK)
    occ_window_kernel(const T *__restrict__ in, double *__restrict__ out, long long ncells, long long len,
                      long long stride, long long s, int periodic)
{
    for (long long c = (long long)blockIdx.x * OBLOCK + threadIdx.x; c < ncells; c += (long long)gridDim.x * OBLOCK) {
        const long long i = (c / stride) % len, base = c - i * stride;
        double v = 0;
        if (periodic) {
            const long long L = 2 * s + 1, full = L / len, rem = L % len;
            if (full > 0) {
                double total = 0;
                for (long long q = 0; q < len; ++q)
                    total += (double)in[base + q * stride];
                v = (double)full * total;
            }
            const long long start = ((i - s) % len + len) % len;
            for (long long q = 0; q < rem; ++q) {
                const long long j = start + q < len ? start + q : start + q - len;
                v += (double)in[base + j * stride];
            }
        } else {
            const long long lo = i - s < 0 ? 0 : i - s, hi = i + s > len - 1 ? len - 1 : i + s;
            for (long long j = lo; j <= hi; ++j)
                v += (double)in[base + j * stride];
        }
        out[c] = v;
    }
}

__global__ void __launch_bounds__(OBLOCK)
    occ_reduce_kernel(const unsigned int *__restrict__ count, const double *__restrict__ win, long long ncells,
                      occ_result *__restrict__ res)
{
    double cand = 0, sq = 0;
    unsigned long long best = 0;
    for (long long c = (long long)blockIdx.x * OBLOCK + threadIdx.x; c < ncells; c += (long long)gridDim.x * OBLOCK) {
        const double a = (double)count[c];
        cand += a * win[c];
        sq += a * a;
        const unsigned long long key = ((unsigned long long)count[c] << 32) | (0xffffffffull - (unsigned long long)c);
        best = key > best ? key : best;
    }
    for (int o = 16; o > 0; o >>= 1) {
        cand += __shfl_down_sync(0xffffffffu, cand, o);
        sq += __shfl_down_sync(0xffffffffu, sq, o);
        const unsigned long long b = __shfl_down_sync(0xffffffffu, best, o);
        best = b > best ? b : best;
    }
    __shared__ double s_cand[OBLOCK / 32], s_sq[OBLOCK / 32];
    __shared__ unsigned long long s_best[OBLOCK / 32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        s_cand[warp] = cand, s_sq[warp] = sq, s_best[warp] = best;
    __syncthreads();
    if (threadIdx.x == 0) { /* one set of atomics a block */
        for (int w = 1; w < OBLOCK / 32; ++w) {
            cand += s_cand[w], sq += s_sq[w];
            best = s_best[w] > best ? s_best[w] : best;
        }
        atomicAdd(&res->candidates, cand);
        atomicAdd(&res->squares, sq);
        atomicMax(&res->densest, best);
    }
}

/* The lowest index of an atom in `cell` (res->atom starts at ~0). */
__global__ void __launch_bounds__(OBLOCK)
    occ_atom_kernel(const __grid_constant__ mdnl_geom g, long long n, const float4 *__restrict__ pos, long long cell,
                    occ_result *__restrict__ res)
{
    for (long long i = (long long)blockIdx.x * OBLOCK + threadIdx.x; i < n; i += (long long)gridDim.x * OBLOCK)
        if (occ_cell(g, pos[i]) == cell)
            atomicMin(&res->atom, (unsigned long long)i);
}

static int occ_blocks(long long n)
{
    const long long b = (n + OBLOCK - 1) / OBLOCK;
    return (int)(b < 1 ? 1 : b > 4096 ? 4096 : b);
}

extern "C" mdnl_status mdnl_lib_cuda_create(mdnl_lib_cuda **out)
{
    *out = (mdnl_lib_cuda *)calloc(1, sizeof(mdnl_lib_cuda));
    if (!*out)
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for the library's CUDA handle");
    MDNL_CUDA_CHECK(cudaEventCreateWithFlags(&(*out)->mark, cudaEventDisableTiming));
    MDNL_CUDA_CHECK(cudaMallocHost((void **)&(*out)->h_occ, sizeof(occ_result)));
    return MDNL_OK;
}

extern "C" void mdnl_lib_cuda_free(mdnl_lib_cuda *c)
{
    if (!c)
        return;
    mdnl_dbuf *occ[] = {&c->count, &c->win_a, &c->win_b, &c->occ};
    for (mdnl_dbuf *b : occ)
        mdnl_dbuf_free(b);
    if (c->h_occ)
        cudaFreeHost(c->h_occ);
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

extern "C" mdnl_status mdnl_lib_cuda_check_cells(mdnl_lib_cuda *c, void *stream, const mdnl_geom *g,
                                                 const float *d_pos4)
{
    if (g->natoms <= 0 || g->ncells <= 0 || mdnl_work_cells_bounded(g))
        return MDNL_OK;
    cudaStream_t s = (cudaStream_t)stream;
    const long long n = (long long)g->natoms, nc = (long long)g->ncells;
    mdnl_status st;
    if ((st = mdnl_dbuf_reserve(&c->count, (size_t)nc * sizeof(unsigned int), "cell occupancy")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->win_a, (size_t)nc * sizeof(double), "cell occupancy")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->win_b, (size_t)nc * sizeof(double), "cell occupancy")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->occ, sizeof(occ_result), "cell occupancy")) != MDNL_OK)
        return st;
    const float4 *pos = (const float4 *)d_pos4;
    unsigned int *count = (unsigned int *)c->count.ptr;
    double *wa = (double *)c->win_a.ptr, *wb = (double *)c->win_b.ptr;
    occ_result *res = (occ_result *)c->occ.ptr;
    MDNL_CUDA_CHECK(cudaMemsetAsync(count, 0, (size_t)nc * sizeof(unsigned int), s));
    MDNL_CUDA_CHECK(cudaMemsetAsync(res, 0, sizeof(occ_result), s));
    MDNL_CUDA_CHECK(cudaMemsetAsync(&res->atom, 0xff, sizeof res->atom, s));
    occ_count_kernel<<<occ_blocks(n), OBLOCK, 0, s>>>(*g, n, pos, count);
    MDNL_CUDA_LAUNCHED(s);
    /* the window, one axis at a time (z, y, x): count -> a -> b -> a */
    const long long nz = g->ncell[2], ny = g->ncell[1], nx = g->ncell[0];
    occ_window_kernel<unsigned int><<<occ_blocks(nc), OBLOCK, 0, s>>>(count, wa, nc, nz, 1, g->stencil[2], g->pbc[2]);
    MDNL_CUDA_LAUNCHED(s);
    occ_window_kernel<double><<<occ_blocks(nc), OBLOCK, 0, s>>>(wa, wb, nc, ny, nz, g->stencil[1], g->pbc[1]);
    MDNL_CUDA_LAUNCHED(s);
    occ_window_kernel<double><<<occ_blocks(nc), OBLOCK, 0, s>>>(wb, wa, nc, nx, ny * nz, g->stencil[0], g->pbc[0]);
    MDNL_CUDA_LAUNCHED(s);
    occ_reduce_kernel<<<occ_blocks(nc), OBLOCK, 0, s>>>(count, wa, nc, res);
    MDNL_CUDA_LAUNCHED(s);
    MDNL_CUDA_CHECK(cudaMemcpyAsync(c->h_occ, res, sizeof(occ_result), cudaMemcpyDeviceToHost, s));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(s));
    mdnl_occupancy o;
    memset(&o, 0, sizeof o);
    o.candidates = c->h_occ->candidates;
    o.pairs = c->h_occ->squares * mdnl_work_cell_pair_factor(g);
    o.densest = (int64_t)(0xffffffffull - (c->h_occ->densest & 0xffffffffull));
    o.densest_count = (int64_t)(c->h_occ->densest >> 32);
    o.atom = -1;
    if (mdnl_work_cells_within(g, &o))
        return MDNL_OK;
    /* refused: an atom in the densest cell and its position, for the message */
    occ_atom_kernel<<<occ_blocks(n), OBLOCK, 0, s>>>(*g, n, pos, (long long)o.densest, res);
    MDNL_CUDA_LAUNCHED(s);
    MDNL_CUDA_CHECK(cudaMemcpyAsync(c->h_occ, res, sizeof(occ_result), cudaMemcpyDeviceToHost, s));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(s));
    o.atom = c->h_occ->atom < (unsigned long long)n ? (int64_t)c->h_occ->atom : 0;
    float4 p = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    MDNL_CUDA_CHECK(cudaMemcpyAsync(&p, pos + o.atom, sizeof p, cudaMemcpyDeviceToHost, s));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(s));
    const float xyz[3] = {p.x, p.y, p.z};
    return mdnl_work_refuse_cells(g, &o, xyz);
}

extern "C" MDNL_API const char *mdnl_device_description(int device)
{
    static char name[320];
    cudaDeviceProp p;
    if (device < 0 || device >= mdnl_cuda_device_count() || cudaGetDeviceProperties(&p, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return "none";
    }
    snprintf(name, sizeof name, "%s, sm_%d%d, %.0f GiB", p.name, p.major, p.minor,
             (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0));
    return name;
}

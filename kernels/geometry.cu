/* geometry.cu — the wrap of mdnl_geom_prepare on the device (contract and
 * napkin math in geometry_cuda.h; the host twin is the loop in geometry.c,
 * and both call mdnl_wrap_atom from geometry.h). tests/test_geometry.c
 * checks the device positions and grids against mdnl_geom_prepare bit for
 * bit. */
#include "cuda_check.cuh"
#include "geometry_cuda.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdlib.h>

#define WBLOCK 256
#define WMAX_BLOCKS 1024

/* A t-range and the first atom with a non-finite coordinate (n if none). */
struct wrap_range {
    double lo[3], hi[3];
    long long bad;
};

struct mdnl_wrap_cuda {
    cudaStream_t stream;
    cudaEvent_t ready;
    cudaEvent_t done[MDNL_CUDA_TICKETS]; /* the ticket's t-range is on the host */
    mdnl_dbuf dpos;                      /* [natoms][3] double, as read */
    mdnl_dbuf pos4;                      /* [natoms] float4, wrapped */
    mdnl_dbuf part;                      /* [blocks] per-block t-range and first bad index */
    mdnl_dbuf res;                       /* the reduced one */
    wrap_range *h_res;                   /* pinned read-back, one per ticket */
    int64_t natoms;
};

/* Reduces one wrap_range per thread into r[0] of the block (shared memory,
 * sequential addressing). min/max are exact in any order. */
__device__ static void block_range(wrap_range v, wrap_range *out)
{
    __shared__ wrap_range s[WBLOCK];
    s[threadIdx.x] = v;
    __syncthreads();
    for (int h = WBLOCK / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) {
            wrap_range &a = s[threadIdx.x];
            const wrap_range &b = s[threadIdx.x + h];
            for (int k = 0; k < 3; ++k) {
                a.lo[k] = b.lo[k] < a.lo[k] ? b.lo[k] : a.lo[k];
                a.hi[k] = b.hi[k] > a.hi[k] ? b.hi[k] : a.hi[k];
            }
            a.bad = b.bad < a.bad ? b.bad : a.bad;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *out = s[0];
}

__device__ static wrap_range empty_range(long long n)
{
    wrap_range r;
    for (int k = 0; k < 3; ++k)
        r.lo[k] = INFINITY, r.hi[k] = -INFINITY;
    r.bad = n;
    return r;
}

/* Grid-stride loop, one thread per atom: wrap (mdnl_wrap_atom, the host's
 * arithmetic), store the float4, track the t-range; one range per block. */
template <typename T>
__global__ void __launch_bounds__(WBLOCK)
    wrap_kernel(const __grid_constant__ mdnl_wrap_params w, long long n, const T *__restrict__ pos,
                float4 *__restrict__ out, wrap_range *__restrict__ part)
{
    wrap_range r = empty_range(n);
    for (long long i = (long long)blockIdx.x * WBLOCK + threadIdx.x; i < n; i += (long long)gridDim.x * WBLOCK) {
        float p[3];
        double t[3];
        if (!mdnl_wrap_atom(&w, (double)pos[3 * i], (double)pos[3 * i + 1], (double)pos[3 * i + 2], p, t)) {
            /* the frame fails once its range is read; until then the
             * kernels queued behind see a harmless atom, not stale memory */
            out[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            r.bad = i < r.bad ? i : r.bad;
            continue;
        }
        out[i] = make_float4(p[0], p[1], p[2], 0.0f);
        for (int k = 0; k < 3; ++k) {
            r.lo[k] = t[k] < r.lo[k] ? t[k] : r.lo[k];
            r.hi[k] = t[k] > r.hi[k] ? t[k] : r.hi[k];
        }
    }
    block_range(r, &part[blockIdx.x]);
}

/* One block over the per-block ranges. */
__global__ void __launch_bounds__(WBLOCK)
    wrap_finish_kernel(const wrap_range *__restrict__ part, int nb, long long n, wrap_range *__restrict__ res)
{
    wrap_range r = empty_range(n);
    for (int b = threadIdx.x; b < nb; b += WBLOCK) {
        const wrap_range q = part[b];
        for (int k = 0; k < 3; ++k) {
            r.lo[k] = q.lo[k] < r.lo[k] ? q.lo[k] : r.lo[k];
            r.hi[k] = q.hi[k] > r.hi[k] ? q.hi[k] : r.hi[k];
        }
        r.bad = q.bad < r.bad ? q.bad : r.bad;
    }
    block_range(r, res);
}

extern "C" mdnl_status mdnl_wrap_cuda_create(mdnl_wrap_cuda **out)
{
    *out = NULL;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        (void)cudaGetLastError();
        return mdnl_error(MDNL_ERR_RESOURCE, "CUDA: no usable device for the wrap");
    }
    mdnl_wrap_cuda *w = (mdnl_wrap_cuda *)calloc(1, sizeof *w);
    if (!w)
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for the CUDA wrap handle");
    *out = w; /* partly made: mdnl_wrap_cuda_free copes */
    MDNL_CUDA_CHECK(cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking));
    MDNL_CUDA_CHECK(cudaEventCreateWithFlags(&w->ready, cudaEventDisableTiming));
    for (cudaEvent_t &e : w->done)
        MDNL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    MDNL_CUDA_CHECK(cudaMallocHost((void **)&w->h_res, MDNL_CUDA_TICKETS * sizeof *w->h_res));
    return MDNL_OK;
}

extern "C" void mdnl_wrap_cuda_free(mdnl_wrap_cuda *w)
{
    if (!w)
        return;
    if (w->stream)
        cudaStreamSynchronize(w->stream);
    mdnl_dbuf *bufs[] = {&w->dpos, &w->pos4, &w->part, &w->res};
    for (mdnl_dbuf *b : bufs)
        mdnl_dbuf_free(b);
    if (w->h_res)
        cudaFreeHost(w->h_res);
    if (w->ready)
        cudaEventDestroy(w->ready);
    for (cudaEvent_t e : w->done)
        if (e)
            cudaEventDestroy(e);
    if (w->stream)
        cudaStreamDestroy(w->stream);
    free(w);
}

/* mdnl_wrap_cuda_launch, from f->pos (host, d_xyz NULL) or from d_xyz (device:
 * double, or float when xyz_float32). */
static mdnl_status wrap_launch(mdnl_wrap_cuda *w, const mdnl_frame *f, const void *d_xyz, int xyz_float32,
                               double cutoff, mdnl_geom *g, void *const *wait, int nwait, int ticket,
                               double *tabs_bound)
{
    *tabs_bound = 0;
    if (ticket < 0 || ticket >= MDNL_CUDA_TICKETS)
        return mdnl_error(MDNL_ERR_INTERNAL, "wrap: ticket %d out of range", ticket);
    mdnl_wrap_params wp;
    mdnl_status st = mdnl_geom_begin(f, cutoff, g, &wp);
    if (st != MDNL_OK)
        return st;
    const int64_t n = f->natoms;
    const int nb = n > 0 ? (int)((n + WBLOCK - 1) / WBLOCK < WMAX_BLOCKS ? (n + WBLOCK - 1) / WBLOCK : WMAX_BLOCKS) : 1;
    const size_t nn = (size_t)(n > 0 ? n : 1);
    if ((!d_xyz && (st = mdnl_dbuf_reserve(&w->dpos, nn * 3 * sizeof(double), "positions (double)")) != MDNL_OK) ||
        (st = mdnl_dbuf_reserve(&w->pos4, nn * sizeof(float4), "wrapped positions")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&w->part, (size_t)nb * sizeof(wrap_range), "wrap block ranges")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&w->res, sizeof(wrap_range), "wrap range")) != MDNL_OK)
        return st;
    w->natoms = n;
    wrap_range *h = &w->h_res[ticket];
    if (n > 0) {
        if (!d_xyz)
            MDNL_CUDA_CHECK(cudaMemcpyAsync(w->dpos.ptr, f->pos, (size_t)n * 3 * sizeof(double),
                                            cudaMemcpyHostToDevice, w->stream));
        for (int k = 0; k < nwait; ++k)
            if (wait[k])
                MDNL_CUDA_CHECK(cudaStreamWaitEvent(w->stream, (cudaEvent_t)wait[k], 0));
        if (d_xyz && xyz_float32)
            wrap_kernel<float><<<nb, WBLOCK, 0, w->stream>>>(wp, (long long)n, (const float *)d_xyz,
                                                             (float4 *)w->pos4.ptr, (wrap_range *)w->part.ptr);
        else
            wrap_kernel<double><<<nb, WBLOCK, 0, w->stream>>>(wp, (long long)n,
                                                              d_xyz ? (const double *)d_xyz : (const double *)w->dpos.ptr,
                                                              (float4 *)w->pos4.ptr, (wrap_range *)w->part.ptr);
        MDNL_CUDA_LAUNCHED(w->stream);
        MDNL_CUDA_CHECK(cudaEventRecord(w->ready, w->stream));
        wrap_finish_kernel<<<1, WBLOCK, 0, w->stream>>>((const wrap_range *)w->part.ptr, nb, (long long)n,
                                                        (wrap_range *)w->res.ptr);
        MDNL_CUDA_LAUNCHED(w->stream);
        MDNL_CUDA_CHECK(cudaMemcpyAsync(h, w->res.ptr, sizeof(wrap_range), cudaMemcpyDeviceToHost, w->stream));
        MDNL_CUDA_CHECK(cudaEventRecord(w->done[ticket], w->stream));
        /* A frame periodic on every axis: the grid needs no t-range
         * (geometry.h), which the caller collects later. */
        const double bound = mdnl_geom_tabs_bound(g, &wp);
        if (mdnl_geom_finish_early(cutoff, g, bound)) {
            *tabs_bound = bound;
            return MDNL_OK;
        }
        MDNL_CUDA_CHECK(cudaEventSynchronize(w->done[ticket]));
    } else {
        MDNL_CUDA_CHECK(cudaEventRecord(w->ready, w->stream));
        for (int k = 0; k < 3; ++k)
            h->lo[k] = INFINITY, h->hi[k] = -INFINITY;
        h->bad = 0;
    }
    return mdnl_geom_finish(f, cutoff, g, h->lo, h->hi, (int64_t)h->bad);
}

extern "C" mdnl_status mdnl_wrap_cuda_launch(mdnl_wrap_cuda *w, const mdnl_frame *f, double cutoff, mdnl_geom *g,
                                             void *const *wait, int nwait, int ticket, double *tabs_bound)
{
    return wrap_launch(w, f, NULL, 0, cutoff, g, wait, nwait, ticket, tabs_bound);
}

extern "C" mdnl_status mdnl_wrap_cuda_result(mdnl_wrap_cuda *w, int ticket, double tlo[3], double thi[3],
                                             int64_t *first_bad)
{
    if (ticket < 0 || ticket >= MDNL_CUDA_TICKETS)
        return mdnl_error(MDNL_ERR_INTERNAL, "wrap: ticket %d out of range", ticket);
    MDNL_CUDA_CHECK(cudaEventSynchronize(w->done[ticket]));
    const wrap_range *h = &w->h_res[ticket];
    for (int k = 0; k < 3; ++k)
        tlo[k] = h->lo[k], thi[k] = h->hi[k];
    *first_bad = (int64_t)h->bad;
    return MDNL_OK;
}

/* wrap_launch with ticket 0, then (when the grid was laid out early) the
 * t-range and mdnl_geom_settle: g is exactly mdnl_geom_prepare's. */
static mdnl_status prepare_sync(mdnl_wrap_cuda *w, const mdnl_frame *f, const void *d_xyz, int xyz_float32,
                                double cutoff, mdnl_geom *g, void *const *wait, int nwait)
{
    double bound = 0;
    mdnl_status st = wrap_launch(w, f, d_xyz, xyz_float32, cutoff, g, wait, nwait, 0, &bound);
    if (st != MDNL_OK || bound == 0)
        return st;
    double tlo[3], thi[3];
    int64_t bad = 0;
    if ((st = mdnl_wrap_cuda_result(w, 0, tlo, thi, &bad)) != MDNL_OK)
        return st;
    return mdnl_geom_settle(f, cutoff, g, tlo, thi, bad);
}

extern "C" mdnl_status mdnl_geom_prepare_cuda(mdnl_wrap_cuda *w, const mdnl_frame *f, double cutoff, mdnl_geom *g,
                                              void *const *wait, int nwait)
{
    return prepare_sync(w, f, NULL, 0, cutoff, g, wait, nwait);
}

extern "C" mdnl_status mdnl_geom_prepare_cuda_dev(mdnl_wrap_cuda *w, const mdnl_frame *f, const void *d_xyz,
                                                  int xyz_float32, void *after, double cutoff, mdnl_geom *g)
{
    if (!d_xyz && f->natoms > 0)
        return mdnl_error(MDNL_ERR_USAGE, "wrap: no device positions");
    void *wait[1] = {after};
    /* no atoms: any non-NULL pointer says "device positions" (none is read) */
    return prepare_sync(w, f, d_xyz ? d_xyz : (const void *)w, xyz_float32, cutoff, g, wait, 1);
}

extern "C" const float *mdnl_wrap_cuda_positions(const mdnl_wrap_cuda *w) { return (const float *)w->pos4.ptr; }

extern "C" void *mdnl_wrap_cuda_ready(const mdnl_wrap_cuda *w) { return (void *)w->ready; }

extern "C" mdnl_status mdnl_wrap_cuda_download(mdnl_wrap_cuda *w, float (*h_pos4)[4])
{
    if (w->natoms > 0)
        MDNL_CUDA_CHECK(cudaMemcpyAsync(h_pos4, w->pos4.ptr, (size_t)w->natoms * sizeof(float4), cudaMemcpyDeviceToHost,
                                        w->stream));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(w->stream));
    return MDNL_OK;
}

/* pair_shift.cu — the CUDA twin of pair_shift_cpu.c: image shifts and vectors
 * of a device neighbor list (contract in pair_shift_cuda.h; both twins call
 * the per-entry functions of pair_shift.h, so the same bytes).
 *
 * Kernel (thread -> data): shifts_kernel, a group of G lanes per row i
 * (grid-stride; G the power of two at or above the mean row length, at most
 * a warp), lane l taking the row's entries l, l + G, ...; each entry tests
 * the image shifts that can be within the cutoff (pair_shift.h: at most 8
 * while the cutoff is below half the narrowest periodic width): per entry
 * 8 bytes of the list and 40 of j's two positions read, 12 (S) and 24 (D)
 * written, ~8 x 10 flops. Neighbouring lanes take neighbouring entries, so
 * a warp's loads of j, d and stores of S, D are a few contiguous sectors;
 * with a thread per row they were 32 rows apart, a sector each, and the
 * pass ran at 37x its bytes' floor on the 1M-atom liquid. */
#include "cuda_check.cuh"
#include "pair_shift.h"
#include "pair_shift_cuda.h"

#include <cuda_runtime.h>
#include <stdlib.h>

#define SBLOCK 128

struct mdnl_shift_cuda {
    mdnl_dbuf S, D, xyz, flag;
    int *h_flag; /* pinned */
};

template <typename T>
__global__ void __launch_bounds__(SBLOCK)
    shifts_kernel(const __grid_constant__ mdnl_geom g, const __grid_constant__ mdnl_wrap_params w, long long n,
                  const long long *__restrict__ off, const int32_t *__restrict__ jj, const float *__restrict__ dd,
                  const float *__restrict__ pos4, const T *__restrict__ xyz, int half, int32_t *__restrict__ S_out,
                  double *__restrict__ D_out, int *__restrict__ flag, int glog)
{
    const int G = 1 << glog, lane = (int)threadIdx.x & (G - 1);
    const long long groups = (long long)gridDim.x * (SBLOCK >> glog);
    for (long long i = ((long long)blockIdx.x * SBLOCK + threadIdx.x) >> glog; i < n; i += groups) {
        const long long k0 = off[i] + lane, k1 = off[i + 1];
        if (k0 >= k1)
            continue;
        const double ri[3] = {(double)xyz[3 * i], (double)xyz[3 * i + 1], (double)xyz[3 * i + 2]};
        int oi[3];
        if (!mdnl_wrap_offset(&w, ri[0], ri[1], ri[2], oi)) {
            atomicMax(flag, 2);
            continue;
        }
        for (long long k = k0; k < k1; k += G) {
            const int32_t j = jj[k];
            int s[3] = {0, 0, 0};
            if (!mdnl_entry_shift(&g, &w, pos4, i, j, dd[k], mdnl_entry_rank(jj, dd, off[i], k), half, s))
                atomicMax(flag, 1);
            const double rj[3] = {(double)xyz[3 * (long long)j], (double)xyz[3 * (long long)j + 1],
                                  (double)xyz[3 * (long long)j + 2]};
            int oj[3];
            if (!mdnl_wrap_offset(&w, rj[0], rj[1], rj[2], oj)) {
                atomicMax(flag, 2);
                continue;
            }
            for (int a = 0; a < 3; ++a)
                s[a] = s[a] + oi[a] - oj[a];
            S_out[3 * k] = s[0], S_out[3 * k + 1] = s[1], S_out[3 * k + 2] = s[2];
            if (D_out) {
                double D[3];
                mdnl_entry_vector(w.h, ri, rj, s, D);
                D_out[3 * k] = D[0], D_out[3 * k + 1] = D[1], D_out[3 * k + 2] = D[2];
            }
        }
    }
}

extern "C" mdnl_status mdnl_shift_cuda_create(mdnl_shift_cuda **out)
{
    *out = (mdnl_shift_cuda *)calloc(1, sizeof(mdnl_shift_cuda));
    if (!*out)
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for the image shifts' CUDA handle");
    MDNL_CUDA_CHECK(cudaMallocHost((void **)&(*out)->h_flag, sizeof(int)));
    return MDNL_OK;
}

extern "C" void mdnl_shift_cuda_free(mdnl_shift_cuda *c)
{
    if (!c)
        return;
    mdnl_dbuf_free(&c->S);
    mdnl_dbuf_free(&c->D);
    mdnl_dbuf_free(&c->xyz);
    mdnl_dbuf_free(&c->flag);
    if (c->h_flag)
        cudaFreeHost(c->h_flag);
    free(c);
}

extern "C" mdnl_status mdnl_pair_shifts_cuda(mdnl_shift_cuda *c, void *stream, const mdnl_frame *f, const mdnl_geom *g,
                                             const mdnl_nlist_dev *l, int half, const void *d_xyz, int xyz_float32,
                                             int want_D, const int32_t **d_S, const double **d_D)
{
    cudaStream_t s = (cudaStream_t)stream;
    mdnl_geom gb;
    mdnl_wrap_params w;
    mdnl_status st = mdnl_geom_begin(f, g->cutoff, &gb, &w);
    if (st != MDNL_OK)
        return st;
    const size_t np = (size_t)(l->npairs > 0 ? l->npairs : 1);
    if ((st = mdnl_dbuf_reserve(&c->S, np * 3 * sizeof(int32_t), "image shifts")) != MDNL_OK ||
        (want_D && (st = mdnl_dbuf_reserve(&c->D, np * 3 * sizeof(double), "pair vectors")) != MDNL_OK) ||
        (st = mdnl_dbuf_reserve(&c->flag, sizeof(int), "shift flag")) != MDNL_OK)
        return st;
    MDNL_CUDA_CHECK(cudaMemsetAsync(c->flag.ptr, 0, sizeof(int), s));
    if (l->natoms > 0 && l->npairs > 0) {
        const long long n = (long long)l->natoms;
        int glog = 0; /* G = 2^glog lanes a row: the mean row length, rounded up, at most a warp */
        while (glog < 5 && ((long long)1 << glog) * n < l->npairs)
            ++glog;
        const long long threads = n << glog;
        const int nb = (int)((threads + SBLOCK - 1) / SBLOCK < 65535 ? (threads + SBLOCK - 1) / SBLOCK : 65535);
        int32_t *S = (int32_t *)c->S.ptr;
        double *D = want_D ? (double *)c->D.ptr : NULL;
        if (xyz_float32)
            shifts_kernel<float><<<nb, SBLOCK, 0, s>>>(*g, w, n, (const long long *)l->d_offsets, l->d_j, l->d_d,
                                                       l->d_pos4, (const float *)d_xyz, half, S, D, (int *)c->flag.ptr,
                                                       glog);
        else
            shifts_kernel<double><<<nb, SBLOCK, 0, s>>>(*g, w, n, (const long long *)l->d_offsets, l->d_j, l->d_d,
                                                        l->d_pos4, (const double *)d_xyz, half, S, D,
                                                        (int *)c->flag.ptr, glog);
        MDNL_CUDA_LAUNCHED(s);
    }
    MDNL_CUDA_CHECK(cudaMemcpyAsync(c->h_flag, c->flag.ptr, sizeof(int), cudaMemcpyDeviceToHost, s));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(s));
    if (*c->h_flag == 2)
        return mdnl_error(MDNL_ERR_INPUT,
                          "an atom lies more than %g cells from the cell: its image shifts would overflow int32",
                          MDNL_SHIFT_OFFSET_MAX);
    if (*c->h_flag == 1)
        return mdnl_error(MDNL_ERR_INTERNAL, "image shifts: an entry of the device list matches no image shift");
    *d_S = (const int32_t *)c->S.ptr;
    *d_D = want_D ? (const double *)c->D.ptr : NULL;
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_pair_shifts_cuda_upload(mdnl_shift_cuda *c, void *stream, const mdnl_frame *f,
                                                    const void **d_xyz)
{
    const size_t n = (size_t)(f->natoms > 0 ? f->natoms : 1);
    mdnl_status st = mdnl_dbuf_reserve(&c->xyz, n * 3 * sizeof(double), "positions (double)");
    if (st != MDNL_OK)
        return st;
    if (f->natoms > 0)
        MDNL_CUDA_CHECK(cudaMemcpyAsync(c->xyz.ptr, f->pos, (size_t)f->natoms * 3 * sizeof(double),
                                        cudaMemcpyHostToDevice, (cudaStream_t)stream));
    *d_xyz = c->xyz.ptr;
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_pair_shifts_cuda_host(mdnl_shift_cuda *c, void *stream, const mdnl_frame *f,
                                                  const mdnl_geom *g, const mdnl_nlist_dev *l, int half,
                                                  int32_t (*S)[3], double (*D)[3])
{
    cudaStream_t s = (cudaStream_t)stream;
    const void *d_xyz = NULL;
    const int32_t *d_S = NULL;
    const double *d_D = NULL;
    mdnl_status st;
    if ((st = mdnl_pair_shifts_cuda_upload(c, stream, f, &d_xyz)) != MDNL_OK ||
        (st = mdnl_pair_shifts_cuda(c, stream, f, g, l, half, d_xyz, 0, D != NULL, &d_S, &d_D)) != MDNL_OK)
        return st;
    if (l->npairs > 0) {
        MDNL_CUDA_CHECK(cudaMemcpyAsync(S, d_S, (size_t)l->npairs * 3 * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
        if (D)
            MDNL_CUDA_CHECK(cudaMemcpyAsync(D, d_D, (size_t)l->npairs * 3 * sizeof(double), cudaMemcpyDeviceToHost, s));
        MDNL_CUDA_CHECK(cudaStreamSynchronize(s));
    }
    return MDNL_OK;
}

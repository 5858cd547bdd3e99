/* coord.cu — the CUDA coordination count (contract in coord.h, launcher in
 * coord_cuda.h; tested against coord_cpu.c in tests/test_coord_gpu.c).
 *
 * Where the half-stencil warp walk fits the grid (walk_cuda.cuh
 * mdnl_walk_fits) the count is a visitor of it, the fused energy's walk
 * (energy.cu energy_walk_kernel) with an integer increment in place of the
 * pair energy: a warp per home cell meets each pair once and adds 1 to both
 * atoms (per column: to the atom whose species is the column's A, when the
 * other's is its B). A home atom's count is summed by ballot into the
 * register of the lane that loaded it, each candidate's in its lane over
 * the take; both are added to a slot-ordered array with one atomicAdd each
 * (integers: the sum is exact in any order), scattered to original order at
 * the end.
 * Elsewhere (small boxes, a cutoff beyond half the box) a thread per sorted
 * slot walks the pruned full stencil (mdnl_for_each_pair_pruned_part) and
 * counts its own row. Per-pair cutoffs (coord.h mdnl_coord_cuts) test each
 * hit against the pair's own cut2 on both paths. */
#include "cells_cuda.cuh"
#include "coord.h"
#include "coord_cuda.h"
#include "cuda_check.cuh"
#include "walk_cuda.cuh"

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#define CBLOCK 256
#define CWARPS (CBLOCK / 32)

struct coord_cols {
    int n; /* 0: one column of every neighbor */
    int32_t a[MDNL_COORD_MAX_COLS], b[MDNL_COORD_MAX_COLS];
};

/* Per-pair cutoffs on the device: nt = 0 when none. */
struct coord_cuts {
    int nt;
    float cut2[MDNL_COORD_MAX_TYPES * MDNL_COORD_MAX_TYPES];
};

struct mdnl_coord_cuda {
    cudaStream_t stream;
    int own_stream, timing;
    cudaEvent_t ev0, ev1;
    mdnl_cells_cuda cells;
    mdnl_dbuf pos, species, types, counts;
    mdnl_dbuf slot_species, slot_types, slot_counts; /* the walk's, in sorted-slot order */
};

/* Thread per sorted slot; counts[i * max(1, n) + p]. */
template <bool COLS, bool CUTS>
__global__ void __launch_bounds__(CBLOCK)
    coord_kernel(const __grid_constant__ mdnl_geom g, const mdnl_cells_view c, const mdnl_prune pr,
                 const int32_t *__restrict__ species, const int32_t *__restrict__ types,
                 const __grid_constant__ coord_cuts cuts, const __grid_constant__ coord_cols cols,
                 int32_t *__restrict__ counts)
{
    const int is = blockIdx.x * CBLOCK + threadIdx.x;
    if (is >= c.natoms)
        return;
    const int i = c.order[is];
    const int ti = CUTS ? __ldg(types + i) * cuts.nt : 0;
    if (!COLS) {
        int n = 0;
        mdnl_for_each_pair_pruned_part(g, c, pr, is, 0, 1, [&](int j, float d2, int, int, int, int) {
            n += !CUTS || d2 < cuts.cut2[ti + __ldg(types + j)];
        });
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
        mdnl_for_each_pair_pruned_part(g, c, pr, is, 0, 1, [&](int j, float d2, int, int, int, int) {
            if (CUTS && !(d2 < cuts.cut2[ti + __ldg(types + j)]))
                return;
            const int32_t sj = __ldg(species + j);
#pragma unroll
            for (int p = 0; p < MDNL_COORD_MAX_COLS; ++p)
                cnt[p] += p < cols.n && cols.a[p] == si && cols.b[p] == sj;
        });
    for (int p = 0; p < cols.n; ++p)
        counts[(int64_t)i * cols.n + p] = cnt[p];
}

/* ---- the warp walk ---- */

#define NCOL(COLS) ((COLS) ? MDNL_COORD_MAX_COLS : 1)

/* A warp's home atoms (32 at a time): their species and types (times nt). */
struct CoordHome {
    int hs[32], ht[32];
};

template <bool COLS> struct CoordWalkShared {
    mdnl_walk_warp<true> w[CWARPS];
    CoordHome h[CWARPS];
    float4 sh[27];
    float cut2[MDNL_COORD_MAX_TYPES * MDNL_COORD_MAX_TYPES];
};

/* The walk's visitor (walk_cuda.cuh). The payload is the candidate's slot;
 * sp, ty, cnt are in slot order (sp with COLS, ty with CUTS). */
template <bool COLS, bool CUTS> struct WalkCoord {
    static constexpr bool kPayload = true;
    const mdnl_geom &g;
    CoordHome &H;
    const float *cut2; /* shared, [nt * nt] */
    int nt;
    const int32_t *sp, *ty;
    const coord_cols &cols;
    int *cnt; /* [natoms * nc] */
    int nc;
    int hslot;            /* this lane's home atom (-1: none yet) */
    int hown[NCOL(COLS)]; /* and its counts so far */
    __device__ float cand(int k, float4) { return __int_as_float(k); }
    /* the lane's home atom's counts into cnt (once: before the lane takes the next one, or at the end) */
    __device__ void flush()
    {
        if (hslot < 0)
            return;
#pragma unroll
        for (int p = 0; p < NCOL(COLS); ++p)
            if (p < nc && hown[p])
                atomicAdd(cnt + (int64_t)hslot * nc + p, hown[p]);
    }
    __device__ void home(int lane, int slot, float4)
    {
        flush();
        hslot = slot;
        if (COLS)
            H.hs[lane] = __ldg(sp + slot);
        if (CUTS)
            H.ht[lane] = __ldg(ty + slot) * nt;
#pragma unroll
        for (int p = 0; p < NCOL(COLS); ++p)
            hown[p] = 0;
    }
    __device__ void take(int nh, const float4 *home, const float4 (&pj)[2], const float4 (&pv)[2], bool z)
    {
        const int lane = threadIdx.x & 31;
        int k[2], sj[2] = {0, 0}, tj[2] = {0, 0}, n[2][NCOL(COLS)];
#pragma unroll
        for (int cc = 0; cc < 2; ++cc) {
            k[cc] = __float_as_int(pv[cc].w); /* lanes past the count: slot 0, never a hit */
            if (COLS)
                sj[cc] = __ldg(sp + k[cc]);
            if (CUTS)
                tj[cc] = __ldg(ty + k[cc]);
#pragma unroll
            for (int p = 0; p < NCOL(COLS); ++p)
                n[cc][p] = 0;
        }
        auto f = [&](float d2, bool hit, int ia, int cc) {
            if (CUTS)
                hit = hit && d2 < cut2[H.ht[ia] + tj[cc]];
            if (!COLS) {
                const unsigned m = __ballot_sync(FULLMASK, hit);
                if (lane == ia)
                    hown[0] += __popc(m);
                n[cc][0] += hit;
                return;
            }
            const int si = H.hs[ia];
#pragma unroll
            for (int p = 0; p < NCOL(COLS); ++p)
                if (p < cols.n) { /* uniform */
                    const unsigned m = __ballot_sync(FULLMASK, hit && si == cols.a[p] && sj[cc] == cols.b[p]);
                    if (lane == ia)
                        hown[p] += __popc(m);
                    n[cc][p] += hit && sj[cc] == cols.a[p] && si == cols.b[p];
                }
        };
        if (z)
            mdnl_walk_home_tests<true>(nh, home, pj, pv, g.cutoff2, f);
        else
            mdnl_walk_home_tests<false>(nh, home, pj, pv, g.cutoff2, f);
#pragma unroll
        for (int cc = 0; cc < 2; ++cc)
#pragma unroll
            for (int p = 0; p < NCOL(COLS); ++p)
                if (n[cc][p])
                    atomicAdd(cnt + (int64_t)k[cc] * nc + p, n[cc][p]);
    }
};

/* A cell a warp, 8 a block, as energy_walk_kernel; cnt zeroed beforehand. */
template <bool COLS, bool CUTS>
__global__ void __launch_bounds__(CBLOCK)
    coord_walk_kernel(const __grid_constant__ mdnl_geom g, const mdnl_cells_view c, const mdnl_cell_divs d,
                      const int32_t *__restrict__ sp, const int32_t *__restrict__ ty,
                      const __grid_constant__ coord_cuts cuts, const __grid_constant__ coord_cols cols,
                      int *__restrict__ cnt)
{
    __shared__ CoordWalkShared<COLS> S;
    if (threadIdx.x < 27)
        S.sh[threadIdx.x] = shift_vector4_of_code(g, threadIdx.x);
    if (CUTS)
        for (int t = threadIdx.x; t < cuts.nt * cuts.nt; t += CBLOCK)
            S.cut2[t] = cuts.cut2[t];
    __syncthreads();
    const int w = threadIdx.x >> 5;
    WalkCoord<COLS, CUTS> visit{g, S.h[w], S.cut2, cuts.nt, sp, ty, cols, cnt, COLS ? cols.n : 1, -1, {}};
    const int cell = blockIdx.x * CWARPS + w; /* uniform a warp */
    if (cell < c.ncells)
        mdnl_walk_half_cell(g, c, d, cell, S.w[w], S.sh, visit);
    visit.flush();
}

/* sp[s], ty[s] of sorted slot s (either may be NULL). */
__global__ void coord_gather_kernel(const mdnl_cells_view c, const int32_t *__restrict__ species,
                                    const int32_t *__restrict__ types, int32_t *__restrict__ sp,
                                    int32_t *__restrict__ ty)
{
    const int s = blockIdx.x * CBLOCK + threadIdx.x;
    if (s >= c.natoms)
        return;
    const int i = c.order[s];
    if (sp)
        sp[s] = species[i];
    if (ty)
        ty[s] = types[i];
}

/* counts[order[s] * nc + p] = cnt[s * nc + p]. */
__global__ void coord_scatter_kernel(const mdnl_cells_view c, int nc, const int *__restrict__ cnt,
                                     int32_t *__restrict__ counts)
{
    const int s = blockIdx.x * CBLOCK + threadIdx.x;
    if (s >= c.natoms)
        return;
    const int64_t i = c.order[s];
    for (int p = 0; p < nc; ++p)
        counts[i * nc + p] = cnt[(int64_t)s * nc + p];
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
    mdnl_dbuf *bufs[] = {&c->pos, &c->species, &c->types, &c->counts, &c->slot_species, &c->slot_types,
                         &c->slot_counts};
    for (mdnl_dbuf *b : bufs)
        mdnl_dbuf_free(b);
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

template <bool COLS, bool CUTS>
static void launch_walk(mdnl_coord_cuda *c, const mdnl_geom &g, const coord_cuts &cuts, const coord_cols &cols)
{
    const int nb = (c->cells.view.ncells + CWARPS - 1) / CWARPS;
    coord_walk_kernel<COLS, CUTS><<<nb > 0 ? nb : 1, CBLOCK, 0, c->stream>>>(
        g, c->cells.view, mdnl_cell_divs_of(g), (const int32_t *)c->slot_species.ptr,
        (const int32_t *)c->slot_types.ptr, cuts, cols, (int *)c->slot_counts.ptr);
}

template <bool COLS, bool CUTS>
static void launch_atoms(mdnl_coord_cuda *c, const mdnl_geom &g, int nb, const coord_cuts &cuts,
                         const coord_cols &cols)
{
    coord_kernel<COLS, CUTS><<<nb, CBLOCK, 0, c->stream>>>(g, c->cells.view, mdnl_prune_args(&g),
                                                           (const int32_t *)c->species.ptr,
                                                           (const int32_t *)c->types.ptr, cuts, cols,
                                                           (int32_t *)c->counts.ptr);
}

extern "C" mdnl_status mdnl_coord_frame_cuda(mdnl_coord_cuda *c, const mdnl_geom *g, const float (*h_pos4)[4],
                                             const int32_t *h_species, int32_t ncols, const int32_t (*pairs)[2],
                                             const mdnl_coord_cuts *h_cuts, int32_t *h_counts)
{
    if (ncols < 0 || ncols > MDNL_COORD_MAX_COLS)
        return mdnl_error(MDNL_ERR_USAGE, "coord: at most %d species pairs, got %d", MDNL_COORD_MAX_COLS, ncols);
    if (h_cuts && (h_cuts->ntypes < 1 || h_cuts->ntypes > MDNL_COORD_MAX_TYPES))
        return mdnl_error(MDNL_ERR_USAGE, "coord: 1 to %d cutoff types, got %d", MDNL_COORD_MAX_TYPES,
                          h_cuts->ntypes);
    const int64_t n = g->natoms;
    if (n == 0)
        return MDNL_OK;
    const int nc = ncols > 0 ? ncols : 1;
    const bool cols_on = ncols > 0, cuts_on = h_cuts != NULL;
    mdnl_status st;
    if ((st = mdnl_dbuf_reserve(&c->pos, (size_t)n * sizeof(float4), "coord positions")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->species, (size_t)n * sizeof(int32_t), "coord species")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->types, (size_t)n * sizeof(int32_t), "coord types")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->counts, (size_t)n * nc * sizeof(int32_t), "coordination counts")) != MDNL_OK)
        return st;
    if (c->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(c->ev0, c->stream));
    MDNL_CUDA_CHECK(
        cudaMemcpyAsync(c->pos.ptr, h_pos4, (size_t)n * sizeof(float4), cudaMemcpyHostToDevice, c->stream));
    if (cols_on)
        MDNL_CUDA_CHECK(cudaMemcpyAsync(c->species.ptr, h_species, (size_t)n * sizeof(int32_t),
                                        cudaMemcpyHostToDevice, c->stream));
    if (cuts_on)
        MDNL_CUDA_CHECK(cudaMemcpyAsync(c->types.ptr, h_cuts->types, (size_t)n * sizeof(int32_t),
                                        cudaMemcpyHostToDevice, c->stream));
    mdnl_geom grid = *g;
    if ((st = mdnl_cells_cuda_build(&c->cells, &grid, (const float4 *)c->pos.ptr, c->stream)) != MDNL_OK)
        return st;
    coord_cols cols;
    memset(&cols, 0, sizeof cols);
    cols.n = ncols;
    for (int p = 0; p < ncols; ++p)
        cols.a[p] = pairs[p][0], cols.b[p] = pairs[p][1];
    coord_cuts cuts;
    memset(&cuts, 0, sizeof cuts);
    if (cuts_on) {
        cuts.nt = h_cuts->ntypes;
        memcpy(cuts.cut2, h_cuts->cut2, (size_t)(cuts.nt * cuts.nt) * sizeof(float));
    }
    const int nb = (int)((n + CBLOCK - 1) / CBLOCK);
    if (mdnl_walk_fits(grid)) {
        if ((cols_on && (st = mdnl_dbuf_reserve(&c->slot_species, (size_t)n * sizeof(int32_t), "coord species")) !=
                            MDNL_OK) ||
            (cuts_on && (st = mdnl_dbuf_reserve(&c->slot_types, (size_t)n * sizeof(int32_t), "coord types")) !=
                            MDNL_OK) ||
            (st = mdnl_dbuf_reserve(&c->slot_counts, (size_t)n * nc * sizeof(int), "coordination counts")) != MDNL_OK)
            return st;
        MDNL_CUDA_CHECK(cudaMemsetAsync(c->slot_counts.ptr, 0, (size_t)n * nc * sizeof(int), c->stream));
        if (cols_on || cuts_on) {
            coord_gather_kernel<<<nb, CBLOCK, 0, c->stream>>>(
                c->cells.view, (const int32_t *)c->species.ptr, (const int32_t *)c->types.ptr,
                cols_on ? (int32_t *)c->slot_species.ptr : NULL, cuts_on ? (int32_t *)c->slot_types.ptr : NULL);
            MDNL_CUDA_LAUNCHED(c->stream);
        }
        if (cols_on && cuts_on)
            launch_walk<true, true>(c, grid, cuts, cols);
        else if (cols_on)
            launch_walk<true, false>(c, grid, cuts, cols);
        else if (cuts_on)
            launch_walk<false, true>(c, grid, cuts, cols);
        else
            launch_walk<false, false>(c, grid, cuts, cols);
        MDNL_CUDA_LAUNCHED(c->stream);
        coord_scatter_kernel<<<nb, CBLOCK, 0, c->stream>>>(c->cells.view, nc, (const int *)c->slot_counts.ptr,
                                                            (int32_t *)c->counts.ptr);
        MDNL_CUDA_LAUNCHED(c->stream);
    } else {
        if (cols_on && cuts_on)
            launch_atoms<true, true>(c, grid, nb, cuts, cols);
        else if (cols_on)
            launch_atoms<true, false>(c, grid, nb, cuts, cols);
        else if (cuts_on)
            launch_atoms<false, true>(c, grid, nb, cuts, cols);
        else
            launch_atoms<false, false>(c, grid, nb, cuts, cols);
        MDNL_CUDA_LAUNCHED(c->stream);
    }
    if (c->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(c->ev1, c->stream));
    MDNL_CUDA_CHECK(cudaMemcpyAsync(h_counts, c->counts.ptr, (size_t)n * nc * sizeof(int32_t),
                                    cudaMemcpyDeviceToHost, c->stream));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return MDNL_OK;
}

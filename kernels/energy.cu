/* energy.cu — the CUDA energy kernels (contract in energy.h, launchers and
 * the variants' description in energy_cuda.h; the CPU twin is energy_cpu.c,
 * which the GPU results are tested against in tests/test_energy_gpu.c).
 *
 * Every kernel is a template over the reduction variant, so the benchmark
 * compares reductions with the pair evaluation held fixed. Blocks are
 * EBLOCK = 256 threads; a thread that owns no atom contributes 0 and still
 * takes part in the block's barriers.
 */
#include "cells_cuda.cuh"
#include "cuda_check.cuh"
#include "energy_cuda.h"
#include "walk_cuda.cuh"

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#define EBLOCK 256
#define FINAL_BLOCK 1024
#define FUSED_PARTS 2 /* threads per atom of the fused walk (energy_cuda.h) */

struct mdnl_energy_cuda {
    cudaStream_t stream;
    int own_stream;
    mdnl_energy_reduce reduce;
    int timing;
    cudaEvent_t ev0, ev1;
    cudaEvent_t ev_pos; /* recorded right after each position upload */
    cudaEvent_t done[MDNL_CUDA_TICKETS]; /* mdnl_energy_cuda_launch: the total is on the host */
    mdnl_cells_cuda cells;
    mdnl_geom grid;   /* the grid the cell list was built for */
    mdnl_prune prune; /* for grid (the pruned walk) */
    int nparts;       /* threads per atom of the fused kernel (FUSED_PARTS) */
    mdnl_dbuf pos, per_atom, block_sums, total;
    mdnl_dbuf offsets, j, d; /* an uploaded host list */
    mdnl_dbuf types;         /* per-atom pair types (mdnl_energy_table_frame_cuda) */
    int64_t natoms;          /* atoms of the last run */
    int64_t list_natoms;
    int kept_per_atom;       /* whether the last run wrote per_atom */
};

extern "C" const char *mdnl_energy_reduce_name(mdnl_energy_reduce v)
{
    switch (v) {
    case MDNL_REDUCE_ATOMIC:
        return "atomic";
    case MDNL_REDUCE_TREE:
        return "tree";
    default:
        return "shuffle";
    }
}

/* ---- reductions ---- */

__device__ __forceinline__ double warp_sum(double v)
{
    for (int off = 16; off > 0; off >>= 1)
        v += __shfl_down_sync(0xffffffffu, v, off);
    return v;
}

/* Reduces one value per thread of the block. V = 1: atomicAdd into *total
 * (the baseline; *total zeroed beforehand). V = 2, 3: the block's sum goes to
 * block_sums[blockIdx.x] for the second pass. */
template <int V> __device__ __forceinline__ void block_reduce(double v, double *block_sums, double *total)
{
    if (V == MDNL_REDUCE_ATOMIC) {
        atomicAdd(total, v);
    } else if (V == MDNL_REDUCE_TREE) {
        /* Sequential addressing: halve the active threads each step; every
         * partial sum goes through shared memory. */
        __shared__ double s[EBLOCK];
        s[threadIdx.x] = v;
        __syncthreads();
        for (int h = EBLOCK / 2; h > 0; h >>= 1) {
            if ((int)threadIdx.x < h)
                s[threadIdx.x] += s[threadIdx.x + h];
            __syncthreads();
        }
        if (threadIdx.x == 0)
            block_sums[blockIdx.x] = s[0];
    } else {
        /* Shuffles within each warp, one shared slot per warp, then the
         * first warp shuffles the slots. Two barriers instead of eight. */
        __shared__ double w[EBLOCK / 32];
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        v = warp_sum(v);
        if (lane == 0)
            w[warp] = v;
        __syncthreads();
        if (warp == 0) {
            v = lane < EBLOCK / 32 ? w[lane] : 0.0;
            v = warp_sum(v);
            if (lane == 0)
                block_sums[blockIdx.x] = v;
        }
    }
}

/* Second pass: one block of FINAL_BLOCK threads. Thread t sums block sums t,
 * t + FINAL_BLOCK, ... in that order, then the block shuffles. The order is
 * fixed by nb alone, so the total is the same bits on every run. */
__global__ void __launch_bounds__(FINAL_BLOCK) sum_blocks_kernel(const double *__restrict__ block_sums, int nb,
                                                                  double *__restrict__ total)
{
    __shared__ double w[FINAL_BLOCK / 32];
    double v = 0.0;
    for (int b = threadIdx.x; b < nb; b += FINAL_BLOCK)
        v += block_sums[b];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0)
        w[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = warp_sum(w[lane]);
        if (lane == 0)
            *total = v;
    }
}

/* ---- pair evaluation ---- */

/* A pair's energy from its float distance, specialised on the potential's
 * kind at compile time (K = 0: the runtime dispatch). The same bits as
 * mdnl_pair_energy_d. */
template <int K> __device__ __forceinline__ double pair_energy_d(const mdnl_potential &p, float d)
{
    if (K == MDNL_POTENTIAL_LJ)
        return MDNL_DSUB(mdnl_lj_raw(&p, (double)d), p.offset);
    if (K == MDNL_POTENTIAL_MORSE)
        return MDNL_DSUB(mdnl_morse_raw(&p, (double)d), p.offset);
    return mdnl_pair_energy_d(&p, d);
}

/* The nparts part sums of an atom (warps w, w + 1, ... of a block share 32
 * atoms) added in part order into part 0's h and, PER_ATOM, s. Every thread
 * of the block calls it (barriers). */
template <bool PER_ATOM>
__device__ __forceinline__ void add_parts(double &h, double &s, int part, int nparts, double *part_sum)
{
    if (nparts == 1)
        return;
    part_sum[threadIdx.x] = h;
    __syncthreads();
    if (part == 0)
        for (int q = 1; q < nparts; ++q)
            h += part_sum[threadIdx.x + 32 * q];
    if (PER_ATOM) {
        __syncthreads();
        part_sum[threadIdx.x] = s;
        __syncthreads();
        if (part == 0)
            for (int q = 1; q < nparts; ++q)
                s += part_sum[threadIdx.x + 32 * q];
    }
}

/* Sorted slot `is` of the cell list. Neighbouring threads sit in the same
 * cell, so a warp walks the same cells and its candidate loads hit the same
 * cache lines. The walk is mdnl_for_each_pair_pruned_part (columns and z
 * ranges cut to the atom's cutoff sphere: the same pairs in the same order
 * as mdnl_for_each_pair, fewer candidates). The total is a sum over each
 * pair once: the pairs of the half traversal (candidate slot k > is, or
 * k == is with a lexicographically positive shift), each thread's in walk
 * order. Total only (PER_ATOM false): the half traversal itself, half the
 * pairs evaluated. Per-atom energies: the full walk, e_i = half its row sum
 * (bit for bit the CPU twin's for LJ), while the same half traversal's
 * pairs, a subsequence of it in the same order, are summed apart for the
 * total, so the total has the same bits with and without --per-atom.
 * nparts warps share 32 atoms: warp w walks the stencil positions dealt to
 * part w % nparts of atoms (w / nparts) * 32 + lane (the same dealing in
 * both walks), and the part sums of an atom are added in part order through
 * shared memory, so the bits depend only on the grid and nparts. */
template <int V, int K, bool PER_ATOM>
__global__ void __launch_bounds__(EBLOCK)
    energy_fused_kernel(const __grid_constant__ mdnl_geom g, const mdnl_cells_view c,
                        const __grid_constant__ mdnl_potential p, const mdnl_prune pr, int nparts,
                        double *__restrict__ per_atom, double *__restrict__ block_sums, double *__restrict__ total)
{
    __shared__ double part_sum[EBLOCK];
    const int warp = threadIdx.x >> 5, part = warp % nparts;
    const int is = blockIdx.x * (EBLOCK / nparts) + (warp / nparts) * 32 + (threadIdx.x & 31);
    double h = 0.0, s = 0.0; /* the half traversal's sum; the full row's (PER_ATOM) */
    if (is < c.natoms) {
        if (PER_ATOM)
            mdnl_for_each_pair_pruned_part(g, c, pr, is, part, nparts,
                                           [&](int, float d2, int s0, int s1, int s2, int k) {
                                               const double u = pair_energy_d<K>(p, sqrtf(d2));
                                               s += u;
                                               if (k > is || (k == is && mdnl_shift_positive(s0, s1, s2)))
                                                   h += u;
                                           });
        else
            mdnl_for_each_pair_pruned_part<true>(g, c, pr, is, part, nparts,
                                                 [&](int, float d2, int, int, int) { h += pair_energy_d<K>(p, sqrtf(d2)); });
    }
    add_parts<PER_ATOM>(h, s, part, nparts, part_sum);
    const double e = part == 0 && is < c.natoms ? h : 0.0;
    if (PER_ATOM && part == 0 && is < c.natoms)
        per_atom[c.order[is]] = 0.5 * s;
    block_reduce<V>(e, block_sums, total);
}

/* Per-pair parameters (mdnl_pair_table): energy_fused_kernel's walk and
 * reductions, each pair evaluated as mdnl_pair_table_energy(t, types[i],
 * types[j], d2), the CPU twin's function, so each pair term has the CPU's
 * bits (LJ); the sums agree to rounding, as energy_fused_kernel's do. The table travels as a kernel argument (constant
 * bank); types[] is indexed by original atom. */
template <int V, bool PER_ATOM>
__global__ void __launch_bounds__(EBLOCK)
    energy_table_kernel(const __grid_constant__ mdnl_geom g, const mdnl_cells_view c,
                        const __grid_constant__ mdnl_pair_table t, const int32_t *__restrict__ types,
                        const mdnl_prune pr, int nparts, double *__restrict__ per_atom,
                        double *__restrict__ block_sums, double *__restrict__ total)
{
    __shared__ double part_sum[EBLOCK];
    const int warp = threadIdx.x >> 5, part = warp % nparts;
    const int is = blockIdx.x * (EBLOCK / nparts) + (warp / nparts) * 32 + (threadIdx.x & 31);
    double h = 0.0, s = 0.0;
    if (is < c.natoms) {
        const int ti = __ldg(types + c.order[is]);
        if (PER_ATOM)
            mdnl_for_each_pair_pruned_part(g, c, pr, is, part, nparts,
                                           [&](int j, float d2, int s0, int s1, int s2, int k) {
                                               const double u = mdnl_pair_table_energy(&t, ti, __ldg(types + j), d2);
                                               s += u;
                                               if (k > is || (k == is && mdnl_shift_positive(s0, s1, s2)))
                                                   h += u;
                                           });
        else
            mdnl_for_each_pair_pruned_part<true>(g, c, pr, is, part, nparts, [&](int j, float d2, int, int, int) {
                h += mdnl_pair_table_energy(&t, ti, __ldg(types + j), d2);
            });
    }
    add_parts<PER_ATOM>(h, s, part, nparts, part_sum);
    const double e = part == 0 && is < c.natoms ? h : 0.0;
    if (PER_ATOM && part == 0 && is < c.natoms)
        per_atom[c.order[is]] = 0.5 * s;
    block_reduce<V>(e, block_sums, total);
}

/* The total alone (no --per-atom) where the half-stencil warp walk fits the
 * grid (walk_cuda.cuh: a warp per home cell, each pair once, the lanes on
 * their own candidates against the same home atom, so they do not idle as
 * the thread-per-atom walk's unequal ranges make them: about half the
 * lanes idle there). Each lane sums its pairs
 * in walk order, the block's sums in block_reduce's fixed order: the total
 * repeats bit for bit, and agrees with the per-atom run's (another order of
 * the same pair terms) to rounding. 8 warps a block (block_reduce's
 * EBLOCK), a cell a warp (fused_blocks). */
struct WalkEnergyShared {
    mdnl_walk_warp<false> w[EBLOCK / 32];
    float hits[EBLOCK / 32][64]; /* a warp's ring of hit d2, evaluated 32 at a time */
    float4 sh[27];
};

/* The hits (about a fifth of the tests) are compacted into the warp's ring
 * and evaluated 32 at a time, every lane busy in the double-precision pair
 * energy (evaluated where they hit, ~7 of 32 lanes would work through it). */
template <int K> struct WalkEnergy {
    static constexpr bool kPayload = false;
    const mdnl_geom &g;
    const mdnl_potential &p;
    float *ring; /* the warp's 64 */
    double h;
    int wpos, rpos; /* written and evaluated hits (uniform) */
    __device__ void home(int, int, float4) {}
    __device__ void eval(int n) /* the n <= 32 oldest hits, a lane each */
    {
        const int lane = threadIdx.x & 31;
        __syncwarp(); /* the ring's writes before its reads */
        if (lane < n)
            h += pair_energy_d<K>(p, sqrtf(ring[(rpos + lane) & 63]));
        __syncwarp(); /* its reads before the next writes */
        rpos += n;
    }
    __device__ void take(int nh, const float4 *home, const float4 (&pj)[2], const float4 (&pv)[2], bool z)
    {
        const unsigned lt = (1u << (threadIdx.x & 31)) - 1u;
        auto f = [&](float d2, bool hit, int, int) {
            const unsigned m = __ballot_sync(FULLMASK, hit);
            if (hit)
                ring[(wpos + __popc(m & lt)) & 63] = d2;
            wpos += __popc(m);
            if (wpos - rpos >= 32) /* at most 63 pending: the ring never laps */
                eval(32);
        };
        if (z)
            mdnl_walk_home_tests<true>(nh, home, pj, pv, g.cutoff2, f);
        else
            mdnl_walk_home_tests<false>(nh, home, pj, pv, g.cutoff2, f);
    }
};

template <int V, int K>
__global__ void __launch_bounds__(EBLOCK) energy_walk_kernel(const __grid_constant__ mdnl_geom g,
                                                             const mdnl_cells_view c,
                                                             const __grid_constant__ mdnl_potential p,
                                                             const mdnl_cell_divs d,
                                                             double *__restrict__ block_sums,
                                                             double *__restrict__ total)
{
    __shared__ WalkEnergyShared S;
    if (threadIdx.x < 27)
        S.sh[threadIdx.x] = shift_vector4_of_code(g, threadIdx.x);
    __syncthreads();
    const int w = threadIdx.x >> 5;
    WalkEnergy<K> visit{g, p, S.hits[w], 0.0, 0, 0};
    const int cell = blockIdx.x * (EBLOCK / 32) + w; /* uniform a warp */
    if (cell < c.ncells)
        mdnl_walk_half_cell(g, c, d, cell, S.w[w], S.sh, visit);
    visit.eval(visit.wpos - visit.rpos); /* the last < 32 */
    block_reduce<V>(visit.h, block_sums, total);
}

/* Thread per CSR row i, entries in row order (the CPU twin's order, so a full
 * list's per-atom energies equal the CPU's bit for bit for LJ). Full list:
 * e_i = half the row sum, written plainly. Half list: the row sum is the
 * row's share of the total; per-atom halves are scattered with atomicAdd
 * into a zeroed per_atom. */
template <int V, int HALF>
__global__ void __launch_bounds__(EBLOCK)
    energy_list_kernel(int64_t n, const int64_t *__restrict__ offsets, const int32_t *__restrict__ jj,
                       const float *__restrict__ dd, const __grid_constant__ mdnl_potential p,
                       double *__restrict__ per_atom, double *__restrict__ block_sums, double *__restrict__ total)
{
    const int64_t i = (int64_t)blockIdx.x * EBLOCK + threadIdx.x;
    double v = 0.0;
    if (i < n) {
        double s = 0.0;
        const int64_t kb = offsets[i], ke = offsets[i + 1];
        for (int64_t k = kb; k < ke; ++k) {
            const double u = mdnl_pair_energy_d(&p, dd[k]);
            s += u;
            if (HALF && per_atom)
                atomicAdd(&per_atom[jj[k]], 0.5 * u);
        }
        if (HALF) {
            v = s;
            if (per_atom)
                atomicAdd(&per_atom[i], 0.5 * s);
        } else {
            v = 0.5 * s;
            if (per_atom)
                per_atom[i] = v;
        }
    }
    block_reduce<V>(v, block_sums, total);
}

/* ---- host side ---- */

/* Blocks of the fused and list kernels: EBLOCK atoms each, EBLOCK / nparts
 * for the split fused walk. */
static int nblocks_of(int64_t n, int nparts = 1)
{
    const int per = EBLOCK / nparts;
    return (int)((n + per - 1) / per);
}

/* The grid, pruning and threads per atom of the fused walk for g; then the
 * cell list of d_pos4 on that grid. */
static mdnl_status fused_cells_build(mdnl_energy_cuda *e, const mdnl_geom *g, const float4 *d_pos4)
{
    e->grid = *g;
    e->prune = mdnl_prune_args(&e->grid);
    e->nparts = FUSED_PARTS;
    return mdnl_cells_cuda_build(&e->cells, &e->grid, d_pos4, e->stream);
}

extern "C" mdnl_status mdnl_energy_cuda_create(void *stream, mdnl_energy_cuda **out)
{
    *out = NULL;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        (void)cudaGetLastError();
        return mdnl_error(MDNL_ERR_RESOURCE, "CUDA: no usable device for the energy kernels");
    }
    mdnl_energy_cuda *e = (mdnl_energy_cuda *)calloc(1, sizeof *e);
    if (!e)
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for the CUDA energy handle");
    e->reduce = MDNL_REDUCE_SHUFFLE;
    e->nparts = 1;
    mdnl_status st = MDNL_OK;
    if (stream) {
        e->stream = (cudaStream_t)stream;
    } else {
        cudaError_t err = cudaStreamCreateWithFlags(&e->stream, cudaStreamNonBlocking);
        if (err != cudaSuccess)
            st = mdnl_cuda_fail(err, "cudaStreamCreateWithFlags", __FILE__, __LINE__);
        e->own_stream = st == MDNL_OK;
    }
    if (st == MDNL_OK) {
        cudaError_t err = cudaEventCreate(&e->ev0);
        if (err == cudaSuccess)
            err = cudaEventCreate(&e->ev1);
        if (err == cudaSuccess)
            err = cudaEventCreateWithFlags(&e->ev_pos, cudaEventDisableTiming);
        for (int t = 0; t < MDNL_CUDA_TICKETS && err == cudaSuccess; ++t)
            err = cudaEventCreateWithFlags(&e->done[t], cudaEventDisableTiming);
        if (err != cudaSuccess)
            st = mdnl_cuda_fail(err, "cudaEventCreate", __FILE__, __LINE__);
    }
    if (st != MDNL_OK) {
        mdnl_energy_cuda_free(e);
        return st;
    }
    *out = e;
    return MDNL_OK;
}

extern "C" void mdnl_energy_cuda_free(mdnl_energy_cuda *e)
{
    if (!e)
        return;
    if (e->stream)
        cudaStreamSynchronize(e->stream);
    mdnl_cells_cuda_free(&e->cells);
    mdnl_dbuf *bufs[] = {&e->pos, &e->per_atom, &e->block_sums, &e->total, &e->offsets, &e->j, &e->d, &e->types};
    for (mdnl_dbuf *b : bufs)
        mdnl_dbuf_free(b);
    if (e->ev0)
        cudaEventDestroy(e->ev0);
    if (e->ev1)
        cudaEventDestroy(e->ev1);
    if (e->ev_pos)
        cudaEventDestroy(e->ev_pos);
    for (int t = 0; t < MDNL_CUDA_TICKETS; ++t)
        if (e->done[t])
            cudaEventDestroy(e->done[t]);
    if (e->own_stream)
        cudaStreamDestroy(e->stream);
    free(e);
}

extern "C" void mdnl_energy_cuda_set_reduce(mdnl_energy_cuda *e, mdnl_energy_reduce v)
{
    e->reduce = (v == MDNL_REDUCE_ATOMIC || v == MDNL_REDUCE_TREE) ? v : MDNL_REDUCE_SHUFFLE;
}

extern "C" void mdnl_energy_cuda_set_timing(mdnl_energy_cuda *e, int on) { e->timing = on; }

extern "C" mdnl_status mdnl_energy_cuda_last_ms(mdnl_energy_cuda *e, double *ms)
{
    float f = 0.0f;
    MDNL_CUDA_CHECK(cudaEventSynchronize(e->ev1));
    MDNL_CUDA_CHECK(cudaEventElapsedTime(&f, e->ev0, e->ev1));
    *ms = (double)f;
    return MDNL_OK;
}

/* Sizes the output buffers for n atoms and clears what the variant adds into. */
static mdnl_status prepare_outputs(mdnl_energy_cuda *e, int64_t n, int per_atom, int zero_per_atom, int nblocks)
{
    mdnl_status st;
    const size_t nb = (size_t)(n > 0 && nblocks > 0 ? nblocks : 1);
    if ((st = mdnl_dbuf_reserve(&e->total, sizeof(double), "energy total")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&e->block_sums, nb * sizeof(double), "energy block sums")) != MDNL_OK)
        return st;
    if (per_atom && (st = mdnl_dbuf_reserve(&e->per_atom, (size_t)(n > 0 ? n : 1) * sizeof(double),
                                            "per-atom energies")) != MDNL_OK)
        return st;
    if (e->reduce == MDNL_REDUCE_ATOMIC || n == 0)
        MDNL_CUDA_CHECK(cudaMemsetAsync(e->total.ptr, 0, sizeof(double), e->stream));
    if (per_atom && zero_per_atom && n > 0)
        MDNL_CUDA_CHECK(cudaMemsetAsync(e->per_atom.ptr, 0, (size_t)n * sizeof(double), e->stream));
    e->natoms = n;
    e->kept_per_atom = per_atom;
    return MDNL_OK;
}

/* The second pass, for the variants that have one. */
static mdnl_status finish_total(mdnl_energy_cuda *e, int64_t n, int nblocks)
{
    if (n == 0 || e->reduce == MDNL_REDUCE_ATOMIC)
        return MDNL_OK;
    sum_blocks_kernel<<<1, FINAL_BLOCK, 0, e->stream>>>((const double *)e->block_sums.ptr, nblocks,
                                                        (double *)e->total.ptr);
    MDNL_CUDA_LAUNCHED(e->stream);
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_energy_cuda_upload_positions(mdnl_energy_cuda *e, const mdnl_geom *g,
                                                         const float (*h_pos4)[4])
{
    const int64_t n = g->natoms;
    mdnl_status st = mdnl_dbuf_reserve(&e->pos, (size_t)(n > 0 ? n : 1) * sizeof(float4), "energy positions");
    if (st != MDNL_OK)
        return st;
    if (n > 0)
        MDNL_CUDA_CHECK(cudaMemcpyAsync(e->pos.ptr, h_pos4, (size_t)n * sizeof(float4), cudaMemcpyHostToDevice,
                                        e->stream));
    MDNL_CUDA_CHECK(cudaEventRecord(e->ev_pos, e->stream));
    return fused_cells_build(e, g, (const float4 *)e->pos.ptr);
}

extern "C" const float *mdnl_energy_cuda_positions(const mdnl_energy_cuda *e) { return (const float *)e->pos.ptr; }

extern "C" void *mdnl_energy_cuda_positions_ready(const mdnl_energy_cuda *e) { return (void *)e->ev_pos; }

/* The fused kernels' grid. The walk's: a cell a warp, so that the block
 * scheduler balances the cells' unequal costs (a grid of resident blocks
 * striding over the cells waits for its slowest warp); the block sums stay
 * in a fixed order. */
static int fused_blocks(const mdnl_energy_cuda *e, bool walk)
{
    if (!walk)
        return nblocks_of(e->grid.natoms, e->nparts);
    const int64_t nb = ((int64_t)e->cells.view.ncells + EBLOCK / 32 - 1) / (EBLOCK / 32);
    return (int)(nb > 0 ? nb : 1);
}

/* Launches the fused walk on nblocks (fused_blocks); walk: the total by the
 * warp walk. */
template <int V, int K>
static void launch_fused_k(mdnl_energy_cuda *e, const mdnl_potential *p, double *pa, bool walk, int nblocks)
{
    double *bs = (double *)e->block_sums.ptr, *tot = (double *)e->total.ptr;
    if (walk)
        energy_walk_kernel<V, K><<<nblocks, EBLOCK, 0, e->stream>>>(e->grid, e->cells.view, *p,
                                                                     mdnl_cell_divs_of(e->grid), bs, tot);
    else if (pa)
        energy_fused_kernel<V, K, true><<<nblocks, EBLOCK, 0, e->stream>>>(e->grid, e->cells.view, *p, e->prune,
                                                                          e->nparts, pa, bs, tot);
    else
        energy_fused_kernel<V, K, false><<<nblocks, EBLOCK, 0, e->stream>>>(e->grid, e->cells.view, *p, e->prune,
                                                                           e->nparts, pa, bs, tot);
}

template <int V>
static void launch_fused(mdnl_energy_cuda *e, const mdnl_potential *p, double *pa, bool walk, int nblocks)
{
    if (p->kind == MDNL_POTENTIAL_LJ)
        launch_fused_k<V, MDNL_POTENTIAL_LJ>(e, p, pa, walk, nblocks);
    else if (p->kind == MDNL_POTENTIAL_MORSE)
        launch_fused_k<V, MDNL_POTENTIAL_MORSE>(e, p, pa, walk, nblocks);
    else
        launch_fused_k<V, 0>(e, p, pa, walk, nblocks);
}

extern "C" mdnl_status mdnl_energy_cuda_run_fused(mdnl_energy_cuda *e, const mdnl_geom *g, const mdnl_potential *p,
                                                  int rebuild_cells, int per_atom)
{
    if ((float)p->cutoff != g->cutoff)
        return mdnl_error(MDNL_ERR_USAGE, "energy: the potential's cutoff %g differs from the neighbor cutoff %g",
                          p->cutoff, (double)g->cutoff);
    const int64_t n = g->natoms;
    if (n != e->cells.view.natoms)
        return mdnl_error(MDNL_ERR_INTERNAL, "energy: %lld atoms, but %d uploaded", (long long)n,
                          e->cells.view.natoms);
    if (e->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(e->ev0, e->stream));
    mdnl_status st;
    if (rebuild_cells && (st = fused_cells_build(e, g, (const float4 *)e->pos.ptr)) != MDNL_OK)
        return st;
    if (e->grid.natoms != n || e->grid.cutoff2 != g->cutoff2)
        return mdnl_error(MDNL_ERR_INTERNAL, "energy: the cell list was built for another geometry");
    const bool walk = !per_atom && mdnl_walk_fits(e->grid); /* the total alone: the warp walk */
    const int nb = fused_blocks(e, walk);
    if ((st = prepare_outputs(e, n, per_atom, 0, nb)) != MDNL_OK)
        return st;
    if (n > 0) {
        double *pa = per_atom ? (double *)e->per_atom.ptr : NULL;
        if (e->reduce == MDNL_REDUCE_ATOMIC)
            launch_fused<MDNL_REDUCE_ATOMIC>(e, p, pa, walk, nb);
        else if (e->reduce == MDNL_REDUCE_TREE)
            launch_fused<MDNL_REDUCE_TREE>(e, p, pa, walk, nb);
        else
            launch_fused<MDNL_REDUCE_SHUFFLE>(e, p, pa, walk, nb);
        MDNL_CUDA_LAUNCHED(e->stream);
    }
    if ((st = finish_total(e, n, nb)) != MDNL_OK)
        return st;
    if (e->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(e->ev1, e->stream));
    return MDNL_OK;
}

template <int V, int HALF>
static void launch_list(mdnl_energy_cuda *e, int64_t n, const int64_t *o, const int32_t *j, const float *d,
                        const mdnl_potential *p, double *pa)
{
    energy_list_kernel<V, HALF><<<nblocks_of(n), EBLOCK, 0, e->stream>>>(n, o, j, d, *p, pa,
                                                                         (double *)e->block_sums.ptr,
                                                                         (double *)e->total.ptr);
}

extern "C" mdnl_status mdnl_energy_cuda_run_list_dev(mdnl_energy_cuda *e, int64_t n, mdnl_list_kind kind,
                                                     const int64_t *d_offsets, const int32_t *d_j, const float *d_d,
                                                     const mdnl_potential *p, int per_atom)
{
    if (n > (int64_t)INT32_MAX * EBLOCK / 2)
        return mdnl_error(MDNL_ERR_INPUT, "energy: %lld atoms exceed the CUDA grid", (long long)n);
    if (e->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(e->ev0, e->stream));
    const int half = kind == MDNL_LIST_HALF;
    mdnl_status st = prepare_outputs(e, n, per_atom, half, nblocks_of(n));
    if (st != MDNL_OK)
        return st;
    if (n > 0) {
        double *pa = per_atom ? (double *)e->per_atom.ptr : NULL;
        switch (e->reduce * 2 + half) {
        case MDNL_REDUCE_ATOMIC * 2 + 0:
            launch_list<MDNL_REDUCE_ATOMIC, 0>(e, n, d_offsets, d_j, d_d, p, pa);
            break;
        case MDNL_REDUCE_ATOMIC * 2 + 1:
            launch_list<MDNL_REDUCE_ATOMIC, 1>(e, n, d_offsets, d_j, d_d, p, pa);
            break;
        case MDNL_REDUCE_TREE * 2 + 0:
            launch_list<MDNL_REDUCE_TREE, 0>(e, n, d_offsets, d_j, d_d, p, pa);
            break;
        case MDNL_REDUCE_TREE * 2 + 1:
            launch_list<MDNL_REDUCE_TREE, 1>(e, n, d_offsets, d_j, d_d, p, pa);
            break;
        case MDNL_REDUCE_SHUFFLE * 2 + 0:
            launch_list<MDNL_REDUCE_SHUFFLE, 0>(e, n, d_offsets, d_j, d_d, p, pa);
            break;
        default:
            launch_list<MDNL_REDUCE_SHUFFLE, 1>(e, n, d_offsets, d_j, d_d, p, pa);
            break;
        }
        MDNL_CUDA_LAUNCHED(e->stream);
    }
    if ((st = finish_total(e, n, nblocks_of(n))) != MDNL_OK)
        return st;
    if (e->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(e->ev1, e->stream));
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_energy_cuda_run_nlist(mdnl_energy_cuda *e, const mdnl_nlist_dev *l, mdnl_list_kind kind,
                                                  const mdnl_potential *p, int per_atom)
{
    return mdnl_energy_cuda_run_list_dev(e, l->natoms, kind, l->d_offsets, l->d_j, l->d_d, p, per_atom);
}

extern "C" mdnl_status mdnl_energy_cuda_upload_list(mdnl_energy_cuda *e, const mdnl_nlist *l)
{
    const int64_t n = l->natoms, np = l->npairs;
    mdnl_status st;
    if ((st = mdnl_dbuf_reserve(&e->offsets, (size_t)(n + 1) * sizeof(int64_t), "list offsets")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&e->j, (size_t)(np > 0 ? np : 1) * sizeof(int32_t), "list neighbors")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&e->d, (size_t)(np > 0 ? np : 1) * sizeof(float), "list distances")) != MDNL_OK)
        return st;
    MDNL_CUDA_CHECK(
        cudaMemcpyAsync(e->offsets.ptr, l->offsets, (size_t)(n + 1) * sizeof(int64_t), cudaMemcpyHostToDevice, e->stream));
    if (np > 0) {
        MDNL_CUDA_CHECK(cudaMemcpyAsync(e->j.ptr, l->j, (size_t)np * sizeof(int32_t), cudaMemcpyHostToDevice, e->stream));
        MDNL_CUDA_CHECK(cudaMemcpyAsync(e->d.ptr, l->d, (size_t)np * sizeof(float), cudaMemcpyHostToDevice, e->stream));
    }
    e->list_natoms = n;
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_energy_cuda_run_list(mdnl_energy_cuda *e, mdnl_list_kind kind, const mdnl_potential *p,
                                                 int per_atom)
{
    return mdnl_energy_cuda_run_list_dev(e, e->list_natoms, kind, (const int64_t *)e->offsets.ptr,
                                         (const int32_t *)e->j.ptr, (const float *)e->d.ptr, p, per_atom);
}

extern "C" mdnl_status mdnl_energy_cuda_result(mdnl_energy_cuda *e, double *total, double *per_atom)
{
    MDNL_CUDA_CHECK(cudaMemcpyAsync(total, e->total.ptr, sizeof(double), cudaMemcpyDeviceToHost, e->stream));
    if (per_atom && e->kept_per_atom && e->natoms > 0)
        MDNL_CUDA_CHECK(cudaMemcpyAsync(per_atom, e->per_atom.ptr, (size_t)e->natoms * sizeof(double),
                                        cudaMemcpyDeviceToHost, e->stream));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(e->stream));
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_energy_cuda_launch(mdnl_energy_cuda *e, const mdnl_geom *g, const float (*h_pos4)[4],
                                               const mdnl_potential *p, void *wait_before_upload, int ticket,
                                               double *h_total)
{
    if (ticket < 0 || ticket >= MDNL_CUDA_TICKETS)
        return mdnl_error(MDNL_ERR_INTERNAL, "energy: ticket %d out of range", ticket);
    if (wait_before_upload)
        MDNL_CUDA_CHECK(cudaStreamWaitEvent(e->stream, (cudaEvent_t)wait_before_upload, 0));
    mdnl_status st;
    if ((st = mdnl_energy_cuda_upload_positions(e, g, h_pos4)) != MDNL_OK ||
        (st = mdnl_energy_cuda_run_fused(e, g, p, 0, 0)) != MDNL_OK)
        return st;
    MDNL_CUDA_CHECK(cudaMemcpyAsync(h_total, e->total.ptr, sizeof(double), cudaMemcpyDeviceToHost, e->stream));
    MDNL_CUDA_CHECK(cudaEventRecord(e->done[ticket], e->stream));
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_energy_cuda_launch_dev(mdnl_energy_cuda *e, const mdnl_geom *g, const float *d_pos4,
                                                   void *ready, const mdnl_potential *p, int ticket, double *h_total)
{
    if (ticket < 0 || ticket >= MDNL_CUDA_TICKETS)
        return mdnl_error(MDNL_ERR_INTERNAL, "energy: ticket %d out of range", ticket);
    if (ready)
        MDNL_CUDA_CHECK(cudaStreamWaitEvent(e->stream, (cudaEvent_t)ready, 0));
    /* The cell list gathers its own cell-ordered copy: d_pos4 is read by the
     * build alone, and ev_pos tells its owner when that is over. */
    mdnl_status st = fused_cells_build(e, g, (const float4 *)d_pos4);
    if (st != MDNL_OK)
        return st;
    MDNL_CUDA_CHECK(cudaEventRecord(e->ev_pos, e->stream));
    if ((st = mdnl_energy_cuda_run_fused(e, g, p, 0, 0)) != MDNL_OK)
        return st;
    MDNL_CUDA_CHECK(cudaMemcpyAsync(h_total, e->total.ptr, sizeof(double), cudaMemcpyDeviceToHost, e->stream));
    MDNL_CUDA_CHECK(cudaEventRecord(e->done[ticket], e->stream));
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_energy_cuda_wait(mdnl_energy_cuda *e, int ticket)
{
    MDNL_CUDA_CHECK(cudaEventSynchronize(e->done[ticket]));
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_energy_frame_cuda(mdnl_energy_cuda *e, const mdnl_geom *g, const float (*h_pos4)[4],
                                              const mdnl_potential *p, double *total, double *per_atom)
{
    mdnl_status st;
    if ((st = mdnl_energy_cuda_upload_positions(e, g, h_pos4)) != MDNL_OK ||
        (st = mdnl_energy_cuda_run_fused(e, g, p, 0, per_atom != NULL)) != MDNL_OK)
        return st;
    return mdnl_energy_cuda_result(e, total, per_atom);
}

extern "C" mdnl_status mdnl_energy_list_cuda(mdnl_energy_cuda *e, const mdnl_nlist *l, mdnl_list_kind kind,
                                             const mdnl_potential *p, double *total, double *per_atom)
{
    mdnl_status st;
    if ((st = mdnl_energy_cuda_upload_list(e, l)) != MDNL_OK ||
        (st = mdnl_energy_cuda_run_list(e, kind, p, per_atom != NULL)) != MDNL_OK)
        return st;
    return mdnl_energy_cuda_result(e, total, per_atom);
}

template <int V> static void launch_table(mdnl_energy_cuda *e, const mdnl_pair_table *t, double *pa, int nb)
{
    const int32_t *ty = (const int32_t *)e->types.ptr;
    double *bs = (double *)e->block_sums.ptr, *tot = (double *)e->total.ptr;
    if (pa)
        energy_table_kernel<V, true><<<nb, EBLOCK, 0, e->stream>>>(e->grid, e->cells.view, *t, ty, e->prune,
                                                                   e->nparts, pa, bs, tot);
    else
        energy_table_kernel<V, false><<<nb, EBLOCK, 0, e->stream>>>(e->grid, e->cells.view, *t, ty, e->prune,
                                                                    e->nparts, pa, bs, tot);
}

extern "C" mdnl_status mdnl_energy_table_frame_cuda(mdnl_energy_cuda *e, const mdnl_geom *g, const float (*h_pos4)[4],
                                                    const int32_t *h_types, const mdnl_pair_table *t, double *total,
                                                    double *per_atom)
{
    if ((float)t->max_cutoff != g->cutoff)
        return mdnl_error(MDNL_ERR_USAGE, "energy: the largest pair cutoff %g differs from the neighbor cutoff %g",
                          t->max_cutoff, (double)g->cutoff);
    const int64_t n = g->natoms;
    mdnl_status st = mdnl_dbuf_reserve(&e->types, (size_t)(n > 0 ? n : 1) * sizeof(int32_t), "pair types");
    if (st != MDNL_OK)
        return st;
    if (n > 0)
        MDNL_CUDA_CHECK(
            cudaMemcpyAsync(e->types.ptr, h_types, (size_t)n * sizeof(int32_t), cudaMemcpyHostToDevice, e->stream));
    if ((st = mdnl_energy_cuda_upload_positions(e, g, h_pos4)) != MDNL_OK)
        return st;
    if (e->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(e->ev0, e->stream));
    const int nb = fused_blocks(e, false);
    if ((st = prepare_outputs(e, n, per_atom != NULL, 0, nb)) != MDNL_OK)
        return st;
    if (n > 0) {
        double *pa = per_atom ? (double *)e->per_atom.ptr : NULL;
        if (e->reduce == MDNL_REDUCE_ATOMIC)
            launch_table<MDNL_REDUCE_ATOMIC>(e, t, pa, nb);
        else if (e->reduce == MDNL_REDUCE_TREE)
            launch_table<MDNL_REDUCE_TREE>(e, t, pa, nb);
        else
            launch_table<MDNL_REDUCE_SHUFFLE>(e, t, pa, nb);
        MDNL_CUDA_LAUNCHED(e->stream);
    }
    if ((st = finish_total(e, n, nb)) != MDNL_OK)
        return st;
    if (e->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(e->ev1, e->stream));
    return mdnl_energy_cuda_result(e, total, per_atom);
}

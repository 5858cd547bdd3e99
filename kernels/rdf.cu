/* rdf.cu — the CUDA pair-distance histogram kernels (contract: rdf.h and
 * rdf_cuda.h; CPU twin: rdf_cpu.c).
 *
 * Every kernel bins a pair by mdnl_hist_bin() of its mdnl_pair_d2(), the
 * float operations the CPU twin uses (the prune kernel through a table of
 * d2 thresholds computed with the twin's own mdnl_hist_bin, which gives the
 * same bin for every d2), so the counts agree exactly.
 *
 * Histogram accumulation is a compile-time policy (Acc<V> below):
 *   GLOBAL      one 64-bit global atomicAdd per pair (and per partial hit).
 *   SHARED      atomicAdd on a 32-bit shared-memory bin, its return value
 *               unused: each thread adds at most kThreadBudget there, so no
 *               bin can wrap, and past it straight to the global 64-bit bin
 *               (no count is ever lost). At block end each nonzero shared bin
 *               is added to global.
 *   SHARED_AGG  as SHARED, but a thread first merges consecutive pairs that
 *               fall into the same slot in registers (slot, run) and issues
 *               one shared atomic per run.
 * * A "slot" is p * bins + bin. A pass handles slots [slot_lo, slot_lo +
 * slot_n); pairs outside are skipped (only when the histogram needs more
 * than one pass of shared memory).
 *
 * Thread->data mappings:
 *   hist_prune_kernel    thread (or, split, 4 threads) per sorted cell slot
 *                        `is` (grid-stride) on the grid refined by 2, half
 *                        traversal (k > is, or k == is with a positive shift;
 *                        weight 2), with per-atom pruning of columns and
 *                        z-ranges and the bin from a threshold table (below).
 *   hist_allpairs_kernel thread per atom i of a 256-atom row block; the
 *                        block walks tiles j0 = its own tile .. N, staging 256
 *                        positions (and species) in shared memory, every
 *                        image shift S in [-image_max, image_max]; keeps
 *                        j > i (or j == i with S > 0), weight 2.
 */
#include "rdf.h"
#include "rdf_cuda.h"

#include "cells_cuda.cuh"
#include "cuda_check.cuh"
#include "device.h"
#include "walk_cuda.cuh"

#include <algorithm>
#include <cuda_runtime.h>
#include <math.h>
#include <new>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

namespace {

constexpr int kBlock = 256;
constexpr int kTile = 256;
constexpr size_t kSharedHistBytes = 40 * 1024; /* leaves room for the tile; no opt-in needed */

struct HistArgs {
    unsigned long long *gh; /* global histogram [nhist * bins] */
    const int *species;     /* by original index (partials only) */
    const int2 *pairs;      /* [npairs] (A, B) */
    int npairs;
    int bins;
    float width;
    int slot_lo, slot_n; /* this pass */
    const float *thr;    /* [bins + 1] bin thresholds (mdnl_hist_thresholds), prune kernel only */
    int thr_shared;      /* 1: the prune kernel stages thr in shared memory after the histogram */
    float inv_w2;        /* 1 / width^2: the first guess of a bin from d2 */
    unsigned *next;      /* walk kernel: this pass's home-block counter, zeroed before the launch */
    int chunked;         /* walk kernel: home blocks in chunks off `next` (else a static stride) */
    mdnl_cell_divs divs; /* walk kernel: mdnl_cell_divs_of(g, kWalkK) */
};

/* What the prune kernel needs beyond the grid: whether per-atom pruning is
 * valid (orthogonal t-frame, so |dt_k| = |dr_k|) and its conservative
 * margins. */

template <int V> struct Acc;

template <> struct Acc<MDNL_HIST_GLOBAL> {
    unsigned long long *gh;
    int lo, n;
    __device__ void init(const HistArgs &a, unsigned *) { gh = a.gh, lo = a.slot_lo, n = a.slot_n; }
    __device__ __forceinline__ void add(int slot, unsigned w)
    {
        if ((unsigned)(slot - lo) < (unsigned)n)
            atomicAdd(gh + slot, (unsigned long long)w);
    }
    __device__ void finish() {}
};

/* A thread adds at most kThreadBudget to its block's shared bins in all, so
 * a 32-bit shared bin never wraps (a block of at most 256 threads: below
 * 2^31); past its budget (only in frames far denser than any liquid: 4M
 * pairs a thread) it adds straight to the 64-bit global bins. No shared
 * atomic's return value is waited on. */
constexpr unsigned kThreadBudget = 1u << 23;
static_assert((unsigned long long)kThreadBudget * (kBlock > kTile ? kBlock : kTile) <= (1ull << 31),
              "a shared bin must not wrap");

/* Adds w to a 32-bit shared bin within the thread's budget `left`, else to
 * the global bin. */
__device__ __forceinline__ void shared_add(unsigned *sh, unsigned long long *gh, int lo, int slot, unsigned w,
                                           unsigned &left)
{
    if (w <= left) {
        left -= w;
        atomicAdd(sh + (slot - lo), w);
    } else {
        atomicAdd(gh + slot, (unsigned long long)w);
    }
}

template <> struct Acc<MDNL_HIST_SHARED> {
    unsigned *sh;
    unsigned long long *gh;
    int lo, n;
    unsigned left;
    __device__ void init(const HistArgs &a, unsigned *s)
    {
        sh = s, gh = a.gh, lo = a.slot_lo, n = a.slot_n;
        left = kThreadBudget;
    }
    __device__ __forceinline__ void add(int slot, unsigned w)
    {
        if ((unsigned)(slot - lo) < (unsigned)n)
            shared_add(sh, gh, lo, slot, w, left);
    }
    __device__ void finish() {}
};

template <> struct Acc<MDNL_HIST_SHARED_AGG> {
    unsigned *sh;
    unsigned long long *gh;
    int lo, n;
    int cur;
    unsigned run, left;
    __device__ void init(const HistArgs &a, unsigned *s)
    {
        sh = s, gh = a.gh, lo = a.slot_lo, n = a.slot_n;
        cur = -1, run = 0;
        left = kThreadBudget;
    }
    __device__ __forceinline__ void add(int slot, unsigned w)
    {
        if (slot == cur && run < 0x40000000u) {
            run += w;
            return;
        }
        finish();
        if ((unsigned)(slot - lo) < (unsigned)n)
            cur = slot, run = w;
    }
    __device__ __forceinline__ void finish()
    {
        if (run)
            shared_add(sh, gh, lo, cur, run, left);
        cur = -1, run = 0;
    }
};

__device__ __forceinline__ void shared_zero(unsigned *sh, int n)
{
    for (int s = threadIdx.x; s < n; s += blockDim.x)
        sh[s] = 0;
    __syncthreads();
}

__device__ __forceinline__ void shared_merge(const unsigned *sh, const HistArgs &a)
{
    __syncthreads();
    for (int s = threadIdx.x; s < a.slot_n; s += blockDim.x)
        if (sh[s])
            atomicAdd(a.gh + a.slot_lo + s, (unsigned long long)sh[s]);
}

/* The exact bin of d2 from the threshold table: thr[b] is the smallest float
 * d2 whose mdnl_hist_bin() is >= b (thr[0] = 0, thr[bins] = +inf), so bin(d2)
 * is the b with thr[b] <= d2 < thr[b + 1] because mdnl_hist_bin is monotone
 * in d2. A guess from rsqrtf is off by at most one bin; the two loops walk
 * to the exact one (usually zero steps), whatever the guess. */
__device__ __forceinline__ int table_bin(const float *thr, float d2, float inv_w2, int bins)
{
    const float q = d2 * inv_w2;
    float r; /* q is a normal float here: the flush-to-zero form is the same guess without the denormal path */
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(fmaxf(q, 1e-30f)));
    int b = __float2int_rz(q * r);
    b = b < 0 ? 0 : (b > bins - 1 ? bins - 1 : b);
    const float lo = thr[b], hi = thr[b + 1]; /* both loads in flight at once */
    if (d2 < lo) {
        do
            --b;
        while (d2 < thr[b]);
    } else if (d2 >= hi) {
        do
            ++b;
        while (d2 >= thr[b + 1]);
    }
    return b;
}


/* CELLS_PRUNE2: thread per sorted slot `is` (grid-stride) on the refined grid
 * (cells of about r_max / 2, stencil twice as wide), half traversal (k > is,
 * or k == is with a positive shift; weight 2). Three cuts against a plain
 * stencil walk:
 *   - a column (x, y) whose cells all lie below the atom's own in memory
 *     order holds only slots < is: skipped before its range is loaded;
 *   - with an orthogonal t-frame, a column farther than r_max from the atom
 *     is skipped, and the z-range of the others is trimmed to the cells that
 *     meet [t_z - h, t_z + h], h = sqrt(reach^2 - gap_x^2 - gap_y^2) (gaps
 *     shrunk and h widened by a slack far above float rounding, so no pair
 *     below the cutoff is ever cut);
 *   - the bin comes from the threshold table instead of sqrt and division.
 * The candidates of one column range are read from the cell-ordered float4
 * array (neighbouring threads read the same cells: L1 hits). */
template <int V, int PARTIAL>
__global__ void __launch_bounds__(kBlock, 4) hist_prune_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                            HistArgs a, mdnl_prune pr, int nparts)
{
    extern __shared__ unsigned sh[];
    float *sthr = reinterpret_cast<float *>(sh + (V != MDNL_HIST_GLOBAL ? a.slot_n : 0));
    if (a.thr_shared)
        for (int s = threadIdx.x; s <= a.bins; s += blockDim.x)
            sthr[s] = a.thr[s];
    if (V != MDNL_HIST_GLOBAL)
        shared_zero(sh, a.slot_n); /* ends with __syncthreads */
    else
        __syncthreads();
    const float *thr = a.thr_shared ? sthr : a.thr;
    Acc<V> acc;
    acc.init(a, sh);
    /* nparts warps share 32 atoms: warp w takes part w % nparts of atoms
     * (w / nparts) * 32 + lane of the block's kBlock / nparts. */
    const int warp = threadIdx.x >> 5, part = warp % nparts;
    const int per_block = kBlock / nparts;
    for (int is = blockIdx.x * per_block + (warp / nparts) * 32 + (threadIdx.x & 31); is < c.natoms;
         is += gridDim.x * per_block) {
        const int si = PARTIAL ? __ldg(a.species + __float_as_int(c.pos[is].w)) : 0;
        mdnl_for_each_pair_pruned_part<true, false>(g, c, pr, is, part, nparts, [&](int j, float d2, int, int, int) {
            const int b = table_bin(thr, d2, a.inv_w2, a.bins);
            if (!PARTIAL) {
                acc.add(b, 2u);
            } else {
                const int sj = __ldg(a.species + j);
                for (int p = 0; p < a.npairs; ++p) {
                    const int2 ab = a.pairs[p];
                    const unsigned w = (ab.x == si && ab.y == sj) + (ab.x == sj && ab.y == si);
                    if (w)
                        acc.add(p * a.bins + b, w);
                }
            }
        });
        acc.finish();
    }
    if (V != MDNL_HIST_GLOBAL)
        shared_merge(sh, a);
}

/* CELLS_WALK: the half-stencil warp walk (walk_cuda.cuh) on the refined
 * grid (cells of about r_max / 2, ~7 atoms in a liquid), a warp per home
 * block of kWalkK cells in z (~15 atoms: the candidates enumerated once for
 * twice the atoms), each unordered pair once (weight 2); the blocks in
 * guided chunks where each warp has kWalkChunkedFrom or more (with fewer,
 * ~1.5 a warp, the chunks' atomics cost more than the balance gains: a
 * static stride there); the bin from threshold pairs in shared memory
 * (walk_bin). FAST (the total into shared bins, V == SHARED without
 * partials): the bins are static shared memory too, and a lane takes budget
 * for every add a take can make (2 a test, 4 nh a take) before it starts; a
 * take without budget left adds to the global bins. Otherwise through
 * Acc<V>. AUTO takes it where the walk fits (mdnl_walk_fits) and bins <=
 * kWalkBinsMax (docs/performance.md). */
constexpr int kWalkT = 128; /* 4 warps, a home block each */
constexpr size_t kWalkSharedHistBytes = 16 * 1024; /* with the walk's ~20 kB (22 with partials), within 48 kB */
constexpr int kWalkBinsMax = 512; /* the thresholds (and the total's bins) in static shared memory */
constexpr int kWalkK = 2; /* home blocks of 2 cells in z: the candidates enumerated once for ~15 atoms */
constexpr int kWalkChunkMax = 64;    /* home blocks a block takes off the counter at most */
constexpr int kWalkChunkedFrom = 8; /* home blocks a resident warp, from which they come in chunks */

static bool walk_fits(const mdnl_geom &f, int bins) { return bins <= kWalkBinsMax && mdnl_walk_fits(f, kWalkK); }

/* The block's shared memory. */
template <bool PARTIAL> struct WalkShared {
    mdnl_walk_warp<PARTIAL> w[kWalkT / 32]; /* a partial's candidates carry their species */
    int hsp[kWalkT]; /* home species (partials) */
    float4 sh[27];
    float2 thr2[kWalkBinsMax];   /* (thr[b], thr[b + 1]) */
    unsigned hist[kWalkBinsMax]; /* the total's bins (FAST) */
};

/* The bin of d2 (as table_bin) from the threshold pairs: the rsqrt guess,
 * one pair load to check it, and a walk to the exact bin only where the
 * guess missed (rare). q = 0 gives NaN, converted to bin 0. */
__device__ __forceinline__ int walk_bin(const float2 *thr2, float d2, float inv_w2, int bins)
{
    const float q = d2 * inv_w2;
    float r;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(q));
    int b = min(__float2int_rz(q * r), bins - 1); /* >= 0: q * r >= 0 or NaN */
    const float2 t = thr2[b];
    if (d2 < t.x || d2 >= t.y) {
        while (b > 0 && d2 < thr2[b].x)
            --b;
        while (d2 >= thr2[b].y) /* thr[bins] = +inf */
            ++b;
    }
    return b;
}

template <int V, int PARTIAL> struct WalkHist {
    static constexpr bool FAST = V == MDNL_HIST_SHARED && !PARTIAL;
    static constexpr bool kPayload = PARTIAL; /* the candidate's species */
    const mdnl_geom &g;
    const HistArgs &a;
    WalkShared<PARTIAL> &S;
    Acc<V> &acc;
    unsigned &left;
    int hbase; /* the warp's first lane in S.hsp */
    __device__ void home(int lane, int, float4 p)
    {
        if (PARTIAL)
            S.hsp[hbase + lane] = __ldg(a.species + __float_as_int(p.w));
    }
    __device__ float cand(int, float4 pj) const
    {
        return __int_as_float(PARTIAL ? __ldg(a.species + __float_as_int(pj.w)) : 0);
    }
    __device__ void take(int nh, const float4 *home, const float4 (&pj)[2], const float4 (&pv)[2], bool z)
    {
        bool fast = false;
        if constexpr (FAST) {
            fast = left >= 4u * (unsigned)nh; /* uniform: every lane takes the same */
            if (fast)
                left -= 4u * (unsigned)nh;
        }
        auto run = [&](auto zero) {
            constexpr bool Z = decltype(zero)::value;
            if (FAST && fast) {
                mdnl_walk_home_loop<Z>(nh, home, pj, pv, g.cutoff2, [&](float d2, int, int) {
                    atomicAdd(S.hist + walk_bin(S.thr2, d2, a.inv_w2, a.bins), 2u);
                });
            } else if (FAST || !PARTIAL) {
                mdnl_walk_home_loop<Z>(nh, home, pj, pv, g.cutoff2, [&](float d2, int, int) {
                    const int b = walk_bin(S.thr2, d2, a.inv_w2, a.bins);
                    if (FAST)
                        atomicAdd(a.gh + b, 2ull); /* out of budget */
                    else
                        acc.add(b, 2u);
                });
            } else {
                mdnl_walk_home_loop<Z>(nh, home, pj, pv, g.cutoff2, [&](float d2, int ia, int cc) {
                    const int b = walk_bin(S.thr2, d2, a.inv_w2, a.bins);
                    const int si = S.hsp[hbase + ia], sj = __float_as_int(pv[cc].w);
                    for (int p = 0; p < a.npairs; ++p) {
                        const int2 ab = a.pairs[p];
                        const unsigned wgt = (ab.x == si && ab.y == sj) + (ab.x == sj && ab.y == si);
                        if (wgt)
                            acc.add(p * a.bins + b, wgt);
                    }
                });
            }
        };
        if (z)
            run(std::true_type{});
        else
            run(std::false_type{});
    }
};

template <int V, int PARTIAL>
__global__ void __launch_bounds__(kWalkT, 8) hist_walk_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                          HistArgs a)
{
    constexpr bool FAST = WalkHist<V, PARTIAL>::FAST;
    extern __shared__ unsigned sh[]; /* Acc<V>'s bins (not FAST) */
    __shared__ WalkShared<PARTIAL> S;
    for (int s = threadIdx.x; s < a.bins; s += blockDim.x) {
        S.thr2[s] = make_float2(a.thr[s], a.thr[s + 1]);
        if (FAST)
            S.hist[s] = 0;
    }
    if (threadIdx.x < 27)
        S.sh[threadIdx.x] = shift_vector4_of_code(g, threadIdx.x);
    if (!FAST && V != MDNL_HIST_GLOBAL)
        shared_zero(sh, a.slot_n); /* ends with __syncthreads */
    else
        __syncthreads();
    Acc<V> acc;
    acc.init(a, sh);
    unsigned left = kThreadBudget;
    const int w = threadIdx.x >> 5;
    WalkHist<V, PARTIAL> visit{g, a, S, acc, left, w * 32};
    constexpr int W = kWalkT / 32;
    const int nblk = mdnl_walk_blocks(g, kWalkK);
    if (!a.chunked) { /* a static stride: each warp few home blocks (chunks' barriers would cost more) */
        for (int b = blockIdx.x * W + w; b < nblk; b += gridDim.x * W) /* uniform a warp */
            mdnl_walk_half_cell<kWalkK>(g, c, a.divs, b, S.w[w], S.sh, visit);
    } else {
        /* Chunks of consecutive home blocks off the pass's counter, a chunk
         * a block (its warps on neighbouring cells: their candidates meet in
         * L1), shrinking as the blocks run out (guided), so that the blocks
         * end together; thread 0 asks for the next chunk while this one is
         * walked. */
        __shared__ int s_lo[2], s_n[2];
        int nlo = 0, nn = 0; /* thread 0: the chunk asked for */
        auto ask = [&](int seen) {
            nn = max(W, min(kWalkChunkMax, (nblk - seen) / (int)(3 * gridDim.x)) / W * W);
            nlo = (int)atomicAdd(a.next, (unsigned)nn);
        };
        if (threadIdx.x == 0)
            ask(0);
        for (int it = 0;; it ^= 1) {
            if (threadIdx.x == 0) {
                s_lo[it] = nlo, s_n[it] = nn;
                if (nlo < nblk)
                    ask(nlo);
            }
            __syncthreads(); /* s_[it] written; every read of s_[it ^ 1] done before the barrier before */
            const int lo = s_lo[it], hi = min(lo + s_n[it], nblk);
            if (lo >= nblk)
                break;
            for (int b = lo + w; b < hi; b += W) /* uniform a warp */
                mdnl_walk_half_cell<kWalkK>(g, c, a.divs, b, S.w[w], S.sh, visit);
        }
    }
    acc.finish();
    if (FAST) {
        __syncthreads();
        for (int s = threadIdx.x; s < a.bins; s += blockDim.x)
            if (S.hist[s])
                atomicAdd(a.gh + s, (unsigned long long)S.hist[s]);
    } else if (V != MDNL_HIST_GLOBAL) {
        shared_merge(sh, a);
    }
}

template <int V, int PARTIAL>
__global__ void __launch_bounds__(kTile) hist_allpairs_kernel(const __grid_constant__ mdnl_geom g,
                                                              const float4 *__restrict__ pos, int n, HistArgs a)
{
    extern __shared__ unsigned sh[];
    __shared__ float4 tile[kTile];
    __shared__ int tile_sp[kTile];
    if (V != MDNL_HIST_GLOBAL)
        shared_zero(sh, a.slot_n);
    Acc<V> acc;
    acc.init(a, sh);
    const int i = blockIdx.x * kTile + threadIdx.x;
    const bool active = i < n;
    const float4 pi = active ? pos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    const int si = PARTIAL && active ? a.species[i] : 0;
    for (int j0 = blockIdx.x * kTile; j0 < n; j0 += kTile) {
        __syncthreads();
        if (j0 + (int)threadIdx.x < n) {
            tile[threadIdx.x] = pos[j0 + threadIdx.x];
            if (PARTIAL)
                tile_sp[threadIdx.x] = a.species[j0 + threadIdx.x];
        }
        __syncthreads();
        if (!active)
            continue;
        const int jn = min(kTile, n - j0);
        for (int s0 = -g.image_max[0]; s0 <= g.image_max[0]; ++s0)
            for (int s1 = -g.image_max[1]; s1 <= g.image_max[1]; ++s1)
                for (int s2 = -g.image_max[2]; s2 <= g.image_max[2]; ++s2) {
                    float v[3];
                    mdnl_shift_vector(&g, s0, s1, s2, v);
                    const int jmin = mdnl_shift_positive(s0, s1, s2) ? i : i + 1;
                    for (int t = max(0, jmin - j0); t < jn; ++t) {
                        const float4 pj = tile[t];
                        const float d2 = mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, v);
                        if (d2 < g.cutoff2) {
                            const int b = mdnl_hist_bin(d2, a.width, a.bins);
                            if (!PARTIAL) {
                                acc.add(b, 2u);
                            } else {
                                const int sj = tile_sp[t];
                                for (int p = 0; p < a.npairs; ++p) {
                                    const int2 ab = a.pairs[p];
                                    unsigned w = (ab.x == si && ab.y == sj) + (ab.x == sj && ab.y == si);
                                    if (w)
                                        acc.add(p * a.bins + b, w);
                                }
                            }
                        }
                    }
                }
    }
    acc.finish();
    if (V != MDNL_HIST_GLOBAL)
        shared_merge(sh, a);
}

/* Grid for grid-stride kernels: enough resident blocks to fill the device. */
template <class K> int resident_grid(K kernel, size_t shmem, int work_blocks, int sms, int block = kBlock)
{
    int per_sm = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, shmem) != cudaSuccess || per_sm < 1)
        per_sm = 1;
    (void)cudaGetLastError();
    return std::max(1, std::min(work_blocks, per_sm * sms));
}

template <int V, int PARTIAL>
mdnl_status launch_prune(const mdnl_geom &g, const mdnl_cells_view &c, const HistArgs &a, const mdnl_prune &pr,
                         int nparts, int sms, cudaStream_t stream)
{
    size_t shmem = V == MDNL_HIST_GLOBAL ? 0 : (size_t)a.slot_n * sizeof(unsigned);
    if (a.thr_shared)
        shmem += (size_t)(a.bins + 1) * sizeof(float);
    /* One walk loop for every shift (mdnl_scan_range's ZSPLIT = false):
     * splitting off the zero shift, which speeds up the fused energy, made
     * this kernel slower (docs/performance.md). */
    auto k = hist_prune_kernel<V, PARTIAL>;
    const int per_block = kBlock / nparts;
    const int work = (c.natoms + per_block - 1) / per_block;
    const int grid = resident_grid(k, shmem, work, sms);
    k<<<grid, kBlock, shmem, stream>>>(g, c, a, pr, nparts);
    MDNL_CUDA_LAUNCHED(stream);
    return MDNL_OK;
}

template <int V, int PARTIAL>
mdnl_status launch_walk(const mdnl_geom &g, const mdnl_cells_view &c, const HistArgs &a, int sms, cudaStream_t stream)
{
    const size_t shmem = V == MDNL_HIST_GLOBAL || (V == MDNL_HIST_SHARED && !PARTIAL)
                             ? 0 /* the total's bins are static (FAST) */
                             : (size_t)a.slot_n * sizeof(unsigned);
    auto k = hist_walk_kernel<V, PARTIAL>;
    constexpr int W = kWalkT / 32;
    const int nblk = mdnl_walk_blocks(g, kWalkK);
    const int grid = resident_grid(k, shmem, (nblk + W - 1) / W, sms, kWalkT);
    HistArgs b = a;
    b.chunked = nblk >= kWalkChunkedFrom * grid * W;
    b.divs = mdnl_cell_divs_of(g, kWalkK);
    k<<<grid, kWalkT, shmem, stream>>>(g, c, b);
    MDNL_CUDA_LAUNCHED(stream);
    return MDNL_OK;
}

template <int V, int PARTIAL>
mdnl_status launch_allpairs(const mdnl_geom &g, const float4 *pos, int n, const HistArgs &a, cudaStream_t stream)
{
    const size_t shmem = V == MDNL_HIST_GLOBAL ? 0 : (size_t)a.slot_n * sizeof(unsigned);
    hist_allpairs_kernel<V, PARTIAL><<<(n + kTile - 1) / kTile, kTile, shmem, stream>>>(g, pos, n, a);
    MDNL_CUDA_LAUNCHED(stream);
    return MDNL_OK;
}

/* The traversals on the refined grid's cell list. */
static bool trav_prune(int trav)
{
    return trav == MDNL_HIST_TRAV_CELLS_PRUNE2 || trav == MDNL_HIST_TRAV_CELLS_PRUNE2_X4 ||
           trav == MDNL_HIST_TRAV_CELLS_WALK;
}

/* Threads per atom of a pruned traversal. */
static int trav_parts(int trav) { return trav == MDNL_HIST_TRAV_CELLS_PRUNE2_X4 ? 4 : 1; }

template <int V>
mdnl_status launch_variant(int trav, bool partial, const mdnl_geom &g, const mdnl_cells_view &c, const float4 *pos,
                           const HistArgs &a, const mdnl_prune &pr, int sms, cudaStream_t stream)
{
    if (trav == MDNL_HIST_TRAV_CELLS_WALK)
        return partial ? launch_walk<V, 1>(g, c, a, sms, stream) : launch_walk<V, 0>(g, c, a, sms, stream);
    if (trav_prune(trav))
        return partial ? launch_prune<V, 1>(g, c, a, pr, trav_parts(trav), sms, stream)
                       : launch_prune<V, 0>(g, c, a, pr, trav_parts(trav), sms, stream);
    return partial ? launch_allpairs<V, 1>(g, pos, (int)g.natoms, a, stream)
                   : launch_allpairs<V, 0>(g, pos, (int)g.natoms, a, stream);
}

} // namespace

struct mdnl_hist_cuda {
    cudaStream_t stream;
    cudaEvent_t ev[4];
    int sms;
    mdnl_dbuf pos, species, pairs, hist;
    mdnl_cells_cuda cells;
    mdnl_geom grid;                /* the geometry the cell list was built for */
    mdnl_prune prune;               /* for grid (CELLS_PRUNE traversals) */
    mdnl_dbuf thr;                 /* device threshold table [bins + 1] of thr_key */
    float *thr_host;               /* its host copy (malloc'd, thr_cap floats) */
    int thr_cap;
    float thr_width, thr_cut2;     /* what the table on the device is for */
    int thr_bins;
    cudaEvent_t copied;            /* recorded after the device-to-device position copy */
    cudaEvent_t done[MDNL_CUDA_TICKETS]; /* mdnl_hist_cuda_launch: the counts are on the host */
};

extern "C" mdnl_status mdnl_hist_cuda_create(mdnl_hist_cuda **out)
{
    *out = NULL;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        (void)cudaGetLastError();
        return mdnl_error(MDNL_ERR_RESOURCE, "CUDA: no usable device for the histogram");
    }
    mdnl_hist_cuda *c = new (std::nothrow) mdnl_hist_cuda{};
    if (!c)
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for a CUDA histogram context");
    *out = c;
    MDNL_CUDA_CHECK(cudaSetDevice(mdnl_cuda_device_index()));
    MDNL_CUDA_CHECK(cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, mdnl_cuda_device_index()));
    MDNL_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    for (cudaEvent_t &e : c->ev)
        MDNL_CUDA_CHECK(cudaEventCreate(&e));
    MDNL_CUDA_CHECK(cudaEventCreateWithFlags(&c->copied, cudaEventDisableTiming));
    for (cudaEvent_t &e : c->done)
        MDNL_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return MDNL_OK;
}

extern "C" void mdnl_hist_cuda_free(mdnl_hist_cuda *c)
{
    if (!c)
        return;
    mdnl_cells_cuda_free(&c->cells);
    mdnl_dbuf_free(&c->pos);
    mdnl_dbuf_free(&c->species);
    mdnl_dbuf_free(&c->pairs);
    mdnl_dbuf_free(&c->hist);
    mdnl_dbuf_free(&c->thr);
    free(c->thr_host);
    for (cudaEvent_t e : c->ev)
        if (e)
            cudaEventDestroy(e);
    for (cudaEvent_t e : c->done)
        if (e)
            cudaEventDestroy(e);
    if (c->copied)
        cudaEventDestroy(c->copied);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    delete c;
}

extern "C" const char *mdnl_hist_variant_name(int v)
{
    switch (v) {
    case MDNL_HIST_GLOBAL: return "global";
    case MDNL_HIST_SHARED: return "shared";
    case MDNL_HIST_SHARED_AGG: return "shared-agg";
    default: return "auto";
    }
}

extern "C" const char *mdnl_hist_traversal_name(int t)
{
    switch (t) {
    case MDNL_HIST_TRAV_ALLPAIRS: return "allpairs";
    case MDNL_HIST_TRAV_CELLS_PRUNE2: return "cells-prune2";
    case MDNL_HIST_TRAV_CELLS_PRUNE2_X4: return "prune2-x4";
    case MDNL_HIST_TRAV_CELLS_WALK: return "cells-walk";
    default: return "auto";
    }
}

static bool all_open(const mdnl_geom *g) { return !g->pbc[0] && !g->pbc[1] && !g->pbc[2]; }

/* The refined grids (mdnl_geom_refine) and the per-atom pruning
 * (mdnl_prune_args) are cells_cuda.cuh's, shared with the fused energy. */

/* Uploads the threshold table when (width, cutoff2, bins) changed. */
static mdnl_status hist_thr_upload(mdnl_hist_cuda *c, const mdnl_geom *g, const mdnl_hist_spec *spec)
{
    const float width = mdnl_hist_width(spec);
    if (c->thr.ptr && c->thr_width == width && c->thr_cut2 == g->cutoff2 && c->thr_bins == spec->bins)
        return MDNL_OK;
    mdnl_status st = mdnl_dbuf_reserve(&c->thr, (size_t)(spec->bins + 1) * sizeof(float), "histogram thresholds");
    if (st != MDNL_OK)
        return st;
    if (c->thr_cap < spec->bins + 1) {
        float *h = (float *)realloc(c->thr_host, (size_t)(spec->bins + 1) * sizeof(float));
        if (!h)
            return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for histogram thresholds");
        c->thr_host = h;
        c->thr_cap = spec->bins + 1;
    }
    mdnl_hist_thresholds(width, spec->bins, g->cutoff2, c->thr_host); /* rdf.h: the one definition */
    /* Synchronous: the table is tiny and uploaded once per (r_max, bins). */
    MDNL_CUDA_CHECK(cudaMemcpyAsync(c->thr.ptr, c->thr_host, (size_t)(spec->bins + 1) * sizeof(float),
                                    cudaMemcpyHostToDevice, c->stream));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    c->thr_width = width, c->thr_cut2 = g->cutoff2, c->thr_bins = spec->bins;
    return MDNL_OK;
}

/* Uploads the frame and builds the cell list when the traversal needs it.
 * Resolves AUTO choices into *variant and *trav. */
static mdnl_status hist_prepare(mdnl_hist_cuda *c, const mdnl_geom *g, const float (*pos4)[4], const int32_t *species,
                                const mdnl_hist_spec *spec, int *variant, int *trav, double *upload_ms,
                                double *cells_ms, const float *d_pos4 = nullptr, cudaEvent_t ready = nullptr)
{
    mdnl_status st = mdnl_hist_spec_check(spec, g, MDNL_MAX_SPECIES);
    if (st != MDNL_OK)
        return st;
    if (g->natoms > INT32_MAX / 2)
        return mdnl_error(MDNL_ERR_INPUT, "%lld atoms: the CUDA histogram handles at most %d",
                          (long long)g->natoms, INT32_MAX / 2);
    if (spec->npairs > 0 && !species && g->natoms > 0)
        return mdnl_error(MDNL_ERR_INTERNAL, "histogram: partials need the species array");
    if (*variant < MDNL_HIST_AUTO || *variant > MDNL_HIST_SHARED_AGG || *trav < MDNL_HIST_TRAV_AUTO ||
        *trav > MDNL_HIST_TRAV_CELLS_WALK)
        return mdnl_error(MDNL_ERR_USAGE, "histogram: unknown variant %d or traversal %d", *variant, *trav);
    if (*variant == MDNL_HIST_AUTO)
        *variant = MDNL_HIST_SHARED; /* the benchmark's winner on lj-1m and graphene-1m */
    const mdnl_geom fine = mdnl_geom_refine(g, 2); /* the grid of the cell traversals */
    const bool walk = walk_fits(fine, spec->bins);
    if (*trav == MDNL_HIST_TRAV_AUTO)
        *trav = all_open(g) && g->natoms <= 16384 ? MDNL_HIST_TRAV_ALLPAIRS
                : walk                             ? MDNL_HIST_TRAV_CELLS_WALK
                : g->natoms <= (int64_t)kBlock * 4 * c->sms ? MDNL_HIST_TRAV_CELLS_PRUNE2_X4
                                                             : MDNL_HIST_TRAV_CELLS_PRUNE2;
    else if (*trav == MDNL_HIST_TRAV_CELLS_WALK && !walk)
        *trav = MDNL_HIST_TRAV_CELLS_PRUNE2; /* too few cells on a periodic axis, a stencil too wide for a warp, or too many bins */
    const size_t n = (size_t)g->natoms;
    const size_t nslots = (size_t)mdnl_hist_nhist(spec) * (size_t)spec->bins;
    if ((st = mdnl_dbuf_reserve(&c->pos, (n ? n : 1) * sizeof(float4), "histogram positions")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->species, (n ? n : 1) * sizeof(int), "histogram species")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->pairs, (size_t)(spec->npairs + 1) * sizeof(int2), "histogram pairs")) !=
            MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->hist, (nslots + MDNL_HIST_MAX_PASSES) * sizeof(unsigned long long),
                                "histogram")) != MDNL_OK) /* the walk's home-block counters after the bins */
        return st;
    MDNL_CUDA_CHECK(cudaEventRecord(c->ev[0], c->stream));
    if (n && d_pos4) { /* already on the device, complete when `ready` is */
        MDNL_CUDA_CHECK(cudaStreamWaitEvent(c->stream, ready, 0));
        MDNL_CUDA_CHECK(cudaMemcpyAsync(c->pos.ptr, d_pos4, n * sizeof(float4), cudaMemcpyDeviceToDevice, c->stream));
        MDNL_CUDA_CHECK(cudaEventRecord(c->copied, c->stream)); /* the source may be overwritten after this */
    } else if (n) {
        MDNL_CUDA_CHECK(cudaMemcpyAsync(c->pos.ptr, pos4, n * sizeof(float4), cudaMemcpyHostToDevice, c->stream));
    }
    if (n) {
        if (spec->npairs > 0)
            MDNL_CUDA_CHECK(
                cudaMemcpyAsync(c->species.ptr, species, n * sizeof(int), cudaMemcpyHostToDevice, c->stream));
    }
    if (spec->npairs > 0)
        MDNL_CUDA_CHECK(cudaMemcpyAsync(c->pairs.ptr, spec->pairs, (size_t)spec->npairs * sizeof(int2),
                                        cudaMemcpyHostToDevice, c->stream));
    MDNL_CUDA_CHECK(cudaEventRecord(c->ev[1], c->stream));
    c->grid = trav_prune(*trav) ? fine : *g;
    if (trav_prune(*trav)) {
        c->prune = mdnl_prune_args(&c->grid);
        if ((st = hist_thr_upload(c, g, spec)) != MDNL_OK)
            return st;
    }
    if (*trav != MDNL_HIST_TRAV_ALLPAIRS && n)
        if ((st = mdnl_cells_cuda_build(&c->cells, &c->grid, (const float4 *)c->pos.ptr, c->stream)) != MDNL_OK)
            return st;
    MDNL_CUDA_CHECK(cudaEventRecord(c->ev[2], c->stream));
    if (!upload_ms && !cells_ms)
        return MDNL_OK; /* the frame path: no host round trip, the kernels queue behind */
    MDNL_CUDA_CHECK(cudaEventSynchronize(c->ev[2]));
    float ms = 0;
    MDNL_CUDA_CHECK(cudaEventElapsedTime(&ms, c->ev[0], c->ev[1]));
    if (upload_ms)
        *upload_ms = ms;
    MDNL_CUDA_CHECK(cudaEventElapsedTime(&ms, c->ev[1], c->ev[2]));
    if (cells_ms)
        *cells_ms = *trav == MDNL_HIST_TRAV_ALLPAIRS ? 0.0 : ms;
    return MDNL_OK;
}

/* Zeroes the global histogram and runs the kernel passes (asynchronous). */
static mdnl_status hist_run(mdnl_hist_cuda *c, const mdnl_geom *g, const mdnl_hist_spec *spec, int *variant, int trav,
                            int *passes)
{
    const int nslots = (int)((int64_t)mdnl_hist_nhist(spec) * spec->bins);
    MDNL_CUDA_CHECK(cudaMemsetAsync(c->hist.ptr, 0, (size_t)(nslots + MDNL_HIST_MAX_PASSES) * sizeof(unsigned long long),
                                    c->stream)); /* the bins and the walk's home-block counters */
    *passes = 0;
    if (g->natoms == 0)
        return MDNL_OK;
    const int cap = (int)((trav == MDNL_HIST_TRAV_CELLS_WALK ? kWalkSharedHistBytes : kSharedHistBytes) / sizeof(unsigned));
    const int need = (nslots + cap - 1) / cap;
    if (*variant != MDNL_HIST_GLOBAL && need > MDNL_HIST_MAX_PASSES)
        *variant = MDNL_HIST_GLOBAL; /* too many passes: the baseline never fails */
    HistArgs a{};
    a.gh = (unsigned long long *)c->hist.ptr;
    a.species = (const int *)c->species.ptr;
    a.pairs = (const int2 *)c->pairs.ptr;
    a.npairs = spec->npairs;
    a.bins = spec->bins;
    a.width = mdnl_hist_width(spec);
    a.thr = (const float *)c->thr.ptr;
    a.thr_shared = spec->bins + 1 <= 2048; /* with a 40 KB histogram still within 48 KB */
    a.inv_w2 = (float)(1.0 / ((double)a.width * (double)a.width));
    unsigned *next = (unsigned *)((unsigned long long *)c->hist.ptr + nslots);
    const bool partial = spec->npairs > 0;
    const float4 *pos = (const float4 *)c->pos.ptr;
    mdnl_status st = MDNL_OK;
    if (*variant == MDNL_HIST_GLOBAL) {
        a.slot_lo = 0, a.slot_n = nslots;
        a.next = next;
        *passes = 1;
        return launch_variant<MDNL_HIST_GLOBAL>(trav, partial, c->grid, c->cells.view, pos, a, c->prune, c->sms, c->stream);
    }
    for (int lo = 0; lo < nslots && st == MDNL_OK; lo += cap) {
        a.slot_lo = lo;
        a.slot_n = std::min(cap, nslots - lo);
        a.next = next + 2 * *passes; /* a u64 slot each */
        ++*passes;
        if (*variant == MDNL_HIST_SHARED)
            st = launch_variant<MDNL_HIST_SHARED>(trav, partial, c->grid, c->cells.view, pos, a, c->prune, c->sms,
                                                  c->stream);
        else
            st = launch_variant<MDNL_HIST_SHARED_AGG>(trav, partial, c->grid, c->cells.view, pos, a, c->prune,
                                                      c->sms, c->stream);
    }
    return st;
}

static mdnl_status hist_download(mdnl_hist_cuda *c, const mdnl_hist_spec *spec, uint64_t *counts)
{
    const size_t nslots = (size_t)mdnl_hist_nhist(spec) * (size_t)spec->bins;
    MDNL_CUDA_CHECK(cudaMemcpyAsync(counts, c->hist.ptr, nslots * sizeof(uint64_t), cudaMemcpyDeviceToHost, c->stream));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(c->stream));
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_hist_frame_cuda(mdnl_hist_cuda *c, const mdnl_geom *g, const float (*pos4)[4],
                                            const int32_t *species, const mdnl_hist_spec *spec, int variant,
                                            int traversal, uint64_t *counts)
{
    mdnl_status st;
    int passes = 0;
    if ((st = hist_prepare(c, g, pos4, species, spec, &variant, &traversal, NULL, NULL)) != MDNL_OK ||
        (st = hist_run(c, g, spec, &variant, traversal, &passes)) != MDNL_OK)
        return st;
    return hist_download(c, spec, counts);
}

extern "C" mdnl_status mdnl_hist_cuda_launch(mdnl_hist_cuda *c, const mdnl_geom *g, const float (*h_pos4)[4],
                                             const float *d_pos4, void *ready, const int32_t *species,
                                             const mdnl_hist_spec *spec, int ticket, uint64_t *h_counts)
{
    if (ticket < 0 || ticket >= MDNL_CUDA_TICKETS)
        return mdnl_error(MDNL_ERR_INTERNAL, "histogram: ticket %d out of range", ticket);
    mdnl_status st;
    int passes = 0, variant = MDNL_HIST_AUTO, traversal = MDNL_HIST_TRAV_AUTO;
    if ((st = hist_prepare(c, g, h_pos4, species, spec, &variant, &traversal, NULL, NULL, d_pos4,
                           (cudaEvent_t)ready)) != MDNL_OK ||
        (st = hist_run(c, g, spec, &variant, traversal, &passes)) != MDNL_OK)
        return st;
    const size_t nslots = (size_t)mdnl_hist_nhist(spec) * (size_t)spec->bins;
    MDNL_CUDA_CHECK(
        cudaMemcpyAsync(h_counts, c->hist.ptr, nslots * sizeof(uint64_t), cudaMemcpyDeviceToHost, c->stream));
    MDNL_CUDA_CHECK(cudaEventRecord(c->done[ticket], c->stream));
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_hist_cuda_wait(mdnl_hist_cuda *c, int ticket)
{
    MDNL_CUDA_CHECK(cudaEventSynchronize(c->done[ticket]));
    return MDNL_OK;
}

extern "C" void *mdnl_hist_cuda_copied_event(mdnl_hist_cuda *c) { return (void *)c->copied; }

extern "C" mdnl_status mdnl_hist_cuda_bench(mdnl_hist_cuda *c, const mdnl_geom *g, const float (*pos4)[4],
                                            const int32_t *species, const mdnl_hist_spec *spec, int variant,
                                            int traversal, int repeats, uint64_t *counts, mdnl_hist_cuda_timing *t)
{
    mdnl_status st;
    *t = mdnl_hist_cuda_timing{};
    if ((st = hist_prepare(c, g, pos4, species, spec, &variant, &traversal, &t->upload_ms, &t->cells_ms)) != MDNL_OK)
        return st;
    if (repeats < 1)
        repeats = 1;
    std::vector<float> ms((size_t)repeats);
    for (int r = 0; r < repeats; ++r) {
        MDNL_CUDA_CHECK(cudaEventRecord(c->ev[0], c->stream));
        if ((st = hist_run(c, g, spec, &variant, traversal, &t->passes)) != MDNL_OK)
            return st;
        MDNL_CUDA_CHECK(cudaEventRecord(c->ev[1], c->stream));
        MDNL_CUDA_CHECK(cudaEventSynchronize(c->ev[1]));
        MDNL_CUDA_CHECK(cudaEventElapsedTime(&ms[(size_t)r], c->ev[0], c->ev[1]));
    }
    std::vector<float> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    t->hist_ms = sorted[sorted.size() / 2];
    t->hist_min_ms = sorted[0];
    t->variant = variant;
    t->traversal = traversal;
    return hist_download(c, spec, counts);
}

/* nlist_cuda_common.cuh — what the CUDA neighbor-list paths share (internal
 * to nlist_*.cu; the public API is nlist_cuda.h, the contract nlist.h).
 *
 * Every path produces exactly the CPU twin's bytes (nlist_cpu.c):
 *   - the same float positions and the same pair arithmetic (mdnl_pair_d2,
 *     geometry.h; distance = __fsqrt_rn(d2), the host's sqrtf);
 *   - exact row sizes from a counting pass (or a staged pass whose capacity
 *     grows and retries), a one-pass prefix sum (CUB's block scan with the
 *     decoupled look-back), and a fill that never writes past a row's end;
 *   - every row sorted on the device by mdnl_row_key (j, then distance).
 *
 * Here: the row sort helpers, image-shift codes, the warp's candidate ranges,
 * the rows kernel (fill / compact / sort rows, thread per row), the context,
 * and the host helpers (stage timing, scan, binning) defined in nlist_cuda.cu.
 * Files: nlist_brute.cu (brute-atomic, brute-noatomic), nlist_cell_sparse.cu
 * (sparse rows), nlist_cell_dense_walk.cu and nlist_cell_dense_tiles.cu (dense
 * rows), nlist_cuda.cu (context, path choice, entry points).
 */
#ifndef MDNL_NLIST_CUDA_COMMON_CUH
#define MDNL_NLIST_CUDA_COMMON_CUH

#include "cells_cuda.cuh"
#include "cuda_check.cuh"
#include "cuda_host.h"
#include "nlist_cuda.h"

#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utility>

#define WALK_CAP 64 /* dense-walk: keys per slab row */

/* ------------------------------------------------------------------------ */
/* Programmatic dependent launch (sm_90): a kernel launched by nl_launch may
 * be scheduled while the kernel before it in the stream drains (its last
 * wave), instead of after; it first waits in nl_grid_wait, before touching
 * any memory, until that kernel has finished and its writes are visible,
 * then lets the next kernel be scheduled the same way. A build's kernels
 * then follow each other without the launch gap. Launched plainly, both
 * instructions do nothing. What a kernel two back wrote may be read before
 * the wait (dense-walk's gathered rows kernel): the grid is scheduled only
 * after the kernel before it passed its own wait. A scheduled block runs in
 * the shared-memory carveout its SM has where its blocks fit, set by the
 * kernels before it (dense-walk's WALK_CARVE_GATHERED). */
__device__ __forceinline__ void nl_grid_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* kernel<<<grid, block, 0, stream>>>(args...) as a programmatic dependent
 * launch (the kernel calls nl_grid_wait first). */
template <class... P, class... A>
static inline mdnl_status nl_launch(void (*kernel)(P...), dim3 grid, dim3 block, cudaStream_t stream, A &&...args)
{
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = 0;
    cfg.stream = stream;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    MDNL_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<A>(args)...));
    MDNL_CUDA_LAUNCHED(stream);
    return MDNL_OK;
}

/* ------------------------------------------------------------------------ */
/* Row sorting: keys are mdnl_row_key(j, d); equal keys are identical bytes,
 * so stability does not matter. */

template <class A>
__device__ __forceinline__ void sift_down(A &a, long long root, long long end)
{
    for (;;) {
        long long child = 2 * root + 1;
        if (child >= end)
            return;
        uint64_t vc = a.get(child);
        if (child + 1 < end) {
            uint64_t vr = a.get(child + 1);
            if (vr > vc) {
                vc = vr;
                ++child;
            }
        }
        uint64_t vroot = a.get(root);
        if (vroot >= vc)
            return;
        a.set(root, vc);
        a.set(child, vroot);
        root = child;
    }
}

/* Sorts a[0..n) ascending through an accessor with get(k)/set(k, key). */
template <class A>
__device__ void sort_row(A a, long long n)
{
    if (n <= 128) {
        for (long long p = 1; p < n; ++p) {
            uint64_t x = a.get(p);
            long long q = p;
            for (; q > 0; --q) {
                uint64_t y = a.get(q - 1);
                if (y <= x)
                    break;
                a.set(q, y);
            }
            a.set(q, x);
        }
        return;
    }
    for (long long r = n / 2 - 1; r >= 0; --r)
        sift_down(a, r, n);
    for (long long e = n - 1; e > 0; --e) {
        uint64_t top = a.get(0);
        a.set(0, a.get(e));
        a.set(e, top);
        sift_down(a, 0, e);
    }
}

/* The stages jj = j0, j0 / 2, .. 1 of a bitonic network on one thread's
 * first N keys (unsigned or uint64_t): x[e] against x[e ^ jj], ascending
 * where (e & k) == 0, descending elsewhere (k and j0 known once the
 * callers' loops unroll). Registers only: every index is a constant. */
template <int N, class T, int M>
__device__ __forceinline__ void thread_bitonic_merge(T (&x)[M], int k, int j0)
{
#pragma unroll
    for (int jj = j0; jj > 0; jj >>= 1)
#pragma unroll
        for (int e = 0; e < N; ++e) {
            const int p = e ^ jj;
            if (p > e) {
                const T a = x[e], b = x[p];
                const T lo = a < b ? a : b, hi = a < b ? b : a;
                x[e] = (e & k) == 0 ? lo : hi;
                x[p] = (e & k) == 0 ? hi : lo;
            }
        }
}

/* Ascending bitonic sort of one thread's first N keys (N a power of two,
 * N <= M): dense-walk's rows (32-bit keys), sparse-stage's (64-bit). */
template <int N, class T, int M>
__device__ __forceinline__ void thread_bitonic(T (&x)[M])
{
    static_assert(N <= M, "the network sorts a prefix of the array");
#pragma unroll
    for (int k = 2; k <= N; k <<= 1)
        thread_bitonic_merge<N>(x, k, k >> 1);
}

struct smem_row {
    uint64_t *k;
    __device__ uint64_t get(long long q) const { return k[q]; }
    __device__ void set(long long q, uint64_t v) const { k[q] = v; }
};

struct global_row {
    int32_t *j;
    float *d;
    __device__ uint64_t get(long long q) const { return mdnl_row_key(j[q], d[q]); }
    __device__ void set(long long q, uint64_t v) const
    {
        j[q] = (int32_t)(v >> 32);
        d[q] = __uint_as_float((unsigned)v);
    }
};

/* A row too long for its path's registers or slab, filled by a thread
 * that walks its candidates again: walk(f) calls f(j, d2, s0, s1, s2) for
 * every pair of row i (the path's own traversal); the kept hits go to the
 * CSR at off as they come, the row is then sorted in place. A count that
 * disagrees with len sets *err (nothing past the row is written). */
template <bool FULL, class W>
__device__ void nl_row_walked_again(W &&walk, int i, long long off, long long len, int32_t *__restrict__ j_out,
                                    float *__restrict__ d_out, int *__restrict__ err)
{
    long long k = 0;
    walk([&](int j, float d2, int s0, int s1, int s2) {
        if (FULL || mdnl_half_keep(i, j, s0, s1, s2)) {
            if (k < len) {
                j_out[off + k] = j;
                d_out[off + k] = __fsqrt_rn(d2);
            }
            ++k;
        }
    });
    if (k != len)
        *(volatile int *)err = 1; /* a store, not an atomic: err may be the host's mapped read-back */
    sort_row(global_row{j_out + off, d_out + off}, len);
}

/* ------------------------------------------------------------------------ */
/* Fill, sort and write rows. Mapping: thread per row (MODE 0: sorted slot s,
 * row order[s]; MODE 1, 2: row s). A block-wide exclusive scan of the row
 * lengths lays the block's rows out back to back in shared memory; when they
 * fit, each thread produces its row there, sorts it, and then each warp
 * writes its 32 rows to the CSR cooperatively, lane q taking entries q,
 * q + 32, ... of a row (coalesced). When they do not fit, each thread writes
 * its row straight into the CSR and sorts it there.
 *   MODE 0 (cell fill): the row comes from the cell-list visitor;
 *   MODE 1 (brute-noatomic compaction): from the transposed stage;
 *   MODE 2 (brute-atomic row sort): from the CSR itself (in place); the
 *          block's rows are one contiguous CSR range, loaded cooperatively;
 *   MODE 3 (sparse-rows compaction): thread per sorted slot
 *          s, row order[s], from the cell stage stage[k * n + s]. */
#define ROWS_T 128

template <int MODE, bool FULL>
__global__ __launch_bounds__(ROWS_T) void rows_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c, int n,
                                                      const uint64_t *__restrict__ stage, int cap,
                                                      const unsigned *__restrict__ ccount, int nchunk,
                                                      const int64_t *__restrict__ offsets, int32_t *__restrict__ j_out,
                                                      float *__restrict__ d_out, long long smem_keys, int *err)
{
    extern __shared__ uint64_t keys[];
    typedef cub::BlockScan<long long, ROWS_T> Scan;
    __shared__ typename Scan::TempStorage scan_tmp;
    const int s = blockIdx.x * ROWS_T + threadIdx.x;
    int i = -1;
    if (s < n)
        i = (MODE == 0 || MODE == 3) ? c.order[s] : s;
    long long off = 0, len = 0;
    if (i >= 0) {
        off = offsets[i];
        len = offsets[i + 1] - off;
    }
    long long lo = 0, tot = 0;
    Scan(scan_tmp).ExclusiveSum(len, lo, tot);
    const bool in_smem = tot <= smem_keys;

    if (MODE == 2) {
        if (in_smem) {
            /* rows i0.. are contiguous in the CSR: lo == offsets[i] - base */
            const int64_t base = offsets[blockIdx.x * ROWS_T];
            for (long long q = threadIdx.x; q < tot; q += ROWS_T)
                keys[q] = mdnl_row_key(j_out[base + q], d_out[base + q]);
            __syncthreads();
            if (i >= 0)
                sort_row(smem_row{keys + lo}, len);
            __syncthreads();
            for (long long q = threadIdx.x; q < tot; q += ROWS_T) {
                const uint64_t key = keys[q];
                j_out[base + q] = (int32_t)(key >> 32);
                d_out[base + q] = __uint_as_float((unsigned)key);
            }
        } else if (i >= 0) {
            sort_row(global_row{j_out + off, d_out + off}, len);
        }
        return;
    }

    long long k = 0;
    auto emit = [&](uint64_t key) {
        if (k < len) {
            if (in_smem) {
                keys[lo + k] = key;
            } else {
                j_out[off + k] = (int32_t)(key >> 32);
                d_out[off + k] = __uint_as_float((unsigned)key);
            }
        }
        ++k;
    };
    if (i >= 0) {
        if (MODE == 0) {
            const int ii = i;
            mdnl_for_each_pair(g, c, s, [&](int j, float d2, int s0, int s1, int s2) {
                if (FULL || mdnl_half_keep(ii, j, s0, s1, s2))
                    emit(mdnl_row_key(j, __fsqrt_rn(d2)));
            });
        } else if (MODE == 3) {
            for (long long q = 0; q < len && q < cap; ++q)
                emit(stage[(size_t)q * n + s]);
        } else {
            for (int ch = 0; ch < nchunk; ++ch) {
                const uint64_t *part = stage + (size_t)ch * cap * n + i;
                const unsigned m = ccount[(size_t)ch * n + i];
                for (unsigned q = 0; q < m && q < (unsigned)cap; ++q)
                    emit(part[(size_t)q * n]);
            }
        }
        if (k != len)
            atomicOr(err, 1);
        if (in_smem)
            sort_row(smem_row{keys + lo}, len);
        else
            sort_row(global_row{j_out + off, d_out + off}, len);
    }
    if (!in_smem) /* uniform over the block */
        return;
    __syncwarp();
    const int lane = threadIdx.x & 31;
    for (int r = 0; r < 32; ++r) {
        const long long rlo = __shfl_sync(0xffffffffu, lo, r);
        const long long rlen = __shfl_sync(0xffffffffu, len, r);
        const long long roff = __shfl_sync(0xffffffffu, off, r);
        for (long long q = lane; q < rlen; q += 32) {
            const uint64_t key = keys[rlo + q];
            j_out[roff + q] = (int32_t)(key >> 32);
            d_out[roff + q] = __uint_as_float((unsigned)key);
        }
    }
}


struct warp_ranges {
    int nr;      /* ranges (uniform) */
    int total;   /* candidates (uniform) */
    int kb;      /* lane r: first slot of range r */
    int fs, fe;  /* lane r: flat [fs, fe) */
    float vx, vy, vz;
    int zero;    /* lane r: shift is 0 */
    int lexpos;  /* lane r: shift lexicographically positive */
    int code;    /* lane r: shift_code of S (shifts in -1..1) */
};

/* Lane t < ncol * nzs takes stencil column t / nzs (dx outer, dy inner, as
 * mdnl_for_each_pair) and z segment t % nzs, so all the cell-offset loads of
 * one atom are in flight together (one load latency, not one per range);
 * empty or skipped ranges have length 0. A warp scan flattens them. With
 * `divs` (mdnl_cell_divs_of(g)) the cell's coordinates and the lanes' columns
 * come from multiplies (dense-walk: a warp a cell, so these divisions are a
 * cell's cost, not an atom's), else from divisions. */
__device__ __forceinline__ warp_ranges warp_list_ranges(const mdnl_geom &g, const mdnl_cells_view &c, int lin,
                                                        int lane, const mdnl_cell_divs *divs = nullptr)
{
    warp_ranges w;
    const int n0 = g.ncell[0], n1 = g.ncell[1], n2 = g.ncell[2];
    const int lz = divs ? mdnl_fastdiv_q(divs->n2, lin) : lin / n2; /* the cell's column, cx n1 + cy */
    const int cz = lin - lz * n2;
    const int cx = divs ? mdnl_fastdiv_q(divs->n1, lz) : lz / n1;
    const int cy = lz - cx * n1;
    /* z segments (uniform): cz-st..cz+st split where the periodic shift changes */
    int zlo = cz - g.stencil[2], zhi = cz + g.stencil[2];
    if (!g.pbc[2]) {
        zlo = zlo < 0 ? 0 : zlo;
        zhi = zhi > n2 - 1 ? n2 - 1 : zhi;
    }
    const int s2lo = g.pbc[2] ? mdnl_floordiv(zlo, n2) : 0;
    const int s2hi = g.pbc[2] ? mdnl_floordiv(zhi, n2) : 0;
    const int nzs = s2hi - s2lo + 1;
    const int w1 = 2 * g.stencil[1] + 1;
    const int ncol = (2 * g.stencil[0] + 1) * w1;
    w.nr = ncol * nzs;
    int len = 0, kb = 0;
    int s0 = 0, s1 = 0, s2 = 0;
    if (lane < w.nr) {
        /* nzs is 1 or 2 where every periodic axis has 2 stencil + 1 cells (dense-walk): a shift */
        const int col = nzs <= 2 ? lane >> (nzs - 1) : lane / nzs, seg = lane - col * nzs;
        const int cq = divs ? mdnl_fastdiv_q(divs->w1, col) : col / w1;
        int x = cx + cq - g.stencil[0];
        int y = cy + (col - cq * w1) - g.stencil[1];
        const bool okx = mdnl_cell_wrap(g.pbc[0], n0, x, s0);
        const bool ok = mdnl_cell_wrap(g.pbc[1], n1, y, s1) && okx;
        s2 = s2lo + seg;
        int z = seg == 0 ? zlo : s2 * n2;
        int zend = (s2 + 1) * n2 - 1;
        if (!g.pbc[2])
            zend = zhi;
        if (zend > zhi)
            zend = zhi;
        if (ok) {
            const int row = (x * n1 + y) * n2;
            kb = c.start[row + z - s2 * n2];
            len = c.start[row + zend - s2 * n2 + 1] - kb;
        }
    }
    const int incl = mdnl_warp_inclusive_sum(len, lane);
    w.total = __shfl_sync(FULLMASK, incl, 31);
    w.kb = kb;
    w.fs = lane < w.nr ? incl - len : 0x7fffffff;
    w.fe = lane < w.nr ? incl : 0x7fffffff;
    float v[3];
    mdnl_shift_vector(&g, s0, s1, s2, v);
    w.vx = v[0];
    w.vy = v[1];
    w.vz = v[2];
    w.zero = s0 == 0 && s1 == 0 && s2 == 0;
    w.lexpos = mdnl_shift_positive(s0, s1, s2);
    w.code = shift_code(s0, s1, s2);
    return w;
}

/* Calls f(hit, j, d2) once per lane per step of 32 flat candidates, with the
 * whole warp converged (hit false for lanes without a kept pair). */

/* ------------------------------------------------------------------------ */
/* The context. */

/* ctx->flags, zero at the start of every build (a memset, unless the build
 * before left them zero) and read back at its end (copied, or written to the
 * mapped read-back by its last kernel: nl_flags_publish): [0] a
 * fill disagreed with its count, [1] the longest row, [2] the fullest cell,
 * [3] dense-tiles' oversized regions, [4..5] sparse-stage's and dense-walk's
 * pair count (int64), [6] their CSR outgrew the output arrays, [7]
 * unused, [8..9] how far the input order follows space (nl_bin_unstable's
 * sample: atoms in the cell of the atom before them, atoms compared),
 * [10..13] dense-walk's own, two pairs used in turn (build parity p): [10 +
 * 2p] the longest row, [11 + 2p] how many rows are longer than the slab's;
 * a build zeroes the other pair, which the next dense-walk build uses, and
 * so needs no memset (nl_build_dense_walk). */
#define FLAG_INTS 14
#define FLAG_NPAIRS 4
#define FLAG_OUTGROWN 6
#define FLAG_INORDER 8
#define FLAG_WALK 10

/* A build's flags at its end, written by one thread of its last kernel
 * once the CSR's size is known (sparse-stage: the last row's, after the
 * look-back; dense-walk: the rows kernel's first): the pair count and
 * whether the CSR outgrew its arrays. With `host` (the device's address of
 * the mapped read-back, h_small + 4), straight there with the binning's
 * fullest cell and order sample (an earlier kernel's, complete), which are
 * then zeroed on the device: the caller's one synchronisation needs no copy
 * after the kernels (on the H100 the copy waited ~4-5 us for the last
 * kernel's end, then took ~2), and the device's flags are left zero, so the
 * next build needs no memset; a row's fill that disagreed with its count is
 * stored there by its own thread. Without it, to `flags`, which the caller
 * copies back. */
__device__ __forceinline__ void nl_flags_publish(int *flags, int *host, long long npairs, bool outgrown)
{
    if (!host) {
        *(long long *)(flags + FLAG_NPAIRS) = npairs;
        if (outgrown)
            flags[FLAG_OUTGROWN] = 1;
        return;
    }
    *(long long *)(host + FLAG_NPAIRS) = npairs;
    host[FLAG_OUTGROWN] = outgrown;
    volatile int *f = flags;
    host[2] = f[2];
    host[FLAG_INORDER] = f[FLAG_INORDER];
    host[FLAG_INORDER + 1] = f[FLAG_INORDER + 1];
    f[2] = 0;
    f[FLAG_INORDER] = 0;
    f[FLAG_INORDER + 1] = 0;
}

/* Whether dense-walk's slab rows carry d2 (packed: 8-byte entries, j << 6 |
 * the hit's slot and d2) rather than 4-byte keys (j << 5 | shift code) from
 * which the rows kernel computes d, gathering positions by original index:
 * where fewer than 1 in 16 of the atoms the binning sampled share the cell
 * of the atom before them (same of compared, flags[8..9]), a warp's 32 rows
 * are far apart in space and those gathers miss L1 (H200: the liquid in id
 * order, 23% of atoms in the cell of the one before, gathers; shuffled, 0%,
 * packs). The host decides by it on the flags read back after a build, for
 * the next build (ctx->walk_pack), and builds again where a frame's own
 * sample disagrees with the layout it was built in. */
__host__ __device__ __forceinline__ bool nl_walk_may_pack(long long n)
{
    return n < (1LL << 26); /* j << 6 | slot in 32 bits */
}
/* Whether the binning's sample found the input order following space: 1 in
 * 16 sampled atoms or more in the cell of the atom before them (`same` of
 * `compared`). Dense-walk gathers where it does; sparse-stage walks inside
 * its rows kernel. */
__host__ __device__ __forceinline__ bool nl_order_follows_space(long long same, long long compared)
{
    return 16 * same >= compared;
}
__host__ __device__ __forceinline__ bool nl_walk_packed(long long n, long long same, long long compared)
{
    return nl_walk_may_pack(n) && !nl_order_follows_space(same, compared);
}

struct mdnl_cuda_ctx {
    cudaStream_t stream;
    cudaStream_t side; /* dense-walk's long rows, beside its rows kernel (fork and join: the two events) */
    cudaEvent_t fork, join;
    mdnl_dbuf pos, counts, offsets, j, d, stage, ccount, images, flags, temp;
    mdnl_dbuf slab; /* dense-walk's rows, zeroed when allocated */
    mdnl_cells_cuda cells;
    int64_t *h_small; /* pinned read-back: [0] npairs, [1] max row / error flags */
    int timing;
    cudaEvent_t ev[MDNL_CUDA_NSTAGES][2], ev_total[2];
    int used[MDNL_CUDA_NSTAGES];
    double stage_ms[MDNL_CUDA_NSTAGES];
    double stage_bytes[MDNL_CUDA_NSTAGES]; /* the last build's least bytes a stage (nl_stage_floor_bytes) */
    double total_ms;
    int stage_cap;
    int64_t retries;
    int walk_rows; /* the last build's dense-walk rows: -1 none, 0 gathered, 1 packed */
    int walk_pack; /* the layout dense-walk builds with: the last frame's sample (nl_walk_packed) */
    int sparse_fused; /* sparse-stage walks inside its rows kernel (the last frame's sample followed space) */
    int sparse_last;  /* the last build's sparse-stage: 1 fused, 0 walk and rows, -1 none */
    int smem_budget; /* bytes; -1: default */
    int cell_path;    /* mdnl_cell_path; AUTO: by density */
    int deferred;     /* 1 (sparse-stage): npairs and whether the output was large enough await the caller's one sync;
                         2 (dense-walk): npairs and whether the output was large enough */
    int smem_optin;  /* the device's opt-in maximum per block */
    int tile_cap;    /* dense-tiles: most candidates a tile may sort; 0: TILE_MAX_REGION */
    int tile_force[4]; /* dense-tiles: tile shape and lanes per atom forced (tests); 0: by density */
    mdnl_dbuf tcount, tstart, tslot, tpos, torder, ttemp, tover; /* the unstable binning */
    mdnl_dbuf tlong; /* dense-walk's long rows' list */
    int tcount_dirty; /* tcount not all zero (a build stopped between its bin and its scan) */
    int *d_host_flags; /* the device's address of the read-back's flags (h_small + 4, mapped); null: copied */
    int flags_on_host;   /* this build's kernels write its flags to the read-back (nl_flags_publish) */
    int flags_zero;      /* the device's flags were left zero by the last build (nl_flags_publish; dense-walk:
                            all but its own pair of this parity) */
    int walk_parity;     /* which pair of flags[FLAG_WALK..] dense-walk's next build uses */
    mdnl_cells_view view; /* the cell list the paths walk: cells.view or the unstable one */
};


/* ---- host helpers (nlist_cuda.cu) ---- */

/* Records stage s's start (end = 0) or end event when timing is on. */
mdnl_status nl_stage_mark(mdnl_cuda_ctx *c, int s, int end);

#define STAGE(s, end)                                                                                                  \
    do {                                                                                                               \
        mdnl_status stage_st_ = nl_stage_mark(ctx, (s), (end));                                                        \
        if (stage_st_ != MDNL_OK)                                                                                      \
            return stage_st_;                                                                                          \
    } while (0)

/* The tile states of a one-pass scan of 64-bit row lengths (CUB's decoupled
 * look-back): nl_scan_counts', sparse-stage's rows kernel's. */
using nl_row_tiles = cub::ScanTileState<long long>;

/* Scans counts[0..n] (counts[n] == 0) into offsets on the stream, without
 * waiting, in one pass (CUB's block scan with the decoupled look-back); the
 * tile states `tiles` (nl_row_tiles_reserve, nl_row_scan_tiles(n) of them)
 * already set by the binning, or, without them, set by a launch here. With
 * `rank` (the binning's view.rank), the counts are by cell slot and row i's
 * is counts[rank[i]] (dense-walk's packed layout: the walk writes them
 * coalesced). */
mdnl_status nl_scan_counts(mdnl_cuda_ctx *ctx, int n, const nl_row_tiles *tiles = nullptr,
                           const int *rank = nullptr);
int nl_row_scan_tiles(int n);
/* ntiles row scan tile states in ctx->temp (not yet set): nl_scan_counts'
 * (nl_row_scan_tiles(n) of them) or sparse-stage's rows kernel's. */
mdnl_status nl_row_tiles_reserve(mdnl_cuda_ctx *ctx, int ntiles, nl_row_tiles *tiles);

/* nl_scan_counts, then reads back the pair count (a synchronisation) and
 * sizes the output arrays; optionally the longest row (flags[1]) and the
 * fullest cell (flags[2]) in the same synchronisation. */
mdnl_status nl_scan_and_size(mdnl_cuda_ctx *ctx, int n, int64_t *npairs, int *maxlen = nullptr,
                             int *maxregion = nullptr);

/* Shared-memory keys per block for the rows kernel, from the average row. */
long long nl_rows_smem_keys(const mdnl_cuda_ctx *ctx, int n, int64_t npairs);

/* The cell list of ctx->view by an atomic counting sort (unstable within a
 * cell; every path sorts its rows). The fullest cell's population goes to
 * flags[2]. With `rank`, view.rank (each atom's slot) too. With row_tiles,
 * the bin kernel also sets their first nrow_tiles states (nl_scan_counts
 * then needs no launch to set them). */
mdnl_status nl_bin_unstable(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool rank = false,
                            const nl_row_tiles *row_tiles = nullptr, int nrow_tiles = 0);

/* Candidates per atom of the cell list (the density the default goes by). */
double nl_cell_candidates(const mdnl_geom *g);

template <int MODE, bool FULL>
static mdnl_status launch_rows(mdnl_cuda_ctx *ctx, const mdnl_geom *g, int n, int64_t npairs, int cap, int nchunk)
{
    const long long keys = nl_rows_smem_keys(ctx, n, npairs);
    const size_t smem = (size_t)keys * sizeof(uint64_t);
    MDNL_CUDA_CHECK(cudaFuncSetAttribute(rows_kernel<MODE, FULL>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)smem));
    rows_kernel<MODE, FULL><<<(n + ROWS_T - 1) / ROWS_T, ROWS_T, smem, ctx->stream>>>(
        *g, ctx->view, n, (const uint64_t *)ctx->stage.ptr, cap, (const unsigned *)ctx->ccount.ptr, nchunk,
        (const int64_t *)ctx->offsets.ptr,
        (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr, keys, (int *)ctx->flags.ptr);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    return MDNL_OK;
}

/* ---- the paths (one file each family); `full`: a full list, else half ---- */

/* nlist_brute.cu */
mdnl_status nl_build_brute_atomic(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                  int64_t *npairs);
mdnl_status nl_build_brute_noatomic(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                    int64_t *npairs);
/* nlist_cell_sparse.cu */
mdnl_status nl_build_sparse_stage(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                  int64_t *npairs);
mdnl_status nl_build_sparse_rows(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                 int64_t *npairs);
/* nlist_cell_dense_walk.cu */
bool nl_dense_walk_fits(const mdnl_geom *g);
double nl_dense_walk_row_estimate(const mdnl_geom *g);
/* dense-walk's kernel attributes (their shared-memory carveouts), set once a context. */
mdnl_status nl_dense_walk_init(void);
mdnl_status nl_build_dense_walk(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                int64_t *npairs);
/* nlist_cell_dense_tiles.cu: tiles where they fit, else dense rows */
mdnl_status nl_build_dense_tiles(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                 int64_t *npairs);
mdnl_status nl_build_dense_rows(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                int64_t *npairs);

#endif

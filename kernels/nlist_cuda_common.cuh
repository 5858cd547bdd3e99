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
 * Here: programmatic dependent launch, the row sort helpers, the build's
 * flags, each path's state, the context, the path object (nl_path) and the
 * host helpers (stage timing, scan, binning) defined in nlist_cuda.cu.
 * Files: one a path, each defining its nl_path: nlist_brute.cu
 * (brute-atomic, brute-noatomic), nlist_cell_sparse.cu (sparse-stage),
 * nlist_cell_dense_walk.cu (dense-walk); nlist_cuda.cu (context, the choice
 * of path, entry points).
 */
#ifndef MDNL_NLIST_CUDA_COMMON_CUH
#define MDNL_NLIST_CUDA_COMMON_CUH

#include "cells_cuda.cuh"
#include "cuda_check.cuh"
#include "cuda_host.h"
#include "nlist_cuda.h"
#include "nlist_cuda_hooks.h"

#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utility>

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
/* The build's flags: ctx->flags on the device, zero at the start of every
 * build (a memset, unless the build before left them zero) and read back at
 * its end, copied or written to the mapped read-back by the build's last
 * kernel (nl_flags_publish). */
struct nl_flags {
    int mismatch;     /* a row's fill disagreed with its count (a bug, never silently truncated) */
    int longest_row;  /* brute-noatomic's staged pass: the longest row */
    int fullest_cell; /* the binning's fullest cell */
    int unused0;
    long long npairs; /* sparse-stage's and dense-walk's pair count */
    int outgrown;     /* their CSR outgrew the output arrays */
    int unused1;
    int inorder[2];   /* how far the input order follows space (nl_bin_unstable's sample): atoms in the
                       * cell of the atom before them, atoms compared */
    int walk[2][2];   /* dense-walk's own, used in turn by build parity p: [p][0] the longest row, [p][1]
                       * how many rows are longer than the slab's; a build zeroes the other parity's,
                       * which the next dense-walk build uses, and so needs no memset */
};

/* Kernels take the flags as ints (the device's or the mapped read-back's):
 * NL_FLAG(field) is a field's index among them. */
#define NL_FLAG(field) ((int)(offsetof(nl_flags, field) / sizeof(int)))
static inline int *nl_flag_ints(nl_flags *f) { return reinterpret_cast<int *>(f); }

/* A build's flags at its end, written by one thread of its last kernel
 * once the CSR's size is known (sparse-stage: the last row's, after the
 * look-back; dense-walk: the rows kernel's first): the pair count and
 * whether the CSR outgrew its arrays. With `host` (the device's address of
 * the mapped read-back's flags), straight there with the binning's fullest
 * cell and order sample (an earlier kernel's, complete), which are then
 * zeroed on the device: the caller's one synchronisation needs no copy
 * after the kernels (a copy would wait for the last kernel's end), and the
 * device's flags are left zero, so the next build needs no memset; a row's
 * fill that disagreed with its count is stored there by its own thread.
 * Without it, to `flags`, which the caller copies back. */
__device__ __forceinline__ void nl_flags_publish(int *flags, int *host, long long npairs, bool outgrown)
{
    if (!host) {
        *(long long *)(flags + NL_FLAG(npairs)) = npairs;
        if (outgrown)
            flags[NL_FLAG(outgrown)] = 1;
        return;
    }
    *(long long *)(host + NL_FLAG(npairs)) = npairs;
    host[NL_FLAG(outgrown)] = outgrown;
    volatile int *f = flags;
    host[NL_FLAG(fullest_cell)] = f[NL_FLAG(fullest_cell)];
    host[NL_FLAG(inorder)] = f[NL_FLAG(inorder)];
    host[NL_FLAG(inorder) + 1] = f[NL_FLAG(inorder) + 1];
    f[NL_FLAG(fullest_cell)] = 0;
    f[NL_FLAG(inorder)] = 0;
    f[NL_FLAG(inorder) + 1] = 0;
}

/* Whether the binning's sample found the input order following space: 1 in
 * 16 sampled atoms or more in the cell of the atom before them (`same` of
 * `compared`). Dense-walk then gathers positions in its rows kernel;
 * sparse-stage walks inside its rows kernel. */
static inline bool nl_order_follows_space(long long same, long long compared)
{
    return 16 * same >= compared;
}

/* The pinned host read-back of a context (mapped where the device maps host
 * memory: ctx->d_host_flags is then the device's address of `flags`). */
struct nl_readback {
    long long npairs; /* nl_scan_and_size: the pair count */
    int longest_row;  /* brute-noatomic's staged pass */
    int unused;
    nl_flags flags;   /* the build's flags */
};

/* ------------------------------------------------------------------------ */
/* The paths' own state, one struct each, in the context. */

/* brute-atomic, brute-noatomic (nlist_brute.cu). */
struct nl_brute_state {
    mdnl_dbuf images; /* the image shift vectors */
    mdnl_dbuf stage;  /* brute-noatomic's transposed rows, stage_cap a chunk */
    mdnl_dbuf ccount; /* brute-noatomic's row lengths a chunk */
};

/* sparse-stage (nlist_cell_sparse.cu). */
struct nl_sparse_state {
    mdnl_dbuf stage; /* the walk's staged rows, K entries a slot */
    int fused;       /* the next build walks inside its rows kernel (the last frame's order followed space) */
    int last;        /* the last build's kernels: 1 fused, 0 walk and rows */
};

/* dense-walk (nlist_cell_dense_walk.cu). */
struct nl_walk_state {
    cudaStream_t side;       /* the long rows, beside the rows kernel (fork and join: the two events) */
    cudaEvent_t fork, join;
    mdnl_dbuf slab;          /* the walk's rows, zeroed when allocated */
    mdnl_dbuf longlist;      /* the long rows' list (packed layout; gathered: the binning's slot array) */
    int pack;                /* the layout the next build takes: the last frame's sample (nl_walk_packed) */
    int rows;                /* the layout the last build took: 0 gathered, 1 packed */
    int parity;              /* which pair of nl_flags.walk the next build uses */
};

/* ------------------------------------------------------------------------ */
/* The context. */

struct nl_path;

struct mdnl_cuda_ctx {
    cudaStream_t stream;
    int sm_count;   /* the device's multiprocessors (grid-stride launches) */
    int smem_optin; /* the device's opt-in maximum of shared memory a block */
    mdnl_dbuf pos, counts, offsets, j, d, temp;
    mdnl_dbuf flags;           /* nl_flags */
    nl_readback *h_rb;         /* pinned read-back */
    nl_flags *d_host_flags;    /* the device's address of h_rb->flags (mapped); null: copied back */
    int flags_on_host;         /* this build's kernels write its flags to the read-back (nl_flags_publish) */
    int flags_zero;            /* the device's flags were left zero by the last build (nl_flags_publish;
                                  dense-walk: all but its own pair of this parity) */
    int timing;
    cudaEvent_t ev[MDNL_CUDA_NSTAGES][2], ev_total[2];
    int used[MDNL_CUDA_NSTAGES];
    double stage_ms[MDNL_CUDA_NSTAGES];
    double stage_bytes[MDNL_CUDA_NSTAGES]; /* the last build's least bytes a stage (nl_path.floor_bytes) */
    double total_ms;
    int stage_cap;   /* output (and brute-noatomic's stage) pairs an atom before a retry */
    int64_t retries;
    int smem_budget; /* the brute rows kernel's shared memory, bytes; -1: default */
    int cell_path;   /* mdnl_cell_path forced; AUTO: by density */
    const nl_path *last; /* the path the last build took; null before the first */
    mdnl_nlist_dev built; /* the last successful build's list (mdnl_nlist_cuda_last) */
    int has_built;        /* `built` is valid: set by a build's success, cleared at its start */
    /* the unstable binning (nl_bin_unstable) and the cell list it gives */
    mdnl_dbuf tcount, tstart, tslot, tpos, torder, ttemp;
    int tcount_dirty; /* tcount not all zero (a build stopped between its bin and its scan) */
    mdnl_cells_view view;
    nl_brute_state brute;
    nl_sparse_state sparse;
    nl_walk_state walk;
};

/* ------------------------------------------------------------------------ */
/* One neighbor-list path: all that the dispatch (nlist_cuda.cu) knows of it.
 * `full`: a full list, else half. */
struct nl_path {
    const char *name;
    /* Whether it can build on g at all (else the caller takes sparse-stage, which builds on any). */
    bool (*fits)(const mdnl_geom *g);
    /* Whether its build writes every row count, counts[n] included, so that they need no clearing first. */
    bool writes_counts;
    /* Enqueues the build on ctx->stream; *npairs is the pair count, or 0 where `finish` reads it back. */
    mdnl_status (*build)(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                         int64_t *npairs);
    /* After the build's one synchronisation, with its flags read back (h): sets *npairs where the build
     * left it to the read-back, and *again where the build must run again (a larger output, another
     * layout). Null: nothing to do. */
    mdnl_status (*finish)(mdnl_cuda_ctx *ctx, const nl_flags *h, int n, int64_t *npairs, bool *again);
    /* The least bytes of each stage of the last build (mdnl_cuda_ctx_stage_bytes); null: not modelled. */
    void (*floor_bytes)(const mdnl_cuda_ctx *ctx, const mdnl_geom *g, int n, int64_t npairs,
                        double bytes[MDNL_CUDA_NSTAGES]);
    /* Its state's set-up when a context is created, and its release; null: none. */
    mdnl_status (*init)(mdnl_cuda_ctx *ctx);
    void (*release)(mdnl_cuda_ctx *ctx);
};

extern const nl_path nl_path_brute_atomic;   /* nlist_brute.cu */
extern const nl_path nl_path_brute_noatomic; /* nlist_brute.cu */
extern const nl_path nl_path_sparse_stage;   /* nlist_cell_sparse.cu */
extern const nl_path nl_path_dense_walk;     /* nlist_cell_dense_walk.cu */

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
 * sizes the output arrays. */
mdnl_status nl_scan_and_size(mdnl_cuda_ctx *ctx, int n, int64_t *npairs);

/* The cell list of ctx->view by an atomic counting sort (unstable within a
 * cell; every path sorts its rows). The fullest cell's population goes to
 * nl_flags.fullest_cell. With `rank`, view.rank (each atom's slot) too. With
 * row_tiles, the bin kernel also sets their first nrow_tiles states
 * (nl_scan_counts then needs no launch to set them). */
mdnl_status nl_bin_unstable(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool rank = false,
                            const nl_row_tiles *row_tiles = nullptr, int nrow_tiles = 0);

/* Candidates per atom of the cell list (the density the default goes by). */
double nl_cell_candidates(const mdnl_geom *g);

/* The context's flags on the device. */
static inline nl_flags *nl_dev_flags(const mdnl_cuda_ctx *ctx) { return (nl_flags *)ctx->flags.ptr; }

#endif

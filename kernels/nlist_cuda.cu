/* nlist_cuda.cu — the CUDA neighbor-list context, the choice of path and
 * the entry points of nlist_cuda.h; the paths themselves are in
 * nlist_brute.cu, nlist_cell_sparse.cu, nlist_cell_dense_walk.cu and
 * nlist_cell_dense_tiles.cu (shared pieces: nlist_cuda_common.cuh). */
#include "nlist_cuda_common.cuh"
#include "device.h"

#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cuda/std/functional>

extern "C" mdnl_status mdnl_cuda_ctx_create(mdnl_cuda_ctx **out)
{
    *out = NULL;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        (void)cudaGetLastError();
        return mdnl_error(MDNL_ERR_RESOURCE, "CUDA: no usable device");
    }
    mdnl_cuda_ctx *c = (mdnl_cuda_ctx *)calloc(1, sizeof *c);
    if (!c)
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for a CUDA context");
    c->stage_cap = 32;
    c->smem_budget = -1;
    c->cell_path = MDNL_CELL_PATH_AUTO;
    c->walk_rows = -1;
    c->sparse_last = -1;
    mdnl_status st = MDNL_OK;
    cudaError_t e;
    void *dev = nullptr; /* the read-back's device address */
#define CTX_TRY(call)                                                                                                  \
    if ((e = (call)) != cudaSuccess) {                                                                                 \
        st = mdnl_cuda_fail(e, #call, __FILE__, __LINE__);                                                             \
        goto fail;                                                                                                     \
    }
    CTX_TRY(cudaSetDevice(mdnl_cuda_device_index()));
    CTX_TRY(cudaDeviceGetAttribute(&c->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, mdnl_cuda_device_index()));
    CTX_TRY(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    CTX_TRY(cudaStreamCreateWithFlags(&c->side, cudaStreamNonBlocking));
    CTX_TRY(cudaEventCreateWithFlags(&c->fork, cudaEventDisableTiming));
    CTX_TRY(cudaEventCreateWithFlags(&c->join, cudaEventDisableTiming));
    if ((st = nl_dense_walk_init()) != MDNL_OK)
        goto fail;
    /* [4..]: the FLAG_INTS flags; mapped, so that a build's last kernel writes them there itself (sparse-stage,
     * dense-walk: nl_flags_publish); where the device maps no host memory, plain pinned and copied back */
    static_assert(4 * sizeof(int64_t) + FLAG_INTS * sizeof(int) <= 12 * sizeof(int64_t), "the read-back holds the flags");
    if (cudaHostAlloc((void **)&c->h_small, 12 * sizeof(int64_t), cudaHostAllocMapped) == cudaSuccess &&
        cudaHostGetDevicePointer(&dev, c->h_small, 0) == cudaSuccess) {
        c->d_host_flags = (int *)((int64_t *)dev + 4);
    } else {
        (void)cudaGetLastError();
        if (c->h_small)
            cudaFreeHost(c->h_small);
        c->h_small = nullptr;
        CTX_TRY(cudaMallocHost((void **)&c->h_small, 12 * sizeof(int64_t)));
    }
    for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
        for (int b = 0; b < 2; ++b)
            CTX_TRY(cudaEventCreate(&c->ev[s][b]));
    CTX_TRY(cudaEventCreate(&c->ev_total[0]));
    CTX_TRY(cudaEventCreate(&c->ev_total[1]));
#undef CTX_TRY
    *out = c;
    return MDNL_OK;
fail:
    mdnl_cuda_ctx_free(c);
    return st;
}

extern "C" void mdnl_cuda_ctx_free(mdnl_cuda_ctx *c)
{
    if (!c)
        return;
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    mdnl_dbuf *bufs[] = {&c->pos,   &c->counts, &c->offsets, &c->j,    &c->d,
                         &c->stage, &c->ccount, &c->images,  &c->flags, &c->temp, &c->slab,
                         &c->tcount, &c->tstart, &c->tslot, &c->tpos, &c->torder, &c->ttemp, &c->tover,
                         &c->tlong};
    for (mdnl_dbuf *b : bufs)
        mdnl_dbuf_free(b);
    mdnl_cells_cuda_free(&c->cells);
    if (c->h_small)
        cudaFreeHost(c->h_small);
    for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
        for (int b = 0; b < 2; ++b)
            if (c->ev[s][b])
                cudaEventDestroy(c->ev[s][b]);
    for (int b = 0; b < 2; ++b)
        if (c->ev_total[b])
            cudaEventDestroy(c->ev_total[b]);
    if (c->fork)
        cudaEventDestroy(c->fork);
    if (c->join)
        cudaEventDestroy(c->join);
    if (c->side) {
        cudaStreamSynchronize(c->side);
        cudaStreamDestroy(c->side);
    }
    if (c->stream)
        cudaStreamDestroy(c->stream);
    free(c);
}

extern "C" void *mdnl_cuda_ctx_stream(mdnl_cuda_ctx *c) { return (void *)c->stream; }

extern "C" const char *mdnl_cuda_stage_name(int s)
{
    static const char *const names[MDNL_CUDA_NSTAGES] = {"bin/sort", "count", "scan", "fill", "row sort"};
    return s >= 0 && s < MDNL_CUDA_NSTAGES ? names[s] : "?";
}

extern "C" void mdnl_cuda_ctx_set_timing(mdnl_cuda_ctx *c, int mode) { c->timing = mode; }

extern "C" void mdnl_cuda_ctx_stage_ms(const mdnl_cuda_ctx *c, double ms[MDNL_CUDA_NSTAGES])
{
    for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
        ms[s] = c->stage_ms[s];
}

extern "C" void mdnl_cuda_ctx_stage_bytes(const mdnl_cuda_ctx *c, double bytes[MDNL_CUDA_NSTAGES])
{
    for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
        bytes[s] = c->stage_bytes[s];
}

extern "C" double mdnl_cuda_ctx_total_ms(const mdnl_cuda_ctx *c) { return c->total_ms; }

/* The least bytes of each stage of a build of n atoms, npairs pairs, on g's
 * grid (mdnl_cuda_ctx_stage_bytes), by the path that ran (ctx->walk_rows,
 * ctx->sparse_last). */
static void nl_stage_floor_bytes(mdnl_cuda_ctx *ctx, const mdnl_geom *g, int n, int64_t npairs)
{
    double *b = ctx->stage_bytes;
    for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
        b[s] = 0;
    const double na = (double)n, np = (double)npairs;
    const double starts = 4 * ((double)g->ncells + 1); /* the cells' starts */
    /* the binning: positions in (16 bytes an atom); the cell list's view out (mdnl_cells_view: positions in
     * cell order, order and rank, 24 bytes an atom, and the cells' starts) */
    const double bin = 16 * na + 24 * na + starts;
    const double csr = 8 * (na + 1) + 8 * np; /* offsets, j and d */
    if (ctx->walk_rows >= 0) { /* dense-walk */
        const double entry = ctx->walk_rows ? 8 : 4;
        b[MDNL_CUDA_STAGE_BIN] = bin;
        /* the walk: cell-ordered positions and starts in; a slab entry a pair and a count a row out */
        b[MDNL_CUDA_STAGE_COUNT] = 16 * na + starts + entry * np + 8 * na;
        /* counts in (packed: by cell slot, gathered by rank), offsets out */
        b[MDNL_CUDA_STAGE_SCAN] = 8 * (na + 1) + (ctx->walk_rows ? 4 * na : 0) + 8 * (na + 1);
        /* the rows: the slab and the offsets in (gathered: the positions too), the CSR out */
        b[MDNL_CUDA_STAGE_SORT] = entry * np + 8 * (na + 1) + (ctx->walk_rows ? 0 : 16 * na) + 8 * np;
    } else if (ctx->sparse_last >= 0) { /* sparse-stage */
        b[MDNL_CUDA_STAGE_BIN] = bin;
        if (ctx->sparse_last) /* the rows kernel walks: cell-ordered positions, starts and ranks in, the CSR out */
            b[MDNL_CUDA_STAGE_FILL] = 16 * na + starts + 4 * na + csr;
        else {
            /* the walk: positions and starts in, an 8-byte (j, d2) entry a pair and a count a row out */
            b[MDNL_CUDA_STAGE_COUNT] = 16 * na + starts + 8 * np + 8 * na;
            /* the rows: the staged entries, counts and ranks in, the CSR out */
            b[MDNL_CUDA_STAGE_FILL] = 8 * np + 8 * na + 4 * na + csr;
        }
    }
}

extern "C" void mdnl_cuda_ctx_set_stage_capacity(mdnl_cuda_ctx *c, int k) { c->stage_cap = k < 1 ? 1 : k; }
extern "C" int64_t mdnl_cuda_ctx_retries(const mdnl_cuda_ctx *c) { return c->retries; }
extern "C" int mdnl_cuda_ctx_walk_rows(const mdnl_cuda_ctx *c) { return c->walk_rows; }
extern "C" int mdnl_cuda_ctx_sparse_fused(const mdnl_cuda_ctx *c) { return c->sparse_last; }
extern "C" void mdnl_cuda_ctx_set_smem_budget(mdnl_cuda_ctx *c, int bytes) { c->smem_budget = bytes; }
extern "C" void mdnl_cuda_ctx_set_cell_path(mdnl_cuda_ctx *c, int path)
{
    c->cell_path = path > MDNL_CELL_PATH_AUTO && path < MDNL_CELL_NPATHS ? path : MDNL_CELL_PATH_AUTO;
}

extern "C" const char *mdnl_cell_path_name(int path)
{
    static const char *const names[MDNL_CELL_NPATHS] = {"auto", "sparse-stage", "sparse-rows", "dense-walk",
                                                        "dense-tiles", "dense-rows"};
    return path >= 0 && path < MDNL_CELL_NPATHS ? names[path] : "?";
}

extern "C" void mdnl_cuda_ctx_set_tile_shape(mdnl_cuda_ctx *c, int t0, int t1, int t2, int lanes)
{
    c->tile_force[0] = t0 > 0 ? t0 : 0;
    c->tile_force[1] = t1 > 0 ? t1 : 0;
    c->tile_force[2] = t2 > 0 ? t2 : 0;
    c->tile_force[3] = lanes > 0 ? lanes : 0;
}
extern "C" void mdnl_cuda_ctx_set_tile_capacity(mdnl_cuda_ctx *c, int candidates)
{
    c->tile_cap = candidates > 0 ? candidates : 0;
}

extern "C" mdnl_method mdnl_nlist_cuda_auto(const mdnl_geom *g)
{
    /* Below a few hundred atoms one brute-force launch beats the cell
     * list's five (measured: tools/bench/RESULTS.md). */
    return g->natoms <= 256 ? MDNL_METHOD_BRUTE_NOATOMIC : MDNL_METHOD_CELL;
}

mdnl_status nl_stage_mark(mdnl_cuda_ctx *c, int s, int end)
{
    if (c->timing != MDNL_CUDA_TIMING_STAGES)
        return MDNL_OK;
    MDNL_CUDA_CHECK(cudaEventRecord(c->ev[s][end], c->stream));
    c->used[s] = 1;
    return MDNL_OK;
}

/* nl_scan_counts, then reads back the pair count (a synchronisation) and sizes
 * the output arrays. */
mdnl_status nl_scan_and_size(mdnl_cuda_ctx *ctx, int n, int64_t *npairs, int *maxlen, int *maxregion)
{
    int64_t *offsets = (int64_t *)ctx->offsets.ptr;
    mdnl_status st = nl_scan_counts(ctx, n);
    if (st != MDNL_OK)
        return st;
    MDNL_CUDA_CHECK(cudaMemcpyAsync(ctx->h_small, offsets + n, sizeof(int64_t), cudaMemcpyDeviceToHost, ctx->stream));
    if (maxlen) /* the longest row, from the count pass, in the same synchronisation */
        MDNL_CUDA_CHECK(cudaMemcpyAsync(ctx->h_small + 3, (int *)ctx->flags.ptr + 1, sizeof(int),
                                        cudaMemcpyDeviceToHost, ctx->stream));
    if (maxregion) /* the fullest cell (dense-tiles) */
        MDNL_CUDA_CHECK(cudaMemcpyAsync(ctx->h_small + 4, (int *)ctx->flags.ptr + 2, sizeof(int),
                                        cudaMemcpyDeviceToHost, ctx->stream));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
    *npairs = ctx->h_small[0];
    if (maxlen)
        memcpy(maxlen, ctx->h_small + 3, sizeof *maxlen);
    if (maxregion)
        memcpy(maxregion, ctx->h_small + 4, sizeof *maxregion);
    const size_t np = (size_t)(*npairs > 0 ? *npairs : 1);
    if ((st = mdnl_dbuf_reserve(&ctx->j, np * sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->d, np * sizeof(float), "neighbor distances")) != MDNL_OK)
        return st;
    return MDNL_OK;
}

/* Shared-memory keys per block for the rows kernel, from the average row. */
long long nl_rows_smem_keys(const mdnl_cuda_ctx *ctx, int n, int64_t npairs)
{
    long long budget = ctx->smem_budget >= 0 ? ctx->smem_budget : 96 * 1024;
    if (budget > ctx->smem_optin - 1024)
        budget = ctx->smem_optin - 1024;
    const double avg = n > 0 ? (double)npairs / n : 0;
    long long want = (long long)(avg * ROWS_T * 1.25) + 256;
    long long keys = budget / 8;
    return want < keys ? want : keys;
}

/* The cell-count scan's tile states (scan_tiles_kernel). */
using bin_tiles = cub::ScanTileState<int>;

/* Thread per original atom i: its cell's population (atomic slot); the
 * fullest cell's population into *maxcell (one atomic per warp at most).
 * How far the input order follows space, sampled by the first warp of every
 * 16th block: the atoms in the same cell as the atom before them added to
 * inorder[0], the atoms compared to inorder[1]. */
static __global__ void fast_bin_kernel(const __grid_constant__ mdnl_geom g, const float4 *__restrict__ pos, int n,
                                int *__restrict__ count, int *__restrict__ slot, int *__restrict__ maxcell,
                                int *__restrict__ inorder, bin_tiles tiles, int ntiles, nl_row_tiles rtiles,
                                int nrtiles)
{
    nl_grid_wait();
    /* the scans' tile states (the cells', and the rows' where asked), set
     * here rather than by launches of their own (the grid has ntiles + 32
     * and nrtiles + 32 threads or more) */
    tiles.InitializeStatus(ntiles);
    if (nrtiles > 0)
        rtiles.InitializeStatus(nrtiles);
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int lane = threadIdx.x & 31;
    int k = 0, cell = -1;
    if (i < n) {
        const float4 p = pos[i];
        cell = (int)mdnl_cell_linear(g, p.x, p.y, p.z);
    }
    /* one atomic per cell a warp: in an input ordered in space many lanes
     * share a cell, and same-address atomics serialise */
    const unsigned peers = __match_any_sync(FULLMASK, cell);
    const int leader = __ffs(peers) - 1;
    int base = 0;
    if (lane == leader && cell >= 0)
        base = atomicAdd(&count[cell], __popc(peers));
    base = __shfl_sync(FULLMASK, base, leader);
    if (i < n) {
        k = base + __popc(peers & ((1u << lane) - 1u));
        slot[i] = k;
    }
    /* the fullest cell: a block's maximum in shared memory, one global
     * atomic a block (a warp's read of the global maximum would be one more
     * round trip after its slot's) */
    __shared__ int block_max;
    if (threadIdx.x == 0)
        block_max = 0;
    __syncthreads();
    const int m = (int)__reduce_max_sync(FULLMASK, (unsigned)(k + 1));
    if (lane == 0)
        atomicMax_block(&block_max, m);
    __syncthreads();
    if (threadIdx.x == 0 && block_max > *(volatile int *)maxcell)
        atomicMax(maxcell, block_max);
    if ((blockIdx.x & 15) == 0 && threadIdx.x < 32) { /* warp-uniform */
        const int prev = __shfl_up_sync(FULLMASK, cell, 1);
        const unsigned same = __ballot_sync(FULLMASK, lane > 0 && cell >= 0 && cell == prev);
        const unsigned cmp = __ballot_sync(FULLMASK, lane > 0 && cell >= 0);
        if (lane < 2 && cmp)
            atomicAdd(&inorder[lane], __popc(lane == 0 ? same : cmp));
    }
}

/* An exclusive sum out = scan of in[0..m) in one pass (a tile of SCAN_T x
 * SCAN_ITEMS values a block, CUB's block scan with the decoupled
 * look-back; the tile states set beforehand, by the binning's bin kernel
 * or scan_tiles_init_kernel). ZERO: each value read is set back to zero
 * (the cell counts: the next binning then needs no memset; they are zero
 * between builds, zeroed when allocated and ctx->tcount_dirty when a build
 * stopped between the bin and the scan). */
#define SCAN_T 256
#define SCAN_ITEMS 8
#define SCAN_TILE (SCAN_T * SCAN_ITEMS)
/* Tiles (blocks) of scan_tiles_kernel over m values. */
static int scan_tile_count(int m) { return (m + SCAN_TILE - 1) / SCAN_TILE; }
template <class T, bool ZERO>
static __global__ __launch_bounds__(SCAN_T) void scan_tiles_kernel(T *__restrict__ in, T *__restrict__ out, int m,
                                                                   cub::ScanTileState<T> tiles,
                                                                   const int *__restrict__ rank = nullptr)
{
    nl_grid_wait();
    using plus = ::cuda::std::plus<T>;
    using load = cub::BlockLoad<T, SCAN_T, SCAN_ITEMS, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
    using store = cub::BlockStore<T, SCAN_T, SCAN_ITEMS, cub::BLOCK_STORE_WARP_TRANSPOSE>;
    using block_scan = cub::BlockScan<T, SCAN_T>;
    using look_back = cub::TilePrefixCallbackOp<T, plus, cub::ScanTileState<T>>;
    __shared__ union {
        typename load::TempStorage load;
        typename store::TempStorage store;
        typename block_scan::TempStorage scan;
    } tmp;
    __shared__ typename look_back::TempStorage prefix_s;
    const int base = blockIdx.x * SCAN_TILE;
    const int valid = min(SCAN_TILE, m - base);
    T x[SCAN_ITEMS];
    if (rank) { /* value e is in[rank[e]] (the last, e = m - 1, zero): gathered, blocked as the scan takes them */
        int e[SCAN_ITEMS];
#pragma unroll
        for (int q = 0; q < SCAN_ITEMS; ++q) {
            e[q] = base + threadIdx.x * SCAN_ITEMS + q;
            e[q] = e[q] < m - 1 ? rank[e[q]] : -1;
        }
#pragma unroll
        for (int q = 0; q < SCAN_ITEMS; ++q)
            x[q] = e[q] >= 0 ? in[e[q]] : T(0);
    } else {
        load(tmp.load).Load(in + base, x, valid, T(0));
    }
    __syncthreads();
    if (blockIdx.x == 0) {
        T total;
        block_scan(tmp.scan).ExclusiveSum(x, x, total);
        if (threadIdx.x == 0)
            tiles.SetInclusive(0, total);
    } else {
        look_back prefix(tiles, prefix_s, plus{}, blockIdx.x);
        block_scan(tmp.scan).ExclusiveSum(x, x, prefix);
    }
    __syncthreads(); /* every value of the tile read, and the scan's storage free */
    store(tmp.store).Store(out + base, x, valid);
    if (ZERO)
        for (int e = threadIdx.x; e < valid; e += SCAN_T)
            in[base + e] = T(0);
}

/* The tile states of a row scan (nl_scan_counts) where the binning did not
 * set them. */
static __global__ void scan_tiles_init_kernel(nl_row_tiles tiles, int ntiles)
{
    nl_grid_wait();
    tiles.InitializeStatus(ntiles);
}

/* Scans counts[0..n] (counts[n] == 0) into offsets on the stream, without
 * waiting (nlist_cuda_common.cuh). */
mdnl_status nl_scan_counts(mdnl_cuda_ctx *ctx, int n, const nl_row_tiles *tiles, const int *rank)
{
    long long *counts = (long long *)ctx->counts.ptr; /* each below 2^63 */
    long long *offsets = (long long *)ctx->offsets.ptr;
    const int ntiles = nl_row_scan_tiles(n);
    nl_row_tiles t;
    mdnl_status st;
    if (tiles) {
        t = *tiles;
    } else {
        if ((st = nl_row_tiles_reserve(ctx, ntiles, &t)) != MDNL_OK ||
            (st = nl_launch(scan_tiles_init_kernel, (ntiles + 32 + 127) / 128, 128, ctx->stream, t, ntiles)) !=
                MDNL_OK)
            return st;
    }
    return nl_launch(scan_tiles_kernel<long long, false>, ntiles, SCAN_T, ctx->stream, counts, offsets, n + 1, t,
                     rank);
}

int nl_row_scan_tiles(int n) { return scan_tile_count(n + 1); }

mdnl_status nl_row_tiles_reserve(mdnl_cuda_ctx *ctx, int ntiles, nl_row_tiles *tiles)
{
    size_t bytes = 0;
    MDNL_CUDA_CHECK(nl_row_tiles::AllocationSize(ntiles, bytes));
    mdnl_status st = mdnl_dbuf_reserve(&ctx->temp, bytes, "row scan tiles");
    if (st != MDNL_OK)
        return st;
    MDNL_CUDA_CHECK(tiles->Init(ntiles, ctx->temp.ptr, bytes));
    return MDNL_OK;
}

/* Thread per original atom i: its index into its slot of the cell order
 * (one 4-byte scatter an atom: in random input order these writes are
 * random); with `rank`, the slot also replaces i's slot within its cell
 * (slot[i], coalesced), the inverse of the order. */
static __global__ void fast_scatter_kernel(const __grid_constant__ mdnl_geom g, const float4 *__restrict__ pos, int n,
                                           const int *__restrict__ start, int *__restrict__ slot,
                                           int *__restrict__ order, bool rank)
{
    nl_grid_wait();
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    const float4 p = pos[i];
    const int k = start[mdnl_cell_linear(g, p.x, p.y, p.z)] + slot[i];
    order[k] = i;
    if (rank)
        slot[i] = k;
}

/* Thread per slot k of the cell order: the position of its atom (w = bits
 * of i), gathered (reads in random order are cheaper than the partial-sector
 * writes of scattering them) and written coalesced. No cell array: the few
 * kernels that need a slot's cell compute it from this position
 * (mdnl_cell_linear, the same floats: the same cell). */
static __global__ void fast_gather_kernel(const float4 *__restrict__ pos, int n, const int *__restrict__ order,
                                          float4 *__restrict__ spos)
{
    nl_grid_wait();
    const int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n)
        return;
    const int i = order[k];
    float4 p = __ldg(pos + i);
    p.w = __int_as_float(i);
    spos[k] = p;
}

/* The cell list of ctx->view by an atomic counting sort (bin, a one-pass
 * scan of the cell counts, scatter of the indices, gather of the positions;
 * four launches): within a cell the order follows the atomics, so it is
 * only for kernels whose output does not depend on it (every neighbor list
 * path sorts its rows; energy and rdf keep the stable list of
 * cells_cuda.cuh). The fullest cell's population goes to flags[2]. */
mdnl_status nl_bin_unstable(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool rank,
                            const nl_row_tiles *row_tiles, int nrow_tiles)
{
    mdnl_status st;
    const int ncells = (int)g->ncells;
    if (g->ncells >= INT32_MAX)
        return mdnl_error(MDNL_ERR_INPUT, "%lld cells: the CUDA cell list handles at most %d", (long long)g->ncells,
                          INT32_MAX - 1);
    const int ntiles = scan_tile_count(ncells + 1);
    size_t tile_bytes = 0;
    MDNL_CUDA_CHECK(bin_tiles::AllocationSize(ntiles, tile_bytes));
    if ((st = mdnl_dbuf_reserve_zeroed(&ctx->tcount, (size_t)(ncells + 1) * sizeof(int), "cell counts",
                                       ctx->stream)) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->tstart, (size_t)(ncells + 1) * sizeof(int), "cell offsets")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->tslot, (size_t)n * sizeof(int), "cell slots")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->tpos, (size_t)n * sizeof(float4), "cell-ordered positions")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->torder, (size_t)n * sizeof(int), "cell order")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->ttemp, tile_bytes, "cell scan tiles")) != MDNL_OK)
        return st;
    int *count = (int *)ctx->tcount.ptr, *start = (int *)ctx->tstart.ptr, *slot = (int *)ctx->tslot.ptr;
    if (ctx->tcount_dirty) /* a build stopped between the bin and the scan */
        MDNL_CUDA_CHECK(cudaMemsetAsync(count, 0, ctx->tcount.cap, ctx->stream));
    bin_tiles tiles;
    MDNL_CUDA_CHECK(tiles.Init(ntiles, ctx->ttemp.ptr, tile_bytes));
    ctx->tcount_dirty = 1;
    const int nrt = row_tiles ? nrow_tiles : 0;
    int nthreads = n > ntiles + 32 ? n : ntiles + 32; /* every tile state set */
    nthreads = nthreads > nrt + 32 ? nthreads : nrt + 32;
    if ((st = nl_launch(fast_bin_kernel, (nthreads + 255) / 256, 256, ctx->stream, *g, pos, n, count, slot,
                        (int *)ctx->flags.ptr + 2, (int *)ctx->flags.ptr + FLAG_INORDER, tiles, ntiles,
                        row_tiles ? *row_tiles : nl_row_tiles(), nrt)) != MDNL_OK ||
        (st = nl_launch(scan_tiles_kernel<int, true>, ntiles, SCAN_T, ctx->stream, count, start, ncells + 1,
                        tiles, (const int *)nullptr)) != MDNL_OK)
        return st;
    ctx->tcount_dirty = 0;
    if ((st = nl_launch(fast_scatter_kernel, (n + 255) / 256, 256, ctx->stream, *g, pos, n, (const int *)start, slot,
                        (int *)ctx->torder.ptr, rank)) != MDNL_OK ||
        (st = nl_launch(fast_gather_kernel, (n + 255) / 256, 256, ctx->stream, pos, n, (const int *)ctx->torder.ptr,
                        (float4 *)ctx->tpos.ptr)) != MDNL_OK)
        return st;
    ctx->view.natoms = n;
    ctx->view.ncells = ncells;
    ctx->view.start = start;
    ctx->view.pos = (const float4 *)ctx->tpos.ptr;
    ctx->view.order = (const int *)ctx->torder.ptr;
    ctx->view.cell = nullptr; /* a slot's cell from its position (fast_gather_kernel) */
    ctx->view.rank = rank ? slot : nullptr;
    return MDNL_OK;
}

/* Candidates per atom of the cell list (the density the default goes by). */
double nl_cell_candidates(const mdnl_geom *g)
{
    double cand = (double)g->natoms / (double)g->ncells;
    for (int k = 0; k < 3; ++k)
        cand *= g->ncell[k] < 2 * g->stencil[k] + 1 ? g->ncell[k] : 2 * g->stencil[k] + 1;
    return cand;
}

/* The cell path a build starts with (the context's, or the default by
 * density); dense-walk and dense-tiles may still fall back. The default
 * (H100, tools/bench/RESULTS.md): sparse rows up to 32 candidates per atom
 * (graphene-1m, ~13) take sparse-stage, whose rows kernel walks rows longer
 * than its registers again and sorts them in global memory (15 ms on
 * lj-1m), so only while rows are short (~0.15-0.25 hits per candidate: rows
 * of ~5-8); up to 100, sparse-rows;
 * denser rows (lj-1m, ~360 candidates) dense-walk where it fits and rows
 * average at most 90% of its 64-key slab rows, else dense-tiles. */
static int cell_path_first(const mdnl_cuda_ctx *ctx, const mdnl_geom *g)
{
    if (ctx->cell_path != MDNL_CELL_PATH_AUTO)
        return ctx->cell_path;
    const double cand = nl_cell_candidates(g);
    if (cand > 100)
        return nl_dense_walk_fits(g) && nl_dense_walk_row_estimate(g) <= 0.9 * WALK_CAP ? MDNL_CELL_PATH_DENSE_WALK
                                                                                         : MDNL_CELL_PATH_DENSE_TILES;
    return cand > 32 ? MDNL_CELL_PATH_SPARSE_ROWS : MDNL_CELL_PATH_SPARSE_STAGE;
}

/* Whether the cell build writes every row count, counts[n] included
 * (sparse-stage and dense-walk), so that the counts need no clearing first. */
static bool cell_writes_counts(const mdnl_cuda_ctx *ctx, const mdnl_geom *g)
{
    const int p = cell_path_first(ctx, g);
    return p == MDNL_CELL_PATH_SPARSE_STAGE || (p == MDNL_CELL_PATH_DENSE_WALK && nl_dense_walk_fits(g));
}

static mdnl_status build_cell(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                              int64_t *npairs)
{
    switch (cell_path_first(ctx, g)) {
    case MDNL_CELL_PATH_SPARSE_STAGE:
        return nl_build_sparse_stage(ctx, g, pos, n, full, npairs);
    case MDNL_CELL_PATH_SPARSE_ROWS:
        return nl_build_sparse_rows(ctx, g, pos, n, full, npairs);
    case MDNL_CELL_PATH_DENSE_WALK:
        if (nl_dense_walk_fits(g))
            return nl_build_dense_walk(ctx, g, pos, n, full, npairs);
        return nl_build_dense_tiles(ctx, g, pos, n, full, npairs); /* images: a row could meet an atom twice */
    case MDNL_CELL_PATH_DENSE_TILES:
        return nl_build_dense_tiles(ctx, g, pos, n, full, npairs); /* falls back to dense-rows itself */
    default:
        return nl_build_dense_rows(ctx, g, pos, n, full, npairs);
    }
}
extern "C" mdnl_status mdnl_nlist_build_cuda_devpos(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float *d_pos4,
                                                    mdnl_method method, mdnl_list_kind kind, mdnl_nlist_dev *out)
{
    memset(out, 0, sizeof *out);
    const int64_t n64 = g->natoms;
    if (n64 > INT32_MAX - 1)
        return mdnl_error(MDNL_ERR_INPUT, "%lld atoms in one frame: at most %d are supported", (long long)n64,
                          INT32_MAX - 1);
    const int n = (int)n64;
    if (method == MDNL_METHOD_AUTO)
        method = mdnl_nlist_cuda_auto(g);
    mdnl_status st;
    if ((st = mdnl_dbuf_reserve(&ctx->counts, (size_t)(n + 1) * sizeof(unsigned long long), "row counts")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->offsets, (size_t)(n + 1) * sizeof(int64_t), "row offsets")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->flags, FLAG_INTS * sizeof(int), "flags")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->j, sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->d, sizeof(float), "neighbor distances")) != MDNL_OK)
        return st;
again:
    ctx->deferred = 0;
    ctx->walk_rows = -1;
    ctx->sparse_last = -1;
    for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s) {
        ctx->used[s] = 0;
        ctx->stage_ms[s] = 0;
    }
    ctx->total_ms = 0;
    if (ctx->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(ctx->ev_total[0], ctx->stream));
    if (!(method == MDNL_METHOD_CELL && cell_writes_counts(ctx, g)))
        MDNL_CUDA_CHECK(cudaMemsetAsync(ctx->counts.ptr, 0, (size_t)(n + 1) * sizeof(unsigned long long), ctx->stream));
    int *h_flags = (int *)(ctx->h_small + 4); /* FLAG_INTS ints, 8-byte aligned */
    memset(h_flags, 0, FLAG_INTS * sizeof(int)); /* a build that publishes its flags writes them there */
    if (!ctx->flags_zero) /* else left zero by the last build (nl_flags_publish) */
        MDNL_CUDA_CHECK(cudaMemsetAsync(ctx->flags.ptr, 0, FLAG_INTS * sizeof(int), ctx->stream));
    ctx->flags_zero = ctx->flags_on_host = 0;
    int64_t npairs = 0;
    const float4 *pos = (const float4 *)d_pos4;
    const bool full = kind == MDNL_LIST_FULL;
    if (n == 0) {
        MDNL_CUDA_CHECK(cudaMemsetAsync(ctx->offsets.ptr, 0, sizeof(int64_t), ctx->stream));
    } else {
        switch (method) {
        case MDNL_METHOD_CELL:
            st = build_cell(ctx, g, pos, n, full, &npairs);
            break;
        case MDNL_METHOD_BRUTE_ATOMIC:
            st = nl_build_brute_atomic(ctx, g, pos, n, full, &npairs);
            break;
        case MDNL_METHOD_BRUTE_NOATOMIC:
            st = nl_build_brute_noatomic(ctx, g, pos, n, full, &npairs);
            break;
        default:
            return mdnl_error(MDNL_ERR_INTERNAL, "mdnl_nlist_build_cuda: unknown method %d", (int)method);
        }
        if (st != MDNL_OK)
            return st;
    }
    /* One more synchronisation: the fill's consistency flag (a count that
     * disagrees with its fill would be a bug, never silently truncated). */
    if (!ctx->flags_on_host) /* else written there by the build's last kernel (nl_flags_publish) */
        MDNL_CUDA_CHECK(
            cudaMemcpyAsync(h_flags, ctx->flags.ptr, FLAG_INTS * sizeof(int), cudaMemcpyDeviceToHost, ctx->stream));
    if (ctx->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(ctx->ev_total[1], ctx->stream));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
    if (ctx->deferred == 2) { /* dense-walk */
        memcpy(&npairs, h_flags + FLAG_NPAIRS, sizeof npairs);
        const int pack = nl_walk_packed(n, h_flags[FLAG_INORDER], h_flags[FLAG_INORDER + 1]);
        if (pack != ctx->walk_rows) {
            /* built in the layout the frame before called for, not this frame's (the CSR is the same, only
             * its speed differs): build again in this frame's, so that a frame's layout is its own */
            ctx->walk_pack = pack;
            ctx->retries++;
            goto again;
        }
        if (h_flags[FLAG_OUTGROWN]) {
            /* nothing was written: grow the output to the exact size and build again */
            const size_t np = (size_t)(npairs > 0 ? npairs : 1);
            if ((st = mdnl_dbuf_reserve(&ctx->j, np * sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
                (st = mdnl_dbuf_reserve(&ctx->d, np * sizeof(float), "neighbor distances")) != MDNL_OK)
                return st;
            ctx->retries++;
            goto again;
        }
    } else if (ctx->deferred) { /* sparse-stage */
        memcpy(&npairs, h_flags + FLAG_NPAIRS, sizeof npairs);
        /* the next build walks inside the rows kernel where this frame's sample followed space (speed only: the
         * CSR is the same) */
        ctx->sparse_fused = nl_order_follows_space(h_flags[FLAG_INORDER], h_flags[FLAG_INORDER + 1]);
        if (h_flags[FLAG_OUTGROWN]) {
            /* the CSR passed stage_cap pairs an atom (rows past it were not
             * written): size it from the pair count and build again */
            const int64_t per = npairs / n + 1;
            ctx->retries++;
            ctx->stage_cap = (int)(per + per / 8 + 1 < INT32_MAX ? per + per / 8 + 1 : INT32_MAX);
            goto again;
        }
    }
    const int flag = h_flags[0];
    if (flag)
        return mdnl_error(MDNL_ERR_INTERNAL, "CUDA neighbor list (%s): a row's fill disagreed with its count",
                          mdnl_method_name(method));
    if (ctx->timing) {
        float ms = 0;
        MDNL_CUDA_CHECK(cudaEventElapsedTime(&ms, ctx->ev_total[0], ctx->ev_total[1]));
        ctx->total_ms = ms;
    }
    nl_stage_floor_bytes(ctx, g, n, npairs);
    if (ctx->timing)
        for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
            if (ctx->used[s]) {
                float ms = 0;
                MDNL_CUDA_CHECK(cudaEventElapsedTime(&ms, ctx->ev[s][0], ctx->ev[s][1]));
                ctx->stage_ms[s] = ms;
            }
    out->natoms = n;
    out->npairs = npairs;
    out->d_offsets = (const int64_t *)ctx->offsets.ptr;
    out->d_j = (const int32_t *)ctx->j.ptr;
    out->d_d = (const float *)ctx->d.ptr;
    out->d_pos4 = d_pos4;
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_nlist_build_cuda_dev(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float (*h_pos4)[4],
                                                 mdnl_method method, mdnl_list_kind kind, mdnl_nlist_dev *out)
{
    const int64_t n = g->natoms;
    mdnl_status st = mdnl_dbuf_reserve(&ctx->pos, (size_t)(n > 0 ? n : 1) * 4 * sizeof(float), "positions");
    if (st != MDNL_OK)
        return st;
    if (n > 0)
        MDNL_CUDA_CHECK(cudaMemcpyAsync(ctx->pos.ptr, h_pos4, (size_t)n * 4 * sizeof(float), cudaMemcpyHostToDevice,
                                        ctx->stream));
    return mdnl_nlist_build_cuda_devpos(ctx, g, (const float *)ctx->pos.ptr, method, kind, out);
}

extern "C" mdnl_status mdnl_nlist_build_cuda(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float (*h_pos4)[4],
                                             mdnl_method method, mdnl_list_kind kind, mdnl_nlist *out_host)
{
    mdnl_nlist_dev dev;
    mdnl_status st = mdnl_nlist_build_cuda_dev(ctx, g, h_pos4, method, kind, &dev);
    if (st != MDNL_OK)
        return st;
    return mdnl_nlist_download_cuda(ctx->stream, &dev, out_host);
}

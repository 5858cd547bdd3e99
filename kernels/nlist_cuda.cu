/* nlist_cuda.cu — the CUDA neighbor-list context, the choice of path and
 * the entry points of nlist_cuda.h, and the pieces every cell path shares
 * (the counting-sort binning, the one-pass row scan). The paths themselves
 * are nl_path objects in nlist_brute.cu, nlist_cell_sparse.cu and
 * nlist_cell_dense_walk.cu (shared declarations: nlist_cuda_common.cuh). */
#include "nlist_cuda_common.cuh"
#include "device.h"

#include <cub/agent/single_pass_scan_operators.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cuda/std/functional>

/* Every path, each with its own state in the context (nl_path). */
static const nl_path *const all_paths[] = {&nl_path_brute_atomic, &nl_path_brute_noatomic, &nl_path_sparse_stage,
                                           &nl_path_dense_walk};

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
    mdnl_status st = MDNL_OK;
    cudaError_t e;
    void *dev = nullptr; /* the read-back's device address */
    const int devi = mdnl_cuda_device_index();
#define CTX_TRY(call)                                                                                                  \
    if ((e = (call)) != cudaSuccess) {                                                                                 \
        st = mdnl_cuda_fail(e, #call, __FILE__, __LINE__);                                                             \
        goto fail;                                                                                                     \
    }
    CTX_TRY(cudaSetDevice(devi));
    CTX_TRY(cudaDeviceGetAttribute(&c->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, devi));
    CTX_TRY(cudaDeviceGetAttribute(&c->sm_count, cudaDevAttrMultiProcessorCount, devi));
    CTX_TRY(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    for (const nl_path *p : all_paths)
        if (p->init && (st = p->init(c)) != MDNL_OK)
            goto fail;
    /* mapped, so that a build's last kernel writes its flags there itself (nl_flags_publish); where the device
     * maps no host memory, plain pinned and copied back */
    if (cudaHostAlloc((void **)&c->h_rb, sizeof *c->h_rb, cudaHostAllocMapped) == cudaSuccess &&
        cudaHostGetDevicePointer(&dev, c->h_rb, 0) == cudaSuccess) {
        c->d_host_flags = &((nl_readback *)dev)->flags;
    } else {
        (void)cudaGetLastError();
        if (c->h_rb)
            cudaFreeHost(c->h_rb);
        c->h_rb = nullptr;
        CTX_TRY(cudaMallocHost((void **)&c->h_rb, sizeof *c->h_rb));
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
    for (const nl_path *p : all_paths)
        if (p->release)
            p->release(c);
    mdnl_dbuf *bufs[] = {&c->pos,    &c->counts, &c->offsets, &c->j,    &c->d,     &c->flags, &c->temp,
                         &c->tcount, &c->tstart, &c->tslot,   &c->tpos, &c->torder, &c->ttemp};
    for (mdnl_dbuf *b : bufs)
        mdnl_dbuf_free(b);
    if (c->h_rb)
        cudaFreeHost(c->h_rb);
    for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
        for (int b = 0; b < 2; ++b)
            if (c->ev[s][b])
                cudaEventDestroy(c->ev[s][b]);
    for (int b = 0; b < 2; ++b)
        if (c->ev_total[b])
            cudaEventDestroy(c->ev_total[b]);
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

extern "C" void mdnl_cuda_ctx_set_stage_capacity(mdnl_cuda_ctx *c, int k) { c->stage_cap = k < 1 ? 1 : k; }
extern "C" int64_t mdnl_cuda_ctx_retries(const mdnl_cuda_ctx *c) { return c->retries; }
extern "C" int mdnl_cuda_ctx_walk_rows(const mdnl_cuda_ctx *c)
{
    return c->last == &nl_path_dense_walk ? c->walk.rows : -1;
}
extern "C" int mdnl_cuda_ctx_sparse_fused(const mdnl_cuda_ctx *c)
{
    return c->last == &nl_path_sparse_stage ? c->sparse.last : -1;
}
extern "C" void mdnl_cuda_ctx_set_smem_budget(mdnl_cuda_ctx *c, int bytes) { c->smem_budget = bytes; }
extern "C" void mdnl_cuda_ctx_set_cell_path(mdnl_cuda_ctx *c, int path)
{
    c->cell_path = path > MDNL_CELL_PATH_AUTO && path < MDNL_CELL_NPATHS ? path : MDNL_CELL_PATH_AUTO;
}

/* The cell method's paths by mdnl_cell_path (AUTO: none). */
static const nl_path *const cell_paths[MDNL_CELL_NPATHS] = {nullptr, &nl_path_sparse_stage, &nl_path_dense_walk};

extern "C" const char *mdnl_cell_path_name(int path)
{
    if (path == MDNL_CELL_PATH_AUTO)
        return "auto";
    return path > 0 && path < MDNL_CELL_NPATHS ? cell_paths[path]->name : "?";
}

extern "C" mdnl_method mdnl_nlist_cuda_auto(const mdnl_geom *g)
{
    /* Below a few hundred atoms one brute-force launch beats the cell
     * list's five (docs/performance.md). */
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
mdnl_status nl_scan_and_size(mdnl_cuda_ctx *ctx, int n, int64_t *npairs)
{
    int64_t *offsets = (int64_t *)ctx->offsets.ptr;
    mdnl_status st = nl_scan_counts(ctx, n);
    if (st != MDNL_OK)
        return st;
    MDNL_CUDA_CHECK(
        cudaMemcpyAsync(&ctx->h_rb->npairs, offsets + n, sizeof(int64_t), cudaMemcpyDeviceToHost, ctx->stream));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
    *npairs = ctx->h_rb->npairs;
    const size_t np = (size_t)(*npairs > 0 ? *npairs : 1);
    if ((st = mdnl_dbuf_reserve(&ctx->j, np * sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->d, np * sizeof(float), "neighbor distances")) != MDNL_OK)
        return st;
    return MDNL_OK;
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
 * cells_cuda.cuh). The fullest cell's population goes to nl_flags.fullest_cell. */
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
                        &nl_dev_flags(ctx)->fullest_cell, nl_dev_flags(ctx)->inorder, tiles, ntiles,
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

/* The path a build takes. Brute force by its method. The cell method: the
 * context's forced path, or by density: sparse-stage up to 32 candidates per
 * atom (graphene, ~13), whose walk keeps a row's first 4 or 8 hits in
 * registers and walks longer rows again, so only while rows are short (~0.15
 * to 0.25 hits a candidate); denser (the LJ and copper systems, ~360),
 * dense-walk, a warp a cell. Where dense-walk does not fit the geometry (a
 * periodic axis of fewer than 2 stencil + 1 cells would let a row meet an
 * atom twice), sparse-stage, which builds on any. */
static const nl_path *pick_path(const mdnl_cuda_ctx *ctx, const mdnl_geom *g, mdnl_method method)
{
    if (method == MDNL_METHOD_BRUTE_ATOMIC)
        return &nl_path_brute_atomic;
    if (method == MDNL_METHOD_BRUTE_NOATOMIC)
        return &nl_path_brute_noatomic;
    const nl_path *p = cell_paths[ctx->cell_path];
    if (!p)
        p = nl_cell_candidates(g) > 32 ? &nl_path_dense_walk : &nl_path_sparse_stage;
    return p->fits(g) ? p : &nl_path_sparse_stage;
}

extern "C" mdnl_status mdnl_nlist_build_cuda_devpos(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float *d_pos4,
                                                    mdnl_method method, mdnl_list_kind kind, mdnl_nlist_dev *out)
{
    memset(out, 0, sizeof *out);
    ctx->has_built = 0;
    const int64_t n64 = g->natoms;
    if (n64 > INT32_MAX - 1)
        return mdnl_error(MDNL_ERR_INPUT, "%lld atoms in one frame: at most %d are supported", (long long)n64,
                          INT32_MAX - 1);
    const int n = (int)n64;
    if (method == MDNL_METHOD_AUTO)
        method = mdnl_nlist_cuda_auto(g);
    if (method != MDNL_METHOD_CELL && method != MDNL_METHOD_BRUTE_ATOMIC && method != MDNL_METHOD_BRUTE_NOATOMIC)
        return mdnl_error(MDNL_ERR_INTERNAL, "mdnl_nlist_build_cuda: unknown method %d", (int)method);
    const nl_path *path = pick_path(ctx, g, method);
    mdnl_status st;
    if ((st = mdnl_dbuf_reserve(&ctx->counts, (size_t)(n + 1) * sizeof(unsigned long long), "row counts")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->offsets, (size_t)(n + 1) * sizeof(int64_t), "row offsets")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->flags, sizeof(nl_flags), "flags")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->j, sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->d, sizeof(float), "neighbor distances")) != MDNL_OK)
        return st;
    nl_flags *h_flags = &ctx->h_rb->flags;
    int64_t npairs = 0;
    for (bool again = true; again;) {
        again = false;
        ctx->last = nullptr;
        for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s) {
            ctx->used[s] = 0;
            ctx->stage_ms[s] = 0;
        }
        ctx->total_ms = 0;
        if (ctx->timing)
            MDNL_CUDA_CHECK(cudaEventRecord(ctx->ev_total[0], ctx->stream));
        if (!path->writes_counts)
            MDNL_CUDA_CHECK(
                cudaMemsetAsync(ctx->counts.ptr, 0, (size_t)(n + 1) * sizeof(unsigned long long), ctx->stream));
        memset(h_flags, 0, sizeof *h_flags); /* a build that publishes its flags writes them there */
        if (!ctx->flags_zero)                /* else left zero by the last build (nl_flags_publish) */
            MDNL_CUDA_CHECK(cudaMemsetAsync(ctx->flags.ptr, 0, sizeof(nl_flags), ctx->stream));
        ctx->flags_zero = ctx->flags_on_host = 0;
        npairs = 0;
        const float4 *pos = (const float4 *)d_pos4;
        if (n == 0) {
            MDNL_CUDA_CHECK(cudaMemsetAsync(ctx->offsets.ptr, 0, sizeof(int64_t), ctx->stream));
        } else {
            if ((st = path->build(ctx, g, pos, n, kind == MDNL_LIST_FULL, &npairs)) != MDNL_OK)
                return st;
            ctx->last = path;
        }
        /* One more synchronisation: the flags (the fill's consistency flag: a count that disagrees with its
         * fill would be a bug, never silently truncated; the pair count where the build left it there) */
        if (!ctx->flags_on_host) /* else written there by the build's last kernel (nl_flags_publish) */
            MDNL_CUDA_CHECK(
                cudaMemcpyAsync(h_flags, ctx->flags.ptr, sizeof(nl_flags), cudaMemcpyDeviceToHost, ctx->stream));
        if (ctx->timing)
            MDNL_CUDA_CHECK(cudaEventRecord(ctx->ev_total[1], ctx->stream));
        MDNL_CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
        if (n > 0 && path->finish && (st = path->finish(ctx, h_flags, n, &npairs, &again)) != MDNL_OK)
            return st;
    }
    if (h_flags->mismatch)
        return mdnl_error(MDNL_ERR_INTERNAL, "CUDA neighbor list (%s): a row's fill disagreed with its count",
                          path->name);
    if (ctx->timing) {
        float ms = 0;
        MDNL_CUDA_CHECK(cudaEventElapsedTime(&ms, ctx->ev_total[0], ctx->ev_total[1]));
        ctx->total_ms = ms;
    }
    for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
        ctx->stage_bytes[s] = 0;
    if (ctx->last && ctx->last->floor_bytes)
        ctx->last->floor_bytes(ctx, g, n, npairs, ctx->stage_bytes);
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
    ctx->built = *out;
    ctx->has_built = 1;
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_nlist_cuda_last(mdnl_cuda_ctx *ctx, mdnl_nlist_dev *out)
{
    if (!ctx->has_built)
        return mdnl_error(MDNL_ERR_INTERNAL, "mdnl_nlist_cuda_last: no list was built on this context");
    *out = ctx->built;
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

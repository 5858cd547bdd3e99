/* nlist_cell_sparse.cu — sparse-stage, the cell-list path for sparse rows
 * (nlist_cuda.h), and the one that builds on every geometry: one traversal
 * that stages every row instead of a count pass and a fill. A walk in cell
 * order keeps a row's hits (up to K) in registers, sorts them once and
 * stages them as one row; a rows kernel per original row scans the row
 * lengths in one pass (CUB's decoupled look-back) and copies each staged
 * row straight into the CSR; no host synchronisation before the build's
 * last one (a CSR that outgrew its arrays is seen there and built again).
 * Where the frame before's input order followed space, the rows kernel
 * walks its rows itself (one kernel after the binning, no stage). It walks
 * the unstable (counting-sort) cell list. */
#include "nlist_cuda_common.cuh"

#include <cub/agent/single_pass_scan_operators.cuh>
#include <cuda/std/functional>

/* mdnl_for_each_pair's pair set, visited in another order (only for kernels
 * that sort their rows): when an atom's z range is its whole cell column on
 * an open z axis (a flat sheet: one cell in z), the columns of consecutive dy
 * with the same image shift are one contiguous range of the cell order, so
 * the walk takes 2 stencil[0] + 1 ranges (fewer when y wraps) instead of one
 * per column: fewer dependent start[] loads before the first position load.
 * Otherwise it is mdnl_for_each_pair itself. */
template <class F>
__device__ __forceinline__ void walk_pairs_merged(const mdnl_geom &g, const mdnl_cells_view &c, int i_sorted, F &&f)
{
    const int n0 = g.ncell[0], n1 = g.ncell[1], n2 = g.ncell[2];
    /* Every z range is the whole column on an open axis with n2 <= stencil + 1
     * cells (cz - st <= 0 and cz + st >= n2 - 1 for every cz); else the z
     * range may miss part of a column, or wrap. */
    if (g.pbc[2] || g.stencil[2] < n2 - 1) {
        mdnl_for_each_pair(g, c, i_sorted, f);
        return;
    }
    const float4 pi = c.pos[i_sorted];
    /* the atom's cell, as the binning found it (mdnl_cell_linear, the same
     * floats and operations; the binning keeps no cell array), two of its
     * coordinates only */
    const int cx = mdnl_cell_coord(&g, pi.x, pi.y, pi.z, 0);
    const int cy = mdnl_cell_coord(&g, pi.x, pi.y, pi.z, 1);
    for (int dx = -g.stencil[0]; dx <= g.stencil[0]; ++dx) {
        int x = cx + dx, s0;
        if (!mdnl_cell_wrap(g.pbc[0], n0, x, s0))
            continue;
        for (int dy = -g.stencil[1]; dy <= g.stencil[1];) {
            int y = cy + dy, s1;
            if (!mdnl_cell_wrap(g.pbc[1], n1, y, s1)) {
                ++dy;
                continue;
            }
            /* dy .. dlast share s1: y .. y + (dlast - dy) <= n1 - 1 */
            int dlast = dy + (n1 - 1 - y);
            if (dlast > g.stencil[1])
                dlast = g.stencil[1];
            float v[3];
            mdnl_shift_vector(&g, s0, s1, 0, v);
            const int zero = s0 == 0 && s1 == 0;
            const int kb = c.start[(x * n1 + y) * n2];
            const int ke = c.start[(x * n1 + y + (dlast - dy) + 1) * n2];
#pragma unroll 4
            for (int k = kb; k < ke; ++k) {
                const float4 pj = c.pos[k];
                if (zero && k == i_sorted)
                    continue;
                const float d2 = mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, v);
                if (d2 < g.cutoff2)
                    f(__float_as_int(pj.w), d2, s0, s1, 0);
            }
            dy = dlast + 1;
        }
    }
}

/* sparse-stage: two kernels after the binning, no host synchronisation
 * before the build's last one.
 *
 * Walk (sparse_walk_kernel). Mapping: thread per sorted slot s (a warp's
 * atoms are neighbours in space whatever the input order, so their
 * candidate ranges overlap and their loads coalesce). The thread walks the
 * stencil (walk_pairs_merged), keeping its first K hits as (j, d2) keys,
 * unsorted, in its column of the block's shared keys (a store a hit; a row
 * of more than K is walked again; sparse_row_keys). After the walk the K
 * keys are read into registers and sorted once by a network
 * (empty slots hold ~0, after every key) and d = sqrt(d2) is taken of the
 * kept ones: within a j, d2 >= 0 orders like d (sqrt is monotone; two d2
 * with one d give identical keys), so the row is the one mdnl_row_key
 * sorts. The K keys go to the stage as one row (stage[s * K ..], 16-byte
 * stores: a warp's rows are one contiguous run), the row's true length to
 * counts[s] (by slot too: by i, in random input order, each count was a
 * partly written sector).
 *
 * Rows (sparse_rows_kernel). Mapping: thread per original row i, a block per
 * tile of SPARSE_T rows. The row offsets are a single-pass scan across the
 * blocks: CUB's block scan with the decoupled look-back of its device scan
 * (a block publishes its count, then its inclusive prefix once its
 * predecessors' are known), so each thread writes offsets[i]. Its staged row
 * (stage[rank[i] * K ..], one sector whatever the input order) and its
 * count (counts[rank[i]]) are loaded before the scan; the block's rows, one
 * run of the CSR, are put together in shared memory and written by the
 * whole block with coalesced stores. A block with a row longer
 * than K writes row by row instead, the long row walked again, written in
 * the order found and sorted in place. Where the CSR would pass `limit`
 * entries (the output arrays' size) a block past it writes nothing and
 * nl_flags.outgrown tells the host, which sizes the output from the pair
 * count (nl_flags.npairs, read back with the flags) and builds again.
 *
 * Fused (FUSED: the host's nl_sparse_state.fused, from the frame before's
 * binning sample: 1 in 16 sampled atoms or more in the cell of the atom
 * before them, as dense-walk's gathered layout). The rows kernel walks each
 * of its rows (sparse_row_keys, at the atom's slot) in place of loading a
 * staged one, and the binning sets its tile states: no walk kernel, no
 * stage, no counts. Its rows are consecutive atoms of the input, which
 * are neighbours in space only in such an order (in random order a walk
 * in original order loses its locality). Tiles of 256 rows
 * (SPARSE_FUSED_T), held to 6 blocks an SM (40 registers; ptxas alone 64):
 * a block's scan and stores wait for its slowest walk, and smaller blocks
 * leave fewer warps idle.
 *
 * The walk with K = 4 is held to 40 registers (12 blocks, 48 warps an SM;
 * ptxas alone takes 52: 9 blocks): its thread-per-atom loop is bound by
 * issue and load latency, and the extra warps hide more of it (at 32
 * registers it spills in the loop). K = 8 is left to ptxas (0: no minimum). */
/* Slot s's row (atom i), walked: its first K hits kept as (j, d2) keys and
 * sorted, handed to put(q, v) two at a time as (j << 32 | bits of d)
 * entries (0 past the row; q = 0 .. K/2 - 1); returns the row's true
 * length (a row of more than K is walked again). A hit goes to the
 * thread's column of the block's shared keys (ks[q * T + t], q < K; past K
 * to column K, never read), read back into registers after the walk: a
 * min, an address and a store a hit, where a push in front of K registers
 * took 2 K moves on every candidate a lane of the warp hit. The
 * store is PTX on an address taken once: written in C++, ptxas rebuilt the
 * shared window's base before every store at 40 registers. The walk
 * kernel stores the row to the stage, the fused rows kernel keeps it in
 * registers. */
template <bool FULL, int K, int T, class Put>
__device__ __forceinline__ int sparse_row_keys(const mdnl_geom &g, const mdnl_cells_view &c, int s, int i,
                                               uint64_t (&ks)[(K + 1) * T], Put &&put)
{
    const int t = threadIdx.x;
    /* the thread's column as a shared-window address, computed once (the stores below by PTX) */
    const unsigned kcol = (unsigned)__cvta_generic_to_shared(&ks[t]);
    int k = 0;
    walk_pairs_merged(g, c, s, [&](int j, float d2, int s0, int s1, int s2) {
        if (FULL || mdnl_half_keep(i, j, s0, s1, s2)) {
            /* a row of more than K keeps its first K, unused: it is walked again (its later hits go to
             * column K, never read: no branch around the store) */
            asm volatile("st.shared.v2.u32 [%0], {%1, %2};" ::"r"(kcol + (unsigned)(min(k, K) * T * 8)),
                         "r"(__float_as_uint(d2)), "r"(j)
                         : "memory");
            ++k;
        }
    });
    uint64_t r[K]; /* (j, d2) keys, unsorted; ~0 past the row */
#pragma unroll
    for (int q = 0; q < K; ++q)
        r[q] = q < k ? ks[q * T + t] : ~0ull;
    thread_bitonic<K>(r);
#pragma unroll
    for (int q = 0; q < K; q += 2) {
        ulonglong2 v;
        v.x = q < k ? (r[q] & 0xffffffff00000000ull) | __float_as_uint(__fsqrt_rn(__uint_as_float((unsigned)r[q]))) : 0;
        v.y = q + 1 < k ? (r[q + 1] & 0xffffffff00000000ull) |
                              __float_as_uint(__fsqrt_rn(__uint_as_float((unsigned)r[q + 1])))
                        : 0;
        put(q / 2, v);
    }
    return k;
}

template <bool FULL, int K>
__global__ __launch_bounds__(128, K == 4 ? 12 : 0) void sparse_walk_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                          uint64_t *__restrict__ stage,
                                                          unsigned long long *__restrict__ counts,
                                                          nl_row_tiles tiles, int ntiles)
{
    nl_grid_wait();
    /* the rows kernel's tile states, set here rather than by a launch of
     * their own (the grid has n threads, 128 at least: ntiles + 32 or more) */
    tiles.InitializeStatus(ntiles);
    __shared__ uint64_t keys_s[(K + 1) * 128]; /* sparse_row_keys' hits, a column a thread */
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= c.natoms)
        return;
    const int i = c.order[s];
    const int k = sparse_row_keys<FULL, K, 128>(g, c, s, i, keys_s, [&](int q, ulonglong2 v) {
        ((ulonglong2 *)(stage + (size_t)s * K))[q] = v;
    });
    counts[s] = (unsigned long long)k; /* by slot: coalesced (by i, in random input order, a partly written sector
                                          * each, which the DRAM reads back to merge); the rows kernel's rank finds it */
}

#define SPARSE_T 512 /* rows kernel: a tile of rows a block (the look-back once a tile) */
#define SPARSE_FUSED_T 256 /* the fused rows kernel's tile (6 blocks an SM) */
#define SPARSE_TILE(FUSED) ((FUSED) ? SPARSE_FUSED_T : SPARSE_T)

/* host_flags: the build's flags to the host's read-back (nl_flags_publish), else to flags (copied back by the
 * caller) */
template <bool FULL, int K, bool FUSED>
__global__ __launch_bounds__(SPARSE_TILE(FUSED), FUSED ? 6 : 0) void sparse_rows_kernel(
    const __grid_constant__ mdnl_geom g, mdnl_cells_view c, const uint64_t *__restrict__ stage,
    const unsigned long long *__restrict__ counts, nl_row_tiles tiles, long long limit, int64_t *__restrict__ offsets,
    int32_t *__restrict__ j_out, float *__restrict__ d_out, int *__restrict__ flags, int *__restrict__ host_flags)
{
    nl_grid_wait();
    using plus = ::cuda::std::plus<long long>;
    constexpr int T = SPARSE_TILE(FUSED);
    using block_scan = cub::BlockScan<long long, T>;
    using look_back = cub::TilePrefixCallbackOp<long long, plus, nl_row_tiles>;
    __shared__ typename block_scan::TempStorage scan_s;
    __shared__ typename look_back::TempStorage prefix_s;
    /* FUSED: the walk's keys (sparse_row_keys), read back before the scan; then, past the barrier below,
     * the block's rows staged for its stores (j_s, d_s) */
    __shared__ __align__(16) uint64_t keys_s[T * (FUSED ? K + 1 : K)];
    const int n = c.natoms;
    const int i = blockIdx.x * T + threadIdx.x;
    const int s = i < n ? c.rank[i] : 0;
    ulonglong2 row[K / 2];
    long long k = 0;
    if constexpr (FUSED) {
        /* FUSED: the row walked here (input order following space: a block's rows are neighbours) */
        if (i < n)
            k = sparse_row_keys<FULL, K, T>(g, c, s, i, keys_s, [&](int q, ulonglong2 v) { row[q] = v; });
        else
#pragma unroll
            for (int q = 0; q < K / 2; ++q)
                row[q] = make_ulonglong2(0, 0);
    } else {
        /* the row's count (by slot) and its staged row (every slot's K entries written by the walk) are loaded
         * together, before the scan, which they do not depend on: their latency overlaps the block scan's and
         * the look-back's */
        ulonglong2 raw[K / 2];
#pragma unroll
        for (int q = 0; q < K; q += 2)
            raw[q / 2] = i < n ? ((const ulonglong2 *)(stage + (size_t)s * K))[q / 2] : make_ulonglong2(0, 0);
        k = i < n ? (long long)counts[s] : 0;
#pragma unroll
        for (int q = 0; q < K; q += 2)
            row[q / 2] = q < k && k <= K ? raw[q / 2] : make_ulonglong2(0, 0);
    }
    long long off;
    if (blockIdx.x == 0) {
        long long total;
        block_scan(scan_s).ExclusiveSum(k, off, total);
        if (threadIdx.x == 0)
            tiles.SetInclusive(0, total);
    } else {
        look_back prefix(tiles, prefix_s, plus{}, blockIdx.x);
        block_scan(scan_s).ExclusiveSum(k, off, prefix);
    }
    /* the block's rows are one run of the CSR, [first, last): staged in
     * shared memory and written by the whole block with coalesced stores,
     * unless a row of the block is longer than K (walked again below) */
    int32_t *const j_s = reinterpret_cast<int32_t *>(keys_s); /* T K each: keys_s's bytes */
    float *const d_s = reinterpret_cast<float *>(keys_s) + T * K;
    __shared__ long long run[2];
    const bool mine = i < n;
    if (threadIdx.x == 0)
        run[0] = off;
    if (mine && (i == n - 1 || threadIdx.x == T - 1))
        run[1] = off + k;
    if (mine) {
        offsets[i] = off;
        if (i == n - 1) {
            offsets[n] = off + k;
            nl_flags_publish(flags, host_flags, off + k, off + k > limit);
        }
    }
    const bool any_long = __syncthreads_or(k > K); /* also orders run[], and the keys' reads before j_s, d_s */
    const long long first = run[0], last = run[1];
    if (last > limit)
        return; /* the host builds again, larger */
    /* a short row's k entries, unpacked to jr[0..k) and dr[0..k) */
    auto put_row = [&](int32_t *jr, float *dr) {
#pragma unroll
        for (int q = 0; q < K; q += 2) {
            if (q < k) {
                jr[q] = (int32_t)(row[q / 2].x >> 32);
                dr[q] = __uint_as_float((unsigned)row[q / 2].x);
            }
            if (q + 1 < k) {
                jr[q + 1] = (int32_t)(row[q / 2].y >> 32);
                dr[q + 1] = __uint_as_float((unsigned)row[q / 2].y);
            }
        }
    };
    if (!any_long) {
        put_row(j_s + (off - first), d_s + (off - first));
        __syncthreads();
        for (int e = threadIdx.x; e < (int)(last - first); e += T) {
            j_out[first + e] = j_s[e];
            d_out[first + e] = d_s[e];
        }
        return;
    }
    if (!mine)
        return;
    if (k <= K) {
        put_row(j_out + off, d_out + off);
        return;
    }
    nl_row_walked_again<FULL>([&](auto &&f) { walk_pairs_merged(g, c, s, f); }, i, off, k, j_out, d_out,
                              host_flags ? host_flags : flags);
}

template <bool FULL, int K>
static mdnl_status launch_sparse_stage(mdnl_cuda_ctx *ctx, const mdnl_geom *g, int n, nl_row_tiles tiles,
                                       int ntiles, long long limit, bool fused)
{
    mdnl_status st;
    if (!fused) { /* fused: no walk kernel, the tile states set by the binning */
        STAGE(MDNL_CUDA_STAGE_COUNT, 0);
        if ((st = nl_launch(sparse_walk_kernel<FULL, K>, (n + 127) / 128, 128, ctx->stream, *g, ctx->view,
                            (uint64_t *)ctx->sparse.stage.ptr, (unsigned long long *)ctx->counts.ptr, tiles, ntiles)) !=
            MDNL_OK)
            return st;
        STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    }
    STAGE(MDNL_CUDA_STAGE_FILL, 0);
    if ((st = nl_launch(fused ? sparse_rows_kernel<FULL, K, true> : sparse_rows_kernel<FULL, K, false>, ntiles,
                        SPARSE_TILE(fused), ctx->stream, *g, ctx->view,
                        fused ? nullptr : (const uint64_t *)ctx->sparse.stage.ptr,
                        fused ? nullptr : (const unsigned long long *)ctx->counts.ptr, tiles, limit,
                        (int64_t *)ctx->offsets.ptr, (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr,
                        nl_flag_ints(nl_dev_flags(ctx)), nl_flag_ints(ctx->d_host_flags))) != MDNL_OK)
        return st;
    /* the flags reach the read-back, and the device's are left zero (nl_flags_publish) */
    ctx->flags_on_host = ctx->flags_zero = ctx->d_host_flags != nullptr;
    STAGE(MDNL_CUDA_STAGE_FILL, 1);
    return MDNL_OK;
}

template <bool FULL>
static mdnl_status build_sparse_stage(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n,
                                      int64_t *npairs)
{
    const double cand = nl_cell_candidates(g); /* candidates per atom */
    mdnl_status st;
    /* K (a row's keys kept in the walk): 4 for the sparsest rows (graphene: 3
     * pairs, ~13 candidates per atom), else 8 */
    const int K = cand <= 16 ? 4 : 8;
    const size_t most = (size_t)ctx->stage_cap * (size_t)n;
    /* the walk inside the rows kernel where the frame before's order followed space */
    const bool fused = ctx->sparse.fused != 0;
    const int ntiles = (n + SPARSE_TILE(fused) - 1) / SPARSE_TILE(fused);
    nl_row_tiles tiles;
    if ((st = nl_row_tiles_reserve(ctx, ntiles, &tiles)) != MDNL_OK ||
        (!fused && (st = mdnl_dbuf_reserve(&ctx->sparse.stage, (size_t)K * n * sizeof(uint64_t), "neighbor stage")) !=
                       MDNL_OK) ||
        (st = mdnl_dbuf_reserve(&ctx->j, most * sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->d, most * sizeof(float), "neighbor distances")) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_BIN, 0);
    /* fused: the binning sets the rows kernel's tile states (else the walk kernel does) */
    if ((st = nl_bin_unstable(ctx, g, pos, n, true, fused ? &tiles : nullptr, fused ? ntiles : 0)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_BIN, 1);
    /* No synchronisation until the caller's last one: the output is sized
     * for stage_cap pairs an atom, and a CSR that outgrew it is detected
     * there (the pair count read back with the flags) and built again. */
    if ((st = K == 4 ? launch_sparse_stage<FULL, 4>(ctx, g, n, tiles, ntiles, (long long)most, fused)
                     : launch_sparse_stage<FULL, 8>(ctx, g, n, tiles, ntiles, (long long)most, fused)) != MDNL_OK)
        return st;
    ctx->sparse.last = fused ? 1 : 0;
    *npairs = 0; /* read back (sparse_stage_finish) */
    return MDNL_OK;
}

static mdnl_status sparse_stage_build(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                      int64_t *npairs)
{
    return full ? build_sparse_stage<true>(ctx, g, pos, n, npairs) : build_sparse_stage<false>(ctx, g, pos, n, npairs);
}

/* Builds on every geometry (the fallback of the paths that do not). */
static bool sparse_stage_fits(const mdnl_geom *) { return true; }

/* After the read-back: the pair count; the next build walks inside the rows
 * kernel where this frame's sample followed space (speed only: the CSR is the
 * same); a CSR that passed stage_cap pairs an atom (rows past it were not
 * written) is sized from the pair count and built again. */
static mdnl_status sparse_stage_finish(mdnl_cuda_ctx *ctx, const nl_flags *h, int n, int64_t *npairs, bool *again)
{
    *npairs = h->npairs;
    ctx->sparse.fused = nl_order_follows_space(h->inorder[0], h->inorder[1]);
    if (h->outgrown) {
        const int64_t per = *npairs / n + 1;
        ctx->retries++;
        ctx->stage_cap = (int)(per + per / 8 + 1 < INT32_MAX ? per + per / 8 + 1 : INT32_MAX);
        *again = true;
    }
    return MDNL_OK;
}

/* The least bytes of each stage (mdnl_cuda_ctx_stage_bytes): 8-byte staged
 * entries. */
static void sparse_stage_floor_bytes(const mdnl_cuda_ctx *ctx, const mdnl_geom *g, int n, int64_t npairs,
                                     double b[MDNL_CUDA_NSTAGES])
{
    const double na = (double)n, np = (double)npairs;
    const double starts = 4 * ((double)g->ncells + 1); /* the cells' starts */
    const double csr = 8 * (na + 1) + 8 * np;          /* offsets, j and d */
    /* the binning: positions in (16 bytes an atom); the cell list's view out (mdnl_cells_view: positions in
     * cell order, order and rank, 24 bytes an atom, and the cells' starts) */
    b[MDNL_CUDA_STAGE_BIN] = 16 * na + 24 * na + starts;
    if (ctx->sparse.last) { /* the rows kernel walks: cell-ordered positions, starts and ranks in, the CSR out */
        b[MDNL_CUDA_STAGE_FILL] = 16 * na + starts + 4 * na + csr;
    } else {
        /* the walk: positions and starts in, an 8-byte (j, d2) entry a pair and a count a row out */
        b[MDNL_CUDA_STAGE_COUNT] = 16 * na + starts + 8 * np + 8 * na;
        /* the rows: the staged entries, counts and ranks in, the CSR out */
        b[MDNL_CUDA_STAGE_FILL] = 8 * np + 8 * na + 4 * na + csr;
    }
}

static void sparse_stage_release(mdnl_cuda_ctx *ctx) { mdnl_dbuf_free(&ctx->sparse.stage); }

extern const nl_path nl_path_sparse_stage = {
    "sparse-stage",           sparse_stage_fits, true, sparse_stage_build, sparse_stage_finish,
    sparse_stage_floor_bytes, nullptr,           sparse_stage_release,
};

/* nlist_cell_sparse.cu — the cell-list paths for sparse rows (nlist_cuda.h):
 * one traversal that stages every row instead of a count pass and a fill.
 *   sparse-stage  (up to 32 candidates per atom) the first K hits of a row
 *                 kept sorted in registers, staged coalesced, copied straight
 *                 into the CSR; no host synchronisation before the build's
 *                 last one (an overflow seen there builds again).
 *   sparse-rows   (up to 100 candidates per atom) rows staged transposed,
 *                 scanned, then sorted in shared memory and written warp-
 *                 cooperatively by the rows kernel.
 * Both walk the unstable (counting-sort) cell list. */
#include "nlist_cuda_common.cuh"

/* sparse-rows' staged pass (one traversal instead of count + fill). Mapping: thread per sorted slot s; row order[s]'s k-th entry
 * goes to stage[k * n + s] while k < cap (a warp's stores of the same k
 * coalesce), its true length to counts[order[s]] and the longest row to
 * *maxlen, so that the host can grow cap and retry. */
template <bool FULL>
__global__ __launch_bounds__(128) void cell_stage_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                         uint64_t *__restrict__ stage, int cap,
                                                         unsigned long long *__restrict__ counts,
                                                         int *__restrict__ maxlen)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= c.natoms)
        return;
    const int i = c.order[s];
    const int n = c.natoms;
    long long k = 0;
    mdnl_for_each_pair(g, c, s, [&](int j, float d2, int s0, int s1, int s2) {
        if (FULL || mdnl_half_keep(i, j, s0, s1, s2)) {
            if (k < cap)
                stage[(size_t)k * n + s] = mdnl_row_key(j, __fsqrt_rn(d2));
            ++k;
        }
    });
    counts[i] = (unsigned long long)k;
    atomicMax(maxlen, k > INT32_MAX ? INT32_MAX : (int)k);
}


/* sparse-stage's staged pass: cell_stage_kernel's traversal (the merged
 * walk below), but the first K hits of a row are kept in registers as
 * (j, d2) keys, unsorted: a hit costs K predicated moves (its slot k is
 * dynamic; no local memory), which a warp pays on every candidate where any
 * of its lanes hits. After the walk the K keys are sorted once by a sorting
 * network (empty slots hold ~0, after every key) and d = sqrt(d2) is taken
 * of the kept ones: within a j, d2 >= 0 orders like d (sqrt is monotone;
 * two d2 with one d give identical keys), so the row is the one
 * mdnl_row_key sorts. The keys are stored once the walk is done, so that
 * the 32 threads of a warp store their q-th keys together (coalesced) and
 * a row of at most K is staged already sorted. Hits past K go to the stage
 * as they come (unsorted; the copy sorts such a row in place). K is 4 or 8
 * (registers: 4 leaves room for more warps per SM). Mapping: thread per
 * sorted slot s, as cell_stage_kernel; the longest row into *maxlen with
 * one atomic per warp at most. */

/* Ascending sort of one thread's K 64-bit keys (K a power of two), a
 * bitonic network unrolled over registers. */
template <int K>
__device__ __forceinline__ void thread_sort_keys(uint64_t (&x)[K])
{
#pragma unroll
    for (int k = 2; k <= K; k <<= 1)
#pragma unroll
        for (int jj = k >> 1; jj > 0; jj >>= 1)
#pragma unroll
            for (int e = 0; e < K; ++e) {
                const int p = e ^ jj;
                if (p > e) {
                    const uint64_t a = x[e], b = x[p];
                    const bool up = (e & k) == 0;
                    x[e] = (a < b) == up ? a : b;
                    x[p] = (a < b) == up ? b : a;
                }
            }
}

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
    const int lin = c.cell[i_sorted];
    const int cy = (lin / n2) % n1;
    const int cx = lin / (n2 * n1);
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

template <bool FULL, int K>
__global__ __launch_bounds__(128) void cell_stage_sorted_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                                uint64_t *__restrict__ stage, int cap,
                                                                unsigned long long *__restrict__ counts,
                                                                int *__restrict__ maxlen)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    const int n = c.natoms;
    int k = 0;
    if (s == 0) /* the scan's last term (the build does not clear counts for this path) */
        counts[n] = 0;
    if (s < n) {
        const int i = c.order[s];
        uint64_t r[K]; /* (j, d2) keys, unsorted; ~0 past the row */
#pragma unroll
        for (int q = 0; q < K; ++q)
            r[q] = ~0ull;
        walk_pairs_merged(g, c, s, [&](int j, float d2, int s0, int s1, int s2) {
            if (FULL || mdnl_half_keep(i, j, s0, s1, s2)) {
                const uint64_t x = (uint64_t)(uint32_t)j << 32 | __float_as_uint(d2);
#pragma unroll
                for (int q = 0; q < K; ++q)
                    if (q == k)
                        r[q] = x;
                if (k >= K && k < cap)
                    stage[(size_t)k * n + s] = mdnl_row_key(j, __fsqrt_rn(d2));
                ++k;
            }
        });
        thread_sort_keys<K>(r);
#pragma unroll
        for (int q = 0; q < K; ++q)
            if (q < k && q < cap)
                stage[(size_t)q * n + s] =
                    (r[q] & 0xffffffff00000000ull) | __float_as_uint(__fsqrt_rn(__uint_as_float((unsigned)r[q])));
        counts[i] = (unsigned long long)k;
    }
    const int m = (int)__reduce_max_sync(FULLMASK, (unsigned)k);
    if ((threadIdx.x & 31) == 0 && m > *(volatile int *)maxlen)
        atomicMax(maxlen, m);
}

/* sparse-stage's copy: thread per sorted slot s copies row order[s] from
 * the stage (stage[q * n + s]: a warp's loads of one q coalesce) straight
 * into the CSR; a row longer than K was staged partly unsorted and
 * is sorted there in place. No shared memory, no block scan. When the staged
 * pass overflowed its capacity (*maxlen > cap) nothing is written: the host
 * sees the longest row after its one synchronisation, grows the capacity and
 * builds again. Thread 0 also copies the pair count (offsets[n]) to
 * *npairs_out, beside the flags, so that the host reads them back in one
 * copy. */
template <int K>
__global__ __launch_bounds__(128) void stage_copy_kernel(const int *__restrict__ order, int n,
                                                         const uint64_t *__restrict__ stage, int cap,
                                                         const int *__restrict__ maxlen,
                                                         const int64_t *__restrict__ offsets,
                                                         int32_t *__restrict__ j_out, float *__restrict__ d_out,
                                                         long long *__restrict__ npairs_out)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s == 0)
        *npairs_out = offsets[n];
    if (s >= n || *maxlen > cap)
        return;
    const int i = order[s];
    const int64_t off = offsets[i];
    const int len = (int)(offsets[i + 1] - off);
    uint64_t r[K];
#pragma unroll
    for (int q = 0; q < K; ++q)
        if (q < len)
            r[q] = stage[(size_t)q * n + s];
#pragma unroll
    for (int q = 0; q < K; ++q)
        if (q < len) {
            j_out[off + q] = (int32_t)(r[q] >> 32);
            d_out[off + q] = __uint_as_float((unsigned)r[q]);
        }
    if (len > K) {
        for (int q = K; q < len; ++q) {
            const uint64_t key = stage[(size_t)q * n + s];
            j_out[off + q] = (int32_t)(key >> 32);
            d_out[off + q] = __uint_as_float((unsigned)key);
        }
        sort_row(global_row{j_out + off, d_out + off}, len);
    }
}


template <bool FULL>
static mdnl_status build_sparse_stage(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n,
                                      int64_t *npairs)
{
    const double cand = nl_cell_candidates(g); /* candidates per atom */
    mdnl_status st;
    STAGE(MDNL_CUDA_STAGE_BIN, 0);
    if ((st = nl_bin_unstable(ctx, g, pos, n)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_BIN, 1);
    /* No synchronisation until the caller's last one: the output is
     * sized for every row at the stage capacity, and a staged pass that
     * overflowed it is detected there (the longest row, read back with
     * the pair count) and built again with a larger capacity. */
    int *maxlen = (int *)ctx->flags.ptr + 1;
    const int cap = ctx->stage_cap;
    const size_t most = (size_t)cap * (size_t)n;
    if ((st = mdnl_dbuf_reserve(&ctx->stage, most * sizeof(uint64_t), "neighbor stage")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->j, most * sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->d, most * sizeof(float), "neighbor distances")) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    /* K (rows kept sorted in registers): 4 for the sparsest rows
     * (graphene: 3 pairs, ~13 candidates per atom), else 8 */
    const int K = cand <= 16 ? 4 : 8;
    if (K == 4)
        cell_stage_sorted_kernel<FULL, 4><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
            *g, ctx->view, (uint64_t *)ctx->stage.ptr, cap, (unsigned long long *)ctx->counts.ptr, maxlen);
    else
        cell_stage_sorted_kernel<FULL, 8><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
            *g, ctx->view, (uint64_t *)ctx->stage.ptr, cap, (unsigned long long *)ctx->counts.ptr, maxlen);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    int64_t *offsets = (int64_t *)ctx->offsets.ptr;
    if ((st = nl_scan_counts(ctx, n)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_SORT, 0);
    if (K == 4)
        stage_copy_kernel<4><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
            ctx->view.order, n, (const uint64_t *)ctx->stage.ptr, cap, maxlen, offsets, (int32_t *)ctx->j.ptr,
            (float *)ctx->d.ptr, (long long *)((int *)ctx->flags.ptr + FLAG_NPAIRS));
    else
        stage_copy_kernel<8><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
            ctx->view.order, n, (const uint64_t *)ctx->stage.ptr, cap, maxlen, offsets, (int32_t *)ctx->j.ptr,
            (float *)ctx->d.ptr, (long long *)((int *)ctx->flags.ptr + FLAG_NPAIRS));
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_SORT, 1);
    ctx->deferred = 1; /* the caller reads flags (pair count included) back */
    *npairs = 0;
    return MDNL_OK;
}

template <bool FULL>
static mdnl_status build_sparse_rows(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n,
                                     int64_t *npairs)
{
    mdnl_status st;
    STAGE(MDNL_CUDA_STAGE_BIN, 0);
    if ((st = nl_bin_unstable(ctx, g, pos, n)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_BIN, 1);
    int *maxlen = (int *)ctx->flags.ptr + 1;
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    for (;;) {
        const int cap = ctx->stage_cap;
        if ((st = mdnl_dbuf_reserve(&ctx->stage, (size_t)cap * (size_t)n * sizeof(uint64_t), "neighbor stage")) !=
            MDNL_OK)
            return st;
        MDNL_CUDA_CHECK(cudaMemsetAsync(maxlen, 0, sizeof(int), ctx->stream));
        cell_stage_kernel<FULL><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
            *g, ctx->view, (uint64_t *)ctx->stage.ptr, cap, (unsigned long long *)ctx->counts.ptr, maxlen);
        MDNL_CUDA_LAUNCHED(ctx->stream);
        MDNL_CUDA_CHECK(
            cudaMemcpyAsync(ctx->h_small + 1, maxlen, sizeof(int), cudaMemcpyDeviceToHost, ctx->stream));
        MDNL_CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
        int longest;
        memcpy(&longest, ctx->h_small + 1, sizeof longest);
        if (longest <= cap)
            break;
        ctx->retries++;
        ctx->stage_cap = longest + longest / 8 + 1;
    }
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    if ((st = nl_scan_and_size(ctx, n, npairs)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_SORT, 0);
    if ((st = launch_rows<3, FULL>(ctx, g, n, *npairs, ctx->stage_cap, 0)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SORT, 1);
    return MDNL_OK;
}

mdnl_status nl_build_sparse_stage(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                  int64_t *npairs)
{
    return full ? build_sparse_stage<true>(ctx, g, pos, n, npairs) : build_sparse_stage<false>(ctx, g, pos, n, npairs);
}

mdnl_status nl_build_sparse_rows(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                 int64_t *npairs)
{
    return full ? build_sparse_rows<true>(ctx, g, pos, n, npairs) : build_sparse_rows<false>(ctx, g, pos, n, npairs);
}

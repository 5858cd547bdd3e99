/* nlist_brute.cu — the seed's brute-force neighbor lists (brute-atomic,
 * brute-noatomic; nlist_cuda.h), the technique comparison of atomic row
 * cursors against per-thread rows staged without atomics. */
#include "nlist_cuda_common.cuh"

/* ------------------------------------------------------------------------ */
/* Sort and write the brute-force rows. Mapping: thread per row i. A
 * block-wide exclusive scan of the row lengths lays the block's rows out
 * back to back in shared memory; when they fit, each thread puts its row
 * there and sorts it, and then each warp writes its 32 rows to the CSR
 * cooperatively, lane q taking entries q, q + 32, ... of a row (coalesced).
 * When they do not fit, each thread writes its row straight into the CSR
 * and sorts it there.
 *   IN_PLACE false (brute-noatomic compaction): the row comes from the
 *            transposed stage, chunk by chunk;
 *   IN_PLACE true (brute-atomic row sort): from the CSR itself; the block's
 *            rows are one contiguous CSR range, loaded cooperatively. */
#define ROWS_T 128

template <bool IN_PLACE>
__global__ __launch_bounds__(ROWS_T) void rows_kernel(int n, const uint64_t *__restrict__ stage, int cap,
                                                      const unsigned *__restrict__ ccount, int nchunk,
                                                      const int64_t *__restrict__ offsets, int32_t *__restrict__ j_out,
                                                      float *__restrict__ d_out, long long smem_keys, int *err)
{
    extern __shared__ uint64_t keys[];
    typedef cub::BlockScan<long long, ROWS_T> Scan;
    __shared__ typename Scan::TempStorage scan_tmp;
    const int s = blockIdx.x * ROWS_T + threadIdx.x;
    const int i = s < n ? s : -1;
    long long off = 0, len = 0;
    if (i >= 0) {
        off = offsets[i];
        len = offsets[i + 1] - off;
    }
    long long lo = 0, tot = 0;
    Scan(scan_tmp).ExclusiveSum(len, lo, tot);
    const bool in_smem = tot <= smem_keys;

    if (IN_PLACE) {
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
        for (int ch = 0; ch < nchunk; ++ch) {
            const uint64_t *part = stage + (size_t)ch * cap * n + i;
            const unsigned m = ccount[(size_t)ch * n + i];
            for (unsigned q = 0; q < m && q < (unsigned)cap; ++q)
                emit(part[(size_t)q * n]);
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

/* Shared-memory keys per block for the rows kernel, from the average row. */
static long long rows_smem_keys(const mdnl_cuda_ctx *ctx, int n, int64_t npairs)
{
    long long budget = ctx->smem_budget >= 0 ? ctx->smem_budget : 96 * 1024;
    if (budget > ctx->smem_optin - 1024)
        budget = ctx->smem_optin - 1024;
    const double avg = n > 0 ? (double)npairs / n : 0;
    long long want = (long long)(avg * ROWS_T * 1.25) + 256;
    long long keys = budget / 8;
    return want < keys ? want : keys;
}

template <bool IN_PLACE>
static mdnl_status launch_rows(mdnl_cuda_ctx *ctx, int n, int64_t npairs, int cap, int nchunk)
{
    const long long keys = rows_smem_keys(ctx, n, npairs);
    const size_t smem = (size_t)keys * sizeof(uint64_t);
    MDNL_CUDA_CHECK(cudaFuncSetAttribute(rows_kernel<IN_PLACE>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)smem));
    rows_kernel<IN_PLACE><<<(n + ROWS_T - 1) / ROWS_T, ROWS_T, smem, ctx->stream>>>(
        n, (const uint64_t *)ctx->brute.stage.ptr, cap, (const unsigned *)ctx->brute.ccount.ptr, nchunk,
        (const int64_t *)ctx->offsets.ptr, (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr, keys,
        &nl_dev_flags(ctx)->mismatch);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    return MDNL_OK;
}

/* ------------------------------------------------------------------------ */
/* Image shifts for the brute-force kernels: .xyz = S·h (mdnl_shift_vector,
 * device arithmetic), .w = bits of the lexicographic sign of S (-1, 0, 1). */

/* Thread per image shift m in the box [-image_max, image_max]^3. */
__global__ void images_kernel(const __grid_constant__ mdnl_geom g, int m0, int m1, int m2, float4 *img)
{
    const int n1 = 2 * m1 + 1, n2 = 2 * m2 + 1;
    const int total = (2 * m0 + 1) * n1 * n2;
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= total)
        return;
    int s0 = m / (n1 * n2) - m0, s1 = (m / n2) % n1 - m1, s2 = m % n2 - m2;
    float v[3];
    mdnl_shift_vector(&g, s0, s1, s2, v);
    int sign = s0 != 0 ? (s0 > 0 ? 1 : -1) : s1 != 0 ? (s1 > 0 ? 1 : -1) : s2 != 0 ? (s2 > 0 ? 1 : -1) : 0;
    img[m] = make_float4(v[0], v[1], v[2], __int_as_float(sign));
}

#define BRUTE_T 256

/* brute-atomic, count (FILL=false) or fill (FILL=true) pass.
 * Mapping: thread per atom a (original order) and per chunk (blockIdx.y) of
 * its partner window. Thread a visits the partners b = (a + o) mod N for o in
 * 1..floor((N-1)/2), plus o = N/2 for a < N/2 when N is even, so that every
 * unordered pair is seen exactly once and every thread does N/2 candidates
 * (the classic j > i loop does N - i); the window is cut into gridDim.y
 * chunks of `chunk` offsets so that a small N still fills the GPU. A block
 * stages its partners through shared-memory tiles of BRUTE_T positions; each
 * partner is tried at every image shift. A kept pair is appended to both
 * rows (full) or to the row of the smaller index (half) through 64-bit
 * atomic row counters; (b, a, -S) has bit for bit the distance of (a, b, S).
 * Self images (a, a, S != 0) come from thread a in chunk 0. */
template <bool FILL, bool FULL>
__global__ __launch_bounds__(BRUTE_T) void brute_atomic_kernel(const float4 *__restrict__ pos, int n, int chunk,
                                                               const float4 *__restrict__ img, int nimg, float cutoff2,
                                                               unsigned long long *__restrict__ ctr,
                                                               const int64_t *__restrict__ offsets,
                                                               int32_t *__restrict__ j_out, float *__restrict__ d_out)
{
    __shared__ float4 tile[BRUTE_T];
    const int a0 = blockIdx.x * BRUTE_T;
    const int a = a0 + threadIdx.x;
    const bool active = a < n;
    const float4 pa = active ? pos[a] : make_float4(0, 0, 0, 0);
    auto emit = [&](int row, int other, float d2) {
        unsigned long long k = atomicAdd(&ctr[row], 1ull);
        if (FILL) {
            const int64_t at = offsets[row] + (int64_t)k;
            if (at < offsets[row + 1]) { /* never past the row's end */
                j_out[at] = other;
                d_out[at] = __fsqrt_rn(d2);
            }
        }
    };
    if (active && blockIdx.y == 0) {
        for (int m = 0; m < nimg; ++m) {
            const float4 v4 = img[m];
            const int sign = __float_as_int(v4.w);
            if (sign == 0 || (!FULL && sign < 0))
                continue;
            const float v[3] = {v4.x, v4.y, v4.z};
            const float d2 = mdnl_pair_d2(pa.x, pa.y, pa.z, pa.x, pa.y, pa.z, v);
            if (d2 < cutoff2)
                emit(a, a, d2);
        }
    }
    const int half = (n - 1) / 2;
    const bool even = (n % 2) == 0;
    const int olo = 1 + (int)blockIdx.y * chunk;
    int ohi = olo + chunk - 1;
    if (ohi > n / 2)
        ohi = n / 2;
    /* unwrapped partner positions p = a0 + olo + q, q in [0, span) */
    const int span = ohi - olo + BRUTE_T;
    for (int base = 0; base < span; base += BRUTE_T) {
        __syncthreads();
        if (base + (int)threadIdx.x < span) {
            const int b = (int)(((int64_t)a0 + olo + base + threadIdx.x) % n);
            float4 p = pos[b];
            p.w = __int_as_float(b);
            tile[threadIdx.x] = p;
        }
        __syncthreads();
        if (!active)
            continue;
        const int cnt = span - base < BRUTE_T ? span - base : BRUTE_T;
        for (int t = 0; t < cnt; ++t) {
            const int o = a0 + olo + base + t - a;
            if (o < olo || o > ohi)
                continue;
            if (!(o <= half || (even && o == n / 2 && a < n / 2)))
                continue;
            const float4 pb = tile[t];
            const int b = __float_as_int(pb.w);
            for (int m = 0; m < nimg; ++m) {
                const float4 v4 = img[m];
                const float v[3] = {v4.x, v4.y, v4.z};
                const float d2 = mdnl_pair_d2(pa.x, pa.y, pa.z, pb.x, pb.y, pb.z, v);
                if (d2 < cutoff2) {
                    if (FULL) {
                        emit(a, b, d2);
                        emit(b, a, d2);
                    } else if (a < b) {
                        emit(a, b, d2);
                    } else {
                        emit(b, a, d2);
                    }
                }
            }
        }
    }
}

/* brute-noatomic staged pass.
 * Mapping: thread per atom i (original order) and per chunk c = blockIdx.y
 * of the atoms j (chunks of `chunk` atoms, so that a small N still fills the
 * GPU); the chunk's atoms stream through shared-memory tiles of BRUTE_T
 * positions and each j is tried at every image shift. Thread (i, c) writes
 * only its own part of row i: the k-th entry goes to
 * stage[(c * cap + k) * n + i] while k < cap, so the 32 threads of a warp
 * storing their k-th entries write 256 contiguous bytes, and its count to
 * ccount[c * n + i]; the longest part goes to *maxlen, so that the host can
 * grow cap and retry. No atomics touch the list. */
template <bool FULL>
__global__ __launch_bounds__(BRUTE_T) void brute_noatomic_kernel(const float4 *__restrict__ pos, int n, int chunk,
                                                                 const float4 *__restrict__ img, int nimg,
                                                                 float cutoff2, uint64_t *__restrict__ stage, int cap,
                                                                 unsigned *__restrict__ ccount, int *__restrict__ maxlen)
{
    __shared__ float4 tile[BRUTE_T];
    const int i = blockIdx.x * BRUTE_T + threadIdx.x;
    const bool active = i < n;
    const float4 pi = active ? pos[i] : make_float4(0, 0, 0, 0);
    const int jlo = blockIdx.y * chunk;
    const int jhi = jlo + chunk < n ? jlo + chunk : n;
    uint64_t *my = stage + (size_t)blockIdx.y * cap * n + i;
    long long k = 0;
    for (int base = jlo; base < jhi; base += BRUTE_T) {
        __syncthreads();
        if (base + (int)threadIdx.x < jhi)
            tile[threadIdx.x] = pos[base + threadIdx.x];
        __syncthreads();
        if (!active)
            continue;
        const int cnt = jhi - base < BRUTE_T ? jhi - base : BRUTE_T;
        /* a half list keeps j >= i only: skip whole tiles below i */
        if (!FULL && base + cnt - 1 < i)
            continue;
        for (int t = 0; t < cnt; ++t) {
            const int j = base + t;
            if (!FULL && j < i)
                continue;
            const float4 pj = tile[t];
            for (int m = 0; m < nimg; ++m) {
                const float4 v4 = img[m];
                const int sign = __float_as_int(v4.w);
                if (j == i && (sign == 0 || (!FULL && sign < 0)))
                    continue;
                const float v[3] = {v4.x, v4.y, v4.z};
                const float d2 = mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, v);
                if (d2 < cutoff2) {
                    if (k < cap)
                        my[(size_t)k * n] = mdnl_row_key(j, __fsqrt_rn(d2));
                    ++k;
                }
            }
        }
    }
    if (active) {
        ccount[(size_t)blockIdx.y * n + i] = (unsigned)k;
        atomicMax(maxlen, k > INT32_MAX ? INT32_MAX : (int)k);
    }
}

/* Mapping: thread per row i; sums its per-chunk counts. */
__global__ void sum_chunks_kernel(const unsigned *__restrict__ ccount, int n, int nchunk,
                                  unsigned long long *__restrict__ counts)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned long long t = 0;
    for (int c = 0; c < nchunk; ++c)
        t += ccount[(size_t)c * n + i];
    counts[i] = t;
}


/* Chunks of the partner range per atom, so that the brute-force grids have
 * about 8 blocks per multiprocessor (sm_count of them) even for small N,
 * with at least 512 partners per chunk. */
static int brute_chunks(int sm_count, int n, int partners)
{
    const int bx = (n + BRUTE_T - 1) / BRUTE_T;
    int c = (sm_count * 8 + bx - 1) / bx;
    const int most = partners / 512 > 1 ? partners / 512 : 1;
    if (c > most)
        c = most;
    if (c > 65535)
        c = 65535;
    return c < 1 ? 1 : c;
}

static mdnl_status upload_images(mdnl_cuda_ctx *ctx, const mdnl_geom *g, int *nimg)
{
    const int m0 = g->pbc[0] ? g->image_max[0] : 0;
    const int m1 = g->pbc[1] ? g->image_max[1] : 0;
    const int m2 = g->pbc[2] ? g->image_max[2] : 0;
    const int total = (2 * m0 + 1) * (2 * m1 + 1) * (2 * m2 + 1);
    mdnl_status st = mdnl_dbuf_reserve(&ctx->brute.images, (size_t)total * sizeof(float4), "image shifts");
    if (st != MDNL_OK)
        return st;
    images_kernel<<<(total + 127) / 128, 128, 0, ctx->stream>>>(*g, m0, m1, m2, (float4 *)ctx->brute.images.ptr);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    *nimg = total;
    return MDNL_OK;
}

template <bool FULL>
static mdnl_status build_brute_atomic(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n,
                                      int64_t *npairs)
{
    mdnl_status st;
    int nimg = 0;
    if ((st = upload_images(ctx, g, &nimg)) != MDNL_OK)
        return st;
    unsigned long long *ctr = (unsigned long long *)ctx->counts.ptr;
    const int nchunk = brute_chunks(ctx->sm_count, n, n / 2);
    const int chunk = (n / 2 + nchunk - 1) / nchunk > 0 ? (n / 2 + nchunk - 1) / nchunk : 1;
    const dim3 blocks((n + BRUTE_T - 1) / BRUTE_T, nchunk);
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    brute_atomic_kernel<false, FULL><<<blocks, BRUTE_T, 0, ctx->stream>>>(pos, n, chunk, (const float4 *)ctx->brute.images.ptr,
                                                                          nimg, g->cutoff2, ctr, nullptr, nullptr,
                                                                          nullptr);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    if ((st = nl_scan_and_size(ctx, n, npairs)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_FILL, 0);
    /* the counters become the rows' fill cursors */
    MDNL_CUDA_CHECK(cudaMemsetAsync(ctr, 0, (size_t)(n + 1) * sizeof *ctr, ctx->stream));
    brute_atomic_kernel<true, FULL><<<blocks, BRUTE_T, 0, ctx->stream>>>(
        pos, n, chunk, (const float4 *)ctx->brute.images.ptr, nimg, g->cutoff2, ctr, (const int64_t *)ctx->offsets.ptr,
        (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_FILL, 1);
    STAGE(MDNL_CUDA_STAGE_SORT, 0);
    if ((st = launch_rows<true>(ctx, n, *npairs, 0, 0)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SORT, 1);
    return MDNL_OK;
}

template <bool FULL>
static mdnl_status build_brute_noatomic(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n,
                                        int64_t *npairs)
{
    mdnl_status st;
    int nimg = 0;
    if ((st = upload_images(ctx, g, &nimg)) != MDNL_OK)
        return st;
    int *maxlen = &nl_dev_flags(ctx)->longest_row;
    const int nchunk = brute_chunks(ctx->sm_count, n, n);
    const int chunk = (n + nchunk - 1) / nchunk;
    if ((st = mdnl_dbuf_reserve(&ctx->brute.ccount, (size_t)nchunk * n * sizeof(unsigned), "chunk counts")) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    for (;;) {
        const int cap = ctx->stage_cap;
        if ((st = mdnl_dbuf_reserve(&ctx->brute.stage, (size_t)nchunk * cap * (size_t)n * sizeof(uint64_t),
                                    "neighbor stage")) != MDNL_OK)
            return st;
        MDNL_CUDA_CHECK(cudaMemsetAsync(maxlen, 0, sizeof(int), ctx->stream));
        brute_noatomic_kernel<FULL><<<dim3((n + BRUTE_T - 1) / BRUTE_T, nchunk), BRUTE_T, 0, ctx->stream>>>(
            pos, n, chunk, (const float4 *)ctx->brute.images.ptr, nimg, g->cutoff2, (uint64_t *)ctx->brute.stage.ptr, cap,
            (unsigned *)ctx->brute.ccount.ptr, maxlen);
        MDNL_CUDA_LAUNCHED(ctx->stream);
        MDNL_CUDA_CHECK(cudaMemcpyAsync(&ctx->h_rb->longest_row, maxlen, sizeof(int), cudaMemcpyDeviceToHost,
                                        ctx->stream));
        MDNL_CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
        const int longest = ctx->h_rb->longest_row;
        if (longest <= cap)
            break;
        /* Overflow: rows were counted exactly but not all stored. Grow to
         * the longest row (plus a margin for the next frames) and redo. */
        ctx->retries++;
        ctx->stage_cap = longest + longest / 8 + 1;
    }
    sum_chunks_kernel<<<(n + 255) / 256, 256, 0, ctx->stream>>>((const unsigned *)ctx->brute.ccount.ptr, n, nchunk,
                                                                (unsigned long long *)ctx->counts.ptr);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    if ((st = nl_scan_and_size(ctx, n, npairs)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_SORT, 0);
    if ((st = launch_rows<false>(ctx, n, *npairs, ctx->stage_cap, nchunk)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SORT, 1);
    return MDNL_OK;
}


static mdnl_status brute_atomic_build(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                      int64_t *npairs)
{
    return full ? build_brute_atomic<true>(ctx, g, pos, n, npairs) : build_brute_atomic<false>(ctx, g, pos, n, npairs);
}

static mdnl_status brute_noatomic_build(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                        int64_t *npairs)
{
    return full ? build_brute_noatomic<true>(ctx, g, pos, n, npairs)
                : build_brute_noatomic<false>(ctx, g, pos, n, npairs);
}

static bool brute_fits(const mdnl_geom *) { return true; }

static void brute_release(mdnl_cuda_ctx *ctx)
{
    mdnl_dbuf_free(&ctx->brute.images);
    mdnl_dbuf_free(&ctx->brute.stage);
    mdnl_dbuf_free(&ctx->brute.ccount);
}

/* Both share nl_brute_state; releasing it twice is harmless (mdnl_dbuf_free of a freed buffer is a no-op). */
extern const nl_path nl_path_brute_atomic = {
    "brute-atomic", brute_fits, false, brute_atomic_build, nullptr, nullptr, nullptr, brute_release,
};
extern const nl_path nl_path_brute_noatomic = {
    "brute-noatomic", brute_fits, false, brute_noatomic_build, nullptr, nullptr, nullptr, brute_release,
};

/* nlist_cell_dense_tiles.cu — dense-tiles and dense-rows, the cell-list
 * paths for dense rows where dense-walk does not fit or its 64-key slab rows
 * would be too short for the mean row (nlist_cuda.h).
 *   dense-tiles  a block per tile of cells stages the tile's stencil region
 *                in shared memory, sorts it once by original index, and its
 *                atoms walk the sorted candidates writing hits straight into
 *                their rows, already in order.
 *   dense-rows   (where a tile would meet a cell twice) the stable cell list,
 *                a thread-per-atom count pass, scan, and a warp-per-atom fill
 *                that sorts each row in registers; the rows kernel's fill
 *                when the stencil has more than 32 columns. */
#include "nlist_cuda_common.cuh"

/* Cell-list count pass.
 * Mapping: thread per sorted slot s (cell order, so a warp's atoms share
 * cells and their candidate loads share cache lines); counts[order[s]]. */
template <bool FULL>
__global__ __launch_bounds__(128) void cell_count_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                         unsigned long long *__restrict__ counts,
                                                         int *__restrict__ maxlen)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long k = 0;
    if (s < c.natoms) {
        const int i = c.order[s];
        mdnl_for_each_pair(g, c, s, [&](int j, float d2, int s0, int s1, int s2) {
            if (FULL || mdnl_half_keep(i, j, s0, s1, s2))
                ++k;
        });
        counts[i] = k;
    }
    /* the longest row (the warp fill sizes its sort from it) */
    const unsigned m = __reduce_max_sync(0xffffffffu, k > INT32_MAX ? (unsigned)INT32_MAX : (unsigned)k);
    if ((threadIdx.x & 31) == 0 && (int)m > *(volatile int *)maxlen)
        atomicMax(maxlen, (int)m);
}

/* ------------------------------------------------------------------------ */
/* dense-rows' warp fill: a warp per atom (sorted slot s, so consecutive warps
 * walk neighbouring atoms and share candidate cache lines).
 *
 * The warp first lists atom s's candidate ranges (one per stencil column and
 * image shift, contiguous slots [kb, kb + len) of the cell order, as in
 * mdnl_for_each_pair) with range r held by lane r, flattened back to back;
 * then the 32 lanes take 32 consecutive flat candidates per step, so short
 * ranges do not leave lanes idle. Hits are compacted into a per-warp shared
 * buffer of CAP keys, bitonic-sorted in registers (CAP / 32 keys per lane)
 * and written with coalesced stores. A row longer than CAP is written unsorted straight
 * into the CSR and sorted there (slow, rare, same bytes). At most 32 ranges:
 * the host uses this fill only when (2 st0 + 1)(2 st1 + 1)(2 st2 + 1)
 * <= 32, which bounds the ranges (each z segment is at least one offset). */
#define WARP_T 128

/* Calls f(hit, j, d2) once per lane per step of 32 flat candidates, with the
 * whole warp converged (hit false for lanes without a kept pair). */
template <bool FULL, class F>
__device__ __forceinline__ void warp_walk(const mdnl_geom &g, const mdnl_cells_view &c, int s, int i, int lane, F &&f)
{
    const float4 pi = c.pos[s];
    const warp_ranges w = warp_list_ranges(g, c, mdnl_cell_linear(g, pi.x, pi.y, pi.z), lane);
    int cr = 0; /* first range that may intersect the step (uniform) */
    for (int base = 0; base < w.total; base += 32) {
        const int fl = base + lane;
        while (__shfl_sync(FULLMASK, w.fe, cr) <= base)
            ++cr;
        int r = -1, k = 0;
        for (int q = cr; q < w.nr; ++q) {
            const int fs = __shfl_sync(FULLMASK, w.fs, q);
            if (fs >= base + 32)
                break;
            const int fe = __shfl_sync(FULLMASK, w.fe, q);
            const int kb = __shfl_sync(FULLMASK, w.kb, q);
            if (fl >= fs && fl < fe) {
                r = q;
                k = kb + (fl - fs);
            }
        }
        const int src = r < 0 ? 0 : r;
        const float vx = __shfl_sync(FULLMASK, w.vx, src);
        const float vy = __shfl_sync(FULLMASK, w.vy, src);
        const float vz = __shfl_sync(FULLMASK, w.vz, src);
        const int zero = __shfl_sync(FULLMASK, w.zero, src);
        const int lexpos = __shfl_sync(FULLMASK, w.lexpos, src);
        bool hit = false;
        int j = 0;
        float d2 = 0.f;
        if (r >= 0 && !(zero && k == s)) {
            const float4 pj = c.pos[k];
            const float v[3] = {vx, vy, vz};
            d2 = mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, v);
            j = __float_as_int(pj.w);
            hit = d2 < g.cutoff2 && (FULL || (i != j ? i < j : lexpos != 0));
        }
        f(hit, j, d2);
    }
}

__device__ __forceinline__ void cas_(uint64_t &a, uint64_t &b, bool asc)
{
    const uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
    a = asc ? lo : hi;
    b = asc ? hi : lo;
}

/* Bitonic sort, ascending, of the warp's 32 * KPL keys; element e = r * 32 +
 * lane is x[r]. */
template <int KPL>
__device__ __forceinline__ void warp_bitonic(uint64_t (&x)[KPL], int lane)
{
    constexpr int N = 32 * KPL;
#pragma unroll
    for (int k = 2; k <= N; k <<= 1) {
#pragma unroll
        for (int jj = k >> 1; jj > 0; jj >>= 1) {
            if (jj >= 32) {
                const int jr = jj >> 5;
#pragma unroll
                for (int r = 0; r < KPL; ++r)
                    if ((r & jr) == 0)
                        cas_(x[r], x[r | jr], ((r * 32 + lane) & k) == 0);
            } else {
#pragma unroll
                for (int r = 0; r < KPL; ++r) {
                    const uint64_t y = __shfl_xor_sync(FULLMASK, x[r], jj);
                    const bool asc = ((r * 32 + lane) & k) == 0;
                    const bool lower = (lane & jj) == 0;
                    const uint64_t lo = x[r] < y ? x[r] : y, hi = x[r] < y ? y : x[r];
                    x[r] = (asc == lower) ? lo : hi;
                }
            }
        }
    }
}

/* Fill pass, warp per sorted slot s (row i = order[s], its length known from
 * the count pass). */
template <bool FULL, int KPL>
__global__ __launch_bounds__(WARP_T) void cell_warp_fill_kernel(const __grid_constant__ mdnl_geom g,
                                                                mdnl_cells_view c,
                                                                const int64_t *__restrict__ offsets,
                                                                int32_t *__restrict__ j_out, float *__restrict__ d_out,
                                                                int *err)
{
    constexpr int CAP = 32 * KPL;
    __shared__ uint64_t buf_all[WARP_T / 32][CAP];
    const int s = (int)((blockIdx.x * (unsigned)WARP_T + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (s >= c.natoms)
        return;
    uint64_t *buf = buf_all[threadIdx.x >> 5];
    const int i = c.order[s];
    const int64_t off = offsets[i];
    const int64_t len = offsets[i + 1] - off;
    const bool fits = len <= CAP; /* uniform */
    int64_t cnt = 0;
    warp_walk<FULL>(g, c, s, i, lane, [&](bool hit, int j, float d2) {
        const unsigned m = __ballot_sync(FULLMASK, hit);
        if (hit) {
            const int64_t at = cnt + __popc(m & ((1u << lane) - 1u));
            const float d = __fsqrt_rn(d2);
            if (fits) {
                if (at < CAP)
                    buf[at] = mdnl_row_key(j, d);
            } else if (at < len) {
                j_out[off + at] = j;
                d_out[off + at] = d;
            }
        }
        cnt += __popc(m);
    });
    if (cnt != len && lane == 0)
        atomicOr(err, 1);
    if (!fits) {
        __syncwarp();
        if (lane == 0)
            sort_row(global_row{j_out + off, d_out + off}, len < cnt ? len : cnt);
        return;
    }
    __syncwarp();
    uint64_t x[KPL];
#pragma unroll
    for (int r = 0; r < KPL; ++r) {
        const int e = r * 32 + lane;
        x[r] = e < len && e < cnt ? buf[e] : ~0ull;
    }
    warp_bitonic<KPL>(x, lane);
#pragma unroll
    for (int r = 0; r < KPL; ++r) {
        const int e = r * 32 + lane;
        if (e < len) {
            j_out[off + e] = (int32_t)(x[r] >> 32);
            d_out[off + e] = __uint_as_float((unsigned)x[r]);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* dense-tiles: tiles of cells, candidates staged and sorted once per tile.
 *
 * Mapping: a block of TILE_T threads per tile of T0 x T1 x T2 cells. The
 * tile's region (its cells widened by the stencil on every axis, clipped on
 * open axes) is a set of (cell, image shift) pieces; the block stages every
 * candidate of the region (position + shift code) in shared memory, once
 * for all the tile's atoms. The host uses this path only when the region
 * holds each cell at most once (T_k + 2 stencil_k <= ncell_k on periodic
 * axes), so each atom appears at most once among the candidates and atom i
 * itself only with shift 0: a row is then sorted by mdnl_row_key exactly
 * when its candidates are sorted by original index. The fill kernel sorts
 * the region once (bitonic, 64-bit keys index << 32 | staging slot, in shared
 * memory); then G lanes per atom walk the sorted candidates G at a time,
 * test d2 < cutoff2 (mdnl_pair_d2, the same operands as mdnl_for_each_pair;
 * with a zero shift the + 0 is skipped, which changes at most the sign of a
 * zero before it is squared), and compact hits with a ballot straight into
 * the CSR row, already in order: no per-row sort. Every atom of the tile
 * sees a superset of its own stencil; pairs beyond the cutoff fail the same
 * test, pairs within it are the cell list's (the grid's cells are wider than
 * the cutoff).
 *
 * Binning for this path is the atomic counting sort of nl_bin_unstable (a
 * one-pass scan of the cell counts between bin and scatter): within a cell the order
 * depends on atomics, which these kernels do not care about. The stable
 * cell list of cells_cuda.cuh (energy, rdf, dense-rows) is not touched. */
#define TILE_T 128
#define TILE_MAXCOL 64 /* region columns per tile, one thread each (<= TILE_T) */
#define TILE_MAXSEG (TILE_MAXCOL * 5)

struct tile_args {
    int t[3];  /* tile size in cells */
    int nt[3]; /* tiles per axis */
};

/* Per-block tables: segment s covers flat candidates [fs[s], fs[s+1]) from
 * cell-order slots kb[s].. with shift code code[s]. Segments 0..ncol-1 are
 * the tile's own cells (one z run per tile column, empty for the others), so
 * flat [0, natoms) are the tile's atoms. */
struct tile_fixed {
    int kb[TILE_MAXSEG];
    int fs[TILE_MAXSEG];
    unsigned char code[TILE_MAXSEG];
    float4 vtab[27];
    int ncol, nseg, natoms, total, any_shift, lo, hi;
    union {
        typename cub::BlockScan<int, TILE_T>::TempStorage scan;
        typename cub::BlockReduce<int, TILE_T>::TempStorage reduce;
    };
};

/* Lays out block b's region (the whole block calls it). */
__device__ __forceinline__ void tile_setup(const mdnl_geom &g, const int *__restrict__ start, const tile_args &ta,
                                           int b, tile_fixed &tf)
{
    const int tid = threadIdx.x;
    const int n0 = g.ncell[0], n1 = g.ncell[1], n2 = g.ncell[2];
    const int bz = b % ta.nt[2], by = (b / ta.nt[2]) % ta.nt[1], bx = b / (ta.nt[2] * ta.nt[1]);
    const int tx0 = bx * ta.t[0], ty0 = by * ta.t[1], tz0 = bz * ta.t[2];
    const int tx1 = min(tx0 + ta.t[0], n0), ty1 = min(ty0 + ta.t[1], n1), tz1 = min(tz0 + ta.t[2], n2);
    int xlo = tx0 - g.stencil[0], xhi = tx1 - 1 + g.stencil[0];
    int ylo = ty0 - g.stencil[1], yhi = ty1 - 1 + g.stencil[1];
    int zlo = tz0 - g.stencil[2], zhi = tz1 - 1 + g.stencil[2];
    if (!g.pbc[0]) {
        xlo = max(xlo, 0);
        xhi = min(xhi, n0 - 1);
    }
    if (!g.pbc[1]) {
        ylo = max(ylo, 0);
        yhi = min(yhi, n1 - 1);
    }
    if (!g.pbc[2]) {
        zlo = max(zlo, 0);
        zhi = min(zhi, n2 - 1);
    }
    const int nry = yhi - ylo + 1;
    const int ncol = (xhi - xlo + 1) * nry; /* <= TILE_MAXCOL, checked by the host */
    if (tid < 27) {
        float v[3];
        shift_vector_of_code(g, tid, v);
        tf.vtab[tid] = make_float4(v[0], v[1], v[2], 0.f);
    }
    /* z pieces of column tid: [za, zb) with shift sz; piece 0 (the tile's
     * own cells) only in tile columns */
    int len[5] = {0, 0, 0, 0, 0}, kb[5] = {0, 0, 0, 0, 0}, code[5] = {0, 0, 0, 0, 0};
    if (tid < ncol) {
        const int X = xlo + tid / nry, Y = ylo + tid % nry;
        const int sx = g.pbc[0] ? mdnl_floordiv(X, n0) : 0, sy = g.pbc[1] ? mdnl_floordiv(Y, n1) : 0;
        const int row = ((X - sx * n0) * n1 + (Y - sy * n1)) * n2;
        const bool tilecol = X >= tx0 && X < tx1 && Y >= ty0 && Y < ty1;
        int za[5], zb[5], sz[5];
        za[0] = tz0, zb[0] = tilecol ? tz1 : tz0, sz[0] = 0;
        za[1] = zlo, zb[1] = min(0, zhi + 1), sz[1] = -1;
        za[2] = max(zlo, 0), zb[2] = tilecol ? tz0 : min(zhi + 1, n2), sz[2] = 0;
        za[3] = tz1, zb[3] = tilecol ? min(zhi + 1, n2) : tz1, sz[3] = 0;
        za[4] = n2, zb[4] = zhi + 1, sz[4] = 1;
#pragma unroll
        for (int p = 0; p < 5; ++p) {
            code[p] = shift_code(sx, sy, sz[p]);
            if (za[p] < zb[p]) {
                kb[p] = start[row + za[p] - sz[p] * n2];
                len[p] = start[row + zb[p] - sz[p] * n2] - kb[p];
            }
        }
    }
    int fa, fb, ta_tot, tb_tot;
    cub::BlockScan<int, TILE_T>(tf.scan).ExclusiveSum(len[0], fa, ta_tot);
    __syncthreads();
    cub::BlockScan<int, TILE_T>(tf.scan).ExclusiveSum(len[1] + len[2] + len[3] + len[4], fb, tb_tot);
    bool shifted = false;
    if (tid < ncol) {
        tf.kb[tid] = kb[0];
        tf.fs[tid] = fa;
        tf.code[tid] = SHIFT_CODE_ZERO;
        int f = ta_tot + fb;
#pragma unroll
        for (int p = 1; p < 5; ++p) {
            const int s = ncol + tid * 4 + (p - 1);
            tf.kb[s] = kb[p];
            tf.fs[s] = f;
            tf.code[s] = (unsigned char)code[p];
            f += len[p];
            shifted |= len[p] > 0 && code[p] != SHIFT_CODE_ZERO;
        }
    }
    const int any = __syncthreads_or(shifted);
    if (tid == 0) {
        tf.ncol = ncol;
        tf.nseg = ncol * 5;
        tf.natoms = ta_tot;
        tf.total = ta_tot + tb_tot;
        tf.any_shift = any;
    }
    __syncthreads();
}

/* The last segment in [0, nseg) whose flat start is <= f. */
__device__ __forceinline__ int tile_seg_of(const tile_fixed &tf, int nseg, int f)
{
    int lo = 0, hi = nseg - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (tf.fs[mid] <= f)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

template <bool SHIFT>
__device__ __forceinline__ float tile_d2(const float4 &pi, const float4 &pj, const float4 *vtab, unsigned char code)
{
    if (SHIFT) {
        const float4 v4 = vtab[code];
        const float v[3] = {v4.x, v4.y, v4.z};
        return mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, v);
    }
    /* S = 0: (r_j - r_i) + 0 differs from r_j - r_i at most in a zero's sign */
    const float dx = __fsub_rn(pj.x, pi.x), dy = __fsub_rn(pj.y, pi.y), dz = __fsub_rn(pj.z, pi.z);
    return __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz));
}

/* Sorts the staged region's (index, staging slot) pairs with a block radix
 * sort of K * TILE_T items (blocked: thread t holds ranks t*K ..), then
 * gathers positions and shift codes into rank order. */
template <int K>
__device__ __forceinline__ void tile_sort_gather(void *temp, int R, int lo, int bits, const float4 *cpos,
                                                 const unsigned char *ccode, float4 *qpos, unsigned char *qcode)
{
    typedef cub::BlockRadixSort<unsigned, TILE_T, K, unsigned short> Sort;
    unsigned key[K];
    unsigned short val[K];
#pragma unroll
    for (int q = 0; q < K; ++q) {
        const int f = threadIdx.x * K + q;
        /* index - lo < 2^bits - 1, so the padding sorts last */
        key[q] = f < R ? (unsigned)(__float_as_int(cpos[f].w) - lo) : (1u << bits) - 1u;
        val[q] = (unsigned short)f;
    }
    Sort(*(typename Sort::TempStorage *)temp).Sort(key, val, 0, bits);
#pragma unroll
    for (int q = 0; q < K; ++q) {
        const int r = threadIdx.x * K + q;
        if (r < R) {
            qpos[r] = cpos[val[q]];
            qcode[r] = ccode[val[q]];
        }
    }
}

/* G lanes per atom walk the rank-ordered candidates G at a time; hits are
 * compacted by ballot and written at their rank in the CSR row. */
template <bool FULL, bool SHIFT, int G>
__device__ __forceinline__ void tile_walk_rows(const tile_fixed &tf, const float4 *cpos, const float4 *qpos,
                                               const unsigned char *qcode, int A, int R, float cutoff2,
                                               const int64_t *__restrict__ offsets, int32_t *__restrict__ j_out,
                                               float *__restrict__ d_out, int *err)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, sub = lane % G;
    constexpr int APW = 32 / G;
    const unsigned gmask = G == 32 ? FULLMASK : ((1u << G) - 1u) << (lane & ~(G - 1));
    const unsigned below = (1u << lane) - 1u;
    for (int a0 = warp * APW; a0 < A; a0 += (TILE_T / 32) * APW) {
        const int a = a0 + lane / G;
        const bool act = a < A;
        const float4 pi = act ? cpos[a] : make_float4(0.f, 0.f, 0.f, 0.f);
        const int i = act ? __float_as_int(pi.w) : -1;
        int64_t off = 0, len = 0;
        if (act) {
            off = offsets[i];
            len = offsets[i + 1] - off;
        }
        int cnt = 0;
#pragma unroll 2
        for (int base = 0; base < R; base += G) { /* uniform: R is the block's */
            const int c = base + sub;
            bool hit = false;
            float d2 = 0.f;
            int j = 0;
            if (act && c < R) {
                const float4 pj = qpos[c];
                j = __float_as_int(pj.w);
                d2 = tile_d2<SHIFT>(pi, pj, tf.vtab, SHIFT ? qcode[c] : 0);
                hit = d2 < cutoff2 && j != i && (FULL || i < j);
            }
            const unsigned m = __ballot_sync(FULLMASK, hit) & gmask;
            if (hit) {
                const int at = cnt + __popc(m & below);
                if (at < len) {
                    j_out[off + at] = j;
                    d_out[off + at] = __fsqrt_rn(d2);
                }
            }
            cnt += __popc(m);
        }
        if (act && sub == 0 && cnt != len)
            atomicOr(err, 1);
    }
}

/* Fill pass of dense-tiles. Mapping: block per tile; stage the region
 * (K * TILE_T candidates at most: the host bounds every region by the
 * fullest cell times the region's cells), radix-sort it by original index
 * (K / 2 items per thread when the region fits), then the tile's atoms walk
 * it, G lanes per atom. */
template <bool FULL, int G, int K>
__device__ __forceinline__ void tile_fill_one(const mdnl_geom &g, const mdnl_cells_view &c, const tile_args &ta,
                                              int bits, const int64_t *__restrict__ offsets,
                                              int32_t *__restrict__ j_out, float *__restrict__ d_out, int *err,
                                              int *__restrict__ over_n, int *__restrict__ over_list, int second,
                                              int tile)
{
    constexpr int CAP = K * TILE_T;
    extern __shared__ float4 tile_dyn[]; /* CAP * (2 * 16 + 2) bytes */
    float4 *cpos = tile_dyn, *qpos = tile_dyn + CAP;
    unsigned char *ccode = (unsigned char *)(tile_dyn + 2 * CAP), *qcode = ccode + CAP;
    __shared__ tile_fixed tf; /* one per kernel: the device function is inlined once */
    typedef cub::BlockRadixSort<unsigned, TILE_T, K, unsigned short> SortK;
    typedef cub::BlockRadixSort<unsigned, TILE_T, (K > 1 ? K / 2 : 1), unsigned short> SortH;
    __shared__ union {
        typename SortK::TempStorage k;
        typename SortH::TempStorage h;
    } sort_tmp;
    tile_setup(g, c.start, ta, tile, tf);
    const int A = tf.natoms, R = tf.total;
    if (R > CAP) { /* uniform; never write past a row */
        if (threadIdx.x == 0) {
            if (second)
                atomicOr(err, 1); /* the host's bound excludes it */
            else
                over_list[atomicAdd(over_n, 1)] = tile;
        }
        return;
    }
    int lo = INT_MAX, hi = 0;
    for (int f = threadIdx.x; f < R; f += TILE_T) {
        const int s = tile_seg_of(tf, tf.nseg, f);
        const float4 p = c.pos[tf.kb[s] + (f - tf.fs[s])];
        cpos[f] = p;
        ccode[f] = tf.code[s];
        lo = min(lo, __float_as_int(p.w));
        hi = max(hi, __float_as_int(p.w));
    }
    /* only the bits that differ within the region are sorted: fewer radix
     * passes where nearby atoms have nearby indices */
    typedef cub::BlockReduce<int, TILE_T> Reduce;
    lo = Reduce(tf.reduce).Reduce(lo, [](int x, int y) { return min(x, y); });
    __syncthreads();
    hi = Reduce(tf.reduce).Reduce(hi, [](int x, int y) { return max(x, y); });
    if (threadIdx.x == 0) {
        tf.lo = lo;
        tf.hi = hi;
    }
    __syncthreads();
    lo = tf.lo;
    int kbits = 1;
    while (kbits < bits && (1u << kbits) <= (unsigned)(tf.hi - lo + 1))
        ++kbits;
    if (K > 1 && 2 * R <= CAP)
        tile_sort_gather<(K > 1 ? K / 2 : 1)>(&sort_tmp, R, lo, kbits, cpos, ccode, qpos, qcode);
    else
        tile_sort_gather<K>(&sort_tmp, R, lo, kbits, cpos, ccode, qpos, qcode);
    __syncthreads();
    if (tf.any_shift)
        tile_walk_rows<FULL, true, G>(tf, cpos, qpos, qcode, A, R, g.cutoff2, offsets, j_out, d_out, err);
    else
        tile_walk_rows<FULL, false, G>(tf, cpos, qpos, qcode, A, R, g.cutoff2, offsets, j_out, d_out, err);
}

template <bool FULL, int G, int K>
__global__ __launch_bounds__(TILE_T, K <= 4 ? 8 : 4) void tile_fill_kernel(
    const __grid_constant__ mdnl_geom g, mdnl_cells_view c, tile_args ta, int bits, const int64_t *__restrict__ offsets,
    int32_t *__restrict__ j_out, float *__restrict__ d_out, int *err, int *__restrict__ over_n,
    int *__restrict__ over_list, int second)
{
    /* first launch: tile blockIdx.x, regions beyond CAP are listed for the
     * second launch (a larger K, few blocks looping over the list) */
    const int ntiles = second ? *(volatile int *)over_n : 1;
    for (int it = second ? (int)blockIdx.x : 0; it < ntiles; it += second ? (int)gridDim.x : 1) {
        if (it > (second ? (int)blockIdx.x : 0))
            __syncthreads();
        const int tile = second ? over_list[it] : (int)blockIdx.x;
        tile_fill_one<FULL, G, K>(g, c, ta, bits, offsets, j_out, d_out, err, over_n, over_list, second, tile);
    }
}


/* dense-rows' warp fill (warp per atom, rows sorted in registers) over ctx->cells,
 * after a count pass; `longest` sizes the per-warp buffer. */
template <bool FULL>
static mdnl_status launch_warp_fill(mdnl_cuda_ctx *ctx, const mdnl_geom *g, int n, int longest)
{
    const unsigned blocks = (unsigned)(((int64_t)n * 32 + WARP_T - 1) / WARP_T);
    const int64_t *off = (const int64_t *)ctx->offsets.ptr;
    int32_t *jo = (int32_t *)ctx->j.ptr;
    float *dout = (float *)ctx->d.ptr;
    int *err = (int *)ctx->flags.ptr;
    /* rows longer than 256 go through the (slow) global path */
    if (longest <= 32)
        cell_warp_fill_kernel<FULL, 1><<<blocks, WARP_T, 0, ctx->stream>>>(*g, ctx->view, off, jo, dout, err);
    else if (longest <= 64)
        cell_warp_fill_kernel<FULL, 2><<<blocks, WARP_T, 0, ctx->stream>>>(*g, ctx->view, off, jo, dout, err);
    else if (longest <= 128)
        cell_warp_fill_kernel<FULL, 4><<<blocks, WARP_T, 0, ctx->stream>>>(*g, ctx->view, off, jo, dout, err);
    else
        cell_warp_fill_kernel<FULL, 8><<<blocks, WARP_T, 0, ctx->stream>>>(*g, ctx->view, off, jo, dout, err);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    return MDNL_OK;
}

/* dense-tiles' tile shape and lanes per atom for this geometry; false when
 * the geometry rules it out: a periodic axis too short to hold the stencil
 * without meeting a cell twice (images: the row order would no longer be
 * the candidates' index order), or more stencil columns than a block has
 * threads. mdnl_cuda_ctx_set_tile_shape (tests) forces the shape. */
static bool tile_shape(const mdnl_cuda_ctx *ctx, const mdnl_geom *g, int n, tile_args *ta, int *lanes)
{
    int span[3];
    for (int k = 0; k < 3; ++k) {
        if (g->pbc[k] && 2 * g->stencil[k] + 1 > g->ncell[k])
            return false;
        span[k] = 2 * g->stencil[k];
    }
    auto cols = [&](const int *t) {
        const long long a = t[0] + span[0] < g->ncell[0] ? t[0] + span[0] : g->ncell[0];
        const long long b = t[1] + span[1] < g->ncell[1] ? t[1] + span[1] : g->ncell[1];
        return a * b;
    };
    auto fits = [&](const int *t) {
        for (int k = 0; k < 3; ++k)
            if (t[k] < 1 || t[k] > g->ncell[k] || (g->pbc[k] && t[k] + span[k] > g->ncell[k]))
                return false;
        return cols(t) <= TILE_MAXCOL;
    };
    int t[3] = {1, 1, 1};
    if (!fits(t))
        return false;
    const double rho = (double)n / (double)g->ncells;
    int G = 0;
    const int *e = ctx->tile_force;
    if (e[0] > 0 && e[1] > 0 && e[2] > 0) {
        for (int k = 0; k < 3; ++k)
            t[k] = e[k] > g->ncell[k] ? g->ncell[k] : e[k];
        G = e[3];
        /* shrink until it fits */
        for (int k = 2; k >= 0 && !fits(t); --k)
            while (t[k] > 1 && !fits(t))
                --t[k];
    } else {
        /* grow z, y, x in turn while the tile holds fewer than ~12 atoms
         * (more atoms share the staging and the sort, but a larger region
         * costs every atom more tests and more shared memory: on lj-1m, 13
         * atoms per cell, the fill took 1.61 ms with one cell per tile and
         * 1.85 with 1x1x2 on an H100, tools/bench/RESULTS.md) */
        for (int round = 0; round < 16 && rho * t[0] * t[1] * t[2] < 12.0; ++round) {
            const int k = 2 - round % 3;
            int u[3] = {t[0], t[1], t[2]};
            u[k] *= 2;
            if (fits(u))
                t[k] = u[k];
        }
    }
    if (G != 4 && G != 8 && G != 16 && G != 32) {
        double region = rho;
        for (int k = 0; k < 3; ++k)
            region *= t[k] + span[k] < g->ncell[k] ? t[k] + span[k] : g->ncell[k];
        G = region >= 128 ? 32 : 8;
    }
    G = G > 8 ? 32 : 8;
    for (int k = 0; k < 3; ++k) {
        ta->t[k] = t[k];
        ta->nt[k] = (g->ncell[k] + t[k] - 1) / t[k];
    }
    *lanes = G;
    return true;
}

template <bool FULL, int G, int K>
static mdnl_status launch_tile_fill_gk(mdnl_cuda_ctx *ctx, const mdnl_geom *g, unsigned blocks, tile_args ta, int bits,
                                       int second)
{
    const size_t smem = (size_t)K * TILE_T * (2 * sizeof(float4) + 2);
    MDNL_CUDA_CHECK(cudaFuncSetAttribute(tile_fill_kernel<FULL, G, K>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)smem));
    tile_fill_kernel<FULL, G, K><<<blocks, TILE_T, smem, ctx->stream>>>(
        *g, ctx->view, ta, bits, (const int64_t *)ctx->offsets.ptr, (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr,
        (int *)ctx->flags.ptr, (int *)ctx->flags.ptr + 3, (int *)ctx->tover.ptr, second);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    return MDNL_OK;
}

/* Items per thread of the block sort for `region` candidates. */
static int tile_items(long long region)
{
    return region <= 2 * TILE_T ? 2 : region <= 4 * TILE_T ? 4 : region <= 8 * TILE_T ? 8 : 16;
}

template <bool FULL, int G>
static mdnl_status launch_tile_fill_g(mdnl_cuda_ctx *ctx, const mdnl_geom *g, unsigned blocks, tile_args ta, int bits,
                                      int K, int second)
{
    switch (K) {
    case 2:
        return launch_tile_fill_gk<FULL, G, 2>(ctx, g, blocks, ta, bits, second);
    case 4:
        return launch_tile_fill_gk<FULL, G, 4>(ctx, g, blocks, ta, bits, second);
    case 8:
        return launch_tile_fill_gk<FULL, G, 8>(ctx, g, blocks, ta, bits, second);
    default:
        return launch_tile_fill_gk<FULL, G, 16>(ctx, g, blocks, ta, bits, second);
    }
}

#define TILE_MAX_REGION (16 * TILE_T)

/* dense-tiles (see the tile kernels): counting-sort binning, the
 * thread-per-atom count pass, scan, tile fill. When a region may exceed what
 * a block sorts (the fullest cell times the region's cells), the fill is
 * dense-rows' warp fill instead; the counts are the same. */
template <bool FULL>
static mdnl_status build_tile(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, const tile_args &ta,
                              int G, int64_t *npairs)
{
    mdnl_status st;
    STAGE(MDNL_CUDA_STAGE_BIN, 0);
    if ((st = nl_bin_unstable(ctx, g, pos, n)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_BIN, 1);
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    cell_count_kernel<FULL><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
        *g, ctx->view, (unsigned long long *)ctx->counts.ptr, (int *)ctx->flags.ptr + 1);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    int longest = 0, maxcell = 0;
    if ((st = nl_scan_and_size(ctx, n, npairs, &longest, &maxcell)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_FILL, 0);
    long long bound = maxcell;
    for (int k = 0; k < 3; ++k) {
        const int w = ta.t[k] + 2 * g->stencil[k];
        bound *= w < g->ncell[k] ? w : g->ncell[k];
    }
    const int most = ctx->tile_cap > 0 && ctx->tile_cap < TILE_MAX_REGION ? ctx->tile_cap : TILE_MAX_REGION;
    if (bound <= most) {
        int bits = 1;
        while (bits < 31 && (1u << bits) <= (unsigned)n)
            ++bits;
        const unsigned tiles = (unsigned)((long long)ta.nt[0] * ta.nt[1] * ta.nt[2]);
        /* The first launch sizes shared memory for the typical region (the
         * mean plus 5%), which keeps 8 blocks per multiprocessor; the few
         * larger regions are listed and done by a second launch sized for
         * the bound. */
        double mean = (double)n / (double)g->ncells;
        for (int k = 0; k < 3; ++k) {
            const int w = ta.t[k] + 2 * g->stencil[k];
            mean *= w < g->ncell[k] ? w : g->ncell[k];
        }
        const int k_over = tile_items(bound);
        int k_main = tile_items((long long)(1.05 * mean) + 1);
        if (k_main > k_over)
            k_main = k_over;
        if ((st = mdnl_dbuf_reserve(&ctx->tover, (size_t)tiles * sizeof(int), "tile list")) != MDNL_OK)
            return st;
        st = G == 32 ? launch_tile_fill_g<FULL, 32>(ctx, g, tiles, ta, bits, k_main, 0)
                     : launch_tile_fill_g<FULL, 8>(ctx, g, tiles, ta, bits, k_main, 0);
        if (st == MDNL_OK && k_over > k_main) {
            const unsigned few = tiles < 528 ? tiles : 528;
            st = G == 32 ? launch_tile_fill_g<FULL, 32>(ctx, g, few, ta, bits, k_over, 1)
                         : launch_tile_fill_g<FULL, 8>(ctx, g, few, ta, bits, k_over, 1);
        }
        if (st != MDNL_OK)
            return st;
    } else if ((2 * g->stencil[0] + 1) * (2 * g->stencil[1] + 1) * (2 * g->stencil[2] + 1) <= 32) {
        if ((st = launch_warp_fill<FULL>(ctx, g, n, longest)) != MDNL_OK)
            return st;
    } else if ((st = launch_rows<0, FULL>(ctx, g, n, *npairs, 0, 0)) != MDNL_OK) {
        return st;
    }
    STAGE(MDNL_CUDA_STAGE_FILL, 1);
    return MDNL_OK;
}

/* dense-rows: the stable cell list, count pass, scan, warp-per-atom fill. */
template <bool FULL>
static mdnl_status build_dense_rows(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n,
                                    int64_t *npairs)
{
    mdnl_status st;
    STAGE(MDNL_CUDA_STAGE_BIN, 0);
    if ((st = mdnl_cells_cuda_build(&ctx->cells, g, pos, ctx->stream)) != MDNL_OK)
        return st;
    ctx->view = ctx->cells.view;
    STAGE(MDNL_CUDA_STAGE_BIN, 1);
    /* the warp fill holds at most 32 candidate ranges (one per lane) */
    if ((2 * g->stencil[0] + 1) * (2 * g->stencil[1] + 1) * (2 * g->stencil[2] + 1) <= 32) {
        int *maxlen = (int *)ctx->flags.ptr + 1;
        STAGE(MDNL_CUDA_STAGE_COUNT, 0);
        cell_count_kernel<FULL><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
            *g, ctx->view, (unsigned long long *)ctx->counts.ptr, maxlen);
        MDNL_CUDA_LAUNCHED(ctx->stream);
        STAGE(MDNL_CUDA_STAGE_COUNT, 1);
        STAGE(MDNL_CUDA_STAGE_SCAN, 0);
        int longest = 0;
        if ((st = nl_scan_and_size(ctx, n, npairs, &longest)) != MDNL_OK)
            return st;
        STAGE(MDNL_CUDA_STAGE_SCAN, 1);
        STAGE(MDNL_CUDA_STAGE_FILL, 0);
        if ((st = launch_warp_fill<FULL>(ctx, g, n, longest)) != MDNL_OK)
            return st;
        STAGE(MDNL_CUDA_STAGE_FILL, 1);
        return MDNL_OK;
    }
    /* more columns: the rows kernel's fill (thread per atom, rows sorted in
     * shared memory) */
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    cell_count_kernel<FULL><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
        *g, ctx->view, (unsigned long long *)ctx->counts.ptr, (int *)ctx->flags.ptr + 1);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    if ((st = nl_scan_and_size(ctx, n, npairs)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_FILL, 0);
    if ((st = launch_rows<0, FULL>(ctx, g, n, *npairs, 0, 0)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_FILL, 1);
    return MDNL_OK;
}

mdnl_status nl_build_dense_rows(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                int64_t *npairs)
{
    return full ? build_dense_rows<true>(ctx, g, pos, n, npairs) : build_dense_rows<false>(ctx, g, pos, n, npairs);
}

mdnl_status nl_build_dense_tiles(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                 int64_t *npairs)
{
    tile_args ta;
    int G = 32;
    if (!tile_shape(ctx, g, n, &ta, &G)) /* images: a tile would meet a cell twice */
        return nl_build_dense_rows(ctx, g, pos, n, full, npairs);
    return full ? build_tile<true>(ctx, g, pos, n, ta, G, npairs) : build_tile<false>(ctx, g, pos, n, ta, G, npairs);
}

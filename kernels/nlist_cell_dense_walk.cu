/* nlist_cell_dense_walk.cu — dense-walk, the cell-list path for dense rows
 * (nlist_cuda.h): one walk, a warp per home cell, hits into a slab of 64-key
 * rows; then rows sorted in registers and written coalesced. */
#include "nlist_cuda_common.cuh"

#include <math.h>

/* ------------------------------------------------------------------------ */
/* dense-walk: one walk, a warp per home cell; rows sorted afterwards.
 *
 * Walk (walk_walk_kernel). Mapping: a warp per cell of the counting-sort
 * binning (the home cell), its atoms (32 at a time) in shared memory with a
 * pointer to each one's slab row. The cell's candidate ranges (as in
 * warp_list_ranges) go to a small shared table once; the warp then takes 32
 * flat candidates per step (each lane finds its range by walking forward in
 * the table, its flat index only grows) and each lane loads one candidate.
 * A candidate whose image is a cutoff or more from the bounding box of the
 * home atoms is dropped (mdnl_axis_gap: a bound on every d2 of the test, exact
 * in float, so no pair is lost); the kept ones go to a per-warp ring of 128
 * in shared memory, and each time 64 are there the warp takes them (two a
 * lane; a home block's last batch of at most 32, one a lane) and tests each
 * against every home atom a in turn: a broadcast shared
 * load, mdnl_pair_d2 (without its "+ 0" when every candidate of the 64 has a
 * zero shift: the same bits), the half list's rule as one integer compare
 * (2j + [S > 0] > 2i), a ballot; the hits of that ballot are appended to a's
 * slab row together (its running count, held by lane a, plus the hit's rank
 * in the ballot). A candidate is loaded once per cell instead of once per
 * atom and every lane works in every step. The slab holds WALK_CAP entries a
 * row, rows in original index order, in one of two layouts (nl_walk_packed,
 * on the binning's sample of the input order): gathered, 4-byte keys j << 5
 * | shift code; packed (input order unrelated to space), 8-byte entries (j
 * << 6 | the entry's slot, d2), one store a hit as before. The host picks
 * the layout before the walk from the frame before's sample
 * (ctx->walk_pack), so that each layout has a rows kernel of its own
 * registers and shared memory; a frame whose own sample disagrees is built
 * again (nlist_cuda.cu), so a frame's layout is always its own and a
 * trajectory pays for it only where its order changes. The slab is zeroed
 * when allocated: the rows kernel loads whole words up to a warp's longest
 * row, never uninitialised memory. The
 * walk counts every row exactly (counts[i]) and records the longest
 * (flags[1]); entries past WALK_CAP are dropped. There is no count pass: the
 * candidates are walked once.
 *
 * Rows (walk_rows_kernel). Mapping: two threads per original row i (lanes
 * 2r and 2r + 1 of a warp's ROWS_W rows), so a warp's 16 rows are
 * contiguous in the slab and in the CSR. The warp loads its rows into
 * shared memory with coalesced 16-byte loads; each thread takes half its
 * row into registers (16 or 32 keys, compile-time indices; the warp's
 * longest row decides) and the pair sorts the row as one bitonic network
 * (pair_bitonic: one exchange of registers between the two); the warp then
 * writes j, and d entry by entry in output order, with coalesced stores.
 * Half a row a thread keeps the gathered kernel at 64 registers (a row a
 * thread: 102, a quarter of the SM's warps; H100: rows -3 to -24 %, but +5 %
 * on the sorted liquid's gathered full list, tools/bench/RESULTS.md).
 * Gathered, d is computed from the positions in original order (the floats
 * the walk used, mdnl_pair_d2: the same bits), a gather an entry that hits
 * L1 when the warp's 32 atoms are neighbours in space and misses it when
 * the input order is random (H200, lj-1m-liquid shuffled: rows 0.65 ms of
 * 1.27). Packed, d = sqrt of the slot's d2, from the warp's d2 rows,
 * staged in a shared buffer of their own in the same pass as the keys (the
 * slab read once: H100 lj-1m-liquid shuffled rows 0.452 -> 0.408 ms; the
 * kernel takes 80 registers and 17 kB a block, which would cost the
 * gathered rows 1-6 % if they shared it). Packing costs the ordered inputs
 * more (twice the slab bytes) than their gathers. A row longer than WALK_CAP is walked
 * again by a warp (walk_long_kernel, a no-op when the walk saw no such
 * row; the walk lists the long rows), a warp per row, ranked in shared
 * memory and written into its CSR slots. No host
 * synchronisation inside the build: the output arrays are sized from the
 * frame before or an estimate, and a CSR that outgrew them is found by the
 * caller's one read-back and built again.
 *
 * The host uses this path only where an atom appears at most once in a
 * row with shifts in -1..1 (every periodic axis has at least 2 stencil + 1
 * cells), the stencil's ranges fit a warp, and j < 2^27: j alone then orders
 * a row as mdnl_row_key does. */
#define WALK_T 128 /* walk: 4 warps, 4 cells a block */
#define WALK_RT 64 /* rows: 2 warps */
#define WALK_LPITCH (WALK_CAP + 4) /* rows kernel: 16-byte aligned rows, 8 lanes per LDS.128 phase conflict-free */


/* The walk's shared memory (a warp's share of each array). */
struct walk_shared {
    float4 home[WALK_T];
    int fe[WALK_T], kb[WALK_T], code[WALK_T];
    float4 cp[4 * WALK_T]; /* kept candidates, a ring of 128 a warp: x, y, z, key */
    float4 cv[4 * WALK_T]; /* and their shift vector and self */
    float sh[27][3];
};

/* One warp's home cell (see walk_walk_kernel). */
template <bool FULL>
__device__ __forceinline__ void walk_cell(const mdnl_geom &g, const mdnl_cells_view &c, int cell, walk_shared &S,
                                          unsigned *__restrict__ slab, unsigned long long *__restrict__ counts,
                                          int *__restrict__ maxlen, int *__restrict__ longlist, int *__restrict__ nlong)
{
    float4 *const home_s = S.home, *const cp_s = S.cp, *const cv_s = S.cv;
    int *const fe_s = S.fe, *const kb_s = S.kb, *const code_s = S.code;
    const float(*const sh)[3] = S.sh;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int hb = c.start[cell], he = c.start[cell + 1];
    if (hb == he)
        return;
    int ntot; /* the cell's candidates */
    {
        /* its candidate ranges, flat [fs, fe) from slot kb, in a table */
        const warp_ranges r = warp_list_ranges(g, c, cell, lane);
        fe_s[w * 32 + lane] = r.fe; /* 0x7fffffff past the last range */
        kb_s[w * 32 + lane] = r.kb - r.fs;
        code_s[w * 32 + lane] = r.code;
        ntot = r.total;
    }
    __syncwarp();
    const unsigned lt = (1u << lane) - 1u;
    const int hbase = w * 32, rbase = w * 128;
    int longest = 0;
    for (int h0 = hb; h0 < he; h0 += 32) {
        const int nh = min(32, he - h0);
        float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        if (lane < nh) {
            const float4 p = c.pos[h0 + lane];
            /* half list: w holds 2i, so that the rule is one compare in the loop (below) */
            home_s[hbase + lane] = FULL ? p : make_float4(p.x, p.y, p.z, __int_as_float(2 * __float_as_int(p.w)));
            lo[0] = hi[0] = p.x;
            lo[1] = hi[1] = p.y;
            lo[2] = hi[2] = p.z;
        }
        /* the home atoms' bounding box */
        mdnl_warp_box(lo, hi);
        __syncwarp();
        int cnt = 0; /* lane a: the row length of home atom a so far */
        int head = 0, nk = 0; /* the ring: kept candidates from head, nk of them (uniform) */
        /* Takes up to 64 kept candidates off the ring (two a lane, c = 0 and 1: slots head + lane and head + 32
         * + lane; lanes past `count` hold none) and tests each against every home atom, appending the hits:
         * two candidates a lane share a home atom's load, its row count's shuffle and its row pointer. */
        auto take = [&](int count) {
            __syncwarp(); /* the ring's writes before its reads */
            /* a lane past `count`: never a neighbour, and a zero shift (for the test below) */
            float4 pj[2], pv[2];
            int sj[2]; /* full: the home atom the candidate is (-1: none); half: 2j + [S > 0] */
#pragma unroll
            for (int cc = 0; cc < 2; ++cc) {
                pj[cc] = make_float4(INFINITY, INFINITY, INFINITY, __uint_as_float(SHIFT_CODE_ZERO));
                pv[cc] = make_float4(0.f, 0.f, 0.f, 0.f);
                sj[cc] = -1;
                if (lane + 32 * cc < count) {
                    const int slot = rbase + ((head + 32 * cc + lane) & 127);
                    pj[cc] = cp_s[slot];
                    pv[cc] = cv_s[slot];
                    sj[cc] = __float_as_int(pv[cc].w);
                }
            }
            __syncwarp(); /* its reads before the next writes */
            head = (head + 64) & 127;
            unsigned key[2];
#pragma unroll
            for (int cc = 0; cc < 2; ++cc)
                key[cc] = __float_as_uint(pj[cc].w);
            /* Z: every candidate of the batch has S = 0 (most batches: the ranges come in shift order), and
             * d2 leaves out mdnl_pair_d2's "+ 0" (it can change only the sign of a zero difference, which
             * the square erases: the same bits, three adds fewer a test). */
            auto test = [&](auto zero, auto ncand) {
                constexpr bool Z = decltype(zero)::value;
                constexpr int C = decltype(ncand)::value; /* candidates a lane: 1 where the batch has at most 32 */
#pragma unroll 2
                for (int a = 0; a < nh; ++a) {
                    const float4 pa = home_s[hbase + a];
                    float d2[2];
                    bool hit[2];
                    unsigned m[2];
#pragma unroll
                    for (int cc = 0; cc < C; ++cc) {
                        d2[cc] = mdnl_cand_d2<Z>(pa, pj[cc], pv[cc]);
                        hit[cc] = d2[cc] < g.cutoff2 && (FULL ? sj[cc] != a : sj[cc] > __float_as_int(pa.w));
                        m[cc] = __ballot_sync(FULLMASK, hit[cc]);
                    }
                    const int ca = __shfl_sync(FULLMASK, cnt, a);
                    const int n0 = __popc(m[0]);
                    const int p[2] = {ca + __popc(m[0] & lt), C == 2 ? ca + n0 + __popc(m[1] & lt) : 0};
                    unsigned *const row = slab + (size_t)(h0 + a) * WALK_CAP; /* slot h0 + a's */
#pragma unroll
                    for (int cc = 0; cc < C; ++cc)
                        if (hit[cc] && p[cc] < WALK_CAP)
                            __stcg(row + p[cc], key[cc]);
                    if (lane == a)
                        cnt = ca + n0 + (C == 2 ? __popc(m[1]) : 0);
                }
            };
            const bool z = __all_sync(FULLMASK, (key[0] & 31u) == SHIFT_CODE_ZERO && (key[1] & 31u) == SHIFT_CODE_ZERO);
            if (count > 32) {
                if (z)
                    test(std::true_type{}, std::integral_constant<int, 2>{});
                else
                    test(std::false_type{}, std::integral_constant<int, 2>{});
            } else { /* a batch's last candidates: one a lane, no test of an empty second */
                if (z)
                    test(std::true_type{}, std::integral_constant<int, 1>{});
                else
                    test(std::false_type{}, std::integral_constant<int, 1>{});
            }
        };
        int q = 0; /* this lane's range (its flat index only grows) */
        for (int base = 0; base < ntot; base += 32) {
            /* kept only if it can be within the cutoff of the home box (a bound on every d2 below) */
            const mdnl_warp_cand cd =
                mdnl_warp_candidate(g, c, fe_s + hbase, kb_s + hbase, code_s + hbase, sh, base + lane, ntot, q, lo, hi);
            const unsigned key = ((unsigned)cd.k << 5) | (unsigned)cd.code; /* the candidate's slot */
            /* full: the home atom this candidate is (at S = 0); half: the half list's rule (mdnl_half_keep: j > i,
             * or j == i with a positive shift) as one compare in the test, 2j + [S > 0] > 2i, which also drops
             * the home atom itself (j == i, S = 0) */
            const int sj = FULL ? (cd.code == SHIFT_CODE_ZERO ? cd.k - h0 : -1)
                                : 2 * __float_as_int(cd.p.w) + (cd.code > SHIFT_CODE_ZERO);
            const unsigned km = __ballot_sync(FULLMASK, cd.keep);
            if (cd.keep) {
                const int slot = rbase + ((head + nk + __popc(km & lt)) & 127);
                cp_s[slot] = make_float4(cd.p.x, cd.p.y, cd.p.z, __uint_as_float(key));
                cv_s[slot] = make_float4(cd.v[0], cd.v[1], cd.v[2], __int_as_float(sj));
            }
            nk += __popc(km);
            if (nk >= 64) {
                take(64);
                nk -= 64;
            }
        }
        if (nk > 0)
            take(nk);
        if (lane < nh) {
            counts[__float_as_int(home_s[hbase + lane].w) >> (FULL ? 0 : 1)] = (unsigned long long)cnt;
            longest = max(longest, cnt);
            if (cnt > WALK_CAP) /* rare: walk_long_kernel's list (at most one entry a slot) */
                longlist[atomicAdd(nlong, 1)] = h0 + lane;
        }
        __syncwarp(); /* home_s, rowp_s and the ring are refilled by the next 32 */
    }
    const int m = (int)__reduce_max_sync(FULLMASK, (unsigned)longest);
    if (lane == 0 && m > *(volatile int *)maxlen)
        atomicMax(maxlen, m);
}

template <bool FULL>
__global__ __launch_bounds__(WALK_T) void walk_walk_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                       unsigned *__restrict__ slab,
                                                       unsigned long long *__restrict__ counts,
                                                       int *__restrict__ maxlen, int *__restrict__ longlist,
                                                       int *__restrict__ nlong)
{
    nl_grid_wait();
    constexpr int W = WALK_T / 32;
    if (blockIdx.x == 0 && threadIdx.x == 0)
        counts[c.natoms] = 0; /* the scan's last term: the walk writes every count, the host clears none */
    __shared__ walk_shared S;
    if (threadIdx.x < 27)
        shift_vector_of_code(g, threadIdx.x, S.sh[threadIdx.x]);
    __syncthreads();
    const int cell = blockIdx.x * W + (threadIdx.x >> 5);
    if (cell >= c.ncells)
        return; /* the whole warp */
    walk_cell<FULL>(g, c, cell, S, slab, counts, maxlen, longlist, nlong);
}

/* Rows: two threads a row (lanes 2r and 2r + 1 of a warp hold row r of its
 * ROWS_W), each HK keys of it (HK = 16 where the warp's longest row fits
 * 32, else 32). Sorted as one network of 2 HK: each thread sorts its keys
 * (the odd one descending, by sorting the complements), the pair exchanges
 * them once (the bitonic half-cleaner: the even thread keeps the smaller of
 * each pair, the odd one the larger) and each merges its half. Thread h then
 * holds entries h HK .. h HK + HK - 1 of the sorted row. */
#define ROWS_W 16 /* rows a warp */
template <int HK>
__device__ __forceinline__ void pair_bitonic(unsigned (&x)[WALK_CAP / 2], int h)
{
    const unsigned flip = h ? ~0u : 0u;
#pragma unroll
    for (int e = 0; e < HK; ++e)
        x[e] ^= flip;
    thread_bitonic<HK>(x);
#pragma unroll
    for (int e = 0; e < HK; ++e) {
        x[e] ^= flip;
        const unsigned p = __shfl_xor_sync(FULLMASK, x[e], 1);
        x[e] = h ? max(x[e], p) : min(x[e], p);
    }
    thread_bitonic_merge<HK>(x, 2 * HK, HK >> 1); /* (e & 2 HK) == 0 for every e < HK: ascending */
}

/* The warp's staged rows out: row rr of the warp at st + rr WALK_LPITCH, in
 * output order, its length and CSR offset held by lane 2 rr (len, off); row
 * by row, a lane an entry (coalesced stores). */
template <class F>
__device__ __forceinline__ void walk_rows_write(const unsigned *__restrict__ st, int nrows, int len, long long off,
                                                int lane, F &&put)
{
    for (int rr = 0; rr < nrows; ++rr) {
        const int l = __shfl_sync(FULLMASK, len, 2 * rr);
        const long long o = __shfl_sync(FULLMASK, off, 2 * rr);
        for (int t = lane; t < l; t += 32)
            put(o + t, st[rr * WALK_LPITCH + t]);
    }
}

/* One row of the warp (its pair of threads, h = 0 or 1; HK entries a
 * thread, see pair_bitonic): each of its entries e (the staged key: the
 * candidate's slot << 5 | shift code) gathers the candidate's position
 * (the cell order's, near this row's slot in space: L1 and L2 hits), d2 by
 * mdnl_pair_d2 (the walk's test, the same bits) to d2s[e] and the sort key
 * j << 6 | e; the row sorted; j then d = sqrt(d2s[e]) through the stage in
 * output order, each written by the whole warp (walk_rows_write). */
template <int HK>
__device__ __forceinline__ void walk_rows_pair(const mdnl_cells_view &c, const float (*sh)[3], float4 pi, int len,
                                               long long off, int nrows, int r, int h, int lane,
                                               unsigned *__restrict__ st, unsigned *__restrict__ d2s,
                                               int32_t *__restrict__ j_out, float *__restrict__ d_out)
{
    const int e0 = h * HK;
    unsigned x[WALK_CAP / 2];
#pragma unroll
    for (int q = 0; q < HK / 4; ++q) {
        const int e = e0 + 4 * q;
        uint4 u = make_uint4(0u, 0u, 0u, 0u);
        if (e < len)
            u = *reinterpret_cast<const uint4 *>(st + r * WALK_LPITCH + e);
        const unsigned k4[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
        for (int t = 0; t < 4; ++t) {
            unsigned key = ~0u; /* past the row: sorted last, never written */
            if (e + t < len) {
                const float4 pj = __ldg(c.pos + (k4[t] >> 5));
                const float d2 = mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, sh[k4[t] & 31u]);
                d2s[r * WALK_LPITCH + e + t] = __float_as_uint(d2);
                key = ((unsigned)__float_as_int(pj.w) << 6) | (unsigned)(e + t);
            }
            x[4 * q + t] = key;
        }
    }
    pair_bitonic<HK>(x, h);
    __syncwarp(); /* every staged key read before the stage holds the output */
#pragma unroll
    for (int e = 0; e < HK; ++e)
        if (e0 + e < len)
            st[r * WALK_LPITCH + e0 + e] = x[e] >> 6;
    __syncwarp();
    walk_rows_write(st, nrows, len, off, lane, [&](long long o, unsigned v) { __stcs(j_out + o, (int32_t)v); });
    __syncwarp(); /* j written before the stage holds d */
#pragma unroll
    for (int e = 0; e < HK; ++e)
        if (e0 + e < len)
            st[r * WALK_LPITCH + e0 + e] =
                __float_as_uint(__fsqrt_rn(__uint_as_float(d2s[r * WALK_LPITCH + (x[e] & 63u)])));
    __syncwarp();
    walk_rows_write(st, nrows, len, off, lane, [&](long long o, unsigned v) { __stcs(d_out + o, __uint_as_float(v)); });
}

/* Rows: a warp per ROWS_W consecutive slots of the cell order (two threads
 * a row, lanes 2r and 2r + 1), row i = order[s] written at offsets[i].
 * npairs_out (flags) gets the pair count; a CSR of more than `cap` pairs
 * sets *outgrown and writes nothing (the host grows the output and builds
 * again). */
__global__ __launch_bounds__(WALK_RT, 12) void walk_rows_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                                const unsigned *__restrict__ slab,
                                                                const int64_t *__restrict__ offsets, long long cap,
                                                                int32_t *__restrict__ j_out, float *__restrict__ d_out,
                                                                long long *__restrict__ npairs_out,
                                                                int *__restrict__ outgrown)
{
    nl_grid_wait();
    __shared__ __align__(16) unsigned stage_s[WALK_RT / 32][ROWS_W * WALK_LPITCH];
    __shared__ __align__(16) unsigned d2_s[WALK_RT / 32][ROWS_W * WALK_LPITCH];
    __shared__ float sh[27][3];
    const int n = c.natoms;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int r = lane >> 1, h = lane & 1; /* the warp's row r, its half h */
    const int s0 = (blockIdx.x * (WALK_RT / 32) + w) * ROWS_W;
    const int s = s0 + r;
    const int nrows = max(0, min(ROWS_W, n - s0));
    /* the warp's slab rows, whole, 16 bytes a lane, into the stage first (a
     * row's tail past its length holds an earlier frame's keys, or the zeros
     * the slab was allocated with, and is never read) */
    unsigned *const st = stage_s[w];
    const uint4 *const src = reinterpret_cast<const uint4 *>(slab + (size_t)s0 * WALK_CAP);
#pragma unroll
    for (int q = 0; q < ROWS_W * WALK_CAP / 4 / 32; ++q) {
        const int e = q * 32 + lane, row = e / (WALK_CAP / 4);
        if (row < nrows)
            *reinterpret_cast<uint4 *>(st + row * WALK_LPITCH + 4 * (e % (WALK_CAP / 4))) = __ldcs(src + e);
    }
    /* the row's atom, position and offsets (past n: offsets[n], an empty row), and the total */
    const int i = s < n ? c.order[s] : n;
    const float4 pi = s < n ? c.pos[s] : make_float4(0.f, 0.f, 0.f, 0.f);
    const long long off = offsets[i];
    const long long nxt = offsets[min(i + 1, n)];
    const long long total = offsets[n];
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        *npairs_out = total;
        if (total > cap)
            *outgrown = 1;
    }
    if (total > cap)
        return; /* the whole grid */
    if (threadIdx.x < 27)
        shift_vector_of_code(g, threadIdx.x, sh[threadIdx.x]);
    __syncthreads();
    if (s0 >= n)
        return; /* the whole warp */
    /* rows longer than WALK_CAP are walk_long_kernel's: empty here */
    const int len = nxt - off <= WALK_CAP ? (int)(nxt - off) : 0;
    const int wmax = (int)__reduce_max_sync(FULLMASK, (unsigned)len);
    if (wmax <= WALK_CAP / 2) /* HK = 16 where every row of the warp fits 32 */
        walk_rows_pair<WALK_CAP / 4>(c, sh, pi, len, off, nrows, r, h, lane, st, d2_s[w], j_out, d_out);
    else
        walk_rows_pair<WALK_CAP / 2>(c, sh, pi, len, off, nrows, r, h, lane, st, d2_s[w], j_out, d_out);
}

/* One slot's row, when it is longer than WALK_CAP (see walk_long_kernel). */
template <bool FULL>
__device__ void walk_long_row(const mdnl_geom &g, const mdnl_cells_view &c, int s, const int64_t *__restrict__ offsets,
                            int32_t *__restrict__ j_out, float *__restrict__ d_out, int *__restrict__ err)
{
    const int i = c.order[s];
    const long long off = offsets[i];
    const long long len = offsets[i + 1] - off;
    if (len <= WALK_CAP)
        return;
    nl_row_walked_again<FULL>([&](auto &&f) { mdnl_for_each_pair(g, c, s, f); }, i, off, len, j_out, d_out, err);
}

/* Rows longer than WALK_CAP (a few in a liquid: density fluctuations).
 * Mapping: a warp per listed slot (the walk lists them), grid-stride over
 * the list. The warp walks the slot's cell's candidate ranges 32 at a time
 * (as the walk does, without the bounding-box pruning), appends the hits'
 * keys (j << 5 | shift code) to shared memory, and writes each at its rank
 * among the row's keys (j alone orders a row here: each atom appears once),
 * with d computed as walk_rows_kernel computes it (the same bits). A row
 * longer than LONG_KEYS goes to walk_long_row (one thread, sorted in global
 * memory). A walk that disagrees with the count sets err. Without a long
 * row (err[1], the walk's longest) or room in the output, every thread
 * returns at once. */
#define LONG_W 4      /* warps a block */
#define LONG_KEYS 512 /* keys a warp in shared memory */
template <bool FULL>
__global__ __launch_bounds__(LONG_W * 32) void walk_long_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                              const int64_t *__restrict__ offsets,
                                                              const float4 *__restrict__ opos, long long cap,
                                                              int32_t *__restrict__ j_out, float *__restrict__ d_out,
                                                              int *__restrict__ err, const int *__restrict__ longlist,
                                                              const int *__restrict__ nlong)
{
    nl_grid_wait();
    if (err[1] <= WALK_CAP || offsets[c.natoms] > cap)
        return;
    __shared__ unsigned keys_s[LONG_W][LONG_KEYS];
    __shared__ int fe_s[LONG_W * 32], kb_s[LONG_W * 32], code_s[LONG_W * 32];
    __shared__ float sh[27][3];
    if (threadIdx.x < 27)
        shift_vector_of_code(g, threadIdx.x, sh[threadIdx.x]);
    __syncthreads();
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, wb = w * 32;
    const unsigned lt = (1u << lane) - 1u;
    unsigned *const keys = keys_s[w];
    const int nl = *nlong;
    for (int t = blockIdx.x * LONG_W + w; t < nl; t += gridDim.x * LONG_W) {
        const int s = longlist[t];
        const int i = c.order[s];
        const long long off = offsets[i];
        const int len = (int)(offsets[i + 1] - off);
        if (len > LONG_KEYS) { /* warp-uniform */
            if (lane == 0)
                walk_long_row<FULL>(g, c, s, offsets, j_out, d_out, err);
            __syncwarp();
            continue;
        }
        const float4 pi = c.pos[s];
        const warp_ranges r = warp_list_ranges(g, c, c.cell[s], lane);
        fe_s[wb + lane] = r.fe;
        kb_s[wb + lane] = r.kb - r.fs;
        code_s[wb + lane] = r.code;
        const int ntot = r.total;
        __syncwarp();
        int cnt = 0, q = 0;
        for (int base = 0; base < ntot; base += 32) {
            const int fl = base + lane;
            bool hit = false;
            unsigned key = 0;
            if (fl < ntot) {
                while (fe_s[wb + q] <= fl)
                    ++q;
                const int k = kb_s[wb + q] + fl, code = code_s[wb + q];
                const float4 pj = c.pos[k];
                const int j = __float_as_int(pj.w);
                const float d2 = mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, sh[code]);
                hit = d2 < g.cutoff2 && !(code == SHIFT_CODE_ZERO && k == s);
                if (!FULL) {
                    int s0, s1, s2;
                    shift_of_code(code, s0, s1, s2);
                    hit = hit && mdnl_half_keep(i, j, s0, s1, s2);
                }
                key = ((unsigned)j << 5) | (unsigned)code;
            }
            const unsigned m = __ballot_sync(FULLMASK, hit);
            const int p = cnt + __popc(m & lt);
            if (hit && p < LONG_KEYS)
                keys[p] = key;
            cnt += __popc(m);
        }
        __syncwarp();
        if (cnt != len) {
            if (lane == 0)
                atomicOr(err, 1);
            continue;
        }
        for (int e = lane; e < len; e += 32) {
            const unsigned key = keys[e];
            int rank = 0;
            for (int o = 0; o < len; ++o)
                rank += keys[o] < key;
            const float4 pj = __ldg(opos + (key >> 5));
            j_out[off + rank] = (int32_t)(key >> 5);
            d_out[off + rank] = __fsqrt_rn(mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, sh[key & 31u]));
        }
        __syncwarp(); /* keys and the range table are refilled by the next row */
    }
}

/* Whether dense-walk can build on `g` (see its kernels): each atom at most
 * once in a row with shifts in -1..1, at most 32 candidate ranges per cell
 * (a periodic z window splits once at most), j < 2^27. */
bool nl_dense_walk_fits(const mdnl_geom *g)
{
    if (g->natoms >= (1 << 26)) /* the rows' sort keys: j << 6 | entry */
        return false;
    for (int k = 0; k < 3; ++k)
        if (g->pbc[k] && g->ncell[k] < 2 * g->stencil[k] + 1)
            return false;
    return (2 * g->stencil[0] + 1) * (2 * g->stencil[1] + 1) * (g->pbc[2] ? 2 : 1) <= 32;
}


/* The mean row of a full list, from the atoms per cell volume (t-frame
 * cells: exact for orthorhombic boxes, an estimate for skewed ones). */
double nl_dense_walk_row_estimate(const mdnl_geom *g)
{
    double vol = 1.0;
    for (int k = 0; k < 3; ++k)
        vol *= 1.0 / (double)g->inv_cell[k];
    const double rc = g->cutoff;
    return (double)g->natoms / (double)g->ncells / vol * (4.0 / 3.0) * M_PI * rc * rc * rc;
}

/* dense-walk (see its kernels): counting-sort binning, one walk into the
 * slab, scan, rows sorted and written, the long rows last. No
 * synchronisation until the caller's last one: the output arrays keep their
 * size from the frame before or an estimate (the mean row times 1.2), and a
 * CSR that outgrew them is detected there and built again. */
template <bool FULL>
static mdnl_status build_dense_walk(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, int64_t *npairs)
{
    mdnl_status st;
    nl_row_tiles tiles; /* the row scan's, set by the binning */
    const int ntiles = nl_row_scan_tiles(n);
    if ((st = nl_row_tiles_reserve(ctx, ntiles, &tiles)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_BIN, 0);
    if ((st = nl_bin_unstable(ctx, g, pos, n, false, &tiles, ntiles)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_BIN, 1);
    size_t want = (size_t)((double)n * (1.2 * nl_dense_walk_row_estimate(g) + 1.0)) + 1;
    if (want > (size_t)n * WALK_CAP + 1)
        want = (size_t)n * WALK_CAP + 1;
    if ((st = mdnl_dbuf_reserve_zeroed(&ctx->slab, (size_t)n * WALK_CAP * sizeof(unsigned), "neighbor slab",
                                       ctx->stream)) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->j, want * sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->d, want * sizeof(float), "neighbor distances")) != MDNL_OK)
        return st;
    const size_t cj = ctx->j.cap / sizeof(int32_t), cd = ctx->d.cap / sizeof(float);
    const long long cap = (long long)(cj < cd ? cj : cd);
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    const unsigned wblocks = (unsigned)((g->ncells + WALK_T / 32 - 1) / (WALK_T / 32));
    /* the long rows' list: the bin's slot array, free once the cell order is built */
    int *longlist = (int *)ctx->tslot.ptr, *nlong = (int *)ctx->flags.ptr + FLAG_NLONG;
    if ((st = nl_launch(walk_walk_kernel<FULL>, wblocks, WALK_T, ctx->stream, *g, ctx->view,
                        (unsigned *)ctx->slab.ptr, (unsigned long long *)ctx->counts.ptr,
                        (int *)ctx->flags.ptr + 1, longlist, nlong)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    int64_t *offsets = (int64_t *)ctx->offsets.ptr;
    if ((st = nl_scan_counts(ctx, n, &tiles)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_SORT, 0);
    int *flags = (int *)ctx->flags.ptr;
    constexpr int rows_per_block = WALK_RT / 32 * ROWS_W;
    const unsigned rblocks = (unsigned)((n + rows_per_block - 1) / rows_per_block);
    if ((st = nl_launch(walk_rows_kernel, rblocks, WALK_RT, ctx->stream, *g, ctx->view, (const unsigned *)ctx->slab.ptr,
                        (const int64_t *)offsets, cap, (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr,
                        (long long *)(flags + FLAG_NPAIRS), flags + FLAG_OUTGROWN)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SORT, 1);
    STAGE(MDNL_CUDA_STAGE_FILL, 0);
    if ((st = nl_launch(walk_long_kernel<FULL>, 132, LONG_W * 32, ctx->stream, *g, ctx->view,
                        (const int64_t *)offsets, pos, cap, (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr, flags,
                        (const int *)longlist, (const int *)nlong)) != MDNL_OK) /* grid-stride over the list */
        return st;
    STAGE(MDNL_CUDA_STAGE_FILL, 1);
    ctx->deferred = 2; /* the caller reads the pair count and the outgrown flag back */
    *npairs = 0;
    return MDNL_OK;
}


mdnl_status nl_build_dense_walk(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                int64_t *npairs)
{
    return full ? build_dense_walk<true>(ctx, g, pos, n, npairs) : build_dense_walk<false>(ctx, g, pos, n, npairs);
}

/* nlist_cell_dense_walk.cu — dense-walk, the cell-list path for dense rows
 * (nlist_cuda.h): one walk, a warp per home cell, hits into a slab of 64-key
 * rows; then rows sorted in registers and written coalesced. */
#include "nlist_cuda_common.cuh"

#include <math.h>

#define WALK_CAP 64 /* keys per slab row */

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


/* Whether dense-walk's slab rows carry d2 (packed: 8-byte entries, j << 6 |
 * the hit's slot and d2) rather than 4-byte keys (j << 5 | shift code) from
 * which the rows kernel computes d, gathering positions by original index:
 * where fewer than 1 in 16 of the atoms the binning sampled share the cell
 * of the atom before them (nl_flags.inorder), a warp's 32 rows are far
 * apart in space and those gathers miss L1. The host decides by it on the
 * flags read back after a build, for the next build (nl_walk_state.pack),
 * and builds again where a frame's own sample disagrees with the layout it
 * was built in. */
static inline bool nl_walk_may_pack(long long n)
{
    return n < (1LL << 26); /* j << 6 | slot in 32 bits */
}
static inline bool nl_walk_packed(long long n, long long same, long long compared)
{
    return nl_walk_may_pack(n) && !nl_order_follows_space(same, compared);
}


/* ------------------------------------------------------------------------ */
/* dense-walk: one walk, a warp per home cell; rows sorted afterwards.
 *
 * Walk (walk_walk_kernel). Mapping: a warp per cell of the counting-sort
 * binning (the home cell), its atoms (32 at a time) in shared memory with a
 * pointer to each one's slab row. The cell's candidate ranges (as in
 * warp_list_ranges) go to a small shared table once; the warp then takes 32
 * flat candidates per step (each lane finds its range by walking forward in
 * the table, its flat index only grows) and each lane loads one candidate,
 * so a candidate is loaded once per cell instead of once per atom and every
 * lane works in every step.
 *   - A candidate whose image is a cutoff or more from the bounding box of
 *     the home atoms is dropped (mdnl_axis_gap: a bound on every d2 of the
 *     test, exact in float, so no pair is lost); in a half list, so is one
 *     at or below every home atom's 2i (the rule below).
 *   - The kept ones go to a per-warp ring of 128 in shared memory (position
 *     and key; a take looks each one's shift vector up by the key's shift
 *     code rather than storing it: 8 KB a block less, which sets the
 *     carveout, WALK_CARVE_GATHERED). Each time 96 (full lists; half lists
 *     64) are there the warp takes them (three a lane, or two; a home
 *     block's last batch as many as it needs) and tests each against every
 *     home atom a in turn: a broadcast shared load, mdnl_pair_d2 (without
 *     its "+ 0" when every candidate of the take has a zero shift: the same
 *     bits), the half list's rule as one integer compare (2j + [S > 0] >
 *     2i), a ballot.
 *   - The hits of a ballot are appended to a's slab row together: a's
 *     running count plus the hit's rank in the ballot. Lane a keeps a's
 *     count beside a's row pointer in shared memory, so that both are one
 *     16-byte load.
 * The slab holds WALK_CAP entries a row, rows in original index order, in
 * one of two layouts (nl_walk_packed, on the binning's sample of the input
 * order): gathered, 4-byte keys j << 5 | shift code; packed (input order
 * unrelated to space), 8-byte entries (j << 6 | the entry's slot, d2). The
 * host picks the layout before the walk from the frame before's sample
 * (nl_walk_state.pack), so that each layout has a rows kernel of its own
 * registers and shared memory; a frame whose own sample disagrees is built
 * again (dense_walk_finish), so a frame's layout is always its own and a
 * trajectory pays for it only where its order changes.
 * Invariants: the slab is zeroed when allocated, and the rows kernel loads
 * whole 16-byte words of each row up to its own length (not the warp's
 * longest), never uninitialised memory; the walk fills a row's last 32-byte
 * sector past its count with the key ~0u (sorted last) and the rows kernel
 * stages the rest of the row as ~0u, so that it takes keys 16 bytes at a
 * time without a test an entry. The walk counts every row exactly
 * (counts[i]; packed, by cell slot, which the row scan gathers by the
 * binning's rank) and records the longest (its pair of nl_flags.walk);
 * entries past WALK_CAP are dropped (the long rows' kernel writes those
 * rows). There is no count pass: the candidates are walked once.
 *
 * Rows (walk_rows_kernel). Mapping: two threads per original row i (lanes
 * 2r and 2r + 1 of a warp's ROWS_W rows), so a warp's 16 rows are
 * contiguous in the slab and in the CSR. The warp loads its rows into
 * shared memory with coalesced 16-byte loads; each thread takes half its
 * row into registers (16 or 32 keys, compile-time indices; the warp's
 * longest row decides) and the pair sorts the row as one bitonic network
 * (pair_bitonic: one exchange of registers between the two); the warp then
 * writes j, and d entry by entry in output order, with coalesced stores.
 * Half a row a thread keeps the gathered kernel at 64 registers (a whole
 * row took 102, a quarter of the SM's warps). Gathered, d is computed from
 * the positions in original order (the floats the walk used, mdnl_pair_d2:
 * the same bits), a gather an entry that hits L1 when the warp's 32 atoms
 * are neighbours in space and misses it when the input order is random,
 * which is why that order packs. Packed, d = sqrt of the slot's d2, from
 * the warp's d2 rows, staged in a shared buffer of their own in the same
 * pass as the keys (the slab read once); its 80 registers and 17 kB a
 * block would slow the gathered rows if they shared one kernel. Packing
 * costs the ordered inputs more (twice the slab bytes) than their gathers.
 *
 * A row longer than WALK_CAP is walked again by a warp (walk_long_kernel, a
 * no-op when the walk saw no such row; the walk lists the long rows),
 * ranked in shared memory and written into its CSR slots, on a side stream
 * beside the rows kernel. No host synchronisation inside the build: the
 * output arrays are sized from the frame before or an estimate, and a CSR
 * that outgrew them is found by the caller's one read-back and built again.
 *
 * The host uses this path only where an atom appears at most once in a
 * row with shifts in -1..1 (every periodic axis has at least 2 stencil + 1
 * cells), the stencil's ranges fit a warp, and j < 2^27: j alone then orders
 * a row as mdnl_row_key does. */
#define WALK_T 128 /* walk: 4 warps, 4 cells a block */
/* The walk's shared-memory carveout, in percent of the SM's largest (228 KiB; the driver takes the next of its steps
 * at or above). Its 8 blocks an SM (64 registers) need 130 KiB with the driver's 1 KiB a block. The rows kernel's
 * blocks become resident, under PDL, in the carveout of the kernels before it where they fit, so the walk's
 * carveout is in effect the rows kernel's too: gathered, 164 KiB, the gathered rows kernel's own (L1 keeps 92 KiB
 * for its gathers); packed, 196 KiB, what the packed rows kernel runs best after. */
#define WALK_CARVE_GATHERED 66
#define WALK_CARVE_PACKED 80
/* Rows kernel threads a block: packed 2 warps; gathered 4. The gathered kernel's position gathers hit L1,
 * whose size is what the SM's shared memory leaves: at 4 warps its 8 blocks an SM take 163 KiB with the
 * driver's 1 KiB a block (no row id an entry: the staged keys carry their row, walk_rows_out), so the
 * driver picks a 164 KiB carveout and L1 keeps 92 KiB; a row id an entry (1 KiB a warp) would take 195
 * KiB (L1 60 KiB), 2 warps a block 199 KiB (L1 28 KiB). The packed kernel reads no positions. */
#define WALK_RT_PACKED 64
#define WALK_RT_GATHERED 128
#define WALK_RT(PACK) ((PACK) ? WALK_RT_PACKED : WALK_RT_GATHERED)
/* Gathered, a staged key carries its row (j << 9 | code << 4 | r, walk_rows_out) where j < 2^23; a larger frame's
 * rows are written by their own threads (walk_rows_kernel). */
#define WALK_STAGED_ROWID_N (1 << 23)
#define WALK_LPITCH (WALK_CAP + 4) /* rows kernel: 16-byte aligned rows, 8 lanes per LDS.128 phase conflict-free */


/* A home atom's slab row and its length so far, padded to 16 bytes (the
 * stride of home[]: one address a home atom for both loads). */
struct __align__(16) walk_row {
    unsigned *p;
    int cnt;
};

/* Both fields in one 16-byte shared load. */
__device__ __forceinline__ walk_row walk_row_load(const walk_row *r)
{
    const int4 v = *reinterpret_cast<const int4 *>(r);
    walk_row w;
    w.p = reinterpret_cast<unsigned *>((unsigned long long)(unsigned)v.x | (unsigned long long)(unsigned)v.y << 32);
    w.cnt = v.z;
    return w;
}

/* The walk's shared memory (a warp's share of each array). */
struct walk_shared {
    float4 home[WALK_T];
    walk_row row[WALK_T];
    int fe[WALK_T], kb[WALK_T], code[WALK_T];
    float4 cp[4 * WALK_T]; /* kept candidates, a ring of 128 a warp: x, y, z, key (the shift vector from sh) */
    float4 sh[27]; /* shift vectors by code (one 16-byte load a lookup) */
};

/* One warp's home cell (see walk_walk_kernel); PACK: the slab rows carry d2
 * (the host's choice, ctx->walk_pack). */
template <bool FULL, bool PACK>
__device__ __forceinline__ void walk_cell(const mdnl_geom &g, const mdnl_cells_view &c, const mdnl_cell_divs &divs,
                                          int cell, walk_shared &S,
                                          unsigned *__restrict__ slab, unsigned long long *__restrict__ counts,
                                          int *__restrict__ maxlen, int *__restrict__ longlist, int *__restrict__ nlong)
{
    float4 *const home_s = S.home, *const cp_s = S.cp;
    walk_row *const row_s = S.row;
    int *const fe_s = S.fe, *const kb_s = S.kb, *const code_s = S.code;
    const float4 *const sh = S.sh;
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    constexpr size_t pitch = PACK ? 2 * WALK_CAP : WALK_CAP; /* words a slab row */
    /* a ring key is j << KSH | shift code: packed, j already where the slab entry has it (j << 6 | slot) */
    constexpr int KSH = PACK ? 6 : 5;
    const int hb = c.start[cell], he = c.start[cell + 1];
    if (hb == he)
        return;
    int ntot; /* the cell's candidates */
    {
        /* its candidate ranges, flat [fs, fe) from slot kb, in a table */
        const warp_ranges r = warp_list_ranges(g, c, cell, lane, &divs);
        fe_s[w * 32 + lane] = r.fe; /* 0x7fffffff past the last range */
        kb_s[w * 32 + lane] = r.kb - r.fs;
        code_s[w * 32 + lane] = r.code;
        ntot = r.total;
    }
    __syncwarp();
    const unsigned lt = (1u << lane) - 1u;
    const int hbase = w * 32, rbase = w * 128;
    /* candidates a lane a take: full lists 3 (a home atom's loads and count shared by three; the ring of 128
     * holds a take's 96 and a step's 31 more), half lists 2 (their shorter rows gain nothing from a third) */
    constexpr int TC = FULL ? 3 : 2;
    int longest = 0;
    for (int h0 = hb; h0 < he; h0 += 32) {
        const int nh = min(32, he - h0);
        float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        unsigned i2 = 0xffffffffu; /* 2i of home atom `lane` */
        if (lane < nh) {
            const float4 p = c.pos[h0 + lane];
            i2 = 2u * (unsigned)__float_as_int(p.w);
            /* w: the half list 2i, so that the rule is one compare in the loop (below); the full list the
             * atom's own ring key at S = 0, so that the test drops the atom itself by one compare */
            const unsigned hw = FULL ? (unsigned)__float_as_int(p.w) << KSH | (unsigned)SHIFT_CODE_ZERO : i2;
            home_s[hbase + lane] = make_float4(p.x, p.y, p.z, __uint_as_float(hw));
            row_s[hbase + lane].p = slab + (size_t)__float_as_int(p.w) * pitch;
            row_s[hbase + lane].cnt = 0;
            lo[0] = hi[0] = p.x;
            lo[1] = hi[1] = p.y;
            lo[2] = hi[2] = p.z;
        }
        /* the home atoms' bounding box */
        mdnl_warp_box(lo, hi);
        /* half list: the smallest 2i of the home atoms; a candidate with 2j + [S > 0] at or below it is kept
         * by none of them (the rule in take) and is dropped before the ring */
        const int hmin2 = FULL ? 0 : (int)__reduce_min_sync(FULLMASK, i2);
        __syncwarp();
        int cnt = 0; /* lane a: the row length of home atom a so far (row_s's copy: as of the take's start) */
        int head = 0, nk = 0; /* the ring: kept candidates from head, nk of them (uniform) */
        /* Takes up to 32 TC kept candidates off the ring (TC a lane, c = 0 .. TC - 1: slots head + 32 c +
         * lane; lanes past `count` hold none) and tests each against every home atom, appending the hits: a
         * lane's candidates share a home atom's load, its row pointer and count (one shared load: the count as
         * of the take's start, a home atom being met once a take). */
        auto take = [&](int count) {
            __syncwarp(); /* the ring's writes before its reads */
            /* a lane past `count`: never a neighbour, and a zero shift (for the test below) */
            float4 pj[TC];
#pragma unroll
            for (int cc = 0; cc < TC; ++cc) {
                pj[cc] = make_float4(INFINITY, INFINITY, INFINITY, __uint_as_float(SHIFT_CODE_ZERO));
                if (lane + 32 * cc < count)
                    pj[cc] = cp_s[rbase + ((head + 32 * cc + lane) & 127)];
            }
            __syncwarp(); /* its reads before the next writes */
            head = (head + 32 * TC) & 127;
            unsigned key[TC];
            int j[TC], jj[TC];
#pragma unroll
            for (int cc = 0; cc < TC; ++cc) {
                key[cc] = __float_as_uint(pj[cc].w);
                j[cc] = (int)(key[cc] >> KSH);
                /* The half list's rule (mdnl_half_keep: j > i, or j == i with a positive shift) as one compare:
                 * 2j + [S > 0] > 2i. It also drops the home atom itself (j == i, S = 0). */
                jj[cc] = 2 * j[cc] + ((int)(key[cc] & 31u) > SHIFT_CODE_ZERO);
            }
            /* Z: every candidate of the batch has S = 0 (most batches: the ranges come in shift order), and
             * d2 leaves out mdnl_pair_d2's "+ 0" (it can change only the sign of a zero difference, which
             * the square erases: the same bits, three adds fewer a test). */
            auto test = [&](auto zero, auto ncand) {
                constexpr bool Z = decltype(zero)::value;
                constexpr int C = decltype(ncand)::value; /* candidates a lane: 1 where the batch has at most 32 */
                float4 pv[TC] = {}; /* each candidate's shift vector, by its code (unused where Z) */
                if (!Z)
#pragma unroll
                    for (int cc = 0; cc < C; ++cc)
                        pv[cc] = sh[key[cc] & 31u];
#pragma unroll 2
                for (int a = 0; a < nh; ++a) {
                    const float4 pa = home_s[hbase + a];
                    float d2[TC];
                    bool hit[TC];
                    unsigned m[TC];
#pragma unroll
                    for (int cc = 0; cc < C; ++cc) {
                        d2[cc] = mdnl_cand_d2<Z>(pa, pj[cc], pv[cc]);
                        /* full: not the home atom itself (its key at S = 0); half: the rule */
                        hit[cc] = d2[cc] < g.cutoff2 &&
                                  (FULL ? key[cc] != __float_as_uint(pa.w) : jj[cc] > __float_as_int(pa.w));
                        m[cc] = __ballot_sync(FULLMASK, hit[cc]);
                    }
                    const walk_row ra = walk_row_load(row_s + hbase + a);
                    const int ca = ra.cnt;
                    const int n0 = __popc(m[0]);
                    int p[TC];
                    p[0] = ca + __popc(m[0] & lt);
                    if constexpr (C >= 2)
                        p[1] = ca + n0 + __popc(m[1] & lt);
                    if constexpr (C >= 3)
                        p[2] = ca + n0 + __popc(m[1]) + __popc(m[2] & lt);
                    unsigned *const row = ra.p;
#pragma unroll
                    for (int cc = 0; cc < C; ++cc)
                        if (hit[cc] && p[cc] < WALK_CAP) {
                            if (PACK)
                                __stcg(reinterpret_cast<uint2 *>(row) + p[cc],
                                       make_uint2((key[cc] & ~63u) | (unsigned)p[cc], __float_as_uint(d2[cc])));
                            else
                                __stcg(row + p[cc], key[cc]);
                        }
                    if (lane == a)
                        cnt = ca + n0 + (C >= 2 ? __popc(m[1]) : 0) + (C >= 3 ? __popc(m[C - 1]) : 0);
                }
            };
            bool zl = true;
#pragma unroll
            for (int cc = 0; cc < TC; ++cc)
                zl = zl && (key[cc] & 31u) == SHIFT_CODE_ZERO;
            const bool z = __all_sync(FULLMASK, zl);
            auto run = [&](auto ncand) {
                if (z)
                    test(std::true_type{}, ncand);
                else
                    test(std::false_type{}, ncand);
            };
            /* as many candidates a lane as the take has: a home block's last take one or two where it has no
             * more (the three-candidate test exists only where TC is 3) */
            if (count > 32 * (TC - 1))
                run(std::integral_constant<int, TC>{});
            else if (TC == 3 && count > 32)
                run(std::integral_constant<int, 2>{});
            else
                run(std::integral_constant<int, 1>{});
            /* each home atom's count for the next take (a home atom is met once a take, so its shared copy
             * needs no update inside one); the next take's __syncwarp orders it before its reads */
            __syncwarp();
            if (lane < nh)
                row_s[hbase + lane].cnt = cnt;
        };
        int q = 0; /* this lane's range (its flat index only grows) */
        for (int base = 0; base < ntot; base += 32) {
            /* kept only if it can be within the cutoff of the home box (a bound on every d2 below) */
            const mdnl_warp_cand cd =
                mdnl_warp_candidate<true>(g, c, fe_s + hbase, kb_s + hbase, code_s + hbase, sh, base + lane, ntot, q, lo, hi);
            const unsigned key = ((unsigned)__float_as_int(cd.p.w) << KSH) | (unsigned)cd.code;
            const bool keep =
                cd.keep && (FULL || 2 * __float_as_int(cd.p.w) + (cd.code > SHIFT_CODE_ZERO) > hmin2);
            const unsigned km = __ballot_sync(FULLMASK, keep);
            if (keep) {
                const int slot = rbase + ((head + nk + __popc(km & lt)) & 127);
                cp_s[slot] = make_float4(cd.p.x, cd.p.y, cd.p.z, __uint_as_float(key));
            }
            nk += __popc(km);
            if (nk >= 32 * TC) {
                take(32 * TC);
                nk -= 32 * TC;
            }
        }
        if (nk > 0)
            take(nk);
        if (lane < nh) {
            /* the row's last 32-byte sector written whole, so that L2 evicts no partly written sector, which
             * the DRAM would read back to merge; past the count with the key ~0u, which sorts last, so that the
             * rows kernel takes a 16-byte word of keys whole (its entries past the count are never written) */
            constexpr int E = PACK ? 4 : 8; /* entries a sector */
            unsigned *const row = row_s[hbase + lane].p;
            const int pend = min((cnt + E - 1) & ~(E - 1), WALK_CAP);
            for (int p = cnt; p < pend; ++p) {
                if (PACK)
                    __stcg(reinterpret_cast<uint2 *>(row) + p, make_uint2(~0u, 0u));
                else
                    __stcg(row + p, ~0u);
            }
            /* packed (the input order unrelated to space), by cell slot: coalesced, where by i a count was a
             * partly written sector of its own (the row scan gathers them by rank); gathered, by i */
            counts[PACK ? h0 + lane : __float_as_uint(home_s[hbase + lane].w) >> (FULL ? KSH : 1)] =
                (unsigned long long)cnt;
            longest = max(longest, cnt);
            if (cnt > WALK_CAP) /* rare: walk_long_kernel's list (at most one entry a slot) */
                longlist[atomicAdd(nlong, 1)] = h0 + lane;
        }
        __syncwarp(); /* home_s, row_s and the ring are refilled by the next 32 */
    }
    const int m = (int)__reduce_max_sync(FULLMASK, (unsigned)longest);
    if (lane == 0 && m > *(volatile int *)maxlen)
        atomicMax(maxlen, m);
}

/* Full lists ask ptxas for 8 blocks an SM (64 registers: the code it gives them so is the one measured with
 * their takes of three candidates a lane); half lists leave it to ptxas (0: no minimum; 63 registers, their
 * code as before). */
template <bool FULL, bool PACK>
__global__ __launch_bounds__(WALK_T, FULL ? 8 : 0) void walk_walk_kernel(
    const __grid_constant__ mdnl_geom g, mdnl_cells_view c, mdnl_cell_divs divs, unsigned *__restrict__ slab,
    unsigned long long *__restrict__ counts, int *__restrict__ walk, int *__restrict__ longlist)
{
    int *const maxlen = walk, *const nlong = walk + 1; /* this build's pair of the flags (nl_flags.walk) */
    nl_grid_wait();
    constexpr int W = WALK_T / 32;
    if (blockIdx.x == 0 && threadIdx.x == 0)
        counts[c.natoms] = 0; /* the scan's last term: the walk writes every count, the host clears none */
    __shared__ walk_shared S;
    if (threadIdx.x < 27)
        S.sh[threadIdx.x] = shift_vector4_of_code(g, threadIdx.x);
    __syncthreads();
    const int cell = blockIdx.x * W + (threadIdx.x >> 5);
    if (cell >= c.ncells)
        return; /* the whole warp */
    walk_cell<FULL, PACK>(g, c, divs, cell, S, slab, counts, maxlen, longlist, nlong);
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

/* One gathered row's keys out, sorted (thread h of the row's pair holds
 * entries h HK ..). Staged (every row of the warp is the pair's own, so
 * the warp's rows, contiguous in the CSR, fit the stage): the sorted keys,
 * each with its row r in its low bits (j << 9 | code << 4 | r: no row id
 * array, so 8 blocks fit the 164 KiB carveout; j < 2^23, walk_rows_kernel),
 * go to shared memory in output order, and the warp writes j,
 * then computes and writes d, entry by entry in output order (coalesced
 * stores), a lane's 8 gathers issued together so that their latencies
 * overlap. Otherwise each thread writes its own entries. */
template <int HK>
__device__ __forceinline__ void walk_rows_out(unsigned (&x)[WALK_CAP / 2], int len, int h, int r, bool mine,
                                            long long off, long long wbase, int span, bool staged, float4 pi,
                                            const float4 *__restrict__ opos, const float4 *sh,
                                            unsigned *__restrict__ st, const float4 *__restrict__ pis, int lane,
                                            int32_t *__restrict__ j_out, float *__restrict__ d_out)
{
    const int e0 = h * HK;
    if (staged) {
        const int rel = (int)(off - wbase) + e0;
#pragma unroll
        for (int e = 0; e < HK; ++e)
            if (e0 + e < len)
                st[rel + e] = x[e] << 4 | (unsigned)r; /* j << 9 | code << 4 | r (j < 2^23: staged) */
        __syncwarp();
        for (int e = lane; e < span; e += 32)
            __stcs(j_out + wbase + e, (int32_t)(st[e] >> 9));
        /* GB entries a lane at a time, their gathers issued together: an entry past the span gathers the
         * span's last one again (a clamped index, no branch before the loads) and is not stored */
        constexpr int GB = 8;
        for (int eb = lane; eb < span; eb += 32 * GB) {
            unsigned key[GB];
            float4 pj[GB];
#pragma unroll
            for (int u = 0; u < GB; ++u) {
                key[u] = st[min(eb + 32 * u, span - 1)];
                pj[u] = __ldg(opos + (key[u] >> 9));
            }
#pragma unroll
            for (int u = 0; u < GB; ++u) {
                const int e = eb + 32 * u;
                if (e < span) {
                    const float4 p = pis[key[u] & 15u];
                    float v[3];
                    shift_of(sh, key[u] >> 4 & 31u, v);
                    __stcs(d_out + wbase + e, __fsqrt_rn(mdnl_pair_d2(p.x, p.y, p.z, pj[u].x, pj[u].y, pj[u].z, v)));
                }
            }
        }
        return;
    }
    if (!mine)
        return;
#pragma unroll
    for (int e = 0; e < HK; ++e)
        if (e0 + e < len) {
            const unsigned key = x[e];
            const float4 pj = __ldg(opos + (key >> 5));
            float v[3];
            shift_of(sh, key & 31u, v);
            __stcs(j_out + off + e0 + e, (int32_t)(key >> 5));
            __stcs(d_out + off + e0 + e, __fsqrt_rn(mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, v)));
        }
}

/* Two packed slab entries past a row's length: keys ~0u (sorted last, never written), d2 0. */
__device__ const uint4 walk_no_entries = {~0u, 0u, ~0u, 0u};

/* Packed slab rows: the warp's rows into shared memory in
 * one pass, 16 bytes (two entries) a lane, the keys to st and the d2 to d2s,
 * each row's entries up to its own length (len: lanes 2r and 2r + 1 hold
 * row r's), all sixteen loads in flight together (written as predicated
 * loads, the compiler issued them three at a time). */
__device__ __forceinline__ void walk_rows_stage(const uint2 *__restrict__ src, int len,
                                              unsigned *__restrict__ st, unsigned *__restrict__ d2s, int lane)
{
    const uint4 *s4 = reinterpret_cast<const uint4 *>(src);
    /* bit r: whether this lane's two entries of row r are in the row (a row past the last atom has len 0) */
    const int words = (min(len, WALK_CAP) + 1) / 2; /* this lane's row's 16-byte words */
    unsigned in = 0;
#pragma unroll
    for (int r = 0; r < ROWS_W; ++r)
        in |= (unsigned)(lane < __shfl_sync(FULLMASK, words, 2 * r)) << r;
    /* A lane past its row's entries loads two empty entries (walk_no_entries: one 16-byte word that every such
     * lane shares) and stages them: no branch, so the loads go out together, and every row is staged whole (the
     * walk filled its last sector with ~0u keys), so the keys are taken 16 bytes at a time without a test an
     * entry. */
#pragma unroll
    for (int row = 0; row < ROWS_W; ++row) {
        const uint4 *const a = (in >> row) & 1u ? s4 + row * (WALK_CAP / 2) + lane : &walk_no_entries;
        const uint4 u = __ldcs(a);
        *reinterpret_cast<uint2 *>(st + row * WALK_LPITCH + 2 * lane) = make_uint2(u.x, u.z);
        *reinterpret_cast<uint2 *>(d2s + row * WALK_LPITCH + 2 * lane) = make_uint2(u.y, u.w);
    }
}

/* One packed row's keys out, sorted (as in walk_rows_out; a key is j << 6 |
 * the hit's slot in its row): j written; then each thread takes the d2 of
 * its sorted keys from the warp's d2 rows (d2s, staged with the keys) and d
 * = sqrt(d2) is written (the walk's d2: d has the bits of mdnl_pair_d2, as
 * the gathering path's). Staged (as in walk_rows_out): j, then d, through shared
 * memory in output order, written coalesced; otherwise each thread writes
 * its own entries. */
template <int HK>
__device__ __forceinline__ void walk_rows_out_packed(unsigned (&x)[WALK_CAP / 2], int len, int h, int r, bool mine,
                                                   long long off, long long wbase, int span, bool staged,
                                                   const unsigned *__restrict__ d2s,
                                                   unsigned *__restrict__ st, int lane, int32_t *__restrict__ j_out,
                                                   float *__restrict__ d_out)
{
    const int e0 = h * HK;
    const int rel = (int)(off - wbase) + e0;
    if (staged) {
#pragma unroll
        for (int e = 0; e < HK; ++e)
            if (e0 + e < len)
                st[rel + e] = x[e] >> 6;
        __syncwarp();
        for (int e = lane; e < span; e += 32)
            __stcs(j_out + wbase + e, (int32_t)st[e]);
        __syncwarp();
    } else if (mine) {
#pragma unroll
        for (int e = 0; e < HK; ++e)
            if (e0 + e < len)
                __stcs(j_out + off + e0 + e, (int32_t)(x[e] >> 6));
    }
#pragma unroll
    for (int e = 0; e < HK; ++e) /* the key dies as its d2 is read (past the row's length: slot 63's, unused) */
        x[e] = d2s[r * WALK_LPITCH + (x[e] & 63u)];
    if (staged && span <= ROWS_W * WALK_CAP / 2) {
        /* rows of 32 entries or fewer on average in 64-key halves (half lists): most of the second half's
         * entries are past its row, so d2 is staged in output order and its square root taken there, a lane
         * an entry, instead of HK a thread in divergent turns (full rows, mostly full halves, keep theirs) */
        __syncwarp(); /* every d2 read before the stage is overwritten */
#pragma unroll
        for (int e = 0; e < HK; ++e)
            if (e0 + e < len)
                st[rel + e] = x[e];
        __syncwarp();
        for (int e = lane; e < span; e += 32)
            __stcs(d_out + wbase + e, __fsqrt_rn(__uint_as_float(st[e])));
    } else if (staged) {
        __syncwarp(); /* every d2 read before the stage is overwritten */
#pragma unroll
        for (int e = 0; e < HK; ++e)
            if (e0 + e < len)
                st[rel + e] = __float_as_uint(__fsqrt_rn(__uint_as_float(x[e])));
        __syncwarp();
        for (int e = lane; e < span; e += 32)
            __stcs(d_out + wbase + e, __uint_as_float(st[e]));
    } else if (mine) {
#pragma unroll
        for (int e = 0; e < HK; ++e)
            if (e0 + e < len)
                __stcs(d_out + off + e0 + e, __fsqrt_rn(__uint_as_float(x[e])));
    }
}

/* The pair count and whether the CSR passed `cap` pairs (then nothing is
 * written: the host grows the output and builds again) to the flags or the
 * host's read-back (host_flags: nl_flags_publish); and the other parity's
 * pair of dense-walk's flags (walk_next, which the next dense-walk build
 * uses) zeroed: with host_flags the device's flags are then zero but for
 * this build's pair, which the long rows beside may still read. */
template <bool PACK>
__global__ __launch_bounds__(WALK_RT(PACK), PACK ? 12 : 1024 / WALK_RT_GATHERED) void walk_rows_kernel(
    const __grid_constant__ mdnl_geom g, const unsigned *__restrict__ slab, int n, const int64_t *__restrict__ offsets,
    const float4 *__restrict__ opos, long long cap, int32_t *__restrict__ j_out, float *__restrict__ d_out,
    int *__restrict__ flags, int *__restrict__ host_flags, int *__restrict__ walk_next,
    const unsigned long long *__restrict__ counts)
{
    if (PACK)
        nl_grid_wait();
    __shared__ __align__(16) unsigned stage_s[WALK_RT(PACK) / 32][ROWS_W * WALK_LPITCH];
    /* packed: the d2 rows; gathered: the rows' positions */
    unsigned *d2s = nullptr;
    float4 *pis = nullptr;
    if constexpr (PACK) {
        __shared__ __align__(16) unsigned d2_s[WALK_RT(PACK) / 32][ROWS_W * WALK_LPITCH];
        d2s = d2_s[threadIdx.x >> 5];
    } else {
        __shared__ float4 pi_s[WALK_RT(PACK) / 32][ROWS_W];
        pis = pi_s[threadIdx.x >> 5];
    }
    __shared__ float4 sh[27];
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int r = lane >> 1, h = lane & 1; /* the warp's row r, its half h */
    const int i0 = (blockIdx.x * (WALK_RT(PACK) / 32) + w) * ROWS_W;
    const int i = i0 + r;
    /* Packed: the row's offsets (past n: offsets[n], an empty row) and the total, loaded together, after the
     * scan. Gathered: the row's length from the walk's counts (by i, through L2) and then its slab row, read
     * before this grid waits for the scan: the grid is launched only once every block of the scan has passed
     * its own wait, which returns after the walk has finished and its writes are visible. The rows are staged
     * and sorted while the scan ends, and the offsets loaded after it (below). */
    long long off = 0, total = 0;
    int len = 0;
    if (PACK) {
        off = offsets[min(i, n)];
        const long long nxt = offsets[min(i + 1, n)];
        total = offsets[n];
        len = (int)(nxt - off);
    } else {
        len = i < n ? (int)__ldcg(counts + i) : 0;
    }
    if (threadIdx.x < 27)
        sh[threadIdx.x] = shift_vector4_of_code(g, threadIdx.x);
    __syncthreads();
    if (blockIdx.x == 0 && threadIdx.x == 0) { /* the flags, after the scan (gathered: this thread waits for it) */
        if (!PACK) {
            nl_grid_wait();
            total = offsets[n];
        }
        nl_flags_publish(flags, host_flags, total, total > cap);
        walk_next[0] = walk_next[1] = 0;
    }
    if (PACK && total > cap)
        return; /* the whole grid */
    if (i0 >= n)
        return; /* the whole warp */
    /* Rows longer than WALK_CAP are walk_long_kernel's. */
    const bool mine = len <= WALK_CAP;
    const int wmax = (int)__reduce_max_sync(FULLMASK, (unsigned)len);
    unsigned *const st = stage_s[w];
    const uint2 *const prows = reinterpret_cast<const uint2 *>(slab) + (size_t)i0 * WALK_CAP;
    if constexpr (PACK) {
        walk_rows_stage(prows, len, st, d2s, lane);
    } else {
        /* the warp's rows, 16 bytes a lane, into shared memory: each row's
         * words up to its own length (its lanes' len, by shuffles before
         * the loads), and the key ~0u past them (the walk filled the row's
         * last sector with it): every row staged whole */
        const uint4 *src = reinterpret_cast<const uint4 *>(slab + (size_t)i0 * WALK_CAP);
        /* two rows a step, lane q of a half its entries 4q .. 4q + 3; the loads issued before the stores */
        uint4 u[ROWS_W / 2];
        bool in[ROWS_W / 2];
        const int q = lane & 15;
        const int words = (min(len, WALK_CAP) + 3) / 4; /* this lane's row's 16-byte words (past the last atom: 0) */
#pragma unroll
        for (int t = 0; t < ROWS_W / 2; ++t) {
            const int row = 2 * t + (lane >> 4);
            in[t] = q < __shfl_sync(FULLMASK, words, 2 * row);
            u[t] = in[t] ? __ldcs(src + row * (WALK_CAP / 4) + q) : make_uint4(~0u, ~0u, ~0u, ~0u);
        }
#pragma unroll
        for (int t = 0; t < ROWS_W / 2; ++t)
            *reinterpret_cast<uint4 *>(st + (2 * t + (lane >> 4)) * WALK_LPITCH + 4 * q) = u[t];
    }
    __syncwarp();
    /* Gathered, a staged key carries its row (walk_rows_out), which needs j < 2^23: a larger frame's warps
     * take the path of a warp with a row past WALK_CAP (32 keys a thread, each thread writing its own row). */
    const int wlen = PACK || n <= WALK_STAGED_ROWID_N ? wmax : WALK_CAP + 1;
    /* the pair's halves: HK keys each (HK = 16 where every row of the warp fits 32) */
    const int hk = wlen <= WALK_CAP / 2 ? WALK_CAP / 4 : WALK_CAP / 2;
    const int e0 = h * hk;
    /* the keys past the row's length are ~0u (staged so): they sort last and are never written */
    unsigned x[WALK_CAP / 2];
#pragma unroll
    for (int q = 0; q < WALK_CAP / 8; ++q) {
        uint4 u = make_uint4(~0u, ~0u, ~0u, ~0u);
        if (4 * q < hk)
            u = *reinterpret_cast<const uint4 *>(st + r * WALK_LPITCH + e0 + 4 * q);
        x[4 * q] = u.x;
        x[4 * q + 1] = u.y;
        x[4 * q + 2] = u.z;
        x[4 * q + 3] = u.w;
    }
    /* gathered: the row's own position, loaded before the sort (in flight while it runs) */
    const float4 pi = !PACK && i < n ? opos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    if (hk == WALK_CAP / 4)
        pair_bitonic<WALK_CAP / 4>(x, h);
    else
        pair_bitonic<WALK_CAP / 2>(x, h);
    if (!PACK) { /* the scan's offsets */
        nl_grid_wait();
        off = offsets[min(i, n)];
        total = offsets[n];
        if (total > cap)
            return; /* the whole grid */
    }
    const long long wbase = __shfl_sync(FULLMASK, off, 0);
    const long long wend = __shfl_sync(FULLMASK, off + len, 31);
    const bool staged = wlen <= WALK_CAP; /* the warp's span fits its stage (ROWS_W rows of WALK_CAP) */
    const int span = staged ? (int)(wend - wbase) : 0;
    if constexpr (PACK) {
        __syncwarp(); /* st is reused for the output */
        if (hk == WALK_CAP / 4)
            walk_rows_out_packed<WALK_CAP / 4>(x, len, h, r, mine, off, wbase, span, staged, d2s, st,
                                               lane, j_out, d_out);
        else
            walk_rows_out_packed<WALK_CAP / 2>(x, len, h, r, mine, off, wbase, span, staged, d2s, st,
                                               lane, j_out, d_out);
        return;
    }
    if (h == 0)
        pis[r] = pi;
    __syncwarp(); /* st is reused for the output */
    if (hk == WALK_CAP / 4)
        walk_rows_out<WALK_CAP / 4>(x, len, h, r, mine, off, wbase, span, staged, pi, opos, sh, st, pis,
                                    lane, j_out, d_out);
    else
        walk_rows_out<WALK_CAP / 2>(x, len, h, r, mine, off, wbase, span, staged, pi, opos, sh, st, pis,
                                    lane, j_out, d_out);
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
 * (as the walk does, without the bounding-box pruning; LONG_BATCH steps'
 * loads issued together: a long row's walk is a chain of round trips, and
 * a frame has few such rows, so latency is its time), appends the hits'
 * keys (j << 5 | shift code) to shared memory, and writes each at its rank
 * among the row's keys (j alone orders a row here: each atom appears once),
 * with d computed as walk_rows_kernel computes it (the same bits). A row
 * longer than LONG_KEYS goes to walk_long_row (one thread, sorted in global
 * memory). A walk that disagrees with the count sets *fail (the device's
 * flags or the host's read-back). Without a long row (walk[0], the walk's
 * longest; walk[1] rows listed) or room in the output, every thread returns
 * at once. */
#define LONG_W 4      /* warps a block */
#define LONG_KEYS 512 /* keys a warp in shared memory */
#define LONG_BATCH 4  /* steps of 32 candidates whose loads a warp issues together */
/* 64 registers (__maxnreg__): left to itself ptxas gives this kernel 40 and
 * spills the batch's positions as they arrive, which waits for each load */
template <bool FULL>
__global__ __maxnreg__(64) void walk_long_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                              const int64_t *__restrict__ offsets,
                                                              const float4 *__restrict__ opos, long long cap,
                                                              int32_t *__restrict__ j_out, float *__restrict__ d_out,
                                                              const int *__restrict__ walk, int *__restrict__ fail,
                                                              const int *__restrict__ longlist)
{
    nl_grid_wait();
    if (walk[0] <= WALK_CAP || offsets[c.natoms] > cap)
        return;
    __shared__ unsigned keys_s[LONG_W][LONG_KEYS];
    __shared__ int fe_s[LONG_W * 32], kb_s[LONG_W * 32], code_s[LONG_W * 32];
    __shared__ float4 sh[27];
    if (threadIdx.x < 27)
        sh[threadIdx.x] = shift_vector4_of_code(g, threadIdx.x);
    __syncthreads();
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, wb = w * 32;
    const unsigned lt = (1u << lane) - 1u;
    unsigned *const keys = keys_s[w];
    const int nl = walk[1];
    for (int t = blockIdx.x * LONG_W + w; t < nl; t += gridDim.x * LONG_W) {
        const int s = longlist[t];
        const int i = c.order[s];
        const long long off = offsets[i];
        const int len = (int)(offsets[i + 1] - off);
        if (len > LONG_KEYS) { /* warp-uniform */
            if (lane == 0)
                walk_long_row<FULL>(g, c, s, offsets, j_out, d_out, fail);
            __syncwarp();
            continue;
        }
        const float4 pi = c.pos[s];
        const warp_ranges r = warp_list_ranges(g, c, mdnl_cell_linear(g, pi.x, pi.y, pi.z), lane);
        fe_s[wb + lane] = r.fe;
        kb_s[wb + lane] = r.kb - r.fs;
        code_s[wb + lane] = r.code;
        const int ntot = r.total;
        __syncwarp();
        int cnt = 0, q = 0;
        for (int base = 0; base < ntot; base += 32 * LONG_BATCH) {
            /* LONG_BATCH steps' candidates loaded before any is tested: their loads in flight together */
            float4 pj[LONG_BATCH];
            int k[LONG_BATCH], code[LONG_BATCH];
#pragma unroll
            for (int u = 0; u < LONG_BATCH; ++u) {
                const int fl = base + 32 * u + lane;
                k[u] = -1;
                code[u] = SHIFT_CODE_ZERO;
                if (fl < ntot) {
                    while (fe_s[wb + q] <= fl)
                        ++q;
                    k[u] = kb_s[wb + q] + fl;
                    code[u] = code_s[wb + q];
                    pj[u] = c.pos[k[u]];
                }
            }
#pragma unroll
            for (int u = 0; u < LONG_BATCH; ++u) {
                bool hit = false;
                unsigned key = 0;
                if (k[u] >= 0) {
                    const int j = __float_as_int(pj[u].w);
                    float v[3];
                    shift_of(sh, code[u], v);
                    const float d2 = mdnl_pair_d2(pi.x, pi.y, pi.z, pj[u].x, pj[u].y, pj[u].z, v);
                    hit = d2 < g.cutoff2 && !(code[u] == SHIFT_CODE_ZERO && k[u] == s);
                    if (!FULL) {
                        int s0, s1, s2;
                        shift_of_code(code[u], s0, s1, s2);
                        hit = hit && mdnl_half_keep(i, j, s0, s1, s2);
                    }
                    key = ((unsigned)j << 5) | (unsigned)code[u];
                }
                const unsigned m = __ballot_sync(FULLMASK, hit);
                const int p = cnt + __popc(m & lt);
                if (hit && p < LONG_KEYS)
                    keys[p] = key;
                cnt += __popc(m);
            }
        }
        __syncwarp();
        if (cnt != len) {
            if (lane == 0)
                *(volatile int *)fail = 1; /* a store: fail may be the host's mapped read-back */
            continue;
        }
        for (int e = lane; e < len; e += 32) {
            const unsigned key = keys[e];
            int rank = 0;
            for (int o = 0; o < len; ++o)
                rank += keys[o] < key;
            const float4 pj = __ldg(opos + (key >> 5));
            j_out[off + rank] = (int32_t)(key >> 5);
            float v[3];
            shift_of(sh, key & 31u, v);
            d_out[off + rank] = __fsqrt_rn(mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, v));
        }
        __syncwarp(); /* keys and the range table are refilled by the next row */
    }
}

/* Whether dense-walk can build on `g` (see its kernels): each atom at most
 * once in a row with shifts in -1..1, at most 32 candidate ranges per cell
 * (a periodic z window splits once at most), j < 2^27. */
static bool dense_walk_fits(const mdnl_geom *g)
{
    if (g->natoms >= (1 << 27))
        return false;
    for (int k = 0; k < 3; ++k)
        if (g->pbc[k] && g->ncell[k] < 2 * g->stencil[k] + 1)
            return false;
    return (2 * g->stencil[0] + 1) * (2 * g->stencil[1] + 1) * (g->pbc[2] ? 2 : 1) <= 32;
}

/* The mean row of a full list, from the atoms per cell volume (t-frame
 * cells: exact for orthorhombic boxes, an estimate for skewed ones). */
static double dense_walk_row_estimate(const mdnl_geom *g)
{
    double vol = 1.0;
    for (int k = 0; k < 3; ++k)
        vol *= 1.0 / (double)g->inv_cell[k];
    const double rc = g->cutoff;
    return (double)g->natoms / (double)g->ncells / vol * (4.0 / 3.0) * M_PI * rc * rc * rc;
}

/* dense-walk (see its kernels): counting-sort binning, one walk into the
 * slab, scan, rows sorted and written, the long rows beside them. No
 * synchronisation until the caller's last one: the output arrays keep their
 * size from the frame before or an estimate (below), and a CSR that outgrew
 * them is detected there and built again (dense_walk_finish). */
template <bool FULL>
static mdnl_status build_dense_walk(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, int64_t *npairs)
{
    nl_walk_state *w = &ctx->walk;
    mdnl_status st;
    nl_row_tiles tiles; /* the row scan's, set by the binning */
    const int ntiles = nl_row_scan_tiles(n);
    if ((st = nl_row_tiles_reserve(ctx, ntiles, &tiles)) != MDNL_OK)
        return st;
    /* the layout the host chose (w->pack: the last frame's sample; the caller builds again if this frame's
     * disagrees): 8-byte entries packed, 4-byte keys gathered */
    const bool pack = nl_walk_may_pack(n) && w->pack;
    STAGE(MDNL_CUDA_STAGE_BIN, 0);
    /* packed: the cell order's inverse too (view.rank), by which the row scan gathers the counts */
    if ((st = nl_bin_unstable(ctx, g, pos, n, pack, &tiles, ntiles)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_BIN, 1);
    /* the output's first size: the mean row (half of it for a half list) times 1.2 */
    size_t want = (size_t)((double)n * (1.2 * dense_walk_row_estimate(g) * (FULL ? 1.0 : 0.5) + 1.0)) + 1;
    if (want > (size_t)n * WALK_CAP + 1)
        want = (size_t)n * WALK_CAP + 1;
    w->rows = pack ? 1 : 0;
    const size_t entry = pack ? sizeof(uint2) : sizeof(unsigned);
    if ((st = mdnl_dbuf_reserve_zeroed(&w->slab, (size_t)n * WALK_CAP * entry, "neighbor slab", ctx->stream)) !=
            MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->j, want * sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->d, want * sizeof(float), "neighbor distances")) != MDNL_OK)
        return st;
    const size_t cj = ctx->j.cap / sizeof(int32_t), cd = ctx->d.cap / sizeof(float);
    const long long cap = (long long)(cj < cd ? cj : cd);
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    const unsigned wblocks = (unsigned)((g->ncells + WALK_T / 32 - 1) / (WALK_T / 32));
    /* the long rows' list: gathered, the bin's slot array (free once the cell order is built); packed, a buffer
     * of its own (the slot array holds the rank the scan gathers by) */
    if (pack && (st = mdnl_dbuf_reserve(&w->longlist, (size_t)n * sizeof(int), "long rows")) != MDNL_OK)
        return st;
    int *longlist = (int *)(pack ? w->longlist.ptr : ctx->tslot.ptr);
    /* this build's pair of dense-walk's flags (zero: the last dense-walk build, or the memset, zeroed it), and the
     * next build's, which the rows kernel zeroes */
    nl_flags *flags = nl_dev_flags(ctx);
    const int parity = w->parity;
    int *walk = flags->walk[parity], *walk_next = flags->walk[1 - parity];
    if ((st = nl_launch(pack ? walk_walk_kernel<FULL, true> : walk_walk_kernel<FULL, false>, wblocks, WALK_T,
                        ctx->stream, *g, ctx->view, mdnl_cell_divs_of(*g), (unsigned *)w->slab.ptr,
                        (unsigned long long *)ctx->counts.ptr, walk, longlist)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    int64_t *offsets = (int64_t *)ctx->offsets.ptr;
    if ((st = nl_scan_counts(ctx, n, &tiles, pack ? ctx->view.rank : nullptr)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    /* The long rows on the side stream, beside the rows kernel: they need
     * only the scan, and the two write disjoint rows of the CSR and of the
     * flags (the rows kernel skips a row longer than WALK_CAP, and writes a
     * warp's run whole only where it has none). The main stream joins them
     * before the caller's read-back. Timed stage by stage, they run alone on
     * the main stream first, so that each stage is its kernel's time. */
    const bool beside = ctx->timing != MDNL_CUDA_TIMING_STAGES;
    cudaStream_t ls = beside ? w->side : ctx->stream;
    if (beside) {
        MDNL_CUDA_CHECK(cudaEventRecord(w->fork, ctx->stream));
        MDNL_CUDA_CHECK(cudaStreamWaitEvent(w->side, w->fork, 0));
    }
    STAGE(MDNL_CUDA_STAGE_FILL, 0);
    /* grid-stride over the list: a block an SM */
    walk_long_kernel<FULL><<<ctx->sm_count, LONG_W * 32, 0, ls>>>(
        *g, ctx->view, (const int64_t *)offsets, pos, cap, (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr, walk,
        &(ctx->d_host_flags ? ctx->d_host_flags : flags)->mismatch, (const int *)longlist);
    MDNL_CUDA_LAUNCHED(ls);
    STAGE(MDNL_CUDA_STAGE_FILL, 1);
    if (beside)
        MDNL_CUDA_CHECK(cudaEventRecord(w->join, w->side));
    STAGE(MDNL_CUDA_STAGE_SORT, 0);
    const int rows_threads = WALK_RT(pack), rows_per_block = rows_threads / 32 * ROWS_W;
    const unsigned rblocks = (unsigned)((n + rows_per_block - 1) / rows_per_block);
    st = nl_launch(pack ? walk_rows_kernel<true> : walk_rows_kernel<false>, rblocks, rows_threads, ctx->stream, *g,
                   (const unsigned *)w->slab.ptr, n, (const int64_t *)offsets, pos, cap, (int32_t *)ctx->j.ptr,
                   (float *)ctx->d.ptr, nl_flag_ints(flags), nl_flag_ints(ctx->d_host_flags), walk_next,
                   (const unsigned long long *)ctx->counts.ptr);
    if (beside) /* joined whatever the rows launch did: nothing on the main stream runs ahead of the long rows */
        MDNL_CUDA_CHECK(cudaStreamWaitEvent(ctx->stream, w->join, 0));
    if (st != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SORT, 1);
    /* written there by the rows kernel, which left the device's flags zero but for this build's pair */
    ctx->flags_on_host = ctx->flags_zero = ctx->d_host_flags != nullptr;
    w->parity = 1 - parity;
    *npairs = 0; /* read back (dense_walk_finish) */
    return MDNL_OK;
}

static mdnl_status dense_walk_build(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, bool full,
                                    int64_t *npairs)
{
    return full ? build_dense_walk<true>(ctx, g, pos, n, npairs) : build_dense_walk<false>(ctx, g, pos, n, npairs);
}

/* After the read-back: the pair count; a frame built in the layout the frame
 * before called for, not its own (the CSR is the same, only its speed
 * differs), is built again in its own, so that a frame's layout is its own;
 * an outgrown output (nothing was written) is grown to the exact size and
 * the frame built again. */
static mdnl_status dense_walk_finish(mdnl_cuda_ctx *ctx, const nl_flags *h, int n, int64_t *npairs, bool *again)
{
    nl_walk_state *w = &ctx->walk;
    *npairs = h->npairs;
    const int pack = nl_walk_packed(n, h->inorder[0], h->inorder[1]);
    if (pack != w->rows) {
        w->pack = pack;
        ctx->retries++;
        *again = true;
        return MDNL_OK;
    }
    if (h->outgrown) {
        const size_t np = (size_t)(*npairs > 0 ? *npairs : 1);
        mdnl_status st;
        if ((st = mdnl_dbuf_reserve(&ctx->j, np * sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
            (st = mdnl_dbuf_reserve(&ctx->d, np * sizeof(float), "neighbor distances")) != MDNL_OK)
            return st;
        ctx->retries++;
        *again = true;
    }
    return MDNL_OK;
}

/* The least bytes of each stage (mdnl_cuda_ctx_stage_bytes): slab entries of
 * 4 bytes gathered, 8 packed; the long rows are not modelled. */
static void dense_walk_floor_bytes(const mdnl_cuda_ctx *ctx, const mdnl_geom *g, int n, int64_t npairs,
                                   double b[MDNL_CUDA_NSTAGES])
{
    const bool packed = ctx->walk.rows != 0;
    const double na = (double)n, np = (double)npairs;
    const double starts = 4 * ((double)g->ncells + 1); /* the cells' starts */
    const double entry = packed ? 8 : 4;
    /* the binning: positions in (16 bytes an atom); the cell list's view out (mdnl_cells_view: positions in
     * cell order, order and rank, 24 bytes an atom, and the cells' starts) */
    b[MDNL_CUDA_STAGE_BIN] = 16 * na + 24 * na + starts;
    /* the walk: cell-ordered positions and starts in; a slab entry a pair and a count a row out */
    b[MDNL_CUDA_STAGE_COUNT] = 16 * na + starts + entry * np + 8 * na;
    /* counts in (packed: by cell slot, gathered by rank), offsets out */
    b[MDNL_CUDA_STAGE_SCAN] = 8 * (na + 1) + (packed ? 4 * na : 0) + 8 * (na + 1);
    /* the rows: the slab and the offsets in (gathered: the positions too), the CSR out */
    b[MDNL_CUDA_STAGE_SORT] = entry * np + 8 * (na + 1) + (packed ? 0 : 16 * na) + 8 * np;
}

/* The side stream and its events, and the kernels' shared-memory carveouts. */
static mdnl_status dense_walk_init(mdnl_cuda_ctx *ctx)
{
    nl_walk_state *w = &ctx->walk;
    MDNL_CUDA_CHECK(cudaStreamCreateWithFlags(&w->side, cudaStreamNonBlocking));
    MDNL_CUDA_CHECK(cudaEventCreateWithFlags(&w->fork, cudaEventDisableTiming));
    MDNL_CUDA_CHECK(cudaEventCreateWithFlags(&w->join, cudaEventDisableTiming));
    const cudaFuncAttribute carve = cudaFuncAttributePreferredSharedMemoryCarveout;
    MDNL_CUDA_CHECK(cudaFuncSetAttribute(walk_walk_kernel<true, false>, carve, WALK_CARVE_GATHERED));
    MDNL_CUDA_CHECK(cudaFuncSetAttribute(walk_walk_kernel<false, false>, carve, WALK_CARVE_GATHERED));
    MDNL_CUDA_CHECK(cudaFuncSetAttribute(walk_walk_kernel<true, true>, carve, WALK_CARVE_PACKED));
    MDNL_CUDA_CHECK(cudaFuncSetAttribute(walk_walk_kernel<false, true>, carve, WALK_CARVE_PACKED));
    return MDNL_OK;
}

static void dense_walk_release(mdnl_cuda_ctx *ctx)
{
    nl_walk_state *w = &ctx->walk;
    mdnl_dbuf_free(&w->slab);
    mdnl_dbuf_free(&w->longlist);
    if (w->fork)
        cudaEventDestroy(w->fork);
    if (w->join)
        cudaEventDestroy(w->join);
    if (w->side) {
        cudaStreamSynchronize(w->side);
        cudaStreamDestroy(w->side);
    }
}

extern const nl_path nl_path_dense_walk = {
    "dense-walk",     dense_walk_fits,        true,           dense_walk_build, dense_walk_finish,
    dense_walk_floor_bytes, dense_walk_init, dense_walk_release,
};

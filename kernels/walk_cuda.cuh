/* walk_cuda.cuh — the half-stencil warp walk: each unordered pair of a
 * frame met once, a warp per home cell (or home block of K cells in z). The
 * RDF's cells-walk (rdf.cu, K = 2) and the fused energy's total (energy.cu,
 * K = 1) are visitors of it; the neighbor list's dense-walk
 * (nlist_cell_dense_walk.cu) is its full-stencil cousin.
 *
 * Home blocks: K consecutive cells of a column (slots contiguous, so the
 * block is one home range); the columns' z ranges and the home column's
 * upward range reach stencil cells past the block's last cell. The
 * candidates are then enumerated once for K cells' atoms, while the
 * bounding-box tests grow with the block's box: at cells of r / 2 (the
 * RDF's) K = 2 wins, at cells >= r (the energy's) K = 1 does
 * (docs/performance.md).
 *
 * Mapping: a warp per cell of the cell list (the home cell), its atoms (32
 * at a time) in shared memory. The candidates are the cells of the columns
 * (dx, dy) lexicographically after (0, 0), whole z range, and of the home
 * column from the home cell up (mdnl_walk_half_ranges: one range a lane),
 * taken 32 flat candidates a step. A candidate whose image is a cutoff or
 * more from the home atoms' bounding box is dropped (mdnl_axis_gap: exact in
 * float, no pair lost); the kept ones go to a per-warp ring of 128 (position
 * and key: a take looks each one's shift vector up by the key's shift code,
 * and only a visitor with a payload has a second ring, of one float), and
 * each time 64 are there each lane takes two and the visitor tests them
 * against every home atom in turn (mdnl_walk_home_loop: a broadcast shared
 * load each). Within the home cell a pair counts once, from its lower slot
 * (the candidate's "order" is its slot there, MDNL_WALK_ORDER_OUT
 * elsewhere, compared in the keys). Every lane
 * tests the same home atom against its own candidates, so the loops do not
 * diverge as a thread-per-atom walk's unequal ranges do.
 *
 * Each unordered pair is met exactly once where every periodic axis has at
 * least 2 stencil + 1 cells, 2 stencil + K in z (mdnl_walk_fits; callers
 * fall back elsewhere): a pair's cell offset o, |o_k| <= stencil_k, is
 * forward for exactly one of its two orientations; within a column the
 * lower atom's block meets the upper one (its upward range), within a block
 * the lower slot counts it (S = 0 there); no column range (K + 2 stencil
 * cells) meets a cell twice, and the image shifts stay in -1..1. d2(i, j, S) and d2(j, i, -S) are the same
 * float (rounding is symmetric under negation), so the orientation does not
 * change a pair's bits.
 *
 * Visitor (a struct; every call made by the whole warp):
 *   static constexpr bool kPayload             whether candidates carry cand()
 *   void home(int lane, int slot, float4 p)   lanes < nh: a home atom
 *   float cand(int k, float4 pj)               a kept candidate's payload
 *                                              (kPayload; slot k, pj.w =
 *                                              its original index's bits)
 *   void take(int nh, const float4 *home, const float4 (&pj)[2],
 *             const float4 (&pv)[2], bool z)   64 candidates (two a lane:
 *                                              x, y, z, key; shift, payload
 *                                              (0 without kPayload); lanes
 *                                              past the count: +inf, a zero
 *                                              shift); z: every shift of the
 *                                              take is zero (uniform; pv's
 *                                              x, y, z are then 0)
 */
#ifndef MDNL_WALK_CUDA_CUH
#define MDNL_WALK_CUDA_CUH

#include "cells_cuda.cuh"

/* One warp's shared memory. */
template <bool PAY> struct mdnl_walk_warp {
    float4 home[32];     /* x, y, z, the home atom's key (slot << 5 | 31) */
    int fe[32], kb[32], code[32];
    float4 cp[128];      /* kept candidates, a ring: x, y, z, key (order << 5 | shift code) */
    float pay[PAY ? 128 : 1]; /* and their payload (visitors with kPayload) */
};

/* A candidate's key in the ring, order << 5 | its shift code: order is its
 * slot in the home block (the shift there is zero) and MDNL_WALK_ORDER_OUT
 * elsewhere; a home atom's is slot << 5 | 31, so that one signed compare,
 * candidate key > home key, is "order > slot" (mdnl_walk_home_tests). Slots
 * stay below MDNL_WALK_ORDER_OUT (mdnl_walk_fits: natoms). */
#define MDNL_WALK_ORDER_OUT ((1 << 26) - 1)
__device__ __forceinline__ int mdnl_walk_key(int order, int code) { return order << 5 | code; }

/* Lanes the half stencil's ranges take: its columns times the z segments a
 * column splits into where the periodic wrap changes the shift. */
inline int mdnl_walk_lanes(const mdnl_geom &f)
{
    const int cols = f.stencil[0] * (2 * f.stencil[1] + 1) + f.stencil[1] + 1;
    return cols * (f.pbc[2] ? 2 : 1);
}

/* Whether the walk with home blocks of K cells in z meets each pair of the
 * grid f exactly once: no column range (K + 2 stencil cells) meets a cell
 * twice. */
inline bool mdnl_walk_fits(const mdnl_geom &f, int K = 1)
{
    for (int k = 0; k < 3; ++k)
        if (f.stencil[k] < 0 || (f.pbc[k] && f.ncell[k] < 2 * f.stencil[k] + (k == 2 ? K : 1)))
            return false;
    return f.ncells >= 1 && f.natoms < MDNL_WALK_ORDER_OUT && mdnl_walk_lanes(f) <= 32;
}

/* Home blocks (K consecutive cells of a column, the last one shorter where K
 * does not divide the column) of grid f, and the first cell of block b. */
inline __host__ __device__ int mdnl_walk_blocks(const mdnl_geom &f, int K)
{
    return f.ncell[0] * f.ncell[1] * ((f.ncell[2] + K - 1) / K);
}
__device__ __forceinline__ int mdnl_walk_block_cell(const mdnl_geom &f, const mdnl_cell_divs &d, int K, int b)
{
    const int nzb = (f.ncell[2] + K - 1) / K;
    const int col = mdnl_fastdiv_q(d.nzb, b); /* d = mdnl_cell_divs_of(f, K) */
    return col * f.ncell[2] + (b - col * nzb) * K;
}

struct mdnl_walk_ranges {
    int fe, kb, code, total;
};

/* The half stencil's candidate ranges of the home block of cells lin ..
 * lin + kz (one column), one a lane (lanes past them: empty): flat
 * [fe - len, fe) from slot kb + flat, shift code `code`. d: the grid's
 * mdnl_cell_divs (multiplies in place of the cell's divisions). */
__device__ __forceinline__ mdnl_walk_ranges mdnl_walk_half_ranges(const mdnl_geom &g, const mdnl_cells_view &c,
                                                                  const mdnl_cell_divs &d, int lin, int kz, int lane)
{
    const int n0 = g.ncell[0], n1 = g.ncell[1], n2 = g.ncell[2];
    const int lc = mdnl_fastdiv_q(d.n2, lin), cx = mdnl_fastdiv_q(d.n1, lc); /* the column, cx n1 + cy */
    const int cz = lin - lc * n2, cy = lc - cx * n1;
    const int st1 = g.stencil[1], st2 = g.stencil[2];
    const int w1 = 2 * st1 + 1, nx = g.stencil[0] * w1, nfwd = nx + st1;
    const int nzs = g.pbc[2] ? 2 : 1;
    int len = 0, kb = 0, code = SHIFT_CODE_ZERO;
    if (lane < (nfwd + 1) * nzs) {
        const int col = lane >> (nzs - 1), seg = lane - col * nzs; /* nzs: 1 or 2 */
        const int cq = mdnl_fastdiv_q(d.w1, col);
        const int dx = col < nx ? 1 + cq : 0;
        const int dy = col < nx ? col - cq * w1 - st1 : (col < nfwd ? 1 + col - nx : 0);
        const int zlo = col < nfwd ? cz - st2 : cz, zhi = cz + kz + st2;
        int x = cx + dx, y = cy + dy, s0, s1, s2 = 0;
        const bool okx = mdnl_cell_wrap(g.pbc[0], n0, x, s0);
        bool ok = mdnl_cell_wrap(g.pbc[1], n1, y, s1) && okx;
        int z, zend;
        if (g.pbc[2]) {
            s2 = mdnl_floordiv(zlo, n2) + seg;
            ok = ok && s2 <= mdnl_floordiv(zhi, n2);
            z = seg == 0 ? zlo : s2 * n2;
            zend = min((s2 + 1) * n2 - 1, zhi);
        } else {
            z = max(zlo, 0);
            zend = min(zhi, n2 - 1);
        }
        if (ok && zend >= z) {
            const int row = (x * n1 + y) * n2 - s2 * n2;
            kb = c.start[row + z];
            len = c.start[row + zend + 1] - kb;
            code = shift_code(s0, s1, s2);
        }
    }
    const int incl = mdnl_warp_inclusive_sum(len, lane);
    mdnl_walk_ranges w;
    w.total = __shfl_sync(FULLMASK, incl, 31);
    w.fe = incl; /* an empty range's fe equals the one before's: the lane walk steps over it */
    w.kb = kb - (incl - len);
    w.code = code;
    return w;
}

/* A take's tests: f(d2, hit, ia, cc) for every home atom ia and the lane's
 * candidate cc, the warp converged; hit: within the cutoff (and, in the home
 * cell, above ia's slot). */
template <bool Z, class F>
__device__ __forceinline__ void mdnl_walk_home_tests(int nh, const float4 *home, const float4 (&pj)[2],
                                                     const float4 (&pv)[2], float cutoff2, F &&f)
{
#pragma unroll 2
    for (int ia = 0; ia < nh; ++ia) {
        const float4 pa = home[ia];
#pragma unroll
        for (int cc = 0; cc < 2; ++cc) {
            const float d2 = mdnl_cand_d2<Z>(pa, pj[cc], pv[cc]);
            f(d2, d2 < cutoff2 && __float_as_int(pj[cc].w) > __float_as_int(pa.w), ia, cc);
        }
    }
}

/* f(d2, ia, cc) for the hits alone. */
template <bool Z, class F>
__device__ __forceinline__ void mdnl_walk_home_loop(int nh, const float4 *home, const float4 (&pj)[2],
                                                    const float4 (&pv)[2], float cutoff2, F &&f)
{
    mdnl_walk_home_tests<Z>(nh, home, pj, pv, cutoff2, [&](float d2, bool hit, int ia, int cc) {
        if (hit)
            f(d2, ia, cc);
    });
}

/* Walks home block `blk` (mdnl_walk_blocks; K = 1: the cell) with the
 * warp's shared W and the block's shift vectors sh[27]
 * (shift_vector4_of_code); d = mdnl_cell_divs_of(g, K). */
template <int K = 1, class Visit>
__device__ __forceinline__ void mdnl_walk_half_cell(const mdnl_geom &g, const mdnl_cells_view &c,
                                                    const mdnl_cell_divs &d, int blk,
                                                    mdnl_walk_warp<Visit::kPayload> &W, const float4 *sh,
                                                    Visit &visit)
{
    const int lane = threadIdx.x & 31;
    const int cell = K == 1 ? blk : mdnl_walk_block_cell(g, d, K, blk);
    const int kz = K == 1 ? 0 : min(K, g.ncell[2] - cell % g.ncell[2]) - 1; /* the block's cells after the first */
    const int hb = c.start[cell], he = c.start[cell + kz + 1];
    if (hb == he)
        return;
    int ntot;
    {
        const mdnl_walk_ranges r = mdnl_walk_half_ranges(g, c, d, cell, kz, lane);
        W.fe[lane] = r.fe;
        W.kb[lane] = r.kb;
        W.code[lane] = r.code;
        ntot = r.total;
    }
    __syncwarp();
    const unsigned lt = (1u << lane) - 1u;
    for (int h0 = hb; h0 < he; h0 += 32) {
        const int nh = min(32, he - h0);
        float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        if (lane < nh) {
            const float4 p = c.pos[h0 + lane];
            W.home[lane] = make_float4(p.x, p.y, p.z, __int_as_float(mdnl_walk_key(h0 + lane, 31)));
            visit.home(lane, h0 + lane, p);
            lo[0] = hi[0] = p.x;
            lo[1] = hi[1] = p.y;
            lo[2] = hi[2] = p.z;
        }
        mdnl_warp_box(lo, hi);
        __syncwarp();
        int head = 0, nk = 0; /* the ring: kept candidates from head, nk of them (uniform) */
        auto take = [&](int count) {
            __syncwarp(); /* the ring's writes before its reads */
            /* a lane past the count: never a neighbour, and a zero shift */
            float4 pj[2], pv[2];
            float pay[2] = {0.f, 0.f};
#pragma unroll
            for (int cc = 0; cc < 2; ++cc) {
                pj[cc] = make_float4(INFINITY, INFINITY, INFINITY,
                                     __int_as_float(mdnl_walk_key(MDNL_WALK_ORDER_OUT, SHIFT_CODE_ZERO)));
                if (lane + 32 * cc < count) {
                    const int slot = (head + 32 * cc + lane) & 127;
                    pj[cc] = W.cp[slot];
                    if constexpr (Visit::kPayload)
                        pay[cc] = W.pay[slot];
                }
            }
            __syncwarp(); /* its reads before the next writes */
            head = (head + 64) & 127;
            const int code0 = __float_as_int(pj[0].w) & 31, code1 = __float_as_int(pj[1].w) & 31;
            const bool z = __all_sync(FULLMASK, code0 == SHIFT_CODE_ZERO && code1 == SHIFT_CODE_ZERO);
            /* each candidate's shift vector by its code (only where a shift of the take is not zero) */
            pv[0] = pv[1] = make_float4(0.f, 0.f, 0.f, 0.f);
            if (!z) {
                pv[0] = sh[code0];
                pv[1] = sh[code1];
            }
            pv[0].w = pay[0];
            pv[1].w = pay[1];
            visit.take(nh, W.home, pj, pv, z);
        };
        int q = 0; /* this lane's range (its flat index only grows) */
        for (int base = 0; base < ntot; base += 32) {
            const mdnl_warp_cand cd = mdnl_warp_candidate(g, c, W.fe, W.kb, W.code, sh, base + lane, ntot, q, lo, hi);
            const unsigned km = __ballot_sync(FULLMASK, cd.keep);
            if (cd.keep) {
                const int slot = (head + nk + __popc(km & lt)) & 127;
                const int order = cd.k >= hb && cd.k < he ? cd.k : MDNL_WALK_ORDER_OUT; /* the home block: S = 0 */
                W.cp[slot] = make_float4(cd.p.x, cd.p.y, cd.p.z, __int_as_float(mdnl_walk_key(order, cd.code)));
                if constexpr (Visit::kPayload)
                    W.pay[slot] = visit.cand(cd.k, cd.p);
            }
            nk += __popc(km);
            if (nk >= 64) {
                take(64);
                nk -= 64;
            }
        }
        if (nk > 0)
            take(nk);
        __syncwarp(); /* the home atoms and the ring are refilled by the next 32 */
    }
}

#endif

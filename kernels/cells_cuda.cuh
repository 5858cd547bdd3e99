/* cells_cuda.cuh — the device cell list, the CUDA counterpart of cells_cpu.h.
 *
 * The neighbor-list kernels (nlist_*.cu) and the fused energy and histogram
 * kernels all enumerate pairs through mdnl_for_each_pair() below, so they
 * agree on the pair set with each other and, bit for bit, with the CPU twin:
 *   - atoms are binned with the same float operations as the host's
 *     mdnl_cell_coord (geometry.h: explicit _rn intrinsics on the device, so the device
 *     compiler cannot contract them into FMAs): every atom lands in the same
 *     cell as on the CPU;
 *   - a pair's squared distance is mdnl_pair_d2 (geometry.h), verbatim.
 * Nothing here assumes the neighbor-list cutoff: the cell grid, the stencil
 * and cutoff2 all come from the mdnl_geom the caller prepared, so an RDF
 * kernel prepares its own geometry with r_max as the cutoff.
 *
 * Layout (all device memory, owned by mdnl_cells_cuda, valid until the next
 * build or free):
 *   start[ncells + 1]  cell c holds sorted slots [start[c], start[c+1])
 *   pos[natoms]        float4 (x, y, z, bits of the original atom index) in
 *                      cell order; within a cell, ascending original index
 *                      (a stable sort), so the order is deterministic
 *   order[natoms]      original atom index of each sorted slot
 *   cell[natoms]       linear cell index of each sorted slot
 *   rank[natoms]       sorted slot of each original atom (inverse of order)
 * Linear cell index: (cx * ncell[1] + cy) * ncell[2] + cz, as on the CPU.
 *
 * Usage, in a .cu file:
 *     mdnl_cells_cuda cells = {};                      // once
 *     mdnl_cells_cuda_build(&cells, &g, d_pos4, stream); // every frame
 *     my_kernel<<<...>>>(g, cells.view, ...);
 *     ...
 *     __global__ void my_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c, ...)
 *     {   // one thread per sorted slot: neighbours share cells, so their
 *         // candidates share cache lines
 *         int is = blockIdx.x * blockDim.x + threadIdx.x;
 *         if (is >= c.natoms) return;
 *         int i = c.order[is];
 *         mdnl_for_each_pair(g, c, is, [&](int j, float d2, int s0, int s1, int s2) { ... });
 *     }
 * The callback sees every (j, S) of atom i's FULL list with d2 < g.cutoff2,
 * self images (j == i, S != 0) included; filter with mdnl_half_keep for a
 * half list. The visiting order is deterministic but not sorted.
 *
 * Everything is header-only (template kernels, inline host functions), like
 * CUB, so any .cu file can include it without relocatable device code.
 */
#ifndef MDNL_CELLS_CUDA_CUH
#define MDNL_CELLS_CUDA_CUH

#include "cuda_check.cuh"
#include "geometry.h"
#include "mdnl.h"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <type_traits>

#define FULLMASK 0xffffffffu

/* Read-only view passed by value to kernels. */
struct mdnl_cells_view {
    int natoms;
    int ncells;
    const int *start;   /* [ncells + 1] */
    const float4 *pos;  /* [natoms] cell order, .w = __int_as_float(original index) */
    const int *order;   /* [natoms] sorted slot -> original index */
    const int *cell;    /* [natoms] sorted slot -> linear cell (the stable list; null after nl_bin_unstable,
                           whose kernels compute a slot's cell from its position: mdnl_cell_linear) */
    const int *rank;    /* [natoms] original index -> sorted slot */
};

/* Owner of the device arrays; reused and grown across frames. */
struct mdnl_cells_cuda {
    mdnl_dbuf start, pos, order, cell, rank;
    mdnl_dbuf key_in, val_in, count, temp;
    mdnl_cells_view view;
};

__device__ __forceinline__ int mdnl_cell_linear(const mdnl_geom &g, float x, float y, float z)
{
    int cx = mdnl_cell_coord(&g, x, y, z, 0);
    int cy = mdnl_cell_coord(&g, x, y, z, 1);
    int cz = mdnl_cell_coord(&g, x, y, z, 2);
    return (cx * g.ncell[1] + cy) * g.ncell[2] + cz;
}

/* n / d for 0 <= n < 2^31 and a divisor d >= 1 known on the host, by a
 * multiply and a shift (m = ceil(2^s / d), s = 32 + ceil(log2 d): exact in
 * that range) instead of an integer division's ~20 instructions. */
struct mdnl_fastdiv {
    unsigned long long m;
    int s;
};
inline mdnl_fastdiv mdnl_fastdiv_of(int d)
{
    d = d < 1 ? 1 : d; /* a grid's counts are >= 1; never a division by zero here */
    int l = 0;
    while ((1LL << l) < d)
        ++l;
    mdnl_fastdiv f;
    f.s = 32 + l;
    f.m = ((1ULL << f.s) + (unsigned long long)d - 1) / (unsigned long long)d;
    return f;
}
__device__ __forceinline__ int mdnl_fastdiv_q(const mdnl_fastdiv &f, int n)
{
    return (int)(((unsigned long long)(unsigned)n * f.m) >> f.s);
}

/* The divisors a warp walk's cells and ranges need, made on the host for a
 * grid: the z and y cell counts, the stencil's column width in y
 * (2 stencil[1] + 1) and the home blocks of K cells a column
 * (walk_cuda.cuh: ceil(ncell[2] / K)). A warp walks a cell or a block, so
 * these divisions are a cell's cost, not an atom's. */
struct mdnl_cell_divs {
    mdnl_fastdiv n2, n1, w1, nzb;
};
inline mdnl_cell_divs mdnl_cell_divs_of(const mdnl_geom &g, int K = 1)
{
    return mdnl_cell_divs{mdnl_fastdiv_of(g.ncell[2]), mdnl_fastdiv_of(g.ncell[1]),
                          mdnl_fastdiv_of(2 * g.stencil[1] + 1), mdnl_fastdiv_of((g.ncell[2] + K - 1) / K)};
}

/* Floor division for any sign of x (n > 0). The stencil walks' cell
 * offsets are within one grid of the grid (-n <= x < 2n: a stencil no wider
 * than the grid) but for tiny boxes, so that case is three compares instead
 * of an integer division (~20 instructions). */
__device__ __forceinline__ int mdnl_floordiv(int x, int n)
{
    if (x >= -n && x < 2 * n)
        return (x >= n) - (x < 0);
    return x >= 0 ? x / n : -((-x + n - 1) / n);
}

/* Shift codes: the paths that keep a candidate's image shift S (each
 * component in -1..1) in 5 bits store (s0 + 1) * 9 + (s1 + 1) * 3 + (s2 + 1);
 * S = 0 is SHIFT_CODE_ZERO, and a larger code is a lexicographically
 * positive S. */
#define SHIFT_CODE_ZERO 13

__device__ __forceinline__ int shift_code(int s0, int s1, int s2) { return (s0 + 1) * 9 + (s1 + 1) * 3 + (s2 + 1); }

__device__ __forceinline__ void shift_of_code(int code, int &s0, int &s1, int &s2)
{
    s0 = code / 9 - 1;
    s1 = (code / 3) % 3 - 1;
    s2 = code % 3 - 1;
}

/* v = S·h of shift code `code` (mdnl_shift_vector). */
__device__ __forceinline__ void shift_vector_of_code(const mdnl_geom &g, int code, float v[3])
{
    int s0, s1, s2;
    shift_of_code(code, s0, s1, s2);
    mdnl_shift_vector(&g, s0, s1, s2, v);
}

/* The same as a float4 (w = 0), for shift tables read with one 16-byte
 * shared load a lookup (shift_of). */
__device__ __forceinline__ float4 shift_vector4_of_code(const mdnl_geom &g, int code)
{
    float v[3];
    shift_vector_of_code(g, code, v);
    return make_float4(v[0], v[1], v[2], 0.f);
}

/* v = a shift table's entry `code` (sh[27][3], or float4 sh[27]). */
__device__ __forceinline__ void shift_of(const float (*sh)[3], int code, float v[3])
{
    v[0] = sh[code][0];
    v[1] = sh[code][1];
    v[2] = sh[code][2];
}
__device__ __forceinline__ void shift_of(const float4 *sh, int code, float v[3])
{
    const float4 s = sh[code];
    v[0] = s.x;
    v[1] = s.y;
    v[2] = s.z;
}

/* The smallest |dx| on one axis between a candidate image (xj, shift v) and
 * any home atom xi in [lo, hi], computed as mdnl_pair_d2 computes dx
 * (the dense walks drop a candidate image whose box bound is a cutoff or more):
 * rounding is monotone, so fl(fl(xj - hi) + v) <= fl(fl(xj - xi) + v) <=
 * fl(fl(xj - lo) + v), and the bound is exact for the float test. */
__device__ __forceinline__ float mdnl_axis_gap(float xj, float lo, float hi, float v)
{
    const float a = MDNL_FADD(MDNL_FSUB(xj, hi), v);
    const float b = MDNL_FADD(MDNL_FSUB(xj, lo), v);
    /* a <= b (hi >= lo, rounding monotone): a where a > 0, -b where b < 0, else 0 (two max operations) */
    return fmaxf(fmaxf(a, -b), 0.f);
}

/* A lower bound on every d2 between the candidate image (pj, shift v) and a
 * point of the box [lo, hi] (mdnl_axis_gap on each axis). */
__device__ __forceinline__ float mdnl_box_d2(const float4 &pj, const float (&lo)[3], const float (&hi)[3],
                                             const float (&v)[3])
{
    const float ex = mdnl_axis_gap(pj.x, lo[0], hi[0], v[0]);
    const float ey = mdnl_axis_gap(pj.y, lo[1], hi[1], v[1]);
    const float ez = mdnl_axis_gap(pj.z, lo[2], hi[2], v[2]);
    return MDNL_FADD(MDNL_FADD(MDNL_FMUL(ex, ex), MDNL_FMUL(ey, ey)), MDNL_FMUL(ez, ez));
}

/* The inclusive prefix sum of v over the warp's lanes (all 32 call it). */
__device__ __forceinline__ int mdnl_warp_inclusive_sum(int v, int lane)
{
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int t = __shfl_up_sync(FULLMASK, v, o);
        if (lane >= o)
            v += t;
    }
    return v;
}

/* d2 of home atom pa and candidate image (pj, shift pv) of the warp walks:
 * mdnl_pair_d2, or with Z (a zero shift) without its "+ 0": the same bits,
 * as the square erases a zero's sign. */
template <bool Z> __device__ __forceinline__ float mdnl_cand_d2(const float4 &pa, const float4 &pj, const float4 &pv)
{
    if (Z) {
        const float dx = __fsub_rn(pj.x, pa.x), dy = __fsub_rn(pj.y, pa.y), dz = __fsub_rn(pj.z, pa.z);
        return __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz));
    }
    const float v[3] = {pv.x, pv.y, pv.z};
    return mdnl_pair_d2(pa.x, pa.y, pa.z, pj.x, pj.y, pj.z, v);
}

/* A float's bits as an int that orders as the float does (-0 below +0; its
 * own inverse): the warp's integer reductions then take a float's min and
 * max exactly. */
__device__ __forceinline__ int mdnl_float_ordered(int b) { return b ^ ((b >> 31) & 0x7fffffff); }

/* The bounding box [lo, hi] of the warp's lanes' boxes (a lane without a
 * point holds +inf / -inf), on every lane: one integer reduction a bound
 * (redux.sync) instead of five shuffles and five min / max. */
__device__ __forceinline__ void mdnl_warp_box(float (&lo)[3], float (&hi)[3])
{
#pragma unroll
    for (int k = 0; k < 3; ++k) {
        lo[k] = __int_as_float(
            mdnl_float_ordered(__reduce_min_sync(FULLMASK, mdnl_float_ordered(__float_as_int(lo[k])))));
        hi[k] = __int_as_float(
            mdnl_float_ordered(__reduce_max_sync(FULLMASK, mdnl_float_ordered(__float_as_int(hi[k])))));
    }
}

/* One lane's candidate of the warp walks (walk_cuda.cuh, dense-walk): the
 * warp's flat candidate fl of its range table (fe: each range's flat end,
 * 0x7fffffff past the last; kb: its first slot minus its flat start; code:
 * its shift code; q: the lane's range, which only grows as fl does). Past
 * ntot the candidate is a point at infinity with no slot (k = -1, a zero
 * shift), or with CLAMP the last candidate again (ntot >= 1: a load of a
 * line already in L1; it helps dense-walk's walk and slows the RDF's, so
 * only dense-walk clamps); never kept. keep: its image can be within the cutoff of the home box [lo, hi]
 * (mdnl_box_d2, a bound on every d2 of its tests, so no pair is lost). */
struct mdnl_warp_cand {
    float4 p; /* position, w as the cell list holds it */
    float v[3]; /* the image shift */
    int k, code;
    bool keep;
};
template <bool CLAMP = false, class SH>
__device__ __forceinline__ mdnl_warp_cand mdnl_warp_candidate(const mdnl_geom &g, const mdnl_cells_view &c,
                                                              const int *fe, const int *kb, const int *code,
                                                              SH sh, int fl, int ntot, int &q,
                                                              const float (&lo)[3], const float (&hi)[3])
{
    mdnl_warp_cand r;
    float4 p = make_float4(INFINITY, INFINITY, INFINITY, 0.f);
    int k = -1, cd = SHIFT_CODE_ZERO;
    /* CLAMP: a lane past ntot takes the last candidate again (no branch around the load) */
    const int f = CLAMP ? min(fl, ntot - 1) : fl;
    if (CLAMP || fl < ntot) {
        while (fe[q] <= f)
            ++q;
        k = kb[q] + f;
        cd = code[q];
        p = c.pos[k];
    }
    float v[3];
    shift_of(sh, cd, v);
    const float bd2 = mdnl_box_d2(p, lo, hi, v);
    r.keep = fl < ntot && bd2 < g.cutoff2;
    r.p = p;
    r.k = k;
    r.code = cd;
    r.v[0] = v[0];
    r.v[1] = v[1];
    r.v[2] = v[2];
    return r;
}

/* Cell index c on an axis of n cells: on a periodic axis it is wrapped into
 * [0, n) and s is its image shift; on an open axis s = 0 and the result is
 * false when c leaves the grid (the stencil walks skip it). */
__device__ __forceinline__ bool mdnl_cell_wrap(int periodic, int n, int &c, int &s)
{
    s = 0;
    if (periodic) {
        s = mdnl_floordiv(c, n);
        c -= s * n;
        return true;
    }
    return c >= 0 && c < n;
}

/* Calls f(j, d2, s0, s1, s2), or f(j, d2, s0, s1, s2, k) where f takes the
 * candidate's sorted slot k as well. */
template <class F>
__device__ __forceinline__ void mdnl_visit(F &f, int j, float d2, int s0, int s1, int s2, int k)
{
    if constexpr (std::is_invocable<F &, int, float, int, int, int, int>::value)
        f(j, d2, s0, s1, s2, k);
    else
        f(j, d2, s0, s1, s2);
}

/* Tests the candidates in cell-order slots [kb, ke) against the atom at pi
 * (slot self) with image shift v, calling f for every d2 < cutoff2. With a
 * zero shift (zero: the atom itself is skipped) the "+ 0" of mdnl_pair_d2 is
 * left out: it can change only the sign of a zero difference, which the
 * square erases, so d2 keeps its bits and each candidate costs three adds
 * fewer (most ranges of a large box have S = 0). ZSPLIT = false keeps one
 * loop for every shift (faster for the RDF's walks: docs/performance.md);
 * SKIP_SELF = false for walks whose ranges already exclude the atom. */
template <bool ZSPLIT = true, bool SKIP_SELF = true, class F>
__device__ __forceinline__ void mdnl_scan_range(const float4 &pi, const float4 *__restrict__ pos, int kb, int ke,
                                                int self, bool zero, const float v[3], float cutoff2, int s0, int s1,
                                                int s2, F &f)
{
    if (ZSPLIT && zero) {
#pragma unroll 4
        for (int k = kb; k < ke; ++k) {
            const float4 pj = __ldg(pos + k);
            const float dx = __fsub_rn(pj.x, pi.x), dy = __fsub_rn(pj.y, pi.y), dz = __fsub_rn(pj.z, pi.z);
            const float d2 = __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz));
            if (d2 < cutoff2 && (!SKIP_SELF || k != self))
                mdnl_visit(f, __float_as_int(pj.w), d2, 0, 0, 0, k);
        }
    } else {
#pragma unroll 4
        for (int k = kb; k < ke; ++k) {
            const float4 pj = __ldg(pos + k);
            if (SKIP_SELF && zero && k == self)
                continue;
            const float d2 = mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, v);
            if (d2 < cutoff2)
                mdnl_visit(f, __float_as_int(pj.w), d2, s0, s1, s2, k);
        }
    }
}

/* Visits every (j, S) with d2 < g.cutoff2 of the atom in sorted slot
 * i_sorted: f(j_original, d2, s0, s1, s2). The stencil is walked as in
 * cells_cpu.c (offsets -stencil..stencil on each axis, periodic wrap with an
 * image shift, open axes skip cells outside the grid), except that the cells
 * of one (dx, dy) column that share an image shift are contiguous in memory
 * and are scanned as one range. */
template <class F>
__device__ __forceinline__ void mdnl_for_each_pair(const mdnl_geom &g, const mdnl_cells_view &c, int i_sorted, F &&f)
{
    const float4 pi = c.pos[i_sorted];
    const int lin = mdnl_cell_linear(g, pi.x, pi.y, pi.z); /* the binning's cell: the same floats */
    const int n0 = g.ncell[0], n1 = g.ncell[1], n2 = g.ncell[2];
    const int cz = lin % n2;
    const int cy = (lin / n2) % n1;
    const int cx = lin / (n2 * n1);
    for (int dx = -g.stencil[0]; dx <= g.stencil[0]; ++dx) {
        int x = cx + dx, s0;
        if (!mdnl_cell_wrap(g.pbc[0], n0, x, s0))
            continue;
        for (int dy = -g.stencil[1]; dy <= g.stencil[1]; ++dy) {
            int y = cy + dy, s1;
            if (!mdnl_cell_wrap(g.pbc[1], n1, y, s1))
                continue;
            const int row = (x * n1 + y) * n2;
            /* z offsets cz-st..cz+st, split where the periodic wrap changes
             * the shift; open axes clamp to the grid. */
            int zlo = cz - g.stencil[2], zhi = cz + g.stencil[2];
            if (!g.pbc[2]) {
                zlo = zlo < 0 ? 0 : zlo;
                zhi = zhi > n2 - 1 ? n2 - 1 : zhi;
            }
            for (int z = zlo; z <= zhi;) {
                const int s2 = g.pbc[2] ? mdnl_floordiv(z, n2) : 0;
                int zend = (s2 + 1) * n2 - 1; /* last z with this shift */
                if (zend > zhi)
                    zend = zhi;
                float v[3];
                mdnl_shift_vector(&g, s0, s1, s2, v);
                const int zero = s0 == 0 && s1 == 0 && s2 == 0;
                const int kb = c.start[row + z - s2 * n2];
                const int ke = c.start[row + zend - s2 * n2 + 1];
                mdnl_scan_range(pi, c.pos, kb, ke, i_sorted, zero, v, g.cutoff2, s0, s1, s2, f);
                z = zend + 1;
            }
        }
    }
}

/* ---- refined grids and the pruned walk (RDF cells-prune2, fused energy) ---- */

/* The grid of `g` with every axis of at least two cells split k ways (cells
 * of width >= cutoff / k, stencil k times wider: the half-cell trick). The
 * pairs found, and their d2, are those of `g`'s grid: the grid only decides
 * which candidates are tested. Grids of more than max(64, 4 natoms) cells
 * stay as they are. */
inline mdnl_geom mdnl_geom_refine(const mdnl_geom *g, int k_split)
{
    mdnl_geom f = *g;
    int64_t cells = 1;
    for (int k = 0; k < 3; ++k) {
        if (g->ncell[k] >= 2) {
            f.ncell[k] = k_split * g->ncell[k];
            f.inv_cell[k] = (float)k_split * g->inv_cell[k];
            f.stencil[k] = k_split * g->stencil[k];
        }
        cells *= f.ncell[k];
    }
    f.ncells = cells;
    const int64_t most = 4 * g->natoms > 64 ? 4 * g->natoms : 64;
    return cells <= most ? f : *g;
}

/* Per-atom pruning of a stencil walk. It needs |dt_k| = |dr_k|: a t-frame
 * that is the identity up to float rounding of the diagonal (every
 * orthorhombic box, and frames without a lattice); elsewhere on = 0 and the
 * whole stencil is walked. The slack, 1e-4 of the largest t magnitude the
 * grid can reach plus 1e-4 of the cutoff, is orders above the float rounding
 * of t, of the cell edges and of d2, so no pair below the cutoff is cut. */
struct mdnl_prune {
    int on;      /* 0: walk the whole stencil (triclinic boxes) */
    float cw[3]; /* 1 / inv_cell: the cell width along each axis */
    float reach; /* cutoff + slack: no pair is farther apart than this */
    float slack; /* subtracted from every gap, added to every half-extent */
};

inline mdnl_prune mdnl_prune_args(const mdnl_geom *f)
{
    mdnl_prune p{};
    p.on = 1;
    double tmax = f->cutoff;
    for (int a = 0; a < 3; ++a)
        for (int k = 0; k < 3; ++k) {
            const float m = f->tmat[a][k];
            if (a == k ? !(fabsf(m - 1.0f) <= 1e-6f) : m != 0.0f)
                p.on = 0;
        }
    for (int k = 0; k < 3; ++k) {
        p.cw[k] = (float)(1.0 / (double)f->inv_cell[k]);
        const double reach = (double)(f->ncell[k] + f->stencil[k] + 1) * p.cw[k];
        const double lim[4] = {reach, fabs(f->tlo[k]), fabs(f->thi[k]), f->width[k]};
        for (int q = 0; q < 4; ++q)
            tmax = lim[q] > tmax ? lim[q] : tmax;
    }
    p.slack = (float)(1e-4 * tmax + 1e-4 * f->cutoff);
    p.reach = (float)(f->cutoff * (1.0 + 1e-4)) + p.slack;
    if (!(p.slack < 1e30f) || !(p.cw[0] > 0 && p.cw[1] > 0 && p.cw[2] > 0))
        p.on = 0;
    return p;
}

/* Lower bound (less the slack, never below 0) of the distance along one
 * axis from t to the cell c (unwrapped index) at stencil offset d. */
__device__ __forceinline__ float mdnl_cell_gap(int d, int c, float t, float cw, float slack)
{
    float gap = 0.0f;
    if (d > 0)
        gap = (float)c * cw - t;
    else if (d < 0)
        gap = t - (float)(c + 1) * cw;
    gap -= slack;
    return gap > 0.0f ? gap : 0.0f;
}

/* mdnl_for_each_pair with per-atom pruning (pr.on): a stencil column (x, y)
 * farther than pr.reach from the atom is skipped, and the z range of the
 * others is trimmed to the cells that meet [t_z - h, t_z + h], h =
 * sqrt(reach^2 - gap_x^2 - gap_y^2). Same pair set, same d2, same order of
 * columns; fewer candidates tested (on a grid refined by 2: about 40% of
 * the 27-cell stencil's for a 3D liquid). HALF (the half traversal of the
 * RDF and of the total energy, each pair once): only candidates in slots k > is, or k == is with a
 * lexicographically positive shift; a column whose cells all lie below the
 * atom's own in memory order holds only slots < is and is skipped before
 * its range is loaded.
 * Split walks (nparts a power of two): the stencil positions (dx, dy),
 * numbered row by row, are dealt round-robin to nparts threads; the thread
 * `part` walks only its own, in the same order. The nparts walks of one atom
 * together visit its pair set exactly once (each a subsequence of the whole
 * walk's order), so several threads can share an atom's stencil. Dealing
 * positions, not the columns an atom keeps after the cuts, keeps a warp's
 * lanes (neighbouring atoms, one part) on the same columns: dealt by what
 * each lane keeps, a column ran with ~1/nparts of the lanes active. */
template <bool HALF = false, bool ZSPLIT = true, class F>
__device__ __forceinline__ void mdnl_for_each_pair_pruned_part(const mdnl_geom &g, const mdnl_cells_view &c,
                                                               const mdnl_prune &pr, int is, int part, int nparts,
                                                               F &&f)
{
    const int ny = 2 * g.stencil[1] + 1; /* stencil positions per dx */
    const int home_col = HALF ? c.cell[is] / g.ncell[2] : 0; /* cx * n1 + cy */
    const float4 pi = c.pos[is];
    const int lin = c.cell[is];
    const int n0 = g.ncell[0], n1 = g.ncell[1], n2 = g.ncell[2];
    const int cz = lin % n2, cy = (lin / n2) % n1, cx = lin / (n2 * n1);
    const float reach2 = pr.reach * pr.reach;
    float t[3];
#pragma unroll
    for (int k = 0; k < 3; ++k)
        t[k] = __fsub_rn(__fadd_rn(__fadd_rn(__fmul_rn(pi.x, g.tmat[0][k]), __fmul_rn(pi.y, g.tmat[1][k])),
                                   __fmul_rn(pi.z, g.tmat[2][k])),
                         g.t0[k]);
    for (int dx = -g.stencil[0]; dx <= g.stencil[0]; ++dx) {
        int x = cx + dx, s0;
        if (!mdnl_cell_wrap(g.pbc[0], n0, x, s0))
            continue;
        const float gx = pr.on ? mdnl_cell_gap(dx, cx + dx, t[0], pr.cw[0], pr.slack) : 0.0f;
        const float rem_x = reach2 - gx * gx;
        if (rem_x < 0.0f)
            continue;
        for (int dy = -g.stencil[1]; dy <= g.stencil[1]; ++dy) {
            if ((((dx + g.stencil[0]) * ny + dy + g.stencil[1]) & (nparts - 1)) != part)
                continue; /* another part's stencil position */
            int y = cy + dy, s1;
            if (!mdnl_cell_wrap(g.pbc[1], n1, y, s1))
                continue;
            if (HALF && x * n1 + y < home_col)
                continue; /* every slot of this column is below is */
            const float gy = pr.on ? mdnl_cell_gap(dy, cy + dy, t[1], pr.cw[1], pr.slack) : 0.0f;
            const float rem = rem_x - gy * gy;
            if (rem < 0.0f)
                continue;
            int zlo = cz - g.stencil[2], zhi = cz + g.stencil[2];
            if (pr.on) {
                const float h = sqrtf(rem) + pr.slack;
                int tlo = (int)floorf((t[2] - h) * g.inv_cell[2]);
                int thi = (int)floorf((t[2] + h) * g.inv_cell[2]);
                if (!g.pbc[2]) { /* the edge cells of an open axis reach to infinity */
                    tlo = min(tlo, n2 - 1);
                    thi = max(thi, 0);
                }
                zlo = max(zlo, tlo);
                zhi = min(zhi, thi);
            }
            if (!g.pbc[2]) {
                zlo = zlo < 0 ? 0 : zlo;
                zhi = zhi > n2 - 1 ? n2 - 1 : zhi;
            }
            const int row = (x * n1 + y) * n2;
            for (int z = zlo; z <= zhi;) {
                const int s2 = g.pbc[2] ? mdnl_floordiv(z, n2) : 0;
                int zend = (s2 + 1) * n2 - 1;
                if (zend > zhi)
                    zend = zhi;
                float v[3];
                mdnl_shift_vector(&g, s0, s1, s2, v);
                const int zero = s0 == 0 && s1 == 0 && s2 == 0;
                int kb = c.start[row + z - s2 * n2];
                const int ke = c.start[row + zend - s2 * n2 + 1];
                if (HALF) { /* k > is, or k == is with a positive shift */
                    const int kmin = mdnl_shift_positive(s0, s1, s2) ? is : is + 1;
                    kb = kb > kmin ? kb : kmin;
                }
                mdnl_scan_range<ZSPLIT, !HALF>(pi, c.pos, kb, ke, is, zero, v, g.cutoff2, s0, s1, s2, f);
                z = zend + 1;
            }
        }
    }
}


/* ---- building ---- */

/* Thread per original atom i: its linear cell (sort key), the iota value, and
 * the cell's population (counting pass of the counting sort). */
template <int Dummy = 0>
__global__ void mdnl_cells_bin_kernel(const __grid_constant__ mdnl_geom g, const float4 *__restrict__ pos, int n,
                                      int *__restrict__ key, int *__restrict__ val, int *__restrict__ count)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float4 p = pos[i];
    int cell = mdnl_cell_linear(g, p.x, p.y, p.z);
    key[i] = cell;
    val[i] = i;
    atomicAdd(&count[cell], 1);
}

/* Thread per sorted slot k: gathers the position into cell order (coalesced
 * writes, one random read) and records the inverse permutation. */
template <int Dummy = 0>
__global__ void mdnl_cells_gather_kernel(const float4 *__restrict__ pos, const int *__restrict__ order, int n,
                                         float4 *__restrict__ spos, int *__restrict__ rank)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n)
        return;
    int i = order[k];
    float4 p = pos[i];
    p.w = __int_as_float(i);
    spos[k] = p;
    rank[i] = k;
}

/* Builds the cell list of d_pos4 (float4 per atom, .w ignored; the wrapped
 * positions of mdnl_geom_prepare) for the grid of `g`, asynchronously on
 * `stream`. Zero-initialise `c` before the first call; the device arrays are
 * reused across calls and grow as needed. */
inline mdnl_status mdnl_cells_cuda_build(mdnl_cells_cuda *c, const mdnl_geom *g, const float4 *d_pos4,
                                         cudaStream_t stream)
{
    const int64_t n64 = g->natoms;
    if (n64 > INT32_MAX || g->ncells >= INT32_MAX)
        return mdnl_error(MDNL_ERR_INPUT, "%lld atoms in %lld cells: the CUDA cell list handles at most %d of each",
                          (long long)n64, (long long)g->ncells, INT32_MAX - 1);
    const int n = (int)n64;
    const int ncells = (int)g->ncells;
    mdnl_status st;
    const size_t ni = (size_t)(n > 0 ? n : 1);
    if ((st = mdnl_dbuf_reserve(&c->start, (size_t)(ncells + 1) * sizeof(int), "cell offsets")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->count, (size_t)(ncells + 1) * sizeof(int), "cell counts")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->pos, ni * sizeof(float4), "cell-ordered positions")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->order, ni * sizeof(int), "cell order")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->cell, ni * sizeof(int), "cell of slot")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->rank, ni * sizeof(int), "slot of atom")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->key_in, ni * sizeof(int), "cell sort keys")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&c->val_in, ni * sizeof(int), "cell sort values")) != MDNL_OK)
        return st;
    int *count = (int *)c->count.ptr, *start = (int *)c->start.ptr;
    int *key_in = (int *)c->key_in.ptr, *val_in = (int *)c->val_in.ptr;
    int *order = (int *)c->order.ptr, *cell = (int *)c->cell.ptr, *rank = (int *)c->rank.ptr;
    float4 *spos = (float4 *)c->pos.ptr;

    /* Only the bits a cell index can have are sorted. */
    int bits = 1;
    while (bits < 31 && (1u << bits) < (unsigned)ncells)
        ++bits;
    size_t scan_bytes = 0, sort_bytes = 0;
    MDNL_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, count, start, ncells + 1, stream));
    MDNL_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, key_in, cell, val_in, order, n, 0, bits,
                                                    stream));
    if ((st = mdnl_dbuf_reserve(&c->temp, scan_bytes > sort_bytes ? scan_bytes : sort_bytes, "cell sort scratch")) !=
        MDNL_OK)
        return st;

    MDNL_CUDA_CHECK(cudaMemsetAsync(count, 0, (size_t)(ncells + 1) * sizeof(int), stream));
    if (n > 0) {
        mdnl_cells_bin_kernel<<<(n + 255) / 256, 256, 0, stream>>>(*g, d_pos4, n, key_in, val_in, count);
        MDNL_CUDA_LAUNCHED(stream);
    }
    size_t tb = c->temp.cap;
    MDNL_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(c->temp.ptr, tb, count, start, ncells + 1, stream));
    if (n > 0) {
        tb = c->temp.cap;
        /* Stable: within a cell, ascending original index, as on the CPU. */
        MDNL_CUDA_CHECK(
            cub::DeviceRadixSort::SortPairs(c->temp.ptr, tb, key_in, cell, val_in, order, n, 0, bits, stream));
        mdnl_cells_gather_kernel<<<(n + 255) / 256, 256, 0, stream>>>(d_pos4, order, n, spos, rank);
        MDNL_CUDA_LAUNCHED(stream);
    }
    c->view.natoms = n;
    c->view.ncells = ncells;
    c->view.start = start;
    c->view.pos = spos;
    c->view.order = order;
    c->view.cell = cell;
    c->view.rank = rank;
    return MDNL_OK;
}

inline void mdnl_cells_cuda_free(mdnl_cells_cuda *c)
{
    if (!c)
        return;
    mdnl_dbuf *bufs[] = {&c->start, &c->pos, &c->order, &c->cell, &c->rank, &c->key_in, &c->val_in, &c->count, &c->temp};
    for (mdnl_dbuf *b : bufs)
        mdnl_dbuf_free(b);
    c->view = mdnl_cells_view{};
}

#endif

/* geometry.h — how a frame's box becomes what the neighbor kernels need.
 *
 * mdnl_geom_prepare() runs once per frame on the host, for every backend and
 * method: it wraps positions into the cell (periodic axes only), converts them
 * to float, and lays out the cell grid. Because every method and both
 * backends start from the same float positions and evaluate a pair's distance
 * with the same float operations in the same order (mdnl_pair_d2 below, with
 * no FMA contraction: __fmul_rn/__fadd_rn on the device), they find the same
 * set of pairs and the same distances, bit for bit.
 *
 * A pair is (i, j, S) with S an integer image shift; its displacement is
 * r_j - r_i + S·h where h's rows are the lattice vectors (SPEC §2).
 *
 * Cell grid. Each axis k has a coordinate t_k = r · tmat[:,k] - t0[k] in
 * length units along the k-th reciprocal direction, so |Δt_k| <= |Δr| for any
 * displacement: two atoms closer than the cutoff are at most `stencil[k]`
 * cells apart on axis k. On a periodic axis t_k runs over [0, w_k) (w_k is the
 * perpendicular width) split in ncell[k] cells; cell c + d, for any offset d,
 * is cell (c + d) mod ncell[k] with image shift floor((c + d) / ncell[k]), so
 * offsets -stencil..stencil visit distinct (cell, shift) pairs even when the
 * cutoff exceeds the box (ncell 1, stencil > 1). On an open axis the grid
 * spans the atoms and offsets that leave it are skipped. Cells are at least
 * the cutoff times (1 + 1e-5) plus 2e-6 of the largest coordinate wide, a
 * slack that covers float rounding in the binning. The grid never has more than max(64, 2·natoms) cells.
 */
#ifndef MDNL_GEOMETRY_H
#define MDNL_GEOMETRY_H

#include "mdnl.h"
#include "frame.h"

#include <math.h>
#include <stdint.h>

MDNL_BEGIN_C

typedef struct mdnl_geom {
    int64_t natoms;
    float cutoff;
    float cutoff2;      /* (float)(cutoff * cutoff): a pair is kept when d2 < cutoff2 */
    int pbc[3];         /* 1 on periodic axes */
    float h[3][3];      /* lattice rows as float (zero without a lattice) */
    double width[3];    /* perpendicular widths of the cell (0 without a lattice) */
    double volume;      /* cell volume, 0 without a lattice */
    int image_max[3];   /* brute force visits S_k in [-image_max[k], image_max[k]]; 0 on open axes */
    float tmat[3][3];   /* t_k = sum_a r_a * tmat[a][k] - t0[k] */
    float t0[3];
    float inv_cell[3];  /* 1 / cell width along t_k */
    int ncell[3];
    int stencil[3];     /* cell offsets visited on each axis: -stencil[k]..stencil[k] */
    int64_t ncells;     /* ncell[0] * ncell[1] * ncell[2] */
    double tlo[3], thi[3]; /* t-range of the atoms (host bookkeeping for mdnl_geom_regrid) */
} mdnl_geom;

/* Prepares `g` for the frame's box and `cutoff` (> 0, finite) and writes the
 * wrapped positions as float into pos4[natoms][4] (x, y, z, 0), which the
 * caller allocates. Returns MDNL_ERR_INPUT for a singular lattice or a
 * non-finite position (naming the atom), MDNL_ERR_USAGE for a bad cutoff. */
mdnl_status mdnl_geom_prepare(const mdnl_frame *f, double cutoff, mdnl_geom *g, float (*pos4)[4]);

/* The same frame's geometry for another cutoff, without touching the
 * positions: `g` becomes exactly what mdnl_geom_prepare(f, cutoff, ...)
 * would give for the frame `src` was prepared from (the positions it wrote
 * do not depend on the cutoff). `mdnl run` wraps a frame once and grids it
 * for the neighbor cutoff and for r_max. MDNL_ERR_USAGE for a bad cutoff. */
mdnl_status mdnl_geom_regrid(const mdnl_geom *src, double cutoff, mdnl_geom *g);

/* ---- shared host/device arithmetic: the single definition of a pair ---- */

#if defined(__CUDACC__)
#define MDNL_HD __host__ __device__ static inline
#else
#define MDNL_HD static inline
#endif

#if defined(__CUDA_ARCH__)
#define MDNL_FADD(a, b) __fadd_rn((a), (b))
#define MDNL_FSUB(a, b) __fsub_rn((a), (b))
#define MDNL_FMUL(a, b) __fmul_rn((a), (b))
#else
#define MDNL_FADD(a, b) ((float)(a) + (float)(b))
#define MDNL_FSUB(a, b) ((float)(a) - (float)(b))
#define MDNL_FMUL(a, b) ((float)(a) * (float)(b))
#endif

/* The image shift vector S·h, component by component. */
MDNL_HD void mdnl_shift_vector(const mdnl_geom *g, int s0, int s1, int s2, float v[3])
{
    for (int k = 0; k < 3; ++k)
        v[k] = MDNL_FADD(MDNL_FADD(MDNL_FMUL((float)s0, g->h[0][k]), MDNL_FMUL((float)s1, g->h[1][k])),
                         MDNL_FMUL((float)s2, g->h[2][k]));
}

/* Squared distance of (i, j, S): |(r_j - r_i) + v|^2 with v = S·h. */
MDNL_HD float mdnl_pair_d2(float xi, float yi, float zi, float xj, float yj, float zj, const float v[3])
{
    float dx = MDNL_FADD(MDNL_FSUB(xj, xi), v[0]);
    float dy = MDNL_FADD(MDNL_FSUB(yj, yi), v[1]);
    float dz = MDNL_FADD(MDNL_FSUB(zj, zi), v[2]);
    return MDNL_FADD(MDNL_FADD(MDNL_FMUL(dx, dx), MDNL_FMUL(dy, dy)), MDNL_FMUL(dz, dz));
}

/* Whether (i, j, S) belongs to the half list: i < j, or a self image
 * (i == j) with S lexicographically positive. (i, i, 0) is never a pair. */
MDNL_HD int mdnl_half_keep(int64_t i, int64_t j, int s0, int s1, int s2)
{
    if (i != j)
        return i < j;
    return s0 > 0 || (s0 == 0 && (s1 > 0 || (s1 == 0 && s2 > 0)));
}

/* Cell coordinate of a position on axis k, clamped into the grid. */
MDNL_HD int mdnl_cell_coord(const mdnl_geom *g, float x, float y, float z, int k)
{
    float t = MDNL_FSUB(MDNL_FADD(MDNL_FADD(MDNL_FMUL(x, g->tmat[0][k]), MDNL_FMUL(y, g->tmat[1][k])),
                                  MDNL_FMUL(z, g->tmat[2][k])),
                        g->t0[k]);
    float c = floorf(MDNL_FMUL(t, g->inv_cell[k]));
    if (!(c >= 0.0f))
        return 0; /* also catches NaN */
    if (c >= (float)(g->ncell[k] - 1))
        return g->ncell[k] - 1;
    return (int)c;
}

/* Sort key of a row entry: neighbor index, then distance (d >= 0, so its bits
 * order like the value). Rows are sorted by this key on every backend. */
MDNL_HD uint64_t mdnl_row_key(int32_t j, float d)
{
    union {
        float f;
        uint32_t u;
    } bits;
    bits.f = d;
    return ((uint64_t)(uint32_t)j << 32) | bits.u;
}

MDNL_END_C

#endif

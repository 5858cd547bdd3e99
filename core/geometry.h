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
#include <stdbool.h>
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
    int64_t frame;         /* the frame's index, for messages (the work guard) */
    double max_pairs;      /* the frame's own work limit (mdnl_frame.max_pairs); 0: the process-wide one */
    const char *limit_option; /* mdnl_frame.limit_option, for the work guard's messages */
} mdnl_geom;

/* Prepares `g` for the frame's box and `cutoff` (> 0, finite) and writes the
 * wrapped positions as float into pos4[natoms][4] (x, y, z, 0), which the
 * caller allocates. Returns MDNL_ERR_INPUT for a singular lattice or a
 * non-finite position (naming the atom), MDNL_ERR_USAGE for a bad cutoff. */
mdnl_status mdnl_geom_prepare(const mdnl_frame *f, double cutoff, mdnl_geom *g, float (*pos4)[4]);

/* mdnl_geom_prepare in two halves around the per-atom wrap, so that the wrap
 * can run elsewhere (on the device: geometry_cuda.h) with the same result:
 *
 *   mdnl_geom_begin   the box part: checks the cutoff, inverts the cell,
 *                     fills g's lattice fields and tmat, and `w` with what
 *                     mdnl_wrap_atom needs (in double);
 *   mdnl_wrap_atom    per atom: the wrapped float position and its t (below);
 *   mdnl_geom_finish  the grid, from the atoms' t-range (tlo/thi: the min and
 *                     max of t over the finite atoms, +inf/-inf when none)
 *                     and the first atom with a non-finite coordinate
 *                     (natoms when none: otherwise MDNL_ERR_INPUT naming it).
 *
 * begin + mdnl_wrap_atom over every atom + finish is exactly mdnl_geom_prepare
 * (which is written that way). */
typedef struct mdnl_wrap_params {
    double hinv[3][3]; /* s = r · hinv (the identity without a lattice) */
    double h[3][3];    /* lattice rows */
    double tmat[3][3]; /* g->tmat as double */
    int pbc[3];
    int has_lattice;
} mdnl_wrap_params;

mdnl_status mdnl_geom_begin(const mdnl_frame *f, double cutoff, mdnl_geom *g, mdnl_wrap_params *w);
mdnl_status mdnl_geom_finish(const mdnl_frame *f, double cutoff, mdnl_geom *g, const double tlo[3], const double thi[3],
                             int64_t first_bad);

/* The grid before the t-range is known (`mdnl run` on the device: the wrap's
 * t-range comes back while the frame's kernels already run). On a frame
 * periodic on every axis the atoms enter the grid only through the rounding
 * slack of set_grid, which grows with max |t|; and max |t| lies between the
 * largest width and mdnl_geom_tabs_bound (each wrapped fractional coordinate
 * is in [0, 1), so |t_k| <= sum_a |p_a| |tmat[a][k]|, with |p_a| <= sum_j
 * |h[j][a]|, widened by 1e-6 for the float and double roundings).
 *
 *   mdnl_geom_tabs_bound  that bound for a geometry from mdnl_geom_begin;
 *                         0 when the frame is not periodic on every axis or
 *                         has no atoms (then the t-range is needed);
 *   mdnl_geom_finish_early  mdnl_geom_finish with tlo = thi = 0 (the grid of
 *                         the smallest max |t|); returns true when the grid of
 *                         the bound has the same bits (everything but
 *                         tlo/thi), so that every max |t| in between has too:
 *                         the grid is the one mdnl_geom_finish will give;
 *   mdnl_geom_early_certain  the same test for a grid regridded
 *                         (mdnl_geom_regrid) from an early one;
 *   mdnl_geom_settle      once the t-range and the first non-finite atom are
 *                         known: mdnl_geom_finish's errors, the real
 *                         tlo/thi stored, and MDNL_ERR_INTERNAL if the grid
 *                         differs from the early one (it cannot). */
double mdnl_geom_tabs_bound(const mdnl_geom *g, const mdnl_wrap_params *w);
bool mdnl_geom_finish_early(double cutoff, mdnl_geom *g, double tabs_bound);
bool mdnl_geom_early_certain(const mdnl_geom *g, double cutoff, double tabs_bound);
mdnl_status mdnl_geom_settle(const mdnl_frame *f, double cutoff, mdnl_geom *g, const double tlo[3], const double thi[3],
                             int64_t first_bad);

/* The grid mdnl_geom_prepare lays out for `cutoff` (and the device wrap,
 * geometry_cuda.h, bit for bit), without writing any positions: into g and,
 * when cutoff2 > 0, into g2 the grid for cutoff2 that mdnl_geom_regrid gives
 * from it once the frame is wrapped. On a frame periodic on every axis from
 * the box alone when the grids cannot depend on the atoms' t-range (as the
 * device wrap does: mdnl_geom_finish_early, mdnl_geom_early_certain), else
 * from the t-range computed here (mdnl_wrap_atom over every atom, OpenMP).
 * Errors as mdnl_geom_prepare's but the occupancy guard's, which needs the
 * positions: `mdnl run` on CUDA runs it on these grids from the frame's
 * doubles, on a thread of its own, while the device works. */
mdnl_status mdnl_geom_layout(const mdnl_frame *f, double cutoff, mdnl_geom *g, double cutoff2, mdnl_geom *g2);

/* The same frame's geometry for another cutoff, without touching the
 * positions: `g` becomes exactly what mdnl_geom_prepare(f, cutoff, ...)
 * would give for the frame `src` was prepared from (the positions it wrote
 * do not depend on the cutoff). `mdnl run` wraps a frame once and grids it
 * for the neighbor cutoff and for r_max. MDNL_ERR_USAGE for a bad cutoff. */
mdnl_status mdnl_geom_regrid(const mdnl_geom *src, double cutoff, mdnl_geom *g);

/* ---- the work guard: a frame's work is estimated before it is computed ----
 *
 * A damaged Lattice (vectors of 1e-3 Å, two nearly parallel vectors) is
 * still a valid cell, but its images within the cutoff number in the
 * billions: the traversal would run for hours and the list would not fit in
 * memory. mdnl_geom_finish and mdnl_geom_regrid (and so mdnl_geom_prepare,
 * the device wrap and mdnl_geom_settle) estimate the frame's work from its
 * grid, before any kernel runs or any list is allocated, and refuse the frame
 * with MDNL_ERR_INPUT when it is beyond the limit (mdnl_geom_finish_early
 * declines, so that the caller goes on to mdnl_geom_finish, which refuses).
 *
 *   pairs       pairs expected from the density and the cutoff, counted in
 *               both directions (the full list): N · N/V · 4/3 π r³, V the
 *               volume the atoms fill (their extent in t on every axis, at
 *               least r, on a periodic axis at most the cell's width); at
 *               most `candidates`;
 *   shifts      (cell, image) offsets the cell traversal visits per atom;
 *   visits      N · shifts: each costs a cell lookup even when empty;
 *   candidates  pairs the traversal tests: visits · atoms per occupied cell.
 *
 * Limit: pairs <= max_pairs, visits <= max_pairs and candidates <=
 * MDNL_WORK_CANDIDATES_PER_PAIR · max_pairs (a near-degenerate cell has few
 * pairs but billions of image shifts; atoms bunched in a huge cell with a
 * tiny axis are denser than N/V). By default also the cutoff is at most
 * MDNL_WORK_CUTOFF_WIDTHS times the narrowest periodic width: beyond, an atom
 * meets hundreds of its own images along one axis, which no physical cell
 * does, and the uniform-density estimate misses atoms bunched in the other
 * directions. max_pairs is the frame's own limit (mdnl_frame.max_pairs: a
 * library context's, include/mdnl/mdnl.h), else the process-wide limit
 * (mdnl_work_set_limit, the command line's --max-pairs) or, by default, MDNL_WORK_PAIRS_PER_ATOM per
 * atom and at least MDNL_WORK_PAIRS_FLOOR: 1M LJ atoms at r_max 4σ expect
 * 2.3e8 of 1e11 allowed, while 3 atoms in a cell of 1e-3 Å expect 3e11. */
#define MDNL_WORK_PAIRS_PER_ATOM 1e5
#define MDNL_WORK_PAIRS_FLOOR 1e7
#define MDNL_WORK_CANDIDATES_PER_PAIR 32.0
#define MDNL_WORK_CUTOFF_WIDTHS 100.0 /* default only: an explicit --max-pairs lifts it */

typedef struct mdnl_work {
    double pairs, shifts, visits, candidates;
} mdnl_work;

/* The estimate for a laid-out grid g (every field set). */
void mdnl_work_estimate(const mdnl_geom *g, mdnl_work *w);

/* Sets the process-wide limit on a frame's pairs: max_pairs > 0, or 0 for
 * the default. Call before frames are prepared (not thread-safe against
 * them). mdnl_work_max_pairs gives the limit that applies to n atoms. */
void mdnl_work_set_limit(double max_pairs);
double mdnl_work_max_pairs(int64_t natoms);

/* MDNL_OK, or MDNL_ERR_INPUT naming the frame, the cell, the cutoff and the
 * estimate when the grid g is beyond the limit. */
mdnl_status mdnl_work_check(const mdnl_geom *g);

/* The work guard's memory half: the bytes a stored neighbor list of grid g
 * is estimated to take (8 per pair of the half or full list, pairs from
 * mdnl_work_estimate, and 8 per atom), against `copies` lists held at once
 * and the host's physical memory. MDNL_ERR_RESOURCE naming the frame and the
 * estimate ("SOURCE: frame N: the neighbor list would take ...", or without
 * "SOURCE: " when source is NULL) when it does not fit. */
mdnl_status mdnl_work_check_list_memory(const char *source, const mdnl_geom *g, bool full, int copies);

/* ---- the work guard from the cells' occupancy ----
 *
 * mdnl_work_estimate assumes the atoms fill their extent evenly; atoms
 * stacked at one point (100k atoms at the origin of a periodic box, 2M
 * zeros) fill one cell and meet every other atom, which no estimate from the
 * extent sees. Once the grid is laid out and the positions known, and before
 * any pair work, the atoms are counted per cell of the same grid (O(N) and
 * O(cells)):
 *
 *   candidates  the pairs the cell traversal tests: sum over cells c of
 *               n_c times the atoms in c's stencil (every (cell, image)
 *               offset -stencil..stencil, cyclic on periodic axes);
 *   pairs       sum over cells of n_c^2 / V_cell x 4/3 pi r^3: the density
 *               estimate of mdnl_work_estimate with each cell's own density;
 *   densest     the cell holding the most atoms (row-major index over
 *               ncell[0] x ncell[1] x ncell[2]) and its count (`atom`, one
 *               atom in it, is looked for only for the refusal's message).
 *
 * mdnl_work_check_cells refuses the frame (MDNL_ERR_INPUT naming the densest
 * cell, an atom in it and the estimates) beyond the limits of
 * mdnl_work_check: pairs <= max_pairs and candidates <=
 * MDNL_WORK_CANDIDATES_PER_PAIR x max_pairs. Positions: the wrapped float
 * positions of mdnl_geom_prepare (pos4), else the frame's double positions
 * (pos; a device run keeps its wrapped positions on the device). Callers:
 * mdnl_geom_prepare, and libmdnl's streams (lib/library_stream.c) for a
 * device-wrapped frame. MDNL_ERR_RESOURCE when its scratch (24 bytes a cell)
 * cannot be allocated. */
/* inv = the inverse of the 3x3 matrix a (rows are lattice vectors); false
 * when a is singular to 1e-12 of the product of its rows' lengths, or not
 * finite. */
bool mdnl_mat3_invert(const double a[3][3], double inv[3][3]);

typedef struct mdnl_occupancy {
    double candidates, pairs;
    int64_t densest, densest_count, atom;
} mdnl_occupancy;

mdnl_status mdnl_work_occupancy(const mdnl_geom *g, const float (*pos4)[4], const double (*pos)[3],
                                mdnl_occupancy *o);
mdnl_status mdnl_work_check_cells(const mdnl_geom *g, const float (*pos4)[4], const double (*pos)[3]);

/* The screen mdnl_work_check_cells runs first on a frame of more than 8192
 * atoms, from min(natoms, 2048) of them (one drawn with `seed` from each
 * equal stratum of the atoms, weighted by its stratum's size), with no
 * array of the grid's size: `pairs` as mdnl_work_occupancy's for the sampled
 * weights, `candidates` an upper bound of theirs (from a grid of at most 16
 * cells per axis, each cell a block of the fine grid's, its stencil widened
 * to hold every fine window); densest and atom are not set (-1). With every
 * atom sampled (natoms <= 2048): pairs equal to the exact count's, and
 * candidates at least its. */
mdnl_status mdnl_work_occupancy_sampled(const mdnl_geom *g, const float (*pos4)[4], const double (*pos)[3],
                                        uint64_t seed, mdnl_occupancy *o);

/* The pieces of mdnl_work_check_cells, for an occupancy counted elsewhere
 * (on the device: lib/library_cuda.h):
 *   mdnl_work_cell_pair_factor  4/3 pi r^3 over a cell's volume: pairs =
 *                               this x the sum of squared cell counts;
 *   mdnl_work_cells_bounded     true when no placement of g's atoms can
 *                               reach the limits (n^2 x that factor, and n^2
 *                               x the laps of the stencil windows around the
 *                               periodic axes): the count can be skipped;
 *   mdnl_work_cells_within      o within the limits;
 *   mdnl_work_refuse_cells      MDNL_ERR_INPUT with the refusal's message
 *                               (o->atom set, xyz its wrapped position). */
double mdnl_work_cell_pair_factor(const mdnl_geom *g);
bool mdnl_work_cells_bounded(const mdnl_geom *g);
bool mdnl_work_cells_within(const mdnl_geom *g, const mdnl_occupancy *o);
mdnl_status mdnl_work_refuse_cells(const mdnl_geom *g, const mdnl_occupancy *o, const float xyz[3]);

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

#if defined(__CUDA_ARCH__)
#define MDNL_DADD(a, b) __dadd_rn((a), (b))
#define MDNL_DSUB(a, b) __dsub_rn((a), (b))
#define MDNL_DMUL(a, b) __dmul_rn((a), (b))
#else
#define MDNL_DADD(a, b) ((double)(a) + (double)(b))
#define MDNL_DSUB(a, b) ((double)(a) - (double)(b))
#define MDNL_DMUL(a, b) ((double)(a) * (double)(b))
#endif

/* floor(x), exactly. On the host without the libm call on machines without
 * SSE4.1's roundsd: truncation is exact for |x| < 2^62 (larger values are
 * integers already, and go through floor). */
MDNL_HD double mdnl_floor_exact(double x)
{
#if defined(__CUDA_ARCH__)
    return floor(x);
#else
    if (!(fabs(x) < 4.6e18) || x == 0.0)
        return floor(x); /* and floor(-0.0) = -0.0, which truncation would lose */
    double t = (double)(int64_t)x;
    return t > x ? t - 1.0 : t;
#endif
}

/* One atom of the wrap (the single definition the host loop and the device
 * kernel share, every double operation spelled out so that nvcc cannot fuse
 * them): periodic fractional coordinates into [0, 1), the Cartesian position
 * rebuilt and rounded to float into p, and t (the grid coordinate, from the
 * float position, as the kernels compute it) into t. Returns 0, writing
 * nothing, when a coordinate is not finite. */
MDNL_HD int mdnl_wrap_atom(const mdnl_wrap_params *w, double r0, double r1, double r2, float p[3], double t[3])
{
    if (!isfinite(r0) || !isfinite(r1) || !isfinite(r2))
        return 0;
    double s[3];
    for (int k = 0; k < 3; ++k) {
        s[k] = MDNL_DADD(MDNL_DADD(MDNL_DMUL(r0, w->hinv[0][k]), MDNL_DMUL(r1, w->hinv[1][k])),
                         MDNL_DMUL(r2, w->hinv[2][k]));
        if (w->pbc[k]) {
            s[k] = MDNL_DSUB(s[k], mdnl_floor_exact(s[k]));
            if (s[k] >= 1.0)
                s[k] = 0.0;
        }
    }
    if (w->has_lattice) {
        for (int a = 0; a < 3; ++a)
            p[a] = (float)MDNL_DADD(MDNL_DADD(MDNL_DMUL(s[0], w->h[0][a]), MDNL_DMUL(s[1], w->h[1][a])),
                                    MDNL_DMUL(s[2], w->h[2][a]));
    } else {
        p[0] = (float)r0, p[1] = (float)r1, p[2] = (float)r2;
    }
    for (int k = 0; k < 3; ++k)
        t[k] = MDNL_DADD(MDNL_DADD(MDNL_DMUL((double)p[0], w->tmat[0][k]), MDNL_DMUL((double)p[1], w->tmat[1][k])),
                         MDNL_DMUL((double)p[2], w->tmat[2][k]));
    return 1;
}

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

/* Whether the image shift S is lexicographically positive: of each ±S pair
 * of a self image, the one a half list (and a half traversal) keeps. */
MDNL_HD int mdnl_shift_positive(int s0, int s1, int s2)
{
    /* bitwise, not ||/&&: no branches where a kernel tests it a candidate */
    return (s0 > 0) | ((s0 == 0) & ((s1 > 0) | ((s1 == 0) & (s2 > 0))));
}

/* Whether (i, j, S) belongs to the half list: i < j, or a self image
 * (i == j) with S lexicographically positive. (i, i, 0) is never a pair. */
MDNL_HD int mdnl_half_keep(int64_t i, int64_t j, int s0, int s1, int s2)
{
    /* bitwise, without an early return: no branches where a kernel tests it a candidate */
    return (i < j) | ((i == j) & mdnl_shift_positive(s0, s1, s2));
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

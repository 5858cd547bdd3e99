/* geometry.c — host-side preparation of a frame for the neighbor kernels
 * (the contract and the grid's invariants are in geometry.h). */
#define _POSIX_C_SOURCE 200809L
#include "geometry.h"

#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stdint.h>

/* Slack on cell widths and image ranges that covers float rounding: relative
 * to the cutoff, plus a few float ulps of the largest coordinate (t of an atom
 * at 1000 Å is rounded by ~1e-4 Å, more than 1e-5 of a 2 Å cutoff). */
#define SLACK 1e-5
#define ULP_SLACK 2e-6

/* Periodic images a cutoff may span along one axis (cutoff / cell width).
 * Past this the request is not a neighbor search of a physical cell, and
 * (int)(rcs / w) below would overflow (a --box of 1e-100 gave a list
 * without images; one of 1e-300 hung). */
#define MAX_IMAGES 1000.0

static mdnl_status check_images(const mdnl_geom *g, const double width[3], double cutoff, const char *prefix)
{
    for (int k = 0; k < 3; ++k)
        if (g->pbc[k] && !(cutoff * (1.0 + SLACK) <= MAX_IMAGES * width[k]))
            return mdnl_error(MDNL_ERR_INPUT,
                              "%sexpected a periodic cell at least cutoff/%g wide along axis %c, found width %g for "
                              "cutoff %g",
                              prefix, MAX_IMAGES, 'a' + k, width[k], cutoff);
    return MDNL_OK;
}

bool mdnl_mat3_invert(const double a[3][3], double inv[3][3])
{
    double det = a[0][0] * (a[1][1] * a[2][2] - a[1][2] * a[2][1]) - a[0][1] * (a[1][0] * a[2][2] - a[1][2] * a[2][0]) +
                 a[0][2] * (a[1][0] * a[2][1] - a[1][1] * a[2][0]);
    double scale = 0;
    for (int r = 0; r < 3; ++r) {
        double n = sqrt(a[r][0] * a[r][0] + a[r][1] * a[r][1] + a[r][2] * a[r][2]);
        scale = scale == 0 ? n : scale * n;
    }
    if (!isfinite(det) || scale == 0 || fabs(det) <= 1e-12 * scale)
        return false;
    inv[0][0] = (a[1][1] * a[2][2] - a[1][2] * a[2][1]) / det;
    inv[0][1] = (a[0][2] * a[2][1] - a[0][1] * a[2][2]) / det;
    inv[0][2] = (a[0][1] * a[1][2] - a[0][2] * a[1][1]) / det;
    inv[1][0] = (a[1][2] * a[2][0] - a[1][0] * a[2][2]) / det;
    inv[1][1] = (a[0][0] * a[2][2] - a[0][2] * a[2][0]) / det;
    inv[1][2] = (a[0][2] * a[1][0] - a[0][0] * a[1][2]) / det;
    inv[2][0] = (a[1][0] * a[2][1] - a[1][1] * a[2][0]) / det;
    inv[2][1] = (a[0][1] * a[2][0] - a[0][0] * a[2][1]) / det;
    inv[2][2] = (a[0][0] * a[1][1] - a[0][1] * a[1][0]) / det;
    return true;
}

/* Sets ncell, inv_cell and stencil of axis k for a grid of n cells over a
 * range of `span` (periodic: the width) with cells no smaller than rcs. */
static void set_axis(mdnl_geom *g, int k, double span, int64_t n, double rcs, int periodic)
{
    if (n < 1)
        n = 1;
    double cw = span / (double)n;
    if (!periodic && cw < rcs)
        cw = rcs;
    if (periodic && cw <= 0)
        cw = rcs;
    g->ncell[k] = (int)n;
    g->inv_cell[k] = (float)(1.0 / cw);
    double m = ceil(rcs / cw);
    g->stencil[k] = !(m >= 1) ? 1 : m > 1e9 ? 1000000000 : (int)m; /* NaN too; beyond: refused by the work guard */
    if (!periodic)
        g->stencil[k] = 1; /* cw >= rcs on open axes */
}

/* Lays out the cell grid of a prepared geometry (wrapped positions, t-range
 * in tlo/thi) for `cutoff`. */
static void set_grid(mdnl_geom *g, double cutoff)
{
    const int64_t n = g->natoms;
    const double *tmin = g->tlo, *tmax = g->thi, *w = g->width;

    double tabs = 0;
    for (int k = 0; k < 3; ++k) {
        if (n > 0)
            tabs = fmax(tabs, fmax(fabs(tmin[k]), fabs(tmax[k])));
        if (g->pbc[k])
            tabs = fmax(tabs, w[k]);
    }
    const double rcs = cutoff * (1.0 + SLACK) + ULP_SLACK * tabs;

    /* Grid: cells at least rcs wide, at most max(64, 2n) of them. */
    double span[3];
    int64_t want[3];
    for (int k = 0; k < 3; ++k) {
        if (g->pbc[k]) {
            span[k] = w[k];
            g->t0[k] = 0.0f;
            double q = floor(w[k] / rcs);
            const double m = floor(rcs / w[k]) + 1; /* check_images bounds it; the clamp keeps the cast defined */
            g->image_max[k] = m < 1e9 ? (int)m : 1000000000;
            want[k] = !(q >= 1) ? 1 : (q > 1e9 ? 1000000000 : (int64_t)q); /* NaN (inf/inf) too */
        } else {
            span[k] = n > 0 ? tmax[k] - tmin[k] : 0.0;
            g->t0[k] = n > 0 ? (float)tmin[k] : 0.0f;
            double q = floor(span[k] / rcs);
            want[k] = !(q >= 1) ? 1 : (q > 1e9 ? 1000000000 : (int64_t)q); /* NaN (inf/inf) too */
        }
    }
    const int64_t cap = n * 2 > 64 ? n * 2 : 64;
    for (;;) {
        double total = (double)want[0] * (double)want[1] * (double)want[2];
        if (total <= (double)cap)
            break;
        int big = 0;
        for (int k = 1; k < 3; ++k)
            if (want[k] > want[big])
                big = k;
        want[big] = want[big] / 2 > 0 ? want[big] / 2 : 1;
    }
    for (int k = 0; k < 3; ++k)
        set_axis(g, k, span[k], want[k], rcs, g->pbc[k]);
    g->ncells = (int64_t)g->ncell[0] * g->ncell[1] * g->ncell[2];
}

/* ---- the work guard (geometry.h) ---- */

static double work_limit; /* --max-pairs; 0: the default */

void mdnl_work_set_limit(double max_pairs) { work_limit = max_pairs > 0 ? max_pairs : 0; }

double mdnl_work_max_pairs(int64_t natoms)
{
    if (work_limit > 0)
        return work_limit;
    return fmax(MDNL_WORK_PAIRS_FLOOR, MDNL_WORK_PAIRS_PER_ATOM * (double)natoms);
}

void mdnl_work_estimate(const mdnl_geom *g, mdnl_work *w)
{
    const double n = (double)g->natoms, rc = (double)g->cutoff;
    w->pairs = w->shifts = w->visits = w->candidates = 0;
    if (n <= 0)
        return;
    /* The t-range is unknown in a grid laid out early (mdnl_geom_finish_early
     * sets it to zero): periodic axes then count as filled, and the frame is
     * judged again with its real t-range when it is settled. */
    bool have_range = false;
    for (int k = 0; k < 3; ++k)
        have_range = have_range || g->tlo[k] != 0 || g->thi[k] != 0;
    /* Per axis: the offsets the traversal visits (-stencil..stencil on a
     * periodic axis; the grid clamps a stencil at 1e9, beyond any limit
     * anyway), the extent E the atoms fill in t (the atoms' span, at least
     * the cutoff, at most the width of a periodic axis: atoms bunched in a
     * corner of a huge cell are dense) and the cells they occupy. */
    double shifts = 1, extent = 1, wprod = 1, occupied = 1;
    for (int k = 0; k < 3; ++k) {
        const double ncell = g->ncell[k] > 0 ? (double)g->ncell[k] : 1.0;
        const double span = g->thi[k] - g->tlo[k];
        const double e = fmax(isfinite(span) && span > 0 ? span : 0.0, rc);
        if (g->pbc[k] && g->width[k] > 0) {
            const double ek = have_range ? fmin(g->width[k], e) : g->width[k];
            shifts *= 2.0 * (double)g->stencil[k] + 1.0;
            extent *= ek;
            occupied *= fmin(ncell, fmax(1.0, ceil(ek / g->width[k] * ncell)));
        } else {
            shifts *= fmin(3.0, ncell);
            extent *= e;
            occupied *= ncell;
        }
        wprod *= g->width[k];
    }
    /* t is a skewed frame: a box of t-extents E_k holds V / prod(w) * prod(E)
     * of volume (1 without a lattice, where t = r). */
    const double skew = g->volume > 0 && wprod > 0 ? g->volume / wprod : 1.0;
    w->shifts = shifts;
    w->visits = n * shifts;
    w->candidates = n * shifts * (n / occupied);
    const double sphere = 4.18879020478639098 * rc * rc * rc; /* 4/3 pi r^3 */
    w->pairs = fmin(w->candidates, n * n / (extent * skew) * sphere);
}

/* The cutoff over the narrowest periodic width (0 without one). */
static double cutoff_widths(const mdnl_geom *g)
{
    double r = 0;
    for (int k = 0; k < 3; ++k)
        if (g->pbc[k] && g->width[k] > 0)
            r = fmax(r, (double)g->cutoff / g->width[k]);
    return r;
}

/* The limit g is judged by: its own (a library context's, through the frame)
 * or the process-wide one. */
static double limit_of(const mdnl_geom *g)
{
    return g->max_pairs > 0 ? g->max_pairs : mdnl_work_max_pairs(g->natoms);
}

static bool limit_explicit(const mdnl_geom *g) { return g->max_pairs > 0 || work_limit > 0; }

/* The option that raises the limit, as the refusals name it. */
static const char *limit_option(const mdnl_geom *g) { return g->limit_option ? g->limit_option : "--max-pairs N"; }

static bool work_within(const mdnl_geom *g, const mdnl_work *w)
{
    const double limit = limit_of(g);
    if (!limit_explicit(g) && !(cutoff_widths(g) <= MDNL_WORK_CUTOFF_WIDTHS))
        return false;
    return w->pairs <= limit && w->visits <= limit && w->candidates <= MDNL_WORK_CANDIDATES_PER_PAIR * limit;
}

mdnl_status mdnl_work_check(const mdnl_geom *g)
{
    mdnl_work w;
    mdnl_work_estimate(g, &w);
    if (work_within(g, &w))
        return MDNL_OK;
    const double limit = limit_of(g);
    return mdnl_error(MDNL_ERR_INPUT,
                      "frame %lld: cell a=(%g %g %g) b=(%g %g %g) c=(%g %g %g) (widths %.3g %.3g %.3g, pbc %d%d%d) "
                      "with %lld atoms and cutoff %g (%.3g widths): estimated %.3g pairs, %.3g image shifts per atom "
                      "and %.3g candidate pairs, beyond the limit of %.3g pairs (as many atom-shift visits, %.0f times "
                      "as many candidates%s); check the Lattice, or raise the limit with %s",
                      (long long)g->frame, g->h[0][0], g->h[0][1], g->h[0][2], g->h[1][0], g->h[1][1], g->h[1][2],
                      g->h[2][0], g->h[2][1], g->h[2][2], g->width[0], g->width[1], g->width[2], g->pbc[0], g->pbc[1],
                      g->pbc[2], (long long)g->natoms, (double)g->cutoff, cutoff_widths(g), w.pairs, w.shifts,
                      w.candidates, limit, MDNL_WORK_CANDIDATES_PER_PAIR,
                      !limit_explicit(g) ? ", a cutoff of at most 100 periodic widths" : "", limit_option(g));
}

/* ---- the work guard from the cells' occupancy (geometry.h) ---- */

/* out[i] = the sum of a[] over the stencil window -s..s around i along one
 * line of n cells `stride` apart: cyclic on a periodic axis (an offset
 * beyond n wraps again: each (cell, shift) is a visit of its own), clipped
 * on an open one. pre[] holds 2n + 1 doubles. */
static void window_line(const double *a, double *out, int64_t n, int64_t stride, int64_t s, bool periodic,
                        double *pre)
{
    pre[0] = 0;
    for (int64_t j = 0; j < n; ++j)
        pre[j + 1] = pre[j] + a[j * stride];
    for (int64_t j = n; j < 2 * n; ++j)
        pre[j + 1] = pre[j] + a[(j - n) * stride];
    const double total = pre[n];
    /* no division in the loop: this runs over every cell three times */
    const int64_t len = 2 * s + 1, full = len / n, rem = len % n, s_mod = s % n;
    for (int64_t i = 0; i < n; ++i) {
        double v;
        if (periodic) {
            const int64_t start = i - s_mod < 0 ? i - s_mod + n : i - s_mod;
            v = (double)full * total + (pre[start + rem] - pre[start]);
        } else {
            const int64_t lo = i - s < 0 ? 0 : i - s, hi = i + s > n - 1 ? n - 1 : i + s;
            v = pre[hi + 1] - pre[lo];
        }
        out[i * stride] = v;
    }
}

/* The cell of atom i on g's grid: from the wrapped float positions (the
 * binning's own arithmetic, mdnl_cell_coord), or from the frame's double
 * positions wrapped here (a device run keeps its wrapped positions there). */
static void cell_coords(const mdnl_geom *g, const float (*pos4)[4], const double (*pos)[3], int64_t i, int c[3])
{
    if (pos4) {
        for (int k = 0; k < 3; ++k)
            c[k] = mdnl_cell_coord(g, pos4[i][0], pos4[i][1], pos4[i][2], k);
    } else {
        for (int k = 0; k < 3; ++k) {
            double t = pos[i][0] * g->tmat[0][k] + pos[i][1] * g->tmat[1][k] + pos[i][2] * g->tmat[2][k];
            if (g->pbc[k] && g->width[k] > 0)
                t -= g->width[k] * mdnl_floor_exact(t / g->width[k]);
            const double x = mdnl_floor_exact((t - g->t0[k]) * g->inv_cell[k]);
            c[k] = !(x >= 0) ? 0 : x >= g->ncell[k] - 1 ? g->ncell[k] - 1 : (int)x;
        }
    }
}

static int64_t cell_of(const mdnl_geom *g, const float (*pos4)[4], const double (*pos)[3], int64_t i)
{
    int c[3];
    cell_coords(g, pos4, pos, i, c);
    return ((int64_t)c[0] * g->ncell[1] + c[1]) * g->ncell[2] + c[2];
}

/* A cell's volume: the cell spans 1/inv_cell along each t axis, and t is a
 * skewed frame (see mdnl_work_estimate). */
static double cell_volume(const mdnl_geom *g)
{
    double wprod = 1, cellv = 1;
    for (int k = 0; k < 3; ++k) {
        wprod *= g->width[k];
        cellv *= 1.0 / (double)g->inv_cell[k];
    }
    if (g->volume > 0 && wprod > 0)
        cellv *= g->volume / wprod;
    return cellv;
}

/* splitmix64: the sample's atom indices. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The exact occupancy: every atom counted in its cell. */
static mdnl_status occupancy(const mdnl_geom *g, const float (*pos4)[4], const double (*pos)[3], mdnl_occupancy *o)
{
    memset(o, 0, sizeof *o);
    o->densest = -1;
    o->atom = -1; /* found by mdnl_work_check_cells when it refuses */
    const int64_t n = g->natoms, nc = g->ncells;
    if (n <= 0 || nc <= 0)
        return MDNL_OK;
    int64_t nmax = 0;
    for (int k = 0; k < 3; ++k)
        nmax = g->ncell[k] > nmax ? g->ncell[k] : nmax;
    /* one block: the counts (a), two window buffers (w, tmp), the prefix sums */
    double *a = mdnl_malloc(((size_t)nc * 3 + (size_t)(2 * nmax + 1)) * sizeof *a, "cell occupancy");
    int32_t *count = mdnl_calloc((size_t)nc, sizeof *count, "cell occupancy");
    if (!a || !count) {
        free(a), free(count);
        return MDNL_ERR_RESOURCE;
    }
    double *w = a + nc, *tmp = w + nc, *pre = tmp + nc;
    /* OpenMP over atoms as mdnl_geom_prepare's wrap (at 1M atoms the count
     * is ~15 ms of one core); the atomics contend only when atoms are
     * stacked, which is what this refuses. */
#pragma omp parallel for schedule(static) if (n > 20000)
    for (int64_t i = 0; i < n; ++i) {
        const int64_t c = cell_of(g, pos4, pos, i);
#pragma omp atomic
        count[c] += 1;
    }
    for (int64_t c = 0; c < nc; ++c)
        a[c] = (double)count[c];
    free(count);
    /* The stencil window is a box -s..s on each axis: its sum is three
     * passes of a one-dimensional window, O(cells) whatever the stencil. */
    const int64_t nx = g->ncell[0], ny = g->ncell[1], nz = g->ncell[2];
    memcpy(w, a, (size_t)nc * sizeof *w);
    for (int64_t x = 0; x < nx; ++x)
        for (int64_t y = 0; y < ny; ++y)
            window_line(w + (x * ny + y) * nz, tmp + (x * ny + y) * nz, nz, 1, g->stencil[2], g->pbc[2], pre);
    for (int64_t x = 0; x < nx; ++x)
        for (int64_t z = 0; z < nz; ++z)
            window_line(tmp + x * ny * nz + z, w + x * ny * nz + z, ny, nz, g->stencil[1], g->pbc[1], pre);
    for (int64_t y = 0; y < ny; ++y)
        for (int64_t z = 0; z < nz; ++z)
            window_line(w + y * nz + z, tmp + y * nz + z, nx, ny * nz, g->stencil[0], g->pbc[0], pre);
    for (int64_t c = 0; c < nc; ++c) {
        o->candidates += a[c] * tmp[c];
        o->pairs += a[c] * a[c];
        if (a[c] > (double)o->densest_count) {
            o->densest_count = (int64_t)a[c];
            o->densest = c;
        }
    }
    o->pairs *= mdnl_work_cell_pair_factor(g);
    free(a);
    return MDNL_OK;
}

/* Atoms a sample holds before the exact count (mdnl_work_check_cells). */
#define WORK_SAMPLE 2048
/* The sample's coarse grid: at most this many cells per axis. */
#define COARSE_CELLS 16
/* Slots of the sample's hash of occupied cells (a power of 2, >= 2 WORK_SAMPLE). */
#define SAMPLE_SLOTS 4096
/* How many draws ahead the sample's positions are prefetched. */
#define SAMPLE_PREFETCH 64

/* The coarse grid's index of fine coordinate x (any integer: the unwrapped
 * cell of an offset) on an axis of n fine cells merged b at a time into nb:
 * periodic, the cell of x mod n plus nb per period; open, clamped. Monotone
 * in x. */
static int64_t coarse_of(int64_t x, int64_t n, int64_t b, int64_t nb, bool periodic)
{
    if (!periodic)
        return (x < 0 ? 0 : x > n - 1 ? n - 1 : x) / b;
    const int64_t q = x >= 0 ? x / n : -((-x + n - 1) / n);
    return (x - q * n) / b + q * nb;
}

/* The sampled estimate of the occupancy (geometry.h), from WORK_SAMPLE
 * atoms: one drawn at random from each of WORK_SAMPLE equal strata of the
 * atoms (index order), standing for its stratum's atoms, so the draw is unbiased and
 * reads the positions in increasing order. No array of the grid's size:
 *
 *   pairs       sum over the fine cells of (sampled weight)^2, from a hash
 *               of the occupied cells (O(sample));
 *   candidates  an upper bound, from a coarse grid of at most COARSE_CELLS
 *               cells per axis (b fine cells each): every fine offset
 *               -s..s from a fine cell lands, unwrapped, within S coarse
 *               cells of its coarse cell, S the largest such distance over
 *               the axis (coarse_of is monotone), and distinct images stay
 *               distinct, so a coarse cell's window holds every fine window
 *               inside it, with multiplicity. */
mdnl_status mdnl_work_occupancy_sampled(const mdnl_geom *g, const float (*pos4)[4], const double (*pos)[3],
                                        uint64_t seed, mdnl_occupancy *o)
{
    memset(o, 0, sizeof *o);
    o->densest = o->atom = -1;
    double *pairs = &o->pairs, *candidates = &o->candidates;
    const int64_t n = g->natoms, m = n < WORK_SAMPLE ? n : WORK_SAMPLE;
    if (n <= 0 || g->ncells <= 0)
        return MDNL_OK;
    int64_t b[3], nb[3], S[3];
    for (int k = 0; k < 3; ++k) {
        const int64_t nk = g->ncell[k], s = g->stencil[k];
        b[k] = (nk + COARSE_CELLS - 1) / COARSE_CELLS;
        nb[k] = (nk + b[k] - 1) / b[k];
        S[k] = 0;
        for (int64_t i = 0; i < nk; ++i) {
            const int64_t ci = coarse_of(i, nk, b[k], nb[k], g->pbc[k]);
            const int64_t up = coarse_of(i + s, nk, b[k], nb[k], g->pbc[k]) - ci;
            const int64_t down = ci - coarse_of(i - s, nk, b[k], nb[k], g->pbc[k]);
            S[k] = up > S[k] ? up : S[k];
            S[k] = down > S[k] ? down : S[k];
        }
    }
    const int64_t ncoarse = nb[0] * nb[1] * nb[2];
    /* coarse weights, two window buffers, prefix sums; the hash's keys and
     * weights; the sampled positions */
    const size_t doubles = (size_t)ncoarse * 3 + (2 * COARSE_CELLS + 1) + SAMPLE_SLOTS;
    double *A = mdnl_calloc(doubles, sizeof *A, "cell occupancy sample");
    int64_t *key = mdnl_malloc(SAMPLE_SLOTS * sizeof *key + (size_t)m * 3 * sizeof(double), "cell occupancy sample");
    if (!A || !key) {
        free(A), free(key);
        return MDNL_ERR_RESOURCE;
    }
    double *W = A + ncoarse, *tmp = W + ncoarse, *pre = tmp + ncoarse, *hw = pre + 2 * COARSE_CELLS + 1;
    for (int h = 0; h < SAMPLE_SLOTS; ++h)
        key[h] = -1;
    /* The draws, then their positions gathered in a loop of loads alone,
     * prefetched far ahead: each is a cache miss, and a loop that also bins
     * them holds few in flight (the gather is most of the screen's time). */
    int64_t draw[WORK_SAMPLE];
    double weight[WORK_SAMPLE]; /* the atoms of the draw's stratum */
    for (int64_t k = 0; k < m; ++k) {
        const int64_t lo = k * n / m, hi = (k + 1) * n / m;
        weight[k] = (double)(hi - lo);
        /* a multiply, not a 64-bit division, per draw */
        draw[k] = lo + (int64_t)(((unsigned __int128)mix64(seed + (uint64_t)k) * (uint64_t)(hi - lo)) >> 64);
    }
    double(*spos)[3] = pos ? (double(*)[3])(void *)(key + SAMPLE_SLOTS) : NULL;
    float(*spos4)[4] = pos ? NULL : (float(*)[4])(void *)(key + SAMPLE_SLOTS);
    for (int64_t k = 0; k < m; ++k) {
        if (k + SAMPLE_PREFETCH < m) {
            if (pos4)
                __builtin_prefetch(pos4[draw[k + SAMPLE_PREFETCH]], 0);
            else
                __builtin_prefetch(pos[draw[k + SAMPLE_PREFETCH]], 0);
        }
        if (pos4)
            memcpy(spos4[k], pos4[draw[k]], sizeof *spos4);
        else
            memcpy(spos[k], pos[draw[k]], sizeof *spos);
    }
    /* 32-bit divisions below: cells and merge factors are ints */
    const uint32_t b0 = (uint32_t)b[0], b1 = (uint32_t)b[1], b2 = (uint32_t)b[2];
    for (int64_t k = 0; k < m; ++k) {
        int c[3];
        cell_coords(g, (const float(*)[4])spos4, (const double(*)[3])spos, k, c);
        const int64_t fine = ((int64_t)c[0] * g->ncell[1] + c[1]) * g->ncell[2] + c[2];
        uint64_t h = mix64((uint64_t)fine) & (SAMPLE_SLOTS - 1);
        while (key[h] >= 0 && key[h] != fine)
            h = (h + 1) & (SAMPLE_SLOTS - 1);
        key[h] = fine;
        hw[h] += weight[k];
        A[((int64_t)((uint32_t)c[0] / b0) * nb[1] + (uint32_t)c[1] / b1) * nb[2] + (uint32_t)c[2] / b2] += weight[k];
    }
    for (int h = 0; h < SAMPLE_SLOTS; ++h)
        *pairs += hw[h] * hw[h];
    *pairs *= mdnl_work_cell_pair_factor(g);
    const int64_t nx = nb[0], ny = nb[1], nz = nb[2];
    memcpy(W, A, (size_t)ncoarse * sizeof *W);
    for (int64_t x = 0; x < nx; ++x)
        for (int64_t y = 0; y < ny; ++y)
            window_line(W + (x * ny + y) * nz, tmp + (x * ny + y) * nz, nz, 1, S[2], g->pbc[2], pre);
    for (int64_t x = 0; x < nx; ++x)
        for (int64_t z = 0; z < nz; ++z)
            window_line(tmp + x * ny * nz + z, W + x * ny * nz + z, ny, nz, S[1], g->pbc[1], pre);
    for (int64_t y = 0; y < ny; ++y)
        for (int64_t z = 0; z < nz; ++z)
            window_line(W + y * nz + z, tmp + y * nz + z, nx, ny * nz, S[0], g->pbc[0], pre);
    for (int64_t c = 0; c < ncoarse; ++c)
        *candidates += A[c] * tmp[c];
    free(A), free(key);
    return MDNL_OK;
}

double mdnl_work_cell_pair_factor(const mdnl_geom *g)
{
    const double rc = (double)g->cutoff;
    return 4.18879020478639098 * rc * rc * rc / cell_volume(g); /* 4/3 pi r^3 */
}

bool mdnl_work_cells_bounded(const mdnl_geom *g)
{
    /* A cell's stencil window holds each atom at most once per pass of the
     * window around a periodic axis: candidates <= n^2 x that product, and
     * the sum of squared counts <= n^2. */
    const double n = (double)g->natoms, limit = limit_of(g);
    double laps = 1;
    for (int k = 0; k < 3; ++k)
        if (g->pbc[k] && g->ncell[k] > 0)
            laps *= ceil((2.0 * (double)g->stencil[k] + 1.0) / (double)g->ncell[k]);
    return n * n * mdnl_work_cell_pair_factor(g) <= limit && n * n * laps <= MDNL_WORK_CANDIDATES_PER_PAIR * limit;
}

bool mdnl_work_cells_within(const mdnl_geom *g, const mdnl_occupancy *o)
{
    const double limit = limit_of(g);
    return o->pairs <= limit && o->candidates <= MDNL_WORK_CANDIDATES_PER_PAIR * limit;
}

mdnl_status mdnl_work_refuse_cells(const mdnl_geom *g, const mdnl_occupancy *o, const float xyz[3])
{
    const int64_t yz = (int64_t)g->ncell[1] * g->ncell[2];
    return mdnl_error(MDNL_ERR_INPUT,
                      "frame %lld: %lld of %lld atoms are in one cell of the %dx%dx%d grid for cutoff %g (cell (%lld %lld "
                      "%lld), atom %lld at %g %g %g): estimated %.3g pairs from the cells' occupancy and %.3g "
                      "candidate pairs, beyond the limit of %.3g pairs (%.0f times as many candidates); are atoms "
                      "stacked at one point? Raise the limit with %s",
                      (long long)g->frame, (long long)o->densest_count, (long long)g->natoms, g->ncell[0], g->ncell[1],
                      g->ncell[2], (double)g->cutoff, (long long)(o->densest / yz),
                      (long long)(o->densest / g->ncell[2] % g->ncell[1]), (long long)(o->densest % g->ncell[2]),
                      (long long)o->atom, (double)xyz[0], (double)xyz[1], (double)xyz[2], o->pairs, o->candidates,
                      limit_of(g), MDNL_WORK_CANDIDATES_PER_PAIR, limit_option(g));
}

/* The first atom in cell `cell` (for the message only: a second pass). */
static int64_t atom_in(const mdnl_geom *g, const float (*pos4)[4], const double (*pos)[3], int64_t cell)
{
    for (int64_t i = 0; i < g->natoms; ++i)
        if (cell_of(g, pos4, pos, i) == cell)
            return i;
    return 0;
}

mdnl_status mdnl_work_occupancy(const mdnl_geom *g, const float (*pos4)[4], const double (*pos)[3],
                                mdnl_occupancy *o)
{
    return occupancy(g, pos4, pos, o);
}

mdnl_status mdnl_work_check_cells(const mdnl_geom *g, const float (*pos4)[4], const double (*pos)[3])
{
    if (mdnl_work_cells_bounded(g))
        return MDNL_OK;
    const double limit = limit_of(g);
    mdnl_occupancy o;
    mdnl_status st;
    /* Counting every atom costs more than a large frame's GPU kernels, so
     * a large frame is sampled first (mdnl_work_occupancy_sampled): WORK_SAMPLE atoms
     * drawn at random (a seed new to each process and frame, so no file can
     * be shaped around the draw). Only a frame whose estimate comes within 1/8 of a limit is
     * counted exactly, and only the exact count refuses. Stacking that could
     * reach the limits (over ~10^4 atoms in one cell's window) puts dozens
     * or more of the sampled atoms there, which multiplies the estimate far
     * past 1/8; the estimate's sampling noise only errs towards an exact
     * count. */
    if (g->natoms > 4 * WORK_SAMPLE) {
        /* several threads may guard frames at once (the pipeline's prepare workers) */
        static _Atomic uint64_t process_seed;
        uint64_t seed = atomic_load_explicit(&process_seed, memory_order_relaxed);
        if (!seed) {
            seed = mix64((uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&process_seed) | 1;
            atomic_store_explicit(&process_seed, seed, memory_order_relaxed);
        }
        if ((st = mdnl_work_occupancy_sampled(g, pos4, pos, seed ^ mix64((uint64_t)g->frame), &o)) != MDNL_OK)
            return st;
        if (o.pairs <= limit / 8 && o.candidates <= MDNL_WORK_CANDIDATES_PER_PAIR * limit / 8)
            return MDNL_OK;
    }
    if ((st = mdnl_work_occupancy(g, pos4, pos, &o)) != MDNL_OK)
        return st;
    if (mdnl_work_cells_within(g, &o))
        return MDNL_OK;
    o.atom = atom_in(g, pos4, pos, o.densest);
    float xyz[3];
    for (int k = 0; k < 3; ++k)
        xyz[k] = pos4 ? pos4[o.atom][k] : (float)pos[o.atom][k];
    return mdnl_work_refuse_cells(g, &o, xyz);
}

mdnl_status mdnl_geom_begin(const mdnl_frame *f, double cutoff, mdnl_geom *g, mdnl_wrap_params *wp)
{
    memset(g, 0, sizeof *g);
    memset(wp, 0, sizeof *wp);
    if (!(cutoff > 0) || !isfinite(cutoff) || cutoff > 1e15)
        return mdnl_error(MDNL_ERR_USAGE, "cutoff must be a positive finite number, got %g", cutoff);
    const mdnl_box *box = &f->box;
    g->natoms = f->natoms;
    g->frame = f->index;
    g->max_pairs = f->max_pairs > 0 ? f->max_pairs : 0;
    g->limit_option = f->limit_option;
    g->cutoff = (float)cutoff;
    g->cutoff2 = (float)(cutoff * cutoff);

    /* Fractional frame: s = r · hinv, so column k of hinv is the reciprocal
     * vector b_k and w_k = 1 / |b_k|. Without a lattice, s = r. */
    double hinv[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
    double w[3] = {1, 1, 1};
    if (box->has_lattice) {
        if (!mdnl_mat3_invert(box->h, hinv))
            return mdnl_error(MDNL_ERR_INPUT, "frame %lld: the cell has zero volume (lattice vectors are linearly dependent)",
                              (long long)f->index);
        for (int k = 0; k < 3; ++k) {
            double bn = sqrt(hinv[0][k] * hinv[0][k] + hinv[1][k] * hinv[1][k] + hinv[2][k] * hinv[2][k]);
            w[k] = 1.0 / bn;
            g->width[k] = w[k];
            g->pbc[k] = box->pbc[k] ? 1 : 0;
            for (int a = 0; a < 3; ++a)
                g->h[k][a] = (float)box->h[k][a];
        }
        g->volume = mdnl_box_volume(box);
    }
    for (int a = 0; a < 3; ++a)
        for (int k = 0; k < 3; ++k)
            g->tmat[a][k] = (float)(hinv[a][k] * w[k]);
    wp->has_lattice = box->has_lattice;
    for (int r = 0; r < 3; ++r) {
        wp->pbc[r] = g->pbc[r];
        for (int k = 0; k < 3; ++k) {
            wp->hinv[r][k] = hinv[r][k];
            wp->h[r][k] = box->h[r][k];
            wp->tmat[r][k] = (double)g->tmat[r][k];
        }
    }
    return MDNL_OK;
}

mdnl_status mdnl_geom_finish(const mdnl_frame *f, double cutoff, mdnl_geom *g, const double tlo[3], const double thi[3],
                             int64_t first_bad)
{
    if (first_bad < f->natoms)
        return mdnl_error(MDNL_ERR_INPUT, "frame %lld: atom %lld has a non-finite coordinate", (long long)f->index,
                          (long long)first_bad);
    for (int k = 0; k < 3; ++k)
        g->tlo[k] = tlo[k], g->thi[k] = thi[k];
    set_grid(g, cutoff);
    /* The work guard speaks first (it names the cell and --max-pairs); the
     * image cap holds even when --max-pairs lifts the guard. */
    mdnl_status st = mdnl_work_check(g);
    if (st != MDNL_OK)
        return st;
    char prefix[48];
    snprintf(prefix, sizeof prefix, "frame %lld: ", (long long)f->index);
    const double w[3] = {g->width[0], g->width[1], g->width[2]};
    return check_images(g, w, cutoff, prefix);
}

/* Wraps every atom (mdnl_wrap_atom, geometry.h) into pos4 (or only
 * computes its t when pos4 is NULL) and gives the t-range of the finite
 * atoms and the first atom with a non-finite coordinate (natoms when none).
 * OpenMP over atoms: at 100k atoms this is most of a frame's host time. */
static void wrap_all(const mdnl_frame *f, const mdnl_wrap_params *wp, float (*pos4)[4], double tlo[3], double thi[3],
                     int64_t *bad)
{
    /* The parameters are a local copy: through f or g the compiler would
     * have to reload them after every store to pos4. */
    const mdnl_wrap_params w = *wp;
    const int64_t n = f->natoms;
    double tmin0 = INFINITY, tmin1 = INFINITY, tmin2 = INFINITY;
    double tmax0 = -INFINITY, tmax1 = -INFINITY, tmax2 = -INFINITY;
    int64_t first_bad = n;
    const double(*pos)[3] = (const double(*)[3])f->pos;
#pragma omp parallel for schedule(static) if (n > 20000) reduction(min                                                 \
                                                                   : tmin0, tmin1, tmin2, first_bad)                   \
    reduction(max                                                                                                      \
              : tmax0, tmax1, tmax2)
    for (int64_t i = 0; i < n; ++i) {
        float p[3];
        double t[3];
        if (!mdnl_wrap_atom(&w, pos[i][0], pos[i][1], pos[i][2], p, t)) {
            first_bad = i < first_bad ? i : first_bad;
            continue;
        }
        if (pos4)
            pos4[i][0] = p[0], pos4[i][1] = p[1], pos4[i][2] = p[2], pos4[i][3] = 0.0f;
        tmin0 = t[0] < tmin0 ? t[0] : tmin0, tmin1 = t[1] < tmin1 ? t[1] : tmin1, tmin2 = t[2] < tmin2 ? t[2] : tmin2;
        tmax0 = t[0] > tmax0 ? t[0] : tmax0, tmax1 = t[1] > tmax1 ? t[1] : tmax1, tmax2 = t[2] > tmax2 ? t[2] : tmax2;
    }
    tlo[0] = tmin0, tlo[1] = tmin1, tlo[2] = tmin2;
    thi[0] = tmax0, thi[1] = tmax1, thi[2] = tmax2;
    *bad = first_bad;
}

mdnl_status mdnl_geom_prepare(const mdnl_frame *f, double cutoff, mdnl_geom *g, float (*pos4)[4])
{
    mdnl_wrap_params wp;
    mdnl_status st = mdnl_geom_begin(f, cutoff, g, &wp);
    if (st != MDNL_OK)
        return st;
    double tlo[3], thi[3];
    int64_t first_bad;
    wrap_all(f, &wp, pos4, tlo, thi, &first_bad);
    st = mdnl_geom_finish(f, cutoff, g, tlo, thi, first_bad);
    /* The grid and the positions are both known: the occupancy guard, before
     * any pair work on every backend that wraps on the host. */
    return st == MDNL_OK ? mdnl_work_check_cells(g, (const float(*)[4])pos4, NULL) : st;
}

mdnl_status mdnl_geom_layout(const mdnl_frame *f, double cutoff, mdnl_geom *g, double cutoff2, mdnl_geom *g2)
{
    mdnl_wrap_params wp;
    mdnl_status st = mdnl_geom_begin(f, cutoff, g, &wp);
    if (st != MDNL_OK)
        return st;
    /* the device wrap's early grid (geometry.cu), and the pipeline's r_max grid from it */
    const double bound = mdnl_geom_tabs_bound(g, &wp);
    if (bound > 0 && mdnl_geom_finish_early(cutoff, g, bound)) {
        if (!(cutoff2 > 0))
            return MDNL_OK;
        if ((st = mdnl_geom_regrid(g, cutoff2, g2)) != MDNL_OK || mdnl_geom_early_certain(g2, cutoff2, bound))
            return st;
    }
    double tlo[3], thi[3];
    int64_t first_bad;
    wrap_all(f, &wp, NULL, tlo, thi, &first_bad);
    if ((st = mdnl_geom_finish(f, cutoff, g, tlo, thi, first_bad)) != MDNL_OK || !(cutoff2 > 0))
        return st;
    return mdnl_geom_regrid(g, cutoff2, g2);
}

mdnl_status mdnl_geom_regrid(const mdnl_geom *src, double cutoff, mdnl_geom *g)
{
    if (!(cutoff > 0) || !isfinite(cutoff) || cutoff > 1e15)
        return mdnl_error(MDNL_ERR_USAGE, "cutoff must be a positive finite number, got %g", cutoff);
    if (g != src)
        *g = *src;
    g->cutoff = (float)cutoff;
    g->cutoff2 = (float)(cutoff * cutoff);
    set_grid(g, cutoff);
    mdnl_status st = mdnl_work_check(g);
    if (st != MDNL_OK)
        return st;
    const double w[3] = {g->width[0], g->width[1], g->width[2]};
    return check_images(g, w, cutoff, "");
}

double mdnl_geom_tabs_bound(const mdnl_geom *g, const mdnl_wrap_params *w)
{
    if (g->natoms <= 0 || !w->has_lattice || !g->pbc[0] || !g->pbc[1] || !g->pbc[2])
        return 0.0;
    double pmax[3], bound = 0;
    for (int a = 0; a < 3; ++a)
        pmax[a] = fabs(w->h[0][a]) + fabs(w->h[1][a]) + fabs(w->h[2][a]);
    for (int k = 0; k < 3; ++k) {
        double t = 0;
        for (int a = 0; a < 3; ++a)
            t += pmax[a] * fabs(w->tmat[a][k]);
        bound = fmax(bound, t);
    }
    return bound * (1.0 + 1e-6);
}

/* Whether two grids agree in every field but the t-range bookkeeping. */
static bool same_grid(const mdnl_geom *a, const mdnl_geom *b)
{
    mdnl_geom x = *a, y = *b;
    memset(x.tlo, 0, sizeof x.tlo), memset(x.thi, 0, sizeof x.thi);
    memset(y.tlo, 0, sizeof y.tlo), memset(y.thi, 0, sizeof y.thi);
    return memcmp(&x, &y, sizeof x) == 0;
}

bool mdnl_geom_early_certain(const mdnl_geom *g, double cutoff, double tabs_bound)
{
    if (!(tabs_bound > 0) || !isfinite(tabs_bound))
        return false;
    /* set_grid is monotone in max |t| (rcs grows with it; every field is a
     * floor or ceil of a monotone function of rcs, or does not depend on
     * it), so equal grids at both ends mean equal grids in between. */
    mdnl_geom hi = *g;
    for (int k = 0; k < 3; ++k)
        hi.tlo[k] = 0, hi.thi[k] = 0;
    hi.thi[0] = tabs_bound;
    set_grid(&hi, cutoff);
    return same_grid(g, &hi);
}

bool mdnl_geom_finish_early(double cutoff, mdnl_geom *g, double tabs_bound)
{
    for (int k = 0; k < 3; ++k)
        g->tlo[k] = 0, g->thi[k] = 0;
    set_grid(g, cutoff);
    /* A frame beyond the work limit is not laid out early: the caller's
     * mdnl_geom_finish refuses it. */
    mdnl_work w;
    mdnl_work_estimate(g, &w);
    if (!work_within(g, &w))
        return false;
    return tabs_bound > 0 && mdnl_geom_early_certain(g, cutoff, tabs_bound);
}

mdnl_status mdnl_geom_settle(const mdnl_frame *f, double cutoff, mdnl_geom *g, const double tlo[3], const double thi[3],
                             int64_t first_bad)
{
    mdnl_geom real = *g;
    mdnl_status st = mdnl_geom_finish(f, cutoff, &real, tlo, thi, first_bad);
    if (st != MDNL_OK)
        return st;
    if (!same_grid(g, &real))
        return mdnl_error(MDNL_ERR_INTERNAL,
                          "frame %lld: the grid laid out before the t-range differs from the final one",
                          (long long)f->index);
    *g = real;
    return MDNL_OK;
}

mdnl_status mdnl_work_check_list_memory(const char *source, const mdnl_geom *g, bool full, int copies)
{
    mdnl_work w;
    mdnl_work_estimate(g, &w);
    const double pairs = full ? w.pairs : 0.5 * w.pairs;
    const double bytes = (pairs * (sizeof(int32_t) + sizeof(float)) + (double)g->natoms * sizeof(int64_t)) * copies;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double memory = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
    if (memory > 0 && bytes > memory)
        return mdnl_error(MDNL_ERR_RESOURCE,
                          "%s%sframe %lld: the neighbor list would take an estimated %.3g GB (%.3g pairs, %d held at "
                          "once), more than the %.3g GB of memory",
                          source ? source : "", source ? ": " : "", (long long)g->frame, bytes / 1e9, pairs, copies,
                          memory / 1e9);
    return MDNL_OK;
}

/* rdf.h — the pair-distance histogram and the RDF contract (SPEC §5).
 *
 * Histogram. For a prepared geometry (mdnl_geom_prepare with cutoff = r_max,
 * so that the cell grid and its image shifts cover r_max even beyond half the
 * box), every pair (i, j, S) with d2 < g->cutoff2 is binned into `bins`
 * uniform bins on [0, r_max) by mdnl_hist_bin() below — the single definition
 * of a pair's bin, evaluated with the same float operations on the host and
 * the device, so that the CPU twin (rdf_cpu.c) and every CUDA kernel
 * (rdf.cu, through rdf_cuda.h) return the same counts, exactly.
 *
 * Counting:
 *   - total (spec->npairs == 0): ORDERED pairs of the full list, i.e. (i, j, S)
 *     and its reverse (j, i, -S) both; self pairs (i, i, 0) never; self
 *     images (i, i, S != 0) yes (each ±S once, so twice per ±S pair).
 *   - partial p = (A, B): every (i, j, S) of the full list with species[i] ==
 *     A and species[j] == B. For A == B that is ordered pairs, as the total;
 *     for A != B each A–B pair once (i of A, j of B).
 * Counts are uint64, laid out counts[p * bins + b], p < mdnl_hist_nhist(spec).
 *
 * RDF. mdnl_rdf_accum sums counts over frames (integers: exact, reducible
 * across ranks) and, per frame, the frame's own normalisation:
 *   periodic frame (or --volume V):  g = counts / (N_A N_B / V · 4/3 π (r_hi³ − r_lo³))
 *   every frame:                     count_per_atom = counts / N_A,
 *                                    n(r_hi) = Σ_{bins ≤ b} counts / N_A
 * and reports their averages over frames (frames with N_A = 0 contribute 0).
 * V is the frame's cell volume, or the user's volume when given (which then
 * overrides the cell volume on periodic frames too). g is defined only when
 * every accumulated frame had a volume.
 */
#ifndef MDNL_RDF_H
#define MDNL_RDF_H

#include "geometry.h"
#include "mdnl.h"

#include <stdint.h>

MDNL_BEGIN_C

/* What to histogram. `pairs` is borrowed (npairs rows of species ids A, B
 * into the frame's species table); npairs == 0 means the total only. */
typedef struct mdnl_hist_spec {
    double r_max; /* > 0, finite; the geometry must be prepared with cutoff = r_max */
    int32_t bins; /* >= 1 */
    int32_t npairs;
    const int32_t (*pairs)[2];
} mdnl_hist_spec;

/* Number of histograms: max(1, npairs). */
static inline int32_t mdnl_hist_nhist(const mdnl_hist_spec *s) { return s->npairs > 0 ? s->npairs : 1; }

/* Checks r_max, bins, npairs and the species ids against `nspecies`
 * (MDNL_ERR_USAGE naming the bad value) and that the geometry's cutoff is
 * r_max (MDNL_ERR_INTERNAL otherwise). g may be NULL to skip that check. */
mdnl_status mdnl_hist_spec_check(const mdnl_hist_spec *s, const mdnl_geom *g, int32_t nspecies);

/* The bin width as float, the one value both backends divide by. */
static inline float mdnl_hist_width(const mdnl_hist_spec *s) { return (float)(s->r_max / (double)s->bins); }

/* The bin of a pair with squared distance d2 (< cutoff2): floor(d / w) with
 * d = sqrt(d2) and w = mdnl_hist_width(), both correctly rounded float
 * operations, clamped below `bins` (d < r_max may still round to bins). */
MDNL_HD int mdnl_hist_bin(float d2, float width, int bins)
{
#if defined(__CUDA_ARCH__)
    float q = __fdiv_rn(__fsqrt_rn(d2), width);
#else
    float q = sqrtf(d2) / width;
#endif
    int b = (int)floorf(q);
    return b < bins ? b : bins - 1;
}

/* The bins as thresholds on d2, for kernels that avoid the correctly rounded
 * sqrt and divide: mdnl_hist_bin is a non-decreasing step function of d2, so
 * t[b] (1 <= b < bins) is the smallest float d2 with mdnl_hist_bin(d2) >= b,
 * found by bisection over the float bit patterns with mdnl_hist_bin itself;
 * t[0] = 0 and t[bins] = +inf. Thresholds at or beyond d2_max (the exclusive
 * bound on the d2 of a pair, the geometry's cutoff2) are d2_max. Then, for
 * 0 <= d2 < d2_max, mdnl_hist_bin(d2) is the b with t[b] <= d2 < t[b + 1]:
 * an estimate from an approximate square root, corrected by comparing with
 * the thresholds, gives the same bin exactly. t has bins + 1 entries. */
void mdnl_hist_thresholds(float width, int bins, float d2_max, float *t);

/* CPU twin: histogram of one frame into counts[nhist * bins] (overwritten).
 * species may be NULL when npairs == 0. OpenMP over atoms through the cell
 * list of cells_cpu.h; per-thread histograms merged at the end. */
mdnl_status mdnl_hist_frame_cpu(const mdnl_geom *g, const float (*pos4)[4], const int32_t *species,
                                const mdnl_hist_spec *spec, uint64_t *counts);

/* Brute force: every j and every image shift within image_max (O(N²)),
 * single-threaded; the oracle of the twin itself. Same output contract. */
mdnl_status mdnl_hist_frame_brute(const mdnl_geom *g, const float (*pos4)[4], const int32_t *species,
                                  const mdnl_hist_spec *spec, uint64_t *counts);

/* ---- RDF accumulation and normalisation (rdf_norm.c) ---- */

typedef struct mdnl_rdf_accum {
    double r_max;
    int32_t bins, nhist;
    int64_t nframes;         /* frames added */
    int64_t nframes_volume;  /* of which had a volume (periodic, or user volume) */
    uint64_t *counts;        /* [nhist * bins] summed over frames */
    double *g_sum;           /* [nhist * bins] Σ over frames with a volume of the frame's g */
    double *cpa_sum;         /* [nhist * bins] Σ over frames of counts / N_A */
    double user_volume;      /* > 0: --volume, overrides the cell volume */
} mdnl_rdf_accum;

/* Allocates the sums for spec's shape (caller frees with mdnl_rdf_accum_free;
 * zero-initialise first). user_volume <= 0: none. */
mdnl_status mdnl_rdf_accum_init(mdnl_rdf_accum *a, const mdnl_hist_spec *spec, double user_volume);
void mdnl_rdf_accum_free(mdnl_rdf_accum *a); /* NULL is a no-op */
/* Back to no frames added (the shape and the user volume kept): a one-frame
 * accumulator gives each frame's g for rdf --per-frame. */
void mdnl_rdf_accum_reset(mdnl_rdf_accum *a);

/* Adds one frame's counts. na[p], nb[p] are the numbers of A and B atoms of
 * histogram p (for the total: natoms, natoms); volume is the cell volume
 * (0 for an open frame). */
mdnl_status mdnl_rdf_accum_add(mdnl_rdf_accum *a, const uint64_t *counts, const int64_t *na, const int64_t *nb,
                               double volume);

/* Numbers of A and B atoms per histogram for a frame's species array. */
void mdnl_hist_species_counts(const mdnl_hist_spec *spec, const int32_t *species, int64_t natoms, int64_t *na,
                              int64_t *nb);

/* Whether g is defined: at least one frame and every frame had a volume. */
static inline int mdnl_rdf_has_g(const mdnl_rdf_accum *a)
{
    return a->nframes > 0 && a->nframes_volume == a->nframes;
}

/* Frame averages, each [nhist * bins], caller-allocated: g (zeros when not
 * defined), count_per_atom, n (running sum of count_per_atom). Any may be
 * NULL. With no frames every value is 0. */
void mdnl_rdf_result(const mdnl_rdf_accum *a, double *g, double *count_per_atom, double *n);

/* Bin edges and centre of bin b (r_lo = b·r_max/bins in double). */
void mdnl_rdf_bin_edges(double r_max, int32_t bins, int32_t b, double *r_lo, double *r_hi, double *r);

MDNL_END_C

#endif

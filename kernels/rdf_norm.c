/* rdf_norm.c — from per-frame pair counts to g(r) and n(r) (SPEC §5; the
 * conventions are in rdf.h). Shared by both backends: the counts they
 * produce are identical, so is everything computed here.
 *
 * Each frame is normalised with its own volume and atom counts and the
 * per-frame g and counts-per-atom are summed; the integer counts are summed
 * too (exact, and what an MPI reduction adds up). Results are the sums
 * divided by the number of frames.
 */
#include "rdf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void mdnl_rdf_bin_edges(double r_max, int32_t bins, int32_t b, double *r_lo, double *r_hi, double *r)
{
    double lo = r_max * (double)b / (double)bins;
    double hi = r_max * (double)(b + 1) / (double)bins;
    if (r_lo)
        *r_lo = lo;
    if (r_hi)
        *r_hi = hi;
    if (r)
        *r = 0.5 * (lo + hi);
}

mdnl_status mdnl_rdf_accum_init(mdnl_rdf_accum *a, const mdnl_hist_spec *spec, double user_volume)
{
    mdnl_status st = mdnl_hist_spec_check(spec, NULL, MDNL_MAX_SPECIES);
    if (st != MDNL_OK)
        return st;
    if (!(user_volume <= 0.0) && !isfinite(user_volume))
        return mdnl_error(MDNL_ERR_USAGE, "--volume: expected a finite number > 0, found %g", user_volume);
    mdnl_rdf_accum_free(a);
    a->r_max = spec->r_max;
    a->bins = spec->bins;
    a->nhist = mdnl_hist_nhist(spec);
    a->user_volume = user_volume > 0.0 ? user_volume : 0.0;
    const size_t n = (size_t)a->nhist * (size_t)a->bins;
    a->counts = mdnl_calloc(n, sizeof *a->counts, "RDF counts");
    a->g_sum = mdnl_calloc(n, sizeof *a->g_sum, "RDF g sums");
    a->cpa_sum = mdnl_calloc(n, sizeof *a->cpa_sum, "RDF count sums");
    if (!a->counts || !a->g_sum || !a->cpa_sum) {
        mdnl_rdf_accum_free(a);
        return MDNL_ERR_RESOURCE;
    }
    return MDNL_OK;
}

void mdnl_rdf_accum_free(mdnl_rdf_accum *a)
{
    if (!a)
        return;
    free(a->counts);
    free(a->g_sum);
    free(a->cpa_sum);
    memset(a, 0, sizeof *a);
}

void mdnl_rdf_accum_reset(mdnl_rdf_accum *a)
{
    const size_t n = (size_t)a->nhist * (size_t)a->bins;
    if (a->counts) {
        memset(a->counts, 0, n * sizeof *a->counts);
        memset(a->g_sum, 0, n * sizeof *a->g_sum);
        memset(a->cpa_sum, 0, n * sizeof *a->cpa_sum);
    }
    a->nframes = a->nframes_volume = 0;
}

void mdnl_hist_species_counts(const mdnl_hist_spec *spec, const int32_t *species, int64_t natoms, int64_t *na,
                              int64_t *nb)
{
    if (spec->npairs == 0) {
        na[0] = nb[0] = natoms;
        return;
    }
    int64_t per[MDNL_MAX_SPECIES] = {0};
    for (int64_t i = 0; i < natoms; ++i)
        if (species[i] >= 0 && species[i] < MDNL_MAX_SPECIES)
            per[species[i]]++;
    for (int32_t p = 0; p < spec->npairs; ++p) {
        na[p] = per[spec->pairs[p][0]];
        nb[p] = per[spec->pairs[p][1]];
    }
}

mdnl_status mdnl_rdf_accum_add(mdnl_rdf_accum *a, const uint64_t *counts, const int64_t *na, const int64_t *nb,
                               double volume)
{
    if (!a->counts)
        return mdnl_error(MDNL_ERR_INTERNAL, "RDF accumulator used before mdnl_rdf_accum_init");
    const double v = a->user_volume > 0.0 ? a->user_volume : volume;
    const int has_v = v > 0.0 && isfinite(v);
    const double k = 4.0 / 3.0 * 3.14159265358979323846; /* 4/3 pi */
    for (int32_t p = 0; p < a->nhist; ++p) {
        const double nA = (double)na[p], nB = (double)nb[p];
        for (int32_t b = 0; b < a->bins; ++b) {
            const size_t s = (size_t)p * (size_t)a->bins + (size_t)b;
            const double c = (double)counts[s];
            a->counts[s] += counts[s];
            if (nA > 0)
                a->cpa_sum[s] += c / nA;
            if (has_v && nA > 0 && nB > 0) {
                double lo, hi;
                mdnl_rdf_bin_edges(a->r_max, a->bins, b, &lo, &hi, NULL);
                a->g_sum[s] += c / (nA * nB / v * k * (hi * hi * hi - lo * lo * lo));
            }
        }
    }
    a->nframes++;
    if (has_v)
        a->nframes_volume++;
    return MDNL_OK;
}

void mdnl_rdf_result(const mdnl_rdf_accum *a, double *g, double *count_per_atom, double *n)
{
    const double inv = a->nframes > 0 ? 1.0 / (double)a->nframes : 0.0;
    const int has_g = mdnl_rdf_has_g(a);
    for (int32_t p = 0; p < a->nhist; ++p) {
        double run = 0.0;
        for (int32_t b = 0; b < a->bins; ++b) {
            const size_t s = (size_t)p * (size_t)a->bins + (size_t)b;
            const double cpa = a->cpa_sum[s] * inv;
            /* The running sum of the frame averages is the frame average of
             * the running sums. */
            run += a->cpa_sum[s];
            if (g)
                g[s] = has_g ? a->g_sum[s] * inv : 0.0;
            if (count_per_atom)
                count_per_atom[s] = cpa;
            if (n)
                n[s] = run * inv;
        }
    }
}

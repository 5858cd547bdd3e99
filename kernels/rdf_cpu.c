/* rdf_cpu.c — the CPU twin of the pair-distance histogram (rdf.h), the
 * oracle of the CUDA kernels in rdf.cu, and an O(N²) brute force that checks
 * the twin itself.
 *
 * The twin traverses the pairs through cells_cpu.h (the same pairs the
 * neighbor list finds), home cell by home cell, each pair once (the half
 * traversal) counted for both of its directions, and bins with
 * mdnl_hist_bin(). OpenMP
 * threads own private uint64 histograms, summed at the end, so the result
 * does not depend on the schedule.
 */
#include "rdf.h"

#include "cells_cpu.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static uint32_t float_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

void mdnl_hist_thresholds(float width, int bins, float d2_max, float *t)
{
    t[0] = 0.0f;
    t[bins] = INFINITY;
    /* Non-negative floats order as their bit patterns. Search [0, d2_max):
     * hi = bits(d2_max) stands for "no d2 below d2_max reaches bin b". */
    const uint32_t top = float_bits(d2_max);
    uint32_t lo = 0;
    for (int b = 1; b < bins; ++b) {
        uint32_t hi = top;
        while (lo < hi) { /* smallest u in [lo, hi) with bin >= b, else hi */
            uint32_t mid = lo + (hi - lo) / 2;
            if (mdnl_hist_bin(bits_float(mid), width, bins) >= b)
                hi = mid;
            else
                lo = mid + 1;
        }
        t[b] = bits_float(lo); /* thresholds are non-decreasing: the next search starts here */
    }
}

mdnl_status mdnl_hist_spec_check(const mdnl_hist_spec *s, const mdnl_geom *g, int32_t nspecies)
{
    if (!(s->r_max > 0.0) || !isfinite(s->r_max))
        return mdnl_error(MDNL_ERR_USAGE, "--rmax: expected a finite number > 0, found %g", s->r_max);
    if (s->bins < 1)
        return mdnl_error(MDNL_ERR_USAGE, "--bins: expected an integer >= 1, found %d", (int)s->bins);
    if (s->npairs < 0 || (s->npairs > 0 && !s->pairs))
        return mdnl_error(MDNL_ERR_USAGE, "--pairs: expected a list of species pairs, found %d", (int)s->npairs);
    if ((int64_t)mdnl_hist_nhist(s) * s->bins > ((int64_t)1 << 31))
        return mdnl_error(MDNL_ERR_USAGE, "--bins: %d bins x %d pairs is more than 2^31 histogram slots",
                          (int)s->bins, (int)mdnl_hist_nhist(s));
    for (int32_t p = 0; p < s->npairs; ++p)
        for (int k = 0; k < 2; ++k)
            if (s->pairs[p][k] < 0 || s->pairs[p][k] >= nspecies)
                return mdnl_error(MDNL_ERR_USAGE, "--pairs: pair %d names species id %d, the frame has %d species",
                                  (int)p + 1, (int)s->pairs[p][k], (int)nspecies);
    if (g && g->cutoff != (float)s->r_max)
        return mdnl_error(MDNL_ERR_INTERNAL, "histogram: geometry prepared for cutoff %g, not r_max %g",
                          (double)g->cutoff, s->r_max);
    return MDNL_OK;
}

typedef struct hist_ctx {
    uint64_t *h; /* this thread's [nhist * bins] */
    const int32_t *species;
    const mdnl_hist_spec *spec;
    float width;
    int32_t bins;
    int32_t spi; /* species of the current atom i */
} hist_ctx;

static inline void hist_add(hist_ctx *c, int32_t j, float d2)
{
    const int b = mdnl_hist_bin(d2, c->width, c->bins);
    if (c->spec->npairs == 0) {
        c->h[b]++;
        return;
    }
    const int32_t spj = c->species[j];
    for (int32_t p = 0; p < c->spec->npairs; ++p)
        if (c->spec->pairs[p][0] == c->spi && c->spec->pairs[p][1] == spj)
            c->h[(int64_t)p * c->bins + b]++;
}

/* Bins the hits of one atom's half traversal into the total histogram h,
 * twice each (the pair and its reverse): mdnl_hist_bin of each, sixteen at a time with AVX-512 where the machine has it (the vector
 * sqrt and divide round as sqrtf and '/' do, and truncation is floor for
 * q >= 0: the same bins), else one by one. */
static void bin_hits_c(uint64_t *h, const float *d2, const int32_t *hit, int64_t m, float width, int32_t bins)
{
    for (int64_t a = 0; a < m; ++a)
        h[mdnl_hist_bin(d2[hit[a]], width, bins)] += 2;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define MDNL_BIN_X86 1
#include <immintrin.h>

__attribute__((target("avx512f"))) static void bin_hits_avx512(uint64_t *h, const float *d2, const int32_t *hit,
                                                               int64_t m, float width, int32_t bins)
{
    const __m512 w = _mm512_set1_ps(width);
    const __m512i top = _mm512_set1_epi32(bins - 1);
    int32_t b[16];
    int64_t a = 0;
    for (; a + 16 <= m; a += 16) {
        __m512 v = _mm512_i32gather_ps(_mm512_loadu_si512((const void *)(hit + a)), d2, 4);
        __m512i bi = _mm512_min_epi32(_mm512_cvttps_epi32(_mm512_div_ps(_mm512_sqrt_ps(v), w)), top);
        _mm512_storeu_si512((void *)b, bi);
        for (int l = 0; l < 16; ++l)
            h[b[l]] += 2;
    }
    bin_hits_c(h, d2, hit + a, m - a, width, bins);
}
#endif

static void bin_hits(uint64_t *h, const float *d2, const int32_t *hit, int64_t m, float width, int32_t bins)
{
#ifdef MDNL_BIN_X86
    if (__builtin_cpu_supports("avx512f")) {
        bin_hits_avx512(h, d2, hit, m, width, bins);
        return;
    }
#endif
    bin_hits_c(h, d2, hit, m, width, bins);
}

mdnl_status mdnl_hist_frame_cpu(const mdnl_geom *g, const float (*pos4)[4], const int32_t *species,
                                const mdnl_hist_spec *spec, uint64_t *counts)
{
    mdnl_status st = mdnl_hist_spec_check(spec, g, MDNL_MAX_SPECIES);
    if (st != MDNL_OK)
        return st;
    if (spec->npairs > 0 && !species && g->natoms > 0)
        return mdnl_error(MDNL_ERR_INTERNAL, "histogram: partials need the species array");
    const size_t nslots = (size_t)mdnl_hist_nhist(spec) * (size_t)spec->bins;
    memset(counts, 0, nslots * sizeof *counts);
    if (g->natoms == 0)
        return MDNL_OK;
    mdnl_cells_cpu cells = {0};
    if ((st = mdnl_cells_cpu_build(g, pos4, &cells)) != MDNL_OK)
        return st;
    const int nthreads = omp_get_max_threads();
    uint64_t *priv = mdnl_calloc((size_t)nthreads * nslots, sizeof *priv, "per-thread histograms");
    if (!priv) {
        mdnl_cells_cpu_free(&cells);
        return MDNL_ERR_RESOURCE;
    }
    const float width = mdnl_hist_width(spec);
    int failed = 0;
#pragma omp parallel num_threads(nthreads)
    {
        hist_ctx c = {priv + (size_t)omp_get_thread_num() * nslots, species, spec, width, spec->bins, 0};
        mdnl_cells_hood h = {0};
#pragma omp for schedule(dynamic, 16)
        for (int64_t cell = 0; cell < cells.ncells; ++cell) {
            if (!mdnl_cells_hood_enter(g, &cells, cell, &h, &failed))
                continue;
            const int64_t kb = cells.start[cell], ke = cells.start[cell + 1];
            for (int64_t k = kb; k < ke; ++k) {
                /* each pair once; it counts for (i, j, S) and (j, i, -S), whose d2 are equal */
                const int64_t m = mdnl_cells_hood_hits_half(g, &h, k, cells.x[k], cells.y[k], cells.z[k]);
                if (spec->npairs == 0) {
                    bin_hits(c.h, h.d2, h.hit, m, width, c.bins);
                } else {
                    const int32_t i = cells.atoms[k];
                    for (int64_t a = 0; a < m; ++a) {
                        const int32_t j = h.j[h.hit[a]];
                        const float d2 = h.d2[h.hit[a]];
                        c.spi = species[i];
                        hist_add(&c, j, d2);
                        c.spi = species[j];
                        hist_add(&c, i, d2);
                    }
                }
            }
        }
        mdnl_cells_hood_free(&h);
    }
    for (int t = 0; t < nthreads; ++t)
        for (size_t s = 0; s < nslots; ++s)
            counts[s] += priv[(size_t)t * nslots + s];
    free(priv);
    mdnl_cells_cpu_free(&cells);
    return failed ? MDNL_ERR_RESOURCE : MDNL_OK;
}

mdnl_status mdnl_hist_frame_brute(const mdnl_geom *g, const float (*pos4)[4], const int32_t *species,
                                  const mdnl_hist_spec *spec, uint64_t *counts)
{
    mdnl_status st = mdnl_hist_spec_check(spec, g, MDNL_MAX_SPECIES);
    if (st != MDNL_OK)
        return st;
    const size_t nslots = (size_t)mdnl_hist_nhist(spec) * (size_t)spec->bins;
    memset(counts, 0, nslots * sizeof *counts);
    hist_ctx c = {counts, species, spec, mdnl_hist_width(spec), spec->bins, 0};
    const int *im = g->image_max;
    for (int64_t i = 0; i < g->natoms; ++i) {
        c.spi = species ? species[i] : 0;
        for (int s0 = -im[0]; s0 <= im[0]; ++s0)
            for (int s1 = -im[1]; s1 <= im[1]; ++s1)
                for (int s2 = -im[2]; s2 <= im[2]; ++s2) {
                    float v[3];
                    mdnl_shift_vector(g, s0, s1, s2, v);
                    const int zero = s0 == 0 && s1 == 0 && s2 == 0;
                    for (int64_t j = 0; j < g->natoms; ++j) {
                        if (zero && j == i)
                            continue;
                        float d2 = mdnl_pair_d2(pos4[i][0], pos4[i][1], pos4[i][2], pos4[j][0], pos4[j][1],
                                                pos4[j][2], v);
                        if (d2 < g->cutoff2)
                            hist_add(&c, (int32_t)j, d2);
                    }
                }
    }
    return MDNL_OK;
}

/* test_rdf.c — the CPU histogram twin (rdf_cpu.c), the RDF normalisation
 * (rdf_norm.c), the table writer (io/rdf_table.c) and the SVG plot
 * (io/svg_plot.c). Oracles: analytic graphene shells; the O(N²) brute force
 * and an independent double-precision image sum written here; MDAnalysis
 * InterRDF reference tables in data/rdf/ (tools/mdanalysis_rdf_reference.py,
 * which documents how its normalisation differs from ours by N(N-1)/N²). */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include "rdf.h"
#include "rdf_table.h"
#include "svg_plot.h"

#include "rdf_test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t *hist_cpu(const mdnl_frame *f, const mdnl_hist_spec *spec, int brute)
{
    mdnl_geom g;
    float(*pos4)[4];
    rdf_prepare(f, spec->r_max, &g, &pos4);
    uint64_t *c = calloc((size_t)mdnl_hist_nhist(spec) * spec->bins, sizeof *c);
    mdnl_status st = brute ? mdnl_hist_frame_brute(&g, (const float(*)[4])pos4, f->species, spec, c)
                           : mdnl_hist_frame_cpu(&g, (const float(*)[4])pos4, f->species, spec, c);
    cr_assert_eq(st, MDNL_OK, "%s", mdnl_last_error());
    free(pos4);
    return c;
}

Test(rdf_cpu, graphene_counts_only_in_shell_bins_with_multiplicities_3_6_3)
{
    mdnl_frame f;
    rdf_graphene(&f, 6, 4, 1.42);
    const int64_t n = f.natoms;
    /* Bin width 0.05: shells at 1.42 (bin 28.4), 2.4595 (49.19), 2.84 (56.8),
     * all well inside their bins. */
    mdnl_hist_spec spec = {3.0, 60, 0, NULL};
    uint64_t *c = hist_cpu(&f, &spec, 0);
    for (int b = 0; b < 60; ++b) {
        uint64_t want = b == 28 ? 3 * n : b == 49 ? 6 * n : b == 56 ? 3 * n : 0;
        cr_expect_eq(c[b], want, "bin %d: %llu, expected %llu", b, (unsigned long long)c[b], (unsigned long long)want);
    }
    mdnl_rdf_accum acc = {0};
    cr_assert_eq(mdnl_rdf_accum_init(&acc, &spec, 0.0), MDNL_OK);
    int64_t na = n, nb = n;
    cr_assert_eq(mdnl_rdf_accum_add(&acc, c, &na, &nb, mdnl_box_volume(&f.box)), MDNL_OK);
    cr_assert_eq(mdnl_rdf_accum_add(&acc, c, &na, &nb, mdnl_box_volume(&f.box)), MDNL_OK); /* 2 frames: same averages */
    double g[60], cpa[60], nr[60];
    mdnl_rdf_result(&acc, g, cpa, nr);
    cr_expect_eq(nr[27], 0.0);
    cr_expect_float_eq(nr[28], 3.0, 1e-12);
    cr_expect_float_eq(nr[48], 3.0, 1e-12);
    cr_expect_float_eq(nr[49], 9.0, 1e-12);
    cr_expect_float_eq(nr[56], 12.0, 1e-12);
    cr_expect_float_eq(nr[59], 12.0, 1e-12);
    cr_expect_float_eq(cpa[49], 6.0, 1e-12);
    const double V = mdnl_box_volume(&f.box);
    const double shell = 4.0 / 3.0 * 3.14159265358979323846 * (pow(1.45, 3) - pow(1.40, 3));
    cr_expect_float_eq(g[28], 3.0 * n / ((double)n * n / V * shell), 1e-9 * g[28]);
    cr_expect_eq(g[30], 0.0);
    mdnl_rdf_accum_free(&acc);
    free(c);
    mdnl_frame_free(&f);
}

Test(rdf_cpu, twin_equals_brute_force_in_every_kind_of_box)
{
    const int32_t pairs[4][2] = {{0, 0}, {0, 1}, {1, 0}, {1, 1}};
    for (int kind = 0; kind < 4; ++kind)
        for (int big = 0; big < 2; ++big) {
            mdnl_frame f;
            rdf_random(&f, 300, kind, 6.0, 0);
            /* big: r_max beyond half the box (several images per pair). */
            double r_max = big ? 7.5 : 2.5;
            mdnl_hist_spec tot = {r_max, 97, 0, NULL};
            mdnl_hist_spec par = {r_max, 97, 4, pairs};
            uint64_t *a = hist_cpu(&f, &tot, 0), *b = hist_cpu(&f, &tot, 1);
            uint64_t *pa = hist_cpu(&f, &par, 0), *pb = hist_cpu(&f, &par, 1);
            uint64_t sum = 0;
            for (int k = 0; k < 97; ++k) {
                cr_expect_eq(a[k], b[k], "kind %d r_max %g bin %d: twin %llu brute %llu", kind, r_max, k,
                             (unsigned long long)a[k], (unsigned long long)b[k]);
                /* The four ordered partials partition the total. */
                cr_expect_eq(pa[k] + pa[97 + k] + pa[194 + k] + pa[291 + k], a[k], "kind %d bin %d", kind, k);
                /* A-B once each equals B-A once each. */
                cr_expect_eq(pa[97 + k], pa[194 + k]);
                sum += a[k];
            }
            for (int k = 0; k < 4 * 97; ++k)
                cr_expect_eq(pa[k], pb[k], "kind %d partial slot %d", kind, k);
            cr_expect(sum > 1000, "kind %d: only %llu pairs", kind, (unsigned long long)sum); /* not vacuous */
            free(a), free(b), free(pa), free(pb);
            mdnl_frame_free(&f);
        }
}

/* The pairs ASE's neighbor_list counts, binned in double: r_max beyond half
 * the box, images up to the needed range. On a dyadic grid with a dyadic bin
 * width, float and double bin every pair alike (see the fixture script). */
Test(rdf_cpu, rmax_beyond_half_box_equals_double_image_sum)
{
    mdnl_frame f;
    rdf_random(&f, 40, 0, 2.0, 1); /* box 2 x 2.25 x 1.75 */
    const double r_max = 3.0;
    const int bins = 96; /* width 1/32 */
    mdnl_hist_spec spec = {r_max, bins, 0, NULL};
    uint64_t *c = hist_cpu(&f, &spec, 0);
    uint64_t want[96] = {0}, total = 0;
    const int M = 3;
    for (int64_t i = 0; i < f.natoms; ++i)
        for (int64_t j = 0; j < f.natoms; ++j)
            for (int s0 = -M; s0 <= M; ++s0)
                for (int s1 = -M; s1 <= M; ++s1)
                    for (int s2 = -M; s2 <= M; ++s2) {
                        if (i == j && !s0 && !s1 && !s2)
                            continue;
                        double d[3];
                        for (int a = 0; a < 3; ++a)
                            d[a] = f.pos[j][a] - f.pos[i][a] + s0 * f.box.h[0][a] + s1 * f.box.h[1][a] +
                                   s2 * f.box.h[2][a];
                        double r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
                        if (r < r_max)
                            want[(int)floor(r / (r_max / bins))]++, total++;
                    }
    for (int b = 0; b < bins; ++b)
        cr_expect_eq(c[b], want[b], "bin %d: %llu, image sum %llu", b, (unsigned long long)c[b],
                     (unsigned long long)want[b]);
    /* Self images exist here (box edges < r_max): bin of 1.75 (the z edge). */
    cr_expect(want[56] >= 2 * (uint64_t)f.natoms, "self images at 1.75 missing from the oracle");
    cr_expect(total > 40 * 40 * 10);
    free(c);
    mdnl_frame_free(&f);
}

static void fixture_vs_mdanalysis(const char *name, int npairs, const int32_t (*pairs)[2], const char *const *labels,
                                  double r_max, int bins)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/rdf/%s.xyz", rdf_data_dir(), name);
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "cannot open %s", path);
    mdnl_frame f = {0};
    mdnl_hist_spec spec = {r_max, bins, npairs, pairs};
    const int nh = mdnl_hist_nhist(&spec);
    mdnl_rdf_accum acc = {0};
    cr_assert_eq(mdnl_rdf_accum_init(&acc, &spec, 0.0), MDNL_OK);
    uint64_t *c = calloc((size_t)nh * bins, sizeof *c);
    int frames = 0;
    while (rdf_read_xyz(fp, &f)) {
        mdnl_geom g;
        float(*pos4)[4];
        rdf_prepare(&f, r_max, &g, &pos4);
        cr_assert_eq(mdnl_hist_frame_cpu(&g, (const float(*)[4])pos4, f.species, &spec, c), MDNL_OK);
        int64_t na[8], nb[8];
        mdnl_hist_species_counts(&spec, f.species, f.natoms, na, nb);
        cr_assert_eq(mdnl_rdf_accum_add(&acc, c, na, nb, mdnl_box_volume(&f.box)), MDNL_OK);
        free(pos4);
        ++frames;
    }
    fclose(fp);
    cr_assert_eq(frames, 10);
    double *g = calloc((size_t)nh * bins, sizeof *g), *n = calloc((size_t)nh * bins, sizeof *n);
    mdnl_rdf_result(&acc, g, NULL, n);
    for (int p = 0; p < nh; ++p) {
        snprintf(path, sizeof path, "%s/rdf/%s_%s.tsv", rdf_data_dir(), name, labels[p]);
        double rg[512], rn[512];
        uint64_t rc[512];
        int64_t na = 0, nb = 0;
        cr_assert_eq(rdf_read_ref(path, rg, rc, rn, 512, &na, &nb), bins);
        double gmax = 0, maxdiff = 0;
        for (int b = 0; b < bins; ++b) {
            const size_t s = (size_t)p * bins + b;
            /* Same pairs in the same bins: the integer counts agree exactly. */
            cr_expect_eq(acc.counts[s], rc[b], "%s %s bin %d: count %llu, MDAnalysis %llu", name, labels[p], b,
                         (unsigned long long)acc.counts[s], (unsigned long long)rc[b]);
            cr_expect(fabs(g[s] - rg[b]) <= 1e-3, "%s %s bin %d: g %.6f, MDAnalysis (renormalised) %.6f", name,
                      labels[p], b, g[s], rg[b]);
            cr_expect(fabs(n[s] - rn[b]) <= 1e-3, "%s %s bin %d: n %.6f, MDAnalysis %.6f", name, labels[p], b, n[s],
                      rn[b]);
            gmax = fmax(gmax, g[s]);
            maxdiff = fmax(maxdiff, fabs(g[s] - rg[b]));
        }
        cr_expect(gmax > 1.5, "%s %s: no first peak (max g %.3f)", name, labels[p], gmax);
        cr_log_info("%s %s: max |g - g_MDAnalysis| = %.3g", name, labels[p], maxdiff);
    }
    free(g), free(n), free(c);
    mdnl_rdf_accum_free(&acc);
    mdnl_frame_free(&f);
}

Test(rdf_cpu, lj_liquid_matches_mdanalysis_interrdf)
{
    const char *labels[] = {"total"};
    fixture_vs_mdanalysis("lj_liquid", 0, NULL, labels, 3.0, 96);
}

Test(rdf_cpu, binary_mixture_partials_match_mdanalysis_interrdf)
{
    const char *labels[] = {"total"};
    fixture_vs_mdanalysis("lj_mixture", 0, NULL, labels, 2.5, 80);
    /* Species ids in order of first appearance in the fixture: "A" then "B"
     * (the first atom of lj_mixture.xyz is an A; checked by the counts). */
    const int32_t pairs[3][2] = {{0, 0}, {0, 1}, {1, 1}};
    const char *plabels[] = {"A-A", "A-B", "B-B"};
    fixture_vs_mdanalysis("lj_mixture", 3, pairs, plabels, 2.5, 80);
}

Test(rdf_norm, open_frames_give_counts_and_g_only_with_a_user_volume)
{
    mdnl_frame f;
    rdf_random(&f, 200, 2, 5.0, 0);
    mdnl_hist_spec spec = {2.0, 20, 0, NULL};
    uint64_t *c = hist_cpu(&f, &spec, 0);
    int64_t na = f.natoms, nb = f.natoms;
    mdnl_rdf_accum acc = {0};
    cr_assert_eq(mdnl_rdf_accum_init(&acc, &spec, 0.0), MDNL_OK);
    cr_assert_eq(mdnl_rdf_accum_add(&acc, c, &na, &nb, 0.0), MDNL_OK);
    cr_expect(!mdnl_rdf_has_g(&acc));
    double cpa[20], n[20];
    mdnl_rdf_result(&acc, NULL, cpa, n);
    double run = 0;
    for (int b = 0; b < 20; ++b) {
        cr_expect_float_eq(cpa[b], (double)c[b] / 200.0, 1e-12);
        run += (double)c[b] / 200.0;
        cr_expect_float_eq(n[b], run, 1e-9);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    cr_assert_eq(mdnl_rdf_table_write(fp, &acc, NULL), MDNL_OK);
    fclose(fp);
    cr_expect(strncmp(buf, "# r_lo\tr_hi\tr\tcount\tcount_per_atom\tn\n", 37) == 0, "header: %.60s", buf);
    unsigned long long c5;
    double lo, hi, r;
    const char *row = buf;
    for (int k = 0; k < 6; ++k)
        row = strchr(row, '\n') + 1;
    cr_assert_eq(sscanf(row, "%lf %lf %lf %llu", &lo, &hi, &r, &c5), 4);
    cr_expect_float_eq(lo, 0.5, 1e-12);
    cr_expect_float_eq(r, 0.55, 1e-12);
    cr_expect_eq(c5, c[5]);
    free(buf);
    mdnl_rdf_accum_free(&acc);
    /* --volume: g appears, with that volume. */
    cr_assert_eq(mdnl_rdf_accum_init(&acc, &spec, 125.0), MDNL_OK);
    cr_assert_eq(mdnl_rdf_accum_add(&acc, c, &na, &nb, 0.0), MDNL_OK);
    cr_expect(mdnl_rdf_has_g(&acc));
    double g[20];
    mdnl_rdf_result(&acc, g, NULL, NULL);
    const double shell = 4.0 / 3.0 * 3.14159265358979323846 * (pow(1.1, 3) - pow(1.0, 3));
    cr_expect_float_eq(g[10], (double)c[10] / (200.0 * 200.0 / 125.0 * shell), 1e-9);
    mdnl_rdf_accum_free(&acc);
    free(c);
    mdnl_frame_free(&f);
}

Test(rdf_norm, periodic_frames_are_normalised_each_with_its_own_volume)
{
    /* Two frames with the same counts and volumes V and 2V: g averages
     * (g1 + 2 g1) / 2 = 1.5 g1, which a pooled-volume normalisation would not give. */
    mdnl_hist_spec spec = {1.0, 2, 0, NULL};
    uint64_t c[2] = {10, 30};
    int64_t na = 4, nb = 4;
    mdnl_rdf_accum acc = {0};
    cr_assert_eq(mdnl_rdf_accum_init(&acc, &spec, 0.0), MDNL_OK);
    cr_assert_eq(mdnl_rdf_accum_add(&acc, c, &na, &nb, 10.0), MDNL_OK);
    cr_assert_eq(mdnl_rdf_accum_add(&acc, c, &na, &nb, 20.0), MDNL_OK);
    double g[2], n[2];
    mdnl_rdf_result(&acc, g, NULL, n);
    const double k = 4.0 / 3.0 * 3.14159265358979323846;
    const double g1 = 30.0 / (16.0 / 10.0 * k * (1.0 - 0.125));
    cr_expect_float_eq(g[1], 1.5 * g1, 1e-12);
    cr_expect_float_eq(n[1], 10.0, 1e-12);
    cr_expect_eq(acc.counts[1], 60u);
    mdnl_rdf_accum_free(&acc);
}

Test(rdf_table, partial_header_and_columns)
{
    mdnl_hist_spec spec = {2.0, 4, 2, (const int32_t[][2]){{0, 0}, {0, 1}}};
    uint64_t c[8] = {0, 2, 4, 6, 1, 1, 1, 1};
    int64_t na[2] = {2, 2}, nb[2] = {2, 3};
    mdnl_rdf_accum acc = {0};
    cr_assert_eq(mdnl_rdf_accum_init(&acc, &spec, 0.0), MDNL_OK);
    cr_assert_eq(mdnl_rdf_accum_add(&acc, c, na, nb, 100.0), MDNL_OK);
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    const char *names[] = {"C-C", "C-H"};
    cr_assert_eq(mdnl_rdf_table_write(fp, &acc, names), MDNL_OK);
    fclose(fp);
    cr_expect(strncmp(buf, "# r_lo\tr_hi\tr\tg:C-C\tn:C-C\tg:C-H\tn:C-H\n", 38) == 0, "header: %.60s", buf);
    /* Last row: n:C-C = (0+2+4+6)/2 = 6, n:C-H = 4/2 = 2. */
    const char *last = buf + len - 2;
    while (last > buf && last[-1] != '\n')
        --last;
    double v[7];
    cr_assert_eq(sscanf(last, "%lf %lf %lf %lf %lf %lf %lf", v, v + 1, v + 2, v + 3, v + 4, v + 5, v + 6), 7);
    cr_expect_float_eq(v[0], 1.5, 1e-12);
    cr_expect_float_eq(v[4], 6.0, 1e-12);
    cr_expect_float_eq(v[6], 2.0, 1e-12);
    free(buf);
    mdnl_rdf_accum_free(&acc);
}

Test(svg_plot, lj_liquid_plot_is_well_formed_svg)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/rdf/lj_liquid.xyz", rdf_data_dir());
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp);
    mdnl_frame f = {0};
    const int32_t pairs[1][2] = {{0, 0}};
    mdnl_hist_spec spec = {3.0, 96, 1, pairs};
    mdnl_rdf_accum acc = {0};
    cr_assert_eq(mdnl_rdf_accum_init(&acc, &spec, 0.0), MDNL_OK);
    uint64_t c[96];
    while (rdf_read_xyz(fp, &f)) {
        mdnl_geom g;
        float(*pos4)[4];
        rdf_prepare(&f, 3.0, &g, &pos4);
        cr_assert_eq(mdnl_hist_frame_cpu(&g, (const float(*)[4])pos4, f.species, &spec, c), MDNL_OK);
        int64_t na = f.natoms, nb = f.natoms;
        cr_assert_eq(mdnl_rdf_accum_add(&acc, c, &na, &nb, mdnl_box_volume(&f.box)), MDNL_OK);
        free(pos4);
    }
    fclose(fp);
    const char *out = getenv("MDNL_SVG_OUT"); /* set it to keep the file and look at it */
    char *buf = NULL;
    size_t len = 0;
    FILE *sp = out ? fopen(out, "w") : open_memstream(&buf, &len);
    cr_assert_not_null(sp);
    const char *names[] = {"Ar-Ar"};
    cr_assert_eq(mdnl_svg_rdf(sp, &acc, names, "LJ liquid, 256 atoms, 10 frames", "r (input length unit)"), MDNL_OK);
    fclose(sp);
    if (!out) {
        cr_expect(strstr(buf, "<svg") && strstr(buf, "</svg>\n"), "not an SVG document");
        cr_expect(strstr(buf, "<polyline"), "no curve");
        cr_expect(strstr(buf, ">Ar-Ar</text>"), "no legend entry");
        cr_expect(strstr(buf, ">g(r)</text>"), "no y label");
        cr_expect(!strstr(buf, "nan") && !strstr(buf, "inf"), "non-finite coordinates");
        free(buf);
    }
    mdnl_rdf_accum_free(&acc);
    mdnl_frame_free(&f);
}

/* The CUDA kernels bin by thresholds on d2 (mdnl_hist_thresholds) after an
 * approximate square root: the bin must be mdnl_hist_bin's for every d2,
 * including the floats right at and below each threshold and estimates off
 * by a few ulps either way. */
static int threshold_bin(float d2, const float *t, int bins, float inv_w, float fuzz)
{
    float d = d2 > 0 ? sqrtf(d2) * fuzz : 0.0f;
    int b = (int)(d * inv_w);
    b = b < bins - 1 ? b : bins - 1;
    b = b > 0 ? b : 0;
    while (d2 >= t[b + 1])
        ++b;
    while (d2 < t[b])
        --b;
    return b;
}

Test(rdf_bins, thresholds_give_exactly_the_bins_of_mdnl_hist_bin)
{
    const struct { double rmax; int bins; } cases[] = {{4.0, 200}, {10.0, 500}, {2.5, 7}, {3.0, 1}, {6.0, 4096},
                                                        {1e-3, 33}, {1000.0, 100000}};
    const float fuzz[] = {1.0f, 1.0f + 3e-7f, 1.0f - 3e-7f, 1.0f + 1e-5f};
    srand(11);
    for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) {
        mdnl_hist_spec spec = {.r_max = cases[c].rmax, .bins = cases[c].bins};
        const int bins = spec.bins;
        const float w = mdnl_hist_width(&spec), cut2 = (float)(spec.r_max * spec.r_max);
        float *t = malloc((size_t)(bins + 1) * sizeof *t);
        mdnl_hist_thresholds(w, bins, cut2, t);
        for (int b = 0; b < bins; ++b)
            cr_assert_leq(t[b], t[b + 1], "thresholds must not decrease (bin %d)", b);
        int bad = 0;
        for (int k = 0; k < 200000 && bad < 5; ++k) {
            float d2;
            if (k % 2 == 0) {
                d2 = cut2 * (float)rand() / (float)RAND_MAX;
            } else { /* at a threshold, or the float just below it */
                int b = 1 + rand() % (bins > 1 ? bins - 1 : 1);
                d2 = bins > 1 ? t[b] : 0.0f;
                if (k % 4 == 1)
                    d2 = nextafterf(d2, 0.0f);
            }
            if (!(d2 < cut2))
                continue;
            int want = mdnl_hist_bin(d2, w, bins);
            for (size_t f = 0; f < sizeof fuzz / sizeof *fuzz; ++f) {
                int got = threshold_bin(d2, t, bins, 1.0f / w, fuzz[f]);
                if (got != want && bad++ < 5)
                    cr_expect_eq(got, want, "rmax %g bins %d d2 %.9g: bin %d, mdnl_hist_bin %d", spec.r_max, bins,
                                 (double)d2, got, want);
            }
        }
        free(t);
    }
}

/* rdf --per-frame --plot: the heat map's rows stay bounded for any number of
 * frames (pairs of rows merge when full), each row the mean of its frames. */
Test(svg_plot, per_frame_heat_rows_stay_bounded_and_average_their_frames)
{
    mdnl_rdf_heat h;
    cr_assert_eq(mdnl_rdf_heat_init(&h, 2, 3), MDNL_OK);
    const int64_t nf = 1000;
    for (int64_t k = 0; k < nf; ++k) {
        const double g[6] = {(double)k, 1.0, 2.0, -(double)k, 0.5, NAN};
        mdnl_rdf_heat_add(&h, 10 + k, g);
    }
    cr_expect_eq(h.nframes, nf);
    cr_expect_eq(h.first_frame, 10);
    cr_expect_eq(h.last_frame, 10 + nf - 1);
    cr_expect(h.nrows <= MDNL_RDF_HEAT_ROWS && h.nrows >= MDNL_RDF_HEAT_ROWS / 2, "%lld rows", (long long)h.nrows);
    cr_expect_eq(h.stride, 8); /* 1000 frames in 64..127 rows */
    cr_expect_eq(h.nrows * h.stride + h.pend, nf);
    for (int64_t r = 0; r < h.nrows; ++r) {
        const double *row = h.rows + (size_t)r * 6;
        const double first = (double)(r * h.stride);
        const double mean = first + 0.5 * (double)(h.stride - 1);
        cr_expect_eq(h.row_first[r], 10 + r * h.stride);
        cr_expect(fabs(row[0] - mean) < 1e-9, "row %lld: %g, want %g", (long long)r, row[0], mean);
        cr_expect(fabs(row[3] + mean) < 1e-9);
        cr_expect_eq(row[1], 1.0);
        cr_expect(isnan(row[5]), "a frame without g stays NaN");
    }
    /* the plot draws the rows and the partial one */
    char *buf = NULL;
    size_t len = 0;
    FILE *sp = open_memstream(&buf, &len);
    mdnl_hist_spec spec = {.r_max = 3.0, .bins = 3, .npairs = 0};
    mdnl_rdf_accum acc = {0};
    cr_assert_eq(mdnl_rdf_accum_init(&acc, &spec, 0), MDNL_OK);
    h.nhist = 1; /* the first histogram alone */
    cr_assert_eq(mdnl_svg_rdf_frames(sp, &acc, &h, NULL, "heat", "r"), MDNL_OK);
    fclose(sp);
    cr_expect(strstr(buf, "g(r) per frame, total (1000 frames, rows average runs of frames)") != NULL);
    cr_expect(strstr(buf, "</svg>\n") != NULL);
    free(buf);
    mdnl_rdf_accum_free(&acc);
    mdnl_rdf_heat_free(&h);
}

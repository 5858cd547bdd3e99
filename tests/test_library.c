/* test_library.c — libmdnl's public API (include/mdnl/mdnl.h), each case
 * parameterized over the CPU and CUDA contexts (CUDA skips without a device).
 *
 * Oracles: the command line's `mdnl neighbors` table on the fixtures of
 * data/, byte for byte; a brute-force image sum in double for S and D on a
 * small cell (cutoff beyond half the box) and a partly periodic triclinic
 * one; the analytic graphene shells; a pair sum over the list for the
 * energy; the pair count for the RDF. The ASE comparison is in
 * python/tests/test_mdnl.py, which loads the shared library itself. */
#define _POSIX_C_SOURCE 200809L
#include "mdnl/mdnl.h"

#include "cli.h"
#include "cli_test_util.h"
#include "nlist.h"
#include "reader.h"

#include <criterion/parameterized.h>
#include <math.h>
#include <pthread.h>

#ifdef MDNL_HAVE_CUDA
#include <cuda_runtime.h>
#endif

TestSuite(library, .init = make_tmpdir, .fini = remove_tmpdir);

static mdnl_compute backends[] = {MDNL_COMPUTE_CPU, MDNL_COMPUTE_CUDA};

static mdnl_context *context_for(mdnl_compute b, double max_pairs)
{
    if (b == MDNL_COMPUTE_CUDA && mdnl_cuda_devices() < 1)
        cr_skip_test("no CUDA device");
    mdnl_context_options o = {b, 0, max_pairs, 0};
    mdnl_context *ctx = NULL;
    cr_assert_eq(mdnl_context_create(&o, &ctx), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_context_backend(ctx), b);
    return ctx;
}

static char *slurp_alloc(const char *path)
{
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "%s", path);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, fp), (size_t)n);
    buf[n] = '\0';
    fclose(fp);
    return buf;
}

/* The library's table of every frame of `fixture`, written as `mdnl
 * neighbors` writes it (mdnl_neighbors_tsv_rows), into tmpdir/lib.tsv. */
static void library_table(mdnl_context *ctx, const char *fixture, double cutoff, int flags)
{
    char path[512], out[512];
    snprintf(path, sizeof path, "%s/%s", MDNL_DATA_DIR, fixture);
    snprintf(out, sizeof out, "%s/lib.tsv", tmpdir);
    mdnl_reader *r = NULL;
    cr_assert_eq(mdnl_reader_open(path, NULL, &r), MDNL_OK, "%s", mdnl_last_error());
    FILE *fp = fopen(out, "wb");
    fputs("# frame\ti\tj\tdistance\n", fp);
    mdnl_frame f = {0};
    while (mdnl_reader_next(r, &f) == MDNL_OK) {
        const double *cell = f.box.has_lattice ? &f.box.h[0][0] : NULL;
        mdnl_system sys = {f.natoms, f.pos, MDNL_FLOAT64, cell, {f.box.pbc[0], f.box.pbc[1], f.box.pbc[2]}};
        mdnl_neighbor_list nl;
        cr_assert_eq(mdnl_neighbors(ctx, &sys, cutoff, flags, &nl), MDNL_OK, "%s", mdnl_last_error());
        mdnl_nlist view = {nl.n, nl.npairs, (int64_t *)nl.offsets, (int32_t *)nl.indices, (float *)nl.distances, 0, 0};
        cr_assert_eq(mdnl_neighbors_tsv_rows(fp, f.index, &view, 1), MDNL_OK);
    }
    fclose(fp);
    mdnl_frame_free(&f);
    mdnl_reader_close(r);
}

ParameterizedTestParameters(library, neighbors_byte_identical_to_cli)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, neighbors_byte_identical_to_cli)
{
    mdnl_context *ctx = context_for(*b, 0);
    static const struct {
        const char *file;
        double cutoff;
    } cases[] = {{"graphene-periodic.extxyz", 2.9}, {"graphene-open.xyz", 1.6}, {"triclinic.extxyz", 4.0},
                 {"trajectory-3frames.extxyz", 3.0}, {"graphene-noisy.extxyz", 2.5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
        for (int full = 0; full < 2; ++full) {
            library_table(ctx, cases[c].file, cases[c].cutoff, full ? MDNL_NEIGHBORS_FULL : MDNL_NEIGHBORS_HALF);
            cr_assert_eq(mdnl("neighbors %s/%s -c %g --backend cpu -q -o cli.tsv%s", MDNL_DATA_DIR, cases[c].file,
                              cases[c].cutoff, full ? " --list full" : ""),
                         0, "%s", err_text);
            char a[512], bpath[512];
            snprintf(a, sizeof a, "%s/lib.tsv", tmpdir);
            snprintf(bpath, sizeof bpath, "%s/cli.tsv", tmpdir);
            char *lib = slurp_alloc(a), *cli = slurp_alloc(bpath);
            cr_assert(strlen(cli) > 30, "%s: the CLI table is empty", cases[c].file);
            cr_assert_str_eq(lib, cli, "%s (%s list): the library's table differs from the CLI's", cases[c].file,
                             full ? "full" : "half");
            free(lib), free(cli);
        }
    mdnl_context_free(ctx);
}

/* Every (i, j, S) with |r_j - r_i + S h| < rc in double, for the brute-force
 * check: counts[i * n + j] over S in [-m, m]^3 on periodic axes. */
static int64_t brute_pairs(int n, const double (*r)[3], const double h[3][3], const int pbc[3], double rc, int full)
{
    int64_t count = 0;
    const int m = 4;
    for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
            for (int s0 = -m * pbc[0]; s0 <= m * pbc[0]; ++s0)
                for (int s1 = -m * pbc[1]; s1 <= m * pbc[1]; ++s1)
                    for (int s2 = -m * pbc[2]; s2 <= m * pbc[2]; ++s2) {
                        if (i == j && !s0 && !s1 && !s2)
                            continue;
                        if (!full && !(i < j || (i == j && (s0 > 0 || (!s0 && (s1 > 0 || (!s1 && s2 > 0)))))))
                            continue;
                        double d2 = 0;
                        for (int a = 0; a < 3; ++a) {
                            double D = r[j][a] - r[i][a] + s0 * h[0][a] + s1 * h[1][a] + s2 * h[2][a];
                            d2 += D * D;
                        }
                        count += d2 < rc * rc;
                    }
    return count;
}

ParameterizedTestParameters(library, shifts_and_vectors_match_a_brute_force_image_sum)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, shifts_and_vectors_match_a_brute_force_image_sum)
{
    mdnl_context *ctx = context_for(*b, 0);
    /* positions partly outside the cell: S is relative to them as given */
    double r[7][3];
    uint64_t s = 58;
    for (int i = 0; i < 7; ++i)
        for (int a = 0; a < 3; ++a) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            r[i][a] = -2.0 + 7.0 * (double)(s >> 11) / 9007199254740992.0;
        }
    const double small[3][3] = {{2.0, 0, 0}, {0, 2.2, 0}, {0, 0, 2.4}};
    const double tri[3][3] = {{3.0, 0, 0}, {0.8, 2.9, 0}, {0.4, 0.6, 3.2}};
    const struct {
        const double (*h)[3];
        int pbc[3];
        double rc;
    } cases[] = {{small, {1, 1, 1}, 3.3}, {small, {0, 1, 1}, 2.9}, {tri, {1, 0, 1}, 2.1}, {tri, {1, 1, 1}, 1.7}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; ++c)
        for (int full = 0; full < 2; ++full) {
            mdnl_system sys = {7, r, MDNL_FLOAT64, &cases[c].h[0][0], {cases[c].pbc[0], cases[c].pbc[1], cases[c].pbc[2]}};
            mdnl_neighbor_list nl;
            const int flags = (full ? MDNL_NEIGHBORS_FULL : 0) | MDNL_NEIGHBORS_SHIFTS | MDNL_NEIGHBORS_VECTORS;
            cr_assert_eq(mdnl_neighbors(ctx, &sys, cases[c].rc, flags, &nl), MDNL_OK, "%s", mdnl_last_error());
            cr_assert_eq(nl.npairs, brute_pairs(7, r, cases[c].h, cases[c].pbc, cases[c].rc, full),
                         "case %zu (%s): pair count", c, full ? "full" : "half");
            for (int64_t i = 0; i < nl.n; ++i)
                for (int64_t k = nl.offsets[i]; k < nl.offsets[i + 1]; ++k) {
                    const int j = nl.indices[k];
                    const int32_t *S = nl.shifts + 3 * k;
                    double d2 = 0;
                    for (int a = 0; a < 3; ++a) {
                        double D = r[j][a] - r[i][a] + S[0] * cases[c].h[0][a] + S[1] * cases[c].h[1][a] +
                                   S[2] * cases[c].h[2][a];
                        cr_assert_float_eq(nl.vectors[3 * k + a], D, 1e-12, "case %zu: D of (%lld, %d)", c,
                                           (long long)i, j);
                        d2 += D * D;
                        cr_assert(cases[c].pbc[a] || S[a] == 0, "a shift along open axis %d", a);
                    }
                    cr_assert_float_eq(sqrt(d2), nl.distances[k], 1e-5, "case %zu: |D| vs d of (%lld, %d)", c,
                                       (long long)i, j);
                    /* no (i, j, S) twice */
                    for (int64_t q = nl.offsets[i]; q < k; ++q)
                        cr_assert(!(nl.indices[q] == j && !memcmp(nl.shifts + 3 * q, S, 3 * sizeof *S)),
                                  "case %zu: (%lld, %d, S) twice", c, (long long)i, j);
                }
        }
    mdnl_context_free(ctx);
}

ParameterizedTestParameters(library, graphene_every_atom_has_three_neighbors_then_six)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, graphene_every_atom_has_three_neighbors_then_six)
{
    mdnl_context *ctx = context_for(*b, 0);
    cr_assert_eq(mdnl("gen graphene --nx 6 --ny 4 -o g.xyz -q"), 0, "%s", err_text);
    char path[512];
    snprintf(path, sizeof path, "%s/g.xyz", tmpdir);
    mdnl_reader *r = NULL;
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_reader_open(path, NULL, &r), MDNL_OK);
    cr_assert_eq(mdnl_reader_next(r, &f), MDNL_OK);
    /* float32 positions: the same shells */
    float(*p32)[3] = malloc((size_t)f.natoms * sizeof *p32);
    for (int64_t i = 0; i < f.natoms; ++i)
        for (int a = 0; a < 3; ++a)
            p32[i][a] = (float)f.pos[i][a];
    mdnl_system sys = {f.natoms, p32, MDNL_FLOAT32, &f.box.h[0][0], {f.box.pbc[0], f.box.pbc[1], f.box.pbc[2]}};
    mdnl_neighbor_list nl;
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 1.6, MDNL_NEIGHBORS_FULL, &nl), MDNL_OK, "%s", mdnl_last_error());
    for (int64_t i = 0; i < nl.n; ++i) {
        cr_assert_eq(nl.offsets[i + 1] - nl.offsets[i], 3, "atom %lld", (long long)i);
        for (int64_t k = nl.offsets[i]; k < nl.offsets[i + 1]; ++k)
            cr_assert_float_eq(nl.distances[k], 1.42, 1e-4);
    }
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 2.6, MDNL_NEIGHBORS_FULL, &nl), MDNL_OK);
    cr_assert_eq(nl.npairs, 9 * f.natoms);
    free(p32);
    mdnl_frame_free(&f);
    mdnl_reader_close(r);
    mdnl_context_free(ctx);
}

/* A liquid-like frame for the energy and RDF. */
static void lattice_frame(double (*r)[3], int nside, double a, double h[3][3])
{
    int k = 0;
    for (int x = 0; x < nside; ++x)
        for (int y = 0; y < nside; ++y)
            for (int z = 0; z < nside; ++z, ++k) {
                r[k][0] = a * x + 0.05 * sin(k * 1.3);
                r[k][1] = a * y + 0.05 * cos(k * 0.7);
                r[k][2] = a * z + 0.04 * sin(k * 2.1);
            }
    memset(h, 0, 9 * sizeof(double));
    h[0][0] = h[1][1] = h[2][2] = a * nside;
}

ParameterizedTestParameters(library, energy_is_the_pair_sum_of_the_list)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, energy_is_the_pair_sum_of_the_list)
{
    mdnl_context *ctx = context_for(*b, 0);
    static double r[512][3];
    double h[3][3];
    lattice_frame(r, 8, 1.1, h);
    mdnl_system sys = {512, r, MDNL_FLOAT64, &h[0][0], {1, 1, 1}};
    const double rc = 2.5;
    mdnl_pair_params lj = {MDNL_PAIR_LJ, 1.0, 1.0, 0, 0, 0, 1};
    double total = 0, per_atom[512];
    cr_assert_eq(mdnl_energy(ctx, &sys, &lj, rc, &total, per_atom), MDNL_OK, "%s", mdnl_last_error());
    mdnl_neighbor_list nl;
    cr_assert_eq(mdnl_neighbors(ctx, &sys, rc, MDNL_NEIGHBORS_HALF, &nl), MDNL_OK);
    double ref = 0, sum = 0;
    const double sr = 1.0 / rc, uc = 4.0 * (pow(sr, 12) - pow(sr, 6));
    for (int64_t k = 0; k < nl.npairs; ++k) {
        const double x = 1.0 / nl.distances[k];
        ref += 4.0 * (pow(x, 12) - pow(x, 6)) - uc;
    }
    for (int i = 0; i < 512; ++i)
        sum += per_atom[i];
    cr_assert_float_eq(total, ref, 1e-9 * fabs(ref), "total %.17g, pair sum %.17g", total, ref);
    cr_assert_float_eq(sum, total, 1e-9 * fabs(ref));
    mdnl_pair_params bad = {MDNL_PAIR_LJ, -1.0, 1.0, 0, 0, 0, 1};
    cr_assert_eq(mdnl_energy(ctx, &sys, &bad, rc, &total, NULL), MDNL_ERR_USAGE);
    cr_assert(strstr(mdnl_last_error(), "mdnl_energy: ") == mdnl_last_error(), "%s", mdnl_last_error());
    mdnl_context_free(ctx);
}

ParameterizedTestParameters(library, rdf_counts_every_ordered_pair)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, rdf_counts_every_ordered_pair)
{
    mdnl_context *ctx = context_for(*b, 0);
    static double r[512][3];
    double h[3][3];
    lattice_frame(r, 8, 1.1, h);
    mdnl_system sys = {512, r, MDNL_FLOAT64, &h[0][0], {1, 1, 1}};
    mdnl_rdf *rdf = NULL;
    cr_assert_eq(mdnl_rdf_create(3.0, 30, 0, NULL, 0, &rdf), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_rdf_add(ctx, rdf, &sys, NULL), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_rdf_add(ctx, rdf, &sys, NULL), MDNL_OK);
    cr_assert_eq(mdnl_rdf_frames(rdf), 2);
    cr_assert(mdnl_rdf_g_defined(rdf));
    double rr[30], g[30], cpa[30], n[30];
    cr_assert_eq(mdnl_rdf_values(rdf, rr, g, cpa, n), MDNL_OK);
    mdnl_neighbor_list nl;
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 3.0, MDNL_NEIGHBORS_FULL, &nl), MDNL_OK);
    cr_assert_float_eq(n[29] * 512, (double)nl.npairs, 1e-9 * nl.npairs);
    cr_assert_float_eq(rr[0], 0.05, 1e-12);
    mdnl_rdf_free(rdf);
    /* partial: species ids beyond the pairs' count for nothing */
    int32_t pairs[1][2] = {{0, 1}}, species[512];
    for (int i = 0; i < 512; ++i)
        species[i] = i % 3; /* 0, 1 and 2 */
    cr_assert_eq(mdnl_rdf_create(3.0, 30, 1, (const int32_t(*)[2])pairs, 0, &rdf), MDNL_OK);
    cr_assert_eq(mdnl_rdf_add(ctx, rdf, &sys, NULL), MDNL_ERR_USAGE);
    cr_assert_eq(mdnl_rdf_add(ctx, rdf, &sys, species), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_rdf_values(rdf, NULL, NULL, NULL, n), MDNL_OK);
    int64_t ab = 0;
    for (int64_t i = 0; i < nl.n; ++i)
        for (int64_t k = nl.offsets[i]; k < nl.offsets[i + 1]; ++k)
            ab += species[i] == 0 && species[nl.indices[k]] == 1;
    cr_assert_float_eq(n[29] * 171, (double)ab, 1e-9 * ab); /* 171 atoms of species 0 */
    mdnl_rdf_free(rdf);
    mdnl_context_free(ctx);
}

ParameterizedTestParameters(library, errors_name_the_call_and_leave_out_empty)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, errors_name_the_call_and_leave_out_empty)
{
    mdnl_context *ctx = context_for(*b, 0);
    double r[3][3] = {{0, 0, 0}, {1, 0, 0}, {0, NAN, 0}};
    const double cell[9] = {4, 0, 0, 0, 4, 0, 0, 0, 4};
    mdnl_system sys = {3, r, MDNL_FLOAT64, cell, {1, 1, 1}};
    mdnl_neighbor_list nl;
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 1.5, 0, &nl), MDNL_ERR_INPUT);
    cr_assert(strstr(mdnl_last_error(), "mdnl_neighbors: ") == mdnl_last_error(), "%s", mdnl_last_error());
    cr_assert(strstr(mdnl_last_error(), "atom 2"), "%s", mdnl_last_error());
    cr_assert_eq(nl.npairs, 0);
    cr_assert_null(nl.offsets);
    r[2][1] = 0.5;
    cr_assert_eq(mdnl_neighbors(ctx, &sys, -1.0, 0, &nl), MDNL_ERR_USAGE);
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 1.5, 64, &nl), MDNL_ERR_USAGE);
    cr_assert_eq(mdnl_neighbors(ctx, NULL, 1.5, 0, &nl), MDNL_ERR_USAGE);
    cr_assert_eq(mdnl_neighbors(NULL, &sys, 1.5, 0, &nl), MDNL_ERR_USAGE);
    mdnl_system open = {3, r, MDNL_FLOAT64, NULL, {1, 0, 0}};
    cr_assert_eq(mdnl_neighbors(ctx, &open, 1.5, 0, &nl), MDNL_ERR_USAGE);
    cr_assert(strstr(mdnl_last_error(), "without a cell"), "%s", mdnl_last_error());
    mdnl_system bad_dtype = {3, r, (mdnl_dtype)7, cell, {1, 1, 1}};
    cr_assert_eq(mdnl_neighbors(ctx, &bad_dtype, 1.5, 0, &nl), MDNL_ERR_USAGE);
    const double singular[9] = {1, 0, 0, 2, 0, 0, 0, 0, 1};
    mdnl_system flat = {3, r, MDNL_FLOAT64, singular, {1, 1, 1}};
    cr_assert_eq(mdnl_neighbors(ctx, &flat, 0.5, 0, &nl), MDNL_ERR_INPUT);
    if (*b == MDNL_COMPUTE_CPU)
        cr_assert_eq(mdnl_neighbors_device(ctx, &sys, 1.5, 0, NULL, &nl), MDNL_ERR_USAGE);
    mdnl_clear_error();
    cr_assert_str_eq(mdnl_last_error(), "");
    /* a good call after the failures works */
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 1.5, MDNL_NEIGHBORS_FULL, &nl), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_gt(nl.npairs, 0);
    mdnl_context_free(ctx);
    mdnl_context_free(NULL);
}

ParameterizedTestParameters(library, work_limit_is_the_contexts_own)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, work_limit_is_the_contexts_own)
{
    mdnl_context *tight = context_for(*b, 100), *loose = context_for(*b, 0);
    static double r[512][3];
    double h[3][3];
    lattice_frame(r, 8, 1.1, h);
    mdnl_system sys = {512, r, MDNL_FLOAT64, &h[0][0], {1, 1, 1}};
    mdnl_neighbor_list nl;
    cr_assert_eq(mdnl_neighbors(tight, &sys, 2.0, 0, &nl), MDNL_ERR_INPUT);
    cr_assert(strstr(mdnl_last_error(), "limit of 100 pairs"), "%s", mdnl_last_error());
    /* the refusal names the context's option, not the command line's */
    cr_assert(strstr(mdnl_last_error(), "raise the limit with mdnl_context_options.max_pairs"), "%s",
              mdnl_last_error());
    cr_assert_null(strstr(mdnl_last_error(), "--max-pairs"), "%s", mdnl_last_error());
    cr_assert_eq(mdnl_neighbors(loose, &sys, 2.0, 0, &nl), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_neighbors(tight, &sys, 2.0, 0, &nl), MDNL_ERR_INPUT); /* still its own */
    /* the default refuses 3 atoms in a 1e-3 cell (billions of images) */
    const double tiny[9] = {1e-3, 0, 0, 0, 1e-3, 0, 0, 0, 1e-3};
    mdnl_system dense = {3, r, MDNL_FLOAT64, tiny, {1, 1, 1}};
    cr_assert_eq(mdnl_neighbors(loose, &dense, 1.0, 0, &nl), MDNL_ERR_INPUT);
    mdnl_context_free(tight);
    mdnl_context_free(loose);
}

/* 100,000 atoms at one point of a 100 A periodic box (docs/robustness.md):
 * the extent estimate sees a full box; the cells' occupancy refuses it. */
#define STACKED 100000
static const double stacked_cell[9] = {100, 0, 0, 0, 100, 0, 0, 0, 100};

ParameterizedTestParameters(library, stacked_atoms_are_refused_naming_the_cell_and_the_option)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, stacked_atoms_are_refused_naming_the_cell_and_the_option)
{
    mdnl_context *ctx = context_for(*b, 0);
    double(*r)[3] = calloc(STACKED, sizeof *r);
    mdnl_system sys = {STACKED, r, MDNL_FLOAT64, stacked_cell, {1, 1, 1}};
    mdnl_neighbor_list nl;
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 3.0, MDNL_NEIGHBORS_FULL, &nl), MDNL_ERR_INPUT);
    const char *e = mdnl_last_error();
    cr_assert(strstr(e, "100000 of 100000 atoms are in one cell") && strstr(e, "cell (0 0 0), atom 0 at 0 0 0"), "%s",
              e);
    cr_assert(strstr(e, "stacked at one point? Raise the limit with mdnl_context_options.max_pairs"), "%s", e);
    cr_assert_null(strstr(e, "--max-pairs"), "%s", e);
    cr_assert_eq(nl.npairs, 0);
    free(r);
    mdnl_context_free(ctx);
}

Test(library, context_options_are_checked)
{
    mdnl_context *ctx = (mdnl_context *)&ctx;
    mdnl_context_options o = {(mdnl_compute)9, 0, 0, 0};
    cr_assert_eq(mdnl_context_create(&o, &ctx), MDNL_ERR_USAGE);
    cr_assert_null(ctx);
    o = (mdnl_context_options){MDNL_COMPUTE_CPU, 0, -5, 0};
    cr_assert_eq(mdnl_context_create(&o, &ctx), MDNL_ERR_USAGE);
    o = (mdnl_context_options){MDNL_COMPUTE_CPU, -1, 0, 0};
    cr_assert_eq(mdnl_context_create(&o, &ctx), MDNL_ERR_USAGE);
    if (mdnl_cuda_devices() == 0) {
        o = (mdnl_context_options){MDNL_COMPUTE_CUDA, 0, 0, 0};
        cr_assert_eq(mdnl_context_create(&o, &ctx), MDNL_ERR_RESOURCE);
        cr_assert(strstr(mdnl_last_error(), "cuda"), "%s", mdnl_last_error());
    }
    cr_assert_eq(mdnl_context_create(NULL, &ctx), MDNL_OK);
    cr_assert_str_eq(mdnl_version(), "0.1.0");
    mdnl_context_free(ctx);
}

/* Positions already on the device, results left there: the same bytes as
 * the host call (CUDA only). */
Test(library, device_positions_give_the_host_calls_bytes)
{
#ifdef MDNL_HAVE_CUDA
    mdnl_context *ctx = context_for(MDNL_COMPUTE_CUDA, 0);
    static double r[512][3];
    double h[3][3];
    lattice_frame(r, 8, 1.1, h);
    h[1][0] = 0.7; /* triclinic */
    for (int k = 0; k < 512; ++k)
        r[k][0] += 3.0 * sin(k); /* some atoms outside the cell */
    mdnl_system sys = {512, r, MDNL_FLOAT64, &h[0][0], {1, 0, 1}};
    const int flags = MDNL_NEIGHBORS_FULL | MDNL_NEIGHBORS_SHIFTS | MDNL_NEIGHBORS_VECTORS;
    mdnl_neighbor_list hl, dl;
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 2.3, flags, &hl), MDNL_OK, "%s", mdnl_last_error());
    const int64_t np = hl.npairs, n = hl.n;
    int64_t *off = malloc((size_t)(n + 1) * 8);
    int32_t *j = malloc((size_t)np * 4), *S = malloc((size_t)np * 12);
    float *d = malloc((size_t)np * 4);
    double *D = malloc((size_t)np * 24);
    memcpy(off, hl.offsets, (size_t)(n + 1) * 8), memcpy(j, hl.indices, (size_t)np * 4);
    memcpy(d, hl.distances, (size_t)np * 4), memcpy(S, hl.shifts, (size_t)np * 12), memcpy(D, hl.vectors, (size_t)np * 24);
    void *d_r = NULL;
    cr_assert_eq(cudaMalloc(&d_r, sizeof r), cudaSuccess);
    cr_assert_eq(cudaMemcpy(d_r, r, sizeof r, cudaMemcpyHostToDevice), cudaSuccess);
    sys.positions = d_r;
    cr_assert_eq(mdnl_neighbors_device(ctx, &sys, 2.3, flags, NULL, &dl), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(dl.npairs, np);
    int64_t *off2 = malloc((size_t)(n + 1) * 8);
    int32_t *j2 = malloc((size_t)np * 4), *S2 = malloc((size_t)np * 12);
    float *d2 = malloc((size_t)np * 4);
    double *D2 = malloc((size_t)np * 24);
    cr_assert_eq(cudaMemcpy(off2, dl.offsets, (size_t)(n + 1) * 8, cudaMemcpyDeviceToHost), cudaSuccess);
    cudaMemcpy(j2, dl.indices, (size_t)np * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(d2, dl.distances, (size_t)np * 4, cudaMemcpyDeviceToHost);
    cudaMemcpy(S2, dl.shifts, (size_t)np * 12, cudaMemcpyDeviceToHost);
    cudaMemcpy(D2, dl.vectors, (size_t)np * 24, cudaMemcpyDeviceToHost);
    cr_assert_arr_eq(off, off2, (size_t)(n + 1) * 8);
    cr_assert_arr_eq(j, j2, (size_t)np * 4);
    cr_assert_arr_eq(d, d2, (size_t)np * 4);
    cr_assert_arr_eq(S, S2, (size_t)np * 12);
    for (int64_t k = 0; k < 3 * np; ++k)
        cr_assert_float_eq(D[k], D2[k], 1e-12);
    /* float32 device positions: the host call on the same float32 values */
    float(*r32)[3] = malloc(sizeof r / 2);
    for (int k = 0; k < 512; ++k)
        for (int a = 0; a < 3; ++a)
            r32[k][a] = (float)r[k][a];
    mdnl_system s32 = {512, r32, MDNL_FLOAT32, &h[0][0], {1, 0, 1}};
    cr_assert_eq(mdnl_neighbors(ctx, &s32, 2.3, 0, &hl), MDNL_OK);
    const int64_t np32 = hl.npairs;
    int32_t *j32 = malloc((size_t)np32 * 4);
    memcpy(j32, hl.indices, (size_t)np32 * 4);
    cr_assert_eq(cudaMemcpy(d_r, r32, sizeof r / 2, cudaMemcpyHostToDevice), cudaSuccess);
    s32.positions = d_r;
    cr_assert_eq(mdnl_neighbors_device(ctx, &s32, 2.3, 0, NULL, &dl), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(dl.npairs, np32);
    cudaMemcpy(j2, dl.indices, (size_t)np32 * 4, cudaMemcpyDeviceToHost);
    cr_assert_arr_eq(j32, j2, (size_t)np32 * 4);
    cudaFree(d_r);
    free(off), free(j), free(S), free(d), free(D), free(off2), free(j2), free(S2), free(d2), free(D2), free(r32),
        free(j32);
    mdnl_context_free(ctx);
#else
    cr_skip_test("built without CUDA");
#endif
}

/* The occupancy guard on device positions (no host copy): stacked atoms are
 * refused with the host call's message, word for word; a liquid the guard
 * counts (a context limit low enough that the count is not skipped) gives
 * the host call's list (CUDA only). */
Test(library, device_positions_stacked_are_refused_as_on_the_host)
{
#ifdef MDNL_HAVE_CUDA
    mdnl_context *ctx = context_for(MDNL_COMPUTE_CUDA, 0);
    double(*r)[3] = calloc(STACKED, sizeof *r);
    void *d_r = NULL;
    cr_assert_eq(cudaMalloc(&d_r, STACKED * sizeof *r), cudaSuccess);
    cr_assert_eq(cudaMemcpy(d_r, r, STACKED * sizeof *r, cudaMemcpyHostToDevice), cudaSuccess);
    mdnl_system sys = {STACKED, r, MDNL_FLOAT64, stacked_cell, {1, 1, 1}};
    mdnl_neighbor_list nl;
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 3.0, MDNL_NEIGHBORS_FULL, &nl), MDNL_ERR_INPUT);
    char host[2048];
    snprintf(host, sizeof host, "%s", mdnl_last_error() + strlen("mdnl_neighbors: "));
    sys.positions = d_r;
    cr_assert_eq(mdnl_neighbors_device(ctx, &sys, 3.0, MDNL_NEIGHBORS_FULL, NULL, &nl), MDNL_ERR_INPUT);
    const char *e = mdnl_last_error();
    cr_assert(strstr(e, "mdnl_neighbors_device: ") == e, "%s", e);
    cr_assert_str_eq(e + strlen("mdnl_neighbors_device: "), host);
    cr_assert(strstr(e, "in one cell") && strstr(e, "cell (0 0 0)") && strstr(e, "mdnl_context_options.max_pairs"),
              "%s", e);
    cr_assert_eq(nl.npairs, 0);
    cr_assert_null(nl.offsets);
    /* a liquid: 20,000 atoms spread evenly, judged against a limit of 1e7 */
    mdnl_context *counted = context_for(MDNL_COMPUTE_CUDA, 1e7);
    const int64_t n = 20000;
    uint64_t x = 58;
    for (int64_t i = 0; i < 3 * n; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        r[i / 3][i % 3] = 30.0 * (double)(x >> 11) / 9007199254740992.0;
    }
    const double box[9] = {30, 0, 0, 0, 30, 0, 0, 0, 30};
    mdnl_system liquid = {n, r, MDNL_FLOAT64, box, {1, 1, 1}};
    cr_assert_eq(mdnl_neighbors(counted, &liquid, 2.5, MDNL_NEIGHBORS_FULL, &nl), MDNL_OK, "%s", mdnl_last_error());
    const int64_t np = nl.npairs;
    int32_t *j = malloc((size_t)np * 4), *j2 = malloc((size_t)np * 4);
    memcpy(j, nl.indices, (size_t)np * 4);
    cr_assert_eq(cudaMemcpy(d_r, r, (size_t)n * sizeof *r, cudaMemcpyHostToDevice), cudaSuccess);
    liquid.positions = d_r;
    cr_assert_eq(mdnl_neighbors_device(counted, &liquid, 2.5, MDNL_NEIGHBORS_FULL, NULL, &nl), MDNL_OK, "%s",
                 mdnl_last_error());
    cr_assert_eq(nl.npairs, np);
    cr_assert_eq(cudaMemcpy(j2, nl.indices, (size_t)np * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    cr_assert_arr_eq(j, j2, (size_t)np * 4);
    /* half of them in a clump across the periodic corner (-3..3 on each
     * axis, some 10 cells): the windows wrap, and the device's candidates,
     * pairs and densest cell are the host's, word for word */
    for (int64_t i = 0; i < n / 2; ++i)
        for (int a = 0; a < 3; ++a)
            r[i][a] = r[i][a] / 5.0 - 3.0;
    liquid.positions = r;
    cr_assert_eq(mdnl_neighbors(counted, &liquid, 2.5, 0, &nl), MDNL_ERR_INPUT);
    cr_assert(strstr(mdnl_last_error(), "atoms are in one cell"), "%s", mdnl_last_error());
    snprintf(host, sizeof host, "%s", mdnl_last_error() + strlen("mdnl_neighbors: "));
    cr_assert_eq(cudaMemcpy(d_r, r, (size_t)n * sizeof *r, cudaMemcpyHostToDevice), cudaSuccess);
    liquid.positions = d_r;
    cr_assert_eq(mdnl_neighbors_device(counted, &liquid, 2.5, 0, NULL, &nl), MDNL_ERR_INPUT);
    cr_assert_str_eq(mdnl_last_error() + strlen("mdnl_neighbors_device: "), host);
    /* the same atoms stacked, against that limit: refused on the device too */
    cr_assert_eq(cudaMemset(d_r, 0, (size_t)n * sizeof *r), cudaSuccess);
    cr_assert_eq(mdnl_neighbors_device(counted, &liquid, 2.5, 0, NULL, &nl), MDNL_ERR_INPUT);
    cr_assert(strstr(mdnl_last_error(), "20000 of 20000 atoms are in one cell"), "%s", mdnl_last_error());
    free(j), free(j2), free(r);
    cudaFree(d_r);
    mdnl_context_free(counted);
    mdnl_context_free(ctx);
#else
    cr_skip_test("built without CUDA");
#endif
}

/* ---- the calls the command line computes through ---- */

/* The 512-atom periodic lattice of lattice_frame as a system. */
static mdnl_system lattice_system(double (*r)[3], double h[3][3])
{
    lattice_frame(r, 8, 1.1, h);
    return (mdnl_system){512, r, MDNL_FLOAT64, &h[0][0], {1, 1, 1}};
}

/* Species 0, 1, 2, 0, ... of the 512 atoms (171 of species 0). */
static void three_species(int32_t *species)
{
    for (int i = 0; i < 512; ++i)
        species[i] = i % 3;
}

ParameterizedTestParameters(library, coordination_counts_the_full_lists_rows)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, coordination_counts_the_full_lists_rows)
{
    mdnl_context *ctx = context_for(*b, 0);
    static double r[512][3];
    double h[3][3];
    const mdnl_system sys = lattice_system(r, h);
    int32_t species[512], pairs[2][2] = {{0, 1}, {1, 1}};
    three_species(species);
    static int32_t total[512], cols[512][2];
    cr_assert_eq(mdnl_coordination(ctx, &sys, 1.7, NULL, 0, NULL, total), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_coordination(ctx, &sys, 1.7, species, 2, (const int32_t(*)[2])pairs, &cols[0][0]), MDNL_OK,
                 "%s", mdnl_last_error());
    mdnl_neighbor_list nl;
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 1.7, MDNL_NEIGHBORS_FULL, &nl), MDNL_OK);
    for (int64_t i = 0; i < 512; ++i) {
        int32_t of[3] = {0, 0, 0};
        for (int64_t k = nl.offsets[i]; k < nl.offsets[i + 1]; ++k)
            of[species[nl.indices[k]]]++;
        cr_assert_eq(total[i], (int32_t)(nl.offsets[i + 1] - nl.offsets[i]), "atom %lld", (long long)i);
        cr_assert_eq(cols[i][0], species[i] == 0 ? of[1] : 0, "atom %lld", (long long)i);
        cr_assert_eq(cols[i][1], species[i] == 1 ? of[1] : 0, "atom %lld", (long long)i);
    }
    cr_assert_eq(mdnl_coordination(ctx, &sys, 1.7, NULL, 2, (const int32_t(*)[2])pairs, &cols[0][0]),
                 MDNL_ERR_USAGE);
    cr_assert_eq(mdnl_coordination(ctx, &sys, 1.7, species, MDNL_COORDINATION_MAX_PAIRS + 1,
                                   (const int32_t(*)[2])pairs, &cols[0][0]),
                 MDNL_ERR_USAGE);
    cr_assert(strstr(mdnl_last_error(), "mdnl_coordination: ") == mdnl_last_error(), "%s", mdnl_last_error());
    mdnl_context_free(ctx);
}

ParameterizedTestParameters(library, energy_types_is_the_pair_sum_at_each_pairs_cutoff)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, energy_types_is_the_pair_sum_at_each_pairs_cutoff)
{
    mdnl_context *ctx = context_for(*b, 0);
    static double r[512][3];
    double h[3][3];
    const mdnl_system sys = lattice_system(r, h);
    int32_t types[512];
    for (int i = 0; i < 512; ++i)
        types[i] = i % 5 == 0; /* one atom in five of type 1 */
    /* Kob-Andersen-like: (0,0) 1/1 at 2.5, (0,1) 1.5/0.8 at 2.0, (1,1) 0.5/0.88 at 2.2 */
    const mdnl_pair_params p00 = {MDNL_PAIR_LJ, 1.0, 1.0, 0, 0, 0, 1}, p01 = {MDNL_PAIR_LJ, 1.5, 0.8, 0, 0, 0, 1},
                           p11 = {MDNL_PAIR_LJ, 0.5, 0.88, 0, 0, 0, 1};
    const mdnl_pair_params params[4] = {p00, p01, p01, p11};
    const double cutoffs[4] = {2.5, 2.0, 2.0, 2.2};
    double total = 0, per_atom[512];
    cr_assert_eq(mdnl_energy_types(ctx, &sys, 2, params, cutoffs, types, &total, per_atom), MDNL_OK, "%s",
                 mdnl_last_error());
    mdnl_neighbor_list nl;
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 2.5, MDNL_NEIGHBORS_HALF, &nl), MDNL_OK);
    double ref = 0, sum = 0;
    for (int64_t i = 0; i < nl.n; ++i)
        for (int64_t k = nl.offsets[i]; k < nl.offsets[i + 1]; ++k) {
            const int t = 2 * types[i] + types[nl.indices[k]];
            const double d = nl.distances[k], rc = cutoffs[t], e = params[t].epsilon, s = params[t].sigma;
            if (d < rc)
                ref += 4 * e * (pow(s / d, 12) - pow(s / d, 6)) - 4 * e * (pow(s / rc, 12) - pow(s / rc, 6));
        }
    for (int i = 0; i < 512; ++i)
        sum += per_atom[i];
    cr_assert_float_eq(total, ref, 1e-9 * fabs(ref), "total %.17g, pair sum %.17g", total, ref);
    cr_assert_float_eq(sum, total, 1e-9 * fabs(ref));
    /* one type is mdnl_energy */
    double one = 0;
    const int32_t zeros[512] = {0};
    cr_assert_eq(mdnl_energy_types(ctx, &sys, 1, &p00, cutoffs, zeros, &one, NULL), MDNL_OK, "%s",
                 mdnl_last_error());
    cr_assert_eq(mdnl_energy(ctx, &sys, &p00, 2.5, &total, NULL), MDNL_OK);
    cr_assert_float_eq(one, total, 1e-12 * fabs(total));
    /* refused: an asymmetric table, a type out of range, mixed styles */
    const mdnl_pair_params skew[4] = {p00, p01, p11, p11};
    cr_assert_eq(mdnl_energy_types(ctx, &sys, 2, skew, cutoffs, types, &total, NULL), MDNL_ERR_USAGE);
    cr_assert(strstr(mdnl_last_error(), "symmetric"), "%s", mdnl_last_error());
    types[7] = 2;
    cr_assert_eq(mdnl_energy_types(ctx, &sys, 2, params, cutoffs, types, &total, NULL), MDNL_ERR_USAGE);
    cr_assert(strstr(mdnl_last_error(), "types[7] = 2"), "%s", mdnl_last_error());
    const mdnl_pair_params morse = {MDNL_PAIR_MORSE, 0, 0, 1.0, 2.0, 1.1, 1};
    const mdnl_pair_params mixed[4] = {p00, morse, morse, p11};
    cr_assert_eq(mdnl_energy_types(ctx, &sys, 2, mixed, cutoffs, zeros, &total, NULL), MDNL_ERR_USAGE);
    cr_assert_eq(mdnl_energy_types(ctx, &sys, MDNL_ENERGY_MAX_TYPES + 1, params, cutoffs, zeros, &total, NULL),
                 MDNL_ERR_USAGE);
    mdnl_context_free(ctx);
}

ParameterizedTestParameters(library, histogram_is_what_rdf_add_accumulates)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, histogram_is_what_rdf_add_accumulates)
{
    mdnl_context *ctx = context_for(*b, 0);
    static double r[512][3];
    double h[3][3];
    const mdnl_system sys = lattice_system(r, h);
    int32_t species[512], pairs[1][2] = {{0, 1}};
    three_species(species);
    uint64_t counts[30];
    double volume = -1;
    cr_assert_eq(mdnl_histogram(ctx, &sys, 3.0, 30, species, 1, (const int32_t(*)[2])pairs, counts, &volume),
                 MDNL_OK, "%s", mdnl_last_error());
    cr_assert_float_eq(volume, pow(8.8, 3), 1e-9);
    mdnl_rdf *rdf = NULL;
    cr_assert_eq(mdnl_rdf_create(3.0, 30, 1, (const int32_t(*)[2])pairs, 0, &rdf), MDNL_OK);
    cr_assert_eq(mdnl_rdf_add(ctx, rdf, &sys, species), MDNL_OK, "%s", mdnl_last_error());
    double cpa[30];
    cr_assert_eq(mdnl_rdf_values(rdf, NULL, NULL, cpa, NULL), MDNL_OK);
    for (int k = 0; k < 30; ++k) /* one frame: the count per A atom is the histogram over the 171 A atoms */
        cr_assert_float_eq(cpa[k] * 171, (double)counts[k], 1e-9 * (double)(counts[k] + 1), "bin %d", k);
    mdnl_rdf_free(rdf);
    /* an open frame has no volume */
    mdnl_system open = {512, r, MDNL_FLOAT64, NULL, {0, 0, 0}};
    cr_assert_eq(mdnl_histogram(ctx, &open, 3.0, 30, NULL, 0, NULL, counts, &volume), MDNL_OK, "%s",
                 mdnl_last_error());
    cr_assert_eq(volume, 0.0);
    cr_assert_eq(mdnl_histogram(ctx, &sys, 3.0, 0, NULL, 0, NULL, counts, NULL), MDNL_ERR_USAGE);
    cr_assert(strstr(mdnl_last_error(), "mdnl_histogram: ") == mdnl_last_error(), "%s", mdnl_last_error());
    mdnl_context_free(ctx);
}

ParameterizedTestParameters(library, set_frame_names_the_source_and_the_frame_in_messages)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, set_frame_names_the_source_and_the_frame_in_messages)
{
    mdnl_context *ctx = context_for(*b, 0);
    double r[3][3] = {{0, 0, 0}, {1, 0, 0}, {0, NAN, 0}};
    const double cell[9] = {4, 0, 0, 0, 4, 0, 0, 0, 4};
    mdnl_system sys = {3, r, MDNL_FLOAT64, cell, {1, 1, 1}};
    mdnl_neighbor_list nl;
    cr_assert_eq(mdnl_context_set_frame(ctx, "traj.xyz", 7), MDNL_OK);
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 1.5, 0, &nl), MDNL_ERR_INPUT);
    cr_assert_str_eq(mdnl_last_error(), "traj.xyz: frame 7: atom 2 has a non-finite coordinate");
    cr_assert_eq(mdnl_context_set_frame(ctx, "traj.xyz", 8), MDNL_OK); /* the same source, the next frame */
    cr_assert_eq(mdnl_energy(ctx, &sys, NULL, 1.5, &(double){0}, NULL), MDNL_ERR_USAGE);
    cr_assert_str_eq(mdnl_last_error(), "the pair parameters are NULL"); /* not the data's: no prefix */
    cr_assert_eq(mdnl_context_set_frame(ctx, NULL, 9), MDNL_OK);
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 1.5, 0, &nl), MDNL_ERR_INPUT);
    cr_assert_str_eq(mdnl_last_error(), "mdnl_neighbors: frame 9: atom 2 has a non-finite coordinate");
    cr_assert_eq(mdnl_context_set_frame(NULL, "x", 0), MDNL_ERR_USAGE);
    mdnl_context_free(ctx);
}

ParameterizedTestParameters(library, method_is_chosen_and_reported)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, method_is_chosen_and_reported)
{
    mdnl_context *ctx = context_for(*b, 0);
    static double r[512][3];
    double h[3][3];
    const mdnl_system sys = lattice_system(r, h);
    cr_assert_str_eq(mdnl_context_method(ctx), "auto");
    mdnl_neighbor_list nl;
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 2.0, MDNL_NEIGHBORS_FULL, &nl), MDNL_OK);
    cr_assert_str_neq(mdnl_context_method(ctx), "auto");
    const int64_t npairs = nl.npairs;
    cr_assert_eq(mdnl_context_set_method(ctx, "brute-atomic"), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_neighbors(ctx, &sys, 2.0, MDNL_NEIGHBORS_FULL, &nl), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_str_eq(mdnl_context_method(ctx), "brute-atomic");
    cr_assert_eq(nl.npairs, npairs);
    cr_assert_eq(mdnl_context_set_method(ctx, "fastest"), MDNL_ERR_USAGE);
    cr_assert(strstr(mdnl_last_error(), "mdnl_context_set_method: ") == mdnl_last_error(), "%s", mdnl_last_error());
    mdnl_context_free(ctx);
}

ParameterizedTestParameters(library, host_memory_is_the_contexts)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, host_memory_is_the_contexts)
{
    mdnl_context *ctx = context_for(*b, 0);
    void *p = NULL, *q = NULL;
    cr_assert_eq(mdnl_host_alloc(ctx, 1 << 20, &p), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_host_alloc(ctx, 0, &q), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_not_null(p);
    cr_assert_not_null(q);
    memset(p, 0, 1 << 20); /* host memory of the context holds a system's positions like any */
    mdnl_neighbor_list nl;
    cr_assert_eq(mdnl_neighbors(ctx, &(mdnl_system){4, p, MDNL_FLOAT32, NULL, {0, 0, 0}}, 1.0, 0, &nl), MDNL_OK,
                 "%s", mdnl_last_error());
    cr_assert_eq(nl.npairs, 6); /* four atoms at one point */
    mdnl_host_free(ctx, p);
    mdnl_host_free(ctx, q);
    mdnl_host_free(ctx, NULL);
    cr_assert_eq(mdnl_host_alloc(NULL, 8, &p), MDNL_ERR_USAGE);
    cr_assert_eq(mdnl_host_alloc(ctx, 8, NULL), MDNL_ERR_USAGE);
    mdnl_context_free(ctx);
}

/* ---- streams ---- */

#define STREAM_FRAMES 7

/* Frame k of a stream: the lattice, its atoms moved a little more each frame
 * (in mdnl_host_alloc memory, as a streaming caller keeps them). */
static void stream_positions(double (*r)[3], double h[3][3], int k)
{
    lattice_frame(r, 8, 1.1, h);
    for (int i = 0; i < 512; ++i)
        for (int c = 0; c < 3; ++c)
            r[i][c] += 0.03 * k * sin(1.7 * i + c + k);
}

ParameterizedTestParameters(library, stream_results_equal_the_synchronous_calls)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, stream_results_equal_the_synchronous_calls)
{
    mdnl_context *ctx = context_for(*b, 0);
    const double rc = 2.5;
    const mdnl_pair_params lj = {MDNL_PAIR_LJ, 1.0, 1.0, 0, 0, 0, 1};
    int32_t species[512], pairs[1][2] = {{0, 1}};
    three_species(species);
    /* tickets fewer than frames: each ticket is reused */
    const mdnl_stream_options o = {.tickets = 3,
                                   .neighbors = 1,
                                   .flags = MDNL_NEIGHBORS_FULL | MDNL_NEIGHBORS_SHIFTS | MDNL_NEIGHBORS_VECTORS,
                                   .cutoff = rc,
                                   .energy = 1,
                                   .params = lj,
                                   .histogram = 1,
                                   .r_max = 3.0,
                                   .bins = 30,
                                   .npairs = 1,
                                   .pairs = (const int32_t(*)[2])pairs};
    mdnl_stream *s = NULL;
    cr_assert_eq(mdnl_stream_create(ctx, &o, &s), MDNL_OK, "%s", mdnl_last_error());
    double(*r[3])[3];
    for (int t = 0; t < 3; ++t)
        cr_assert_eq(mdnl_host_alloc(ctx, 512 * sizeof *r[t], (void **)&r[t]), MDNL_OK);
    double h[3][3];
    for (int k = 0; k <= STREAM_FRAMES; ++k) {
        const int t = k % 3, tp = (k + 2) % 3;
        if (k < STREAM_FRAMES) {
            stream_positions(r[t], h, k);
            const mdnl_stream_frame fr = {{512, r[t], MDNL_FLOAT64, &h[0][0], {1, 1, 1}}, k, species, NULL, NULL};
            if (k % 2) /* prepared ahead, or by submit */
                cr_assert_eq(mdnl_stream_prepare(s, t, &fr, 0), MDNL_OK, "%s", mdnl_last_error());
            cr_assert_eq(mdnl_stream_submit(s, t, &fr), MDNL_OK, "frame %d: %s", k, mdnl_last_error());
        }
        if (k == 0)
            continue;
        /* frame k-1, on ticket tp, against the synchronous calls of a second context */
        mdnl_stream_result res;
        cr_assert_eq(mdnl_stream_collect(s, tp, &res), MDNL_OK, "frame %d: %s", k - 1, mdnl_last_error());
        static double ref_r[512][3];
        double ref_h[3][3];
        stream_positions(ref_r, ref_h, k - 1);
        cr_assert_eq(memcmp(ref_r, r[tp], sizeof ref_r), 0);
        const mdnl_system sys = {512, ref_r, MDNL_FLOAT64, &ref_h[0][0], {1, 1, 1}};
        mdnl_context *sync = context_for(*b, 0);
        mdnl_neighbor_list nl;
        cr_assert_eq(mdnl_neighbors(sync, &sys, rc, o.flags, &nl), MDNL_OK);
        cr_assert_eq(res.list.n, 512);
        cr_assert_eq(res.list.npairs, nl.npairs, "frame %d", k - 1);
        cr_assert_eq(memcmp(res.list.offsets, nl.offsets, 513 * sizeof *nl.offsets), 0);
        cr_assert_eq(memcmp(res.list.indices, nl.indices, (size_t)nl.npairs * sizeof *nl.indices), 0);
        cr_assert_eq(memcmp(res.list.distances, nl.distances, (size_t)nl.npairs * sizeof *nl.distances), 0);
        cr_assert_eq(memcmp(res.list.shifts, nl.shifts, (size_t)nl.npairs * 3 * sizeof *nl.shifts), 0);
        cr_assert_eq(memcmp(res.list.vectors, nl.vectors, (size_t)nl.npairs * 3 * sizeof *nl.vectors), 0);
        double total = 0;
        cr_assert_eq(mdnl_energy(sync, &sys, &lj, rc, &total, NULL), MDNL_OK);
        cr_assert_float_eq(res.energy, total, 1e-12 * fabs(total), "frame %d: %.17g, %.17g", k - 1, res.energy,
                           total);
        uint64_t counts[30];
        double volume = 0;
        cr_assert_eq(mdnl_histogram(sync, &sys, 3.0, 30, species, 1, (const int32_t(*)[2])pairs, counts, &volume),
                     MDNL_OK);
        cr_assert_eq(memcmp(res.counts, counts, sizeof counts), 0, "frame %d", k - 1);
        cr_assert_float_eq(res.volume, volume, 1e-12 * volume);
        cr_assert_eq(res.na[0], 171);
        cr_assert_eq(res.nb[0], 171);
        mdnl_context_free(sync);
    }
    cr_assert_str_eq(mdnl_stream_method(s), *b == MDNL_COMPUTE_CPU ? "cell" : mdnl_stream_method(s));
    mdnl_stream_free(s);
    for (int t = 0; t < 3; ++t)
        mdnl_host_free(ctx, r[t]);
    mdnl_context_free(ctx);
}

ParameterizedTestParameters(library, stream_error_of_frame_k_is_reported_for_frame_k)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, stream_error_of_frame_k_is_reported_for_frame_k)
{
    mdnl_context *ctx = context_for(*b, 0);
    const mdnl_stream_options o = {.tickets = 2, .source = "md.h5", .neighbors = 1, .flags = MDNL_NEIGHBORS_HALF,
                                   .cutoff = 2.5, .energy = 1, .params = {MDNL_PAIR_LJ, 1.0, 1.0, 0, 0, 0, 0}};
    mdnl_stream *s = NULL;
    cr_assert_eq(mdnl_stream_create(ctx, &o, &s), MDNL_OK, "%s", mdnl_last_error());
    static double r[4][512][3];
    double h[3][3];
    for (int k = 0; k < 4; ++k)
        stream_positions(r[k], h, k);
    r[2][7][1] = NAN; /* frame 2: atom 7 */
    /* submit k, collect k-1: the first failure is frame 2's, wherever the backend finds it (CPU: the host
     * wrap of its submit; CUDA: the device wrap, settled when it is collected) */
    int failed = -1, collected = 0;
    for (int k = 0; k < 4 && failed < 0; ++k) {
        const mdnl_stream_frame fr = {{512, r[k], MDNL_FLOAT64, &h[0][0], {1, 1, 1}}, 10 + k, NULL, NULL, NULL};
        mdnl_status st = mdnl_stream_submit(s, k % 2, &fr);
        if (st != MDNL_OK) {
            cr_assert_eq(st, MDNL_ERR_INPUT, "%s", mdnl_last_error());
            failed = k;
            cr_assert_str_eq(mdnl_last_error(), "md.h5: frame 12: atom 7 has a non-finite coordinate");
        }
        if (k > 0) {
            mdnl_stream_result res;
            st = mdnl_stream_collect(s, (k - 1) % 2, &res);
            if (st == MDNL_OK) {
                collected++;
                cr_assert_gt(res.list.npairs, 0);
            } else {
                cr_assert_eq(st, MDNL_ERR_INPUT);
                cr_assert_str_eq(mdnl_last_error(), "md.h5: frame 12: atom 7 has a non-finite coordinate");
                failed = k - 1;
            }
        }
    }
    cr_assert_eq(failed, 2, "the error belongs to frame 2, not to %d", failed);
    cr_assert_eq(collected, 2, "frames 0 and 1 are collected");
    mdnl_stream_free(s); /* with frame 3 possibly in flight */
    mdnl_context_free(ctx);
}

ParameterizedTestParameters(library, stream_prepare_keeps_its_verdict_and_tickets_are_checked)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, stream_prepare_keeps_its_verdict_and_tickets_are_checked)
{
    mdnl_context *ctx = context_for(*b, 0);
    const mdnl_stream_options o = {.neighbors = 1, .flags = MDNL_NEIGHBORS_FULL, .cutoff = 3.0};
    mdnl_stream *s = NULL;
    cr_assert_eq(mdnl_stream_create(ctx, &o, &s), MDNL_OK, "%s", mdnl_last_error());
    /* the stacked atoms of stacked_atoms_are_refused_naming_the_cell_and_the_option */
    double(*r)[3] = calloc(STACKED, sizeof *r);
    const mdnl_stream_frame bad = {{STACKED, r, MDNL_FLOAT64, stacked_cell, {1, 1, 1}}, 5, NULL, NULL, NULL};
    cr_assert_eq(mdnl_stream_check(s, &bad), MDNL_ERR_INPUT);
    char check_msg[1024];
    snprintf(check_msg, sizeof check_msg, "%s", mdnl_last_error());
    cr_assert(strstr(check_msg, "mdnl_stream_check: frame 5: 100000 of 100000 atoms are in one cell") == check_msg,
              "%s", check_msg);
    cr_assert(strstr(check_msg, "mdnl_context_options.max_pairs"), "%s", check_msg);
    cr_assert_eq(mdnl_stream_prepare(s, 0, &bad, 0), MDNL_ERR_INPUT);
    mdnl_clear_error();
    /* the verdict is the frame's: its submit reports it again, and the ticket is free after */
    cr_assert_eq(mdnl_stream_submit(s, 0, &bad), MDNL_ERR_INPUT);
    cr_assert_str_eq(strstr(mdnl_last_error(), ": ") + 2, strstr(check_msg, ": ") + 2);
    static double ok[512][3];
    double h[3][3];
    stream_positions(ok, h, 0);
    const mdnl_stream_frame good = {{512, ok, MDNL_FLOAT64, &h[0][0], {1, 1, 1}}, 6, NULL, NULL, NULL};
    mdnl_stream_result res;
    cr_assert_eq(mdnl_stream_collect(s, 0, &res), MDNL_ERR_USAGE, "a failed submit is nothing to collect");
    cr_assert(strstr(mdnl_last_error(), "mdnl_stream_collect: ticket 0 was not submitted"), "%s", mdnl_last_error());
    cr_assert_eq(mdnl_stream_submit(s, 0, &good), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_stream_submit(s, 0, &good), MDNL_ERR_USAGE, "ticket 0 is in flight");
    cr_assert_eq(mdnl_stream_prepare(s, 0, &good, 0), MDNL_ERR_USAGE, "ticket 0 is in flight");
    cr_assert_eq(mdnl_stream_submit(s, 2, &good), MDNL_ERR_USAGE, "two tickets by default");
    cr_assert(strstr(mdnl_last_error(), "ticket 2, expected 0..1"), "%s", mdnl_last_error());
    cr_assert_eq(mdnl_stream_collect(s, 0, &res), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_gt(res.list.npairs, 0);
    mdnl_stream_free(s);
    free(r);
    /* up to MDNL_STREAM_MAX_TICKETS tickets, MDNL_STREAM_MAX_SUBMITTED of them submitted at once */
    const mdnl_stream_options many = {.tickets = MDNL_STREAM_MAX_TICKETS, .neighbors = 1, .cutoff = 3.0};
    cr_assert_eq(mdnl_stream_create(ctx, &many, &s), MDNL_OK, "%s", mdnl_last_error());
    for (int t = 0; t < MDNL_STREAM_MAX_TICKETS; ++t)
        cr_assert_eq(mdnl_stream_prepare(s, t, &good, 0), MDNL_OK, "%s", mdnl_last_error());
    for (int t = 0; t < MDNL_STREAM_MAX_SUBMITTED; ++t)
        cr_assert_eq(mdnl_stream_submit(s, t, &good), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_stream_submit(s, MDNL_STREAM_MAX_SUBMITTED, &good), MDNL_ERR_USAGE);
    cr_assert(strstr(mdnl_last_error(), "submitted and not collected"), "%s", mdnl_last_error());
    /* collected in submit order: out of order, the next submit would take
     * the engine ticket of a frame still in flight */
    cr_assert_eq(mdnl_stream_collect(s, 1, &res), MDNL_ERR_USAGE);
    cr_assert(strstr(mdnl_last_error(),
                     "mdnl_stream_collect: ticket 1 was submitted after ticket 0: collect in submit order"),
              "%s", mdnl_last_error());
    for (int t = 0; t < MDNL_STREAM_MAX_SUBMITTED; ++t) {
        cr_assert_eq(mdnl_stream_collect(s, t, &res), MDNL_OK, "%s", mdnl_last_error());
        cr_assert_gt(res.list.npairs, 0);
    }
    cr_assert_eq(mdnl_stream_submit(s, MDNL_STREAM_MAX_TICKETS - 1, &good), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_stream_collect(s, MDNL_STREAM_MAX_TICKETS - 1, &res), MDNL_OK, "%s", mdnl_last_error());
    mdnl_stream_free(s);
    /* bad options name the field */
    const mdnl_stream_options bad_o = {.tickets = MDNL_STREAM_MAX_TICKETS + 1};
    cr_assert_eq(mdnl_stream_create(ctx, &bad_o, &s), MDNL_ERR_USAGE);
    cr_assert_null(s);
    cr_assert(strstr(mdnl_last_error(), "mdnl_stream_create: tickets = "), "%s", mdnl_last_error());
    const mdnl_stream_options no_cut = {.neighbors = 1};
    cr_assert_eq(mdnl_stream_create(ctx, &no_cut, &s), MDNL_ERR_USAGE);
    cr_assert(strstr(mdnl_last_error(), "cutoff"), "%s", mdnl_last_error());
    mdnl_context_free(ctx);
}

ParameterizedTestParameters(library, stream_energy_table_is_energy_types)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, stream_energy_table_is_energy_types)
{
    mdnl_context *ctx = context_for(*b, 0);
    const mdnl_pair_params p00 = {MDNL_PAIR_LJ, 1.0, 1.0, 0, 0, 0, 1}, p01 = {MDNL_PAIR_LJ, 1.5, 0.8, 0, 0, 0, 1},
                           p11 = {MDNL_PAIR_LJ, 0.5, 0.88, 0, 0, 0, 1};
    const mdnl_pair_params params[4] = {p00, p01, p01, p11};
    const double cutoffs[4] = {2.5, 2.0, 2.0, 2.2};
    const mdnl_stream_options o = {.tickets = 2, .energy = 1, .cutoff = 2.5, .ntypes = 2, .type_params = params,
                                   .type_cutoffs = cutoffs, .histogram = 1, .r_max = 2.0, .bins = 20};
    mdnl_stream *s = NULL;
    cr_assert_eq(mdnl_stream_create(ctx, &o, &s), MDNL_OK, "%s", mdnl_last_error());
    int32_t types[512];
    for (int i = 0; i < 512; ++i)
        types[i] = i % 5 == 0;
    static double r[2][512][3];
    double h[3][3];
    for (int k = 0; k < 2; ++k) {
        stream_positions(r[k], h, k);
        const mdnl_stream_frame fr = {{512, r[k], MDNL_FLOAT64, &h[0][0], {1, 1, 1}}, k, NULL, NULL, types};
        cr_assert_eq(mdnl_stream_submit(s, k, &fr), MDNL_OK, "%s", mdnl_last_error());
    }
    for (int k = 0; k < 2; ++k) {
        mdnl_stream_result res;
        cr_assert_eq(mdnl_stream_collect(s, k, &res), MDNL_OK, "%s", mdnl_last_error());
        const mdnl_system sys = {512, r[k], MDNL_FLOAT64, &h[0][0], {1, 1, 1}};
        double total = 0;
        uint64_t counts[20];
        cr_assert_eq(mdnl_energy_types(ctx, &sys, 2, params, cutoffs, types, &total, NULL), MDNL_OK);
        cr_assert_float_eq(res.energy, total, 1e-12 * fabs(total));
        cr_assert_eq(mdnl_histogram(ctx, &sys, 2.0, 20, NULL, 0, NULL, counts, NULL), MDNL_OK);
        cr_assert_eq(memcmp(res.counts, counts, sizeof counts), 0);
        cr_assert_null(res.list.offsets);
    }
    /* the table's largest cutoff is the stream's */
    mdnl_stream_free(s);
    mdnl_stream_options o2 = o;
    o2.cutoff = 3.0;
    cr_assert_eq(mdnl_stream_create(ctx, &o2, &s), MDNL_ERR_USAGE);
    mdnl_context_free(ctx);
}

/* A context made on a start-up thread (as mdnl run's, while it opens its input) serves a stream here. */
typedef struct start_arg {
    mdnl_compute backend;
    mdnl_context *ctx;
    mdnl_status st;
} start_arg;

static void *start_context(void *arg)
{
    start_arg *a = arg;
    const mdnl_context_options o = {a->backend, 0, 0, 0};
    a->st = mdnl_context_create(&o, &a->ctx);
    return NULL;
}

ParameterizedTestParameters(library, stream_on_a_context_made_on_another_thread)
{
    return cr_make_param_array(mdnl_compute, backends, sizeof backends / sizeof backends[0]);
}

ParameterizedTest(mdnl_compute *b, library, stream_on_a_context_made_on_another_thread)
{
    if (*b == MDNL_COMPUTE_CUDA && mdnl_cuda_devices() < 1)
        cr_skip_test("no CUDA device");
    cr_assert(mdnl_cuda_built() || mdnl_cuda_devices() == 0);
    start_arg a = {*b, NULL, MDNL_ERR_INTERNAL};
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, start_context, &a), 0);
    pthread_join(th, NULL);
    cr_assert_eq(a.st, MDNL_OK);
    const mdnl_stream_options o = {.neighbors = 1, .flags = MDNL_NEIGHBORS_HALF, .cutoff = 2.5};
    mdnl_stream *s = NULL;
    cr_assert_eq(mdnl_stream_create(a.ctx, &o, &s), MDNL_OK, "%s", mdnl_last_error());
    double(*r)[3] = NULL;
    cr_assert_eq(mdnl_host_alloc(a.ctx, 512 * sizeof *r, (void **)&r), MDNL_OK);
    double h[3][3];
    stream_positions(r, h, 1);
    const mdnl_stream_frame fr = {{512, r, MDNL_FLOAT64, &h[0][0], {1, 1, 1}}, 0, NULL, NULL, NULL};
    cr_assert_eq(mdnl_stream_submit(s, 0, &fr), MDNL_OK, "%s", mdnl_last_error());
    mdnl_stream_result res;
    cr_assert_eq(mdnl_stream_collect(s, 0, &res), MDNL_OK, "%s", mdnl_last_error());
    mdnl_neighbor_list nl;
    const mdnl_system sys = fr.system;
    cr_assert_eq(mdnl_neighbors(a.ctx, &sys, 2.5, MDNL_NEIGHBORS_HALF, &nl), MDNL_OK);
    cr_assert_eq(res.list.npairs, nl.npairs);
    mdnl_stream_free(s);
    mdnl_host_free(a.ctx, r);
    mdnl_context_free(a.ctx);
}

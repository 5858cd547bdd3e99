/* test_coord.c — coordination numbers (coord.h, mdnl coord): the CPU twin
 * against ASE and freud (data/coord/, tools/coord_reference.py), against the
 * full neighbor list's row lengths and a brute-force count in every kind of
 * box; the command's TSV, histogram and HDF5 outputs through the binary. */
#define _POSIX_C_SOURCE 200809L
#include "coord.h"
#include "coord_fixtures.h"
#include "energy_fixtures.h" /* fixture_load, fixture_prepare */
#include "nlist.h"
#include "rdf_test_util.h"   /* rdf_random */

#include <hdf5.h>

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_test_util.h"

static int32_t ref[4 * 1024];

/* Counts of the KA fixture at `cutoff`, total and (A-B, B-A, B-B). */
static void ka_counts(double cutoff, int32_t *total, int32_t *pairs, mdnl_frame *f)
{
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(f, cutoff, &pos4);
    cr_assert_eq(mdnl_coord_frame_cpu(&g, (const float(*)[4])pos4, f->species, 0, NULL, NULL, total), MDNL_OK);
    const int32_t a = 0, b = 1; /* A first, then B (fixture_load's order of appearance) */
    cr_assert(strcmp(f->symbols[0], "A") == 0 || strcmp(f->symbols[0], "B") == 0);
    const int32_t A = strcmp(f->symbols[0], "A") == 0 ? a : b, B = A == a ? b : a;
    const int32_t cols[3][2] = {{A, B}, {B, A}, {B, B}};
    if (pairs)
        cr_assert_eq(mdnl_coord_frame_cpu(&g, (const float(*)[4])pos4, f->species, 3, cols, NULL, pairs), MDNL_OK);
    free(pos4);
}

Test(coord_cpu, ka_mixture_matches_ase_and_freud)
{
    mdnl_frame f = fixture_load("ka_mixture");
    int32_t *total = malloc((size_t)f.natoms * sizeof *total), *pairs = malloc((size_t)f.natoms * 3 * sizeof *pairs);
    int nc = 0;
    int64_t n = coord_reference("ka-1.5", ref, 4 * 1024, &nc);
    cr_assert_eq(n, f.natoms);
    cr_assert_eq(nc, 4);
    ka_counts(1.5, total, pairs, &f);
    for (int64_t i = 0; i < n; ++i) {
        cr_expect_eq(total[i], ref[i * 4], "atom %lld: mdnl %d, ASE %d", (long long)i, total[i], ref[i * 4]);
        for (int p = 0; p < 3; ++p)
            cr_expect_eq(pairs[i * 3 + p], ref[i * 4 + 1 + p], "atom %lld column %d", (long long)i, p);
    }
    /* a cutoff beyond half the box: images count */
    n = coord_reference("ka-3.7", ref, 4 * 1024, &nc);
    ka_counts(3.7, total, NULL, &f);
    for (int64_t i = 0; i < n; ++i)
        cr_expect_eq(total[i], ref[i * 4], "3.7: atom %lld: mdnl %d, ASE %d", (long long)i, total[i], ref[i * 4]);
    free(total), free(pairs);
    mdnl_frame_free(&f);
}

Test(coord_cpu, counts_are_the_full_list_rows_and_the_brute_force_count)
{
    for (int kind = 0; kind < 4; ++kind) {
        mdnl_frame f;
        rdf_random(&f, 700, kind, 8.0, 0);
        float(*pos4)[4];
        mdnl_geom g = fixture_prepare(&f, 2.2, &pos4);
        const float(*cp)[4] = (const float(*)[4])pos4;
        int32_t *c = malloc((size_t)f.natoms * sizeof *c), *b = malloc((size_t)f.natoms * sizeof *b);
        int32_t *cab = malloc((size_t)f.natoms * 2 * sizeof *cab);
        cr_assert_eq(mdnl_coord_frame_cpu(&g, cp, f.species, 0, NULL, NULL, c), MDNL_OK);
        coord_brute(&g, cp, b);
        mdnl_nlist full = {0};
        cr_assert_eq(mdnl_nlist_build_cpu(&g, cp, MDNL_METHOD_CELL, MDNL_LIST_FULL, &full), MDNL_OK);
        const int32_t cols[2][2] = {{0, 1}, {1, 1}};
        cr_assert_eq(mdnl_coord_frame_cpu(&g, cp, f.species, 2, cols, NULL, cab), MDNL_OK);
        for (int64_t i = 0; i < f.natoms; ++i) {
            cr_expect_eq(c[i], b[i], "box %d atom %lld: cells %d brute %d", kind, (long long)i, c[i], b[i]);
            cr_expect_eq(c[i], full.offsets[i + 1] - full.offsets[i], "box %d atom %lld: the full row", kind,
                         (long long)i);
            int32_t want[2] = {0, 0};
            for (int64_t k = full.offsets[i]; k < full.offsets[i + 1]; ++k)
                for (int p = 0; p < 2; ++p)
                    want[p] += f.species[i] == cols[p][0] && f.species[full.j[k]] == cols[p][1];
            cr_expect(cab[i * 2] == want[0] && cab[i * 2 + 1] == want[1], "box %d atom %lld: pairs %d %d, list %d %d",
                      kind, (long long)i, cab[i * 2], cab[i * 2 + 1], want[0], want[1]);
        }
        mdnl_nlist_free(&full);
        free(c), free(b), free(cab), free(pos4);
        mdnl_frame_free(&f);
    }
}

Test(coord_cpu, too_many_columns_is_a_usage_error)
{
    mdnl_frame f = fixture_load("ka_mixture");
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, 1.5, &pos4);
    int32_t cols[MDNL_COORD_MAX_COLS + 1][2] = {{0}};
    int32_t *c = malloc((size_t)f.natoms * (MDNL_COORD_MAX_COLS + 1) * sizeof *c);
    cr_expect_eq(mdnl_coord_frame_cpu(&g, (const float(*)[4])pos4, f.species, MDNL_COORD_MAX_COLS + 1,
                                      (const int32_t(*)[2])cols, NULL, c),
                 MDNL_ERR_USAGE);
    free(c), free(pos4);
    mdnl_frame_free(&f);
}

/* ---- the command ---- */

/* Per-pair cutoffs by species id (types = species): cut[a][b]. */
static mdnl_coord_cuts species_cuts(const mdnl_frame *f, const double cut[2][2])
{
    mdnl_coord_cuts c;
    memset(&c, 0, sizeof c);
    c.ntypes = 2;
    c.types = f->species;
    for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b)
            c.cut2[a * 2 + b] = (float)(cut[a][b] * cut[a][b]);
    return c;
}

/* --pair-cut's counts on the KA fixture: ASE's cutoff dict and freud
 * (data/coord/ka-pair-cut.tsv), total and the three columns. */
Test(coord_cpu, pair_cuts_match_ase_and_freud)
{
    mdnl_frame f = fixture_load("ka_mixture");
    const int32_t A = strcmp(f.symbols[0], "A") == 0 ? 0 : 1, B = 1 - A;
    double cut[2][2];
    cut[A][A] = 1.5, cut[A][B] = cut[B][A] = 1.3, cut[B][B] = 1.1;
    const mdnl_coord_cuts cuts = species_cuts(&f, (const double(*)[2])cut);
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, 1.5, &pos4);
    int32_t *total = malloc((size_t)f.natoms * sizeof *total), *pairs = malloc((size_t)f.natoms * 3 * sizeof *pairs);
    const int32_t cols[3][2] = {{A, B}, {B, A}, {B, B}};
    cr_assert_eq(mdnl_coord_frame_cpu(&g, (const float(*)[4])pos4, f.species, 0, NULL, &cuts, total), MDNL_OK);
    cr_assert_eq(mdnl_coord_frame_cpu(&g, (const float(*)[4])pos4, f.species, 3, cols, &cuts, pairs), MDNL_OK);
    int nc = 0;
    const int64_t n = coord_reference("ka-pair-cut", ref, 4 * 1024, &nc);
    cr_assert_eq(n, f.natoms);
    cr_assert_eq(nc, 4);
    for (int64_t i = 0; i < n; ++i) {
        cr_expect_eq(total[i], ref[i * 4], "atom %lld: mdnl %d, ASE %d", (long long)i, total[i], ref[i * 4]);
        for (int p = 0; p < 3; ++p)
            cr_expect_eq(pairs[i * 3 + p], ref[i * 4 + 1 + p], "atom %lld column %d", (long long)i, p);
    }
    free(total), free(pairs), free(pos4);
    mdnl_frame_free(&f);
}

/* Per-pair cutoffs count what the full neighbor lists at each pair's own
 * cutoff hold for that pair, in every kind of box (the traversal runs at the
 * largest; a cutoff of 0 counts nothing). */
Test(coord_cpu, pair_cuts_are_the_full_list_rows_at_each_pairs_cutoff)
{
    const double sets[2][2][2] = {{{2.2, 1.7}, {1.7, 1.3}}, {{0.0, 2.4}, {2.4, 0.0}}};
    for (int kind = 0; kind < 4; ++kind)
        for (int set = 0; set < 2; ++set) {
            mdnl_frame f;
            rdf_random(&f, 700, kind, 8.0, 0);
            cr_assert_eq(f.nspecies, 2);
            const mdnl_coord_cuts cuts = species_cuts(&f, sets[set]);
            double rmax = 0;
            for (int k = 0; k < 4; ++k)
                rmax = sets[set][k / 2][k % 2] > rmax ? sets[set][k / 2][k % 2] : rmax;
            float(*pos4)[4];
            mdnl_geom g = fixture_prepare(&f, rmax, &pos4);
            int32_t *c = malloc((size_t)f.natoms * sizeof *c), *want = calloc((size_t)f.natoms, sizeof *want);
            cr_assert_eq(mdnl_coord_frame_cpu(&g, (const float(*)[4])pos4, f.species, 0, NULL, &cuts, c), MDNL_OK);
            for (int a = 0; a < 2; ++a)
                for (int b = 0; b < 2; ++b) {
                    if (sets[set][a][b] <= 0)
                        continue;
                    float(*p2)[4];
                    mdnl_geom g2 = fixture_prepare(&f, sets[set][a][b], &p2);
                    mdnl_nlist full = {0};
                    cr_assert_eq(mdnl_nlist_build_cpu(&g2, (const float(*)[4])p2, MDNL_METHOD_CELL, MDNL_LIST_FULL,
                                                      &full),
                                 MDNL_OK);
                    for (int64_t i = 0; i < f.natoms; ++i)
                        if (f.species[i] == a)
                            for (int64_t e = full.offsets[i]; e < full.offsets[i + 1]; ++e)
                                want[i] += f.species[full.j[e]] == b;
                    mdnl_nlist_free(&full);
                    free(p2);
                }
            for (int64_t i = 0; i < f.natoms; ++i)
                cr_expect_eq(c[i], want[i], "box %d set %d atom %lld: coord %d, lists %d", kind, set, (long long)i,
                             c[i], want[i]);
            free(c), free(want), free(pos4);
            mdnl_frame_free(&f);
        }
}

TestSuite(coord_cli, .init = make_tmpdir, .fini = remove_tmpdir);

/* --pair-cut through the binary: the reference's table; -c for the pairs
 * not named, none without it; bad specs and absent species refused. */
Test(coord_cli, pair_cut_counts_each_pair_at_its_cutoff)
{
    cr_assert_eq(mdnl("coord %s/energy/ka_mixture.xyz --pair-cut A-A=1.5,B-A=1.3,B-B=1.1 --pairs A-B,B-A,B-B "
                      "-o c.tsv --json",
                      MDNL_DATA_DIR),
                 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"cutoff\":1.5") != NULL, "%s", out_text);
    char path[512];
    snprintf(path, sizeof path, "%s/c.tsv", tmpdir);
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp);
    int nc = 0;
    const int64_t n = coord_reference("ka-pair-cut", ref, 4 * 1024, &nc);
    char line[256];
    cr_assert_not_null(fgets(line, sizeof line, fp));
    cr_expect_str_eq(line, "# frame\ti\tcount:A-B\tcount:B-A\tcount:B-B\n");
    for (int64_t i = 0; i < n; ++i) {
        long long fr, k;
        int v[3];
        cr_assert_eq(fscanf(fp, "%lld %lld %d %d %d", &fr, &k, &v[0], &v[1], &v[2]), 5);
        for (int p = 0; p < 3; ++p)
            cr_expect_eq(v[p], ref[i * 4 + 1 + p], "atom %lld column %d", (long long)i, p);
    }
    fclose(fp);
    /* -c for the pairs not named: A-A and B-B at 1.5 as the one cutoff gives */
    cr_assert_eq(mdnl("coord %s/energy/ka_mixture.xyz -c 1.5 --pair-cut A-B=1.5 -o d.tsv", MDNL_DATA_DIR), 0, "%s",
                 err_text);
    cr_assert_eq(mdnl("coord %s/energy/ka_mixture.xyz -c 1.5 -o e.tsv", MDNL_DATA_DIR), 0, "%s", err_text);
    char d[65536], e[65536];
    snprintf(path, sizeof path, "%s/d.tsv", tmpdir);
    slurp(path, d, sizeof d);
    snprintf(path, sizeof path, "%s/e.tsv", tmpdir);
    slurp(path, e, sizeof e);
    cr_expect_str_eq(d, e);
    /* without -c a pair not named has no neighbors: A-B alone is the A-B and B-A columns */
    cr_assert_eq(mdnl("coord %s/energy/ka_mixture.xyz --pair-cut A-B=1.3 -o f.tsv", MDNL_DATA_DIR), 0, "%s",
                 err_text);
    cr_assert_eq(mdnl("coord %s/energy/ka_mixture.xyz -c 1.3 --pairs A-B,B-A -o g.tsv", MDNL_DATA_DIR), 0, "%s",
                 err_text);
    snprintf(path, sizeof path, "%s/f.tsv", tmpdir);
    FILE *ff = fopen(path, "r");
    snprintf(path, sizeof path, "%s/g.tsv", tmpdir);
    FILE *fg = fopen(path, "r");
    cr_assert(ff && fg);
    cr_assert_not_null(fgets(line, sizeof line, ff));
    cr_assert_not_null(fgets(line, sizeof line, fg));
    for (int64_t i = 0; i < n; ++i) {
        long long a, b, c, x, y;
        int t, u, w;
        cr_assert_eq(fscanf(ff, "%lld %lld %d", &a, &b, &t), 3);
        cr_assert_eq(fscanf(fg, "%lld %lld %d %d", &x, &y, &u, &w), 4);
        c = u + w;
        cr_expect_eq(t, c, "atom %lld: %d A-B neighbors, the columns say %lld", (long long)i, t, c);
    }
    fclose(ff), fclose(fg);
    cr_expect_eq(mdnl("coord %s/energy/ka_mixture.xyz --pair-cut A-C=1.2 -o h.tsv", MDNL_DATA_DIR), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "--pair-cut A-C") != NULL, "%s", err_text);
    snprintf(path, sizeof path, "%s/h.tsv", tmpdir);
    cr_expect_eq(access(path, F_OK), -1, "no output after an input error");
    const char *bad[] = {"A-B", "A-B=0", "A-B=-1", "A-B=x", "A-B=1,", "=1", "A-B=1,B-A=2", "AB=1", "A-B=nan",
                         "A-B=1,C-D=1,E-F=1,G-H=1", "A-B=1e999"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; ++k) {
        cr_expect_eq(mdnl("coord %s/energy/ka_mixture.xyz --pair-cut '%s'", MDNL_DATA_DIR, bad[k]), 2, "%s", bad[k]);
        expect_one_error_line();
    }
}

Test(coord_cli, tsv_histogram_and_hdf5_agree_with_the_reference)
{
    cr_assert_eq(mdnl("coord %s/energy/ka_mixture.xyz -c 1.5 --pairs A-B,B-A,B-B -o c.tsv --histogram h.tsv",
                      MDNL_DATA_DIR),
                 0, "%s", err_text);
    int nc = 0;
    const int64_t n = coord_reference("ka-1.5", ref, 4 * 1024, &nc);
    char p[512];
    snprintf(p, sizeof p, "%s/c.tsv", tmpdir);
    FILE *fp = fopen(p, "r");
    cr_assert_not_null(fp);
    char line[256];
    cr_assert(fgets(line, sizeof line, fp));
    cr_expect_str_eq(line, "# frame\ti\tcount:A-B\tcount:B-A\tcount:B-B\n");
    int64_t hist_a[64] = {0}, rows = 0;
    for (int64_t i = 0; i < n; ++i) {
        long long fr, ii;
        int v[3];
        cr_assert(fgets(line, sizeof line, fp) && sscanf(line, "%lld %lld %d %d %d", &fr, &ii, &v[0], &v[1], &v[2]) == 5);
        cr_expect(fr == 0 && ii == i);
        for (int q = 0; q < 3; ++q)
            cr_expect_eq(v[q], ref[i * 4 + 1 + q], "atom %lld column %d", (long long)i, q);
        rows++;
    }
    fclose(fp);
    cr_expect_eq(rows, n);
    /* the A-B histogram counts the A atoms alone */
    mdnl_frame f = fixture_load("ka_mixture");
    int64_t na = 0;
    for (int64_t i = 0; i < f.natoms; ++i)
        if (strcmp(f.symbols[f.species[i]], "A") == 0) {
            hist_a[ref[i * 4 + 1]]++;
            na++;
        }
    mdnl_frame_free(&f);
    snprintf(p, sizeof p, "%s/h.tsv", tmpdir);
    fp = fopen(p, "r");
    cr_assert_not_null(fp);
    cr_assert(fgets(line, sizeof line, fp));
    cr_expect_str_eq(line, "# count\tatoms:A-B\tatoms:B-A\tatoms:B-B\n");
    int64_t sum = 0;
    for (long long c = 0; fgets(line, sizeof line, fp); ++c) {
        long long cc, a, b, d;
        cr_assert_eq(sscanf(line, "%lld %lld %lld %lld", &cc, &a, &b, &d), 4);
        cr_expect_eq(cc, c);
        cr_expect_eq(a, c < 64 ? hist_a[c] : 0, "A-B histogram at %lld", c);
        sum += a;
    }
    fclose(fp);
    cr_expect_eq(sum, na, "every A atom once");

    /* HDF5: /coordination/total/value is the total column */
    cr_assert_eq(mdnl("coord %s/energy/ka_mixture.xyz -c 1.5 -o c.h5", MDNL_DATA_DIR), 0, "%s", err_text);
    snprintf(p, sizeof p, "%s/c.h5", tmpdir);
    hid_t h = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(h, 0);
    static int32_t v[1024];
    hid_t d = H5Dopen2(h, "/coordination/total/value", H5P_DEFAULT);
    cr_assert_geq(d, 0);
    hsize_t dims[2];
    hid_t s = H5Dget_space(d);
    cr_expect_eq(H5Sget_simple_extent_ndims(s), 2);
    H5Sget_simple_extent_dims(s, dims, NULL);
    cr_expect(dims[0] == 1 && (int64_t)dims[1] == n);
    cr_assert_geq(H5Dread(d, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v), 0);
    for (int64_t i = 0; i < n; ++i)
        cr_expect_eq(v[i], ref[i * 4]);
    H5Sclose(s), H5Dclose(d);
    static int64_t hist[1024];
    d = H5Dopen2(h, "/coordination/total/histogram", H5P_DEFAULT);
    cr_assert_geq(d, 0);
    cr_assert_geq(H5Dread(d, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, hist), 0);
    int64_t atoms = 0;
    for (int c = 0; c <= 18; ++c)
        atoms += hist[c];
    cr_expect_eq(atoms, n);
    H5Dclose(d), H5Fclose(h);
}

Test(coord_cli, bad_input_gives_one_error_line)
{
    cr_expect_eq(mdnl("coord %s/energy/ka_mixture.xyz -c 1.5 --pairs A-C -o c.tsv", MDNL_DATA_DIR), 3);
    expect_one_error_line();
    char p[512];
    snprintf(p, sizeof p, "%s/c.tsv", tmpdir);
    cr_expect_eq(access(p, F_OK), -1, "no output after an input error");
    cr_expect_eq(mdnl("coord %s/energy/ka_mixture.xyz --pairs A-B", MDNL_DATA_DIR), 2);
    expect_one_error_line();
    cr_expect_eq(mdnl("coord %s/energy/ka_mixture.xyz -c 1.5 -o c.h5 --histogram h.tsv", MDNL_DATA_DIR), 2);
    expect_one_error_line();
    cr_expect_eq(mdnl("coord %s/energy/ka_mixture.xyz -c 1.5 --pairs A-A,A-A,A-A,A-A,A-A,A-A,A-A,A-A,A-A",
                      MDNL_DATA_DIR),
                 2);
    expect_one_error_line();
}

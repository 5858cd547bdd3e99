/* test_cli.c — the mdnl command as a user runs it: exit codes (SPEC §7), the
 * one-line error format, no partial output after a failure, the TSV tables
 * and JSON summaries. Runs the built binary (MDNL_BINARY) in a shell. */
#define _POSIX_C_SOURCE 200809L
#include "device.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_test_util.h"


TestSuite(cli, .init = make_tmpdir, .fini = remove_tmpdir);

Test(cli, version_prints_and_exits_0)
{
    cr_expect_eq(mdnl("--version"), 0);
    cr_expect(strncmp(out_text, "mdnl ", 5) == 0, "%s", out_text);
}

Test(cli, help_on_every_subcommand_exits_0)
{
    const char *cmds[] = {"neighbors", "energy", "coord", "rdf", "info", "gen", "convert", "bench"};
    for (unsigned k = 0; k < sizeof cmds / sizeof *cmds; ++k) {
        cr_expect_eq(mdnl("%s --help", cmds[k]), 0, "%s --help", cmds[k]);
        cr_expect(strstr(out_text, "usage: mdnl") != NULL, "%s --help: %s", cmds[k], out_text);
    }
}

Test(cli, usage_errors_exit_2)
{
    write_file("a.xyz", "1\n\nC 0 0 0\n");
    const char *bad[] = {
        "frobnicate a.xyz",
        "neighbors a.xyz",                 /* no cutoff */
        "neighbors a.xyz -c nan",          /* NaN value */
        "neighbors a.xyz -c -1",           /* out of range */
        "neighbors a.xyz -c 2 --list some",
        "neighbors a.xyz -c 2 --method fast",
        "neighbors a.xyz -c 2 --bogus",
        "neighbors a.xyz -c 2 --frames 0:5:0",
        "neighbors a.xyz -c 2 --box 1,2",
        "neighbors a.xyz -c 2 --box 1,0,0,2,0,0,0,0,1",
        "neighbors a.xyz -c",
        "gen graphene --nx 0 --ny 2 -o g.xyz",
        "gen graphene --nx 2 --ny 2 --bond inf -o g.xyz",
    };
    for (unsigned k = 0; k < sizeof bad / sizeof *bad; ++k) {
        cr_expect_eq(mdnl("%s", bad[k]), 2, "mdnl %s: %s", bad[k], err_text);
        expect_one_error_line();
    }
}

Test(cli, missing_file_and_directory_exit_3_naming_the_path)
{
    cr_expect_eq(mdnl("neighbors nothing-here.xyz -c 2"), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "nothing-here.xyz") != NULL, "%s", err_text);
    cr_expect_eq(mdnl("neighbors . -c 2"), 3);
    expect_one_error_line();
    cr_expect_eq(mdnl("info ."), 3);
}

Test(cli, malformed_input_exits_3_with_file_and_line_and_leaves_no_output)
{
    /* frame 1 is broken on line 7 (the second atom of that frame) */
    write_file("bad.xyz", "2\nframe 0\nC 0 0 0\nC 1 0 0\n2\nframe 1\nC 0 0 0\nC 1 zero 0\n");
    cr_expect_eq(mdnl("neighbors bad.xyz -c 2 -o out.tsv"), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "bad.xyz:8") != NULL, "expected bad.xyz:8 in: %s", err_text);
    cr_expect_eq(dir_entries(), 1, "only bad.xyz may remain; a partial or temporary output was left");
    write_file("huge.xyz", "1000000000000000\n\nC 0 0 0\n");
    cr_expect_eq(mdnl("neighbors huge.xyz -c 2 -o out.tsv"), 3, "%s", err_text);
    expect_one_error_line();
    write_file("nan.xyz", "1\n\nC nan 0 0\n");
    cr_expect_eq(mdnl("neighbors nan.xyz -c 2"), 3, "%s", err_text);
    cr_expect(strstr(err_text, "nan.xyz:3") != NULL, "%s", err_text);
}

Test(cli, backend_cuda_without_device_exits_4)
{
    if (mdnl_cuda_device_count() > 0)
        cr_skip_test("a CUDA device is present: --backend cuda works here");
    write_file("a.xyz", "1\n\nC 0 0 0\n");
    cr_expect_eq(mdnl("neighbors a.xyz -c 2 --backend cuda"), 4, "%s", err_text);
    expect_one_error_line();
    cr_expect(strstr(err_text, "CUDA") != NULL, "%s", err_text);
}

Test(cli, gen_graphene_then_neighbors_gives_three_bonds_per_atom)
{
    cr_assert_eq(mdnl("gen graphene --nx 6 --ny 4 -o g.extxyz"), 0, "%s", err_text);
    cr_assert_eq(mdnl("neighbors g.extxyz -c 1.6 --list full -o nl.tsv"), 0, "%s", err_text);
    char p[512];
    snprintf(p, sizeof p, "%s/nl.tsv", tmpdir);
    static char table[1 << 20];
    slurp(p, table, sizeof table);
    cr_expect(strncmp(table, "# frame\ti\tj\tdistance\n", 21) == 0, "header: %.40s", table);
    cr_expect_eq(count_lines(table), 1 + 96 * 3, "96 atoms x 3 bonds + header, got %d lines", count_lines(table));
    cr_expect(strstr(table, "0\t0\t1\t1.41999996\n") != NULL || strstr(table, "\t1.42000") != NULL,
              "bond length 1.42 missing");
    /* the half list holds each bond once */
    cr_assert_eq(mdnl("neighbors g.extxyz -c 1.6 --json -o half.tsv"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"pairs\":144") != NULL, "96 * 3 / 2 = 144 pairs: %s", out_text);
    cr_expect(strstr(out_text, "\"command\":\"neighbors\"") != NULL, "%s", out_text);
}

Test(cli, frames_selection_keeps_original_frame_index)
{
    write_file("t.xyz", "2\n\nC 0 0 0\nC 1 0 0\n"
                        "2\n\nC 0 0 0\nC 3 0 0\n"
                        "2\n\nC 0 0 0\nC 1.5 0 0\n"
                        "2\n\nC 0 0 0\nC 0.5 0 0\n");
    cr_assert_eq(mdnl("neighbors t.xyz -c 2 --frames 1::2"), 0, "%s", err_text);
    cr_expect_str_eq(out_text, "# frame\ti\tj\tdistance\n3\t0\t1\t0.5\n");
    cr_assert_eq(mdnl("neighbors t.xyz -c 2 --frames -2:"), 0, "%s", err_text);
    cr_expect_str_eq(out_text, "# frame\ti\tj\tdistance\n2\t0\t1\t1.5\n3\t0\t1\t0.5\n");
    cr_assert_eq(mdnl("neighbors t.xyz -c 2 --frames 0"), 0, "%s", err_text);
    cr_expect_str_eq(out_text, "# frame\ti\tj\tdistance\n0\t0\t1\t1\n");
}

Test(cli, box_override_makes_open_frame_periodic)
{
    write_file("p.xyz", "2\n\nC 0.5 0 0\nC 9.5 0 0\n");
    cr_assert_eq(mdnl("neighbors p.xyz -c 2"), 0, "%s", err_text);
    cr_expect_str_eq(out_text, "# frame\ti\tj\tdistance\n", "open: 9 apart, no pair");
    cr_assert_eq(mdnl("neighbors p.xyz -c 2 --box 10,10,10"), 0, "%s", err_text);
    cr_expect_str_eq(out_text, "# frame\ti\tj\tdistance\n0\t0\t1\t1\n");
    cr_assert_eq(mdnl("neighbors p.xyz -c 2 --box 10,10,10 --no-pbc"), 0, "%s", err_text);
    cr_expect_str_eq(out_text, "# frame\ti\tj\tdistance\n");
}

Test(cli, info_json_has_the_contract_keys)
{
    write_file("x.extxyz", "3\nLattice=\"4 0 0 0 5 0 0 0 6\" pbc=\"T T F\"\nC 0 0 0\nH 1 0 0\nH 0 1 0\n");
    cr_assert_eq(mdnl("info x.extxyz --json"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"natoms\":3") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "\"nframes\":1") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "\"species\":{\"C\":1,\"H\":2}") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "\"box\":[[4,0,0],[0,5,0],[0,0,6]]") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "\"pbc\":[true,true,false]") != NULL, "%s", out_text);
}

Test(cli, zero_atom_frame_is_valid_and_empty)
{
    write_file("z.xyz", "0\nempty\n");
    cr_expect_eq(mdnl("neighbors z.xyz -c 2"), 0, "%s", err_text);
    cr_expect_str_eq(out_text, "# frame\ti\tj\tdistance\n");
}

Test(cli, h5md_and_extxyz_of_the_same_frames_give_the_same_neighbors)
{
    /* box_td33: 4 frames, triclinic cell changing per frame, written by
     * tools/make_h5md_fixtures.py in both formats */
    cr_assert_eq(mdnl("neighbors %s/h5md/box_td33.h5md -c 2.5 --list full -o a.tsv", MDNL_DATA_DIR), 0, "%s",
                 err_text);
    cr_assert_eq(mdnl("neighbors %s/h5md/box_td33.extxyz -c 2.5 --list full -o b.tsv", MDNL_DATA_DIR), 0, "%s",
                 err_text);
    static char a[1 << 20], b[1 << 20];
    char p[512];
    snprintf(p, sizeof p, "%s/a.tsv", tmpdir);
    slurp(p, a, sizeof a);
    snprintf(p, sizeof p, "%s/b.tsv", tmpdir);
    slurp(p, b, sizeof b);
    cr_expect(count_lines(a) > 4, "some pairs expected, got %d lines", count_lines(a));
    cr_expect_str_eq(a, b);
}

Test(cli, convert_round_trips_xyz_h5md_xyz)
{
    cr_assert_eq(mdnl("convert %s/graphene-noisy.extxyz g.h5", MDNL_DATA_DIR), 0, "%s", err_text);
    cr_assert_eq(mdnl("convert g.h5 g.extxyz"), 0, "%s", err_text);
    cr_assert_eq(mdnl("neighbors g.extxyz -c 1.9 -o a.tsv"), 0, "%s", err_text);
    cr_assert_eq(mdnl("neighbors %s/graphene-noisy.extxyz -c 1.9 -o b.tsv", MDNL_DATA_DIR), 0, "%s", err_text);
    static char a[1 << 20], b[1 << 20];
    char p[512];
    snprintf(p, sizeof p, "%s/a.tsv", tmpdir);
    slurp(p, a, sizeof a);
    snprintf(p, sizeof p, "%s/b.tsv", tmpdir);
    slurp(p, b, sizeof b);
    cr_expect_eq(count_lines(a), 1 + 1728, "1152 atoms x 3 / 2 bonds");
    cr_expect_str_eq(a, b);
    cr_assert_eq(mdnl("info g.h5 --json"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"format\":\"h5md\"") && strstr(out_text, "\"natoms\":1152"), "%s", out_text);
}

Test(cli, neighbors_to_hdf5_writes_one_csr_per_frame_and_nothing_on_failure)
{
    cr_assert_eq(mdnl("neighbors %s/h5md/box_td33.h5md -c 2.5 -o nb.h5 --json", MDNL_DATA_DIR), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"frames\":4") != NULL, "%s", out_text);
    char p[512];
    snprintf(p, sizeof p, "%s/nb.h5", tmpdir);
    cr_expect_eq(access(p, R_OK), 0, "nb.h5 missing");
    write_file("bad.xyz", "1\n\nC 0 0 0\n2\n\nC 0 0 0\nC x 0 0\n");
    cr_expect_eq(mdnl("neighbors bad.xyz -c 2 -o out.h5"), 3, "%s", err_text);
    snprintf(p, sizeof p, "%s/out.h5", tmpdir);
    cr_expect_neq(access(p, F_OK), 0, "a failed run left out.h5");
    cr_expect_eq(dir_entries(), 2, "only nb.h5 and bad.xyz may remain");
}

/* Two atoms in a cube of 4, the second given 1.0 cells beyond it (x = 7):
 * wrapped, x = 3, and the pair is 1.5 apart across the x boundary. Relative
 * to the given positions D = r_1 - r_0 + S·h = (7 - 0.5 + 4 S_x, 0, 0) =
 * (-1.5, 0, 0) needs S = (-2, 0, 0); the reverse entry has the opposite S
 * and D. */
static const char *const two_atoms = "2\nLattice=\"4 0 0 0 4 0 0 0 4\" Properties=species:S:1:pos:R:3\n"
                                      "C 0.5 0 0\nC 7 0 0\n";

Test(cli, neighbors_with_shift_vector_gives_S_and_D_of_the_positions_as_given)
{
    write_file("two.extxyz", two_atoms);
    cr_assert_eq(mdnl("neighbors two.extxyz -c 1.6 --with shift,vector -q"), 0, "%s", err_text);
    cr_expect_str_eq(out_text, "# frame\ti\tj\tdistance\tS0\tS1\tS2\tDx\tDy\tDz\n"
                               "0\t0\t1\t1.5\t-2\t0\t0\t-1.5\t0\t0\n");
    cr_assert_eq(mdnl("neighbors two.extxyz -c 1.6 --with vector,shift --list full -q"), 0, "%s", err_text);
    cr_expect_str_eq(out_text, "# frame\ti\tj\tdistance\tS0\tS1\tS2\tDx\tDy\tDz\n"
                               "0\t0\t1\t1.5\t-2\t0\t0\t-1.5\t0\t0\n"
                               "0\t1\t0\t1.5\t2\t0\t0\t1.5\t0\t0\n");
    cr_assert_eq(mdnl("neighbors two.extxyz -c 1.6 --with shift -q"), 0, "%s", err_text);
    cr_expect_str_eq(out_text, "# frame\ti\tj\tdistance\tS0\tS1\tS2\n0\t0\t1\t1.5\t-2\t0\t0\n");
    cr_assert_eq(mdnl("neighbors two.extxyz -c 1.6 --with vector -q"), 0, "%s", err_text);
    cr_expect_str_eq(out_text, "# frame\ti\tj\tdistance\tDx\tDy\tDz\n0\t0\t1\t1.5\t-1.5\t0\t0\n");
}

/* The n x 3 rows of /neighbors/NAME of the file tmpdir/name, read as
 * `memtype` into buf; returns the rows (-1 when it cannot be read) and
 * whether the dataset is chunked with the deflate filter. */
static long long read_rows3(const char *name, const char *ds, hid_t memtype, void *buf, size_t cap_rows, int *deflate)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* a missing dataset is an answer here, not an error to print */
    hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0)
        return -1;
    hid_t d = H5Dopen2(f, ds, H5P_DEFAULT);
    hid_t sp = d < 0 ? -1 : H5Dget_space(d);
    hsize_t dims[2] = {0, 0};
    long long n = -1;
    if (sp >= 0 && H5Sget_simple_extent_ndims(sp) == 2 && H5Sget_simple_extent_dims(sp, dims, NULL) == 2 &&
        dims[1] == 3 && dims[0] <= cap_rows && H5Dread(d, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) >= 0)
        n = (long long)dims[0];
    hid_t dcpl = d < 0 ? -1 : H5Dget_create_plist(d);
    *deflate = 0;
    if (dcpl >= 0) {
        for (int k = 0; k < H5Pget_nfilters(dcpl); ++k) {
            unsigned flags;
            size_t nelm = 0;
            *deflate |= H5Pget_filter2(dcpl, (unsigned)k, &flags, &nelm, NULL, 0, NULL, NULL) == H5Z_FILTER_DEFLATE;
        }
        *deflate &= H5Pget_layout(dcpl) == H5D_CHUNKED;
        H5Pclose(dcpl);
    }
    if (sp >= 0)
        H5Sclose(sp);
    if (d >= 0)
        H5Dclose(d);
    H5Fclose(f);
    return n;
}

Test(cli, neighbors_with_shift_vector_to_hdf5_adds_shift_and_vector_datasets)
{
    write_file("two.extxyz", two_atoms);
    cr_assert_eq(mdnl("neighbors two.extxyz -c 1.6 --list full --with shift,vector -o nb.h5 -q"), 0, "%s", err_text);
    int32_t S[8][3];
    double D[8][3];
    int deflate = 0;
    cr_assert_eq(read_rows3("nb.h5", "/neighbors/shift", H5T_NATIVE_INT32, S, 8, &deflate), 2);
    cr_expect(deflate, "/neighbors/shift is chunked and deflated, like j");
    cr_expect(S[0][0] == -2 && S[0][1] == 0 && S[0][2] == 0 && S[1][0] == 2 && S[1][1] == 0 && S[1][2] == 0,
              "S %d %d %d / %d %d %d", S[0][0], S[0][1], S[0][2], S[1][0], S[1][1], S[1][2]);
    cr_assert_eq(read_rows3("nb.h5", "/neighbors/vector", H5T_NATIVE_DOUBLE, D, 8, &deflate), 2);
    cr_expect(!deflate, "/neighbors/vector is stored raw, like distance");
    cr_expect(D[0][0] == -1.5 && D[0][1] == 0 && D[0][2] == 0 && D[1][0] == 1.5 && D[1][1] == 0 && D[1][2] == 0,
              "D %g %g %g / %g %g %g", D[0][0], D[0][1], D[0][2], D[1][0], D[1][1], D[1][2]);
    cr_assert_eq(mdnl("neighbors two.extxyz -c 1.6 --with shift -o s.h5 -q"), 0, "%s", err_text);
    cr_expect_eq(read_rows3("s.h5", "/neighbors/shift", H5T_NATIVE_INT32, S, 8, &deflate), 1);
    cr_expect_eq(read_rows3("s.h5", "/neighbors/vector", H5T_NATIVE_DOUBLE, D, 8, &deflate), -1,
                 "--with shift alone writes no vectors");
    cr_assert_eq(mdnl("neighbors two.extxyz -c 1.6 -o plain.h5 -q"), 0, "%s", err_text);
    cr_expect_eq(read_rows3("plain.h5", "/neighbors/shift", H5T_NATIVE_INT32, S, 8, &deflate), -1,
                 "no --with, no shifts");
}

Test(cli, neighbors_with_an_unknown_name_exits_2_listing_the_accepted_ones)
{
    write_file("two.extxyz", two_atoms);
    const char *bad[] = {"shift,bogus", "", "shift,", "vectors", "shift vector"};
    for (unsigned k = 0; k < sizeof bad / sizeof *bad; ++k) {
        cr_expect_eq(mdnl("neighbors two.extxyz -c 1.6 --with '%s' -o out.tsv", bad[k]), 2, "--with '%s': %s",
                     bad[k], err_text);
        expect_one_error_line();
        cr_expect(strstr(err_text, "shift") && strstr(err_text, "vector"), "%s", err_text);
    }
    cr_expect_eq(mdnl("energy two.extxyz -c 1.6 --pair lj:epsilon=1,sigma=1 --with shift"), 2, "%s", err_text);
    cr_expect_eq(dir_entries(), 1, "only two.extxyz may remain");
}

Test(cli, energy_matches_the_lammps_reference_and_bad_pair_specs_exit_2)
{
    /* data/energy/reference.txt: LAMMPS run 0, pair_style lj/cut 2.5, shift yes */
    cr_assert_eq(mdnl("energy %s/energy/lj_liquid.xyz -c 2.5 --pair lj:epsilon=1,sigma=1 --backend cpu",
                      MDNL_DATA_DIR),
                 0, "%s", err_text);
    long long frame, step;
    double e;
    cr_assert_eq(sscanf(out_text, "# frame\tstep\tenergy\n%lld\t%lld\t%lf", &frame, &step, &e), 3, "%s", out_text);
    cr_expect(fabs(e - -10954.415638721624) < 1e-6 * 10954.4, "energy %.12g", e);
    cr_assert_eq(mdnl("energy %s/energy/lj_liquid.xyz -c 2.5 --pair lj:epsilon=1,sigma=1 --per-atom -o pa.tsv",
                      MDNL_DATA_DIR),
                 0, "%s", err_text);
    char p[512];
    snprintf(p, sizeof p, "%s/pa.tsv", tmpdir);
    FILE *fp = fopen(p, "r");
    cr_assert_not_null(fp);
    char line[256];
    double sum = 0;
    int rows = 0;
    long long i;
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "%lld\t%lld\t%lf", &frame, &i, &e) == 3)
            sum += e, rows++;
    fclose(fp);
    cr_expect_eq(rows, 2048);
    cr_expect(fabs(sum - -10954.415638721624) < 1e-6 * 10954.4, "per-atom sum %.12g", sum);
    const char *bad[] = {"lj:epsilon=1", "lj:epsilon=1,sigma=-1", "lj:epsilon=1,sigma=nan", "coulomb:q=1",
                         "morse:d0=1,alpha=2", "lj:epsilon=1,sigma=1,shift=maybe"};
    for (unsigned k = 0; k < sizeof bad / sizeof *bad; ++k) {
        cr_expect_eq(mdnl("energy %s/energy/lj_liquid.xyz -c 2.5 --pair %s", MDNL_DATA_DIR, bad[k]), 2, "--pair %s",
                     bad[k]);
        expect_one_error_line();
    }
}

Test(cli, rdf_of_graphene_steps_to_3_9_12_and_writes_plot_and_hdf5)
{
    cr_assert_eq(mdnl("rdf %s/graphene-periodic.extxyz --rmax 3 --bins 30 -o g.tsv --plot g.svg --json",
                      MDNL_DATA_DIR),
                 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"command\":\"rdf\"") && strstr(out_text, "\"pairs_counted\":13824"),
              "1152 atoms x 12 ordered pairs below 3: %s", out_text);
    char p[512];
    snprintf(p, sizeof p, "%s/g.tsv", tmpdir);
    FILE *fp = fopen(p, "r");
    cr_assert_not_null(fp);
    char line[256];
    double lo, hi, r, g, n, n_at[4] = {0};
    while (fgets(line, sizeof line, fp))
        if (sscanf(line, "%lf\t%lf\t%lf\t%lf\t%lf", &lo, &hi, &r, &g, &n) == 5) {
            if (fabs(hi - 1.5) < 1e-9)
                n_at[0] = n;
            if (fabs(hi - 2.5) < 1e-9)
                n_at[1] = n;
            if (fabs(hi - 2.9) < 1e-9)
                n_at[2] = n;
            if (fabs(hi - 1.4) < 1e-9)
                n_at[3] = n;
        }
    fclose(fp);
    cr_expect(n_at[3] == 0 && n_at[0] == 3 && n_at[1] == 9 && n_at[2] == 12, "n(r) = %g %g %g %g", n_at[3], n_at[0],
              n_at[1], n_at[2]);
    snprintf(p, sizeof p, "%s/g.svg", tmpdir);
    static char svg[1 << 18];
    slurp(p, svg, sizeof svg);
    cr_expect(strstr(svg, "<svg") && strstr(svg, "</svg>"), "not an SVG");
    cr_assert_eq(mdnl("rdf %s/graphene-periodic.extxyz --rmax 3 --bins 30 -o g.h5", MDNL_DATA_DIR), 0, "%s",
                 err_text);
}

Test(cli, rdf_partials_match_the_mdanalysis_reference_counts)
{
    /* data/rdf/lj_mixture_A-B.tsv: MDAnalysis InterRDF, 10 frames,
     * tools/mdanalysis_rdf_reference.py; columns r_lo r_hi r g_mda count g_mdnl n */
    cr_assert_eq(mdnl("rdf %s/rdf/lj_mixture.xyz --rmax 2.5 --bins 80 --pairs A-B,B-B -o m.tsv", MDNL_DATA_DIR), 0,
                 "%s", err_text);
    char p[512];
    snprintf(p, sizeof p, "%s/rdf/lj_mixture_A-B.tsv", MDNL_DATA_DIR);
    FILE *ref = fopen(p, "r");
    snprintf(p, sizeof p, "%s/m.tsv", tmpdir);
    FILE *got = fopen(p, "r");
    cr_assert(ref && got);
    char a[512], b[512];
    int compared = 0;
    while (fgets(b, sizeof b, got)) {
        if (b[0] == '#')
            continue;
        double lo, hi, r, g_ab, n_ab, rlo, rhi, rr, gm, cm, gmdnl, nref;
        if (sscanf(b, "%lf\t%lf\t%lf\t%lf\t%lf", &lo, &hi, &r, &g_ab, &n_ab) != 5)
            continue;
        do {
            if (!fgets(a, sizeof a, ref))
                cr_assert_fail("reference ended before r_lo %g", lo);
        } while (a[0] == '#' ||
                 sscanf(a, "%lf %lf %lf %lf %lf %lf %lf", &rlo, &rhi, &rr, &gm, &cm, &gmdnl, &nref) != 7 ||
                 rlo < lo - 1e-12);
        cr_expect(fabs(rlo - lo) < 1e-12, "bins differ: %g vs %g", rlo, lo);
        cr_expect(fabs(g_ab - gmdnl) < 1e-3, "g:A-B at r %g: %g vs reference %g", r, g_ab, gmdnl);
        cr_expect(fabs(n_ab - nref) < 1e-3, "n:A-B at r %g: %g vs reference %g", r, n_ab, nref);
        compared++;
    }
    fclose(ref);
    fclose(got);
    cr_expect(compared >= 70, "compared %d bins", compared);
}

Test(cli, rdf_bad_options_and_missing_species)
{
    cr_expect_eq(mdnl("rdf %s/graphene-periodic.extxyz --rmax 3", MDNL_DATA_DIR), 2);
    cr_expect_eq(mdnl("rdf %s/graphene-periodic.extxyz --rmax 3 --bins 0", MDNL_DATA_DIR), 2);
    cr_expect_eq(mdnl("rdf %s/graphene-periodic.extxyz --rmax -3 --bins 10", MDNL_DATA_DIR), 2);
    cr_expect_eq(mdnl("rdf %s/graphene-periodic.extxyz --rmax 3 --bins 10 --pairs C", MDNL_DATA_DIR), 2);
    cr_expect_eq(mdnl("rdf %s/graphene-periodic.extxyz --rmax 3 --bins 10 --pairs C-H -o x.tsv", MDNL_DATA_DIR), 3,
                 "%s", err_text);
    expect_one_error_line();
    cr_expect(strstr(err_text, "species H") != NULL, "%s", err_text);
    cr_expect_eq(dir_entries(), 0, "a failed rdf left a file");
}

Test(cli, h5md_and_extxyz_of_the_same_frames_give_the_same_energies)
{
    static char a[1 << 16], b[1 << 16];
    cr_assert_eq(mdnl("energy %s/h5md/box_td33.h5md -c 2.5 --pair morse:d0=1,alpha=1.5,r0=1.2", MDNL_DATA_DIR), 0,
                 "%s", err_text);
    memcpy(a, out_text, sizeof a);
    cr_assert_eq(mdnl("energy %s/h5md/box_td33.extxyz -c 2.5 --pair morse:d0=1,alpha=1.5,r0=1.2", MDNL_DATA_DIR), 0,
                 "%s", err_text);
    memcpy(b, out_text, sizeof b);
    cr_expect_eq(count_lines(a), 5, "header + 4 frames: %s", a);
    cr_expect_str_eq(a, b);
    cr_assert_eq(mdnl("energy %s/h5md/box_td33.h5md -c 2.5 --pair lj:epsilon=1,sigma=1 --per-atom", MDNL_DATA_DIR),
                 0, "%s", err_text);
    memcpy(a, out_text, sizeof a);
    cr_assert_eq(mdnl("energy %s/h5md/box_td33.extxyz -c 2.5 --pair lj:epsilon=1,sigma=1 --per-atom", MDNL_DATA_DIR),
                 0, "%s", err_text);
    cr_expect_str_eq(a, out_text);
}

/* Found by tests/fuzz/fuzz_options (regressions/options/newline-in-argument):
 * a newline inside an argument, an unknown command or a file name was
 * echoed raw, so the error took two lines. Control characters are escaped. */
Test(cli, newlines_in_arguments_and_paths_keep_the_error_on_one_line)
{
    cr_expect_eq(mdnl("neighbors x.xyz -c 1 \"$(printf '%%s\\n%%s' --frames 1:2)\""), 2);
    cr_expect_eq(count_lines(err_text), 1, "%s", err_text);
    cr_expect(strstr(err_text, "--frames\\n1:2") != NULL, "%s", err_text);
    cr_expect_eq(mdnl("\"$(printf 'bogus\\ncommand')\""), 2);
    cr_expect_eq(count_lines(err_text), 1, "%s", err_text);
    cr_expect_eq(mdnl("info \"$(printf 'no\\nsuch.xyz')\""), 3);
    cr_expect_eq(count_lines(err_text), 1, "%s", err_text);
    cr_expect(strstr(err_text, "no\\nsuch.xyz") != NULL, "%s", err_text);
}

/* Found by tests/fuzz/fuzz_options (regressions/options/box-infinite-volume):
 * --box 1e300,... was accepted with an infinite volume; and a --box far
 * thinner than the cutoff gave a list without images (1e-100) or hung
 * (1e-300) instead of an error. */
Test(cli, absurd_boxes_are_errors_not_hangs)
{
    cr_expect_eq(mdnl("neighbors %s/graphene-open.xyz -c 3 --box 1e300,1e300,1e300 -o x.tsv", MDNL_DATA_DIR), 2);
    cr_expect(strstr(err_text, "--box") != NULL, "%s", err_text);
    cr_expect_eq(mdnl("neighbors %s/graphene-open.xyz -c 3 --box 1e-100,1e-100,1e-100 -o x.tsv", MDNL_DATA_DIR), 3);
    cr_expect(strstr(err_text, "--max-pairs") != NULL, "%s", err_text); /* the work guard (issue 20) */
    cr_expect_eq(mdnl("neighbors %s/graphene-open.xyz -c 3 --box 1e-100,1e-100,1e-100 --max-pairs 1e300 -o x.tsv",
                      MDNL_DATA_DIR), 3);
    cr_expect(strstr(err_text, "cutoff/1000") != NULL, "%s", err_text); /* the hard image cap */
    cr_expect_eq(mdnl("neighbors %s/graphene-open.xyz -c 3 --box 1e200,1e200,1e-300 -o x.tsv", MDNL_DATA_DIR), 3);
    cr_expect_eq(count_lines(err_text), 1, "%s", err_text);
    char p[512];
    snprintf(p, sizeof p, "%s/x.tsv", tmpdir);
    cr_expect(access(p, F_OK) != 0, "no partial output");
}

/* A named pipe (or `<(zcat x.xyz.gz)`) is read once: the HDF5 signature peek
 * used to eat its first bytes and the reader's own open then waited forever
 * for a writer. info counts the frames in the same single pass. */
Test(cli, named_pipe_input_is_read_once_and_never_hangs)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && mkfifo p.xyz && (cat '%s/trajectory-3frames.extxyz' > p.xyz &) && "
             "timeout 60 '%s' neighbors p.xyz -c 1.5 -o x.tsv 2>err.txt",
             tmpdir, MDNL_DATA_DIR, MDNL_BINARY);
    int rc = system(cmd);
    cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "status %d", rc);
    char p[512];
    snprintf(p, sizeof p, "%s/x.tsv", tmpdir);
    slurp(p, out_text, sizeof out_text);
    cr_expect(strstr(out_text, "# frame") != NULL, "%s", out_text);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && (cat '%s/trajectory-3frames.extxyz' > p.xyz &) && timeout 60 '%s' info p.xyz 2>err.txt",
             tmpdir, MDNL_DATA_DIR, MDNL_BINARY);
    rc = system(cmd);
    cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "status %d", rc);
    snprintf(cmd, sizeof cmd,
             "cd '%s' && (cat '%s/trajectory-3frames.extxyz' > p.xyz &) && timeout 60 '%s' neighbors p.xyz -c 1.5 "
             "--frames -1 -o y.tsv 2>err.txt",
             tmpdir, MDNL_DATA_DIR, MDNL_BINARY);
    rc = system(cmd);
    cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == 3, "status %d", rc);
    snprintf(p, sizeof p, "%s/err.txt", tmpdir);
    slurp(p, err_text, sizeof err_text);
    cr_expect(strstr(err_text, "found a pipe") != NULL, "%s", err_text);
    cr_expect_eq(count_lines(err_text), 1, "%s", err_text);
}

/* ---- issue 55: what a new user trips on ---- */

#define TRAJ3 MDNL_DATA_DIR "/trajectory-3frames.extxyz"

/* stdout of the last command parses as exactly one JSON object. */
static void expect_one_json_object(const char *what)
{
    write_file("stdout.json", out_text);
    char saved[sizeof out_text];
    snprintf(saved, sizeof saved, "%s", out_text);
    int rc = sh("python3 -c 'import json,sys; d = json.load(sys.stdin); assert isinstance(d, dict)' < stdout.json");
    cr_expect_eq(rc, 0, "%s --json: stdout is not one JSON object: %s\n%s", what, saved, err_text);
    sh("rm -f stdout.json");
}

Test(cli, every_json_summary_is_exactly_one_object)
{
    const char *runs[][2] = {
        {"neighbors", "neighbors " TRAJ3 " -c 2 -o n.tsv --json"},
        {"energy", "energy " TRAJ3 " -c 2 --pair lj:epsilon=1,sigma=1 -o e.tsv --json"},
        {"rdf", "rdf " TRAJ3 " --rmax 2 --bins 10 -o r.tsv --json"},
        {"rdf without -o", "rdf " TRAJ3 " --rmax 2 --bins 10 --json"},
        {"run", "run " TRAJ3 " -c 2 --pair lj:epsilon=1,sigma=1 -o run.h5 --json"},
        {"info", "info " TRAJ3 " --json"},
        {"convert", "convert " TRAJ3 " c.h5md --json"},
        {"gen", "gen graphene --nx 2 --ny 2 -o g.extxyz --json"},
    };
    for (size_t k = 0; k < sizeof runs / sizeof *runs; ++k) {
        cr_expect_eq(mdnl("%s", runs[k][1]), 0, "%s: %s", runs[k][0], err_text);
        cr_expect(strstr(out_text, "usage:") == NULL, "%s --json printed the help: %s", runs[k][0], out_text);
        expect_one_json_object(runs[k][0]);
    }
}

Test(cli, frames_selecting_nothing_exit_2_naming_the_frame_count)
{
    const char *sel[] = {"10", "-5", "2:0", "3:", "5:9:2"};
    for (size_t k = 0; k < sizeof sel / sizeof *sel; ++k) {
        cr_expect_eq(mdnl("neighbors %s -c 2 --frames %s -o n.tsv", TRAJ3, sel[k]), 2, "--frames %s: %s", sel[k],
                     err_text);
        expect_one_error_line();
        char want[64];
        snprintf(want, sizeof want, "--frames %s: selects no frame of the 3 in", sel[k]);
        cr_expect(strstr(err_text, want) != NULL, "expected \"%s\" in: %s", want, err_text);
        cr_expect_eq(mdnl("run %s -c 2 --pair lj:epsilon=1,sigma=1 --frames %s -o r.h5", TRAJ3, sel[k]), 2, "%s",
                     err_text);
        cr_expect_eq(mdnl("rdf %s --rmax 2 --bins 4 --frames %s --json", TRAJ3, sel[k]), 2, "%s", err_text);
        cr_expect_str_eq(out_text, "", "--frames %s wrote a summary", sel[k]);
    }
    cr_expect_eq(dir_entries(), 0, "an empty selection left an output");
    /* H5MD: refused before any output, standard output included */
    cr_assert_eq(mdnl("convert %s t.h5md", TRAJ3), 0, "%s", err_text);
    cr_expect_eq(mdnl("neighbors t.h5md -c 2 --frames 7"), 2, "%s", err_text);
    cr_expect_str_eq(out_text, "");
    cr_expect(strstr(err_text, "selects no frame of the 3 in t.h5md") != NULL, "%s", err_text);
    /* a selection that has frames is still fine, with the original indices */
    cr_expect_eq(mdnl("neighbors %s -c 2 --frames -1", TRAJ3), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\n2\t") != NULL, "%s", out_text);
}

/* Every option a command's --help names is one its parser accepts. */
Test(cli, help_names_only_options_the_command_accepts)
{
    const char *cmds[] = {"run", "neighbors", "energy", "coord", "rdf", "info", "gen", "convert", "bench"};
    for (size_t c = 0; c < sizeof cmds / sizeof *cmds; ++c) {
        const char *prefix = strcmp(cmds[c], "gen") == 0 ? "gen graphene" : cmds[c];
        cr_assert_eq(mdnl("%s --help", prefix), 0, "%s --help", cmds[c]);
        static char help[sizeof out_text];
        snprintf(help, sizeof help, "%s", out_text);
        cr_expect(strstr(help, "Common options:\n  --frames") == NULL || strcmp(cmds[c], "info") != 0);
        int checked = 0;
        for (const char *p = help; (p = strchr(p, '-')) != NULL; ++p) {
            char opt[40];
            if (p > help && (p[-1] != ' ' && p[-1] != '[' && p[-1] != '|' && p[-1] != '\n'))
                continue;
            if (p[1] == '-' && p[2] >= 'a' && p[2] <= 'z') {
                size_t n = strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");
                snprintf(opt, sizeof opt, "--%.*s", (int)n, p + 2);
            } else if (p >= help + 2 && p[-1] == ' ' && p[-2] == ' ' && p[1] >= 'a' && p[1] <= 'z' && p[2] == ',') {
                /* "  -c, --cutoff": an option's own line (not "mpirun -n P") */
                snprintf(opt, sizeof opt, "-%c", p[1]);
            } else {
                continue;
            }
            mdnl("%s %s", prefix, opt);
            cr_expect(strstr(err_text, "unknown option") == NULL, "mdnl %s --help names %s, which it refuses: %s",
                      cmds[c], opt, err_text);
            ++checked;
        }
        cr_expect_gt(checked, 2, "%s --help: found no options in\n%s", cmds[c], help);
    }
    /* the options the issue found shown but refused, or accepted but not shown */
    const char *refused[][2] = {{"info", "--frames"},         {"info", "--progress"}, {"gen graphene", "--box"},
                                {"gen graphene", "--frames"}, {"rdf", "--method"},    {"energy", "--method"}};
    for (size_t k = 0; k < sizeof refused / sizeof *refused; ++k) {
        cr_expect_eq(mdnl("%s --help", refused[k][0]), 0);
        char with_space[48];
        snprintf(with_space, sizeof with_space, " %s ", refused[k][1]);
        cr_expect(strstr(out_text, with_space) == NULL, "mdnl %s --help shows %s", refused[k][0], refused[k][1]);
        cr_expect_eq(mdnl("%s %s x", refused[k][0], refused[k][1]), 2);
        cr_expect(strstr(err_text, "unknown option") != NULL, "%s %s: %s", refused[k][0], refused[k][1], err_text);
    }
}

Test(cli, help_gives_units_and_keeps_the_command_column_apart)
{
    cr_assert_eq(mdnl("--help"), 0);
    const char *run = strstr(out_text, "run INPUT ... -o OUT.h5|DIR/");
    cr_assert_not_null(run, "%s", out_text);
    cr_expect(strncmp(run + strlen("run INPUT ... -o OUT.h5|DIR/"), "  ", 2) == 0, "%.80s", run);
    const char *cmds[] = {"run", "neighbors", "energy", "rdf"};
    for (size_t k = 0; k < sizeof cmds / sizeof *cmds; ++k) {
        cr_assert_eq(mdnl("%s --help", cmds[k]), 0);
        cr_expect(strstr(out_text, "input's length unit") != NULL, "%s --help: no length unit", cmds[k]);
    }
    cr_assert_eq(mdnl("energy --help"), 0);
    cr_expect(strstr(out_text, "energy unit of the --pair parameters") != NULL, "%s", out_text);
}

Test(cli, bench_without_a_device_exits_4_whatever_the_sizes)
{
    if (mdnl_cuda_device_count() > 0)
        cr_skip_test("a CUDA device is present: the benchmark runs here");
    const char *sizes[] = {"", "--sizes lj-100k", "--sizes rdf", "--sizes graphene-17k --json"};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; ++k) {
        cr_expect_eq(mdnl("bench %s", sizes[k]), 4, "bench %s: %s", sizes[k], err_text);
        expect_one_error_line();
        cr_expect_str_eq(out_text, "", "bench %s printed results", sizes[k]);
    }
    cr_expect_eq(mdnl("bench --sizes nosuch"), 2, "%s", err_text);
}

Test(cli, summaries_give_atoms_per_frame_and_the_output)
{
    cr_assert_eq(mdnl("neighbors %s -c 2 -o n.tsv", TRAJ3), 0, "%s", err_text);
    cr_expect(strstr(err_text, "3 frame(s) of 3 atoms") != NULL, "%s", err_text);
    cr_expect(strstr(err_text, "n.tsv") != NULL, "%s", err_text);
    cr_assert_eq(mdnl("energy %s -c 2 --pair lj:epsilon=1,sigma=1 -o e.h5 --json", TRAJ3), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"atoms\":3,\"atoms_max\":3") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "\"output\":\"e.h5\"") != NULL, "%s", out_text);
    /* a count that changes: the smallest and the largest */
    write_file("grow.xyz", "2\n\nC 0 0 0\nC 1 0 0\n3\n\nC 0 0 0\nC 1 0 0\nC 0 1 0\n");
    cr_assert_eq(mdnl("rdf grow.xyz --rmax 2 --bins 4 -o r.tsv"), 0, "%s", err_text);
    cr_expect(strstr(err_text, "2 frame(s) of 2 to 3 atoms") != NULL, "%s", err_text);
    cr_assert_eq(mdnl("run grow.xyz --rmax 2 --bins 4 -o out/ --json"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"atoms\":2,\"atoms_max\":3,\"output\":\"out/\"") != NULL, "%s", out_text);
    cr_assert_eq(mdnl("gen graphene --nx 2 --ny 2 -o g.extxyz --json"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"output\":\"g.extxyz\"") != NULL, "%s", out_text);
}

Test(cli, errors_say_what_would_have_worked)
{
    cr_expect_eq(mdnl("neighbors %s --cutof 2", TRAJ3), 2);
    expect_one_error_line();
    cr_expect(strstr(err_text, "did you mean --cutoff?") != NULL, "%s", err_text);
    cr_expect_eq(mdnl("rdf %s --rmax 2 --bin 4", TRAJ3), 2);
    cr_expect(strstr(err_text, "did you mean --bins?") != NULL, "%s", err_text);
    cr_expect_eq(mdnl("neighbors %s --zzzzzz 2", TRAJ3), 2);
    cr_expect(strstr(err_text, "did you mean") == NULL, "a far miss suggests nothing: %s", err_text);
    /* -c2: the value attached, as getopt takes it */
    cr_expect_eq(mdnl("neighbors %s -c2", TRAJ3), 0, "%s", err_text);
    char attached[sizeof out_text];
    snprintf(attached, sizeof attached, "%s", out_text);
    cr_expect_eq(mdnl("neighbors %s -c 2", TRAJ3), 0, "%s", err_text);
    cr_expect_str_eq(attached, out_text);
    cr_expect_eq(mdnl("neighbors %s -c2 -qx", TRAJ3), 2, "a flag takes no attached value");
    /* --frames says its syntax */
    cr_expect_eq(mdnl("neighbors %s -c 2 --frames 1-2", TRAJ3), 2);
    expect_one_error_line();
    cr_expect(strstr(err_text, "START:STOP:STEP") && !strstr(err_text, "4611686018427387904"), "%s", err_text);
    /* --pair names the parameters of its potential */
    cr_expect_eq(mdnl("energy %s -c 2 --pair lj:eps=1", TRAJ3), 2);
    cr_expect(strstr(err_text, "epsilon, sigma, shift") != NULL, "%s", err_text);
    cr_expect_eq(mdnl("energy %s -c 2 --pair morse:d=1", TRAJ3), 2);
    cr_expect(strstr(err_text, "d0, alpha, r0, shift") != NULL, "%s", err_text);
    /* --pairs names the species the frame has */
    cr_expect_eq(mdnl("rdf %s --rmax 2 --bins 4 --pairs o-h", TRAJ3), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "(the frame has O, H)") != NULL, "%s", err_text);
}

Test(cli, xyz_without_a_cell_is_noted_once_and_lammps_timestep_is_the_step)
{
    write_file("dump.xyz", "2\nAtoms. Timestep: 50\n1 0 0 0\n1 1.2 0 0\n2\nAtoms. Timestep: 100\n1 0 0 0\n1 1.3 0 0\n");
    cr_assert_eq(mdnl("energy dump.xyz -c 3 --pair lj:epsilon=1,sigma=1"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\n0\t50\t") && strstr(out_text, "\n1\t100\t"), "steps: %s", out_text);
    const char *note = strstr(err_text, "dump.xyz: frame 0 has no cell");
    cr_expect(note != NULL, "%s", err_text);
    cr_expect(note && strstr(note + 30, "has no cell") == NULL, "noted more than once: %s", err_text);
    cr_expect(strstr(err_text, "--box") != NULL, "%s", err_text);
    cr_expect_eq(count_lines(err_text), 2, "the note and the summary: %s", err_text);
    cr_assert_eq(mdnl("energy dump.xyz -c 3 --pair lj:epsilon=1,sigma=1 --quiet"), 0);
    cr_expect_str_eq(err_text, "");
    cr_assert_eq(mdnl("energy dump.xyz -c 3 --pair lj:epsilon=1,sigma=1 --box 10,10,10"), 0);
    cr_expect(strstr(err_text, "no cell") == NULL, "%s", err_text);
    cr_assert_eq(mdnl("energy %s -c 2 --pair lj:epsilon=1,sigma=1", TRAJ3), 0);
    cr_expect(strstr(err_text, "no cell") == NULL, "%s", err_text);
    /* an error stays the one line on stderr */
    write_file("bad.xyz", "1\n\nC 0 0 0\n1\n\nC 0 x 0\n");
    cr_expect_eq(mdnl("energy bad.xyz -c 3 --pair lj:epsilon=1,sigma=1 -o e.tsv"), 3);
    expect_one_error_line();
    /* info names the format: plain xyz, extended extxyz */
    cr_assert_eq(mdnl("info dump.xyz --json"), 0);
    cr_expect(strstr(out_text, "\"format\":\"xyz\"") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "\"step\":50") != NULL, "%s", out_text);
    cr_assert_eq(mdnl("info %s", TRAJ3), 0);
    cr_expect(strstr(out_text, "(extxyz)") != NULL, "%s", out_text);
}

Test(cli, rdf_table_header_is_tab_separated_like_its_rows)
{
    cr_assert_eq(mdnl("rdf %s --rmax 2 --bins 4", TRAJ3), 0, "%s", err_text);
    const char *total = "# r_lo\tr_hi\tr\tg\tn\n";
    cr_expect(strncmp(out_text, total, strlen(total)) == 0, "%.60s", out_text);
    cr_assert_eq(mdnl("rdf %s --rmax 2 --bins 4 --pairs O-H,H-H", TRAJ3), 0, "%s", err_text);
    const char *partial = "# r_lo\tr_hi\tr\tg:O-H\tn:O-H\tg:H-H\tn:H-H\n";
    cr_expect(strncmp(out_text, partial, strlen(partial)) == 0, "%.60s", out_text);
}

/* The y coordinate of the <text> element whose content is `label`. */
static double text_y(const char *svg, const char *label)
{
    char needle[80];
    snprintf(needle, sizeof needle, ">%s</text>", label);
    const char *end = strstr(svg, needle);
    if (!end)
        return NAN;
    const char *start = end;
    while (start > svg && strncmp(start, "<text", 5) != 0)
        --start;
    const char *y = strstr(start, " y=\"");
    return y && y < end ? atof(y + 4) : NAN;
}

Test(cli, rdf_plot_keeps_the_legend_off_the_curves_and_refuses_other_formats)
{
    cr_assert_eq(mdnl("rdf %s --rmax 3 --bins 30 -o r.tsv --plot p.svg", TRAJ3), 0, "%s", err_text);
    char svg[1 << 15], p[512];
    snprintf(p, sizeof p, "%s/p.svg", tmpdir);
    slurp(p, svg, sizeof svg);
    /* the title is the base name, the x axis names the unit */
    cr_expect(strstr(svg, ">trajectory-3frames.extxyz</text>") != NULL, "title");
    cr_expect(strstr(svg, MDNL_DATA_DIR) == NULL, "the title repeats the path as typed");
    cr_expect(strstr(svg, ">r (input length unit)</text>") != NULL, "x label");
    /* the legend lies above the plot area: its frame's top edge */
    const char *frame = strstr(svg, "fill=\"none\" stroke=\"#222\"/>");
    cr_assert_not_null(frame);
    while (frame > svg && strncmp(frame, "<rect", 5) != 0)
        --frame;
    double top = atof(strstr(frame, " y=\"") + 4);
    cr_expect_lt(text_y(svg, "total"), top, "legend entry at y %g, plot area from %g", text_y(svg, "total"), top);
    cr_expect_lt(text_y(svg, "n(r), dashed, right axis"), top);
    /* only .svg, and never the -o file */
    cr_expect_eq(mdnl("rdf %s --rmax 3 --bins 30 -o r2.tsv --plot p.png", TRAJ3), 2);
    expect_one_error_line();
    cr_expect(strstr(err_text, ".svg") != NULL, "%s", err_text);
    cr_expect_eq(mdnl("rdf %s --rmax 3 --bins 30 -o r2.tsv --plot r2.tsv", TRAJ3), 2);
    expect_one_error_line();
    cr_expect_eq(mdnl("rdf %s --rmax 3 --bins 30 -o r.tsv --plot ./r.tsv", TRAJ3), 2, "the same existing file");
    cr_expect_eq(dir_entries(), 2, "only r.tsv and p.svg");
}

/* --pair-coeff: the Kob-Andersen mixture through the binary, on both
 * output kinds; a species no frame has is exit 3, a malformed coeff exit 2,
 * and commands that do not take per-pair parameters refuse the option. */
Test(cli, energy_pair_coeff_computes_the_mixture_and_refuses_bad_input)
{
    const char *ka = "--pair lj:epsilon=1,sigma=1 --pair-coeff A-B:epsilon=1.5,sigma=0.8,cut=2.0 "
                     "--pair-coeff B-B:epsilon=0.5,sigma=0.88,cut=2.2";
    cr_assert_eq(mdnl("energy %s/energy/ka_mixture.xyz -c 2.5 %s -o e.tsv --json", MDNL_DATA_DIR, ka), 0, "%s",
                 err_text);
    cr_expect(strstr(out_text, "\"cutoff\":2.5") != NULL, "%s", out_text);
    char tsv[4096], path[512];
    snprintf(path, sizeof path, "%s/e.tsv", tmpdir);
    slurp(path, tsv, sizeof tsv);
    double e = 0;
    cr_assert_eq(sscanf(tsv, "# frame\tstep\tenergy\n0\t0\t%lf", &e), 1, "%s", tsv);
    cr_expect(fabs(e - -2305.798279308217) < 1e-3, "KA energy %.12f", e); /* LAMMPS: data/energy/ka_reference.txt */
    /* the largest cutoff is the pairs', not -c */
    cr_assert_eq(mdnl("energy %s/energy/ka_mixture.xyz -c 2.0 --pair lj:epsilon=1,sigma=1,cut=2.5 "
                      "--pair-coeff A-B:epsilon=1.5,sigma=0.8,cut=2.0 --pair-coeff B-B:epsilon=0.5,sigma=0.88,cut=2.2 "
                      "-o e2.tsv",
                      MDNL_DATA_DIR),
                 0, "%s", err_text);
    char tsv2[4096];
    snprintf(path, sizeof path, "%s/e2.tsv", tmpdir);
    slurp(path, tsv2, sizeof tsv2);
    cr_expect_str_eq(tsv2, tsv);

    cr_expect_eq(mdnl("energy %s/energy/ka_mixture.xyz -c 2.5 --pair lj:epsilon=1,sigma=1 "
                      "--pair-coeff A-C:epsilon=1,sigma=1 -o bad.tsv",
                      MDNL_DATA_DIR),
                 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "species C") != NULL, "%s", err_text);
    snprintf(path, sizeof path, "%s/bad.tsv", tmpdir);
    cr_expect_eq(access(path, F_OK), -1, "no output after an input error");
    const char *usage[] = {"--pair-coeff A-B:epsilon=1", "--pair-coeff AB:epsilon=1,sigma=1",
                           "--pair-coeff A-B:epsilon=1,sigma=1 --pair-coeff B-A:epsilon=1,sigma=1", "--pair-coeff ''"};
    for (size_t k = 0; k < sizeof usage / sizeof *usage; ++k) {
        cr_expect_eq(mdnl("energy %s/energy/ka_mixture.xyz -c 2.5 --pair lj:epsilon=1,sigma=1 %s", MDNL_DATA_DIR,
                          usage[k]),
                     2, "%s", usage[k]);
        expect_one_error_line();
    }
    cr_expect_eq(mdnl("run %s/energy/ka_mixture.xyz -c 2.5 --pair lj:epsilon=1,sigma=1 "
                      "--pair-coeff A-B:epsilon=1,sigma=1 -o r.h5",
                      MDNL_DATA_DIR),
                 2);
    expect_one_error_line();
}

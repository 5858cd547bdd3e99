/* test_xyz.c — the XYZ / extended-XYZ reader and writer (io/xyz_*.c), the
 * fast float parser, and the graphene generator that makes the fixtures. */
#define _POSIX_C_SOURCE 200809L
#include "gen_graphene.h"
#include "reader.h"
#include "xyz_reader.h"
#include "xyz_writer.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static char tmp_path[256];

static const char *write_tmp(const char *text)
{
    snprintf(tmp_path, sizeof tmp_path, "/tmp/mdnl-test-xyz-%d.xyz", (int)getpid());
    FILE *fp = fopen(tmp_path, "wb");
    cr_assert_not_null(fp);
    fputs(text, fp);
    fclose(fp);
    return tmp_path;
}

static mdnl_status read_first(const char *path, mdnl_frame *f)
{
    mdnl_xyz_reader *r;
    mdnl_status st = mdnl_xyz_open(path, &r);
    if (st != MDNL_OK)
        return st;
    st = mdnl_xyz_next(r, f);
    mdnl_xyz_close(r);
    return st;
}

/* Reads every frame; returns the first failure. */
static mdnl_status read_all(const char *path)
{
    mdnl_xyz_reader *r;
    mdnl_status st = mdnl_xyz_open(path, &r);
    if (st != MDNL_OK)
        return st;
    mdnl_frame f = {0};
    while ((st = mdnl_xyz_next(r, &f)) == MDNL_OK)
        ;
    mdnl_frame_free(&f);
    mdnl_xyz_close(r);
    return st == MDNL_END ? MDNL_OK : st;
}

typedef struct bad_case {
    const char *file;
    const char *where; /* "file.xyz:LINE" expected in the message */
    const char *what;  /* a word of the explanation */
} bad_case;

Test(xyz, every_malformed_fixture_is_an_input_error_naming_file_and_line)
{
    const bad_case cases[] = {
        {"empty.xyz", "empty.xyz:1:", "empty file"},
        {"truncated.xyz", "truncated.xyz:5:", "3 atom lines"},
        {"absurd-count.xyz", "absurd-count.xyz:1:", "atom count"},
        {"negative-count.xyz", "negative-count.xyz:1:", "non-negative"},
        {"nonnumeric-count.xyz", "nonnumeric-count.xyz:1:", "\"three\""},
        {"nonnumeric-coordinate.xyz", "nonnumeric-coordinate.xyz:4:", "\"x\""},
        {"missing-coordinate.xyz", "missing-coordinate.xyz:4:", "columns"},
        {"nan.xyz", "nan.xyz:4:", "finite"},
        {"inf.xyz", "inf.xyz:4:", "finite"},
        {"lattice-8-values.xyz", "lattice-8-values.xyz:2:", "9 numbers"},
        {"zero-volume.xyz", "zero-volume.xyz:2:", "volume"},
        {"pbc-2-values.xyz", "pbc-2-values.xyz:2:", "3 values"},
        {"second-frame-truncated.xyz", "second-frame-truncated.xyz:7:", "frame 1"},
    };
    for (unsigned k = 0; k < sizeof cases / sizeof *cases; ++k) {
        char path[512];
        snprintf(path, sizeof path, "%s/bad/%s", MDNL_DATA_DIR, cases[k].file);
        mdnl_status st = read_all(path);
        cr_expect_eq(st, MDNL_ERR_INPUT, "%s: status %d", cases[k].file, st);
        cr_expect(strstr(mdnl_last_error(), cases[k].where) != NULL, "%s: expected \"%s\" in: %s", cases[k].file,
                  cases[k].where, mdnl_last_error());
        cr_expect(strstr(mdnl_last_error(), cases[k].what) != NULL, "%s: expected \"%s\" in: %s", cases[k].file,
                  cases[k].what, mdnl_last_error());
        cr_expect(strchr(mdnl_last_error(), '\n') == NULL, "one line: %s", mdnl_last_error());
    }
}

Test(xyz, absurd_count_fails_fast_without_allocating)
{
    char path[512];
    snprintf(path, sizeof path, "%s/bad/absurd-count.xyz", MDNL_DATA_DIR);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cr_expect_eq(read_all(path), MDNL_ERR_INPUT);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    cr_expect(s < 1.0, "took %.3f s", s);
}

Test(xyz, missing_file_and_directory_are_input_errors_naming_the_path)
{
    mdnl_xyz_reader *r;
    cr_expect_eq(mdnl_xyz_open("/nonexistent/a.xyz", &r), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "/nonexistent/a.xyz") != NULL, "%s", mdnl_last_error());
    cr_expect_eq(mdnl_xyz_open("/tmp", &r), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "directory") != NULL, "%s", mdnl_last_error());
}

Test(xyz, extended_header_sets_lattice_pbc_step_time_and_columns)
{
    const char *p = write_tmp("2\n"
                              "Time=2.5 Properties=id:I:1:pos:R:3:species:S:1:vel:R:3 "
                              "Lattice=\"10 0 0 1 9 0 0.5 0.25 8\" pbc=\"T F T\" step=42 energy=-3.2 flag\n"
                              "7 1.5 2.5 3.5 O 0 0 0\n"
                              "8 -1 -2 -3e-1 H 1 1 1\n");
    mdnl_frame f = {0};
    cr_assert_eq(read_first(p, &f), MDNL_OK, "%s", mdnl_last_error());
    cr_expect_eq(f.natoms, 2);
    cr_expect(f.box.has_lattice);
    cr_expect(f.box.h[1][0] == 1 && f.box.h[1][1] == 9 && f.box.h[2][0] == 0.5 && f.box.h[2][1] == 0.25);
    cr_expect(f.box.pbc[0] && !f.box.pbc[1] && f.box.pbc[2]);
    cr_expect(f.has_step && f.step == 42);
    cr_expect(f.has_time && f.time == 2.5);
    cr_expect_str_eq(f.symbols[f.species[0]], "O");
    cr_expect_str_eq(f.symbols[f.species[1]], "H");
    cr_expect(f.pos[0][0] == 1.5 && f.pos[0][1] == 2.5 && f.pos[0][2] == 3.5);
    cr_expect(f.pos[1][0] == -1 && f.pos[1][1] == -2 && f.pos[1][2] == -0.3);
    mdnl_frame_free(&f);
    unlink(p);
}

Test(xyz, lattice_without_pbc_is_periodic_everywhere_and_plain_xyz_is_open)
{
    mdnl_frame f = {0};
    const char *p = write_tmp("1\nLattice=\"3 0 0 0 3 0 0 0 3\"\nAr 0 0 0\n");
    cr_assert_eq(read_first(p, &f), MDNL_OK, "%s", mdnl_last_error());
    cr_expect(f.box.pbc[0] && f.box.pbc[1] && f.box.pbc[2]);
    p = write_tmp("1\njust a comment with = signs and \"quotes\n6 0 0 0 extra columns\n");
    cr_assert_eq(read_first(p, &f), MDNL_OK, "%s", mdnl_last_error());
    cr_expect(!f.box.has_lattice && !f.box.pbc[0] && !f.box.pbc[1] && !f.box.pbc[2]);
    cr_expect_str_eq(f.symbols[0], "6", "integer species are kept as text");
    cr_expect(!f.has_step);
    mdnl_frame_free(&f);
    unlink(p);
}

Test(xyz, pbc_without_lattice_is_an_input_error)
{
    const char *p = write_tmp("1\npbc=\"T T T\"\nC 0 0 0\n");
    mdnl_frame f = {0};
    cr_expect_eq(read_first(p, &f), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), ":2:") != NULL, "%s", mdnl_last_error());
    mdnl_frame_free(&f);
    unlink(p);
}

Test(xyz, frames_stream_with_next_skip_and_count)
{
    const char *p = write_tmp("1\nStep=10\nC 0 0 0\n"
                              "2\nStep=20\nC 0 0 0\nH 1 1 1\n"
                              "\r\n" /* blank line between frames */
                              "3\nStep=30\nC 0 0 0\nH 1 1 1\nN 2 2 2\n"
                              "0\nempty frame\n\n\n");
    mdnl_xyz_reader *r;
    cr_assert_eq(mdnl_xyz_open(p, &r), MDNL_OK);
    int64_t n = -1;
    cr_assert_eq(mdnl_xyz_count(r, &n), MDNL_OK, "%s", mdnl_last_error());
    cr_expect_eq(n, 4);
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_xyz_skip(r), MDNL_OK);
    cr_assert_eq(mdnl_xyz_next(r, &f), MDNL_OK, "%s", mdnl_last_error());
    cr_expect_eq(f.index, 1);
    cr_expect_eq(f.step, 20);
    cr_expect_eq(f.natoms, 2);
    cr_assert_eq(mdnl_xyz_next(r, &f), MDNL_OK, "%s", mdnl_last_error());
    cr_expect_eq(f.natoms, 3);
    cr_expect_eq(f.nspecies, 3);
    cr_assert_eq(mdnl_xyz_next(r, &f), MDNL_OK, "%s", mdnl_last_error());
    cr_expect_eq(f.natoms, 0);
    cr_expect_eq(mdnl_xyz_next(r, &f), MDNL_END);
    mdnl_frame_free(&f);
    mdnl_xyz_close(r);
    unlink(p);
}

Test(xyz, writer_round_trips_extended_and_plain)
{
    mdnl_frame f = {0}, g = {0};
    cr_assert_eq(mdnl_gen_graphene(5, 3, 1.42, 0.1, 99, 15.0, &f), MDNL_OK);
    f.step = 7, f.has_step = true;
    f.time = 0.125, f.has_time = true;
    f.box.h[1][0] = 0.75; /* make it triclinic */
    for (int extended = 0; extended <= 1; ++extended) {
        snprintf(tmp_path, sizeof tmp_path, "/tmp/mdnl-test-xyz-rt-%d.xyz", (int)getpid());
        FILE *fp = fopen(tmp_path, "wb");
        cr_assert_eq(mdnl_xyz_write(fp, &f, extended), MDNL_OK);
        fclose(fp);
        cr_assert_eq(read_first(tmp_path, &g), MDNL_OK, "%s", mdnl_last_error());
        cr_expect_eq(g.natoms, f.natoms);
        for (int64_t i = 0; i < f.natoms; ++i)
            for (int a = 0; a < 3; ++a)
                cr_assert(fabs(g.pos[i][a] - f.pos[i][a]) <= 5e-11, "atom %lld", (long long)i);
        cr_expect_eq(g.step, 7);
        if (extended) {
            cr_expect(g.box.has_lattice && g.box.pbc[0] && g.box.pbc[1] && !g.box.pbc[2]);
            cr_expect(fabs(g.box.h[1][0] - 0.75) < 1e-12 && fabs(g.box.h[0][0] - f.box.h[0][0]) < 1e-9);
            cr_expect(g.has_time && g.time == 0.125);
        } else {
            cr_expect(!g.box.has_lattice);
        }
        unlink(tmp_path);
    }
    mdnl_frame_free(&f);
    mdnl_frame_free(&g);
}

Test(xyz, fast_float_parser_matches_strtod)
{
    uint64_t s = 12345;
    char buf[64];
    const char *fmts[] = {"%.10f", "%.17g", "%.6e", "%.3f", "%g"};
    for (int k = 0; k < 200000; ++k) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        double mag = pow(10.0, (double)((int)(s >> 40) % 24 - 12));
        double v = ((double)(s >> 11) * 0x1.0p-53 - 0.5) * mag;
        int len = snprintf(buf, sizeof buf, fmts[k % 5], v);
        double fast, ref = strtod(buf, NULL);
        cr_assert(mdnl_parse_double(buf, buf + len, &fast), "not parsed: %s", buf);
        cr_assert(fast == ref, "%s: fast %.17g, strtod %.17g", buf, fast, ref);
    }
    const char *bad[] = {"", "-", "1.2.3", "1e", "abc", "1,5", "--1"};
    for (unsigned k = 0; k < sizeof bad / sizeof *bad; ++k) {
        double x;
        cr_expect(!mdnl_parse_double(bad[k], bad[k] + strlen(bad[k]), &x), "\"%s\" parsed", bad[k]);
    }
    const char *longnum = "12345678901234567890123.5e-3";
    double x;
    cr_expect(mdnl_parse_double(longnum, longnum + strlen(longnum), &x) && x == strtod(longnum, NULL));
}

Test(gen_graphene, sheet_has_4_atoms_per_cell_and_bond_shells)
{
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_gen_graphene(4, 3, 1.42, 0.0, 0, 20.0, &f), MDNL_OK);
    cr_expect_eq(f.natoms, 48);
    cr_expect(fabs(f.box.h[0][0] - 4 * 1.42 * sqrt(3)) < 1e-12 && fabs(f.box.h[1][1] - 9 * 1.42) < 1e-12);
    /* minimum-image distances from atom 0 (the cell is > 2 * 2.84 wide) */
    int shells[3] = {0, 0, 0};
    for (int64_t j = 1; j < f.natoms; ++j) {
        double d2 = 0;
        for (int a = 0; a < 2; ++a) {
            double L = f.box.h[a][a], dx = f.pos[j][a] - f.pos[0][a];
            dx -= L * round(dx / L);
            d2 += dx * dx;
        }
        double d = sqrt(d2);
        shells[0] += fabs(d - 1.42) < 1e-9;
        shells[1] += fabs(d - 1.42 * sqrt(3)) < 1e-9;
        shells[2] += fabs(d - 2.84) < 1e-9;
    }
    cr_expect(shells[0] == 3 && shells[1] == 6 && shells[2] == 3, "shells %d %d %d", shells[0], shells[1], shells[2]);
    mdnl_frame_free(&f);
}

Test(gen_graphene, noise_is_seeded_and_bad_arguments_are_usage_errors)
{
    mdnl_frame a = {0}, b = {0}, c = {0};
    cr_assert_eq(mdnl_gen_graphene(3, 3, 1.42, 0.05, 7, 20.0, &a), MDNL_OK);
    cr_assert_eq(mdnl_gen_graphene(3, 3, 1.42, 0.05, 7, 20.0, &b), MDNL_OK);
    cr_assert_eq(mdnl_gen_graphene(3, 3, 1.42, 0.05, 8, 20.0, &c), MDNL_OK);
    cr_expect(memcmp(a.pos, b.pos, sizeof *a.pos * (size_t)a.natoms) == 0, "same seed, same sheet");
    cr_expect(memcmp(a.pos, c.pos, sizeof *a.pos * (size_t)a.natoms) != 0, "another seed, another sheet");
    double rms = 0;
    mdnl_frame p = {0};
    cr_assert_eq(mdnl_gen_graphene(3, 3, 1.42, 0.0, 0, 20.0, &p), MDNL_OK);
    for (int64_t i = 0; i < a.natoms; ++i)
        for (int k = 0; k < 3; ++k)
            rms += (a.pos[i][k] - p.pos[i][k]) * (a.pos[i][k] - p.pos[i][k]);
    rms = sqrt(rms / (3.0 * a.natoms));
    cr_expect(rms > 0.03 && rms < 0.07, "noise rms %g for sigma 0.05", rms);
    cr_expect_eq(mdnl_gen_graphene(0, 3, 1.42, 0, 0, 20, &p), MDNL_ERR_USAGE);
    cr_expect_eq(mdnl_gen_graphene(3, 3, -1, 0, 0, 20, &p), MDNL_ERR_USAGE);
    cr_expect_eq(mdnl_gen_graphene(3, 3, 1.42, NAN, 0, 20, &p), MDNL_ERR_USAGE);
    mdnl_frame_free(&a);
    mdnl_frame_free(&b);
    mdnl_frame_free(&c);
    mdnl_frame_free(&p);
}

/* test_xyz.c — the XYZ / extended-XYZ reader and writer (io/xyz_*.c), the
 * fast float parser, and the XYZ side of io/reader.c. The fixtures are in
 * data/ and data/bad/ (made by data/make_fixtures.sh); the graphene
 * generator has its own file, test_gen_graphene.c. */
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
        {"count-beyond-lines.xyz", "count-beyond-lines.xyz:4:", "2 atom lines"},
        {"fractional-count.xyz", "fractional-count.xyz:1:", "\"2.5\""},
        {"lattice-nonnumeric.xyz", "lattice-nonnumeric.xyz:2:", "\"abc\""},
        {"pbc-without-lattice.xyz", "pbc-without-lattice.xyz:2:", "without Lattice"},
        {"pbc-bad-value.xyz", "pbc-bad-value.xyz:2:", "\"X\""},
        {"unclosed-quote.xyz", "unclosed-quote.xyz:2:", "closing quote"},
        {"properties-no-pos.xyz", "properties-no-pos.xyz:2:", "pos:R:3"},
        {"frame1-nonnumeric.xyz", "frame1-nonnumeric.xyz:7: frame 1:", "coordinate y of atom 1, found \"abc\""},
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
    cr_expect(strstr(mdnl_last_error(), "o such file") != NULL, "%s", mdnl_last_error());
    cr_expect_eq(mdnl_xyz_open(MDNL_DATA_DIR, &r), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), MDNL_DATA_DIR ": is a directory") != NULL, "%s", mdnl_last_error());
    mdnl_reader *g;
    cr_expect_eq(mdnl_reader_open(MDNL_DATA_DIR "/bad", NULL, &g), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "is a directory") != NULL, "%s", mdnl_last_error());
    cr_expect_eq(mdnl_reader_open("/nonexistent/b.extxyz", NULL, &g), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "/nonexistent/b.extxyz") != NULL, "%s", mdnl_last_error());
}

Test(xyz, triclinic_fixture_reads_rows_columns_and_implicit_pbc)
{
    mdnl_frame f = {0};
    cr_assert_eq(read_first(MDNL_DATA_DIR "/triclinic.extxyz", &f), MDNL_OK, "%s", mdnl_last_error());
    const double h[3][3] = {{4, 0, 0}, {1, 3.5, 0}, {0.5, 0.25, 5}};
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            cr_expect_eq(f.box.h[a][b], h[a][b], "h[%d][%d] = %g", a, b, f.box.h[a][b]);
    cr_expect(f.box.has_lattice && f.box.pbc[0] && f.box.pbc[1] && f.box.pbc[2], "Lattice without pbc: T T T");
    cr_expect(fabs(mdnl_box_volume(&f.box) - 70.0) < 1e-12);
    cr_expect(f.has_step && f.step == 5, "lower-case step=");
    cr_expect(!f.has_time && f.time == 0);
    cr_assert_eq(f.natoms, 4);
    cr_expect_eq(f.nspecies, 2);
    cr_expect_str_eq(f.symbols[0], "Si");
    cr_expect_str_eq(f.symbols[1], "O");
    const int sp[4] = {0, 0, 1, 1};
    const double pos[4][3] = {{0, 0, 0}, {1.5, 1.75, 2.5}, {2.25, 0.5, 1.0}, {-0.5, 3.0, 4.75}};
    for (int i = 0; i < 4; ++i) {
        cr_expect_eq(f.species[i], sp[i], "atom %d", i);
        for (int a = 0; a < 3; ++a)
            cr_expect_eq(f.pos[i][a], pos[i][a], "atom %d axis %d: %g (the id column is not x)", i, a, f.pos[i][a]);
    }
    mdnl_frame_free(&f);
}

Test(xyz, trajectory_fixture_streams_step_time_and_index)
{
    mdnl_xyz_reader *r;
    cr_assert_eq(mdnl_xyz_open(MDNL_DATA_DIR "/trajectory-3frames.extxyz", &r), MDNL_OK);
    mdnl_frame f = {0};
    for (int k = 0; k < 3; ++k) {
        cr_assert_eq(mdnl_xyz_next(r, &f), MDNL_OK, "%s", mdnl_last_error());
        cr_expect_eq(f.index, k);
        cr_expect(f.has_step && f.step == 100 * k, "frame %d step %lld", k, (long long)f.step);
        cr_expect(f.has_time && f.time == k + 0.5, "frame %d time %g", k, f.time);
        cr_expect_eq(f.natoms, 3);
        cr_expect_str_eq(f.symbols[f.species[0]], "O");
        cr_expect_str_eq(f.symbols[f.species[2]], "H");
        cr_expect_eq(f.pos[0][0], 1.0 + 0.1 * k, "frame %d x %.17g", k, f.pos[0][0]);
        cr_expect_eq(f.pos[1][0], 2.0 + 0.1 * k, "frame %d x %.17g", k, f.pos[1][0]);
        cr_expect_eq(f.box.h[2][2], 6.0);
    }
    cr_expect_eq(mdnl_xyz_next(r, &f), MDNL_END);
    cr_expect_eq(mdnl_xyz_next(r, &f), MDNL_END, "the end stays the end");
    mdnl_frame_free(&f);
    mdnl_xyz_close(r);
}

Test(xyz, integer_species_and_key_like_words_in_a_plain_comment)
{
    mdnl_frame f = {0};
    cr_assert_eq(read_first(MDNL_DATA_DIR "/species-integers.xyz", &f), MDNL_OK, "%s", mdnl_last_error());
    cr_expect(!f.box.has_lattice && !f.box.pbc[0] && !f.box.pbc[1] && !f.box.pbc[2]);
    cr_expect(!f.has_step && f.step == 0, "\"step 100\" is comment text, not a key");
    cr_expect(!f.has_time);
    cr_expect_eq(f.nspecies, 2);
    cr_expect_str_eq(f.symbols[0], "6");
    cr_expect_str_eq(f.symbols[1], "1");
    cr_expect(f.species[0] == 0 && f.species[1] == 1 && f.species[2] == 1);
    cr_expect(f.pos[2][0] == -0.63 && f.pos[2][2] == 0.63);
    mdnl_frame_free(&f);
}

Test(xyz, ase_forms_pbc_list_and_01_z_column_lower_case_keys)
{
    mdnl_xyz_reader *r;
    cr_assert_eq(mdnl_xyz_open(MDNL_DATA_DIR "/ase-forms.extxyz", &r), MDNL_OK);
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_xyz_next(r, &f), MDNL_OK, "%s", mdnl_last_error());
    cr_expect(f.box.pbc[0] && f.box.pbc[1] && !f.box.pbc[2], "pbc=[True, True, False]");
    cr_expect(f.has_time && f.time == 0.25, "lower-case time=");
    cr_expect(!f.has_step && f.step == 0);
    cr_expect_str_eq(f.symbols[f.species[0]], "8", "Z:I:1 is the species column");
    cr_expect_str_eq(f.symbols[f.species[1]], "1");
    cr_expect(f.pos[1][0] == 1.5 && f.pos[1][1] == 2.5 && f.pos[1][2] == 3.5);
    cr_assert_eq(mdnl_xyz_next(r, &f), MDNL_OK, "%s", mdnl_last_error());
    cr_expect(f.box.pbc[0] && !f.box.pbc[1] && f.box.pbc[2], "pbc=\"1 0 1\"");
    cr_expect(f.has_step == false && f.step == 1, "step defaults to the frame index");
    cr_expect_eq(f.natoms, 1);
    cr_expect_str_eq(f.symbols[f.species[0]], "6", "Z after pos");
    cr_expect(f.pos[0][0] == 2 && f.pos[0][1] == 3 && f.pos[0][2] == 4);
    mdnl_frame_free(&f);
    mdnl_xyz_close(r);
}

Test(xyz, generic_reader_dispatches_xyz_with_count_skip_and_next)
{
    mdnl_reader *r;
    cr_assert_eq(mdnl_reader_open(MDNL_DATA_DIR "/trajectory-3frames.extxyz", NULL, &r), MDNL_OK, "%s",
                 mdnl_last_error());
    cr_expect_str_eq(mdnl_reader_format(r), "extxyz");
    int64_t n = -1;
    cr_assert_eq(mdnl_reader_count(r, &n), MDNL_OK);
    cr_expect_eq(n, 3);
    cr_assert_eq(mdnl_reader_skip(r), MDNL_OK);
    cr_assert_eq(mdnl_reader_count(r, &n), MDNL_OK);
    cr_expect_eq(n, 3, "count does not depend on the cursor");
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_reader_next(r, &f), MDNL_OK);
    cr_expect(f.index == 1 && f.step == 100, "count did not move the cursor: frame %lld", (long long)f.index);
    cr_assert_eq(mdnl_reader_skip(r), MDNL_OK);
    cr_expect_eq(mdnl_reader_skip(r), MDNL_END);
    cr_expect_eq(mdnl_reader_next(r, &f), MDNL_END);
    mdnl_frame_free(&f);
    mdnl_reader_close(r);
    mdnl_reader_close(NULL);
    mdnl_xyz_close(NULL);
}

Test(xyz, count_reports_a_malformed_frame_it_finds)
{
    mdnl_xyz_reader *r;
    char path[512];
    snprintf(path, sizeof path, "%s/bad/second-frame-truncated.xyz", MDNL_DATA_DIR);
    cr_assert_eq(mdnl_xyz_open(path, &r), MDNL_OK);
    int64_t n = -1;
    cr_expect_eq(mdnl_xyz_count(r, &n), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "second-frame-truncated.xyz:7:") != NULL, "%s", mdnl_last_error());
    mdnl_frame f = {0};
    cr_expect_eq(mdnl_xyz_next(r, &f), MDNL_OK, "frame 0 is still readable");
    cr_expect_eq(mdnl_xyz_next(r, &f), MDNL_ERR_INPUT);
    mdnl_frame_free(&f);
    mdnl_xyz_close(r);
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

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s ^ (*s >> 29);
}

/* Distance in ulps between two finite doubles of the same sign. */
static uint64_t ulps(double a, double b)
{
    int64_t ia, ib;
    memcpy(&ia, &a, 8);
    memcpy(&ib, &b, 8);
    return ia > ib ? (uint64_t)(ia - ib) : (uint64_t)(ib - ia);
}

static void expect_parse_equals_strtod(const char *buf)
{
    double fast = 0, ref = strtod(buf, NULL);
    cr_assert(mdnl_parse_double(buf, buf + strlen(buf), &fast), "not parsed: %s", buf);
    if (isnan(ref)) {
        cr_assert(isnan(fast), "%s: fast %g", buf, fast);
        return;
    }
    cr_assert(fast == ref && signbit(fast) == signbit(ref), "%s: fast %.17g, strtod %.17g (%llu ulp)", buf, fast, ref,
              (unsigned long long)ulps(fast, ref));
}

Test(xyz, fast_float_parser_equals_strtod_on_random_values_in_every_format)
{
    /* The parser is exact (not merely within 1 ulp): every value below must
     * equal strtod's bit for bit. */
    uint64_t s = 12345;
    char buf[512];
    const char *fmts[] = {"%.10f", "%.17g", "%.16e", "%.6e", "%.3f", "%g", "%.8f", "%.15g", "%.19g", "%.20f"};
    const int nf = (int)(sizeof fmts / sizeof *fmts);
    for (int k = 0; k < 400000; ++k) {
        double mag = pow(10.0, (double)((int)(lcg(&s) >> 40) % 30 - 15));
        double v = ((double)(lcg(&s) >> 11) * 0x1.0p-53 - 0.5) * mag;
        snprintf(buf, sizeof buf, fmts[k % nf], v);
        expect_parse_equals_strtod(buf);
    }
    /* Random bit patterns over the whole finite range, shortest round trip. */
    for (int k = 0; k < 200000; ++k) {
        uint64_t bits = lcg(&s);
        double v;
        memcpy(&v, &bits, 8);
        if (!isfinite(v))
            continue;
        snprintf(buf, sizeof buf, "%.17g", v);
        expect_parse_equals_strtod(buf);
        double back;
        mdnl_parse_double(buf, buf + strlen(buf), &back);
        cr_assert(back == v, "%s does not round-trip", buf);
    }
    /* Values just beside double midpoints (m * 10^e with 17-19 digits):
     * the cases where a long-double shortcut would round twice. */
    for (int k = 0; k < 200000; ++k) {
        double v = 1.0 + (double)(lcg(&s) >> 11) * 0x1.0p-53;
        double next = nextafter(v, 2.0);
        int len = snprintf(buf, sizeof buf, "%.25f", v + (next - v) / 2); /* the midpoint, printed long */
        expect_parse_equals_strtod(buf);
        snprintf(buf, sizeof buf, "%.18e", (v + next) / 2 * pow(10.0, (double)((int)(lcg(&s) >> 40) % 40 - 20)));
        expect_parse_equals_strtod(buf);
        (void)len;
    }
}

Test(xyz, fast_float_parser_edge_cases)
{
    const char *good[] = {"0",       "-0",        "+0.0",     ".5",       "5.",        "-.25",
                          "1e0",     "1E+2",      "1e-2",     "1.5e308",  "1.7976931348623157e308",
                          "2.2250738585072014e-308", "4.9e-324", "1e-400", "1e400", "-1e400",
                          "9007199254740993", "18446744073709551615", "18446744073709551616", "123456789012345678901234567890",
                          "0.000000000000000000000000000001234567890123456789", "00000000000000000000000001.5",
                          "1.00000000000000011102230246251565404236316680908203125", "inf", "-Infinity", "nan",
                          "3.1415926535897932384626433832795028841971", "1e-27", "9.999999999999999e27"};
    for (unsigned k = 0; k < sizeof good / sizeof *good; ++k)
        expect_parse_equals_strtod(good[k]);
    const char *bad[] = {"", "-", "+", ".", "1.2.3", "1e", "1e+", "abc", "1,5", "--1", "+-1", "1 2", "0x10", "1e5x", "e5"};
    for (unsigned k = 0; k < sizeof bad / sizeof *bad; ++k) {
        double x;
        cr_expect(!mdnl_parse_double(bad[k], bad[k] + strlen(bad[k]), &x), "\"%s\" parsed as %g", bad[k], x);
    }
    /* The end pointer bounds the token: "1.25" inside "1.2599". */
    const char *t = "1.2599";
    double x = 0;
    cr_expect(mdnl_parse_double(t, t + 4, &x) && x == 1.25);
}

Test(xyz, writer_reports_a_write_error)
{
    FILE *fp = fopen("/dev/full", "wb");
    if (!fp)
        cr_skip_test("no /dev/full");
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_gen_graphene(40, 40, 1.42, 0, 0, 20.0, &f), MDNL_OK); /* 6400 lines: more than a buffer */
    cr_expect_eq(mdnl_xyz_write(fp, &f, 1), MDNL_ERR_RESOURCE);
    cr_expect(strlen(mdnl_last_error()) > 0);
    fclose(fp);
    mdnl_frame_free(&f);
}

Test(xyz, writer_round_trips_a_trajectory_with_integer_species_and_open_lattice)
{
    mdnl_frame f = {0}, g = {0};
    snprintf(tmp_path, sizeof tmp_path, "/tmp/mdnl-test-xyz-traj-%d.extxyz", (int)getpid());
    FILE *fp = fopen(tmp_path, "wb");
    cr_assert_not_null(fp);
    for (int k = 0; k < 3; ++k) {
        cr_assert_eq(read_first(MDNL_DATA_DIR "/species-integers.xyz", &f), MDNL_OK);
        f.pos[0][0] = 0.1 * k + 1e-9;
        f.step = 1000 * k, f.has_step = true;
        if (k == 1) { /* a lattice that is periodic nowhere stays a lattice */
            f.box.has_lattice = true;
            f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 7.5;
        }
        cr_assert_eq(mdnl_xyz_write(fp, &f, 1), MDNL_OK);
    }
    fclose(fp);
    mdnl_xyz_reader *r;
    cr_assert_eq(mdnl_xyz_open(tmp_path, &r), MDNL_OK);
    for (int k = 0; k < 3; ++k) {
        cr_assert_eq(mdnl_xyz_next(r, &g), MDNL_OK, "%s", mdnl_last_error());
        cr_expect_eq(g.step, 1000 * k);
        cr_expect_eq(g.natoms, 3);
        cr_expect_str_eq(g.symbols[g.species[0]], "6");
        cr_expect_str_eq(g.symbols[g.species[1]], "1");
        cr_expect(fabs(g.pos[0][0] - (0.1 * k + 1e-9)) < 1e-12, "frame %d x %.17g", k, g.pos[0][0]);
        cr_expect_eq(g.box.has_lattice, k == 1);
        cr_expect(!g.box.pbc[0] && !g.box.pbc[1] && !g.box.pbc[2], "frame %d", k);
        if (k == 1)
            cr_expect_eq(g.box.h[2][2], 7.5);
    }
    cr_expect_eq(mdnl_xyz_next(r, &g), MDNL_END);
    mdnl_xyz_close(r);
    unlink(tmp_path);
    mdnl_frame_free(&f);
    mdnl_frame_free(&g);
}

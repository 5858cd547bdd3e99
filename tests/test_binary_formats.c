/* test_binary_formats.c — the XTC, TRR and DCD readers (io/xtc_reader.c,
 * io/trr_reader.c, io/dcd_reader.c), the XTC and DCD writers, --topology and
 * --units. The oracle is MDAnalysis: data/binary/ holds files its writers
 * made and, in expected-*.tsv, what its readers (the reference xdrfile C
 * decoder for XTC and TRR) return from them (tools/make_binary_fixtures.py).
 * Positions must agree bit for bit as float32; hostile files are made here. */
#define _POSIX_C_SOURCE 200809L
#include "cli_test_util.h"

#include "dcd_reader.h"
#include "dcd_writer.h"
#include "reader.h"
#include "xdr.h"
#include "xtc_reader.h"
#include "xtc_writer.h"

#include <math.h>
#include <stdint.h>

TestSuite(binary, .init = make_tmpdir, .fini = remove_tmpdir);

#define BIN MDNL_DATA_DIR "/binary/"

static void data_path(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s%s", BIN, name); }

static int read_threads = 1; /* mdnl_read_options.threads of open_native */

static mdnl_reader *open_native(const char *name, bool native)
{
    char p[512];
    data_path(p, sizeof p, name);
    mdnl_read_options ro = {.units_native = native, .threads = read_threads};
    mdnl_reader *r = NULL;
    mdnl_status st = mdnl_reader_open(p, &ro, &r);
    cr_assert_eq(st, MDNL_OK, "%s: %s", name, mdnl_last_error());
    return r;
}

/* Reads every frame of `name` and compares it with expected-*.tsv. */
static void check_against_mdanalysis(const char *name, double box_tol)
{
    mdnl_reader *r = open_native(name, true);
    FILE *ff = fopen(BIN "expected-frames.tsv", "r"), *fp = fopen(BIN "expected-positions.tsv", "r");
    cr_assert(ff && fp);
    char line[1024], file[128];
    mdnl_frame f = {0};
    int frames = 0, atoms_checked = 0;
    while (fgets(line, sizeof line, ff)) {
        long k, step, natoms;
        double t, box[9];
        if (line[0] == '#' || sscanf(line, "%127s %ld %ld %lf %ld %lf %lf %lf %lf %lf %lf %lf %lf %lf", file, &k,
                                     &step, &t, &natoms, &box[0], &box[1], &box[2], &box[3], &box[4], &box[5], &box[6],
                                     &box[7], &box[8]) != 14 ||
            strcmp(file, name) != 0)
            continue;
        cr_assert_eq(mdnl_reader_next(r, &f), MDNL_OK, "%s frame %ld: %s", name, k, mdnl_last_error());
        ++frames;
        cr_expect_eq(f.index, k);
        cr_expect_eq(f.natoms, natoms, "%s frame %ld: natoms %lld", name, k, (long long)f.natoms);
        cr_expect_eq(f.step, step, "%s frame %ld: step %lld, MDAnalysis %ld", name, k, (long long)f.step, step);
        cr_expect(fabs(f.time - t) <= 1e-6 * fabs(t) + 1e-9, "%s frame %ld: time %.9g, MDAnalysis %.9g", name, k,
                  f.time, t);
        bool zero = true;
        for (int q = 0; q < 9; ++q) {
            zero &= box[q] == 0;
            const double h = f.box.h[q / 3][q % 3];
            cr_expect(box_tol > 0 ? fabs(h - box[q]) <= box_tol : (float)h == (float)box[q],
                      "%s frame %ld: box[%d] %.9g, MDAnalysis %.9g",
                      name, k, q, h, box[q]);
        }
        cr_expect_eq(f.box.has_lattice, !zero);
        cr_expect_eq(f.box.pbc[0] && f.box.pbc[1] && f.box.pbc[2], !zero);
        cr_expect_eq(f.nspecies, 1);
        cr_expect_str_eq(f.symbols[0], "X");
    }
    cr_expect_eq(mdnl_reader_next(r, &f), MDNL_END, "%s: more frames than MDAnalysis reads", name);
    cr_assert(frames > 0, "%s: no expected frames", name);
    /* Positions, bit for bit: re-read and walk the positions table. */
    mdnl_reader_close(r);
    r = open_native(name, true);
    long cur = -1;
    while (fgets(line, sizeof line, fp)) {
        long k, i;
        float x, y, z;
        if (line[0] == '#' || sscanf(line, "%127s %ld %ld %f %f %f", file, &k, &i, &x, &y, &z) != 6 ||
            strcmp(file, name) != 0)
            continue;
        while (cur < k) {
            cr_assert_eq(mdnl_reader_next(r, &f), MDNL_OK);
            cur = f.index;
        }
        const double *p = f.pos[i];
        cr_assert((float)p[0] == x && (float)p[1] == y && (float)p[2] == z && p[0] == (double)(float)p[0],
                  "%s frame %ld atom %ld: mdnl %.9g %.9g %.9g, MDAnalysis %.9g %.9g %.9g", name, k, i, p[0], p[1],
                  p[2], x, y, z);
        ++atoms_checked;
    }
    cr_expect_eq(atoms_checked, 3 * (int)f.natoms, "%s: %d positions checked", name, atoms_checked);
    fclose(ff);
    fclose(fp);
    mdnl_frame_free(&f);
    mdnl_reader_close(r);
}

Test(binary, xtc_precision_1000_positions_bit_exact_with_mdanalysis) { check_against_mdanalysis("w60.xtc", 0); }
Test(binary, xtc_precision_100_positions_bit_exact_with_mdanalysis) { check_against_mdanalysis("w60-p100.xtc", 0); }
Test(binary, xtc_of_5_atoms_plain_floats_exact) { check_against_mdanalysis("w5.xtc", 0); }
/* XTC frames decoded by worker threads (io/xtc_reader.c): the same bits. */
Test(binary, xtc_decoded_by_three_threads_bit_exact_with_mdanalysis)
{
    read_threads = 3;
    check_against_mdanalysis("w60.xtc", 0);
    check_against_mdanalysis("w60-p100.xtc", 0);
    check_against_mdanalysis("w5.xtc", 0);
}
Test(binary, trr_positions_box_step_time_exact) { check_against_mdanalysis("w60.trr", 0); }
Test(binary, dcd_with_cell_matches_mdanalysis) { check_against_mdanalysis("w60-cell.dcd", 2e-5); }
Test(binary, dcd_without_cell_is_open) { check_against_mdanalysis("w60-nocell.dcd", 0); }

Test(binary, big_endian_dcd_reads_as_the_little_endian_one)
{
    mdnl_reader *a = open_native("w60-cell.dcd", false), *b = open_native("w60-cell-be.dcd", false);
    mdnl_frame fa = {0}, fb = {0};
    int n = 0;
    mdnl_status sa, sb;
    while ((sa = mdnl_reader_next(a, &fa)) == MDNL_OK) {
        cr_assert_eq((sb = mdnl_reader_next(b, &fb)), MDNL_OK, "%s", mdnl_last_error());
        cr_assert_eq(fa.natoms, fb.natoms);
        cr_expect(memcmp(fa.pos, fb.pos, (size_t)fa.natoms * sizeof *fa.pos) == 0, "frame %d positions differ", n);
        cr_expect(memcmp(fa.box.h, fb.box.h, sizeof fa.box.h) == 0, "frame %d cells differ", n);
        cr_expect_eq(fa.step, fb.step);
        cr_expect_eq(fa.time, fb.time);
        ++n;
    }
    cr_expect_eq(sa, MDNL_END);
    cr_expect_eq(mdnl_reader_next(b, &fb), MDNL_END);
    cr_expect_eq(n, 3);
    cr_expect_str_eq(mdnl_reader_format(b), "dcd");
    mdnl_frame_free(&fa);
    mdnl_frame_free(&fb);
    mdnl_reader_close(a);
    mdnl_reader_close(b);
}

Test(binary, xtc_angstrom_is_ten_times_native_and_units_say_so)
{
    mdnl_reader *nm = open_native("w60.xtc", true), *aa = open_native("w60.xtc", false);
    cr_expect_str_eq(mdnl_reader_info(nm, "units"), "nm (native)");
    cr_expect_str_eq(mdnl_reader_info(aa, "units"), "angstrom (converted from nm)");
    mdnl_frame a = {0}, b = {0};
    cr_assert_eq(mdnl_reader_next(nm, &a), MDNL_OK);
    cr_assert_eq(mdnl_reader_next(aa, &b), MDNL_OK);
    for (int64_t i = 0; i < a.natoms; ++i)
        for (int d = 0; d < 3; ++d)
            cr_assert_eq(b.pos[i][d], a.pos[i][d] * 10.0);
    cr_expect_eq(b.box.h[1][1], a.box.h[1][1] * 10.0);
    mdnl_frame_free(&a);
    mdnl_frame_free(&b);
    mdnl_reader_close(nm);
    mdnl_reader_close(aa);
}

Test(binary, count_and_skip_walk_the_frames)
{
    static const char *const names[] = {"w60.xtc", "w60.trr", "w60-cell.dcd", "mixture.xtc", "mixture.dcd"};
    static const int64_t counts[] = {3, 3, 3, 10, 10};
    for (int k = 0; k < 5; ++k) {
        mdnl_reader *r = open_native(names[k], false);
        int64_t n = -1;
        cr_expect_eq(mdnl_reader_count(r, &n), MDNL_OK);
        cr_expect_eq(n, counts[k], "%s: %lld frames", names[k], (long long)n);
        mdnl_frame f = {0};
        cr_assert_eq(mdnl_reader_skip(r), MDNL_OK);
        cr_assert_eq(mdnl_reader_next(r, &f), MDNL_OK, "%s", mdnl_last_error());
        cr_expect_eq(f.index, 1, "%s", names[k]);
        mdnl_frame_free(&f);
        mdnl_reader_close(r);
    }
}

/* ---- writers: round trips through mdnl ---- */

static void random_frame(mdnl_frame *f, int64_t n, double edge, unsigned seed)
{
    cr_assert_eq(mdnl_frame_reserve(f, n), MDNL_OK);
    f->natoms = n;
    srand(seed);
    for (int64_t i = 0; i < n; ++i)
        for (int d = 0; d < 3; ++d)
            f->pos[i][d] = edge * ((double)rand() / RAND_MAX - 0.2);
    mdnl_frame_species_unknown(f);
    memset(&f->box, 0, sizeof f->box);
    f->box.h[0][0] = edge, f->box.h[1][1] = edge, f->box.h[2][2] = edge, f->box.h[1][0] = 0.3 * edge;
    f->box.has_lattice = f->box.pbc[0] = f->box.pbc[1] = f->box.pbc[2] = true;
    f->step = 42, f->has_step = true, f->time = 2.5, f->has_time = true;
}

/* Writes f as XTC, reads it back: positions within half a precision step. */
static void xtc_round_trip(int64_t n, double edge, float precision)
{
    mdnl_frame f = {0}, g = {0};
    random_frame(&f, n, edge, (unsigned)n);
    char p[512];
    snprintf(p, sizeof p, "%s/rt.xtc", tmpdir);
    FILE *fp = fopen(p, "wb");
    cr_assert_eq(mdnl_xtc_write(fp, &f, true, precision), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_xtc_write(fp, &f, true, precision), MDNL_OK);
    fclose(fp);
    mdnl_xtc_reader *r;
    cr_assert_eq(mdnl_xtc_open(p, true, &r), MDNL_OK);
    for (int k = 0; k < 2; ++k) {
        cr_assert_eq(mdnl_xtc_next(r, &g), MDNL_OK, "%s", mdnl_last_error());
        cr_assert_eq(g.natoms, n);
        double worst = 0;
        for (int64_t i = 0; i < n; ++i)
            for (int d = 0; d < 3; ++d)
                worst = fmax(worst, fabs(g.pos[i][d] - f.pos[i][d]));
        /* Half a step of 1/precision, plus float32 rounding of the values. */
        const double tol = 0.5 / precision + 2 * edge * 1.2e-7;
        cr_expect(worst <= tol, "%lld atoms, edge %g, precision %g: error %g > %g", (long long)n, edge,
                  (double)precision, worst, tol);
        cr_expect_eq(g.step, 42);
        cr_expect_eq((float)g.box.h[1][0], (float)f.box.h[1][0]);
    }
    cr_expect_eq(mdnl_xtc_next(r, &g), MDNL_END);
    mdnl_xtc_close(r);
    mdnl_frame_free(&f);
    mdnl_frame_free(&g);
}

Test(binary, xtc_writer_round_trips_within_precision)
{
    xtc_round_trip(7, 3.0, 1000);       /* plain floats */
    xtc_round_trip(10, 3.0, 1000);      /* the smallest compressed frame */
    xtc_round_trip(20000, 12.0, 1000);  /* ranges below 2^24: one mixed-radix number */
    xtc_round_trip(2000, 12.0, 100);
    xtc_round_trip(3000, 60000.0, 1000); /* ranges beyond 2^24: three fields */
}

Test(binary, convert_xtc_to_dcd_and_back_keeps_positions)
{
    cr_assert_eq(mdnl("convert -q %sw60.xtc a.dcd", BIN), 0, "%s", err_text);
    cr_assert_eq(mdnl("convert -q a.dcd b.xtc"), 0, "%s", err_text);
    cr_assert_eq(mdnl("convert -q b.xtc b.extxyz"), 0, "%s", err_text);
    cr_assert_eq(mdnl("convert -q %sw60.xtc a.extxyz", BIN), 0, "%s", err_text);
    /* The triclinic frame 1 is turned to DCD's orientation, so compare the
     * orthorhombic frames 0 and 2 coordinate by coordinate. */
    char a[1 << 15], b[1 << 15], p[512];
    snprintf(p, sizeof p, "%s/a.extxyz", tmpdir);
    slurp(p, a, sizeof a);
    snprintf(p, sizeof p, "%s/b.extxyz", tmpdir);
    slurp(p, b, sizeof b);
    const char *sa = a, *sb = b;
    int compared = 0;
    for (int line = 0; *sa && *sb; ++line) {
        const int frame = line / 62, row = line % 62;
        double xa[3], xb[3];
        if (frame != 1 && row >= 2 && sscanf(sa, "X %lf %lf %lf", &xa[0], &xa[1], &xa[2]) == 3 &&
            sscanf(sb, "X %lf %lf %lf", &xb[0], &xb[1], &xb[2]) == 3) {
            for (int d = 0; d < 3; ++d)
                cr_expect(fabs(xa[d] - xb[d]) <= 0.005 + 1e-6, "line %d: %g vs %g", line, xa[d], xb[d]);
            ++compared;
        }
        sa = strchr(sa, '\n') ? strchr(sa, '\n') + 1 : "";
        sb = strchr(sb, '\n') ? strchr(sb, '\n') + 1 : "";
    }
    cr_expect_eq(compared, 120);
}

Test(binary, dcd_writer_keeps_a_triclinic_cells_distances)
{
    /* data/triclinic.extxyz: a cell with b and c off the axes; DCD turns it,
     * the neighbor distances must not change. */
    cr_assert_eq(mdnl("convert -q %s/triclinic.extxyz t.dcd", MDNL_DATA_DIR), 0, "%s", err_text);
    cr_assert_eq(mdnl("neighbors %s/triclinic.extxyz -c 3 -o a.tsv", MDNL_DATA_DIR), 0, "%s", err_text);
    cr_assert_eq(mdnl("neighbors t.dcd -c 3 -o b.tsv"), 0, "%s", err_text);
    char a[1 << 14], b[1 << 14], p[512];
    snprintf(p, sizeof p, "%s/a.tsv", tmpdir);
    slurp(p, a, sizeof a);
    snprintf(p, sizeof p, "%s/b.tsv", tmpdir);
    slurp(p, b, sizeof b);
    cr_assert(count_lines(a) > 3);
    cr_expect_eq(count_lines(a), count_lines(b));
    const char *sa = strchr(a, '\n') + 1, *sb = strchr(b, '\n') + 1;
    while (*sa && *sb) {
        long fa, ia, ja, fb, ib, jb;
        double da, db;
        cr_assert_eq(sscanf(sa, "%ld %ld %ld %lf", &fa, &ia, &ja, &da), 4);
        cr_assert_eq(sscanf(sb, "%ld %ld %ld %lf", &fb, &ib, &jb, &db), 4);
        cr_expect(ia == ib && ja == jb && fabs(da - db) < 1e-5, "pair %ld-%ld %.9g vs %ld-%ld %.9g", ia, ja, da, ib,
                  jb, db);
        sa = strchr(sa, '\n') + 1;
        sb = strchr(sb, '\n') + 1;
    }
}

Test(binary, binary_output_to_stdout_is_a_usage_error)
{
    cr_expect_eq(mdnl("convert %sw60.xtc - --to xtc", BIN), 2);
    expect_one_error_line();
    cr_expect_eq(mdnl("convert %sw60.xtc - --to dcd", BIN), 2);
    cr_expect_eq(mdnl("convert %sw60.xtc x.out --to pdb", BIN), 2);
    cr_expect(strstr(err_text, "xtc (.xtc), dcd (.dcd)") != NULL, "%s", err_text);
}

/* ---- the CLI: info, --topology, --pairs, rdf against InterRDF ---- */

Test(binary, info_says_format_units_and_missing_species)
{
    cr_assert_eq(mdnl("info %sw60.xtc", BIN), 0, "%s", err_text);
    cr_expect(strstr(out_text, "(xtc)") && strstr(out_text, "units    angstrom (converted from nm)") && strstr(out_text, "X 60") &&
                  strstr(out_text, "--topology"),
              "%s", out_text);
    cr_assert_eq(mdnl("info %sw60.trr --units native --json", BIN), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"format\":\"trr\"") && strstr(out_text, "\"units\":\"nm (native)\"") &&
                  strstr(out_text, "\"species_from\":\"none\"") && strstr(out_text, "\"nframes\":3"),
              "%s", out_text);
    cr_assert_eq(mdnl("info %smixture.dcd --topology %s/rdf/lj_mixture.xyz --json", BIN, MDNL_DATA_DIR), 0, "%s",
                 err_text);
    cr_expect(strstr(out_text, "\"species\":{\"A\":205,\"B\":51}") && strstr(out_text, "\"species_from\":\"topology\""),
              "%s", out_text);
    cr_expect_eq(mdnl("info %sw60.xtc --units parsec", BIN), 2);
    expect_one_error_line();
}

Test(binary, pairs_without_topology_is_an_error_naming_topology)
{
    cr_expect_eq(mdnl("rdf %smixture.xtc --rmax 2 --bins 10 --pairs A-B", BIN), 2);
    expect_one_error_line();
    cr_expect(strstr(err_text, "--topology") != NULL, "%s", err_text);
}

Test(binary, topology_with_another_atom_count_exit_3)
{
    cr_expect_eq(mdnl("info %sw60.xtc --topology %s/rdf/lj_mixture.xyz", BIN, MDNL_DATA_DIR), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "256") && strstr(err_text, "60"), "%s", err_text);
}

/* mdnl rdf on the mixture against MDAnalysis InterRDF (tolerance: four
 * ordered pairs per bin, see tools/make_binary_fixtures.py). */
static void rdf_against_interrdf(const char *ext)
{
    cr_assert_eq(mdnl("rdf %smixture.%s --rmax 2.5 --bins 50 -o total.tsv", BIN, ext), 0, "%s", err_text);
    cr_assert_eq(mdnl("rdf %smixture.%s --rmax 2.5 --bins 50 --topology %s/rdf/lj_mixture.xyz --pairs A-B -o ab.tsv",
                      BIN, ext, MDNL_DATA_DIR),
                 0, "%s", err_text);
    char ref[512];
    snprintf(ref, sizeof ref, "%smixture-rdf-%s.tsv", BIN, ext);
    FILE *fr = fopen(ref, "r");
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, "%s/total.tsv", tmpdir);
    snprintf(p2, sizeof p2, "%s/ab.tsv", tmpdir);
    FILE *ft = fopen(p1, "r"), *fa = fopen(p2, "r");
    cr_assert(fr && ft && fa);
    char lr[512], lt[512], la[512];
    int bins = 0;
    double mass = 0;
    while (fgets(lr, sizeof lr, fr)) {
        if (lr[0] == '#')
            continue;
        do
            cr_assert_not_null(fgets(lt, sizeof lt, ft));
        while (lt[0] == '#');
        do
            cr_assert_not_null(fgets(la, sizeof la, fa));
        while (la[0] == '#');
        double lo, hi, gt, tt, gab, tab, a[5], b[5];
        cr_assert_eq(sscanf(lr, "%lf %lf %lf %lf %lf %lf", &lo, &hi, &gt, &tt, &gab, &tab), 6);
        cr_assert_eq(sscanf(lt, "%lf %lf %lf %lf %lf", &a[0], &a[1], &a[2], &a[3], &a[4]), 5);
        cr_assert_eq(sscanf(la, "%lf %lf %lf %lf %lf", &b[0], &b[1], &b[2], &b[3], &b[4]), 5);
        cr_expect(fabs(a[0] - lo) < 1e-9 && fabs(a[1] - hi) < 1e-9);
        cr_expect(fabs(a[3] - gt) <= tt, "%s bin [%g, %g): total g %.6g, InterRDF %.6g (tol %.3g)", ext, lo, hi, a[3],
                  gt, tt);
        cr_expect(fabs(b[3] - gab) <= tab, "%s bin [%g, %g): A-B g %.6g, InterRDF %.6g (tol %.3g)", ext, lo, hi, b[3],
                  gab, tab);
        mass += gt;
        ++bins;
    }
    cr_expect_eq(bins, 50);
    cr_expect(mass > 20, "the reference RDF is empty (%g)", mass);
    fclose(fr);
    fclose(ft);
    fclose(fa);
}

Test(binary, rdf_of_xtc_agrees_with_interrdf) { rdf_against_interrdf("xtc"); }
Test(binary, rdf_of_dcd_agrees_with_interrdf) { rdf_against_interrdf("dcd"); }

/* ---- hostile files ---- */

static void put_be(uint8_t *p, uint32_t v) { mdnl_put_be32(p, v); }

/* Copies the first `keep` bytes of a fixture into tmpdir/name. */
static void truncated_copy(const char *fixture, const char *name, long keep)
{
    char src[512], dst[512];
    data_path(src, sizeof src, fixture);
    snprintf(dst, sizeof dst, "%s/%s", tmpdir, name);
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    cr_assert(in && out);
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, in);
    if (keep >= 0 && (size_t)keep < n)
        n = (size_t)keep;
    fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
}

static void write_bytes(const char *name, const uint8_t *b, size_t n)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *fp = fopen(p, "wb");
    cr_assert_not_null(fp);
    fwrite(b, 1, n, fp);
    fclose(fp);
}

Test(binary, xtc_huge_atom_count_in_a_tiny_file_is_refused)
{
    uint8_t b[56 + 36] = {0};
    put_be(b, 1995);
    put_be(b + 4, 0x7fffffff);
    put_be(b + 52, 0x7fffffff);
    put_be(b + 56, 0x447a0000); /* precision 1000.0f */
    put_be(b + 56 + 28, 9);
    put_be(b + 56 + 32, 0); /* no compressed bytes */
    write_bytes("huge.xtc", b, sizeof b);
    cr_expect_eq(mdnl("info huge.xtc"), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "huge.xtc: frame 0") != NULL, "%s", err_text);
}

Test(binary, xtc_byte_count_beyond_the_file_is_refused)
{
    truncated_copy("w60.xtc", "t.xtc", -1);
    char p[512];
    snprintf(p, sizeof p, "%s/t.xtc", tmpdir);
    FILE *fp = fopen(p, "r+b");
    uint8_t cnt[4];
    mdnl_put_be32(cnt, 1u << 30);
    fseek(fp, 56 + 32, SEEK_SET);
    fwrite(cnt, 1, 4, fp);
    fclose(fp);
    cr_expect_eq(mdnl("info t.xtc"), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "byte count") != NULL, "%s", err_text);
}

Test(binary, truncated_frames_exit_3_naming_file_and_frame)
{
    static const char *const fixtures[] = {"w60.xtc", "w60.trr", "w60-cell.dcd", "w60-cell-be.dcd", "w5.xtc"};
    for (int k = 0; k < 5; ++k) {
        char p[512];
        data_path(p, sizeof p, fixtures[k]);
        FILE *fp = fopen(p, "rb");
        fseek(fp, 0, SEEK_END);
        const long size = ftell(fp);
        fclose(fp);
        /* Cut the last frame in half: frames 0 and 1 read, frame 2 fails. */
        truncated_copy(fixtures[k], "cut.bin", size - size / 6);
        char name[64];
        snprintf(name, sizeof name, "cut.%s", strrchr(fixtures[k], '.') + 1);
        cr_assert_eq(sh("mv cut.bin %s", name), 0);
        cr_expect_eq(mdnl("convert -q %s out.extxyz", name), 3, "%s", fixtures[k]);
        expect_one_error_line();
        char want[128];
        snprintf(want, sizeof want, "%s: frame 2", name);
        cr_expect(strstr(err_text, want) != NULL, "%s: %s", fixtures[k], err_text);
        cr_expect_eq(dir_entries(), 1, "a failed convert leaves no output");
        cr_assert_eq(sh("rm %s", name), 0);
    }
}

Test(binary, xtc_decoder_never_reads_past_its_buffer)
{
    /* Every prefix of a real compressed block: decoding fails cleanly (the
     * sanitizers watch the reads) and never claims success early. */
    char p[512];
    data_path(p, sizeof p, "w60.xtc");
    FILE *fp = fopen(p, "rb");
    uint8_t b[4096];
    size_t n = fread(b, 1, sizeof b, fp);
    fclose(fp);
    cr_assert(n > 92);
    int32_t minint[3], maxint[3];
    for (int d = 0; d < 3; ++d) {
        minint[d] = mdnl_be_i32(b + 60 + 4 * d);
        maxint[d] = mdnl_be_i32(b + 72 + 4 * d);
    }
    const int32_t smallidx = mdnl_be_i32(b + 84), nbytes = mdnl_be_i32(b + 88);
    const float precision = mdnl_be_f32(b + 56);
    float out[180];
    cr_assert_null(mdnl_xtc_decode(b + 92, (size_t)nbytes, 60, precision, minint, maxint, smallidx, out));
    for (int32_t cut = 0; cut < nbytes - 1; ++cut) {
        uint8_t *copy = malloc((size_t)cut + 1);
        memcpy(copy, b + 92, (size_t)cut);
        cr_expect_not_null(mdnl_xtc_decode(copy, (size_t)cut, 60, precision, minint, maxint, smallidx, out),
                           "a block cut to %d of %d bytes decoded", cut, nbytes);
        free(copy);
    }
    cr_expect_not_null(mdnl_xtc_decode(b + 92, (size_t)nbytes, 60, precision, minint, maxint, 3, out));
    cr_expect_not_null(mdnl_xtc_decode(b + 92, (size_t)nbytes, 60, precision, maxint, minint, smallidx, out));
}

Test(binary, dcd_with_fixed_atoms_or_huge_natoms_is_refused)
{
    uint8_t b[4 + 84 + 4 + 4 + 4 + 80 + 4 + 4 + 4 + 4 + 8] = {0};
    size_t p = 0;
    const int32_t m84 = 84, m84b = 84;
    memcpy(b + p, &m84, 4), p += 4;
    memcpy(b + p, "CORD", 4);
    int32_t ic[20] = {0};
    ic[0] = 1, ic[8] = 3, ic[19] = 24;
    memcpy(b + p + 4, ic, sizeof ic), p += 84;
    memcpy(b + p, &m84b, 4), p += 4;
    const int32_t t84 = 84, one = 1, four = 4, natoms = 0x7ffffff0;
    memcpy(b + p, &t84, 4), p += 4;
    memcpy(b + p, &one, 4), p += 4 + 80;
    memcpy(b + p, &t84, 4), p += 4;
    memcpy(b + p, &four, 4), p += 4;
    memcpy(b + p, &natoms, 4), p += 4;
    memcpy(b + p, &four, 4), p += 4;
    write_bytes("fixed.dcd", b, p);
    cr_expect_eq(mdnl("info fixed.dcd"), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "fixed atoms") != NULL, "%s", err_text);
    ic[8] = 0;
    memcpy(b + 8, ic, sizeof ic);
    b[p++] = 1; /* one byte of a frame that would need 25 GB */
    write_bytes("huge.dcd", b, p);
    cr_expect_eq(mdnl("info huge.dcd"), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "huge.dcd: frame 0") != NULL, "%s", err_text);
}

Test(binary, trr_frames_without_positions_are_skipped)
{
    /* Two frames: one with only velocities, one with positions. */
    uint8_t b[2 * (24 + 52 + 8 + 36 + 24)];
    size_t p = 0;
    for (int k = 0; k < 2; ++k) {
        put_be(b + p, 1993), put_be(b + p + 4, 13), put_be(b + p + 8, 12);
        memcpy(b + p + 12, "GMX_trn_file", 12);
        p += 24;
        const int32_t v[13] = {0, 0, 36, 0, 0, 0, 0, k ? 24 : 0, k ? 0 : 24, 0, 2, 10 + k, 0};
        for (int q = 0; q < 13; ++q)
            put_be(b + p + 4 * q, (uint32_t)v[q]);
        p += 52;
        mdnl_put_be_f32(b + p, 1.5f * k), mdnl_put_be_f32(b + p + 4, 0);
        p += 8;
        for (int q = 0; q < 9; ++q)
            mdnl_put_be_f32(b + p + 4 * q, q % 4 == 0 ? 3.0f : 0.0f);
        p += 36;
        for (int q = 0; q < 6; ++q)
            mdnl_put_be_f32(b + p + 4 * q, 0.1f * (float)(q + 1));
        p += 24;
    }
    write_bytes("v.trr", b, p);
    cr_assert_eq(mdnl("info v.trr --json"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"nframes\":1") && strstr(out_text, "\"step\":11") && strstr(out_text, "\"natoms\":2"),
              "%s", out_text);
}

/* w60.xtc with frame 1's small-number size index set to 5: frame 0 reads,
 * frame 1 is the error, with the same message whether frames are decoded
 * on the reading thread or by 2 to 8 workers that decoded frame 2 first;
 * skips walk the same frames. */
Test(binary, xtc_bad_frame_is_reported_in_order_by_any_thread_count)
{
    char src[512], dst[512];
    data_path(src, sizeof src, "w60.xtc");
    snprintf(dst, sizeof dst, "%s/bad1.xtc", tmpdir);
    FILE *in = fopen(src, "rb");
    cr_assert_not_null(in);
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, in);
    fclose(in);
    /* frame 0: 56-byte header, 36-byte block (smallidx at +28, byte count at +32), payload padded to 4 */
    const size_t f1 = 92 + ((mdnl_be32(buf + 88) + 3) & ~3u);
    cr_assert(f1 + 92 < n && mdnl_be32(buf + f1) == 1995, "frame 1 at %zu", f1);
    buf[f1 + 84] = 0, buf[f1 + 85] = 0, buf[f1 + 86] = 0, buf[f1 + 87] = 5;
    write_bytes("bad1.xtc", buf, n);
    static char first[sizeof err_text];
    for (int t = 1; t <= 8; t *= 2) {
        mdnl_read_options ro = {.units_native = true, .threads = t};
        mdnl_reader *r = NULL;
        cr_assert_eq(mdnl_reader_open(dst, &ro, &r), MDNL_OK, "%s", mdnl_last_error());
        mdnl_frame f = {0};
        cr_assert_eq(mdnl_reader_next(r, &f), MDNL_OK, "%d threads: %s", t, mdnl_last_error());
        cr_expect_eq(f.index, 0);
        cr_assert_eq(mdnl_reader_next(r, &f), MDNL_ERR_INPUT, "%d threads", t);
        const char *m = mdnl_last_error();
        cr_expect(strstr(m, "bad1.xtc: frame 1, byte ") && strstr(m, "small-number size index"), "%s", m);
        if (t == 1)
            snprintf(first, sizeof first, "%s", m);
        else
            cr_expect_str_eq(m, first, "%d threads", t);
        mdnl_reader_close(r);
        /* skipping the bad frame reads frame 2 */
        cr_assert_eq(mdnl_reader_open(dst, &ro, &r), MDNL_OK, "%s", mdnl_last_error());
        cr_assert_eq(mdnl_reader_next(r, &f), MDNL_OK, "%s", mdnl_last_error());
        cr_assert_eq(mdnl_reader_skip(r), MDNL_OK, "%s", mdnl_last_error());
        cr_assert_eq(mdnl_reader_next(r, &f), MDNL_OK, "%d threads: %s", t, mdnl_last_error());
        cr_expect_eq(f.index, 2);
        int64_t count = -1;
        cr_expect_eq(mdnl_reader_count(r, &count), MDNL_OK, "%s", mdnl_last_error());
        cr_expect_eq(count, 3);
        cr_expect_eq(mdnl_reader_next(r, &f), MDNL_END, "%d threads", t);
        mdnl_frame_free(&f);
        mdnl_reader_close(r);
    }
    /* through the binary: exit 3, no output, the same line for 1 and 4 threads */
    cr_expect_eq(mdnl("convert bad1.xtc out.xyz --threads 1"), 3, "%s", err_text);
    expect_one_error_line();
    memcpy(first, err_text, sizeof first);
    cr_expect_eq(mdnl("convert bad1.xtc out.xyz --threads 4"), 3, "%s", err_text);
    cr_expect_str_eq(err_text, first);
    cr_expect_eq(dir_entries(), 1, "no output beside bad1.xtc");
}

/* mdnl convert of an XTC to XYZ writes the same bytes with 1 and 4 threads. */
Test(binary, xtc_convert_is_the_same_bytes_for_any_thread_count)
{
    cr_assert_eq(mdnl("convert %s/binary/mixture.xtc one.extxyz --threads 1 -q", MDNL_DATA_DIR), 0, "%s", err_text);
    cr_assert_eq(mdnl("convert %s/binary/mixture.xtc four.extxyz --threads 4 -q", MDNL_DATA_DIR), 0, "%s", err_text);
    cr_assert_eq(mdnl("convert %s/binary/mixture.xtc odd.extxyz --threads 4 --frames 1::2 -q", MDNL_DATA_DIR), 0, "%s",
                 err_text);
    cr_assert_eq(mdnl("convert one.extxyz odd1.extxyz --frames 1::2 -q"), 0, "%s", err_text);
    cr_expect_eq(sh("cmp one.extxyz four.extxyz"), 0, "%s", out_text);
    cr_expect_eq(sh("cmp odd.extxyz odd1.extxyz"), 0, "%s", out_text);
    cr_expect_eq(sh("test $(grep -c Lattice one.extxyz) -gt 2"), 0, "several frames");
}

/* test_run.c — `mdnl run`, the streaming pipeline, as a user runs it: the same
 * tables and HDF5 datasets as the single commands, nothing left behind after a
 * failing frame in any stage, no deadlock, exit codes. Runs MDNL_BINARY. */
#define _POSIX_C_SOURCE 200809L
#include "device.h"

#include <hdf5.h>

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_test_util.h"


/* A deadlocked pipeline fails the test instead of hanging the suite. */
TestSuite(run, .init = make_tmpdir, .fini = remove_tmpdir, .timeout = 120);

/* The bytes of tmpdir/name, or "<missing>". */
static char *read_all(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *fp = fopen(p, "rb");
    if (!fp)
        return strdup("<missing>");
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_not_null(buf);
    size_t got = fread(buf, 1, (size_t)n, fp);
    buf[got] = '\0';
    fclose(fp);
    return buf;
}

static void expect_same_file(const char *a, const char *b)
{
    char *x = read_all(a), *y = read_all(b);
    cr_expect(strcmp(x, "<missing>") != 0, "%s is missing", a);
    cr_expect(strcmp(x, y) == 0, "%s and %s differ (%zu vs %zu bytes)", a, b, strlen(x), strlen(y));
    free(x);
    free(y);
}

static bool exists(const char *name)
{
    char p[512];
    struct stat sb;
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    return stat(p, &sb) == 0;
}

/* Reads a 1-D float64 dataset (at most cap values); returns its length. */
static long read_h5_doubles(const char *file, const char *dset, double *v, long cap)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, file);
    hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(f, 0, "cannot open %s", p);
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
    cr_assert_geq(d, 0, "%s has no %s", file, dset);
    hid_t s = H5Dget_space(d);
    hsize_t n = 0;
    cr_assert_eq(H5Sget_simple_extent_ndims(s), 1);
    H5Sget_simple_extent_dims(s, &n, NULL);
    cr_assert_leq((long)n, cap);
    cr_assert_geq(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v), 0);
    H5Sclose(s);
    H5Dclose(d);
    H5Fclose(f);
    return (long)n;
}

/* Five periodic LJ-like frames of 8 atoms (species A and B); frame `bad`
 * (0-based, -1 for none) has a non-numeric coordinate on its third atom, and
 * frame `no_b` has no B atom. */
static void write_five_frames(const char *name, int bad, int no_b)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *fp = fopen(p, "wb");
    cr_assert_not_null(fp);
    for (int k = 0; k < 5; ++k) {
        fprintf(fp, "8\nLattice=\"3.2 0 0 0 3.2 0 0 0 3.2\" Properties=species:S:1:pos:R:3 pbc=\"T T T\" step=%d\n",
                100 * k);
        for (int a = 0; a < 8; ++a) {
            double x = 1.6 * (a & 1) + 0.01 * k, y = 1.6 * ((a >> 1) & 1) + 0.02 * a, z = 1.6 * ((a >> 2) & 1);
            const char *sp = (a % 2 && k != no_b) ? "B" : "A";
            if (k == bad && a == 2)
                fprintf(fp, "%s %.6f oops %.6f\n", sp, x, z);
            else
                fprintf(fp, "%s %.6f %.6f %.6f\n", sp, x, y, z);
        }
    }
    fclose(fp);
}

Test(run, dir_output_equals_neighbors_energy_and_rdf_byte_for_byte)
{
    const char *in = MDNL_DATA_DIR "/rdf/lj_mixture.xyz"; /* 10 frames, 256 atoms, A and B */
    cr_assert_eq(mdnl("run %s -c 2.5 --neighbors --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 80 -o out/", in), 0,
                 "%s", err_text);
    cr_assert_eq(mdnl("neighbors %s -c 2.5 -o n.tsv", in), 0, "%s", err_text);
    cr_assert_eq(mdnl("energy %s -c 2.5 --pair lj:epsilon=1,sigma=1 -o e.tsv", in), 0, "%s", err_text);
    cr_assert_eq(mdnl("rdf %s --rmax 4 --bins 80 -o r.tsv", in), 0, "%s", err_text);
    expect_same_file("out/neighbors.tsv", "n.tsv");
    expect_same_file("out/energy.tsv", "e.tsv");
    expect_same_file("out/rdf.tsv", "r.tsv");
    char *e = read_all("e.tsv");
    cr_expect_eq(count_lines(e), 11, "header + 10 frames: %s", e);
    free(e);
}

/* Three frames of 400 atoms scattered up to a box length outside a
 * triclinic cell periodic in x and y only, so that the wrap (on the device
 * in `mdnl run` on CUDA, on the host in the single commands) really moves
 * atoms and the open z axis spans the atoms. */
static void write_outside_frames_pbc(const char *name, const char *pbc)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *fp = fopen(p, "wb");
    cr_assert_not_null(fp);
    srand(21);
    for (int k = 0; k < 3; ++k) {
        fprintf(fp, "400\nLattice=\"9.5 0 0 2.1 8.7 0 -1.3 0.9 10.2\" Properties=species:S:1:pos:R:3 pbc=\"%s\"\n", pbc);
        for (int a = 0; a < 400; ++a)
            fprintf(fp, "%s %.9f %.9f %.9f\n", a % 3 ? "A" : "B", 30.0 * rand() / RAND_MAX - 10.0,
                    30.0 * rand() / RAND_MAX - 10.0, 20.0 * rand() / RAND_MAX - 5.0);
    }
    fclose(fp);
}

static void write_outside_frames(const char *name) { write_outside_frames_pbc(name, "T T F"); }

Test(run, atoms_outside_a_partly_periodic_triclinic_cell_match_the_single_commands)
{
    write_outside_frames("out.xyz");
    cr_assert_eq(mdnl("run out.xyz -c 2.2 --neighbors --pair lj:epsilon=1,sigma=0.8 --rmax 3 --bins 60 -o o/"), 0, "%s",
                 err_text);
    cr_assert_eq(mdnl("neighbors out.xyz -c 2.2 -o n.tsv"), 0, "%s", err_text);
    cr_assert_eq(mdnl("energy out.xyz -c 2.2 --pair lj:epsilon=1,sigma=0.8 -o e.tsv"), 0, "%s", err_text);
    cr_assert_eq(mdnl("rdf out.xyz --rmax 3 --bins 60 -o r.tsv"), 0, "%s", err_text);
    expect_same_file("o/neighbors.tsv", "n.tsv");
    expect_same_file("o/energy.tsv", "e.tsv");
    expect_same_file("o/rdf.tsv", "r.tsv");
    char *n = read_all("n.tsv");
    cr_expect_gt(count_lines(n), 1000, "pairs expected below 2.2: %d lines", count_lines(n));
    free(n);
}

/* The same frames periodic on every axis: on CUDA, mdnl run lays out their
 * grids before the device wrap's t-range is back (geometry.h,
 * mdnl_geom_finish_early) and settles them when the frame is collected. */
Test(run, atoms_outside_a_fully_periodic_triclinic_cell_match_the_single_commands)
{
    write_outside_frames_pbc("out.xyz", "T T T");
    cr_assert_eq(mdnl("run out.xyz -c 2.2 --neighbors --pair lj:epsilon=1,sigma=0.8 --rmax 3 --bins 60 -o o/"), 0, "%s",
                 err_text);
    cr_assert_eq(mdnl("run out.xyz -c 2.2 --pair lj:epsilon=1,sigma=0.8 --rmax 3.7 --bins 70 -o p/"), 0, "%s",
                 err_text);
    cr_assert_eq(mdnl("neighbors out.xyz -c 2.2 -o n.tsv"), 0, "%s", err_text);
    cr_assert_eq(mdnl("energy out.xyz -c 2.2 --pair lj:epsilon=1,sigma=0.8 -o e.tsv"), 0, "%s", err_text);
    cr_assert_eq(mdnl("rdf out.xyz --rmax 3 --bins 60 -o r.tsv"), 0, "%s", err_text);
    cr_assert_eq(mdnl("rdf out.xyz --rmax 3.7 --bins 70 -o r2.tsv"), 0, "%s", err_text);
    expect_same_file("o/neighbors.tsv", "n.tsv");
    expect_same_file("o/energy.tsv", "e.tsv");
    expect_same_file("o/rdf.tsv", "r.tsv");
    expect_same_file("p/energy.tsv", "e.tsv");
    expect_same_file("p/rdf.tsv", "r2.tsv");
}

Test(run, partial_rdfs_full_list_and_h5md_input_match_the_single_commands)
{
    const char *in = MDNL_DATA_DIR "/rdf/lj_mixture.xyz";
    cr_assert_eq(mkdir(strcat(strcpy((char[512]){0}, tmpdir), "/existing"), 0777), 0);
    /* an existing directory without the trailing slash */
    cr_assert_eq(mdnl("run %s -c 3 --neighbors --list full --rmax 3.5 --bins 35 --pairs A-A,A-B,B-B -o existing", in),
                 0, "%s", err_text);
    cr_assert_eq(mdnl("neighbors %s -c 3 --list full -o n.tsv", in), 0, "%s", err_text);
    cr_assert_eq(mdnl("rdf %s --rmax 3.5 --bins 35 --pairs A-A,A-B,B-B -o r.tsv", in), 0, "%s", err_text);
    expect_same_file("existing/neighbors.tsv", "n.tsv");
    expect_same_file("existing/rdf.tsv", "r.tsv");
    cr_expect(!exists("existing/energy.tsv"), "no --pair: no energy.tsv");

    const char *h5 = MDNL_DATA_DIR "/h5md/box_td33.h5md"; /* 4 frames, time-dependent triclinic box */
    cr_assert_eq(mdnl("run %s -c 2.5 --neighbors --pair lj:epsilon=1,sigma=1 --rmax 3 --bins 30 -o h/", h5), 0, "%s",
                 err_text);
    cr_assert_eq(mdnl("neighbors %s -c 2.5 -o hn.tsv", h5), 0, "%s", err_text);
    cr_assert_eq(mdnl("energy %s -c 2.5 --pair lj:epsilon=1,sigma=1 -o he.tsv", h5), 0, "%s", err_text);
    cr_assert_eq(mdnl("rdf %s --rmax 3 --bins 30 -o hr.tsv", h5), 0, "%s", err_text);
    expect_same_file("h/neighbors.tsv", "hn.tsv");
    expect_same_file("h/energy.tsv", "he.tsv");
    expect_same_file("h/rdf.tsv", "hr.tsv");
}

Test(run, hdf5_results_hold_the_energies_rdf_and_lists_of_the_single_commands)
{
    const char *in = MDNL_DATA_DIR "/rdf/lj_mixture.xyz";
    cr_assert_eq(mdnl("run %s -c 2.5 --neighbors --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 80 -o res.h5 --json", in),
                 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"command\":\"run\"") && strstr(out_text, "\"frames\":10") &&
                  strstr(out_text, "\"energy\":{\"first\":") && strstr(out_text, "\"frames_per_second\":") &&
                  strstr(out_text, "\"wall\":") && strstr(out_text, "\"read_during_startup\":"),
              "json: %s", out_text);
    cr_assert_eq(mdnl("energy %s -c 2.5 --pair lj:epsilon=1,sigma=1 -o e.h5", in), 0, "%s", err_text);
    cr_assert_eq(mdnl("rdf %s --rmax 4 --bins 80 -o r.h5", in), 0, "%s", err_text);
    static double a[1000], b[1000];
    long na = read_h5_doubles("res.h5", "/observables/potential_energy/value", a, 1000);
    long nb = read_h5_doubles("e.h5", "/observables/potential_energy/value", b, 1000);
    cr_expect_eq(na, 10);
    cr_expect_eq(na, nb);
    for (long k = 0; k < na && k < nb; ++k)
        cr_expect_eq(a[k], b[k], "energy of frame %ld: %.17g vs %.17g", k, a[k], b[k]);
    na = read_h5_doubles("res.h5", "/rdf/total/g", a, 1000);
    nb = read_h5_doubles("r.h5", "/rdf/total/g", b, 1000);
    cr_expect_eq(na, 80);
    cr_expect_eq(na, nb);
    for (long k = 0; k < na && k < nb; ++k)
        cr_expect_eq(a[k], b[k], "g of bin %ld: %.17g vs %.17g", k, a[k], b[k]);
    cr_expect_gt(a[40], 0.5, "g(r) near r = 2 should be of order 1, got %g", a[40]);
    /* one CSR per frame: the frame index dataset lists the 10 frames */
    na = read_h5_doubles("res.h5", "/neighbors/frame", a, 1000);
    cr_expect_eq(na, 10);
    cr_expect_eq(a[9], 9.0);
}

/* The bytes of dataset `dset` of tmpdir/file in its native memory type
 * (*n elements); NULL when it is missing. The caller frees. */
static void *read_h5_raw(const char *file, const char *dset, size_t *n)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, file);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(f, 0, "cannot open %s", p);
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
    void *buf = NULL;
    *n = 0;
    if (d >= 0) {
        hid_t s = H5Dget_space(d), t = H5Dget_type(d), mt = H5Tget_native_type(t, H5T_DIR_ASCEND);
        *n = (size_t)H5Sget_simple_extent_npoints(s);
        buf = calloc(*n + 1, H5Tget_size(mt));
        cr_assert_not_null(buf);
        cr_assert_geq(H5Dread(d, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), 0);
        *n *= H5Tget_size(mt);
        H5Tclose(mt);
        H5Tclose(t);
        H5Sclose(s);
        H5Dclose(d);
    }
    H5Fclose(f);
    return buf;
}

/* --with shift,vector: run's lists carry the single command's S and D, on a
 * fully periodic triclinic cell (CUDA: the grid laid out before the wrap is
 * settled first) and a partly periodic one, TSV and HDF5. */
Test(run, with_shift_vector_matches_neighbors_with_shift_vector)
{
    const char *pbc[] = {"T T T", "T T F"};
    for (int k = 0; k < 2; ++k) {
        write_outside_frames_pbc("out.xyz", pbc[k]);
        cr_assert_eq(mdnl("run out.xyz -c 2.2 --neighbors --list full --with shift,vector --rmax 3 --bins 30 -o o%d/",
                          k),
                     0, "%s", err_text);
        cr_assert_eq(mdnl("neighbors out.xyz -c 2.2 --list full --with shift,vector -o n%d.tsv", k), 0, "%s",
                     err_text);
        char a[32], b[32];
        snprintf(a, sizeof a, "o%d/neighbors.tsv", k);
        snprintf(b, sizeof b, "n%d.tsv", k);
        expect_same_file(a, b);
        cr_assert_eq(mdnl("run out.xyz -c 2.2 --neighbors --with vector -o r%d.h5", k), 0, "%s", err_text);
        cr_assert_eq(mdnl("neighbors out.xyz -c 2.2 --with vector -o n%d.h5", k), 0, "%s", err_text);
        snprintf(a, sizeof a, "r%d.h5", k);
        snprintf(b, sizeof b, "n%d.h5", k);
        size_t na, nb;
        void *x = read_h5_raw(a, "/neighbors/vector", &na), *y = read_h5_raw(b, "/neighbors/vector", &nb);
        cr_expect(x && y && na == nb && na > 3000 && memcmp(x, y, na) == 0, "%s and %s: vectors differ (%zu, %zu B)",
                  a, b, na, nb);
        free(x);
        free(y);
        x = read_h5_raw(a, "/neighbors/shift", &na);
        cr_expect_null(x, "--with vector alone stores no shifts");
        free(x);
    }
    cr_expect_eq(mdnl("run out.xyz -c 2.2 --pair lj:epsilon=1,sigma=1 --with shift -o e/"), 2, "%s", err_text);
    expect_one_error_line();
    cr_expect(strstr(err_text, "--with needs --neighbors") != NULL, "%s", err_text);
}

/* The energy datasets are appended in batches of 256 frames: 600 frames
 * cross two batch boundaries and end on a partial batch. */
Test(run, hdf5_energies_of_600_frames_cross_the_write_batches)
{
    char p[512];
    snprintf(p, sizeof p, "%s/many.extxyz", tmpdir);
    FILE *fp = fopen(p, "wb");
    cr_assert_not_null(fp);
    for (int k = 0; k < 600; ++k) {
        fprintf(fp, "4\nLattice=\"4 0 0 0 4 0 0 0 4\" Properties=species:S:1:pos:R:3 pbc=\"T T T\" step=%d\n", 10 * k);
        for (int a = 0; a < 4; ++a)
            fprintf(fp, "Ar %.6f %.6f %.6f\n", 1.1 * a + 0.001 * k, 0.3 * a, 0.5 * (a & 1));
    }
    fclose(fp);
    cr_assert_eq(mdnl("run many.extxyz -c 1.9 --pair lj:epsilon=1,sigma=1 -o res.h5"), 0, "%s", err_text);
    cr_assert_eq(mdnl("energy many.extxyz -c 1.9 --pair lj:epsilon=1,sigma=1 -o e.h5"), 0, "%s", err_text);
    static double a[1000], b[1000];
    long na = read_h5_doubles("res.h5", "/observables/potential_energy/value", a, 1000);
    long nb = read_h5_doubles("e.h5", "/observables/potential_energy/value", b, 1000);
    cr_expect_eq(na, 600);
    cr_expect_eq(nb, 600);
    for (long k = 0; k < na && k < nb; ++k)
        cr_expect_eq(a[k], b[k], "energy of frame %ld: %.17g vs %.17g", k, a[k], b[k]);
    na = read_h5_doubles("res.h5", "/observables/potential_energy/step", a, 1000);
    cr_expect_eq(na, 600);
    for (long k = 0; k < na; ++k)
        cr_expect_eq(a[k], 10.0 * (double)k, "step of frame %ld", k);

    /* HDF5 on both sides at once (reader and writer threads; no extra lock
     * with a thread-safe HDF5), lists too: the same energies. */
    cr_assert_eq(mdnl("convert many.extxyz many.h5 --quiet"), 0, "%s", err_text);
    cr_assert_eq(mdnl("run many.h5 -c 1.9 --neighbors --pair lj:epsilon=1,sigma=1 --rmax 1.9 --bins 19 -o both.h5"), 0,
                 "%s", err_text);
    na = read_h5_doubles("both.h5", "/observables/potential_energy/value", a, 1000);
    cr_expect_eq(na, 600);
    for (long k = 0; k < na; ++k)
        cr_expect_eq(a[k], b[k], "energy of frame %ld from H5MD: %.17g vs %.17g", k, a[k], b[k]);
    na = read_h5_doubles("both.h5", "/neighbors/frame", a, 1000);
    cr_expect_eq(na, 600);
}

Test(run, frames_selection_keeps_original_indices)
{
    const char *in = MDNL_DATA_DIR "/rdf/lj_mixture.xyz";
    cr_assert_eq(mdnl("run %s --frames 1:8:3 -c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 40 -o out/", in), 0,
                 "%s", err_text);
    cr_assert_eq(mdnl("energy %s --frames 1:8:3 -c 2.5 --pair lj:epsilon=1,sigma=1 -o e.tsv", in), 0, "%s", err_text);
    cr_assert_eq(mdnl("rdf %s --frames 1:8:3 --rmax 4 --bins 40 -o r.tsv", in), 0, "%s", err_text);
    expect_same_file("out/energy.tsv", "e.tsv");
    expect_same_file("out/rdf.tsv", "r.tsv");
    char *e = read_all("out/energy.tsv");
    cr_expect_eq(count_lines(e), 4, "header + frames 1, 4, 7: %s", e);
    cr_expect(strstr(e, "\n1\t") && strstr(e, "\n4\t") && strstr(e, "\n7\t") && !strstr(e, "\n2\t"), "%s", e);
    free(e);
}

Test(run, malformed_frame_3_of_5_exits_3_and_leaves_nothing)
{
    write_five_frames("bad.xyz", 2, -1);
    /* the third frame starts on line 21 (two frames of 10 lines); its third atom is line 25 */
    cr_expect_eq(mdnl("run bad.xyz -c 2 --neighbors --pair lj:epsilon=1,sigma=1 --rmax 2 --bins 20 -o out/"), 3,
                 "%s", err_text);
    expect_one_error_line();
    cr_expect(strstr(err_text, "bad.xyz:25") != NULL, "expected bad.xyz:25 in: %s", err_text);
    cr_expect(!exists("out"), "a failed run must not leave the directory it created");
    cr_expect_eq(mdnl("run bad.xyz -c 2 --neighbors --pair lj:epsilon=1,sigma=1 -o res.h5"), 3, "%s", err_text);
    expect_one_error_line();
    cr_expect_eq(dir_entries(), 1, "only bad.xyz may remain; a partial or temporary output was left");
    /* an existing directory is kept, empty */
    char p[512];
    snprintf(p, sizeof p, "%s/keep", tmpdir);
    cr_assert_eq(mkdir(p, 0777), 0);
    cr_expect_eq(mdnl("run bad.xyz -c 2 --pair lj:epsilon=1,sigma=1 --rmax 2 --bins 20 -o keep/"), 3, "%s", err_text);
    DIR *d = opendir(p);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    cr_expect_eq(n, 0, "keep/ must stay empty after a failed run");
    /* the same file with a good third frame runs */
    write_five_frames("good.xyz", -1, -1);
    cr_expect_eq(mdnl("run good.xyz -c 2 --pair lj:epsilon=1,sigma=1 -o ok/ --json"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"frames\":5") != NULL, "%s", out_text);
}

Test(run, compute_stage_failure_in_frame_3_stops_cleanly)
{
    /* frame 2 has no B atoms: --pairs A-B fails in the compute stage while the
     * reader is ahead and the writer behind; the run must end, not hang. */
    write_five_frames("nob.xyz", -1, 2);
    cr_expect_eq(mdnl("run nob.xyz -c 2 --neighbors --rmax 2 --bins 20 --pairs A-B -o out/"), 3, "%s", err_text);
    expect_one_error_line();
    cr_expect(strstr(err_text, "frame 2") != NULL && strstr(err_text, "species B") != NULL, "%s", err_text);
    cr_expect(!exists("out"), "nothing may be left");
    cr_expect_eq(mdnl("run nob.xyz -c 2 --neighbors --rmax 2 --bins 20 --pairs A-B -o res.h5"), 3, "%s", err_text);
    cr_expect_eq(dir_entries(), 1, "only nob.xyz may remain");
}

Test(run, no_work_missing_output_and_bad_options_exit_2)
{
    write_file("a.xyz", "1\n\nC 0 0 0\n");
    const char *bad[] = {
        "run a.xyz -o out/",                                  /* nothing to do */
        "run a.xyz -c 2 -o out/",                             /* a cutoff alone is no work */
        "run a.xyz -c 2 --pair lj:epsilon=1,sigma=1",         /* no -o */
        "run a.xyz --neighbors -o out/",                      /* no cutoff */
        "run a.xyz --rmax 2 -o out/",                         /* --rmax without --bins */
        "run a.xyz -c 2 --neighbors -o out.tsv",              /* neither .h5 nor a directory */
        "run a.xyz -c 2 --neighbors -o -",                    /* several tables cannot go to stdout */
        "run a.xyz -c 2 --pair lj:epsilon=1 -o r.h5",         /* bad pair spec */
        "run a.xyz --read-only -c 2 --neighbors",             /* read-only computes nothing */
        "run a.xyz -c 2 --pair lj:epsilon=1,sigma=1 --pairs A-B -o r.h5", /* --pairs without a histogram */
        "run -c 2 --neighbors -o out/",                       /* no input */
    };
    for (unsigned k = 0; k < sizeof bad / sizeof *bad; ++k) {
        cr_expect_eq(mdnl("%s", bad[k]), 2, "mdnl %s: %s", bad[k], err_text);
        expect_one_error_line();
    }
    cr_expect_eq(dir_entries(), 1, "usage errors create nothing");
    cr_expect_eq(mdnl("run missing.xyz -c 2 --neighbors -o out/"), 3, "%s", err_text);
    expect_one_error_line();
    cr_expect(!exists("out"), "a missing input creates no directory");
}

Test(run, read_only_reads_every_frame_and_writes_nothing)
{
    const char *in = MDNL_DATA_DIR "/rdf/lj_mixture.xyz";
    cr_assert_eq(mdnl("run %s --read-only --json", in), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"frames\":10") && strstr(out_text, "\"atoms\":256,\"atoms_max\":256") &&
                  strstr(out_text, "\"read_only\":true"),
              "%s", out_text);
    cr_expect_eq(dir_entries(), 0);
    write_five_frames("bad.xyz", 3, -1);
    cr_expect_eq(mdnl("run bad.xyz --read-only"), 3, "a malformed frame fails the read-only pass too: %s", err_text);
    expect_one_error_line();
}

/* A run with work leaves the finiteness check of H5MD coordinates to the
 * wrap (host or device, whichever backend runs), which must still reject
 * the frame, name the input, frame and atom, and leave nothing; --read-only
 * keeps the reader's own check (dataset, value and axis). */
Test(run, non_finite_h5md_coordinates_exit_3_on_every_path)
{
    const char *cases[][3] = {{"bad_nan.h5md", "frame 1", "atom 2"}, {"bad_inf.h5md", "frame 2", "atom 0"}};
    for (int c = 0; c < 2; ++c) {
        char in[512];
        snprintf(in, sizeof in, "%s/h5md/%s", MDNL_DATA_DIR, cases[c][0]);
        cr_expect_eq(mdnl("run %s -c 2 --pair lj:epsilon=1,sigma=1 --rmax 2 --bins 10 -o out/", in), 3, "%s",
                     err_text);
        expect_one_error_line();
        cr_expect(strstr(err_text, cases[c][0]) && strstr(err_text, cases[c][1]) && strstr(err_text, cases[c][2]) &&
                      strstr(err_text, "non-finite"),
                  "expected %s, %s, %s in: %s", cases[c][0], cases[c][1], cases[c][2], err_text);
        cr_expect_eq(mdnl("run %s -c 2 --neighbors -o res.h5", in), 3, "%s", err_text);
        expect_one_error_line();
        cr_expect_eq(dir_entries(), 0, "a failed run must leave nothing");
        cr_expect_eq(mdnl("run %s --read-only", in), 3, "%s", err_text);
        cr_expect(strstr(err_text, "/particles/all/position/value") != NULL, "%s", err_text);
    }
}

Test(run, help_lists_the_options_and_exits_0)
{
    cr_expect_eq(mdnl("run --help"), 0);
    cr_expect(strstr(out_text, "usage: mdnl run") && strstr(out_text, "--neighbors") &&
                  strstr(out_text, "--read-only") && strstr(out_text, "DIR/"),
              "%s", out_text);
    cr_expect_eq(mdnl("--help"), 0);
    cr_expect(strstr(out_text, "  run INPUT") != NULL, "%s", out_text);
}

/* A dataset of any rank as doubles (at most cap); its dims in dims[]. */
static int read_nd(const char *file, const char *dset, double *v, size_t cap, hsize_t *dims)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, file);
    hid_t f = H5Fopen(p, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(f, 0, "cannot open %s", p);
    hid_t d = H5Dopen2(f, dset, H5P_DEFAULT);
    cr_assert_geq(d, 0, "%s has no %s", file, dset);
    hid_t s = H5Dget_space(d);
    const int rank = H5Sget_simple_extent_ndims(s);
    H5Sget_simple_extent_dims(s, dims, NULL);
    size_t n = 1;
    for (int k = 0; k < rank; ++k)
        n *= dims[k];
    cr_assert_leq(n, cap);
    cr_assert_geq(H5Dread(d, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v), 0);
    H5Sclose(s);
    H5Dclose(d);
    H5Fclose(f);
    return rank;
}

/* rdf --per-frame: every frame's g and counts rows, which are what a run on
 * that frame alone gives, next to the mean, which is their average. */
Test(run, rdf_per_frame_rows_are_the_single_frame_results)
{
    cr_assert_eq(mdnl("rdf %s/rdf/lj_mixture.xyz --rmax 2.5 --bins 25 --pairs A-B,B-B --frames 0:3 --per-frame "
                      "-o all.h5 --plot all.svg",
                      MDNL_DATA_DIR),
                 0, "%s", err_text);
    static double gf[64 * 25], cf[64 * 25], gm[25], cm[25], fr[64], g1[25], c1[25];
    hsize_t dims[2] = {0, 0}, d1[2];
    cr_assert_eq(read_nd("all.h5", "/rdf/A-B/g_frames", gf, 64 * 25, dims), 2);
    const hsize_t nf = dims[0];
    cr_assert(nf >= 2 && nf <= 3, "%llu frames", (unsigned long long)nf);
    cr_expect_eq(dims[1], 25);
    read_nd("all.h5", "/rdf/A-B/counts_frames", cf, 64 * 25, d1);
    cr_expect(d1[0] == nf && d1[1] == 25);
    read_nd("all.h5", "/rdf/A-B/frame", fr, 64, d1);
    cr_expect_eq(d1[0], nf);
    read_nd("all.h5", "/rdf/A-B/g", gm, 25, d1);
    read_nd("all.h5", "/rdf/A-B/counts", cm, 25, d1);
    for (int b = 0; b < 25; ++b) {
        double gs = 0, cs = 0;
        for (hsize_t k = 0; k < nf; ++k)
            gs += gf[k * 25 + b], cs += cf[k * 25 + b];
        cr_expect(fabs(gs / nf - gm[b]) <= 1e-12 * (1 + gm[b]), "bin %d: mean of rows %.17g, g %.17g", b, gs / nf,
                  gm[b]);
        cr_expect_eq(cs, cm[b], "bin %d: the rows' counts sum to the mean's", b);
    }
    for (hsize_t k = 0; k < nf; ++k) {
        cr_expect_eq(fr[k], (double)k);
        cr_assert_eq(mdnl("rdf %s/rdf/lj_mixture.xyz --rmax 2.5 --bins 25 --pairs A-B,B-B --frames %llu -o one.h5",
                          MDNL_DATA_DIR, (unsigned long long)k),
                     0, "%s", err_text);
        read_nd("one.h5", "/rdf/A-B/g", g1, 25, d1);
        read_nd("one.h5", "/rdf/A-B/counts", c1, 25, d1);
        cr_expect_eq(memcmp(g1, gf + k * 25, sizeof g1), 0, "frame %llu: g row differs from the frame's own g",
                     (unsigned long long)k);
        cr_expect_eq(memcmp(c1, cf + k * 25, sizeof c1), 0);
    }
    char *svg = read_all("all.svg");
    cr_expect(strstr(svg, "g(r) per frame, A-B") != NULL && strstr(svg, "g(r) per frame, B-B") != NULL);
    free(svg);
    /* nothing per-frame to write: a usage error */
    cr_expect_eq(mdnl("rdf %s/rdf/lj_mixture.xyz --rmax 2.5 --bins 25 --per-frame -o t.tsv", MDNL_DATA_DIR), 2);
    expect_one_error_line();
}

/* ---- errors in frame order, whichever stage finds them (issue 59) ---- */

/* nframes (write_three_frames: three) frames of 64 atoms (species A and B) in a periodic 10 A box, one
 * atom per 2.5 A cell, except: frame `nob` has no B atom (a compute-stage
 * error under --pairs A-B), frame `stacked` holds 56 atoms at the origin (the
 * occupancy guard refuses it under --max-pairs 4000: the prepare stage on the
 * CPU, the check stage on CUDA), frame `bad` has a malformed coordinate (the
 * reader's error, on line 66 * bad + 6). -1: none. */
static void write_frames(const char *name, int nframes, int nob, int stacked, int bad)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *fp = fopen(p, "wb");
    cr_assert_not_null(fp);
    for (int k = 0; k < nframes; ++k) {
        fprintf(fp, "64\nLattice=\"10 0 0 0 10 0 0 0 10\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n");
        for (int a = 0; a < 64; ++a) {
            double r[3] = {1.25 + 2.5 * (a / 16), 1.25 + 2.5 * (a / 4 % 4), 1.25 + 2.5 * (a % 4)};
            if (k == stacked)
                for (int d = 0; d < 3; ++d)
                    r[d] = a < 56 ? 0.0 : 3.75 + 5.0 * ((a - 56) >> (2 - d) & 1);
            const char *sp = a % 2 && k != nob ? "B" : "A";
            if (k == bad && a == 3)
                fprintf(fp, "%s %.6f oops %.6f\n", sp, r[0], r[2]);
            else
                fprintf(fp, "%s %.6f %.6f %.6f\n", sp, r[0], r[1], r[2]);
        }
    }
    fclose(fp);
}

static void write_three_frames(const char *name, int nob, int stacked, int bad)
{
    write_frames(name, 3, nob, stacked, bad);
}

/* Frame 1's error is reported, whatever frame 2 holds: the reader and the
 * prepare (CPU) or check (CUDA) stage run ahead of the compute stage, so
 * frame 2's read error or stacked atoms are found first, but wait in their
 * slot until the compute stage has reached them. Each case runs ten times:
 * before the errors were kept in the slots, the stage ahead often won. */
Test(run, an_earlier_frame_error_comes_first_whichever_stage_finds_a_later_one)
{
    const char *stacked = "56 of 64 atoms are in one cell";
    const struct {
        int nob, stacked, bad;
        const char *want;
    } cases[] = {
        {1, 2, -1, "frame 1: expected species B"}, /* compute, then prepare/check */
        {1, -1, 2, "frame 1: expected species B"}, /* compute, then reader */
        {-1, 1, 2, stacked},                       /* prepare/check, then reader */
        {2, 1, -1, stacked},                       /* prepare/check, then compute */
        {-1, 2, 1, "f.xyz:72"},                    /* reader, then prepare/check */
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) {
        write_three_frames("f.xyz", cases[c].nob, cases[c].stacked, cases[c].bad);
        for (int rep = 0; rep < 10; ++rep) {
            cr_expect_eq(mdnl("run f.xyz -c 2 --pair lj:epsilon=1,sigma=1 --rmax 2 --bins 10 --pairs A-B "
                              "--max-pairs 4000 -o out.h5"),
                         3, "case %zu: %s", c, err_text);
            expect_one_error_line();
            cr_expect(strstr(err_text, cases[c].want) != NULL, "case %zu: expected \"%s\" in: %s", c, cases[c].want,
                      err_text);
            if (cases[c].want == stacked)
                cr_expect(strstr(err_text, "frame 1: ") != NULL, "case %zu: %s", c, err_text);
        }
        cr_expect_eq(dir_entries(), 1, "case %zu: only f.xyz may remain", c);
    }
}

/* Several prepare workers (one a four --threads) take the read frames in
 * order and finish them in any order; the first bad frame is still the one
 * reported, wherever it lies in a 40-frame run (the ring's first frames, a
 * later lap: the ring holds 8 to 24 such frames, the last), whichever stage finds it and whatever the next
 * frame holds. Without an error, the results equal one worker's. */
Test(run, many_prepare_workers_report_the_first_bad_frame_at_any_position)
{
    const char *work = "-c 2 --pair lj:epsilon=1,sigma=1 --rmax 2 --bins 10 --pairs A-B --max-pairs 4000";
    const int at[] = {0, 1, 5, 33, 39};
    for (size_t i = 0; i < sizeof at / sizeof *at; ++i) {
        const int j = at[i], next = j + 1 < 40 ? j + 1 : -1;
        const struct {
            int nob, stacked, bad;
        } cases[] = {
            {-1, j, next}, /* prepare/check, then reader */
            {j, next, -1}, /* compute, then prepare/check */
            {next, -1, j}, /* reader */
            {-1, j, -1},   /* prepare/check alone */
        };
        for (size_t c = 0; c < sizeof cases / sizeof *cases; ++c) {
            write_frames("f.xyz", 40, cases[c].nob, cases[c].stacked, cases[c].bad);
            char want[64];
            if (cases[c].bad == j)
                snprintf(want, sizeof want, "f.xyz:%d", 66 * j + 6);
            else if (cases[c].nob == j)
                snprintf(want, sizeof want, "frame %d: expected species B", j);
            else
                snprintf(want, sizeof want, "frame %d: 56 of 64 atoms are in one cell", j);
            for (int threads = 8; threads <= 16; threads += 8)
                for (int rep = 0; rep < 3; ++rep) {
                    cr_expect_eq(mdnl("run f.xyz %s --threads %d -o out.h5", work, threads), 3,
                                 "frame %d case %zu: %s", j, c, err_text);
                    expect_one_error_line();
                    cr_expect(strstr(err_text, want) != NULL, "frame %d case %zu, %d threads: expected \"%s\" in: %s",
                              j, c, threads, want, err_text);
                }
            cr_expect_eq(dir_entries(), 1, "frame %d case %zu: only f.xyz may remain", j, c);
        }
    }
    write_frames("f.xyz", 40, -1, -1, -1);
    cr_assert_eq(mdnl("run f.xyz %s --threads 16 -o many.h5", work), 0, "%s", err_text);
    cr_assert_eq(mdnl("run f.xyz %s --threads 1 -o one.h5", work), 0, "%s", err_text);
    const char *sets[] = {"/observables/potential_energy/value", "/rdf/A-B/g"};
    for (int d = 0; d < 2; ++d) {
        double a[64], b[64];
        long na = read_h5_doubles("many.h5", sets[d], a, 64), nb = read_h5_doubles("one.h5", sets[d], b, 64);
        cr_expect_eq(na, nb, "%s", sets[d]);
        cr_expect(na > 0 && memcmp(a, b, (size_t)na * sizeof *a) == 0, "%s differs", sets[d]);
    }
}

/* Frames that grow tenfold along the run (the ring is sized by the first
 * frame and bounds the frames in flight by their bytes, giving back the
 * memory of free slots when they outgrow it): every frame's energy is the
 * single command's, with one prepare worker or four. */
Test(run, growing_frames_through_the_ring_match_mdnl_energy)
{
    char p[512];
    snprintf(p, sizeof p, "%s/grow.xyz", tmpdir);
    FILE *fp = fopen(p, "wb");
    cr_assert_not_null(fp);
    for (int k = 0; k < 30; ++k) {
        const int side = 2 + k / 3, n = side * side * side; /* 8 to 1331 atoms */
        const double a = 1.5, box = a * side;
        fprintf(fp, "%d\nLattice=\"%g 0 0 0 %g 0 0 0 %g\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n", n, box, box,
                box);
        for (int i = 0; i < n; ++i)
            fprintf(fp, "Ar %.6f %.6f %.6f\n", a * (i / (side * side)) + 0.01 * (i % 7),
                    a * (i / side % side) + 0.013 * (k % 5), a * (i % side));
    }
    fclose(fp);
    cr_assert_eq(mdnl("energy grow.xyz -c 2.5 --pair lj:epsilon=1,sigma=1 -o e.h5"), 0, "%s", err_text);
    static double e[64], r[64];
    const long ne = read_h5_doubles("e.h5", "/observables/potential_energy/value", e, 64);
    cr_assert_eq(ne, 30);
    for (int threads = 1; threads <= 16; threads *= 16) {
        cr_assert_eq(mdnl("run grow.xyz -c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 3 --bins 30 --threads %d -o r.h5",
                          threads),
                     0, "%s", err_text);
        cr_assert_eq(read_h5_doubles("r.h5", "/observables/potential_energy/value", r, 64), ne);
        for (long k = 0; k < ne; ++k)
            cr_expect_eq(r[k], e[k], "%d threads, frame %ld: %.17g vs %.17g", threads, k, r[k], e[k]);
        char out[512];
        snprintf(out, sizeof out, "%s/r.h5", tmpdir);
        cr_expect_eq(unlink(out), 0);
    }
}

/* A non-finite coordinate (H5MD: found by the wrap, on the host or the
 * device) and stacked atoms (the occupancy guard) in frames 1 and 2, each
 * order: frame 1's is reported, with every combination of grids the guard
 * checks (cutoff and r_max, cutoff only, r_max only). */
Test(run, non_finite_and_stacked_frames_are_reported_in_frame_order)
{
    const char *cases[][2] = {{"bad_nan_then_stacked.h5md", "frame 1: atom 5 has a non-finite coordinate"},
                              {"bad_stacked_then_nan.h5md", "frame 1: 56 of 64 atoms are in one cell"}};
    const char *work[] = {"-c 2 --pair lj:epsilon=1,sigma=1 --rmax 2 --bins 10", "-c 2 --neighbors",
                          "--rmax 2 --bins 10"};
    for (int c = 0; c < 2; ++c)
        for (size_t w = 0; w < sizeof work / sizeof *work; ++w) {
            char in[512];
            snprintf(in, sizeof in, "%s/h5md/%s", MDNL_DATA_DIR, cases[c][0]);
            cr_expect_eq(mdnl("run %s %s --max-pairs 4000 -o out.h5", in, work[w]), 3, "%s %s: %s", cases[c][0],
                         work[w], err_text);
            expect_one_error_line();
            cr_expect(strstr(err_text, cases[c][0]) && strstr(err_text, cases[c][1]), "%s %s: expected \"%s\" in: %s",
                      cases[c][0], work[w], cases[c][1], err_text);
            cr_expect_eq(dir_entries(), 0, "a failed run must leave nothing");
            /* frame 0 alone runs */
            cr_expect_eq(mdnl("run %s %s --max-pairs 4000 --frames 0 -o out.h5", in, work[w]), 0, "%s %s: %s",
                         cases[c][0], work[w], err_text);
            char out[512];
            snprintf(out, sizeof out, "%s/out.h5", tmpdir);
            cr_expect_eq(unlink(out), 0);
        }
}

/* run --per-frame stores what rdf --per-frame stores: the same per-frame
 * rows (bit for bit) and the same mean, whatever the pipeline's threads. */
Test(run, per_frame_rdf_equals_rdf_per_frame)
{
    const char *h = "--rmax 2.5 --bins 25 --pairs A-B,B-B --frames 0:4 --per-frame";
    cr_assert_eq(mdnl("rdf %s/rdf/lj_mixture.xyz %s -o rdf.h5 --plot rdf.svg", MDNL_DATA_DIR, h), 0, "%s", err_text);
    cr_assert_eq(mdnl("run %s/rdf/lj_mixture.xyz %s -o run.h5 --plot run.svg", MDNL_DATA_DIR, h), 0, "%s", err_text);
    static double a[64 * 25], b[64 * 25];
    const char *dsets[] = {"g_frames", "counts_frames", "frame", "step", "g", "counts", "n"};
    const char *names[] = {"A-B", "B-B"};
    for (int p = 0; p < 2; ++p)
        for (size_t k = 0; k < sizeof dsets / sizeof *dsets; ++k) {
            char ds[64];
            snprintf(ds, sizeof ds, "/rdf/%s/%s", names[p], dsets[k]);
            hsize_t da[2] = {0, 0}, db[2] = {0, 0};
            const int ra = read_nd("rdf.h5", ds, a, 64 * 25, da), rb = read_nd("run.h5", ds, b, 64 * 25, db);
            cr_assert(ra >= 1 && ra == rb && da[0] == db[0] && da[1] == db[1], "%s: rank %d vs %d", ds, ra, rb);
            const size_t n = (size_t)da[0] * (ra == 2 ? (size_t)da[1] : 1);
            if (strcmp(dsets[k], "g_frames") == 0)
                cr_expect_eq(da[0], 4, "%s: one row a frame", ds);
            cr_expect_eq(memcmp(a, b, n * sizeof *a), 0, "%s differs between rdf and run", ds);
        }
    /* the mean is today's: a run without --per-frame gives the same g */
    cr_assert_eq(mdnl("run %s/rdf/lj_mixture.xyz --rmax 2.5 --bins 25 --pairs A-B,B-B --frames 0:4 -o mean.h5",
                      MDNL_DATA_DIR),
                 0, "%s", err_text);
    hsize_t da[2], db[2];
    read_nd("mean.h5", "/rdf/A-B/g", a, 25, da);
    read_nd("run.h5", "/rdf/A-B/g", b, 25, db);
    cr_expect_eq(memcmp(a, b, 25 * sizeof *a), 0);
    expect_same_file("rdf.svg", "run.svg");
    /* a directory of tables holds the mean only: --per-frame needs HDF5 or a plot */
    cr_expect_eq(mdnl("run %s/rdf/lj_mixture.xyz %s -o tabs/", MDNL_DATA_DIR, h), 2);
    expect_one_error_line();
    cr_expect_eq(mdnl("run %s/rdf/lj_mixture.xyz %s -o tabs/ --plot tabs.svg", MDNL_DATA_DIR, h), 0, "%s", err_text);
    char *svg = read_all("tabs.svg");
    cr_expect(strstr(svg, "g(r) per frame, A-B") != NULL);
    free(svg);
    cr_expect_eq(mdnl("run %s/rdf/lj_mixture.xyz -c 2 --pair lj:epsilon=1,sigma=1 --per-frame -o x.h5", MDNL_DATA_DIR),
                 2);
    expect_one_error_line();
    cr_expect_eq(mdnl("run %s/rdf/lj_mixture.xyz %s -o y.h5 --plot y.png", MDNL_DATA_DIR, h), 2);
    expect_one_error_line();
    cr_expect(!exists("y.h5") && !exists("x.h5"));
}

/* run --pair-coeff: the energies mdnl energy gives with the same options
 * (its parser and kernels), on the Kob-Andersen fixture and on every frame
 * of a trajectory, with the histogram beside them. */
Test(run, pair_coeff_energies_equal_mdnl_energy)
{
    const char *ka = "--pair lj:epsilon=1,sigma=1 --pair-coeff A-B:epsilon=1.5,sigma=0.8,cut=2.0 "
                     "--pair-coeff B-B:epsilon=0.5,sigma=0.88,cut=2.2";
    const char *in[] = {"energy/ka_mixture.xyz", "rdf/lj_mixture.xyz"};
    for (int k = 0; k < 2; ++k) {
        cr_assert_eq(mdnl("energy %s/%s -c 2.5 %s -o e%d.tsv", MDNL_DATA_DIR, in[k], ka, k), 0, "%s", err_text);
        cr_assert_eq(mdnl("run %s/%s -c 2.5 %s --rmax 3 --bins 30 -o r%d/", MDNL_DATA_DIR, in[k], ka, k), 0, "%s",
                     err_text);
        char e[32], r[32];
        snprintf(e, sizeof e, "e%d.tsv", k);
        snprintf(r, sizeof r, "r%d/energy.tsv", k);
        expect_same_file(r, e);
    }
    char *t = read_all("e0.tsv");
    double v = 0;
    cr_expect_eq(sscanf(t, "# frame\tstep\tenergy\n0\t0\t%lf", &v), 1, "%s", t);
    cr_expect(fabs(v - -2305.798279308217) < 1e-3, "KA energy %.12f", v); /* LAMMPS: data/energy/ka_reference.txt */
    free(t);
    /* the pairs' largest cutoff above -c: the traversal's, as in mdnl energy */
    cr_assert_eq(mdnl("energy %s/rdf/lj_mixture.xyz -c 2.0 --pair lj:epsilon=1,sigma=1,cut=2.5 "
                      "--pair-coeff B-B:epsilon=0.5,sigma=0.88 -o e2.tsv",
                      MDNL_DATA_DIR),
                 0, "%s", err_text);
    cr_assert_eq(mdnl("run %s/rdf/lj_mixture.xyz -c 2.0 --pair lj:epsilon=1,sigma=1,cut=2.5 "
                      "--pair-coeff B-B:epsilon=0.5,sigma=0.88 -o r2/",
                      MDNL_DATA_DIR),
                 0, "%s", err_text);
    expect_same_file("r2/energy.tsv", "e2.tsv");
    /* a species the frame lacks: exit 3, nothing written */
    cr_expect_eq(mdnl("run %s/rdf/lj_mixture.xyz -c 2.5 --pair lj:epsilon=1,sigma=1 --pair-coeff A-C:epsilon=1,sigma=1 "
                      "-o bad.h5",
                      MDNL_DATA_DIR),
                 3);
    expect_one_error_line();
    cr_expect(!exists("bad.h5"));
    /* one list and one energy cutoff: the list's -c below the pairs' largest is refused */
    cr_expect_eq(mdnl("run %s/rdf/lj_mixture.xyz -c 2.0 --neighbors --pair lj:epsilon=1,sigma=1,cut=2.5 -o nb.h5",
                      MDNL_DATA_DIR),
                 2);
    expect_one_error_line();
}

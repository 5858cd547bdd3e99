/* test_h5md.c — the H5MD reader (io/h5md_reader.c) on every fixture of
 * data/h5md/ (tools/make_h5md_fixtures.py), the trajectory writer round trip,
 * the results layout read back with the bare HDF5 C API, and MDAnalysis
 * reading a file our writer made. */
#define _POSIX_C_SOURCE 200809L
#include "h5md_reader.h"
#include "h5md_writer.h"
#include "xyz_reader.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIX(name) MDNL_DATA_DIR "/h5md/" name

static mdnl_h5md_reader *open_ok(const char *path, const char *group)
{
    mdnl_h5md_reader *r = NULL;
    mdnl_status st = mdnl_h5md_open(path, group, &r);
    cr_assert_eq(st, MDNL_OK, "opening %s: status %d: %s", path, st, mdnl_last_error());
    return r;
}

static void next_ok(mdnl_h5md_reader *r, mdnl_frame *f)
{
    mdnl_status st = mdnl_h5md_next(r, f);
    cr_assert_eq(st, MDNL_OK, "status %d: %s", st, mdnl_last_error());
}

static void expect_diag_box(const mdnl_frame *f, double a, double b, double c)
{
    cr_expect(f->box.has_lattice);
    double want[3][3] = {{a, 0, 0}, {0, b, 0}, {0, 0, c}};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j)
            cr_expect_eq(f->box.h[i][j], want[i][j], "frame %lld h[%d][%d] = %g, expected %g", (long long)f->index, i,
                         j, f->box.h[i][j], want[i][j]);
}

static const char *sym(const mdnl_frame *f, int64_t i) { return f->symbols[f->species[i]]; }

/* A temporary directory per test (Criterion runs tests in parallel, each in
 * a process of its own), removed with what the test wrote when that process
 * exits. */
static char tmp_dir[64];

static void tmpdir_remove(void)
{
    DIR *d = opendir(tmp_dir);
    if (!d)
        return;
    struct dirent *e;
    char path[sizeof tmp_dir + 256 + 2];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", tmp_dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(tmp_dir);
}

static char *tmpdir(void)
{
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/mdnl-h5md-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_dir));
    atexit(tmpdir_remove);
    return tmp_dir;
}

static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            ++n;
    closedir(d);
    return n;
}

/* --- valid fixtures ------------------------------------------------------ */

Test(h5md_read, fixed_orthorhombic_edges_give_diagonal_cell_and_integer_species)
{
    mdnl_h5md_reader *r = open_ok(FIX("box_fixed3.h5md"), NULL);
    cr_expect_eq(mdnl_h5md_nframes(r), 3);
    cr_expect_eq(mdnl_h5md_natoms(r), 4);
    cr_expect_str_eq(mdnl_h5md_group(r), "all");
    mdnl_frame f = {0};
    const int64_t steps[3] = {0, 10, 20};
    const double times[3] = {0.0, 0.5, 1.0};
    for (int k = 0; k < 3; ++k) {
        next_ok(r, &f);
        cr_expect_eq(f.index, k);
        cr_expect(f.has_step && f.has_time);
        cr_expect_eq(f.step, steps[k], "frame %d step %lld", k, (long long)f.step);
        cr_expect_eq(f.time, times[k]);
        expect_diag_box(&f, 10, 11, 12);
        cr_expect(f.box.pbc[0] && f.box.pbc[1] && f.box.pbc[2]);
        cr_expect_eq(f.pos[1][0], 1.5 + 0.25 * k);
        cr_expect_eq(f.pos[3][1], 9.0 + 0.25 * k);
        cr_expect_eq(f.nspecies, 3);
        cr_expect_str_eq(sym(&f, 0), "1");
        cr_expect_str_eq(sym(&f, 1), "2");
        cr_expect_str_eq(sym(&f, 2), "1");
        cr_expect_str_eq(sym(&f, 3), "7");
    }
    cr_expect_eq(mdnl_h5md_next(r, &f), MDNL_END);
    cr_expect_eq(mdnl_h5md_next(r, &f), MDNL_END, "END is sticky");
    mdnl_frame_free(&f);
    mdnl_h5md_close(r);
}

Test(h5md_read, fixed_triclinic_edges_vlen_boundary_and_fixed_step_increment)
{
    mdnl_h5md_reader *r = open_ok(FIX("box_fixed33.h5md"), NULL);
    mdnl_frame f = {0};
    const double H[3][3] = {{10, 0, 0}, {2, 9, 0}, {1, 1.5, 8}};
    for (int k = 0; k < 3; ++k) {
        next_ok(r, &f);
        cr_expect_eq(f.step, 100 + 5 * k, "step = offset + k * increment, got %lld", (long long)f.step);
        cr_expect_eq(f.time, 1.0 + 0.25 * k);
        for (int i = 0; i < 3; ++i)
            for (int j = 0; j < 3; ++j)
                cr_expect_eq(f.box.h[i][j], H[i][j], "row %d is lattice vector %d", i, i);
        cr_expect(f.box.pbc[0] && f.box.pbc[1] && f.box.pbc[2]);
    }
    mdnl_frame_free(&f);
    mdnl_h5md_close(r);
}

/* Reads dataset `name` of `path` whole, as double, with the bare C API. */
static double *bare_read_double(const char *path, const char *name, size_t *n)
{
    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(fid, 0);
    hid_t ds = H5Dopen2(fid, name, H5P_DEFAULT);
    cr_assert_geq(ds, 0, "%s in %s", name, path);
    hid_t sp = H5Dget_space(ds);
    *n = (size_t)H5Sget_simple_extent_npoints(sp);
    double *buf = malloc(*n * sizeof *buf);
    cr_assert_geq(H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), 0);
    H5Sclose(sp);
    H5Dclose(ds);
    H5Fclose(fid);
    return buf;
}

Test(h5md_read, time_dependent_edges_matched_by_step_float32_and_string_species)
{
    mdnl_h5md_reader *r = open_ok(FIX("box_td3.h5md"), NULL);
    cr_expect_str_eq(mdnl_h5md_group(r), "atoms", "the only group is the default");
    size_t n;
    double *want = bare_read_double(FIX("box_td3.h5md"), "/particles/atoms/position/value", &n);
    cr_assert_eq(n, 4 * 5 * 3);
    mdnl_frame f = {0};
    for (int k = 0; k < 4; ++k) {
        next_ok(r, &f);
        cr_expect_eq(f.step, 10 * k);
        /* Box samples at steps 0 and 20: frames 0, 1 use the first. */
        if (k < 2)
            expect_diag_box(&f, 8.0, 9.0, 10.0);
        else
            expect_diag_box(&f, 8.5, 9.5, 10.5);
        cr_expect(f.box.pbc[0] && f.box.pbc[1] && !f.box.pbc[2], "boundary periodic periodic none");
        for (int i = 0; i < 5; ++i)
            for (int d = 0; d < 3; ++d)
                cr_expect_eq(f.pos[i][d], want[(k * 5 + i) * 3 + d]);
        cr_expect_eq(f.nspecies, 2);
        const char *syms[5] = {"O", "H", "H", "O", "H"};
        for (int i = 0; i < 5; ++i)
            cr_expect_str_eq(sym(&f, i), syms[i]);
    }
    free(want);
    mdnl_frame_free(&f);
    mdnl_h5md_close(r);
}

Test(h5md_read, seek_back_rematches_time_dependent_box)
{
    mdnl_h5md_reader *r = open_ok(FIX("box_td3.h5md"), NULL);
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_h5md_seek(r, 3), MDNL_OK);
    next_ok(r, &f);
    expect_diag_box(&f, 8.5, 9.5, 10.5);
    cr_assert_eq(mdnl_h5md_seek(r, 1), MDNL_OK);
    next_ok(r, &f);
    cr_expect_eq(f.index, 1);
    expect_diag_box(&f, 8.0, 9.0, 10.0);
    cr_expect_eq(mdnl_h5md_seek(r, 5), MDNL_ERR_USAGE);
    mdnl_frame_free(&f);
    mdnl_h5md_close(r);
}

/* The extended-XYZ twin of box_td33.h5md, parsed by hand. */
typedef struct xyz_frame {
    double h[9];
    double pos[24][3];
    char sym[24][4];
    long step;
} xyz_frame;

static void read_twin(xyz_frame *fr, int nframes)
{
    FILE *fp = fopen(FIX("box_td33.extxyz"), "r");
    cr_assert_not_null(fp);
    char line[1024];
    for (int k = 0; k < nframes; ++k) {
        cr_assert_not_null(fgets(line, sizeof line, fp));
        cr_assert_eq(atoi(line), 24);
        cr_assert_not_null(fgets(line, sizeof line, fp));
        char *p = strstr(line, "Lattice=\"") + 9;
        for (int q = 0; q < 9; ++q)
            fr[k].h[q] = strtod(p, &p);
        fr[k].step = strtol(strstr(line, "step=") + 5, NULL, 10);
        for (int i = 0; i < 24; ++i) {
            cr_assert_not_null(fgets(line, sizeof line, fp));
            cr_assert_eq(sscanf(line, "%3s %lf %lf %lf", fr[k].sym[i], &fr[k].pos[i][0], &fr[k].pos[i][1],
                                &fr[k].pos[i][2]),
                         4);
        }
    }
    fclose(fp);
}

Test(h5md_read, time_dependent_triclinic_edges_equal_the_extxyz_twin_bit_for_bit)
{
    static xyz_frame twin[4];
    read_twin(twin, 4);
    mdnl_h5md_reader *r = open_ok(FIX("box_td33.h5md"), NULL);
    mdnl_frame f = {0};
    for (int k = 0; k < 4; ++k) {
        next_ok(r, &f);
        cr_expect_eq(f.step, twin[k].step);
        cr_expect_eq(f.time, twin[k].step * 0.002);
        for (int q = 0; q < 9; ++q)
            cr_expect_eq(f.box.h[q / 3][q % 3], twin[k].h[q], "frame %d h[%d][%d]", k, q / 3, q % 3);
        for (int i = 0; i < 24; ++i) {
            for (int d = 0; d < 3; ++d)
                cr_expect_eq(f.pos[i][d], twin[k].pos[i][d], "frame %d atom %d", k, i);
            cr_expect_str_eq(sym(&f, i), twin[k].sym[i], "names attribute maps codes to symbols");
        }
    }
    cr_expect_gt(f.pos[0][1], f.box.h[1][1], "an atom outside the cell is not wrapped by the reader");
    mdnl_frame_free(&f);
    mdnl_h5md_close(r);
}

Test(h5md_read, boundary_none_without_edges_is_an_open_frame)
{
    mdnl_h5md_reader *r = open_ok(FIX("open_none.h5md"), NULL);
    mdnl_frame f = {0};
    next_ok(r, &f);
    cr_expect(!f.box.has_lattice);
    cr_expect(!f.box.pbc[0] && !f.box.pbc[1] && !f.box.pbc[2]);
    cr_expect_eq(mdnl_box_volume(&f.box), 0.0);
    cr_expect_eq(f.nspecies, 1);
    cr_expect_str_eq(f.symbols[0], "X", "no species dataset: every atom is X");
    mdnl_frame_free(&f);
    mdnl_h5md_close(r);
}

Test(h5md_read, missing_time_dataset_gives_has_time_false)
{
    mdnl_h5md_reader *r = open_ok(FIX("notime.h5md"), NULL);
    mdnl_frame f = {0};
    next_ok(r, &f);
    cr_expect(!f.has_time);
    cr_expect(f.has_step);
    cr_expect_eq(f.step, 7);
    next_ok(r, &f);
    cr_expect_eq(f.step, 9);
    mdnl_frame_free(&f);
    mdnl_h5md_close(r);
}

Test(h5md_read, lammps_dump_h5md_layout_reads)
{
    mdnl_h5md_reader *r = open_ok(FIX("lammps_h5md10.h5md"), NULL);
    cr_expect_eq(mdnl_h5md_nframes(r), 3);
    size_t n;
    double *want = bare_read_double(FIX("lammps_h5md10.h5md"), "/particles/all/position/value", &n);
    mdnl_frame f = {0};
    for (int k = 0; k < 3; ++k) {
        next_ok(r, &f);
        cr_expect_eq(f.step, 50 * k);
        cr_expect_eq(f.time, 50 * k * 0.005);
        expect_diag_box(&f, 6.0, 6.5, 7.0);
        cr_expect_eq(f.pos[4][2], want[(k * 5 + 4) * 3 + 2]);
        cr_expect_eq(f.nspecies, 2);
        cr_expect_str_eq(sym(&f, 0), "1");
        cr_expect_str_eq(sym(&f, 2), "2");
        cr_expect_str_eq(sym(&f, 4), "1");
    }
    free(want);
    mdnl_frame_free(&f);
    mdnl_h5md_close(r);
}

Test(h5md_read, skip_moves_past_a_frame_without_reading_it)
{
    mdnl_h5md_reader *r = open_ok(FIX("box_fixed3.h5md"), NULL);
    mdnl_frame f = {0};
    cr_expect_eq(mdnl_h5md_skip(r), MDNL_OK);
    next_ok(r, &f);
    cr_expect_eq(f.index, 1);
    cr_expect_eq(f.step, 10);
    cr_expect_eq(mdnl_h5md_skip(r), MDNL_OK);
    cr_expect_eq(mdnl_h5md_skip(r), MDNL_END);
    mdnl_frame_free(&f);
    mdnl_h5md_close(r);
}

/* --- group selection ------------------------------------------------------ */

/* The reader skips re-copying fixed species into a frame it filled last
 * (mdnl_frame.species_tag): a frame that another reader filled in between
 * must get them back. */
static void expect_same_species(const mdnl_frame *got, const mdnl_frame *want, const char *what)
{
    cr_assert_eq(got->natoms, want->natoms, "%s", what);
    cr_expect_eq(got->nspecies, want->nspecies, "%s", what);
    cr_expect(memcmp(got->species, want->species, (size_t)want->natoms * sizeof *want->species) == 0,
              "%s: species differ", what);
    cr_expect(memcmp(got->symbols, want->symbols, sizeof want->symbols) == 0, "%s: symbols differ", what);
}

Test(h5md_read, fixed_species_survive_a_frame_shared_between_readers)
{
    mdnl_frame a = {0}, b = {0}, f = {0};
    mdnl_h5md_reader *ra = open_ok(FIX("box_td33.h5md"), NULL), *rb = open_ok(FIX("box_fixed3.h5md"), NULL);
    next_ok(ra, &a); /* the references, each in a frame of its own */
    next_ok(rb, &b);
    mdnl_h5md_reader *ra2 = open_ok(FIX("box_td33.h5md"), NULL), *rb2 = open_ok(FIX("box_fixed3.h5md"), NULL);
    next_ok(ra2, &f);
    expect_same_species(&f, &a, "first frame of A");
    next_ok(ra2, &f);
    expect_same_species(&f, &a, "second frame of A, copy skipped");
    next_ok(rb2, &f);
    expect_same_species(&f, &b, "B into A's frame");
    next_ok(ra2, &f);
    expect_same_species(&f, &a, "A again after B");
    mdnl_xyz_reader *x = NULL;
    cr_assert_eq(mdnl_xyz_open(FIX("box_td33.extxyz"), &x), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_xyz_next(x, &f), MDNL_OK, "%s", mdnl_last_error());
    for (int64_t i = 0; i < f.natoms; ++i) /* whatever the XYZ held, scramble it */
        f.species[i] = 0;
    f.nspecies = 1;
    next_ok(ra2, &f);
    expect_same_species(&f, &a, "A again after an XYZ frame");
    mdnl_xyz_close(x);
    mdnl_h5md_close(ra);
    mdnl_h5md_close(rb);
    mdnl_h5md_close(ra2);
    mdnl_h5md_close(rb2);
    mdnl_frame_free(&a);
    mdnl_frame_free(&b);
    mdnl_frame_free(&f);
}

Test(h5md_groups, two_groups_default_to_all)
{
    mdnl_h5md_reader *r = open_ok(FIX("two_groups.h5md"), NULL);
    cr_expect_str_eq(mdnl_h5md_group(r), "all");
    cr_expect_eq(mdnl_h5md_natoms(r), 4);
    mdnl_h5md_close(r);
}

Test(h5md_groups, named_group_is_selected)
{
    mdnl_h5md_reader *r = open_ok(FIX("two_groups.h5md"), "solvent");
    cr_expect_eq(mdnl_h5md_natoms(r), 2);
    mdnl_h5md_close(r);
    r = open_ok(FIX("two_groups_noall.h5md"), "right");
    cr_expect_eq(mdnl_h5md_natoms(r), 3);
    mdnl_h5md_close(r);
}

Test(h5md_groups, no_default_group_lists_the_groups)
{
    mdnl_h5md_reader *r = NULL;
    cr_assert_eq(mdnl_h5md_open(FIX("two_groups_noall.h5md"), NULL, &r), MDNL_ERR_INPUT);
    cr_expect_null(r);
    const char *m = mdnl_last_error();
    cr_expect(strstr(m, "/particles") && strstr(m, "left, right") && strstr(m, "--group"), "message: %s", m);
}

Test(h5md_groups, unknown_group_is_an_input_error_naming_it)
{
    mdnl_h5md_reader *r = NULL;
    cr_assert_eq(mdnl_h5md_open(FIX("two_groups.h5md"), "nope", &r), MDNL_ERR_INPUT);
    const char *m = mdnl_last_error();
    cr_expect(strstr(m, "\"nope\"") && strstr(m, "all, solvent"), "message: %s", m);
}

Test(h5md_groups, list_groups_names_them_in_order)
{
    char buf[128];
    cr_assert_eq(mdnl_h5md_list_groups(FIX("two_groups.h5md"), buf, sizeof buf), MDNL_OK, "%s", mdnl_last_error());
    cr_expect_str_eq(buf, "all, solvent");
}

/* --- malformed fixtures ----------------------------------------------------- */

/* Arrays, not pointers: Criterion runs each parameter in a new process. */
typedef struct bad_case {
    char file[40];
    char where[48]; /* must appear in the message */
    char what[48];  /* and this too */
    int frame;      /* -1: fails at open; else "frame K" appears */
} bad_case;

ParameterizedTestParameters(h5md_bad, input_error_names_the_dataset)
{
    static bad_case cases[] = {
        {"bad_rank.h5md", "/particles/all/position/value", "expected [T][N][3], found [3][4]", -1},
        {"bad_shape.h5md", "/particles/all/position/value", "found [3][4][2]", -1},
        {"bad_position_missing.h5md", "/particles/all/position", "found nothing", -1},
        {"bad_boundary_missing.h5md", "/particles/all/box attribute boundary", "found nothing", -1},
        {"bad_boundary_value.h5md", "/particles/all/box attribute boundary", "found \"periodik\"", -1},
        {"bad_dimension.h5md", "/particles/all/box attribute dimension", "expected 3, found 2", -1},
        {"bad_box_missing.h5md", "/particles/all/box", "found nothing", -1},
        {"bad_edges_shape.h5md", "/particles/all/box/edges", "expected [3] or [3][3], found [2]", -1},
        {"bad_zero_volume.h5md", "/particles/all/box/edges", "found volume 0", -1},
        {"bad_t_mismatch.h5md", "/particles/all/position/step", "expected [3] (one step per sample", -1},
        {"bad_n_species.h5md", "/particles/all/species", "expected [4] (one per atom", -1},
        {"bad_nan.h5md", "/particles/all/position/value", "found nan for atom 2 (y)", 1},
        {"bad_inf.h5md", "/particles/all/position/value", "found inf for atom 0 (x)", 2},
        {"bad_step_string.h5md", "/particles/all/position/step", "expected integers, found strings", -1},
        {"bad_value_string.h5md", "/particles/all/position/value", "found strings", -1},
        {"bad_edges_td_t_mismatch.h5md", "/particles/all/box/edges/step", "expected [3]", -1},
        {"bad_species_td_shape.h5md", "/particles/all/species/value", "found [3][5]", -1},
        {"bad_edges_td_late.h5md", "/particles/all/box/edges/value", "first sample at step 1", 0},
        {"bad_step_offset_array.h5md", "/particles/all/position/step", "expected a scalar attribute offset", -1},
        {"bad_species_unwritten.h5md", "/particles/all/species", "expected every chunk of the extent [200000]", -1},
        {"bad_step_overflow.h5md", "/particles/all/position", "expected steps within 64 bits", 1},
        {"bad_no_particles.h5md", "/particles", "expected an H5MD particles group", -1},
        {"bad_external_link.h5md", "/particles/all/position", "found an external link to box_fixed3.h5md", -1},
        {"bad_external_link_elsewhere.h5md", "/observables/zero", "found an external link to /dev/zero", -1},
        {"bad_external_storage.h5md", "/particles/all/position/value", "found external raw storage", -1},
        {"bad_vds_self.h5md", "/particles/all/position/value", "found a virtual dataset", -1},
        {"bad_declared_frames.h5md", "/particles/all/position/value", "for 1000000000000 chunks", -1},
        {"bad_declared_contiguous.h5md", "/particles/all/position/value", "expected 96000000000 bytes stored", -1},
        {"bad_filter_unknown.h5md", "/particles/all/position/value", "found filter 32001", -1},
        /* one byte of a file written by `mdnl convert` flipped (docs/robustness.md: the sweep) */
        {"bad_flip_type_size.h5md", "/particles/all/position/value", "found floats of 247 bytes", -1},
        {"bad_flip_chunk_count.h5md", "/particles/all/position/value", "written (1), found 3", -1},
        {"bad_flip_chunk_dim.h5md", "/particles/all/position/value", "of 6048 bytes stored, found 216", -1},
        {"bad_flip_species_type.h5md", "/particles/all/species", "found integers of 4278190084 bytes", -1},
        {"bad_not_hdf5.h5md", "bad_not_hdf5.h5md", "no HDF5 signature", -1},
        {"no_such_file.h5md", "no_such_file.h5md", "No such file", -1},
    };
    return cr_make_param_array(bad_case, cases, sizeof cases / sizeof *cases);
}

ParameterizedTest(bad_case *c, h5md_bad, input_error_names_the_dataset)
{
    char path[512];
    snprintf(path, sizeof path, "%s/h5md/%s", MDNL_DATA_DIR, c->file);
    mdnl_h5md_reader *r = NULL;
    mdnl_status st = mdnl_h5md_open(path, NULL, &r);
    mdnl_frame f = {0};
    if (c->frame < 0) {
        cr_assert_eq(st, MDNL_ERR_INPUT, "%s: open gave %d (%s)", c->file, st, mdnl_last_error());
    } else {
        cr_assert_eq(st, MDNL_OK, "%s: open: %s", c->file, mdnl_last_error());
        for (int k = 0; k < c->frame; ++k)
            cr_assert_eq(mdnl_h5md_next(r, &f), MDNL_OK, "%s: frame %d: %s", c->file, k, mdnl_last_error());
        cr_assert_eq(mdnl_h5md_next(r, &f), MDNL_ERR_INPUT, "%s: frame %d", c->file, c->frame);
        char fr[32];
        snprintf(fr, sizeof fr, "frame %d, ", c->frame);
        cr_expect(strstr(mdnl_last_error(), fr), "%s: message lacks \"%s\": %s", c->file, fr, mdnl_last_error());
    }
    const char *m = mdnl_last_error();
    cr_expect(strncmp(m, path, strlen(path)) == 0, "message starts with the file: %s", m);
    cr_expect(strstr(m, c->where), "%s: message lacks \"%s\": %s", c->file, c->where, m);
    cr_expect(strstr(m, c->what), "%s: message lacks \"%s\": %s", c->file, c->what, m);
    cr_expect_null(strchr(m, '\n'), "one line: %s", m);
    mdnl_frame_free(&f);
    mdnl_h5md_close(r);
}

Test(h5md_bad, directory_is_an_input_error)
{
    mdnl_h5md_reader *r = NULL;
    cr_expect_eq(mdnl_h5md_open(MDNL_DATA_DIR "/h5md", NULL, &r), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "directory"), "%s", mdnl_last_error());
}

Test(h5md_bad, hdf5_signature_detection)
{
    cr_expect(mdnl_h5md_is_hdf5(FIX("box_fixed3.h5md")));
    cr_expect(!mdnl_h5md_is_hdf5(FIX("bad_not_hdf5.h5md")));
    cr_expect(!mdnl_h5md_is_hdf5(FIX("box_td33.extxyz")));
    cr_expect(!mdnl_h5md_is_hdf5(FIX("missing")));
}

/* --- trajectory writer --------------------------------------------------- */

/* Frame k of a deterministic trajectory: positions with bits in every
 * mantissa place, a triclinic cell, species changing at frame 2. */
static void make_frame(mdnl_frame *f, int64_t k, int64_t n, bool triclinic, bool with_time)
{
    cr_assert_eq(mdnl_frame_reserve(f, n), MDNL_OK);
    f->index = k;
    f->natoms = n;
    f->nspecies = 0;
    for (int64_t i = 0; i < n; ++i) {
        f->pos[i][0] = 0.1 * (double)i + 0.01 * (double)k + 1.0 / 3.0;
        f->pos[i][1] = 0.2 * (double)i;
        f->pos[i][2] = 0.3 * (double)i + (double)k;
        const char *s = (k >= 2 && i == 0) ? "O" : (i % 2 ? "H" : "C");
        f->species[i] = mdnl_frame_species_id(f, s, strlen(s));
    }
    memset(&f->box, 0, sizeof f->box);
    f->box.has_lattice = true;
    f->box.pbc[0] = f->box.pbc[1] = true;
    f->box.pbc[2] = !triclinic;
    f->box.h[0][0] = 10.0 + 0.5 * (double)k;
    f->box.h[1][1] = 11.0;
    f->box.h[2][2] = 12.0;
    if (triclinic)
        f->box.h[1][0] = 1.0 / 7.0, f->box.h[2][0] = 0.5, f->box.h[2][1] = -0.25;
    f->step = 1000 + 10 * k;
    f->has_step = true;
    f->time = 0.1 * (double)k;
    f->has_time = with_time;
}

static void write_traj(const char *path, int nframes, int64_t n, bool triclinic, bool with_time)
{
    mdnl_h5md_traj *w = NULL;
    cr_assert_eq(mdnl_h5md_traj_create(path, NULL, &w), MDNL_OK, "%s", mdnl_last_error());
    mdnl_frame f = {0};
    for (int k = 0; k < nframes; ++k) {
        make_frame(&f, k, n, triclinic, with_time);
        cr_assert_eq(mdnl_h5md_traj_append(w, &f), MDNL_OK, "%s", mdnl_last_error());
    }
    cr_expect_eq(mdnl_h5md_traj_nframes(w), nframes);
    cr_assert_eq(mdnl_h5md_traj_commit(w), MDNL_OK, "%s", mdnl_last_error());
    mdnl_frame_free(&f);
}

static void expect_roundtrip(const char *path, int nframes, int64_t n, bool triclinic, bool with_time)
{
    mdnl_h5md_reader *r = open_ok(path, NULL);
    cr_assert_eq(mdnl_h5md_nframes(r), nframes);
    mdnl_frame want = {0}, got = {0};
    for (int k = 0; k < nframes; ++k) {
        make_frame(&want, k, n, triclinic, with_time);
        next_ok(r, &got);
        cr_expect_eq(got.natoms, n);
        cr_expect_eq(got.step, want.step);
        /* without a time the writer writes the step as the time (dt = 1): MDAnalysis needs one */
        cr_expect_eq(got.has_time, true);
        cr_expect_eq(got.time, with_time ? want.time : (double)want.step, "frame %d time %g", k, got.time);
        cr_expect(memcmp(&got.box.h, &want.box.h, sizeof got.box.h) == 0, "frame %d cell bit for bit", k);
        cr_expect_eq(got.box.has_lattice, true);
        for (int a = 0; a < 3; ++a)
            cr_expect_eq(got.box.pbc[a], want.box.pbc[a], "frame %d axis %d", k, a);
        if (n > 0)
            cr_expect(memcmp(got.pos, want.pos, (size_t)n * sizeof *got.pos) == 0, "frame %d positions bit for bit",
                      k);
        for (int64_t i = 0; i < n; ++i)
            cr_expect_str_eq(sym(&got, i), sym(&want, i), "frame %d atom %lld", k, (long long)i);
    }
    cr_expect_eq(mdnl_h5md_next(r, &got), MDNL_END);
    mdnl_frame_free(&want);
    mdnl_frame_free(&got);
    mdnl_h5md_close(r);
}

Test(h5md_write, traj_roundtrip_triclinic_with_species_change_is_bit_exact)
{
    char *dir = tmpdir();
    char path[128];
    snprintf(path, sizeof path, "%s/t.h5md", dir);
    write_traj(path, 4, 7, true, true);
    cr_expect_eq(count_entries(dir), 1, "only the committed file remains");
    expect_roundtrip(path, 4, 7, true, true);
    /* The species became time-dependent at frame 2. */
    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(fid, 0);
    hid_t ds = H5Dopen2(fid, "/particles/all/species/value", H5P_DEFAULT);
    cr_expect_geq(ds, 0, "species/value exists");
    hsize_t d[2] = {0, 0};
    hid_t sp = H5Dget_space(ds);
    H5Sget_simple_extent_dims(sp, d, NULL);
    cr_expect(d[0] == 4 && d[1] == 7, "species/value is [4][7], got [%llu][%llu]", (unsigned long long)d[0],
              (unsigned long long)d[1]);
    H5Sclose(sp);
    H5Dclose(ds);
    H5Fclose(fid);
    unlink(path);
    rmdir(dir);
}

Test(h5md_write, traj_roundtrip_orthorhombic_without_time_and_empty_frames)
{
    char *dir = tmpdir();
    char path[128];
    snprintf(path, sizeof path, "%s/t.h5", dir);
    write_traj(path, 2, 5, false, false);
    expect_roundtrip(path, 2, 5, false, false);
    snprintf(path, sizeof path, "%s/empty.h5", dir);
    write_traj(path, 3, 0, false, true);
    expect_roundtrip(path, 3, 0, false, true);
    snprintf(path, sizeof path, "%s/noframes.h5", dir);
    write_traj(path, 0, 0, false, true);
    mdnl_h5md_reader *r = NULL;
    cr_expect_eq(mdnl_h5md_open(path, NULL, &r), MDNL_ERR_INPUT, "no particle group in a file without frames");
}

Test(h5md_write, traj_atom_count_change_is_input_error_and_abort_leaves_nothing)
{
    char *dir = tmpdir();
    char path[128];
    snprintf(path, sizeof path, "%s/t.h5md", dir);
    mdnl_h5md_traj *w = NULL;
    cr_assert_eq(mdnl_h5md_traj_create(path, NULL, &w), MDNL_OK);
    mdnl_frame f = {0};
    make_frame(&f, 0, 5, false, true);
    cr_assert_eq(mdnl_h5md_traj_append(w, &f), MDNL_OK);
    make_frame(&f, 1, 6, false, true);
    cr_expect_eq(mdnl_h5md_traj_append(w, &f), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "expected 5 atoms") && strstr(mdnl_last_error(), "found 6"), "%s",
              mdnl_last_error());
    cr_expect_eq(count_entries(dir), 1, "the temporary file exists while writing");
    mdnl_h5md_traj_abort(w);
    cr_expect_eq(count_entries(dir), 0, "abort removes the temporary file");
    mdnl_frame_free(&f);
    rmdir(dir);
}

Test(h5md_write, traj_into_missing_directory_is_input_error)
{
    mdnl_h5md_traj *w = NULL;
    cr_expect_eq(mdnl_h5md_traj_create("/nonexistent-dir/x.h5md", NULL, &w), MDNL_ERR_INPUT);
    cr_expect_null(w);
    cr_expect(strstr(mdnl_last_error(), "/nonexistent-dir/x.h5md"), "%s", mdnl_last_error());
}

/* --- results writer ------------------------------------------------------- */

static void read_back(hid_t fid, const char *name, hid_t memtype, void *buf, hsize_t expect_n)
{
    hid_t ds = H5Dopen2(fid, name, H5P_DEFAULT);
    cr_assert_geq(ds, 0, "%s exists", name);
    hid_t sp = H5Dget_space(ds);
    hsize_t n = (hsize_t)H5Sget_simple_extent_npoints(sp);
    cr_assert_eq(n, expect_n, "%s has %llu elements, expected %llu", name, (unsigned long long)n,
                 (unsigned long long)expect_n);
    if (n)
        cr_assert_geq(H5Dread(ds, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), 0);
    H5Sclose(sp);
    H5Dclose(ds);
}

Test(h5md_results, layout_reads_back_with_the_c_api)
{
    char *dir = tmpdir();
    char path[128];
    snprintf(path, sizeof path, "%s/res.h5", dir);
    mdnl_h5md_results *w = NULL;
    cr_assert_eq(mdnl_h5md_results_create(path, &w), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_h5md_results_write_energy(w, 100, 0.5, -12.25), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_h5md_results_write_energy(w, 200, 1.0, -13.5), MDNL_OK);
    double e0[3] = {-1, -2, -3}, e1[3] = {-4, -5, -6};
    cr_assert_eq(mdnl_h5md_results_write_per_atom_energy(w, 100, 0.5, 3, e0), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_h5md_results_write_per_atom_energy(w, 200, 1.0, 3, e1), MDNL_OK);
    cr_expect_eq(mdnl_h5md_results_write_per_atom_energy(w, 300, 1.5, 4, e1), MDNL_ERR_INPUT);
    cr_assert_eq(mdnl_h5md_results_set_neighbors_info(w, "half", 2.5), MDNL_OK, "%s", mdnl_last_error());
    /* frame 3: 3 atoms, pairs 0-1, 0-2, 1-2; frame 7: 2 atoms, no pairs. */
    int64_t off_a[4] = {0, 2, 3, 3};
    int32_t j_a[3] = {1, 2, 2};
    float d_a[3] = {1.0f, 1.5f, 2.0f};
    int64_t off_b[3] = {0, 0, 0};
    cr_assert_eq(mdnl_h5md_results_write_neighbors(w, 3, 3, off_a, j_a, d_a, 3), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_h5md_results_write_neighbors(w, 7, 2, off_b, NULL, NULL, 0), MDNL_OK, "%s",
                 mdnl_last_error());
    cr_expect_eq(mdnl_h5md_results_write_neighbors(w, 8, 3, off_a, j_a, d_a, 2), MDNL_ERR_INTERNAL);
    double lo[2] = {0, 1}, hi[2] = {1, 2}, r[2] = {0.5, 1.5}, g[2] = {0, 1.25}, nn[2] = {0, 3};
    uint64_t counts[2] = {0, 42};
    cr_assert_eq(mdnl_h5md_results_write_rdf(w, "total", 2, lo, hi, r, g, nn, counts), MDNL_OK, "%s",
                 mdnl_last_error());
    cr_assert_eq(mdnl_h5md_results_write_rdf(w, "C-H", 2, lo, hi, r, NULL, nn, counts), MDNL_OK);
    cr_expect_eq(mdnl_h5md_results_write_rdf(w, "C-H", 2, lo, hi, r, NULL, nn, counts), MDNL_ERR_INTERNAL);
    cr_expect_eq(count_entries(dir), 1);
    cr_expect(access(path, F_OK) != 0, "nothing at the final name before commit");
    cr_assert_eq(mdnl_h5md_results_commit(w), MDNL_OK, "%s", mdnl_last_error());
    cr_expect_eq(access(path, F_OK), 0);

    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(fid, 0);
    int64_t i64[8];
    double f64[8];
    read_back(fid, "/observables/potential_energy/step", H5T_NATIVE_INT64, i64, 2);
    cr_expect(i64[0] == 100 && i64[1] == 200);
    read_back(fid, "/observables/potential_energy/time", H5T_NATIVE_DOUBLE, f64, 2);
    cr_expect(f64[0] == 0.5 && f64[1] == 1.0);
    read_back(fid, "/observables/potential_energy/value", H5T_NATIVE_DOUBLE, f64, 2);
    cr_expect(f64[0] == -12.25 && f64[1] == -13.5);
    read_back(fid, "/particles/all/potential_energy/value", H5T_NATIVE_DOUBLE, f64, 6);
    cr_expect(f64[0] == -1 && f64[5] == -6, "rows are frames");
    read_back(fid, "/particles/all/potential_energy/step", H5T_NATIVE_INT64, i64, 2);
    cr_expect_eq(i64[1], 200);
    read_back(fid, "/neighbors/frame", H5T_NATIVE_INT64, i64, 2);
    cr_expect(i64[0] == 3 && i64[1] == 7);
    read_back(fid, "/neighbors/natoms", H5T_NATIVE_INT64, i64, 2);
    cr_expect(i64[0] == 3 && i64[1] == 2);
    read_back(fid, "/neighbors/npairs", H5T_NATIVE_INT64, i64, 2);
    cr_expect(i64[0] == 3 && i64[1] == 0);
    read_back(fid, "/neighbors/row_start", H5T_NATIVE_INT64, i64, 3);
    cr_expect(i64[0] == 0 && i64[1] == 4 && i64[2] == 7, "row_start %lld %lld %lld", (long long)i64[0],
              (long long)i64[1], (long long)i64[2]);
    read_back(fid, "/neighbors/pair_start", H5T_NATIVE_INT64, i64, 3);
    cr_expect(i64[0] == 0 && i64[1] == 3 && i64[2] == 3);
    read_back(fid, "/neighbors/offsets", H5T_NATIVE_INT64, i64, 7);
    cr_expect(i64[1] == 2 && i64[3] == 3 && i64[4] == 0 && i64[6] == 0);
    int32_t j[3];
    read_back(fid, "/neighbors/j", H5T_NATIVE_INT32, j, 3);
    cr_expect(j[0] == 1 && j[1] == 2 && j[2] == 2);
    float d[3];
    read_back(fid, "/neighbors/distance", H5T_NATIVE_FLOAT, d, 3);
    cr_expect(d[0] == 1.0f && d[2] == 2.0f);
    read_back(fid, "/rdf/total/g", H5T_NATIVE_DOUBLE, f64, 2);
    cr_expect_eq(f64[1], 1.25);
    uint64_t u[2];
    read_back(fid, "/rdf/C-H/counts", H5T_NATIVE_UINT64, u, 2);
    cr_expect_eq(u[1], 42);
    read_back(fid, "/rdf/C-H/r_hi", H5T_NATIVE_DOUBLE, f64, 2);
    cr_expect_eq(f64[1], 2.0);
    cr_expect_eq(H5Lexists(fid, "/rdf/C-H/g", H5P_DEFAULT), 0, "g omitted when not given");
    int32_t ver[2];
    hid_t a = H5Aopen_by_name(fid, "/h5md", "version", H5P_DEFAULT, H5P_DEFAULT);
    cr_assert_geq(a, 0);
    cr_assert_geq(H5Aread(a, H5T_NATIVE_INT32, ver), 0);
    cr_expect(ver[0] == 1 && ver[1] == 1);
    H5Aclose(a);
    cr_expect_gt(H5Aexists_by_name(fid, "/h5md/creator", "version", H5P_DEFAULT), 0);
    cr_expect_gt(H5Aexists_by_name(fid, "/neighbors", "cutoff", H5P_DEFAULT), 0);
    H5Fclose(fid);
    unlink(path);
    rmdir(dir);
}

Test(h5md_results, abort_leaves_no_file)
{
    char *dir = tmpdir();
    char path[128];
    snprintf(path, sizeof path, "%s/res.h5", dir);
    mdnl_h5md_results *w = NULL;
    cr_assert_eq(mdnl_h5md_results_create(path, &w), MDNL_OK);
    cr_assert_eq(mdnl_h5md_results_write_energy(w, 1, 0.0, 1.0), MDNL_OK);
    mdnl_h5md_results_abort(w);
    cr_expect_eq(count_entries(dir), 0);
    rmdir(dir);
}

/* --- MDAnalysis ------------------------------------------------------------ */

Test(h5md_mdanalysis, h5mdreader_reads_our_trajectory)
{
    if (system("/usr/bin/python3 -c 'import MDAnalysis' >/dev/null 2>&1") != 0)
        cr_skip_test("/usr/bin/python3 cannot import MDAnalysis");
    char *dir = tmpdir();
    char path[128], cmd[4096];
    snprintf(path, sizeof path, "%s/mda.h5md", dir);
    write_traj(path, 3, 6, true, true);
    /* The script recomputes make_frame()'s numbers and compares MDAnalysis'
     * positions (float32), box lengths/angles, time and step. */
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -W ignore -c '\n"
             "import sys, numpy as np, MDAnalysis as mda\n"
             "u = mda.Universe.empty(6, trajectory=True)\n"
             "u.load_new(sys.argv[1], format=\"H5MD\", convert_units=False)\n"
             "assert len(u.trajectory) == 3, len(u.trajectory)\n"
             "for k, ts in enumerate(u.trajectory):\n"
             "    i = np.arange(6)\n"
             "    want = np.stack([0.1*i + 0.01*k + 1/3, 0.2*i, 0.3*i + k], axis=1)\n"
             "    assert np.allclose(ts.positions, want, rtol=1e-6, atol=1e-6), (k, ts.positions, want)\n"
             "    H = np.array([[10 + 0.5*k, 0, 0], [1/7, 11, 0], [0.5, -0.25, 12]])\n"
             "    L = np.linalg.norm(H, axis=1)\n"
             "    ang = lambda a, b: np.degrees(np.arccos(H[a] @ H[b] / (L[a] * L[b])))\n"
             "    want_dim = [*L, ang(1, 2), ang(0, 2), ang(0, 1)]\n"
             "    assert np.allclose(ts.dimensions, want_dim, rtol=1e-5), (k, ts.dimensions, want_dim)\n"
             "    assert abs(ts.time - 0.1*k) < 1e-12, ts.time\n"
             "    assert ts.data[\"step\"] == 1000 + 10*k, ts.data[\"step\"]\n"
             "print(\"ok\")\n"
             "' %s 2>&1",
             path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    char out[4096] = "";
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int rc = pclose(p);
    cr_expect_eq(rc, 0, "MDAnalysis check failed:\n%s", out);
    cr_expect(strstr(out, "ok"), "%s", out);
    unlink(path);
    rmdir(dir);
}

/* ---- links that leave the file (issue 54) ---- */

/* tmp/NAME: a copy of fixture `from` whose /particles/all/position link is
 * replaced by what `relink` makes there. */
static void copy_fixture(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    cr_assert(in && out);
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        cr_assert_eq(fwrite(buf, 1, n, out), n);
    fclose(in);
    cr_assert_eq(fclose(out), 0);
}

/* An external link to a FIFO: open() of a FIFO blocks until a writer comes,
 * so following the link hung mdnl for ever. The file is refused before any
 * link is followed (the test's timeout catches a hang). */
Test(h5md_bad, external_link_to_a_fifo_is_refused_without_blocking, .timeout = 20)
{
    char *dir = tmpdir();
    char path[128], fifo[128];
    snprintf(path, sizeof path, "%s/evil.h5", dir);
    snprintf(fifo, sizeof fifo, "%s/pipe.h5", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    copy_fixture(FIX("box_fixed3.h5md"), path);
    hid_t fid = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    cr_assert(fid >= 0);
    cr_assert(H5Ldelete(fid, "/particles/all/position", H5P_DEFAULT) >= 0);
    cr_assert(H5Lcreate_external(fifo, "/particles/all/position", fid, "/particles/all/position", H5P_DEFAULT,
                                 H5P_DEFAULT) >= 0);
    H5Fclose(fid);
    mdnl_h5md_reader *r = NULL;
    cr_assert_eq(mdnl_h5md_open(path, NULL, &r), MDNL_ERR_INPUT);
    const char *m = mdnl_last_error();
    cr_expect(strncmp(m, path, strlen(path)) == 0, "%s", m);
    cr_expect(strstr(m, "/particles/all/position: expected objects inside this file, found an external link to"), "%s",
              m);
    cr_expect(strstr(m, fifo), "names the target: %s", m);
    /* the group listing (--group's error path) refuses it too */
    char groups[256];
    cr_expect_eq(mdnl_h5md_list_groups(path, groups, sizeof groups), MDNL_ERR_INPUT);
}

/* A soft link resolves by path inside the file: still read (H5MD writers
 * share step/time datasets that way). */
Test(h5md, soft_link_inside_the_file_is_followed)
{
    char *dir = tmpdir();
    char path[128];
    snprintf(path, sizeof path, "%s/soft.h5", dir);
    copy_fixture(FIX("box_fixed3.h5md"), path);
    hid_t fid = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    cr_assert(fid >= 0);
    cr_assert(H5Lmove(fid, "/particles/all/position", fid, "/particles/all/position_data", H5P_DEFAULT,
                      H5P_DEFAULT) >= 0);
    cr_assert(H5Lcreate_soft("/particles/all/position_data", fid, "/particles/all/position", H5P_DEFAULT,
                             H5P_DEFAULT) >= 0);
    H5Fclose(fid);
    mdnl_h5md_reader *r = NULL;
    cr_assert_eq(mdnl_h5md_open(path, NULL, &r), MDNL_OK, "%s", mdnl_last_error());
    mdnl_frame f = {0};
    int frames = 0;
    while (mdnl_h5md_next(r, &f) == MDNL_OK)
        ++frames;
    cr_expect_eq(frames, 3);
    cr_expect_eq(f.pos[3][0], 9.5 + 2 * 0.25);
    mdnl_frame_free(&f);
    mdnl_h5md_close(r);
}

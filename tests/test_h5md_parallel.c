/* test_h5md_parallel.c — H5MD positions read from the file's bytes by
 * worker threads (io/h5md_reader.c's direct path, io/h5_raw.c, the pool of
 * io/chunk_pool.c), on the par_* fixtures of data/h5md/
 * (tools/make_h5md_fixtures.py): seven frames of 40 atoms stored chunked,
 * contiguous, shuffled + deflated with a partial last chunk, as float32
 * under deflate + fletcher32 in chunks split across atoms and axes, and
 * big-endian (which the direct path leaves to H5Dread: the oracle). Every
 * thread count must give the same frames bit for bit, and the same error
 * at the same frame for the bad_par_* files; through the binary, the same
 * output bytes. */
#define _POSIX_C_SOURCE 200809L
#include "h5md_reader.h"
#include "h5md_writer.h"

#include <hdf5.h>

#include "cli_test_util.h"

#include <criterion/parameterized.h>
#include <math.h>

#define FIX(name) MDNL_DATA_DIR "/h5md/" name
enum { NF = 7, NA = 40 };

static const int thread_counts[] = {1, 2, 3, 8};
#define NTHREADS (int)(sizeof thread_counts / sizeof *thread_counts)

static mdnl_h5md_reader *open_threads(const char *path, int threads)
{
    mdnl_h5md_reader *r = NULL;
    mdnl_status st = mdnl_h5md_open(path, NULL, &r);
    cr_assert_eq(st, MDNL_OK, "opening %s: %s", path, mdnl_last_error());
    mdnl_h5md_set_threads(r, threads, 0);
    return r;
}

/* The oracle: every frame of the big-endian copy, decoded by HDF5. */
static double ref_pos[NF][NA][3];
static int64_t ref_step[NF];
static double ref_time[NF];

static void load_reference(void)
{
    mdnl_h5md_reader *r = open_threads(FIX("par_bigendian.h5md"), 1);
    mdnl_frame f = {0};
    for (int k = 0; k < NF; ++k) {
        cr_assert_eq(mdnl_h5md_next(r, &f), MDNL_OK, "%s", mdnl_last_error());
        cr_assert_eq(f.natoms, NA);
        memcpy(ref_pos[k], f.pos, sizeof ref_pos[k]);
        ref_step[k] = f.step;
        ref_time[k] = f.time;
    }
    cr_assert_eq(mdnl_h5md_next(r, &f), MDNL_END);
    mdnl_frame_free(&f);
    mdnl_h5md_close(r);
}

/* Frame k as read equals the reference (rounded to float when f32). */
static void expect_frame(const char *file, int threads, const mdnl_frame *f, int k, bool f32)
{
    cr_assert_eq(f->natoms, NA, "%s, %d threads, frame %d", file, threads, k);
    cr_expect_eq(f->index, k, "%s, %d threads", file, threads);
    cr_expect_eq(f->step, ref_step[k], "%s, %d threads, frame %d", file, threads, k);
    cr_expect_eq(f->time, ref_time[k], "%s, %d threads, frame %d", file, threads, k);
    cr_expect(f->box.has_lattice && f->box.h[1][1] == 21.0, "%s: frame %d's box", file, k);
    for (int i = 0; i < NA; ++i)
        for (int a = 0; a < 3; ++a) {
            double want = f32 ? (double)(float)ref_pos[k][i][a] : ref_pos[k][i][a];
            if (memcmp(&f->pos[i][a], &want, sizeof want) != 0)
                cr_assert_fail("%s, %d threads, frame %d, atom %d, axis %d: %.17g, expected %.17g", file, threads, k,
                               i, a, f->pos[i][a], want);
        }
}

Test(h5md_parallel, every_layout_reads_the_reference_frames_for_any_thread_count)
{
    load_reference();
    const struct {
        const char *file;
        bool f32;
    } files[] = {{"par_chunked.h5md", false},
                 {"par_contiguous.h5md", false},
                 {"par_deflate.h5md", false},
                 {"par_fletcher_f32.h5md", true},
                 {"par_bigendian.h5md", false}};
    for (size_t i = 0; i < sizeof files / sizeof *files; ++i)
        for (int t = 0; t < NTHREADS; ++t) {
            char path[512];
            snprintf(path, sizeof path, "%s/h5md/%s", MDNL_DATA_DIR, files[i].file);
            mdnl_h5md_reader *r = open_threads(path, thread_counts[t]);
            mdnl_frame f = {0};
            for (int k = 0; k < NF; ++k) {
                cr_assert_eq(mdnl_h5md_next(r, &f), MDNL_OK, "%s: %s", files[i].file, mdnl_last_error());
                expect_frame(files[i].file, thread_counts[t], &f, k, files[i].f32);
            }
            cr_expect_eq(mdnl_h5md_next(r, &f), MDNL_END, "%s: more than %d frames", files[i].file, NF);
            mdnl_frame_free(&f);
            mdnl_h5md_close(r);
        }
}

/* Seeks forward, back, by strides and skips: each frame asked for is the
 * frame read, however far the window had run ahead. */
Test(h5md_parallel, seeks_strides_and_skips_give_the_frames_asked_for)
{
    load_reference();
    const char *files[] = {"par_deflate.h5md", "par_chunked.h5md", "par_contiguous.h5md"};
    const int order[] = {6, 0, 2, 4, 6, 1, 5, 3, 3, 0, 1, 2};
    for (size_t i = 0; i < sizeof files / sizeof *files; ++i)
        for (int t = 0; t < NTHREADS; ++t) {
            char path[512];
            snprintf(path, sizeof path, "%s/h5md/%s", MDNL_DATA_DIR, files[i]);
            mdnl_h5md_reader *r = open_threads(path, thread_counts[t]);
            mdnl_frame f = {0};
            for (size_t s = 0; s < sizeof order / sizeof *order; ++s) {
                cr_assert_eq(mdnl_h5md_seek(r, order[s]), MDNL_OK);
                cr_assert_eq(mdnl_h5md_next(r, &f), MDNL_OK, "%s: %s", files[i], mdnl_last_error());
                expect_frame(files[i], thread_counts[t], &f, order[s], false);
            }
            /* skip 1, read 1, from the start: frames 1, 3, 5 */
            cr_assert_eq(mdnl_h5md_seek(r, 0), MDNL_OK);
            for (int k = 1; k < NF; k += 2) {
                cr_assert_eq(mdnl_h5md_skip(r), MDNL_OK);
                cr_assert_eq(mdnl_h5md_next(r, &f), MDNL_OK, "%s: %s", files[i], mdnl_last_error());
                expect_frame(files[i], thread_counts[t], &f, k, false);
            }
            mdnl_frame_free(&f);
            mdnl_h5md_close(r);
        }
}

/* Arrays, not pointers: Criterion copies the parameters into a test process
 * of its own, where the parent's string addresses mean nothing. */
typedef struct bad_case {
    char file[40];
    int frame;
    char what[80];
} bad_case;

ParameterizedTestParameters(h5md_parallel_bad, first_bad_frame_in_order)
{
    static bad_case cases[] = {
        {"bad_par_deflate_frame0.h5md", 0, "corrupt deflate data (zlib: stream cut short)"},
        {"bad_par_deflate_frame3.h5md", 3, "corrupt deflate data (zlib: incorrect header check)"},
        {"bad_par_nan_frame4.h5md", 4, "expected finite coordinates, found nan for atom 33 (z)"},
        {"bad_par_fletcher_frame5.h5md", 5, "data error detected by the Fletcher-32 checksum"},
        {"bad_par_deflate_frame6.h5md", 6, "expected a deflate stream of 960 bytes, found one of 952 bytes"},
    };
    return cr_make_param_array(bad_case, cases, sizeof cases / sizeof *cases);
}

/* Workers decode frames past the bad one; the error still comes at the bad
 * frame, after every good frame before it, with the same message. */
ParameterizedTest(bad_case *c, h5md_parallel_bad, first_bad_frame_in_order)
{
    char path[512], first[700] = "";
    snprintf(path, sizeof path, "%s/h5md/%s", MDNL_DATA_DIR, c->file);
    for (int t = 0; t < NTHREADS; ++t) {
        mdnl_h5md_reader *r = open_threads(path, thread_counts[t]);
        mdnl_frame f = {0};
        for (int k = 0; k < c->frame; ++k)
            cr_assert_eq(mdnl_h5md_next(r, &f), MDNL_OK, "%s, %d threads, frame %d: %s", c->file, thread_counts[t], k,
                         mdnl_last_error());
        cr_assert_eq(mdnl_h5md_next(r, &f), MDNL_ERR_INPUT, "%s, %d threads", c->file, thread_counts[t]);
        const char *m = mdnl_last_error();
        char where[128];
        snprintf(where, sizeof where, ": frame %d, /particles/all/position/value: ", c->frame);
        cr_expect(strncmp(m, path, strlen(path)) == 0, "starts with the file: %s", m);
        cr_expect(strstr(m, where), "lacks \"%s\": %s", where, m);
        cr_expect(strstr(m, c->what), "lacks \"%s\": %s", c->what, m);
        if (t == 0)
            snprintf(first, sizeof first, "%s", m);
        else
            cr_expect_str_eq(m, first, "%d threads", thread_counts[t]);
        mdnl_frame_free(&f);
        mdnl_h5md_close(r);
    }
}

/* --- through the binary -------------------------------------------------- */

TestSuite(h5md_parallel_cli, .init = make_tmpdir, .fini = remove_tmpdir);

/* Frames of over a MiB of doubles, stored whole (a chunk a frame, as mdnl
 * convert writes them, or contiguous) are read straight into the caller's
 * frame in pieces by the workers: every thread count reads HDF5's own
 * decoding of the file bit for bit, and a non-finite coordinate in the last
 * piece of frame 2 is the same error at the same atom. */
enum { BIG_NF = 4, BIG_NA = 50000 };

/* The file written by the H5MD writer (chunked), or its copy with the
 * positions rewritten contiguous; frame 2's last atom's x is NaN. */
static void write_big(const char *path, bool contiguous)
{
    mdnl_h5md_traj *w = NULL;
    cr_assert_eq(mdnl_h5md_traj_create(path, NULL, &w), MDNL_OK, "%s", mdnl_last_error());
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, BIG_NA), MDNL_OK);
    f.natoms = BIG_NA;
    cr_assert_geq(mdnl_frame_species_id(&f, "Ar", 2), 0);
    memset(f.species, 0, sizeof *f.species * BIG_NA);
    f.box.has_lattice = true;
    for (int a = 0; a < 3; ++a)
        f.box.h[a][a] = 40.0, f.box.pbc[a] = true;
    for (int k = 0; k < BIG_NF; ++k) {
        f.index = k, f.step = 10 * k, f.has_step = true;
        for (int i = 0; i < BIG_NA; ++i)
            for (int a = 0; a < 3; ++a)
                f.pos[i][a] = 40.0 * (double)((i * 7919 + a * 104729 + k * 13) % 100003) / 100003.0;
        if (k == 2)
            f.pos[BIG_NA - 1][0] = NAN;
        cr_assert_eq(mdnl_h5md_traj_append(w, &f), MDNL_OK, "%s", mdnl_last_error());
    }
    cr_assert_eq(mdnl_h5md_traj_commit(w), MDNL_OK, "%s", mdnl_last_error());
    mdnl_frame_free(&f);
    if (!contiguous)
        return;
    hid_t file = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    cr_assert_geq(file, 0);
    const char *name = "/particles/all/position/value";
    hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
    double *buf = malloc(sizeof(double) * BIG_NF * BIG_NA * 3);
    cr_assert_not_null(buf);
    cr_assert_geq(H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), 0);
    H5Dclose(ds);
    cr_assert_geq(H5Ldelete(file, name, H5P_DEFAULT), 0);
    hsize_t dims[3] = {BIG_NF, BIG_NA, 3};
    hid_t sp = H5Screate_simple(3, dims, NULL);
    ds = H5Dcreate2(file, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    cr_assert_geq(ds, 0);
    cr_assert_geq(H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), 0);
    hid_t dcpl = H5Dget_create_plist(ds);
    cr_assert_eq(H5Pget_layout(dcpl), H5D_CONTIGUOUS);
    H5Pclose(dcpl);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Fclose(file);
    free(buf);
}

Test(h5md_parallel_cli, whole_frames_over_a_mib_read_into_the_frame_for_any_thread_count)
{
    for (int layout = 0; layout < 2; ++layout) {
        char path[512];
        snprintf(path, sizeof path, "%s/big_%d.h5md", tmpdir, layout);
        write_big(path, layout == 1);
        /* the oracle: HDF5's decoding */
        double *ref = malloc(sizeof(double) * BIG_NF * BIG_NA * 3);
        cr_assert_not_null(ref);
        hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        hid_t ds = H5Dopen2(file, "/particles/all/position/value", H5P_DEFAULT);
        cr_assert_geq(H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, ref), 0);
        H5Dclose(ds);
        H5Fclose(file);
        static char first[1024];
        for (int t = 0; t < NTHREADS; ++t) {
            mdnl_h5md_reader *r = open_threads(path, thread_counts[t]);
            mdnl_frame f = {0};
            for (int k = 0; k < 2; ++k) {
                cr_assert_eq(mdnl_h5md_next(r, &f), MDNL_OK, "layout %d, %d threads: %s", layout, thread_counts[t],
                             mdnl_last_error());
                cr_expect_eq(f.step, 10 * k);
                cr_expect(memcmp(f.pos, ref + (size_t)k * BIG_NA * 3, sizeof(double) * BIG_NA * 3) == 0,
                          "layout %d, %d threads: frame %d differs from HDF5's", layout, thread_counts[t], k);
            }
            cr_assert_eq(mdnl_h5md_next(r, &f), MDNL_ERR_INPUT, "layout %d, %d threads", layout, thread_counts[t]);
            cr_expect(strstr(mdnl_last_error(), "frame 2") && strstr(mdnl_last_error(), "atom 49999 (x)"),
                      "layout %d, %d threads: %s", layout, thread_counts[t], mdnl_last_error());
            if (t == 0)
                snprintf(first, sizeof first, "%s", mdnl_last_error());
            else
                cr_expect_str_eq(mdnl_last_error(), first, "layout %d, %d threads", layout, thread_counts[t]);
            /* the next frame after a seek past the bad one */
            cr_assert_eq(mdnl_h5md_seek(r, 3), MDNL_OK);
            cr_assert_eq(mdnl_h5md_next(r, &f), MDNL_OK, "%s", mdnl_last_error());
            cr_expect(memcmp(f.pos, ref + (size_t)3 * BIG_NA * 3, sizeof(double) * BIG_NA * 3) == 0,
                      "layout %d, %d threads: frame 3 differs from HDF5's", layout, thread_counts[t]);
            mdnl_frame_free(&f);
            mdnl_h5md_close(r);
        }
        free(ref);
    }
}

/* mdnl convert with --threads 1 and 4 writes the same bytes, to XYZ and to
 * H5MD (the H5MD output read back is the XYZ again). */
Test(h5md_parallel_cli, convert_output_is_the_same_bytes_for_any_thread_count)
{
    /* the oracle: HDF5's own decoding of the same doubles (big-endian) */
    cr_assert_eq(mdnl("convert %s/h5md/par_bigendian.h5md ref.extxyz --threads 1 --quiet", MDNL_DATA_DIR), 0, "%s",
                 err_text);
    const char *files[] = {"par_deflate.h5md", "par_contiguous.h5md", "par_fletcher_f32.h5md"};
    for (size_t i = 0; i < sizeof files / sizeof *files; ++i) {
        for (int t = 1; t <= 4; t += 3) {
            cr_assert_eq(mdnl("convert %s/h5md/%s t%d.extxyz --threads %d --quiet", MDNL_DATA_DIR, files[i], t, t), 0,
                         "%s: %s", files[i], err_text);
            cr_assert_eq(mdnl("convert %s/h5md/%s t%d.h5 --threads %d --quiet", MDNL_DATA_DIR, files[i], t, t), 0,
                         "%s: %s", files[i], err_text);
            cr_assert_eq(mdnl("convert t%d.h5 back%d.extxyz --threads %d --quiet", t, t, t), 0, "%s", err_text);
        }
        cr_expect_eq(sh("cmp t1.extxyz t4.extxyz"), 0, "%s: %s", files[i], out_text);
        cr_expect_eq(sh("cmp t1.extxyz back4.extxyz"), 0, "%s: %s", files[i], out_text);
        cr_expect_eq(sh("cmp back1.extxyz back4.extxyz"), 0, "%s: %s", files[i], out_text);
        cr_expect_eq(sh("test $(grep -c Lattice t4.extxyz) -eq %d", NF), 0, "%s: 7 frames", files[i]);
        /* the same doubles give the oracle's text; float32 ones do not */
        cr_expect_eq(sh("cmp -s ref.extxyz t4.extxyz"), strstr(files[i], "f32") ? 1 : 0, "%s", files[i]);
    }
    cr_assert_eq(mdnl("convert %s/h5md/par_chunked.h5md c.extxyz --threads 3 --frames 1::2 --quiet", MDNL_DATA_DIR),
                 0, "%s", err_text);
    cr_assert_eq(mdnl("convert ref.extxyz r.extxyz --frames 1::2 --quiet"), 0, "%s", err_text);
    cr_expect_eq(sh("cmp c.extxyz r.extxyz"), 0, "--frames 1::2: %s", out_text);
}

/* A broken chunk: exit 3, one line naming the frame and the dataset, the
 * same for every thread count, and no output file. */
Test(h5md_parallel_cli, broken_chunk_is_one_error_line_and_no_output)
{
    static char first[sizeof err_text];
    for (int t = 1; t <= 8; t *= 2) {
        cr_expect_eq(mdnl("convert %s/h5md/bad_par_deflate_frame3.h5md out.xyz --threads %d", MDNL_DATA_DIR, t), 3,
                     "%d threads: %s", t, err_text);
        expect_one_error_line();
        cr_expect(strstr(err_text, "frame 3, /particles/all/position/value: cannot read the positions"), "%s",
                  err_text);
        cr_expect_eq(dir_entries(), 0, "no output left behind");
        if (t == 1)
            memcpy(first, err_text, sizeof first);
        else
            cr_expect_str_eq(err_text, first, "%d threads", t);
    }
}

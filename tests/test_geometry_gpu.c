/* test_geometry_gpu.c — the device wrap (geometry_cuda.h) against its host
 * twin mdnl_geom_prepare: the same float positions and the same grid, bit
 * for bit, on every kind of box, across the kernel's grid-stride and block
 * boundaries, for an empty frame and a non-finite coordinate. Skips with a
 * reason when no device is present; CUDA is touched only inside test bodies
 * (Criterion forks per test). */
#define _POSIX_C_SOURCE 200809L
#include "device.h"
#include "geometry.h"
#ifdef MDNL_HAVE_CUDA
#include "geometry_cuda.h"
#endif

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef MDNL_HAVE_CUDA

Test(geometry_gpu, skipped_without_cuda) { cr_skip_test("built without CUDA (MDNL_CUDA=OFF or no nvcc)"); }

#else

static int need_device(void)
{
    if (mdnl_cuda_device_count() == 0) {
        cr_skip_test("no CUDA device present");
        return 0;
    }
    return 1;
}

/* Boxes: 0 none (open), 1 orthorhombic periodic in x and y, 2 triclinic
 * periodic in all three, 3 a lattice with no periodic axis, 4 a cubic box
 * smaller than the cutoff. */
static void set_box(mdnl_frame *f, int box)
{
    f->box = (mdnl_box){0};
    if (box == 0)
        return;
    f->box.has_lattice = true;
    f->box.h[0][0] = 12, f->box.h[1][1] = 9, f->box.h[2][2] = 15;
    if (box == 2)
        f->box.h[1][0] = 3, f->box.h[2][0] = -2, f->box.h[2][1] = 1.5;
    if (box == 4)
        f->box.h[0][0] = f->box.h[1][1] = f->box.h[2][2] = 1.7;
    f->box.pbc[0] = f->box.pbc[1] = box != 3;
    f->box.pbc[2] = box == 2 || box == 4;
}

static void random_frame(mdnl_frame *f, int64_t n, unsigned seed)
{
    cr_assert_eq(mdnl_frame_reserve(f, n), MDNL_OK);
    f->natoms = n;
    srand(seed);
    for (int64_t i = 0; i < n; ++i) {
        for (int a = 0; a < 3; ++a)
            f->pos[i][a] = 60.0 * rand() / RAND_MAX - 25.0;
        f->species[i] = 0;
    }
}

/* tlo/thi are compared by value (a min over +0 and -0 may keep either);
 * everything else byte for byte. */
static void expect_same_geom(const mdnl_geom *want, const mdnl_geom *got, const char *what)
{
    for (int k = 0; k < 3; ++k)
        cr_expect(want->tlo[k] == got->tlo[k] && want->thi[k] == got->thi[k],
                  "%s: t-range %d: host [%.17g, %.17g], device [%.17g, %.17g]", what, k, want->tlo[k], want->thi[k],
                  got->tlo[k], got->thi[k]);
    mdnl_geom a = *want, b = *got;
    memset(a.tlo, 0, sizeof a.tlo), memset(a.thi, 0, sizeof a.thi);
    memset(b.tlo, 0, sizeof b.tlo), memset(b.thi, 0, sizeof b.thi);
    cr_expect(memcmp(&a, &b, sizeof a) == 0, "%s: grids differ (ncell host %d %d %d, device %d %d %d)", what,
              want->ncell[0], want->ncell[1], want->ncell[2], got->ncell[0], got->ncell[1], got->ncell[2]);
}

static void check_frame(mdnl_wrap_cuda *w, const mdnl_frame *f, double cutoff, const char *what)
{
    const int64_t n = f->natoms;
    float(*want)[4] = calloc((size_t)(n > 0 ? n : 1), sizeof *want);
    float(*got)[4] = calloc((size_t)(n > 0 ? n : 1), sizeof *got);
    mdnl_geom gh, gd;
    cr_assert_eq(mdnl_geom_prepare(f, cutoff, &gh, want), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_geom_prepare_cuda(w, f, cutoff, &gd, NULL, 0), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_wrap_cuda_download(w, got), MDNL_OK, "%s", mdnl_last_error());
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; ++i)
        if (memcmp(want[i], got[i], sizeof want[i]) != 0)
            bad = i;
    cr_expect_eq(bad, -1, "%s: atom %lld: host %.9g %.9g %.9g, device %.9g %.9g %.9g", what, (long long)bad,
                 bad >= 0 ? want[bad][0] : 0, bad >= 0 ? want[bad][1] : 0, bad >= 0 ? want[bad][2] : 0,
                 bad >= 0 ? got[bad][0] : 0, bad >= 0 ? got[bad][1] : 0, bad >= 0 ? got[bad][2] : 0);
    expect_same_geom(&gh, &gd, what);
    free(want);
    free(got);
}

Test(geometry_gpu, device_wrap_equals_host_prepare_on_every_box)
{
    if (!need_device())
        return;
    /* box 4: thousands of atoms in a 1.7 Å cube, beyond the work guard's
     * default (geometry.h); these grids are compared, never traversed */
    mdnl_work_set_limit(1e15);
    mdnl_wrap_cuda *w = NULL;
    cr_assert_eq(mdnl_wrap_cuda_create(&w), MDNL_OK, "%s", mdnl_last_error());
    mdnl_frame f = {0};
    const double cutoffs[] = {0.9, 2.5, 4.0};
    random_frame(&f, 5000, 3);
    for (int box = 0; box < 5; ++box)
        for (size_t c = 0; c < sizeof cutoffs / sizeof *cutoffs; ++c) {
            set_box(&f, box);
            char what[64];
            snprintf(what, sizeof what, "box %d, cutoff %g", box, cutoffs[c]);
            check_frame(w, &f, cutoffs[c], what);
        }
    mdnl_frame_free(&f);
    mdnl_wrap_cuda_free(w);
}

/* More atoms than the kernel's grid has threads (1024 blocks x 256), then
 * fewer again (the buffers are reused), then none. */
Test(geometry_gpu, grid_stride_reuse_and_empty_frame)
{
    /* 300,001 atoms in a small cell are dense beyond the work guard; the grids
     * are only compared here, never traversed */
    mdnl_work_set_limit(1e300);
    if (!need_device())
        return;
    mdnl_wrap_cuda *w = NULL;
    cr_assert_eq(mdnl_wrap_cuda_create(&w), MDNL_OK, "%s", mdnl_last_error());
    mdnl_frame f = {0};
    random_frame(&f, 300001, 5);
    set_box(&f, 2);
    check_frame(w, &f, 2.5, "300001 atoms, triclinic");
    set_box(&f, 0);
    check_frame(w, &f, 2.5, "300001 atoms, open");
    f.natoms = 257;
    set_box(&f, 1);
    check_frame(w, &f, 2.5, "257 atoms");
    f.natoms = 0;
    check_frame(w, &f, 2.5, "no atoms");
    mdnl_frame_free(&f);
    mdnl_wrap_cuda_free(w);
}

/* Four frames queued on four tickets before any result is read (what
 * `mdnl run` does): each ticket's t-range settles its own early grid to the
 * host's, and the positions are the last frame's. */
Test(geometry_gpu, queued_tickets_settle_to_the_host_grids)
{
    if (!need_device())
        return;
    /* box 4: thousands of atoms in a 1.7 Å cube, beyond the work guard's
     * default (geometry.h); these grids are compared, never traversed */
    mdnl_work_set_limit(1e15);
    mdnl_wrap_cuda *w = NULL;
    cr_assert_eq(mdnl_wrap_cuda_create(&w), MDNL_OK, "%s", mdnl_last_error());
    enum { T = MDNL_CUDA_TICKETS };
    mdnl_frame f[T];
    mdnl_geom want[T], got[T];
    double bound[T];
    const int boxes[T] = {2, 4, 1, 2};
    float(*p)[4] = NULL, (*d)[4] = NULL;
    for (int t = 0; t < T; ++t) {
        memset(&f[t], 0, sizeof f[t]);
        random_frame(&f[t], 20000 + 1000 * t, 20 + (unsigned)t);
        set_box(&f[t], boxes[t]);
        f[t].index = t;
        free(p);
        p = calloc((size_t)f[t].natoms, sizeof *p);
        cr_assert_eq(mdnl_geom_prepare(&f[t], 2.5, &want[t], p), MDNL_OK);
        cr_assert_eq(mdnl_wrap_cuda_launch(w, &f[t], 2.5, &got[t], NULL, 0, t, &bound[t]), MDNL_OK, "%s",
                     mdnl_last_error());
    }
    cr_expect(bound[1] > 0, "a cubic periodic box waited for its t-range");
    cr_expect_eq(bound[2], 0.0, "a box open in z cannot be laid out early");
    for (int t = 0; t < T; ++t) {
        if (bound[t] > 0) {
            double lo[3], hi[3];
            int64_t bad = -1;
            cr_assert_eq(mdnl_wrap_cuda_result(w, t, lo, hi, &bad), MDNL_OK, "%s", mdnl_last_error());
            cr_expect_eq(bad, f[t].natoms);
            cr_assert_eq(mdnl_geom_settle(&f[t], 2.5, &got[t], lo, hi, bad), MDNL_OK, "%s", mdnl_last_error());
        }
        char what[32];
        snprintf(what, sizeof what, "ticket %d", t);
        expect_same_geom(&want[t], &got[t], what);
    }
    d = calloc((size_t)f[T - 1].natoms, sizeof *d);
    cr_assert_eq(mdnl_wrap_cuda_download(w, d), MDNL_OK, "%s", mdnl_last_error());
    cr_expect(memcmp(p, d, (size_t)f[T - 1].natoms * sizeof *d) == 0, "the last frame's positions differ");
    free(p);
    free(d);
    for (int t = 0; t < T; ++t)
        mdnl_frame_free(&f[t]);
    mdnl_wrap_cuda_free(w);
}

Test(geometry_gpu, nonfinite_coordinate_is_the_hosts_input_error)
{
    if (!need_device())
        return;
    mdnl_wrap_cuda *w = NULL;
    cr_assert_eq(mdnl_wrap_cuda_create(&w), MDNL_OK, "%s", mdnl_last_error());
    mdnl_frame f = {0};
    random_frame(&f, 100000, 9);
    set_box(&f, 2);
    f.pos[77777][0] = NAN;
    f.pos[70001][2] = -INFINITY;
    mdnl_geom g;
    cr_expect_eq(mdnl_geom_prepare_cuda(w, &f, 2.5, &g, NULL, 0), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "atom 70001 ") != NULL, "%s", mdnl_last_error());
    mdnl_frame_free(&f);
    mdnl_wrap_cuda_free(w);
}

/* The work guard on the device path: a frame whose cell is tiny is refused
 * by the device wrap (mdnl_geom_finish after the early layout declines) as
 * by the host prepare, with the same message; and the `mdnl` commands on
 * --backend cuda refuse data/bad/ fixtures with exit 3 within a second. */
Test(geometry_gpu, tiny_cell_is_refused_by_the_work_guard_like_the_host)
{
    if (!need_device())
        return;
    mdnl_wrap_cuda *w = NULL;
    cr_assert_eq(mdnl_wrap_cuda_create(&w), MDNL_OK, "%s", mdnl_last_error());
    mdnl_frame f = {0};
    random_frame(&f, 3, 11);
    f.box = (mdnl_box){0};
    f.box.has_lattice = true;
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 1e-3;
    f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
    f.index = 4;
    float p[3][4];
    mdnl_geom gh, gd;
    cr_expect_eq(mdnl_geom_prepare(&f, 2.0, &gh, p), MDNL_ERR_INPUT);
    char host_msg[1024];
    snprintf(host_msg, sizeof host_msg, "%s", mdnl_last_error());
    cr_expect_eq(mdnl_geom_prepare_cuda(w, &f, 2.0, &gd, NULL, 0), MDNL_ERR_INPUT);
    cr_expect_str_eq(mdnl_last_error(), host_msg);
    cr_expect(strstr(host_msg, "frame 4: cell a=(0.001 0 0)") != NULL, "%s", host_msg);
    /* raised, the same frame is laid out on both paths (a 3e-3 cube: 667
     * periodic widths, inside the hard cap of 1000 that no limit lifts) */
    mdnl_work_set_limit(1e15);
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 3e-3;
    cr_expect_eq(mdnl_geom_prepare(&f, 2.0, &gh, p), MDNL_OK, "%s", mdnl_last_error());
    cr_expect_eq(mdnl_geom_prepare_cuda(w, &f, 2.0, &gd, NULL, 0), MDNL_OK, "%s", mdnl_last_error());
    mdnl_frame_free(&f);
    mdnl_wrap_cuda_free(w);
}

Test(geometry_gpu, mdnl_commands_on_cuda_refuse_degenerate_cells_before_the_work)
{
    if (!need_device())
        return;
    static const char *const files[] = {"tiny-cell.extxyz", "near-parallel-cell.extxyz", "tiny-cell-pbc-ttf.extxyz"};
    static const char *const cmds[] = {"neighbors %s -c 2.0 -o %s/out.tsv", "rdf %s --rmax 2 --bins 10 -o %s/out.tsv",
                                       "energy %s -c 2 --pair lj:epsilon=1,sigma=1 -o %s/out.tsv",
                                       "run %s -c 2 --pair lj:epsilon=1,sigma=1 --rmax 3 --bins 10 -o %s/out.h5"};
    char dir[] = "/tmp/mdnl-guard-gpu-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    for (size_t i = 0; i < sizeof files / sizeof *files; ++i)
        for (size_t c = 0; c < sizeof cmds / sizeof *cmds; ++c) {
            char input[512], args[1024], cmd[2048];
            snprintf(input, sizeof input, "%s/bad/%s", MDNL_DATA_DIR, files[i]);
            snprintf(args, sizeof args, cmds[c], input, dir);
            /* A runaway (the work the guard refuses: hours) meets timeout's 124; the bound is not a speed
             * check (the run takes ~0.3 s bare, seconds under compute-sanitizer). */
            snprintf(cmd, sizeof cmd,
                     "timeout 120 '%s' %s --backend cuda 2>'%s/err'; echo $? >'%s/rc'; ls -A '%s' | grep -c out",
                     MDNL_BINARY, args, dir, dir, dir);
            FILE *fp = popen(cmd, "r");
            int left = -1;
            cr_assert(fp && fscanf(fp, "%d", &left) == 1);
            pclose(fp);
            char path[600], err[4096] = "", rc[16] = "";
            snprintf(path, sizeof path, "%s/err", dir);
            FILE *e = fopen(path, "r");
            size_t n = e ? fread(err, 1, sizeof err - 1, e) : 0;
            err[n] = '\0';
            if (e)
                fclose(e);
            snprintf(path, sizeof path, "%s/rc", dir);
            e = fopen(path, "r");
            if (e) {
                if (!fgets(rc, sizeof rc, e))
                    rc[0] = '\0';
                fclose(e);
            }
            cr_expect_eq(atoi(rc), 3, "%s: exit %s, stderr %s", args, rc, err);
            cr_expect(strncmp(err, "mdnl: error: ", 13) == 0 && strstr(err, input) && strstr(err, "frame 0: cell") &&
                          strchr(err, '\n') == err + n - 1,
                      "%s: expected one line naming the input, the frame and the cell, got %s", args, err);
            cr_expect_eq(left, 0, "%s: %d output file(s) left", args, left);
        }
    char rm[128];
    snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
    cr_expect_eq(system(rm), 0);
}

#endif

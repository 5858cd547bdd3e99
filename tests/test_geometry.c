/* test_geometry.c — mdnl_geom_prepare: wrapping, widths, grid invariants. */
#include "geometry.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static mdnl_frame one_atom_frame(double x, double y, double z)
{
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, 1), MDNL_OK);
    f.natoms = 1;
    f.pos[0][0] = x, f.pos[0][1] = y, f.pos[0][2] = z;
    f.species[0] = mdnl_frame_species_id(&f, "C", 1);
    return f;
}

Test(geometry, orthorhombic_position_outside_is_wrapped_into_cell)
{
    mdnl_frame f = one_atom_frame(-1.0, 12.5, 3.0);
    f.box.has_lattice = true;
    f.box.h[0][0] = 10, f.box.h[1][1] = 5, f.box.h[2][2] = 20;
    f.box.pbc[0] = f.box.pbc[1] = true; /* z open: stays where it is */
    float pos4[1][4];
    mdnl_geom g;
    cr_assert_eq(mdnl_geom_prepare(&f, 2.0, &g, pos4), MDNL_OK);
    cr_expect_float_eq(pos4[0][0], 9.0f, 1e-6);
    cr_expect_float_eq(pos4[0][1], 2.5f, 1e-6);
    cr_expect_float_eq(pos4[0][2], 3.0f, 1e-6);
    cr_expect_eq(g.ncell[0], 4, "10 / 2 gives 5 cells, minus the slack 4, got %d", g.ncell[0]);
    cr_expect_eq(g.ncell[1], 2);
    cr_expect_eq(g.ncell[2], 1, "a single atom spans no length on the open axis");
    mdnl_frame_free(&f);
}

Test(geometry, triclinic_widths_are_perpendicular_heights)
{
    mdnl_frame f = one_atom_frame(0, 0, 0);
    f.box.has_lattice = true;
    f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
    /* 120-degree hexagonal cell a = b = 4, c = 10: widths 4 sin 60 = 3.4641 */
    f.box.h[0][0] = 4;
    f.box.h[1][0] = -2, f.box.h[1][1] = 4 * sqrt(3) / 2;
    f.box.h[2][2] = 10;
    float pos4[1][4];
    mdnl_geom g;
    cr_assert_eq(mdnl_geom_prepare(&f, 1.0, &g, pos4), MDNL_OK);
    cr_expect(fabs(g.width[0] - 2 * sqrt(3)) < 1e-9, "width a %g", g.width[0]);
    cr_expect(fabs(g.width[1] - 2 * sqrt(3)) < 1e-9, "width b %g", g.width[1]);
    cr_expect(fabs(g.width[2] - 10) < 1e-9);
    cr_expect(fabs(g.volume - 40 * 4 * sqrt(3) / 2) < 1e-9);
    mdnl_frame_free(&f);
}

Test(geometry, cutoff_beyond_width_gives_one_cell_and_wide_stencil)
{
    mdnl_frame f = one_atom_frame(0, 0, 0);
    f.box.has_lattice = true;
    f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 2.0;
    float pos4[1][4];
    mdnl_geom g;
    cr_assert_eq(mdnl_geom_prepare(&f, 5.0, &g, pos4), MDNL_OK);
    cr_expect_eq(g.ncell[0], 1);
    cr_expect_eq(g.stencil[0], 3, "ceil(5/2) = 3 image layers, got %d", g.stencil[0]);
    cr_expect_eq(g.image_max[0], 3, "floor(5/2)+1 = 3, got %d", g.image_max[0]);
    mdnl_frame_free(&f);
}

Test(geometry, singular_lattice_is_an_input_error)
{
    mdnl_frame f = one_atom_frame(0, 0, 0);
    f.box.has_lattice = true;
    f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
    f.box.h[0][0] = 1, f.box.h[1][0] = 2; /* b parallel to a, c zero */
    float pos4[1][4];
    mdnl_geom g;
    cr_expect_eq(mdnl_geom_prepare(&f, 1.0, &g, pos4), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "zero volume") != NULL, "%s", mdnl_last_error());
    mdnl_frame_free(&f);
}

/* A cutoff spanning more than 1000 periodic images of an axis is an input
 * error: a 1e-100 cube once gave a list without images ((int) of 3e100 is
 * undefined), a 1e-300 axis hung. Open axes and 1000 images still work. */
Test(geometry, cutoff_spanning_more_than_1000_images_is_an_input_error)
{
    /* With the default limit the work guard refuses these cells first
     * (tests/test_guard.c); the image cap holds when --max-pairs lifts it. */
    mdnl_work_set_limit(1e300);
    mdnl_frame f = one_atom_frame(0, 0, 0);
    f.box.has_lattice = true;
    f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 1e-100;
    float pos4[1][4];
    mdnl_geom g;
    cr_expect_eq(mdnl_geom_prepare(&f, 3.0, &g, pos4), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "cutoff/1000") != NULL, "%s", mdnl_last_error());
    f.box.h[0][0] = f.box.h[1][1] = 10.0, f.box.h[2][2] = 1e-3; /* 3000 images along c */
    cr_expect_eq(mdnl_geom_prepare(&f, 3.0, &g, pos4), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "axis c") != NULL, "%s", mdnl_last_error());
    f.box.h[2][2] = 3.0 / 900; /* 900 images: allowed */
    cr_expect_eq(mdnl_geom_prepare(&f, 3.0, &g, pos4), MDNL_OK, "%s", mdnl_last_error());
    cr_expect_eq(g.image_max[2], 901);
    f.box.pbc[2] = false; /* open axis: no images */
    f.box.h[2][2] = 1e-3;
    cr_expect_eq(mdnl_geom_prepare(&f, 3.0, &g, pos4), MDNL_OK, "%s", mdnl_last_error());
    /* regrid (a second cutoff, r_max) is bounded the same way */
    f.box.pbc[2] = true;
    f.box.h[2][2] = 1.0;
    cr_assert_eq(mdnl_geom_prepare(&f, 3.0, &g, pos4), MDNL_OK, "%s", mdnl_last_error());
    mdnl_geom g2;
    cr_expect_eq(mdnl_geom_regrid(&g, 5000.0, &g2), MDNL_ERR_INPUT);
    mdnl_frame_free(&f);
}

Test(geometry, nonpositive_or_nan_cutoff_is_a_usage_error)
{
    mdnl_frame f = one_atom_frame(0, 0, 0);
    float pos4[1][4];
    mdnl_geom g;
    cr_expect_eq(mdnl_geom_prepare(&f, 0.0, &g, pos4), MDNL_ERR_USAGE);
    cr_expect_eq(mdnl_geom_prepare(&f, -1.0, &g, pos4), MDNL_ERR_USAGE);
    cr_expect_eq(mdnl_geom_prepare(&f, NAN, &g, pos4), MDNL_ERR_USAGE);
    mdnl_frame_free(&f);
}

Test(geometry, sparse_open_frame_grid_is_capped)
{
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, 2), MDNL_OK);
    f.natoms = 2;
    f.pos[0][0] = 0, f.pos[0][1] = 0, f.pos[0][2] = 0;
    f.pos[1][0] = 1e7, f.pos[1][1] = 1e7, f.pos[1][2] = 1e7;
    float pos4[2][4];
    mdnl_geom g;
    cr_assert_eq(mdnl_geom_prepare(&f, 1.0, &g, pos4), MDNL_OK);
    cr_expect(g.ncells <= 64, "grid of %lld cells for 2 atoms", (long long)g.ncells);
    mdnl_frame_free(&f);
}

/* mdnl run wraps a frame once and regrids it for r_max: the result must be
 * what a fresh prepare gives, field for field, on every kind of box. */
Test(geometry, regrid_equals_prepare_for_every_cutoff_and_box)
{
    /* 500 atoms in 1620 Å^3 with a cutoff of 25: 2e4 pairs per atom, beyond
     * the work guard's default; these grids are compared, never traversed. */
    mdnl_work_set_limit(1e15);
    enum { N = 500 };
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, N), MDNL_OK);
    f.natoms = N;
    srand(7);
    for (int i = 0; i < N; ++i) {
        for (int a = 0; a < 3; ++a)
            f.pos[i][a] = 30.0 * rand() / RAND_MAX - 10.0;
        f.species[i] = mdnl_frame_species_id(&f, "Ar", 2);
    }
    const double cutoffs[] = {0.7, 2.5, 4.0, 9.0, 25.0};
    for (int box = 0; box < 3; ++box) {
        f.box = (mdnl_box){0};
        if (box > 0) {
            f.box.has_lattice = true;
            f.box.h[0][0] = 12, f.box.h[1][1] = 9, f.box.h[2][2] = 15;
            if (box == 2)
                f.box.h[1][0] = 3, f.box.h[2][0] = -2, f.box.h[2][1] = 1.5;
            f.box.pbc[0] = f.box.pbc[1] = true;
            f.box.pbc[2] = box == 2;
        }
        float(*p1)[4] = malloc(sizeof(float[N + 1][4])), (*p2)[4] = malloc(sizeof(float[N + 1][4]));
        mdnl_geom base, fresh, re;
        cr_assert_eq(mdnl_geom_prepare(&f, 2.5, &base, p1), MDNL_OK);
        for (size_t k = 0; k < sizeof cutoffs / sizeof *cutoffs; ++k) {
            cr_assert_eq(mdnl_geom_prepare(&f, cutoffs[k], &fresh, p2), MDNL_OK);
            cr_assert_eq(mdnl_geom_regrid(&base, cutoffs[k], &re), MDNL_OK);
            cr_expect(memcmp(&fresh, &re, sizeof re) == 0, "box %d cutoff %g: regrid differs from prepare", box,
                      cutoffs[k]);
            cr_expect(memcmp(p1, p2, sizeof(float[N][4])) == 0, "positions depend on the cutoff");
        }
        cr_expect_eq(mdnl_geom_regrid(&base, -1.0, &re), MDNL_ERR_USAGE);
        free(p1);
        free(p2);
    }
    mdnl_frame_free(&f);
}

/* The four kinds of box the wrap distinguishes: none (open), orthorhombic
 * periodic in x and y only, triclinic periodic in all three, and a lattice
 * with no periodic axis. */
static void set_box(mdnl_frame *f, int box)
{
    f->box = (mdnl_box){0};
    if (box == 0)
        return;
    f->box.has_lattice = true;
    f->box.h[0][0] = 12, f->box.h[1][1] = 9, f->box.h[2][2] = 15;
    if (box == 2)
        f->box.h[1][0] = 3, f->box.h[2][0] = -2, f->box.h[2][1] = 1.5;
    f->box.pbc[0] = f->box.pbc[1] = box != 3;
    f->box.pbc[2] = box == 2;
}

/* Whether two grids agree in every field but the t-range bookkeeping
 * (tlo/thi: zero in a grid laid out before the t-range). */
static bool same_grid_but_trange(const mdnl_geom *a, const mdnl_geom *b)
{
    mdnl_geom x = *a, y = *b;
    memset(x.tlo, 0, sizeof x.tlo), memset(x.thi, 0, sizeof x.thi);
    memset(y.tlo, 0, sizeof y.tlo), memset(y.thi, 0, sizeof y.thi);
    return memcmp(&x, &y, sizeof x) == 0;
}

/* mdnl_geom_layout (the run pipeline's guard on CUDA lays out the device's
 * grids without the positions) gives mdnl_geom_prepare's grid for the first
 * cutoff and its regrid for the second, on every kind of box (the periodic
 * triclinic one from the box alone, the others from the t-range), and
 * mdnl_geom_prepare's errors. */
Test(geometry, layout_gives_the_grids_of_prepare_and_regrid_on_every_box)
{
    mdnl_work_set_limit(1e15); /* compared, never traversed (as above) */
    enum { N = 600 };
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, N), MDNL_OK);
    f.natoms = N;
    srand(59);
    for (int i = 0; i < N; ++i)
        for (int a = 0; a < 3; ++a)
            f.pos[i][a] = 40.0 * rand() / RAND_MAX - 14.0;
    float(*pos4)[4] = malloc(sizeof(float[N][4]));
    cr_assert_not_null(pos4);
    const double cutoffs[][2] = {{2.5, 4.0}, {4.0, 2.5}, {0.7, 9.0}, {9.0, 0}};
    for (int box = 0; box < 4; ++box) {
        set_box(&f, box);
        for (size_t k = 0; k < sizeof cutoffs / sizeof *cutoffs; ++k) {
            mdnl_geom want, want2, got, got2;
            cr_assert_eq(mdnl_geom_prepare(&f, cutoffs[k][0], &want, pos4), MDNL_OK, "%s", mdnl_last_error());
            cr_assert_eq(mdnl_geom_layout(&f, cutoffs[k][0], &got, cutoffs[k][1], &got2), MDNL_OK);
            cr_expect(same_grid_but_trange(&want, &got), "box %d cutoff %g: layout differs from prepare", box,
                      cutoffs[k][0]);
            if (cutoffs[k][1] > 0) {
                cr_assert_eq(mdnl_geom_regrid(&want, cutoffs[k][1], &want2), MDNL_OK);
                cr_expect(same_grid_but_trange(&want2, &got2), "box %d cutoff %g: the second grid differs", box,
                          cutoffs[k][1]);
            }
        }
    }
    /* a non-finite coordinate, and a singular cell */
    set_box(&f, 1);
    f.pos[17][1] = NAN;
    mdnl_geom g, g2;
    cr_expect_eq(mdnl_geom_layout(&f, 2.5, &g, 4.0, &g2), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "atom 17 has a non-finite coordinate") != NULL, "%s", mdnl_last_error());
    f.pos[17][1] = 1.0;
    f.box.h[1][0] = 12, f.box.h[1][1] = 0;
    cr_expect_eq(mdnl_geom_layout(&f, 2.5, &g, 0, NULL), MDNL_ERR_INPUT);
    mdnl_work_set_limit(0);
    free(pos4);
    mdnl_frame_free(&f);
}

/* mdnl_geom_prepare is begin + mdnl_wrap_atom per atom + finish; the device
 * wrap (geometry.cu) relies on exactly that split. Atoms lie up to two boxes
 * outside the cell, so every periodic axis really wraps. */
Test(geometry, begin_wrap_atom_finish_equals_prepare_on_every_box)
{
    enum { N = 700 };
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, N), MDNL_OK);
    f.natoms = N;
    srand(11);
    for (int i = 0; i < N; ++i) {
        for (int a = 0; a < 3; ++a)
            f.pos[i][a] = 60.0 * rand() / RAND_MAX - 25.0;
        f.species[i] = mdnl_frame_species_id(&f, "Ar", 2);
    }
    float(*p1)[4] = calloc(N, sizeof *p1), (*p2)[4] = calloc(N, sizeof *p2);
    for (int box = 0; box < 4; ++box) {
        set_box(&f, box);
        mdnl_geom want, got;
        mdnl_wrap_params w;
        cr_assert_eq(mdnl_geom_prepare(&f, 2.5, &want, p1), MDNL_OK);
        cr_assert_eq(mdnl_geom_begin(&f, 2.5, &got, &w), MDNL_OK);
        double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        for (int i = 0; i < N; ++i) {
            double t[3];
            cr_assert(mdnl_wrap_atom(&w, f.pos[i][0], f.pos[i][1], f.pos[i][2], p2[i], t));
            p2[i][3] = 0.0f;
            for (int k = 0; k < 3; ++k)
                lo[k] = t[k] < lo[k] ? t[k] : lo[k], hi[k] = t[k] > hi[k] ? t[k] : hi[k];
        }
        cr_assert_eq(mdnl_geom_finish(&f, 2.5, &got, lo, hi, N), MDNL_OK);
        cr_expect(memcmp(p1, p2, sizeof(float[N][4])) == 0, "box %d: positions differ", box);
        cr_expect(memcmp(&want, &got, sizeof got) == 0, "box %d: geometry differs", box);
        if (box == 1) /* orthorhombic: x in [0, 12), y in [0, 9), z (open) untouched */
            for (int i = 0; i < N; ++i) {
                cr_expect(p1[i][0] >= 0.0f && p1[i][0] <= 12.0f && p1[i][1] >= 0.0f && p1[i][1] <= 9.0f,
                          "atom %d not wrapped: %g %g", i, p1[i][0], p1[i][1]);
                cr_expect_eq(p1[i][2], (float)f.pos[i][2]);
            }
    }
    free(p1);
    free(p2);
    mdnl_frame_free(&f);
}

/* The grid laid out before the t-range (mdnl run on the device) is
 * mdnl_geom_prepare's, on every box periodic on every axis: orthorhombic,
 * triclinic, strongly skewed, smaller than the cutoff; for the first cutoff
 * and regridded to a second; the real max |t| stays under the bound. */
Test(geometry, early_grid_settles_to_prepare_on_periodic_boxes)
{
    /* 900 atoms in a 1.7 Å cube with cutoffs up to 7.7: 3.5e5 pairs per atom,
     * beyond the work guard's default; these grids are compared, never
     * traversed. */
    mdnl_work_set_limit(1e15);
    enum { N = 900 };
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, N), MDNL_OK);
    f.natoms = N;
    srand(13);
    for (int i = 0; i < N; ++i) {
        for (int a = 0; a < 3; ++a)
            f.pos[i][a] = 80.0 * rand() / RAND_MAX - 30.0;
        f.species[i] = mdnl_frame_species_id(&f, "Ar", 2);
    }
    const double boxes[][9] = {{12, 0, 0, 0, 9, 0, 0, 0, 15},
                               {12, 0, 0, 3, 9, 0, -2, 1.5, 15},
                               {10, 0, 0, 9.5, 4, 0, -8, 7, 6},
                               {1.7, 0, 0, 0, 1.7, 0, 0, 0, 1.7},
                               {48.9, 0, 0, 0, 48.9, 0, 0, 0, 48.9}};
    const double cutoffs[][2] = {{2.5, 4.0}, {0.9, 2.5}, {4.0, 1.1}, {3.3, 7.7}};
    float(*p1)[4] = calloc(N, sizeof *p1), (*p2)[4] = calloc(N, sizeof *p2);
    int early = 0;
    for (size_t b = 0; b < sizeof boxes / sizeof *boxes; ++b)
        for (size_t c = 0; c < sizeof cutoffs / sizeof *cutoffs; ++c) {
            f.box = (mdnl_box){0};
            f.box.has_lattice = true;
            for (int r = 0; r < 9; ++r)
                f.box.h[r / 3][r % 3] = boxes[b][r];
            f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
            const double c1 = cutoffs[c][0], c2 = cutoffs[c][1];
            mdnl_geom want1, want2, got1, got2;
            cr_assert_eq(mdnl_geom_prepare(&f, c1, &want1, p1), MDNL_OK);
            cr_assert_eq(mdnl_geom_prepare(&f, c2, &want2, p1), MDNL_OK);
            mdnl_wrap_params w;
            cr_assert_eq(mdnl_geom_begin(&f, c1, &got1, &w), MDNL_OK);
            const double bound = mdnl_geom_tabs_bound(&got1, &w);
            cr_expect(bound > 0, "box %zu: no bound", b);
            double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY}, tabs = 0;
            for (int i = 0; i < N; ++i) {
                double t[3];
                cr_assert(mdnl_wrap_atom(&w, f.pos[i][0], f.pos[i][1], f.pos[i][2], p2[i], t));
                for (int k = 0; k < 3; ++k) {
                    lo[k] = t[k] < lo[k] ? t[k] : lo[k], hi[k] = t[k] > hi[k] ? t[k] : hi[k];
                    tabs = fabs(t[k]) > tabs ? fabs(t[k]) : tabs;
                }
            }
            cr_expect(tabs <= bound, "box %zu: max |t| %.17g above the bound %.17g", b, tabs, bound);
            if (!mdnl_geom_finish_early(c1, &got1, bound))
                continue;
            ++early;
            cr_assert_eq(mdnl_geom_regrid(&got1, c2, &got2), MDNL_OK);
            const bool certain2 = mdnl_geom_early_certain(&got2, c2, bound);
            cr_assert_eq(mdnl_geom_settle(&f, c1, &got1, lo, hi, N), MDNL_OK, "%s", mdnl_last_error());
            cr_expect(memcmp(&want1, &got1, sizeof got1) == 0, "box %zu cutoff %g: early grid differs", b, c1);
            if (certain2) {
                cr_assert_eq(mdnl_geom_settle(&f, c2, &got2, lo, hi, N), MDNL_OK, "%s", mdnl_last_error());
                cr_expect(memcmp(&want2, &got2, sizeof got2) == 0, "box %zu cutoff %g: early regrid differs", b, c2);
            }
        }
    cr_expect(early >= 10, "only %d of 20 grids were laid out early", early);
    /* not periodic on every axis, or no atoms: no bound */
    f.box.pbc[2] = false;
    mdnl_geom g;
    mdnl_wrap_params w;
    cr_assert_eq(mdnl_geom_begin(&f, 2.5, &g, &w), MDNL_OK);
    cr_expect_eq(mdnl_geom_tabs_bound(&g, &w), 0.0);
    /* a bound so loose that the slack changes the grid: not early */
    f.box.pbc[2] = true;
    cr_assert_eq(mdnl_geom_begin(&f, 2.5, &g, &w), MDNL_OK);
    cr_expect(!mdnl_geom_finish_early(2.5, &g, 1e9));
    /* a non-finite atom is the frame's input error when it settles */
    cr_assert_eq(mdnl_geom_begin(&f, 2.5, &g, &w), MDNL_OK);
    cr_assert(mdnl_geom_finish_early(2.5, &g, mdnl_geom_tabs_bound(&g, &w)));
    const double lo[3] = {0, 0, 0}, hi[3] = {1, 1, 1};
    cr_expect_eq(mdnl_geom_settle(&f, 2.5, &g, lo, hi, 5), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "atom 5 ") != NULL, "%s", mdnl_last_error());
    free(p1);
    free(p2);
    mdnl_frame_free(&f);
}

Test(geometry, nonfinite_coordinate_names_the_first_bad_atom)
{
    enum { N = 10 };
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, N), MDNL_OK);
    f.natoms = N;
    for (int i = 0; i < N; ++i)
        f.pos[i][0] = f.pos[i][1] = f.pos[i][2] = i;
    f.pos[7][1] = NAN;
    f.pos[3][2] = INFINITY;
    set_box(&f, 2);
    float pos4[N][4];
    mdnl_geom g;
    cr_expect_eq(mdnl_geom_prepare(&f, 1.0, &g, pos4), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "atom 3 ") != NULL, "%s", mdnl_last_error());
    mdnl_wrap_params w;
    cr_assert_eq(mdnl_geom_begin(&f, 1.0, &g, &w), MDNL_OK);
    float p[3];
    double t[3];
    cr_expect_eq(mdnl_wrap_atom(&w, 1.0, NAN, 2.0, p, t), 0);
    cr_expect_eq(mdnl_wrap_atom(&w, 1.0, 2.0, 3.0, p, t), 1);
    mdnl_frame_free(&f);
}

/* A frame whose positions come from a caller's allocator (pinned memory in
 * `mdnl run` on CUDA): growing keeps the content, freeing goes back to it. */
static int n_alloc, n_free;
static void *count_alloc(size_t bytes, const char *what, void *ctx)
{
    (void)what;
    ++*(int *)ctx;
    ++n_alloc;
    return malloc(bytes);
}
static void count_free(void *p, void *ctx)
{
    (void)ctx;
    if (p)
        ++n_free;
    free(p);
}

Test(geometry, frame_positions_use_the_frame_allocator)
{
    int calls = 0;
    const mdnl_frame_allocator a = {count_alloc, count_free, &calls};
    mdnl_frame f = {0};
    f.pos_alloc = &a;
    cr_assert_eq(mdnl_frame_reserve(&f, 10), MDNL_OK);
    for (int i = 0; i < 10; ++i)
        f.pos[i][0] = i, f.pos[i][1] = 2 * i, f.pos[i][2] = -i;
    cr_assert_eq(mdnl_frame_reserve(&f, 5), MDNL_OK); /* fits: no new allocation */
    cr_expect_eq(calls, 1);
    cr_assert_eq(mdnl_frame_reserve(&f, 1000), MDNL_OK);
    cr_expect_eq(calls, 2);
    for (int i = 0; i < 10; ++i)
        cr_expect(f.pos[i][0] == i && f.pos[i][1] == 2 * i && f.pos[i][2] == -i, "atom %d lost on growth", i);
    mdnl_frame_free(&f);
    cr_expect_eq(n_alloc, 2);
    cr_expect_eq(n_free, 2, "every allocation returned to the allocator, got %d of 2", n_free);
}

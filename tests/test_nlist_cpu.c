/* test_nlist_cpu.c — the CPU twins of the neighbor list (nlist_cpu.c).
 * Three oracles: analytic graphene shells; brute force == cell list on random
 * frames in every kind of box; an independent double-precision image sum
 * written here (the pair count ASE's neighbor_list would give). And the
 * thread count must not show: the cell list's parallel counting sort (large
 * frames only) and the lists built on 1 and 3 threads are compared. */
#include "cells_cpu.h"
#include "nlist.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;
static double uniform(void)
{
    rng_state += 0x9e3779b97f4a7c15ull;
    uint64_t z = rng_state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* Rectangular periodic graphene: 4-atom cells a = b*sqrt(3), 3b, pbc T T F. */
static void graphene_rect(mdnl_frame *f, int nx, int ny, double b)
{
    const double a = b * sqrt(3.0), c = 3.0 * b;
    const double basis[4][2] = {{0, 0}, {a / 2, b / 2}, {a / 2, 1.5 * b}, {0, 2 * b}};
    memset(f, 0, sizeof *f);
    cr_assert_eq(mdnl_frame_reserve(f, 4LL * nx * ny), MDNL_OK);
    int64_t n = 0;
    for (int ix = 0; ix < nx; ++ix)
        for (int iy = 0; iy < ny; ++iy)
            for (int k = 0; k < 4; ++k, ++n) {
                f->pos[n][0] = ix * a + basis[k][0];
                f->pos[n][1] = iy * c + basis[k][1];
                f->pos[n][2] = 10.0;
                f->species[n] = 0;
            }
    f->natoms = n;
    f->nspecies = 1;
    strcpy(f->symbols[0], "C");
    f->box.has_lattice = true;
    f->box.h[0][0] = nx * a;
    f->box.h[1][1] = ny * c;
    f->box.h[2][2] = 20.0;
    f->box.pbc[0] = f->box.pbc[1] = true;
}

/* Honeycomb in the primitive 120-degree cell, nx x ny copies, pbc T T F. */
static void graphene_hex(mdnl_frame *f, int nx, int ny, double b)
{
    const double a = b * sqrt(3.0);
    const double a1[2] = {a, 0}, a2[2] = {-a / 2, a * sqrt(3.0) / 2};
    memset(f, 0, sizeof *f);
    cr_assert_eq(mdnl_frame_reserve(f, 2LL * nx * ny), MDNL_OK);
    int64_t n = 0;
    for (int ix = 0; ix < nx; ++ix)
        for (int iy = 0; iy < ny; ++iy)
            for (int k = 0; k < 2; ++k, ++n) {
                double fx = ix + k / 3.0, fy = iy + 2 * k / 3.0;
                f->pos[n][0] = fx * a1[0] + fy * a2[0];
                f->pos[n][1] = fx * a1[1] + fy * a2[1];
                f->pos[n][2] = 5.0;
                f->species[n] = 0;
            }
    f->natoms = n;
    f->nspecies = 1;
    f->box.has_lattice = true;
    f->box.h[0][0] = nx * a1[0], f->box.h[0][1] = nx * a1[1];
    f->box.h[1][0] = ny * a2[0], f->box.h[1][1] = ny * a2[1];
    f->box.h[2][2] = 20.0;
    f->box.pbc[0] = f->box.pbc[1] = true;
}

static void build(const mdnl_frame *f, double rc, mdnl_method m, mdnl_list_kind kind, mdnl_nlist *l)
{
    mdnl_geom g;
    float(*pos4)[4] = malloc((size_t)(f->natoms + 1) * sizeof *pos4);
    cr_assert_eq(mdnl_geom_prepare(f, rc, &g, pos4), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_nlist_build_cpu(&g, (const float(*)[4])pos4, m, kind, l), MDNL_OK, "%s", mdnl_last_error());
    free(pos4);
}

static void expect_every_row_has(const mdnl_nlist *l, int64_t want, const char *what)
{
    for (int64_t i = 0; i < l->natoms; ++i) {
        int64_t got = l->offsets[i + 1] - l->offsets[i];
        cr_assert_eq(got, want, "%s: atom %lld has %lld neighbors, expected %lld", what, (long long)i, (long long)got,
                     (long long)want);
    }
}

Test(nlist_cpu, graphene_shells_3_9_12_on_several_sizes_both_methods)
{
    const int sizes[][2] = {{2, 1}, {3, 2}, {8, 5}, {30, 17}};
    const double cut[] = {1.6, 2.6, 3.0};
    const int64_t want[] = {3, 9, 12};
    for (unsigned s = 0; s < 4; ++s)
        for (int m = MDNL_METHOD_BRUTE_NOATOMIC; m <= MDNL_METHOD_CELL; ++m)
            for (int c = 0; c < 3; ++c) {
                mdnl_frame f;
                graphene_rect(&f, sizes[s][0], sizes[s][1], 1.42);
                mdnl_nlist l = {0};
                build(&f, cut[c], (mdnl_method)m, MDNL_LIST_FULL, &l);
                char what[96];
                snprintf(what, sizeof what, "%dx%d cells, cutoff %.1f, %s", sizes[s][0], sizes[s][1], cut[c],
                         mdnl_method_name((mdnl_method)m));
                expect_every_row_has(&l, want[c], what);
                /* the first shell's distance is the bond */
                cr_expect(fabsf(l.d[l.offsets[0]] - 1.42f) < 1e-4f || l.offsets[1] - l.offsets[0] > 3, "%s", what);
                mdnl_nlist_free(&l);
                mdnl_frame_free(&f);
            }
}

Test(nlist_cpu, graphene_triclinic_120deg_cell_shells_3_9_12)
{
    const double cut[] = {1.6, 2.6, 3.0};
    const int64_t want[] = {3, 9, 12};
    for (int c = 0; c < 3; ++c)
        for (int m = MDNL_METHOD_BRUTE_NOATOMIC; m <= MDNL_METHOD_CELL; ++m) {
            mdnl_frame f;
            graphene_hex(&f, 12, 9, 1.42);
            mdnl_nlist l = {0};
            build(&f, cut[c], (mdnl_method)m, MDNL_LIST_FULL, &l);
            expect_every_row_has(&l, want[c], mdnl_method_name((mdnl_method)m));
            mdnl_nlist_free(&l);
            mdnl_frame_free(&f);
        }
}

Test(nlist_cpu, graphene_bond_distances_are_1p42_and_rows_sorted)
{
    mdnl_frame f;
    graphene_rect(&f, 6, 4, 1.42);
    mdnl_nlist l = {0};
    build(&f, 3.0, MDNL_METHOD_CELL, MDNL_LIST_FULL, &l);
    int shell[3] = {0, 0, 0};
    for (int64_t k = 0; k < l.npairs; ++k) {
        float d = l.d[k];
        if (fabsf(d - 1.42f) < 1e-4f)
            shell[0]++;
        else if (fabsf(d - 2.4595f) < 1e-3f)
            shell[1]++;
        else if (fabsf(d - 2.84f) < 1e-4f)
            shell[2]++;
        else
            cr_assert_fail("pair at unexpected distance %.7f", d);
    }
    cr_expect_eq(shell[0], 3 * f.natoms);
    cr_expect_eq(shell[1], 6 * f.natoms);
    cr_expect_eq(shell[2], 3 * f.natoms);
    for (int64_t i = 0; i < l.natoms; ++i)
        for (int64_t k = l.offsets[i] + 1; k < l.offsets[i + 1]; ++k)
            cr_assert(mdnl_row_key(l.j[k - 1], l.d[k - 1]) <= mdnl_row_key(l.j[k], l.d[k]), "row %lld unsorted",
                      (long long)i);
    mdnl_nlist_free(&l);
    mdnl_frame_free(&f);
}

/* ---- random frames in every kind of box ---- */

typedef struct box_case {
    const char *name;
    int natoms;
    double h[3][3];
    bool pbc[3];
    bool lattice;
    double cutoff;
} box_case;

static const box_case box_cases[] = {
    {"open", 300, {{0}}, {0, 0, 0}, false, 2.5},
    {"orthorhombic", 400, {{9, 0, 0}, {0, 10, 0}, {0, 0, 11}}, {1, 1, 1}, true, 2.5},
    {"orthorhombic_cutoff_beyond_half", 200, {{6, 0, 0}, {0, 7, 0}, {0, 0, 8}}, {1, 1, 1}, true, 4.2},
    {"triclinic", 400, {{9, 0, 0}, {3, 9, 0}, {-2, 2.5, 10}}, {1, 1, 1}, true, 2.7},
    {"triclinic_cutoff_beyond_half", 120, {{5, 0, 0}, {2, 5, 0}, {1, -1.5, 6}}, {1, 1, 1}, true, 4.0},
    {"slab_TTF", 300, {{8, 0, 0}, {2, 8, 0}, {0, 0, 30}}, {1, 1, 0}, true, 2.5},
    {"wire_FFT", 200, {{20, 0, 0}, {0, 20, 0}, {0, 0, 6}}, {0, 0, 1}, true, 2.5},
    {"tiny_cutoff_beyond_box", 7, {{2, 0, 0}, {0.5, 2.2, 0}, {0, 0.3, 1.8}}, {1, 1, 1}, true, 4.5},
    {"one_atom_self_images", 1, {{1.5, 0, 0}, {0, 2, 0}, {0, 0, 2.5}}, {1, 1, 1}, true, 3.1},
    {"zero_atoms", 0, {{5, 0, 0}, {0, 5, 0}, {0, 0, 5}}, {1, 1, 1}, true, 2.0},
};

static void random_frame(const box_case *bc, uint64_t seed, mdnl_frame *f)
{
    memset(f, 0, sizeof *f);
    rng_state = seed;
    cr_assert_eq(mdnl_frame_reserve(f, bc->natoms), MDNL_OK);
    f->natoms = bc->natoms;
    f->box.has_lattice = bc->lattice;
    memcpy(f->box.h, bc->h, sizeof f->box.h);
    memcpy(f->box.pbc, bc->pbc, sizeof f->box.pbc);
    for (int i = 0; i < bc->natoms; ++i) {
        /* fractional in [-0.5, 1.5) so wrapping is exercised */
        double s[3] = {2 * uniform() - 0.5, 2 * uniform() - 0.5, 2 * uniform() - 0.5};
        for (int a = 0; a < 3; ++a) {
            if (bc->lattice)
                f->pos[i][a] = s[0] * bc->h[0][a] + s[1] * bc->h[1][a] + s[2] * bc->h[2][a];
            else
                f->pos[i][a] = 12.0 * s[a];
        }
        f->species[i] = 0;
    }
    f->nspecies = 1;
}

/* Independent reference: double precision, unwrapped positions, images from a
 * generous range; counts pairs whose distance is not within 1e-4 of the
 * cutoff (where float rounding may legitimately decide) and reports the
 * borderline ones separately. */
static void reference_count(const box_case *bc, const mdnl_frame *f, int64_t *sure, int64_t *border)
{
    /* Unwrapped fractional coordinates differ by less than 2, so shifts up to
     * 2 + cutoff / width cover every pair; widths are V / |a_l x a_m|. */
    int range[3];
    const double(*h)[3] = bc->h;
    double vol = fabs(h[0][0] * (h[1][1] * h[2][2] - h[1][2] * h[2][1]) -
                      h[0][1] * (h[1][0] * h[2][2] - h[1][2] * h[2][0]) +
                      h[0][2] * (h[1][0] * h[2][1] - h[1][1] * h[2][0]));
    for (int k = 0; k < 3; ++k) {
        const double *u = h[(k + 1) % 3], *v = h[(k + 2) % 3];
        double cx = u[1] * v[2] - u[2] * v[1], cy = u[2] * v[0] - u[0] * v[2], cz = u[0] * v[1] - u[1] * v[0];
        double width = vol / sqrt(cx * cx + cy * cy + cz * cz);
        range[k] = bc->pbc[k] ? 2 + (int)ceil(bc->cutoff / width) : 0;
    }
    *sure = *border = 0;
    for (int i = 0; i < f->natoms; ++i)
        for (int j = 0; j < f->natoms; ++j)
            for (int s0 = -range[0]; s0 <= range[0]; ++s0)
                for (int s1 = -range[1]; s1 <= range[1]; ++s1)
                    for (int s2 = -range[2]; s2 <= range[2]; ++s2) {
                        if (i == j && !s0 && !s1 && !s2)
                            continue;
                        double d2 = 0;
                        for (int a = 0; a < 3; ++a) {
                            double dx = f->pos[j][a] - f->pos[i][a] + s0 * bc->h[0][a] + s1 * bc->h[1][a] +
                                        s2 * bc->h[2][a];
                            d2 += dx * dx;
                        }
                        double d = sqrt(d2);
                        if (fabs(d - bc->cutoff) < 1e-4)
                            ++*border;
                        else if (d < bc->cutoff)
                            ++*sure;
                    }
}

static void expect_same_list(const mdnl_nlist *a, const mdnl_nlist *b, const char *what)
{
    cr_assert_eq(a->natoms, b->natoms, "%s", what);
    for (int64_t i = 0; i < a->natoms; ++i) {
        int64_t na = a->offsets[i + 1] - a->offsets[i], nb = b->offsets[i + 1] - b->offsets[i];
        for (int64_t k = 0; k < na && k < nb; ++k) {
            int64_t ka = a->offsets[i] + k, kb = b->offsets[i] + k;
            cr_assert(a->j[ka] == b->j[kb] && a->d[ka] == b->d[kb],
                      "%s: row %lld entry %lld differs: (j %d, d %.9g) vs (j %d, d %.9g)", what, (long long)i,
                      (long long)k, a->j[ka], a->d[ka], b->j[kb], b->d[kb]);
        }
        cr_assert_eq(na, nb, "%s: row %lld has %lld vs %lld entries", what, (long long)i, (long long)na,
                     (long long)nb);
    }
    cr_assert_eq(a->npairs, b->npairs, "%s", what);
}

Test(nlist_cpu, brute_equals_cell_and_reference_in_every_box)
{
    for (unsigned c = 0; c < sizeof box_cases / sizeof *box_cases; ++c)
        for (uint64_t seed = 1; seed <= 3; ++seed) {
            const box_case *bc = &box_cases[c];
            mdnl_frame f;
            random_frame(bc, seed * 7919 + c, &f);
            mdnl_nlist brute = {0}, cell = {0}, half_b = {0}, half_c = {0};
            build(&f, bc->cutoff, MDNL_METHOD_BRUTE_NOATOMIC, MDNL_LIST_FULL, &brute);
            build(&f, bc->cutoff, MDNL_METHOD_CELL, MDNL_LIST_FULL, &cell);
            build(&f, bc->cutoff, MDNL_METHOD_BRUTE_ATOMIC, MDNL_LIST_HALF, &half_b);
            build(&f, bc->cutoff, MDNL_METHOD_CELL, MDNL_LIST_HALF, &half_c);
            char what[128];
            snprintf(what, sizeof what, "%s seed %llu full", bc->name, (unsigned long long)seed);
            expect_same_list(&brute, &cell, what);
            snprintf(what, sizeof what, "%s seed %llu half", bc->name, (unsigned long long)seed);
            expect_same_list(&half_b, &half_c, what);
            cr_expect_eq(half_c.npairs * 2, cell.npairs, "%s: half %lld is not full %lld / 2", bc->name,
                         (long long)half_c.npairs, (long long)cell.npairs);
            int64_t sure, border;
            reference_count(bc, &f, &sure, &border);
            cr_expect(cell.npairs >= sure && cell.npairs <= sure + border,
                      "%s seed %llu: %lld pairs, reference %lld (+%lld within 1e-4 of the cutoff)", bc->name,
                      (unsigned long long)seed, (long long)cell.npairs, (long long)sure, (long long)border);
            mdnl_nlist_free(&brute);
            mdnl_nlist_free(&cell);
            mdnl_nlist_free(&half_b);
            mdnl_nlist_free(&half_c);
            mdnl_frame_free(&f);
        }
}

Test(nlist_cpu, half_list_has_i_le_j_and_self_images_once_per_pm_shift)
{
    /* One atom in a 1.5 x 2 x 2.5 box, cutoff 3.1: self images at
     * |S·h| < 3.1. Count them by hand: full list holds both ±S. */
    const box_case *bc = &box_cases[8];
    mdnl_frame f;
    random_frame(bc, 5, &f);
    mdnl_nlist full = {0}, half = {0};
    build(&f, bc->cutoff, MDNL_METHOD_CELL, MDNL_LIST_FULL, &full);
    build(&f, bc->cutoff, MDNL_METHOD_CELL, MDNL_LIST_HALF, &half);
    int64_t want = 0;
    for (int a = -3; a <= 3; ++a)
        for (int b = -3; b <= 3; ++b)
            for (int c = -3; c <= 3; ++c) {
                double d2 = (1.5 * a) * (1.5 * a) + (2.0 * b) * (2.0 * b) + (2.5 * c) * (2.5 * c);
                if ((a || b || c) && d2 < 3.1 * 3.1)
                    ++want;
            }
    cr_expect_eq(full.npairs, want, "full list of self images: %lld, expected %lld", (long long)full.npairs,
                 (long long)want);
    cr_expect_eq(half.npairs * 2, want, "half list of self images: %lld, expected %lld", (long long)half.npairs,
                 (long long)want / 2);
    for (int64_t k = 0; k < half.npairs; ++k)
        cr_expect_eq(half.j[k], 0);
    mdnl_nlist_free(&full);
    mdnl_nlist_free(&half);
    mdnl_frame_free(&f);
}

Test(nlist_cpu, zero_atoms_give_an_empty_list)
{
    mdnl_frame f = {0};
    f.box.has_lattice = false;
    mdnl_nlist l = {0};
    build(&f, 2.0, MDNL_METHOD_CELL, MDNL_LIST_FULL, &l);
    cr_expect_eq(l.natoms, 0);
    cr_expect_eq(l.npairs, 0);
    cr_expect_eq(l.offsets[0], 0);
    mdnl_nlist_free(&l);
}

Test(nlist_cpu, method_names_round_trip_and_unknown_is_usage_error)
{
    for (int m = 0; m <= MDNL_METHOD_CELL; ++m) {
        mdnl_method back;
        cr_expect_eq(mdnl_method_parse(mdnl_method_name((mdnl_method)m), &back), MDNL_OK);
        cr_expect_eq(back, m);
    }
    mdnl_method x;
    cr_expect_eq(mdnl_method_parse("verlet", &x), MDNL_ERR_USAGE);
    cr_expect(strstr(mdnl_last_error(), "verlet") != NULL);
}

/* A random frame large enough for the parallel counting sort (at least 65536
 * atoms; ~45 half pairs an atom, full rows beyond 64 keys that the quicksort
 * splits before the network): the cell list and both lists must not
 * depend on the number of threads, and the cells must list their atoms in
 * ascending index. */
Test(nlist_cpu, cell_list_and_lists_are_the_same_on_one_and_three_threads)
{
    const box_case bc = {"liquid_70k", 70000, {{36, 0, 0}, {0, 37, 0}, {0, 0, 38}}, {1, 1, 1}, true, 2.5};
    mdnl_frame f;
    random_frame(&bc, 20261125, &f);
    mdnl_geom g;
    float(*pos4)[4] = malloc((size_t)f.natoms * sizeof *pos4);
    cr_assert_eq(mdnl_geom_prepare(&f, bc.cutoff, &g, pos4), MDNL_OK, "%s", mdnl_last_error());
    const int threads0 = omp_get_max_threads();
    mdnl_cells_cpu c1 = {0}, c3 = {0};
    mdnl_nlist half[2] = {{0}}, full[2] = {{0}};
    for (int run = 0; run < 2; ++run) {
        omp_set_num_threads(run ? 3 : 1);
        cr_assert_eq(mdnl_cells_cpu_build(&g, (const float(*)[4])pos4, run ? &c3 : &c1), MDNL_OK, "%s",
                     mdnl_last_error());
        cr_assert_eq(mdnl_nlist_build_cpu(&g, (const float(*)[4])pos4, MDNL_METHOD_CELL, MDNL_LIST_HALF, &half[run]),
                     MDNL_OK, "%s", mdnl_last_error());
        cr_assert_eq(mdnl_nlist_build_cpu(&g, (const float(*)[4])pos4, MDNL_METHOD_CELL, MDNL_LIST_FULL, &full[run]),
                     MDNL_OK, "%s", mdnl_last_error());
    }
    omp_set_num_threads(threads0);
    cr_assert_eq(c1.ncells, c3.ncells);
    cr_assert_gt(c1.ncells, 1000, "the grid has %lld cells", (long long)c1.ncells);
    cr_assert(memcmp(c1.start, c3.start, (size_t)(c1.ncells + 1) * sizeof *c1.start) == 0, "cell offsets differ");
    cr_assert(memcmp(c1.atoms, c3.atoms, (size_t)f.natoms * sizeof *c1.atoms) == 0, "cell order differs");
    cr_assert(memcmp(c1.x, c3.x, (size_t)f.natoms * sizeof *c1.x) == 0, "cell-order positions differ");
    cr_assert_eq(c3.start[c3.ncells], f.natoms);
    for (int64_t cell = 0; cell < c3.ncells; ++cell)
        for (int64_t k = c3.start[cell]; k < c3.start[cell + 1]; ++k) {
            cr_assert_eq(c3.cell_of[c3.atoms[k]], cell, "atom %d listed in cell %lld", c3.atoms[k], (long long)cell);
            if (k > c3.start[cell])
                cr_assert_lt(c3.atoms[k - 1], c3.atoms[k], "cell %lld: atoms not ascending", (long long)cell);
        }
    expect_same_list(&half[0], &half[1], "half list, 1 vs 3 threads");
    expect_same_list(&full[0], &full[1], "full list, 1 vs 3 threads");
    cr_expect_eq(half[1].npairs * 2, full[1].npairs);
    mdnl_cells_cpu_free(&c1);
    mdnl_cells_cpu_free(&c3);
    for (int run = 0; run < 2; ++run) {
        mdnl_nlist_free(&half[run]);
        mdnl_nlist_free(&full[run]);
    }
    free(pos4);
    mdnl_frame_free(&f);
}

/* The row buffers kept from frame to frame (mdnl_nlist_build_cpu_kept, what
 * the engine uses): a sequence of frames of different sizes, list kinds and
 * thread counts, each list equal to a fresh build's; the kept buffers grow
 * to the largest frame and are reused, in place, for the smaller ones. */
Test(nlist_cpu, kept_row_buffers_give_the_fresh_lists_frame_after_frame)
{
    const box_case small = {"small", 3000, {{14, 0, 0}, {0, 15, 0}, {0, 0, 16}}, {1, 1, 1}, true, 2.5};
    const box_case large = {"large", 30000, {{30, 0, 0}, {3, 31, 0}, {-2, 1, 32}}, {1, 1, 1}, true, 2.5};
    const struct {
        const box_case *bc;
        mdnl_list_kind kind;
        int threads;
    } seq[] = {{&small, MDNL_LIST_HALF, 2}, {&large, MDNL_LIST_FULL, 2}, {&small, MDNL_LIST_FULL, 2},
               {&large, MDNL_LIST_HALF, 3}, {&small, MDNL_LIST_HALF, 1}, {&large, MDNL_LIST_FULL, 1}};
    const int threads0 = omp_get_max_threads();
    mdnl_nlist_cpu_kept kept = {0};
    mdnl_nlist kl = {0}; /* reused too, as `mdnl neighbors` reuses its list */
    for (size_t s = 0; s < sizeof seq / sizeof seq[0]; ++s) {
        omp_set_num_threads(seq[s].threads);
        mdnl_frame f;
        random_frame(seq[s].bc, 1000 + s, &f);
        mdnl_geom g;
        float(*pos4)[4] = malloc((size_t)f.natoms * sizeof *pos4);
        cr_assert_eq(mdnl_geom_prepare(&f, seq[s].bc->cutoff, &g, pos4), MDNL_OK, "%s", mdnl_last_error());
        mdnl_nlist fresh = {0};
        cr_assert_eq(mdnl_nlist_build_cpu(&g, (const float(*)[4])pos4, MDNL_METHOD_CELL, seq[s].kind, &fresh), MDNL_OK,
                     "%s", mdnl_last_error());
        cr_assert_eq(mdnl_nlist_build_cpu_kept(&kept, &g, (const float(*)[4])pos4, MDNL_METHOD_CELL, seq[s].kind, &kl),
                     MDNL_OK, "%s", mdnl_last_error());
        char what[64];
        snprintf(what, sizeof what, "frame %zu (%s, %d threads)", s, seq[s].bc->name, seq[s].threads);
        cr_assert_gt(fresh.npairs, 1000, "%s", what);
        expect_same_list(&kl, &fresh, what);
        cr_assert_eq(kept.nthreads, seq[s].threads, "%s", what);
        mdnl_nlist_free(&fresh);
        free(pos4);
        mdnl_frame_free(&f);
    }
    omp_set_num_threads(threads0);
    mdnl_nlist_free(&kl);
    mdnl_nlist_cpu_kept_free(&kept);
    mdnl_nlist_cpu_kept_free(&kept); /* a second free is a no-op */
    cr_expect_null(kept.bufs);
}

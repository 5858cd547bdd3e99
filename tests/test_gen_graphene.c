/* test_gen_graphene.c — the periodic graphene generator (src/gen_graphene.c),
 * checked against the analytic shells of a perfect sheet by a brute-force
 * distance sum over all periodic images (no other module is involved). */
#include "gen_graphene.h"

#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

/* For every atom, counts neighbors (over all atoms and the images S in
 * {-1,0,1} on periodic axes) at distance d within tol of each shell.
 * The cells used below are wider than 2 x 2.84 A, so one image layer is all
 * that can be within the third shell. Fails on the first atom whose counts
 * are not want[]. Returns the number of pairs closer than the last shell
 * that belong to no shell (must be 0). */
static int check_shells(const mdnl_frame *f, const double shell[3], const int want[3], double tol)
{
    int strays = 0;
    const int smax[3] = {f->box.pbc[0] ? 1 : 0, f->box.pbc[1] ? 1 : 0, f->box.pbc[2] ? 1 : 0};
    for (int64_t i = 0; i < f->natoms; ++i) {
        int got[3] = {0, 0, 0};
        for (int64_t j = 0; j < f->natoms; ++j)
            for (int s0 = -smax[0]; s0 <= smax[0]; ++s0)
                for (int s1 = -smax[1]; s1 <= smax[1]; ++s1)
                    for (int s2 = -smax[2]; s2 <= smax[2]; ++s2) {
                        if (i == j && s0 == 0 && s1 == 0 && s2 == 0)
                            continue;
                        double d2 = 0;
                        for (int k = 0; k < 3; ++k) {
                            double dx = f->pos[j][k] - f->pos[i][k] + s0 * f->box.h[0][k] + s1 * f->box.h[1][k] +
                                        s2 * f->box.h[2][k];
                            d2 += dx * dx;
                        }
                        double d = sqrt(d2);
                        int in = 0;
                        for (int q = 0; q < 3; ++q)
                            if (fabs(d - shell[q]) < tol)
                                ++got[q], in = 1;
                        strays += !in && d < shell[2] + tol;
                    }
        cr_assert(got[0] == want[0] && got[1] == want[1] && got[2] == want[2],
                  "atom %lld: shells %d %d %d, expected %d %d %d", (long long)i, got[0], got[1], got[2], want[0],
                  want[1], want[2]);
    }
    return strays;
}

Test(gen_graphene, perfect_sheet_every_atom_has_3_6_3_neighbors_over_images)
{
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_gen_graphene(4, 3, 1.42, 0.0, 0, 20.0, &f), MDNL_OK, "%s", mdnl_last_error());
    cr_expect_eq(f.natoms, 48);
    cr_expect_eq(f.nspecies, 1);
    cr_expect_str_eq(f.symbols[0], "C");
    cr_expect(fabs(f.box.h[0][0] - 4 * 1.42 * sqrt(3.0)) < 1e-12, "a = %.15g", f.box.h[0][0]);
    cr_expect(fabs(f.box.h[1][1] - 3 * 3 * 1.42) < 1e-12, "b = %.15g", f.box.h[1][1]);
    cr_expect_eq(f.box.h[2][2], 20.0);
    cr_expect(f.box.has_lattice && f.box.pbc[0] && f.box.pbc[1] && !f.box.pbc[2]);
    cr_expect_eq(f.box.h[0][1], 0.0);
    cr_expect_eq(f.box.h[1][0], 0.0);
    for (int64_t i = 0; i < f.natoms; ++i) {
        cr_assert_eq(f.pos[i][2], 10.0, "sheet at z = vacuum/2");
        cr_assert(f.pos[i][0] >= 0 && f.pos[i][0] < f.box.h[0][0] && f.pos[i][1] >= 0 && f.pos[i][1] < f.box.h[1][1],
                  "atom %lld inside the cell", (long long)i);
    }
    const double shell[3] = {1.42, 1.42 * sqrt(3.0), 2.84};
    const int want[3] = {3, 6, 3};
    cr_expect_eq(check_shells(&f, shell, want, 1e-9), 0, "pairs between the shells");
    mdnl_frame_free(&f);
}

Test(gen_graphene, other_bond_length_and_one_cell_scale_the_shells)
{
    /* 1 x 1 cell: 4 atoms, a = 2.078 A. Here the nearest shells reach past
     * the first image layer in x (a < 2 * 2.4), so count with the bond
     * scaled down and the cell made wide enough instead: 6 x 2 cells. */
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_gen_graphene(1, 1, 1.2, 0.0, 0, 20.0, &f), MDNL_OK);
    cr_expect_eq(f.natoms, 4);
    cr_assert_eq(mdnl_gen_graphene(6, 2, 1.2, 0.0, 0, 12.0, &f), MDNL_OK);
    cr_expect_eq(f.natoms, 48);
    cr_expect_eq(f.box.h[2][2], 12.0);
    const double shell[3] = {1.2, 1.2 * sqrt(3.0), 2.4};
    const int want[3] = {3, 6, 3};
    cr_expect_eq(check_shells(&f, shell, want, 1e-9), 0);
    mdnl_frame_free(&f);
}

Test(gen_graphene, noise_is_seeded_deterministic_and_of_the_requested_width)
{
    mdnl_frame a = {0}, b = {0}, c = {0}, p = {0};
    cr_assert_eq(mdnl_gen_graphene(10, 10, 1.42, 0.05, 7, 20.0, &a), MDNL_OK);
    cr_assert_eq(mdnl_gen_graphene(10, 10, 1.42, 0.05, 7, 20.0, &b), MDNL_OK);
    cr_assert_eq(mdnl_gen_graphene(10, 10, 1.42, 0.05, 8, 20.0, &c), MDNL_OK);
    cr_assert_eq(mdnl_gen_graphene(10, 10, 1.42, 0.0, 7, 20.0, &p), MDNL_OK);
    cr_expect(memcmp(a.pos, b.pos, sizeof *a.pos * (size_t)a.natoms) == 0, "same seed, same sheet");
    cr_expect(memcmp(a.pos, c.pos, sizeof *a.pos * (size_t)a.natoms) != 0, "another seed, another sheet");
    double sum = 0, sum2 = 0;
    for (int64_t i = 0; i < a.natoms; ++i)
        for (int k = 0; k < 3; ++k) {
            double dx = a.pos[i][k] - p.pos[i][k];
            sum += dx;
            sum2 += dx * dx;
        }
    const double n = 3.0 * (double)a.natoms; /* 1200 samples: the sample std is within ~3% of 0.05 */
    const double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
    cr_expect(fabs(mean) < 0.006, "noise mean %g", mean);
    cr_expect(sd > 0.045 && sd < 0.055, "noise std %g for sigma 0.05", sd);
    /* The same sheet on every machine: the first atom of seed 7 is pinned
     * (splitmix64 is exact integer arithmetic; Box-Muller's log/cos may
     * differ by an ulp between libms, hence the 1e-12). */
    cr_expect(fabs(a.pos[0][0] - 0.068249614872861422) < 1e-12, "x %.17g", a.pos[0][0]);
    cr_expect(fabs(a.pos[0][1] - -0.019826198762690893) < 1e-12, "y %.17g", a.pos[0][1]);
    cr_expect(fabs(a.pos[0][2] - 10.000224926307991) < 1e-12, "z %.17g", a.pos[0][2]);
    mdnl_frame_free(&a);
    mdnl_frame_free(&b);
    mdnl_frame_free(&c);
    mdnl_frame_free(&p);
}

Test(gen_graphene, bad_arguments_are_usage_errors_naming_the_option)
{
    mdnl_frame f = {0};
    const struct {
        int64_t nx, ny;
        double bond, noise, vacuum;
        const char *option;
    } cases[] = {
        {0, 3, 1.42, 0, 20, "--nx"},         {3, -1, 1.42, 0, 20, "--ny"},
        {1LL << 40, 1LL << 40, 1.42, 0, 20, "--nx"}, /* nx * ny would overflow int64 */
        {100000, 100000, 1.42, 0, 20, "--nx"},       /* 4e10 atoms */
        {3, 3, -1, 0, 20, "--bond"},         {3, 3, NAN, 0, 20, "--bond"},
        {3, 3, INFINITY, 0, 20, "--bond"},   {3, 3, 1.42, -0.1, 20, "--noise"},
        {3, 3, 1.42, NAN, 20, "--noise"},    {3, 3, 1.42, 0, 0, "--vacuum"},
        {3, 3, 1.42, 0, NAN, "--vacuum"},
    };
    for (unsigned k = 0; k < sizeof cases / sizeof *cases; ++k) {
        mdnl_status st = mdnl_gen_graphene(cases[k].nx, cases[k].ny, cases[k].bond, cases[k].noise, 1,
                                           cases[k].vacuum, &f);
        cr_expect_eq(st, MDNL_ERR_USAGE, "case %u: status %d", k, st);
        cr_expect(strstr(mdnl_last_error(), cases[k].option) != NULL, "case %u: expected %s in: %s", k,
                  cases[k].option, mdnl_last_error());
    }
    cr_expect_eq(f.natoms, 0, "nothing was generated");
    mdnl_frame_free(&f);
}

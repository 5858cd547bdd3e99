/* test_pair_shift.c — the host post-pass of kernels/pair_shift.h
 * (mdnl_pair_shifts_cpu): the image shift S and vector D of every list entry.
 *
 * Oracle: an independent double-precision image sum over (i, j, S), in the
 * positions as given (partly outside the cell), on triclinic, partly
 * periodic and small (cutoff beyond half the box) frames, full and half
 * lists; pairs within 1e-5 of the cutoff, which float rounding may decide
 * either way, are left out of the comparison. ASE's ijdSD is the oracle of
 * the command line (tools/ase_shift_reference.py, ctest test_ase_shifts);
 * the CUDA twin is compared byte for byte in test_pair_shift_gpu.c. */
#include "nlist.h"
#include "pair_shift.h"
#include "shift_fixtures.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const shift_case cases[] = {
    {"triclinic", 60, {{6, 0, 0}, {1.2, 5.5, 0}, {-0.7, 0.9, 5.0}}, {true, true, true}, 2.3},
    {"triclinic periodic in x and z", 60, {{6, 0, 0}, {1.2, 5.5, 0}, {-0.7, 0.9, 5.0}}, {true, false, true}, 2.3},
    {"small cell, cutoff beyond half the box",
     4,
     {{2, 0, 0}, {0.5, 2.2, 0}, {0.3, -0.4, 2.4}},
     {true, true, true},
     3.1},
    {"open", 40, {{0}}, {false, false, false}, 2.0},
};

/* Positions with fractional s in [-0.6, 1.6): many atoms outside the cell. */
static void make_frame(const shift_case *c, uint64_t seed, mdnl_frame *f)
{
    shift_frame(c, seed, -0.6, 2.2, 6.0, f);
}

/* Whether the oracle finds (i, j, S) a pair: |r_j - r_i + S·h| < rc, clear of
 * the cutoff by 1e-5 (*near set when it is not). */
static bool oracle_pair(const mdnl_frame *f, int64_t i, int64_t j, const int S[3], double rc, bool *near)
{
    double d2 = 0;
    for (int a = 0; a < 3; ++a) {
        double v = f->pos[j][a] - f->pos[i][a];
        for (int k = 0; k < 3; ++k)
            v += S[k] * f->box.h[k][a];
        d2 += v * v;
    }
    *near = fabs(sqrt(d2) - rc) < 1e-5;
    return sqrt(d2) < rc;
}

static void check_case(const shift_case *c, mdnl_list_kind kind, uint64_t seed)
{
    mdnl_frame f;
    make_frame(c, seed, &f);
    mdnl_geom g;
    float(*pos4)[4] = malloc((size_t)(c->n + 1) * sizeof *pos4);
    cr_assert_not_null(pos4);
    cr_assert_eq(mdnl_geom_prepare(&f, c->rc, &g, pos4), MDNL_OK, "%s", mdnl_last_error());
    mdnl_nlist l = {0};
    cr_assert_eq(mdnl_nlist_build_cpu(&g, (const float(*)[4])pos4, MDNL_METHOD_CELL, kind, &l), MDNL_OK, "%s",
                 mdnl_last_error());
    int32_t(*S)[3] = malloc((size_t)(l.npairs + 1) * sizeof *S);
    double(*D)[3] = malloc((size_t)(l.npairs + 1) * sizeof *D);
    cr_assert(S && D);
    const int half = kind == MDNL_LIST_HALF;
    cr_assert_eq(mdnl_pair_shifts_cpu(&f, &g, (const float(*)[4])pos4, &l, half, S, D), MDNL_OK, "%s",
                 mdnl_last_error());
    const char *kn = half ? "half" : "full";
    /* Every entry: a pair of the oracle (or one at the cutoff), D its vector,
     * no (i, j, S) twice, the half rule kept. */
    int64_t found = 0;
    for (int64_t i = 0; i < l.natoms; ++i)
        for (int64_t k = l.offsets[i]; k < l.offsets[i + 1]; ++k) {
            const int64_t j = l.j[k];
            bool near;
            cr_assert(oracle_pair(&f, i, j, S[k], c->rc, &near) || near, "%s (%s): (%lld, %lld, %d %d %d) is no pair",
                      c->name, kn, (long long)i, (long long)j, S[k][0], S[k][1], S[k][2]);
            found += !near;
            for (int a = 0; a < 3; ++a) {
                double v = f.pos[j][a] - f.pos[i][a];
                for (int b = 0; b < 3; ++b)
                    v += S[k][b] * f.box.h[b][a];
                cr_assert(fabs(v - D[k][a]) <= 1e-12 * (1 + fabs(v)), "%s (%s): D[%lld][%d] = %.17g, expected %.17g",
                          c->name, kn, (long long)k, a, D[k][a], v);
            }
            const double dn = sqrt(D[k][0] * D[k][0] + D[k][1] * D[k][1] + D[k][2] * D[k][2]);
            cr_assert(fabs(dn - l.d[k]) <= 1e-5 * (1 + dn), "%s: |D| %.9g, d %.9g", c->name, dn, (double)l.d[k]);
            if (half)
                cr_assert(i < j || (i == j && mdnl_shift_positive(S[k][0], S[k][1], S[k][2])),
                          "%s: half-list entry (%lld, %lld, %d %d %d)", c->name, (long long)i, (long long)j, S[k][0],
                          S[k][1], S[k][2]);
            for (int64_t q = l.offsets[i]; q < k; ++q)
                cr_assert(!(l.j[q] == j && memcmp(S[q], S[k], sizeof S[k]) == 0), "%s (%s): (%lld, %lld) S twice",
                          c->name, kn, (long long)i, (long long)j);
        }
    /* Every pair of the oracle clear of the cutoff is an entry: the counts of
     * such pairs agree (entries are distinct and each is an oracle pair). */
    int64_t want = 0;
    const int m = 6; /* images enough for the cases' cutoffs and positions (|s| < 2.2 cells apart) */
    for (int64_t i = 0; i < f.natoms; ++i)
        for (int64_t j = half ? i : 0; j < f.natoms; ++j)
            for (int s0 = -m; s0 <= m; ++s0)
                for (int s1 = -m; s1 <= m; ++s1)
                    for (int s2 = -m; s2 <= m; ++s2) {
                        const int Sv[3] = {f.box.pbc[0] ? s0 : 0, f.box.pbc[1] ? s1 : 0, f.box.pbc[2] ? s2 : 0};
                        if ((!f.box.pbc[0] && s0) || (!f.box.pbc[1] && s1) || (!f.box.pbc[2] && s2))
                            continue;
                        if (i == j && !s0 && !s1 && !s2)
                            continue;
                        if (half && i == j && !mdnl_shift_positive(Sv[0], Sv[1], Sv[2]))
                            continue;
                        bool near;
                        want += oracle_pair(&f, i, j, Sv, c->rc, &near) && !near;
                    }
    cr_expect_eq(found, want, "%s (%s): %lld entries clear of the cutoff, the image sum has %lld", c->name, kn,
                 (long long)found, (long long)want);
    cr_expect(want > 0, "%s: the case has pairs", c->name);
    free(S);
    free(D);
    mdnl_nlist_free(&l);
    free(pos4);
    mdnl_frame_free(&f);
}

Test(pair_shift, full_and_half_lists_match_an_image_sum_in_the_given_positions)
{
    for (unsigned c = 0; c < sizeof cases / sizeof *cases; ++c)
        for (uint64_t seed = 1; seed <= 2; ++seed) {
            check_case(&cases[c], MDNL_LIST_FULL, seed * 31 + c);
            check_case(&cases[c], MDNL_LIST_HALF, seed * 31 + c);
        }
}

Test(pair_shift, without_D_only_S_is_written)
{
    mdnl_frame f;
    make_frame(&cases[0], 3, &f);
    mdnl_geom g;
    float(*pos4)[4] = malloc((size_t)(f.natoms + 1) * sizeof *pos4);
    cr_assert_eq(mdnl_geom_prepare(&f, cases[0].rc, &g, pos4), MDNL_OK);
    mdnl_nlist l = {0};
    cr_assert_eq(mdnl_nlist_build_cpu(&g, (const float(*)[4])pos4, MDNL_METHOD_CELL, MDNL_LIST_FULL, &l), MDNL_OK);
    int32_t(*S)[3] = malloc((size_t)(l.npairs + 1) * sizeof *S), (*S2)[3] = malloc((size_t)(l.npairs + 1) * sizeof *S2);
    double(*D)[3] = malloc((size_t)(l.npairs + 1) * sizeof *D);
    cr_assert(S && S2 && D && l.npairs > 0);
    cr_assert_eq(mdnl_pair_shifts_cpu(&f, &g, (const float(*)[4])pos4, &l, 0, S, D), MDNL_OK);
    cr_assert_eq(mdnl_pair_shifts_cpu(&f, &g, (const float(*)[4])pos4, &l, 0, S2, NULL), MDNL_OK);
    cr_expect(memcmp(S, S2, (size_t)l.npairs * sizeof *S) == 0, "S differs without D");
    free(S), free(S2), free(D);
    mdnl_nlist_free(&l);
    free(pos4);
    mdnl_frame_free(&f);
}

Test(pair_shift, an_atom_beyond_1e9_cells_is_an_input_error)
{
    mdnl_frame f;
    make_frame(&cases[0], 5, &f);
    f.pos[0][0] = 6.0 * 2e9; /* 2e9 cells along x: S would overflow int32 */
    mdnl_geom g;
    float(*pos4)[4] = malloc((size_t)(f.natoms + 1) * sizeof *pos4);
    cr_assert_eq(mdnl_geom_prepare(&f, cases[0].rc, &g, pos4), MDNL_OK, "%s", mdnl_last_error());
    mdnl_nlist l = {0};
    cr_assert_eq(mdnl_nlist_build_cpu(&g, (const float(*)[4])pos4, MDNL_METHOD_CELL, MDNL_LIST_FULL, &l), MDNL_OK);
    int32_t(*S)[3] = malloc((size_t)(l.npairs + 1) * sizeof *S);
    cr_assert_not_null(S);
    cr_expect_eq(mdnl_pair_shifts_cpu(&f, &g, (const float(*)[4])pos4, &l, 0, S, NULL), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "overflow int32") != NULL, "%s", mdnl_last_error());
    free(S);
    mdnl_nlist_free(&l);
    free(pos4);
    mdnl_frame_free(&f);
}

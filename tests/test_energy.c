/* test_energy.c — potential parsing and the CPU energy twin (energy.h):
 * analytic graphene shells, self images, fused == from-list == brute force,
 * per-atom sums, and LAMMPS `run 0` totals (data/energy/reference.txt). */
#include "energy.h"
#include "energy_fixtures.h"
#include "nlist.h"
#include "potential.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- parsing ---- */

Test(potential, lj_spec_parses_with_shift_by_default)
{
    mdnl_potential p;
    cr_assert_eq(mdnl_potential_parse("lj:epsilon=2,sigma=1.5", 3.0, &p), MDNL_OK, "%s", mdnl_last_error());
    cr_expect_eq(p.kind, MDNL_POTENTIAL_LJ);
    cr_expect_eq(p.epsilon, 2.0);
    cr_expect_eq(p.sigma, 1.5);
    cr_expect_eq(p.shift, 1);
    double sr6 = pow(1.5 / 3.0, 6);
    cr_expect(fabs(p.offset - 8.0 * (sr6 * sr6 - sr6)) < 1e-15, "offset %.17g", p.offset);
    /* shifted energy vanishes at the cutoff, not below it */
    cr_expect(fabs(mdnl_pair_energy_d(&p, 3.0f)) < 1e-15);
    cr_expect(fabs(mdnl_pair_energy_d(&p, 1.5f) - (0.0 - p.offset)) < 1e-15);
}

Test(potential, morse_spec_parses_and_shift_no_gives_zero_offset)
{
    mdnl_potential p;
    cr_assert_eq(mdnl_potential_parse("morse:d0=6,alpha=1.8,r0=1.42,shift=no", 3.0, &p), MDNL_OK, "%s",
                 mdnl_last_error());
    cr_expect_eq(p.kind, MDNL_POTENTIAL_MORSE);
    cr_expect_eq(p.d0, 6.0);
    cr_expect_eq(p.alpha, 1.8);
    cr_expect_eq(p.r0, 1.42);
    cr_expect_eq(p.shift, 0);
    cr_expect_eq(p.offset, 0.0);
    /* the minimum is -d0 at r0 */
    cr_expect(fabs(mdnl_pair_energy_d(&p, 1.42f) + 6.0) < 1e-6, "%.17g", mdnl_pair_energy_d(&p, 1.42f));
    /* the parameters may come in any order */
    mdnl_potential q;
    cr_assert_eq(mdnl_potential_parse("morse:r0=1.42,shift=no,alpha=1.8,d0=6", 3.0, &q), MDNL_OK);
    cr_expect_eq(memcmp(&p, &q, sizeof p), 0);
}

Test(potential, lj_matches_lammps_formula_at_two_to_the_sixth)
{
    mdnl_potential p;
    cr_assert_eq(mdnl_potential_parse("lj:epsilon=1,sigma=1,shift=no", 2.5, &p), MDNL_OK);
    /* the minimum -epsilon at 2^(1/6) sigma, to float rounding of r */
    float rmin = (float)pow(2.0, 1.0 / 6.0);
    cr_expect(fabs(mdnl_pair_energy(&p, rmin * rmin) + 1.0) < 1e-12, "%.17g", mdnl_pair_energy(&p, rmin * rmin));
    cr_expect(fabs(mdnl_pair_energy_d(&p, 1.0f)) < 1e-15, "U(sigma) = 0");
}

typedef struct bad_spec {
    const char *spec;
    const char *message; /* a substring the error must contain */
} bad_spec;

Test(potential, every_bad_spec_is_a_usage_error_naming_the_parameter)
{
    static const bad_spec bad[] = {
        {"lj:epsilon=1,sigma=-1", "lj needs sigma > 0, got \"-1\""},
        {"lj:epsilon=1,sigma=0", "lj needs sigma > 0, got \"0\""},
        {"lj:epsilon=-2,sigma=1", "lj needs epsilon > 0, got \"-2\""},
        {"lj:epsilon=nan,sigma=1", "lj needs epsilon > 0, got \"nan\""},
        {"lj:epsilon=inf,sigma=1", "lj needs epsilon > 0, got \"inf\""},
        {"lj:epsilon=1x,sigma=1", "lj needs epsilon > 0, got \"1x\""},
        {"lj:epsilon=,sigma=1", "lj needs epsilon > 0, got \"\""},
        {"lj:epsilon=1", "lj needs sigma > 0, got none"},
        {"lj:sigma=1", "lj needs epsilon > 0, got none"},
        {"lj", "lj needs epsilon > 0, got none"},
        {"lj:", "lj needs epsilon > 0, got none"},
        {"lj:epsilon=1,sigma=1,sigma=2", "lj parameter sigma given twice"},
        {"lj:epsilon=1,sigma=1,d0=1", "lj has no parameter \"d0\""},
        {"lj:epsilon=1,sigma=1,shift=maybe", "lj needs shift=yes or shift=no, got \"maybe\""},
        {"lj:epsilon=1,sigma=1,shift=yes,shift=no", "lj parameter shift given twice"},
        {"lj:epsilon=1,sigma", "lj expected NAME=VALUE, got \"sigma\""},
        {"lj:epsilon=1,sigma=1,", "after the last ','"},
        {"morse:d0=1,alpha=1", "morse needs r0 > 0, got none"},
        {"morse:d0=1,alpha=NaN,r0=1", "morse needs alpha > 0, got \"NaN\""},
        {"morse:d0=-1,alpha=1,r0=1", "morse needs d0 > 0, got \"-1\""},
        {"morse:d0=1,alpha=1,r0=1,epsilon=1", "morse has no parameter \"epsilon\""},
        {"buckingham:a=1", "expected a potential lj or morse, got \"buckingham\""},
        {"", "expected a potential lj or morse, got \"\""},
        {"LJ:epsilon=1,sigma=1", "got \"LJ\""},
        {"lj:epsilon=1e308,sigma=1e308", "overflow"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; ++k) {
        mdnl_potential p;
        memset(&p, 0x5a, sizeof p);
        mdnl_potential before = p;
        mdnl_clear_error();
        mdnl_status st = mdnl_potential_parse(bad[k].spec, 2.5, &p);
        cr_expect_eq(st, MDNL_ERR_USAGE, "\"%s\" gave status %d", bad[k].spec, (int)st);
        cr_expect(strstr(mdnl_last_error(), bad[k].message) != NULL, "\"%s\": message \"%s\" lacks \"%s\"",
                  bad[k].spec, mdnl_last_error(), bad[k].message);
        cr_expect(strncmp(mdnl_last_error(), "--pair: ", 8) == 0, "\"%s\"", mdnl_last_error());
        cr_expect_eq(memcmp(&p, &before, sizeof p), 0, "\"%s\": output written on failure", bad[k].spec);
    }
}

Test(potential, bad_cutoff_is_a_usage_error)
{
    mdnl_potential p;
    cr_expect_eq(mdnl_potential_parse("lj:epsilon=1,sigma=1", 0.0, &p), MDNL_ERR_USAGE);
    cr_expect_eq(mdnl_potential_parse("lj:epsilon=1,sigma=1", NAN, &p), MDNL_ERR_USAGE);
    cr_expect_eq(mdnl_potential_parse(NULL, 1.0, &p), MDNL_ERR_USAGE);
}

/* ---- analytic graphene ---- */

/* Energy of one perfect-graphene atom with cutoff 3.0: half of 3 u(d) + 6 u(d sqrt 3) + 3 u(2d),
 * evaluated in double at the exact distances; also the matching sum of |u|.
 * mdnl sees float positions (about 1e-6 Å off at 30 Å from the origin), so a
 * single atom's energy of a steep potential is held to 2e-5 of its sum |u|
 * while the total, where those errors cancel, is held to SPEC's 1e-6. */
static void graphene_atom_energy(const mdnl_potential *p, double *e, double *abs_e)
{
    const double d = GRAPHENE_BOND;
    const double r[3] = {d, d * sqrt(3.0), 2.0 * d};
    const int count[3] = {3, 6, 3};
    *e = *abs_e = 0.0;
    for (int s = 0; s < 3; ++s) {
        double u = mdnl_potential_raw(p, r[s]) - p->offset;
        *e += 0.5 * count[s] * u;
        *abs_e += 0.5 * count[s] * fabs(u);
    }
}

static void check_graphene(const char *spec)
{
    mdnl_frame f = fixture_graphene(6, 4);
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, 3.0, &pos4);
    mdnl_potential p;
    cr_assert_eq(mdnl_potential_parse(spec, 3.0, &p), MDNL_OK, "%s", mdnl_last_error());
    double e_atom, abs_atom;
    graphene_atom_energy(&p, &e_atom, &abs_atom);
    double *per = malloc((size_t)f.natoms * sizeof *per);
    double total = 0;
    cr_assert_eq(mdnl_energy_frame_cpu(&g, (const float(*)[4])pos4, &p, &total, per), MDNL_OK, "%s",
                 mdnl_last_error());
    const double want = e_atom * (double)f.natoms, scale = abs_atom * (double)f.natoms;
    cr_expect(fabs(total - want) <= 1e-6 * scale, "%s: total %.12g, shells by hand %.12g (scale %.6g)", spec, total,
              want, scale);
    for (int64_t i = 0; i < f.natoms; ++i)
        cr_expect(fabs(per[i] - e_atom) <= 2e-5 * abs_atom, "%s: atom %lld has %.12g, want %.12g", spec,
                  (long long)i, per[i], e_atom);
    free(per);
    free(pos4);
    mdnl_frame_free(&f);
}

Test(energy_cpu, graphene_morse_equals_shell_sum_by_hand)
{
    check_graphene("morse:d0=6.0,alpha=1.8,r0=1.42");
    check_graphene("morse:d0=6.0,alpha=1.8,r0=1.42,shift=no");
}

Test(energy_cpu, graphene_lj_equals_shell_sum_by_hand)
{
    check_graphene("lj:epsilon=1,sigma=1.265");
    check_graphene("lj:epsilon=0.5,sigma=2.0,shift=no");
}

/* One atom in a cubic box of side 1 with cutoff 2.5: every pair is a self
 * image (i, i, S != 0), and the atom's energy is half the sum over
 * |S| < 2.5 of u(|S|), as LAMMPS counts it. */
Test(energy_cpu, self_images_count_half_each_like_lammps)
{
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, 1), MDNL_OK);
    f.natoms = 1;
    f.pos[0][0] = 0.3, f.pos[0][1] = 0.6, f.pos[0][2] = 0.1;
    f.species[0] = mdnl_frame_species_id(&f, "Ar", 2);
    f.box.has_lattice = true;
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 1.0;
    f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, 2.5, &pos4);
    mdnl_potential p;
    cr_assert_eq(mdnl_potential_parse("lj:epsilon=1,sigma=0.9", 2.5, &p), MDNL_OK);
    double want = 0;
    int images = 0;
    for (int a = -3; a <= 3; ++a)
        for (int b = -3; b <= 3; ++b)
            for (int c = -3; c <= 3; ++c) {
                /* image vectors are exact in float; a pair's energy is that
                 * of its float distance (potential.h) */
                float r2 = (float)(a * a + b * b + c * c);
                if (r2 > 0 && r2 < 6.25f)
                    want += 0.5 * mdnl_pair_energy_d(&p, sqrtf(r2)), ++images;
            }
    cr_assert_eq(images, 80, "self images within 2.5 of a unit cube lattice: %d", images);
    double total = 0, per = 0, brute = 0;
    cr_assert_eq(mdnl_energy_frame_cpu(&g, (const float(*)[4])pos4, &p, &total, &per), MDNL_OK);
    cr_assert_eq(mdnl_energy_brute_cpu(&g, (const float(*)[4])pos4, &p, &brute, NULL), MDNL_OK);
    cr_expect(fabs(total - want) < 1e-12 * fabs(want), "fused %.15g, by hand %.15g", total, want);
    cr_expect(fabs(brute - want) < 1e-12 * fabs(want), "brute %.15g, by hand %.15g", brute, want);
    cr_expect_eq(per, total);
    /* the half list holds each +-S pair once as an (i, i) row entry, the full list both */
    mdnl_nlist half = {0}, full = {0};
    cr_assert_eq(mdnl_nlist_build_cpu(&g, (const float(*)[4])pos4, MDNL_METHOD_CELL, MDNL_LIST_HALF, &half), MDNL_OK);
    cr_assert_eq(mdnl_nlist_build_cpu(&g, (const float(*)[4])pos4, MDNL_METHOD_CELL, MDNL_LIST_FULL, &full), MDNL_OK);
    cr_expect_eq(half.npairs, 40);
    cr_expect_eq(full.npairs, 80);
    double th = 0, tf = 0;
    cr_assert_eq(mdnl_energy_list_cpu(&half, MDNL_LIST_HALF, &p, &th, NULL), MDNL_OK);
    cr_assert_eq(mdnl_energy_list_cpu(&full, MDNL_LIST_FULL, &p, &tf, NULL), MDNL_OK);
    cr_expect(fabs(th - want) < 1e-12 * fabs(want), "half list %.15g, by hand %.15g", th, want);
    cr_expect(fabs(tf - want) < 1e-12 * fabs(want), "full list %.15g, by hand %.15g", tf, want);
    mdnl_nlist_free(&half);
    mdnl_nlist_free(&full);
    free(pos4);
    mdnl_frame_free(&f);
}

/* ---- paths agree ---- */

static void check_paths_agree(const char *fixture, double cutoff, const char *spec)
{
    mdnl_frame f = fixture_load(fixture);
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, cutoff, &pos4);
    const float(*cpos)[4] = (const float(*)[4])pos4;
    mdnl_potential p;
    cr_assert_eq(mdnl_potential_parse(spec, cutoff, &p), MDNL_OK);
    const int64_t n = f.natoms;
    double *e_fused = malloc((size_t)n * sizeof(double)), *e_full = malloc((size_t)n * sizeof(double));
    double *e_half = malloc((size_t)n * sizeof(double)), *e_brute = malloc((size_t)n * sizeof(double));
    double t_fused, t_full, t_half, t_brute, t_fused_nopa;
    cr_assert_eq(mdnl_energy_frame_cpu(&g, cpos, &p, &t_fused, e_fused), MDNL_OK);
    cr_assert_eq(mdnl_energy_frame_cpu(&g, cpos, &p, &t_fused_nopa, NULL), MDNL_OK);
    cr_assert_eq(mdnl_energy_brute_cpu(&g, cpos, &p, &t_brute, e_brute), MDNL_OK);
    mdnl_nlist half = {0}, full = {0};
    cr_assert_eq(mdnl_nlist_build_cpu(&g, cpos, MDNL_METHOD_CELL, MDNL_LIST_HALF, &half), MDNL_OK);
    cr_assert_eq(mdnl_nlist_build_cpu(&g, cpos, MDNL_METHOD_CELL, MDNL_LIST_FULL, &full), MDNL_OK);
    cr_assert_eq(mdnl_energy_list_cpu(&full, MDNL_LIST_FULL, &p, &t_full, e_full), MDNL_OK);
    cr_assert_eq(mdnl_energy_list_cpu(&half, MDNL_LIST_HALF, &p, &t_half, e_half), MDNL_OK);
    const double scale = fixture_sum_abs(&half, &p);
    cr_assert(scale > 0, "%s: no pairs", fixture);
    const double tol = 1e-12 * scale;
    cr_expect_eq(t_fused, t_fused_nopa, "per-atom output must not change the total");
    cr_expect(fabs(t_fused - t_full) <= tol, "%s %s: fused %.17g, full list %.17g", fixture, spec, t_fused, t_full);
    cr_expect(fabs(t_fused - t_half) <= tol, "%s %s: fused %.17g, half list %.17g", fixture, spec, t_fused, t_half);
    cr_expect(fabs(t_fused - t_brute) <= tol, "%s %s: fused %.17g, brute %.17g", fixture, spec, t_fused, t_brute);
    double s_fused = 0, s_half = 0;
    for (int64_t i = 0; i < n; ++i) {
        s_fused += e_fused[i], s_half += e_half[i];
        double at = 1e-12 * (fabs(e_fused[i]) + 1.0);
        cr_expect(fabs(e_fused[i] - e_full[i]) <= at && fabs(e_fused[i] - e_half[i]) <= at &&
                      fabs(e_fused[i] - e_brute[i]) <= at,
                  "%s: atom %lld fused %.17g full %.17g half %.17g brute %.17g", fixture, (long long)i, e_fused[i],
                  e_full[i], e_half[i], e_brute[i]);
    }
    cr_expect_eq(s_fused, t_fused, "per-atom energies sum (in atom order) to the total");
    cr_expect_eq(s_half, t_half);
    mdnl_nlist_free(&half);
    mdnl_nlist_free(&full);
    free(e_fused), free(e_full), free(e_half), free(e_brute);
    free(pos4);
    mdnl_frame_free(&f);
}

Test(energy_cpu, graphene_noisy_fused_equals_lists_and_brute)
{
    check_paths_agree("graphene_noisy", 3.0, "morse:d0=6.0,alpha=1.8,r0=1.42");
    check_paths_agree("graphene_noisy", 3.0, "lj:epsilon=1,sigma=1.265,shift=no");
}

Test(energy_cpu, lj_liquid_fused_equals_lists_and_brute)
{
    check_paths_agree("lj_liquid", 2.5, "lj:epsilon=1,sigma=1");
    /* a cutoff beyond half the box: images past the nearest count */
    check_paths_agree("lj_liquid", 7.5, "lj:epsilon=1,sigma=1");
}

/* ---- LAMMPS ---- */

Test(energy_cpu, totals_agree_with_lammps_run0)
{
    reference_case ref[16];
    int n = fixture_references(ref, 16);
    cr_assert(n >= 5, "reference.txt has %d cases", n);
    for (int k = 0; k < n; ++k) {
        mdnl_frame f = fixture_load(ref[k].fixture);
        float(*pos4)[4];
        mdnl_geom g = fixture_prepare(&f, ref[k].cutoff, &pos4);
        mdnl_potential p;
        cr_assert_eq(mdnl_potential_parse(ref[k].spec, ref[k].cutoff, &p), MDNL_OK, "%s", mdnl_last_error());
        double total;
        cr_assert_eq(mdnl_energy_frame_cpu(&g, (const float(*)[4])pos4, &p, &total, NULL), MDNL_OK);
        mdnl_nlist half = {0};
        cr_assert_eq(mdnl_nlist_build_cpu(&g, (const float(*)[4])pos4, MDNL_METHOD_CELL, MDNL_LIST_HALF, &half),
                     MDNL_OK);
        double scale = fixture_sum_abs(&half, &p);
        double rel = fabs(total - ref[k].pe) / scale;
        cr_log_info("LAMMPS %s %s: lammps %.12f mdnl %.12f |diff|/sum|u| %.2e", ref[k].fixture, ref[k].spec,
                    ref[k].pe, total, rel);
        cr_expect(rel <= 1e-6, "%s %s: mdnl %.12f, LAMMPS %.12f, off by %.2e of sum |u| = %.6g", ref[k].fixture,
                  ref[k].spec, total, ref[k].pe, rel, scale);
        mdnl_nlist_free(&half);
        free(pos4);
        mdnl_frame_free(&f);
    }
}

/* ---- edges ---- */

Test(energy_cpu, zero_atoms_give_zero)
{
    mdnl_frame f = {0};
    f.box.has_lattice = true;
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 5.0;
    f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, 2.5, &pos4);
    mdnl_potential p;
    cr_assert_eq(mdnl_potential_parse("lj:epsilon=1,sigma=1", 2.5, &p), MDNL_OK);
    double total = 42;
    cr_expect_eq(mdnl_energy_frame_cpu(&g, (const float(*)[4])pos4, &p, &total, NULL), MDNL_OK);
    cr_expect_eq(total, 0.0);
    mdnl_nlist l = {0};
    cr_assert_eq(mdnl_nlist_reserve(&l, 0, 0), MDNL_OK);
    l.offsets[0] = 0;
    total = 42;
    cr_expect_eq(mdnl_energy_list_cpu(&l, MDNL_LIST_HALF, &p, &total, NULL), MDNL_OK);
    cr_expect_eq(total, 0.0);
    mdnl_nlist_free(&l);
    free(pos4);
    mdnl_frame_free(&f);
}

Test(energy_cpu, potential_cutoff_must_match_geometry)
{
    mdnl_frame f = fixture_graphene(2, 2);
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, 3.0, &pos4);
    mdnl_potential p;
    cr_assert_eq(mdnl_potential_parse("lj:epsilon=1,sigma=1", 2.5, &p), MDNL_OK);
    double total;
    cr_expect_eq(mdnl_energy_frame_cpu(&g, (const float(*)[4])pos4, &p, &total, NULL), MDNL_ERR_USAGE);
    cr_expect(strstr(mdnl_last_error(), "cutoff") != NULL, "%s", mdnl_last_error());
    free(pos4);
    mdnl_frame_free(&f);
}

/* ---- per-pair parameters (--pair-coeff) ---- */

static mdnl_pair_table table_of(const char *spec, const char *const *coeffs, int n, double cutoff)
{
    mdnl_pair_table t;
    cr_assert_eq(mdnl_pair_table_parse(spec, coeffs, n, cutoff, &t), MDNL_OK, "%s", mdnl_last_error());
    return t;
}

Test(potential, pair_table_mixes_unset_pairs_as_lammps)
{
    const char *bb[] = {"B-B:epsilon=0.5,sigma=0.88,cut=2.2"};
    for (int arith = 0; arith < 2; ++arith) {
        mdnl_pair_table t = table_of(arith ? "lj:epsilon=1,sigma=1,mix=arithmetic" : "lj:epsilon=1,sigma=1", bb, 1,
                                     2.5);
        cr_assert_eq(t.ntypes, 2); /* the others (A), B */
        cr_expect_str_eq(t.names[1], "B");
        const mdnl_potential *ab = &t.p[0 * 2 + 1], *ba = &t.p[1 * 2 + 0], *b = &t.p[3], *a = &t.p[0];
        cr_expect_eq(memcmp(ab, ba, sizeof *ab), 0, "the table is symmetric");
        cr_expect_eq(ab->epsilon, sqrt(0.5));
        cr_expect_eq(ab->sigma, arith ? 0.5 * (1.0 + 0.88) : sqrt(0.88));
        cr_expect_eq(ab->cutoff, arith ? 0.5 * (2.5 + 2.2) : sqrt(2.5 * 2.2));
        cr_expect_eq(b->epsilon, 0.5);
        cr_expect_eq(b->cutoff, 2.2);
        cr_expect_eq(a->cutoff, 2.5);
        cr_expect_eq(t.max_cutoff, 2.5);
        cr_expect_eq(t.cut2[3], (float)(2.2 * 2.2));
        /* each pair shifted at its own cutoff, zero beyond it */
        const float below = nextafterf(t.cut2[3], 0.0f);
        cr_expect(fabs(mdnl_pair_table_energy(&t, 1, 1, below)) < 1e-6, "B-B at its cutoff: %g",
                  mdnl_pair_table_energy(&t, 1, 1, below));
        cr_expect_eq(mdnl_pair_table_energy(&t, 1, 1, t.cut2[3]), 0.0);
        cr_expect_neq(mdnl_pair_table_energy(&t, 0, 0, t.cut2[3]), 0.0, "A-A still counts at 2.2");
    }
}

Test(potential, pair_table_without_coeffs_is_the_single_potential)
{
    mdnl_pair_table t = table_of("lj:epsilon=2,sigma=1.5,shift=no", NULL, 0, 3.0);
    mdnl_potential p;
    cr_assert_eq(mdnl_potential_parse("lj:epsilon=2,sigma=1.5,shift=no", 3.0, &p), MDNL_OK);
    cr_expect_eq(t.ntypes, 1);
    cr_expect_eq(memcmp(&t.p[0], &p, sizeof p), 0);
    cr_expect_eq(t.max_cutoff, 3.0);
    /* cut= in the --pair spec sets the cutoff of every pair */
    t = table_of("lj:epsilon=2,sigma=1.5,cut=2.0", NULL, 0, 3.0);
    cr_expect_eq(t.max_cutoff, 2.0);
    cr_expect_eq(t.p[0].cutoff, 2.0);
}

Test(potential, pair_table_bad_specs_are_usage_errors)
{
    struct {
        const char *spec, *coeff;
    } bad[] = {
        {"lj:epsilon=1,sigma=1,mix=sixthpower", NULL},
        {"lj:epsilon=1,sigma=1,cut=0", NULL},
        {"lj:epsilon=1,sigma=1,cut=-1", NULL},
        {"lj:epsilon=1,sigma=1,cut=1,cut=2", NULL},
        {"lj:epsilon=1,sigma=1", "AB:epsilon=1,sigma=1"},
        {"lj:epsilon=1,sigma=1", "A-:epsilon=1,sigma=1"},
        {"lj:epsilon=1,sigma=1", "-B:epsilon=1,sigma=1"},
        {"lj:epsilon=1,sigma=1", "A-B-C:epsilon=1,sigma=1"},
        {"lj:epsilon=1,sigma=1", "A-B"},
        {"lj:epsilon=1,sigma=1", "A-B:epsilon=1"},
        {"lj:epsilon=1,sigma=1", "A-B:epsilon=1,sigma=1,d0=1"},
        {"lj:epsilon=1,sigma=1", "A-B:epsilon=1,sigma=1,cut=nan"},
        {"lj:epsilon=1,sigma=1", "A-B:epsilon=1,sigma=1,mix=arithmetic"},
        {"lj:epsilon=1,sigma=1", "A-B:epsilon=-1,sigma=1"},
        {"morse:d0=1,alpha=1,r0=1", "A-B:epsilon=1,sigma=1"},
        {"lj:epsilon=1,sigma=1", "ABCDEFGHIJKLMNOPQRSTUVWXYZ-B:epsilon=1,sigma=1"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof *bad; ++k) {
        mdnl_pair_table t;
        const char *c[] = {bad[k].coeff};
        cr_expect_eq(mdnl_pair_table_parse(bad[k].spec, c, bad[k].coeff ? 1 : 0, 2.5, &t), MDNL_ERR_USAGE,
                     "%s %s accepted", bad[k].spec, bad[k].coeff ? bad[k].coeff : "");
    }
    /* a pair given twice (in either order), and a fourth species */
    mdnl_pair_table t;
    const char *twice[] = {"A-B:epsilon=1,sigma=1", "B-A:epsilon=2,sigma=1"};
    cr_expect_eq(mdnl_pair_table_parse("lj:epsilon=1,sigma=1", twice, 2, 2.5, &t), MDNL_ERR_USAGE);
    cr_expect(strstr(mdnl_last_error(), "twice") != NULL, "%s", mdnl_last_error());
    const char *four[] = {"A-B:epsilon=1,sigma=1", "C-D:epsilon=2,sigma=1"};
    cr_expect_eq(mdnl_pair_table_parse("lj:epsilon=1,sigma=1", four, 2, 2.5, &t), MDNL_ERR_USAGE);
}

Test(potential, pair_table_species_missing_from_the_frame_is_an_input_error)
{
    const char *c[] = {"A-Z:epsilon=1,sigma=1"};
    mdnl_pair_table t = table_of("lj:epsilon=1,sigma=1", c, 1, 2.5);
    mdnl_frame f = fixture_load("ka_mixture");
    int32_t *types = malloc((size_t)f.natoms * sizeof *types);
    cr_expect_eq(mdnl_pair_table_types(&t, "ka.xyz", &f, types), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "species Z") != NULL, "%s", mdnl_last_error());
    free(types);
    mdnl_frame_free(&f);
}

/* Brute force over every j and image: the oracle of the table traversal. */
static void table_brute(const mdnl_geom *g, const float (*pos4)[4], const int32_t *types, const mdnl_pair_table *t,
                        double *e)
{
    const int m0 = g->pbc[0] ? g->image_max[0] : 0, m1 = g->pbc[1] ? g->image_max[1] : 0,
              m2 = g->pbc[2] ? g->image_max[2] : 0;
    for (int64_t i = 0; i < g->natoms; ++i) {
        double s = 0.0;
        for (int64_t j = 0; j < g->natoms; ++j)
            for (int s0 = -m0; s0 <= m0; ++s0)
                for (int s1 = -m1; s1 <= m1; ++s1)
                    for (int s2 = -m2; s2 <= m2; ++s2) {
                        if (j == i && !s0 && !s1 && !s2)
                            continue;
                        float v[3];
                        mdnl_shift_vector(g, s0, s1, s2, v);
                        float d2 = mdnl_pair_d2(pos4[i][0], pos4[i][1], pos4[i][2], pos4[j][0], pos4[j][1],
                                                pos4[j][2], v);
                        if (d2 < g->cutoff2)
                            s += mdnl_pair_table_energy(t, types[i], types[j], d2);
                    }
        e[i] = 0.5 * s;
    }
}

Test(energy_cpu, pair_table_fused_equals_brute_force)
{
    const char *ka[] = {"A-B:epsilon=1.5,sigma=0.8,cut=2.0", "B-B:epsilon=0.5,sigma=0.88,cut=2.2"};
    mdnl_pair_table t = table_of("lj:epsilon=1,sigma=1", ka, 2, 2.5);
    mdnl_frame f = fixture_load("ka_mixture");
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, t.max_cutoff, &pos4);
    int32_t *types = fixture_types(&t, &f);
    double *e = malloc((size_t)f.natoms * sizeof *e), *eb = malloc((size_t)f.natoms * sizeof *eb);
    double total = 0, total_only = 0;
    cr_assert_eq(mdnl_energy_table_frame_cpu(&g, (const float(*)[4])pos4, types, &t, &total, e), MDNL_OK);
    cr_assert_eq(mdnl_energy_table_frame_cpu(&g, (const float(*)[4])pos4, types, &t, &total_only, NULL), MDNL_OK);
    cr_expect_eq(total, total_only, "the total has the same bits with and without per-atom energies");
    table_brute(&g, (const float(*)[4])pos4, types, &t, eb);
    for (int64_t i = 0; i < f.natoms; ++i)
        cr_expect(fabs(e[i] - eb[i]) <= 1e-12 * (1.0 + fabs(eb[i])), "atom %lld: fused %.17g brute %.17g",
                  (long long)i, e[i], eb[i]);
    /* the traversal's cutoff must be the largest pair cutoff */
    mdnl_geom g2;
    float(*pos2)[4] = malloc((size_t)f.natoms * sizeof *pos2);
    cr_assert_eq(mdnl_geom_prepare(&f, 2.2, &g2, pos2), MDNL_OK);
    cr_expect_eq(mdnl_energy_table_frame_cpu(&g2, (const float(*)[4])pos2, types, &t, &total, NULL), MDNL_ERR_USAGE);
    free(pos2), free(e), free(eb), free(types), free(pos4);
    mdnl_frame_free(&f);
}

Test(energy_cpu, pair_table_of_equal_pairs_is_the_single_potential_bit_for_bit)
{
    const char *same[] = {"A-B:epsilon=1,sigma=1", "B-B:epsilon=1,sigma=1"};
    mdnl_pair_table t = table_of("lj:epsilon=1,sigma=1", same, 2, 2.5);
    mdnl_frame f = fixture_load("ka_mixture");
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, 2.5, &pos4);
    int32_t *types = fixture_types(&t, &f);
    double tt = 0, ts = 0;
    double *et = malloc((size_t)f.natoms * sizeof *et), *es = malloc((size_t)f.natoms * sizeof *es);
    cr_assert_eq(mdnl_energy_table_frame_cpu(&g, (const float(*)[4])pos4, types, &t, &tt, et), MDNL_OK);
    cr_assert_eq(mdnl_energy_frame_cpu(&g, (const float(*)[4])pos4, &t.p[0], &ts, es), MDNL_OK);
    cr_expect_eq(tt, ts, "table %.17g single %.17g", tt, ts);
    cr_expect_eq(memcmp(et, es, (size_t)f.natoms * sizeof *et), 0);
    free(et), free(es), free(types), free(pos4);
    mdnl_frame_free(&f);
}

Test(energy_cpu, kob_andersen_totals_agree_with_lammps_run0)
{
    ka_case ref[8];
    int n = fixture_ka_references(ref, 8);
    cr_assert(n >= 3, "ka_reference.txt has %d cases", n);
    for (int k = 0; k < n; ++k) {
        mdnl_pair_table t = table_of(ref[k].spec, ref[k].coeffs, ref[k].ncoeff, ref[k].cutoff);
        mdnl_frame f = fixture_load(ref[k].fixture);
        float(*pos4)[4];
        mdnl_geom g = fixture_prepare(&f, t.max_cutoff, &pos4);
        int32_t *types = fixture_types(&t, &f);
        double total = 0;
        cr_assert_eq(mdnl_energy_table_frame_cpu(&g, (const float(*)[4])pos4, types, &t, &total, NULL), MDNL_OK);
        mdnl_nlist half = {0};
        cr_assert_eq(mdnl_nlist_build_cpu(&g, (const float(*)[4])pos4, MDNL_METHOD_CELL, MDNL_LIST_HALF, &half),
                     MDNL_OK);
        const double scale = fixture_table_sum_abs(&half, types, &t);
        const double rel = fabs(total - ref[k].pe) / scale;
        cr_log_info("LAMMPS KA %s: lammps %.12f mdnl %.12f |diff|/sum|u| %.2e", ref[k].name, ref[k].pe, total, rel);
        cr_expect(rel <= 1e-6, "%s: mdnl %.12f, LAMMPS %.12f, off by %.2e of sum |u| = %.6g", ref[k].name, total,
                  ref[k].pe, rel, scale);
        mdnl_nlist_free(&half);
        free(types), free(pos4);
        mdnl_frame_free(&f);
    }
}

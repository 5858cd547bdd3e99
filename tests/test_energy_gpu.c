/* test_energy_gpu.c — the CUDA energy kernels (energy_cuda.h) against the CPU
 * twin and LAMMPS: totals to 1e-9 relative of the CPU, 1e-6 of sum |u| from
 * LAMMPS, per-atom energies, every reduction variant, and bit-identical
 * totals run to run. Skips with a reason when no device is present; CUDA is
 * touched only inside test bodies (Criterion forks per test). */
#include "device.h"
#include "energy.h"
#include "energy_fixtures.h"
#include "rdf_test_util.h" /* rdf_random: random frames in every kind of box */
#include "nlist.h"
#include "potential.h"
#ifdef MDNL_HAVE_CUDA
#include "energy_cuda.h"
#endif

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifndef MDNL_HAVE_CUDA

Test(energy_gpu, skipped_without_cuda) { cr_skip_test("built without CUDA (MDNL_CUDA=OFF or no nvcc)"); }

#else

static int need_device(void)
{
    if (mdnl_cuda_device_count() == 0) {
        cr_skip_test("no CUDA device present");
        return 0;
    }
    return 1;
}

/* A loaded fixture with its geometry, potential, CPU results and lists. */
typedef struct setup {
    mdnl_frame f;
    mdnl_geom g;
    float (*pos4)[4];
    mdnl_potential p;
    double cpu_total, *cpu_per, scale;
    mdnl_nlist half, full;
} setup;

static void setup_frame(setup *s, mdnl_frame f, double cutoff, const char *spec)
{
    memset(s, 0, sizeof *s);
    s->f = f;
    s->g = fixture_prepare(&s->f, cutoff, &s->pos4);
    cr_assert_eq(mdnl_potential_parse(spec, cutoff, &s->p), MDNL_OK, "%s", mdnl_last_error());
    const float(*cpos)[4] = (const float(*)[4])s->pos4;
    s->cpu_per = malloc((size_t)(f.natoms > 0 ? f.natoms : 1) * sizeof(double));
    cr_assert_eq(mdnl_energy_frame_cpu(&s->g, cpos, &s->p, &s->cpu_total, s->cpu_per), MDNL_OK);
    cr_assert_eq(mdnl_nlist_build_cpu(&s->g, cpos, MDNL_METHOD_CELL, MDNL_LIST_HALF, &s->half), MDNL_OK);
    cr_assert_eq(mdnl_nlist_build_cpu(&s->g, cpos, MDNL_METHOD_CELL, MDNL_LIST_FULL, &s->full), MDNL_OK);
    s->scale = fixture_sum_abs(&s->half, &s->p);
}

static void setup_free(setup *s)
{
    mdnl_nlist_free(&s->half);
    mdnl_nlist_free(&s->full);
    free(s->cpu_per);
    free(s->pos4);
    mdnl_frame_free(&s->f);
}

static void expect_close(const char *what, double got, double want, double rel)
{
    cr_expect(fabs(got - want) <= rel * fabs(want) + 1e-300, "%s: GPU %.17g, CPU %.17g (rel %.2e > %.0e)", what, got,
              want, fabs(got - want) / fabs(want), rel);
}

static const mdnl_energy_reduce variants[] = {MDNL_REDUCE_ATOMIC, MDNL_REDUCE_TREE, MDNL_REDUCE_SHUFFLE};

/* Every path and variant against the CPU twin; deterministic variants
 * repeat bit for bit. */
static void check_against_cpu(setup *s, const char *label)
{
    mdnl_energy_cuda *e = NULL;
    cr_assert_eq(mdnl_energy_cuda_create(NULL, &e), MDNL_OK, "%s", mdnl_last_error());
    const int64_t n = s->f.natoms;
    double *per = malloc((size_t)n * sizeof(double));
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; ++v) {
        mdnl_energy_cuda_set_reduce(e, variants[v]);
        const char *vn = mdnl_energy_reduce_name(variants[v]);
        char what[256];
        /* fused, per-atom */
        double t = 0;
        cr_assert_eq(mdnl_energy_frame_cuda(e, &s->g, (const float(*)[4])s->pos4, &s->p, &t, per), MDNL_OK, "%s",
                     mdnl_last_error());
        snprintf(what, sizeof what, "%s fused %s", label, vn);
        expect_close(what, t, s->cpu_total, 1e-9);
        int bad = 0;
        for (int64_t i = 0; i < n && bad < 5; ++i)
            if (fabs(per[i] - s->cpu_per[i]) > 1e-12 * (fabs(s->cpu_per[i]) + 1.0)) {
                cr_expect_fail("%s: atom %lld GPU %.17g CPU %.17g", what, (long long)i, per[i], s->cpu_per[i]);
                ++bad;
            }
        /* fused, total only (the half-stencil warp walk where it fits the grid, else the half traversal):
         * the CPU's total, repeated bit for bit by the deterministic variants */
        snprintf(what, sizeof what, "%s fused total %s", label, vn);
        double t1 = 0;
        for (int r = 0; r < 3; ++r) {
            double t2 = 0;
            cr_assert_eq(mdnl_energy_frame_cuda(e, &s->g, (const float(*)[4])s->pos4, &s->p, &t2, NULL), MDNL_OK);
            expect_close(what, t2, s->cpu_total, 1e-9);
            if (r == 0)
                t1 = t2;
            else if (variants[v] != MDNL_REDUCE_ATOMIC)
                cr_expect(memcmp(&t1, &t2, sizeof t1) == 0, "%s run %d: %.17g then %.17g", what, r, t1, t2);
        }
        /* from the full and the half list */
        snprintf(what, sizeof what, "%s full list %s", label, vn);
        cr_assert_eq(mdnl_energy_list_cuda(e, &s->full, MDNL_LIST_FULL, &s->p, &t, per), MDNL_OK, "%s",
                     mdnl_last_error());
        expect_close(what, t, s->cpu_total, 1e-9);
        for (int64_t i = 0; i < n; ++i)
            if (fabs(per[i] - s->cpu_per[i]) > 1e-12 * (fabs(s->cpu_per[i]) + 1.0)) {
                cr_expect_fail("%s: atom %lld GPU %.17g CPU %.17g", what, (long long)i, per[i], s->cpu_per[i]);
                break;
            }
        snprintf(what, sizeof what, "%s half list %s", label, vn);
        cr_assert_eq(mdnl_energy_list_cuda(e, &s->half, MDNL_LIST_HALF, &s->p, &t, per), MDNL_OK, "%s",
                     mdnl_last_error());
        expect_close(what, t, s->cpu_total, 1e-9);
        for (int64_t i = 0; i < n; ++i)
            if (fabs(per[i] - s->cpu_per[i]) > 1e-12 * (fabs(s->cpu_per[i]) + 1.0)) {
                cr_expect_fail("%s: atom %lld GPU %.17g CPU %.17g", what, (long long)i, per[i], s->cpu_per[i]);
                break;
            }
    }
    free(per);
    mdnl_energy_cuda_free(e);
}

Test(energy_gpu, fixtures_match_cpu_twin_every_path_and_variant)
{
    if (!need_device())
        return;
    static const struct {
        const char *fixture;
        double cutoff;
        const char *spec;
    } cases[] = {
        {"graphene_noisy", 3.0, "morse:d0=6.0,alpha=1.8,r0=1.42"},
        {"graphene_noisy", 3.0, "lj:epsilon=1,sigma=1.265,shift=no"},
        {"lj_liquid", 2.5, "lj:epsilon=1,sigma=1"},
        {"lj_liquid", 7.5, "lj:epsilon=1,sigma=1"}, /* beyond half the box */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; ++k) {
        setup s;
        setup_frame(&s, fixture_load(cases[k].fixture), cases[k].cutoff, cases[k].spec);
        char label[192];
        snprintf(label, sizeof label, "%s rc %g %s", cases[k].fixture, cases[k].cutoff, cases[k].spec);
        check_against_cpu(&s, label);
        setup_free(&s);
    }
}

/* The fused walks (the half traversal for the total, the full walk for
 * per-atom energies) in every kind of box, atoms in random order:
 * orthorhombic, triclinic (the whole stencil: no per-atom pruning), open,
 * and periodic in x and z only; LJ with sigma 0.5, so that the random
 * overlaps stay finite. */
Test(energy_gpu, random_frames_in_every_box_match_cpu)
{
    if (!need_device())
        return;
    static const char *kinds[] = {"orthorhombic", "triclinic", "open", "pbc T F T"};
    for (int kind = 0; kind < 4; ++kind) {
        mdnl_frame f;
        rdf_random(&f, 3000, kind, 15.0, 0);
        setup s;
        setup_frame(&s, f, 2.5, "lj:epsilon=1,sigma=0.5");
        char label[96];
        snprintf(label, sizeof label, "random 3000 atoms, %s box, rc 2.5", kinds[kind]);
        check_against_cpu(&s, label);
        setup_free(&s);
    }
}

Test(energy_gpu, totals_agree_with_lammps_run0)
{
    if (!need_device())
        return;
    reference_case ref[16];
    int n = fixture_references(ref, 16);
    cr_assert(n >= 5);
    mdnl_energy_cuda *e = NULL;
    cr_assert_eq(mdnl_energy_cuda_create(NULL, &e), MDNL_OK, "%s", mdnl_last_error());
    for (int k = 0; k < n; ++k) {
        setup s;
        setup_frame(&s, fixture_load(ref[k].fixture), ref[k].cutoff, ref[k].spec);
        double t = 0;
        cr_assert_eq(mdnl_energy_frame_cuda(e, &s.g, (const float(*)[4])s.pos4, &s.p, &t, NULL), MDNL_OK);
        double rel = fabs(t - ref[k].pe) / s.scale;
        cr_log_info("LAMMPS %s %s: lammps %.12f mdnl-gpu %.12f |diff|/sum|u| %.2e; gpu-cpu rel %.2e",
                    ref[k].fixture, ref[k].spec, ref[k].pe, t, rel, fabs(t - s.cpu_total) / fabs(s.cpu_total));
        cr_expect(rel <= 1e-6, "%s %s: GPU %.12f, LAMMPS %.12f, off by %.2e of sum |u|", ref[k].fixture, ref[k].spec,
                  t, ref[k].pe, rel);
        expect_close(ref[k].fixture, t, s.cpu_total, 1e-9);
        setup_free(&s);
    }
    mdnl_energy_cuda_free(e);
}

Test(energy_gpu, graphene_and_self_images_match_cpu)
{
    if (!need_device())
        return;
    setup s;
    setup_frame(&s, fixture_graphene(6, 4), 3.0, "morse:d0=6.0,alpha=1.8,r0=1.42");
    check_against_cpu(&s, "perfect graphene morse");
    setup_free(&s);

    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, 2), MDNL_OK);
    f.natoms = 2;
    f.pos[0][0] = 0.3, f.pos[0][1] = 0.6, f.pos[0][2] = 0.1;
    f.pos[1][0] = 0.8, f.pos[1][1] = 0.1, f.pos[1][2] = 0.55;
    f.species[0] = f.species[1] = mdnl_frame_species_id(&f, "Ar", 2);
    f.box.has_lattice = true;
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 1.0;
    f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
    setup_frame(&s, f, 2.5, "lj:epsilon=1,sigma=0.9");
    check_against_cpu(&s, "self images, 2 atoms in a unit cube, rc 2.5");
    setup_free(&s);
}

/* The device-resident list of nlist_cuda.h, consumed on the context's stream. */
Test(energy_gpu, device_list_from_nlist_cuda_matches_cpu)
{
    if (!need_device())
        return;
    setup s;
    setup_frame(&s, fixture_load("lj_liquid"), 2.5, "lj:epsilon=1,sigma=1");
    mdnl_cuda_ctx *ctx = NULL;
    cr_assert_eq(mdnl_cuda_ctx_create(&ctx), MDNL_OK, "%s", mdnl_last_error());
    mdnl_energy_cuda *e = NULL;
    cr_assert_eq(mdnl_energy_cuda_create(mdnl_cuda_ctx_stream(ctx), &e), MDNL_OK, "%s", mdnl_last_error());
    double *per = malloc((size_t)s.f.natoms * sizeof(double));
    for (int k = 0; k < 2; ++k) {
        mdnl_list_kind kind = k ? MDNL_LIST_HALF : MDNL_LIST_FULL;
        mdnl_nlist_dev l;
        cr_assert_eq(mdnl_nlist_build_cuda_dev(ctx, &s.g, (const float(*)[4])s.pos4, MDNL_METHOD_CELL, kind, &l),
                     MDNL_OK, "%s", mdnl_last_error());
        cr_expect_eq(l.npairs, k ? s.half.npairs : s.full.npairs);
        double t = 0;
        cr_assert_eq(mdnl_energy_cuda_run_nlist(e, &l, kind, &s.p, 1), MDNL_OK, "%s", mdnl_last_error());
        cr_assert_eq(mdnl_energy_cuda_result(e, &t, per), MDNL_OK, "%s", mdnl_last_error());
        expect_close(k ? "device half list" : "device full list", t, s.cpu_total, 1e-9);
        for (int64_t i = 0; i < s.f.natoms; ++i)
            if (fabs(per[i] - s.cpu_per[i]) > 1e-12 * (fabs(s.cpu_per[i]) + 1.0)) {
                cr_expect_fail("device list: atom %lld GPU %.17g CPU %.17g", (long long)i, per[i], s.cpu_per[i]);
                break;
            }
    }
    free(per);
    mdnl_energy_cuda_free(e);
    mdnl_cuda_ctx_free(ctx);
    setup_free(&s);
}

Test(energy_gpu, zero_atoms_give_zero)
{
    if (!need_device())
        return;
    mdnl_frame f = {0};
    f.box.has_lattice = true;
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 5.0;
    f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, 2.5, &pos4);
    mdnl_potential p;
    cr_assert_eq(mdnl_potential_parse("lj:epsilon=1,sigma=1", 2.5, &p), MDNL_OK);
    mdnl_energy_cuda *e = NULL;
    cr_assert_eq(mdnl_energy_cuda_create(NULL, &e), MDNL_OK, "%s", mdnl_last_error());
    double total = 42;
    cr_expect_eq(mdnl_energy_frame_cuda(e, &g, (const float(*)[4])pos4, &p, &total, NULL), MDNL_OK, "%s",
                 mdnl_last_error());
    cr_expect_eq(total, 0.0);
    mdnl_energy_cuda_free(e);
    free(pos4);
    mdnl_frame_free(&f);
}

Test(energy_gpu, cutoff_mismatch_is_a_usage_error)
{
    if (!need_device())
        return;
    mdnl_frame f = fixture_graphene(2, 2);
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, 3.0, &pos4);
    mdnl_potential p;
    cr_assert_eq(mdnl_potential_parse("lj:epsilon=1,sigma=1", 2.5, &p), MDNL_OK);
    mdnl_energy_cuda *e = NULL;
    cr_assert_eq(mdnl_energy_cuda_create(NULL, &e), MDNL_OK);
    double total;
    cr_expect_eq(mdnl_energy_frame_cuda(e, &g, (const float(*)[4])pos4, &p, &total, NULL), MDNL_ERR_USAGE);
    mdnl_energy_cuda_free(e);
    free(pos4);
    mdnl_frame_free(&f);
}

/* ---- per-pair parameters (mdnl_energy_table_frame_cuda) ---- */

/* GPU table energies of frame f against the CPU twin, as check_against_cpu
 * does for one potential: per-atom energies to 1e-12, the total to 1e-9
 * (the walk sums an atom's stencil parts apart, the CPU in one run), every
 * reduction variant; the total alone repeats bit for bit. Returns the GPU
 * total. */
static double check_table_against_cpu(mdnl_energy_cuda *e, mdnl_frame *f, const mdnl_pair_table *t,
                                      const char *label)
{
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(f, t->max_cutoff, &pos4);
    int32_t *types = fixture_types(t, f);
    const size_t n = (size_t)(f->natoms > 0 ? f->natoms : 1);
    double *ec = malloc(n * sizeof *ec), *eg = malloc(n * sizeof *eg);
    double tc = 0, tg = 0, tg2 = 0;
    const float(*cpos)[4] = (const float(*)[4])pos4;
    cr_assert_eq(mdnl_energy_table_frame_cpu(&g, cpos, types, t, &tc, ec), MDNL_OK, "%s", mdnl_last_error());
    for (size_t v = 0; v < sizeof variants / sizeof *variants; ++v) {
        mdnl_energy_cuda_set_reduce(e, variants[v]);
        memset(eg, 0, n * sizeof *eg);
        cr_assert_eq(mdnl_energy_table_frame_cuda(e, &g, cpos, types, t, &tg, eg), MDNL_OK, "%s",
                     mdnl_last_error());
        for (int64_t i = 0; i < f->natoms; ++i)
            if (fabs(eg[i] - ec[i]) > 1e-12 * (fabs(ec[i]) + 1.0)) {
                cr_expect_fail("%s %s: atom %lld GPU %.17g CPU %.17g", label, mdnl_energy_reduce_name(variants[v]),
                               (long long)i, eg[i], ec[i]);
                break;
            }
        expect_close(label, tg, tc, 1e-9);
        cr_assert_eq(mdnl_energy_table_frame_cuda(e, &g, cpos, types, t, &tg, NULL), MDNL_OK);
        expect_close(label, tg, tc, 1e-9);
        if (variants[v] != MDNL_REDUCE_ATOMIC) {
            cr_assert_eq(mdnl_energy_table_frame_cuda(e, &g, cpos, types, t, &tg2, NULL), MDNL_OK);
            cr_expect_eq(tg, tg2, "%s: the total repeats bit for bit", label);
        }
    }
    mdnl_energy_cuda_set_reduce(e, MDNL_REDUCE_DEFAULT);
    free(ec), free(eg), free(types), free(pos4);
    return tg;
}

Test(energy_gpu, pair_table_matches_cpu_twin_and_lammps)
{
    if (!need_device())
        return;
    mdnl_energy_cuda *e = NULL;
    cr_assert_eq(mdnl_energy_cuda_create(NULL, &e), MDNL_OK, "%s", mdnl_last_error());
    ka_case ref[8];
    int n = fixture_ka_references(ref, 8);
    cr_assert(n >= 3);
    for (int k = 0; k < n; ++k) {
        mdnl_pair_table t;
        cr_assert_eq(mdnl_pair_table_parse(ref[k].spec, ref[k].coeffs, ref[k].ncoeff, ref[k].cutoff, &t), MDNL_OK);
        mdnl_frame f = fixture_load(ref[k].fixture);
        const double tg = check_table_against_cpu(e, &f, &t, ref[k].name);
        cr_log_info("LAMMPS KA %s: lammps %.12f mdnl-gpu %.12f", ref[k].name, ref[k].pe, tg);
        cr_expect(fabs(tg - ref[k].pe) <= 1e-6 * fabs(ref[k].pe), "%s: GPU %.12f LAMMPS %.12f", ref[k].name, tg,
                  ref[k].pe);
        mdnl_frame_free(&f);
    }
    /* random frames in every kind of box, with Morse (no mixing) too */
    const char *ab[] = {"A-B:epsilon=1.5,sigma=0.4,cut=1.6", "B-B:epsilon=0.5,sigma=0.45,cut=2.0"};
    const char *mo[] = {"A-B:d0=2,alpha=2,r0=0.6,cut=1.8"};
    for (int kind = 0; kind < 4; ++kind) {
        mdnl_frame f;
        rdf_random(&f, 3000, kind, 15.0, 0);
        mdnl_pair_table t;
        cr_assert_eq(mdnl_pair_table_parse("lj:epsilon=1,sigma=0.5", ab, 2, 2.5, &t), MDNL_OK);
        check_table_against_cpu(e, &f, &t, "random lj table");
        cr_assert_eq(mdnl_pair_table_parse("morse:d0=1,alpha=3,r0=0.5", mo, 1, 2.5, &t), MDNL_OK);
        float(*pos4)[4];
        mdnl_geom g = fixture_prepare(&f, t.max_cutoff, &pos4);
        int32_t *types = fixture_types(&t, &f);
        double tc = 0, tg = 0;
        cr_assert_eq(mdnl_energy_table_frame_cpu(&g, (const float(*)[4])pos4, types, &t, &tc, NULL), MDNL_OK);
        cr_assert_eq(mdnl_energy_table_frame_cuda(e, &g, (const float(*)[4])pos4, types, &t, &tg, NULL), MDNL_OK);
        expect_close("random morse table", tg, tc, 1e-9);
        free(types), free(pos4);
        mdnl_frame_free(&f);
    }
    /* the traversal's cutoff must be the table's largest */
    mdnl_frame f = fixture_load("ka_mixture");
    mdnl_pair_table t;
    cr_assert_eq(mdnl_pair_table_parse(ref[0].spec, ref[0].coeffs, ref[0].ncoeff, ref[0].cutoff, &t), MDNL_OK);
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, 2.2, &pos4);
    int32_t *types = fixture_types(&t, &f);
    double tg = 0;
    cr_expect_eq(mdnl_energy_table_frame_cuda(e, &g, (const float(*)[4])pos4, types, &t, &tg, NULL), MDNL_ERR_USAGE);
    free(types), free(pos4);
    mdnl_frame_free(&f);
    mdnl_energy_cuda_free(e);
}

#endif

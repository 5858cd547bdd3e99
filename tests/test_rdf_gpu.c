/* test_rdf_gpu.c — the CUDA histogram kernels (rdf.cu) against the CPU twin
 * (rdf_cpu.c): every variant x traversal gives the twin's counts exactly, on
 * graphene, random boxes of every kind (r_max beyond half the box included),
 * partials, multi-pass and fallback histograms, and the MDAnalysis fixture.
 * Skips when no device is present; CUDA is touched only inside test bodies
 * (Criterion forks per test). */
#include "device.h"
#include "rdf.h"

#include "rdf_test_util.h"

#ifdef MDNL_HAVE_CUDA
#include "rdf_cuda.h"
#endif

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NEED_GPU()                                                                                                     \
    do {                                                                                                               \
        if (mdnl_cuda_device_count() == 0)                                                                             \
            cr_skip_test("no CUDA device (or a build without CUDA)");                                                  \
    } while (0)

#ifdef MDNL_HAVE_CUDA
/* Compares every variant and traversal with the CPU twin on one frame. */
static void all_variants_equal_cpu(const char *what, const mdnl_frame *f, const mdnl_hist_spec *spec)
{
    mdnl_geom g;
    float(*pos4)[4];
    rdf_prepare(f, spec->r_max, &g, &pos4);
    const size_t ns = (size_t)mdnl_hist_nhist(spec) * spec->bins;
    uint64_t *cpu = calloc(ns, sizeof *cpu), *gpu = calloc(ns, sizeof *gpu);
    cr_assert_eq(mdnl_hist_frame_cpu(&g, (const float(*)[4])pos4, f->species, spec, cpu), MDNL_OK, "%s",
                 mdnl_last_error());
    uint64_t total = 0;
    for (size_t s = 0; s < ns; ++s)
        total += cpu[s];
    cr_assert(total > 0 || f->natoms < 2, "%s: no pairs at all", what);
    mdnl_hist_cuda *ctx = NULL;
    cr_assert_eq(mdnl_hist_cuda_create(&ctx), MDNL_OK, "%s", mdnl_last_error());
    /* AUTO picks one of the explicit variants and traversals: (AUTO, AUTO)
     * once, then every explicit pair (10 launches, not 16: keeps racecheck
     * runs within the device tool's 10 minutes) */
    for (int v = MDNL_HIST_AUTO; v <= MDNL_HIST_SHARED_AGG; ++v)
        for (int t = MDNL_HIST_TRAV_AUTO; t <= MDNL_HIST_TRAV_CELLS_WALK; ++t) {
            if ((v == MDNL_HIST_AUTO) != (t == MDNL_HIST_TRAV_AUTO))
                continue;
            if (t == MDNL_HIST_TRAV_ALLPAIRS && f->natoms > 20000)
                continue;
            memset(gpu, 0xff, ns * sizeof *gpu);
            mdnl_status st = mdnl_hist_frame_cuda(ctx, &g, (const float(*)[4])pos4, f->species, spec, v, t, gpu);
            cr_assert_eq(st, MDNL_OK, "%s %s/%s: %s", what, mdnl_hist_variant_name(v), mdnl_hist_traversal_name(t),
                         mdnl_last_error());
            for (size_t s = 0; s < ns; ++s)
                if (gpu[s] != cpu[s]) {
                    cr_expect_eq(gpu[s], cpu[s], "%s %s/%s slot %zu: GPU %llu, CPU %llu", what,
                                 mdnl_hist_variant_name(v), mdnl_hist_traversal_name(t), s,
                                 (unsigned long long)gpu[s], (unsigned long long)cpu[s]);
                    break;
                }
        }
    mdnl_hist_cuda_free(ctx);
    free(cpu), free(gpu), free(pos4);
}

#endif

Test(rdf_gpu, graphene_every_variant_equals_cpu_twin)
{
    NEED_GPU();
#ifdef MDNL_HAVE_CUDA
    mdnl_frame f;
    rdf_graphene(&f, 40, 24, 1.42);
    mdnl_hist_spec spec = {6.0, 500, 0, NULL};
    all_variants_equal_cpu("graphene", &f, &spec);
    mdnl_frame_free(&f);
#endif
}

/* Random atoms of two species in a box of kind `kind` (rdf_random: open,
 * orthorhombic, triclinic, partially periodic), r_max below (3.5, 3,000
 * atoms) or above (16, 1,000 atoms: still ~6,000 pairs an atom, through
 * images of images) half the box, total and partial histograms. One test
 * per kind and r_max, and fewer atoms beyond half the box, so that each
 * racecheck run (tools/gpu/run_sanitizers.sh) stays within the device
 * tool's 10-minute call: with 3,000 atoms there it ran past 560 s. */
static void random_box(int kind, bool big)
{
    NEED_GPU();
#ifdef MDNL_HAVE_CUDA
    const int32_t pairs[3][2] = {{0, 0}, {0, 1}, {1, 1}};
    mdnl_frame f;
    rdf_random(&f, big ? 1000 : 3000, kind, 14.0, 0);
    char what[64];
    snprintf(what, sizeof what, "kind %d r_max %s", kind, big ? "> box/2" : "< box/2");
    mdnl_hist_spec tot = {big ? 16.0 : 3.5, 200, 0, NULL};
    mdnl_hist_spec par = {big ? 16.0 : 3.5, 200, 3, pairs};
    all_variants_equal_cpu(what, &f, &tot);
    all_variants_equal_cpu(what, &f, &par);
    mdnl_frame_free(&f);
#else
    (void)kind, (void)big;
#endif
}

#define RANDOM_BOX_TESTS(k)                                                                                            \
    Test(rdf_gpu, random_box_kind##k##_rmax_below_half_box_equals_cpu_twin) { random_box(k, false); }                  \
    Test(rdf_gpu, random_box_kind##k##_rmax_beyond_half_box_equals_cpu_twin) { random_box(k, true); }
RANDOM_BOX_TESTS(0)
RANDOM_BOX_TESTS(1)
RANDOM_BOX_TESTS(2)
RANDOM_BOX_TESTS(3)

/* Many small cells: r_max 1 in a box of ~28 x 31.5 x 24.5 gives a refined
 * grid of ~56 x 63 x 49 cells, ~86,000 home blocks of the cells-walk, more
 * than 8 a resident warp (H100: 4,224 warps, 33,792 blocks), so the walk
 * takes them in chunks off its counter (rdf.cu, kWalkChunkedFrom); the
 * other tests' frames take the static stride. Orthorhombic and triclinic,
 * total and partials. */
Test(rdf_gpu, many_cells_walk_in_chunks_equals_cpu_twin)
{
    NEED_GPU();
#ifdef MDNL_HAVE_CUDA
    const int32_t pairs[3][2] = {{0, 0}, {0, 1}, {1, 1}};
    mdnl_hist_spec tot = {1.0, 100, 0, NULL};
    mdnl_hist_spec par = {1.0, 100, 3, pairs};
    for (int kind = 0; kind <= 1; ++kind) {
        mdnl_frame f;
        rdf_random(&f, 30000, kind, 28.0, 0);
        all_variants_equal_cpu(kind ? "many cells, triclinic" : "many cells", &f, &tot);
        all_variants_equal_cpu(kind ? "many cells, triclinic, partials" : "many cells, partials", &f, &par);
        mdnl_frame_free(&f);
    }
#endif
}

Test(rdf_gpu, histograms_larger_than_shared_memory_use_passes_or_fall_back)
{
    NEED_GPU();
#ifdef MDNL_HAVE_CUDA
    const int32_t pairs[3][2] = {{0, 0}, {0, 1}, {1, 1}};
    mdnl_frame f;
    rdf_random(&f, 2000, 0, 12.0, 0);
    mdnl_hist_spec two = {4.0, 15000, 0, NULL};    /* 15000 slots: two passes */
    mdnl_hist_spec many = {4.0, 40000, 3, pairs};  /* 120000 slots: too many passes, global fallback */
    all_variants_equal_cpu("2 passes", &f, &two);
    all_variants_equal_cpu("fallback", &f, &many);
    mdnl_hist_cuda *ctx = NULL;
    cr_assert_eq(mdnl_hist_cuda_create(&ctx), MDNL_OK);
    mdnl_geom g;
    float(*pos4)[4];
    rdf_prepare(&f, 4.0, &g, &pos4);
    uint64_t *c = calloc(120000, sizeof *c);
    mdnl_hist_cuda_timing t;
    cr_assert_eq(mdnl_hist_cuda_bench(ctx, &g, (const float(*)[4])pos4, f.species, &two, MDNL_HIST_SHARED,
                                      MDNL_HIST_TRAV_CELLS_PRUNE2, 1, c, &t), MDNL_OK);
    cr_expect_eq(t.passes, 2);
    cr_expect_eq(t.variant, MDNL_HIST_SHARED);
    cr_assert_eq(mdnl_hist_cuda_bench(ctx, &g, (const float(*)[4])pos4, f.species, &many, MDNL_HIST_SHARED,
                                      MDNL_HIST_TRAV_CELLS_PRUNE2, 1, c, &t), MDNL_OK);
    cr_expect_eq(t.variant, MDNL_HIST_GLOBAL);
    mdnl_hist_cuda_free(ctx);
    free(c), free(pos4);
    mdnl_frame_free(&f);
#endif
}

Test(rdf_gpu, open_cluster_allpairs_and_cells_equal_cpu_twin)
{
    NEED_GPU();
#ifdef MDNL_HAVE_CUDA
    const int32_t pairs[2][2] = {{1, 0}, {1, 1}};
    mdnl_frame f;
    rdf_random(&f, 5000, 2, 20.0, 0);
    mdnl_hist_spec tot = {30.0, 300, 0, NULL}; /* r_max beyond the cluster: every pair */
    mdnl_hist_spec par = {5.0, 100, 2, pairs};
    all_variants_equal_cpu("open all pairs", &f, &tot);
    all_variants_equal_cpu("open partials", &f, &par);
    mdnl_frame_free(&f);
#endif
}

/* A simple cubic lattice of spacing 0.5 on dyadic positions: every squared
 * distance is exact, many pairs sit exactly on bin edges (r = 0.5, 1.0 with
 * bins of 0.25) and exactly at r_max (d2 = 2.25 = cutoff2, excluded), and
 * atoms sit on planes at and near the pruned cells' edges: the threshold
 * table and the per-atom pruning of the CELLS_PRUNE traversals must still
 * give the twin's counts, periodic and open. */
static void cubic_lattice(int open, double r_max, int bins)
{
    NEED_GPU();
#ifdef MDNL_HAVE_CUDA
    /* 2,744 atoms, box 7: r_max 2 below half the box (8,000 ran past racecheck's 560 s) */
    const int m = 14;
    mdnl_frame f;
    memset(&f, 0, sizeof f);
    cr_assert_eq(mdnl_frame_reserve(&f, (int64_t)m * m * m), MDNL_OK);
    f.natoms = (int64_t)m * m * m;
    f.nspecies = 1;
    strcpy(f.symbols[0], "A");
    int64_t i = 0;
    for (int x = 0; x < m; ++x)
        for (int y = 0; y < m; ++y)
            for (int z = 0; z < m; ++z, ++i) {
                f.pos[i][0] = 0.5 * x, f.pos[i][1] = 0.5 * y, f.pos[i][2] = 0.5 * z;
                f.species[i] = 0;
            }
    if (!open) {
        f.box.has_lattice = true;
        f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 0.5 * m;
        f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
    }
    mdnl_hist_spec spec = {r_max, bins, 0, NULL};
    char what[64];
    snprintf(what, sizeof what, "%scubic r %.1f", open ? "open " : "", r_max);
    all_variants_equal_cpu(what, &f, &spec);
    mdnl_frame_free(&f);
#else
    (void)open, (void)r_max, (void)bins;
#endif
}

/* r_max 1.5 in 6 bins of 0.25 (pairs on the edges 0.5, 1.0 and at r_max), 2.0 in 8 */
Test(rdf_gpu, cubic_lattice_periodic_rmax_1_5_bin_edges_equal_cpu_twin) { cubic_lattice(0, 1.5, 6); }
Test(rdf_gpu, cubic_lattice_periodic_rmax_2_0_bin_edges_equal_cpu_twin) { cubic_lattice(0, 2.0, 8); }
Test(rdf_gpu, cubic_lattice_open_rmax_1_5_bin_edges_equal_cpu_twin) { cubic_lattice(1, 1.5, 6); }
Test(rdf_gpu, cubic_lattice_open_rmax_2_0_bin_edges_equal_cpu_twin) { cubic_lattice(1, 2.0, 8); }

Test(rdf_gpu, lj_mixture_fixture_equals_cpu_twin)
{
    NEED_GPU();
#ifdef MDNL_HAVE_CUDA
    char path[1024];
    snprintf(path, sizeof path, "%s/rdf/lj_mixture.xyz", rdf_data_dir());
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp);
    mdnl_frame f = {0};
    const int32_t pairs[3][2] = {{0, 0}, {0, 1}, {1, 1}};
    mdnl_hist_spec par = {2.5, 80, 3, pairs};
    int frames = 0;
    while (rdf_read_xyz(fp, &f) && frames < 3) {
        all_variants_equal_cpu("lj_mixture", &f, &par);
        ++frames;
    }
    fclose(fp);
    mdnl_frame_free(&f);
#endif
}

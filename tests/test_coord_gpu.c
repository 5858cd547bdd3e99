/* test_coord_gpu.c — the CUDA coordination count (coord_cuda.h) against the
 * CPU twin: equal integers in every kind of box, with and without species
 * columns, and against ASE/freud on the KA fixture. Skips with a reason
 * when no device is present; CUDA is touched only inside test bodies. */
#include "coord.h"
#include "coord_fixtures.h"
#include "device.h"
#include "energy_fixtures.h"
#include "rdf_test_util.h"
#ifdef MDNL_HAVE_CUDA
#include "coord_cuda.h"
#endif

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#ifndef MDNL_HAVE_CUDA

Test(coord_gpu, skipped_without_cuda) { cr_skip_test("built without CUDA (MDNL_CUDA=OFF or no nvcc)"); }

#else

static int need_device(void)
{
    if (mdnl_cuda_device_count() == 0) {
        cr_skip_test("no CUDA device present");
        return 0;
    }
    return 1;
}

/* GPU counts of f at cutoff equal the CPU twin's, total and two columns,
 * with one cutoff and with per-pair cutoffs (the largest = cutoff; one pair
 * at 0: never counted). */
static void check_frame(mdnl_coord_cuda *cc, const mdnl_frame *f, double cutoff, const char *label)
{
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(f, cutoff, &pos4);
    const float(*cp)[4] = (const float(*)[4])pos4;
    const size_t n = (size_t)(f->natoms > 0 ? f->natoms : 1);
    int32_t *c = malloc(n * 2 * sizeof *c), *d = malloc(n * 2 * sizeof *d), *types = malloc(n * sizeof *types);
    const int32_t cols[2][2] = {{0, 1}, {1, 1}};
    /* types: species 0 and 1, and every 7th atom a third type */
    for (int64_t i = 0; i < f->natoms; ++i)
        types[i] = i % 7 == 3 ? 2 : f->species[i] % 2;
    const double cut[3][3] = {{cutoff, 0.7 * cutoff, 0.9 * cutoff},
                              {0.7 * cutoff, 0.55 * cutoff, 0.0},
                              {0.9 * cutoff, 0.0, 0.8 * cutoff}};
    mdnl_coord_cuts cuts;
    memset(&cuts, 0, sizeof cuts);
    cuts.ntypes = 3;
    cuts.types = types;
    for (int k = 0; k < 9; ++k)
        cuts.cut2[k] = (float)(cut[k / 3][k % 3] * cut[k / 3][k % 3]);
    for (int withcuts = 0; withcuts < 2; ++withcuts)
        for (int nc = 0; nc <= 2; nc += 2) {
            const mdnl_coord_cuts *pc = withcuts ? &cuts : NULL;
            memset(d, 0xff, n * 2 * sizeof *d);
            cr_assert_eq(mdnl_coord_frame_cpu(&g, cp, f->species, nc, nc ? cols : NULL, pc, c), MDNL_OK);
            cr_assert_eq(mdnl_coord_frame_cuda(cc, &g, cp, f->species, nc, nc ? cols : NULL, pc, d), MDNL_OK, "%s",
                         mdnl_last_error());
            cr_expect_eq(memcmp(c, d, (size_t)f->natoms * (nc ? nc : 1) * sizeof *c), 0,
                         "%s (%d columns, %s): GPU counts differ from the CPU twin", label, nc,
                         withcuts ? "per-pair cutoffs" : "one cutoff");
        }
    free(c), free(d), free(types), free(pos4);
}

Test(coord_gpu, counts_equal_the_cpu_twin_in_every_box)
{
    if (!need_device())
        return;
    mdnl_coord_cuda *cc = NULL;
    cr_assert_eq(mdnl_coord_cuda_create(NULL, &cc), MDNL_OK, "%s", mdnl_last_error());
    const char *kinds[] = {"orthorhombic", "triclinic", "open", "mixed pbc"};
    for (int kind = 0; kind < 4; ++kind) {
        mdnl_frame f;
        rdf_random(&f, 5000, kind, 15.0, 0);
        check_frame(cc, &f, 2.5, kinds[kind]);
        check_frame(cc, &f, 9.0, kinds[kind]); /* beyond half the box: the thread-per-atom walk */
        mdnl_frame_free(&f);
    }
    mdnl_frame f = fixture_load("ka_mixture");
    check_frame(cc, &f, 1.5, "ka 1.5");
    mdnl_frame_free(&f);
    /* a dense liquid with cells of over 32 atoms (several home chunks a cell) */
    rdf_random(&f, 40000, 0, 20.0, 0);
    check_frame(cc, &f, 2.5, "dense");
    mdnl_frame_free(&f);
    f = fixture_load("ka_mixture");
    /* and ASE/freud's totals */
    static int32_t ref[4 * 1024];
    int nc = 0;
    const int64_t n = coord_reference("ka-1.5", ref, 4 * 1024, &nc);
    float(*pos4)[4];
    mdnl_geom g = fixture_prepare(&f, 1.5, &pos4);
    int32_t *d = malloc((size_t)n * sizeof *d);
    cr_assert_eq(mdnl_coord_frame_cuda(cc, &g, (const float(*)[4])pos4, f.species, 0, NULL, NULL, d), MDNL_OK);
    for (int64_t i = 0; i < n; ++i)
        cr_expect_eq(d[i], ref[i * 4], "atom %lld: GPU %d ASE %d", (long long)i, d[i], ref[i * 4]);
    free(d), free(pos4);
    mdnl_frame_free(&f);
    mdnl_coord_cuda_free(cc);
}

#endif

/* test_pair_shift_gpu.c — the CUDA post-pass of image shifts and vectors
 * (kernels/pair_shift.cu) against its CPU twin (pair_shift_cpu.c), byte for
 * byte, and `mdnl neighbors --with shift,vector` on --backend cuda against
 * --backend cpu, TSV and HDF5 byte for byte.
 *
 * Frames: triclinic, partly periodic, small (cutoff beyond half the box),
 * open, and a dense 4000-atom periodic liquid (the cell list's dense path),
 * atoms partly outside the cell; full and half lists. Skips when no device
 * is present; CUDA is touched only in test bodies (Criterion forks per test).
 * The CPU twin's own oracle is test_pair_shift.c. */
#define _POSIX_C_SOURCE 200809L
#include "device.h"
#include "nlist.h"
#include "pair_shift.h"
#include "shift_fixtures.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef MDNL_HAVE_CUDA
#include "nlist_cuda.h"
#include "pair_shift_cuda.h"
#endif

#include "cli_test_util.h"

#define SKIP_WITHOUT_DEVICE()                                                                                          \
    do {                                                                                                               \
        if (mdnl_cuda_device_count() == 0)                                                                             \
            cr_skip_test("no CUDA device");                                                                            \
    } while (0)

TestSuite(pair_shift_gpu, .init = make_tmpdir, .fini = remove_tmpdir);

#ifdef MDNL_HAVE_CUDA
static const shift_case cases[] = {
    {"triclinic", 300, {{12, 0, 0}, {2.4, 11, 0}, {-1.4, 1.8, 10.0}}, {true, true, true}, 2.6},
    {"triclinic periodic in x and z", 300, {{12, 0, 0}, {2.4, 11, 0}, {-1.4, 1.8, 10.0}}, {true, false, true}, 2.6},
    {"small cell, cutoff beyond half the box",
     4,
     {{2, 0, 0}, {0.5, 2.2, 0}, {0.3, -0.4, 2.4}},
     {true, true, true},
     3.1},
    {"open", 200, {{0}}, {false, false, false}, 2.0},
    {"dense liquid", 4000, {{16.8, 0, 0}, {0, 16.8, 0}, {0, 0, 16.8}}, {true, true, true}, 2.5},
};

static void make_frame(const shift_case *c, uint64_t seed, mdnl_frame *f)
{
    shift_frame(c, seed, -0.2, 1.4, 12.0, f);
}
#endif

Test(pair_shift_gpu, device_pass_equals_the_cpu_twin_byte_for_byte)
{
    SKIP_WITHOUT_DEVICE();
#ifdef MDNL_HAVE_CUDA
    mdnl_cuda_ctx *ctx = NULL;
    mdnl_shift_cuda *sc = NULL;
    cr_assert_eq(mdnl_cuda_ctx_create(&ctx), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_shift_cuda_create(&sc), MDNL_OK, "%s", mdnl_last_error());
    for (unsigned c = 0; c < sizeof cases / sizeof *cases; ++c)
        for (int kind = MDNL_LIST_HALF; kind <= MDNL_LIST_FULL; ++kind) {
            const char *kn = kind == MDNL_LIST_FULL ? "full" : "half";
            mdnl_frame f;
            make_frame(&cases[c], 11 + c, &f);
            mdnl_geom g;
            float(*pos4)[4] = malloc((size_t)(f.natoms + 1) * sizeof *pos4);
            cr_assert_not_null(pos4);
            cr_assert_eq(mdnl_geom_prepare(&f, cases[c].rc, &g, pos4), MDNL_OK, "%s", mdnl_last_error());
            mdnl_nlist want = {0}, got = {0};
            cr_assert_eq(
                mdnl_nlist_build_cpu(&g, (const float(*)[4])pos4, MDNL_METHOD_CELL, (mdnl_list_kind)kind, &want),
                MDNL_OK);
            cr_assert_eq(
                mdnl_nlist_build_cuda(ctx, &g, (const float(*)[4])pos4, MDNL_METHOD_AUTO, (mdnl_list_kind)kind, &got),
                MDNL_OK, "%s", mdnl_last_error());
            cr_assert_eq(got.npairs, want.npairs, "%s (%s): the lists differ", cases[c].name, kn);
            const size_t np = (size_t)want.npairs + 1;
            int32_t(*S)[3] = malloc(np * sizeof *S), (*dS)[3] = malloc(np * sizeof *dS);
            double(*D)[3] = malloc(np * sizeof *D), (*dD)[3] = malloc(np * sizeof *dD);
            cr_assert(S && dS && D && dD);
            cr_assert_eq(mdnl_pair_shifts_cpu(&f, &g, (const float(*)[4])pos4, &want, kind == MDNL_LIST_HALF, S, D),
                         MDNL_OK, "%s", mdnl_last_error());
            mdnl_nlist_dev dev;
            cr_assert_eq(mdnl_nlist_cuda_last(ctx, &dev), MDNL_OK);
            cr_assert_eq(dev.npairs, want.npairs);
            cr_assert_eq(
                mdnl_pair_shifts_cuda_host(sc, mdnl_cuda_ctx_stream(ctx), &f, &g, &dev, kind == MDNL_LIST_HALF, dS, dD),
                MDNL_OK, "%s", mdnl_last_error());
            cr_expect(memcmp(S, dS, (size_t)want.npairs * sizeof *S) == 0, "%s (%s): S bytes differ", cases[c].name,
                      kn);
            cr_expect(memcmp(D, dD, (size_t)want.npairs * sizeof *D) == 0, "%s (%s): D bytes differ", cases[c].name,
                      kn);
            cr_expect(want.npairs > 0, "%s: the case has pairs", cases[c].name);
            free(S), free(dS), free(D), free(dD);
            mdnl_nlist_free(&want);
            mdnl_nlist_free(&got);
            free(pos4);
            mdnl_frame_free(&f);
        }
    mdnl_shift_cuda_free(sc);
    mdnl_cuda_ctx_free(ctx);
#endif
}

Test(pair_shift_gpu, neighbors_with_shift_vector_on_cuda_is_the_cpu_output_byte_for_byte)
{
    SKIP_WITHOUT_DEVICE();
    const struct {
        const char *file;
        double rc;
    } in[] = {{"triclinic.extxyz", 3.0},
              {"graphene-noisy.extxyz", 2.5},
              {"trajectory-3frames.extxyz", 3.0},
              {"h5md/box_td33.h5md", 2.5}};
    for (unsigned k = 0; k < sizeof in / sizeof *in; ++k)
        for (int full = 0; full <= 1; ++full)
            for (int h5 = 0; h5 <= 1; ++h5) {
                const char *ext = h5 ? "h5" : "tsv", *list = full ? "full" : "half";
                for (int cuda = 0; cuda <= 1; ++cuda)
                    cr_assert_eq(mdnl("neighbors %s/%s -c %g --list %s --with shift,vector --backend %s -q -o %s.%s",
                                      MDNL_DATA_DIR, in[k].file, in[k].rc, list, cuda ? "cuda" : "cpu",
                                      cuda ? "gpu" : "cpu", ext),
                                 0, "%s: %s", in[k].file, err_text);
                cr_expect_eq(sh("cmp cpu.%s gpu.%s", ext, ext), 0, "%s, %s list, %s: CPU and CUDA outputs differ: %s",
                             in[k].file, list, ext, out_text);
            }
}

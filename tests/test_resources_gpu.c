/* test_resources_gpu.c — SPEC §7 on the device: a frame whose neighbor list
 * cannot fit in device memory is MDNL_ERR_RESOURCE (exit 4) with a message
 * that names the bytes needed and the bytes free, not a crash, and the
 * context stays usable for the next (small) frame. 300,000 atoms inside a
 * cube of edge 0.5 with cutoff 1: every pair is a neighbor, 4.5e10 pairs,
 * ~360 GB of list, more than any single GPU holds. Skips without a device
 * (it is run by tools/gpu/run_suite.sh on the GPU host). */
#include "device.h"
#include "frame.h"
#include "geometry.h"
#include "nlist.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#ifdef MDNL_HAVE_CUDA
#include "nlist_cuda.h"

static void dense_frame(mdnl_frame *f, int64_t n, double edge)
{
    memset(f, 0, sizeof *f);
    cr_assert_eq(mdnl_frame_reserve(f, n), MDNL_OK);
    f->natoms = n;
    f->nspecies = 1;
    strcpy(f->symbols[0], "Ar");
    uint64_t s = 12345;
    for (int64_t i = 0; i < n; ++i) {
        f->species[i] = 0;
        for (int k = 0; k < 3; ++k) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            f->pos[i][k] = edge * (double)(s >> 11) * 0x1.0p-53;
        }
    }
}
#endif

Test(resources_gpu, list_too_large_for_the_device_is_a_resource_error_with_the_numbers)
{
#ifdef MDNL_HAVE_CUDA
    if (mdnl_cuda_device_count() == 0)
        cr_skip_test("no CUDA device");
    const int64_t n = 300000;
    mdnl_frame f;
    dense_frame(&f, n, 0.5);
    float(*pos4)[4] = malloc((size_t)(n + 1) * sizeof *pos4);
    cr_assert(pos4);
    mdnl_geom g;
    mdnl_work_set_limit(1e300); /* past the work guard (exit 3), to the device allocation */
    cr_assert_eq(mdnl_geom_prepare(&f, 1.0, &g, pos4), MDNL_OK, "%s", mdnl_last_error());
    mdnl_cuda_ctx *ctx = NULL;
    cr_assert_eq(mdnl_cuda_ctx_create(&ctx), MDNL_OK, "%s", mdnl_last_error());
    mdnl_nlist_dev dev;
    mdnl_status st = mdnl_nlist_build_cuda_dev(ctx, &g, (const float(*)[4])pos4, mdnl_nlist_cuda_auto(&g),
                                               MDNL_LIST_HALF, &dev);
    const char *msg = mdnl_last_error();
    cr_expect_eq(st, MDNL_ERR_RESOURCE, "status %d: %s", (int)st, msg);
    cr_expect(strstr(msg, "out of device memory") != NULL, "message: %s", msg);
    cr_expect(strstr(msg, "needed") != NULL && strstr(msg, "bytes free") != NULL, "message: %s", msg);
    cr_expect(strchr(msg, '\n') == NULL, "one line: %s", msg);

    /* The context recovers: a small frame builds afterwards. */
    mdnl_frame small;
    dense_frame(&small, 100, 3.0);
    mdnl_geom gs;
    cr_assert_eq(mdnl_geom_prepare(&small, 1.0, &gs, pos4), MDNL_OK, "%s", mdnl_last_error());
    mdnl_nlist l;
    memset(&l, 0, sizeof l);
    st = mdnl_nlist_build_cuda(ctx, &gs, (const float(*)[4])pos4, mdnl_nlist_cuda_auto(&gs), MDNL_LIST_HALF, &l);
    cr_expect_eq(st, MDNL_OK, "after the failure: %s", mdnl_last_error());
    mdnl_nlist_free(&l);
    mdnl_frame_free(&small);
    mdnl_cuda_ctx_free(ctx);
    free(pos4);
    mdnl_frame_free(&f);
#else
    cr_skip_test("built without CUDA (MDNL_CUDA=OFF or no nvcc)");
#endif
}

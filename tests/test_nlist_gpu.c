/* test_nlist_gpu.c — the CUDA neighbor lists (nlist_*.cu) against the CPU twin.
 *
 * Oracle: mdnl_nlist_build_cpu with brute force (the cell twin for the
 * 200k-atom frame, where brute force takes too long on the CPU). Every GPU
 * method, both list kinds, on open, orthorhombic, triclinic, partially
 * periodic and tiny boxes (cutoff beyond the box, images past the nearest),
 * an empty frame and a lone atom with self images; a jittered FCC in
 * lattice order and shuffled (the kernels work in cell order whatever the
 * input's: the shuffled rows are the sorted rows relabelled). A set comparison first,
 * whose message names the first missing or extra pair, then byte equality of
 * offsets, j and d. Skips when no device is present; CUDA is touched only in
 * test bodies (Criterion forks per test).
 */
#define _POSIX_C_SOURCE 200112L /* setenv */
#include "device.h"
#include "nlist.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MDNL_HAVE_CUDA
#include "nlist_cuda.h"
#include "nlist_cuda_hooks.h"
#endif

#define SKIP_WITHOUT_DEVICE()                                                                                          \
    do {                                                                                                               \
        if (mdnl_cuda_device_count() == 0)                                                                             \
            cr_skip_test("no CUDA device");                                                                            \
    } while (0)

#ifdef MDNL_HAVE_CUDA
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

/* perm[0..n) a random permutation of 0..n-1 (Fisher-Yates from `seed`). */
static void random_permutation(int64_t *perm, int64_t n, uint64_t seed)
{
    for (int64_t k = 0; k < n; ++k)
        perm[k] = k;
    rng_state = seed;
    for (int64_t k = n - 1; k > 0; --k) {
        const int64_t j = (int64_t)(uniform() * (double)(k + 1));
        const int64_t t = perm[k];
        perm[k] = perm[j];
        perm[j] = t;
    }
}

/* f's positions: those of `from` (a frame of as many atoms) in a random
 * order, atom k taking from's atom perm[k] (random_permutation of `seed`). */
static void shuffle_positions(mdnl_frame *f, const mdnl_frame *from, uint64_t seed)
{
    int64_t *perm = malloc((size_t)f->natoms * sizeof *perm);
    cr_assert_not_null(perm);
    random_permutation(perm, f->natoms, seed);
    for (int64_t k = 0; k < f->natoms; ++k)
        memcpy(f->pos[k], from->pos[perm[k]], sizeof f->pos[k]);
    free(perm);
}

typedef enum box_type { BOX_OPEN, BOX_ORTHO, BOX_TRICLINIC, BOX_TTF, BOX_TINY } box_type;
static const char *const box_names[] = {"open", "orthorhombic", "triclinic", "pbc T T F", "tiny (cutoff > box)"};

/* n random atoms; positions also fall outside the cell so that wrapping is
 * exercised. */
static void random_frame(mdnl_frame *f, int64_t n, box_type box, double edge, uint64_t seed)
{
    memset(f, 0, sizeof *f);
    rng_state = seed;
    cr_assert_eq(mdnl_frame_reserve(f, n > 0 ? n : 1), MDNL_OK);
    f->natoms = n;
    f->nspecies = 1;
    strcpy(f->symbols[0], "Ar");
    if (box != BOX_OPEN) {
        f->box.has_lattice = true;
        f->box.h[0][0] = edge;
        f->box.h[1][1] = edge * 0.9;
        f->box.h[2][2] = edge * 1.1;
        if (box == BOX_TRICLINIC || box == BOX_TINY) {
            f->box.h[1][0] = 0.3 * edge;
            f->box.h[2][0] = -0.2 * edge;
            f->box.h[2][1] = 0.25 * edge;
        }
        f->box.pbc[0] = f->box.pbc[1] = true;
        f->box.pbc[2] = box != BOX_TTF;
    }
    for (int64_t i = 0; i < n; ++i) {
        double s[3] = {uniform() * 1.2 - 0.1, uniform() * 1.2 - 0.1, uniform() * 1.2 - 0.1};
        for (int a = 0; a < 3; ++a)
            f->pos[i][a] = box == BOX_OPEN ? s[a] * edge
                                           : s[0] * f->box.h[0][a] + s[1] * f->box.h[1][a] + s[2] * f->box.h[2][a];
        f->species[i] = 0;
    }
}

/* n random atoms in a periodic cube at LJ liquid density 0.8442 (the
 * positions of random_frame's orthorhombic box, then the box made cubic). */
static void lj_cube_frame(mdnl_frame *f, int64_t n, uint64_t seed)
{
    const double edge = cbrt((double)n / 0.8442);
    random_frame(f, n, BOX_ORTHO, edge, seed);
    f->box.h[1][1] = f->box.h[2][2] = edge;
}

/* Rectangular graphene sheet, 4-atom cells, periodic in x and y. */
static void graphene_frame(mdnl_frame *f, int nx, int ny, double b, int periodic)
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
    if (periodic) {
        f->box.has_lattice = true;
        f->box.h[0][0] = nx * a;
        f->box.h[1][1] = ny * c;
        f->box.h[2][2] = 20.0;
        f->box.pbc[0] = f->box.pbc[1] = true;
    }
}

typedef struct prepared {
    mdnl_geom g;
    float (*pos4)[4];
} prepared;

static prepared prepare(const mdnl_frame *f, double rc)
{
    prepared p;
    p.pos4 = malloc((size_t)(f->natoms + 1) * sizeof *p.pos4);
    cr_assert_not_null(p.pos4);
    cr_assert_eq(mdnl_geom_prepare(f, rc, &p.g, p.pos4), MDNL_OK, "%s", mdnl_last_error());
    return p;
}

/* Row-by-row merge of two sorted lists: the first pair in one and not the
 * other, then byte equality. */
static void expect_same_list(const mdnl_nlist *want, const mdnl_nlist *got, const char *what)
{
    cr_assert_eq(got->natoms, want->natoms, "%s: %lld rows, expected %lld", what, (long long)got->natoms,
                 (long long)want->natoms);
    for (int64_t i = 0; i < want->natoms; ++i) {
        int64_t a = want->offsets[i], ae = want->offsets[i + 1];
        int64_t b = got->offsets[i], be = got->offsets[i + 1];
        while (a < ae || b < be) {
            if (b >= be || (a < ae && (want->j[a] < got->j[b] || (want->j[a] == got->j[b] && want->d[a] < got->d[b])))) {
                cr_assert(0, "%s: GPU list misses pair (i=%lld, j=%d, d=%.9g)", what, (long long)i, want->j[a],
                          (double)want->d[a]);
            }
            if (a >= ae || want->j[a] != got->j[b] || want->d[a] != got->d[b]) {
                cr_assert(0, "%s: GPU list has an extra pair (i=%lld, j=%d, d=%.9g)", what, (long long)i, got->j[b],
                          (double)got->d[b]);
            }
            ++a, ++b;
        }
    }
    cr_assert_eq(got->npairs, want->npairs, "%s: %lld pairs, expected %lld", what, (long long)got->npairs,
                 (long long)want->npairs);
    cr_assert(memcmp(got->offsets, want->offsets, (size_t)(want->natoms + 1) * sizeof *want->offsets) == 0,
              "%s: offsets differ", what);
    cr_assert(memcmp(got->j, want->j, (size_t)want->npairs * sizeof *want->j) == 0, "%s: j bytes differ", what);
    cr_assert(memcmp(got->d, want->d, (size_t)want->npairs * sizeof *want->d) == 0, "%s: d bytes differ", what);
}

static const mdnl_method gpu_methods[] = {MDNL_METHOD_BRUTE_ATOMIC, MDNL_METHOD_BRUTE_NOATOMIC, MDNL_METHOD_CELL,
                                          MDNL_METHOD_AUTO};

/* Every GPU method x both kinds against the CPU oracle on one frame. */
static void check_frame(mdnl_cuda_ctx *ctx, const mdnl_frame *f, double rc, mdnl_method oracle, const char *label)
{
    prepared p = prepare(f, rc);
    for (int kind = MDNL_LIST_HALF; kind <= MDNL_LIST_FULL; ++kind) {
        mdnl_nlist want = {0};
        cr_assert_eq(mdnl_nlist_build_cpu(&p.g, (const float(*)[4])p.pos4, oracle, (mdnl_list_kind)kind, &want),
                     MDNL_OK, "%s", mdnl_last_error());
        for (unsigned m = 0; m < sizeof gpu_methods / sizeof *gpu_methods; ++m) {
            mdnl_nlist got = {0};
            char what[256];
            snprintf(what, sizeof what, "%s, %lld atoms, cutoff %g, %s list, %s", label, (long long)f->natoms, rc,
                     kind == MDNL_LIST_FULL ? "full" : "half", mdnl_method_name(gpu_methods[m]));
            cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, gpu_methods[m],
                                               (mdnl_list_kind)kind, &got),
                         MDNL_OK, "%s: %s", what, mdnl_last_error());
            expect_same_list(&want, &got, what);
            mdnl_nlist_free(&got);
        }
        /* every shipped cell path forced (the default picks one by density):
         * sparse and dense paths on every fixture, box and list kind */
        for (int v = MDNL_CELL_PATH_AUTO + 1; v < MDNL_CELL_NPATHS; ++v) {
            mdnl_nlist got = {0};
            char what[256];
            snprintf(what, sizeof what, "%s, %lld atoms, cutoff %g, %s list, cell path %s", label,
                     (long long)f->natoms, rc, kind == MDNL_LIST_FULL ? "full" : "half", mdnl_cell_path_name(v));
            mdnl_cuda_ctx_set_cell_path(ctx, v);
            cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL,
                                               (mdnl_list_kind)kind, &got),
                         MDNL_OK, "%s: %s", what, mdnl_last_error());
            mdnl_cuda_ctx_set_cell_path(ctx, MDNL_CELL_PATH_AUTO);
            expect_same_list(&want, &got, what);
            mdnl_nlist_free(&got);
        }
        mdnl_nlist_free(&want);
    }
    free(p.pos4);
}

static mdnl_cuda_ctx *new_ctx(void)
{
    mdnl_cuda_ctx *ctx = NULL;
    cr_assert_eq(mdnl_cuda_ctx_create(&ctx), MDNL_OK, "%s", mdnl_last_error());
    return ctx;
}

static void random_boxes(box_type box, double edge, double rc, const int64_t *sizes, int nsizes)
{
    SKIP_WITHOUT_DEVICE();
    mdnl_cuda_ctx *ctx = new_ctx();
    for (int s = 0; s < nsizes; ++s)
        for (uint64_t seed = 1; seed <= 3; ++seed) {
            mdnl_frame f;
            random_frame(&f, sizes[s], box, edge, seed * 7919 + (uint64_t)box);
            char label[96];
            snprintf(label, sizeof label, "%s box, seed %llu", box_names[box], (unsigned long long)seed);
            check_frame(ctx, &f, rc, MDNL_METHOD_BRUTE_NOATOMIC, label);
            mdnl_frame_free(&f);
        }
    mdnl_cuda_ctx_free(ctx);
}
#endif

Test(nlist_gpu, open_random_frames_equal_cpu_twin)
{
#ifdef MDNL_HAVE_CUDA
    const int64_t sizes[] = {2, 37, 300, 2500};
    random_boxes(BOX_OPEN, 14.0, 2.5, sizes, 4);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, orthorhombic_periodic_random_frames_equal_cpu_twin)
{
#ifdef MDNL_HAVE_CUDA
    const int64_t sizes[] = {3, 64, 700, 3000};
    random_boxes(BOX_ORTHO, 15.0, 2.5, sizes, 4);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, triclinic_periodic_random_frames_equal_cpu_twin)
{
#ifdef MDNL_HAVE_CUDA
    const int64_t sizes[] = {5, 100, 1000, 2600};
    random_boxes(BOX_TRICLINIC, 14.0, 3.0, sizes, 4);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, partially_periodic_ttf_random_frames_equal_cpu_twin)
{
#ifdef MDNL_HAVE_CUDA
    const int64_t sizes[] = {4, 90, 1200};
    random_boxes(BOX_TTF, 12.0, 2.2, sizes, 3);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, tiny_box_cutoff_beyond_width_includes_far_images)
{
#ifdef MDNL_HAVE_CUDA
    /* edge 3 (triclinic), cutoff 7: image_max 3, rows of hundreds of
     * entries, so the heapsort path of the row sort runs too */
    const int64_t sizes[] = {1, 2, 5, 17};
    random_boxes(BOX_TINY, 3.0, 7.0, sizes, 4);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, zero_atom_frame_gives_empty_list)
{
#ifdef MDNL_HAVE_CUDA
    SKIP_WITHOUT_DEVICE();
    mdnl_cuda_ctx *ctx = new_ctx();
    for (int box = BOX_OPEN; box <= BOX_TINY; ++box) {
        mdnl_frame f;
        random_frame(&f, 0, (box_type)box, 10.0, 1);
        prepared p = prepare(&f, 2.0);
        for (unsigned m = 0; m < sizeof gpu_methods / sizeof *gpu_methods; ++m) {
            mdnl_nlist got = {0};
            cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, gpu_methods[m], MDNL_LIST_FULL,
                                               &got),
                         MDNL_OK, "%s", mdnl_last_error());
            cr_expect_eq(got.natoms, 0);
            cr_expect_eq(got.npairs, 0);
            cr_expect_eq(got.offsets[0], 0);
            mdnl_nlist_free(&got);
        }
        free(p.pos4);
        mdnl_frame_free(&f);
    }
    mdnl_cuda_ctx_free(ctx);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, one_atom_self_images_full_both_signs_half_once)
{
#ifdef MDNL_HAVE_CUDA
    SKIP_WITHOUT_DEVICE();
    mdnl_cuda_ctx *ctx = new_ctx();
    mdnl_frame f;
    random_frame(&f, 1, BOX_ORTHO, 2.0, 5);
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 2.0;
    /* cutoff 2.1 in a 2x2x2 cube: the 6 face images at distance 2 */
    prepared p = prepare(&f, 2.1);
    for (unsigned m = 0; m < sizeof gpu_methods / sizeof *gpu_methods; ++m) {
        mdnl_nlist full = {0}, half = {0};
        cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, gpu_methods[m], MDNL_LIST_FULL, &full),
                     MDNL_OK, "%s", mdnl_last_error());
        cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, gpu_methods[m], MDNL_LIST_HALF, &half),
                     MDNL_OK, "%s", mdnl_last_error());
        cr_expect_eq(full.npairs, 6, "%s: full list of a lone atom has %lld self images, expected 6",
                     mdnl_method_name(gpu_methods[m]), (long long)full.npairs);
        cr_expect_eq(half.npairs, 3, "%s: half list has %lld self images, expected 3",
                     mdnl_method_name(gpu_methods[m]), (long long)half.npairs);
        for (int64_t k = 0; k < full.npairs; ++k) {
            cr_expect_eq(full.j[k], 0);
            cr_expect(fabsf(full.d[k] - 2.0f) < 1e-6f, "distance %g", (double)full.d[k]);
        }
        mdnl_nlist_free(&full);
        mdnl_nlist_free(&half);
    }
    free(p.pos4);
    mdnl_frame_free(&f);
    /* and against the oracle with a larger cutoff (images up to 3 away) */
    random_frame(&f, 1, BOX_TRICLINIC, 2.0, 6);
    check_frame(ctx, &f, 5.5, MDNL_METHOD_BRUTE_NOATOMIC, "lone atom, triclinic");
    mdnl_frame_free(&f);
    mdnl_cuda_ctx_free(ctx);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, graphene_lattice_open_and_periodic_equal_cpu_twin)
{
#ifdef MDNL_HAVE_CUDA
    SKIP_WITHOUT_DEVICE();
    mdnl_cuda_ctx *ctx = new_ctx();
    const double cuts[] = {1.6, 1.9, 2.6, 3.0};
    for (int periodic = 0; periodic <= 1; ++periodic)
        for (int c = 0; c < 4; ++c) {
            mdnl_frame f;
            graphene_frame(&f, 24, 13, 1.42, periodic);
            check_frame(ctx, &f, cuts[c], MDNL_METHOD_BRUTE_NOATOMIC, periodic ? "graphene, pbc T T F" : "graphene, open");
            mdnl_frame_free(&f);
        }
    /* the analytic first shell: 3 neighbours at 1.42 for every atom */
    mdnl_frame f;
    graphene_frame(&f, 30, 17, 1.42, 1);
    prepared p = prepare(&f, 1.6);
    mdnl_nlist l = {0};
    cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL, MDNL_LIST_FULL, &l),
                 MDNL_OK);
    for (int64_t i = 0; i < l.natoms; ++i)
        cr_assert_eq(l.offsets[i + 1] - l.offsets[i], 3, "atom %lld has %lld neighbours", (long long)i,
                     (long long)(l.offsets[i + 1] - l.offsets[i]));
    mdnl_nlist_free(&l);
    free(p.pos4);
    mdnl_frame_free(&f);
    mdnl_cuda_ctx_free(ctx);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, stage_overflow_retries_and_smem_overflow_falls_back_to_global)
{
#ifdef MDNL_HAVE_CUDA
    SKIP_WITHOUT_DEVICE();
    mdnl_cuda_ctx *ctx = new_ctx();
    mdnl_cuda_ctx_set_stage_capacity(ctx, 1);
    mdnl_cuda_ctx_set_smem_budget(ctx, 0);
    mdnl_frame f;
    random_frame(&f, 1500, BOX_TRICLINIC, 12.0, 99);
    check_frame(ctx, &f, 3.0, MDNL_METHOD_BRUTE_NOATOMIC, "capacity 1, no shared memory");
    cr_expect(mdnl_cuda_ctx_retries(ctx) > 0, "the staged pass never overflowed its capacity of 1");
    /* a budget smaller than one block's rows: some blocks in shared memory,
     * some in global memory */
    mdnl_cuda_ctx_set_smem_budget(ctx, 4096);
    check_frame(ctx, &f, 3.0, MDNL_METHOD_BRUTE_NOATOMIC, "4 KiB of shared memory");
    mdnl_frame_free(&f);
    mdnl_cuda_ctx_free(ctx);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, cell_sparse_stage_overflow_builds_again)
{
#ifdef MDNL_HAVE_CUDA
    SKIP_WITHOUT_DEVICE();
    mdnl_cuda_ctx *ctx = new_ctx();
    /* sparse-stage learns that its CSR outgrew its capacity (stage_cap pairs
     * an atom) only at the build's last synchronisation and then builds
     * again. Rows here are ~100 pairs, longer than the 8 keys kept in
     * registers (walked again): a capacity of 1, then one of 10, must each
     * overflow once and still give the twin's list. */
    mdnl_frame f;
    random_frame(&f, 1500, BOX_TRICLINIC, 12.0, 99);
    prepared p = prepare(&f, 3.0);
    const int caps[2] = {1, 10};
    for (int kind = MDNL_LIST_HALF; kind <= MDNL_LIST_FULL; ++kind)
        for (int c = 0; c < 2; ++c) {
            mdnl_nlist want = {0}, got = {0};
            char what[128];
            snprintf(what, sizeof what, "cell path sparse-stage, capacity %d, %s list", caps[c],
                     kind == MDNL_LIST_FULL ? "full" : "half");
            cr_assert_eq(
                mdnl_nlist_build_cpu(&p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL, (mdnl_list_kind)kind, &want),
                MDNL_OK, "%s", mdnl_last_error());
            mdnl_cuda_ctx_set_cell_path(ctx, MDNL_CELL_PATH_SPARSE_STAGE);
            mdnl_cuda_ctx_set_stage_capacity(ctx, caps[c]);
            const int64_t before = mdnl_cuda_ctx_retries(ctx);
            cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL,
                                               (mdnl_list_kind)kind, &got),
                         MDNL_OK, "%s: %s", what, mdnl_last_error());
            cr_expect(mdnl_cuda_ctx_retries(ctx) > before, "%s: the staged pass never overflowed", what);
            expect_same_list(&want, &got, what);
            mdnl_nlist_free(&want);
            mdnl_nlist_free(&got);
        }
    free(p.pos4);
    mdnl_frame_free(&f);
    mdnl_cuda_ctx_free(ctx);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, dense_walk_output_outgrown_builds_again)
{
#ifdef MDNL_HAVE_CUDA
    SKIP_WITHOUT_DEVICE();
    /* dense-walk sizes its output from the mean row of the whole box (times
     * 1.2) and learns only at the build's last synchronisation that the CSR
     * outgrew it: its rows kernel then writes nothing, and the build runs
     * again at the exact size. The liquid fills about half of its box here,
     * so its rows are about twice the estimate. */
    mdnl_frame f;
    lj_cube_frame(&f, 30000, 77);
    f.box.h[0][0] *= 2.0;
    prepared p = prepare(&f, 2.5);
    for (int kind = MDNL_LIST_HALF; kind <= MDNL_LIST_FULL; ++kind) {
        mdnl_cuda_ctx *ctx = new_ctx(); /* output arrays not sized by an earlier build */
        mdnl_nlist want = {0}, got = {0};
        const char *what = kind == MDNL_LIST_FULL ? "dense-walk outgrown, full list" : "dense-walk outgrown, half list";
        cr_assert_eq(
            mdnl_nlist_build_cpu(&p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL, (mdnl_list_kind)kind, &want),
            MDNL_OK, "%s", mdnl_last_error());
        mdnl_cuda_ctx_set_cell_path(ctx, MDNL_CELL_PATH_DENSE_WALK);
        cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL,
                                           (mdnl_list_kind)kind, &got),
                     MDNL_OK, "%s: %s", what, mdnl_last_error());
        cr_expect(mdnl_cuda_ctx_retries(ctx) > 0, "%s: the output never outgrew its estimate", what);
        expect_same_list(&want, &got, what);
        mdnl_nlist_free(&want);
        mdnl_nlist_free(&got);
        mdnl_cuda_ctx_free(ctx);
    }
    free(p.pos4);
    mdnl_frame_free(&f);
#else
    cr_skip_test("built without CUDA");
#endif
}

#ifdef MDNL_HAVE_CUDA
/* A copy of f with its atoms in the order of cells of edge h (x fastest),
 * the order a spatially sorted trajectory has. */
static const int64_t *sort_keys;
static int by_key(const void *a, const void *b)
{
    const int64_t ka = sort_keys[*(const int64_t *)a], kb = sort_keys[*(const int64_t *)b];
    return (ka > kb) - (ka < kb);
}
static void cell_sorted_copy(const mdnl_frame *f, double h, mdnl_frame *out)
{
    const int64_t n = f->natoms;
    int64_t *key = malloc((size_t)n * sizeof *key), *idx = malloc((size_t)n * sizeof *idx);
    cr_assert(key && idx);
    for (int64_t i = 0; i < n; ++i) {
        int64_t c[3];
        for (int d = 0; d < 3; ++d)
            c[d] = (int64_t)floor(f->pos[i][d] / h) + 1000; /* the box starts at 0; a few atoms may sit just below */
        key[i] = (c[2] * 4096 + c[1]) * 4096 + c[0];
        idx[i] = i;
    }
    sort_keys = key;
    qsort(idx, (size_t)n, sizeof *idx, by_key);
    memset(out, 0, sizeof *out);
    cr_assert_eq(mdnl_frame_reserve(out, n), MDNL_OK);
    for (int64_t k = 0; k < n; ++k) {
        memcpy(out->pos[k], f->pos[idx[k]], sizeof out->pos[k]);
        out->species[k] = f->species[idx[k]];
    }
    out->natoms = n;
    out->nspecies = f->nspecies;
    memcpy(out->symbols, f->symbols, sizeof out->symbols);
    out->box = f->box;
    free(key);
    free(idx);
}
#endif

/* 200,000 atoms at LJ liquid density 0.8442 in a periodic cube, cutoff 3.0:
 * ~95 neighbours per atom, ~25 atoms per cell; the default path and every
 * forced cell path against the CPU cell twin. One test per list kind, so
 * that each instrumented run (tools/gpu/run_sanitizers.sh) is half as long. */
static void dense_200k(mdnl_list_kind kind)
{
#ifdef MDNL_HAVE_CUDA
    SKIP_WITHOUT_DEVICE();
    mdnl_cuda_ctx *ctx = new_ctx();
    const int64_t n = 200000;
    mdnl_frame f;
    lj_cube_frame(&f, n, 4242);
    prepared p = prepare(&f, 3.0);
    mdnl_nlist want = {0}, got = {0};
    cr_assert_eq(mdnl_nlist_build_cpu(&p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL, kind, &want), MDNL_OK);
    cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL, kind, &got), MDNL_OK,
                 "%s", mdnl_last_error());
    cr_expect(want.npairs > n * 40 * (kind == MDNL_LIST_FULL ? 2 : 1), "only %lld pairs", (long long)want.npairs);
    expect_same_list(&want, &got, kind == MDNL_LIST_FULL ? "200k dense, full" : "200k dense, half");
    for (int v = MDNL_CELL_PATH_AUTO + 1; v < MDNL_CELL_NPATHS; ++v) {
        char what[64];
        snprintf(what, sizeof what, "200k dense, cell path %s", mdnl_cell_path_name(v));
        mdnl_cuda_ctx_set_cell_path(ctx, v);
        cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL, kind, &got),
                     MDNL_OK, "%s", mdnl_last_error());
        if (v == MDNL_CELL_PATH_DENSE_WALK) /* random positions: rows unrelated in space, ~30% over 64 */
            cr_expect_eq(mdnl_cuda_ctx_walk_rows(ctx), 1, "random order: dense-walk's rows packed");
        mdnl_cuda_ctx_set_cell_path(ctx, MDNL_CELL_PATH_AUTO);
        expect_same_list(&want, &got, what);
    }
    /* the same atoms in cell order: dense-walk's other row layout, with the
     * same long rows */
    {
        mdnl_frame c;
        cell_sorted_copy(&f, 3.0, &c);
        prepared pc = prepare(&c, 3.0);
        mdnl_nlist want_c = {0}, got_c = {0};
        cr_assert_eq(mdnl_nlist_build_cpu(&pc.g, (const float(*)[4])pc.pos4, MDNL_METHOD_CELL, kind, &want_c), MDNL_OK);
        mdnl_cuda_ctx_set_cell_path(ctx, MDNL_CELL_PATH_DENSE_WALK);
        cr_assert_eq(mdnl_nlist_build_cuda(ctx, &pc.g, (const float(*)[4])pc.pos4, MDNL_METHOD_CELL, kind, &got_c),
                     MDNL_OK, "%s", mdnl_last_error());
        cr_expect_eq(mdnl_cuda_ctx_walk_rows(ctx), 0, "cell order: dense-walk's rows gathered");
        mdnl_cuda_ctx_set_cell_path(ctx, MDNL_CELL_PATH_AUTO);
        expect_same_list(&want_c, &got_c, "200k dense in cell order, cell path dense-walk");
        mdnl_nlist_free(&want_c);
        mdnl_nlist_free(&got_c);
        free(pc.pos4);
        mdnl_frame_free(&c);
    }
    /* the device-resident build reports the same size */
    mdnl_nlist_dev dev;
    cr_assert_eq(mdnl_nlist_build_cuda_dev(ctx, &p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL, kind, &dev),
                 MDNL_OK);
    cr_expect_eq(dev.npairs, want.npairs);
    mdnl_nlist_free(&want);
    mdnl_nlist_free(&got);
    free(p.pos4);
    mdnl_frame_free(&f);
    mdnl_cuda_ctx_free(ctx);
#else
    (void)kind;
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, dense_200k_atoms_half_list_equals_cpu_cell_twin) { dense_200k(MDNL_LIST_HALF); }

Test(nlist_gpu, dense_200k_atoms_full_list_equals_cpu_cell_twin) { dense_200k(MDNL_LIST_FULL); }

Test(nlist_gpu, device_bandwidth_from_clock_and_bus_width_or_zero_without_a_device)
{
    /* `mdnl bench`'s floor: 2 x memory clock x bus width / 8. Any HBM or
     * GDDR device of the last decade is between 0.1 and 100 TB/s; without a
     * device (or built without CUDA) it is 0, and the benchmark says it
     * assumed a rate. */
    const double bw = mdnl_cuda_device_bandwidth();
    if (mdnl_cuda_device_count() == 0) {
        cr_expect_eq(bw, 0.0, "no device, yet a bandwidth of %g B/s", bw);
        return;
    }
    cr_expect(bw > 1e11 && bw < 1e14, "%s: a bandwidth of %g B/s", mdnl_cuda_device_name(), bw);
}

Test(nlist_gpu, dense_walk_forced_where_it_does_not_fit_takes_sparse_stage)
{
#ifdef MDNL_HAVE_CUDA
    SKIP_WITHOUT_DEVICE();
    mdnl_cuda_ctx *ctx = new_ctx();
    /* an orthorhombic periodic box of edge 7 at cutoff 3: two cells an axis,
     * fewer than 2 stencil + 1, so a row may meet an atom twice (two images)
     * and dense-walk does not fit; forced, the build takes sparse-stage,
     * which builds on any geometry, and gives the twin's list */
    mdnl_frame f;
    random_frame(&f, 400, BOX_ORTHO, 7.0, 31);
    prepared p = prepare(&f, 3.0);
    cr_assert(p.g.ncell[0] < 2 * p.g.stencil[0] + 1, "the box has %d cells in x: dense-walk would fit",
              (int)p.g.ncell[0]);
    for (int kind = MDNL_LIST_HALF; kind <= MDNL_LIST_FULL; ++kind) {
        mdnl_nlist want = {0}, got = {0};
        const char *what = kind == MDNL_LIST_FULL ? "dense-walk forced, full list" : "dense-walk forced, half list";
        cr_assert_eq(
            mdnl_nlist_build_cpu(&p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL, (mdnl_list_kind)kind, &want),
            MDNL_OK, "%s", mdnl_last_error());
        mdnl_cuda_ctx_set_cell_path(ctx, MDNL_CELL_PATH_DENSE_WALK);
        cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL,
                                           (mdnl_list_kind)kind, &got),
                     MDNL_OK, "%s: %s", what, mdnl_last_error());
        mdnl_cuda_ctx_set_cell_path(ctx, MDNL_CELL_PATH_AUTO);
        cr_expect_eq(mdnl_cuda_ctx_walk_rows(ctx), -1, "%s: dense-walk ran", what);
        cr_expect_neq(mdnl_cuda_ctx_sparse_fused(ctx), -1, "%s: sparse-stage did not run", what);
        expect_same_list(&want, &got, what);
        mdnl_nlist_free(&want);
        mdnl_nlist_free(&got);
    }
    free(p.pos4);
    mdnl_frame_free(&f);
    mdnl_cuda_ctx_free(ctx);
#else
    cr_skip_test("built without CUDA");
#endif
}

#ifdef MDNL_HAVE_CUDA
/* FCC of nside^3 x 4 atoms at density 0.8442, every coordinate displaced
 * uniformly in [-0.05, 0.05], in lattice order (atoms close in space are
 * close in memory). */
static void fcc_frame(mdnl_frame *f, int nside, uint64_t seed)
{
    const double a = cbrt(4.0 / 0.8442);
    const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    const int64_t n = 4LL * nside * nside * nside;
    memset(f, 0, sizeof *f);
    cr_assert_eq(mdnl_frame_reserve(f, n), MDNL_OK);
    rng_state = seed;
    int64_t i = 0;
    for (int x = 0; x < nside; ++x)
        for (int y = 0; y < nside; ++y)
            for (int z = 0; z < nside; ++z)
                for (int b = 0; b < 4; ++b, ++i) {
                    const int c[3] = {x, y, z};
                    for (int d = 0; d < 3; ++d)
                        f->pos[i][d] = (c[d] + basis[b][d]) * a + 0.05 * (2.0 * uniform() - 1.0);
                    f->species[i] = 0;
                }
    f->natoms = n;
    f->nspecies = 1;
    strcpy(f->symbols[0], "Ar");
    f->box.has_lattice = true;
    f->box.h[0][0] = f->box.h[1][1] = f->box.h[2][2] = nside * a;
    f->box.pbc[0] = f->box.pbc[1] = f->box.pbc[2] = true;
}
#endif

Test(nlist_gpu, shuffled_frame_equals_cpu_twin_and_permutes_the_sorted_list)
{
#ifdef MDNL_HAVE_CUDA
    SKIP_WITHOUT_DEVICE();
    mdnl_cuda_ctx *ctx = new_ctx();
    /* 16^3 x 4 = 16,384 atoms, cutoff 2.5 (the dense paths: ~360 candidates
     * per atom, 55 neighbours), in lattice order and in random order */
    mdnl_frame f, s;
    fcc_frame(&f, 16, 77);
    fcc_frame(&s, 16, 77);
    const int64_t n = f.natoms;
    int64_t *perm = malloc((size_t)n * sizeof *perm); /* s's atom k is f's atom perm[k] */
    cr_assert_not_null(perm);
    random_permutation(perm, n, 2024);
    for (int64_t k = 0; k < n; ++k)
        memcpy(s.pos[k], f.pos[perm[k]], sizeof s.pos[k]);
    check_frame(ctx, &f, 2.5, MDNL_METHOD_CELL, "FCC in lattice order");
    check_frame(ctx, &s, 2.5, MDNL_METHOD_CELL, "FCC shuffled");
    /* the shuffled frame's rows are the sorted frame's, relabelled */
    prepared pf = prepare(&f, 2.5), ps = prepare(&s, 2.5);
    for (int kind = MDNL_LIST_HALF; kind <= MDNL_LIST_FULL; ++kind) {
        mdnl_nlist a = {0}, b = {0};
        cr_assert_eq(mdnl_nlist_build_cuda(ctx, &pf.g, (const float(*)[4])pf.pos4, MDNL_METHOD_CELL,
                                           (mdnl_list_kind)kind, &a),
                     MDNL_OK, "%s", mdnl_last_error());
        cr_expect_eq(mdnl_cuda_ctx_walk_rows(ctx), 0, "lattice order: dense-walk's rows gathered");
        cr_assert_eq(mdnl_nlist_build_cuda(ctx, &ps.g, (const float(*)[4])ps.pos4, MDNL_METHOD_CELL,
                                           (mdnl_list_kind)kind, &b),
                     MDNL_OK, "%s", mdnl_last_error());
        cr_expect_eq(mdnl_cuda_ctx_walk_rows(ctx), 1, "shuffled: dense-walk's rows packed");
        cr_assert_eq(a.npairs, b.npairs);
        if (kind == MDNL_LIST_FULL)
            for (int64_t k = 0; k < n; ++k) {
                const int64_t i = perm[k];
                const int64_t len = a.offsets[i + 1] - a.offsets[i];
                cr_assert_eq(b.offsets[k + 1] - b.offsets[k], len, "row %lld", (long long)k);
                for (int64_t e = 0; e < len; ++e) { /* every neighbour of k, relabelled, is one of i's */
                    const int64_t jj = perm[b.j[b.offsets[k] + e]];
                    int found = 0;
                    for (int64_t q = 0; q < len && !found; ++q)
                        found = a.j[a.offsets[i] + q] == jj && a.d[a.offsets[i] + q] == b.d[b.offsets[k] + e];
                    cr_assert(found, "row %lld: neighbour %lld missing from the sorted frame's row", (long long)k,
                              (long long)jj);
                }
            }
        mdnl_nlist_free(&a);
        mdnl_nlist_free(&b);
    }
    free(perm);
    free(pf.pos4);
    free(ps.pos4);
    mdnl_frame_free(&f);
    mdnl_frame_free(&s);
    mdnl_cuda_ctx_free(ctx);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, sparse_stage_many_tiles_in_lattice_and_random_order_equal_cpu_twin)
{
#ifdef MDNL_HAVE_CUDA
    SKIP_WITHOUT_DEVICE();
    mdnl_cuda_ctx *ctx = new_ctx();
    /* a periodic graphene sheet of 120 x 70 cells, 33,600 atoms (66 tiles of
     * the rows kernel's single-pass scan), cutoff 1.9 (3 neighbours, rows in
     * registers), in lattice order and in random order; the default (by
     * density) and sparse-stage forced, against the CPU cell twin */
    mdnl_frame f, lattice;
    graphene_frame(&f, 120, 70, 1.42, 1);
    graphene_frame(&lattice, 120, 70, 1.42, 1);
    for (int order = 0; order < 2; ++order) {
        if (order == 1)
            shuffle_positions(&f, &lattice, 4711);
        prepared p = prepare(&f, 1.9);
        for (int kind = MDNL_LIST_HALF; kind <= MDNL_LIST_FULL; ++kind) {
            mdnl_nlist want = {0};
            cr_assert_eq(
                mdnl_nlist_build_cpu(&p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL, (mdnl_list_kind)kind, &want),
                MDNL_OK, "%s", mdnl_last_error());
            cr_assert_eq(want.npairs, (kind == MDNL_LIST_FULL ? 3 : 1.5) * f.natoms);
            for (int path = MDNL_CELL_PATH_AUTO; path <= MDNL_CELL_PATH_SPARSE_STAGE; ++path) {
                mdnl_nlist got = {0};
                char what[128];
                snprintf(what, sizeof what, "graphene %s, %s list, cell path %s", order ? "shuffled" : "in order",
                         kind == MDNL_LIST_FULL ? "full" : "half", mdnl_cell_path_name(path));
                mdnl_cuda_ctx_set_cell_path(ctx, path);
                cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL,
                                                   (mdnl_list_kind)kind, &got),
                             MDNL_OK, "%s: %s", what, mdnl_last_error());
                expect_same_list(&want, &got, what);
                mdnl_nlist_free(&got);
            }
            mdnl_cuda_ctx_set_cell_path(ctx, MDNL_CELL_PATH_AUTO);
            mdnl_nlist_free(&want);
        }
        free(p.pos4);
    }
    mdnl_frame_free(&lattice);
    mdnl_frame_free(&f);
    mdnl_cuda_ctx_free(ctx);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, sparse_stage_fused_rows_and_their_long_rows_equal_cpu_twin)
{
#ifdef MDNL_HAVE_CUDA
    SKIP_WITHOUT_DEVICE();
    mdnl_cuda_ctx *ctx = new_ctx();
    /* sparse-stage walks inside its rows kernel once the frame before's
     * binning sample followed space: a graphene sheet in lattice order, built
     * twice on one context (the first build with a walk kernel, the second
     * fused), at 1.9 (rows of 3, kept in registers) and at 2.6 (rows of 9,
     * longer than the 8 kept: walked again), half and full, against the CPU
     * cell twin; then the same sheet shuffled, whose first build is still
     * fused (the sample is the frame before's) and its second is not */
    mdnl_frame f, lattice;
    graphene_frame(&f, 60, 40, 1.42, 1);
    graphene_frame(&lattice, 60, 40, 1.42, 1);
    mdnl_cuda_ctx_set_cell_path(ctx, MDNL_CELL_PATH_SPARSE_STAGE);
    const double cut[2] = {1.9, 2.6};
    for (int order = 0; order < 2; ++order) {
        if (order == 1)
            shuffle_positions(&f, &lattice, 815);
        for (int c = 0; c < 2; ++c) {
            prepared p = prepare(&f, cut[c]);
            for (int kind = MDNL_LIST_HALF; kind <= MDNL_LIST_FULL; ++kind) {
                mdnl_nlist want = {0};
                cr_assert_eq(mdnl_nlist_build_cpu(&p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL,
                                                  (mdnl_list_kind)kind, &want),
                             MDNL_OK, "%s", mdnl_last_error());
                cr_assert_eq(want.npairs, (kind == MDNL_LIST_FULL ? 1.0 : 0.5) * (c ? 9 : 3) * f.natoms);
                for (int rep = 0; rep < 2; ++rep) {
                    mdnl_nlist got = {0};
                    char what[128];
                    snprintf(what, sizeof what, "graphene %s, cutoff %.1f, %s list, build %d",
                             order ? "shuffled" : "in order", cut[c], kind == MDNL_LIST_FULL ? "full" : "half",
                             rep + 1);
                    cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p.g, (const float(*)[4])p.pos4, MDNL_METHOD_CELL,
                                                       (mdnl_list_kind)kind, &got),
                                 MDNL_OK, "%s: %s", what, mdnl_last_error());
                    expect_same_list(&want, &got, what);
                    if (rep == 1)
                        cr_expect_eq(mdnl_cuda_ctx_sparse_fused(ctx), order ? 0 : 1, "%s: fused", what);
                    mdnl_nlist_free(&got);
                }
                mdnl_nlist_free(&want);
            }
            free(p.pos4);
        }
    }
    mdnl_frame_free(&lattice);
    mdnl_frame_free(&f);
    mdnl_cuda_ctx_free(ctx);
#else
    cr_skip_test("built without CUDA");
#endif
}

Test(nlist_gpu, sparse_and_dense_builds_in_turn_on_one_context_equal_cpu_twin)
{
#ifdef MDNL_HAVE_CUDA
    SKIP_WITHOUT_DEVICE();
    mdnl_cuda_ctx *ctx = new_ctx();
    /* sparse-stage writes its flags (pair count, outgrown, the binning's
     * sample) to the host's mapped read-back and leaves the device's zero,
     * so that the next build skips their memset; dense-walk writes them
     * there too but leaves its long-row flags, cleared by the next build.
     * In turn on one context, each against the CPU cell twin: graphene
     * (sparse-stage, the second build fused), an LJ liquid (dense-walk,
     * after a build that skipped the memset), graphene again, a sparse-stage
     * build that outgrows its output (capacity 1, built again), the liquid
     * again. */
    mdnl_frame sheet, liquid;
    graphene_frame(&sheet, 60, 40, 1.42, 1);
    lj_cube_frame(&liquid, 20000, 31);
    prepared ps = prepare(&sheet, 1.9), pl = prepare(&liquid, 2.5);
    const struct {
        const prepared *p;
        int path, cap;
        const char *name;
    } steps[] = {{&ps, MDNL_CELL_PATH_SPARSE_STAGE, 0, "graphene"},
                 {&ps, MDNL_CELL_PATH_SPARSE_STAGE, 0, "graphene again"},
                 {&pl, MDNL_CELL_PATH_DENSE_WALK, 0, "liquid"},
                 {&ps, MDNL_CELL_PATH_SPARSE_STAGE, 0, "graphene after"},
                 {&ps, MDNL_CELL_PATH_SPARSE_STAGE, 1, "graphene, capacity 1"},
                 {&pl, MDNL_CELL_PATH_DENSE_WALK, 0, "liquid after"}};
    for (int kind = MDNL_LIST_HALF; kind <= MDNL_LIST_FULL; ++kind)
        for (unsigned s = 0; s < sizeof steps / sizeof *steps; ++s) {
            const prepared *p = steps[s].p;
            mdnl_nlist want = {0}, got = {0};
            char what[128];
            snprintf(what, sizeof what, "%s, %s list", steps[s].name, kind == MDNL_LIST_FULL ? "full" : "half");
            cr_assert_eq(
                mdnl_nlist_build_cpu(&p->g, (const float(*)[4])p->pos4, MDNL_METHOD_CELL, (mdnl_list_kind)kind, &want),
                MDNL_OK, "%s", mdnl_last_error());
            mdnl_cuda_ctx_set_cell_path(ctx, steps[s].path);
            if (steps[s].cap)
                mdnl_cuda_ctx_set_stage_capacity(ctx, steps[s].cap);
            const int64_t before = mdnl_cuda_ctx_retries(ctx);
            cr_assert_eq(mdnl_nlist_build_cuda(ctx, &p->g, (const float(*)[4])p->pos4, MDNL_METHOD_CELL,
                                               (mdnl_list_kind)kind, &got),
                         MDNL_OK, "%s: %s", what, mdnl_last_error());
            if (steps[s].cap)
                cr_expect(mdnl_cuda_ctx_retries(ctx) > before, "%s: the output never outgrew", what);
            expect_same_list(&want, &got, what);
            mdnl_nlist_free(&want);
            mdnl_nlist_free(&got);
        }
    free(ps.pos4);
    free(pl.pos4);
    mdnl_frame_free(&sheet);
    mdnl_frame_free(&liquid);
    mdnl_cuda_ctx_free(ctx);
#else
    cr_skip_test("built without CUDA");
#endif
}

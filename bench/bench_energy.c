/* bench_energy.c — times the energy kernels (energy.h, energy_cuda.h) on an
 * LJ crystal-like liquid: median of repeats, CUDA events on the GPU,
 * CLOCK_MONOTONIC on the CPU.
 *
 * Napkin math for lj-1m (N = 1,048,576, rho = 0.8442, rc = 2.5):
 *   neighbors per atom (full) = 4/3 pi rc^3 rho = 55.3, so 58 M full-list
 *   pairs (29 M half). Cells are >= rc wide: 43^3 cells of 13.2 atoms; the
 *   27-cell stencil gives 356 candidates per atom, 373 M distance checks of
 *   ~9 flops and one 16-byte float4 load each (from L1/L2: the 16 MB of
 *   sorted positions stay in the 50 MB L2).
 *   fused (total only): the half traversal, each pair once: about half the
 *   candidates, 1.7 Gflop fp32 + 29 M pair energies in fp64 (~25 flops with
 *   the division) = 0.7 Gflop fp64; H100 SXM: ~60 Tflop/s fp32, ~30 fp64 ->
 *   floor ~0.05 ms; the L1 load rate (~3 GB of float4) is the likelier
 *   limit, ~0.1-0.15 ms. fused/per-atom walks the whole stencil (58 M pair
 *   energies), twice that.
 *   list (full): reads 58 M floats + 8 MB offsets = 240 MB, at ~3 TB/s
 *   ~0.08 ms; the half list reads half of that but scatters per-atom
 *   energies with atomics (when asked; not timed here).
 *   reduction: 1 M doubles (8 MB) to 4096 block sums: negligible next to the
 *   pair work, except for the atomic baseline, which serialises 1 M double
 *   atomics on one address.
 */
#include "bench_energy.h"
#include "bench.h"

#include "systems.h"

#include "coord.h"
#include "energy.h"
#include "geometry.h"
#include "nlist.h"
#include "potential.h"
#if defined(MDNL_HAVE_CUDA)
#include "coord_cuda.h"
#include "device.h"
#include "energy_cuda.h"
#endif

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_ROWS 48

typedef struct bench_row {
    char path[40];
    char backend[8];
    char reduce[16];
    double ms;
    double total;
} bench_row;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}


static void add_row(bench_row *rows, int *nrows, const char *path, const char *backend, const char *reduce, double ms,
                    double total)
{
    if (*nrows >= MAX_ROWS)
        return;
    bench_row *r = &rows[(*nrows)++];
    snprintf(r->path, sizeof r->path, "%s", path);
    snprintf(r->backend, sizeof r->backend, "%s", backend);
    snprintf(r->reduce, sizeof r->reduce, "%s", reduce);
    r->ms = ms;
    r->total = total;
}

static int row_ok(const bench_row *r, double cpu_total)
{
    return fabs(r->total - cpu_total) <= 1e-9 * fabs(cpu_total);
}

#if defined(MDNL_HAVE_CUDA)
typedef enum gpu_path { GPU_FUSED = 0, GPU_FUSED_CELLS, GPU_LIST_FULL, GPU_LIST_HALF, GPU_FUSED_PER_ATOM } gpu_path;

/* Median device time of `reps` runs of one path (after one warm-up run). */
static mdnl_status time_gpu(mdnl_energy_cuda *e, const mdnl_geom *g, const mdnl_potential *p, gpu_path path,
                            int reps, double *ms, double *total)
{
    double t[64];
    mdnl_status st = MDNL_OK;
    for (int r = -1; r < reps && st == MDNL_OK; ++r) {
        if (path == GPU_FUSED || path == GPU_FUSED_CELLS || path == GPU_FUSED_PER_ATOM)
            st = mdnl_energy_cuda_run_fused(e, g, p, path == GPU_FUSED_CELLS, path == GPU_FUSED_PER_ATOM);
        else
            st = mdnl_energy_cuda_run_list(e, path == GPU_LIST_HALF ? MDNL_LIST_HALF : MDNL_LIST_FULL, p, 0);
        if (st == MDNL_OK && r >= 0)
            st = mdnl_energy_cuda_last_ms(e, &t[r]);
    }
    if (st == MDNL_OK)
        st = mdnl_energy_cuda_result(e, total, NULL);
    if (st == MDNL_OK)
        *ms = mdnl_bench_median(t, reps);
    return st;
}

static mdnl_status bench_gpu(const mdnl_geom *g, const float (*pos4)[4], const mdnl_potential *p,
                             const mdnl_nlist *full, const mdnl_nlist *half, bench_row *rows, int *nrows)
{
    mdnl_energy_cuda *e = NULL;
    mdnl_status st = mdnl_energy_cuda_create(NULL, &e);
    if (st != MDNL_OK)
        return st;
    mdnl_energy_cuda_set_timing(e, 1);
    static const mdnl_energy_reduce variants[] = {MDNL_REDUCE_ATOMIC, MDNL_REDUCE_TREE, MDNL_REDUCE_SHUFFLE};
    static const char *names[] = {"fused", "fused+cells", "list-full", "list-half", "fused/per-atom"};
    const int reps = 21;
    st = mdnl_energy_cuda_upload_positions(e, g, pos4);
    for (int path = GPU_FUSED; path <= GPU_FUSED_PER_ATOM && st == MDNL_OK; ++path) {
        if (path == GPU_LIST_FULL)
            st = mdnl_energy_cuda_upload_list(e, full);
        if (path == GPU_LIST_HALF && st == MDNL_OK)
            st = mdnl_energy_cuda_upload_list(e, half);
        for (size_t v = 0; v < sizeof variants / sizeof variants[0] && st == MDNL_OK; ++v) {
            double ms = 0, total = 0;
            mdnl_energy_cuda_set_reduce(e, variants[v]);
            st = time_gpu(e, g, p, (gpu_path)path, reps, &ms, &total);
            if (st == MDNL_OK)
                add_row(rows, nrows, names[path], "cuda", mdnl_energy_reduce_name(variants[v]), ms, total);
        }
    }
    mdnl_energy_cuda_free(e);
    return st;
}
#endif

static mdnl_status bench_energy_frame(FILE *out, int json, mdnl_frame *fp, mdnl_status st, const char *label);

mdnl_status mdnl_bench_energy_size(FILE *out, int json, int nside)
{
    mdnl_frame f;
    memset(&f, 0, sizeof f);
    mdnl_status st = mdnl_gen_lj_fcc(nside, 0.8442, 0.05, 2024, &f); /* nside 64: lj-1m of systems.h */
    return bench_energy_frame(out, json, &f, st, NULL);
}

mdnl_status mdnl_bench_energy_system(FILE *out, int json, const char *name)
{
    mdnl_frame f;
    memset(&f, 0, sizeof f);
    mdnl_status st = mdnl_system_build(name, &f);
    return bench_energy_frame(out, json, &f, st, name);
}

/* The fused coordination count (coord.h, mdnl coord) at the same cutoff: a
 * row per backend, checked against the full list (its neighbors sum to
 * twice the half list's pairs) and, on the GPU, atom by atom against the
 * CPU twin. CPU: wall clock; GPU: CUDA events around upload, cell build and
 * count (coord.cu: the energy's warp walk where it fits). */
typedef struct coord_row {
    const char *backend;
    double ms;
    int64_t neighbors;
    bool equals_cpu;
} coord_row;

static int64_t sum_counts(const int32_t *c, int64_t n)
{
    int64_t s = 0;
    for (int64_t i = 0; i < n; ++i)
        s += c[i];
    return s;
}

static mdnl_status bench_coord(const mdnl_frame *f, const mdnl_geom *g, const float (*pos4)[4], coord_row *rows,
                               int *nrows)
{
    const size_t nat = (size_t)(f->natoms > 0 ? f->natoms : 1);
    int32_t *c = mdnl_malloc(nat * sizeof *c, "bench coordination");
    if (!c)
        return MDNL_ERR_RESOURCE;
    mdnl_status st = MDNL_OK;
    double t[8];
    for (int r = 0; r < 3 && st == MDNL_OK; ++r) {
        double t0 = now_ms();
        st = mdnl_coord_frame_cpu(g, pos4, f->species, 0, NULL, NULL, c);
        t[r] = now_ms() - t0;
    }
    if (st == MDNL_OK)
        rows[(*nrows)++] = (coord_row){"cpu", mdnl_bench_median(t, 3), sum_counts(c, f->natoms), true};
#if defined(MDNL_HAVE_CUDA)
    if (st == MDNL_OK && mdnl_cuda_device_count() > 0) {
        mdnl_coord_cuda *cc = NULL;
        int32_t *d = mdnl_malloc(nat * sizeof *d, "bench coordination");
        if (!d)
            st = MDNL_ERR_RESOURCE;
        else if ((st = mdnl_coord_cuda_create(NULL, &cc)) == MDNL_OK) {
            mdnl_coord_cuda_set_timing(cc, 1);
            for (int r = 0; r < 6 && st == MDNL_OK; ++r) /* the first run warms up */
                if ((st = mdnl_coord_frame_cuda(cc, g, pos4, f->species, 0, NULL, NULL, d)) == MDNL_OK && r > 0)
                    st = mdnl_coord_cuda_last_ms(cc, &t[r - 1]);
            if (st == MDNL_OK)
                rows[(*nrows)++] = (coord_row){"cuda", mdnl_bench_median(t, 5), sum_counts(d, f->natoms),
                                               memcmp(c, d, (size_t)f->natoms * sizeof *c) == 0};
        }
        mdnl_coord_cuda_free(cc);
        free(d);
    }
#endif
    free(c);
    return st;
}

/* Frees *fp. label: the fixture's name (NULL: "lj-N"). */
static mdnl_status bench_energy_frame(FILE *out, int json, mdnl_frame *fp, mdnl_status st, const char *label)
{
    const double cutoff = 2.5;
    mdnl_frame f = *fp;
    float(*pos4)[4] = NULL;
    mdnl_geom g;
    mdnl_potential p;
    mdnl_nlist full, half;
    memset(&full, 0, sizeof full);
    memset(&half, 0, sizeof half);
    bench_row rows[MAX_ROWS];
    int nrows = 0;
    if (st == MDNL_OK && !(pos4 = mdnl_malloc((size_t)f.natoms * sizeof *pos4, "bench positions")))
        st = MDNL_ERR_RESOURCE;
    if (st == MDNL_OK)
        st = mdnl_geom_prepare(&f, cutoff, &g, pos4);
    if (st == MDNL_OK)
        st = mdnl_potential_parse("lj:epsilon=1,sigma=1", cutoff, &p);
    const float(*cpos)[4] = (const float(*)[4])pos4;
    /* CPU: fused, and from lists built once (list building not timed). */
    const int cpu_reps = 3;
    double t[8], total = 0;
    for (int r = 0; r < cpu_reps && st == MDNL_OK; ++r) {
        double t0 = now_ms();
        st = mdnl_energy_frame_cpu(&g, cpos, &p, &total, NULL);
        t[r] = now_ms() - t0;
    }
    if (st == MDNL_OK)
        add_row(rows, &nrows, "fused", "cpu", "ordered", mdnl_bench_median(t, cpu_reps), total);
    const double cpu_total = total;
    if (st == MDNL_OK)
        st = mdnl_nlist_build_cpu(&g, cpos, MDNL_METHOD_CELL, MDNL_LIST_FULL, &full);
    if (st == MDNL_OK)
        st = mdnl_nlist_build_cpu(&g, cpos, MDNL_METHOD_CELL, MDNL_LIST_HALF, &half);
    for (int k = 0; k < 2 && st == MDNL_OK; ++k) {
        const mdnl_nlist *l = k == 0 ? &full : &half;
        for (int r = 0; r < cpu_reps && st == MDNL_OK; ++r) {
            double t0 = now_ms();
            st = mdnl_energy_list_cpu(l, k == 0 ? MDNL_LIST_FULL : MDNL_LIST_HALF, &p, &total, NULL);
            t[r] = now_ms() - t0;
        }
        if (st == MDNL_OK)
            add_row(rows, &nrows, k == 0 ? "list-full" : "list-half", "cpu", "ordered", mdnl_bench_median(t, cpu_reps), total);
    }
    const char *device = "none";
#if defined(MDNL_HAVE_CUDA)
    if (st == MDNL_OK && mdnl_cuda_device_count() > 0) {
        device = mdnl_cuda_device_name();
        st = bench_gpu(&g, cpos, &p, &full, &half, rows, &nrows);
    }
#endif
    coord_row crows[2];
    int ncrows = 0;
    if (st == MDNL_OK)
        st = bench_coord(&f, &g, cpos, crows, &ncrows);
    if (st == MDNL_OK) {
        const double n = (double)f.natoms;
        if (json) {
            char fixture[64];
            if (label)
                snprintf(fixture, sizeof fixture, "%s", label);
            else
                snprintf(fixture, sizeof fixture, "lj-%lld", (long long)f.natoms);
            fprintf(out, "{\"benchmark\": \"energy\", \"fixture\": \"%s\", \"natoms\": %lld, \"cutoff\": %g, "
                         "\"pairs_half\": %lld, \"device\": \"%s\", \"results\": [",
                    fixture, (long long)f.natoms, cutoff, (long long)half.npairs, device);
            for (int k = 0; k < nrows; ++k)
                fprintf(out, "%s{\"path\": \"%s\", \"backend\": \"%s\", \"reduce\": \"%s\", \"ms\": %.6f, "
                             "\"atoms_per_s\": %.6g, \"total\": %.17g, \"equals_cpu\": %s}",
                        k ? ", " : "", rows[k].path, rows[k].backend, rows[k].reduce, rows[k].ms,
                        n / (rows[k].ms * 1e-3), rows[k].total, row_ok(&rows[k], cpu_total) ? "true" : "false");
            fprintf(out, "], \"coord\": [");
            for (int k = 0; k < ncrows; ++k)
                fprintf(out, "%s{\"backend\": \"%s\", \"ms\": %.6f, \"atoms_per_s\": %.6g, \"neighbors\": %lld, "
                             "\"equals_list\": %s, \"equals_cpu\": %s}",
                        k ? ", " : "", crows[k].backend, crows[k].ms, n / (crows[k].ms * 1e-3),
                        (long long)crows[k].neighbors, crows[k].neighbors == 2 * half.npairs ? "true" : "false",
                        crows[k].equals_cpu ? "true" : "false");
            fprintf(out, "]}\n");
        } else {
            fprintf(out, "# energy benchmark: %s, %lld atoms, rc %g, %lld half-list pairs; device: %s\n",
                    label ? label : "lj", (long long)f.natoms, cutoff, (long long)half.npairs, device);
            fprintf(out, "# median ms (GPU: CUDA events, device time only; CPU: wall clock, list building not timed)\n");
            fprintf(out, "%-22s %-7s %-8s %12s %14s %26s\n", "path", "backend", "reduce", "ms", "atoms/s", "total");
            for (int k = 0; k < nrows; ++k)
                fprintf(out, "%-22s %-7s %-8s %12.4f %14.4g %26.17g  %s\n", rows[k].path, rows[k].backend,
                        rows[k].reduce, rows[k].ms, n / (rows[k].ms * 1e-3), rows[k].total,
                        row_ok(&rows[k], cpu_total) ? "ok" : "DIFFERS FROM CPU");
            for (int k = 0; k < ncrows; ++k)
                fprintf(out, "%-22s %-7s %-8s %12.4f %14.4g %26lld  %s\n", "coord (neighbors)", crows[k].backend, "-",
                        crows[k].ms, n / (crows[k].ms * 1e-3), (long long)crows[k].neighbors,
                        crows[k].neighbors != 2 * half.npairs ? "DIFFERS FROM LIST"
                        : crows[k].equals_cpu                 ? "ok"
                                                              : "DIFFERS FROM CPU");
        }
        for (int k = 0; k < ncrows && st == MDNL_OK; ++k)
            if (crows[k].neighbors != 2 * half.npairs)
                st = mdnl_error(MDNL_ERR_INTERNAL, "bench coord: %s counts %lld neighbors, the list %lld",
                                crows[k].backend, (long long)crows[k].neighbors, (long long)(2 * half.npairs));
        for (int k = 0; k < ncrows && st == MDNL_OK; ++k)
            if (!crows[k].equals_cpu)
                st = mdnl_error(MDNL_ERR_INTERNAL, "bench coord: the %s counts differ from the CPU twin's",
                                crows[k].backend);
        /* Every row against the CPU twin's fused total (1e-9 relative, the
         * tolerance of tests/test_energy_gpu.c). */
        for (int k = 0; k < nrows && st == MDNL_OK; ++k)
            if (!row_ok(&rows[k], cpu_total))
                st = mdnl_error(MDNL_ERR_INTERNAL, "bench energy: %s %s %s total %.17g, CPU %.17g", rows[k].path,
                                rows[k].backend, rows[k].reduce, rows[k].total, cpu_total);
    }
    mdnl_nlist_free(&full);
    mdnl_nlist_free(&half);
    free(pos4);
    mdnl_frame_free(&f);
    return st;
}

mdnl_status mdnl_bench_energy(FILE *out, int json) { return mdnl_bench_energy_size(out, json, 64); }

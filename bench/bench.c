/* bench.c — `mdnl bench` (contract in bench.h): validate every GPU
 * neighbor-list method against the CPU twin, then time it. */
#include "bench.h"
#include "systems.h"

#include "device.h"
#include "frame.h"
#include "geometry.h"
#include "nlist.h"

#include "mdnl/mdnl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef MDNL_HAVE_CUDA
#include "nlist_cuda.h"
#include "nlist_cuda_hooks.h"
#include "pair_shift.h"
#include "pair_shift_cuda.h"

#include <cuda_runtime.h>
#endif

/* Bytes per second the floors assume where the runtime does not report the
 * device's memory clock and bus width: a measured device-to-device copy rate
 * (bytes read plus bytes written) of an H100. */
#define BENCH_BANDWIDTH_ASSUMED 3.0e12
#define BENCH_WARMUP 3
#define BENCH_REPEATS 15
/* The system whose lists are also timed with their image shifts and vectors
 * (neighbors --with shift,vector). */
#define BENCH_SHIFT_SYSTEM "lj-1m-liquid"
/* Brute force is timed only when N^2/2 * images is below this. */
#define BENCH_BRUTE_MAX_WORK 2.0e11

static const char *const system_names[] = {"graphene-17k", "graphene-1m",         "graphene-1m-shuffled", "lj-1m",
                                           "lj-1m-liquid", "lj-1m-liquid-sorted", "cu-131k"};
#define NSYSTEMS 7
/* brute-atomic vs brute-noatomic (the seed's comparison), "cell" (the
 * default, path by density), then each shipped cell path forced. */
#define NMETHODS 5
static const char *const method_labels[NMETHODS] = {"brute-atomic", "brute-noatomic", "cell", "cell-sparse-stage",
                                                    "cell-dense-walk"};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double mdnl_bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double wall_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#ifdef MDNL_HAVE_CUDA
/* The bandwidth every floor divides by, and where it comes from. */
typedef struct bench_bandwidth {
    double bps;
    const char *source; /* "theoretical" (2 x memory clock x bus width) or "assumed" */
} bench_bandwidth;

static bench_bandwidth bench_device_bandwidth(void)
{
    const double bps = mdnl_cuda_device_bandwidth();
    if (bps > 0)
        return (bench_bandwidth){bps, "theoretical"};
    return (bench_bandwidth){BENCH_BANDWIDTH_ASSUMED, "assumed"};
}

static int same_list(const mdnl_nlist *a, const mdnl_nlist *b)
{
    return a->natoms == b->natoms && a->npairs == b->npairs &&
           memcmp(a->offsets, b->offsets, (size_t)(a->natoms + 1) * sizeof *a->offsets) == 0 &&
           memcmp(a->j, b->j, (size_t)a->npairs * sizeof *a->j) == 0 &&
           memcmp(a->d, b->d, (size_t)a->npairs * sizeof *a->d) == 0;
}

typedef struct method_result {
    mdnl_method method;
    int skipped; /* 1: O(N^2) too slow */
    int valid;
    double ms;        /* the build alone (events around it only) */
    double ms_staged; /* the build with events between its stages */
    double stage_ms[MDNL_CUDA_NSTAGES];
    double stage_floor_ms[MDNL_CUDA_NSTAGES]; /* mdnl_cuda_ctx_stage_bytes over the bandwidth; 0: not modelled */
    int64_t npairs;
    int walk_rows; /* mdnl_cuda_ctx_walk_rows after the build */
} method_result;

static mdnl_status bench_list(mdnl_cuda_ctx *ctx, const char *name, const mdnl_frame *f, const mdnl_geom *gp,
                              const float (*pos4)[4], mdnl_list_kind kind, const bench_bandwidth *bw, int json,
                              int first, FILE *out, int *all_valid);

static mdnl_status bench_system(mdnl_cuda_ctx *ctx, int sys, const bench_bandwidth *bw, int json, int first, FILE *out,
                                int *all_valid)
{
    mdnl_frame f;
    memset(&f, 0, sizeof f);
    const char *name = system_names[sys];
    const double cutoff = mdnl_system_cutoff(name);
    mdnl_status st = mdnl_system_build(name, &f); /* systems.h */
    if (st != MDNL_OK) {
        mdnl_frame_free(&f);
        return st;
    }
    float(*pos4)[4] = mdnl_malloc((size_t)f.natoms * sizeof *pos4, "benchmark positions");
    if (!pos4) {
        mdnl_frame_free(&f);
        return MDNL_ERR_RESOURCE;
    }
    mdnl_geom g;
    if ((st = mdnl_geom_prepare(&f, cutoff, &g, pos4)) == MDNL_OK)
        st = bench_list(ctx, name, &f, &g, (const float(*)[4])pos4, MDNL_LIST_FULL, bw, json, first, out, all_valid);
    if (st == MDNL_OK)
        st = bench_list(ctx, name, &f, &g, (const float(*)[4])pos4, MDNL_LIST_HALF, bw, json, 0, out, all_valid);
    free(pos4);
    mdnl_frame_free(&f);
    return st;
}

/* The list with its image shifts and vectors (pair_shift.h), the default
 * cell build: S and D validated against the CPU twin over the oracle list,
 * then timed: the device pass alone (pass_ms: the list and the positions
 * already on the device, as the library's device call has them) and what
 * `neighbors --with shift,vector` adds on the CUDA backend (host_ms: the
 * positions as given uploaded, the pass, S and D downloaded to pageable
 * memory). Floor of the pass: 16 B/atom read (positions as given, wrapped),
 * CSR read (8 B/row, 8 B/pair), S and D written (36 B/pair). */
typedef struct shift_result {
    int valid;
    double list_ms, pass_ms, host_ms, bytes_written, floor_ms;
} shift_result;

static mdnl_status bench_shifts(mdnl_cuda_ctx *ctx, const mdnl_frame *f, const mdnl_geom *g, const float (*pos4)[4],
                                mdnl_list_kind kind, const mdnl_nlist *oracle, double list_ms,
                                const bench_bandwidth *bw, shift_result *r)
{
    memset(r, 0, sizeof *r);
    r->list_ms = list_ms;
    const int64_t np = oracle->npairs, n = g->natoms;
    const int half = kind == MDNL_LIST_HALF;
    mdnl_shift_cuda *sc = NULL;
    int32_t(*S)[3] = mdnl_malloc((size_t)(np + 1) * sizeof *S, "benchmark shifts");
    int32_t(*gS)[3] = mdnl_malloc((size_t)(np + 1) * sizeof *gS, "benchmark shifts");
    double(*D)[3] = mdnl_malloc((size_t)(np + 1) * sizeof *D, "benchmark vectors");
    double(*gD)[3] = mdnl_malloc((size_t)(np + 1) * sizeof *gD, "benchmark vectors");
    mdnl_status st = S && gS && D && gD ? mdnl_shift_cuda_create(&sc) : MDNL_ERR_RESOURCE;
    if (st == MDNL_OK)
        st = mdnl_pair_shifts_cpu(f, g, pos4, oracle, half, S, D);
    mdnl_nlist_dev dev;
    void *stream = mdnl_cuda_ctx_stream(ctx);
    if (st == MDNL_OK && (st = mdnl_nlist_build_cuda_dev(ctx, g, pos4, MDNL_METHOD_CELL, kind, &dev)) == MDNL_OK &&
        (st = mdnl_pair_shifts_cuda_host(sc, stream, f, g, &dev, half, gS, gD)) == MDNL_OK)
        r->valid = dev.npairs == np && memcmp(S, gS, (size_t)np * sizeof *S) == 0 &&
                   memcmp(D, gD, (size_t)np * sizeof *D) == 0;
    /* The handle's upload buffer: the host call below uploads into it again
     * (the same size, so the same address) before each device-only pass. */
    const void *d_xyz = NULL;
    if (st == MDNL_OK)
        st = mdnl_pair_shifts_cuda_upload(sc, stream, f, &d_xyz);
    double pass[BENCH_REPEATS], host[BENCH_REPEATS];
    for (int rep = 0; rep < BENCH_WARMUP + BENCH_REPEATS && st == MDNL_OK; ++rep) {
        const int32_t *d_S;
        const double *d_D;
        double t0 = wall_seconds();
        if ((st = mdnl_pair_shifts_cuda_host(sc, stream, f, g, &dev, half, gS, gD)) != MDNL_OK)
            break;
        double t1 = wall_seconds();
        if ((st = mdnl_pair_shifts_cuda(sc, stream, f, g, &dev, half, d_xyz, 0, 1, &d_S, &d_D)) != MDNL_OK)
            break;
        double t2 = wall_seconds();
        if (rep >= BENCH_WARMUP)
            host[rep - BENCH_WARMUP] = 1e3 * (t1 - t0), pass[rep - BENCH_WARMUP] = 1e3 * (t2 - t1);
    }
    if (st == MDNL_OK) {
        r->pass_ms = mdnl_bench_median(pass, BENCH_REPEATS);
        r->host_ms = mdnl_bench_median(host, BENCH_REPEATS);
        r->bytes_written = 36.0 * (double)np;
        const double bytes = 16.0 * (double)n + 8.0 * (double)(n + 1) + 8.0 * (double)np + r->bytes_written;
        r->floor_ms = 1e3 * bytes / bw->bps;
    }
    mdnl_shift_cuda_free(sc);
    free(S), free(gS), free(D), free(gD);
    return st;
}

/* The same list through libmdnl's public calls (include/mdnl/mdnl.h), what
 * a program or the Python package pays: mdnl_neighbors_device on the frame's
 * float64 positions as given, already in device memory (the list left on
 * the device: a CuPy or PyTorch caller), and mdnl_neighbors on host arrays
 * (the positions uploaded, the list downloaded). Wall time of the call
 * (each returns with its results complete), median of BENCH_REPEATS after
 * BENCH_WARMUP; both lists compared with the oracle byte for byte. */
typedef struct library_result {
    int valid;
    double device_ms, host_ms;
} library_result;

static mdnl_status library_error(mdnl_status st)
{
    return mdnl_error(st, "bench: libmdnl: %s", mdnl_last_error());
}

static int same_public_list(const mdnl_nlist *a, int64_t n, int64_t npairs, const int64_t *offsets,
                            const int32_t *j, const float *d)
{
    return a->natoms == n && a->npairs == npairs &&
           memcmp(a->offsets, offsets, (size_t)(n + 1) * sizeof *offsets) == 0 &&
           memcmp(a->j, j, (size_t)npairs * sizeof *j) == 0 && memcmp(a->d, d, (size_t)npairs * sizeof *d) == 0;
}

static mdnl_status bench_library(const mdnl_frame *f, double cutoff, mdnl_list_kind kind, const mdnl_nlist *oracle,
                                 library_result *r)
{
    memset(r, 0, sizeof *r);
    const int64_t n = f->natoms;
    mdnl_system sys = {n,
                       f->pos,
                       MDNL_FLOAT64,
                       f->box.has_lattice ? &f->box.h[0][0] : NULL,
                       {f->box.pbc[0], f->box.pbc[1], f->box.pbc[2]}};
    const int flags = kind == MDNL_LIST_FULL ? MDNL_NEIGHBORS_FULL : MDNL_NEIGHBORS_HALF;
    mdnl_context_options opt = {MDNL_COMPUTE_CUDA, mdnl_cuda_device_index(), 0, 0};
    mdnl_context *lib = NULL;
    mdnl_status st = mdnl_context_create(&opt, &lib);
    if (st != MDNL_OK)
        return library_error(st);
    const size_t bytes = (size_t)n * 3 * sizeof(double);
    void *d_pos = NULL;
    int64_t *offsets = mdnl_malloc((size_t)(n + 1) * sizeof *offsets, "benchmark offsets");
    int32_t *j = mdnl_malloc((size_t)oracle->npairs * sizeof *j + 1, "benchmark indices");
    float *d = mdnl_malloc((size_t)oracle->npairs * sizeof *d + 1, "benchmark distances");
    if (!offsets || !j || !d)
        st = MDNL_ERR_RESOURCE;
    else if (cudaMalloc(&d_pos, bytes ? bytes : 1) != cudaSuccess ||
             cudaMemcpy(d_pos, f->pos, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
        st = mdnl_error(MDNL_ERR_RESOURCE, "bench: no device memory for %lld positions", (long long)n);
    double dev_ms[BENCH_REPEATS], host_ms[BENCH_REPEATS];
    int valid = 1;
    for (int rep = 0; rep < BENCH_WARMUP + BENCH_REPEATS && st == MDNL_OK; ++rep) {
        mdnl_neighbor_list nl;
        mdnl_system dsys = sys;
        dsys.positions = d_pos;
        double t0 = wall_seconds();
        if ((st = mdnl_neighbors_device(lib, &dsys, cutoff, flags, NULL, &nl)) != MDNL_OK) {
            st = library_error(st);
            break;
        }
        double t1 = wall_seconds();
        if (rep == 0) {
            if (nl.npairs != oracle->npairs ||
                cudaMemcpy(offsets, nl.offsets, (size_t)(n + 1) * sizeof *offsets, cudaMemcpyDeviceToHost) !=
                    cudaSuccess ||
                cudaMemcpy(j, nl.indices, (size_t)nl.npairs * sizeof *j, cudaMemcpyDeviceToHost) != cudaSuccess ||
                cudaMemcpy(d, nl.distances, (size_t)nl.npairs * sizeof *d, cudaMemcpyDeviceToHost) != cudaSuccess)
                valid = 0;
            else
                valid = same_public_list(oracle, n, nl.npairs, offsets, j, d);
        }
        double t2 = wall_seconds();
        if ((st = mdnl_neighbors(lib, &sys, cutoff, flags, &nl)) != MDNL_OK) {
            st = library_error(st);
            break;
        }
        double t3 = wall_seconds();
        if (rep == 0)
            valid = valid && same_public_list(oracle, n, nl.npairs, nl.offsets, nl.indices, nl.distances);
        if (rep >= BENCH_WARMUP)
            dev_ms[rep - BENCH_WARMUP] = 1e3 * (t1 - t0), host_ms[rep - BENCH_WARMUP] = 1e3 * (t3 - t2);
    }
    if (st == MDNL_OK) {
        r->valid = valid;
        r->device_ms = mdnl_bench_median(dev_ms, BENCH_REPEATS);
        r->host_ms = mdnl_bench_median(host_ms, BENCH_REPEATS);
    }
    cudaFree(d_pos);
    free(offsets), free(j), free(d);
    mdnl_context_free(lib);
    return st;
}

/* One list kind of one system: the CPU oracle, then every method validated
 * and timed. */
static mdnl_status bench_list(mdnl_cuda_ctx *ctx, const char *name, const mdnl_frame *f, const mdnl_geom *gp,
                              const float (*pos4)[4], mdnl_list_kind kind, const bench_bandwidth *bw, int json,
                              int first, FILE *out, int *all_valid)
{
    const mdnl_geom g = *gp;
    const int64_t n = g.natoms;
    const double cutoff = g.cutoff;
    const char *kind_name = kind == MDNL_LIST_FULL ? "full" : "half";
    mdnl_status st;
    mdnl_nlist oracle = {0}, got = {0};
    int nimg = 1;
    for (int k = 0; k < 3; ++k)
        nimg *= g.pbc[k] ? 2 * g.image_max[k] + 1 : 1;
    const double brute_work = 0.5 * (double)n * (double)n * nimg;

    /* The oracle: CPU brute force when affordable, else the CPU cell list. */
    const mdnl_method oracle_method = brute_work <= 1e9 ? MDNL_METHOD_BRUTE_NOATOMIC : MDNL_METHOD_CELL;
    double t0 = wall_seconds();
    if ((st = mdnl_nlist_build_cpu(&g, pos4, oracle_method, kind, &oracle)) != MDNL_OK)
        goto done;
    const double cpu_ms = 1e3 * (wall_seconds() - t0);
    /* "cell" is the default (path by density); cell-<path> forces one of
     * the shipped paths (nlist_cuda.h). */
    mdnl_method methods[NMETHODS];
    methods[0] = MDNL_METHOD_BRUTE_ATOMIC;
    methods[1] = MDNL_METHOD_BRUTE_NOATOMIC;
    for (int m = 2; m < NMETHODS; ++m)
        methods[m] = MDNL_METHOD_CELL;
    method_result res[NMETHODS];
    for (int m = 0; m < NMETHODS; ++m) {
        mdnl_cuda_ctx_set_cell_path(ctx, m >= 3 ? m - 2 : MDNL_CELL_PATH_AUTO);
        method_result *r = &res[m];
        memset(r, 0, sizeof *r);
        r->method = methods[m];
        if (methods[m] != MDNL_METHOD_CELL && brute_work > BENCH_BRUTE_MAX_WORK) {
            r->skipped = 1;
            continue;
        }
        mdnl_cuda_ctx_set_timing(ctx, MDNL_CUDA_TIMING_OFF);
        if ((st = mdnl_nlist_build_cuda(ctx, &g, pos4, methods[m], kind, &got)) != MDNL_OK)
            goto done;
        r->valid = same_list(&oracle, &got);
        r->npairs = got.npairs;
        r->walk_rows = mdnl_cuda_ctx_walk_rows(ctx);
        if (!r->valid)
            *all_valid = 0;
        /* Two passes: the stages (events between them), then the total
         * alone (events around the build only: a build's own time, as a
         * user's run has it) */
        double tot[BENCH_REPEATS], tot_staged[BENCH_REPEATS], stages[MDNL_CUDA_NSTAGES][BENCH_REPEATS];
        for (int pass = 0; pass < 2; ++pass) {
            mdnl_cuda_ctx_set_timing(ctx, pass == 0 ? MDNL_CUDA_TIMING_STAGES : MDNL_CUDA_TIMING_TOTAL);
            for (int rep = 0; rep < BENCH_WARMUP + BENCH_REPEATS; ++rep) {
                mdnl_nlist_dev dev;
                if ((st = mdnl_nlist_build_cuda_dev(ctx, &g, pos4, methods[m], kind, &dev)) != MDNL_OK)
                    goto done;
                if (rep < BENCH_WARMUP)
                    continue;
                if (pass == 1) {
                    tot[rep - BENCH_WARMUP] = mdnl_cuda_ctx_total_ms(ctx);
                    continue;
                }
                tot_staged[rep - BENCH_WARMUP] = mdnl_cuda_ctx_total_ms(ctx);
                double sm[MDNL_CUDA_NSTAGES];
                mdnl_cuda_ctx_stage_ms(ctx, sm);
                for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
                    stages[s][rep - BENCH_WARMUP] = sm[s];
            }
        }
        mdnl_cuda_ctx_set_timing(ctx, MDNL_CUDA_TIMING_OFF);
        mdnl_cuda_ctx_set_cell_path(ctx, MDNL_CELL_PATH_AUTO);
        /* the stages' floors as the timed builds ran (the first build of a frame may take another layout:
         * sparse-stage and dense-walk follow the frame before's order until they have seen this one's) */
        double bytes[MDNL_CUDA_NSTAGES];
        mdnl_cuda_ctx_stage_bytes(ctx, bytes);
        for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
            r->stage_floor_ms[s] = 1e3 * bytes[s] / bw->bps;
        r->ms = mdnl_bench_median(tot, BENCH_REPEATS);
        r->ms_staged = mdnl_bench_median(tot_staged, BENCH_REPEATS);
        for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
            r->stage_ms[s] = mdnl_bench_median(stages[s], BENCH_REPEATS);
    }

    shift_result sr = {0};
    const int with_shifts = strcmp(name, BENCH_SHIFT_SYSTEM) == 0 && !res[2].skipped;
    if (with_shifts) {
        if ((st = bench_shifts(ctx, f, &g, pos4, kind, &oracle, res[2].ms, bw, &sr)) != MDNL_OK)
            goto done;
        if (!sr.valid)
            *all_valid = 0;
    }
    library_result lr;
    if ((st = bench_library(f, cutoff, kind, &oracle, &lr)) != MDNL_OK)
        goto done;
    if (!lr.valid)
        *all_valid = 0;
    /* Napkin floor: positions read once (16 B/atom), CSR written once
     * (8 B/row offset, 4 B j + 4 B d per pair). */
    const double bytes_written = 8.0 * (double)(n + 1) + 8.0 * (double)oracle.npairs;
    const double bytes_moved = 16.0 * (double)n + bytes_written;
    const double floor_ms = 1e3 * bytes_moved / bw->bps;
    if (json) {
        fprintf(out, "%s{\"system\":\"%s\",\"natoms\":%lld,\"cutoff\":%g,\"list\":\"%s\",\"npairs\":%lld,"
                     "\"cpu_oracle\":\"%s\",\"cpu_oracle_ms\":%.3f,\"bytes_written\":%.0f,\"floor_ms\":%.5f,\"methods\":[",
                first ? "" : ",", name, (long long)n, cutoff, kind_name, (long long)oracle.npairs,
                mdnl_method_name(oracle_method), cpu_ms, bytes_written, floor_ms);
        for (int m = 0; m < NMETHODS; ++m) {
            const method_result *r = &res[m];
            fprintf(out, "%s{\"method\":\"%s\"", m ? "," : "", method_labels[m]);
            if (r->skipped) {
                fprintf(out, ",\"skipped\":\"O(N^2)\"}");
                continue;
            }
            fprintf(out, ",\"valid\":%s,\"ms\":%.5f,\"ms_staged\":%.5f,\"atoms_per_s\":%.4g,\"pairs_per_s\":%.4g,"
                         "\"ratio_to_floor\":%.3f,\"stages_ms\":{",
                    r->valid ? "true" : "false", r->ms, r->ms_staged, n / (r->ms * 1e-3), oracle.npairs / (r->ms * 1e-3),
                    r->ms / floor_ms);
            for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
                fprintf(out, "%s\"%s\":%.5f", s ? "," : "", mdnl_cuda_stage_name(s), r->stage_ms[s]);
            fprintf(out, "},\"stage_floor_ms\":{");
            for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
                fprintf(out, "%s\"%s\":%.5f", s ? "," : "", mdnl_cuda_stage_name(s), r->stage_floor_ms[s]);
            fprintf(out, "}");
            if (r->walk_rows >= 0)
                fprintf(out, ",\"walk_rows\":\"%s\"", r->walk_rows ? "packed" : "gathered");
            fprintf(out, "}");
        }
        fprintf(out, "]");
        fprintf(out, ",\"libmdnl\":{\"valid\":%s,\"device_call_ms\":%.5f,\"host_call_ms\":%.5f}",
                lr.valid ? "true" : "false", lr.device_ms, lr.host_ms);
        if (with_shifts)
            fprintf(out, ",\"with_shift_vector\":{\"valid\":%s,\"list_ms\":%.5f,\"pass_ms\":%.5f,\"ms\":%.5f,"
                         "\"host_ms\":%.5f,\"bytes_written\":%.0f,\"pass_floor_ms\":%.5f}",
                    sr.valid ? "true" : "false", sr.list_ms, sr.pass_ms, sr.list_ms + sr.pass_ms, sr.host_ms,
                    sr.bytes_written, sr.floor_ms);
        fprintf(out, "}");
    } else {
        for (int m = 0; m < NMETHODS; ++m) {
            const method_result *r = &res[m];
            if (r->skipped) {
                fprintf(out, "%-13s %-15s %s\n", name, method_labels[m], "skipped: O(N²)");
                continue;
            }
            fprintf(out, "%-13s %-15s %9.4f %10.3g %10.3g %12.0f %9.4f %7.2f  %s\n", name,
                    method_labels[m], r->ms, n / (r->ms * 1e-3), oracle.npairs / (r->ms * 1e-3),
                    bytes_written, floor_ms, r->ms / floor_ms, r->valid ? "ok" : "MISMATCH vs CPU");
            fprintf(out, "%-13s %-15s   stages (total with their events %.4f):", "", "", r->ms_staged);
            for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
                if (r->stage_ms[s] > 0) {
                    fprintf(out, " %s %.4f", mdnl_cuda_stage_name(s), r->stage_ms[s]);
                    if (r->stage_floor_ms[s] > 0)
                        fprintf(out, " (%.1fx its floor)", r->stage_ms[s] / r->stage_floor_ms[s]);
                }
            if (r->walk_rows >= 0)
                fprintf(out, " (dense-walk rows %s)", r->walk_rows ? "packed" : "gathered");
            fprintf(out, "\n");
        }
        fprintf(out, "%-13s %-15s %9.4f   mdnl_neighbors_device (float64 positions on the device, list left "
                     "there; %.2fx the cell build); mdnl_neighbors host arrays in and out %.4f  %s\n",
                name, "libmdnl-call", lr.device_ms, lr.device_ms / res[2].ms, lr.host_ms,
                lr.valid ? "ok" : "MISMATCH vs CPU");
        if (with_shifts)
            fprintf(out, "%-13s %-15s %9.4f   list with shift,vector: cell %.4f + S/D pass %.4f (%.1fx its floor "
                         "%.4f, %.0f B out); with the upload and the download to the host %.4f  %s\n",
                    name, "+shift,vector", sr.list_ms + sr.pass_ms, sr.list_ms, sr.pass_ms, sr.pass_ms / sr.floor_ms,
                    sr.floor_ms, sr.bytes_written, sr.list_ms + sr.host_ms, sr.valid ? "ok" : "MISMATCH vs CPU");
        fprintf(out, "%-13s %lld atoms, cutoff %g, %s list, %lld pairs (%.1f per atom); CPU %s oracle %.0f ms\n", name,
                (long long)n, cutoff, kind_name, (long long)oracle.npairs, (double)oracle.npairs / (double)n,
                mdnl_method_name(oracle_method), cpu_ms);
    }
    st = MDNL_OK;
done:
    mdnl_nlist_free(&oracle);
    mdnl_nlist_free(&got);
    return st;
}
#endif

/* Marks the named systems in want (every one when nsizes is 0). */
static mdnl_status want_sizes(const char *const *sizes, int nsizes, int want[NSYSTEMS])
{
    for (int s = 0; s < NSYSTEMS; ++s)
        want[s] = nsizes <= 0;
    for (int k = 0; k < nsizes; ++k) {
        int found = 0;
        for (int s = 0; s < NSYSTEMS; ++s)
            if (strcmp(sizes[k], system_names[s]) == 0)
                want[s] = found = 1;
        if (!found)
            return mdnl_error(MDNL_ERR_USAGE, "--sizes: expected graphene-17k, graphene-1m, graphene-1m-shuffled, lj-1m, lj-1m-liquid, lj-1m-liquid-sorted or cu-131k, "
                                              "got \"%s\"",
                              sizes[k]);
    }
    return MDNL_OK;
}

mdnl_status mdnl_bench_check(const char *const *sizes, int nsizes)
{
    int want[NSYSTEMS];
    mdnl_status st = want_sizes(sizes, nsizes, want);
    if (st != MDNL_OK)
        return st;
#ifndef MDNL_HAVE_CUDA
    return mdnl_error(MDNL_ERR_RESOURCE, "bench: this mdnl was built without CUDA; the benchmark needs a GPU");
#else
    if (mdnl_cuda_device_count() < 1)
        return mdnl_error(MDNL_ERR_RESOURCE, "bench: no CUDA device found; the benchmark needs a GPU");
    return MDNL_OK;
#endif
}

mdnl_status mdnl_bench_run(const char *const *sizes, int nsizes, int json, FILE *out)
{
    int want[NSYSTEMS];
    mdnl_status st = mdnl_bench_check(sizes, nsizes);
    if (st == MDNL_OK)
        st = want_sizes(sizes, nsizes, want);
#ifndef MDNL_HAVE_CUDA
    (void)want;
    (void)method_labels;
    (void)json;
    (void)out;
    (void)wall_seconds;
    return st;
#else
    if (st != MDNL_OK)
        return st;
    mdnl_cuda_ctx *ctx = NULL;
    st = mdnl_cuda_ctx_create(&ctx);
    if (st != MDNL_OK)
        return st;
    int all_valid = 1, first = 1;
    const bench_bandwidth bw = bench_device_bandwidth();
    const char *bw_what = strcmp(bw.source, "theoretical") == 0 ? "theoretical: 2 x memory clock x bus width"
                                                                 : "assumed: the device reports no memory clock";
    if (json)
        fprintf(out, "{\"device\":\"%s\",\"bandwidth_Bps\":%.4g,\"bandwidth_source\":\"%s\",\"repeats\":%d,"
                     "\"systems\":[",
                mdnl_cuda_device_name(), bw.bps, bw.source, BENCH_REPEATS);
    else
        fprintf(out, "# device: %s; median of %d after %d warm-up; floor = (16 B/atom + CSR bytes) / %.2f TB/s (%s); a "
                     "stage's floor: its least bytes (its inputs read, its outputs written once) / the same\n"
                     "%-13s %-15s %9s %10s %10s %12s %9s %7s\n",
                mdnl_cuda_device_name(), BENCH_REPEATS, BENCH_WARMUP, bw.bps / 1e12, bw_what, "# system", "method",
                "ms", "atoms/s", "pairs/s", "bytes_out", "floor_ms", "ratio");
    for (int s = 0; s < NSYSTEMS && st == MDNL_OK; ++s)
        if (want[s]) {
            st = bench_system(ctx, s, &bw, json, first, out, &all_valid);
            first = 0;
            fflush(out);
        }
    if (json)
        fprintf(out, "],\"all_valid\":%s}\n", all_valid ? "true" : "false");
    mdnl_cuda_ctx_free(ctx);
    if (st == MDNL_OK && !all_valid)
        st = mdnl_error(MDNL_ERR_INTERNAL, "bench: a GPU neighbor list differs from the CPU twin's");
    return st;
#endif
}

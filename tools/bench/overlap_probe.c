/* overlap_probe.c — how much two neighbor-list builds in flight at once
 * (two CUDA contexts, each with its stream and its own copy of the frame,
 * one host thread each) overlap on one GPU: the wall time a build takes
 * when builds run one after another, and when two run side by side. Where
 * the second is well under the first, the stages of one build leave the GPU
 * room that another's can use (the walk issue-bound, the rows kernel
 * memory-bound), which is what running a frame's stages side by side could
 * win (tools/bench/RESULTS.md, 2026-11-27 11:10Z).
 *
 *   overlap_probe [--data DIR] [--builds K] [--rounds R] SYSTEM...
 *
 * For each system of bench/systems.h and each list kind: R rounds (default
 * 5) of K builds (default 20) by one thread, then R rounds of K builds by
 * each of two threads at once; prints the median wall milliseconds a build
 * (the pair count and the first build's CSR checked equal across the two
 * contexts). Built with the project when CUDA is found (target
 * overlap_probe). */
#define _POSIX_C_SOURCE 200809L
#include "geometry.h"
#include "nlist.h"
#include "nlist_cuda.h"
#include "systems.h"

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct worker {
    mdnl_cuda_ctx *ctx;
    float *d_pos;
    const mdnl_geom *g;
    mdnl_list_kind kind;
    int builds;
    pthread_barrier_t *start;
    mdnl_status st;
    int64_t npairs;
} worker;

static void *run_builds(void *arg)
{
    worker *w = arg;
    if (w->start)
        pthread_barrier_wait(w->start);
    w->st = MDNL_OK;
    for (int b = 0; b < w->builds && w->st == MDNL_OK; ++b) {
        mdnl_nlist_dev dev;
        w->st = mdnl_nlist_build_cuda_devpos(w->ctx, w->g, w->d_pos, MDNL_METHOD_CELL, w->kind, &dev);
        w->npairs = dev.npairs;
    }
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* R rounds of `nthreads` workers of K builds each, at once: the median wall ms a build. */
static mdnl_status time_rounds(worker *w, int nthreads, int rounds, double *ms)
{
    double *t = calloc((size_t)rounds, sizeof *t);
    if (!t)
        return MDNL_ERR_RESOURCE;
    for (int r = 0; r < rounds; ++r) {
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, (unsigned)nthreads + 1);
        pthread_t th[2];
        for (int k = 0; k < nthreads; ++k) {
            w[k].start = &start;
            pthread_create(&th[k], NULL, run_builds, &w[k]);
        }
        pthread_barrier_wait(&start);
        const double t0 = now();
        for (int k = 0; k < nthreads; ++k)
            pthread_join(th[k], NULL);
        t[r] = 1e3 * (now() - t0) / (double)(nthreads * w[0].builds);
        pthread_barrier_destroy(&start);
        for (int k = 0; k < nthreads; ++k)
            if (w[k].st != MDNL_OK) {
                free(t);
                return w[k].st;
            }
    }
    *ms = median(t, rounds);
    free(t);
    return MDNL_OK;
}

static mdnl_status probe(const char *name, int builds, int rounds)
{
    mdnl_frame f;
    memset(&f, 0, sizeof f);
    mdnl_status st = mdnl_system_build(name, &f);
    if (st != MDNL_OK)
        return st;
    float(*pos4)[4] = malloc((size_t)f.natoms * sizeof *pos4);
    mdnl_geom g;
    if (!pos4 || (st = mdnl_geom_prepare(&f, mdnl_system_cutoff(name), &g, pos4)) != MDNL_OK) {
        free(pos4);
        mdnl_frame_free(&f);
        return pos4 ? st : MDNL_ERR_RESOURCE;
    }
    worker w[2];
    memset(w, 0, sizeof w);
    for (int k = 0; k < 2 && st == MDNL_OK; ++k) {
        if ((st = mdnl_cuda_ctx_create(&w[k].ctx)) != MDNL_OK)
            break;
        const size_t bytes = (size_t)g.natoms * sizeof *pos4;
        if (cudaMalloc((void **)&w[k].d_pos, bytes) != cudaSuccess ||
            cudaMemcpy(w[k].d_pos, pos4, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
            fprintf(stderr, "overlap_probe: device positions of %s could not be set\n", name);
            st = MDNL_ERR_RESOURCE;
        }
        w[k].g = &g;
    }
    for (int kind = 0; kind < 2 && st == MDNL_OK; ++kind) {
        const mdnl_list_kind lk = kind == 0 ? MDNL_LIST_FULL : MDNL_LIST_HALF;
        for (int k = 0; k < 2; ++k) {
            w[k].kind = lk;
            w[k].builds = 3; /* warm-up: buffers grown, layouts chosen */
            w[k].start = NULL;
            run_builds(&w[k]);
            if (w[k].st != MDNL_OK)
                st = w[k].st;
        }
        if (st != MDNL_OK)
            break;
        if (w[0].npairs != w[1].npairs) {
            fprintf(stderr, "overlap_probe: %s: the two contexts' pair counts differ (%lld, %lld)\n", name,
                    (long long)w[0].npairs, (long long)w[1].npairs);
            st = MDNL_ERR_INTERNAL;
            break;
        }
        double one = 0, two = 0;
        w[0].builds = w[1].builds = builds;
        if ((st = time_rounds(w, 1, rounds, &one)) != MDNL_OK || (st = time_rounds(w, 2, rounds, &two)) != MDNL_OK)
            break;
        printf("%-20s %-4s %10lld pairs  one at a time %.4f ms a build, two at once %.4f ms a build (%.3f)\n", name,
               kind == 0 ? "full" : "half", (long long)w[0].npairs, one, two, two / one);
        fflush(stdout);
    }
    for (int k = 0; k < 2; ++k) {
        if (w[k].d_pos)
            cudaFree(w[k].d_pos);
        if (w[k].ctx)
            mdnl_cuda_ctx_free(w[k].ctx);
    }
    free(pos4);
    mdnl_frame_free(&f);
    return st;
}

int main(int argc, char **argv)
{
    int builds = 20, rounds = 5, nsys = 0;
    const char *sys[16];
    for (int a = 1; a < argc; ++a) {
        if (strcmp(argv[a], "--data") == 0 && a + 1 < argc)
            mdnl_systems_set_data_dir(argv[++a]);
        else if (strcmp(argv[a], "--builds") == 0 && a + 1 < argc)
            builds = atoi(argv[++a]);
        else if (strcmp(argv[a], "--rounds") == 0 && a + 1 < argc)
            rounds = atoi(argv[++a]);
        else if (argv[a][0] != '-' && nsys < 16)
            sys[nsys++] = argv[a];
        else {
            fprintf(stderr, "usage: overlap_probe [--data DIR] [--builds K] [--rounds R] SYSTEM...\n");
            return 2;
        }
    }
    if (builds < 1 || rounds < 1 || nsys == 0) {
        fprintf(stderr, "usage: overlap_probe [--data DIR] [--builds K] [--rounds R] SYSTEM...\n");
        return 2;
    }
    for (int s = 0; s < nsys; ++s) {
        const mdnl_status st = probe(sys[s], builds, rounds);
        if (st != MDNL_OK) {
            fprintf(stderr, "overlap_probe: %s: %s\n", sys[s], mdnl_last_error());
            return 1;
        }
    }
    return 0;
}

/* nlist_cpu.c — the CPU twin of the neighbor-list kernels (contract in
 * nlist.h). It is the oracle the CUDA kernels are tested against, so it is
 * the plainest correct code: two passes over the pairs (count rows, then fill
 * them), each row sorted by (j, distance). OpenMP parallel over atoms.
 *
 *   brute: every atom i visits every j and every image shift S in the box
 *          [-image_max, image_max] (geometry.h): O(N^2 * images).
 *   cell:  every atom visits the stencil of surrounding cells (cells_cpu.h).
 */
#include "cells_cpu.h"
#include "nlist.h"

#include <stdlib.h>
#include <string.h>

typedef struct row_ctx {
    mdnl_list_kind kind;
    int64_t count;   /* pass 1: pairs seen */
    int32_t *j;      /* pass 2: where the row's entries go */
    float *d;
} row_ctx;

static void count_pair(void *vctx, int64_t i, int32_t j, float d2, int s0, int s1, int s2)
{
    row_ctx *r = vctx;
    (void)d2;
    if (r->kind == MDNL_LIST_FULL || mdnl_half_keep(i, j, s0, s1, s2))
        r->count++;
}

static void fill_pair(void *vctx, int64_t i, int32_t j, float d2, int s0, int s1, int s2)
{
    row_ctx *r = vctx;
    if (r->kind == MDNL_LIST_FULL || mdnl_half_keep(i, j, s0, s1, s2)) {
        r->j[r->count] = j;
        r->d[r->count] = sqrtf(d2);
        r->count++;
    }
}

/* Brute force over all j and all image shifts, reporting pairs like the cell
 * visitor does. */
static void brute_visit(const mdnl_geom *g, const float (*pos4)[4], int64_t i, mdnl_pair_fn fn, void *ctx)
{
    const int m0 = g->pbc[0] ? g->image_max[0] : 0;
    const int m1 = g->pbc[1] ? g->image_max[1] : 0;
    const int m2 = g->pbc[2] ? g->image_max[2] : 0;
    const float xi = pos4[i][0], yi = pos4[i][1], zi = pos4[i][2];
    for (int64_t j = 0; j < g->natoms; ++j)
        for (int s0 = -m0; s0 <= m0; ++s0)
            for (int s1 = -m1; s1 <= m1; ++s1)
                for (int s2 = -m2; s2 <= m2; ++s2) {
                    if (j == i && s0 == 0 && s1 == 0 && s2 == 0)
                        continue;
                    float v[3];
                    mdnl_shift_vector(g, s0, s1, s2, v);
                    float d2 = mdnl_pair_d2(xi, yi, zi, pos4[j][0], pos4[j][1], pos4[j][2], v);
                    if (d2 < g->cutoff2)
                        fn(ctx, i, (int32_t)j, d2, s0, s1, s2);
                }
}

static int cmp_key(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sorts one row by mdnl_row_key; `keys` is scratch of at least n entries. */
static void sort_row(int32_t *j, float *d, int64_t n, uint64_t *keys)
{
    for (int64_t k = 0; k < n; ++k)
        keys[k] = mdnl_row_key(j[k], d[k]);
    if (n < 32) {
        for (int64_t a = 1; a < n; ++a) {
            uint64_t x = keys[a];
            int64_t b = a;
            for (; b > 0 && keys[b - 1] > x; --b)
                keys[b] = keys[b - 1];
            keys[b] = x;
        }
    } else {
        qsort(keys, (size_t)n, sizeof *keys, cmp_key);
    }
    for (int64_t k = 0; k < n; ++k) {
        union {
            uint32_t u;
            float f;
        } bits = {.u = (uint32_t)(keys[k] & 0xffffffffu)};
        j[k] = (int32_t)(keys[k] >> 32);
        d[k] = bits.f;
    }
}

mdnl_status mdnl_nlist_build_cpu(const mdnl_geom *g, const float (*pos4)[4], mdnl_method method, mdnl_list_kind kind,
                                 mdnl_nlist *out)
{
    const int64_t n = g->natoms;
    if (n > INT32_MAX)
        return mdnl_error(MDNL_ERR_INPUT, "%lld atoms in one frame: at most %d are supported", (long long)n, INT32_MAX);
    mdnl_status st = mdnl_nlist_reserve(out, n, 0);
    if (st != MDNL_OK)
        return st;
    const int use_cells = method == MDNL_METHOD_AUTO || method == MDNL_METHOD_CELL;
    mdnl_cells_cpu cells = {0};
    if (use_cells && (st = mdnl_cells_cpu_build(g, pos4, &cells)) != MDNL_OK)
        return st;

    /* Pass 1: row lengths. */
    int64_t *off = out->offsets;
    off[0] = 0;
#pragma omp parallel for schedule(dynamic, 256)
    for (int64_t i = 0; i < n; ++i) {
        row_ctx r = {.kind = kind};
        if (use_cells)
            mdnl_cells_cpu_visit(g, pos4, &cells, i, count_pair, &r);
        else
            brute_visit(g, pos4, i, count_pair, &r);
        off[i + 1] = r.count;
    }
    int64_t longest = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (off[i + 1] > longest)
            longest = off[i + 1];
        off[i + 1] += off[i];
    }
    out->natoms = n;
    out->npairs = off[n];
    if ((st = mdnl_nlist_reserve(out, n, off[n])) != MDNL_OK) {
        mdnl_cells_cpu_free(&cells);
        return st;
    }

    /* Pass 2: fill and sort each row. */
    int failed = 0;
#pragma omp parallel
    {
        uint64_t *keys = malloc((size_t)(longest > 0 ? longest : 1) * sizeof *keys);
        if (!keys) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 256)
        for (int64_t i = 0; i < n; ++i) {
            if (!keys)
                continue;
            row_ctx r = {.kind = kind, .j = out->j + off[i], .d = out->d + off[i]};
            if (use_cells)
                mdnl_cells_cpu_visit(g, pos4, &cells, i, fill_pair, &r);
            else
                brute_visit(g, pos4, i, fill_pair, &r);
            sort_row(r.j, r.d, r.count, keys);
        }
        free(keys);
    }
    mdnl_cells_cpu_free(&cells);
    if (failed)
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for neighbor-list sort scratch (%lld entries)",
                          (long long)longest);
    return MDNL_OK;
}

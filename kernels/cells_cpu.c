/* cells_cpu.c — CPU cell list and pair visitor (contract in cells_cpu.h; the
 * grid's invariants in geometry.h). */
#include "cells_cpu.h"

#include <stdlib.h>
#include <string.h>

mdnl_status mdnl_cells_cpu_build(const mdnl_geom *g, const float (*pos4)[4], mdnl_cells_cpu *c)
{
    const int64_t n = g->natoms;
    if (n > INT32_MAX)
        return mdnl_error(MDNL_ERR_INPUT, "%lld atoms in one frame: at most %d are supported", (long long)n, INT32_MAX);
    if (c->cap_cells < g->ncells + 1) {
        int64_t *s = mdnl_realloc(c->start, (size_t)(g->ncells + 1) * sizeof *s, "cell offsets");
        if (!s)
            return MDNL_ERR_RESOURCE;
        c->start = s;
        c->cap_cells = g->ncells + 1;
    }
    if (c->cap_atoms < n) {
        int32_t *a = mdnl_realloc(c->atoms, (size_t)n * sizeof *a, "cell atoms");
        if (!a)
            return MDNL_ERR_RESOURCE;
        c->atoms = a;
        int32_t *co = mdnl_realloc(c->cell_of, (size_t)n * sizeof *co, "cell of atom");
        if (!co)
            return MDNL_ERR_RESOURCE;
        c->cell_of = co;
        c->cap_atoms = n;
    }
    c->ncells = g->ncells;
    c->natoms = n;
    int64_t *start = c->start;
    memset(start, 0, (size_t)(g->ncells + 1) * sizeof *start);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        int cx = mdnl_cell_coord(g, pos4[i][0], pos4[i][1], pos4[i][2], 0);
        int cy = mdnl_cell_coord(g, pos4[i][0], pos4[i][1], pos4[i][2], 1);
        int cz = mdnl_cell_coord(g, pos4[i][0], pos4[i][1], pos4[i][2], 2);
        c->cell_of[i] = (int32_t)(((int64_t)cx * g->ncell[1] + cy) * g->ncell[2] + cz);
    }
    /* Stable counting sort: count, exclusive scan, scatter in atom order. */
    for (int64_t i = 0; i < n; ++i)
        start[c->cell_of[i] + 1]++;
    for (int64_t k = 0; k < g->ncells; ++k)
        start[k + 1] += start[k];
    for (int64_t i = 0; i < n; ++i) {
        int64_t cell = c->cell_of[i];
        /* start[cell] advances while scattering and is restored below */
        c->atoms[start[cell]++] = (int32_t)i;
    }
    for (int64_t k = g->ncells; k > 0; --k)
        start[k] = start[k - 1];
    start[0] = 0;
    return MDNL_OK;
}

void mdnl_cells_cpu_free(mdnl_cells_cpu *c)
{
    if (!c)
        return;
    free(c->start);
    free(c->atoms);
    free(c->cell_of);
    memset(c, 0, sizeof *c);
}

/* Maps cell coordinate x (any integer) on axis k to a grid cell and an image
 * shift; returns 0 when x leaves the grid of an open axis. */
static inline int wrap_axis(const mdnl_geom *g, int k, int x, int *cell, int *shift)
{
    const int n = g->ncell[k];
    if (!g->pbc[k]) {
        if (x < 0 || x >= n)
            return 0;
        *cell = x;
        *shift = 0;
        return 1;
    }
    int q = x >= 0 ? x / n : -((-x + n - 1) / n);
    *cell = x - q * n;
    *shift = q;
    return 1;
}

void mdnl_cells_cpu_visit(const mdnl_geom *g, const float (*pos4)[4], const mdnl_cells_cpu *c, int64_t i,
                          mdnl_pair_fn fn, void *ctx)
{
    const int32_t lin = c->cell_of[i];
    const int cz = lin % g->ncell[2];
    const int cy = (lin / g->ncell[2]) % g->ncell[1];
    const int cx = lin / (g->ncell[2] * g->ncell[1]);
    const float xi = pos4[i][0], yi = pos4[i][1], zi = pos4[i][2];
    for (int dx = -g->stencil[0]; dx <= g->stencil[0]; ++dx) {
        int ax, s0;
        if (!wrap_axis(g, 0, cx + dx, &ax, &s0))
            continue;
        for (int dy = -g->stencil[1]; dy <= g->stencil[1]; ++dy) {
            int ay, s1;
            if (!wrap_axis(g, 1, cy + dy, &ay, &s1))
                continue;
            for (int dz = -g->stencil[2]; dz <= g->stencil[2]; ++dz) {
                int az, s2;
                if (!wrap_axis(g, 2, cz + dz, &az, &s2))
                    continue;
                float v[3];
                mdnl_shift_vector(g, s0, s1, s2, v);
                const int is_zero_shift = s0 == 0 && s1 == 0 && s2 == 0;
                const int64_t cell = ((int64_t)ax * g->ncell[1] + ay) * g->ncell[2] + az;
                for (int64_t k = c->start[cell]; k < c->start[cell + 1]; ++k) {
                    const int32_t j = c->atoms[k];
                    if (j == i && is_zero_shift)
                        continue;
                    float d2 = mdnl_pair_d2(xi, yi, zi, pos4[j][0], pos4[j][1], pos4[j][2], v);
                    if (d2 < g->cutoff2)
                        fn(ctx, i, j, d2, s0, s1, s2);
                }
            }
        }
    }
}

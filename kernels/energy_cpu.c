/* energy_cpu.c — the CPU twin of the energy kernels (contract in energy.h).
 * It is the oracle energy.cu is tested against, so it is the plainest correct
 * code: OpenMP over atoms, each atom summing its own row into its own slot
 * (no shared accumulator), then one serial sum over the atoms in index order,
 * so the result does not depend on the number of threads.
 */
#include "energy.h"

#include "cells_cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Sums the per-atom energies in atom order. */
static double sum_in_order(const double *e, int64_t n)
{
    double t = 0.0;
    for (int64_t i = 0; i < n; ++i)
        t += e[i];
    return t;
}

mdnl_status mdnl_energy_list_cpu(const mdnl_nlist *l, mdnl_list_kind kind, const mdnl_potential *p, double *total,
                                 double *per_atom)
{
    const int64_t n = l->natoms;
    double *e = per_atom ? per_atom : mdnl_malloc((size_t)n * sizeof *e, "per-atom energies");
    if (!e)
        return MDNL_ERR_RESOURCE;
    /* Each row gives half of each of its pairs to its own atom ... */
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        double s = 0.0;
        for (int64_t k = l->offsets[i]; k < l->offsets[i + 1]; ++k)
            s += mdnl_pair_energy_d(p, l->d[k]);
        e[i] = 0.5 * s;
    }
    /* ... and, in a half list, the other half to the neighbor. Serial: the
     * scatter is a small part of the work and stays deterministic. */
    if (kind == MDNL_LIST_HALF) {
        for (int64_t i = 0; i < n; ++i)
            for (int64_t k = l->offsets[i]; k < l->offsets[i + 1]; ++k)
                e[l->j[k]] += 0.5 * mdnl_pair_energy_d(p, l->d[k]);
    }
    *total = sum_in_order(e, n);
    if (!per_atom)
        free(e);
    return MDNL_OK;
}

static mdnl_status check_cutoff(const mdnl_geom *g, const mdnl_potential *p)
{
    if ((float)p->cutoff != g->cutoff)
        return mdnl_error(MDNL_ERR_USAGE, "energy: the potential's cutoff %g differs from the neighbor cutoff %g",
                          p->cutoff, (double)g->cutoff);
    return MDNL_OK;
}

/* The fused traversal of both entry points: one potential p, or (t not
 * NULL) the pair table t with the atoms' types. */
static mdnl_status fused_cpu(const mdnl_geom *g, const float (*pos4)[4], const mdnl_potential *p,
                             const mdnl_pair_table *t, const int32_t *types, double *total, double *per_atom)
{
    mdnl_status st;
    const int64_t n = g->natoms;
    *total = 0.0;
    if (n == 0)
        return MDNL_OK;
    mdnl_cells_cpu cells;
    memset(&cells, 0, sizeof cells);
    st = mdnl_cells_cpu_build(g, pos4, &cells);
    double *e = per_atom ? per_atom : mdnl_malloc((size_t)n * sizeof *e, "per-atom energies");
    if (st == MDNL_OK && !e)
        st = MDNL_ERR_RESOURCE;
    if (st == MDNL_OK) {
        int failed = 0;
#pragma omp parallel
        {
            mdnl_cells_hood h = {0};
#pragma omp for schedule(dynamic, 16)
            for (int64_t cell = 0; cell < cells.ncells; ++cell) {
                if (!mdnl_cells_hood_enter(g, &cells, cell, &h, &failed))
                    continue;
                const int64_t kb = cells.start[cell], ke = cells.start[cell + 1];
                for (int64_t k = kb; k < ke; ++k) {
                    const int64_t m = mdnl_cells_hood_hits(g, &h, k, cells.x[k], cells.y[k], cells.z[k]);
                    double sum = 0.0; /* in candidate order (cells_cpu.h) */
                    if (t) {
                        const int ti = types[cells.atoms[k]];
                        for (int64_t a = 0; a < m; ++a)
                            sum += mdnl_pair_table_energy(t, ti, types[h.j[h.hit[a]]], h.d2[h.hit[a]]);
                    } else {
                        for (int64_t a = 0; a < m; ++a)
                            sum += mdnl_pair_energy(p, h.d2[h.hit[a]]);
                    }
                    e[cells.atoms[k]] = 0.5 * sum;
                }
            }
            mdnl_cells_hood_free(&h);
        }
        if (failed)
            st = MDNL_ERR_RESOURCE;
        else
            *total = sum_in_order(e, n);
    }
    if (!per_atom)
        free(e);
    mdnl_cells_cpu_free(&cells);
    return st;
}

mdnl_status mdnl_energy_frame_cpu(const mdnl_geom *g, const float (*pos4)[4], const mdnl_potential *p, double *total,
                                  double *per_atom)
{
    mdnl_status st = check_cutoff(g, p);
    if (st != MDNL_OK)
        return st;
    return fused_cpu(g, pos4, p, NULL, NULL, total, per_atom);
}

static mdnl_status check_table_cutoff(const mdnl_geom *g, const mdnl_pair_table *t)
{
    if ((float)t->max_cutoff != g->cutoff)
        return mdnl_error(MDNL_ERR_USAGE, "energy: the largest pair cutoff %g differs from the neighbor cutoff %g",
                          t->max_cutoff, (double)g->cutoff);
    return MDNL_OK;
}

mdnl_status mdnl_energy_table_frame_cpu(const mdnl_geom *g, const float (*pos4)[4], const int32_t *types,
                                        const mdnl_pair_table *t, double *total, double *per_atom)
{
    mdnl_status st = check_table_cutoff(g, t);
    if (st != MDNL_OK)
        return st;
    return fused_cpu(g, pos4, NULL, t, types, total, per_atom);
}

mdnl_status mdnl_energy_brute_cpu(const mdnl_geom *g, const float (*pos4)[4], const mdnl_potential *p, double *total,
                                  double *per_atom)
{
    mdnl_status st = check_cutoff(g, p);
    if (st != MDNL_OK)
        return st;
    const int64_t n = g->natoms;
    double *e = per_atom ? per_atom : mdnl_malloc((size_t)n * sizeof *e, "per-atom energies");
    if (!e)
        return MDNL_ERR_RESOURCE;
    const int m0 = g->pbc[0] ? g->image_max[0] : 0;
    const int m1 = g->pbc[1] ? g->image_max[1] : 0;
    const int m2 = g->pbc[2] ? g->image_max[2] : 0;
#pragma omp parallel for schedule(dynamic, 16)
    for (int64_t i = 0; i < n; ++i) {
        double s = 0.0;
        for (int64_t j = 0; j < n; ++j)
            for (int s0 = -m0; s0 <= m0; ++s0)
                for (int s1 = -m1; s1 <= m1; ++s1)
                    for (int s2 = -m2; s2 <= m2; ++s2) {
                        if (j == i && s0 == 0 && s1 == 0 && s2 == 0)
                            continue;
                        float v[3];
                        mdnl_shift_vector(g, s0, s1, s2, v);
                        float d2 = mdnl_pair_d2(pos4[i][0], pos4[i][1], pos4[i][2], pos4[j][0], pos4[j][1],
                                                pos4[j][2], v);
                        if (d2 < g->cutoff2)
                            s += mdnl_pair_energy(p, d2);
                    }
        e[i] = 0.5 * s;
    }
    *total = sum_in_order(e, n);
    if (!per_atom)
        free(e);
    return MDNL_OK;
}

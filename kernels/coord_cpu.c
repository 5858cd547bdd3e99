/* coord_cpu.c — the CPU twin of the coordination count (contract in
 * coord.h): the fused energy's traversal (energy_cpu.c) counting hits
 * instead of summing energies. */
#include "coord.h"

#include "cells_cpu.h"

#include <string.h>

mdnl_status mdnl_coord_frame_cpu(const mdnl_geom *g, const float (*pos4)[4], const int32_t *species, int32_t ncols,
                                 const int32_t (*pairs)[2], const mdnl_coord_cuts *cuts, int32_t *counts)
{
    if (ncols > MDNL_COORD_MAX_COLS)
        return mdnl_error(MDNL_ERR_USAGE, "coord: at most %d species pairs, got %d", MDNL_COORD_MAX_COLS, ncols);
    if (cuts && (cuts->ntypes < 1 || cuts->ntypes > MDNL_COORD_MAX_TYPES))
        return mdnl_error(MDNL_ERR_USAGE, "coord: 1 to %d cutoff types, got %d", MDNL_COORD_MAX_TYPES, cuts->ntypes);
    const int64_t n = g->natoms;
    if (n == 0)
        return MDNL_OK;
    const int32_t nc = ncols > 0 ? ncols : 1;
    mdnl_cells_cpu cells;
    memset(&cells, 0, sizeof cells);
    mdnl_status st = mdnl_cells_cpu_build(g, pos4, &cells);
    if (st == MDNL_OK) {
        int failed = 0;
#pragma omp parallel
        {
            mdnl_cells_hood h = {0};
#pragma omp for schedule(dynamic, 16)
            for (int64_t cell = 0; cell < cells.ncells; ++cell) {
                if (!mdnl_cells_hood_enter(g, &cells, cell, &h, &failed))
                    continue;
                for (int64_t k = cells.start[cell]; k < cells.start[cell + 1]; ++k) {
                    int64_t m = mdnl_cells_hood_hits(g, &h, k, cells.x[k], cells.y[k], cells.z[k]);
                    const int64_t i = cells.atoms[k];
                    int32_t *row = counts + i * nc;
                    if (cuts) { /* keep the hits below the pair's own cutoff, in order */
                        const float *c2 = cuts->cut2 + cuts->types[i] * cuts->ntypes;
                        int64_t kept = 0;
                        for (int64_t a = 0; a < m; ++a)
                            if (h.d2[h.hit[a]] < c2[cuts->types[h.j[h.hit[a]]]])
                                h.hit[kept++] = h.hit[a];
                        m = kept;
                    }
                    if (ncols == 0) {
                        row[0] = (int32_t)m;
                        continue;
                    }
                    for (int32_t p = 0; p < ncols; ++p) {
                        int32_t c = 0;
                        if (species[i] == pairs[p][0])
                            for (int64_t a = 0; a < m; ++a)
                                c += species[h.j[h.hit[a]]] == pairs[p][1];
                        row[p] = c;
                    }
                }
            }
            mdnl_cells_hood_free(&h);
        }
        if (failed)
            st = MDNL_ERR_RESOURCE;
    }
    mdnl_cells_cpu_free(&cells);
    return st;
}

/* cells_cpu.h — the CPU cell list: atoms binned by mdnl_cell_coord (geometry.h)
 * with a stable counting sort, and a visitor that enumerates every (j, S)
 * within the geometry's cutoff of an atom i. The neighbor list, the fused
 * energy and the fused histogram CPU twins all traverse pairs through it, so
 * they agree on the pair set by construction. Its CUDA counterpart is
 * cells_cuda.cuh. */
#ifndef MDNL_CELLS_CPU_H
#define MDNL_CELLS_CPU_H

#include "geometry.h"
#include "mdnl.h"

#include <stdint.h>

MDNL_BEGIN_C

typedef struct mdnl_cells_cpu {
    int64_t ncells;
    int64_t natoms;
    int64_t *start;   /* [ncells + 1]: cell c holds atoms[start[c] .. start[c+1]) */
    int32_t *atoms;   /* [natoms] atom indices in cell order, ascending within a cell */
    int32_t *cell_of; /* [natoms] linear cell index (cx * ncell[1] + cy) * ncell[2] + cz */
    int64_t cap_cells, cap_atoms;
} mdnl_cells_cpu;

/* Bins the atoms; arrays are reused and grown across calls. Zero-initialise
 * before the first call; free with mdnl_cells_cpu_free(). */
mdnl_status mdnl_cells_cpu_build(const mdnl_geom *g, const float (*pos4)[4], mdnl_cells_cpu *c);
void mdnl_cells_cpu_free(mdnl_cells_cpu *c); /* NULL is a no-op */

/* Called once per pair (i, j, S) of atom i's FULL list with d2 < g->cutoff2. */
typedef void (*mdnl_pair_fn)(void *ctx, int64_t i, int32_t j, float d2, int s0, int s1, int s2);

/* Visits every neighbor (j, S) of atom i, in cell order (not sorted). Safe to
 * call concurrently for different i. */
void mdnl_cells_cpu_visit(const mdnl_geom *g, const float (*pos4)[4], const mdnl_cells_cpu *c, int64_t i,
                          mdnl_pair_fn fn, void *ctx);

MDNL_END_C

#endif

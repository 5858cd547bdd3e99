/* coord.h — coordination numbers (mdnl coord): per-atom neighbor counts
 * within the cutoff, counted while traversing the cells (no list stored),
 * the same on every backend.
 *
 * Input: the prepared geometry (g->cutoff is the cutoff), the wrapped float
 * positions, the atoms' species ids and `ncols` columns:
 *   ncols = 0 (pairs NULL): one column, every neighbor of every atom;
 *   else column p = (A, B): for an atom of species A, its neighbors of
 *   species B; 0 for an atom of another species.
 * A neighbor is a pair of mdnl_for_each_pair / the full neighbor list
 * (d2 < g->cutoff2 by mdnl_pair_d2, self images (i, i, S != 0) included), so
 * a count equals the length of the atom's row of `mdnl neighbors --list full`
 * restricted to the column's species. Output: counts[i * ncols' + p] (ncols'
 * = max(1, ncols)), int32, written. Integers: CPU and GPU agree exactly.
 * The CPU twin is coord_cpu.c (OpenMP over cells), the CUDA kernel coord.cu
 * (coord_cuda.h). */
#ifndef MDNL_COORD_H
#define MDNL_COORD_H

#include "geometry.h"
#include "mdnl.h"

#include <stdint.h>

MDNL_BEGIN_C

#define MDNL_COORD_MAX_COLS 8 /* species-pair columns of one count */

/* MDNL_ERR_RESOURCE when scratch memory runs out; MDNL_ERR_USAGE for more
 * than MDNL_COORD_MAX_COLS columns. */
mdnl_status mdnl_coord_frame_cpu(const mdnl_geom *g, const float (*pos4)[4], const int32_t *species, int32_t ncols,
                                 const int32_t (*pairs)[2], int32_t *counts);

MDNL_END_C

#endif

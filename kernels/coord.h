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
 *
 * Per-pair cutoffs (cuts not NULL; mdnl coord --pair-cut): every atom has a
 * type, cuts->types[i] in 0..ntypes-1, and a pair (i, j) counts when its
 * float d2 is below g->cutoff2 (the traversal's cutoff: the largest pair
 * cutoff) and below cuts->cut2[types[i] * ntypes + types[j]] (symmetric;
 * (float)(cut * cut) as mdnl_geom.cutoff2, so a pair's count equals the
 * full list's at that pair's own cutoff; 0: the pair never counts).
 * The CPU twin is coord_cpu.c (OpenMP over cells), the CUDA kernel coord.cu
 * (coord_cuda.h). */
#ifndef MDNL_COORD_H
#define MDNL_COORD_H

#include "geometry.h"
#include "mdnl.h"

#include <stdint.h>

MDNL_BEGIN_C

#define MDNL_COORD_MAX_COLS 8  /* species-pair columns of one count */
#define MDNL_COORD_MAX_TYPES 8 /* cutoff types of --pair-cut: 7 named species and the rest */

typedef struct mdnl_coord_cuts {
    int32_t ntypes;        /* 1 .. MDNL_COORD_MAX_TYPES */
    const int32_t *types;  /* [natoms]: each atom's type (borrowed) */
    float cut2[MDNL_COORD_MAX_TYPES * MDNL_COORD_MAX_TYPES]; /* [a * ntypes + b] */
} mdnl_coord_cuts;

/* cuts: NULL, every pair at g->cutoff. MDNL_ERR_RESOURCE when scratch
 * memory runs out; MDNL_ERR_USAGE for more than MDNL_COORD_MAX_COLS columns
 * or MDNL_COORD_MAX_TYPES types. */
mdnl_status mdnl_coord_frame_cpu(const mdnl_geom *g, const float (*pos4)[4], const int32_t *species, int32_t ncols,
                                 const int32_t (*pairs)[2], const mdnl_coord_cuts *cuts, int32_t *counts);

MDNL_END_C

#endif

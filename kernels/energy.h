/* energy.h — the pair-energy contract (SPEC §4), the same on every backend.
 *
 * Input: a pair potential (potential.h) and either
 *   (a) a stored CSR neighbor list (nlist.h), full or half, or
 *   (b) the prepared geometry and wrapped float positions (geometry.h): the
 *       FUSED path traverses the cell list and evaluates each pair as it is
 *       found, storing no list.
 * Output: the total energy of the frame and, optionally, the energy of each
 * atom: half of every pair's energy goes to each of its two atoms, as LAMMPS
 * `compute pe/atom` does; self-image pairs (i, i, S != 0) count (a full row i
 * holds both (i, i, S) and (i, i, -S), each giving half). Everything is
 * accumulated in double; a pair's energy is mdnl_pair_energy_d() of its float
 * distance (potential.h says why).
 *
 * Determinism. The total is the sum of the per-atom energies in a fixed
 * order: on the CPU in atom order, on the GPU per block then over the block
 * sums in block order (energy_cuda.h). Results do not depend on the number of
 * threads and repeat bit for bit run to run on one backend; CPU and GPU
 * totals agree to rounding (about 1e-15 relative). The fused path and the
 * from-list path sum a row's pairs in different orders (cell order, sorted
 * order), so they agree to rounding, not bit for bit.
 *
 * The CPU twins live in energy_cpu.c (OpenMP over atoms); the CUDA kernels in
 * energy.cu, reached through energy_cuda.h.
 */
#ifndef MDNL_ENERGY_H
#define MDNL_ENERGY_H

#include "geometry.h"
#include "mdnl.h"
#include "nlist.h"
#include "potential.h"

MDNL_BEGIN_C

/* From a stored list of the given kind. `total` receives the frame's energy;
 * `per_atom` (nullable) holds l->natoms doubles, written (not added to).
 * Returns MDNL_ERR_RESOURCE when scratch memory runs out. */
mdnl_status mdnl_energy_list_cpu(const mdnl_nlist *l, mdnl_list_kind kind, const mdnl_potential *p, double *total,
                                 double *per_atom);

/* Fused: builds a cell list (cells_cpu.h) and evaluates every pair of every
 * atom's full row while traversing it. g->cutoff must be p->cutoff rounded to
 * float (MDNL_ERR_USAGE otherwise). `per_atom` (nullable) holds g->natoms
 * doubles. A frame of zero atoms gives total 0. */
mdnl_status mdnl_energy_frame_cpu(const mdnl_geom *g, const float (*pos4)[4], const mdnl_potential *p, double *total,
                                  double *per_atom);

/* Fused, with per-pair parameters (potential.h, mdnl_pair_table): the
 * traversal at g->cutoff = (float)t->max_cutoff (MDNL_ERR_USAGE otherwise),
 * each pair (i, j) evaluated as mdnl_pair_table_energy(t, types[i],
 * types[j], d2): zero beyond its own cutoff. types[g->natoms] from
 * mdnl_pair_table_types. Same order, threads and per-atom contract as
 * mdnl_energy_frame_cpu. */
mdnl_status mdnl_energy_table_frame_cpu(const mdnl_geom *g, const float (*pos4)[4], const int32_t *types,
                                        const mdnl_pair_table *t, double *total, double *per_atom);

/* The O(N^2 x images) oracle: brute force over every j and image shift, the
 * check on the cell traversal itself. Same contract as the fused path. */
mdnl_status mdnl_energy_brute_cpu(const mdnl_geom *g, const float (*pos4)[4], const mdnl_potential *p, double *total,
                                  double *per_atom);

MDNL_END_C

#endif

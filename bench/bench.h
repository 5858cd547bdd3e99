/* bench.h — `mdnl bench`: the neighbor-list benchmark on built-in systems.
 *
 * Systems (built in memory; the liquids read data/lj-liquid-131k.h5md,
 * systems.h says where it is looked for):
 *   graphene-17k  17,280 atoms, open boundaries, cutoff 1.9
 *   graphene-1m   999,424 atoms, pbc T T F (20 Å of vacuum in z), cutoff 1.9
 *   graphene-1m-shuffled  the same atoms in random order
 *   lj-1m         1,048,576 atoms, FCC at reduced density 0.8442 with seeded
 *                 displacements of up to 0.05 σ, periodic cube, cutoff 2.5
 *   lj-1m-liquid  1,048,576 atoms of a LAMMPS-melted LJ liquid (the 131k
 *                 snapshot of data/ replicated 2x2x2) in random order, 2.5
 *   lj-1m-liquid-sorted  the same in replica/id order
 *   cu-131k       FCC copper, a = 3.615 Å, 131,072 atoms, cutoff 5 Å
 * Every system builds the full list, then the half list. Each GPU method is first validated byte
 * for byte against the CPU twin (brute force for graphene-17k, the cell list
 * for the 1M systems, where brute force runs only when its O(N²) work is
 * small enough), then timed with CUDA events (warm-up, median of 15) per
 * method and per stage. Methods: brute-atomic vs brute-noatomic (the seed's
 * comparison), cell (the default: path by density), and each shipped cell
 * path forced (cell-sparse-stage, cell-dense-walk; nlist_cuda.h). The
 * napkin math: docs/performance.md.
 */
#ifndef MDNL_BENCH_H
#define MDNL_BENCH_H

#include "mdnl.h"

#include <stdio.h>

MDNL_BEGIN_C

/* Runs the systems named in sizes[0..nsizes) (all three when nsizes is 0)
 * and prints a table, or with json one JSON object, to `out`. Returns
 * MDNL_ERR_USAGE for an unknown system name, MDNL_ERR_RESOURCE when there is
 * no CUDA device (built without CUDA, or none present), MDNL_ERR_INTERNAL
 * when a GPU list differs from the CPU twin's. */
mdnl_status mdnl_bench_run(const char *const *sizes, int nsizes, int json, FILE *out);

/* What every benchmark needs before it starts: the named systems exist
 * (MDNL_ERR_USAGE naming the one that does not) and a CUDA device is there
 * (MDNL_ERR_RESOURCE: the benchmarks time kernels, never the CPU twin). */
mdnl_status mdnl_bench_check(const char *const *sizes, int nsizes);

/* The median of v[0..n) (sorts v in place): every benchmark's summary of its repeats. */
double mdnl_bench_median(double *v, int n);

MDNL_END_C

#endif

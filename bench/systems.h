/* systems.h — the built-in systems the benchmarks (and tests that want the
 * same frames) run on, defined once so that "lj-1m" means one frame
 * everywhere:
 *   graphene-17k  72 x 60 rectangular graphene cells, 17,280 atoms, open
 *   graphene-1m   512 x 488 cells, 999,424 atoms, periodic in x and y,
 *                 20 Å of vacuum in z
 *   graphene-1m-shuffled  the same atoms in random order (the liquid's
 *                 shuffle, below)
 *   lj-1m         FCC 64^3 x 4 = 1,048,576 atoms at reduced density 0.8442,
 *                 periodic cube, every coordinate displaced uniformly in
 *                 [-0.05, 0.05] σ by splitmix64 from seed 2024
 *   lj-100k       the same at 29^3 x 4 = 97,556 atoms: the size of the
 *                 `mdnl run` benchmark trajectory (tools/bench/bench_run.sh)
 *   lj-1m-liquid-sorted  a real LJ liquid: data/lj-liquid-131k.h5md (131,072
 *                 atoms melted with LAMMPS to T 0.9 at density 0.8442,
 *                 tools/make_lj_liquid.py) replicated 2 x 2 x 2 = 1,048,576
 *                 atoms, replica images in order (0,0,0), (0,0,1), ... (x
 *                 slowest), each in the snapshot's id order
 *   lj-1m-liquid  the same atoms in random order: a Fisher-Yates shuffle
 *                 drawing j = splitmix64() % (i + 1) for i = N-1 .. 1 from
 *                 seed 2024 (tools/bench/side_by_side.py makes the same)
 *   cu-131k       FCC copper, a = 3.615 Å, 32^3 cells x 4 = 131,072 atoms,
 *                 periodic cube, in lattice order (the NVIDIA ALCHEMI case)
 * Graphene comes from mdnl_gen_graphene (bond 1.42 Å, sheet at z = 10). */
#ifndef MDNL_SYSTEMS_H
#define MDNL_SYSTEMS_H

#include "frame.h"
#include "mdnl.h"

#include <stdint.h>

/* FCC lattice of nside^3 cubic cells of 4 atoms at number density rho, each
 * coordinate displaced uniformly in [-jitter, jitter], species "Ar". */
mdnl_status mdnl_gen_lj_fcc(int64_t nside, double rho, double jitter, uint64_t seed, mdnl_frame *f);

/* Builds the named system into f; MDNL_ERR_USAGE for an unknown name,
 * MDNL_ERR_INPUT when the liquid's data file cannot be read. */
mdnl_status mdnl_system_build(const char *name, mdnl_frame *f);

/* The cutoff the benchmarks use on the named system (2.5 for LJ, 5 Å for
 * copper, 1.9 Å for graphene). */
double mdnl_system_cutoff(const char *name);

/* The folder that holds lj-liquid-131k.h5md (`mdnl bench --data DIR`); NULL
 * restores the default search: DIR/../data and DIR/../../data for the
 * folder DIR of the running binary, then ./data. */
void mdnl_systems_set_data_dir(const char *dir);

#endif

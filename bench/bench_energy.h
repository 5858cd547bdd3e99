/* bench_energy.h — the energy benchmark behind `mdnl bench` (lj-1m). */
#ifndef MDNL_BENCH_ENERGY_H
#define MDNL_BENCH_ENERGY_H

#include "mdnl.h"

#include <stdio.h>

MDNL_BEGIN_C

/* lj-1m: 1,048,576 LJ atoms (FCC 64^3 x 4 at reduced density 0.8442, seeded
 * jitter), cutoff 2.5, lj:epsilon=1,sigma=1. Times the energy fused and from
 * a stored list (full and half), on the GPU for every reduction variant and
 * on the CPU; prints a table (or, with json, one JSON object) to `out`.
 * GPU rows are skipped when no device is present. */
mdnl_status mdnl_bench_energy(FILE *out, int json);

/* The same on an FCC of nside^3 x 4 atoms (tests and quick runs). */
mdnl_status mdnl_bench_energy_size(FILE *out, int json, int nside);

/* The same on a named LJ system of systems.h (lj-1m-liquid). */
mdnl_status mdnl_bench_energy_system(FILE *out, int json, const char *name);

MDNL_END_C

#endif

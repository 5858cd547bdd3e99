/* gen_graphene.h — periodic rectangular graphene sheets, the analytic
 * fixtures of the tests and the benchmarks. */
#ifndef MDNL_GEN_GRAPHENE_H
#define MDNL_GEN_GRAPHENE_H

#include "frame.h"
#include "mdnl.h"

#include <stdint.h>

/* nx x ny rectangular 4-atom cells (a = bond*sqrt(3) along x, b = 3*bond
 * along y): 4*nx*ny carbon atoms in the plane z = vacuum/2, lattice
 * diag(nx*a, ny*b, vacuum), periodic in x and y. With noise > 0 every
 * coordinate gets a Gaussian displacement of that standard deviation from a
 * PRNG seeded by `seed` (splitmix64 + Box-Muller: the same on every machine).
 * MDNL_ERR_USAGE names the offending option. Fills `out` (reusing arrays). */
mdnl_status mdnl_gen_graphene(int64_t nx, int64_t ny, double bond, double noise, uint64_t seed, double vacuum,
                              mdnl_frame *out);

#endif

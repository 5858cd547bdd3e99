#define _DEFAULT_SOURCE /* M_PI */
/* gen_graphene.c — see gen_graphene.h. */
#include "gen_graphene.h"

#include <math.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A standard normal deviate (Box-Muller, one of the pair). */
static double gaussian(uint64_t *s)
{
    double u1 = ((double)(splitmix64(s) >> 11) + 0.5) * 0x1.0p-53;
    double u2 = (double)(splitmix64(s) >> 11) * 0x1.0p-53;
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

mdnl_status mdnl_gen_graphene(int64_t nx, int64_t ny, double bond, double noise, uint64_t seed, double vacuum,
                              mdnl_frame *out)
{
    if (nx < 1 || ny < 1)
        return mdnl_error(MDNL_ERR_USAGE, "--nx and --ny must be at least 1, got %lld and %lld", (long long)nx,
                          (long long)ny);
    /* nx and ny are bounded first so that nx * ny cannot overflow. */
    if (nx > 250000000LL / 4 || ny > 250000000LL / 4 || nx * ny > 250000000LL / 4)
        return mdnl_error(MDNL_ERR_USAGE, "--nx %lld --ny %lld: more than 250 million atoms", (long long)nx,
                          (long long)ny);
    if (!(bond > 0) || !isfinite(bond))
        return mdnl_error(MDNL_ERR_USAGE, "--bond must be a positive finite number, got %g", bond);
    if (!(noise >= 0) || !isfinite(noise))
        return mdnl_error(MDNL_ERR_USAGE, "--noise must be a finite number >= 0, got %g", noise);
    if (!(vacuum > 0) || !isfinite(vacuum))
        return mdnl_error(MDNL_ERR_USAGE, "--vacuum must be a positive finite number, got %g", vacuum);
    const int64_t n = 4 * nx * ny;
    mdnl_status st = mdnl_frame_reserve(out, n);
    out->species_tag = 0;
    if (st != MDNL_OK)
        return st;
    const double a = bond * sqrt(3.0), b = 3.0 * bond;
    const double basis[4][2] = {{0, 0}, {a / 2, bond / 2}, {a / 2, 1.5 * bond}, {0, 2 * bond}};
    out->nspecies = 0;
    int32_t carbon = mdnl_frame_species_id(out, "C", 1);
    uint64_t state = seed;
    int64_t k = 0;
    for (int64_t ix = 0; ix < nx; ++ix)
        for (int64_t iy = 0; iy < ny; ++iy)
            for (int q = 0; q < 4; ++q, ++k) {
                out->pos[k][0] = (double)ix * a + basis[q][0];
                out->pos[k][1] = (double)iy * b + basis[q][1];
                out->pos[k][2] = vacuum / 2;
                if (noise > 0)
                    for (int c = 0; c < 3; ++c)
                        out->pos[k][c] += noise * gaussian(&state);
                out->species[k] = carbon;
            }
    out->natoms = n;
    out->index = 0;
    out->step = 0;
    out->time = 0;
    out->has_step = out->has_time = false;
    memset(&out->box, 0, sizeof out->box);
    out->box.has_lattice = true;
    out->box.h[0][0] = (double)nx * a;
    out->box.h[1][1] = (double)ny * b;
    out->box.h[2][2] = vacuum;
    out->box.pbc[0] = out->box.pbc[1] = true;
    return MDNL_OK;
}

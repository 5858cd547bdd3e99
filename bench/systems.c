/* systems.c — see systems.h. */
#include "systems.h"

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

mdnl_status mdnl_gen_lj_fcc(int64_t nside, double rho, double jitter, uint64_t seed, mdnl_frame *f)
{
    if (nside < 1 || nside > 1000 || !(rho > 0) || !(jitter >= 0))
        return mdnl_error(MDNL_ERR_USAGE, "FCC lattice: nside %lld, density %g, jitter %g out of range",
                          (long long)nside, rho, jitter);
    const double a = cbrt(4.0 / rho);
    const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
    const int64_t n = 4 * nside * nside * nside;
    mdnl_status st = mdnl_frame_reserve(f, n);
    f->species_tag = 0;
    if (st != MDNL_OK)
        return st;
    f->nspecies = 0;
    const int32_t ar = mdnl_frame_species_id(f, "Ar", 2);
    int64_t i = 0;
    for (int64_t x = 0; x < nside; ++x)
        for (int64_t y = 0; y < nside; ++y)
            for (int64_t z = 0; z < nside; ++z)
                for (int b = 0; b < 4; ++b, ++i) {
                    const int64_t c[3] = {x, y, z};
                    for (int d = 0; d < 3; ++d) {
                        double u = (double)(splitmix64(&seed) >> 11) * 0x1.0p-53;
                        f->pos[i][d] = ((double)c[d] + basis[b][d]) * a + jitter * (2.0 * u - 1.0);
                    }
                    f->species[i] = ar;
                }
    f->natoms = n;
    f->index = f->step = 0;
    f->time = 0;
    f->has_step = f->has_time = false;
    memset(&f->box, 0, sizeof f->box);
    f->box.has_lattice = true;
    f->box.h[0][0] = f->box.h[1][1] = f->box.h[2][2] = (double)nside * a;
    f->box.pbc[0] = f->box.pbc[1] = f->box.pbc[2] = true;
    return MDNL_OK;
}

mdnl_status mdnl_system_build(const char *name, mdnl_frame *f)
{
    if (strcmp(name, "lj-1m") == 0)
        return mdnl_gen_lj_fcc(64, 0.8442, 0.05, 2024, f);
    if (strcmp(name, "lj-100k") == 0)
        return mdnl_gen_lj_fcc(29, 0.8442, 0.05, 2024, f);
    if (strcmp(name, "graphene-1m") == 0)
        return mdnl_gen_graphene(512, 488, 1.42, 0.0, 0, 20.0, f);
    if (strcmp(name, "graphene-17k") == 0) {
        mdnl_status st = mdnl_gen_graphene(72, 60, 1.42, 0.0, 0, 20.0, f);
        if (st == MDNL_OK)
            memset(&f->box, 0, sizeof f->box); /* open boundaries */
        return st;
    }
    return mdnl_error(MDNL_ERR_USAGE, "unknown system \"%s\" (graphene-17k, graphene-1m, lj-1m, lj-100k)", name);
}

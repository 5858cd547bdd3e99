/* systems.c — see systems.h. */
#define _POSIX_C_SOURCE 200809L
#include "systems.h"

#include "gen_graphene.h"
#include "reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIQUID_FILE "lj-liquid-131k.h5md"

static const char *data_dir; /* mdnl_systems_set_data_dir */

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A generated frame's header: n atoms, frame 0 with no step or time, in a
 * periodic orthorhombic box of edges l[0..2]. */
static void set_frame_header(mdnl_frame *f, int64_t n, const double l[3])
{
    f->natoms = n;
    f->index = f->step = 0;
    f->time = 0;
    f->has_step = f->has_time = false;
    memset(&f->box, 0, sizeof f->box);
    f->box.has_lattice = true;
    for (int k = 0; k < 3; ++k) {
        f->box.h[k][k] = l[k];
        f->box.pbc[k] = true;
    }
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
    const double l = (double)nside * a;
    set_frame_header(f, n, (const double[3]){l, l, l});
    return MDNL_OK;
}

void mdnl_systems_set_data_dir(const char *dir) { data_dir = dir; }

/* The liquid's file: --data DIR, else beside the binary, else ./data. */
static mdnl_status liquid_path(char *path, size_t size)
{
    if (data_dir) {
        snprintf(path, size, "%s/%s", data_dir, LIQUID_FILE);
        return MDNL_OK;
    }
    char exe[4096];
    const ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
        static const char *const up[] = {"/../data/", "/../../data/"};
        for (int k = 0; k < 2; ++k) {
            snprintf(path, size, "%s%s%s", exe, up[k], LIQUID_FILE);
            if (access(path, R_OK) == 0)
                return MDNL_OK;
        }
    }
    snprintf(path, size, "data/%s", LIQUID_FILE);
    if (access(path, R_OK) == 0)
        return MDNL_OK;
    return mdnl_error(MDNL_ERR_INPUT, "%s: not found beside the binary or in ./data (give its folder with --data DIR)",
                      LIQUID_FILE);
}

/* The atoms in random order: a Fisher-Yates shuffle drawing j =
 * splitmix64() % (k + 1) for k = N-1 .. 1 from seed 2024. */
static void shuffle_frame(mdnl_frame *f)
{
    uint64_t seed = 2024;
    for (int64_t k = f->natoms - 1; k > 0; --k) {
        const int64_t j = (int64_t)(splitmix64(&seed) % (uint64_t)(k + 1));
        double p[3];
        memcpy(p, f->pos[k], sizeof p);
        memcpy(f->pos[k], f->pos[j], sizeof p);
        memcpy(f->pos[j], p, sizeof p);
        const int32_t s = f->species[k];
        f->species[k] = f->species[j];
        f->species[j] = s;
    }
}

/* The 131k liquid replicated 2 x 2 x 2 (x slowest), shuffled when asked. */
static mdnl_status build_liquid(int shuffle, mdnl_frame *f)
{
    char path[4200];
    mdnl_status st = liquid_path(path, sizeof path);
    if (st != MDNL_OK)
        return st;
    mdnl_reader *r = NULL;
    mdnl_frame one;
    memset(&one, 0, sizeof one);
    if ((st = mdnl_reader_open(path, NULL, &r)) == MDNL_OK)
        st = mdnl_reader_next(r, &one);
    mdnl_reader_close(r);
    if (st == MDNL_END)
        st = mdnl_error(MDNL_ERR_INPUT, "%s: no frame", path);
    if (st == MDNL_OK && !(one.box.has_lattice && one.box.pbc[0] && one.box.pbc[1] && one.box.pbc[2] &&
                           one.box.h[0][1] == 0 && one.box.h[0][2] == 0 && one.box.h[1][2] == 0 &&
                           one.box.h[1][0] == 0 && one.box.h[2][0] == 0 && one.box.h[2][1] == 0))
        st = mdnl_error(MDNL_ERR_INPUT, "%s: expected a periodic orthorhombic box", path);
    const int64_t m = one.natoms, n = 8 * m;
    if (st == MDNL_OK)
        st = mdnl_frame_reserve(f, n);
    if (st != MDNL_OK) {
        mdnl_frame_free(&one);
        return st;
    }
    f->species_tag = 0;
    f->nspecies = one.nspecies;
    memcpy(f->symbols, one.symbols, sizeof f->symbols);
    int64_t i = 0;
    for (int ix = 0; ix < 2; ++ix)
        for (int iy = 0; iy < 2; ++iy)
            for (int iz = 0; iz < 2; ++iz)
                for (int64_t a = 0; a < m; ++a, ++i) {
                    f->pos[i][0] = one.pos[a][0] + ix * one.box.h[0][0];
                    f->pos[i][1] = one.pos[a][1] + iy * one.box.h[1][1];
                    f->pos[i][2] = one.pos[a][2] + iz * one.box.h[2][2];
                    f->species[i] = one.species[a];
                }
    set_frame_header(f, n, (const double[3]){2.0 * one.box.h[0][0], 2.0 * one.box.h[1][1], 2.0 * one.box.h[2][2]});
    mdnl_frame_free(&one);
    if (shuffle)
        shuffle_frame(f);
    return MDNL_OK;
}

double mdnl_system_cutoff(const char *name)
{
    if (strncmp(name, "lj-", 3) == 0)
        return 2.5;
    if (strcmp(name, "cu-131k") == 0)
        return 5.0;
    return 1.9;
}

mdnl_status mdnl_system_build(const char *name, mdnl_frame *f)
{
    if (strcmp(name, "lj-1m-liquid") == 0)
        return build_liquid(1, f);
    if (strcmp(name, "lj-1m-liquid-sorted") == 0)
        return build_liquid(0, f);
    if (strcmp(name, "cu-131k") == 0) {
        /* FCC at a = 3.615 Å: number density 4 / a^3, no displacement */
        mdnl_status st = mdnl_gen_lj_fcc(32, 4.0 / (3.615 * 3.615 * 3.615), 0.0, 0, f);
        if (st == MDNL_OK) {
            f->nspecies = 0;
            const int32_t cu = mdnl_frame_species_id(f, "Cu", 2);
            for (int64_t i = 0; i < f->natoms; ++i)
                f->species[i] = cu;
        }
        return st;
    }
    if (strcmp(name, "lj-1m") == 0)
        return mdnl_gen_lj_fcc(64, 0.8442, 0.05, 2024, f);
    if (strcmp(name, "lj-100k") == 0)
        return mdnl_gen_lj_fcc(29, 0.8442, 0.05, 2024, f);
    if (strcmp(name, "graphene-1m") == 0)
        return mdnl_gen_graphene(512, 488, 1.42, 0.0, 0, 20.0, f);
    if (strcmp(name, "graphene-1m-shuffled") == 0) {
        mdnl_status st = mdnl_gen_graphene(512, 488, 1.42, 0.0, 0, 20.0, f);
        if (st == MDNL_OK)
            shuffle_frame(f);
        return st;
    }
    if (strcmp(name, "graphene-17k") == 0) {
        mdnl_status st = mdnl_gen_graphene(72, 60, 1.42, 0.0, 0, 20.0, f);
        if (st == MDNL_OK)
            memset(&f->box, 0, sizeof f->box); /* open boundaries */
        return st;
    }
    return mdnl_error(MDNL_ERR_USAGE, "unknown system \"%s\" (graphene-17k, graphene-1m, graphene-1m-shuffled, lj-1m, lj-100k, lj-1m-liquid, lj-1m-liquid-sorted, cu-131k)", name);
}

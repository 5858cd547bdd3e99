/* shift_fixtures.h — what test_pair_shift.c and test_pair_shift_gpu.c share:
 * a frame of a cell, its periodic axes and random atoms partly outside it
 * (so that the shifts relative to the positions as given differ from the
 * wrapped ones). Header-only, static inline. */
#ifndef MDNL_TEST_SHIFT_FIXTURES_H
#define MDNL_TEST_SHIFT_FIXTURES_H

#include "frame.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct shift_case {
    const char *name;
    int64_t n;
    double h[3][3];
    bool pbc[3];
    double rc;
} shift_case;

static uint64_t shift_rng;
static inline double shift_uniform(void)
{
    shift_rng += 0x9e3779b97f4a7c15ull;
    uint64_t z = shift_rng;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* c->n atoms at fractional s·h, s uniform in [lo, lo + span) (a frame without
 * a periodic axis: s·open_edge); the cell is c->h with c->pbc. */
static inline void shift_frame(const shift_case *c, uint64_t seed, double lo, double span, double open_edge,
                               mdnl_frame *f)
{
    memset(f, 0, sizeof *f);
    shift_rng = seed;
    cr_assert_eq(mdnl_frame_reserve(f, c->n), MDNL_OK);
    f->natoms = c->n;
    f->nspecies = 1;
    strcpy(f->symbols[0], "Ar");
    f->box.has_lattice = c->pbc[0] || c->pbc[1] || c->pbc[2];
    memcpy(f->box.h, c->h, sizeof c->h);
    for (int k = 0; k < 3; ++k)
        f->box.pbc[k] = c->pbc[k];
    for (int64_t i = 0; i < c->n; ++i) {
        double s[3];
        for (int k = 0; k < 3; ++k)
            s[k] = lo + span * shift_uniform();
        for (int a = 0; a < 3; ++a)
            f->pos[i][a] =
                f->box.has_lattice ? s[0] * c->h[0][a] + s[1] * c->h[1][a] + s[2] * c->h[2][a] : s[a] * open_edge;
        f->species[i] = 0;
    }
}

#endif

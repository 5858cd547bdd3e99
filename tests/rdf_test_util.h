/* rdf_test_util.h — frame builders and a fixture reader shared by
 * test_rdf.c (CPU) and test_rdf_gpu.c (GPU). Header-only, static. */
#ifndef MDNL_RDF_TEST_UTIL_H
#define MDNL_RDF_TEST_UTIL_H

#include "frame.h"
#include "geometry.h"
#include "rdf.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fixture directory: $MDNL_DATA_DIR when set (tests run on another
 * machine), else the source tree's data/. */
static inline const char *rdf_data_dir(void)
{
    const char *d = getenv("MDNL_DATA_DIR");
    return d && *d ? d : MDNL_DATA_DIR;
}

static uint64_t rdf_rng_state = 12345;
static inline double rdf_uniform(void)
{
    rdf_rng_state += 0x9e3779b97f4a7c15ull;
    uint64_t z = rdf_rng_state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)(z >> 11) * 0x1.0p-53;
}

/* Rectangular periodic graphene sheet: 4-atom cells a = b·√3, 3b; pbc T T F,
 * c = 20 Å of vacuum. */
static inline void rdf_graphene(mdnl_frame *f, int nx, int ny, double b)
{
    const double a = b * sqrt(3.0), c = 3.0 * b;
    const double basis[4][2] = {{0, 0}, {a / 2, b / 2}, {a / 2, 1.5 * b}, {0, 2 * b}};
    memset(f, 0, sizeof *f);
    cr_assert_eq(mdnl_frame_reserve(f, 4LL * nx * ny), MDNL_OK);
    int64_t n = 0;
    for (int ix = 0; ix < nx; ++ix)
        for (int iy = 0; iy < ny; ++iy)
            for (int k = 0; k < 4; ++k, ++n) {
                f->pos[n][0] = ix * a + basis[k][0];
                f->pos[n][1] = iy * c + basis[k][1];
                f->pos[n][2] = 10.0;
                f->species[n] = 0;
            }
    f->natoms = n;
    f->nspecies = 1;
    strcpy(f->symbols[0], "C");
    f->box.has_lattice = true;
    f->box.h[0][0] = nx * a;
    f->box.h[1][1] = ny * c;
    f->box.h[2][2] = 20.0;
    f->box.pbc[0] = f->box.pbc[1] = true;
}

/* Random atoms of two species. kind 0: orthorhombic periodic box; 1:
 * triclinic periodic; 2: open (no lattice); 3: mixed pbc T F T. On the
 * 1/64 grid when `dyadic` (with an orthorhombic box of dyadic edges), so that
 * squared distances are exact in float and double. */
static inline void rdf_random(mdnl_frame *f, int64_t n, int kind, double edge, int dyadic)
{
    memset(f, 0, sizeof *f);
    cr_assert_eq(mdnl_frame_reserve(f, n), MDNL_OK);
    f->natoms = n;
    f->nspecies = 2;
    strcpy(f->symbols[0], "A");
    strcpy(f->symbols[1], "B");
    double h[3][3] = {{edge, 0, 0}, {0, edge * 1.125, 0}, {0, 0, edge * 0.875}};
    if (kind == 1) {
        h[1][0] = 0.3 * edge;
        h[2][0] = -0.2 * edge;
        h[2][1] = 0.25 * edge;
    }
    for (int64_t i = 0; i < n; ++i) {
        double s[3] = {rdf_uniform(), rdf_uniform(), rdf_uniform()};
        for (int a = 0; a < 3; ++a) {
            f->pos[i][a] = s[0] * h[0][a] + s[1] * h[1][a] + s[2] * h[2][a];
            if (dyadic)
                f->pos[i][a] = floor(f->pos[i][a] * 64.0) / 64.0;
        }
        f->species[i] = rdf_uniform() < 0.3 ? 1 : 0;
    }
    if (kind != 2) {
        f->box.has_lattice = true;
        memcpy(f->box.h, h, sizeof h);
        f->box.pbc[0] = f->box.pbc[2] = true;
        f->box.pbc[1] = kind != 3;
    }
}

/* Prepares geometry and float positions for r_max; the caller frees *pos4. */
static inline void rdf_prepare(const mdnl_frame *f, double r_max, mdnl_geom *g, float (**pos4)[4])
{
    *pos4 = malloc((size_t)(f->natoms + 1) * sizeof **pos4);
    cr_assert_not_null(*pos4);
    mdnl_status st = mdnl_geom_prepare(f, r_max, g, *pos4);
    cr_assert_eq(st, MDNL_OK, "geom_prepare: %s", mdnl_last_error());
}

/* Reads the next frame of the fixture format written by
 * tools/mdanalysis_rdf_reference.py (extended XYZ, orthorhombic Lattice,
 * species + pos). Returns 0 at the end of the file. */
static inline int rdf_read_xyz(FILE *fp, mdnl_frame *f)
{
    char line[4096];
    if (!fgets(line, sizeof line, fp))
        return 0;
    long long n = atoll(line);
    cr_assert(n > 0 && n < 10000000, "fixture atom count line: %s", line);
    cr_assert_eq(mdnl_frame_reserve(f, n), MDNL_OK);
    cr_assert_not_null(fgets(line, sizeof line, fp));
    const char *lat = strstr(line, "Lattice=\"");
    cr_assert_not_null(lat, "fixture comment line without Lattice: %s", line);
    lat += 9;
    char *end;
    memset(&f->box, 0, sizeof f->box);
    for (int k = 0; k < 9; ++k) {
        f->box.h[k / 3][k % 3] = strtod(lat, &end);
        cr_assert(end != lat, "fixture lattice: %s", line);
        lat = end;
    }
    f->box.has_lattice = true;
    f->box.pbc[0] = f->box.pbc[1] = f->box.pbc[2] = true;
    f->natoms = n;
    for (long long i = 0; i < n; ++i) {
        cr_assert_not_null(fgets(line, sizeof line, fp));
        char sym[32];
        double x, y, z;
        cr_assert_eq(sscanf(line, "%31s %lf %lf %lf", sym, &x, &y, &z), 4, "fixture atom line: %s", line);
        f->species[i] = mdnl_frame_species_id(f, sym, strlen(sym));
        cr_assert(f->species[i] >= 0);
        f->pos[i][0] = x, f->pos[i][1] = y, f->pos[i][2] = z;
    }
    return 1;
}

/* Reads a reference table; returns rows (<= cap), columns g_mdnl, count, n. */
static inline int rdf_read_ref(const char *path, double *g, uint64_t *count, double *n, int cap, int64_t *na,
                               int64_t *nb)
{
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "cannot open %s", path);
    char line[1024];
    int rows = 0;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#') {
            long long a, b;
            if (sscanf(line, "# N_A=%lld N_B=%lld", &a, &b) == 2)
                *na = a, *nb = b;
            continue;
        }
        double lo, hi, r, gm, gn, nn;
        unsigned long long c;
        cr_assert_eq(sscanf(line, "%lf %lf %lf %lf %llu %lf %lf", &lo, &hi, &r, &gm, &c, &gn, &nn), 7);
        cr_assert(rows < cap);
        g[rows] = gn, count[rows] = c, n[rows] = nn;
        ++rows;
    }
    fclose(fp);
    return rows;
}

#endif

/* energy_fixtures.h — frames shared by test_energy.c and test_energy_gpu.c:
 * a perfect graphene sheet built in code, the extended-XYZ fixtures of
 * data/energy/ (read by a minimal parser for exactly the format that
 * tools/lammps_reference.py writes, so these tests do not depend on io/), and
 * the LAMMPS reference lines. Header-only; every function is static inline (no unused warnings). */
#ifndef MDNL_TEST_ENERGY_FIXTURES_H
#define MDNL_TEST_ENERGY_FIXTURES_H

#include "energy.h"
#include "frame.h"
#include "nlist.h"
#include "potential.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GRAPHENE_BOND 1.42

/* data/ as configured, or $MDNL_TEST_DATA_DIR (for test binaries shipped to
 * another machine, e.g. the GPU host). */
static inline const char *fixture_data_dir(void)
{
    const char *d = getenv("MDNL_TEST_DATA_DIR");
    return d && d[0] ? d : MDNL_DATA_DIR;
}

/* nx x ny rectangular 4-atom cells (a = 1.42 sqrt 3 along x, b = 3 x 1.42
 * along y), pbc T T F, 20 Å of vacuum along z. Every atom has 3 neighbors at
 * 1.42, 6 at 2.46 and 3 at 2.84 (then 6 at 3.76). */
static inline mdnl_frame fixture_graphene(int nx, int ny)
{
    const double d = GRAPHENE_BOND, a = d * sqrt(3.0), b = 3.0 * d;
    const double basis[4][2] = {{0, 0}, {0, d}, {a / 2, 1.5 * d}, {a / 2, 2.5 * d}};
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, (int64_t)nx * ny * 4), MDNL_OK);
    int32_t c = mdnl_frame_species_id(&f, "C", 1);
    for (int ix = 0; ix < nx; ++ix)
        for (int iy = 0; iy < ny; ++iy)
            for (int k = 0; k < 4; ++k) {
                int64_t i = f.natoms++;
                f.pos[i][0] = ix * a + basis[k][0];
                f.pos[i][1] = iy * b + basis[k][1];
                f.pos[i][2] = 0.0;
                f.species[i] = c;
            }
    f.box.has_lattice = true;
    f.box.h[0][0] = nx * a, f.box.h[1][1] = ny * b, f.box.h[2][2] = 20.0;
    f.box.pbc[0] = f.box.pbc[1] = true;
    return f;
}

/* Reads data/energy/NAME.xyz: the count line, a comment line with
 * Lattice="9 numbers" and pbc="T T F", then "SYMBOL x y z" lines. */
static inline mdnl_frame fixture_load(const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/energy/%s.xyz", fixture_data_dir(), name);
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "cannot open fixture %s", path);
    static char line[4096];
    long long n = 0;
    cr_assert(fgets(line, sizeof line, fp) && sscanf(line, "%lld", &n) == 1 && n > 0, "%s: bad count line", path);
    cr_assert(fgets(line, sizeof line, fp), "%s: no comment line", path);
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, n), MDNL_OK);
    const char *lat = strstr(line, "Lattice=\"");
    cr_assert_not_null(lat, "%s: no Lattice", path);
    double *h = &f.box.h[0][0];
    cr_assert_eq(sscanf(lat + 9, "%lf %lf %lf %lf %lf %lf %lf %lf %lf", h, h + 1, h + 2, h + 3, h + 4, h + 5, h + 6,
                        h + 7, h + 8),
                 9, "%s: bad Lattice", path);
    f.box.has_lattice = true;
    const char *pbc = strstr(line, "pbc=\"");
    cr_assert_not_null(pbc, "%s: no pbc", path);
    for (int k = 0; k < 3; ++k)
        f.box.pbc[k] = pbc[5 + 2 * k] == 'T';
    for (long long i = 0; i < n; ++i) {
        char sym[16];
        cr_assert(fgets(line, sizeof line, fp), "%s: atom %lld missing", path, i);
        cr_assert_eq(sscanf(line, "%15s %lf %lf %lf", sym, &f.pos[i][0], &f.pos[i][1], &f.pos[i][2]), 4,
                     "%s: bad atom line %lld", path, i + 3);
        f.species[i] = mdnl_frame_species_id(&f, sym, strlen(sym));
    }
    f.natoms = n;
    fclose(fp);
    return f;
}

typedef struct reference_case {
    char fixture[64];
    double cutoff;
    char spec[128];
    double pe;
} reference_case;

/* Reads data/energy/reference.txt into `out` (at most `cap`); returns the count. */
static inline int fixture_references(reference_case *out, int cap)
{
    char path[1024], line[512];
    snprintf(path, sizeof path, "%s/energy/reference.txt", fixture_data_dir());
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "cannot open %s", path);
    int n = 0;
    while (n < cap && fgets(line, sizeof line, fp)) {
        if (line[0] == '#')
            continue;
        reference_case *r = &out[n];
        cr_assert_eq(sscanf(line, "%63s %lf %127s %lf", r->fixture, &r->cutoff, r->spec, &r->pe), 4,
                     "%s: bad line \"%s\"", path, line);
        ++n;
    }
    fclose(fp);
    return n;
}

/* The frame's geometry and float positions for `cutoff`; the caller frees *pos4. */
static inline mdnl_geom fixture_prepare(const mdnl_frame *f, double cutoff, float (**pos4)[4])
{
    mdnl_geom g;
    *pos4 = malloc((size_t)(f->natoms > 0 ? f->natoms : 1) * sizeof **pos4);
    cr_assert_not_null(*pos4);
    cr_assert_eq(mdnl_geom_prepare(f, cutoff, &g, *pos4), MDNL_OK, "%s", mdnl_last_error());
    return g;
}

/* Sum over the pairs of |u_ij| (each pair once), from a half list: the scale
 * SPEC §4 measures energy errors against. */
static inline double fixture_sum_abs(const mdnl_nlist *half, const mdnl_potential *p)
{
    double s = 0.0;
    for (int64_t k = 0; k < half->npairs; ++k)
        s += fabs(mdnl_pair_energy_d(p, half->d[k]));
    return s;
}

/* ---- per-pair parameters: data/energy/ka_reference.txt ---- */

typedef struct ka_case {
    char name[32], fixture[64];
    double cutoff;
    char spec[128];
    char coeff_buf[512];
    const char *coeffs[8];
    int ncoeff;
    double pe;
} ka_case;

/* Reads data/energy/ka_reference.txt (tools/lammps_ka_reference.py): lines
 * `case fixture cutoff pair coeffs pe`, coeffs joined by ';' ("-": none). */
static inline int fixture_ka_references(ka_case *out, int cap)
{
    char path[1024], line[1024];
    snprintf(path, sizeof path, "%s/energy/ka_reference.txt", fixture_data_dir());
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "cannot open %s", path);
    int n = 0;
    while (n < cap && fgets(line, sizeof line, fp)) {
        if (line[0] == '#')
            continue;
        ka_case *r = &out[n];
        memset(r, 0, sizeof *r);
        cr_assert_eq(sscanf(line, "%31s %63s %lf %127s %511s %lf", r->name, r->fixture, &r->cutoff, r->spec,
                            r->coeff_buf, &r->pe),
                     6, "%s: bad line \"%s\"", path, line);
        if (strcmp(r->coeff_buf, "-") != 0)
            for (char *tok = strtok(r->coeff_buf, ";"); tok && r->ncoeff < 8; tok = strtok(NULL, ";"))
                r->coeffs[r->ncoeff++] = tok;
        ++n;
    }
    fclose(fp);
    return n;
}

/* The atoms' pair types of frame f under table t (malloc'd). */
static inline int32_t *fixture_types(const mdnl_pair_table *t, const mdnl_frame *f)
{
    int32_t *types = malloc((size_t)(f->natoms > 0 ? f->natoms : 1) * sizeof *types);
    cr_assert_not_null(types);
    cr_assert_eq(mdnl_pair_table_types(t, "fixture", f, types), MDNL_OK, "%s", mdnl_last_error());
    return types;
}

/* Sum over the pairs of |u_ij| under a pair table, from a half list built at
 * t->max_cutoff (d^2 recomputed from the stored d: a scale, not a result). */
static inline double fixture_table_sum_abs(const mdnl_nlist *half, const int32_t *types, const mdnl_pair_table *t)
{
    double s = 0.0;
    for (int64_t i = 0; i < half->natoms; ++i)
        for (int64_t k = half->offsets[i]; k < half->offsets[i + 1]; ++k)
            s += fabs(mdnl_pair_table_energy(t, types[i], types[half->j[k]], half->d[k] * half->d[k]));
    return s;
}

#endif

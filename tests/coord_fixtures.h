/* coord_fixtures.h — what test_coord.c and test_coord_gpu.c share: the
 * reference tables of data/coord/ (tools/coord_reference.py, ASE and
 * freud) and the O(N^2 x images) count. Header-only, static inline. */
#ifndef MDNL_TEST_COORD_FIXTURES_H
#define MDNL_TEST_COORD_FIXTURES_H

#include "geometry.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads data/coord/NAME.tsv (`i count[ count:A-B ...]` rows after the
 * comments) into cols[k][i]; returns the rows, *ncols the columns. */
static inline int64_t coord_reference(const char *name, int32_t *cols, int64_t cap, int *ncols)
{
    char path[1024], line[512];
    snprintf(path, sizeof path, "%s/coord/%s.tsv", MDNL_DATA_DIR, name);
    FILE *fp = fopen(path, "r");
    cr_assert_not_null(fp, "cannot open %s", path);
    int64_t n = 0;
    *ncols = 0;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#')
            continue;
        char *s = line, *end;
        long long i = strtoll(s, &end, 10);
        cr_assert_eq(i, n, "%s: row %lld out of order", path, i);
        int k = 0;
        for (s = end; k < 4; ++k) {
            long v = strtol(s, &end, 10);
            if (end == s)
                break;
            cr_assert_lt(n * 4 + k, cap);
            cols[n * 4 + k] = (int32_t)v;
            s = end;
        }
        *ncols = k;
        ++n;
    }
    fclose(fp);
    return n;
}

/* Brute-force counts: every j and image, d2 < cutoff2 by mdnl_pair_d2. */
static inline void coord_brute(const mdnl_geom *g, const float (*pos4)[4], int32_t *counts)
{
    const int m0 = g->pbc[0] ? g->image_max[0] : 0, m1 = g->pbc[1] ? g->image_max[1] : 0,
              m2 = g->pbc[2] ? g->image_max[2] : 0;
    for (int64_t i = 0; i < g->natoms; ++i) {
        int32_t c = 0;
        for (int64_t j = 0; j < g->natoms; ++j)
            for (int s0 = -m0; s0 <= m0; ++s0)
                for (int s1 = -m1; s1 <= m1; ++s1)
                    for (int s2 = -m2; s2 <= m2; ++s2) {
                        if (j == i && !s0 && !s1 && !s2)
                            continue;
                        float v[3];
                        mdnl_shift_vector(g, s0, s1, s2, v);
                        c += mdnl_pair_d2(pos4[i][0], pos4[i][1], pos4[i][2], pos4[j][0], pos4[j][1], pos4[j][2],
                                          v) < g->cutoff2;
                    }
        counts[i] = c;
    }
}

#endif

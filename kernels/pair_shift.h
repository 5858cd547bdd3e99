/* pair_shift.h — the image shift S and vector D of a list entry, after the
 * build: the neighbor kernels (nlist.h) store (j, d) but not S, and ASE's
 * `ijdSD` (the library's callers, `mdnl neighbors --with shift,vector`) want
 * both. The contract of the post-pass over a whole list, whose CPU twin is
 * pair_shift_cpu.c and CUDA twin pair_shift.cu (pair_shift_cuda.h); both
 * call the per-entry functions below, so their outputs are the same bytes.
 *
 * An entry (i, j, d) of row k came from one shift S within the brute force's
 * image range (g->image_max), whose float distance, computed with the
 * kernels' own operations (mdnl_shift_vector, mdnl_pair_d2, a correctly
 * rounded sqrt), is d bit for bit. Entries of a row with the same j and d
 * (a symmetric small cell: two images at one distance) are told apart by
 * their rank among those entries, matched to the rank-th such shift in
 * lexicographic order: which of two equal entries gets which S is arbitrary,
 * and the set of (i, j, S, d) is exact. Only shifts that can be within the
 * cutoff are tried: along periodic axis k, |(r_j - r_i + S·h)·b_k| =
 * |Δs_k + S_k| < rc / w_k (b_k the reciprocal vector, w_k the width, Δs the
 * fractional difference), widened by 1e-3 for the float positions; at most
 * 2 values an axis while the cutoff is below half the width, so at most 8
 * distances an entry (27 for the whole image range m = 1).
 *
 * The shift is relative to the wrapped positions; mdnl_wrap_offset gives the
 * integer cells an atom was moved by (wrapped = given - off·h), so that the
 * shift relative to the positions as given is S + off_i - off_j.
 */
#ifndef MDNL_PAIR_SHIFT_H
#define MDNL_PAIR_SHIFT_H

#include "frame.h"
#include "geometry.h"
#include "nlist.h"

#include <stdint.h>

MDNL_BEGIN_C

/* S ([npairs][3] int32, relative to the positions as given: r_j - r_i +
 * S·h = D) and, when D is not NULL, D ([npairs][3] double) of every entry of
 * the list l, built with geometry g from the wrapped positions pos4 of frame
 * f (f->pos: the positions as given, f->box: the cell). half: l is a half
 * list. OpenMP over rows. MDNL_ERR_INPUT when an atom lies more than
 * MDNL_SHIFT_OFFSET_MAX cells from the cell (S would overflow int32). */
mdnl_status mdnl_pair_shifts_cpu(const mdnl_frame *f, const mdnl_geom *g, const float (*pos4)[4], const mdnl_nlist *l,
                                 int half, int32_t (*S)[3], double (*D)[3]);

#if defined(__CUDA_ARCH__)
#define MDNL_SQRTF(x) __fsqrt_rn(x)
#else
#define MDNL_SQRTF(x) sqrtf(x)
#endif

/* Largest |offset| an atom may lie from the cell, so that S stays an int32. */
#define MDNL_SHIFT_OFFSET_MAX 1000000000.0

/* The shift of an entry (i, j, d) with `rank` entries before it in its row
 * with the same j and d. pos4 is [natoms][4] (the wrapped positions the list
 * was built from), w the wrap parameters of g's frame (mdnl_geom_begin).
 * Returns 1 with S set, 0 when no shift matches (a bug). */
MDNL_HD int mdnl_entry_shift(const mdnl_geom *g, const mdnl_wrap_params *w, const float *pos4, int64_t i, int32_t j,
                             float d, int rank, int half, int S[3])
{
    const float *pi = pos4 + 4 * i, *pj = pos4 + 4 * (int64_t)j;
    int lo[3], hi[3];
    for (int k = 0; k < 3; ++k) {
        lo[k] = -g->image_max[k], hi[k] = g->image_max[k];
        if (!g->pbc[k] || !(g->width[k] > 0))
            continue;
        double ds = 0;
        for (int a = 0; a < 3; ++a)
            ds += ((double)pj[a] - (double)pi[a]) * w->hinv[a][k];
        const double reach = (double)g->cutoff / g->width[k] + 1e-3;
        const double first = ceil(-ds - reach), last = floor(-ds + reach);
        if (first > (double)lo[k])
            lo[k] = (int)first;
        if (last < (double)hi[k])
            hi[k] = (int)last;
    }
    int seen = 0;
    for (int s0 = lo[0]; s0 <= hi[0]; ++s0)
        for (int s1 = lo[1]; s1 <= hi[1]; ++s1)
            for (int s2 = lo[2]; s2 <= hi[2]; ++s2) {
                if (i == j && s0 == 0 && s1 == 0 && s2 == 0)
                    continue;
                if (half && !mdnl_half_keep(i, j, s0, s1, s2))
                    continue;
                float v[3];
                mdnl_shift_vector(g, s0, s1, s2, v);
                const float d2 = mdnl_pair_d2(pi[0], pi[1], pi[2], pj[0], pj[1], pj[2], v);
                if (!(d2 < g->cutoff2) || MDNL_SQRTF(d2) != d)
                    continue;
                if (seen++ == rank) {
                    S[0] = s0, S[1] = s1, S[2] = s2;
                    return 1;
                }
            }
    return 0;
}

/* The integer cells mdnl_wrap_atom moves an atom by on each periodic axis
 * (0 on open axes): the same double operations, so the same floor. Returns
 * 0 when an offset is beyond MDNL_SHIFT_OFFSET_MAX (or not finite). */
MDNL_HD int mdnl_wrap_offset(const mdnl_wrap_params *w, double r0, double r1, double r2, int off[3])
{
    for (int k = 0; k < 3; ++k) {
        off[k] = 0;
        if (!w->pbc[k])
            continue;
        const double s = MDNL_DADD(MDNL_DADD(MDNL_DMUL(r0, w->hinv[0][k]), MDNL_DMUL(r1, w->hinv[1][k])),
                                   MDNL_DMUL(r2, w->hinv[2][k]));
        double f = mdnl_floor_exact(s);
        if (MDNL_DSUB(s, f) >= 1.0)
            f = f + 1.0;
        if (!(fabs(f) <= MDNL_SHIFT_OFFSET_MAX))
            return 0;
        off[k] = (int)f;
    }
    return 1;
}

/* D = r_j - r_i + S·h in double, S relative to the positions as given. */
MDNL_HD void mdnl_entry_vector(const double h[3][3], const double ri[3], const double rj[3], const int S[3], double D[3])
{
    for (int a = 0; a < 3; ++a)
        D[a] = MDNL_DADD(MDNL_DSUB(rj[a], ri[a]),
                         MDNL_DADD(MDNL_DADD(MDNL_DMUL((double)S[0], h[0][a]), MDNL_DMUL((double)S[1], h[1][a])),
                                   MDNL_DMUL((double)S[2], h[2][a])));
}

/* The number of entries before k in its row (which starts at `row0`) with the
 * same j and d: rows are sorted by (j, d), so they sit right before it. */
MDNL_HD int mdnl_entry_rank(const int32_t *jj, const float *dd, int64_t row0, int64_t k)
{
    int r = 0;
    for (int64_t q = k - 1; q >= row0 && jj[q] == jj[k] && dd[q] == dd[k]; --q)
        ++r;
    return r;
}

MDNL_END_C

#endif

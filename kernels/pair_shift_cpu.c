/* pair_shift_cpu.c — the host post-pass of pair_shift.h: S and D of every
 * entry of a host list, a row at a time (OpenMP). The CUDA twin is
 * pair_shift.cu; both are the per-entry functions of pair_shift.h, so the
 * same bytes. Used by the library (lib/library.c, and its streams through
 * lib/engine.c). */
#include "pair_shift.h"

mdnl_status mdnl_pair_shifts_cpu(const mdnl_frame *f, const mdnl_geom *g, const float (*pos4)[4], const mdnl_nlist *l,
                                 int half, int32_t (*S)[3], double (*D)[3])
{
    mdnl_geom gb;
    mdnl_wrap_params w;
    mdnl_status st = mdnl_geom_begin(f, g->cutoff, &gb, &w);
    if (st != MDNL_OK)
        return st;
    const double(*r)[3] = (const double(*)[3])f->pos;
    const float *p4 = l->natoms > 0 ? &pos4[0][0] : NULL;
    int failed = 0; /* 1: no shift matched (a bug), 2: an offset beyond int32 */
#pragma omp parallel for schedule(dynamic, 64) reduction(max : failed)
    for (int64_t i = 0; i < l->natoms; ++i) {
        int oi[3];
        if (!mdnl_wrap_offset(&w, r[i][0], r[i][1], r[i][2], oi)) {
            failed = failed > 2 ? failed : 2;
            continue;
        }
        for (int64_t k = l->offsets[i]; k < l->offsets[i + 1]; ++k) {
            const int32_t j = l->j[k];
            int s[3] = {0, 0, 0}, oj[3];
            if (!mdnl_entry_shift(g, &w, p4, i, j, l->d[k], mdnl_entry_rank(l->j, l->d, l->offsets[i], k), half, s))
                failed = failed > 1 ? failed : 1;
            if (!mdnl_wrap_offset(&w, r[j][0], r[j][1], r[j][2], oj)) {
                failed = failed > 2 ? failed : 2;
                continue;
            }
            for (int a = 0; a < 3; ++a)
                S[k][a] = s[a] + oi[a] - oj[a];
            if (D)
                mdnl_entry_vector(w.h, r[i], r[j], S[k], D[k]);
        }
    }
    if (failed == 2)
        return mdnl_error(MDNL_ERR_INPUT,
                          "an atom lies more than %g cells from the cell: its image shifts would overflow int32",
                          MDNL_SHIFT_OFFSET_MAX);
    if (failed == 1)
        return mdnl_error(MDNL_ERR_INTERNAL, "image shifts: a list entry matches no image shift");
    return MDNL_OK;
}

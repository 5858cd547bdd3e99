/* cells_cpu.c — CPU cell list and pair visitor (contract in cells_cpu.h; the
 * grid's invariants in geometry.h). */
#include "cells_cpu.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

mdnl_status mdnl_cells_cpu_build(const mdnl_geom *g, const float (*pos4)[4], mdnl_cells_cpu *c)
{
    const int64_t n = g->natoms;
    if (n > INT32_MAX)
        return mdnl_error(MDNL_ERR_INPUT, "%lld atoms in one frame: at most %d are supported", (long long)n, INT32_MAX);
    if (c->cap_cells < g->ncells + 1) {
        int64_t *s = mdnl_realloc(c->start, (size_t)(g->ncells + 1) * sizeof *s, "cell offsets");
        if (!s)
            return MDNL_ERR_RESOURCE;
        c->start = s;
        c->cap_cells = g->ncells + 1;
    }
    if (c->cap_atoms < n) {
        int32_t *a = mdnl_realloc(c->atoms, (size_t)n * sizeof *a, "cell atoms");
        if (!a)
            return MDNL_ERR_RESOURCE;
        c->atoms = a;
        int32_t *co = mdnl_realloc(c->cell_of, (size_t)n * sizeof *co, "cell of atom");
        if (!co)
            return MDNL_ERR_RESOURCE;
        c->cell_of = co;
        for (int ax = 0; ax < 3; ++ax) {
            float **slot = ax == 0 ? &c->x : ax == 1 ? &c->y : &c->z;
            float *p = mdnl_realloc(*slot, (size_t)n * sizeof *p, "cell-order positions");
            if (!p)
                return MDNL_ERR_RESOURCE;
            *slot = p;
        }
        c->cap_atoms = n;
    }
    c->ncells = g->ncells;
    c->natoms = n;
    int64_t *start = c->start;
    const int64_t nc = g->ncells;
    /* Stable counting sort by cell, in parallel where each thread's count
     * array is affordable: each thread counts its static share of the atoms
     * per cell, an exclusive scan over (cell, thread) gives every thread its
     * place in each cell, and each scatters its share in atom order; the
     * cells list their atoms in ascending index either way. */
    const int maxt = omp_get_max_threads();
    int32_t *cnt = NULL;
    if (maxt > 1 && n >= 65536 && (int64_t)maxt * nc <= 4 * n)
        cnt = calloc((size_t)maxt * (size_t)nc, sizeof *cnt); /* NULL: the serial sort below */
    if (cnt) {
#pragma omp parallel num_threads(maxt)
        {
            const int nt = omp_get_num_threads(), t = omp_get_thread_num();
            const int64_t ib = n * t / nt, ie = n * (t + 1) / nt;
            int32_t *mine = cnt + (size_t)t * (size_t)nc;
            for (int64_t i = ib; i < ie; ++i) {
                const int cx = mdnl_cell_coord(g, pos4[i][0], pos4[i][1], pos4[i][2], 0);
                const int cy = mdnl_cell_coord(g, pos4[i][0], pos4[i][1], pos4[i][2], 1);
                const int cz = mdnl_cell_coord(g, pos4[i][0], pos4[i][1], pos4[i][2], 2);
                const int32_t cell = (int32_t)(((int64_t)cx * g->ncell[1] + cy) * g->ncell[2] + cz);
                c->cell_of[i] = cell;
                mine[cell]++;
            }
#pragma omp barrier
#pragma omp single
            {
                int64_t run = 0;
                for (int64_t k = 0; k < nc; ++k) {
                    start[k] = run;
                    for (int u = 0; u < nt; ++u) {
                        const int32_t v = cnt[(size_t)u * (size_t)nc + (size_t)k];
                        cnt[(size_t)u * (size_t)nc + (size_t)k] = (int32_t)run;
                        run += v;
                    }
                }
                start[nc] = run;
            }
            for (int64_t i = ib; i < ie; ++i)
                c->atoms[mine[c->cell_of[i]]++] = (int32_t)i;
#pragma omp barrier
#pragma omp for schedule(static)
            for (int64_t k = 0; k < n; ++k) {
                const int32_t i = c->atoms[k];
                c->x[k] = pos4[i][0];
                c->y[k] = pos4[i][1];
                c->z[k] = pos4[i][2];
            }
        }
        free(cnt);
        return MDNL_OK;
    }
    memset(start, 0, (size_t)(nc + 1) * sizeof *start);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
        int cx = mdnl_cell_coord(g, pos4[i][0], pos4[i][1], pos4[i][2], 0);
        int cy = mdnl_cell_coord(g, pos4[i][0], pos4[i][1], pos4[i][2], 1);
        int cz = mdnl_cell_coord(g, pos4[i][0], pos4[i][1], pos4[i][2], 2);
        c->cell_of[i] = (int32_t)(((int64_t)cx * g->ncell[1] + cy) * g->ncell[2] + cz);
    }
    /* Stable counting sort: count, exclusive scan, scatter in atom order. */
    for (int64_t i = 0; i < n; ++i)
        start[c->cell_of[i] + 1]++;
    for (int64_t k = 0; k < nc; ++k)
        start[k + 1] += start[k];
    for (int64_t i = 0; i < n; ++i) {
        int64_t cell = c->cell_of[i];
        /* start[cell] advances while scattering and is restored below */
        c->atoms[start[cell]++] = (int32_t)i;
    }
    for (int64_t k = nc; k > 0; --k)
        start[k] = start[k - 1];
    start[0] = 0;
#pragma omp parallel for schedule(static)
    for (int64_t k = 0; k < n; ++k) {
        const int32_t i = c->atoms[k];
        c->x[k] = pos4[i][0];
        c->y[k] = pos4[i][1];
        c->z[k] = pos4[i][2];
    }
    return MDNL_OK;
}

void mdnl_cells_cpu_free(mdnl_cells_cpu *c)
{
    if (!c)
        return;
    free(c->start);
    free(c->atoms);
    free(c->cell_of);
    free(c->x);
    free(c->y);
    free(c->z);
    memset(c, 0, sizeof *c);
}

/* Maps cell coordinate x (any integer) on axis k to a grid cell and an image
 * shift; returns 0 when x leaves the grid of an open axis. */
static inline int wrap_axis(const mdnl_geom *g, int k, int x, int *cell, int *shift)
{
    const int n = g->ncell[k];
    if (!g->pbc[k]) {
        if (x < 0 || x >= n)
            return 0;
        *cell = x;
        *shift = 0;
        return 1;
    }
    int q = x >= 0 ? x / n : -((-x + n - 1) / n);
    *cell = x - q * n;
    *shift = q;
    return 1;
}

/* The stencil of home cell `cell` in candidate order (dx, then dy, then dz
 * ascending): each neighbour cell that exists (an open axis ends the grid)
 * into nb[] with its image shift S into s[]. Both arrays hold the stencil's
 * (2 st0 + 1)(2 st1 + 1)(2 st2 + 1) entries; returns how many were written.
 * The hood and the runs are both built from it, so they visit the same
 * candidates in the same order. */
static int64_t stencil_cells(const mdnl_geom *g, int64_t cell, int64_t *nb, int (*s)[3])
{
    const int cz = (int)(cell % g->ncell[2]);
    const int cy = (int)((cell / g->ncell[2]) % g->ncell[1]);
    const int cx = (int)(cell / ((int64_t)g->ncell[2] * g->ncell[1]));
    int64_t n = 0;
    for (int dx = -g->stencil[0]; dx <= g->stencil[0]; ++dx) {
        int ax, s0;
        if (!wrap_axis(g, 0, cx + dx, &ax, &s0))
            continue;
        for (int dy = -g->stencil[1]; dy <= g->stencil[1]; ++dy) {
            int ay, s1;
            if (!wrap_axis(g, 1, cy + dy, &ay, &s1))
                continue;
            for (int dz = -g->stencil[2]; dz <= g->stencil[2]; ++dz) {
                int az, s2;
                if (!wrap_axis(g, 2, cz + dz, &az, &s2))
                    continue;
                nb[n] = ((int64_t)ax * g->ncell[1] + ay) * g->ncell[2] + az;
                s[n][0] = s0, s[n][1] = s1, s[n][2] = s2;
                ++n;
            }
        }
    }
    return n;
}

static mdnl_status hood_reserve(mdnl_cells_hood *h, int64_t n)
{
    if (h->cap >= n)
        return MDNL_OK;
    int64_t cap = n + n / 2 + 64; /* and 16 spare slots of hit[] for the AVX-512 store */
    void **arr[] = {(void **)&h->x,  (void **)&h->y,    (void **)&h->z,   (void **)&h->vx,
                    (void **)&h->vy, (void **)&h->vz,   (void **)&h->j,   (void **)&h->self,
                    (void **)&h->pos, (void **)&h->sidx, (void **)&h->d2, (void **)&h->hit};
    size_t size[] = {4, 4, 4, 4, 4, 4, 4, 4, 1, 4, 4, 4};
    for (size_t a = 0; a < sizeof arr / sizeof arr[0]; ++a) {
        void *p = mdnl_realloc(*arr[a], (size_t)(cap + 16) * size[a], "cell neighbourhood");
        if (!p)
            return MDNL_ERR_RESOURCE;
        *arr[a] = p;
    }
    h->cap = cap;
    return MDNL_OK;
}

bool mdnl_cells_hood_enter(const mdnl_geom *g, const mdnl_cells_cpu *c, int64_t cell, mdnl_cells_hood *h, int *failed)
{
    if (c->start[cell] == c->start[cell + 1])
        return false;
    int bad;
#pragma omp atomic read
    bad = *failed;
    if (bad)
        return false;
    if (mdnl_cells_hood_gather(g, c, cell, h) != MDNL_OK) {
#pragma omp atomic write
        *failed = 1;
        return false;
    }
    return true;
}

void mdnl_cells_hood_free(mdnl_cells_hood *h)
{
    if (!h)
        return;
    free(h->x), free(h->y), free(h->z), free(h->vx), free(h->vy), free(h->vz);
    free(h->j), free(h->self), free(h->pos), free(h->sidx), free(h->d2), free(h->hit);
    free(h->shift), free(h->seg), free(h->segcell);
    memset(h, 0, sizeof *h);
}

mdnl_status mdnl_cells_hood_gather(const mdnl_geom *g, const mdnl_cells_cpu *c, int64_t cell, mdnl_cells_hood *h)
{
    const int64_t nst = (int64_t)(2 * g->stencil[0] + 1) * (2 * g->stencil[1] + 1) * (2 * g->stencil[2] + 1);
    if (h->cap_shift < nst) {
        int(*s)[3] = mdnl_realloc(h->shift, (size_t)nst * sizeof *s, "cell stencil");
        if (!s)
            return MDNL_ERR_RESOURCE;
        h->shift = s;
        int64_t *sg = mdnl_realloc(h->seg, (size_t)(nst + 1) * sizeof *sg, "cell stencil");
        if (!sg)
            return MDNL_ERR_RESOURCE;
        h->seg = sg;
        int64_t *sc = mdnl_realloc(h->segcell, (size_t)nst * sizeof *sc, "cell stencil");
        if (!sc)
            return MDNL_ERR_RESOURCE;
        h->segcell = sc;
        h->cap_shift = nst;
    }
    h->n = 0;
    h->cell = cell;
    h->home_start = c->start[cell];
    h->seg[0] = 0;
    h->nshift = stencil_cells(g, cell, h->segcell, h->shift);
    for (int64_t si = 0; si < h->nshift; ++si) {
        const int s0 = h->shift[si][0], s1 = h->shift[si][1], s2 = h->shift[si][2];
        float v[3];
        mdnl_shift_vector(g, s0, s1, s2, v);
        const int zero = s0 == 0 && s1 == 0 && s2 == 0;
        const uint8_t positive = (uint8_t)mdnl_shift_positive(s0, s1, s2);
        const int64_t nb = h->segcell[si];
        const int64_t b = c->start[nb], e = c->start[nb + 1];
        mdnl_status st = hood_reserve(h, h->n + (e - b));
        if (st != MDNL_OK)
            return st;
        int64_t q = h->n;
        for (int64_t k = b; k < e; ++k, ++q) {
            h->x[q] = c->x[k];
            h->y[q] = c->y[k];
            h->z[q] = c->z[k];
            h->vx[q] = v[0];
            h->vy[q] = v[1];
            h->vz[q] = v[2];
            h->j[q] = c->atoms[k];
            h->self[q] = zero ? (int32_t)k : -1;
            h->pos[q] = positive;
            h->sidx[q] = (int32_t)si;
        }
        h->n = q;
        h->seg[si + 1] = q;
    }
    return MDNL_OK;
}

/* The distance test, three ways: AVX-512 and AVX2 (chosen at run time on
 * x86-64 machines that have them) and portable C. Each computes
 * mdnl_pair_d2 with the same IEEE operations in the same order (no
 * contraction: -ffp-contract=off, and no FMA intrinsics), so all three give
 * the same bits and the same hits in the same order. */
static int64_t hits_c(const mdnl_geom *g, mdnl_cells_hood *h, int64_t k, float xi, float yi, float zi, int64_t qb,
                      int64_t n, int64_t m)
{
    const float cut2 = g->cutoff2;
    const float *restrict x = h->x, *restrict y = h->y, *restrict z = h->z;
    const float *restrict vx = h->vx, *restrict vy = h->vy, *restrict vz = h->vz;
    float *restrict d2 = h->d2;
    for (int64_t q = qb; q < n; ++q) {
        float dx = (x[q] - xi) + vx[q];
        float dy = (y[q] - yi) + vy[q];
        float dz = (z[q] - zi) + vz[q];
        d2[q] = (dx * dx + dy * dy) + dz * dz;
    }
    const int32_t *restrict self = h->self;
    int32_t *restrict hit = h->hit;
    for (int64_t q = qb; q < n; ++q) {
        hit[m] = (int32_t)q;
        m += (d2[q] < cut2) & (self[q] != (int32_t)k);
    }
    return m;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define MDNL_HITS_X86 1
#include <immintrin.h>

__attribute__((target("avx512f"))) static int64_t hits_avx512(const mdnl_geom *g, mdnl_cells_hood *h, int64_t k,
                                                              float xi, float yi, float zi, int64_t qb, int64_t n,
                                                              int64_t m)
{
    const __m512 vxi = _mm512_set1_ps(xi), vyi = _mm512_set1_ps(yi), vzi = _mm512_set1_ps(zi);
    const __m512 cut2 = _mm512_set1_ps(g->cutoff2);
    const __m512i vk = _mm512_set1_epi32((int32_t)k);
    __m512i vq = _mm512_add_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                  _mm512_set1_epi32((int32_t)qb));
    const __m512i sixteen = _mm512_set1_epi32(16);
    for (int64_t q = qb; q < n; q += 16) {
        const __mmask16 lm = n - q >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - q)) - 1u);
        __m512 dx = _mm512_add_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(lm, h->x + q), vxi),
                                  _mm512_maskz_loadu_ps(lm, h->vx + q));
        __m512 dy = _mm512_add_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(lm, h->y + q), vyi),
                                  _mm512_maskz_loadu_ps(lm, h->vy + q));
        __m512 dz = _mm512_add_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(lm, h->z + q), vzi),
                                  _mm512_maskz_loadu_ps(lm, h->vz + q));
        __m512 d2 = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(dx, dx), _mm512_mul_ps(dy, dy)), _mm512_mul_ps(dz, dz));
        _mm512_mask_storeu_ps(h->d2 + q, lm, d2);
        __mmask16 in = _mm512_mask_cmp_ps_mask(lm, d2, cut2, _CMP_LT_OQ);
        in = _mm512_mask_cmpneq_epi32_mask(in, _mm512_maskz_loadu_epi32(lm, h->self + q), vk);
        /* compress in a register, then a plain store (h->hit has 16 spare slots) */
        _mm512_storeu_si512((void *)(h->hit + m), _mm512_maskz_compress_epi32(in, vq));
        m += __builtin_popcount((unsigned)in);
        vq = _mm512_add_epi32(vq, sixteen);
    }
    return m;
}

__attribute__((target("avx2,bmi"))) static int64_t hits_avx2(const mdnl_geom *g, mdnl_cells_hood *h, int64_t k,
                                                             float xi, float yi, float zi, int64_t qb, int64_t n,
                                                             int64_t m)
{
    const float cut2 = g->cutoff2;
    const __m256 vxi = _mm256_set1_ps(xi), vyi = _mm256_set1_ps(yi), vzi = _mm256_set1_ps(zi);
    const __m256 vcut = _mm256_set1_ps(cut2);
    int64_t q = qb;
    for (; q + 8 <= n; q += 8) {
        __m256 dx = _mm256_add_ps(_mm256_sub_ps(_mm256_loadu_ps(h->x + q), vxi), _mm256_loadu_ps(h->vx + q));
        __m256 dy = _mm256_add_ps(_mm256_sub_ps(_mm256_loadu_ps(h->y + q), vyi), _mm256_loadu_ps(h->vy + q));
        __m256 dz = _mm256_add_ps(_mm256_sub_ps(_mm256_loadu_ps(h->z + q), vzi), _mm256_loadu_ps(h->vz + q));
        __m256 d2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)), _mm256_mul_ps(dz, dz));
        _mm256_storeu_ps(h->d2 + q, d2);
        unsigned bits = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(d2, vcut, _CMP_LT_OQ));
        while (bits) {
            const int l = __builtin_ctz(bits);
            bits &= bits - 1;
            h->hit[m] = (int32_t)(q + l);
            m += h->self[q + l] != (int32_t)k;
        }
    }
    for (; q < n; ++q) {
        float dx = (h->x[q] - xi) + h->vx[q];
        float dy = (h->y[q] - yi) + h->vy[q];
        float dz = (h->z[q] - zi) + h->vz[q];
        h->d2[q] = (dx * dx + dy * dy) + dz * dz;
        h->hit[m] = (int32_t)q;
        m += (h->d2[q] < cut2) & (h->self[q] != (int32_t)k);
    }
    return m;
}
#endif

static int64_t hits_range(const mdnl_geom *g, mdnl_cells_hood *h, int64_t k, float xi, float yi, float zi, int64_t qb,
                          int64_t qe, int64_t m)
{
#ifdef MDNL_HITS_X86
    if (__builtin_cpu_supports("avx512f"))
        return hits_avx512(g, h, k, xi, yi, zi, qb, qe, m);
    if (__builtin_cpu_supports("avx2"))
        return hits_avx2(g, h, k, xi, yi, zi, qb, qe, m);
#endif
    return hits_c(g, h, k, xi, yi, zi, qb, qe, m);
}

int64_t mdnl_cells_hood_hits(const mdnl_geom *g, mdnl_cells_hood *h, int64_t k, float xi, float yi, float zi)
{
    return hits_range(g, h, k, xi, yi, zi, 0, h->n, 0);
}

int64_t mdnl_cells_hood_hits_half(const mdnl_geom *g, mdnl_cells_hood *h, int64_t k, float xi, float yi, float zi)
{
    int64_t m = 0;
    for (int64_t s = 0; s < h->nshift; ++s) {
        int64_t qb = h->seg[s];
        const int64_t qe = h->seg[s + 1];
        if (h->segcell[s] < h->cell || qb == qe)
            continue;
        if (h->segcell[s] == h->cell) /* the home cell: from atom k on, k itself only at a positive shift */
            qb += (k - h->home_start) + (h->pos[qb] ? 0 : 1);
        m = hits_range(g, h, k, xi, yi, zi, qb, qe, m);
    }
    return m;
}

void mdnl_cells_runs_free(mdnl_cells_runs *r)
{
    if (!r)
        return;
    free(r->b), free(r->e), free(r->last), free(r->v), free(r->s);
    memset(r, 0, sizeof *r);
}

mdnl_status mdnl_cells_runs_build(const mdnl_geom *g, const mdnl_cells_cpu *c, int64_t cell, mdnl_cells_runs *r)
{
    const int64_t nst = (int64_t)(2 * g->stencil[0] + 1) * (2 * g->stencil[1] + 1) * (2 * g->stencil[2] + 1);
    if (r->cap < nst) {
        void **arr[] = {(void **)&r->b, (void **)&r->e, (void **)&r->last, (void **)&r->v, (void **)&r->s};
        size_t size[] = {sizeof *r->b, sizeof *r->e, sizeof *r->last, sizeof *r->v, sizeof *r->s};
        for (size_t a = 0; a < sizeof arr / sizeof arr[0]; ++a) {
            void *p = mdnl_realloc(*arr[a], (size_t)nst * size[a], "cell stencil runs");
            if (!p)
                return MDNL_ERR_RESOURCE;
            *arr[a] = p;
        }
        r->cap = nst;
    }
    /* the stencil into last[] and s[], then merged in place into runs (a run
     * is never written ahead of the entry being read) */
    const int64_t ncells = stencil_cells(g, cell, r->last, r->s);
    int64_t n = 0, ncand = 0;
    for (int64_t t = 0; t < ncells; ++t) {
        const int64_t nb = r->last[t];
        const int s0 = r->s[t][0], s1 = r->s[t][1], s2 = r->s[t][2];
        const int64_t b = c->start[nb], e = c->start[nb + 1];
        ncand += e - b;
        if (n > 0 && r->last[n - 1] + 1 == nb && r->s[n - 1][0] == s0 && r->s[n - 1][1] == s1 &&
            r->s[n - 1][2] == s2) {
            r->e[n - 1] = e;
            r->last[n - 1] = nb;
            continue;
        }
        r->b[n] = b, r->e[n] = e, r->last[n] = nb;
        r->s[n][0] = s0, r->s[n][1] = s1, r->s[n][2] = s2;
        mdnl_shift_vector(g, s0, s1, s2, r->v[n]);
        ++n;
    }
    r->n = n;
    r->ncand = ncand;
    return MDNL_OK;
}

#ifdef MDNL_HITS_X86
__attribute__((target("avx512f"))) static int64_t runs_keys_avx512(const mdnl_geom *g, const mdnl_cells_cpu *c,
                                                                   const mdnl_cells_runs *r, int64_t k, int half,
                                                                   uint64_t *keys)
{
    const __m512 vxi = _mm512_set1_ps(c->x[k]), vyi = _mm512_set1_ps(c->y[k]), vzi = _mm512_set1_ps(c->z[k]);
    const __m512 cut2 = _mm512_set1_ps(g->cutoff2);
    const __m512i vk = _mm512_set1_epi32((int32_t)k), vi = _mm512_set1_epi32(c->atoms[k]);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    int64_t m = 0;
    for (int64_t t = 0; t < r->n; ++t) {
        const __m512 sx = _mm512_set1_ps(r->v[t][0]), sy = _mm512_set1_ps(r->v[t][1]), sz = _mm512_set1_ps(r->v[t][2]);
        const int zero = r->s[t][0] == 0 && r->s[t][1] == 0 && r->s[t][2] == 0;
        /* mdnl_half_keep: j > i, or j == i at a positive shift (the atom itself is out already) */
        const int ge = mdnl_shift_positive(r->s[t][0], r->s[t][1], r->s[t][2]);
        const int64_t e = r->e[t];
        for (int64_t q = r->b[t]; q < e; q += 16) {
            const __mmask16 lm = e - q >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (e - q)) - 1u);
            __m512 dx = _mm512_add_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(lm, c->x + q), vxi), sx);
            __m512 dy = _mm512_add_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(lm, c->y + q), vyi), sy);
            __m512 dz = _mm512_add_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(lm, c->z + q), vzi), sz);
            __m512 d2 =
                _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(dx, dx), _mm512_mul_ps(dy, dy)), _mm512_mul_ps(dz, dz));
            __mmask16 in = _mm512_mask_cmp_ps_mask(lm, d2, cut2, _CMP_LT_OQ);
            if (!in)
                continue;
            if (zero)
                in = _mm512_mask_cmpneq_epi32_mask(in, _mm512_add_epi32(iota, _mm512_set1_epi32((int32_t)q)), vk);
            const __m512i vj = _mm512_maskz_loadu_epi32(lm, c->atoms + q);
            if (half)
                in = ge ? _mm512_mask_cmpge_epi32_mask(in, vj, vi) : _mm512_mask_cmpgt_epi32_mask(in, vj, vi);
            const __m512i cj = _mm512_maskz_compress_epi32(in, vj);
            const __m512i cd = _mm512_castps_si512(_mm512_sqrt_ps(_mm512_maskz_compress_ps(in, d2)));
            const __m512i lo =
                _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(cj)), 32),
                                _mm512_cvtepu32_epi64(_mm512_castsi512_si256(cd)));
            const __m512i hi =
                _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(cj, 1)), 32),
                                _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(cd, 1)));
            _mm512_storeu_si512((void *)(keys + m), lo);
            _mm512_storeu_si512((void *)(keys + m + 8), hi);
            m += __builtin_popcount((unsigned)in);
        }
    }
    return m;
}
#endif

#ifdef MDNL_HITS_X86
/* The same with AVX2 (eight lanes; the hits compacted bit by bit). */
__attribute__((target("avx2,bmi"))) static int64_t runs_keys_avx2(const mdnl_geom *g, const mdnl_cells_cpu *c,
                                                                  const mdnl_cells_runs *r, int64_t k, int half,
                                                                  uint64_t *keys)
{
    const __m256 vxi = _mm256_set1_ps(c->x[k]), vyi = _mm256_set1_ps(c->y[k]), vzi = _mm256_set1_ps(c->z[k]);
    const __m256 cut2 = _mm256_set1_ps(g->cutoff2);
    const int32_t i = c->atoms[k];
    const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i vk = _mm256_set1_epi32((int32_t)k);
    float dv[8];
    int32_t jv[8];
    int64_t m = 0;
    for (int64_t t = 0; t < r->n; ++t) {
        const __m256 sx = _mm256_set1_ps(r->v[t][0]), sy = _mm256_set1_ps(r->v[t][1]), sz = _mm256_set1_ps(r->v[t][2]);
        const int zero = r->s[t][0] == 0 && r->s[t][1] == 0 && r->s[t][2] == 0;
        /* mdnl_half_keep: j > i, or j >= i at a positive shift (j > i - 1; j, i >= 0) */
        const __m256i lo = _mm256_set1_epi32(mdnl_shift_positive(r->s[t][0], r->s[t][1], r->s[t][2]) ? i - 1 : i);
        const int64_t e = r->e[t];
        int64_t q = r->b[t];
        for (; q + 8 <= e; q += 8) {
            __m256 dx = _mm256_add_ps(_mm256_sub_ps(_mm256_loadu_ps(c->x + q), vxi), sx);
            __m256 dy = _mm256_add_ps(_mm256_sub_ps(_mm256_loadu_ps(c->y + q), vyi), sy);
            __m256 dz = _mm256_add_ps(_mm256_sub_ps(_mm256_loadu_ps(c->z + q), vzi), sz);
            __m256 d2 =
                _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(dx, dx), _mm256_mul_ps(dy, dy)), _mm256_mul_ps(dz, dz));
            unsigned bits = (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(d2, cut2, _CMP_LT_OQ));
            if (!bits)
                continue;
            const __m256i vj = _mm256_loadu_si256((const __m256i *)(c->atoms + q));
            if (zero)
                bits &= ~(unsigned)_mm256_movemask_ps(
                    _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_add_epi32(iota, _mm256_set1_epi32((int32_t)q)), vk)));
            if (half)
                bits &= (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(vj, lo)));
            _mm256_storeu_ps(dv, _mm256_sqrt_ps(d2));
            _mm256_storeu_si256((__m256i *)jv, vj);
            while (bits) {
                const int l = __builtin_ctz(bits);
                bits &= bits - 1;
                keys[m++] = mdnl_row_key(jv[l], dv[l]);
            }
        }
        const int ge = mdnl_shift_positive(r->s[t][0], r->s[t][1], r->s[t][2]);
        for (; q < e; ++q) {
            const float d2 = mdnl_pair_d2(c->x[k], c->y[k], c->z[k], c->x[q], c->y[q], c->z[q], r->v[t]);
            const int32_t j = c->atoms[q];
            if (d2 < g->cutoff2 && !(zero && q == k) && (!half || j > i || (j == i && ge)))
                keys[m++] = mdnl_row_key(j, sqrtf(d2));
        }
    }
    return m;
}

#endif

#ifdef MDNL_HITS_X86
/* Two home atoms (k, k + 1) against each candidate chunk: the chunk's loads,
 * the loop and its branches are shared; each atom's keys as in
 * runs_keys_avx512. */
__attribute__((target("avx512f"))) static int64_t runs_keys2_avx512(const mdnl_geom *g, const mdnl_cells_cpu *c,
                                                                    const mdnl_cells_runs *r, int64_t k, int half,
                                                                    uint64_t *ka, uint64_t *kb, int64_t *mb_out)
{
    const __m512 axi = _mm512_set1_ps(c->x[k]), ayi = _mm512_set1_ps(c->y[k]), azi = _mm512_set1_ps(c->z[k]);
    const __m512 bxi = _mm512_set1_ps(c->x[k + 1]), byi = _mm512_set1_ps(c->y[k + 1]),
                 bzi = _mm512_set1_ps(c->z[k + 1]);
    const __m512 cut2 = _mm512_set1_ps(g->cutoff2);
    const __m512i vka = _mm512_set1_epi32((int32_t)k), vkb = _mm512_set1_epi32((int32_t)(k + 1));
    const __m512i via = _mm512_set1_epi32(c->atoms[k]), vib = _mm512_set1_epi32(c->atoms[k + 1]);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    int64_t ma = 0, mb = 0;
    for (int64_t t = 0; t < r->n; ++t) {
        const __m512 sx = _mm512_set1_ps(r->v[t][0]), sy = _mm512_set1_ps(r->v[t][1]), sz = _mm512_set1_ps(r->v[t][2]);
        const int zero = r->s[t][0] == 0 && r->s[t][1] == 0 && r->s[t][2] == 0;
        const int ge = mdnl_shift_positive(r->s[t][0], r->s[t][1], r->s[t][2]);
        const int64_t e = r->e[t];
        for (int64_t q = r->b[t]; q < e; q += 16) {
            const __mmask16 lm = e - q >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (e - q)) - 1u);
            const __m512 x = _mm512_maskz_loadu_ps(lm, c->x + q), y = _mm512_maskz_loadu_ps(lm, c->y + q),
                         z = _mm512_maskz_loadu_ps(lm, c->z + q);
            __m512 dx = _mm512_add_ps(_mm512_sub_ps(x, axi), sx);
            __m512 dy = _mm512_add_ps(_mm512_sub_ps(y, ayi), sy);
            __m512 dz = _mm512_add_ps(_mm512_sub_ps(z, azi), sz);
            const __m512 da =
                _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(dx, dx), _mm512_mul_ps(dy, dy)), _mm512_mul_ps(dz, dz));
            dx = _mm512_add_ps(_mm512_sub_ps(x, bxi), sx);
            dy = _mm512_add_ps(_mm512_sub_ps(y, byi), sy);
            dz = _mm512_add_ps(_mm512_sub_ps(z, bzi), sz);
            const __m512 db =
                _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(dx, dx), _mm512_mul_ps(dy, dy)), _mm512_mul_ps(dz, dz));
            __mmask16 ina = _mm512_mask_cmp_ps_mask(lm, da, cut2, _CMP_LT_OQ);
            __mmask16 inb = _mm512_mask_cmp_ps_mask(lm, db, cut2, _CMP_LT_OQ);
            if (!(ina | inb))
                continue;
            if (zero) {
                const __m512i vq = _mm512_add_epi32(iota, _mm512_set1_epi32((int32_t)q));
                ina = _mm512_mask_cmpneq_epi32_mask(ina, vq, vka);
                inb = _mm512_mask_cmpneq_epi32_mask(inb, vq, vkb);
            }
            const __m512i vj = _mm512_maskz_loadu_epi32(lm, c->atoms + q);
            if (half) {
                ina = ge ? _mm512_mask_cmpge_epi32_mask(ina, vj, via) : _mm512_mask_cmpgt_epi32_mask(ina, vj, via);
                inb = ge ? _mm512_mask_cmpge_epi32_mask(inb, vj, vib) : _mm512_mask_cmpgt_epi32_mask(inb, vj, vib);
            }
            for (int side = 0; side < 2; ++side) {
                const __mmask16 in = side ? inb : ina;
                uint64_t *keys = side ? kb + mb : ka + ma;
                const __m512i cj = _mm512_maskz_compress_epi32(in, vj);
                const __m512i cd = _mm512_castps_si512(_mm512_sqrt_ps(_mm512_maskz_compress_ps(in, side ? db : da)));
                const __m512i lo =
                    _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_castsi512_si256(cj)), 32),
                                    _mm512_cvtepu32_epi64(_mm512_castsi512_si256(cd)));
                const __m512i hi =
                    _mm512_or_si512(_mm512_slli_epi64(_mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(cj, 1)), 32),
                                    _mm512_cvtepu32_epi64(_mm512_extracti64x4_epi64(cd, 1)));
                _mm512_storeu_si512((void *)keys, lo);
                _mm512_storeu_si512((void *)(keys + 8), hi);
            }
            ma += __builtin_popcount((unsigned)ina);
            mb += __builtin_popcount((unsigned)inb);
        }
    }
    *mb_out = mb;
    return ma;
}
#endif

bool mdnl_cells_runs_simd(void)
{
#ifdef MDNL_HITS_X86
    return __builtin_cpu_supports("avx2");
#else
    return false;
#endif
}

int64_t mdnl_cells_runs_keys2(const mdnl_geom *g, const mdnl_cells_cpu *c, const mdnl_cells_runs *r, int64_t k,
                              int half, uint64_t *keys_a, uint64_t *keys_b, int64_t *mb)
{
#ifdef MDNL_HITS_X86
    if (__builtin_cpu_supports("avx512f"))
        return runs_keys2_avx512(g, c, r, k, half, keys_a, keys_b, mb);
#endif
    *mb = mdnl_cells_runs_keys(g, c, r, k + 1, half, keys_b);
    return mdnl_cells_runs_keys(g, c, r, k, half, keys_a);
}

int64_t mdnl_cells_runs_keys(const mdnl_geom *g, const mdnl_cells_cpu *c, const mdnl_cells_runs *r, int64_t k,
                             int half, uint64_t *keys)
{
#ifdef MDNL_HITS_X86
    if (__builtin_cpu_supports("avx512f"))
        return runs_keys_avx512(g, c, r, k, half, keys);
    if (__builtin_cpu_supports("avx2"))
        return runs_keys_avx2(g, c, r, k, half, keys);
#else
    (void)g, (void)c, (void)r, (void)k, (void)half, (void)keys;
#endif
    return -1; /* no SIMD form: see mdnl_cells_runs_simd */
}

/* nlist_cpu.c — the CPU twin of the neighbor-list kernels (contract in
 * nlist.h). It is the oracle the CUDA kernels are tested against, so it is
 * the plainest correct code: two passes over the pairs (count rows, then fill
 * them), each row sorted by (j, distance). OpenMP parallel over atoms.
 *
 *   brute: every atom i visits every j and every image shift S in the box
 *          [-image_max, image_max] (geometry.h): O(N^2 * images).
 *   cell:  one pass in cell order (cells_cpu.h): the home cell's atoms, two
 *          at a time, test the cell's stencil runs (ranges of the cell-order
 *          positions, read in place; the row keys built and half-filtered
 *          sixteen at a time with AVX-512, eight with AVX2; without those,
 *          each atom runs one vectorisable distance loop over its cell's
 *          gathered neighbourhood, which beats short loops over runs in
 *          portable C); each row is
 *          sorted (an AVX-512 bitonic network up to 64 keys) and appended
 *          to its thread's buffer (faulted in 1 MB at a time as it fills:
 *          the threads' page faults then rarely meet), and the rows are then
 *          copied to their place in atom order (prefetched: the order is
 *          random), each thread taking atoms that hold an equal share of the
 *          entries (an equal share of atoms left one thread waiting on the
 *          other). A count pass writing rows in place was slower
 *          (docs/performance.md).
 *          The result does not depend on the atom order or the number of
 *          threads.
 */
#define _DEFAULT_SOURCE /* madvise */
#include "cells_cpu.h"
#include "nlist.h"

#include <omp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

/* Called once per pair (i, j, S) of atom i's FULL list with d2 < g->cutoff2. */
typedef void (*mdnl_pair_fn)(void *ctx, int64_t i, int32_t j, float d2, int s0, int s1, int s2);

typedef struct row_ctx {
    mdnl_list_kind kind;
    int64_t count;   /* pass 1: pairs seen */
    int32_t *j;      /* pass 2: where the row's entries go */
    float *d;
} row_ctx;

static void count_pair(void *vctx, int64_t i, int32_t j, float d2, int s0, int s1, int s2)
{
    row_ctx *r = vctx;
    (void)d2;
    if (r->kind == MDNL_LIST_FULL || mdnl_half_keep(i, j, s0, s1, s2))
        r->count++;
}

static void fill_pair(void *vctx, int64_t i, int32_t j, float d2, int s0, int s1, int s2)
{
    row_ctx *r = vctx;
    if (r->kind == MDNL_LIST_FULL || mdnl_half_keep(i, j, s0, s1, s2)) {
        r->j[r->count] = j;
        r->d[r->count] = sqrtf(d2);
        r->count++;
    }
}

/* Brute force over all j and all image shifts, reporting pairs like the cell
 * visitor does. */
static void brute_visit(const mdnl_geom *g, const float (*pos4)[4], int64_t i, mdnl_pair_fn fn, void *ctx)
{
    const int m0 = g->pbc[0] ? g->image_max[0] : 0;
    const int m1 = g->pbc[1] ? g->image_max[1] : 0;
    const int m2 = g->pbc[2] ? g->image_max[2] : 0;
    const float xi = pos4[i][0], yi = pos4[i][1], zi = pos4[i][2];
    for (int64_t j = 0; j < g->natoms; ++j)
        for (int s0 = -m0; s0 <= m0; ++s0)
            for (int s1 = -m1; s1 <= m1; ++s1)
                for (int s2 = -m2; s2 <= m2; ++s2) {
                    if (j == i && s0 == 0 && s1 == 0 && s2 == 0)
                        continue;
                    float v[3];
                    mdnl_shift_vector(g, s0, s1, s2, v);
                    float d2 = mdnl_pair_d2(xi, yi, zi, pos4[j][0], pos4[j][1], pos4[j][2], v);
                    if (d2 < g->cutoff2)
                        fn(ctx, i, (int32_t)j, d2, s0, s1, s2);
                }
}

/* Sorts keys ascending: quicksort (median of three) down to runs of 64 or
 * fewer, which rank_sort places. Comparisons are inline: rows are short. */
static void quick_keys(uint64_t *a, int64_t n, uint64_t *tmp);

/* Short runs by rank, without a data-dependent branch (rows of a liquid are
 * ~27 or ~55 keys in random order, where insertion sort mispredicts at every
 * step): each key's place is the number of keys below it, ties broken by
 * position (equal keys are equal bits, so their order does not show). The
 * loops vectorise; the AVX-512 and AVX2 clones are picked at load time. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
#endif
static void rank_sort(uint64_t *a, int64_t n, uint64_t *tmp)
{
    for (int64_t x = 0; x < n; ++x) {
        const uint64_t v = a[x];
        int64_t r = 0;
        for (int64_t b = 0; b < x; ++b)
            r += a[b] <= v;
        for (int64_t b = x + 1; b < n; ++b)
            r += a[b] < v;
        tmp[r] = v;
    }
    if (n > 0) /* an empty row may come with NULL buffers */
        memcpy(a, tmp, (size_t)n * sizeof *a);
}

#if defined(__x86_64__) && defined(__GNUC__)
#define MDNL_NET_X86 1
#include <immintrin.h>

/* Bitonic sorting network over P = 2^LP keys (8, 16, 32 or 64, a constant
 * after inlining) in P / 8 AVX-512 registers: n <= P keys, padded with UINT64_MAX
 * (above every key: j < 2^31). Rows of a liquid (~27 or ~55 keys) take ~200
 * or ~500 vector operations instead of the rank sort's n^2 / 8 comparisons
 * with their reductions. Stage (k, j) compares lane i with lane i ^ j,
 * ascending where (i & k) == 0: across registers for j >= 8, by a lane
 * permutation within one for j < 8. */
__attribute__((target("avx512f"), always_inline)) static inline void net_avx512(uint64_t *a, int64_t n, const int LP)
{
    const int P = 1 << LP;
    __m512i v[8];
    const __m512i pad = _mm512_set1_epi64(-1);
    const int nv = P / 8;
#pragma GCC unroll 8
    for (int r = 0; r < nv; ++r) {
        const int64_t left = n - 8 * r;
        const __mmask8 lm = left >= 8 ? (__mmask8)0xff : left <= 0 ? (__mmask8)0 : (__mmask8)((1u << left) - 1u);
        v[r] = _mm512_mask_loadu_epi64(pad, lm, a + 8 * r);
    }
#pragma GCC unroll 8
    for (int lk = 1; lk <= LP; ++lk) {
#pragma GCC unroll 8
        for (int lj = lk - 1; lj >= 0; --lj) {
            const int k = 1 << lk, j = 1 << lj;
            if (j >= 8) {
                const int jv = j / 8;
#pragma GCC unroll 8
                for (int r = 0; r < nv; ++r) {
                    const int rr = r | jv; /* r + jv: r has that bit clear */
                    if ((r & jv) || rr >= nv)
                        continue;
                    const __m512i lo = _mm512_min_epu64(v[r], v[rr]), hi = _mm512_max_epu64(v[r], v[rr]);
                    const int asc = ((8 * r) & k) == 0;
                    v[r] = asc ? lo : hi;
                    v[rr] = asc ? hi : lo;
                }
            } else {
                const __m512i idx = _mm512_setr_epi64(0 ^ j, 1 ^ j, 2 ^ j, 3 ^ j, 4 ^ j, 5 ^ j, 6 ^ j, 7 ^ j);
#pragma GCC unroll 8
                for (int r = 0; r < nv; ++r) {
                    unsigned takemin = 0;
#pragma GCC unroll 8
                    for (int l = 0; l < 8; ++l)
                        takemin |= (unsigned)(((l & j) == 0) == (((8 * r + l) & k) == 0)) << l;
                    const __m512i p = _mm512_permutexvar_epi64(idx, v[r]);
                    v[r] = _mm512_mask_blend_epi64((__mmask8)takemin, _mm512_max_epu64(v[r], p),
                                                   _mm512_min_epu64(v[r], p));
                }
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < nv; ++r) {
        const int64_t left = n - 8 * r;
        if (left <= 0)
            break;
        const __mmask8 lm = left >= 8 ? (__mmask8)0xff : (__mmask8)((1u << left) - 1u);
        _mm512_mask_storeu_epi64(a + 8 * r, lm, v[r]);
    }
}

/* Sorts n <= 64 keys ascending with the smallest network that holds them. */
__attribute__((target("avx512f"))) static void net_sort_avx512(uint64_t *a, int64_t n)
{
    if (n <= 8)
        net_avx512(a, n, 3);
    else if (n <= 16)
        net_avx512(a, n, 4);
    else if (n <= 32)
        net_avx512(a, n, 5);
    else
        net_avx512(a, n, 6);
}
#endif

/* Sorts n <= 64 keys ascending (tmp: scratch of 64 keys): the AVX-512
 * network where the machine has it, else the rank sort. */
static void short_keys(uint64_t *a, int64_t n, uint64_t *tmp)
{
    if (n < 2)
        return;
#ifdef MDNL_NET_X86
    if (__builtin_cpu_supports("avx512f")) {
        net_sort_avx512(a, n);
        return;
    }
#endif
    rank_sort(a, n, tmp);
}

static void quick_keys(uint64_t *a, int64_t n, uint64_t *tmp)
{
    while (n > 64) {
        uint64_t x = a[0], y = a[n / 2], z = a[n - 1];
        uint64_t piv = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        int64_t lo = 0, hi = n - 1;
        for (;;) {
            while (a[lo] < piv)
                ++lo;
            while (a[hi] > piv)
                --hi;
            if (lo >= hi)
                break;
            uint64_t t = a[lo];
            a[lo++] = a[hi];
            a[hi--] = t;
        }
        /* [0, hi] <= piv <= [hi + 1, n): recurse into the smaller part */
        int64_t left = hi + 1;
        if (left < n - left) {
            quick_keys(a, left, tmp);
            a += left;
            n -= left;
        } else {
            quick_keys(a + left, n - left, tmp);
            n = left;
        }
    }
    short_keys(a, n, tmp);
}

/* Sorts keys ascending; tmp: scratch of 64 keys. */
static void sort_keys(uint64_t *a, int64_t n, uint64_t *tmp)
{
    quick_keys(a, n, tmp);
}

/* Sorts one row by mdnl_row_key; `keys` is scratch of at least n entries. */
static void sort_row(int32_t *j, float *d, int64_t n, uint64_t *keys)
{
    for (int64_t k = 0; k < n; ++k)
        keys[k] = mdnl_row_key(j[k], d[k]);
    uint64_t tmp[64];
    sort_keys(keys, n, tmp);
    for (int64_t k = 0; k < n; ++k) {
        union {
            uint32_t u;
            float f;
        } bits = {.u = (uint32_t)(keys[k] & 0xffffffffu)};
        j[k] = (int32_t)(keys[k] >> 32);
        d[k] = bits.f;
    }
}

/* Drops the whole pages of [p, p + bytes) before the buffer is freed. */
static void release(void *p, size_t bytes)
{
#if defined(__linux__)
    /* munmap (free) holds the address-space lock for writing, so two threads
     * freeing at once take turns; MADV_DONTNEED drops the pages under the
     * read lock, in parallel, and leaves munmap little to do */
    const uintptr_t page = 4096;
    const uintptr_t b = ((uintptr_t)p + page - 1) & ~(page - 1), e = ((uintptr_t)p + bytes) & ~(page - 1);
    if (p && e > b)
        (void)madvise((void *)b, (size_t)(e - b), MADV_DONTNEED);
#else
    (void)p, (void)bytes;
#endif
}

/* Faults in every page that [p, p + bytes) touches with one madvise call
 * instead of one page fault per page at first touch (Linux 5.14+; elsewhere,
 * or when it fails, the pages fault in as they are written). A page shared
 * with a neighbouring range may be asked for twice: the second call finds it
 * present. */
static void prefault(void *p, size_t bytes)
{
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
    const uintptr_t page = 4096;
    const uintptr_t b = (uintptr_t)p & ~(page - 1), e = ((uintptr_t)p + bytes + page - 1) & ~(page - 1);
    if (bytes > 0)
        (void)madvise((void *)b, (size_t)(e - b), MADV_POPULATE_WRITE);
#else
    (void)p, (void)bytes;
#endif
}

/* The first atom of part t of nt of the CSR, the parts splitting its
 * off[n] entries evenly (off: the row offsets, off[0] = 0): the smallest i
 * with off[i] >= off[n] * t / nt (n for t = nt). */
static int64_t entry_split(const int64_t *off, int64_t n, int t, int nt)
{
    if (t >= nt)
        return n;
    const int64_t want = (int64_t)((double)off[n] * t / nt);
    int64_t lo = 0, hi = n;
    while (lo < hi) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (off[mid] < want)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

#define BUF_STRETCH 131072 /* row-buffer entries faulted in at a time: 1 MB */

/* The row of the atom at cell-order index k from its home cell's gathered
 * neighbourhood (the path where the runs have no SIMD form: one vectorisable
 * distance loop over the whole neighbourhood beats short loops over runs).
 * Returns the number of keys written to row[]. */
static int64_t hood_keys(const mdnl_geom *g, const mdnl_cells_cpu *c, mdnl_cells_hood *h, int64_t k, int full,
                         uint64_t *row)
{
    const int32_t i = c->atoms[k];
    const int64_t m = mdnl_cells_hood_hits(g, h, k, c->x[k], c->y[k], c->z[k]);
    int64_t r = 0;
    for (int64_t a = 0; a < m; ++a) {
        const int32_t q = h->hit[a];
        const int32_t j = h->j[q];
        row[r] = mdnl_row_key(j, sqrtf(h->d2[q]));
        /* mdnl_half_keep without a branch (the atom itself is not a hit) */
        r += full | (j > i) | ((j == i) & h->pos[q]);
    }
    return r;
}

void mdnl_nlist_cpu_kept_free(mdnl_nlist_cpu_kept *kept)
{
    if (!kept)
        return;
    if (kept->bufs) { /* each buffer's pages are released by its own thread, at the same time */
#pragma omp parallel for schedule(static, 1) num_threads(kept->nthreads)
        for (int t = 0; t < kept->nthreads; ++t) {
            release(kept->bufs[t], (size_t)kept->caps[t] * sizeof *kept->bufs[t]);
            free(kept->bufs[t]);
        }
    }
    free(kept->bufs);
    free(kept->caps);
    free(kept->src);
    free(kept->thr);
    memset(kept, 0, sizeof *kept);
}

/* Sizes `kept` for n atoms and the current thread count. */
static mdnl_status kept_reserve(mdnl_nlist_cpu_kept *kept, int64_t n, int nthreads)
{
    if (kept->nthreads != nthreads) {
        mdnl_nlist_cpu_kept_free(kept);
        kept->bufs = mdnl_calloc((size_t)nthreads, sizeof *kept->bufs, "neighbor row buffers");
        kept->caps = mdnl_calloc((size_t)nthreads, sizeof *kept->caps, "neighbor row buffers");
        if (!kept->bufs || !kept->caps)
            return MDNL_ERR_RESOURCE;
        kept->nthreads = nthreads;
    }
    if (kept->cap_atoms < n || !kept->src) {
        const size_t m = (size_t)(n > 0 ? n : 1);
        free(kept->src);
        free(kept->thr);
        kept->src = mdnl_malloc(m * sizeof *kept->src, "neighbor row sources");
        kept->thr = mdnl_malloc(m * sizeof *kept->thr, "neighbor row threads");
        kept->cap_atoms = kept->src && kept->thr ? (int64_t)m : 0;
        if (!kept->src || !kept->thr)
            return MDNL_ERR_RESOURCE;
    }
    return MDNL_OK;
}

/* The cell method (see the top of the file), with the row buffers of `kept`. */
static mdnl_status build_cells(mdnl_nlist_cpu_kept *kept, const mdnl_geom *g, const float (*pos4)[4],
                               mdnl_list_kind kind, mdnl_nlist *out)
{
    const int64_t n = g->natoms;
    mdnl_cells_cpu cells = {0};
    mdnl_status st = mdnl_cells_cpu_build(g, pos4, &cells);
    if (st != MDNL_OK)
        return st;
    const int nthreads = omp_get_max_threads();
    int failed = kept_reserve(kept, n, nthreads) != MDNL_OK;
    uint64_t **bufs = kept->bufs;
    int64_t *caps = kept->caps, *src = kept->src;
    int32_t *thr = kept->thr;
    int64_t *off = out->offsets;
    off[0] = 0;
    const int full = kind == MDNL_LIST_FULL;
    const int simd = mdnl_cells_runs_simd();
    /* First guess of a thread's row buffer: its share of the pairs of a
     * uniform density (grown as needed). */
    int64_t guess = 0;
    if (g->volume > 0.0) {
        double per_atom = 4.18879 * (double)g->cutoff * g->cutoff * g->cutoff * (double)n / g->volume;
        double est = 1.1 * per_atom * (double)n / (full ? 1.0 : 2.0) / nthreads;
        guess = est < 1e10 ? (int64_t)est : 0;
    }
    if (!failed) {
#pragma omp parallel num_threads(nthreads)
        {
            const int t = omp_get_thread_num();
            mdnl_cells_runs h = {0};
            mdnl_cells_hood hood = {0};
            uint64_t *buf = bufs[t], tmp[64], *keys_b = NULL; /* buf: kept from the frame before, or none */
            int64_t len = 0, cap = caps[t], cap_b = 0;
            int64_t pop = cap; /* entries faulted in (a kept buffer: all of it) */
#pragma omp for schedule(dynamic, 16)
            for (int64_t cell = 0; cell < cells.ncells; ++cell) {
                const int64_t kb = cells.start[cell], ke = cells.start[cell + 1];
                int bad;
#pragma omp atomic read
                bad = failed;
                if (kb == ke || bad)
                    continue;
                if (simd ? mdnl_cells_runs_build(g, &cells, cell, &h) != MDNL_OK
                         : mdnl_cells_hood_gather(g, &cells, cell, &hood) != MDNL_OK) {
#pragma omp atomic write
                    failed = 1;
                    continue;
                }
                const int64_t ncand = simd ? h.ncand : hood.n;
                for (int64_t k = kb; k < ke; k += 2) {
                    const int pair = simd && k + 1 < ke; /* two atoms share the candidate loop */
                    if (k + 3 < cells.natoms) { /* their records are written at random atom indices: fetch ahead */
                        const int32_t ia = cells.atoms[k + 2], ib = cells.atoms[k + 3];
                        __builtin_prefetch(&src[ia], 1);
                        __builtin_prefetch(&thr[ia], 1);
                        __builtin_prefetch(&off[ia + 1], 1);
                        __builtin_prefetch(&src[ib], 1);
                        __builtin_prefetch(&thr[ib], 1);
                        __builtin_prefetch(&off[ib + 1], 1);
                    }
                    const int64_t m = 2 * (ncand + 16); /* at most: every candidate twice, and spare slots */
                    if (len + m > cap) {
                        int64_t nc = cap + cap / 2 + m + 4096;
                        if (cap == 0 && guess > nc)
                            nc = guess;
                        uint64_t *nb = mdnl_realloc(buf, (size_t)nc * sizeof *nb, "neighbor row buffer");
                        if (!nb) {
#pragma omp atomic write
                            failed = 1;
                            break;
                        }
                        buf = nb;
                        cap = nc;
                    }
                    if (len + m > pop && pop < cap) { /* fault in the next stretch as the rows reach it, so that the
                                                         threads' page faults spread over the walk */
                        const int64_t stretch = pop + BUF_STRETCH < cap ? BUF_STRETCH : cap - pop;
                        prefault(buf + pop, (size_t)stretch * sizeof *buf);
                        pop += stretch;
                    }
                    if (ncand + 16 > cap_b) {
                        int64_t nc = ncand + ncand / 2 + 64;
                        uint64_t *nb = mdnl_realloc(keys_b, (size_t)nc * sizeof *nb, "neighbor row keys");
                        if (!nb) {
#pragma omp atomic write
                            failed = 1;
                            break;
                        }
                        keys_b = nb;
                        cap_b = nc;
                    }
                    uint64_t *row = buf + len;
                    int64_t rb = 0;
                    const int64_t r = !simd  ? hood_keys(g, &cells, &hood, k, full, row)
                                      : pair ? mdnl_cells_runs_keys2(g, &cells, &h, k, !full, row, keys_b, &rb)
                                             : mdnl_cells_runs_keys(g, &cells, &h, k, !full, row);
                    for (int side = 0; side < 1 + pair; ++side) {
                        const int32_t i = cells.atoms[k + side];
                        const int64_t rl = side ? rb : r;
                        if (side)
                            memcpy(buf + len, keys_b, (size_t)rb * sizeof *keys_b);
                        sort_keys(buf + len, rl, tmp);
                        src[i] = len;
                        thr[i] = t;
                        off[i + 1] = rl;
                        len += rl;
                    }
                    k -= !pair; /* one atom done: the next pass starts at k + 1 */
                }
            }
            bufs[t] = buf;
            caps[t] = cap;
            free(keys_b);
            mdnl_cells_runs_free(&h);
            mdnl_cells_hood_free(&hood);
        }
    }
    if (!failed) {
        for (int64_t i = 0; i < n; ++i)
            off[i + 1] += off[i];
        out->natoms = n;
        out->npairs = off[n];
        if ((st = mdnl_nlist_reserve(out, n, off[n])) == MDNL_OK) {
#pragma omp parallel num_threads(nthreads)
            { /* Each thread faults in, then fills, the CSR of a contiguous range of atoms holding an equal share
               * of the entries (a half list's rows are long for small i and short for large i: split by atoms,
               * the first of two threads had three quarters of the work). */
                const int nt = omp_get_num_threads(), t = omp_get_thread_num();
                const int64_t ib = entry_split(off, n, t, nt), ie = entry_split(off, n, t + 1, nt);
                prefault(out->j + off[ib], (size_t)(off[ie] - off[ib]) * sizeof *out->j);
                prefault(out->d + off[ib], (size_t)(off[ie] - off[ib]) * sizeof *out->d);
                for (int64_t i = ib; i < ie; ++i) {
                    if (i + 8 < n) { /* rows are read in random order (cell order vs atom order): fetch ahead */
                        const char *ahead = (const char *)(bufs[thr[i + 8]] + src[i + 8]);
                        const int64_t bytes = (off[i + 9] - off[i + 8]) * (int64_t)sizeof(uint64_t);
                        for (int64_t b = 0; b < bytes; b += 64)
                            __builtin_prefetch(ahead + b);
                    }
                    const uint64_t *row = bufs[thr[i]] + src[i];
                    int32_t *oj = out->j + off[i];
                    float *od = out->d + off[i];
                    for (int64_t a = 0, len = off[i + 1] - off[i]; a < len; ++a) {
                        const uint32_t u = (uint32_t)(row[a] & 0xffffffffu);
                        float dv;
                        memcpy(&dv, &u, sizeof dv);
                        oj[a] = (int32_t)(row[a] >> 32);
                        od[a] = dv;
                    }
                }
            }
        }
    } else {
        st = mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for the neighbor list of %lld atoms", (long long)n);
    }
    mdnl_cells_cpu_free(&cells);
    return st;
}

mdnl_status mdnl_nlist_build_cpu(const mdnl_geom *g, const float (*pos4)[4], mdnl_method method, mdnl_list_kind kind,
                                 mdnl_nlist *out)
{
    mdnl_nlist_cpu_kept kept = {0};
    const mdnl_status st = mdnl_nlist_build_cpu_kept(&kept, g, pos4, method, kind, out);
    mdnl_nlist_cpu_kept_free(&kept);
    return st;
}

mdnl_status mdnl_nlist_build_cpu_kept(mdnl_nlist_cpu_kept *kept, const mdnl_geom *g, const float (*pos4)[4],
                                      mdnl_method method, mdnl_list_kind kind, mdnl_nlist *out)
{
    const int64_t n = g->natoms;
    if (n > INT32_MAX)
        return mdnl_error(MDNL_ERR_INPUT, "%lld atoms in one frame: at most %d are supported", (long long)n, INT32_MAX);
    mdnl_status st = mdnl_nlist_reserve(out, n, 0);
    if (st != MDNL_OK)
        return st;
    if (method == MDNL_METHOD_AUTO || method == MDNL_METHOD_CELL)
        return build_cells(kept, g, pos4, kind, out);

    /* Pass 1: row lengths. */
    int64_t *off = out->offsets;
    off[0] = 0;
#pragma omp parallel for schedule(dynamic, 256)
    for (int64_t i = 0; i < n; ++i) {
        row_ctx r = {.kind = kind};
        brute_visit(g, pos4, i, count_pair, &r);
        off[i + 1] = r.count;
    }
    int64_t longest = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (off[i + 1] > longest)
            longest = off[i + 1];
        off[i + 1] += off[i];
    }
    out->natoms = n;
    out->npairs = off[n];
    if ((st = mdnl_nlist_reserve(out, n, off[n])) != MDNL_OK)
        return st;

    /* Pass 2: fill and sort each row. */
    int failed = 0;
#pragma omp parallel
    {
        uint64_t *keys = malloc((size_t)(longest > 0 ? longest : 1) * sizeof *keys);
        if (!keys) {
#pragma omp atomic write
            failed = 1;
        }
#pragma omp for schedule(dynamic, 256)
        for (int64_t i = 0; i < n; ++i) {
            if (!keys)
                continue;
            row_ctx r = {.kind = kind, .j = out->j + off[i], .d = out->d + off[i]};
            brute_visit(g, pos4, i, fill_pair, &r);
            sort_row(r.j, r.d, r.count, keys);
        }
        free(keys);
    }
    if (failed)
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for neighbor-list sort scratch (%lld entries)",
                          (long long)longest);
    return MDNL_OK;
}

/* chunk_pool.c — the ordered worker pool of the writers and the H5MD
 * reader, and the shuffle + deflate of one HDF5 chunk (see chunk_pool.h).
 *
 * Slots: piece k is made in slot k % window. A worker claims the next piece
 * only when its slot is free (the piece `window` earlier has been taken), so
 * at most `window` buffers exist, and only a piece the caller has posted
 * (mdnl_pool_post); the calling thread waits for piece `taken`, takes it,
 * frees its slot. One mutex and one condition variable:
 * pieces are large (a 256 KiB chunk, 64k TSV rows), so contention is a few
 * hundred lock round trips per frame. */
#define _GNU_SOURCE
#include "chunk_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <isa-l/igzip_lib.h>
#include <libdeflate.h>
#include <string.h>

enum { MAX_THREADS = 256 };

bool mdnl_pool_buf_reserve(mdnl_pool_buf *b, size_t n)
{
    if (n <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < n)
        cap *= 2;
    unsigned char *p = realloc(b->data, cap);
    if (!p)
        return false;
    b->data = p;
    b->cap = cap;
    return true;
}

int mdnl_cpus_available(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0)
            return n;
    }
    return 1;
}

typedef struct slot_state {
    mdnl_pool_buf buf;
    int64_t job; /* the piece in the slot; -1 when free */
    bool done, ok;
} slot_state;

struct mdnl_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void *ctx;
    mdnl_pool_make_fn make;
    const char *what;
    int64_t posted, next, taken;
    int window, started;
    bool stop, holding; /* holding: the caller has piece `taken` (mdnl_pool_wait) */
    slot_state *slots;
    pthread_t *tid;
};

static void *worker(void *arg)
{
    mdnl_pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && (p->next >= p->posted || p->slots[p->next % p->window].job >= 0))
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop)
            break;
        int64_t k = p->next++;
        slot_state *s = &p->slots[k % p->window];
        s->job = k;
        s->done = false;
        pthread_mutex_unlock(&p->mu);
        bool ok = p->make(p->ctx, k, &s->buf);
        pthread_mutex_lock(&p->mu);
        s->ok = ok;
        s->done = true;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

mdnl_status mdnl_pool_start(int threads, int window, void *ctx, mdnl_pool_make_fn make, const char *what,
                            mdnl_pool **out)
{
    *out = NULL;
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads < 1)
        threads = 1;
    if (threads == 1 || window < 1)
        window = 1;
    mdnl_pool *p = calloc(1, sizeof *p);
    if (p) {
        p->slots = calloc((size_t)window, sizeof *p->slots);
        p->tid = threads > 1 ? calloc((size_t)threads, sizeof *p->tid) : NULL;
    }
    if (!p || !p->slots || (threads > 1 && !p->tid)) {
        if (p) {
            free(p->slots);
            free(p->tid);
        }
        free(p);
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: out of host memory", what);
    }
    p->ctx = ctx;
    p->make = make;
    p->what = what;
    p->window = window;
    for (int s = 0; s < window; ++s)
        p->slots[s].job = -1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    if (threads > 1)
        for (; p->started < threads; ++p->started)
            if (pthread_create(&p->tid[p->started], NULL, worker, p) != 0)
                break;
    *out = p;
    return MDNL_OK;
}

int mdnl_pool_window(const mdnl_pool *p) { return p->window; }

int64_t mdnl_pool_room(const mdnl_pool *p) { return p->taken + p->window; }

void mdnl_pool_post(mdnl_pool *p, int64_t njobs)
{
    pthread_mutex_lock(&p->mu);
    if (njobs > p->posted) {
        p->posted = njobs;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
}

mdnl_status mdnl_pool_wait(mdnl_pool *p, int64_t *k, mdnl_pool_buf **b)
{
    slot_state *s = &p->slots[p->taken % p->window];
    *k = p->taken;
    p->holding = true;
    if (p->started == 0) { /* inline: make it here */
        s->buf.len = 0;
        s->buf.flags = 0;
        s->job = p->taken;
        s->ok = p->make(p->ctx, p->taken, &s->buf);
    } else {
        pthread_mutex_lock(&p->mu);
        while (!(s->job == p->taken && s->done))
            pthread_cond_wait(&p->cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    *b = &s->buf;
    return s->ok ? MDNL_OK : mdnl_error(MDNL_ERR_RESOURCE, "%s: out of host memory", p->what);
}

void mdnl_pool_release(mdnl_pool *p)
{
    if (!p->holding)
        return;
    slot_state *s = &p->slots[p->taken % p->window];
    pthread_mutex_lock(&p->mu);
    s->job = -1;
    s->buf.len = 0;
    s->buf.flags = 0;
    p->taken++;
    p->holding = false;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void mdnl_pool_stop(mdnl_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int t = 0; t < p->started; ++t)
        pthread_join(p->tid[t], NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    for (int s = 0; s < p->window; ++s)
        free(p->slots[s].buf.data);
    free(p->slots);
    free(p->tid);
    free(p);
}

mdnl_status mdnl_pool_map(int threads, int64_t njobs, void *ctx, mdnl_pool_make_fn make, mdnl_pool_take_fn take,
                          const char *what)
{
    if (threads > njobs)
        threads = (int)njobs;
    mdnl_pool *p;
    mdnl_status st = mdnl_pool_start(threads, 2 * threads, ctx, make, what, &p);
    if (st != MDNL_OK)
        return st;
    mdnl_pool_post(p, njobs);
    for (int64_t k = 0; k < njobs && st == MDNL_OK; ++k) {
        mdnl_pool_buf *b;
        int64_t got;
        st = mdnl_pool_wait(p, &got, &b);
        if (st == MDNL_OK)
            st = take(ctx, got, b);
        mdnl_pool_release(p);
    }
    mdnl_pool_stop(p);
    return st;
}

/* HDF5's shuffle filter (H5Zshuffle.c): byte j of element i goes to
 * j * nelem + i; bytes past the last whole element stay where they are.
 * Element by element, with the common sizes' inner loop unrolled by the
 * compiler: each element is read once (byte plane by byte plane read every
 * element elsize times, ~3x slower on 4-byte j). */
static inline void shuffle_elems(unsigned char *restrict dst, const unsigned char *restrict src, size_t nelem,
                                 size_t elsize)
{
    for (size_t i = 0; i < nelem; ++i)
        for (size_t j = 0; j < elsize; ++j)
            dst[j * nelem + i] = src[i * elsize + j];
}

static void shuffle(unsigned char *dst, const unsigned char *src, size_t n, size_t elsize)
{
    size_t nelem = n / elsize;
    if (elsize <= 1 || nelem <= 1) {
        memcpy(dst, src, n);
        return;
    }
    switch (elsize) {
    case 2:
        shuffle_elems(dst, src, nelem, 2);
        break;
    case 4:
        shuffle_elems(dst, src, nelem, 4);
        break;
    case 8:
        shuffle_elems(dst, src, nelem, 8);
        break;
    default:
        shuffle_elems(dst, src, nelem, elsize);
    }
    memcpy(dst + nelem * elsize, src + nelem * elsize, n - nelem * elsize);
}

/* Level 1 (the results file's offsets, j and shift): ISA-L's igzip level
 * 1, ~4x libdeflate's level 1 and ~8x zlib's compress2 on shuffled
 * neighbor indices, the stream within 1 % of zlib's size. Its state and
 * level buffer (~0.4 MiB) are allocated per chunk, as libdeflate's
 * compressor is below: no state is kept between calls or threads. The
 * level buffer is zeroed: the stateless call does not reset its hash table
 * (isal_deflate's reset fills it with total_in, 0 here), and stale entries,
 * though checked against the data, change which matches are found, so the
 * bytes would depend on what the memory held before (on the thread count).
 * Returns the stream's size, 0 when it did not fit in cap (or out of
 * memory: *nomem set). */
static size_t deflate_igzip(const unsigned char *in, size_t n, unsigned char *out, size_t cap, bool *nomem)
{
    struct isal_zstream *z = calloc(1, sizeof *z + ISAL_DEF_LVL1_DEFAULT);
    if (!z) {
        *nomem = true;
        return 0;
    }
    isal_deflate_stateless_init(z);
    z->level = 1;
    z->level_buf = (uint8_t *)(z + 1);
    z->level_buf_size = ISAL_DEF_LVL1_DEFAULT;
    z->gzip_flag = IGZIP_ZLIB;
    z->flush = NO_FLUSH;
    z->end_of_stream = 1;
    z->next_in = (uint8_t *)(uintptr_t)in;
    z->avail_in = (uint32_t)n;
    z->next_out = out;
    z->avail_out = (uint32_t)cap;
    size_t len = isal_deflate_stateless(z) == COMP_OK ? z->total_out : 0;
    free(z);
    return len;
}

/* Other levels (and huge chunks): libdeflate at that level, 2-2.5x zlib's
 * speed. */
static size_t deflate_libdeflate(const unsigned char *in, size_t n, int level, unsigned char *out, size_t cap,
                                 bool *nomem)
{
    struct libdeflate_compressor *z = libdeflate_alloc_compressor(level < 1 ? 1 : level > 12 ? 12 : level);
    if (!z) {
        *nomem = true;
        return 0;
    }
    size_t len = libdeflate_zlib_compress(z, in, n, out, cap);
    libdeflate_free_compressor(z);
    return len;
}

bool mdnl_shuffle_deflate(const void *src, size_t n, size_t elsize, int level, mdnl_pool_buf *b)
{
    /* The shuffled bytes go at the buffer's end, the deflated stream at its
     * start. The room for the stream is zlib's compressBound plus the
     * largest dynamic Huffman header; a stream that does not fit is not
     * kept (below). igzip counts in 32 bits: a chunk of 2 GiB or more (a
     * trajectory frame of ~90M atoms) goes to libdeflate at level 1. */
    const size_t cap = n + (n >> 12) + (n >> 14) + (n >> 25) + 13 + ISAL_DEF_MAX_HDR_SIZE;
    if (cap < n || cap > SIZE_MAX - n || !mdnl_pool_buf_reserve(b, cap + n))
        return false;
    unsigned char *sh = b->data + cap;
    shuffle(sh, src, n, elsize);
    bool nomem = false;
    size_t out = level <= 1 && cap <= UINT32_MAX / 2 ? deflate_igzip(sh, n, b->data, cap, &nomem)
                                                     : deflate_libdeflate(sh, n, level, b->data, cap, &nomem);
    if (nomem)
        return false;
    if (out > 0) {
        b->len = out;
        b->flags = 0;
    } else { /* did not fit: stored as HDF5 stores a chunk its optional deflate filter failed on */
        memmove(b->data, sh, n);
        b->len = n;
        b->flags = 0x2; /* filter 1 (deflate) skipped */
    }
    return true;
}

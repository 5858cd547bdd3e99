/* chunk_pool.c — the writers' ordered parallel map and the shuffle + deflate
 * of one HDF5 chunk (see chunk_pool.h).
 *
 * Slots: piece k is made in slot k % window. A worker claims the next piece
 * only when its slot is free (the piece `window` earlier has been taken), so
 * at most `window` buffers exist; the calling thread waits for piece
 * `taken`, takes it, frees its slot. One mutex and one condition variable:
 * pieces are large (a 256 KiB chunk, 64k TSV rows), so contention is a few
 * hundred lock round trips per frame. */
#define _GNU_SOURCE
#include "chunk_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

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

typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void *ctx;
    mdnl_pool_make_fn make;
    int64_t njobs, next, taken;
    int window;
    bool stop;
    slot_state *slots;
} pool;

static void *worker(void *arg)
{
    pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->next < p->njobs && p->slots[p->next % p->window].job >= 0)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop || p->next >= p->njobs)
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

static mdnl_status inline_map(int64_t njobs, void *ctx, mdnl_pool_make_fn make, mdnl_pool_take_fn take,
                              const char *what)
{
    mdnl_pool_buf b = {0};
    mdnl_status st = MDNL_OK;
    for (int64_t k = 0; k < njobs && st == MDNL_OK; ++k) {
        b.len = 0;
        b.flags = 0;
        if (!make(ctx, k, &b))
            st = mdnl_error(MDNL_ERR_RESOURCE, "%s: out of host memory", what);
        else
            st = take(ctx, k, &b);
    }
    free(b.data);
    return st;
}

mdnl_status mdnl_pool_map(int threads, int64_t njobs, void *ctx, mdnl_pool_make_fn make, mdnl_pool_take_fn take,
                          const char *what)
{
    if (threads > MAX_THREADS)
        threads = MAX_THREADS;
    if (threads > njobs)
        threads = (int)njobs;
    if (threads <= 1)
        return inline_map(njobs, ctx, make, take, what);
    pool p = {.ctx = ctx, .make = make, .njobs = njobs, .window = 2 * threads};
    p.slots = calloc((size_t)p.window, sizeof *p.slots);
    pthread_t *tid = calloc((size_t)threads, sizeof *tid);
    if (!p.slots || !tid) {
        free(p.slots);
        free(tid);
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: out of host memory", what);
    }
    for (int s = 0; s < p.window; ++s)
        p.slots[s].job = -1;
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    int started = 0;
    for (; started < threads; ++started)
        if (pthread_create(&tid[started], NULL, worker, &p) != 0)
            break;
    mdnl_status st = MDNL_OK;
    if (started == 0) {
        st = inline_map(njobs, ctx, make, take, what);
    } else {
        pthread_mutex_lock(&p.mu);
        while (st == MDNL_OK && p.taken < njobs) {
            slot_state *s = &p.slots[p.taken % p.window];
            while (!(s->job == p.taken && s->done))
                pthread_cond_wait(&p.cv, &p.mu);
            pthread_mutex_unlock(&p.mu);
            st = s->ok ? take(ctx, p.taken, &s->buf)
                       : mdnl_error(MDNL_ERR_RESOURCE, "%s: out of host memory", what);
            pthread_mutex_lock(&p.mu);
            s->job = -1;
            s->buf.len = 0;
            s->buf.flags = 0;
            p.taken++;
            pthread_cond_broadcast(&p.cv);
        }
        p.stop = true;
        pthread_cond_broadcast(&p.cv);
        pthread_mutex_unlock(&p.mu);
    }
    for (int t = 0; t < started; ++t)
        pthread_join(tid[t], NULL);
    pthread_cond_destroy(&p.cv);
    pthread_mutex_destroy(&p.mu);
    for (int s = 0; s < p.window; ++s)
        free(p.slots[s].buf.data);
    free(p.slots);
    free(tid);
    return st;
}

/* HDF5's shuffle filter (H5Zshuffle.c): byte j of element i goes to
 * j * nelem + i; bytes past the last whole element stay where they are. */
static void shuffle(unsigned char *dst, const unsigned char *src, size_t n, size_t elsize)
{
    size_t nelem = n / elsize;
    if (elsize <= 1 || nelem <= 1) {
        memcpy(dst, src, n);
        return;
    }
    for (size_t j = 0; j < elsize; ++j) {
        unsigned char *d = dst + j * nelem;
        const unsigned char *s = src + j;
        for (size_t i = 0; i < nelem; ++i)
            d[i] = s[i * elsize];
    }
    memcpy(dst + nelem * elsize, src + nelem * elsize, n - nelem * elsize);
}

bool mdnl_shuffle_deflate(const void *src, size_t n, size_t elsize, int level, mdnl_pool_buf *b)
{
    /* The shuffled bytes go at the buffer's end, the deflated stream at its
     * start; compressBound(n) >= n, so one allocation holds both apart. */
    uLong bound = compressBound((uLong)n);
    if (!mdnl_pool_buf_reserve(b, (size_t)bound + n))
        return false;
    unsigned char *sh = b->data + bound;
    shuffle(sh, src, n, elsize);
    uLongf out = bound;
    /* HDF5's deflate filter: compress2 at the dataset's level. */
    if (compress2(b->data, &out, sh, (uLong)n, level) == Z_OK) {
        b->len = out;
        b->flags = 0;
    } else {
        memmove(b->data, sh, n);
        b->len = n;
        b->flags = 0x2; /* filter 1 (deflate) skipped */
    }
    return true;
}

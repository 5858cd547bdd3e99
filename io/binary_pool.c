/* binary_pool.c — binary frames decoded by the worker pool (see
 * binary_pool.h).
 *
 * Job k (frame k in file order) lives in jobs[k % window], the slot
 * io/chunk_pool.c makes piece k in: the calling thread fills a job's
 * extent (head) only for k < mdnl_pool_room, when the slot is free, then
 * posts it; a worker reads its bytes into the slot's pool buffer and
 * decodes them into the job's frame; the calling thread takes jobs in
 * order. */
#define _POSIX_C_SOURCE 200809L
#include "binary_pool.h"

#include "chunk_pool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define BUDGET ((int64_t)256 << 20) /* bytes of frames in flight, roughly */

typedef struct bin_job {
    mdnl_bin_frame h;
    bool end;            /* the clean end of the file */
    bool decode;         /* a worker decodes it (selected, found) */
    mdnl_status status;  /* of head() */
    mdnl_status dstatus; /* of decode() */
    char msg[1024];      /* the failure's message */
    mdnl_frame f;        /* the decoded frame */
} bin_job;

struct mdnl_bin_pool {
    const mdnl_bin_ops *ops;
    void *ctx;
    const mdnl_bfile *b;
    int fd;
    int threads, window, cap; /* cap: jobs allocated */
    int64_t sel_start, sel_stop, sel_step;
    mdnl_pool *pool;
    bin_job *jobs;
    int64_t prepared; /* jobs found by head() (or the end, or an error), posted */
    bool ahead_done;  /* the end or a head() error was found */
    bool started, held;
    /* Allocates the positions of jobs found from now on: the allocator of
     * the frame of the last next() (the pipeline's changes once its engine
     * is up). */
    const mdnl_frame_allocator *alloc;
};

mdnl_status mdnl_bin_pool_open(const mdnl_bin_ops *ops, void *ctx, const mdnl_bfile *b, int threads,
                               mdnl_bin_pool **out)
{
    *out = NULL;
    mdnl_bin_pool *p = mdnl_calloc(1, sizeof *p, "binary reader pool");
    if (!p)
        return MDNL_ERR_RESOURCE;
    p->ops = ops;
    p->ctx = ctx;
    p->b = b;
    p->fd = fileno(b->fp);
    mdnl_bin_pool_set_threads(p, threads);
    p->sel_stop = -1;
    p->sel_step = 1;
    *out = p;
    return MDNL_OK;
}

void mdnl_bin_pool_set_threads(mdnl_bin_pool *p, int threads)
{
    if (!p->started)
        p->threads = threads < 1 ? 1 : threads > 256 ? 256 : threads;
}

void mdnl_bin_pool_select(mdnl_bin_pool *p, int64_t start, int64_t stop, int64_t step)
{
    p->sel_start = start < 0 ? 0 : start;
    p->sel_stop = stop;
    p->sel_step = step < 1 ? 1 : step;
}

static bool selected(const mdnl_bin_pool *p, int64_t k)
{
    return k >= p->sel_start && (p->sel_stop < 0 || k < p->sel_stop) && (k - p->sel_start) % p->sel_step == 0;
}

/* Keeps the message of the error just recorded on this thread. */
static void keep(char msg[1024]) { snprintf(msg, 1024, "%s", mdnl_last_error()); }

/* The next frame's extent into j, on the calling thread. */
static void find(mdnl_bin_pool *p, bin_job *j)
{
    if (j->f.pos_alloc != p->alloc) { /* the slot is free: no worker holds it */
        mdnl_frame_free(&j->f);
        j->f.pos_alloc = p->alloc;
    }
    j->end = false;
    j->dstatus = MDNL_OK;
    j->status = p->ops->head(p->ctx, &j->h);
    if (j->status == MDNL_END) {
        j->end = true;
        j->status = MDNL_OK;
    } else if (j->status != MDNL_OK) {
        keep(j->msg);
    }
    p->ahead_done = j->end || j->status != MDNL_OK;
    j->decode = !p->ahead_done && selected(p, j->h.index);
}

/* Reads and decodes j's frame into f: on a worker, or on the calling thread
 * straight into the caller's frame (one thread, or a frame not selected). */
static mdnl_status decode(mdnl_bin_pool *p, const bin_job *j, mdnl_pool_buf *buf, mdnl_frame *f)
{
    const int64_t len = j->h.len, at = j->h.at;
    if (!mdnl_pool_buf_reserve(buf, (size_t)len + 1))
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: frame %lld: out of host memory for %lld bytes", p->b->path,
                          (long long)j->h.index, (long long)len);
    for (int64_t got = 0; got < len;) {
        const ssize_t n = pread(p->fd, buf->data + got, (size_t)(len - got), (off_t)(at + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return mdnl_bfile_error(p->b, j->h.index, at, "expected %lld bytes of frame data (truncated frame)",
                                    (long long)len);
        got += n;
    }
    return p->ops->decode(p->ctx, &j->h, buf->data, f);
}

static bool make(void *ctx, int64_t k, mdnl_pool_buf *b)
{
    mdnl_bin_pool *p = ctx;
    bin_job *j = &p->jobs[k % p->window];
    if (j->decode && (j->dstatus = decode(p, j, b, &j->f)) != MDNL_OK)
        keep(j->msg);
    return true;
}

static void read_ahead(mdnl_bin_pool *p)
{
    const int64_t room = mdnl_pool_room(p->pool);
    for (; !p->ahead_done && p->prepared < room; p->prepared++)
        find(p, &p->jobs[p->prepared % p->window]);
    mdnl_pool_post(p->pool, p->prepared);
}

/* The jobs, the first one found (its size sets the window), the pool. */
static mdnl_status start(mdnl_bin_pool *p)
{
    p->started = true;
    const int cap = p->threads > 1 ? 2 * p->threads : 1;
    if (!(p->jobs = mdnl_calloc((size_t)cap, sizeof *p->jobs, "binary reader pool")))
        return MDNL_ERR_RESOURCE;
    p->cap = cap;
    p->window = 1;
    find(p, &p->jobs[0]);
    p->prepared = 1;
    int window = cap;
    const int64_t cost = 3 * p->jobs[0].h.len; /* bytes, doubles, species: about 3 x a float frame's bytes */
    if (cost > 0 && BUDGET / cost < window)
        window = BUDGET / cost < 2 ? 2 : (int)(BUDGET / cost);
    mdnl_status st = mdnl_pool_start(p->threads, window, p, make, p->b->path, &p->pool);
    if (st != MDNL_OK)
        return st;
    p->window = mdnl_pool_window(p->pool);
    return MDNL_OK;
}

/* The next job, held until the next call; MDNL_END at the end (and after
 * an error was taken), head()'s error in its turn. */
static mdnl_status take(mdnl_bin_pool *p, bin_job **job, mdnl_pool_buf **buf)
{
    if (p->held) {
        mdnl_pool_release(p->pool);
        p->held = false;
    }
    if (!p->started) {
        mdnl_status st = start(p);
        if (st != MDNL_OK)
            return st;
    }
    if (!p->pool)
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: the reader pool could not start", p->b->path);
    read_ahead(p);
    const int64_t taken = mdnl_pool_room(p->pool) - p->window;
    if (taken >= p->prepared)
        return MDNL_END; /* everything taken: the end or an error was reported */
    if (p->threads <= 1) /* not made by mdnl_pool_wait: next() decodes it straight into its frame */
        p->jobs[taken % p->window].decode = false;
    int64_t k;
    mdnl_status st = mdnl_pool_wait(p->pool, &k, buf);
    p->held = true;
    if (st != MDNL_OK)
        return st;
    bin_job *j = *job = &p->jobs[k % p->window];
    if (j->end)
        return MDNL_END;
    if (j->status != MDNL_OK)
        return mdnl_error(j->status, "%s", j->msg);
    return MDNL_OK;
}

mdnl_status mdnl_bin_pool_next(mdnl_bin_pool *p, mdnl_frame *f)
{
    p->alloc = f->pos_alloc;
    bin_job *j;
    mdnl_pool_buf *buf;
    mdnl_status st = take(p, &j, &buf);
    if (st != MDNL_OK)
        return st;
    if (!j->decode) /* one thread, or not selected yet asked for: decoded here, straight into f */
        return decode(p, j, buf, f);
    if (j->dstatus != MDNL_OK)
        return mdnl_error(j->dstatus, "%s", j->msg);
    return mdnl_frame_take(f, &j->f);
}

mdnl_status mdnl_bin_pool_skip(mdnl_bin_pool *p)
{
    bin_job *j;
    mdnl_pool_buf *buf;
    return take(p, &j, &buf);
}

void mdnl_bin_pool_close(mdnl_bin_pool *p)
{
    if (!p)
        return;
    mdnl_pool_stop(p->pool);
    for (int k = 0; k < p->cap; ++k)
        mdnl_frame_free(&p->jobs[k].f);
    free(p->jobs);
    free(p);
}

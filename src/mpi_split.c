/* mpi_split.c — the frames of `mdnl run` split over MPI ranks (see
 * mpi_split.h for the split, the spool, the agreement and what is held). */
#define _POSIX_C_SOURCE 200809L
#include "mpi_split.h"

#include <mpi.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { TAG_MSG = 1, TAG_TICK, TAG_DONE, TAG_STOP, TAG_GO, TAG_DATA, TAG_DATA_ERR };
#define CHUNK (4u << 20) /* spool bytes per message */
#define MSG_LEN 1024
#define NSEC 6 /* per-rank seconds: init, read, prepare, compute, write, wall */

typedef struct done_msg {
    int32_t status, device;
    int64_t nframes;
    double sec[NSEC];
    char msg[MSG_LEN];
} done_msg;

typedef struct err_msg {
    int32_t status, pad;
    char msg[MSG_LEN];
} err_msg;

/* One frame in the spool, followed by its histogram (counts[nhist * bins],
 * na[nhist], nb[nhist]) when has_hist and its list (offsets[list_natoms + 1],
 * j[npairs], d[npairs]) when has_list, then its image shifts S[npairs][3]
 * when has_shifts and vectors D[npairs][3] when has_vectors. */
typedef struct record {
    int64_t index, step, natoms, list_natoms, npairs;
    double time, energy, volume;
    int32_t has_energy, has_hist, has_list, nhist, has_shifts, has_vectors;
} record;

/* MPI is process-wide, and so is this state. */
static struct {
    bool started, active;
    int rank, size, local_rank, device;
    int phase;     /* 1: the split agreed, 2: gathered */
    bool split_ok; /* the split agreed that every rank is ready */
    /* the wrapped sink */
    const mdnl_pipeline_config *cfg;
    mdnl_pipeline_sink inner;
    void *inner_user;
    mdnl_rdf_accum *acc;
    mdnl_progress *prog;
    /* ranks > 0: the spool and progress ticks */
    FILE *spool;
    int64_t untold;
    double last_tick;
    bool stop_seen;
    /* rank 0: what the others reported */
    int ndone;
    char *done, *stopped;
    int64_t *ticked, *frames;
    int32_t *devices;
    double (*sec)[NSEC];
    int fail_rank;
    mdnl_status fail_st;
    char fail_msg[MSG_LEN];
    double t_wait, t_merge;
} M = {.fail_rank = -1};

static bool launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"};
    for (size_t k = 0; k < sizeof vars / sizeof *vars; ++k)
        if (getenv(vars[k]))
            return true;
    return false;
}

static int env_int(const char *name, int dflt)
{
    const char *s = getenv(name);
    return s && *s ? atoi(s) : dflt;
}

mdnl_status mdnl_mpi_begin(void)
{
    if (M.started)
        return MDNL_OK;
    const int srun_tasks = env_int("SLURM_STEP_NUM_TASKS", 1);
    if (!launched()) {
        if (srun_tasks > 1) {
            M.rank = env_int("SLURM_PROCID", 0);
            return mdnl_error(MDNL_ERR_USAGE, "srun started %d tasks without an MPI plugin; use srun --mpi=pmix "
                                              "(or mpirun) so that they split the frames",
                              srun_tasks);
        }
        return MDNL_OK;
    }
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return mdnl_error(MDNL_ERR_RESOURCE, "MPI_Init_thread failed");
    M.started = true;
    MPI_Comm_rank(MPI_COMM_WORLD, &M.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &M.size);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, M.rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &M.local_rank);
    MPI_Comm_free(&node);
    M.active = M.size > 1;
    M.device = -1;
    if (provided < MPI_THREAD_SERIALIZED)
        return mdnl_error(MDNL_ERR_RESOURCE, "the MPI library offers no MPI_THREAD_SERIALIZED (level %d)", provided);
    return MDNL_OK;
}

bool mdnl_mpi_split_active(void) { return M.active; }

bool mdnl_mpi_root(void) { return M.rank == 0; }

void mdnl_mpi_choose_device(mdnl_opts *o)
{
    if (!M.active || o->backend == MDNL_BACKEND_CPU)
        return;
    int n = mdnl_cuda_devices();
    if (n > 0) {
        M.device = M.local_rank % n;
        o->device = M.device;
    }
}

/* ---- agreement before the pipeline ---- */

/* The lowest failing rank of st (all ranks) and its message on rank 0. */
static mdnl_status agree(mdnl_status st, int64_t *n)
{
    struct {
        int32_t st, pad;
        int64_t n;
    } mine = {(int32_t)st, 0, *n}, *all = malloc((size_t)M.size * sizeof mine);
    if (!all)
        MPI_Abort(MPI_COMM_WORLD, MDNL_ERR_RESOURCE); /* a few bytes per rank: nothing sensible is left */
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
    int f = -1;
    for (int r = 0; r < M.size && f < 0; ++r)
        if (all[r].st != MDNL_OK)
            f = r;
    *n = all[0].n;
    mdnl_status agreed = f < 0 ? MDNL_OK : (mdnl_status)all[f].st;
    free(all);
    M.phase = 1;
    M.split_ok = f < 0;
    if (f > 0) {
        char msg[MSG_LEN] = "";
        if (M.rank == f) {
            snprintf(msg, sizeof msg, "%s", mdnl_last_error());
            MPI_Send(msg, MSG_LEN, MPI_CHAR, 0, TAG_MSG, MPI_COMM_WORLD);
        } else if (M.rank == 0) {
            MPI_Recv(msg, MSG_LEN, MPI_CHAR, f, TAG_MSG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            msg[MSG_LEN - 1] = '\0';
            mdnl_error(agreed, "%s", msg);
        }
    }
    return agreed;
}

/* A spool file that nobody else can see and that vanishes with the process. */
static mdnl_status open_spool(void)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/.mdnl-spool-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0)
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: cannot create the rank's spool file", dir);
    unlink(path);
    if (!(M.spool = fdopen(fd, "w+b"))) {
        close(fd);
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: cannot open the rank's spool file", dir);
    }
    return MDNL_OK;
}

mdnl_status mdnl_mpi_split(mdnl_status st, mdnl_frames *fs)
{
    if (!M.active)
        return st;
    int64_t n = -1;
    if (st == MDNL_OK && M.rank == 0 && mdnl_frames_count(fs, &n) != MDNL_OK) {
        n = -1; /* rank 0 takes every frame and meets the error where one process would */
        mdnl_clear_error();
    }
    if (st == MDNL_OK && M.rank > 0)
        st = open_spool();
    if ((st = agree(st, &n)) != MDNL_OK)
        return st;
    M.frames = calloc((size_t)M.size, sizeof *M.frames);
    M.devices = calloc((size_t)M.size, sizeof *M.devices);
    M.sec = calloc((size_t)M.size, sizeof *M.sec);
    M.ticked = calloc((size_t)M.size, sizeof *M.ticked);
    M.done = calloc((size_t)M.size, 1);
    M.stopped = calloc((size_t)M.size, 1);
    if (!M.frames || !M.devices || !M.sec || !M.ticked || !M.done || !M.stopped)
        MPI_Abort(MPI_COMM_WORLD, MDNL_ERR_RESOURCE);
    if (n < 0) {
        if (M.rank > 0)
            mdnl_frames_restrict(fs, 0, 0);
        return MDNL_OK;
    }
    const int64_t base = n / M.size, extra = n % M.size;
    const int64_t first = M.rank * base + (M.rank < extra ? M.rank : extra);
    mdnl_frames_restrict(fs, first, base + (M.rank < extra ? 1 : 0));
    return MDNL_OK;
}

/* ---- during the pipeline ---- */

static void send_stop(int r)
{
    if (M.done[r] || M.stopped[r])
        return;
    int z = 0;
    MPI_Send(&z, 1, MPI_INT, r, TAG_STOP, MPI_COMM_WORLD);
    M.stopped[r] = 1;
}

/* Rank 0: a failure at rank r; the ranks after it are stopped. */
static void failed_at(int r, mdnl_status st, const char *msg)
{
    if (M.fail_rank < 0 || r < M.fail_rank) {
        M.fail_rank = r;
        M.fail_st = st;
        snprintf(M.fail_msg, sizeof M.fail_msg, "%s", msg);
    }
    for (int q = r + 1; q < M.size; ++q)
        send_stop(q);
}

static void step_progress(int64_t k)
{
    for (int64_t i = 0; i < k && M.prog; ++i)
        mdnl_progress_step(M.prog);
}

/* Rank 0: takes one message of another rank (a tick or its end). */
static void take_message(const MPI_Status *probe)
{
    const int r = probe->MPI_SOURCE;
    if (probe->MPI_TAG == TAG_TICK) {
        int64_t k = 0;
        MPI_Recv(&k, 1, MPI_INT64_T, r, TAG_TICK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        M.ticked[r] += k;
        step_progress(k);
        return;
    }
    done_msg d;
    MPI_Recv(&d, (int)sizeof d, MPI_BYTE, r, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    d.msg[MSG_LEN - 1] = '\0';
    M.done[r] = 1;
    M.ndone++;
    M.frames[r] = d.nframes;
    M.devices[r] = d.device;
    memcpy(M.sec[r], d.sec, sizeof d.sec);
    if (d.nframes > M.ticked[r])
        step_progress(d.nframes - M.ticked[r]);
    if (d.status != MDNL_OK)
        failed_at(r, (mdnl_status)d.status, d.msg);
}

static void poll_root(void)
{
    for (;;) {
        int flag = 0;
        MPI_Status s;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &s);
        if (!flag)
            return;
        take_message(&s);
    }
}

static mdnl_status spool_write(const void *p, size_t size, size_t n)
{
    if (n && fwrite(p, size, n, M.spool) != n)
        return mdnl_error(MDNL_ERR_RESOURCE, "cannot write the rank's spool file (disk full in $TMPDIR?)");
    return MDNL_OK;
}

static int32_t nhist_of(const mdnl_pipeline_config *c) { return c->pairs && c->pairs->n > 0 ? c->pairs->n : 1; }

static mdnl_status spool_frame(const mdnl_frame_result *r)
{
    const mdnl_pipeline_config *c = M.cfg;
    record h = {
        .index = r->index,
        .step = r->step,
        .natoms = r->natoms,
        .list_natoms = r->list ? r->list->natoms : 0,
        .npairs = r->list ? r->list->npairs : 0,
        .time = r->time,
        .energy = r->energy,
        .volume = r->volume,
        .has_energy = r->has_energy,
        .has_hist = r->counts != NULL,
        .has_list = r->list != NULL,
        .nhist = r->counts ? nhist_of(c) : 0,
        .has_shifts = r->list && r->shifts,
        .has_vectors = r->list && r->vectors,
    };
    mdnl_status st = spool_write(&h, sizeof h, 1);
    if (st == MDNL_OK && h.has_hist) {
        const size_t nb = (size_t)h.nhist * (size_t)c->bins;
        if ((st = spool_write(r->counts, sizeof *r->counts, nb)) == MDNL_OK &&
            (st = spool_write(r->na, sizeof *r->na, (size_t)h.nhist)) == MDNL_OK)
            st = spool_write(r->nb, sizeof *r->nb, (size_t)h.nhist);
    }
    if (st == MDNL_OK && h.has_list) {
        const mdnl_nlist *l = r->list;
        if ((st = spool_write(l->offsets, sizeof *l->offsets, (size_t)l->natoms + 1)) == MDNL_OK &&
            (st = spool_write(l->j, sizeof *l->j, (size_t)l->npairs)) == MDNL_OK)
            st = spool_write(l->d, sizeof *l->d, (size_t)l->npairs);
    }
    if (st == MDNL_OK && h.has_shifts)
        st = spool_write(r->shifts, sizeof *r->shifts, (size_t)h.npairs);
    if (st == MDNL_OK && h.has_vectors)
        st = spool_write(r->vectors, sizeof *r->vectors, (size_t)h.npairs);
    return st;
}

/* The pipeline's sink on every rank (its writer thread). */
static mdnl_status wrapped_sink(void *user, const mdnl_frame_result *r)
{
    (void)user;
    if (M.rank == 0) {
        mdnl_status st = M.inner ? M.inner(M.inner_user, r) : MDNL_OK;
        poll_root();
        return st;
    }
    mdnl_status st = spool_frame(r);
    if (st != MDNL_OK)
        return st;
    M.untold++;
    const double now = mdnl_now();
    if (now - M.last_tick >= 0.1) {
        MPI_Send(&M.untold, 1, MPI_INT64_T, 0, TAG_TICK, MPI_COMM_WORLD);
        M.untold = 0;
        M.last_tick = now;
    }
    int flag = 0;
    MPI_Iprobe(0, TAG_STOP, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    if (flag) {
        int z;
        MPI_Recv(&z, 1, MPI_INT, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        M.stop_seen = true;
        return mdnl_error(MDNL_ERR_INTERNAL, "stopped: a rank before this one failed");
    }
    return MDNL_OK;
}

mdnl_status mdnl_mpi_wrap(const mdnl_pipeline_config *c, mdnl_pipeline_sink *sink, void **user,
                          mdnl_rdf_accum **acc, mdnl_progress *prog)
{
    if (!M.active)
        return MDNL_OK;
    M.cfg = c;
    M.inner = *sink;
    M.inner_user = *user;
    M.acc = *acc;
    M.prog = prog;
    M.last_tick = mdnl_now();
    *sink = wrapped_sink;
    *user = NULL;
    if (M.rank > 0)
        *acc = NULL;
    return MDNL_OK;
}

/* ---- after the pipeline: rank 0 merges the others' spools ---- */

/* The byte stream of one rank's spool, as rank 0 receives it: two chunk
 * buffers, one being filled by MPI while the other is parsed. */
typedef struct stream {
    int src;
    char *buf[2];
    int cur;
    size_t len, pos;
    MPI_Request req;
    bool pending, end;
} stream;

static void post(stream *s)
{
    MPI_Irecv(s->buf[1 - s->cur], CHUNK, MPI_BYTE, s->src, MPI_ANY_TAG, MPI_COMM_WORLD, &s->req);
    s->pending = true;
}

/* Waits for the next chunk. */
static mdnl_status fill(stream *s)
{
    if (!s->pending)
        return mdnl_error(MDNL_ERR_INTERNAL, "rank %d: its results ended early", s->src);
    MPI_Status ms;
    MPI_Wait(&s->req, &ms);
    s->pending = false;
    int count = 0;
    MPI_Get_count(&ms, MPI_BYTE, &count);
    s->cur = 1 - s->cur;
    s->len = (size_t)count;
    s->pos = 0;
    if (ms.MPI_TAG == TAG_DATA_ERR) {
        err_msg e;
        memcpy(&e, s->buf[s->cur], sizeof e < s->len ? sizeof e : s->len);
        e.msg[MSG_LEN - 1] = '\0';
        s->end = true;
        return mdnl_error((mdnl_status)e.status, "%s", e.msg);
    }
    if (count == 0) {
        s->end = true;
        return MDNL_OK;
    }
    post(s);
    return MDNL_OK;
}

static mdnl_status take(stream *s, void *dst, size_t n)
{
    char *d = dst;
    while (n > 0) {
        if (s->pos == s->len) {
            if (s->end)
                return mdnl_error(MDNL_ERR_INTERNAL, "rank %d: its results ended inside a frame", s->src);
            mdnl_status st = fill(s);
            if (st != MDNL_OK)
                return st;
            continue;
        }
        size_t k = s->len - s->pos < n ? s->len - s->pos : n;
        memcpy(d, s->buf[s->cur] + s->pos, k);
        s->pos += k, d += k, n -= k;
    }
    return MDNL_OK;
}

/* Whether the stream holds another record (waits for data). */
static mdnl_status more(stream *s, bool *yes)
{
    while (s->pos == s->len && !s->end) {
        mdnl_status st = fill(s);
        if (st != MDNL_OK)
            return st;
    }
    *yes = s->pos < s->len;
    return MDNL_OK;
}

/* Grows *p to at least n rows of `size` bytes (contents dropped). */
static mdnl_status grow_rows(void *p, int64_t *cap, int64_t n, size_t size)
{
    void **q = p;
    if (*q && n <= *cap)
        return MDNL_OK;
    free(*q);
    *cap = 0;
    if (!(*q = mdnl_malloc((size_t)(n > 0 ? n : 1) * size, "image shifts or vectors")))
        return MDNL_ERR_RESOURCE;
    *cap = n;
    return MDNL_OK;
}

typedef struct frame_buf {
    uint64_t *counts;
    int64_t na[MDNL_MAX_RDF_PAIRS], nb[MDNL_MAX_RDF_PAIRS];
    mdnl_nlist list;
    int32_t (*S)[3]; /* the list's image shifts and vectors, S_cap entries each */
    double (*D)[3];
    int64_t S_cap, D_cap;
} frame_buf;

/* One record: to the sink, the accumulator and the statistics, as
 * collect_frame and the writer do for a frame of rank 0. */
static mdnl_status merge_record(stream *s, frame_buf *b, mdnl_pipeline_stats *stats)
{
    const mdnl_pipeline_config *c = M.cfg;
    record h;
    mdnl_status st = take(s, &h, sizeof h);
    if (st != MDNL_OK)
        return st;
    if (h.has_hist) {
        if (h.nhist != nhist_of(c) || !b->counts)
            return mdnl_error(MDNL_ERR_INTERNAL, "rank %d: a histogram of the wrong shape", s->src);
        const size_t nb = (size_t)h.nhist * (size_t)c->bins;
        if ((st = take(s, b->counts, nb * sizeof *b->counts)) != MDNL_OK ||
            (st = take(s, b->na, (size_t)h.nhist * sizeof *b->na)) != MDNL_OK ||
            (st = take(s, b->nb, (size_t)h.nhist * sizeof *b->nb)) != MDNL_OK)
            return st;
    }
    if (h.has_list) {
        if ((st = mdnl_nlist_reserve(&b->list, h.list_natoms, h.npairs)) != MDNL_OK)
            return st;
        b->list.natoms = h.list_natoms;
        b->list.npairs = h.npairs;
        if ((st = take(s, b->list.offsets, ((size_t)h.list_natoms + 1) * sizeof *b->list.offsets)) != MDNL_OK ||
            (st = take(s, b->list.j, (size_t)h.npairs * sizeof *b->list.j)) != MDNL_OK ||
            (st = take(s, b->list.d, (size_t)h.npairs * sizeof *b->list.d)) != MDNL_OK)
            return st;
    }
    if ((h.has_shifts || h.has_vectors) && !h.has_list)
        return mdnl_error(MDNL_ERR_INTERNAL, "rank %d: image shifts without a list", s->src);
    if (h.has_shifts && ((st = grow_rows(&b->S, &b->S_cap, h.npairs, sizeof *b->S)) != MDNL_OK ||
                         (st = take(s, b->S, (size_t)h.npairs * sizeof *b->S)) != MDNL_OK))
        return st;
    if (h.has_vectors && ((st = grow_rows(&b->D, &b->D_cap, h.npairs, sizeof *b->D)) != MDNL_OK ||
                          (st = take(s, b->D, (size_t)h.npairs * sizeof *b->D)) != MDNL_OK))
        return st;
    mdnl_frame_result r = {
        .index = h.index,
        .step = h.step,
        .natoms = h.natoms,
        .time = h.time,
        .has_energy = h.has_energy,
        .energy = h.energy,
        .list = h.has_list ? &b->list : NULL,
        .shifts = h.has_shifts ? (const int32_t(*)[3])b->S : NULL,
        .vectors = h.has_vectors ? (const double(*)[3])b->D : NULL,
        .counts = h.has_hist ? b->counts : NULL,
        .na = b->na,
        .nb = b->nb,
        .volume = h.volume,
    };
    if (M.inner && (st = M.inner(M.inner_user, &r)) != MDNL_OK)
        return st;
    if (h.has_list)
        stats->pairs += h.npairs;
    if (h.has_energy) {
        if (!stats->nframes)
            stats->e_first = h.energy;
        stats->e_last = h.energy;
        stats->e_sum += h.energy;
        stats->e_min = h.energy < stats->e_min ? h.energy : stats->e_min;
        stats->e_max = h.energy > stats->e_max ? h.energy : stats->e_max;
    }
    if (h.has_hist) {
        if (M.acc && (st = mdnl_rdf_accum_add(M.acc, b->counts, b->na, b->nb, h.volume)) != MDNL_OK)
            return st;
        for (size_t k = 0; k < (size_t)h.nhist * (size_t)c->bins; ++k)
            stats->pairs_counted += b->counts[k];
    }
    stats->nframes++;
    mdnl_atoms_range_add(&stats->atoms, h.natoms);
    return MDNL_OK;
}

/* Rank 0: asks rank r for its spool and merges it; on a failure the rest of
 * the stream is still received (and dropped), so rank r is never left
 * blocked in a send. */
static mdnl_status merge_rank(int r, frame_buf *b, mdnl_pipeline_stats *stats)
{
    stream s = {.src = r};
    s.buf[0] = malloc(CHUNK);
    s.buf[1] = malloc(CHUNK);
    int go = s.buf[0] && s.buf[1];
    mdnl_status st = go ? MDNL_OK : mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for the results of rank %d", r);
    MPI_Send(&go, 1, MPI_INT, r, TAG_GO, MPI_COMM_WORLD);
    if (go) {
        s.cur = 1; /* post() fills buf[0] first */
        post(&s);
        bool yes = true;
        while (st == MDNL_OK && (st = more(&s, &yes)) == MDNL_OK && yes)
            st = merge_record(&s, b, stats);
        char scratch[MSG_LEN];
        snprintf(scratch, sizeof scratch, "%s", mdnl_last_error());
        while (!s.end && s.pending) /* drain after a failure */
            if (fill(&s) != MDNL_OK)
                break;
        if (st != MDNL_OK)
            mdnl_error(st, "%s", scratch);
    }
    free(s.buf[0]);
    free(s.buf[1]);
    return st;
}

/* Rank r > 0: streams its spool to rank 0 when asked. */
static void send_spool(void)
{
    int go = 0;
    MPI_Recv(&go, 1, MPI_INT, 0, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (!go)
        return;
    char *buf = malloc(CHUNK);
    err_msg e = {.status = MDNL_OK};
    if (!buf) {
        e.status = MDNL_ERR_RESOURCE;
        snprintf(e.msg, sizeof e.msg, "rank %d: out of host memory for a %u-byte chunk", M.rank, CHUNK);
    } else if (fflush(M.spool) != 0 || fseek(M.spool, 0, SEEK_SET) != 0) {
        e.status = MDNL_ERR_RESOURCE;
        snprintf(e.msg, sizeof e.msg, "rank %d: cannot read back its spool file", M.rank);
    }
    while (e.status == MDNL_OK) {
        size_t n = fread(buf, 1, CHUNK, M.spool);
        if (n == 0 && ferror(M.spool)) {
            e.status = MDNL_ERR_RESOURCE;
            snprintf(e.msg, sizeof e.msg, "rank %d: cannot read back its spool file", M.rank);
            break;
        }
        MPI_Send(buf, (int)n, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD);
        if (n == 0)
            break;
    }
    if (e.status != MDNL_OK)
        MPI_Send(&e, (int)sizeof e, MPI_BYTE, 0, TAG_DATA_ERR, MPI_COMM_WORLD);
    free(buf);
}

mdnl_status mdnl_mpi_gather(mdnl_status st, mdnl_pipeline_stats *stats)
{
    if (!M.active || !M.split_ok || M.phase >= 2)
        return st;
    M.phase = 2;
    const int P = M.size;
    /* the decision: status, the failing rank, and whom rank 0 stopped */
    const size_t dlen = 2 * sizeof(int32_t) + (size_t)P;
    char *decision = calloc(1, dlen);
    if (!decision)
        MPI_Abort(MPI_COMM_WORLD, MDNL_ERR_RESOURCE);
    if (M.rank > 0) {
        if (st == MDNL_OK && (fflush(M.spool) != 0 || ferror(M.spool)))
            st = mdnl_error(MDNL_ERR_RESOURCE, "cannot write the rank's spool file (disk full in $TMPDIR?)");
        done_msg d = {.status = st, .device = M.device, .nframes = stats->nframes,
                      .sec = {stats->t_init, stats->t_read, stats->t_prepare, stats->t_compute, stats->t_write,
                              stats->t_wall}};
        if (st != MDNL_OK)
            snprintf(d.msg, sizeof d.msg, "%s", mdnl_last_error());
        MPI_Send(&d, (int)sizeof d, MPI_BYTE, 0, TAG_DONE, MPI_COMM_WORLD);
        MPI_Bcast(decision, (int)dlen, MPI_BYTE, 0, MPI_COMM_WORLD);
        int32_t agreed;
        memcpy(&agreed, decision, sizeof agreed);
        if (decision[2 * sizeof(int32_t) + M.rank] && !M.stop_seen) { /* a stop that crossed our DONE */
            int z;
            MPI_Recv(&z, 1, MPI_INT, 0, TAG_STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        free(decision);
        if (agreed == MDNL_OK)
            send_spool();
        fclose(M.spool);
        M.spool = NULL;
        return (mdnl_status)agreed;
    }
    /* rank 0 */
    const double t0 = mdnl_now();
    M.frames[0] = stats->nframes;
    M.devices[0] = M.device;
    const double s0[NSEC] = {stats->t_init, stats->t_read, stats->t_prepare, stats->t_compute, stats->t_write,
                             stats->t_wall};
    memcpy(M.sec[0], s0, sizeof s0);
    M.done[0] = 1;
    if (st != MDNL_OK)
        failed_at(0, st, mdnl_last_error());
    while (M.ndone < P - 1) {
        MPI_Status s;
        MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &s);
        take_message(&s);
    }
    M.t_wait = mdnl_now() - t0;
    st = M.fail_rank < 0 ? MDNL_OK : M.fail_st;
    int32_t w[2] = {(int32_t)st, M.fail_rank};
    memcpy(decision, w, sizeof w);
    memcpy(decision + sizeof w, M.stopped, (size_t)P);
    MPI_Bcast(decision, (int)dlen, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(decision);
    if (st != MDNL_OK)
        return mdnl_error(st, "%s", M.fail_msg);

    const double t1 = mdnl_now();
    if (!stats->nframes) { /* the pipeline reports 0 for an empty block */
        stats->e_min = INFINITY;
        stats->e_max = -INFINITY;
    }
    frame_buf b;
    memset(&b, 0, sizeof b);
    if (M.cfg->hist && !M.cfg->read_only &&
        !(b.counts = mdnl_malloc((size_t)nhist_of(M.cfg) * (size_t)M.cfg->bins * sizeof *b.counts, "histogram")))
        st = MDNL_ERR_RESOURCE;
    for (int r = 1; r < P; ++r) {
        if (st == MDNL_OK) {
            st = merge_rank(r, &b, stats);
        } else {
            int go = 0;
            MPI_Send(&go, 1, MPI_INT, r, TAG_GO, MPI_COMM_WORLD);
        }
    }
    free(b.counts);
    mdnl_nlist_free(&b.list);
    free(b.S);
    free(b.D);
    if (!stats->nframes)
        stats->e_min = stats->e_max = 0;
    M.t_merge = mdnl_now() - t1;
    stats->t_wall += M.t_wait + M.t_merge;
    stats->t_last_done = stats->t_wall; /* the last frame is out when the last rank's is merged */
    return st;
}

void mdnl_mpi_json(FILE *fp, int64_t nframes)
{
    if (!M.active) {
        fprintf(fp, ",\"ranks\":1,\"frames_per_rank\":[%lld]", (long long)nframes);
        return;
    }
    fprintf(fp, ",\"ranks\":%d,\"frames_per_rank\":[", M.size);
    for (int r = 0; r < M.size; ++r)
        fprintf(fp, "%s%lld", r ? "," : "", (long long)M.frames[r]);
    fprintf(fp, "],\"device_per_rank\":[");
    for (int r = 0; r < M.size; ++r)
        fprintf(fp, "%s%d", r ? "," : "", M.devices[r]);
    static const char *const names[NSEC] = {"init", "read", "prepare", "compute", "write", "wall"};
    fprintf(fp, "],\"rank_seconds\":{");
    for (int k = 0; k < NSEC; ++k) {
        fprintf(fp, "%s\"%s\":[", k ? "," : "", names[k]);
        for (int r = 0; r < M.size; ++r)
            fprintf(fp, "%s%.6f", r ? "," : "", M.sec[r][k]);
        fputc(']', fp);
    }
    /* wait: rank 0 waiting for the others to finish their blocks; merge: taking in their results */
    fprintf(fp, "},\"mpi_seconds\":{\"wait\":%.6f,\"merge\":%.6f}", M.t_wait, M.t_merge);
}

bool mdnl_mpi_end(mdnl_status *st)
{
    if (!M.started)
        return M.rank == 0;
    if (M.active) {
        if (M.phase < 1) { /* failed before the split: the others wait in it */
            int64_t n = -1;
            mdnl_status agreed = agree(*st == MDNL_OK ? MDNL_ERR_INTERNAL : *st, &n);
            if (*st != MDNL_OK)
                *st = agreed;
        }
        if (M.split_ok && M.phase < 2) {
            mdnl_pipeline_stats none;
            memset(&none, 0, sizeof none);
            *st = mdnl_mpi_gather(*st == MDNL_OK ? MDNL_ERR_INTERNAL : *st, &none);
        }
        /* the outcome is rank 0's: its commit, or the failure it reported */
        int32_t fin = (int32_t)*st;
        MPI_Bcast(&fin, 1, MPI_INT32_T, 0, MPI_COMM_WORLD);
        *st = (mdnl_status)fin;
        if (M.spool)
            fclose(M.spool);
    }
    return M.rank == 0;
}

void mdnl_mpi_finish(void)
{
    if (!M.started)
        return;
    fflush(stdout);
    fflush(stderr);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    M.started = false;
}

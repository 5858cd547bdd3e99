/* pipeline.c — the streaming pipeline of `mdnl run` (see
 * pipeline.h for the threads, the ring and who owns what), plus the --pairs
 * helpers shared with `mdnl rdf`. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline.h"

#include <math.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- --pairs ---- */

mdnl_status mdnl_pair_names_parse(const char *s, mdnl_pair_names *p)
{
    const char *opt = p->option ? p->option : "--pairs";
    p->n = 0;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        const char *dash = memchr(s, '-', len);
        if (!dash || dash == s || dash == s + len - 1 || memchr(dash + 1, '-', len - (size_t)(dash - s) - 1))
            return mdnl_error(MDNL_ERR_USAGE, "%s: expected A-B species pairs separated by commas, got \"%.*s\"",
                              opt, (int)len, s);
        size_t la = (size_t)(dash - s), lb = len - la - 1;
        if (la >= MDNL_SYMBOL_LEN || lb >= MDNL_SYMBOL_LEN)
            return mdnl_error(MDNL_ERR_USAGE, "%s: species name too long in \"%.*s\"", opt, (int)len, s);
        if (p->n == MDNL_MAX_RDF_PAIRS)
            return mdnl_error(MDNL_ERR_USAGE, "%s: at most %d pairs", opt, MDNL_MAX_RDF_PAIRS);
        memcpy(p->a[p->n], s, la);
        p->a[p->n][la] = '\0';
        memcpy(p->b[p->n], dash + 1, lb);
        p->b[p->n][lb] = '\0';
        memcpy(p->label[p->n], s, len);
        p->label[p->n][len] = '\0';
        p->labels[p->n] = p->label[p->n];
        p->n++;
        s += len + (comma ? 1 : 0);
        if (comma && !*s)
            return mdnl_error(MDNL_ERR_USAGE, "%s: trailing comma", opt);
    }
    return MDNL_OK;
}

static int32_t find_species(const mdnl_frame *f, const char *sym)
{
    for (int32_t s = 0; s < f->nspecies; ++s)
        if (strcmp(f->symbols[s], sym) == 0)
            return s;
    return -1;
}

mdnl_status mdnl_pair_names_resolve(const mdnl_pair_names *pn, const char *input, const mdnl_frame *f,
                                    int32_t (*ids)[2])
{
    for (int p = 0; p < pn->n; ++p) {
        ids[p][0] = find_species(f, pn->a[p]);
        ids[p][1] = find_species(f, pn->b[p]);
        if (ids[p][0] < 0 || ids[p][1] < 0) {
            char present[256] = "";
            size_t len = 0;
            for (int32_t s = 0; s < f->nspecies && len < sizeof present; ++s)
                len += (size_t)snprintf(present + len, sizeof present - len, "%s%s", s ? ", " : "", f->symbols[s]);
            return mdnl_error(MDNL_ERR_INPUT,
                              "%s: frame %lld: expected species %s for %s %s, found none (the frame has %s)",
                              input, (long long)f->index, ids[p][0] < 0 ? pn->a[p] : pn->b[p],
                              pn->option ? pn->option : "--pairs", pn->labels[p],
                              f->nspecies ? present : "no atoms");
        }
    }
    return MDNL_OK;
}

mdnl_status mdnl_rdf_write_h5(mdnl_h5md_results *res, const mdnl_rdf_accum *a, const mdnl_pair_names *pn)
{
    const int32_t bins = a->bins, nh = a->nhist;
    mdnl_status st = MDNL_OK;
    double *buf = mdnl_malloc((size_t)bins * 6 * (size_t)nh * sizeof *buf, "RDF results");
    if (!buf)
        return MDNL_ERR_RESOURCE;
    double *r_lo = buf, *r_hi = buf + bins, *r = buf + 2 * bins, *g = buf + 3 * bins;
    double *cpa = g + (size_t)nh * bins, *n = cpa + (size_t)nh * bins;
    for (int32_t b = 0; b < bins; ++b)
        mdnl_rdf_bin_edges(a->r_max, bins, b, &r_lo[b], &r_hi[b], &r[b]);
    mdnl_rdf_result(a, g, cpa, n);
    for (int32_t h = 0; h < nh && st == MDNL_OK; ++h)
        st = mdnl_h5md_results_write_rdf(res, pn->n ? pn->labels[h] : "total", bins, r_lo, r_hi, r,
                                         mdnl_rdf_has_g(a) ? g + (size_t)h * bins : NULL, n + (size_t)h * bins,
                                         a->counts + (size_t)h * bins);
    free(buf);
    return st;
}

/* ---- the ring ---- */

enum slot_state { SLOT_FREE, SLOT_READ, SLOT_PREPARED, SLOT_COMPUTED, SLOT_END };

typedef struct slot {
    enum slot_state state;
    mdnl_frame f;     /* filled by the reader, read by prepare, compute and writer */
    int32_t *types;   /* config.table: the atoms' pair types, by the prepare thread */
    int64_t types_cap;
    /* The frame's results, borrowed from the stream (the slot's ticket) until
     * the slot is prepared again: drained by the writer before that. */
    mdnl_nlist list;  /* a view of the stream's list */
    const int32_t (*S)[3]; /* config.shifts or vectors: the list's image shifts, */
    const double (*D)[3];  /* and config.vectors its vectors */
    const uint64_t *counts;
    bool has_energy;
    double energy;
    const int64_t *na, *nb; /* the frame's A and B atoms per histogram */
    double volume;          /* its RDF volume (0: open) */
    /* The reader's and the prepare stage's verdict on the frame (a read
     * error; CPU: the wrap and the grids; CUDA: the occupancy guard), which
     * the compute stage raises when it reaches the slot, after every earlier
     * frame's own errors: errors come in frame order. */
    mdnl_status verdict;
    char verdict_message[2048];
    bool early_checked; /* the guard ran during the backend's start-up (check_early) */
    mdnl_status early_verdict;
    int early;      /* check_early on this frame: 0 not begun, 1 running, 2 done (under mu) */
    int64_t seq;    /* the frame's ordinal in the run, set by the reader with its state */
    int64_t natoms; /* the frame's atoms while it is in flight (the reader's byte count) */
    size_t held;    /* bytes the slot's frame holds allocated (the reader's only) */
} slot;

/* The ring's depth: config.nslots (2 to 4) when every slot keeps a neighbor
 * list; else as many slots as RING_BYTES of frames allow, up to STEADY_SLOTS
 * (enough for the prepare workers) and, on the first lap while a CUDA
 * start-up runs, up to MAX_SLOTS, so that the reader and the prepare workers
 * run ahead of it by more than a few frames. Frames k < lap0 use slot k,
 * later ones slot (k - lap0) % nslots: only nslots slots' frames move to
 * pinned memory once the engine is up (pinning costs ~0.3 ms a MB), the
 * others give their memory back after the first lap. */
#define MAX_SLOTS 24
_Static_assert(MAX_SLOTS <= MDNL_STREAM_MAX_TICKETS, "a slot is a stream ticket");
#define STEADY_SLOTS 8
#define RING_BYTES (256.0 * 1048576.0)
/* A slot's bytes per atom: the frame's positions and species, and the CPU
 * backend's wrapped float positions. */
#define SLOT_ATOM_BYTES (3 * sizeof(double) + sizeof(int32_t) + 4 * sizeof(float))
/* At most this many prepare workers (the CUDA occupancy guard of one
 * frame at ~100k atoms is ~0.5 ms of one core). */
#define MAX_PREPARE 4

typedef struct ring {
    const mdnl_pipeline_config *c;
    /* The stream the compute stage submits to (set, under mu, before
     * engine_ready) and, while the backend starts, a CPU stream of the same
     * work whose mdnl_stream_check guards the first frames (check_early). */
    mdnl_stream *stream;
    mdnl_stream *guard;
    mdnl_frames *fs;
    mdnl_progress *progress;
    mdnl_pipeline_sink sink;
    void *user;
    slot slots[MAX_SLOTS];
    int nslots;     /* the ring's depth, fixed by the reader with the first frame (sized) */
    int lap0;       /* the first lap's depth (>= nslots) */
    int min_slots;  /* config.nslots: frames in flight whatever their bytes */
    int max_slots;  /* the most the depth may be */
    bool sized;     /* nslots is set (under mu; before the first frame is published) */
    int64_t inflight, inflight_atoms; /* frames read and not yet freed by the writer, and their atoms */
    int64_t early_next, prep_next;    /* the next frame check_early and the prepare workers take */
    int64_t prep_stop;                /* the prepare workers take no frame from here on (an error, the end) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_mutex_t io; /* serialize_io: around reads and sink calls */
    bool dev_check; /* CUDA: the prepare thread runs the occupancy guard only (check_slot) */
    /* Set (under mu) once the engine is up: where the reader allocates
     * frame positions from then on (engine_ready false: malloc). */
    bool engine_ready;
    const mdnl_frame_allocator *frame_alloc;
    bool speculate; /* a CUDA start-up thread runs: check_early */
    int nprepare;   /* prepare workers */
    bool abort;
    mdnl_status status;
    char message[2048];
    double t_read, t_prepare, t_write;         /* written by their own thread (t_prepare: under mu), read after join */
    double t_read_blocked;                     /* the reader waiting for a free slot */
    double t_read_startup;                     /* of t_read: frames read before the engine was up (under mu) */
    double t_start, t_first_done, t_last_done; /* writer: when the first and the last frame were drained */
} ring;

/* Frame k's slot, for a stage after the reader: frame 0 is in slot 0, and
 * a stage reaches frame k > 0 only after it saw frame 0, published after
 * the ring was sized. */
static slot *slot_at(ring *p, int64_t k)
{
    return &p->slots[k == 0 ? 0 : k < p->lap0 ? k : (k - p->lap0) % p->nslots];
}

/* Records the first failure and wakes every stage. Called with mu unlocked. */
static void fail(ring *p, mdnl_status st)
{
    pthread_mutex_lock(&p->mu);
    if (!p->abort) {
        p->abort = true;
        p->status = st;
        snprintf(p->message, sizeof p->message, "%s", mdnl_last_error());
    }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Waits until slot s is in `want` (or SLOT_END when end_ok) or the pipeline
 * aborts; returns the state seen, or -1 on abort. */
static int wait_slot(ring *p, slot *s, enum slot_state want, bool end_ok)
{
    pthread_mutex_lock(&p->mu);
    while (!p->abort && s->state != want && !(end_ok && s->state == SLOT_END))
        pthread_cond_wait(&p->cv, &p->mu);
    int seen = p->abort ? -1 : (int)s->state;
    pthread_mutex_unlock(&p->mu);
    return seen;
}

static void set_slot(ring *p, slot *s, enum slot_state st)
{
    pthread_mutex_lock(&p->mu);
    s->state = st;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* The ring's depth from the first frame (before it is published, so every
 * stage sees it fixed). */
static void size_ring(ring *p, int64_t natoms)
{
    const double per = (double)(natoms > 0 ? natoms : 1) * (double)SLOT_ATOM_BYTES;
    const double fit = RING_BYTES / per;
    const int steady = p->max_slots < STEADY_SLOTS ? p->max_slots : STEADY_SLOTS;
    const int first = p->speculate ? p->max_slots : steady;
    int n = fit >= (double)steady ? steady : (int)fit, n0 = fit >= (double)first ? first : (int)fit;
    pthread_mutex_lock(&p->mu);
    p->nslots = n < p->min_slots ? p->min_slots : n;
    p->lap0 = n0 < p->nslots ? p->nslots : n0;
    p->sized = true;
    pthread_mutex_unlock(&p->mu);
}

/* Bytes a slot's frame holds allocated. */
static size_t frame_bytes(const mdnl_frame *f)
{
    return (size_t)f->capacity * (3 * sizeof(double) + sizeof(int32_t));
}

/* Whether the reader may fill another slot: frames in flight are bounded by
 * the ring's depth and, past min_slots, by RING_BYTES of their atoms. With
 * mu held. */
static bool may_read(const ring *p)
{
    return p->inflight < p->min_slots || (double)p->inflight_atoms * (double)SLOT_ATOM_BYTES < RING_BYTES;
}

/* Frames grown past the ring's budget (a trajectory whose frames grow): the
 * free slots give their frames' memory back, so that the slots' memory stays
 * near RING_BYTES however the frames' sizes vary; and past the first lap,
 * the slots it alone used. With mu held; the reader alone allocates frames,
 * and no stage touches a free slot. */
static void trim_free_slots(ring *p, const slot *keep, int64_t k)
{
    for (int i = p->nslots; k >= p->lap0 && i < p->lap0; ++i) {
        slot *o = &p->slots[i];
        if (o->state == SLOT_FREE && o->held) {
            const mdnl_frame_allocator *alloc = o->f.pos_alloc;
            mdnl_frame_free(&o->f);
            o->f.pos_alloc = alloc;
            o->held = 0;
        }
    }
    double held = 0;
    for (int i = 0; i < p->lap0; ++i)
        held += (double)p->slots[i].held;
    if (held <= RING_BYTES)
        return;
    for (int i = 0; i < p->lap0; ++i) {
        slot *o = &p->slots[i];
        if (o != keep && o->state == SLOT_FREE && o->held) {
            const mdnl_frame_allocator *alloc = o->f.pos_alloc;
            mdnl_frame_free(&o->f);
            o->f.pos_alloc = alloc;
            o->held = 0;
        }
    }
}

static void *reader_main(void *arg)
{
    ring *p = arg;
    for (int64_t k = 0;; ++k) {
        const double tw = mdnl_now();
        slot *s;
        pthread_mutex_lock(&p->mu);
        for (;;) {
            s = p->sized ? slot_at(p, k) : &p->slots[0];
            if (p->abort || (s->state == SLOT_FREE && may_read(p)))
                break;
            pthread_cond_wait(&p->cv, &p->mu);
        }
        if (p->abort) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        if (p->sized)
            trim_free_slots(p, s, k);
        /* A slot filled during the backend's start-up holds malloc'ed
         * positions; once the engine is up, it moves to the engine's memory. */
        const bool ready = p->engine_ready;
        const mdnl_frame_allocator *alloc = p->frame_alloc;
        pthread_mutex_unlock(&p->mu);
        double t0 = mdnl_now();
        p->t_read_blocked += t0 - tw;
        if (ready && s->f.pos_alloc != alloc) {
            mdnl_frame_free(&s->f);
            s->f.pos_alloc = alloc;
        }
        if (p->c->serialize_io)
            pthread_mutex_lock(&p->io);
        mdnl_status st = mdnl_frames_next(p->fs, &s->f);
        if (p->c->serialize_io)
            pthread_mutex_unlock(&p->io);
        const double t_this = mdnl_now() - t0;
        p->t_read += t_this;
        s->held = frame_bytes(&s->f);
        s->seq = k;
        s->early = 0;
        s->early_checked = false;
        if (k == 0)
            size_ring(p, st == MDNL_OK ? s->f.natoms : 0);
        if (st == MDNL_END) {
            set_slot(p, s, SLOT_END);
            return NULL;
        }
        s->verdict = st;
        if (st != MDNL_OK)
            snprintf(s->verdict_message, sizeof s->verdict_message, "%s", mdnl_last_error());
        pthread_mutex_lock(&p->mu);
        if (!p->engine_ready)
            p->t_read_startup += t_this;
        s->natoms = st == MDNL_OK ? s->f.natoms : 0;
        p->inflight++;
        p->inflight_atoms += s->natoms;
        s->state = SLOT_READ;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (st != MDNL_OK)
            return NULL;
    }
}

/* The slot's frame as the stream's: borrowed from the slot until its ticket
 * is collected. */
static mdnl_stream_frame stream_frame(const slot *s)
{
    const mdnl_frame *f = &s->f;
    const bool lattice = f->box.has_lattice;
    return (mdnl_stream_frame){
        .system = {f->natoms, f->pos, MDNL_FLOAT64, lattice ? &f->box.h[0][0] : NULL,
                   {lattice && f->box.pbc[0], lattice && f->box.pbc[1], lattice && f->box.pbc[2]}},
        .index = f->index,
        .species = f->species,
        .types = s->types,
    };
}

/* The host side of the slot's frame on the prepare thread (the stream's
 * prepare: CPU, the wrap and the grids; CUDA, the occupancy guard unless
 * check_early ran it), after the atoms' pair types of --pair-coeff. */
static mdnl_status prepare_slot(ring *p, slot *s, int flags)
{
    const mdnl_pipeline_config *c = p->c;
    const mdnl_frame *f = &s->f;
    if (c->energy && c->table) {
        if (s->types_cap < f->natoms + 1) {
            free(s->types);
            s->types_cap = 0;
            if (!(s->types = mdnl_malloc((size_t)(f->natoms + 1) * sizeof *s->types, "pair types")))
                return MDNL_ERR_RESOURCE;
            s->types_cap = f->natoms + 1;
        }
        mdnl_status st = mdnl_pair_table_types(c->table, c->input, f, s->types);
        if (st != MDNL_OK)
            return st;
    }
    const mdnl_stream_frame fr = stream_frame(s);
    return mdnl_stream_prepare(p->stream, (int)(s - p->slots), &fr, flags);
}

/* The occupancy guard (mdnl_stream_check) of the grids the compute stage
 * will lay out, from the frame's own doubles, on the prepare thread while
 * the backend starts: by the CPU stream of the same work. */
static mdnl_status check_slot(ring *p, slot *s)
{
    const mdnl_stream_frame fr = stream_frame(s);
    return mdnl_stream_check(p->guard, &fr);
}

/* During the backend's start-up (a CUDA start-up thread is running, so the
 * backend is likely CUDA): the occupancy guard of the frames the reader reads
 * meanwhile (at most the ring's first lap0 frames: none is freed before
 * the writer runs), so that the first frames are launched as soon as the
 * device is up. The prepare workers take the frames in order (early_next),
 * each marked running (early 1) then done (2) under mu. The verdict is kept
 * apart (early_verdict; a refusal's message already in verdict_message) and
 * used only if the backend is CUDA; on the CPU prepare_slot guards the frame
 * itself. Returns the busy seconds. */
static double check_early(ring *p)
{
    double busy = 0;
    if (!p->speculate)
        return busy;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        slot *s = NULL;
        while (!p->abort && !p->engine_ready) {
            if (p->sized && p->early_next < p->lap0) {
                slot *t = &p->slots[p->early_next];
                if (t->state == SLOT_END && t->seq == p->early_next)
                    break;
                if (t->state == SLOT_READ && t->seq == p->early_next) {
                    s = t;
                    break;
                }
            }
            pthread_cond_wait(&p->cv, &p->mu);
        }
        if (!s)
            break;
        p->early_next++;
        s->early = 1;
        pthread_mutex_unlock(&p->mu);
        if (s->verdict == MDNL_OK) {
            const double t0 = mdnl_now();
            s->early_verdict = check_slot(p, s);
            if (s->early_verdict != MDNL_OK)
                snprintf(s->verdict_message, sizeof s->verdict_message, "%s", mdnl_last_error());
            s->early_checked = true;
            busy += mdnl_now() - t0;
        }
        pthread_mutex_lock(&p->mu);
        s->early = 2;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return busy;
}

/* Takes the next frame for a prepare worker, waiting until it is read (and
 * not being checked early); NULL when the workers stop (the end, a frame's
 * error before it, an abort). */
static slot *prepare_take(ring *p)
{
    pthread_mutex_lock(&p->mu);
    const int64_t k = p->prep_next++;
    slot *s = NULL;
    while (!p->abort && k < p->prep_stop) {
        if (!p->sized) {
            pthread_cond_wait(&p->cv, &p->mu);
            continue;
        }
        slot *t = slot_at(p, k);
        if (t->state == SLOT_END && t->seq == k) {
            p->prep_stop = k < p->prep_stop ? k : p->prep_stop;
            pthread_cond_broadcast(&p->cv);
            break;
        }
        if (t->state == SLOT_READ && t->seq == k && t->early != 1) {
            s = t;
            break;
        }
        pthread_cond_wait(&p->cv, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return s;
}

/* A prepare worker: the stream's prepare of each frame (prepare_slot): on
 * the CPU backend the wrap; on CUDA, where the stream's submit wraps each
 * frame on the device, the occupancy guard (unless check_early ran it).
 * Several workers take the read frames in order and finish them in any
 * order (the compute stage takes them in order). A frame's verdict stays in
 * its slot (the compute stage raises it); after a failure no worker takes a
 * later frame. */
static void *prepare_main(void *arg)
{
    ring *p = arg;
#ifdef _OPENMP
    /* the wrap's OpenMP teams (mdnl_stream_prepare runs on the calling thread's): half the threads (--threads, else
     * the cores) shared by the workers, leaving the rest to the reader,
     * compute and writer threads and the CUDA driver (idle OpenMP threads
     * spin for a while and would slow them). */
    int procs = mdnl_threads(p->c->opts), team = procs >= 4 ? procs / 2 / p->nprepare : 1;
    team = team < 1 ? 1 : team;
    /* OMP_NUM_THREADS caps it (MPI ranks sharing a node's cores set it) */
    omp_set_num_threads(team < omp_get_max_threads() ? team : omp_get_max_threads());
#endif
    double busy = check_early(p);
    /* which stage this is depends on the backend */
    pthread_mutex_lock(&p->mu);
    while (!p->abort && !p->engine_ready)
        pthread_cond_wait(&p->cv, &p->mu);
    const bool go = !p->abort;
    pthread_mutex_unlock(&p->mu);
    for (slot *s; go && (s = prepare_take(p));) {
        double t0 = mdnl_now();
        if (s->verdict == MDNL_OK) { /* else the reader's error, passed on */
            const bool early = p->dev_check && s->early_checked;
            if (early && s->early_verdict != MDNL_OK) {
                s->verdict = s->early_verdict; /* its message is in place */
            } else {
                s->verdict = prepare_slot(p, s, early ? MDNL_STREAM_CHECKED : 0);
                if (s->verdict != MDNL_OK)
                    snprintf(s->verdict_message, sizeof s->verdict_message, "%s", mdnl_last_error());
            }
        }
        s->early_checked = false;
        busy += mdnl_now() - t0;
        pthread_mutex_lock(&p->mu);
        if (s->verdict != MDNL_OK && s->seq < p->prep_stop)
            p->prep_stop = s->seq;
        s->state = SLOT_PREPARED;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
    pthread_mutex_lock(&p->mu);
    p->t_prepare += busy;
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void *writer_main(void *arg)
{
    ring *p = arg;
    for (int64_t k = 0;; ++k) {
        slot *s = slot_at(p, k);
        int seen = wait_slot(p, s, SLOT_COMPUTED, true);
        if (seen < 0 || seen == SLOT_END)
            return NULL;
        double t0 = mdnl_now();
        mdnl_status st = MDNL_OK;
        if (p->sink) {
            mdnl_frame_result r = {
                .index = s->f.index,
                .step = s->f.step,
                .natoms = s->f.natoms,
                .time = s->f.has_time ? s->f.time : (double)s->f.step, /* as the H5MD writers: dt = 1 */
                .has_energy = s->has_energy,
                .energy = s->energy,
                .list = p->c->neighbors ? &s->list : NULL,
                .shifts = p->c->neighbors && p->c->shifts ? s->S : NULL,
                .vectors = p->c->neighbors && p->c->vectors ? s->D : NULL,
                .counts = p->c->hist && !p->c->read_only ? s->counts : NULL,
                .na = s->na,
                .nb = s->nb,
                .volume = s->volume,
            };
            if (p->c->serialize_io)
                pthread_mutex_lock(&p->io);
            st = p->sink(p->user, &r);
            if (p->c->serialize_io)
                pthread_mutex_unlock(&p->io);
        }
        p->t_write += mdnl_now() - t0;
        if (st != MDNL_OK) {
            fail(p, st);
            return NULL;
        }
        p->t_last_done = mdnl_now() - p->t_start;
        if (k == 0)
            p->t_first_done = p->t_last_done;
        if (p->progress)
            mdnl_progress_step(p->progress);
        pthread_mutex_lock(&p->mu);
        p->inflight--;
        p->inflight_atoms -= s->natoms;
        s->state = SLOT_FREE;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
    }
}

/* The compute stage's state: what lives on the calling thread. */
typedef struct compute {
    mdnl_context *ctx;
    mdnl_stream *stream;
    int32_t ids[MDNL_MAX_RDF_PAIRS][2];
    int64_t nhist; /* histograms of a frame */
} compute;

/* Frames are deferred by one: launch_frame submits frame k to the stream
 * (CUDA: the device wrap, the list, and the energy and histogram queued),
 * collect_frame collects it and books the results, so that the device works
 * on frame k while the host submits frame k+1. */
static mdnl_status launch_frame(const mdnl_pipeline_config *c, compute *cs, slot *s, int ticket)
{
    mdnl_stream_frame fr = stream_frame(s);
    mdnl_status st;
    /* the species pairs by name, as this frame's species ids */
    if (c->hist && (st = mdnl_pair_names_resolve(c->pairs, c->input, &s->f, cs->ids)) != MDNL_OK)
        return st;
    fr.pairs = (const int32_t(*)[2])cs->ids;
    return mdnl_stream_submit(cs->stream, ticket, &fr);
}

static mdnl_status collect_frame(const mdnl_pipeline_config *c, compute *cs, slot *s, int ticket, mdnl_rdf_accum *acc,
                                 mdnl_pipeline_stats *stats)
{
    mdnl_stream_result res;
    mdnl_status st = mdnl_stream_collect(cs->stream, ticket, &res);
    if (st != MDNL_OK)
        return st;
    if (c->neighbors) {
        const mdnl_neighbor_list *l = &res.list;
        s->list = (mdnl_nlist){l->n, l->npairs, (int64_t *)l->offsets, (int32_t *)l->indices, (float *)l->distances,
                               0, 0};
        s->S = (const int32_t(*)[3])l->shifts;
        s->D = (const double(*)[3])l->vectors;
        stats->pairs += l->npairs;
    }
    s->has_energy = c->energy;
    if (c->energy) {
        const double total = res.energy;
        s->energy = total;
        if (!stats->nframes)
            stats->e_first = total;
        stats->e_last = total;
        stats->e_sum += total;
        stats->e_min = total < stats->e_min ? total : stats->e_min;
        stats->e_max = total > stats->e_max ? total : stats->e_max;
    }
    if (c->hist) {
        s->counts = res.counts;
        s->na = res.na;
        s->nb = res.nb;
        s->volume = res.volume;
        if (acc && (st = mdnl_rdf_accum_add(acc, res.counts, res.na, res.nb, res.volume)) != MDNL_OK)
            return st;
        for (int64_t k = 0; k < cs->nhist * c->bins; ++k)
            stats->pairs_counted += res.counts[k];
    }
    stats->nframes++;
    mdnl_atoms_range_add(&stats->atoms, s->f.natoms);
    return MDNL_OK;
}

static void *pinned_alloc(size_t bytes, const char *what, void *ctx)
{
    void *p = NULL;
    (void)what;
    return mdnl_host_alloc(ctx, bytes, &p) == MDNL_OK ? p : NULL;
}

static void pinned_free(void *p, void *ctx) { mdnl_host_free(ctx, p); }

/* The stream of the configured work on ctx (names the input in messages). */
static mdnl_status stream_of(const mdnl_pipeline_config *c, mdnl_context *ctx, int tickets, mdnl_stream **out)
{
    mdnl_pair_params params[MDNL_ENERGY_MAX_TYPES * MDNL_ENERGY_MAX_TYPES] = {0}; /* read even without energy */
    double cutoffs[MDNL_ENERGY_MAX_TYPES * MDNL_ENERGY_MAX_TYPES] = {0};
    if (c->energy)
        mdnl_pair_params_of(c->table ? c->table->p : &c->pot, c->table ? c->table->ntypes : 1, params, cutoffs);
    const mdnl_stream_options so = {
        .tickets = tickets,
        .source = c->input,
        .neighbors = c->neighbors,
        .flags = (c->list == MDNL_LIST_FULL ? MDNL_NEIGHBORS_FULL : MDNL_NEIGHBORS_HALF) |
                 (c->shifts ? MDNL_NEIGHBORS_SHIFTS : 0) | (c->vectors ? MDNL_NEIGHBORS_VECTORS : 0),
        .cutoff = c->cutoff,
        .energy = c->energy,
        .params = params[0],
        .ntypes = c->energy && c->table ? c->table->ntypes : 0,
        .type_params = params,
        .type_cutoffs = cutoffs,
        .histogram = c->hist,
        .r_max = c->rmax,
        .bins = c->bins,
        .npairs = c->hist ? c->pairs->n : 0,
    };
    return mdnl_stream_create(ctx, &so, out);
}

/* ---- the backend's start-up ---- */

static void *start_main(void *arg)
{
    mdnl_context_starter *s = arg;
    s->status = mdnl_context_of(s->opts, &s->ctx);
    if (s->status != MDNL_OK)
        snprintf(s->message, sizeof s->message, "%s", mdnl_last_error());
    return NULL;
}

void mdnl_context_start_begin(mdnl_context_starter *s, const mdnl_opts *o)
{
    memset(s, 0, sizeof *s);
    s->opts = o;
    s->t_begin = mdnl_now();
    if (o->backend == MDNL_BACKEND_CPU || !mdnl_cuda_built()) /* nothing slow to start */
        return;
    pthread_t *th = malloc(sizeof *th);
    if (th && pthread_create(th, NULL, start_main, s) == 0)
        s->thread = th;
    else
        free(th);
}

void mdnl_context_start_join(mdnl_context_starter *s)
{
    if (!s->thread)
        return;
    pthread_join(*(pthread_t *)s->thread, NULL);
    free(s->thread);
    s->thread = NULL;
    s->joined = true;
    s->seconds = mdnl_now() - s->t_begin;
}

void mdnl_context_start_end(mdnl_context_starter *s)
{
    mdnl_context_start_join(s);
    mdnl_context_free(s->ctx);
    s->ctx = NULL;
}

/* The context of the run: the start-up thread's, or made now. It stays the
 * starter's when there is one (the caller frees it after closing its input,
 * whose frames may hold pinned memory of it); *owned says the pipeline
 * frees it itself. */
static mdnl_status take_context(const mdnl_pipeline_config *c, mdnl_context **out, bool *owned)
{
    mdnl_context_starter *s = c->starter;
    *owned = false;
    if (s)
        mdnl_context_start_join(s);
    if (s && s->joined) {
        *out = s->ctx;
        if (s->status != MDNL_OK)
            return mdnl_error(s->status, "%s", s->message);
        return MDNL_OK;
    }
    mdnl_status st = mdnl_context_of(c->opts, out);
    if (st == MDNL_OK && s)
        s->ctx = *out;
    else
        *owned = st == MDNL_OK;
    return st;
}

mdnl_status mdnl_pipeline_run(const mdnl_pipeline_config *c, mdnl_frames *fs, mdnl_progress *progress,
                              mdnl_pipeline_sink sink, void *user, mdnl_rdf_accum *acc, mdnl_pipeline_stats *stats)
{
    const double t_start = mdnl_now();
    memset(stats, 0, sizeof *stats);
    stats->e_min = INFINITY;
    stats->e_max = -INFINITY;
    compute cs;
    memset(&cs, 0, sizeof cs);
    mdnl_status st = MDNL_OK;
    ring *p = mdnl_calloc(1, sizeof *p, "pipeline");
    if (!p) {
        if (c->starter)
            mdnl_context_start_join(c->starter);
        return MDNL_ERR_RESOURCE;
    }
    p->c = c;
    p->t_start = t_start;
    p->fs = fs;
    p->progress = progress;
    p->sink = sink;
    p->user = user;
    p->min_slots = c->nslots < 2 ? 2 : c->nslots > 4 ? 4 : c->nslots;
    /* every slot keeps a neighbor list: no deeper than asked */
    p->max_slots = c->neighbors ? p->min_slots : MAX_SLOTS;
    p->nslots = p->lap0 = p->min_slots; /* until the first frame sizes the ring */
    p->prep_stop = INT64_MAX;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_mutex_init(&p->io, NULL);

    /* The reader and the prepare workers start first: the reader fills the
     * ring while the backend starts (the CUDA start-up, begun by the caller
     * on a thread of its own, and the engine), into ordinary memory until the
     * engine says where frames go (reader_main: pinned memory on CUDA, which
     * needs the context); the prepare workers guard those frames meanwhile
     * (check_early). */
    const bool work = !c->read_only && (c->neighbors || c->energy || c->hist);
    /* the prepare workers and their OpenMP teams: the wrap on the CPU, the
     * occupancy guard on CUDA (which they begin during the start-up); one a
     * four threads (--threads, else the cores) */
    const int procs = mdnl_threads(c->opts);
    p->nprepare = procs / 4 < 1 ? 1 : procs / 4 > MAX_PREPARE ? MAX_PREPARE : procs / 4;
    p->speculate = work && c->starter && c->starter->thread;
    mdnl_context *guard_ctx = NULL;
    if (p->speculate) { /* the guard of check_early: a CPU stream of the same work */
        mdnl_opts cpu = *c->opts;
        cpu.backend = MDNL_BACKEND_CPU;
        if (mdnl_context_of(&cpu, &guard_ctx) != MDNL_OK || stream_of(c, guard_ctx, 1, &p->guard) != MDNL_OK)
            p->speculate = false; /* the real stream reports what is wrong */
        mdnl_clear_error();
    }
    bool ctx_owned = false; /* else the starter's (take_context) */
    pthread_t reader, preparer[MAX_PREPARE], writer;
    int have_preparer = 0;
    bool have_reader = false, have_writer = false;
    if (pthread_create(&reader, NULL, reader_main, p) != 0) {
        fail(p, mdnl_error(MDNL_ERR_RESOURCE, "cannot start the reader thread"));
    } else {
        have_reader = true;
        for (; work && have_preparer < p->nprepare; ++have_preparer)
            if (pthread_create(&preparer[have_preparer], NULL, prepare_main, p) != 0) {
                fail(p, mdnl_error(MDNL_ERR_RESOURCE, "cannot start the prepare thread"));
                break;
            }
    }
    if (!c->read_only) {
        if ((st = take_context(c, &cs.ctx, &ctx_owned)) == MDNL_OK)
            st = stream_of(c, cs.ctx, p->max_slots, &cs.stream); /* a ticket a slot */
        if (st != MDNL_OK)
            fail(p, st);
    } else if (c->starter) {
        mdnl_context_start_join(c->starter);
    }
    stats->t_init = mdnl_now() - t_start;
    stats->t_startup = c->starter && c->starter->seconds > 0 ? c->starter->seconds : stats->t_init;
    const bool cuda = cs.ctx && mdnl_context_backend(cs.ctx) == MDNL_COMPUTE_CUDA;
    /* CUDA without --pair-coeff: frames are wrapped on the device by the stream's submit */
    const bool dev_wrap = work && cuda && !c->table;
    stats->backend = c->read_only || !cs.ctx ? MDNL_BACKEND_CPU : mdnl_backend_of(cs.ctx);
    if (c->hist)
        cs.nhist = c->pairs->n > 0 ? c->pairs->n : 1;
    /* CUDA: from now on the reader reads straight into pinned memory, which
     * the wrap uploads by DMA. The allocator lives in the starter, beside
     * the context it allocates from: the input may hold frames of it until
     * the caller closes it. Without a starter frames stay in malloc'ed
     * memory (uploads then go through a staging copy). */
    const mdnl_frame_allocator *pinned = NULL;
    if (dev_wrap && c->starter && !ctx_owned) {
        c->starter->pinned = (mdnl_frame_allocator){pinned_alloc, pinned_free, cs.ctx};
        pinned = &c->starter->pinned;
    }
    pthread_mutex_lock(&p->mu);
    p->stream = cs.stream;
    p->dev_check = dev_wrap;
    p->frame_alloc = pinned;
    p->engine_ready = true;
    pthread_cond_broadcast(&p->cv);
    const bool started = !p->abort;
    pthread_mutex_unlock(&p->mu);
    if (started) {
        if (pthread_create(&writer, NULL, writer_main, p) != 0)
            fail(p, mdnl_error(MDNL_ERR_RESOURCE, "cannot start the writer thread"));
        else
            have_writer = true;
    }

    /* The compute stage, on this thread (it owns the stream). */
    double t_compute = 0, t_collect = 0, t_starved = 0;
    slot *pend = NULL; /* the launched frame not yet collected */
    int pend_ticket = 0;
    /* Without a prepare thread, frames come straight from the reader. */
    const enum slot_state ready = have_preparer ? SLOT_PREPARED : SLOT_READ;
    for (int64_t k = 0; have_writer; ++k) {
        slot *s = slot_at(p, k);
        const double tw = mdnl_now();
        int seen = wait_slot(p, s, ready, true);
        if (seen < 0)
            break;
        double t0 = mdnl_now();
        t_starved += t0 - tw;
        const int ticket = (int)(s - p->slots); /* the slot's: its results live until the slot is prepared again */
        mdnl_status cst = MDNL_OK;
        if (seen != SLOT_END && s->verdict != MDNL_OK) /* the reader's or the prepare stage's, in frame order */
            cst = mdnl_error(s->verdict, "%s", s->verdict_message);
        else if (seen != SLOT_END && !c->read_only)
            cst = launch_frame(c, &cs, s, ticket);
        if (pend) {
            /* Frame k-1 is collected even when frame k failed to launch: its
             * own error (a non-finite coordinate) comes first. */
            char launch_msg[2048];
            if (cst != MDNL_OK)
                snprintf(launch_msg, sizeof launch_msg, "%s", mdnl_last_error());
            const double tc = mdnl_now();
            mdnl_status pst = collect_frame(c, &cs, pend, pend_ticket, acc, stats);
            t_collect += mdnl_now() - tc;
            if (pst != MDNL_OK)
                cst = pst;
            else if (cst != MDNL_OK)
                mdnl_error(cst, "%s", launch_msg);
            else
                set_slot(p, pend, SLOT_COMPUTED);
        }
        pend = NULL;
        if (cst == MDNL_OK && seen != SLOT_END) {
            if (c->read_only) { /* nothing to wait for */
                stats->nframes++;
                mdnl_atoms_range_add(&stats->atoms, s->f.natoms);
                set_slot(p, s, SLOT_COMPUTED);
            } else {
                pend = s, pend_ticket = ticket;
            }
        }
        t_compute += mdnl_now() - t0;
        if (cst != MDNL_OK) {
            fail(p, cst);
            break;
        }
        if (seen == SLOT_END)
            break; /* the writer sees the end in the same slot after it drained the earlier ones */
    }
    if (have_reader)
        pthread_join(reader, NULL);
    for (int i = 0; i < have_preparer; ++i)
        pthread_join(preparer[i], NULL);
    if (have_writer)
        pthread_join(writer, NULL);

    if (p->abort) {
        st = p->status;
        mdnl_error(st, "%s", p->message);
    }
    stats->t_read = p->t_read;
    stats->t_read_blocked = p->t_read_blocked;
    stats->t_read_startup = p->t_read_startup;
    /* On CUDA the stream's submit wraps on the device: that counts as compute here. */
    stats->t_prepare = p->t_prepare;
    stats->t_first_done = p->t_first_done;
    stats->t_last_done = p->t_last_done;
    stats->t_compute = t_compute;
    stats->t_collect = t_collect;
    stats->t_starved = t_starved;
    stats->t_write = p->t_write;
    stats->t_wall = mdnl_now() - t_start;
    if (!stats->nframes)
        stats->e_min = stats->e_max = 0;
    /* After a failure device work may still read the frames: the stream waits for it before they go. */
    mdnl_stream_free(cs.stream);
    for (int k = 0; k < MAX_SLOTS; ++k) {
        mdnl_frame_free(&p->slots[k].f);
        free(p->slots[k].types);
    }
    mdnl_stream_free(p->guard);
    mdnl_context_free(guard_ctx);
    if (ctx_owned)
        mdnl_context_free(cs.ctx);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->io);
    free(p);
    return st;
}

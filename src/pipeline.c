/* pipeline.c — the streaming pipeline of `mdnl run` (see
 * pipeline.h for the threads, the ring and who owns what), plus the --pairs
 * helpers shared with `mdnl rdf`. */
#define _POSIX_C_SOURCE 200809L
#include "pipeline.h"

#include "engine.h"

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
    float (*pos4)[4]; /* wrapped float positions, by the prepare thread (CPU backend only) */
    int64_t pos_cap;
    mdnl_geom g_cut;  /* the grid for the neighbor/energy cutoff (when used) */
    mdnl_geom g_rmax; /* the grid for r_max (when hist) */
    mdnl_nlist list;  /* filled by compute, drained by the writer */
    int32_t (*S)[3];  /* config.shifts or vectors: the list's image shifts, */
    double (*D)[3];   /* and config.vectors its vectors, by compute */
    int64_t sd_cap;   /* entries S and D hold */
    double *e_host;   /* deferred frames: the energy total and the counts land here (engine host memory) */
    int32_t *types;   /* config.table: the atoms' pair types */
    int64_t types_cap;
    uint64_t *counts_host;
    bool has_energy;
    double energy;
    int64_t na[MDNL_MAX_RDF_PAIRS], nb[MDNL_MAX_RDF_PAIRS]; /* the frame's A and B atoms per histogram */
    double volume;                                         /* its RDF volume (0: open) */
    bool wrap_pending; /* CUDA: grids laid out before the wrap's t-range, settled when collected */
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
    const mdnl_engine *eng; /* for pinned host buffers */
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
        p->t_read += mdnl_now() - t0;
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

/* An input error (a non-finite coordinate) prefixed with the input's name. */
static mdnl_status input_prefixed(const mdnl_pipeline_config *c, mdnl_status st)
{
    if (st == MDNL_ERR_INPUT) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", mdnl_last_error());
        st = mdnl_error(st, "%s: %s", c->input, msg);
    }
    return st;
}

/* After a frame was wrapped for its first grid (the cutoff's, or r_max's
 * when only the histogram runs), on the host (prepare_slot) or the device
 * (prepare_device): the r_max grid from it when both are needed, and an
 * input error prefixed with the input's name. */
static mdnl_status grids_done(const mdnl_pipeline_config *c, slot *s, mdnl_status st)
{
    if (st == MDNL_OK && (c->neighbors || c->energy) && c->hist)
        st = mdnl_geom_regrid(&s->g_cut, c->rmax, &s->g_rmax);
    return input_prefixed(c, st);
}

/* Wraps the frame's positions once (into the slot's pinned buffer) and lays
 * out the grids the compute stage needs: the cutoff's and r_max's. */
static mdnl_status prepare_slot(ring *p, slot *s)
{
    const mdnl_pipeline_config *c = p->c;
    const mdnl_frame *f = &s->f;
    if (s->pos_cap < f->natoms + 1) {
        mdnl_engine_host_free(p->eng, s->pos4);
        s->pos_cap = 0;
        if (!(s->pos4 = mdnl_engine_host_alloc(p->eng, (size_t)(f->natoms + 1) * sizeof *s->pos4, "float positions")))
            return MDNL_ERR_RESOURCE;
        s->pos_cap = f->natoms + 1;
    }
    const bool cut = c->neighbors || c->energy;
    mdnl_status st =
        grids_done(c, s, mdnl_geom_prepare(f, cut ? c->cutoff : c->rmax, cut ? &s->g_cut : &s->g_rmax, s->pos4));
    /* mdnl_geom_prepare guarded its own grid; the r_max grid regridded from it is guarded here */
    if (st == MDNL_OK && cut && c->hist)
        st = input_prefixed(c, mdnl_work_check_cells(&s->g_rmax, (const float(*)[4])s->pos4, NULL));
    return st;
}

/* CUDA: the occupancy guard (geometry.h) of the grids the compute stage
 * will lay out on the device, from the frame's own doubles, here on the
 * prepare thread while the device works on earlier frames (on the compute
 * thread it cost more than the frame's kernels). mdnl_geom_layout gives the
 * grids the device wrap gives; a frame it cannot lay out (a bad cell, a
 * non-finite coordinate) is left to the compute stage, which reports it. */
static mdnl_status check_slot(ring *p, slot *s)
{
    const mdnl_pipeline_config *c = p->c;
    const mdnl_frame *f = &s->f;
    const bool cut = c->neighbors || c->energy;
    mdnl_geom g_cut, g_rmax;
    if (mdnl_geom_layout(f, cut ? c->cutoff : c->rmax, cut ? &g_cut : &g_rmax, cut && c->hist ? c->rmax : 0,
                         &g_rmax) != MDNL_OK)
        return MDNL_OK;
    mdnl_status st = MDNL_OK;
    if (cut)
        st = mdnl_work_check_cells(&g_cut, NULL, (const double(*)[3])f->pos);
    if (st == MDNL_OK && c->hist)
        st = mdnl_work_check_cells(&g_rmax, NULL, (const double(*)[3])f->pos);
    return input_prefixed(c, st);
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

/* A prepare worker: on the CPU backend it wraps each frame (prepare_slot);
 * on CUDA, where the compute stage wraps each frame on the device
 * (mdnl_engine_prepare_device), it runs the occupancy guard (check_slot).
 * Several workers take the read frames in order and finish them in any
 * order (the compute stage takes them in order). A frame's verdict stays in
 * its slot (the compute stage raises it); after a failure no worker takes a
 * later frame. */
static void *prepare_main(void *arg)
{
    ring *p = arg;
#ifdef _OPENMP
    /* mdnl_geom_prepare's OpenMP teams: half the threads (--threads, else
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
            if (p->dev_check && s->early_checked)
                s->verdict = s->early_verdict; /* its message is in place */
            else if (p->dev_check)
                s->verdict = check_slot(p, s);
            else
                s->verdict = prepare_slot(p, s);
            if (s->verdict != MDNL_OK && !(p->dev_check && s->early_checked))
                snprintf(s->verdict_message, sizeof s->verdict_message, "%s", mdnl_last_error());
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
                .shifts = p->c->neighbors && p->c->shifts ? (const int32_t(*)[3])s->S : NULL,
                .vectors = p->c->neighbors && p->c->vectors ? (const double(*)[3])s->D : NULL,
                .counts = p->c->hist && !p->c->read_only ? s->counts_host : NULL,
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
    mdnl_engine eng;
    bool dev_wrap; /* CUDA: frames are wrapped on the device by this stage */
    int32_t ids[MDNL_MAX_RDF_PAIRS][2];
    mdnl_hist_spec spec;
} compute;

/* CUDA: the t-range and first non-finite atom of a frame whose first grid
 * was laid out before them (waits for the wrap if it is still running): a
 * non-finite coordinate is the frame's input error; the grid gets its real
 * t-range (and must not change: mdnl_geom_settle). The r_max grid, when
 * both are needed, is settled the same way when it was laid out early too
 * (rmax_early: the frame's kernels already ran on it), else regridded. */
static mdnl_status settle_wrap(const mdnl_pipeline_config *c, compute *cs, slot *s, int ticket, bool rmax_early)
{
    const bool cut = c->neighbors || c->energy;
    double tlo[3], thi[3];
    int64_t bad = 0;
    s->wrap_pending = false;
    mdnl_status st = mdnl_engine_wrap_result(&cs->eng, ticket, tlo, thi, &bad);
    if (st == MDNL_OK)
        st = mdnl_geom_settle(&s->f, cut ? c->cutoff : c->rmax, cut ? &s->g_cut : &s->g_rmax, tlo, thi, bad);
    if (st == MDNL_OK && cut && c->hist)
        st = rmax_early ? mdnl_geom_settle(&s->f, c->rmax, &s->g_rmax, tlo, thi, bad)
                        : mdnl_geom_regrid(&s->g_cut, c->rmax, &s->g_rmax);
    return input_prefixed(c, st);
}

/* CUDA: wraps the slot's frame on the device and lays out its grids (what
 * prepare_slot does on the host for the CPU backend). On a frame periodic
 * on every axis neither waits for the wrap: the frame is settled when it is
 * collected (settle_wrap), unless the r_max grid could still depend on the
 * t-range, which is then waited for here. */
static mdnl_status prepare_device(const mdnl_pipeline_config *c, compute *cs, slot *s, int ticket)
{
    const bool cut = c->neighbors || c->energy;
    double bound = 0;
    mdnl_status st = mdnl_engine_prepare_device(&cs->eng, &s->f, cut ? c->cutoff : c->rmax,
                                                cut ? &s->g_cut : &s->g_rmax, ticket, &bound);
    if (st != MDNL_OK || bound == 0)
        return grids_done(c, s, st);
    s->wrap_pending = true;
    if (!(cut && c->hist))
        return MDNL_OK;
    if ((st = mdnl_geom_regrid(&s->g_cut, c->rmax, &s->g_rmax)) != MDNL_OK)
        return input_prefixed(c, st);
    if (mdnl_geom_early_certain(&s->g_rmax, c->rmax, bound))
        return MDNL_OK;
    /* rare: r_max's grid sits on a boundary of the slack; wait for it */
    return settle_wrap(c, cs, s, ticket, false);
}

/* --pair-coeff: the frame's energy with per-pair parameters, now, into
 * e_host (host positions: the table runs without a device wrap). */
static mdnl_status table_energy(const mdnl_pipeline_config *c, compute *cs, slot *s, const float (*pos4)[4])
{
    const mdnl_frame *f = &s->f;
    if (s->types_cap < f->natoms + 1) {
        free(s->types);
        s->types_cap = 0;
        if (!(s->types = mdnl_malloc((size_t)(f->natoms + 1) * sizeof *s->types, "pair types")))
            return MDNL_ERR_RESOURCE;
        s->types_cap = f->natoms + 1;
    }
    mdnl_status st = mdnl_pair_table_types(c->table, c->input, f, s->types);
    if (st == MDNL_OK)
        st = mdnl_engine_energy_table(&cs->eng, &s->g_cut, pos4, s->types, c->table, s->e_host, NULL);
    return st;
}

/* The image shifts and vectors of the slot's list (config.shifts or
 * vectors), right after its build: on CUDA they come from the list's device
 * copy, which the next frame's build replaces. A frame laid out before its
 * wrap's t-range is settled first (the list build waited for the wrap), so
 * that a non-finite coordinate is reported as the frame's input error. */
static mdnl_status list_shifts(const mdnl_pipeline_config *c, compute *cs, slot *s, int ticket,
                               const float (*pos4)[4])
{
    mdnl_status st;
    if (s->wrap_pending && (st = settle_wrap(c, cs, s, ticket, true)) != MDNL_OK)
        return st;
    const int64_t n = s->list.npairs > 0 ? s->list.npairs : 1;
    if (!s->S || n > s->sd_cap) {
        free(s->S);
        free(s->D);
        s->D = NULL;
        s->sd_cap = 0;
        if (!(s->S = mdnl_malloc((size_t)n * sizeof *s->S, "image shifts")) ||
            (c->vectors && !(s->D = mdnl_malloc((size_t)n * sizeof *s->D, "pair vectors"))))
            return MDNL_ERR_RESOURCE;
        s->sd_cap = n;
    }
    return mdnl_engine_shifts(&cs->eng, &s->f, &s->g_cut, pos4, c->list, &s->list, s->S, c->vectors ? s->D : NULL);
}

/* Frames are deferred by one: launch_frame wraps frame k on the device (on
 * CUDA), builds its list (when asked; synchronous) and queues its energy and histogram, collect_frame
 * waits for them and books the results, so the device works on frame k
 * while the host launches frame k+1. */
static mdnl_status launch_frame(const mdnl_pipeline_config *c, compute *cs, slot *s, int ticket,
                                mdnl_pipeline_stats *stats, double *t_prepare)
{
    const mdnl_frame *f = &s->f;
    mdnl_status st;
    if (cs->dev_wrap) {
        const double t0 = mdnl_now();
        st = prepare_device(c, cs, s, ticket);
        *t_prepare += mdnl_now() - t0;
        if (st != MDNL_OK)
            return st;
    }
    /* NULL: the device positions of prepare_device */
    const float(*pos4)[4] = cs->dev_wrap ? NULL : (const float(*)[4])s->pos4;
    if (c->neighbors) {
        if ((st = mdnl_check_list_memory(c->input, &s->g_cut, c->list, c->nslots > 1 ? c->nslots : 2)) != MDNL_OK ||
            (st = mdnl_engine_nlist(&cs->eng, &s->g_cut, pos4, c->opts->method, c->list, &s->list)) != MDNL_OK ||
            ((c->shifts || c->vectors) && (st = list_shifts(c, cs, s, ticket, pos4)) != MDNL_OK))
            return st;
        stats->pairs += s->list.npairs;
    }
    if (!c->energy && !c->hist)
        return MDNL_OK;
    if (c->hist) {
        const size_t nslots = (size_t)mdnl_hist_nhist(&cs->spec) * (size_t)cs->spec.bins;
        if (!s->counts_host &&
            !(s->counts_host = mdnl_engine_host_alloc(&cs->eng, nslots * sizeof *s->counts_host, "histogram")))
            return MDNL_ERR_RESOURCE;
        if ((st = mdnl_pair_names_resolve(c->pairs, c->input, f, cs->ids)) != MDNL_OK ||
            (st = mdnl_hist_spec_check(&cs->spec, &s->g_rmax, f->nspecies)) != MDNL_OK)
            return st;
    }
    if (c->energy && !s->e_host && !(s->e_host = mdnl_engine_host_alloc(&cs->eng, sizeof *s->e_host, "energy")))
        return MDNL_ERR_RESOURCE;
    if (c->energy && c->table && (st = table_energy(c, cs, s, pos4)) != MDNL_OK)
        return st;
    return mdnl_engine_launch(&cs->eng, ticket, pos4, &s->g_cut, c->energy && !c->table ? &c->pot : NULL, s->e_host,
                              &s->g_rmax, f->species, c->hist ? &cs->spec : NULL, s->counts_host);
}

static mdnl_status collect_frame(const mdnl_pipeline_config *c, compute *cs, slot *s, int ticket, mdnl_rdf_accum *acc,
                                 mdnl_pipeline_stats *stats)
{
    const mdnl_frame *f = &s->f;
    mdnl_status st;
    /* the frame's own input error first (a non-finite coordinate) */
    if (s->wrap_pending && (st = settle_wrap(c, cs, s, ticket, true)) != MDNL_OK)
        return st;
    if ((c->energy || c->hist) &&
        (st = mdnl_engine_collect(&cs->eng, ticket, c->energy && !c->table, c->hist)) != MDNL_OK)
        return st;
    s->has_energy = c->energy;
    if (c->energy) {
        const double total = *s->e_host;
        s->energy = total;
        if (!stats->nframes)
            stats->e_first = total;
        stats->e_last = total;
        stats->e_sum += total;
        stats->e_min = total < stats->e_min ? total : stats->e_min;
        stats->e_max = total > stats->e_max ? total : stats->e_max;
    }
    if (c->hist) {
        int64_t *na = s->na, *nb = s->nb;
        /* the ids are this frame's: species ids of a frame are fixed by its own symbol table */
        if ((st = mdnl_pair_names_resolve(c->pairs, c->input, f, cs->ids)) != MDNL_OK)
            return st;
        mdnl_hist_species_counts(&cs->spec, f->species, f->natoms, na, nb);
        const double volume =
            f->box.has_lattice && (f->box.pbc[0] || f->box.pbc[1] || f->box.pbc[2]) ? s->g_rmax.volume : 0.0;
        s->volume = volume;
        if (acc && (st = mdnl_rdf_accum_add(acc, s->counts_host, na, nb, volume)) != MDNL_OK)
            return st;
        for (int64_t k = 0; k < (int64_t)mdnl_hist_nhist(&cs->spec) * cs->spec.bins; ++k)
            stats->pairs_counted += s->counts_host[k];
    }
    stats->nframes++;
    mdnl_atoms_range_add(&stats->atoms, f->natoms);
    return MDNL_OK;
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
            mdnl_engine_start_join(c->starter);
        return MDNL_ERR_RESOURCE;
    }
    p->c = c;
    p->t_start = t_start;
    p->eng = &cs.eng;
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
    if (c->starter)
        mdnl_engine_start_join(c->starter);
    if (!c->read_only && (st = mdnl_engine_init(&cs.eng, c->opts)) != MDNL_OK)
        fail(p, st);
    const bool engine_up = !c->read_only && st == MDNL_OK;
    stats->t_init = mdnl_now() - t_start;
    stats->t_startup = c->starter && c->starter->seconds > 0 ? c->starter->seconds : stats->t_init;
    cs.dev_wrap = work && cs.eng.backend == MDNL_BACKEND_CUDA && !c->table;
    stats->backend = c->read_only ? MDNL_BACKEND_CPU : cs.eng.backend;
    if (c->hist)
        cs.spec = (mdnl_hist_spec){.r_max = c->rmax, .bins = c->bins, .npairs = c->pairs->n, .pairs = cs.ids};
    /* CUDA: from now on the reader reads straight into pinned memory, which
     * the wrap uploads by DMA. */
    pthread_mutex_lock(&p->mu);
    p->dev_check = cs.dev_wrap;
    p->frame_alloc = cs.dev_wrap ? mdnl_engine_frame_allocator(&cs.eng) : NULL;
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

    /* The compute stage, on this thread (it owns the engine). */
    double t_compute = 0, t_dev_prepare = 0, t_collect = 0, t_starved = 0;
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
        const int ticket = (int)(k % MDNL_ENGINE_TICKETS);
        mdnl_status cst = MDNL_OK;
        if (seen != SLOT_END && s->verdict != MDNL_OK) /* the reader's or the prepare stage's, in frame order */
            cst = mdnl_error(s->verdict, "%s", s->verdict_message);
        else if (seen != SLOT_END && !c->read_only)
            cst = launch_frame(c, &cs, s, ticket, stats, &t_dev_prepare);
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
    /* A failure may leave device work queued that writes into slot buffers. */
    if (p->abort && !c->read_only && engine_up)
        mdnl_engine_quiesce(&cs.eng);
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
    /* On CUDA the compute stage prepares (wraps on the device): its time
     * counts as prepare, not compute, so the stages' times stay disjoint. */
    stats->t_prepare = p->t_prepare + t_dev_prepare;
    t_compute -= t_dev_prepare;
    stats->t_first_done = p->t_first_done;
    stats->t_last_done = p->t_last_done;
    stats->t_compute = t_compute;
    stats->t_collect = t_collect;
    stats->t_starved = t_starved;
    stats->t_write = p->t_write;
    stats->t_wall = mdnl_now() - t_start;
    if (!stats->nframes)
        stats->e_min = stats->e_max = 0;
    for (int k = 0; k < MAX_SLOTS; ++k) {
        mdnl_frame_free(&p->slots[k].f);
        mdnl_engine_host_free(&cs.eng, p->slots[k].pos4);
        mdnl_engine_host_free(&cs.eng, p->slots[k].e_host);
        mdnl_engine_host_free(&cs.eng, p->slots[k].counts_host);
        mdnl_nlist_free(&p->slots[k].list);
        free(p->slots[k].types);
        free(p->slots[k].S);
        free(p->slots[k].D);
    }
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->io);
    free(p);
    mdnl_engine_free(&cs.eng);
    return st;
}

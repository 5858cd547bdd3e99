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
    p->n = 0;
    while (*s) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        const char *dash = memchr(s, '-', len);
        if (!dash || dash == s || dash == s + len - 1 || memchr(dash + 1, '-', len - (size_t)(dash - s) - 1))
            return mdnl_error(MDNL_ERR_USAGE, "--pairs: expected A-B species pairs separated by commas, got \"%.*s\"",
                              (int)len, s);
        size_t la = (size_t)(dash - s), lb = len - la - 1;
        if (la >= MDNL_SYMBOL_LEN || lb >= MDNL_SYMBOL_LEN)
            return mdnl_error(MDNL_ERR_USAGE, "--pairs: species name too long in \"%.*s\"", (int)len, s);
        if (p->n == MDNL_MAX_RDF_PAIRS)
            return mdnl_error(MDNL_ERR_USAGE, "--pairs: at most %d pairs", MDNL_MAX_RDF_PAIRS);
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
            return mdnl_error(MDNL_ERR_USAGE, "--pairs: trailing comma");
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
                              "%s: frame %lld: expected species %s for --pairs %s, found none (the frame has %s)",
                              input, (long long)f->index, ids[p][0] < 0 ? pn->a[p] : pn->b[p], pn->labels[p],
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
    uint64_t *counts_host;
    bool has_energy;
    double energy;
    int64_t na[MDNL_MAX_RDF_PAIRS], nb[MDNL_MAX_RDF_PAIRS]; /* the frame's A and B atoms per histogram */
    double volume;                                         /* its RDF volume (0: open) */
    bool wrap_pending; /* CUDA: grids laid out before the wrap's t-range, settled when collected */
} slot;

#define MAX_SLOTS 4

typedef struct ring {
    const mdnl_pipeline_config *c;
    const mdnl_engine *eng; /* for pinned host buffers */
    mdnl_frames *fs;
    mdnl_progress *progress;
    mdnl_pipeline_sink sink;
    void *user;
    slot slots[MAX_SLOTS];
    int nslots;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_mutex_t io; /* serialize_io: around reads and sink calls */
    bool abort;
    mdnl_status status;
    char message[2048];
    double t_read, t_prepare, t_write;         /* written by their own thread, read after join */
    double t_read_blocked;                     /* the reader waiting for a free slot */
    double t_start, t_first_done, t_last_done; /* writer: when the first and the last frame were drained */
} ring;

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

static void *reader_main(void *arg)
{
    ring *p = arg;
    for (int64_t k = 0;; ++k) {
        slot *s = &p->slots[k % p->nslots];
        const double tw = mdnl_now();
        if (wait_slot(p, s, SLOT_FREE, false) < 0)
            return NULL;
        double t0 = mdnl_now();
        p->t_read_blocked += t0 - tw;
        if (p->c->serialize_io)
            pthread_mutex_lock(&p->io);
        mdnl_status st = mdnl_frames_next(p->fs, &s->f);
        if (p->c->serialize_io)
            pthread_mutex_unlock(&p->io);
        p->t_read += mdnl_now() - t0;
        if (st == MDNL_END) {
            set_slot(p, s, SLOT_END);
            return NULL;
        }
        if (st != MDNL_OK) {
            fail(p, st);
            return NULL;
        }
        set_slot(p, s, SLOT_READ);
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
    return grids_done(c, s, mdnl_geom_prepare(f, cut ? c->cutoff : c->rmax, cut ? &s->g_cut : &s->g_rmax, s->pos4));
}

/* The prepare thread runs on the CPU backend only: on CUDA the compute
 * stage wraps each frame on the device (mdnl_engine_prepare_device). */
static void *prepare_main(void *arg)
{
    ring *p = arg;
#ifdef _OPENMP
    /* mdnl_geom_prepare's OpenMP team: half the threads (--threads, else
     * the cores), leaving the rest to the reader, compute and writer threads
     * and the CUDA driver (idle OpenMP threads spin for a while and would
     * slow them). */
    int procs = mdnl_threads(p->c->opts), team = procs >= 4 ? procs / 2 : 1;
    /* OMP_NUM_THREADS caps it (MPI ranks sharing a node's cores set it) */
    omp_set_num_threads(team < omp_get_max_threads() ? team : omp_get_max_threads());
#endif
    const bool work = !p->c->read_only && (p->c->neighbors || p->c->energy || p->c->hist);
    for (int64_t k = 0;; ++k) {
        slot *s = &p->slots[k % p->nslots];
        int seen = wait_slot(p, s, SLOT_READ, true);
        if (seen < 0 || seen == SLOT_END)
            return NULL;
        double t0 = mdnl_now();
        mdnl_status st = work ? prepare_slot(p, s) : MDNL_OK;
        p->t_prepare += mdnl_now() - t0;
        if (st != MDNL_OK) {
            fail(p, st);
            return NULL;
        }
        set_slot(p, s, SLOT_PREPARED);
    }
}

static void *writer_main(void *arg)
{
    ring *p = arg;
    for (int64_t k = 0;; ++k) {
        slot *s = &p->slots[k % p->nslots];
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
        set_slot(p, s, SLOT_FREE);
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
    /* The occupancy guard (geometry.h) for the grids mdnl_geom_prepare did
     * not check: a device-wrapped frame's (from the frame's own positions),
     * and the r_max grid regridded from the cutoff's. */
    const bool cut = c->neighbors || c->energy;
    if (cs->dev_wrap && cut && (st = mdnl_work_check_cells(&s->g_cut, NULL, f->pos)) != MDNL_OK)
        return input_prefixed(c, st);
    if (c->hist && (cs->dev_wrap || cut) && (st = mdnl_work_check_cells(&s->g_rmax, pos4, f->pos)) != MDNL_OK)
        return input_prefixed(c, st);
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
    return mdnl_engine_launch(&cs->eng, ticket, pos4, &s->g_cut, c->energy ? &c->pot : NULL, s->e_host, &s->g_rmax,
                              f->species, c->hist ? &cs->spec : NULL, s->counts_host);
}

static mdnl_status collect_frame(const mdnl_pipeline_config *c, compute *cs, slot *s, int ticket, mdnl_rdf_accum *acc,
                                 mdnl_pipeline_stats *stats)
{
    const mdnl_frame *f = &s->f;
    mdnl_status st;
    /* the frame's own input error first (a non-finite coordinate) */
    if (s->wrap_pending && (st = settle_wrap(c, cs, s, ticket, true)) != MDNL_OK)
        return st;
    if ((c->energy || c->hist) && (st = mdnl_engine_collect(&cs->eng, ticket, c->energy, c->hist)) != MDNL_OK)
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
    if (c->starter) /* the CUDA start-up began on a thread of its own while the caller opened the input */
        mdnl_engine_start_join(c->starter);
    if (!c->read_only && (st = mdnl_engine_init(&cs.eng, c->opts)) != MDNL_OK)
        return st;
    stats->t_init = mdnl_now() - t_start;
    stats->t_startup = c->starter && c->starter->seconds > 0 ? c->starter->seconds : stats->t_init;
    const bool work = !c->read_only && (c->neighbors || c->energy || c->hist);
    cs.dev_wrap = work && cs.eng.backend == MDNL_BACKEND_CUDA;
    const bool host_wrap = work && !cs.dev_wrap; /* the prepare thread and its OpenMP team */
    stats->backend = c->read_only ? MDNL_BACKEND_CPU : cs.eng.backend;
    if (c->hist)
        cs.spec = (mdnl_hist_spec){.r_max = c->rmax, .bins = c->bins, .npairs = c->pairs->n, .pairs = cs.ids};

    ring *p = mdnl_calloc(1, sizeof *p, "pipeline");
    if (!p) {
        mdnl_engine_free(&cs.eng);
        return MDNL_ERR_RESOURCE;
    }
    p->c = c;
    p->t_start = t_start;
    p->eng = &cs.eng;
    p->fs = fs;
    p->progress = progress;
    p->sink = sink;
    p->user = user;
    p->nslots = c->nslots < 2 ? 2 : c->nslots > MAX_SLOTS ? MAX_SLOTS : c->nslots;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    pthread_mutex_init(&p->io, NULL);
    /* CUDA: the reader reads straight into pinned memory, which the wrap
     * uploads by DMA. */
    for (int k = 0; k < MAX_SLOTS; ++k)
        p->slots[k].f.pos_alloc = cs.dev_wrap ? mdnl_engine_frame_allocator(&cs.eng) : NULL;

    pthread_t reader, preparer, writer;
    bool have_reader = false, have_preparer = false, have_writer = false;
    if (pthread_create(&reader, NULL, reader_main, p) != 0) {
        fail(p, mdnl_error(MDNL_ERR_RESOURCE, "cannot start the reader thread"));
    } else {
        have_reader = true;
        if (host_wrap && pthread_create(&preparer, NULL, prepare_main, p) != 0) {
            fail(p, mdnl_error(MDNL_ERR_RESOURCE, "cannot start the prepare thread"));
        } else {
            have_preparer = host_wrap;
            if (pthread_create(&writer, NULL, writer_main, p) != 0)
                fail(p, mdnl_error(MDNL_ERR_RESOURCE, "cannot start the writer thread"));
            else
                have_writer = true;
        }
    }

    /* The compute stage, on this thread (it owns the engine). */
    double t_compute = 0, t_dev_prepare = 0, t_collect = 0, t_starved = 0;
    slot *pend = NULL; /* the launched frame not yet collected */
    int pend_ticket = 0;
    /* Without a prepare thread, frames come straight from the reader. */
    const enum slot_state ready = have_preparer ? SLOT_PREPARED : SLOT_READ;
    for (int64_t k = 0; have_writer; ++k) {
        slot *s = &p->slots[k % p->nslots];
        const double tw = mdnl_now();
        int seen = wait_slot(p, s, ready, true);
        if (seen < 0)
            break;
        double t0 = mdnl_now();
        t_starved += t0 - tw;
        const int ticket = (int)(k % MDNL_ENGINE_TICKETS);
        mdnl_status cst = MDNL_OK;
        if (seen != SLOT_END && !c->read_only)
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
    if (p->abort && !c->read_only)
        mdnl_engine_quiesce(&cs.eng);
    if (have_reader)
        pthread_join(reader, NULL);
    if (have_preparer)
        pthread_join(preparer, NULL);
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

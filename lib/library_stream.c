/* library_stream.c — libmdnl's streams (include/mdnl/mdnl.h, "streams of
 * frames"): the deferred per-frame work of `mdnl run` over the engine
 * (engine.h). Frames are deferred by one: submit wraps frame k on the
 * device (CUDA), builds its list (synchronous: its pair count sizes the
 * download) and queues its energy and histogram; collect waits for them,
 * so that the device works on frame k while the host submits frame k+1.
 * prepare is the host side a second thread runs ahead: on CUDA the
 * occupancy guard of the grids the device will lay out, from the frame's
 * doubles (on the submitting thread it cost more than the frame's kernels);
 * on the CPU, and for an energy table (host-wrapped positions), the wrap and
 * the grids themselves. */
#include "mdnl/mdnl.h"

#include "library.h"

#include "device.h"
#include "engine.h"
#include "geometry.h"
#include "rdf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(MDNL_STREAM_MAX_SUBMITTED <= MDNL_ENGINE_TICKETS, "a submitted frame holds an engine ticket");

enum ticket_phase { TICKET_FREE, TICKET_PREPARED, TICKET_SUBMITTED };

typedef struct ticket_state {
    enum ticket_phase state;
    int dev;             /* submitted: its engine ticket */
    mdnl_status verdict; /* prepare's, raised by submit */
    char message[2048];
    mdnl_frame f;        /* the frame's view (positions borrowed) */
    double (*xyz)[3];    /* float32 positions widened */
    int64_t xyz_cap;
    float (*pos4)[4];    /* host wrap (engine host memory) */
    int64_t pos_cap;
    mdnl_geom g_cut;     /* the grid for the list's and the energy's cutoff (when used) */
    mdnl_geom g_rmax;    /* the grid for r_max (histogram) */
    bool wrap_pending;   /* CUDA: grids laid out before the wrap's t-range, settled when collected */
    mdnl_nlist list;
    int32_t (*S)[3];
    double (*D)[3];
    int64_t s_cap, d_cap;
    double *e_host;       /* engine host memory: the energy total lands here */
    uint64_t *counts_host; /* and the histogram */
    int32_t (*ids)[2];    /* this frame's species pairs */
    int64_t *na, *nb;
    const int32_t *species, *types;
} ticket_state;

struct mdnl_stream {
    mdnl_context *ctx;
    char *source;
    int tickets;
    bool neighbors, energy, hist, table;
    mdnl_list_kind kind;
    bool shifts, vectors;
    double cutoff;
    mdnl_potential pot;
    mdnl_pair_table tab;
    double rmax;
    int32_t bins, npairs;
    int32_t (*pairs)[2];
    bool dev_wrap; /* CUDA without a table: frames wrapped on the device by submit */
    bool engine_up;
    bool failed;   /* a submit or collect failed: device work may still write into ticket buffers */
    int submitted; /* tickets submitted and not collected, */
    int order[MDNL_STREAM_MAX_SUBMITTED]; /* from order[first], in submit order (a ring) */
    int first;
    int64_t launched; /* successful submits: the engine tickets go round in their order */
    mdnl_engine eng;
    ticket_state t[MDNL_STREAM_MAX_TICKETS];
};

/* ---- messages ---- */

/* An input error (a non-finite coordinate) prefixed with the source's name. */
static mdnl_status prefixed(const mdnl_stream *s, mdnl_status st)
{
    if (st == MDNL_ERR_INPUT && s->source) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", mdnl_last_error());
        st = mdnl_error(st, "%s: %s", s->source, msg);
    }
    return st;
}

/* Without a source every message names the call. */
static mdnl_status named(const mdnl_stream *s, mdnl_status st, const char *fn)
{
    if (st == MDNL_OK || (s && s->source))
        return st;
    return mdnl_error(st, "%s: %s", fn, mdnl_last_error());
}

/* ---- create and free ---- */

static mdnl_status check_options(const mdnl_stream_options *o)
{
    if (o->tickets < 0 || o->tickets > MDNL_STREAM_MAX_TICKETS)
        return mdnl_error(MDNL_ERR_USAGE, "tickets = %d, expected 1..%d (0: 2)", o->tickets, MDNL_STREAM_MAX_TICKETS);
    mdnl_status st = mdnl_lib_check_flags(o->flags);
    if (st != MDNL_OK)
        return st;
    if ((o->neighbors || o->energy) && (!(o->cutoff > 0) || !isfinite(o->cutoff)))
        return mdnl_error(MDNL_ERR_USAGE, "cutoff must be a positive finite number, got %g", o->cutoff);
    if (o->histogram) {
        if (!(o->r_max > 0) || !isfinite(o->r_max))
            return mdnl_error(MDNL_ERR_USAGE, "r_max must be a positive finite number, got %g", o->r_max);
        if (o->bins < 1 || o->bins > 1000000)
            return mdnl_error(MDNL_ERR_USAGE, "bins = %d, expected 1..1000000", o->bins);
        if (o->npairs < 0 || o->npairs > 1024)
            return mdnl_error(MDNL_ERR_USAGE, "npairs = %d, expected 0..1024", o->npairs);
    }
    return MDNL_OK;
}

/* The pair ids of a frame (or the stream's): ids the kernels compare with species. */
static mdnl_status check_pairs(int32_t npairs, const int32_t (*pairs)[2])
{
    for (int32_t p = 0; p < npairs; ++p)
        for (int k = 0; k < 2; ++k)
            if (pairs[p][k] < 0 || pairs[p][k] >= MDNL_MAX_SPECIES - 1)
                return mdnl_error(MDNL_ERR_USAGE, "pairs[%d][%d] = %d, expected a species id 0..%d", p, k,
                                  pairs[p][k], MDNL_MAX_SPECIES - 2);
    return MDNL_OK;
}

static mdnl_status create_body(mdnl_stream *s, const mdnl_stream_options *o)
{
    mdnl_status st;
    if ((st = check_options(o)) != MDNL_OK)
        return st;
    s->tickets = o->tickets ? o->tickets : 2;
    s->neighbors = o->neighbors != 0;
    s->kind = o->flags & MDNL_NEIGHBORS_FULL ? MDNL_LIST_FULL : MDNL_LIST_HALF;
    s->shifts = (o->flags & MDNL_NEIGHBORS_SHIFTS) != 0;
    s->vectors = (o->flags & MDNL_NEIGHBORS_VECTORS) != 0;
    s->cutoff = o->cutoff;
    s->energy = o->energy != 0;
    s->table = s->energy && o->ntypes > 0;
    if (s->table) {
        if ((st = mdnl_lib_pair_table(o->ntypes, o->type_params, o->type_cutoffs, &s->tab)) != MDNL_OK)
            return st;
        if (s->tab.max_cutoff != o->cutoff)
            return mdnl_error(MDNL_ERR_USAGE, "cutoff %g is not the table's largest, %g", o->cutoff,
                              s->tab.max_cutoff);
    } else if (s->energy && (st = mdnl_lib_potential_of(&o->params, o->cutoff, &s->pot)) != MDNL_OK) {
        return st;
    }
    s->hist = o->histogram != 0;
    if (s->hist) {
        s->rmax = o->r_max;
        s->bins = o->bins;
        s->npairs = o->npairs;
        if (o->pairs && s->npairs > 0) {
            if ((st = check_pairs(s->npairs, o->pairs)) != MDNL_OK)
                return st;
            if (!(s->pairs = mdnl_malloc((size_t)s->npairs * sizeof *s->pairs, "species pairs")))
                return MDNL_ERR_RESOURCE;
            memcpy(s->pairs, o->pairs, (size_t)s->npairs * sizeof *s->pairs);
        }
        const int32_t nh = s->npairs > 0 ? s->npairs : 1;
        for (int k = 0; k < s->tickets; ++k) {
            ticket_state *tk = &s->t[k];
            if (!(tk->ids = mdnl_calloc((size_t)nh, sizeof *tk->ids, "species pairs")) ||
                !(tk->na = mdnl_calloc((size_t)nh, sizeof *tk->na, "histogram atoms")) ||
                !(tk->nb = mdnl_calloc((size_t)nh, sizeof *tk->nb, "histogram atoms")))
                return MDNL_ERR_RESOURCE;
        }
    }
    if (o->source) {
        const size_t len = strlen(o->source);
        if (!(s->source = mdnl_malloc(len + 1, "the source's name")))
            return MDNL_ERR_RESOURCE;
        memcpy(s->source, o->source, len + 1);
    }
    s->dev_wrap = s->ctx->backend == MDNL_COMPUTE_CUDA && !s->table && (s->neighbors || s->energy || s->hist);
    if ((st = mdnl_engine_init(&s->eng, s->ctx->backend)) != MDNL_OK)
        return st;
    s->engine_up = true;
    return MDNL_OK;
}

mdnl_status mdnl_stream_create(mdnl_context *ctx, const mdnl_stream_options *options, mdnl_stream **out)
{
    if (!out)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_stream_create: out is NULL");
    *out = NULL;
    if (!ctx || !options)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_stream_create: %s is NULL", !ctx ? "the context" : "options");
    mdnl_stream *s = calloc(1, sizeof *s);
    if (!s)
        return mdnl_error(MDNL_ERR_RESOURCE, "mdnl_stream_create: out of host memory");
    s->ctx = ctx;
    mdnl_lib_scope sc = mdnl_lib_enter(ctx);
    mdnl_status st = create_body(s, options);
    mdnl_lib_restore(sc);
    if (st != MDNL_OK) {
        st = mdnl_error(st, "mdnl_stream_create: %s", mdnl_last_error());
        mdnl_stream_free(s);
        return st;
    }
    *out = s;
    return MDNL_OK;
}

void mdnl_stream_free(mdnl_stream *s)
{
    if (!s)
        return;
    mdnl_lib_scope sc = mdnl_lib_enter(s->ctx);
    bool inflight = s->failed;
    for (int k = 0; k < MDNL_STREAM_MAX_TICKETS; ++k)
        inflight = inflight || s->t[k].state == TICKET_SUBMITTED;
    if (s->engine_up && inflight) /* device work may still write into the tickets' buffers */
        mdnl_engine_quiesce(&s->eng);
    for (int k = 0; k < MDNL_STREAM_MAX_TICKETS; ++k) {
        ticket_state *tk = &s->t[k];
        mdnl_engine_host_free(&s->eng, tk->pos4);
        mdnl_engine_host_free(&s->eng, tk->e_host);
        mdnl_engine_host_free(&s->eng, tk->counts_host);
        mdnl_nlist_free(&tk->list);
        free(tk->xyz);
        free(tk->S);
        free(tk->D);
        free(tk->ids);
        free(tk->na);
        free(tk->nb);
    }
    if (s->engine_up)
        mdnl_engine_free(&s->eng);
    mdnl_lib_restore(sc);
    free(s->pairs);
    free(s->source);
    free(s);
}

const char *mdnl_stream_method(const mdnl_stream *s)
{
    return mdnl_method_name(s ? s->eng.last_method : MDNL_METHOD_AUTO);
}

/* ---- the host side: check and prepare ---- */

static bool uses_cut(const mdnl_stream *s) { return s->neighbors || s->energy; }

/* The occupancy guard (geometry.h) of the grids the frame will be laid out
 * on, from its own doubles. A frame that cannot be laid out (a bad cell, a
 * non-finite coordinate) is left to the wrap, which reports it. */
static mdnl_status guard(const mdnl_stream *s, const mdnl_frame *f)
{
    const bool cut = uses_cut(s);
    if (!cut && !s->hist)
        return MDNL_OK;
    mdnl_geom g_cut, g_rmax;
    if (mdnl_geom_layout(f, cut ? s->cutoff : s->rmax, cut ? &g_cut : &g_rmax, cut && s->hist ? s->rmax : 0,
                         &g_rmax) != MDNL_OK)
        return MDNL_OK;
    mdnl_status st = MDNL_OK;
    if (cut)
        st = mdnl_work_check_cells(&g_cut, NULL, (const double(*)[3])f->pos);
    if (st == MDNL_OK && s->hist)
        st = mdnl_work_check_cells(&g_rmax, NULL, (const double(*)[3])f->pos);
    return prefixed(s, st);
}

/* The frame's arrays the work needs. */
static mdnl_status check_frame(const mdnl_stream *s, const mdnl_stream_frame *fr)
{
    const int64_t n = fr->system.n;
    if (s->hist && s->npairs > 0) { /* the pairs may come with the submit */
        if (n > 0 && !fr->species)
            return mdnl_error(MDNL_ERR_USAGE, "species are NULL, but species pairs are asked for");
    }
    if (s->table) {
        if (n > 0 && !fr->types)
            return mdnl_error(MDNL_ERR_USAGE, "the types are NULL");
        for (int64_t i = 0; i < n; ++i)
            if (fr->types[i] < 0 || fr->types[i] >= s->tab.ntypes)
                return mdnl_error(MDNL_ERR_USAGE, "types[%lld] = %d, expected 0..%d", (long long)i, fr->types[i],
                                  s->tab.ntypes - 1);
    }
    return MDNL_OK;
}

static mdnl_status ticket_of(const mdnl_stream *s, int ticket, const mdnl_stream_frame *fr)
{
    if (ticket < 0 || ticket >= s->tickets)
        return mdnl_error(MDNL_ERR_USAGE, "ticket %d, expected 0..%d", ticket, s->tickets - 1);
    if (fr == NULL)
        return mdnl_error(MDNL_ERR_USAGE, "the frame is NULL");
    return MDNL_OK;
}

mdnl_status mdnl_stream_check(const mdnl_stream *s, const mdnl_stream_frame *frame)
{
    if (!s || !frame)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_stream_check: %s is NULL", !s ? "the stream" : "the frame");
    double(*xyz)[3] = NULL;
    int64_t xyz_cap = 0;
    mdnl_frame f;
    mdnl_status st = mdnl_lib_frame_of(&frame->system, frame->index, s->ctx->max_pairs,
                                       mdnl_lib_limit_option(s->ctx), 0, &xyz, &xyz_cap, &f);
    if (st == MDNL_OK)
        st = guard(s, &f);
    free(xyz);
    return named(s, st, "mdnl_stream_check");
}

/* After a frame was wrapped for its first grid (the cutoff's, or r_max's
 * when only the histogram runs), on the host or the device: the r_max grid
 * from it when both are needed, and an input error prefixed. */
static mdnl_status grids_done(const mdnl_stream *s, ticket_state *tk, mdnl_status st)
{
    if (st == MDNL_OK && uses_cut(s) && s->hist)
        st = mdnl_geom_regrid(&tk->g_cut, s->rmax, &tk->g_rmax);
    return prefixed(s, st);
}

/* Wraps the frame's positions once (into the ticket's engine host memory)
 * and lays out the grids: the cutoff's and r_max's. */
static mdnl_status host_wrap(mdnl_stream *s, ticket_state *tk)
{
    const mdnl_frame *f = &tk->f;
    if (tk->pos_cap < f->natoms + 1) {
        mdnl_engine_host_free(&s->eng, tk->pos4);
        tk->pos_cap = 0;
        if (!(tk->pos4 = mdnl_engine_host_alloc(&s->eng, (size_t)(f->natoms + 1) * sizeof *tk->pos4,
                                                "float positions")))
            return MDNL_ERR_RESOURCE;
        tk->pos_cap = f->natoms + 1;
    }
    const bool cut = uses_cut(s);
    mdnl_status st =
        grids_done(s, tk, mdnl_geom_prepare(f, cut ? s->cutoff : s->rmax, cut ? &tk->g_cut : &tk->g_rmax, tk->pos4));
    /* mdnl_geom_prepare guarded its own grid; the r_max grid regridded from it is guarded here */
    if (st == MDNL_OK && cut && s->hist)
        st = prefixed(s, mdnl_work_check_cells(&tk->g_rmax, (const float(*)[4])tk->pos4, NULL));
    return st;
}

static mdnl_status prepare_body(mdnl_stream *s, ticket_state *tk, const mdnl_stream_frame *fr, int flags)
{
    mdnl_status st;
    if (!s->neighbors && !s->energy && !s->hist)
        return MDNL_OK;
    if ((st = mdnl_lib_frame_of(&fr->system, fr->index, s->ctx->max_pairs, mdnl_lib_limit_option(s->ctx), 0,
                                &tk->xyz, &tk->xyz_cap, &tk->f)) != MDNL_OK ||
        (st = check_frame(s, fr)) != MDNL_OK)
        return st;
    if (!s->dev_wrap)
        return host_wrap(s, tk);
    return flags & MDNL_STREAM_CHECKED ? MDNL_OK : guard(s, &tk->f);
}

/* Prepares ticket tk and keeps the verdict (and its message) for submit. */
static mdnl_status prepare_ticket(mdnl_stream *s, ticket_state *tk, const mdnl_stream_frame *fr, int flags)
{
    tk->verdict = prepare_body(s, tk, fr, flags);
    if (tk->verdict != MDNL_OK)
        snprintf(tk->message, sizeof tk->message, "%s", mdnl_last_error());
    tk->state = TICKET_PREPARED;
    return tk->verdict;
}

mdnl_status mdnl_stream_prepare(mdnl_stream *s, int ticket, const mdnl_stream_frame *frame, int flags)
{
    if (!s)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_stream_prepare: the stream is NULL");
    mdnl_status st = ticket_of(s, ticket, frame);
    if (st == MDNL_OK && s->t[ticket].state == TICKET_SUBMITTED)
        st = mdnl_error(MDNL_ERR_USAGE, "ticket %d is in flight: collect it first", ticket);
    if (st == MDNL_OK) {
        /* this thread's device for the host memory it may pin; its own OpenMP team */
        const int before = mdnl_cuda_use_device(s->ctx->device);
        st = prepare_ticket(s, &s->t[ticket], frame, flags);
        (void)mdnl_cuda_use_device(before);
    }
    return named(s, st, "mdnl_stream_prepare");
}

/* ---- submit ---- */

/* CUDA: the t-range and first non-finite atom of a frame whose first grid
 * was laid out before them (waits for the wrap if it is still running): a
 * non-finite coordinate is the frame's input error; the grid gets its real
 * t-range (and must not change: mdnl_geom_settle). The r_max grid, when
 * both are needed, is settled the same way when it was laid out early too
 * (rmax_early: the frame's kernels already ran on it), else regridded. */
static mdnl_status settle_wrap(mdnl_stream *s, ticket_state *tk, int t, bool rmax_early)
{
    const bool cut = uses_cut(s);
    double tlo[3], thi[3];
    int64_t bad = 0;
    tk->wrap_pending = false;
    mdnl_status st = mdnl_engine_wrap_result(&s->eng, t, tlo, thi, &bad);
    if (st == MDNL_OK)
        st = mdnl_geom_settle(&tk->f, cut ? s->cutoff : s->rmax, cut ? &tk->g_cut : &tk->g_rmax, tlo, thi, bad);
    if (st == MDNL_OK && cut && s->hist)
        st = rmax_early ? mdnl_geom_settle(&tk->f, s->rmax, &tk->g_rmax, tlo, thi, bad)
                        : mdnl_geom_regrid(&tk->g_cut, s->rmax, &tk->g_rmax);
    return prefixed(s, st);
}

/* CUDA: wraps the frame on the device and lays out its grids (what
 * host_wrap does on the host). On a frame periodic on every axis neither
 * waits for the wrap: the frame is settled when it is collected, unless the
 * r_max grid could still depend on the t-range, which is then waited for. */
static mdnl_status prepare_device(mdnl_stream *s, ticket_state *tk, int t)
{
    const bool cut = uses_cut(s);
    double bound = 0;
    mdnl_status st = mdnl_engine_prepare_device(&s->eng, &tk->f, cut ? s->cutoff : s->rmax,
                                                cut ? &tk->g_cut : &tk->g_rmax, t, &bound);
    if (st != MDNL_OK || bound == 0)
        return grids_done(s, tk, st);
    tk->wrap_pending = true;
    if (!(cut && s->hist))
        return MDNL_OK;
    if ((st = mdnl_geom_regrid(&tk->g_cut, s->rmax, &tk->g_rmax)) != MDNL_OK)
        return prefixed(s, st);
    if (mdnl_geom_early_certain(&tk->g_rmax, s->rmax, bound))
        return MDNL_OK;
    /* rare: r_max's grid sits on a boundary of the slack; wait for it */
    return settle_wrap(s, tk, t, false);
}

/* The image shifts and vectors of the ticket's list, right after its build:
 * on CUDA they come from the list's device copy, which the next build
 * replaces. A frame laid out before its wrap's t-range is settled first. */
static mdnl_status list_shifts(mdnl_stream *s, ticket_state *tk, int t, const float (*pos4)[4])
{
    mdnl_status st;
    if (tk->wrap_pending && (st = settle_wrap(s, tk, t, true)) != MDNL_OK)
        return st;
    const int64_t n = tk->list.npairs;
    if ((st = mdnl_lib_grow((void **)&tk->S, &tk->s_cap, n, sizeof *tk->S, "image shifts")) != MDNL_OK ||
        (s->vectors && (st = mdnl_lib_grow((void **)&tk->D, &tk->d_cap, n, sizeof *tk->D, "pair vectors")) != MDNL_OK))
        return st;
    return mdnl_engine_shifts(&s->eng, &tk->f, &tk->g_cut, pos4, s->kind, &tk->list, tk->S,
                              s->vectors ? tk->D : NULL);
}

/* t: the engine ticket of this submit. */
static mdnl_status submit_body(mdnl_stream *s, ticket_state *tk, int t, const mdnl_stream_frame *fr)
{
    mdnl_status st;
    tk->species = fr->species;
    tk->types = fr->types;
    if (s->dev_wrap && (st = prepare_device(s, tk, t)) != MDNL_OK)
        return st;
    /* NULL: the device positions of prepare_device */
    const float(*pos4)[4] = s->dev_wrap ? NULL : (const float(*)[4])tk->pos4;
    if (s->neighbors) {
        if ((st = mdnl_work_check_list_memory(s->source, &tk->g_cut, s->kind == MDNL_LIST_FULL,
                                              s->tickets > 1 ? s->tickets : 2)) != MDNL_OK ||
            (st = mdnl_engine_nlist(&s->eng, &tk->g_cut, pos4, s->ctx->method, s->kind, &tk->list)) != MDNL_OK ||
            ((s->shifts || s->vectors) && (st = list_shifts(s, tk, t, pos4)) != MDNL_OK))
            return st;
    }
    if (!s->energy && !s->hist)
        return MDNL_OK;
    const mdnl_hist_spec spec = {s->rmax, s->bins, s->npairs, (const int32_t(*)[2])tk->ids};
    if (s->hist) {
        if (s->npairs > 0) {
            if (!fr->pairs && !s->pairs)
                return mdnl_error(MDNL_ERR_USAGE, "the frame names no species pairs, nor does the stream");
            if (fr->pairs && (st = check_pairs(s->npairs, fr->pairs)) != MDNL_OK)
                return st;
            memcpy(tk->ids, fr->pairs ? fr->pairs : (const int32_t(*)[2])s->pairs, (size_t)s->npairs * sizeof *tk->ids);
        }
        const size_t nslots = (size_t)mdnl_hist_nhist(&spec) * (size_t)s->bins;
        if (!tk->counts_host &&
            !(tk->counts_host = mdnl_engine_host_alloc(&s->eng, nslots * sizeof *tk->counts_host, "histogram")))
            return MDNL_ERR_RESOURCE;
        if ((st = mdnl_hist_spec_check(&spec, &tk->g_rmax, MDNL_MAX_SPECIES)) != MDNL_OK)
            return st;
    }
    if (s->energy && !tk->e_host && !(tk->e_host = mdnl_engine_host_alloc(&s->eng, sizeof *tk->e_host, "energy")))
        return MDNL_ERR_RESOURCE;
    if (s->table && (st = mdnl_engine_energy_table(&s->eng, &tk->g_cut, pos4, tk->types, &s->tab, tk->e_host,
                                                   NULL)) != MDNL_OK)
        return st;
    return mdnl_engine_launch(&s->eng, t, pos4, &tk->g_cut, s->energy && !s->table ? &s->pot : NULL, tk->e_host,
                              &tk->g_rmax, tk->species, s->hist ? &spec : NULL, tk->counts_host);
}

mdnl_status mdnl_stream_submit(mdnl_stream *s, int ticket, const mdnl_stream_frame *frame)
{
    if (!s)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_stream_submit: the stream is NULL");
    mdnl_status st = ticket_of(s, ticket, frame);
    if (st != MDNL_OK)
        return named(s, st, "mdnl_stream_submit");
    ticket_state *tk = &s->t[ticket];
    if (tk->state == TICKET_SUBMITTED)
        return named(s, mdnl_error(MDNL_ERR_USAGE, "ticket %d is in flight: collect it first", ticket),
                     "mdnl_stream_submit");
    if (s->submitted >= MDNL_STREAM_MAX_SUBMITTED)
        return named(s, mdnl_error(MDNL_ERR_USAGE, "%d tickets are submitted and not collected: collect one first",
                                   s->submitted), "mdnl_stream_submit");
    mdnl_lib_scope sc = mdnl_lib_enter(s->ctx);
    if (tk->state != TICKET_PREPARED)
        (void)prepare_ticket(s, tk, frame, 0);
    tk->state = TICKET_FREE;
    if (tk->verdict != MDNL_OK) {
        st = mdnl_error(tk->verdict, "%s", tk->message);
    } else if ((tk->dev = (int)(s->launched % MDNL_ENGINE_TICKETS),
                (st = submit_body(s, tk, tk->dev, frame)) == MDNL_OK)) {
        tk->state = TICKET_SUBMITTED;
        s->order[(s->first + s->submitted) % MDNL_STREAM_MAX_SUBMITTED] = ticket;
        s->submitted++;
        s->launched++;
    } else {
        tk->wrap_pending = false;
        s->failed = true;
    }
    mdnl_lib_restore(sc);
    return named(s, st, "mdnl_stream_submit");
}

/* ---- collect ---- */

static mdnl_status collect_body(mdnl_stream *s, ticket_state *tk, int t, mdnl_stream_result *out)
{
    const mdnl_frame *f = &tk->f;
    mdnl_status st;
    /* the frame's own input error first (a non-finite coordinate) */
    if (tk->wrap_pending && (st = settle_wrap(s, tk, t, true)) != MDNL_OK)
        return st;
    if ((s->energy || s->hist) &&
        (st = mdnl_engine_collect(&s->eng, t, s->energy && !s->table, s->hist)) != MDNL_OK)
        return st;
    if (s->neighbors)
        out->list = (mdnl_neighbor_list){tk->list.natoms,
                                         tk->list.npairs,
                                         tk->list.offsets,
                                         tk->list.j,
                                         tk->list.d,
                                         s->shifts ? &tk->S[0][0] : NULL,
                                         s->vectors ? &tk->D[0][0] : NULL};
    if (s->energy)
        out->energy = *tk->e_host;
    if (s->hist) {
        const mdnl_hist_spec spec = {s->rmax, s->bins, s->npairs, (const int32_t(*)[2])tk->ids};
        mdnl_hist_species_counts(&spec, tk->species, f->natoms, tk->na, tk->nb);
        out->counts = tk->counts_host;
        out->na = tk->na;
        out->nb = tk->nb;
        out->volume =
            f->box.has_lattice && (f->box.pbc[0] || f->box.pbc[1] || f->box.pbc[2]) ? tk->g_rmax.volume : 0.0;
    }
    return MDNL_OK;
}

mdnl_status mdnl_stream_collect(mdnl_stream *s, int ticket, mdnl_stream_result *out)
{
    if (!s || !out)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_stream_collect: %s is NULL", !s ? "the stream" : "out");
    memset(out, 0, sizeof *out);
    if (ticket < 0 || ticket >= s->tickets)
        return named(s, mdnl_error(MDNL_ERR_USAGE, "ticket %d, expected 0..%d", ticket, s->tickets - 1),
                     "mdnl_stream_collect");
    ticket_state *tk = &s->t[ticket];
    if (tk->state != TICKET_SUBMITTED)
        return named(s, mdnl_error(MDNL_ERR_USAGE, "ticket %d was not submitted", ticket), "mdnl_stream_collect");
    /* in submit order: the next submit takes the engine ticket of the
     * oldest collected frame, which must be done with it */
    if (s->order[s->first] != ticket)
        return named(s,
                     mdnl_error(MDNL_ERR_USAGE, "ticket %d was submitted after ticket %d: collect in submit order",
                                ticket, s->order[s->first]),
                     "mdnl_stream_collect");
    tk->state = TICKET_FREE;
    s->first = (s->first + 1) % MDNL_STREAM_MAX_SUBMITTED;
    s->submitted--;
    mdnl_lib_scope sc = mdnl_lib_enter(s->ctx);
    mdnl_status st = collect_body(s, tk, tk->dev, out);
    if (st != MDNL_OK) {
        memset(out, 0, sizeof *out);
        s->failed = true;
    }
    mdnl_lib_restore(sc);
    return named(s, st, "mdnl_stream_collect");
}

/* library.c — libmdnl: the public API of include/mdnl/mdnl.h over the
 * kernels (the same calls `mdnl neighbors`, `mdnl energy` and `mdnl rdf`
 * make, so the same bytes). A context holds what the command line keeps
 * across frames (the CUDA handles, the CPU list's row buffers, the list) and
 * its options; nothing here is process-wide: the device and the thread count
 * are set for the calling thread on entry and restored on return
 * (device.h mdnl_cuda_use_device, omp_set_num_threads), and the work limit
 * travels with the frame (frame.h max_pairs). */
#include "mdnl/mdnl.h"

#include "library.h"

#include "coord.h"
#include "device.h"
#include "energy.h"
#include "frame.h"
#include "geometry.h"
#include "mdnl.h"
#include "nlist.h"
#include "pair_shift.h"
#include "potential.h"
#include "rdf.h"

#ifdef MDNL_HAVE_CUDA
#include "coord_cuda.h"
#include "cuda_host.h"
#include "energy_cuda.h"
#include "geometry_cuda.h"
#include "library_cuda.h"
#include "nlist_cuda.h"
#include "pair_shift_cuda.h"
#include "rdf_cuda.h"
#endif

#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


const char *mdnl_version(void) { return MDNL_VERSION; }

int mdnl_cuda_devices(void) { return mdnl_cuda_device_count(); }

int mdnl_cuda_built(void)
{
#ifdef MDNL_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

#ifndef MDNL_HAVE_CUDA
const char *mdnl_device_description(int device)
{
    (void)device;
    return "none (built without CUDA)";
}
#endif

/* ---- entry and exit: the context's thread count and device ---- */

mdnl_lib_scope mdnl_lib_enter(const mdnl_context *ctx)
{
    mdnl_lib_scope s = {omp_get_max_threads(), -1, -1, ctx->source};
    if (ctx->threads > 0)
        omp_set_num_threads(ctx->threads);
    s.device_before = mdnl_cuda_use_device(ctx->device);
#ifdef MDNL_HAVE_CUDA
    if (ctx->backend == MDNL_COMPUTE_CUDA) /* the runtime's current device, for the calls that use it */
        s.current_before = mdnl_lib_cuda_swap_device(ctx->device);
#endif
    return s;
}

void mdnl_lib_restore(mdnl_lib_scope s)
{
    omp_set_num_threads(s.threads_before);
    (void)mdnl_cuda_use_device(s.device_before);
#ifdef MDNL_HAVE_CUDA
    if (s.current_before >= 0)
        (void)mdnl_lib_cuda_swap_device(s.current_before);
#endif
}

static mdnl_status leave(mdnl_lib_scope s, mdnl_status st, const char *fn)
{
    mdnl_lib_restore(s);
    if (st == MDNL_OK || st == MDNL_END)
        return st;
    /* With a source (mdnl_context_set_frame) the data is named, not the call. */
    if (!s.source)
        return mdnl_error(st, "%s: %s", fn, mdnl_last_error());
    if (st == MDNL_ERR_INPUT)
        return mdnl_error(st, "%s: %s", s.source, mdnl_last_error());
    return st;
}

/* ---- the context ---- */

mdnl_status mdnl_context_create(const mdnl_context_options *options, mdnl_context **out)
{
    if (!out)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_context_create: out is NULL");
    *out = NULL;
    mdnl_context_options o = {0};
    if (options)
        o = *options;
    if (o.backend != MDNL_COMPUTE_AUTO && o.backend != MDNL_COMPUTE_CPU && o.backend != MDNL_COMPUTE_CUDA)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_context_create: backend %d is none of auto (0), cpu (1), cuda (2)",
                          (int)o.backend);
    if (o.device < 0)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_context_create: device %d is negative", o.device);
    if (!(o.max_pairs >= 0) || !isfinite(o.max_pairs))
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_context_create: max_pairs %g is not a finite number >= 0",
                          o.max_pairs);
    if (o.threads < 0)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_context_create: threads %d is negative", o.threads);
    const int ndev = mdnl_cuda_device_count();
    if (o.backend == MDNL_COMPUTE_CUDA && ndev < 1)
        return mdnl_error(MDNL_ERR_RESOURCE, "mdnl_context_create: backend cuda asked for, but %s",
#ifdef MDNL_HAVE_CUDA
                          "no CUDA device is usable"
#else
                          "libmdnl was built without CUDA"
#endif
        );
    if (o.backend == MDNL_COMPUTE_CUDA && o.device >= ndev)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_context_create: device %d, but %d CUDA device%s usable", o.device,
                          ndev, ndev == 1 ? " is" : "s are");
    mdnl_context *c = calloc(1, sizeof *c);
    if (!c)
        return mdnl_error(MDNL_ERR_RESOURCE, "mdnl_context_create: out of host memory");
    c->device = o.device;
    c->threads = o.threads;
    c->max_pairs = o.max_pairs;
    c->backend = o.backend == MDNL_COMPUTE_AUTO ? (ndev > o.device ? MDNL_COMPUTE_CUDA : MDNL_COMPUTE_CPU) : o.backend;
    mdnl_status st = MDNL_OK;
#ifdef MDNL_HAVE_CUDA
    if (c->backend == MDNL_COMPUTE_CUDA) {
        mdnl_lib_scope s = mdnl_lib_enter(c);
        if ((st = mdnl_cuda_ctx_create(&c->cuda)) == MDNL_OK && (st = mdnl_wrap_cuda_create(&c->wrap)) == MDNL_OK)
            st = mdnl_lib_cuda_create(&c->post);
        if (st == MDNL_OK)
            st = mdnl_shift_cuda_create(&c->shift);
        st = leave(s, st, "mdnl_context_create");
    }
#endif
    if (st != MDNL_OK) {
        mdnl_context_free(c);
        return st;
    }
    *out = c;
    return MDNL_OK;
}

void mdnl_context_free(mdnl_context *ctx)
{
    if (!ctx)
        return;
#ifdef MDNL_HAVE_CUDA
    if (ctx->backend == MDNL_COMPUTE_CUDA) {
        mdnl_lib_scope s = mdnl_lib_enter(ctx);
        mdnl_shift_cuda_free(ctx->shift);
        mdnl_lib_cuda_free(ctx->post);
        mdnl_coord_cuda_free(ctx->coord);
        mdnl_hist_cuda_free(ctx->hist);
        mdnl_energy_cuda_free(ctx->energy);
        mdnl_wrap_cuda_free(ctx->wrap);
        mdnl_cuda_ctx_free(ctx->cuda);
        (void)leave(s, MDNL_OK, "");
    }
#endif
    mdnl_nlist_cpu_kept_free(&ctx->kept);
    mdnl_nlist_free(&ctx->list);
    free(ctx->xyz);
    free(ctx->pos4);
    free(ctx->shifts);
    free(ctx->vectors);
    free(ctx->counts);
    free(ctx->species);
    free(ctx->source);
    free(ctx);
}

mdnl_compute mdnl_context_backend(const mdnl_context *ctx) { return ctx ? ctx->backend : MDNL_COMPUTE_CPU; }

mdnl_status mdnl_context_set_frame(mdnl_context *ctx, const char *source, int64_t index)
{
    if (!ctx)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_context_set_frame: the context is NULL");
    char *copy = NULL;
    if (source && ctx->source && strcmp(source, ctx->source) == 0) { /* the next frame of the same source */
        ctx->frame = index;
        return MDNL_OK;
    }
    if (source) {
        const size_t len = strlen(source);
        if (!(copy = malloc(len + 1)))
            return mdnl_error(MDNL_ERR_RESOURCE, "mdnl_context_set_frame: out of host memory");
        memcpy(copy, source, len + 1);
    }
    free(ctx->source);
    ctx->source = copy;
    ctx->frame = index;
    return MDNL_OK;
}

mdnl_status mdnl_context_set_method(mdnl_context *ctx, const char *method)
{
    if (!ctx || !method)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_context_set_method: %s is NULL", !ctx ? "the context" : "method");
    mdnl_method m;
    if (mdnl_method_parse(method, &m) != MDNL_OK)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_context_set_method: %s", mdnl_last_error());
    ctx->method = m;
    return MDNL_OK;
}

mdnl_status mdnl_context_set_limit_name(mdnl_context *ctx, const char *name)
{
    if (!ctx)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_context_set_limit_name: the context is NULL");
    if (name && strlen(name) >= sizeof ctx->limit_name)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_context_set_limit_name: the name is %zu bytes, at most %zu",
                          strlen(name), sizeof ctx->limit_name - 1);
    snprintf(ctx->limit_name, sizeof ctx->limit_name, "%s", name ? name : "");
    return MDNL_OK;
}

const char *mdnl_context_method(const mdnl_context *ctx)
{
    return mdnl_method_name(ctx ? ctx->last_method : MDNL_METHOD_AUTO);
}

mdnl_status mdnl_host_alloc(mdnl_context *ctx, size_t bytes, void **out)
{
    if (!ctx || !out)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_host_alloc: %s is NULL", !ctx ? "the context" : "out");
#ifdef MDNL_HAVE_CUDA
    if (ctx->backend == MDNL_COMPUTE_CUDA) { /* on the context's device, whichever thread asks */
        const int before = mdnl_cuda_use_device(ctx->device);
        *out = mdnl_cuda_host_alloc(bytes ? bytes : 1, "host memory");
        (void)mdnl_cuda_use_device(before);
    } else
#endif
        *out = mdnl_malloc(bytes ? bytes : 1, "host memory");
    if (!*out)
        return mdnl_error(MDNL_ERR_RESOURCE, "mdnl_host_alloc: %s", mdnl_last_error());
    return MDNL_OK;
}

void mdnl_host_free(mdnl_context *ctx, void *p)
{
    if (!ctx || !p)
        return;
#ifdef MDNL_HAVE_CUDA
    if (ctx->backend == MDNL_COMPUTE_CUDA) {
        const int before = mdnl_cuda_use_device(ctx->device);
        mdnl_cuda_host_free(p);
        (void)mdnl_cuda_use_device(before);
        return;
    }
#endif
    free(p);
}

/* ---- systems ---- */

/* The work guard's refusals name the context's option, not the CLI's. */
#define MDNL_LIMIT_OPTION "mdnl_context_options.max_pairs"

mdnl_status mdnl_lib_grow(void **p, int64_t *cap, int64_t n, size_t size, const char *what)
{
    if (n <= *cap && *p)
        return MDNL_OK;
    if ((uint64_t)n > SIZE_MAX / 2 / size)
        return mdnl_error(MDNL_ERR_RESOURCE, "%lld %s do not fit in memory", (long long)n, what);
    free(*p);
    *p = mdnl_malloc((size_t)(n > 0 ? n : 1) * size, what);
    *cap = *p ? n : 0;
    return *p ? MDNL_OK : MDNL_ERR_RESOURCE;
}

mdnl_status mdnl_lib_frame_of(const mdnl_system *sys, int64_t index, double max_pairs, const char *limit_option,
                              int device, double (**xyz)[3], int64_t *xyz_cap, mdnl_frame *f)
{
    memset(f, 0, sizeof *f);
    if (!sys)
        return mdnl_error(MDNL_ERR_USAGE, "the system is NULL");
    if (sys->n < 0 || sys->n > INT32_MAX)
        return mdnl_error(MDNL_ERR_USAGE, "n = %lld atoms, expected 0..%d", (long long)sys->n, INT32_MAX);
    if (sys->dtype != MDNL_FLOAT64 && sys->dtype != MDNL_FLOAT32)
        return mdnl_error(MDNL_ERR_USAGE, "dtype %d is neither MDNL_FLOAT64 (0) nor MDNL_FLOAT32 (1)",
                          (int)sys->dtype);
    if (sys->n > 0 && !sys->positions)
        return mdnl_error(MDNL_ERR_USAGE, "positions are NULL for %lld atoms", (long long)sys->n);
    f->natoms = f->capacity = sys->n;
    f->index = index;
    f->max_pairs = max_pairs;
    f->limit_option = limit_option;
    f->box.has_lattice = sys->cell != NULL;
    for (int k = 0; k < 3; ++k) {
        f->box.pbc[k] = sys->pbc[k] != 0;
        if (f->box.pbc[k] && !sys->cell)
            return mdnl_error(MDNL_ERR_USAGE, "pbc[%d] is set without a cell", k);
    }
    if (sys->cell)
        for (int a = 0; a < 3; ++a)
            for (int b = 0; b < 3; ++b) {
                f->box.h[a][b] = sys->cell[3 * a + b];
                if (!isfinite(f->box.h[a][b]))
                    return mdnl_error(MDNL_ERR_INPUT, "cell[%d][%d] = %g is not finite", a, b, f->box.h[a][b]);
            }
    if (device || sys->n == 0)
        return MDNL_OK;
    if (sys->dtype == MDNL_FLOAT64) {
        f->pos = (double(*)[3])(uintptr_t)sys->positions; /* read only: the frame is never freed */
        return MDNL_OK;
    }
    mdnl_status st = mdnl_lib_grow((void **)xyz, xyz_cap, sys->n, sizeof **xyz, "positions (double)");
    if (st != MDNL_OK)
        return st;
    const float *x = sys->positions;
    for (int64_t i = 0; i < 3 * sys->n; ++i)
        (*xyz)[i / 3][i % 3] = (double)x[i];
    f->pos = *xyz;
    return MDNL_OK;
}

const char *mdnl_lib_limit_option(const mdnl_context *ctx)
{
    return ctx->limit_name[0] ? ctx->limit_name : MDNL_LIMIT_OPTION;
}

/* Checks sys and describes it as a frame (f->pos NULL when `device`; else the
 * caller's float64 positions, or the context's widened copy of float32). */
static mdnl_status system_frame(mdnl_context *ctx, const mdnl_system *sys, int device, mdnl_frame *f)
{
    return mdnl_lib_frame_of(sys, ctx->frame, ctx->max_pairs, mdnl_lib_limit_option(ctx), device, &ctx->xyz,
                             &ctx->xyz_cap, f);
}

/* Wraps the frame on the host into the context's pos4 and lays out g. */
static mdnl_status prepare(mdnl_context *ctx, const mdnl_frame *f, double cutoff, mdnl_geom *g)
{
    if (!(cutoff > 0) || !isfinite(cutoff))
        return mdnl_error(MDNL_ERR_USAGE, "cutoff must be a positive finite number, got %g", cutoff);
    mdnl_status st =
        mdnl_lib_grow((void **)&ctx->pos4, &ctx->pos4_cap, f->natoms, sizeof *ctx->pos4, "wrapped positions");
    if (st != MDNL_OK)
        return st;
    return mdnl_geom_prepare(f, cutoff, g, ctx->pos4);
}

/* ---- neighbor lists ---- */

mdnl_status mdnl_lib_check_flags(int flags)
{
    if (flags & ~(MDNL_NEIGHBORS_FULL | MDNL_NEIGHBORS_SHIFTS | MDNL_NEIGHBORS_VECTORS))
        return mdnl_error(MDNL_ERR_USAGE, "flags 0x%x hold unknown bits", (unsigned)flags);
    return MDNL_OK;
}

/* S and D into host arrays, over the context's list (pair_shift.h): on CUDA
 * by the device pass over the list's device copy, else on the host. */
static mdnl_status host_shifts(mdnl_context *ctx, const mdnl_frame *f, const mdnl_geom *g, int half, int want_D)
{
    const mdnl_nlist *l = &ctx->list;
    mdnl_status st;
    if ((st = mdnl_lib_grow((void **)&ctx->shifts, &ctx->shifts_cap, l->npairs, sizeof *ctx->shifts, "image shifts")) !=
            MDNL_OK ||
        (want_D && (st = mdnl_lib_grow((void **)&ctx->vectors, &ctx->vectors_cap, l->npairs, sizeof *ctx->vectors,
                                       "pair vectors")) != MDNL_OK))
        return st;
#ifdef MDNL_HAVE_CUDA
    if (ctx->backend == MDNL_COMPUTE_CUDA) {
        mdnl_nlist_dev dev;
        if ((st = mdnl_nlist_cuda_last(ctx->cuda, &dev)) != MDNL_OK)
            return st;
        return mdnl_pair_shifts_cuda_host(ctx->shift, mdnl_cuda_ctx_stream(ctx->cuda), f, g, &dev, half, ctx->shifts,
                                          want_D ? ctx->vectors : NULL);
    }
#endif
    return mdnl_pair_shifts_cpu(f, g, (const float(*)[4])ctx->pos4, l, half, ctx->shifts,
                                want_D ? ctx->vectors : NULL);
}

static mdnl_status neighbors_host(mdnl_context *ctx, const mdnl_system *sys, double cutoff, int flags,
                                  mdnl_neighbor_list *out)
{
    mdnl_frame f;
    mdnl_geom g;
    mdnl_status st;
    if ((st = mdnl_lib_check_flags(flags)) != MDNL_OK || (st = system_frame(ctx, sys, 0, &f)) != MDNL_OK ||
        (st = prepare(ctx, &f, cutoff, &g)) != MDNL_OK)
        return st;
    const mdnl_list_kind kind = flags & MDNL_NEIGHBORS_FULL ? MDNL_LIST_FULL : MDNL_LIST_HALF;
    if ((st = mdnl_work_check_list_memory(ctx->source, &g, kind == MDNL_LIST_FULL, 1)) != MDNL_OK)
        return st;
#ifdef MDNL_HAVE_CUDA
    if (ctx->backend == MDNL_COMPUTE_CUDA) {
        ctx->last_method = ctx->method == MDNL_METHOD_AUTO ? mdnl_nlist_cuda_auto(&g) : ctx->method;
        st = mdnl_nlist_build_cuda(ctx->cuda, &g, (const float(*)[4])ctx->pos4, ctx->method, kind, &ctx->list);
    } else
#endif
    {
        ctx->last_method = ctx->method == MDNL_METHOD_AUTO ? MDNL_METHOD_CELL : ctx->method;
        st = mdnl_nlist_build_cpu_kept(&ctx->kept, &g, (const float(*)[4])ctx->pos4, ctx->method, kind,
                                       &ctx->list);
    }
    if (st != MDNL_OK)
        return st;
    const int want_S = (flags & (MDNL_NEIGHBORS_SHIFTS | MDNL_NEIGHBORS_VECTORS)) != 0;
    const int want_D = (flags & MDNL_NEIGHBORS_VECTORS) != 0;
    if (want_S && (st = host_shifts(ctx, &f, &g, kind == MDNL_LIST_HALF, want_D)) != MDNL_OK)
        return st;
    if (!ctx->list.offsets && (st = mdnl_nlist_reserve(&ctx->list, f.natoms, 0)) != MDNL_OK)
        return st;
    out->n = ctx->list.natoms;
    out->npairs = ctx->list.npairs;
    out->offsets = ctx->list.offsets;
    out->indices = ctx->list.j;
    out->distances = ctx->list.d;
    out->shifts = flags & MDNL_NEIGHBORS_SHIFTS ? &ctx->shifts[0][0] : NULL;
    out->vectors = want_D ? &ctx->vectors[0][0] : NULL;
    return MDNL_OK;
}

mdnl_status mdnl_neighbors(mdnl_context *ctx, const mdnl_system *sys, double cutoff, int flags,
                           mdnl_neighbor_list *out)
{
    if (!ctx || !out)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_neighbors: %s is NULL", !ctx ? "the context" : "out");
    memset(out, 0, sizeof *out);
    mdnl_lib_scope s = mdnl_lib_enter(ctx);
    mdnl_status st = neighbors_host(ctx, sys, cutoff, flags, out);
    if (st != MDNL_OK)
        memset(out, 0, sizeof *out);
    return leave(s, st, "mdnl_neighbors");
}

#ifdef MDNL_HAVE_CUDA
static mdnl_status neighbors_device(mdnl_context *ctx, const mdnl_system *sys, double cutoff, int flags,
                                    void *stream, mdnl_neighbor_list *out)
{
    mdnl_frame f;
    mdnl_geom g;
    mdnl_status st;
    if ((st = mdnl_lib_check_flags(flags)) != MDNL_OK || (st = system_frame(ctx, sys, 1, &f)) != MDNL_OK)
        return st;
    if (!(cutoff > 0) || !isfinite(cutoff))
        return mdnl_error(MDNL_ERR_USAGE, "cutoff must be a positive finite number, got %g", cutoff);
    void *after = NULL;
    if ((st = mdnl_lib_cuda_mark(ctx->post, stream, &after)) != MDNL_OK ||
        (st = mdnl_geom_prepare_cuda_dev(ctx->wrap, &f, sys->positions, sys->dtype == MDNL_FLOAT32, after, cutoff,
                                         &g)) != MDNL_OK)
        return st;
    const mdnl_list_kind kind = flags & MDNL_NEIGHBORS_FULL ? MDNL_LIST_FULL : MDNL_LIST_HALF;
    void *lstream = mdnl_cuda_ctx_stream(ctx->cuda);
    mdnl_nlist_dev dev;
    /* the occupancy guard of mdnl_geom_prepare, on the device, before any pair work */
    if ((st = mdnl_cuda_stream_wait(lstream, mdnl_wrap_cuda_ready(ctx->wrap))) != MDNL_OK ||
        (st = mdnl_lib_cuda_check_cells(ctx->post, lstream, &g, mdnl_wrap_cuda_positions(ctx->wrap))) != MDNL_OK ||
        (st = mdnl_nlist_build_cuda_devpos(ctx->cuda, &g, mdnl_wrap_cuda_positions(ctx->wrap), MDNL_METHOD_AUTO,
                                           kind, &dev)) != MDNL_OK ||
        (st = mdnl_lib_cuda_sync(lstream)) != MDNL_OK)
        return st;
    const int32_t *d_S = NULL;
    const double *d_D = NULL;
    if (flags & (MDNL_NEIGHBORS_SHIFTS | MDNL_NEIGHBORS_VECTORS) &&
        (st = mdnl_pair_shifts_cuda(ctx->shift, lstream, &f, &g, &dev, kind == MDNL_LIST_HALF, sys->positions,
                                    sys->dtype == MDNL_FLOAT32, (flags & MDNL_NEIGHBORS_VECTORS) != 0, &d_S, &d_D)) !=
            MDNL_OK)
        return st;
    out->n = dev.natoms;
    out->npairs = dev.npairs;
    out->offsets = dev.d_offsets;
    out->indices = dev.d_j;
    out->distances = dev.d_d;
    out->shifts = flags & MDNL_NEIGHBORS_SHIFTS ? d_S : NULL;
    out->vectors = d_D;
    return MDNL_OK;
}
#endif

mdnl_status mdnl_neighbors_device(mdnl_context *ctx, const mdnl_system *sys, double cutoff, int flags, void *stream,
                                  mdnl_neighbor_list *out)
{
    if (!ctx || !out)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_neighbors_device: %s is NULL", !ctx ? "the context" : "out");
    memset(out, 0, sizeof *out);
    if (ctx->backend != MDNL_COMPUTE_CUDA)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_neighbors_device: the context computes on the CPU; device "
                                          "positions need a CUDA context");
#ifdef MDNL_HAVE_CUDA
    mdnl_lib_scope s = mdnl_lib_enter(ctx);
    mdnl_status st = neighbors_device(ctx, sys, cutoff, flags, stream, out);
    if (st != MDNL_OK)
        memset(out, 0, sizeof *out);
    return leave(s, st, "mdnl_neighbors_device");
#else
    (void)sys, (void)cutoff, (void)flags, (void)stream;
    return mdnl_error(MDNL_ERR_INTERNAL, "mdnl_neighbors_device: a CUDA context in a build without CUDA");
#endif
}

/* ---- energy ---- */

mdnl_status mdnl_lib_potential_of(const mdnl_pair_params *pp, double cutoff, mdnl_potential *p)
{
    if (!pp)
        return mdnl_error(MDNL_ERR_USAGE, "the pair parameters are NULL");
    if (pp->style == MDNL_PAIR_LJ)
        return mdnl_potential_make(MDNL_POTENTIAL_LJ, pp->epsilon, pp->sigma, 0, pp->shift != 0, cutoff, p);
    if (pp->style == MDNL_PAIR_MORSE)
        return mdnl_potential_make(MDNL_POTENTIAL_MORSE, pp->d0, pp->alpha, pp->r0, pp->shift != 0, cutoff, p);
    return mdnl_error(MDNL_ERR_USAGE, "pair style %d is neither MDNL_PAIR_LJ (1) nor MDNL_PAIR_MORSE (2)",
                      (int)pp->style);
}

static mdnl_status energy_body(mdnl_context *ctx, const mdnl_system *sys, const mdnl_pair_params *pp, double cutoff,
                               double *total, double *per_atom)
{
    mdnl_frame f;
    mdnl_geom g;
    mdnl_potential p;
    mdnl_status st;
    if ((st = mdnl_lib_potential_of(pp, cutoff, &p)) != MDNL_OK || (st = system_frame(ctx, sys, 0, &f)) != MDNL_OK ||
        (st = prepare(ctx, &f, cutoff, &g)) != MDNL_OK)
        return st;
#ifdef MDNL_HAVE_CUDA
    if (ctx->backend == MDNL_COMPUTE_CUDA) {
        if (!ctx->energy && (st = mdnl_energy_cuda_create(mdnl_cuda_ctx_stream(ctx->cuda), &ctx->energy)) != MDNL_OK)
            return st;
        return mdnl_energy_frame_cuda(ctx->energy, &g, (const float(*)[4])ctx->pos4, &p, total, per_atom);
    }
#endif
    return mdnl_energy_frame_cpu(&g, (const float(*)[4])ctx->pos4, &p, total, per_atom);
}

mdnl_status mdnl_energy(mdnl_context *ctx, const mdnl_system *sys, const mdnl_pair_params *params, double cutoff,
                        double *total, double *per_atom)
{
    if (!ctx || !total)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_energy: %s is NULL", !ctx ? "the context" : "total");
    *total = 0;
    mdnl_lib_scope s = mdnl_lib_enter(ctx);
    return leave(s, energy_body(ctx, sys, params, cutoff, total, per_atom), "mdnl_energy");
}

mdnl_status mdnl_lib_pair_table(int32_t ntypes, const mdnl_pair_params *params, const double *cutoffs,
                                mdnl_pair_table *t)
{
    if (ntypes < 1 || ntypes > MDNL_ENERGY_MAX_TYPES)
        return mdnl_error(MDNL_ERR_USAGE, "ntypes = %d, expected 1..%d", ntypes, MDNL_ENERGY_MAX_TYPES);
    if (!params || !cutoffs)
        return mdnl_error(MDNL_ERR_USAGE, "the %s are NULL", !params ? "pair parameters" : "cutoffs");
    memset(t, 0, sizeof *t);
    t->ntypes = ntypes;
    mdnl_status st;
    for (int32_t a = 0; a < ntypes; ++a)
        for (int32_t b = 0; b < ntypes; ++b) {
            const int32_t k = a * ntypes + b, kt = b * ntypes + a;
            if (params[k].style != params[0].style)
                return mdnl_error(MDNL_ERR_USAGE, "params[%d] has style %d, params[0] %d: one style throughout", k,
                                  (int)params[k].style, (int)params[0].style);
            const mdnl_pair_params *x = &params[k], *y = &params[kt];
            if (x->style != y->style || x->epsilon != y->epsilon || x->sigma != y->sigma || x->d0 != y->d0 ||
                x->alpha != y->alpha || x->r0 != y->r0 || (x->shift != 0) != (y->shift != 0) ||
                cutoffs[k] != cutoffs[kt])
                return mdnl_error(MDNL_ERR_USAGE, "pair (%d, %d) differs from pair (%d, %d): the table must be "
                                  "symmetric", a, b, b, a);
            if ((st = mdnl_lib_potential_of(&params[k], cutoffs[k], &t->p[k])) != MDNL_OK)
                return mdnl_error(st, "pair (%d, %d): %s", a, b, mdnl_last_error());
            t->cut2[k] = (float)(cutoffs[k] * cutoffs[k]);
            t->max_cutoff = cutoffs[k] > t->max_cutoff ? cutoffs[k] : t->max_cutoff;
        }
    return MDNL_OK;
}

static mdnl_status energy_types_body(mdnl_context *ctx, const mdnl_system *sys, int32_t ntypes,
                                     const mdnl_pair_params *params, const double *cutoffs, const int32_t *types,
                                     double *total, double *per_atom)
{
    mdnl_pair_table t;
    mdnl_status st = mdnl_lib_pair_table(ntypes, params, cutoffs, &t);
    if (st != MDNL_OK)
        return st;
    mdnl_frame f;
    mdnl_geom g;
    if ((st = system_frame(ctx, sys, 0, &f)) != MDNL_OK)
        return st;
    if (f.natoms > 0 && !types)
        return mdnl_error(MDNL_ERR_USAGE, "the types are NULL");
    for (int64_t i = 0; i < f.natoms; ++i)
        if (types[i] < 0 || types[i] >= ntypes)
            return mdnl_error(MDNL_ERR_USAGE, "types[%lld] = %d, expected 0..%d", (long long)i, types[i], ntypes - 1);
    if ((st = prepare(ctx, &f, t.max_cutoff, &g)) != MDNL_OK)
        return st;
#ifdef MDNL_HAVE_CUDA
    if (ctx->backend == MDNL_COMPUTE_CUDA) {
        if (!ctx->energy && (st = mdnl_energy_cuda_create(mdnl_cuda_ctx_stream(ctx->cuda), &ctx->energy)) != MDNL_OK)
            return st;
        return mdnl_energy_table_frame_cuda(ctx->energy, &g, (const float(*)[4])ctx->pos4, types, &t, total,
                                            per_atom);
    }
#endif
    return mdnl_energy_table_frame_cpu(&g, (const float(*)[4])ctx->pos4, types, &t, total, per_atom);
}

mdnl_status mdnl_energy_types(mdnl_context *ctx, const mdnl_system *sys, int32_t ntypes,
                              const mdnl_pair_params *params, const double *cutoffs, const int32_t *types,
                              double *total, double *per_atom)
{
    if (!ctx || !total)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_energy_types: %s is NULL", !ctx ? "the context" : "total");
    *total = 0;
    mdnl_lib_scope s = mdnl_lib_enter(ctx);
    return leave(s, energy_types_body(ctx, sys, ntypes, params, cutoffs, types, total, per_atom),
                 "mdnl_energy_types");
}

/* ---- coordination numbers ---- */

_Static_assert(MDNL_COORDINATION_MAX_PAIRS == MDNL_COORD_MAX_COLS, "the header's limit is the kernels'");
_Static_assert(MDNL_ENERGY_MAX_TYPES == MDNL_PAIR_TYPES_MAX, "the header's limit is the table's");

/* Species ids >= 0 when pairs are asked for (NULL only without atoms). */
static mdnl_status check_species(const int32_t *species, int64_t n, int32_t npairs)
{
    if (npairs == 0)
        return MDNL_OK;
    if (!species && n > 0)
        return mdnl_error(MDNL_ERR_USAGE, "species are NULL, but species pairs are asked for");
    for (int64_t i = 0; i < n; ++i)
        if (species[i] < 0)
            return mdnl_error(MDNL_ERR_USAGE, "species[%lld] = %d is negative", (long long)i, species[i]);
    return MDNL_OK;
}

static mdnl_status coordination_body(mdnl_context *ctx, const mdnl_system *sys, double cutoff,
                                     const int32_t *species, int32_t npairs, const int32_t (*pairs)[2],
                                     const mdnl_coord_cuts *cuts, int32_t *counts)
{
    if (npairs < 0 || npairs > MDNL_COORDINATION_MAX_PAIRS || (npairs > 0 && !pairs))
        return mdnl_error(MDNL_ERR_USAGE, "npairs = %d, expected 0..%d with pairs not NULL", npairs,
                          MDNL_COORDINATION_MAX_PAIRS);
    mdnl_frame f;
    mdnl_geom g;
    mdnl_status st;
    if ((st = system_frame(ctx, sys, 0, &f)) != MDNL_OK || (st = check_species(species, f.natoms, npairs)) != MDNL_OK)
        return st;
    if (f.natoms > 0 && !counts)
        return mdnl_error(MDNL_ERR_USAGE, "counts are NULL");
    if ((st = prepare(ctx, &f, cutoff, &g)) != MDNL_OK)
        return st;
#ifdef MDNL_HAVE_CUDA
    if (ctx->backend == MDNL_COMPUTE_CUDA) {
        if (!ctx->coord && (st = mdnl_coord_cuda_create(mdnl_cuda_ctx_stream(ctx->cuda), &ctx->coord)) != MDNL_OK)
            return st;
        return mdnl_coord_frame_cuda(ctx->coord, &g, (const float(*)[4])ctx->pos4, species, npairs, pairs, cuts,
                                     counts);
    }
#endif
    return mdnl_coord_frame_cpu(&g, (const float(*)[4])ctx->pos4, species, npairs, pairs, cuts, counts);
}

mdnl_status mdnl_coordination(mdnl_context *ctx, const mdnl_system *sys, double cutoff, const int32_t *species,
                              int32_t npairs, const int32_t (*pairs)[2], int32_t *counts)
{
    if (!ctx)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_coordination: the context is NULL");
    mdnl_lib_scope s = mdnl_lib_enter(ctx);
    return leave(s, coordination_body(ctx, sys, cutoff, species, npairs, pairs, NULL, counts), "mdnl_coordination");
}

_Static_assert(MDNL_COORDINATION_MAX_TYPES == MDNL_COORD_MAX_TYPES, "the header's limit is the kernels'");

/* The cutoff table into the kernels' squared float cutoffs, and its largest
 * entry (the traversal's cutoff). */
static mdnl_status coord_cuts_of(const mdnl_system *sys, int32_t ntypes, const double *cutoffs, const int32_t *types,
                                 mdnl_coord_cuts *cuts, double *max_cut)
{
    if (ntypes < 1 || ntypes > MDNL_COORDINATION_MAX_TYPES || !cutoffs)
        return mdnl_error(MDNL_ERR_USAGE, "ntypes = %d, expected 1..%d with cutoffs not NULL", ntypes,
                          MDNL_COORDINATION_MAX_TYPES);
    if (sys && sys->n > 0 && !types)
        return mdnl_error(MDNL_ERR_USAGE, "types are NULL");
    memset(cuts, 0, sizeof *cuts);
    cuts->ntypes = ntypes;
    cuts->types = types;
    *max_cut = 0;
    for (int32_t a = 0; a < ntypes; ++a)
        for (int32_t b = 0; b < ntypes; ++b) {
            const double c = cutoffs[a * ntypes + b];
            if (!(c >= 0) || !isfinite(c) || c != cutoffs[b * ntypes + a])
                return mdnl_error(MDNL_ERR_USAGE, "cutoffs[%d][%d] = %g: expected a symmetric table of finite values >= 0",
                                  a, b, c);
            cuts->cut2[a * ntypes + b] = (float)(c * c);
            *max_cut = c > *max_cut ? c : *max_cut;
        }
    if (!(*max_cut > 0))
        return mdnl_error(MDNL_ERR_USAGE, "every cutoff is 0: nothing can count");
    if (sys && types)
        for (int64_t i = 0; i < sys->n; ++i)
            if (types[i] < 0 || types[i] >= ntypes)
                return mdnl_error(MDNL_ERR_USAGE, "types[%lld] = %d, expected 0..%d", (long long)i, types[i],
                                  ntypes - 1);
    return MDNL_OK;
}

mdnl_status mdnl_coordination_types(mdnl_context *ctx, const mdnl_system *sys, int32_t ntypes, const double *cutoffs,
                                    const int32_t *types, const int32_t *species, int32_t npairs,
                                    const int32_t (*pairs)[2], int32_t *counts)
{
    if (!ctx)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_coordination_types: the context is NULL");
    mdnl_lib_scope s = mdnl_lib_enter(ctx);
    mdnl_coord_cuts cuts;
    double max_cut = 0;
    mdnl_status st = coord_cuts_of(sys, ntypes, cutoffs, types, &cuts, &max_cut);
    if (st == MDNL_OK)
        st = coordination_body(ctx, sys, max_cut, species, npairs, pairs, &cuts, counts);
    return leave(s, st, "mdnl_coordination_types");
}

/* ---- RDF ---- */

#define MAX_RDF_PAIRS 1024

struct mdnl_rdf {
    mdnl_hist_spec spec;
    int32_t (*pairs)[2];
    int32_t max_species; /* the largest species id a pair names, -1 without pairs */
    mdnl_rdf_accum acc;
};

mdnl_status mdnl_rdf_create(double r_max, int32_t bins, int32_t npairs, const int32_t (*pairs)[2], double volume,
                            mdnl_rdf **out)
{
    if (!out)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_rdf_create: out is NULL");
    *out = NULL;
    if (npairs < 0 || npairs > MAX_RDF_PAIRS || (npairs > 0 && !pairs))
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_rdf_create: npairs = %d, expected 0..%d with pairs not NULL",
                          npairs, MAX_RDF_PAIRS);
    if (!(volume >= 0) || !isfinite(volume))
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_rdf_create: volume %g is not a finite number >= 0", volume);
    if (bins > 1000000)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_rdf_create: %d bins, at most 1000000", bins);
    mdnl_rdf *r = calloc(1, sizeof *r);
    if (!r)
        return mdnl_error(MDNL_ERR_RESOURCE, "mdnl_rdf_create: out of host memory");
    r->max_species = -1;
    if (npairs > 0) {
        r->pairs = malloc((size_t)npairs * sizeof *r->pairs);
        if (!r->pairs) {
            free(r);
            return mdnl_error(MDNL_ERR_RESOURCE, "mdnl_rdf_create: out of host memory");
        }
        memcpy(r->pairs, pairs, (size_t)npairs * sizeof *r->pairs);
        for (int32_t p = 0; p < npairs; ++p)
            for (int k = 0; k < 2; ++k) {
                if (r->pairs[p][k] < 0 || r->pairs[p][k] >= MDNL_MAX_SPECIES - 1) {
                    mdnl_status st = mdnl_error(MDNL_ERR_USAGE, "mdnl_rdf_create: pairs[%d][%d] = %d, expected a "
                                                "species id 0..%d", p, k, r->pairs[p][k], MDNL_MAX_SPECIES - 2);
                    mdnl_rdf_free(r);
                    return st;
                }
                r->max_species = r->pairs[p][k] > r->max_species ? r->pairs[p][k] : r->max_species;
            }
    }
    r->spec = (mdnl_hist_spec){r_max, bins, npairs, (const int32_t(*)[2])r->pairs};
    mdnl_status st = mdnl_hist_spec_check(&r->spec, NULL, r->max_species + 1);
    if (st == MDNL_OK)
        st = mdnl_rdf_accum_init(&r->acc, &r->spec, volume);
    if (st != MDNL_OK) {
        mdnl_rdf_free(r);
        return mdnl_error(st, "mdnl_rdf_create: %s", mdnl_last_error());
    }
    *out = r;
    return MDNL_OK;
}

void mdnl_rdf_free(mdnl_rdf *rdf)
{
    if (!rdf)
        return;
    mdnl_rdf_accum_free(&rdf->acc);
    free(rdf->pairs);
    free(rdf);
}

/* One frame's histogram of `spec` (pair ids up to max_species) into
 * counts[max(1, npairs) * bins], with the frame's A and B atoms (na, nb: [max(1, npairs)]) and
 * its normalisation volume. */
static mdnl_status histogram_frame(mdnl_context *ctx, const mdnl_system *sys, const mdnl_hist_spec *spec,
                                   int32_t max_species, const int32_t *species, uint64_t *counts, int64_t *na,
                                   int64_t *nb, double *volume)
{
    mdnl_frame f;
    mdnl_geom g;
    mdnl_status st;
    if ((st = system_frame(ctx, sys, 0, &f)) != MDNL_OK ||
        (st = check_species(species, f.natoms, spec->npairs)) != MDNL_OK ||
        (st = prepare(ctx, &f, spec->r_max, &g)) != MDNL_OK)
        return st;
    /* Species ids beyond those the pairs name match no pair: the ids the
     * kernels see are within the pairs' range or one past it. */
    const int32_t *sp = spec->npairs > 0 ? species : NULL;
    if (sp) {
        if ((st = mdnl_lib_grow((void **)&ctx->species, &ctx->species_cap, f.natoms, sizeof *ctx->species,
                                "species")) != MDNL_OK)
            return st;
        for (int64_t i = 0; i < f.natoms; ++i)
            ctx->species[i] = species[i] <= max_species ? species[i] : max_species + 1;
        sp = ctx->species;
    }
#ifdef MDNL_HAVE_CUDA
    if (ctx->backend == MDNL_COMPUTE_CUDA) {
        if (!ctx->hist && (st = mdnl_hist_cuda_create(&ctx->hist)) != MDNL_OK)
            return st;
        st = mdnl_hist_frame_cuda(ctx->hist, &g, (const float(*)[4])ctx->pos4, sp, spec, MDNL_HIST_AUTO,
                                  MDNL_HIST_TRAV_AUTO, counts);
    } else
#endif
        st = mdnl_hist_frame_cpu(&g, (const float(*)[4])ctx->pos4, sp, spec, counts);
    if (st != MDNL_OK)
        return st;
    mdnl_hist_species_counts(spec, sp, f.natoms, na, nb);
    const int periodic = f.box.has_lattice && (f.box.pbc[0] || f.box.pbc[1] || f.box.pbc[2]);
    *volume = periodic ? g.volume : 0.0;
    return MDNL_OK;
}

static mdnl_status rdf_body(mdnl_context *ctx, mdnl_rdf *r, const mdnl_system *sys, const int32_t *species)
{
    int64_t na[MAX_RDF_PAIRS], nb[MAX_RDF_PAIRS];
    double volume = 0;
    const int64_t nh = mdnl_hist_nhist(&r->spec);
    mdnl_status st;
    if ((st = mdnl_lib_grow((void **)&ctx->counts, &ctx->counts_cap, nh * r->spec.bins, sizeof *ctx->counts,
                            "histogram counts")) != MDNL_OK ||
        (st = histogram_frame(ctx, sys, &r->spec, r->max_species, species, ctx->counts, na, nb, &volume)) != MDNL_OK)
        return st;
    return mdnl_rdf_accum_add(&r->acc, ctx->counts, na, nb, volume);
}

mdnl_status mdnl_rdf_add(mdnl_context *ctx, mdnl_rdf *rdf, const mdnl_system *sys, const int32_t *species)
{
    if (!ctx || !rdf)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_rdf_add: %s is NULL", !ctx ? "the context" : "the RDF");
    mdnl_lib_scope s = mdnl_lib_enter(ctx);
    return leave(s, rdf_body(ctx, rdf, sys, species), "mdnl_rdf_add");
}

static mdnl_status histogram_body(mdnl_context *ctx, const mdnl_system *sys, double r_max, int32_t bins,
                                  const int32_t *species, int32_t npairs, const int32_t (*pairs)[2], uint64_t *counts,
                                  double *volume)
{
    if (npairs < 0 || npairs > MAX_RDF_PAIRS || (npairs > 0 && !pairs))
        return mdnl_error(MDNL_ERR_USAGE, "npairs = %d, expected 0..%d with pairs not NULL", npairs, MAX_RDF_PAIRS);
    if (!counts)
        return mdnl_error(MDNL_ERR_USAGE, "counts are NULL");
    int32_t max_species = -1;
    for (int32_t p = 0; p < npairs; ++p)
        for (int k = 0; k < 2; ++k) {
            if (pairs[p][k] < 0 || pairs[p][k] >= MDNL_MAX_SPECIES - 1)
                return mdnl_error(MDNL_ERR_USAGE, "pairs[%d][%d] = %d, expected a species id 0..%d", p, k,
                                  pairs[p][k], MDNL_MAX_SPECIES - 2);
            max_species = pairs[p][k] > max_species ? pairs[p][k] : max_species;
        }
    const mdnl_hist_spec spec = {r_max, bins, npairs, pairs};
    mdnl_status st = mdnl_hist_spec_check(&spec, NULL, max_species + 1);
    int64_t na[MAX_RDF_PAIRS], nb[MAX_RDF_PAIRS];
    double v = 0;
    if (st != MDNL_OK || (st = histogram_frame(ctx, sys, &spec, max_species, species, counts, na, nb, &v)) != MDNL_OK)
        return st;
    if (volume)
        *volume = v;
    return MDNL_OK;
}

mdnl_status mdnl_histogram(mdnl_context *ctx, const mdnl_system *sys, double r_max, int32_t bins,
                           const int32_t *species, int32_t npairs, const int32_t (*pairs)[2], uint64_t *counts,
                           double *volume)
{
    if (!ctx)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_histogram: the context is NULL");
    mdnl_lib_scope s = mdnl_lib_enter(ctx);
    return leave(s, histogram_body(ctx, sys, r_max, bins, species, npairs, pairs, counts, volume), "mdnl_histogram");
}

int64_t mdnl_rdf_frames(const mdnl_rdf *rdf) { return rdf ? rdf->acc.nframes : 0; }

int mdnl_rdf_g_defined(const mdnl_rdf *rdf) { return rdf ? mdnl_rdf_has_g(&rdf->acc) : 0; }

mdnl_status mdnl_rdf_values(const mdnl_rdf *rdf, double *r, double *g, double *count_per_atom, double *n)
{
    if (!rdf)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl_rdf_values: the RDF is NULL");
    if (r)
        for (int32_t b = 0; b < rdf->spec.bins; ++b) {
            double lo, hi;
            mdnl_rdf_bin_edges(rdf->spec.r_max, rdf->spec.bins, b, &lo, &hi, &r[b]);
        }
    mdnl_rdf_result(&rdf->acc, g, count_per_atom, n);
    return MDNL_OK;
}

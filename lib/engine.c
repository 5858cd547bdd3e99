/* engine.c — the backend dispatch of libmdnl's streams (see engine.h). */
#define _POSIX_C_SOURCE 200809L
#include "engine.h"

#include "device.h"
#include "energy.h"
#include "pair_shift.h"

#ifdef MDNL_HAVE_CUDA
#include "cuda_host.h"
#include "energy_cuda.h"
#include "geometry_cuda.h"
#include "nlist_cuda.h"
#include "pair_shift_cuda.h"
#include "rdf_cuda.h"
#endif

#include <stdlib.h>
#include <string.h>

mdnl_status mdnl_engine_init(mdnl_engine *e, mdnl_compute backend)
{
    memset(e, 0, sizeof *e);
    e->last_method = MDNL_METHOD_AUTO;
    e->backend = backend;
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_COMPUTE_CUDA) {
        mdnl_cuda_ctx *ctx = NULL;
        mdnl_status st;
        if ((st = mdnl_cuda_ctx_create(&ctx)) != MDNL_OK)
            return st;
        e->cuda = ctx;
    }
#else
    e->backend = MDNL_COMPUTE_CPU; /* a CUDA context cannot exist without CUDA */
#endif
    return MDNL_OK;
}

void mdnl_engine_free(mdnl_engine *e)
{
    if (!e)
        return;
#ifdef MDNL_HAVE_CUDA
    mdnl_wrap_cuda_free(e->wrap_cuda);
    mdnl_shift_cuda_free(e->shift_cuda);
    mdnl_energy_cuda_free(e->energy_cuda);
    mdnl_hist_cuda_free(e->hist_cuda);
    mdnl_cuda_ctx_free(e->cuda);
#endif
    mdnl_nlist_cpu_kept_free(&e->nlist_cpu);
    memset(e, 0, sizeof *e);
}

void *mdnl_engine_host_alloc(const mdnl_engine *e, size_t bytes, const char *what)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_COMPUTE_CUDA)
        return mdnl_cuda_host_alloc(bytes, what);
#endif
    (void)e;
    return mdnl_malloc(bytes, what);
}

void mdnl_engine_host_free(const mdnl_engine *e, void *p)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_COMPUTE_CUDA) {
        mdnl_cuda_host_free(p);
        return;
    }
#endif
    (void)e;
    free(p);
}

mdnl_status mdnl_engine_prepare_device(mdnl_engine *e, const mdnl_frame *f, double cutoff, mdnl_geom *g, int ticket,
                                       double *tabs_bound)
{
    *tabs_bound = 0;
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_COMPUTE_CUDA) {
        if (!e->wrap_cuda) {
            mdnl_wrap_cuda *w = NULL;
            mdnl_status st = mdnl_wrap_cuda_create(&w);
            if (st != MDNL_OK) {
                mdnl_wrap_cuda_free(w);
                return st;
            }
            e->wrap_cuda = w;
        }
        /* The last frame's consumers must have read the device positions
         * before they are overwritten: the energy's cell build and the
         * histogram's copy (the list build is synchronous). The stream waits
         * for them, the host does not. */
        void *wait[2] = {e->energy_cuda ? mdnl_energy_cuda_positions_ready(e->energy_cuda) : NULL,
                         e->hist_cuda ? mdnl_hist_cuda_copied_event(e->hist_cuda) : NULL};
        return mdnl_wrap_cuda_launch(e->wrap_cuda, f, cutoff, g, wait, 2, ticket, tabs_bound);
    }
#endif
    (void)e, (void)f, (void)cutoff, (void)g, (void)ticket;
    return mdnl_error(MDNL_ERR_INTERNAL, "mdnl_engine_prepare_device: the CPU backend wraps on the host");
}

mdnl_status mdnl_engine_wrap_result(mdnl_engine *e, int ticket, double tlo[3], double thi[3], int64_t *first_bad)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_COMPUTE_CUDA && e->wrap_cuda)
        return mdnl_wrap_cuda_result(e->wrap_cuda, ticket, tlo, thi, first_bad);
#endif
    (void)e, (void)ticket, (void)tlo, (void)thi, (void)first_bad;
    return mdnl_error(MDNL_ERR_INTERNAL, "mdnl_engine_wrap_result: no device wrap was launched");
}

#ifdef MDNL_HAVE_CUDA
/* The device positions of the last prepare_device, or NULL (recorded). */
static const float *device_positions(mdnl_engine *e)
{
    if (!e->wrap_cuda) {
        mdnl_error(MDNL_ERR_INTERNAL, "engine: device positions asked for before mdnl_engine_prepare_device");
        return NULL;
    }
    return mdnl_wrap_cuda_positions(e->wrap_cuda);
}
#endif

mdnl_status mdnl_engine_nlist(mdnl_engine *e, const mdnl_geom *g, const float (*pos4)[4], mdnl_method m,
                              mdnl_list_kind kind, mdnl_nlist *out)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_COMPUTE_CUDA) {
        e->last_method = m == MDNL_METHOD_AUTO ? mdnl_nlist_cuda_auto(g) : m;
        if (pos4)
            return mdnl_nlist_build_cuda(e->cuda, g, pos4, m, kind, out);
        const float *d_pos4 = device_positions(e);
        if (!d_pos4)
            return MDNL_ERR_INTERNAL;
        void *stream = mdnl_cuda_ctx_stream(e->cuda);
        mdnl_nlist_dev dev;
        mdnl_status st;
        if ((st = mdnl_cuda_stream_wait(stream, mdnl_wrap_cuda_ready(e->wrap_cuda))) != MDNL_OK ||
            (st = mdnl_nlist_build_cuda_devpos(e->cuda, g, d_pos4, m, kind, &dev)) != MDNL_OK)
            return st;
        return mdnl_nlist_download_cuda(stream, &dev, out);
    }
#endif
    if (!pos4)
        return mdnl_error(MDNL_ERR_INTERNAL, "engine: the CPU backend needs host positions");
    e->last_method = m == MDNL_METHOD_AUTO ? MDNL_METHOD_CELL : m;
    return mdnl_nlist_build_cpu_kept(&e->nlist_cpu, g, pos4, m, kind, out);
}

mdnl_status mdnl_engine_shifts(mdnl_engine *e, const mdnl_frame *f, const mdnl_geom *g, const float (*pos4)[4],
                               mdnl_list_kind kind, const mdnl_nlist *l, int32_t (*S)[3], double (*D)[3])
{
    const int half = kind == MDNL_LIST_HALF;
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_COMPUTE_CUDA) {
        mdnl_status st;
        mdnl_nlist_dev dev;
        if (!e->shift_cuda) {
            mdnl_shift_cuda *sc = NULL;
            if ((st = mdnl_shift_cuda_create(&sc)) != MDNL_OK) {
                mdnl_shift_cuda_free(sc);
                return st;
            }
            e->shift_cuda = sc;
        }
        if ((st = mdnl_nlist_cuda_last(e->cuda, &dev)) != MDNL_OK)
            return st;
        return mdnl_pair_shifts_cuda_host(e->shift_cuda, mdnl_cuda_ctx_stream(e->cuda), f, g, &dev, half, S, D);
    }
#endif
    if (!pos4)
        return mdnl_error(MDNL_ERR_INTERNAL, "engine: the CPU backend needs host positions");
    return mdnl_pair_shifts_cpu(f, g, pos4, l, half, S, D);
}

#ifdef MDNL_HAVE_CUDA
static mdnl_status energy_handle(mdnl_engine *e)
{
    if (!e->energy_cuda) {
        mdnl_energy_cuda *ec = NULL;
        mdnl_status st = mdnl_energy_cuda_create(mdnl_cuda_ctx_stream(e->cuda), &ec);
        if (st != MDNL_OK)
            return st;
        e->energy_cuda = ec;
    }
    return MDNL_OK;
}
#endif

mdnl_status mdnl_engine_energy_table(mdnl_engine *e, const mdnl_geom *g, const float (*pos4)[4],
                                     const int32_t *types, const mdnl_pair_table *t, double *total, double *per_atom)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_COMPUTE_CUDA) {
        mdnl_status st = energy_handle(e);
        if (st != MDNL_OK)
            return st;
        return mdnl_energy_table_frame_cuda(e->energy_cuda, g, pos4, types, t, total, per_atom);
    }
#endif
    return mdnl_energy_table_frame_cpu(g, pos4, types, t, total, per_atom);
}

#ifdef MDNL_HAVE_CUDA
static mdnl_status hist_handle(mdnl_engine *e)
{
    if (!e->hist_cuda) {
        mdnl_hist_cuda *h = NULL;
        mdnl_status st = mdnl_hist_cuda_create(&h);
        if (st != MDNL_OK)
            return st;
        e->hist_cuda = h;
    }
    return MDNL_OK;
}
#endif

mdnl_status mdnl_engine_launch(mdnl_engine *e, int ticket, const float (*pos4)[4], const mdnl_geom *g_cut,
                               const mdnl_potential *pot, double *h_total, const mdnl_geom *g_rmax,
                               const int32_t *species, const mdnl_hist_spec *spec, uint64_t *h_counts)
{
    mdnl_status st;
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_COMPUTE_CUDA) {
        if ((pot && (st = energy_handle(e)) != MDNL_OK) || (spec && (st = hist_handle(e)) != MDNL_OK))
            return st;
        if (!pos4) { /* positions on the device (mdnl_engine_prepare_device): both read them there */
            const float *d_pos4 = device_positions(e);
            if (!d_pos4)
                return MDNL_ERR_INTERNAL;
            void *ready = mdnl_wrap_cuda_ready(e->wrap_cuda);
            if (pot && (st = mdnl_energy_cuda_launch_dev(e->energy_cuda, g_cut, d_pos4, ready, pot, ticket, h_total)) !=
                           MDNL_OK)
                return st;
            if (spec)
                return mdnl_hist_cuda_launch(e->hist_cuda, g_rmax, NULL, d_pos4, ready, species, spec, ticket,
                                             h_counts);
            return MDNL_OK;
        }
        /* The energy's upload waits until the last histogram copied the
         * previous positions out of the energy's buffer; the histogram then
         * copies this frame's as soon as they are uploaded. */
        if (pot && (st = mdnl_energy_cuda_launch(e->energy_cuda, g_cut, pos4, pot,
                                                 spec ? mdnl_hist_cuda_copied_event(e->hist_cuda) : NULL, ticket,
                                                 h_total)) != MDNL_OK)
            return st;
        if (spec) {
            if (pot)
                return mdnl_hist_cuda_launch(e->hist_cuda, g_rmax, NULL, mdnl_energy_cuda_positions(e->energy_cuda),
                                             mdnl_energy_cuda_positions_ready(e->energy_cuda), species, spec, ticket,
                                             h_counts);
            return mdnl_hist_cuda_launch(e->hist_cuda, g_rmax, pos4, NULL, NULL, species, spec, ticket, h_counts);
        }
        return MDNL_OK;
    }
#endif
    (void)ticket;
    if (!pos4)
        return mdnl_error(MDNL_ERR_INTERNAL, "engine: the CPU backend needs host positions");
    if (pot && (st = mdnl_energy_frame_cpu(g_cut, pos4, pot, h_total, NULL)) != MDNL_OK)
        return st;
    if (spec && (st = mdnl_hist_frame_cpu(g_rmax, pos4, species, spec, h_counts)) != MDNL_OK)
        return st;
    return MDNL_OK;
}

mdnl_status mdnl_engine_collect(mdnl_engine *e, int ticket, bool energy, bool hist)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_COMPUTE_CUDA) {
        mdnl_status st;
        if (energy && (st = mdnl_energy_cuda_wait(e->energy_cuda, ticket)) != MDNL_OK)
            return st;
        if (hist && (st = mdnl_hist_cuda_wait(e->hist_cuda, ticket)) != MDNL_OK)
            return st;
        return MDNL_OK;
    }
#endif
    (void)e, (void)ticket, (void)energy, (void)hist;
    return MDNL_OK;
}

void mdnl_engine_quiesce(mdnl_engine *e)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_COMPUTE_CUDA)
        mdnl_cuda_device_sync();
#endif
    (void)e;
}

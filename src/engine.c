/* engine.c — backend dispatch for the commands (see engine.h). */
#include "engine.h"

#include "energy.h"

#ifdef MDNL_HAVE_CUDA
#include "cuda_host.h"
#include "energy_cuda.h"
#include "nlist_cuda.h"
#include "rdf_cuda.h"
#endif

#include <stdlib.h>
#include <string.h>

mdnl_status mdnl_engine_init(mdnl_engine *e, const mdnl_opts *o)
{
    memset(e, 0, sizeof *e);
    e->last_method = MDNL_METHOD_AUTO;
    mdnl_status st = mdnl_choose_backend(o, &e->backend);
    if (st != MDNL_OK)
        return st;
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_BACKEND_CUDA) {
        mdnl_cuda_ctx *ctx = NULL;
        if ((st = mdnl_cuda_ctx_create(&ctx)) != MDNL_OK)
            return st;
        e->cuda = ctx;
    }
#else
    e->backend = MDNL_BACKEND_CPU; /* choose_backend never picks CUDA without a device */
#endif
    return MDNL_OK;
}

void mdnl_engine_free(mdnl_engine *e)
{
    if (!e)
        return;
#ifdef MDNL_HAVE_CUDA
    mdnl_energy_cuda_free(e->energy_cuda);
    mdnl_hist_cuda_free(e->hist_cuda);
    mdnl_cuda_ctx_free(e->cuda);
#endif
    memset(e, 0, sizeof *e);
}

void *mdnl_engine_host_alloc(const mdnl_engine *e, size_t bytes, const char *what)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_BACKEND_CUDA)
        return mdnl_cuda_host_alloc(bytes, what);
#endif
    (void)e;
    return mdnl_malloc(bytes, what);
}

void mdnl_engine_host_free(const mdnl_engine *e, void *p)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_BACKEND_CUDA) {
        mdnl_cuda_host_free(p);
        return;
    }
#endif
    (void)e;
    free(p);
}

mdnl_status mdnl_engine_nlist(mdnl_engine *e, const mdnl_geom *g, const float (*pos4)[4], mdnl_method m,
                              mdnl_list_kind kind, mdnl_nlist *out)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_BACKEND_CUDA) {
        e->last_method = m == MDNL_METHOD_AUTO ? mdnl_nlist_cuda_auto(g) : m;
        return mdnl_nlist_build_cuda(e->cuda, g, pos4, m, kind, out);
    }
#endif
    e->last_method = m == MDNL_METHOD_AUTO ? MDNL_METHOD_CELL : m;
    return mdnl_nlist_build_cpu(g, pos4, m, kind, out);
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

mdnl_status mdnl_engine_energy(mdnl_engine *e, const mdnl_geom *g, const float (*pos4)[4], const mdnl_potential *p,
                               double *total, double *per_atom)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_BACKEND_CUDA) {
        mdnl_status st = energy_handle(e);
        if (st != MDNL_OK)
            return st;
        return mdnl_energy_frame_cuda(e->energy_cuda, g, pos4, p, total, per_atom);
    }
#endif
    return mdnl_energy_frame_cpu(g, pos4, p, total, per_atom);
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
    if (e->backend == MDNL_BACKEND_CUDA) {
        if ((pot && (st = energy_handle(e)) != MDNL_OK) || (spec && (st = hist_handle(e)) != MDNL_OK))
            return st;
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
    if (pot && (st = mdnl_energy_frame_cpu(g_cut, pos4, pot, h_total, NULL)) != MDNL_OK)
        return st;
    if (spec && (st = mdnl_hist_frame_cpu(g_rmax, pos4, species, spec, h_counts)) != MDNL_OK)
        return st;
    return MDNL_OK;
}

mdnl_status mdnl_engine_collect(mdnl_engine *e, int ticket, bool energy, bool hist)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_BACKEND_CUDA) {
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
    if (e->backend == MDNL_BACKEND_CUDA)
        mdnl_cuda_device_sync();
#endif
    (void)e;
}

mdnl_status mdnl_engine_hist(mdnl_engine *e, const mdnl_geom *g, const float (*pos4)[4], const int32_t *species,
                             const mdnl_hist_spec *spec, uint64_t *counts)
{
#ifdef MDNL_HAVE_CUDA
    if (e->backend == MDNL_BACKEND_CUDA) {
        mdnl_status st = hist_handle(e);
        if (st != MDNL_OK)
            return st;
        return mdnl_hist_frame_cuda(e->hist_cuda, g, pos4, species, spec, MDNL_HIST_AUTO, MDNL_HIST_TRAV_AUTO,
                                    counts);
    }
#endif
    return mdnl_hist_frame_cpu(g, pos4, species, spec, counts);
}

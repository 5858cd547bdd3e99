/* engine.c — backend dispatch for the commands (see engine.h). */
#include "engine.h"

#include <string.h>

mdnl_status mdnl_engine_init(mdnl_engine *e, const mdnl_opts *o)
{
    memset(e, 0, sizeof *e);
    mdnl_status st = mdnl_choose_backend(o, &e->backend);
    if (st != MDNL_OK)
        return st;
    if (e->backend == MDNL_BACKEND_CUDA) /* CUDA kernels arrive with the CUDA backend */
        e->backend = MDNL_BACKEND_CPU;
    return MDNL_OK;
}

void mdnl_engine_free(mdnl_engine *e)
{
    if (!e)
        return;
    memset(e, 0, sizeof *e);
}

mdnl_method mdnl_engine_method(const mdnl_engine *e, mdnl_method requested, int64_t natoms)
{
    (void)e;
    (void)natoms;
    return requested == MDNL_METHOD_AUTO ? MDNL_METHOD_CELL : requested;
}

mdnl_status mdnl_engine_nlist(mdnl_engine *e, const mdnl_geom *g, const float (*pos4)[4], mdnl_method m,
                              mdnl_list_kind kind, mdnl_nlist *out)
{
    return mdnl_nlist_build_cpu(g, pos4, mdnl_engine_method(e, m, g->natoms), kind, out);
}

/* engine.h — the compute backend behind the commands: CPU twins, or the CUDA
 * kernels when built with CUDA and a device is present. It holds what lives
 * across frames (the CUDA context with its device buffers). */
#ifndef MDNL_ENGINE_H
#define MDNL_ENGINE_H

#include "cli.h"
#include "nlist.h"

typedef struct mdnl_engine {
    mdnl_backend backend; /* CPU or CUDA, never AUTO */
    void *cuda;           /* mdnl_cuda_ctx when backend is CUDA */
} mdnl_engine;

mdnl_status mdnl_engine_init(mdnl_engine *e, const mdnl_opts *o);
void mdnl_engine_free(mdnl_engine *e);

/* The method `auto` resolves to for this backend and size. */
mdnl_method mdnl_engine_method(const mdnl_engine *e, mdnl_method requested, int64_t natoms);

mdnl_status mdnl_engine_nlist(mdnl_engine *e, const mdnl_geom *g, const float (*pos4)[4], mdnl_method m,
                              mdnl_list_kind kind, mdnl_nlist *out);

#endif

/* library.h — what the public calls of library.c share with the streams of
 * library_stream.c: the context, the entry scope (the context's thread count
 * and device for the calling thread), systems as frames. Internal to
 * libmdnl (hidden: lib/libmdnl.map exports only the public header). */
#ifndef MDNL_LIBRARY_H
#define MDNL_LIBRARY_H

#include "mdnl/mdnl.h"

#include "frame.h"
#include "mdnl.h"
#include "nlist.h"
#include "potential.h"

#ifdef MDNL_HAVE_CUDA
#include "coord_cuda.h"
#include "energy_cuda.h"
#include "geometry_cuda.h"
#include "library_cuda.h"
#include "nlist_cuda.h"
#include "pair_shift_cuda.h"
#include "rdf_cuda.h"
#endif

struct mdnl_context {
    mdnl_compute backend; /* CPU or CUDA, never AUTO */
    int device, threads;
    double max_pairs;
    char limit_name[64]; /* mdnl_context_set_limit_name's; "" the default */
    double (*xyz)[3]; /* float32 positions widened to double */
    int64_t xyz_cap;
    float (*pos4)[4];
    int64_t pos4_cap;
    mdnl_nlist list;
    mdnl_nlist_cpu_kept kept;
    int32_t (*shifts)[3];
    int64_t shifts_cap;
    double (*vectors)[3];
    int64_t vectors_cap;
    uint64_t *counts;
    int64_t counts_cap;
    int32_t *species; /* species clamped to the pairs' range (histograms) */
    int64_t species_cap;
    char *source;     /* mdnl_context_set_frame: messages name it; NULL: the call */
    int64_t frame;    /* the frame index messages name */
    mdnl_method method, last_method;
#ifdef MDNL_HAVE_CUDA
    mdnl_coord_cuda *coord;
    mdnl_cuda_ctx *cuda;
    mdnl_wrap_cuda *wrap;
    mdnl_energy_cuda *energy;
    mdnl_hist_cuda *hist;
    mdnl_lib_cuda *post;
    mdnl_shift_cuda *shift;
#endif
};

/* The calling thread's state a call changes for its context, restored by
 * mdnl_lib_restore: OpenMP's thread count, the kernels' and the runtime's
 * current device. */
typedef struct mdnl_lib_scope {
    int threads_before, device_before, current_before;
    const char *source;
} mdnl_lib_scope;

mdnl_lib_scope mdnl_lib_enter(const mdnl_context *ctx);
void mdnl_lib_restore(mdnl_lib_scope s);

/* Grows *p to n elements of `size` bytes (contents dropped). */
mdnl_status mdnl_lib_grow(void **p, int64_t *cap, int64_t n, size_t size, const char *what);

/* MDNL_ERR_USAGE when flags hold bits other than MDNL_NEIGHBORS_*. */
mdnl_status mdnl_lib_check_flags(int flags);

/* Checks sys and describes it as frame `index` under the work limit
 * max_pairs (named limit_option in refusals): f->pos NULL when `device`;
 * else the caller's float64 positions, or float32 ones widened into *xyz
 * (grown as needed). */
mdnl_status mdnl_lib_frame_of(const mdnl_system *sys, int64_t index, double max_pairs, const char *limit_option,
                              int device, double (**xyz)[3], int64_t *xyz_cap, mdnl_frame *f);

/* How the context's refusals name its limit. */
const char *mdnl_lib_limit_option(const mdnl_context *ctx);

/* A pair's parameters as a potential cut at `cutoff`. */
mdnl_status mdnl_lib_potential_of(const mdnl_pair_params *pp, double cutoff, mdnl_potential *p);

/* The per-pair table of mdnl_energy_types' arguments (checked: MDNL_ERR_USAGE). */
mdnl_status mdnl_lib_pair_table(int32_t ntypes, const mdnl_pair_params *params, const double *cutoffs,
                                mdnl_pair_table *t);

#endif

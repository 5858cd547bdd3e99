/* engine.h — the compute backend of a stream (library_stream.c): CPU twins,
 * or the CUDA kernels. It holds what lives across frames (the CUDA context
 * with its device buffers). Internal to libmdnl. */
#ifndef MDNL_ENGINE_H
#define MDNL_ENGINE_H

#include "mdnl/mdnl.h"
#include "nlist.h"
#include "potential.h"
#include "rdf.h"

typedef struct mdnl_engine {
    mdnl_compute backend; /* MDNL_COMPUTE_CPU or MDNL_COMPUTE_CUDA */
    void *cuda;           /* mdnl_cuda_ctx when backend is CUDA */
    mdnl_method last_method; /* what the last build used (auto resolved) */
    void *energy_cuda;       /* mdnl_energy_cuda, created on first use */
    void *hist_cuda;         /* mdnl_hist_cuda, created on first use */
    void *wrap_cuda;         /* mdnl_wrap_cuda, created on first use */
    void *shift_cuda;        /* mdnl_shift_cuda, created on first use */
    mdnl_nlist_cpu_kept nlist_cpu; /* the CPU list's row buffers, kept from frame to frame */
} mdnl_engine;

/* An engine on `backend` (CPU or CUDA), on the calling thread's current
 * device (the caller sets it: mdnl_cuda_use_device). */
mdnl_status mdnl_engine_init(mdnl_engine *e, mdnl_compute backend);
void mdnl_engine_free(mdnl_engine *e);

/* CUDA only: wraps frame f on the device (geometry_cuda.h
 * mdnl_wrap_cuda_launch) and lays out g for `cutoff` exactly as
 * mdnl_geom_prepare would; the positions stay on the device and the next
 * mdnl_engine_nlist / mdnl_engine_launch given pos4 == NULL use them (any
 * number of grids of the same frame: regrid g with mdnl_geom_regrid). The
 * host does not wait for earlier frames' work. On a frame periodic on every
 * axis it does not wait for the wrap either: *tabs_bound > 0 says that g was
 * laid out before the t-range, which mdnl_engine_wrap_result(ticket) gives
 * later (settle g with mdnl_geom_settle; a regridded grid is valid when
 * mdnl_geom_early_certain says so). Otherwise *tabs_bound = 0 and g is
 * final, its errors (a non-finite coordinate) reported here. Tickets
 * 0..MDNL_ENGINE_TICKETS-1, as mdnl_engine_launch's. MDNL_ERR_INTERNAL on
 * the CPU backend. */
mdnl_status mdnl_engine_prepare_device(mdnl_engine *e, const mdnl_frame *f, double cutoff, mdnl_geom *g, int ticket,
                                       double *tabs_bound);
mdnl_status mdnl_engine_wrap_result(mdnl_engine *e, int ticket, double tlo[3], double thi[3], int64_t *first_bad);

/* Host memory for per-frame inputs: pinned (page-locked) on the CUDA
 * backend, so uploads from it are fast; plain malloc on the CPU. NULL with
 * MDNL_ERR_RESOURCE recorded on failure. Thread-safe: the pipeline's prepare
 * thread allocates while the compute thread runs. */
void *mdnl_engine_host_alloc(const mdnl_engine *e, size_t bytes, const char *what);
void mdnl_engine_host_free(const mdnl_engine *e, void *p); /* NULL is a no-op */

/* pos4 == NULL (CUDA): the positions of the last mdnl_engine_prepare_device. */
mdnl_status mdnl_engine_nlist(mdnl_engine *e, const mdnl_geom *g, const float (*pos4)[4], mdnl_method m,
                              mdnl_list_kind kind, mdnl_nlist *out);

/* The image shift S ([l->npairs][3]) and, when D is not NULL, the vector D
 * ([l->npairs][3]) of every entry of the list l that mdnl_engine_nlist just
 * built from frame f (f->pos: the positions as given) with geometry g
 * (pair_shift.h: r_j - r_i + S·h = D). On CUDA from the list's device copy
 * (the device positions it was built from), else on the host from pos4. */
mdnl_status mdnl_engine_shifts(mdnl_engine *e, const mdnl_frame *f, const mdnl_geom *g, const float (*pos4)[4],
                               mdnl_list_kind kind, const mdnl_nlist *l, int32_t (*S)[3], double (*D)[3]);

/* The same with per-pair parameters (potential.h mdnl_pair_table) and the
 * atoms' types (mdnl_pair_table_types); g prepared at t->max_cutoff. */
mdnl_status mdnl_engine_energy_table(mdnl_engine *e, const mdnl_geom *g, const float (*pos4)[4],
                                     const int32_t *types, const mdnl_pair_table *t, double *total,
                                     double *per_atom);

/* Deferred frames, so that the host launches frame k+1 while the device
 * still works on frame k (`mdnl run`). _launch queues the energy (pot not
 * NULL, grid g_cut) and the histogram (spec not NULL, grid g_rmax) of pos4
 * (pinned, engine host memory, unchanged until _collect; NULL on CUDA: the
 * device positions of the last mdnl_engine_prepare_device), with their
 * results copied into h_total / h_counts (engine host memory);
 * _collect(ticket) waits for them. On the CPU _launch does the work and
 * _collect returns at once. Tickets 0..MDNL_ENGINE_TICKETS-1; frames
 * complete in launch order. After a failure call mdnl_engine_quiesce before
 * freeing any buffer a launch was given. */
#define MDNL_ENGINE_TICKETS 4
mdnl_status mdnl_engine_launch(mdnl_engine *e, int ticket, const float (*pos4)[4], const mdnl_geom *g_cut,
                               const mdnl_potential *pot, double *h_total, const mdnl_geom *g_rmax,
                               const int32_t *species, const mdnl_hist_spec *spec, uint64_t *h_counts);
mdnl_status mdnl_engine_collect(mdnl_engine *e, int ticket, bool energy, bool hist);
void mdnl_engine_quiesce(mdnl_engine *e);

#endif

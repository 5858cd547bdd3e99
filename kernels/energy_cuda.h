/* energy_cuda.h — the CUDA energy kernels behind the energy.h contract
 * (kernels in energy.cu; the CPU twin is energy_cpu.c).
 *
 * Plain C: C callers include it freely, but the functions exist only in CUDA
 * builds, so callers guard their use with MDNL_HAVE_CUDA.
 *
 * Kernels (thread -> data mappings; napkin math in bench/bench_energy.c):
 *   fused      total only, where the walk fits the grid (mdnl_walk_fits):
 *              the half-stencil warp walk (walk_cuda.cuh), a warp per home
 *              cell, each pair once, the hits compacted into a per-warp
 *              ring and evaluated 32 at a time; a cell a warp, 8 a block.
 *              Otherwise, and for per-atom energies: 2 threads per atom
 *              slot of the device cell list (cells_cuda.cuh, cell order;
 *              the stencil columns dealt round-robin to them, part sums
 *              added in part order): the walk cut to the atom's cutoff
 *              sphere (mdnl_for_each_pair_pruned_part: the same pairs in
 *              the same order as the 27-cell walk, fewer candidates), the
 *              total summed over the half traversal's pairs (candidate slot
 *              k > the atom's, or k equal with a positive shift), with
 *              per-atom energies the full walk (e_i = half its row, in
 *              double) summing those pairs apart for the total. Each walk's
 *              bits repeat run to run; the warp walk's total and the
 *              per-atom walk's sum the same terms in different orders and
 *              agree to rounding. Every path (mdnl energy, mdnl run, the
 *              tests) uses the same walk for the same question.
 *   list       thread per CSR row i: sums mdnl_pair_energy_d over the row
 *              in row order. Full list: e_i = half the row. Half list: the
 *              row's sum goes to the total; per-atom energies, when asked,
 *              are scattered with atomicAdd (not bit-reproducible: use a full
 *              list or the fused path when they must be).
 * and, in the same kernel, the reduction of the per-atom values to the
 * total, one of (numbered as llm.c does; the benchmark runs them all):
 *   1 atomic   baseline: every thread atomicAdd()s its double into the total
 *              in global memory. Order-dependent: NOT deterministic.
 *   2 tree     the classic shared-memory tree (sequential addressing) per
 *              block, block sums to global memory, then a second pass.
 *   3 shuffle  default: warp shuffles (__shfl_down_sync) within each warp,
 *              one shared slot per warp, the first warp shuffles those; block
 *              sums to global memory, then a second pass.
 * The second pass is one block that reads the block sums in a fixed strided
 * order and reduces them with the same shuffle tree, so variants 2 and 3 give
 * the same bits on every run (and for 2 and 3 the same partition of atoms).
 * All accumulation is in double; there is no atomicAdd on the total.
 */
#ifndef MDNL_ENERGY_CUDA_H
#define MDNL_ENERGY_CUDA_H

#include "cuda_host.h"
#include "geometry.h"
#include "mdnl.h"
#include "nlist.h"
#include "nlist_cuda.h"
#include "potential.h"

#include <stdint.h>

MDNL_BEGIN_C

typedef enum mdnl_energy_reduce {
    MDNL_REDUCE_DEFAULT = 0, /* = MDNL_REDUCE_SHUFFLE */
    MDNL_REDUCE_ATOMIC = 1,
    MDNL_REDUCE_TREE = 2,
    MDNL_REDUCE_SHUFFLE = 3,
} mdnl_energy_reduce;

/* "atomic", "tree", "shuffle" ("shuffle" for DEFAULT). */
const char *mdnl_energy_reduce_name(mdnl_energy_reduce v);

/* Device buffers (positions, cell list, an uploaded list, per-atom energies,
 * block sums, the total) and a stream, reused and grown across frames. One
 * handle per host thread. */
typedef struct mdnl_energy_cuda mdnl_energy_cuda;

/* `stream` is a cudaStream_t as a void pointer (e.g. mdnl_cuda_ctx_stream()
 * to share the neighbor list's stream), or NULL for a stream of the handle's
 * own. MDNL_ERR_RESOURCE when no device is usable. Free with
 * mdnl_energy_cuda_free(). */
mdnl_status mdnl_energy_cuda_create(void *stream, mdnl_energy_cuda **out);
void mdnl_energy_cuda_free(mdnl_energy_cuda *e); /* NULL is a no-op */

/* The reduction variant used by the calls below (default: shuffle). */
void mdnl_energy_cuda_set_reduce(mdnl_energy_cuda *e, mdnl_energy_reduce v);

/* ---- one call per frame: host in, host out (synchronous) ---- */

/* Fused (no list stored): uploads positions, builds the device cell list,
 * evaluates and reduces. Same contract as mdnl_energy_frame_cpu. */
mdnl_status mdnl_energy_frame_cuda(mdnl_energy_cuda *e, const mdnl_geom *g, const float (*h_pos4)[4],
                                   const mdnl_potential *p, double *total, double *per_atom);

/* Fused with per-pair parameters: uploads positions and the atoms' types
 * (h_types[natoms]), then energy_table_kernel (the thread-per-atom walk,
 * never the warp walk). Same contract as mdnl_energy_table_frame_cpu; each
 * pair term has the CPU's bits (LJ), the sums agree to rounding. */
mdnl_status mdnl_energy_table_frame_cuda(mdnl_energy_cuda *e, const mdnl_geom *g, const float (*h_pos4)[4],
                                         const int32_t *h_types, const mdnl_pair_table *t, double *total,
                                         double *per_atom);

/* From a host list (uploaded). Same contract as mdnl_energy_list_cpu. */
mdnl_status mdnl_energy_list_cuda(mdnl_energy_cuda *e, const mdnl_nlist *h_list, mdnl_list_kind kind,
                                  const mdnl_potential *p, double *total, double *per_atom);

/* ---- device-resident steps (asynchronous on the handle's stream) ---- */

/* Positions to the device (natoms float4), then the cell list of g's grid. */
mdnl_status mdnl_energy_cuda_upload_positions(mdnl_energy_cuda *e, const mdnl_geom *g, const float (*h_pos4)[4]);

/* The device copy of the last uploaded positions (natoms float4), valid
 * until the next upload; written on the handle's stream. */
const float *mdnl_energy_cuda_positions(const mdnl_energy_cuda *e);
/* A cudaEvent_t recorded right after that upload (before the cell build and
 * the kernels): other streams wait on it, not on the whole evaluation. After
 * mdnl_energy_cuda_launch_dev: recorded once its cell build read d_pos4. */
void *mdnl_energy_cuda_positions_ready(const mdnl_energy_cuda *e);

/* Asynchronous frames for a pipeline (`mdnl run`): upload h_pos4 (pinned;
 * after the stream has waited for the cudaEvent_t wait_before_upload when
 * not NULL), the fused total, and its copy into h_total (pinned), all queued;
 * mdnl_energy_cuda_wait(ticket) then waits for that copy. Tickets
 * 0..MDNL_CUDA_TICKETS-1 let several frames be in flight; the device buffers
 * are shared, so frames are evaluated in launch order. */
mdnl_status mdnl_energy_cuda_launch(mdnl_energy_cuda *e, const mdnl_geom *g, const float (*h_pos4)[4],
                                    const mdnl_potential *p, void *wait_before_upload, int ticket, double *h_total);
mdnl_status mdnl_energy_cuda_wait(mdnl_energy_cuda *e, int ticket);

/* The same from positions already on the device (d_pos4: natoms float4,
 * complete when the cudaEvent_t `ready` is, e.g. mdnl_wrap_cuda's): the
 * cell list is built from them directly, then the fused total is copied
 * into h_total; mdnl_energy_cuda_wait(ticket) waits for it. Afterwards
 * mdnl_energy_cuda_positions_ready is recorded once the build has read
 * d_pos4, after which its owner may overwrite it. */
mdnl_status mdnl_energy_cuda_launch_dev(mdnl_energy_cuda *e, const mdnl_geom *g, const float *d_pos4, void *ready,
                                        const mdnl_potential *p, int ticket, double *h_total);

/* Fused evaluation of the uploaded positions. With rebuild_cells, the cell
 * list is rebuilt first (part of the timed work). per_atom: whether to keep
 * per-atom energies for mdnl_energy_cuda_result. */
mdnl_status mdnl_energy_cuda_run_fused(mdnl_energy_cuda *e, const mdnl_geom *g, const mdnl_potential *p,
                                       int rebuild_cells, int per_atom);

/* From a device-resident CSR (e.g. mdnl_nlist_dev's d_offsets, d_j, d_d;
 * borrowed for the duration of the work on the stream). */
mdnl_status mdnl_energy_cuda_run_list_dev(mdnl_energy_cuda *e, int64_t natoms, mdnl_list_kind kind,
                                          const int64_t *d_offsets, const int32_t *d_j, const float *d_d,
                                          const mdnl_potential *p, int per_atom);

/* The same on a list built by nlist_cuda.h (mdnl_nlist_build_cuda_dev);
 * create the handle on mdnl_cuda_ctx_stream(ctx) so that the energy follows
 * the list on one stream without a synchronisation. */
mdnl_status mdnl_energy_cuda_run_nlist(mdnl_energy_cuda *e, const mdnl_nlist_dev *l, mdnl_list_kind kind,
                                       const mdnl_potential *p, int per_atom);

/* Copies a host list into the handle's device buffers, then runs as above
 * on it with mdnl_energy_cuda_run_list. */
mdnl_status mdnl_energy_cuda_upload_list(mdnl_energy_cuda *e, const mdnl_nlist *h_list);
mdnl_status mdnl_energy_cuda_run_list(mdnl_energy_cuda *e, mdnl_list_kind kind, const mdnl_potential *p,
                                      int per_atom);

/* Waits for the last run and copies its total and (nullable; only when that
 * run kept them) per-atom energies to the host. */
mdnl_status mdnl_energy_cuda_result(mdnl_energy_cuda *e, double *total, double *per_atom);

/* With timing on, every run_* records CUDA events around its device work;
 * mdnl_energy_cuda_last_ms waits for the last run and gives its time. */
void mdnl_energy_cuda_set_timing(mdnl_energy_cuda *e, int on);
mdnl_status mdnl_energy_cuda_last_ms(mdnl_energy_cuda *e, double *ms);

MDNL_END_C

#endif

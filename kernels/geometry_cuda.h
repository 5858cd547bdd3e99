/* geometry_cuda.h — the per-atom wrap of mdnl_geom_prepare on the device: the
 * CUDA twin of the loop in geometry.c (kernel in geometry.cu), used by
 * `mdnl run` on the CUDA backend so that the reader's double positions are
 * uploaded as they are and no host thread wraps them.
 *
 * Same result, bit for bit: the kernel calls mdnl_wrap_atom (geometry.h,
 * every double operation written with __dmul_rn/__dadd_rn so nvcc cannot
 * contract it into an FMA), and the t-range is a min/max reduction, which is
 * exact in any order. The grid itself is laid out on the host by
 * mdnl_geom_finish from the reduced t-range (it needs a handful of numbers,
 * and for open axes it depends on the atoms' extent).
 *
 * Kernel (thread -> data): wrap_kernel, a grid-stride loop of one thread per
 * atom (reads 24 bytes, writes 16), each block reducing its atoms' t-range
 * and first non-finite index in shared memory; wrap_finish_kernel, one block
 * over the block results. Napkin math for 97,556 atoms: 2.3 MB up over PCIe
 * (~0.1 ms pinned), 3.9 MB through HBM on the device (~2 us).
 *
 * Plain C; the functions exist only in CUDA builds (guard with
 * MDNL_HAVE_CUDA).
 */
#ifndef MDNL_GEOMETRY_CUDA_H
#define MDNL_GEOMETRY_CUDA_H

#include "cuda_host.h"
#include "frame.h"
#include "geometry.h"
#include "mdnl.h"

MDNL_BEGIN_C

/* A stream of its own, events, the device copies of the double positions
 * and of the wrapped float4 positions, grown across frames. One handle per
 * host thread. */
typedef struct mdnl_wrap_cuda mdnl_wrap_cuda;

/* MDNL_ERR_RESOURCE when no device is usable. Free with mdnl_wrap_cuda_free. */
mdnl_status mdnl_wrap_cuda_create(mdnl_wrap_cuda **out);
void mdnl_wrap_cuda_free(mdnl_wrap_cuda *w); /* NULL is a no-op */

/* mdnl_geom_prepare(f, cutoff, g, pos4) with pos4 on the device, without
 * waiting where it can (`mdnl run`): uploads f->pos (pinned host memory
 * makes the copy a plain DMA; pageable works too), makes the handle's
 * stream wait for the cudaEvent_t's wait[0..nwait) (NULL entries skipped:
 * the other streams' copies of the previous positions) before overwriting
 * the float4 buffer, wraps, reduces the t-range and the first non-finite
 * atom and queues their copy into the ticket's pinned slot
 * (0..MDNL_CUDA_TICKETS-1). On a frame periodic on every axis whose grid
 * cannot depend on the t-range (geometry.h, mdnl_geom_finish_early) it
 * returns at once with g laid out and *tabs_bound > 0: the caller then
 * collects the t-range with mdnl_wrap_cuda_result(ticket) and settles g
 * (and any grid regridded from it, checked with mdnl_geom_early_certain
 * against *tabs_bound) with mdnl_geom_settle, which also reports a
 * non-finite coordinate. Otherwise (*tabs_bound = 0) it waits for the
 * t-range and lays out g as mdnl_geom_prepare would, errors included
 * (MDNL_ERR_RESOURCE for CUDA failures). */
mdnl_status mdnl_wrap_cuda_launch(mdnl_wrap_cuda *w, const mdnl_frame *f, double cutoff, mdnl_geom *g,
                                  void *const *wait, int nwait, int ticket, double *tabs_bound);

/* Waits for the ticket's t-range and first non-finite atom (natoms when
 * none) of the last mdnl_wrap_cuda_launch given that ticket. */
mdnl_status mdnl_wrap_cuda_result(mdnl_wrap_cuda *w, int ticket, double tlo[3], double thi[3], int64_t *first_bad);

/* Synchronous: mdnl_wrap_cuda_launch with ticket 0, then (when the grid was
 * laid out early) mdnl_wrap_cuda_result and mdnl_geom_settle: g is exactly
 * mdnl_geom_prepare's, errors included. */
mdnl_status mdnl_geom_prepare_cuda(mdnl_wrap_cuda *w, const mdnl_frame *f, double cutoff, mdnl_geom *g,
                                   void *const *wait, int nwait);

/* mdnl_geom_prepare_cuda with the positions already in device memory:
 * d_xyz is [f->natoms][3] double (float when xyz_float32), read on the
 * handle's stream after it waited for the cudaEvent_t `after` (NULL: none);
 * f gives the atom count, box, index and work limit (f->pos is not read).
 * Synchronous; the same positions and grid, bit for bit, as from the host
 * (float input is widened to double exactly before the wrap). */
mdnl_status mdnl_geom_prepare_cuda_dev(mdnl_wrap_cuda *w, const mdnl_frame *f, const void *d_xyz, int xyz_float32,
                                       void *after, double cutoff, mdnl_geom *g);

/* The wrapped positions of the last prepare: natoms float4 (x, y, z, 0) in
 * device memory, valid until the next prepare (which waits for the events
 * it is given, not for anything else). */
const float *mdnl_wrap_cuda_positions(const mdnl_wrap_cuda *w);

/* A cudaEvent_t recorded on the handle's stream once the last prepare's
 * positions are complete: other streams wait on it before reading them. */
void *mdnl_wrap_cuda_ready(const mdnl_wrap_cuda *w);

/* Tests: copies the last prepare's natoms positions into h_pos4
 * (synchronous). */
mdnl_status mdnl_wrap_cuda_download(mdnl_wrap_cuda *w, float (*h_pos4)[4]);

MDNL_END_C

#endif

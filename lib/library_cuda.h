/* library_cuda.h — the CUDA pieces the library (library.c) adds to the
 * kernels': the ordering after the caller's stream, the calling thread's
 * device and the occupancy guard of device positions. (The image shifts and vectors of a device list are the kernels':
 * pair_shift_cuda.h.) Plain C; the functions exist only in CUDA builds. */
#ifndef MDNL_LIBRARY_CUDA_H
#define MDNL_LIBRARY_CUDA_H

#include "geometry.h"
#include "mdnl.h"

#include <stdint.h>

MDNL_BEGIN_C

/* An event and the guard's cell buffers, grown across calls; one per
 * library context. Free with mdnl_lib_cuda_free. */
typedef struct mdnl_lib_cuda mdnl_lib_cuda;

mdnl_status mdnl_lib_cuda_create(mdnl_lib_cuda **out);
void mdnl_lib_cuda_free(mdnl_lib_cuda *c); /* NULL is a no-op */

/* Records the handle's event on `stream` (a cudaStream_t; NULL: the legacy
 * default stream) and returns it as a cudaEvent_t in *event: work queued
 * after a wait on it sees everything the caller queued on that stream. */
mdnl_status mdnl_lib_cuda_mark(mdnl_lib_cuda *c, void *stream, void **event);

/* The occupancy guard of device positions (geometry.h,
 * mdnl_work_check_cells, without copying the positions to the host): the
 * atoms of d_pos4 ([g->natoms] float4, wrapped, complete before `stream`'s
 * queued work) counted per cell of g's grid with the binning's arithmetic
 * (mdnl_cell_coord), the stencil windows summed, then reduced to
 * o->candidates, o->pairs, o->densest and o->densest_count, which are read
 * back (a synchronisation of `stream`). When the result is beyond the
 * limits (mdnl_work_cells_within) the first atom of the densest cell and
 * its wrapped position are looked for too, and the call returns
 * mdnl_work_refuse_cells' MDNL_ERR_INPUT; else MDNL_OK. */
mdnl_status mdnl_lib_cuda_check_cells(mdnl_lib_cuda *c, void *stream, const mdnl_geom *g, const float *d_pos4);

/* Makes `device` the calling thread's current CUDA device and returns the
 * one it replaces (-1 when it cannot: then nothing changed), so that a
 * library call runs on its context's device and restores the caller's. */
int mdnl_lib_cuda_swap_device(int device);

/* Waits for everything queued on `stream`. */
mdnl_status mdnl_lib_cuda_sync(void *stream);

MDNL_END_C

#endif

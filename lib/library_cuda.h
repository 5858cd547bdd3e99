/* library_cuda.h — the CUDA pieces the library (library.c) adds to the
 * kernels': the image shifts and vectors of a device list (the CUDA twin of
 * library.c's host pass, both over pair_shift.h) and the ordering after the
 * caller's stream. Plain C; the functions exist only in CUDA builds. */
#ifndef MDNL_LIBRARY_CUDA_H
#define MDNL_LIBRARY_CUDA_H

#include "geometry.h"
#include "mdnl.h"
#include "nlist_cuda.h"

#include <stdint.h>

MDNL_BEGIN_C

/* An event and the device buffers of S, D and the pass's flag, grown across
 * calls; one per library context. Free with mdnl_lib_cuda_free. */
typedef struct mdnl_lib_cuda mdnl_lib_cuda;

mdnl_status mdnl_lib_cuda_create(mdnl_lib_cuda **out);
void mdnl_lib_cuda_free(mdnl_lib_cuda *c); /* NULL is a no-op */

/* Records the handle's event on `stream` (a cudaStream_t; NULL: the legacy
 * default stream) and returns it as a cudaEvent_t in *event: work queued
 * after a wait on it sees everything the caller queued on that stream. */
mdnl_status mdnl_lib_cuda_mark(mdnl_lib_cuda *c, void *stream, void **event);

/* S ([npairs][3] int32, relative to the positions as given) and, when
 * want_D, D ([npairs][3] double) of the device list l built from the wrapped
 * positions l->d_pos4 with geometry g, whose wrap parameters are w; d_xyz are
 * the positions as given ([natoms][3] double, float when xyz_float32). A
 * kernel, a thread per row, on `stream`, then a synchronisation. The arrays
 * are the handle's (valid until its next call or free). MDNL_ERR_INPUT when
 * an atom lies more than 1e9 cells from the cell (S would overflow). */
mdnl_status mdnl_lib_cuda_shifts(mdnl_lib_cuda *c, void *stream, const mdnl_geom *g, const mdnl_wrap_params *w,
                                 const mdnl_nlist_dev *l, int half, const void *d_xyz, int xyz_float32, int want_D,
                                 const int32_t **d_S, const double **d_D);

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

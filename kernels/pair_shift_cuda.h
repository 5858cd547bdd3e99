/* pair_shift_cuda.h — the CUDA twin of pair_shift.h's post-pass (in
 * pair_shift.cu): S and D of every entry of a device list, the same bytes as
 * mdnl_pair_shifts_cpu. Plain C; the functions exist only in CUDA builds. */
#ifndef MDNL_PAIR_SHIFT_CUDA_H
#define MDNL_PAIR_SHIFT_CUDA_H

#include "frame.h"
#include "geometry.h"
#include "mdnl.h"
#include "nlist_cuda.h"

#include <stdint.h>

MDNL_BEGIN_C

/* The device buffers of the pass (S, D, the positions as given for the host
 * entry point, the pass's flag), grown across calls. Not thread-safe: one
 * per host thread. Free with mdnl_shift_cuda_free. */
typedef struct mdnl_shift_cuda mdnl_shift_cuda;

mdnl_status mdnl_shift_cuda_create(mdnl_shift_cuda **out);
void mdnl_shift_cuda_free(mdnl_shift_cuda *c); /* NULL is a no-op */

/* Device in, device out. S ([npairs][3] int32, relative to the positions as
 * given) and, when want_D, D ([npairs][3] double) of the device list l, built
 * with geometry g from l->d_pos4; f->box is the cell (f->pos unused), d_xyz
 * the positions as given ([natoms][3] double, float when xyz_float32, on the
 * device). A kernel, a thread per row, on `stream` (a cudaStream_t), then a
 * synchronisation. The arrays are the handle's (valid until its next call or
 * free). MDNL_ERR_INPUT when an atom lies more than MDNL_SHIFT_OFFSET_MAX
 * cells from the cell (S would overflow). */
mdnl_status mdnl_pair_shifts_cuda(mdnl_shift_cuda *c, void *stream, const mdnl_frame *f, const mdnl_geom *g,
                                  const mdnl_nlist_dev *l, int half, const void *d_xyz, int xyz_float32, int want_D,
                                  const int32_t **d_S, const double **d_D);

/* Uploads f->pos (f->natoms positions as given, double) into the handle's
 * buffer on `stream` and returns its device address in *d_xyz (valid until
 * the handle's next upload or free): the d_xyz of mdnl_pair_shifts_cuda. */
mdnl_status mdnl_pair_shifts_cuda_upload(mdnl_shift_cuda *c, void *stream, const mdnl_frame *f, const void **d_xyz);

/* Host in, host out: f->pos (the positions as given, on the host) uploaded,
 * the pass above run, S ([npairs][3]) and, when D is not NULL, D downloaded
 * into the caller's arrays. Synchronous. */
mdnl_status mdnl_pair_shifts_cuda_host(mdnl_shift_cuda *c, void *stream, const mdnl_frame *f, const mdnl_geom *g,
                                       const mdnl_nlist_dev *l, int half, int32_t (*S)[3], double (*D)[3]);

MDNL_END_C

#endif

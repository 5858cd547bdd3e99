/* coord_cuda.h — the CUDA coordination count behind coord.h (kernels in
 * coord.cu; the CPU twin is coord_cpu.c). Where it fits the grid, the fused
 * energy's half-stencil warp walk (walk_cuda.cuh: a warp per home cell,
 * each pair once, +1 to both atoms, atomicAdd per candidate and home atom);
 * elsewhere a thread per sorted slot of the device cell list walking the
 * pruned full stencil (mdnl_for_each_pair_pruned_part). No list stored;
 * integers, equal to the CPU twin's on both paths. Plain C; the functions
 * exist only in CUDA builds (guard with MDNL_HAVE_CUDA). */
#ifndef MDNL_COORD_CUDA_H
#define MDNL_COORD_CUDA_H

#include "coord.h"
#include "geometry.h"
#include "mdnl.h"

#include <stdint.h>

MDNL_BEGIN_C

/* Device buffers and a stream, reused across frames; one per host thread.
 * `stream` as in mdnl_energy_cuda_create (NULL: its own). */
typedef struct mdnl_coord_cuda mdnl_coord_cuda;
mdnl_status mdnl_coord_cuda_create(void *stream, mdnl_coord_cuda **out);
void mdnl_coord_cuda_free(mdnl_coord_cuda *c); /* NULL is a no-op */

/* Same contract as mdnl_coord_frame_cpu (synchronous). */
mdnl_status mdnl_coord_frame_cuda(mdnl_coord_cuda *c, const mdnl_geom *g, const float (*h_pos4)[4],
                                  const int32_t *h_species, int32_t ncols, const int32_t (*pairs)[2],
                                  const mdnl_coord_cuts *h_cuts, int32_t *h_counts);

/* With timing on, mdnl_coord_cuda_last_ms gives the last frame's device
 * time (upload, cell build, count; not the copy back). */
void mdnl_coord_cuda_set_timing(mdnl_coord_cuda *c, int on);
mdnl_status mdnl_coord_cuda_last_ms(mdnl_coord_cuda *c, double *ms);

MDNL_END_C

#endif

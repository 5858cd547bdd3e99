/* coord_cuda.h — the CUDA coordination count behind coord.h (kernel in
 * coord.cu; the CPU twin is coord_cpu.c). Thread per sorted slot of the
 * device cell list, the pruned full walk (mdnl_for_each_pair_pruned_part,
 * one part) counting its pairs per column in registers: no list stored,
 * counts written by original atom index. Plain C; the functions exist only
 * in CUDA builds (guard with MDNL_HAVE_CUDA). */
#ifndef MDNL_COORD_CUDA_H
#define MDNL_COORD_CUDA_H

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
                                  int32_t *h_counts);

/* With timing on, mdnl_coord_cuda_last_ms gives the last frame's device
 * time (upload, cell build, count; not the copy back). */
void mdnl_coord_cuda_set_timing(mdnl_coord_cuda *c, int on);
mdnl_status mdnl_coord_cuda_last_ms(mdnl_coord_cuda *c, double *ms);

MDNL_END_C

#endif

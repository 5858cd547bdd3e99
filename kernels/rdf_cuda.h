/* rdf_cuda.h — the CUDA histogram kernels behind the rdf.h contract.
 *
 * Plain C: C callers include it freely, but the functions exist only in CUDA
 * builds (rdf.cu), so callers guard their use with MDNL_HAVE_CUDA. Counts
 * equal the CPU twin's (rdf_cpu.c) exactly, for every variant and traversal.
 *
 * Histogram variants (how a pair's count reaches memory; rdf.cu has the
 * thread->data mappings):
 *   MDNL_HIST_GLOBAL      64-bit atomicAdd on the global histogram per pair:
 *                         the baseline.
 *   MDNL_HIST_SHARED      a privatized 32-bit histogram per block in shared
 *                         memory, merged into the global 64-bit one when the
 *                         block ends; each thread adds at most 2^23 there
 *                         (so no 32-bit bin can wrap, and no thread waits on
 *                         an atomic's return value) and the rest straight to
 *                         the global bins, so counts are exact for any
 *                         frame. Histograms larger than shared memory are
 *                         done in passes over slot ranges (at most
 *                         MDNL_HIST_MAX_PASSES), beyond that GLOBAL is used.
 *   MDNL_HIST_SHARED_AGG  SHARED, plus each thread keeps (slot, run count) in
 *                         registers and flushes only when the slot changes.
 *   MDNL_HIST_AUTO        SHARED, the benchmark's winner (lj-1m and
 *                         graphene-1m; docs/performance.md).
 * GLOBAL, SHARED and SHARED_AGG are the seed's technique comparison, kept
 * for `mdnl bench`.
 * Traversals (which pairs are visited):
 *   MDNL_HIST_TRAV_ALLPAIRS    all pairs, positions staged through shared
 *                              memory tiles, half (j > i, weight 2), every
 *                              image shift within image_max: for open frames
 *                              and small periodic ones.
 *   MDNL_HIST_TRAV_CELLS_PRUNE2  the device cell list (cells_cuda.cuh) on the
 *                              geometry's grid with each axis of >= 2 cells
 *                              split in halves and the stencil doubled, thread
 *                              per atom, half traversal (weight 2): columns
 *                              whose cells all precede the atom's in memory
 *                              are skipped before their ranges are read; on
 *                              orthogonal frames (orthorhombic boxes, no
 *                              lattice) each atom skips the columns farther
 *                              than r_max and trims each column's z-range to
 *                              the cells its r_max sphere meets (with a slack
 *                              far above float rounding); the bin comes from a
 *                              table of exact d2 thresholds instead of a
 *                              square root and a division. Triclinic frames
 *                              walk the whole doubled stencil (still the
 *                              table).
 *   MDNL_HIST_TRAV_CELLS_PRUNE2_X4  CELLS_PRUNE2 with 4 threads per atom: the
 *                              stencil columns (dx, dy) are dealt round-robin
 *                              to them (mdnl_for_each_pair_pruned_part), so a
 *                              frame of ~100k atoms, under one wave of
 *                              thread-per-atom blocks, still fills the device.
 *   MDNL_HIST_TRAV_CELLS_WALK  the half-stencil warp walk (walk_cuda.cuh) on
 *                              the same refined grid: a warp per home block
 *                              of 2 cells in z (~15 atoms of a liquid), the
 *                              blocks in guided chunks off a counter where
 *                              each resident warp has 8 or more (the blocks
 *                              end together), else a static stride; each
 *                              unordered pair once (weight 2), every
 *                              lane on its own candidates against the same
 *                              home atom (no lanes idle on unequal ranges);
 *                              the bin from threshold pairs, and the total's
 *                              bins, in static shared memory. Where it does
 *                              not fit (a periodic axis of fewer than 2
 *                              stencil + 1 refined cells, 2 stencil + 2 in
 *                              z, or bins > 512) it runs as CELLS_PRUNE2.
 *   MDNL_HIST_TRAV_AUTO        ALLPAIRS for open frames of <= 16384 atoms;
 *                              else CELLS_WALK where it fits; else
 *                              CELLS_PRUNE2_X4 when a thread per atom fills
 *                              at most one wave (natoms <= 256 x 4 blocks x
 *                              SMs), else CELLS_PRUNE2 (docs/performance.md).
 * Fused: pairs are binned while traversing; no neighbor list is stored.
 */
#ifndef MDNL_RDF_CUDA_H
#define MDNL_RDF_CUDA_H

#include "cuda_host.h"
#include "geometry.h"
#include "mdnl.h"
#include "rdf.h"

#include <stdint.h>

MDNL_BEGIN_C

typedef enum mdnl_hist_variant {
    MDNL_HIST_AUTO = 0,
    MDNL_HIST_GLOBAL = 1,
    MDNL_HIST_SHARED = 2,
    MDNL_HIST_SHARED_AGG = 3,
} mdnl_hist_variant;

typedef enum mdnl_hist_traversal {
    MDNL_HIST_TRAV_AUTO = 0,
    MDNL_HIST_TRAV_ALLPAIRS = 1,
    MDNL_HIST_TRAV_CELLS_PRUNE2 = 2,
    MDNL_HIST_TRAV_CELLS_PRUNE2_X4 = 3,
    MDNL_HIST_TRAV_CELLS_WALK = 4,
} mdnl_hist_traversal;

#define MDNL_HIST_MAX_PASSES 8

/* Owns a CUDA stream on device 0, events and the device buffers (reused and
 * grown across frames). One context per host thread. */
typedef struct mdnl_hist_cuda mdnl_hist_cuda;

/* MDNL_ERR_RESOURCE when no device is usable. Free with mdnl_hist_cuda_free. */
mdnl_status mdnl_hist_cuda_create(mdnl_hist_cuda **out);
void mdnl_hist_cuda_free(mdnl_hist_cuda *ctx); /* NULL is a no-op */

/* One frame: host positions (mdnl_geom_prepare with cutoff = r_max) and
 * species (NULL when spec->npairs == 0) in, host counts[nhist * bins] out
 * (overwritten). Synchronous. */
mdnl_status mdnl_hist_frame_cuda(mdnl_hist_cuda *ctx, const mdnl_geom *g, const float (*pos4)[4],
                                 const int32_t *species, const mdnl_hist_spec *spec, int variant, int traversal,
                                 uint64_t *counts);

/* Asynchronous frames for a pipeline (`mdnl run`): positions from the host
 * (h_pos4, pinned; d_pos4 NULL) or from the device (d_pos4, complete when
 * the cudaEvent_t `ready` is), AUTO variant and traversal, and the counts
 * copied into h_counts (pinned), all queued; mdnl_hist_cuda_wait(ticket)
 * waits for that copy. mdnl_hist_cuda_copied_event: a cudaEvent_t recorded
 * once the last launch has copied d_pos4, after which its owner may
 * overwrite it. */
mdnl_status mdnl_hist_cuda_launch(mdnl_hist_cuda *ctx, const mdnl_geom *g, const float (*h_pos4)[4],
                                  const float *d_pos4, void *ready, const int32_t *species,
                                  const mdnl_hist_spec *spec, int ticket, uint64_t *h_counts);
mdnl_status mdnl_hist_cuda_wait(mdnl_hist_cuda *ctx, int ticket);
void *mdnl_hist_cuda_copied_event(mdnl_hist_cuda *ctx);

/* What a benchmark call measured (milliseconds, CUDA events). */
typedef struct mdnl_hist_cuda_timing {
    double upload_ms;  /* positions and species host -> device, once */
    double cells_ms;   /* device cell-list build, once (0 for ALLPAIRS) */
    double hist_ms;    /* median over repeats of memset + histogram kernel(s) */
    double hist_min_ms;
    int passes;        /* kernel passes over slot ranges */
    int variant;       /* the variant that ran (GLOBAL after a fallback) */
    int traversal;     /* the traversal that ran */
} mdnl_hist_cuda_timing;

/* Like mdnl_hist_frame_cuda, but runs the histogram `repeats` times on the
 * uploaded frame and reports timings; counts are those of the last repeat. */
mdnl_status mdnl_hist_cuda_bench(mdnl_hist_cuda *ctx, const mdnl_geom *g, const float (*pos4)[4],
                                 const int32_t *species, const mdnl_hist_spec *spec, int variant, int traversal,
                                 int repeats, uint64_t *counts, mdnl_hist_cuda_timing *timing);

const char *mdnl_hist_variant_name(int variant);

const char *mdnl_hist_traversal_name(int traversal);

MDNL_END_C

#endif

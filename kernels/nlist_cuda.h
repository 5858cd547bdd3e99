/* nlist_cuda.h — the CUDA neighbor-list kernels behind the nlist.h contract.
 *
 * Plain C: C callers include it freely, but the functions exist only in CUDA
 * builds, so callers guard their use with MDNL_HAVE_CUDA. The result is the
 * CPU twin's (nlist_cpu.c) byte for byte: the same set of pairs (the same
 * float positions, the same mdnl_pair_d2) and rows sorted on the device by
 * mdnl_row_key, whatever order the atomics produced them in.
 *
 * Methods (SPEC §3; the kernels' thread->data mappings are in nlist.cu):
 *   brute-atomic    thread per atom i visits half of the other atoms (a
 *                   balanced circular half, so every thread does N/2) and
 *                   every image shift, and appends each pair to both rows
 *                   through atomic row cursors; count pass, scan, fill pass,
 *                   then a row sort.
 *   brute-noatomic  thread per atom i visits every j and every shift and
 *                   writes only its own row, staged in a transposed layout
 *                   stage[k * N + i] so that a warp's writes coalesce, with a
 *                   capacity that grows and retries on overflow; then
 *                   compacted into CSR and sorted.
 *   cell            the device cell list of cells_cuda.cuh. Variant 5 (the
 *                   default for dense rows, where a tile of cells can hold
 *                   each cell of its stencil once): an atomic counting-sort
 *                   binning, a thread-per-atom count pass, scan, and a tile
 *                   fill: a block per tile of cells stages the tile's
 *                   stencil region in shared memory, sorts it once by
 *                   original index (CUB block radix sort), and its atoms walk
 *                   the sorted candidates writing hits straight into their
 *                   rows, already in order. Variant 6 (the default for sparse
 *                   rows above 32 candidates per atom): variant 2 over the
 *                   same counting-sort binning. Variant 7 (the default up to
 *                   32 candidates per atom): variant 6 with each row's first
 *                   4 or 8 hits kept sorted in registers and staged coalesced
 *                   when the walk ends (on a flat sheet the walk takes the
 *                   consecutive y columns of one x that share an image shift
 *                   as one range), a copy kernel that writes rows straight
 *                   into the CSR (sorting in place only rows longer than the
 *                   registers), and no host synchronisation before the
 *                   build's last: the output is sized for the stage capacity,
 *                   and an overflow seen there builds again.
 *                   Variant 2: one traversal that stages rows transposed
 *                   (capacity grows and retries, as brute-noatomic), scan,
 *                   then compaction: each row sorted in shared memory and
 *                   written warp-cooperatively. Variant 3 (the default for
 *                   dense rows when tiles are ruled out): count traversal
 *                   (thread per atom), scan, and a warp-per-atom fill that
 *                   sorts each row in registers. Variants 1-4 use the stable
 *                   cell list (within a cell, ascending index) and are kept
 *                   as baselines; no variant's output depends on the order
 *                   within a cell, since every row is sorted.
 *                   Variant 8 (a measured dead end, kept as a baseline): a
 *                   pruned count and a pruned fill on a grid refined by 2
 *                   (mdnl_for_each_pair_pruned, shared with the RDF), each
 *                   thread's row collected in shared memory as 32-bit keys
 *                   and sorted in registers by a bitonic network, the warp
 *                   writing its 32 rows coalesced and recomputing distances.
 *                   On lj-1m it ties variant 5 at best (2.17-2.30 ms): the
 *                   walks are instruction-bound, and the rows in shared
 *                   memory cap the fill at ~30% occupancy (tools/bench/
 *                   RESULTS.md, "Cell variant 8").
 *   auto            cell, except brute-noatomic for tiny frames.
 */
#ifndef MDNL_NLIST_CUDA_H
#define MDNL_NLIST_CUDA_H

#include "geometry.h"
#include "mdnl.h"
#include "nlist.h"

#include <stdint.h>

MDNL_BEGIN_C

/* Owns a CUDA stream on device 0 and the device buffers, which are reused
 * and grown across calls. Not thread-safe: one context per host thread. */
typedef struct mdnl_cuda_ctx mdnl_cuda_ctx;

/* Creates a context; MDNL_ERR_RESOURCE when no device is usable. The caller
 * frees it with mdnl_cuda_ctx_free(). */
mdnl_status mdnl_cuda_ctx_create(mdnl_cuda_ctx **out);
void mdnl_cuda_ctx_free(mdnl_cuda_ctx *ctx); /* NULL is a no-op */

/* The context's cudaStream_t, as a void pointer, for kernels that consume
 * the device-resident list on the same stream. */
void *mdnl_cuda_ctx_stream(mdnl_cuda_ctx *ctx);

/* A neighbor list in device memory. Borrowed from the context: valid until
 * the next build on it or until it is freed. */
typedef struct mdnl_nlist_dev {
    int64_t natoms;
    int64_t npairs;
    const int64_t *d_offsets; /* [natoms + 1] */
    const int32_t *d_j;       /* [npairs] */
    const float *d_d;         /* [npairs] */
    const float *d_pos4;      /* [natoms][4] the positions the list was built from */
} mdnl_nlist_dev;

/* Host positions in, host CSR out (out is resized with mdnl_nlist_reserve).
 * AUTO picks as mdnl_nlist_cuda_auto. */
mdnl_status mdnl_nlist_build_cuda(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float (*h_pos4)[4], mdnl_method method,
                                  mdnl_list_kind kind, mdnl_nlist *out_host);

/* Host positions in, device CSR out. */
mdnl_status mdnl_nlist_build_cuda_dev(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float (*h_pos4)[4],
                                      mdnl_method method, mdnl_list_kind kind, mdnl_nlist_dev *out);

/* Device positions in (d_pos4: natoms float4, 16-byte aligned, .w ignored;
 * borrowed for the duration of the call), device CSR out. */
mdnl_status mdnl_nlist_build_cuda_devpos(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float *d_pos4,
                                         mdnl_method method, mdnl_list_kind kind, mdnl_nlist_dev *out);

/* The method AUTO resolves to for this geometry. */
mdnl_method mdnl_nlist_cuda_auto(const mdnl_geom *g);

/* ---- measurement and test hooks ---- */

typedef enum mdnl_cuda_stage {
    MDNL_CUDA_STAGE_BIN = 0, /* cell list: bin, radix sort, gather (cell only) */
    MDNL_CUDA_STAGE_COUNT,   /* count pass (brute-noatomic: the staged pass, retries included) */
    MDNL_CUDA_STAGE_SCAN,    /* prefix sum of row lengths and read-back of the pair count */
    MDNL_CUDA_STAGE_FILL,    /* fill pass (cell: fill, row sort and write in one kernel) */
    MDNL_CUDA_STAGE_SORT,    /* separate row sort / compaction (brute methods) */
    MDNL_CUDA_NSTAGES
} mdnl_cuda_stage;

const char *mdnl_cuda_stage_name(int stage);

/* With timing on, each build records CUDA events between stages;
 * mdnl_cuda_ctx_stage_ms then gives the last build's per-stage times. */
void mdnl_cuda_ctx_set_timing(mdnl_cuda_ctx *ctx, int on);
void mdnl_cuda_ctx_stage_ms(const mdnl_cuda_ctx *ctx, double ms[MDNL_CUDA_NSTAGES]);
/* The last build's device time from after the position upload to the end
 * (host synchronisations inside included), with timing on. */
double mdnl_cuda_ctx_total_ms(const mdnl_cuda_ctx *ctx);

/* The staging capacity (brute-noatomic, cell variants 2, 6, 7) in pairs per atom (grows on overflow;
 * tests set it to 1 to force the retry path), and how many retries the
 * context has done so far. */
void mdnl_cuda_ctx_set_stage_capacity(mdnl_cuda_ctx *ctx, int pairs_per_atom);
int64_t mdnl_cuda_ctx_retries(const mdnl_cuda_ctx *ctx);

/* Cell-list variant: 0 = by density (default: 7 up to 32 candidates per
 * atom, 6 up to 100, else 9 where it fits and rows average at most 90% of
 * its 64-key slab rows, else 5), 1 = count pass + fused fill, 2 = staged single traversal,
 * 3 = thread-per-atom count pass + warp-per-atom fill (rows compacted by
 * ballot into a per-warp buffer, bitonic-sorted in registers, written
 * coalesced), 4 = warp-per-atom count and fill, 5 = tile fill (sorted
 * candidates per tile of cells), 6 = 2 over the counting-sort binning,
 * 7 = 6 with rows sorted in registers, a plain copy and one synchronisation
 * (its output buffers are sized for every row at the stage capacity),
 * 8 = pruned count and fill on a grid refined by 2, rows sorted per thread
 * (falls back to 5 when a refined periodic axis has fewer than 2 stencil + 1
 * cells or there are 2^26 atoms or more),
 * 9 = one walk, a warp per home cell: candidates a cutoff or more from the home
 * atoms' bounding box dropped, the rest tested 32 at a time against
 * each home atom, hits into a slab of 64-key rows; then rows sorted in
 * registers, distances recomputed, written coalesced; rows over 64 walked
 * again by one thread (falls back to 5 when a periodic axis has fewer than
 * 2 stencil + 1 cells, the stencil has more than 32 ranges, or there are
 * 2^27 atoms or more).
 * 3 and 4 fall back to 1 when the stencil has more than 32 (cell, shift)
 * columns; 5 falls back to 3 when a periodic axis has fewer than
 * 2 stencil + 1 cells (a tile would meet a cell twice, through two images)
 * or the stencil has more than 64 columns, and its fill to 3's when a
 * region may exceed 2048 candidates (or the tile capacity below). */
void mdnl_cuda_ctx_set_cell_variant(mdnl_cuda_ctx *ctx, int variant);

/* Rows whose fill block did not fit in shared memory are written and
 * sorted in global memory instead (slower, same bytes). Tests set the
 * budget to 0 to force that path; -1 restores the default. */
void mdnl_cuda_ctx_set_smem_budget(mdnl_cuda_ctx *ctx, int bytes);

/* Cell variant 5: the most candidates one tile may stage (count pass: larger
 * regions are counted in chunks; fill: a larger region sends the whole fill
 * to variant 3's, or 1's, over the stable cell list). Tests set a small
 * value to force both paths; 0 restores the default (shared memory). */
void mdnl_cuda_ctx_set_tile_capacity(mdnl_cuda_ctx *ctx, int candidates);

MDNL_END_C

#endif

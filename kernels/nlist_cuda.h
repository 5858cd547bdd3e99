/* nlist_cuda.h — the CUDA neighbor-list kernels behind the nlist.h contract.
 *
 * Plain C: C callers include it freely, but the functions exist only in CUDA
 * builds, so callers guard their use with MDNL_HAVE_CUDA. The result is the
 * CPU twin's (nlist_cpu.c) byte for byte: the same set of pairs (the same
 * float positions, the same mdnl_pair_d2) and rows sorted on the device by
 * mdnl_row_key, whatever order the atomics produced them in.
 *
 * Methods (SPEC §3), each a path (an nl_path object in its own file; the
 * dispatch in nlist_cuda.cu picks one and knows no more of it):
 *   brute-atomic    (nlist_brute.cu) thread per atom i visits half of the
 *                   other atoms (a balanced circular half) and every image
 *                   shift, and appends each pair to both rows through atomic
 *                   row cursors; count pass, scan, fill pass, row sort.
 *   brute-noatomic  (nlist_brute.cu) thread per atom i visits every j and
 *                   every shift and writes only its own row, staged
 *                   transposed (stage[k * N + i], coalesced) with a capacity
 *                   that grows and retries on overflow; compacted, sorted.
 *   cell            the device cell list; one of two paths, by density
 *                   (candidates per atom = atoms per cell x stencil cells):
 *     sparse-stage  (<= 32; nlist_cell_sparse.cu) one traversal in cell
 *                   order stages each row, its first 4 or 8 hits kept in
 *                   registers and sorted once; a rows kernel scans the row
 *                   lengths in a single pass (CUB's decoupled look-back) and
 *                   writes the rows straight into the CSR; no host
 *                   synchronisation before the build's last. It builds on
 *                   every geometry.
 *     dense-walk    (> 32; nlist_cell_dense_walk.cu) a warp per home cell
 *                   walks the stencil once, candidates beyond the home
 *                   atoms' bounding box dropped, hits into a slab (with
 *                   their d2 when the input order is unrelated to space);
 *                   rows sorted in registers, written coalesced; rows over
 *                   64 walked again by a warp. Where the geometry rules it
 *                   out (a periodic axis of fewer than 2 stencil + 1 cells
 *                   would let a row meet an atom twice), sparse-stage.
 *   auto            cell, except brute-noatomic for frames of <= 256 atoms.
 * Measurements: docs/performance.md.
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

/* The device list of the context's last successful build (any of the three
 * calls above; mdnl_nlist_build_cuda keeps it after the download), with the
 * same lifetime: until the next build or free, and the positions it names
 * only while the caller keeps them. MDNL_ERR_INTERNAL when there is none. */
mdnl_status mdnl_nlist_cuda_last(mdnl_cuda_ctx *ctx, mdnl_nlist_dev *out);

/* The method AUTO resolves to for this geometry. */
mdnl_method mdnl_nlist_cuda_auto(const mdnl_geom *g);

/* The measurement and test hooks of the context (timings, forced paths,
 * capacities) are in nlist_cuda_hooks.h, which only the kernels, the tests
 * and the benchmark include. */

MDNL_END_C

#endif

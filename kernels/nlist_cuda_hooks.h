/* nlist_cuda_hooks.h — the measurement and test hooks of the CUDA
 * neighbor-list context (nlist_cuda.h): stage timings and floors, forced
 * cell paths, capacities and budgets. Only the kernels, the tests and the
 * benchmark include it; libmdnl's public header (include/mdnl/mdnl.h) has
 * none of it, and libmdnl.so exports none of it. Plain C; the functions
 * exist only in CUDA builds. */
#ifndef MDNL_NLIST_CUDA_HOOKS_H
#define MDNL_NLIST_CUDA_HOOKS_H

#include "nlist_cuda.h"

MDNL_BEGIN_C

typedef enum mdnl_cuda_stage {
    MDNL_CUDA_STAGE_BIN = 0, /* cell list: bin, radix sort, gather (cell only) */
    MDNL_CUDA_STAGE_COUNT,   /* count pass (brute-noatomic: the staged pass, retries included) */
    MDNL_CUDA_STAGE_SCAN,    /* prefix sum of row lengths and read-back of the pair count */
    MDNL_CUDA_STAGE_FILL,    /* fill pass (cell: fill, row sort and write in one kernel) */
    MDNL_CUDA_STAGE_SORT,    /* separate row sort / compaction (brute methods) */
    MDNL_CUDA_NSTAGES
} mdnl_cuda_stage;

const char *mdnl_cuda_stage_name(int stage);

/* Timing modes: STAGES records CUDA events between stages as well as
 * around the build (mdnl_cuda_ctx_stage_ms then gives the last build's
 * per-stage times); TOTAL only around it, so that the total is the build's
 * own (events between kernels cost the GPU time). */
enum { MDNL_CUDA_TIMING_OFF = 0, MDNL_CUDA_TIMING_STAGES = 1, MDNL_CUDA_TIMING_TOTAL = 2 };
void mdnl_cuda_ctx_set_timing(mdnl_cuda_ctx *ctx, int mode);
void mdnl_cuda_ctx_stage_ms(const mdnl_cuda_ctx *ctx, double ms[MDNL_CUDA_NSTAGES]);
/* The least bytes each of the last build's stages moves: its inputs read
 * and its outputs written once each, in the layout of the path that ran
 * (dense-walk: slab entries of 4 bytes gathered, 8 packed; sparse-stage:
 * 8-byte staged entries), for the stages of dense-walk and sparse-stage;
 * 0 for a stage it did not run or that is not modelled (dense-walk's long
 * rows, the other paths). A stage's floor is these bytes over the
 * device's bandwidth (`mdnl bench`). */
void mdnl_cuda_ctx_stage_bytes(const mdnl_cuda_ctx *ctx, double bytes[MDNL_CUDA_NSTAGES]);
/* The last build's device time from after the position upload to the end
 * (host synchronisations inside included), with timing on. */
double mdnl_cuda_ctx_total_ms(const mdnl_cuda_ctx *ctx);

/* The staging capacity (brute-noatomic's stage, sparse-stage's output) in
 * pairs per atom (grows on overflow; tests set it to 1 to force the retry path),
 * and how many retries the context has done so far. */
void mdnl_cuda_ctx_set_stage_capacity(mdnl_cuda_ctx *ctx, int pairs_per_atom);
int64_t mdnl_cuda_ctx_retries(const mdnl_cuda_ctx *ctx);

/* How the last build's dense-walk rows went (nlist_cell_dense_walk.cu): 1
 * packed (the walk stored d2 beside each key: input order unrelated to
 * space), 0 gathered (the rows kernel read positions by original index), -1
 * when the last build did not take dense-walk. */
int mdnl_cuda_ctx_walk_rows(const mdnl_cuda_ctx *ctx);

/* How the last build's sparse-stage went (nlist_cell_sparse.cu): 1 its rows
 * kernel walked the rows itself (the frame before's order followed space), 0
 * a walk kernel staged them, -1 when the last build did not take
 * sparse-stage. */
int mdnl_cuda_ctx_sparse_fused(const mdnl_cuda_ctx *ctx);

/* The cell method's paths (see the top of nlist_cuda.h). */
typedef enum mdnl_cell_path {
    MDNL_CELL_PATH_AUTO = 0, /* by density: the default */
    MDNL_CELL_PATH_SPARSE_STAGE,
    MDNL_CELL_PATH_DENSE_WALK,
    MDNL_CELL_NPATHS
} mdnl_cell_path;

/* "auto", "sparse-stage", "dense-walk"; "?" otherwise. */
const char *mdnl_cell_path_name(int path);

/* Forces a cell path (tests and the benchmark); AUTO restores the default.
 * A forced dense-walk still falls back to sparse-stage where the geometry
 * rules it out. */
void mdnl_cuda_ctx_set_cell_path(mdnl_cuda_ctx *ctx, int path);

/* The brute-force rows kernel sorts a block's rows in shared memory where
 * they fit, else in global memory (slower, same bytes). Tests set the
 * budget to 0 to force that path; -1 restores the default. */
void mdnl_cuda_ctx_set_smem_budget(mdnl_cuda_ctx *ctx, int bytes);

MDNL_END_C

#endif

/* cells_cpu.h — the CPU cell list: atoms binned by mdnl_cell_coord (geometry.h)
 * with a stable counting sort (parallel for large frames), their positions
 * copied into cell order, and a per-cell "neighbourhood" that enumerates
 * every (j, S) within the geometry's cutoff of the cell's atoms: copied into
 * one array (mdnl_cells_hood, the fused energy and histogram) or as runs of
 * the cell-order arrays read in place (mdnl_cells_runs, the neighbor list).
 * All three CPU twins traverse the same stencil, so they agree on the pair
 * set by construction. Its CUDA counterpart is cells_cuda.cuh.
 *
 * Work runs in cell order whatever the atoms' order in the frame: a home
 * cell's atoms and its stencil's candidates are contiguous in the cell-order
 * copy, so the distance loop streams through memory (and vectorises) instead
 * of gathering positions by atom index.
 *
 * Candidate order. mdnl_cells_hood_gather lists a home cell's candidates as
 * the stencil offsets dx, dy, dz (each -stencil..stencil, dz fastest) and,
 * within a cell, the atoms in ascending index; so an atom's pairs come in
 * the same order for every atom of the cell, and summing them in candidate
 * order (the fused energy) gives the same bits on every run and thread
 * count. */
#ifndef MDNL_CELLS_CPU_H
#define MDNL_CELLS_CPU_H

#include "geometry.h"
#include "mdnl.h"

#include <stdint.h>

MDNL_BEGIN_C

typedef struct mdnl_cells_cpu {
    int64_t ncells;
    int64_t natoms;
    int64_t *start;   /* [ncells + 1]: cell c holds atoms[start[c] .. start[c+1]) */
    int32_t *atoms;   /* [natoms] atom indices in cell order, ascending within a cell */
    int32_t *cell_of; /* [natoms] linear cell index (cx * ncell[1] + cy) * ncell[2] + cz, by atom */
    float *x, *y, *z; /* [natoms] positions in cell order: x[k] is pos4[atoms[k]][0] */
    int64_t cap_cells, cap_atoms;
} mdnl_cells_cpu;

/* Bins the atoms; arrays are reused and grown across calls. Zero-initialise
 * before the first call; free with mdnl_cells_cpu_free(). */
mdnl_status mdnl_cells_cpu_build(const mdnl_geom *g, const float (*pos4)[4], mdnl_cells_cpu *c);
void mdnl_cells_cpu_free(mdnl_cells_cpu *c); /* NULL is a no-op */

/* The candidates of one home cell, in candidate order (above). One per
 * thread; zero-initialise, free with mdnl_cells_hood_free(). */
typedef struct mdnl_cells_hood {
    int64_t n;           /* candidates */
    float *x, *y, *z;    /* candidate position */
    float *vx, *vy, *vz; /* its image shift vector S·h (mdnl_shift_vector) */
    int32_t *j;          /* its atom index */
    int32_t *self;       /* its cell-order index when S = 0, else -1: equals the home atom's k only for itself */
    uint8_t *pos;        /* S lexicographically positive (mdnl_shift_positive) */
    int32_t *sidx;       /* its stencil entry: shift[sidx] is S */
    int (*shift)[3];     /* [nshift] */
    int64_t *seg;        /* [nshift + 1]: stencil entry s holds candidates seg[s] .. seg[s+1] */
    int64_t *segcell;    /* [nshift]: its cell */
    int64_t cell, home_start; /* the home cell and its first cell-order index */
    float *d2;           /* [n] scratch of mdnl_cells_hood_hits */
    int32_t *hit;        /* [n] scratch of mdnl_cells_hood_hits */
    int64_t cap, nshift, cap_shift;
} mdnl_cells_hood;

/* Lists the candidates of home cell `cell`. MDNL_ERR_RESOURCE when out of
 * memory (reported). */
mdnl_status mdnl_cells_hood_gather(const mdnl_geom *g, const mdnl_cells_cpu *c, int64_t cell, mdnl_cells_hood *h);
void mdnl_cells_hood_free(mdnl_cells_hood *h); /* NULL is a no-op */

/* The step every OpenMP loop over home cells takes first: false when the
 * cell is empty or another thread has set *failed (atomically read), else
 * gathers the cell's candidates into h and returns true; a failed gather
 * sets *failed (atomically) and returns false. */
bool mdnl_cells_hood_enter(const mdnl_geom *g, const mdnl_cells_cpu *c, int64_t cell, mdnl_cells_hood *h, int *failed);

/* The pairs of the home cell's atom at cell-order index k (position xi, yi,
 * zi): fills h->hit[0..m) with the candidates q, in candidate order, whose
 * mdnl_pair_d2 is below g->cutoff2 (h->d2[q] holds it), the atom itself
 * (h->self[q] == k) excluded; returns m. */
int64_t mdnl_cells_hood_hits(const mdnl_geom *g, mdnl_cells_hood *h, int64_t k, float xi, float yi, float zi);

/* A home cell's stencil as runs of the cell-order arrays, without copying
 * them: consecutive stencil cells that follow each other in cell order under
 * one image shift (the dz rows of a column, unless z wraps) form one run.
 * Runs come in candidate order, so visiting them gives the hood's candidates
 * in the hood's order. One per thread; zero-initialise, free with
 * mdnl_cells_runs_free(). */
typedef struct mdnl_cells_runs {
    int64_t n;      /* runs */
    int64_t ncand;  /* candidates in all of them */
    int64_t *b, *e; /* run r covers cell-order indices b[r] .. e[r] */
    int64_t *last;  /* its last cell */
    float (*v)[3];  /* its image shift vector S·h */
    int (*s)[3];    /* S */
    int64_t cap;
} mdnl_cells_runs;

/* Whether the runs' row functions below have a SIMD form on this machine
 * (AVX2 or AVX-512); without one, one distance loop over a gathered
 * neighbourhood (mdnl_cells_hood_hits) is faster than short loops over runs. */
bool mdnl_cells_runs_simd(void);

/* The runs of home cell `cell`. MDNL_ERR_RESOURCE when out of memory
 * (reported). */
mdnl_status mdnl_cells_runs_build(const mdnl_geom *g, const mdnl_cells_cpu *c, int64_t cell, mdnl_cells_runs *r);
void mdnl_cells_runs_free(mdnl_cells_runs *r); /* NULL is a no-op */

/* The neighbor-list row of the atom at cell-order index k (atom i =
 * c->atoms[k]) over the runs: mdnl_row_key(j, sqrtf(d2)) of each candidate
 * with mdnl_pair_d2 below g->cutoff2, the atom itself excluded, in candidate
 * order, and only those that mdnl_half_keep(i, j, S) when `half`; keys[]
 * needs r->ncand + 16 entries. Returns their number; -1 (nothing done) where
 * mdnl_cells_runs_simd() is false. */
int64_t mdnl_cells_runs_keys(const mdnl_geom *g, const mdnl_cells_cpu *c, const mdnl_cells_runs *r, int64_t k,
                             int half, uint64_t *keys);

/* The rows of the atoms at k and k + 1 at once (they share the candidate
 * loads and the loop): k's keys into keys_a (returned: their number), k + 1's
 * into keys_b (*mb: their number); each needs r->ncand + 16 entries. The
 * same -1 where mdnl_cells_runs_simd() is false. */
int64_t mdnl_cells_runs_keys2(const mdnl_geom *g, const mdnl_cells_cpu *c, const mdnl_cells_runs *r, int64_t k,
                              int half, uint64_t *keys_a, uint64_t *keys_b, int64_t *mb);

/* The same for a half traversal: only the candidates of cell-order index k'
 * with (k' > k) or (k' == k and S positive) when they share a cell, and all
 * of the stencil cells after the home cell (none before it); every pair
 * (k, k', S) of the full traversal is then found once, from k or from k' as
 * (k', k, -S), with the same d2 bits either way (the float subtraction and
 * addition are symmetric under negation). Whole stencil entries are skipped,
 * so the distance loop does about half the work. */
int64_t mdnl_cells_hood_hits_half(const mdnl_geom *g, mdnl_cells_hood *h, int64_t k, float xi, float yi, float zi);

MDNL_END_C

#endif

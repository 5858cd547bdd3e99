/* nlist.h — the neighbor-list contract, the same for every method and backend.
 *
 * Input: a prepared geometry and the wrapped float positions from
 * mdnl_geom_prepare(). Output: a CSR list. Row i holds every neighbor j of
 * atom i (one entry per image shift S, SPEC §2), sorted by j and then by
 * distance, so that every method on either backend returns the same bytes.
 *   MDNL_LIST_FULL: all (i, j, S) with d < cutoff, i != j or S != 0.
 *   MDNL_LIST_HALF: those with mdnl_half_keep(i, j, S) (geometry.h).
 * There is no neighbor limit: rows are sized exactly.
 *
 * CPU twins live in nlist_cpu.c (OpenMP); the CUDA kernels (nlist_brute.cu,
 * nlist_cell_*.cu) are reached through nlist_cuda.h. The brute-force CPU twin serves both
 * brute-atomic and brute-noatomic: on the CPU the two differ in nothing.
 */
#ifndef MDNL_NLIST_H
#define MDNL_NLIST_H

#include "geometry.h"
#include "mdnl.h"

#include <stdint.h>

MDNL_BEGIN_C

typedef enum mdnl_method {
    MDNL_METHOD_AUTO = 0,
    MDNL_METHOD_BRUTE_ATOMIC = 1,
    MDNL_METHOD_BRUTE_NOATOMIC = 2,
    MDNL_METHOD_CELL = 3,
} mdnl_method;

typedef enum mdnl_list_kind {
    MDNL_LIST_HALF = 0,
    MDNL_LIST_FULL = 1,
} mdnl_list_kind;

/* A host CSR list. Arrays are owned by the struct and grow as needed; a
 * zero-initialised struct is an empty list. Free with mdnl_nlist_free(). */
typedef struct mdnl_nlist {
    int64_t natoms;
    int64_t npairs;
    int64_t *offsets; /* [natoms + 1]: row i is [offsets[i], offsets[i+1]) */
    int32_t *j;       /* [npairs] neighbor index */
    float *d;         /* [npairs] distance, sqrtf of mdnl_pair_d2 */
    int64_t cap_atoms;
    int64_t cap_pairs;
} mdnl_nlist;

/* Makes room for natoms rows and npairs entries. */
mdnl_status mdnl_nlist_reserve(mdnl_nlist *l, int64_t natoms, int64_t npairs);
void mdnl_nlist_free(mdnl_nlist *l); /* NULL is a no-op */

/* "brute-atomic", "brute-noatomic", "cell", "auto" <-> enum. Parsing an
 * unknown name returns MDNL_ERR_USAGE. */
const char *mdnl_method_name(mdnl_method m);
mdnl_status mdnl_method_parse(const char *name, mdnl_method *m);

/* CPU twin. AUTO picks cell. Fills `out` (resized as needed). */
mdnl_status mdnl_nlist_build_cpu(const mdnl_geom *g, const float (*pos4)[4], mdnl_method method, mdnl_list_kind kind,
                                 mdnl_nlist *out);

/* What the CPU cell list keeps between frames when a caller builds many:
 * each thread's row buffer (its pages already faulted in) and the per-atom
 * row records. mdnl_nlist_build_cpu_kept() is mdnl_nlist_build_cpu() with
 * them; `kept` starts zeroed, grows to the largest frame, and is released
 * by mdnl_nlist_cpu_kept_free(). Not for two builds at once. */
typedef struct mdnl_nlist_cpu_kept {
    int nthreads;
    uint64_t **bufs; /* [nthreads] row buffers, caps[t] keys each */
    int64_t *caps;
    int64_t *src; /* [cap_atoms] where atom i's row starts in its buffer */
    int32_t *thr; /* [cap_atoms] whose buffer */
    int64_t cap_atoms;
} mdnl_nlist_cpu_kept;
mdnl_status mdnl_nlist_build_cpu_kept(mdnl_nlist_cpu_kept *kept, const mdnl_geom *g, const float (*pos4)[4],
                                      mdnl_method method, mdnl_list_kind kind, mdnl_nlist *out);
void mdnl_nlist_cpu_kept_free(mdnl_nlist_cpu_kept *kept); /* NULL is a no-op */

MDNL_END_C

#endif

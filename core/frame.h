/* frame.h — one molecular-dynamics frame as every reader produces it and
 * every kernel's preparation step consumes it (core/geometry.h).
 *
 * Units are the file's (Å for XYZ and graphene, σ for LJ fixtures); mdnl
 * never converts. Positions are double on the host; the kernels work on a
 * wrapped float copy made by mdnl_geom_prepare().
 */
#ifndef MDNL_FRAME_H
#define MDNL_FRAME_H

#include "mdnl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

MDNL_BEGIN_C

#define MDNL_MAX_SPECIES 256
#define MDNL_SYMBOL_LEN 16 /* including the terminating NUL */

/* The simulation cell. Rows of h are the lattice vectors a, b, c.
 * has_lattice is false for open frames read without a cell; then h is zero
 * and every pbc[k] is false. An axis can be periodic only with a lattice. */
typedef struct mdnl_box {
    double h[3][3];
    bool pbc[3];
    bool has_lattice;
} mdnl_box;

/* Where a frame's positions are allocated: malloc unless a pipeline asks
 * for something else (pinned host memory on the CUDA backend, so that the
 * reader's positions are uploaded by DMA without a staging copy). */
typedef struct mdnl_frame_allocator {
    void *(*alloc)(size_t bytes, const char *what, void *ctx); /* NULL with an error recorded on failure */
    void (*free)(void *p, void *ctx);                          /* NULL is a no-op */
    void *ctx;
} mdnl_frame_allocator;

typedef struct mdnl_frame {
    int64_t index;   /* 0-based index of the frame in its file */
    int64_t natoms;
    int64_t capacity; /* atoms the arrays below can hold */
    double (*pos)[3]; /* [natoms][3], owned */
    /* Allocates pos when not NULL (borrowed; set while the frame holds no
     * positions yet, i.e. before the first mdnl_frame_reserve). */
    const mdnl_frame_allocator *pos_alloc;
    int32_t *species; /* [natoms] index into symbols[], owned */
    /* Nonzero: species[], nspecies and symbols are what the H5MD reader with
     * this tag cached, unchanged since it filled this frame (it then skips
     * copying them again). Whoever else fills species[] sets it to 0, and
     * mdnl_frame_reserve does when it moves the arrays. */
    uint64_t species_tag;
    int32_t nspecies;
    char symbols[MDNL_MAX_SPECIES][MDNL_SYMBOL_LEN]; /* in order of first appearance */
    mdnl_box box;
    int64_t step;     /* from the file when has_step, else the frame index */
    double time;      /* from the file when has_time, else 0 */
    bool has_step;
    bool has_time;
    /* The work limit this frame is judged by (geometry.h, the work guard):
     * > 0 overrides the process-wide one; 0 (a zeroed frame): that one. A
     * library context sets its own here, so that contexts share no state. */
    double max_pairs;
    /* How a refusal tells the reader to raise that limit (static storage;
     * NULL: the command line's "--max-pairs N"). */
    const char *limit_option;
} mdnl_frame;

/* Makes room for n atoms (keeps the frame's content up to the old size).
 * Returns MDNL_ERR_RESOURCE when memory runs out. */
mdnl_status mdnl_frame_reserve(mdnl_frame *f, int64_t n);

/* Returns the index of `symbol` in f->symbols, adding it when new.
 * Returns -1 (with MDNL_ERR_INPUT recorded) when more than MDNL_MAX_SPECIES
 * distinct symbols appear or the symbol is longer than MDNL_SYMBOL_LEN-1. */
int32_t mdnl_frame_species_id(mdnl_frame *f, const char *symbol, size_t len);

/* Frees the arrays and zeroes the struct; NULL is a no-op. */
void mdnl_frame_free(mdnl_frame *f);

/* Gives f the content of `from` (a frame a reader filled ahead): their
 * arrays are swapped when both allocate positions alike (f->pos_alloc ==
 * from->pos_alloc: no copy, pinned memory stays pinned), else copied into
 * f's own. f keeps its max_pairs and limit_option. MDNL_ERR_RESOURCE when
 * the copy cannot be made. */
mdnl_status mdnl_frame_take(mdnl_frame *f, mdnl_frame *from);

/* Volume |det h| of the cell; 0 when there is no lattice. */
double mdnl_box_volume(const mdnl_box *b);

MDNL_END_C

#endif

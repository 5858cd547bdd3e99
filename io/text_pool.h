/* text_pool.h — the reader pool of the text formats (issue 59; XYZ / extended
 * XYZ, LAMMPS dump, GRO and PDB use it when --threads > 1): one scanner
 * thread reads the stream (io/stream.h: a file, standard input, gzip / xz /
 * zstd content) in large blocks and cuts it into frames without parsing a
 * number (the format's head() reads only a frame's count); N worker threads
 * parse whole frames, each from its own bytes in memory, with the format's
 * own single-thread parser over a memory stream (mdnl_stream_set_memory),
 * so there is one parser; frames come out strictly in file order.
 *
 * Frames in flight: at most N + 2 (and at most 64), and the scanner
 * holds no more than 256 MiB of text beyond the oldest frame not yet
 * delivered (one frame is always allowed, whatever its size): memory does
 * not depend on the trajectory's length. A frame of 262,144 atoms or more
 * is split across the workers by ranges of 65,536 atom lines (the scanner
 * notes where every 65,536th line starts as it counts them); the pieces'
 * species tables are merged in file order, so ids are those of one thread,
 * by the worker that parsed the last piece, which then runs the format's
 * finish() (a LAMMPS dump's order by id).
 *
 * Errors are the single-thread reader's, byte for byte: the scanner's own
 * (a count line, a read error) travel in frame order as an error frame; a
 * worker's are kept with their frame; a split frame that fails anywhere is
 * parsed again whole, on one thread, for its exact message. The first bad
 * frame in file order is the one reported. mdnl_text_pool_select lets the
 * scanner skip unselected frames without parsing them and stop at `stop`. */
#ifndef MDNL_TEXT_POOL_H
#define MDNL_TEXT_POOL_H

#include "frame.h"
#include "mdnl.h"
#include "stream.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

MDNL_BEGIN_C

typedef struct mdnl_text_pool mdnl_text_pool;

/* head(): more bytes are needed to find the frame's size. */
#define MDNL_TEXT_MORE 100

/* A frame's text as the scanner cut it. */
typedef struct mdnl_text_frame {
    const char *text;
    size_t len;
    int64_t line;  /* the line before text's first line */
    int64_t index; /* the frame's index in the file */
    /* how the text ends: MDNL_OK as a file ends, else the stream's error
     * (after the last complete line), as mdnl_stream_set_memory takes it */
    mdnl_status end_status;
    const char *end_message;
    const void *context; /* what ops->context wrote for this frame */
} mdnl_text_frame;

/* A format's side of the pool. A state is one parser (a reader over a
 * memory stream); the pool gives each frame slot and each piece its own. */
typedef struct mdnl_text_ops {
    void *(*state_new)(void *ctx); /* NULL: out of memory (recorded) */
    void (*state_free)(void *state);
    /* The frame starting at t->text: MDNL_OK with its lines (leading blank
     * lines included) and atoms; MDNL_TEXT_MORE when more bytes are needed
     * (*drop_bytes / *drop_lines: leading lines the scanner may discard);
     * MDNL_END; or an error (recorded). eof: t holds all that is left. */
    int (*head)(void *state, const mdnl_text_frame *t, bool eof, int64_t *nlines, int64_t *natoms,
                size_t *drop_bytes, int64_t *drop_lines);
    /* As the reader's next and skip; MDNL_END when the text holds no frame
     * (what is left at the end of the file, for a format whose frames end
     * with a record rather than a count). */
    mdnl_status (*parse)(void *state, const mdnl_text_frame *t, mdnl_frame *f);
    mdnl_status (*skip)(void *state, const mdnl_text_frame *t);
    /* Optional: what frames carry over from the frames before them (PDB's
     * last CRYST1), as the scanner's head() left it at the frame's start,
     * into out (at most 256 bytes); handed to parse and skip as t->context. */
    void (*context)(void *scan_state, void *out);
    /* true: frames not selected are checked by skip in a worker (a format
     * whose skip reports errors beyond the frame's size); false: they are
     * dropped unread, as skip would only count their lines. */
    bool check_skipped;
    /* Optional, to split large frames: header() parses the lines before the
     * first atom into f and makes room for natoms atoms (t also holds the
     * first atom line, for a format whose atom lines take their layout from
     * it); piece() parses atoms [i0, i1) from t into f->pos / f->species,
     * ids from its own table tab, after header() ran on header_state (the
     * last piece's t also holds the frame's tail_lines, the lines after its
     * atoms); finish() (may be NULL) ends the frame once its pieces are put
     * together, on header_state (LAMMPS: the atoms ordered by id). Any
     * failure: the frame is parsed again whole, for parse()'s message. */
    mdnl_status (*header)(void *state, const mdnl_text_frame *t, int64_t natoms, mdnl_frame *f);
    mdnl_status (*piece)(void *state, void *header_state, const mdnl_text_frame *t, int64_t i0, int64_t i1,
                         mdnl_frame *f, mdnl_frame *tab);
    mdnl_status (*finish)(void *header_state, mdnl_frame *f);
    int tail_lines;
    /* A frame parsed with `state` was delivered (may be NULL). */
    void (*delivered)(void *ctx, void *state);
} mdnl_text_ops;

/* A pool over `in` (borrowed; nothing read from it until the first next or
 * skip, when the threads start) with `workers` parsing threads. */
mdnl_status mdnl_text_pool_open(const mdnl_text_ops *ops, void *ctx, mdnl_stream *in, int workers,
                                mdnl_text_pool **out);

/* Frames start, start + step, ... before stop (stop < 0: to the end) are
 * parsed; the others are skipped unparsed (a next() on one parses it on the
 * calling thread), and the pool ends at stop. Before the first read only. */
void mdnl_text_pool_select(mdnl_text_pool *p, int64_t start, int64_t stop, int64_t step);

/* The next frame, into f (its arrays swapped with a parsed frame's when
 * they share f->pos_alloc, else copied); as a reader's next. The frames
 * parsed from then on are allocated by f->pos_alloc: when the caller changes
 * it (a pipeline, once its engine is up), only the frames already parsed
 * (at most N + 2) are copied. */
mdnl_status mdnl_text_pool_next(mdnl_text_pool *p, mdnl_frame *f);
mdnl_status mdnl_text_pool_skip(mdnl_text_pool *p);

/* The state that parsed the last frame delivered (valid until the next
 * read), or NULL. */
void *mdnl_text_pool_last(const mdnl_text_pool *p);

void mdnl_text_pool_close(mdnl_text_pool *p); /* NULL is a no-op */

/* f emptied (its arrays kept) for frame `index` of a text reader: no
 * atoms, no species, no cell yet. */
static inline void mdnl_text_begin_frame(mdnl_frame *f, int64_t index)
{
    f->natoms = 0;
    f->nspecies = 0;
    f->species_tag = 0;
    f->index = index;
    memset(&f->box, 0, sizeof f->box);
}

MDNL_END_C

#endif

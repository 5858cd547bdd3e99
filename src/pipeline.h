/* pipeline.h — the streaming frame pipeline behind `mdnl run` (SPEC §1):
 * read frame k+1, compute frame k and write frame k−1 at the same time.
 *
 * Threads share a ring of slots, each owning one mdnl_frame, its float
 * positions and one neighbor list, so memory is bounded by the frames' size,
 * never by the number of frames. The ring holds `nslots` (2 to 4) slots when
 * the neighbor lists are kept; otherwise as many as 256 MiB of frames allow,
 * sized by the first frame (past nslots, the frames in flight are bounded
 * by those bytes): up to 8, and up to 24 on the first lap while a CUDA
 * start-up runs, so that the reader and the prepare stage run through the
 * start-up instead of waiting for it after a few frames. The threads:
 *
 *   reader  (a pthread)      FREE     -> READ      mdnl_frames_next into the slot's frame
 *                                                  (CUDA: positions in pinned host memory)
 *   prepare (1 to 4 pthreads READ     -> PREPARED  mdnl_stream_prepare of the slot's ticket:
 *            with OpenMP teams;                    CPU: wraps the frame once and lays out the
 *            one a 4 threads)                      grids for the cutoff and r_max; CUDA: the
 *                                                  occupancy guard of the grids the device
 *                                                  will use, from the frame's doubles
 *   compute (calling thread) PREPARED -> COMPUTED  mdnl_stream_submit of frame k (CUDA: upload
 *                                                  and wrap on the device, the grids; both:
 *                                                  neighbors, energy, histogram), then
 *                                                  mdnl_stream_collect of frame k-1
 *   writer  (a pthread)      COMPUTED -> FREE      the sink: energy values, CSR copies
 *
 * With --read-only there is no prepare stage and compute only counts the
 * frames it takes from the reader.
 *
 * Slots are visited in ring order by every stage, so frames stay in order;
 * the prepare workers take the read frames in order and may finish them out
 * of order (the compute stage waits for its next one).
 * One mutex and one condition variable guard the slot states; a stage waits
 * only for its own next slot. The compute goes through libmdnl's public
 * header: a context and a stream (include/mdnl/mdnl.h), the slot's index its
 * ticket, so the stream's results of a frame stay valid until the slot is
 * prepared again, after the writer drained it. The stream is submitted to
 * and collected on the calling thread only; the frame source lives on the reader thread only once
 * the pipeline starts; the sink runs on the writer thread only. The histogram
 * accumulator and the energy statistics belong to the compute stage.
 *
 * Errors come in frame order: the reader and the prepare stage keep a
 * frame's error (a read error, a non-finite coordinate, stacked atoms) in its
 * slot and stop; the compute stage raises it when it reaches that slot, after
 * the earlier frames' own errors. A failing compute or writer stage records
 * its status and message and raises `abort`; every wait also wakes on abort,
 * so the other stages stop at their next wait, the threads are joined, and
 * mdnl_pipeline_run returns that status with the message re-recorded on the
 * calling thread.
 */
#ifndef MDNL_PIPELINE_H
#define MDNL_PIPELINE_H

#include "cli.h"
#include "h5md_writer.h"
#include "nlist.h"
#include "potential.h"
#include "rdf.h"

#include <stdbool.h>
#include <stdint.h>

#define MDNL_MAX_RDF_PAIRS 64

/* Species pairs of --pairs, by name (resolved to ids per frame). */
typedef struct mdnl_pair_names {
    int n;
    char a[MDNL_MAX_RDF_PAIRS][MDNL_SYMBOL_LEN], b[MDNL_MAX_RDF_PAIRS][MDNL_SYMBOL_LEN];
    char label[MDNL_MAX_RDF_PAIRS][2 * MDNL_SYMBOL_LEN + 1];
    const char *labels[MDNL_MAX_RDF_PAIRS];
    const char *option; /* the option its messages name (NULL: "--pairs"), set before parsing */
} mdnl_pair_names;

/* "C-C,C-H" -> symbol pairs (MDNL_ERR_USAGE on a malformed list). */
mdnl_status mdnl_pair_names_parse(const char *s, mdnl_pair_names *p);

/* Resolves the names to species ids of frame f into ids[p][2]; MDNL_ERR_INPUT
 * naming the frame when a species is absent. */
mdnl_status mdnl_pair_names_resolve(const mdnl_pair_names *p, const char *input, const mdnl_frame *f,
                                    int32_t (*ids)[2]);

/* Writes /rdf/<total|A-B>/ of the accumulated histograms. */
mdnl_status mdnl_rdf_write_h5(mdnl_h5md_results *res, const mdnl_rdf_accum *a, const mdnl_pair_names *pn);

typedef struct mdnl_pipeline_config {
    const mdnl_opts *opts; /* backend, method */
    const char *input;     /* for messages */
    bool read_only;        /* read and parse only: no compute, no sink calls with results */
    bool neighbors;        /* build and hand the list to the sink */
    mdnl_list_kind list;
    bool shifts, vectors;  /* with the list, each entry's image shift S / vector D (--with) */
    double cutoff; /* neighbors and energy */
    bool energy;
    mdnl_potential pot;
    /* NULL, or per-pair parameters (--pair-coeff; ntypes > 1) in place of
     * pot: the stream's energy table at cutoff = its max_cutoff,
     * synchronously, from positions wrapped on the host (on CUDA too: no
     * device wrap then). */
    const mdnl_pair_table *table;
    bool hist;
    double rmax;
    int32_t bins;
    const mdnl_pair_names *pairs; /* n == 0: the total */
    int nslots;                   /* 2 to 4 (4: full four-stage overlap); the least depth of the ring */
    bool serialize_io;            /* hold one lock around reads and sink calls (HDF5 in both) */
    /* The backend's start-up, begun early by the caller
     * (mdnl_context_start_begin) or NULL; its context is taken (joined)
     * while the reader thread already fills the ring (in malloc'ed memory
     * until the context is up: pinned memory needs the CUDA context). */
    struct mdnl_context_starter *starter;
} mdnl_pipeline_config;

/* The backend's start-up on a thread of its own: the context of the
 * options (mdnl_context_of: the CUDA runtime and context, ~0.2-0.3 s),
 * made while the caller opens its input. mdnl_context_start_begin starts the
 * thread (none for --backend cpu, in a build without CUDA, or when the
 * thread cannot start: the pipeline then makes the context itself); the
 * pipeline joins it and uses
 * the context, reporting its error as its own. The starter keeps owning the
 * context (one the pipeline had to make itself too) and the pinned frame
 * allocator over it: frames the input still holds after the pipeline (a
 * reader pool's spare frames) are freed through them, so close the input
 * first, then call mdnl_context_start_end, which joins (idempotent) and
 * frees the context; call it before o goes. */
typedef struct mdnl_context_starter {
    void *thread; /* a pthread_t, heap-allocated while running */
    bool joined;
    const mdnl_opts *opts;
    mdnl_context *ctx;
    mdnl_frame_allocator pinned; /* mdnl_host_alloc memory of ctx (set by the pipeline on CUDA) */
    mdnl_status status;
    char message[2048];
    double t_begin, seconds; /* seconds: the start-up's wall time, once joined */
} mdnl_context_starter;
void mdnl_context_start_begin(mdnl_context_starter *s, const mdnl_opts *o);
void mdnl_context_start_join(mdnl_context_starter *s);
void mdnl_context_start_end(mdnl_context_starter *s);

/* One computed frame, as the sink sees it. Borrowed: valid during the call. */
typedef struct mdnl_frame_result {
    int64_t index, step, natoms;
    double time; /* NaN when the frame has none */
    bool has_energy;
    double energy;
    const mdnl_nlist *list; /* NULL unless config.neighbors */
    const int32_t (*shifts)[3]; /* [list->npairs]: NULL unless config.shifts */
    const double (*vectors)[3]; /* [list->npairs]: NULL unless config.vectors */
    /* config.hist: the frame's histogram counts[nhist * bins] with the A and
     * B atom counts na/nb[nhist] and the normalisation volume (0: open) that
     * mdnl_rdf_accum_add takes; NULL otherwise (an MPI rank ships them to
     * rank 0, which adds them in frame order: mpi_split.h). */
    const uint64_t *counts;
    const int64_t *na, *nb;
    double volume;
} mdnl_frame_result;

/* Called on the writer thread, in frame order; a non-OK status stops the
 * pipeline (record the message with mdnl_error first). */
typedef mdnl_status (*mdnl_pipeline_sink)(void *user, const mdnl_frame_result *r);

typedef struct mdnl_pipeline_stats {
    mdnl_backend backend;
    int64_t nframes, pairs;        /* pairs: stored neighbor pairs */
    mdnl_atoms_range atoms;        /* atoms per frame */
    uint64_t pairs_counted;        /* histogrammed distances */
    double e_first, e_last, e_sum, e_min, e_max;
    /* busy seconds per stage (prepare: the prepare thread's; on CUDA the device wrap's launch is the
     * compute stage's submit); wall of the whole run */
    double t_read, t_prepare, t_compute, t_write, t_wall;
    double t_init;    /* backend start-up (CUDA context, ~0.3 s once per process), inside t_wall: what was
                         left of it when the pipeline started when the caller began it early */
    double t_startup; /* the whole backend start-up, begun early or not (wall seconds) */
    double t_collect; /* of t_compute: waiting for the device's results of the frame before (deferred frames) */
    double t_starved; /* the compute stage waiting for its next frame (the reader's, or prepare's) */
    double t_read_blocked; /* the reader waiting for a free slot (the stages after it are behind) */
    double t_read_startup; /* of t_read: frames read while the backend was still starting (hidden by it) */
    /* Since the start: when the first and the last frame left the writer.
     * (nframes - 1) / (t_last_done - t_first_done) is the steady-state rate,
     * free of start-up and of the first frame's latency through the stages. */
    double t_first_done, t_last_done;
} mdnl_pipeline_stats;

/* Runs every frame of fs through the pipeline. fs is used by the reader
 * thread only until this returns; progress (may be NULL) is stepped on the
 * writer thread; acc (initialised by the caller when config.hist, or NULL)
 * receives every frame's histogram. The caller still owns fs, acc and the sink's
 * outputs and commits or aborts them by the returned status. */
mdnl_status mdnl_pipeline_run(const mdnl_pipeline_config *c, mdnl_frames *fs, mdnl_progress *progress,
                              mdnl_pipeline_sink sink, void *user, mdnl_rdf_accum *acc, mdnl_pipeline_stats *stats);

#endif

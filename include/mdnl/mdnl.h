/* mdnl/mdnl.h — libmdnl, the public C API: neighbor lists, pair energies and
 * RDFs of plain arrays, on the CPU or an NVIDIA GPU.
 *
 * The command line's compute, callable from code. Everything goes through an
 * opaque context (backend, device, work limit, threads): there is no process
 * state, so two contexts on two threads never meet.
 *
 * Conventions (chemfiles' C API is the model):
 *   - Every fallible call returns an mdnl_status (MDNL_OK = 0; the values
 *     equal the command line's exit codes and are never renumbered) and, on
 *     failure, records one line of context for the calling thread, read with
 *     mdnl_last_error().
 *   - Ownership is stated on every call. Results are either written into
 *     arrays the caller allocated (sizes known before the call), or BORROWED
 *     from the context: valid until the next call on the same context or
 *     mdnl_context_free, whichever comes first; copy what you keep.
 *   - Thread-safety: a context is used by one thread at a time (one context
 *     per thread). Calls on different contexts may run concurrently.
 *     mdnl_last_error() is per thread. mdnl_rdf objects are not thread-safe
 *     either: one per thread, or lock around them.
 *   - Arrays are C-contiguous (row-major); positions are [n][3] float64 or
 *     float32, the cell is 3x3 double with the lattice vectors a, b, c as
 *     rows. Units are the caller's; nothing converts.
 *
 * A pair is (i, j, S) with S an integer image shift: its vector is
 * D = r_j - r_i + S·cell and its distance d = |D| (ASE's `ijdSD`). Distances
 * are computed in float from positions wrapped into the cell, identically on
 * the CPU and the GPU (results compare byte for byte); a pair within ~1e-7
 * relative of the cutoff is decided by that float rounding.
 */
#ifndef MDNL_PUBLIC_H
#define MDNL_PUBLIC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(MDNL_STATIC_DEFINE) || !defined(__GNUC__)
#define MDNL_API
#else
#define MDNL_API __attribute__((visibility("default")))
#endif

#define MDNL_VERSION_MAJOR 0
#define MDNL_VERSION_MINOR 1
#define MDNL_VERSION_PATCH 0

/* ---- status and errors ---- */

#ifndef MDNL_STATUS_DEFINED
#define MDNL_STATUS_DEFINED
/* The same enum as the command line's exit codes (docs/spec.md §7). */
typedef enum mdnl_status {
    MDNL_END = -1,          /* end of a stream: not an error (not returned by this API) */
    MDNL_OK = 0,
    MDNL_ERR_INTERNAL = 1,  /* a bug or an impossible state */
    MDNL_ERR_USAGE = 2,     /* a bad argument: NULL, out-of-range value, unknown option */
    MDNL_ERR_INPUT = 3,     /* bad data: non-finite position, singular cell, work beyond the limit */
    MDNL_ERR_RESOURCE = 4,  /* out of host or device memory, no device, a device failure */
} mdnl_status;
#endif

/* The last message recorded on the calling thread ("" when none). The string
 * belongs to the library and stays valid until the next failing call on the
 * same thread. */
MDNL_API const char *mdnl_last_error(void);
/* Empties the calling thread's message. */
MDNL_API void mdnl_clear_error(void);
/* "0.1.0": static storage. */
MDNL_API const char *mdnl_version(void);

/* ---- the context ---- */

typedef enum mdnl_compute {
    MDNL_COMPUTE_AUTO = 0, /* CUDA when built with it and a device is usable, else CPU */
    MDNL_COMPUTE_CPU = 1,  /* the CPU twins (OpenMP) */
    MDNL_COMPUTE_CUDA = 2, /* CUDA; mdnl_context_create fails (MDNL_ERR_RESOURCE) without a device */
} mdnl_compute;

/* Options of a context. A zeroed struct (or NULL) is the default. */
typedef struct mdnl_context_options {
    mdnl_compute backend;
    int device;       /* CUDA device index (0..count-1); default 0 */
    double max_pairs; /* the work limit of one call (the CLI's --max-pairs): estimated
                         pairs, atom-shift visits (and 32x candidates) beyond it are
                         MDNL_ERR_INPUT before anything runs; 0: 1e5 per atom, at least 1e7,
                         and a cutoff of at most 100 periodic widths */
    int threads;      /* CPU threads of this context's calls; 0: OpenMP's default */
} mdnl_context_options;

typedef struct mdnl_context mdnl_context;

/* Creates a context. `options` may be NULL (the defaults); it is read during
 * the call only. On success *out is a context the caller frees with
 * mdnl_context_free; on failure *out is NULL. Creating a CUDA context starts
 * the CUDA runtime (~0.2 s the first time in a process). Thread-safe. */
MDNL_API mdnl_status mdnl_context_create(const mdnl_context_options *options, mdnl_context **out);
/* Frees the context and everything it lent out. NULL is a no-op. */
MDNL_API void mdnl_context_free(mdnl_context *ctx);
/* The backend the context computes on: MDNL_COMPUTE_CPU or MDNL_COMPUTE_CUDA. */
MDNL_API mdnl_compute mdnl_context_backend(const mdnl_context *ctx);
/* 1 when libmdnl was built with CUDA (a device may still be absent), else
 * 0: makes no CUDA call (mdnl_cuda_devices starts the driver). Thread-safe. */
MDNL_API int mdnl_cuda_built(void);
/* Number of usable CUDA devices (0 without CUDA). Thread-safe. */
MDNL_API int mdnl_cuda_devices(void);

/* Names the frame the next calls on ctx compute, for their messages. With a
 * source (copied: a trajectory's path, say), an input-data error reads
 * "SOURCE: frame INDEX: atom 7 has a non-finite coordinate" and the other
 * errors carry no prefix: the command line names its input file this way.
 * With source NULL (the default) every message starts with the call's name
 * ("mdnl_neighbors: frame INDEX: ..."); INDEX is 0 until set. Stays until the
 * next mdnl_context_set_frame. MDNL_ERR_RESOURCE when the copy fails. */
MDNL_API mdnl_status mdnl_context_set_frame(mdnl_context *ctx, const char *source, int64_t index);

/* The neighbor-list algorithm of the next mdnl_neighbors calls (the command
 * line's --method): "auto" (the default: the cell list, or on CUDA the
 * build the grid suits), "cell", "brute-atomic" or "brute-noatomic" (every
 * pair tested; for checks). Every algorithm gives the same list.
 * MDNL_ERR_USAGE for another name. */
MDNL_API mdnl_status mdnl_context_set_method(mdnl_context *ctx, const char *method);

/* How the work guard's refusals name the limit to raise: name (copied, at
 * most 63 bytes) ends their "raise the limit with ..."; NULL restores the
 * default "mdnl_context_options.max_pairs". The command line passes
 * "--max-pairs N". MDNL_ERR_USAGE for a longer name. */
MDNL_API mdnl_status mdnl_context_set_limit_name(mdnl_context *ctx, const char *name);
/* The algorithm the last mdnl_neighbors call on ctx used, "auto" resolved
 * ("cell", ...); "auto" before the first. Static storage. */
MDNL_API const char *mdnl_context_method(const mdnl_context *ctx);

/* Host memory for the caller's per-frame arrays (positions read from a
 * file, results): page-locked on a CUDA context, so that the device reads
 * from it by DMA at full speed; plain malloc on a CPU context. *out (NULL on
 * failure) is freed with mdnl_host_free on the same context, before
 * mdnl_context_free. bytes == 0 gives a valid pointer. Thread-safe: any
 * thread may allocate and free while another calls on ctx. MDNL_ERR_RESOURCE
 * when memory runs out. */
MDNL_API mdnl_status mdnl_host_alloc(mdnl_context *ctx, size_t bytes, void **out);
MDNL_API void mdnl_host_free(mdnl_context *ctx, void *p); /* NULL is a no-op */

/* ---- a system: positions, cell, periodicity ---- */

typedef enum mdnl_dtype {
    MDNL_FLOAT64 = 0,
    MDNL_FLOAT32 = 1,
} mdnl_dtype;

/* Borrowed by each call for its duration only. */
typedef struct mdnl_system {
    int64_t n;             /* atoms, >= 0 */
    const void *positions; /* [n][3] of `dtype`, C-contiguous (host memory, except for
                              mdnl_neighbors_device, which reads device memory) */
    mdnl_dtype dtype;
    const double *cell;    /* [3][3] lattice vectors as rows, host memory; NULL: no cell
                              (then every pbc must be 0) */
    int pbc[3];            /* nonzero: periodic along that lattice vector */
} mdnl_system;

/* ---- neighbor lists ---- */

enum {
    MDNL_NEIGHBORS_HALF = 0,    /* each pair once: i < j, or i == j with S lexicographically positive */
    MDNL_NEIGHBORS_FULL = 1,    /* each pair in both rows: (i, j, S) and (j, i, -S) */
    MDNL_NEIGHBORS_SHIFTS = 2,  /* also the integer image shifts S */
    MDNL_NEIGHBORS_VECTORS = 4, /* also the vectors D = r_j - r_i + S·cell */
};

/* A neighbor list in CSR form. Row i holds the neighbors of atom i sorted by
 * j and then by distance: entries offsets[i] .. offsets[i+1]-1 of the other
 * arrays. Every array is BORROWED from the context (host memory, or device
 * memory for mdnl_neighbors_device): valid until the next call on the
 * context or its free. shifts and vectors are NULL unless asked for.
 * S and D are relative to the positions as given (not wrapped): ASE's
 * conventions, D = positions[j] - positions[i] + S·cell in double. */
typedef struct mdnl_neighbor_list {
    int64_t n;                /* rows (atoms) */
    int64_t npairs;           /* entries */
    const int64_t *offsets;   /* [n + 1] */
    const int32_t *indices;   /* [npairs] j */
    const float *distances;   /* [npairs] d, float */
    const int32_t *shifts;    /* [npairs][3] S, or NULL */
    const double *vectors;    /* [npairs][3] D, or NULL */
} mdnl_neighbor_list;

/* Every (i, j, S) with d < cutoff (i != j or S != 0), on the context's
 * backend, host arrays in and out. `flags`: MDNL_NEIGHBORS_HALF or _FULL,
 * ORed with _SHIFTS and _VECTORS as needed. The list is written into *out
 * (borrowed, see above). Errors: MDNL_ERR_USAGE for NULL pointers, a bad
 * cutoff or pbc without a cell; MDNL_ERR_INPUT for a non-finite position
 * (naming the atom), a singular cell or work beyond the context's limit;
 * MDNL_ERR_RESOURCE when memory runs out.
 *
 * Cost of S and D: the kernels do not carry the image shift, so a pass after
 * the build recovers each entry's S by testing the (2m+1)^3 shifts within the
 * brute force's image range m (m = 1, i.e. 27 float distance evaluations an
 * entry, while the cutoff is below every periodic width) for the one with
 * the entry's distance; on CUDA that pass is a kernel, a thread per row. */
MDNL_API mdnl_status mdnl_neighbors(mdnl_context *ctx, const mdnl_system *sys, double cutoff, int flags,
                                    mdnl_neighbor_list *out);

/* The same with sys->positions in device memory (the context's device) and
 * every array of *out in device memory, borrowed as above: nothing passes
 * through the host but the cell, a handful of flags and the pair count.
 * `stream` is a cudaStream_t (NULL: the legacy default stream) whose queued
 * work the call waits for before it reads the positions (CuPy's or PyTorch's
 * current stream); the results are complete when the call returns.
 * MDNL_ERR_USAGE on a CPU context. */
MDNL_API mdnl_status mdnl_neighbors_device(mdnl_context *ctx, const mdnl_system *sys, double cutoff, int flags,
                                           void *stream, mdnl_neighbor_list *out);

/* ---- pair energies ---- */

typedef enum mdnl_pair_style {
    MDNL_PAIR_LJ = 1,    /* U = 4 epsilon ((sigma/r)^12 - (sigma/r)^6) */
    MDNL_PAIR_MORSE = 2, /* U = d0 (exp(-2 alpha (r - r0)) - 2 exp(-alpha (r - r0))) */
} mdnl_pair_style;

typedef struct mdnl_pair_params {
    mdnl_pair_style style;
    double epsilon, sigma; /* LJ: > 0 */
    double d0, alpha, r0;  /* Morse: d0 > 0, alpha > 0, r0 >= 0 */
    int shift;             /* nonzero: U(cutoff) is subtracted (the CLI's shift=yes) */
} mdnl_pair_params;

/* The pair energy of a frame: every pair with d < cutoff counted once into
 * *total and half to each of its atoms in per_atom (LAMMPS' pe/atom), summed
 * in double. per_atom may be NULL; otherwise the caller allocates sys->n
 * doubles, which the call overwrites. Host arrays. Errors as
 * mdnl_neighbors, and MDNL_ERR_USAGE for bad parameters. */
MDNL_API mdnl_status mdnl_energy(mdnl_context *ctx, const mdnl_system *sys, const mdnl_pair_params *params,
                                 double cutoff, double *total, double *per_atom);

/* The largest number of atom types of mdnl_energy_types. */
#define MDNL_ENERGY_MAX_TYPES 4

/* The same with parameters per pair of atom types (LAMMPS' pair_coeff, the
 * command line's --pair-coeff): atom i has type types[i] in 0..ntypes-1
 * ([sys->n] int32, host memory, borrowed for the call); the pair of types a
 * and b has params[a * ntypes + b] and its own cutoff cutoffs[a * ntypes + b]
 * (both [ntypes][ntypes], symmetric, one style throughout; each pair shifted
 * at its own cutoff when its shift is set). The cells are traversed at the
 * largest cutoff. 1 <= ntypes <= MDNL_ENERGY_MAX_TYPES. Results and errors
 * as mdnl_energy. */
MDNL_API mdnl_status mdnl_energy_types(mdnl_context *ctx, const mdnl_system *sys, int32_t ntypes,
                                       const mdnl_pair_params *params, const double *cutoffs, const int32_t *types,
                                       double *total, double *per_atom);

/* ---- coordination numbers ---- */

/* The largest number of species-pair columns of mdnl_coordination. */
#define MDNL_COORDINATION_MAX_PAIRS 8

/* Coordination numbers: for every atom, how many neighbors lie within the
 * cutoff (d < cutoff, each periodic image counted), counted while the cells
 * are traversed (no list is stored). npairs == 0: one column, every
 * neighbor. Otherwise npairs columns (at most MDNL_COORDINATION_MAX_PAIRS),
 * column p for the species pair (A, B) = pairs[p]: for an atom of species A
 * its neighbors of species B, 0 for an atom of another species. counts
 * ([sys->n][max(1, npairs)] int32) is allocated by the caller and
 * overwritten. species ([sys->n] int32 ids >= 0, host memory, borrowed for
 * the call) may be NULL when npairs == 0. Errors as mdnl_neighbors. */
MDNL_API mdnl_status mdnl_coordination(mdnl_context *ctx, const mdnl_system *sys, double cutoff,
                                       const int32_t *species, int32_t npairs, const int32_t (*pairs)[2],
                                       int32_t *counts);

/* The largest number of cutoff types of mdnl_coordination_types. */
#define MDNL_COORDINATION_MAX_TYPES 8

/* The same with a cutoff per pair of atom types (the command line's
 * --pair-cut, ASE's cutoff dict): atom i has cutoff type types[i] in
 * 0..ntypes-1 ([sys->n] int32, host memory, borrowed for the call), and a
 * pair of types a and b counts when d < cutoffs[a * ntypes + b]
 * ([ntypes][ntypes] doubles >= 0, symmetric; 0: that pair never counts).
 * The cells are traversed at the largest cutoff, which must be > 0.
 * 1 <= ntypes <= MDNL_COORDINATION_MAX_TYPES. The cutoff types are
 * independent of the species of the columns. Results and errors as
 * mdnl_coordination. */
MDNL_API mdnl_status mdnl_coordination_types(mdnl_context *ctx, const mdnl_system *sys, int32_t ntypes,
                                             const double *cutoffs, const int32_t *types, const int32_t *species,
                                             int32_t npairs, const int32_t (*pairs)[2], int32_t *counts);

/* ---- radial distribution functions ---- */

/* An RDF accumulator: integer pair counts and per-frame normalisations summed
 * over frames, the command line's `mdnl rdf` (docs/spec.md §5). Owned by the
 * caller: create, add frames, read, free. Not tied to a context. */
typedef struct mdnl_rdf mdnl_rdf;

/* bins uniform bins on [0, r_max). npairs == 0: the total RDF over all atoms;
 * otherwise npairs partial RDFs, pair p between species pairs[p][0] and
 * pairs[p][1] (ids as in the species array given to mdnl_rdf_add; copied).
 * volume > 0 overrides every frame's cell volume (and gives open frames one);
 * 0: the cell's. *out is freed with mdnl_rdf_free. */
MDNL_API mdnl_status mdnl_rdf_create(double r_max, int32_t bins, int32_t npairs, const int32_t (*pairs)[2],
                                     double volume, mdnl_rdf **out);
MDNL_API void mdnl_rdf_free(mdnl_rdf *rdf); /* NULL is a no-op */

/* Counts one frame's pairs on the context's backend and adds them.
 * `species` ([sys->n] int32 ids >= 0, host memory, borrowed for the call) may
 * be NULL when the accumulator has no partial pairs. */
MDNL_API mdnl_status mdnl_rdf_add(mdnl_context *ctx, mdnl_rdf *rdf, const mdnl_system *sys, const int32_t *species);

/* One frame's pair-distance histogram, the counts mdnl_rdf_add adds up:
 * bins uniform bins on [0, r_max), for the total (npairs == 0) or for each
 * species pair (pairs[p], ids as in `species`), binned while the cells are
 * traversed. counts ([max(1, npairs)][bins] uint64) is allocated by the
 * caller and overwritten. species as mdnl_rdf_add. *volume (volume may be
 * NULL) is the frame's normalisation volume: the cell's when some axis is
 * periodic, else 0. Errors as mdnl_rdf_create and mdnl_neighbors. */
MDNL_API mdnl_status mdnl_histogram(mdnl_context *ctx, const mdnl_system *sys, double r_max, int32_t bins,
                                    const int32_t *species, int32_t npairs, const int32_t (*pairs)[2],
                                    uint64_t *counts, double *volume);

/* Frames added so far, and whether g(r) is defined (at least one frame and
 * every frame had a volume). */
MDNL_API int64_t mdnl_rdf_frames(const mdnl_rdf *rdf);
MDNL_API int mdnl_rdf_g_defined(const mdnl_rdf *rdf);
/* The frame averages, each [max(1, npairs)][bins] doubles the caller
 * allocates (any may be NULL): r the bin centres ([bins] only), g (zeros when
 * undefined), the pair count per A atom, and its running sum n(r). */
MDNL_API mdnl_status mdnl_rdf_values(const mdnl_rdf *rdf, double *r, double *g, double *count_per_atom, double *n);

/* ---- streams of frames: the work of frame k+1 queued while frame k runs ---- */

/* A stream: one description of per-frame work (a neighbor list, a pair
 * energy, a pair-distance histogram, any of them) applied to a sequence of
 * frames, frames in flight named by tickets 0..tickets-1, so that a caller
 * analysing a trajectory (or an MD code, on the fly) keeps the device busy:
 *
 *   mdnl_stream_prepare(s, t, frame)  checks frame k+1 (any thread) while
 *   mdnl_stream_submit(s, t, frame)   queues its work behind frame k's and
 *   mdnl_stream_collect(s, t', &res)  waits for frame k's results.
 *
 * On CUDA, submit uploads the positions once, wraps them on the device and
 * queues the list, energy and histogram kernels; the host waits for the
 * device only to download the list (when asked for), and collect waits for
 * that ticket only. On the CPU, submit does the work
 * and collect returns it. `mdnl run` is this API's client.
 *
 * Ownership and lifetimes: the stream belongs to the caller (free it with
 * mdnl_stream_free before its context). A frame's arrays (mdnl_stream_frame)
 * are BORROWED from mdnl_stream_prepare (or submit) until that ticket's
 * mdnl_stream_collect returns: the device reads them in between. For the
 * fast upload, positions live in mdnl_host_alloc memory (page-locked on
 * CUDA). Results are BORROWED from the stream, in host memory: valid until
 * the same ticket is prepared or submitted again, or the stream is freed.
 *
 * Thread-safety: create, submit, collect and free on one thread at a time
 * (the stream's). mdnl_stream_prepare of ticket t may run on another thread
 * concurrently with submit and collect of the other tickets (never with
 * those of t); mdnl_stream_check may run on any thread at any time. A
 * collected ticket's results may be read by any thread until the ticket is
 * reused. The stream calls on the context's device whichever thread calls,
 * so a context created on one thread (say, a start-up thread that creates
 * it while the caller opens its input) serves a stream used on another.
 *
 * Errors: each call returns a status and records its message on the calling
 * thread. An error of frame k (a non-finite coordinate, work beyond the
 * limit) is reported by the calls of frame k's ticket only: prepare, or
 * submit or collect when found there; the frames before it are collected
 * as usual. Messages read as mdnl_context_set_frame's: with a source
 * (mdnl_stream_options.source) bad data reads "SOURCE: frame INDEX: ...",
 * the command line's wording; without, every message starts with the call's
 * name. After a failing submit or collect the ticket is free again; before
 * freeing arrays a failed stream was given, call mdnl_stream_free (it waits
 * for the device). */
typedef struct mdnl_stream mdnl_stream;

/* The most tickets of a stream (frames prepared ahead, or whose results are
 * still read), and the most of them submitted and not yet collected. */
#define MDNL_STREAM_MAX_TICKETS 32
#define MDNL_STREAM_MAX_SUBMITTED 4

/* The per-frame work, read by mdnl_stream_create only (every array copied).
 * A zeroed struct is no work. */
typedef struct mdnl_stream_options {
    int tickets;        /* tickets, 1..MDNL_STREAM_MAX_TICKETS; 0: 2. Each holds a frame's
                           host side and results (a list each, with neighbors) */
    const char *source; /* names the input in messages (as mdnl_context_set_frame), or NULL */
    /* the neighbor list */
    int neighbors;      /* nonzero: build the list of every frame */
    int flags;          /* MDNL_NEIGHBORS_HALF or _FULL, ORed with _SHIFTS and _VECTORS */
    double cutoff;      /* the list's and the energy's cutoff (> 0 when either is asked for) */
    /* the pair energy (its total) */
    int energy;         /* nonzero: compute it */
    mdnl_pair_params params; /* ntypes == 0: one potential, at `cutoff` */
    int32_t ntypes;     /* 1..MDNL_ENERGY_MAX_TYPES: parameters per pair of atom types as in
                           mdnl_energy_types (type_params, type_cutoffs [ntypes][ntypes]; the
                           largest cutoff must equal `cutoff`); the frames give the types */
    const mdnl_pair_params *type_params;
    const double *type_cutoffs;
    /* the pair-distance histogram (mdnl_histogram's counts) */
    int histogram;      /* nonzero: count it */
    double r_max;
    int32_t bins;
    int32_t npairs;     /* 0: the total; else npairs species pairs, named per frame
                           (mdnl_stream_frame.pairs) or here */
    const int32_t (*pairs)[2]; /* [npairs] the default species pairs, or NULL */
} mdnl_stream_options;

/* One frame. Borrowed (see above). */
typedef struct mdnl_stream_frame {
    mdnl_system system;        /* host positions */
    int64_t index;             /* the frame's index, for messages */
    const int32_t *species;    /* [n] species ids >= 0: the histogram's pairs (npairs > 0) */
    const int32_t (*pairs)[2]; /* [npairs] this frame's species pairs (read by submit); NULL: the stream's */
    const int32_t *types;      /* [n] atom types 0..ntypes-1: the energy's table (ntypes > 0) */
} mdnl_stream_frame;

/* A collected frame's results, BORROWED from the stream (host memory; see
 * above). Members of work not asked for are zero or NULL. */
typedef struct mdnl_stream_result {
    mdnl_neighbor_list list;   /* the CSR list, with shifts/vectors as flagged */
    double energy;             /* the total pair energy */
    const uint64_t *counts;    /* [max(1, npairs)][bins] pair-distance counts */
    const int64_t *na, *nb;    /* [max(1, npairs)] the frame's A and B atoms of each pair */
    double volume;             /* the normalisation volume (0: no periodic axis) */
} mdnl_stream_result;

/* Creates a stream of ctx's backend doing `options`' work; *out (NULL on
 * failure) is freed with mdnl_stream_free. MDNL_ERR_USAGE for bad options
 * (naming the field), MDNL_ERR_RESOURCE when memory runs out. */
MDNL_API mdnl_status mdnl_stream_create(mdnl_context *ctx, const mdnl_stream_options *options, mdnl_stream **out);
/* Waits for the stream's device work and frees it. NULL is a no-op. */
MDNL_API void mdnl_stream_free(mdnl_stream *s);

/* The occupancy guard of the frame: whether its grids (the cutoff's, r_max's)
 * stay within the context's work limit, from the frame's own positions; no
 * state, any thread, any backend (so a CPU stream of the same options can
 * check frames while a CUDA context still starts). MDNL_OK for a frame it
 * cannot lay out (a non-finite coordinate, a bad cell): prepare or submit
 * report those. MDNL_ERR_INPUT naming the densest cell otherwise. */
MDNL_API mdnl_status mdnl_stream_check(const mdnl_stream *s, const mdnl_stream_frame *frame);

/* mdnl_stream_prepare's flags: the caller ran mdnl_stream_check on this
 * frame, which returned MDNL_OK (CUDA: the guard is not run again). */
#define MDNL_STREAM_CHECKED 1

/* The host side of frame `frame` for ticket t, off the submitting thread:
 * the arrays checked, the guard (mdnl_stream_check), and on the CPU (or
 * with an energy table, which runs on host-wrapped positions) the wrap of
 * the positions into the cell and the cell grids. The verdict is kept for
 * the ticket: a failing prepare is reported again by its submit. Optional:
 * a submit of an unprepared ticket prepares it first. Runs on the calling
 * thread's OpenMP team (not the context's thread count): the caller sizes
 * it. */
MDNL_API mdnl_status mdnl_stream_prepare(mdnl_stream *s, int ticket, const mdnl_stream_frame *frame, int flags);

/* Queues frame's work under ticket t (the same frame as prepared, if it
 * was). The ticket must be free: never submitted, or collected since; at
 * most MDNL_STREAM_MAX_SUBMITTED tickets are submitted and not collected
 * (MDNL_ERR_USAGE beyond). */
MDNL_API mdnl_status mdnl_stream_submit(mdnl_stream *s, int ticket, const mdnl_stream_frame *frame);

/* Waits for ticket t's work and writes its results into *out (borrowed).
 * Tickets are collected in the order they were submitted (MDNL_ERR_USAGE
 * for a ticket submitted after another still in flight). */
MDNL_API mdnl_status mdnl_stream_collect(mdnl_stream *s, int ticket, mdnl_stream_result *out);

/* The algorithm the last list of the stream used ("auto" before the first),
 * as mdnl_context_method. Static storage. */
MDNL_API const char *mdnl_stream_method(const mdnl_stream *s);

/* A description of CUDA device `device` ("NAME, sm_XY, N GiB"), or "none"
 * when there is no such device ("none (built without CUDA)" without CUDA).
 * Static storage, overwritten by the next call. */
MDNL_API const char *mdnl_device_description(int device);

#ifdef __cplusplus
}
#endif

#endif

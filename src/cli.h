/* cli.h — the command line: options shared by every subcommand, the frame
 * loop with --frames / --box / --no-pbc, and the subcommands themselves.
 * src/ is the only layer that prints to the user; main.c alone exits. */
#ifndef MDNL_CLI_H
#define MDNL_CLI_H

#include "frame.h"
#include "mdnl.h"
#include "potential.h"
#include "geometry.h"
#include "nlist.h"
#include "reader.h"

#include <mdnl/mdnl.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef enum mdnl_backend { MDNL_BACKEND_AUTO, MDNL_BACKEND_CPU, MDNL_BACKEND_CUDA } mdnl_backend;

typedef struct mdnl_opts {
    const char *command;
    const char *positional[2];
    int npositional;
    /* common */
    mdnl_backend backend;
    mdnl_method method;
    const char *frames; /* START:STOP:STEP */
    bool has_box;
    mdnl_box box;
    bool no_pbc;
    const char *group;
    const char *topology; /* --topology FILE: species of every frame from FILE's first frame */
    /* input: --format, --types, --atom-style, --units (mdnl_read_options) */
    const char *format, *types, *atom_style;
    bool units_native; /* --units native: GRO, XTC, TRR positions stay in nm */
    bool keep_extras;  /* convert: extended XYZ extras (set by the command, not an option) */
    bool quiet, json, progress, no_progress;
    const char *output;
    /* neighbors / energy / run */
    double cutoff;
    bool has_cutoff;
    mdnl_list_kind list;
    bool has_list;
    const char *pair;
    const char *pair_coeff[MDNL_PAIR_COEFF_MAX]; /* energy: --pair-coeff A-B:..., in order */
    int npair_coeff;
    bool per_atom;
    bool neighbors; /* run: store the lists */
    bool with_shift, with_vector; /* neighbors --with shift,vector: each entry's S and D too */
    bool read_only; /* run: read and parse only */
    double max_pairs;    /* --max-pairs: the work guard's limit (the contexts' max_pairs); 0: the default */
    int device;          /* the CUDA device of the command's contexts (an MPI rank's: mdnl_mpi_choose_device) */
    long long threads;   /* --threads N: CPU threads (mdnl_threads) */
    bool has_threads;
    bool coords_checked; /* run: every frame goes through a prepare that rejects non-finite
                            coordinates, so the reader need not check them (mdnl_read_options) */
    bool feeds_gpu;      /* run: the frames likely feed a CUDA pipeline (mdnl_frames_open's reader threads) */
    /* rdf */
    double rmax;
    bool has_rmax;
    long long bins;
    bool has_bins;
    const char *pairs;
    double volume;
    bool has_volume;
    const char *plot;
    bool per_frame; /* rdf --per-frame: every frame's g(r) and counts too */
    const char *histogram; /* coord --histogram FILE */
    const char *pair_cut;  /* coord --pair-cut A-B=R,... */
    /* convert */
    const char *to;
    /* gen */
    long long nx, ny;
    double bond, noise, vacuum;
    unsigned long long seed;
    /* bench */
    const char *sizes;
    const char *data_dir; /* --data DIR: the folder of lj-liquid-131k.h5md */
} mdnl_opts;

/* Parses argv[first..argc) for `command`, accepting only the long options in
 * the comma-separated `allowed` list (plus -h/--help, handled by the caller
 * through the return value MDNL_END). Returns MDNL_ERR_USAGE on anything
 * unknown, missing or out of range. */
mdnl_status mdnl_parse_options(const char *command, const char *allowed, int argc, char **argv, int first,
                               mdnl_opts *o);

/* The comma-separated long options `command` takes ("" for an unknown
 * command): what it passes to mdnl_parse_options and what its help shows. */
const char *mdnl_command_options(const char *command);
/* Prints the help lines of the shared options `command` takes (frames,
 * box, backend, ...) and of -h/--help. */
void mdnl_print_option_help(FILE *fp, const char *command);

/* A frame source: the reader plus the --frames selection and the --box /
 * --no-pbc overrides, yielding frames with their original index. */
typedef struct mdnl_frames mdnl_frames;
mdnl_status mdnl_frames_open(const mdnl_opts *o, const char *path, mdnl_frames **out);
/* MDNL_END after the last selected frame. */
mdnl_status mdnl_frames_next(mdnl_frames *fs, mdnl_frame *f);
/* Number of frames that will be yielded (scans an XYZ file once). */
mdnl_status mdnl_frames_count(mdnl_frames *fs, int64_t *n);
/* Skips every frame left in the file (selection or not) and returns how
 * many there were: a count that reads the input once, on a pipe too. */
mdnl_status mdnl_frames_skip_rest(mdnl_frames *fs, int64_t *n);
/* Keeps `count` selected frames from the `first`-th (0-based, in selection
 * order): an MPI rank's block (mpi_split.h). Indices stay the file's. */
void mdnl_frames_restrict(mdnl_frames *fs, int64_t first, int64_t count);
/* One line on stderr, unless --quiet, when an XYZ frame had no cell and was
 * treated as open (without --box or --no-pbc): commands call it before their
 * summary, so that an error stays the one line on stderr. */
void mdnl_frames_note(const mdnl_frames *fs);
void mdnl_frames_close(mdnl_frames *fs);
const mdnl_reader *mdnl_frames_reader(const mdnl_frames *fs);

/* Progress bar on stderr: shown when requested, or by default when stderr is
 * a terminal and there is more than one frame, never with --quiet. */
typedef struct mdnl_progress {
    bool on;
    int64_t total, done;
    double t0, last;
} mdnl_progress;
void mdnl_progress_start(mdnl_progress *p, const mdnl_opts *o, mdnl_frames *fs);
void mdnl_progress_step(mdnl_progress *p);
void mdnl_progress_end(mdnl_progress *p);

/* Wall-clock seconds (monotonic). */
double mdnl_now(void);

/* Picks the backend: CPU or CUDA. --backend cuda without a device is
 * MDNL_ERR_RESOURCE; auto falls back to the CPU. */
mdnl_status mdnl_choose_backend(const mdnl_opts *o, mdnl_backend *out);
const char *mdnl_backend_name(mdnl_backend b);

/* The commands compute through libmdnl (include/mdnl/mdnl.h). The context
 * of a command's options: --backend (mdnl_choose_backend), the device
 * (o->device), --max-pairs, --threads and --method. Freed with
 * mdnl_context_free. */
mdnl_status mdnl_context_of(const mdnl_opts *o, mdnl_context **out);
/* The library's pair parameters and cutoffs of ntypes x ntypes potentials
 * (a --pair/--pair-coeff table's p[], or one potential with ntypes 1). */
void mdnl_pair_params_of(const mdnl_potential *p, int ntypes, mdnl_pair_params *params, double *cutoffs);
/* The backend a context computes on, as the summaries name it. */
mdnl_backend mdnl_backend_of(const mdnl_context *ctx);
/* Frame f as the library's system: borrowed, valid while f is unchanged.
 * Messages of the calls on it name `input` and the frame's index
 * (mdnl_context_set_frame); MDNL_ERR_RESOURCE when that fails. */
mdnl_status mdnl_frame_system(mdnl_context *ctx, const char *input, const mdnl_frame *f, mdnl_system *sys);

/* Whether a path names an HDF5 output (.h5, .h5md, .hdf5). */
bool mdnl_is_hdf5_path(const char *path);

/* Atoms per frame over the frames of a command, for its summary: the
 * count when it is the same in every frame, else the smallest and largest. */
typedef struct mdnl_atoms_range {
    int64_t min, max, frames;
} mdnl_atoms_range;
void mdnl_atoms_range_add(mdnl_atoms_range *r, int64_t natoms);
/* "3 atoms", "3 to 5 atoms" or "no frame" into buf; returns buf. */
const char *mdnl_atoms_range_text(const mdnl_atoms_range *r, char *buf, size_t size);
/* ,"atoms":MIN,"atoms_max":MAX (atoms per frame; equal when constant). */
void mdnl_atoms_range_json(FILE *fp, const mdnl_atoms_range *r);

/* Writes a JSON string literal (quoted, escaped: mdnl_escape_char). */
void mdnl_json_string(FILE *fp, const char *s);
/* Writes text from a file or the user (a path, a species name) escaped for
 * one line and one column (mdnl_escape_char with MDNL_ESCAPE_TAB). */
void mdnl_text_string(FILE *fp, const char *s);

/* Subcommands: each returns a status; main.c prints the error and exits. */
mdnl_status mdnl_cmd_neighbors(int argc, char **argv);
mdnl_status mdnl_cmd_info(int argc, char **argv);
mdnl_status mdnl_cmd_gen(int argc, char **argv);
mdnl_status mdnl_cmd_bench(int argc, char **argv);
mdnl_status mdnl_cmd_convert(int argc, char **argv);
mdnl_status mdnl_cmd_energy(int argc, char **argv);
mdnl_status mdnl_cmd_coord(int argc, char **argv);
mdnl_status mdnl_cmd_rdf(int argc, char **argv);
mdnl_status mdnl_cmd_run(int argc, char **argv);

/* Writes the rows of one frame's list in the `neighbors` TSV format
 * (frame, i, j, distance with %.9g); MDNL_ERR_RESOURCE when a write fails. */
mdnl_status mdnl_neighbors_tsv_rows(FILE *fp, int64_t frame, const mdnl_nlist *l, int threads);
/* The table's header line (with its newline): # frame i j distance, then
 * S0 S1 S2 with shifts and Dx Dy Dz with vectors. Static storage. */
const char *mdnl_neighbors_tsv_header(bool shifts, bool vectors);
/* The same with, when not NULL, each entry's image shift S (three int
 * columns) and vector D (three %.17g columns) after the distance. */
mdnl_status mdnl_neighbors_tsv_rows_with(FILE *fp, int64_t frame, const mdnl_nlist *l, const int32_t (*S)[3],
                                         const double (*D)[3], int threads);

/* The CPU threads a command may use: --threads N, else the CPUs the process
 * may run on (sched_getaffinity), capped by OMP_NUM_THREADS when set. The
 * CPU backend's OpenMP team and the writers' workers each get this many
 * (they run one after the other); mdnl run, whose stages overlap, splits
 * them (pipeline.h). */
int mdnl_threads(const mdnl_opts *o);

#endif

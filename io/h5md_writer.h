/* h5md_writer.h — H5MD output: trajectories for `mdnl convert`, and the
 * results file of `mdnl run/neighbors/energy/rdf -o OUT.h5` (SPEC §6).
 *
 * Both writers create the file under a temporary name beside the target
 * (output_file.h) and rename it into place on commit; abort (or a failed
 * commit) removes it, so a failed run leaves no partial file. Every HDF5 call
 * is checked; failures are MDNL_ERR_RESOURCE "PATH: cannot ... (HDF5 reason)"
 * (a full disk included, at creation too), inconsistent input (an atom count that changes in a trajectory) is
 * MDNL_ERR_INPUT. Handles are not shared between threads.
 *
 * Trajectory layout (H5MD 1.1; io/h5md_reader.c reads it back, and so does
 * MDAnalysis' H5MDReader, with convert_units=True when units are given, as
 * mdnl convert gives them: MDNL_H5MD_LENGTH_UNIT, MDNL_H5MD_TIME_UNIT):
 *
 *   /h5md                    version [1,1]; author/name ($USER, else the
 *                            account's name, else "mdnl"); creator/{name "mdnl", version}
 *   /particles/all/position  value [T][N][3] float64 (chunk [1][N][3]),
 *                            step [T] int64, time [T] float64: the frames'
 *                            times when the first frame has one (NaN for later
 *                            frames without one), else the step (dt = 1);
 *                            `unit` on value and time when given
 *   /particles/all/box       attributes dimension 3, boundary [3] "periodic"/"none";
 *                            edges/{value [T][3][3] float64 (rows are lattice
 *                            vectors; `unit` when given), step, time} with step and time hard
 *                            links to position's; no edges for open frames.
 *                            (Always time-dependent [T][3][3]: MDAnalysis 2.4
 *                            reads only box/edges/value[frame] as a 3x3.)
 *   /particles/all/species   [N] int32 codes, or species/{value [T][N], step,
 *                            time} from the first frame whose species differ;
 *                            attribute names [S] (fixed strings of 16 bytes):
 *                            code k is the symbol names[k].
 */
#ifndef MDNL_H5MD_WRITER_H
#define MDNL_H5MD_WRITER_H

#include "frame.h"
#include "mdnl.h"

#include <stdint.h>

MDNL_BEGIN_C

/* Tells HDF5 not to close its files at process exit. Every output is closed
 * (committed or aborted) before exit; an output whose close failed on a full
 * disk stays half closed inside HDF5, and the library's exit handler would
 * crash on it (SIGSEGV after the error line). Called once by main, before any
 * other HDF5 call. */
void mdnl_hdf5_no_exit_handler(void);

/* --- trajectory writer --------------------------------------------------- */

typedef struct mdnl_h5md_traj mdnl_h5md_traj;

/* The units mdnl convert writes. mdnl never converts: the values are the
 * input's; these are the names of the units XYZ data conventionally has
 * (ASE, LAMMPS metal: Angstrom; ps), which are also MDAnalysis' own, so that
 * it reads the numbers unchanged with convert_units True or False. */
#define MDNL_H5MD_LENGTH_UNIT "Angstrom"
#define MDNL_H5MD_TIME_UNIT "ps"

typedef struct mdnl_h5md_traj_options {
    const char *author;      /* /h5md/author name; NULL: $USER, else the account's name, else "mdnl" */
    const char *length_unit; /* `unit` attribute of positions and edges; NULL: none (mdnl never converts) */
    const char *time_unit;   /* `unit` attribute of time; NULL: none */
    int gzip;                /* 0: positions uncompressed (default), 1-9: deflate level with shuffle */
    int threads;             /* compression workers for gzip (0 or 1: on the calling thread) */
} mdnl_h5md_traj_options;

/* Creates the temporary file for `path` (opt may be NULL). The datasets are
 * made at the first append, when N is known. The temporary file comes from
 * mdnl_temp_create (output_file.h): MDNL_ERR_INPUT when the directory cannot
 * be written, MDNL_ERR_RESOURCE when HDF5 cannot create the file in it (a
 * full disk). The caller ends *out with _commit or _abort. */
mdnl_status mdnl_h5md_traj_create(const char *path, const mdnl_h5md_traj_options *opt, mdnl_h5md_traj **out);

/* Appends one frame. The atom count, the boundary and whether there is a
 * cell must match the first frame (MDNL_ERR_INPUT otherwise). */
mdnl_status mdnl_h5md_traj_append(mdnl_h5md_traj *w, const mdnl_frame *f);

/* Frames appended so far. */
int64_t mdnl_h5md_traj_nframes(const mdnl_h5md_traj *w);

/* Closes the file and renames it onto the target. Frees w in every case. */
mdnl_status mdnl_h5md_traj_commit(mdnl_h5md_traj *w);

/* Closes and removes the temporary file and frees w; NULL is a no-op. */
void mdnl_h5md_traj_abort(mdnl_h5md_traj *w);

/* --- results writer ------------------------------------------------------
 *
 * Results layout (each part exists only when written):
 *
 *   /h5md                                   as above
 *   /observables/potential_energy/          step [F] int64, time [F] float64, value [F] float64
 *   /particles/all/potential_energy/        step [F] int64, time [F] float64, value [F][N] float64
 *   /neighbors/                             attributes list ("half"/"full"), cutoff (when set)
 *       frame [F] int64                     input frame index of the k-th stored frame
 *       natoms [F] int64, npairs [F] int64
 *       row_start [F+1] int64               frame k's CSR row offsets are offsets[row_start[k]:row_start[k+1]]
 *       pair_start [F+1] int64              frame k's pairs are j/distance[pair_start[k]:pair_start[k+1]]
 *       offsets [sum(natoms+1)] int64       per frame: 0, ..., npairs (row i is offsets[i]:offsets[i+1])
 *       j [sum(npairs)] int32               neighbor index, rows sorted by j
 *       distance [sum(npairs)] float32
 *       shift [sum(npairs)][3] int32        image shift S of each pair (--with shift), D = r_j - r_i + S·cell
 *       vector [sum(npairs)][3] float64     D of each pair (--with vector); both relative to the positions as given
 *   /rdf/<name>/                            name "total" or "A-B"
 *       r_lo, r_hi, r [bins] float64, g [bins] float64 (when given),
 *       n [bins] float64 (when given), counts [bins] uint64
 *       with per-frame rows (rdf --per-frame):
 *       frame [F] int64, step [F] int64     input frame index and step of row k
 *       g_frames [F][bins] float64          that frame's g(r) (NaN without a volume); a row a chunk
 *       counts_frames [F][bins] uint64      that frame's pair counts
 *   /coordination/<name>/                   name "total" or "A-B" (mdnl coord)
 *       frame [F] int64, step [F] int64     input frame index and step of row k
 *       value [F][N] int32                  neighbors of each atom (A-B: B neighbors of an A atom, else 0)
 *       histogram [C+1] int64               atoms (of A) with 0..C neighbors, summed over the frames
 */

typedef struct mdnl_h5md_results mdnl_h5md_results;

mdnl_status mdnl_h5md_results_create(const char *path, mdnl_h5md_results **out);

/* Compressed datasets (the neighbor list's offsets and j) are shuffled and
 * deflated by `threads` worker threads (default 1: on the calling thread)
 * and stored with H5Dwrite_chunk: the chunks hold the bytes HDF5's filter
 * pipeline would write. Set before the first write. */
void mdnl_h5md_results_set_threads(mdnl_h5md_results *w, int threads);

/* Appends one frame's total potential energy. */
mdnl_status mdnl_h5md_results_write_energy(mdnl_h5md_results *w, int64_t step, double time, double total);

/* Appends one frame's per-atom energies e[natoms]; natoms is fixed by the
 * first call (MDNL_ERR_INPUT when it changes). */
mdnl_status mdnl_h5md_results_write_per_atom_energy(mdnl_h5md_results *w, int64_t step, double time,
                                                    int64_t natoms, const double *e);

/* After each frame's mdnl_h5md_results_write_neighbors, with S and/or D not
 * NULL (--with shift,vector; the same ones every frame): that frame's image
 * shifts S [npairs][3] and vectors D [npairs][3], appended to
 * /neighbors/shift and /neighbors/vector (created by the first call). */
mdnl_status mdnl_h5md_results_write_neighbor_shifts(mdnl_h5md_results *w, int64_t npairs, const int32_t *S,
                                                    const double *D);

/* Optional attributes of /neighbors: the list kind and the cutoff. */
mdnl_status mdnl_h5md_results_set_neighbors_info(mdnl_h5md_results *w, const char *list, double cutoff);

/* Appends one frame's neighbor list in CSR form: row i holds
 * j[offsets[i]:offsets[i+1]] and d[...] (offsets[0] = 0, offsets[natoms] =
 * npairs; MDNL_ERR_INTERNAL otherwise). */
mdnl_status mdnl_h5md_results_write_neighbors(mdnl_h5md_results *w, int64_t frame, int64_t natoms,
                                              const int64_t *offsets, const int32_t *j, const float *d,
                                              int64_t npairs);

/* Writes /rdf/<name>/...; g and n may be NULL (open frames without a volume).
 * Each name once (MDNL_ERR_INTERNAL when repeated or containing '/'). */
mdnl_status mdnl_h5md_results_write_rdf(mdnl_h5md_results *w, const char *name, int bins, const double *r_lo,
                                        const double *r_hi, const double *r, const double *g, const double *n,
                                        const uint64_t *counts);

/* Appends one frame's row to /rdf/<name>/{frame, step, g_frames,
 * counts_frames}, made on the first call for that name (at most
 * MDNL_H5MD_RDF_FRAMES_MAX names; bins fixed by the first call); g[bins]
 * and counts[bins]. mdnl_h5md_results_write_rdf may then add the means to
 * the same group. */
#define MDNL_H5MD_RDF_FRAMES_MAX 64
mdnl_status mdnl_h5md_results_write_rdf_frame(mdnl_h5md_results *w, const char *name, int bins, int64_t frame,
                                              int64_t step, const double *g, const uint64_t *counts);

/* Appends one frame's coordination numbers counts[natoms] to
 * /coordination/<name>/{frame, step, value} (natoms fixed by the first call
 * for that name: MDNL_ERR_INPUT when it changes); at most
 * MDNL_H5MD_COORD_MAX names. */
#define MDNL_H5MD_COORD_MAX 8
mdnl_status mdnl_h5md_results_write_coord(mdnl_h5md_results *w, const char *name, int64_t frame, int64_t step,
                                          int64_t natoms, const int32_t *counts);
/* Writes /coordination/<name>/histogram[n]. */
mdnl_status mdnl_h5md_results_write_coord_histogram(mdnl_h5md_results *w, const char *name, int64_t n,
                                                    const int64_t *atoms);

/* Closes and renames into place; frees w in every case. */
mdnl_status mdnl_h5md_results_commit(mdnl_h5md_results *w);

/* Closes, removes the temporary file, frees w; NULL is a no-op. */
void mdnl_h5md_results_abort(mdnl_h5md_results *w);

MDNL_END_C

#endif

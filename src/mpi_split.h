/* mpi_split.h — `mpirun -n P mdnl run ...`: the frames split over MPI ranks,
 * one result written by rank 0, identical to one process (SPEC §8).
 *
 * Built from mpi_split.c when CMake finds MPI (MDNL_HAVE_MPI), else from
 * mpi_none.c, which runs everything as one process and refuses to start
 * under a launcher with more than one rank (exit 2: each copy would compute
 * every frame and race for the output).
 *
 * Split. The selected frames (after --frames) are counted by rank 0 and cut
 * into P contiguous blocks in frame order: rank r takes N/P frames, the
 * first N mod P ranks one more. When the frames cannot be counted (an XYZ
 * file whose count lines are broken) rank 0 takes them all, so that the run
 * ends at the error one process gives. Each rank opens the input itself
 * (XYZ: scans the lines before its block without parsing them; H5MD: seeks)
 * and runs the ordinary streaming pipeline (pipeline.h) on its block, on
 * GPU (local rank mod devices) or, with --backend cpu or no GPU, on its
 * OpenMP threads (OMP_NUM_THREADS honoured).
 *
 * Results. Rank 0 writes the output, as one process does: its own block as
 * it is computed, then the blocks of ranks 1..P-1 in rank order. Every other
 * rank appends each frame's results (step, time, energy, its neighbor list,
 * its histogram counts with the A/B atom counts and the volume) to a spool
 * file in $TMPDIR (else /tmp), unlinked as soon as it is created, and
 * streams it to rank 0 in 4 MiB chunks when rank 0 asks for it. Rank 0 adds
 * each frame's histogram with mdnl_rdf_accum_add in frame order — the
 * integer counts are exact in any order, and the per-frame normalised sums
 * (doubles) see exactly the additions of one process — and normalises once;
 * the energies and lists are written in frame order. So every dataset is
 * the single process's, byte for byte. Memory: a rank holds its pipeline's
 * few frames; rank 0 also holds two chunks and one frame's record; the
 * spools hold each rank's block of results on disk.
 *
 * Agreement. Ranks talk only to rank 0. Before the pipeline, every rank
 * reports whether it parsed the options, opened the input and (rank 0) the
 * outputs (MPI_Allgather). During it, ranks send progress ticks and, at the
 * end, a DONE message with their status; rank 0 stops the ranks after a
 * failing one at once (their frames come after its bad frame) and lets the
 * ranks before it finish (they may hold an earlier bad frame). The error
 * reported is that of the lowest failing rank — the first bad frame in frame
 * order, the one a single process stops at — printed once by rank 0, and
 * every rank exits with its status; rank 0 removes its temporary outputs.
 * A rank that fails anywhere still takes part in every later collective, so
 * no rank waits for one that gave up. MPI_THREAD_SERIALIZED: the pipeline's
 * writer thread talks to MPI while the calling thread is inside the
 * pipeline, never both at once.
 */
#ifndef MDNL_MPI_SPLIT_H
#define MDNL_MPI_SPLIT_H

#include "cli.h"
#include "pipeline.h"

#include <stdbool.h>
#include <stdio.h>

/* At the top of `mdnl run`: starts MPI when the process was launched by
 * mpirun/srun (MPI_Init_thread) and finds the local rank. */
mdnl_status mdnl_mpi_begin(void);

/* More than one rank: the run is split. */
bool mdnl_mpi_split_active(void);
/* Rank 0, or not under MPI: this process writes the outputs and speaks. */
bool mdnl_mpi_root(void);

/* After the options are parsed, before the backend starts: a rank computing
 * on CUDA takes device (local rank mod devices) into o->device, which its
 * contexts use (mdnl_context_of). */
void mdnl_mpi_choose_device(mdnl_opts *o);

/* After the input (and on rank 0 the outputs) opened with status st on
 * this rank: agrees on it with every rank and, when all succeeded,
 * restricts fs to this rank's block (start rank 0's progress bar before:
 * it counts every selected frame). Returns the agreed status (the lowest
 * failing rank's, its message recorded on rank 0). */
mdnl_status mdnl_mpi_split(mdnl_status st, mdnl_frames *fs);

/* Wraps the pipeline's sink: rank 0 writes through *sink and listens to the
 * other ranks; the others spool. *acc becomes NULL on ranks other than 0. */
mdnl_status mdnl_mpi_wrap(const mdnl_pipeline_config *c, mdnl_pipeline_sink *sink, void **user,
                          mdnl_rdf_accum **acc, mdnl_progress *prog);

/* After the pipeline returned st on this rank: agrees on the outcome and,
 * when every rank succeeded, merges the other ranks' results on rank 0
 * through the wrapped sink into acc and stats (which then count every
 * frame; t_wall includes the merge, t_last_done is its end). Returns the
 * agreed status. */
mdnl_status mdnl_mpi_gather(mdnl_status st, mdnl_pipeline_stats *stats);

/* The JSON fields of the split: ,"ranks":P,"frames_per_rank":[...] and the
 * per-rank seconds (on one process: 1 and [frames]). */
void mdnl_mpi_json(FILE *fp, int64_t nframes);

/* In main, after any command: agrees on the final status (rank 0's, or the
 * lowest failing rank's before that). Returns whether this process prints
 * (rank 0, or not under MPI); *st is the agreed status. */
bool mdnl_mpi_end(mdnl_status *st);

/* Then, after rank 0 printed: flushes, waits for every rank, finalises MPI,
 * so that no rank's exit (which makes mpirun end the job) comes before rank
 * 0's message is out. */
void mdnl_mpi_finish(void);

#endif

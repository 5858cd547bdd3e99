#!/usr/bin/env bash
# slurm_mpi.sh — one long trajectory split over MPI ranks: `srun mdnl run`,
# one rank per GPU, one results file (the same as one process would write).
#
#   sbatch --nodes=2 --ntasks-per-node=4 --gres=gpu:4 tools/batch/slurm_mpi.sh \
#          traj.h5 results.h5 -c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 200
#
# Each rank takes a contiguous block of the selected frames and the GPU
# (local rank mod GPUs of its node); rank 0 writes RESULTS. The input must be
# readable by every node (shared file system); each rank other than 0 keeps
# its block's results in a spool file in $TMPDIR (node-local is best) until
# rank 0 takes them. CPU-only nodes: drop --gres, add --backend cpu, and give
# each rank its cores with --cpus-per-task (OMP_NUM_THREADS follows it below).
# Exit statuses are SPEC §7's, the same as one process: 3 bad input (do not
# requeue), 4 resources. Many independent files: tools/batch/slurm_array.sh.
#SBATCH --job-name=mdnl-mpi
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=8
#SBATCH --time=01:00:00
#SBATCH --output=mdnl-mpi-%j.out
#SBATCH --error=mdnl-mpi-%j.err
set -u
in=${1:?usage: slurm_mpi.sh INPUT RESULTS [mdnl run options]}
res=${2:?usage: slurm_mpi.sh INPUT RESULTS [mdnl run options]}
shift 2
mdnl=${MDNL:-$(command -v mdnl || echo build/mdnl)}
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-1}
# --mpi=pmix: Debian's OpenMPI starts under Slurm's PMIx plugin; where Slurm
# has none, `mpirun` inside the allocation does the same job.
if srun --mpi=list 2>&1 | grep -q pmix; then
  exec srun --mpi=pmix "$mdnl" run "$in" "$@" -o "$res" --no-progress
fi
exec mpirun --bind-to none "$mdnl" run "$in" "$@" -o "$res" --no-progress

#!/usr/bin/env bash
# slurm_array.sh — one `mdnl run` per array task over a list of trajectories.
#
#   ls /data/traj/*.h5 > files.txt
#   sbatch --array=1-$(wc -l < files.txt)%16 tools/batch/slurm_array.sh files.txt results/ \
#          -c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 200
#
# Task K processes line K of the list into results/NAME.h5. Exit statuses
# follow SPEC §7 and become the task's state: 3 (bad input) marks the task
# FAILED with the error line in the task's .err file, and is not worth
# requeueing; 4 (resources: no GPU, out of memory) is requeued once, since
# another node may have what this one lacked. `sacct -j JOB -o JobID,ExitCode`
# lists which tasks ended with 3 and which with 4.
#SBATCH --job-name=mdnl-run
#SBATCH --gres=gpu:1
#SBATCH --cpus-per-task=4
#SBATCH --mem=16G
#SBATCH --time=01:00:00
#SBATCH --output=mdnl-%A_%a.out
#SBATCH --error=mdnl-%A_%a.err
#SBATCH --requeue
set -u
list=$1
outdir=$2
shift 2
mdnl=${MDNL:-$(command -v mdnl || echo build/mdnl)}
file=$(sed -n "${SLURM_ARRAY_TASK_ID:?run under sbatch --array}p" "$list")
[ -n "$file" ] || { echo "slurm_array.sh: no line $SLURM_ARRAY_TASK_ID in $list" >&2; exit 2; }
name=$(basename "$file")
mkdir -p "$outdir"
export OMP_NUM_THREADS=${SLURM_CPUS_PER_TASK:-4}
"$mdnl" run "$file" "$@" -o "$outdir/${name%.*}.h5" --no-progress
rc=$?
if [ "$rc" -eq 4 ] && [ "${SLURM_RESTART_COUNT:-0}" -eq 0 ]; then
    echo "slurm_array.sh: $file: resources (exit 4) on $(hostname); requeueing once" >&2
    scontrol requeue "${SLURM_JOB_ID}"
fi
exit "$rc"

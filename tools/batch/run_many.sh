#!/usr/bin/env bash
# run_many.sh — `mdnl run` over many trajectories, one results file each,
# sorting failures by exit status (SPEC §7) so that a bad input never stops
# the batch but a resource failure (no GPU, out of memory, disk full) does.
#
#   tools/batch/run_many.sh OUTDIR FILE... -- MDNL_RUN_OPTIONS...
#   e.g. tools/batch/run_many.sh results/ traj/*.h5 -- -c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 200
#
# Each FILE gives OUTDIR/NAME.h5 (NAME: the file name without its extension;
# existing results are skipped, so a batch can be resumed).
#   exit 0  success: next file
#   exit 3  bad input data: the error line goes to OUTDIR/failed-input.txt, next file
#   exit 4  resources (no GPU, out of memory, disk full): stop the batch with 4; fix and re-run
#   exit 2  usage: the options are wrong for every file: stop with 2
#   other   internal failure: stop with that status (a bug: please report it)
# The batch exits 0 when every file succeeded and 3 when some inputs were bad.
# MDNL selects the binary (default: mdnl on PATH, else build/mdnl).
set -u
if [ $# -lt 3 ]; then sed -n '2,18p' "$0" >&2; exit 2; fi
outdir=$1
shift
files=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do files+=("$1"); shift; done
if [ $# -eq 0 ]; then echo "run_many.sh: expected -- before the mdnl run options" >&2; exit 2; fi
shift
opts=("$@")
mdnl=${MDNL:-$(command -v mdnl || echo build/mdnl)}
mkdir -p "$outdir" || exit 4
failed=$outdir/failed-input.txt
: >"$failed"
ok=0 bad=0 skipped=0
for f in "${files[@]}"; do
    name=$(basename "$f")
    out=$outdir/${name%.*}.h5
    if [ -e "$out" ]; then skipped=$((skipped + 1)); continue; fi
    err=$("$mdnl" run "$f" "${opts[@]}" -o "$out" --quiet 2>&1 >/dev/null)
    rc=$?
    case $rc in
    0) ok=$((ok + 1)) ;;
    3) bad=$((bad + 1)); printf '%s\t%s\n' "$f" "$err" >>"$failed" ;;
    4) echo "run_many.sh: $f: out of resources, stopping: $err" >&2; exit 4 ;;
    2) echo "run_many.sh: usage error, stopping: $err" >&2; exit 2 ;;
    *) echo "run_many.sh: $f: exit $rc, stopping: $err" >&2; exit "$rc" ;;
    esac
done
echo "run_many.sh: $ok done, $bad bad input(s) (see $failed), $skipped already there" >&2
[ "$bad" -eq 0 ] || exit 3

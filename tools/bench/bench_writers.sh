#!/bin/sh
# bench_writers.sh — the writers against the compute: `mdnl neighbors` of the
# 1M-atom LJ liquid (half list, cutoff 2.5, ~28.7M pairs) written to HDF5
# and to TSV, with one thread and with THREADS (--threads).
#
#   tools/bench/bench_writers.sh [THREADS [REPEATS [DIR]]]   (defaults: nproc, 3, build/bench_writers)
#
# Run from the repository root with the binary at build/mdnl (MDNL=... for
# another; MDNL_ARGS for extra arguments, default --backend cpu). The frame
# is data/lj-liquid-131k.h5md replicated 2x2x2 and shuffled
# (tools/make_lj_liquid.py replicate --shuffle 1; h5py, numpy), made once.
# Each configuration runs REPEATS times; the row is the run with the
# smallest write time: compute ("neighbors") and write seconds of the
# --json summary (wall), write / compute, the output's bytes, MB/s of the
# write, and the whole process's CPU seconds (user + sys, /usr/bin/time; on
# a shared machine wall times follow the other jobs, CPU seconds do not;
# the load average before and after is printed with the table).
# Target (issue 59, 2 cores): HDF5 write <= 1.3 x compute.
set -eu
threads=${1:-$(nproc)}
repeats=${2:-3}
dir=${3:-build/bench_writers}
mdnl=${MDNL:-build/mdnl}
args=${MDNL_ARGS:---backend cpu}
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3 # Debian's h5py
[ -x "$mdnl" ] || { echo "bench_writers.sh: $mdnl not found; build first (or set MDNL=)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
frame=$dir/lj-1m-liquid.h5
if [ ! -s "$frame" ]; then
    "$py" "$here/../make_lj_liquid.py" replicate "$here/../../data/lj-liquid-131k.h5md" -o "$frame.part.h5" --shuffle 1
    mv "$frame.part.h5" "$frame"
fi
cpu() { # CPU seconds of the last run
    if [ -s "$dir/.time" ]; then awk '{print $1 + $2}' "$dir/.time"; else echo nan; fi
}
timer=""
[ -x /usr/bin/time ] && timer="/usr/bin/time -f %U_%S -o $dir/.time"
echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-5s %7s %9s %9s %7s %12s %8s %7s\n' format threads compute_s write_s ratio bytes MB/s cpu_s
for fmt in h5 tsv; do
    for t in 1 "$threads"; do
        best=""
        r=0
        while [ "$r" -lt "$repeats" ]; do
            out=$dir/nl.$fmt
            rm -f "$dir/.time"
            # shellcheck disable=SC2086
            line=$($timer "$mdnl" neighbors "$frame" -c 2.5 $args --threads "$t" -o "$out" --json --no-progress)
            [ -s "$dir/.time" ] && sed -i 's/_/ /' "$dir/.time"
            bytes=$(wc -c <"$out")
            rm -f "$out"
            nl=$(printf '%s' "$line" | sed 's/.*"neighbors":\([0-9.]*\).*/\1/')
            wr=$(printf '%s' "$line" | sed 's/.*"write":\([0-9.]*\).*/\1/')
            if [ -z "$best" ] || awk "BEGIN{exit !($wr < $(echo "$best" | cut -d' ' -f2))}"; then
                best="$nl $wr $bytes $(cpu)"
            fi
            r=$((r + 1))
        done
        # shellcheck disable=SC2086
        set -- $best
        awk -v f="$fmt" -v t="$t" -v c="$1" -v w="$2" -v b="$3" -v u="$4" \
            'BEGIN{printf "%-5s %7d %9.3f %9.3f %7.2f %12d %8.0f %7.2f\n", f, t, c, w, w / c, b, b / w / 1e6, u}'
    done
done
echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

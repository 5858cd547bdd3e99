#!/bin/sh
# bench_read_threads.sh — read-only throughput of the parallel H5MD and XTC
# readers against `cat FILE > /dev/null`, for several --threads.
#
#   tools/bench/bench_read_threads.sh [FRAMES [ATOMS [DIR]]]   (defaults: 200 100000 build/bench_run)
#
# Run from the repository root with the binary at build/mdnl (MDNL=... to use
# another). Inputs (reused when present; the extended XYZ and H5MD are
# bench_run.sh's): tools/gen_lj_trajectory.py's FRAMES x ATOMS liquid as
# extended XYZ; `mdnl convert` to H5MD (chunks of one frame, unfiltered) and
# to XTC; an h5py copy of the H5MD with shuffle + deflate level 4 on the
# positions (needs python3 with h5py: PYTHON=... to name it). For each file:
# REPS (default 5) timings of cat after a warm-up, and of
#   mdnl run FILE --read-only --json --no-progress --backend cpu --threads T
# for T in THREADS (default "1 2 4 8 16", at most the CPUs available). Prints
# min / median of frames/s over the whole command, frames/s in steady state
# (first frame out to last), and the file's MB/s at the median, beside cat's.
set -eu
frames=${1:-200}
atoms=${2:-100000}
dir=${3:-build/bench_run}
mdnl=${MDNL:-build/mdnl}
py=${PYTHON:-python3}
reps=${REPS:-5}
cpus=$(nproc)
threads=${THREADS:-"1 2 4 8 16"}
[ -x "$mdnl" ] || { echo "bench_read_threads.sh: $mdnl not found; build first (or set MDNL=)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
xyz=$dir/lj_${frames}x${atoms}.extxyz
h5=$dir/lj_${frames}x${atoms}.h5
gz=$dir/lj_${frames}x${atoms}_deflate.h5
xtc=$dir/lj_${frames}x${atoms}.xtc
if [ ! -s "$xyz" ]; then
    python3 "$here/../gen_lj_trajectory.py" --frames "$frames" --atoms "$atoms" -o "$xyz.part"
    mv "$xyz.part" "$xyz"
    rm -f "$h5" "$gz" "$xtc"
fi
[ -s "$h5" ] || "$mdnl" convert "$xyz" "$h5" --quiet
[ -s "$xtc" ] || "$mdnl" convert "$h5" "$xtc" --quiet
if [ ! -s "$gz" ]; then
    "$py" "$here/../h5md_deflate_copy.py" "$h5" "$gz.part"
    mv "$gz.part" "$gz"
fi

for file in "$h5" "$gz" "$xtc"; do
    bytes=$(wc -c <"$file")
    cat "$file" >/dev/null
    for i in $(seq "$reps"); do
        s=$(date +%s.%N)
        cat "$file" >/dev/null
        e=$(date +%s.%N)
        echo "cat $s $e"
    done >"$dir/.times"
    for t in $threads; do
        [ "$t" -le "$cpus" ] || continue
        for i in $(seq "$reps"); do
            "$mdnl" run "$file" --read-only --json --no-progress --backend cpu --threads "$t" >"$dir/.json"
            echo "run$t $(tr -d '\n' <"$dir/.json")"
        done >>"$dir/.times"
    done
    python3 - "$file" "$bytes" "$dir/.times" <<'EOF'
import json, statistics, sys
name, size, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
cat, runs = [], {}
for line in open(path):
    tag, rest = line.split(" ", 1)
    if tag == "cat":
        s, e = map(float, rest.split())
        cat.append(size / (e - s) / 1e6)
    else:
        runs.setdefault(int(tag[3:]), []).append(json.loads(rest))
print("%s (%.0f MB)" % (name, size / 1e6))
print("  cat > /dev/null: median %.0f MB/s (max %.0f)" % (statistics.median(cat), max(cat)))
for t in sorted(runs):
    fps = [d["frames_per_second"] for d in runs[t]]
    steady = [d["frames_per_second_steady"] for d in runs[t]]
    wall = statistics.median(d["seconds"]["command"] for d in runs[t])
    print("  --threads %-3d frames/s min %8.1f median %8.1f | steady min %8.1f median %8.1f | %6.0f MB/s"
          % (t, min(fps), statistics.median(fps), min(steady), statistics.median(steady), size / wall / 1e6))
EOF
done

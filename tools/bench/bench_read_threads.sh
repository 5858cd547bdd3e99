#!/bin/sh
# bench_read_threads.sh — read-only throughput of the parallel H5MD, XTC,
# DCD and TRR readers against `cat FILE > /dev/null`, for several --threads.
#
#   tools/bench/bench_read_threads.sh [FRAMES [ATOMS [DIR]]]   (defaults: 200 100000 build/bench_run)
#
# Run from the repository root with the binary at build/mdnl (MDNL=... to use
# another). Inputs (reused when present; the extended XYZ and H5MD are
# bench_run.sh's): tools/gen_lj_trajectory.py's FRAMES x ATOMS liquid as
# extended XYZ; `mdnl convert` to H5MD (chunks of one frame, unfiltered), to
# XTC and to DCD; an h5py copy of the H5MD with shuffle + deflate level 4 on
# the positions (needs python3 with h5py: PYTHON=... to name it); a TRR
# copy of the DCD by MDAnalysis' writer (tools/trr_copy.py; the same
# PYTHON needs MDAnalysis). FORMATS (default "h5md deflate xtc dcd trr")
# picks the rows; only their inputs are made. For each file:
# REPS (default 5) timings of cat after a warm-up, and of
#   mdnl run FILE --read-only --json --no-progress --backend cpu --threads T
# for T in THREADS (default "1 2 4 8 16", at most the CPUs available). Prints
# the load average before each file's runs, min / median of frames/s over
# the whole command, frames/s in steady state (first frame out to last), and
# the file's MB/s at the median, beside cat's.
set -eu
frames=${1:-200}
atoms=${2:-100000}
dir=${3:-build/bench_run}
mdnl=${MDNL:-build/mdnl}
py=${PYTHON:-python3}
reps=${REPS:-5}
cpus=$(nproc)
threads=${THREADS:-"1 2 4 8 16"}
formats=${FORMATS:-"h5md deflate xtc dcd trr"}
[ -x "$mdnl" ] || { echo "bench_read_threads.sh: $mdnl not found; build first (or set MDNL=)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
xyz=$dir/lj_${frames}x${atoms}.extxyz
h5=$dir/lj_${frames}x${atoms}.h5
gz=$dir/lj_${frames}x${atoms}_deflate.h5
xtc=$dir/lj_${frames}x${atoms}.xtc
dcd=$dir/lj_${frames}x${atoms}.dcd
trr=$dir/lj_${frames}x${atoms}.trr
wants() { case " $formats " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
if [ ! -s "$xyz" ]; then
    python3 "$here/../gen_lj_trajectory.py" --frames "$frames" --atoms "$atoms" -o "$xyz.part"
    mv "$xyz.part" "$xyz"
    rm -f "$h5" "$gz" "$xtc" "$dcd" "$trr"
fi
[ -s "$h5" ] || "$mdnl" convert "$xyz" "$h5" --quiet
if wants xtc && [ ! -s "$xtc" ]; then "$mdnl" convert "$h5" "$xtc" --quiet; fi
if { wants dcd || wants trr; } && [ ! -s "$dcd" ]; then "$mdnl" convert "$h5" "$dcd" --quiet; fi
if wants deflate && [ ! -s "$gz" ]; then
    "$py" "$here/../h5md_deflate_copy.py" "$h5" "$gz.part"
    mv "$gz.part" "$gz"
fi
if wants trr && [ ! -s "$trr" ]; then
    "$py" "$here/../trr_copy.py" "$dcd" "$trr.part"
    mv "$trr.part" "$trr"
fi
files=
for f in h5md deflate xtc dcd trr; do
    wants "$f" || continue
    case $f in h5md) files="$files $h5" ;; deflate) files="$files $gz" ;; xtc) files="$files $xtc" ;;
        dcd) files="$files $dcd" ;; trr) files="$files $trr" ;; esac
done

for file in $files; do
    bytes=$(wc -c <"$file")
    echo "load average before $(basename "$file"): $(cut -d" " -f1-3 /proc/loadavg)"
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

#!/bin/sh
# bench_xyz_threads.sh — the text reader pool on the dev machine (issue 59: "2
# reader threads >= 1.8x one on extended XYZ"): read-only passes of an
# extended-XYZ LJ trajectory with --threads 1 and --threads THREADS.
#
#   tools/bench/bench_xyz_threads.sh [FRAMES [ATOMS [THREADS [REPEATS [DIR]]]]]
#                                     (defaults: 50 100000 2 3 build/bench_xyz_threads)
#
# Run from the repository root with the binary at build/mdnl (MDNL=... for
# another). The trajectory is tools/gen_lj_trajectory.py's (reused when it
# exists). Each pass is `mdnl run IN --read-only --json --threads N` after a
# warm-up read (page cache); each thread count runs REPEATS times, alternating,
# and keeps its fastest pass (on a shared machine the slow ones are other
# jobs). Prints frames/s, MB/s (file bytes / read-only wall) and the ratio
# against the target. Measures whatever the binary does: with one reader
# thread the ratio is ~1.
set -eu
frames=${1:-50}
atoms=${2:-100000}
threads=${3:-2}
repeats=${4:-3}
dir=${5:-build/bench_xyz_threads}
mdnl=${MDNL:-build/mdnl}
[ -x "$mdnl" ] || { echo "bench_xyz_threads.sh: $mdnl not found; build first (or set MDNL=)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
xyz=$dir/lj_${frames}x${atoms}.extxyz
if [ ! -s "$xyz" ]; then
    python3 "$here/../gen_lj_trajectory.py" --frames "$frames" --atoms "$atoms" -o "$xyz.part"
    mv "$xyz.part" "$xyz"
fi
"$mdnl" run "$xyz" --read-only --quiet --no-progress # warm the page cache
: >"$dir/results.jsonl"
r=0
while [ "$r" -lt "$repeats" ]; do
    for t in 1 "$threads"; do
        "$mdnl" run "$xyz" --read-only --json --no-progress --threads "$t" >"$dir/.json"
        python3 - "$dir/.json" "$t" >>"$dir/results.jsonl" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["threads"] = int(sys.argv[2])
print(json.dumps(d))
PY
    done
    r=$((r + 1))
done
python3 - "$dir/results.jsonl" "$(wc -c <"$xyz")" "$threads" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
nbytes, threads = int(sys.argv[2]), int(sys.argv[3])
best = {}
for r in rows:
    t = r["threads"]
    if t not in best or r["seconds"]["wall"] < best[t]["seconds"]["wall"]:
        best[t] = r
for t in sorted(best):
    r = best[t]
    print("--threads %d: %d frames x %d atoms read-only in %.3f s (best of %d): %.1f frames/s, %.0f MB/s" % (
        t, r["frames"], r["atoms"], r["seconds"]["wall"], sum(1 for x in rows if x["threads"] == t),
        r["frames"] / r["seconds"]["wall"], nbytes / 1e6 / r["seconds"]["wall"]))
ratio = best[1]["seconds"]["wall"] / best[threads]["seconds"]["wall"]
print("%d reader threads / one: %.2fx (target >= %.1fx on 2 cores: %s)" % (
    threads, ratio, 0.9 * threads, "met" if ratio >= 0.9 * threads else "NOT met"))
PY

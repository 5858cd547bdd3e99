#!/bin/sh
# bench_run.sh — end-to-end throughput of `mdnl run` against the read-only
# floor, for extended XYZ and H5MD inputs of the same LJ trajectory.
#
#   tools/bench/bench_run.sh [FRAMES [ATOMS [DIR]]]      (defaults: 200 100000 build/bench_run)
#
# Run from the repository root with the binary at build/mdnl (MDNL=... to use
# another). Needs python3 (numpy makes generation fast; plain Python works).
# Steps:
#   1. tools/gen_lj_trajectory.py: FRAMES frames of a jittered FCC LJ system
#      at density 0.8442 (ATOMS rounded to 4n^3), a different seed per frame,
#      as extended XYZ; `mdnl convert` makes the H5MD copy. Both are reused
#      when they exist with the same size.
#   2. For each format: a warm-up read (page cache), then
#        (b) the floor:       mdnl run IN --read-only --json
#        (a) end to end:      mdnl run IN -c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 200 -o RES.h5 --json
#      each under /usr/bin/time -f %M (peak RSS, KiB) when available.
#   3. The bare HDF5 floor of the H5MD file (build/bench_h5md_read --bare).
#   4. A table: frames/s of both, their ratio over the whole run, without the
#      backend start-up, over the whole command (parsing to the last commit,
#      opening the input included; the CUDA start-up overlaps the opening),
#      and in steady state (first frame out to last; target for H5MD: >= 0.85),
#      the XYZ parse rate in MB/s on one core (target >= 300), peak RSS; the
#      raw JSON lines go to DIR/results.jsonl.
# Extra arguments for every `mdnl run` (e.g. --backend cpu) go in MDNL_ARGS.
set -eu
frames=${1:-200}
atoms=${2:-100000}
dir=${3:-build/bench_run}
mdnl=${MDNL:-build/mdnl}
args=${MDNL_ARGS:-}
[ -x "$mdnl" ] || { echo "bench_run.sh: $mdnl not found; build first (or set MDNL=)" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$dir"
xyz=$dir/lj_${frames}x${atoms}.extxyz
h5=$dir/lj_${frames}x${atoms}.h5
if [ ! -s "$xyz" ]; then
    python3 "$here/../gen_lj_trajectory.py" --frames "$frames" --atoms "$atoms" -o "$xyz.part"
    mv "$xyz.part" "$xyz"
    rm -f "$h5"
fi
if [ ! -s "$h5" ]; then
    "$mdnl" convert "$xyz" "$h5" --quiet
fi

timer=""
if [ -x /usr/bin/time ]; then timer="/usr/bin/time -f %M -o $dir/.rss"; fi
results=$dir/results.jsonl
: >"$results"

# run LABEL FILE ARGS... : one mdnl run, its JSON summary plus label/bytes/rss appended to results.jsonl.
run() {
    label=$1
    file=$2
    shift 2
    rm -f "$dir/.rss"
    # shellcheck disable=SC2086
    $timer "$mdnl" run "$file" "$@" $args --json --no-progress >"$dir/.json"
    rss=$(cat "$dir/.rss" 2>/dev/null || echo null)
    bytes=$(wc -c <"$file")
    python3 - "$dir/.json" "$label" "$bytes" "$rss" >>"$results" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["label"], d["file_bytes"] = sys.argv[2], int(sys.argv[3])
d["peak_rss_kib"] = None if sys.argv[4] == "null" else int(sys.argv[4])
print(json.dumps(d))
EOF
}

for fmt in xyz h5md; do
    if [ "$fmt" = xyz ]; then file=$xyz; else file=$h5; fi
    "$mdnl" run "$file" --read-only --quiet --no-progress # warm the page cache
    run "$fmt read-only" "$file" --read-only
    run "$fmt end-to-end" "$file" -c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 200 -o "$dir/results_$fmt.h5"
done

# The bare HDF5 floor (issue #7): one H5Dread per frame into a reused buffer,
# by build/bench_h5md_read --bare (BARE=... to use another); the reader with
# and without its finiteness pass beside it.
bare=${BARE:-$(dirname "$mdnl")/bench_h5md_read}
: >"$dir/bare.json"
if [ -x "$bare" ]; then
    "$bare" --bare "$h5" >"$dir/bare.json" || : >"$dir/bare.json"
fi

python3 - "$results" "$dir/bare.json" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
bare = None
try:
    bare = json.loads(open(sys.argv[2]).read())
except ValueError:
    pass
by = {r["label"]: r for r in rows}
print("%-16s %7s %9s %10s %9s %9s %9s %9s %10s" % ("run", "frames", "atoms/fr", "frames/s", "read s", "compute s",
                                                   "write s", "wall s", "rss MiB"))
for r in rows:
    s = r["seconds"]
    rss = "%.0f" % (r["peak_rss_kib"] / 1024) if r["peak_rss_kib"] else "-"
    print("%-16s %7d %9d %10.2f %9.3f %9.3f %9.3f %9.3f %10s" % (r["label"], r["frames"], r["atoms"],
          r["frames_per_second"], s["read"], s["compute"], s["write"], s["wall"], rss))
for fmt, target in (("xyz", None), ("h5md", 0.85)):
    a, b = by[fmt + " end-to-end"], by[fmt + " read-only"]
    ratio = a["frames_per_second"] / b["frames_per_second"]
    line = "%s: end-to-end / read-only = %.3f whole run" % (fmt, ratio)
    if a["seconds"].get("init"):
        line += ", %.3f without the %.2f s backend start-up" % (
            a["frames_per_second_after_init"] / b["frames_per_second"], a["seconds"]["init"])
    if a["seconds"].get("command") and b["seconds"].get("command"):
        line += ", %.3f whole command (%.3f vs %.3f s, parsing to the last commit; start-up %.3f s in all, %.3f s of it left after opening the input)" % (
            b["seconds"]["command"] / a["seconds"]["command"], a["seconds"]["command"], b["seconds"]["command"],
            a["seconds"].get("startup", 0.0), a["seconds"]["init"])
    steady = None
    if a.get("frames_per_second_steady") and b.get("frames_per_second_steady"):
        steady = a["frames_per_second_steady"] / b["frames_per_second_steady"]
        line += ", %.3f steady state (%.0f vs %.0f frames/s from the first frame out to the last)" % (
            steady, a["frames_per_second_steady"], b["frames_per_second_steady"])
    if target and steady is not None:
        line += " (target >= %.2f steady: %s)" % (target, "met" if steady >= target else "NOT met")
    if fmt == "xyz":
        mbs = b["file_bytes"] / 1e6 / max(b["seconds"]["read"], 1e-9)
        line += "; XYZ parse %.0f MB/s on the reader thread (target >= 300: %s)" % (mbs, "met" if mbs >= 300 else "NOT met")
    print(line)
if bare:
    a = by["h5md end-to-end"]
    fb = bare["bare_fps"]
    print("h5md against the bare HDF5 read (%.0f frames/s; mdnl's reader %.0f, %.0f without its finiteness pass): "
          "end-to-end %.3f whole run, %.3f after start-up, %.3f steady (target >= 0.85: %s)" % (
              fb, bare["reader_fps"], bare["reader_unchecked_fps"], a["frames_per_second"] / fb,
              a["frames_per_second_after_init"] / fb, a["frames_per_second_steady"] / fb,
              "met" if a["frames_per_second_steady"] / fb >= 0.85 else "NOT met"))
else:
    print("h5md bare HDF5 floor: not measured (build the bench_h5md_read target)")
print("backend: %s; JSON lines in %s" % (by["xyz end-to-end"]["backend"], sys.argv[1]))
EOF

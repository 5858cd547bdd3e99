#!/bin/sh
# bench_run_samples.sh — issue #7's ratio, sampled: `mdnl run` end to end on
# an H5MD trajectory against the bare HDF5 read of the same file, in
# alternating rounds (the bare rate drifts within a call and differs between
# GPU machines, so each round is its own ratio).
#
#   tools/bench/bench_run_samples.sh H5 [ROUNDS [DIR]]      (defaults: 5 rounds, build/bench_samples)
#
# H5 is an existing trajectory (tools/bench/bench_run.sh makes one:
# build/bench_run/lj_200x100000.h5). Binaries: MDNL (default build/mdnl) and
# BARE (default bench_h5md_read beside it). Each round: the bare read
# (bench_h5md_read --bare, best of 5), then
#   mdnl run H5 -c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 200 -o RES.h5 --json
# and, with AB="ENV=VALUE ..." set, the same run once more under each of those
# environment variables (A/Bs on the same machine), and with WORK="ARGS|ARGS"
# other work instead of the default (e.g. WORK="--pair lj:epsilon=1,sigma=1|
# --rmax 4 --bins 200", each with -c 2.5 added) to see which part sets the rate.
# Prints one row per run: frames/s steady, steady / bare, the reader's and the
# compute thread's time per frame (prepare, launch, waiting for the device's
# results, waiting for the reader) and the reader's wait for a free slot;
# JSON lines in DIR/samples.jsonl.
set -eu
h5=$1
rounds=${2:-5}
dir=${3:-build/bench_samples}
mdnl=${MDNL:-build/mdnl}
bare=${BARE:-$(dirname "$mdnl")/bench_h5md_read}
ab=${AB:-}
work=${WORK:-}
mkdir -p "$dir"
out=$dir/samples.jsonl
: >"$out"
"$mdnl" run "$h5" --read-only --quiet --no-progress # warm the page cache
i=1
while [ "$i" -le "$rounds" ]; do
    "$bare" --bare "$h5" >"$dir/.bare.json"
    for variant in default $ab $(echo "$work" | tr ' |' '~ '); do
        work_args=$(echo "$variant" | tr '~' ' ')
        case $variant in
        default) set -- "$mdnl" run "$h5" -c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 200 ;;
        -*) set -- "$mdnl" run "$h5" -c 2.5 $work_args ;;
        *) set -- env "$variant" "$mdnl" run "$h5" -c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 200 ;;
        esac
        "$@" -o "$dir/res.h5" --json --no-progress >"$dir/.run.json"
        python3 - "$dir/.run.json" "$dir/.bare.json" "$i" "$variant" >>"$out" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
b = json.load(open(sys.argv[2]))
r["round"], r["variant"] = int(sys.argv[3]), sys.argv[4]
r["bare"] = b
print(json.dumps(r))
EOF
    done
    i=$((i + 1))
done
python3 - "$out" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print("%5s %-22s %8s %8s %7s %9s %9s %9s %9s %9s %9s" % ("round", "variant", "bare", "steady", "ratio", "read ms",
      "prep ms", "launch ms", "collect", "starved", "rd block"))
by = {}
for r in rows:
    s, n = r["seconds"], max(r["frames"], 1)
    ratio = r["frames_per_second_steady"] / r["bare"]["bare_fps"]
    by.setdefault(r["variant"], []).append(ratio)
    launch = s["compute"] - s.get("collect", 0.0)
    print("%5d %-22s %8.0f %8.0f %7.3f %9.4f %9.4f %9.4f %9.4f %9.4f %9.4f" % (
        r["round"], r["variant"][:22], r["bare"]["bare_fps"], r["frames_per_second_steady"], ratio,
        1e3 * s["read"] / n, 1e3 * s["prepare"] / n, 1e3 * launch / n, 1e3 * s.get("collect", 0.0) / n,
        1e3 * s.get("compute_starved", 0.0) / n, 1e3 * s.get("read_blocked", 0.0) / n))
for v, xs in by.items():
    print("%s: steady / bare median %.3f, range %.3f-%.3f over %d rounds (%d >= 0.85)" % (
        v, statistics.median(xs), min(xs), max(xs), len(xs), sum(x >= 0.85 for x in xs)))
EOF

#!/usr/bin/env bash
# tools/gpu/run_sanitizers.sh [--jobs J] [--timeout S] [--only REGEX] — runs on the GPU host
# from the repository root, after tools/gpu/bundle.sh made .gpu/ (carry
# [".gpu"]): every test of every GPU test binary (.gpu/bin/test_*_gpu) and
# one `mdnl run --backend cuda` over the bundled graphene example, each under
# each of the four tools of compute-sanitizer: memcheck, racecheck,
# synccheck, initcheck.
#
# One instrumented process per (tool, test): a test is picked with
# Criterion's --filter SUITE/NAME from the binary's --list, and J of them
# (default 8) run at once on the one GPU (instrumentation is mostly host
# work; the host has 16 cores). Criterion forks a child per test, so
# compute-sanitizer follows children (--target-processes all). S (default
# 540 s) bounds one run; a run cut there is reported TIMEOUT. --only keeps
# the runs whose "tool program suite/test" line matches REGEX (grep -E), for
# a run again after a fix.
#
# Writes one log per run into $OUT/sanitizers/ (packed as
# $OUT/sanitizer-logs.tar.gz), a table of every run ($OUT/sanitizers.txt:
# tool, program, test, errors, summaries, hazards, status, Criterion's
# synthesis) and a table per (tool, program) (printed). A run counts as
# checked only when its log holds the tool's summary line ("ERROR SUMMARY"
# for memcheck, synccheck and initcheck, "RACECHECK SUMMARY" for racecheck);
# otherwise it is UNCHECKED. Exit 0 only when every run finished, passed its
# tests and reported zero errors and zero racecheck hazards.
#
# test_resources_gpu is left out: it provokes a device OOM by counting 9e10
# pairs, seconds on the bare GPU and hours instrumented (run_suite.sh runs
# it).
set -uo pipefail
jobs=8 per_run=540 only=.
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs=$2; shift 2 ;;
    --timeout) per_run=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    *) echo "usage: $0 [--jobs J] [--timeout S] [--only REGEX]" >&2; exit 2 ;;
  esac
done
here=$(pwd)
out=${OUT:-$here/gpu-out}
logs="$out/sanitizers"
mkdir -p "$logs"

# The tests were built with absolute paths under /work/main (see run_suite.sh).
if [ "$here" != /work/main ]; then
  if [ -e /work/main ] && [ ! -L /work/main ]; then echo "/work/main exists here; cannot relocate" >&2; exit 1; fi
  mkdir -p /work && ln -sfn "$here" /work/main
fi
[ -d .gpu/bin ] || { echo "no .gpu/ bundle: run tools/gpu/bundle.sh first and carry .gpu" >&2; exit 1; }
mkdir -p build && cp .gpu/bin/mdnl build/mdnl
source .gpu/env.sh

cs=$(command -v compute-sanitizer || true)
for d in "${CUDA_HOME:-}" /usr/local/cuda /usr/local/cuda-13 /usr/local/cuda-13.0 /opt/cuda; do
  [ -n "$cs" ] && break
  [ -n "$d" ] && [ -x "$d/bin/compute-sanitizer" ] && cs="$d/bin/compute-sanitizer"
  [ -z "$cs" ] && [ -n "$d" ] && [ -x "$d/compute-sanitizer/compute-sanitizer" ] && cs="$d/compute-sanitizer/compute-sanitizer"
done
[ -n "$cs" ] || { echo "compute-sanitizer not found (PATH, \$CUDA_HOME, /usr/local/cuda)" >&2; exit 1; }
{ echo "compute-sanitizer: $cs"; "$cs" --version | tail -1; nvidia-smi -L; echo "date $(date -u +%FT%TZ)";
  echo "commit $(cat .gpu/COMMIT 2>/dev/null)"; echo "jobs $jobs, timeout per run ${per_run} s"; } > "$out/sanitizer-device.txt" 2>&1
cat "$out/sanitizer-device.txt"

# The run list: "tool program filter" per line (filter '-' for mdnl run).
list="$out/sanitizer-runs.txt"
: > "$list"
for tool in memcheck racecheck synccheck initcheck; do
  for t in .gpu/bin/test_*_gpu; do
    name=$(basename "$t")
    [ "$name" = test_resources_gpu ] && continue
    suite=$("$t" --list 2>/dev/null | head -1 | sed -E 's/:.*//')
    "$t" --list 2>/dev/null | tail -n +2 | sed -E 's/^[^a-zA-Z0-9_]+//' | while read -r test; do
      [ -n "$test" ] && echo "$tool $name $suite/$test" >> "$list"
    done
  done
  echo "$tool mdnl-run -" >> "$list"
done
grep -aE -- "$only" "$list" > "$list.only"; mv "$list.only" "$list"

export cs per_run logs
one() { # tool program filter
  local tool=$1 name=$2 filter=$3 log rc extra=() t0=$SECONDS
  [ "$tool" = racecheck ] && extra=(--racecheck-report hazard)
  if [ "$name" = mdnl-run ]; then
    log="$logs/$tool-mdnl-run.log"
    local tmp; tmp=$(mktemp -d)
    timeout -k 10 "$per_run" "$cs" --tool "$tool" --target-processes all --print-limit 50 "${extra[@]}" \
      build/mdnl run data/graphene-noisy.extxyz --backend cuda -c 3.0 --neighbors \
      --pair morse:d0=6,alpha=1.8,r0=1.42 --rmax 6 --bins 120 -o "$tmp/run/" --quiet > "$log" 2>&1
    rc=$?
    rm -rf "$tmp"
  else
    log="$logs/$tool-$name-${filter#*/}.log"
    timeout -k 10 "$per_run" "$cs" --tool "$tool" --target-processes all --print-limit 50 "${extra[@]}" \
      ".gpu/bin/$name" --jobs 1 --filter "$filter" > "$log" 2>&1
    rc=$?
  fi
  local errors procs hazards synth status
  if [ "$tool" = racecheck ]; then
    procs=$(grep -ac 'RACECHECK SUMMARY:' "$log")
    hazards=$(grep -a 'RACECHECK SUMMARY:' "$log" | sed -E 's/.*RACECHECK SUMMARY: ([0-9]+).*/\1/' | awk '{s+=$1} END {print s+0}')
    errors=$(grep -a 'ERROR SUMMARY:' "$log" | sed -E 's/.*ERROR SUMMARY: ([0-9]+).*/\1/' | awk '{s+=$1} END {print s+0}')
  else
    procs=$(grep -ac 'ERROR SUMMARY:' "$log")
    errors=$(grep -a 'ERROR SUMMARY:' "$log" | sed -E 's/.*ERROR SUMMARY: ([0-9]+).*/\1/' | awk '{s+=$1} END {print s+0}')
    hazards=0
  fi
  synth=$(grep -a 'Synthesis' "$log" | tail -1 | sed -E 's/.*Synthesis: //')
  [ -z "$synth" ] && synth="exit $rc"
  status=ok
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then status=TIMEOUT
  elif [ "$errors" != 0 ] || [ "$hazards" != 0 ]; then status=ERRORS
  elif [ $rc -ne 0 ]; then status="rc=$rc"
  elif [ "$procs" = 0 ]; then status=UNCHECKED
  fi
  printf '%-10s %-18s %-70s %6s %5s %7s %-9s %5s  %s\n' "$tool" "$name" "${filter#*/}" "$errors" "$procs" "$hazards" \
    "$status" "$((SECONDS - t0))" "$synth"
}
export -f one

start=$(date +%s)
table="$out/sanitizers.txt"
printf '%-10s %-18s %-70s %6s %5s %7s %-9s %5s  %s\n' tool program test errors procs hazards status secs synthesis > "$table"
# the longest runs first (the 200k-atom test, then nlist), so that J slots stay busy to the end
{ grep -a 'dense_200k' "$list"; grep -a ' test_nlist_gpu ' "$list" | grep -av dense_200k; grep -av ' test_nlist_gpu ' "$list"; } |
  xargs -P "$jobs" -L 1 bash -c 'one "$0" "$1" "$2"' | tee -a "$table"
total=$(( $(date +%s) - start ))
echo
echo "per (tool, program): runs, failed, errors, hazards"
tail -n +2 "$table" | awk '{k=$1" "$2; n[k]++; e[k]+=$4; h[k]+=$6; if ($7 != "ok") f[k]++}
  END {for (k in n) printf "%-30s %4d runs %3d failed %6d errors %6d hazards\n", k, n[k], f[k]+0, e[k], h[k]}' | sort |
  tee "$out/sanitizers-summary.txt"
echo "total ${total} s, $(tail -n +2 "$table" | wc -l) runs" | tee -a "$out/sanitizers-summary.txt"
(cd "$out" && tar czf sanitizer-logs.tar.gz sanitizers && rm -rf sanitizers)
tail -n +2 "$table" | awk '$7 != "ok" {bad=1} END {exit bad}'

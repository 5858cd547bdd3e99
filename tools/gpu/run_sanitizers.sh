#!/usr/bin/env bash
# tools/gpu/run_sanitizers.sh — runs on the GPU host from the repository root,
# after tools/gpu/bundle.sh made .gpu/ (carry [".gpu"]): every GPU test binary
# of the bundle (.gpu/bin/test_*_gpu, --jobs 1) and one `mdnl run --backend
# cuda` over the bundled graphene example, each under the four tools of
# compute-sanitizer: memcheck, racecheck, synccheck, initcheck. Writes one
# log per (tool, program) into $OUT/sanitizers/ (packed as
# $OUT/sanitizer-logs.tar.gz) and prints a table of error counts, also kept
# in $OUT/sanitizers.txt. Exit 0 only when every run finished with zero
# errors and zero racecheck hazards.
#
# Criterion runs each test in a child process; compute-sanitizer follows
# children with --target-processes all (named explicitly, whatever the
# default of the installed version). The "summaries" column counts the
# "ERROR SUMMARY" lines of a log; a run without any is reported UNCHECKED.
#
# Time: memcheck and initcheck run every test but the 200k-atom one;
# racecheck and synccheck (slower, and only shared memory and barriers
# matter to them) run a subset that still reaches every kernel family.
# SAN_TIMEOUT (s, default 60) bounds one run, SAN_BUDGET (s, default 450)
# all of them: a run that would start past the budget is reported SKIPPED.
# `--full` runs every test under every tool (no filters, no budget).
set -uo pipefail
here=$(pwd)
out=${OUT:-$here/gpu-out}
logs="$out/sanitizers"
mkdir -p "$logs"
full=0
[ "${1:-}" = "--full" ] && full=1
per_run=${SAN_TIMEOUT:-60}
budget=${SAN_BUDGET:-450}
[ $full -eq 1 ] && per_run=3600 budget=100000

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
  echo "commit $(cat .gpu/COMMIT 2>/dev/null)"; } > "$out/sanitizer-device.txt" 2>&1
cat "$out/sanitizer-device.txt"

# Criterion filters (extglob) per binary and tool class.
heavy_filter() { # memcheck, initcheck
  case "$1" in
    test_nlist_gpu) echo 'nlist_gpu/!(dense_200k*)' ;;
    *) echo '' ;;
  esac
}
light_filter() { # racecheck, synccheck
  case "$1" in
    test_nlist_gpu) echo 'nlist_gpu/@(open_random*|one_atom*|zero_atom*|graphene_lattice*|stage_overflow*|cell_variant7*|tile_variant_every*)' ;;
    test_energy_gpu) echo 'energy_gpu/@(fixtures_match*|graphene_and_self*|device_list*|zero_atoms*)' ;;
    test_rdf_gpu) echo 'rdf_gpu/@(graphene_every*|histograms_larger*|open_cluster*|shared_cap*)' ;;
    *) echo '' ;;
  esac
}

start=$(date +%s)
table="$out/sanitizers.txt"
printf '%-10s %-18s %7s %9s %9s %8s  %s\n' tool program errors summaries hazards status tests > "$table"
fail=0
run_one() { # tool name log cmd...
  local tool=$1 name=$2 log=$3; shift 3
  local now left t rc status
  now=$(date +%s); left=$((budget - (now - start)))
  if [ $left -le 5 ]; then
    printf '%-10s %-18s %7s %9s %9s %8s  %s\n' "$tool" "$name" - - - SKIPPED "budget of ${budget}s spent" | tee -a "$table"
    fail=1; return
  fi
  t=$per_run; [ $left -lt $t ] && t=$left
  local extra=()
  [ "$tool" = racecheck ] && extra=(--racecheck-report hazard)
  timeout -k 10 "$t" "$cs" --tool "$tool" --target-processes all --print-limit 50 "${extra[@]}" "$@" > "$log" 2>&1
  rc=$?
  local errors procs hazards synth
  errors=$(grep -a 'ERROR SUMMARY:' "$log" | sed -E 's/.*ERROR SUMMARY: ([0-9]+).*/\1/' | awk '{s+=$1} END {print s+0}')
  procs=$(grep -ac 'ERROR SUMMARY:' "$log")
  hazards=$(grep -a 'RACECHECK SUMMARY:' "$log" | sed -E 's/.*RACECHECK SUMMARY: ([0-9]+).*/\1/' | awk '{s+=$1} END {print s+0}')
  synth=$(grep -a 'Synthesis' "$log" | tail -1 | sed -E 's/.*Synthesis: //')
  [ -z "$synth" ] && synth="exit $rc"
  status=ok
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then status=TIMEOUT; fail=1
  elif [ "$errors" != 0 ] || [ "$hazards" != 0 ]; then status=ERRORS; fail=1
  elif [ $rc -ne 0 ]; then status="rc=$rc"; fail=1
  elif [ "$procs" = 0 ]; then status=UNCHECKED; fail=1
  fi
  printf '%-10s %-18s %7s %9s %9s %8s  %s\n' "$tool" "$name" "$errors" "$procs" "$hazards" "$status" "$synth" | tee -a "$table"
}

tmp=$(mktemp -d)
for tool in memcheck racecheck synccheck initcheck; do
  for t in .gpu/bin/test_*_gpu; do
    name=$(basename "$t")
    # test_resources_gpu counts 9e10 pairs to provoke a device OOM: fast on
    # the bare GPU, hours under instrumentation (run_suite.sh runs it).
    [ "$name" = test_resources_gpu ] && continue
    if [ $full -eq 1 ]; then f=''
    elif [ $tool = memcheck ] || [ $tool = initcheck ]; then f=$(heavy_filter "$name")
    else f=$(light_filter "$name"); fi
    args=(--jobs 1)
    [ -n "$f" ] && args+=(--filter "$f")
    run_one "$tool" "$name" "$logs/$tool-$name.log" "$t" "${args[@]}"
  done
  rm -rf "$tmp/run"
  run_one "$tool" "mdnl-run" "$logs/$tool-mdnl-run.log" build/mdnl run data/graphene-noisy.extxyz --backend cuda \
    -c 3.0 --neighbors --pair morse:d0=6,alpha=1.8,r0=1.42 --rmax 6 --bins 120 -o "$tmp/run/" --quiet
done
rm -rf "$tmp"
echo "total $(( $(date +%s) - start )) s" | tee -a "$table"
(cd "$out" && tar czf sanitizer-logs.tar.gz sanitizers && rm -rf sanitizers)
exit $fail

#!/usr/bin/env bash
# tools/gpu/run_suite.sh — runs on the GPU host from the repository root:
# every test binary of the bundle (.gpu/, made by tools/gpu/bundle.sh) with
# one job, then `mdnl bench`. Logs and the benchmark JSON go to $OUT (or
# ./gpu-out). The tests were built with absolute paths under /work/main
# (MDNL_BINARY, MDNL_DATA_DIR), so that path is made to point here.
set -uo pipefail
here=$(pwd)
out=${OUT:-$here/gpu-out}
mkdir -p "$out"
if [ "$here" != /work/main ]; then
  if [ -e /work/main ] && [ ! -L /work/main ]; then echo "/work/main exists here; cannot relocate" >&2; exit 1; fi
  mkdir -p /work && ln -sfn "$here" /work/main
fi
mkdir -p build && cp .gpu/bin/mdnl build/mdnl
[ -x .gpu/bin/bench_h5md_read ] && cp .gpu/bin/bench_h5md_read build/bench_h5md_read
source .gpu/env.sh
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader;
  echo "date $(date -u +%FT%TZ)"; echo "commit $(cat .gpu/COMMIT 2>/dev/null)"; } > "$out/device.txt" 2>&1
cat "$out/device.txt"
fail=0
# JOBS test binaries at a time (default 4), each with one Criterion job: the
# suite takes ~265 s on the H200 instead of ~580 s one after the other, so
# tests, `mdnl bench` and bench_run.sh fit one 600 s device call
one() {
  t=$1; name=$(basename "$t")
  if [ "$name" = test_mpi ] && ! command -v mpiexec >/dev/null && [ ! -x /usr/bin/mpiexec ]; then
    echo "test_mpi           not run: no MPI launcher on this host (CI runs it; tools/bench/bench_mpi.sh carries one)"; return 0
  fi
  start=$(date +%s)
  "$t" --jobs 1 > "$out/$name.log" 2>&1
  rc=$?
  printf '%-18s rc=%d %4ds  %s\n' "$name" "$rc" $(( $(date +%s) - start )) "$(grep -a 'Synthesis' "$out/$name.log" | tail -1)"
}
export -f one
export out
: > "$out/tests.txt"
ls .gpu/bin/test_* | xargs -P "${JOBS:-4}" -I{} bash -c 'one "$1"' _ {} | tee -a "$out/tests.txt"
grep -q ' rc=[1-9]' "$out/tests.txt" && fail=1
# the Python package on CuPy / PyTorch device arrays (plain script: no pytest needed)
if [ -e .gpu/lib/libmdnl.so ] && command -v python3 >/dev/null; then
  MDNL_LIBRARY=.gpu/lib/libmdnl.so PYTHONPATH=python python3 python/tests/test_gpu.py > "$out/test_python_gpu.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || fail=1
  printf '%-18s rc=%d  %s\n' test_python_gpu "$rc" "$(tail -1 "$out/test_python_gpu.log")" | tee -a "$out/tests.txt"
fi
if [ "${1:-}" != "--no-bench" ]; then
  build/mdnl bench --json > "$out/bench.json" 2> "$out/bench.err" || fail=1
  build/mdnl bench > "$out/bench.txt" 2>&1 || fail=1
  cat "$out/bench.txt"
  # the streaming pipeline against the read-only floor (200 frames x ~100k atoms)
  tools/bench/bench_run.sh 200 100000 /tmp/bench_run > "$out/bench_run.txt" 2>&1 || fail=1
  cp /tmp/bench_run/results.jsonl "$out/bench_run.jsonl" 2>/dev/null
  cat "$out/bench_run.txt"
fi
# the device tool returns at most 8 files: the logs travel as one archive
(cd "$out" && tar czf logs.tar.gz test_*.log $(ls bench.err 2>/dev/null) && rm -f test_*.log bench.err)
exit $fail
/root/.pyenv/libexec/pyenv-hooks: line 24: enable: cannot open shared object /root/.pyenv/libexec/pyenv-realpath.dylib: /root/.pyenv/libexec/pyenv-realpath.dylib: cannot open shared object file: No such file or directory

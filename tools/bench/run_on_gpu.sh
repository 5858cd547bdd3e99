#!/usr/bin/env bash
# tools/bench/run_on_gpu.sh BUNDLE_DIR OUT_DIR — runs on the GPU host: the GPU
# tests, then the benchmark (table and JSON), writing everything to OUT_DIR.
# BUNDLE_DIR is what tools/bench/build.sh made (build/gpu-bundle).
set -uo pipefail
b=$1; out=$2
mkdir -p "$out"
{ nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv; } > "$out/device.txt" 2>&1
"$b/run" test_nlist_gpu -j1 > "$out/test_nlist_gpu.log" 2>&1; echo "test_nlist_gpu rc=$?" >> "$out/test_nlist_gpu.log"
"$b/run" bench_main > "$out/bench.txt" 2>&1
"$b/run" bench_main --json > "$out/bench.json" 2>&1
cat "$out/device.txt"; tail -2 "$out/test_nlist_gpu.log"; cat "$out/bench.txt"

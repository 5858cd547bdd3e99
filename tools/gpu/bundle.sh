#!/usr/bin/env bash
# tools/gpu/bundle.sh [BUILD_DIR] — builds mdnl and the tests with CUDA
# (sm_90) and packs them, with the shared libraries they load, into .gpu/ at
# the repository root (git-ignored) for the GPU host, which has no HDF5 or
# Criterion. Then, with the device tool: carry [".gpu"], command
# "tools/gpu/run_suite.sh". See CONTRIBUTING.md, "The GPU host".
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
b=${1:-$root/build}
cmake --build "$b" -j2
rm -rf "$root/.gpu"
extra=""
[ -x "$b/bench_h5md_read" ] && extra="$b/bench_h5md_read"  # bench_run.sh's bare-read floor
"$root/tools/gpu/gpu-bundle" "$root/.gpu" "$b/mdnl" "$b"/tests/test_* $extra
# libmdnl for the Python package's GPU tests (python/tests/test_gpu.py; its
# libgomp came with mdnl's libraries above)
cp -L "$b/libmdnl.so" "$root/.gpu/lib/libmdnl.so"
# the commit the binaries were built from (run_suite.sh and run_sanitizers.sh print it)
( cd "$root" && git describe --always --dirty 2>/dev/null ) > "$root/.gpu/COMMIT" || true
du -sh "$root/.gpu"

#!/usr/bin/env bash
# tools/bench/build.sh BUILD_DIR — builds BUILD_DIR/bench_main against the
# library CMake made (top-level CMake does not know this driver yet), and
# bundles it with the GPU tests into BUILD_DIR/gpu-bundle for the GPU host.
set -euo pipefail
b=${1:-build}
root=$(cd "$(dirname "$0")/../.." && pwd)
cmake --build "$b" -j2
gcc -std=c11 -O2 -Wall -Wextra -Werror -DMDNL_HAVE_CUDA=1 -I"$root/core" -I"$root/bench" -I"$root/src" -I"$root/io" -I"$root/kernels" \
    -c "$root/tools/bench/bench_main.c" -o "$b/bench_main.o"
g++ "$b/bench_main.o" -o "$b/bench_main" "$b/libmdnl_lib.a" "$b/libmdnl_io.a" "$b/libmdnl_kernels.a" "$b/libmdnl_core.a" -fopenmp \
    -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 /usr/local/cuda/lib64/libcudart_static.a -lm -ldl -lrt -lpthread
/work/shared/tools/gpu-bundle "$b/gpu-bundle" "$b/bench_main" "$b"/tests/test_*
cp "$root/tools/bench/run_on_gpu.sh" "$b/gpu-bundle/"

#!/usr/bin/env bash
# tools/gpu/kernel_trace.sh DIR — builds tools/gpu/kernel_trace.c here into
# DIR/libktrace.so with CUPTI from PyPI's nvidia-cuda-cupti wheel (13.0, the
# host driver's CUDA), libcupti beside it, for the GPU host (carry DIR). There:
#   CUDA_INJECTION64_PATH=$PWD/DIR/libktrace.so KTRACE_OUT=t.tsv .gpu/run mdnl bench --sizes graphene-1m
#   tools/gpu/ktrace_table.py t.tsv
set -euo pipefail
dir=${1:?usage: kernel_trace.sh DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pip download -q --no-deps "nvidia-cuda-cupti==13.0.*" -d "$tmp"
(cd "$tmp" && unzip -q ./*.whl -d x)
c=$tmp/x/nvidia/cu13
mkdir -p "$dir"
gcc -O2 -shared -fPIC -I"$c/include" -I/usr/local/cuda/include "$root/tools/gpu/kernel_trace.c" \
  -o "$dir/libktrace.so" -L"$c/lib" -l:libcupti.so.13 -Wl,-rpath,'$ORIGIN'
cp "$c/lib/libcupti.so.13" "$dir/"
ls -la "$dir"

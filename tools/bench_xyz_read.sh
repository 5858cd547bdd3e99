#!/bin/sh
# bench_xyz_read.sh — builds tools/bench_xyz_read.c against the libraries of build/
# and runs it on a generated file: T frames of ~N atoms, positions printed
# with FMT. Not part of CTest. Usage: tools/bench_xyz_read.sh [T N FMT FILE]
# (defaults: 4 250000 %.10f, a temporary file; ~48 MB).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
lib="$root/build/libmdnl_lib.a $root/build/libmdnl_io.a $root/build/libmdnl_kernels.a $root/build/libmdnl_core.a"
[ -f "$root/build/libmdnl_core.a" ] || { echo "build first: cmake --preset ci && cmake --build --preset ci" >&2; exit 2; }
libs=$(pkg-config --libs hdf5 2>/dev/null || echo "-L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5")
out=$root/build/bench_xyz_read
cc -std=c11 -O2 -Wall -I"$root/core" -I"$root/io" -I"$root/src" "$root/tools/bench_xyz_read.c" $lib $libs -fopenmp -lm -o "$out"
file=${4:-/tmp/mdnl_bench_xyz_$$.extxyz}
"$out" "${1:-4}" "${2:-250000}" "${3:-%.10f}" "$file"
[ -n "${4:-}" ] || rm -f "$file"

#!/bin/sh
# bench_h5md_read.sh — builds tools/bench_h5md_read.c against build/libmdnl_lib.a
# and runs it: T frames of N atoms (default 100 x 100000), file FILE.
# Not part of CTest. Usage: tools/bench_h5md_read.sh [T N FILE]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
lib=$root/build/libmdnl_lib.a
[ -f "$lib" ] || { echo "build first: cmake -S . -B build && cmake --build build" >&2; exit 2; }
inc=$(pkg-config --cflags hdf5 2>/dev/null || echo -I/usr/include/hdf5/serial)
libs=$(pkg-config --libs hdf5 2>/dev/null || echo "-L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5")
out=$root/build/bench_h5md_read
cc -std=c11 -O2 -Wall -I"$root/io" -I"$root/src" $inc "$root/tools/bench_h5md_read.c" "$lib" $libs -fopenmp -lm -o "$out"
file=${3:-/tmp/mdnl_bench_$$.h5md}
"$out" "${1:-100}" "${2:-100000}" "$file"
rm -f "$file"

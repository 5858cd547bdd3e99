#!/bin/sh
# bench_h5md_read.sh — builds tools/bench_h5md_read.c (CMake target bench_h5md_read)
# and runs it: T frames of N atoms (default 100 x 100000), file FILE.
# Not part of CTest. Usage: tools/bench_h5md_read.sh [T N FILE]
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/bench_h5md_read
cmake --build "$root/build" --target bench_h5md_read >/dev/null || { echo "configure first: cmake --preset ci" >&2; exit 2; }
file=${3:-/tmp/mdnl_bench_$$.h5md}
"$out" "${1:-100}" "${2:-100000}" "$file"
rm -f "$file"

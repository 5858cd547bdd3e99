#!/usr/bin/env bash
# tools/packaging/test_install.sh BUILD SOURCE — installs BUILD into a
# temporary prefix, checks the installed tree (program, libraries with their
# SONAME and exported names, header, pkg-config and CMake package files, man
# page, completion), then builds examples/neighbors.c against it twice (CMake
# find_package(mdnl), and pkg-config) and runs both. ctest: test_install_example.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d /tmp/mdnl-install-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
p=$tmp/prefix
cmake --install "$build" --prefix "$p" >/dev/null
for f in bin/mdnl lib/libmdnl.so lib/libmdnl.so.0 lib/libmdnl.a include/mdnl/mdnl.h lib/pkgconfig/mdnl.pc \
         lib/cmake/mdnl/mdnlConfig.cmake lib/cmake/mdnl/mdnlConfigVersion.cmake lib/cmake/mdnl/mdnlTargets.cmake \
         share/man/man1/mdnl.1 share/bash-completion/completions/mdnl; do
  [ -e "$p/$f" ] || { echo "missing from the installed tree: $f" >&2; exit 1; }
done
soname=$(readelf -d "$p/lib/libmdnl.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libmdnl.so.0 ] || { echo "SONAME is '$soname', expected libmdnl.so.0" >&2; exit 1; }
# Only the public names: every exported function is declared in the header.
nm -D --defined-only "$p/lib/libmdnl.so" | awk '$2 == "T" {sub(/@.*/, "", $3); print $3}' | sort > "$tmp/exported"
grep -oE 'mdnl_[a-z0-9_]+\(' "$p/include/mdnl/mdnl.h" | tr -d '(' | sort -u > "$tmp/declared"
if ! diff "$tmp/declared" "$tmp/exported" >&2; then
  echo "libmdnl.so exports other names than include/mdnl/mdnl.h declares (diff: header < > library)" >&2
  exit 1
fi
grep -q '^\.TH MDNL 1' "$p/share/man/man1/mdnl.1"
bash -n "$p/share/bash-completion/completions/mdnl"
"$p/bin/mdnl" --version >/dev/null

cmake -S "$src/examples" -B "$tmp/ex" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$tmp/ex" >/dev/null
out=$("$tmp/ex/neighbors")
echo "$out"
echo "$out" | grep -q ' 4 pairs' || { echo "find_package example: expected 4 pairs" >&2; exit 1; }

cc -std=c11 -o "$tmp/neighbors_pc" "$src/examples/neighbors.c" \
   $(PKG_CONFIG_PATH="$p/lib/pkgconfig" pkg-config --cflags --libs mdnl) -Wl,-rpath,"$p/lib"
[ "$("$tmp/neighbors_pc")" = "$out" ] || { echo "pkg-config example differs" >&2; exit 1; }
echo "install: ok"

#!/usr/bin/env bash
# tools/gpu/bundle_mpi.sh [OUT_DIR] — packs Debian's OpenMPI (mpirun/orterun,
# orted, ompi_info, the MCA plugin folder, the help files, PMIx with its
# plugins, and every shared library they load, glibc excepted) into OUT_DIR
# (default .mpi/ at the repository root, git-ignored), relocatable, for the
# GPU host, which has no MPI. On that host (from the repository root):
#
#   source .mpi/env.sh          # OPAL_PREFIX, PMIX_INSTALL_PREFIX, PATH, LD_LIBRARY_PATH,
#                               # and Debian's /etc/openmpi MCA settings as OMPI_MCA_*
#   mpirun --allow-run-as-root --oversubscribe --bind-to none -n 2 .gpu/bin/mdnl run ...
#
# The layout mirrors the prefix /usr that Debian built OpenMPI for, so that
# OPAL_PREFIX=OUT_DIR moves every path with it (libdir
# lib/x86_64-linux-gnu/openmpi/lib, plugins .../openmpi3, help share/openmpi).
# The build's mdnl and bench_h5md_read (BUILD=..., default build/) travel in
# OUT_DIR/bin with the libraries they load, so OUT_DIR alone is enough for
# tools/bench/bench_mpi.sh.
#
#   tools/gpu/bundle_mpi.sh --check   also proves the bundle works without the
#   system OpenMPI: in a private mount namespace (unshare -m) the system's
#   OpenMPI folders and binaries are hidden under empty bind mounts, then
#   `mpirun -n 2 mdnl run` from the bundle must match a one-process run.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
check=0
if [ "${1:-}" = --check ]; then check=1; shift; fi
out=${1:-$root/.mpi}
ml=/usr/lib/x86_64-linux-gnu/openmpi
px=/usr/lib/x86_64-linux-gnu/pmix2
[ -x /usr/bin/orterun ] && [ -d $ml/lib/openmpi3 ] ||
  { echo "bundle_mpi.sh: Debian's OpenMPI is not installed (tools/setup.sh installs it)" >&2; exit 2; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/lib/x86_64-linux-gnu/openmpi/lib" "$out/share" "$out/etc"
cp -L /usr/bin/orterun "$out/bin/orterun"
ln -s orterun "$out/bin/mpirun"
ln -s orterun "$out/bin/mpiexec"
cp -L /usr/bin/orted "$out/bin/orted"
cp -L /usr/bin/ompi_info "$out/bin/ompi_info" 2>/dev/null || true
cp -a $ml/lib/openmpi3 "$out/lib/x86_64-linux-gnu/openmpi/lib/"
# one host, shared memory and TCP: the plugins for InfiniBand/UCX/libfabric/
# PSM networks and OpenSHMEM stay behind (with the libraries they pull in)
for p in "$out"/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so; do
  if ldd "$p" | grep -qE 'libuc[pstm]|libfabric|libibverbs|librdmacm|libpsm|libinfinipath|libefa|liboshmem'; then
    rm -f "$p" "${p%.so}.la"
  fi
done
cp -a /usr/share/openmpi "$out/share/"
cp -a $px "$out/lib/x86_64-linux-gnu/"
# libdir's own libraries (libmpi.so.40, libopen-pal, libmca_common_*) and
# everything the binaries and plugins load, flat in lib/
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libresolv|libcuda\.so|libnvidia)'
objs=("$out"/bin/orterun "$out"/bin/orted "$out"/lib/x86_64-linux-gnu/openmpi/lib/openmpi3/*.so $px/lib/pmix/*.so /usr/lib/x86_64-linux-gnu/libmpi.so.40)
[ -x "$out/bin/ompi_info" ] && objs+=("$out/bin/ompi_info")
for o in "${objs[@]}"; do
  ldd "$o" 2>/dev/null | awk '/=>/ && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ $name =~ $skip ]] && continue
  [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
done
[ -e "$out/lib/libmpi.so.40" ] || cp -L /usr/lib/x86_64-linux-gnu/libmpi.so.40 "$out/lib/"
# mdnl and the bare-read floor of the build (BUILD=..., default build/), with
# the libraries they load (HDF5 ...), so that one folder travels: .gpu/ with
# every test binary and this bundle together pass the device tool's 64 MiB
b=${BUILD:-$root/build}
for exe in "$b/mdnl" "$b/bench_h5md_read"; do
  [ -x "$exe" ] || continue
  cp -L "$exe" "$out/bin/"
  ldd "$exe" | awk '/=>/ && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    [ -e "$out/lib/$name" ] || cp -L "$path" "$out/lib/$name"
  done
done
git -C "$root" rev-parse --short HEAD > "$out/COMMIT" 2>/dev/null || true
# Debian's /etc/openmpi/openmpi-mca-params.conf (sysconfdir is not under the
# prefix, so it does not travel by OPAL_PREFIX): the same settings as OMPI_MCA_*
conf_env=""
if [ -r /etc/openmpi/openmpi-mca-params.conf ]; then
  cp /etc/openmpi/openmpi-mca-params.conf "$out/etc/"
  while IFS='=' read -r k v || [ -n "$k" ]; do
    k=$(echo "$k" | tr -d ' '); v=$(echo "$v" | sed 's/^ *//; s/ *$//')
    [ -n "$k" ] && [ "${k#\#}" = "$k" ] && conf_env="${conf_env}export OMPI_MCA_${k}='${v}'"$'\n'
  done < /etc/openmpi/openmpi-mca-params.conf
fi
cat > "$out/env.sh" <<ENV
# source me: the relocated OpenMPI of tools/gpu/bundle_mpi.sh
_mpi=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
export OPAL_PREFIX="\$_mpi"
export PMIX_INSTALL_PREFIX="\$_mpi/lib/x86_64-linux-gnu/pmix2"
export PMIX_MCA_mca_base_component_path="\$_mpi/lib/x86_64-linux-gnu/pmix2/lib/pmix"
export PATH="\$_mpi/bin:\$PATH"
export LD_LIBRARY_PATH="\$_mpi/lib:\$_mpi/lib/x86_64-linux-gnu/openmpi/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export OMPI_MCA_mca_base_component_show_load_errors=0
# one host: launch with fork (the isolated launcher), no ssh needed (the GPU host may have none)
export OMPI_MCA_plm=isolated
${conf_env}
ENV
echo "bundle_mpi.sh: $out holds $(du -sh "$out" | cut -f1) ($(find "$out" -type f | wc -l) files)"

if [ $check = 1 ]; then
  mdnl=${MDNL:-$out/bin/mdnl}
  [ -x "$mdnl" ] || { echo "bundle_mpi.sh --check: $mdnl not built" >&2; exit 2; }
  work=$(mktemp -d)
  python3 "$root/tools/gen_lj_trajectory.py" --frames 6 --atoms 500 -o "$work/t.extxyz" >/dev/null 2>&1
  args="--backend cpu -c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 3 --bins 30 --quiet"
  "$mdnl" run "$work/t.extxyz" $args -o "$work/one/"
  # hide the system's OpenMPI (a private mount namespace: nothing changes outside)
  # and run the bundle's mpirun; mdnl's own libmpi comes from the bundle too
  unshare -m bash -euo pipefail -c "
    e=\$(mktemp -d); printf '#!/bin/sh\\nexit 127\\n' > \$e/none; chmod +x \$e/none
    for d in $ml /usr/share/openmpi $px /etc/openmpi; do mount --bind \$e \$d; done
    for b in /usr/bin/orted /usr/bin/orterun /usr/bin/ompi_info /usr/lib/x86_64-linux-gnu/libmpi.so.40 \
             /usr/lib/x86_64-linux-gnu/libopen-pal.so.40 /usr/lib/x86_64-linux-gnu/libopen-rte.so.40; do
      mount --bind \$e/none \$(readlink -f \$b)
    done
    ! /usr/bin/orterun --version >/dev/null 2>&1 || { echo 'system mpirun still works' >&2; exit 1; }
    source '$out/env.sh'
    export OMPI_MCA_plm_rsh_agent=/nonexistent/ssh # as on a host without ssh
    echo \"check: mpirun = \$(command -v mpirun); \$(mpirun --version | head -1)\"
    echo \"check: mdnl loads libmpi from \$(ldd '$mdnl' | awk '/libmpi.so/ {print \$3}')\"
    mpirun --allow-run-as-root --oversubscribe --bind-to none -n 2 '$mdnl' run '$work/t.extxyz' $args -o '$work/two/' --json > '$work/two.json'
  "
  for t in energy.tsv rdf.tsv; do cmp "$work/one/$t" "$work/two/$t"; done
  grep -o '"ranks":2,"frames_per_rank":\[[0-9,]*\]' "$work/two.json"
  echo "check: mpirun -n 2 from the bundle, system OpenMPI hidden: results identical to one process"
  rm -rf "$work"
fi

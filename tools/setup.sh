#!/usr/bin/env bash
# tools/setup.sh — installs what mdnl needs to build and test on Debian 12,
# skipping what is already there. The CUDA toolkit is optional: when nvcc is
# on PATH (or in /usr/local/cuda/bin) the CUDA backend builds too.
set -euo pipefail
pkgs=(cmake make gcc pkg-config gzip xz-utils zstd libhdf5-dev zlib1g-dev liblzma-dev libzstd-dev libdeflate-dev libisal-dev libcriterion-dev libopenmpi-dev openmpi-bin python3 python3-numpy python3-h5py python3-mdanalysis
      python3-ase python3-pytest python3-pip python3-setuptools)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: nvcc found in /usr/local/cuda/bin (add it to PATH to build the CUDA backend)" >&2
fi

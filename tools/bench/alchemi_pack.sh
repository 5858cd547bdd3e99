#!/usr/bin/env bash
# tools/bench/alchemi_pack.sh OUT.tar.xz — NVIDIA ALCHEMI Toolkit-Ops
# (nvalchemiops) and warp-lang for the GPU host, in one archive under the
# device tool's 64 MiB carry limit (warp-lang's wheel alone is ~150 MB).
# Unpack there into a directory and put it on PYTHONPATH (the host's PyTorch
# and NumPy are used); then `side_by_side.py --alchemi`, `python_side_by_side.py
# --alchemi DIR`, `e2e_side_by_side.py --site DIR`. What is left out:
# warp-clang.so (Warp's CPU backend, optional at import), examples, tests,
# type stubs, nvalchemiops' JAX and interaction modules (not imported by its
# neighbor lists), and every fatbin payload of warp.so but sm_90's (H100,
# H200; fatbin_keep_arch.py). WARP / ALCHEMI pin the versions. At warp-lang
# 1.19.0 the archive is 57 MB (warp.so's 169 MB of host code: its compiler),
# so with the mdnl bundle it needs a device call of its own: unpack it there
# into an ignored folder (build/packs/alchemi), which later calls on the same
# warm machine find (tools/bench/e2e_side_by_side.py, python_side_by_side.py).
set -euo pipefail
out=$(realpath -m "$1")
warp=${WARP:-1.19.0} alchemi=${ALCHEMI:-0.5.0}
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_28_x86_64 -d "$t/whl" "warp-lang==$warp" "nvalchemi-toolkit-ops==$alchemi"
mkdir "$t/site"
for w in "$t"/whl/*.whl; do (cd "$t/site" && unzip -q -o "$w"); done
rm -rf "$t/site/warp/bin/warp-clang.so" "$t/site/warp/examples" "$t/site/warp/tests" "$t/site/warp/__init__.pyi" \
    "$t/site/nvalchemiops/jax" "$t/site/nvalchemiops/interactions" "$t/site/nvalchemiops/torch/interactions"
python3 "$here/fatbin_keep_arch.py" "$t/site/warp/bin/warp.so" 90
# one 256 MiB dictionary: warp.so (~285 MB) compresses as one block
tar -cf - -C "$t/site" . | xz -T1 --lzma2=preset=9e,dict=256MiB > "$out"
ls -l "$out"

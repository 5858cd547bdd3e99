#!/usr/bin/env bash
# tools/bench/peers_pack.sh OUT.tar.xz — the end-to-end peers of
# e2e_side_by_side.py for the GPU host (Python 3.12, NumPy 2.x, SciPy,
# PyTorch there; no network): MDAnalysis, freud-analysis and cuRDF with the
# dependencies the host lacks, as one PYTHONPATH-able site folder in an
# archive under the device tool's 64 MiB carry limit (with alchemi_pack.sh's,
# which cuRDF needs for its neighbor lists). Unpack there into a directory
# and pass it (and the ALCHEMI one) to `e2e_side_by_side.py --site DIR`.
# Left out: NumPy and SciPy (the host's are used; every wheel here is built
# against NumPy 2 and accepts 2.x: the Requires-Dist lines are printed),
# cuRDF's PyTorch and nvalchemiops (the host's, alchemi_pack.sh's), tests,
# type stubs, documentation, the debug sections of the extension modules
# (strip --strip-debug: MDAnalysis ships them, ~3x its size), and, unless
# MPL=1, matplotlib with what only it needs (~12 of ~16 MB: MDAnalysis and
# freud do not import it; cuRDF imports it only for its plot_rdf, and
# e2e_side_by_side.py stands in an empty curdf.plotting when matplotlib is
# absent). MDA / FREUD / CURDF pin the versions.
set -euo pipefail
out=$(realpath -m "$1")
mda=${MDA:-2.11.0} freud=${FREUD:-3.6.1} curdf=${CURDF:-0.5.4}
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
plat=(--only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
pip download --quiet "${plat[@]}" -d "$t/whl" "mdanalysis==$mda" "freud-analysis==$freud" tqdm
pip download --quiet --no-deps "${plat[@]}" -d "$t/whl" "curdf==$curdf"
rm -f "$t"/whl/numpy-*.whl "$t"/whl/scipy-*.whl
mkdir "$t/site"
for w in "$t"/whl/*.whl; do (cd "$t/site" && unzip -q -o "$w"); done
echo "NumPy requirements (the host has NumPy 2.x):"
grep -h '^Requires-Dist: numpy' "$t"/site/*.dist-info/METADATA | sort | uniq -c
rm -rf "$t/site/doc" "$t/site/matplotlib/mpl-data/sample_data"
if [ "${MPL:-0}" != 1 ]; then
    (cd "$t/site" && rm -rf matplotlib matplotlib-* mpl_toolkits pylab.py fontTools fonttools-* PIL pillow-* pillow.libs \
        kiwisolver kiwisolver-* contourpy contourpy-* cycler cycler-* pyparsing pyparsing-*)
fi
find "$t/site" -depth \( -name tests -o -name __pycache__ \) -type d -exec rm -rf {} +
find "$t/site" -name '*.pyi' -delete
# the extension modules only: the vendored libraries in *.libs were patched
# by auditwheel, which strip may undo
find "$t/site" -path '*.libs' -prune -o -name '*.so' -type f -print0 | xargs -0 strip --strip-debug
tar -cf - -C "$t/site" . | xz -T1 -9e > "$out"
ls -l "$out"

#!/usr/bin/env bash
# tools/packaging/test_pip_install.sh SOURCE — `pip install SOURCE/python`
# into a temporary target (no network: no build isolation, no dependencies),
# then the package's tests from there, against MDNL_LIBRARY.
# ctest: test_python_installed.
set -euo pipefail
src=$1
py=${PYTHON:-python3}
tmp=$(mktemp -d /tmp/mdnl-pip-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/python" "$tmp/src"   # pip builds in place: keep the checkout clean
"$py" -m pip install --quiet --no-deps --no-build-isolation --no-index --target "$tmp/site" "$tmp/src"
cd "$tmp"
PYTHONPATH="$tmp/site" "$py" -c "import mdnl, sys; assert mdnl.__file__.startswith('$tmp/site'), mdnl.__file__"
PYTHONPATH="$tmp/site" "$py" -m pytest -q -p no:cacheprovider "$tmp/src/tests"
PYTHONPATH="$tmp/site" "$py" "$src/examples/neighbors.py"

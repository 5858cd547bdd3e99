#!/usr/bin/env bash
# data/make_fixtures.sh — regenerates the XYZ fixtures in data/ with mdnl
# itself. Usage: data/make_fixtures.sh [path/to/mdnl]   (default build/mdnl)
set -euo pipefail
cd "$(dirname "$0")"
mdnl=${1:-../build/mdnl}
# A periodic sheet, 1,152 atoms: the README's example input.
$mdnl gen graphene --nx 24 --ny 12 -o graphene-periodic.extxyz --quiet
# A thermalised-looking sheet: 0.05 A of Gaussian noise, seed 7.
$mdnl gen graphene --nx 24 --ny 12 --noise 0.05 --seed 7 -o graphene-noisy.extxyz --quiet
# Plain XYZ (no lattice: open boundaries), 96 atoms.
$mdnl gen graphene --nx 6 --ny 4 --to xyz -o graphene-open.xyz --quiet
# Malformed inputs: one file per error case (tests/test_xyz.c names the line).
mkdir -p bad
printf '' > bad/empty.xyz
printf '3\ncomment\nC 0 0 0\nC 1 0 0\n' > bad/truncated.xyz
printf '1000000000000000\ncomment\nC 0 0 0\n' > bad/absurd-count.xyz
printf -- '-3\ncomment\nC 0 0 0\n' > bad/negative-count.xyz
printf 'three\ncomment\nC 0 0 0\n' > bad/nonnumeric-count.xyz
printf '2\ncomment\nC 0 0 0\nC 1 x 0\n' > bad/nonnumeric-coordinate.xyz
printf '2\ncomment\nC 0 0 0\nC 1 0\n' > bad/missing-coordinate.xyz
printf '2\ncomment\nC 0 0 0\nC nan 0 0\n' > bad/nan.xyz
printf '2\ncomment\nC 0 0 0\nC 0 inf 0\n' > bad/inf.xyz
printf '1\nLattice="1 0 0 0 1 0 0 0" pbc="T T T"\nC 0 0 0\n' > bad/lattice-8-values.xyz
printf '1\nLattice="1 0 0 2 0 0 0 0 1"\nC 0 0 0\n' > bad/zero-volume.xyz
printf '1\npbc="T T"\nC 0 0 0\n' > bad/pbc-2-values.xyz
printf '1\ncomment\nC 0 0 0\n2\ncomment\nC 0 0 0\n' > bad/second-frame-truncated.xyz

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
# Hand-written valid forms (tests/test_xyz.c checks every number in them).
# Triclinic, Lattice without pbc (periodic in x, y, z: the ASE convention),
# Properties with the columns in another order and extra columns, lower-case
# step= and a quoted value with spaces.
printf '%s\n' 4 \
  'Properties=id:I:1:pos:R:3:species:S:1:charge:R:1 lattice="4.0 0.0 0.0 1.0 3.5 0.0 0.5 0.25 5.0" step=5 note="a b c"' \
  '1 0.0 0.0 0.0 Si 0.5' '2 1.5 1.75 2.5 Si -0.5' '3 2.25 0.5 1.0 O 0.25' '4 -0.5 3.0 4.75 O -0.25' > triclinic.extxyz
# A 3-frame trajectory with Step= and Time= keys (the atoms move by 0.1 per frame).
for k in 0 1 2; do
  printf '3\nLattice="6 0 0 0 6 0 0 0 6" Properties=species:S:1:pos:R:3 pbc="T T T" Step=%d Time=%s\n' $((k * 100)) "$k.5"
  printf 'O 1.%d 1.0 1.0\nH 2.%d 1.0 1.0\nH 1.%d 2.0 1.0\n' $k $k $k
done > trajectory-3frames.extxyz
# Plain XYZ with atomic numbers as species (kept as the text "6", "1") and a
# comment that reads like keys without "=" (plain text, not extended XYZ).
printf '3\nmethane fragment at step 100 time 5 ps, pbc none\n6 0.0 0.0 0.0\n1 0.63 0.63 0.63\n1 -0.63 -0.63 0.63\n' > species-integers.xyz
# The forms ASE also writes: pbc=[True, True, False], Z:I:1 as the species
# column, lower-case keys, pbc as 0/1 in the next frame.
printf '%s\n' 2 \
  'Lattice="5 0 0 0 5 0 0 0 9" Properties=Z:I:1:pos:R:3 pbc=[True, True, False] time=0.25' \
  '8 1.0 2.0 3.0' '1 1.5 2.5 3.5' \
  1 'Lattice="5 0 0 0 5 0 0 0 9" Properties=pos:R:3:Z:I:1 pbc="1 0 1"' '2.0 3.0 4.0 6' > ase-forms.extxyz
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
printf '1\nLattice="1 0 0 0 1 0 0 0 abc"\nC 0 0 0\n' > bad/lattice-nonnumeric.xyz
printf '1\npbc="T T T"\nC 0 0 0\n' > bad/pbc-without-lattice.xyz
printf '1\nLattice="2 0 0 0 2 0 0 0 2" pbc="T X T"\nC 0 0 0\n' > bad/pbc-bad-value.xyz
printf '1\nLattice="2 0 0 0 2 0 0 0 2\nC 0 0 0\n' > bad/unclosed-quote.xyz
printf '1\nProperties=species:S:1:vel:R:3\nC 0 0 0\n' > bad/properties-no-pos.xyz
printf '1\nframe 0\nC 0 0 0\n3\nframe 1\nC 0 0 0\nC 1.0 abc 0\nC 2 0 0\n' > bad/frame1-nonnumeric.xyz
printf '2\ncomment\nC 0 0 0\n' > bad/count-beyond-lines.xyz
printf '2.5\ncomment\nC 0 0 0\nC 1 0 0\n' > bad/fractional-count.xyz
# valid numbers, damaged cells: refused by the work guard (kernels/geometry.h), tests/test_guard.c
printf '3\nLattice="0.001 0 0 0 0.001 0 0 0 0.001" Properties=species:S:1:pos:R:3 pbc="T T T"\nC 0 0 0\nC 0.0005 0 0\nC 0 0.0005 0\n' > bad/tiny-cell.extxyz
printf '3\nLattice="10 0 0 10 0.000001 0 0 0 10" Properties=species:S:1:pos:R:3 pbc="T T T"\nC 0 0 0\nC 1 0 0\nC 0 0 1\n' > bad/near-parallel-cell.extxyz
printf '3\nLattice="0.001 0 0 0 0.001 0 0 0 10" Properties=species:S:1:pos:R:3 pbc="T T F"\nC 0 0 0\nC 0.0005 0 1\nC 0 0.0005 2\n' > bad/tiny-cell-pbc-ttf.extxyz
printf '2\nLattice="6 0 0 0 6 0 0 0 6" Properties=species:S:1:pos:R:3 pbc="T T T"\nC 0 0 0\nC 1 0 0\n2\nLattice="6 0 0 0 0.0000001 0 0 0 6" Properties=species:S:1:pos:R:3 pbc="T T T"\nC 0 0 0\nC 1 0 0\n' > bad/tiny-cell-second-frame.extxyz
printf '2\nLattice="0.02 0 0 0 0.02 0 0 0 0.02" Properties=species:S:1:pos:R:3 pbc="T T T"\nC 0 0 0\nC 0.01 0.01 0.01\n' > bad/dense-cell.extxyz

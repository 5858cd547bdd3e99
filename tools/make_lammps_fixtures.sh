#!/bin/sh
# make_lammps_fixtures.sh — writes the LAMMPS oracle files of data/lammps/
# with Debian's `lmp` (apt-get install lammps), and LAMMPS' own answers on
# them (reference.txt: the rerun energies; rdf.txt: compute rdf), which
# tests/test_lammps.c checks mdnl against without needing LAMMPS.
#
#   tools/make_lammps_fixtures.sh [OUTDIR]   (default: data/lammps)
#
# A 2-type LJ liquid of 108 atoms (fcc 3x3x3 at density 0.8442, T = 1.5,
# `atom_modify sort 10 1.0` so that dumps list atoms out of id order), run
# 60 steps, dumped every 20 steps as: dump atom (scaled), dump custom with
# element and x y z, xu yu zu (columns reordered), xsu ysu zsu; the same in
# a tilted box (xy 0.5, xz 0.3, yz -0.2); a box with boundary p s f; and
# write_data in the atom styles atomic, charge, molecular and full.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/data/lammps}
lmp=${LMP:-lmp}
mkdir -p "$out"
work=$(mktemp -d)
trap '[ $? -eq 0 ] && rm -rf "$work" || echo "make_lammps_fixtures: failed; see $work" >&2' EXIT
cd "$work"

common='units lj
lattice fcc 0.8442
region box block 0 3 0 3 0 3
create_box 2 box
create_atoms 1 box
set type 1 type/fraction 2 0.3 12345
mass * 1.0
velocity all create 1.5 87287 loop geom
pair_style lj/cut 2.5
pair_coeff * * 1.0 1.0 2.5
neighbor 0.3 bin
atom_modify sort 10 1.0
fix 1 all nve
thermo_modify norm no'

cat > ortho.in <<IN
atom_style atomic
boundary p p p
$common
dump a all atom 20 dump_atom.lammpstrj
dump c all custom 20 dump_custom.lammpstrj id type element x y z
dump_modify c element Cu O format float %.10g
dump u all custom 20 dump_unwrapped.lammpstrj type xu yu zu id
dump s all custom 20 dump_scaled_unwrapped.lammpstrj id type xsu ysu zsu
run 60
write_data data_atomic.data
IN

cat > tri.in <<IN
atom_style atomic
boundary p p p
$common
change_box all triclinic
change_box all xy final 0.5 xz final 0.3 yz final -0.2 remap
dump a all atom 20 dump_triclinic_atom.lammpstrj
dump c all custom 20 dump_triclinic.lammpstrj id type x y z
dump_modify c format float %.10g
run 60
write_data data_triclinic.data
IN

cat > psf.in <<IN
atom_style atomic
boundary p s f
$common
dump c all custom 20 dump_psf.lammpstrj id type x y z
run 0
IN

for style in charge molecular full; do
cat > $style.in <<IN
atom_style $style
boundary p p p
$common
run 0
write_data data_$style.data
IN
done

for f in ortho tri psf charge molecular full; do
  "$lmp" -in $f.in -log $f.log -screen none
done

# LAMMPS' own answers on the dumps: the energy of each frame (rerun) and
# compute rdf (50 bins to 2.5, all pairs; one block per frame).
cat > rerun.in <<IN
units lj
atom_style atomic
boundary p p p
pair_style lj/cut 2.5
read_data data_atomic.data
pair_coeff * * 1.0 1.0 2.5
neighbor 0.3 bin
compute r all rdf 50
fix r all ave/time 1 1 1 c_r[*] file rdf.txt mode vector format " %.10g"
thermo_style custom step pe
thermo_modify norm no format float %.17g
thermo 1
rerun dump_custom.lammpstrj dump x y z box yes
IN
"$lmp" -in rerun.in -log rerun.log -screen none
{
  echo "# LAMMPS rerun energies of dump_custom.lammpstrj for tests/test_lammps.c, made by tools/make_lammps_fixtures.sh"
  echo "# $(head -1 rerun.log); lj/cut 2.5, epsilon 1, sigma 1, no shift, thermo_modify norm no"
  echo "# step pe"
  awk '/^ *Step/ {on=1; next} /^Loop/ {on=0} on && NF==2 {print $1, $2}' rerun.log
} > "$out/reference.txt"
{
  echo "# LAMMPS compute rdf 50 (cutoff 2.5) on dump_custom.lammpstrj, one block per frame, made by tools/make_lammps_fixtures.sh"
  cat rdf.txt
} > "$out/rdf.txt"
cp dump_*.lammpstrj data_*.data "$out/"
echo "make_lammps_fixtures: wrote $(ls "$out" | wc -l) files to $out" >&2

#!/usr/bin/env python3
"""make_gro_pdb_fixtures.py — GRO and PDB oracle files for tests/test_formats.c,
written by MDAnalysis' own writers from the LAMMPS fixtures of data/lammps/
(tools/make_lammps_fixtures.sh): the 108-atom liquid in its tilted box, all
four frames of dump_triclinic.lammpstrj, type 1 named CU (element Cu) and
type 2 named O (element O).

    /usr/bin/python3 tools/make_gro_pdb_fixtures.py [OUTDIR]   (default: data/gro)

Writes liquid.gro (frame 0), liquid-4frames.gro (the four frames, one GRO
after another), liquid-4frames.pdb (MODEL/ENDMDL, CRYST1). The tests compare
them with the LAMMPS dump itself, so no reference numbers are stored.
"""
import os
import sys
import warnings

warnings.filterwarnings("ignore")
import MDAnalysis as mda  # noqa: E402

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "data", "gro")
os.makedirs(out, exist_ok=True)
lmp = os.path.join(root, "data", "lammps")
u = mda.Universe(os.path.join(lmp, "data_triclinic.data"), os.path.join(lmp, "dump_triclinic.lammpstrj"),
                 format="LAMMPSDUMP", atom_style="id type x y z")
names = ["CU" if t == "1" else "O" for t in u.atoms.types]
u.add_TopologyAttr("names", names)
u.add_TopologyAttr("elements", ["Cu" if t == "1" else "O" for t in u.atoms.types])
u.add_TopologyAttr("resnames", ["LIQ"] * len(u.residues))
u.trajectory[0]
u.atoms.write(os.path.join(out, "liquid.gro"))
with open(os.path.join(out, "liquid-4frames.gro"), "w") as all_frames:
    for ts in u.trajectory:
        tmp = os.path.join(out, ".frame.gro")
        u.atoms.write(tmp)
        with open(tmp) as f:
            all_frames.write(f.read())
        os.remove(tmp)
with mda.Writer(os.path.join(out, "liquid-4frames.pdb"), u.atoms.n_atoms, multiframe=True) as w:
    for ts in u.trajectory:
        w.write(u.atoms)
print(f"make_gro_pdb_fixtures: wrote liquid.gro, liquid-4frames.gro, liquid-4frames.pdb to {out}", file=sys.stderr)

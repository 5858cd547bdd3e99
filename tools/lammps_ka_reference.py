#!/usr/bin/env python3
"""lammps_ka_reference.py — makes the Kob-Andersen fixture data/energy/ka_mixture.xyz
and its LAMMPS reference energies (data/energy/ka_reference.txt) for the
per-pair parameters of `mdnl energy --pair-coeff`.

    /usr/bin/python3 tools/lammps_ka_reference.py [--lmp lmp] [--out data/energy]

Fixture (extended XYZ, deterministic: seeded, no numpy): jittered FCC,
5 x 5 x 5 x 4 = 500 atoms at the KA reduced density 1.2, Gaussian jitter
0.05 sigma, pbc T T T; 400 atoms A and 100 atoms B (80:20) in a seeded
random order. Positions are float32 values inside the cell (as in
tools/lammps_reference.py), so LAMMPS reads mdnl's float positions exactly.

Cases (LAMMPS pair_style lj/cut, pair_modify shift yes, `run 0`):
  ka           the Kob-Andersen mixture: AA eps 1 sigma 1 cut 2.5, AB 1.5 0.8
               cut 2.0, BB 0.5 0.88 cut 2.2 (cutoff 2.5 sigma_ab)
  mix-geom     AA and BB as above, AB unset: pair_modify mix geometric
  mix-arith    the same with pair_modify mix arithmetic
One line a case: `name cutoff pair coeffs pe`, coeffs joined by ';' (or -),
read by tests/test_energy.c; the tests never need LAMMPS.

The comparison itself, from the command line:
    mdnl energy data/energy/ka_mixture.xyz -c 2.5 --pair lj:epsilon=1,sigma=1 \\
        --pair-coeff A-B:epsilon=1.5,sigma=0.8,cut=2.0 \\
        --pair-coeff B-B:epsilon=0.5,sigma=0.88,cut=2.2
"""
import argparse
import math
import os
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lammps_reference import f32, run_lammps, wrap32  # noqa: E402


def ka_mixture(n=5, rho=1.2, jitter=0.05, seed=60):
    rng = random.Random(seed)
    a = (4.0 / rho) ** (1.0 / 3.0)
    length = f32(n * a)
    basis = [(0, 0, 0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5)]
    pos = []
    for ix in range(n):
        for iy in range(n):
            for iz in range(n):
                for bx, by, bz in basis:
                    r = [(ix + bx) * a, (iy + by) * a, (iz + bz) * a]
                    pos.append(tuple(wrap32(c + rng.gauss(0.0, jitter), length) for c in r))
    nb = len(pos) // 5
    species = ["A"] * (len(pos) - nb) + ["B"] * nb
    rng.shuffle(species)
    return {"name": "ka_mixture", "length": length, "pos": pos, "species": species}


def write_extxyz(fx, path):
    length = fx["length"]
    with open(path, "w") as f:
        f.write(f"{len(fx['pos'])}\n")
        f.write(f'Lattice="{length!r} 0 0 0 {length!r} 0 0 0 {length!r}" Properties=species:S:1:pos:R:3 '
                f'pbc="T T T" source=tools/lammps_ka_reference.py\n')
        for s, (x, y, z) in zip(fx["species"], fx["pos"]):
            f.write(f"{s} {x!r} {y!r} {z!r}\n")


# name, cutoff (-c), --pair, --pair-coeff list, LAMMPS mix rule
CASES = [
    ("ka", 2.5, "lj:epsilon=1.0,sigma=1.0",
     ["A-B:epsilon=1.5,sigma=0.8,cut=2.0", "B-B:epsilon=0.5,sigma=0.88,cut=2.2"], "geometric"),
    ("mix-geom", 2.5, "lj:epsilon=1.0,sigma=1.0,mix=geometric", ["B-B:epsilon=0.5,sigma=0.88,cut=2.2"],
     "geometric"),
    ("mix-arith", 2.5, "lj:epsilon=1.0,sigma=1.0,mix=arithmetic", ["B-B:epsilon=0.5,sigma=0.88,cut=2.2"],
     "arithmetic"),
]


def params(s):
    return dict(p.split("=") for p in s.split(","))


def write_lammps(fx, rc, spec, coeffs, mix, workdir):
    length = fx["length"]
    types = {"A": 1, "B": 2}
    data = os.path.join(workdir, "data.lmp")
    with open(data, "w") as f:
        f.write(f"# ka_mixture for mdnl energy reference\n\n{len(fx['pos'])} atoms\n2 atom types\n\n")
        f.write(f"0 {length!r} xlo xhi\n0 {length!r} ylo yhi\n0 {length!r} zlo zhi\n\n")
        f.write("Masses\n\n1 1.0\n2 1.0\n\nAtoms # atomic\n\n")
        for k, (s, (x, y, z)) in enumerate(zip(fx["species"], fx["pos"]), 1):
            f.write(f"{k} {types[s]} {x!r} {y!r} {z!r}\n")
    base = params(spec.split(":", 1)[1])
    lines = [f"pair_coeff 1 1 {base['epsilon']} {base['sigma']} {base.get('cut', rc)}"]
    for c in coeffs:
        names, p = c.split(":", 1)
        a, b = (types[x] for x in names.split("-"))
        kv = params(p)
        lines.append(f"pair_coeff {min(a, b)} {max(a, b)} {kv['epsilon']} {kv['sigma']} {kv.get('cut', rc)}")
    inp = os.path.join(workdir, "in.lmp")
    with open(inp, "w") as f:
        f.write(f"units lj\natom_style atomic\nboundary p p p\nread_data {data}\n"
                f"pair_style lj/cut {rc}\n" + "\n".join(lines) + f"\npair_modify shift yes mix {mix}\n"
                "thermo_style custom step pe\nthermo_modify norm no format float %.17g\nrun 0\n")
    return inp


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lmp", default="lmp")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "energy"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    fx = ka_mixture()
    write_extxyz(fx, os.path.join(args.out, "ka_mixture.xyz"))
    ver = subprocess.run([args.lmp, "-h"], capture_output=True, text=True).stdout.splitlines()
    ver = next((l.strip() for l in ver if l.startswith("Large-scale")), "lammps")
    lines = ["# LAMMPS reference totals of the KA mixture for tests/test_energy.c, made by tools/lammps_ka_reference.py",
             f"# {ver}; `run 0`, thermo_modify norm no",
             "# case fixture cutoff pair coeffs(;-joined) pe"]
    for name, rc, spec, coeffs, mix in CASES:
        with tempfile.TemporaryDirectory() as wd:
            pe, _ = run_lammps(args.lmp, write_lammps(fx, rc, spec, coeffs, mix, wd), wd)
        lines.append(f"{name} ka_mixture {rc} {spec} {';'.join(coeffs) or '-'} {pe!r}")
        print(lines[-1])
    with open(os.path.join(args.out, "ka_reference.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

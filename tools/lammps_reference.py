#!/usr/bin/env python3
"""lammps_reference.py — makes the energy fixtures in data/energy/ and their
LAMMPS reference energies (data/energy/reference.txt).

    /usr/bin/python3 tools/lammps_reference.py [--lmp lmp] [--out data/energy]

Fixtures (extended XYZ, deterministic: seeded, no numpy):
  graphene_noisy.xyz  16 x 10 rectangular graphene cells (640 C atoms), bond
                      1.42 A, Gaussian noise 0.05 A on every coordinate,
                      pbc="T T F" with 20 A of cell (vacuum) along z.
  lj_liquid.xyz       jittered FCC, 8 x 8 x 8 x 4 = 2048 atoms at reduced
                      density 0.8442, Gaussian jitter 0.07 sigma, pbc T T T.

Every coordinate and box length is a float32 value, written with all the
digits of its double, and lies inside the cell. mdnl's float copy of the
positions (core/geometry.h) is then exactly what LAMMPS reads, so the only
difference between the two is mdnl's float arithmetic on displacements.

For each case the script writes a LAMMPS data file and input (atom_style
atomic, `run 0`, `thermo_modify norm no`, 17 digits), runs `lmp`, and stores
one line `fixture cutoff spec pe` in reference.txt, which tests/test_energy.c
reads; the tests never need LAMMPS.
"""
import argparse
import math
import os
import random
import re
import struct
import subprocess
import sys
import tempfile


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def wrap32(x, length):
    """x wrapped into [0, length) and rounded to float32 (still inside)."""
    x = f32(x % length)
    if x >= length:
        x = 0.0
    return x


def graphene_noisy(nx=16, ny=10, bond=1.42, noise=0.05, seed=7, vac=20.0):
    rng = random.Random(seed)
    a, b = bond * math.sqrt(3.0), 3.0 * bond
    lx, ly, lz = f32(nx * a), f32(ny * b), f32(vac)
    basis = [(0.0, 0.0), (0.0, bond), (a / 2, 1.5 * bond), (a / 2, 2.5 * bond)]
    pos = []
    for ix in range(nx):
        for iy in range(ny):
            for bx, by in basis:
                x = ix * a + bx + rng.gauss(0.0, noise)
                y = iy * b + by + rng.gauss(0.0, noise)
                z = rng.gauss(0.0, noise)
                pos.append((wrap32(x, lx), wrap32(y, ly), f32(z)))
    return {"name": "graphene_noisy", "box": (lx, ly, lz), "pbc": (True, True, False), "symbol": "C",
            "pos": pos, "units": "metal", "mass": 12.011, "zlo": -lz / 2, "zhi": lz / 2}


def lj_liquid(n=8, rho=0.8442, jitter=0.07, seed=11):
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
    return {"name": "lj_liquid", "box": (length, length, length), "pbc": (True, True, True), "symbol": "Ar",
            "pos": pos, "units": "lj", "mass": 1.0, "zlo": 0.0, "zhi": length}


def write_extxyz(fx, path):
    lx, ly, lz = fx["box"]
    pbc = " ".join("T" if p else "F" for p in fx["pbc"])
    with open(path, "w") as f:
        f.write(f"{len(fx['pos'])}\n")
        f.write(f'Lattice="{lx!r} 0 0 0 {ly!r} 0 0 0 {lz!r}" Properties=species:S:1:pos:R:3 pbc="{pbc}"'
                f" source=tools/lammps_reference.py\n")
        for x, y, z in fx["pos"]:
            f.write(f"{fx['symbol']} {x!r} {y!r} {z!r}\n")


def write_lammps(fx, rc, spec, workdir):
    lx, ly, _ = fx["box"]
    data = os.path.join(workdir, "data.lmp")
    with open(data, "w") as f:
        f.write(f"# {fx['name']} for mdnl energy reference\n\n{len(fx['pos'])} atoms\n1 atom types\n\n")
        f.write(f"0 {lx!r} xlo xhi\n0 {ly!r} ylo yhi\n{fx['zlo']!r} {fx['zhi']!r} zlo zhi\n\n")
        f.write(f"Masses\n\n1 {fx['mass']}\n\nAtoms # atomic\n\n")
        for k, (x, y, z) in enumerate(fx["pos"], 1):
            f.write(f"{k} 1 {x!r} {y!r} {z!r}\n")
    kind, params = spec.split(":", 1)
    kv = dict(p.split("=") for p in params.split(","))
    shift = kv.get("shift", "yes")
    if kind == "lj":
        style, coeff = f"lj/cut {rc}", f"{kv['epsilon']} {kv['sigma']}"
    else:
        style, coeff = f"morse {rc}", f"{kv['d0']} {kv['alpha']} {kv['r0']}"
    boundary = " ".join("p" if p else "f" for p in fx["pbc"])
    inp = os.path.join(workdir, "in.lmp")
    with open(inp, "w") as f:
        f.write(f"units {fx['units']}\natom_style atomic\nboundary {boundary}\n"
                f"read_data {data}\n"
                f"pair_style {style}\npair_coeff 1 1 {coeff}\npair_modify shift {shift}\n"
                "thermo_style custom step pe\nthermo_modify norm no format float %.17g\nrun 0\n")
    return inp


def run_lammps(lmp, inp, workdir):
    out = subprocess.run([lmp, "-in", inp, "-log", os.path.join(workdir, "log.lammps"), "-screen", "none"],
                         cwd=workdir, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"lammps_reference: {lmp} failed:\n{out.stdout}\n{out.stderr}")
    log = open(os.path.join(workdir, "log.lammps")).read()
    m = re.search(r"^\s*Step\s+PotEng\s*\n\s*0\s+(\S+)", log, re.M)
    if not m:
        sys.exit(f"lammps_reference: no 'Step PotEng' thermo line in {workdir}/log.lammps")
    return float(m.group(1)), log


CASES = [
    ("graphene_noisy", 3.0, "morse:d0=6.0,alpha=1.8,r0=1.42,shift=yes"),
    ("graphene_noisy", 3.0, "lj:epsilon=1.0,sigma=1.265,shift=yes"),
    ("lj_liquid", 2.5, "lj:epsilon=1.0,sigma=1.0,shift=yes"),
    ("lj_liquid", 2.5, "lj:epsilon=1.0,sigma=1.0,shift=no"),
    ("lj_liquid", 2.5, "morse:d0=1.0,alpha=3.0,r0=1.1,shift=yes"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lmp", default="lmp")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "energy"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    fixtures = {fx["name"]: fx for fx in (graphene_noisy(), lj_liquid())}
    for fx in fixtures.values():
        write_extxyz(fx, os.path.join(args.out, fx["name"] + ".xyz"))
    ver = subprocess.run([args.lmp, "-h"], capture_output=True, text=True).stdout.splitlines()
    ver = next((l.strip() for l in ver if l.startswith("Large-scale")), "lammps")
    lines = [f"# LAMMPS reference totals for tests/test_energy.c, made by tools/lammps_reference.py",
             f"# {ver}; `run 0`, thermo_modify norm no",
             "# fixture cutoff spec pe"]
    for name, rc, spec in CASES:
        with tempfile.TemporaryDirectory() as wd:
            pe, _ = run_lammps(args.lmp, write_lammps(fixtures[name], rc, spec, wd), wd)
        lines.append(f"{name} {rc} {spec} {pe!r}")
        print(lines[-1])
    with open(os.path.join(args.out, "reference.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

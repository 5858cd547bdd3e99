#!/usr/bin/env python3
"""make_lj_liquid.py — a real Lennard-Jones liquid, melted with LAMMPS, as H5MD.

    tools/make_lj_liquid.py snapshot [-o data/lj-liquid-131k.h5md]
        Runs LAMMPS (Debian's `lammps` package, binary `lmp`): fcc lattice at
        reduced density 0.8442, 32x32x32 unit cells = 131,072 atoms,
        `velocity create 3.0 4928459`, pair lj/cut 2.5, 300 steps of
        Nose-Hoover NVT (Tdamp 0.1) ramping T from 3.0 to 0.9, then 300 steps at 0.9, and
        writes the final frame (atoms in id order, wrapped into the box) as
        H5MD 1.1 with float32 positions, gzip + shuffle (about 1.5 MB).

    tools/make_lj_liquid.py replicate IN.h5md -o OUT.h5md [--shuffle SEED]
        The 2x2x2 replica of a one-frame H5MD file (1,048,576 atoms from the
        131k snapshot): replica images in order (0,0,0), (0,0,1), ... (x
        slowest), each in the input's atom order; with --shuffle the atom
        order is a fixed random permutation (numpy default_rng(SEED)).
        Uncompressed (benchmark input).

    tools/make_lj_liquid.py trajectory IN.h5md -o OUT.h5md --frames 10
        Continues the liquid with LAMMPS (NVT at 0.9) from IN and writes
        --frames frames, 20 steps apart (the RDF benchmark's trajectory).

    tools/make_lj_liquid.py lammps-data IN.h5md -o OUT.data
        The frame of a one-frame H5MD file as a LAMMPS data file (atom_style
        atomic), for the side-by-side benchmark (read_data).

Rerunning `snapshot` gives the same file on the same LAMMPS build (the run is
serial and deterministic); other builds may differ in the last bits.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

DENSITY = 0.8442
CELLS = 32
SEED = 4928459

IN_MELT = """\
units lj
atom_style atomic
lattice fcc {density}
region box block 0 {n} 0 {n} 0 {n}
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 3.0 {seed} loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
timestep 0.005
thermo 100
fix nvt all nvt temp 3.0 0.9 0.1
run 300
unfix nvt
fix nvt all nvt temp 0.9 0.9 0.1
run 300
write_dump all custom {dump} id x y z modify sort id format float %.9g
"""

IN_TRAJ = """\
units lj
atom_style atomic
read_data {data}
mass 1 1.0
velocity all create 0.9 {seed} loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
neigh_modify every 1 delay 0 check yes
timestep 0.005
fix nvt all nvt temp 0.9 0.9 0.1
dump d all custom 20 {dump} id x y z
dump_modify d sort id format float %.9g
run {steps}
"""


def run_lammps(script, workdir):
    inp = os.path.join(workdir, "in.lammps")
    with open(inp, "w") as f:
        f.write(script)
    subprocess.run(["lmp", "-in", inp, "-log", os.path.join(workdir, "log.lammps"), "-screen", "none"],
                   cwd=workdir, check=True)


def read_dump(path):
    """Frames of a LAMMPS `dump custom id x y z`: list of (step, box lengths, lo, pos[N,3] by id)."""
    frames = []
    with open(path) as f:
        while True:
            line = f.readline()
            if not line:
                break
            assert line.startswith("ITEM: TIMESTEP"), line
            step = int(f.readline())
            f.readline()
            n = int(f.readline())
            f.readline()
            lo, hi = [], []
            for _ in range(3):
                a, b = f.readline().split()[:2]
                lo.append(float(a))
                hi.append(float(b))
            f.readline()
            data = np.loadtxt(f, max_rows=n)
            ids = data[:, 0].astype(np.int64)
            pos = np.empty((n, 3))
            pos[ids - 1] = data[:, 1:4]
            lo = np.array(lo)
            length = np.array(hi) - lo
            pos = np.mod(pos - lo, length)  # wrap into [0, L)
            pos[pos >= length] = 0.0
            frames.append((step, length, pos))
    return frames


def write_h5md(path, steps, length, frames, compress):
    kw = dict(compression="gzip", compression_opts=6, shuffle=True) if compress else {}
    n = frames[0].shape[0]
    with h5py.File(path, "w") as f:
        h = f.create_group("h5md")
        h.attrs["version"] = np.array([1, 1], dtype=np.int32)
        h.create_group("author").attrs["name"] = "mdnl tools/make_lj_liquid.py"
        c = h.create_group("creator")
        c.attrs["name"] = "make_lj_liquid.py"
        c.attrs["version"] = "1"
        g = f.create_group("particles/all")
        b = g.create_group("box")
        b.attrs["dimension"] = np.int32(3)
        b.attrs["boundary"] = np.array([b"periodic"] * 3, dtype="S8")
        b.create_dataset("edges", data=np.asarray(length, dtype=np.float64))
        p = g.create_group("position")
        val = np.stack([np.asarray(fr, dtype=np.float32) for fr in frames])
        p.create_dataset("value", data=val, chunks=(1, min(n, 1 << 16), 3), **kw)
        p.create_dataset("step", data=np.asarray(steps, dtype=np.int64))


def read_h5md(path):
    with h5py.File(path, "r") as f:
        g = f["particles/all"]
        edges = np.asarray(g["box/edges"][()], dtype=np.float64)
        pos = g["position/value"][0]
    return edges, pos


def cmd_snapshot(a):
    with tempfile.TemporaryDirectory() as d:
        run_lammps(IN_MELT.format(density=DENSITY, n=CELLS, seed=SEED, dump="final.dump"), d)
        with open(os.path.join(d, "log.lammps")) as f:
            log = f.read()
        step, length, pos = read_dump(os.path.join(d, "final.dump"))[-1]
    # The last thermo line of the 0.9 run: Step Temp E_pair E_mol TotEng Press
    last = [l for l in log.splitlines() if l.strip().startswith("600 ")]
    print("make_lj_liquid: %d atoms, box %.6f, final thermo: %s" % (len(pos), length[0], last[-1].strip() if last else "?"),
          file=sys.stderr)
    write_h5md(a.output, [step], length, [pos], compress=True)


def cmd_replicate(a):
    edges, pos = read_h5md(a.input)
    pos = pos.astype(np.float64)
    out = []
    for ix in range(2):
        for iy in range(2):
            for iz in range(2):
                out.append(pos + edges * np.array([ix, iy, iz]))
    big = np.concatenate(out)
    if a.shuffle is not None:
        big = big[np.random.default_rng(a.shuffle).permutation(len(big))]
    write_h5md(a.output, [0], edges * 2, [big], compress=False)


def write_lammps_data(path, edges, pos):
    with open(path, "w") as f:
        f.write("LAMMPS data file from make_lj_liquid.py\n\n%d atoms\n1 atom types\n\n" % len(pos))
        for k, name in enumerate("xyz"):
            f.write("0 %.17g %slo %shi\n" % (edges[k], name, name))
        f.write("\nMasses\n\n1 1.0\n\nAtoms # atomic\n\n")
        np.savetxt(f, np.column_stack([np.arange(1, len(pos) + 1), np.ones(len(pos)), pos]),
                   fmt=["%d", "%d", "%.9g", "%.9g", "%.9g"])


def cmd_trajectory(a):
    edges, pos = read_h5md(a.input)
    with tempfile.TemporaryDirectory() as d:
        write_lammps_data(os.path.join(d, "in.data"), edges, pos.astype(np.float64))
        run_lammps(IN_TRAJ.format(data="in.data", seed=SEED + 1, dump="traj.dump", steps=20 * (a.frames - 1)), d)
        frames = read_dump(os.path.join(d, "traj.dump"))
    write_h5md(a.output, [fr[0] for fr in frames], frames[0][1], [fr[2] for fr in frames], compress=False)


def cmd_lammps_data(a):
    edges, pos = read_h5md(a.input)
    write_lammps_data(a.output, edges, pos.astype(np.float64))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("-o", "--output", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                                                          "lj-liquid-131k.h5md"))
    s.set_defaults(fn=cmd_snapshot)
    r = sub.add_parser("replicate")
    r.add_argument("input")
    r.add_argument("-o", "--output", required=True)
    r.add_argument("--shuffle", type=int, default=None)
    r.set_defaults(fn=cmd_replicate)
    t = sub.add_parser("trajectory")
    t.add_argument("input")
    t.add_argument("-o", "--output", required=True)
    t.add_argument("--frames", type=int, default=10)
    t.set_defaults(fn=cmd_trajectory)
    l = sub.add_parser("lammps-data")
    l.add_argument("input")
    l.add_argument("-o", "--output", required=True)
    l.set_defaults(fn=cmd_lammps_data)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""e2e_side_by_side.py — one trajectory end to end through mdnl and its peers
(issue 59, item 7): the RDF to 4 sigma (200 bins) and the LJ energy.

    tools/bench/e2e_side_by_side.py [--frames 50] [--atoms 32000] [--mdnl build/mdnl]
                                    [--backend cpu] [--work build/e2e] [--repeat 1]

The trajectory: tools/gen_lj_trajectory.py (jittered FCC LJ system at
density 0.8442, a new seed per frame) as extended XYZ, then each tool gets
the format it reads best:

  mdnl run      H5MD (`mdnl convert`): -c 2.5 --pair lj:epsilon=1,sigma=1
                --rmax 4 --bins 200 -o RES.h5 (RDF and energy in one pass)
  MDAnalysis    InterRDF(all, all, nbins=200, range=(0, 4)) on the XTC
                (`mdnl convert`; MDAnalysis has no LJ energy: RDF only)
  LAMMPS        `rerun` of a dump (written here from the frames) with
                pair lj/cut 2.5 (energy, thermo pe each frame) and
                `compute rdf 200 cutoff 4.0` through fix ave/time; 1 rank
  freud         density.RDF(bins=200, r_max=4) fed by MDAnalysis (XTC) when
                one interpreter has both, else by frames parsed with numpy
                from the extended XYZ (RDF only)
  gmx rdf       XTC and a .gro written here, -bin 0.002 -rmax 0.4 (nm: the
                XTC is in nm; RDF only)

Tools that are absent are skipped and said so. Each tool's time is the wall
time of its whole process (start-up, reading, computing, writing), the
median of --repeat runs. Python tools run under the first interpreter that
imports them (/usr/bin/python3 first: Debian's MDAnalysis). Writes
side_by_side_e2e.md and .json into --work and prints the table.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHONS = [p for p in ("/usr/bin/python3", shutil.which("python3"), sys.executable) if p]


def python_with(*modules):
    """The first interpreter that imports every module, or None."""
    seen = set()
    for py in PYTHONS:
        if py in seen or not os.path.exists(py):
            continue
        seen.add(py)
        code = "import " + ", ".join(modules)
        if subprocess.run([py, "-c", code], capture_output=True).returncode == 0:
            return py
    return None


def timed(cmd, cwd, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if r.returncode != 0:
            raise RuntimeError("%s failed (%d): %s" % (cmd[0], r.returncode, (r.stderr or r.stdout)[-2000:]))
    return statistics.median(times)


def read_extxyz(path):
    """Frames of the generated extended XYZ: (box lengths, positions)."""
    frames = []
    with open(path) as f:
        while True:
            line = f.readline()
            if not line:
                break
            n = int(line)
            head = f.readline()
            lat = head.split('Lattice="')[1].split('"')[0].split()
            box = (float(lat[0]), float(lat[4]), float(lat[8]))
            pos = [f.readline().split()[1:4] for _ in range(n)]
            frames.append((box, pos))
    return frames


def write_lammps_inputs(frames, work):
    box, pos = frames[0]
    with open(os.path.join(work, "first.data"), "w") as d:
        d.write("first frame\n\n%d atoms\n1 atom types\n\n" % len(pos))
        for a, L in zip("xyz", box):
            d.write("0 %.10g %slo %shi\n" % (L, a, a))
        d.write("\nMasses\n\n1 1.0\n\nAtoms # atomic\n\n")
        for i, p in enumerate(pos):
            d.write("%d 1 %s %s %s\n" % (i + 1, p[0], p[1], p[2]))
    with open(os.path.join(work, "traj.dump"), "w") as d:
        for k, (box, pos) in enumerate(frames):
            d.write("ITEM: TIMESTEP\n%d\nITEM: NUMBER OF ATOMS\n%d\nITEM: BOX BOUNDS pp pp pp\n" % (k, len(pos)))
            for L in box:
                d.write("0 %.10g\n" % L)
            d.write("ITEM: ATOMS id type x y z\n")
            d.writelines("%d 1 %s %s %s\n" % (i + 1, p[0], p[1], p[2]) for i, p in enumerate(pos))
    with open(os.path.join(work, "rerun.in"), "w") as d:
        d.write("""units lj
atom_style atomic
boundary p p p
read_data first.data
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0
neighbor 0.3 bin
comm_modify cutoff 4.5
compute r all rdf 200 cutoff 4.0
fix g all ave/time 1 1 1 c_r[*] file rdf.out mode vector
thermo_style custom step pe
thermo 1
rerun traj.dump dump x y z box yes
""")


def write_gro(frames, work):
    box, pos = frames[0]
    with open(os.path.join(work, "first.gro"), "w") as d:
        d.write("LJ\n%d\n" % len(pos))
        for i, p in enumerate(pos):
            d.write("%5d%-5s%5s%5d%8.3f%8.3f%8.3f\n" % ((i // 1000 + 1) % 100000, "LJ", "Ar", (i + 1) % 100000,
                                                      float(p[0]) / 10, float(p[1]) / 10, float(p[2]) / 10))
        d.write("%10.5f%10.5f%10.5f\n" % tuple(L / 10 for L in box))


MDA_RDF = r"""
import sys, MDAnalysis as mda
from MDAnalysis.analysis.rdf import InterRDF
u = mda.Universe.empty(int(sys.argv[2]), trajectory=True)
u.load_new(sys.argv[1])
r = InterRDF(u.atoms, u.atoms, nbins=200, range=(0.0, 4.0)).run()
print(float(r.results.rdf.max()))
"""

FREUD_MDA = r"""
import sys, freud, MDAnalysis as mda
u = mda.Universe.empty(int(sys.argv[2]), trajectory=True)
u.load_new(sys.argv[1])
rdf = freud.density.RDF(bins=200, r_max=4.0)
for ts in u.trajectory:
    rdf.compute(system=(freud.box.Box.from_box(ts.dimensions[:3]), u.atoms.positions), reset=False)
print(float(rdf.rdf.max()))
"""

FREUD_NUMPY = r"""
import sys, numpy as np, freud
rdf = freud.density.RDF(bins=200, r_max=4.0)
with open(sys.argv[1]) as f:
    while True:
        line = f.readline()
        if not line:
            break
        n = int(line)
        lat = f.readline().split('Lattice="')[1].split('"')[0].split()
        pos = np.loadtxt(f, usecols=(1, 2, 3), max_rows=n, dtype=np.float32)
        box = freud.box.Box.from_box([float(lat[0]), float(lat[4]), float(lat[8])])
        rdf.compute(system=(box, box.wrap(pos)), reset=False)
print(float(rdf.rdf.max()))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=50)
    ap.add_argument("--atoms", type=int, default=32000)
    ap.add_argument("--mdnl", default="build/mdnl")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--work", default="build/e2e")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    mdnl = os.path.abspath(a.mdnl)
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    xyz = os.path.join(work, "lj_%dx%d.extxyz" % (a.frames, a.atoms))
    if not os.path.exists(xyz):
        subprocess.run([sys.executable, os.path.join(HERE, "..", "gen_lj_trajectory.py"), "--frames", str(a.frames),
                        "--atoms", str(a.atoms), "-o", xyz + ".part"], check=True)
        os.replace(xyz + ".part", xyz)
    h5, xtc = xyz[:-7] + ".h5", xyz[:-7] + ".xtc"
    for out in (h5, xtc):
        if not os.path.exists(out):
            subprocess.run([mdnl, "convert", xyz, out, "--quiet"], check=True)
    frames = read_extxyz(xyz)
    natoms = len(frames[0][1])
    rows, notes = [], []

    def add(tool, fmt, computes, cmd):
        try:
            rows.append({"tool": tool, "input": fmt, "computes": computes, "seconds": timed(cmd, work, a.repeat)})
            print("%s: %.2f s" % (tool, rows[-1]["seconds"]), file=sys.stderr, flush=True)
        except RuntimeError as e:
            notes.append("%s: %s" % (tool, e))

    add("mdnl run (%s)" % a.backend, "H5MD", "RDF + LJ energy",
        [mdnl, "run", h5, "-c", "2.5", "--pair", "lj:epsilon=1,sigma=1", "--rmax", "4", "--bins", "200",
         "--backend", a.backend, "-o", os.path.join(work, "mdnl_res.h5"), "--quiet", "--no-progress"])
    py = python_with("MDAnalysis")
    if py:
        add("MDAnalysis InterRDF", "XTC", "RDF", [py, "-c", MDA_RDF, xtc, str(natoms)])
    else:
        notes.append("MDAnalysis: not installed (skipped)")
    lmp = shutil.which("lmp") or shutil.which("lmp_serial")
    if lmp:
        write_lammps_inputs(frames, work)
        add("LAMMPS rerun", "dump", "RDF + LJ energy", [lmp, "-in", "rerun.in", "-log", "rerun.log", "-screen", "none"])
    else:
        notes.append("LAMMPS: lmp not found (skipped)")
    py = python_with("freud", "MDAnalysis")
    if py:
        add("freud RDF (MDAnalysis feed)", "XTC", "RDF", [py, "-c", FREUD_MDA, xtc, str(natoms)])
    else:
        py = python_with("freud", "numpy")
        if py:
            add("freud RDF (numpy feed)", "ext. XYZ", "RDF", [py, "-c", FREUD_NUMPY, xyz])
            notes.append("freud: no interpreter has both freud and MDAnalysis; fed by numpy from the extended XYZ")
        else:
            notes.append("freud: not installed (skipped; pip install freud-analysis)")
    gmx = shutil.which("gmx") or shutil.which("gmx_mpi")
    if gmx:
        write_gro(frames, work)
        add("gmx rdf", "XTC", "RDF", [gmx, "-quiet", "rdf", "-f", xtc, "-s", "first.gro", "-ref", "all", "-sel", "all",
                                      "-bin", "0.002", "-rmax", "0.4", "-o", "gmx_rdf.xvg", "-xvg", "none"])
    else:
        notes.append("gmx: not installed (skipped; apt-get install gromacs)")

    base = rows[0]["seconds"] if rows and rows[0]["tool"].startswith("mdnl") else None
    lines = ["%d frames x %d atoms, RDF to 4 sigma (200 bins) and LJ energy (cutoff 2.5); wall seconds of each "
             "whole process, median of %d" % (len(frames), natoms, a.repeat), "",
             "| tool | input | computes | wall s | x mdnl |", "|---|---|---|---:|---:|"]
    for r in rows:
        lines.append("| %s | %s | %s | %.2f | %s |" % (r["tool"], r["input"], r["computes"], r["seconds"],
                                                    "%.1f" % (r["seconds"] / base) if base else "-"))
    lines += [""] + ["- " + n for n in notes]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(work, "side_by_side_e2e.md"), "w") as f:
        f.write(text)
    with open(os.path.join(work, "side_by_side_e2e.json"), "w") as f:
        json.dump({"frames": len(frames), "atoms": natoms, "rows": rows, "notes": notes}, f, indent=1)


if __name__ == "__main__":
    main()

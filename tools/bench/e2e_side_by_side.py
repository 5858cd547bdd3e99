#!/usr/bin/env python3
"""e2e_side_by_side.py — one trajectory end to end through mdnl and its peers
(issue 59, item 7): the RDF to 4 sigma (200 bins) and the LJ energy.

    tools/bench/e2e_side_by_side.py [--frames 50] [--atoms 32000] [--mdnl build/mdnl]
        [--backend auto] [--work build/e2e] [--repeat 1] [--jobs NCPU]
        [--peer-seconds 20] [--peer-frames N] [--site DIR ...] [--python PY] [--skip TOOL,...]

The trajectory: tools/gen_lj_trajectory.py (jittered FCC LJ system at
density 0.8442, a new seed per frame) as extended XYZ, written by --jobs
processes in pieces, then `mdnl convert` gives each tool the format it reads
best:

  mdnl run      H5MD: -c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 200
                -o RES.h5 (RDF and energy in one pass), every frame
  MDAnalysis    InterRDF(all, all, nbins=200, range=(0, 4), exclusion_block=(1, 1):
                no self pairs) on the XTC
                (MDAnalysis has no LJ energy: RDF only)
  freud         density.RDF(bins=200, r_max=4) fed by MDAnalysis (XTC) when
                one interpreter has both, else by frames parsed with numpy
                from the extended XYZ (RDF only)
  cuRDF         curdf.rdf on an MDAnalysis Universe of the XTC (its documented
                way: GPU neighbor lists by NVIDIA ALCHEMI Toolkit-Ops, histogram
                in PyTorch; its default wrap transformation), r 0..4, 200 bins;
                without matplotlib (peers_pack.sh leaves it out) an empty
                curdf.plotting stands in (cuRDF uses it only to plot); timed
                after one untimed frame (Warp's kernel cache warm)
  LAMMPS        `rerun` of the dump (`mdnl convert`) with pair lj/cut 2.5
                (energy, thermo pe each frame) and `compute rdf 200 cutoff
                4.0` through fix ave/time; 1 rank
  gmx rdf       XTC and a .gro of the first frame, -bin 0.002 -rmax 0.4 (nm:
                the XTC is in nm; RDF only)

mdnl reads every frame. The Python peers run in chunks of frames (the first
chunk one frame, each next one sized from the rate so far) until
--peer-seconds have passed since their start or the trajectory ends; LAMMPS
and gmx read the first --peer-frames (default all). Each tool's time is the
wall time of its whole process (start-up, reading, computing), frames/s is
its frames over that time, the median of --repeat runs; "mdnl x" is mdnl's
frames/s over the tool's; "g(r) max" (the peak of its last run's g(r); the
Python peers': of their last chunk) checks that all compute the same. --site DIR (repeatable) is put first on the
Python peers' PYTHONPATH: the unpacked tools/bench/peers_pack.sh and
alchemi_pack.sh archives on a host without those packages. Tools that are
absent are skipped and said so. Python tools run under the first interpreter
that imports them: --python, /usr/bin/python3, python3, this one. Writes side_by_side_e2e.md and
.json into --work and prints the table.
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
TOOLS = ("mdnl", "mdanalysis", "freud", "curdf", "lammps", "gmx")


def python_env(sites):
    env = dict(os.environ, TQDM_DISABLE="1", PYTHONWARNINGS="ignore", GMX_MAXBACKUP="-1")
    if sites:
        env["PYTHONPATH"] = os.pathsep.join(sites + [p for p in [os.environ.get("PYTHONPATH")] if p])
    return env


def python_with(env, *modules, finds=()):
    """The first interpreter that imports every module (and finds the
    packages in finds, without importing them), or None."""
    seen = set()
    for py in PYTHONS:
        if py in seen or not os.path.exists(py):
            continue
        seen.add(py)
        code = "import importlib.util, " + ", ".join(modules) + "".join(
            "; assert importlib.util.find_spec(%r)" % m for m in finds)
        if subprocess.run([py, "-c", code], capture_output=True, env=env).returncode == 0:
            return py
    return None


def run_once(cmd, cwd, env):
    """(wall s, frames the tool reported on its last stdout line "frames N"
    or None, the stdout)."""
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (os.path.basename(cmd[0]), r.returncode,
                                                   (r.stderr or r.stdout)[-2000:]))
    last = (r.stdout.strip().splitlines() or [""])[-1].split()
    return wall, (int(last[1]) if len(last) == 2 and last[0] == "frames" else None), r.stdout


def gmax_printed(out):
    """The "g(r) max X" line of a Python peer."""
    for line in out.splitlines():
        if line.startswith("g(r) max "):
            return float(line.split()[2])
    return None


def gmax_lammps(work):
    """The last frame's largest g in fix ave/time's rdf.out (rows: bin r g coord)."""
    g = []
    with open(os.path.join(work, "rdf.out")) as f:
        for line in f:
            v = line.split()
            if len(v) == 2:
                g = []
            elif len(v) == 4 and not line.startswith("#"):
                g.append(float(v[2]))
    return max(g) if g else None


def gmax_gmx(work):
    with open(os.path.join(work, "gmx_rdf.xvg")) as f:
        return max(float(line.split()[1]) for line in f if line.strip() and line[0] not in "#@")


def gmax_mdnl(env, res):
    """The largest g of mdnl's /rdf/total/g, read by an interpreter with h5py."""
    py = python_with(env, "h5py")
    if not py:
        return None
    out = subprocess.run([py, "-c", "import sys, h5py; print(h5py.File(sys.argv[1], 'r')['rdf/total/g'][()].max())",
                          res], capture_output=True, text=True, env=env).stdout.split()
    return float(out[0]) if out else None


def first_frame(path):
    """(box lengths, [[x, y, z] as text]) of the first extended XYZ frame."""
    with open(path) as f:
        n = int(f.readline())
        lat = f.readline().split('Lattice="')[1].split('"')[0].split()
        pos = [f.readline().split()[1:4] for _ in range(n)]
    return (float(lat[0]), float(lat[4]), float(lat[8])), pos


def write_lammps_inputs(box, pos, work, frames):
    with open(os.path.join(work, "first.data"), "w") as d:
        d.write("first frame\n\n%d atoms\n1 atom types\n\n" % len(pos))
        for a, L in zip("xyz", box):
            d.write("0 %.10g %slo %shi\n" % (L, a, a))
        d.write("\nMasses\n\n1 1.0\n\nAtoms # atomic\n\n")
        for i, p in enumerate(pos):
            d.write("%d 1 %s %s %s\n" % (i + 1, p[0], p[1], p[2]))
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
rerun traj.dump last %d dump x y z box yes
""" % (frames - 1))


def write_gro(box, pos, work):
    with open(os.path.join(work, "first.gro"), "w") as d:
        d.write("LJ\n%d\n" % len(pos))
        for i, p in enumerate(pos):
            d.write("%5d%-5s%5s%5d%8.3f%8.3f%8.3f\n" % ((i // 1000 + 1) % 100000, "LJ", "Ar", (i + 1) % 100000,
                                                      float(p[0]) / 10, float(p[1]) / 10, float(p[2]) / 10))
        d.write("%10.5f%10.5f%10.5f\n" % tuple(L / 10 for L in box))


# Every Python peer: argv = trajectory, atoms, frames in it, seconds; runs
# chunk(start, stop) over frame ranges until the seconds are spent (from its
# start) or the frames end; prints its g(r) maximum and "frames N" last.
BUDGET = r"""
import sys, time
T0 = time.perf_counter()
def budgeted(chunk, nframes, seconds):
    done, size, gmax = 0, 1, None
    while done < nframes:
        stop = min(nframes, done + size)
        t = time.perf_counter()
        gmax = chunk(done, stop)
        rate = (time.perf_counter() - t) / (stop - done)
        done = stop
        left = seconds - (time.perf_counter() - T0)
        if left <= 0:
            break
        size = max(1, int(left / rate))
    print("g(r) max %.4f" % gmax)
    print("frames %d" % done)
"""

MDA_RDF = BUDGET + r"""
import MDAnalysis as mda
from MDAnalysis.analysis.rdf import InterRDF
u = mda.Universe.empty(int(sys.argv[2]), trajectory=True)
u.load_new(sys.argv[1])
def chunk(start, stop):
    r = InterRDF(u.atoms, u.atoms, nbins=200, range=(0.0, 4.0), exclusion_block=(1, 1)).run(start=start, stop=stop)
    return float(r.results.rdf.max())
budgeted(chunk, int(sys.argv[3]), float(sys.argv[4]))
"""

FREUD_MDA = BUDGET + r"""
import freud, MDAnalysis as mda
u = mda.Universe.empty(int(sys.argv[2]), trajectory=True)
u.load_new(sys.argv[1])
def chunk(start, stop):
    rdf = freud.density.RDF(bins=200, r_max=4.0)
    for ts in u.trajectory[start:stop]:
        box = freud.box.Box.from_box(ts.dimensions[:3])
        rdf.compute(system=(box, box.wrap(u.atoms.positions)), reset=False)
    return float(rdf.rdf.max())
budgeted(chunk, int(sys.argv[3]), float(sys.argv[4]))
"""

FREUD_NUMPY = BUDGET + r"""
import numpy as np, freud
f = open(sys.argv[1])
def chunk(start, stop):
    rdf = freud.density.RDF(bins=200, r_max=4.0)
    for _ in range(start, stop):
        n = int(f.readline())
        lat = f.readline().split('Lattice="')[1].split('"')[0].split()
        pos = np.loadtxt(f, usecols=(1, 2, 3), max_rows=n, dtype=np.float32)
        box = freud.box.Box.from_box([float(lat[0]), float(lat[4]), float(lat[8])])
        rdf.compute(system=(box, box.wrap(pos)), reset=False)
    return float(rdf.rdf.max())
budgeted(chunk, int(sys.argv[3]), float(sys.argv[4]))
"""

CURDF = BUDGET + r"""
import importlib.util, types
if importlib.util.find_spec("matplotlib") is None:  # cuRDF imports it only for plot_rdf (peers_pack.sh)
    sys.modules["curdf.plotting"] = types.SimpleNamespace(plot_rdf=None)
import MDAnalysis as mda, torch
from curdf import rdf
def chunk(start, stop):
    u = mda.Universe.empty(int(sys.argv[2]), trajectory=True)  # rdf() adds a transformation to it
    u.load_new(sys.argv[1])
    bins, gr = rdf(u, species_a="LJ", r_min=0.0, r_max=4.0, nbins=200, start=start, stop=stop)
    return float(gr.max())
budgeted(chunk, int(sys.argv[3]), float(sys.argv[4]))
"""


def make_trajectory(path, frames, atoms, jobs):
    """gen_lj_trajectory.py in --jobs pieces (--first), concatenated."""
    gen = os.path.join(HERE, "..", "gen_lj_trajectory.py")
    jobs = max(1, min(jobs, frames))
    bounds = [frames * k // jobs for k in range(jobs + 1)]
    procs = []
    for k in range(jobs):
        part = "%s.part%d" % (path, k)
        procs.append((part, subprocess.Popen([sys.executable, gen, "--frames", str(bounds[k + 1] - bounds[k]),
                                              "--first", str(bounds[k]), "--atoms", str(atoms), "-o", part],
                                             stderr=subprocess.DEVNULL)))
    for part, p in procs:
        if p.wait() != 0:
            sys.exit("e2e_side_by_side: gen_lj_trajectory.py failed on %s" % part)
    with open(path + ".part", "wb") as out:
        for part, _ in procs:
            with open(part, "rb") as f:
                shutil.copyfileobj(f, out, 1 << 24)
            os.remove(part)
    os.replace(path + ".part", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frames", type=int, default=50)
    ap.add_argument("--atoms", type=int, default=32000)
    ap.add_argument("--mdnl", default="build/mdnl")
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--work", default="build/e2e")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes writing the trajectory")
    ap.add_argument("--peer-seconds", type=float, default=20.0, help="Python peers stop after this (default 20)")
    ap.add_argument("--peer-frames", type=int, help="frames LAMMPS and gmx read (default all)")
    ap.add_argument("--site", action="append", default=[], help="directory put first on the peers' PYTHONPATH")
    ap.add_argument("--python", help="interpreter tried first for the Python peers")
    ap.add_argument("--skip", default="", help="tools not to run: " + ",".join(TOOLS))
    a = ap.parse_args()
    skip = set(s for s in a.skip.split(",") if s)
    if skip - set(TOOLS):
        ap.error("--skip takes %s" % ",".join(TOOLS))
    mdnl = os.path.abspath(a.mdnl)
    work = os.path.abspath(a.work)
    sites = [os.path.abspath(s) for s in a.site]
    for s in sites:
        if not os.path.isdir(s):
            ap.error("--site %s: not a directory" % s)
    env = python_env(sites)
    if a.python:
        PYTHONS.insert(0, shutil.which(a.python) or a.python)
    os.makedirs(work, exist_ok=True)
    xyz = os.path.join(work, "lj_%dx%d.extxyz" % (a.frames, a.atoms))
    t0 = time.perf_counter()
    if not os.path.exists(xyz):
        make_trajectory(xyz, a.frames, a.atoms, a.jobs)
    stem = xyz[:-len(".extxyz")]
    h5, xtc, dump = stem + ".h5", stem + ".xtc", os.path.join(work, "traj.dump")
    outs = [h5, xtc] + ([dump] if "lammps" not in skip and (shutil.which("lmp") or shutil.which("lmp_serial")) else [])
    for out in outs:
        if not os.path.exists(out):
            subprocess.run([mdnl, "convert", xyz, out + ".part", "--to",
                            {".h5": "h5md", ".xtc": "xtc", ".dump": "lammps-dump"}[out[out.rfind("."):]], "--quiet"],
                           check=True)
            os.replace(out + ".part", out)
    print("trajectory ready in %.1f s" % (time.perf_counter() - t0), file=sys.stderr, flush=True)
    box, pos = first_frame(xyz)
    natoms, nframes = len(pos), a.frames
    peer_frames = min(nframes, a.peer_frames or nframes)
    rows, notes = [], []
    py_mda = python_with(env, "MDAnalysis")
    if py_mda:  # MDAnalysis writes the XTC's frame offsets on first use: not any tool's time
        subprocess.run([py_mda, "-c", "import sys, MDAnalysis as m; m.Universe.empty(int(sys.argv[2]), "
                        "trajectory=True).load_new(sys.argv[1])", xtc, str(natoms)], env=env, capture_output=True)

    def add(tool, fmt, computes, cmd, frames=None, gmax=gmax_printed):
        runs = []
        try:
            for _ in range(a.repeat):
                wall, got, out = run_once(cmd, work, env)
                runs.append((wall, got if got is not None else frames))
            g = gmax(out)
        except (RuntimeError, OSError, ValueError) as e:
            notes.append("%s: %s" % (tool, e))
            return
        wall, got = sorted(runs, key=lambda r: r[0] / r[1])[len(runs) // 2]
        rows.append({"tool": tool, "input": fmt, "computes": computes, "frames": got, "seconds": wall,
                     "frames_per_s": got / wall, "g_max": g})
        print("%s: %d frames in %.2f s" % (tool, got, wall), file=sys.stderr, flush=True)

    if "mdnl" not in skip:
        add("mdnl run (%s)" % a.backend, "H5MD", "RDF + LJ energy",
            [mdnl, "run", h5, "-c", "2.5", "--pair", "lj:epsilon=1,sigma=1", "--rmax", "4", "--bins", "200",
             "--backend", a.backend, "-o", os.path.join(work, "mdnl_res.h5"), "--quiet", "--no-progress"], nframes,
            lambda _: gmax_mdnl(env, os.path.join(work, "mdnl_res.h5")))
    budget = [str(natoms), str(nframes), str(a.peer_seconds)]
    if "mdanalysis" not in skip:
        if py_mda:
            add("MDAnalysis InterRDF", "XTC", "RDF", [py_mda, "-c", MDA_RDF, xtc] + budget)
        else:
            notes.append("MDAnalysis: not installed (skipped)")
    if "freud" not in skip:
        py = python_with(env, "freud", "MDAnalysis")
        if py:
            add("freud RDF (MDAnalysis feed)", "XTC", "RDF", [py, "-c", FREUD_MDA, xtc] + budget)
        else:
            py = python_with(env, "freud", "numpy")
            if py:
                add("freud RDF (numpy feed)", "ext. XYZ", "RDF", [py, "-c", FREUD_NUMPY, xyz] + budget)
                notes.append("freud: no interpreter has both freud and MDAnalysis; fed by numpy from the extended XYZ")
            else:
                notes.append("freud: not installed (skipped; pip install freud-analysis, or peers_pack.sh)")
    if "curdf" not in skip:
        py = python_with(env, "MDAnalysis", "torch", "tqdm", "nvalchemiops.torch.neighbors", finds=("curdf",))
        if py:
            cmd = [py, "-c", CURDF, xtc]
            try:  # Warp compiles its kernels on first use and caches them: one untimed frame first
                run_once(cmd + [str(natoms), "1", "0"], work, env)
            except RuntimeError as e:
                notes.append("cuRDF warm-up: %s" % e)
            add("cuRDF (MDAnalysis feed)", "XTC", "RDF", cmd + budget)
        else:
            notes.append("cuRDF: no interpreter imports MDAnalysis, torch and nvalchemiops and finds curdf (skipped; "
                         "peers_pack.sh and alchemi_pack.sh, --site)")
    if "lammps" not in skip:
        lmp = shutil.which("lmp") or shutil.which("lmp_serial")
        if lmp:
            write_lammps_inputs(box, pos, work, peer_frames)
            add("LAMMPS rerun", "dump", "RDF + LJ energy",
                [lmp, "-in", "rerun.in", "-log", "rerun.log", "-screen", "none"], peer_frames,
                lambda _: gmax_lammps(work))
        else:
            notes.append("LAMMPS: lmp not found (skipped)")
    if "gmx" not in skip:
        gmx = shutil.which("gmx") or shutil.which("gmx_mpi")
        if gmx:
            write_gro(box, pos, work)
            gxtc = xtc
            if peer_frames < nframes:  # the XTC's times are all 0: gmx's -b/-e cannot pick frames
                gxtc = "%s.first%d.xtc" % (stem, peer_frames)
                subprocess.run([mdnl, "convert", xtc, gxtc, "--frames", "0:%d" % peer_frames, "--quiet"], check=True)
            add("gmx rdf", "XTC", "RDF", [gmx, "-quiet", "rdf", "-f", gxtc, "-s", "first.gro", "-ref", "all",
                                          "-sel", "all", "-bin", "0.002", "-rmax", "0.4", "-o", "gmx_rdf.xvg",
                                          "-xvg", "none"], peer_frames, lambda _: gmax_gmx(work))
        else:
            notes.append("gmx: not installed (skipped; apt-get install gromacs)")

    base = rows[0]["frames_per_s"] if rows and rows[0]["tool"].startswith("mdnl") else None
    peers = [r["frames_per_s"] for r in rows if not r["tool"].startswith("mdnl")]
    lines = ["%d frames x %d atoms, RDF to 4 sigma (200 bins) and LJ energy (cutoff 2.5); wall seconds of each "
             "whole process, median of %d; Python peers stop after %g s, LAMMPS and gmx read %d frames"
             % (nframes, natoms, a.repeat, a.peer_seconds, peer_frames), "",
             "| tool | input | computes | frames | wall s | frames/s | mdnl x | g(r) max |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append("| %s | %s | %s | %d | %.2f | %.2f | %s | %s |" % (
            r["tool"], r["input"], r["computes"], r["frames"], r["seconds"], r["frames_per_s"],
            "%.1f" % (base / r["frames_per_s"]) if base else "-", "-" if r["g_max"] is None else "%.3f" % r["g_max"]))
    if base and peers:
        lines += ["", "mdnl against the fastest peer: %.1fx" % (base / max(peers))]
    lines += [""] + ["- " + n for n in notes]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(work, "side_by_side_e2e.md"), "w") as f:
        f.write(text)
    with open(os.path.join(work, "side_by_side_e2e.json"), "w") as f:
        json.dump({"frames": nframes, "atoms": natoms, "rows": rows, "notes": notes}, f, indent=1)


if __name__ == "__main__":
    main()

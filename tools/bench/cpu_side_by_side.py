#!/usr/bin/env python3
"""cpu_side_by_side.py — mdnl's CPU backend against LAMMPS, vesin, freud and
SciPy cKDTree on a real Lennard-Jones liquid (issue 19).

    tools/bench/cpu_side_by_side.py [--mdnl build/mdnl] [--work build/bench-cpu]
                                    [--repeat 3] [--threads 1,2] [--skip-make]

Needs: `lmp` (Debian's lammps), python3 with numpy, h5py, vesin, freud-analysis,
scipy (pip install vesin freud-analysis scipy h5py). Every number is the
median of --repeat runs, the tools interleaved run by run. On a shared machine
wall times follow the other jobs; the table's ratios are of CPU seconds (user
+ sys of the process: getrusage of the child, process_time in Python), which
do not count the time a process waits for a core.

Workloads (made from data/lj-liquid-131k.h5md by tools/make_lj_liquid.py):
  lj1m-sorted / lj1m-shuffled  the 2x2x2 replica, 1,048,576 atoms, id order /
                               a fixed random order; neighbor list, cutoff 2.5,
                               half list
  lj131k-10f                   10 frames continued from the snapshot with
                               LAMMPS; RDF r_max 4, 200 bins, and LJ energy
Timed:
  mdnl      whole process CPU seconds, --json stage seconds (`neighbors` /
            `histogram` / `energy`: wall, excluding read and write), wall
  LAMMPS    neighbor build: `run 10` with `neighbor 0.0 bin`, `neigh_modify
            every 1 delay 0 check no` minus the same with one build, CPU / 10
            (a half list, newton on, 1 rank; the stage column is the loop's
            Neigh wall / 10); whole process `run 0` (read_data, one build, one
            force evaluation); RDF: `rerun` of the 10 frames with `compute rdf
            200 cutoff 4.0` minus the same rerun without it; energy: the rerun
            without it (read, neighbor lists, forces and energy of 10 frames)
  vesin     NeighborList(cutoff=2.5, full_list=False).compute(..., "ijd")
  freud     AABBQuery(...).query(points, r_max=2.5, exclude_ii=True).toNeighborList()
            (a full list, freud has no half query) and freud.density.RDF, 1 thread
  cKDTree   cKDTree(points, boxsize=L).query_pairs(2.5, output_type="ndarray")
            (half list, indices only)
Prints a markdown table (seconds and mdnl's ratio) for docs/performance.md.
"""
import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
MAKE = os.path.join(ROOT, "tools", "make_lj_liquid.py")


CPU = {}  # the CPU seconds (user + sys) of the last sh() call


def sh(cmd, env=None, **kw):
    """Runs cmd; returns (wall seconds, stdout, stderr) and leaves its CPU seconds in CPU["last"]."""
    e = dict(os.environ)
    if env:
        e.update(env)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=e, check=True, capture_output=True, text=True, **kw)
    wall = time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU["last"] = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return wall, r.stdout, r.stderr


def make_workloads(work):
    os.makedirs(work, exist_ok=True)
    snap = os.path.join(ROOT, "data", "lj-liquid-131k.h5md")
    jobs = [
        ("lj1m-sorted.h5md", ["replicate", snap]),
        ("lj1m-shuffled.h5md", ["replicate", snap, "--shuffle", "20261125"]),
        ("lj131k-10f.h5md", ["trajectory", snap, "--frames", "10"]),
    ]
    for name, args in jobs:
        out = os.path.join(work, name)
        if not os.path.exists(out):
            sh([sys.executable, MAKE] + args + ["-o", out])
    for name in ("lj1m-sorted", "lj1m-shuffled"):
        data = os.path.join(work, name + ".data")
        if not os.path.exists(data):
            sh([sys.executable, MAKE, "lammps-data", os.path.join(work, name + ".h5md"), "-o", data])
    dump = os.path.join(work, "lj131k-10f.dump")
    if not os.path.exists(dump):
        write_dump(os.path.join(work, "lj131k-10f.h5md"), dump, os.path.join(work, "lj131k-10f.data"))


def load_h5md(path, frame=0):
    import h5py
    with h5py.File(path, "r") as f:
        g = f["particles/all"]
        return g["box/edges"][()].astype(float), g["position/value"][frame].astype(float)


def write_dump(h5, dump, data):
    import h5py
    import numpy as np
    with h5py.File(h5, "r") as f:
        g = f["particles/all"]
        edges = g["box/edges"][()].astype(float)
        pos = g["position/value"][()].astype(float)
        steps = g["position/step"][()]
    n = pos.shape[1]
    ids = np.arange(1, n + 1)
    with open(dump, "w") as out:
        for t in range(pos.shape[0]):
            out.write("ITEM: TIMESTEP\n%d\nITEM: NUMBER OF ATOMS\n%d\nITEM: BOX BOUNDS pp pp pp\n" % (steps[t], n))
            for k in range(3):
                out.write("0 %.17g\n" % edges[k])
            out.write("ITEM: ATOMS id x y z\n")
            np.savetxt(out, np.column_stack([ids, pos[t]]), fmt=["%d", "%.9g", "%.9g", "%.9g"])
    sh([sys.executable, MAKE, "lammps-data", h5, "-o", data])


# ---- mdnl ---------------------------------------------------------------

def mdnl_json(mdnl, args, threads, stage):
    wall, out, _ = sh([mdnl] + args + ["--json", "--quiet"], env={"OMP_NUM_THREADS": str(threads)})
    j = json.loads(out.strip().splitlines()[-1])
    return j["seconds"][stage], wall, CPU["last"]


# ---- LAMMPS -------------------------------------------------------------

LMP_HEAD = """units lj
atom_style atomic
read_data {data}
mass 1 1.0
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
"""


def lammps(script, workdir):
    with tempfile.TemporaryDirectory(dir=workdir) as d:
        inp = os.path.join(d, "in.lmp")
        with open(inp, "w") as f:
            f.write(script)
        wall, _, _ = sh(["lmp", "-in", inp, "-log", os.path.join(d, "log"), "-screen", "none"],
                        env={"OMP_NUM_THREADS": "1"}, cwd=d)
        with open(os.path.join(d, "log")) as f:
            log = f.read()
    return wall, log, CPU["last"]


def section(log, name):
    """Total seconds of a row of LAMMPS's MPI task timing breakdown (last occurrence)."""
    rows = re.findall(r"^%s\s*\|\s*([0-9.eE+-]+)" % name, log, re.M)
    return float(rows[-1]) if rows else float("nan")


def lammps_neigh(data, work):
    """(Neigh wall seconds per build from the timing breakdown, CPU seconds per build): run 10 rebuilding the
    list every step, against run 10 that builds it once, both from the same read_data."""
    base = LMP_HEAD.format(data=data) + "neighbor 0.0 bin\nvelocity all create 0.9 1 loop geom\nfix 1 all nve\n"
    _, log, cpu10 = lammps(base + "neigh_modify every 1 delay 0 check no\nrun 10\n", work)
    _, _, cpu0 = lammps(base + "neigh_modify every 1000 delay 0 check no\nrun 10\n", work)
    return section(log, "Neigh") / 10.0, (cpu10 - cpu0) / 10.0


def lammps_run0(data, work):
    s = LMP_HEAD.format(data=data) + "neighbor 0.0 bin\nrun 0\n"
    wall, _, cpu = lammps(s, work)
    return wall, cpu


def lammps_rerun(data, dump, work, rdf):
    s = LMP_HEAD.format(data=data) + "neighbor 0.3 bin\n"
    if rdf:
        s += "comm_modify cutoff 4.5\ncompute r all rdf 200 cutoff 4.0\n" \
             "fix r all ave/time 1 1 1 c_r[*] file rdf.out mode vector\n"
    s += "rerun %s dump x y z box yes\n" % dump
    wall, _, cpu = lammps(s, work)
    return wall, cpu


# ---- Python libraries -----------------------------------------------------

def py_time(fn, *a):
    """(CPU seconds of this process, wall seconds, result); the libraries run on one thread."""
    c0, t0 = time.process_time(), time.perf_counter()
    r = fn(*a)
    return time.process_time() - c0, time.perf_counter() - t0, r


def vesin_half(edges, pos):
    import numpy as np
    from vesin import NeighborList
    nl = NeighborList(cutoff=2.5, full_list=False)
    i, j, d = nl.compute(points=pos, box=np.diag(edges), periodic=True, quantities="ijd")
    return len(i)


def freud_full(edges, pos):
    import freud
    freud.parallel.set_num_threads(1)  # per core, as the others
    box = freud.box.Box.from_box(edges)
    p = pos - edges / 2  # freud's box is centred on the origin
    nl = freud.locality.AABBQuery(box, p).query(p, dict(r_max=2.5, exclude_ii=True)).toNeighborList()
    return len(nl)


def ckdtree_half(edges, pos):
    import numpy as np
    from scipy.spatial import cKDTree
    t = cKDTree(np.mod(pos, edges), boxsize=edges)
    return len(t.query_pairs(2.5, output_type="ndarray"))


def freud_rdf(h5):
    import freud
    import h5py
    freud.parallel.set_num_threads(1)
    with h5py.File(h5, "r") as f:
        g = f["particles/all"]
        edges = g["box/edges"][()].astype(float)
        pos = g["position/value"][()].astype(float)
    box = freud.box.Box.from_box(edges)
    r = freud.density.RDF(bins=200, r_max=4.0)
    for t in range(pos.shape[0]):
        r.compute((box, pos[t] - edges / 2), reset=False)
    return float(r.rdf[100])


def table(R, work):
    """The markdown table of the medians so far, on stdout and into WORK/side_by_side.md. Ratios: mdnl's
    1-thread CPU seconds over the tool's CPU seconds (below 1: mdnl is faster per core)."""
    lines = ["| workload | tool | CPU s | stage wall s | whole wall s | mdnl 1 thread CPU / tool CPU |",
             "|---|---|---|---|---|---|"]
    groups = []
    for (w, o, tool, kind) in R:
        if (w, o) not in groups:
            groups.append((w, o))
    for (w, o) in groups:
        tools = []
        for (w2, o2, tool, kind) in R:
            if (w2, o2) == (w, o) and tool not in tools:
                tools.append(tool)
        ref = med(R.get((w, o, "mdnl 1t", "cpu"), []))
        name = {"nl": "neighbor list 1M LJ liquid, 2.5σ, half, %s" % o,
                "rdf": "RDF 131k LJ liquid, 4σ, 200 bins, %s" % o, "energy": "LJ energy 131k liquid, 2.5σ, %s" % o}[w]
        for tool in tools:
            c = med(R.get((w, o, tool, "cpu"), []))
            st = med(R.get((w, o, tool, "stage"), []))
            wl = med(R.get((w, o, tool, "wall"), []))
            pairs = R.get((w, o, tool, "pairs"))
            label = tool + (" (%d pairs)" % pairs[0] if pairs else "")
            f = lambda x: "%.3f" % x if x == x else "–"
            r = "%.2f" % (ref / c) if c == c and ref == ref and not tool.startswith("mdnl") and c > 0 else ""
            lines.append("| %s | %s | %s | %s | %s | %s |" % (name, label, f(c), f(st), f(wl), r))
    with open(os.path.join(work, "side_by_side.json"), "w") as fp:
        json.dump({"|".join(k): v for k, v in R.items()}, fp, indent=1)
    with open(os.path.join(work, "side_by_side.md"), "w") as fp:
        fp.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mdnl", default=os.path.join(ROOT, "build", "mdnl"))
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "bench-cpu"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--skip-make", action="store_true")
    ap.add_argument("--only", default="nl,rdf,energy,py", help="subset of nl,rdf,energy,py")
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    if not a.skip_make:
        make_workloads(work)
    threads = [int(t) for t in a.threads.split(",")]
    only = set(a.only.split(","))
    W = lambda n: os.path.join(work, n)
    R = {}

    def add(key, v):
        R.setdefault(key, []).append(v)

    for rep in range(a.repeat):
        print("round %d/%d" % (rep + 1, a.repeat), file=sys.stderr)
        if "nl" in only:
            for order in ("sorted", "shuffled"):
                h5 = W("lj1m-%s.h5md" % order)
                for t in threads:
                    s, w, c = mdnl_json(a.mdnl, ["neighbors", h5, "-c", "2.5"], t, "neighbors")
                    add(("nl", order, "mdnl %dt" % t, "stage"), s)
                    add(("nl", order, "mdnl %dt" % t, "wall"), w)
                    add(("nl", order, "mdnl %dt" % t, "cpu"), c)
                    s, w, c = mdnl_json(a.mdnl, ["neighbors", h5, "-c", "2.5", "-o", W("x.h5")], t, "neighbors")
                    add(("nl", order, "mdnl %dt -o x.h5" % t, "wall"), w)
                    add(("nl", order, "mdnl %dt -o x.h5" % t, "cpu"), c)
                neigh, neigh_cpu = lammps_neigh(W("lj1m-%s.data" % order), work)
                add(("nl", order, "LAMMPS 1 rank", "stage"), neigh)
                add(("nl", order, "LAMMPS 1 rank", "cpu"), neigh_cpu)
                w, c = lammps_run0(W("lj1m-%s.data" % order), work)
                add(("nl", order, "LAMMPS 1 rank, run 0", "wall"), w)
                add(("nl", order, "LAMMPS 1 rank, run 0", "cpu"), c)
                if "py" in only:
                    edges, pos = load_h5md(h5)
                    for name, fn in (("vesin", vesin_half), ("cKDTree", ckdtree_half), ("freud (full)", freud_full)):
                        c, w, npairs = py_time(fn, edges, pos)
                        add(("nl", order, name, "wall"), w)
                        add(("nl", order, name, "cpu"), c)
                        add(("nl", order, name, "pairs"), npairs)
        if "rdf" in only or "energy" in only:
            h5, data, dump = W("lj131k-10f.h5md"), W("lj131k-10f.data"), W("lj131k-10f.dump")
            wall0, cpu0 = lammps_rerun(data, dump, work, rdf=False)
            if "rdf" in only:
                for t in threads:
                    s, w, c = mdnl_json(a.mdnl, ["rdf", h5, "--rmax", "4", "--bins", "200", "-o", W("r.tsv")], t,
                                        "histogram")
                    add(("rdf", "10 frames", "mdnl %dt" % t, "stage"), s)
                    add(("rdf", "10 frames", "mdnl %dt" % t, "wall"), w)
                    add(("rdf", "10 frames", "mdnl %dt" % t, "cpu"), c)
                wall1, cpu1 = lammps_rerun(data, dump, work, rdf=True)
                add(("rdf", "10 frames", "LAMMPS 1 rank, compute rdf (rerun with - without)", "wall"), wall1 - wall0)
                add(("rdf", "10 frames", "LAMMPS 1 rank, compute rdf (rerun with - without)", "cpu"), cpu1 - cpu0)
                if "py" in only:
                    c, w, _ = py_time(freud_rdf, h5)
                    add(("rdf", "10 frames", "freud", "wall"), w)
                    add(("rdf", "10 frames", "freud", "cpu"), c)
            if "energy" in only:
                for t in threads:
                    s, w, c = mdnl_json(a.mdnl, ["energy", h5, "-c", "2.5", "--pair", "lj:epsilon=1,sigma=1"], t,
                                        "energy")
                    add(("energy", "10 frames", "mdnl %dt" % t, "stage"), s)
                    add(("energy", "10 frames", "mdnl %dt" % t, "wall"), w)
                    add(("energy", "10 frames", "mdnl %dt" % t, "cpu"), c)
                add(("energy", "10 frames", "LAMMPS 1 rank (rerun: read, neighbors, forces)", "wall"), wall0)
                add(("energy", "10 frames", "LAMMPS 1 rank (rerun: read, neighbors, forces)", "cpu"), cpu0)
        table(R, work)


if __name__ == "__main__":
    main()

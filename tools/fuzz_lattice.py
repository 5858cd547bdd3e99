#!/usr/bin/env python3
"""tools/fuzz_lattice.py — mutates the Lattice of the extended-XYZ fixtures in
data/ (tiny, huge, near-degenerate, negative, mixed cells) and runs the
computing commands on each mutant, as issue 20 found the runaway frames:

    tools/fuzz_lattice.py [--mdnl build/mdnl] [--n 200] [--seed 1] [--timeout 10]

Every run must end within the timeout with exit 0, 2, 3 or 4 (never a
signal, a crash or the timeout), and leave no temporary file
(.NAME.tmp-PID-N) behind. Prints one line per failure and a summary: runs,
exit codes, the slowest runs. Exit status 1 when anything failed.
"""
import argparse
import glob
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

COMMANDS = [
    ["neighbors", "{f}", "-c", "2.0", "-o", "out.tsv"],
    ["rdf", "{f}", "--rmax", "3.0", "--bins", "30", "-o", "rdf.tsv"],
    ["energy", "{f}", "-c", "2.0", "--pair", "lj:epsilon=1,sigma=1", "-o", "e.tsv"],
    ["run", "{f}", "-c", "2.0", "--pair", "lj:epsilon=1,sigma=1", "--rmax", "3.0", "--bins", "30", "-o", "res.h5"],
    ["run", "{f}", "-c", "2.0", "--neighbors", "-o", "outdir/"],
]

LATTICE = re.compile(r'([Ll]attice=")([^"]*)(")')


def mutate(values, rng):
    """Returns (kind, nine numbers) from the nine numbers of a Lattice."""
    h = [list(values[0:3]), list(values[3:6]), list(values[6:9])]
    kind = rng.choice(["tiny", "huge", "near-parallel", "negative", "mixed", "one-tiny", "extreme"])
    if kind == "tiny":
        s = 10.0 ** -rng.uniform(1, 12)
        h = [[x * s for x in r] for r in h]
    elif kind == "huge":
        s = 10.0 ** rng.uniform(1, 15)
        h = [[x * s for x in r] for r in h]
    elif kind == "near-parallel":
        a, b = rng.sample(range(3), 2)
        eps = 10.0 ** -rng.uniform(1, 12)
        h[b] = [x + eps * rng.uniform(-1, 1) for x in h[a]]
    elif kind == "negative":
        for r in range(3):
            for c in range(3):
                if rng.random() < 0.4:
                    h[r][c] = -h[r][c]
    elif kind == "one-tiny":
        r = rng.randrange(3)
        s = 10.0 ** -rng.uniform(1, 12)
        h[r] = [x * s for x in h[r]]
    elif kind == "extreme":
        v = rng.choice([1e-300, 1e-30, 1e30, 1e300, 5e-324, 1.7e308])
        r, c = rng.randrange(3), rng.randrange(3)
        h[r][c] = v
    else:  # mixed: every entry scaled on its own, some signs flipped
        h = [[x * 10.0 ** rng.uniform(-8, 4) * rng.choice([1, 1, -1]) + rng.uniform(-1, 1) * 10.0 ** -rng.uniform(0, 9)
              for x in r] for r in h]
    return kind, [x for r in h for x in r]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mdnl", default="build/mdnl")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=10.0)
    args = ap.parse_args()
    mdnl = os.path.abspath(args.mdnl)
    rng = random.Random(args.seed)
    sources = []
    for path in sorted(glob.glob("data/*.extxyz") + glob.glob("data/h5md/*.extxyz")):
        text = open(path).read()
        if LATTICE.search(text):
            sources.append((path, text))
    work = tempfile.mkdtemp(prefix="mdnl-fuzz-")
    failures, times, codes = [], [], {}
    try:
        for k in range(args.n):
            path, text = rng.choice(sources)
            m = LATTICE.search(text)
            kind, nums = mutate([float(x) for x in m.group(2).split()], rng)
            new = " ".join(repr(x) for x in nums)
            # every frame's Lattice gets the same mutant
            mutant = LATTICE.sub(lambda mm: mm.group(1) + new + mm.group(3), text)
            fpath = os.path.join(work, "mutant-%03d.extxyz" % k)
            with open(fpath, "w") as fp:
                fp.write(mutant)
            for cmd in COMMANDS:
                argv = [mdnl] + [a.format(f=fpath) for a in cmd] + ["--quiet"]
                t0 = time.monotonic()
                try:
                    r = subprocess.run(argv, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       timeout=args.timeout)
                    rc, err = r.returncode, r.stderr.decode(errors="replace").strip()
                except subprocess.TimeoutExpired:
                    rc, err = "timeout", ""
                dt = time.monotonic() - t0
                times.append((dt, k, kind, os.path.basename(path), cmd[0], rc))
                codes[rc] = codes.get(rc, 0) + 1
                left = [n for n in os.listdir(work) if ".tmp-" in n]
                left += [os.path.join("outdir", n) for n in os.listdir(os.path.join(work, "outdir"))
                         if ".tmp-" in n] if os.path.isdir(os.path.join(work, "outdir")) else []
                bad = rc not in (0, 2, 3, 4) or left or (rc != 0 and "\n" in err)
                if bad:
                    failures.append("mutant %d (%s of %s, Lattice=\"%s\") %s: rc %s, left %s, stderr %s" %
                                    (k, kind, path, new, cmd[0], rc, left, err[:300]))
                    print(failures[-1], flush=True)
                for n in left:
                    os.unlink(os.path.join(work, n))
                for n in ("out.tsv", "rdf.tsv", "e.tsv", "res.h5"):
                    if os.path.exists(os.path.join(work, n)):
                        os.unlink(os.path.join(work, n))
                shutil.rmtree(os.path.join(work, "outdir"), ignore_errors=True)
            os.unlink(fpath)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    times.sort(reverse=True)
    print("%d mutants, %d runs, exit codes %s, %d failures" %
          (args.n, len(times), dict(sorted(codes.items(), key=str)), len(failures)))
    print("slowest: " + "; ".join("%.2f s %s mutant %d (%s of %s) rc %s" % (t, c, k, kind, src, rc)
                                  for t, k, kind, src, c, rc in times[:5]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Single-core read throughput of mdnl's XTC, TRR and DCD readers, and the
XTC reader against MDAnalysis' XTCReader (the reference xdrfile C decoder)
on the same file. Not part of CTest. Usage (after a release build, build/):

    /usr/bin/python3 tools/bench_binary_read.py [build/mdnl] [scratch dir]

1. A 100,000-atom x 50-frame water-like XTC written by MDAnalysis
   (precision 1000, 20 nm box): MDAnalysis iterating its frames (best of 3,
   the reader already open) against `mdnl run FILE --read-only --json`'s
   "read" seconds (best of 3): frames/s and MB/s of file.
2. 1,000,000-atom frames in each of XTC, TRR and DCD (12 frames, so that
   the page faults of the pipeline's first frames (one per slot) do not dominate): mdnl's MB/s and
   frames/s (the read seconds of --read-only, best of 3).
OMP_NUM_THREADS=1; files are read from the page cache.
"""
import json
import os
import subprocess
import sys
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore")
import MDAnalysis as mda  # noqa: E402
from MDAnalysis.coordinates.DCD import DCDWriter  # noqa: E402
from MDAnalysis.coordinates.TRR import TRRWriter  # noqa: E402
from MDAnalysis.coordinates.XTC import XTCReader, XTCWriter  # noqa: E402

MDNL = sys.argv[1] if len(sys.argv) > 1 else "build/mdnl"
DIR = sys.argv[2] if len(sys.argv) > 2 else "/tmp"
ENV = dict(os.environ, OMP_NUM_THREADS="1")


def water(rng, n, edge):
    o = rng.random((n // 3 + 1, 3)) * edge
    x = np.repeat(o, 3, axis=0)[:n]
    x[1::3] += rng.normal(0, 0.6, (len(x[1::3]), 3))
    x[2::3] += rng.normal(0, 0.6, (len(x[2::3]), 3))
    return x.astype(np.float32)


def write(path, writer, n, nframes, rng, edge):
    u = mda.Universe.empty(n, trajectory=True)
    with writer(path, n) as w:
        for k in range(nframes):
            u.atoms.positions = water(rng, n, edge)
            u.dimensions = [edge, edge, edge, 90, 90, 90]
            w.write(u)


def mdnl_read_seconds(path):
    best = None
    for _ in range(3):
        r = subprocess.run([MDNL, "run", path, "--read-only", "--json", "--backend", "cpu"], capture_output=True,
                           text=True, env=ENV, check=True)
        s = json.loads(r.stdout)["seconds"]["read"]
        best = s if best is None else min(best, s)
    return best


def mda_read_seconds(path):
    best = None
    r = XTCReader(path)
    for _ in range(3):
        t0 = time.perf_counter()
        for ts in r:
            pass
        s = time.perf_counter() - t0
        best = s if best is None else min(best, s)
    return best, len(r)


def main():
    rng = np.random.default_rng(1)
    xtc = os.path.join(DIR, "bench-100k.xtc")
    write(xtc, XTCWriter, 100000, 50, rng, 200.0)
    mb = os.path.getsize(xtc) / 1e6
    m, nfr = mda_read_seconds(xtc)
    d = mdnl_read_seconds(xtc)
    print("100k atoms x %d frames XTC (%.1f MB):" % (nfr, mb))
    print("  MDAnalysis XTCReader  %8.1f frames/s  %7.1f MB/s" % (nfr / m, mb / m))
    print("  mdnl                  %8.1f frames/s  %7.1f MB/s  (%.2fx)" % (nfr / d, mb / d, m / d))
    print("1M atoms, 12 frames:")
    for ext, writer in [("xtc", XTCWriter), ("trr", TRRWriter), ("dcd", DCDWriter)]:
        p = os.path.join(DIR, "bench-1m." + ext)
        write(p, writer, 1000000, 12, rng, 430.0)
        mb = os.path.getsize(p) / 1e6
        s = mdnl_read_seconds(p)
        print("  %s  %6.1f MB  %8.1f MB/s  %6.1f frames/s" % (ext.upper(), mb, mb / s, 12 / s))
    for f in os.listdir(DIR):
        if f.startswith("bench-") or f.startswith(".bench-"):
            os.remove(os.path.join(DIR, f))
    return 0


if __name__ == "__main__":
    sys.exit(main())

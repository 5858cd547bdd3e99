#!/usr/bin/env python3
"""make_liquid_1m.py — the 1M-atom LJ liquid of `mdnl bench` (lj-1m-liquid):
data/lj-liquid-131k.h5md replicated 2 x 2 x 2 (x slowest), atoms shuffled
with a fixed seed, written as one extended-XYZ frame.

    python3 tools/bench/make_liquid_1m.py [-i data/lj-liquid-131k.h5md] -o OUT.extxyz

`mdnl convert OUT.extxyz OUT.h5` makes the H5MD copy. Needs h5py and numpy."""
import argparse

import h5py
import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-i", "--input", default="data/lj-liquid-131k.h5md")
    ap.add_argument("-o", "--output", required=True)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    with h5py.File(a.input, "r") as f:
        pos = np.asarray(f["particles/all/position/value"][0], dtype=np.float64)
        e = f["particles/all/box/edges"]
        edges = np.asarray(e["value"][0] if isinstance(e, h5py.Group) else e[()], dtype=np.float64)
    lx, ly, lz = np.diag(edges) if edges.ndim == 2 else edges
    parts = [pos + np.array([ix * lx, iy * ly, iz * lz])
             for ix in range(2) for iy in range(2) for iz in range(2)]
    big = np.concatenate(parts)
    big = big[np.random.default_rng(a.seed).permutation(len(big))]
    with open(a.output, "w") as out:
        out.write(f"{len(big)}\n")
        out.write(f'Lattice="{2*lx:.10g} 0 0 0 {2*ly:.10g} 0 0 0 {2*lz:.10g}" '
                  'Properties=species:S:1:pos:R:3 pbc="T T T"\n')
        np.savetxt(out, big, fmt="Ar %.9g %.9g %.9g")


if __name__ == "__main__":
    main()

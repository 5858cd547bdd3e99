#!/usr/bin/env python3
"""gen_lj_trajectory.py — a multi-frame Lennard-Jones benchmark trajectory in
extended XYZ: a jittered FCC lattice at reduced density 0.8442 (the LAMMPS
`bench/in.lj` state point), a different seed per frame, periodic in x, y, z.

Usage: tools/gen_lj_trajectory.py --frames 200 --atoms 100000 -o lj.extxyz
       [--density 0.8442] [--jitter 0.05] [--seed 1] [--first 0]

The atom count is the nearest 4*n^3 (FCC, n cells per side) to --atoms; it is
printed on stderr. Uses numpy when present (about 1 s per 100k-atom frame),
else plain Python (slower, same format; the coordinates differ by seed stream).
Frame k has step=k and is seeded with seed + k, so frames are independent
and the file can be regenerated bit for bit; --first K writes frames K..,
so that pieces written in parallel concatenate to the same file.
"""
import argparse
import math
import random
import sys

try:
    import numpy as np
except ImportError:  # the fallback keeps the script usable on a bare host
    np = None


def fcc(n, a):
    basis = [(0.0, 0.0, 0.0), (0.5, 0.5, 0.0), (0.5, 0.0, 0.5), (0.0, 0.5, 0.5)]
    if np is not None:
        g = np.arange(n, dtype=np.float64)
        cells = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 1, 3)
        return ((cells + np.array(basis)[None, :, :]) * a).reshape(-1, 3)
    return [((i + bx) * a, (j + by) * a, (k + bz) * a)
            for i in range(n) for j in range(n) for k in range(n) for (bx, by, bz) in basis]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frames", type=int, default=200)
    ap.add_argument("--atoms", type=int, default=100000)
    ap.add_argument("--density", type=float, default=0.8442)
    ap.add_argument("--jitter", type=float, default=0.05, help="Gaussian sigma of each coordinate (in sigma units)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--first", type=int, default=0, help="step (and seed offset) of the first frame written")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    if args.frames < 1 or args.atoms < 4 or not args.density > 0 or args.first < 0:
        ap.error("--frames >= 1, --atoms >= 4, --density > 0 and --first >= 0 are required")

    n = max(1, round((args.atoms / 4.0) ** (1.0 / 3.0)))
    a = (4.0 / args.density) ** (1.0 / 3.0)
    L = n * a
    natoms = 4 * n ** 3
    base = fcc(n, a)
    header = ('%d\nLattice="%.10f 0 0 0 %.10f 0 0 0 %.10f" Properties=species:S:1:pos:R:3 pbc="T T T" step=%%d\n'
              % (natoms, L, L, L))
    print("gen_lj_trajectory: %d frames x %d atoms (FCC %d^3 cells, a = %.6f, L = %.6f) -> %s"
          % (args.frames, natoms, n, a, L, args.output), file=sys.stderr)
    with open(args.output, "w") as out:
        for k in range(args.first, args.first + args.frames):
            out.write(header % k)
            if np is not None:
                rng = np.random.default_rng(args.seed + k)
                pos = np.mod(base + rng.normal(0.0, args.jitter, base.shape), L)
                # One formatted block per frame: "A x y z" rows.
                lines = "\n".join("A %.6f %.6f %.6f" % (x, y, z) for x, y, z in pos.tolist())
                out.write(lines)
                out.write("\n")
            else:
                rng = random.Random(args.seed + k)
                for (x, y, z) in base:
                    out.write("A %.6f %.6f %.6f\n" % (math.fmod(x + rng.gauss(0, args.jitter) + L, L),
                                                       math.fmod(y + rng.gauss(0, args.jitter) + L, L),
                                                       math.fmod(z + rng.gauss(0, args.jitter) + L, L)))


if __name__ == "__main__":
    main()

#!/usr/bin/python3
"""Writes the RDF fixtures of tests/test_rdf.c: two Metropolis Monte Carlo
liquids (extended XYZ) and MDAnalysis InterRDF reference tables (TSV), into
data/rdf/. Run from the repository root: /usr/bin/python3 tools/mdanalysis_rdf_reference.py
(numpy, MDAnalysis 2.4.2). Deterministic (seeded); the outputs are committed
so the tests need no python.

  lj_liquid.xyz    256 LJ atoms "Ar", rho ~ 0.844, T* = 1.0, 10 frames
  lj_mixture.xyz   Kob-Andersen 80:20 mixture "A"/"B" (205 + 51), rho ~ 1.2, T* = 1.0, 10 frames

Exact binning on both sides. Positions are snapped to a grid of 1/64 sigma
and the box edge is a multiple of 1/64, so every coordinate difference, image
shift and squared distance is exact in float32 (mdnl) and float64
(MDAnalysis). The bin width is 1/32, so a bin edge squared (k/32)^2 is also a
multiple of 1/4096: a squared distance is either exactly on an edge (then the
float32 and float64 square roots are both exact) or at least 1/4096 away.
mdnl and numpy.histogram therefore put every pair in the same bin; the one
catch: a pair exactly on an edge. MDAnalysis's grid search goes through
float32 fractional coordinates, so such a pair may land on either side, and
numpy's last bin is closed (d == r_max counts). The script therefore moves
atoms until no pair sits exactly on any bin edge; every other squared distance
is at least 1/4096 (relative 2e-5) from an edge, far beyond float32 rounding.

InterRDF normalisation (MDAnalysis 2.4.2, analysis/rdf.py, norm="rdf"):
  count[b]  = sum over frames of np.histogram(d, bins, range=(0, r_max)) of
              the capped_distance(g1, g2, r_max, box) pairs: every (a, b) of
              g1 x g2, i.e. ORDERED pairs when g1 is g2, including a == b at
              d = 0 unless exclusion_block=(1, 1) removes index-equal pairs.
  rdf[b]    = count[b] / (n_frames * 4/3 pi (r_hi^3 - r_lo^3) * N / <V>)
              with N = nA * nB - xA * xB * (nA / xA) for exclusion_block
              (xA, xB), i.e. N = nA * (nB - 1) for (1, 1); <V> the mean volume.
mdnl (SPEC 5) uses N = nA * nB and excludes self pairs, so for g1 is g2:
  g_mdnl = rdf_MDA(exclusion_block=(1,1)) * nA (nA - 1) / nA^2
and for g1, g2 disjoint (A != B) the two agree as they are. Volumes are
constant here, so the per-frame and the <V> normalisation coincide.
n(r) reference: cumsum(count) / (nA * n_frames).

Reference TSV columns: r_lo r_hi r g_mda count_mda g_mdnl n; one file per
(fixture, pair): data/rdf/<fixture>_<pair>.tsv, with '# N_A=.. N_B=.. frames=.. exclusion=..'.
"""
import os
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")
import MDAnalysis as mda  # noqa: E402
from MDAnalysis.analysis.rdf import InterRDF  # noqa: E402
from MDAnalysis.coordinates.memory import MemoryReader  # noqa: E402

GRID = 64  # positions on multiples of 1/64
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "rdf")


def fcc(ncell, L):
    a = L / ncell
    base = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    g = np.array([[i, j, k] for i in range(ncell) for j in range(ncell) for k in range(ncell)], float)
    return ((g[:, None, :] + base[None, :, :]).reshape(-1, 3) + 0.25) * a


def mc(pos, L, types, eps, sig, T, sweeps, sample_every, equil, rng, rc=2.5, step=0.1):
    """Metropolis MC with truncated LJ (pair parameters by type)."""
    n = len(pos)
    frames = []
    E = eps[types[:, None], types[None, :]]
    S2 = sig[types[:, None], types[None, :]] ** 2
    acc = 0
    for sweep in range(equil + sweeps):
        for _ in range(n):
            i = rng.integers(n)
            new = (pos[i] + rng.uniform(-step, step, 3)) % L

            def energy(p):
                d = pos - p
                d -= L * np.round(d / L)
                r2 = np.einsum("ij,ij->i", d, d)
                r2[i] = np.inf
                m = r2 < (rc * rc) * S2[i]
                x = S2[i][m] / r2[m]
                x3 = x * x * x
                return np.sum(4 * E[i][m] * (x3 * x3 - x3))

            dE = energy(new) - energy(pos[i])
            if dE <= 0 or rng.random() < np.exp(-dE / T):
                pos[i] = new
                acc += 1
        if sweep >= equil and (sweep - equil) % sample_every == sample_every - 1:
            frames.append(pos.copy())
    print(f"  acceptance {acc / ((equil + sweeps) * n):.2f}", file=sys.stderr)
    return frames


def snap(frames, L_units, rmax, rng):
    """Snaps to the 1/64 grid (integers in [0, L_units)) and moves atoms until
    no pair sits exactly on a bin edge k/32 (r_max included): d2 in units of
    1/4096 is then never 4 k^2."""
    out = []
    for f in frames:
        q = np.round(f * GRID).astype(np.int64) % L_units
        while True:
            d = q[:, None, :] - q[None, :, :]
            d -= L_units * np.round(d / L_units).astype(np.int64)
            d2 = np.einsum("ijk,ijk->ij", d, d)
            k = np.sqrt(d2 / 4.0).round().astype(np.int64)
            on_edge = (4 * k * k == d2) & (d2 <= (rmax * GRID) ** 2)
            bad = np.argwhere(np.triu(on_edge, 1))
            if len(bad) == 0:
                break
            i = bad[0][0]
            q[i] = (q[i] + rng.integers(-1, 2, 3)) % L_units
        out.append(q)
    return out


def write_xyz(path, frames, L, symbols):
    with open(path, "w") as fp:
        for k, q in enumerate(frames):
            fp.write(f"{len(q)}\n")
            fp.write(f'Lattice="{L!r} 0 0 0 {L!r} 0 0 0 {L!r}" Properties=species:S:1:pos:R:3 pbc="T T T" step={k}\n')
            for s, p in zip(symbols, q):
                x = p / GRID
                fp.write(f"{s} {x[0]!r} {x[1]!r} {x[2]!r}\n")


def reference(name, frames, L, symbols, rmax, bins, pairs):
    n = len(symbols)
    coords = np.array([q / GRID for q in frames], dtype=np.float32)
    u = mda.Universe.empty(n, trajectory=True)
    u.add_TopologyAttr("type", symbols)
    u.load_new(coords, format=MemoryReader, dimensions=np.array([L, L, L, 90, 90, 90], dtype=np.float32))
    for a, b in pairs:
        ga = u.atoms if a == "*" else u.select_atoms(f"type {a}")
        gb = u.atoms if b == "*" else u.select_atoms(f"type {b}")
        same = a == b
        excl = (1, 1) if same else None
        r = InterRDF(ga, gb, nbins=bins, range=(0.0, rmax), exclusion_block=excl).run()
        nA, nB = len(ga), len(gb)
        nf = len(frames)
        g_mdnl = r.results.rdf * (nA * (nA - 1) / (nA * nA) if same else 1.0)
        ncum = np.cumsum(r.results.count) / (nA * nf)
        label = "total" if a == "*" else f"{a}-{b}"
        path = os.path.join(OUT, f"{name}_{label}.tsv")
        with open(path, "w") as fp:
            fp.write(f"# N_A={nA} N_B={nB} frames={nf} exclusion={excl} MDAnalysis={mda.__version__}\n")
            fp.write("# r_lo r_hi r g_mda count_mda g_mdnl n\n")
            e = r.results.edges
            for k in range(bins):
                fp.write(f"{e[k]:.9g}\t{e[k+1]:.9g}\t{r.results.bins[k]:.9g}\t{r.results.rdf[k]:.12g}\t"
                         f"{int(r.results.count[k])}\t{g_mdnl[k]:.12g}\t{ncum[k]:.12g}\n")
        print(f"  {path}: max g {g_mdnl.max():.3f}, n(r_max) {ncum[-1]:.2f}", file=sys.stderr)


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20240607)
    # LJ liquid.
    Lu = 430  # 6.71875 sigma: rho = 256 / L^3 = 0.8442
    L = Lu / GRID
    print("lj_liquid", file=sys.stderr)
    fr = mc(fcc(4, L), L, np.zeros(256, int), np.array([[1.0]]), np.array([[1.0]]), 1.0, 200, 20, 100, rng)
    q = snap(fr, Lu, 3.0, rng)
    sym = ["Ar"] * 256
    write_xyz(os.path.join(OUT, "lj_liquid.xyz"), q, L, sym)
    reference("lj_liquid", q, L, sym, 3.0, 96, [("*", "*")])
    # Kob-Andersen mixture.
    Lu = 382  # 5.96875 sigma: rho = 1.2
    L = Lu / GRID
    print("lj_mixture", file=sys.stderr)
    types = np.zeros(256, int)
    types[rng.permutation(256)[:51]] = 1
    eps = np.array([[1.0, 1.5], [1.5, 0.5]])
    sig = np.array([[1.0, 0.8], [0.8, 0.88]])
    fr = mc(fcc(4, L), L, types, eps, sig, 1.0, 200, 20, 100, rng, step=0.08)
    q = snap(fr, Lu, 2.5, rng)
    sym = ["A" if t == 0 else "B" for t in types]
    write_xyz(os.path.join(OUT, "lj_mixture.xyz"), q, L, sym)
    reference("lj_mixture", q, L, sym, 2.5, 80, [("*", "*"), ("A", "A"), ("A", "B"), ("B", "B")])


if __name__ == "__main__":
    main()

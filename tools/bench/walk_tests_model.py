#!/usr/bin/env python3
"""tools/bench/walk_tests_model.py [H5MD] [--cutoff RC] — how many candidate
tests a home atom pays, per hit, under the ways a warp walk can group its home
atoms, counted on a real frame (default: data/lj-liquid-131k.h5md, 2.5 sigma,
periodic orthorhombic box). CPU only (numpy); the figures are the model the
GPU walks' instruction counts follow (tools/bench/RESULTS.md, issue 15).

Schemes (tests are (home atom, candidate image) distance tests, full list):
  cell            dense-walk today: home = a cell (>= rc), candidates = the
                  27 cells' atoms kept where they can be within rc of the home
                  atoms' bounding box;
  cell/2, /4, /8  the same cell's atoms split by the cell's mid-planes in x;
                  x and y; x, y and z: each group pruned against its own box
                  (with x: against its box in the split axes and the home
                  box in the others, a cheaper test);
  block2          home = 2 cells in z (the RDF's blocks), one box;
  cell+d4, +d6,   the cell's box test and, per candidate, slabs along the 4
  +d10, +exact    body diagonals, the 6 face diagonals or all 10 (dropped
                  where its projection is more than rc from the home atoms'
                  projections); +exact: an ideal filter that keeps only
                  candidates within rc of some home atom (the floor of any
                  per-candidate filter with the home group of a cell);
  cluster M       GROMACS-like: atoms sorted by cell then z, cut into
                  clusters of M; candidates = atoms within rc of the home
                  cluster's box (per atom, as the warp prunes);
  pairs MxM       cluster pair lists (GROMACS NBNXM-like): compact
                  clusters of M (x-y columns, z sorted), cluster pairs kept
                  where their boxes come within rc, M x M tests a pair; and
                  "/atom": only the i atoms within rc of the j cluster's box.
Needs numpy, h5py and scipy (Debian: python3-numpy, python3-h5py,
python3-scipy).
"""
import argparse
import math
import sys

import h5py
import numpy as np


def load(path):
    with h5py.File(path, "r") as f:
        g = f["particles/all"]
        pos = np.asarray(g["position/value"][0], dtype=np.float64)
        edges = g["box/edges"]
        box = np.asarray(edges["value"][0] if "value" in edges else edges[()], dtype=np.float64)
    if box.ndim == 2:
        box = np.diag(box)
    return pos, box


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("h5md", nargs="?", default="data/lj-liquid-131k.h5md")
    ap.add_argument("--cutoff", type=float, default=2.5)
    a = ap.parse_args()
    pos, box = load(a.h5md)
    pos = pos - np.floor(pos / box) * box
    n = len(pos)
    rc = a.cutoff
    rc2 = rc * rc
    nc = np.maximum(np.floor(box / rc).astype(int), 3)
    cs = box / nc
    ci = np.minimum((pos / cs).astype(int), nc - 1)
    lin = (ci[:, 0] * nc[1] + ci[:, 1]) * nc[2] + ci[:, 2]
    order = np.argsort(lin, kind="stable")
    lin_s = lin[order]
    starts = np.searchsorted(lin_s, np.arange(nc.prod() + 1))
    ps = pos[order]

    def cell_atoms(x, y, z):
        """slots of cell (x, y, z) wrapped, and the image shift of each"""
        sx, sy, sz = x // nc[0], y // nc[1], z // nc[2]
        c = ((x % nc[0]) * nc[1] + (y % nc[1])) * nc[2] + (z % nc[2])
        return starts[c], starts[c + 1], np.array([sx, sy, sz]) * box

    def candidates(cx, cy, cz, kz=1):
        """positions of the atoms (images) in the cells around home cells (cx, cy, cz .. cz + kz - 1)"""
        out = []
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for dz in range(-1, kz + 1):
                    b, e, sh = cell_atoms(cx + dx, cy + dy, cz + dz)
                    if e > b:
                        out.append(ps[b:e] + sh)
        return np.concatenate(out) if out else np.zeros((0, 3))

    def box_d2(c, lo, hi):
        g = np.maximum(np.maximum(lo - c, c - hi), 0.0)
        return (g * g).sum(axis=1)

    keys = ("cell", "cell/2", "cell/2x", "cell/4", "cell/4x", "cell/8", "cell/8x", "block2",
            "cell+d4", "cell+d6", "cell+d10", "cell+exact")
    d6 = np.array([(1, 1, 0), (1, -1, 0), (1, 0, 1), (1, 0, -1), (0, 1, 1), (0, 1, -1)], float)
    d4 = np.array([(1, 1, 1), (1, 1, -1), (1, -1, 1), (-1, 1, 1)], float)
    d6 /= np.linalg.norm(d6, axis=1)[:, None]
    d4 /= np.linalg.norm(d4, axis=1)[:, None]

    def slabs(home, cand, dirs):
        """candidates whose projection on every direction is within rc of the home atoms' projections"""
        ph, pc = home @ dirs.T, cand @ dirs.T
        return ((pc >= ph.min(axis=0) - rc) & (pc <= ph.max(axis=0) + rc)).all(axis=1)
    tests = {k: 0 for k in keys}
    instr = {k: 0 for k in keys}
    # the warp walk's costs in warp instructions (SASS of dense-walk at 052e71a / 4e0d617): a step of 32
    # candidates (range walk, load, box test, ring push) ~88; each more group's ring push ~10 and box test
    # ~21 (or ~7 a split axis + 3 where only its split axes differ from the home box); a take of 64 (two a
    # lane) ~46.5 a home atom, a last take of <= 32 (one a lane) ~28
    STEP, PUSH, GROUP, AXIS, COMBINE = 88.0, 10.0, 21.0, 7.0, 3.0

    def takes_cost(nh, kept):
        full, rest = divmod(kept, 64)
        c = full * 46.5 * nh
        if rest:
            c += (28.0 if rest <= 32 else 46.5) * nh
        return c

    hits = 0
    for cx in range(nc[0]):
        for cy in range(nc[1]):
            for cz in range(nc[2]):
                c = (cx * nc[1] + cy) * nc[2] + cz
                home = ps[starts[c]:starts[c + 1]]
                if len(home) == 0:
                    continue
                cand = candidates(cx, cy, cz)
                d2 = ((home[:, None, :] - cand[None, :, :]) ** 2).sum(axis=2)
                hits += int((d2 < rc2).sum()) - len(home)  # the atom itself
                lo, hi = home.min(axis=0), home.max(axis=0)
                kb = box_d2(cand, lo, hi) < rc2
                tests["cell"] += len(home) * int(kb.sum())
                for key, dirs in (("cell+d4", d4), ("cell+d6", d6), ("cell+d10", np.vstack([d6, d4]))):
                    tests[key] += len(home) * int((kb & slabs(home, cand, dirs)).sum())
                tests["cell+exact"] += len(home) * int((d2 < rc2).any(axis=0).sum())
                mid = (np.array([cx, cy, cz]) + 0.5) * cs
                steps = -(-len(cand) // 32)
                instr["cell"] += steps * STEP + takes_cost(len(home), int((box_d2(cand, lo, hi) < rc2).sum()))
                for key, axes in (("cell/2", [0]), ("cell/4", [0, 1]), ("cell/8", [0, 1, 2])):
                    grp = np.zeros(len(home), dtype=int)
                    for k, ax in enumerate(axes):
                        grp |= (home[:, ax] >= mid[ax]).astype(int) << k
                    groups = np.unique(grp)
                    instr[key] += steps * (STEP + (len(groups) - 1) * (PUSH + GROUP))
                    for gi in groups:
                        h = home[grp == gi]
                        kept = int((box_d2(cand, h.min(axis=0), h.max(axis=0)) < rc2).sum())
                        tests[key] += len(h) * kept
                        instr[key] += takes_cost(len(h), kept)
                        # the group's box in its split axes only, the whole home box in the others
                        glo, ghi = lo.copy(), hi.copy()
                        for ax in axes:
                            glo[ax], ghi[ax] = h[:, ax].min(), h[:, ax].max()
                        kept = int((box_d2(cand, glo, ghi) < rc2).sum())
                        tests[key + "x"] += len(h) * kept
                        instr[key + "x"] += takes_cost(len(h), kept)
                    instr[key + "x"] += steps * (STEP + (len(groups) - 1) * (PUSH + COMBINE + AXIS * len(axes)))
                if cz % 2 == 0:
                    kz = min(2, nc[2] - cz)
                    hb = ps[starts[c]:starts[c + kz]]
                    if len(hb):
                        cb = candidates(cx, cy, cz, kz)
                        tests["block2"] += len(hb) * int((box_d2(cb, hb.min(axis=0), hb.max(axis=0)) < rc2).sum())
    print("%s: %d atoms, cutoff %.3g, %d x %d x %d cells of %.3f, %.2f atoms a cell, %.2f neighbours an atom"
          % (a.h5md, n, rc, nc[0], nc[1], nc[2], cs.min(), n / nc.prod(), hits / n))
    for k, t in tests.items():
        model = "" if k == "block2" or "+" in k else ", model %6.0f warp instructions a cell" % (instr[k] / nc.prod())
        print("  %-10s %7.1f tests an atom, %.2f a hit%s" % (k, t / n, t / hits, model))
    # clusters of M consecutive slots (cell order, z inside a cell), pruned per atom against the cluster's box
    zs = np.lexsort((ps[:, 2], lin_s))
    pc = ps[zs]
    lc = lin_s[zs]
    for m in (4, 8, 16, 32):
        t = 0
        for b in range(0, n, m):
            h = pc[b:b + m]
            cells = np.unique(lc[b:b + m])
            lo, hi = h.min(axis=0), h.max(axis=0)
            seen = []
            for c in cells:
                cx, r = divmod(int(c), nc[1] * nc[2])
                cy, cz = divmod(r, nc[2])
                seen.append(candidates(cx, cy, cz))
            cand = np.unique(np.concatenate(seen).round(9), axis=0)
            t += len(h) * int((box_d2(cand, lo, hi) < rc2).sum())
        print("  cluster %-2d %7.1f tests an atom, %.2f a hit" % (m, t / n, t / hits))
    # cluster pair lists (GROMACS NBNXM-like): x-y columns of side (M / density)^(1/3), atoms sorted by z in
    # each column and cut into clusters of M; a pair of clusters is kept where their boxes come within rc
    # (periodic, minimum image on the gap), and it costs M_i x M_j tests (or, "/atom", only the i atoms within
    # rc of the j cluster's box: a per-atom mask as the warp's box test makes)
    from scipy.spatial import cKDTree
    for m in (4, 8):
        side = (m * box.prod() / n) ** (1.0 / 3.0)
        ncol = np.maximum(np.floor(box[:2] / side).astype(int), 1)
        col = np.minimum((pos[:, :2] / (box[:2] / ncol)).astype(int), ncol - 1)
        cid = col[:, 0] * ncol[1] + col[:, 1]
        srt = np.lexsort((pos[:, 2], cid))
        cs_sorted = cid[srt]
        rank = np.arange(n) - np.searchsorted(cs_sorted, cs_sorted)  # rank inside its column
        clus = np.unique(np.stack([cs_sorted, rank // m], axis=1), axis=0, return_inverse=True)[1].ravel()
        nclu = clus.max() + 1
        pp = pos[srt]
        lo = np.full((nclu, 3), np.inf)
        hi = np.full((nclu, 3), -np.inf)
        np.minimum.at(lo, clus, pp)
        np.maximum.at(hi, clus, pp)
        size = np.bincount(clus, minlength=nclu)
        ctr, half = (lo + hi) / 2, (hi - lo) / 2
        reach = rc + 2 * np.sqrt((half ** 2).sum(axis=1)).max()
        tree = cKDTree(ctr % box, boxsize=box)
        pr = tree.query_pairs(reach, output_type="ndarray")
        pr = np.concatenate([pr, pr[:, ::-1], np.stack([np.arange(nclu)] * 2, axis=1)])  # ordered, and self
        dc = ctr[pr[:, 0]] - ctr[pr[:, 1]]
        dc -= np.round(dc / box) * box
        gap = np.maximum(np.abs(dc) - half[pr[:, 0]] - half[pr[:, 1]], 0.0)
        keep = (gap * gap).sum(axis=1) < rc2
        pk = pr[keep]
        t_pair = int((size[pk[:, 0]] * size[pk[:, 1]]).sum())
        # per i atom: only those within rc of the j cluster's box
        members = np.argsort(clus, kind="stable")
        first = np.searchsorted(clus[members], np.arange(nclu))
        t_atom = 0
        for ci_, cj_ in pk:
            xi = pp[members[first[ci_]:first[ci_] + size[ci_]]]
            d = xi - ctr[cj_]
            d -= np.round(d / box) * box
            g = np.maximum(np.abs(d) - half[cj_], 0.0)
            t_atom += int(size[cj_] * ((g * g).sum(axis=1) < rc2).sum())
        print("  pairs %dx%d  %7.1f tests an atom, %.2f a hit (/atom: %.1f, %.2f a hit); %.1f cluster pairs a cluster"
              % (m, m, t_pair / n, t_pair / hits, t_atom / n, t_atom / hits, len(pk) / nclu))
    return 0


if __name__ == "__main__":
    sys.exit(main())

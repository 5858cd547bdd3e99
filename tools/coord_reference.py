#!/usr/bin/env python3
"""coord_reference.py — reference coordination numbers for tests/test_coord.c,
from ASE and freud on the same frames mdnl reads.

    python3 tools/coord_reference.py [--out data/coord]
    (needs: pip install ase freud-analysis)

For each case it writes data/coord/NAME.tsv: `# i count[:A-B ...]` per atom
from ase.neighborlist.neighbor_list('i', atoms, cutoff) (self images
included, as mdnl counts them), checks that freud's AABBQuery (exclude_ii,
r_max = cutoff) gives the same totals, and refuses a cutoff with a pair
within 2e-6 of it (float32 rounding in mdnl could flip such a pair).

Cases:
  ka-1.5       data/energy/ka_mixture.xyz (tools/lammps_ka_reference.py),
               cutoff 1.5 (the first minimum of g(r)), total and A-B, B-A, B-B
  ka-3.7       the same at 3.7, more than half of the 7.47 box (freud
               refuses it: ASE alone)
  ka-pair-cut  the same frame with a cutoff per species pair, A-A 1.5,
               A-B 1.3, B-B 1.1 (ASE's cutoff dict; freud at 1.5, each pair
               kept below its own cutoff), total and A-B, B-A, B-B

The comparison itself, from the command line:
    mdnl coord data/energy/ka_mixture.xyz -c 1.5 --pairs A-B,B-A,B-B
    mdnl coord data/energy/ka_mixture.xyz --pair-cut A-A=1.5,A-B=1.3,B-B=1.1 --pairs A-B,B-A,B-B
"""
import argparse
import os
import sys

import numpy as np
from ase import Atoms
from ase.neighborlist import neighbor_list

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")

CASES = [
    ("ka-1.5", "energy/ka_mixture.xyz", 1.5, ["A-B", "B-A", "B-B"], True),
    ("ka-3.7", "energy/ka_mixture.xyz", 3.7, [], False),
    ("ka-pair-cut", "energy/ka_mixture.xyz", {"A-A": 1.5, "A-B": 1.3, "B-B": 1.1}, ["A-B", "B-A", "B-B"], True),
]
ASE_Z = {"A": 18, "B": 36}  # read_fixture's Ar and Kr


def pair_cut(cutoff, si, sj):
    """Each pair's own cutoff: the float, or the dict's entry for its species
    (either order; 0 for a pair not named, as ASE's dict)."""
    if not isinstance(cutoff, dict):
        return np.full(len(si), cutoff)
    out = np.zeros(len(si))
    for key, c in cutoff.items():
        a, b = key.split("-")
        out[((si == a) & (sj == b)) | ((si == b) & (sj == a))] = c
    return out


def ase_cutoff(cutoff):
    """The cutoff as neighbor_list takes it: a dict keyed by atomic numbers."""
    if not isinstance(cutoff, dict):
        return cutoff
    return {tuple(ASE_Z[s] for s in key.split("-")): c for key, c in cutoff.items()}


def max_cut(cutoff):
    return max(cutoff.values()) if isinstance(cutoff, dict) else cutoff


def read_fixture(path):
    """The extended XYZ of tools/lammps_ka_reference.py: species A and B are
    not elements, so ASE gets them as Ar and Kr and the names kept apart."""
    with open(path) as f:
        n = int(f.readline())
        head = f.readline()
        lat = [float(x) for x in head.split('Lattice="')[1].split('"')[0].split()]
        rows = [f.readline().split() for _ in range(n)]
    sym = np.array([r[0] for r in rows])
    pos = np.array([[float(x) for x in r[1:4]] for r in rows])
    atoms = Atoms(["Ar" if s == "A" else "Kr" for s in sym], positions=pos, cell=np.reshape(lat, (3, 3)),
                  pbc=True)
    return atoms, sym


def freud_counts(atoms, sym, cutoff):
    import freud
    box = freud.box.Box.from_matrix(np.asarray(atoms.cell).T)
    pts = box.wrap(atoms.get_positions())
    q = freud.locality.AABBQuery(box, pts)
    nl = q.query(pts, {"r_max": max_cut(cutoff), "exclude_ii": True}).toNeighborList()
    qi, pj = nl.query_point_indices, nl.point_indices
    keep = nl.distances < pair_cut(cutoff, sym[qi], sym[pj])
    return np.bincount(qi[keep], minlength=len(atoms))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(DATA, "coord"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, path, cutoff, pairs, with_freud in CASES:
        atoms, sym = read_fixture(os.path.join(DATA, path))
        i, j, d = neighbor_list("ijd", atoms, ase_cutoff(cutoff))
        # pairs just beyond a cutoff are not in d: check with a larger one
        i2, j2, d2 = neighbor_list("ijd", atoms, max_cut(cutoff) + 2e-6)
        if (np.abs(d2 - pair_cut(cutoff, sym[i2], sym[j2])) < 2e-6).any():
            sys.exit(f"coord_reference: {name}: a pair lies within 2e-6 of its cutoff")
        n = len(atoms)
        total = np.bincount(i, minlength=n)
        if with_freud:
            f = freud_counts(atoms, sym, cutoff)
            if not np.array_equal(f, total):
                sys.exit(f"coord_reference: {name}: freud and ASE disagree on {np.sum(f != total)} atoms")
        cols, head = [total], ["count"]
        for p in pairs:
            a, b = p.split("-")
            c = np.bincount(i[sym[j] == b], minlength=n)
            c[sym != a] = 0
            cols.append(c)
            head.append(f"count:{p}")
        with open(os.path.join(args.out, name + ".tsv"), "w") as fp:
            cut = ",".join(f"{k}={v}" for k, v in cutoff.items()) if isinstance(cutoff, dict) else cutoff
            fp.write(f"# {name}: {path} cutoff {cut}, by tools/coord_reference.py (ASE"
                     f"{' and freud' if with_freud else ''})\n")
            fp.write("# i\t" + "\t".join(head) + "\n")
            for k in range(n):
                fp.write(f"{k}\t" + "\t".join(str(int(c[k])) for c in cols) + "\n")
        print(f"{name}: {n} atoms, mean {total.mean():.4f}, max {total.max()}")


if __name__ == "__main__":
    main()

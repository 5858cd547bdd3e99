#!/usr/bin/env python3
"""ase_shift_reference.py — `mdnl neighbors --with shift,vector` against ASE's
neighbor_list('ijdSD') on the same frames (run by ctest as test_ase_shifts).

    python3 tools/ase_shift_reference.py --mdnl build/mdnl [--backend cpu|cuda]
                                         [--keep DIR]
    (needs: ASE, h5py, numpy: python3-ase python3-h5py)

For each case it writes the frame(s) as extended XYZ with ASE, reads them
back with ASE (so both sides see the file's numbers), runs
`mdnl neighbors FILE -c CUT --with shift,vector` for the full and the half
list, into TSV and into HDF5, and checks:
  - the full list's set of (i, j, S) is ASE's, the half list's is the part
    of it with i < j, or i = j and S lexicographically positive (SPEC §3);
  - d agrees with ASE's to float32 rounding, D to 1e-9 (both double sums
    of the same numbers, in different orders), |D| with d;
  - /neighbors/{offsets,j,distance,shift,vector} of the HDF5 file hold the
    TSV's rows exactly (TSV prints d with %.9g, D with %.17g: both round-trip),
    and --with shift / --with vector alone give the same columns.
Cases: triclinic (periodic, and periodic along a and c only), a small cell
with the cutoff beyond half the box (far images and self images; orthorhombic
and triclinic), an open frame, and a two-frame trajectory; positions lie
partly outside the cell, so that S is relative to the positions as given.
Exit 0 when everything agrees, 1 with one line per mismatch otherwise.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np
from ase import Atoms
from ase.io import read, write
from ase.neighborlist import neighbor_list

TRICLINIC = np.array([[5.0, 0.0, 0.0], [1.0, 4.5, 0.0], [0.5, 0.7, 4.0]])
SMALL_TRICLINIC = np.array([[2.0, 0.0, 0.0], [0.6, 2.1, 0.0], [-0.4, 0.3, 2.3]])


def cases():
    """(name, [Atoms per frame], cutoff)."""
    rng = np.random.default_rng(60)

    def frame(n, cell, pbc, lo, hi, symbols=("H",)):
        species = [symbols[k % len(symbols)] for k in range(n)]
        return Atoms(species, positions=rng.uniform(lo, hi, (n, 3)), cell=cell, pbc=pbc)

    return [
        ("triclinic", [frame(40, TRICLINIC, [True] * 3, -3.0, 9.0, ["Cu", "O"])], 3.1),
        ("triclinic-periodic-a-c", [frame(40, TRICLINIC, [True, False, True], -3.0, 9.0)], 3.1),
        ("small-cell-cutoff-beyond-half-box", [frame(5, np.diag([2.0, 2.2, 2.4]), [True] * 3, -1.0, 3.0)], 3.3),
        ("small-triclinic-periodic-b-c", [frame(4, SMALL_TRICLINIC, [False, True, True], -1.0, 3.0)], 2.9),
        ("open", [frame(30, None, [False] * 3, 0.0, 6.0)], 2.0),
        ("two-frames", [frame(25, TRICLINIC, [True] * 3, -2.0, 7.0), frame(25, TRICLINIC, [True] * 3, -2.0, 7.0)],
         2.7),
    ]


def run_mdnl(mdnl, path, cutoff, full, with_, out, backend):
    cmd = [mdnl, "neighbors", path, "-c", repr(cutoff), "--with", with_, "--backend", backend, "-q", "-o", out]
    if full:
        cmd += ["--list", "full"]
    subprocess.run(cmd, check=True)


def tsv_rows(path):
    """{frame: [(i, j, d, S, D)]} and the header."""
    rows = {}
    with open(path) as fh:
        header = fh.readline().rstrip("\n").split("\t")
        for line in fh:
            c = line.rstrip("\n").split("\t")
            rows.setdefault(int(c[0]), []).append(
                (int(c[1]), int(c[2]), float(c[3]), tuple(int(x) for x in c[4:7]), tuple(float(x) for x in c[7:10])))
    return header, rows


def h5_rows(path):
    """The same rows from /neighbors of an HDF5 result (float32 d widened as the TSV prints it)."""
    rows = {}
    with h5py.File(path, "r") as f:
        nb = f["neighbors"]
        rs, ps = nb["row_start"][:], nb["pair_start"][:]
        offs, jj, dd, SS, DD = nb["offsets"][:], nb["j"][:], nb["distance"][:], nb["shift"][:], nb["vector"][:]
        assert SS.dtype == np.int32 and DD.dtype == np.float64 and SS.shape == DD.shape == (len(jj), 3)
        for k, fr in enumerate(nb["frame"][:]):
            o, base = offs[rs[k]:rs[k + 1]], ps[k]
            out = []
            for i in range(len(o) - 1):
                for p in range(base + o[i], base + o[i + 1]):
                    out.append((i, int(jj[p]), float(f"{float(dd[p]):.9g}"), tuple(int(x) for x in SS[p]),
                                tuple(float(x) for x in DD[p])))
            rows[int(fr)] = out
    return rows


def positive(S):
    return S > (0, 0, 0)


def check_frame(name, atoms, cutoff, full, rows, errors):
    i, j, d, S, D = neighbor_list("ijdSD", atoms, cutoff)
    ref = {}
    for a, b, dv, s, v in zip(i.tolist(), j.tolist(), d, S.tolist(), D):
        s = tuple(s)
        if full or a < b or (a == b and positive(s)):
            ref[(a, b, s)] = (dv, v)
    ours = [(a, b, s) for a, b, _, s, _ in rows]
    if len(set(ours)) != len(ours):
        errors.append(f"{name}: an (i, j, S) appears twice")
    missing, extra = set(ref) - set(ours), set(ours) - set(ref)
    if missing or extra:
        errors.append(f"{name}: missing {sorted(missing)[:4]}, extra {sorted(extra)[:4]} of {len(ref)} pairs")
        return
    for a, b, dv, s, v in rows:
        rd, rv = ref[(a, b, s)]
        if abs(rd - dv) > 1e-6 * max(1.0, rd):
            errors.append(f"{name}: d of {(a, b, s)}: {dv} vs ASE {rd}")
        if np.max(np.abs(np.asarray(v) - rv)) > 1e-9:
            errors.append(f"{name}: D of {(a, b, s)}: {v} vs ASE {tuple(rv)}")
        if abs(np.linalg.norm(v) - dv) > 1e-6 * max(1.0, dv):
            errors.append(f"{name}: |D| of {(a, b, s)} is {np.linalg.norm(v)}, d {dv}")
    return len(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mdnl", required=True, help="the mdnl binary")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"])
    ap.add_argument("--keep", help="write the fixtures and outputs here (default: a temporary folder)")
    args = ap.parse_args()
    errors = []
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        for name, frames, cutoff in cases():
            path = os.path.join(work, name + ".extxyz")
            write(path, frames, format="extxyz")
            frames = read(path, index=":")
            for full in (False, True):
                kind = "full" if full else "half"
                tsv, h5 = os.path.join(work, f"{name}-{kind}.tsv"), os.path.join(work, f"{name}-{kind}.h5")
                run_mdnl(args.mdnl, path, cutoff, full, "shift,vector", tsv, args.backend)
                run_mdnl(args.mdnl, path, cutoff, full, "vector,shift", h5, args.backend)
                header, rows = tsv_rows(tsv)
                if header != ["# frame", "i", "j", "distance", "S0", "S1", "S2", "Dx", "Dy", "Dz"]:
                    errors.append(f"{name}: TSV header {header}")
                if h5_rows(h5) != rows:
                    errors.append(f"{name} ({kind}): the HDF5 rows differ from the TSV's")
                pairs = 0
                for k, atoms in enumerate(frames):
                    pairs += check_frame(f"{name} frame {k} ({kind})", atoms, cutoff, full, rows.get(k, []),
                                         errors) or 0
                # Each column alone: the same numbers.
                only = os.path.join(work, f"{name}-{kind}-shift.tsv")
                run_mdnl(args.mdnl, path, cutoff, full, "shift", only, args.backend)
                if [(a, b, s) for a, b, _, s, _ in sum(tsv_rows(only)[1].values(), [])] != \
                        [(a, b, s) for a, b, _, s, _ in sum(rows.values(), [])]:
                    errors.append(f"{name} ({kind}): --with shift alone gives other shifts")
                only = os.path.join(work, f"{name}-{kind}-vector.tsv")
                run_mdnl(args.mdnl, path, cutoff, full, "vector", only, args.backend)
                with open(only) as fh:
                    vec = [line.rstrip("\n").split("\t")[4:] for line in fh]
                with open(tsv) as fh:
                    both = [line.rstrip("\n").split("\t")[7:] for line in fh]
                if vec[1:] != both[1:]:
                    errors.append(f"{name} ({kind}): --with vector alone gives other vectors")
                print(f"{name:36s} {kind}: {pairs} pairs match ASE ijdSD (TSV and HDF5)")
    for e in errors:
        print("mismatch:", e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

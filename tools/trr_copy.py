#!/usr/bin/env python3
"""tools/trr_copy.py SRC DST — a GROMACS TRR (positions and cell, float32,
nm) of the DCD or XTC SRC, written by MDAnalysis' TRR writer: mdnl reads TRR
but does not write it. The TRR input of tools/bench/bench_read_threads.sh."""
import sys
import warnings

import MDAnalysis as mda


def copy(src, dst):
    fmt = "XTC" if src.lower().endswith(".xtc") else "DCD"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DCDReader's note on independent timesteps
        reader = mda.coordinates.DCD.DCDReader(src) if fmt == "DCD" else mda.coordinates.XTC.XTCReader(src)
        n = reader.n_atoms
        reader.close()
        u = mda.Universe.empty(n, trajectory=True)
        u.load_new(src, format=fmt)
        with mda.Writer(dst, n_atoms=n, format="TRR") as w:
            for _ in u.trajectory:
                w.write(u.atoms)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: trr_copy.py SRC.dcd|SRC.xtc DST.trr")
    copy(sys.argv[1], sys.argv[2])

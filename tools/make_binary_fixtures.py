#!/usr/bin/python3
"""Writes the binary-trajectory fixtures of tests/test_binary_formats.c into
data/binary/ with MDAnalysis' own writers (XTCWriter, TRRWriter, DCDWriter;
MDAnalysis 2.4.2 reads and writes XTC and TRR through the reference
xdrfile C code), and what MDAnalysis reads back from them as the expected
values. Run from the repository root:
    /usr/bin/python3 tools/make_binary_fixtures.py
Deterministic (seeded); the outputs are committed so the tests need no python.

    /usr/bin/python3 tools/make_binary_fixtures.py --check-writers build/mdnl
checks mdnl's writers instead (writes nothing in data/): every fixture and a
100,000-atom XTC converted by mdnl to XTC and DCD and read back by MDAnalysis
agree with what MDAnalysis reads from the original, within the format's
precision (XTC: half of 1/precision nm; DCD: float32), cells included.

  w60.xtc, w60-p100.xtc  60 atoms as 20 water-like triples (runs of small
                         differences), 3 frames: orthorhombic, triclinic, and
                         a tight cluster; precision 1000 and 100
  w5.xtc                 5 atoms (natoms <= 9: plain floats)
  w60.trr                the 60 atoms in TRR (single precision)
  w60-cell.dcd           DCD with a unit cell (MDAnalysis writes degrees)
  w60-nocell.dcd         DCD without a unit cell
  w60-cell-be.dcd        w60-cell.dcd with every record byte-swapped (big-endian)
  mixture.xtc, mixture.dcd
                         data/rdf/lj_mixture.xyz (256 atoms A/B, 10 frames) as
                         XTC and DCD, for `mdnl rdf` against InterRDF

expected-frames.tsv     file frame step time natoms box[9]  (the file's units:
                        nm for XTC/TRR, Å for DCD; XTC and TRR from
                        libmdaxdr's raw frames, DCD from DCDReader's
                        dimensions through triclinic_vectors)
expected-positions.tsv  file frame atom x y z  (%.9g of the float32 values
                        MDAnalysis returns, convert_units=False: bit exact)
mixture-rdf-xtc.tsv, mixture-rdf-dcd.tsv
                        r_lo r_hi g_total tol_total g_AB tol_AB: InterRDF
                        (rmax 2.5, 50 bins) in mdnl's normalisation (see
                        tools/mdanalysis_rdf_reference.py: g_total =
                        rdf(exclusion_block=(1,1)) * n (n - 1) / n^2; A-B as
                        it is); tol is the g of four ordered pairs in the bin
                        (a pair within float rounding of a bin edge may land
                        on either side: mdnl converts nm to Å in double,
                        MDAnalysis in float32)
"""
import os
import sys
import warnings

import numpy as np

warnings.filterwarnings("ignore")
import MDAnalysis as mda  # noqa: E402
from MDAnalysis.analysis.rdf import InterRDF  # noqa: E402
from MDAnalysis.coordinates.DCD import DCDReader, DCDWriter  # noqa: E402
from MDAnalysis.coordinates.TRR import TRRWriter  # noqa: E402
from MDAnalysis.coordinates.XTC import XTCWriter  # noqa: E402
from MDAnalysis.lib.formats.libmdaxdr import TRRFile, XTCFile  # noqa: E402
from MDAnalysis.lib.mdamath import triclinic_vectors  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
OUT = os.path.join(ROOT, "data", "binary")
RMAX, BINS = 2.5, 50


def water_frames(rng, n, nframes):
    """n atoms (a multiple of 3) as triples 1 Å apart, in a 20 Å box."""
    frames = []
    for k in range(nframes):
        o = rng.random((n // 3, 3)) * 20.0
        x = np.repeat(o, 3, axis=0)
        x[1::3] += rng.normal(0, 0.6, (n // 3, 3))
        x[2::3] += rng.normal(0, 0.6, (n // 3, 3))
        if k == 2:
            x = 5.0 + rng.normal(0, 0.3, (n, 3))
        frames.append(x.astype(np.float32))
    return frames


DIMS = [[20.0, 21.0, 22.0, 90, 90, 90], [20.0, 21.0, 22.0, 80, 75, 65], [19.0, 19.0, 19.0, 90, 90, 90]]


def write(path, writer, frames, dims, **kw):
    n = len(frames[0])
    u = mda.Universe.empty(n, trajectory=True)
    with writer(path, n, **kw) as w:
        for k, x in enumerate(frames):
            u.atoms.positions = x
            u.dimensions = dims[k] if dims else None
            ts = u.trajectory.ts
            ts.frame = 100 * k + 7  # XTC and TRR write the frame number as the step
            ts.time = 0.5 + k
            w.write(u)


def byteswap_dcd(src, dst):
    """Rewrites a little-endian DCD big-endian: every record marker and value
    (ints and floats 4 bytes, the unit cell 8 bytes, the title as it is)."""
    b = open(src, "rb").read()
    out = bytearray()
    p = 0
    rec = 0
    while p < len(b):
        n = int.from_bytes(b[p:p + 4], "little")
        body = b[p + 4:p + 4 + n]
        if rec == 0:  # "CORD" + 20 ints
            body = body[:4] + b"".join(body[i:i + 4][::-1] for i in range(4, n, 4))
        elif rec == 1:  # ntitle + text
            body = body[:4][::-1] + body[4:]
        elif n == 48 and rec >= 3:  # unit cell: 6 doubles
            body = b"".join(body[i:i + 8][::-1] for i in range(0, n, 8))
        else:
            body = b"".join(body[i:i + 4][::-1] for i in range(0, n, 4))
        m = n.to_bytes(4, "big")
        out += m + body + m
        p += 8 + n
        rec += 1
    open(dst, "wb").write(bytes(out))


def read_extxyz(path):
    frames, species, boxes = [], None, []
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines) and lines[i].strip():
        n = int(lines[i])
        lat = lines[i + 1].split('Lattice="')[1].split('"')[0].split()
        boxes.append(float(lat[0]))
        rows = [ln.split() for ln in lines[i + 2:i + 2 + n]]
        species = [r[0] for r in rows]
        frames.append(np.array([[float(v) for v in r[1:4]] for r in rows], np.float32))
        i += 2 + n
    return frames, species, boxes


def expected(name, fr_rows, pos_rows):
    path = os.path.join(OUT, name)
    if name.endswith(".xtc") or name.endswith(".trr"):
        f = (XTCFile if name.endswith(".xtc") else TRRFile)(path)
        for k, fr in enumerate(f):
            fr_rows.append([name, k, fr.step, fr.time, len(fr.x)] + list(np.asarray(fr.box, np.float32).ravel()))
            pos_rows += [[name, k, i] + list(x) for i, x in enumerate(fr.x)]
    else:
        r = DCDReader(path)
        for k, ts in enumerate(r):
            box = triclinic_vectors(ts.dimensions).ravel() if ts.dimensions is not None else np.zeros(9)
            h = r._file.header
            fr_rows.append([name, k, h["istart"] + k * h["nsavc"], ts.time, len(ts.positions)] + list(box))
            pos_rows += [[name, k, i] + list(x) for i, x in enumerate(ts.positions)]


def rdf_reference(path, species, frames_n):
    u = mda.Universe.empty(len(species), trajectory=False)
    u.load_new(path)
    n = len(species)
    a = u.atoms[[i for i, s in enumerate(species) if s == "A"]]
    b = u.atoms[[i for i, s in enumerate(species) if s == "B"]]
    tot = InterRDF(u.atoms, u.atoms, nbins=BINS, range=(0, RMAX), exclusion_block=(1, 1)).run()
    ab = InterRDF(a, b, nbins=BINS, range=(0, RMAX)).run()
    edges = tot.results.edges
    shell = 4.0 / 3.0 * np.pi * (edges[1:] ** 3 - edges[:-1] ** 3)
    vol = np.mean([ts.volume for ts in u.trajectory])
    g_tot = tot.results.rdf * n * (n - 1) / n**2
    one_tot = 1.0 / (frames_n * n * n / vol * shell)
    one_ab = 1.0 / (frames_n * len(a) * len(b) / vol * shell)
    rows = []
    for k in range(BINS):
        rows.append("%.9g\t%.9g\t%.9g\t%.9g\t%.9g\t%.9g" % (edges[k], edges[k + 1], g_tot[k], 4 * one_tot[k],
                                                              ab.results.rdf[k], 4 * one_ab[k]))
    return rows


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(57)
    w60 = water_frames(rng, 60, 3)
    write(os.path.join(OUT, "w60.xtc"), XTCWriter, w60, DIMS, precision=3)
    write(os.path.join(OUT, "w60-p100.xtc"), XTCWriter, w60, DIMS, precision=2)
    write(os.path.join(OUT, "w5.xtc"), XTCWriter, [x[:5] for x in w60], DIMS, precision=3)
    write(os.path.join(OUT, "w60.trr"), TRRWriter, w60, DIMS)
    dcd = dict(nsavc=100, istart=7, dt=2.0)  # steps 7, 107, 207; time in ps from DELTA
    write(os.path.join(OUT, "w60-cell.dcd"), DCDWriter, w60, DIMS, **dcd)
    write(os.path.join(OUT, "w60-nocell.dcd"), DCDWriter, w60, None, **dcd)
    byteswap_dcd(os.path.join(OUT, "w60-cell.dcd"), os.path.join(OUT, "w60-cell-be.dcd"))

    mix, species, boxes = read_extxyz(os.path.join(ROOT, "data", "rdf", "lj_mixture.xyz"))
    mdims = [[L, L, L, 90, 90, 90] for L in boxes]
    write(os.path.join(OUT, "mixture.xtc"), XTCWriter, mix, mdims, precision=3)
    write(os.path.join(OUT, "mixture.dcd"), DCDWriter, mix, mdims)

    fr_rows, pos_rows = [], []
    for name in ["w60.xtc", "w60-p100.xtc", "w5.xtc", "w60.trr", "w60-cell.dcd", "w60-nocell.dcd"]:
        expected(name, fr_rows, pos_rows)
    with open(os.path.join(OUT, "expected-frames.tsv"), "w") as fp:
        fp.write("# file frame step time natoms box[0][0] box[0][1] ... box[2][2] (the file's units)\n")
        for r in fr_rows:
            fp.write("\t".join([r[0], str(r[1]), str(int(r[2])), "%.9g" % r[3], str(r[4])] +
                               ["%.9g" % v for v in r[5:]]) + "\n")
    with open(os.path.join(OUT, "expected-positions.tsv"), "w") as fp:
        fp.write("# file frame atom x y z (float32 as MDAnalysis reads them, the file's units)\n")
        for r in pos_rows:
            fp.write("\t".join([r[0], str(r[1]), str(r[2])] + ["%.9g" % v for v in r[3:]]) + "\n")
    for ext in ["xtc", "dcd"]:
        rows = rdf_reference(os.path.join(OUT, "mixture." + ext), species, len(mix))
        with open(os.path.join(OUT, "mixture-rdf-%s.tsv" % ext), "w") as fp:
            fp.write("# r_lo r_hi g_total tol_total g_A-B tol_A-B (InterRDF in mdnl's normalisation; "
                     "rmax %g, %d bins, %d frames)\n" % (RMAX, BINS, len(mix)))
            fp.write("\n".join(rows) + "\n")
    for f in os.listdir(OUT):  # MDAnalysis' offset caches
        if f.startswith("."):
            os.remove(os.path.join(OUT, f))
    return 0


def check_writers(mdnl):
    """mdnl -> XTC / DCD -> MDAnalysis against MDAnalysis on the original."""
    import subprocess
    import tempfile

    from MDAnalysis.coordinates.XTC import XTCReader
    tmp = tempfile.mkdtemp()
    big = os.path.join(tmp, "big.xtc")
    rng = np.random.default_rng(9)
    write(big, XTCWriter, water_frames(rng, 99999, 2), DIMS, precision=3)
    inputs = [os.path.join(OUT, f) for f in sorted(os.listdir(OUT)) if f.endswith((".xtc", ".trr", ".dcd"))] + [big]
    bad = 0
    for src in inputs:
        ref = {"xtc": XTCReader, "dcd": DCDReader}.get(src[-3:])
        ref = ref(src) if ref else mda.coordinates.TRR.TRRReader(src)
        for ext, tol in [("xtc", 0.5 / 1000 * 10 + 1e-5), ("dcd", 1e-5)]:
            out = os.path.join(tmp, "out." + ext)
            subprocess.run([mdnl, "convert", "-q", src, out], check=True)
            got = XTCReader(out) if ext == "xtc" else DCDReader(out)
            worst = 0.0
            for a, b in zip(ref, got):
                if ext == "dcd" and a.dimensions is not None and not np.allclose(a.dimensions[3:], 90):
                    # DCD holds no orientation: compare distances, not coordinates
                    from MDAnalysis.lib.distances import self_distance_array
                    da = self_distance_array(a.positions[:500], box=a.dimensions)
                    db = self_distance_array(b.positions[:500], box=b.dimensions)
                    worst = max(worst, float(np.abs(da - db).max()))
                else:
                    worst = max(worst, float(np.abs(a.positions - b.positions).max()))
                if a.dimensions is not None:
                    worst = max(worst, float(np.abs(a.dimensions - b.dimensions).max()) * 1e-3)
            ok = len(got) == len(ref) and worst <= tol * 10
            bad += not ok
            print("%-16s -> %s  frames %d/%d  max |diff| %.3g A  %s" % (os.path.basename(src), ext, len(got),
                                                                       len(ref), worst, "ok" if ok else "FAIL"))
    for f in os.listdir(OUT):  # MDAnalysis' offset caches
        if f.startswith("."):
            os.remove(os.path.join(OUT, f))
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--check-writers":
        sys.exit(check_writers(sys.argv[2]))
    sys.exit(main())

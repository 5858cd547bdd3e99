"""test_mdanalysis_h5md.py — ctest test_mdanalysis_h5md: MDAnalysis (the
python3-mdanalysis that tools/setup.sh installs) reads the H5MD files mdnl
writes, with the README's snippet

    u = MDAnalysis.Universe.empty(N, trajectory=True)
    u.load_new("x.h5", format="H5MD", convert_units=False)

and with MDAnalysis' default convert_units=True, and finds the input's
positions, cells and times (the step when the input has no time). The run
and energy results files carry a time with its unit as well. A missing
MDAnalysis fails the test: it is an oracle, not an option.

usage: test_mdanalysis_h5md.py MDNL_BINARY DATA_DIR
"""
import os
import subprocess
import sys
import tempfile
import warnings

warnings.simplefilter("ignore")
import h5py  # noqa: E402
import MDAnalysis  # noqa: E402
import numpy as np  # noqa: E402

MDNL, DATA = sys.argv[1], sys.argv[2]


def read_xyz(path):
    """Frames of a (extended) XYZ file with species x y z columns:
    [(positions, lattice rows or None, time or None, step or None)]."""
    frames = []
    with open(path) as fp:
        lines = fp.read().splitlines()
    k = 0
    while k < len(lines) and lines[k].strip():
        n = int(lines[k])
        comment = lines[k + 1]
        pos = np.array([[float(x) for x in lines[k + 2 + i].split()[1:4]] for i in range(n)]).reshape(n, 3)
        lattice = time = step = None
        if 'Lattice="' in comment:
            vals = comment.split('Lattice="')[1].split('"')[0].split()
            lattice = np.array([float(v) for v in vals]).reshape(3, 3)
        for word in comment.split():
            if word.startswith("Time="):
                time = float(word[5:])
            if word.startswith("Step="):
                step = int(word[5:])
        if "Timestep:" in comment:
            step = int(comment.split("Timestep:")[1].split()[0])
        frames.append((pos, lattice, time, step))
        k += n + 2
    return frames


def mdnl(*args):
    r = subprocess.run([MDNL, *args], capture_output=True, text=True)
    assert r.returncode == 0, f"mdnl {' '.join(args)}: exit {r.returncode}: {r.stderr}"


def dimensions(h):
    """MDAnalysis' [a, b, c, alpha, beta, gamma] of lattice rows h."""
    L = np.linalg.norm(h, axis=1)

    def ang(a, b):
        return np.degrees(np.arccos(h[a] @ h[b] / (L[a] * L[b])))

    return np.array([*L, ang(1, 2), ang(0, 2), ang(0, 1)])


def check_convert(tmp, source):
    frames = read_xyz(source)
    out = os.path.join(tmp, os.path.basename(source) + ".h5md")
    mdnl("convert", source, out, "--quiet")
    with h5py.File(out, "r") as f:
        pos = f["particles/all/position"]
        assert pos["value"].attrs["unit"] == "Angstrom", dict(pos["value"].attrs)
        assert pos["time"].attrs["unit"] == "ps", dict(pos["time"].attrs)
        assert f["h5md/author"].attrs["name"] not in ("", "unknown")
        if frames[0][1] is not None:
            assert f["particles/all/box/edges/value"].attrs["unit"] == "Angstrom"
    for convert_units in (False, True):
        u = MDAnalysis.Universe.empty(len(frames[0][0]), trajectory=True)
        u.load_new(out, format="H5MD", convert_units=convert_units)
        assert len(u.trajectory) == len(frames), (source, len(u.trajectory))
        for k, ts in enumerate(u.trajectory):
            pos, lattice, time, step = frames[k]
            where = f"{source} frame {k} convert_units={convert_units}"
            assert np.allclose(ts.positions, pos, rtol=1e-6, atol=1e-5), where
            if lattice is None:
                assert ts.dimensions is None, (where, ts.dimensions)
            else:
                assert np.allclose(ts.dimensions, dimensions(lattice), rtol=1e-5), (where, ts.dimensions)
            want_step = k if step is None else step
            want_time = float(want_step) if time is None else time
            assert ts.data["step"] == want_step, (where, ts.data["step"])
            assert abs(ts.time - want_time) < 1e-9, (where, ts.time, want_time)
    print(f"ok: {os.path.basename(source)}: {len(frames)} frame(s), both convert_units")


def check_results(tmp, source):
    """mdnl run and mdnl energy -o X.h5: the energies' time is the step (the
    input has none) and carries its unit."""
    steps = [s for (_, _, _, s) in read_xyz(source)]
    run_out = os.path.join(tmp, "run.h5")
    energy_out = os.path.join(tmp, "energy.h5")
    pair = "lj:epsilon=1,sigma=1"
    mdnl("run", source, "-c", "2.5", "--pair", pair, "-o", run_out, "--quiet")
    mdnl("energy", source, "-c", "2.5", "--pair", pair, "-o", energy_out, "--quiet")
    for path in (run_out, energy_out):
        with h5py.File(path, "r") as f:
            g = f["observables/potential_energy"]
            assert g["time"].attrs["unit"] == "ps", (path, dict(g["time"].attrs))
            assert list(g["step"][:]) == steps, (path, list(g["step"][:]))
            assert np.array_equal(g["time"][:], np.array(steps, dtype=float)), (path, g["time"][:])
    print(f"ok: run and energy results of {os.path.basename(source)}")


with tempfile.TemporaryDirectory() as tmp:
    # LAMMPS `dump xyz`: no cell, the step in the comment
    lammps = os.path.join(tmp, "lammps-dump.xyz")
    with open(lammps, "w") as fp:
        for step, dx in ((0, 0.0), (50, 0.1), (100, 0.2)):
            fp.write(f"3\nAtoms. Timestep: {step}\n1 0 0 0\n1 {1.1 + dx} 0 0\n2 0 {1.3 + dx} 0.5\n")
    for source in (
        os.path.join(DATA, "graphene-noisy.extxyz"),      # periodic in x, y; no time
        os.path.join(DATA, "trajectory-3frames.extxyz"),  # Step= and Time=
        os.path.join(DATA, "graphene-open.xyz"),          # plain XYZ, no cell
        lammps,
    ):
        check_convert(tmp, source)
    check_results(tmp, lammps)
print("ok")

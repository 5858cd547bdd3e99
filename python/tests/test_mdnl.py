"""Tests of the Python package mdnl over libmdnl (host arrays, any build).

Oracles: ASE's neighbor_list('ijdDS') on triclinic, partly periodic,
open and small (cutoff > half the box) frames; the mdnl command line's
`neighbors` table, byte for byte, on the fixtures of data/; a pair sum in
Python for the energy; the pair count for the RDF. Run by ctest
(test_python, test_python_installed) with MDNL_LIBRARY, MDNL_BINARY and
MDNL_DATA_DIR set.
"""
import os
import subprocess

import numpy as np
import pytest

import mdnl

ase = pytest.importorskip("ase")
from ase import Atoms  # noqa: E402
from ase.io import read  # noqa: E402
from ase.neighborlist import neighbor_list as ase_neighbor_list  # noqa: E402

DATA = os.environ.get("MDNL_DATA_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "data"))
BINARY = os.environ.get("MDNL_BINARY")

TRICLINIC = np.array([[5.0, 0.0, 0.0], [1.0, 4.5, 0.0], [0.5, 0.7, 4.0]])


def frames():
    """(name, positions, cell, pbc, cutoff): positions partly outside the
    cell, so that S relative to the given positions is tested."""
    rng = np.random.default_rng(58)
    tri = rng.uniform(-3.0, 9.0, (40, 3))
    small = rng.uniform(0.0, 2.0, (5, 3))
    return [
        ("triclinic", tri, TRICLINIC, [True, True, True], 3.1),
        ("triclinic-partly-periodic", tri, TRICLINIC, [True, False, True], 3.1),
        ("triclinic-open", tri, TRICLINIC, [False, False, False], 3.1),
        ("small-cell-cutoff-beyond-half-box", small, np.diag([2.0, 2.2, 2.4]), [True, True, True], 3.3),
        ("small-cell-partly-periodic", small, np.diag([2.0, 2.2, 2.4]), [False, True, True], 2.9),
        ("no-cell", rng.uniform(0, 6, (30, 3)), None, [False, False, False], 2.0),
    ]


def keyed(i, j, S):
    return list(zip(np.asarray(i).tolist(), np.asarray(j).tolist(), map(tuple, np.asarray(S).tolist())))


@pytest.mark.parametrize("name,pos,cell,pbc,cutoff", frames(), ids=[f[0] for f in frames()])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_neighbor_list_matches_ase_ijdDS(name, pos, cell, pbc, cutoff, dtype):
    pos = pos.astype(dtype)
    atoms = Atoms(f"H{len(pos)}", positions=pos.astype(np.float64), cell=cell if cell is not None else np.zeros(3),
                  pbc=pbc)
    i, j, d, D, S = ase_neighbor_list("ijdDS", atoms, cutoff)
    mi, mj, md, mD, mS = mdnl.neighbor_list("ijdDS", pos, cell, pbc, cutoff, backend="cpu")
    ours, theirs = keyed(mi, mj, mS), keyed(i, j, S)
    assert len(ours) == len(set(ours)), "a pair appears twice"
    missing, extra = set(theirs) - set(ours), set(ours) - set(theirs)
    assert not missing and not extra, f"{name}: missing {sorted(missing)[:5]}, extra {sorted(extra)[:5]}"
    ref = {k: (dv, Dv) for k, dv, Dv in zip(theirs, d, D)}
    for k, dv, Dv in zip(ours, md, mD):
        assert abs(ref[k][0] - dv) <= 1e-6 * max(1.0, dv), f"{name}: d of {k}: {dv} vs ASE {ref[k][0]}"
        np.testing.assert_allclose(Dv, ref[k][1], rtol=0, atol=1e-9, err_msg=f"{name}: D of {k}")
    np.testing.assert_allclose(np.linalg.norm(mD, axis=1), md, rtol=1e-6, atol=1e-6)
    assert mi.dtype == np.int64 and mS.dtype == np.int64 and md.dtype == np.float64 and mD.shape == (len(mi), 3)
    assert np.all(np.diff(mi) >= 0), "rows come sorted by i"


@pytest.mark.parametrize("name,pos,cell,pbc,cutoff", frames(), ids=[f[0] for f in frames()])
def test_half_list_holds_each_full_pair_once(name, pos, cell, pbc, cutoff):
    fi, fj, fS = mdnl.neighbor_list("ijS", pos, cell, pbc, cutoff, full=True, backend="cpu")
    hi, hj, hS = mdnl.neighbor_list("ijS", pos, cell, pbc, cutoff, full=False, backend="cpu")
    full = set(keyed(fi, fj, fS))
    half = keyed(hi, hj, hS)
    assert 2 * len(half) == len(full)
    both = set(half) | {(j, i, tuple(-s for s in S)) for i, j, S in half}
    assert both == full


def test_single_quantity_is_one_array():
    pos = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    d = mdnl.neighbor_list("d", pos, None, False, 1.5, backend="cpu")
    assert isinstance(d, np.ndarray) and d.tolist() == [1.0, 1.0]


def cli_table(path, cutoff, full):
    out = subprocess.run([BINARY, "neighbors", path, "-c", str(cutoff), "--backend", "cpu", "-q", "-o", "-"]
                         + (["--list", "full"] if full else []), check=True, capture_output=True)
    return out.stdout


def library_table(path, cutoff, full):
    rows = ["# frame\ti\tj\tdistance\n"]
    for k, atoms in enumerate(read(path, index=":")):
        cell = np.asarray(atoms.get_cell()) if atoms.get_cell().any() else None
        i, j, d = mdnl.neighbor_list("ijd", atoms.get_positions(), cell, atoms.get_pbc(), cutoff, full=full,
                                     backend="cpu")
        rows += [f"{k}\t{a}\t{b}\t{float(np.float32(c)):.9g}\n" for a, b, c in zip(i, j, d)]
    return "".join(rows).encode()


@pytest.mark.skipif(not BINARY, reason="MDNL_BINARY is not set (ctest sets it)")
@pytest.mark.parametrize("fixture,cutoff", [("graphene-periodic.extxyz", 2.9), ("graphene-open.xyz", 1.6),
                                            ("graphene-noisy.extxyz", 2.5), ("trajectory-3frames.extxyz", 3.0)])
@pytest.mark.parametrize("full", [False, True])
def test_neighbor_list_is_byte_identical_to_the_cli(fixture, cutoff, full):
    path = os.path.join(DATA, fixture)
    assert library_table(path, cutoff, full) == cli_table(path, cutoff, full)


def lj(r, eps, sig):
    return 4 * eps * ((sig / r) ** 12 - (sig / r) ** 6)


def test_energy_matches_a_pair_sum():
    rng = np.random.default_rng(5)
    cell = np.diag([6.0, 6.5, 7.0])
    pos = rng.uniform(0, 6, (60, 3))
    rc = 2.5
    i, j, d = mdnl.neighbor_list("ijd", pos, cell, True, rc, full=False, backend="cpu")
    ref = float(np.sum(lj(d, 1.0, 1.1) - lj(rc, 1.0, 1.1)))
    total, per_atom = mdnl.energy(pos, cell, True, rc, "lj", per_atom=True, epsilon=1.0, sigma=1.1, backend="cpu")
    assert total == pytest.approx(ref, rel=1e-9)
    assert float(np.sum(per_atom)) == pytest.approx(total, rel=1e-12)
    unshifted = mdnl.energy(pos, cell, True, rc, "lj", shift=False, epsilon=1.0, sigma=1.1, backend="cpu")
    assert unshifted == pytest.approx(ref + len(d) * lj(rc, 1.0, 1.1), rel=1e-9)
    morse = mdnl.energy(pos, cell, True, rc, "morse", d0=0.5, alpha=1.5, r0=1.2, shift=False, backend="cpu")
    x = np.exp(-1.5 * (d - 1.2))
    assert morse == pytest.approx(float(np.sum(0.5 * (x * x - 2 * x))), rel=1e-9)


def test_rdf_counts_every_ordered_pair():
    rng = np.random.default_rng(7)
    cell = np.diag([8.0, 8.0, 8.0])
    frames = [(rng.uniform(0, 8, (50, 3)), cell, [True] * 3) for _ in range(3)]
    res = mdnl.rdf(frames, 3.0, 30, backend="cpu")
    pairs = np.mean([len(mdnl.neighbor_list("i", p, c, b, 3.0, backend="cpu")) for p, c, b in frames])
    assert res["n"][0, -1] * 50 == pytest.approx(pairs, rel=1e-12)
    assert res["g"] is not None and res["r"][0] == pytest.approx(0.05)
    assert np.mean(res["g"][0, 15:]) == pytest.approx(1.0, abs=0.3)  # an ideal gas


def test_rdf_partial_pairs_need_species():
    acc = mdnl.RDF(2.0, 10, pairs=[(0, 1)], backend="cpu")
    with pytest.raises(ValueError, match="species"):
        acc.add(np.zeros((2, 3)), np.eye(3) * 5, True)
    acc.add(np.array([[0.0, 0, 0], [1.0, 0, 0], [4.2, 0, 0]]), np.eye(3) * 5, True, species=[0, 1, 1])
    res = acc.result()
    assert res["count_per_atom"].sum() == 2  # the A atom: B at 1.0 and, through the cell, at 0.8


# ---- errors: a Python exception with a clear message, never a crash ----

def test_integer_positions_are_a_type_error():
    with pytest.raises(TypeError, match="float64 or float32"):
        mdnl.neighbor_list("ij", np.zeros((3, 3), dtype=np.int64), None, False, 1.0)


@pytest.mark.parametrize("shape", [(3,), (4, 2), (2, 3, 1)])
def test_wrong_shape_is_a_value_error(shape):
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        mdnl.neighbor_list("ij", np.zeros(shape), None, False, 1.0)


def test_bad_cell_and_pbc_are_value_errors():
    with pytest.raises(ValueError, match="3x3"):
        mdnl.neighbor_list("ij", np.zeros((2, 3)), np.eye(2), True, 1.0)
    with pytest.raises(ValueError, match="no cell"):
        mdnl.neighbor_list("ij", np.zeros((2, 3)), None, True, 1.0)
    with pytest.raises(ValueError, match="one or three"):
        mdnl.neighbor_list("ij", np.zeros((2, 3)), np.eye(3), [True, False], 1.0)


def test_bad_quantities_and_backend_are_value_errors():
    with pytest.raises(ValueError, match="ijdDS"):
        mdnl.neighbor_list("ijx", np.zeros((2, 3)), None, False, 1.0)
    with pytest.raises(ValueError, match="backend"):
        mdnl.neighbor_list("ij", np.zeros((2, 3)), None, False, 1.0, backend="gpu")


def test_bad_cutoff_is_a_usage_error():
    with pytest.raises(mdnl.MdnlError, match="cutoff") as e:
        mdnl.neighbor_list("ij", np.zeros((2, 3)), None, False, -1.0, backend="cpu")
    assert e.value.status == 2


def test_nan_position_is_an_input_error_naming_the_atom():
    pos = np.zeros((3, 3))
    pos[1, 2] = np.nan
    with pytest.raises(mdnl.MdnlError, match="atom") as e:
        mdnl.neighbor_list("ij", pos, np.eye(3) * 4, True, 1.0, backend="cpu")
    assert e.value.status == 3


def test_singular_cell_is_an_input_error():
    with pytest.raises(mdnl.MdnlError) as e:
        mdnl.neighbor_list("ij", np.zeros((2, 3)), np.array([[1.0, 0, 0], [2.0, 0, 0], [0, 0, 1.0]]), True, 0.5,
                           backend="cpu")
    assert e.value.status == 3


def test_work_beyond_the_limit_is_an_input_error():
    # 3 atoms in a 1e-3 cell: billions of images within the cutoff
    with pytest.raises(mdnl.MdnlError, match="limit") as e:
        mdnl.neighbor_list("ij", np.zeros((3, 3)), np.eye(3) * 1e-3, True, 1.0, backend="cpu")
    assert e.value.status == 3


def test_energy_parameters_are_checked():
    with pytest.raises(TypeError, match="sigma"):
        mdnl.energy(np.zeros((2, 3)), None, False, 1.0, "lj", epsilon=1.0)
    with pytest.raises(ValueError, match="potential"):
        mdnl.energy(np.zeros((2, 3)), None, False, 1.0, "buckingham")
    with pytest.raises(mdnl.MdnlError) as e:
        mdnl.energy(np.zeros((2, 3)), None, False, 1.0, "lj", epsilon=-1.0, sigma=1.0, backend="cpu")
    assert e.value.status == 2


@pytest.mark.skipif(mdnl.cuda_devices() > 0, reason="a CUDA device is present")
def test_cuda_backend_without_a_device_is_a_resource_error():
    with pytest.raises(mdnl.MdnlError) as e:
        mdnl.neighbor_list("ij", np.zeros((2, 3)), None, False, 1.0, backend="cuda")
    assert e.value.status == 4


def test_empty_system_gives_empty_arrays():
    i, j, d, D, S = mdnl.neighbor_list("ijdDS", np.zeros((0, 3)), np.eye(3) * 3, True, 1.0, backend="cpu")
    assert i.shape == (0,) and D.shape == (0, 3) and S.shape == (0, 3)


def test_work_limit_is_a_keyword_and_its_refusal_names_it():
    """The library's work guard: max_pairs= lowers (or raises) the limit of
    the call's context, and the refusal names the keyword, not the command
    line's --max-pairs nor the C struct's field."""
    side = np.arange(8) * 1.1
    pos = np.stack(np.meshgrid(side, side, side, indexing="ij"), axis=-1).reshape(-1, 3)
    cell = np.diag([8.8] * 3)
    with pytest.raises(mdnl.MdnlError) as e:
        mdnl.neighbor_list("ij", pos, cell, True, 2.0, backend="cpu", max_pairs=100)
    assert e.value.status == 3 and "limit of 100 pairs" in str(e.value), str(e.value)
    assert "raise the limit with max_pairs=N" in str(e.value), str(e.value)
    assert "--max-pairs" not in str(e.value) and "mdnl_context_options" not in str(e.value), str(e.value)
    i, j = mdnl.neighbor_list("ij", pos, cell, True, 2.0, backend="cpu")  # the default context is its own
    assert len(i) > 0
    stacked = np.zeros((20000, 3))
    with pytest.raises(mdnl.MdnlError, match=r"in one cell .*Raise the limit with max_pairs=N"):
        mdnl.energy(stacked, np.diag([100.0] * 3), True, 3.0, "lj", backend="cpu", max_pairs=1e6, epsilon=1.0,
                    sigma=1.0)
    with pytest.raises(ValueError, match="max_pairs"):
        mdnl.neighbor_list("ij", pos, cell, True, 2.0, backend="cpu", max_pairs=-1)


# ---- streams: frames in flight, results in frame order ----

def stream_frames(nframes=7, seed=11):
    """Frames of varying size, cell and periodicity (each ticket's buffers
    regrow and shrink), partly outside their cells; species 0..2."""
    rng = np.random.default_rng(seed)
    cells = [(TRICLINIC * 1.6, [True, True, True]), (np.diag([7.0, 7.5, 8.0]), [True, False, True]),
             (None, [False, False, False]), (np.diag([3.0, 3.2, 3.4]), [True, True, True])]
    out = []
    for k in range(nframes):
        cell, pbc = cells[k % len(cells)]
        n = int(rng.integers(20, 140))
        pos = rng.uniform(-1.0, 8.0, (n, 3))
        out.append((pos, cell, pbc, rng.integers(0, 3, n)))
    return out


def one_call_histogram(pos, cell, pbc, r_max, bins, species=None, pairs=None):
    """mdnl_histogram, the one-call function the stream's histogram equals."""
    from mdnl import _clib
    sys, keep, _, _ = mdnl._system(pos, cell, pbc)
    sp = None if species is None else np.ascontiguousarray(species, dtype=np.int32)
    pa = None if not pairs else np.ascontiguousarray(pairs, dtype=np.int32)
    counts = np.zeros((max(1, 0 if pa is None else len(pa)), bins), dtype=np.uint64)
    vol = _clib.ctypes.c_double()
    mdnl._check(_clib.lib.mdnl_histogram(mdnl._context("cpu").handle, _clib.ctypes.byref(sys), r_max, bins,
                                         None if sp is None else sp.ctypes.data, 0 if pa is None else len(pa),
                                         None if pa is None else pa.ctypes.data, counts.ctypes.data,
                                         _clib.ctypes.byref(vol)))
    return counts, vol.value


def assert_frame_equals_one_calls(r, frame, cutoff, full, r_max=None, bins=None, pairs=None):
    pos, cell, pbc, species = frame
    ref = mdnl.neighbor_list("ijdDS", pos, cell, pbc, cutoff, full=full, backend="cpu")
    for q, a in zip("ijdDS", ref):
        got = getattr(r, q)
        assert got.dtype == a.dtype and got.shape == a.shape, (r.index, q)
        assert np.array_equal(got, a), f"frame {r.index}: {q} differs from neighbor_list's"
    e = mdnl.energy(pos, cell, pbc, cutoff, "lj", epsilon=1.0, sigma=0.9, backend="cpu")
    assert r.energy == pytest.approx(e, rel=1e-12, abs=1e-12), r.index
    if r_max is not None:
        counts, vol = one_call_histogram(pos, cell, pbc, r_max, bins, species, pairs)
        assert np.array_equal(r.counts, counts), f"frame {r.index}: histogram differs from mdnl_histogram's"
        assert r.volume == vol
        sp = np.asarray(species)
        for p, (a, b) in enumerate(pairs or []):
            assert (r.na[p], r.nb[p]) == (np.sum(sp == a), np.sum(sp == b)), r.index


@pytest.mark.parametrize("full", [True, False])
def test_stream_equals_the_one_call_functions_frame_by_frame(full):
    frames = stream_frames()
    pairs = [(0, 1), (2, 2), (1, 0)]
    opts = dict(cutoff=2.2, neighbors="ijdDS", full=full, potential="lj", epsilon=1.0, sigma=0.9, r_max=3.0,
                bins=24, pairs=pairs, backend="cpu")
    with mdnl.Stream(tickets=2, **opts) as s:
        # by hand: frame k on ticket k % 2, frame k - 1 collected after it is submitted
        got = []
        for k in range(len(frames) + 1):
            if k < len(frames):
                pos, cell, pbc, sp = frames[k]
                assert s.submit(k % 2, pos, cell, pbc, species=sp) == k
            if k > 0:
                got.append(s.collect((k - 1) % 2))
        assert [r.index for r in got] == list(range(len(frames)))
        for r, f in zip(got, frames):
            assert_frame_equals_one_calls(r, f, 2.2, full, 3.0, 24, pairs)
        assert s.method == "cell"
        # the generator, on the same stream: every ticket reused again
        again = list(s.run(frames, start=100))
    assert [r.index for r in again] == [100 + k for k in range(len(frames))]
    for r, f in zip(again, frames):
        assert_frame_equals_one_calls(r, f, 2.2, full, 3.0, 24, pairs)
    for tickets in (1, 3, 32):  # depth 1, 3 and 4 in flight
        out = list(mdnl.stream_frames(frames, tickets=tickets, **opts))
        assert len(out) == len(frames)
        for r, f in zip(out, frames):
            assert_frame_equals_one_calls(r, f, 2.2, full, 3.0, 24, pairs)


def test_stream_work_alone_and_the_total_histogram():
    frames = stream_frames(5, seed=3)
    for r, (pos, cell, pbc, _) in zip(mdnl.stream_frames(frames, cutoff=2.0, neighbors="dj", backend="cpu"), frames):
        j, d = mdnl.neighbor_list("jd", pos, cell, pbc, 2.0, backend="cpu")
        assert np.array_equal(r.j, j) and np.array_equal(r.d, d)
        assert r.i is None and r.S is None and r.energy is None and r.counts is None
    for r, (pos, cell, pbc, _) in zip(mdnl.stream_frames(frames, r_max=2.5, bins=10, backend="cpu"), frames):
        counts, vol = one_call_histogram(pos, cell, pbc, 2.5, 10)
        assert r.counts.shape == (1, 10) and np.array_equal(r.counts, counts) and r.volume == vol
        assert r.na.tolist() == [len(pos)] and r.i is None and r.energy is None
    for r, (pos, cell, pbc, _) in zip(mdnl.stream_frames(frames, cutoff=2.0, potential="morse", d0=0.5, alpha=1.5,
                                                         r0=1.2, shift=False, backend="cpu"), frames):
        e = mdnl.energy(pos, cell, pbc, 2.0, "morse", d0=0.5, alpha=1.5, r0=1.2, shift=False, backend="cpu")
        assert r.energy == pytest.approx(e, rel=1e-12, abs=1e-12)


def test_stream_energy_table_equals_mdnl_energy_types():
    from mdnl import _clib
    coeff = {(0, 0): dict(epsilon=1.0, sigma=0.9, cutoff=2.0), (0, 1): dict(epsilon=0.5, sigma=1.0, cutoff=2.4),
             (1, 1): dict(epsilon=0.8, sigma=1.1, cutoff=1.8)}
    frames = [(pos, cell, pbc, sp, sp % 2) for pos, cell, pbc, sp in stream_frames(5, seed=4)]
    out = list(mdnl.stream_frames(frames, potential="lj", pair_coeff=coeff, tickets=2, backend="cpu"))
    params = (_clib.PairParams * 4)()
    cuts = np.zeros((2, 2))
    for (a, b), v in coeff.items():
        for x, y in ((a, b), (b, a)):
            params[2 * x + y] = _clib.PairParams(_clib.PAIR_LJ, v["epsilon"], v["sigma"], 0, 0, 0, 1)
            cuts[x, y] = v["cutoff"]
    for r, (pos, cell, pbc, _, types) in zip(out, frames):
        sys, keep, _, _ = mdnl._system(pos, cell, pbc)
        ty = np.ascontiguousarray(types, dtype=np.int32)
        total = _clib.ctypes.c_double()
        mdnl._check(_clib.lib.mdnl_energy_types(mdnl._context("cpu").handle, _clib.ctypes.byref(sys), 2, params,
                                                cuts.ctypes.data, ty.ctypes.data, _clib.ctypes.byref(total), None))
        assert r.energy == pytest.approx(total.value, rel=1e-12, abs=1e-12), r.index
    with pytest.raises(ValueError, match="types="):
        list(mdnl.stream_frames([f[:4] for f in frames[:1]], potential="lj", pair_coeff=coeff, backend="cpu"))
    with pytest.raises(ValueError, match=r"misses the type pairs \[\(1, 1\)\]"):
        mdnl.Stream(potential="lj", pair_coeff={(0, 0): coeff[0, 0], (1, 0): coeff[0, 1]}, backend="cpu")
    # a pair given both ways with its parameters in another order is the same pair
    both = dict(coeff)
    both[1, 0] = dict(sigma=1.0, cutoff=2.4, epsilon=0.5)
    with mdnl.Stream(potential="lj", pair_coeff=both, backend="cpu") as s:
        assert s.ntypes == 2


def test_stream_nan_frame_raises_for_that_frame_only():
    frames = [f[:3] for f in stream_frames(8, seed=5)]
    bad = frames[5][0].copy()
    bad[2, 1] = np.nan
    frames[5] = (bad, frames[5][1], frames[5][2])
    with mdnl.Stream(cutoff=2.0, neighbors="ij", tickets=4, source="traj.xyz", backend="cpu") as s:
        got = []
        with pytest.raises(mdnl.MdnlError, match=r"traj\.xyz: frame 5: atom 2 has a non-finite coordinate") as e:
            for r in s.run(frames):
                got.append(r.index)
        assert e.value.status == 3 and e.value.frame == 5
        assert got == [0, 1, 2, 3, 4], "the frames before the bad one come out, in order"
        assert s.in_flight == []
        # the stream goes on: the good frames after it, and the bad one's ticket by hand
        assert [r.index for r in s.run(frames[6:], start=6)] == [6, 7]
        with pytest.raises(mdnl.MdnlError, match="frame 9: atom 2") as e:
            s.submit(1, bad, frames[5][1], frames[5][2], index=9)
        assert e.value.frame == 9 and s.in_flight == []
        s.submit(1, *frames[0])  # the ticket is free again
        r = s.collect(1)
        assert r.index == 10 and np.array_equal(r.i, mdnl.neighbor_list("i", *frames[0], 2.0, backend="cpu"))


def test_stream_bad_array_raises_in_frame_order():
    frames = [f[:3] for f in stream_frames(4, seed=6)]
    frames[2] = (np.zeros((4, 2)), None, False)
    got = []
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        for r in mdnl.stream_frames(frames, cutoff=2.0, neighbors="i", tickets=4, backend="cpu"):
            got.append(r.index)
    assert got == [0, 1]


def test_stream_malformed_frame_raises_after_the_frames_before_it():
    frames = [f[:3] for f in stream_frames(5, seed=6)]
    frames[3] = frames[3] + (None, None, "a sixth item")
    got = []
    with pytest.raises(ValueError, match="a frame tuple"):
        for r in mdnl.stream_frames(frames, cutoff=2.0, neighbors="i", tickets=4, backend="cpu"):
            got.append(r.index)
    assert got == [0, 1, 2]


def test_stream_ticket_misuse_raises():
    pos, cell, pbc, _ = stream_frames(1)[0]
    with mdnl.Stream(cutoff=2.0, neighbors="ij", tickets=6, backend="cpu") as s:
        with pytest.raises(mdnl.MdnlError, match=r"ticket 6, expected 0\.\.5") as e:
            s.submit(6, pos, cell, pbc)
        assert e.value.status == 2
        with pytest.raises(mdnl.MdnlError, match="ticket 0 was not submitted") as e:
            s.collect(0)
        assert e.value.status == 2
        s.submit(0, pos, cell, pbc)
        with pytest.raises(mdnl.MdnlError, match="ticket 0 is in flight: collect it first") as e:
            s.submit(0, pos, cell, pbc)
        assert e.value.status == 2
        for t in (1, 2, 3):
            s.submit(t, pos, cell, pbc)
        with pytest.raises(mdnl.MdnlError, match="4 tickets are submitted and not collected") as e:
            s.submit(4, pos, cell, pbc)
        assert e.value.status == 2
        with pytest.raises(mdnl.MdnlError, match="collect ticket 0 first") as e:
            s.collect(2)
        assert e.value.status == 2 and s.in_flight == [0, 1, 2, 3]
        with pytest.raises(ValueError, match="nothing in flight"):
            next(s.run([(pos, cell, pbc)]))
        # a frame given without an index is one more than the last given, refused or not
        assert [s.collect(t).index for t in (0, 1, 2, 3)] == [1, 3, 4, 5]
    with pytest.raises(ValueError, match="closed"):
        s.submit(0, pos, cell, pbc)
    with pytest.raises(mdnl.MdnlError, match=r"tickets = 33, expected 1\.\.32") as e:
        mdnl.Stream(cutoff=2.0, neighbors="ij", tickets=33, backend="cpu")
    assert e.value.status == 2
    with pytest.raises(ValueError, match="needs some work"):
        mdnl.Stream(backend="cpu")
    with pytest.raises(TypeError, match="sigma"):
        mdnl.Stream(cutoff=2.0, potential="lj", epsilon=1.0, backend="cpu")
    with pytest.raises(ValueError, match="species="):
        mdnl.Stream(r_max=2.0, bins=4, pairs=[(0, 1)], backend="cpu").submit(0, pos, cell, pbc)


def test_stream_holds_the_frame_arrays_until_collected():
    """The library borrows a frame's arrays from submit to collect (here
    the species, which collect counts; the positions, on CUDA). The caller's
    arrays and the package's own copies of them (int64 species as int32, a
    strided positions view made contiguous) are released right after submit
    and the freed memory reused: the results are still the frame's."""
    rng = np.random.default_rng(8)
    cell = np.diag([9.0, 9.0, 9.0])
    frames = [(rng.uniform(0, 9, (2000, 3)), rng.integers(0, 2, 2000)) for _ in range(3)]
    refs = [one_call_histogram(p, cell, True, 2.0, 8, sp, [(0, 1)]) for p, sp in frames]
    with mdnl.Stream(r_max=2.0, bins=8, pairs=[(0, 1)], tickets=3, backend="cpu") as s:
        for t, (p, sp) in enumerate(frames):
            wide = np.zeros((len(p), 4))
            wide[:, :3] = p
            s.submit(t, wide[:, :3], cell.copy(), [True] * 3, species=sp.tolist())
            del wide
        junk = [np.full(2000, 1, dtype=np.int32) for _ in range(64)]  # the freed blocks, overwritten
        junk += [np.full((2000, 3), 50.0) for _ in range(16)]
        for t, (p, sp) in enumerate(frames):
            r = s.collect(t)
            assert np.array_equal(r.counts, refs[t][0]), t
            assert (r.na[0], r.nb[0]) == (np.sum(sp == 0), np.sum(sp == 1)), t
    del junk


def test_stream_results_are_copies():
    frames = [f[:3] for f in stream_frames(4, seed=9)]
    with mdnl.Stream(cutoff=2.0, neighbors="ijd", r_max=2.0, bins=5, tickets=1, backend="cpu") as s:
        first = s.run(frames)
        r0 = next(first)
        kept = (r0.i.copy(), r0.d.copy(), r0.counts.copy())
        rest = list(first)  # ticket 0 reused for every later frame
    assert len(rest) == 3
    assert np.array_equal(r0.i, kept[0]) and np.array_equal(r0.d, kept[1]) and np.array_equal(r0.counts, kept[2])

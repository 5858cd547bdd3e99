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

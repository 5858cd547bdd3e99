"""GPU tests of the Python package: CuPy arrays and PyTorch CUDA tensors in
and out (mdnl_neighbors_device), against the same library's host results,
which must be the same bytes (the kernels' contract), plus energy and RDF
on a CUDA context and a CUDA stream of frames. Plain asserts, so that it runs with pytest or alone (the
GPU host may have no pytest); a case whose package (CuPy, PyTorch) is
missing is skipped, and the whole file without a CUDA device. On the GPU
host, with the bundle of tools/gpu/bundle.sh:

    source .gpu/env.sh; MDNL_LIBRARY=.gpu/lib/libmdnl.so PYTHONPATH=python python3 python/tests/test_gpu.py
"""
import contextlib
import importlib
import re
import sys

import numpy as np

import mdnl

CELL = np.array([[9.0, 0.0, 0.0], [1.5, 8.5, 0.0], [0.7, 1.1, 9.5]])


class Skip(Exception):
    pass


def need(module):
    if mdnl.cuda_devices() < 1:
        raise Skip("no CUDA device (or libmdnl built without CUDA)")
    try:
        return importlib.import_module(module)
    except ImportError:
        raise Skip(f"{module} is not installed")


@contextlib.contextmanager
def raises(kind, pattern):
    try:
        yield
    except kind as e:
        assert re.search(pattern, str(e)), f"{kind.__name__} without {pattern!r}: {e}"
        return
    raise AssertionError(f"expected {kind.__name__} matching {pattern!r}")


def system(n=2000, seed=3):
    return np.random.default_rng(seed).uniform(-2.0, 12.0, (n, 3))


def assert_same(dev, ref, to_host, what):
    for name, a, b in zip("ijdDS", dev, ref):
        a = to_host(a)
        assert a.shape == b.shape and a.dtype == b.dtype, f"{what}: {name} {a.shape} {a.dtype} vs {b.shape} {b.dtype}"
        if name == "D":
            assert np.allclose(a, b, rtol=0, atol=1e-12), f"{what}: D differs"
        else:
            assert np.array_equal(a, b), f"{what}: {name} differs from the host's"


def run_skipping(fn):
    try:
        fn()
    except Skip as s:
        if "pytest" in sys.modules:
            import pytest
            pytest.skip(str(s))
        raise


def _cupy_cases():
    cp = need("cupy")
    for dtype in ("float64", "float32"):
        for pbc in ([True, True, True], [True, False, True]):
            for full in (True, False):
                what = f"cupy {dtype} pbc {pbc} {'full' if full else 'half'}"
                pos = system().astype(dtype)
                ref = mdnl.neighbor_list("ijdDS", pos, CELL, pbc, 3.5, full=full, backend="cpu")
                assert_same(mdnl.neighbor_list("ijdDS", pos, CELL, pbc, 3.5, full=full, backend="cuda"), ref,
                            np.asarray, what + " (host arrays, CUDA context)")
                out = mdnl.neighbor_list("ijdDS", cp.asarray(pos), CELL, pbc, 3.5, full=full)
                assert all(isinstance(a, cp.ndarray) for a in out), what
                assert_same(out, ref, cp.asnumpy, what)


def test_cupy_in_cupy_out_same_as_host():
    run_skipping(_cupy_cases)


def _torch_cases():
    torch = need("torch")
    for dtype in ("float64", "float32"):
        pos = system().astype(dtype)
        ref = mdnl.neighbor_list("ijdDS", pos, CELL, True, 3.5, backend="cpu")
        out = mdnl.neighbor_list("ijdDS", torch.from_numpy(pos).to("cuda"), CELL, True, 3.5)
        assert all(a.is_cuda for a in out)
        assert_same(out, ref, lambda a: a.cpu().numpy(), f"torch {dtype}")


def test_torch_cuda_in_torch_out_same_as_host():
    run_skipping(_torch_cases)


def _small_cell():
    cp = need("cupy")
    pos = np.random.default_rng(1).uniform(0, 2, (6, 3))
    cell = np.diag([2.0, 2.2, 2.4])
    ref = mdnl.neighbor_list("ijdDS", pos, cell, True, 3.3, backend="cpu")
    assert_same(mdnl.neighbor_list("ijdDS", cp.asarray(pos), cell, True, 3.3), ref, cp.asnumpy, "small cell")


def test_small_cell_on_the_device():
    run_skipping(_small_cell)


def _errors():
    torch = need("torch")
    with raises(TypeError, "float64 or float32"):
        mdnl.neighbor_list("ij", torch.zeros((4, 3), dtype=torch.int32, device="cuda"), CELL, True, 1.0)
    with raises(ValueError, r"shape \(n, 3\)"):
        mdnl.neighbor_list("ij", torch.zeros((4, 2), device="cuda", dtype=torch.float64), CELL, True, 1.0)
    with raises(TypeError, "grad"):
        mdnl.neighbor_list("ij", torch.zeros((4, 3), device="cuda", dtype=torch.float64, requires_grad=True), CELL,
                           True, 1.0)
    with raises(ValueError, "contiguous"):
        mdnl.neighbor_list("ij", torch.zeros((3, 4), device="cuda", dtype=torch.float64)[:, :3], CELL, True, 1.0)
    with raises(ValueError, "host arrays"):
        mdnl.neighbor_list("ij", torch.zeros((4, 3), device="cuda", dtype=torch.float64), CELL, True, 1.0,
                           backend="cpu")
    pos = torch.zeros((3, 3), device="cuda", dtype=torch.float64)
    pos[1, 1] = float("nan")
    try:
        mdnl.neighbor_list("ij", pos, CELL, True, 1.0)
        raise AssertionError("a NaN position was accepted")
    except mdnl.MdnlError as e:
        assert e.status == 3 and "atom 1" in str(e), str(e)


def test_device_errors_are_exceptions():
    run_skipping(_errors)


def _subsets_and_empty_rows():
    """Each quantity alone and together, rows left empty (an open frame with
    atoms far apart) and a list with no pair at all: the device results are
    the host's."""
    cp = need("cupy")
    torch = need("torch")
    rng = np.random.default_rng(5)
    pos = np.concatenate([rng.uniform(0, 6, (300, 3)), rng.uniform(40, 400, (200, 3))])
    for cell, pbc in ((None, False), (np.diag([401.0, 402.0, 403.0]), [True, False, True])):
        for full in (True, False):
            for q in ("i", "j", "d", "S", "D", "ij", "ji", "ijdDS", "Sdi"):
                ref = mdnl.neighbor_list(q, pos, cell, pbc, 1.7, full=full, backend="cpu")
                ref = ref if isinstance(ref, tuple) else (ref,)
                for kind, dev, to_host in (("cupy", cp.asarray(pos), cp.asnumpy),
                                           ("torch", torch.from_numpy(pos).to("cuda"), lambda a: a.cpu().numpy())):
                    got = mdnl.neighbor_list(q, dev, cell, pbc, 1.7, full=full)
                    got = got if isinstance(got, tuple) else (got,)
                    assert len(got) == len(ref), (kind, q)
                    for name, a, b in zip(q, got, ref):
                        a = to_host(a)
                        assert a.dtype == b.dtype and a.shape == b.shape, (kind, q, name, a.dtype, a.shape, b.shape)
                        assert np.array_equal(a, b) if name != "D" else np.allclose(a, b, rtol=0, atol=1e-12), \
                            f"{kind} {q} {name} full={full} cell={cell is not None}"
    for kind, dev in (("cupy", cp.asarray(pos)), ("torch", torch.from_numpy(pos).to("cuda"))):
        i, j, d, D, S = mdnl.neighbor_list("ijdDS", dev, None, False, 1e-3)
        assert all(a.shape[0] == 0 for a in (i, j, d, D, S)), kind
        assert D.shape == (0, 3) and S.shape == (0, 3), kind


def test_quantity_subsets_and_empty_rows_on_the_device():
    run_skipping(_subsets_and_empty_rows)


def _stacked():
    """100,000 atoms at one point of a periodic box, already on the device:
    the library's occupancy guard refuses them before any pair work, and the
    refusal is a Python exception naming the densest cell."""
    cp = need("cupy")
    torch = need("torch")
    cell = np.diag([100.0, 100.0, 100.0])
    for what, pos in (("cupy", cp.zeros((100000, 3))),
                      ("torch", torch.zeros((100000, 3), dtype=torch.float32, device="cuda"))):
        try:
            mdnl.neighbor_list("ij", pos, cell, True, 3.0)
            raise AssertionError(f"{what}: stacked atoms were accepted")
        except mdnl.MdnlError as e:
            assert e.status == 3, f"{what}: {e}"
            assert "100000 of 100000 atoms are in one cell" in str(e) and "cell (0 0 0)" in str(e), f"{what}: {e}"
    # the same context goes on with a liquid
    pos = np.random.default_rng(2).uniform(0, 30, (20000, 3))
    ref = mdnl.neighbor_list("ij", pos, np.diag([30.0] * 3), True, 2.5, backend="cpu")
    got = mdnl.neighbor_list("ij", cp.asarray(pos), np.diag([30.0] * 3), True, 2.5)
    assert all(np.array_equal(cp.asnumpy(a), b) for a, b in zip(got, ref))


def test_stacked_device_positions_raise_the_library_error():
    run_skipping(_stacked)


def _energy_rdf():
    need("numpy")
    pos = np.mod(system(3000, 9), 9.0)
    cell = np.diag([9.0, 9.0, 9.0])
    e_cpu = mdnl.energy(pos, cell, True, 2.5, "lj", epsilon=1.0, sigma=0.9, backend="cpu")
    e_gpu = mdnl.energy(pos, cell, True, 2.5, "lj", epsilon=1.0, sigma=0.9, backend="cuda")
    assert abs(e_gpu - e_cpu) <= 1e-12 * abs(e_cpu), (e_cpu, e_gpu)
    r_cpu = mdnl.rdf([(pos, cell, True)], 4.0, 40, backend="cpu")
    r_gpu = mdnl.rdf([(pos, cell, True)], 4.0, 40, backend="cuda")
    assert np.array_equal(r_cpu["count_per_atom"], r_gpu["count_per_atom"])


def test_energy_and_rdf_on_cuda_agree_with_cpu():
    run_skipping(_energy_rdf)


def _stream():
    """A CUDA stream over frames of varying size and periodicity, each
    frame's arrays made inside the loop and dropped by the caller at once
    (the stream holds them until collected): every frame's list, S, D,
    energy and histogram are the CPU one-call functions'; a NaN frame of a
    periodic cell (found at its collect on CUDA) raises after the frames
    before it, for its own index."""
    need("numpy")
    rng = np.random.default_rng(12)
    frames = []
    for k in range(12):
        n = int(rng.integers(500, 4000))
        pbc = [True, True, True] if k % 3 else [True, False, True]
        frames.append((rng.uniform(-2.0, 11.0, (n, 3)), CELL, pbc, rng.integers(0, 2, n)))
    opts = dict(cutoff=3.0, neighbors="ijdDS", full=False, potential="lj", epsilon=1.0, sigma=0.9, r_max=4.0,
                bins=40, pairs=[(0, 1), (1, 1)], tickets=4)

    def fresh(frames):  # new arrays each frame, unreferenced once submitted
        for pos, cell, pbc, sp in frames:
            yield (np.array(pos), np.array(cell), list(pbc), sp.tolist())

    out = list(mdnl.stream_frames(fresh(frames), backend="cuda", **opts))
    cpu = list(mdnl.stream_frames(fresh(frames), backend="cpu", **opts))
    assert [r.index for r in out] == list(range(len(frames)))
    for r, c, (pos, cell, pbc, sp) in zip(out, cpu, frames):
        ref = mdnl.neighbor_list("ijdDS", pos, cell, pbc, 3.0, full=False, backend="cpu")
        for name, a in zip("ijdDS", ref):
            got = getattr(r, name)
            assert np.array_equal(got, a) if name != "D" else np.allclose(got, a, rtol=0, atol=1e-12), \
                f"frame {r.index}: {name} differs from the CPU's"
        e = mdnl.energy(pos, cell, pbc, 3.0, "lj", epsilon=1.0, sigma=0.9, backend="cpu")
        assert abs(r.energy - e) <= 1e-12 * abs(e), (r.index, r.energy, e)
        assert np.array_equal(r.counts, c.counts) and np.array_equal(r.na, c.na) and r.volume == c.volume, r.index
    bad = frames[7][0].copy()
    bad[5, 0] = np.nan
    frames[7] = (bad, CELL, [True] * 3, frames[7][3])
    got = []
    try:
        for r in mdnl.stream_frames(fresh(frames), backend="cuda", source="traj", **opts):
            got.append(r.index)
        raise AssertionError("a NaN frame was accepted")
    except mdnl.MdnlError as e:
        assert e.status == 3 and e.frame == 7 and "traj: frame 7: atom 5" in str(e), str(e)
    assert got == list(range(7)), got


def test_stream_on_cuda_equals_the_cpu_one_calls():
    run_skipping(_stream)


if __name__ == "__main__":
    failed = 0
    for name, fn in list(globals().items()):
        if name.startswith("test_") and callable(fn):
            try:
                fn()
                print(f"PASS {name}")
            except Skip as s:
                print(f"SKIP {name}: {s}")
            except Exception as e:  # report every case, then fail
                failed += 1
                print(f"FAIL {name}: {type(e).__name__}: {e}")
    print(f"mdnl {mdnl.version} ({mdnl.library_path}): {failed} failed")
    sys.exit(1 if failed else 0)

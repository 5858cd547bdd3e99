"""GPU tests of the Python package: CuPy arrays and PyTorch CUDA tensors in
and out (mdnl_neighbors_device), against the same library's host results,
which must be the same bytes (the kernels' contract). Skips without a CUDA
device or without CuPy / PyTorch. On the GPU host:

    MDNL_LIBRARY=build/libmdnl.so PYTHONPATH=python python3 -m pytest -q python/tests/test_gpu.py
"""
import numpy as np
import pytest

import mdnl

pytestmark = pytest.mark.skipif(mdnl.cuda_devices() < 1, reason="no CUDA device (or libmdnl built without CUDA)")

CELL = np.array([[9.0, 0.0, 0.0], [1.5, 8.5, 0.0], [0.7, 1.1, 9.5]])


def system(n=2000, seed=3):
    rng = np.random.default_rng(seed)
    return rng.uniform(-2.0, 12.0, (n, 3))


def host_reference(pos, pbc, cutoff, full, backend):
    return mdnl.neighbor_list("ijdDS", pos, CELL, pbc, cutoff, full=full, backend=backend)


def assert_same(dev, ref, to_host):
    for name, a, b in zip("ijdDS", dev, ref):
        a = to_host(a)
        assert a.shape == b.shape and a.dtype == b.dtype, name
        if name == "D":
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-12, err_msg=name)  # double, maybe fused
        else:
            assert np.array_equal(a, b), f"{name} differs from the host's"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("pbc", [[True, True, True], [True, False, True]])
@pytest.mark.parametrize("full", [True, False])
def test_cupy_in_cupy_out_same_as_host(dtype, pbc, full):
    cp = pytest.importorskip("cupy")
    pos = system().astype(dtype)
    ref = host_reference(pos, pbc, 3.5, full, "cpu")
    assert_same(host_reference(pos, pbc, 3.5, full, "cuda"), ref, np.asarray)
    out = mdnl.neighbor_list("ijdDS", cp.asarray(pos), CELL, pbc, 3.5, full=full)
    assert all(isinstance(a, cp.ndarray) for a in out)
    assert_same(out, ref, cp.asnumpy)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_torch_cuda_in_torch_out_same_as_host(dtype):
    torch = pytest.importorskip("torch")
    pos = system().astype(dtype)
    ref = host_reference(pos, [True] * 3, 3.5, True, "cpu")
    t = torch.from_numpy(pos).to("cuda")
    out = mdnl.neighbor_list("ijdDS", t, CELL, [True] * 3, 3.5)
    assert all(a.is_cuda for a in out)
    assert_same(out, ref, lambda a: a.cpu().numpy())


def test_small_cell_on_the_device():
    cp = pytest.importorskip("cupy")
    pos = np.random.default_rng(1).uniform(0, 2, (6, 3))
    cell = np.diag([2.0, 2.2, 2.4])
    ref = mdnl.neighbor_list("ijdDS", pos, cell, True, 3.3, backend="cpu")
    out = mdnl.neighbor_list("ijdDS", cp.asarray(pos), cell, True, 3.3)
    for name, a, b in zip("ijdDS", out, ref):
        if name == "D":
            np.testing.assert_allclose(cp.asnumpy(a), b, atol=1e-12)
        else:
            assert np.array_equal(cp.asnumpy(a), b), name


def test_device_errors_are_exceptions():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="float64 or float32"):
        mdnl.neighbor_list("ij", torch.zeros((4, 3), dtype=torch.int32, device="cuda"), CELL, True, 1.0)
    with pytest.raises(ValueError, match=r"shape \(n, 3\)"):
        mdnl.neighbor_list("ij", torch.zeros((4, 2), device="cuda", dtype=torch.float64), CELL, True, 1.0)
    with pytest.raises(TypeError, match="grad"):
        mdnl.neighbor_list("ij", torch.zeros((4, 3), device="cuda", dtype=torch.float64, requires_grad=True), CELL,
                           True, 1.0)
    with pytest.raises(ValueError, match="contiguous"):
        mdnl.neighbor_list("ij", torch.zeros((3, 4), device="cuda", dtype=torch.float64).t()[:, :3].t()[:3].t(),
                           CELL, True, 1.0)
    pos = torch.zeros((3, 3), device="cuda", dtype=torch.float64)
    pos[1, 1] = float("nan")
    with pytest.raises(mdnl.MdnlError, match="atom") as e:
        mdnl.neighbor_list("ij", pos, CELL, True, 1.0)
    assert e.value.status == 3


def test_energy_and_rdf_on_cuda_agree_with_cpu():
    pos = system(3000, 9) % 9.0
    cell = np.diag([9.0, 9.0, 9.0])
    e_cpu = mdnl.energy(pos, cell, True, 2.5, "lj", epsilon=1.0, sigma=0.9, backend="cpu")
    e_gpu = mdnl.energy(pos, cell, True, 2.5, "lj", epsilon=1.0, sigma=0.9, backend="cuda")
    assert e_gpu == pytest.approx(e_cpu, rel=1e-12)
    r_cpu = mdnl.rdf([(pos, cell, True)], 4.0, 40, backend="cpu")
    r_gpu = mdnl.rdf([(pos, cell, True)], 4.0, 40, backend="cuda")
    assert np.array_equal(r_cpu["count_per_atom"], r_gpu["count_per_atom"])

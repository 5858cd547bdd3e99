"""examples/neighbors.py — mdnl's neighbor list next to ASE's, from Python.

    pip install ./python && MDNL_LIBRARY=/tmp/p/lib/libmdnl.so python3 examples/neighbors.py
"""
import numpy as np

import mdnl

rng = np.random.default_rng(0)
cell = np.array([[10.0, 0.0, 0.0], [2.0, 9.0, 0.0], [1.0, 1.0, 8.0]])
positions = rng.uniform(0.0, 9.0, (500, 3))

i, j, d, D, S = mdnl.neighbor_list("ijdDS", positions, cell, [True, True, False], 3.0)
print(f"mdnl {mdnl.version} ({mdnl.library_path}): {len(i)} pairs, mean distance {d.mean():.4f}")
assert np.allclose(np.linalg.norm(D, axis=1), d, atol=1e-5)
assert np.allclose(positions[j] - positions[i] + S @ cell, D)

try:
    from ase import Atoms
    from ase.neighborlist import neighbor_list

    ai, aj, aS = neighbor_list("ijS", Atoms(positions=positions, cell=cell, pbc=[True, True, False]), 3.0)
    same = set(zip(i, j, map(tuple, S))) == set(zip(ai, aj, map(tuple, aS)))
    print("the same pairs as ASE:", same)
except ImportError:
    pass

total, per_atom = mdnl.energy(positions, cell, [True, True, False], 3.0, "lj", per_atom=True, epsilon=0.01,
                              sigma=1.0)
print(f"LJ energy {total:.6f}, per atom {per_atom[:3]}")

"""mdnl: neighbor lists, pair energies and RDFs of MD frames, on the CPU or an
NVIDIA GPU, over libmdnl (ctypes; see docs/library.md).

    i, j, d, D, S = mdnl.neighbor_list("ijdDS", positions, cell, pbc, cutoff)
    with mdnl.Stream(cutoff=3.0, neighbors="ijd", potential="lj", epsilon=1.0, sigma=1.0) as s:
        for res in s.run(frames):   # frame k+1 queued while frame k runs
            res.i, res.j, res.d, res.energy

NumPy arrays in, NumPy arrays out, in ASE's conventions
(ase.neighborlist.neighbor_list). CuPy arrays and PyTorch CUDA tensors in,
arrays of the same kind out on the same device, without a copy through the
host (read through __cuda_array_interface__), when libmdnl has CUDA.
"""
import ctypes
import threading

import numpy as np

from . import _clib
from ._clib import lib

__all__ = ["MdnlError", "neighbor_list", "energy", "RDF", "rdf", "Stream", "StreamResult", "stream_frames",
           "cuda_devices", "version", "library_path"]

version = lib.mdnl_version().decode()
library_path = _clib.path


class MdnlError(RuntimeError):
    """A libmdnl call failed; `status` is the mdnl_status (2 usage, 3 input data, 4 resources, 1 internal);
    `frame` the index of the stream frame it belongs to (Stream calls), else None."""

    def __init__(self, status, message, frame=None):
        super().__init__(f"mdnl: {message} ({_clib.STATUS_NAMES.get(status, 'status %d' % status)})")
        self.status = status
        self.frame = frame


def _check(status, frame=None):
    if status != _clib.OK:
        raise MdnlError(status, lib.mdnl_last_error().decode(errors="replace"), frame)


def cuda_devices():
    """Number of CUDA devices libmdnl can use (0 when built without CUDA)."""
    return lib.mdnl_cuda_devices()


# ---- contexts: one per thread and (backend, device), created on first use ----

_local = threading.local()
_BACKENDS = {"auto": _clib.COMPUTE_AUTO, "cpu": _clib.COMPUTE_CPU, "cuda": _clib.COMPUTE_CUDA}


class _Context:
    def __init__(self, backend, device, max_pairs):
        opts = _clib.ContextOptions(_BACKENDS[backend], device, max_pairs, 0)
        handle = ctypes.c_void_p()
        _check(lib.mdnl_context_create(ctypes.byref(opts), ctypes.byref(handle)))
        self.handle = handle
        # the work guard's refusals name the limit as this package takes it
        _check(lib.mdnl_context_set_limit_name(handle, b"max_pairs=N"))
        self.backend = "cuda" if lib.mdnl_context_backend(handle) == _clib.COMPUTE_CUDA else "cpu"

    def __del__(self):
        if getattr(self, "handle", None):
            lib.mdnl_context_free(self.handle)
            self.handle = None


def _context(backend, device=0, max_pairs=None):
    if backend not in _BACKENDS:
        raise ValueError(f"mdnl: backend must be one of auto, cpu, cuda, not {backend!r}")
    limit = 0.0 if max_pairs is None else float(max_pairs)
    if not limit >= 0 or limit == float("inf"):
        raise ValueError(f"mdnl: max_pairs must be a finite number >= 0 (0 or None: the default), got {max_pairs!r}")
    cache = getattr(_local, "contexts", None)
    if cache is None:
        cache = _local.contexts = {}
    key = (backend, device, limit)
    if key not in cache:
        if len(cache) >= 8:  # a sweep over limits keeps a few contexts, not one each
            del cache[next(iter(cache))]
        cache[key] = _Context(backend, device, limit)
    return cache[key]


# ---- arrays: NumPy, or a device array (CuPy, PyTorch) ----

def _is_torch(x):
    return type(x).__module__.split(".")[0] == "torch"


def _device_interface(x):
    """The __cuda_array_interface__ of a CUDA array, or None for a host array."""
    if _is_torch(x):
        if not x.is_cuda:
            return None
        if x.requires_grad:
            raise TypeError("mdnl: positions require grad; pass positions.detach()")
        return x.__cuda_array_interface__
    return getattr(x, "__cuda_array_interface__", None)


def _device_index(x):
    if _is_torch(x):
        return x.device.index if x.device.index is not None else 0
    dev = getattr(x, "device", None)
    return getattr(dev, "id", 0) if dev is not None else 0


def _cell_pbc(cell, pbc):
    c = None
    if cell is not None:
        c = np.ascontiguousarray(np.asarray(cell, dtype=np.float64))
        if c.shape == (3,):
            c = np.ascontiguousarray(np.diag(c))
        if c.shape != (3, 3):
            raise ValueError(f"mdnl: cell must be 3x3 (lattice vectors as rows) or 3 lengths, got shape {c.shape}")
    if pbc is None:
        p = [c is not None and bool(np.any(c))] * 3
    else:
        pa = np.asarray(pbc, dtype=bool).reshape(-1)
        if pa.size == 1:
            pa = np.repeat(pa, 3)
        if pa.size != 3:
            raise ValueError(f"mdnl: pbc must be one or three booleans, got {pa.size}")
        p = [bool(v) for v in pa]
    if any(p) and (c is None or not np.any(c)):
        raise ValueError("mdnl: pbc is set along an axis, but there is no cell")
    if c is not None and not np.any(c):
        c = None  # ASE's empty cell
    return c, p


def _system(positions, cell, pbc):
    """(mdnl_system, keep-alive list, device interface or None, array kind)."""
    c, p = _cell_pbc(cell, pbc)
    iface = _device_interface(positions)
    keep = [c]
    if iface is not None:
        shape, typestr = tuple(iface["shape"]), iface["typestr"]
        if len(shape) != 2 or shape[1] != 3:
            raise ValueError(f"mdnl: positions must have shape (n, 3), got {shape}")
        if typestr not in ("<f8", "<f4"):
            raise TypeError(f"mdnl: positions must be float64 or float32, got {typestr}")
        itemsize = 8 if typestr == "<f8" else 4
        strides = iface.get("strides")
        if strides is not None and tuple(strides) != (3 * itemsize, itemsize) and shape[0] > 1:
            raise ValueError("mdnl: device positions must be C-contiguous (call .contiguous() / cupy.ascontiguousarray)")
        ptr = iface["data"][0]
        n = shape[0]
        dtype = _clib.FLOAT64 if typestr == "<f8" else _clib.FLOAT32
        kind = "torch" if _is_torch(positions) else "cupy"
    else:
        if _is_torch(positions):
            positions = positions.detach().numpy()
        a = np.asarray(positions)
        if a.dtype not in (np.float64, np.float32):
            raise TypeError(f"mdnl: positions must be float64 or float32, got {a.dtype}")
        if a.ndim != 2 or a.shape[1] != 3:
            raise ValueError(f"mdnl: positions must have shape (n, 3), got {a.shape}")
        a = np.ascontiguousarray(a)
        keep.append(a)
        ptr, n = a.ctypes.data, a.shape[0]
        dtype = _clib.FLOAT64 if a.dtype == np.float64 else _clib.FLOAT32
        kind = "numpy"
    sys = _clib.System(n, ptr, dtype, c.ctypes.data_as(ctypes.POINTER(ctypes.c_double)) if c is not None else None,
                       (ctypes.c_int * 3)(*[int(v) for v in p]))
    return sys, keep, iface, kind


class _DeviceView:
    """A borrowed device array (the library's), for PyTorch to read in place."""

    def __init__(self, ptr, shape, typestr, device):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr or 0, False),
                                         "version": 2, "strides": None}
        self.device = device


class _HostView:
    """A borrowed host array (the library's), for NumPy to read in place."""

    def __init__(self, ptr, shape, typestr):
        self.__array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, True), "version": 3}


def _current_stream(kind, device):
    if kind == "torch":
        import torch
        return torch.cuda.current_stream(device).cuda_stream
    import cupy
    return cupy.cuda.get_current_stream().ptr  # the caller made `device` current


# The rows of a CSR list, i and j (widened to int64) in one pass: a thread
# per entry k finds its row by a binary search of the offsets (which stay
# in L2). Compiled by CuPy on first use (then cached on disk); None when it
# cannot be, and the searchsorted below is used instead.
_cupy_rows = None
_CUPY_ROWS_SOURCE = """
long long lo = 0, hi = nrows - 1;
while (lo < hi) {
    const long long mid = lo + (hi - lo + 1) / 2;
    if (off[mid] <= (long long)i) lo = mid; else hi = mid - 1;
}
row = lo;
col = jin;
"""


# The per-pair arrays of a list: (letter, field of NeighborList, columns,
# the library's type, ASE's type: None means a plain copy).
_PAIR_FIELDS = (("j", "indices", 1, "<i4", "int64"), ("d", "distances", 1, "<f4", "float64"),
                ("S", "shifts", 3, "<i4", "int64"), ("D", "vectors", 3, "<f8", None))


def _pair_arrays(out, quantities, view, convert, res):
    """res with each requested per-pair array not in it yet: view(ptr, shape,
    typestr) reads the library's array in place, convert(array, type) writes
    it once into a new array of ASE's type (type None: a copy)."""
    m = out.npairs
    for q, field, cols, typestr, to in _PAIR_FIELDS:
        if q in quantities and q not in res:
            res[q] = convert(view(getattr(out, field), (m,) if cols == 1 else (m, cols), typestr), to)
    return res


def _cupy_results(cupy, out, quantities, dev):
    """CuPy arrays of `quantities` from the library's device list: each read
    in place (no pointer query: the device is known) and written once into
    its own array of ASE's dtype."""
    global _cupy_rows
    n, m = out.n, out.npairs

    def view(ptr, shape, typestr):
        dtype = np.dtype(typestr)
        nbytes = int(np.prod(shape)) * dtype.itemsize
        mem = cupy.cuda.UnownedMemory(ptr, nbytes, None, dev)
        return cupy.ndarray(shape, dtype, cupy.cuda.MemoryPointer(mem, 0))

    empty = {"i": ((0,), np.int64), "j": ((0,), np.int64), "d": ((0,), np.float64), "S": ((0, 3), np.int64),
             "D": ((0, 3), np.float64)}
    if m == 0:
        return {q: cupy.empty(*empty[q]) for q in quantities}
    j = view(out.indices, (m,), "<i4")
    res = {}
    if "i" in quantities:
        offsets = view(out.offsets, (n + 1,), "<i8")
        if _cupy_rows is None:
            try:
                _cupy_rows = cupy.ElementwiseKernel("int32 jin, raw int64 off, int64 nrows", "int64 row, int64 col",
                                                    _CUPY_ROWS_SOURCE, "mdnl_csr_rows")
                _cupy_rows(j, offsets, n)  # compiles now, so that a failure falls back here
            except Exception:  # no NVRTC, or an old CuPy: the generic way
                _cupy_rows = False
        if _cupy_rows:
            res["i"], res["j"] = _cupy_rows(j, offsets, n)
        else:
            res["i"] = cupy.searchsorted(offsets[1:], cupy.arange(m, dtype=cupy.int64), side="right")
    return _pair_arrays(out, quantities, view, lambda a, to: a.astype(to) if to else a.copy(), res)


def _torch_results(torch, out, quantities, dev):
    """PyTorch tensors of `quantities` from the library's device list, each
    read in place and written once into its own tensor of ASE's dtype."""
    n, m = out.n, out.npairs
    device = torch.device("cuda", dev)
    dtypes = {"i": torch.int64, "j": torch.int64, "d": torch.float64, "S": torch.int64, "D": torch.float64}
    if m == 0:
        return {q: torch.empty((0, 3) if q in "SD" else (0,), dtype=dtypes[q], device=device) for q in quantities}

    def view(ptr, shape, typestr):
        return torch.as_tensor(_DeviceView(ptr, shape, typestr, dev), device=device)

    res = {}
    if "i" in quantities:  # row r repeated by its length: one pass, no host synchronisation (output_size)
        res["i"] = torch.repeat_interleave(torch.diff(view(out.offsets, (n + 1,), "<i8")), output_size=m)
    return _pair_arrays(out, quantities, view, lambda a, to: a.to(getattr(torch, to)) if to else a.clone(), res)


def _host_results(out, quantities):
    """NumPy arrays of `quantities` from the library's host list, each read in
    place and written once into its own array of ASE's dtype."""
    n, m = out.n, out.npairs

    def view(ptr, shape, typestr):
        if int(np.prod(shape)) == 0:
            return np.empty(shape, dtype=typestr)
        return np.asarray(_HostView(ptr, shape, typestr))

    res = {}
    if "i" in quantities:
        res["i"] = np.repeat(np.arange(n, dtype=np.int64), np.diff(view(out.offsets, (n + 1,), "<i8")))
    return _pair_arrays(out, quantities, view, lambda a, to: a.astype(to) if to else a.copy(), res)


# ---- neighbor lists ----

def neighbor_list(quantities, positions, cell=None, pbc=None, cutoff=None, full=True, backend="auto",
                  max_pairs=None):
    """The pairs within `cutoff`, as ASE's neighbor_list(quantities, atoms, cutoff) gives them.

    quantities: letters of i (first atom), j (second atom), d (distance), D
    (vector r_j - r_i + S·cell), S (integer image shift); one array per letter,
    in that order (a single array for one letter). positions: (n, 3) float64
    or float32: a NumPy array, or a CuPy array / PyTorch CUDA tensor (results
    then of the same kind, on the same device). cell: 3x3 (rows a, b, c), 3
    lengths, or None; pbc: three booleans (default: periodic when a cell is
    given). full: each pair in both directions (ASE's default); False: once.
    backend: "auto" (CUDA when there is a device, for host arrays too), "cpu"
    or "cuda". max_pairs: the work limit (the library's work guard; None:
    its default, 1e5 per atom). Pairs are sorted by i, then j, then distance.
    """
    if not isinstance(quantities, str) or not quantities or any(q not in "ijdDS" for q in quantities):
        raise ValueError(f"mdnl: quantities must be letters of 'ijdDS', got {quantities!r}")
    if cutoff is None:
        raise TypeError("mdnl: neighbor_list needs a cutoff")
    cutoff = float(cutoff)
    sys, keep, iface, kind = _system(positions, cell, pbc)
    flags = (_clib.NEIGHBORS_FULL if full else 0)
    if "S" in quantities:
        flags |= _clib.NEIGHBORS_SHIFTS
    if "D" in quantities:
        flags |= _clib.NEIGHBORS_VECTORS
    out = _clib.NeighborList()
    if iface is not None:
        dev = _device_index(positions)
        if backend == "cpu":
            raise ValueError("mdnl: positions are on a CUDA device; backend 'cpu' needs host arrays")
        if cuda_devices() < 1:
            raise ValueError("mdnl: positions are on a CUDA device, but libmdnl has no CUDA device "
                             "(built without CUDA, or no driver)")
        ctx = _context("cuda", dev, max_pairs)
        if kind == "torch":
            import torch
            _check(lib.mdnl_neighbors_device(ctx.handle, ctypes.byref(sys), cutoff, flags,
                                             _current_stream(kind, dev), ctypes.byref(out)))
            res = _torch_results(torch, out, quantities, dev)
        else:
            import cupy
            with cupy.cuda.Device(dev):
                _check(lib.mdnl_neighbors_device(ctx.handle, ctypes.byref(sys), cutoff, flags,
                                                 _current_stream(kind, dev), ctypes.byref(out)))
                res = _cupy_results(cupy, out, quantities, dev)
    else:
        ctx = _context(backend, 0, max_pairs)
        _check(lib.mdnl_neighbors(ctx.handle, ctypes.byref(sys), cutoff, flags, ctypes.byref(out)))
        res = _host_results(out, quantities)
    del keep
    result = tuple(res[q] for q in quantities)
    return result[0] if len(result) == 1 else result


# ---- energies ----

_POTENTIALS = {"lj": ("epsilon", "sigma"), "morse": ("d0", "alpha", "r0")}


def _pair_params(potential, shift, params, where=""):
    """The mdnl_pair_params of `potential` with `params` (exactly its names)."""
    if potential not in _POTENTIALS:
        raise ValueError(f"mdnl: potential must be 'lj' or 'morse', got {potential!r}")
    names = _POTENTIALS[potential]
    unknown = set(params) - set(names)
    missing = set(names) - set(params)
    if unknown or missing:
        raise TypeError(f"mdnl: {potential}{where} takes parameters {', '.join(names)}"
                        + (f"; unknown: {', '.join(sorted(unknown))}" if unknown else "")
                        + (f"; missing: {', '.join(sorted(missing))}" if missing else ""))
    return _clib.PairParams(_clib.PAIR_LJ if potential == "lj" else _clib.PAIR_MORSE, float(params.get("epsilon", 0)),
                            float(params.get("sigma", 0)), float(params.get("d0", 0)), float(params.get("alpha", 0)),
                            float(params.get("r0", 0)), 1 if shift else 0)


def energy(positions, cell=None, pbc=None, cutoff=None, potential="lj", per_atom=False, shift=True, backend="auto",
           max_pairs=None, **params):
    """The pair energy of a frame: potential "lj" (epsilon, sigma) or "morse"
    (d0, alpha, r0), every pair within `cutoff` once, U(cutoff) subtracted
    when shift. Returns the total (float), or (total, per-atom energies) with
    per_atom=True (half of each pair's energy to each atom). Host arrays.
    max_pairs: the work limit, as in neighbor_list."""
    if cutoff is None:
        raise TypeError("mdnl: energy needs a cutoff")
    pp = _pair_params(potential, shift, params)
    if _device_interface(positions) is not None:
        raise TypeError("mdnl: energy takes host arrays (NumPy); copy device positions to the host first")
    sys, keep, _, _ = _system(positions, cell, pbc)
    total = ctypes.c_double()
    pa = np.zeros(sys.n, dtype=np.float64) if per_atom else None
    _check(lib.mdnl_energy(_context(backend, 0, max_pairs).handle, ctypes.byref(sys), ctypes.byref(pp), float(cutoff),
                           ctypes.byref(total), pa.ctypes.data if per_atom else None))
    del keep
    return (total.value, pa) if per_atom else total.value


# ---- RDFs ----

class RDF:
    """An RDF accumulated over frames (`mdnl rdf`): bins uniform bins on
    [0, r_max); pairs=None for the total RDF, or a list of (A, B) species ids
    for partial ones; volume overrides the cells' volume; max_pairs: the work
    limit, as in neighbor_list."""

    def __init__(self, r_max, bins, pairs=None, volume=None, backend="auto", max_pairs=None):
        self._backend = backend
        self._max_pairs = max_pairs
        pa = None if not pairs else np.ascontiguousarray(np.asarray(pairs, dtype=np.int32))
        if pa is not None and (pa.ndim != 2 or pa.shape[1] != 2):
            raise ValueError(f"mdnl: pairs must be a list of (A, B) species ids, got shape {pa.shape}")
        self.npairs = 0 if pa is None else pa.shape[0]
        self.bins = int(bins)
        h = ctypes.c_void_p()
        _check(lib.mdnl_rdf_create(float(r_max), self.bins, self.npairs, pa.ctypes.data if pa is not None else None,
                                   float(volume or 0.0), ctypes.byref(h)))
        self._h = h

    def __del__(self):
        if getattr(self, "_h", None):
            lib.mdnl_rdf_free(self._h)
            self._h = None

    def add(self, positions, cell=None, pbc=None, species=None):
        """Adds one frame (host arrays); species: (n,) integer ids, needed with pairs."""
        if _device_interface(positions) is not None:
            raise TypeError("mdnl: RDF.add takes host arrays (NumPy)")
        sys, keep, _, _ = _system(positions, cell, pbc)
        sp = _ids(species, sys.n, "species")
        if sp is None and self.npairs:
            raise ValueError("mdnl: this RDF has species pairs; pass species=")
        _check(lib.mdnl_rdf_add(_context(self._backend, 0, self._max_pairs).handle, self._h, ctypes.byref(sys),
                                sp.ctypes.data if sp is not None else None))
        del keep

    @property
    def frames(self):
        return lib.mdnl_rdf_frames(self._h)

    def result(self):
        """dict of r (bin centres), g, count_per_atom and n, each (max(1, npairs), bins) but r;
        g is None unless every frame had a volume."""
        nh = max(1, self.npairs)
        r = np.zeros(self.bins)
        g, cpa, n = (np.zeros((nh, self.bins)) for _ in range(3))
        _check(lib.mdnl_rdf_values(self._h, r.ctypes.data, g.ctypes.data, cpa.ctypes.data, n.ctypes.data))
        return {"r": r, "g": g if lib.mdnl_rdf_g_defined(self._h) else None, "count_per_atom": cpa, "n": n}


def rdf(frames, r_max, bins, pairs=None, volume=None, backend="auto", max_pairs=None):
    """The RDF over `frames`: ASE Atoms (or objects with get_positions,
    get_cell, get_pbc) or (positions, cell, pbc[, species]) tuples; species of
    Atoms are their atomic numbers. Returns RDF.result()."""
    acc = RDF(r_max, bins, pairs, volume, backend, max_pairs)
    for f in frames:
        positions, cell, pbc, species, _ = _frame_fields(f, bool(pairs))
        acc.add(positions, cell, pbc, species)
    return acc.result()


def _ids(values, n, what, checked=False):
    """(n,) integer ids as a new int32 array (never wrapped), or None;
    checked: ids >= 0 checked here (where the library does not)."""
    if values is None:
        return None
    a = np.asarray(values)
    if a.shape != (n,) or not (np.issubdtype(a.dtype, np.integer) or (a.size == 0 and a.dtype == np.float64)):
        raise ValueError(f"mdnl: {what} must be {n} integers, got {a.dtype} {a.shape}")
    low = 0 if checked else np.iinfo(np.int32).min
    if a.size and (a.min() < low or a.max() > np.iinfo(np.int32).max):
        raise ValueError(f"mdnl: {what} must be int32 integers{' >= 0' if checked else ''}, got {a.min()}..{a.max()}")
    return np.array(a, dtype=np.int32, order="C")  # always a copy: the library may borrow it


def _frame_fields(f, atomic_numbers):
    """(positions, cell, pbc, species, types) of a frame: an ASE Atoms (or an
    object with get_positions, get_cell, get_pbc; species its atomic numbers
    when `atomic_numbers`), a tuple (positions, cell, pbc[, species[,
    types]]), or a dict of those names."""
    if hasattr(f, "get_positions"):
        return (f.get_positions(), np.asarray(f.get_cell()), f.get_pbc(),
                f.get_atomic_numbers() if atomic_numbers else None, None)
    if isinstance(f, dict):
        unknown = set(f) - {"positions", "cell", "pbc", "species", "types"}
        if unknown or "positions" not in f:
            raise ValueError(f"mdnl: a frame dict has positions, cell, pbc, species, types; got {sorted(f)}")
        return f["positions"], f.get("cell"), f.get("pbc"), f.get("species"), f.get("types")
    f = tuple(f)
    if not 1 <= len(f) <= 5:
        raise ValueError(f"mdnl: a frame tuple is (positions, cell, pbc[, species[, types]]), got {len(f)} items")
    return f + (None,) * (5 - len(f))


# ---- streams: frames in flight on the device, results in frame order ----

class StreamResult:
    """One frame's results, copied out of the stream (Stream.collect,
    Stream.run): `index` (the frame's), the list's arrays i, j, d, D, S
    that the stream's `neighbors` letters ask for (ASE's dtypes, as
    neighbor_list; None otherwise), `energy` (the total, or None),
    `counts` ((max(1, npairs), bins) uint64 pair-distance counts), `na`,
    `nb` ((max(1, npairs),) int64: the frame's A and B atoms of each species
    pair) and `volume` (the normalisation volume, 0 for an open frame), or
    None without a histogram."""

    __slots__ = ("index", "i", "j", "d", "D", "S", "energy", "counts", "na", "nb", "volume")

    def __init__(self, index):
        for name in self.__slots__:
            setattr(self, name, None)
        self.index = index

    def __repr__(self):
        parts = [f"index={self.index}"]
        if self.i is not None or self.j is not None or self.d is not None:
            parts.append(f"pairs={len(next(a for a in (self.i, self.j, self.d, self.S, self.D) if a is not None))}")
        if self.energy is not None:
            parts.append(f"energy={self.energy!r}")
        if self.counts is not None:
            parts.append(f"counts={self.counts.shape}")
        return f"StreamResult({', '.join(parts)})"


class Stream:
    """The same per-frame work over a sequence of frames, with frame k+1
    checked and queued while the device still works on frame k (libmdnl's
    streams, docs/library.md). A context manager; close() frees it.

    The work (each optional, at least one):
      neighbors: letters of 'ijdDS' (as neighbor_list), full=True or False,
        at `cutoff`;
      potential: "lj" (epsilon, sigma) or "morse" (d0, alpha, r0) as
        keywords, shifted at `cutoff` when shift; or pair_coeff, a dict
        {(a, b): {parameters..., "cutoff": rc}} over atom types 0..ntypes-1
        (at most 4; (a, b) or (b, a) for each pair; the frames give types=),
        with `cutoff` their largest (its default);
      r_max, bins: a pair-distance histogram on [0, r_max), the total, or
        one per species pair (A, B) of `pairs` (the frames give species=).
    tickets: frames in flight or prepared (1..32; at most 4 submitted and not
    collected). source: names the input in the library's messages
    ("SOURCE: frame INDEX: ..."). backend, device, max_pairs: the context,
    as neighbor_list's (the thread's context, shared with the other calls).

    Frames are host arrays. A frame's arrays (positions, cell, species,
    types, or the copies made of them) are held by the stream from its
    submit until its ticket is collected: the device reads them in between,
    so the caller may drop its own arrays at once (but not write into them
    before the collect: float64 positions are used in place). Results are
    copied out at collect. Like a context, a stream is used by one thread at
    a time.
    """

    def __init__(self, cutoff=None, neighbors=None, full=True, potential=None, shift=True, pair_coeff=None,
                 r_max=None, bins=None, pairs=None, tickets=2, source=None, backend="auto", device=0,
                 max_pairs=None, **params):
        self._h = None
        if neighbors is not None and (not isinstance(neighbors, str) or not neighbors
                                      or any(q not in "ijdDS" for q in neighbors)):
            raise ValueError(f"mdnl: neighbors must be letters of 'ijdDS', got {neighbors!r}")
        if (r_max is None) != (bins is None):
            raise TypeError("mdnl: a histogram needs both r_max and bins")
        if params and potential is None:
            raise TypeError(f"mdnl: parameters {', '.join(sorted(params))} without a potential")
        if pair_coeff is not None and potential is None:
            raise TypeError("mdnl: pair_coeff needs a potential ('lj' or 'morse')")
        if neighbors is None and potential is None and r_max is None:
            raise ValueError("mdnl: a stream needs some work: neighbors=, potential= or r_max= and bins=")
        if isinstance(tickets, bool) or not isinstance(tickets, (int, np.integer)):
            raise TypeError(f"mdnl: tickets must be an integer, got {tickets!r}")
        o = _clib.StreamOptions()
        o.tickets = int(tickets)  # 0: the library's default, 2
        self._keep = []  # the option arrays, for the create call
        self.quantities = neighbors or ""
        self.ntypes = 0
        if potential is not None:
            o.energy = 1
            if pair_coeff is None:
                o.params = _pair_params(potential, shift, params)
            else:
                if params:
                    raise TypeError(f"mdnl: parameters go in pair_coeff with a table, not {', '.join(sorted(params))}")
                table, cuts = self._table(potential, shift, pair_coeff)
                if cutoff is None:
                    cutoff = float(cuts.max())
                o.ntypes, o.type_params, o.type_cutoffs = self.ntypes, table, cuts.ctypes.data
                self._keep += [table, cuts]
        if neighbors is not None or potential is not None:
            if cutoff is None:
                raise TypeError("mdnl: a stream with a list or an energy needs a cutoff")
            o.cutoff = float(cutoff)
        if neighbors is not None:
            o.neighbors = 1
            o.flags = ((_clib.NEIGHBORS_FULL if full else 0) | (_clib.NEIGHBORS_SHIFTS if "S" in neighbors else 0)
                       | (_clib.NEIGHBORS_VECTORS if "D" in neighbors else 0))
        self.npairs = 0
        if r_max is not None:
            o.histogram, o.r_max, o.bins = 1, float(r_max), int(bins)
            self.bins = int(bins)
            if pairs:
                pa = np.ascontiguousarray(np.asarray(pairs, dtype=np.int32))
                if pa.ndim != 2 or pa.shape[1] != 2:
                    raise ValueError(f"mdnl: pairs must be a list of (A, B) species ids, got shape {pa.shape}")
                self.npairs, o.npairs, o.pairs = pa.shape[0], pa.shape[0], pa.ctypes.data
                self._keep.append(pa)
        if source is not None:
            o.source = str(source).encode()
        self.energy, self.histogram = potential is not None, r_max is not None
        self._ctx = _context(backend, device, max_pairs)  # held: the stream is freed before its context
        h = ctypes.c_void_p()
        _check(lib.mdnl_stream_create(self._ctx.handle, ctypes.byref(o), ctypes.byref(h)))
        self._h = h
        self._keep = None  # the library copied the options
        self.tickets = int(tickets) if tickets else 2
        self.backend = self._ctx.backend
        self._held = {}      # ticket -> (frame struct, arrays, index): borrowed by the library until collected
        self._order = []     # tickets submitted and not collected, in submit order
        self._failed = []    # what a failed submit or collect was given: held until the stream is freed
        self._next = 0       # the index of the next frame submitted without one

    def _table(self, potential, shift, pair_coeff):
        """(ctypes [ntypes*ntypes] PairParams, [ntypes][ntypes] cutoffs) of pair_coeff."""
        keys = list(pair_coeff)
        if not keys or any(not isinstance(k, tuple) or len(k) != 2 for k in keys):
            raise ValueError("mdnl: pair_coeff maps pairs of atom types (a, b) to their parameters and cutoff")
        nt = 1 + max(int(t) for k in keys for t in k)
        if min(int(t) for k in keys for t in k) < 0 or nt > _clib.ENERGY_MAX_TYPES:
            raise ValueError(f"mdnl: pair_coeff's atom types must be 0..{_clib.ENERGY_MAX_TYPES - 1}")
        table = (_clib.PairParams * (nt * nt))()
        cuts = np.zeros((nt, nt))
        given = {}
        for (a, b), v in pair_coeff.items():
            v = dict(v)
            if "cutoff" not in v:
                raise TypeError(f"mdnl: pair_coeff[{a}, {b}] has no cutoff")
            rc = float(v.pop("cutoff"))
            pp = _pair_params(potential, shift, v, f" (pair_coeff[{a}, {b}])")
            for x, y in ((a, b), (b, a)):
                if (x, y) in given and given[x, y] != (rc, sorted(v.items())):
                    raise ValueError(f"mdnl: pair_coeff gives ({a}, {b}) twice, differently")
                given[x, y] = (rc, sorted(v.items()))
                table[x * nt + y], cuts[x, y] = pp, rc
        missing = [(a, b) for a in range(nt) for b in range(a, nt) if (a, b) not in given]
        if missing:
            raise ValueError(f"mdnl: pair_coeff misses the type pairs {missing}")
        self.ntypes = nt
        return table, cuts

    # -- lifetime --

    def close(self):
        """Waits for the device's work and frees the stream; then releases
        the frames it held. Idempotent."""
        if getattr(self, "_h", None):
            lib.mdnl_stream_free(self._h)
            self._h = None
        self._held, self._order, self._failed = {}, [], []

    def __del__(self):
        self.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _live(self):
        if not self._h:
            raise ValueError("mdnl: the stream is closed")
        return self._h

    @property
    def method(self):
        """The list algorithm the last frame used ("auto" before the first)."""
        return lib.mdnl_stream_method(self._live()).decode()

    @property
    def in_flight(self):
        """Tickets submitted and not collected, in submit order (collect them in this order)."""
        return list(self._order)

    # -- frames --

    def _frame(self, positions, cell, pbc, species, types, index):
        if _device_interface(positions) is not None:
            raise TypeError("mdnl: a stream takes host arrays (NumPy); copy device positions to the host first")
        sys, keep, _, _ = _system(positions, cell, pbc)
        sp = _ids(species, sys.n, "species", checked=True)
        ty = _ids(types, sys.n, "types")
        if self.histogram and self.npairs and sp is None:
            raise ValueError("mdnl: this stream has species pairs; pass species=")
        if self.ntypes and ty is None:
            raise ValueError("mdnl: this stream's energy has a pair_coeff table; pass types=")
        keep += [sys, sp, ty]
        if index is None:
            index = self._next
        index = int(index)
        fr = _clib.StreamFrame(sys, index, sp.ctypes.data if sp is not None else None, None,
                               ty.ctypes.data if ty is not None else None)
        return fr, keep, index

    def check(self, positions, cell=None, pbc=None, species=None, types=None, index=None):
        """The library's occupancy guard on the frame (whether its cells stay
        within the work limit), from its own positions; raises MdnlError
        (status 3, naming the densest cell) if not. Any ticket state."""
        fr, keep, index = self._frame(positions, cell, pbc, species, types, index)
        _check(lib.mdnl_stream_check(self._live(), ctypes.byref(fr)), index)
        del keep

    def submit(self, ticket, positions, cell=None, pbc=None, species=None, types=None, index=None):
        """Queues the frame's work under `ticket` (0..tickets-1, free: never
        submitted or collected since; at most 4 in flight). index: the
        frame's index in messages and in its result (default: one more than
        the last submitted). The stream holds the frame's arrays until the
        ticket is collected. Returns the index. Errors of this frame raise
        here (MdnlError with .frame) or at its collect."""
        h = self._live()
        fr, keep, index = self._frame(positions, cell, pbc, species, types, index)
        self._next = index + 1
        st = lib.mdnl_stream_submit(h, int(ticket), ctypes.byref(fr))
        if st != _clib.OK:
            self._failed.append((fr, keep))  # the device may still read it: held until close()
            _check(st, index)
        self._held[int(ticket)] = (fr, keep, index)
        self._order.append(int(ticket))
        return index

    def collect(self, ticket):
        """Waits for `ticket`'s frame (tickets are collected in submit
        order) and returns its StreamResult, copied out of the stream.
        The ticket is free again afterwards, also when its frame failed
        (MdnlError with .frame)."""
        h = self._live()
        ticket = int(ticket)
        if ticket in self._order and self._order[0] != ticket:
            raise MdnlError(_clib.ERR_USAGE, f"Stream.collect: ticket {ticket} was submitted after ticket "
                            f"{self._order[0]}: collect ticket {self._order[0]} first", self._held[ticket][2])
        res = _clib.StreamResult()
        st = lib.mdnl_stream_collect(h, ticket, ctypes.byref(res))
        held = self._held.pop(ticket, None)
        if ticket in self._order:
            self._order.remove(ticket)
        index = held[2] if held else None
        if st != _clib.OK:
            self._failed.append(held)
            _check(st, index)
        out = StreamResult(index)
        if self.quantities:
            for q, a in _host_results(res.list, self.quantities).items():
                setattr(out, q, a)
        if self.energy:
            out.energy = res.energy
        if self.histogram:
            nh = max(1, self.npairs)
            out.counts = np.asarray(_HostView(res.counts, (nh, self.bins), "<u8")).copy()
            out.na = np.asarray(_HostView(res.na, (nh,), "<i8")).copy()
            out.nb = np.asarray(_HostView(res.nb, (nh,), "<i8")).copy()
            out.volume = res.volume
        del held  # the frame's arrays: the library is done with them
        return out

    def run(self, frames, start=0):
        """Yields the StreamResult of each of `frames` in frame order, with
        up to min(tickets, 4) frames in flight. frames: ASE Atoms (species:
        their atomic numbers when the stream has species pairs), tuples
        (positions, cell, pbc[, species[, types]]) or dicts of those names;
        frame k has index start + k. An error of frame k (MdnlError with
        .frame, or a bad array) is raised after the results of the frames
        before it; the frames after it are dropped and the stream stays
        usable. The stream must have nothing in flight."""
        self._live()
        if self._order:
            raise ValueError(f"mdnl: Stream.run needs a stream with nothing in flight; collect tickets {self._order}")
        depth = min(self.tickets, _clib.STREAM_MAX_SUBMITTED)
        failure = None
        try:
            for k, f in enumerate(frames):
                if len(self._order) >= depth:
                    yield self.collect(self._order[0])
                try:  # frame k's ticket was collected: at most depth <= tickets are in flight
                    positions, cell, pbc, species, types = _frame_fields(f, self.npairs > 0)
                    self.submit((start + k) % self.tickets, positions, cell, pbc, species, types, start + k)
                except Exception as e:
                    failure = e
                    break
            while self._order:
                yield self.collect(self._order[0])
            if failure is not None:
                raise failure
        finally:  # an error, or the caller stopped early: what is still in flight is dropped
            self._drain()

    def _drain(self):
        while self._h and self._order:
            try:
                self.collect(self._order[0])
            except MdnlError:
                pass


def stream_frames(frames, **options):
    """The StreamResult of each of `frames`, in frame order, through a
    Stream(**options) of its own: `for r in mdnl.stream_frames(traj,
    cutoff=3.0, neighbors="ijd")`. See Stream.run."""
    with Stream(**options) as s:
        yield from s.run(frames)

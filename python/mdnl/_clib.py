"""ctypes declarations of libmdnl (include/mdnl/mdnl.h) and how it is found.

The library is looked for, in order: the path in the environment variable
MDNL_LIBRARY; a libmdnl.so next to this package; the system loader
(libmdnl.so.0, e.g. under an installed prefix on LD_LIBRARY_PATH).
"""
import ctypes
import ctypes.util
import os

# mdnl_status (the command line's exit codes)
OK, ERR_INTERNAL, ERR_USAGE, ERR_INPUT, ERR_RESOURCE = 0, 1, 2, 3, 4
STATUS_NAMES = {1: "internal error", 2: "usage error", 3: "input error", 4: "resource error"}

COMPUTE_AUTO, COMPUTE_CPU, COMPUTE_CUDA = 0, 1, 2
FLOAT64, FLOAT32 = 0, 1
NEIGHBORS_FULL, NEIGHBORS_SHIFTS, NEIGHBORS_VECTORS = 1, 2, 4
PAIR_LJ, PAIR_MORSE = 1, 2
ENERGY_MAX_TYPES = 4
STREAM_MAX_TICKETS, STREAM_MAX_SUBMITTED = 32, 4


class ContextOptions(ctypes.Structure):
    _fields_ = [("backend", ctypes.c_int), ("device", ctypes.c_int), ("max_pairs", ctypes.c_double),
                ("threads", ctypes.c_int)]


class System(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int64), ("positions", ctypes.c_void_p), ("dtype", ctypes.c_int),
                ("cell", ctypes.POINTER(ctypes.c_double)), ("pbc", ctypes.c_int * 3)]


class NeighborList(ctypes.Structure):
    _fields_ = [("n", ctypes.c_int64), ("npairs", ctypes.c_int64), ("offsets", ctypes.c_void_p),
                ("indices", ctypes.c_void_p), ("distances", ctypes.c_void_p), ("shifts", ctypes.c_void_p),
                ("vectors", ctypes.c_void_p)]


class PairParams(ctypes.Structure):
    _fields_ = [("style", ctypes.c_int), ("epsilon", ctypes.c_double), ("sigma", ctypes.c_double),
                ("d0", ctypes.c_double), ("alpha", ctypes.c_double), ("r0", ctypes.c_double),
                ("shift", ctypes.c_int)]


class StreamOptions(ctypes.Structure):
    _fields_ = [("tickets", ctypes.c_int), ("source", ctypes.c_char_p), ("neighbors", ctypes.c_int),
                ("flags", ctypes.c_int), ("cutoff", ctypes.c_double), ("energy", ctypes.c_int),
                ("params", PairParams), ("ntypes", ctypes.c_int32), ("type_params", ctypes.POINTER(PairParams)),
                ("type_cutoffs", ctypes.c_void_p), ("histogram", ctypes.c_int), ("r_max", ctypes.c_double),
                ("bins", ctypes.c_int32), ("npairs", ctypes.c_int32), ("pairs", ctypes.c_void_p)]


class StreamFrame(ctypes.Structure):
    _fields_ = [("system", System), ("index", ctypes.c_int64), ("species", ctypes.c_void_p),
                ("pairs", ctypes.c_void_p), ("types", ctypes.c_void_p)]


class StreamResult(ctypes.Structure):
    _fields_ = [("list", NeighborList), ("energy", ctypes.c_double), ("counts", ctypes.c_void_p),
                ("na", ctypes.c_void_p), ("nb", ctypes.c_void_p), ("volume", ctypes.c_double)]


def _candidates():
    env = os.environ.get("MDNL_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    for name in ("libmdnl.so", "libmdnl.so.0"):
        p = os.path.join(here, name)
        if os.path.exists(p):
            yield p
    yield "libmdnl.so.0"
    found = ctypes.util.find_library("mdnl")
    if found:
        yield found


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError("mdnl: libmdnl not found (set MDNL_LIBRARY to the path of libmdnl.so, or install libmdnl): "
                      + "; ".join(errors))


lib, path = _load()

_P = ctypes.c_void_p
_sigs = {
    "mdnl_last_error": (ctypes.c_char_p, []),
    "mdnl_clear_error": (None, []),
    "mdnl_version": (ctypes.c_char_p, []),
    "mdnl_context_create": (ctypes.c_int, [ctypes.POINTER(ContextOptions), ctypes.POINTER(_P)]),
    "mdnl_context_free": (None, [_P]),
    "mdnl_context_backend": (ctypes.c_int, [_P]),
    "mdnl_context_set_limit_name": (ctypes.c_int, [_P, ctypes.c_char_p]),
    "mdnl_cuda_devices": (ctypes.c_int, []),
    "mdnl_neighbors": (ctypes.c_int, [_P, ctypes.POINTER(System), ctypes.c_double, ctypes.c_int,
                                      ctypes.POINTER(NeighborList)]),
    "mdnl_neighbors_device": (ctypes.c_int, [_P, ctypes.POINTER(System), ctypes.c_double, ctypes.c_int, _P,
                                             ctypes.POINTER(NeighborList)]),
    "mdnl_energy": (ctypes.c_int, [_P, ctypes.POINTER(System), ctypes.POINTER(PairParams), ctypes.c_double,
                                   ctypes.POINTER(ctypes.c_double), _P]),
    "mdnl_energy_types": (ctypes.c_int, [_P, ctypes.POINTER(System), ctypes.c_int32, ctypes.POINTER(PairParams), _P,
                                         _P, ctypes.POINTER(ctypes.c_double), _P]),
    "mdnl_histogram": (ctypes.c_int, [_P, ctypes.POINTER(System), ctypes.c_double, ctypes.c_int32, _P, ctypes.c_int32,
                                      _P, _P, ctypes.POINTER(ctypes.c_double)]),
    "mdnl_rdf_create": (ctypes.c_int, [ctypes.c_double, ctypes.c_int32, ctypes.c_int32, _P, ctypes.c_double,
                                       ctypes.POINTER(_P)]),
    "mdnl_rdf_free": (None, [_P]),
    "mdnl_rdf_add": (ctypes.c_int, [_P, _P, ctypes.POINTER(System), _P]),
    "mdnl_rdf_frames": (ctypes.c_int64, [_P]),
    "mdnl_rdf_g_defined": (ctypes.c_int, [_P]),
    "mdnl_rdf_values": (ctypes.c_int, [_P, _P, _P, _P, _P]),
    "mdnl_stream_create": (ctypes.c_int, [_P, ctypes.POINTER(StreamOptions), ctypes.POINTER(_P)]),
    "mdnl_stream_free": (None, [_P]),
    "mdnl_stream_check": (ctypes.c_int, [_P, ctypes.POINTER(StreamFrame)]),
    "mdnl_stream_submit": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(StreamFrame)]),
    "mdnl_stream_collect": (ctypes.c_int, [_P, ctypes.c_int, ctypes.POINTER(StreamResult)]),
    "mdnl_stream_method": (ctypes.c_char_p, [_P]),
}
for _name, (_res, _args) in _sigs.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args

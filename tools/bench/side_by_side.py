#!/usr/bin/env python3
"""side_by_side.py — the same frames through mdnl, vesin and SciPy cKDTree.

Runs on the GPU host from the repository root (Python 3.12 with NumPy, CuPy
and h5py; vesin and, if missing, SciPy installed from carried wheels):

    tools/bench/side_by_side.py --mdnl "BUNDLE/run BUNDLE/bin/mdnl" --data DIR \\
        [--mdnl-json FILE] [--out DIR] [--reps 15] [--ckdtree-threads 16]

Frames (built as bench/systems.c builds them, so that the atom order is the
same): lj-1m-liquid (DIR/lj-liquid-131k.h5md replicated 2x2x2, x slowest,
then shuffled by the splitmix64 Fisher-Yates of seed 2024), lj-1m-liquid-sorted
(the same unshuffled), cu-131k (FCC a = 3.615 Å, 32^3 cells, cutoff 5 Å).

 * mdnl: `mdnl bench --json --sizes ... --data DIR` (or a JSON it wrote
   before, --mdnl-json): the default cell path's median device time (CUDA
   events from after the position upload to the CSR in device memory, the
   host synchronisations inside included), full and half lists.
 * vesin (GPU): NeighborList(cutoff, full_list).compute on CuPy float64
   arrays already on the device, quantities "ij" (its cheapest), wall time
   with a device synchronisation, median of --reps after 3 warm-ups.
 * vesin (CPU): the same on NumPy arrays, --ckdtree-threads threads, 1 run.
 * cKDTree: build + query_ball_point(workers=--ckdtree-threads) (the full
   list as Python lists), and build + query_pairs(output_type='ndarray') for
   the half list (one thread: SciPy has no parallel query_pairs); 1 run.
 * NVIDIA ALCHEMI Toolkit-Ops (--alchemi; nvalchemiops and warp-lang on
   PYTHONPATH, PyTorch from the host): its PyTorch `neighbor_list` on
   float32 tensors on the device, the library's own method choice, as a
   plain call and on a `prepare_neighbor_list` state (with and without
   distances); median device ms between CUDA events around each call
   (run_alchemi). warp-lang's wheel is over the device tool's carry limit:
   tools/bench/alchemi_pack.sh makes a carryable archive of both packages.

Pair counts: vesin decides d < rc in double precision on double positions;
mdnl decides d² < rc² in float on float positions (mdnl_pair_d2: dx, dy, dz
in float, no FMA). The script counts, for every pair vesin finds within
rc (1 + 1e-5), whether the float test keeps it, and predicts mdnl's count
from vesin's list; `pairs_differ` is the number of pairs the two decide
differently (expected: a handful at |d - rc| of ~1 ulp of float).
Writes side_by_side.json and side_by_side.md into --out.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import time

import numpy as np

M64 = (1 << 64) - 1


def splitmix64_stream(seed):
    s = seed
    while True:
        s = (s + 0x9E3779B97F4A7C15) & M64
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        yield z ^ (z >> 31)


def shuffle_perm(n, seed=2024):
    """perm[k] = the unshuffled atom that lands at k (systems.c's Fisher-Yates)."""
    perm = np.arange(n, dtype=np.int64)
    g = splitmix64_stream(seed)
    p = perm.tolist()
    for k in range(n - 1, 0, -1):
        j = next(g) % (k + 1)
        p[k], p[j] = p[j], p[k]
    return np.asarray(p, dtype=np.int64)


def liquid(data_dir, shuffle):
    import h5py
    with h5py.File(os.path.join(data_dir, "lj-liquid-131k.h5md"), "r") as f:
        g = f["particles/all"]
        edges = np.asarray(g["box/edges"][()], dtype=np.float64)
        pos = np.asarray(g["position/value"][0], dtype=np.float64)
    out = []
    for ix in range(2):
        for iy in range(2):
            for iz in range(2):
                out.append(pos + edges * np.array([ix, iy, iz], dtype=np.float64))
    big = np.concatenate(out)
    if shuffle:
        big = big[shuffle_perm(len(big))]
    return big, edges * 2, 2.5


def copper():
    rho = 4.0 / (3.615 * 3.615 * 3.615)
    a = np.cbrt(4.0 / rho)  # as mdnl_gen_lj_fcc computes it
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    c = np.stack(np.meshgrid(np.arange(32), np.arange(32), np.arange(32), indexing="ij"), -1).reshape(-1, 1, 3)
    pos = ((c + basis[None]) * a).reshape(-1, 3)
    return pos, np.full(3, 32 * a), 5.0


SYSTEMS = {
    "lj-1m-liquid": lambda d: liquid(d, True),
    "lj-1m-liquid-sorted": lambda d: liquid(d, False),
    "cu-131k": lambda d: copper(),
}


def float_keeps(pos, box, rc, i, j):
    """mdnl's test on vesin's pairs: float positions wrapped into the box,
    dx = xj - xi in float, the nearest image's shift added in float,
    d2 = (dx*dx + dy*dy) + dz*dz without FMA, kept when d2 < float(rc)^2."""
    p32 = np.mod(pos, box).astype(np.float32)
    L = box.astype(np.float32)
    keep = np.empty(len(i), dtype=bool)
    rc2 = np.float32(rc) * np.float32(rc)
    step = 1 << 24
    for b in range(0, len(i), step):
        ii, jj = i[b:b + step], j[b:b + step]
        d = p32[jj] - p32[ii]
        s = -np.round(d / L) * L  # the nearest image (cutoff < L/2 here)
        d = (d + s.astype(np.float32)).astype(np.float32)
        d2 = (d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1]).astype(np.float32) + d[:, 2] * d[:, 2]
        keep[b:b + step] = d2.astype(np.float32) < rc2
    return keep


def median_ms(fn, reps, warm=3):
    import cupy as cp
    for _ in range(warm):
        fn()
    cp.cuda.Device().synchronize()
    t = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        t.append(1e3 * (time.perf_counter() - t0))
    return float(np.median(t))


def run_vesin_gpu(pos, box, rc, full, reps):
    import cupy as cp
    from vesin import NeighborList
    p = cp.asarray(pos)
    b = cp.asarray(np.diag(box))
    nl = NeighborList(cutoff=rc, full_list=full)
    res = {}

    def once():
        res["ij"] = nl.compute(points=p, box=b, periodic=True, quantities="ij", copy=False)

    ms = median_ms(once, reps)
    i, j = res["ij"]
    return ms, int(i.shape[0])


def run_vesin_cpu(pos, box, rc, full, threads):
    from vesin import NeighborList
    nl = NeighborList(cutoff=rc, full_list=full, n_threads=threads)
    t0 = time.perf_counter()
    i, j = nl.compute(points=pos, box=np.diag(box), periodic=True, quantities="ij")
    return 1e3 * (time.perf_counter() - t0), int(len(i))


ALCHEMI_RUNS = (  # (key, method, distances): prepared states, besides the plain call
    ("alchemi_prepared", None, False),
    ("alchemi_prepared_d", None, True),
    ("alchemi_tile", "cluster_tile", False),
    ("alchemi_tile_d", "cluster_tile", True),
)


def run_alchemi(pos, box, rc, full, reps):
    """NVIDIA ALCHEMI Toolkit-Ops (nvalchemiops, Warp kernels) through its
    PyTorch API on float32 tensors already on the device: `neighbor_list`
    as a plain call with the library's own method choice (matrix format:
    indices, counts and shifts), then on `prepare_neighbor_list` states
    (sized once: the library's recommended path for repeated calls) of its
    own choice and of `cluster_tile`, each without and with distances (mdnl's
    list has them). Median device ms between CUDA events around each call,
    after 3 warm-ups; a configuration that fails is reported, not fatal."""
    import torch
    from nvalchemiops.torch.neighbors import neighbor_list, prepare_neighbor_list
    dev = torch.device("cuda")
    p = torch.tensor(np.mod(pos, box), dtype=torch.float32, device=dev)
    cell = torch.tensor(np.diag(box), dtype=torch.float32, device=dev)
    pbc = torch.tensor([True, True, True], device=dev)
    res = {}

    def timed(fn):
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        t = []
        for _ in range(reps):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            b.synchronize()
            t.append(a.elapsed_time(b))
        return float(np.median(t))

    out = {}

    def plain():
        res["o"] = neighbor_list(p, rc, cell=cell, pbc=pbc, half_fill=not full)

    try:
        out["alchemi_ms"] = timed(plain)
        out["alchemi_pairs"] = int(res["o"][1].sum().item())
    except Exception as e:
        out["alchemi_error"] = f"{type(e).__name__}: {e}"[:300]
    for key, method, dist in ALCHEMI_RUNS:
        try:
            extra = {"max_neighbors": 128} if method == "cluster_tile" else {}  # its default, 32, overflows
            state = prepare_neighbor_list(p, rc, cell=cell, pbc=pbc, half_fill=not full, method=method,
                                          return_distances=dist, **extra)
            out[key + "_method"] = f"{state.method}/{state.strategy}"

            def prepared():
                res["o"] = neighbor_list(p, state=state)

            out[key + "_ms"] = timed(prepared)
            out[key + "_pairs"] = int(res["o"][1].sum().item())
            del state
        except Exception as e:
            out[key + "_error"] = f"{type(e).__name__}: {e}"[:300]
        res.clear()
        torch.cuda.empty_cache()
    return out


def pair_check(pos, box, rc):
    """vesin's full list to rc (1 + 1e-5) on the CPU: how many pairs the
    double test (d < rc) and mdnl's float test decide differently."""
    from vesin import NeighborList
    nl = NeighborList(cutoff=rc * (1 + 1e-5), full_list=True)
    i, j, d = nl.compute(points=pos, box=np.diag(box), periodic=True, quantities="ijd")
    fk = float_keeps(pos, box, rc, i, j)
    dk = d < rc
    return {"vesin_double": int(dk.sum()), "mdnl_float_predicted": int(fk.sum()),
            "double_only": int((dk & ~fk).sum()), "float_only": int((fk & ~dk).sum())}


def run_ckdtree(pos, box, rc, threads):
    from scipy.spatial import cKDTree
    p = np.mod(pos, box)
    t0 = time.perf_counter()
    tree = cKDTree(p, boxsize=box)
    lists = tree.query_ball_point(p, r=rc, workers=threads)
    full_ms = 1e3 * (time.perf_counter() - t0)
    full_pairs = int(sum(len(x) for x in lists)) - len(p)  # each atom finds itself
    del lists
    t0 = time.perf_counter()
    tree = cKDTree(p, boxsize=box)
    pairs = tree.query_pairs(rc, output_type="ndarray")
    half_ms = 1e3 * (time.perf_counter() - t0)
    return full_ms, full_pairs, half_ms, int(len(pairs))


def mdnl_figures(doc):
    """{(system, list): (ms, npairs, floor_ms, path)} of the default cell path."""
    out = {}
    for s in doc["neighbors"]["systems"]:
        for m in s["methods"]:
            if m["method"] == "cell":
                out[(s["system"], s["list"])] = (m["ms"], s["npairs"], s["floor_ms"], m["valid"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mdnl", default="build/mdnl", help="command that runs mdnl (split like a shell)")
    ap.add_argument("--mdnl-json", help="a `mdnl bench --json` output to read instead of running mdnl")
    ap.add_argument("--data", default="data")
    ap.add_argument("--out", default=".")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--ckdtree-threads", type=int, default=16)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--no-cpu", action="store_true", help="skip cKDTree and vesin on the CPU")
    ap.add_argument("--alchemi", action="store_true",
                    help="also time NVIDIA ALCHEMI Toolkit-Ops (nvalchemiops and warp-lang importable)")
    a = ap.parse_args()
    names = a.systems.split(",")
    if a.mdnl_json:
        with open(a.mdnl_json) as f:
            doc = json.load(f)
    else:
        cmd = shlex.split(a.mdnl) + ["bench", "--json", "--sizes", ",".join(names), "--data", a.data]
        doc = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    mdnl = mdnl_figures(doc)
    rows = []
    for name in names:
        pos, box, rc = SYSTEMS[name](a.data)
        chk = pair_check(pos, box, rc)
        print(f"{name}: {len(pos)} atoms, rc {rc}; pair check {chk}", file=sys.stderr, flush=True)
        ck = None if a.no_cpu else run_ckdtree(pos, box, rc, a.ckdtree_threads)
        for full in (True, False):
            kind = "full" if full else "half"
            vg_ms, vg_pairs = run_vesin_gpu(pos, box, rc, full, a.reps)
            vc_ms, vc_pairs = (None, None) if a.no_cpu else run_vesin_cpu(pos, box, rc, full, a.ckdtree_threads)
            m_ms, m_pairs, floor_ms, valid = mdnl.get((name, kind), (None, None, None, None))
            row = {"system": name, "list": kind, "natoms": len(pos), "cutoff": rc,
                   "mdnl_ms": m_ms, "mdnl_pairs": m_pairs, "mdnl_valid": valid, "floor_ms": floor_ms,
                   "vesin_gpu_ms": vg_ms, "vesin_pairs": vg_pairs,
                   "vesin_cpu_ms": vc_ms, "vesin_cpu_pairs": vc_pairs}
            if a.alchemi:
                row.update(run_alchemi(pos, box, rc, full, a.reps))
            if ck:
                row["ckdtree_ms"] = ck[0] if full else ck[2]
                row["ckdtree_pairs"] = ck[1] if full else ck[3]
            if full:
                row["pair_check"] = chk
                if m_pairs is not None:
                    row["pairs_differ"] = abs(m_pairs - vg_pairs)
                    row["mdnl_pairs_predicted_from_vesin"] = chk["mdnl_float_predicted"]
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "side_by_side.json"), "w") as f:
        json.dump({"device": doc["neighbors"].get("device"), "rows": rows}, f, indent=1)

    def fmt(x, d=3):
        return "—" if x is None else f"{x:.{d}f}"

    def ratio(x, y):
        return "—" if x is None or y is None or not y else f"{x / y:.1f}×"

    lines = [f"device: {doc['neighbors'].get('device')}; mdnl: median device ms of the default cell path; "
             f"vesin GPU: median wall ms (CuPy, synchronised); CPU: {a.ckdtree_threads} threads, one run",
             "",
             "| system | list | pairs (mdnl) | pairs (vesin) | mdnl ms | vesin GPU ms | vesin/mdnl | "
             "vesin CPU ms | cKDTree ms | cKDTree/mdnl | mdnl/floor |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['system']} | {r['list']} | {r['mdnl_pairs']} | {r['vesin_pairs']} | {fmt(r['mdnl_ms'])} | "
                     f"{fmt(r['vesin_gpu_ms'], 2)} | {ratio(r['vesin_gpu_ms'], r['mdnl_ms'])} | "
                     f"{fmt(r.get('vesin_cpu_ms'), 0)} | {fmt(r.get('ckdtree_ms'), 0)} | "
                     f"{ratio(r.get('ckdtree_ms'), r['mdnl_ms'])} | {ratio(r['mdnl_ms'], r['floor_ms'])} |")
    lines.append("")
    if a.alchemi:
        cols = [("alchemi", "plain")] + [(k, {"alchemi_prepared": "prepared", "alchemi_prepared_d": "prepared + d",
                                              "alchemi_tile": "cluster_tile", "alchemi_tile_d": "cluster_tile + d"}[k])
                                         for k, _, _ in ALCHEMI_RUNS]
        lines += ["NVIDIA ALCHEMI Toolkit-Ops (PyTorch API, float32 on the device; median device ms between CUDA "
                  "events around each call): a plain `neighbor_list` call (the library's own method), and "
                  "`prepare_neighbor_list` states of its own method and of `cluster_tile`, without and with "
                  "distances (+ d: mdnl's list has them); best = the fastest that ran",
                  "",
                  "| system | list | pairs (mdnl) | pairs (ALCHEMI) | its method | mdnl ms | "
                  + " | ".join(f"{c} ms" for _, c in cols) + " | best / mdnl |",
                  "|---|---|---|---|---|---|" + "---|" * len(cols) + "---|"]
        for r in rows:
            got = [r.get(k + "_ms") for k, _ in cols]
            best = min((x for x in got if x is not None), default=None)
            lines.append(f"| {r['system']} | {r['list']} | {r['mdnl_pairs']} | "
                         f"{r.get('alchemi_pairs', r.get('alchemi_prepared_pairs', '—'))} | "
                         f"{r.get('alchemi_prepared_method', '—')} | {fmt(r['mdnl_ms'])} | "
                         + " | ".join(fmt(x, 2) for x in got) + f" | {ratio(best, r['mdnl_ms'])} |")
        for r in rows:
            for k, c in cols:
                if k + "_error" in r:
                    lines.append(f"- {r['system']} {r['list']}, {c}: {r[k + '_error']}")
            for k, c in cols:
                pk = r.get(k + "_pairs")
                if pk is not None and r["mdnl_pairs"] is not None and pk != r["mdnl_pairs"]:
                    lines.append(f"- {r['system']} {r['list']}, {c}: {pk} pairs (mdnl {r['mdnl_pairs']})")
        lines.append("")
    for r in rows:
        if "pair_check" in r:
            c = r["pair_check"]
            lines.append(f"- {r['system']}: vesin (double) {c['vesin_double']} full pairs, mdnl {r['mdnl_pairs']}; "
                         f"the float test on vesin's pairs predicts {c['mdnl_float_predicted']} "
                         f"({c['double_only']} kept only in double, {c['float_only']} only in float)")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "side_by_side.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()

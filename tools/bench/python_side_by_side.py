#!/usr/bin/env python3
"""python_side_by_side.py — mdnl's Python call against vesin's and ALCHEMI's
Python calls on the same device arrays, and the call overhead on a small frame.

Runs on the GPU host from the repository root, after a CUDA build (libmdnl.so
in BUILD), with NumPy, CuPy, PyTorch and vesin importable (and, with
--alchemi DIR, nvalchemiops + warp-lang in DIR: tools/bench/alchemi_pack.sh's
archive unpacked there):

    MDNL_LIBRARY=build/libmdnl.so PYTHONPATH=python \\
        tools/bench/python_side_by_side.py --data DIR [--out DIR] [--reps 15] [--alchemi DIR] \\
        [--mdnl "BUNDLE/run BUNDLE/bin/mdnl" | --mdnl-json FILE]

The frames are side_by_side.py's (lj-1m-liquid shuffled and sorted,
cu-131k), whose helpers this script reuses. Rows, full and half lists:
 * mdnl (CuPy): mdnl.neighbor_list("ij", positions) on a CuPy float64 array
   already on the device: results CuPy arrays on the device (no host copy);
   median wall ms with a device synchronisation, as vesin is timed;
 * mdnl (torch): the same on a PyTorch float32 CUDA tensor;
 * vesin (CuPy): side_by_side.run_vesin_gpu, quantities "ij";
 * ALCHEMI (--alchemi DIR), full lists: nvalchemiops.torch.neighbors.neighbor_list
   on a PyTorch float32 CUDA tensor made as mdnl's torch row makes its own
   (the same positions, unwrapped: both wrap), its own method choice, as a
   pair list (return_neighbor_list=True: mdnl's "ij"), timed as mdnl's; its
   pair count is checked against mdnl's torch call (a difference is listed
   under the table: pairs within float rounding of the cutoff).
Each mdnl (CuPy) row also gives its C call alone (mdnl_neighbors_device
through ctypes, without the conversions into CuPy arrays) and, with --mdnl
or --mdnl-json, the kernel-only time of `mdnl bench` for the same list, so
that the Python call's overhead reads off the row.
Call overhead: a 1,000-atom frame (the LJ liquid's first 1,000 atoms in a
box scaled to their density), median µs over --overhead-reps calls of
mdnl.neighbor_list("ij") on NumPy (CPU and CUDA contexts), CuPy and torch,
and of vesin on CuPy (with --alchemi DIR, also mdnl and ALCHEMI on the
same float32 torch tensor, pair counts checked): where the Python and launch
overhead, not the kernel, decides. Writes python_side_by_side.json and .md into --out.
"""
import argparse
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import side_by_side as sbs  # noqa: E402

import mdnl  # noqa: E402


def run_mdnl(pos, box, rc, full, reps, kind):
    cell = np.diag(box)
    if kind == "cupy":
        import cupy as cp
        p = cp.asarray(pos)
    else:
        import torch
        p = torch.tensor(pos, dtype=torch.float32, device="cuda")
    res = {}

    def once():
        res["ij"] = mdnl.neighbor_list("ij", p, cell, True, rc, full=full)

    ms = sbs.median_ms(once, reps)
    return ms, int(res["ij"][0].shape[0])


def library_call(p, cell, rc, full):
    """The Python call's C part alone, as a function: mdnl_neighbors_device
    through ctypes on the CuPy array p (wrap, guard, build, and their
    synchronisations), none of the conversions into CuPy arrays after it."""
    import ctypes

    import cupy as cp
    ctx = mdnl._context("cuda", 0)
    sys_, keep, _, _ = mdnl._system(p, cell, True)
    out = mdnl._clib.NeighborList()
    flags = mdnl._clib.NEIGHBORS_FULL if full else 0
    stream = cp.cuda.get_current_stream().ptr

    def once():
        mdnl._check(mdnl.lib.mdnl_neighbors_device(ctx.handle, ctypes.byref(sys_), rc, flags, stream,
                                                   ctypes.byref(out)))
        return keep  # alive as long as the function

    return once


def run_library_call(pos, box, rc, full, reps):
    import cupy as cp
    return sbs.median_ms(library_call(cp.asarray(pos), np.diag(box), rc, full), reps)


def kernel_figures(a):
    """{(system, list): ms} of `mdnl bench`'s default cell path (device time
    from the uploaded positions to the CSR), from --mdnl-json or --mdnl; {}
    without either."""
    if a.mdnl_json:
        with open(a.mdnl_json) as f:
            doc = json.load(f)
    elif a.mdnl:
        import shlex
        import subprocess
        cmd = shlex.split(a.mdnl) + ["bench", "--json", "--sizes", a.systems, "--data", a.data]
        doc = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    else:
        return {}
    return {k: v[0] for k, v in sbs.mdnl_figures(doc).items()}


def fail(msg):
    print(f"python_side_by_side.py: error: {msg}", file=sys.stderr)
    sys.exit(2)


def alchemi_import(path):
    """nvalchemiops' torch neighbor_list from the unpacked alchemi_pack.sh
    archive at path, or exit 2 with one line saying what is missing."""
    missing = [m for m in ("nvalchemiops", "warp") if not os.path.isdir(os.path.join(path, m))]
    if missing:
        fail(f"--alchemi {path}: no {' or '.join(missing)} there (unpack tools/bench/alchemi_pack.sh's archive "
             "into it)")
    sys.path.insert(0, os.path.abspath(path))
    try:
        from nvalchemiops.torch.neighbors import neighbor_list
    except Exception as e:  # warp without a GPU or CUDA driver, a torch too old, ...
        fail(f"--alchemi {path}: cannot import nvalchemiops.torch.neighbors: {type(e).__name__}: {e}")
    return neighbor_list


def alchemi_call(neighbor_list, p, box, rc, full):
    """One ALCHEMI call on tensor p: a pair list, as mdnl's "ij"."""
    import torch
    cell = torch.tensor(np.diag(box), dtype=p.dtype, device=p.device)
    pbc = torch.tensor([True, True, True], device=p.device)
    # ALCHEMI fills a (rows, max_neighbors) matrix first (default 16, too few
    # for a liquid): 1.5x the mean count in the cutoff sphere, plus 16
    mean = len(p) / float(np.prod(box)) * 4.18879 * rc ** 3
    max_nb = int(1.5 * mean) + 16
    return lambda: neighbor_list(p, rc, cell=cell, pbc=pbc, half_fill=not full, return_neighbor_list=True,
                                 max_neighbors=max_nb)


def run_alchemi(neighbor_list, pos, box, rc, full, reps):
    """ALCHEMI's median wall ms and pair count on the float32 tensor mdnl's
    torch row builds, or its error (a failing configuration is reported)."""
    import torch
    p = torch.tensor(pos, dtype=torch.float32, device="cuda")
    call = alchemi_call(neighbor_list, p, box, rc, full)
    res = {}

    def once():
        res["o"] = call()

    try:
        ms = sbs.median_ms(once, reps)
        return {"alchemi_ms": ms, "alchemi_pairs": int(res["o"][0].shape[1])}
    except Exception as e:
        return {"alchemi_error": f"{type(e).__name__}: {e}"[:300]}


def overhead_us(fn, reps):
    """Median µs of one synchronised call (side_by_side.median_ms)."""
    return 1e3 * sbs.median_ms(fn, reps, warm=20)


def small_frame(data_dir, n=1000):
    """The liquid's atoms in a corner cube holding about n of them, as a
    periodic box of that side (the liquid's density; the seam is not
    equilibrated, which does not matter for the overhead)."""
    pos, box, rc = sbs.liquid(data_dir, False)
    side = np.cbrt(n * np.prod(box) / len(pos))
    sel = pos[np.all(pos < side, axis=1)]
    return sel, np.full(3, side), rc


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", required=True, help="directory with lj-liquid-131k.h5md")
    ap.add_argument("--out", default="python-side-by-side")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--overhead-reps", type=int, default=2000)
    ap.add_argument("--systems", default=",".join(sbs.SYSTEMS))
    ap.add_argument("--alchemi", metavar="DIR", help="nvalchemiops + warp-lang (alchemi_pack.sh, unpacked)")
    ap.add_argument("--mdnl", help="command that runs mdnl (split like a shell), for the kernel-only column "
                                   "(`mdnl bench --json`)")
    ap.add_argument("--mdnl-json", help="a `mdnl bench --json` output to read instead of running --mdnl")
    a = ap.parse_args()
    alchemi_nl = alchemi_import(a.alchemi) if a.alchemi else None
    kernel = kernel_figures(a)
    import cupy as cp
    import torch
    from vesin import NeighborList

    rows = []
    for name in a.systems.split(","):
        pos, box, rc = sbs.SYSTEMS[name](a.data)
        for full in (True, False):
            row = {"system": name, "list": "full" if full else "half", "natoms": len(pos), "cutoff": rc}
            row["mdnl_cupy_ms"], row["mdnl_cupy_pairs"] = run_mdnl(pos, box, rc, full, a.reps, "cupy")
            row["mdnl_c_call_ms"] = run_library_call(pos, box, rc, full, a.reps)
            row["mdnl_kernel_ms"] = kernel.get((name, row["list"]))
            row["mdnl_torch_ms"], row["mdnl_torch_pairs"] = run_mdnl(pos, box, rc, full, a.reps, "torch")
            row["vesin_ms"], row["vesin_pairs"] = sbs.run_vesin_gpu(pos, box, rc, full, a.reps)
            if alchemi_nl and full:
                row.update(run_alchemi(alchemi_nl, pos, box, rc, full, a.reps))
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
            cp.get_default_memory_pool().free_all_blocks()
            torch.cuda.empty_cache()

    pos, box, rc = small_frame(a.data)
    cell = np.diag(box)
    p_cp, p_t = cp.asarray(pos), torch.tensor(pos, device="cuda")
    nl = NeighborList(cutoff=rc, full_list=True)
    calls = {
        "mdnl numpy (cpu context)": lambda: mdnl.neighbor_list("ij", pos, cell, True, rc, backend="cpu"),
        "mdnl numpy (cuda context)": lambda: mdnl.neighbor_list("ij", pos, cell, True, rc, backend="cuda"),
        "mdnl cupy": lambda: mdnl.neighbor_list("ij", p_cp, cell, True, rc),
        "mdnl cupy, its C call only": library_call(p_cp, cell, rc, True),
        "mdnl torch": lambda: mdnl.neighbor_list("ij", p_t, cell, True, rc),
        "vesin cupy": lambda: nl.compute(points=p_cp, box=cp.asarray(cell), periodic=True, quantities="ij",
                                         copy=False),
    }
    small_pairs = {}
    if alchemi_nl:
        p_t32 = p_t.float()
        calls["mdnl torch f32"] = lambda: mdnl.neighbor_list("ij", p_t32, cell, True, rc)
        calls["ALCHEMI torch f32"] = alchemi_call(alchemi_nl, p_t32, box, rc, True)
        small_pairs = {"mdnl torch f32": int(calls["mdnl torch f32"]()[0].shape[0])}
        try:
            small_pairs["ALCHEMI torch f32"] = int(calls["ALCHEMI torch f32"]()[0].shape[1])
        except Exception as e:
            small_pairs["ALCHEMI torch f32 error"] = f"{type(e).__name__}: {e}"[:300]
            del calls["ALCHEMI torch f32"]
    overhead = {k: overhead_us(f, a.overhead_reps) for k, f in calls.items()}
    print(json.dumps(overhead), file=sys.stderr, flush=True)

    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "python_side_by_side.json"), "w") as f:
        json.dump({"device": torch.cuda.get_device_name(), "rows": rows, "overhead_us_1000_atoms": overhead,
                   "overhead_pairs_1000_atoms": small_pairs}, f,
                  indent=1)

    def fmt(x, d=2):
        return "—" if x is None else f"{x:.{d}f}"

    def ratio(x, y):
        return "—" if x is None or y is None or not y else f"{x / y:.1f}×"

    lines = [f"device: {torch.cuda.get_device_name()}; median wall ms of one Python call on arrays already on "
             f"the device, synchronised, quantities \"ij\" ({a.reps} calls after 3 warm-ups)", "",
             "| system | list | pairs | mdnl CuPy f64 ms | its C call ms | kernel ms | mdnl torch f32 ms | "
             "vesin CuPy f64 ms | vesin/mdnl |" + (" ALCHEMI torch f32 ms | ALCHEMI/mdnl torch |" if a.alchemi else ""),
             "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if a.alchemi else "")]
    for r in rows:
        lines.append(f"| {r['system']} | {r['list']} | {r['mdnl_cupy_pairs']} | {fmt(r['mdnl_cupy_ms'])} | "
                     f"{fmt(r['mdnl_c_call_ms'])} | {fmt(r['mdnl_kernel_ms'])} | "
                     f"{fmt(r['mdnl_torch_ms'])} | {fmt(r['vesin_ms'])} | {ratio(r['vesin_ms'], r['mdnl_cupy_ms'])} |"
                     + (f" {fmt(r.get('alchemi_ms'))} | {ratio(r.get('alchemi_ms'), r['mdnl_torch_ms'])} |"
                        if a.alchemi else ""))
    if a.alchemi:
        lines.append("")
        for r in rows:
            if "alchemi_error" in r:
                lines.append(f"- ALCHEMI {r['system']} {r['list']}: {r['alchemi_error']}")
            elif "alchemi_pairs" in r:
                d = r["alchemi_pairs"] - r["mdnl_torch_pairs"]
                lines.append(f"- ALCHEMI {r['system']} {r['list']}: {r['alchemi_pairs']} pairs, "
                             + ("the same as mdnl's torch call" if d == 0 else f"{d:+d} against mdnl's torch call"))
    lines += ["", "Python call (mdnl CuPy) = its C call (mdnl_neighbors_device through ctypes: wrap, guard, build, "
                  "synchronisations) + the conversions into CuPy arrays; kernel = `mdnl bench`'s device time for "
                  "the same list (— without --mdnl/--mdnl-json)."]
    lines += ["", f"Call overhead, a {len(pos)}-atom periodic frame (rc {rc}), median µs of {a.overhead_reps} calls "
                  "(synchronised):", "", "| call | µs |", "|---|---|"]
    lines += [f"| {k} | {v:.1f} |" for k, v in overhead.items()]
    if small_pairs:
        lines += ["", "Pairs on that frame (float32 torch): "
                  + "; ".join(f"{k} {v}" for k, v in small_pairs.items())]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "python_side_by_side.md"), "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()

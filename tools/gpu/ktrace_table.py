#!/usr/bin/env python3
"""tools/gpu/ktrace_table.py TRACE.tsv ... — reads tools/gpu/kernel_trace.c's
records and prints, for each kind of neighbor-list build in each trace, the
median time line of its operations: each kernel's start and end after the
build's first operation (the flags memset) and its duration, in µs, then the
build's span (first start to last end); a kernel's name carries its grid and,
from traces that record it, the shared memory the driver set for it (its
carveout, KiB). A build is the operations from one
small memset (the flags, FLAG_INTS ints), or from a binning kernel
without one before it (a build whose flags the last one left zero), to the
next; builds with the same
sequence of kernels are one kind. --all lists every build's span as well (to
see two modes in one process)."""
import re
import shutil
import statistics
import subprocess
import sys

_names = {}


def demangle(name):
    """c++filt's name where the host has binutils, else the mangled one."""
    if name not in _names:
        _names[name] = name
        if shutil.which("c++filt"):
            _names[name] = subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip() or name
    return _names[name]


def short(name):
    name = demangle(name)
    name = re.sub(r"\(.*$", "", name)  # demangled: drop the arguments
    return name.replace("cub::CUB_300001_SM_900::", "")


def builds(path):
    ops = []
    with open(path) as f:
        for line in f:
            p = line.rstrip("\n").split("\t")
            if len(p) < 7:
                continue
            kind, what, start, end, grid = p[0], p[1], int(p[2]), int(p[3]), int(p[6])
            carve = f" {int(p[7]) >> 10}K" if kind == "kernel" and len(p) > 7 else ""  # the SM's shared memory
            ops.append((start, end, kind, what, f"[{grid}]{carve}"))
    ops.sort()
    cur = None
    flags_set = False  # the op before was the flags memset
    for start, end, kind, what, launch in ops:
        flags = kind == "memset" and int(what) <= 64
        binning = kind == "kernel" and re.search(r"fast_bin_kernel|cells_bin_kernel", what) is not None
        if flags or (binning and not flags_set):
            if cur:
                yield cur
            cur = []
        flags_set = flags
        if cur is not None:
            cur.append((start, end, kind if kind != "kernel" else f"{short(what)} {launch}"))
    if cur:
        yield cur


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    every = "--all" in sys.argv
    for path in args:
        kinds = {}
        for b in builds(path):
            sig = tuple(op[2] for op in b)
            kinds.setdefault(sig, []).append(b)
        print(f"== {path}")
        for sig, bs in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
            if len(bs) < 3 or len(sig) < 3:
                continue
            spans = [(b[-1][1] - b[0][0]) / 1e3 for b in bs]
            print(f"-- {len(bs)} builds, span median {statistics.median(spans):.1f} µs "
                  f"(min {min(spans):.1f}, max {max(spans):.1f})")
            for k, name in enumerate(sig):
                st = statistics.median((b[k][0] - b[0][0]) / 1e3 for b in bs)
                en = statistics.median((b[k][1] - b[0][0]) / 1e3 for b in bs)
                du = statistics.median((b[k][1] - b[k][0]) / 1e3 for b in bs)
                print(f"   {name[:72]:72s} start {st:8.1f}  end {en:8.1f}  took {du:7.1f}")
            if every:
                print("   spans: " + " ".join(f"{s:.1f}" for s in spans))


if __name__ == "__main__":
    main()

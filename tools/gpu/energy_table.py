#!/usr/bin/env python3
"""tools/gpu/energy_table.py FILE.jsonl — the CUDA energy rows (shuffle
reduction) and histogram rows (ms, medians over launches) per fixture and build, from
`mdnl bench --json` lines labelled by tools/gpu/abba.sh."""
import json
import statistics
import sys

rows = {}
builds = []
for line in open(sys.argv[1]):
    d = json.loads(line)
    b = d["build"]
    if b not in builds:
        builds.append(b)
    for key, v in d.items():
        if not isinstance(v, dict):
            continue
        if key.startswith("rdf"):
            for fx, r in v.items():
                for gr in r.get("gpu", []):
                    k = ("rdf " + fx, gr["traversal"] + " " + gr["variant"])
                    rows.setdefault(k, {}).setdefault(b, []).append((gr["ms"], gr["equals_cpu"]))
            continue
        if v.get("benchmark") == "energy":
            for r in v["results"]:
                if r["backend"] == "cuda" and r["reduce"] == "shuffle":
                    k = ("energy " + v["fixture"], r["path"])
                    rows.setdefault(k, {}).setdefault(b, []).append((r["ms"], r["equals_cpu"]))
print("%-28s %-22s " % ("fixture", "path") + " ".join("%16s" % b for b in builds) + "   ratios to the first")
for (fx, path), per in rows.items():
    med = {b: statistics.median(m for m, _ in per[b]) if b in per else float("nan") for b in builds}
    ok = all(e for b in per for _, e in per[b])
    print("%-28s %-22s " % (fx, path) + " ".join("%16.4f" % med[b] for b in builds) + "   " +
          " ".join("%.3f" % (med[b] / med[builds[0]]) for b in builds[1:]) + ("" if ok else "   NOT EQUAL TO CPU"))

#!/usr/bin/env python3
"""tools/gpu/abba_table.py FILE.jsonl — the cell default's ms (and its stages)
per system, list and build, from `mdnl bench --json` lines labelled by
tools/gpu/abba.sh: each launch's median, then the median over launches.
"ms" is the build alone (events around it only) since the bench measured
it apart from the stages; builds before that reported the total with the
stage events, now "ms_staged", printed beside the stages where present."""
import json
import statistics
import sys

rows = {}
for line in open(sys.argv[1]):
    d = json.loads(line)
    for s in d["neighbors"]["systems"]:
        for m in s["methods"]:
            if m["method"] != "cell" or "ms" not in m:
                continue
            key = (s["system"], s["list"])
            rows.setdefault(key, {}).setdefault(d["build"], []).append(m)
builds = []  # in the order of the file's first launches
for v in rows.values():
    for b in v:
        if b not in builds:
            builds.append(b)
print("%-22s %-5s " % ("system", "list") + " ".join("%28s" % b for b in builds) + "   ratios to the first")
for (sysname, lst), per in rows.items():
    cells, med = [], {}
    for b in builds:
        ms = [m["ms"] for m in per.get(b, [])]
        med[b] = statistics.median(ms) if ms else float("nan")
        cells.append("%28s" % (", ".join("%.3f" % x for x in ms)))
    ratios = " ".join("%.3f" % (med[b] / med[builds[0]]) for b in builds[1:])
    print("%-22s %-5s " % (sysname, lst) + " ".join(cells) + "   " + ratios)
    for b in builds:
        st = {}
        for m in per.get(b, []):
            for k, v in m.get("stages_ms", {}).items():
                st.setdefault(k, []).append(v)
        staged = [m["ms_staged"] for m in per.get(b, []) if "ms_staged" in m]
        extra = "  (total with the stage events %.3f)" % statistics.median(staged) if staged else ""
        print("    %-10s " % b + "  ".join("%s %.3f" % (k, statistics.median(v)) for k, v in st.items()) + extra)

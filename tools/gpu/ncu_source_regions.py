#!/usr/bin/env python3
"""tools/gpu/ncu_source_regions.py SRC.csv [LO-HI ...] — where a kernel's
instructions go, from ncu's per-SASS-instruction counters:

    ncu --section SourceCounters -o REP ... ; ncu -i REP.ncu-rep --page source --print-source sass --csv > SRC.csv

Prints the kernel's executed warp instructions and stall samples, each
backward branch's loop (its address range, static length, share of the
executed instructions and of the samples; the loops that nest the whole
kernel through its divergence fallbacks print too), and for each LO-HI
(hex offsets from the kernel's first instruction) the instructions executed
at least once. How the 2026-11-27 dense-walk profile (9139fc9:tools/bench/RESULTS.md)
was read."""
import csv
import re
import sys

rows = list(csv.reader(open(sys.argv[1])))
hdr = next(r for r in rows if "Address" in r)
data = rows[rows.index(hdr) + 1:]
ia, isrc = hdr.index("Address"), hdr.index("Source")
ie, iss = hdr.index("Instructions Executed"), hdr.index("Warp Stall Sampling (All Samples)")
ins, base = [], None
for r in data:
    try:
        a = int(r[ia], 16)
    except (ValueError, IndexError):
        continue
    base = a if base is None else base
    ins.append((a - base, r[isrc].strip(), int(r[ie] or 0), int(r[iss] or 0)))
tot = sum(x[2] for x in ins) or 1
st = sum(x[3] for x in ins) or 1
print("%s: %d warp instructions executed, %d stall samples" % (sys.argv[1], tot, st))
for a, t, _, _ in ins:
    m = re.search(r"BRA (?:!?U?P\d, )?(0x[0-9a-f]+)", t)
    if not m:
        continue
    tgt = int(m.group(1), 16)
    tgt = tgt - base if tgt >= base else tgt
    if tgt < a:
        e = sum(x[2] for x in ins if tgt <= x[0] <= a)
        s = sum(x[3] for x in ins if tgt <= x[0] <= a)
        if e > 0.005 * tot:
            print("loop %05x-%05x (%4d instructions): %6.2f %% executed, %6.2f %% samples" %
                  (tgt, a, (a - tgt) // 16 + 1, 100 * e / tot, 100 * s / st))
for span in sys.argv[2:]:
    lo, hi = (int(v, 16) for v in span.split("-"))
    reg = [x for x in ins if lo <= x[0] <= hi]
    print("%s: %.2f %% executed, %.2f %% samples" % (span, 100 * sum(x[2] for x in reg) / tot,
                                                    100 * sum(x[3] for x in reg) / st))
    for a, t, e, s in reg:
        if e:
            print("  %05x %11d %6d  %s" % (a, e, s, t))

#!/bin/bash
# GPU-host driver for issue 15 (gpuperf), run 2: tests of the packed variants, ABBA bench of 4 variants.
set -u
G=$(pwd)/.gp15; O=${OUT:-/tmp/out}; mkdir -p $O
B=/tmp/gp15b; rm -rf $B; mkdir -p $B; tar -C $B -xJf $G/pack.tar.xz; mkdir -p $B/data; cp $G/data/*.h5md $B/data/
{ nvidia-smi -L; date -u +%FT%TZ; } > $O/device.txt 2>&1
for v in EAg EAs; do t0=$(date +%s)
  timeout 150 $B/run $B/bin/test_nlist_gpu-$v --jobs 1 > $O/tests-$v.log 2>&1; echo "test_nlist_gpu-$v rc=$? $(( $(date +%s)-t0 ))s $(grep -a Synthesis $O/tests-$v.log)" >> $O/device.txt
done
S1=lj-1m,lj-1m-liquid,lj-1m-liquid-sorted,cu-131k
S2=lj-1m-liquid,lj-1m-liquid-sorted,cu-131k
for step in "base 1 $S1" "E 1 $S1" "EAs 1 $S1" "EAg 1 $S1" "EAg 2 $S2" "EAs 2 $S2" "E 2 $S2" "base 2 $S2"; do
  set -- $step
  t0=$(date +%s)
  doc=$(timeout 60 $B/run $B/bin/mdnl-$1 bench --json --sizes $3 2>>$O/bench.err); rc=$?
  echo "{\"variant\":\"$1\",\"round\":$2,\"rc\":$rc,\"doc\":${doc:-null}}" >> $O/bench.jsonl
  echo "bench $1 round $2 rc=$rc $(( $(date +%s)-t0 ))s" >> $O/device.txt
done
cat $O/device.txt
/opt/torch/.venv/bin/python3 - $O/bench.jsonl <<'PY'
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if not d['doc']: print(d['variant'], d['round'], 'no doc'); continue
    for s in d['doc']['neighbors']['systems']:
        for m in s['methods']:
            if m['method'] == 'cell':
                print(d['variant'], d['round'], s['system'], s['list'], '%.4f' % m['ms'], m['valid'],
                      ' '.join('%s=%.3f' % (k, v) for k, v in m['stages_ms'].items() if v))
PY

#!/usr/bin/env bash
# tools/gpu/abba.sh [--rounds R] [--sizes LIST] LABEL=MDNL ... — on the GPU
# host: `mdnl bench --json` of several mdnl binaries of one bundle
# (.gpu/env.sh), in order and then in reverse (A B C C B A), R times (default
# 1); one JSON line a launch, labelled in "build", to $OUT/abba.jsonl (or
# ./gpu-out); then the medians per system (tools/gpu/abba_table.py). How issue
# 15's variants are compared with the kernels on main.
set -uo pipefail
rounds=1
sizes=lj-1m-liquid,lj-1m-liquid-sorted,lj-1m,cu-131k,graphene-1m
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    *) break ;;
  esac
done
out=${OUT:-$(pwd)/gpu-out}
mkdir -p "$out"
source .gpu/env.sh
one() { # LABEL=MDNL
  "${1#*=}" bench --json --sizes "$sizes" |
    python3 -c 'import json,sys; d=json.load(sys.stdin); d["build"]=sys.argv[1]; print(json.dumps(d))' "${1%%=*}" \
      >> "$out/abba.jsonl"
}
builds=("$@")
for r in $(seq "$rounds"); do
  for b in "${builds[@]}"; do one "$b"; done
  for ((k = ${#builds[@]} - 1; k >= 0; k--)); do one "${builds[k]}"; done
done
python3 "$(dirname "$0")/abba_table.py" "$out/abba.jsonl" | tee "$out/abba.txt"

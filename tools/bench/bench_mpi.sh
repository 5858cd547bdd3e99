#!/usr/bin/env bash
# bench_mpi.sh — scaling of `mpirun -n P mdnl run` (issues 16 and 17), on the
# GPU host from the repository root, with the bundle of tools/gpu/bundle_mpi.sh
# (.mpi/: OpenMPI, mdnl, bench_h5md_read):
#
#   tools/bench/bench_mpi.sh share [DIR]   one GPU shared by 1, 2, 4 ranks, and the CPU
#                                          backend with 1, 2, 4, 8, 16 ranks
#                                          (OMP_NUM_THREADS = 16 / P)
#   tools/bench/bench_mpi.sh gpu2  [DIR]   two GPUs: 1 and 2 ranks, one GPU each, on the
#                                          200-frame benchmark and a 20-frame ~1M-atom one,
#                                          where the time goes, and the bare read with 1
#                                          and 2 readers
#
# Every run: LJ energy + RDF (-c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 200)
# of the H5MD trajectory of tools/bench/bench_run.sh (tools/gen_lj_trajectory.py,
# 200 frames x ~100k atoms, made once into DIR, default /tmp/bench_mpi), under
#   mpirun --allow-run-as-root --oversubscribe --bind-to none -n P,
# REPS repeats (default 3). Printed per configuration (median of the repeats):
#   frames/s    frames / the run's wall in the JSON summary (rank 0's pipeline from its
#               start, backend start-up left included, to the last frame of every rank
#               merged; the results file's commit excluded)
#   cmd f/s     frames / the whole mpirun command (launch, CUDA start-up, commit)
#   speed-up and efficiency (= speed-up / P) of both against the 1-rank run
# and that every dataset of every run's results file is byte-identical to the
# 1-rank run of the same backend (h5py). CPU runs use CPU_FRAMES (default 48,
# divisible by every rank count; --frames :48) to stay within the time budget.
# Results: DIR/*.json (the summaries), the table on stdout and in $OUT when set.
set -euo pipefail
mode=${1:-share}
dir=${2:-/tmp/bench_mpi}
root=$(cd "$(dirname "$0")/../.." && pwd)
reps=${REPS:-3}
cpu_frames=${CPU_FRAMES:-48}
# a smaller trial off the GPU host: FRAMES=12 ATOMS=4000 SMALL_FRAMES=4 SMALL_ATOMS=20000 GPU_BACKEND=cpu
frames=${FRAMES:-200} atoms=${ATOMS:-100000} mframes=${SMALL_FRAMES:-20} matoms=${SMALL_ATOMS:-1000000}
gpu_backend=${GPU_BACKEND:-cuda}
[ -r "$root/.mpi/env.sh" ] && source "$root/.mpi/env.sh"
mdnl=${MDNL:-$root/.mpi/bin/mdnl}
bare=${BARE:-$root/.mpi/bin/bench_h5md_read}
[ -x "$mdnl" ] || mdnl=$root/build/mdnl
[ -x "$bare" ] || bare=$root/build/bench_h5md_read
command -v mpirun >/dev/null || { echo "bench_mpi.sh: no mpirun (make .mpi/ with tools/gpu/bundle_mpi.sh)" >&2; exit 2; }
mpirun="mpirun --allow-run-as-root --oversubscribe --bind-to none -q"
work="-c 2.5 --pair lj:epsilon=1,sigma=1 --rmax 4 --bins 200"
mkdir -p "$dir"
out=${OUT:-$dir/out}
mkdir -p "$out"
{ nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"; nproc; echo "date $(date -u +%FT%TZ)";
  echo "commit $(cat "$root/.mpi/COMMIT" 2>/dev/null || git -C "$root" rev-parse --short HEAD 2>/dev/null)"; } |
  tee "$out/device.txt"

# traj FRAMES ATOMS: the H5MD trajectory (made once; the XYZ is deleted after conversion)
traj() {
  local h5=$dir/lj_$1x$2.h5
  if [ ! -s "$h5" ]; then
    python3 "$root/tools/gen_lj_trajectory.py" --frames "$1" --atoms "$2" -o "$dir/tmp.extxyz" >&2
    "$mdnl" convert "$dir/tmp.extxyz" "$h5.part.h5" --quiet
    mv "$h5.part.h5" "$h5"
    rm -f "$dir/tmp.extxyz"
  fi
  echo "$h5"
}

# case LABEL NP THREADS FILE ARGS...: REPS runs; summaries to DIR/LABEL-npNP-rR.json
case_() {
  local label=$1 np=$2 thr=$3 file=$4; shift 4
  for r in $(seq 1 "$reps"); do
    local res=$dir/res-$label-np$np.h5
    local t0 t1
    t0=$(date +%s.%N)
    OMP_NUM_THREADS=$thr $mpirun -n "$np" -x OMP_NUM_THREADS "$mdnl" run "$file" $work "$@" -o "$res" --json \
      --no-progress >"$dir/$label-np$np-r$r.json"
    t1=$(date +%s.%N)
    python3 - "$dir/$label-np$np-r$r.json" "$t0" "$t1" "$label" "$np" "$thr" <<'EOF'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
d["command_wall"] = float(sys.argv[3]) - float(sys.argv[2])
d["label"], d["np"], d["threads"] = sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
json.dump(d, open(p, "w"))
EOF
  done
}

# the 1-rank run's datasets against every other rank count of the label
check_same() {
  python3 - "$dir" "$@" <<'EOF'
import sys, h5py, numpy as np
d = sys.argv[1]
for label in sys.argv[2:]:
    import glob
    files = sorted(glob.glob("%s/res-%s-np*.h5" % (d, label)), key=lambda f: int(f.rsplit("np", 1)[1][:-3]))
    ref = files[0]
    def load(f):
        out = {}
        with h5py.File(f, "r") as h:
            h.visititems(lambda n, o: out.__setitem__(n, o[()].tobytes()) if isinstance(o, h5py.Dataset) else None)
        return out
    a = load(ref)
    for f in files[1:]:
        b = load(f)
        same = a.keys() == b.keys() and all(a[k] == b[k] for k in a)
        print("%s: %s %s %s (%d datasets)" % (label, f.rsplit("/", 1)[1], "byte-identical to" if same else "DIFFERS from",
                                             ref.rsplit("/", 1)[1], len(a)))
EOF
}

table() {
  python3 - "$dir" "$@" <<'EOF'
import sys, glob, json, statistics as st
d = sys.argv[1]
for label in sys.argv[2:]:
    runs = {}
    for f in glob.glob("%s/%s-np*-r*.json" % (d, label)):
        j = json.load(open(f))
        runs.setdefault(j["np"], []).append(j)
    if not runs:
        continue
    base = None
    print("\n%s (median of %d; device per rank from the JSON)" % (label, len(next(iter(runs.values())))))
    print("%5s %4s %7s %9s %6s %6s %9s %6s %6s %8s %8s %8s %8s %8s  %s" % (
        "ranks", "thr", "frames", "frames/s", "speed", "eff", "cmd f/s", "speed", "eff",
        "read s", "comp s", "write s", "wait s", "merge s", "devices"))
    for np_ in sorted(runs):
        rs = runs[np_]
        fps = st.median(r["frames_per_second"] for r in rs)
        cmd = st.median(r["frames"] / r["command_wall"] for r in rs)
        med = sorted(rs, key=lambda r: r["frames_per_second"])[len(rs) // 2]
        rsec = med.get("rank_seconds", {})
        mx = lambda k: max(rsec[k]) if k in rsec else med["seconds"][k]
        mpi = med.get("mpi_seconds", {"wait": 0, "merge": 0})
        if base is None:
            base = (fps, cmd, np_)
        sp, spc = fps / base[0], cmd / base[1]
        print("%5d %4d %7d %9.1f %6.2f %6.2f %9.1f %6.2f %6.2f %8.3f %8.3f %8.3f %8.3f %8.3f  %s" % (
            np_, med["threads"], med["frames"], fps, sp, sp / (np_ / base[2]), cmd, spc, spc / (np_ / base[2]),
            mx("read"), mx("compute"), mx("write"), mpi["wait"], mpi["merge"], med.get("device_per_rank", "-")))
    print("  (read/comp/write s: the largest of the ranks' busy seconds; wait: rank 0 waiting for the others'"
          " blocks; merge: rank 0 taking in their results)")
EOF
}

case $mode in
share)
  h5=$(traj "$frames" "$atoms")
  "$mdnl" run "$h5" --read-only --quiet --no-progress # warm the page cache
  for np in 1 2 4; do case_ gpu-shared "$np" $((16 / np)) "$h5" --backend "$gpu_backend"; done
  for np in 1 2 4 8 16; do case_ cpu "$np" $((16 / np)) "$h5" --backend cpu --frames ":$cpu_frames"; done
  { check_same gpu-shared cpu; table gpu-shared cpu; } | tee "$out/bench_mpi_share.txt"
  ;;
gpu2)
  h5=$(traj "$frames" "$atoms")
  h5m=$(traj "$mframes" "$matoms")
  for f in "$h5" "$h5m"; do "$mdnl" run "$f" --read-only --quiet --no-progress; done
  for np in 1 2; do case_ gpu2-100k "$np" 8 "$h5" --backend "$gpu_backend"; done
  for np in 1 2; do case_ gpu2-1m "$np" 8 "$h5m" --backend "$gpu_backend"; done
  {
    check_same gpu2-100k gpu2-1m
    table gpu2-100k gpu2-1m
    # the bare HDF5 read of the same frames with 1 and 2 readers (each reads every frame; 2 run at once)
    for f in "$h5" "$h5m"; do
      [ -x "$bare" ] || { echo "bare read: $bare not found"; break; }
      t0=$(date +%s.%N); "$bare" --bare "$f" >"$dir/bare1.json"; t1=$(date +%s.%N)
      "$bare" --bare "$f" >"$dir/bare2a.json" & "$bare" --bare "$f" >"$dir/bare2b.json"; wait; t2=$(date +%s.%N)
      python3 - "$dir" "$f" "$t0" "$t1" "$t2" <<'EOF'
import json, sys
d, f = sys.argv[1], sys.argv[2]
t0, t1, t2 = map(float, sys.argv[3:6])
one = json.load(open(d + "/bare1.json"))
a, b = (json.load(open(d + "/bare2%s.json" % k)) for k in "ab")
print("bare read %s: 1 reader %.0f frames/s; 2 readers at once %.0f + %.0f = %.0f frames/s (best of 5 each; "
      "whole tool %.2f s vs %.2f s); mdnl's reader %.0f frames/s" % (
          f.rsplit("/", 1)[1], one["bare_fps"], a["bare_fps"], b["bare_fps"], a["bare_fps"] + b["bare_fps"],
          t1 - t0, t2 - t1, one["reader_fps"]))
EOF
    done
  } | tee "$out/bench_mpi_gpu2.txt"
  ;;
*)
  echo "usage: bench_mpi.sh share|gpu2 [DIR]" >&2
  exit 2
  ;;
esac
# the device tool returns few files: the summaries travel as one archive
(cd "$dir" && tar czf "$out/bench_mpi_$mode.json.tar.gz" ./*-np*-r*.json)

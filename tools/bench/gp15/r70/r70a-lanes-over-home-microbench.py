# r70a: lanes over home atoms, a feasibility measurement for dense-walk's take (issue 15).
#
# dense-walk's take puts a candidate in each lane and loops over the home atoms: each (home atom, 32 candidates) step
# is d2, the compares, a ballot, the hit's rank (popc) and a predicated store (~0.67 warp instructions a test). The
# last design of the take not yet measured turns this around: a lane per home atom, the candidates broadcast from
# shared memory, each lane appending its hits to its own row (no ballot, no rank). A cell holds 14 +- 3 atoms, so a
# warp takes a group of consecutive cells (cell order) holding at most 32 atoms; its lanes read, at step k, candidate k
# of their own cell's 27-cell stencil (at most MAXC distinct shared addresses a step). Here, on the real liquid
# (replicated 2 x 2 x 2, shuffled, cell order), every candidate of the 27 cells (no box pruning, in either variant):
#   S  the scalar take of r69e (lane = candidate, a loop over the home atoms, ballot, rank, predicated shared store)
#   H  lanes over home atoms: a warp per group of cells, the groups' candidates staged 64 a cell in shared memory,
#      each lane testing its cell's candidate k and storing a hit in its own shared row (a predicated store)
# Both count every home atom's hits; the counts must agree exactly with a thread-per-atom reference.
# Run on the GPU host with CuPy:  python3 r70a-lanes-over-home-microbench.py LIQ.extxyz.xz
import lzma, sys
import cupy as cp
import numpy as np

path = sys.argv[1]
with lzma.open(path, "rt") as f:
    lines = f.read().splitlines()
m = int(lines[0])
L1 = float(lines[1].split('Lattice="')[1].split('"')[0].split()[0])
P = np.array([l.split()[1:4] for l in lines[2:2 + m]], dtype=np.float64)
pos = np.concatenate([P + np.array([ix, iy, iz]) * L1 for ix in range(2) for iy in range(2) for iz in range(2)])
L = 2 * L1
n = pos.shape[0]
rng = np.random.default_rng(12345)
pos = np.mod(pos[rng.permutation(n)], L).astype(np.float32)
rc = 2.5
nc = int(L // rc)
cs = L / nc
MAXC = 4
print(f"n {n}, L {L:.4f}, cells {nc}^3, {n / nc**3:.2f} atoms a cell")

src = r'''
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#define MAXC %(MAXC)d
__device__ __forceinline__ int cell_of(float x, float inv, int nc) { int c = (int)(x * inv); return c >= nc ? nc - 1 : c; }
__device__ __forceinline__ float d2f(float4 a, float4 bs) {
  /* no contraction into FMA: mdnl_pair_d2's bits (the CPU twin's) */
  float dx = bs.x - a.x, dy = bs.y - a.y, dz = bs.z - a.z;
  return __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz));
}
struct Sten { int fe[27]; int kb[27]; float4 sh[27]; };
/* cell c's 27 cells: flat candidate ranges [fe[r-1], fe[r]) from slot kb[r] + f, shift sh[r] */
__device__ void setup(const int *start, int nc, float L, int c, Sten &S, int lane) {
  int cx = c %% nc, cy = (c / nc) %% nc, cz = c / (nc * nc);
  int cnt = 0, kb = 0; float4 s = make_float4(0, 0, 0, 0);
  if (lane < 27) {
    int dx = lane %% 3 - 1, dy = (lane / 3) %% 3 - 1, dz = lane / 9 - 1;
    int x = cx + dx, y = cy + dy, z = cz + dz;
    if (x < 0) { x += nc; s.x = -L; } else if (x >= nc) { x -= nc; s.x = L; }
    if (y < 0) { y += nc; s.y = -L; } else if (y >= nc) { y -= nc; s.y = L; }
    if (z < 0) { z += nc; s.z = -L; } else if (z >= nc) { z -= nc; s.z = L; }
    int cell = x + nc * (y + nc * z);
    kb = start[cell]; cnt = start[cell + 1] - kb;
    s.w = __int_as_float((dx == 0 && dy == 0 && dz == 0) ? 1 : 0);
  }
  int inc = cnt;
  for (int o = 1; o < 32; o <<= 1) { int v = __shfl_up_sync(0xffffffffu, inc, o); if (lane >= o) inc += v; }
  if (lane < 27) { S.fe[lane] = inc; S.kb[lane] = kb - (inc - cnt); S.sh[lane] = s; }
  __syncwarp();
}
/* candidate f of the flat list (binary search of the 27 ends): its shifted position, w = slot << 1 | home cell */
__device__ __forceinline__ float4 cand(const float4 *ps, const Sten &S, int f) {
  int r = 0;
#pragma unroll
  for (int step = 16; step; step >>= 1) if (r + step <= 26 && S.fe[r + step - 1] <= f) r += step;
  int k = S.kb[r] + f; float4 b = ps[k], s = S.sh[r];
  return make_float4(b.x + s.x, b.y + s.y, b.z + s.z, __int_as_float(k << 1 | __float_as_int(s.w)));
}
extern "C" {
struct WarpS { Sten t; float4 home[32]; int dummy[32 * 4]; };
__global__ void ks(const float4 *__restrict__ ps, const int *__restrict__ start, int nc, float L, float rc2, int *out) {
  __shared__ WarpS SS[4];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, c = blockIdx.x * 4 + w;
  if (c >= nc * nc * nc) return;
  WarpS &S = SS[w];
  const int hb = start[c], nh = min(start[c + 1] - hb, 32);
  setup(start, nc, L, c, S.t, lane);
  if (lane < nh) S.home[lane] = ps[hb + lane];
  __syncwarp();
  const int ntot = S.t.fe[26];
  const unsigned lt = (1u << lane) - 1u;
  int cnt = 0;
  for (int base = 0; base < ntot; base += 32) {
    float4 b = base + lane < ntot ? cand(ps, S.t, base + lane) : make_float4(INFINITY, INFINITY, INFINITY, __int_as_float(-2));
    const int key = __float_as_int(b.w);
#pragma unroll 2
    for (int a = 0; a < nh; ++a) {
      const float4 pa = S.home[a];
      const bool hit = d2f(pa, b) < rc2 && key != ((hb + a) << 1 | 1);
      const unsigned msk = __ballot_sync(0xffffffffu, hit);
      const int ca = __shfl_sync(0xffffffffu, cnt, a);
      const int p = ca + __popc(msk & lt);
      if (hit) S.dummy[(p & 31) * 4 + (a & 3)] = key;
      if (lane == a) cnt = ca + __popc(msk);
    }
  }
  if (lane < nh) out[hb + lane] = cnt;
}
struct WarpH { Sten t[MAXC]; float4 st[MAXC][64]; int rows[32 * 33]; };
/* a warp per group of consecutive cells (grp: first cell, cells) holding at most 32 atoms, a lane per home atom */
__global__ void kh(const float4 *__restrict__ ps, const int *__restrict__ start, int nc, float L, float rc2,
                   const int2 *__restrict__ grp, int ngrp, int *out) {
  __shared__ WarpH HH[%(WPB)d];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = blockIdx.x * %(WPB)d + w;
  if (g >= ngrp) return;
  WarpH &H = HH[w];
  const int2 gr = grp[g];
  const int hb = start[gr.x], nh = start[gr.x + gr.y] - hb;
  int my = 0; /* this lane's cell in the group */
  for (int j = 1; j < gr.y; ++j) if (hb + lane >= start[gr.x + j]) my = j;
  const bool live = lane < nh;
  const float4 a = live ? ps[hb + lane] : make_float4(INFINITY, INFINITY, INFINITY, 0.0f);
  const int mykey = live ? ((hb + lane) << 1 | 1) : -5;
  int kmax = 0;
  for (int j = 0; j < gr.y; ++j) { setup(start, nc, L, gr.x + j, H.t[j], lane); kmax = max(kmax, H.t[j].fe[26]); }
  int cnt = 0;
  int *const row = H.rows + 33 * lane; /* this lane's row (a sink of 32 entries standing in for its slab row) */
  for (int base = 0; base < kmax; base += 64) {
    for (int j = 0; j < gr.y; ++j) {
      const int nt = H.t[j].fe[26];
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int f = base + h * 32 + lane;
        H.st[j][h * 32 + lane] = f < nt ? cand(ps, H.t[j], f) : make_float4(INFINITY, INFINITY, INFINITY, __int_as_float(-2));
      }
    }
    __syncwarp();
    const int nk = min(64, kmax - base);
    const float4 *sp = H.st[my];
#pragma unroll 4
    for (int k = 0; k < nk; ++k) {
      const float4 b = sp[k];
      const int key = __float_as_int(b.w);
      if (d2f(a, b) < rc2 && key != mykey) { row[cnt & 31] = key; ++cnt; }
    }
    __syncwarp();
  }
  if (live) out[hb + lane] = cnt;
}
__global__ void kr(const float4 *__restrict__ ps, const int *__restrict__ start, int n, int nc, float L, float inv,
                   float rc2, int *out) {
  int k = blockIdx.x * blockDim.x + threadIdx.x; if (k >= n) return;
  float4 a = ps[k];
  int cx = cell_of(a.x, inv, nc), cy = cell_of(a.y, inv, nc), cz = cell_of(a.z, inv, nc), cnt = 0;
  for (int dz = -1; dz <= 1; ++dz) for (int dy = -1; dy <= 1; ++dy) for (int dx = -1; dx <= 1; ++dx) {
    int x = cx + dx, y = cy + dy, z = cz + dz; float sx = 0, sy = 0, sz = 0;
    if (x < 0) { x += nc; sx = -L; } else if (x >= nc) { x -= nc; sx = L; }
    if (y < 0) { y += nc; sy = -L; } else if (y >= nc) { y -= nc; sy = L; }
    if (z < 0) { z += nc; sz = -L; } else if (z >= nc) { z -= nc; sz = L; }
    int cell = x + nc * (y + nc * z);
    for (int s = start[cell]; s < start[cell + 1]; ++s) {
      if (s == k && dx == 0 && dy == 0 && dz == 0) continue;
      float4 b = ps[s];
      if (d2f(a, make_float4(b.x + sx, b.y + sy, b.z + sz, 0)) < rc2) ++cnt;
    }
  }
  out[k] = cnt;
}
__global__ void cid_k(const float4 *p, int n, float inv, int nc, int *cid) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  float4 q = p[i]; cid[i] = cell_of(q.x, inv, nc) + nc * (cell_of(q.y, inv, nc) + nc * cell_of(q.z, inv, nc));
}
}
'''
po_h = np.zeros((n, 4), np.float32)
po_h[:, :3] = pos
po = cp.asarray(po_h)
cid = cp.empty(n, cp.int32)
T = 256
ncell = nc**3
mods = {}
for wpb in (2, 4):
    mods[wpb] = cp.RawModule(code=src % {"MAXC": MAXC, "WPB": wpb}, options=("-std=c++17",))
K = {k: mods[4].get_function(k) for k in ("ks", "kr", "cid_k")}
K["cid_k"](((n + T - 1) // T,), (T,), (po, np.int32(n), np.float32(1 / cs), np.int32(nc), cid))
order = cp.argsort(cid)
ps = cp.ascontiguousarray(po[order])
counts = cp.bincount(cid, minlength=ncell)
start = cp.zeros(ncell + 1, cp.int32)
start[1:] = cp.cumsum(counts).astype(cp.int32)
ch = cp.asnumpy(counts)
print(f"atoms a cell: mean {ch.mean():.2f}, max {ch.max()}, cells over 16: {(ch > 16).sum()}")
# groups: consecutive cells, at most 32 atoms and MAXC cells a group (greedy)
grp = []
c = 0
while c < ncell:
    tot, k = 0, 0
    while c + k < ncell and k < MAXC and tot + ch[c + k] <= 32:
        tot += ch[c + k]; k += 1
    grp.append((c, k)); c += k
grp_h = np.array(grp, np.int32)
ng = len(grp)
fill = n / (32 * ng)
print(f"groups: {ng} (cells a group: mean {ncell / ng:.2f}; lanes busy {100 * fill:.1f} %)")
grp_d = cp.asarray(grp_h.reshape(-1)).view(cp.int32)
ref = cp.zeros(n, cp.int32)
K["kr"](((n + T - 1) // T,), (T,), (ps, start, np.int32(n), np.int32(nc), np.float32(L), np.float32(1 / cs), np.float32(rc * rc), ref))
o_s = cp.full(n, -1, cp.int32)
outs = {}
run = {"S scalar take": lambda: K["ks"](((ncell + 3) // 4,), (128,), (ps, start, np.int32(nc), np.float32(L), np.float32(rc * rc), o_s))}
for wpb in (2, 4):
    o = cp.full(n, -1, cp.int32)
    outs[wpb] = o
    f = mods[wpb].get_function("kh")
    run[f"H lanes over home atoms, {wpb} warps a block"] = (lambda f=f, o=o, wpb=wpb: f(((ng + wpb - 1) // wpb,), (32 * wpb,), (ps, start, np.int32(nc), np.float32(L), np.float32(rc * rc), grp_d, np.int32(ng), o)))


def timeit(f, reps=30):
    f()
    cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(reps):
        s.record()
        f()
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e))
    return float(np.median(ts)), float(np.min(ts))


names = list(run)
for name in names + names[::-1]:
    med, mn = timeit(run[name])
    print(f"{name}: {med:.4f} ms (min {mn:.4f})")
cp.cuda.Device().synchronize()
print(f"pairs: reference {int(ref.sum())}, S {int(o_s.sum())}, " + ", ".join(f"H{w} {int(o.sum())}" for w, o in outs.items()))
print(f"rows differing from the reference: S {int((o_s != ref).sum())}, " + ", ".join(f"H{w} {int((o != ref).sum())}" for w, o in outs.items()))

# r70b: lanes over home atoms as a whole walk (r70a's H with what dense-walk's walk does besides the tests), against
# dense-walk's own walk on the same frame (issue 15).
#
# r70a found the take with a lane per home atom 29 % fewer instructions than the take with a lane per candidate, but
# held back by occupancy (shared memory). Here H carries the rest of a real walk and keeps its shared memory small:
#   - a warp per group of consecutive cells (cell order) holding at most 32 atoms (at most MAXC cells), a lane per
#     home atom; each cell's 27-cell candidate ranges in a table, its home atoms' bounding box;
#   - candidates enumerated 32 a step a cell, each dropped when its image is a cutoff or more from the cell's box
#     (the walk's box test), the kept ones (position unshifted, key = slot << 5 | stencil code) in a buffer of 64 a cell;
#   - a take: 32 kept candidates of each cell (at its end, padded with ones that never hit); a lane tests its own cell's in turn, without the
#     shift where the take's candidates all have a zero shift (as the walk's Z), mdnl_pair_d2's float formula (no FMA);
#   - each hit stored at once into the lane's slab row (8 bytes: key, d2; rows by a random permutation of the slots,
#     as the shuffled liquid's rows by original index), at most CAP = 64 a row; the row's count at the end;
#     or (STAGE) each lane's row kept in shared memory (16 kB a warp) and written to the slab coalesced at the end.
# The counts must agree with a thread-per-atom reference. dense-walk's own walk on the same positions: `mdnl bench
# --sizes lj-1m-liquid` ("count" stage, full list), run in the same call.
# Run on the GPU host with CuPy:  python3 r70b-lanes-over-home-walk-microbench.py LIQ.extxyz.xz
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
CAP = 64
print(f"n {n}, L {L:.4f}, cells {nc}^3, {n / nc**3:.2f} atoms a cell")

src = r'''
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#define MAXC %(MAXC)d
#define WPB %(WPB)d
#define CAP %(CAP)d
#define ZC 13 /* the stencil code of the zero shift's cell (dx = dy = dz = 0) */
__device__ __forceinline__ int cell_of(float x, float inv, int nc) { int c = (int)(x * inv); return c >= nc ? nc - 1 : c; }
__device__ __forceinline__ float d2z(float4 a, float4 b) {
  const float dx = __fsub_rn(b.x, a.x), dy = __fsub_rn(b.y, a.y), dz = __fsub_rn(b.z, a.z);
  return __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz));
}
__device__ __forceinline__ float d2s(float4 a, float4 b, float4 v) { /* mdnl_pair_d2: ((b - a) + v)^2 */
  const float dx = __fadd_rn(__fsub_rn(b.x, a.x), v.x), dy = __fadd_rn(__fsub_rn(b.y, a.y), v.y), dz = __fadd_rn(__fsub_rn(b.z, a.z), v.z);
  return __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz));
}
/* the squared distance from the box [lo, hi] to the image b + v (a lower bound of every d2 against the box) */
__device__ __forceinline__ float box_d2(float4 b, float3 lo, float3 hi, float4 v) {
  const float x = b.x + v.x, y = b.y + v.y, z = b.z + v.z;
  const float gx = fmaxf(fmaxf(lo.x - x, x - hi.x), 0.f), gy = fmaxf(fmaxf(lo.y - y, y - hi.y), 0.f), gz = fmaxf(fmaxf(lo.z - z, z - hi.z), 0.f);
  return gx * gx + gy * gy + gz * gz;
}
struct Cell { int fe[27]; int kb[27]; float3 lo, hi; int f, nk, ntot; };
extern "C" {
#define STAGE %(STAGE)d /* 1: each lane's row staged in shared memory, written to the slab coalesced at the end */
struct WarpH { Cell t[MAXC]; float4 ring[MAXC][64];
#if STAGE
  uint2 rows[32 * 65];
#endif
};
__global__ void __launch_bounds__(32 * WPB) kh(const float4 *__restrict__ ps, const int *__restrict__ start, int nc, float L,
                   float rc2, const int2 *__restrict__ grp, int ngrp, const int *__restrict__ rowof, uint2 *__restrict__ slab,
                   int *__restrict__ out, int mode) {
  __shared__ WarpH HH[WPB];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = blockIdx.x * WPB + w;
  if (g >= ngrp) return;
  WarpH &H = HH[w];
  const int2 gr = grp[g];
  const int hb = start[gr.x], nh = start[gr.x + gr.y] - hb;
  int my = 0;
  for (int j = 1; j < gr.y; ++j) if (hb + lane >= start[gr.x + j]) my = j;
  const bool live = lane < nh;
  const float4 a = live ? ps[hb + lane] : make_float4(INFINITY, INFINITY, INFINITY, 0.0f);
  const unsigned mykey = live ? (unsigned)(hb + lane) << 5 | ZC : 0xffffffffu;
  uint2 *row = slab + (size_t)(live ? rowof[hb + lane] : 0) * CAP;
  asm("" : "+l"(row)); /* a pointer the stores offset by the count (as the walk's own, loaded from shared memory) */
  /* the group's cells: candidate tables (27 ranges each) and home boxes */
  for (int j = 0; j < gr.y; ++j) {
    const int c = gr.x + j;
    const int cx = c %% nc, cy = (c / nc) %% nc, cz = c / (nc * nc);
    int cnt = 0, kb = 0;
    if (lane < 27) {
      int x = cx + lane %% 3 - 1, y = cy + (lane / 3) %% 3 - 1, z = cz + lane / 9 - 1;
      x = (x + nc) %% nc; y = (y + nc) %% nc; z = (z + nc) %% nc;
      const int cell = x + nc * (y + nc * z);
      kb = start[cell]; cnt = start[cell + 1] - kb;
    }
    int inc = cnt;
    for (int o = 1; o < 32; o <<= 1) { int v = __shfl_up_sync(0xffffffffu, inc, o); if (lane >= o) inc += v; }
    if (lane < 27) { H.t[j].fe[lane] = inc; H.t[j].kb[lane] = kb - (inc - cnt); }
    float lx = INFINITY, ly = INFINITY, lz = INFINITY, ux = -INFINITY, uy = -INFINITY, uz = -INFINITY;
    if (live && my == j) { lx = ux = a.x; ly = uy = a.y; lz = uz = a.z; }
    for (int o = 16; o; o >>= 1) {
      lx = fminf(lx, __shfl_xor_sync(0xffffffffu, lx, o)); ly = fminf(ly, __shfl_xor_sync(0xffffffffu, ly, o));
      lz = fminf(lz, __shfl_xor_sync(0xffffffffu, lz, o)); ux = fmaxf(ux, __shfl_xor_sync(0xffffffffu, ux, o));
      uy = fmaxf(uy, __shfl_xor_sync(0xffffffffu, uy, o)); uz = fmaxf(uz, __shfl_xor_sync(0xffffffffu, uz, o));
    }
    const int tot = __shfl_sync(0xffffffffu, inc, 26);
    if (lane == 0) { H.t[j].lo = make_float3(lx, ly, lz); H.t[j].hi = make_float3(ux, uy, uz); H.t[j].f = 0; H.t[j].nk = 0; H.t[j].ntot = tot; }
    __syncwarp();
  }
  unsigned cnt = 0; /* this lane's row length */
#if STAGE
  uint2 *const srow = H.rows + 65 * lane;
#define SINK(p, v) (srow[p] = (v))
#else
#define SINK(p, v) __stcg(row + (p), (v))
#endif
  /* the shift vector of stencil code r of cell c: the box period where the neighbour wrapped */
  auto shift = [&](int c, int r) {
    const int cx = c %% nc, cy = (c / nc) %% nc, cz = c / (nc * nc);
    const int x = cx + r %% 3 - 1, y = cy + (r / 3) %% 3 - 1, z = cz + r / 9 - 1;
    return make_float4(x < 0 ? -L : x >= nc ? L : 0.f, y < 0 ? -L : y >= nc ? L : 0.f, z < 0 ? -L : z >= nc ? L : 0.f, 0.f);
  };
  /* each cell's 27 shift vectors by stencil code (the ring key's low 5 bits), a table a warp */
  __shared__ float4 svs[WPB][MAXC][27];
  for (int j = 0; j < gr.y; ++j) if (lane < 27) svs[w][j][lane] = shift(gr.x + j, lane);
  __syncwarp();
  const unsigned lt = (1u << lane) - 1u;
  for (;;) {
    /* fill each cell's buffer to 32 kept candidates (or to its end); a buffer is linear: a take's leftover moves to
     * its front, and a last take's short buffer is padded to 32 with candidates that never hit */
    bool more = false;
    int tmax = 0;
    for (int j = 0; j < gr.y; ++j) {
      Cell &C = H.t[j];
      int f = C.f, nk = C.nk;
      const int ntot = C.ntot;
      while (nk < 32 && f < ntot) {
        const int fl = f + lane;
        bool keep = false;
        float4 b;
        unsigned key = 0;
        if (fl < ntot) {
          int r = 0;
#pragma unroll
          for (int step = 16; step; step >>= 1) if (r + step <= 26 && C.fe[r + step - 1] <= fl) r += step;
          const int k = C.kb[r] + fl;
          b = ps[k];
          keep = box_d2(b, C.lo, C.hi, svs[w][j][r]) < rc2;
          key = (unsigned)k << 5 | r;
        }
        const unsigned km = __ballot_sync(0xffffffffu, keep);
        if (keep) H.ring[j][nk + __popc(km & lt)] = make_float4(b.x, b.y, b.z, __uint_as_float(key));
        nk += __popc(km);
        f += 32;
      }
      f = min(f, ntot);
      if (lane >= nk) H.ring[j][lane] = make_float4(INFINITY, INFINITY, INFINITY, __uint_as_float(ZC));
      __syncwarp();
      if (lane == 0) { C.f = f; C.nk = nk; }
      more |= nk > 0;
      tmax = max(tmax, min(nk, 32));
    }
    __syncwarp();
    if (!more) break;
    /* the take: 32 of each cell's buffer (the padding included), only as far as the longest needs, by fours */
    tmax = (tmax + 3) & ~3;
    bool zl = true;
    for (int j = 0; j < gr.y; ++j) zl = zl && (__float_as_uint(H.ring[j][lane].w) & 31u) == ZC;
    const bool z = mode == 1 ? false : __all_sync(0xffffffffu, zl);
    const float4 *const rg = H.ring[my];
    const float4 *const sv = svs[w][my];
    if (z) {
#pragma unroll 4
      for (int k = 0; k < tmax; ++k) {
        const float4 b = rg[k];
        const unsigned key = __float_as_uint(b.w);
        const float d2 = d2z(a, b);
        const bool hit = d2 < rc2 && key != mykey;
        if (hit && cnt < CAP) SINK(cnt, make_uint2(key, __float_as_uint(d2)));
        cnt += (unsigned)hit;
      }
    } else {
#pragma unroll 4
      for (int k = 0; k < tmax; ++k) {
        const float4 b = rg[k];
        const unsigned key = __float_as_uint(b.w);
        const float d2 = d2s(a, b, sv[key & 31u]);
        const bool hit = d2 < rc2 && key != mykey;
        if (hit && cnt < CAP) SINK(cnt, make_uint2(key, __float_as_uint(d2)));
        cnt += (unsigned)hit;
      }
    }
    __syncwarp();
    /* the leftover (at most 31 a cell) to the buffer's front */
    for (int j = 0; j < gr.y; ++j) {
      const int nk = H.t[j].nk, left = max(nk - 32, 0);
      float4 v;
      if (lane < left) v = H.ring[j][32 + lane];
      __syncwarp();
      if (lane < left) H.ring[j][lane] = v;
      if (lane == 0) H.t[j].nk = left;
    }
    __syncwarp();
  }
#if STAGE
  __syncwarp();
  for (int l = 0; l < nh; ++l) { /* lane l's row, 32 entries a store */
    const unsigned cl = min(__shfl_sync(0xffffffffu, cnt, l), (unsigned)CAP);
    uint2 *const rl = (uint2 *)__shfl_sync(0xffffffffu, (unsigned long long)row, l);
    for (unsigned e = lane; e < cl; e += 32) __stcg(rl + e, H.rows[65 * l + e]);
  }
#endif
  if (live) out[hb + lane] = (int)cnt;
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
      if (d2s(a, b, make_float4(sx, sy, sz, 0)) < rc2) ++cnt;
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
mod0 = cp.RawModule(code=src % {"MAXC": 4, "WPB": 4, "CAP": CAP, "STAGE": 0}, options=("-std=c++17",))
mod0.get_function("cid_k")(((n + T - 1) // T,), (T,), (po, np.int32(n), np.float32(1 / cs), np.int32(nc), cid))
order = cp.argsort(cid)
ps = cp.ascontiguousarray(po[order])
counts = cp.bincount(cid, minlength=ncell)
start = cp.zeros(ncell + 1, cp.int32)
start[1:] = cp.cumsum(counts).astype(cp.int32)
ch = cp.asnumpy(counts)
ref = cp.zeros(n, cp.int32)
mod0.get_function("kr")(((n + T - 1) // T,), (T,), (ps, start, np.int32(n), np.int32(nc), np.float32(L), np.float32(1 / cs), np.float32(rc * rc), ref))
rowof = cp.asarray(rng.permutation(n).astype(np.int32))
slab = cp.zeros((n * CAP, 2), cp.uint32)


def groups(maxc):
    grp = []
    c = 0
    while c < ncell:
        tot, k = 0, 0
        while c + k < ncell and k < maxc and tot + ch[c + k] <= 32:
            tot += ch[c + k]; k += 1
        grp.append((c, k)); c += k
    return np.array(grp, np.int32)


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


runs = {}
outs = {}
for maxc, stage in ((4, 0), (4, 1)):
    gh = groups(maxc)
    ng = len(gh)
    gd = cp.asarray(gh.reshape(-1))
    print(f"MAXC {maxc}: groups {ng} (cells a group {ncell / ng:.2f}; lanes busy {100 * n / (32 * ng):.1f} %)")
    for wpb in ((2,) if stage else (2, 4)):
        mod = cp.RawModule(code=src % {"MAXC": maxc, "WPB": wpb, "CAP": CAP, "STAGE": stage}, options=("-std=c++17",))
        f = mod.get_function("kh")
        for mode in (0, 1):
            o = cp.full(n, -1, cp.int32)
            name = f"H walk MAXC {maxc}, {wpb} warps a block" + (", rows staged in shared memory" if stage else "") + (", always shifted" if mode else "")
            outs[name] = o
            runs[name] = (lambda f=f, o=o, wpb=wpb, gd=gd, ng=ng, mode=mode: f(((ng + wpb - 1) // wpb,), (32 * wpb,), (ps, start, np.int32(nc), np.float32(L), np.float32(rc * rc), gd, np.int32(ng), rowof, slab, o, np.int32(mode))))
names = list(runs)
for name in names + names[::-1]:
    med, mn = timeit(runs[name])
    print(f"{name}: {med:.4f} ms (min {mn:.4f})")
cp.cuda.Device().synchronize()
print(f"pairs: reference {int(ref.sum())}; " + ", ".join(f"{k.split('H walk ')[1]}: {int(o.sum())} ({int((o != ref).sum())} rows differ)" for k, o in outs.items()))

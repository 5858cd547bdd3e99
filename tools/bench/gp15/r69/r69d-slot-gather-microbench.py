# r69d: what a dense-walk rows kernel would pay to gather positions by cell-order slot (issue 15).
#
# The question: the shuffled liquid's full list moves 24 bytes a pair through DRAM in the packed layout
# (slab entry 8 written, 8 read, CSR 8). A layout whose slab entry is the candidate's cell-order slot (4 bytes, or 2
# with a per-cell range table) moves 16 (or 12) but must gather each entry's position again, by slot: spatially
# local for a row (its neighbours lie in a few runs of the cell order), random across a warp's rows. Does that
# gather cost less than the 8 bytes it saves? Emulated here without the row sort (the same in every variant):
#   KA  packed: an 8-byte entry (j << 6 | p, d2) a pair -> j, sqrt(d2)              (today's packed rows' bytes)
#   KB  slot:   a 4-byte slot a pair, the position (x, y, z, j) gathered by slot  (the proposal)
#   KC  index:  a 4-byte j a pair, the position gathered by original index        (today's gathered rows' bytes)
# Each: a warp per 16 rows, lanes over a row's entries, streaming CSR stores; rows in original index order (the CSR's),
# the real LAMMPS liquid replicated 2 x 2 x 2 and shuffled (lj-1m-liquid), 2.5 sigma. Run on the GPU host with CuPy:
#   python3 r69d-slot-gather-microbench.py LIQ.extxyz.xz
import lzma, sys
import cupy as cp
import numpy as np

path = sys.argv[1]
with lzma.open(path, "rt") as f:
    lines = f.read().splitlines()
m = int(lines[0])
lat = lines[1].split('Lattice="')[1].split('"')[0].split()
L1 = float(lat[0])
P = np.array([l.split()[1:4] for l in lines[2:2 + m]], dtype=np.float64)
pos = np.concatenate([P + np.array([ix, iy, iz]) * L1 for ix in range(2) for iy in range(2) for iz in range(2)])
L = 2 * L1
n = pos.shape[0]
rng = np.random.default_rng(12345)
pos = pos[rng.permutation(n)]
pos = np.mod(pos, L).astype(np.float32)
rc = 2.5
nc = int(L // rc)
cs = L / nc
print(f"n {n}, L {L:.4f}, cells {nc}^3, {n / nc**3:.2f} atoms a cell")

src = r'''
/* KB (BY_SLOT) and KC: the position gathered (by slot from the cell order, or by j from the input order) */
template <bool BY_SLOT>
__device__ void kg(const unsigned *__restrict__ s4, const float4 *__restrict__ ps, const float4 *__restrict__ po,
                   const long long *__restrict__ off, const int *__restrict__ cnt, int n, float L,
                   int *__restrict__ j, float *__restrict__ d) {
  int w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  const float inv = 1.0f / L;
  for (int i = w * 16; i < w * 16 + 16 && i < n; ++i) {
    long long o = off[i]; int len = min(cnt[i], 64);
    float4 a = po[i];
    for (int e = lane; e < len; e += 32) {
      unsigned s = s4[(long long)i * 64 + e];
      float4 b = BY_SLOT ? ps[s] : po[s];
      float ex = b.x - a.x, ey = b.y - a.y, ez = b.z - a.z;
      ex -= L * rintf(ex * inv); ey -= L * rintf(ey * inv); ez -= L * rintf(ez * inv);
      __stcs(j + o + e, __float_as_int(b.w)); __stcs(d + o + e, sqrtf(ex * ex + ey * ey + ez * ez));
    }
  }
}
extern "C" {
__device__ __forceinline__ int cell_of(float x, float inv, int nc) { int c = (int)(x * inv); return c >= nc ? nc - 1 : c; }
__global__ void cid_k(const float4 *p, int n, float inv, int nc, int *cid) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= n) return;
  float4 q = p[i]; cid[i] = cell_of(q.x, inv, nc) + nc * (cell_of(q.y, inv, nc) + nc * cell_of(q.z, inv, nc));
}
/* thread per slot k: its atom's row, counted (pass 0) or filled (pass 1: slot, j, d2 of each neighbour) */
__global__ void nl_k(const float4 *ps, const int *start, int n, int nc, float inv, float L, float rc2, int pass,
                     int *cnt, const long long *off, int *oslot, int *oj, float *od2) {
  int k = blockIdx.x * blockDim.x + threadIdx.x; if (k >= n) return;
  float4 a = ps[k]; int i = __float_as_int(a.w);
  int cx = cell_of(a.x, inv, nc), cy = cell_of(a.y, inv, nc), cz = cell_of(a.z, inv, nc);
  int c = 0; long long o = pass ? off[i] : 0;
  for (int dz = -1; dz <= 1; ++dz) for (int dy = -1; dy <= 1; ++dy) for (int dx = -1; dx <= 1; ++dx) {
    int x = cx + dx, y = cy + dy, z = cz + dz; float sx = 0, sy = 0, sz = 0;
    if (x < 0) { x += nc; sx = -L; } else if (x >= nc) { x -= nc; sx = L; }
    if (y < 0) { y += nc; sy = -L; } else if (y >= nc) { y -= nc; sy = L; }
    if (z < 0) { z += nc; sz = -L; } else if (z >= nc) { z -= nc; sz = L; }
    int cell = x + nc * (y + nc * z);
    for (int s = start[cell]; s < start[cell + 1]; ++s) {
      if (s == k) continue;
      float4 b = ps[s];
      float ex = b.x + sx - a.x, ey = b.y + sy - a.y, ez = b.z + sz - a.z;
      float d2 = ex * ex + ey * ey + ez * ez;
      if (d2 < rc2) { if (pass) { oslot[o + c] = s; oj[o + c] = __float_as_int(b.w); od2[o + c] = d2; } ++c; }
    }
  }
  if (!pass) cnt[i] = c;
}
/* the slabs: row i at i * 64, its first min(len, 64) entries, in output (j) order */
__global__ void slab_k(const long long *off, const int *cnt, int n, const int *sj, const int *sslot, const float *sd2,
                       uint2 *s8, unsigned *s4, unsigned *s4j) {
  int i = blockIdx.x; if (i >= n) return; long long o = off[i]; int len = min(cnt[i], 64);
  for (int e = threadIdx.x; e < len; e += blockDim.x) {
    s8[(long long)i * 64 + e] = make_uint2(((unsigned)sj[o + e] << 6) | e, __float_as_uint(sd2[o + e]));
    s4[(long long)i * 64 + e] = sslot[o + e];
    s4j[(long long)i * 64 + e] = sj[o + e];
  }
}
__global__ void ka(const uint2 *__restrict__ s8, const long long *__restrict__ off, const int *__restrict__ cnt, int n,
                   int *__restrict__ j, float *__restrict__ d) {
  int w = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  for (int i = w * 16; i < w * 16 + 16 && i < n; ++i) {
    long long o = off[i]; int len = min(cnt[i], 64);
    for (int e = lane; e < len; e += 32) {
      uint2 u = s8[(long long)i * 64 + e];
      __stcs(j + o + e, (int)(u.x >> 6)); __stcs(d + o + e, sqrtf(__uint_as_float(u.y)));
    }
  }
}
__global__ void kb(const unsigned *s4, const float4 *ps, const float4 *po, const long long *off, const int *cnt, int n,
                   float L, int *j, float *d) { kg<true>(s4, ps, po, off, cnt, n, L, j, d); }
__global__ void kc(const unsigned *s4, const float4 *ps, const float4 *po, const long long *off, const int *cnt, int n,
                   float L, int *j, float *d) { kg<false>(s4, ps, po, off, cnt, n, L, j, d); }
}
'''
mod = cp.RawModule(code=src, options=("-std=c++17",))
K = {k: mod.get_function(k) for k in ("cid_k", "nl_k", "slab_k", "ka", "kb", "kc")}

po_h = np.zeros((n, 4), np.float32)
po_h[:, :3] = pos
po_h[:, 3] = np.arange(n, dtype=np.int32).view(np.float32)
po = cp.asarray(po_h)
cid = cp.empty(n, cp.int32)
T = 256
K["cid_k"](((n + T - 1) // T,), (T,), (po, np.int32(n), np.float32(1 / cs), np.int32(nc), cid))
order = cp.argsort(cid, kind="stable").astype(cp.int32)
ps = po[order]
start = cp.zeros(nc**3 + 1, cp.int32)
start[1:] = cp.cumsum(cp.bincount(cid, minlength=nc**3)).astype(cp.int32)
cnt = cp.zeros(n, cp.int32)
off = cp.zeros(n + 1, cp.int64)
dummy_i = cp.zeros(1, cp.int32)
dummy_f = cp.zeros(1, cp.float32)
K["nl_k"](((n + T - 1) // T,), (T,), (ps, start, np.int32(n), np.int32(nc), np.float32(1 / cs), np.float32(L),
                                      np.float32(rc * rc), np.int32(0), cnt, off, dummy_i, dummy_i, dummy_f))
off[1:] = cp.cumsum(cnt.astype(cp.int64))
tot = int(off[-1])
print(f"pairs {tot} ({tot / n:.2f} a row), longest row {int(cnt.max())}, rows over 64: {int((cnt > 64).sum())}")
oslot = cp.empty(tot, cp.int32)
oj = cp.empty(tot, cp.int32)
od2 = cp.empty(tot, cp.float32)
K["nl_k"](((n + T - 1) // T,), (T,), (ps, start, np.int32(n), np.int32(nc), np.float32(1 / cs), np.float32(L),
                                      np.float32(rc * rc), np.int32(1), cnt, off, oslot, oj, od2))
# each row in j order (the CSR's)
rowid = cp.zeros(tot, cp.int64)
rowid[off[1:-1]] = 1
rowid = cp.cumsum(rowid)
perm = cp.argsort(rowid * (1 << 21) + oj.astype(cp.int64))
oj, oslot, od2 = oj[perm], oslot[perm], od2[perm]
del perm, rowid
s8 = cp.zeros(n * 64, dtype=cp.uint64).view(cp.uint32).reshape(-1, 2)
s4 = cp.zeros(n * 64, cp.uint32)
s4j = cp.zeros(n * 64, cp.uint32)
K["slab_k"]((n,), (64,), (off, cnt, np.int32(n), oj, oslot, od2, s8, s4, s4j))
j_out = cp.empty(tot, cp.int32)
d_out = cp.empty(tot, cp.float32)
ref_d = cp.sqrt(od2)


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


capped = cp.minimum(cnt, 64).astype(cp.int64)
ent = int(capped.sum())
grid = lambda t: ((n // 16) * 32 // t + 1,)
print(f"entries timed {ent} (rows capped at 64)")
for t in (128, 256):
    runs = {
        "KA packed 8 B entry": (lambda: K["ka"](grid(t), (t,), (s8, off, cnt, np.int32(n), j_out, d_out)), 16),
        "KB slot 4 B + gather by slot": (lambda: K["kb"](grid(t), (t,), (s4, ps, po, off, cnt, np.int32(n), np.float32(L), j_out, d_out)), 12),
        "KC j 4 B + gather by index": (lambda: K["kc"](grid(t), (t,), (s4j, ps, po, off, cnt, np.int32(n), np.float32(L), j_out, d_out)), 12),
    }
    for name, (f, b) in runs.items():
        med, mn = timeit(f)
        f()
        cp.cuda.Device().synchronize()
        print(f"T={t} {name:32s} {med:.4f} ms (min {mn:.4f})  {b * ent / med / 1e9:.2f} TB/s of its DRAM floor bytes ({b} B a pair)")
# correctness of KB on a sample of full rows (rows of at most 64)
K["kb"](grid(128), (128,), (s4, ps, po, off, cnt, np.int32(n), np.float32(L), j_out, d_out))
cp.cuda.Device().synchronize()
short = cp.where(cnt <= 64)[0][:1000].get()
offh, jh, dh, ojh, rdh = off.get(), j_out.get(), d_out.get(), oj.get(), ref_d.get()
bad = 0
for i in short:
    a, b = offh[i], offh[i + 1]
    bad += int((jh[a:b] != ojh[a:b]).sum()) + int((np.abs(dh[a:b] - rdh[a:b]) > 1e-5).sum())
print(f"KB check on 1000 rows: {bad} differences")

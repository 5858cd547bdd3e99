# How much do scattered global atomics with return cost on this GPU? (issue 15's half list by the half stencil
# would append ~14M hits to other warps' rows through per-row atomic counters)
import cupy as cp, numpy as np
src = r'''
extern "C" __global__ void atom_ret(const int *idx, unsigned *cnt, unsigned *out, int n, int per) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  unsigned acc = 0;
  for (int k = 0; k < per; ++k) acc += atomicAdd(cnt + idx[(size_t)t * per + k], 1u);
  out[t] = acc;
}
extern "C" __global__ void atom_noret(const int *idx, unsigned *cnt, int n, int per) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  for (int k = 0; k < per; ++k) atomicAdd(cnt + idx[(size_t)t * per + k], 1u);
}
extern "C" __global__ void store_scatter(const int *idx, unsigned *cnt, int n, int per) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  for (int k = 0; k < per; ++k) cnt[idx[(size_t)t * per + k]] = t;
}
'''
m = cp.RawModule(code=src)
rows = 1 << 20
for total in (8_000_000, 14_000_000):
  for per in (1, 4):
    n = total // per
    rng = np.random.default_rng(1)
    idx = cp.asarray(rng.integers(0, rows, size=n * per, dtype=np.int32))
    cnt = cp.zeros(rows, dtype=cp.uint32); out = cp.zeros(n, dtype=cp.uint32)
    for name in ("atom_ret", "atom_noret", "store_scatter"):
      k = m.get_function(name)
      args = (idx, cnt, out, np.int32(n), np.int32(per)) if name == "atom_ret" else (idx, cnt, np.int32(n), np.int32(per))
      grid = ((n + 255) // 256,)
      for _ in range(3): k(grid, (256,), args)
      s, e = cp.cuda.Event(), cp.cuda.Event(); ts = []
      for _ in range(15):
        s.record(); k(grid, (256,), args); e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e))
      print(f"{name:14s} total {total:>9d} per-thread {per}: {np.median(ts)*1e3:8.1f} us  ({total/np.median(ts)/1e6:6.1f} G/s)")
# sorted-ish (each warp's 32 atomics to nearby rows, as a cell's candidates are)
n = 14_000_000
base = np.repeat(np.random.default_rng(2).integers(0, rows - 64, size=n // 32), 32) + np.tile(np.arange(32), n // 32)
idx = cp.asarray(base.astype(np.int32)); cnt = cp.zeros(rows, dtype=cp.uint32); out = cp.zeros(n, dtype=cp.uint32)
k = m.get_function("atom_ret"); grid = ((n + 255) // 256,)
for _ in range(3): k(grid, (256,), (idx, cnt, out, np.int32(n), np.int32(1)))
s, e = cp.cuda.Event(), cp.cuda.Event(); ts = []
for _ in range(15):
  s.record(); k(grid, (256,), (idx, cnt, out, np.int32(n), np.int32(1))); e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e))
print(f"atom_ret warp-contiguous rows, 14M: {np.median(ts)*1e3:8.1f} us")

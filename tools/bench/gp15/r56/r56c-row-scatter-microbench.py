import cupy as cp, numpy as np, time
n = 1 << 20
rng = np.random.default_rng(1)
lens = rng.integers(40, 71, n).astype(np.int64)
off = np.zeros(n + 1, np.int64); off[1:] = np.cumsum(lens)
tot = int(off[-1]); print("pairs", tot)
d_off = cp.asarray(off)
src = r'''
extern "C" __global__ void rows_write(const long long* __restrict__ off, const int* __restrict__ perm, int n, int* __restrict__ j, float* __restrict__ d) {
  int warp = (blockIdx.x*blockDim.x + threadIdx.x) >> 5; int lane = threadIdx.x & 31;
  int r0 = warp*16;
  for (int r = r0; r < r0+16 && r < n; ++r) { int i = perm[r]; long long o = off[i]; int len = (int)(off[i+1]-o);
     for (int e = lane; e < len; e += 32) { __stcs(j+o+e, r); __stcs(d+o+e, (float)e); } }
}
extern "C" __global__ void copy2(const uint4* __restrict__ a, uint4* __restrict__ b, long long m) {
  long long t = blockIdx.x*(long long)blockDim.x + threadIdx.x;
  for (; t < m; t += (long long)gridDim.x*blockDim.x) __stcs(b+t, __ldcs(a+t));
}
extern "C" __global__ void write1(uint4* __restrict__ b, long long m) {
  long long t = blockIdx.x*(long long)blockDim.x + threadIdx.x;
  for (; t < m; t += (long long)gridDim.x*blockDim.x) __stcs(b+t, make_uint4(1,2,3,4));
}
'''
mod = cp.RawModule(code=src)
k = mod.get_function("rows_write"); cpk = mod.get_function("copy2"); w1 = mod.get_function("write1")
j = cp.empty(tot, cp.int32); d = cp.empty(tot, cp.float32)
def timeit(f, reps=20):
    f(); cp.cuda.Device().synchronize()
    s = cp.cuda.Event(); e = cp.cuda.Event(); ts = []
    for _ in range(reps):
        s.record(); f(); e.record(); e.synchronize(); ts.append(cp.cuda.get_elapsed_time(s, e))
    return np.median(ts)
for name, perm in (("identity", np.arange(n, dtype=np.int32)), ("random", rng.permutation(n).astype(np.int32)),
                   ("blocks of 16 random", (rng.permutation(n//16)[:,None]*16 + np.arange(16)[None,:]).reshape(-1).astype(np.int32))):
    dp = cp.asarray(perm)
    for T in (128, 256):
        t = timeit(lambda: k(((n // 16) * 32 // T + 1,), (T,), (d_off, dp, np.int32(n), j, d)))
        print(f"rows_write {name:22s} T={T}: {t:.4f} ms  {8*tot/t/1e9:.2f} TB/s")
m = (8 * tot) // 16
a = cp.zeros(m, dtype=cp.uint32).view(cp.uint32)
A = cp.zeros(m * 4, cp.uint32); B = cp.zeros(m * 4, cp.uint32)
t = timeit(lambda: cpk((132 * 16,), (256,), (A, B, np.int64(m))))
print(f"copy {8*tot/1e6:.0f} MB: {t:.4f} ms  {2*8*tot/t/1e9:.2f} TB/s (read+write)")
t = timeit(lambda: w1((132 * 16,), (256,), (B, np.int64(m))))
print(f"write {8*tot/1e6:.0f} MB: {t:.4f} ms  {8*tot/t/1e9:.2f} TB/s")

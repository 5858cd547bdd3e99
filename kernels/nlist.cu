/* nlist.cu — the CUDA twin of nlist_cpu.c (contract in nlist.h, API in
 * nlist_cuda.h). Every method produces exactly the CPU twin's bytes:
 *   - the same float positions and the same pair arithmetic (mdnl_pair_d2,
 *     geometry.h; distance = __fsqrt_rn(d2), the host's sqrtf);
 *   - exact row sizes from a counting pass (or a staged pass whose capacity
 *     grows and retries), a CUB prefix sum, and a fill that never writes past
 *     a row's end;
 *   - every row sorted on the device by mdnl_row_key (j, then distance).
 * The cell method walks the device cell list of cells_cuda.cuh, which the
 * energy and histogram kernels share.
 *
 * Rows are sorted per thread (insertion sort for short rows, heapsort for
 * long ones) in shared memory when a block's rows fit its budget, else in
 * place in global memory. Output and timing are per context (nlist_cuda.h).
 */
#include "cells_cuda.cuh"
#include "cuda_check.cuh"
#include "device.h"
#include "cuda_host.h"
#include "nlist_cuda.h"

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Row sorting: keys are mdnl_row_key(j, d); equal keys are identical bytes,
 * so stability does not matter. */

template <class A>
__device__ __forceinline__ void sift_down(A &a, long long root, long long end)
{
    for (;;) {
        long long child = 2 * root + 1;
        if (child >= end)
            return;
        uint64_t vc = a.get(child);
        if (child + 1 < end) {
            uint64_t vr = a.get(child + 1);
            if (vr > vc) {
                vc = vr;
                ++child;
            }
        }
        uint64_t vroot = a.get(root);
        if (vroot >= vc)
            return;
        a.set(root, vc);
        a.set(child, vroot);
        root = child;
    }
}

/* Sorts a[0..n) ascending through an accessor with get(k)/set(k, key). */
template <class A>
__device__ void sort_row(A a, long long n)
{
    if (n <= 128) {
        for (long long p = 1; p < n; ++p) {
            uint64_t x = a.get(p);
            long long q = p;
            for (; q > 0; --q) {
                uint64_t y = a.get(q - 1);
                if (y <= x)
                    break;
                a.set(q, y);
            }
            a.set(q, x);
        }
        return;
    }
    for (long long r = n / 2 - 1; r >= 0; --r)
        sift_down(a, r, n);
    for (long long e = n - 1; e > 0; --e) {
        uint64_t top = a.get(0);
        a.set(0, a.get(e));
        a.set(e, top);
        sift_down(a, 0, e);
    }
}

struct smem_row {
    uint64_t *k;
    __device__ uint64_t get(long long q) const { return k[q]; }
    __device__ void set(long long q, uint64_t v) const { k[q] = v; }
};

struct global_row {
    int32_t *j;
    float *d;
    __device__ uint64_t get(long long q) const { return mdnl_row_key(j[q], d[q]); }
    __device__ void set(long long q, uint64_t v) const
    {
        j[q] = (int32_t)(v >> 32);
        d[q] = __uint_as_float((unsigned)v);
    }
};

/* ------------------------------------------------------------------------ */
/* Shift codes: the variants that keep a candidate's image shift S (each
 * component in -1..1) in 5 bits store (s0 + 1) * 9 + (s1 + 1) * 3 + (s2 + 1);
 * S = 0 is SHIFT_CODE_ZERO, and a larger code is a lexicographically
 * positive S. */
#define SHIFT_CODE_ZERO 13

__device__ __forceinline__ int shift_code(int s0, int s1, int s2) { return (s0 + 1) * 9 + (s1 + 1) * 3 + (s2 + 1); }

__device__ __forceinline__ void shift_of_code(int code, int &s0, int &s1, int &s2)
{
    s0 = code / 9 - 1;
    s1 = (code / 3) % 3 - 1;
    s2 = code % 3 - 1;
}

/* v = S·h of shift code `code` (mdnl_shift_vector). */
__device__ __forceinline__ void shift_vector_of_code(const mdnl_geom &g, int code, float v[3])
{
    int s0, s1, s2;
    shift_of_code(code, s0, s1, s2);
    mdnl_shift_vector(&g, s0, s1, s2, v);
}

/* ------------------------------------------------------------------------ */
/* Image shifts for the brute-force kernels: .xyz = S·h (mdnl_shift_vector,
 * device arithmetic), .w = bits of the lexicographic sign of S (-1, 0, 1). */

/* Thread per image shift m in the box [-image_max, image_max]^3. */
__global__ void images_kernel(const __grid_constant__ mdnl_geom g, int m0, int m1, int m2, float4 *img)
{
    const int n1 = 2 * m1 + 1, n2 = 2 * m2 + 1;
    const int total = (2 * m0 + 1) * n1 * n2;
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= total)
        return;
    int s0 = m / (n1 * n2) - m0, s1 = (m / n2) % n1 - m1, s2 = m % n2 - m2;
    float v[3];
    mdnl_shift_vector(&g, s0, s1, s2, v);
    int sign = s0 != 0 ? (s0 > 0 ? 1 : -1) : s1 != 0 ? (s1 > 0 ? 1 : -1) : s2 != 0 ? (s2 > 0 ? 1 : -1) : 0;
    img[m] = make_float4(v[0], v[1], v[2], __int_as_float(sign));
}

#define BRUTE_T 256

/* brute-atomic, count (FILL=false) or fill (FILL=true) pass.
 * Mapping: thread per atom a (original order) and per chunk (blockIdx.y) of
 * its partner window. Thread a visits the partners b = (a + o) mod N for o in
 * 1..floor((N-1)/2), plus o = N/2 for a < N/2 when N is even, so that every
 * unordered pair is seen exactly once and every thread does N/2 candidates
 * (the classic j > i loop does N - i); the window is cut into gridDim.y
 * chunks of `chunk` offsets so that a small N still fills the GPU. A block
 * stages its partners through shared-memory tiles of BRUTE_T positions; each
 * partner is tried at every image shift. A kept pair is appended to both
 * rows (full) or to the row of the smaller index (half) through 64-bit
 * atomic row counters; (b, a, -S) has bit for bit the distance of (a, b, S).
 * Self images (a, a, S != 0) come from thread a in chunk 0. */
template <bool FILL, bool FULL>
__global__ __launch_bounds__(BRUTE_T) void brute_atomic_kernel(const float4 *__restrict__ pos, int n, int chunk,
                                                               const float4 *__restrict__ img, int nimg, float cutoff2,
                                                               unsigned long long *__restrict__ ctr,
                                                               const int64_t *__restrict__ offsets,
                                                               int32_t *__restrict__ j_out, float *__restrict__ d_out)
{
    __shared__ float4 tile[BRUTE_T];
    const int a0 = blockIdx.x * BRUTE_T;
    const int a = a0 + threadIdx.x;
    const bool active = a < n;
    const float4 pa = active ? pos[a] : make_float4(0, 0, 0, 0);
    auto emit = [&](int row, int other, float d2) {
        unsigned long long k = atomicAdd(&ctr[row], 1ull);
        if (FILL) {
            const int64_t at = offsets[row] + (int64_t)k;
            if (at < offsets[row + 1]) { /* never past the row's end */
                j_out[at] = other;
                d_out[at] = __fsqrt_rn(d2);
            }
        }
    };
    if (active && blockIdx.y == 0) {
        for (int m = 0; m < nimg; ++m) {
            const float4 v4 = img[m];
            const int sign = __float_as_int(v4.w);
            if (sign == 0 || (!FULL && sign < 0))
                continue;
            const float v[3] = {v4.x, v4.y, v4.z};
            const float d2 = mdnl_pair_d2(pa.x, pa.y, pa.z, pa.x, pa.y, pa.z, v);
            if (d2 < cutoff2)
                emit(a, a, d2);
        }
    }
    const int half = (n - 1) / 2;
    const bool even = (n % 2) == 0;
    const int olo = 1 + (int)blockIdx.y * chunk;
    int ohi = olo + chunk - 1;
    if (ohi > n / 2)
        ohi = n / 2;
    /* unwrapped partner positions p = a0 + olo + q, q in [0, span) */
    const int span = ohi - olo + BRUTE_T;
    for (int base = 0; base < span; base += BRUTE_T) {
        __syncthreads();
        if (base + (int)threadIdx.x < span) {
            const int b = (int)(((int64_t)a0 + olo + base + threadIdx.x) % n);
            float4 p = pos[b];
            p.w = __int_as_float(b);
            tile[threadIdx.x] = p;
        }
        __syncthreads();
        if (!active)
            continue;
        const int cnt = span - base < BRUTE_T ? span - base : BRUTE_T;
        for (int t = 0; t < cnt; ++t) {
            const int o = a0 + olo + base + t - a;
            if (o < olo || o > ohi)
                continue;
            if (!(o <= half || (even && o == n / 2 && a < n / 2)))
                continue;
            const float4 pb = tile[t];
            const int b = __float_as_int(pb.w);
            for (int m = 0; m < nimg; ++m) {
                const float4 v4 = img[m];
                const float v[3] = {v4.x, v4.y, v4.z};
                const float d2 = mdnl_pair_d2(pa.x, pa.y, pa.z, pb.x, pb.y, pb.z, v);
                if (d2 < cutoff2) {
                    if (FULL) {
                        emit(a, b, d2);
                        emit(b, a, d2);
                    } else if (a < b) {
                        emit(a, b, d2);
                    } else {
                        emit(b, a, d2);
                    }
                }
            }
        }
    }
}

/* brute-noatomic staged pass.
 * Mapping: thread per atom i (original order) and per chunk c = blockIdx.y
 * of the atoms j (chunks of `chunk` atoms, so that a small N still fills the
 * GPU); the chunk's atoms stream through shared-memory tiles of BRUTE_T
 * positions and each j is tried at every image shift. Thread (i, c) writes
 * only its own part of row i: the k-th entry goes to
 * stage[(c * cap + k) * n + i] while k < cap, so the 32 threads of a warp
 * storing their k-th entries write 256 contiguous bytes, and its count to
 * ccount[c * n + i]; the longest part goes to *maxlen, so that the host can
 * grow cap and retry. No atomics touch the list. */
template <bool FULL>
__global__ __launch_bounds__(BRUTE_T) void brute_noatomic_kernel(const float4 *__restrict__ pos, int n, int chunk,
                                                                 const float4 *__restrict__ img, int nimg,
                                                                 float cutoff2, uint64_t *__restrict__ stage, int cap,
                                                                 unsigned *__restrict__ ccount, int *__restrict__ maxlen)
{
    __shared__ float4 tile[BRUTE_T];
    const int i = blockIdx.x * BRUTE_T + threadIdx.x;
    const bool active = i < n;
    const float4 pi = active ? pos[i] : make_float4(0, 0, 0, 0);
    const int jlo = blockIdx.y * chunk;
    const int jhi = jlo + chunk < n ? jlo + chunk : n;
    uint64_t *my = stage + (size_t)blockIdx.y * cap * n + i;
    long long k = 0;
    for (int base = jlo; base < jhi; base += BRUTE_T) {
        __syncthreads();
        if (base + (int)threadIdx.x < jhi)
            tile[threadIdx.x] = pos[base + threadIdx.x];
        __syncthreads();
        if (!active)
            continue;
        const int cnt = jhi - base < BRUTE_T ? jhi - base : BRUTE_T;
        /* a half list keeps j >= i only: skip whole tiles below i */
        if (!FULL && base + cnt - 1 < i)
            continue;
        for (int t = 0; t < cnt; ++t) {
            const int j = base + t;
            if (!FULL && j < i)
                continue;
            const float4 pj = tile[t];
            for (int m = 0; m < nimg; ++m) {
                const float4 v4 = img[m];
                const int sign = __float_as_int(v4.w);
                if (j == i && (sign == 0 || (!FULL && sign < 0)))
                    continue;
                const float v[3] = {v4.x, v4.y, v4.z};
                const float d2 = mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, v);
                if (d2 < cutoff2) {
                    if (k < cap)
                        my[(size_t)k * n] = mdnl_row_key(j, __fsqrt_rn(d2));
                    ++k;
                }
            }
        }
    }
    if (active) {
        ccount[(size_t)blockIdx.y * n + i] = (unsigned)k;
        atomicMax(maxlen, k > INT32_MAX ? INT32_MAX : (int)k);
    }
}

/* Mapping: thread per row i; sums its per-chunk counts. */
__global__ void sum_chunks_kernel(const unsigned *__restrict__ ccount, int n, int nchunk,
                                  unsigned long long *__restrict__ counts)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned long long t = 0;
    for (int c = 0; c < nchunk; ++c)
        t += ccount[(size_t)c * n + i];
    counts[i] = t;
}

/* Cell-list count pass.
 * Mapping: thread per sorted slot s (cell order, so a warp's atoms share
 * cells and their candidate loads share cache lines); counts[order[s]]. */
template <bool FULL>
__global__ __launch_bounds__(128) void cell_count_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                         unsigned long long *__restrict__ counts,
                                                         int *__restrict__ maxlen)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long k = 0;
    if (s < c.natoms) {
        const int i = c.order[s];
        mdnl_for_each_pair(g, c, s, [&](int j, float d2, int s0, int s1, int s2) {
            if (FULL || mdnl_half_keep(i, j, s0, s1, s2))
                ++k;
        });
        counts[i] = k;
    }
    /* the longest row (variants 3 and 4 size their sort from it) */
    const unsigned m = __reduce_max_sync(0xffffffffu, k > INT32_MAX ? (unsigned)INT32_MAX : (unsigned)k);
    if ((threadIdx.x & 31) == 0 && (int)m > *(volatile int *)maxlen)
        atomicMax(maxlen, (int)m);
}

/* Cell-list staged pass (variant 2, the default: one traversal instead of
 * count + fill). Mapping: thread per sorted slot s; row order[s]'s k-th entry
 * goes to stage[k * n + s] while k < cap (a warp's stores of the same k
 * coalesce), its true length to counts[order[s]] and the longest row to
 * *maxlen, so that the host can grow cap and retry. */
template <bool FULL>
__global__ __launch_bounds__(128) void cell_stage_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                         uint64_t *__restrict__ stage, int cap,
                                                         unsigned long long *__restrict__ counts,
                                                         int *__restrict__ maxlen)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= c.natoms)
        return;
    const int i = c.order[s];
    const int n = c.natoms;
    long long k = 0;
    mdnl_for_each_pair(g, c, s, [&](int j, float d2, int s0, int s1, int s2) {
        if (FULL || mdnl_half_keep(i, j, s0, s1, s2)) {
            if (k < cap)
                stage[(size_t)k * n + s] = mdnl_row_key(j, __fsqrt_rn(d2));
            ++k;
        }
    });
    counts[i] = (unsigned long long)k;
    atomicMax(maxlen, k > INT32_MAX ? INT32_MAX : (int)k);
}

/* ------------------------------------------------------------------------ */
/* Fill, sort and write rows. Mapping: thread per row (MODE 0: sorted slot s,
 * row order[s]; MODE 1, 2: row s). A block-wide exclusive scan of the row
 * lengths lays the block's rows out back to back in shared memory; when they
 * fit, each thread produces its row there, sorts it, and then each warp
 * writes its 32 rows to the CSR cooperatively, lane q taking entries q,
 * q + 32, ... of a row (coalesced). When they do not fit, each thread writes
 * its row straight into the CSR and sorts it there.
 *   MODE 0 (cell fill): the row comes from the cell-list visitor;
 *   MODE 1 (brute-noatomic compaction): from the transposed stage;
 *   MODE 2 (brute-atomic row sort): from the CSR itself (in place); the
 *          block's rows are one contiguous CSR range, loaded cooperatively;
 *   MODE 3 (cell compaction, default cell variant): thread per sorted slot
 *          s, row order[s], from the cell stage stage[k * n + s]. */
#define ROWS_T 128

template <int MODE, bool FULL>
__global__ __launch_bounds__(ROWS_T) void rows_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c, int n,
                                                      const uint64_t *__restrict__ stage, int cap,
                                                      const unsigned *__restrict__ ccount, int nchunk,
                                                      const int64_t *__restrict__ offsets, int32_t *__restrict__ j_out,
                                                      float *__restrict__ d_out, long long smem_keys, int *err)
{
    extern __shared__ uint64_t keys[];
    typedef cub::BlockScan<long long, ROWS_T> Scan;
    __shared__ typename Scan::TempStorage scan_tmp;
    const int s = blockIdx.x * ROWS_T + threadIdx.x;
    int i = -1;
    if (s < n)
        i = (MODE == 0 || MODE == 3) ? c.order[s] : s;
    long long off = 0, len = 0;
    if (i >= 0) {
        off = offsets[i];
        len = offsets[i + 1] - off;
    }
    long long lo = 0, tot = 0;
    Scan(scan_tmp).ExclusiveSum(len, lo, tot);
    const bool in_smem = tot <= smem_keys;

    if (MODE == 2) {
        if (in_smem) {
            /* rows i0.. are contiguous in the CSR: lo == offsets[i] - base */
            const int64_t base = offsets[blockIdx.x * ROWS_T];
            for (long long q = threadIdx.x; q < tot; q += ROWS_T)
                keys[q] = mdnl_row_key(j_out[base + q], d_out[base + q]);
            __syncthreads();
            if (i >= 0)
                sort_row(smem_row{keys + lo}, len);
            __syncthreads();
            for (long long q = threadIdx.x; q < tot; q += ROWS_T) {
                const uint64_t key = keys[q];
                j_out[base + q] = (int32_t)(key >> 32);
                d_out[base + q] = __uint_as_float((unsigned)key);
            }
        } else if (i >= 0) {
            sort_row(global_row{j_out + off, d_out + off}, len);
        }
        return;
    }

    long long k = 0;
    auto emit = [&](uint64_t key) {
        if (k < len) {
            if (in_smem) {
                keys[lo + k] = key;
            } else {
                j_out[off + k] = (int32_t)(key >> 32);
                d_out[off + k] = __uint_as_float((unsigned)key);
            }
        }
        ++k;
    };
    if (i >= 0) {
        if (MODE == 0) {
            const int ii = i;
            mdnl_for_each_pair(g, c, s, [&](int j, float d2, int s0, int s1, int s2) {
                if (FULL || mdnl_half_keep(ii, j, s0, s1, s2))
                    emit(mdnl_row_key(j, __fsqrt_rn(d2)));
            });
        } else if (MODE == 3) {
            for (long long q = 0; q < len && q < cap; ++q)
                emit(stage[(size_t)q * n + s]);
        } else {
            for (int ch = 0; ch < nchunk; ++ch) {
                const uint64_t *part = stage + (size_t)ch * cap * n + i;
                const unsigned m = ccount[(size_t)ch * n + i];
                for (unsigned q = 0; q < m && q < (unsigned)cap; ++q)
                    emit(part[(size_t)q * n]);
            }
        }
        if (k != len)
            atomicOr(err, 1);
        if (in_smem)
            sort_row(smem_row{keys + lo}, len);
        else
            sort_row(global_row{j_out + off, d_out + off}, len);
    }
    if (!in_smem) /* uniform over the block */
        return;
    __syncwarp();
    const int lane = threadIdx.x & 31;
    for (int r = 0; r < 32; ++r) {
        const long long rlo = __shfl_sync(0xffffffffu, lo, r);
        const long long rlen = __shfl_sync(0xffffffffu, len, r);
        const long long roff = __shfl_sync(0xffffffffu, off, r);
        for (long long q = lane; q < rlen; q += 32) {
            const uint64_t key = keys[rlo + q];
            j_out[roff + q] = (int32_t)(key >> 32);
            d_out[roff + q] = __uint_as_float((unsigned)key);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Cell variants 3 and 4: a warp per atom (sorted slot s, so consecutive warps
 * walk neighbouring atoms and share candidate cache lines).
 *
 * The warp first lists atom s's candidate ranges (one per stencil column and
 * image shift, contiguous slots [kb, kb + len) of the cell order, as in
 * mdnl_for_each_pair) with range r held by lane r, flattened back to back;
 * then the 32 lanes take 32 consecutive flat candidates per step, so short
 * ranges do not leave lanes idle. Hits are counted with a ballot (count
 * kernel) or compacted into a per-warp shared buffer of CAP keys (fill
 * kernel), bitonic-sorted in registers (CAP / 32 keys per lane) and written
 * with coalesced stores. A row longer than CAP is written unsorted straight
 * into the CSR and sorted there (slow, rare, same bytes). At most 32 ranges:
 * the host uses these variants only when (2 st0 + 1)(2 st1 + 1)(2 st2 + 1)
 * <= 32, which bounds the ranges (each z segment is at least one offset). */
#define WARP_T 128
#define FULLMASK 0xffffffffu

/* Cell variant 7's staged pass: cell_stage_kernel's traversal (the merged
 * walk below), but the first K hits of a row are kept in registers, sorted
 * by insertion as they come (a compare-exchange per register, unrolled: no
 * local memory), and stored once the walk is done, so that the 32 threads
 * of a warp store their q-th keys together (coalesced) and a row of at most
 * K is staged already sorted. Hits past K go to the stage as they come
 * (unsorted; the copy sorts such a row in place). K is 4 or 8 (registers:
 * 4 leaves room for more warps per SM). Mapping: thread per sorted slot s,
 * as cell_stage_kernel; the longest row into *maxlen with one atomic per
 * warp at most. */

/* mdnl_for_each_pair's pair set, visited in another order (only for kernels
 * that sort their rows): when an atom's z range is its whole cell column on
 * an open z axis (a flat sheet: one cell in z), the columns of consecutive dy
 * with the same image shift are one contiguous range of the cell order, so
 * the walk takes 2 stencil[0] + 1 ranges (fewer when y wraps) instead of one
 * per column: fewer dependent start[] loads before the first position load.
 * Otherwise it is mdnl_for_each_pair itself. */
template <class F>
__device__ __forceinline__ void walk_pairs_merged(const mdnl_geom &g, const mdnl_cells_view &c, int i_sorted, F &&f)
{
    const int n0 = g.ncell[0], n1 = g.ncell[1], n2 = g.ncell[2];
    /* Every z range is the whole column on an open axis with n2 <= stencil + 1
     * cells (cz - st <= 0 and cz + st >= n2 - 1 for every cz); else the z
     * range may miss part of a column, or wrap. */
    if (g.pbc[2] || g.stencil[2] < n2 - 1) {
        mdnl_for_each_pair(g, c, i_sorted, f);
        return;
    }
    const float4 pi = c.pos[i_sorted];
    const int lin = c.cell[i_sorted];
    const int cy = (lin / n2) % n1;
    const int cx = lin / (n2 * n1);
    for (int dx = -g.stencil[0]; dx <= g.stencil[0]; ++dx) {
        int x = cx + dx, s0;
        if (!mdnl_cell_wrap(g.pbc[0], n0, x, s0))
            continue;
        for (int dy = -g.stencil[1]; dy <= g.stencil[1];) {
            int y = cy + dy, s1;
            if (!mdnl_cell_wrap(g.pbc[1], n1, y, s1)) {
                ++dy;
                continue;
            }
            /* dy .. dlast share s1: y .. y + (dlast - dy) <= n1 - 1 */
            int dlast = dy + (n1 - 1 - y);
            if (dlast > g.stencil[1])
                dlast = g.stencil[1];
            float v[3];
            mdnl_shift_vector(&g, s0, s1, 0, v);
            const int zero = s0 == 0 && s1 == 0;
            const int kb = c.start[(x * n1 + y) * n2];
            const int ke = c.start[(x * n1 + y + (dlast - dy) + 1) * n2];
#pragma unroll 4
            for (int k = kb; k < ke; ++k) {
                const float4 pj = c.pos[k];
                if (zero && k == i_sorted)
                    continue;
                const float d2 = mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, v);
                if (d2 < g.cutoff2)
                    f(__float_as_int(pj.w), d2, s0, s1, 0);
            }
            dy = dlast + 1;
        }
    }
}

template <bool FULL, int K>
__global__ __launch_bounds__(128) void cell_stage_sorted_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                                uint64_t *__restrict__ stage, int cap,
                                                                unsigned long long *__restrict__ counts,
                                                                int *__restrict__ maxlen)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    const int n = c.natoms;
    int k = 0;
    if (s == 0) /* the scan's last term (the build does not clear counts for this variant) */
        counts[n] = 0;
    if (s < n) {
        const int i = c.order[s];
        uint64_t r[K];
#pragma unroll
        for (int q = 0; q < K; ++q)
            r[q] = 0;
        walk_pairs_merged(g, c, s, [&](int j, float d2, int s0, int s1, int s2) {
            if (FULL || mdnl_half_keep(i, j, s0, s1, s2)) {
                uint64_t x = mdnl_row_key(j, __fsqrt_rn(d2));
                if (k < K) {
#pragma unroll
                    for (int q = 0; q < K; ++q) {
                        const uint64_t a = r[q];
                        if (q < k) {
                            r[q] = a < x ? a : x;
                            x = a < x ? x : a;
                        } else if (q == k) {
                            r[q] = x;
                        }
                    }
                } else if (k < cap) {
                    stage[(size_t)k * n + s] = x;
                }
                ++k;
            }
        });
#pragma unroll
        for (int q = 0; q < K; ++q)
            if (q < k && q < cap)
                stage[(size_t)q * n + s] = r[q];
        counts[i] = (unsigned long long)k;
    }
    const int m = (int)__reduce_max_sync(FULLMASK, (unsigned)k);
    if ((threadIdx.x & 31) == 0 && m > *(volatile int *)maxlen)
        atomicMax(maxlen, m);
}

/* Cell variant 7's copy: thread per sorted slot s copies row order[s] from
 * the stage (stage[q * n + s]: a warp's loads of one q coalesce) straight
 * into the CSR; a row longer than K was staged partly unsorted and
 * is sorted there in place. No shared memory, no block scan. When the staged
 * pass overflowed its capacity (*maxlen > cap) nothing is written: the host
 * sees the longest row after its one synchronisation, grows the capacity and
 * builds again. Thread 0 also copies the pair count (offsets[n]) to
 * *npairs_out, beside the flags, so that the host reads them back in one
 * copy. */
template <int K>
__global__ __launch_bounds__(128) void stage_copy_kernel(const int *__restrict__ order, int n,
                                                         const uint64_t *__restrict__ stage, int cap,
                                                         const int *__restrict__ maxlen,
                                                         const int64_t *__restrict__ offsets,
                                                         int32_t *__restrict__ j_out, float *__restrict__ d_out,
                                                         long long *__restrict__ npairs_out)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s == 0)
        *npairs_out = offsets[n];
    if (s >= n || *maxlen > cap)
        return;
    const int i = order[s];
    const int64_t off = offsets[i];
    const int len = (int)(offsets[i + 1] - off);
    uint64_t r[K];
#pragma unroll
    for (int q = 0; q < K; ++q)
        if (q < len)
            r[q] = stage[(size_t)q * n + s];
#pragma unroll
    for (int q = 0; q < K; ++q)
        if (q < len) {
            j_out[off + q] = (int32_t)(r[q] >> 32);
            d_out[off + q] = __uint_as_float((unsigned)r[q]);
        }
    if (len > K) {
        for (int q = K; q < len; ++q) {
            const uint64_t key = stage[(size_t)q * n + s];
            j_out[off + q] = (int32_t)(key >> 32);
            d_out[off + q] = __uint_as_float((unsigned)key);
        }
        sort_row(global_row{j_out + off, d_out + off}, len);
    }
}

struct warp_ranges {
    int nr;      /* ranges (uniform) */
    int total;   /* candidates (uniform) */
    int kb;      /* lane r: first slot of range r */
    int fs, fe;  /* lane r: flat [fs, fe) */
    float vx, vy, vz;
    int zero;    /* lane r: shift is 0 */
    int lexpos;  /* lane r: shift lexicographically positive */
    int code;    /* lane r: shift_code of S (shifts in -1..1) */
};

/* Lane t < ncol * nzs takes stencil column t / nzs (dx outer, dy inner, as
 * mdnl_for_each_pair) and z segment t % nzs, so all the cell-offset loads of
 * one atom are in flight together (one load latency, not one per range);
 * empty or skipped ranges have length 0. A warp scan flattens them. */
__device__ __forceinline__ warp_ranges warp_list_ranges(const mdnl_geom &g, const mdnl_cells_view &c, int lin,
                                                        int lane)
{
    warp_ranges w;
    const int n0 = g.ncell[0], n1 = g.ncell[1], n2 = g.ncell[2];
    const int cz = lin % n2;
    const int cy = (lin / n2) % n1;
    const int cx = lin / (n2 * n1);
    /* z segments (uniform): cz-st..cz+st split where the periodic shift changes */
    int zlo = cz - g.stencil[2], zhi = cz + g.stencil[2];
    if (!g.pbc[2]) {
        zlo = zlo < 0 ? 0 : zlo;
        zhi = zhi > n2 - 1 ? n2 - 1 : zhi;
    }
    const int s2lo = g.pbc[2] ? mdnl_floordiv(zlo, n2) : 0;
    const int s2hi = g.pbc[2] ? mdnl_floordiv(zhi, n2) : 0;
    const int nzs = s2hi - s2lo + 1;
    const int w1 = 2 * g.stencil[1] + 1;
    const int ncol = (2 * g.stencil[0] + 1) * w1;
    w.nr = ncol * nzs;
    int len = 0, kb = 0;
    int s0 = 0, s1 = 0, s2 = 0;
    if (lane < w.nr) {
        const int col = lane / nzs, seg = lane % nzs;
        int x = cx + col / w1 - g.stencil[0];
        int y = cy + col % w1 - g.stencil[1];
        const bool okx = mdnl_cell_wrap(g.pbc[0], n0, x, s0);
        const bool ok = mdnl_cell_wrap(g.pbc[1], n1, y, s1) && okx;
        s2 = s2lo + seg;
        int z = seg == 0 ? zlo : s2 * n2;
        int zend = (s2 + 1) * n2 - 1;
        if (!g.pbc[2])
            zend = zhi;
        if (zend > zhi)
            zend = zhi;
        if (ok) {
            const int row = (x * n1 + y) * n2;
            kb = c.start[row + z - s2 * n2];
            len = c.start[row + zend - s2 * n2 + 1] - kb;
        }
    }
    int incl = len;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int t = __shfl_up_sync(FULLMASK, incl, o);
        if (lane >= o)
            incl += t;
    }
    w.total = __shfl_sync(FULLMASK, incl, 31);
    w.kb = kb;
    w.fs = lane < w.nr ? incl - len : 0x7fffffff;
    w.fe = lane < w.nr ? incl : 0x7fffffff;
    float v[3];
    mdnl_shift_vector(&g, s0, s1, s2, v);
    w.vx = v[0];
    w.vy = v[1];
    w.vz = v[2];
    w.zero = s0 == 0 && s1 == 0 && s2 == 0;
    w.lexpos = mdnl_shift_positive(s0, s1, s2);
    w.code = shift_code(s0, s1, s2);
    return w;
}

/* Calls f(hit, j, d2) once per lane per step of 32 flat candidates, with the
 * whole warp converged (hit false for lanes without a kept pair). */
template <bool FULL, class F>
__device__ __forceinline__ void warp_walk(const mdnl_geom &g, const mdnl_cells_view &c, int s, int i, int lane, F &&f)
{
    const float4 pi = c.pos[s];
    const warp_ranges w = warp_list_ranges(g, c, c.cell[s], lane);
    int cr = 0; /* first range that may intersect the step (uniform) */
    for (int base = 0; base < w.total; base += 32) {
        const int fl = base + lane;
        while (__shfl_sync(FULLMASK, w.fe, cr) <= base)
            ++cr;
        int r = -1, k = 0;
        for (int q = cr; q < w.nr; ++q) {
            const int fs = __shfl_sync(FULLMASK, w.fs, q);
            if (fs >= base + 32)
                break;
            const int fe = __shfl_sync(FULLMASK, w.fe, q);
            const int kb = __shfl_sync(FULLMASK, w.kb, q);
            if (fl >= fs && fl < fe) {
                r = q;
                k = kb + (fl - fs);
            }
        }
        const int src = r < 0 ? 0 : r;
        const float vx = __shfl_sync(FULLMASK, w.vx, src);
        const float vy = __shfl_sync(FULLMASK, w.vy, src);
        const float vz = __shfl_sync(FULLMASK, w.vz, src);
        const int zero = __shfl_sync(FULLMASK, w.zero, src);
        const int lexpos = __shfl_sync(FULLMASK, w.lexpos, src);
        bool hit = false;
        int j = 0;
        float d2 = 0.f;
        if (r >= 0 && !(zero && k == s)) {
            const float4 pj = c.pos[k];
            const float v[3] = {vx, vy, vz};
            d2 = mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, v);
            j = __float_as_int(pj.w);
            hit = d2 < g.cutoff2 && (FULL || (i != j ? i < j : lexpos != 0));
        }
        f(hit, j, d2);
    }
}

/* Count pass, warp per sorted slot: counts[order[s]], longest row -> *maxlen. */
template <bool FULL>
__global__ __launch_bounds__(WARP_T) void cell_warp_count_kernel(const __grid_constant__ mdnl_geom g,
                                                                 mdnl_cells_view c,
                                                                 unsigned long long *__restrict__ counts,
                                                                 int *__restrict__ maxlen)
{
    __shared__ int bmax;
    const int s = (int)((blockIdx.x * (unsigned)WARP_T + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (threadIdx.x == 0)
        bmax = 0;
    __syncthreads();
    if (s < c.natoms) { /* uniform over the warp */
        const int i = c.order[s];
        int cnt = 0;
        warp_walk<FULL>(g, c, s, i, lane,
                        [&](bool hit, int, float) { cnt += __popc(__ballot_sync(FULLMASK, hit)); });
        if (lane == 0) {
            counts[i] = (unsigned long long)cnt;
            atomicMax(&bmax, cnt);
        }
    }
    __syncthreads();
    /* one global atomic per block, and only when it can raise the maximum:
     * a million same-address atomics would serialise in L2 */
    if (threadIdx.x == 0 && bmax > *(volatile int *)maxlen)
        atomicMax(maxlen, bmax);
}

__device__ __forceinline__ void cas_(uint64_t &a, uint64_t &b, bool asc)
{
    const uint64_t lo = a < b ? a : b, hi = a < b ? b : a;
    a = asc ? lo : hi;
    b = asc ? hi : lo;
}

/* Bitonic sort, ascending, of the warp's 32 * KPL keys; element e = r * 32 +
 * lane is x[r]. */
template <int KPL>
__device__ __forceinline__ void warp_bitonic(uint64_t (&x)[KPL], int lane)
{
    constexpr int N = 32 * KPL;
#pragma unroll
    for (int k = 2; k <= N; k <<= 1) {
#pragma unroll
        for (int jj = k >> 1; jj > 0; jj >>= 1) {
            if (jj >= 32) {
                const int jr = jj >> 5;
#pragma unroll
                for (int r = 0; r < KPL; ++r)
                    if ((r & jr) == 0)
                        cas_(x[r], x[r | jr], ((r * 32 + lane) & k) == 0);
            } else {
#pragma unroll
                for (int r = 0; r < KPL; ++r) {
                    const uint64_t y = __shfl_xor_sync(FULLMASK, x[r], jj);
                    const bool asc = ((r * 32 + lane) & k) == 0;
                    const bool lower = (lane & jj) == 0;
                    const uint64_t lo = x[r] < y ? x[r] : y, hi = x[r] < y ? y : x[r];
                    x[r] = (asc == lower) ? lo : hi;
                }
            }
        }
    }
}

/* Fill pass, warp per sorted slot s (row i = order[s], its length known from
 * the count pass). */
template <bool FULL, int KPL>
__global__ __launch_bounds__(WARP_T) void cell_warp_fill_kernel(const __grid_constant__ mdnl_geom g,
                                                                mdnl_cells_view c,
                                                                const int64_t *__restrict__ offsets,
                                                                int32_t *__restrict__ j_out, float *__restrict__ d_out,
                                                                int *err)
{
    constexpr int CAP = 32 * KPL;
    __shared__ uint64_t buf_all[WARP_T / 32][CAP];
    const int s = (int)((blockIdx.x * (unsigned)WARP_T + threadIdx.x) >> 5);
    const int lane = threadIdx.x & 31;
    if (s >= c.natoms)
        return;
    uint64_t *buf = buf_all[threadIdx.x >> 5];
    const int i = c.order[s];
    const int64_t off = offsets[i];
    const int64_t len = offsets[i + 1] - off;
    const bool fits = len <= CAP; /* uniform */
    int64_t cnt = 0;
    warp_walk<FULL>(g, c, s, i, lane, [&](bool hit, int j, float d2) {
        const unsigned m = __ballot_sync(FULLMASK, hit);
        if (hit) {
            const int64_t at = cnt + __popc(m & ((1u << lane) - 1u));
            const float d = __fsqrt_rn(d2);
            if (fits) {
                if (at < CAP)
                    buf[at] = mdnl_row_key(j, d);
            } else if (at < len) {
                j_out[off + at] = j;
                d_out[off + at] = d;
            }
        }
        cnt += __popc(m);
    });
    if (cnt != len && lane == 0)
        atomicOr(err, 1);
    if (!fits) {
        __syncwarp();
        if (lane == 0)
            sort_row(global_row{j_out + off, d_out + off}, len < cnt ? len : cnt);
        return;
    }
    __syncwarp();
    uint64_t x[KPL];
#pragma unroll
    for (int r = 0; r < KPL; ++r) {
        const int e = r * 32 + lane;
        x[r] = e < len && e < cnt ? buf[e] : ~0ull;
    }
    warp_bitonic<KPL>(x, lane);
#pragma unroll
    for (int r = 0; r < KPL; ++r) {
        const int e = r * 32 + lane;
        if (e < len) {
            j_out[off + e] = (int32_t)(x[r] >> 32);
            d_out[off + e] = __uint_as_float((unsigned)x[r]);
        }
    }
}

/* ------------------------------------------------------------------------ */
/* Cell variant 5: tiles of cells, candidates staged and sorted once per tile.
 *
 * Mapping: a block of TILE_T threads per tile of T0 x T1 x T2 cells. The
 * tile's region (its cells widened by the stencil on every axis, clipped on
 * open axes) is a set of (cell, image shift) pieces; the block stages every
 * candidate of the region (position + shift code) in shared memory, once
 * for all the tile's atoms. The host uses this variant only when the region
 * holds each cell at most once (T_k + 2 stencil_k <= ncell_k on periodic
 * axes), so each atom appears at most once among the candidates and atom i
 * itself only with shift 0: a row is then sorted by mdnl_row_key exactly
 * when its candidates are sorted by original index. The fill kernel sorts
 * the region once (bitonic, 64-bit keys index << 32 | staging slot, in shared
 * memory); then G lanes per atom walk the sorted candidates G at a time,
 * test d2 < cutoff2 (mdnl_pair_d2, the same operands as mdnl_for_each_pair;
 * with a zero shift the + 0 is skipped, which changes at most the sign of a
 * zero before it is squared), and compact hits with a ballot straight into
 * the CSR row, already in order: no per-row sort. Every atom of the tile
 * sees a superset of its own stencil; pairs beyond the cutoff fail the same
 * test, pairs within it are the cell list's (the grid's cells are wider than
 * the cutoff).
 *
 * Binning for this variant is an atomic counting sort (tile_bin_kernel, a
 * CUB scan of the cell counts, tile_scatter_kernel): within a cell the order
 * depends on atomics, which these kernels do not care about. The stable
 * cell list of cells_cuda.cuh (energy, rdf, variants 1-4) is not touched. */
#define TILE_T 128
#define TILE_MAXCOL 64 /* region columns per tile, one thread each (<= TILE_T) */
#define TILE_MAXSEG (TILE_MAXCOL * 5)

/* Thread per original atom i: its cell's population (atomic slot); the
 * fullest cell's population into *maxcell (one atomic per warp at most). */
__global__ void fast_bin_kernel(const __grid_constant__ mdnl_geom g, const float4 *__restrict__ pos, int n,
                                int *__restrict__ count, int *__restrict__ slot, int *__restrict__ maxcell)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    int k = 0;
    if (i < n) {
        const float4 p = pos[i];
        k = atomicAdd(&count[mdnl_cell_linear(g, p.x, p.y, p.z)], 1);
        slot[i] = k;
    }
    const int m = (int)__reduce_max_sync(FULLMASK, (unsigned)(k + 1));
    if ((threadIdx.x & 31) == 0 && m > *(volatile int *)maxcell)
        atomicMax(maxcell, m);
}

/* Thread per original atom i: position (w = bits of i), original index and
 * cell into its slot of the cell order. */
__global__ void fast_scatter_kernel(const __grid_constant__ mdnl_geom g, const float4 *__restrict__ pos, int n,
                                    const int *__restrict__ start, const int *__restrict__ slot,
                                    float4 *__restrict__ spos, int *__restrict__ order, int *__restrict__ cellof)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float4 p = pos[i];
    const int cell = mdnl_cell_linear(g, p.x, p.y, p.z);
    const int k = start[cell] + slot[i];
    p.w = __int_as_float(i);
    spos[k] = p;
    order[k] = i;
    cellof[k] = cell;
}

struct tile_args {
    int t[3];  /* tile size in cells */
    int nt[3]; /* tiles per axis */
};

/* Per-block tables: segment s covers flat candidates [fs[s], fs[s+1]) from
 * cell-order slots kb[s].. with shift code code[s]. Segments 0..ncol-1 are
 * the tile's own cells (one z run per tile column, empty for the others), so
 * flat [0, natoms) are the tile's atoms. */
struct tile_fixed {
    int kb[TILE_MAXSEG];
    int fs[TILE_MAXSEG];
    unsigned char code[TILE_MAXSEG];
    float4 vtab[27];
    int ncol, nseg, natoms, total, any_shift, lo, hi;
    union {
        typename cub::BlockScan<int, TILE_T>::TempStorage scan;
        typename cub::BlockReduce<int, TILE_T>::TempStorage reduce;
    };
};

/* Lays out block b's region (the whole block calls it). */
__device__ __forceinline__ void tile_setup(const mdnl_geom &g, const int *__restrict__ start, const tile_args &ta,
                                           int b, tile_fixed &tf)
{
    const int tid = threadIdx.x;
    const int n0 = g.ncell[0], n1 = g.ncell[1], n2 = g.ncell[2];
    const int bz = b % ta.nt[2], by = (b / ta.nt[2]) % ta.nt[1], bx = b / (ta.nt[2] * ta.nt[1]);
    const int tx0 = bx * ta.t[0], ty0 = by * ta.t[1], tz0 = bz * ta.t[2];
    const int tx1 = min(tx0 + ta.t[0], n0), ty1 = min(ty0 + ta.t[1], n1), tz1 = min(tz0 + ta.t[2], n2);
    int xlo = tx0 - g.stencil[0], xhi = tx1 - 1 + g.stencil[0];
    int ylo = ty0 - g.stencil[1], yhi = ty1 - 1 + g.stencil[1];
    int zlo = tz0 - g.stencil[2], zhi = tz1 - 1 + g.stencil[2];
    if (!g.pbc[0]) {
        xlo = max(xlo, 0);
        xhi = min(xhi, n0 - 1);
    }
    if (!g.pbc[1]) {
        ylo = max(ylo, 0);
        yhi = min(yhi, n1 - 1);
    }
    if (!g.pbc[2]) {
        zlo = max(zlo, 0);
        zhi = min(zhi, n2 - 1);
    }
    const int nry = yhi - ylo + 1;
    const int ncol = (xhi - xlo + 1) * nry; /* <= TILE_MAXCOL, checked by the host */
    if (tid < 27) {
        float v[3];
        shift_vector_of_code(g, tid, v);
        tf.vtab[tid] = make_float4(v[0], v[1], v[2], 0.f);
    }
    /* z pieces of column tid: [za, zb) with shift sz; piece 0 (the tile's
     * own cells) only in tile columns */
    int len[5] = {0, 0, 0, 0, 0}, kb[5] = {0, 0, 0, 0, 0}, code[5] = {0, 0, 0, 0, 0};
    if (tid < ncol) {
        const int X = xlo + tid / nry, Y = ylo + tid % nry;
        const int sx = g.pbc[0] ? mdnl_floordiv(X, n0) : 0, sy = g.pbc[1] ? mdnl_floordiv(Y, n1) : 0;
        const int row = ((X - sx * n0) * n1 + (Y - sy * n1)) * n2;
        const bool tilecol = X >= tx0 && X < tx1 && Y >= ty0 && Y < ty1;
        int za[5], zb[5], sz[5];
        za[0] = tz0, zb[0] = tilecol ? tz1 : tz0, sz[0] = 0;
        za[1] = zlo, zb[1] = min(0, zhi + 1), sz[1] = -1;
        za[2] = max(zlo, 0), zb[2] = tilecol ? tz0 : min(zhi + 1, n2), sz[2] = 0;
        za[3] = tz1, zb[3] = tilecol ? min(zhi + 1, n2) : tz1, sz[3] = 0;
        za[4] = n2, zb[4] = zhi + 1, sz[4] = 1;
#pragma unroll
        for (int p = 0; p < 5; ++p) {
            code[p] = shift_code(sx, sy, sz[p]);
            if (za[p] < zb[p]) {
                kb[p] = start[row + za[p] - sz[p] * n2];
                len[p] = start[row + zb[p] - sz[p] * n2] - kb[p];
            }
        }
    }
    int fa, fb, ta_tot, tb_tot;
    cub::BlockScan<int, TILE_T>(tf.scan).ExclusiveSum(len[0], fa, ta_tot);
    __syncthreads();
    cub::BlockScan<int, TILE_T>(tf.scan).ExclusiveSum(len[1] + len[2] + len[3] + len[4], fb, tb_tot);
    bool shifted = false;
    if (tid < ncol) {
        tf.kb[tid] = kb[0];
        tf.fs[tid] = fa;
        tf.code[tid] = SHIFT_CODE_ZERO;
        int f = ta_tot + fb;
#pragma unroll
        for (int p = 1; p < 5; ++p) {
            const int s = ncol + tid * 4 + (p - 1);
            tf.kb[s] = kb[p];
            tf.fs[s] = f;
            tf.code[s] = (unsigned char)code[p];
            f += len[p];
            shifted |= len[p] > 0 && code[p] != SHIFT_CODE_ZERO;
        }
    }
    const int any = __syncthreads_or(shifted);
    if (tid == 0) {
        tf.ncol = ncol;
        tf.nseg = ncol * 5;
        tf.natoms = ta_tot;
        tf.total = ta_tot + tb_tot;
        tf.any_shift = any;
    }
    __syncthreads();
}

/* The last segment in [0, nseg) whose flat start is <= f. */
__device__ __forceinline__ int tile_seg_of(const tile_fixed &tf, int nseg, int f)
{
    int lo = 0, hi = nseg - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (tf.fs[mid] <= f)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

template <bool SHIFT>
__device__ __forceinline__ float tile_d2(const float4 &pi, const float4 &pj, const float4 *vtab, unsigned char code)
{
    if (SHIFT) {
        const float4 v4 = vtab[code];
        const float v[3] = {v4.x, v4.y, v4.z};
        return mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, v);
    }
    /* S = 0: (r_j - r_i) + 0 differs from r_j - r_i at most in a zero's sign */
    const float dx = __fsub_rn(pj.x, pi.x), dy = __fsub_rn(pj.y, pi.y), dz = __fsub_rn(pj.z, pi.z);
    return __fadd_rn(__fadd_rn(__fmul_rn(dx, dx), __fmul_rn(dy, dy)), __fmul_rn(dz, dz));
}

/* Sorts the staged region's (index, staging slot) pairs with a block radix
 * sort of K * TILE_T items (blocked: thread t holds ranks t*K ..), then
 * gathers positions and shift codes into rank order. */
template <int K>
__device__ __forceinline__ void tile_sort_gather(void *temp, int R, int lo, int bits, const float4 *cpos,
                                                 const unsigned char *ccode, float4 *qpos, unsigned char *qcode)
{
    typedef cub::BlockRadixSort<unsigned, TILE_T, K, unsigned short> Sort;
    unsigned key[K];
    unsigned short val[K];
#pragma unroll
    for (int q = 0; q < K; ++q) {
        const int f = threadIdx.x * K + q;
        /* index - lo < 2^bits - 1, so the padding sorts last */
        key[q] = f < R ? (unsigned)(__float_as_int(cpos[f].w) - lo) : (1u << bits) - 1u;
        val[q] = (unsigned short)f;
    }
    Sort(*(typename Sort::TempStorage *)temp).Sort(key, val, 0, bits);
#pragma unroll
    for (int q = 0; q < K; ++q) {
        const int r = threadIdx.x * K + q;
        if (r < R) {
            qpos[r] = cpos[val[q]];
            qcode[r] = ccode[val[q]];
        }
    }
}

/* G lanes per atom walk the rank-ordered candidates G at a time; hits are
 * compacted by ballot and written at their rank in the CSR row. */
template <bool FULL, bool SHIFT, int G>
__device__ __forceinline__ void tile_walk_rows(const tile_fixed &tf, const float4 *cpos, const float4 *qpos,
                                               const unsigned char *qcode, int A, int R, float cutoff2,
                                               const int64_t *__restrict__ offsets, int32_t *__restrict__ j_out,
                                               float *__restrict__ d_out, int *err)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, sub = lane % G;
    constexpr int APW = 32 / G;
    const unsigned gmask = G == 32 ? FULLMASK : ((1u << G) - 1u) << (lane & ~(G - 1));
    const unsigned below = (1u << lane) - 1u;
    for (int a0 = warp * APW; a0 < A; a0 += (TILE_T / 32) * APW) {
        const int a = a0 + lane / G;
        const bool act = a < A;
        const float4 pi = act ? cpos[a] : make_float4(0.f, 0.f, 0.f, 0.f);
        const int i = act ? __float_as_int(pi.w) : -1;
        int64_t off = 0, len = 0;
        if (act) {
            off = offsets[i];
            len = offsets[i + 1] - off;
        }
        int cnt = 0;
#pragma unroll 2
        for (int base = 0; base < R; base += G) { /* uniform: R is the block's */
            const int c = base + sub;
            bool hit = false;
            float d2 = 0.f;
            int j = 0;
            if (act && c < R) {
                const float4 pj = qpos[c];
                j = __float_as_int(pj.w);
                d2 = tile_d2<SHIFT>(pi, pj, tf.vtab, SHIFT ? qcode[c] : 0);
                hit = d2 < cutoff2 && j != i && (FULL || i < j);
            }
            const unsigned m = __ballot_sync(FULLMASK, hit) & gmask;
            if (hit) {
                const int at = cnt + __popc(m & below);
                if (at < len) {
                    j_out[off + at] = j;
                    d_out[off + at] = __fsqrt_rn(d2);
                }
            }
            cnt += __popc(m);
        }
        if (act && sub == 0 && cnt != len)
            atomicOr(err, 1);
    }
}

/* Fill pass of variant 5. Mapping: block per tile; stage the region
 * (K * TILE_T candidates at most: the host bounds every region by the
 * fullest cell times the region's cells), radix-sort it by original index
 * (K / 2 items per thread when the region fits), then the tile's atoms walk
 * it, G lanes per atom. */
template <bool FULL, int G, int K>
__device__ __forceinline__ void tile_fill_one(const mdnl_geom &g, const mdnl_cells_view &c, const tile_args &ta,
                                              int bits, const int64_t *__restrict__ offsets,
                                              int32_t *__restrict__ j_out, float *__restrict__ d_out, int *err,
                                              int *__restrict__ over_n, int *__restrict__ over_list, int second,
                                              int tile)
{
    constexpr int CAP = K * TILE_T;
    extern __shared__ float4 tile_dyn[]; /* CAP * (2 * 16 + 2) bytes */
    float4 *cpos = tile_dyn, *qpos = tile_dyn + CAP;
    unsigned char *ccode = (unsigned char *)(tile_dyn + 2 * CAP), *qcode = ccode + CAP;
    __shared__ tile_fixed tf; /* one per kernel: the device function is inlined once */
    typedef cub::BlockRadixSort<unsigned, TILE_T, K, unsigned short> SortK;
    typedef cub::BlockRadixSort<unsigned, TILE_T, (K > 1 ? K / 2 : 1), unsigned short> SortH;
    __shared__ union {
        typename SortK::TempStorage k;
        typename SortH::TempStorage h;
    } sort_tmp;
    tile_setup(g, c.start, ta, tile, tf);
    const int A = tf.natoms, R = tf.total;
    if (R > CAP) { /* uniform; never write past a row */
        if (threadIdx.x == 0) {
            if (second)
                atomicOr(err, 1); /* the host's bound excludes it */
            else
                over_list[atomicAdd(over_n, 1)] = tile;
        }
        return;
    }
    int lo = INT_MAX, hi = 0;
    for (int f = threadIdx.x; f < R; f += TILE_T) {
        const int s = tile_seg_of(tf, tf.nseg, f);
        const float4 p = c.pos[tf.kb[s] + (f - tf.fs[s])];
        cpos[f] = p;
        ccode[f] = tf.code[s];
        lo = min(lo, __float_as_int(p.w));
        hi = max(hi, __float_as_int(p.w));
    }
    /* only the bits that differ within the region are sorted: fewer radix
     * passes where nearby atoms have nearby indices */
    typedef cub::BlockReduce<int, TILE_T> Reduce;
    lo = Reduce(tf.reduce).Reduce(lo, [](int x, int y) { return min(x, y); });
    __syncthreads();
    hi = Reduce(tf.reduce).Reduce(hi, [](int x, int y) { return max(x, y); });
    if (threadIdx.x == 0) {
        tf.lo = lo;
        tf.hi = hi;
    }
    __syncthreads();
    lo = tf.lo;
    int kbits = 1;
    while (kbits < bits && (1u << kbits) <= (unsigned)(tf.hi - lo + 1))
        ++kbits;
    if (K > 1 && 2 * R <= CAP)
        tile_sort_gather<(K > 1 ? K / 2 : 1)>(&sort_tmp, R, lo, kbits, cpos, ccode, qpos, qcode);
    else
        tile_sort_gather<K>(&sort_tmp, R, lo, kbits, cpos, ccode, qpos, qcode);
    __syncthreads();
    if (tf.any_shift)
        tile_walk_rows<FULL, true, G>(tf, cpos, qpos, qcode, A, R, g.cutoff2, offsets, j_out, d_out, err);
    else
        tile_walk_rows<FULL, false, G>(tf, cpos, qpos, qcode, A, R, g.cutoff2, offsets, j_out, d_out, err);
}

template <bool FULL, int G, int K>
__global__ __launch_bounds__(TILE_T, K <= 4 ? 8 : 4) void tile_fill_kernel(
    const __grid_constant__ mdnl_geom g, mdnl_cells_view c, tile_args ta, int bits, const int64_t *__restrict__ offsets,
    int32_t *__restrict__ j_out, float *__restrict__ d_out, int *err, int *__restrict__ over_n,
    int *__restrict__ over_list, int second)
{
    /* first launch: tile blockIdx.x, regions beyond CAP are listed for the
     * second launch (a larger K, few blocks looping over the list) */
    const int ntiles = second ? *(volatile int *)over_n : 1;
    for (int it = second ? (int)blockIdx.x : 0; it < ntiles; it += second ? (int)gridDim.x : 1) {
        if (it > (second ? (int)blockIdx.x : 0))
            __syncthreads();
        const int tile = second ? over_list[it] : (int)blockIdx.x;
        tile_fill_one<FULL, G, K>(g, c, ta, bits, offsets, j_out, d_out, err, over_n, over_list, second, tile);
    }
}

/* ------------------------------------------------------------------------ */
/* Cell variant 8: a pruned count pass and a pruned fill, both over the
 * counting-sort binning of a grid refined by 2 (half-width cells, stencil 2,
 * mdnl_geom_refine) and walked by mdnl_for_each_pair_pruned, so that a 3D
 * liquid tests ~40% of the 27-cell stencil's candidates.
 *
 * Fill mapping: thread per sorted slot s, PT threads per block. The walk
 * appends each hit to the thread's row in shared memory as a 32-bit key
 * (j << 6 | k, k the hit's arrival, j < 2^26) with its distance beside it
 * (pitch N + 1 words: a warp's stores of one k fall in different banks);
 * the thread then sorts its N keys in registers with a bitonic network
 * (compile-time indices: no local memory, no shuffles; N = 32 or 64), and
 * the warp writes its 32 rows one after another with coalesced stores,
 * taking each distance through the key's low bits. The host uses this
 * variant only when each atom appears at most once in a row (every periodic
 * axis of the refined grid has at least 2 stencil + 1 cells), so j alone
 * orders a row as mdnl_row_key does. A row longer than N is written unsorted
 * straight into the CSR by its thread and sorted there by the warp (64-bit
 * keys in registers, up to 256; longer: one thread, in place). */

template <bool FULL>
__global__ __launch_bounds__(128) void prune_count_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                          mdnl_prune pr, unsigned long long *__restrict__ counts,
                                                          int *__restrict__ maxlen)
{
    const int s = blockIdx.x * blockDim.x + threadIdx.x;
    int k = 0;
    if (s < c.natoms) {
        const int i = c.order[s];
        mdnl_for_each_pair_pruned(g, c, pr, s, [&](int j, float, int s0, int s1, int s2) {
            if (FULL || mdnl_half_keep(i, j, s0, s1, s2))
                ++k;
        });
        counts[i] = (unsigned long long)k;
    }
    const int m = (int)__reduce_max_sync(FULLMASK, (unsigned)k);
    if ((threadIdx.x & 31) == 0 && m > *(volatile int *)maxlen)
        atomicMax(maxlen, m);
}

/* Ascending bitonic sort of one thread's first N keys (N a power of two,
 * N <= M). */
template <int N, int M>
__device__ __forceinline__ void thread_bitonic(unsigned (&x)[M])
{
    static_assert(N <= M, "the network sorts a prefix of the array");
#pragma unroll
    for (int k = 2; k <= N; k <<= 1)
#pragma unroll
        for (int jj = k >> 1; jj > 0; jj >>= 1)
#pragma unroll
            for (int e = 0; e < N; ++e) {
                const int p = e ^ jj;
                if (p > e) {
                    const unsigned a = x[e], b = x[p];
                    const unsigned lo = min(a, b), hi = max(a, b);
                    x[e] = (e & k) == 0 ? lo : hi;
                    x[p] = (e & k) == 0 ? hi : lo;
                }
            }
}

/* KEY4: the shared row holds only the 32-bit key j << 5 | shift code (4
 * bytes a hit instead of 8: twice the resident threads), and the warp
 * recomputes each distance when it writes the row, from the positions in
 * original order (`opos`, the same floats as the cell-ordered copy, the same
 * mdnl_pair_d2: the same bits). Needs j < 2^27 and shifts in -1..1. */
template <bool FULL, int N, int PT, bool KEY4>
__global__ __launch_bounds__(PT) void prune_fill_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                        mdnl_prune pr, const float4 *__restrict__ opos,
                                                        const int64_t *__restrict__ offsets,
                                                        int32_t *__restrict__ j_out, float *__restrict__ d_out,
                                                        int *__restrict__ err)
{
    constexpr int P = N + 1;
    extern __shared__ unsigned prune_sm[];
    unsigned *const kb = prune_sm;
    float *const db = reinterpret_cast<float *>(prune_sm + PT * P); /* !KEY4 */
    const int t = threadIdx.x, lane = t & 31;
    const int s = blockIdx.x * PT + t;
    int len = 0;
    long long off = 0;
    float4 pi = make_float4(0.f, 0.f, 0.f, 0.f);
    if (s < c.natoms) {
        const int i = c.order[s];
        pi = c.pos[s];
        off = offsets[i];
        len = (int)(offsets[i + 1] - off);
        const bool fits = len <= N;
        unsigned *const mk = kb + t * P;
        float *const md = db + t * P;
        int k = 0;
        mdnl_for_each_pair_pruned(g, c, pr, s, [&](int j, float d2, int s0, int s1, int s2) {
            if (FULL || mdnl_half_keep(i, j, s0, s1, s2)) {
                if (fits) {
                    if (k < N) {
                        if (KEY4) {
                            mk[k] = ((unsigned)j << 5) | (unsigned)shift_code(s0, s1, s2);
                        } else {
                            mk[k] = ((unsigned)j << 6) | (unsigned)k;
                            md[k] = __fsqrt_rn(d2);
                        }
                    }
                } else if (k < len) {
                    j_out[off + k] = j;
                    d_out[off + k] = __fsqrt_rn(d2);
                }
                ++k;
            }
        });
        if (k != len)
            atomicOr(err, 1);
        if (fits && len > 1) {
            unsigned x[N];
#pragma unroll
            for (int e = 0; e < N; ++e)
                x[e] = e < len ? mk[e] : 0xffffffffu;
            thread_bitonic<N>(x);
#pragma unroll
            for (int e = 0; e < N; ++e)
                if (e < len)
                    mk[e] = x[e];
        }
    }
    __syncwarp();
    const int wbase = t & ~31;
    for (int r = 0; r < 32; ++r) {
        const int lr = __shfl_sync(FULLMASK, len, r);
        const long long orow = __shfl_sync(FULLMASK, off, r);
        const float px = __shfl_sync(FULLMASK, pi.x, r), py = __shfl_sync(FULLMASK, pi.y, r),
                    pz = __shfl_sync(FULLMASK, pi.z, r);
        if (lr > N)
            continue;
        const unsigned *rk = kb + (wbase + r) * P;
        const float *rd = db + (wbase + r) * P;
        for (int e = lane; e < lr; e += 32) {
            const unsigned key = rk[e];
            if (KEY4) {
                const int j = (int)(key >> 5), code = (int)(key & 31u);
                float v[3];
                shift_vector_of_code(g, code, v);
                const float4 pj = __ldg(opos + j);
                j_out[orow + e] = j;
                d_out[orow + e] = __fsqrt_rn(mdnl_pair_d2(px, py, pz, pj.x, pj.y, pj.z, v));
            } else {
                j_out[orow + e] = (int32_t)(key >> 6);
                d_out[orow + e] = rd[key & 63u];
            }
        }
    }
    unsigned longs = __ballot_sync(FULLMASK, len > N);
    while (longs) {
        const int r = __ffs(longs) - 1;
        longs &= longs - 1;
        const int lr = __shfl_sync(FULLMASK, len, r);
        const long long orow = __shfl_sync(FULLMASK, off, r);
        if (lr <= 256) {
            uint64_t x[8];
#pragma unroll
            for (int q = 0; q < 8; ++q) {
                const int e = q * 32 + lane;
                x[q] = e < lr ? mdnl_row_key(j_out[orow + e], d_out[orow + e]) : ~0ull;
            }
            warp_bitonic<8>(x, lane);
#pragma unroll
            for (int q = 0; q < 8; ++q) {
                const int e = q * 32 + lane;
                if (e < lr) {
                    j_out[orow + e] = (int32_t)(x[q] >> 32);
                    d_out[orow + e] = __uint_as_float((unsigned)x[q]);
                }
            }
        } else if (lane == 0) {
            sort_row(global_row{j_out + orow, d_out + orow}, lr);
        }
        __syncwarp();
    }
}

/* ------------------------------------------------------------------------ */
/* Cell variant 9: one walk, a warp per home cell; rows sorted afterwards.
 *
 * Walk (v9_walk_kernel). Mapping: a warp per cell of the counting-sort
 * binning (the home cell), its atoms (32 at a time) in shared memory with a
 * pointer to each one's slab row. The cell's candidate ranges (as in
 * warp_list_ranges) go to a small shared table once; the warp then takes 32
 * flat candidates per step (each lane finds its range by walking forward in
 * the table, its flat index only grows) and each lane loads one candidate.
 * A candidate whose image is a cutoff or more from the bounding box of the
 * home atoms is dropped (v9_axis_gap: a bound on every d2 of the test, exact
 * in float, so no pair is lost); the kept ones go to a per-warp ring of 64
 * in shared memory, and each time 32 are there the warp takes them (one a
 * lane) and tests each against every home atom a in turn: a broadcast shared
 * load, mdnl_pair_d2, a ballot; the hits of that ballot are appended to a's
 * slab row together (its running count, held by lane a, plus the hit's rank
 * in the ballot). A candidate is loaded once per cell instead of once per
 * atom and every lane works in every step. The slab holds V9_CAP keys a row,
 * rows in original index order, the key j << 5 | shift code; the walk counts
 * every row exactly (counts[i]) and records the longest (flags[1]); keys past
 * V9_CAP are dropped. There is no count pass: the candidates are walked once.
 *
 * Rows (v9_rows_kernel). Mapping: thread per original row i, so a warp's 32
 * rows are contiguous in the slab and in the CSR. The warp loads its rows
 * into shared memory with coalesced 16-byte loads; each thread takes its
 * row into registers and sorts it with a bitonic network (32 or 64 keys,
 * compile-time indices; the warp's longest row decides); the warp then
 * writes j and computes and writes d entry by entry in output order, from
 * the positions in original order (the floats the walk used, mdnl_pair_d2:
 * the same bits), with coalesced stores. A row longer than V9_CAP is walked
 * again by one thread (v9_long_kernel, a no-op when the walk saw no such
 * row), written unsorted into its CSR slots and sorted there. No host
 * synchronisation inside the build: the output arrays are sized from the
 * frame before or an estimate, and a CSR that outgrew them is found by the
 * caller's one read-back and built again.
 *
 * The host uses this variant only where an atom appears at most once in a
 * row with shifts in -1..1 (every periodic axis has at least 2 stencil + 1
 * cells), the stencil's ranges fit a warp, and j < 2^27: j alone then orders
 * a row as mdnl_row_key does. */
#define V9_CAP 64
#define V9_T 128 /* walk: 4 warps, 4 cells a block */
#define V9_RT 64 /* rows: 2 warps */
#define V9_LPITCH (V9_CAP + 4) /* rows kernel: 16-byte aligned rows, 8 lanes per LDS.128 phase conflict-free */

/* The smallest |dx| on one axis between a candidate image (xj, shift v) and
 * any home atom xi in [lo, hi], computed as mdnl_pair_d2 computes dx:
 * rounding is monotone, so fl(fl(xj - hi) + v) <= fl(fl(xj - xi) + v) <=
 * fl(fl(xj - lo) + v), and the bound is exact for the float test. */
__device__ __forceinline__ float v9_axis_gap(float xj, float lo, float hi, float v)
{
    const float a = MDNL_FADD(MDNL_FSUB(xj, hi), v);
    const float b = MDNL_FADD(MDNL_FSUB(xj, lo), v);
    return a > 0.f ? a : (b < 0.f ? -b : 0.f);
}

template <bool FULL>
__global__ __launch_bounds__(V9_T) void v9_walk_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                                                       unsigned *__restrict__ slab,
                                                       unsigned long long *__restrict__ counts,
                                                       int *__restrict__ maxlen)
{
    constexpr int W = V9_T / 32;
    if (blockIdx.x == 0 && threadIdx.x == 0)
        counts[c.natoms] = 0; /* the scan's last term: the walk writes every count, the host clears none */
    __shared__ float4 home_s[W * 32];
    __shared__ unsigned *rowp_s[W * 32];
    __shared__ int fe_s[W * 32], kb_s[W * 32], code_s[W * 32];
    __shared__ float4 cp_s[W * 64]; /* kept candidates, a ring of 64 a warp: x, y, z, key */
    __shared__ float4 cv_s[W * 64]; /* and their shift vector and self */
    __shared__ float sh[27][3];
    if (threadIdx.x < 27)
        shift_vector_of_code(g, threadIdx.x, sh[threadIdx.x]);
    __syncthreads();
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int cell = blockIdx.x * W + w;
    if (cell >= c.ncells)
        return; /* the whole warp */
    const int hb = c.start[cell], he = c.start[cell + 1];
    if (hb == he)
        return;
    int ntot; /* the cell's candidates */
    {
        /* its candidate ranges, flat [fs, fe) from slot kb, in a table */
        const warp_ranges r = warp_list_ranges(g, c, cell, lane);
        fe_s[w * 32 + lane] = r.fe; /* 0x7fffffff past the last range */
        kb_s[w * 32 + lane] = r.kb - r.fs;
        code_s[w * 32 + lane] = r.code;
        ntot = r.total;
    }
    __syncwarp();
    const unsigned lt = (1u << lane) - 1u;
    const int hbase = w * 32, rbase = w * 64;
    int longest = 0;
    for (int h0 = hb; h0 < he; h0 += 32) {
        const int nh = min(32, he - h0);
        float lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
        if (lane < nh) {
            const float4 p = c.pos[h0 + lane];
            home_s[hbase + lane] = p;
            rowp_s[hbase + lane] = slab + (size_t)__float_as_int(p.w) * V9_CAP;
            lo[0] = hi[0] = p.x;
            lo[1] = hi[1] = p.y;
            lo[2] = hi[2] = p.z;
        }
        /* the home atoms' bounding box */
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
#pragma unroll
            for (int k = 0; k < 3; ++k) {
                lo[k] = fminf(lo[k], __shfl_xor_sync(FULLMASK, lo[k], o));
                hi[k] = fmaxf(hi[k], __shfl_xor_sync(FULLMASK, hi[k], o));
            }
        __syncwarp();
        int cnt = 0; /* lane a: the row length of home atom a so far */
        int head = 0, nk = 0; /* the ring: kept candidates from head, nk of them (uniform) */
        /* Takes up to 32 kept candidates off the ring (one a lane; lanes past `count` hold none) and tests each
         * against every home atom, appending the hits. */
        auto take = [&](int count) {
            __syncwarp(); /* the ring's writes before its reads */
            float4 pj = make_float4(INFINITY, INFINITY, INFINITY, 0.f), pv = make_float4(0.f, 0.f, 0.f, 0.f);
            int self = -1;
            if (lane < count) {
                const int slot = rbase + ((head + lane) & 63);
                pj = cp_s[slot];
                pv = cv_s[slot];
                self = __float_as_int(pv.w);
            }
            __syncwarp(); /* its reads before the next writes */
            head = (head + 32) & 63;
            const float v[3] = {pv.x, pv.y, pv.z};
            const unsigned key = __float_as_uint(pj.w);
            const int j = (int)(key >> 5);
            int s0, s1, s2; /* for the half list's rule */
            shift_of_code((int)(key & 31u), s0, s1, s2);
#pragma unroll 4
            for (int a = 0; a < nh; ++a) {
                const float4 pa = home_s[hbase + a];
                const float d2 = mdnl_pair_d2(pa.x, pa.y, pa.z, pj.x, pj.y, pj.z, v);
                bool hit = d2 < g.cutoff2 && self != a;
                if (!FULL)
                    hit = hit && mdnl_half_keep(__float_as_int(pa.w), j, s0, s1, s2);
                const unsigned m = __ballot_sync(FULLMASK, hit);
                const int ca = __shfl_sync(FULLMASK, cnt, a);
                const int p = ca + __popc(m & lt);
                if (hit && p < V9_CAP)
                    __stcg(rowp_s[hbase + a] + p, key);
                if (lane == a)
                    cnt = ca + __popc(m);
            }
        };
        int q = 0; /* this lane's range (its flat index only grows) */
        for (int base = 0; base < ntot; base += 32) {
            const int fl = base + lane;
            float4 pj = make_float4(INFINITY, INFINITY, INFINITY, 0.f); /* past the end: never a neighbour */
            int k = -1, code = SHIFT_CODE_ZERO;
            if (fl < ntot) {
                while (fe_s[hbase + q] <= fl)
                    ++q;
                k = kb_s[hbase + q] + fl;
                code = code_s[hbase + q];
                pj = c.pos[k];
            }
            const float v[3] = {sh[code][0], sh[code][1], sh[code][2]};
            const int j = __float_as_int(pj.w);
            const int self = code == SHIFT_CODE_ZERO ? k - h0 : -1; /* the home atom this candidate is, at S = 0 */
            pj.w = __uint_as_float(((unsigned)j << 5) | (unsigned)code);
            /* Keep the candidate only if it can be within the cutoff of the box (a bound on every d2 below). */
            const float ex = v9_axis_gap(pj.x, lo[0], hi[0], v[0]);
            const float ey = v9_axis_gap(pj.y, lo[1], hi[1], v[1]);
            const float ez = v9_axis_gap(pj.z, lo[2], hi[2], v[2]);
            const float bd2 = MDNL_FADD(MDNL_FADD(MDNL_FMUL(ex, ex), MDNL_FMUL(ey, ey)), MDNL_FMUL(ez, ez));
            const bool keep = fl < ntot && bd2 < g.cutoff2;
            const unsigned km = __ballot_sync(FULLMASK, keep);
            if (keep) {
                const int slot = rbase + ((head + nk + __popc(km & lt)) & 63);
                cp_s[slot] = pj;
                cv_s[slot] = make_float4(v[0], v[1], v[2], __int_as_float(self));
            }
            nk += __popc(km);
            if (nk >= 32) {
                take(32);
                nk -= 32;
            }
        }
        if (nk > 0)
            take(nk);
        if (lane < nh) {
            counts[__float_as_int(home_s[hbase + lane].w)] = (unsigned long long)cnt;
            longest = max(longest, cnt);
        }
        __syncwarp(); /* home_s, rowp_s and the ring are refilled by the next 32 */
    }
    const int m = (int)__reduce_max_sync(FULLMASK, (unsigned)longest);
    if (lane == 0 && m > *(volatile int *)maxlen)
        atomicMax(maxlen, m);
}

/* One row's sorted keys out: NET keys in the network (NET >= the warp's
 * longest row of at most V9_CAP). Staged (every row of the warp is the
 * thread's own and they fit the stage): the sorted keys and their row's lane
 * go to shared memory in output order, and the warp writes j, then computes
 * and writes d, entry by entry in output order (coalesced stores, and the
 * gathers of many entries in flight). Otherwise each thread writes its own
 * row. */
template <int NET>
__device__ __forceinline__ void v9_rows_out(unsigned (&x)[V9_CAP], int len, bool mine, long long off,
                                            long long wbase, int span, bool staged, float4 pi,
                                            const float4 *__restrict__ opos, const float (*sh)[3],
                                            unsigned *__restrict__ st, unsigned char *__restrict__ rid,
                                            const float4 *__restrict__ pis, int lane, int32_t *__restrict__ j_out,
                                            float *__restrict__ d_out)
{
    thread_bitonic<NET>(x);
    if (staged) {
        const int rel = (int)(off - wbase);
#pragma unroll
        for (int e = 0; e < NET; ++e)
            if (e < len) {
                st[rel + e] = x[e];
                rid[rel + e] = (unsigned char)lane;
            }
        __syncwarp();
        for (int e = lane; e < span; e += 32)
            j_out[wbase + e] = (int32_t)(st[e] >> 5);
#pragma unroll 4
        for (int e = lane; e < span; e += 32) {
            const unsigned key = st[e];
            const float4 p = pis[rid[e]];
            const float4 pj = __ldg(opos + (key >> 5));
            d_out[wbase + e] = __fsqrt_rn(mdnl_pair_d2(p.x, p.y, p.z, pj.x, pj.y, pj.z, sh[key & 31u]));
        }
        return;
    }
    if (!mine)
        return;
#pragma unroll
    for (int e = 0; e < NET; ++e)
        if (e < len) {
            const unsigned key = x[e];
            const float4 pj = __ldg(opos + (key >> 5));
            j_out[off + e] = (int32_t)(key >> 5);
            d_out[off + e] = __fsqrt_rn(mdnl_pair_d2(pi.x, pi.y, pi.z, pj.x, pj.y, pj.z, sh[key & 31u]));
        }
}

/* npairs_out (flags) gets the pair count; a CSR of more than `cap` pairs
 * sets *outgrown and writes nothing (the host grows the output and builds
 * again). */
__global__ __launch_bounds__(V9_RT) void v9_rows_kernel(const __grid_constant__ mdnl_geom g,
                                                        const unsigned *__restrict__ slab, int n,
                                                        const int64_t *__restrict__ offsets,
                                                        const float4 *__restrict__ opos, long long cap,
                                                        int32_t *__restrict__ j_out, float *__restrict__ d_out,
                                                        long long *__restrict__ npairs_out, int *__restrict__ outgrown)
{
    __shared__ __align__(16) unsigned stage_s[V9_RT / 32][32 * V9_LPITCH];
    __shared__ unsigned char rid_s[V9_RT / 32][32 * V9_CAP];
    __shared__ float4 pi_s[V9_RT / 32][32];
    __shared__ float sh[27][3];
    const long long total = offsets[n];
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        *npairs_out = total;
        if (total > cap)
            *outgrown = 1;
    }
    if (total > cap)
        return; /* the whole grid */
    if (threadIdx.x < 27)
        shift_vector_of_code(g, threadIdx.x, sh[threadIdx.x]);
    __syncthreads();
    const int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    const int i0 = blockIdx.x * V9_RT + (threadIdx.x & ~31);
    const int i = i0 + lane;
    if (i0 >= n)
        return; /* the whole warp */
    long long off;
    int len = 0;
    if (i < n) {
        off = offsets[i];
        len = (int)(offsets[i + 1] - off);
    } else {
        off = offsets[n];
    }
    const long long wbase = __shfl_sync(FULLMASK, off, 0);
    const long long wend = __shfl_sync(FULLMASK, off + len, 31);
    /* Rows longer than V9_CAP are v9_long_kernel's. */
    const bool mine = len <= V9_CAP;
    const int wmax = (int)__reduce_max_sync(FULLMASK, (unsigned)len);
    unsigned *const st = stage_s[w];
    /* the warp's rows, 16 bytes a lane, into shared memory (only the words
     * up to the longest row) */
    {
        const int nrows = min(32, n - i0), qmax = (min(wmax, V9_CAP) + 3) / 4;
        const uint4 *src = reinterpret_cast<const uint4 *>(slab + (size_t)i0 * V9_CAP);
        for (int e = lane; e < nrows * (V9_CAP / 4); e += 32) {
            const int row = e / (V9_CAP / 4), q = e % (V9_CAP / 4);
            if (q < qmax)
                *reinterpret_cast<uint4 *>(st + row * V9_LPITCH + 4 * q) = __ldcs(src + e);
        }
    }
    __syncwarp();
    unsigned x[V9_CAP];
#pragma unroll
    for (int q = 0; q < V9_CAP / 4; ++q) {
        uint4 u = make_uint4(~0u, ~0u, ~0u, ~0u);
        if (mine && 4 * q < len)
            u = *reinterpret_cast<const uint4 *>(st + lane * V9_LPITCH + 4 * q);
        x[4 * q] = 4 * q < len ? u.x : ~0u;
        x[4 * q + 1] = 4 * q + 1 < len ? u.y : ~0u;
        x[4 * q + 2] = 4 * q + 2 < len ? u.z : ~0u;
        x[4 * q + 3] = 4 * q + 3 < len ? u.w : ~0u;
    }
    const float4 pi = i < n ? opos[i] : make_float4(0.f, 0.f, 0.f, 0.f);
    pi_s[w][lane] = pi;
    __syncwarp(); /* st is reused for the output */
    const bool staged = wmax <= V9_CAP && wend - wbase <= 32 * V9_CAP;
    const int span = staged ? (int)(wend - wbase) : 0;
    if (wmax <= 32)
        v9_rows_out<32>(x, len, mine, off, wbase, span, staged, pi, opos, sh, st, rid_s[w], pi_s[w], lane, j_out,
                        d_out);
    else
        v9_rows_out<64>(x, len, mine, off, wbase, span, staged, pi, opos, sh, st, rid_s[w], pi_s[w], lane, j_out,
                        d_out);
}

/* One slot's row, when it is longer than V9_CAP (see v9_long_kernel). */
template <bool FULL>
__device__ void v9_long_row(const mdnl_geom &g, const mdnl_cells_view &c, int s, const int64_t *__restrict__ offsets,
                            int32_t *__restrict__ j_out, float *__restrict__ d_out, int *__restrict__ err)
{
    const int i = c.order[s];
    const long long off = offsets[i];
    const long long len = offsets[i + 1] - off;
    if (len <= V9_CAP)
        return;
    long long k = 0;
    mdnl_for_each_pair(g, c, s, [&](int j, float d2, int s0, int s1, int s2) {
        if (FULL || mdnl_half_keep(i, j, s0, s1, s2)) {
            if (k < len) {
                j_out[off + k] = j;
                d_out[off + k] = __fsqrt_rn(d2);
            }
            ++k;
        }
    });
    if (k != len)
        atomicOr(err, 1);
    sort_row(global_row{j_out + off, d_out + off}, len);
}

/* Rows longer than V9_CAP. Mapping: a grid-stride loop over sorted slots;
 * only the long rows walk (mdnl_for_each_pair), write their pairs unsorted
 * into the CSR and sort them in place. A walk that disagrees with the count
 * sets err. Without a long row (err[1], the walk's longest) or room in the
 * output, every thread returns at once. */
template <bool FULL>
__global__ void v9_long_kernel(const __grid_constant__ mdnl_geom g, mdnl_cells_view c,
                               const int64_t *__restrict__ offsets, long long cap, int32_t *__restrict__ j_out,
                               float *__restrict__ d_out, int *__restrict__ err)
{
    if (err[1] <= V9_CAP || offsets[c.natoms] > cap)
        return;
    for (int s = blockIdx.x * blockDim.x + threadIdx.x; s < c.natoms; s += gridDim.x * blockDim.x)
        v9_long_row<FULL>(g, c, s, offsets, j_out, d_out, err);
}

/* ------------------------------------------------------------------------ */
/* The context. */

/* ctx->flags, cleared by every build and read back by its last copy: [0] a
 * fill disagreed with its count, [1] the longest row, [2] the fullest cell,
 * [3] variant 5's oversized regions, [4..5] cell variants 7 and 9's pair
 * count (int64), [6] variant 9's CSR outgrew the output arrays. */
#define FLAG_INTS 8
#define FLAG_NPAIRS 4
#define FLAG_OUTGROWN 6

struct mdnl_cuda_ctx {
    cudaStream_t stream;
    mdnl_dbuf pos, counts, offsets, j, d, stage, ccount, images, flags, temp;
    mdnl_cells_cuda cells;
    int64_t *h_small; /* pinned read-back: [0] npairs, [1] max row / error flags */
    int timing;
    cudaEvent_t ev[MDNL_CUDA_NSTAGES][2], ev_total[2];
    int used[MDNL_CUDA_NSTAGES];
    double stage_ms[MDNL_CUDA_NSTAGES];
    double total_ms;
    int stage_cap;
    int64_t retries;
    int smem_budget; /* bytes; -1: default */
    int cell_variant; /* 0: pick by density; 1: count + fused fill; 2: staged single pass;
                         3: thread count + warp fill; 4: warp count + warp fill;
                         5: tile fill; 6: 2 over the unstable binning;
                         7: 6 with rows sorted while staged, no mid-build sync */
    int deferred;     /* 1 (variant 7): npairs and the longest row await the caller's one sync;
                         2 (variant 9): npairs and whether the output was large enough */
    int smem_optin;  /* the device's opt-in maximum per block */
    int tile_cap;    /* variant 5: most candidates a tile may sort; 0: TILE_MAX_REGION */
    mdnl_dbuf tcount, tstart, tslot, tpos, torder, tcell, ttemp, tover; /* variants 5, 6: unstable binning */
    mdnl_cells_view view; /* the cell list the variants walk: cells.view or the unstable one */
};

extern "C" mdnl_status mdnl_cuda_ctx_create(mdnl_cuda_ctx **out)
{
    *out = NULL;
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        (void)cudaGetLastError();
        return mdnl_error(MDNL_ERR_RESOURCE, "CUDA: no usable device");
    }
    mdnl_cuda_ctx *c = (mdnl_cuda_ctx *)calloc(1, sizeof *c);
    if (!c)
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for a CUDA context");
    c->stage_cap = 32;
    c->smem_budget = -1;
    c->cell_variant = 0;
    mdnl_status st = MDNL_OK;
    cudaError_t e;
#define CTX_TRY(call)                                                                                                  \
    if ((e = (call)) != cudaSuccess) {                                                                                 \
        st = mdnl_cuda_fail(e, #call, __FILE__, __LINE__);                                                             \
        goto fail;                                                                                                     \
    }
    CTX_TRY(cudaSetDevice(mdnl_cuda_device_index()));
    CTX_TRY(cudaDeviceGetAttribute(&c->smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, mdnl_cuda_device_index()));
    CTX_TRY(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    CTX_TRY(cudaMallocHost((void **)&c->h_small, 8 * sizeof(int64_t)));
    for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
        for (int b = 0; b < 2; ++b)
            CTX_TRY(cudaEventCreate(&c->ev[s][b]));
    CTX_TRY(cudaEventCreate(&c->ev_total[0]));
    CTX_TRY(cudaEventCreate(&c->ev_total[1]));
#undef CTX_TRY
    *out = c;
    return MDNL_OK;
fail:
    mdnl_cuda_ctx_free(c);
    return st;
}

extern "C" void mdnl_cuda_ctx_free(mdnl_cuda_ctx *c)
{
    if (!c)
        return;
    if (c->stream)
        cudaStreamSynchronize(c->stream);
    mdnl_dbuf *bufs[] = {&c->pos,   &c->counts, &c->offsets, &c->j,    &c->d,
                         &c->stage, &c->ccount, &c->images,  &c->flags, &c->temp,
                         &c->tcount, &c->tstart, &c->tslot, &c->tpos, &c->torder, &c->tcell, &c->ttemp, &c->tover};
    for (mdnl_dbuf *b : bufs)
        mdnl_dbuf_free(b);
    mdnl_cells_cuda_free(&c->cells);
    if (c->h_small)
        cudaFreeHost(c->h_small);
    for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
        for (int b = 0; b < 2; ++b)
            if (c->ev[s][b])
                cudaEventDestroy(c->ev[s][b]);
    for (int b = 0; b < 2; ++b)
        if (c->ev_total[b])
            cudaEventDestroy(c->ev_total[b]);
    if (c->stream)
        cudaStreamDestroy(c->stream);
    free(c);
}

extern "C" void *mdnl_cuda_ctx_stream(mdnl_cuda_ctx *c) { return (void *)c->stream; }

extern "C" const char *mdnl_cuda_stage_name(int s)
{
    static const char *const names[MDNL_CUDA_NSTAGES] = {"bin/sort", "count", "scan", "fill", "row sort"};
    return s >= 0 && s < MDNL_CUDA_NSTAGES ? names[s] : "?";
}

extern "C" void mdnl_cuda_ctx_set_timing(mdnl_cuda_ctx *c, int on) { c->timing = on; }

extern "C" void mdnl_cuda_ctx_stage_ms(const mdnl_cuda_ctx *c, double ms[MDNL_CUDA_NSTAGES])
{
    for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
        ms[s] = c->stage_ms[s];
}

extern "C" double mdnl_cuda_ctx_total_ms(const mdnl_cuda_ctx *c) { return c->total_ms; }

extern "C" void mdnl_cuda_ctx_set_stage_capacity(mdnl_cuda_ctx *c, int k) { c->stage_cap = k < 1 ? 1 : k; }
extern "C" int64_t mdnl_cuda_ctx_retries(const mdnl_cuda_ctx *c) { return c->retries; }
extern "C" void mdnl_cuda_ctx_set_smem_budget(mdnl_cuda_ctx *c, int bytes) { c->smem_budget = bytes; }
extern "C" void mdnl_cuda_ctx_set_cell_variant(mdnl_cuda_ctx *c, int v)
{
    c->cell_variant = v >= 0 && v <= 9 ? v : 0;
}
extern "C" void mdnl_cuda_ctx_set_tile_capacity(mdnl_cuda_ctx *c, int candidates)
{
    c->tile_cap = candidates > 0 ? candidates : 0;
}

extern "C" mdnl_method mdnl_nlist_cuda_auto(const mdnl_geom *g)
{
    /* Below a few hundred atoms one brute-force launch beats the cell
     * list's five (measured: tools/bench/RESULTS.md). */
    return g->natoms <= 256 ? MDNL_METHOD_BRUTE_NOATOMIC : MDNL_METHOD_CELL;
}

static mdnl_status stage_mark(mdnl_cuda_ctx *c, int s, int end)
{
    if (!c->timing)
        return MDNL_OK;
    MDNL_CUDA_CHECK(cudaEventRecord(c->ev[s][end], c->stream));
    c->used[s] = 1;
    return MDNL_OK;
}

#define STAGE(s, end)                                                                                                  \
    do {                                                                                                               \
        mdnl_status stage_st_ = stage_mark(ctx, (s), (end));                                                           \
        if (stage_st_ != MDNL_OK)                                                                                      \
            return stage_st_;                                                                                          \
    } while (0)

/* Scans counts[0..n] (counts[n] == 0) into offsets on the stream, without
 * waiting. */
static mdnl_status scan_counts(mdnl_cuda_ctx *ctx, int n)
{
    unsigned long long *counts = (unsigned long long *)ctx->counts.ptr;
    int64_t *offsets = (int64_t *)ctx->offsets.ptr;
    size_t bytes = 0;
    MDNL_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, bytes, counts, offsets, n + 1, ctx->stream));
    mdnl_status st = mdnl_dbuf_reserve(&ctx->temp, bytes, "scan scratch");
    if (st != MDNL_OK)
        return st;
    bytes = ctx->temp.cap;
    MDNL_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(ctx->temp.ptr, bytes, counts, offsets, n + 1, ctx->stream));
    return MDNL_OK;
}

/* scan_counts, then reads back the pair count (a synchronisation) and sizes
 * the output arrays. */
static mdnl_status scan_and_size(mdnl_cuda_ctx *ctx, int n, int64_t *npairs, int *maxlen = nullptr,
                                 int *maxregion = nullptr)
{
    int64_t *offsets = (int64_t *)ctx->offsets.ptr;
    mdnl_status st = scan_counts(ctx, n);
    if (st != MDNL_OK)
        return st;
    MDNL_CUDA_CHECK(cudaMemcpyAsync(ctx->h_small, offsets + n, sizeof(int64_t), cudaMemcpyDeviceToHost, ctx->stream));
    if (maxlen) /* the longest row, from the count pass, in the same synchronisation */
        MDNL_CUDA_CHECK(cudaMemcpyAsync(ctx->h_small + 3, (int *)ctx->flags.ptr + 1, sizeof(int),
                                        cudaMemcpyDeviceToHost, ctx->stream));
    if (maxregion) /* variants 5, 6: the fullest cell */
        MDNL_CUDA_CHECK(cudaMemcpyAsync(ctx->h_small + 4, (int *)ctx->flags.ptr + 2, sizeof(int),
                                        cudaMemcpyDeviceToHost, ctx->stream));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
    *npairs = ctx->h_small[0];
    if (maxlen)
        memcpy(maxlen, ctx->h_small + 3, sizeof *maxlen);
    if (maxregion)
        memcpy(maxregion, ctx->h_small + 4, sizeof *maxregion);
    const size_t np = (size_t)(*npairs > 0 ? *npairs : 1);
    if ((st = mdnl_dbuf_reserve(&ctx->j, np * sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->d, np * sizeof(float), "neighbor distances")) != MDNL_OK)
        return st;
    return MDNL_OK;
}

/* Shared-memory keys per block for the rows kernel, from the average row. */
static long long rows_smem_keys(const mdnl_cuda_ctx *ctx, int n, int64_t npairs)
{
    long long budget = ctx->smem_budget >= 0 ? ctx->smem_budget : 96 * 1024;
    if (budget > ctx->smem_optin - 1024)
        budget = ctx->smem_optin - 1024;
    const double avg = n > 0 ? (double)npairs / n : 0;
    long long want = (long long)(avg * ROWS_T * 1.25) + 256;
    long long keys = budget / 8;
    return want < keys ? want : keys;
}

template <int MODE, bool FULL>
static mdnl_status launch_rows(mdnl_cuda_ctx *ctx, const mdnl_geom *g, int n, int64_t npairs, int cap, int nchunk)
{
    const long long keys = rows_smem_keys(ctx, n, npairs);
    const size_t smem = (size_t)keys * sizeof(uint64_t);
    MDNL_CUDA_CHECK(cudaFuncSetAttribute(rows_kernel<MODE, FULL>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)smem));
    rows_kernel<MODE, FULL><<<(n + ROWS_T - 1) / ROWS_T, ROWS_T, smem, ctx->stream>>>(
        *g, ctx->view, n, (const uint64_t *)ctx->stage.ptr, cap, (const unsigned *)ctx->ccount.ptr, nchunk,
        (const int64_t *)ctx->offsets.ptr,
        (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr, keys, (int *)ctx->flags.ptr);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    return MDNL_OK;
}

/* Chunks of the partner range per atom, so that the brute-force grids have
 * about 8 blocks per multiprocessor of a 132-SM GPU even for small N, with at
 * least 512 partners per chunk. */
static int brute_chunks(int n, int partners)
{
    const int bx = (n + BRUTE_T - 1) / BRUTE_T;
    int c = (132 * 8 + bx - 1) / bx;
    const int most = partners / 512 > 1 ? partners / 512 : 1;
    if (c > most)
        c = most;
    if (c > 65535)
        c = 65535;
    return c < 1 ? 1 : c;
}

static mdnl_status upload_images(mdnl_cuda_ctx *ctx, const mdnl_geom *g, int *nimg)
{
    const int m0 = g->pbc[0] ? g->image_max[0] : 0;
    const int m1 = g->pbc[1] ? g->image_max[1] : 0;
    const int m2 = g->pbc[2] ? g->image_max[2] : 0;
    const int total = (2 * m0 + 1) * (2 * m1 + 1) * (2 * m2 + 1);
    mdnl_status st = mdnl_dbuf_reserve(&ctx->images, (size_t)total * sizeof(float4), "image shifts");
    if (st != MDNL_OK)
        return st;
    images_kernel<<<(total + 127) / 128, 128, 0, ctx->stream>>>(*g, m0, m1, m2, (float4 *)ctx->images.ptr);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    *nimg = total;
    return MDNL_OK;
}

/* Variant 3's fill (warp per atom, rows sorted in registers) over ctx->cells,
 * after a count pass; `longest` sizes the per-warp buffer. */
template <bool FULL>
static mdnl_status launch_warp_fill(mdnl_cuda_ctx *ctx, const mdnl_geom *g, int n, int longest)
{
    const unsigned blocks = (unsigned)(((int64_t)n * 32 + WARP_T - 1) / WARP_T);
    const int64_t *off = (const int64_t *)ctx->offsets.ptr;
    int32_t *jo = (int32_t *)ctx->j.ptr;
    float *dout = (float *)ctx->d.ptr;
    int *err = (int *)ctx->flags.ptr;
    /* rows longer than 256 go through the (slow) global path */
    if (longest <= 32)
        cell_warp_fill_kernel<FULL, 1><<<blocks, WARP_T, 0, ctx->stream>>>(*g, ctx->view, off, jo, dout, err);
    else if (longest <= 64)
        cell_warp_fill_kernel<FULL, 2><<<blocks, WARP_T, 0, ctx->stream>>>(*g, ctx->view, off, jo, dout, err);
    else if (longest <= 128)
        cell_warp_fill_kernel<FULL, 4><<<blocks, WARP_T, 0, ctx->stream>>>(*g, ctx->view, off, jo, dout, err);
    else
        cell_warp_fill_kernel<FULL, 8><<<blocks, WARP_T, 0, ctx->stream>>>(*g, ctx->view, off, jo, dout, err);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    return MDNL_OK;
}

/* Variant 5's tile shape and lanes per atom for this geometry; false when
 * the geometry rules it out: a periodic axis too short to hold the stencil
 * without meeting a cell twice (images: the row order would no longer be
 * the candidates' index order), or more stencil columns than a block has
 * threads. MDNL_TILE="T0,T1,T2,G" (environment) overrides the shape, for
 * tuning. */
static bool tile_shape(const mdnl_geom *g, int n, tile_args *ta, int *lanes)
{
    int span[3];
    for (int k = 0; k < 3; ++k) {
        if (g->pbc[k] && 2 * g->stencil[k] + 1 > g->ncell[k])
            return false;
        span[k] = 2 * g->stencil[k];
    }
    auto cols = [&](const int *t) {
        const long long a = t[0] + span[0] < g->ncell[0] ? t[0] + span[0] : g->ncell[0];
        const long long b = t[1] + span[1] < g->ncell[1] ? t[1] + span[1] : g->ncell[1];
        return a * b;
    };
    auto fits = [&](const int *t) {
        for (int k = 0; k < 3; ++k)
            if (t[k] < 1 || t[k] > g->ncell[k] || (g->pbc[k] && t[k] + span[k] > g->ncell[k]))
                return false;
        return cols(t) <= TILE_MAXCOL;
    };
    int t[3] = {1, 1, 1};
    if (!fits(t))
        return false;
    const double rho = (double)n / (double)g->ncells;
    int G = 0;
    const char *env = getenv("MDNL_TILE");
    int e[4];
    if (env && sscanf(env, "%d,%d,%d,%d", &e[0], &e[1], &e[2], &e[3]) == 4) {
        for (int k = 0; k < 3; ++k)
            t[k] = e[k] < 1 ? 1 : e[k] > g->ncell[k] ? g->ncell[k] : e[k];
        G = e[3];
        /* shrink until it fits */
        for (int k = 2; k >= 0 && !fits(t); --k)
            while (t[k] > 1 && !fits(t))
                --t[k];
    } else {
        /* grow z, y, x in turn while the tile holds fewer than ~12 atoms
         * (more atoms share the staging and the sort, but a larger region
         * costs every atom more tests and more shared memory: on lj-1m, 13
         * atoms per cell, the fill took 1.61 ms with one cell per tile and
         * 1.85 with 1x1x2 on an H100, tools/bench/RESULTS.md) */
        for (int round = 0; round < 16 && rho * t[0] * t[1] * t[2] < 12.0; ++round) {
            const int k = 2 - round % 3;
            int u[3] = {t[0], t[1], t[2]};
            u[k] *= 2;
            if (fits(u))
                t[k] = u[k];
        }
    }
    if (G != 4 && G != 8 && G != 16 && G != 32) {
        double region = rho;
        for (int k = 0; k < 3; ++k)
            region *= t[k] + span[k] < g->ncell[k] ? t[k] + span[k] : g->ncell[k];
        G = region >= 128 ? 32 : 8;
    }
    G = G > 8 ? 32 : 8;
    for (int k = 0; k < 3; ++k) {
        ta->t[k] = t[k];
        ta->nt[k] = (g->ncell[k] + t[k] - 1) / t[k];
    }
    *lanes = G;
    return true;
}

template <bool FULL, int G, int K>
static mdnl_status launch_tile_fill_gk(mdnl_cuda_ctx *ctx, const mdnl_geom *g, unsigned blocks, tile_args ta, int bits,
                                       int second)
{
    const size_t smem = (size_t)K * TILE_T * (2 * sizeof(float4) + 2);
    MDNL_CUDA_CHECK(cudaFuncSetAttribute(tile_fill_kernel<FULL, G, K>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)smem));
    tile_fill_kernel<FULL, G, K><<<blocks, TILE_T, smem, ctx->stream>>>(
        *g, ctx->view, ta, bits, (const int64_t *)ctx->offsets.ptr, (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr,
        (int *)ctx->flags.ptr, (int *)ctx->flags.ptr + 3, (int *)ctx->tover.ptr, second);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    return MDNL_OK;
}

/* Items per thread of the block sort for `region` candidates. */
static int tile_items(long long region)
{
    return region <= 2 * TILE_T ? 2 : region <= 4 * TILE_T ? 4 : region <= 8 * TILE_T ? 8 : 16;
}

template <bool FULL, int G>
static mdnl_status launch_tile_fill_g(mdnl_cuda_ctx *ctx, const mdnl_geom *g, unsigned blocks, tile_args ta, int bits,
                                      int K, int second)
{
    switch (K) {
    case 2:
        return launch_tile_fill_gk<FULL, G, 2>(ctx, g, blocks, ta, bits, second);
    case 4:
        return launch_tile_fill_gk<FULL, G, 4>(ctx, g, blocks, ta, bits, second);
    case 8:
        return launch_tile_fill_gk<FULL, G, 8>(ctx, g, blocks, ta, bits, second);
    default:
        return launch_tile_fill_gk<FULL, G, 16>(ctx, g, blocks, ta, bits, second);
    }
}

#define TILE_MAX_REGION (16 * TILE_T)

/* The cell list of ctx->view by an atomic counting sort (bin, CUB scan of
 * the cell counts, scatter): within a cell the order follows the atomics, so
 * it is only for kernels whose output does not depend on it (every neighbor
 * list variant sorts its rows; energy and rdf keep the stable list of
 * cells_cuda.cuh). The fullest cell's population goes to flags[2]. */
static mdnl_status build_fast_cells(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n)
{
    mdnl_status st;
    const int ncells = (int)g->ncells;
    if (g->ncells >= INT32_MAX)
        return mdnl_error(MDNL_ERR_INPUT, "%lld cells: the CUDA cell list handles at most %d", (long long)g->ncells,
                          INT32_MAX - 1);
    size_t scan_bytes = 0;
    MDNL_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, (int *)nullptr, (int *)nullptr, ncells + 1,
                                                  ctx->stream));
    if ((st = mdnl_dbuf_reserve(&ctx->tcount, (size_t)(ncells + 1) * sizeof(int), "cell counts")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->tstart, (size_t)(ncells + 1) * sizeof(int), "cell offsets")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->tslot, (size_t)n * sizeof(int), "cell slots")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->tpos, (size_t)n * sizeof(float4), "cell-ordered positions")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->torder, (size_t)n * sizeof(int), "cell order")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->tcell, (size_t)n * sizeof(int), "cell of slot")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->ttemp, scan_bytes, "cell scan scratch")) != MDNL_OK)
        return st;
    int *count = (int *)ctx->tcount.ptr, *start = (int *)ctx->tstart.ptr, *slot = (int *)ctx->tslot.ptr;
    MDNL_CUDA_CHECK(cudaMemsetAsync(count, 0, (size_t)(ncells + 1) * sizeof(int), ctx->stream));
    fast_bin_kernel<<<(n + 255) / 256, 256, 0, ctx->stream>>>(*g, pos, n, count, slot, (int *)ctx->flags.ptr + 2);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    size_t tb = ctx->ttemp.cap;
    MDNL_CUDA_CHECK(cub::DeviceScan::ExclusiveSum(ctx->ttemp.ptr, tb, count, start, ncells + 1, ctx->stream));
    fast_scatter_kernel<<<(n + 255) / 256, 256, 0, ctx->stream>>>(*g, pos, n, start, slot, (float4 *)ctx->tpos.ptr,
                                                                  (int *)ctx->torder.ptr, (int *)ctx->tcell.ptr);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    ctx->view.natoms = n;
    ctx->view.ncells = ncells;
    ctx->view.start = start;
    ctx->view.pos = (const float4 *)ctx->tpos.ptr;
    ctx->view.order = (const int *)ctx->torder.ptr;
    ctx->view.cell = (const int *)ctx->tcell.ptr;
    ctx->view.rank = nullptr;
    return MDNL_OK;
}

/* Variant 5 (see the tile kernels): counting-sort binning, variant 3's
 * thread-per-atom count pass, scan, tile fill. When a region may exceed what
 * a block sorts (the fullest cell times the region's cells), the fill is
 * variant 3's instead; the counts are the same. */
template <bool FULL>
static mdnl_status build_tile(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, const tile_args &ta,
                              int G, int64_t *npairs)
{
    mdnl_status st;
    STAGE(MDNL_CUDA_STAGE_BIN, 0);
    if ((st = build_fast_cells(ctx, g, pos, n)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_BIN, 1);
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    cell_count_kernel<FULL><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
        *g, ctx->view, (unsigned long long *)ctx->counts.ptr, (int *)ctx->flags.ptr + 1);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    int longest = 0, maxcell = 0;
    if ((st = scan_and_size(ctx, n, npairs, &longest, &maxcell)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_FILL, 0);
    long long bound = maxcell;
    for (int k = 0; k < 3; ++k) {
        const int w = ta.t[k] + 2 * g->stencil[k];
        bound *= w < g->ncell[k] ? w : g->ncell[k];
    }
    const int most = ctx->tile_cap > 0 && ctx->tile_cap < TILE_MAX_REGION ? ctx->tile_cap : TILE_MAX_REGION;
    if (bound <= most) {
        int bits = 1;
        while (bits < 31 && (1u << bits) <= (unsigned)n)
            ++bits;
        const unsigned tiles = (unsigned)((long long)ta.nt[0] * ta.nt[1] * ta.nt[2]);
        /* The first launch sizes shared memory for the typical region (the
         * mean plus 5%), which keeps 8 blocks per multiprocessor; the few
         * larger regions are listed and done by a second launch sized for
         * the bound. */
        double mean = (double)n / (double)g->ncells;
        for (int k = 0; k < 3; ++k) {
            const int w = ta.t[k] + 2 * g->stencil[k];
            mean *= w < g->ncell[k] ? w : g->ncell[k];
        }
        const int k_over = tile_items(bound);
        int k_main = tile_items((long long)(1.05 * mean) + 1);
        if (k_main > k_over)
            k_main = k_over;
        if ((st = mdnl_dbuf_reserve(&ctx->tover, (size_t)tiles * sizeof(int), "tile list")) != MDNL_OK)
            return st;
        st = G == 32 ? launch_tile_fill_g<FULL, 32>(ctx, g, tiles, ta, bits, k_main, 0)
                     : launch_tile_fill_g<FULL, 8>(ctx, g, tiles, ta, bits, k_main, 0);
        if (st == MDNL_OK && k_over > k_main) {
            const unsigned few = tiles < 528 ? tiles : 528;
            st = G == 32 ? launch_tile_fill_g<FULL, 32>(ctx, g, few, ta, bits, k_over, 1)
                         : launch_tile_fill_g<FULL, 8>(ctx, g, few, ta, bits, k_over, 1);
        }
        if (st != MDNL_OK)
            return st;
    } else if ((2 * g->stencil[0] + 1) * (2 * g->stencil[1] + 1) * (2 * g->stencil[2] + 1) <= 32) {
        if ((st = launch_warp_fill<FULL>(ctx, g, n, longest)) != MDNL_OK)
            return st;
    } else if ((st = launch_rows<0, FULL>(ctx, g, n, *npairs, 0, 0)) != MDNL_OK) {
        return st;
    }
    STAGE(MDNL_CUDA_STAGE_FILL, 1);
    return MDNL_OK;
}

/* Variant 8's grid: `g` refined by 2, or false when a row could hold an atom
 * twice (a periodic axis of fewer than 2 stencil + 1 refined cells: a cell
 * met through two images) or j would not fit its 26 bits. */
static bool prune_grid(const mdnl_geom *g, mdnl_geom *fg)
{
    if (g->natoms >= (1 << 26))
        return false;
    *fg = mdnl_geom_refine(g, 2);
    for (int k = 0; k < 3; ++k)
        if (fg->pbc[k] && fg->ncell[k] < 2 * fg->stencil[k] + 1)
            return false;
    return true;
}

template <bool FULL, int N, int PT, bool KEY4>
static mdnl_status launch_prune_fill(mdnl_cuda_ctx *ctx, const mdnl_geom *fg, const mdnl_prune &pr,
                                     const float4 *pos, int n)
{
    const size_t smem = (size_t)PT * (N + 1) * (KEY4 ? 1 : 2) * sizeof(unsigned);
    auto kern = prune_fill_kernel<FULL, N, PT, KEY4>;
    MDNL_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    kern<<<(n + PT - 1) / PT, PT, smem, ctx->stream>>>(*fg, ctx->view, pr, pos, (const int64_t *)ctx->offsets.ptr,
                                                       (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr,
                                                       (int *)ctx->flags.ptr);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    return MDNL_OK;
}

/* Variant 8 (see prune_fill_kernel) on the refined grid fg of prune_grid:
 * counting-sort binning, pruned count pass, scan, pruned fill. N (the
 * network) from the longest row: 32 or 64; 64 threads a fill block and the
 * 4-byte row layout (KEY4) where j fits, the layout, block size, carveout
 * and grid that measured best (tools/bench/RESULTS.md, "Cell variant 8"). */
template <bool FULL>
static mdnl_status build_pruned(mdnl_cuda_ctx *ctx, const mdnl_geom *fg, const float4 *pos, int n, int64_t *npairs)
{
    mdnl_status st;
    const mdnl_prune pr = mdnl_prune_args(fg);
    STAGE(MDNL_CUDA_STAGE_BIN, 0);
    if ((st = build_fast_cells(ctx, fg, pos, n)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_BIN, 1);
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    prune_count_kernel<FULL><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
        *fg, ctx->view, pr, (unsigned long long *)ctx->counts.ptr, (int *)ctx->flags.ptr + 1);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    int longest = 0;
    if ((st = scan_and_size(ctx, n, npairs, &longest)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_FILL, 0);
    const bool key4 = n < (1 << 27);
    if (longest <= 32)
        st = key4 ? launch_prune_fill<FULL, 32, 64, true>(ctx, fg, pr, pos, n)
                  : launch_prune_fill<FULL, 32, 64, false>(ctx, fg, pr, pos, n);
    else
        st = key4 ? launch_prune_fill<FULL, 64, 64, true>(ctx, fg, pr, pos, n)
                  : launch_prune_fill<FULL, 64, 64, false>(ctx, fg, pr, pos, n);
    if (st != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_FILL, 1);
    return MDNL_OK;
}

/* Whether variant 9 can build on `g` (see its kernels): each atom at most
 * once in a row with shifts in -1..1, at most 32 candidate ranges per cell
 * (a periodic z window splits once at most), j < 2^27. */
static bool v9_fits(const mdnl_geom *g)
{
    if (g->natoms >= (1 << 27))
        return false;
    for (int k = 0; k < 3; ++k)
        if (g->pbc[k] && g->ncell[k] < 2 * g->stencil[k] + 1)
            return false;
    return (2 * g->stencil[0] + 1) * (2 * g->stencil[1] + 1) * (g->pbc[2] ? 2 : 1) <= 32;
}

/* Candidates per atom of the cell list (the density the default goes by). */
static double cell_candidates(const mdnl_geom *g)
{
    double cand = (double)g->natoms / (double)g->ncells;
    for (int k = 0; k < 3; ++k)
        cand *= g->ncell[k] < 2 * g->stencil[k] + 1 ? g->ncell[k] : 2 * g->stencil[k] + 1;
    return cand;
}

/* The mean row of a full list, from the atoms per cell volume (t-frame
 * cells: exact for orthorhombic boxes, an estimate for skewed ones). */
static double v9_row_estimate(const mdnl_geom *g)
{
    double vol = 1.0;
    for (int k = 0; k < 3; ++k)
        vol *= 1.0 / (double)g->inv_cell[k];
    const double rc = g->cutoff;
    return (double)g->natoms / (double)g->ncells / vol * (4.0 / 3.0) * M_PI * rc * rc * rc;
}

/* Variant 9 (see its kernels): counting-sort binning, one walk into the
 * slab, scan, rows sorted and written, the long rows last. No
 * synchronisation until the caller's last one: the output arrays keep their
 * size from the frame before or an estimate (the mean row times 1.2), and a
 * CSR that outgrew them is detected there and built again. */
template <bool FULL>
static mdnl_status build_v9(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, int64_t *npairs)
{
    mdnl_status st;
    STAGE(MDNL_CUDA_STAGE_BIN, 0);
    if ((st = build_fast_cells(ctx, g, pos, n)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_BIN, 1);
    size_t want = (size_t)((double)n * (1.2 * v9_row_estimate(g) + 1.0)) + 1;
    if (want > (size_t)n * V9_CAP + 1)
        want = (size_t)n * V9_CAP + 1;
    if ((st = mdnl_dbuf_reserve(&ctx->stage, (size_t)n * V9_CAP * sizeof(unsigned), "neighbor slab")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->j, want * sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->d, want * sizeof(float), "neighbor distances")) != MDNL_OK)
        return st;
    const size_t cj = ctx->j.cap / sizeof(int32_t), cd = ctx->d.cap / sizeof(float);
    const long long cap = (long long)(cj < cd ? cj : cd);
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    const unsigned wblocks = (unsigned)((g->ncells + V9_T / 32 - 1) / (V9_T / 32));
    v9_walk_kernel<FULL><<<wblocks, V9_T, 0, ctx->stream>>>(*g, ctx->view, (unsigned *)ctx->stage.ptr,
                                                           (unsigned long long *)ctx->counts.ptr,
                                                           (int *)ctx->flags.ptr + 1);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    int64_t *offsets = (int64_t *)ctx->offsets.ptr;
    if ((st = scan_counts(ctx, n)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_SORT, 0);
    int *flags = (int *)ctx->flags.ptr;
    v9_rows_kernel<<<(n + V9_RT - 1) / V9_RT, V9_RT, 0, ctx->stream>>>(
        *g, (const unsigned *)ctx->stage.ptr, n, offsets, pos, cap, (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr,
        (long long *)(flags + FLAG_NPAIRS), flags + FLAG_OUTGROWN);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_SORT, 1);
    STAGE(MDNL_CUDA_STAGE_FILL, 0);
    const int lblocks = (n + 127) / 128 < 8 * 132 ? (n + 127) / 128 : 8 * 132; /* a grid-stride loop */
    v9_long_kernel<FULL><<<lblocks, 128, 0, ctx->stream>>>(*g, ctx->view, offsets, cap, (int32_t *)ctx->j.ptr,
                                                           (float *)ctx->d.ptr, flags);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_FILL, 1);
    ctx->deferred = 2; /* the caller reads the pair count and the outgrown flag back */
    *npairs = 0;
    return MDNL_OK;
}

/* The cell variant a build starts with (the context's, or the default by
 * density); build_cell may still fall back from it. Variant 7 only while
 * rows are short enough for its registers (~0.15-0.25 hits per candidate:
 * up to 32 candidates, rows of ~5-8), since its copy sorts longer rows in
 * global memory; variant 6 up to 100. */
static int cell_variant_first(const mdnl_cuda_ctx *ctx, const mdnl_geom *g)
{
    if (ctx->cell_variant != 0)
        return ctx->cell_variant;
    const double cand = cell_candidates(g);
    if (cand > 100)
        return v9_fits(g) && v9_row_estimate(g) <= 0.9 * V9_CAP ? 9 : 5;
    return cand > 32 ? 6 : 7;
}

/* Whether the cell build writes every row count, counts[n] included
 * (variants 7 and 9), so that the counts need no clearing first. */
static bool cell_writes_counts(const mdnl_cuda_ctx *ctx, const mdnl_geom *g)
{
    const int v = cell_variant_first(ctx, g);
    return v == 7 || (v == 9 && v9_fits(g));
}

template <bool FULL>
static mdnl_status build_cell(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n, int64_t *npairs)
{
    mdnl_status st;
    const double cand = cell_candidates(g); /* candidates per atom */
    /* The default (H100, tools/bench/RESULTS.md): dense rows (lj-1m, ~360 candidates per atom) take the tile fill of
     * variant 5, where a tile can hold each cell once (else variant 3, rows sorted per warp); sparse rows (graphene-1m,
     * ~13 candidates; up to 32) take variant 7: variant 2's single staged traversal over the unstable binning with rows
     * sorted in registers, stored coalesced, copied without a sort and no host synchronisation before the end
     * (0.20-0.23 ms against variant 6's 0.28); rows of up to 100 candidates take variant 6. Staging wins only while
     * rows are short (variant 7's copy sorts rows longer than its registers in global memory: 20 ms on lj-1m). */
    int variant = cell_variant_first(ctx, g);
    if (variant == 9) {
        if (v9_fits(g))
            return build_v9<FULL>(ctx, g, pos, n, npairs);
        variant = 5; /* images: a row could meet an atom twice */
    }
    if (variant == 8) {
        mdnl_geom fg;
        if (prune_grid(g, &fg))
            return build_pruned<FULL>(ctx, &fg, pos, n, npairs);
        variant = 5; /* images: a row could meet an atom twice */
    }
    if (variant == 5) {
        tile_args ta;
        int G = 32;
        if (tile_shape(g, n, &ta, &G))
            return build_tile<FULL>(ctx, g, pos, n, ta, G, npairs);
        variant = 3; /* images: a tile would meet a cell twice */
    }
    STAGE(MDNL_CUDA_STAGE_BIN, 0);
    if (variant == 6 || variant == 7) {
        if ((st = build_fast_cells(ctx, g, pos, n)) != MDNL_OK)
            return st;
        if (variant == 6)
            variant = 2;
    } else {
        if ((st = mdnl_cells_cuda_build(&ctx->cells, g, pos, ctx->stream)) != MDNL_OK)
            return st;
        ctx->view = ctx->cells.view;
    }
    STAGE(MDNL_CUDA_STAGE_BIN, 1);
    /* the warp variants hold at most 32 candidate ranges (one per lane) */
    if ((variant == 3 || variant == 4) &&
        (2 * g->stencil[0] + 1) * (2 * g->stencil[1] + 1) * (2 * g->stencil[2] + 1) > 32)
        variant = 1;
    if (variant == 3 || variant == 4) {
        int *maxlen = (int *)ctx->flags.ptr + 1;
        STAGE(MDNL_CUDA_STAGE_COUNT, 0);
        if (variant == 3)
            cell_count_kernel<FULL><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
                *g, ctx->view, (unsigned long long *)ctx->counts.ptr, maxlen);
        else
            cell_warp_count_kernel<FULL><<<(unsigned)(((int64_t)n * 32 + WARP_T - 1) / WARP_T), WARP_T, 0,
                                           ctx->stream>>>(*g, ctx->view, (unsigned long long *)ctx->counts.ptr,
                                                          maxlen);
        MDNL_CUDA_LAUNCHED(ctx->stream);
        STAGE(MDNL_CUDA_STAGE_COUNT, 1);
        STAGE(MDNL_CUDA_STAGE_SCAN, 0);
        int longest = 0;
        if ((st = scan_and_size(ctx, n, npairs, &longest)) != MDNL_OK)
            return st;
        STAGE(MDNL_CUDA_STAGE_SCAN, 1);
        STAGE(MDNL_CUDA_STAGE_FILL, 0);
        if ((st = launch_warp_fill<FULL>(ctx, g, n, longest)) != MDNL_OK)
            return st;
        STAGE(MDNL_CUDA_STAGE_FILL, 1);
        return MDNL_OK;
    }
    if (variant == 7) {
        /* No synchronisation until the caller's last one: the output is
         * sized for every row at the stage capacity, and a staged pass that
         * overflowed it is detected there (the longest row, read back with
         * the pair count) and built again with a larger capacity. */
        int *maxlen = (int *)ctx->flags.ptr + 1;
        const int cap = ctx->stage_cap;
        const size_t most = (size_t)cap * (size_t)n;
        if ((st = mdnl_dbuf_reserve(&ctx->stage, most * sizeof(uint64_t), "neighbor stage")) != MDNL_OK ||
            (st = mdnl_dbuf_reserve(&ctx->j, most * sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
            (st = mdnl_dbuf_reserve(&ctx->d, most * sizeof(float), "neighbor distances")) != MDNL_OK)
            return st;
        STAGE(MDNL_CUDA_STAGE_COUNT, 0);
        /* K (rows kept sorted in registers): 4 for the sparsest rows
         * (graphene: 3 pairs, ~13 candidates per atom), else 8;
         * MDNL_STAGE_K=4|8 (environment) overrides it, for tuning */
        int K = cand <= 16 ? 4 : 8;
        const char *env = getenv("MDNL_STAGE_K");
        if (env && (atoi(env) == 4 || atoi(env) == 8))
            K = atoi(env);
        if (K == 4)
            cell_stage_sorted_kernel<FULL, 4><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
                *g, ctx->view, (uint64_t *)ctx->stage.ptr, cap, (unsigned long long *)ctx->counts.ptr, maxlen);
        else
            cell_stage_sorted_kernel<FULL, 8><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
                *g, ctx->view, (uint64_t *)ctx->stage.ptr, cap, (unsigned long long *)ctx->counts.ptr, maxlen);
        MDNL_CUDA_LAUNCHED(ctx->stream);
        STAGE(MDNL_CUDA_STAGE_COUNT, 1);
        STAGE(MDNL_CUDA_STAGE_SCAN, 0);
        int64_t *offsets = (int64_t *)ctx->offsets.ptr;
        if ((st = scan_counts(ctx, n)) != MDNL_OK)
            return st;
        STAGE(MDNL_CUDA_STAGE_SCAN, 1);
        STAGE(MDNL_CUDA_STAGE_SORT, 0);
        if (K == 4)
            stage_copy_kernel<4><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
                ctx->view.order, n, (const uint64_t *)ctx->stage.ptr, cap, maxlen, offsets, (int32_t *)ctx->j.ptr,
                (float *)ctx->d.ptr, (long long *)((int *)ctx->flags.ptr + FLAG_NPAIRS));
        else
            stage_copy_kernel<8><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
                ctx->view.order, n, (const uint64_t *)ctx->stage.ptr, cap, maxlen, offsets, (int32_t *)ctx->j.ptr,
                (float *)ctx->d.ptr, (long long *)((int *)ctx->flags.ptr + FLAG_NPAIRS));
        MDNL_CUDA_LAUNCHED(ctx->stream);
        STAGE(MDNL_CUDA_STAGE_SORT, 1);
        ctx->deferred = 1; /* the caller reads flags (pair count included) back */
        *npairs = 0;
        return MDNL_OK;
    }
    if (variant == 2) {
        int *maxlen = (int *)ctx->flags.ptr + 1;
        STAGE(MDNL_CUDA_STAGE_COUNT, 0);
        for (;;) {
            const int cap = ctx->stage_cap;
            if ((st = mdnl_dbuf_reserve(&ctx->stage, (size_t)cap * (size_t)n * sizeof(uint64_t), "neighbor stage")) !=
                MDNL_OK)
                return st;
            MDNL_CUDA_CHECK(cudaMemsetAsync(maxlen, 0, sizeof(int), ctx->stream));
            cell_stage_kernel<FULL><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
                *g, ctx->view, (uint64_t *)ctx->stage.ptr, cap, (unsigned long long *)ctx->counts.ptr, maxlen);
            MDNL_CUDA_LAUNCHED(ctx->stream);
            MDNL_CUDA_CHECK(
                cudaMemcpyAsync(ctx->h_small + 1, maxlen, sizeof(int), cudaMemcpyDeviceToHost, ctx->stream));
            MDNL_CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
            int longest;
            memcpy(&longest, ctx->h_small + 1, sizeof longest);
            if (longest <= cap)
                break;
            ctx->retries++;
            ctx->stage_cap = longest + longest / 8 + 1;
        }
        STAGE(MDNL_CUDA_STAGE_COUNT, 1);
        STAGE(MDNL_CUDA_STAGE_SCAN, 0);
        if ((st = scan_and_size(ctx, n, npairs)) != MDNL_OK)
            return st;
        STAGE(MDNL_CUDA_STAGE_SCAN, 1);
        STAGE(MDNL_CUDA_STAGE_SORT, 0);
        if ((st = launch_rows<3, FULL>(ctx, g, n, *npairs, ctx->stage_cap, 0)) != MDNL_OK)
            return st;
        STAGE(MDNL_CUDA_STAGE_SORT, 1);
        return MDNL_OK;
    }
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    cell_count_kernel<FULL><<<(n + 127) / 128, 128, 0, ctx->stream>>>(
        *g, ctx->view, (unsigned long long *)ctx->counts.ptr, (int *)ctx->flags.ptr + 1);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    if ((st = scan_and_size(ctx, n, npairs)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_FILL, 0);
    if ((st = launch_rows<0, FULL>(ctx, g, n, *npairs, 0, 0)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_FILL, 1);
    return MDNL_OK;
}

template <bool FULL>
static mdnl_status build_brute_atomic(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n,
                                      int64_t *npairs)
{
    mdnl_status st;
    int nimg = 0;
    if ((st = upload_images(ctx, g, &nimg)) != MDNL_OK)
        return st;
    unsigned long long *ctr = (unsigned long long *)ctx->counts.ptr;
    const int nchunk = brute_chunks(n, n / 2);
    const int chunk = (n / 2 + nchunk - 1) / nchunk > 0 ? (n / 2 + nchunk - 1) / nchunk : 1;
    const dim3 blocks((n + BRUTE_T - 1) / BRUTE_T, nchunk);
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    brute_atomic_kernel<false, FULL><<<blocks, BRUTE_T, 0, ctx->stream>>>(pos, n, chunk, (const float4 *)ctx->images.ptr,
                                                                          nimg, g->cutoff2, ctr, nullptr, nullptr,
                                                                          nullptr);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    if ((st = scan_and_size(ctx, n, npairs)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_FILL, 0);
    /* the counters become the rows' fill cursors */
    MDNL_CUDA_CHECK(cudaMemsetAsync(ctr, 0, (size_t)(n + 1) * sizeof *ctr, ctx->stream));
    brute_atomic_kernel<true, FULL><<<blocks, BRUTE_T, 0, ctx->stream>>>(
        pos, n, chunk, (const float4 *)ctx->images.ptr, nimg, g->cutoff2, ctr, (const int64_t *)ctx->offsets.ptr,
        (int32_t *)ctx->j.ptr, (float *)ctx->d.ptr);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_FILL, 1);
    STAGE(MDNL_CUDA_STAGE_SORT, 0);
    if ((st = launch_rows<2, FULL>(ctx, g, n, *npairs, 0, 0)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SORT, 1);
    return MDNL_OK;
}

template <bool FULL>
static mdnl_status build_brute_noatomic(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float4 *pos, int n,
                                        int64_t *npairs)
{
    mdnl_status st;
    int nimg = 0;
    if ((st = upload_images(ctx, g, &nimg)) != MDNL_OK)
        return st;
    int *maxlen = (int *)ctx->flags.ptr + 1;
    const int nchunk = brute_chunks(n, n);
    const int chunk = (n + nchunk - 1) / nchunk;
    if ((st = mdnl_dbuf_reserve(&ctx->ccount, (size_t)nchunk * n * sizeof(unsigned), "chunk counts")) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_COUNT, 0);
    for (;;) {
        const int cap = ctx->stage_cap;
        if ((st = mdnl_dbuf_reserve(&ctx->stage, (size_t)nchunk * cap * (size_t)n * sizeof(uint64_t),
                                    "neighbor stage")) != MDNL_OK)
            return st;
        MDNL_CUDA_CHECK(cudaMemsetAsync(maxlen, 0, sizeof(int), ctx->stream));
        brute_noatomic_kernel<FULL><<<dim3((n + BRUTE_T - 1) / BRUTE_T, nchunk), BRUTE_T, 0, ctx->stream>>>(
            pos, n, chunk, (const float4 *)ctx->images.ptr, nimg, g->cutoff2, (uint64_t *)ctx->stage.ptr, cap,
            (unsigned *)ctx->ccount.ptr, maxlen);
        MDNL_CUDA_LAUNCHED(ctx->stream);
        MDNL_CUDA_CHECK(cudaMemcpyAsync(ctx->h_small + 1, maxlen, sizeof(int), cudaMemcpyDeviceToHost, ctx->stream));
        MDNL_CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
        int longest;
        memcpy(&longest, ctx->h_small + 1, sizeof longest);
        if (longest <= cap)
            break;
        /* Overflow: rows were counted exactly but not all stored. Grow to
         * the longest row (plus a margin for the next frames) and redo. */
        ctx->retries++;
        ctx->stage_cap = longest + longest / 8 + 1;
    }
    sum_chunks_kernel<<<(n + 255) / 256, 256, 0, ctx->stream>>>((const unsigned *)ctx->ccount.ptr, n, nchunk,
                                                                (unsigned long long *)ctx->counts.ptr);
    MDNL_CUDA_LAUNCHED(ctx->stream);
    STAGE(MDNL_CUDA_STAGE_COUNT, 1);
    STAGE(MDNL_CUDA_STAGE_SCAN, 0);
    if ((st = scan_and_size(ctx, n, npairs)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SCAN, 1);
    STAGE(MDNL_CUDA_STAGE_SORT, 0);
    if ((st = launch_rows<1, FULL>(ctx, g, n, *npairs, ctx->stage_cap, nchunk)) != MDNL_OK)
        return st;
    STAGE(MDNL_CUDA_STAGE_SORT, 1);
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_nlist_build_cuda_devpos(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float *d_pos4,
                                                    mdnl_method method, mdnl_list_kind kind, mdnl_nlist_dev *out)
{
    memset(out, 0, sizeof *out);
    const int64_t n64 = g->natoms;
    if (n64 > INT32_MAX - 1)
        return mdnl_error(MDNL_ERR_INPUT, "%lld atoms in one frame: at most %d are supported", (long long)n64,
                          INT32_MAX - 1);
    const int n = (int)n64;
    if (method == MDNL_METHOD_AUTO)
        method = mdnl_nlist_cuda_auto(g);
    mdnl_status st;
    if ((st = mdnl_dbuf_reserve(&ctx->counts, (size_t)(n + 1) * sizeof(unsigned long long), "row counts")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->offsets, (size_t)(n + 1) * sizeof(int64_t), "row offsets")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->flags, FLAG_INTS * sizeof(int), "flags")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->j, sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
        (st = mdnl_dbuf_reserve(&ctx->d, sizeof(float), "neighbor distances")) != MDNL_OK)
        return st;
again:
    ctx->deferred = 0;
    for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s) {
        ctx->used[s] = 0;
        ctx->stage_ms[s] = 0;
    }
    ctx->total_ms = 0;
    if (ctx->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(ctx->ev_total[0], ctx->stream));
    if (!(method == MDNL_METHOD_CELL && cell_writes_counts(ctx, g)))
        MDNL_CUDA_CHECK(cudaMemsetAsync(ctx->counts.ptr, 0, (size_t)(n + 1) * sizeof(unsigned long long), ctx->stream));
    MDNL_CUDA_CHECK(cudaMemsetAsync(ctx->flags.ptr, 0, FLAG_INTS * sizeof(int), ctx->stream));
    int64_t npairs = 0;
    const float4 *pos = (const float4 *)d_pos4;
    const bool full = kind == MDNL_LIST_FULL;
    if (n == 0) {
        MDNL_CUDA_CHECK(cudaMemsetAsync(ctx->offsets.ptr, 0, sizeof(int64_t), ctx->stream));
    } else {
        switch (method) {
        case MDNL_METHOD_CELL:
            st = full ? build_cell<true>(ctx, g, pos, n, &npairs) : build_cell<false>(ctx, g, pos, n, &npairs);
            break;
        case MDNL_METHOD_BRUTE_ATOMIC:
            st = full ? build_brute_atomic<true>(ctx, g, pos, n, &npairs)
                      : build_brute_atomic<false>(ctx, g, pos, n, &npairs);
            break;
        case MDNL_METHOD_BRUTE_NOATOMIC:
            st = full ? build_brute_noatomic<true>(ctx, g, pos, n, &npairs)
                      : build_brute_noatomic<false>(ctx, g, pos, n, &npairs);
            break;
        default:
            return mdnl_error(MDNL_ERR_INTERNAL, "mdnl_nlist_build_cuda: unknown method %d", (int)method);
        }
        if (st != MDNL_OK)
            return st;
    }
    /* One more synchronisation: the fill's consistency flag (a count that
     * disagrees with its fill would be a bug, never silently truncated). */
    int *h_flags = (int *)(ctx->h_small + 4); /* FLAG_INTS ints, 8-byte aligned */
    MDNL_CUDA_CHECK(
        cudaMemcpyAsync(h_flags, ctx->flags.ptr, FLAG_INTS * sizeof(int), cudaMemcpyDeviceToHost, ctx->stream));
    if (ctx->timing)
        MDNL_CUDA_CHECK(cudaEventRecord(ctx->ev_total[1], ctx->stream));
    MDNL_CUDA_CHECK(cudaStreamSynchronize(ctx->stream));
    if (ctx->deferred == 2) { /* cell variant 9 */
        memcpy(&npairs, h_flags + FLAG_NPAIRS, sizeof npairs);
        if (h_flags[FLAG_OUTGROWN]) {
            /* nothing was written: grow the output to the exact size and build again */
            const size_t np = (size_t)(npairs > 0 ? npairs : 1);
            if ((st = mdnl_dbuf_reserve(&ctx->j, np * sizeof(int32_t), "neighbor indices")) != MDNL_OK ||
                (st = mdnl_dbuf_reserve(&ctx->d, np * sizeof(float), "neighbor distances")) != MDNL_OK)
                return st;
            ctx->retries++;
            goto again;
        }
    } else if (ctx->deferred) { /* cell variant 7 */
        const int longest = h_flags[1];
        if (longest > ctx->stage_cap) {
            /* the stage overflowed: rows were counted exactly but not all
             * stored (nothing was written); grow and build again */
            ctx->retries++;
            ctx->stage_cap = longest + longest / 8 + 1;
            goto again;
        }
        memcpy(&npairs, h_flags + FLAG_NPAIRS, sizeof npairs);
    }
    const int flag = h_flags[0];
    if (flag)
        return mdnl_error(MDNL_ERR_INTERNAL, "CUDA neighbor list (%s): a row's fill disagreed with its count",
                          mdnl_method_name(method));
    if (ctx->timing) {
        float ms = 0;
        MDNL_CUDA_CHECK(cudaEventElapsedTime(&ms, ctx->ev_total[0], ctx->ev_total[1]));
        ctx->total_ms = ms;
    }
    if (ctx->timing)
        for (int s = 0; s < MDNL_CUDA_NSTAGES; ++s)
            if (ctx->used[s]) {
                float ms = 0;
                MDNL_CUDA_CHECK(cudaEventElapsedTime(&ms, ctx->ev[s][0], ctx->ev[s][1]));
                ctx->stage_ms[s] = ms;
            }
    out->natoms = n;
    out->npairs = npairs;
    out->d_offsets = (const int64_t *)ctx->offsets.ptr;
    out->d_j = (const int32_t *)ctx->j.ptr;
    out->d_d = (const float *)ctx->d.ptr;
    out->d_pos4 = d_pos4;
    return MDNL_OK;
}

extern "C" mdnl_status mdnl_nlist_build_cuda_dev(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float (*h_pos4)[4],
                                                 mdnl_method method, mdnl_list_kind kind, mdnl_nlist_dev *out)
{
    const int64_t n = g->natoms;
    mdnl_status st = mdnl_dbuf_reserve(&ctx->pos, (size_t)(n > 0 ? n : 1) * 4 * sizeof(float), "positions");
    if (st != MDNL_OK)
        return st;
    if (n > 0)
        MDNL_CUDA_CHECK(cudaMemcpyAsync(ctx->pos.ptr, h_pos4, (size_t)n * 4 * sizeof(float), cudaMemcpyHostToDevice,
                                        ctx->stream));
    return mdnl_nlist_build_cuda_devpos(ctx, g, (const float *)ctx->pos.ptr, method, kind, out);
}

extern "C" mdnl_status mdnl_nlist_build_cuda(mdnl_cuda_ctx *ctx, const mdnl_geom *g, const float (*h_pos4)[4],
                                             mdnl_method method, mdnl_list_kind kind, mdnl_nlist *out_host)
{
    mdnl_nlist_dev dev;
    mdnl_status st = mdnl_nlist_build_cuda_dev(ctx, g, h_pos4, method, kind, &dev);
    if (st != MDNL_OK)
        return st;
    return mdnl_nlist_download_cuda(ctx->stream, &dev, out_host);
}

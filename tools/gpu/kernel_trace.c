/* tools/gpu/kernel_trace.c — a CUDA injection library (CUDA_INJECTION64_PATH)
 * that records, through CUPTI's activity API, when every kernel, memset and
 * memcpy of a process ran on the GPU (concurrent-kernel records: overlapping
 * kernels, programmatic dependent launches included, keep their own start
 * and end), and writes them at exit as TSV to $KTRACE_OUT (default
 * ktrace-PID.tsv): kind, name, start and end in ns (GPU clock), stream,
 * correlation id, grid size, and for a kernel the shared memory the driver
 * set for it (bytes: the SM's carveout, which L1 gets the rest of). It
 * changes nothing in mdnl; it is how the benchmark's stages are seen kernel
 * by kernel without ncu's serialisation (tools/gpu/kernel_trace.sh builds
 * it, tools/gpu/ktrace_table.py reads it).
 * Not part of the build: CUPTI is not a Debian package here (PyPI's
 * nvidia-cuda-cupti wheel has its header and library). */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BUF_BYTES (8u << 20)

static FILE *out;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, BUF_BYTES);
    *size = *buffer ? BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *rec = NULL;
    while (out && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            fprintf(out, "kernel\t%s\t%llu\t%llu\t%u\t%u\t%d\t%u\n", k->name, (unsigned long long)k->start,
                    (unsigned long long)k->end, k->streamId, k->correlationId, k->gridX * k->gridY * k->gridZ,
                    (unsigned)k->sharedMemoryExecuted);
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)rec;
            fprintf(out, "memset\t%llu\t%llu\t%llu\t%u\t%u\t0\n", (unsigned long long)m->bytes,
                    (unsigned long long)m->start, (unsigned long long)m->end, m->streamId, m->correlationId);
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)rec;
            fprintf(out, "memcpy%u\t%llu\t%llu\t%llu\t%u\t%u\t0\n", (unsigned)m->copyKind,
                    (unsigned long long)m->bytes, (unsigned long long)m->start, (unsigned long long)m->end,
                    m->streamId, m->correlationId);
        }
    }
    free(buffer);
}

static void at_exit(void)
{
    cuptiActivityFlushAll(1);
    if (out)
        fclose(out);
    out = NULL;
}

int InitializeInjection(void)
{
    const char *path = getenv("KTRACE_OUT");
    char name[64];
    if (!path) {
        snprintf(name, sizeof name, "ktrace-%d.tsv", (int)getpid());
        path = name;
    }
    out = fopen(path, "w");
    if (!out)
        return 0;
    if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) != CUPTI_SUCCESS ||
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) != CUPTI_SUCCESS) {
        fprintf(stderr, "kernel_trace: CUPTI activity API unavailable\n");
        return 0;
    }
    atexit(at_exit);
    return 1;
}

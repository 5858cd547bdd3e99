/* bench_xyz_read.c — single-thread throughput of the XYZ reader
 * (io/xyz_reader.c) in MB/s of text, for files in the page cache.
 *
 * Writes FILE (unless it exists) as T frames of N noisy graphene atoms in
 * extended XYZ with positions printed by FMT ("%.10f", the writer's format,
 * or "%.17g", full round-trip precision), then reads every frame with
 * mdnl_xyz_next() `reps` times and reports the best pass. A second figure,
 * a bare pass that only finds the newlines (memchr), is the floor the
 * parser is measured against.
 *
 * Napkin math: an atom line is ~45 bytes (%.10f) or ~65 bytes (%.17g): three
 * numbers of 11-18 digits. At 300 MB/s that is ~7M lines/s, ~140 ns per line,
 * ~45 ns per number on one core — a strtod per field (~100 ns on glibc for
 * 17 digits) would not fit, the hand-written parser (~10-20 ns) does.
 *
 * Build and run: tools/bench_xyz_read.sh [T N FMT FILE] (needs the libraries of build/).
 */
#define _POSIX_C_SOURCE 200809L
#include "gen_graphene.h"
#include "xyz_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int write_file(const char *path, int nframes, int64_t nx, const char *fmt)
{
    mdnl_frame f = {0};
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return 1;
    char line[160];
    snprintf(line, sizeof line, "C %s %s %s\n", fmt, fmt, fmt);
    for (int t = 0; t < nframes; ++t) {
        if (mdnl_gen_graphene(nx, nx, 1.42, 0.05, (uint64_t)t + 1, 20.0, &f) != MDNL_OK)
            return 1;
        fprintf(fp, "%lld\nLattice=\"%.10f 0 0 0 %.10f 0 0 0 20\" Properties=species:S:1:pos:R:3 pbc=\"T T F\" "
                    "Step=%d Time=%g\n",
                (long long)f.natoms, f.box.h[0][0], f.box.h[1][1], t * 100, t * 0.5);
        for (int64_t i = 0; i < f.natoms; ++i)
            fprintf(fp, line, f.pos[i][0], f.pos[i][1], f.pos[i][2]);
    }
    mdnl_frame_free(&f);
    return fclose(fp) != 0;
}

int main(int argc, char **argv)
{
    int nframes = argc > 1 ? atoi(argv[1]) : 4;
    int64_t natoms = argc > 2 ? atoll(argv[2]) : 250000;
    const char *fmt = argc > 3 ? argv[3] : "%.10f";
    const char *path = argc > 4 ? argv[4] : "/tmp/mdnl_bench_xyz.extxyz";
    int64_t nx = 1;
    while (4 * (nx + 1) * (nx + 1) <= natoms)
        ++nx;
    struct stat st;
    if (stat(path, &st) != 0) {
        if (write_file(path, nframes, nx, fmt)) {
            fprintf(stderr, "cannot write %s\n", path);
            return 1;
        }
        stat(path, &st);
    }
    const double mb = (double)st.st_size / 1e6;
    double best_parse = 1e30, best_scan = 1e30;
    int64_t atoms = 0;
    for (int rep = 0; rep < 3; ++rep) {
        /* the floor: read the file and find every newline */
        double t0 = now();
        FILE *fp = fopen(path, "rb");
        static char buf[1 << 22];
        size_t got, lines = 0;
        while ((got = fread(buf, 1, sizeof buf, fp)) > 0)
            for (char *p = buf; (p = memchr(p, '\n', (size_t)(buf + got - p))) != NULL; ++p)
                ++lines;
        fclose(fp);
        double t1 = now();
        if (t1 - t0 < best_scan)
            best_scan = t1 - t0;
        mdnl_xyz_reader *r;
        mdnl_frame f = {0};
        t0 = now();
        if (mdnl_xyz_open(path, &r) != MDNL_OK) {
            fprintf(stderr, "%s\n", mdnl_last_error());
            return 1;
        }
        mdnl_status s;
        atoms = 0;
        while ((s = mdnl_xyz_next(r, &f)) == MDNL_OK)
            atoms += f.natoms;
        mdnl_xyz_close(r);
        t1 = now();
        if (s != MDNL_END) {
            fprintf(stderr, "%s\n", mdnl_last_error());
            return 1;
        }
        mdnl_frame_free(&f);
        if (t1 - t0 < best_parse)
            best_parse = t1 - t0;
        (void)lines;
    }
    printf("%s: %.1f MB, %lld atoms, format %s\n", path, mb, (long long)atoms, fmt);
    printf("  mdnl_xyz_next: %.3f s  %.0f MB/s  %.1f M atoms/s\n", best_parse, mb / best_parse,
           (double)atoms / best_parse / 1e6);
    printf("  newline scan:  %.3f s  %.0f MB/s (floor)\n", best_scan, mb / best_scan);
    return 0;
}

/* bench_h5md_read.c — read throughput of the H5MD reader (io/h5md_reader.c)
 * against a bare HDF5 hyperslab read of the same dataset.
 *
 * Writes a T-frame, N-atom trajectory with mdnl's trajectory writer (double
 * positions, chunk [1][N][3], triclinic time-dependent box, species [N]),
 * then reads every frame (a) through mdnl_h5md_next() — positions, step,
 * time, box, species, finiteness check — and (b) with one H5Dread of the
 * frame's hyperslab into a double buffer, best of `reps` passes each.
 *
 * Napkin math: a frame is 24 N bytes (2.4 MB at N = 100k); with the file in
 * the page cache the floor is a memcpy-bound read, several GB/s. The reader
 * adds a pass over the coordinates (isfinite) and a few small reads per
 * frame (step, time, edges), so it should stay within a few percent of (b).
 *
 * Build and run: tools/bench_h5md_read.sh [T N FILE] (CMake target
 * bench_h5md_read). `bench_h5md_read --bare FILE [GROUP]` reads an existing
 * trajectory instead (tools/bench/bench_run.sh's floor): (b) bare reads of
 * /particles/GROUP/position/value, frame by frame into doubles, and (a) the
 * reader with and without its finiteness pass, best of 5 each.
 */
#define _POSIX_C_SOURCE 200809L
#include "h5md_reader.h"
#include "h5md_writer.h"

#include <hdf5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define CHECK(x)                                                                                                       \
    do {                                                                                                               \
        if ((x) != MDNL_OK) {                                                                                          \
            fprintf(stderr, "bench: %s: %s\n", #x, mdnl_last_error());                                                 \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

/* Seconds to read every frame's positions of `path` with bare hyperslab
 * reads (one H5Dread per frame into a double buffer); frames/atoms out. */
static double bare_read(const char *path, const char *group, int64_t *T, int64_t *N, int nbuf)
{
    char dset[512];
    snprintf(dset, sizeof dset, "/particles/%s/position/value", group);
    double t0 = now();
    hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t ds = fid < 0 ? -1 : H5Dopen2(fid, dset, H5P_DEFAULT);
    hid_t fs = ds < 0 ? -1 : H5Dget_space(ds);
    hsize_t dims[3];
    if (fs < 0 || H5Sget_simple_extent_ndims(fs) != 3 || H5Sget_simple_extent_dims(fs, dims, NULL) < 0) {
        fprintf(stderr, "bench: %s: cannot open %s as [T][N][3]\n", path, dset);
        exit(1);
    }
    *T = (int64_t)dims[0];
    *N = (int64_t)dims[1];
    hsize_t count[3] = {1, dims[1], 3};
    hid_t ms = H5Screate_simple(3, count, NULL);
    double *bufs = malloc((size_t)nbuf * (size_t)dims[1] * 3 * sizeof *bufs);
    memset(bufs, 0, (size_t)nbuf * (size_t)dims[1] * 3 * sizeof *bufs); /* no first-touch faults in the loop */
    volatile double sink = 0;
    for (hsize_t k = 0; k < dims[0]; ++k) {
        double *buf = bufs + (size_t)(k % (hsize_t)nbuf) * (size_t)dims[1] * 3;
        hsize_t start[3] = {k, 0, 0};
        if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
            H5Dread(ds, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, buf) < 0) {
            fprintf(stderr, "bench: bare read failed at frame %llu\n", (unsigned long long)k);
            exit(1);
        }
        sink += buf[0];
    }
    free(bufs);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(ds);
    H5Fclose(fid);
    return now() - t0;
}

/* Seconds to read every frame through mdnl_h5md_next (finiteness pass on or off). */
static double reader_read(const char *path, const char *group, bool finite)
{
    double t0 = now();
    mdnl_h5md_reader *r;
    CHECK(mdnl_h5md_open(path, group, &r));
    mdnl_h5md_set_finite_check(r, finite);
    mdnl_frame f = {0};
    mdnl_status st;
    while ((st = mdnl_h5md_next(r, &f)) == MDNL_OK)
        ;
    if (st != MDNL_END)
        CHECK(st);
    mdnl_h5md_close(r);
    mdnl_frame_free(&f);
    return now() - t0;
}

static int bare_main(const char *path, const char *group)
{
    int64_t T = 0, N = 0;
    double tb = 1e30, tr = 1e30, ton = 1e30, toff = 1e30;
    for (int rep = 0; rep < 5; ++rep) {
        double t = bare_read(path, group, &T, &N, 1);
        tb = t < tb ? t : tb;
        t = bare_read(path, group, &T, &N, 4);
        tr = t < tr ? t : tr;
        t = reader_read(path, group, true);
        ton = t < ton ? t : ton;
        t = reader_read(path, group, false);
        toff = t < toff ? t : toff;
    }
    printf("{\"file\":\"%s\",\"frames\":%lld,\"atoms\":%lld,\"bare_fps\":%.1f,\"bare_ring4_fps\":%.1f,"
           "\"reader_fps\":%.1f,\"reader_unchecked_fps\":%.1f}\n",
           path, (long long)T, (long long)N, (double)T / tb, (double)T / tr, (double)T / ton, (double)T / toff);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--bare") == 0)
        return bare_main(argv[2], argc > 3 ? argv[3] : "all");
    int64_t T = argc > 1 ? atoll(argv[1]) : 100;
    int64_t N = argc > 2 ? atoll(argv[2]) : 100000;
    const char *path = argc > 3 ? argv[3] : "/tmp/mdnl_bench.h5md";
    int reps = 3;

    /* write */
    mdnl_frame f = {0};
    CHECK(mdnl_frame_reserve(&f, N));
    f.natoms = N;
    srand(1);
    for (int64_t i = 0; i < N; ++i) {
        for (int d = 0; d < 3; ++d)
            f.pos[i][d] = 100.0 * rand() / RAND_MAX;
        f.species[i] = mdnl_frame_species_id(&f, i % 3 ? "H" : "O", 1);
    }
    f.box.has_lattice = true;
    f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 100.0;
    f.box.h[1][0] = 5.0;
    f.has_step = f.has_time = true;
    mdnl_h5md_traj *w;
    double t0 = now();
    CHECK(mdnl_h5md_traj_create(path, NULL, &w));
    for (int64_t k = 0; k < T; ++k) {
        f.index = k, f.step = 10 * k, f.time = 0.01 * (double)k;
        f.pos[0][0] = (double)k;
        CHECK(mdnl_h5md_traj_append(w, &f));
    }
    CHECK(mdnl_h5md_traj_commit(w));
    double tw = now() - t0;
    double mb = (double)T * (double)N * 24.0 / 1e6;
    printf("file: %s, %lld frames x %lld atoms, %.1f MB of positions\n", path, (long long)T, (long long)N, mb);
    printf("write (mdnl_h5md_traj):     %8.3f s  %8.1f frames/s  %8.1f MB/s\n", tw, (double)T / tw, mb / tw);

    double best_reader = 1e30, best_bare = 1e30;
    double checksum_a = 0, checksum_b = 0;
    double *buf = malloc((size_t)N * 3 * sizeof *buf);
    for (int rep = 0; rep < reps; ++rep) {
        /* (a) through the reader */
        t0 = now();
        mdnl_h5md_reader *r;
        CHECK(mdnl_h5md_open(path, NULL, &r));
        mdnl_status st;
        checksum_a = 0;
        while ((st = mdnl_h5md_next(r, &f)) == MDNL_OK)
            checksum_a += f.pos[0][0] + f.pos[N - 1][2];
        if (st != MDNL_END)
            CHECK(st);
        mdnl_h5md_close(r);
        double ta = now() - t0;
        if (ta < best_reader)
            best_reader = ta;

        /* (b) bare hyperslab reads */
        t0 = now();
        hid_t fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
        hid_t ds = H5Dopen2(fid, "/particles/all/position/value", H5P_DEFAULT);
        hid_t fs = H5Dget_space(ds);
        hsize_t count[3] = {1, (hsize_t)N, 3};
        hid_t ms = H5Screate_simple(3, count, NULL);
        checksum_b = 0;
        for (int64_t k = 0; k < T; ++k) {
            hsize_t start[3] = {(hsize_t)k, 0, 0};
            if (H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) < 0 ||
                H5Dread(ds, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, buf) < 0) {
                fprintf(stderr, "bench: bare read failed at frame %lld\n", (long long)k);
                return 1;
            }
            checksum_b += buf[0] + buf[3 * N - 1];
        }
        H5Sclose(ms);
        H5Sclose(fs);
        H5Dclose(ds);
        H5Fclose(fid);
        double tb = now() - t0;
        if (tb < best_bare)
            best_bare = tb;
    }
    if (checksum_a != checksum_b) {
        fprintf(stderr, "bench: checksums differ: %.17g vs %.17g\n", checksum_a, checksum_b);
        return 1;
    }
    printf("read  (mdnl_h5md_next):     %8.3f s  %8.1f frames/s  %8.1f MB/s  (best of %d)\n", best_reader,
           (double)T / best_reader, mb / best_reader, reps);
    printf("read  (bare H5Dread slab):  %8.3f s  %8.1f frames/s  %8.1f MB/s  (best of %d)\n", best_bare,
           (double)T / best_bare, mb / best_bare, reps);
    printf("reader / bare time: %.3f\n", best_reader / best_bare);
    free(buf);
    mdnl_frame_free(&f);
    return 0;
}

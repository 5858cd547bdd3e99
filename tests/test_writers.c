/* test_writers.c — the parallel writers (io/chunk_pool.c, the direct-chunk
 * path of io/h5md_writer.c, the TSV rows of src/cmd_neighbors.c).
 *
 *   - the ordered map takes every piece once, in order, for any thread
 *     count, and a piece that cannot be made stops it at that piece;
 *   - the chunks the workers compress (ISA-L, libdeflate) inflate with zlib to the
 *     bytes HDF5's own shuffle + deflate pipeline (zlib) compresses for the
 *     same data and dataset (read back raw with H5Dread_chunk, filter masks
 *     included), the datasets carry the same filters and read back to the
 *     same values: neighbor lists of several frames (chunk boundaries
 *     inside and between frames, a partial last chunk) and gzip
 *     trajectories;
 *   - h5py reads the binary's compressed list back to the TSV's values;
 *   - TSV neighbor rows are byte for byte the same for 1, 2 and 5 threads,
 *     and their distances printf's %.9g of every kind of float;
 *   - through the binary: --threads 1 and --threads 3 give the same TSV and
 *     the same HDF5 contents (chunk for chunk, byte for byte, also for the
 *     131k-atom liquid); --threads 0 is a usage error. */
#define _GNU_SOURCE /* mkdtemp, open_memstream */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <hdf5.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "chunk_pool.h"
#include "cli.h"
#include "cli_test_util.h"
#include "h5md_writer.h"

TestSuite(writers, .init = make_tmpdir, .fini = remove_tmpdir);

/* --- the ordered map ----------------------------------------------------- */

typedef struct order_ctx {
    int64_t taken, fail_at;
    bool in_order;
} order_ctx;

static bool order_make(void *ctx, int64_t k, mdnl_pool_buf *b)
{
    const order_ctx *c = ctx;
    if (k == c->fail_at)
        return false;
    size_t n = (size_t)(k % 37) * 100 + 8;
    if (!mdnl_pool_buf_reserve(b, n))
        return false;
    memset(b->data, (int)(k & 0xff), n);
    memcpy(b->data, &k, sizeof k);
    b->len = n;
    return true;
}

static mdnl_status order_take(void *ctx, int64_t k, const mdnl_pool_buf *b)
{
    order_ctx *c = ctx;
    int64_t got;
    memcpy(&got, b->data, sizeof got);
    c->in_order &= got == k && k == c->taken && b->len == (size_t)(k % 37) * 100 + 8;
    c->taken++;
    return MDNL_OK;
}

Test(writers, pool_takes_every_piece_in_order_for_any_thread_count)
{
    for (int threads = 1; threads <= 7; threads += 2) {
        order_ctx c = {0, -1, true};
        cr_assert_eq(mdnl_pool_map(threads, 2000, &c, order_make, order_take, "test"), MDNL_OK);
        cr_expect(c.in_order, "threads %d", threads);
        cr_expect_eq(c.taken, 2000, "threads %d", threads);
    }
}

Test(writers, pool_stops_at_the_first_piece_that_fails)
{
    for (int threads = 1; threads <= 4; ++threads) {
        order_ctx c = {0, 777, true};
        cr_assert_eq(mdnl_pool_map(threads, 2000, &c, order_make, order_take, "test pieces"), MDNL_ERR_RESOURCE);
        cr_expect(c.in_order);
        cr_expect_eq(c.taken, 777, "threads %d: took %lld", threads, (long long)c.taken);
        cr_expect(strstr(mdnl_last_error(), "test pieces: out of host memory") != NULL, "%s", mdnl_last_error());
    }
}

/* --- HDF5 chunks against the filter pipeline ----------------------------- */

/* A raw chunk as the filters left it: deflated ones inflated with zlib
 * (still shuffled), others as stored. Returns its size, 0 if it does not
 * inflate to exactly `want` bytes. */
static size_t inflated(const unsigned char *raw, size_t n, bool deflated, unsigned char *out, size_t want)
{
    if (!deflated) {
        memcpy(out, raw, n);
        return n;
    }
    uLongf got = (uLongf)want;
    if (uncompress(out, &got, raw, (uLong)n) != Z_OK || got != want)
        return 0;
    return got;
}

/* Compares dataset `name` of files a and b: same shape, chunking and
 * filters, same values, and every stored chunk the same mask and either the
 * same bytes (`same_bytes`) or the same bytes once inflated by zlib. */
static void expect_same_dataset(const char *a, const char *b, const char *name, bool same_bytes)
{
    hid_t fa = H5Fopen(a, H5F_ACC_RDONLY, H5P_DEFAULT), fb = H5Fopen(b, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert(fa >= 0 && fb >= 0);
    hid_t da = H5Dopen2(fa, name, H5P_DEFAULT), db = H5Dopen2(fb, name, H5P_DEFAULT);
    cr_assert(da >= 0 && db >= 0, "%s", name);
    hid_t sa = H5Dget_space(da), sb = H5Dget_space(db);
    int rank = H5Sget_simple_extent_ndims(sa);
    cr_assert_eq(rank, H5Sget_simple_extent_ndims(sb));
    hsize_t dima[4], dimb[4], cha[4], chb[4];
    H5Sget_simple_extent_dims(sa, dima, NULL);
    H5Sget_simple_extent_dims(sb, dimb, NULL);
    hid_t pa = H5Dget_create_plist(da), pb = H5Dget_create_plist(db);
    cr_assert_eq(H5Pget_chunk(pa, rank, cha), rank);
    cr_assert_eq(H5Pget_chunk(pb, rank, chb), rank);
    size_t elems = 1;
    for (int d = 0; d < rank; ++d) {
        cr_expect_eq(dima[d], dimb[d], "%s: dim %d", name, d);
        cr_expect_eq(cha[d], chb[d], "%s: chunk dim %d", name, d);
        elems *= dima[d];
    }
    int nf = H5Pget_nfilters(pa);
    cr_expect_eq(nf, H5Pget_nfilters(pb), "%s: filters", name);
    for (int k = 0; k < nf; ++k) {
        unsigned flags, va[4], vb[4];
        size_t na = 4, nb = 4;
        H5Z_filter_t ia = H5Pget_filter2(pa, (unsigned)k, &flags, &na, va, 0, NULL, NULL);
        H5Z_filter_t ib = H5Pget_filter2(pb, (unsigned)k, &flags, &nb, vb, 0, NULL, NULL);
        cr_expect_eq(ia, ib, "%s: filter %d", name, k);
        cr_expect_eq(na, nb);
        for (size_t v = 0; v < na && v < nb && ia != H5Z_FILTER_SHUFFLE; ++v)
            cr_expect_eq(va[v], vb[v], "%s: filter %d value %zu", name, k, v);
    }
    /* values */
    hid_t t = H5Dget_type(da);
    size_t es = H5Tget_size(t);
    unsigned char *va = malloc(elems * es + 1), *vb = malloc(elems * es + 1);
    cr_assert(va && vb);
    cr_assert(H5Dread(da, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, va) >= 0);
    cr_assert(H5Dread(db, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, vb) >= 0);
    cr_expect(memcmp(va, vb, elems * es) == 0, "%s: values differ", name);
    free(va);
    free(vb);
    /* raw chunks */
    bool deflate = false;
    for (int k = 0; k < nf; ++k) {
        unsigned flags, v[4];
        size_t nv = 4;
        deflate |= H5Pget_filter2(pa, (unsigned)k, &flags, &nv, v, 0, NULL, NULL) == H5Z_FILTER_DEFLATE;
    }
    size_t chunk_bytes = es;
    for (int d = 0; d < rank; ++d)
        chunk_bytes *= cha[d];
    const size_t cap = chunk_bytes * 2 + 64;
    unsigned char *ra = malloc(cap), *rb = malloc(cap), *ia = malloc(chunk_bytes), *ib = malloc(chunk_bytes);
    cr_assert(ra && rb && ia && ib);
    hsize_t nchunks = dima[0] ? (dima[0] + cha[0] - 1) / cha[0] : 0;
    for (hsize_t c = 0; c < nchunks; ++c) {
        hsize_t off[4] = {c * cha[0], 0, 0, 0};
        hsize_t za = 0, zb = 0;
        cr_assert(H5Dget_chunk_storage_size(da, off, &za) >= 0 && H5Dget_chunk_storage_size(db, off, &zb) >= 0);
        if (same_bytes)
            cr_expect_eq(za, zb, "%s: chunk %llu: %llu vs %llu bytes", name, (unsigned long long)c,
                         (unsigned long long)za, (unsigned long long)zb);
        if ((same_bytes && za != zb) || za > cap || zb > cap)
            continue;
        uint32_t ma = 99, mb = 99;
        cr_assert(H5Dread_chunk(da, H5P_DEFAULT, off, &ma, ra) >= 0);
        cr_assert(H5Dread_chunk(db, H5P_DEFAULT, off, &mb, rb) >= 0);
        cr_expect_eq(ma, mb, "%s: chunk %llu mask", name, (unsigned long long)c);
        if (same_bytes) {
            cr_expect(memcmp(ra, rb, za) == 0, "%s: chunk %llu bytes differ", name, (unsigned long long)c);
            continue;
        }
        size_t na = inflated(ra, za, deflate && !(ma & 0x2), ia, chunk_bytes);
        size_t nb = inflated(rb, zb, deflate && !(mb & 0x2), ib, chunk_bytes);
        cr_expect(na > 0 && na == nb && memcmp(ia, ib, na) == 0, "%s: chunk %llu inflates differently", name,
                  (unsigned long long)c);
    }
    free(ia);
    free(ib);
    free(ra);
    free(rb);
    H5Tclose(t);
    H5Pclose(pa);
    H5Pclose(pb);
    H5Sclose(sa);
    H5Sclose(sb);
    H5Dclose(da);
    H5Dclose(db);
    H5Fclose(fa);
    H5Fclose(fb);
}

/* Appends rows to a reference dataset the way HDF5's pipeline writes them. */
static void ref_append(hid_t ds, hid_t memtype, int rank, const hsize_t *row, const void *buf, hsize_t nrows)
{
    hid_t fs = H5Dget_space(ds);
    hsize_t dims[4], start[4] = {0}, count[4];
    H5Sget_simple_extent_dims(fs, dims, NULL);
    H5Sclose(fs);
    start[0] = dims[0];
    dims[0] += nrows;
    count[0] = nrows;
    for (int d = 1; d < rank; ++d)
        count[d] = row[d - 1];
    cr_assert(H5Dset_extent(ds, dims) >= 0);
    if (nrows == 0)
        return;
    fs = H5Dget_space(ds);
    hid_t ms = H5Screate_simple(rank, count, NULL);
    cr_assert(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0);
    cr_assert(H5Dwrite(ds, memtype, ms, fs, H5P_DEFAULT, buf) >= 0);
    H5Sclose(ms);
    H5Sclose(fs);
}

static hid_t ref_dataset(hid_t loc, const char *name, hid_t type, int rank, const hsize_t *row, hsize_t chunk_rows,
                         int gzip)
{
    hsize_t dims[4] = {0}, maxd[4] = {H5S_UNLIMITED}, chunk[4] = {chunk_rows};
    for (int d = 1; d < rank; ++d)
        dims[d] = maxd[d] = chunk[d] = row[d - 1];
    hid_t sp = H5Screate_simple(rank, dims, maxd), dcpl = H5Pcreate(H5P_DATASET_CREATE);
    cr_assert(H5Pset_chunk(dcpl, rank, chunk) >= 0);
    if (gzip) {
        H5Pset_shuffle(dcpl);
        H5Pset_deflate(dcpl, (unsigned)gzip);
    }
    hid_t ds = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    cr_assert(ds >= 0);
    H5Pclose(dcpl);
    H5Sclose(sp);
    return ds;
}

/* A neighbor-list-like frame: natoms rows of 0..2*mean pairs, j sorted. */
static void make_list(mdnl_nlist *l, int64_t natoms, int mean, unsigned seed)
{
    cr_assert_eq(mdnl_nlist_reserve(l, natoms, natoms * (2 * mean + 1)), MDNL_OK);
    l->natoms = natoms;
    l->offsets[0] = 0;
    int64_t p = 0;
    for (int64_t i = 0; i < natoms; ++i) {
        seed = seed * 1103515245u + 12345u;
        int n = mean ? (int)((seed >> 16) % (unsigned)(2 * mean + 1)) : 0;
        int32_t jj = (int32_t)i;
        for (int k = 0; k < n; ++k) {
            seed = seed * 1103515245u + 12345u;
            jj += 1 + (int32_t)((seed >> 16) % 50u);
            l->j[p] = jj;
            l->d[p] = 0.5f + (float)((seed >> 8) % 1000u) / 1000.0f;
            ++p;
        }
        l->offsets[i + 1] = p;
    }
    l->npairs = p;
}

ParameterizedTestParameters(writers, neighbors_chunks_inflate_to_the_filter_pipelines_bytes)
{
    static int threads[] = {1, 2, 5};
    return cr_make_param_array(int, threads, sizeof threads / sizeof *threads);
}

ParameterizedTest(int *threads, writers, neighbors_chunks_inflate_to_the_filter_pipelines_bytes)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char out[512], ref[512];
    snprintf(out, sizeof out, "%s/out.h5", tmpdir);
    snprintf(ref, sizeof ref, "%s/ref.h5", tmpdir);
    /* frames: one spanning many chunks, small ones that stay in the stage,
     * an empty one, one that crosses a chunk boundary from the stage */
    const int64_t natoms[] = {90000, 10, 3000, 0, 120000, 7};
    const int mean[] = {4, 3, 2, 0, 1, 5};
    const int nfr = (int)(sizeof natoms / sizeof *natoms);
    mdnl_h5md_results *w = NULL;
    cr_assert_eq(mdnl_h5md_results_create(out, &w), MDNL_OK);
    mdnl_h5md_results_set_threads(w, *threads);
    cr_assert_eq(mdnl_h5md_results_set_neighbors_info(w, "half", 2.5), MDNL_OK);
    hid_t rf = H5Fcreate(ref, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t ro = ref_dataset(rf, "offsets", H5T_STD_I64LE, 1, NULL, 65536, 1);
    hid_t rj = ref_dataset(rf, "j", H5T_STD_I32LE, 1, NULL, 65536, 1);
    hid_t rd = ref_dataset(rf, "distance", H5T_IEEE_F32LE, 1, NULL, 65536, 0);
    for (int k = 0; k < nfr; ++k) {
        mdnl_nlist l = {0};
        make_list(&l, natoms[k], mean[k], 17u + (unsigned)k);
        cr_assert_eq(mdnl_h5md_results_write_neighbors(w, k, l.natoms, l.offsets, l.j, l.d, l.npairs), MDNL_OK);
        ref_append(ro, H5T_NATIVE_INT64, 1, NULL, l.offsets, (hsize_t)l.natoms + 1);
        ref_append(rj, H5T_NATIVE_INT32, 1, NULL, l.j, (hsize_t)l.npairs);
        ref_append(rd, H5T_NATIVE_FLOAT, 1, NULL, l.d, (hsize_t)l.npairs);
        mdnl_nlist_free(&l);
    }
    cr_assert_eq(mdnl_h5md_results_commit(w), MDNL_OK);
    H5Dclose(ro);
    H5Dclose(rj);
    H5Dclose(rd);
    H5Fclose(rf);
    /* the reference's datasets sit at the root; link them where ours are */
    hid_t f = H5Fopen(ref, H5F_ACC_RDWR, H5P_DEFAULT);
    hid_t g = H5Gcreate2(f, "neighbors", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    const char *names[] = {"offsets", "j", "distance"};
    for (int k = 0; k < 3; ++k)
        cr_assert(H5Lcreate_hard(f, names[k], g, names[k], H5P_DEFAULT, H5P_DEFAULT) >= 0);
    H5Gclose(g);
    H5Fclose(f);
    for (int k = 0; k < 3; ++k) {
        char n[64];
        snprintf(n, sizeof n, "/neighbors/%s", names[k]);
        expect_same_dataset(out, ref, n, false);
    }
}

Test(writers, trajectory_gzip_chunks_inflate_to_the_filter_pipelines_bytes)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    char out[512], ref[512];
    snprintf(out, sizeof out, "%s/traj.h5", tmpdir);
    snprintf(ref, sizeof ref, "%s/tref.h5", tmpdir);
    const int64_t n = 1500;
    const int nfr = 7; /* not a multiple of the stage (3 chunks) */
    mdnl_h5md_traj_options opt = {.gzip = 4, .threads = 3};
    mdnl_h5md_traj *w = NULL;
    cr_assert_eq(mdnl_h5md_traj_create(out, &opt, &w), MDNL_OK);
    hid_t rf = H5Fcreate(ref, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    hid_t g = H5Gcreate2(rf, "/particles/all/position", lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    hsize_t row[2] = {(hsize_t)n, 3};
    hid_t rv = ref_dataset(g, "value", H5T_IEEE_F64LE, 3, row, 1, 4);
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, n), MDNL_OK);
    for (int k = 0; k < nfr; ++k) {
        f.natoms = n;
        f.index = k;
        f.step = k;
        f.nspecies = 1;
        snprintf(f.symbols[0], sizeof f.symbols[0], "Ar");
        f.box.has_lattice = true;
        for (int a = 0; a < 3; ++a) {
            f.box.pbc[a] = true;
            f.box.h[a][a] = 20.0;
        }
        for (int64_t i = 0; i < n; ++i) {
            f.species[i] = 0;
            for (int a = 0; a < 3; ++a)
                f.pos[i][a] = (double)((i * 7 + a * 13 + k * 31) % 2000) / 100.0;
        }
        cr_assert_eq(mdnl_h5md_traj_append(w, &f), MDNL_OK);
        ref_append(rv, H5T_NATIVE_DOUBLE, 3, row, f.pos, 1);
    }
    mdnl_frame_free(&f);
    cr_assert_eq(mdnl_h5md_traj_commit(w), MDNL_OK);
    H5Dclose(rv);
    H5Gclose(g);
    H5Fclose(rf);
    expect_same_dataset(out, ref, "/particles/all/position/value", false);
}

/* --- TSV ------------------------------------------------------------------ */

static char *tsv_of(const mdnl_nlist *l, int threads, size_t *len)
{
    char *buf = NULL;
    FILE *fp = open_memstream(&buf, len);
    cr_assert_not_null(fp);
    cr_assert_eq(mdnl_neighbors_tsv_rows(fp, 12, l, threads), MDNL_OK);
    fclose(fp);
    return buf;
}

Test(writers, tsv_rows_are_the_same_bytes_for_any_thread_count)
{
    mdnl_nlist l = {0};
    make_list(&l, 60000, 6, 99u); /* ~360k pairs: several blocks */
    size_t n1 = 0, n2 = 0, n5 = 0;
    char *a = tsv_of(&l, 1, &n1), *b = tsv_of(&l, 2, &n2), *c = tsv_of(&l, 5, &n5);
    cr_assert_gt(n1, 1000000);
    cr_expect_eq(n1, n2);
    cr_expect_eq(n1, n5);
    cr_expect(n1 == n2 && memcmp(a, b, n1) == 0);
    cr_expect(n1 == n5 && memcmp(a, c, n1) == 0);
    cr_expect_eq(count_lines(a), (int)l.npairs);
    free(a);
    free(b);
    free(c);
    mdnl_nlist_free(&l);
}

/* The distance column is printf's "%.9g" of the float, for every kind of
 * value: a stride through all finite floats, every float around each
 * power of ten (the digit count changes) and in ranges with exact decimal
 * ties at the ninth digit (1048576.125 rounds half to even), zero, signs,
 * subnormals, infinities and NaN. */
Test(writers, tsv_distances_are_printfs_9g)
{
    enum { CAP = 3000000 };
    float *v = malloc(CAP * sizeof *v);
    cr_assert_not_null(v);
    int64_t n = 0;
    for (uint32_t b = 0; b < 0x7f800000u && n < CAP; b += 1201u) {
        float f;
        memcpy(&f, &b, sizeof f);
        v[n++] = f;
    }
    for (int k = -6; k <= 10; ++k) {
        float c = (float)pow(10.0, k);
        uint32_t b;
        memcpy(&b, &c, sizeof b);
        for (uint32_t d = b - 4000u; d < b + 4000u; ++d)
            memcpy(&v[n++], &d, sizeof d);
    }
    const float ties[] = {1048576.0f, 1.0f, 0.5f, 3.0f, 99999.0f, 0.0001f};
    for (size_t t = 0; t < sizeof ties / sizeof *ties; ++t) {
        uint32_t b;
        memcpy(&b, &ties[t], sizeof b);
        for (uint32_t d = b; d < b + 60000u; ++d)
            memcpy(&v[n++], &d, sizeof d);
    }
    const float special[] = {0.0f,      -0.0f, -1.5f, 1e-45f,       1e-40f,         1e30f, INFINITY,
                             -INFINITY, NAN,   1e9f,  999999999.0f, 9.99999994e-5f, 2.5f,  1e-4f};
    for (size_t t = 0; t < sizeof special / sizeof *special; ++t)
        v[n++] = special[t];
    cr_assert_lt(n, CAP);
    mdnl_nlist l = {0};
    cr_assert_eq(mdnl_nlist_reserve(&l, 1, n), MDNL_OK);
    l.natoms = 1;
    l.npairs = n;
    l.offsets[0] = 0;
    l.offsets[1] = n;
    for (int64_t k = 0; k < n; ++k) {
        l.j[k] = 0;
        l.d[k] = v[k];
    }
    size_t len = 0;
    char *text = tsv_of(&l, 2, &len), *line = text;
    int64_t bad = 0;
    for (int64_t k = 0; k < n; ++k) {
        char want[64], *end = strchr(line, '\n');
        cr_assert_not_null(end);
        *end = '\0';
        snprintf(want, sizeof want, "12\t0\t0\t%.9g", (double)v[k]);
        if (strcmp(line, want) != 0 && bad++ < 10)
            cr_log_error("row %lld: \"%s\", expected \"%s\"", (long long)k, line, want);
        line = end + 1;
    }
    cr_expect_eq(bad, 0, "%lld of %lld distances differ from %%.9g", (long long)bad, (long long)n);
    free(text);
    free(v);
    mdnl_nlist_free(&l);
}

/* --- through the binary ----------------------------------------------------- */

Test(writers, cli_threads_give_the_same_outputs)
{
    cr_assert_eq(mdnl("gen graphene --nx 120 --ny 60 --noise 0.05 --seed 3 -o g.extxyz -q"), 0, "%s", err_text);
    for (int t = 1; t <= 3; t += 2) {
        cr_assert_eq(mdnl("neighbors g.extxyz -c 3 --backend cpu --threads %d -o n%d.tsv -q", t, t), 0, "%s", err_text);
        cr_assert_eq(mdnl("neighbors g.extxyz -c 3 --backend cpu --threads %d -o n%d.h5 -q", t, t), 0, "%s", err_text);
        cr_assert_eq(mdnl("run g.extxyz -c 3 --neighbors --backend cpu --threads %d -o r%d.h5 -q", t, t), 0, "%s",
                     err_text);
    }
    cr_expect_eq(sh("cmp n1.tsv n3.tsv"), 0, "%s", out_text);
    cr_expect_eq(sh("test $(wc -l < n1.tsv) -gt 100000"), 0);
    char a[512], b[512];
    const char *names[] = {"/neighbors/offsets", "/neighbors/j", "/neighbors/distance"};
    for (int k = 0; k < 3; ++k) {
        snprintf(a, sizeof a, "%s/n1.h5", tmpdir);
        snprintf(b, sizeof b, "%s/n3.h5", tmpdir);
        expect_same_dataset(a, b, names[k], true);
        snprintf(a, sizeof a, "%s/r1.h5", tmpdir);
        snprintf(b, sizeof b, "%s/r3.h5", tmpdir);
        expect_same_dataset(a, b, names[k], true);
    }
}

/* A compressed chunk's bytes are a function of the chunk alone, not of what
 * the compressor's reused memory held (igzip does not reset its hash table
 * itself): the 131k-atom liquid's list, whose j chunks are those of the
 * benchmark, has the same chunks with 1 to 4 threads (with malloc'd igzip
 * state this failed about one run in three). */
Test(writers, cli_liquid_chunks_do_not_depend_on_threads)
{
    for (int t = 1; t <= 4; ++t)
        cr_assert_eq(mdnl("neighbors %s/lj-liquid-131k.h5md -c 2.5 --backend cpu --threads %d -o l%d.h5 -q",
                          MDNL_DATA_DIR, t, t),
                     0, "%s", err_text);
    char a[512], b[512];
    snprintf(a, sizeof a, "%s/l1.h5", tmpdir);
    for (int t = 2; t <= 4; ++t) {
        snprintf(b, sizeof b, "%s/l%d.h5", tmpdir, t);
        expect_same_dataset(a, b, "/neighbors/offsets", true);
        expect_same_dataset(a, b, "/neighbors/j", true);
    }
}

/* The compressed list, decoded by another reader (h5py, HDF5's own zlib
 * filter), is the TSV's: every frame's CSR rows, j and float32 distances. */
Test(writers, cli_h5py_reads_the_compressed_list_as_the_tsv)
{
    cr_assert_eq(mdnl("gen graphene --nx 150 --ny 80 --noise 0.05 --seed 5 -o g.extxyz -q"), 0, "%s", err_text);
    cr_assert_eq(mdnl("neighbors g.extxyz -c 3 --backend cpu --threads 2 -o n.tsv -q"), 0, "%s", err_text);
    cr_assert_eq(mdnl("neighbors g.extxyz -c 3 --backend cpu --threads 2 -o n.h5 -q"), 0, "%s", err_text);
    int rc = sh("/usr/bin/python3 -c '\n"
                "import h5py, numpy as np\n"
                "t = np.loadtxt(\"n.tsv\", dtype=np.float64, comments=\"#\", ndmin=2)\n"
                "g = h5py.File(\"n.h5\", \"r\")[\"neighbors\"]\n"
                "for name in (\"offsets\", \"j\"):\n"
                "    assert g[name].compression == \"gzip\" and g[name].shuffle, name\n"
                "off, j, d = g[\"offsets\"][:], g[\"j\"][:], g[\"distance\"][:]\n"
                "assert len(j) == len(t) > 100000 and len(d) == len(j), (len(j), len(t))\n"
                "i = np.repeat(np.arange(len(off) - 1), np.diff(off))\n"
                "assert off[0] == 0 and off[-1] == len(j)\n"
                "assert (t[:, 0] == 0).all() and (t[:, 1] == i).all() and (t[:, 2] == j).all()\n"
                "assert (t[:, 3].astype(np.float32) == d).all()\n"
                "'");
    cr_expect_eq(rc, 0, "%s%s", out_text, err_text);
}

Test(writers, cli_threads_out_of_range_is_a_usage_error)
{
    cr_expect_eq(mdnl("neighbors x.xyz -c 3 --threads 0"), 2);
    cr_expect(strstr(err_text, "--threads") != NULL, "%s", err_text);
    cr_expect_eq(mdnl("neighbors x.xyz -c 3 --threads 5000"), 2);
    cr_expect(strstr(err_text, "--threads: expected 1 to 1024") != NULL, "%s", err_text);
    cr_expect_eq(mdnl("neighbors --help"), 0);
    cr_expect(strstr(out_text, "--threads N") != NULL, "%s", out_text);
}

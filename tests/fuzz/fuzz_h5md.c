/* fuzz_h5md.c — the H5MD reader's metadata checks (io/h5md_reader.c).
 *
 * The input bytes are not an HDF5 file (mutating HDF5's own binary format
 * would fuzz the HDF5 library, not mdnl); they are a recipe: each byte picks
 * one choice of a small H5MD layout — the particle group, the rank, shape,
 * type and storage of position/value, the kind and shape of step and time
 * and their offset attributes, the box attributes dimension and boundary
 * (type, count, words), edges as a dataset or a time-dependent group, the
 * species as integers, strings or a time-dependent group with or without a
 * names attribute, and the values written (from a table holding 0, ±1,
 * huge, NaN and inf). Where each dataset's bytes live is a choice too
 * (issue 54): contiguous, compact, chunked (written, never written, one row
 * of several written, extended 1000x after writing), deflate+shuffle,
 * fletcher32, external raw storage in a scratch file, a virtual dataset
 * whose source is itself or another file, and a contiguous extent 10^9
 * times the written one; and links: an external link to this file, to a
 * raw file or to a missing one in place of position/box/species, another
 * at the root, or a soft link, dangling or not. The file is written with the HDF5 C API, then opened
 * with mdnl_h5md_open and read to the end (with a skip and a seek) by one
 * to three position workers. Every
 * failure must be MDNL_ERR_INPUT with a one-line message that starts with
 * the path; every frame read must be finite and consistent. Running out of
 * bytes picks choice 0 everywhere (a valid file). */
#include "fuzz_common.h"

#include "frame.h"
#include "h5md_reader.h"

#include <hdf5.h>
#include <math.h>

typedef struct recipe {
    const uint8_t *p;
    size_t n;
} recipe;

/* A choice in [0, k): the next byte modulo k, 0 when the bytes ran out. */
static unsigned pick(recipe *r, unsigned k)
{
    if (!r->n)
        return 0;
    --r->n;
    return (unsigned)(*r->p++) % k;
}

static const double values[] = {0.5, 1.0, 0.0, -1.0, 2.25, 1e30, NAN, INFINITY, -3.5, 1e-300, 7.0, 100.0};
#define NVALUES (sizeof values / sizeof *values)
/* Integers are written as index + one of these (steps 0, 1, 2, ... and species codes by default). */
static const int64_t ints[] = {0, 3, 1, -1, 2, (int64_t)1 << 40, -((int64_t)1 << 40), 300, INT64_MAX / 2};
#define NINTS (sizeof ints / sizeof *ints)

/* Element types: 0 double, 1 float, 2 int32, 3 int8, 4 uint64, 5 fixed string, 6 variable string,
 * 7 compound {double, int}. */
static hid_t make_type(unsigned t)
{
    switch (t) {
    case 0: return H5Tcopy(H5T_NATIVE_DOUBLE);
    case 1: return H5Tcopy(H5T_NATIVE_FLOAT);
    case 2: return H5Tcopy(H5T_NATIVE_INT32);
    case 3: return H5Tcopy(H5T_NATIVE_INT8);
    case 4: return H5Tcopy(H5T_NATIVE_UINT64);
    case 5: {
        hid_t s = H5Tcopy(H5T_C_S1);
        H5Tset_size(s, 8);
        return s;
    }
    case 6: {
        hid_t s = H5Tcopy(H5T_C_S1);
        H5Tset_size(s, H5T_VARIABLE);
        return s;
    }
    default: {
        hid_t c = H5Tcreate(H5T_COMPOUND, 16);
        H5Tinsert(c, "a", 0, H5T_NATIVE_DOUBLE);
        H5Tinsert(c, "b", 8, H5T_NATIVE_INT32);
        return c;
    }
    }
}

static const char *words[] = {"periodic", "none", "C", "O", "", "periodicX", "H", "a-very-long-symbol-name-indeed"};

/* Writes n elements of type t from the recipe into a dataset or attribute. */
static void fill_write(recipe *r, hid_t obj, bool attr, unsigned t, hid_t type, size_t n)
{
    if (n > 4096)
        n = 4096;
    if (t <= 4 || t == 7) {
        double *v = malloc((n ? n : 1) * sizeof *v);
        if (!v)
            return;
        for (size_t i = 0; i < n; ++i)
            v[i] = values[pick(r, NVALUES)];
        if (t == 7) { /* compound: let HDF5 fail the conversion or not; write raw bytes */
            unsigned char *raw = calloc(n ? n : 1, 16);
            if (raw) {
                for (size_t i = 0; i < n; ++i)
                    memcpy(raw + 16 * i, &v[i], 8);
                attr ? H5Awrite(obj, type, raw) : H5Dwrite(obj, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, raw);
                free(raw);
            }
        } else if (t >= 2) { /* integers: small whole numbers, sometimes large */
            int64_t *iv = malloc((n ? n : 1) * sizeof *iv);
            if (iv) {
                for (size_t i = 0; i < n; ++i)
                    iv[i] = (int64_t)i + ints[pick(r, NINTS)];
                attr ? H5Awrite(obj, H5T_NATIVE_INT64, iv)
                     : H5Dwrite(obj, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, iv);
                free(iv);
            }
        } else {
            attr ? H5Awrite(obj, H5T_NATIVE_DOUBLE, v) : H5Dwrite(obj, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, v);
        }
        free(v);
        return;
    }
    if (t == 5) {
        char *s = calloc(n ? n : 1, 8);
        if (!s)
            return;
        for (size_t i = 0; i < n; ++i)
        { /* fixed-length: "periodic" fills all 8 bytes, no NUL (as HDF5 allows) */
            const char *w = words[pick(r, 8)];
            size_t len = strlen(w);
            memcpy(s + 8 * i, w, len < 8 ? len : 8);
        }
        attr ? H5Awrite(obj, type, s) : H5Dwrite(obj, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, s);
        free(s);
        return;
    }
    const char **s = malloc((n ? n : 1) * sizeof *s);
    if (!s)
        return;
    for (size_t i = 0; i < n; ++i)
        s[i] = pick(r, 9) == 8 ? NULL : words[pick(r, 8)];
    attr ? H5Awrite(obj, type, s) : H5Dwrite(obj, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, s);
    free(s);
}

static size_t count_of(int rank, const hsize_t *dims)
{
    size_t n = 1;
    for (int d = 0; d < rank; ++d)
        n *= (size_t)dims[d];
    return n;
}

/* Storage choices of make_dataset (issue 54: where the bytes of a dataset
 * live and whether they are all there). */
enum {
    ST_CONTIGUOUS,     /* written */
    ST_CHUNKED,        /* written */
    ST_CHUNKED_EMPTY,  /* chunked, never written: every chunk missing */
    ST_UNLIMITED,      /* chunked with an unlimited first dimension, written */
    ST_COMPACT,        /* written (fails to create past 64 KiB: no dataset) */
    ST_DEFLATE,        /* chunked + shuffle + deflate, written */
    ST_FLETCHER,       /* chunked + fletcher32, written */
    ST_EXTERNAL,       /* external raw storage in a scratch file of valid bytes */
    ST_VIRTUAL_SELF,   /* a virtual dataset whose source is itself in this file */
    ST_VIRTUAL_OTHER,  /* a virtual dataset whose source is in a scratch file */
    ST_GROWN,          /* chunked, written, then extended 1000x along dims[0] */
    ST_HUGE_UNWRITTEN, /* contiguous, dims[0] x 10^9, never written */
    ST_SMALL_CHUNKS,   /* chunked by one row, only the first row written */
    NSTORAGE
};

/* The scratch file that external storage and virtual sources point at,
 * holding 4096 doubles of 0.5 (a valid coordinate). */
static const char *raw_scratch(void)
{
    static char path[512];
    if (!path[0]) {
        const char *dir = getenv("TMPDIR");
        snprintf(path, sizeof path, "%s/mdnl-fuzz-%ld.raw", dir && *dir ? dir : "/tmp", (long)getpid());
        double v[4096];
        for (int i = 0; i < 4096; ++i)
            v[i] = 0.5;
        fuzz_write_file(path, (const uint8_t *)v, sizeof v);
    }
    return path;
}

/* A dataset `name` under loc of type t and shape (rank, dims) stored as
 * `storage` (the enum above); `self` is the file's path (virtual sources). */
static const char *self_path;
static hid_t make_dataset(recipe *r, hid_t loc, const char *name, unsigned t, int rank, const hsize_t *dims,
                          unsigned storage)
{
    hid_t type = make_type(t);
    hsize_t maxd[8], d[8];
    for (int k = 0; k < rank; ++k)
        maxd[k] = d[k] = dims[k];
    bool chunked = storage == ST_CHUNKED || storage == ST_CHUNKED_EMPTY || storage == ST_UNLIMITED ||
                   storage == ST_DEFLATE || storage == ST_FLETCHER || storage == ST_GROWN || storage == ST_SMALL_CHUNKS;
    if ((storage == ST_UNLIMITED || storage == ST_GROWN) && rank > 0)
        maxd[0] = H5S_UNLIMITED;
    if (storage == ST_HUGE_UNWRITTEN && rank > 0)
        d[0] = maxd[0] = (dims[0] ? dims[0] : 1) * 1000000000ull;
    hid_t sp = rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, d, maxd);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (chunked && rank > 0) {
        hsize_t ch[8];
        for (int k = 0; k < rank; ++k)
            ch[k] = dims[k] ? dims[k] : 1;
        if (storage == ST_SMALL_CHUNKS)
            ch[0] = 1;
        H5Pset_chunk(dcpl, rank, ch);
        if (storage == ST_DEFLATE) {
            H5Pset_shuffle(dcpl);
            H5Pset_deflate(dcpl, 1 + pick(r, 9));
        } else if (storage == ST_FLETCHER) {
            H5Pset_fletcher32(dcpl);
        }
    } else if (storage == ST_COMPACT) {
        H5Pset_layout(dcpl, H5D_COMPACT);
    } else if (storage == ST_EXTERNAL) {
        H5Pset_external(dcpl, raw_scratch(), 0, H5F_UNLIMITED);
    } else if ((storage == ST_VIRTUAL_SELF || storage == ST_VIRTUAL_OTHER) && rank > 0) {
        /* The source: this very dataset (recursion), or a dataset of
         * another file, either way the whole extent. */
        hid_t src = H5Screate_simple(rank, dims, NULL);
        H5Pset_virtual(dcpl, sp, storage == ST_VIRTUAL_SELF ? "." : raw_scratch(),
                       storage == ST_VIRTUAL_SELF ? "/particles/all/position/value" : "/x", src);
        H5Sclose(src);
    }
    hid_t ds = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    bool write = storage != ST_CHUNKED_EMPTY && storage != ST_HUGE_UNWRITTEN && storage != ST_VIRTUAL_SELF &&
                 storage != ST_VIRTUAL_OTHER && storage != ST_EXTERNAL;
    if (ds >= 0 && write && storage == ST_SMALL_CHUNKS && rank > 0) {
        /* one row of dims[0] written through a hyperslab; the rest missing */
        hsize_t start[8] = {0}, cnt[8];
        for (int k = 0; k < rank; ++k)
            cnt[k] = dims[k];
        cnt[0] = dims[0] ? 1 : 0;
        hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(rank, cnt, NULL);
        H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, cnt, NULL);
        double *v = calloc(count_of(rank, cnt) + 1, sizeof *v);
        if (v && cnt[0])
            H5Dwrite(ds, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, v);
        free(v);
        H5Sclose(ms);
        H5Sclose(fs);
    } else if (ds >= 0 && write) {
        fill_write(r, ds, false, t, type, count_of(rank, dims));
    }
    if (ds >= 0 && storage == ST_GROWN && rank > 0) {
        d[0] = dims[0] * 1000 + 1;
        H5Dset_extent(ds, d);
    }
    H5Pclose(dcpl);
    H5Sclose(sp);
    H5Tclose(type);
    return ds;
}

static void make_attr(recipe *r, hid_t obj, const char *name, unsigned t, int rank, hsize_t n)
{
    hid_t type = make_type(t);
    hsize_t dims[1] = {n};
    hid_t sp = rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, dims, NULL);
    hid_t a = H5Acreate2(obj, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    if (a >= 0) {
        fill_write(r, a, true, t, type, rank == 0 ? 1 : (size_t)n);
        H5Aclose(a);
    }
    H5Sclose(sp);
    H5Tclose(type);
}

/* A shape near the expected one: choice 0 is `want` itself. */
static int near_shape(recipe *r, int rank, const hsize_t *want, hsize_t *dims)
{
    unsigned c = pick(r, 6);
    for (int d = 0; d < rank; ++d)
        dims[d] = want[d];
    switch (c) {
    case 0: return rank;
    case 1: /* one dimension off by one or zero */
        if (rank > 0) {
            int d = (int)pick(r, (unsigned)rank);
            dims[d] = pick(r, 2) ? dims[d] + 1 : 0;
        }
        return rank;
    case 2: return rank > 0 ? rank - 1 : 0; /* a dimension dropped */
    case 3: dims[rank] = 1 + pick(r, 3); return rank + 1; /* one more */
    case 4: return 0; /* a scalar */
    default:
        for (int d = 0; d < rank; ++d)
            dims[d] = pick(r, 5);
        return rank;
    }
}

/* Lengths of an array-valued offset attribute (600: past the reader's struct, so ASan sees an overrun). */
static const hsize_t offset_len[] = {1, 2, 4, 600};

/* An element with step/time: a dataset, or a group value/step/time. */
static void make_element(recipe *r, hid_t parent, const char *name, int rank, const hsize_t *want, unsigned vtype,
                         int force_group)
{
    unsigned form = force_group ? 1 + pick(r, 7) : pick(r, 3);
    hsize_t dims[8];
    if (form == 0) { /* a plain dataset (time-independent) */
        int rk = near_shape(r, rank - 1, want + 1, dims);
        H5Dclose(make_dataset(r, parent, name, vtype, rk, dims, pick(r, NSTORAGE)));
        return;
    }
    hid_t g = H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    if (g < 0)
        return;
    hsize_t tw[8];
    memcpy(tw, want, (size_t)rank * sizeof *tw);
    if (pick(r, 3) == 1)
        tw[0] = pick(r, 6); /* samples other than the frames */
    int rk = near_shape(r, rank, tw, dims);
    if (pick(r, 8) != 7) {
        hid_t v = make_dataset(r, g, "value", vtype, rk, dims, pick(r, NSTORAGE));
        if (v >= 0)
            H5Dclose(v);
    }
    hsize_t ns = rk > 0 ? dims[0] : 0;
    /* step: [T] integers, a scalar increment (with an offset attribute), or wrong. */
    unsigned sf = pick(r, 8);
    if (sf != 7) {
        hsize_t sd[1] = {sf == 3 ? ns + 1 : ns};
        unsigned st = sf == 4 ? 0 : sf == 5 ? 5 : 2;
        hid_t s = make_dataset(r, g, "step", st, sf == 1 || sf == 2 ? 0 : 1, sd, pick(r, NSTORAGE));
        if (s >= 0) {
            if (sf == 2 || pick(r, 4) == 3)
                make_attr(r, s, "offset", pick(r, 8), (int)pick(r, 2), offset_len[pick(r, 4)]);
            H5Dclose(s);
        }
    }
    /* time: optional. */
    unsigned tf = pick(r, 6);
    if (tf) {
        hsize_t td[1] = {tf == 3 ? ns + 2 : ns};
        hid_t t = make_dataset(r, g, "time", tf == 4 ? 5 : tf == 5 ? 2 : 0, tf == 2 ? 0 : 1, td, pick(r, NSTORAGE));
        if (t >= 0) {
            if (tf == 2 || pick(r, 4) == 3)
                make_attr(r, t, "offset", pick(r, 8), (int)pick(r, 2), offset_len[pick(r, 4)]);
            H5Dclose(t);
        }
    }
    H5Gclose(g);
}

static void build(recipe *r, const char *path, const char **group)
{
    self_path = path;
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0)
        fuzz_fail("cannot create the scratch HDF5 file", path);
    hsize_t T = pick(r, 4) + 1, N = pick(r, 5) + 1;
    if (pick(r, 8) == 7)
        T = 0;
    unsigned gchoice = pick(r, 6);
    *group = gchoice == 4 ? "all" : gchoice == 5 ? "missing" : NULL;
    const char *gname = gchoice == 1 ? "water" : "all";
    if (gchoice != 2) {
        hid_t parts = H5Gcreate2(f, "/particles", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        if (gchoice == 3)
            H5Gclose(H5Gcreate2(parts, "other", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        hid_t g = H5Gcreate2(parts, gname, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);

        hsize_t pw[3] = {T, N, 3};
        unsigned ptype = pick(r, 8);
        ptype = ptype < 5 ? (ptype < 3 ? 0 : ptype - 2) : ptype; /* mostly double */
        if (pick(r, 10) != 9)
            make_element(r, g, "position", 3, pw, ptype, pick(r, 6) != 5);

        /* box */
        unsigned bf = pick(r, 6);
        if (bf != 5) {
            hid_t box = H5Gcreate2(g, "box", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
            unsigned dm = pick(r, 6);
            if (dm == 0 || dm == 1) { /* an integer scalar: 3 by default */
                static const int dimensions[] = {3, 2, 0, 4, -3, 1 << 30};
                int v = dimensions[dm == 0 ? 0 : pick(r, 6)];
                hid_t s = H5Screate(H5S_SCALAR);
                hid_t a = H5Acreate2(box, "dimension", H5T_NATIVE_INT, s, H5P_DEFAULT, H5P_DEFAULT);
                if (a >= 0) {
                    H5Awrite(a, H5T_NATIVE_INT, &v);
                    H5Aclose(a);
                }
                H5Sclose(s);
            } else if (dm == 2)
                make_attr(r, box, "dimension", 0, 0, 1);
            else if (dm == 3)
                make_attr(r, box, "dimension", 5, 0, 1);
            else if (dm == 4)
                make_attr(r, box, "dimension", 2, 1, 1 + pick(r, 3));
            unsigned bd = pick(r, 6);
            if (bd != 5)
                make_attr(r, box, "boundary", bd == 4 ? 2 : bd == 3 ? 6 : 5, (int)(pick(r, 4) != 3),
                          bd == 1 ? 2 + pick(r, 3) : 3);
            unsigned ef = pick(r, 5);
            if (ef != 4) {
                hsize_t ew[3] = {T, 3, 3};
                if (ef == 0) { /* a [3] or [3][3] dataset */
                    hsize_t d[3];
                    int rk = near_shape(r, pick(r, 2) ? 2 : 1, ew + 1, d);
                    H5Dclose(make_dataset(r, box, "edges", pick(r, 2), rk, d, 0));
                } else {
                    make_element(r, box, "edges", ef == 1 ? 2 : 3, ew, pick(r, 3) == 2 ? 2 : 0, 1);
                }
            }
            H5Gclose(box);
        }

        /* species */
        unsigned sp = pick(r, 7);
        if (sp) {
            hsize_t sw[2] = {T, N};
            unsigned stype = sp == 2 ? 5 : sp == 3 ? 6 : sp == 4 ? 0 : 2;
            make_element(r, g, "species", 2, sw, stype, sp >= 5);
            if (pick(r, 3) == 0) {
                hid_t obj = H5Oopen(g, "species", H5P_DEFAULT);
                if (obj >= 0) {
                    unsigned nt = pick(r, 4);
                    make_attr(r, obj, "names", nt == 3 ? 2 : nt == 2 ? 6 : 5, (int)(pick(r, 4) != 0),
                              pick(r, 2) ? 1 + pick(r, 4) : 300);
                    H5Oclose(obj);
                }
            }
        }
        /* links: an external link in place of an element or elsewhere (to
         * this file, to the raw scratch file, to a missing file), or a soft
         * link in place of one, possibly dangling or a loop */
        unsigned lk = pick(r, 8);
        static const char *lnames[] = {"position", "box", "species", "extra"};
        const char *ln = lnames[pick(r, 4)];
        if (lk == 1 || lk == 2 || lk == 3) {
            H5Ldelete(g, ln, H5P_DEFAULT);
            H5Lcreate_external(lk == 1 ? self_path : lk == 2 ? raw_scratch() : "/nonexistent/mdnl.h5",
                               "/particles/all/position", g, ln, H5P_DEFAULT, H5P_DEFAULT);
        } else if (lk == 4 || lk == 5) {
            H5Ldelete(g, ln, H5P_DEFAULT);
            H5Lcreate_soft(lk == 4 ? "/particles/all/extra" : "/particles/all/nowhere", g, ln, H5P_DEFAULT,
                           H5P_DEFAULT);
        } else if (lk == 6) {
            H5Lcreate_external(self_path, "/", f, "/elsewhere", H5P_DEFAULT, H5P_DEFAULT);
        }
        H5Gclose(g);
        H5Gclose(parts);
    }
    H5Fclose(f);
}

/* The common invariants, and as many atoms as the reader announced. */
static void check_frame(const mdnl_frame *f, int64_t natoms)
{
    if (f->natoms != natoms)
        fuzz_fail("frame", "natoms differs from the reader's");
    fuzz_check_frame(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int init;
    if (!init) {
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        init = 1;
    }
    recipe rc = {data, size};
    const char *path = fuzz_scratch(".h5");
    const char *group = NULL;
    build(&rc, path, &group);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    mdnl_h5md_reader *r = NULL;
    mdnl_status st = mdnl_h5md_open(path, group, &r);
    fuzz_check_error(st, MDNL_ERR_INPUT, path);
    if (st == MDNL_OK) {
        int64_t nf = mdnl_h5md_nframes(r), na = mdnl_h5md_natoms(r);
        if (nf < 0 || na < 0)
            fuzz_fail("open", "negative frame or atom count");
        /* one to three position workers (io/h5_raw.c), from the size so
         * that the recipe's bytes keep their meaning */
        mdnl_h5md_set_threads(r, 1 + (int)(size % 3), 0);
        mdnl_frame f;
        memset(&f, 0, sizeof f);
        unsigned mode = pick(&rc, 3);
        if (mode == 1 && nf > 1) {
            st = mdnl_h5md_seek(r, nf - 1);
            fuzz_check_error(st, MDNL_ERR_INPUT, path);
        } else if (mode == 2) {
            st = mdnl_h5md_skip(r);
            fuzz_check_error(st, MDNL_ERR_INPUT, path);
        }
        for (int k = 0; k < 16 && (st = mdnl_h5md_next(r, &f)) == MDNL_OK; ++k)
            check_frame(&f, na);
        fuzz_check_error(st, MDNL_ERR_INPUT, path);
        mdnl_frame_free(&f);
        mdnl_h5md_close(r);
    }
    mdnl_clear_error();
    return 0;
}

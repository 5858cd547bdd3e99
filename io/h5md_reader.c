/* h5md_reader.c — the H5MD backend of the streaming reader (see h5md_reader.h).
 *
 * Layout: open() validates every dataset of the chosen particle group once
 * (rank, shape, type class, T and N agreement) so that next() only does
 * hyperslab reads plus the per-frame checks that need the data (non-finite
 * coordinates, zero-volume cells, box samples matched by step). Every HDF5
 * call is checked; failures become one line with the file, the frame and the
 * dataset path. HDF5's automatic error printing is switched off once, and
 * the innermost message of its error stack is appended where it helps.
 */
#define _POSIX_C_SOURCE 200809L
#include "h5_error.h"
#include "h5md_reader.h"
#include "chunk_pool.h"
#include "h5_raw.h"

#include <hdf5.h>

#include <ctype.h>
#include <pthread.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PATH_LEN 320
#define MAX_RANK 8

/* A time-dependent H5MD element (group with value/step/time) or a plain
 * dataset (timedep false: only `value` is set). */
/* A block of consecutive samples [lo, lo + n) of one time-dependent dataset,
 * read with one hyperslab: per-frame steps, times and box values come from
 * here, TD_BLOCK samples at a time, instead of one H5Dread per frame (each
 * costs a dataspace, a selection and a chunk lookup, ~10 us; three of them
 * per frame were a tenth of a 100k-atom frame's read). Fixed size: memory
 * does not grow with the number of frames. */
#define TD_BLOCK 256
typedef struct td_cache {
    unsigned char *buf; /* TD_BLOCK samples of `each` bytes */
    size_t each;
    int64_t lo, n;
} td_cache;

typedef struct td_elem {
    hid_t value, step, time; /* H5I_INVALID_HID when absent */
    bool timedep;
    bool step_fixed, time_fixed;
    int64_t step_inc, step_off;
    double time_inc, time_off;
    int64_t nsamples; /* dims[0] of value when timedep */
    int64_t cursor;   /* last sample matched by step */
    int rank;         /* of value */
    hsize_t dims[MAX_RANK];
    char path[PATH_LEN]; /* the element: "/particles/all/box/edges" */
    char vpath[PATH_LEN + 8]; /* the value dataset's path */
    td_cache steps, times, values; /* blocks of samples (td_sample) */
} td_elem;

struct mdnl_h5md_reader {
    char *file;
    char group[PATH_LEN];
    char gpath[PATH_LEN + 16]; /* "/particles/<group>" */
    hid_t fid, gid;
    int64_t file_size; /* bytes, from stat at open: bounds what a dataset can hold */
    int64_t nframes, natoms;
    int64_t next;
    bool skip_finite; /* the caller checks every coordinate (mdnl_h5md_set_finite_check) */

    td_elem pos;
    int threads, copy_threads; /* mdnl_h5md_set_threads */
    struct pos_direct *direct; /* positions from the file's bytes; NULL: H5Dread */

    bool pbc[3];
    bool has_edges;
    td_elem edges;
    double fixed_h[3][3]; /* edges when not time-dependent */
    bool fixed_lattice;   /* fixed edges give a lattice */

    bool has_species;
    td_elem species;
    bool species_string;    /* fixed-length strings, else integers */
    size_t species_strsize; /* bytes per string */
    int nnames;
    char (*names)[MDNL_SYMBOL_LEN]; /* the `names` attribute, owned */
    bool species_cached;            /* fixed species decoded once */
    int32_t *cached_ids;            /* [natoms], owned */
    uint64_t species_tag;           /* of the cache, unique in the process (mdnl_frame.species_tag) */
    int32_t cached_nspecies;
    char (*cached_symbols)[MDNL_SYMBOL_LEN]; /* [MDNL_MAX_SPECIES], owned */
    void *scratch;                           /* one species row, owned */
};

/* --- errors ------------------------------------------------------------- */

static herr_t innermost_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    if (n == 0 && e->desc)
        snprintf((char *)data, 200, "%s", e->desc);
    return 0;
}

const char *mdnl_h5_reason(void)
{
    static _Thread_local char buf[200];
    buf[0] = '\0';
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost_cb, buf);
    return buf[0] ? buf : "no detail from HDF5";
}

static void quiet_hdf5(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

/* "FILE: frame K, PATH: message" (frame < 0: "FILE: PATH: message"). */
static mdnl_status bad(const mdnl_h5md_reader *r, int64_t frame, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static mdnl_status bad(const mdnl_h5md_reader *r, int64_t frame, const char *path, const char *fmt, ...)
{
    char msg[600];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (frame >= 0)
        return mdnl_error(MDNL_ERR_INPUT, "%s: frame %" PRId64 ", %s: %s", r->file, frame, path, msg);
    return mdnl_error(MDNL_ERR_INPUT, "%s: %s: %s", r->file, path, msg);
}

static const char *class_name(H5T_class_t c)
{
    switch (c) {
    case H5T_INTEGER: return "integers";
    case H5T_FLOAT: return "floats";
    case H5T_STRING: return "strings";
    case H5T_BITFIELD: return "bitfields";
    case H5T_OPAQUE: return "opaque data";
    case H5T_COMPOUND: return "compound records";
    case H5T_REFERENCE: return "references";
    case H5T_ENUM: return "enums";
    case H5T_VLEN: return "variable-length sequences";
    case H5T_ARRAY: return "arrays";
    default: return "an unknown type";
    }
}

/* "[3][4][3]" or "a scalar". */
static const char *shape_text(int rank, const hsize_t *dims, char *buf, size_t size)
{
    if (rank == 0) {
        snprintf(buf, size, "a scalar");
        return buf;
    }
    size_t used = 0;
    buf[0] = '\0';
    for (int d = 0; d < rank && used < size; ++d)
        used += (size_t)snprintf(buf + used, size - used, "[%llu]", (unsigned long long)dims[d]);
    return buf;
}

/* --- small HDF5 helpers ------------------------------------------------- */

static void close_id(hid_t *id)
{
    if (*id < 0)
        return;
    switch (H5Iget_type(*id)) {
    case H5I_FILE: H5Fclose(*id); break;
    case H5I_GROUP: H5Gclose(*id); break;
    case H5I_DATASET: H5Dclose(*id); break;
    case H5I_DATATYPE: H5Tclose(*id); break;
    case H5I_DATASPACE: H5Sclose(*id); break;
    case H5I_ATTR: H5Aclose(*id); break;
    case H5I_GENPROP_LST: H5Pclose(*id); break;
    default: break;
    }
    *id = H5I_INVALID_HID;
}

/* --- reading only the file the user named ----------------------------- */

/* External links (and user-defined ones) would make HDF5 open another file
 * by a name the input chooses: /etc/passwd, /dev/zero, a FIFO (open() blocks
 * for ever). open_file refuses a file that holds any (refuse_foreign_links);
 * as a second line, every traversal goes through access lists whose
 * callback refuses to open the target before anything is opened. */
static herr_t refuse_elink(const char *parent_file, const char *parent_group, const char *child_file,
                           const char *child_object, unsigned *flags, hid_t fapl, void *data)
{
    (void)parent_file, (void)parent_group, (void)child_file, (void)child_object, (void)flags, (void)fapl, (void)data;
    return -1;
}

static hid_t safe_lists[3] = {H5I_INVALID_HID, H5I_INVALID_HID, H5I_INVALID_HID}; /* link, group, dataset access */
static void make_safe_lists(void)
{
    /* Group and dataset access lists are link access lists too; HDF5 wants the class the call names. */
    const hid_t cls[3] = {H5P_LINK_ACCESS, H5P_GROUP_ACCESS, H5P_DATASET_ACCESS};
    for (int i = 0; i < 3; ++i) {
        hid_t l = H5Pcreate(cls[i]);
        if (l >= 0 && H5Pset_elink_cb(l, refuse_elink, NULL) >= 0 && H5Pset_nlinks(l, 16) >= 0)
            safe_lists[i] = l;
        else if (l >= 0)
            H5Pclose(l);
    }
}

/* The access list of every traversal of class i (H5P_DEFAULT, which
 * follows external links, only if it cannot be made: refuse_foreign_links
 * has vetted the file then anyway). */
static hid_t safe_list(int i)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, make_safe_lists);
    return safe_lists[i] >= 0 ? safe_lists[i] : H5P_DEFAULT;
}
static hid_t safe_lapl(void) { return safe_list(0); }
static hid_t safe_gapl(void) { return safe_list(1); }
static hid_t safe_dapl(void) { return safe_list(2); }

/* 1 when loc has a link `name`, 0 when not, -1 when the query fails. */
static int has_link(hid_t loc, const char *name)
{
    htri_t e = H5Lexists(loc, name, safe_lapl());
    return e > 0 ? 1 : e == 0 ? 0 : -1;
}

/* Rank and dims of a dataset or attribute's dataspace; -1 on failure. */
static int space_shape(hid_t space, hsize_t *dims)
{
    if (space < 0)
        return -1;
    int rank = H5Sget_simple_extent_ndims(space);
    if (rank < 0 || rank > MAX_RANK)
        return -1;
    if (rank > 0 && H5Sget_simple_extent_dims(space, dims, NULL) < 0)
        return -1;
    return rank;
}

static int dataset_shape(hid_t ds, hsize_t *dims)
{
    hid_t sp = H5Dget_space(ds);
    int rank = space_shape(sp, dims);
    if (sp >= 0)
        H5Sclose(sp);
    return rank;
}

static H5T_class_t dataset_class(hid_t ds, size_t *size)
{
    hid_t t = H5Dget_type(ds);
    if (t < 0)
        return H5T_NO_CLASS;
    H5T_class_t c = H5Tget_class(t);
    if (size)
        *size = H5Tget_size(t);
    if (c == H5T_STRING && H5Tis_variable_str(t) > 0 && size)
        *size = 0; /* variable-length string */
    H5Tclose(t);
    return c;
}

/* Rows [k, k + n) of the first dimension of ds (rank dims; all of the other
 * dimensions) into buf as memtype. */
static herr_t read_rows(hid_t ds, int rank, const hsize_t *dims, int64_t k, int64_t n, hid_t memtype, void *buf)
{
    hsize_t start[MAX_RANK] = {0}, count[MAX_RANK];
    for (int d = 0; d < rank; ++d)
        count[d] = dims[d];
    start[0] = (hsize_t)k;
    count[0] = (hsize_t)n;
    hid_t fs = H5Dget_space(ds);
    if (fs < 0)
        return -1;
    hid_t ms = H5Screate_simple(rank, count, NULL);
    herr_t st = -1;
    if (ms >= 0 && H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL) >= 0)
        st = H5Dread(ds, memtype, ms, fs, H5P_DEFAULT, buf);
    if (ms >= 0)
        H5Sclose(ms);
    H5Sclose(fs);
    return st;
}

/* Row k as read_rows; rank 0 or `whole` reads everything. */
static herr_t read_slab(hid_t ds, int rank, const hsize_t *dims, int64_t k, bool whole, hid_t memtype, void *buf)
{
    if (rank == 0 || whole)
        return H5Dread(ds, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    return read_rows(ds, rank, dims, k, 1, memtype, buf);
}

/* Reads a string-array attribute (fixed- or variable-length strings, rank 0
 * or 1) into out[maxn][width] with trailing NULs and spaces removed. */
static mdnl_status read_string_attr(const mdnl_h5md_reader *r, hid_t obj, const char *objpath, const char *name,
                                    int maxn, size_t width, char *out, int *n)
{
    char where[1100];
    snprintf(where, sizeof where, "%s attribute %s", objpath, name);
    mdnl_status st = MDNL_OK;
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0)
        return bad(r, -1, where, "cannot open the attribute (%s)", mdnl_h5_reason());
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a), mt = H5I_INVALID_HID;
    hsize_t dims[MAX_RANK];
    int rank = space_shape(sp, dims);
    char shp[64];
    if (t < 0 || rank < 0) {
        st = bad(r, -1, where, "cannot query the attribute (%s)", mdnl_h5_reason());
        goto done;
    }
    if (H5Tget_class(t) != H5T_STRING) {
        st = bad(r, -1, where, "expected strings, found %s", class_name(H5Tget_class(t)));
        goto done;
    }
    if (rank > 1 || (rank == 1 && dims[0] > (hsize_t)maxn)) {
        st = bad(r, -1, where, "expected at most %d strings, found %s", maxn, shape_text(rank, dims, shp, sizeof shp));
        goto done;
    }
    int count = rank == 0 ? 1 : (int)dims[0];
    *n = count;
    bool vlen = H5Tis_variable_str(t) > 0;
    size_t tsize = H5Tget_size(t);
    char **ptrs = NULL;
    char *fixed = NULL;
    if (vlen) {
        mt = H5Tcopy(H5T_C_S1);
        /* h5py writes UTF-8: the memory type must carry the file's cset. */
        if (mt < 0 || H5Tset_size(mt, H5T_VARIABLE) < 0 || H5Tset_cset(mt, H5Tget_cset(t)) < 0) {
            st = bad(r, -1, where, "cannot make a string type (%s)", mdnl_h5_reason());
            goto done;
        }
        ptrs = mdnl_calloc((size_t)count, sizeof *ptrs, "string attribute");
        if (!ptrs) {
            st = MDNL_ERR_RESOURCE;
            goto done;
        }
        if (H5Aread(a, mt, ptrs) < 0) {
            free(ptrs);
            st = bad(r, -1, where, "cannot read the attribute (%s)", mdnl_h5_reason());
            goto done;
        }
    } else {
        if (tsize == 0 || tsize > 4096) {
            st = bad(r, -1, where, "expected strings of at most 4096 bytes, found %zu", tsize);
            goto done;
        }
        fixed = mdnl_malloc((size_t)count * tsize, "string attribute");
        if (!fixed) {
            st = MDNL_ERR_RESOURCE;
            goto done;
        }
        if (H5Aread(a, t, fixed) < 0) {
            free(fixed);
            st = bad(r, -1, where, "cannot read the attribute (%s)", mdnl_h5_reason());
            goto done;
        }
    }
    for (int i = 0; i < count && st == MDNL_OK; ++i) {
        const char *s = vlen ? (ptrs[i] ? ptrs[i] : "") : fixed + (size_t)i * tsize;
        size_t len = vlen ? strlen(s) : strnlen(s, tsize);
        while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\0'))
            --len;
        if (len >= width)
            st = bad(r, -1, where, "expected strings of at most %zu characters, found \"%.*s\"", width - 1,
                     (int)(len > 40 ? 40 : len), s);
        else {
            memcpy(out + (size_t)i * width, s, len);
            out[(size_t)i * width + len] = '\0';
        }
    }
    if (vlen) {
#if H5_VERSION_GE(1, 12, 0)
        H5Treclaim(mt, sp, H5P_DEFAULT, ptrs);
#else
        H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, ptrs);
#endif
        free(ptrs);
    }
    free(fixed);
done:
    close_id(&mt);
    close_id(&t);
    close_id(&sp);
    close_id(&a);
    return st;
}

/* Reads an integer scalar attribute. */
static mdnl_status read_int_attr(const mdnl_h5md_reader *r, hid_t obj, const char *objpath, const char *name,
                                 int64_t *v)
{
    char where[1100];
    snprintf(where, sizeof where, "%s attribute %s", objpath, name);
    hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
    if (a < 0)
        return bad(r, -1, where, "cannot open the attribute (%s)", mdnl_h5_reason());
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    hsize_t dims[MAX_RANK];
    int rank = space_shape(sp, dims);
    mdnl_status st = MDNL_OK;
    char shp[64];
    if (t < 0 || rank < 0)
        st = bad(r, -1, where, "cannot query the attribute (%s)", mdnl_h5_reason());
    else if (H5Tget_class(t) != H5T_INTEGER)
        st = bad(r, -1, where, "expected an integer, found %s", class_name(H5Tget_class(t)));
    else if (!(rank == 0 || (rank == 1 && dims[0] == 1)))
        st = bad(r, -1, where, "expected a scalar, found %s", shape_text(rank, dims, shp, sizeof shp));
    else if (H5Aread(a, H5T_NATIVE_INT64, v) < 0)
        st = bad(r, -1, where, "cannot read the attribute (%s)", mdnl_h5_reason());
    close_id(&t);
    close_id(&sp);
    close_id(&a);
    return st;
}

/* Reads an optional numeric scalar attribute `offset` as memtype. */
static mdnl_status read_offset(const mdnl_h5md_reader *r, hid_t ds, const char *path, hid_t memtype, void *v)
{
    htri_t e = H5Aexists(ds, "offset");
    if (e < 0)
        return bad(r, -1, path, "cannot query attribute offset (%s)", mdnl_h5_reason());
    if (e == 0)
        return MDNL_OK;
    hid_t a = H5Aopen(ds, "offset", H5P_DEFAULT);
    if (a < 0)
        return bad(r, -1, path, "cannot open attribute offset (%s)", mdnl_h5_reason());
    hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
    hsize_t dims[MAX_RANK];
    int rank = space_shape(sp, dims);
    char shp[64];
    mdnl_status st = MDNL_OK;
    H5T_class_t c = t >= 0 ? H5Tget_class(t) : H5T_NO_CLASS;
    if (c != H5T_INTEGER && c != H5T_FLOAT)
        st = bad(r, -1, path, "expected a numeric attribute offset, found %s", class_name(c));
    /* H5Aread writes every element: anything but one value would overrun v */
    else if (!(rank == 0 || (rank == 1 && dims[0] == 1)) || H5Sget_simple_extent_npoints(sp) != 1)
        st = bad(r, -1, path, "expected a scalar attribute offset, found %s",
                 rank < 0 ? "an unreadable dataspace" : shape_text(rank, dims, shp, sizeof shp));
    else if (H5Aread(a, memtype, v) < 0)
        st = bad(r, -1, path, "cannot read attribute offset (%s)", mdnl_h5_reason());
    close_id(&t);
    close_id(&sp);
    close_id(&a);
    return st;
}

/* --- what a dataset may be before it is read ------------------------- */

/* A file type mdnl converts itself into double, int64 or a fixed string:
 * IEEE floats of 4 or 8 bytes, whole-byte integers of 1 to 8 bytes, fixed
 * strings of up to 4 KiB (vlen strings are refused where they are not
 * read). A damaged type message can declare a float of 0 bits or a 2^32-byte
 * integer, which HDF5's converters do not all survive. */
static bool plain_type(hid_t t)
{
    H5T_class_t c = H5Tget_class(t);
    size_t size = H5Tget_size(t);
    if (c == H5T_FLOAT)
        return H5Tequal(t, H5T_IEEE_F32LE) > 0 || H5Tequal(t, H5T_IEEE_F32BE) > 0 || H5Tequal(t, H5T_IEEE_F64LE) > 0 ||
               H5Tequal(t, H5T_IEEE_F64BE) > 0;
    if (c == H5T_INTEGER)
        return (size == 1 || size == 2 || size == 4 || size == 8) && H5Tget_precision(t) == 8 * size &&
               H5Tget_offset(t) == 0;
    if (c == H5T_STRING)
        return H5Tis_variable_str(t) > 0 || (size > 0 && size <= 4096);
    return true; /* other classes are refused by the caller with their name */
}

static const char *layout_name(H5D_layout_t l)
{
    switch (l) {
    case H5D_COMPACT: return "compact";
    case H5D_CONTIGUOUS: return "contiguous";
    case H5D_CHUNKED: return "chunked";
    case H5D_VIRTUAL: return "virtual";
    default: return "unknown";
    }
}

/* Checks a dataset before anything reads it: only the file's own bytes
 * (no external raw storage, no virtual dataset), a plain type, a layout
 * and filters this HDF5 decodes, and every element the extent declares
 * actually stored: contiguous and compact data as many bytes as the extent,
 * within the file; chunked data every chunk written. A chunk never written
 * reads as the fill value, data the file does not hold (a 9 KB file may
 * declare 10^12 frames): refused rather than invented. */
static mdnl_status check_dataset(const mdnl_h5md_reader *r, hid_t ds, const char *path)
{
    char shp[64];
    hsize_t dims[MAX_RANK];
    int rank = dataset_shape(ds, dims);
    if (rank < 0)
        return bad(r, -1, path, "cannot query the dataspace (%s)", mdnl_h5_reason());
    hid_t dcpl = H5Dget_create_plist(ds), t = H5Dget_type(ds);
    mdnl_status st = MDNL_OK;
    if (dcpl < 0 || t < 0) {
        st = bad(r, -1, path, "cannot query the dataset (%s)", mdnl_h5_reason());
        goto out;
    }
    H5D_layout_t layout = H5Pget_layout(dcpl);
    if (layout == H5D_VIRTUAL) {
        st = bad(r, -1, path, "expected data stored in this file, found a virtual dataset (refused: its sources are other "
                              "datasets or files)");
        goto out;
    }
    int next = H5Pget_external_count(dcpl);
    if (next < 0) {
        st = bad(r, -1, path, "cannot query the dataset's storage (%s)", mdnl_h5_reason());
        goto out;
    }
    if (next > 0) {
        char name[160] = "";
        off_t off;
        hsize_t size;
        if (H5Pget_external(dcpl, 0, sizeof name, name, &off, &size) < 0)
            name[0] = '\0';
        st = bad(r, -1, path, "expected data stored in this file, found external raw storage in %d file(s)%s%.120s%s "
                              "(refused: mdnl reads only the file it is given)",
                 next, name[0] ? " such as \"" : "", name, name[0] ? "\"" : "");
        goto out;
    }
    if (layout != H5D_CONTIGUOUS && layout != H5D_CHUNKED && layout != H5D_COMPACT) {
        st = bad(r, -1, path, "expected a contiguous, chunked or compact layout, found %s", layout_name(layout));
        goto out;
    }
    if (!plain_type(t)) {
        st = bad(r, -1, path, "expected IEEE floats of 4 or 8 bytes, integers of 1 to 8 bytes or strings of at most "
                              "4096 bytes, found %s of %zu bytes (precision %zu)",
                 class_name(H5Tget_class(t)), H5Tget_size(t), H5Tget_precision(t));
        goto out;
    }
    int nf = H5Pget_nfilters(dcpl);
    if (nf < 0 || nf > 8) {
        st = bad(r, -1, path, "expected at most 8 filters, found %d", nf);
        goto out;
    }
    for (int i = 0; i < nf; ++i) {
        unsigned flags = 0, cd[8];
        size_t ncd = 8;
        char fname[64] = "";
        H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof fname, fname, NULL);
        bool known = id == H5Z_FILTER_DEFLATE || id == H5Z_FILTER_SHUFFLE || id == H5Z_FILTER_FLETCHER32 ||
                     id == H5Z_FILTER_SZIP;
        if (!known || H5Zfilter_avail(id) <= 0) {
            st = bad(r, -1, path, "expected the filters deflate, shuffle, fletcher32 or szip, found filter %d%s%.40s%s",
                     (int)id, fname[0] ? " (\"" : "", fname, fname[0] ? "\")" : "");
            goto out;
        }
    }
    /* What the extent declares, in bytes (saturated: a damaged extent may
     * overflow 64 bits) */
    double elems = 1;
    for (int d = 0; d < rank; ++d)
        elems *= (double)dims[d];
    const double need = elems * (double)H5Tget_size(t);
    const double fsize = (double)r->file_size;
    if (layout == H5D_CHUNKED) {
        hsize_t cd[MAX_RANK];
        int crank = H5Pget_chunk(dcpl, MAX_RANK, cd);
        bool ok = crank == rank;
        double chunks = 1, cbytes = (double)H5Tget_size(t);
        for (int d = 0; ok && d < rank; ++d) {
            ok = cd[d] > 0;
            chunks *= ok ? ceil((double)dims[d] / (double)cd[d]) : 0;
            cbytes *= (double)cd[d];
        }
        if (!ok) {
            st = bad(r, -1, path, "expected chunks of rank %d with every dimension at least 1, found rank %d", rank,
                     crank);
            goto out;
        }
        /* HDF5 allocates a whole chunk to read from it: a chunk can hold at
         * most what the file could inflate to (as for frames: 4096 x). */
        if (cbytes > 4096.0 * fsize + 64.0 * 1048576.0 || cbytes > 4294967295.0) {
            st = bad(r, -1, path, "expected chunks of at most %.0f bytes for a file of %.0f bytes, found chunks of %.0f "
                                  "bytes %s",
                     fmin(4096.0 * fsize + 64.0 * 1048576.0, 4294967295.0), fsize, cbytes,
                     shape_text(crank, cd, shp, sizeof shp));
            goto out;
        }
        /* Each written chunk costs the file an index entry of 8+ bytes:
         * more chunks than bytes cannot all be there (no count needed). */
        hsize_t written = 0;
        if (chunks > fsize) {
            st = bad(r, -1, path, "expected every chunk of the extent %s written, found a file of %.0f bytes for %.0f "
                                  "chunks (declared data the file does not hold)",
                     shape_text(rank, dims, shp, sizeof shp), fsize, chunks);
            goto out;
        }
        hid_t fs = chunks > 0 ? H5Dget_space(ds) : H5I_INVALID_HID;
        herr_t counted = chunks > 0 ? (fs >= 0 ? H5Dget_num_chunks(ds, fs, &written) : -1) : 0;
        close_id(&fs);
        if (counted < 0) {
            st = bad(r, -1, path, "cannot count the written chunks (%s)", mdnl_h5_reason());
            goto out;
        }
        if ((double)written != chunks) {
            st = bad(r, -1, path, "expected every chunk of the extent %s written (%.0f), found %llu%s",
                     shape_text(rank, dims, shp, sizeof shp), chunks, (unsigned long long)written,
                     (double)written < chunks ? " (declared data the file does not hold)" : "");
            goto out;
        }
        /* Unfiltered chunks are stored whole: HDF5 trusts the layout's chunk
         * size when it copies one, so a damaged layout (a chunk dimension
         * 1 -> 254) overran its buffer (ASan, byte-flip sweep). */
        double stored = (double)H5Dget_storage_size(ds);
        if (nf == 0 && stored != (double)written * cbytes) {
            st = bad(r, -1, path, "expected %llu chunks %s of %.0f bytes stored, found %.0f bytes",
                     (unsigned long long)written, shape_text(crank, cd, shp, sizeof shp), cbytes, stored);
            goto out;
        }
    } else if (need > 0) {
        double stored = (double)H5Dget_storage_size(ds);
        haddr_t at = layout == H5D_CONTIGUOUS ? H5Dget_offset(ds) : 0;
        if (stored < need || (layout == H5D_CONTIGUOUS && (at == HADDR_UNDEF || (double)at + need > fsize))) {
            st = bad(r, -1, path, "expected %.0f bytes stored for the extent %s, found %.0f%s (declared data the file "
                                  "does not hold)",
                     need, shape_text(rank, dims, shp, sizeof shp), stored,
                     layout == H5D_CONTIGUOUS && at != HADDR_UNDEF && (double)at + need > fsize ? " past the file's end"
                                                                                               : "");
            goto out;
        }
    }
out:
    close_id(&t);
    close_id(&dcpl);
    return st;
}

/* --- time-dependent elements ------------------------------------------- */

static void td_init(td_elem *e)
{
    memset(e, 0, sizeof *e);
    e->value = e->step = e->time = H5I_INVALID_HID;
}

static void td_close(td_elem *e)
{
    close_id(&e->value);
    close_id(&e->step);
    close_id(&e->time);
    free(e->steps.buf);
    free(e->times.buf);
    free(e->values.buf);
    e->steps.buf = e->times.buf = e->values.buf = NULL;
}

/* Opens `name` under parent (full path `path`) as a plain dataset or a
 * time-dependent group, validates step/time against value's first dimension.
 * *present is false (and MDNL_OK returned) when the link does not exist. */
static mdnl_status td_open(mdnl_h5md_reader *r, hid_t parent, const char *name, const char *path, td_elem *e,
                           bool *present)
{
    td_init(e);
    snprintf(e->path, sizeof e->path, "%s", path);
    snprintf(e->vpath, sizeof e->vpath, "%s", path);
    int ex = has_link(parent, name);
    if (ex < 0)
        return bad(r, -1, path, "cannot query the link (%s)", mdnl_h5_reason());
    *present = ex == 1;
    if (!ex)
        return MDNL_OK;
    hid_t obj = H5Oopen(parent, name, safe_lapl());
    if (obj < 0)
        return bad(r, -1, path, "cannot open the object (%s)", mdnl_h5_reason());
    H5I_type_t type = H5Iget_type(obj);
    char shp[64];
    if (type == H5I_DATASET) {
        e->value = obj;
        e->rank = dataset_shape(obj, e->dims);
        if (e->rank < 0)
            return bad(r, -1, path, "cannot query the dataspace (%s)", mdnl_h5_reason());
        return check_dataset(r, obj, path);
    }
    if (type != H5I_GROUP) {
        H5Oclose(obj);
        return bad(r, -1, path, "expected a dataset or a group, found another kind of object");
    }
    e->timedep = true;
    snprintf(e->vpath, sizeof e->vpath, "%s/value", path);
    mdnl_status st = MDNL_OK;
    int has_value = has_link(obj, "value");
    if (has_value != 1) {
        st = bad(r, -1, e->vpath, "expected the value dataset of a time-dependent element, found %s",
                 has_value < 0 ? "an unreadable link" : "nothing");
        goto out;
    }
    e->value = H5Dopen2(obj, "value", safe_dapl());
    if (e->value < 0) {
        st = bad(r, -1, e->vpath, "cannot open the dataset (%s)", mdnl_h5_reason());
        goto out;
    }
    if ((st = check_dataset(r, e->value, e->vpath)) != MDNL_OK)
        goto out;
    e->rank = dataset_shape(e->value, e->dims);
    if (e->rank < 1) {
        st = bad(r, -1, e->vpath, "expected [T][...] (one row per sample), found %s",
                 e->rank < 0 ? "an unreadable dataspace" : "a scalar");
        goto out;
    }
    e->nsamples = (int64_t)e->dims[0];

    /* step: required, integer, [T] or a scalar increment. */
    char spath[PATH_LEN + 8], tpath[PATH_LEN + 8];
    snprintf(spath, sizeof spath, "%s/step", path);
    snprintf(tpath, sizeof tpath, "%s/time", path);
    int hs = has_link(obj, "step");
    if (hs != 1) {
        st = bad(r, -1, spath, "expected an integer dataset [%" PRId64 "] or a scalar step increment, found %s",
                 e->nsamples, hs < 0 ? "an unreadable link" : "nothing");
        goto out;
    }
    e->step = H5Dopen2(obj, "step", safe_dapl());
    if (e->step < 0) {
        st = bad(r, -1, spath, "cannot open the dataset (%s)", mdnl_h5_reason());
        goto out;
    }
    if ((st = check_dataset(r, e->step, spath)) != MDNL_OK)
        goto out;
    hsize_t d[MAX_RANK];
    int rk = dataset_shape(e->step, d);
    H5T_class_t c = dataset_class(e->step, NULL);
    if (c != H5T_INTEGER) {
        st = bad(r, -1, spath, "expected integers, found %s", class_name(c));
        goto out;
    }
    if (rk == 0) {
        e->step_fixed = true;
        if (H5Dread(e->step, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &e->step_inc) < 0) {
            st = bad(r, -1, spath, "cannot read the dataset (%s)", mdnl_h5_reason());
            goto out;
        }
        if ((st = read_offset(r, e->step, spath, H5T_NATIVE_INT64, &e->step_off)) != MDNL_OK)
            goto out;
    } else if (!(rk == 1 && d[0] == e->dims[0])) {
        st = bad(r, -1, spath, "expected [%" PRId64 "] (one step per sample of %s) or a scalar, found %s",
                 e->nsamples, e->vpath, rk < 0 ? "an unreadable dataspace" : shape_text(rk, d, shp, sizeof shp));
        goto out;
    }

    /* time: optional, numeric, [T] or a scalar increment. */
    int ht = has_link(obj, "time");
    if (ht < 0) {
        st = bad(r, -1, tpath, "cannot query the link (%s)", mdnl_h5_reason());
        goto out;
    }
    if (ht == 1) {
        e->time = H5Dopen2(obj, "time", safe_dapl());
        if (e->time < 0) {
            st = bad(r, -1, tpath, "cannot open the dataset (%s)", mdnl_h5_reason());
            goto out;
        }
        if ((st = check_dataset(r, e->time, tpath)) != MDNL_OK)
            goto out;
        rk = dataset_shape(e->time, d);
        c = dataset_class(e->time, NULL);
        if (c != H5T_INTEGER && c != H5T_FLOAT) {
            st = bad(r, -1, tpath, "expected numbers, found %s", class_name(c));
            goto out;
        }
        if (rk == 0) {
            e->time_fixed = true;
            if (H5Dread(e->time, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &e->time_inc) < 0) {
                st = bad(r, -1, tpath, "cannot read the dataset (%s)", mdnl_h5_reason());
                goto out;
            }
            if ((st = read_offset(r, e->time, tpath, H5T_NATIVE_DOUBLE, &e->time_off)) != MDNL_OK)
                goto out;
        } else if (!(rk == 1 && d[0] == e->dims[0])) {
            st = bad(r, -1, tpath, "expected [%" PRId64 "] (one time per sample of %s) or a scalar, found %s",
                     e->nsamples, e->vpath, rk < 0 ? "an unreadable dataspace" : shape_text(rk, d, shp, sizeof shp));
            goto out;
        }
    }
out:
    H5Oclose(obj);
    return st;
}

/* Sample k of ds (rank dims, first dimension the samples) as `each` bytes of
 * memtype, from c's block, reading the block that starts at k when k is not
 * in it; NULL on a read error. */
static const void *td_sample(hid_t ds, int rank, const hsize_t *dims, int64_t k, hid_t memtype, size_t each,
                             td_cache *c)
{
    if (c->buf && c->each == each && k >= c->lo && k < c->lo + c->n)
        return c->buf + (size_t)(k - c->lo) * each;
    if (!c->buf || c->each != each) {
        free(c->buf);
        c->n = 0;
        c->each = each;
        if (!(c->buf = malloc(TD_BLOCK * each)))
            return NULL;
    }
    int64_t n = (int64_t)dims[0] - k;
    n = n > TD_BLOCK ? TD_BLOCK : n;
    if (k < 0 || n < 1)
        return NULL;
    if (read_rows(ds, rank, dims, k, n, memtype, c->buf) < 0) {
        c->n = 0;
        return NULL;
    }
    c->lo = k;
    c->n = n;
    return c->buf;
}

static mdnl_status td_step(const mdnl_h5md_reader *r, int64_t frame, td_elem *e, int64_t k, int64_t *s)
{
    if (e->step_fixed) { /* offset and increment come from the file: no signed overflow (UBSan, fuzz_h5md) */
        int64_t ks;
        if (__builtin_mul_overflow(k, e->step_inc, &ks) || __builtin_add_overflow(e->step_off, ks, s))
            return bad(r, frame, e->path,
                       "expected steps within 64 bits, found offset %" PRId64 " + %" PRId64 " x step %" PRId64,
                       e->step_off, k, e->step_inc);
        return MDNL_OK;
    }
    hsize_t d[1] = {(hsize_t)e->nsamples};
    const void *p = td_sample(e->step, 1, d, k, H5T_NATIVE_INT64, sizeof *s, &e->steps);
    if (!p)
        return bad(r, frame, e->path, "cannot read step of sample %" PRId64 " (%s)", k, mdnl_h5_reason());
    memcpy(s, p, sizeof *s);
    return MDNL_OK;
}

static mdnl_status td_time(const mdnl_h5md_reader *r, int64_t frame, td_elem *e, int64_t k, double *t)
{
    if (e->time_fixed) {
        *t = e->time_off + (double)k * e->time_inc;
        return MDNL_OK;
    }
    hsize_t d[1] = {(hsize_t)e->nsamples};
    const void *p = td_sample(e->time, 1, d, k, H5T_NATIVE_DOUBLE, sizeof *t, &e->times);
    if (!p)
        return bad(r, frame, e->path, "cannot read time of sample %" PRId64 " (%s)", k, mdnl_h5_reason());
    memcpy(t, p, sizeof *t);
    return MDNL_OK;
}

/* The sample of e that applies to position frame `frame` at step s: the
 * sample with the same index when its step equals s (the usual case, one
 * read), else the latest sample whose step is not after s. */
static mdnl_status td_locate(mdnl_h5md_reader *r, int64_t frame, int64_t s, td_elem *e, int64_t *k)
{
    int64_t es;
    mdnl_status st;
    if (e->nsamples == 0)
        return bad(r, frame, e->vpath, "expected a sample at or before step %" PRId64 ", found no samples", s);
    if (frame < e->nsamples) {
        if ((st = td_step(r, frame, e, frame, &es)) != MDNL_OK)
            return st;
        if (es == s) {
            *k = e->cursor = frame;
            return MDNL_OK;
        }
    }
    int64_t c = e->cursor;
    if ((st = td_step(r, frame, e, c, &es)) != MDNL_OK)
        return st;
    if (es > s) { /* after a seek backwards */
        c = 0;
        if ((st = td_step(r, frame, e, 0, &es)) != MDNL_OK)
            return st;
        if (es > s)
            return bad(r, frame, e->vpath,
                       "expected a sample at or before step %" PRId64 ", found the first sample at step %" PRId64, s,
                       es);
    }
    while (c + 1 < e->nsamples) {
        if ((st = td_step(r, frame, e, c + 1, &es)) != MDNL_OK)
            return st;
        if (es > s)
            break;
        ++c;
    }
    *k = e->cursor = c;
    return MDNL_OK;
}

/* --- open --------------------------------------------------------------- */

bool mdnl_hdf5_threadsafe(void)
{
    hbool_t ts = 0;
    return H5is_library_threadsafe(&ts) >= 0 && ts;
}

bool mdnl_h5md_is_hdf5(const char *path)
{
    static const unsigned char sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
    unsigned char buf[8];
    /* Only a regular file: peeking at a pipe (`<(zcat x.xyz.gz)`, a FIFO)
     * would eat its first bytes, and the reader's own open would then wait
     * for a writer that is gone (mdnl hung). HDF5 needs a regular file anyway. */
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return false;
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return false;
    size_t n = fread(buf, 1, 8, fp);
    fclose(fp);
    return n == 8 && memcmp(buf, sig, 8) == 0;
}

/* The first external or user-defined link met by refuse_foreign_links. */
typedef struct foreign_link {
    bool found;
    char path[PATH_LEN];
    char target[PATH_LEN];
} foreign_link;

static herr_t foreign_cb(hid_t g, const char *name, const H5L_info_t *info, void *data)
{
    foreign_link *fl = data;
    if (info->type == H5L_TYPE_HARD || info->type == H5L_TYPE_SOFT)
        return 0; /* soft links resolve by path inside this file */
    fl->found = true;
    snprintf(fl->path, sizeof fl->path, "/%s", name);
    snprintf(fl->target, sizeof fl->target, "a link of user-defined type %d", (int)info->type);
    if (info->type == H5L_TYPE_EXTERNAL && info->u.val_size > 0 && info->u.val_size < 4096) {
        char val[4096];
        const char *file = NULL, *obj = NULL;
        unsigned flags = 0;
        if (H5Lget_val(g, name, val, info->u.val_size, safe_lapl()) >= 0 &&
            H5Lunpack_elink_val(val, info->u.val_size, &flags, &file, &obj) >= 0 && file && obj)
            snprintf(fl->target, sizeof fl->target, "an external link to %.140s:%.140s", file, obj);
        else
            snprintf(fl->target, sizeof fl->target, "an external link");
    } else if (info->type == H5L_TYPE_EXTERNAL) {
        snprintf(fl->target, sizeof fl->target, "an external link");
    }
    return 1; /* stop: one is enough */
}

/* MDNL_ERR_INPUT when the file holds an external or user-defined link
 * anywhere (H5Lvisit follows hard links only, each object once): mdnl reads
 * the file the user named and nothing it points to. */
static mdnl_status refuse_foreign_links(const char *path, hid_t fid)
{
    foreign_link fl = {0};
    herr_t st = H5Lvisit(fid, H5_INDEX_NAME, H5_ITER_NATIVE, foreign_cb, &fl);
    if (fl.found)
        return mdnl_error(MDNL_ERR_INPUT,
                          "%s: %s: expected objects inside this file, found %s (mdnl reads only the file it is given)",
                          path, fl.path, fl.target);
    if (st < 0)
        return mdnl_error(MDNL_ERR_INPUT, "%s: cannot list the file's links (%s)", path, mdnl_h5_reason());
    return MDNL_OK;
}

/* Opens path read-only after checking it exists and is HDF5. */
static mdnl_status open_file(const char *path, hid_t *fid, int64_t *file_size)
{
    quiet_hdf5();
    struct stat sb;
    if (stat(path, &sb) != 0)
        return mdnl_error(MDNL_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode))
        return mdnl_error(MDNL_ERR_INPUT, "%s: expected an HDF5 file, found a directory", path);
    if (!mdnl_h5md_is_hdf5(path))
        return mdnl_error(MDNL_ERR_INPUT, "%s: expected an HDF5 file, found no HDF5 signature", path);
    /* The default close degree: a file may be opened twice in one process
     * only with the same degree, and every object is closed explicitly. */
    *fid = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (*fid < 0)
        return mdnl_error(MDNL_ERR_INPUT, "%s: cannot open as HDF5 (%s)", path, mdnl_h5_reason());
    *file_size = (int64_t)sb.st_size;
    mdnl_status st = refuse_foreign_links(path, *fid);
    if (st != MDNL_OK) {
        H5Fclose(*fid);
        *fid = H5I_INVALID_HID;
    }
    return st;
}

/* Comma-separated names of the links under `loc` into buf. */
static int list_links(hid_t loc, char *buf, size_t size)
{
    H5G_info_t info;
    buf[0] = '\0';
    if (H5Gget_info(loc, &info) < 0)
        return -1;
    size_t used = 0;
    for (hsize_t i = 0; i < info.nlinks; ++i) {
        char name[PATH_LEN];
        ssize_t n = H5Lget_name_by_idx(loc, ".", H5_INDEX_NAME, H5_ITER_INC, i, name, sizeof name, H5P_DEFAULT);
        if (n < 0)
            return -1;
        if (used + 1 < size)
            used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", name);
    }
    return (int)info.nlinks;
}

mdnl_status mdnl_h5md_list_groups(const char *path, char *buf, size_t size)
{
    hid_t fid;
    int64_t fsize;
    mdnl_status st = open_file(path, &fid, &fsize);
    if (st != MDNL_OK)
        return st;
    hid_t p = H5Gopen2(fid, "/particles", safe_gapl());
    if (p < 0) {
        H5Fclose(fid);
        return mdnl_error(MDNL_ERR_INPUT, "%s: /particles: expected an H5MD particles group, found none", path);
    }
    if (list_links(p, buf, size) < 0)
        st = mdnl_error(MDNL_ERR_INPUT, "%s: /particles: cannot list the groups (%s)", path, mdnl_h5_reason());
    H5Gclose(p);
    H5Fclose(fid);
    return st;
}

/* Picks and opens the particle group (SPEC §6 default rule). */
static mdnl_status open_group(mdnl_h5md_reader *r, const char *group)
{
    int e = has_link(r->fid, "particles");
    if (e != 1)
        return bad(r, -1, "/particles", "expected an H5MD particles group, found %s",
                   e < 0 ? "an unreadable link" : "none");
    hid_t p = H5Gopen2(r->fid, "/particles", safe_gapl());
    if (p < 0)
        return bad(r, -1, "/particles", "expected a group (%s)", mdnl_h5_reason());
    char names[1024];
    int n = list_links(p, names, sizeof names);
    mdnl_status st = MDNL_OK;
    if (n < 0) {
        st = bad(r, -1, "/particles", "cannot list the groups (%s)", mdnl_h5_reason());
    } else if (group) {
        if (strlen(group) == 0 || strchr(group, '/') || strlen(group) >= PATH_LEN - 16 || has_link(p, group) != 1)
            st = bad(r, -1, "/particles", "expected a particle group named \"%s\", found %s%s", group,
                     n ? "only: " : "no groups", names);
        else
            memcpy(r->group, group, strlen(group) + 1); /* length checked above */
    } else if (n == 1) {
        if (strlen(names) >= PATH_LEN - 16)
            st = bad(r, -1, "/particles", "expected a group name shorter than %d characters", PATH_LEN - 16);
        else
            memcpy(r->group, names, strlen(names) + 1); /* length checked above */
    } else if (has_link(p, "all") == 1) {
        snprintf(r->group, sizeof r->group, "all");
    } else {
        st = bad(r, -1, "/particles",
                 "expected a single particle group or one named \"all\" (choose one with --group), found %s%s",
                 n ? "groups: " : "no groups", names);
    }
    if (st == MDNL_OK) {
        snprintf(r->gpath, sizeof r->gpath, "/particles/%s", r->group);
        r->gid = H5Gopen2(p, r->group, safe_gapl());
        if (r->gid < 0)
            st = bad(r, -1, r->gpath, "expected a particle group (%s)", mdnl_h5_reason());
    }
    H5Gclose(p);
    return st;
}

/* A bigger chunk cache for position/value when one chunk holds several
 * frames: without it, HDF5's default 1 MiB cache re-reads (and re-inflates)
 * the chunk once per frame. */
static void widen_chunk_cache(mdnl_h5md_reader *r)
{
    hid_t dcpl = H5Dget_create_plist(r->pos.value);
    if (dcpl < 0)
        return;
    hsize_t cd[MAX_RANK];
    size_t esize = 0;
    dataset_class(r->pos.value, &esize);
    if (H5Pget_layout(dcpl) == H5D_CHUNKED && H5Pget_chunk(dcpl, 3, cd) == 3 && cd[0] > 1) {
        size_t bytes = (size_t)(cd[0] * cd[1] * cd[2]) * esize;
        if (bytes > ((size_t)1 << 20) && bytes <= ((size_t)1 << 30)) {
            hid_t dapl = H5Pcopy(safe_dapl());
            hid_t gp = H5Gopen2(r->gid, "position", safe_gapl());
            if (dapl >= 0 && gp >= 0 && H5Pset_chunk_cache(dapl, 521, bytes + (bytes >> 3), 1.0) >= 0) {
                hid_t ds = H5Dopen2(gp, "value", dapl);
                if (ds >= 0) {
                    H5Dclose(r->pos.value);
                    r->pos.value = ds;
                }
            }
            if (gp >= 0)
                H5Gclose(gp);
            if (dapl >= 0)
                H5Pclose(dapl);
        }
    }
    H5Pclose(dcpl);
}

static mdnl_status open_position(mdnl_h5md_reader *r)
{
    char path[1024], shp[64];
    snprintf(path, sizeof path, "%s/position", r->gpath);
    bool present;
    mdnl_status st = td_open(r, r->gid, "position", path, &r->pos, &present);
    if (st != MDNL_OK)
        return st;
    if (!present)
        return bad(r, -1, path, "expected a time-dependent group with value and step, found nothing");
    if (!r->pos.timedep)
        return bad(r, -1, path, "expected a time-dependent group with value and step, found a dataset");
    size_t esize = 0;
    H5T_class_t c = dataset_class(r->pos.value, &esize);
    if (c != H5T_FLOAT && c != H5T_INTEGER)
        return bad(r, -1, r->pos.vpath, "expected numbers (float or double), found %s", class_name(c));
    if (r->pos.rank != 3 || r->pos.dims[2] != 3)
        return bad(r, -1, r->pos.vpath, "expected [T][N][3], found %s",
                   shape_text(r->pos.rank, r->pos.dims, shp, sizeof shp));
    r->nframes = (int64_t)r->pos.dims[0];
    r->natoms = (int64_t)r->pos.dims[1];
    if (r->natoms > INT32_MAX)
        return bad(r, -1, r->pos.vpath, "expected at most %d atoms, found %" PRId64, INT32_MAX, r->natoms);
    /* A declared but unwritten (or absurdly compressed) dataset must not make
     * us allocate what the file does not hold: one frame may expand to at
     * most 4096 times the stored bytes of the whole dataset, plus 64 MiB. */
    double frame_bytes = (double)r->natoms * 24.0;
    double stored = (double)H5Dget_storage_size(r->pos.value);
    if (r->nframes > 0 && frame_bytes > 4096.0 * stored + 64.0 * 1048576.0)
        return bad(r, -1, r->pos.vpath, "expected stored data for %" PRId64 " atoms, found only %.0f bytes", r->natoms,
                   stored);
    widen_chunk_cache(r);
    return MDNL_OK;
}

static mdnl_status check_cell(const mdnl_h5md_reader *r, int64_t frame, const char *path, double h[3][3],
                              bool *lattice)
{
    bool any_pbc = r->pbc[0] || r->pbc[1] || r->pbc[2];
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b)
            if (!isfinite(h[a][b]))
                return bad(r, frame, path, "expected finite edges, found %g in row %d", h[a][b], a);
    mdnl_box box = {.has_lattice = true};
    memcpy(box.h, h, sizeof box.h);
    double v = mdnl_box_volume(&box);
    if (!(v > 0.0)) {
        if (any_pbc)
            return bad(r, frame, path, "expected a cell of nonzero volume for a periodic boundary, found volume %g",
                       v);
        *lattice = false; /* all-zero edges of an open box: no cell */
        return MDNL_OK;
    }
    *lattice = true;
    return MDNL_OK;
}

/* Reads one edges row (sample k, or the dataset when fixed) into h. */
static mdnl_status read_edges(mdnl_h5md_reader *r, int64_t frame, int64_t k, double h[3][3])
{
    td_elem *e = &r->edges;
    double buf[9];
    int tail = e->rank - (e->timedep ? 1 : 0); /* 1: [3], 2: [3][3] */
    if (e->timedep) {
        const void *p = td_sample(e->value, e->rank, e->dims, k, H5T_NATIVE_DOUBLE,
                                  (tail == 1 ? 3 : 9) * sizeof(double), &e->values);
        if (!p)
            return bad(r, frame, e->vpath, "cannot read the edges (%s)", mdnl_h5_reason());
        memcpy(buf, p, (tail == 1 ? 3 : 9) * sizeof(double));
    } else if (read_slab(e->value, e->rank, e->dims, k, true, H5T_NATIVE_DOUBLE, buf) < 0) {
        return bad(r, frame, e->vpath, "cannot read the edges (%s)", mdnl_h5_reason());
    }
    memset(h, 0, 9 * sizeof(double));
    if (tail == 1)
        h[0][0] = buf[0], h[1][1] = buf[1], h[2][2] = buf[2];
    else
        memcpy(h, buf, sizeof buf);
    return MDNL_OK;
}

static mdnl_status open_box(mdnl_h5md_reader *r)
{
    char path[1024], shp[64];
    snprintf(path, sizeof path, "%s/box", r->gpath);
    int e = has_link(r->gid, "box");
    if (e != 1)
        return bad(r, -1, path, "expected an H5MD box group with attributes dimension and boundary, found %s",
                   e < 0 ? "an unreadable link" : "nothing");
    hid_t box = H5Gopen2(r->gid, "box", safe_gapl());
    if (box < 0)
        return bad(r, -1, path, "expected a group (%s)", mdnl_h5_reason());
    mdnl_status st = MDNL_OK;
    int64_t dim;
    char attr[1100];
    snprintf(attr, sizeof attr, "%s attribute dimension", path);
    htri_t ex = H5Aexists(box, "dimension");
    if (ex <= 0) {
        st = bad(r, -1, attr, "expected the number of dimensions (3), found %s",
                 ex < 0 ? "an unreadable attribute" : "nothing");
        goto out;
    }
    if ((st = read_int_attr(r, box, path, "dimension", &dim)) != MDNL_OK)
        goto out;
    if (dim != 3) {
        st = bad(r, -1, attr, "expected 3, found %" PRId64, dim);
        goto out;
    }
    snprintf(attr, sizeof attr, "%s attribute boundary", path);
    ex = H5Aexists(box, "boundary");
    if (ex <= 0) {
        st = bad(r, -1, attr, "expected 3 strings \"periodic\" or \"none\", found %s",
                 ex < 0 ? "an unreadable attribute" : "nothing");
        goto out;
    }
    char bnd[3][16];
    int nb = 0;
    if ((st = read_string_attr(r, box, path, "boundary", 3, 16, &bnd[0][0], &nb)) != MDNL_OK)
        goto out;
    if (nb != 3) {
        st = bad(r, -1, attr, "expected 3 strings \"periodic\" or \"none\", found %d", nb);
        goto out;
    }
    for (int a = 0; a < 3; ++a) {
        if (strcmp(bnd[a], "periodic") == 0)
            r->pbc[a] = true;
        else if (strcmp(bnd[a], "none") == 0)
            r->pbc[a] = false;
        else {
            st = bad(r, -1, attr, "expected \"periodic\" or \"none\" for axis %c, found \"%s\"", 'x' + a, bnd[a]);
            goto out;
        }
    }

    snprintf(path, sizeof path, "%s/box/edges", r->gpath);
    if ((st = td_open(r, box, "edges", path, &r->edges, &r->has_edges)) != MDNL_OK)
        goto out;
    if (!r->has_edges) {
        if (r->pbc[0] || r->pbc[1] || r->pbc[2])
            st = bad(r, -1, path, "expected edges for a periodic boundary, found nothing");
        goto out;
    }
    td_elem *ed = &r->edges;
    H5T_class_t c = dataset_class(ed->value, NULL);
    if (c != H5T_FLOAT && c != H5T_INTEGER) {
        st = bad(r, -1, ed->vpath, "expected numbers, found %s", class_name(c));
        goto out;
    }
    int off = ed->timedep ? 1 : 0;
    int tail = ed->rank - off;
    bool ok = (tail == 1 && ed->dims[off] == 3) || (tail == 2 && ed->dims[off] == 3 && ed->dims[off + 1] == 3);
    if (!ok) {
        st = bad(r, -1, ed->vpath, "expected %s, found %s", ed->timedep ? "[T][3] or [T][3][3]" : "[3] or [3][3]",
                 shape_text(ed->rank, ed->dims, shp, sizeof shp));
        goto out;
    }
    if (!ed->timedep) {
        if ((st = read_edges(r, -1, 0, r->fixed_h)) != MDNL_OK)
            goto out;
        st = check_cell(r, -1, ed->vpath, r->fixed_h, &r->fixed_lattice);
    }
out:
    H5Gclose(box);
    return st;
}

static mdnl_status open_species(mdnl_h5md_reader *r)
{
    char path[1024], shp[64];
    snprintf(path, sizeof path, "%s/species", r->gpath);
    mdnl_status st = td_open(r, r->gid, "species", path, &r->species, &r->has_species);
    if (st != MDNL_OK || !r->has_species)
        return st;
    td_elem *e = &r->species;
    size_t size = 0;
    H5T_class_t c = dataset_class(e->value, &size);
    if (c == H5T_STRING && size > 0 && size < 4096) {
        r->species_string = true;
        r->species_strsize = size;
    } else if (c == H5T_STRING) {
        return bad(r, -1, e->vpath, "expected integers or fixed-length strings, found variable-length strings");
    } else if (c != H5T_INTEGER) {
        return bad(r, -1, e->vpath, "expected integers, found %s", class_name(c));
    }
    int off = e->timedep ? 1 : 0;
    if (e->rank != 1 + off || (int64_t)e->dims[off] != r->natoms)
        return bad(r, -1, e->vpath, "expected %s[%" PRId64 "] (one per atom of %s), found %s",
                   e->timedep ? "[T]" : "", r->natoms, r->pos.vpath, shape_text(e->rank, e->dims, shp, sizeof shp));
    /* mdnl's symbol table: code k is names[k]. */
    hid_t obj = H5Oopen(r->gid, "species", safe_lapl());
    if (obj < 0)
        return bad(r, -1, path, "cannot open the object (%s)", mdnl_h5_reason());
    htri_t ex = H5Aexists(obj, "names");
    if (ex < 0)
        st = bad(r, -1, path, "cannot query attribute names (%s)", mdnl_h5_reason());
    else if (ex > 0) {
        r->names = mdnl_calloc(MDNL_MAX_SPECIES, MDNL_SYMBOL_LEN, "species names");
        st = r->names ? read_string_attr(r, obj, path, "names", MDNL_MAX_SPECIES, MDNL_SYMBOL_LEN, &r->names[0][0],
                                         &r->nnames)
                      : MDNL_ERR_RESOURCE;
    }
    H5Oclose(obj);
    if (st != MDNL_OK)
        return st;
    size_t row = (size_t)r->natoms * (r->species_string ? r->species_strsize : sizeof(int64_t));
    /* As for positions (open_position): strings of up to 4 KiB per atom must
     * not make a declared but unwritten dataset cost more than it stores. */
    double stored = (double)H5Dget_storage_size(e->value);
    if (r->natoms > 0 && (double)row > 4096.0 * stored + 64.0 * 1048576.0)
        return bad(r, -1, e->vpath, "expected stored data for %" PRId64 " species of %zu bytes, found only %.0f bytes",
                   r->natoms, r->species_string ? r->species_strsize : sizeof(int64_t), stored);
    r->scratch = mdnl_malloc(row, "species row");
    return r->scratch ? MDNL_OK : MDNL_ERR_RESOURCE;
}

/* True when no value is NaN or infinite (an exponent of all ones). Adding 1
 * to the exponent field carries into the sign bit exactly then, so the loop
 * is and/add/or on 64-bit integers without branches, which the compiler
 * vectorizes with plain SSE2 (isfinite() or a 64-bit compare is not); it
 * runs 3x faster than an isfinite() loop on 100k-atom frames. The caller
 * looks for the offender only when this fails. */
static bool all_finite(const double *p, int64_t n)
{
    const uint64_t expo = UINT64_C(0x7ff0000000000000), one = UINT64_C(1) << 52;
    uint64_t acc = 0;
    for (int64_t i = 0; i < n; ++i) {
        uint64_t b;
        memcpy(&b, &p[i], sizeof b);
        acc |= (b & expo) + one;
    }
    return (acc >> 63) == 0;
}

/* --- positions from the file's bytes, decoded in parallel --------------- */

/* The serial HDF5 library is not thread-safe, and H5Dread decodes one chunk
 * at a time on the calling thread. So position/value is read, where it can
 * be, the way its bytes lie in the file: this (the one HDF5) thread looks up
 * the addresses, stored sizes and filter masks of the chunks of the next
 * frames (H5Dget_chunk_info_by_coord; a contiguous dataset's frames follow
 * H5Dget_offset), and worker threads of io/chunk_pool.c pread and decode
 * them (io/h5_raw.c: deflate, shuffle, fletcher32) into frames of doubles,
 * checking them for non-finite coordinates on the way. Frames come out in
 * order; a window of jobs (a job: the frames of one chunk row, or about a
 * MiB of a contiguous dataset) is in flight ahead of the one asked for,
 * along the stride of the last two requests (--frames 0::10 reads every
 * tenth row, not all). A request off that course drains the window and
 * starts again there. With one thread the same decoding runs inline, so
 * the bytes and the errors are the same for every thread count.
 *
 * Not covered, read with H5Dread as before: compact layouts, szip, types
 * other than little-endian IEEE floats of 4 or 8 bytes, a file with a user
 * block or opened through another driver than sec2, jobs over 256 MiB. */
typedef struct direct_job {
    int64_t row;            /* frames [row * rf, row * rf + rf) */
    mdnl_raw_chunk *chunks; /* [nchunks] of a chunked dataset: gathered by the HDF5 thread */
    int status;             /* MDNL_RAW_* of the gathering, then of the decoding */
    char why[400];          /* what went wrong, when status is not MDNL_RAW_OK */
    int64_t first_bad;      /* the first frame with a non-finite coordinate; -1: none */
    mdnl_pool_buf a, b;     /* the worker's scratch */
} direct_job;

/* One piece of a frame read straight into the caller's frame (frame_read). */
typedef struct direct_piece {
    double *dst;
    uint64_t off;  /* in the file */
    size_t n;      /* bytes, whole atoms */
    int status;    /* MDNL_RAW_* */
    bool finite;   /* every coordinate of the piece is finite (when checked) */
    char why[400];
} direct_piece;

typedef struct pos_direct {
    int fd; /* HDF5's own descriptor of the file (sec2 driver) */
    int64_t file_size;
    hid_t ds;
    size_t es; /* 8: double, 4: float, little-endian */
    bool contiguous;
    uint64_t base;      /* contiguous: the address of element 0 */
    hsize_t cd[3];      /* chunked: chunk dimensions */
    int64_t nc1, nc2;   /* chunks across atoms and across x, y, z */
    size_t cbytes;      /* one chunk, decoded */
    mdnl_raw_filters filt;
    int64_t rf;         /* frames per job */
    int64_t nframes, natoms;
    bool check_finite;
    int threads, window;
    mdnl_pool *pool;
    direct_job *jobs; /* [window]: job k in jobs[k % window] */
    int64_t posted;   /* jobs posted to the pool since it started */
    int64_t next_row, stride, last_row;
    bool holding; /* the job of held_row is taken, its frames in held */
    int64_t held_row, held_seq;
    const mdnl_pool_buf *held;
    /* A frame whose bytes lie in the file as the frame's doubles (contiguous,
     * or a whole-frame chunk, unfiltered, little-endian float64): read
     * straight into the caller's frame, in `pwin` pieces by the workers of
     * fpool, with no copy (frame_read). */
    bool frame_direct;
    direct_piece *pieces; /* [pwin]: piece k in pieces[k % pwin] */
    int pwin;
    mdnl_pool *fpool;
    int64_t fposted;
} pos_direct;

static void direct_free(pos_direct *d)
{
    if (!d)
        return;
    mdnl_pool_stop(d->fpool);
    free(d->pieces);
    mdnl_pool_stop(d->pool);
    for (int i = 0; d->jobs && i < d->window; ++i) {
        free(d->jobs[i].chunks);
        free(d->jobs[i].a.data);
        free(d->jobs[i].b.data);
    }
    free(d->jobs);
    free(d);
}

/* Element i of a little-endian float or double array, as double. */
static inline double elem_at(const unsigned char *p, size_t es, size_t i)
{
    if (es == 8) {
        double v;
        memcpy(&v, p + 8 * i, 8);
        return v;
    }
    float v;
    memcpy(&v, p + 4 * i, 4);
    return (double)v;
}

/* On a worker: job k's frames into b as doubles [rows][natoms][3]. False
 * only when out of memory; input errors go to the job's status. */
static bool direct_make(void *ctx, int64_t k, mdnl_pool_buf *b)
{
    pos_direct *d = ctx;
    direct_job *j = &d->jobs[k % d->window];
    j->first_bad = -1;
    if (j->status != MDNL_RAW_OK)
        return true; /* the gathering failed: reported in order */
    const int64_t f0 = j->row * d->rf, rows = d->nframes - f0 < d->rf ? d->nframes - f0 : d->rf;
    const size_t fe = (size_t)d->natoms * 3; /* elements of a frame */
    if (!mdnl_pool_buf_reserve(b, (size_t)rows * fe * sizeof(double)))
        return false;
    b->len = (size_t)rows * fe * sizeof(double);
    double *dst = (double *)(void *)b->data;
    const size_t n = (size_t)rows * fe;
    if (d->contiguous) {
        uint64_t off = d->base + (uint64_t)f0 * fe * d->es;
        void *into = d->es == 8 ? (void *)dst : NULL;
        if (!into) {
            if (!mdnl_pool_buf_reserve(&j->a, n * d->es))
                return false;
            into = j->a.data;
        }
        if (off > (uint64_t)d->file_size || n * d->es > (uint64_t)d->file_size - off) {
            snprintf(j->why, sizeof j->why, "expected %zu bytes at byte %" PRIu64 " inside the file of %" PRId64
                     " bytes", n * d->es, off, d->file_size);
            j->status = MDNL_RAW_BAD;
            return true;
        }
        j->status = mdnl_raw_pread(d->fd, off, n * d->es, into, j->why, sizeof j->why);
        if (j->status == MDNL_RAW_OK && d->es == 4)
            for (size_t i = 0; i < n; ++i)
                dst[i] = elem_at(j->a.data, 4, i);
    } else {
        const hsize_t ct = d->cd[0], cn = d->cd[1], cc = d->cd[2];
        /* a whole-frame chunk of doubles that rows fill: no filter, no copy */
        const bool in_place = d->es == 8 && cn == (hsize_t)d->natoms && cc == 3 && ct == (hsize_t)rows;
        for (int64_t c = 0; c < d->nc1 * d->nc2 && j->status == MDNL_RAW_OK; ++c) {
            const unsigned char *src;
            j->status = mdnl_raw_decode(d->fd, d->file_size, &j->chunks[c], &d->filt, d->cbytes,
                                        in_place ? b->data : NULL, &j->a, &j->b, &src, j->why, sizeof j->why);
            if (j->status != MDNL_RAW_OK)
                break;
            if (src == b->data)
                continue;
            /* chunk [ct][cn][cc] at (f0, a0, x0); edge chunks hold more than the extent */
            const size_t a0 = (size_t)(c / d->nc2) * cn, x0 = (size_t)(c % d->nc2) * cc;
            const size_t na = a0 + cn > (size_t)d->natoms ? (size_t)d->natoms - a0 : cn;
            const size_t nx = x0 + cc > 3 ? 3 - x0 : cc;
            for (int64_t t = 0; t < rows; ++t)
                for (size_t ia = 0; ia < na; ++ia) {
                    const size_t from = ((size_t)t * cn + ia) * cc;
                    const size_t to = ((size_t)t * (size_t)d->natoms + a0 + ia) * 3 + x0;
                    if (d->es == 8)
                        memcpy(dst + to, src + 8 * from, 8 * nx);
                    else
                        for (size_t ix = 0; ix < nx; ++ix)
                            dst[to + ix] = elem_at(src, 4, from + ix);
                }
        }
        if (j->status == MDNL_RAW_NOMEM)
            return false;
    }
    if (j->status == MDNL_RAW_OK && d->check_finite)
        for (int64_t t = 0; t < rows; ++t)
            if (!all_finite(dst + (size_t)t * fe, (int64_t)fe)) {
                j->first_bad = f0 + t;
                break;
            }
    return true;
}

/* Looks up job j's chunks (this thread is the only one calling HDF5). */
static void direct_gather(pos_direct *d, direct_job *j)
{
    j->status = MDNL_RAW_OK;
    if (d->contiguous)
        return;
    for (int64_t c = 0; c < d->nc1 * d->nc2; ++c) {
        hsize_t off[3] = {(hsize_t)j->row * d->cd[0], (hsize_t)(c / d->nc2) * d->cd[1],
                          (hsize_t)(c % d->nc2) * d->cd[2]};
        unsigned mask = 0;
        haddr_t addr = HADDR_UNDEF;
        hsize_t size = 0;
        if (H5Dget_chunk_info_by_coord(d->ds, off, &mask, &addr, &size) < 0 || addr == HADDR_UNDEF) {
            snprintf(j->why, sizeof j->why, "expected the chunk at [%llu][%llu][%llu] stored, found %s",
                     (unsigned long long)off[0], (unsigned long long)off[1], (unsigned long long)off[2],
                     addr == HADDR_UNDEF ? "none" : mdnl_h5_reason());
            j->status = MDNL_RAW_BAD;
            return;
        }
        j->chunks[c] = (mdnl_raw_chunk){.addr = addr, .size = size, .mask = mask};
    }
}

/* Gathers and posts jobs along the course while the window has room. */
static void direct_fill(pos_direct *d)
{
    while (d->posted < mdnl_pool_room(d->pool) && d->next_row * d->rf < d->nframes) {
        direct_job *j = &d->jobs[d->posted % d->window];
        j->row = d->next_row;
        direct_gather(d, j);
        d->posted++;
        d->next_row += d->stride;
    }
    mdnl_pool_post(d->pool, d->posted);
}

/* The jobs' window, at the first read (the thread count is known then):
 * two jobs a thread, within 256 MiB of frames and scratch (a filtered or
 * rearranged chunk needs two scratch buffers beside its frames). */
static mdnl_status direct_size(mdnl_h5md_reader *r)
{
    pos_direct *d = r->direct;
    d->threads = r->threads;
    const double job_bytes = (double)d->rf * (double)d->natoms * 3 * sizeof(double);
    const bool scratch =
        d->filt.n > 0 || d->es != 8 || (!d->contiguous && d->cd[1] * d->cd[2] != (hsize_t)d->natoms * 3);
    int cap = (int)fmax(2.0, 256.0 * 1048576.0 / (scratch ? 3 * job_bytes : job_bytes));
    d->window = d->threads > 1 ? (2 * d->threads < cap ? 2 * d->threads : cap) : 1;
    d->jobs = mdnl_calloc((size_t)d->window, sizeof *d->jobs, "H5MD position jobs");
    if (!d->jobs)
        return MDNL_ERR_RESOURCE;
    for (int i = 0; !d->contiguous && i < d->window; ++i) {
        d->jobs[i].chunks = mdnl_calloc((size_t)(d->nc1 * d->nc2), sizeof *d->jobs[i].chunks, "H5MD chunk list");
        if (!d->jobs[i].chunks) {
            for (int h = 0; h < i; ++h)
                free(d->jobs[h].chunks);
            free(d->jobs);
            d->jobs = NULL;
            return MDNL_ERR_RESOURCE;
        }
    }
    return MDNL_OK;
}

/* Frames of at least this many bytes are read straight into the caller's
 * frame when more than one thread reads (smaller ones: a job of several
 * frames, copied out, costs less than a round of the workers a frame). */
#define FRAME_DIRECT_BYTES (1024.0 * 1024.0)
/* The least bytes of a piece of such a frame: the read waits for its
 * slowest piece, so fewer, larger pieces lose less to a worker the
 * pipeline's other threads keep off its core (docs/performance.md). */
#define FRAME_PIECE_BYTES ((size_t)512 * 1024)

/* On a worker: one piece of a frame, read into the caller's frame. */
static bool piece_make(void *ctx, int64_t k, mdnl_pool_buf *b)
{
    (void)b;
    pos_direct *d = ctx;
    direct_piece *pc = &d->pieces[k % d->pwin];
    pc->status = mdnl_raw_pread(d->fd, pc->off, pc->n, pc->dst, pc->why, sizeof pc->why);
    pc->finite = pc->status == MDNL_RAW_OK && d->check_finite && all_finite(pc->dst, (int64_t)(pc->n / sizeof(double)));
    return true;
}

/* Frame k's positions straight into pos (frame_direct): the file offset of
 * its bytes (a chunk's from HDF5, on this thread), then pieces of whole atoms
 * read by the workers, in parallel, each checking its coordinates. */
static mdnl_status frame_read(mdnl_h5md_reader *r, int64_t k, double (*pos)[3], bool *finite_known)
{
    pos_direct *d = r->direct;
    const size_t atom = 3 * sizeof(double), n = (size_t)d->natoms * atom;
    uint64_t off = d->base + (uint64_t)k * n;
    if (!d->contiguous) {
        hsize_t at[3] = {(hsize_t)k, 0, 0};
        unsigned mask = 0;
        haddr_t addr = HADDR_UNDEF;
        hsize_t size = 0;
        if (H5Dget_chunk_info_by_coord(d->ds, at, &mask, &addr, &size) < 0 || addr == HADDR_UNDEF)
            return bad(r, k, r->pos.vpath, "cannot read the positions (expected the chunk at [%" PRId64 "][0][0] stored, found %s)",
                       k, addr == HADDR_UNDEF ? "none" : mdnl_h5_reason());
        if (size != n)
            return bad(r, k, r->pos.vpath, "cannot read the positions (expected a chunk of %zu bytes, found %llu)", n,
                       (unsigned long long)size);
        off = addr;
    }
    if (off > (uint64_t)d->file_size || n > (uint64_t)d->file_size - off)
        return bad(r, k, r->pos.vpath,
                   "cannot read the positions (expected %zu bytes at byte %" PRIu64 " inside the file of %" PRId64
                   " bytes)",
                   n, off, d->file_size);
    if (!d->fpool) {
        d->check_finite = !r->skip_finite;
        mdnl_status st = mdnl_pool_start(d->pwin, d->pwin, d, piece_make, "reading positions", &d->fpool);
        if (st != MDNL_OK)
            return st;
        d->fposted = 0;
    }
    /* pieces of whole atoms, at least FRAME_PIECE_BYTES each */
    const int64_t natoms = d->natoms;
    int np = (int)(n / FRAME_PIECE_BYTES);
    np = np < 1 ? 1 : np > mdnl_pool_window(d->fpool) ? mdnl_pool_window(d->fpool) : np;
    for (int i = 0; i < np; ++i) {
        const int64_t a0 = natoms * i / np, a1 = natoms * (i + 1) / np;
        direct_piece *pc = &d->pieces[(d->fposted + i) % d->pwin];
        *pc = (direct_piece){.dst = pos[a0], .off = off + (uint64_t)a0 * atom, .n = (size_t)(a1 - a0) * atom};
    }
    d->fposted += np;
    mdnl_pool_post(d->fpool, d->fposted);
    bool finite = d->check_finite;
    int status = MDNL_RAW_OK;
    char why[400] = "";
    for (int i = 0; i < np; ++i) {
        int64_t seq;
        mdnl_pool_buf *b;
        (void)mdnl_pool_wait(d->fpool, &seq, &b); /* piece_make does not fail */
        const direct_piece *pc = &d->pieces[seq % d->pwin];
        if (status == MDNL_RAW_OK && pc->status != MDNL_RAW_OK) {
            status = pc->status;
            snprintf(why, sizeof why, "%s", pc->why);
        }
        finite = finite && pc->finite;
        mdnl_pool_release(d->fpool);
    }
    if (status != MDNL_RAW_OK)
        return bad(r, k, r->pos.vpath, "cannot read the positions (%s)", why);
    *finite_known = finite;
    return MDNL_OK;
}

/* Frame k's positions into pos; *finite_known when the worker checked them. */
static mdnl_status direct_read(mdnl_h5md_reader *r, int64_t k, double (*pos)[3], bool *finite_known)
{
    pos_direct *d = r->direct;
    if (!d->jobs && !d->pieces) {
        /* the first read: the thread count is known now */
        const double frame_bytes = (double)d->natoms * 3 * sizeof(double);
        const bool whole = d->contiguous || (d->cd[0] == 1 && d->cd[1] == (hsize_t)d->natoms && d->cd[2] == 3);
        if (d->es == 8 && d->filt.n == 0 && whole && (r->threads <= 1 || frame_bytes >= FRAME_DIRECT_BYTES)) {
            d->pwin = r->copy_threads < 1 ? 1 : r->copy_threads;
            d->threads = d->pwin;
            if (!(d->pieces = mdnl_calloc((size_t)d->pwin, sizeof *d->pieces, "H5MD position pieces")))
                return MDNL_ERR_RESOURCE;
            d->frame_direct = true;
        }
    }
    if (d->frame_direct)
        return frame_read(r, k, pos, finite_known);
    const int64_t row = k / d->rf;
    mdnl_status st;
    if (!d->jobs && (st = direct_size(r)) != MDNL_OK)
        return st;
    if (!(d->holding && d->held_row == row)) {
        if (d->holding) {
            mdnl_pool_release(d->pool);
            d->holding = false;
        }
        const int64_t taken = d->pool ? mdnl_pool_room(d->pool) - d->window : 0;
        if (!d->pool || taken >= d->posted || d->jobs[taken % d->window].row != row) {
            /* off course (or the first request): start again at this row */
            mdnl_pool_stop(d->pool);
            d->pool = NULL;
            d->check_finite = !r->skip_finite;
            st = mdnl_pool_start(d->threads, d->window, d, direct_make, "reading positions", &d->pool);
            if (st != MDNL_OK)
                return st;
            d->stride = d->last_row >= 0 && row > d->last_row ? row - d->last_row : 1;
            d->next_row = row;
            d->posted = 0;
        }
        direct_fill(d);
        mdnl_pool_buf *b;
        st = mdnl_pool_wait(d->pool, &d->held_seq, &b);
        d->last_row = row;
        if (st != MDNL_OK) { /* out of memory: nothing held, start again next time */
            mdnl_pool_release(d->pool);
            mdnl_pool_stop(d->pool);
            d->pool = NULL;
            return st;
        }
        d->holding = true;
        d->held = b;
        d->held_row = row;
    }
    const direct_job *j = &d->jobs[d->held_seq % d->window];
    if (j->status != MDNL_RAW_OK)
        return bad(r, k, r->pos.vpath, "cannot read the positions (%s)", j->why);
    const size_t fe = (size_t)d->natoms * 3;
    memcpy(pos, d->held->data + (size_t)(k - row * d->rf) * fe * sizeof(double), fe * sizeof(double));
    *finite_known = d->check_finite && (j->first_bad < 0 || k < j->first_bad);
    return MDNL_OK;
}

/* Whether position/value can be read from the file's bytes, and how; sets
 * r->direct or leaves it NULL (H5Dread). MDNL_ERR_RESOURCE only. */
static mdnl_status direct_setup(mdnl_h5md_reader *r)
{
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
    (void)r;
    return MDNL_OK;
#else
    if (r->natoms == 0 || r->nframes == 0)
        return MDNL_OK;
    pos_direct tmp = {.fd = -1, .ds = r->pos.value, .file_size = r->file_size, .nframes = r->nframes,
                      .natoms = r->natoms, .last_row = -1};
    bool ok = true;
    hid_t t = H5Dget_type(r->pos.value), dcpl = H5Dget_create_plist(r->pos.value);
    hid_t fcpl = H5Fget_create_plist(r->fid), fapl = H5Fget_access_plist(r->fid);
    hsize_t ub = 1;
    void *handle = NULL;
    ok = t >= 0 && dcpl >= 0 && fcpl >= 0 && fapl >= 0 && H5Pget_userblock(fcpl, &ub) >= 0 && ub == 0 &&
         H5Pget_driver(fapl) == H5FD_SEC2 && H5Fget_vfd_handle(r->fid, fapl, &handle) >= 0 && handle;
    if (ok) {
        tmp.fd = *(int *)handle;
        tmp.es = H5Tequal(t, H5T_IEEE_F64LE) > 0 ? 8 : H5Tequal(t, H5T_IEEE_F32LE) > 0 ? 4 : 0;
        ok = tmp.es != 0;
    }
    H5D_layout_t layout = ok ? H5Pget_layout(dcpl) : H5D_LAYOUT_ERROR;
    const double frame_bytes = (double)r->natoms * 3 * sizeof(double);
    if (layout == H5D_CONTIGUOUS) {
        haddr_t at = H5Dget_offset(r->pos.value);
        tmp.contiguous = true;
        tmp.base = at;
        tmp.rf = frame_bytes >= 1048576.0 ? 1 : (int64_t)(1048576.0 / frame_bytes);
        ok = at != HADDR_UNDEF;
    } else if (layout == H5D_CHUNKED) {
        int nf = H5Pget_nfilters(dcpl), ndeflate = 0;
        ok = H5Pget_chunk(dcpl, 3, tmp.cd) == 3 && nf >= 0 && nf <= MDNL_RAW_MAX_FILTERS;
        for (int i = 0; ok && i < nf; ++i) {
            unsigned flags = 0, cdv[8] = {0};
            size_t ncd = 8;
            H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cdv, 0, NULL, NULL);
            tmp.filt.id[i] = id == H5Z_FILTER_DEFLATE ? MDNL_RAW_DEFLATE
                             : id == H5Z_FILTER_SHUFFLE ? MDNL_RAW_SHUFFLE
                             : id == H5Z_FILTER_FLETCHER32 ? MDNL_RAW_FLETCHER32
                                                           : 0;
            tmp.filt.elsize[i] = ncd >= 1 && cdv[0] > 0 ? cdv[0] : (unsigned)tmp.es;
            ndeflate += id == H5Z_FILTER_DEFLATE;
            ok = tmp.filt.id[i] != 0 && ndeflate <= 1;
        }
        tmp.filt.n = nf;
        if (ok) {
            tmp.rf = (int64_t)tmp.cd[0];
            tmp.nc1 = (int64_t)((r->pos.dims[1] + tmp.cd[1] - 1) / tmp.cd[1]);
            tmp.nc2 = (int64_t)((3 + tmp.cd[2] - 1) / tmp.cd[2]);
            tmp.cbytes = (size_t)(tmp.cd[0] * tmp.cd[1] * tmp.cd[2]) * tmp.es; /* < 4 GiB: check_dataset */
        }
    } else {
        ok = false;
    }
    close_id(&t);
    close_id(&dcpl);
    close_id(&fcpl);
    close_id(&fapl);
    const double job_bytes = (double)tmp.rf * frame_bytes;
    if (!ok || tmp.rf < 1 || job_bytes > 256.0 * 1048576.0 || (!tmp.contiguous && tmp.nc1 * tmp.nc2 > 4096))
        return MDNL_OK;
    pos_direct *d = mdnl_malloc(sizeof *d, "H5MD position reader");
    if (!d)
        return MDNL_ERR_RESOURCE;
    *d = tmp;
    r->direct = d;
    return MDNL_OK;
#endif
}

mdnl_status mdnl_h5md_open(const char *path, const char *group, mdnl_h5md_reader **out)
{
    *out = NULL;
    mdnl_h5md_reader *r = mdnl_calloc(1, sizeof *r, "H5MD reader");
    if (!r)
        return MDNL_ERR_RESOURCE;
    r->fid = r->gid = H5I_INVALID_HID;
    r->threads = r->copy_threads = 1;
    td_init(&r->pos);
    td_init(&r->edges);
    td_init(&r->species);
    r->file = strdup(path);
    if (!r->file) {
        free(r);
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory opening %s", path);
    }
    mdnl_status st = open_file(path, &r->fid, &r->file_size);
    if (st == MDNL_OK)
        st = open_group(r, group);
    if (st == MDNL_OK)
        st = open_position(r);
    if (st == MDNL_OK)
        st = open_box(r);
    if (st == MDNL_OK)
        st = open_species(r);
    if (st == MDNL_OK)
        st = direct_setup(r);
    if (st != MDNL_OK) {
        mdnl_h5md_close(r);
        return st;
    }
    *out = r;
    return MDNL_OK;
}

void mdnl_h5md_close(mdnl_h5md_reader *r)
{
    if (!r)
        return;
    direct_free(r->direct);
    td_close(&r->pos);
    td_close(&r->edges);
    td_close(&r->species);
    close_id(&r->gid);
    close_id(&r->fid);
    free(r->names);
    free(r->cached_ids);
    free(r->cached_symbols);
    free(r->scratch);
    free(r->file);
    free(r);
}

int64_t mdnl_h5md_nframes(const mdnl_h5md_reader *r) { return r->nframes; }
int64_t mdnl_h5md_natoms(const mdnl_h5md_reader *r) { return r->natoms; }
const char *mdnl_h5md_group(const mdnl_h5md_reader *r) { return r->group; }

mdnl_status mdnl_h5md_skip(mdnl_h5md_reader *r)
{
    quiet_hdf5(); /* per thread: the reader may run on a pipeline thread */
    if (r->next >= r->nframes)
        return MDNL_END;
    ++r->next;
    return MDNL_OK;
}

mdnl_status mdnl_h5md_seek(mdnl_h5md_reader *r, int64_t k)
{
    quiet_hdf5(); /* per thread: the reader may run on a pipeline thread */
    if (k < 0 || k > r->nframes)
        return mdnl_error(MDNL_ERR_USAGE, "%s: frame %" PRId64 " out of range (0 to %" PRId64 ")", r->file, k,
                          r->nframes);
    r->next = k;
    return MDNL_OK;
}

/* --- per frame ---------------------------------------------------------- */

static mdnl_status add_symbol(mdnl_h5md_reader *r, int64_t frame, mdnl_frame *f, const char *s, size_t len,
                              int32_t *id)
{
    *id = mdnl_frame_species_id(f, s, len);
    if (*id < 0) {
        char why[256];
        snprintf(why, sizeof why, "%s", mdnl_last_error());
        return bad(r, frame, r->species.vpath, "%s", why);
    }
    return MDNL_OK;
}

static mdnl_status read_species(mdnl_h5md_reader *r, int64_t frame, int64_t s, mdnl_frame *f)
{
    int64_t n = r->natoms;
    mdnl_status st;
    int32_t id = 0;
    if (r->species_cached) {
        /* a frame this reader filled last time still holds them: no copy
         * (0.4 MB a frame at 100k atoms, ~5% of its read) */
        if (f->species_tag != r->species_tag) {
            if (n > 0)
                memcpy(f->species, r->cached_ids, (size_t)n * sizeof *f->species);
            f->nspecies = r->cached_nspecies;
            memcpy(f->symbols, r->cached_symbols, sizeof f->symbols);
            f->species_tag = r->species_tag;
        }
        return MDNL_OK;
    }
    f->species_tag = 0;
    f->nspecies = 0;
    if (!r->has_species) {
        if (n > 0 && (st = add_symbol(r, frame, f, "X", 1, &id)) != MDNL_OK)
            return st;
        if (n > 0)
            memset(f->species, 0, (size_t)n * sizeof *f->species);
        return MDNL_OK;
    }
    td_elem *e = &r->species;
    int64_t k = 0;
    if (e->timedep && (st = td_locate(r, frame, s, e, &k)) != MDNL_OK)
        return st;
    hid_t memtype = H5T_NATIVE_INT64;
    hid_t strtype = H5I_INVALID_HID;
    if (r->species_string) {
        strtype = H5Dget_type(e->value);
        if (strtype < 0)
            return bad(r, frame, e->vpath, "cannot query the type (%s)", mdnl_h5_reason());
        memtype = strtype;
    }
    herr_t rs = read_slab(e->value, e->rank, e->dims, k, !e->timedep, memtype, r->scratch);
    close_id(&strtype);
    if (rs < 0)
        return bad(r, frame, e->vpath, "cannot read the species (%s)", mdnl_h5_reason());
    if (r->species_string) {
        const char *base = r->scratch;
        size_t w = r->species_strsize;
        const char *prev = NULL;
        size_t prevlen = 0;
        for (int64_t i = 0; i < n; ++i) {
            const char *sym = base + (size_t)i * w;
            size_t len = strnlen(sym, w);
            while (len > 0 && sym[len - 1] == ' ')
                --len;
            if (!(prev && len == prevlen && memcmp(prev, sym, len) == 0)) {
                if ((st = add_symbol(r, frame, f, sym, len, &id)) != MDNL_OK)
                    return st;
                prev = sym, prevlen = len;
            }
            f->species[i] = id;
        }
    } else {
        const int64_t *code = r->scratch;
        /* code -> id for the codes seen so far (at most MDNL_MAX_SPECIES). */
        int64_t seen_code[MDNL_MAX_SPECIES];
        int32_t seen_id[MDNL_MAX_SPECIES];
        int nseen = 0;
        for (int64_t i = 0; i < n; ++i) {
            int64_t cval = code[i];
            int j = 0;
            while (j < nseen && seen_code[j] != cval)
                ++j;
            if (j == nseen) {
                char text[32];
                const char *sym = text;
                if (r->names) {
                    if (cval < 0 || cval >= r->nnames)
                        return bad(r, frame, e->vpath,
                                   "expected species codes 0 to %d (the names attribute), found %" PRId64
                                   " at atom %" PRId64,
                                   r->nnames - 1, cval, i);
                    sym = r->names[cval];
                } else {
                    snprintf(text, sizeof text, "%" PRId64, cval);
                }
                if ((st = add_symbol(r, frame, f, sym, strlen(sym), &id)) != MDNL_OK)
                    return st;
                if (nseen == MDNL_MAX_SPECIES)
                    return bad(r, frame, e->vpath, "expected at most %d species", MDNL_MAX_SPECIES);
                seen_code[nseen] = cval, seen_id[nseen] = id, ++nseen;
            }
            f->species[i] = seen_id[j];
        }
    }
    if (!e->timedep) { /* decode a fixed species dataset once */
        r->cached_ids = mdnl_malloc((size_t)n * sizeof *r->cached_ids, "species cache");
        r->cached_symbols = mdnl_malloc(sizeof f->symbols, "species cache");
        if (!r->cached_ids || !r->cached_symbols)
            return MDNL_ERR_RESOURCE;
        if (n > 0)
            memcpy(r->cached_ids, f->species, (size_t)n * sizeof *r->cached_ids);
        memcpy(r->cached_symbols, f->symbols, sizeof f->symbols);
        r->cached_nspecies = f->nspecies;
        r->species_cached = true;
        static _Atomic uint64_t tags;
        r->species_tag = atomic_fetch_add(&tags, 1) + 1;
        f->species_tag = r->species_tag;
    }
    return MDNL_OK;
}

void mdnl_h5md_set_finite_check(mdnl_h5md_reader *r, bool on) { r->skip_finite = !on; }

void mdnl_h5md_set_threads(mdnl_h5md_reader *r, int threads, int copy)
{
    if (!r->direct || (!r->direct->jobs && !r->direct->pieces)) {
        r->threads = threads < 1 ? 1 : threads;
        r->copy_threads = copy < 1 || copy > r->threads ? r->threads : copy;
    }
}

mdnl_status mdnl_h5md_next(mdnl_h5md_reader *r, mdnl_frame *f)
{
    quiet_hdf5(); /* per thread: the reader may run on a pipeline thread */
    if (r->next >= r->nframes)
        return MDNL_END;
    int64_t k = r->next;
    mdnl_status st = mdnl_frame_reserve(f, r->natoms);
    if (st != MDNL_OK)
        return st;
    f->index = k;
    f->natoms = r->natoms;

    /* step and time */
    if ((st = td_step(r, k, &r->pos, k, &f->step)) != MDNL_OK)
        return st;
    f->has_step = true;
    f->has_time = r->pos.time >= 0;
    f->time = 0.0;
    if (f->has_time && (st = td_time(r, k, &r->pos, k, &f->time)) != MDNL_OK)
        return st;

    /* positions */
    if (r->natoms > 0) {
        bool finite_known = false;
        if (r->direct) {
            if ((st = direct_read(r, k, f->pos, &finite_known)) != MDNL_OK)
                return st;
        } else if (read_slab(r->pos.value, 3, r->pos.dims, k, false, H5T_NATIVE_DOUBLE, f->pos) < 0)
            return bad(r, k, r->pos.vpath, "cannot read the positions (%s)", mdnl_h5_reason());
        const double *p = &f->pos[0][0];
        if (!r->skip_finite && !finite_known && !all_finite(p, 3 * r->natoms))
            for (int64_t i = 0; i < 3 * r->natoms; ++i)
                if (!isfinite(p[i]))
                    return bad(r, k, r->pos.vpath, "expected finite coordinates, found %g for atom %" PRId64 " (%c)",
                               p[i], i / 3, (int)('x' + i % 3));
    }

    /* box */
    memset(&f->box, 0, sizeof f->box);
    if (r->has_edges) {
        bool lattice = r->fixed_lattice;
        if (r->edges.timedep) {
            int64_t ek;
            if ((st = td_locate(r, k, f->step, &r->edges, &ek)) != MDNL_OK)
                return st;
            if ((st = read_edges(r, k, ek, f->box.h)) != MDNL_OK)
                return st;
            if ((st = check_cell(r, k, r->edges.vpath, f->box.h, &lattice)) != MDNL_OK)
                return st;
        } else {
            memcpy(f->box.h, r->fixed_h, sizeof f->box.h);
        }
        f->box.has_lattice = lattice;
        if (!lattice)
            memset(f->box.h, 0, sizeof f->box.h);
        for (int a = 0; a < 3; ++a)
            f->box.pbc[a] = lattice && r->pbc[a];
    }

    if ((st = read_species(r, k, f->step, f)) != MDNL_OK)
        return st;
    r->next = k + 1;
    return MDNL_OK;
}

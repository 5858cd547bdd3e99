/* h5md_writer.c — H5MD trajectory and results writers (see h5md_writer.h).
 *
 * Both writers build on one appendable-dataset helper (`app`): a chunked
 * dataset with an unlimited first dimension, extended and written one block
 * of rows at a time, so memory never grows with the number of frames. The
 * file lives under a temporary name until commit renames it (SPEC §7).
 */
#define _POSIX_C_SOURCE 200809L
#include "h5_error.h"
#include "h5md_writer.h"

#include "chunk_pool.h"
#include "output_file.h"

#include <hdf5.h>

#include <inttypes.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_RANK 4

/* MDNL_ERR_RESOURCE "PATH: cannot WHAT (reason)". */
static mdnl_status fail(const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static mdnl_status fail(const char *path, const char *fmt, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return mdnl_error(MDNL_ERR_RESOURCE, "%s: cannot %s (%s)", path, what, mdnl_h5_reason());
}

#define TRY(expr, ...)                                                                                                 \
    do {                                                                                                               \
        if ((expr) < 0)                                                                                                \
            return fail(path, __VA_ARGS__);                                                                            \
    } while (0)

/* --- appendable datasets ------------------------------------------------ */

/* A compressed dataset (gzip > 0) bypasses HDF5's filter pipeline: rows
 * are staged in whole chunks, which worker threads shuffle and deflate
 * (mdnl_shuffle_deflate: a stream that inflates to the bytes the pipeline
 * would deflate) and this thread stores with H5Dwrite_chunk, in chunk order.
 * The stage holds `threads` chunks, so a trajectory's one-chunk frames are
 * compressed `threads` at a time; a large block (a neighbor list's j) goes
 * from the caller's buffer straight to the workers. The last, partial chunk
 * is padded with zeros (the fill value, as the pipeline pads an edge chunk)
 * and stored at app_finish. A raw dataset written row for row with a
 * compressed one (distance with j) may be direct too: its chunks are stored
 * as they are, by this thread, in between the compressed chunks, so their
 * writes overlap the workers' deflate instead of following it. */
typedef struct app {
    hid_t ds;
    int rank;               /* including the unlimited first dimension */
    hsize_t dims[MAX_RANK]; /* current extent */
    char name[96];
    bool direct;            /* stored with H5Dwrite_chunk from the stage */
    hid_t ftype;            /* file type (direct: the memory type must equal it) */
    int gzip, threads;
    size_t elsize, row_bytes;
    hsize_t chunk_rows;
    hsize_t stored_rows;    /* rows in chunks already stored (a multiple of chunk_rows) */
    unsigned char *stage;   /* threads * chunk_rows rows from stored_rows on */
    hsize_t stage_rows;
} app;

static void app_close(app *a)
{
    if (a->ds > 0)
        H5Dclose(a->ds);
    a->ds = H5I_INVALID_HID;
    free(a->stage);
    a->stage = NULL;
}

enum { APP_GROUP = 2 }; /* direct datasets stored together, row for row */

/* The chunks first..first+n-1 of na direct datasets with the same chunk
 * rows, from rows[i] (chunk `first` starts there); piece k is chunk k / na
 * of dataset k % na. */
typedef struct chunk_job {
    const char *path;
    app *const *a;
    const unsigned char *const *rows;
    int na;
    hsize_t first;
} chunk_job;

static bool chunk_make(void *ctx, int64_t k, mdnl_pool_buf *b)
{
    const chunk_job *j = ctx;
    const app *a = j->a[k % j->na];
    const size_t bytes = (size_t)a->chunk_rows * a->row_bytes;
    if (a->gzip <= 0) /* raw: stored from the rows themselves */
        return true;
    return mdnl_shuffle_deflate(j->rows[k % j->na] + (size_t)(k / j->na) * bytes, bytes, a->elsize, a->gzip, b);
}

static mdnl_status chunk_take(void *ctx, int64_t k, const mdnl_pool_buf *b)
{
    const chunk_job *j = ctx;
    const char *path = j->path;
    const app *a = j->a[k % j->na];
    const size_t bytes = (size_t)a->chunk_rows * a->row_bytes;
    hsize_t off[MAX_RANK] = {0};
    off[0] = (j->first + (hsize_t)(k / j->na)) * a->chunk_rows;
    if (a->gzip > 0)
        TRY(H5Dwrite_chunk(a->ds, H5P_DEFAULT, b->flags, off, b->len, b->data), "write the dataset %s", a->name);
    else
        TRY(H5Dwrite_chunk(a->ds, H5P_DEFAULT, 0, off, bytes, j->rows[k % j->na] + (size_t)(k / j->na) * bytes),
            "write the dataset %s", a->name);
    return MDNL_OK;
}

/* Compresses and stores n whole chunks of each of the na datasets, starting
 * at rows[i] (the next chunks). */
static mdnl_status app_store(const char *path, app *const *a, const unsigned char *const *rows, int na, hsize_t n)
{
    chunk_job j = {path, a, rows, na, a[0]->stored_rows / a[0]->chunk_rows};
    char what[160];
    snprintf(what, sizeof what, "%s: compressing %s", path, a[0]->name);
    mdnl_status st = mdnl_pool_map(a[0]->threads, (int64_t)n * na, &j, chunk_make, chunk_take, what);
    for (int i = 0; i < na && st == MDNL_OK; ++i)
        a[i]->stored_rows += n * a[i]->chunk_rows;
    return st;
}

/* Appends nrows rows to na direct datasets in step (the same chunk rows,
 * stage and stored rows) whose extents already cover them. */
static mdnl_status app_stage(const char *path, app *const *a, const unsigned char **src, int na, hsize_t nrows)
{
    const hsize_t cap = (hsize_t)a[0]->threads * a[0]->chunk_rows;
    const unsigned char *stage[APP_GROUP];
    mdnl_status st;
    /* Fill the stages; store them when full. */
    hsize_t k = nrows < cap - a[0]->stage_rows ? nrows : cap - a[0]->stage_rows;
    for (int i = 0; i < na; ++i) {
        memcpy(a[i]->stage + (size_t)a[i]->stage_rows * a[i]->row_bytes, src[i], (size_t)k * a[i]->row_bytes);
        a[i]->stage_rows += k;
        src[i] += (size_t)k * a[i]->row_bytes;
        stage[i] = a[i]->stage;
    }
    nrows -= k;
    if (a[0]->stage_rows < cap)
        return MDNL_OK;
    if ((st = app_store(path, a, stage, na, a[0]->threads)) != MDNL_OK)
        return st;
    /* Whole chunks straight from the caller's rows, the rest to the stages. */
    hsize_t whole = nrows / a[0]->chunk_rows;
    if (whole && (st = app_store(path, a, src, na, whole)) != MDNL_OK)
        return st;
    for (int i = 0; i < na; ++i) {
        src[i] += (size_t)(whole * a[i]->chunk_rows) * a[i]->row_bytes;
        memcpy(a[i]->stage, src[i], (size_t)(nrows - whole * a[i]->chunk_rows) * a[i]->row_bytes);
        a[i]->stage_rows = nrows - whole * a[i]->chunk_rows;
    }
    return MDNL_OK;
}

/* Stores a direct dataset's staged rows, the last chunk padded with zeros. */
static mdnl_status app_finish(const char *path, app *a)
{
    if (!a->direct || a->ds < 0 || a->stage_rows == 0)
        return MDNL_OK;
    hsize_t n = (a->stage_rows + a->chunk_rows - 1) / a->chunk_rows;
    memset(a->stage + (size_t)a->stage_rows * a->row_bytes, 0,
           (size_t)(n * a->chunk_rows - a->stage_rows) * a->row_bytes);
    const unsigned char *rows = a->stage;
    mdnl_status st = app_store(path, &a, &rows, 1, n);
    if (st == MDNL_OK)
        a->stage_rows = 0;
    return st;
}

/* Makes a dataset direct (app_create does for gzip > 0; a raw one written
 * in step with a compressed one, by app_write_in_step). */
static mdnl_status app_make_direct(app *a)
{
    const uint16_t one = 1;
    const bool little = *(const unsigned char *)&one == 1; /* the file types are little-endian */
    if (a->row_bytes == 0 || !little)
        return MDNL_OK;
    a->stage = mdnl_malloc((size_t)a->threads * (size_t)a->chunk_rows * a->row_bytes, "HDF5 chunk stage");
    if (!a->stage)
        return MDNL_ERR_RESOURCE;
    a->direct = true;
    return MDNL_OK;
}

/* Creates loc/name with rows of shape row[0..rowrank) and an unlimited first
 * dimension; chunk_rows rows per chunk; gzip 0 for none, else shuffle and
 * deflate at that level, compressed on `threads` workers. */
static mdnl_status app_create(const char *path, hid_t loc, const char *name, hid_t type, int rowrank,
                              const hsize_t *row, hsize_t chunk_rows, int gzip, int threads, app *a)
{
    memset(a, 0, sizeof *a);
    a->ds = H5I_INVALID_HID;
    a->rank = rowrank + 1;
    snprintf(a->name, sizeof a->name, "%s", name);
    hsize_t maxd[MAX_RANK], chunk[MAX_RANK];
    a->dims[0] = 0;
    maxd[0] = H5S_UNLIMITED;
    chunk[0] = chunk_rows;
    for (int d = 0; d < rowrank; ++d) {
        a->dims[d + 1] = row[d];
        /* A zero-length row (no atoms) still needs a positive chunk size,
         * which may not exceed a fixed maximum: leave that axis unlimited. */
        maxd[d + 1] = row[d] ? row[d] : H5S_UNLIMITED;
        chunk[d + 1] = row[d] ? row[d] : 1;
    }
    hid_t sp = H5Screate_simple(a->rank, a->dims, maxd);
    TRY(sp, "make the dataspace of %s", name);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (dcpl < 0 || H5Pset_chunk(dcpl, a->rank, chunk) < 0 || H5Pset_obj_track_times(dcpl, 0) < 0 ||
        (gzip > 0 && (H5Pset_shuffle(dcpl) < 0 || H5Pset_deflate(dcpl, (unsigned)gzip) < 0))) {
        mdnl_status st = fail(path, "set up the dataset %s", name);
        if (dcpl >= 0)
            H5Pclose(dcpl);
        H5Sclose(sp);
        return st;
    }
    a->ds = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    H5Sclose(sp);
    TRY(a->ds, "create the dataset %s", name);
    a->ftype = type;
    a->gzip = gzip;
    a->threads = threads > 0 ? threads : 1;
    a->elsize = H5Tget_size(type);
    a->row_bytes = a->elsize;
    for (int d = 0; d < rowrank; ++d)
        a->row_bytes *= (size_t)row[d];
    a->chunk_rows = chunk_rows;
    return gzip > 0 ? app_make_direct(a) : MDNL_OK;
}

/* Appends nrows rows from buf (memtype). */
static mdnl_status app_write(const char *path, app *a, hid_t memtype, const void *buf, hsize_t nrows)
{
    if (nrows == 0)
        return MDNL_OK;
    hsize_t start[MAX_RANK] = {0}, count[MAX_RANK];
    start[0] = a->dims[0];
    count[0] = nrows;
    for (int d = 1; d < a->rank; ++d)
        count[d] = a->dims[d];
    hsize_t newd[MAX_RANK];
    memcpy(newd, a->dims, sizeof newd);
    newd[0] += nrows;
    TRY(H5Dset_extent(a->ds, newd), "extend the dataset %s", a->name);
    if (a->direct) {
        htri_t same = H5Tequal(memtype, a->ftype);
        if (same <= 0)
            return mdnl_error(MDNL_ERR_INTERNAL, "%s: %s: memory type differs from the file's", path, a->name);
        a->dims[0] = newd[0];
        const unsigned char *src = buf;
        return app_stage(path, &a, &src, 1, nrows);
    }
    bool empty = false;
    for (int d = 1; d < a->rank; ++d)
        empty |= count[d] == 0;
    if (!empty) {
        hid_t fs = H5Dget_space(a->ds);
        TRY(fs, "query the dataset %s", a->name);
        hid_t ms = H5Screate_simple(a->rank, count, NULL);
        herr_t e = ms < 0 ? -1 : H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
        if (e >= 0)
            e = H5Dwrite(a->ds, memtype, ms, fs, H5P_DEFAULT, buf);
        if (ms >= 0)
            H5Sclose(ms);
        H5Sclose(fs);
        TRY(e, "write the dataset %s", a->name);
    }
    a->dims[0] = newd[0];
    return MDNL_OK;
}

/* Appends nrows rows to two direct datasets in step (j and distance: the
 * same chunk rows and rows so far), their chunks stored in turn. */
static mdnl_status app_write_in_step(const char *path, app *a, hid_t mta, const void *bufa, app *b, hid_t mtb,
                                     const void *bufb, hsize_t nrows)
{
    if (!a->direct || !b->direct || a->chunk_rows != b->chunk_rows || a->dims[0] != b->dims[0] ||
        a->stage_rows != b->stage_rows || a->stored_rows != b->stored_rows || a->rank != 1 || b->rank != 1)
        return mdnl_error(MDNL_ERR_INTERNAL, "%s: %s and %s not in step", path, a->name, b->name);
    if (nrows == 0)
        return MDNL_OK;
    app *ab[APP_GROUP] = {a, b};
    const hid_t mt[APP_GROUP] = {mta, mtb};
    const unsigned char *src[APP_GROUP] = {bufa, bufb};
    for (int i = 0; i < APP_GROUP; ++i) {
        if (H5Tequal(mt[i], ab[i]->ftype) <= 0)
            return mdnl_error(MDNL_ERR_INTERNAL, "%s: %s: memory type differs from the file's", path, ab[i]->name);
        hsize_t newd[MAX_RANK];
        memcpy(newd, ab[i]->dims, sizeof newd);
        newd[0] += nrows;
        TRY(H5Dset_extent(ab[i]->ds, newd), "extend the dataset %s", ab[i]->name);
        ab[i]->dims[0] = newd[0];
    }
    return app_stage(path, ab, src, APP_GROUP, nrows);
}

/* A fixed-size dataset written at once. */
static mdnl_status write_fixed(const char *path, hid_t loc, const char *name, hid_t type, hid_t memtype, int rank,
                               const hsize_t *dims, const void *buf)
{
    hid_t sp = rank ? H5Screate_simple(rank, dims, NULL) : H5Screate(H5S_SCALAR);
    TRY(sp, "make the dataspace of %s", name);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (dcpl >= 0)
        H5Pset_obj_track_times(dcpl, 0);
    hid_t ds = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, dcpl >= 0 ? dcpl : H5P_DEFAULT, H5P_DEFAULT);
    if (dcpl >= 0)
        H5Pclose(dcpl);
    H5Sclose(sp);
    TRY(ds, "create the dataset %s", name);
    herr_t e = H5Dwrite(ds, memtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf);
    H5Dclose(ds);
    TRY(e, "write the dataset %s", name);
    return MDNL_OK;
}

/* A string attribute: one variable-length UTF-8 string (n = 0, scalar; h5py
 * reads it as str, as MDAnalysis writes them) or n fixed-size strings of
 * `width` bytes each (null-padded; h5py reads bytes). */
static mdnl_status write_str_attr(const char *path, hid_t obj, const char *name, const char *s, int n, size_t width)
{
    hid_t t = H5Tcopy(H5T_C_S1);
    TRY(t, "make a string type for attribute %s", name);
    herr_t e = n ? H5Tset_size(t, width) : H5Tset_size(t, H5T_VARIABLE);
    if (e < 0 || H5Tset_strpad(t, H5T_STR_NULLPAD) < 0 || (!n && H5Tset_cset(t, H5T_CSET_UTF8) < 0)) {
        H5Tclose(t);
        return fail(path, "make a string type for attribute %s", name);
    }
    hsize_t d = (hsize_t)n;
    hid_t sp = n ? H5Screate_simple(1, &d, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = sp < 0 ? -1 : H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    e = a < 0 ? -1 : H5Awrite(a, t, n ? (const void *)s : (const void *)&s);
    if (a >= 0)
        H5Aclose(a);
    if (sp >= 0)
        H5Sclose(sp);
    H5Tclose(t);
    TRY(e, "write attribute %s", name);
    return MDNL_OK;
}

static mdnl_status write_num_attr(const char *path, hid_t obj, const char *name, hid_t type, int n, const void *v)
{
    hsize_t d = (hsize_t)n;
    hid_t sp = n ? H5Screate_simple(1, &d, NULL) : H5Screate(H5S_SCALAR);
    hid_t a = sp < 0 ? -1 : H5Acreate2(obj, name, type, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t e = a < 0 ? -1 : H5Awrite(a, type, v);
    if (a >= 0)
        H5Aclose(a);
    if (sp >= 0)
        H5Sclose(sp);
    TRY(e, "write attribute %s", name);
    return MDNL_OK;
}

static hid_t make_group(hid_t loc, const char *name)
{
    return H5Gcreate2(loc, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
}

/* /h5md/author/name: the given name, else $USER, else the account's name,
 * else "mdnl" (a container or a cron job often has no $USER). */
static const char *author_name(const char *author)
{
    if (author && *author)
        return author;
    const char *user = getenv("USER");
    if (user && *user)
        return user;
    const struct passwd *pw = getpwuid(geteuid());
    if (pw && pw->pw_name && *pw->pw_name)
        return pw->pw_name;
    return "mdnl";
}

void mdnl_hdf5_no_exit_handler(void) { H5dont_atexit(); }

/* Creates the temporary file and /h5md. */
static mdnl_status create_file(const char *path, const char *author, char **tmp, hid_t *fid)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *fid = H5I_INVALID_HID;
    /* The temporary file is made (exclusively, unguessably, locked) by
     * output_file.c; HDF5 then opens that name, and the descriptor it opened
     * must be that file: a name swapped for a symbolic link in between is
     * refused (and was only truncated, never followed for writing). */
    mdnl_status st = mdnl_temp_create(path, tmp);
    if (st != MDNL_OK)
        return st;
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    if (fapl >= 0) {
        H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG);
#if H5_VERSION_GE(1, 10, 7)
        H5Pset_file_locking(fapl, 0, 1); /* the temporary file is locked by output_file.c */
#endif
    }
    *fid = H5Fcreate(*tmp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl >= 0 ? fapl : H5P_DEFAULT);
    if (fapl >= 0)
        H5Pclose(fapl);
    if (*fid < 0) /* the file exists already: what fails here is space or the file system */
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: cannot create the output file (%s)", path, mdnl_h5_reason());
    void *handle = NULL;
    if (H5Fget_vfd_handle(*fid, H5P_DEFAULT, &handle) < 0 || !handle)
        return mdnl_error(MDNL_ERR_INTERNAL, "%s: no file descriptor behind the HDF5 file", path);
    if ((st = mdnl_temp_is_ours(path, *tmp, *(int *)handle)) != MDNL_OK)
        return st;
    hid_t h = make_group(*fid, "h5md");
    TRY(h, "create /h5md");
    int32_t version[2] = {1, 1};
    st = write_num_attr(path, h, "version", H5T_NATIVE_INT32, 2, version);
    hid_t au = st == MDNL_OK ? make_group(h, "author") : -1;
    if (st == MDNL_OK && au < 0)
        st = fail(path, "create /h5md/author");
    if (st == MDNL_OK) {
        st = write_str_attr(path, au, "name", author_name(author), 0, 0);
    }
    if (au >= 0)
        H5Gclose(au);
    hid_t cr = st == MDNL_OK ? make_group(h, "creator") : -1;
    if (st == MDNL_OK && cr < 0)
        st = fail(path, "create /h5md/creator");
    if (st == MDNL_OK)
        st = write_str_attr(path, cr, "name", "mdnl", 0, 0);
    if (st == MDNL_OK)
        st = write_str_attr(path, cr, "version", MDNL_VERSION, 0, 0);
    if (cr >= 0)
        H5Gclose(cr);
    H5Gclose(h);
    return st;
}

static mdnl_status close_and_rename(const char *path, const char *tmp, hid_t *fid)
{
    /* A close that fails (a full disk) leaves the file half closed inside
     * HDF5, and the library's exit handler crashes on it: the flush, where
     * a full disk shows, comes first, and when it fails the file is emptied
     * so that the close's own flush has room (as in the aborts). */
    if (H5Fflush(*fid, H5F_SCOPE_GLOBAL) < 0) {
        mdnl_status st = fail(path, "finish the HDF5 file");
        if (truncate(tmp, 0) != 0) {
            /* nothing more to do: the file is removed below either way */
        }
        H5Fclose(*fid);
        *fid = H5I_INVALID_HID;
        mdnl_temp_remove(tmp);
        return st;
    }
    herr_t e = H5Fclose(*fid);
    *fid = H5I_INVALID_HID;
    if (e < 0) {
        mdnl_status st = fail(path, "finish the HDF5 file");
        mdnl_temp_remove(tmp);
        return st;
    }
    return mdnl_commit_rename(tmp, path);
}

/* --- trajectory writer ---------------------------------------------------- */

struct mdnl_h5md_traj {
    char *path, *tmp;
    hid_t fid, gid; /* file, /particles/all */
    mdnl_h5md_traj_options opt;
    char author[128], lunit[64], tunit[64];
    bool started;
    int64_t natoms, nframes;
    bool has_time, has_lattice;
    bool pbc[3];
    app pos, step, time, edges;
    /* species */
    bool species_td;
    hid_t species_obj; /* the species dataset, or the species group */
    app species;       /* species/value once time-dependent */
    int32_t *first_codes, *codes; /* [natoms] */
    int nnames;
    char names[MDNL_MAX_SPECIES][MDNL_SYMBOL_LEN];
};

mdnl_status mdnl_h5md_traj_create(const char *path, const mdnl_h5md_traj_options *opt, mdnl_h5md_traj **out)
{
    *out = NULL;
    mdnl_h5md_traj *w = mdnl_calloc(1, sizeof *w, "H5MD writer");
    if (!w)
        return MDNL_ERR_RESOURCE;
    w->fid = w->gid = w->species_obj = H5I_INVALID_HID;
    w->pos.ds = w->step.ds = w->time.ds = w->edges.ds = w->species.ds = H5I_INVALID_HID;
    if (opt) {
        w->opt = *opt;
        snprintf(w->author, sizeof w->author, "%s", opt->author ? opt->author : "");
        snprintf(w->lunit, sizeof w->lunit, "%s", opt->length_unit ? opt->length_unit : "");
        snprintf(w->tunit, sizeof w->tunit, "%s", opt->time_unit ? opt->time_unit : "");
    }
    w->path = strdup(path);
    if (!w->path) {
        free(w);
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory naming %s", path);
    }
    mdnl_status st = create_file(path, w->author, &w->tmp, &w->fid);
    if (st != MDNL_OK) {
        mdnl_h5md_traj_abort(w);
        return st;
    }
    *out = w;
    return MDNL_OK;
}

int64_t mdnl_h5md_traj_nframes(const mdnl_h5md_traj *w) { return w->nframes; }

/* Creates every dataset from the first frame. */
static mdnl_status traj_start(mdnl_h5md_traj *w, const mdnl_frame *f)
{
    const char *path = w->path;
    mdnl_status st;
    w->natoms = f->natoms;
    w->has_time = f->has_time; /* else time = step (H5MD readers need a time) */
    w->has_lattice = f->box.has_lattice;
    for (int a = 0; a < 3; ++a)
        w->pbc[a] = f->box.has_lattice && f->box.pbc[a];
    hid_t p = make_group(w->fid, "particles");
    TRY(p, "create /particles");
    w->gid = make_group(p, "all");
    H5Gclose(p);
    TRY(w->gid, "create /particles/all");

    hid_t pg = make_group(w->gid, "position");
    TRY(pg, "create /particles/all/position");
    hsize_t row[2] = {(hsize_t)w->natoms, 3};
    st = app_create(path, pg, "value", H5T_IEEE_F64LE, 2, row, 1, w->opt.gzip, w->opt.threads, &w->pos);
    if (st == MDNL_OK)
        st = app_create(path, pg, "step", H5T_STD_I64LE, 0, NULL, 1024, 0, 1, &w->step);
    if (st == MDNL_OK)
        st = app_create(path, pg, "time", H5T_IEEE_F64LE, 0, NULL, 1024, 0, 1, &w->time);
    if (st == MDNL_OK && w->lunit[0])
        st = write_str_attr(path, w->pos.ds, "unit", w->lunit, 0, 0);
    if (st == MDNL_OK && w->tunit[0])
        st = write_str_attr(path, w->time.ds, "unit", w->tunit, 0, 0);
    H5Gclose(pg);
    if (st != MDNL_OK)
        return st;

    hid_t box = make_group(w->gid, "box");
    TRY(box, "create /particles/all/box");
    int32_t dim = 3;
    char bnd[3 * 8] = {0}; /* null-padded, not null-terminated: "periodic" fills 8 bytes */
    for (int a = 0; a < 3; ++a) {
        const char *b = w->pbc[a] ? "periodic" : "none";
        memcpy(bnd + 8 * a, b, strlen(b));
    }
    st = write_num_attr(path, box, "dimension", H5T_NATIVE_INT32, 0, &dim);
    if (st == MDNL_OK)
        st = write_str_attr(path, box, "boundary", bnd, 3, 8);
    if (st == MDNL_OK && w->has_lattice) {
        hid_t eg = make_group(box, "edges");
        if (eg < 0)
            st = fail(path, "create /particles/all/box/edges");
        hsize_t r33[2] = {3, 3};
        if (st == MDNL_OK)
            st = app_create(path, eg, "value", H5T_IEEE_F64LE, 2, r33, 64, 0, 1, &w->edges);
        if (st == MDNL_OK && w->lunit[0])
            st = write_str_attr(path, w->edges.ds, "unit", w->lunit, 0, 0);
        if (st == MDNL_OK && H5Lcreate_hard(w->gid, "position/step", eg, "step", H5P_DEFAULT, H5P_DEFAULT) < 0)
            st = fail(path, "link box/edges/step");
        if (st == MDNL_OK && H5Lcreate_hard(w->gid, "position/time", eg, "time", H5P_DEFAULT, H5P_DEFAULT) < 0)
            st = fail(path, "link box/edges/time");
        if (eg >= 0)
            H5Gclose(eg);
    }
    H5Gclose(box);
    if (st != MDNL_OK)
        return st;

    w->first_codes = mdnl_malloc((size_t)w->natoms * sizeof(int32_t), "species codes");
    w->codes = mdnl_malloc((size_t)w->natoms * sizeof(int32_t), "species codes");
    if (!w->first_codes || !w->codes)
        return MDNL_ERR_RESOURCE;
    w->started = true;
    return MDNL_OK;
}

/* Maps the frame's species to the writer's codes (order of first appearance
 * over the whole trajectory). */
static mdnl_status traj_codes(mdnl_h5md_traj *w, const mdnl_frame *f, int32_t *codes)
{
    int32_t map[MDNL_MAX_SPECIES];
    for (int32_t s = 0; s < f->nspecies; ++s) {
        int k = 0;
        while (k < w->nnames && strcmp(w->names[k], f->symbols[s]) != 0)
            ++k;
        if (k == w->nnames) {
            if (w->nnames == MDNL_MAX_SPECIES)
                return mdnl_error(MDNL_ERR_INPUT, "%s: frame %" PRId64 ": more than %d species in the trajectory",
                                  w->path, f->index, MDNL_MAX_SPECIES);
            snprintf(w->names[w->nnames++], MDNL_SYMBOL_LEN, "%s", f->symbols[s]);
        }
        map[s] = k;
    }
    for (int64_t i = 0; i < f->natoms; ++i) {
        int32_t s = f->species[i];
        if (s < 0 || s >= f->nspecies)
            return mdnl_error(MDNL_ERR_INTERNAL, "frame %" PRId64 ": atom %" PRId64 " has species %d of %d", f->index,
                              i, s, f->nspecies);
        codes[i] = map[s];
    }
    return MDNL_OK;
}

/* Turns the fixed species dataset into a time-dependent element when a frame
 * brings different species: the rows written so far repeat the first. */
static mdnl_status species_to_td(mdnl_h5md_traj *w)
{
    const char *path = w->path;
    H5Dclose(w->species_obj);
    w->species_obj = H5I_INVALID_HID;
    TRY(H5Ldelete(w->gid, "species", H5P_DEFAULT), "replace /particles/all/species");
    w->species_obj = make_group(w->gid, "species");
    TRY(w->species_obj, "create /particles/all/species");
    hsize_t row[1] = {(hsize_t)w->natoms};
    mdnl_status st = app_create(path, w->species_obj, "value", H5T_STD_I32LE, 1, row, 1, 1, w->opt.threads, &w->species);
    if (st != MDNL_OK)
        return st;
    TRY(H5Lcreate_hard(w->gid, "position/step", w->species_obj, "step", H5P_DEFAULT, H5P_DEFAULT),
        "link species/step");
    TRY(H5Lcreate_hard(w->gid, "position/time", w->species_obj, "time", H5P_DEFAULT, H5P_DEFAULT), "link species/time");
    for (int64_t k = 0; k < w->nframes; ++k)
        if ((st = app_write(path, &w->species, H5T_NATIVE_INT32, w->first_codes, 1)) != MDNL_OK)
            return st;
    w->species_td = true;
    return MDNL_OK;
}

mdnl_status mdnl_h5md_traj_append(mdnl_h5md_traj *w, const mdnl_frame *f)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
    const char *path = w->path;
    mdnl_status st;
    if (!w->started && (st = traj_start(w, f)) != MDNL_OK)
        return st;
    if (f->natoms != w->natoms)
        return mdnl_error(MDNL_ERR_INPUT,
                          "%s: frame %" PRId64 ": H5MD needs a constant atom count: expected %" PRId64
                          " atoms (as in the first frame), found %" PRId64,
                          path, f->index, w->natoms, f->natoms);
    bool pbc[3];
    for (int a = 0; a < 3; ++a)
        pbc[a] = f->box.has_lattice && f->box.pbc[a];
    if (f->box.has_lattice != w->has_lattice || memcmp(pbc, w->pbc, sizeof pbc) != 0)
        return mdnl_error(MDNL_ERR_INPUT,
                          "%s: frame %" PRId64 ": H5MD needs one boundary for the whole trajectory: expected %s "
                          "pbc=%c%c%c (as in the first frame), found %s pbc=%c%c%c",
                          path, f->index, w->has_lattice ? "a cell" : "no cell", "FT"[w->pbc[0]], "FT"[w->pbc[1]],
                          "FT"[w->pbc[2]], f->box.has_lattice ? "a cell" : "no cell", "FT"[pbc[0]], "FT"[pbc[1]],
                          "FT"[pbc[2]]);

    if ((st = app_write(path, &w->pos, H5T_NATIVE_DOUBLE, f->pos, 1)) != MDNL_OK)
        return st;
    int64_t step = f->has_step ? f->step : f->index;
    if ((st = app_write(path, &w->step, H5T_NATIVE_INT64, &step, 1)) != MDNL_OK)
        return st;
    {
        const double t = !w->has_time ? (double)step : f->has_time ? f->time : NAN;
        if ((st = app_write(path, &w->time, H5T_NATIVE_DOUBLE, &t, 1)) != MDNL_OK)
            return st;
    }
    if (w->has_lattice && (st = app_write(path, &w->edges, H5T_NATIVE_DOUBLE, f->box.h, 1)) != MDNL_OK)
        return st;

    /* species */
    if (w->nframes == 0) {
        if ((st = traj_codes(w, f, w->first_codes)) != MDNL_OK)
            return st;
        hsize_t n = (hsize_t)w->natoms;
        hid_t sp = H5Screate_simple(1, &n, NULL);
        TRY(sp, "make the dataspace of species");
        hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
        if (dcpl >= 0)
            H5Pset_obj_track_times(dcpl, 0);
        w->species_obj = H5Dcreate2(w->gid, "species", H5T_STD_I32LE, sp, H5P_DEFAULT,
                                    dcpl >= 0 ? dcpl : H5P_DEFAULT, H5P_DEFAULT);
        if (dcpl >= 0)
            H5Pclose(dcpl);
        H5Sclose(sp);
        TRY(w->species_obj, "create /particles/all/species");
        if (n > 0)
            TRY(H5Dwrite(w->species_obj, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, w->first_codes),
                "write /particles/all/species");
    } else {
        if ((st = traj_codes(w, f, w->codes)) != MDNL_OK)
            return st;
        bool same = memcmp(w->codes, w->first_codes, (size_t)w->natoms * sizeof(int32_t)) == 0;
        if (!same && !w->species_td && (st = species_to_td(w)) != MDNL_OK)
            return st;
        if (w->species_td && (st = app_write(path, &w->species, H5T_NATIVE_INT32, w->codes, 1)) != MDNL_OK)
            return st;
    }
    ++w->nframes;
    return MDNL_OK;
}

static void traj_close_objects(mdnl_h5md_traj *w)
{
    app_close(&w->pos);
    app_close(&w->step);
    app_close(&w->time);
    app_close(&w->edges);
    app_close(&w->species);
    if (w->species_obj >= 0)
        H5Oclose(w->species_obj);
    w->species_obj = H5I_INVALID_HID;
    if (w->gid >= 0)
        H5Gclose(w->gid);
    w->gid = H5I_INVALID_HID;
}

static void traj_free(mdnl_h5md_traj *w)
{
    free(w->first_codes);
    free(w->codes);
    free(w->path);
    free(w->tmp);
    free(w);
}

mdnl_status mdnl_h5md_traj_commit(mdnl_h5md_traj *w)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
    const char *path = w->path;
    mdnl_status st = app_finish(path, &w->pos);
    if (st == MDNL_OK)
        st = app_finish(path, &w->species);
    if (st == MDNL_OK && w->species_obj >= 0 && w->nnames > 0)
        st = write_str_attr(path, w->species_obj, "names", &w->names[0][0], w->nnames, MDNL_SYMBOL_LEN);
    if (st == MDNL_OK && !w->started) {
        /* No frames: an H5MD file still needs /particles. */
        hid_t p = make_group(w->fid, "particles");
        if (p < 0)
            st = fail(path, "create /particles");
        else
            H5Gclose(p);
    }
    traj_close_objects(w);
    if (st != MDNL_OK) {
        mdnl_h5md_traj_abort(w);
        return st;
    }
    st = close_and_rename(w->path, w->tmp, &w->fid);
    traj_free(w);
    return st;
}

void mdnl_h5md_traj_abort(mdnl_h5md_traj *w)
{
    if (!w)
        return;
    traj_close_objects(w);
    /* Emptying the file first frees its blocks, so that the flush inside
     * H5Fclose succeeds even when the disk is what failed; a file HDF5 could
     * not close would crash the library's exit handler. */
    if (w->tmp && truncate(w->tmp, 0) != 0) {
        /* nothing more to do: the file is removed below either way */
    }
    if (w->fid >= 0)
        H5Fclose(w->fid);
    if (w->tmp)
        mdnl_temp_remove(w->tmp);
    traj_free(w);
}

/* --- results writer ------------------------------------------------------ */

enum { E_BATCH = 256 };

struct mdnl_h5md_results {
    char *path, *tmp;
    hid_t fid;
    bool energy_started;
    app e_step, e_time, e_value;
    /* Energies are appended in batches: one HDF5 extend-and-write per
     * frame cost ~0.5 ms, as long as the GPU work of a 100k-atom frame. */
    int e_pending;
    int64_t e_buf_step[E_BATCH];
    double e_buf_time[E_BATCH], e_buf_value[E_BATCH];
    bool pa_started;
    int64_t pa_natoms;
    app pa_step, pa_time, pa_value;
    bool nb_started;
    hid_t nb;
    app nb_frame, nb_natoms, nb_npairs, nb_row_start, nb_pair_start, nb_offsets, nb_j, nb_d;
    int64_t nb_rows, nb_pairs; /* running totals */
    app nb_shift, nb_vector;   /* --with shift,vector: created by the first write of each */
    hid_t rdf;
    /* per-frame RDF rows (mdnl_h5md_results_write_rdf_frame), one per name */
    int rf_n;
    struct rdf_frames {
        char name[2 * MDNL_SYMBOL_LEN + 8];
        app frame, step, g, counts;
    } rf[MDNL_H5MD_RDF_FRAMES_MAX];
    /* coordination numbers (mdnl_h5md_results_write_coord), one per name */
    int co_n;
    struct coord_frames {
        char name[2 * MDNL_SYMBOL_LEN + 8];
        int64_t natoms;
        app frame, step, value;
    } co[MDNL_H5MD_COORD_MAX];
    int threads; /* compression workers */
};

static void results_close_objects(mdnl_h5md_results *w)
{
    app *all[] = {&w->e_step,   &w->e_time,        &w->e_value,       &w->pa_step,       &w->pa_time,
                  &w->pa_value, &w->nb_frame,      &w->nb_natoms,     &w->nb_npairs,     &w->nb_row_start,
                  &w->nb_pair_start, &w->nb_offsets, &w->nb_j,        &w->nb_d,
                  &w->nb_shift,      &w->nb_vector};
    for (size_t k = 0; k < sizeof all / sizeof *all; ++k)
        app_close(all[k]);
    for (int k = 0; k < w->rf_n; ++k) {
        app_close(&w->rf[k].frame);
        app_close(&w->rf[k].step);
        app_close(&w->rf[k].g);
        app_close(&w->rf[k].counts);
    }
    w->rf_n = 0;
    for (int k = 0; k < w->co_n; ++k) {
        app_close(&w->co[k].frame);
        app_close(&w->co[k].step);
        app_close(&w->co[k].value);
    }
    w->co_n = 0;
    if (w->nb >= 0)
        H5Gclose(w->nb);
    if (w->rdf >= 0)
        H5Gclose(w->rdf);
    w->nb = w->rdf = H5I_INVALID_HID;
}

static void results_free(mdnl_h5md_results *w)
{
    free(w->path);
    free(w->tmp);
    free(w);
}

mdnl_status mdnl_h5md_results_create(const char *path, mdnl_h5md_results **out)
{
    *out = NULL;
    mdnl_h5md_results *w = mdnl_calloc(1, sizeof *w, "H5MD results writer");
    if (!w)
        return MDNL_ERR_RESOURCE;
    w->fid = w->nb = w->rdf = H5I_INVALID_HID;
    w->threads = 1;
    app *all[] = {&w->e_step,   &w->e_time,        &w->e_value,       &w->pa_step,       &w->pa_time,
                  &w->pa_value, &w->nb_frame,      &w->nb_natoms,     &w->nb_npairs,     &w->nb_row_start,
                  &w->nb_pair_start, &w->nb_offsets, &w->nb_j,        &w->nb_d,
                  &w->nb_shift,      &w->nb_vector};
    for (size_t k = 0; k < sizeof all / sizeof *all; ++k)
        all[k]->ds = H5I_INVALID_HID;
    w->path = strdup(path);
    if (!w->path) {
        free(w);
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory naming %s", path);
    }
    mdnl_status st = create_file(path, NULL, &w->tmp, &w->fid);
    if (st != MDNL_OK) {
        mdnl_h5md_results_abort(w);
        return st;
    }
    *out = w;
    return MDNL_OK;
}

/* Creates the groups of `gpath` ("/a/b/c") that do not exist; returns the
 * last one open. */
static hid_t require_groups(hid_t fid, const char *gpath)
{
    hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    if (lcpl < 0 || H5Pset_create_intermediate_group(lcpl, 1) < 0) {
        if (lcpl >= 0)
            H5Pclose(lcpl);
        return -1;
    }
    hid_t g;
    htri_t e = H5Lexists(fid, gpath, H5P_DEFAULT);
    /* H5Lexists fails (rather than returning 0) when an intermediate link
     * is missing; either way the group is made. */
    if (e > 0)
        g = H5Gopen2(fid, gpath, H5P_DEFAULT);
    else
        g = H5Gcreate2(fid, gpath, lcpl, H5P_DEFAULT, H5P_DEFAULT);
    H5Pclose(lcpl);
    return g;
}

static mdnl_status flush_energy(mdnl_h5md_results *w)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
    const hsize_t n = (hsize_t)w->e_pending;
    mdnl_status st;
    w->e_pending = 0;
    if ((st = app_write(w->path, &w->e_step, H5T_NATIVE_INT64, w->e_buf_step, n)) != MDNL_OK ||
        (st = app_write(w->path, &w->e_time, H5T_NATIVE_DOUBLE, w->e_buf_time, n)) != MDNL_OK)
        return st;
    return app_write(w->path, &w->e_value, H5T_NATIVE_DOUBLE, w->e_buf_value, n);
}

mdnl_status mdnl_h5md_results_write_energy(mdnl_h5md_results *w, int64_t step, double time, double total)
{
    /* Buffering alone makes no HDF5 call: with a thread-safe HDF5 every call
     * takes the library's lock, which the reader holds for a whole frame. */
    const char *path = w->path;
    mdnl_status st = MDNL_OK;
    if (!w->energy_started) {
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
        hid_t g = require_groups(w->fid, "/observables/potential_energy");
        TRY(g, "create /observables/potential_energy");
        st = app_create(path, g, "step", H5T_STD_I64LE, 0, NULL, 1024, 0, 1, &w->e_step);
        if (st == MDNL_OK)
            st = app_create(path, g, "time", H5T_IEEE_F64LE, 0, NULL, 1024, 0, 1, &w->e_time);
        if (st == MDNL_OK)
            st = write_str_attr(path, w->e_time.ds, "unit", MDNL_H5MD_TIME_UNIT, 0, 0);
        if (st == MDNL_OK)
            st = app_create(path, g, "value", H5T_IEEE_F64LE, 0, NULL, 1024, 0, 1, &w->e_value);
        H5Gclose(g);
        if (st != MDNL_OK)
            return st;
        w->energy_started = true;
    }
    w->e_buf_step[w->e_pending] = step;
    w->e_buf_time[w->e_pending] = time;
    w->e_buf_value[w->e_pending] = total;
    if (++w->e_pending == E_BATCH)
        return flush_energy(w);
    return MDNL_OK;
}

mdnl_status mdnl_h5md_results_write_per_atom_energy(mdnl_h5md_results *w, int64_t step, double time,
                                                    int64_t natoms, const double *e)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
    const char *path = w->path;
    mdnl_status st = MDNL_OK;
    if (!w->pa_started) {
        hid_t g = require_groups(w->fid, "/particles/all/potential_energy");
        TRY(g, "create /particles/all/potential_energy");
        hsize_t row[1] = {(hsize_t)natoms};
        st = app_create(path, g, "step", H5T_STD_I64LE, 0, NULL, 1024, 0, 1, &w->pa_step);
        if (st == MDNL_OK)
            st = app_create(path, g, "time", H5T_IEEE_F64LE, 0, NULL, 1024, 0, 1, &w->pa_time);
        if (st == MDNL_OK)
            st = write_str_attr(path, w->pa_time.ds, "unit", MDNL_H5MD_TIME_UNIT, 0, 0);
        if (st == MDNL_OK)
            st = app_create(path, g, "value", H5T_IEEE_F64LE, 1, row, 1, 0, 1, &w->pa_value);
        H5Gclose(g);
        if (st != MDNL_OK)
            return st;
        w->pa_natoms = natoms;
        w->pa_started = true;
    }
    if (natoms != w->pa_natoms)
        return mdnl_error(MDNL_ERR_INPUT,
                          "%s: /particles/all/potential_energy/value: expected %" PRId64
                          " atoms per frame (as in the first frame), found %" PRId64,
                          path, w->pa_natoms, natoms);
    if ((st = app_write(path, &w->pa_step, H5T_NATIVE_INT64, &step, 1)) != MDNL_OK ||
        (st = app_write(path, &w->pa_time, H5T_NATIVE_DOUBLE, &time, 1)) != MDNL_OK)
        return st;
    return app_write(path, &w->pa_value, H5T_NATIVE_DOUBLE, e, 1);
}

static mdnl_status neighbors_start(mdnl_h5md_results *w)
{
    const char *path = w->path;
    if (w->nb_started)
        return MDNL_OK;
    w->nb = require_groups(w->fid, "/neighbors");
    TRY(w->nb, "create /neighbors");
    mdnl_status st = MDNL_OK;
    const hsize_t big = 65536; /* elements per chunk of the concatenated arrays */
    struct {
        app *a;
        const char *name;
        hid_t type;
        hsize_t chunk;
        int gzip;
    } spec[] = {
        {&w->nb_frame, "frame", H5T_STD_I64LE, 1024, 0},
        {&w->nb_natoms, "natoms", H5T_STD_I64LE, 1024, 0},
        {&w->nb_npairs, "npairs", H5T_STD_I64LE, 1024, 0},
        {&w->nb_row_start, "row_start", H5T_STD_I64LE, 1024, 0},
        {&w->nb_pair_start, "pair_start", H5T_STD_I64LE, 1024, 0},
        /* Offsets and sorted j compress well after shuffling (high bytes
         * repeat); distances hardly do, so they stay raw. */
        {&w->nb_offsets, "offsets", H5T_STD_I64LE, big, 1},
        {&w->nb_j, "j", H5T_STD_I32LE, big, 1},
        {&w->nb_d, "distance", H5T_IEEE_F32LE, big, 0},
    };
    for (size_t k = 0; k < sizeof spec / sizeof *spec && st == MDNL_OK; ++k)
        st = app_create(path, w->nb, spec[k].name, spec[k].type, 0, NULL, spec[k].chunk, spec[k].gzip,
                        w->threads, spec[k].a);
    /* distance is stored raw in step with j (app_write_in_step) */
    if (st == MDNL_OK && w->nb_j.direct)
        st = app_make_direct(&w->nb_d);
    int64_t zero = 0;
    if (st == MDNL_OK)
        st = app_write(path, &w->nb_row_start, H5T_NATIVE_INT64, &zero, 1);
    if (st == MDNL_OK)
        st = app_write(path, &w->nb_pair_start, H5T_NATIVE_INT64, &zero, 1);
    if (st == MDNL_OK)
        w->nb_started = true;
    return st;
}

void mdnl_h5md_results_set_threads(mdnl_h5md_results *w, int threads) { w->threads = threads > 0 ? threads : 1; }

mdnl_status mdnl_h5md_results_set_neighbors_info(mdnl_h5md_results *w, const char *list, double cutoff)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
    mdnl_status st = neighbors_start(w);
    if (st == MDNL_OK && list)
        st = write_str_attr(w->path, w->nb, "list", list, 0, 0);
    if (st == MDNL_OK)
        st = write_num_attr(w->path, w->nb, "cutoff", H5T_NATIVE_DOUBLE, 0, &cutoff);
    return st;
}

mdnl_status mdnl_h5md_results_write_neighbors(mdnl_h5md_results *w, int64_t frame, int64_t natoms,
                                              const int64_t *offsets, const int32_t *j, const float *d,
                                              int64_t npairs)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
    const char *path = w->path;
    if (natoms < 0 || npairs < 0 || offsets[0] != 0 || offsets[natoms] != npairs)
        return mdnl_error(MDNL_ERR_INTERNAL,
                          "%s: frame %" PRId64 ": neighbor CSR with offsets[0] = %" PRId64 ", offsets[%" PRId64
                          "] = %" PRId64 " for %" PRId64 " pairs",
                          path, frame, offsets[0], natoms, natoms >= 0 ? offsets[natoms] : -1, npairs);
    mdnl_status st = neighbors_start(w);
    if (st != MDNL_OK)
        return st;
    int64_t row_end = w->nb_rows + natoms + 1, pair_end = w->nb_pairs + npairs;
    if ((st = app_write(path, &w->nb_frame, H5T_NATIVE_INT64, &frame, 1)) != MDNL_OK ||
        (st = app_write(path, &w->nb_natoms, H5T_NATIVE_INT64, &natoms, 1)) != MDNL_OK ||
        (st = app_write(path, &w->nb_npairs, H5T_NATIVE_INT64, &npairs, 1)) != MDNL_OK ||
        (st = app_write(path, &w->nb_offsets, H5T_NATIVE_INT64, offsets, (hsize_t)natoms + 1)) != MDNL_OK ||
        (st = w->nb_d.direct ? app_write_in_step(path, &w->nb_j, H5T_NATIVE_INT32, j, &w->nb_d, H5T_NATIVE_FLOAT, d,
                                                 (hsize_t)npairs)
                             : app_write(path, &w->nb_j, H5T_NATIVE_INT32, j, (hsize_t)npairs)) != MDNL_OK ||
        (!w->nb_d.direct && (st = app_write(path, &w->nb_d, H5T_NATIVE_FLOAT, d, (hsize_t)npairs)) != MDNL_OK) ||
        (st = app_write(path, &w->nb_row_start, H5T_NATIVE_INT64, &row_end, 1)) != MDNL_OK ||
        (st = app_write(path, &w->nb_pair_start, H5T_NATIVE_INT64, &pair_end, 1)) != MDNL_OK)
        return st;
    w->nb_rows = row_end;
    w->nb_pairs = pair_end;
    return MDNL_OK;
}

mdnl_status mdnl_h5md_results_write_neighbor_shifts(mdnl_h5md_results *w, int64_t npairs, const int32_t *S,
                                                    const double *D)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
    const char *path = w->path;
    mdnl_status st = MDNL_OK;
    /* Rows of 3 (12 and 24 bytes): 32768 rows a chunk, near the 65536
     * elements of j's. Small integers gain from shuffling before deflate,
     * like offsets and j; the vectors' doubles hardly do (deflate made the
     * write ~9x slower for a few percent), so they stay raw like distance. */
    const hsize_t row[1] = {3}, chunk = 32768;
    if (!w->nb_started || (S && w->nb_shift.ds < 0 && w->nb_pairs != npairs) ||
        (D && w->nb_vector.ds < 0 && w->nb_pairs != npairs))
        return mdnl_error(MDNL_ERR_INTERNAL, "%s: image shifts or vectors not written with every list", path);
    if (S && w->nb_shift.ds < 0)
        st = app_create(path, w->nb, "shift", H5T_STD_I32LE, 1, row, chunk, 1, w->threads, &w->nb_shift);
    if (st == MDNL_OK && D && w->nb_vector.ds < 0)
        st = app_create(path, w->nb, "vector", H5T_IEEE_F64LE, 1, row, chunk, 0, w->threads, &w->nb_vector);
    if (st == MDNL_OK && S)
        st = app_write(path, &w->nb_shift, H5T_NATIVE_INT32, S, (hsize_t)npairs);
    if (st == MDNL_OK && D)
        st = app_write(path, &w->nb_vector, H5T_NATIVE_DOUBLE, D, (hsize_t)npairs);
    return st;
}

mdnl_status mdnl_h5md_results_write_rdf(mdnl_h5md_results *w, const char *name, int bins, const double *r_lo,
                                        const double *r_hi, const double *r, const double *g, const double *n,
                                        const uint64_t *counts)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
    const char *path = w->path;
    if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 || bins < 0)
        return mdnl_error(MDNL_ERR_INTERNAL, "%s: RDF name \"%s\" with %d bins", path, name ? name : "(null)", bins);
    if (w->rdf < 0) {
        w->rdf = require_groups(w->fid, "/rdf");
        TRY(w->rdf, "create /rdf");
    }
    htri_t e = H5Lexists(w->rdf, name, H5P_DEFAULT);
    int per_frame = 0; /* the group of its per-frame rows exists already */
    for (int k = 0; k < w->rf_n; ++k)
        per_frame |= strcmp(w->rf[k].name, name) == 0;
    if (e != 0 && !(e > 0 && per_frame))
        return mdnl_error(MDNL_ERR_INTERNAL, "%s: /rdf/%s written twice", path, name);
    hid_t grp = e > 0 ? H5Gopen2(w->rdf, name, H5P_DEFAULT) : make_group(w->rdf, name);
    TRY(grp, "create /rdf/%s", name);
    hsize_t dims[1] = {(hsize_t)bins};
    struct {
        const char *name;
        const void *data;
        hid_t ftype, mtype;
    } spec[] = {
        {"r_lo", r_lo, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE}, {"r_hi", r_hi, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE},
        {"r", r, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE},       {"g", g, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE},
        {"n", n, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE},       {"counts", counts, H5T_STD_U64LE, H5T_NATIVE_UINT64},
    };
    mdnl_status st = MDNL_OK;
    for (size_t k = 0; k < sizeof spec / sizeof *spec && st == MDNL_OK; ++k)
        if (spec[k].data)
            st = write_fixed(path, grp, spec[k].name, spec[k].ftype, spec[k].mtype, 1, dims, spec[k].data);
    H5Gclose(grp);
    return st;
}

mdnl_status mdnl_h5md_results_write_rdf_frame(mdnl_h5md_results *w, const char *name, int bins, int64_t frame,
                                              int64_t step, const double *g, const uint64_t *counts)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
    const char *path = w->path;
    if (!name || !*name || strchr(name, '/') || strcmp(name, ".") == 0 || bins <= 0 ||
        strlen(name) >= sizeof w->rf[0].name)
        return mdnl_error(MDNL_ERR_INTERNAL, "%s: RDF name \"%s\" with %d bins", path, name ? name : "(null)", bins);
    struct rdf_frames *r = NULL;
    for (int k = 0; k < w->rf_n && !r; ++k)
        if (strcmp(w->rf[k].name, name) == 0)
            r = &w->rf[k];
    mdnl_status st = MDNL_OK;
    if (!r) {
        if (w->rf_n == MDNL_H5MD_RDF_FRAMES_MAX)
            return mdnl_error(MDNL_ERR_INTERNAL, "%s: more than %d per-frame RDFs", path, MDNL_H5MD_RDF_FRAMES_MAX);
        r = &w->rf[w->rf_n];
        memset(r, 0, sizeof *r);
        r->frame.ds = r->step.ds = r->g.ds = r->counts.ds = H5I_INVALID_HID;
        snprintf(r->name, sizeof r->name, "%s", name);
        char gpath[64];
        snprintf(gpath, sizeof gpath, "/rdf/%s", name);
        hid_t grp = require_groups(w->fid, gpath);
        TRY(grp, "create %s", gpath);
        w->rf_n++; /* closed with the others from here on */
        const hsize_t row[1] = {(hsize_t)bins};
        st = app_create(path, grp, "frame", H5T_STD_I64LE, 0, NULL, 1024, 0, 1, &r->frame);
        if (st == MDNL_OK)
            st = app_create(path, grp, "step", H5T_STD_I64LE, 0, NULL, 1024, 0, 1, &r->step);
        if (st == MDNL_OK) /* chunked by frame: a row a chunk */
            st = app_create(path, grp, "g_frames", H5T_IEEE_F64LE, 1, row, 1, 0, 1, &r->g);
        if (st == MDNL_OK)
            st = app_create(path, grp, "counts_frames", H5T_STD_U64LE, 1, row, 1, 0, 1, &r->counts);
        H5Gclose(grp);
        if (st != MDNL_OK)
            return st;
    }
    if (r->g.dims[1] != (hsize_t)bins)
        return mdnl_error(MDNL_ERR_INTERNAL, "%s: /rdf/%s: %d bins after %llu", path, name, bins,
                          (unsigned long long)r->g.dims[1]);
    if ((st = app_write(path, &r->frame, H5T_NATIVE_INT64, &frame, 1)) != MDNL_OK ||
        (st = app_write(path, &r->step, H5T_NATIVE_INT64, &step, 1)) != MDNL_OK ||
        (st = app_write(path, &r->g, H5T_NATIVE_DOUBLE, g, 1)) != MDNL_OK)
        return st;
    return app_write(path, &r->counts, H5T_NATIVE_UINT64, counts, 1);
}

static struct coord_frames *coord_of(mdnl_h5md_results *w, const char *name)
{
    for (int k = 0; k < w->co_n; ++k)
        if (strcmp(w->co[k].name, name) == 0)
            return &w->co[k];
    return NULL;
}

mdnl_status mdnl_h5md_results_write_coord(mdnl_h5md_results *w, const char *name, int64_t frame, int64_t step,
                                          int64_t natoms, const int32_t *counts)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
    const char *path = w->path;
    if (!name || !*name || strchr(name, '/') || strlen(name) >= sizeof w->co[0].name || natoms < 0)
        return mdnl_error(MDNL_ERR_INTERNAL, "%s: coordination name \"%s\"", path, name ? name : "(null)");
    struct coord_frames *r = coord_of(w, name);
    mdnl_status st = MDNL_OK;
    if (!r) {
        if (w->co_n == MDNL_H5MD_COORD_MAX)
            return mdnl_error(MDNL_ERR_INTERNAL, "%s: more than %d coordination columns", path, MDNL_H5MD_COORD_MAX);
        r = &w->co[w->co_n];
        memset(r, 0, sizeof *r);
        r->frame.ds = r->step.ds = r->value.ds = H5I_INVALID_HID;
        snprintf(r->name, sizeof r->name, "%s", name);
        r->natoms = natoms;
        char gpath[64];
        snprintf(gpath, sizeof gpath, "/coordination/%s", name);
        hid_t grp = require_groups(w->fid, gpath);
        TRY(grp, "create %s", gpath);
        w->co_n++;
        const hsize_t row[1] = {(hsize_t)natoms};
        st = app_create(path, grp, "frame", H5T_STD_I64LE, 0, NULL, 1024, 0, 1, &r->frame);
        if (st == MDNL_OK)
            st = app_create(path, grp, "step", H5T_STD_I64LE, 0, NULL, 1024, 0, 1, &r->step);
        if (st == MDNL_OK)
            st = app_create(path, grp, "value", H5T_STD_I32LE, 1, row, 1, 1, w->threads, &r->value);
        H5Gclose(grp);
        if (st != MDNL_OK)
            return st;
    }
    if (natoms != r->natoms)
        return mdnl_error(MDNL_ERR_INPUT,
                          "%s: /coordination/%s/value: expected %" PRId64 " atoms per frame (as in the first frame), "
                          "found %" PRId64,
                          path, name, r->natoms, natoms);
    if ((st = app_write(path, &r->frame, H5T_NATIVE_INT64, &frame, 1)) != MDNL_OK ||
        (st = app_write(path, &r->step, H5T_NATIVE_INT64, &step, 1)) != MDNL_OK)
        return st;
    return app_write(path, &r->value, H5T_NATIVE_INT32, counts, 1);
}

mdnl_status mdnl_h5md_results_write_coord_histogram(mdnl_h5md_results *w, const char *name, int64_t n,
                                                    const int64_t *atoms)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
    const char *path = w->path;
    if (!name || !*name || strchr(name, '/') || strlen(name) >= 40 || n < 0)
        return mdnl_error(MDNL_ERR_INTERNAL, "%s: coordination name \"%s\"", path, name ? name : "(null)");
    char gpath[64];
    snprintf(gpath, sizeof gpath, "/coordination/%s", name);
    hid_t grp = require_groups(w->fid, gpath);
    TRY(grp, "create %s", gpath);
    const hsize_t dims[1] = {(hsize_t)n};
    mdnl_status st = write_fixed(path, grp, "histogram", H5T_STD_I64LE, H5T_NATIVE_INT64, 1, dims, atoms);
    H5Gclose(grp);
    return st;
}

mdnl_status mdnl_h5md_results_commit(mdnl_h5md_results *w)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* per thread: the writer may run on a pipeline thread */
    mdnl_status st = w->e_pending ? flush_energy(w) : MDNL_OK;
    app *all[] = {&w->pa_value, &w->nb_offsets, &w->nb_j, &w->nb_d, &w->nb_shift, &w->nb_vector};
    for (size_t k = 0; k < sizeof all / sizeof *all && st == MDNL_OK; ++k)
        st = app_finish(w->path, all[k]);
    if (st != MDNL_OK) {
        mdnl_h5md_results_abort(w);
        return st;
    }
    results_close_objects(w);
    st = close_and_rename(w->path, w->tmp, &w->fid);
    results_free(w);
    return st;
}

void mdnl_h5md_results_abort(mdnl_h5md_results *w)
{
    if (!w)
        return;
    results_close_objects(w);
    /* Emptying the file first frees its blocks, so that the flush inside
     * H5Fclose succeeds even when the disk is what failed; a file HDF5 could
     * not close would crash the library's exit handler. */
    if (w->tmp && truncate(w->tmp, 0) != 0) {
        /* nothing more to do: the file is removed below either way */
    }
    if (w->fid >= 0)
        H5Fclose(w->fid);
    if (w->tmp)
        mdnl_temp_remove(w->tmp);
    results_free(w);
}

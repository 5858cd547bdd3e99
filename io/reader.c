/* reader.c — the table of formats behind reader.h and the detection that
 * picks one: --format, else a sure sniff of the content, else the extension
 * (after a compression suffix), else a plausible sniff, else an error that
 * names the formats mdnl reads. XYZ / extended XYZ, H5MD, XTC, TRR and DCD
 * are wrapped here; every other format defines its row beside its reader. */
#define _POSIX_C_SOURCE 200809L
#include "reader.h"

#include "dcd_reader.h"
#include "h5md_reader.h"
#include "trr_reader.h"
#include "xtc_reader.h"
#include "xyz_reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- XYZ / extended XYZ ---- */

/* The k-th line (0-based) of the head: [*b, *e); 0 when the head has fewer. */
static int head_line(const unsigned char *h, size_t n, int k, const unsigned char **b, const unsigned char **e)
{
    const unsigned char *p = h, *end = h + n;
    for (int i = 0; i < k; ++i) {
        const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return 0;
        p = nl + 1;
    }
    const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl && p == end)
        return 0;
    *b = p;
    *e = nl ? nl : end;
    return 1;
}

static int sniff_xyz(const unsigned char *h, size_t n)
{
    const unsigned char *b, *e;
    return head_line(h, n, 0, &b, &e) && mdnl_text_is_integer(b, e) ? MDNL_SNIFF_MAYBE : MDNL_SNIFF_NO;
}

static bool has_key(const unsigned char *b, const unsigned char *e, const char *key)
{
    const size_t k = strlen(key);
    for (const unsigned char *p = b; p + k <= e; ++p)
        if (strncasecmp((const char *)p, key, k) == 0 && (p == b || p[-1] == ' ' || p[-1] == '\t'))
            return true;
    return false;
}

typedef struct xyz_state {
    mdnl_xyz_reader *r;
    bool extended;
} xyz_state;

static mdnl_status xyz_open(const mdnl_format_input *in, void **state)
{
    xyz_state *x = mdnl_calloc(1, sizeof *x, "XYZ reader");
    if (!x)
        return MDNL_ERR_RESOURCE;
    const unsigned char *h, *b, *e;
    size_t n = mdnl_stream_head(in->stream, &h);
    x->extended = head_line(h, n, 1, &b, &e) &&
                  (has_key(b, e, "Lattice=") || has_key(b, e, "Properties=") || has_key(b, e, "pbc="));
    mdnl_status st = mdnl_xyz_open_stream(in->stream, in->path, &x->r);
    if (st != MDNL_OK) {
        free(x);
        return st;
    }
    mdnl_xyz_keep_extras(x->r, in->opt->keep_extras);
    if ((st = mdnl_xyz_set_threads(x->r, in->opt->threads)) != MDNL_OK) {
        mdnl_xyz_close(x->r);
        free(x);
        return st;
    }
    *state = x;
    return MDNL_OK;
}

static mdnl_status xyz_next(void *s, mdnl_frame *f) { return mdnl_xyz_next(((xyz_state *)s)->r, f); }
static mdnl_status xyz_skip(void *s) { return mdnl_xyz_skip(((xyz_state *)s)->r); }
static void xyz_select(void *s, int64_t start, int64_t stop, int64_t step)
{
    mdnl_xyz_select(((xyz_state *)s)->r, start, stop, step);
}
static const char *xyz_name(void *s)
{
    const xyz_state *x = s; /* the first comment, or any frame read so far, had extended-XYZ keys */
    return x->extended || mdnl_xyz_extended(x->r) ? "extxyz" : "xyz";
}

static void xyz_close(void *s)
{
    if (!s)
        return;
    mdnl_xyz_close(((xyz_state *)s)->r);
    free(s);
}

static const mdnl_format format_xyz = {
    .name = "xyz", .extensions = ".xyz", .stream = true, .sniff = sniff_xyz, .open = xyz_open,
    .next = xyz_next, .skip = xyz_skip, .name_of = xyz_name, .close = xyz_close, .select = xyz_select,
};
static const mdnl_format format_extxyz = {
    .name = "extxyz", .extensions = ".extxyz", .stream = true, .open = xyz_open,
    .next = xyz_next, .skip = xyz_skip, .name_of = xyz_name, .close = xyz_close, .select = xyz_select,
};

/* ---- H5MD ---- */

static int sniff_hdf5(const unsigned char *h, size_t n)
{
    return n >= 8 && memcmp(h, "\x89HDF\r\n\x1a\n", 8) == 0 ? MDNL_SNIFF_SURE : MDNL_SNIFF_NO;
}

static mdnl_status h5_open(const mdnl_format_input *in, void **state)
{
    mdnl_h5md_reader *r;
    mdnl_status st = mdnl_h5md_open(in->path, in->opt->group, &r);
    if (st != MDNL_OK)
        return st;
    if (in->opt->coords_checked)
        mdnl_h5md_set_finite_check(r, false);
    mdnl_h5md_set_threads(r, in->opt->threads, in->opt->copy_threads);
    *state = r;
    return MDNL_OK;
}

static mdnl_status h5_next(void *s, mdnl_frame *f) { return mdnl_h5md_next(s, f); }
static mdnl_status h5_skip(void *s) { return mdnl_h5md_skip(s); }
static mdnl_status h5_count(void *s, int64_t *n)
{
    *n = mdnl_h5md_nframes(s);
    return MDNL_OK;
}
static void h5_close(void *s) { mdnl_h5md_close(s); }

static const mdnl_format format_h5md = {
    .name = "h5md", .extensions = ".h5 .h5md .hdf5", .stream = false, .sniff = sniff_hdf5, .open = h5_open,
    .next = h5_next, .skip = h5_skip, .count = h5_count, .close = h5_close,
};

/* ---- XTC, TRR, DCD (io/xtc_reader.c, trr_reader.c, dcd_reader.c) ----
 *
 * Binary and seekable: they open the path themselves (stream = false), so
 * they read regular files only; sniffing them looks at the stream's buffered
 * head and consumes none of a pipe's bytes. */

/* What a format takes from the options beyond units (before its first read). */
static void xtc_configure(mdnl_xtc_reader *r, const mdnl_read_options *o) { mdnl_xtc_set_threads(r, o->threads); }
static void trr_configure(mdnl_trr_reader *r, const mdnl_read_options *o) { mdnl_trr_set_threads(r, o->threads); }
static void dcd_configure(mdnl_dcd_reader *r, const mdnl_read_options *o) { mdnl_dcd_set_threads(r, o->threads); }
/* The frames the caller will read: XTC, TRR and DCD decode only those ahead. */
static void xtc_select(void *s, int64_t start, int64_t stop, int64_t step) { mdnl_xtc_select(s, start, stop, step); }
static void trr_select(void *s, int64_t start, int64_t stop, int64_t step) { mdnl_trr_select(s, start, stop, step); }
static void dcd_select(void *s, int64_t start, int64_t stop, int64_t step) { mdnl_dcd_select(s, start, stop, step); }

#define BINARY_FORMAT(NAME, EXT, NM, SELECT)                                                                     \
    static int NAME##_sniff(const unsigned char *h, size_t n)                                                    \
    {                                                                                                            \
        return mdnl_##NAME##_sniff(h, n) ? MDNL_SNIFF_SURE : MDNL_SNIFF_NO;                                      \
    }                                                                                                            \
    static mdnl_status NAME##_open(const mdnl_format_input *in, void **state)                                    \
    {                                                                                                            \
        mdnl_##NAME##_reader *r = NULL;                                                                          \
        mdnl_status st = mdnl_##NAME##_open(in->path, in->opt->units_native, &r);                                \
        if (st == MDNL_OK)                                                                                       \
            NAME##_configure(r, in->opt);                                                                        \
        *state = r;                                                                                              \
        return st;                                                                                               \
    }                                                                                                            \
    static mdnl_status NAME##_next(void *s, mdnl_frame *f) { return mdnl_##NAME##_next(s, f); }                  \
    static mdnl_status NAME##_skip(void *s) { return mdnl_##NAME##_skip(s); }                                    \
    static mdnl_status NAME##_count(void *s, int64_t *n) { return mdnl_##NAME##_count(s, n); }                   \
    static void NAME##_close(void *s) { mdnl_##NAME##_close(s); }                                                \
    static const mdnl_format format_##NAME = {                                                                   \
        .name = #NAME, .extensions = EXT, .stream = false, .nm = NM, .sniff = NAME##_sniff, .open = NAME##_open, \
        .next = NAME##_next, .skip = NAME##_skip, .count = NAME##_count, .close = NAME##_close,                   \
        .select = SELECT,                                                                                        \
    };
BINARY_FORMAT(xtc, ".xtc", true, xtc_select)
BINARY_FORMAT(trr, ".trr", true, trr_select)
BINARY_FORMAT(dcd, ".dcd", false, dcd_select)

/* ---- the table ---- */

#define MDNL_FORMAT(NAME) extern const mdnl_format mdnl_format_##NAME
MDNL_FORMAT(lammps_dump);
MDNL_FORMAT(lammps_data);
MDNL_FORMAT(gro);
MDNL_FORMAT(pdb);

static const mdnl_format *const formats[] = {
    &format_xyz,          &format_extxyz,       &format_h5md, &mdnl_format_lammps_dump,
    &mdnl_format_lammps_data, &mdnl_format_gro, &mdnl_format_pdb, &format_xtc,
    &format_trr,          &format_dcd,
};
#define NFORMATS (sizeof formats / sizeof *formats)

const char *mdnl_reader_formats(void)
{
    static _Thread_local char list[512]; /* per thread: no race on the first call */
    if (!list[0]) {
        size_t k = 0;
        for (size_t i = 0; i < NFORMATS; ++i)
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", k ? ", " : "", formats[i]->name);
    }
    return list;
}

static const mdnl_format *by_extension(const char *path)
{
    char base[256];
    const char *slash = strrchr(path, '/');
    snprintf(base, sizeof base, "%s", slash ? slash + 1 : path);
    char *dot = strrchr(base, '.');
    if (dot && (!strcasecmp(dot, ".gz") || !strcasecmp(dot, ".xz") || !strcasecmp(dot, ".zst"))) {
        *dot = '\0';
        dot = strrchr(base, '.');
    }
    if (!dot || !dot[1])
        return NULL;
    const size_t len = strlen(dot);
    for (size_t i = 0; i < NFORMATS; ++i)
        for (const char *p = formats[i]->extensions; p && *p;) {
            const char *sp = strchr(p, ' ');
            const size_t l = sp ? (size_t)(sp - p) : strlen(p);
            if (l == len && strncasecmp(p, dot, len) == 0)
                return formats[i];
            p += l + (sp ? 1 : 0);
        }
    return NULL;
}

/* ---- the reader ---- */

struct mdnl_reader {
    const mdnl_format *fmt;
    void *state;
    mdnl_stream *stream; /* NULL for path formats */
    char *path;
    mdnl_read_options opt;
    int64_t nframes; /* cached count, -1 unknown */
    bool reopenable;
    const char *compression;
    char name[48];
};

static mdnl_status pick_format(const char *path, const mdnl_read_options *opt, const unsigned char *head, size_t n,
                               const char *shown, const mdnl_format **out)
{
    if (opt->format) {
        for (size_t i = 0; i < NFORMATS; ++i)
            if (!strcmp(formats[i]->name, opt->format)) {
                *out = formats[i];
                return MDNL_OK;
            }
        return mdnl_error(MDNL_ERR_USAGE, "--format: expected one of %s, got \"%s\"", mdnl_reader_formats(),
                          opt->format);
    }
    const mdnl_format *maybe = NULL;
    for (size_t i = 0; i < NFORMATS; ++i) {
        int s = formats[i]->sniff ? formats[i]->sniff(head, n) : MDNL_SNIFF_NO;
        if (s == MDNL_SNIFF_SURE) {
            *out = formats[i];
            return MDNL_OK;
        }
        if (s == MDNL_SNIFF_MAYBE && !maybe)
            maybe = formats[i];
    }
    const mdnl_format *ext = strcmp(path, "-") ? by_extension(path) : NULL;
    if ((*out = ext ? ext : maybe))
        return MDNL_OK;
    return mdnl_error(MDNL_ERR_INPUT,
                      "%s: expected a trajectory in a format mdnl reads (%s), found %s; name the format with "
                      "--format NAME",
                      shown, mdnl_reader_formats(), n ? "content none of them recognises" : "an empty file");
}

mdnl_status mdnl_reader_open(const char *path, const mdnl_read_options *opt, mdnl_reader **out)
{
    *out = NULL;
    mdnl_read_options none = {0};
    mdnl_reader *r = mdnl_calloc(1, sizeof *r, "reader");
    if (!r)
        return MDNL_ERR_RESOURCE;
    r->opt = opt ? *opt : none;
    r->nframes = -1;
    mdnl_stream *in = NULL;
    mdnl_status st = MDNL_OK;
    if (!(r->path = strdup(path))) {
        st = mdnl_error(MDNL_ERR_RESOURCE, "out of host memory opening %s", path);
        goto fail;
    }
    if ((st = mdnl_stream_open(path, &in)) != MDNL_OK)
        goto fail;
    const unsigned char *head;
    const size_t n = mdnl_stream_head(in, &head);
    const char *shown = mdnl_stream_name(in);
    r->compression = mdnl_stream_compression(in);
    r->reopenable = mdnl_stream_reopenable(in);
    if ((st = pick_format(path, &r->opt, head, n, shown, &r->fmt)) != MDNL_OK)
        goto fail;
    const mdnl_format *f = r->fmt;
    mdnl_format_input fin = {.path = path, .name = shown, .stream = NULL, .opt = &r->opt};
    if (!f->stream) {
        /* Opened again by path: a pipe's head is already consumed. */
        if (r->compression || !r->reopenable) {
            st = mdnl_error(MDNL_ERR_INPUT,
                            "%s: expected %s in a regular file, found %s (%s needs to seek; write it to a file "
                            "first)",
                            shown, f->name,
                            r->compression ? r->compression : strcmp(path, "-") ? "a pipe or device" : "standard input",
                            f->name);
            goto fail;
        }
        mdnl_stream_close(in);
        in = NULL;
    } else {
        fin.stream = in;
    }
    if ((st = f->open(&fin, &r->state)) != MDNL_OK)
        goto fail;
    r->stream = in;
    *out = r;
    return MDNL_OK;
fail:
    mdnl_stream_close(in);
    mdnl_reader_close(r);
    return st;
}

mdnl_status mdnl_reader_next(mdnl_reader *r, mdnl_frame *f) { return r->fmt->next(r->state, f); }

mdnl_status mdnl_reader_skip(mdnl_reader *r) { return r->fmt->skip(r->state); }

void mdnl_reader_select(mdnl_reader *r, int64_t start, int64_t stop, int64_t step)
{
    if (r->fmt->select)
        r->fmt->select(r->state, start, stop, step);
}

mdnl_status mdnl_reader_count(mdnl_reader *r, int64_t *nframes)
{
    if (r->nframes < 0 && r->fmt->count) {
        mdnl_status st = r->fmt->count(r->state, &r->nframes);
        if (st != MDNL_OK)
            return st;
    }
    if (r->nframes < 0) {
        if (!r->reopenable) /* a second open would not see the same bytes */
            return mdnl_error(MDNL_ERR_INPUT,
                              "%s: expected a regular file to count its frames (--frames with negative indices), "
                              "found a pipe or device",
                              strcmp(r->path, "-") ? r->path : "<stdin>");
        mdnl_read_options o = r->opt;
        o.format = r->fmt->name;
        mdnl_reader *scan;
        mdnl_status st = mdnl_reader_open(r->path, &o, &scan);
        if (st != MDNL_OK)
            return st;
        int64_t k = 0;
        while ((st = mdnl_reader_skip(scan)) == MDNL_OK)
            ++k;
        mdnl_reader_close(scan);
        if (st != MDNL_END)
            return st;
        r->nframes = k;
    }
    *nframes = r->nframes;
    return MDNL_OK;
}

const char *mdnl_reader_format(const mdnl_reader *r)
{
    mdnl_reader *w = (mdnl_reader *)r; /* the name is refined lazily; the reader itself is not const */
    const char *base = r->fmt->name_of ? r->fmt->name_of(r->state) : r->fmt->name;
    snprintf(w->name, sizeof w->name, "%s%s%s", base, r->compression ? "+" : "",
             r->compression ? r->compression : "");
    return w->name;
}

const char *mdnl_reader_info(const mdnl_reader *r, const char *key)
{
    if (r->fmt->nm && !strcmp(key, "units")) /* one answer for every nm format, per --units */
        return r->opt.units_native ? "nm (native)" : "angstrom (converted from nm)";
    return r->fmt->info ? r->fmt->info(r->state, key) : NULL;
}

const struct mdnl_xyz_extras *mdnl_reader_extras(const mdnl_reader *r)
{
    return r->fmt->open == xyz_open ? mdnl_xyz_frame_extras(((const xyz_state *)r->state)->r) : NULL;
}

void mdnl_reader_close(mdnl_reader *r)
{
    if (!r)
        return;
    if (r->fmt && r->fmt->close && r->state)
        r->fmt->close(r->state);
    mdnl_stream_close(r->stream);
    free(r->path);
    free(r);
}

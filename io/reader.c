/* reader.c — the format dispatch behind reader.h: by content (HDF5
 * signature, XTC / TRR magic, DCD's first record), else by extension, else
 * XYZ / extended XYZ. Each binary format lives in its own file and registers
 * here with one line of `binary_formats`. */
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
#include <sys/stat.h>

/* A binary trajectory format: its sniffer, extension and entry points. */
typedef struct binary_format {
    const char *name, *ext;
    bool (*sniff)(const unsigned char *head, size_t n);
    mdnl_status (*open)(const char *path, bool native, void **out);
    mdnl_status (*next)(void *r, mdnl_frame *f);
    mdnl_status (*skip)(void *r);
    mdnl_status (*count)(void *r, int64_t *n);
    void (*close)(void *r);
    bool nm; /* the file's unit is nm */
} binary_format;

/* Adapters from each reader's typed entry points to the table's. */
#define BINARY_ADAPTERS(name)                                                                                    \
    static mdnl_status name##_open(const char *path, bool native, void **out)                                   \
    {                                                                                                            \
        mdnl_##name##_reader *r = NULL;                                                                          \
        mdnl_status st = mdnl_##name##_open(path, native, &r);                                                   \
        *out = r;                                                                                                \
        return st;                                                                                               \
    }                                                                                                            \
    static mdnl_status name##_next(void *r, mdnl_frame *f) { return mdnl_##name##_next(r, f); }                 \
    static mdnl_status name##_skip(void *r) { return mdnl_##name##_skip(r); }                                   \
    static mdnl_status name##_count(void *r, int64_t *n) { return mdnl_##name##_count(r, n); }                  \
    static void name##_close(void *r) { mdnl_##name##_close(r); }
#define BINARY(name, ext, nm)                                                                                    \
    {#name, ext, mdnl_##name##_sniff, name##_open, name##_next, name##_skip, name##_count, name##_close, nm}
BINARY_ADAPTERS(xtc)
BINARY_ADAPTERS(trr)
BINARY_ADAPTERS(dcd)

static const binary_format binary_formats[] = {
    BINARY(xtc, ".xtc", true),
    BINARY(trr, ".trr", true),
    BINARY(dcd, ".dcd", false),
};
#define NBINARY (sizeof binary_formats / sizeof *binary_formats)

struct mdnl_reader {
    mdnl_xyz_reader *xyz;
    mdnl_h5md_reader *h5;
    const binary_format *bin;
    void *bin_reader;
    bool native;
};

static bool hdf5_extension(const char *p)
{
    const char *d = strrchr(p, '.');
    return d && (!strcasecmp(d, ".h5") || !strcasecmp(d, ".h5md") || !strcasecmp(d, ".hdf5"));
}

/* The binary format of `path` by its first bytes, else by its extension. */
static const binary_format *binary_format_of(const char *path)
{
    unsigned char head[96];
    size_t n = 0;
    struct stat st;
    /* Only a regular file is peeked at: a pipe's bytes would be eaten. */
    FILE *fp = stat(path, &st) == 0 && S_ISREG(st.st_mode) ? fopen(path, "rb") : NULL;
    if (fp) {
        n = fread(head, 1, sizeof head, fp);
        fclose(fp);
    }
    for (size_t k = 0; k < NBINARY; ++k)
        if (binary_formats[k].sniff(head, n))
            return &binary_formats[k];
    const char *d = strrchr(path, '.');
    for (size_t k = 0; d && k < NBINARY; ++k)
        if (!strcasecmp(d, binary_formats[k].ext))
            return &binary_formats[k];
    return NULL;
}

mdnl_status mdnl_reader_open(const char *path, const mdnl_read_options *opt, mdnl_reader **out)
{
    *out = NULL;
    mdnl_reader *r = mdnl_calloc(1, sizeof *r, "reader");
    if (!r)
        return MDNL_ERR_RESOURCE;
    mdnl_status st;
    r->native = opt && opt->units_native;
    if (hdf5_extension(path) || mdnl_h5md_is_hdf5(path)) {
        st = mdnl_h5md_open(path, opt ? opt->group : NULL, &r->h5);
        if (st == MDNL_OK && opt && opt->coords_checked)
            mdnl_h5md_set_finite_check(r->h5, false);
    } else if ((r->bin = binary_format_of(path))) {
        st = r->bin->open(path, r->native, &r->bin_reader);
    } else {
        st = mdnl_xyz_open(path, &r->xyz);
    }
    if (st != MDNL_OK) {
        free(r);
        return st;
    }
    *out = r;
    return MDNL_OK;
}

mdnl_status mdnl_reader_next(mdnl_reader *r, mdnl_frame *f)
{
    if (r->bin)
        return r->bin->next(r->bin_reader, f);
    return r->h5 ? mdnl_h5md_next(r->h5, f) : mdnl_xyz_next(r->xyz, f);
}

mdnl_status mdnl_reader_skip(mdnl_reader *r)
{
    if (r->bin)
        return r->bin->skip(r->bin_reader);
    return r->h5 ? mdnl_h5md_skip(r->h5) : mdnl_xyz_skip(r->xyz);
}

mdnl_status mdnl_reader_count(mdnl_reader *r, int64_t *nframes)
{
    if (r->bin)
        return r->bin->count(r->bin_reader, nframes);
    if (r->h5) {
        *nframes = mdnl_h5md_nframes(r->h5);
        return MDNL_OK;
    }
    return mdnl_xyz_count(r->xyz, nframes);
}

const char *mdnl_reader_format(const mdnl_reader *r)
{
    return r->bin ? r->bin->name : r->h5 ? "h5md" : mdnl_xyz_extended(r->xyz) ? "extxyz" : "xyz";
}

const char *mdnl_reader_units(const mdnl_reader *r) { return r->bin && r->bin->nm && r->native ? "nm" : "Å"; }

void mdnl_reader_close(mdnl_reader *r)
{
    if (!r)
        return;
    mdnl_xyz_close(r->xyz);
    mdnl_h5md_close(r->h5);
    if (r->bin)
        r->bin->close(r->bin_reader);
    free(r);
}

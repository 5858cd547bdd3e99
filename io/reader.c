/* reader.c — the format dispatch behind reader.h: H5MD by extension or by
 * the HDF5 signature, XYZ / extended XYZ otherwise. */
#include "reader.h"

#include "h5md_reader.h"
#include "xyz_reader.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct mdnl_reader {
    mdnl_xyz_reader *xyz;
    mdnl_h5md_reader *h5;
};

static bool hdf5_extension(const char *p)
{
    const char *d = strrchr(p, '.');
    return d && (!strcasecmp(d, ".h5") || !strcasecmp(d, ".h5md") || !strcasecmp(d, ".hdf5"));
}

mdnl_status mdnl_reader_open(const char *path, const mdnl_read_options *opt, mdnl_reader **out)
{
    *out = NULL;
    mdnl_reader *r = mdnl_calloc(1, sizeof *r, "reader");
    if (!r)
        return MDNL_ERR_RESOURCE;
    mdnl_status st;
    if (hdf5_extension(path) || mdnl_h5md_is_hdf5(path)) {
        st = mdnl_h5md_open(path, opt ? opt->group : NULL, &r->h5);
        if (st == MDNL_OK && opt && opt->coords_checked)
            mdnl_h5md_set_finite_check(r->h5, false);
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
    return r->h5 ? mdnl_h5md_next(r->h5, f) : mdnl_xyz_next(r->xyz, f);
}

mdnl_status mdnl_reader_skip(mdnl_reader *r) { return r->h5 ? mdnl_h5md_skip(r->h5) : mdnl_xyz_skip(r->xyz); }

mdnl_status mdnl_reader_count(mdnl_reader *r, int64_t *nframes)
{
    if (r->h5) {
        *nframes = mdnl_h5md_nframes(r->h5);
        return MDNL_OK;
    }
    return mdnl_xyz_count(r->xyz, nframes);
}

const char *mdnl_reader_format(const mdnl_reader *r)
{
    return r->h5 ? "h5md" : mdnl_xyz_extended(r->xyz) ? "extxyz" : "xyz";
}

void mdnl_reader_close(mdnl_reader *r)
{
    if (!r)
        return;
    mdnl_xyz_close(r->xyz);
    mdnl_h5md_close(r->h5);
    free(r);
}

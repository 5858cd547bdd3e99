/* xdr.c — the binary file helper shared by the XTC, TRR and DCD readers
 * (see xdr.h). */
#define _POSIX_C_SOURCE 200809L
#include "xdr.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>

mdnl_status mdnl_bfile_open(mdnl_bfile *b, const char *path, const char *what)
{
    memset(b, 0, sizeof *b);
    struct stat st;
    if (stat(path, &st) != 0)
        return mdnl_error(MDNL_ERR_INPUT, "%s: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return mdnl_error(MDNL_ERR_INPUT, "%s: is a directory, expected %s", path, what);
    if (!S_ISREG(st.st_mode))
        return mdnl_error(MDNL_ERR_INPUT, "%s: expected %s in a regular file (binary trajectories are not read from "
                                          "pipes)", path, what);
    b->size = (int64_t)st.st_size;
    if (!(b->path = strdup(path)))
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory opening %s", path);
    if (!(b->fp = fopen(path, "rb"))) {
        mdnl_status s = mdnl_error(MDNL_ERR_INPUT, "%s: %s", path, strerror(errno));
        mdnl_bfile_close(b);
        return s;
    }
    return MDNL_OK;
}

void *mdnl_bfile_reader_new(size_t size, const char *path, const char *what, mdnl_status *st)
{
    mdnl_bfile *r = mdnl_calloc(1, size, "binary trajectory reader");
    if (!r) {
        *st = MDNL_ERR_RESOURCE;
        return NULL;
    }
    if ((*st = mdnl_bfile_open(r, path, what)) != MDNL_OK) {
        free(r);
        return NULL;
    }
    return r;
}

void mdnl_bfile_close(mdnl_bfile *b)
{
    if (b->fp)
        fclose(b->fp);
    free(b->path);
    memset(b, 0, sizeof *b);
}

int mdnl_bfile_read(mdnl_bfile *b, void *buf, size_t n)
{
    if (n == 0)
        return 1;
    if (b->pos >= b->size)
        return 0;
    if ((int64_t)n > b->size - b->pos)
        return -1;
    if (fread(buf, 1, n, b->fp) != n) {
        fseeko(b->fp, (off_t)b->pos, SEEK_SET);
        return -1;
    }
    b->pos += (int64_t)n;
    return 1;
}

mdnl_status mdnl_bfile_seek(mdnl_bfile *b, int64_t offset)
{
    if (offset < 0 || offset > b->size)
        return mdnl_error(MDNL_ERR_INPUT, "%s: byte %lld: expected a record within the file's %lld bytes", b->path,
                          (long long)offset, (long long)b->size);
    if (fseeko(b->fp, (off_t)offset, SEEK_SET) != 0)
        return mdnl_error(MDNL_ERR_INPUT, "%s: cannot seek to byte %lld: %s", b->path, (long long)offset,
                          strerror(errno));
    b->pos = offset;
    return MDNL_OK;
}

mdnl_status mdnl_bfile_error(const mdnl_bfile *b, int64_t frame, int64_t at, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mdnl_error(MDNL_ERR_INPUT, "%s: frame %lld, byte %lld: %s", b->path, (long long)frame, (long long)at, msg);
}

mdnl_status mdnl_bfile_count(mdnl_bfile *b, int64_t *frame, mdnl_status (*skip)(void *r), void *r, int64_t *n)
{
    const int64_t pos = b->pos, first = *frame;
    mdnl_status st;
    while ((st = skip(r)) == MDNL_OK)
        ;
    *n = *frame;
    *frame = first;
    mdnl_status back = mdnl_bfile_seek(b, pos);
    return st != MDNL_END ? st : back;
}

void mdnl_frame_species_unknown(mdnl_frame *f)
{
    f->nspecies = 0;
    f->species_tag = 0;
    mdnl_frame_species_id(f, "X", 1);
    if (f->natoms > 0) /* a frame of no atoms may have no arrays */
        memset(f->species, 0, (size_t)f->natoms * sizeof *f->species);
}

/* output_file.c — write-then-rename output files (see output_file.h). */
#define _POSIX_C_SOURCE 200809L
#include "output_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *mdnl_temp_name(const char *path)
{
    static _Thread_local unsigned counter;
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(path) + 64;
    char *tmp = mdnl_malloc(n, "temporary file name");
    if (!tmp)
        return NULL;
    snprintf(tmp, n, "%.*s.%s.tmp-%ld-%u", (int)dirlen, path, base, (long)getpid(), counter++);
    return tmp;
}

mdnl_status mdnl_commit_rename(const char *tmp, const char *path)
{
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: cannot rename the finished output into place: %s", path,
                          strerror(e));
    }
    return MDNL_OK;
}

mdnl_status mdnl_ofile_open(mdnl_ofile *o, const char *path)
{
    memset(o, 0, sizeof *o);
    if (strcmp(path, "-") == 0) {
        o->fp = stdout;
        return MDNL_OK;
    }
    o->path = strdup(path);
    o->tmp = mdnl_temp_name(path);
    if (!o->path || !o->tmp) {
        mdnl_ofile_abort(o);
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory naming %s", path);
    }
    o->fp = fopen(o->tmp, "wb");
    if (!o->fp) {
        int e = errno;
        mdnl_ofile_abort(o);
        return mdnl_error(MDNL_ERR_INPUT, "%s: cannot create the output file: %s", path, strerror(e));
    }
    setvbuf(o->fp, NULL, _IOFBF, 1 << 20);
    return MDNL_OK;
}

mdnl_status mdnl_ofile_commit(mdnl_ofile *o)
{
    if (!o->tmp) { /* stdout */
        if (fflush(stdout) != 0)
            return mdnl_error(MDNL_ERR_RESOURCE, "standard output: write failed: %s", strerror(errno));
        o->fp = NULL;
        return MDNL_OK;
    }
    int bad = ferror(o->fp) != 0;
    int e = errno;
    if (fclose(o->fp) != 0) {
        bad = 1;
        e = errno;
    }
    o->fp = NULL;
    if (bad) {
        mdnl_status st = mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed: %s", o->path, strerror(e));
        mdnl_ofile_abort(o);
        return st;
    }
    mdnl_status st = mdnl_commit_rename(o->tmp, o->path);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return st;
}

void mdnl_ofile_abort(mdnl_ofile *o)
{
    if (o->fp && o->fp != stdout)
        fclose(o->fp);
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
}

/* error.c — the per-thread error record behind mdnl_error() (see mdnl.h). */
#include "mdnl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static _Thread_local char last_message[1024];

mdnl_status mdnl_error(mdnl_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_message, sizeof last_message, fmt, ap);
    va_end(ap);
    return code;
}

const char *mdnl_last_error(void) { return last_message; }

void mdnl_clear_error(void) { last_message[0] = '\0'; }

void *mdnl_malloc(size_t bytes, const char *what)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        mdnl_error(MDNL_ERR_RESOURCE, "out of host memory allocating %zu bytes for %s", bytes, what);
    return p;
}

void *mdnl_calloc(size_t count, size_t size, const char *what)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        mdnl_error(MDNL_ERR_RESOURCE, "out of host memory allocating %zu x %zu bytes for %s", count, size,
                   what);
    return p;
}

void *mdnl_realloc(void *ptr, size_t bytes, const char *what)
{
    void *p = realloc(ptr, bytes ? bytes : 1);
    if (!p)
        mdnl_error(MDNL_ERR_RESOURCE, "out of host memory allocating %zu bytes for %s", bytes, what);
    return p;
}

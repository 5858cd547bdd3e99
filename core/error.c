/* error.c — the per-thread error record behind mdnl_error() (see mdnl.h). */
#include "mdnl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static _Thread_local char last_message[1024];

/* SPEC §7: every error is one line. Messages quote user text (arguments,
 * paths, file content), which may hold a newline or another control
 * character: those are written as \n, \r or \xHH escapes (a tab stays). */
mdnl_status mdnl_error(mdnl_status code, const char *fmt, ...)
{
    char raw[sizeof last_message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    size_t o = 0;
    for (const char *p = raw; *p && o + 5 < sizeof last_message; ++p) {
        unsigned char c = (unsigned char)*p;
        if ((c >= 0x20 && c != 0x7f) || c == '\t') {
            last_message[o++] = (char)c;
            continue;
        }
        last_message[o++] = '\\';
        if (c == '\n' || c == '\r') {
            last_message[o++] = c == '\n' ? 'n' : 'r';
        } else {
            static const char hex[] = "0123456789abcdef";
            last_message[o++] = 'x';
            last_message[o++] = hex[c >> 4];
            last_message[o++] = hex[c & 15];
        }
    }
    last_message[o] = '\0';
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

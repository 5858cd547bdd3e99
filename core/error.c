/* error.c — the per-thread error record behind mdnl_error() (see mdnl.h),
 * the hand-off of an OpenMP worker's message to its team's thread 0, and
 * the one escaping function for text shown to the user. */
#include "mdnl.h"

#include <omp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MESSAGE_MAX 1024

static _Thread_local char last_message[MESSAGE_MAX];
/* The sequence number of this thread's message, or of the newest worker
 * message it has taken or cleared: a worker message newer than it wins. */
static _Thread_local unsigned long long last_seq;

static atomic_ullong seq_counter;
static atomic_ullong worker_seq; /* of worker_message; 0: none */
static char worker_message[MESSAGE_MAX];
static pthread_mutex_t worker_mu = PTHREAD_MUTEX_INITIALIZER;

/* The length of the UTF-8 sequence at s and its code point, or 0 when the
 * bytes are not one well-formed sequence (overlong, surrogate, beyond
 * U+10FFFF, truncated). */
static int utf8_decode(const unsigned char *s, unsigned *cp)
{
    int n;
    unsigned c, min;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2, c = s[0] & 0x1fu, min = 0x80;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3, c = s[0] & 0x0fu, min = 0x800;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4, c = s[0] & 0x07u, min = 0x10000;
    else
        return 0;
    for (int k = 1; k < n; ++k) {
        if ((s[k] & 0xc0) != 0x80)
            return 0;
        c = c << 6 | (s[k] & 0x3fu);
    }
    if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        return 0;
    *cp = c;
    return n;
}

size_t mdnl_escape_char(const char **s, char out[MDNL_ESCAPE_MAX + 1], unsigned flags)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)*s;
    const bool json = flags & MDNL_ESCAPE_JSON;
    size_t n = 0;
    if (*p < 0x80) {
        const unsigned char c = *p;
        *s += 1;
        if (c == '\n' || c == '\r' || (c == '\t' && (flags & (MDNL_ESCAPE_TAB | MDNL_ESCAPE_JSON)))) {
            out[n++] = '\\';
            out[n++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
            n = (size_t)snprintf(out, MDNL_ESCAPE_MAX + 1, json ? "\\u%04x" : "\\x%02x", c);
        } else {
            if (json && (c == '"' || c == '\\'))
                out[n++] = '\\';
            out[n++] = (char)c;
        }
        out[n] = '\0';
        return n;
    }
    unsigned cp = 0;
    const int len = utf8_decode(p, &cp);
    if (len == 0) { /* not UTF-8: the byte, visibly */
        *s += 1;
        if (json)
            return (size_t)snprintf(out, MDNL_ESCAPE_MAX + 1, "\\ufffd");
        out[0] = '\\', out[1] = 'x', out[2] = hex[*p >> 4], out[3] = hex[*p & 15], out[4] = '\0';
        return 4;
    }
    *s += len;
    if (cp <= 0x9f || cp == 0x2028 || cp == 0x2029) /* C1 controls, line and paragraph separators */
        return (size_t)snprintf(out, MDNL_ESCAPE_MAX + 1, "\\u%04x", cp);
    memcpy(out, p, (size_t)len);
    out[len] = '\0';
    return (size_t)len;
}

/* SPEC §7: every error is one line. Messages quote user text (arguments,
 * paths, file content), which may hold control characters or bytes that are
 * not UTF-8: they are escaped (mdnl_escape_char; a tab stays). */
mdnl_status mdnl_error(mdnl_status code, const char *fmt, ...)
{
    char raw[MESSAGE_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof raw, fmt, ap);
    va_end(ap);
    size_t o = 0;
    for (const char *p = raw; *p;) {
        char e[MDNL_ESCAPE_MAX + 1];
        size_t n = mdnl_escape_char(&p, e, MDNL_ESCAPE_TEXT);
        if (o + n >= sizeof last_message)
            break;
        memcpy(last_message + o, e, n);
        o += n;
    }
    last_message[o] = '\0';
    last_seq = atomic_fetch_add(&seq_counter, 1) + 1;
    if (omp_get_level() > 0 && omp_get_thread_num() != 0) {
        /* a worker of a team: its status reaches the caller only through the team's thread 0 */
        pthread_mutex_lock(&worker_mu);
        memcpy(worker_message, last_message, o + 1);
        atomic_store(&worker_seq, last_seq);
        pthread_mutex_unlock(&worker_mu);
    }
    return code;
}

const char *mdnl_last_error(void)
{
    if (atomic_load(&worker_seq) > last_seq) {
        pthread_mutex_lock(&worker_mu);
        unsigned long long s = atomic_load(&worker_seq);
        if (s > last_seq) {
            memcpy(last_message, worker_message, sizeof last_message);
            last_seq = s;
        }
        pthread_mutex_unlock(&worker_mu);
    }
    return last_message;
}

void mdnl_clear_error(void)
{
    last_message[0] = '\0';
    last_seq = atomic_load(&seq_counter);
}

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

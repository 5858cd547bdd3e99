/* stream.h — the byte stream every text reader reads from: a plain file,
 * standard input ("-"), or a gzip, xz or zstd file (recognised by its magic
 * bytes, never by its name), decompressed as it is read, never to disk.
 *
 * The stream keeps the first MDNL_STREAM_HEAD bytes of the (decompressed)
 * content it has read at open, so that io/reader.c can sniff the format of a
 * pipe and the reader chosen still reads the stream from its first byte.
 * Lines are served from one buffer (4 MiB, grown only for a longer line, up
 * to 256 MiB), so a text reader holds one frame, not the file.
 *
 * Errors are MDNL_ERR_INPUT with "NAME: ..." (a missing file, a directory, a
 * corrupt or truncated compressed stream, a read error); NAME is the path, or
 * "<stdin>" for "-". */
#ifndef MDNL_STREAM_H
#define MDNL_STREAM_H

#include "mdnl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

MDNL_BEGIN_C

#define MDNL_STREAM_HEAD 4096

typedef struct mdnl_stream mdnl_stream;

/* Opens `path` ("-": standard input) and reads its first bytes. The caller
 * closes the stream. */
mdnl_status mdnl_stream_open(const char *path, mdnl_stream **out);
void mdnl_stream_close(mdnl_stream *s); /* NULL is a no-op */

/* The first bytes of the content (at most MDNL_STREAM_HEAD; fewer only when
 * the content is shorter). Valid until the stream is closed. */
size_t mdnl_stream_head(const mdnl_stream *s, const unsigned char **bytes);

/* Returns 1 with [*b, *e) the next line (without "\n" or "\r\n"), 0 at the end
 * of the content, -1 on an error (recorded). The line stays valid until the
 * next call. */
int mdnl_stream_line(mdnl_stream *s, const char **b, const char **e);

/* The number of the line last returned (1-based; 0 before the first). */
int64_t mdnl_stream_lineno(const mdnl_stream *s);

/* The name for messages: the path, or "<stdin>". */
const char *mdnl_stream_name(const mdnl_stream *s);

/* "gzip", "xz", "zstd", or NULL for uncompressed content. */
const char *mdnl_stream_compression(const mdnl_stream *s);

/* The size in bytes of an uncompressed regular file, -1 otherwise (a pipe,
 * or compressed content, whose size is not known before it is read). Readers
 * use it to reject counts the file cannot hold before allocating. */
int64_t mdnl_stream_size(const mdnl_stream *s);

/* Whether opening the same path again yields the same bytes (a regular file,
 * compressed or not), so that frames can be counted by a second pass. */
bool mdnl_stream_reopenable(const mdnl_stream *s);

/* ---- for the reader pool (io/text_pool.h) ----
 *
 * A memory stream serves the lines of bytes held elsewhere (a frame's text
 * cut out of a file by the pool's scanner) with the same line reader, so a
 * frame is parsed from memory by the same code as from a file. */

/* The longest line a stream serves; a longer one is an input error. */
#define MDNL_STREAM_MAX_LINE (1 << 28)

/* Records (and returns) the error of a line longer than MDNL_STREAM_MAX_LINE
 * that starts on line `line` of the stream called `name`. */
mdnl_status mdnl_stream_long_line(const char *name, int64_t line);

/* Reads up to cap bytes of the content that no line has served yet (what
 * the line reader buffered first); 0 at the end, -1 on an error (recorded). */
ptrdiff_t mdnl_stream_read(mdnl_stream *s, void *dst, size_t cap);

/* A stream named `name` (for messages) that serves nothing until
 * mdnl_stream_set_memory. */
mdnl_status mdnl_stream_open_memory(const char *name, mdnl_stream **out);

/* Serves the lines of [data, data + len) (borrowed until the next call or
 * close), numbered from line_before + 1. When end_status is MDNL_OK the
 * range ends as a file ends (an unterminated last line is a line); else
 * only newline-terminated lines are served, and then the error end_status
 * with end_message, as the file's stream reported it. */
void mdnl_stream_set_memory(mdnl_stream *s, const char *data, size_t len, int64_t line_before,
                            mdnl_status end_status, const char *end_message);

/* ---- helpers the text readers share ---- */

/* ' ' and \t \n \v \f \r. */
static inline int mdnl_is_space(char c) { return c == ' ' || (unsigned)(c - '\t') < 5; }

/* The next whitespace-separated token of [*p, e): 1 with [*ts, *te) and *p
 * behind it, 0 when only blanks remain. */
static inline int mdnl_token(const char **p, const char *e, const char **ts, const char **te)
{
    const char *q = *p;
    while (q < e && mdnl_is_space(*q))
        ++q;
    if (q >= e) {
        *p = q;
        return 0;
    }
    *ts = q;
    while (q < e && !mdnl_is_space(*q))
        ++q;
    *te = q;
    *p = q;
    return 1;
}

/* Whether [s, e) is an unsigned integer, blanks around it allowed (the
 * sniffs: an XYZ or GRO count line). */
static inline int mdnl_text_is_integer(const unsigned char *s, const unsigned char *e)
{
    while (s < e && (*s == ' ' || *s == '\t' || *s == '\r'))
        ++s;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
        --e;
    if (s < e && *s == '+')
        ++s;
    if (s == e)
        return 0;
    for (; s < e; ++s)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

/* Quotes at most 40 bytes of [s, e) for a message into buf, bytes outside
 * printable ASCII as \xHH (a binary file read as text must not put raw
 * bytes on the terminal). Returns buf. */
const char *mdnl_show_text(const char *s, const char *e, char *buf, size_t cap);

MDNL_END_C

#endif

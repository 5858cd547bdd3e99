/* stream.c — plain, standard-input and gzip / xz / zstd byte streams with a
 * line reader on top (see stream.h).
 *
 * Plain content is read with read(2) straight into the line buffer in
 * chunks of megabytes, as the XYZ reader always did with fread, so the
 * stream adds no copy on the fast path. Compressed content goes through a
 * 256 KiB input buffer and the library's streaming decoder (zlib's inflate
 * with gzip headers and concatenated members, liblzma's stream decoder
 * with LZMA_CONCATENATED and a memory limit, zstd's DStream with its default
 * window limit), so nothing but the buffers is held whatever the size. */
#define _POSIX_C_SOURCE 200809L
#include "stream.h"

#include <errno.h>
#include <fcntl.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#define READ_CHUNK (1 << 22)
#define MAX_LINE MDNL_STREAM_MAX_LINE
#define RAW_CHUNK (1 << 18)
#define XZ_MEMLIMIT (UINT64_C(1) << 30) /* xz -9 needs 65 MiB; a header asking for more than 1 GiB is hostile */

enum compression { NONE, GZIP, XZ, ZSTD };

struct mdnl_stream {
    int fd;
    bool own_fd, regular;
    char *name;
    enum compression comp;
    int64_t size;
    /* raw bytes: the magic read at open (plain) or the decoder's input */
    unsigned char *raw;
    size_t raw_len, raw_pos;
    bool raw_eof;
    z_stream z;
    bool z_init, z_member_done;
    lzma_stream lz;
    bool lz_init;
    ZSTD_DStream *zs;
    size_t zs_hint; /* the last ZSTD_decompressStream result: 0 at the end of a frame */
    bool content_eof;
    /* the first bytes of the content, served again to the first reads */
    unsigned char head[MDNL_STREAM_HEAD];
    size_t head_len, head_pos;
    /* lines: unread data is buf[pos .. len) */
    char *buf;
    size_t cap, len, pos;
    bool buf_eof;
    int64_t line;
    /* a memory stream (mdnl_stream_set_memory): buf is borrowed */
    bool mem;
    mdnl_status mem_status;
    const char *mem_message;
};

/* ---- raw bytes ---- */

static ptrdiff_t raw_read(mdnl_stream *s, void *dst, size_t n)
{
    for (;;) {
        ssize_t got = read(s->fd, dst, n);
        if (got >= 0)
            return got;
        if (errno != EINTR) {
            mdnl_error(MDNL_ERR_INPUT, "%s: read error: %s", s->name, strerror(errno));
            return -1;
        }
    }
}

/* Refills the raw buffer when it is empty; -1 on a read error. */
static int raw_fill(mdnl_stream *s)
{
    if (s->raw_pos < s->raw_len || s->raw_eof)
        return 0;
    ptrdiff_t got = raw_read(s, s->raw, RAW_CHUNK);
    if (got < 0)
        return -1;
    s->raw_pos = 0;
    s->raw_len = (size_t)got;
    s->raw_eof = got == 0;
    return 0;
}

/* ---- decoded content ---- */

static ptrdiff_t truncated(mdnl_stream *s, const char *what)
{
    mdnl_error(MDNL_ERR_INPUT, "%s: expected more %s data, found the end of the file (a truncated file)", s->name,
               what);
    return -1;
}

static ptrdiff_t corrupt(mdnl_stream *s, const char *what, const char *why)
{
    mdnl_error(MDNL_ERR_INPUT, "%s: expected valid %s data, found corrupt data (%s)", s->name, what, why);
    return -1;
}

static ptrdiff_t read_gzip(mdnl_stream *s, unsigned char *dst, size_t cap)
{
    s->z.next_out = dst;
    s->z.avail_out = (uInt)(cap > UINT32_MAX ? UINT32_MAX : cap);
    while (s->z.avail_out > 0) {
        if (s->z.avail_in == 0) {
            if (raw_fill(s) < 0)
                return -1;
            s->z.next_in = s->raw + s->raw_pos;
            s->z.avail_in = (uInt)(s->raw_len - s->raw_pos);
            s->raw_pos = s->raw_len;
            if (s->z.avail_in == 0) {
                if (!s->z_member_done)
                    return truncated(s, "gzip");
                s->content_eof = true;
                break;
            }
        }
        if (s->z_member_done) { /* another member follows (pigz, bgzip, cat a.gz b.gz) */
            if (inflateReset(&s->z) != Z_OK)
                return corrupt(s, "gzip", "reset failed");
            s->z_member_done = false;
        }
        int ret = inflate(&s->z, Z_NO_FLUSH);
        if (ret == Z_STREAM_END)
            s->z_member_done = true;
        else if (ret == Z_MEM_ERROR)
            return mdnl_error(MDNL_ERR_RESOURCE, "%s: out of memory decompressing gzip data", s->name), -1;
        else if (ret != Z_OK && ret != Z_BUF_ERROR)
            return corrupt(s, "gzip", s->z.msg ? s->z.msg : "inflate failed");
    }
    return (ptrdiff_t)(cap - s->z.avail_out);
}

static ptrdiff_t read_xz(mdnl_stream *s, unsigned char *dst, size_t cap)
{
    s->lz.next_out = dst;
    s->lz.avail_out = cap;
    while (s->lz.avail_out > 0) {
        if (s->lz.avail_in == 0 && !s->raw_eof) {
            if (raw_fill(s) < 0)
                return -1;
            s->lz.next_in = s->raw + s->raw_pos;
            s->lz.avail_in = s->raw_len - s->raw_pos;
            s->raw_pos = s->raw_len;
        }
        lzma_ret ret = lzma_code(&s->lz, s->raw_eof ? LZMA_FINISH : LZMA_RUN);
        if (ret == LZMA_STREAM_END) {
            s->content_eof = true;
            break;
        }
        if (ret == LZMA_BUF_ERROR && s->raw_eof)
            return truncated(s, "xz");
        if (ret == LZMA_MEM_ERROR)
            return mdnl_error(MDNL_ERR_RESOURCE, "%s: out of memory decompressing xz data", s->name), -1;
        if (ret == LZMA_MEMLIMIT_ERROR)
            return corrupt(s, "xz", "it asks for more than 1 GiB of memory to decompress");
        if (ret == LZMA_FORMAT_ERROR || ret == LZMA_DATA_ERROR || ret == LZMA_OPTIONS_ERROR)
            return corrupt(s, "xz", ret == LZMA_OPTIONS_ERROR ? "unsupported options" : "bad header or data");
        if (ret != LZMA_OK && ret != LZMA_BUF_ERROR)
            return corrupt(s, "xz", "decoder error");
    }
    return (ptrdiff_t)(cap - s->lz.avail_out);
}

static ptrdiff_t read_zstd(mdnl_stream *s, unsigned char *dst, size_t cap)
{
    ZSTD_outBuffer out = {dst, cap, 0};
    while (out.pos < out.size) {
        if (raw_fill(s) < 0)
            return -1;
        if (s->raw_pos == s->raw_len) {
            if (s->zs_hint != 0)
                return truncated(s, "zstd");
            s->content_eof = true;
            break;
        }
        ZSTD_inBuffer in = {s->raw, s->raw_len, s->raw_pos};
        size_t ret = ZSTD_decompressStream(s->zs, &out, &in);
        s->raw_pos = in.pos;
        if (ZSTD_isError(ret))
            return corrupt(s, "zstd", ZSTD_getErrorName(ret));
        s->zs_hint = ret;
    }
    return (ptrdiff_t)out.pos;
}

/* Reads up to cap bytes of content behind the head; 0 at the end. */
static ptrdiff_t content_read(mdnl_stream *s, unsigned char *dst, size_t cap)
{
    if (s->content_eof || cap == 0)
        return 0;
    switch (s->comp) {
    case GZIP:
        return read_gzip(s, dst, cap);
    case XZ:
        return read_xz(s, dst, cap);
    case ZSTD:
        return read_zstd(s, dst, cap);
    case NONE:
        break;
    }
    if (s->raw_pos < s->raw_len) { /* the magic bytes read at open */
        size_t n = s->raw_len - s->raw_pos < cap ? s->raw_len - s->raw_pos : cap;
        memcpy(dst, s->raw + s->raw_pos, n);
        s->raw_pos += n;
        return (ptrdiff_t)n;
    }
    ptrdiff_t got = raw_read(s, dst, cap);
    if (got == 0)
        s->content_eof = true;
    return got;
}

/* The head first, then the content behind it. */
static ptrdiff_t stream_read(mdnl_stream *s, unsigned char *dst, size_t cap)
{
    if (s->head_pos < s->head_len) {
        size_t n = s->head_len - s->head_pos < cap ? s->head_len - s->head_pos : cap;
        memcpy(dst, s->head + s->head_pos, n);
        s->head_pos += n;
        return (ptrdiff_t)n;
    }
    return content_read(s, dst, cap);
}

/* ---- open / close ---- */

static mdnl_status start_decoder(mdnl_stream *s)
{
    const unsigned char *m = s->raw;
    const size_t n = s->raw_len;
    if (n >= 2 && m[0] == 0x1f && m[1] == 0x8b) {
        s->comp = GZIP;
        if (inflateInit2(&s->z, 15 + 16) != Z_OK)
            return mdnl_error(MDNL_ERR_RESOURCE, "%s: out of memory starting the gzip decoder", s->name);
        s->z_init = true;
        s->z.next_in = s->raw;
        s->z.avail_in = (uInt)n;
        s->raw_pos = s->raw_len;
    } else if (n >= 6 && memcmp(m, "\xfd" "7zXZ\0", 6) == 0) {
        s->comp = XZ;
        lzma_stream init = LZMA_STREAM_INIT;
        s->lz = init;
        if (lzma_stream_decoder(&s->lz, XZ_MEMLIMIT, LZMA_CONCATENATED) != LZMA_OK)
            return mdnl_error(MDNL_ERR_RESOURCE, "%s: out of memory starting the xz decoder", s->name);
        s->lz_init = true;
        s->lz.next_in = s->raw;
        s->lz.avail_in = n;
        s->raw_pos = s->raw_len;
    } else if (n >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) {
        s->comp = ZSTD;
        if (!(s->zs = ZSTD_createDStream()))
            return mdnl_error(MDNL_ERR_RESOURCE, "%s: out of memory starting the zstd decoder", s->name);
        ZSTD_initDStream(s->zs);
        s->zs_hint = 1;
    }
    return MDNL_OK;
}

mdnl_status mdnl_stream_open(const char *path, mdnl_stream **out)
{
    *out = NULL;
    const bool std_in = strcmp(path, "-") == 0;
    mdnl_stream *s = mdnl_calloc(1, sizeof *s, "byte stream");
    if (!s)
        return MDNL_ERR_RESOURCE;
    s->fd = -1;
    s->size = -1;
    s->name = strdup(std_in ? "<stdin>" : path);
    s->raw = mdnl_malloc(RAW_CHUNK, "read buffer");
    s->cap = READ_CHUNK;
    s->buf = mdnl_malloc(s->cap, "line buffer");
    mdnl_status st = MDNL_OK;
    if (!s->name || !s->raw || !s->buf) {
        st = mdnl_error(MDNL_ERR_RESOURCE, "out of host memory opening %s", path);
        goto fail;
    }
    if (std_in) {
        s->fd = STDIN_FILENO;
    } else if ((s->fd = open(path, O_RDONLY)) < 0) {
        st = mdnl_error(MDNL_ERR_INPUT, "%s: %s", path, strerror(errno));
        goto fail;
    } else {
        s->own_fd = true;
    }
    struct stat sb;
    if (fstat(s->fd, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) {
            st = mdnl_error(MDNL_ERR_INPUT, "%s: is a directory, expected a trajectory file", s->name);
            goto fail;
        }
        s->regular = S_ISREG(sb.st_mode);
    }
    /* The magic: up to 6 bytes, however the pipe delivers them. */
    while (s->raw_len < 6 && !s->raw_eof) {
        ptrdiff_t got = raw_read(s, s->raw + s->raw_len, 6 - s->raw_len);
        if (got < 0) {
            st = MDNL_ERR_INPUT;
            goto fail;
        }
        s->raw_len += (size_t)got;
        s->raw_eof = got == 0;
    }
    if ((st = start_decoder(s)) != MDNL_OK)
        goto fail;
    if (s->comp == NONE && s->regular)
        s->size = (int64_t)sb.st_size;
    while (s->head_len < MDNL_STREAM_HEAD) {
        ptrdiff_t got = content_read(s, s->head + s->head_len, MDNL_STREAM_HEAD - s->head_len);
        if (got < 0) {
            st = MDNL_ERR_INPUT;
            goto fail;
        }
        if (got == 0)
            break;
        s->head_len += (size_t)got;
    }
    *out = s;
    return MDNL_OK;
fail:
    mdnl_stream_close(s);
    return st;
}

void mdnl_stream_close(mdnl_stream *s)
{
    if (!s)
        return;
    if (s->z_init)
        inflateEnd(&s->z);
    if (s->lz_init)
        lzma_end(&s->lz);
    ZSTD_freeDStream(s->zs);
    if (s->own_fd)
        close(s->fd);
    free(s->raw);
    if (!s->mem)
        free(s->buf);
    free(s->name);
    free(s);
}

/* ---- lines ---- */

mdnl_status mdnl_stream_long_line(const char *name, int64_t line)
{
    return mdnl_error(MDNL_ERR_INPUT, "%s:%lld: expected a line shorter than %d bytes", name, (long long)line,
                      MAX_LINE);
}

/* The line from start to nl (or to the end of the buffer: the last line
 * without its newline), a trailing \r dropped; the stream moves past it. */
static int take_line(mdnl_stream *s, char *start, char *nl, const char **b, const char **e)
{
    char *end = nl ? nl : s->buf + s->len;
    s->pos = nl ? (size_t)(nl - s->buf) + 1 : s->len;
    if (end > start && end[-1] == '\r')
        --end;
    *b = start;
    *e = end;
    s->line++;
    return 1;
}

/* A memory stream's next line: complete lines, then its end. */
static int memory_line(mdnl_stream *s, const char **b, const char **e)
{
    char *start = s->buf + s->pos;
    char *nl = s->pos < s->len ? memchr(start, '\n', s->len - s->pos) : NULL;
    if (!nl && s->mem_status != MDNL_OK) {
        mdnl_error(s->mem_status, "%s", s->mem_message ? s->mem_message : "");
        return -1;
    }
    if (!nl && s->pos >= s->len)
        return 0;
    return take_line(s, start, nl, b, e);
}

int mdnl_stream_line(mdnl_stream *s, const char **b, const char **e)
{
    if (s->mem)
        return memory_line(s, b, e);
    for (;;) {
        char *start = s->buf + s->pos;
        char *nl = s->pos < s->len ? memchr(start, '\n', s->len - s->pos) : NULL;
        if (nl || (s->buf_eof && s->pos < s->len))
            return take_line(s, start, nl, b, e);
        if (s->buf_eof)
            return 0;
        /* keep the partial line, refill behind it */
        if (s->pos > 0) {
            memmove(s->buf, s->buf + s->pos, s->len - s->pos);
            s->len -= s->pos;
            s->pos = 0;
        }
        if (s->cap - s->len < READ_CHUNK / 2) {
            if (s->cap >= MAX_LINE) {
                mdnl_stream_long_line(s->name, s->line + 1);
                return -1;
            }
            char *nb = mdnl_realloc(s->buf, s->cap * 2, "line buffer");
            if (!nb)
                return -1;
            s->buf = nb;
            s->cap *= 2;
        }
        ptrdiff_t got = stream_read(s, (unsigned char *)s->buf + s->len, s->cap - s->len);
        if (got < 0)
            return -1;
        s->len += (size_t)got;
        s->buf_eof = got == 0;
    }
}

int64_t mdnl_stream_lineno(const mdnl_stream *s) { return s->line; }

ptrdiff_t mdnl_stream_read(mdnl_stream *s, void *dst, size_t cap)
{
    if (s->pos < s->len) { /* what the line reader buffered and no line served */
        const size_t n = s->len - s->pos < cap ? s->len - s->pos : cap;
        memcpy(dst, s->buf + s->pos, n);
        s->pos += n;
        return (ptrdiff_t)n;
    }
    if (s->mem || s->buf_eof)
        return 0;
    return stream_read(s, dst, cap);
}

mdnl_status mdnl_stream_open_memory(const char *name, mdnl_stream **out)
{
    *out = NULL;
    mdnl_stream *s = mdnl_calloc(1, sizeof *s, "byte stream");
    if (!s)
        return MDNL_ERR_RESOURCE;
    s->fd = -1;
    s->size = -1;
    s->mem = true;
    s->buf_eof = true;
    if (!(s->name = strdup(name))) {
        free(s);
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory opening %s", name);
    }
    *out = s;
    return MDNL_OK;
}

void mdnl_stream_set_memory(mdnl_stream *s, const char *data, size_t len, int64_t line_before,
                            mdnl_status end_status, const char *end_message)
{
    s->buf = (char *)data; /* never written: a memory stream only serves lines */
    s->len = len;
    s->cap = len;
    s->pos = 0;
    s->line = line_before;
    s->mem_status = end_status;
    s->mem_message = end_message;
}

size_t mdnl_stream_head(const mdnl_stream *s, const unsigned char **bytes)
{
    *bytes = s->head;
    return s->head_len;
}

const char *mdnl_stream_name(const mdnl_stream *s) { return s->name; }

const char *mdnl_stream_compression(const mdnl_stream *s)
{
    return s->comp == GZIP ? "gzip" : s->comp == XZ ? "xz" : s->comp == ZSTD ? "zstd" : NULL;
}

int64_t mdnl_stream_size(const mdnl_stream *s) { return s->size; }

bool mdnl_stream_reopenable(const mdnl_stream *s) { return s->regular && s->own_fd; }

const char *mdnl_show_text(const char *s, const char *e, char *buf, size_t cap)
{
    const size_t n = (size_t)(e - s);
    char txt[40 * 4 + 1];
    size_t k = 0;
    for (size_t i = 0; i < n && i < 40; ++i) {
        const unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f)
            txt[k++] = (char)c;
        else
            k += (size_t)snprintf(txt + k, sizeof txt - k, "\\x%02x", c);
    }
    txt[k] = '\0';
    snprintf(buf, cap, "\"%s%s\"", txt, n > 40 ? "..." : "");
    return buf;
}

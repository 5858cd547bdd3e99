/* xyz_reader.c — streaming XYZ / extended-XYZ reader (see xyz_reader.h).
 *
 * Lines are served from one read buffer (refilled with fread, grown only for
 * a line longer than the buffer), so nothing but the current frame is held.
 * The atom count is checked against the file size before anything is
 * allocated, and arrays grow as atom lines are actually read, so a count
 * line of 10^15 is an error, not an allocation. */
#define _POSIX_C_SOURCE 200809L
#include "xyz_reader.h"

#include "stream.h"
#include "text_pool.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct columns {
    int species; /* column of the species */
    int pos;     /* first of the three position columns */
    int ncols;   /* columns required on an atom line */
} columns;

struct mdnl_xyz_reader {
    mdnl_stream *in;
    bool own_stream;  /* opened by mdnl_xyz_open, closed with the reader */
    const char *path; /* the stream's name, for messages */
    char *reopen;     /* the path to open again for a count */
    int64_t line;  /* number of the line last returned (1-based) */
    int64_t frame; /* index of the next frame */
    int64_t file_size;
    int64_t nframes; /* cached count, -1 unknown */
    int extended;    /* a comment so far had extended-XYZ keys (Lattice, pbc, Properties) */
    /* extras (mdnl_xyz_keep_extras): Properties entries, comment keys and
     * per-atom columns beyond species and pos, of the last frame read */
    bool keep;
    mdnl_xyz_extras ex;
    size_t props_len, props_cap, info_len, info_cap, text_len, text_cap;
    int64_t off_cap;
    /* the reader pool (mdnl_xyz_set_threads): frames come from it */
    mdnl_text_pool *pool;
    struct mdnl_xyz_reader *last; /* the pool's parser of the last frame delivered */
    /* a split frame's header, parsed by the pool's scanner (xyz_header) */
    columns cols;
    int64_t hdr_n, hdr_count_line;
};

/* Appends [s, s + n) to a growable string; -1 (recorded) when out of memory. */
static int sb_add(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 256;
        while (*len + n + 1 > c)
            c *= 2;
        char *b = mdnl_realloc(*buf, c, "extended XYZ extras");
        if (!b)
            return -1;
        *buf = b, *cap = c;
    }
    memcpy(*buf + *len, s, n);
    *len += n;
    (*buf)[*len] = '\0';
    return 0;
}

int mdnl_xyz_extended(const mdnl_xyz_reader *r)
{
    return r->extended;
}

/* ---- numbers ----
 *
 * A decimal number is read as a mantissa m (up to 19 digits, exact in a
 * uint64) and a power of ten. Three ways to a correctly rounded double:
 *  1. m <= 2^53 and |e| <= 22: m and 10^|e| are exact doubles, so one IEEE
 *     multiplication or division rounds once (Clinger's fast path). This is
 *     every "%.10f" coordinate below 10^5.
 *  2. x87 long double (64-bit significand), |e| <= 27: m and 10^|e| are exact,
 *     one operation gives r = RN64(x). Rounding r to double gives RN53(x)
 *     unless r lies exactly halfway between two doubles (its 11 bits below the
 *     double's last bit are 10000000000): any double midpoint is a long double,
 *     and rounding is monotonic, so x and r lie on the same side of it.
 *     This covers "%.17g" values. In the rare halfway case we go to 3.
 *  3. strtod, for more than 19 significant digits, large exponents, inf/nan
 *     and hexadecimal forms.
 * The result always equals strtod's (tests/test_xyz.c checks millions). */

static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#if defined(__x86_64__) && LDBL_MANT_DIG == 64
#define HAVE_X87_LONG_DOUBLE 1
static const long double pow10_ld[28] = {1e0L,  1e1L,  1e2L,  1e3L,  1e4L,  1e5L,  1e6L,  1e7L,  1e8L,  1e9L,
                                         1e10L, 1e11L, 1e12L, 1e13L, 1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L,
                                         1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L, 1e26L, 1e27L};
#endif

/* m * 10^e10 correctly rounded, m != 0 exact; returns 0 when neither fast
 * path applies (the caller uses strtod). */
static inline int mantissa_to_double(uint64_t m, int e10, int neg, double *out)
{
    double v;
    if (m <= (1ull << 53) && e10 >= -22 && e10 <= 22) {
        v = (double)m;
        v = e10 < 0 ? v / pow10_exact[-e10] : v * pow10_exact[e10];
    } else {
#ifdef HAVE_X87_LONG_DOUBLE
        if (e10 < -27 || e10 > 27)
            return 0;
        long double r = (long double)m;
        r = e10 < 0 ? r / pow10_ld[-e10] : r * pow10_ld[e10];
        uint64_t sig;
        memcpy(&sig, &r, sizeof sig); /* the explicit 64-bit significand */
        if ((sig & 0x7ff) == 0x400)
            return 0; /* r is a double midpoint: x may lie on either side */
        v = (double)r;
#else
        return 0;
#endif
    }
    *out = neg ? -v : v;
    return 1;
}

/* The hot path: a number of at most 19 digits starting at p, ended by
 * anything that is not part of it. Returns the end, or NULL when the text
 * is not such a number or needs the careful path (the caller then takes the
 * whole token to mdnl_parse_double). */
static inline const char *scan_number(const char *p, const char *e, double *out)
{
    int neg = 0;
    if (p < e && (*p == '-' || *p == '+'))
        neg = *p++ == '-';
    const char *d0 = p;
    uint64_t m = 0;
    while (p < e && (unsigned)(*p - '0') < 10)
        m = m * 10 + (uint64_t)(*p++ - '0');
    int nd = (int)(p - d0), e10 = 0;
    if (p < e && *p == '.') {
        const char *f0 = ++p;
        while (p < e && (unsigned)(*p - '0') < 10)
            m = m * 10 + (uint64_t)(*p++ - '0');
        nd += (int)(p - f0);
        e10 = -(int)(p - f0);
    }
    if (nd == 0 || nd > 19) /* not a number, or m may have wrapped */
        return NULL;
    if (p < e && (*p == 'e' || *p == 'E')) {
        ++p;
        int eneg = 0, ev = 0;
        if (p < e && (*p == '+' || *p == '-'))
            eneg = *p++ == '-';
        const char *x0 = p;
        while (p < e && (unsigned)(*p - '0') < 10 && p - x0 < 6)
            ev = ev * 10 + (*p++ - '0');
        if (p == x0 || (p < e && (unsigned)(*p - '0') < 10))
            return NULL;
        e10 += eneg ? -ev : ev;
    }
    if (m == 0) {
        *out = neg ? -0.0 : 0.0;
        return p;
    }
    return mantissa_to_double(m, e10, neg, out) ? p : NULL;
}

static int parse_slow(const char *s, const char *e, double *out)
{
    char tmp[512];
    size_t n = (size_t)(e - s);
    if (n == 0 || n >= sizeof tmp)
        return 0;
    memcpy(tmp, s, n);
    tmp[n] = '\0';
    char *end;
    errno = 0;
    double v = strtod(tmp, &end);
    if (end != tmp + n)
        return 0;
    *out = v;
    return 1;
}

int mdnl_parse_double(const char *s, const char *e, double *out)
{
    const char *q = scan_number(s, e, out);
    if (q == e)
        return 1;
    /* The careful path: more than 19 digits (leading zeros do not count),
     * exponents out of the fast range, or not a plain decimal at all. */
    const char *p = s;
    int neg = 0;
    if (p < e && (*p == '+' || *p == '-'))
        neg = *p++ == '-';
    uint64_t m = 0;
    int nd = 0, exp10 = 0, digits = 0, inexact = 0;
    for (; p < e && (unsigned)(*p - '0') < 10; ++p, ++digits) {
        if (nd < 19) {
            m = m * 10 + (uint64_t)(*p - '0');
            nd += m != 0;
        } else {
            exp10++;
            inexact = 1;
        }
    }
    if (p < e && *p == '.') {
        for (++p; p < e && (unsigned)(*p - '0') < 10; ++p, ++digits) {
            if (nd < 19) {
                m = m * 10 + (uint64_t)(*p - '0');
                nd += m != 0;
                exp10--;
            } else {
                inexact = 1;
            }
        }
    }
    if (!digits)
        return parse_slow(s, e, out); /* inf, nan, or not a number */
    if (p < e && (*p == 'e' || *p == 'E')) {
        const char *q2 = p + 1;
        int eneg = 0, ev = 0, edigits = 0;
        if (q2 < e && (*q2 == '+' || *q2 == '-'))
            eneg = *q2++ == '-';
        for (; q2 < e && (unsigned)(*q2 - '0') < 10; ++q2, ++edigits)
            if (ev < 100000)
                ev = ev * 10 + (*q2 - '0');
        if (!edigits)
            return 0;
        exp10 += eneg ? -ev : ev;
        p = q2;
    }
    if (p != e)
        return 0;
    if (m == 0) {
        *out = neg ? -0.0 : 0.0;
        return 1;
    }
    if (!inexact && mantissa_to_double(m, exp10, neg, out))
        return 1;
    return parse_slow(s, e, out);
}

/* ---- lines ---- */

/* Returns 1 with [*s, *e) the next line (without "\n" or "\r\n"), 0 at the
 * end of the file, -1 on a read error (recorded). */
static inline int next_line(mdnl_xyz_reader *r, const char **s, const char **e)
{
    int got = mdnl_stream_line(r->in, s, e);
    r->line = mdnl_stream_lineno(r->in);
    return got;
}

/* ' ' and \t \n \v \f \r (9 to 13). */
static inline int is_space(char c) { return c == ' ' || (unsigned)(c - '\t') < 5; }

static int is_blank(const char *s, const char *e)
{
    for (; s < e; ++s)
        if (!is_space(*s))
            return 0;
    return 1;
}

/* Quotes at most 40 characters of a token for an error message. */
static const char *show(const char *s, const char *e, char *buf, size_t cap) { return mdnl_show_text(s, e, buf, cap); }

/* ---- open / close ---- */

mdnl_status mdnl_xyz_open(const char *path, mdnl_xyz_reader **out)
{
    *out = NULL;
    mdnl_stream *in;
    mdnl_status st = mdnl_stream_open(path, &in);
    if (st != MDNL_OK)
        return st;
    if ((st = mdnl_xyz_open_stream(in, path, out)) != MDNL_OK) {
        mdnl_stream_close(in);
        return st;
    }
    (*out)->own_stream = true;
    return MDNL_OK;
}

mdnl_status mdnl_xyz_open_stream(mdnl_stream *in, const char *path, mdnl_xyz_reader **out)
{
    *out = NULL;
    mdnl_xyz_reader *r = mdnl_calloc(1, sizeof *r, "XYZ reader");
    if (!r)
        return MDNL_ERR_RESOURCE;
    r->in = in;
    r->path = mdnl_stream_name(in);
    r->reopen = strdup(path);
    r->file_size = mdnl_stream_size(in);
    r->nframes = -1;
    if (!r->reopen) {
        mdnl_xyz_close(r);
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory opening %s", path);
    }
    *out = r;
    return MDNL_OK;
}

void mdnl_xyz_close(mdnl_xyz_reader *r)
{
    if (!r)
        return;
    mdnl_text_pool_close(r->pool);
    if (r->own_stream)
        mdnl_stream_close(r->in);
    free(r->ex.properties);
    free(r->ex.info);
    free(r->ex.text);
    free(r->ex.offset);
    free(r->reopen);
    free(r);
}

/* ---- frame header ---- */

/* Reads the count line (skipping blank lines). Returns MDNL_END at a clean
 * end of file. */
static mdnl_status read_count(mdnl_xyz_reader *r, int64_t *count)
{
    const char *s, *e;
    int got;
    while ((got = next_line(r, &s, &e)) == 1 && is_blank(s, e))
        ;
    if (got < 0)
        return mdnl_error(MDNL_ERR_INPUT, "%s", mdnl_last_error());
    if (got == 0) {
        if (r->frame == 0)
            return mdnl_error(MDNL_ERR_INPUT, "%s:%lld: expected an atom count, found an empty file", r->path,
                              (long long)r->line + 1);
        return MDNL_END;
    }
    while (s < e && is_space(*s))
        ++s;
    while (e > s && is_space(e[-1]))
        --e;
    char tmp[200];
    const char *p = s;
    if (p < e && *p == '+')
        ++p;
    int64_t n = 0;
    int digits = 0, overflow = 0;
    for (; p < e && (unsigned)(*p - '0') < 10; ++p, ++digits) {
        if (n > (INT64_MAX - 9) / 10)
            overflow = 1;
        else
            n = n * 10 + (*p - '0');
    }
    if (!digits || p != e) {
        if (s < e && *s == '-' && digits == 0 && e - s > 1 && (unsigned)(s[1] - '0') < 10)
            return mdnl_error(MDNL_ERR_INPUT, "%s:%lld: frame %lld: expected a non-negative atom count, found %s",
                              r->path, (long long)r->line, (long long)r->frame, show(s, e, tmp, sizeof tmp));
        return mdnl_error(MDNL_ERR_INPUT, "%s:%lld: frame %lld: expected an atom count (an integer), found %s", r->path,
                          (long long)r->line, (long long)r->frame, show(s, e, tmp, sizeof tmp));
    }
    /* The shortest atom line ("C 0 0 0\n") has 8 bytes. */
    if (overflow || (r->file_size >= 0 && n > r->file_size / 8 + 1))
        return mdnl_error(MDNL_ERR_INPUT,
                          "%s:%lld: frame %lld: expected an atom count the file can hold (at most %lld for its %lld "
                          "bytes), found %s",
                          r->path, (long long)r->line, (long long)r->frame, (long long)(r->file_size / 8 + 1),
                          (long long)r->file_size, show(s, e, tmp, sizeof tmp));
    *count = n;
    return MDNL_OK;
}

static int key_is(const char *k, size_t klen, const char *name)
{
    return strlen(name) == klen && strncasecmp(k, name, klen) == 0;
}

/* Splits a value into whitespace/comma separated tokens; returns count. */
static int split_tokens(const char *s, const char *e, const char *tok_s[], const char *tok_e[], int max)
{
    int n = 0;
    while (s < e) {
        while (s < e && (is_space(*s) || *s == ',' || *s == '[' || *s == ']'))
            ++s;
        if (s >= e)
            break;
        const char *t = s;
        while (s < e && !is_space(*s) && *s != ',' && *s != '[' && *s != ']')
            ++s;
        if (n < max) {
            tok_s[n] = t;
            tok_e[n] = s;
        }
        ++n;
    }
    return n;
}

#define HDR_ERR(...) mdnl_error(MDNL_ERR_INPUT, __VA_ARGS__)

static mdnl_status parse_properties(mdnl_xyz_reader *r, const char *s, const char *e, columns *c)
{
    const char *const s0 = s;
    int col = 0, have_species = 0, have_pos = 0, z_col = -1;
    char tmp[200];
    while (s < e) {
        const char *f[3], *fe[3];
        for (int k = 0; k < 3; ++k) {
            f[k] = s;
            while (s < e && *s != ':')
                ++s;
            fe[k] = s;
            if (k < 2) {
                if (s >= e)
                    return HDR_ERR("%s:%lld: frame %lld: expected name:type:count triplets in Properties, found %s",
                                   r->path, (long long)r->line, (long long)r->frame, show(f[0], e, tmp, sizeof tmp));
                ++s;
            }
        }
        if (s < e)
            ++s; /* the ':' before the next triplet */
        int count = 0;
        for (const char *p = f[2]; p < fe[2]; ++p) {
            if ((unsigned)(*p - '0') >= 10 || count > 1000)
                return HDR_ERR("%s:%lld: frame %lld: expected a column count in Properties, found %s", r->path,
                               (long long)r->line, (long long)r->frame, show(f[2], fe[2], tmp, sizeof tmp));
            count = count * 10 + (*p - '0');
        }
        if (count < 1)
            return HDR_ERR("%s:%lld: frame %lld: expected a positive column count in Properties, found %s", r->path,
                           (long long)r->line, (long long)r->frame, show(f[2], fe[2], tmp, sizeof tmp));
        size_t nl = (size_t)(fe[0] - f[0]);
        if ((key_is(f[0], nl, "species") || key_is(f[0], nl, "element") || key_is(f[0], nl, "symbols")) && count == 1) {
            c->species = col;
            have_species = 1;
        } else if (key_is(f[0], nl, "Z") && count == 1) {
            z_col = col; /* atomic numbers, used as species text when there is no species column */
        } else if ((key_is(f[0], nl, "pos") || key_is(f[0], nl, "positions")) && count == 3) {
            c->pos = col;
            have_pos = 1;
        }
        col += count;
    }
    if (!have_species && z_col >= 0) {
        c->species = z_col;
        have_species = 1;
    }
    if (!have_species || !have_pos)
        return HDR_ERR("%s:%lld: frame %lld: expected Properties with species:S:1 and pos:R:3, found %s", r->path,
                       (long long)r->line, (long long)r->frame, have_pos ? "no species" : "no pos");
    c->ncols = col;
    if (r->keep) { /* the triplets again (checked above): those that are neither species nor pos */
        r->props_len = 0;
        int at = 0;
        for (const char *q = s0; q < e;) {
            const char *t0 = q;
            int colons = 0;
            while (q < e && colons < 3)
                colons += *q++ == ':';
            const char *t1 = colons == 3 ? q - 1 : q;
            const char *cnt = t1;
            while (cnt > t0 && cnt[-1] != ':')
                --cnt;
            const int n = atoi(cnt);
            if (at != c->species && at != c->pos &&
                ((r->props_len && sb_add(&r->ex.properties, &r->props_len, &r->props_cap, ":", 1)) ||
                 sb_add(&r->ex.properties, &r->props_len, &r->props_cap, t0, (size_t)(t1 - t0))))
                return MDNL_ERR_RESOURCE;
            at += n;
        }
    }
    return MDNL_OK;
}

/* Parses the comment line: extended-XYZ keys when present. */
static mdnl_status parse_comment(mdnl_xyz_reader *r, const char *s, const char *e, mdnl_frame *f, columns *c)
{
    char tmp[200];
    int have_lattice = 0, have_pbc = 0;
    bool pbc[3] = {false, false, false};
    c->species = 0, c->pos = 1, c->ncols = 4;
    while (s < e) {
        while (s < e && is_space(*s))
            ++s;
        if (s >= e)
            break;
        const char *k = s;
        while (s < e && !is_space(*s) && *s != '=')
            ++s;
        size_t klen = (size_t)(s - k);
        const char *v = s, *ve = s;
        const int has_value = s < e && *s == '=';
        if (has_value) {
            ++s;
            if (s < e && (*s == '"' || *s == '\'')) {
                char q = *s++;
                v = s;
                while (s < e && *s != q)
                    ++s;
                if (s >= e)
                    return HDR_ERR("%s:%lld: frame %lld: expected a closing quote for %.*s, found the end of the line",
                                   r->path, (long long)r->line, (long long)r->frame, (int)klen, k);
                ve = s++;
            } else if (s < e && (*s == '[' || *s == '{')) {
                char close = *s == '[' ? ']' : '}';
                v = s;
                while (s < e && *s != close)
                    ++s;
                ve = s < e ? ++s : s;
            } else {
                v = s;
                while (s < e && !is_space(*s))
                    ++s;
                ve = s;
            }
        }
        /* A word without "=" is plain comment text ("relaxed at step 100"),
         * even when it reads like a key, except LAMMPS dump xyz's
         * "Timestep: N", which is the step. */
        if (!has_value) {
            if (key_is(k, klen, "Timestep:") && !f->has_step) {
                while (s < e && is_space(*s))
                    ++s;
                const char *n0 = s;
                while (s < e && !is_space(*s))
                    ++s;
                double x;
                if (s > n0 && mdnl_parse_double(n0, s, &x) && x == floor(x) && fabs(x) <= 9e18) {
                    f->step = (int64_t)x;
                    f->has_step = true;
                }
            }
            continue;
        }
        const char *ts[10], *te[10];
        if (key_is(k, klen, "Lattice") || key_is(k, klen, "pbc") || key_is(k, klen, "Properties"))
            r->extended = 1;
        if (key_is(k, klen, "Lattice")) {
            int n = split_tokens(v, ve, ts, te, 10);
            if (n != 9)
                return HDR_ERR("%s:%lld: frame %lld: expected 9 numbers in Lattice, found %d", r->path,
                               (long long)r->line, (long long)r->frame, n);
            for (int q = 0; q < 9; ++q) {
                double x;
                if (!mdnl_parse_double(ts[q], te[q], &x) || !isfinite(x))
                    return HDR_ERR("%s:%lld: frame %lld: expected a finite number in Lattice, found %s", r->path,
                                   (long long)r->line, (long long)r->frame, show(ts[q], te[q], tmp, sizeof tmp));
                f->box.h[q / 3][q % 3] = x;
            }
            have_lattice = 1;
        } else if (key_is(k, klen, "pbc")) {
            int n = split_tokens(v, ve, ts, te, 10);
            if (n != 3)
                return HDR_ERR("%s:%lld: frame %lld: expected 3 values (T or F) in pbc, found %d", r->path,
                               (long long)r->line, (long long)r->frame, n);
            for (int q = 0; q < 3; ++q) {
                size_t l = (size_t)(te[q] - ts[q]);
                if (key_is(ts[q], l, "T") || key_is(ts[q], l, "True") || key_is(ts[q], l, "1"))
                    pbc[q] = true;
                else if (key_is(ts[q], l, "F") || key_is(ts[q], l, "False") || key_is(ts[q], l, "0"))
                    pbc[q] = false;
                else
                    return HDR_ERR("%s:%lld: frame %lld: expected T or F in pbc, found %s", r->path,
                                   (long long)r->line, (long long)r->frame, show(ts[q], te[q], tmp, sizeof tmp));
            }
            have_pbc = 1;
        } else if (key_is(k, klen, "Properties")) {
            mdnl_status st = parse_properties(r, v, ve, c);
            if (st != MDNL_OK)
                return st;
        } else if (key_is(k, klen, "Time")) {
            double x;
            if (!mdnl_parse_double(v, ve, &x) || !isfinite(x))
                return HDR_ERR("%s:%lld: frame %lld: expected a number for Time, found %s", r->path,
                               (long long)r->line, (long long)r->frame, show(v, ve, tmp, sizeof tmp));
            f->time = x;
            f->has_time = true;
        } else if (key_is(k, klen, "Step")) {
            double x;
            if (!mdnl_parse_double(v, ve, &x) || !isfinite(x) || x != floor(x) || fabs(x) > 9e18)
                return HDR_ERR("%s:%lld: frame %lld: expected an integer for Step, found %s", r->path,
                               (long long)r->line, (long long)r->frame, show(v, ve, tmp, sizeof tmp));
            f->step = (int64_t)x;
            f->has_step = true;
        } else if (r->keep) { /* another key: kept as written */
            if ((r->info_len && sb_add(&r->ex.info, &r->info_len, &r->info_cap, " ", 1)) ||
                sb_add(&r->ex.info, &r->info_len, &r->info_cap, k, (size_t)(s - k)))
                return MDNL_ERR_RESOURCE;
        }
    }
    if (have_pbc && !have_lattice && (pbc[0] || pbc[1] || pbc[2]))
        return HDR_ERR("%s:%lld: frame %lld: expected a Lattice with a periodic pbc, found pbc without Lattice",
                       r->path, (long long)r->line, (long long)r->frame);
    if (have_lattice) {
        f->box.has_lattice = true;
        for (int q = 0; q < 3; ++q)
            f->box.pbc[q] = have_pbc ? pbc[q] : true;
        double norms = 1;
        for (int q = 0; q < 3; ++q)
            norms *= sqrt(f->box.h[q][0] * f->box.h[q][0] + f->box.h[q][1] * f->box.h[q][1] +
                          f->box.h[q][2] * f->box.h[q][2]);
        if (!(mdnl_box_volume(&f->box) > 1e-12 * norms))
            return HDR_ERR("%s:%lld: frame %lld: expected a Lattice of non-zero volume, found volume %g", r->path,
                           (long long)r->line, (long long)r->frame, mdnl_box_volume(&f->box));
    }
    return MDNL_OK;
}

/* ---- frames ---- */

/* A frame's count and comment lines: resets f (no atoms yet) and fills its
 * cell, step and time; *n is the count, *count_line its line, *c the
 * columns. MDNL_END at a clean end of the file. */
static mdnl_status frame_header(mdnl_xyz_reader *r, mdnl_frame *f, int64_t *n, int64_t *count_line, columns *c)
{
    mdnl_status st = read_count(r, n);
    if (st != MDNL_OK)
        return st;
    *count_line = r->line;
    f->natoms = 0;
    f->nspecies = 0;
    f->index = r->frame;
    f->step = r->frame;
    f->time = 0;
    f->has_step = f->has_time = false;
    memset(&f->box, 0, sizeof f->box);
    const char *s, *e;
    int got = next_line(r, &s, &e);
    if (got < 0)
        return MDNL_ERR_INPUT;
    if (got == 0)
        return HDR_ERR("%s:%lld: frame %lld: expected a comment line after the atom count, found the end of the file",
                       r->path, (long long)r->line + 1, (long long)r->frame);
    if (r->keep) {
        r->props_len = r->info_len = r->text_len = 0;
        if (r->ex.properties)
            r->ex.properties[0] = '\0';
        if (r->ex.info)
            r->ex.info[0] = '\0';
        if (r->ex.text)
            r->ex.text[0] = '\0';
        r->ex.natoms = 0;
    }
    if ((st = parse_comment(r, s, e, f, c)) != MDNL_OK)
        return st;
    f->species_tag = 0; /* species[] is rewritten below */
    return MDNL_OK;
}

/* Parses the lines of atoms [i0, i1) of a frame of n atoms (count on line
 * count_line) into f->pos and f->species. Species ids come from tab's
 * table: tab == f reads a whole frame (arrays grow as lines are read, and
 * f->natoms follows), else a piece of a frame split across the reader pool
 * (f holds room for n atoms already; tab is the piece's own table). */
static mdnl_status parse_atoms(mdnl_xyz_reader *r, const columns *cp, mdnl_frame *f, mdnl_frame *tab, int64_t i0,
                               int64_t i1, int64_t n, int64_t count_line)
{
    const columns c = *cp;
    const bool whole = tab == f;
    /* Columns past the last one we use are not read (nor checked), unless
     * extras are kept. */
    const bool extras = whole && r->keep && r->props_len > 0;
    const int last_col = extras ? c.ncols - 1 : (c.species > c.pos + 2 ? c.species : c.pos + 2);
    int32_t last_id = -1;
    size_t last_len = 0;
    char tmp[200];
    const char *s, *e;
    mdnl_status st;
    for (int64_t i = i0; i < i1; ++i) {
        int got = next_line(r, &s, &e);
        if (got < 0)
            return MDNL_ERR_INPUT;
        if (got == 0)
            return HDR_ERR("%s:%lld: frame %lld: expected %lld atom lines after the count on line %lld, found %lld "
                           "(the file ends)",
                           r->path, (long long)r->line + 1, (long long)r->frame, (long long)n, (long long)count_line,
                           (long long)i);
        if (i >= f->capacity && (st = mdnl_frame_reserve(f, i + 1)) != MDNL_OK)
            return st;
        if (extras && i + 2 > r->off_cap) {
            const int64_t cap = r->off_cap ? 2 * r->off_cap : 1024;
            int64_t *o = mdnl_realloc(r->ex.offset, (size_t)cap * sizeof *o, "extended XYZ extras");
            if (!o)
                return MDNL_ERR_RESOURCE;
            r->ex.offset = o, r->off_cap = cap;
            r->ex.offset[0] = 0;
        }
        const char *p = s;
        int col = 0;
        double xyz[3];
        for (; col <= last_col; ++col) {
            while (p < e && is_space(*p))
                ++p;
            if (p >= e)
                break;
            const char *t = p;
            if (col >= c.pos && col < c.pos + 3) {
                /* The hot path: parse in place, then check the delimiter. */
                double x;
                const char *q = scan_number(p, e, &x);
                if (q && (q == e || is_space(*q))) {
                    xyz[col - c.pos] = x;
                    p = q;
                    continue;
                }
                while (p < e && !is_space(*p))
                    ++p;
                if (!mdnl_parse_double(t, p, &x))
                    return HDR_ERR("%s:%lld: frame %lld: expected a number for coordinate %c of atom %lld, found %s",
                                   r->path, (long long)r->line, (long long)r->frame, "xyz"[col - c.pos], (long long)i,
                                   show(t, p, tmp, sizeof tmp));
                if (!isfinite(x))
                    return HDR_ERR("%s:%lld: frame %lld: expected a finite coordinate %c for atom %lld, found %s",
                                   r->path, (long long)r->line, (long long)r->frame, "xyz"[col - c.pos], (long long)i,
                                   show(t, p, tmp, sizeof tmp));
                xyz[col - c.pos] = x;
                continue;
            }
            while (p < e && !is_space(*p))
                ++p;
            if (col == c.species) {
                size_t len = (size_t)(p - t);
                if (last_id >= 0 && len == last_len && memcmp(tab->symbols[last_id], t, len) == 0) {
                    f->species[i] = last_id;
                } else {
                    int32_t id = mdnl_frame_species_id(tab, t, len);
                    if (id < 0) {
                        char msg[256];
                        snprintf(msg, sizeof msg, "%s", mdnl_last_error());
                        return HDR_ERR("%s:%lld: frame %lld: atom %lld: %s", r->path, (long long)r->line,
                                       (long long)r->frame, (long long)i, msg);
                    }
                    f->species[i] = last_id = id;
                    last_len = len;
                }
            } else if (extras) {
                const bool first = r->text_len == (size_t)r->ex.offset[i];
                if ((!first && sb_add(&r->ex.text, &r->text_len, &r->text_cap, " ", 1)) ||
                    sb_add(&r->ex.text, &r->text_len, &r->text_cap, t, (size_t)(p - t)))
                    return MDNL_ERR_RESOURCE;
            }
        }
        if (col <= last_col)
            return HDR_ERR("%s:%lld: frame %lld: expected %d columns (species and x y z) for atom %lld, found %d: %s",
                           r->path, (long long)r->line, (long long)r->frame, last_col + 1, (long long)i, col,
                           show(s, e, tmp, sizeof tmp));
        f->pos[i][0] = xyz[0], f->pos[i][1] = xyz[1], f->pos[i][2] = xyz[2];
        if (whole)
            f->natoms = i + 1;
        if (extras) {
            r->ex.offset[i + 1] = (int64_t)r->text_len;
            r->ex.natoms = i + 1;
        }
    }
    return MDNL_OK;
}

mdnl_status mdnl_xyz_next(mdnl_xyz_reader *r, mdnl_frame *f)
{
    if (r->pool)
        return mdnl_text_pool_next(r->pool, f);
    int64_t n, count_line;
    columns c;
    mdnl_status st = frame_header(r, f, &n, &count_line, &c);
    if (st != MDNL_OK)
        return st;
    if ((st = mdnl_frame_reserve(f, n < (1 << 16) ? n : (1 << 16))) != MDNL_OK ||
        (st = parse_atoms(r, &c, f, f, 0, n, n, count_line)) != MDNL_OK)
        return st;
    r->frame++;
    return MDNL_OK;
}

mdnl_status mdnl_xyz_skip(mdnl_xyz_reader *r)
{
    if (r->pool)
        return mdnl_text_pool_skip(r->pool);
    int64_t n;
    mdnl_status st = read_count(r, &n);
    if (st != MDNL_OK)
        return st;
    const int64_t count_line = r->line;
    const char *s, *e;
    for (int64_t i = -1; i < n; ++i) {
        int got = next_line(r, &s, &e);
        if (got < 0)
            return MDNL_ERR_INPUT;
        if (got == 0)
            return HDR_ERR("%s:%lld: frame %lld: expected %lld atom lines after the count on line %lld, found %lld "
                           "(the file ends)",
                           r->path, (long long)r->line + 1, (long long)r->frame, (long long)n, (long long)count_line,
                           (long long)(i < 0 ? 0 : i));
    }
    r->frame++;
    return MDNL_OK;
}

mdnl_status mdnl_xyz_count(mdnl_xyz_reader *r, int64_t *n)
{
    if (r->nframes < 0 && !mdnl_stream_reopenable(r->in)) /* a second open would not see the same bytes */
        return mdnl_error(MDNL_ERR_INPUT,
                          "%s: expected a regular file to count its frames (--frames with negative indices, info), "
                          "found a pipe or device",
                          r->path);
    if (r->nframes < 0) {
        mdnl_xyz_reader *scan;
        mdnl_status st = mdnl_xyz_open(r->reopen, &scan);
        if (st != MDNL_OK)
            return st;
        while ((st = mdnl_xyz_skip(scan)) == MDNL_OK)
            ;
        int64_t frames = scan->frame;
        mdnl_xyz_close(scan);
        if (st != MDNL_END)
            return st;
        r->nframes = frames;
    }
    *n = r->nframes;
    return MDNL_OK;
}

void mdnl_xyz_keep_extras(mdnl_xyz_reader *r, bool on) { r->keep = on; }

const mdnl_xyz_extras *mdnl_xyz_frame_extras(const mdnl_xyz_reader *r)
{
    if (r->pool)
        return r->last ? mdnl_xyz_frame_extras(r->last) : NULL;
    return r->keep && (r->props_len || r->info_len) ? &r->ex : NULL;
}

/* ---- the reader pool (io/text_pool.h) ----
 *
 * Every pool state is an XYZ reader over a memory stream: the scanner's
 * reads count lines (read_count), a slot's parses whole frames with
 * mdnl_xyz_next, a piece's parses atom lines (parse_atoms), so the pool
 * parses with this file's code, and its errors are this file's. */

static void *xyz_state_new(void *ctx)
{
    const mdnl_xyz_reader *main = ctx;
    mdnl_stream *in;
    if (mdnl_stream_open_memory(main->path, &in) != MDNL_OK)
        return NULL;
    mdnl_xyz_reader *r;
    if (mdnl_xyz_open_stream(in, main->reopen, &r) != MDNL_OK) {
        mdnl_stream_close(in);
        return NULL;
    }
    r->own_stream = true;
    r->file_size = main->file_size; /* the limit of read_count is the file's */
    r->keep = main->keep;
    return r;
}

static void xyz_state_free(void *state) { mdnl_xyz_close(state); }

static void xyz_on(mdnl_xyz_reader *r, const mdnl_text_frame *t)
{
    mdnl_stream_set_memory(r->in, t->text, t->len, t->line, t->end_status, t->end_message);
    r->frame = t->index;
}

static int xyz_head(void *state, const mdnl_text_frame *t, bool eof, int64_t *nlines, int64_t *natoms,
                    size_t *drop_bytes, int64_t *drop_lines)
{
    mdnl_xyz_reader *r = state;
    const char *q = t->text, *end = t->text + t->len, *count_end = NULL;
    int64_t blank = 0;
    for (const char *nl; (nl = memchr(q, '\n', (size_t)(end - q))); q = nl + 1, ++blank)
        if (!is_blank(q, nl)) {
            count_end = nl + 1;
            break;
        }
    *drop_bytes = 0, *drop_lines = 0;
    if (!count_end && !eof) { /* blank lines so far: dropped */
        *drop_bytes = (size_t)(q - t->text), *drop_lines = blank;
        return MDNL_TEXT_MORE;
    }
    mdnl_text_frame c = *t;
    c.len = count_end ? (size_t)(count_end - t->text) : t->len;
    xyz_on(r, &c);
    int64_t n;
    mdnl_status st = read_count(r, &n);
    if (st != MDNL_OK)
        return st;
    *natoms = n;
    *nlines = (r->line - t->line) + 1 + n; /* blank lines, the count, the comment, the atoms */
    return MDNL_OK;
}

static mdnl_status xyz_parse(void *state, const mdnl_text_frame *t, mdnl_frame *f)
{
    xyz_on(state, t);
    return mdnl_xyz_next(state, f);
}

static mdnl_status xyz_skip_text(void *state, const mdnl_text_frame *t)
{
    xyz_on(state, t);
    return mdnl_xyz_skip(state);
}

static mdnl_status xyz_header(void *state, const mdnl_text_frame *t, int64_t natoms, mdnl_frame *f)
{
    mdnl_xyz_reader *r = state;
    xyz_on(r, t);
    mdnl_status st = frame_header(r, f, &r->hdr_n, &r->hdr_count_line, &r->cols);
    if (st == MDNL_OK && r->hdr_n != natoms)
        st = mdnl_error(MDNL_ERR_INTERNAL, "reader pool: a count of %lld atoms, %lld expected", (long long)r->hdr_n,
                        (long long)natoms);
    return st == MDNL_OK ? mdnl_frame_reserve(f, natoms) : st;
}

static mdnl_status xyz_piece(void *state, void *header_state, const mdnl_text_frame *t, int64_t i0, int64_t i1,
                             mdnl_frame *f, mdnl_frame *tab)
{
    mdnl_xyz_reader *r = state;
    const mdnl_xyz_reader *h = header_state;
    xyz_on(r, t);
    r->keep = false;
    return parse_atoms(r, &h->cols, f, tab, i0, i1, h->hdr_n, h->hdr_count_line);
}

static void xyz_delivered(void *ctx, void *state)
{
    mdnl_xyz_reader *main = ctx, *r = state;
    main->extended |= r->extended;
    main->last = r;
}

static const mdnl_text_ops xyz_pool_ops = {
    .state_new = xyz_state_new,
    .state_free = xyz_state_free,
    .head = xyz_head,
    .parse = xyz_parse,
    .skip = xyz_skip_text,
    .header = xyz_header,
    .piece = xyz_piece,
    .delivered = xyz_delivered,
};

mdnl_status mdnl_xyz_set_threads(mdnl_xyz_reader *r, int threads)
{
    if (threads <= 1 || r->pool)
        return MDNL_OK;
    return mdnl_text_pool_open(&xyz_pool_ops, r, r->in, threads, &r->pool);
}

void mdnl_xyz_select(mdnl_xyz_reader *r, int64_t start, int64_t stop, int64_t step)
{
    if (r->pool)
        mdnl_text_pool_select(r->pool, start, stop, step);
}

/* xtc_writer.c — XTC output (see xtc_writer.h; the layout is described in
 * xtc_reader.c). */
#include "xtc_writer.h"

#include "xdr.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>

#define XTC_MAGIC 1995
#define FIRSTIDX 9 /* smallidx: unused without runs, but must be a valid index */

/* A big-endian bit sink into a growing byte buffer. */
typedef struct sink {
    uint8_t *buf;
    size_t cap, len; /* whole bytes written */
    uint64_t acc;    /* pending bits, the low `n` */
    int n;
} sink;

static bool put_bits(sink *s, int k, uint32_t v)
{
    s->acc = s->acc << k | (v & (uint32_t)((1ull << k) - 1));
    s->n += k;
    while (s->n >= 8) {
        if (s->len + 8 > s->cap) {
            size_t cap = s->cap ? 2 * s->cap : 1 << 16;
            uint8_t *p = mdnl_realloc(s->buf, cap, "XTC compressed frame");
            if (!p)
                return false;
            s->buf = p;
            s->cap = cap;
        }
        s->n -= 8;
        s->buf[s->len++] = (uint8_t)(s->acc >> s->n);
    }
    return true;
}

static int bit_length(unsigned __int128 n)
{
    int b = 0;
    for (; n; n >>= 1)
        ++b;
    return b;
}

static mdnl_status write_failed(void) { return mdnl_error(MDNL_ERR_RESOURCE, "write failed: %s", strerror(errno)); }

mdnl_status mdnl_xtc_write(FILE *fp, const mdnl_frame *f, bool native, float precision)
{
    const double to_nm = native ? 1.0 : 0.1;
    if (f->natoms > INT_MAX / 3)
        return mdnl_error(MDNL_ERR_INPUT, "frame %lld: %lld atoms do not fit in an XTC file", (long long)f->index,
                          (long long)f->natoms);
    if (f->step < INT_MIN || f->step > INT_MAX)
        return mdnl_error(MDNL_ERR_INPUT, "frame %lld: step %lld does not fit in an XTC file's int",
                          (long long)f->index, (long long)f->step);
    const int32_t n = (int32_t)f->natoms;
    uint8_t head[56 + 36];
    mdnl_put_be32(head, XTC_MAGIC);
    mdnl_put_be32(head + 4, (uint32_t)n);
    mdnl_put_be32(head + 8, (uint32_t)(int32_t)f->step);
    mdnl_put_be_f32(head + 12, f->has_time ? (float)f->time : 0.0f);
    for (int k = 0; k < 9; ++k)
        mdnl_put_be_f32(head + 16 + 4 * k, f->box.has_lattice ? (float)(f->box.h[k / 3][k % 3] * to_nm) : 0.0f);
    mdnl_put_be32(head + 52, (uint32_t)n);
    if (n <= 9) {
        if (fwrite(head, 1, 56, fp) != 56)
            return write_failed();
        for (int32_t i = 0; i < n; ++i) {
            uint8_t b[12];
            for (int d = 0; d < 3; ++d)
                mdnl_put_be_f32(b + 4 * d, (float)(f->pos[i][d] * to_nm));
            if (fwrite(b, 1, 12, fp) != 12)
                return write_failed();
        }
        return MDNL_OK;
    }
    /* Integer coordinates, rounded as the reference writer rounds. */
    int32_t *q = mdnl_malloc((size_t)n * 3 * sizeof *q, "XTC integer coordinates");
    if (!q)
        return MDNL_ERR_RESOURCE;
    int32_t minint[3] = {INT_MAX, INT_MAX, INT_MAX}, maxint[3] = {INT_MIN, INT_MIN, INT_MIN};
    for (int64_t k = 0; k < 3 * (int64_t)n; ++k) {
        const float lf = (float)(f->pos[k / 3][k % 3] * to_nm) * precision;
        if (!(fabsf(lf) < (float)(INT_MAX - 2))) {
            free(q);
            return mdnl_error(MDNL_ERR_INPUT,
                              "frame %lld: atom %lld: coordinate %g nm times precision %g does not fit in XTC's int",
                              (long long)f->index, (long long)(k / 3), f->pos[k / 3][k % 3] * to_nm, (double)precision);
        }
        q[k] = lf >= 0 ? (int32_t)(lf + 0.5f) : (int32_t)(lf - 0.5f);
        minint[k % 3] = q[k] < minint[k % 3] ? q[k] : minint[k % 3];
        maxint[k % 3] = q[k] > maxint[k % 3] ? q[k] : maxint[k % 3];
    }
    uint32_t size[3];
    int bits[3], bitsize = 0;
    bool large = false;
    for (int d = 0; d < 3; ++d) {
        const int64_t range = (int64_t)maxint[d] - minint[d] + 1;
        if (range > 0x7fffffff) {
            free(q);
            return mdnl_error(MDNL_ERR_INPUT, "frame %lld: coordinates span more than XTC's int at precision %g",
                              (long long)f->index, (double)precision);
        }
        size[d] = (uint32_t)range;
        bits[d] = bit_length(size[d]);
        large |= range > 0xffffff;
    }
    if (!large)
        bitsize = bit_length((unsigned __int128)size[0] * size[1] * size[2]);
    sink s = {0};
    bool ok = true;
    for (int32_t i = 0; i < n && ok; ++i) {
        const uint32_t c[3] = {(uint32_t)(q[3 * i] - minint[0]), (uint32_t)(q[3 * i + 1] - minint[1]),
                               (uint32_t)(q[3 * i + 2] - minint[2])};
        if (large) {
            for (int d = 0; d < 3; ++d)
                ok &= put_bits(&s, bits[d], c[d]);
        } else {
            /* One mixed-radix number, sent as bytes least significant first. */
            unsigned __int128 x = ((unsigned __int128)c[0] * size[1] + c[1]) * size[2] + c[2];
            int nb = bitsize;
            for (; nb > 8; nb -= 8, x >>= 8)
                ok &= put_bits(&s, 8, (uint32_t)(x & 0xff));
            ok &= put_bits(&s, nb, (uint32_t)x);
        }
        ok &= put_bits(&s, 1, 0); /* no run of small differences follows */
    }
    if (ok && s.n > 0)
        ok = put_bits(&s, 8 - s.n, 0);
    free(q);
    if (!ok) {
        free(s.buf);
        return MDNL_ERR_RESOURCE;
    }
    uint8_t *b = head + 56;
    mdnl_put_be_f32(b, precision);
    for (int d = 0; d < 3; ++d) {
        mdnl_put_be32(b + 4 + 4 * d, (uint32_t)minint[d]);
        mdnl_put_be32(b + 16 + 4 * d, (uint32_t)maxint[d]);
    }
    mdnl_put_be32(b + 28, FIRSTIDX);
    mdnl_put_be32(b + 32, (uint32_t)s.len);
    static const uint8_t zeros[4] = {0};
    const size_t pad = (4 - s.len % 4) % 4;
    ok = fwrite(head, 1, sizeof head, fp) == sizeof head && fwrite(s.buf, 1, s.len, fp) == s.len &&
         fwrite(zeros, 1, pad, fp) == pad;
    free(s.buf);
    return ok ? MDNL_OK : write_failed();
}

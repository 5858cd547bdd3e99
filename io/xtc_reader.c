/* xtc_reader.c — GROMACS XTC reader (see xtc_reader.h).
 *
 * A frame is: int magic (1995), int natoms, int step, float time, float
 * box[3][3] (rows are the lattice vectors, nm), int natoms again, then either
 * 3 * natoms plain floats (natoms <= 9) or the compressed block: float
 * precision, int minint[3], int maxint[3], int smallidx, int byte count and
 * that many bytes, padded to a multiple of 4 (XDR opaque data).
 *
 * The compressed block is a big-endian bit stream. Each "large" atom is the
 * integer coordinate minus minint, either as one mixed-radix number of
 * sizeofints(maxint - minint + 1) bits or, when a range exceeds 2^24, as three
 * plain fields. It is followed by one flag bit; a set flag brings 5 bits:
 * run length * 3 plus (1 + change of the small-number size). Without the flag
 * the previous run length stays. A run is run / 3 "small" atoms, each a
 * mixed-radix number of smallidx bits whose three digits, minus
 * magicints[smallidx] / 2, are the difference to the previous atom; the first
 * small atom and the large one trade places (water: the oxygen is sent
 * second). Mixed-radix numbers are sent as bytes, least significant first,
 * the last one holding the bits that remain. */
#include "xtc_reader.h"

#include "binary_pool.h"
#include "xdr.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#define XTC_MAGIC 1995
#define HEADER_BYTES 56  /* magic .. box, plus the natoms of the coordinate block */
#define BLOCK_BYTES 36   /* precision, minint[3], maxint[3], smallidx, byte count */
#define FIRSTIDX 9

static const int32_t magicints[] = {
    0,       0,       0,       0,       0,       0,       0,        0,        0,       8,       10,      12,
    16,      20,      25,      32,      40,      50,      64,       80,       101,     128,     161,     203,
    256,     322,     406,     512,     645,     812,     1024,     1290,     1625,    2048,    2580,    3250,
    4096,    5060,    6501,    8192,    10321,   13003,   16384,    20642,    26007,   32768,   41285,   52015,
    65536,   82570,   104031,  131072,  165140,  208063,  262144,   330280,   416127,  524287,  660561,  832255,
    1048576, 1321122, 1664510, 2097152, 2642245, 3329021, 4194304,  5284491,  6658042, 8388607, 10568983,
    13316085, 16777216};
#define LASTIDX ((int32_t)(sizeof magicints / sizeof *magicints))

struct mdnl_xtc_reader {
    mdnl_bfile b;
    bool native;
    int64_t frame;       /* index of the next frame found */
    mdnl_bin_pool *pool; /* finds frames here, decodes them on its workers */
};
_Static_assert(offsetof(struct mdnl_xtc_reader, b) == 0, "the bfile comes first (mdnl_bfile_reader_new)");

bool mdnl_xtc_sniff(const unsigned char *head, size_t n) { return n >= 4 && mdnl_be32(head) == XTC_MAGIC; }

/* ---- the bit stream ---- */

typedef struct bits {
    const uint8_t *p, *end;
    uint64_t acc; /* the low `n` bits are unread, most significant first */
    int n;
    bool over; /* a read went past the end */
} bits;

/* The next `k` bits (k <= 32), most significant first; zeros and `over` set
 * once the buffer is exhausted. */
static inline uint32_t get_bits(bits *s, int k)
{
    if (s->n < k) {
        if (s->end - s->p >= 8) {
            const int take = (63 - s->n) >> 3;
            s->acc = s->acc << (take * 8) | mdnl_be64(s->p) >> (64 - take * 8);
            s->p += take;
            s->n += take * 8;
        } else {
            while (s->n <= 56 && s->p < s->end) {
                s->acc = s->acc << 8 | *s->p++;
                s->n += 8;
            }
            if (s->n < k) {
                s->over = true;
                s->acc <<= k - s->n;
                s->n = k;
            }
        }
    }
    s->n -= k;
    return (uint32_t)(s->acc >> s->n) & (uint32_t)((1ull << k) - 1);
}

/* Three integers sent as one mixed-radix number of `nbits` bits in bytes,
 * least significant first: nums[2] is the number mod sizes[2], nums[1] the
 * quotient mod sizes[1], nums[0] what remains. */
static inline void get_ints(bits *s, int nbits, const uint32_t sizes[3], int32_t nums[3])
{
    if (nbits <= 64) {
        uint64_t x = 0;
        int shift = 0;
        for (; nbits > 8; nbits -= 8, shift += 8)
            x |= (uint64_t)get_bits(s, 8) << shift;
        x |= (uint64_t)get_bits(s, nbits) << shift;
        nums[2] = (int32_t)(x % sizes[2]);
        x /= sizes[2];
        nums[1] = (int32_t)(x % sizes[1]);
        nums[0] = (int32_t)(uint32_t)(x / sizes[1]);
        return;
    }
    unsigned __int128 x = 0;
    int shift = 0;
    for (; nbits > 8; nbits -= 8, shift += 8)
        x |= (unsigned __int128)get_bits(s, 8) << shift;
    x |= (unsigned __int128)get_bits(s, nbits) << shift;
    nums[2] = (int32_t)(x % sizes[2]);
    x /= sizes[2];
    nums[1] = (int32_t)(x % sizes[1]);
    nums[0] = (int32_t)(uint32_t)(x / sizes[1]);
}

/* Bits of n: the smallest b with 2^b > n. */
static int bit_length(unsigned __int128 n)
{
    int b = 0;
    while (n) {
        ++b;
        n >>= 1;
    }
    return b;
}

/* One decoded atom: the reference's float, into floats (the test hook) or
 * straight into the frame's doubles times `scale` (the reader: no second
 * pass over a float copy). */
static inline void emit(const int32_t c[3], float inv, float **of, double (**od)[3], double scale)
{
    const float x = (float)c[0] * inv, y = (float)c[1] * inv, z = (float)c[2] * inv;
    if (*od) {
        (**od)[0] = (double)x * scale, (**od)[1] = (double)y * scale, (**od)[2] = (double)z * scale;
        ++*od;
    } else {
        (*of)[0] = x, (*of)[1] = y, (*of)[2] = z;
        *of += 3;
    }
}

static const char *decode(const uint8_t *buf, size_t nbytes, int64_t natoms, float precision, const int32_t minint[3],
                          const int32_t maxint[3], int32_t smallidx, float *of, double (*od)[3], double scale)
{
    if (!(precision > 0) || !isfinite(precision))
        return "a positive finite precision";
    if (smallidx < FIRSTIDX || smallidx >= LASTIDX)
        return "a small-number size index in [9, 72]";
    uint32_t sizeint[3];
    int bitsizeint[3] = {0, 0, 0}, bitsize = 0;
    bool large = false;
    for (int k = 0; k < 3; ++k) {
        const int64_t range = (int64_t)maxint[k] - minint[k] + 1;
        if (range < 1 || range > 0x7fffffff)
            return "maxint >= minint, their range below 2^31";
        sizeint[k] = (uint32_t)range;
        large |= range > 0xffffff;
    }
    if (large)
        for (int k = 0; k < 3; ++k)
            bitsizeint[k] = bit_length(sizeint[k]);
    else
        bitsize = bit_length((unsigned __int128)sizeint[0] * sizeint[1] * sizeint[2]);
    /* The reference computes 1 / precision in double and stores it in a float. */
    const float inv = (float)(1.0 / (double)precision);
    if (!(inv * 2147483648.0f <= FLT_MAX))
        return "a precision above 1e-29 (an int times 1 / precision must be a finite float)";
    int32_t smaller = magicints[smallidx - 1 > FIRSTIDX ? smallidx - 1 : FIRSTIDX] / 2;
    int32_t smallnum = magicints[smallidx] / 2;
    uint32_t sizesmall[3] = {(uint32_t)magicints[smallidx], (uint32_t)magicints[smallidx],
                             (uint32_t)magicints[smallidx]};
    bits s = {buf, buf + nbytes, 0, 0, false};
    int64_t i = 0;
    int run = 0;
    while (i < natoms) {
        int32_t cur[3], prev[3];
        if (large) {
            for (int k = 0; k < 3; ++k)
                cur[k] = (int32_t)get_bits(&s, bitsizeint[k]);
        } else {
            get_ints(&s, bitsize, sizeint, cur);
        }
        ++i;
        for (int k = 0; k < 3; ++k)
            prev[k] = cur[k] = (int32_t)((uint32_t)cur[k] + (uint32_t)minint[k]);
        int is_smaller = 0;
        if (get_bits(&s, 1)) {
            run = (int)get_bits(&s, 5);
            is_smaller = run % 3;
            run -= is_smaller;
            is_smaller--;
        }
        if (run > 0) {
            if (run / 3 > natoms - i)
                return "a run of small differences within the frame's atoms";
            for (int k = 0; k < run; k += 3) {
                int32_t t[3];
                get_ints(&s, smallidx, sizesmall, t);
                ++i;
                for (int d = 0; d < 3; ++d)
                    t[d] = (int32_t)((uint32_t)t[d] + (uint32_t)prev[d] - (uint32_t)smallnum);
                if (k == 0) { /* the first small atom was sent after the large one */
                    for (int d = 0; d < 3; ++d) {
                        const int32_t tmp = t[d];
                        t[d] = prev[d];
                        prev[d] = tmp;
                    }
                    emit(prev, inv, &of, &od, scale);
                } else {
                    prev[0] = t[0], prev[1] = t[1], prev[2] = t[2];
                }
                emit(t, inv, &of, &od, scale);
            }
        } else {
            emit(cur, inv, &of, &od, scale);
        }
        smallidx += is_smaller;
        if (smallidx < FIRSTIDX || smallidx >= LASTIDX)
            return "a small-number size index that stays in [9, 72]";
        if (is_smaller < 0) {
            smallnum = smaller;
            smaller = smallidx > FIRSTIDX ? magicints[smallidx - 1] / 2 : 0;
        } else if (is_smaller > 0) {
            smaller = smallnum;
            smallnum = magicints[smallidx] / 2;
        }
        sizesmall[0] = sizesmall[1] = sizesmall[2] = (uint32_t)magicints[smallidx];
        if (s.over)
            return "compressed coordinates that end within the frame's byte count";
    }
    return NULL;
}

const char *mdnl_xtc_decode(const uint8_t *buf, size_t nbytes, int64_t natoms, float precision,
                            const int32_t minint[3], const int32_t maxint[3], int32_t smallidx, float *out)
{
    return decode(buf, nbytes, natoms, precision, minint, maxint, smallidx, out, NULL, 1.0);
}

/* ---- frames ---- */

static const mdnl_bin_ops xtc_ops;

mdnl_status mdnl_xtc_open(const char *path, bool native, mdnl_xtc_reader **out)
{
    *out = NULL;
    mdnl_status st;
    mdnl_xtc_reader *r = mdnl_bfile_reader_new(sizeof *r, path, "an XTC file", &st);
    if (!r)
        return st;
    r->native = native;
    if ((st = mdnl_bin_pool_open(&xtc_ops, r, &r->b, 1, &r->pool)) != MDNL_OK) {
        mdnl_xtc_close(r);
        return st;
    }
    *out = r;
    return MDNL_OK;
}

void mdnl_xtc_close(mdnl_xtc_reader *r)
{
    if (!r)
        return;
    mdnl_bin_pool_close(r->pool); /* stops the workers before the file closes */
    mdnl_bfile_close(&r->b);
    free(r);
}

/* What one frame's header says. */
typedef struct xtc_head {
    int64_t start; /* offset of the frame */
    int32_t natoms, step;
    float time;
    float box[9];
    bool compressed;
    float precision;
    int32_t minint[3], maxint[3], smallidx;
    int64_t nbytes;  /* compressed bytes (without the padding) */
    int64_t payload; /* bytes after the header up to the next frame */
} xtc_head;
_Static_assert(sizeof(xtc_head) <= sizeof(((mdnl_bin_frame *)0)->head), "an XTC header fits a pool job");

#define XTC_ERR(r, at, ...) mdnl_bfile_error(&(r)->b, (r)->frame, at, __VA_ARGS__)

/* Reads the header of the frame at the cursor; MDNL_END at a clean end. */
static mdnl_status read_head(mdnl_xtc_reader *r, xtc_head *h)
{
    uint8_t b[HEADER_BYTES + BLOCK_BYTES];
    h->start = r->b.pos;
    int got = mdnl_bfile_read(&r->b, b, HEADER_BYTES);
    if (got == 0)
        return MDNL_END;
    if (got < 0)
        return XTC_ERR(r, h->start, "expected a %d-byte frame header, found %lld bytes (truncated file)",
                       HEADER_BYTES, (long long)mdnl_bfile_left(&r->b));
    const uint32_t magic = mdnl_be32(b);
    if (magic != XTC_MAGIC)
        return XTC_ERR(r, h->start, "expected the XTC magic number 1995, found %lld", (long long)(int32_t)magic);
    h->natoms = mdnl_be_i32(b + 4);
    h->step = mdnl_be_i32(b + 8);
    h->time = mdnl_be_f32(b + 12);
    for (int k = 0; k < 9; ++k)
        h->box[k] = mdnl_be_f32(b + 16 + 4 * k);
    const int32_t lsize = mdnl_be_i32(b + 52);
    if (h->natoms < 0)
        return XTC_ERR(r, h->start + 4, "expected a non-negative atom count, found %d", h->natoms);
    if (lsize != h->natoms)
        return XTC_ERR(r, h->start + 52, "expected the coordinate block's atom count to be the header's %d, found %d",
                       h->natoms, lsize);
    h->compressed = h->natoms > 9;
    if (!h->compressed) {
        h->payload = 12 * (int64_t)h->natoms;
        if (h->payload > mdnl_bfile_left(&r->b))
            return XTC_ERR(r, r->b.pos, "expected %lld bytes of coordinates, found %lld (truncated frame)",
                           (long long)h->payload, (long long)mdnl_bfile_left(&r->b));
        return MDNL_OK;
    }
    const int64_t at = r->b.pos;
    if (mdnl_bfile_read(&r->b, b, BLOCK_BYTES) != 1)
        return XTC_ERR(r, at, "expected the %d-byte header of the compressed coordinates, found %lld bytes "
                              "(truncated frame)",
                       BLOCK_BYTES, (long long)mdnl_bfile_left(&r->b));
    h->precision = mdnl_be_f32(b);
    for (int k = 0; k < 3; ++k) {
        h->minint[k] = mdnl_be_i32(b + 4 + 4 * k);
        h->maxint[k] = mdnl_be_i32(b + 16 + 4 * k);
    }
    h->smallidx = mdnl_be_i32(b + 28);
    const int32_t nbytes = mdnl_be_i32(b + 32);
    h->nbytes = nbytes;
    h->payload = ((int64_t)nbytes + 3) & ~(int64_t)3;
    if (nbytes < 0 || h->payload > mdnl_bfile_left(&r->b))
        return XTC_ERR(r, at + 32, "expected a compressed byte count within the %lld bytes left, found %d",
                       (long long)mdnl_bfile_left(&r->b), nbytes);
    /* Every atom takes at least 2 bits (1 of coordinates when all atoms
     * share one point, 1 flag), so the byte count bounds the allocation. */
    if ((int64_t)h->natoms > 4 * h->nbytes + 4)
        return XTC_ERR(r, at + 32, "expected at least %lld compressed bytes for %d atoms, found %d",
                       (long long)(h->natoms / 4), h->natoms, nbytes);
    return MDNL_OK;
}

/* Frame bytes after the header (payload bytes at `at`) into doubles [n][3]
 * times scale: safe on any thread. NULL, or what was wrong, with *bad_atom
 * the atom of a non-finite plain coordinate (else -1). */
static const char *decode_frame(const xtc_head *h, const uint8_t *payload, double scale, double (*out)[3],
                                int64_t *bad_atom)
{
    *bad_atom = -1;
    if (!h->compressed) {
        for (int64_t k = 0; k < 3 * (int64_t)h->natoms; ++k) {
            const float x = mdnl_be_f32(payload + 4 * k);
            if (!isfinite(x)) {
                *bad_atom = k / 3;
                return "finite coordinates";
            }
            out[k / 3][k % 3] = (double)x * scale;
        }
        return NULL;
    }
    /* every value is finite (decode checks the precision) */
    return decode(payload, (size_t)h->nbytes, h->natoms, h->precision, h->minint, h->maxint, h->smallidx, NULL, out,
                  scale);
}

static mdnl_status decode_error(const mdnl_xtc_reader *r, int64_t frame, int64_t at, const char *bad,
                                int64_t bad_atom)
{
    if (bad_atom >= 0)
        return mdnl_bfile_error(&r->b, frame, at, "expected finite coordinates, found a non-finite one at atom %lld",
                                (long long)bad_atom);
    return mdnl_bfile_error(&r->b, frame, at, "expected %s in the compressed coordinates", bad);
}

/* Everything of frame `index` but the positions, from its header. */
static mdnl_status finish_frame(const mdnl_xtc_reader *r, const xtc_head *h, int64_t index, mdnl_frame *f)
{
    const double scale = r->native ? 1.0 : 10.0;
    f->natoms = h->natoms;
    mdnl_frame_species_unknown(f);
    memset(&f->box, 0, sizeof f->box);
    bool zero = true;
    for (int k = 0; k < 9; ++k) {
        if (!isfinite(h->box[k]))
            return mdnl_bfile_error(&r->b, index, h->start + 16, "expected a finite box, found a non-finite entry");
        zero &= h->box[k] == 0.0f;
        f->box.h[k / 3][k % 3] = (double)h->box[k] * scale;
    }
    if (!zero) {
        f->box.has_lattice = true;
        f->box.pbc[0] = f->box.pbc[1] = f->box.pbc[2] = true;
    }
    f->index = index;
    f->step = h->step;
    f->has_step = true;
    f->time = h->time;
    f->has_time = true;
    return MDNL_OK;
}

/* ---- frames (io/binary_pool.h) ----
 *
 * This thread reads each frame's header in order and steps over its
 * coordinates; a worker reads those (plain floats or the compressed block)
 * and decodes them straight into the frame. */

static mdnl_status find_frame(void *ctx, mdnl_bin_frame *bf)
{
    mdnl_xtc_reader *r = ctx;
    xtc_head h;
    mdnl_status st = read_head(r, &h);
    if (st != MDNL_OK)
        return st;
    bf->index = r->frame;
    bf->at = r->b.pos;
    bf->len = h.payload; /* within the file: read_head checked */
    memcpy(bf->head, &h, sizeof h);
    if ((st = mdnl_bfile_seek(&r->b, r->b.pos + h.payload)) != MDNL_OK)
        return st;
    r->frame++;
    return MDNL_OK;
}

static mdnl_status decode_payload(void *ctx, const mdnl_bin_frame *bf, const uint8_t *bytes, mdnl_frame *f)
{
    const mdnl_xtc_reader *r = ctx;
    xtc_head h;
    memcpy(&h, bf->head, sizeof h);
    mdnl_status st = mdnl_frame_reserve(f, h.natoms);
    if (st != MDNL_OK)
        return st;
    int64_t bad_atom;
    const char *bad = decode_frame(&h, bytes, r->native ? 1.0 : 10.0, f->pos, &bad_atom);
    if (bad)
        return decode_error(r, bf->index, bf->at, bad, bad_atom);
    return finish_frame(r, &h, bf->index, f);
}

static const mdnl_bin_ops xtc_ops = {find_frame, decode_payload};

mdnl_status mdnl_xtc_next(mdnl_xtc_reader *r, mdnl_frame *f) { return mdnl_bin_pool_next(r->pool, f); }

mdnl_status mdnl_xtc_skip(mdnl_xtc_reader *r) { return mdnl_bin_pool_skip(r->pool); }

void mdnl_xtc_set_threads(mdnl_xtc_reader *r, int threads) { mdnl_bin_pool_set_threads(r->pool, threads); }

void mdnl_xtc_select(mdnl_xtc_reader *r, int64_t start, int64_t stop, int64_t step)
{
    mdnl_bin_pool_select(r->pool, start, stop, step);
}

/* Counting walks the headers from the cursor, which the pool's finding has
 * moved past the frames it found (r->frame is the next one's index). */
static mdnl_status skip_any(void *r)
{
    mdnl_bin_frame bf;
    return find_frame(r, &bf);
}

mdnl_status mdnl_xtc_count(mdnl_xtc_reader *r, int64_t *n)
{
    return mdnl_bfile_count(&r->b, &r->frame, skip_any, r, n);
}

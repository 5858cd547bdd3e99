/* dcd_reader.c — DCD reader (see dcd_reader.h).
 *
 * Header record (84 bytes): "CORD" and 20 ints ICNTRL: [0] frames (NSET),
 * [1] ISTART, [2] NSAVC, [8] fixed atoms (NAMNF), [9] DELTA (a float; X-PLOR
 * files, with ICNTRL[19] = 0, hold a double in [9..10]), [10] unit cell
 * present, [11] fourth dimension, [19] CHARMM version. Then the title record
 * (int count, count * 80 characters) and a record holding the atom count. */
#include "dcd_reader.h"

#include "binary_pool.h"
#include "xdr.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#define PI 3.14159265358979323846
#define AKMA_PS 0.04888821 /* one AKMA time unit in ps (MDAnalysis' value) */

struct mdnl_dcd_reader {
    mdnl_bfile b;
    bool big;        /* big-endian markers and values */
    bool has_cell;   /* a unit cell record precedes each frame's coordinates */
    bool four_d;     /* a fourth coordinate record follows */
    int64_t natoms;
    int64_t istart, nsavc;
    double delta;
    int64_t data_start; /* offset of the first frame */
    int64_t frame_bytes;
    int64_t frame;   /* index of the next frame found */
    int64_t next_at; /* its offset */
    mdnl_bin_pool *pool; /* finds frames here, decodes them on its workers */
};
_Static_assert(offsetof(struct mdnl_dcd_reader, b) == 0, "the bfile comes first (mdnl_bfile_reader_new)");

static inline uint32_t u32(const mdnl_dcd_reader *r, const uint8_t *p) { return r->big ? mdnl_be32(p) : mdnl_le32(p); }
static inline float f32(const mdnl_dcd_reader *r, const uint8_t *p)
{
    uint32_t u = u32(r, p);
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}
static inline double f64(const mdnl_dcd_reader *r, const uint8_t *p)
{
    uint64_t u = r->big ? mdnl_be64(p) : mdnl_le64(p);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

bool mdnl_dcd_sniff(const unsigned char *head, size_t n)
{
    return n >= 8 && (mdnl_le32(head) == 84 || mdnl_be32(head) == 84) && memcmp(head + 4, "CORD", 4) == 0;
}

#define DCD_ERR(r, at, ...) mdnl_bfile_error(&(r)->b, (r)->frame, at, __VA_ARGS__)

/* Reads one record of exactly `len` bytes (markers checked) into buf. */
static mdnl_status record(mdnl_dcd_reader *r, void *buf, int64_t len, const char *what)
{
    const int64_t at = r->b.pos;
    uint8_t m[4];
    int got = mdnl_bfile_read(&r->b, m, 4);
    if (got == 0)
        return MDNL_END;
    if (got < 0)
        return DCD_ERR(r, at, "expected the record of %s, found %lld bytes (truncated file)", what,
                       (long long)mdnl_bfile_left(&r->b));
    const uint32_t head = u32(r, m);
    if (head != (uint32_t)len)
        return DCD_ERR(r, at, "expected a record of %lld bytes (%s), found a marker of %u", (long long)len, what, head);
    if (len > mdnl_bfile_left(&r->b) - 4 || mdnl_bfile_read(&r->b, buf, (size_t)len) != 1 ||
        mdnl_bfile_read(&r->b, m, 4) != 1)
        return DCD_ERR(r, at, "expected %lld bytes of %s, found %lld (truncated frame)", (long long)len + 4, what,
                       (long long)mdnl_bfile_left(&r->b));
    if (u32(r, m) != (uint32_t)len)
        return DCD_ERR(r, r->b.pos - 4, "expected the end marker %lld of %s, found %u", (long long)len, what,
                       u32(r, m));
    return MDNL_OK;
}

/* ---- frames (io/binary_pool.h) ----
 *
 * A frame is frame_bytes at data_start + k * frame_bytes: finding it needs
 * no read, only that it fits in the file; a worker reads and decodes it. */

static mdnl_status find_frame(void *ctx, mdnl_bin_frame *h)
{
    mdnl_dcd_reader *r = ctx;
    const int64_t at = r->next_at, left = r->b.size - at;
    if (left <= 0)
        return MDNL_END;
    if (r->frame_bytes > left)
        return DCD_ERR(r, at, "expected a frame of %lld bytes, found %lld (truncated frame)", (long long)r->frame_bytes,
                       (long long)left);
    h->index = r->frame++;
    h->at = at;
    h->len = r->frame_bytes;
    r->next_at += r->frame_bytes;
    return MDNL_OK;
}

/* The markers of the record of `len` bytes at p (file offset at), checked
 * as record() checks one read from the file. */
static mdnl_status frame_record(const mdnl_dcd_reader *r, int64_t frame, const uint8_t *p, int64_t at, int64_t len,
                                const char *what)
{
    const uint32_t head = u32(r, p), tail = u32(r, p + 4 + len);
    if (head != (uint32_t)len)
        return mdnl_bfile_error(&r->b, frame, at, "expected a record of %lld bytes (%s), found a marker of %u",
                                (long long)len, what, head);
    if (tail != (uint32_t)len)
        return mdnl_bfile_error(&r->b, frame, at + 4 + len, "expected the end marker %lld of %s, found %u",
                                (long long)len, what, tail);
    return MDNL_OK;
}

static mdnl_status decode_frame(void *ctx, const mdnl_bin_frame *h, const uint8_t *bytes, mdnl_frame *f)
{
    const mdnl_dcd_reader *r = ctx;
    const int64_t n = r->natoms, k = h->index;
    int64_t at = h->at;
    const uint8_t *p = bytes;
    mdnl_status st;
    mdnl_box box = {0};
    if (r->has_cell) {
        if ((st = frame_record(r, k, p, at, 48, "the unit cell")) != MDNL_OK)
            return st;
        double uc[6];
        for (int q = 0; q < 6; ++q)
            uc[q] = f64(r, p + 4 + 8 * q);
        if (!mdnl_dcd_cell_to_box(uc, &box))
            return mdnl_bfile_error(&r->b, k, h->at,
                                    "expected a unit cell (A, gamma, B, beta, alpha, C), found %g %g %g %g %g %g",
                                    uc[0], uc[1], uc[2], uc[3], uc[4], uc[5]);
        p += 56, at += 56;
    }
    if ((st = mdnl_frame_reserve(f, n)) != MDNL_OK)
        return st;
    static const char *const names[3] = {"the X coordinates", "the Y coordinates", "the Z coordinates"};
    for (int d = 0; d < 3 + r->four_d; ++d, p += 8 + 4 * n, at += 8 + 4 * n) {
        if ((st = frame_record(r, k, p, at, 4 * n, d < 3 ? names[d] : "the fourth dimension")) != MDNL_OK)
            return st;
        if (d == 3)
            break;
        const uint8_t *v = p + 4;
        for (int64_t i = 0; i < n; ++i) {
            const float x = f32(r, v + 4 * i);
            if (!isfinite(x))
                return mdnl_bfile_error(&r->b, k, at, "expected finite coordinates, found a non-finite one at atom %lld",
                                        (long long)i);
            f->pos[i][d] = x;
        }
    }
    f->natoms = n;
    mdnl_frame_species_unknown(f);
    f->box = box;
    f->index = k;
    f->step = r->istart + k * r->nsavc;
    f->has_step = true;
    f->time = (double)f->step * r->delta * AKMA_PS;
    f->has_time = true;
    return MDNL_OK;
}

static const mdnl_bin_ops dcd_ops = {find_frame, decode_frame};

mdnl_status mdnl_dcd_open(const char *path, bool native, mdnl_dcd_reader **out)
{
    (void)native;
    *out = NULL;
    mdnl_status st;
    mdnl_dcd_reader *r = mdnl_bfile_reader_new(sizeof *r, path, "a DCD file", &st);
    if (!r)
        return st;
    uint8_t h[84];
    if (mdnl_bfile_read(&r->b, h, 8) != 1) {
        st = DCD_ERR(r, 0, "expected a DCD header record, found %lld bytes", (long long)r->b.size);
        goto fail;
    }
    if (mdnl_le32(h) == 84)
        r->big = false;
    else if (mdnl_be32(h) == 84)
        r->big = true;
    else {
        st = DCD_ERR(r, 0, "expected a DCD header record (a 4-byte marker 84 and \"CORD\"%s), found a marker of %u",
                     mdnl_le32(h + 4) == 0 && mdnl_le32(h) == 84 ? "; 8-byte markers are not supported" : "",
                     mdnl_le32(h));
        goto fail;
    }
    if ((st = mdnl_bfile_seek(&r->b, 0)) != MDNL_OK || (st = record(r, h, 84, "the CORD header")) != MDNL_OK)
        goto fail;
    if (memcmp(h, "CORD", 4) != 0) {
        st = DCD_ERR(r, 4, "expected \"CORD\" (coordinates), found \"%.4s\"", (const char *)h);
        goto fail;
    }
    int32_t ic[20];
    for (int k = 0; k < 20; ++k)
        ic[k] = (int32_t)u32(r, h + 4 + 4 * k);
    const bool charmm = ic[19] != 0;
    r->istart = ic[1];
    r->nsavc = ic[2];
    r->delta = charmm ? (double)f32(r, h + 4 + 4 * 9) : f64(r, h + 4 + 4 * 9);
    r->has_cell = charmm && ic[10] != 0;
    r->four_d = charmm && ic[11] != 0;
    /* The title record: an int count and count lines of 80 characters. */
    uint8_t m[4];
    const int64_t title_at = r->b.pos;
    if (mdnl_bfile_read(&r->b, m, 4) != 1) {
        st = DCD_ERR(r, title_at, "expected the title record, found the end of the file");
        goto fail;
    }
    const uint32_t tlen = u32(r, m);
    if (tlen < 4 || (int64_t)tlen > mdnl_bfile_left(&r->b) - 4) {
        st = DCD_ERR(r, title_at, "expected a title record within the file, found a marker of %u", tlen);
        goto fail;
    }
    if ((st = mdnl_bfile_seek(&r->b, r->b.pos + tlen)) != MDNL_OK)
        goto fail;
    if (mdnl_bfile_read(&r->b, m, 4) != 1 || u32(r, m) != tlen) {
        st = DCD_ERR(r, r->b.pos, "expected the title record's end marker %u", tlen);
        goto fail;
    }
    if ((st = record(r, h, 4, "the atom count")) != MDNL_OK) {
        if (st == MDNL_END)
            st = DCD_ERR(r, r->b.pos, "expected the atom count record, found the end of the file");
        goto fail;
    }
    const int32_t natoms = (int32_t)u32(r, h);
    if (natoms < 0) {
        st = DCD_ERR(r, r->b.pos - 8, "expected a non-negative atom count, found %d", natoms);
        goto fail;
    }
    if (ic[8] != 0) {
        st = DCD_ERR(r, 4 + 4 + 4 * 8, "expected no fixed atoms, found %d (NAMNF): DCD files with fixed atoms are not "
                                       "supported",
                     ic[8]);
        goto fail;
    }
    r->natoms = natoms;
    r->data_start = r->next_at = r->b.pos;
    r->frame_bytes = (r->has_cell ? 56 : 0) + (3 + r->four_d) * (8 + 4 * (int64_t)natoms);
    /* A frame must fit in the file before its record buffer is allocated. */
    if (r->b.size > r->data_start && r->frame_bytes > r->b.size - r->data_start) {
        st = DCD_ERR(r, r->data_start, "expected frames of %lld bytes for %d atoms, found %lld bytes left (truncated "
                                       "file or a wrong atom count)",
                     (long long)r->frame_bytes, natoms, (long long)(r->b.size - r->data_start));
        goto fail;
    }
    if ((st = mdnl_bin_pool_open(&dcd_ops, r, &r->b, 1, &r->pool)) != MDNL_OK)
        goto fail;
    *out = r;
    return MDNL_OK;
fail:
    mdnl_dcd_close(r);
    return st;
}

void mdnl_dcd_close(mdnl_dcd_reader *r)
{
    if (!r)
        return;
    mdnl_bin_pool_close(r->pool); /* stops the workers before the file closes */
    mdnl_bfile_close(&r->b);
    free(r);
}

static double cosd(double deg) { return deg == 90.0 ? 0.0 : cos(deg * (PI / 180.0)); }
static double sind(double deg) { return deg == 90.0 ? 1.0 : sin(deg * (PI / 180.0)); }

bool mdnl_dcd_cell_to_box(const double uc[6], mdnl_box *box)
{
    for (int k = 0; k < 6; ++k)
        if (!isfinite(uc[k]))
            return false;
    double len[3] = {uc[0], uc[2], uc[5]}, ang[3] = {uc[4], uc[3], uc[1]}; /* alpha, beta, gamma */
    double h[3][3] = {{0}};
    if (ang[0] >= -1 && ang[0] <= 1 && ang[1] >= -1 && ang[1] <= 1 && ang[2] >= -1 && ang[2] <= 1) {
        for (int k = 0; k < 3; ++k) /* cosines, as CHARMM and NAMD > 2.5 write them */
            ang[k] = 90.0 - asin(ang[k]) * 90.0 / (PI / 2);
    } else if (len[0] < 0 || len[1] < 0 || len[2] < 0 || ang[0] > 180 || ang[1] > 180 || ang[2] > 180) {
        /* New CHARMM: the symmetric box matrix, lower triangle. */
        const double v[3][3] = {{uc[0], uc[1], uc[3]}, {uc[1], uc[2], uc[4]}, {uc[3], uc[4], uc[5]}};
        memset(box, 0, sizeof *box);
        memcpy(box->h, v, sizeof v);
        box->has_lattice = true;
        box->pbc[0] = box->pbc[1] = box->pbc[2] = true;
        return true;
    }
    if (len[0] < 0 || len[1] < 0 || len[2] < 0 || !(ang[0] > 0 && ang[0] < 180) || !(ang[1] > 0 && ang[1] < 180) ||
        !(ang[2] > 0 && ang[2] < 180))
        return false;
    memset(box, 0, sizeof *box);
    if (len[0] == 0 && len[1] == 0 && len[2] == 0)
        return true; /* no cell: an open frame */
    const double ca = cosd(ang[0]), cb = cosd(ang[1]), cg = cosd(ang[2]), sg = sind(ang[2]);
    h[0][0] = len[0];
    h[1][0] = len[1] * cg;
    h[1][1] = len[1] * sg;
    h[2][0] = len[2] * cb;
    h[2][1] = len[2] * (ca - cb * cg) / sg;
    const double zz = len[2] * len[2] - h[2][0] * h[2][0] - h[2][1] * h[2][1];
    h[2][2] = zz > 0 ? sqrt(zz) : 0;
    for (int k = 0; k < 9; ++k)
        if (!isfinite(h[k / 3][k % 3]))
            return false; /* lengths near the double's range */
    memcpy(box->h, h, sizeof h);
    box->has_lattice = true;
    box->pbc[0] = box->pbc[1] = box->pbc[2] = true;
    return true;
}

mdnl_status mdnl_dcd_next(mdnl_dcd_reader *r, mdnl_frame *f) { return mdnl_bin_pool_next(r->pool, f); }

mdnl_status mdnl_dcd_skip(mdnl_dcd_reader *r) { return mdnl_bin_pool_skip(r->pool); }

void mdnl_dcd_set_threads(mdnl_dcd_reader *r, int threads) { mdnl_bin_pool_set_threads(r->pool, threads); }

void mdnl_dcd_select(mdnl_dcd_reader *r, int64_t start, int64_t stop, int64_t step)
{
    mdnl_bin_pool_select(r->pool, start, stop, step);
}

mdnl_status mdnl_dcd_count(mdnl_dcd_reader *r, int64_t *n)
{
    const int64_t data = r->b.size - r->data_start;
    *n = r->frame_bytes > 0 ? (data + r->frame_bytes - 1) / r->frame_bytes : 0;
    return MDNL_OK;
}

/* trr_reader.c — GROMACS TRR reader (see trr_reader.h).
 *
 * A frame: int magic (1993), int 13 (the version string's size with its
 * NUL), the XDR string "GMX_trn_file" (int length 12 and 12 bytes), then 13
 * ints: ir_size, e_size, box_size, vir_size, pres_size, top_size, sym_size,
 * x_size, v_size, f_size, natoms, step, nre; then time and lambda as reals.
 * A real is 4 or 8 bytes: box_size / 9, else x_size / (3 natoms), else the v
 * or f size. Then box, virial and pressure (9 reals each, when their size is
 * not 0), x, v and f (3 natoms reals each). */
#include "trr_reader.h"

#include "binary_pool.h"
#include "xdr.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#define TRR_MAGIC 1993

struct mdnl_trr_reader {
    mdnl_bfile b;
    bool native;
    int64_t frame;       /* index of the next frame with positions found */
    mdnl_bin_pool *pool; /* finds frames here, decodes them on its workers */
};
_Static_assert(offsetof(struct mdnl_trr_reader, b) == 0, "the bfile comes first (mdnl_bfile_reader_new)");

typedef struct trr_head {
    int64_t start;
    int32_t box_size, vir_size, pres_size, x_size, v_size, f_size, natoms, step;
    int real; /* 4 or 8 */
    double time;
    int64_t data; /* bytes of the blocks after the header */
} trr_head;
_Static_assert(sizeof(trr_head) <= sizeof(((mdnl_bin_frame *)0)->head), "a TRR header fits a pool job");

bool mdnl_trr_sniff(const unsigned char *head, size_t n)
{
    return n >= 8 && mdnl_be32(head) == TRR_MAGIC && mdnl_be32(head + 4) == 13;
}

#define TRR_ERR(r, at, ...) mdnl_bfile_error(&(r)->b, (r)->frame, at, __VA_ARGS__)

static const mdnl_bin_ops trr_ops;

mdnl_status mdnl_trr_open(const char *path, bool native, mdnl_trr_reader **out)
{
    *out = NULL;
    mdnl_status st;
    mdnl_trr_reader *r = mdnl_bfile_reader_new(sizeof *r, path, "a TRR file", &st);
    if (!r)
        return st;
    r->native = native;
    if ((st = mdnl_bin_pool_open(&trr_ops, r, &r->b, 1, &r->pool)) != MDNL_OK) {
        mdnl_trr_close(r);
        return st;
    }
    *out = r;
    return MDNL_OK;
}

void mdnl_trr_close(mdnl_trr_reader *r)
{
    if (!r)
        return;
    mdnl_bin_pool_close(r->pool); /* stops the workers before the file closes */
    mdnl_bfile_close(&r->b);
    free(r);
}

/* Reads the next frame's header (with or without positions). */
static mdnl_status read_head(mdnl_trr_reader *r, trr_head *h)
{
    uint8_t b[24 + 13 * 4 + 16];
    h->start = r->b.pos;
    int got = mdnl_bfile_read(&r->b, b, 24 + 13 * 4);
    if (got == 0)
        return MDNL_END;
    if (got < 0)
        return TRR_ERR(r, h->start, "expected a TRR frame header, found %lld bytes (truncated file)",
                       (long long)mdnl_bfile_left(&r->b));
    if (mdnl_be32(b) != TRR_MAGIC)
        return TRR_ERR(r, h->start, "expected the TRR magic number 1993, found %d", mdnl_be_i32(b));
    if (mdnl_be32(b + 4) != 13 || mdnl_be32(b + 8) != 12 || memcmp(b + 12, "GMX_trn_file", 12) != 0)
        return TRR_ERR(r, h->start + 4, "expected the version string \"GMX_trn_file\"");
    int32_t v[13];
    for (int k = 0; k < 13; ++k)
        v[k] = mdnl_be_i32(b + 24 + 4 * k);
    if (v[0] || v[1] || v[5] || v[6])
        return TRR_ERR(r, h->start + 24, "expected ir_size, e_size, top_size and sym_size 0, found %d %d %d %d", v[0],
                       v[1], v[5], v[6]);
    h->box_size = v[2], h->vir_size = v[3], h->pres_size = v[4];
    h->x_size = v[7], h->v_size = v[8], h->f_size = v[9];
    h->natoms = v[10], h->step = v[11];
    if (h->natoms < 0)
        return TRR_ERR(r, h->start + 64, "expected a non-negative atom count, found %d", h->natoms);
    const int64_t n3 = 3 * (int64_t)h->natoms;
    h->real = h->box_size ? h->box_size / 9
              : h->x_size && n3 ? (int)(h->x_size / n3)
              : h->v_size && n3 ? (int)(h->v_size / n3)
              : h->f_size && n3 ? (int)(h->f_size / n3)
                                 : 4;
    if (h->real != 4 && h->real != 8)
        return TRR_ERR(r, h->start + 24, "expected block sizes of 4- or 8-byte reals, found box %d, x %d for %d atoms",
                       h->box_size, h->x_size, h->natoms);
    const int32_t mat = 9 * h->real;
    const int64_t vec = n3 * h->real;
    if ((h->box_size && h->box_size != mat) || (h->vir_size && h->vir_size != mat) ||
        (h->pres_size && h->pres_size != mat) || (h->x_size && h->x_size != vec) || (h->v_size && h->v_size != vec) ||
        (h->f_size && h->f_size != vec))
        return TRR_ERR(r, h->start + 24,
                       "expected block sizes of %d (box) or %lld (x, v, f) bytes, found box %d, vir %d, pres %d, x %d, "
                       "v %d, f %d",
                       mat, (long long)vec, h->box_size, h->vir_size, h->pres_size, h->x_size, h->v_size, h->f_size);
    const int64_t at = r->b.pos;
    if (mdnl_bfile_read(&r->b, b, (size_t)(2 * h->real)) != 1)
        return TRR_ERR(r, at, "expected time and lambda (truncated frame)");
    h->time = h->real == 4 ? (double)mdnl_be_f32(b) : mdnl_be_f64(b);
    h->data = (int64_t)h->box_size + h->vir_size + h->pres_size + h->x_size + h->v_size + h->f_size;
    if (h->data > mdnl_bfile_left(&r->b))
        return TRR_ERR(r, r->b.pos, "expected %lld bytes of frame data, found %lld (truncated frame)",
                       (long long)h->data, (long long)mdnl_bfile_left(&r->b));
    return MDNL_OK;
}

/* The next header of a frame with positions, skipping the others. */
static mdnl_status next_with_x(mdnl_trr_reader *r, trr_head *h)
{
    for (;;) {
        mdnl_status st = read_head(r, h);
        if (st != MDNL_OK || h->x_size)
            return st;
        if ((st = mdnl_bfile_seek(&r->b, r->b.pos + h->data)) != MDNL_OK)
            return st;
    }
}

static double real_at(const trr_head *h, const uint8_t *p)
{
    return h->real == 4 ? (double)mdnl_be_f32(p) : mdnl_be_f64(p);
}

/* ---- frames (io/binary_pool.h) ----
 *
 * This thread reads each header in order (skipping frames without
 * positions) and steps over the frame's blocks; a worker reads box, virial,
 * pressure and x (v and f are never read) and converts them. */

static mdnl_status find_frame(void *ctx, mdnl_bin_frame *bf)
{
    mdnl_trr_reader *r = ctx;
    trr_head h;
    mdnl_status st = next_with_x(r, &h);
    if (st != MDNL_OK)
        return st;
    bf->index = r->frame;
    bf->at = r->b.pos;
    bf->len = (int64_t)h.box_size + h.vir_size + h.pres_size + h.x_size;
    memcpy(bf->head, &h, sizeof h);
    if ((st = mdnl_bfile_seek(&r->b, r->b.pos + h.data)) != MDNL_OK)
        return st;
    r->frame++;
    return MDNL_OK;
}

static mdnl_status decode_frame(void *ctx, const mdnl_bin_frame *bf, const uint8_t *bytes, mdnl_frame *f)
{
    const mdnl_trr_reader *r = ctx;
    trr_head h;
    memcpy(&h, bf->head, sizeof h);
    const int64_t n = h.natoms, at = bf->at;
    mdnl_status st = mdnl_frame_reserve(f, n);
    if (st != MDNL_OK)
        return st;
    const double scale = r->native ? 1.0 : 10.0;
    const uint8_t *x = bytes + h.box_size + h.vir_size + h.pres_size;
    for (int64_t i = 0; i < n; ++i)
        for (int d = 0; d < 3; ++d) {
            const double v = real_at(&h, x + (3 * i + d) * h.real) * scale;
            if (!isfinite(v))
                return mdnl_bfile_error(&r->b, bf->index, at,
                                        "expected finite coordinates, found a non-finite one at atom %lld",
                                        (long long)i);
            f->pos[i][d] = v;
        }
    f->natoms = n;
    mdnl_frame_species_unknown(f);
    memset(&f->box, 0, sizeof f->box);
    bool zero = true;
    for (int k = 0; k < 9 && h.box_size; ++k) {
        const double v = real_at(&h, bytes + k * h.real) * scale;
        if (!isfinite(v))
            return mdnl_bfile_error(&r->b, bf->index, at, "expected a finite box, found a non-finite entry");
        zero &= v == 0.0;
        f->box.h[k / 3][k % 3] = v;
    }
    if (!zero) {
        f->box.has_lattice = true;
        f->box.pbc[0] = f->box.pbc[1] = f->box.pbc[2] = true;
    }
    f->index = bf->index;
    f->step = h.step;
    f->has_step = true;
    f->time = h.time;
    f->has_time = true;
    return MDNL_OK;
}

static const mdnl_bin_ops trr_ops = {find_frame, decode_frame};

mdnl_status mdnl_trr_next(mdnl_trr_reader *r, mdnl_frame *f) { return mdnl_bin_pool_next(r->pool, f); }

mdnl_status mdnl_trr_skip(mdnl_trr_reader *r) { return mdnl_bin_pool_skip(r->pool); }

void mdnl_trr_set_threads(mdnl_trr_reader *r, int threads) { mdnl_bin_pool_set_threads(r->pool, threads); }

void mdnl_trr_select(mdnl_trr_reader *r, int64_t start, int64_t stop, int64_t step)
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
mdnl_status mdnl_trr_count(mdnl_trr_reader *r, int64_t *n)
{
    return mdnl_bfile_count(&r->b, &r->frame, skip_any, r, n);
}

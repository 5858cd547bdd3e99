/* gro_reader.c — GROMACS .gro files (one frame or several concatenated),
 * through io/stream.h. Registered in io/reader.c as "gro".
 *
 * A frame: a title line ("t= TIME step= STEP" read when present), the atom
 * count, one fixed-column line per atom ("%5d%-5s%5s%5d" then x y z in
 * fields whose width is the distance between the first two decimal points,
 * 8 for GROMACS' "%8.3f"; velocities after them are ignored), and the box
 * line: "v1x v2y v3z" or the nine numbers "v1x v2y v3z v1y v1z v2x v2z v3x
 * v3y". A box of zeros is an open frame; any other box is periodic in x, y,
 * z. Species are the atom names (columns 11-15, trimmed). Positions and box
 * are nm in the file and Å once read, unless units_native keeps nm. */
#define _POSIX_C_SOURCE 200809L
#include "reader.h"
#include "text_pool.h"
#include "xyz_reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gro_reader {
    mdnl_stream *in;
    const char *name;
    int64_t frame, file_size;
    double scale; /* 10 (nm -> Å) or 1 */
    bool native;
    mdnl_text_pool *pool; /* --threads > 1: frames come from the reader pool */
    bool own_stream;      /* a pool state's memory stream */
    int64_t hdr_n;        /* a split frame's count and precision (pool_header), for its pieces */
    int hdr_width;
} gro_reader;

#define ERR(...) mdnl_error(MDNL_ERR_INPUT, __VA_ARGS__)
#define WHERE g->name, (long long)mdnl_stream_lineno(g->in), (long long)g->frame

static mdnl_status need_line(gro_reader *g, const char **s, const char **e, const char *what)
{
    int got = mdnl_stream_line(g->in, s, e);
    if (got < 0)
        return MDNL_ERR_INPUT;
    if (got == 0)
        return ERR("%s:%lld: frame %lld: expected %s, found the end of the file", g->name,
                   (long long)mdnl_stream_lineno(g->in) + 1, (long long)g->frame, what);
    return MDNL_OK;
}

/* The value after "key" in the title, when there is one. */
static bool title_value(const char *s, const char *e, const char *key, double *v)
{
    const size_t k = strlen(key);
    for (const char *p = s; p + k <= e; ++p)
        if (memcmp(p, key, k) == 0 && (p == s || mdnl_is_space(p[-1]))) {
            const char *q = p + k, *ts, *te;
            return mdnl_token(&q, e, &ts, &te) && mdnl_parse_double(ts, te, v) && isfinite(*v);
        }
    return false;
}

/* Title and count. MDNL_END at a clean end of the file. */
static mdnl_status read_header(gro_reader *g, mdnl_frame *f, int64_t *natoms)
{
    const char *s, *e, *ts, *te;
    int got = mdnl_stream_line(g->in, &s, &e);
    if (got < 0)
        return MDNL_ERR_INPUT;
    if (got == 0 || (g->frame > 0 && s == e && (got = mdnl_stream_line(g->in, &s, &e)) == 0)) {
        if (g->frame == 0)
            return ERR("%s:1: expected a title line, found an empty file", g->name);
        return MDNL_END;
    }
    if (got < 0)
        return MDNL_ERR_INPUT;
    if (f) {
        double t, step;
        f->has_time = title_value(s, e, "t=", &t);
        f->time = f->has_time ? t : 0;
        f->has_step = title_value(s, e, "step=", &step) && step == floor(step) && fabs(step) < 9e18;
        if (f->has_step)
            f->step = (int64_t)step;
    }
    mdnl_status st = need_line(g, &s, &e, "the number of atoms");
    if (st != MDNL_OK)
        return st;
    char tmp[200];
    const char *p = s;
    int64_t n = 0;
    bool ok = mdnl_token(&p, e, &ts, &te);
    for (const char *q = ts; ok && q < te; ++q) {
        ok = (unsigned)(*q - '0') < 10 && n < INT64_MAX / 10 - 9;
        n = n * 10 + (*q - '0');
    }
    const char *u, *ue;
    if (!ok || mdnl_token(&p, e, &u, &ue))
        return ERR("%s:%lld: frame %lld: expected the number of atoms (an integer), found %s", WHERE,
                   mdnl_show_text(s, e, tmp, sizeof tmp));
    /* An atom line has at least 44 bytes. */
    if (g->file_size >= 0 && n > g->file_size / 44 + 1)
        return ERR("%s:%lld: frame %lld: expected a number of atoms the file can hold, found %lld", WHERE,
                   (long long)n);
    *natoms = n;
    return MDNL_OK;
}

static mdnl_status read_box(gro_reader *g, mdnl_frame *f)
{
    const char *s, *e, *ts, *te;
    mdnl_status st = need_line(g, &s, &e, "the box line");
    if (st != MDNL_OK)
        return st;
    double v[9] = {0};
    int n = 0;
    char tmp[200];
    for (const char *p = s; mdnl_token(&p, e, &ts, &te);) {
        if (n == 9 || !mdnl_parse_double(ts, te, &v[n]) || !isfinite(v[n]))
            return ERR("%s:%lld: frame %lld: expected 3 or 9 finite numbers on the box line, found %s", WHERE,
                       mdnl_show_text(s, e, tmp, sizeof tmp));
        ++n;
    }
    if (n != 3 && n != 9)
        return ERR("%s:%lld: frame %lld: expected 3 or 9 numbers on the box line, found %d", WHERE, n);
    if (!f)
        return MDNL_OK;
    const double h[3][3] = {{v[0], v[3], v[4]}, {v[5], v[1], v[6]}, {v[7], v[8], v[2]}};
    bool zero = true;
    for (int a = 0; a < 3; ++a)
        for (int b = 0; b < 3; ++b) {
            f->box.h[a][b] = h[a][b] * g->scale;
            zero = zero && h[a][b] == 0;
        }
    if (zero) {
        memset(&f->box, 0, sizeof f->box);
        return MDNL_OK;
    }
    f->box.has_lattice = true;
    f->box.pbc[0] = f->box.pbc[1] = f->box.pbc[2] = true;
    if (!(mdnl_box_volume(&f->box) > 0))
        return ERR("%s:%lld: frame %lld: expected a box of non-zero volume, found volume 0", WHERE);
    return MDNL_OK;
}

/* The precision of a frame's x y z from its first atom line: the distance
 * between the first two decimal points. */
static mdnl_status line_width(gro_reader *g, const char *s, const char *e, int *width)
{
    const size_t len = (size_t)(e - s);
    const char *d1 = len > 20 ? memchr(s + 20, '.', len - 20) : NULL;
    const char *d2 = d1 ? memchr(d1 + 1, '.', (size_t)(e - d1 - 1)) : NULL;
    *width = d2 ? (int)(d2 - d1) : 0;
    char tmp[200];
    if (*width < 4 || *width > 30)
        return ERR("%s:%lld: frame %lld: expected an atom line with fixed-width x y z from column 21, found %s", WHERE,
                   mdnl_show_text(s, e, tmp, sizeof tmp));
    return MDNL_OK;
}

/* Atoms [i0, i1) into f (which has room for them, or grows as they come
 * when tab is f), their species ids from tab's table; *width: the frame's
 * precision, 0 until its first atom line sets it. One thread: tab is f,
 * [0, n); a piece of a split frame: its own table. */
static mdnl_status parse_atoms(gro_reader *g, mdnl_frame *f, mdnl_frame *tab, int64_t i0, int64_t i1, int *width)
{
    mdnl_status st;
    char tmp[200];
    int32_t last_id = -1;
    char last_name[6] = "";
    for (int64_t i = i0; i < i1; ++i) {
        const char *s, *e;
        if ((st = need_line(g, &s, &e, "an atom line")) != MDNL_OK)
            return st;
        if (i >= f->capacity && (st = mdnl_frame_reserve(f, i + 1)) != MDNL_OK)
            return st;
        const size_t len = (size_t)(e - s);
        if (!*width && (st = line_width(g, s, e, width)) != MDNL_OK)
            return st;
        const int w = *width;
        if (len < 20 + 3 * (size_t)w)
            return ERR("%s:%lld: frame %lld: expected %d columns for atom %lld (x y z from column 21, %d wide), "
                       "found %zu: %s",
                       WHERE, 20 + 3 * w, (long long)i, w, len, mdnl_show_text(s, e, tmp, sizeof tmp));
        for (int a = 0; a < 3; ++a) {
            const char *fs = s + 20 + a * w, *fe = fs + w, *ts, *te, *p = fs, *u, *ue;
            double x;
            if (!mdnl_token(&p, fe, &ts, &te) || mdnl_token(&p, fe, &u, &ue) || !mdnl_parse_double(ts, te, &x) ||
                !isfinite(x))
                return ERR("%s:%lld: frame %lld: expected a finite number for coordinate %c of atom %lld, found %s",
                           WHERE, "xyz"[a], (long long)i, mdnl_show_text(fs, fe, tmp, sizeof tmp));
            f->pos[i][a] = x * g->scale;
        }
        const char *ns = s + 10, *ne = s + 15;
        while (ns < ne && mdnl_is_space(*ns))
            ++ns;
        while (ne > ns && mdnl_is_space(ne[-1]))
            --ne;
        if (ns == ne)
            return ERR("%s:%lld: frame %lld: expected an atom name in columns 11-15 of atom %lld, found none", WHERE,
                       (long long)i);
        const size_t nl = (size_t)(ne - ns);
        if (last_id >= 0 && strlen(last_name) == nl && !memcmp(last_name, ns, nl)) {
            f->species[i] = last_id;
        } else {
            int32_t id = mdnl_frame_species_id(tab, ns, nl);
            if (id < 0) {
                char msg[256];
                snprintf(msg, sizeof msg, "%s", mdnl_last_error());
                return ERR("%s:%lld: frame %lld: atom %lld: %s", WHERE, (long long)i, msg);
            }
            f->species[i] = last_id = id;
            memcpy(last_name, ns, nl);
            last_name[nl] = '\0';
        }
        if (tab == f) /* one thread; a piece leaves natoms to the pool */
            f->natoms = i + 1;
    }
    return MDNL_OK;
}

static mdnl_status gro_next(void *state, mdnl_frame *f)
{
    gro_reader *g = state;
    if (g->pool)
        return mdnl_text_pool_next(g->pool, f);
    int64_t n;
    mdnl_text_begin_frame(f, g->frame);
    mdnl_status st = read_header(g, f, &n);
    if (st != MDNL_OK)
        return st;
    if ((st = mdnl_frame_reserve(f, n < (1 << 16) ? n : (1 << 16))) != MDNL_OK)
        return st;
    int width = 0;
    if ((st = parse_atoms(g, f, f, 0, n, &width)) != MDNL_OK)
        return st;
    if ((st = read_box(g, f)) != MDNL_OK)
        return st;
    g->frame++;
    return MDNL_OK;
}

static mdnl_status gro_skip(void *state)
{
    gro_reader *g = state;
    if (g->pool)
        return mdnl_text_pool_skip(g->pool);
    int64_t n;
    mdnl_status st = read_header(g, NULL, &n);
    if (st != MDNL_OK)
        return st;
    for (int64_t i = 0; i < n; ++i) {
        const char *s, *e;
        if ((st = need_line(g, &s, &e, "an atom line")) != MDNL_OK)
            return st;
    }
    if ((st = read_box(g, NULL)) != MDNL_OK)
        return st;
    g->frame++;
    return MDNL_OK;
}

static void gro_close(void *state)
{
    gro_reader *g = state;
    if (!g)
        return;
    mdnl_text_pool_close(g->pool);
    if (g->own_stream)
        mdnl_stream_close(g->in);
    free(g);
}

/* ---- the reader pool (io/text_pool.h): each state is a GRO reader over a
 * memory stream, so frames are parsed by gro_next above ---- */

static void *pool_state_new(void *ctx)
{
    const gro_reader *main = ctx;
    gro_reader *g = mdnl_calloc(1, sizeof *g, "GRO reader");
    if (!g)
        return NULL;
    if (mdnl_stream_open_memory(main->name, &g->in) != MDNL_OK) {
        free(g);
        return NULL;
    }
    g->own_stream = true;
    g->name = mdnl_stream_name(g->in);
    g->file_size = main->file_size;
    g->native = main->native;
    g->scale = main->scale;
    return g;
}

static void pool_on(gro_reader *g, const mdnl_text_frame *t, size_t len)
{
    mdnl_stream_set_memory(g->in, t->text, len, t->line, t->end_status, t->end_message);
    g->frame = t->index;
}

/* Title and count by read_header itself, on the complete lines so far: when
 * it stops at the last of them before the end of the file, more text may
 * carry it on. A frame is those lines, its atoms and the box line. */
static int pool_head(void *state, const mdnl_text_frame *t, bool eof, int64_t *nlines, int64_t *natoms,
                     size_t *drop_bytes, int64_t *drop_lines)
{
    gro_reader *g = state;
    *drop_bytes = 0, *drop_lines = 0;
    size_t len = t->len;
    if (!eof)
        while (len > 0 && t->text[len - 1] != '\n')
            --len;
    pool_on(g, t, len);
    int64_t n = 0;
    mdnl_status st = read_header(g, NULL, &n);
    if (st != MDNL_OK && !eof) {
        int64_t lines = 0;
        for (const char *q = t->text, *nl; (nl = memchr(q, '\n', (size_t)(t->text + len - q))); q = nl + 1)
            ++lines;
        if (mdnl_stream_lineno(g->in) >= t->line + lines) {
            mdnl_clear_error();
            return MDNL_TEXT_MORE;
        }
    }
    if (st != MDNL_OK)
        return st;
    *natoms = n;
    *nlines = mdnl_stream_lineno(g->in) - t->line + n + 1;
    return MDNL_OK;
}

static mdnl_status pool_parse(void *state, const mdnl_text_frame *t, mdnl_frame *f)
{
    pool_on(state, t, t->len);
    return gro_next(state, f);
}

static mdnl_status pool_skip(void *state, const mdnl_text_frame *t)
{
    pool_on(state, t, t->len);
    return gro_skip(state);
}

/* A split frame: title and count as gro_next reads them, the precision
 * from the first atom line, room for all atoms; its pieces' atoms by
 * parse_atoms, and the last piece's box line (the frame's tail line). */
static mdnl_status pool_header(void *state, const mdnl_text_frame *t, int64_t natoms, mdnl_frame *f)
{
    gro_reader *g = state;
    pool_on(g, t, t->len);
    mdnl_text_begin_frame(f, g->frame);
    const char *s, *e;
    mdnl_status st = read_header(g, f, &g->hdr_n);
    if (st == MDNL_OK && g->hdr_n != natoms)
        st = mdnl_error(MDNL_ERR_INTERNAL, "reader pool: a count of %lld atoms, %lld expected", (long long)g->hdr_n,
                        (long long)natoms);
    if (st == MDNL_OK && (st = need_line(g, &s, &e, "an atom line")) == MDNL_OK)
        st = line_width(g, s, e, &g->hdr_width);
    return st == MDNL_OK ? mdnl_frame_reserve(f, natoms) : st;
}

static mdnl_status pool_piece(void *state, void *header_state, const mdnl_text_frame *t, int64_t i0, int64_t i1,
                              mdnl_frame *f, mdnl_frame *tab)
{
    gro_reader *g = state;
    const gro_reader *h = header_state;
    pool_on(g, t, t->len);
    int width = h->hdr_width;
    mdnl_status st = parse_atoms(g, f, tab, i0, i1, &width);
    return st == MDNL_OK && i1 == h->hdr_n ? read_box(g, f) : st;
}

static const mdnl_text_ops gro_pool_ops = {
    .state_new = pool_state_new,
    .state_free = gro_close,
    .head = pool_head,
    .parse = pool_parse,
    .skip = pool_skip,
    .header = pool_header,
    .piece = pool_piece,
    .tail_lines = 1, /* the box line */
};

static void gro_select(void *state, int64_t start, int64_t stop, int64_t step)
{
    gro_reader *g = state;
    if (g->pool)
        mdnl_text_pool_select(g->pool, start, stop, step);
}

static mdnl_status gro_open(const mdnl_format_input *in, void **state)
{
    gro_reader *g = mdnl_calloc(1, sizeof *g, "GRO reader");
    if (!g)
        return MDNL_ERR_RESOURCE;
    g->in = in->stream;
    g->name = in->name;
    g->file_size = mdnl_stream_size(in->stream);
    g->native = in->opt->units_native;
    g->scale = g->native ? 1.0 : 10.0;
    if (in->opt->threads > 1) {
        mdnl_status st = mdnl_text_pool_open(&gro_pool_ops, g, g->in, in->opt->threads, &g->pool);
        if (st != MDNL_OK) {
            gro_close(g);
            return st;
        }
    }
    *state = g;
    return MDNL_OK;
}

/* Title, an integer, then an atom line with decimal points in columns 25,
 * 33, 41 (GROMACS' own layout), and the title is not itself a count (XYZ). */
static int gro_sniff(const unsigned char *h, size_t n)
{
    const unsigned char *l[4], *end = h + n;
    l[0] = h;
    for (int k = 1; k < 4; ++k) {
        const unsigned char *nl = memchr(l[k - 1], '\n', (size_t)(end - l[k - 1]));
        if (!nl)
            return MDNL_SNIFF_NO;
        l[k] = nl + 1;
    }
    if (mdnl_text_is_integer(l[0], l[1] - 1) || !mdnl_text_is_integer(l[1], l[2] - 1))
        return MDNL_SNIFF_NO;
    const size_t len = (size_t)(l[3] - 1 - l[2]);
    if (len >= 44 && l[2][24] == '.' && l[2][32] == '.' && l[2][40] == '.')
        return MDNL_SNIFF_SURE;
    return MDNL_SNIFF_MAYBE;
}

const mdnl_format mdnl_format_gro = {
    .name = "gro", .extensions = ".gro", .stream = true, .nm = true, .sniff = gro_sniff, .open = gro_open,
    .next = gro_next, .skip = gro_skip, .close = gro_close, .select = gro_select,
};

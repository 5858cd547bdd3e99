/* lammps_dump_reader.c — LAMMPS text dumps (`dump atom`, `dump custom`),
 * one frame per "ITEM: TIMESTEP" block, through io/stream.h (so gzip, xz,
 * zstd and standard input too). Registered in io/reader.c as "lammps-dump".
 *
 * A frame: TIMESTEP (the step), optionally TIME and UNITS, NUMBER OF ATOMS,
 * BOX BOUNDS [xy xz yz] with boundary flags, ATOMS with its column names.
 * Positions come from x y z, else xu yu zu, else xs ys zs, else xsu ysu zsu
 * (scaled: r = origin + s_a a + s_b b + s_c c), in the simulation's units
 * and frame (the box origin is not subtracted). Species: the element column,
 * else the type mapped through --types, else the type number as text.
 * Rows are put in order of the id column when there is one (what read_dump
 * and OVITO users expect); ids must be distinct. A tilted box's bounds are
 * turned into the cell as the LAMMPS Howto triclinic page says. An axis is
 * periodic when its flags are "pp"; anything else (f, s, m) is open. The
 * atom count may change from frame to frame. */
#define _POSIX_C_SOURCE 200809L
#include "lammps_common.h"
#include "reader.h"
#include "text_pool.h"
#include "xyz_reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { POS_X, POS_XU, POS_XS, POS_XSU, POS_NONE };

typedef struct dump_cols {
    int id, type, element, pos[3], ncols, kind;
} dump_cols;

typedef struct dump_reader {
    mdnl_stream *in;
    const char *name;
    int64_t frame, file_size;
    mdnl_lammps_types types;
    mdnl_lammps_ids ids;  /* the id column of the frame being read */
    mdnl_text_pool *pool; /* --threads > 1: frames come from the reader pool */
    bool own_stream;      /* a pool state's memory stream */
    /* a split frame's header (pool_header), for its pieces */
    dump_cols hdr_cols;
    double hdr_origin[3];
    int64_t hdr_n;
} dump_reader;

#define ERR(...) mdnl_error(MDNL_ERR_INPUT, __VA_ARGS__)
#define WHERE d->name, (long long)mdnl_stream_lineno(d->in), (long long)d->frame

static int line_starts(const char *s, const char *e, const char *word)
{
    const size_t n = strlen(word);
    return (size_t)(e - s) >= n && memcmp(s, word, n) == 0;
}

/* The next line, which must exist: 1, or an error naming what was expected. */
static mdnl_status need_line(dump_reader *d, const char **s, const char **e, const char *what)
{
    int got = mdnl_stream_line(d->in, s, e);
    if (got < 0)
        return MDNL_ERR_INPUT;
    if (got == 0)
        return ERR("%s:%lld: frame %lld: expected %s, found the end of the file", d->name,
                   (long long)mdnl_stream_lineno(d->in) + 1, (long long)d->frame, what);
    return MDNL_OK;
}

static mdnl_status parse_int64(dump_reader *d, const char *s, const char *e, const char *what, int64_t *out)
{
    const char *ts, *te, *p = s;
    char tmp[200];
    if (!mdnl_token(&p, e, &ts, &te)) {
        ts = te = s;
    } else {
        const char *q = ts;
        if (q < te && (*q == '-' || *q == '+'))
            ++q;
        int64_t v = 0;
        bool ok = q < te;
        for (; q < te && ok; ++q) {
            if ((unsigned)(*q - '0') >= 10 || v > (INT64_MAX - 9) / 10)
                ok = false;
            else
                v = v * 10 + (*q - '0');
        }
        const char *u, *ue;
        if (ok && !mdnl_token(&p, e, &u, &ue)) {
            *out = *ts == '-' ? -v : v;
            return MDNL_OK;
        }
    }
    return ERR("%s:%lld: frame %lld: expected %s (an integer), found %s", WHERE, what,
               mdnl_show_text(s, e, tmp, sizeof tmp));
}

static mdnl_status parse_columns(dump_reader *d, const char *s, const char *e, dump_cols *c)
{
    static const char *const names[4][3] = {{"x", "y", "z"}, {"xu", "yu", "zu"}, {"xs", "ys", "zs"},
                                            {"xsu", "ysu", "zsu"}};
    int found[4][3];
    memset(found, -1, sizeof found);
    c->id = c->type = c->element = -1;
    int col = 0;
    const char *ts, *te;
    while (mdnl_token(&s, e, &ts, &te)) {
        const size_t n = (size_t)(te - ts);
        if (n == 2 && !memcmp(ts, "id", 2))
            c->id = col;
        else if (n == 4 && !memcmp(ts, "type", 4))
            c->type = col;
        else if (n == 7 && !memcmp(ts, "element", 7))
            c->element = col;
        for (int k = 0; k < 4; ++k)
            for (int a = 0; a < 3; ++a)
                if (strlen(names[k][a]) == n && !memcmp(ts, names[k][a], n))
                    found[k][a] = col;
        ++col;
    }
    c->ncols = col;
    c->kind = POS_NONE;
    for (int k = 0; k < 4 && c->kind == POS_NONE; ++k)
        if (found[k][0] >= 0 && found[k][1] >= 0 && found[k][2] >= 0) {
            c->kind = k;
            for (int a = 0; a < 3; ++a)
                c->pos[a] = found[k][a];
        }
    if (c->kind == POS_NONE)
        return ERR("%s:%lld: frame %lld: expected position columns (x y z, xu yu zu, xs ys zs or xsu ysu zsu) in "
                   "ITEM: ATOMS, found none",
                   WHERE);
    if (c->type < 0 && c->element < 0)
        return ERR("%s:%lld: frame %lld: expected a type or element column in ITEM: ATOMS, found neither", WHERE);
    return MDNL_OK;
}

/* The box lines after "ITEM: BOX BOUNDS [xy xz yz] FLAGS" (the rest of that
 * line is [s, e)). */
static mdnl_status parse_box(dump_reader *d, const char *s, const char *e, mdnl_box *box, double origin[3])
{
    char tmp[200];
    const char *ts, *te, *p = s;
    bool tilted = false;
    int nflags = 0;
    char flags[3][2] = {{'p', 'p'}, {'p', 'p'}, {'p', 'p'}}; /* old dumps have no flags: periodic */
    while (mdnl_token(&p, e, &ts, &te)) {
        const size_t n = (size_t)(te - ts);
        if (n == 2 && (!memcmp(ts, "xy", 2) || !memcmp(ts, "xz", 2) || !memcmp(ts, "yz", 2))) {
            tilted = true;
        } else if (n == 2 && nflags < 3 && strchr("pfsm", ts[0]) && strchr("pfsm", ts[1])) {
            flags[nflags][0] = ts[0], flags[nflags][1] = ts[1];
            nflags++;
        } else {
            return ERR("%s:%lld: frame %lld: expected boundary flags (pp, ff, fs, sm ...) or xy xz yz after ITEM: "
                       "BOX BOUNDS, found %s",
                       WHERE, mdnl_show_text(ts, te, tmp, sizeof tmp));
        }
    }
    double lo[3], hi[3], tilt[3] = {0, 0, 0};
    for (int a = 0; a < 3; ++a) {
        const char *ls, *le;
        mdnl_status st = need_line(d, &ls, &le, "a line of box bounds");
        if (st != MDNL_OK)
            return st;
        double v[3];
        int nv = 0;
        p = ls;
        while (mdnl_token(&p, le, &ts, &te)) {
            if (nv == (tilted ? 3 : 2) || !mdnl_parse_double(ts, te, &v[nv]) || !isfinite(v[nv]))
                return ERR("%s:%lld: frame %lld: expected %d finite numbers on a box bounds line, found %s", WHERE,
                           tilted ? 3 : 2, mdnl_show_text(ls, le, tmp, sizeof tmp));
            ++nv;
        }
        if (nv != (tilted ? 3 : 2))
            return ERR("%s:%lld: frame %lld: expected %d numbers on a box bounds line, found %d", WHERE,
                       tilted ? 3 : 2, nv);
        lo[a] = v[0], hi[a] = v[1];
        if (tilted)
            tilt[a] = v[2];
    }
    const double xy = tilt[0], xz = tilt[1], yz = tilt[2];
    if (tilted) { /* bounding box -> box (LAMMPS Howto triclinic) */
        lo[0] -= fmin(fmin(0.0, xy), fmin(xz, xy + xz));
        hi[0] -= fmax(fmax(0.0, xy), fmax(xz, xy + xz));
        lo[1] -= fmin(0.0, yz);
        hi[1] -= fmax(0.0, yz);
    }
    for (int a = 0; a < 3; ++a)
        if (!(hi[a] > lo[a]) || !isfinite(hi[a] - lo[a]))
            return ERR("%s:%lld: frame %lld: expected box bounds with hi > lo on every axis, found %g %g on axis %c",
                       WHERE, lo[a], hi[a], "xyz"[a]);
    mdnl_lammps_cell(lo, hi, xy, xz, yz, box);
    for (int a = 0; a < 3; ++a) {
        box->pbc[a] = flags[a][0] == 'p' && flags[a][1] == 'p';
        origin[a] = lo[a];
    }
    return MDNL_OK;
}

/* Reads a frame's header up to and including "ITEM: ATOMS". MDNL_END at a
 * clean end of the file. */
static mdnl_status read_header(dump_reader *d, mdnl_frame *f, int64_t *natoms, dump_cols *c, double origin[3])
{
    const char *s, *e;
    int got;
    while ((got = mdnl_stream_line(d->in, &s, &e)) == 1) {
        const char *p = s, *ts, *te;
        if (mdnl_token(&p, e, &ts, &te))
            break;
    }
    if (got < 0)
        return MDNL_ERR_INPUT;
    if (got == 0) {
        if (d->frame == 0)
            return ERR("%s:%lld: expected ITEM: TIMESTEP, found an empty file", d->name,
                       (long long)mdnl_stream_lineno(d->in) + 1);
        return MDNL_END;
    }
    char tmp[200];
    if (!line_starts(s, e, "ITEM: TIMESTEP"))
        return ERR("%s:%lld: frame %lld: expected ITEM: TIMESTEP, found %s", WHERE,
                   mdnl_show_text(s, e, tmp, sizeof tmp));
    mdnl_status st;
    int64_t step = 0, n = -1;
    bool have_box = false;
    if ((st = need_line(d, &s, &e, "the timestep")) != MDNL_OK ||
        (st = parse_int64(d, s, e, "the timestep", &step)) != MDNL_OK)
        return st;
    if (f) {
        f->step = step;
        f->has_step = true;
        f->has_time = false;
        f->time = 0;
    }
    for (;;) {
        if ((st = need_line(d, &s, &e, "ITEM: ATOMS")) != MDNL_OK)
            return st;
        if (line_starts(s, e, "ITEM: NUMBER OF ATOMS")) {
            if ((st = need_line(d, &s, &e, "the number of atoms")) != MDNL_OK ||
                (st = parse_int64(d, s, e, "the number of atoms", &n)) != MDNL_OK)
                return st;
            /* The shortest atom line ("1 1 0 0 0\n") has 10 bytes. */
            if (n < 0 || (d->file_size >= 0 && n > d->file_size / 10 + 1))
                return ERR("%s:%lld: frame %lld: expected a number of atoms the file can hold, found %lld", WHERE,
                           (long long)n);
        } else if (line_starts(s, e, "ITEM: BOX BOUNDS")) {
            mdnl_box box = {0};
            if ((st = parse_box(d, s + 16, e, &box, origin)) != MDNL_OK)
                return st;
            if (f)
                f->box = box;
            have_box = true;
        } else if (line_starts(s, e, "ITEM: TIME")) {
            if ((st = need_line(d, &s, &e, "the time")) != MDNL_OK)
                return st;
            const char *p = s, *ts, *te, *u, *ue;
            double t;
            if (!mdnl_token(&p, e, &ts, &te) || !mdnl_parse_double(ts, te, &t) || !isfinite(t) ||
                mdnl_token(&p, e, &u, &ue))
                return ERR("%s:%lld: frame %lld: expected the time (a number), found %s", WHERE,
                           mdnl_show_text(s, e, tmp, sizeof tmp));
            if (f) {
                f->time = t;
                f->has_time = true;
            }
        } else if (line_starts(s, e, "ITEM: UNITS")) {
            if ((st = need_line(d, &s, &e, "the units")) != MDNL_OK)
                return st;
        } else if (line_starts(s, e, "ITEM: ATOMS")) {
            if (n < 0 || !have_box)
                return ERR("%s:%lld: frame %lld: expected ITEM: NUMBER OF ATOMS and ITEM: BOX BOUNDS before ITEM: "
                           "ATOMS, found ITEM: ATOMS",
                           WHERE);
            *natoms = n;
            return parse_columns(d, s + 11, e, c);
        } else {
            return ERR("%s:%lld: frame %lld: expected an ITEM: line (NUMBER OF ATOMS, BOX BOUNDS, ATOMS), found %s",
                       WHERE, mdnl_show_text(s, e, tmp, sizeof tmp));
        }
    }
}

/* Atoms [i0, i1) of a frame of columns c into f (which has room for them,
 * or grows as they come when tab is f), their species ids from tab's table
 * and their ids into ids. One thread: tab is f, [0, n); a piece of a split
 * frame: its own table, and f and ids are the frame's. */
static mdnl_status parse_atoms(dump_reader *d, const dump_cols *c, const double origin[3], mdnl_frame *f,
                               mdnl_frame *tab, mdnl_lammps_ids *ids, int64_t i0, int64_t i1)
{
    mdnl_status st;
    int last = c->id;
    const int cols[5] = {c->type, c->element, c->pos[0], c->pos[1], c->pos[2]};
    for (int k = 0; k < 5; ++k)
        last = cols[k] > last ? cols[k] : last;
    const int sp_col = c->element >= 0 ? c->element : c->type;
    const bool scaled = c->kind == POS_XS || c->kind == POS_XSU;
    int32_t last_id = -1;
    const char *last_s = NULL;
    size_t last_len = 0;
    char last_tok[MDNL_SYMBOL_LEN + 16];
    char tmp[200];
    for (int64_t i = i0; i < i1; ++i) {
        const char *s, *e;
        if ((st = need_line(d, &s, &e, "an atom line")) != MDNL_OK)
            return st;
        if (i >= f->capacity && (st = mdnl_frame_reserve(f, i + 1)) != MDNL_OK)
            return st;
        if (c->id >= 0 && (st = mdnl_lammps_ids_reserve(ids, i + 1)) != MDNL_OK)
            return st;
        const char *p = s, *ts, *te;
        double xyz[3] = {0, 0, 0};
        int col = 0;
        for (; col <= last && mdnl_token(&p, e, &ts, &te); ++col) {
            if (col == c->pos[0] || col == c->pos[1] || col == c->pos[2]) {
                const int a = col == c->pos[0] ? 0 : col == c->pos[1] ? 1 : 2;
                if (!mdnl_parse_double(ts, te, &xyz[a]) || !isfinite(xyz[a]))
                    return ERR("%s:%lld: frame %lld: expected a finite number for coordinate %c of atom %lld, found "
                               "%s",
                               WHERE, "xyz"[a], (long long)i, mdnl_show_text(ts, te, tmp, sizeof tmp));
            } else if (col == sp_col) {
                const size_t len = (size_t)(te - ts);
                if (last_s && len == last_len && !memcmp(last_tok, ts, len)) {
                    f->species[i] = last_id;
                } else {
                    int32_t id = mdnl_lammps_species(tab, &d->types, ts, te);
                    if (id < 0) {
                        char msg[256];
                        snprintf(msg, sizeof msg, "%s", mdnl_last_error());
                        return ERR("%s:%lld: frame %lld: atom %lld: %s", WHERE, (long long)i, msg);
                    }
                    f->species[i] = last_id = id;
                    if (len < sizeof last_tok) {
                        memcpy(last_tok, ts, len);
                        last_s = last_tok, last_len = len;
                    } else {
                        last_s = NULL;
                    }
                }
            } else if (col == c->id) {
                int64_t v;
                if ((st = parse_int64(d, ts, te, "an atom id", &v)) != MDNL_OK)
                    return st;
                ids->id[i] = v;
            }
        }
        if (col <= last)
            return ERR("%s:%lld: frame %lld: expected %d columns for atom %lld, found %d: %s", WHERE, c->ncols,
                       (long long)i, col, mdnl_show_text(s, e, tmp, sizeof tmp));
        if (scaled) {
            const double(*h)[3] = (const double(*)[3])f->box.h;
            for (int a = 0; a < 3; ++a)
                f->pos[i][a] = origin[a] + xyz[0] * h[0][a] + xyz[1] * h[1][a] + xyz[2] * h[2][a];
            for (int a = 0; a < 3; ++a)
                if (!isfinite(f->pos[i][a]))
                    return ERR("%s:%lld: frame %lld: expected scaled coordinates that give finite positions, found "
                               "%s",
                               WHERE, mdnl_show_text(s, e, tmp, sizeof tmp));
        } else {
            f->pos[i][0] = xyz[0], f->pos[i][1] = xyz[1], f->pos[i][2] = xyz[2];
        }
        if (tab == f) /* one thread; a piece leaves natoms to the pool */
            f->natoms = i + 1;
    }
    return MDNL_OK;
}

static mdnl_status dump_next(void *state, mdnl_frame *f)
{
    dump_reader *d = state;
    if (d->pool)
        return mdnl_text_pool_next(d->pool, f);
    int64_t n;
    dump_cols c;
    double origin[3] = {0, 0, 0};
    mdnl_text_begin_frame(f, d->frame);
    mdnl_status st = read_header(d, f, &n, &c, origin);
    if (st != MDNL_OK)
        return st;
    if ((st = mdnl_frame_reserve(f, n < (1 << 16) ? n : (1 << 16))) != MDNL_OK)
        return st;
    if ((st = parse_atoms(d, &c, origin, f, f, &d->ids, 0, n)) != MDNL_OK)
        return st;
    if (c.id >= 0 && (st = mdnl_lammps_order_by_id(&d->ids, f, d->name, d->frame)) != MDNL_OK)
        return st;
    d->frame++;
    return MDNL_OK;
}

static mdnl_status dump_skip(void *state)
{
    dump_reader *d = state;
    if (d->pool)
        return mdnl_text_pool_skip(d->pool);
    int64_t n;
    dump_cols c;
    double origin[3];
    mdnl_status st = read_header(d, NULL, &n, &c, origin);
    if (st != MDNL_OK)
        return st;
    for (int64_t i = 0; i < n; ++i) {
        const char *s, *e;
        if ((st = need_line(d, &s, &e, "an atom line")) != MDNL_OK)
            return st;
    }
    d->frame++;
    return MDNL_OK;
}

static void dump_close(void *state)
{
    dump_reader *d = state;
    if (!d)
        return;
    mdnl_text_pool_close(d->pool);
    if (d->own_stream)
        mdnl_stream_close(d->in);
    mdnl_lammps_ids_free(&d->ids);
    free(d);
}

/* ---- the reader pool (io/text_pool.h): each state is a dump reader over a
 * memory stream, so frames are parsed by dump_next above ---- */

static void *pool_state_new(void *ctx)
{
    const dump_reader *main = ctx;
    dump_reader *d = mdnl_calloc(1, sizeof *d, "LAMMPS dump reader");
    if (!d)
        return NULL;
    if (mdnl_stream_open_memory(main->name, &d->in) != MDNL_OK) {
        free(d);
        return NULL;
    }
    d->own_stream = true;
    d->name = mdnl_stream_name(d->in);
    d->file_size = main->file_size;
    d->types = main->types;
    return d;
}

static void pool_on(dump_reader *d, const mdnl_text_frame *t, size_t len)
{
    mdnl_stream_set_memory(d->in, t->text, len, t->line, t->end_status, t->end_message);
    d->frame = t->index;
}

/* The header by read_header itself, on the complete lines so far: when it
 * stops at the last of them before the end of the file, more text may
 * carry it on. */
static int pool_head(void *state, const mdnl_text_frame *t, bool eof, int64_t *nlines, int64_t *natoms,
                     size_t *drop_bytes, int64_t *drop_lines)
{
    dump_reader *d = state;
    *drop_bytes = 0, *drop_lines = 0;
    size_t len = t->len;
    if (!eof)
        while (len > 0 && t->text[len - 1] != '\n')
            --len;
    pool_on(d, t, len);
    dump_cols c;
    double origin[3];
    int64_t n = 0;
    mdnl_status st = read_header(d, NULL, &n, &c, origin);
    if (st != MDNL_OK && !eof) {
        int64_t lines = 0; /* complete lines; the leading blank ones may go */
        const char *q = t->text, *nl, *text = NULL;
        for (; (nl = memchr(q, '\n', (size_t)(t->text + len - q))); q = nl + 1, ++lines) {
            const char *p = q, *ts, *te;
            if (!text && mdnl_token(&p, nl, &ts, &te))
                text = q;
            if (!text)
                *drop_bytes = (size_t)(nl + 1 - t->text), *drop_lines = lines + 1;
        }
        if (mdnl_stream_lineno(d->in) >= t->line + lines) {
            mdnl_clear_error();
            return MDNL_TEXT_MORE;
        }
        *drop_bytes = 0, *drop_lines = 0;
    }
    if (st != MDNL_OK)
        return st;
    *natoms = n;
    *nlines = mdnl_stream_lineno(d->in) - t->line + n;
    return MDNL_OK;
}

static mdnl_status pool_parse(void *state, const mdnl_text_frame *t, mdnl_frame *f)
{
    pool_on(state, t, t->len);
    return dump_next(state, f);
}

static mdnl_status pool_skip(void *state, const mdnl_text_frame *t)
{
    pool_on(state, t, t->len);
    return dump_skip(state);
}

/* A split frame: its header as dump_next reads it, with room for all its
 * atoms and ids; its pieces' atoms by parse_atoms, ids into the header's
 * state; then the atoms in order of id, as one thread orders them. */
static mdnl_status pool_header(void *state, const mdnl_text_frame *t, int64_t natoms, mdnl_frame *f)
{
    dump_reader *d = state;
    pool_on(d, t, t->len);
    mdnl_text_begin_frame(f, d->frame);
    memset(d->hdr_origin, 0, sizeof d->hdr_origin);
    mdnl_status st = read_header(d, f, &d->hdr_n, &d->hdr_cols, d->hdr_origin);
    if (st == MDNL_OK && d->hdr_n != natoms)
        st = mdnl_error(MDNL_ERR_INTERNAL, "reader pool: a count of %lld atoms, %lld expected", (long long)d->hdr_n,
                        (long long)natoms);
    if (st == MDNL_OK && d->hdr_cols.id >= 0)
        st = mdnl_lammps_ids_reserve(&d->ids, natoms);
    return st == MDNL_OK ? mdnl_frame_reserve(f, natoms) : st;
}

static mdnl_status pool_piece(void *state, void *header_state, const mdnl_text_frame *t, int64_t i0, int64_t i1,
                              mdnl_frame *f, mdnl_frame *tab)
{
    dump_reader *d = state, *h = header_state;
    pool_on(d, t, t->len);
    return parse_atoms(d, &h->hdr_cols, h->hdr_origin, f, tab, &h->ids, i0, i1);
}

static mdnl_status pool_finish(void *header_state, mdnl_frame *f)
{
    dump_reader *h = header_state;
    return h->hdr_cols.id >= 0 ? mdnl_lammps_order_by_id(&h->ids, f, h->name, h->frame) : MDNL_OK;
}

static const mdnl_text_ops dump_pool_ops = {
    .state_new = pool_state_new,
    .state_free = dump_close,
    .head = pool_head,
    .parse = pool_parse,
    .skip = pool_skip,
    .header = pool_header,
    .piece = pool_piece,
    .finish = pool_finish,
};

static void dump_select(void *state, int64_t start, int64_t stop, int64_t step)
{
    dump_reader *d = state;
    if (d->pool)
        mdnl_text_pool_select(d->pool, start, stop, step);
}

static mdnl_status dump_open(const mdnl_format_input *in, void **state)
{
    dump_reader *d = mdnl_calloc(1, sizeof *d, "LAMMPS dump reader");
    if (!d)
        return MDNL_ERR_RESOURCE;
    d->in = in->stream;
    d->name = in->name;
    d->file_size = mdnl_stream_size(in->stream);
    mdnl_status st = mdnl_lammps_types_parse(in->opt->types, &d->types);
    if (st == MDNL_OK && in->opt->threads > 1)
        st = mdnl_text_pool_open(&dump_pool_ops, d, d->in, in->opt->threads, &d->pool);
    if (st != MDNL_OK) {
        dump_close(d);
        return st;
    }
    *state = d;
    return MDNL_OK;
}

static const char *dump_info(void *state, const char *key)
{
    (void)state;
    return strcmp(key, "units") == 0 ? "the simulation's (LAMMPS units style)" : NULL;
}

static int dump_sniff(const unsigned char *h, size_t n)
{
    size_t k = 0;
    while (k < n && (h[k] == ' ' || h[k] == '\t' || h[k] == '\r' || h[k] == '\n'))
        ++k;
    return n - k >= 14 && memcmp(h + k, "ITEM: TIMESTEP", 14) == 0 ? MDNL_SNIFF_SURE : MDNL_SNIFF_NO;
}

const mdnl_format mdnl_format_lammps_dump = {
    .name = "lammps-dump", .extensions = ".lammpstrj .lammpsdump .dump", .stream = true, .sniff = dump_sniff,
    .open = dump_open, .next = dump_next, .skip = dump_skip, .info = dump_info, .close = dump_close,
    .select = dump_select,
};

/* pdb_reader.c — PDB files, one frame per MODEL ... ENDMDL (or the whole
 * file, up to END, when there are no MODEL records), through io/stream.h.
 * Registered in io/reader.c as "pdb".
 *
 * Read: ATOM and HETATM records (x, y, z in columns 31-54, Å; the element
 * in columns 77-78 as a symbol ("CU" -> "Cu"), else the atom name of columns
 * 13-16, trimmed) and CRYST1
 * (a, b, c, alpha, beta, gamma -> lattice vectors in the standard setting:
 * a along x, b in the xy plane), which holds for every model after it and is
 * periodic in x, y, z; the placeholder cell 1 1 1 90 90 90 means no cell.
 * Everything else (CONECT, REMARK, TER, ...) is skipped.
 *
 * With --threads > 1 the frames come from the text reader pool
 * (io/text_pool.h): its scanner finds where each model ends from the record
 * names alone and follows the CRYST1 records, so that each frame is parsed
 * by read_model below, on a worker, with the cell in force at its start. */
#define _POSIX_C_SOURCE 200809L
#include "reader.h"
#include "text_pool.h"
#include "xyz_reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pdb_reader {
    mdnl_stream *in;
    const char *name;
    int64_t frame;
    mdnl_box box;         /* the last CRYST1 */
    mdnl_text_pool *pool; /* --threads > 1: frames come from the reader pool */
    bool own_stream;      /* a pool state's memory stream */
    /* the pool's scanner: how far head() got into the frame it is cutting */
    int64_t scan_index, scan_lines, scan_atoms;
    size_t scan_off;
    bool scan_started, scan_keep; /* scan_keep: a line before which text may not be dropped */
    mdnl_box start_box; /* the cell in force where that frame starts */
} pdb_reader;

#define ERR(...) mdnl_error(MDNL_ERR_INPUT, __VA_ARGS__)
#define WHERE p->name, (long long)mdnl_stream_lineno(p->in), (long long)p->frame

static bool record(const char *s, const char *e, const char *name)
{
    const size_t n = strlen(name);
    return (size_t)(e - s) >= n && memcmp(s, name, n) == 0;
}

/* The number in columns [c0, c1) (1-based, inclusive c0, exclusive c1+1). */
static bool field(const char *s, const char *e, int c0, int c1, double *v)
{
    if (e - s < c0)
        return false;
    const char *fs = s + c0 - 1, *fe = s + c1 <= e ? s + c1 : e, *ts, *te, *q = fs, *u, *ue;
    return mdnl_token(&q, fe, &ts, &te) && !mdnl_token(&q, fe, &u, &ue) && mdnl_parse_double(ts, te, v) &&
           isfinite(*v);
}

static mdnl_status parse_cryst1(pdb_reader *p, const char *s, const char *e)
{
    double v[6];
    static const int cols[6][2] = {{7, 15}, {16, 24}, {25, 33}, {34, 40}, {41, 47}, {48, 54}};
    char tmp[200];
    for (int k = 0; k < 6; ++k)
        if (!field(s, e, cols[k][0], cols[k][1], &v[k]))
            return ERR("%s:%lld: frame %lld: expected a b c alpha beta gamma in CRYST1 columns 7-54, found %s", WHERE,
                       mdnl_show_text(s, e, tmp, sizeof tmp));
    memset(&p->box, 0, sizeof p->box);
    if (v[0] == 1 && v[1] == 1 && v[2] == 1 && v[3] == 90 && v[4] == 90 && v[5] == 90)
        return MDNL_OK; /* the placeholder of a file without a cell */
    const double deg = acos(-1.0) / 180.0;
    const double ca = cos(v[3] * deg), cb = cos(v[4] * deg), cg = v[5] == 90 ? 0 : cos(v[5] * deg);
    const double sg = sin(v[5] * deg);
    const double cy = (ca - cb * cg) / sg, cz2 = 1 - cb * cb - cy * cy;
    if (!(v[0] > 0 && v[1] > 0 && v[2] > 0) || !(sg > 0) || !(cz2 > 0))
        return ERR("%s:%lld: frame %lld: expected a CRYST1 cell of positive lengths and non-zero volume, found %s",
                   WHERE, mdnl_show_text(s, e, tmp, sizeof tmp));
    p->box.h[0][0] = v[0];
    p->box.h[1][0] = v[1] * cg;
    p->box.h[1][1] = v[1] * sg;
    p->box.h[2][0] = v[2] * cb;
    p->box.h[2][1] = v[2] * cy;
    p->box.h[2][2] = v[2] * sqrt(cz2);
    p->box.has_lattice = true;
    p->box.pbc[0] = p->box.pbc[1] = p->box.pbc[2] = true;
    return MDNL_OK;
}

static mdnl_status add_atom(pdb_reader *p, mdnl_frame *f, const char *s, const char *e)
{
    char tmp[200];
    const int64_t i = f->natoms;
    double x[3];
    for (int a = 0; a < 3; ++a)
        if (!field(s, e, 31 + 8 * a, 38 + 8 * a, &x[a]))
            return ERR("%s:%lld: frame %lld: expected a finite number for coordinate %c of atom %lld in columns "
                       "%d-%d, found %s",
                       WHERE, "xyz"[a], (long long)i, 31 + 8 * a, 38 + 8 * a, mdnl_show_text(s, e, tmp, sizeof tmp));
    mdnl_status st;
    if (i >= f->capacity && (st = mdnl_frame_reserve(f, i < 1024 ? 1024 : 2 * i)) != MDNL_OK)
        return st;
    const char *ns = NULL, *ne = NULL;
    if (e - s >= 77) { /* the element, columns 77-78 */
        ns = s + 76;
        ne = e - s >= 78 ? s + 78 : e;
        while (ns < ne && mdnl_is_space(*ns))
            ++ns;
        while (ne > ns && mdnl_is_space(ne[-1]))
            --ne;
    }
    const bool from_element = ns && ns < ne;
    if (!from_element) { /* the atom name, columns 13-16 */
        ns = e - s > 12 ? s + 12 : e;
        ne = e - s >= 16 ? s + 16 : e;
        while (ns < ne && mdnl_is_space(*ns))
            ++ns;
        while (ne > ns && mdnl_is_space(ne[-1]))
            --ne;
    }
    if (ns == ne)
        return ERR("%s:%lld: frame %lld: expected an element (columns 77-78) or atom name (columns 13-16) for atom "
                   "%lld, found neither",
                   WHERE, (long long)i);
    char sym[8];
    size_t sl = (size_t)(ne - ns) < sizeof sym ? (size_t)(ne - ns) : sizeof sym - 1;
    memcpy(sym, ns, sl);
    if (from_element) /* PDB writes elements in capitals: "CU" is Cu */
        for (size_t k = 1; k < sl; ++k)
            sym[k] = (char)(sym[k] >= 'A' && sym[k] <= 'Z' ? sym[k] - 'A' + 'a' : sym[k]);
    int32_t id = (size_t)(ne - ns) < sizeof sym ? mdnl_frame_species_id(f, sym, sl)
                                                 : mdnl_frame_species_id(f, ns, (size_t)(ne - ns));
    if (id < 0) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s", mdnl_last_error());
        return ERR("%s:%lld: frame %lld: atom %lld: %s", WHERE, (long long)i, msg);
    }
    f->species[i] = id;
    for (int a = 0; a < 3; ++a)
        f->pos[i][a] = x[a];
    f->natoms = i + 1;
    return MDNL_OK;
}

/* Reads one model into f (NULL: skip it). */
static mdnl_status read_model(pdb_reader *p, mdnl_frame *f)
{
    if (f) {
        f->natoms = 0;
        f->nspecies = 0;
        f->species_tag = 0;
        f->index = p->frame;
        f->has_step = f->has_time = false;
        f->time = 0;
    }
    bool started = false;
    mdnl_status st = MDNL_OK;
    const char *s, *e;
    int got;
    int64_t atoms = 0;
    while ((got = mdnl_stream_line(p->in, &s, &e)) == 1) {
        if (record(s, e, "ATOM  ") || record(s, e, "HETATM")) {
            started = true;
            if (f) {
                if ((st = add_atom(p, f, s, e)) != MDNL_OK)
                    break;
            } else { /* skipping: only check the coordinates */
                double x;
                for (int a = 0; a < 3 && st == MDNL_OK; ++a)
                    if (!field(s, e, 31 + 8 * a, 38 + 8 * a, &x))
                        st = ERR("%s:%lld: frame %lld: expected a finite number for coordinate %c of atom %lld in "
                                 "columns %d-%d",
                                 WHERE, "xyz"[a], (long long)atoms, 31 + 8 * a, 38 + 8 * a);
                if (st != MDNL_OK)
                    break;
            }
            ++atoms;
        } else if (record(s, e, "CRYST1")) {
            if ((st = parse_cryst1(p, s, e)) != MDNL_OK)
                break;
        } else if (record(s, e, "MODEL")) {
            if (started) {
                st = ERR("%s:%lld: frame %lld: expected ENDMDL before the next MODEL, found MODEL", WHERE);
                break;
            }
            started = true;
        } else if (record(s, e, "ENDMDL")) {
            if (started)
                break;
        } else if (record(s, e, "END") && (e - s == 3 || mdnl_is_space(s[3]))) {
            if (started)
                break;
        }
    }
    if (got < 0)
        st = MDNL_ERR_INPUT;
    if (st != MDNL_OK)
        return st;
    if (!started) {
        if (p->frame == 0)
            return ERR("%s:%lld: expected ATOM or HETATM records, found none", p->name,
                       (long long)mdnl_stream_lineno(p->in));
        return MDNL_END;
    }
    if (f)
        f->box = p->box;
    p->frame++;
    return MDNL_OK;
}

static mdnl_status pdb_next(void *state, mdnl_frame *f)
{
    pdb_reader *p = state;
    return p->pool ? mdnl_text_pool_next(p->pool, f) : read_model(p, f);
}

static mdnl_status pdb_skip(void *state)
{
    pdb_reader *p = state;
    return p->pool ? mdnl_text_pool_skip(p->pool) : read_model(p, NULL);
}

static void pdb_close(void *state)
{
    pdb_reader *p = state;
    if (!p)
        return;
    mdnl_text_pool_close(p->pool);
    if (p->own_stream)
        mdnl_stream_close(p->in);
    free(p);
}

/* ---- the reader pool (io/text_pool.h): each state is a PDB reader over a
 * memory stream, so frames are parsed by read_model above ---- */

static void *pool_state_new(void *ctx)
{
    const pdb_reader *main = ctx;
    pdb_reader *p = mdnl_calloc(1, sizeof *p, "PDB reader");
    if (!p)
        return NULL;
    if (mdnl_stream_open_memory(main->name, &p->in) != MDNL_OK) {
        free(p);
        return NULL;
    }
    p->own_stream = true;
    p->name = mdnl_stream_name(p->in);
    p->scan_index = -1;
    return p;
}

/* A frame's end, from the record names as read_model reads them: after
 * the ENDMDL or END that closes a model, or after a MODEL inside one (the
 * error read_model reports there). CRYST1 records are followed for the
 * frames after (a bad one is left to the worker that parses its frame).
 * Text at the end of the file that holds no atoms is a frame too: read_model
 * finds the end in it, or an error. A line too long for a stream ends the
 * frame: the worker reports it after the lines before it, as one thread.
 * The lines before a model's first record (REMARK, CONECT, a CRYST1 that
 * parses, ...) are dropped as they come, so that text without models is not
 * buffered whole. */
static int pool_head(void *state, const mdnl_text_frame *t, bool eof, int64_t *nlines, int64_t *natoms,
                     size_t *drop_bytes, int64_t *drop_lines)
{
    pdb_reader *p = state;
    *drop_bytes = 0, *drop_lines = 0;
    if (p->scan_index != t->index) { /* a new frame; else more text for the same one */
        p->scan_index = t->index;
        p->scan_off = 0, p->scan_lines = 0, p->scan_atoms = 0;
        p->scan_started = p->scan_keep = false;
        p->start_box = p->box;
    }
    const char *text = t->text, *end = text + t->len;
    size_t off = p->scan_off;
    bool done = false;
    while (!done && off < t->len) {
        const char *s = text + off, *nl = memchr(s, '\n', (size_t)(end - s)), *e = nl ? nl : end;
        if (!nl && !eof) { /* a partial line: wait for the rest, unless it is too long already */
            if ((size_t)(end - s) > MDNL_STREAM_MAX_LINE) { /* its error comes after the lines before it */
                p->scan_lines++;
                done = true;
            }
            break;
        }
        off = nl ? (size_t)(nl - text) + 1 : t->len;
        p->scan_lines++;
        if (e > s && e[-1] == '\r')
            --e;
        if (record(s, e, "ATOM  ") || record(s, e, "HETATM")) {
            p->scan_started = p->scan_keep = true;
            p->scan_atoms++;
        } else if (record(s, e, "CRYST1")) {
            if (parse_cryst1(p, s, e) != MDNL_OK) { /* the worker reports it */
                mdnl_clear_error();
                p->scan_keep = true;
            }
        } else if (record(s, e, "MODEL")) {
            done = p->scan_started;
            p->scan_started = p->scan_keep = true;
        } else if (record(s, e, "ENDMDL") || (record(s, e, "END") && (e - s == 3 || mdnl_is_space(s[3])))) {
            done = p->scan_started;
        }
    }
    p->scan_off = off;
    if (!done && !eof) {
        if (!p->scan_keep) { /* lines before a model that read_model passes over: dropped, their cell kept */
            *drop_bytes = off, *drop_lines = p->scan_lines;
            p->scan_off = 0, p->scan_lines = 0;
            p->start_box = p->box;
        }
        return MDNL_TEXT_MORE;
    }
    p->scan_index = -1;
    if (p->scan_lines == 0 && t->index > 0)
        return MDNL_END; /* (an empty file is frame 0's error) */
    *nlines = p->scan_lines;
    *natoms = p->scan_atoms;
    return MDNL_OK;
}

static void pool_context(void *state, void *out)
{
    memcpy(out, &((const pdb_reader *)state)->start_box, sizeof(mdnl_box));
}

static void pool_on(pdb_reader *p, const mdnl_text_frame *t)
{
    mdnl_stream_set_memory(p->in, t->text, t->len, t->line, t->end_status, t->end_message);
    p->frame = t->index;
    memcpy(&p->box, t->context, sizeof p->box);
}

static mdnl_status pool_parse(void *state, const mdnl_text_frame *t, mdnl_frame *f)
{
    pool_on(state, t);
    return read_model(state, f);
}

static mdnl_status pool_skip(void *state, const mdnl_text_frame *t)
{
    pool_on(state, t);
    return read_model(state, NULL);
}

static const mdnl_text_ops pdb_pool_ops = {
    .state_new = pool_state_new,
    .state_free = pdb_close,
    .head = pool_head,
    .parse = pool_parse,
    .skip = pool_skip,
    .context = pool_context,
    .check_skipped = true, /* skipping checks the coordinates and CRYST1 */
};

static void pdb_select(void *state, int64_t start, int64_t stop, int64_t step)
{
    pdb_reader *p = state;
    if (p->pool)
        mdnl_text_pool_select(p->pool, start, stop, step);
}

static mdnl_status pdb_open(const mdnl_format_input *in, void **state)
{
    pdb_reader *p = mdnl_calloc(1, sizeof *p, "PDB reader");
    if (!p)
        return MDNL_ERR_RESOURCE;
    p->in = in->stream;
    p->name = in->name;
    if (in->opt->threads > 1) {
        mdnl_status st = mdnl_text_pool_open(&pdb_pool_ops, p, p->in, in->opt->threads, &p->pool);
        if (st != MDNL_OK) {
            pdb_close(p);
            return st;
        }
    }
    *state = p;
    return MDNL_OK;
}

static const char *pdb_info(void *state, const char *key)
{
    (void)state;
    return strcmp(key, "units") == 0 ? "angstrom" : NULL;
}

/* Every line of the head starts with a PDB record name, and one of them is
 * ATOM, HETATM, CRYST1 or MODEL. */
static int pdb_sniff(const unsigned char *h, size_t n)
{
    static const char *const names[] = {"HEADER", "TITLE ", "REMARK", "CRYST1", "MODEL ", "ATOM  ", "HETATM",
                                        "COMPND", "AUTHOR", "EXPDTA", "SOURCE", "KEYWDS", "JRNL  ", "SCALE",
                                        "ORIGX",  "TER",    "ENDMDL", "CONECT", "SEQRES", "HELIX ", "SHEET ",
                                        "END",    "MASTER", "ANISOU", "LINK  ", "SSBOND", "HET   ", "FORMUL",
                                        "HETNAM", "REVDAT", "DBREF",  "SPRSDE", "NUMMDL", "CISPEP", "SITE  ",
                                        "MODRES", "SEQADV", "OBSLTE", "SPLIT ", "CAVEAT", "MDLTYP", "HETSYN"};
    const unsigned char *p = h, *end = h + n;
    bool key = false;
    int lines = 0;
    while (p < end) {
        const unsigned char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break; /* a partial last line says nothing */
        bool known = false;
        for (size_t k = 0; k < sizeof names / sizeof *names && !known; ++k) {
            const size_t l = strlen(names[k]);
            known = (size_t)(nl - p) >= l && memcmp(p, names[k], l) == 0;
        }
        if (!known)
            return MDNL_SNIFF_NO;
        if (nl - p >= 6 && (!memcmp(p, "ATOM  ", 6) || !memcmp(p, "HETATM", 6) || !memcmp(p, "CRYST1", 6) ||
                            !memcmp(p, "MODEL ", 6)))
            key = true;
        ++lines;
        p = nl + 1;
    }
    return lines && key ? MDNL_SNIFF_SURE : lines ? MDNL_SNIFF_MAYBE : MDNL_SNIFF_NO;
}

const mdnl_format mdnl_format_pdb = {
    .name = "pdb", .extensions = ".pdb .ent", .stream = true, .sniff = pdb_sniff, .open = pdb_open,
    .next = pdb_next, .skip = pdb_skip, .info = pdb_info, .close = pdb_close, .select = pdb_select,
};

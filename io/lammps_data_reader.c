/* lammps_data_reader.c — LAMMPS data files (write_data, read_data), one
 * frame, through io/stream.h. Registered in io/reader.c as "lammps-data".
 *
 * Read: the header ("N atoms", "xlo xhi", "ylo yhi", "zlo zhi", "xy xz yz";
 * other counts are ignored; "timestep = N" in the first line is the step),
 * the Masses section (reported by info only) and the Atoms section in the
 * atom styles atomic (id type x y z), charge (id type q x y z), molecular
 * (id mol type x y z) and full (id mol type q x y z), each optionally
 * followed by image flags. The style comes from --atom-style, else the
 * "Atoms # style" comment, else the column count when it decides (5 or 8:
 * atomic, 7 or 10: full). Other sections are skipped. Rows are put in order
 * of their ids; species are the types, through --types. A data file does not
 * say its boundaries: the box is periodic in x, y, z (LAMMPS' default). */
#define _POSIX_C_SOURCE 200809L
#include "lammps_common.h"
#include "reader.h"
#include "xyz_reader.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum style { ATOMIC, CHARGE, MOLECULAR, FULL, UNKNOWN };
static const char *const style_names[] = {"atomic", "charge", "molecular", "full"};
static const int style_type_col[] = {1, 1, 2, 2}, style_pos_col[] = {2, 3, 3, 4}, style_cols[] = {5, 6, 6, 7};

typedef struct data_reader {
    mdnl_stream *in;
    const char *name;
    bool done;
    enum style forced;
    mdnl_lammps_types types;
    char masses[4096];
    int64_t file_size;
} data_reader;

#define ERR(...) mdnl_error(MDNL_ERR_INPUT, __VA_ARGS__)
#define WHERE d->name, (long long)mdnl_stream_lineno(d->in)

static bool ends_with_words(const char *s, const char *e, const char *words)
{
    /* compares the tokens of [s, e) after the numbers with `words` */
    const char *p = s, *ts, *te;
    const char *w = words;
    bool numbers = true, any = false;
    while (mdnl_token(&p, e, &ts, &te)) {
        if (*ts == '#')
            break;
        double v;
        if (numbers && mdnl_parse_double(ts, te, &v))
            continue;
        numbers = false;
        while (*w == ' ')
            ++w;
        const size_t n = (size_t)(te - ts);
        /* memcmp within the word list (a token may hold a NUL byte: found by
         * tests/fuzz/fuzz_lammps_data) */
        if (n > strlen(w) || memcmp(w, ts, n) != 0 || (w[n] != ' ' && w[n] != '\0'))
            return false;
        w += n;
        any = true;
    }
    while (*w == ' ')
        ++w;
    return any && *w == '\0';
}

/* The leading numbers of a header line: returns how many were read. */
static int numbers(const char *s, const char *e, double *v, int max)
{
    const char *p = s, *ts, *te;
    int n = 0;
    while (n < max && mdnl_token(&p, e, &ts, &te) && mdnl_parse_double(ts, te, &v[n]) && isfinite(v[n]))
        ++n;
    return n;
}

static enum style style_of(const char *s, size_t n)
{
    for (int k = 0; k < 4; ++k)
        if (strlen(style_names[k]) == n && !memcmp(style_names[k], s, n))
            return (enum style)k;
    return UNKNOWN;
}

static bool is_section(const char *s, const char *e)
{
    const char *p = s, *ts, *te;
    return mdnl_token(&p, e, &ts, &te) && ((*ts >= 'A' && *ts <= 'Z') || (*ts >= 'a' && *ts <= 'z'));
}

/* The Atoms section's n lines into f, in order of their ids. Arrays grow
 * as lines are read, so a count the file does not hold allocates nothing
 * (on a pipe or compressed input, where the size is unknown, too). */
static mdnl_status read_atoms(data_reader *d, mdnl_frame *f, int64_t n, enum style style)
{
    char tmp[200];
    mdnl_lammps_ids ids = {0};
    mdnl_status st = mdnl_frame_reserve(f, n < (1 << 16) ? n : (1 << 16));
    const char *s, *e;
    int64_t i = 0;
    while (st == MDNL_OK && i < n) {
        int got = mdnl_stream_line(d->in, &s, &e);
        if (got < 0) {
            st = MDNL_ERR_INPUT;
            break;
        }
        if (got == 0) {
            st = ERR("%s:%lld: expected %lld atom lines in Atoms, found %lld (the file ends)", d->name,
                     (long long)mdnl_stream_lineno(d->in) + 1, (long long)n, (long long)i);
            break;
        }
        const char *p = s, *tok[12], *tend[12];
        int nt = 0;
        while (nt < 12 && mdnl_token(&p, e, &tok[nt], &tend[nt]) && *tok[nt] != '#')
            ++nt;
        if (nt == 0)
            continue; /* the blank line after the section name */
        if (style == UNKNOWN) {
            if (nt == 5 || nt == 8)
                style = ATOMIC;
            else if (nt == 7 || nt == 10)
                style = FULL;
            else {
                st = ERR("%s:%lld: expected the atom style in \"Atoms # STYLE\" or --atom-style (atomic, charge, "
                         "molecular, full), found %d columns and no style",
                         WHERE, nt);
                break;
            }
        }
        const int want = style_cols[style];
        if (nt != want && nt != want + 3) {
            st = ERR("%s:%lld: expected %d columns (or %d with image flags) for atom style %s, found %d: %s", WHERE,
                     want, want + 3, style_names[style], nt, mdnl_show_text(s, e, tmp, sizeof tmp));
            break;
        }
        if ((i >= f->capacity && (st = mdnl_frame_reserve(f, i + 1)) != MDNL_OK) ||
            (st = mdnl_lammps_ids_reserve(&ids, i + 1)) != MDNL_OK)
            break;
        double id;
        if (!mdnl_parse_double(tok[0], tend[0], &id) || id != floor(id) || fabs(id) > 9e15) {
            st = ERR("%s:%lld: expected an atom id (an integer), found %s", WHERE,
                     mdnl_show_text(tok[0], tend[0], tmp, sizeof tmp));
            break;
        }
        ids.id[i] = (int64_t)id;
        for (int a = 0; a < 3 && st == MDNL_OK; ++a) {
            const int c = style_pos_col[style] + a;
            if (!mdnl_parse_double(tok[c], tend[c], &f->pos[i][a]) || !isfinite(f->pos[i][a]))
                st = ERR("%s:%lld: expected a finite number for coordinate %c of atom %lld, found %s", WHERE, "xyz"[a],
                         (long long)i, mdnl_show_text(tok[c], tend[c], tmp, sizeof tmp));
        }
        if (st != MDNL_OK)
            break;
        const int tc = style_type_col[style];
        if ((f->species[i] = mdnl_lammps_species(f, &d->types, tok[tc], tend[tc])) < 0) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s", mdnl_last_error());
            st = ERR("%s:%lld: atom %lld: %s", WHERE, (long long)i, msg);
            break;
        }
        f->natoms = ++i;
    }
    if (st == MDNL_OK)
        st = mdnl_lammps_order_by_id(&ids, f, d->name, 0);
    mdnl_lammps_ids_free(&ids);
    return st;
}

static mdnl_status data_next(void *state, mdnl_frame *f)
{
    data_reader *d = state;
    if (d->done)
        return MDNL_END;
    char tmp[200];
    f->natoms = 0;
    f->nspecies = 0;
    f->species_tag = 0;
    f->index = 0;
    f->has_step = f->has_time = false;
    f->time = 0;
    memset(&f->box, 0, sizeof f->box);
    const char *s, *e;
    int got = mdnl_stream_line(d->in, &s, &e); /* the title */
    if (got < 0)
        return MDNL_ERR_INPUT;
    if (got == 0)
        return ERR("%s:1: expected a LAMMPS data file, found an empty file", d->name);
    const char *ts = NULL;
    for (const char *q = s; q + 10 <= e && !ts; ++q)
        if (!memcmp(q, "timestep =", 10))
            ts = q;
    if (ts) {
        double v[1];
        if (numbers(ts + 10, e, v, 1) == 1 && v[0] == floor(v[0]) && fabs(v[0]) < 9e18) {
            f->step = (int64_t)v[0];
            f->has_step = true;
        }
    }
    int64_t natoms = -1;
    double lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}, tilt[3] = {0, 0, 0};
    bool have[3] = {false, false, false}, atoms_read = false;
    d->masses[0] = '\0';
    bool pending = false; /* [s, e) is a section line already read */
    for (;;) {
        if (!pending && (got = mdnl_stream_line(d->in, &s, &e)) != 1)
            break;
        pending = false;
        double v[3];
        const char *p = s, *t0, *t0e;
        if (!mdnl_token(&p, e, &t0, &t0e) || *t0 == '#')
            continue;
        if (is_section(s, e)) {
            const size_t n = (size_t)(t0e - t0);
            const bool atoms = n == 5 && !memcmp(t0, "Atoms", 5), masses = n == 6 && !memcmp(t0, "Masses", 6);
            if (atoms) {
                if (natoms < 0 || !have[0] || !have[1] || !have[2])
                    return ERR("%s:%lld: expected \"N atoms\" and the xlo xhi, ylo yhi, zlo zhi lines before Atoms, "
                               "found Atoms",
                               WHERE);
                enum style style = d->forced;
                const char *c, *ce;
                if (style == UNKNOWN && mdnl_token(&p, e, &c, &ce) && *c == '#') {
                    if (ce - c > 1)
                        ++c; /* "#atomic" */
                    else if (!mdnl_token(&p, e, &c, &ce))
                        c = ce = p; /* "#" alone */
                    if ((style = style_of(c, (size_t)(ce - c))) == UNKNOWN)
                        return ERR("%s:%lld: expected the atom style atomic, charge, molecular or full (or "
                                   "--atom-style), found %s",
                                   WHERE, mdnl_show_text(c, ce, tmp, sizeof tmp));
                }
                mdnl_status st = read_atoms(d, f, natoms, style);
                if (st != MDNL_OK)
                    return st;
                atoms_read = true;
                continue;
            }
            /* Masses (kept for info) or another section (Velocities, Bonds,
             * Pair Coeffs ...): its lines up to the next section */
            size_t k = 0;
            while ((got = mdnl_stream_line(d->in, &s, &e)) == 1) {
                const char *q = s, *a, *ae, *b, *be;
                if (!mdnl_token(&q, e, &a, &ae))
                    continue;
                if (is_section(s, e)) {
                    pending = true;
                    break;
                }
                if (masses && mdnl_token(&q, e, &b, &be) && k < sizeof d->masses - 64)
                    k += (size_t)snprintf(d->masses + k, sizeof d->masses - k, "%s%.*s:%.*s", k ? " " : "",
                                          (int)(ae - a > 20 ? 20 : ae - a), a, (int)(be - b > 24 ? 24 : be - b), b);
            }
            if (got < 0)
                return MDNL_ERR_INPUT;
            if (!pending)
                break;
            continue;
        }
        /* a header line */
        if (ends_with_words(s, e, "atoms")) {
            if (numbers(s, e, v, 1) != 1 || v[0] < 0 || v[0] != floor(v[0]) ||
                (d->file_size >= 0 && v[0] > (double)(d->file_size / 10 + 1)))
                return ERR("%s:%lld: expected a number of atoms the file can hold, found %s", WHERE,
                           mdnl_show_text(s, e, tmp, sizeof tmp));
            natoms = (int64_t)v[0];
        } else if (ends_with_words(s, e, "xlo xhi") || ends_with_words(s, e, "ylo yhi") ||
                   ends_with_words(s, e, "zlo zhi")) {
            const int a = ends_with_words(s, e, "xlo xhi") ? 0 : ends_with_words(s, e, "ylo yhi") ? 1 : 2;
            if (numbers(s, e, v, 2) != 2 || !(v[1] > v[0]))
                return ERR("%s:%lld: expected two finite bounds lo < hi, found %s", WHERE,
                           mdnl_show_text(s, e, tmp, sizeof tmp));
            lo[a] = v[0], hi[a] = v[1], have[a] = true;
        } else if (ends_with_words(s, e, "xy xz yz")) {
            if (numbers(s, e, v, 3) != 3)
                return ERR("%s:%lld: expected three finite tilts xy xz yz, found %s", WHERE,
                           mdnl_show_text(s, e, tmp, sizeof tmp));
            memcpy(tilt, v, sizeof tilt);
        } else if (numbers(s, e, v, 1) != 1) {
            return ERR("%s:%lld: expected a header line (\"N atoms\", \"xlo xhi\" ...) or a section, found %s", WHERE,
                       mdnl_show_text(s, e, tmp, sizeof tmp));
        }
    }
    if (got < 0)
        return MDNL_ERR_INPUT;
    if (!atoms_read)
        return ERR("%s:%lld: expected an Atoms section, found the end of the file", d->name,
                   (long long)mdnl_stream_lineno(d->in) + 1);
    mdnl_lammps_cell(lo, hi, tilt[0], tilt[1], tilt[2], &f->box);
    f->box.pbc[0] = f->box.pbc[1] = f->box.pbc[2] = true;
    d->done = true;
    return MDNL_OK;
}

static mdnl_status data_skip(void *state)
{
    data_reader *d = state;
    mdnl_frame f = {0};
    mdnl_status st = data_next(d, &f);
    mdnl_frame_free(&f);
    return st;
}

static mdnl_status data_open(const mdnl_format_input *in, void **state)
{
    data_reader *d = mdnl_calloc(1, sizeof *d, "LAMMPS data reader");
    if (!d)
        return MDNL_ERR_RESOURCE;
    d->in = in->stream;
    d->name = in->name;
    d->file_size = mdnl_stream_size(in->stream);
    d->forced = UNKNOWN;
    mdnl_status st = mdnl_lammps_types_parse(in->opt->types, &d->types);
    if (st == MDNL_OK && in->opt->atom_style &&
        (d->forced = style_of(in->opt->atom_style, strlen(in->opt->atom_style))) == UNKNOWN)
        st = mdnl_error(MDNL_ERR_USAGE, "--atom-style: expected atomic, charge, molecular or full, got \"%s\"",
                        in->opt->atom_style);
    if (st != MDNL_OK) {
        free(d);
        return st;
    }
    *state = d;
    return MDNL_OK;
}

static void data_close(void *state) { free(state); }

static const char *data_info(void *state, const char *key)
{
    const data_reader *d = state;
    if (strcmp(key, "units") == 0)
        return "the simulation's (LAMMPS units style)";
    if (strcmp(key, "masses") == 0 && d->masses[0])
        return d->masses;
    return NULL;
}

/* A line "N atoms" and a line "... xlo xhi" in the head. */
static int data_sniff(const unsigned char *h, size_t n)
{
    bool atoms = false, box = false;
    const char *p = (const char *)h, *end = p + n;
    const char *nl = memchr(p, '\n', n); /* the title line can say anything */
    p = nl ? nl + 1 : end;
    while (p < end) {
        const char *q = memchr(p, '\n', (size_t)(end - p));
        const char *e = q ? q : end;
        atoms = atoms || ends_with_words(p, e, "atoms");
        box = box || ends_with_words(p, e, "xlo xhi");
        p = q ? q + 1 : end;
    }
    return atoms && box ? MDNL_SNIFF_SURE : MDNL_SNIFF_NO;
}

const mdnl_format mdnl_format_lammps_data = {
    .name = "lammps-data", .extensions = ".data .lmp", .stream = true, .sniff = data_sniff, .open = data_open,
    .next = data_next, .skip = data_skip, .info = data_info, .close = data_close,
};

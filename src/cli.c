/* cli.c — option parsing, frame selection and overrides, progress, backend
 * choice (see cli.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include "device.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

double mdnl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

mdnl_status mdnl_prepare_frame(const char *input, const mdnl_frame *f, double cutoff, mdnl_geom *g,
                               float (**pos4)[4], int64_t *cap)
{
    if (*cap < f->natoms + 1) {
        free(*pos4);
        *cap = 0;
        if (!(*pos4 = mdnl_malloc((size_t)(f->natoms + 1) * sizeof **pos4, "float positions")))
            return MDNL_ERR_RESOURCE;
        *cap = f->natoms + 1;
    }
    mdnl_status st = mdnl_geom_prepare(f, cutoff, g, *pos4);
    if (st == MDNL_ERR_INPUT) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", mdnl_last_error());
        st = mdnl_error(st, "%s: %s", input, msg);
    }
    return st;
}

mdnl_status mdnl_check_list_memory(const char *input, const mdnl_geom *g, mdnl_list_kind kind, int copies)
{
    mdnl_work w;
    mdnl_work_estimate(g, &w);
    const double pairs = kind == MDNL_LIST_FULL ? w.pairs : 0.5 * w.pairs;
    const double bytes = (pairs * (sizeof(int32_t) + sizeof(float)) + (double)g->natoms * sizeof(int64_t)) * copies;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double memory = pages > 0 && page > 0 ? (double)pages * (double)page : 0;
    if (memory > 0 && bytes > memory)
        return mdnl_error(MDNL_ERR_RESOURCE,
                          "%s: frame %lld: the neighbor list would take an estimated %.3g GB (%.3g pairs, %d held at "
                          "once), more than the %.3g GB of memory",
                          input, (long long)g->frame, bytes / 1e9, pairs, copies, memory / 1e9);
    return MDNL_OK;
}

/* ---- option values ---- */

static mdnl_status parse_double(const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
        return mdnl_error(MDNL_ERR_USAGE, "%s: expected a finite number, got \"%s\"", opt, s);
    *out = v;
    return MDNL_OK;
}

static mdnl_status parse_int(const char *opt, const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || v < lo || v > hi)
        return mdnl_error(MDNL_ERR_USAGE, "%s: expected an integer in [%lld, %lld], got \"%s\"", opt, lo, hi, s);
    *out = v;
    return MDNL_OK;
}

static mdnl_status parse_positive(const char *opt, const char *s, double *out)
{
    mdnl_status st = parse_double(opt, s, out);
    if (st == MDNL_OK && !(*out > 0))
        return mdnl_error(MDNL_ERR_USAGE, "%s: expected a positive number, got \"%s\"", opt, s);
    return st;
}

/* --box a,b,c (orthorhombic) or 9 numbers (rows are lattice vectors). */
static mdnl_status parse_box(const char *s, mdnl_box *box)
{
    double v[9];
    int n = 0;
    const char *p = s;
    while (*p) {
        if (n == 9)
            return mdnl_error(MDNL_ERR_USAGE, "--box: expected 3 or 9 comma-separated numbers, got more in \"%s\"", s);
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char buf[64];
        if (len == 0 || len >= sizeof buf)
            return mdnl_error(MDNL_ERR_USAGE, "--box: expected 3 or 9 comma-separated numbers, got \"%s\"", s);
        memcpy(buf, p, len);
        buf[len] = '\0';
        mdnl_status st = parse_double("--box", buf, &v[n++]);
        if (st != MDNL_OK)
            return st;
        p += len + (comma ? 1 : 0);
        if (comma && !*p)
            return mdnl_error(MDNL_ERR_USAGE, "--box: trailing comma in \"%s\"", s);
    }
    memset(box, 0, sizeof *box);
    if (n == 3) {
        box->h[0][0] = v[0], box->h[1][1] = v[1], box->h[2][2] = v[2];
    } else if (n == 9) {
        for (int k = 0; k < 9; ++k)
            box->h[k / 3][k % 3] = v[k];
    } else {
        return mdnl_error(MDNL_ERR_USAGE, "--box: expected 3 or 9 comma-separated numbers, got %d in \"%s\"", n, s);
    }
    box->has_lattice = true;
    box->pbc[0] = box->pbc[1] = box->pbc[2] = true;
    const double volume = mdnl_box_volume(box);
    if (!(volume > 0))
        return mdnl_error(MDNL_ERR_USAGE, "--box: the cell \"%s\" has zero volume", s);
    if (!isfinite(volume)) /* found by tests/fuzz/fuzz_options: 1e300,1e300,1e300 */
        return mdnl_error(MDNL_ERR_USAGE, "--box: the cell \"%s\" has a volume beyond a double", s);
    return MDNL_OK;
}

/* ---- the option table ---- */

enum kind { FLAG, STRING, DOUBLE_POS, DOUBLE_NONNEG, INT_POS, UINT, SPECIAL };

typedef struct opt_def {
    const char *name; /* long name without "--" */
    char short_name;
    enum kind kind;
    size_t offset;  /* into mdnl_opts */
    size_t has_off; /* offset of a bool set when given, or (size_t)-1 */
} opt_def;

#define OFF(f) offsetof(mdnl_opts, f)
#define NONE ((size_t)-1)
static const opt_def defs[] = {
    {"backend", 0, SPECIAL, 0, NONE},
    {"method", 0, SPECIAL, 0, NONE},
    {"frames", 0, STRING, OFF(frames), NONE},
    {"box", 0, SPECIAL, 0, NONE},
    {"no-pbc", 0, FLAG, OFF(no_pbc), NONE},
    {"group", 0, STRING, OFF(group), NONE},
    {"format", 0, STRING, OFF(format), NONE},
    {"types", 0, STRING, OFF(types), NONE},
    {"atom-style", 0, STRING, OFF(atom_style), NONE},
    {"units", 0, SPECIAL, 0, NONE},
    {"quiet", 'q', FLAG, OFF(quiet), NONE},
    {"json", 0, FLAG, OFF(json), NONE},
    {"progress", 0, FLAG, OFF(progress), NONE},
    {"no-progress", 0, FLAG, OFF(no_progress), NONE},
    {"output", 'o', STRING, OFF(output), NONE},
    {"cutoff", 'c', DOUBLE_POS, OFF(cutoff), OFF(has_cutoff)},
    {"list", 0, SPECIAL, 0, NONE},
    {"pair", 0, STRING, OFF(pair), NONE},
    {"per-atom", 0, FLAG, OFF(per_atom), NONE},
    {"neighbors", 0, FLAG, OFF(neighbors), NONE},
    {"read-only", 0, FLAG, OFF(read_only), NONE},
    {"rmax", 0, DOUBLE_POS, OFF(rmax), OFF(has_rmax)},
    {"bins", 0, INT_POS, OFF(bins), OFF(has_bins)},
    {"pairs", 0, STRING, OFF(pairs), NONE},
    {"volume", 0, DOUBLE_POS, OFF(volume), OFF(has_volume)},
    {"plot", 0, STRING, OFF(plot), NONE},
    {"to", 0, STRING, OFF(to), NONE},
    {"nx", 0, INT_POS, OFF(nx), NONE},
    {"ny", 0, INT_POS, OFF(ny), NONE},
    {"bond", 0, DOUBLE_POS, OFF(bond), NONE},
    {"noise", 0, DOUBLE_NONNEG, OFF(noise), NONE},
    {"vacuum", 0, DOUBLE_POS, OFF(vacuum), NONE},
    {"seed", 0, UINT, OFF(seed), NONE},
    {"sizes", 0, STRING, OFF(sizes), NONE},
    {"max-pairs", 0, DOUBLE_POS, OFF(max_pairs), NONE},
    {"data", 0, STRING, OFF(data_dir), NONE},
};

static bool allowed_name(const char *allowed, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = allowed; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return true;
        p += len + (comma ? 1 : 0);
    }
    return false;
}

static mdnl_status set_option(const opt_def *d, const char *value, mdnl_opts *o)
{
    char opt[40];
    snprintf(opt, sizeof opt, "--%s", d->name);
    char *base = (char *)o;
    mdnl_status st = MDNL_OK;
    long long iv = 0;
    double dv = 0;
    switch (d->kind) {
    case FLAG:
        *(bool *)(base + d->offset) = true;
        break;
    case STRING:
        if (!*value)
            return mdnl_error(MDNL_ERR_USAGE, "%s: expected a value, got an empty string", opt);
        *(const char **)(base + d->offset) = value;
        break;
    case DOUBLE_POS:
        if ((st = parse_positive(opt, value, &dv)) == MDNL_OK)
            *(double *)(base + d->offset) = dv;
        break;
    case DOUBLE_NONNEG:
        if ((st = parse_double(opt, value, &dv)) == MDNL_OK) {
            if (dv < 0)
                return mdnl_error(MDNL_ERR_USAGE, "%s: expected a number >= 0, got \"%s\"", opt, value);
            *(double *)(base + d->offset) = dv;
        }
        break;
    case INT_POS:
        if ((st = parse_int(opt, value, 1, 1000000000LL, &iv)) == MDNL_OK)
            *(long long *)(base + d->offset) = iv;
        break;
    case UINT:
        if ((st = parse_int(opt, value, 0, 9007199254740991LL, &iv)) == MDNL_OK)
            *(unsigned long long *)(base + d->offset) = (unsigned long long)iv;
        break;
    case SPECIAL:
        if (strcmp(d->name, "backend") == 0) {
            if (strcmp(value, "auto") == 0)
                o->backend = MDNL_BACKEND_AUTO;
            else if (strcmp(value, "cpu") == 0)
                o->backend = MDNL_BACKEND_CPU;
            else if (strcmp(value, "cuda") == 0)
                o->backend = MDNL_BACKEND_CUDA;
            else
                return mdnl_error(MDNL_ERR_USAGE, "--backend: expected auto, cpu or cuda, got \"%s\"", value);
        } else if (strcmp(d->name, "method") == 0) {
            st = mdnl_method_parse(value, &o->method);
        } else if (strcmp(d->name, "list") == 0) {
            if (strcmp(value, "half") == 0)
                o->list = MDNL_LIST_HALF;
            else if (strcmp(value, "full") == 0)
                o->list = MDNL_LIST_FULL;
            else
                return mdnl_error(MDNL_ERR_USAGE, "--list: expected half or full, got \"%s\"", value);
            o->has_list = true;
        } else if (strcmp(d->name, "units") == 0) {
            if (strcmp(value, "native") != 0 && strcmp(value, "angstrom") != 0)
                return mdnl_error(MDNL_ERR_USAGE, "--units: expected native or angstrom, got \"%s\"", value);
            o->units_native = strcmp(value, "native") == 0;
        } else if (strcmp(d->name, "box") == 0) {
            st = parse_box(value, &o->box);
            o->has_box = st == MDNL_OK;
        }
        break;
    }
    if (st == MDNL_OK && d->has_off != NONE)
        *(bool *)(base + d->has_off) = true;
    return st;
}

mdnl_status mdnl_parse_options(const char *command, const char *allowed, int argc, char **argv, int first,
                               mdnl_opts *o)
{
    memset(o, 0, sizeof *o);
    o->command = command;
    o->bond = 1.42;
    o->vacuum = 20.0;
    o->bins = 0;
    const size_t ndefs = sizeof defs / sizeof *defs;
    bool only_positional = false;
    for (int a = first; a < argc; ++a) {
        const char *arg = argv[a];
        if (!only_positional && (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0))
            return MDNL_END;
        if (!only_positional && strcmp(arg, "--") == 0) {
            only_positional = true;
            continue;
        }
        if (only_positional || arg[0] != '-' || strcmp(arg, "-") == 0) {
            if (o->npositional == 2)
                return mdnl_error(MDNL_ERR_USAGE, "mdnl %s: unexpected argument \"%s\"", command, arg);
            o->positional[o->npositional++] = arg;
            continue;
        }
        const opt_def *d = NULL;
        const char *value = NULL;
        char name[48];
        if (arg[1] == '-') {
            const char *eq = strchr(arg + 2, '=');
            size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
            if (len >= sizeof name)
                len = sizeof name - 1;
            memcpy(name, arg + 2, len);
            name[len] = '\0';
            if (eq)
                value = eq + 1;
            for (size_t k = 0; k < ndefs; ++k)
                if (strcmp(defs[k].name, name) == 0)
                    d = &defs[k];
        } else if (arg[2] == '\0') {
            for (size_t k = 0; k < ndefs; ++k)
                if (defs[k].short_name == arg[1])
                    d = &defs[k];
            snprintf(name, sizeof name, "%s", d ? d->name : "");
        }
        /* The input options go with every command that reads a trajectory
         * (those that take --group). */
        if (!d || !(allowed_name(allowed, d->name) ||
                    (allowed_name(allowed, "group") && allowed_name("format,types,atom-style,units", d->name))))
            return mdnl_error(MDNL_ERR_USAGE, "mdnl %s: unknown option \"%s\" (see mdnl %s --help)", command, arg,
                              command);
        if (d->kind == FLAG) {
            if (value)
                return mdnl_error(MDNL_ERR_USAGE, "--%s takes no value, got \"%s\"", d->name, value);
        } else if (!value) {
            if (a + 1 >= argc)
                return mdnl_error(MDNL_ERR_USAGE, "%s: missing value", arg);
            value = argv[++a];
        }
        mdnl_status st = set_option(d, value, o);
        if (st != MDNL_OK)
            return st;
    }
    if (o->json)
        o->quiet = true; /* stdout belongs to the JSON object */
    mdnl_work_set_limit(o->max_pairs); /* the work guard of every frame prepared from here on (geometry.h) */
    return MDNL_OK;
}

/* ---- backend ---- */

const char *mdnl_backend_name(mdnl_backend b)
{
    return b == MDNL_BACKEND_CUDA ? "cuda" : b == MDNL_BACKEND_CPU ? "cpu" : "auto";
}

mdnl_status mdnl_choose_backend(const mdnl_opts *o, mdnl_backend *out)
{
    int devices = mdnl_cuda_device_count();
    if (o->backend == MDNL_BACKEND_CUDA && devices == 0)
        return mdnl_error(MDNL_ERR_RESOURCE, "--backend cuda: no CUDA device is available (%s)",
                          mdnl_cuda_device_name());
    if (o->backend == MDNL_BACKEND_CPU)
        *out = MDNL_BACKEND_CPU;
    else
        *out = devices > 0 ? MDNL_BACKEND_CUDA : MDNL_BACKEND_CPU;
    return MDNL_OK;
}

bool mdnl_is_hdf5_path(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot && (strcmp(dot, ".h5") == 0 || strcmp(dot, ".h5md") == 0 || strcmp(dot, ".hdf5") == 0);
}

void mdnl_json_string(FILE *fp, const char *s)
{
    fputc('"', fp);
    for (; *s; ++s) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(fp, "\\%c", c);
        else if (c < 0x20)
            fprintf(fp, "\\u%04x", c);
        else
            fputc(c, fp);
    }
    fputc('"', fp);
}

/* ---- frames: selection and overrides ---- */

struct mdnl_frames {
    mdnl_reader *reader;
    const mdnl_opts *opts;
    const char *path;
    int64_t start, stop, step; /* resolved; stop < 0: until the end */
    bool resolved;
    const char *spec;
    int64_t next_index; /* index in the file of the reader's cursor */
    int64_t count;      /* cached count of selected frames, -1 unknown */
};

/* Parses one field of START:STOP:STEP; empty means absent. */
static mdnl_status slice_field(const char *s, size_t len, bool *present, int64_t *v)
{
    *present = len > 0;
    if (!len)
        return MDNL_OK;
    char buf[32];
    if (len >= sizeof buf)
        return mdnl_error(MDNL_ERR_USAGE, "--frames: number too long in \"%.*s\"", (int)len, s);
    memcpy(buf, s, len);
    buf[len] = '\0';
    long long x = 0;
    mdnl_status st = parse_int("--frames", buf, -(1LL << 62), 1LL << 62, &x);
    *v = x;
    return st;
}

static mdnl_status resolve_slice(mdnl_frames *fs)
{
    fs->start = 0, fs->stop = -1, fs->step = 1;
    fs->resolved = true;
    if (!fs->spec)
        return MDNL_OK;
    const char *s = fs->spec;
    const char *c1 = strchr(s, ':');
    bool hs = false, he = false, hp = false;
    int64_t a = 0, b = 0, p = 1;
    mdnl_status st;
    if (!c1) { /* a single index K means K:K+1 */
        if ((st = slice_field(s, strlen(s), &hs, &a)) != MDNL_OK)
            return st;
        if (!hs)
            return mdnl_error(MDNL_ERR_USAGE, "--frames: expected START:STOP:STEP, got \"%s\"", s);
        he = true;
        b = a + 1;
        if (a == -1)
            he = false;
    } else {
        const char *c2 = strchr(c1 + 1, ':');
        if ((st = slice_field(s, (size_t)(c1 - s), &hs, &a)) != MDNL_OK)
            return st;
        size_t l2 = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
        if ((st = slice_field(c1 + 1, l2, &he, &b)) != MDNL_OK)
            return st;
        if (c2) {
            if (strchr(c2 + 1, ':'))
                return mdnl_error(MDNL_ERR_USAGE, "--frames: expected START:STOP:STEP, got \"%s\"", s);
            if ((st = slice_field(c2 + 1, strlen(c2 + 1), &hp, &p)) != MDNL_OK)
                return st;
        }
    }
    if (hp && p <= 0)
        return mdnl_error(MDNL_ERR_USAGE, "--frames: STEP must be positive, got %lld", (long long)p);
    if ((hs && a < 0) || (he && b < 0)) { /* negative indices count from the end */
        int64_t n;
        if ((st = mdnl_reader_count(fs->reader, &n)) != MDNL_OK)
            return st;
        if (hs && a < 0)
            a = a + n < 0 ? 0 : a + n;
        if (he && b < 0)
            b = b + n < 0 ? 0 : b + n;
    }
    fs->start = hs ? a : 0;
    fs->stop = he ? b : -1;
    fs->step = hp ? p : 1;
    return MDNL_OK;
}

mdnl_status mdnl_frames_open(const mdnl_opts *o, const char *path, mdnl_frames **out)
{
    *out = NULL;
    mdnl_frames *fs = mdnl_calloc(1, sizeof *fs, "frame source");
    if (!fs)
        return MDNL_ERR_RESOURCE;
    fs->opts = o;
    fs->path = path;
    fs->spec = o->frames;
    fs->count = -1;
    mdnl_read_options ro = {.group = o->group,
                            .coords_checked = o->coords_checked,
                            .format = o->format,
                            .types = o->types,
                            .atom_style = o->atom_style,
                            .units_native = o->units_native,
                            .keep_extras = o->keep_extras};
    mdnl_status st = mdnl_reader_open(path, &ro, &fs->reader);
    if (st == MDNL_OK)
        st = resolve_slice(fs);
    if (st != MDNL_OK) {
        mdnl_frames_close(fs);
        return st;
    }
    *out = fs;
    return MDNL_OK;
}

static bool selected(const mdnl_frames *fs, int64_t k)
{
    return k >= fs->start && (fs->stop < 0 || k < fs->stop) && (k - fs->start) % fs->step == 0;
}

mdnl_status mdnl_frames_next(mdnl_frames *fs, mdnl_frame *f)
{
    for (;;) {
        int64_t k = fs->next_index;
        if (fs->stop >= 0 && k >= fs->stop)
            return MDNL_END;
        mdnl_status st;
        if (!selected(fs, k)) {
            st = mdnl_reader_skip(fs->reader);
            if (st != MDNL_OK)
                return st;
            fs->next_index++;
            continue;
        }
        st = mdnl_reader_next(fs->reader, f);
        if (st != MDNL_OK)
            return st;
        fs->next_index++;
        f->index = k;
        if (!f->has_step)
            f->step = k;
        const mdnl_opts *o = fs->opts;
        if (o->has_box)
            f->box = o->box;
        if (o->no_pbc)
            f->box.pbc[0] = f->box.pbc[1] = f->box.pbc[2] = false;
        return MDNL_OK;
    }
}

mdnl_status mdnl_frames_count(mdnl_frames *fs, int64_t *n)
{
    if (fs->count < 0) {
        int64_t total;
        mdnl_status st = mdnl_reader_count(fs->reader, &total);
        if (st != MDNL_OK)
            return st;
        int64_t stop = fs->stop < 0 || fs->stop > total ? total : fs->stop;
        fs->count = stop > fs->start ? (stop - fs->start + fs->step - 1) / fs->step : 0;
    }
    *n = fs->count;
    return MDNL_OK;
}

mdnl_status mdnl_frames_skip_rest(mdnl_frames *fs, int64_t *n)
{
    mdnl_status st;
    *n = 0;
    while ((st = mdnl_reader_skip(fs->reader)) == MDNL_OK) {
        ++*n;
        fs->next_index++;
    }
    return st == MDNL_END ? MDNL_OK : st;
}

void mdnl_frames_restrict(mdnl_frames *fs, int64_t first, int64_t count)
{
    fs->start += first * fs->step;
    fs->stop = count > 0 ? fs->start + count * fs->step : 0; /* 0: at the end before the first frame */
    fs->count = count;
}

void mdnl_frames_close(mdnl_frames *fs)
{
    if (!fs)
        return;
    mdnl_reader_close(fs->reader);
    free(fs);
}

const mdnl_reader *mdnl_frames_reader(const mdnl_frames *fs) { return fs->reader; }

/* ---- progress ---- */

void mdnl_progress_start(mdnl_progress *p, const mdnl_opts *o, mdnl_frames *fs)
{
    memset(p, 0, sizeof *p);
    if (o->quiet || o->no_progress)
        return;
    if (!o->progress && !isatty(STDERR_FILENO))
        return;
    int64_t n = 0;
    if (mdnl_frames_count(fs, &n) != MDNL_OK) {
        mdnl_clear_error();
        return;
    }
    if (n <= 1 && !o->progress)
        return;
    p->on = true;
    p->total = n;
    p->t0 = p->last = mdnl_now();
}

void mdnl_progress_step(mdnl_progress *p)
{
    if (!p->on)
        return;
    p->done++;
    double now = mdnl_now();
    if (now - p->last < 0.2 && p->done < p->total)
        return;
    p->last = now;
    double rate = p->done / (now - p->t0 > 1e-9 ? now - p->t0 : 1e-9);
    double eta = rate > 0 ? (p->total - p->done) / rate : 0;
    int width = 30, filled = p->total > 0 ? (int)(width * p->done / p->total) : width;
    char bar[64];
    for (int k = 0; k < width; ++k)
        bar[k] = k < filled ? '#' : '.';
    bar[width] = '\0';
    fprintf(stderr, "\r[%s] %lld/%lld frames  %.1f frames/s  ETA %.0f s ", bar, (long long)p->done,
            (long long)p->total, rate, eta);
    fflush(stderr);
}

void mdnl_progress_end(mdnl_progress *p)
{
    if (p->on)
        fputc('\n', stderr);
    p->on = false;
}

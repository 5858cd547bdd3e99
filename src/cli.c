/* cli.c — option parsing, frame selection and overrides, progress, backend
 * choice (see cli.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"

#include "chunk_pool.h"
#include "mpi_split.h"

#include <errno.h>
#ifdef _OPENMP
#include <omp.h>
#endif
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

/* --with shift,vector: the comma-separated extra columns of a neighbor list. */
static mdnl_status parse_with(const char *value, mdnl_opts *o)
{
    const char *p = value;
    for (;;) {
        const char *end = strchr(p, ',');
        const size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n == 5 && strncmp(p, "shift", 5) == 0)
            o->with_shift = true;
        else if (n == 6 && strncmp(p, "vector", 6) == 0)
            o->with_vector = true;
        else
            return mdnl_error(MDNL_ERR_USAGE, "--with: expected shift, vector or shift,vector, got \"%s\"", value);
        if (!end)
            return MDNL_OK;
        p = end + 1;
    }
}

/* ---- the option table ---- */

enum { MAX_THREADS = 1024 }; /* --threads */

static bool allowed_name(const char *allowed, const char *name);

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
    {"topology", 0, STRING, OFF(topology), NONE},
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
    {"with", 0, SPECIAL, 0, NONE},
    {"pair", 0, STRING, OFF(pair), NONE},
    {"pair-coeff", 0, SPECIAL, 0, NONE},
    {"per-atom", 0, FLAG, OFF(per_atom), NONE},
    {"neighbors", 0, FLAG, OFF(neighbors), NONE},
    {"read-only", 0, FLAG, OFF(read_only), NONE},
    {"rmax", 0, DOUBLE_POS, OFF(rmax), OFF(has_rmax)},
    {"bins", 0, INT_POS, OFF(bins), OFF(has_bins)},
    {"pairs", 0, STRING, OFF(pairs), NONE},
    {"volume", 0, DOUBLE_POS, OFF(volume), OFF(has_volume)},
    {"plot", 0, STRING, OFF(plot), NONE},
    {"per-frame", 0, FLAG, OFF(per_frame), NONE},
    {"histogram", 0, STRING, OFF(histogram), NONE},
    {"pair-cut", 0, STRING, OFF(pair_cut), NONE},
    {"to", 0, STRING, OFF(to), NONE},
    {"nx", 0, INT_POS, OFF(nx), NONE},
    {"ny", 0, INT_POS, OFF(ny), NONE},
    {"bond", 0, DOUBLE_POS, OFF(bond), NONE},
    {"noise", 0, DOUBLE_NONNEG, OFF(noise), NONE},
    {"vacuum", 0, DOUBLE_POS, OFF(vacuum), NONE},
    {"seed", 0, UINT, OFF(seed), NONE},
    {"sizes", 0, STRING, OFF(sizes), NONE},
    {"max-pairs", 0, DOUBLE_POS, OFF(max_pairs), NONE},
    {"threads", 0, INT_POS, OFF(threads), OFF(has_threads)},
    {"data", 0, STRING, OFF(data_dir), NONE},
};

/* The options each command takes: the one list its parser accepts and its
 * --help shows (the generic ones through mdnl_print_option_help, the
 * command's own in its help text in main.c). */
static const struct command_options {
    const char *command, *options;
} command_options[] = {
    {"run", "cutoff,pair,pair-coeff,rmax,bins,pairs,volume,per-frame,plot,neighbors,list,with,read-only,output,backend,method,frames,box,no-pbc,"
            "group,topology,format,types,atom-style,units,quiet,json,progress,no-progress,max-pairs,threads"},
    {"neighbors", "cutoff,list,with,output,backend,method,frames,box,no-pbc,group,topology,format,types,atom-style,"
                  "units,quiet,json,progress,no-progress,max-pairs,threads"},
    {"energy", "cutoff,pair,pair-coeff,per-atom,output,backend,frames,box,no-pbc,group,topology,format,types,"
               "atom-style,units,quiet,json,progress,no-progress,max-pairs,threads"},
    {"coord", "cutoff,pair-cut,pairs,histogram,output,backend,frames,box,no-pbc,group,topology,format,types,"
              "atom-style,units,quiet,json,progress,no-progress,max-pairs,threads"},
    {"rdf", "rmax,bins,pairs,volume,plot,per-frame,output,backend,frames,box,no-pbc,group,topology,format,types,"
            "atom-style,units,quiet,json,progress,no-progress,max-pairs,threads"},
    {"info", "json,group,box,no-pbc,topology,format,types,atom-style,units,quiet,threads"},
    {"gen", "nx,ny,bond,noise,seed,vacuum,output,to,quiet,json"},
    {"convert", "to,frames,box,no-pbc,group,topology,format,types,atom-style,units,quiet,json,progress,"
                "no-progress,threads"},
    {"bench", "sizes,json,quiet,data"},
};

const char *mdnl_command_options(const char *command)
{
    for (size_t k = 0; k < sizeof command_options / sizeof *command_options; ++k)
        if (strcmp(command_options[k].command, command) == 0)
            return command_options[k].options;
    return "";
}

/* Help lines of the options shared by several commands, in the order shown. */
static const struct option_help {
    const char *name, *text;
} option_help[] = {
    {"backend", "  --backend auto|cpu|cuda   where to compute (auto: the GPU when present)\n"},
    {"method",
     "  --method auto|brute-atomic|brute-noatomic|cell\n"
     "                            neighbor-list algorithm (auto: cell lists, or brute force for few atoms)\n"},
    {"max-pairs",
     "  --max-pairs N             refuse a frame estimated to have more than N pairs (default: 10^5 per\n"
     "                            atom, at least 10^7, and a cutoff of at most 100 periodic widths; exit 3)\n"},
    {"threads",
     "  --threads N               CPU threads for the CPU backend, the output writers and the readers\n"
     "                            (text, H5MD, XTC, TRR, DCD; default: the cores this process may use;\n"
     "                            run on a GPU: readers get 3/4 of them, the rest is the pipeline's)\n"},
    {"frames", "  --frames START:STOP:STEP  frames to use (Python slice; K alone is frame K); indices stay the\n"
               "                            file's; a selection with no frame is an error (exit 2)\n"},
    {"box", "  --box a,b,c | --box ax,ay,az,bx,by,bz,cx,cy,cz\n"
            "                            cell override in the input's length unit (rows are lattice vectors),\n"
            "                            periodic in x, y, z\n"},
    {"no-pbc", "  --no-pbc                  treat every axis as open\n"},
    {"group", "  --group NAME              H5MD particle group\n"},
    {"topology", "  --topology FILE           species of every frame from FILE's first frame (any format mdnl reads,\n"
                 "                            same atom count); XTC, TRR and DCD hold none (every atom is X without it)\n"},
    {"format", "  --format NAME             input format (default: detected from the content, else the extension):\n"
               "                            xyz, extxyz, h5md, lammps-dump, lammps-data, gro, pdb, xtc, trr, dcd;\n"
               "                            gzip, xz and zstd text is read as it is; INPUT - is standard input\n"},
    {"types", "  --types 1=Cu,2=O          LAMMPS types -> species names (default: the type numbers)\n"},
    {"atom-style", "  --atom-style STYLE        LAMMPS data: atomic, charge, molecular, full (default: the Atoms #\n"
                   "                            comment)\n"},
    {"units", "  --units angstrom|native   GRO, XTC, TRR: positions and cell in Å (nm x 10, the default) or in nm\n"},
    {"quiet", "  -q, --quiet               no summary or notes on stderr\n"},
    {"json", "  --json                    a one-object summary on stdout\n"},
    {"progress", "  --progress | --no-progress  progress bar on stderr (default: on a terminal with >1 frame)\n"},
};

void mdnl_print_option_help(FILE *fp, const char *command)
{
    const char *allowed = mdnl_command_options(command);
    bool any = false;
    for (size_t k = 0; k < sizeof option_help / sizeof *option_help; ++k)
        if (allowed_name(allowed, option_help[k].name)) {
            if (!any)
                fputs("Common options:\n", fp);
            any = true;
            fputs(option_help[k].text, fp);
        }
    fputs("  -h, --help                this help\n", fp);
    if (allowed_name(allowed, "output"))
        fputs("Outputs: a file is written as .NAME.tmp-PID-RANDOM beside it and renamed when complete (a symbolic\n"
              "link's target is replaced); -, a character device (/dev/null) or a FIFO is written as a stream.\n"
              "SIGINT, SIGTERM and SIGHUP remove the temporary outputs and exit 130, 143, 129; once an output is\n"
              "in place they are ignored and the command ends with its own status.\n",
              fp);
}

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

/* Levenshtein distance of two short option names (at most 47 characters). */
static int edit_distance(const char *a, const char *b)
{
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 47 || lb > 47)
        return 99;
    int row[48];
    for (int j = 0; j <= lb; ++j)
        row[j] = j;
    for (int i = 1; i <= la; ++i) {
        int diag = row[0];
        row[0] = i;
        for (int j = 1; j <= lb; ++j) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The unknown-option error, with the closest option the command takes when
 * it is a near miss (at most 2 edits, or a unique prefix). */
static mdnl_status unknown_option(const char *command, const char *allowed, const char *arg, const char *name)
{
    const char *best = NULL;
    size_t best_len = 0;
    int best_d = 3, prefixes = 0;
    const char *prefix = NULL;
    size_t prefix_len = 0;
    size_t nlen = strlen(name);
    for (const char *p = allowed; *p && nlen;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char cand[48];
        if (len < sizeof cand) {
            memcpy(cand, p, len);
            cand[len] = '\0';
            int d = edit_distance(name, cand);
            if (d < best_d)
                best = p, best_len = len, best_d = d;
            if (nlen < len && strncmp(cand, name, nlen) == 0)
                prefix = p, prefix_len = len, ++prefixes;
        }
        p += len + (comma ? 1 : 0);
    }
    if (!best && prefixes == 1)
        best = prefix, best_len = prefix_len;
    if (best)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl %s: unknown option \"%s\"; did you mean --%.*s? (see mdnl %s --help)",
                          command, arg, (int)best_len, best, command);
    return mdnl_error(MDNL_ERR_USAGE, "mdnl %s: unknown option \"%s\" (see mdnl %s --help)", command, arg, command);
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
        } else if (strcmp(d->name, "with") == 0) {
            st = parse_with(value, o);
        } else if (strcmp(d->name, "units") == 0) {
            if (strcmp(value, "native") != 0 && strcmp(value, "angstrom") != 0)
                return mdnl_error(MDNL_ERR_USAGE, "--units: expected native or angstrom, got \"%s\"", value);
            o->units_native = strcmp(value, "native") == 0;
        } else if (strcmp(d->name, "pair-coeff") == 0) {
            if (!*value)
                return mdnl_error(MDNL_ERR_USAGE, "--pair-coeff: expected A-B:NAME=VALUE,..., got an empty string");
            if (o->npair_coeff == MDNL_PAIR_COEFF_MAX)
                return mdnl_error(MDNL_ERR_USAGE, "--pair-coeff: at most %d, got more", MDNL_PAIR_COEFF_MAX);
            o->pair_coeff[o->npair_coeff++] = value;
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
        } else {
            /* -c CUT, or the value attached as getopt takes it: -c2 */
            for (size_t k = 0; k < ndefs; ++k)
                if (defs[k].short_name == arg[1])
                    d = &defs[k];
            if (d && arg[2] != '\0') {
                if (d->kind == FLAG)
                    d = NULL;
                else
                    value = arg + 2;
            }
            snprintf(name, sizeof name, "%s", d ? d->name : "");
        }
        if (!d || !allowed_name(allowed, d->name))
            return unknown_option(command, allowed, arg, arg[1] == '-' ? name : "");
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
    if (o->has_threads && o->threads > MAX_THREADS)
        return mdnl_error(MDNL_ERR_USAGE, "--threads: expected 1 to %d, got %lld", MAX_THREADS, o->threads);
#ifdef _OPENMP
    if (o->has_threads)
        omp_set_num_threads((int)o->threads); /* the CPU backend's team on this thread */
#endif
    return MDNL_OK;
}

int mdnl_threads(const mdnl_opts *o)
{
    if (o->has_threads)
        return (int)o->threads;
    int n = mdnl_cpus_available();
#ifdef _OPENMP
    if (getenv("OMP_NUM_THREADS") && omp_get_max_threads() < n)
        n = omp_get_max_threads();
#endif
    return n;
}

/* ---- backend ---- */

const char *mdnl_backend_name(mdnl_backend b)
{
    return b == MDNL_BACKEND_CUDA ? "cuda" : b == MDNL_BACKEND_CPU ? "cpu" : "auto";
}

mdnl_status mdnl_choose_backend(const mdnl_opts *o, mdnl_backend *out)
{
    int devices = mdnl_cuda_devices();
    if (o->backend == MDNL_BACKEND_CUDA && devices == 0)
        return mdnl_error(MDNL_ERR_RESOURCE, "--backend cuda: no CUDA device is available (%s)",
                          mdnl_device_description(0));
    if (o->backend == MDNL_BACKEND_CPU)
        *out = MDNL_BACKEND_CPU;
    else
        *out = devices > 0 ? MDNL_BACKEND_CUDA : MDNL_BACKEND_CPU;
    return MDNL_OK;
}

mdnl_status mdnl_context_of(const mdnl_opts *o, mdnl_context **out)
{
    *out = NULL;
    mdnl_backend b;
    mdnl_status st = mdnl_choose_backend(o, &b);
    if (st != MDNL_OK)
        return st;
    const mdnl_context_options co = {
        .backend = b == MDNL_BACKEND_CUDA ? MDNL_COMPUTE_CUDA : MDNL_COMPUTE_CPU,
        .device = b == MDNL_BACKEND_CUDA ? o->device : 0,
        .max_pairs = o->max_pairs,
        .threads = o->has_threads ? (int)o->threads : 0,
    };
    if ((st = mdnl_context_create(&co, out)) != MDNL_OK)
        return st;
    if ((st = mdnl_context_set_limit_name(*out, "--max-pairs N")) != MDNL_OK ||
        (o->method != MDNL_METHOD_AUTO && (st = mdnl_context_set_method(*out, mdnl_method_name(o->method))) != MDNL_OK)) {
        mdnl_context_free(*out);
        *out = NULL;
    }
    return st;
}

void mdnl_pair_params_of(const mdnl_potential *p, int ntypes, mdnl_pair_params *params, double *cutoffs)
{
    for (int k = 0; k < ntypes * ntypes; ++k) {
        params[k] = (mdnl_pair_params){.style = p[k].kind == MDNL_POTENTIAL_MORSE ? MDNL_PAIR_MORSE : MDNL_PAIR_LJ,
                                       .epsilon = p[k].epsilon, .sigma = p[k].sigma, .d0 = p[k].d0,
                                       .alpha = p[k].alpha, .r0 = p[k].r0, .shift = p[k].shift};
        cutoffs[k] = p[k].cutoff;
    }
}

mdnl_backend mdnl_backend_of(const mdnl_context *ctx)
{
    return mdnl_context_backend(ctx) == MDNL_COMPUTE_CUDA ? MDNL_BACKEND_CUDA : MDNL_BACKEND_CPU;
}

mdnl_status mdnl_frame_system(mdnl_context *ctx, const char *input, const mdnl_frame *f, mdnl_system *sys)
{
    const bool lattice = f->box.has_lattice;
    *sys = (mdnl_system){
        .n = f->natoms,
        .positions = f->pos,
        .dtype = MDNL_FLOAT64,
        .cell = lattice ? &f->box.h[0][0] : NULL,
        .pbc = {lattice && f->box.pbc[0], lattice && f->box.pbc[1], lattice && f->box.pbc[2]},
    };
    return mdnl_context_set_frame(ctx, input, f->index);
}

bool mdnl_is_hdf5_path(const char *path)
{
    const char *dot = strrchr(path, '.');
    return dot && (strcmp(dot, ".h5") == 0 || strcmp(dot, ".h5md") == 0 || strcmp(dot, ".hdf5") == 0);
}

void mdnl_atoms_range_add(mdnl_atoms_range *r, int64_t natoms)
{
    if (!r->frames || natoms < r->min)
        r->min = natoms;
    if (!r->frames || natoms > r->max)
        r->max = natoms;
    r->frames++;
}

const char *mdnl_atoms_range_text(const mdnl_atoms_range *r, char *buf, size_t size)
{
    if (!r->frames)
        snprintf(buf, size, "no frame");
    else if (r->min == r->max)
        snprintf(buf, size, "%lld atoms", (long long)r->min);
    else
        snprintf(buf, size, "%lld to %lld atoms", (long long)r->min, (long long)r->max);
    return buf;
}

void mdnl_atoms_range_json(FILE *fp, const mdnl_atoms_range *r)
{
    fprintf(fp, ",\"atoms\":%lld,\"atoms_max\":%lld", (long long)r->min, (long long)r->max);
}

void mdnl_json_string(FILE *fp, const char *s)
{
    fputc('"', fp);
    while (*s) {
        char e[MDNL_ESCAPE_MAX + 1];
        mdnl_escape_char(&s, e, MDNL_ESCAPE_JSON);
        fputs(e, fp);
    }
    fputc('"', fp);
}

void mdnl_text_string(FILE *fp, const char *s)
{
    while (*s) {
        char e[MDNL_ESCAPE_MAX + 1];
        mdnl_escape_char(&s, e, MDNL_ESCAPE_TAB);
        fputs(e, fp);
    }
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
    int64_t yielded;    /* frames returned by mdnl_frames_next */
    bool restricted;    /* an MPI rank's block, which may be empty */
    int64_t first_open; /* the first XYZ frame without a cell (treated as open), -1 none */
    mdnl_frame topo;    /* --topology: its first frame, whose species every frame takes */
};

/* --frames that selects nothing is a usage error naming the file's frame
 * count (`total` < 0: not known yet, counted here). */
static mdnl_status empty_selection(mdnl_frames *fs, int64_t total)
{
    if (total < 0 && mdnl_reader_count(fs->reader, &total) != MDNL_OK) {
        mdnl_clear_error();
        return mdnl_error(MDNL_ERR_USAGE, "--frames %s: selects no frame in %s", fs->spec, fs->path);
    }
    return mdnl_error(MDNL_ERR_USAGE, "--frames %s: selects no frame of the %lld in %s", fs->spec, (long long)total,
                      fs->path);
}

/* Parses one field of START:STOP:STEP; empty means absent. */
static mdnl_status slice_field(const char *spec, const char *s, size_t len, bool *present, int64_t *v)
{
    *present = len > 0;
    if (!len)
        return MDNL_OK;
    char buf[32];
    if (len >= sizeof buf)
        return mdnl_error(MDNL_ERR_USAGE, "--frames: number too long in \"%s\"", spec);
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (end == buf || *end != '\0' || errno == ERANGE || x < -(1LL << 62) || x > (1LL << 62))
        return mdnl_error(MDNL_ERR_USAGE,
                          "--frames: expected START:STOP:STEP (a Python slice of frame indices: 5, 2:10, ::2, -1; "
                          "STOP excluded), got \"%s\"",
                          spec);
    *v = x;
    return MDNL_OK;
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
        if ((st = slice_field(s, s, strlen(s), &hs, &a)) != MDNL_OK)
            return st;
        if (!hs)
            return mdnl_error(MDNL_ERR_USAGE, "--frames: expected START:STOP:STEP, got \"%s\"", s);
        he = true;
        b = a + 1;
        if (a == -1)
            he = false;
    } else {
        const char *c2 = strchr(c1 + 1, ':');
        if ((st = slice_field(s, s, (size_t)(c1 - s), &hs, &a)) != MDNL_OK)
            return st;
        size_t l2 = c2 ? (size_t)(c2 - c1 - 1) : strlen(c1 + 1);
        if ((st = slice_field(s, c1 + 1, l2, &he, &b)) != MDNL_OK)
            return st;
        if (c2) {
            if (strchr(c2 + 1, ':'))
                return mdnl_error(MDNL_ERR_USAGE, "--frames: expected START:STOP:STEP, got \"%s\"", s);
            if ((st = slice_field(s, c2 + 1, strlen(c2 + 1), &hp, &p)) != MDNL_OK)
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

/* The first frame of --topology FILE (any format mdnl reads). */
static mdnl_status read_topology(const mdnl_opts *o, mdnl_frame *topo)
{
    /* --types and --atom-style name a LAMMPS topology's species; --format is the trajectory's */
    mdnl_read_options ro = {.group = o->group, .types = o->types, .atom_style = o->atom_style};
    mdnl_reader *r = NULL;
    mdnl_status st = mdnl_reader_open(o->topology, &ro, &r);
    if (st == MDNL_OK && (st = mdnl_reader_next(r, topo)) == MDNL_END)
        st = mdnl_error(MDNL_ERR_INPUT, "%s: expected a frame with species for --topology, found no frame", o->topology);
    mdnl_reader_close(r);
    return st;
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
    fs->first_open = -1;
    /* Feeding a GPU pipeline without --threads, the readers leave cores to
     * the pipeline's own threads (compute, writer, prepare workers and their
     * teams, the CUDA driver): parsers and decoders three quarters, the
     * workers that only copy frames half (docs/reference.md, --threads). */
    int threads = mdnl_threads(o), copy = threads;
    if (o->feeds_gpu && !o->has_threads && threads >= 4)
        threads -= threads / 4, copy /= 2;
    mdnl_read_options ro = {.group = o->group,
                            .coords_checked = o->coords_checked,
                            .format = o->format,
                            .types = o->types,
                            .atom_style = o->atom_style,
                            .units_native = o->units_native,
                            .keep_extras = o->keep_extras,
                            .threads = threads,
                            .copy_threads = copy};
    mdnl_status st = mdnl_reader_open(path, &ro, &fs->reader);
    if (st == MDNL_OK)
        st = resolve_slice(fs);
    if (st == MDNL_OK)
        mdnl_reader_select(fs->reader, fs->start, fs->stop, fs->step);
    if (st == MDNL_OK && o->topology)
        st = read_topology(o, &fs->topo);
    const char *format = st == MDNL_OK ? mdnl_reader_format(fs->reader) : "";
    if (st == MDNL_OK && o->pairs && !o->topology && (!strcmp(format, "xtc") || !strcmp(format, "trr") ||
                                                       !strcmp(format, "dcd")))
        st = mdnl_error(MDNL_ERR_USAGE, "--pairs %s: %s (%s) holds no species; name them with --topology FILE",
                        o->pairs, path, format);
    /* A selection that is empty whatever the file holds (2:0), or one of an
     * H5MD file (whose count costs nothing), fails before any output; in an
     * XYZ file the first frame past the end finds it (mdnl_frames_next). */
    int64_t n;
    if (st == MDNL_OK && fs->spec &&
        ((fs->stop >= 0 && fs->stop <= fs->start) || strcmp(mdnl_reader_format(fs->reader), "h5md") == 0))
        st = mdnl_frames_count(fs, &n);
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
        const bool check_empty = fs->spec && !fs->yielded && !fs->restricted;
        if (fs->stop >= 0 && k >= fs->stop)
            return check_empty ? empty_selection(fs, -1) : MDNL_END;
        mdnl_status st;
        if (!selected(fs, k)) {
            st = mdnl_reader_skip(fs->reader);
            if (st == MDNL_END && check_empty)
                return empty_selection(fs, k);
            if (st != MDNL_OK)
                return st;
            fs->next_index++;
            continue;
        }
        st = mdnl_reader_next(fs->reader, f);
        if (st == MDNL_END && check_empty)
            return empty_selection(fs, k);
        if (st != MDNL_OK)
            return st;
        fs->yielded++;
        fs->next_index++;
        f->index = k;
        if (!f->has_step)
            f->step = k;
        const mdnl_opts *o = fs->opts;
        if (o->topology) {
            const mdnl_frame *t = &fs->topo;
            if (t->natoms != f->natoms)
                return mdnl_error(MDNL_ERR_INPUT, "%s: frame %lld: expected the %lld atoms of --topology %s, found %lld",
                                  fs->path, (long long)k, (long long)t->natoms, o->topology, (long long)f->natoms);
            memcpy(f->species, t->species, (size_t)t->natoms * sizeof *f->species);
            memcpy(f->symbols, t->symbols, sizeof t->symbols);
            f->nspecies = t->nspecies;
            f->species_tag = 0;
        }
        /* An XYZ frame without a Lattice (LAMMPS dump xyz, most plain XYZ)
         * is an open cluster: remembered for the note of mdnl_frames_note. */
        if (!f->box.has_lattice && !o->has_box && !o->no_pbc && fs->first_open < 0 &&
            strcmp(mdnl_reader_format(fs->reader), "h5md") != 0)
            fs->first_open = k;
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
        if (fs->count == 0 && fs->spec && !fs->restricted) {
            fs->count = -1;
            return empty_selection(fs, total);
        }
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
    fs->restricted = true;
    mdnl_reader_select(fs->reader, fs->start, fs->stop, fs->step);
}

void mdnl_frames_note(const mdnl_frames *fs)
{
    if (!fs || fs->first_open < 0 || fs->opts->quiet || !mdnl_mpi_root())
        return;
    fprintf(stderr,
            "mdnl %s: note: %s: frame %lld has no cell (no Lattice=): frames without one are treated as open; "
            "--box a,b,c sets a periodic cell\n",
            fs->opts->command, fs->path, (long long)fs->first_open);
}

void mdnl_frames_close(mdnl_frames *fs)
{
    if (!fs)
        return;
    mdnl_reader_close(fs->reader);
    mdnl_frame_free(&fs->topo);
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

/* potential.c — parsing and set-up of pair potentials (contract in
 * potential.h). The pair-energy arithmetic itself is inline in the header,
 * shared by the CPU twin (energy_cpu.c) and the kernels (energy.cu). */
#include "potential.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARAMS 4

typedef struct param_desc {
    const char *name;
    int required;
} param_desc;

static const param_desc lj_params[] = {{"epsilon", 1}, {"sigma", 1}, {"shift", 0}};
static const param_desc morse_params[] = {{"d0", 1}, {"alpha", 1}, {"r0", 1}, {"shift", 0}};

static int index_of(const param_desc *d, int n, const char *name, size_t len)
{
    for (int k = 0; k < n; ++k)
        if (strlen(d[k].name) == len && memcmp(d[k].name, name, len) == 0)
            return k;
    return -1;
}

/* Parses a strictly positive finite number that fills the whole token. */
static int parse_positive(const char *s, size_t len, double *out)
{
    char buf[64];
    if (len == 0 || len >= sizeof buf)
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end = NULL;
    double v = strtod(buf, &end);
    if (end != buf + len || !isfinite(v) || !(v > 0))
        return 0;
    *out = v;
    return 1;
}

static mdnl_status finish(mdnl_potential *p)
{
    p->offset = 0.0;
    if (p->kind == MDNL_POTENTIAL_LJ) {
        p->lj3 = 4.0 * p->epsilon * pow(p->sigma, 12.0);
        p->lj4 = 4.0 * p->epsilon * pow(p->sigma, 6.0);
    }
    if (p->shift)
        p->offset = mdnl_potential_raw(p, p->cutoff);
    if (!isfinite(p->lj3) || !isfinite(p->lj4) || !isfinite(p->offset))
        return mdnl_error(MDNL_ERR_USAGE, "--pair: parameters overflow a double (4 epsilon sigma^12 = %g)", p->lj3);
    return MDNL_OK;
}

mdnl_status mdnl_potential_parse(const char *spec, double cutoff, mdnl_potential *out)
{
    if (!spec)
        return mdnl_error(MDNL_ERR_USAGE, "--pair: expected lj:epsilon=E,sigma=S or morse:d0=D,alpha=A,r0=R, got nothing");
    if (!isfinite(cutoff) || !(cutoff > 0))
        return mdnl_error(MDNL_ERR_USAGE, "--pair: needs a cutoff > 0, got %g", cutoff);
    const char *colon = strchr(spec, ':');
    size_t name_len = colon ? (size_t)(colon - spec) : strlen(spec);
    mdnl_potential p;
    memset(&p, 0, sizeof p);
    p.cutoff = cutoff;
    p.shift = 1;
    const param_desc *desc;
    int ndesc;
    const char *pname;
    if (name_len == 2 && memcmp(spec, "lj", 2) == 0) {
        p.kind = MDNL_POTENTIAL_LJ, desc = lj_params, ndesc = 3, pname = "lj";
    } else if (name_len == 5 && memcmp(spec, "morse", 5) == 0) {
        p.kind = MDNL_POTENTIAL_MORSE, desc = morse_params, ndesc = 4, pname = "morse";
    } else {
        return mdnl_error(MDNL_ERR_USAGE, "--pair: expected a potential lj or morse, got \"%.*s\"", (int)name_len,
                          spec);
    }
    double value[MAX_PARAMS] = {0};
    int seen[MAX_PARAMS] = {0};
    const char *s = colon ? colon + 1 : spec + name_len;
    while (colon && *s != '\0') {
        size_t tok_len = strcspn(s, ",");
        const char *eq = memchr(s, '=', tok_len);
        if (!eq)
            return mdnl_error(MDNL_ERR_USAGE, "--pair: %s expected NAME=VALUE, got \"%.*s\"", pname, (int)tok_len, s);
        size_t key_len = (size_t)(eq - s);
        const char *val = eq + 1;
        size_t val_len = tok_len - key_len - 1;
        int k = index_of(desc, ndesc, s, key_len);
        if (k < 0) {
            char names[64] = "";
            for (int q = 0; q < ndesc; ++q)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", q ? ", " : "", desc[q].name);
            return mdnl_error(MDNL_ERR_USAGE, "--pair: %s has no parameter \"%.*s\" (%s takes %s)", pname, (int)key_len,
                              s, pname, names);
        }
        if (seen[k])
            return mdnl_error(MDNL_ERR_USAGE, "--pair: %s parameter %s given twice", pname, desc[k].name);
        seen[k] = 1;
        if (strcmp(desc[k].name, "shift") == 0) {
            if (val_len == 3 && memcmp(val, "yes", 3) == 0)
                p.shift = 1;
            else if (val_len == 2 && memcmp(val, "no", 2) == 0)
                p.shift = 0;
            else
                return mdnl_error(MDNL_ERR_USAGE, "--pair: %s needs shift=yes or shift=no, got \"%.*s\"", pname,
                                  (int)val_len, val);
        } else if (!parse_positive(val, val_len, &value[k])) {
            return mdnl_error(MDNL_ERR_USAGE, "--pair: %s needs %s > 0, got \"%.*s\"", pname, desc[k].name,
                              (int)val_len, val);
        }
        s += tok_len;
        if (*s == ',') {
            ++s;
            if (*s == '\0')
                return mdnl_error(MDNL_ERR_USAGE, "--pair: %s expected NAME=VALUE after the last ',', got nothing",
                                  pname);
        }
    }
    for (int k = 0; k < ndesc; ++k)
        if (desc[k].required && !seen[k])
            return mdnl_error(MDNL_ERR_USAGE, "--pair: %s needs %s > 0, got none", pname, desc[k].name);
    if (p.kind == MDNL_POTENTIAL_LJ) {
        p.epsilon = value[0], p.sigma = value[1];
    } else {
        p.d0 = value[0], p.alpha = value[1], p.r0 = value[2];
    }
    mdnl_status st = finish(&p);
    if (st == MDNL_OK)
        *out = p;
    return st;
}

mdnl_status mdnl_potential_make(mdnl_potential_kind kind, double a, double b, double c, int shift, double cutoff,
                                mdnl_potential *out)
{
    char spec[256];
    if (kind == MDNL_POTENTIAL_LJ)
        snprintf(spec, sizeof spec, "lj:epsilon=%.17g,sigma=%.17g,shift=%s", a, b, shift ? "yes" : "no");
    else if (kind == MDNL_POTENTIAL_MORSE)
        snprintf(spec, sizeof spec, "morse:d0=%.17g,alpha=%.17g,r0=%.17g,shift=%s", a, b, c, shift ? "yes" : "no");
    else
        return mdnl_error(MDNL_ERR_USAGE, "--pair: unknown potential kind %d", (int)kind);
    return mdnl_potential_parse(spec, cutoff, out);
}

const char *mdnl_potential_describe(const mdnl_potential *p, char *buf, size_t size)
{
    const char *sh = p->shift ? "yes" : "no";
    if (p->kind == MDNL_POTENTIAL_LJ)
        snprintf(buf, size, "lj:epsilon=%g,sigma=%g,shift=%s", p->epsilon, p->sigma, sh);
    else if (p->kind == MDNL_POTENTIAL_MORSE)
        snprintf(buf, size, "morse:d0=%g,alpha=%g,r0=%g,shift=%s", p->d0, p->alpha, p->r0, sh);
    else
        snprintf(buf, size, "none");
    return buf;
}

/* ---- per-pair parameters ---- */

/* Copies the parameter list `params` (NAME=VALUE,...) into `rest` without
 * its cut=... and (mix not NULL) mix=... tokens, whose values go to cut and
 * mix ("" when absent). */
static mdnl_status split_extras(const char *opt, const char *params, char *rest, size_t size, char *cut, char *mix)
{
    rest[0] = cut[0] = '\0';
    if (mix)
        mix[0] = '\0';
    const char *s = params;
    while (*s) {
        size_t len = strcspn(s, ",");
        char *dst = NULL;
        if (len > 4 && memcmp(s, "cut=", 4) == 0)
            dst = cut;
        else if (mix && len > 4 && memcmp(s, "mix=", 4) == 0)
            dst = mix;
        if (dst) {
            if (dst[0])
                return mdnl_error(MDNL_ERR_USAGE, "%s: parameter %.3s given twice", opt, s);
            if (len - 4 >= 64)
                return mdnl_error(MDNL_ERR_USAGE, "%s: value too long in \"%.*s\"", opt, (int)len, s);
            memcpy(dst, s + 4, len - 4);
            dst[len - 4] = '\0';
        } else {
            size_t used = strlen(rest);
            if (used + len + 2 > size)
                return mdnl_error(MDNL_ERR_USAGE, "%s: parameter list too long", opt);
            snprintf(rest + used, size - used, "%s%.*s", used ? "," : "", (int)len, s);
        }
        s += len;
        if (*s == ',')
            ++s;
    }
    return MDNL_OK;
}

static int type_of_name(mdnl_pair_table *t, const char *name, size_t len, int add)
{
    for (int k = 1; k < t->ntypes; ++k)
        if (strlen(t->names[k]) == len && memcmp(t->names[k], name, len) == 0)
            return k;
    if (!add || t->ntypes >= MDNL_PAIR_TYPES_MAX)
        return -1;
    memcpy(t->names[t->ntypes], name, len);
    t->names[t->ntypes][len] = '\0';
    return t->ntypes++;
}

static double mix_distance(int mix, double a, double b) { return mix == MDNL_MIX_ARITHMETIC ? 0.5 * (a + b) : sqrt(a * b); }

mdnl_status mdnl_pair_table_parse(const char *spec, const char *const *coeffs, int ncoeff, double cutoff,
                                  mdnl_pair_table *out)
{
    if (!spec)
        return mdnl_potential_parse(spec, cutoff, &out->p[0]);
    if (ncoeff > MDNL_PAIR_COEFF_MAX)
        return mdnl_error(MDNL_ERR_USAGE, "--pair-coeff: at most %d, got %d", MDNL_PAIR_COEFF_MAX, ncoeff);
    mdnl_pair_table t;
    memset(&t, 0, sizeof t);
    t.ntypes = 1;
    char rest[256], cut[64], mix[64];
    mdnl_status st;
    const char *colon = strchr(spec, ':');
    if ((st = split_extras("--pair", colon ? colon + 1 : "", rest, sizeof rest, cut, mix)) != MDNL_OK)
        return st;
    if (mix[0] && strcmp(mix, "geometric") != 0 && strcmp(mix, "arithmetic") != 0)
        return mdnl_error(MDNL_ERR_USAGE, "--pair: needs mix=geometric or mix=arithmetic, got \"%s\"", mix);
    t.mix = strcmp(mix, "arithmetic") == 0 ? MDNL_MIX_ARITHMETIC : MDNL_MIX_GEOMETRIC;
    double base_cut = cutoff;
    if (cut[0] && !parse_positive(cut, strlen(cut), &base_cut))
        return mdnl_error(MDNL_ERR_USAGE, "--pair: needs cut > 0, got \"%s\"", cut);
    char base_spec[320];
    snprintf(base_spec, sizeof base_spec, "%.*s%s%s", colon ? (int)(colon - spec) : (int)strlen(spec), spec,
             colon ? ":" : "", rest);
    mdnl_potential base;
    if ((st = mdnl_potential_parse(base_spec, base_cut, &base)) != MDNL_OK)
        return st;
    /* The coefficients, by type pair; set[] marks the given ones. */
    mdnl_potential given[MDNL_PAIR_TYPES_MAX][MDNL_PAIR_TYPES_MAX];
    int set[MDNL_PAIR_TYPES_MAX][MDNL_PAIR_TYPES_MAX] = {{0}};
    const char *kname = base.kind == MDNL_POTENTIAL_LJ ? "lj" : "morse";
    for (int q = 0; q < ncoeff; ++q) {
        const char *c = coeffs[q];
        const char *cc = strchr(c, ':');
        const char *dash = cc ? memchr(c, '-', (size_t)(cc - c)) : NULL;
        if (!cc || !dash || dash == c || dash + 1 == cc || memchr(dash + 1, '-', (size_t)(cc - dash - 1)))
            return mdnl_error(MDNL_ERR_USAGE, "--pair-coeff: expected A-B:NAME=VALUE,..., got \"%s\"", c);
        const size_t la = (size_t)(dash - c), lb = (size_t)(cc - dash - 1);
        if (la >= MDNL_SYMBOL_LEN || lb >= MDNL_SYMBOL_LEN)
            return mdnl_error(MDNL_ERR_USAGE, "--pair-coeff: species name longer than %d characters in \"%s\"",
                              MDNL_SYMBOL_LEN - 1, c);
        const int a = type_of_name(&t, c, la, 1), b = type_of_name(&t, dash + 1, lb, 1);
        if (a < 0 || b < 0)
            return mdnl_error(MDNL_ERR_USAGE, "--pair-coeff: at most %d species can be named, got more in \"%s\"",
                              MDNL_PAIR_TYPES_MAX - 1, c);
        if (set[a][b])
            return mdnl_error(MDNL_ERR_USAGE, "--pair-coeff: pair %.*s-%.*s given twice", (int)la, c, (int)lb,
                              dash + 1);
        char opt[64];
        snprintf(opt, sizeof opt, "--pair-coeff %.*s-%.*s", (int)la, c, (int)lb, dash + 1);
        if ((st = split_extras(opt, cc + 1, rest, sizeof rest, cut, NULL)) != MDNL_OK)
            return st;
        double pc = base_cut;
        if (cut[0] && !parse_positive(cut, strlen(cut), &pc))
            return mdnl_error(MDNL_ERR_USAGE, "%s: needs cut > 0, got \"%s\"", opt, cut);
        char cspec[320];
        snprintf(cspec, sizeof cspec, "%s:%s%s", kname, rest,
                 strstr(rest, "shift=") ? "" : (base.shift ? ",shift=yes" : ",shift=no"));
        if ((st = mdnl_potential_parse(cspec, pc, &given[a][b])) != MDNL_OK) {
            char why[256];
            const char *e = mdnl_last_error();
            snprintf(why, sizeof why, "%s", strncmp(e, "--pair: ", 8) == 0 ? e + 8 : e);
            return mdnl_error(st, "%s: %s", opt, why);
        }
        given[b][a] = given[a][b];
        set[a][b] = set[b][a] = 1;
    }
    const int n = t.ntypes;
    /* Each type's own pair: given, or the --pair parameters. */
    mdnl_potential self[MDNL_PAIR_TYPES_MAX];
    for (int a = 0; a < n; ++a)
        self[a] = set[a][a] ? given[a][a] : base;
    t.max_cutoff = 0.0;
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b) {
            mdnl_potential p = base;
            if (set[a][b]) {
                p = given[a][b];
            } else if (a == b) {
                p = self[a];
            } else if (base.kind == MDNL_POTENTIAL_LJ && (a > 0 || b > 0)) {
                const mdnl_potential *x = &self[a], *y = &self[b];
                if ((st = mdnl_potential_make(MDNL_POTENTIAL_LJ, sqrt(x->epsilon * y->epsilon),
                                              mix_distance(t.mix, x->sigma, y->sigma), 0.0, base.shift,
                                              mix_distance(t.mix, x->cutoff, y->cutoff), &p)) != MDNL_OK)
                    return st;
            }
            t.p[a * n + b] = p;
            t.cut2[a * n + b] = (float)(p.cutoff * p.cutoff);
            t.max_cutoff = p.cutoff > t.max_cutoff ? p.cutoff : t.max_cutoff;
        }
    *out = t;
    return MDNL_OK;
}

mdnl_status mdnl_pair_table_types(const mdnl_pair_table *t, const char *input, const mdnl_frame *f, int32_t *types)
{
    int32_t of_species[MDNL_MAX_SPECIES];
    for (int32_t s = 0; s < f->nspecies && s < MDNL_MAX_SPECIES; ++s)
        of_species[s] = 0;
    for (int k = 1; k < t->ntypes; ++k) {
        int32_t found = -1;
        for (int32_t s = 0; s < f->nspecies && found < 0; ++s)
            if (strcmp(f->symbols[s], t->names[k]) == 0)
                found = s;
        if (found < 0)
            return mdnl_error(MDNL_ERR_INPUT, "%s: frame %lld: --pair-coeff names species %s, which the frame does not have",
                              input, (long long)f->index, t->names[k]);
        of_species[found] = k;
    }
    for (int64_t i = 0; i < f->natoms; ++i) {
        const int32_t s = f->species[i];
        types[i] = s >= 0 && s < f->nspecies ? of_species[s] : 0;
    }
    return MDNL_OK;
}

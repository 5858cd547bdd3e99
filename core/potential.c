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

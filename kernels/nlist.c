/* nlist.c — the backend-independent parts of nlist.h: storage and names. */
#include "nlist.h"

#include <stdlib.h>
#include <string.h>

mdnl_status mdnl_nlist_reserve(mdnl_nlist *l, int64_t natoms, int64_t npairs)
{
    if (l->cap_atoms < natoms + 1) {
        int64_t *o = mdnl_realloc(l->offsets, (size_t)(natoms + 1) * sizeof *o, "neighbor list offsets");
        if (!o)
            return MDNL_ERR_RESOURCE;
        l->offsets = o;
        l->cap_atoms = natoms + 1;
    }
    if (l->cap_pairs < npairs) {
        int64_t cap = npairs + npairs / 4 + 16;
        int32_t *j = mdnl_realloc(l->j, (size_t)cap * sizeof *j, "neighbor list indices");
        if (!j)
            return MDNL_ERR_RESOURCE;
        l->j = j;
        float *d = mdnl_realloc(l->d, (size_t)cap * sizeof *d, "neighbor list distances");
        if (!d)
            return MDNL_ERR_RESOURCE;
        l->d = d;
        l->cap_pairs = cap;
    }
    return MDNL_OK;
}

void mdnl_nlist_free(mdnl_nlist *l)
{
    if (!l)
        return;
    free(l->offsets);
    free(l->j);
    free(l->d);
    memset(l, 0, sizeof *l);
}

static const char *const method_names[] = {"auto", "brute-atomic", "brute-noatomic", "cell"};

const char *mdnl_method_name(mdnl_method m)
{
    return (unsigned)m < sizeof method_names / sizeof *method_names ? method_names[m] : "?";
}

mdnl_status mdnl_method_parse(const char *name, mdnl_method *m)
{
    for (unsigned k = 0; k < sizeof method_names / sizeof *method_names; ++k)
        if (strcmp(name, method_names[k]) == 0) {
            *m = (mdnl_method)k;
            return MDNL_OK;
        }
    return mdnl_error(MDNL_ERR_USAGE, "--method: expected auto, brute-atomic, brute-noatomic or cell, got \"%s\"",
                      name);
}

/* frame.c — storage helpers for mdnl_frame (see frame.h). */
#include "frame.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

mdnl_status mdnl_frame_reserve(mdnl_frame *f, int64_t n)
{
    if (n < 0)
        return mdnl_error(MDNL_ERR_INTERNAL, "mdnl_frame_reserve: negative atom count %lld", (long long)n);
    if (n <= f->capacity)
        return MDNL_OK;
    int64_t cap = f->capacity ? f->capacity : 16;
    while (cap < n)
        cap *= 2;
    double(*pos)[3];
    if (f->pos_alloc) {
        if (!(pos = f->pos_alloc->alloc((size_t)cap * sizeof *pos, "frame positions", f->pos_alloc->ctx)))
            return MDNL_ERR_RESOURCE;
        if (f->pos)
            memcpy(pos, f->pos, (size_t)f->capacity * sizeof *pos);
        f->pos_alloc->free(f->pos, f->pos_alloc->ctx);
    } else if (!(pos = mdnl_realloc(f->pos, (size_t)cap * sizeof *pos, "frame positions"))) {
        return MDNL_ERR_RESOURCE;
    }
    f->pos = pos;
    int32_t *sp = mdnl_realloc(f->species, (size_t)cap * sizeof *sp, "frame species");
    if (!sp)
        return MDNL_ERR_RESOURCE;
    f->species = sp;
    f->species_tag = 0;
    f->capacity = cap;
    return MDNL_OK;
}

int32_t mdnl_frame_species_id(mdnl_frame *f, const char *symbol, size_t len)
{
    for (int32_t s = 0; s < f->nspecies; ++s)
        if (strlen(f->symbols[s]) == len && memcmp(f->symbols[s], symbol, len) == 0)
            return s;
    if (len == 0 || len >= MDNL_SYMBOL_LEN) {
        mdnl_error(MDNL_ERR_INPUT, "species name of %zu characters (1 to %d expected)", len, MDNL_SYMBOL_LEN - 1);
        return -1;
    }
    if (f->nspecies >= MDNL_MAX_SPECIES) {
        mdnl_error(MDNL_ERR_INPUT, "more than %d distinct species", MDNL_MAX_SPECIES);
        return -1;
    }
    memcpy(f->symbols[f->nspecies], symbol, len);
    f->symbols[f->nspecies][len] = '\0';
    return f->nspecies++;
}

void mdnl_frame_free(mdnl_frame *f)
{
    if (!f)
        return;
    if (f->pos_alloc)
        f->pos_alloc->free(f->pos, f->pos_alloc->ctx);
    else
        free(f->pos);
    free(f->species);
    memset(f, 0, sizeof *f);
}

mdnl_status mdnl_frame_take(mdnl_frame *f, mdnl_frame *from)
{
    if (f->pos_alloc == from->pos_alloc) {
        const mdnl_frame t = *f;
        *f = *from;
        *from = t;
        f->max_pairs = t.max_pairs, f->limit_option = t.limit_option;
        from->max_pairs = 0, from->limit_option = NULL;
        return MDNL_OK;
    }
    mdnl_status st = mdnl_frame_reserve(f, from->natoms);
    if (st != MDNL_OK)
        return st;
    if (from->natoms) {
        memcpy(f->pos, from->pos, (size_t)from->natoms * sizeof *f->pos);
        memcpy(f->species, from->species, (size_t)from->natoms * sizeof *f->species);
    }
    memcpy(f->symbols, from->symbols, (size_t)from->nspecies * sizeof *f->symbols);
    f->nspecies = from->nspecies;
    f->species_tag = 0;
    f->natoms = from->natoms;
    f->index = from->index;
    f->box = from->box;
    f->step = from->step, f->time = from->time;
    f->has_step = from->has_step, f->has_time = from->has_time;
    return MDNL_OK;
}

double mdnl_box_volume(const mdnl_box *b)
{
    if (!b->has_lattice)
        return 0.0;
    const double(*h)[3] = b->h;
    double det = h[0][0] * (h[1][1] * h[2][2] - h[1][2] * h[2][1]) - h[0][1] * (h[1][0] * h[2][2] - h[1][2] * h[2][0]) +
                 h[0][2] * (h[1][0] * h[2][1] - h[1][1] * h[2][0]);
    return fabs(det);
}

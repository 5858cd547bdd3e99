/* lammps_common.c — the --types map and the LAMMPS box (lammps_common.h). */
#include "lammps_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

mdnl_status mdnl_lammps_types_parse(const char *spec, mdnl_lammps_types *t)
{
    memset(t, 0, sizeof *t);
    if (!spec)
        return MDNL_OK;
    for (const char *p = spec; *p;) {
        const char *comma = strchr(p, ',');
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        char *end;
        errno = 0;
        long long ty = eq ? strtoll(p, &end, 10) : 0;
        const size_t nl = eq ? len - (size_t)(eq + 1 - p) : 0;
        if (!eq || end != eq || eq == p || errno || nl == 0 || nl >= MDNL_SYMBOL_LEN || t->n == MDNL_LAMMPS_MAX_TYPES)
            return mdnl_error(MDNL_ERR_USAGE,
                              "--types: expected TYPE=NAME pairs like 1=Cu,2=O (names up to %d characters, at most "
                              "%d pairs), got \"%s\"",
                              MDNL_SYMBOL_LEN - 1, MDNL_LAMMPS_MAX_TYPES, spec);
        t->type[t->n] = ty;
        memcpy(t->name[t->n], eq + 1, nl);
        t->name[t->n][nl] = '\0';
        t->n++;
        p += len + (comma ? 1 : 0);
    }
    return MDNL_OK;
}

int32_t mdnl_lammps_species(mdnl_frame *f, const mdnl_lammps_types *t, const char *s, const char *e)
{
    if (t->n) {
        char buf[32];
        const size_t len = (size_t)(e - s);
        if (len < sizeof buf) {
            memcpy(buf, s, len);
            buf[len] = '\0';
            char *end;
            long long ty = strtoll(buf, &end, 10);
            if (end == buf + len && len)
                for (int k = 0; k < t->n; ++k)
                    if (t->type[k] == ty)
                        return mdnl_frame_species_id(f, t->name[k], strlen(t->name[k]));
        }
    }
    return mdnl_frame_species_id(f, s, (size_t)(e - s));
}

void mdnl_lammps_cell(const double lo[3], const double hi[3], double xy, double xz, double yz, mdnl_box *box)
{
    memset(box->h, 0, sizeof box->h);
    box->h[0][0] = hi[0] - lo[0];
    box->h[1][0] = xy;
    box->h[1][1] = hi[1] - lo[1];
    box->h[2][0] = xz;
    box->h[2][1] = yz;
    box->h[2][2] = hi[2] - lo[2];
    box->has_lattice = true;
}

struct mdnl_lammps_id_row {
    int64_t id, row;
};

static int cmp_id(const void *a, const void *b)
{
    const int64_t x = ((const struct mdnl_lammps_id_row *)a)->id, y = ((const struct mdnl_lammps_id_row *)b)->id;
    return x < y ? -1 : x > y;
}

mdnl_status mdnl_lammps_ids_reserve(mdnl_lammps_ids *ids, int64_t n)
{
    if (n <= ids->cap)
        return MDNL_OK;
    int64_t cap = ids->cap ? ids->cap : 1024;
    while (cap < n)
        cap *= 2;
    int64_t *id = mdnl_realloc(ids->id, (size_t)cap * sizeof *id, "LAMMPS atom ids");
    if (!id)
        return MDNL_ERR_RESOURCE;
    ids->id = id;
    struct mdnl_lammps_id_row *s = mdnl_realloc(ids->scratch, (size_t)cap * sizeof *s, "LAMMPS atom ids");
    if (!s)
        return MDNL_ERR_RESOURCE;
    ids->scratch = s;
    ids->cap = cap;
    return MDNL_OK;
}

/* Sorts (id, row) pairs, then applies the permutation by cycles to the
 * positions and species together, in place. */
mdnl_status mdnl_lammps_order_by_id(mdnl_lammps_ids *ids, mdnl_frame *f, const char *name, int64_t frame)
{
    const int64_t n = f->natoms;
    bool sorted = true;
    for (int64_t i = 1; i < n && sorted; ++i)
        sorted = ids->id[i - 1] < ids->id[i];
    if (sorted)
        return MDNL_OK;
    struct mdnl_lammps_id_row *perm = ids->scratch;
    for (int64_t i = 0; i < n; ++i)
        perm[i] = (struct mdnl_lammps_id_row){ids->id[i], i};
    qsort(perm, (size_t)n, sizeof *perm, cmp_id);
    for (int64_t i = 1; i < n; ++i)
        if (perm[i].id == perm[i - 1].id)
            return mdnl_error(MDNL_ERR_INPUT, "%s: frame %lld: expected distinct atom ids, found id %lld twice", name,
                              (long long)frame, (long long)perm[i].id);
    /* perm[j].row: the row that goes to j; -1 once placed. */
    for (int64_t i = 0; i < n; ++i) {
        if (perm[i].row < 0)
            continue;
        int64_t j = i;
        double p0[3] = {f->pos[i][0], f->pos[i][1], f->pos[i][2]};
        const int32_t s0 = f->species[i];
        for (;;) {
            const int64_t k = perm[j].row;
            perm[j].row = -1;
            if (k == i) {
                memcpy(f->pos[j], p0, sizeof p0);
                f->species[j] = s0;
                break;
            }
            memcpy(f->pos[j], f->pos[k], sizeof p0);
            f->species[j] = f->species[k];
            j = k;
        }
    }
    return MDNL_OK;
}

void mdnl_lammps_ids_free(mdnl_lammps_ids *ids)
{
    free(ids->id);
    free(ids->scratch);
    memset(ids, 0, sizeof *ids);
}

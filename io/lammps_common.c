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

/* lammps_dump_writer.c — LAMMPS `dump custom` text (lammps_dump_writer.h). */
#include "lammps_dump_writer.h"

#include "geometry.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* The restricted triclinic cell of h (same lengths and angles): rows
 * a' = (ax, 0, 0), b' = (bx, by, 0), c' = (cx, cy, cz). */
static void restricted_cell(const double h[3][3], double r[3][3])
{
    const double la = sqrt(h[0][0] * h[0][0] + h[0][1] * h[0][1] + h[0][2] * h[0][2]);
    const double ab = h[0][0] * h[1][0] + h[0][1] * h[1][1] + h[0][2] * h[1][2];
    const double ac = h[0][0] * h[2][0] + h[0][1] * h[2][1] + h[0][2] * h[2][2];
    const double bc = h[1][0] * h[2][0] + h[1][1] * h[2][1] + h[1][2] * h[2][2];
    const double lb2 = h[1][0] * h[1][0] + h[1][1] * h[1][1] + h[1][2] * h[1][2];
    const double lc2 = h[2][0] * h[2][0] + h[2][1] * h[2][1] + h[2][2] * h[2][2];
    memset(r, 0, 9 * sizeof **r);
    r[0][0] = la;
    r[1][0] = ab / la;
    r[1][1] = sqrt(fmax(lb2 - r[1][0] * r[1][0], 0));
    r[2][0] = ac / la;
    r[2][1] = (bc - r[1][0] * r[2][0]) / r[1][1];
    r[2][2] = sqrt(fmax(lc2 - r[2][0] * r[2][0] - r[2][1] * r[2][1], 0));
    /* keep the handedness: a left-handed cell stays left-handed */
    const double det = h[0][0] * (h[1][1] * h[2][2] - h[1][2] * h[2][1]) -
                       h[0][1] * (h[1][0] * h[2][2] - h[1][2] * h[2][0]) +
                       h[0][2] * (h[1][0] * h[2][1] - h[1][1] * h[2][0]);
    if (det < 0)
        r[2][2] = -r[2][2];
}

static bool is_restricted(const double h[3][3])
{
    return h[0][1] == 0 && h[0][2] == 0 && h[1][2] == 0 && h[0][0] > 0 && h[1][1] > 0 && h[2][2] > 0;
}

mdnl_status mdnl_lammps_dump_write(FILE *fp, const mdnl_frame *f)
{
    const mdnl_box *b = &f->box;
    double h[3][3] = {{0}}, lo[3] = {0, 0, 0}, t[3][3]; /* t: r' = r t */
    bool rotate = false;
    if (b->has_lattice) {
        if (is_restricted(b->h)) {
            memcpy(h, b->h, sizeof h);
        } else {
            double inv[3][3];
            restricted_cell(b->h, h);
            if (!mdnl_mat3_invert(b->h, inv))
                return mdnl_error(MDNL_ERR_INPUT, "frame %lld: a cell of zero volume cannot be written as a LAMMPS box",
                                  (long long)f->index);
            for (int i = 0; i < 3; ++i)
                for (int j = 0; j < 3; ++j)
                    t[i][j] = inv[i][0] * h[0][j] + inv[i][1] * h[1][j] + inv[i][2] * h[2][j];
            rotate = true;
        }
    } else {
        double hi[3] = {0, 0, 0};
        for (int64_t i = 0; i < f->natoms; ++i)
            for (int k = 0; k < 3; ++k) {
                lo[k] = i == 0 || f->pos[i][k] < lo[k] ? f->pos[i][k] : lo[k];
                hi[k] = i == 0 || f->pos[i][k] > hi[k] ? f->pos[i][k] : hi[k];
            }
        for (int k = 0; k < 3; ++k)
            h[k][k] = hi[k] > lo[k] ? hi[k] - lo[k] : 1.0;
    }
    const double xy = h[1][0], xz = h[2][0], yz = h[2][1];
    const bool tilted = xy != 0 || xz != 0 || yz != 0;
    fprintf(fp, "ITEM: TIMESTEP\n%lld\nITEM: NUMBER OF ATOMS\n%lld\nITEM: BOX BOUNDS %s%s %s %s\n",
            (long long)f->step, (long long)f->natoms, tilted ? "xy xz yz " : "", b->pbc[0] ? "pp" : "ff",
            b->pbc[1] ? "pp" : "ff", b->pbc[2] ? "pp" : "ff");
    if (tilted) { /* box -> bounding box (LAMMPS Howto triclinic) */
        const double xmin = fmin(fmin(0.0, xy), fmin(xz, xy + xz)), xmax = fmax(fmax(0.0, xy), fmax(xz, xy + xz));
        fprintf(fp, "%.17g %.17g %.17g\n%.17g %.17g %.17g\n%.17g %.17g %.17g\n", lo[0] + xmin, lo[0] + h[0][0] + xmax,
                xy, lo[1] + fmin(0.0, yz), lo[1] + h[1][1] + fmax(0.0, yz), xz, lo[2], lo[2] + h[2][2], yz);
    } else {
        for (int k = 0; k < 3; ++k)
            fprintf(fp, "%.17g %.17g\n", lo[k], lo[k] + h[k][k]);
    }
    fputs("ITEM: ATOMS id type element x y z\n", fp);
    for (int64_t i = 0; i < f->natoms; ++i) {
        const double *r = f->pos[i];
        double p[3] = {r[0], r[1], r[2]};
        if (rotate)
            for (int k = 0; k < 3; ++k)
                p[k] = r[0] * t[0][k] + r[1] * t[1][k] + r[2] * t[2][k];
        fprintf(fp, "%lld %d %s %.10g %.10g %.10g\n", (long long)i + 1, f->species[i] + 1, f->symbols[f->species[i]],
                p[0], p[1], p[2]);
    }
    if (ferror(fp))
        return mdnl_error(MDNL_ERR_RESOURCE, "write failed: %s", strerror(errno));
    return MDNL_OK;
}

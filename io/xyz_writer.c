/* xyz_writer.c — XYZ / extended-XYZ output (see xyz_writer.h). */
#include "xyz_writer.h"

#include "xyz_reader.h"

#include <errno.h>
#include <string.h>

static mdnl_status write_frame(FILE *fp, const mdnl_frame *f, int extended, const mdnl_xyz_extras *ex)
{
    const bool columns = ex && ex->properties && ex->properties[0] && ex->natoms == f->natoms;
    fprintf(fp, "%lld\n", (long long)f->natoms);
    if (extended) {
        const mdnl_box *b = &f->box;
        if (b->has_lattice)
            fprintf(fp, "Lattice=\"%.10f %.10f %.10f %.10f %.10f %.10f %.10f %.10f %.10f\" ", b->h[0][0], b->h[0][1],
                    b->h[0][2], b->h[1][0], b->h[1][1], b->h[1][2], b->h[2][0], b->h[2][1], b->h[2][2]);
        fprintf(fp, "Properties=species:S:1:pos:R:3%s%s", columns ? ":" : "", columns ? ex->properties : "");
        if (b->has_lattice)
            fprintf(fp, " pbc=\"%c %c %c\"", b->pbc[0] ? 'T' : 'F', b->pbc[1] ? 'T' : 'F', b->pbc[2] ? 'T' : 'F');
        if (f->has_step)
            fprintf(fp, " Step=%lld", (long long)f->step);
        if (f->has_time)
            fprintf(fp, " Time=%.17g", f->time);
        if (ex && ex->info && ex->info[0])
            fprintf(fp, " %s", ex->info);
    } else if (f->has_step) {
        fprintf(fp, "Step=%lld", (long long)f->step);
    }
    fputc('\n', fp);
    for (int64_t i = 0; i < f->natoms; ++i) {
        fprintf(fp, "%s %.10f %.10f %.10f", f->symbols[f->species[i]], f->pos[i][0], f->pos[i][1], f->pos[i][2]);
        if (columns)
            fprintf(fp, " %.*s", (int)(ex->offset[i + 1] - ex->offset[i]), ex->text + ex->offset[i]);
        fputc('\n', fp);
    }
    if (ferror(fp))
        return mdnl_error(MDNL_ERR_RESOURCE, "write failed: %s", strerror(errno));
    return MDNL_OK;
}

mdnl_status mdnl_xyz_write(FILE *fp, const mdnl_frame *f, int extended) { return write_frame(fp, f, extended, NULL); }

mdnl_status mdnl_xyz_write_extras(FILE *fp, const mdnl_frame *f, const mdnl_xyz_extras *ex)
{
    return write_frame(fp, f, 1, ex);
}

/* dcd_writer.c — DCD output (see dcd_writer.h; the layout is described in
 * dcd_reader.c). */
#include "dcd_writer.h"

#include "geometry.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define AKMA_PS 0.04888821

static bool put_record(FILE *fp, const void *data, uint32_t len)
{
    return fwrite(&len, 4, 1, fp) == 1 && (len == 0 || fwrite(data, 1, len, fp) == len) && fwrite(&len, 4, 1, fp) == 1;
}

static mdnl_status write_failed(void) { return mdnl_error(MDNL_ERR_RESOURCE, "write failed: %s", strerror(errno)); }

/* The header records: CORD + ICNTRL, the title, the atom count. */
static bool write_header(mdnl_dcd_writer *w)
{
    uint8_t h[84] = {0};
    int32_t ic[20] = {0};
    ic[0] = (int32_t)(w->nframes < INT_MAX ? w->nframes : INT_MAX);
    const int64_t nsavc = w->nframes > 1 && w->step1 > w->step0 ? w->step1 - w->step0 : 1;
    ic[1] = (int32_t)w->step0;
    ic[2] = (int32_t)nsavc;
    ic[3] = (int32_t)(nsavc * (w->nframes > 0 ? w->nframes : 1));
    float delta = 0;
    if (w->has_time && w->nframes > 1 && w->step1 > w->step0)
        delta = (float)((w->time1 - w->time0) / (double)(w->step1 - w->step0) / AKMA_PS);
    memcpy(&ic[9], &delta, 4);
    ic[10] = w->cell;
    ic[19] = 24; /* CHARMM version: the CHARMM layout (float DELTA, cell flag) */
    memcpy(h, "CORD", 4);
    memcpy(h + 4, ic, sizeof ic);
    char title[4 + 80];
    const int32_t one = 1;
    memcpy(title, &one, 4);
    memset(title + 4, ' ', 80);
    memcpy(title + 4, "Created by mdnl", 15);
    const int32_t n = (int32_t)w->natoms;
    return put_record(w->fp, h, 84) && put_record(w->fp, title, sizeof title) && put_record(w->fp, &n, 4);
}

/* h (rows a, b, c) as lengths and cosines, and the same cell with a along
 * x and b in the xy plane. */
static void standard_cell(const double h[3][3], double uc[6], double hs[3][3])
{
    const double la = sqrt(h[0][0] * h[0][0] + h[0][1] * h[0][1] + h[0][2] * h[0][2]);
    const double lb = sqrt(h[1][0] * h[1][0] + h[1][1] * h[1][1] + h[1][2] * h[1][2]);
    const double lc = sqrt(h[2][0] * h[2][0] + h[2][1] * h[2][1] + h[2][2] * h[2][2]);
    const double ca = (h[1][0] * h[2][0] + h[1][1] * h[2][1] + h[1][2] * h[2][2]) / (lb * lc);
    const double cb = (h[0][0] * h[2][0] + h[0][1] * h[2][1] + h[0][2] * h[2][2]) / (la * lc);
    const double cg = (h[0][0] * h[1][0] + h[0][1] * h[1][1] + h[0][2] * h[1][2]) / (la * lb);
    uc[0] = la, uc[1] = cg, uc[2] = lb, uc[3] = cb, uc[4] = ca, uc[5] = lc;
    const double sg = sqrt(1 - cg * cg);
    memset(hs, 0, 9 * sizeof(double));
    hs[0][0] = la;
    hs[1][0] = lb * cg, hs[1][1] = lb * sg;
    hs[2][0] = lc * cb, hs[2][1] = lc * (ca - cb * cg) / sg;
    const double zz = lc * lc - hs[2][0] * hs[2][0] - hs[2][1] * hs[2][1];
    hs[2][2] = zz > 0 ? sqrt(zz) : 0;
}

mdnl_status mdnl_dcd_write(mdnl_dcd_writer *w, const mdnl_frame *f)
{
    if (w->nframes == 0) {
        if (f->natoms > INT_MAX / 4)
            return mdnl_error(MDNL_ERR_INPUT, "frame %lld: %lld atoms do not fit in a DCD file", (long long)f->index,
                              (long long)f->natoms);
        w->natoms = f->natoms;
        w->cell = f->box.has_lattice;
        w->step0 = f->step;
        w->time0 = f->time;
        w->has_time = f->has_time;
        if (!(w->buf = mdnl_malloc((size_t)w->natoms * 3 * sizeof *w->buf + 1, "DCD coordinates")))
            return MDNL_ERR_RESOURCE;
        if (!write_header(w))
            return write_failed();
    } else if (f->natoms != w->natoms) {
        return mdnl_error(MDNL_ERR_INPUT, "frame %lld: %lld atoms, but DCD holds one atom count (%lld in the first "
                                          "frame)",
                          (long long)f->index, (long long)f->natoms, (long long)w->natoms);
    }
    if (w->nframes == 1) {
        w->step1 = f->step;
        w->time1 = f->time;
    }
    const int64_t n = f->natoms;
    double uc[6] = {0, 0, 0, 0, 0, 0}, hs[3][3] = {{0}}, inv[3][3] = {{0}};
    const double(*h)[3] = f->box.h;
    bool rotate = false;
    if (w->cell && f->box.has_lattice) {
        standard_cell(h, uc, hs);
        rotate = !(h[0][1] == 0 && h[0][2] == 0 && h[1][2] == 0 && h[0][0] > 0 && h[1][1] > 0 && h[2][2] > 0);
        if (rotate && !mdnl_mat3_invert(h, inv))
            return mdnl_error(MDNL_ERR_INPUT, "frame %lld: a cell of zero volume cannot be written to DCD",
                              (long long)f->index);
    }
    for (int64_t i = 0; i < n; ++i) {
        const double *x = f->pos[i];
        double y[3] = {x[0], x[1], x[2]};
        if (rotate) {
            double s[3];
            for (int k = 0; k < 3; ++k)
                s[k] = x[0] * inv[0][k] + x[1] * inv[1][k] + x[2] * inv[2][k];
            for (int k = 0; k < 3; ++k)
                y[k] = s[0] * hs[0][k] + s[1] * hs[1][k] + s[2] * hs[2][k];
        }
        for (int k = 0; k < 3; ++k)
            w->buf[k * n + i] = (float)y[k];
    }
    bool ok = !w->cell || put_record(w->fp, uc, sizeof uc);
    for (int k = 0; k < 3 && ok; ++k)
        ok = put_record(w->fp, w->buf + k * n, (uint32_t)(4 * n));
    if (!ok)
        return write_failed();
    w->nframes++;
    return MDNL_OK;
}

mdnl_status mdnl_dcd_finish(mdnl_dcd_writer *w)
{
    if (w->nframes == 0) {
        w->natoms = 0;
        if (!write_header(w))
            return write_failed();
    } else if (fseek(w->fp, 0, SEEK_SET) != 0 || !write_header(w) || fseek(w->fp, 0, SEEK_END) != 0) {
        return write_failed();
    }
    mdnl_dcd_writer_free(w);
    return MDNL_OK;
}

void mdnl_dcd_writer_free(mdnl_dcd_writer *w)
{
    free(w->buf);
    w->buf = NULL;
}

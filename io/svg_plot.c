/* svg_plot.c — writes the SVG plot of svg_plot.h. Coordinates are computed
 * here in user units of an 800-wide view box; the legend sits in rows
 * between the title and the plot area, never over a curve, and the view
 * box grows by its height. */
#include "svg_plot.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define W 800.0
#define PH 400.0 /* height of the plot area */
#define ML 70.0  /* margins: left, right, top (above the legend), bottom */
#define MR 80.0
#define MT 40.0
#define MB 60.0
#define LEGEND_ROW 20.0

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
                                      "#17becf"};

/* A "nice" tick step (1, 2 or 5 times a power of ten) giving about 5-8 ticks. */
static double nice_step(double span)
{
    if (!(span > 0.0) || !isfinite(span))
        return 1.0;
    double raw = span / 6.0;
    double p = pow(10.0, floor(log10(raw)));
    double f = raw / p;
    return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * p;
}

/* Axis upper end: the data maximum rounded up to a tick. */
static double nice_top(double vmax, double *step)
{
    if (!(vmax > 0.0) || !isfinite(vmax))
        vmax = 1.0;
    *step = nice_step(vmax * 1.05);
    return ceil(vmax * 1.05 / *step) * *step;
}

static void xml_text(FILE *fp, const char *s)
{
    for (; s && *s; ++s) {
        switch (*s) {
        case '<': fputs("&lt;", fp); break;
        case '>': fputs("&gt;", fp); break;
        case '&': fputs("&amp;", fp); break;
        case '"': fputs("&quot;", fp); break;
        default: fputc(*s, fp);
        }
    }
}

/* y0: the bottom of the plot area (PH high) in view-box units. */
static void polyline(FILE *fp, const double *y, int32_t bins, double r_max, double ytop, double y0, const char *color,
                     const char *dash)
{
    fprintf(fp, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" stroke-linejoin=\"round\"%s%s%s points=\"",
            color, dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    for (int32_t b = 0; b < bins; ++b) {
        double r = r_max * ((double)b + 0.5) / (double)bins;
        double px = ML + (W - ML - MR) * r / r_max;
        double v = y[b] > ytop ? ytop : y[b];
        double py = y0 - PH * v / ytop;
        fprintf(fp, "%.2f,%.2f ", px, py);
    }
    fputs("\"/>\n", fp);
}

/* The legend's entries: one solid line per histogram, then the dashed n(r). */
typedef struct legend {
    double *x, *y; /* [nhist + 1], the caller's */
    int rows;
} legend;

static double legend_width(const char *label)
{
    return 44.0 + 7.5 * (double)strlen(label) + 18.0;
}

static const char *legend_label(int32_t p, int32_t nhist, const char *const *names, char *buf, size_t size)
{
    if (p == nhist)
        return "n(r), dashed, right axis";
    snprintf(buf, size, "%s", names && names[p] ? names[p] : "total");
    return buf;
}

/* Places the entries left to right from ML, wrapping before the right margin. */
static void legend_layout(legend *L, int32_t nhist, const char *const *names)
{
    double x = ML, y = 0;
    L->rows = 1;
    for (int32_t p = 0; p <= nhist; ++p) {
        char buf[64];
        double w = legend_width(legend_label(p, nhist, names, buf, sizeof buf));
        if (x > ML && x + w > W - MR) {
            x = ML, y += LEGEND_ROW;
            L->rows++;
        }
        L->x[p] = x, L->y[p] = y;
        x += w;
    }
}

/* ---- g(r, frame) heat map (rdf --per-frame --plot) ---- */

#define HEAT_H 220.0   /* height of a heat-map panel's map */
#define HEAT_GAP 70.0  /* above each map: its title; below: the r axis */
#define HEAT_COLS 200  /* at most this many columns (bins averaged in runs) */

mdnl_status mdnl_rdf_heat_init(mdnl_rdf_heat *h, int32_t nhist, int32_t bins)
{
    memset(h, 0, sizeof *h);
    h->nhist = nhist, h->bins = bins, h->stride = 1;
    const size_t row = (size_t)nhist * (size_t)bins;
    h->rows = mdnl_calloc((MDNL_RDF_HEAT_ROWS + 1) * row, sizeof *h->rows, "per-frame plot rows");
    return h->rows ? MDNL_OK : MDNL_ERR_RESOURCE;
}

void mdnl_rdf_heat_free(mdnl_rdf_heat *h)
{
    if (h) {
        free(h->rows);
        memset(h, 0, sizeof *h);
    }
}

void mdnl_rdf_heat_add(mdnl_rdf_heat *h, int64_t frame, const double *g)
{
    const size_t row = (size_t)h->nhist * (size_t)h->bins;
    double *part = h->rows + (size_t)MDNL_RDF_HEAT_ROWS * row;
    if (h->nframes == 0)
        h->first_frame = frame;
    h->last_frame = frame;
    h->nframes++;
    if (h->pend == 0)
        h->row_first[h->nrows] = frame;
    for (size_t s = 0; s < row; ++s)
        part[s] = (h->pend ? part[s] : 0.0) + g[s];
    if (++h->pend < h->stride)
        return;
    double *dst = h->rows + (size_t)h->nrows * row;
    for (size_t s = 0; s < row; ++s)
        dst[s] = part[s] / (double)h->stride;
    h->pend = 0;
    if (++h->nrows < MDNL_RDF_HEAT_ROWS)
        return;
    /* Full: pairs of rows merge, each row now stands for twice the frames. */
    for (int k = 0; k < MDNL_RDF_HEAT_ROWS / 2; ++k) {
        const double *a = h->rows + (size_t)(2 * k) * row, *b = a + row;
        double *o = h->rows + (size_t)k * row;
        for (size_t s = 0; s < row; ++s)
            o[s] = 0.5 * (a[s] + b[s]);
        h->row_first[k] = h->row_first[2 * k];
    }
    h->nrows = MDNL_RDF_HEAT_ROWS / 2;
    h->stride *= 2;
}

/* A perceptual ramp (viridis anchors) at t in [0, 1]. */
static void ramp(double t, char *buf, size_t size)
{
    static const double c[5][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}};
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    const double x = t * 4.0;
    int k = (int)x;
    k = k > 3 ? 3 : k;
    const double f = x - k;
    snprintf(buf, size, "#%02x%02x%02x", (int)lround(c[k][0] + f * (c[k + 1][0] - c[k][0])),
             (int)lround(c[k][1] + f * (c[k + 1][1] - c[k][1])), (int)lround(c[k][2] + f * (c[k + 1][2] - c[k][2])));
}

/* Value of map cell (row k, column col) of histogram p: the mean of its bins. */
static double heat_cell(const mdnl_rdf_heat *h, int64_t k, int col, int ncols, int32_t p)
{
    const size_t row = (size_t)h->nhist * (size_t)h->bins;
    const double *r = k < h->nrows ? h->rows + (size_t)k * row : h->rows + (size_t)MDNL_RDF_HEAT_ROWS * row;
    const double scale = k < h->nrows ? 1.0 : 1.0 / (double)h->pend;
    const int32_t b0 = (int32_t)((int64_t)col * h->bins / ncols), b1 = (int32_t)((int64_t)(col + 1) * h->bins / ncols);
    double s = 0.0;
    for (int32_t b = b0; b < b1; ++b)
        s += r[(size_t)p * h->bins + b];
    return s * scale / (double)(b1 - b0);
}

static int32_t heat_panels_of(const mdnl_rdf_heat *h)
{
    return h->nhist < MDNL_RDF_HEAT_PANELS ? h->nhist : MDNL_RDF_HEAT_PANELS;
}

/* One panel per histogram (the first MDNL_RDF_HEAT_PANELS) below the mean plot, from y `top`: rows of
 * frames top to bottom, r left to right on the mean plot's axis. */
static void heat_panels(FILE *fp, const mdnl_rdf_heat *h, double r_max, const char *const *names, double top)
{
    const int64_t nrows = h->nrows + (h->pend > 0);
    const int ncols = h->bins < HEAT_COLS ? h->bins : HEAT_COLS;
    const double x0 = ML, x1 = W - MR; /* the mean plot's r axis; the colour bar in the right margin */
    const double xstep = nice_step(r_max);
    for (int32_t p = 0; p < heat_panels_of(h); ++p) {
        const double y1 = top + p * (HEAT_H + HEAT_GAP) + 30.0, y0 = y1 + HEAT_H;
        double vmax = 0.0;
        for (int64_t k = 0; k < nrows; ++k)
            for (int c = 0; c < ncols; ++c) {
                const double v = heat_cell(h, k, c, ncols, p);
                vmax = isfinite(v) && v > vmax ? v : vmax;
            }
        double vstep;
        const double vtop = nice_top(vmax, &vstep);
        char name[64];
        snprintf(name, sizeof name, "%s", names && names[p] ? names[p] : "total");
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"14\">g(r) per frame, ", x0, y1 - 10);
        xml_text(fp, name);
        fprintf(fp, " (%lld frames%s)</text>\n", (long long)h->nframes,
                h->stride > 1 ? ", rows average runs of frames" : "");
        fputs("<g shape-rendering=\"crispEdges\">\n", fp);
        const double cw = (x1 - x0) / ncols, rh = (y0 - y1) / (double)(nrows > 0 ? nrows : 1);
        for (int64_t k = 0; k < nrows; ++k)
            for (int c = 0; c < ncols; ++c) {
                const double v = heat_cell(h, k, c, ncols, p);
                char col[16] = "#bbbbbb"; /* no volume: no g */
                if (isfinite(v))
                    ramp(v / vtop, col, sizeof col);
                fprintf(fp, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n", x0 + c * cw,
                        y1 + k * rh, cw + 0.05, rh + 0.05, col);
            }
        fputs("</g>\n", fp);
        fprintf(fp, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#222\"/>\n",
                x0, y1, x1 - x0, y0 - y1);
        fputs("<g fill=\"#222\">\n", fp);
        for (double t = 0.0; t <= r_max * (1 + 1e-9); t += xstep) {
            const double px = x0 + (x1 - x0) * t / r_max;
            fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#222\"/>\n", px, y0, px,
                    y0 + 5);
            fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%g</text>\n", px, y0 + 20, t);
        }
        /* frame axis: the first and last rows' first frames */
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%lld</text>\n", x0 - 6, y1 + 10,
                (long long)h->first_frame);
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%lld</text>\n", x0 - 6, y0,
                (long long)h->last_frame);
        fprintf(fp,
                "<text transform=\"translate(%.2f,%.2f) rotate(-90)\" text-anchor=\"middle\" font-size=\"15\">"
                "frame</text>\n",
                22.0, (y0 + y1) / 2);
        /* colour bar */
        const double bx = x1 + 12.0, bw = 14.0;
        for (int q = 0; q < 50; ++q) {
            char col[16];
            ramp((q + 0.5) / 50.0, col, sizeof col);
            fprintf(fp, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n", bx,
                    y0 - (q + 1) * HEAT_H / 50.0, bw, HEAT_H / 50.0 + 0.05, col);
        }
        for (double t = 0.0; t <= vtop * (1 + 1e-9); t += vstep)
            fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"11\">%g</text>\n", bx + bw + 4,
                    y0 - HEAT_H * t / vtop + 4, t);
        fputs("</g>\n", fp);
    }
}

mdnl_status mdnl_svg_rdf(FILE *fp, const mdnl_rdf_accum *a, const char *const *names, const char *title,
                         const char *xlabel)
{
    return mdnl_svg_rdf_frames(fp, a, NULL, names, title, xlabel);
}

mdnl_status mdnl_svg_rdf_frames(FILE *fp, const mdnl_rdf_accum *a, const mdnl_rdf_heat *heat,
                                const char *const *names, const char *title, const char *xlabel)
{

    const size_t n = (size_t)a->nhist * (size_t)a->bins;
    double *g = mdnl_malloc(n * sizeof *g, "plot g");
    double *cpa = mdnl_malloc(n * sizeof *cpa, "plot counts");
    double *nr = mdnl_malloc(n * sizeof *nr, "plot n");
    double *lxy = mdnl_malloc(2 * ((size_t)a->nhist + 1) * sizeof *lxy, "plot legend");
    if (!g || !cpa || !nr || !lxy) {
        free(g), free(cpa), free(nr), free(lxy);
        return MDNL_ERR_RESOURCE;
    }
    mdnl_rdf_result(a, g, cpa, nr);
    const int has_g = mdnl_rdf_has_g(a);
    const double *left = has_g ? g : cpa;
    double lmax = 0.0, rmax = 0.0;
    for (size_t s = 0; s < n; ++s) {
        if (isfinite(left[s]) && left[s] > lmax)
            lmax = left[s];
        if (isfinite(nr[s]) && nr[s] > rmax)
            rmax = nr[s];
    }
    double lstep, rstep, xstep = nice_step(a->r_max);
    const double ltop = nice_top(lmax, &lstep), rtop = nice_top(rmax, &rstep);
    legend L = {.x = lxy, .y = lxy + a->nhist + 1};
    legend_layout(&L, a->nhist, names);
    const double ly = MT + 4.0;                       /* the legend's first row */
    const double y1 = ly + LEGEND_ROW * L.rows + 8.0; /* top of the plot area */
    const double x0 = ML, x1 = W - MR, y0 = y1 + PH;
    const double H = y0 + MB + (heat ? heat_panels_of(heat) * (HEAT_H + HEAT_GAP) + 10.0 : 0.0);

    fprintf(fp, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
                "font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" font-size=\"13\">\n"
                "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
            W, H, W, H);
    /* Grid and ticks: x and left y. */
    fputs("<g stroke=\"#e5e5e5\" stroke-width=\"1\">\n", fp);
    for (double t = 0.0; t <= a->r_max * (1 + 1e-9); t += xstep)
        fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", x0 + (x1 - x0) * t / a->r_max, y0,
                x0 + (x1 - x0) * t / a->r_max, y1);
    for (double t = 0.0; t <= ltop * (1 + 1e-9); t += lstep)
        fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>\n", x0, y0 - (y0 - y1) * t / ltop, x1,
                y0 - (y0 - y1) * t / ltop);
    fputs("</g>\n<g fill=\"#222\">\n", fp);
    for (double t = 0.0; t <= a->r_max * (1 + 1e-9); t += xstep) {
        double px = x0 + (x1 - x0) * t / a->r_max;
        fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#222\"/>\n", px, y0, px, y0 + 5);
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%g</text>\n", px, y0 + 20, t);
    }
    for (double t = 0.0; t <= ltop * (1 + 1e-9); t += lstep) {
        double py = y0 - (y0 - y1) * t / ltop;
        fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#222\"/>\n", x0 - 5, py, x0, py);
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\">%g</text>\n", x0 - 8, py + 4, t);
    }
    for (double t = 0.0; t <= rtop * (1 + 1e-9); t += rstep) {
        double py = y0 - (y0 - y1) * t / rtop;
        fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#222\"/>\n", x1, py, x1 + 5, py);
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"start\">%g</text>\n", x1 + 8, py + 4, t);
    }
    fputs("</g>\n", fp);
    /* Frame and axis labels. */
    fprintf(fp, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#222\"/>\n", x0, y1,
            x1 - x0, y0 - y1);
    fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"15\">", (x0 + x1) / 2, y0 + MB - 15);
    xml_text(fp, xlabel ? xlabel : "r");
    fputs("</text>\n", fp);
    fprintf(fp,
            "<text transform=\"translate(%.2f,%.2f) rotate(-90)\" text-anchor=\"middle\" font-size=\"15\">%s</text>\n",
            22.0, (y0 + y1) / 2, has_g ? "g(r)" : "counts per A atom");
    fprintf(fp,
            "<text transform=\"translate(%.2f,%.2f) rotate(90)\" text-anchor=\"middle\" font-size=\"15\">n(r) "
            "(dashed)</text>\n",
            W - 20, (y0 + y1) / 2);
    if (title) {
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"16\">", W / 2, 25.0);
        xml_text(fp, title);
        fputs("</text>\n", fp);
    }
    /* Curves: g solid on the left axis, n dashed on the right axis. */
    for (int32_t p = 0; p < a->nhist; ++p) {
        const char *color = palette[p % (int32_t)(sizeof palette / sizeof *palette)];
        polyline(fp, left + (size_t)p * a->bins, a->bins, a->r_max, ltop, y0, color, NULL);
        double *nscaled = mdnl_malloc((size_t)a->bins * sizeof *nscaled, "plot n scaled");
        if (!nscaled) {
            free(g), free(cpa), free(nr), free(lxy);
            return MDNL_ERR_RESOURCE;
        }
        /* n is drawn against the right axis: rescale into left-axis units. */
        for (int32_t b = 0; b < a->bins; ++b)
            nscaled[b] = nr[(size_t)p * a->bins + b] * ltop / rtop;
        polyline(fp, nscaled, a->bins, a->r_max, ltop, y0, color, "6,4");
        free(nscaled);
    }
    /* Legend: in rows above the plot area, clear of every curve. */
    for (int32_t p = 0; p <= a->nhist; ++p) {
        const bool n_entry = p == a->nhist;
        const char *color = n_entry ? "#444" : palette[p % (int32_t)(sizeof palette / sizeof *palette)];
        const double xx = L.x[p], yy = ly + L.y[p] + 10.0;
        char buf[64];
        fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n", xx,
                yy, xx + 36, yy, color, n_entry ? " stroke-dasharray=\"6,4\"" : "");
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\">", xx + 44, yy + 4);
        xml_text(fp, legend_label(p, a->nhist, names, buf, sizeof buf));
        fputs("</text>\n", fp);
    }
    if (heat)
        heat_panels(fp, heat, a->r_max, names, y0 + MB);
    fputs("</svg>\n", fp);
    free(g), free(cpa), free(nr), free(lxy);
    if (ferror(fp))
        return mdnl_error(MDNL_ERR_RESOURCE, "SVG plot: write failed");
    return MDNL_OK;
}

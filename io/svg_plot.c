/* svg_plot.c — writes the SVG plot of svg_plot.h. Coordinates are computed
 * here in user units of a fixed 800x500 view box. */
#include "svg_plot.h"

#include <math.h>
#include <stdlib.h>

#define W 800.0
#define H 500.0
#define ML 70.0  /* margins: left, right, top, bottom */
#define MR 80.0
#define MT 40.0
#define MB 60.0

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

static void polyline(FILE *fp, const double *y, int32_t bins, double r_max, double ytop, const char *color,
                     const char *dash)
{
    fprintf(fp, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\" stroke-linejoin=\"round\"%s%s%s points=\"",
            color, dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    for (int32_t b = 0; b < bins; ++b) {
        double r = r_max * ((double)b + 0.5) / (double)bins;
        double px = ML + (W - ML - MR) * r / r_max;
        double v = y[b] > ytop ? ytop : y[b];
        double py = H - MB - (H - MT - MB) * v / ytop;
        fprintf(fp, "%.2f,%.2f ", px, py);
    }
    fputs("\"/>\n", fp);
}

mdnl_status mdnl_svg_rdf(FILE *fp, const mdnl_rdf_accum *a, const char *const *names, const char *title)
{
    const size_t n = (size_t)a->nhist * (size_t)a->bins;
    double *g = mdnl_malloc(n * sizeof *g, "plot g");
    double *cpa = mdnl_malloc(n * sizeof *cpa, "plot counts");
    double *nr = mdnl_malloc(n * sizeof *nr, "plot n");
    if (!g || !cpa || !nr) {
        free(g), free(cpa), free(nr);
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
    const double x0 = ML, x1 = W - MR, y0 = H - MB, y1 = MT;

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
    fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"15\">r</text>\n", (x0 + x1) / 2,
            H - 15);
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
        polyline(fp, left + (size_t)p * a->bins, a->bins, a->r_max, ltop, color, NULL);
        double *nscaled = mdnl_malloc((size_t)a->bins * sizeof *nscaled, "plot n scaled");
        if (!nscaled) {
            free(g), free(cpa), free(nr);
            return MDNL_ERR_RESOURCE;
        }
        /* n is drawn against the right axis: rescale into left-axis units. */
        for (int32_t b = 0; b < a->bins; ++b)
            nscaled[b] = nr[(size_t)p * a->bins + b] * ltop / rtop;
        polyline(fp, nscaled, a->bins, a->r_max, ltop, color, "6,4");
        free(nscaled);
    }
    /* Legend, top right inside the frame. */
    const double lx = x1 - 150, ly = y1 + 12;
    fprintf(fp, "<rect x=\"%.2f\" y=\"%.2f\" width=\"140\" height=\"%.2f\" fill=\"white\" fill-opacity=\"0.85\" "
                "stroke=\"#999\"/>\n",
            lx, ly, 10.0 + 20.0 * (a->nhist + 1));
    for (int32_t p = 0; p < a->nhist; ++p) {
        const char *color = palette[p % (int32_t)(sizeof palette / sizeof *palette)];
        double yy = ly + 18 + 20.0 * p;
        fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" stroke-width=\"2\"/>\n",
                lx + 8, yy, lx + 36, yy, color);
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\">", lx + 44, yy + 4);
        xml_text(fp, names && names[p] ? names[p] : "total");
        fputs("</text>\n", fp);
    }
    {
        double yy = ly + 18 + 20.0 * a->nhist;
        fprintf(fp, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#444\" stroke-width=\"2\" "
                    "stroke-dasharray=\"6,4\"/>\n",
                lx + 8, yy, lx + 36, yy);
        fprintf(fp, "<text x=\"%.2f\" y=\"%.2f\">n(r), right axis</text>\n", lx + 44, yy + 4);
    }
    fputs("</svg>\n", fp);
    free(g), free(cpa), free(nr);
    if (ferror(fp))
        return mdnl_error(MDNL_ERR_RESOURCE, "SVG plot: write failed");
    return MDNL_OK;
}

/* svg_plot.h — a self-contained SVG line plot of an RDF (mdnl rdf --plot).
 *
 * g(r) (or counts per A atom for open frames without a volume) as solid
 * lines on the left axis, n(r) as dashed lines of the same colour on a
 * right-hand axis, labelled axes with "nice" ticks, and a legend naming the
 * partials in rows between the title and the plot area (never over a curve).
 * No external dependency; the output renders with any SVG viewer (checked
 * with rsvg-convert).
 */
#ifndef MDNL_SVG_PLOT_H
#define MDNL_SVG_PLOT_H

#include "mdnl.h"
#include "rdf.h"

#include <stdint.h>
#include <stdio.h>

MDNL_BEGIN_C

/* names: nhist labels ("C-H"), or NULL for the total; title may be NULL;
 * xlabel: the x axis label (NULL: "r"). Writes to fp (caller owns it);
 * MDNL_ERR_RESOURCE when a write fails. */
mdnl_status mdnl_svg_rdf(FILE *fp, const mdnl_rdf_accum *a, const char *const *names, const char *title,
                         const char *xlabel);

/* g(r, frame) of rdf --per-frame, for a heat map: at most
 * MDNL_RDF_HEAT_ROWS rows of nhist * bins values; when full, neighbouring
 * rows are averaged pairwise and each row stands for twice the frames
 * (stride), so memory stays bounded for any number of frames. */
#define MDNL_RDF_HEAT_ROWS 128
#define MDNL_RDF_HEAT_PANELS 4 /* heat maps drawn: the first 4 histograms */
typedef struct mdnl_rdf_heat {
    int32_t nhist, bins;
    int64_t stride;   /* frames per complete row */
    int64_t nrows;    /* complete rows */
    int64_t pend;     /* frames summed into the partial row */
    int64_t nframes, first_frame, last_frame;
    int64_t row_first[MDNL_RDF_HEAT_ROWS]; /* input index of each row's first frame */
    double *rows;     /* [MDNL_RDF_HEAT_ROWS + 1][nhist * bins]: the last is the partial row's sum */
} mdnl_rdf_heat;

mdnl_status mdnl_rdf_heat_init(mdnl_rdf_heat *h, int32_t nhist, int32_t bins); /* MDNL_ERR_RESOURCE */
void mdnl_rdf_heat_free(mdnl_rdf_heat *h);                                    /* NULL is a no-op */
/* Adds one frame's g[nhist * bins] (NaN where the frame has no volume). */
void mdnl_rdf_heat_add(mdnl_rdf_heat *h, int64_t frame, const double *g);

/* The plot of mdnl_svg_rdf and, below it when heat is not NULL, one heat
 * map of g(r, frame) per histogram (the first MDNL_RDF_HEAT_PANELS; at most
 * 200 columns, bins averaged in runs) (frames top to bottom, r on the mean
 * plot's axis, a colour bar; grey where a frame has no volume). */
mdnl_status mdnl_svg_rdf_frames(FILE *fp, const mdnl_rdf_accum *a, const mdnl_rdf_heat *heat,
                                const char *const *names, const char *title, const char *xlabel);

MDNL_END_C

#endif

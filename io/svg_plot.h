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

#include <stdio.h>

MDNL_BEGIN_C

/* names: nhist labels ("C-H"), or NULL for the total; title may be NULL;
 * xlabel: the x axis label (NULL: "r"). Writes to fp (caller owns it);
 * MDNL_ERR_RESOURCE when a write fails. */
mdnl_status mdnl_svg_rdf(FILE *fp, const mdnl_rdf_accum *a, const char *const *names, const char *title,
                         const char *xlabel);

MDNL_END_C

#endif

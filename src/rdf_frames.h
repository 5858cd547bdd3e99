/* rdf_frames.h — the per-frame RDF of `rdf --per-frame` and `run
 * --per-frame` (SPEC §5): each frame's own g(r) (NaN without a volume) from
 * a one-frame accumulator, appended with its counts to /rdf/<total|A-B>/
 * {frame,step,g_frames,counts_frames} of an HDF5 result and to the heat map
 * of --plot. One writer for both commands. */
#ifndef MDNL_RDF_FRAMES_H
#define MDNL_RDF_FRAMES_H

#include "h5md_writer.h"
#include "pipeline.h"
#include "rdf.h"
#include "svg_plot.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct mdnl_rdf_series {
    mdnl_rdf_accum one; /* the current frame alone */
    double *g;          /* its g [nhist * bins] */
    mdnl_rdf_heat heat; /* rows only with a plot */
    const mdnl_pair_names *pn;
} mdnl_rdf_series;

/* For the histograms of spec (pn: their names, borrowed) and the --volume
 * override (0: none); heat: keep the rows of a heat map. MDNL_ERR_RESOURCE. */
mdnl_status mdnl_rdf_series_init(mdnl_rdf_series *pf, const mdnl_hist_spec *spec, double volume_override,
                                 const mdnl_pair_names *pn, bool heat);
void mdnl_rdf_series_free(mdnl_rdf_series *pf); /* a zeroed one is a no-op */

/* One frame (in frame order): counts[nhist * bins], na/nb and volume as
 * mdnl_rdf_accum_add takes them; its rows to res when not NULL. */
mdnl_status mdnl_rdf_series_add(mdnl_rdf_series *pf, mdnl_h5md_results *res, int64_t frame, int64_t step,
                                const uint64_t *counts, const int64_t *na, const int64_t *nb, double volume);

/* The heat map for mdnl_svg_rdf_frames: NULL without one. */
const mdnl_rdf_heat *mdnl_rdf_series_heat(const mdnl_rdf_series *pf);

/* --plot FILE: MDNL_ERR_USAGE unless it names an .svg file (or a stream). */
mdnl_status mdnl_rdf_plot_check(const char *plot);

/* The --plot picture: the mean g(r) and n(r) (mdnl_svg_rdf_frames) titled
 * with the input's base name and, when pf has one, the heat map of
 * g(r, frame) below it. */
mdnl_status mdnl_rdf_plot_write(FILE *fp, const mdnl_rdf_accum *mean, const mdnl_rdf_series *pf,
                                const char *const *names, const char *input);

#endif

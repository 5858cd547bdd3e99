/* rdf_frames.c — the per-frame RDF writer (rdf_frames.h). */
#include "rdf_frames.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* --plot writes SVG only: any other extension is refused rather than an SVG
 * written under a name that says otherwise. */
mdnl_status mdnl_rdf_plot_check(const char *plot)
{
    struct stat sb;
    if (stat(plot, &sb) == 0 && (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode)))
        return MDNL_OK; /* a stream (/dev/null, a FIFO): written in place, any name */
    const char *dot = strrchr(plot, '.');
    const char *slash = strrchr(plot, '/');
    if (!dot || (slash && dot < slash) || strcasecmp(dot, ".svg") != 0)
        return mdnl_error(MDNL_ERR_USAGE,
                          "--plot %s: expected an .svg file (mdnl writes SVG only; rsvg-convert "
                          "makes a PNG of it)",
                          plot);
    return MDNL_OK;
}

mdnl_status mdnl_rdf_plot_write(FILE *fp, const mdnl_rdf_accum *mean, const mdnl_rdf_series *pf,
                                const char *const *names, const char *input)
{
    const char *slash = strrchr(input, '/'); /* the title: the input's base name */
    const char *title = slash && slash[1] ? slash + 1 : input;
    return mdnl_svg_rdf_frames(fp, mean, pf ? mdnl_rdf_series_heat(pf) : NULL, names, title, "r (input length unit)");
}

mdnl_status mdnl_rdf_series_init(mdnl_rdf_series *pf, const mdnl_hist_spec *spec, double volume_override,
                                 const mdnl_pair_names *pn, bool heat)
{
    memset(pf, 0, sizeof *pf);
    pf->pn = pn;
    const int32_t nh = mdnl_hist_nhist(spec);
    mdnl_status st = mdnl_rdf_accum_init(&pf->one, spec, volume_override);
    if (st != MDNL_OK)
        return st;
    if (!(pf->g = mdnl_malloc((size_t)nh * (size_t)spec->bins * sizeof *pf->g, "per-frame g")))
        return MDNL_ERR_RESOURCE;
    if (heat)
        return mdnl_rdf_heat_init(&pf->heat, nh, spec->bins);
    return MDNL_OK;
}

void mdnl_rdf_series_free(mdnl_rdf_series *pf)
{
    mdnl_rdf_accum_free(&pf->one);
    mdnl_rdf_heat_free(&pf->heat);
    free(pf->g);
    pf->g = NULL;
}

mdnl_status mdnl_rdf_series_add(mdnl_rdf_series *pf, mdnl_h5md_results *res, int64_t frame, int64_t step,
                                const uint64_t *counts, const int64_t *na, const int64_t *nb, double volume)
{
    mdnl_rdf_accum *a = &pf->one;
    mdnl_rdf_accum_reset(a);
    mdnl_status st = mdnl_rdf_accum_add(a, counts, na, nb, volume);
    if (st != MDNL_OK)
        return st;
    const size_t n = (size_t)a->nhist * (size_t)a->bins;
    mdnl_rdf_result(a, pf->g, NULL, NULL);
    if (!mdnl_rdf_has_g(a))
        for (size_t s = 0; s < n; ++s)
            pf->g[s] = NAN;
    for (int32_t h = 0; res && h < a->nhist && st == MDNL_OK; ++h)
        st = mdnl_h5md_results_write_rdf_frame(res, pf->pn->n ? pf->pn->labels[h] : "total", a->bins, frame, step,
                                               pf->g + (size_t)h * a->bins, counts + (size_t)h * a->bins);
    if (st == MDNL_OK && pf->heat.rows)
        mdnl_rdf_heat_add(&pf->heat, frame, pf->g);
    return st;
}

const mdnl_rdf_heat *mdnl_rdf_series_heat(const mdnl_rdf_series *pf)
{
    return pf->heat.rows ? &pf->heat : NULL;
}

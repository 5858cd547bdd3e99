/* rdf_table.c — writes an mdnl_rdf_accum as the SPEC §6 TSV table
 * (rdf_table.h). */
#include "rdf_table.h"

#include <stdlib.h>

mdnl_status mdnl_rdf_table_write(FILE *fp, const mdnl_rdf_accum *a, const char *const *names)
{
    const size_t n = (size_t)a->nhist * (size_t)a->bins;
    double *g = mdnl_malloc(n * sizeof *g, "RDF table g");
    double *cpa = mdnl_malloc(n * sizeof *cpa, "RDF table counts per atom");
    double *nr = mdnl_malloc(n * sizeof *nr, "RDF table n");
    if (!g || !cpa || !nr) {
        free(g), free(cpa), free(nr);
        return MDNL_ERR_RESOURCE;
    }
    mdnl_rdf_result(a, g, cpa, nr);
    const int has_g = mdnl_rdf_has_g(a);
    const int labelled = names && a->nhist > 0 && names[0];
    fputs("# r_lo\tr_hi\tr", fp);
    for (int32_t p = 0; p < a->nhist; ++p) {
        const char *sep = labelled ? ":" : "";
        const char *lab = labelled ? names[p] : "";
        if (has_g)
            fprintf(fp, "\tg%s%s\tn%s%s", sep, lab, sep, lab);
        else
            fprintf(fp, "\tcount%s%s\tcount_per_atom%s%s\tn%s%s", sep, lab, sep, lab, sep, lab);
    }
    fputc('\n', fp);
    for (int32_t b = 0; b < a->bins; ++b) {
        double lo, hi, r;
        mdnl_rdf_bin_edges(a->r_max, a->bins, b, &lo, &hi, &r);
        fprintf(fp, "%.9g\t%.9g\t%.9g", lo, hi, r);
        for (int32_t p = 0; p < a->nhist; ++p) {
            const size_t s = (size_t)p * (size_t)a->bins + (size_t)b;
            if (has_g)
                fprintf(fp, "\t%.9g\t%.9g", g[s], nr[s]);
            else
                fprintf(fp, "\t%llu\t%.9g\t%.9g", (unsigned long long)a->counts[s], cpa[s], nr[s]);
        }
        fputc('\n', fp);
    }
    free(g), free(cpa), free(nr);
    if (ferror(fp))
        return mdnl_error(MDNL_ERR_RESOURCE, "RDF table: write failed");
    return MDNL_OK;
}

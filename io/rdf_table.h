/* rdf_table.h — the RDF text table of SPEC §6 (TSV, one '#' header line).
 *
 *   periodic (g defined):  # r_lo r_hi r g n                 (total)
 *                          # r_lo r_hi r g:A-B n:A-B ...     (partials)
 *   open (no volume):      # r_lo r_hi r count count_per_atom n
 *                          # r_lo r_hi r count:A-B count_per_atom:A-B n:A-B ...
 * Numbers are printed with %.9g; `count` is the integer sum over frames.
 * Writes to a FILE* the caller owns (src/ handles write-then-rename).
 */
#ifndef MDNL_RDF_TABLE_H
#define MDNL_RDF_TABLE_H

#include "mdnl.h"
#include "rdf.h"

#include <stdio.h>

MDNL_BEGIN_C

/* names: nhist labels ("C-H"); NULL or npairs == 0 for the total. Returns
 * MDNL_ERR_RESOURCE when a write fails (disk full), MDNL_ERR_RESOURCE for
 * memory. */
mdnl_status mdnl_rdf_table_write(FILE *fp, const mdnl_rdf_accum *a, const char *const *names);

MDNL_END_C

#endif

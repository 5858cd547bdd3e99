/* bench_rdf.h — the histogram benchmark behind `mdnl bench` (RDF part). */
#ifndef MDNL_BENCH_RDF_H
#define MDNL_BENCH_RDF_H

#include "mdnl.h"

#include <stdio.h>

MDNL_BEGIN_C

/* Runs the RDF benchmark cases (lj-1m, graphene-1m; see bench_rdf.c) and
 * writes a table (json = 0) or one JSON object (json = 1) to `out`. Every GPU
 * kernel's counts are checked against the CPU twin; a mismatch returns
 * MDNL_ERR_INTERNAL. Without a device only the CPU twin is timed. */
mdnl_status mdnl_bench_rdf(FILE *out, int json);
/* small = 1: lj-100k alone instead (97,556 atoms, r_max 4, 200 bins). */
mdnl_status mdnl_bench_rdf_cases(FILE *out, int json, int small);
/* One named system of systems.h (lj-1m-liquid), r_max 4, 200 bins. */
mdnl_status mdnl_bench_rdf_system(FILE *out, int json, const char *name);

MDNL_END_C

#endif

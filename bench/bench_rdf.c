/* bench_rdf.c — times the pair-distance histogram: the CPU twin once, and
 * the shipped CUDA traversals (cells-prune2, prune2-x4, cells-walk) each with the
 * seed's accumulation comparison (global atomics, privatized shared-memory
 * histograms, shared with aggregation; rdf_cuda.h), each the median of
 * repeats timed with CUDA events and validated against the CPU twin:
 *
 *   (both from systems.h)
 *   lj-1m        FCC 64^3 x 4 = 1,048,576 atoms at reduced density 0.8442
 *                (L = 107.5 sigma), jitter 0.05 sigma (seeded), r_max = 4
 *                sigma, 200 bins. About 226 neighbours per atom below r_max:
 *                2.37e8 ordered pairs. Cells of 4.13 sigma hold ~60 atoms, so
 *                the full 27-cell stencil evaluates ~1610 candidates per atom
 *                (1.7e9 distances), the half traversal ~805 (8.5e8). Napkin
 *                floor: ~20 instructions per candidate on 132 SMs x 128 lanes
 *                x 1.7 GHz (2.9e13 lane-instr/s) = 0.6 ms half, 1.2 ms full.
 *                On cells of 2.07 sigma (5^3 stencil): ~940 candidates
 *                full, ~470 half; cells-prune2 trims each column
 *                to the atom's r_max sphere: ~630 full, ~320 half (Monte
 *                Carlo over positions in a cell), ~1.4 hits per 4 candidates;
 *                its bin is ~12 instructions (rsqrt guess, two table loads)
 *                instead of ~30 (IEEE sqrt and division). cells-walk (a warp
 *                per 2.07-sigma cell, ~7.5 atoms, half stencil: 63 cells,
 *                ~470 candidates a cell enumerated, ~250 kept by the home
 *                atoms' bounding box, so ~250 tests an atom, every lane
 *                busy): ncu on the 131k liquid, 78M warp instructions, a
 *                third of them enumerating candidates.
 *   lj-100k      the same liquid at 97,556 atoms (`mdnl bench --sizes lj-100k`,
 *                the size of the `mdnl run` benchmark): a thread per atom is
 *                382 blocks of 256, under one wave on 132 SMs, which the
 *                split traversal (prune2-x4) is for.
 *   lj-1m-liquid the LAMMPS-melted liquid of systems.h, 1,048,576 atoms in
 *                random order, r_max = 4 sigma, 200 bins (`mdnl bench --sizes
 *                lj-1m-liquid`): the same density as lj-1m, real disorder.
 *   graphene-1m  perfect periodic rectangular sheet 512 x 488 cells x 4 =
 *                999,424 atoms (C-C 1.42 A), pbc T T F, r_max = 10 A, 500
 *                bins: ~120 neighbours per atom, 1.2e8 ordered pairs, all in
 *                a few dozen bins (crystal shells): the worst case for global
 *                atomics, which serialize on those few addresses.
 * pairs/s counts ordered pairs (the histogram's total) per second.
 */
#include "bench_rdf.h"

#include "systems.h"

#include "frame.h"
#include "geometry.h"
#include "rdf.h"
#ifdef MDNL_HAVE_CUDA
#include "device.h"
#include "rdf_cuda.h"
#endif

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static mdnl_status bench_case(FILE *out, int json, int first, const char *name, mdnl_frame *f, double r_max,
                              int bins)
{
    mdnl_geom g;
    float(*pos4)[4] = mdnl_malloc((size_t)f->natoms * sizeof *pos4, "bench positions");
    uint64_t *cpu = mdnl_calloc((size_t)bins, sizeof *cpu, "bench counts");
    uint64_t *gpu = mdnl_calloc((size_t)bins, sizeof *gpu, "bench counts");
    mdnl_status st = MDNL_ERR_RESOURCE;
    if (!pos4 || !cpu || !gpu)
        goto done;
    if ((st = mdnl_geom_prepare(f, r_max, &g, pos4)) != MDNL_OK)
        goto done;
    const mdnl_hist_spec spec = {r_max, bins, 0, NULL};
    double t0 = omp_get_wtime();
    if ((st = mdnl_hist_frame_cpu(&g, (const float(*)[4])pos4, NULL, &spec, cpu)) != MDNL_OK)
        goto done;
    const double cpu_ms = 1e3 * (omp_get_wtime() - t0);
    uint64_t pairs = 0;
    for (int b = 0; b < bins; ++b)
        pairs += cpu[b];
    if (json)
        fprintf(out, "%s\"%s\": {\"natoms\": %lld, \"r_max\": %g, \"bins\": %d, \"pairs\": %llu, "
                     "\"cpu\": {\"threads\": %d, \"ms\": %.3f, \"pairs_per_s\": %.4g}, \"gpu\": [",
                first ? "" : ", ", name, (long long)f->natoms, r_max, bins, (unsigned long long)pairs,
                omp_get_max_threads(), cpu_ms, pairs / (cpu_ms * 1e-3));
    else
        fprintf(out, "%s: %lld atoms, r_max %g, %d bins, %llu ordered pairs, cells %dx%dx%d\n"
                     "  cpu twin (%d threads): %.1f ms, %.3g pairs/s\n",
                name, (long long)f->natoms, r_max, bins, (unsigned long long)pairs, g.ncell[0], g.ncell[1],
                g.ncell[2], omp_get_max_threads(), cpu_ms, pairs / (cpu_ms * 1e-3));
#ifdef MDNL_HAVE_CUDA
    if (mdnl_cuda_device_count() > 0) {
        mdnl_hist_cuda *ctx = NULL;
        if ((st = mdnl_hist_cuda_create(&ctx)) != MDNL_OK)
            goto done;
        int n = 0;
        /* the shipped traversals, each with the seed's accumulation
         * comparison: global atomics, privatized shared-memory histograms,
         * and shared with aggregation */
        const int travs[] = {MDNL_HIST_TRAV_CELLS_PRUNE2, MDNL_HIST_TRAV_CELLS_PRUNE2_X4, MDNL_HIST_TRAV_CELLS_WALK};
        for (int ti = 0; ti < (int)(sizeof travs / sizeof travs[0]) && st == MDNL_OK; ++ti)
            for (int v = MDNL_HIST_GLOBAL; v <= MDNL_HIST_SHARED_AGG && st == MDNL_OK; ++v) {
                mdnl_hist_cuda_timing t;
                if ((st = mdnl_hist_cuda_bench(ctx, &g, (const float(*)[4])pos4, NULL, &spec, v, travs[ti], 7, gpu,
                                               &t)) != MDNL_OK)
                    break;
                const int match = memcmp(gpu, cpu, (size_t)bins * sizeof *cpu) == 0;
                if (json)
                    fprintf(out, "%s{\"traversal\": \"%s\", \"variant\": \"%s\", \"ms\": %.4f, \"min_ms\": %.4f, "
                                 "\"cells_ms\": %.4f, \"upload_ms\": %.4f, \"pairs_per_s\": %.4g, \"equals_cpu\": %s}",
                            n++ ? ", " : "", mdnl_hist_traversal_name(t.traversal), mdnl_hist_variant_name(t.variant),
                            t.hist_ms, t.hist_min_ms, t.cells_ms, t.upload_ms, pairs / (t.hist_ms * 1e-3),
                            match ? "true" : "false");
                else
                    fprintf(out, "  gpu %-12s %-10s  %8.3f ms (min %.3f)  %.3g pairs/s  [cells %.3f ms, upload %.3f ms]%s\n",
                            mdnl_hist_traversal_name(t.traversal), mdnl_hist_variant_name(t.variant), t.hist_ms,
                            t.hist_min_ms, pairs / (t.hist_ms * 1e-3), t.cells_ms, t.upload_ms,
                            match ? "" : "  COUNTS DIFFER FROM CPU");
                if (!match)
                    st = mdnl_error(MDNL_ERR_INTERNAL, "bench %s: %s/%s counts differ from the CPU twin", name,
                                    mdnl_hist_traversal_name(t.traversal), mdnl_hist_variant_name(t.variant));
            }
        mdnl_hist_cuda_free(ctx);
    }
#endif
    if (json)
        fputs("]}", out);
done:
    free(pos4), free(cpu), free(gpu);
    return st;
}

mdnl_status mdnl_bench_rdf(FILE *out, int json) { return mdnl_bench_rdf_cases(out, json, 0); }

mdnl_status mdnl_bench_rdf_system(FILE *out, int json, const char *name)
{
    mdnl_frame f = {0};
    mdnl_status st;
    if (json)
        fputs("{", out);
    if ((st = mdnl_system_build(name, &f)) == MDNL_OK)
        st = bench_case(out, json, 1, name, &f, 4.0, 200);
    if (json)
        fputs("}\n", out);
    mdnl_frame_free(&f);
    return st;
}

mdnl_status mdnl_bench_rdf_cases(FILE *out, int json, int small)
{
    mdnl_frame f = {0};
    mdnl_status st;
    if (json)
        fputs("{", out);
    if (small) {
        if ((st = mdnl_system_build("lj-100k", &f)) == MDNL_OK)
            st = bench_case(out, json, 1, "lj-100k", &f, 4.0, 200);
    } else if ((st = mdnl_system_build("lj-1m", &f)) == MDNL_OK) {
        st = bench_case(out, json, 1, "lj-1m", &f, 4.0, 200);
        if (st == MDNL_OK && (st = mdnl_system_build("graphene-1m", &f)) == MDNL_OK)
            st = bench_case(out, json, 0, "graphene-1m", &f, 10.0, 500);
    }
    if (json)
        fputs("}\n", out);
    mdnl_frame_free(&f);
    return st;
}

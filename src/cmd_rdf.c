/* cmd_rdf.c — `mdnl rdf`: pair-distance histograms binned while traversing
 * the cells (no list stored), averaged into g(r) and n(r) over the selected
 * frames (SPEC §5); TSV or HDF5, and an SVG plot. */
#include "cli.h"
#include "h5md_writer.h"
#include "output_file.h"
#include "pipeline.h"
#include "rdf_frames.h"
#include "rdf_table.h"

#include <stdlib.h>
#include <string.h>

#define MAX_PAIRS MDNL_MAX_RDF_PAIRS

mdnl_status mdnl_cmd_rdf(int argc, char **argv)
{
    mdnl_opts o;
    mdnl_status st = mdnl_parse_options("rdf", mdnl_command_options("rdf"), argc, argv, 2, &o);
    if (st != MDNL_OK)
        return st;
    if (o.npositional != 1)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl rdf: expected one INPUT file, got %d", o.npositional);
    if (!o.has_rmax || !o.has_bins)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl rdf: --rmax R and --bins B are required");
    if (o.bins > 1000000)
        return mdnl_error(MDNL_ERR_USAGE, "--bins: at most 1000000, got %lld", o.bins);
    mdnl_pair_names pn = {0};
    if (o.pairs && (st = mdnl_pair_names_parse(o.pairs, &pn)) != MDNL_OK)
        return st;
    const char *input = o.positional[0];
    const char *outpath = o.output ? o.output : (o.json ? NULL : "-");
    const bool h5 = outpath && mdnl_is_hdf5_path(outpath);
    const char *const outs[2] = {outpath, o.plot};
    const mdnl_output_kind kinds[2] = {h5 ? MDNL_OUTPUT_HDF5 : MDNL_OUTPUT_TEXT, MDNL_OUTPUT_TEXT};
    if ((st = mdnl_output_check(input, 2, outs, kinds)) != MDNL_OK)
        return st;
    if (o.plot && (st = mdnl_rdf_plot_check(o.plot)) != MDNL_OK)
        return st;
    if (o.per_frame && !h5 && !o.plot)
        return mdnl_error(MDNL_ERR_USAGE, "--per-frame: needs -o FILE.h5 (per-frame datasets) or --plot FILE.svg "
                                          "(a heat map); the TSV table holds the mean only");

    int32_t ids[MAX_PAIRS][2] = {{0}}; /* resolved per frame */
    mdnl_hist_spec spec = {.r_max = o.rmax, .bins = (int32_t)o.bins, .npairs = pn.n, .pairs = ids};
    const int32_t nh = mdnl_hist_nhist(&spec);
    mdnl_context *ctx = NULL;
    if ((st = mdnl_context_of(&o, &ctx)) != MDNL_OK)
        return st;
    mdnl_frames *fs = NULL;
    mdnl_frame f = {0};
    int64_t nframes = 0;
    mdnl_atoms_range atoms = {0};
    uint64_t *counts = NULL, pairs_counted = 0;
    mdnl_rdf_accum acc = {0};
    mdnl_rdf_series pf = {0}; /* --per-frame */
    mdnl_ofile out = {0}, plot = {0};
    mdnl_h5md_results *res = NULL;
    mdnl_progress prog = {0};
    double t_read = 0, t_hist = 0, t_write = 0;

    if ((st = mdnl_rdf_accum_init(&acc, &spec, o.has_volume ? o.volume : 0)) != MDNL_OK)
        goto done;
    if (o.per_frame) {
        if ((st = mdnl_rdf_series_init(&pf, &spec, o.has_volume ? o.volume : 0, &pn, o.plot != NULL)) != MDNL_OK)
            goto done;
        if (h5 && (st = mdnl_h5md_results_create(outpath, &res)) != MDNL_OK)
            goto done;
    }
    if (!(counts = mdnl_malloc((size_t)nh * (size_t)spec.bins * sizeof *counts, "histogram"))) {
        st = MDNL_ERR_RESOURCE;
        goto done;
    }
    if ((st = mdnl_frames_open(&o, input, &fs)) != MDNL_OK)
        goto done;
    mdnl_progress_start(&prog, &o, fs);
    for (;;) {
        double t0 = mdnl_now();
        st = mdnl_frames_next(fs, &f);
        if (st == MDNL_END) {
            st = MDNL_OK; /* MDNL_END left in st is what main.c takes for --help */
            break;
        }
        if (st != MDNL_OK)
            goto done;
        double t1 = mdnl_now();
        if ((st = mdnl_pair_names_resolve(&pn, input, &f, ids)) != MDNL_OK)
            goto done;
        mdnl_system sys;
        double volume = 0;
        if ((st = mdnl_frame_system(ctx, input, &f, &sys)) != MDNL_OK ||
            (st = mdnl_histogram(ctx, &sys, o.rmax, spec.bins, f.species, pn.n, (const int32_t(*)[2])ids, counts,
                                 &volume)) != MDNL_OK)
            goto done;
        int64_t na[MAX_PAIRS], nb[MAX_PAIRS];
        mdnl_hist_species_counts(&spec, f.species, f.natoms, na, nb);
        if ((st = mdnl_rdf_accum_add(&acc, counts, na, nb, volume)) != MDNL_OK)
            goto done;
        if (o.per_frame && (st = mdnl_rdf_series_add(&pf, res, f.index, f.step, counts, na, nb, volume)) != MDNL_OK)
            goto done;
        for (int64_t k = 0; k < (int64_t)nh * spec.bins; ++k)
            pairs_counted += counts[k];
        t_read += t1 - t0, t_hist += mdnl_now() - t1;
        nframes++;
        mdnl_atoms_range_add(&atoms, f.natoms);
        mdnl_progress_step(&prog);
    }
    mdnl_progress_end(&prog);
    {
        double t2 = mdnl_now();
        const char *const *names = pn.n ? pn.labels : NULL;
        if (h5) {
            if ((!res && (st = mdnl_h5md_results_create(outpath, &res)) != MDNL_OK) ||
                (st = mdnl_rdf_write_h5(res, &acc, &pn)) != MDNL_OK)
                goto done;
        } else if (outpath) {
            if ((st = mdnl_ofile_open(&out, outpath)) != MDNL_OK ||
                (st = mdnl_rdf_table_write(out.fp, &acc, names)) != MDNL_OK)
                goto done;
        }
        if (o.plot) {
            if ((st = mdnl_ofile_open(&plot, o.plot)) != MDNL_OK ||
                (st = mdnl_rdf_plot_write(plot.fp, &acc, &pf, names, input)) != MDNL_OK)
                goto done;
        }
        /* Commit only when everything is written: a failure leaves nothing. */
        if (h5) {
            st = mdnl_h5md_results_commit(res); /* frees res */
            res = NULL;
            if (st != MDNL_OK)
                goto done;
        } else if (outpath && (st = mdnl_ofile_commit(&out)) != MDNL_OK) {
            goto done;
        }
        if (o.plot && (st = mdnl_ofile_commit(&plot)) != MDNL_OK)
            goto done;
        t_write = mdnl_now() - t2;
    }
    if (o.json) {
        printf("{\"command\":\"rdf\",\"input\":");
        mdnl_json_string(stdout, input);
        printf(",\"frames\":%lld", (long long)nframes);
        mdnl_atoms_range_json(stdout, &atoms);
        if (outpath) {
            printf(",\"output\":");
            mdnl_json_string(stdout, outpath);
        }
        if (o.plot) {
            printf(",\"plot\":");
            mdnl_json_string(stdout, o.plot);
        }
        printf(",\"rmax\":%.15g,\"bins\":%d,\"histograms\":[", o.rmax, spec.bins);
        for (int h = 0; h < nh; ++h) {
            printf(h ? "," : "");
            mdnl_json_string(stdout, pn.n ? pn.labels[h] : "total");
        }
        printf("],\"pairs_counted\":%llu,\"g\":%s,\"backend\":\"%s\",\"seconds\":{\"read\":%.6f,\"histogram\":%.6f,"
               "\"write\":%.6f}}\n",
               (unsigned long long)pairs_counted, mdnl_rdf_has_g(&acc) ? "true" : "false",
               mdnl_backend_name(mdnl_backend_of(ctx)), t_read, t_hist, t_write);
    } else if (!o.quiet) {
        mdnl_frames_note(fs);
        char na[64];
        fprintf(stderr,
                "mdnl rdf: %lld frame(s) of %s, %llu pair distances below %g in %d bins (%s), %s; read %.3f s, "
                "histogram %.3f s, write %.3f s",
                (long long)nframes, mdnl_atoms_range_text(&atoms, na, sizeof na), (unsigned long long)pairs_counted,
                o.rmax, spec.bins,
                mdnl_rdf_has_g(&acc) ? "g(r)"
                : nframes            ? "counts: open frames, no --volume"
                                     : "no frame",
                mdnl_backend_name(mdnl_backend_of(ctx)), t_read, t_hist, t_write);
        if (strcmp(outpath, "-") != 0)
            fprintf(stderr, "; written to %s", outpath);
        if (o.plot)
            fprintf(stderr, "; plot %s", o.plot);
        fputc('\n', stderr);
    }
done:
    mdnl_progress_end(&prog);
    if (st != MDNL_OK) {
        mdnl_ofile_abort(&out);
        mdnl_ofile_abort(&plot);
        mdnl_h5md_results_abort(res);
    }
    mdnl_rdf_accum_free(&acc);
    mdnl_rdf_series_free(&pf);
    free(counts);
    mdnl_frames_close(fs);
    mdnl_frame_free(&f);
    mdnl_context_free(ctx);
    return st;
}

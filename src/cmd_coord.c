/* cmd_coord.c — `mdnl coord`: coordination numbers (neighbors within the
 * cutoff, per atom and optionally per species pair) of every frame, counted
 * while traversing the cells (coord.h: no list stored), with the histogram
 * of the counts; TSV or HDF5. */
#include "cli.h"
#include "h5md_writer.h"
#include "output_file.h"
#include "pipeline.h"

#include <stdlib.h>
#include <string.h>

/* hist[p][c]: atoms (of A for a pair column) with c neighbors, over frames. */
typedef struct coord_hist {
    int64_t *h; /* [ncols][cap] */
    int64_t cap, top; /* top: largest count seen + 1 */
} coord_hist;

static mdnl_status hist_add(coord_hist *H, int32_t nc, const int32_t *counts, int64_t natoms, const int32_t *species,
                            const int32_t (*ids)[2], bool pairs)
{
    int32_t m = 0;
    for (int64_t s = 0; s < natoms * nc; ++s)
        m = counts[s] > m ? counts[s] : m;
    if (m + 1 > H->cap) {
        int64_t cap = H->cap ? H->cap : 64;
        while (cap < m + 1)
            cap *= 2;
        int64_t *h = mdnl_calloc((size_t)(cap * nc), sizeof *h, "coordination histogram");
        if (!h)
            return MDNL_ERR_RESOURCE;
        for (int32_t p = 0; p < nc; ++p)
            for (int64_t c = 0; c < H->cap; ++c)
                h[p * cap + c] = H->h[p * H->cap + c];
        free(H->h);
        H->h = h, H->cap = cap;
    }
    for (int64_t i = 0; i < natoms; ++i)
        for (int32_t p = 0; p < nc; ++p)
            if (!pairs || species[i] == ids[p][0])
                H->h[p * H->cap + counts[i * nc + p]]++;
    H->top = m + 1 > H->top ? m + 1 : H->top;
    return MDNL_OK;
}

mdnl_status mdnl_cmd_coord(int argc, char **argv)
{
    mdnl_opts o;
    mdnl_status st = mdnl_parse_options("coord", mdnl_command_options("coord"), argc, argv, 2, &o);
    if (st != MDNL_OK)
        return st;
    if (o.npositional != 1)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl coord: expected one INPUT file, got %d", o.npositional);
    if (!o.has_cutoff)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl coord: the cutoff -c CUT is required");
    mdnl_pair_names pn = {0};
    if (o.pairs && (st = mdnl_pair_names_parse(o.pairs, &pn)) != MDNL_OK)
        return st;
    if (pn.n > MDNL_COORDINATION_MAX_PAIRS)
        return mdnl_error(MDNL_ERR_USAGE, "--pairs: mdnl coord takes at most %d pairs, got %d", MDNL_COORDINATION_MAX_PAIRS,
                          pn.n);
    const char *input = o.positional[0];
    const char *outpath = o.output ? o.output : (o.json ? NULL : "-");
    const bool h5 = outpath && mdnl_is_hdf5_path(outpath);
    if (o.histogram && h5)
        return mdnl_error(MDNL_ERR_USAGE, "--histogram: the HDF5 output holds /coordination/<name>/histogram already");
    const char *const outs[2] = {outpath, o.histogram};
    const mdnl_output_kind kinds[2] = {h5 ? MDNL_OUTPUT_HDF5 : MDNL_OUTPUT_TEXT, MDNL_OUTPUT_TEXT};
    if ((st = mdnl_output_check(input, 2, outs, kinds)) != MDNL_OK)
        return st;

    const int32_t nc = pn.n > 0 ? pn.n : 1;
    int32_t ids[MDNL_MAX_RDF_PAIRS][2] = {{0}};
    mdnl_context *ctx = NULL;
    if ((st = mdnl_context_of(&o, &ctx)) != MDNL_OK)
        return st;
    mdnl_frames *fs = NULL;
    mdnl_frame f = {0};
    int64_t cnt_cap = 0, nframes = 0;
    int32_t *counts = NULL, *col = NULL;
    coord_hist H = {0};
    mdnl_ofile out = {0}, hout = {0};
    mdnl_h5md_results *res = NULL;
    mdnl_progress prog = {0};
    mdnl_atoms_range atoms = {0};
    double t_read = 0, t_count = 0, t_write = 0, sum = 0, nsum = 0;

    if ((st = mdnl_frames_open(&o, input, &fs)) != MDNL_OK)
        goto done;
    if (h5)
        st = mdnl_h5md_results_create(outpath, &res);
    else if (outpath)
        st = mdnl_ofile_open(&out, outpath);
    if (st != MDNL_OK)
        goto done;
    if (outpath && !h5) {
        fputs("# frame\ti", out.fp);
        for (int32_t p = 0; p < nc; ++p)
            fprintf(out.fp, pn.n ? "\tcount:%s" : "\tcount", pn.n ? pn.labels[p] : "");
        fputc('\n', out.fp);
    }
    mdnl_progress_start(&prog, &o, fs);
    for (;;) {
        double t0 = mdnl_now();
        st = mdnl_frames_next(fs, &f);
        if (st == MDNL_END) {
            st = MDNL_OK;
            break;
        }
        if (st != MDNL_OK)
            goto done;
        double t1 = mdnl_now();
        if (pn.n && (st = mdnl_pair_names_resolve(&pn, input, &f, ids)) != MDNL_OK)
            goto done;
        mdnl_system sys;
        if ((st = mdnl_frame_system(ctx, input, &f, &sys)) != MDNL_OK)
            goto done;
        if (cnt_cap < f.natoms + 1) {
            free(counts), free(col);
            cnt_cap = f.natoms + 1;
            counts = mdnl_malloc((size_t)cnt_cap * (size_t)nc * sizeof *counts, "coordination numbers");
            col = mdnl_malloc((size_t)cnt_cap * sizeof *col, "coordination column");
            if (!counts || !col) {
                st = MDNL_ERR_RESOURCE;
                goto done;
            }
        }
        if ((st = mdnl_coordination(ctx, &sys, o.cutoff, f.species, pn.n, (const int32_t(*)[2])ids, counts)) !=
            MDNL_OK)
            goto done;
        double t2 = mdnl_now();
        if ((st = hist_add(&H, nc, counts, f.natoms, f.species, (const int32_t(*)[2])ids, pn.n > 0)) != MDNL_OK)
            goto done;
        for (int64_t i = 0; i < f.natoms; ++i)
            for (int32_t p = 0; p < nc; ++p)
                if (!pn.n || f.species[i] == ids[p][0])
                    sum += counts[i * nc + p], nsum += 1;
        if (h5) {
            for (int32_t p = 0; p < nc && st == MDNL_OK; ++p) {
                for (int64_t i = 0; i < f.natoms; ++i)
                    col[i] = counts[i * nc + p];
                st = mdnl_h5md_results_write_coord(res, pn.n ? pn.labels[p] : "total", f.index, f.step, f.natoms,
                                                   col);
            }
            if (st != MDNL_OK)
                goto done;
        } else if (outpath) {
            for (int64_t i = 0; i < f.natoms; ++i) {
                fprintf(out.fp, "%lld\t%lld", (long long)f.index, (long long)i);
                for (int32_t p = 0; p < nc; ++p)
                    fprintf(out.fp, "\t%d", counts[i * nc + p]);
                fputc('\n', out.fp);
            }
            if (ferror(out.fp)) {
                st = mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed", outpath);
                goto done;
            }
        }
        t_read += t1 - t0, t_count += t2 - t1, t_write += mdnl_now() - t2;
        nframes++;
        mdnl_atoms_range_add(&atoms, f.natoms);
        mdnl_progress_step(&prog);
    }
    mdnl_progress_end(&prog);
    if (h5)
        for (int32_t p = 0; p < nc && st == MDNL_OK; ++p) {
            int64_t *row = H.h ? H.h + p * H.cap : NULL;
            int64_t zero = 0;
            st = mdnl_h5md_results_write_coord_histogram(res, pn.n ? pn.labels[p] : "total", H.top, row ? row : &zero);
        }
    if (st == MDNL_OK && o.histogram) {
        if ((st = mdnl_ofile_open(&hout, o.histogram)) == MDNL_OK) {
            fputs("# count", hout.fp);
            for (int32_t p = 0; p < nc; ++p)
                fprintf(hout.fp, pn.n ? "\tatoms:%s" : "\tatoms", pn.n ? pn.labels[p] : "");
            fputc('\n', hout.fp);
            for (int64_t c = 0; c < H.top; ++c) {
                fprintf(hout.fp, "%lld", (long long)c);
                for (int32_t p = 0; p < nc; ++p)
                    fprintf(hout.fp, "\t%lld", (long long)H.h[p * H.cap + c]);
                fputc('\n', hout.fp);
            }
            if (ferror(hout.fp))
                st = mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed", o.histogram);
        }
    }
    if (st != MDNL_OK)
        goto done;
    if (h5) {
        st = mdnl_h5md_results_commit(res); /* frees res */
        res = NULL;
    } else if (outpath) {
        st = mdnl_ofile_commit(&out);
    }
    if (st == MDNL_OK && o.histogram)
        st = mdnl_ofile_commit(&hout);
    if (st != MDNL_OK)
        goto done;
    if (o.json) {
        printf("{\"command\":\"coord\",\"input\":");
        mdnl_json_string(stdout, input);
        printf(",\"cutoff\":%.15g,\"frames\":%lld", o.cutoff, (long long)nframes);
        mdnl_atoms_range_json(stdout, &atoms);
        printf(",\"backend\":\"%s\"", mdnl_backend_name(mdnl_backend_of(ctx)));
        if (outpath) {
            printf(",\"output\":");
            mdnl_json_string(stdout, outpath);
        }
        printf(",\"mean\":%.17g,\"max\":%lld", nsum > 0 ? sum / nsum : 0.0, (long long)(H.top > 0 ? H.top - 1 : 0));
        printf(",\"seconds\":{\"read\":%.6f,\"count\":%.6f,\"write\":%.6f}}\n", t_read, t_count, t_write);
    } else if (!o.quiet) {
        mdnl_frames_note(fs);
        char na[64];
        fprintf(stderr,
                "mdnl coord: %lld frame(s) of %s below %g, %s; mean %.6g, max %lld; read %.3f s, count %.3f s, "
                "write %.3f s",
                (long long)nframes, mdnl_atoms_range_text(&atoms, na, sizeof na), o.cutoff,
                mdnl_backend_name(mdnl_backend_of(ctx)), nsum > 0 ? sum / nsum : 0.0, (long long)(H.top > 0 ? H.top - 1 : 0),
                t_read, t_count, t_write);
        if (strcmp(outpath, "-") != 0)
            fprintf(stderr, "; written to %s", outpath);
        fputc('\n', stderr);
    }
done:
    mdnl_progress_end(&prog);
    if (st != MDNL_OK) {
        mdnl_ofile_abort(&out);
        mdnl_ofile_abort(&hout);
        mdnl_h5md_results_abort(res);
    }
    mdnl_frames_close(fs);
    mdnl_frame_free(&f);
    free(counts), free(col), free(H.h);
    mdnl_context_free(ctx);
    return st;
}

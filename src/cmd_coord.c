/* cmd_coord.c — `mdnl coord`: coordination numbers (neighbors within the
 * cutoff, per atom and optionally per species pair) of every frame, counted
 * while traversing the cells (coord.h: no list stored), with the histogram
 * of the counts; TSV or HDF5. */
#include "cli.h"
#include "h5md_writer.h"
#include "output_file.h"
#include "pipeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* --pair-cut A-B=R,...: each named pair's cutoff. The species named are
 * types 1.., every other species type 0; a pair not named has -c (none
 * without it: ASE's cutoff dict). */
typedef struct pair_cuts {
    mdnl_pair_names pn; /* the pairs, resolved per frame as --pairs */
    int32_t ta[MDNL_MAX_RDF_PAIRS], tb[MDNL_MAX_RDF_PAIRS];
    char names[MDNL_COORDINATION_MAX_TYPES][MDNL_SYMBOL_LEN];
    double max_cut; /* the traversal's cutoff */
    int32_t ntypes; /* 1 + the species named */
    double cut[MDNL_COORDINATION_MAX_TYPES * MDNL_COORDINATION_MAX_TYPES]; /* [a * ntypes + b], packed */
} pair_cuts;

static int32_t cut_type(pair_cuts *pc, const char *name)
{
    for (int32_t t = 1; t < pc->ntypes; ++t)
        if (strcmp(pc->names[t], name) == 0)
            return t;
    if (pc->ntypes == MDNL_COORDINATION_MAX_TYPES)
        return -1;
    snprintf(pc->names[pc->ntypes], MDNL_SYMBOL_LEN, "%s", name);
    return pc->ntypes++;
}

static mdnl_status pair_cuts_parse(const char *spec, bool has_c, double c, pair_cuts *pc)
{
    memset(pc, 0, sizeof *pc);
    pc->pn.option = "--pair-cut";
    char names[1024];
    double cut[MDNL_MAX_RDF_PAIRS];
    size_t len = 0;
    int n = 0;
    for (const char *s = spec; *s;) {
        const char *comma = strchr(s, ',');
        const size_t l = comma ? (size_t)(comma - s) : strlen(s);
        const char *eq = memchr(s, '=', l);
        char num[64], *end = NULL;
        double r = 0;
        if (eq && (size_t)(s + l - eq - 1) < sizeof num) {
            memcpy(num, eq + 1, (size_t)(s + l - eq - 1));
            num[s + l - eq - 1] = '\0';
            r = strtod(num, &end);
        }
        if (!eq || eq == s || !end || end == num || *end || !isfinite(r) || r <= 0)
            return mdnl_error(MDNL_ERR_USAGE, "--pair-cut: expected A-B=R (R > 0) separated by commas, got \"%.*s\"",
                              (int)l, s);
        if (n == MDNL_MAX_RDF_PAIRS || len + (size_t)(eq - s) + 2 > sizeof names)
            return mdnl_error(MDNL_ERR_USAGE, "--pair-cut: at most %d pairs", MDNL_MAX_RDF_PAIRS);
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%.*s", n ? "," : "", (int)(eq - s), s);
        cut[n++] = r;
        s += l + (comma ? 1 : 0);
        if (comma && !*s)
            return mdnl_error(MDNL_ERR_USAGE, "--pair-cut: trailing comma");
    }
    if (n == 0)
        return mdnl_error(MDNL_ERR_USAGE, "--pair-cut: expected A-B=R (R > 0) separated by commas");
    names[len] = '\0';
    mdnl_status st = mdnl_pair_names_parse(names, &pc->pn);
    if (st != MDNL_OK)
        return st;
    pc->ntypes = 1;
    const double dflt = has_c ? c : 0.0;
    for (int k = 0; k < MDNL_COORDINATION_MAX_TYPES * MDNL_COORDINATION_MAX_TYPES; ++k)
        pc->cut[k] = dflt;
    bool set[MDNL_COORDINATION_MAX_TYPES][MDNL_COORDINATION_MAX_TYPES] = {{false}};
    pc->max_cut = has_c ? c : 0.0;
    for (int p = 0; p < n; ++p) {
        const int32_t a = cut_type(pc, pc->pn.a[p]), b = cut_type(pc, pc->pn.b[p]);
        if (a < 0 || b < 0)
            return mdnl_error(MDNL_ERR_USAGE, "--pair-cut: at most %d species can be named", MDNL_COORDINATION_MAX_TYPES - 1);
        if (set[a][b])
            return mdnl_error(MDNL_ERR_USAGE, "--pair-cut: pair %s given twice", pc->pn.labels[p]);
        set[a][b] = set[b][a] = true;
        pc->ta[p] = a, pc->tb[p] = b;
        pc->cut[a * MDNL_COORDINATION_MAX_TYPES + b] = pc->cut[b * MDNL_COORDINATION_MAX_TYPES + a] = cut[p];
        pc->max_cut = cut[p] > pc->max_cut ? cut[p] : pc->max_cut;
    }
    /* packed to ntypes x ntypes, as mdnl_coordination_types reads it */
    const int32_t nt = pc->ntypes;
    for (int32_t a = 0; a < nt; ++a)
        for (int32_t b = 0; b < nt; ++b)
            pc->cut[a * nt + b] = pc->cut[a * MDNL_COORDINATION_MAX_TYPES + b];
    return MDNL_OK;
}

/* The frame's atom types into types[natoms] (a named species the frame lacks: MDNL_ERR_INPUT). */
static mdnl_status pair_cuts_types(const pair_cuts *pc, const char *input, const mdnl_frame *f, int32_t *types)
{
    int32_t ids[MDNL_MAX_RDF_PAIRS][2];
    mdnl_status st = mdnl_pair_names_resolve(&pc->pn, input, f, ids);
    if (st != MDNL_OK)
        return st;
    int32_t *map = mdnl_calloc((size_t)(f->nspecies > 0 ? f->nspecies : 1), sizeof *map, "pair-cut types");
    if (!map)
        return MDNL_ERR_RESOURCE;
    for (int p = 0; p < pc->pn.n; ++p)
        map[ids[p][0]] = pc->ta[p], map[ids[p][1]] = pc->tb[p];
    for (int64_t i = 0; i < f->natoms; ++i)
        types[i] = map[f->species[i]];
    free(map);
    return MDNL_OK;
}

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
    if (!o.has_cutoff && !o.pair_cut)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl coord: the cutoff -c CUT (or --pair-cut A-B=R,...) is required");
    pair_cuts pc;
    if (o.pair_cut && (st = pair_cuts_parse(o.pair_cut, o.has_cutoff, o.cutoff, &pc)) != MDNL_OK)
        return st;
    const double cutoff = o.pair_cut ? pc.max_cut : o.cutoff; /* the traversal's */
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
    int32_t *counts = NULL, *col = NULL, *types = NULL;
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
            free(counts), free(col), free(types);
            cnt_cap = f.natoms + 1;
            counts = mdnl_malloc((size_t)cnt_cap * (size_t)nc * sizeof *counts, "coordination numbers");
            col = mdnl_malloc((size_t)cnt_cap * sizeof *col, "coordination column");
            types = mdnl_malloc((size_t)cnt_cap * sizeof *types, "pair-cut types");
            if (!counts || !col || !types) {
                st = MDNL_ERR_RESOURCE;
                goto done;
            }
        }
        if (o.pair_cut && (st = pair_cuts_types(&pc, input, &f, types)) != MDNL_OK)
            goto done;
        if ((st = o.pair_cut ? mdnl_coordination_types(ctx, &sys, pc.ntypes, pc.cut, types, f.species, pn.n,
                                                       (const int32_t(*)[2])ids, counts)
                             : mdnl_coordination(ctx, &sys, cutoff, f.species, pn.n, (const int32_t(*)[2])ids,
                                                 counts)) != MDNL_OK)
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
        printf(",\"cutoff\":%.15g,\"frames\":%lld", cutoff, (long long)nframes);
        if (o.pair_cut) {
            printf(",\"pair_cut\":");
            mdnl_json_string(stdout, o.pair_cut);
        }
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
                (long long)nframes, mdnl_atoms_range_text(&atoms, na, sizeof na), cutoff,
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
    free(counts), free(col), free(types), free(H.h);
    mdnl_context_free(ctx);
    return st;
}

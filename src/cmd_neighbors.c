/* cmd_neighbors.c — `mdnl neighbors`: the neighbor list of every selected
 * frame as a TSV table (# frame i j distance). */
#include "cli.h"
#include "engine.h"
#include "h5md_writer.h"
#include "output_file.h"

#include <stdlib.h>
#include <string.h>

/* Appends the decimal digits of v to p; returns the new end. */
static char *put_int(char *p, int64_t v)
{
    char tmp[24];
    int n = 0;
    if (v < 0) {
        *p++ = '-';
        v = -v;
    }
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    while (n)
        *p++ = tmp[--n];
    return p;
}

mdnl_status mdnl_neighbors_tsv_rows(FILE *fp, int64_t frame, const mdnl_nlist *l)
{
    char line[96];
    for (int64_t i = 0; i < l->natoms; ++i)
        for (int64_t k = l->offsets[i]; k < l->offsets[i + 1]; ++k) {
            char *p = put_int(line, frame);
            *p++ = '\t';
            p = put_int(p, i);
            *p++ = '\t';
            p = put_int(p, l->j[k]);
            *p++ = '\t';
            p += snprintf(p, 32, "%.9g", (double)l->d[k]);
            *p++ = '\n';
            if (fwrite(line, 1, (size_t)(p - line), fp) != (size_t)(p - line))
                return mdnl_error(MDNL_ERR_RESOURCE, "write failed");
        }
    return MDNL_OK;
}

mdnl_status mdnl_cmd_neighbors(int argc, char **argv)
{
    mdnl_opts o;
    mdnl_status st = mdnl_parse_options("neighbors", mdnl_command_options("neighbors"), argc, argv, 2, &o);
    if (st != MDNL_OK)
        return st;
    if (o.npositional != 1)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl neighbors: expected one INPUT file, got %d", o.npositional);
    if (!o.has_cutoff)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl neighbors: the cutoff -c CUT is required");
    const char *input = o.positional[0];
    const char *outpath = o.output ? o.output : (o.json ? NULL : "-");
    const bool h5 = outpath && mdnl_is_hdf5_path(outpath);
    const mdnl_output_kind out_kind = h5 ? MDNL_OUTPUT_HDF5 : MDNL_OUTPUT_TEXT;
    if ((st = mdnl_output_check(input, 1, &outpath, &out_kind)) != MDNL_OK)
        return st;
    mdnl_h5md_results *res = NULL;

    mdnl_engine eng;
    if ((st = mdnl_engine_init(&eng, &o)) != MDNL_OK)
        return st;
    mdnl_frames *fs = NULL;
    mdnl_frame f = {0};
    mdnl_nlist list = {0};
    float(*pos4)[4] = NULL;
    int64_t pos_cap = 0;
    mdnl_ofile out = {0};
    int64_t nframes = 0, total_pairs = 0;
    mdnl_atoms_range atoms = {0};
    double t_read = 0, t_nl = 0, t_write = 0;
    mdnl_progress prog;
    bool progress_started = false;

    if ((st = mdnl_frames_open(&o, input, &fs)) != MDNL_OK)
        goto done;
    if (h5) {
        mdnl_list_kind k = o.has_list ? o.list : MDNL_LIST_HALF;
        if ((st = mdnl_h5md_results_create(outpath, &res)) != MDNL_OK ||
            (st = mdnl_h5md_results_set_neighbors_info(res, k == MDNL_LIST_FULL ? "full" : "half", o.cutoff)) !=
                MDNL_OK)
            goto done;
    } else if (outpath) {
        if ((st = mdnl_ofile_open(&out, outpath)) != MDNL_OK)
            goto done;
        if (fputs("# frame\ti\tj\tdistance\n", out.fp) < 0) {
            st = mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed", outpath);
            goto done;
        }
    }
    mdnl_progress_start(&prog, &o, fs);
    progress_started = true;
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
        mdnl_geom g;
        if ((st = mdnl_prepare_frame(input, &f, o.cutoff, &g, &pos4, &pos_cap)) != MDNL_OK)
            goto done;
        mdnl_list_kind kind = o.has_list ? o.list : MDNL_LIST_HALF;
        if ((st = mdnl_check_list_memory(input, &g, kind, 1)) != MDNL_OK ||
            (st = mdnl_engine_nlist(&eng, &g, (const float(*)[4])pos4, o.method, kind, &list)) != MDNL_OK)
            goto done;
        double t2 = mdnl_now();
        if (h5) {
            if ((st = mdnl_h5md_results_write_neighbors(res, f.index, list.natoms, list.offsets, list.j, list.d,
                                                         list.npairs)) != MDNL_OK)
                goto done;
        } else if (outpath && (st = mdnl_neighbors_tsv_rows(out.fp, f.index, &list)) != MDNL_OK) {
            st = mdnl_error(st, "%s: write failed", outpath);
            goto done;
        }
        double t3 = mdnl_now();
        t_read += t1 - t0, t_nl += t2 - t1, t_write += t3 - t2;
        nframes++;
        mdnl_atoms_range_add(&atoms, f.natoms);
        total_pairs += list.npairs;
        mdnl_progress_step(&prog);
    }
    if (h5) {
        st = mdnl_h5md_results_commit(res); /* frees res */
        res = NULL;
        if (st != MDNL_OK)
            goto done;
    } else if (outpath && (st = mdnl_ofile_commit(&out)) != MDNL_OK) {
        goto done;
    }
    mdnl_progress_end(&prog);
    progress_started = false;
    {
        mdnl_method used = eng.last_method;
        const char *kind = (o.has_list ? o.list : MDNL_LIST_HALF) == MDNL_LIST_FULL ? "full" : "half";
        if (o.json) {
            printf("{\"command\":\"neighbors\",\"input\":");
            mdnl_json_string(stdout, input);
            printf(",\"frames\":%lld", (long long)nframes);
            mdnl_atoms_range_json(stdout, &atoms);
            if (outpath) {
                printf(",\"output\":");
                mdnl_json_string(stdout, outpath);
            }
            printf(",\"pairs\":%lld,\"list\":\"%s\",\"cutoff\":%.15g,\"backend\":\"%s\",\"method\":\"%s\","
                   "\"seconds\":{\"read\":%.6f,\"neighbors\":%.6f,\"write\":%.6f}}\n",
                   (long long)total_pairs, kind, o.cutoff, mdnl_backend_name(eng.backend), mdnl_method_name(used),
                   t_read, t_nl, t_write);
        } else if (!o.quiet) {
            mdnl_frames_note(fs);
            char na[64];
            fprintf(stderr,
                    "mdnl neighbors: %lld frame(s) of %s, %lld pairs (%s list) below %g, %s/%s, "
                    "read %.3f s, neighbors %.3f s, write %.3f s",
                    (long long)nframes, mdnl_atoms_range_text(&atoms, na, sizeof na), (long long)total_pairs, kind,
                    o.cutoff, mdnl_backend_name(eng.backend), mdnl_method_name(used), t_read, t_nl, t_write);
            if (strcmp(outpath, "-") != 0)
                fprintf(stderr, "; written to %s", outpath);
            fputc('\n', stderr);
        }
    }
done:
    if (progress_started)
        mdnl_progress_end(&prog);
    if (st != MDNL_OK) {
        mdnl_ofile_abort(&out);
        mdnl_h5md_results_abort(res);
    }
    mdnl_frames_close(fs);
    mdnl_frame_free(&f);
    mdnl_nlist_free(&list);
    free(pos4);
    mdnl_engine_free(&eng);
    return st;
}

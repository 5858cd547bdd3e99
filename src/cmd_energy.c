/* cmd_energy.c — `mdnl energy`: pair-potential energy per frame (and per
 * atom) by the fused path (no neighbor list stored), as TSV or H5MD. */
#include "cli.h"
#include "h5md_writer.h"
#include "output_file.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

mdnl_status mdnl_cmd_energy(int argc, char **argv)
{
    mdnl_opts o;
    mdnl_status st = mdnl_parse_options("energy", mdnl_command_options("energy"), argc, argv, 2, &o);
    if (st != MDNL_OK)
        return st;
    if (o.npositional != 1)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl energy: expected one INPUT file, got %d", o.npositional);
    if (!o.has_cutoff)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl energy: the cutoff -c CUT is required");
    if (!o.pair)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl energy: --pair SPEC is required (e.g. lj:epsilon=1,sigma=1)");
    /* One pair type: the single-potential kernels; otherwise the table. */
    mdnl_pair_table tab;
    if ((st = mdnl_pair_table_parse(o.pair, o.pair_coeff, o.npair_coeff, o.cutoff, &tab)) != MDNL_OK)
        return st;
    const mdnl_potential pot = tab.p[0];
    const bool table = tab.ntypes > 1;
    const double cutoff = tab.max_cutoff;
    /* the library's per-pair parameters and cutoffs */
    mdnl_pair_params params[MDNL_PAIR_TYPES_MAX * MDNL_PAIR_TYPES_MAX];
    double cutoffs[MDNL_PAIR_TYPES_MAX * MDNL_PAIR_TYPES_MAX];
    mdnl_pair_params_of(tab.p, tab.ntypes, params, cutoffs);
    const char *input = o.positional[0];
    const char *outpath = o.output ? o.output : (o.json ? NULL : "-");
    const bool h5 = outpath && mdnl_is_hdf5_path(outpath);
    const mdnl_output_kind out_kind = h5 ? MDNL_OUTPUT_HDF5 : MDNL_OUTPUT_TEXT;
    if ((st = mdnl_output_check(input, 1, &outpath, &out_kind)) != MDNL_OK)
        return st;

    mdnl_context *ctx = NULL;
    if ((st = mdnl_context_of(&o, &ctx)) != MDNL_OK)
        return st;
    mdnl_frames *fs = NULL;
    mdnl_frame f = {0};
    int64_t per_cap = 0;
    double *per_atom = NULL;
    int32_t *types = NULL;
    int64_t types_cap = 0;
    mdnl_ofile out = {0};
    mdnl_h5md_results *res = NULL;
    mdnl_progress prog = {0};
    int64_t nframes = 0;
    mdnl_atoms_range atoms = {0};
    double e_first = 0, e_last = 0, e_sum = 0, e_min = INFINITY, e_max = -INFINITY;
    double t_read = 0, t_energy = 0, t_write = 0;

    if ((st = mdnl_frames_open(&o, input, &fs)) != MDNL_OK)
        goto done;
    if (h5)
        st = mdnl_h5md_results_create(outpath, &res);
    else if (outpath)
        st = mdnl_ofile_open(&out, outpath);
    if (st != MDNL_OK)
        goto done;
    if (outpath && !h5 && fputs(o.per_atom ? "# frame\ti\tenergy\n" : "# frame\tstep\tenergy\n", out.fp) < 0) {
        st = mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed", outpath);
        goto done;
    }
    mdnl_progress_start(&prog, &o, fs);
    for (;;) {
        double t0 = mdnl_now();
        st = mdnl_frames_next(fs, &f);
        if (st == MDNL_END)
            break;
        if (st != MDNL_OK)
            goto done;
        double t1 = mdnl_now();
        mdnl_system sys;
        if ((st = mdnl_frame_system(ctx, input, &f, &sys)) != MDNL_OK)
            goto done;
        if (table && types_cap < f.natoms + 1) {
            free(types);
            types_cap = f.natoms + 1;
            if (!(types = mdnl_malloc((size_t)types_cap * sizeof *types, "pair types"))) {
                st = MDNL_ERR_RESOURCE;
                goto done;
            }
        }
        if (table && (st = mdnl_pair_table_types(&tab, input, &f, types)) != MDNL_OK)
            goto done;
        if (o.per_atom && per_cap < f.natoms + 1) {
            free(per_atom);
            per_cap = f.natoms + 1;
            if (!(per_atom = mdnl_malloc((size_t)per_cap * sizeof *per_atom, "per-atom energies"))) {
                st = MDNL_ERR_RESOURCE;
                goto done;
            }
        }
        double total = 0;
        if (table)
            st = mdnl_energy_types(ctx, &sys, tab.ntypes, params, cutoffs, types, &total, o.per_atom ? per_atom : NULL);
        else
            st = mdnl_energy(ctx, &sys, &params[0], cutoff, &total, o.per_atom ? per_atom : NULL);
        if (st != MDNL_OK)
            goto done;
        double t2 = mdnl_now();
        const double time = f.has_time ? f.time : (double)f.step; /* as the H5MD writers: dt = 1 */
        if (h5) {
            if ((st = mdnl_h5md_results_write_energy(res, f.step, time, total)) != MDNL_OK)
                goto done;
            if (o.per_atom &&
                (st = mdnl_h5md_results_write_per_atom_energy(res, f.step, time, f.natoms, per_atom)) != MDNL_OK)
                goto done;
        } else if (outpath) {
            if (o.per_atom)
                for (int64_t i = 0; i < f.natoms; ++i)
                    fprintf(out.fp, "%lld\t%lld\t%.15g\n", (long long)f.index, (long long)i, per_atom[i]);
            else
                fprintf(out.fp, "%lld\t%lld\t%.15g\n", (long long)f.index, (long long)f.step, total);
            if (ferror(out.fp)) {
                st = mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed", outpath);
                goto done;
            }
        }
        t_read += t1 - t0, t_energy += t2 - t1, t_write += mdnl_now() - t2;
        if (!nframes)
            e_first = total;
        e_last = total;
        e_sum += total;
        e_min = total < e_min ? total : e_min;
        e_max = total > e_max ? total : e_max;
        nframes++;
        mdnl_atoms_range_add(&atoms, f.natoms);
        mdnl_progress_step(&prog);
    }
    if (h5) {
        st = mdnl_h5md_results_commit(res); /* frees res */
        res = NULL;
    } else if (outpath) {
        st = mdnl_ofile_commit(&out);
    } else {
        st = MDNL_OK;
    }
    if (st != MDNL_OK)
        goto done;
    mdnl_progress_end(&prog);
    char desc[160];
    mdnl_potential_describe(&pot, desc, sizeof desc);
    if (table)
        snprintf(desc + strlen(desc), sizeof desc - strlen(desc), " + %d --pair-coeff", o.npair_coeff);
    if (o.json) {
        printf("{\"command\":\"energy\",\"input\":");
        mdnl_json_string(stdout, input);
        printf(",\"pair\":");
        mdnl_json_string(stdout, desc);
        printf(",\"cutoff\":%.15g,\"frames\":%lld", cutoff, (long long)nframes);
        mdnl_atoms_range_json(stdout, &atoms);
        printf(",\"backend\":\"%s\"", mdnl_backend_name(mdnl_backend_of(ctx)));
        if (outpath) {
            printf(",\"output\":");
            mdnl_json_string(stdout, outpath);
        }
        if (nframes)
            printf(",\"energy\":{\"first\":%.17g,\"last\":%.17g,\"mean\":%.17g,\"min\":%.17g,\"max\":%.17g}", e_first,
                   e_last, e_sum / nframes, e_min, e_max);
        printf(",\"seconds\":{\"read\":%.6f,\"energy\":%.6f,\"write\":%.6f}}\n", t_read, t_energy, t_write);
    } else if (!o.quiet) {
        mdnl_frames_note(fs);
        char na[64];
        fprintf(stderr, "mdnl energy: %lld frame(s) of %s, %s below %g, %s; ", (long long)nframes,
                mdnl_atoms_range_text(&atoms, na, sizeof na), desc, cutoff, mdnl_backend_name(mdnl_backend_of(ctx)));
        if (nframes)
            fprintf(stderr, "energy first %.10g, last %.10g, mean %.10g; ", e_first, e_last, e_sum / nframes);
        fprintf(stderr, "read %.3f s, energy %.3f s, write %.3f s", t_read, t_energy, t_write);
        if (strcmp(outpath, "-") != 0)
            fprintf(stderr, "; written to %s", outpath);
        fputc('\n', stderr);
    }
done:
    mdnl_progress_end(&prog);
    if (st != MDNL_OK) {
        mdnl_ofile_abort(&out);
        mdnl_h5md_results_abort(res);
    }
    mdnl_frames_close(fs);
    mdnl_frame_free(&f);
    free(per_atom);
    free(types);
    mdnl_context_free(ctx);
    return st;
}

/* cmd_run.c — `mdnl run`: every selected frame through neighbors (stored
 * only with --neighbors), energy (--pair) and the histogram (--rmax/--bins)
 * in one pass of the streaming pipeline (pipeline.h), into one HDF5 results
 * file or a directory of TSV tables in the formats of the single commands.
 * Every output is written under a temporary name and renamed only when the
 * whole run succeeded. Under mpirun the frames are split over the ranks and
 * rank 0 writes the one result (mpi_split.h). */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "h5md_reader.h"
#include "h5md_writer.h"
#include "mpi_split.h"
#include "output_file.h"
#include "pipeline.h"
#include "rdf_frames.h"
#include "rdf_table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OUT_ENERGY, OUT_NEIGHBORS, OUT_RDF, NOUT };
static const char *const out_names[NOUT] = {"energy.tsv", "neighbors.tsv", "rdf.tsv"};

typedef struct run_out {
    const char *path;
    bool h5, dir, made_dir;
    mdnl_h5md_results *res;
    bool want[NOUT];
    char *file[NOUT];  /* DIR/name, owned */
    mdnl_ofile tsv[NOUT];
    int threads; /* the writer's workers */
    const char *plot; /* --plot FILE.svg, or NULL */
    mdnl_ofile svg;
    bool per_frame;     /* --per-frame: every frame's g(r) and counts */
    mdnl_rdf_series pf; /* its writer (rdf_frames.h), shared with mdnl rdf */
} run_out;

static mdnl_status sink(void *user, const mdnl_frame_result *r)
{
    run_out *o = user;
    mdnl_status st;
    if (o->per_frame && r->counts &&
        (st = mdnl_rdf_series_add(&o->pf, o->h5 ? o->res : NULL, r->index, r->step, r->counts, r->na, r->nb,
                                  r->volume)) != MDNL_OK)
        return st;
    if (o->h5) {
        if (r->has_energy && (st = mdnl_h5md_results_write_energy(o->res, r->step, r->time, r->energy)) != MDNL_OK)
            return st;
        if (r->list && (st = mdnl_h5md_results_write_neighbors(o->res, r->index, r->list->natoms, r->list->offsets,
                                                               r->list->j, r->list->d, r->list->npairs)) != MDNL_OK)
            return st;
        if (r->list && (r->shifts || r->vectors) &&
            (st = mdnl_h5md_results_write_neighbor_shifts(o->res, r->list->npairs, r->shifts ? r->shifts[0] : NULL,
                                                          r->vectors ? r->vectors[0] : NULL)) != MDNL_OK)
            return st;
        return MDNL_OK;
    }
    if (r->has_energy) {
        FILE *fp = o->tsv[OUT_ENERGY].fp;
        fprintf(fp, "%lld\t%lld\t%.15g\n", (long long)r->index, (long long)r->step, r->energy);
        if (ferror(fp))
            return mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed", o->file[OUT_ENERGY]);
    }
    if (r->list && mdnl_neighbors_tsv_rows_with(o->tsv[OUT_NEIGHBORS].fp, r->index, r->list, r->shifts, r->vectors,
                                                o->threads) != MDNL_OK)
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed", o->file[OUT_NEIGHBORS]);
    return MDNL_OK;
}

static bool is_dir_path(const char *path)
{
    size_t n = strlen(path);
    struct stat sb;
    return (n > 0 && path[n - 1] == '/') || (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode));
}

/* Names the tables of a directory output and checks every output against
 * the input and what exists (output_file.h), before any work. */
static mdnl_status check_outputs(run_out *o, const char *input)
{
    if (o->h5) {
        const char *paths[2] = {o->path, o->plot};
        const mdnl_output_kind kinds[2] = {MDNL_OUTPUT_HDF5, MDNL_OUTPUT_TEXT};
        return mdnl_output_check(input, o->plot ? 2 : 1, paths, kinds);
    }
    const char *paths[2 + NOUT] = {o->path};
    mdnl_output_kind kinds[2 + NOUT] = {MDNL_OUTPUT_DIR, MDNL_OUTPUT_TEXT, MDNL_OUTPUT_TEXT, MDNL_OUTPUT_TEXT,
                                        MDNL_OUTPUT_TEXT};
    size_t n = strlen(o->path);
    bool slash = o->path[n - 1] == '/';
    for (int k = 0; k < NOUT; ++k) {
        if (!o->want[k])
            continue;
        if (!(o->file[k] = mdnl_malloc(n + 2 + strlen(out_names[k]), "output name")))
            return MDNL_ERR_RESOURCE;
        sprintf(o->file[k], "%s%s%s", o->path, slash ? "" : "/", out_names[k]);
        paths[1 + k] = o->file[k];
    }
    paths[1 + NOUT] = o->plot;
    return mdnl_output_check(input, o->plot ? 2 + NOUT : 1 + NOUT, paths, kinds);
}

/* Creates the temporary outputs. */
static mdnl_status open_outputs(run_out *o, mdnl_list_kind list, double cutoff, const char *nb_header)
{
    mdnl_status st;
    if (o->h5) {
        if ((st = mdnl_h5md_results_create(o->path, &o->res)) != MDNL_OK)
            return st;
        mdnl_h5md_results_set_threads(o->res, o->threads);
        if (o->want[OUT_NEIGHBORS])
            return mdnl_h5md_results_set_neighbors_info(o->res, list == MDNL_LIST_FULL ? "full" : "half", cutoff);
        return MDNL_OK;
    }
    struct stat sb;
    if (stat(o->path, &sb) != 0) {
        if (mkdir(o->path, 0777) != 0)
            return mdnl_error(MDNL_ERR_INPUT, "%s: cannot create the output directory: %s", o->path, strerror(errno));
        o->made_dir = true;
        mdnl_temp_dir_made(o->path); /* a signal removes it with the files in it */
    } else if (!S_ISDIR(sb.st_mode)) {
        return mdnl_error(MDNL_ERR_INPUT, "%s: expected a directory, found a file", o->path);
    }
    for (int k = 0; k < NOUT; ++k)
        if (o->want[k] && (st = mdnl_ofile_open(&o->tsv[k], o->file[k])) != MDNL_OK)
            return st;
    const char *headers[NOUT] = {"# frame\tstep\tenergy\n", nb_header, NULL};
    for (int k = 0; k < NOUT; ++k)
        if (o->want[k] && headers[k] && fputs(headers[k], o->tsv[k].fp) < 0)
            return mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed", o->file[k]);
    return MDNL_OK;
}

/* Renames every output into place, or none: all files are flushed first so
 * that a full disk fails before the first rename; a rename that still fails
 * takes back the ones already made. */
static mdnl_status commit_tables(run_out *o)
{
    if (o->h5) {
        mdnl_status st = mdnl_h5md_results_commit(o->res); /* frees res */
        o->res = NULL;
        return st;
    }
    for (int k = 0; k < NOUT; ++k)
        if (o->want[k] && (fflush(o->tsv[k].fp) != 0 || ferror(o->tsv[k].fp)))
            return mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed: %s", o->file[k], strerror(errno));
    for (int k = 0; k < NOUT; ++k) {
        if (!o->want[k])
            continue;
        mdnl_status st = mdnl_ofile_commit(&o->tsv[k]);
        if (st != MDNL_OK) {
            for (int m = 0; m < k; ++m)
                if (o->want[m])
                    unlink(o->file[m]);
            return st;
        }
    }
    if (o->made_dir)
        mdnl_temp_dir_forget(o->path);
    return MDNL_OK;
}

/* The results, then the plot (written in full before: only its rename is left). */
static mdnl_status commit_outputs(run_out *o)
{
    mdnl_status st = commit_tables(o);
    if (st == MDNL_OK && o->plot)
        st = mdnl_ofile_commit(&o->svg);
    return st;
}

static void abort_outputs(run_out *o)
{
    mdnl_h5md_results_abort(o->res);
    o->res = NULL;
    for (int k = 0; k < NOUT; ++k)
        mdnl_ofile_abort(&o->tsv[k]);
    mdnl_ofile_abort(&o->svg);
    if (o->made_dir) {
        rmdir(o->path);
        mdnl_temp_dir_forget(o->path);
    }
}

static void free_outputs(run_out *o)
{
    for (int k = 0; k < NOUT; ++k)
        free(o->file[k]);
    mdnl_rdf_series_free(&o->pf);
}

mdnl_status mdnl_cmd_run(int argc, char **argv)
{
    const double t_cmd = mdnl_now();
    mdnl_opts o;
    mdnl_status st = mdnl_mpi_begin();
    if (st != MDNL_OK)
        return st;
    st = mdnl_parse_options("run", mdnl_command_options("run"), argc, argv, 2, &o);
    if (st != MDNL_OK)
        return st;
    if (o.npositional != 1)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl run: expected one INPUT file, got %d", o.npositional);
    const bool hist = o.has_rmax || o.has_bins;
    if (o.read_only) {
        if (o.neighbors || o.pair || hist || o.output)
            return mdnl_error(MDNL_ERR_USAGE, "mdnl run: --read-only computes and writes nothing; drop "
                                              "--neighbors, --pair, --rmax/--bins and -o");
    } else {
        if (!o.neighbors && !o.pair && !hist)
            return mdnl_error(MDNL_ERR_USAGE, "mdnl run: nothing to do: give --neighbors, --pair SPEC and/or "
                                              "--rmax R --bins B");
        if (!o.output)
            return mdnl_error(MDNL_ERR_USAGE, "mdnl run: the output -o RESULTS.h5 or -o DIR/ is required");
    }
    if ((o.neighbors || o.pair) && !o.has_cutoff)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl run: the cutoff -c CUT is required with %s",
                          o.neighbors ? "--neighbors" : "--pair");
    if (hist && !(o.has_rmax && o.has_bins))
        return mdnl_error(MDNL_ERR_USAGE, "mdnl run: --rmax R and --bins B go together");
    if (o.bins > 1000000)
        return mdnl_error(MDNL_ERR_USAGE, "--bins: at most 1000000, got %lld", o.bins);
    if ((o.pairs || o.has_volume) && !hist)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl run: %s needs --rmax R --bins B", o.pairs ? "--pairs" : "--volume");
    if (o.has_list && !o.neighbors)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl run: --list needs --neighbors");
    if ((o.per_frame || o.plot) && !hist)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl run: %s needs --rmax R --bins B", o.plot ? "--plot" : "--per-frame");
    if ((o.with_shift || o.with_vector) && !o.neighbors)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl run: --with needs --neighbors");

    run_out out;
    memset(&out, 0, sizeof out);
    out.path = o.output;
    /* The writer runs while the next frames are computed: half the threads
     * (the other half is the prepare stage's team, pipeline.c). */
    out.threads = mdnl_threads(&o) >= 4 ? mdnl_threads(&o) / 2 : 1;
    if (o.output) {
        if (strcmp(o.output, "-") == 0)
            return mdnl_error(MDNL_ERR_USAGE, "mdnl run: -o -: expected RESULTS.h5 or DIR/ (several tables)");
        out.dir = is_dir_path(o.output);
        out.h5 = !out.dir && mdnl_is_hdf5_path(o.output);
        if (!out.dir && !out.h5)
            return mdnl_error(MDNL_ERR_USAGE,
                              "mdnl run: -o %s: expected RESULTS.h5 (.h5/.h5md/.hdf5) or a directory DIR/", o.output);
        if (o.per_frame && !out.h5 && !o.plot)
            return mdnl_error(MDNL_ERR_USAGE, "--per-frame: needs -o RESULTS.h5 (per-frame datasets) or --plot "
                                              "FILE.svg (a heat map); rdf.tsv holds the mean only");
    }
    if (o.plot && (st = mdnl_rdf_plot_check(o.plot)) != MDNL_OK)
        return st;
    out.plot = o.plot;
    out.per_frame = o.per_frame;
    out.want[OUT_ENERGY] = o.pair != NULL;
    out.want[OUT_NEIGHBORS] = o.neighbors;
    out.want[OUT_RDF] = hist;

    mdnl_pair_names pn;
    memset(&pn, 0, sizeof pn);
    if (o.pairs && (st = mdnl_pair_names_parse(o.pairs, &pn)) != MDNL_OK)
        return st;
    mdnl_pipeline_config cfg = {
        .opts = &o,
        .input = o.positional[0],
        .read_only = o.read_only,
        .neighbors = o.neighbors,
        .list = o.has_list ? o.list : MDNL_LIST_HALF,
        .shifts = o.with_shift,
        .vectors = o.with_vector,
        .cutoff = o.cutoff,
        .energy = o.pair != NULL,
        .hist = hist,
        .rmax = o.rmax,
        .bins = (int32_t)o.bins,
        .pairs = &pn,
        .nslots = 4,
    };
    /* --pair and --pair-coeff as mdnl energy takes them: one pair type runs
     * the deferred single-potential path, more the per-pair table */
    mdnl_pair_table tab;
    if (o.npair_coeff && !o.pair)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl run: --pair-coeff needs --pair SPEC");
    if (o.pair) {
        if ((st = mdnl_pair_table_parse(o.pair, o.pair_coeff, o.npair_coeff, o.cutoff, &tab)) != MDNL_OK)
            return st;
        cfg.pot = tab.p[0];
        cfg.table = tab.ntypes > 1 ? &tab : NULL;
        if (tab.max_cutoff != o.cutoff) {
            if (o.neighbors)
                return mdnl_error(MDNL_ERR_USAGE,
                                  "mdnl run: --neighbors at -c %g with pair cutoffs up to %g: the list and the "
                                  "energy share one cutoff here (give cut= only to pairs below -c)",
                                  o.cutoff, tab.max_cutoff);
            cfg.cutoff = tab.max_cutoff;
        }
    }
    if (o.output && (st = check_outputs(&out, cfg.input)) != MDNL_OK) {
        free_outputs(&out);
        return st;
    }
    int32_t ids[MDNL_MAX_RDF_PAIRS][2] = {{0}}; /* resolved per frame in the pipeline */
    mdnl_hist_spec spec = {.r_max = o.rmax, .bins = (int32_t)o.bins, .npairs = pn.n, .pairs = ids};
    mdnl_rdf_accum acc;
    memset(&acc, 0, sizeof acc);
    mdnl_frames *fs = NULL;
    mdnl_progress prog;
    memset(&prog, 0, sizeof prog);
    mdnl_pipeline_stats stats;
    memset(&stats, 0, sizeof stats);

    /* The CUDA start-up (~0.2-0.3 s) runs on a thread of its own while the
     * input and outputs are opened; the pipeline joins it. */
    mdnl_context_starter starter;
    memset(&starter, 0, sizeof starter);
    mdnl_mpi_choose_device(&o);
    if (!o.read_only) {
        mdnl_context_start_begin(&starter, &o);
        cfg.starter = &starter;
    }
    double t_open = mdnl_now();
    if (hist && (st = mdnl_rdf_accum_init(&acc, &spec, o.has_volume ? o.volume : 0)) != MDNL_OK)
        goto done;
    if (o.per_frame && mdnl_mpi_root() &&
        (st = mdnl_rdf_series_init(&out.pf, &spec, o.has_volume ? o.volume : 0, &pn, o.plot != NULL)) != MDNL_OK)
        goto done;
    /* every frame of a run with work is wrapped by mdnl_geom_prepare (CPU) or
     * the device wrap (CUDA), which reject a non-finite coordinate naming the
     * input, the frame and the atom: the H5MD reader's own pass is skipped
     * (docs/performance.md, the CPU table's H5MD reader row: the pass took
     * as long as the read). --read-only keeps it: there it is the check that
     * the file parses. */
    o.coords_checked = !o.read_only;
    o.feeds_gpu = !o.read_only && o.backend != MDNL_BACKEND_CPU && mdnl_cuda_built();
    if ((st = mdnl_frames_open(&o, cfg.input, &fs)) != MDNL_OK)
        goto done;
    const char *nb_header = mdnl_neighbors_tsv_header(cfg.shifts, cfg.vectors);
    if (o.output && mdnl_mpi_root() && (st = open_outputs(&out, cfg.list, o.cutoff, nb_header)) != MDNL_OK)
        goto done;
    /* HDF5 on both sides with a library built without thread safety: one
     * lock keeps the reader's and the writer's HDF5 calls apart. A
     * thread-safe HDF5 (Debian's) serializes each call itself, so the writer
     * never waits for a whole frame read just to buffer an energy. */
    cfg.serialize_io = out.h5 && strcmp(mdnl_reader_format(mdnl_frames_reader(fs)), "h5md") == 0 &&
                       !mdnl_hdf5_threadsafe();
    if (mdnl_mpi_root())
        mdnl_progress_start(&prog, &o, fs); /* before the split: counts every rank's frames */
    if ((st = mdnl_mpi_split(st, fs)) != MDNL_OK)
        goto done;
    t_open = mdnl_now() - t_open;
    {
        mdnl_pipeline_sink psink = o.output ? sink : NULL;
        void *puser = &out;
        mdnl_rdf_accum *pacc = hist ? &acc : NULL;
        mdnl_mpi_wrap(&cfg, &psink, &puser, &pacc, &prog);
        st = mdnl_pipeline_run(&cfg, fs, &prog, psink, puser, pacc, &stats);
        /* every rank, failed or not: the outcome is agreed, rank 0 merges the others' frames */
        if ((st = mdnl_mpi_gather(st, &stats)) != MDNL_OK || !mdnl_mpi_root())
            goto done;
    }
    mdnl_progress_end(&prog);
    if (hist) {
        double t0 = mdnl_now();
        if (out.h5)
            st = mdnl_rdf_write_h5(out.res, &acc, &pn);
        else
            st = mdnl_rdf_table_write(out.tsv[OUT_RDF].fp, &acc, pn.n ? pn.labels : NULL);
        if (st == MDNL_OK && o.plot && (st = mdnl_ofile_open(&out.svg, o.plot)) == MDNL_OK)
            st = mdnl_rdf_plot_write(out.svg.fp, &acc, o.per_frame ? &out.pf : NULL, pn.n ? pn.labels : NULL,
                                     cfg.input);
        if (st != MDNL_OK)
            goto done;
        stats.t_write += mdnl_now() - t0;
    }
    if (o.output) {
        double t0 = mdnl_now();
        if ((st = commit_outputs(&out)) != MDNL_OK)
            goto done;
        stats.t_write += mdnl_now() - t0;
    }
    {
        double wall = stats.t_wall > 0 ? stats.t_wall : 1e-9;
        double fps = (double)stats.nframes / wall;
        if (o.json) {
            printf("{\"command\":\"run\",\"input\":");
            mdnl_json_string(stdout, cfg.input);
            printf(",\"format\":\"%s\",\"backend\":\"%s\",\"read_only\":%s,\"frames\":%lld",
                   mdnl_reader_format(mdnl_frames_reader(fs)), o.read_only ? "none" : mdnl_backend_name(stats.backend),
                   o.read_only ? "true" : "false", (long long)stats.nframes);
            mdnl_atoms_range_json(stdout, &stats.atoms);
            if (o.output) {
                printf(",\"output\":");
                mdnl_json_string(stdout, o.output);
            }
            if (o.neighbors)
                printf(",\"pairs\":%lld,\"list\":\"%s\",\"cutoff\":%.15g", (long long)stats.pairs,
                       cfg.list == MDNL_LIST_FULL ? "full" : "half", o.cutoff);
            if (hist)
                printf(",\"rmax\":%.15g,\"bins\":%lld,\"pairs_counted\":%llu,\"per_frame\":%s", o.rmax, o.bins,
                       (unsigned long long)stats.pairs_counted, o.per_frame ? "true" : "false");
            if (o.plot) {
                printf(",\"plot\":");
                mdnl_json_string(stdout, o.plot);
            }
            if (o.pair && stats.nframes)
                printf(",\"energy\":{\"first\":%.17g,\"last\":%.17g,\"mean\":%.17g,\"min\":%.17g,\"max\":%.17g}",
                       stats.e_first, stats.e_last, stats.e_sum / (double)stats.nframes, stats.e_min, stats.e_max);
            const double steady = stats.t_wall - stats.t_init;
            /* init: the start-up left to wait for inside wall; startup: all of it (begun before the
             * input was opened: open); command: the whole command, parsing to the last commit */
            mdnl_mpi_json(stdout, stats.nframes);
            printf(",\"seconds\":{\"init\":%.6f,\"startup\":%.6f,\"open\":%.6f,\"read\":%.6f,\"prepare\":%.6f,"
                   "\"compute\":%.6f,\"collect\":%.6f,\"compute_starved\":%.6f,\"read_blocked\":%.6f,"
                   "\"read_during_startup\":%.6f,\"write\":%.6f,"
                   "\"wall\":%.6f,\"command\":%.6f,\"first_frame_done\":%.6f,"
                   "\"last_frame_done\":%.6f},\"frames_per_second\":%.3f,"
                   "\"frames_per_second_after_init\":%.3f,\"frames_per_second_steady\":%.3f}\n",
                   stats.t_init, o.read_only ? 0.0 : stats.t_startup, t_open, stats.t_read, stats.t_prepare,
                   stats.t_compute, stats.t_collect, stats.t_starved, stats.t_read_blocked, stats.t_read_startup,
                   stats.t_write, stats.t_wall, mdnl_now() - t_cmd, stats.t_first_done, stats.t_last_done, fps,
                   steady > 0 ? (double)stats.nframes / steady : 0.0,
                   stats.nframes > 1 && stats.t_last_done > stats.t_first_done
                       ? (double)(stats.nframes - 1) / (stats.t_last_done - stats.t_first_done)
                       : 0.0);
        } else if (!o.quiet) {
            mdnl_frames_note(fs);
            char atoms[64];
            fprintf(stderr, "mdnl run: %lld frame(s) of %s, %s", (long long)stats.nframes,
                    mdnl_atoms_range_text(&stats.atoms, atoms, sizeof atoms),
                    o.read_only ? "read only" : mdnl_backend_name(stats.backend));
            if (o.neighbors)
                fprintf(stderr, "; %lld pairs below %g", (long long)stats.pairs, o.cutoff);
            if (o.pair && stats.nframes)
                fprintf(stderr, "; energy first %.10g, last %.10g, mean %.10g", stats.e_first, stats.e_last,
                        stats.e_sum / (double)stats.nframes);
            if (hist)
                fprintf(stderr, "; %llu distances below %g", (unsigned long long)stats.pairs_counted, o.rmax);
            fprintf(stderr,
                    "; busy read %.3f s, prepare %.3f s, compute %.3f s, write %.3f s; wall %.3f s, %.1f frames/s",
                    stats.t_read, stats.t_prepare, stats.t_compute, stats.t_write, stats.t_wall, fps);
            if (o.output)
                fprintf(stderr, "; written to %s", o.output);
            if (o.plot)
                fprintf(stderr, "; plot %s", o.plot);
            fputc('\n', stderr);
        }
    }
done:
    mdnl_progress_end(&prog);
    if (st != MDNL_OK)
        abort_outputs(&out);
    free_outputs(&out);
    /* The input first: a reader pool may still hold frames in the context's pinned memory. */
    mdnl_frames_close(fs);
    mdnl_context_start_end(&starter); /* also joins a start-up thread a failure before the pipeline left running */
    mdnl_rdf_accum_free(&acc);
    return st;
}

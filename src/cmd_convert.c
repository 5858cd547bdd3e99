/* cmd_convert.c — `mdnl convert`: any input mdnl reads to XYZ, extended XYZ,
 * H5MD, XTC, DCD or a LAMMPS dump, frame by frame (memory bounded by one
 * frame). The output format is --to, else OUTPUT's extension (the `writers`
 * table); an extension that names no format mdnl writes is a usage error
 * listing them, never a silent fallback. */
#include "cli.h"
#include "dcd_writer.h"
#include "h5md_writer.h"
#include "lammps_dump_writer.h"
#include "output_file.h"
#include "xtc_writer.h"
#include "xyz_reader.h"
#include "xyz_writer.h"

#include <string.h>
#include <strings.h>

enum format { XYZ, EXTXYZ, H5MD, XTC, DCD, LAMMPS_DUMP };

/* One row per output format: --to name, extensions (space-separated), label,
 * whether it is text (may go to standard output). */
static const struct writer {
    enum format id;
    const char *name, *exts, *label;
    bool text;
} writers[] = {
    {XYZ, "xyz", ".xyz", "XYZ", true},
    {EXTXYZ, "extxyz", ".extxyz", "extended XYZ", true},
    {H5MD, "h5md", ".h5 .h5md .hdf5", "H5MD", false},
    {XTC, "xtc", ".xtc", "XTC", false},
    {DCD, "dcd", ".dcd", "DCD", false},
    {LAMMPS_DUMP, "lammps-dump", ".lammpstrj .lammpsdump .dump", "LAMMPS dump", true},
};
#define NWRITERS (sizeof writers / sizeof *writers)

/* "xyz (.xyz), extxyz (.extxyz), h5md (.h5, .h5md, .hdf5), ...", from the table. */
static const char *written(void)
{
    static _Thread_local char list[512];
    size_t k = 0;
    for (size_t i = 0; i < NWRITERS && k < sizeof list; ++i) {
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s (", i ? ", " : "", writers[i].name);
        for (const char *e = writers[i].exts; *e && k < sizeof list;) {
            const size_t n = strcspn(e, " ");
            k += (size_t)snprintf(list + k, sizeof list - k, "%s%.*s", e == writers[i].exts ? "" : ", ", (int)n, e);
            e += n + (e[n] == ' ');
        }
        if (k < sizeof list)
            k += (size_t)snprintf(list + k, sizeof list - k, ")");
    }
    return list;
}

/* --to, else OUTPUT's extension; "-" without --to is extended XYZ. */
static mdnl_status writer_of(const char *to, const char *output, const struct writer **out)
{
    if (to) {
        for (size_t k = 0; k < NWRITERS; ++k)
            if (strcmp(to, writers[k].name) == 0) {
                *out = &writers[k];
                return MDNL_OK;
            }
        return mdnl_error(MDNL_ERR_USAGE, "--to: expected one of the formats mdnl writes: %s, got \"%s\"", written(),
                          to);
    }
    if (strcmp(output, "-") == 0) {
        *out = &writers[EXTXYZ];
        return MDNL_OK;
    }
    const char *slash = strrchr(output, '/'), *dot = strrchr(output, '.');
    const size_t len = dot && (!slash || dot > slash) ? strlen(dot) : 0;
    for (size_t k = 0; len && k < NWRITERS; ++k)
        for (const char *e = writers[k].exts; *e;) {
            const size_t n = strcspn(e, " ");
            if (n == len && strncasecmp(e, dot, n) == 0) {
                *out = &writers[k];
                return MDNL_OK;
            }
            e += n + (e[n] == ' ');
        }
    return mdnl_error(MDNL_ERR_USAGE,
                      "mdnl convert: OUTPUT \"%s\" has no extension of a format mdnl writes: %s (or give --to)",
                      output, written());
}

mdnl_status mdnl_cmd_convert(int argc, char **argv)
{
    mdnl_opts o;
    mdnl_status st = mdnl_parse_options("convert", mdnl_command_options("convert"), argc, argv, 2, &o);
    if (st != MDNL_OK)
        return st;
    if (o.npositional != 2)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl convert: expected INPUT and OUTPUT, got %d file(s)", o.npositional);
    const char *input = o.positional[0], *output = o.positional[1];
    const struct writer *wr = NULL;
    if ((st = writer_of(o.to, output, &wr)) != MDNL_OK)
        return st;
    const enum format to = wr->id;
    if (!wr->text && strcmp(output, "-") == 0)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl convert: %s cannot be written to standard output", wr->label);
    const mdnl_output_kind kind = wr->text ? MDNL_OUTPUT_TEXT : MDNL_OUTPUT_HDF5;
    if ((st = mdnl_output_check(input, 1, &output, &kind)) != MDNL_OK)
        return st;

    /* mdnl knows no units: the labels are the XYZ convention's (h5md_writer.h) */
    const mdnl_h5md_traj_options h5md_units = {.length_unit = MDNL_H5MD_LENGTH_UNIT, .time_unit = MDNL_H5MD_TIME_UNIT};
    mdnl_frames *fs = NULL;
    mdnl_frame f = {0};
    mdnl_ofile out = {0};
    mdnl_h5md_traj *traj = NULL;
    mdnl_dcd_writer dcd = {0};
    int64_t nframes = 0;
    mdnl_atoms_range atoms = {0};
    mdnl_progress prog = {0};
    o.keep_extras = true; /* what the input holds beyond frames: kept in extended XYZ, else a warning */
    bool warned = false;
    if ((st = mdnl_frames_open(&o, input, &fs)) != MDNL_OK)
        goto done;
    if (to == H5MD)
        st = mdnl_h5md_traj_create(output, &h5md_units, &traj);
    else
        st = mdnl_ofile_open(&out, output);
    if (st != MDNL_OK)
        goto done;
    dcd.fp = out.fp;
    mdnl_progress_start(&prog, &o, fs);
    while ((st = mdnl_frames_next(fs, &f)) == MDNL_OK) {
        const mdnl_xyz_extras *ex = mdnl_reader_extras(mdnl_frames_reader(fs));
        if (ex && to != EXTXYZ && !warned && !o.json) {
            warned = true;
            fprintf(stderr, "mdnl convert: warning: %s cannot hold the input's%s%s%s%s; dropped\n", wr->label,
                    ex->properties[0] ? " per-atom arrays " : "", ex->properties, ex->info[0] ? " and keys " : "",
                    ex->info);
        }
        switch (to) {
        case H5MD:
            st = mdnl_h5md_traj_append(traj, &f);
            break;
        case XTC:
            st = mdnl_xtc_write(out.fp, &f, o.units_native, 1000.0f);
            break;
        case DCD:
            st = mdnl_dcd_write(&dcd, &f);
            break;
        case LAMMPS_DUMP:
            st = mdnl_lammps_dump_write(out.fp, &f);
            break;
        case EXTXYZ:
            st = mdnl_xyz_write_extras(out.fp, &f, ex);
            break;
        default:
            st = mdnl_xyz_write(out.fp, &f, 0);
        }
        if (st != MDNL_OK) {
            if (st == MDNL_ERR_INPUT) {
                char msg[1024];
                snprintf(msg, sizeof msg, "%s", mdnl_last_error());
                st = mdnl_error(st, "%s: %s", output, msg);
            }
            goto done;
        }
        nframes++;
        mdnl_atoms_range_add(&atoms, f.natoms);
        mdnl_progress_step(&prog);
    }
    if (st != MDNL_END)
        goto done;
    if (to == DCD && (st = mdnl_dcd_finish(&dcd)) != MDNL_OK)
        goto done;
    if (to == H5MD) {
        st = mdnl_h5md_traj_commit(traj); /* frees traj */
        traj = NULL;
    } else {
        st = mdnl_ofile_commit(&out);
    }
    if (st != MDNL_OK)
        goto done;
    mdnl_progress_end(&prog);
    char na[64];
    if (o.json) {
        printf("{\"command\":\"convert\",\"input\":");
        mdnl_json_string(stdout, input);
        printf(",\"output\":");
        mdnl_json_string(stdout, output);
        printf(",\"frames\":%lld", (long long)nframes);
        mdnl_atoms_range_json(stdout, &atoms);
        printf(",\"to\":\"%s\"}\n", wr->name);
    } else if (!o.quiet) {
        mdnl_frames_note(fs);
    }
    if (!o.json && !o.quiet && strcmp(output, "-") != 0) {
        fprintf(stderr, "mdnl convert: %lld frame(s) of %s from %s to %s (%s)\n", (long long)nframes,
                mdnl_atoms_range_text(&atoms, na, sizeof na), input, output, wr->label);
    }
done:
    mdnl_progress_end(&prog);
    mdnl_dcd_writer_free(&dcd);
    if (st != MDNL_OK) {
        mdnl_h5md_traj_abort(traj);
        mdnl_ofile_abort(&out);
    }
    mdnl_frames_close(fs);
    mdnl_frame_free(&f);
    return st;
}

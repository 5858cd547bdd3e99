/* cmd_convert.c — `mdnl convert`: any format mdnl reads into XYZ, extended
 * XYZ, H5MD or a LAMMPS dump, frame by frame (memory bounded by one frame).
 * The output format is --to, else the output's extension; an extension that
 * names no format mdnl writes is a usage error, never a silent fallback. */
#include "cli.h"
#include "h5md_writer.h"
#include "lammps_dump_writer.h"
#include "output_file.h"
#include "xyz_reader.h"
#include "xyz_writer.h"

#include <string.h>
#include <strings.h>

enum out_format { XYZ, EXTXYZ, H5MD, LAMMPS_DUMP };

static const struct {
    const char *name, *extensions, *label;
} outputs[] = {
    [XYZ] = {"xyz", ".xyz", "XYZ"},
    [EXTXYZ] = {"extxyz", ".extxyz", "extended XYZ"},
    [H5MD] = {"h5md", ".h5 .h5md .hdf5", "H5MD"},
    [LAMMPS_DUMP] = {"lammps-dump", ".lammpstrj .lammpsdump .dump", "LAMMPS dump"},
};
#define WRITTEN "xyz (.xyz), extxyz (.extxyz), h5md (.h5, .h5md, .hdf5), lammps-dump (.lammpstrj, .lammpsdump, .dump)"

static mdnl_status output_format(const char *to, const char *output, enum out_format *out)
{
    const size_t n = sizeof outputs / sizeof *outputs;
    if (to) {
        for (size_t k = 0; k < n; ++k)
            if (strcmp(to, outputs[k].name) == 0) {
                *out = (enum out_format)k;
                return MDNL_OK;
            }
        return mdnl_error(MDNL_ERR_USAGE, "--to: expected one of the formats mdnl writes: " WRITTEN ", got \"%s\"",
                          to);
    }
    if (strcmp(output, "-") == 0) {
        *out = EXTXYZ;
        return MDNL_OK;
    }
    const char *slash = strrchr(output, '/'), *dot = strrchr(output, '.');
    if (dot && (!slash || dot > slash)) {
        const size_t len = strlen(dot);
        for (size_t k = 0; k < n; ++k)
            for (const char *p = outputs[k].extensions; *p;) {
                const char *sp = strchr(p, ' ');
                const size_t l = sp ? (size_t)(sp - p) : strlen(p);
                if (l == len && strncasecmp(p, dot, len) == 0) {
                    *out = (enum out_format)k;
                    return MDNL_OK;
                }
                p += l + (sp ? 1 : 0);
            }
    }
    return mdnl_error(MDNL_ERR_USAGE,
                      "mdnl convert: OUTPUT \"%s\" has no extension of a format mdnl writes: " WRITTEN
                      " (or give --to)",
                      output);
}

mdnl_status mdnl_cmd_convert(int argc, char **argv)
{
    mdnl_opts o;
    mdnl_status st = mdnl_parse_options("convert", "to,frames,box,no-pbc,group,quiet,json,progress,no-progress", argc,
                                        argv, 2, &o);
    if (st != MDNL_OK)
        return st;
    if (o.npositional != 2)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl convert: expected INPUT and OUTPUT, got %d file(s)", o.npositional);
    const char *input = o.positional[0], *output = o.positional[1];
    enum out_format to = EXTXYZ;
    if ((st = output_format(o.to, output, &to)) != MDNL_OK)
        return st;
    if (to == H5MD && strcmp(output, "-") == 0)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl convert: H5MD cannot be written to standard output");
    if (strcmp(input, output) == 0)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl convert: INPUT and OUTPUT are the same file");

    mdnl_frames *fs = NULL;
    mdnl_frame f = {0};
    mdnl_ofile out = {0};
    mdnl_h5md_traj *traj = NULL;
    int64_t nframes = 0, natoms = 0;
    mdnl_progress prog = {0};
    o.keep_extras = true; /* what the input holds beyond frames: kept in extended XYZ, else a warning */
    bool warned = false;
    if ((st = mdnl_frames_open(&o, input, &fs)) != MDNL_OK)
        goto done;
    if (to == H5MD)
        st = mdnl_h5md_traj_create(output, NULL, &traj);
    else
        st = mdnl_ofile_open(&out, output);
    if (st != MDNL_OK)
        goto done;
    mdnl_progress_start(&prog, &o, fs);
    while ((st = mdnl_frames_next(fs, &f)) == MDNL_OK) {
        const mdnl_xyz_extras *ex = mdnl_reader_extras(mdnl_frames_reader(fs));
        if (ex && to != EXTXYZ && !warned && !o.json) {
            warned = true;
            fprintf(stderr, "mdnl convert: warning: %s cannot hold the input's%s%s%s%s; dropped\n", outputs[to].label,
                    ex->properties[0] ? " per-atom arrays " : "", ex->properties, ex->info[0] ? " and keys " : "",
                    ex->info);
        }
        if (to == H5MD)
            st = mdnl_h5md_traj_append(traj, &f);
        else if (to == LAMMPS_DUMP)
            st = mdnl_lammps_dump_write(out.fp, &f);
        else if (to == EXTXYZ)
            st = mdnl_xyz_write_extras(out.fp, &f, ex);
        else
            st = mdnl_xyz_write(out.fp, &f, 0);
        if (st != MDNL_OK)
            goto done;
        nframes++;
        natoms = f.natoms;
        mdnl_progress_step(&prog);
    }
    if (st != MDNL_END)
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
    if (o.json)
        printf("{\"command\":\"convert\",\"frames\":%lld,\"atoms\":%lld,\"to\":\"%s\"}\n", (long long)nframes,
               (long long)natoms, outputs[to].name);
    else if (!o.quiet && strcmp(output, "-") != 0)
        fprintf(stderr, "mdnl convert: %lld frame(s) of %lld atoms from %s to %s (%s)\n", (long long)nframes,
                (long long)natoms, input, output, outputs[to].label);
done:
    mdnl_progress_end(&prog);
    if (st != MDNL_OK) {
        mdnl_h5md_traj_abort(traj);
        mdnl_ofile_abort(&out);
    }
    mdnl_frames_close(fs);
    mdnl_frame_free(&f);
    return st;
}

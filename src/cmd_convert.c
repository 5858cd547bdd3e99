/* cmd_convert.c — `mdnl convert`: XYZ / extended XYZ / H5MD in any
 * direction, frame by frame (memory bounded by one frame). */
#include "cli.h"
#include "h5md_writer.h"
#include "output_file.h"
#include "xyz_writer.h"

#include <string.h>

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
    enum { XYZ, EXTXYZ, H5MD } to = EXTXYZ;
    if (o.to) {
        if (strcmp(o.to, "xyz") == 0)
            to = XYZ;
        else if (strcmp(o.to, "extxyz") == 0)
            to = EXTXYZ;
        else if (strcmp(o.to, "h5md") == 0)
            to = H5MD;
        else
            return mdnl_error(MDNL_ERR_USAGE, "--to: expected xyz, extxyz or h5md, got \"%s\"", o.to);
    } else if (mdnl_is_hdf5_path(output)) {
        to = H5MD;
    } else {
        const char *dot = strrchr(output, '.');
        to = dot && strcmp(dot, ".xyz") == 0 ? XYZ : EXTXYZ;
    }
    if (to == H5MD && strcmp(output, "-") == 0)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl convert: H5MD cannot be written to standard output");
    const mdnl_output_kind kind = to == H5MD ? MDNL_OUTPUT_HDF5 : MDNL_OUTPUT_TEXT;
    if ((st = mdnl_output_check(input, 1, &output, &kind)) != MDNL_OK)
        return st;

    mdnl_frames *fs = NULL;
    mdnl_frame f = {0};
    mdnl_ofile out = {0};
    mdnl_h5md_traj *traj = NULL;
    int64_t nframes = 0, natoms = 0;
    mdnl_progress prog = {0};
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
        if (to == H5MD)
            st = mdnl_h5md_traj_append(traj, &f);
        else
            st = mdnl_xyz_write(out.fp, &f, to == EXTXYZ);
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
               (long long)natoms, to == H5MD ? "h5md" : to == XYZ ? "xyz" : "extxyz");
    else if (!o.quiet && strcmp(output, "-") != 0)
        fprintf(stderr, "mdnl convert: %lld frame(s) of %lld atoms from %s to %s (%s)\n", (long long)nframes,
                (long long)natoms, input, output, to == H5MD ? "H5MD" : to == XYZ ? "XYZ" : "extended XYZ");
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

/* cmd_info.c — `mdnl info`: what a trajectory holds (format, atoms, frames,
 * species, box, periodicity of its first frame, and what the format says
 * beyond frames: units, LAMMPS masses). It reads the input once (the first
 * frame, then skips to the end to count), so it works on a pipe. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

mdnl_status mdnl_cmd_info(int argc, char **argv)
{
    mdnl_opts o;
    mdnl_status st = mdnl_parse_options("info", mdnl_command_options("info"), argc, argv, 2, &o);
    if (st != MDNL_OK)
        return st;
    if (o.npositional != 1)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl info: expected one INPUT file, got %d", o.npositional);
    const char *input = o.positional[0];
    mdnl_frames *fs = NULL;
    mdnl_frame f = {0};
    int64_t nframes = 0;
    int64_t *counts = NULL;
    if ((st = mdnl_frames_open(&o, input, &fs)) != MDNL_OK)
        goto done;
    st = mdnl_frames_next(fs, &f);
    bool empty = st == MDNL_END;
    if (st != MDNL_OK && !empty)
        goto done;
    if (!empty) {
        if ((st = mdnl_frames_skip_rest(fs, &nframes)) != MDNL_OK)
            goto done;
        nframes++;
    }
    st = MDNL_OK;
    if (!(counts = mdnl_calloc((size_t)f.nspecies + 1, sizeof *counts, "species counts"))) {
        st = MDNL_ERR_RESOURCE;
        goto done;
    }
    for (int64_t i = 0; i < f.natoms; ++i)
        counts[f.species[i]]++;
    const mdnl_reader *reader = mdnl_frames_reader(fs);
    const char *format = mdnl_reader_format(reader);
    const char *units = mdnl_reader_info(reader, "units"), *masses = mdnl_reader_info(reader, "masses");
    if (!units)
        units = "angstrom";
    /* Where the species names come from: the file, --topology, or nowhere (XTC, TRR, DCD). */
    const char *species_from = o.topology                                                          ? "topology"
                               : !strcmp(format, "xtc") || !strcmp(format, "trr") || !strcmp(format, "dcd") ? "none"
                                                                                                           : "file";
    if (o.json) {
        printf("{\"file\":");
        mdnl_json_string(stdout, input);
        printf(",\"format\":\"%s\",\"natoms\":%lld,\"nframes\":%lld,\"species\":{", format, (long long)f.natoms,
               (long long)nframes);
        for (int32_t s = 0; s < f.nspecies; ++s) {
            printf(s ? "," : "");
            mdnl_json_string(stdout, f.symbols[s]);
            printf(":%lld", (long long)counts[s]);
        }
        printf("},\"box\":");
        if (f.box.has_lattice)
            printf("[[%.17g,%.17g,%.17g],[%.17g,%.17g,%.17g],[%.17g,%.17g,%.17g]]", f.box.h[0][0], f.box.h[0][1],
                   f.box.h[0][2], f.box.h[1][0], f.box.h[1][1], f.box.h[1][2], f.box.h[2][0], f.box.h[2][1],
                   f.box.h[2][2]);
        else
            printf("null");
        printf(",\"pbc\":[%s,%s,%s],\"volume\":", f.box.pbc[0] ? "true" : "false", f.box.pbc[1] ? "true" : "false",
               f.box.pbc[2] ? "true" : "false");
        if (f.box.has_lattice)
            printf("%.17g", mdnl_box_volume(&f.box));
        else
            printf("null");
        printf(",\"step\":%lld,\"units\":", (long long)f.step);
        mdnl_json_string(stdout, units);
        printf(",\"species_from\":\"%s\"", species_from);
        if (masses) {
            printf(",\"masses\":");
            mdnl_json_string(stdout, masses);
        }
        if (f.has_time)
            printf(",\"time\":%.17g", f.time);
        printf("}\n");
    } else {
        printf("file     ");
        mdnl_text_string(stdout, input);
        printf(" (%s)\n", format);
        printf("frames   %lld\n", (long long)nframes);
        printf("atoms    %lld%s\n", (long long)f.natoms, nframes > 1 ? " (first frame)" : "");
        printf("units    %s (positions and cell)\n", units);
        printf("species ");
        for (int32_t s = 0; s < f.nspecies; ++s) {
            putchar(' ');
            mdnl_text_string(stdout, f.symbols[s]);
            printf(" %lld", (long long)counts[s]);
        }
        printf("%s%s\n", f.nspecies ? "" : " none",
               o.topology ? " (from --topology)" : strcmp(species_from, "none") == 0 ? " (the file names none: --topology FILE)" : "");
        if (f.box.has_lattice) {
            printf("pbc      %c %c %c\n", f.box.pbc[0] ? 'T' : 'F', f.box.pbc[1] ? 'T' : 'F', f.box.pbc[2] ? 'T' : 'F');
            for (int r = 0; r < 3; ++r)
                printf("%s %12.6f %12.6f %12.6f\n", r == 0 ? "cell a  " : r == 1 ? "cell b  " : "cell c  ",
                       f.box.h[r][0], f.box.h[r][1], f.box.h[r][2]);
            printf("volume   %.6f\n", mdnl_box_volume(&f.box));
        } else {
            printf("box      none (open boundaries)\n");
        }
        if (masses)
            printf("masses   %s\n", masses);
    }
    if (fflush(stdout) != 0)
        st = mdnl_error(MDNL_ERR_RESOURCE, "standard output: write failed");
done:
    free(counts);
    mdnl_frames_close(fs);
    mdnl_frame_free(&f);
    return st;
}

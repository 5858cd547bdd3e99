/* cmd_gen.c — `mdnl gen graphene`: periodic rectangular graphene sheets as
 * (extended) XYZ, the fixtures' generator (src/gen_graphene.c builds them). */
#include "cli.h"
#include "gen_graphene.h"
#include "output_file.h"
#include "xyz_writer.h"

#include <string.h>

mdnl_status mdnl_cmd_gen(int argc, char **argv)
{
    if (argc < 3 || strcmp(argv[2], "graphene") != 0) {
        if (argc >= 3 && (strcmp(argv[2], "-h") == 0 || strcmp(argv[2], "--help") == 0))
            return MDNL_END;
        return mdnl_error(MDNL_ERR_USAGE, "mdnl gen: expected a structure name (graphene), got \"%s\"",
                          argc >= 3 ? argv[2] : "");
    }
    mdnl_opts o;
    mdnl_status st = mdnl_parse_options("gen", mdnl_command_options("gen"), argc, argv, 3, &o);
    if (st != MDNL_OK)
        return st;
    if (o.npositional)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl gen graphene: unexpected argument \"%s\"", o.positional[0]);
    if (!o.nx || !o.ny)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl gen graphene: --nx and --ny are required");
    if (!o.output)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl gen graphene: -o OUT is required (- for standard output)");
    int extended = 1;
    if (o.to) {
        if (strcmp(o.to, "xyz") == 0)
            extended = 0;
        else if (strcmp(o.to, "extxyz") != 0)
            return mdnl_error(MDNL_ERR_USAGE, "--to: expected xyz or extxyz, got \"%s\"", o.to);
    }
    if (mdnl_is_hdf5_path(o.output))
        return mdnl_error(MDNL_ERR_USAGE, "-o %s: gen writes XYZ or extended XYZ; convert it to H5MD afterwards",
                          o.output);
    const mdnl_output_kind kind = MDNL_OUTPUT_TEXT;
    if ((st = mdnl_output_check(NULL, 1, &o.output, &kind)) != MDNL_OK)
        return st;
    mdnl_frame f = {0};
    mdnl_ofile out = {0};
    if ((st = mdnl_gen_graphene(o.nx, o.ny, o.bond, o.noise, o.seed, o.vacuum, &f)) != MDNL_OK)
        goto done;
    if ((st = mdnl_ofile_open(&out, o.output)) != MDNL_OK)
        goto done;
    if ((st = mdnl_xyz_write(out.fp, &f, extended)) != MDNL_OK)
        goto done;
    if ((st = mdnl_ofile_commit(&out)) != MDNL_OK)
        goto done;
    if (o.json) {
        printf("{\"command\":\"gen\",\"structure\":\"graphene\",\"output\":");
        mdnl_json_string(stdout, o.output);
        printf(",\"natoms\":%lld,\"box\":[%.17g,%.17g,%.17g]}\n", (long long)f.natoms, f.box.h[0][0], f.box.h[1][1],
               f.box.h[2][2]);
    } else if (!o.quiet && strcmp(o.output, "-") != 0)
        fprintf(stderr, "mdnl gen: %lld atoms of graphene (%lld x %lld cells, bond %g, noise %g) in a %.4f x %.4f x %.4f "
                        "cell, periodic in x and y, written to %s\n",
                (long long)f.natoms, o.nx, o.ny, o.bond, o.noise, f.box.h[0][0], f.box.h[1][1], f.box.h[2][2],
                o.output);
done:
    if (st != MDNL_OK)
        mdnl_ofile_abort(&out);
    mdnl_frame_free(&f);
    return st;
}

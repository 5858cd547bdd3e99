/* test_formats.c — format detection (io/reader.c), the byte stream with
 * gzip / xz / zstd and standard input (io/stream.c), and the GRO and PDB
 * readers against files MDAnalysis wrote (data/gro/,
 * tools/make_gro_pdb_fixtures.py) from the LAMMPS dump they are compared
 * with. */
#define _POSIX_C_SOURCE 200809L
#include "cli_test_util.h"
#include "reader.h"

#include <math.h>

TestSuite(formats, .init = make_tmpdir, .fini = remove_tmpdir);

#define DATA(name) MDNL_DATA_DIR "/" name

static mdnl_status read_frame(const char *path, const mdnl_read_options *opt, int k, mdnl_frame *f)
{
    mdnl_reader *r;
    mdnl_status st = mdnl_reader_open(path, opt, &r);
    for (int i = 0; i < k && st == MDNL_OK; ++i)
        st = mdnl_reader_skip(r);
    if (st == MDNL_OK)
        st = mdnl_reader_next(r, f);
    mdnl_reader_close(r);
    return st;
}

/* Same atoms within tol, the difference wrapped into b's lower-triangular
 * cell. */
static void expect_close(const mdnl_frame *a, const mdnl_frame *b, double tol, const char *what)
{
    cr_assert_eq(a->natoms, b->natoms, "%s", what);
    for (int64_t i = 0; i < a->natoms; ++i) {
        double d[3];
        for (int k = 0; k < 3; ++k)
            d[k] = a->pos[i][k] - b->pos[i][k];
        for (int k = 2; k >= 0; --k) {
            const double s = round(d[k] / b->box.h[k][k]);
            for (int m = 0; m < 3; ++m)
                d[m] -= s * b->box.h[k][m];
        }
        for (int k = 0; k < 3; ++k)
            cr_assert(fabs(d[k]) <= tol, "%s: atom %lld axis %d off by %g", what, (long long)i, k, d[k]);
    }
}

Test(formats, gro_frames_match_the_lammps_dump_in_angstrom_and_native_nm)
{
    mdnl_frame g = {0}, d = {0}, n = {0};
    const mdnl_read_options native = {.units_native = true};
    for (int k = 0; k < 4; ++k) {
        cr_assert_eq(read_frame(DATA("gro/liquid-4frames.gro"), NULL, k, &g), MDNL_OK, "%s", mdnl_last_error());
        cr_assert_eq(read_frame(DATA("lammps/dump_triclinic.lammpstrj"), NULL, k, &d), MDNL_OK, "%s",
                     mdnl_last_error());
        expect_close(&g, &d, 0.0051, "GRO (nm, 3 decimals) vs dump");
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c)
                cr_expect(fabs(g.box.h[r][c] - d.box.h[r][c]) <= 0.0051, "box h[%d][%d] %g vs %g", r, c,
                          g.box.h[r][c], d.box.h[r][c]);
        cr_expect(g.box.pbc[0] && g.box.pbc[1] && g.box.pbc[2]);
        cr_expect_str_eq(g.symbols[g.species[0]], "CU");
        cr_assert_eq(read_frame(DATA("gro/liquid-4frames.gro"), &native, k, &n), MDNL_OK, "%s", mdnl_last_error());
        for (int64_t i = 0; i < n.natoms; ++i)
            for (int a = 0; a < 3; ++a)
                cr_assert(fabs(n.pos[i][a] * 10 - g.pos[i][a]) < 1e-12, "native nm x 10 = angstrom");
    }
    cr_expect_eq(read_frame(DATA("gro/liquid-4frames.gro"), NULL, 4, &g), MDNL_END);
    mdnl_frame_free(&g);
    mdnl_frame_free(&d);
    mdnl_frame_free(&n);
}

Test(formats, pdb_models_match_the_lammps_dump_and_cryst1_is_the_cell)
{
    mdnl_frame p = {0}, d = {0};
    for (int k = 0; k < 4; ++k) {
        cr_assert_eq(read_frame(DATA("gro/liquid-4frames.pdb"), NULL, k, &p), MDNL_OK, "%s", mdnl_last_error());
        cr_assert_eq(read_frame(DATA("lammps/dump_triclinic.lammpstrj"), NULL, k, &d), MDNL_OK, "%s",
                     mdnl_last_error());
        expect_close(&p, &d, 0.00051, "PDB (3 decimals) vs dump");
        /* CRYST1 keeps a, b, c to 3 decimals and the angles to 2: the cell
         * within a few thousandths of an angstrom */
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c)
                cr_expect(fabs(p.box.h[r][c] - d.box.h[r][c]) <= 0.002, "box h[%d][%d] %g vs %g", r, c,
                          p.box.h[r][c], d.box.h[r][c]);
        cr_expect_str_eq(p.symbols[p.species[0]], "Cu", "element columns, capitals folded");
    }
    cr_expect_eq(read_frame(DATA("gro/liquid-4frames.pdb"), NULL, 4, &p), MDNL_END);
    mdnl_frame_free(&p);
    mdnl_frame_free(&d);
}

Test(formats, info_names_each_format_and_its_units)
{
    static const struct {
        const char *file, *format;
    } cases[] = {
        {"trajectory-3frames.extxyz", "extxyz"},     {"graphene-open.xyz", "xyz"},
        {"lj-liquid-131k.h5md", "h5md"},              {"lammps/dump_atom.lammpstrj", "lammps-dump"},
        {"lammps/data_atomic.data", "lammps-data"}, {"gro/liquid.gro", "gro"},
        {"gro/liquid-4frames.pdb", "pdb"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; ++k) {
        cr_assert_eq(mdnl("info %s/%s --json", MDNL_DATA_DIR, cases[k].file), 0, "%s", err_text);
        char want[64];
        snprintf(want, sizeof want, "\"format\":\"%s\"", cases[k].format);
        cr_expect(strstr(out_text, want) != NULL, "%s: %s", cases[k].file, out_text);
    }
    cr_assert_eq(mdnl("info %s", DATA("gro/liquid.gro")), 0);
    cr_expect(strstr(out_text, "units    angstrom (converted from nm)") != NULL, "%s", out_text);
    cr_assert_eq(mdnl("info %s --units native", DATA("gro/liquid.gro")), 0);
    cr_expect(strstr(out_text, "units    nm (native)") != NULL, "%s", out_text);
    cr_expect_eq(mdnl("info %s --units furlongs", DATA("gro/liquid.gro")), 2);
    expect_one_error_line();
}

/* sh() sends stdout to its capture file: commands that write a file with
 * ">" run in a subshell "( ... )". */

/* The same bytes compressed three ways, as files and through a pipe, give
 * the frames of the plain file; info reports the compression. */
Test(formats, gzip_xz_zstd_files_and_pipes_read_like_the_plain_file)
{
    cr_assert_eq(mdnl("neighbors %s -c 1.5", DATA("trajectory-3frames.extxyz")), 0, "%s", err_text);
    static char plain[sizeof out_text];
    memcpy(plain, out_text, sizeof plain);
    const char *tools[3][2] = {{"gzip", "gz"}, {"xz", "xz"}, {"zstd -q", "zst"}};
    for (int k = 0; k < 3; ++k) {
        cr_assert_eq(sh("(%s -c '%s' > t.extxyz.%s)", tools[k][0], DATA("trajectory-3frames.extxyz"), tools[k][1]), 0,
                     "%s", err_text);
        cr_assert_eq(mdnl("neighbors t.extxyz.%s -c 1.5", tools[k][1]), 0, "%s", err_text);
        cr_expect_str_eq(out_text, plain, "%s file", tools[k][0]);
        cr_assert_eq(sh("%s -c '%s' | MDNL_DATA='%s' '%s' neighbors - -c 1.5", tools[k][0],
                        DATA("trajectory-3frames.extxyz"), MDNL_DATA_DIR, MDNL_BINARY),
                     0, "%s", err_text);
        cr_expect_str_eq(out_text, plain, "%s pipe", tools[k][0]);
        cr_assert_eq(mdnl("info t.extxyz.%s --json", tools[k][1]), 0, "%s", err_text);
        char want[64];
        snprintf(want, sizeof want, "\"format\":\"extxyz+%s\"", k == 0 ? "gzip" : k == 1 ? "xz" : "zstd");
        cr_expect(strstr(out_text, want) != NULL, "%s", out_text);
        cr_expect(strstr(out_text, "\"nframes\":3") != NULL, "%s", out_text);
    }
    /* info on a pipe: the issue's `zcat f.xyz.gz | mdnl info -` */
    cr_assert_eq(sh("zcat t.extxyz.gz | '%s' info -", MDNL_BINARY), 0, "%s", err_text);
    cr_expect(strstr(out_text, "frames   3") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "(extxyz)") != NULL, "%s", out_text);
    /* a compressed LAMMPS dump through a pipe, format sniffed */
    cr_assert_eq(sh("gzip -c '%s' | '%s' info - --json", DATA("lammps/dump_custom.lammpstrj"), MDNL_BINARY), 0, "%s",
                 err_text);
    cr_expect(strstr(out_text, "\"format\":\"lammps-dump+gzip\"") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "\"nframes\":4") != NULL, "%s", out_text);
}

Test(formats, truncated_or_corrupt_compression_is_one_input_error)
{
    const char *tools[3][2] = {{"gzip", "gz"}, {"xz", "xz"}, {"zstd -q", "zst"}};
    for (int k = 0; k < 3; ++k) {
        cr_assert_eq(sh("(%s -c '%s' > t.%s && head -c 300 t.%s > cut.xyz.%s)", tools[k][0],
                        DATA("lammps/dump_custom.lammpstrj"), tools[k][1], tools[k][1], tools[k][1]),
                     0);
        cr_expect_eq(mdnl("info cut.xyz.%s", tools[k][1]), 3, "%s", tools[k][0]);
        expect_one_error_line();
        cr_expect(strstr(err_text, "truncated") != NULL || strstr(err_text, "corrupt") != NULL ||
                      strstr(err_text, "frame 0") != NULL,
                  "%s", err_text);
        /* a flipped byte in the middle */
        cr_assert_eq(sh("(cp t.%s bad.%s && printf '\\377\\377\\377\\377' | dd of=bad.%s bs=1 seek=200 conv=notrunc "
                        "2>/dev/null)",
                        tools[k][1], tools[k][1], tools[k][1]),
                     0);
        int rc = mdnl("info bad.%s", tools[k][1]);
        cr_expect_eq(rc, 3, "%s: status %d, %s", tools[k][0], rc, err_text);
        expect_one_error_line();
    }
}

Test(formats, unknown_and_unsupported_inputs_name_the_formats_mdnl_reads)
{
    write_file("notes.txt", "hello\nworld\n");
    cr_expect_eq(mdnl("info notes.txt"), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "xyz, extxyz, h5md, lammps-dump, lammps-data, gro, pdb") != NULL, "%s", err_text);
    cr_expect(strstr(err_text, "--format") != NULL, "%s", err_text);
    cr_expect(strstr(err_text, "xtc, trr, dcd") != NULL, "%s", err_text);
    /* XTC's magic number, 1995, big endian, then junk: the XTC reader's error */
    cr_assert_eq(sh("(printf '\\000\\000\\007\\313junk' > t.bin)"), 0);
    cr_expect_eq(mdnl("info t.bin"), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "t.bin") != NULL, "%s", err_text);
    /* XTC, TRR and DCD are read from regular files: a pipe is refused after
     * the sniff of the stream's head, naming the format */
    cr_expect_eq(sh("cat '%s' | '%s' info -", DATA("binary/w60.xtc"), MDNL_BINARY), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "xtc") != NULL && strstr(err_text, "regular file") != NULL, "%s", err_text);
    cr_expect_eq(mdnl("info %s --format nonsense", DATA("graphene-open.xyz")), 2);
    expect_one_error_line();
    cr_expect(strstr(err_text, "--format") != NULL && strstr(err_text, "pdb") != NULL, "%s", err_text);
    /* H5MD cannot come through a pipe or compressed */
    cr_expect_eq(sh("cat '%s' | '%s' info -", DATA("lj-liquid-131k.h5md"), MDNL_BINARY), 3);
    expect_one_error_line();
    /* binary bytes in a message are escaped */
    cr_assert_eq(sh("(printf '\\001\\002\\003' > bin.xyz)"), 0);
    cr_expect_eq(mdnl("info bin.xyz"), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "\\x01\\x02\\x03") != NULL, "%s", err_text);
}

/* Content decides over the extension; --format decides over both. */
Test(formats, content_wins_over_extension_and_format_wins_over_content)
{
    cr_assert_eq(sh("(cp '%s' dump.xyz)", DATA("lammps/dump_atom.lammpstrj")), 0);
    cr_assert_eq(mdnl("info dump.xyz --json"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"format\":\"lammps-dump\"") != NULL, "%s", out_text);
    cr_expect_eq(mdnl("info dump.xyz --format xyz"), 3);
    expect_one_error_line();
    cr_expect(strstr(err_text, "ITEM: TIMESTEP") != NULL, "%s", err_text);
    cr_assert_eq(sh("cat '%s' | '%s' info - --format lammps-dump --json", DATA("lammps/dump_atom.lammpstrj"),
                    MDNL_BINARY),
                 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"nframes\":4") != NULL, "%s", out_text);
}

Test(formats, malformed_text_formats_are_one_line_input_errors)
{
    static const char *const cases[][2] = {
        {"d1.lammpstrj", "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\n"
                         "ITEM: ATOMS id type x y z\n1 1 0 0 0\n"},
        {"d2.lammpstrj", "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\nITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\n"
                         "ITEM: ATOMS id type q\n1 1 0\n"},
        {"d3.lammpstrj", "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\n"
                         "ITEM: ATOMS id type x y z\n1 1 0 0 0\n1 1 0.5 0 0\n"},
        {"d4.lammpstrj", "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\nITEM: BOX BOUNDS pp pp pp\n1 0\n0 1\n0 1\n"
                         "ITEM: ATOMS id type x y z\n1 1 0 0 0\n"},
        {"d5.lammpstrj", "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1000000000\nITEM: BOX BOUNDS pp pp pp\n0 1\n"
                         "0 1\n0 1\nITEM: ATOMS id type x y z\n1 1 0 0 0\n"},
        {"d6.lammpstrj", "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\nITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\n"
                         "ITEM: ATOMS id type x y z\n1 1 nan 0 0\n"},
        {"a.data", "LAMMPS data\n\n1 atoms\n\n0 1 xlo xhi\n0 1 ylo yhi\n0 1 zlo zhi\n\nAtoms # atomic\n\n1 1 0 0\n"},
        {"b.data", "LAMMPS data\n\n2 atoms\n\n0 1 xlo xhi\n0 1 ylo yhi\n0 1 zlo zhi\n\nAtoms # sphere\n\n1 1 0 0 0\n"},
        {"g.gro", "title\n2\n    1LIQ     CU    1   0.000   0.000   0.000\n"},
        {"h.gro", "title\n1\n    1LIQ     CU    1   0.000   0.0x0   0.000\n   1 1 1\n"},
        {"p.pdb", "CRYST1    0.000    5.108    5.075  92.81  84.30  80.54 P 1           1\n"
                  "ATOM      1 CU   LIQ X   1       0.000   0.000   0.000  1.00  0.00          CU\n"},
        {"q.pdb", "ATOM      1 CU   LIQ X   1       0.000   abc     0.000  1.00  0.00          CU\n"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; ++k) {
        write_file(cases[k][0], cases[k][1]);
        int rc = mdnl("info %s", cases[k][0]);
        cr_expect_eq(rc, 3, "%s: status %d: %s", cases[k][0], rc, err_text);
        expect_one_error_line();
        cr_expect(strstr(err_text, cases[k][0]) != NULL, "%s", err_text);
    }
}

/* The issue's `convert g.extxyz out.dcd` wrote extended XYZ into out.dcd:
 * now it is DCD, and an extension of no writer is a usage error. */
Test(formats, unknown_output_extension_is_a_usage_error_listing_writers)
{
    const char *outs[] = {"out.txt", "out", "out.gro", "out.xyz.gz"};
    for (size_t k = 0; k < sizeof outs / sizeof *outs; ++k) {
        cr_expect_eq(mdnl("convert %s %s", DATA("triclinic.extxyz"), outs[k]), 2, "%s", outs[k]);
        expect_one_error_line();
        cr_expect(strstr(err_text, "lammps-dump (.lammpstrj") != NULL && strstr(err_text, "xtc (.xtc)") != NULL &&
                      strstr(err_text, "dcd (.dcd)") != NULL && strstr(err_text, "--to") != NULL,
                  "%s", err_text);
    }
    cr_expect_eq(dir_entries(), 0, "nothing written");
    cr_expect_eq(mdnl("convert %s out.txt --to pdb", DATA("triclinic.extxyz")), 2);
    expect_one_error_line();
    cr_assert_eq(mdnl("convert %s out.dcd --quiet", DATA("triclinic.extxyz")), 0, "%s", err_text);
    cr_assert_eq(mdnl("info out.dcd --json"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"format\":\"dcd\"") != NULL, "%s", out_text);
    cr_assert_eq(mdnl("convert %s out.txt --to lammps-dump --quiet", DATA("triclinic.extxyz")), 0, "%s", err_text);
    cr_assert_eq(mdnl("info out.txt --json"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"format\":\"lammps-dump\"") != NULL, "%s", out_text);
}

/* extxyz -> extxyz keeps the per-atom arrays and keys mdnl does not use;
 * an output that cannot hold them says so in one warning line. */
Test(formats, convert_keeps_extxyz_extras_or_warns_what_it_drops)
{
    write_file("f.extxyz", "2\nLattice=\"5 0 0 0 5 0 0 0 5\" Properties=species:S:1:forces:R:3:pos:R:3:charge:R:1 "
                           "energy=-1.25 config_type=\"bulk water\" pbc=\"T T T\"\n"
                           "O 0.1 0.2 0.3 1 2 3 -0.8\nH -0.1 -0.2 -0.3 1.5 2 3 0.4\n"
                           "1\nProperties=species:S:1:pos:R:3:forces:R:3 energy=-2\nH 0 0 0 9 8 7\n");
    cr_assert_eq(mdnl("convert f.extxyz g.extxyz"), 0, "%s", err_text);
    cr_expect(strstr(err_text, "warning") == NULL, "%s", err_text);
    char p[512];
    static char text[1 << 12];
    snprintf(p, sizeof p, "%s/g.extxyz", tmpdir);
    slurp(p, text, sizeof text);
    cr_expect(strstr(text, "Properties=species:S:1:pos:R:3:forces:R:3:charge:R:1 ") != NULL, "%s", text);
    cr_expect(strstr(text, "energy=-1.25 config_type=\"bulk water\"") != NULL, "%s", text);
    cr_expect(strstr(text, "O 1.0000000000 2.0000000000 3.0000000000 0.1 0.2 0.3 -0.8\n") != NULL, "%s", text);
    cr_expect(strstr(text, "H 9.0000000000 8.0000000000 7.0000000000 0 0 0\n") == NULL, "%s", text);
    cr_expect(strstr(text, "H 0.0000000000 0.0000000000 0.0000000000 9 8 7\n") != NULL, "%s", text);
    cr_expect(strstr(text, "energy=-2\n") != NULL, "%s", text);
    /* and again: the copy of the copy is the copy */
    cr_assert_eq(mdnl("convert g.extxyz h.extxyz --quiet"), 0, "%s", err_text);
    static char again[1 << 12];
    snprintf(p, sizeof p, "%s/h.extxyz", tmpdir);
    slurp(p, again, sizeof again);
    cr_expect_str_eq(again, text);
    cr_assert_eq(mdnl("convert f.extxyz g.lammpstrj"), 0, "%s", err_text);
    /* the warning once, the note on frame 1's missing cell, the summary */
    cr_expect_eq(count_lines(err_text), 3, "%s", err_text);
    cr_expect(strstr(err_text, "mdnl convert: warning: LAMMPS dump cannot hold the input's per-atom arrays "
                               "forces:R:3:charge:R:1 and keys energy=-1.25 config_type=\"bulk water\"; dropped") != NULL,
              "%s", err_text);
}

/* On a pipe or compressed input the size is unknown, so a count is not
 * checked against it: the arrays must grow with the lines actually read, not
 * with the count (the data reader used to allocate the count up front). */
Test(formats, huge_counts_on_pipes_allocate_nothing)
{
    static const char *const inputs[] = {
        "LAMMPS data\\n\\n1000000000000 atoms\\n\\n0 1 xlo xhi\\n0 1 ylo yhi\\n0 1 zlo zhi\\n\\nAtoms # atomic\\n\\n1 1 0 0 0\\n",
        "ITEM: TIMESTEP\\n0\\nITEM: NUMBER OF ATOMS\\n1000000000000\\nITEM: BOX BOUNDS pp pp pp\\n0 1\\n0 1\\n0 1\\n"
        "ITEM: ATOMS id type x y z\\n1 1 0 0 0\\n",
        "t\\n1000000000000\\n    1LIQ     CU    1   0.000   0.000   0.000\\n",
        "1000000000000\\n\\nC 0 0 0\\n",
    };
    for (size_t k = 0; k < sizeof inputs / sizeof *inputs; ++k) {
        int rc = sh("printf '%s' | gzip | '%s' info -", inputs[k], MDNL_BINARY);
        cr_expect_eq(rc, 3, "input %zu: status %d: %s", k, rc, err_text);
        expect_one_error_line();
        cr_expect(strstr(err_text, "end") != NULL, "input %zu: %s", k, err_text);
    }
}

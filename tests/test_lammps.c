/* test_lammps.c — the LAMMPS dump and data readers (io/lammps_*.c) against
 * files LAMMPS wrote (data/lammps/, tools/make_lammps_fixtures.sh): the same
 * atoms read from every dump style and from write_data agree, the box with
 * tilts and boundary flags is LAMMPS', and `mdnl energy` / `mdnl rdf` on a
 * dump agree with LAMMPS' rerun energies and compute rdf on it. */
#define _POSIX_C_SOURCE 200809L
#include "cli_test_util.h"
#include "reader.h"

#include <math.h>

TestSuite(lammps, .init = make_tmpdir, .fini = remove_tmpdir);

#define FIX(name) MDNL_DATA_DIR "/lammps/" name

/* Reads frame k of path (NULL options: detection). */
static void read_frame(const char *path, const mdnl_read_options *opt, int k, mdnl_frame *f)
{
    mdnl_reader *r;
    cr_assert_eq(mdnl_reader_open(path, opt, &r), MDNL_OK, "%s", mdnl_last_error());
    for (int i = 0; i < k; ++i)
        cr_assert_eq(mdnl_reader_skip(r), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_reader_next(r, f), MDNL_OK, "%s", mdnl_last_error());
    mdnl_reader_close(r);
}

/* Positions of a and b (same atom order) agree within tol after wrapping
 * their difference into the cell of a (orthogonal or tilted). */
static void expect_same_atoms(const mdnl_frame *a, const mdnl_frame *b, double tol, const char *what)
{
    cr_assert_eq(a->natoms, b->natoms, "%s: %lld vs %lld atoms", what, (long long)a->natoms, (long long)b->natoms);
    for (int64_t i = 0; i < a->natoms; ++i) {
        double d[3];
        for (int k = 0; k < 3; ++k)
            d[k] = a->pos[i][k] - b->pos[i][k];
        for (int k = 2; k >= 0; --k) { /* the lower-triangular cell: c, then b, then a */
            const double s = round(d[k] / a->box.h[k][k]);
            for (int m = 0; m < 3; ++m)
                d[m] -= s * a->box.h[k][m];
        }
        for (int k = 0; k < 3; ++k)
            cr_assert(fabs(d[k]) <= tol, "%s: atom %lld axis %d differs by %g", what, (long long)i, k, d[k]);
        cr_assert_str_eq(a->symbols[a->species[i]], b->symbols[b->species[i]], "%s: atom %lld species", what,
                         (long long)i);
    }
}

Test(lammps, dump_styles_give_the_same_atoms_in_id_order)
{
    mdnl_frame custom = {0}, other = {0};
    const mdnl_read_options types = {.types = "1=Cu,2=O"};
    for (int k = 0; k < 4; ++k) {
        read_frame(FIX("dump_custom.lammpstrj"), NULL, k, &custom);
        cr_expect_eq(custom.step, 20 * k, "frame %d: step %lld", k, (long long)custom.step);
        cr_expect(custom.has_step);
        cr_expect(custom.box.has_lattice && custom.box.pbc[0] && custom.box.pbc[1] && custom.box.pbc[2]);
        cr_expect_float_eq(custom.box.h[0][0], 5.0387885741475218, 1e-15);
        /* scaled, 6 digits (dump atom's %g): within 1e-5 of the box */
        read_frame(FIX("dump_atom.lammpstrj"), &types, k, &other);
        expect_same_atoms(&custom, &other, 5e-6 * 5.04, "dump atom");
        /* xu yu zu written before id, 6 digits; unwrapped: equal modulo the box */
        read_frame(FIX("dump_unwrapped.lammpstrj"), &types, k, &other);
        expect_same_atoms(&custom, &other, 5e-6 * 5.04, "dump custom xu yu zu");
        read_frame(FIX("dump_scaled_unwrapped.lammpstrj"), &types, k, &other);
        expect_same_atoms(&custom, &other, 5e-6 * 5.04, "dump custom xsu ysu zsu");
    }
    /* write_data after the run: the last frame, to write_data's 16 digits */
    read_frame(FIX("data_atomic.data"), &types, 0, &other);
    expect_same_atoms(&custom, &other, 1e-9, "write_data atomic");
    cr_expect_eq(other.step, 60);
    mdnl_frame_free(&custom);
    mdnl_frame_free(&other);
}

/* The dumps list atoms out of id order (atom_modify sort): the reader's
 * order is by id, so atom 0 is id 1 at the origin in frame 0. */
Test(lammps, dump_rows_are_sorted_by_id)
{
    char line[4096];
    FILE *fp = fopen(FIX("dump_custom.lammpstrj"), "r");
    cr_assert_not_null(fp);
    int frame = -1, row = 0, out_of_order = 0;
    long last = 0;
    while (fgets(line, sizeof line, fp)) {
        if (!strncmp(line, "ITEM: ATOMS", 11)) {
            frame++, row = 0, last = 0;
            continue;
        }
        if (frame >= 0 && !strncmp(line, "ITEM:", 5)) {
            frame = frame >= 0 ? frame : 0;
            row = -1;
            continue;
        }
        if (frame >= 0 && row >= 0) {
            long id = strtol(line, NULL, 10);
            out_of_order += id < last;
            last = id;
            row++;
        }
    }
    fclose(fp);
    cr_assert(out_of_order > 0, "the fixture should list atoms out of id order");
    mdnl_frame f = {0};
    read_frame(FIX("dump_custom.lammpstrj"), NULL, 0, &f);
    cr_expect(f.pos[0][0] == 0 && f.pos[0][1] == 0 && f.pos[0][2] == 0, "id 1 sits at the origin: %g %g %g",
              f.pos[0][0], f.pos[0][1], f.pos[0][2]);
    cr_expect_float_eq(f.pos[1][0], 0.8397980957, 1e-10, "id 2: %g", f.pos[1][0]);
    mdnl_frame_free(&f);
}

Test(lammps, triclinic_bounds_become_lammps_cell)
{
    mdnl_frame x = {0}, s = {0}, d = {0};
    read_frame(FIX("dump_triclinic.lammpstrj"), NULL, 3, &x);
    /* change_box: xy 0.5, xz 0.3, yz -0.2 lattice units of 1.6796 */
    const double l = 5.0387885741475218, a = l / 3;
    const double want[3][3] = {{l, 0, 0}, {0.5 * a, l, 0}, {0.3 * a, -0.2 * a, l}};
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            cr_expect(fabs(x.box.h[r][c] - want[r][c]) < 1e-12, "h[%d][%d] = %.17g, want %.17g", r, c, x.box.h[r][c],
                      want[r][c]);
    read_frame(FIX("dump_triclinic_atom.lammpstrj"), NULL, 3, &s);
    expect_same_atoms(&x, &s, 1e-5 * l, "dump atom (scaled, tilted)");
    read_frame(FIX("data_triclinic.data"), NULL, 0, &d);
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            cr_expect(fabs(d.box.h[r][c] - want[r][c]) < 1e-12, "data h[%d][%d] = %.17g", r, c, d.box.h[r][c]);
    expect_same_atoms(&x, &d, 1e-9 * l, "write_data, tilted");
    mdnl_frame_free(&x);
    mdnl_frame_free(&s);
    mdnl_frame_free(&d);
}

Test(lammps, boundary_flags_map_to_periodicity)
{
    mdnl_frame f = {0};
    read_frame(FIX("dump_psf.lammpstrj"), NULL, 0, &f);
    cr_expect(f.box.has_lattice);
    cr_expect(f.box.pbc[0] && !f.box.pbc[1] && !f.box.pbc[2], "p s f -> T F F, got %d %d %d", f.box.pbc[0],
              f.box.pbc[1], f.box.pbc[2]);
    mdnl_frame_free(&f);
}

Test(lammps, data_atom_styles_read_the_same_atoms)
{
    mdnl_frame ref = {0}, f = {0};
    read_frame(FIX("dump_custom.lammpstrj"), NULL, 0, &ref); /* the lattice before the run */
    const mdnl_read_options types = {.types = "1=Cu,2=O"};
    const char *styles[] = {"charge", "molecular", "full"};
    for (int k = 0; k < 3; ++k) {
        char path[512];
        snprintf(path, sizeof path, FIX("data_%s.data"), styles[k]);
        read_frame(path, &types, 0, &f);
        expect_same_atoms(&ref, &f, 1e-9, styles[k]);
        /* forced style that disagrees with the columns: an error naming the count */
        const mdnl_read_options atomic = {.atom_style = "atomic"};
        mdnl_reader *r;
        cr_assert_eq(mdnl_reader_open(path, &atomic, &r), MDNL_OK, "%s", mdnl_last_error());
        cr_expect_eq(mdnl_reader_next(r, &f), MDNL_ERR_INPUT, "%s as atomic", styles[k]);
        cr_expect(strstr(mdnl_last_error(), "atom style atomic") != NULL, "%s", mdnl_last_error());
        mdnl_reader_close(r);
    }
    mdnl_frame_free(&ref);
    mdnl_frame_free(&f);
}

Test(lammps, info_reports_format_masses_and_types)
{
    cr_assert_eq(mdnl("info %s --json --types 1=Cu,2=O", FIX("data_full.data")), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"format\":\"lammps-data\"") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "\"masses\":\"1:1 2:1\"") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "\"species\":{\"Cu\":81,\"O\":27}") != NULL, "%s", out_text);
    cr_assert_eq(mdnl("info %s", FIX("dump_atom.lammpstrj")), 0, "%s", err_text);
    cr_expect(strstr(out_text, "(lammps-dump)") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "frames   4") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "species  1 81 2 27") != NULL, "%s", out_text);
    cr_expect_eq(mdnl("info %s --types 1=Cu,x", FIX("dump_atom.lammpstrj")), 2);
    expect_one_error_line();
    cr_expect_eq(mdnl("info %s --atom-style sphere", FIX("data_full.data")), 2);
    expect_one_error_line();
}

/* LAMMPS' rerun energies of the dump (reference.txt) against mdnl energy on
 * the same file: SPEC's 1e-6 relative (mdnl's float positions). */
Test(lammps, rerun_energy_matches_mdnl_energy)
{
    cr_assert_eq(mdnl("energy %s -c 2.5 --pair lj:epsilon=1,sigma=1,shift=no", FIX("dump_custom.lammpstrj")), 0, "%s",
                 err_text);
    static char out[sizeof out_text];
    snprintf(out, sizeof out, "%s", out_text);
    FILE *fp = fopen(FIX("reference.txt"), "r");
    cr_assert_not_null(fp);
    char line[512];
    int n = 0;
    const char *p = strchr(out, '\n'); /* after the header */
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#')
            continue;
        long long step;
        double pe;
        cr_assert_eq(sscanf(line, "%lld %lf", &step, &pe), 2);
        long long frame, mstep;
        double e;
        cr_assert(p && sscanf(p + 1, "%lld %lld %lf", &frame, &mstep, &e) == 3, "mdnl output: %s", out);
        cr_expect_eq(mstep, step);
        cr_expect(fabs(e - pe) <= 1e-6 * fabs(pe), "step %lld: mdnl %.12g, LAMMPS %.12g", step, e, pe);
        p = strchr(p + 1, '\n');
        ++n;
    }
    fclose(fp);
    cr_expect_eq(n, 4);
}

/* LAMMPS compute rdf (rdf.txt, one block per frame) against mdnl rdf on the
 * same dump: the coordination numbers agree to 1e-6; g(r) differs by the
 * normalisation only: LAMMPS divides by N (N - 1) / V, mdnl by N^2 / V. */
Test(lammps, compute_rdf_matches_mdnl_rdf)
{
    cr_assert_eq(mdnl("rdf %s --rmax 2.5 --bins 50", FIX("dump_custom.lammpstrj")), 0, "%s", err_text);
    double g[50], nr[50], lg[50] = {0}, ln[50] = {0};
    const char *p = out_text;
    int b = 0;
    while (b < 50 && (p = strchr(p, '\n'))) {
        ++p;
        double lo, hi, r;
        if (sscanf(p, "%lf %lf %lf %lf %lf", &lo, &hi, &r, &g[b], &nr[b]) == 5)
            ++b;
    }
    cr_assert_eq(b, 50, "%s", out_text);
    FILE *fp = fopen(FIX("rdf.txt"), "r");
    cr_assert_not_null(fp);
    char line[512];
    int frames = 0;
    while (fgets(line, sizeof line, fp)) {
        int row;
        double r, gv, nv;
        if (line[0] == '#')
            continue;
        if (sscanf(line, "%d %lf %lf %lf", &row, &r, &gv, &nv) == 4) {
            lg[row - 1] += gv;
            ln[row - 1] += nv;
        } else {
            frames++;
        }
    }
    fclose(fp);
    cr_assert_eq(frames, 4);
    const double n = 108;
    for (int k = 0; k < 50; ++k) {
        cr_expect(fabs(nr[k] - ln[k] / frames) <= 1e-6, "bin %d: coordination mdnl %.9g, LAMMPS %.9g", k, nr[k],
                  ln[k] / frames);
        cr_expect(fabs(g[k] * n / (n - 1) - lg[k] / frames) <= 1e-6 * (1 + g[k]), "bin %d: g mdnl %.9g, LAMMPS %.9g",
                  k, g[k], lg[k] / frames);
    }
}

/* mdnl's own dump (convert) keeps LAMMPS' frames: the rerun energies of the
 * original hold on the copy, steps and box included. */
Test(lammps, converted_dump_keeps_the_rerun_energies)
{
    cr_assert_eq(mdnl("convert %s copy.lammpstrj --quiet", FIX("dump_custom.lammpstrj")), 0, "%s", err_text);
    cr_assert_eq(mdnl("convert %s tri.lammpstrj --quiet", FIX("dump_triclinic.lammpstrj")), 0, "%s", err_text);
    mdnl_frame a = {0}, b = {0};
    char path[512];
    snprintf(path, sizeof path, "%s/tri.lammpstrj", tmpdir);
    for (int k = 0; k < 4; ++k) {
        read_frame(FIX("dump_triclinic.lammpstrj"), NULL, k, &a);
        read_frame(path, NULL, k, &b);
        cr_expect_eq(a.step, b.step);
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 3; ++c)
                cr_expect(fabs(a.box.h[r][c] - b.box.h[r][c]) < 1e-12, "h[%d][%d]", r, c);
        expect_same_atoms(&a, &b, 1e-9, "dump -> mdnl dump");
    }
    mdnl_frame_free(&a);
    mdnl_frame_free(&b);
    cr_assert_eq(mdnl("energy copy.lammpstrj -c 2.5 --pair lj:epsilon=1,sigma=1,shift=no"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "0\t0\t-731.5236") != NULL, "%s", out_text);
    cr_expect(strstr(out_text, "3\t60\t-608.9976") != NULL, "%s", out_text);
}

/* A cell that is not in LAMMPS' restricted form (a along x, b in xy) is
 * rotated with its atoms: every distance survives. */
Test(lammps, dump_writer_rotates_a_general_cell_keeping_distances)
{
    write_file("rot.extxyz", "4\nLattice=\"0 4 0 -3.5 1 0 0.25 0.5 5\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n"
                             "Si 0 0 0\nSi 1.75 1.5 2.5\nO 0.5 2.25 1\nO 3 -0.5 4.75\n");
    cr_assert_eq(mdnl("neighbors rot.extxyz -c 3.2"), 0, "%s", err_text);
    static char want[sizeof out_text];
    memcpy(want, out_text, sizeof want);
    cr_assert_eq(mdnl("convert rot.extxyz rot.lammpstrj --quiet"), 0, "%s", err_text);
    cr_assert_eq(mdnl("neighbors rot.lammpstrj -c 3.2"), 0, "%s", err_text);
    /* same pairs; distances printed with %.9g agree to the last digits */
    const char *p = want, *q = out_text;
    int rows = 0;
    while ((p = strchr(p, '\n')) && (q = strchr(q, '\n'))) {
        ++p, ++q;
        long long f1, i1, j1, f2, i2, j2;
        double d1, d2;
        if (sscanf(p, "%lld %lld %lld %lf", &f1, &i1, &j1, &d1) != 4)
            break;
        cr_assert_eq(sscanf(q, "%lld %lld %lld %lf", &f2, &i2, &j2, &d2), 4, "%s", out_text);
        cr_expect(i1 == i2 && j1 == j2 && fabs(d1 - d2) < 1e-6, "pair %lld-%lld %.9g vs %lld-%lld %.9g", i1, j1, d1,
                  i2, j2, d2);
        ++rows;
    }
    cr_expect(rows > 4, "%d pairs", rows);
}

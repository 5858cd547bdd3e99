/* test_reader_pool.c — the text reader pool (io/text_pool.h) through the
 * real binary: every --threads N gives the bytes and the errors of
 * --threads 1 (the single-thread reader is the oracle), on extended XYZ with
 * extra columns and keys, changing atom counts, blank lines and CRLF,
 * compressed input, standard input, --frames, a frame large enough to be
 * split across the workers, and bad frames at several positions; and
 * through the reader API, the frame allocator a caller switches to. */
#define _GNU_SOURCE
#include "cli_test_util.h"
#include "reader.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

TestSuite(reader_pool, .init = make_tmpdir, .fini = remove_tmpdir);

static const int thread_counts[] = {2, 3, 4, 8};
#define NTHREADS (int)(sizeof thread_counts / sizeof *thread_counts)

/* A corruption of atom `atom` of frame `frame` (-1: none). */
typedef struct bad {
    int frame;
    int64_t atom;
    const char *text; /* the whole atom line written instead */
} bad;

typedef struct traj {
    int frames;
    int64_t atoms[16];  /* atoms of frame k */
    bool extras;        /* forces:R:3 columns and an energy= key */
    bool crlf;          /* \r\n line ends */
    bool blank_between; /* blank lines before each count line */
    bad bads[3];
    int nbad;
    int truncate_at; /* >= 0: the file ends this many atom lines into the last frame */
} traj;

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 11;
}

/* A new file NAME in the test's directory, for writing. */
static FILE *create_in_tmpdir(const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *fp = fopen(p, "wb");
    cr_assert_not_null(fp, "%s", p);
    return fp;
}

static void write_traj(const char *name, const traj *t)
{
    FILE *fp = create_in_tmpdir(name);
    const char *nl = t->crlf ? "\r\n" : "\n";
    uint64_t seed = 7;
    static const char *const species[] = {"Cu", "O", "H", "Zr"};
    for (int k = 0; k < t->frames; ++k) {
        if (t->blank_between)
            fprintf(fp, "%s  %s", nl, nl);
        fprintf(fp, "%lld%s", (long long)t->atoms[k], nl);
        fprintf(fp, "Lattice=\"20 0 0 0 21 0 0 0 22\" Properties=species:S:1:pos:R:3%s pbc=\"T T T\" Step=%d%s%s",
                t->extras ? ":forces:R:3" : "", 10 * k, t->extras ? " energy=-1.25 note=\"a b\"" : "", nl);
        int64_t n = t->atoms[k];
        if (k == t->frames - 1 && t->truncate_at >= 0)
            n = t->truncate_at;
        for (int64_t i = 0; i < n; ++i) {
            const bad *b = NULL;
            for (int q = 0; q < t->nbad; ++q)
                if (t->bads[q].frame == k && t->bads[q].atom == i)
                    b = &t->bads[q];
            if (b) {
                fprintf(fp, "%s%s", b->text, nl);
                continue;
            }
            /* a species that first appears late in big frames (the split's merge) */
            const char *sp = species[(i * 7 + k) % (i > 200000 ? 4 : 3)];
            fprintf(fp, "%s %.6f %.6f %.6f", sp, (double)(lcg(&seed) % 20000000) * 1e-6,
                    (double)(lcg(&seed) % 21000000) * 1e-6, (double)(lcg(&seed) % 22000000) * 1e-6);
            if (t->extras)
                fprintf(fp, " %.3f %.3f %.3f", (double)(lcg(&seed) % 2000) * 1e-3 - 1, 0.5, -0.25);
            fputs(nl, fp);
        }
    }
    fclose(fp);
}

/* `mdnl ARGS --threads 1` and `--threads N` for every N: the same exit
 * status, the same stderr, and the same bytes in OUT (when OUT is named).
 * Returns the exit status. */
static int expect_threads_agree(const char *args, const char *out)
{
    static char ref_err[sizeof err_text];
    int rc1 = mdnl("%s --threads 1", args);
    snprintf(ref_err, sizeof ref_err, "%s", err_text);
    if (out)
        cr_assert_eq(sh("cp %s ref.out 2>/dev/null || rm -f ref.out", out), 0);
    for (int q = 0; q < NTHREADS; ++q) {
        if (out)
            sh("rm -f %s", out);
        int rc = mdnl("%s --threads %d", args, thread_counts[q]);
        cr_expect_eq(rc, rc1, "%s --threads %d: exit %d, %d with one thread: %s", args, thread_counts[q], rc, rc1,
                     err_text);
        cr_expect_str_eq(err_text, ref_err, "%s --threads %d", args, thread_counts[q]);
        if (out && rc1 == 0)
            cr_expect_eq(sh("cmp ref.out %s", out), 0, "%s --threads %d: output differs", args, thread_counts[q]);
        if (out && rc1 != 0)
            cr_expect_eq(sh("test ! -e %s", out), 0, "%s --threads %d: partial output left", args, thread_counts[q]);
    }
    snprintf(err_text, sizeof err_text, "%s", ref_err); /* for the caller's checks */
    return rc1;
}

/* `cat GZ | mdnl convert - OUT -q ARGS --threads N` for every N gives the
 * bytes of REF. */
static void expect_stdin_matches(const char *gz, const char *args, const char *ref, const char *out)
{
    for (int q = 0; q < NTHREADS; ++q) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "cat %s | MDNL_DATA='%s' '%s' convert - %s -q %s --threads %d", gz, MDNL_DATA_DIR,
                 MDNL_BINARY, out, args, thread_counts[q]);
        cr_assert_eq(run_in_tmpdir(cmd), 0, "%s", err_text);
        cr_expect_eq(sh("cmp %s %s", ref, out), 0, "%s from standard input, --threads %d", gz, thread_counts[q]);
    }
}

static traj many_frames(void)
{
    traj t = {.frames = 12, .extras = true, .truncate_at = -1};
    for (int k = 0; k < t.frames; ++k)
        t.atoms[k] = 50 + 37 * k + (k % 3) * 400; /* changing counts */
    return t;
}

Test(reader_pool, convert_with_extras_matches_one_thread)
{
    traj t = many_frames();
    write_traj("t.extxyz", &t);
    expect_threads_agree("convert t.extxyz out.extxyz -q", "out.extxyz");
    cr_expect(strstr(out_text, "") != NULL);
    cr_assert_eq(mdnl("convert t.extxyz out.extxyz -q --threads 4"), 0, "%s", err_text);
    char buf[1 << 16];
    char p[512];
    snprintf(p, sizeof p, "%s/out.extxyz", tmpdir);
    slurp(p, buf, sizeof buf);
    cr_expect(strstr(buf, "forces:R:3") && strstr(buf, "energy=-1.25"), "the extras are kept");
    expect_threads_agree("convert t.extxyz out.xyz -q --frames 1:11:3", "out.xyz");
    expect_threads_agree("convert t.extxyz out.xyz -q --frames 4", "out.xyz");
    expect_threads_agree("convert t.extxyz out.xyz -q --frames -3:", "out.xyz");
}

Test(reader_pool, blank_lines_and_crlf_match_one_thread)
{
    traj t = many_frames();
    t.crlf = true;
    t.blank_between = true;
    write_traj("t.extxyz", &t);
    expect_threads_agree("convert t.extxyz out.extxyz -q", "out.extxyz");
}

Test(reader_pool, neighbors_and_info_match_one_thread)
{
    traj t = many_frames();
    t.extras = false;
    write_traj("t.extxyz", &t);
    expect_threads_agree("neighbors t.extxyz -c 2.5 -o nl.tsv -q", "nl.tsv");
    expect_threads_agree("info t.extxyz --json", NULL);
    cr_expect(strstr(out_text, "\"nframes\":12") != NULL, "%s", out_text);
    expect_threads_agree("run t.extxyz --read-only --json -q", NULL);
}

Test(reader_pool, compressed_input_and_stdin_match_one_thread)
{
    traj t = many_frames();
    write_traj("t.extxyz", &t);
    cr_assert_eq(sh("gzip -k t.extxyz && xz -k t.extxyz && zstd -q -k t.extxyz"), 0, "%s", err_text);
    cr_assert_eq(mdnl("convert t.extxyz ref.extxyz -q --threads 1"), 0, "%s", err_text);
    const char *inputs[] = {"t.extxyz.gz", "t.extxyz.xz", "t.extxyz.zst"};
    for (int i = 0; i < 3; ++i)
        for (int q = 0; q < NTHREADS; ++q) {
            cr_assert_eq(mdnl("convert %s out.extxyz -q --threads %d", inputs[i], thread_counts[q]), 0, "%s",
                         err_text);
            cr_expect_eq(sh("cmp ref.extxyz out.extxyz"), 0, "%s --threads %d", inputs[i], thread_counts[q]);
        }
    expect_stdin_matches("t.extxyz.gz", "", "ref.extxyz", "out.extxyz");
}

/* A bad atom line in frame `frame` (and a later one in the last frame):
 * the first in file order is reported, as one thread reports it. */
static void expect_first_bad_frame_reported(int frame, const char *line, const char *message_part)
{
    traj t = many_frames();
    t.bads[t.nbad++] = (bad){.frame = frame, .atom = 20, .text = line};
    if (frame != t.frames - 1)
        t.bads[t.nbad++] = (bad){.frame = t.frames - 1, .atom = 3, .text = "Cu 1 2"};
    write_traj("bad.extxyz", &t);
    expect_threads_agree("convert bad.extxyz out.extxyz -q", "out.extxyz");
    cr_expect_eq(mdnl("convert bad.extxyz out.extxyz -q --threads 8"), 3);
    expect_one_error_line();
    char where[64];
    snprintf(where, sizeof where, "frame %d:", frame);
    cr_expect(strstr(err_text, where) && strstr(err_text, message_part), "%s", err_text);
}

Test(reader_pool, first_bad_frame_in_file_order_is_reported)
{
    expect_first_bad_frame_reported(0, "Cu 1.0 x2.0 3.0", "expected a number for coordinate y of atom 20");
    expect_first_bad_frame_reported(5, "Cu 1.0 2.0 nan", "expected a finite coordinate z for atom 20");
    expect_first_bad_frame_reported(11, "Cu 1.0", "expected 7 columns");
}

Test(reader_pool, bad_count_line_and_truncated_file_match_one_thread)
{
    traj t = many_frames();
    t.truncate_at = 10;
    write_traj("trunc.extxyz", &t);
    expect_threads_agree("convert trunc.extxyz out.xyz -q", "out.xyz");
    cr_expect(strstr(err_text, "(the file ends)") != NULL, "%s", err_text);
    /* the truncated frame skipped, not parsed: skipping's message */
    expect_threads_agree("convert trunc.extxyz out.xyz -q --frames ::5", "out.xyz");
    /* frames before a broken one are all a selection ending there needs */
    expect_threads_agree("convert trunc.extxyz out.xyz -q --frames 0:4", "out.xyz");
    cr_expect_eq(mdnl("convert trunc.extxyz out.xyz -q --frames 0:4 --threads 4"), 0, "%s", err_text);
    write_file("count.xyz", "2\n\nC 0 0 0\nC 1 0 0\nthree\n\nC 0 0 0\n");
    expect_threads_agree("convert count.xyz out.xyz -q", "out.xyz");
    cr_expect(strstr(err_text, "count.xyz:5: frame 1: expected an atom count") != NULL, "%s", err_text);
}

Test(reader_pool, huge_count_is_refused_before_allocation)
{
    write_file("huge.xyz", "1000000000000\ncomment\nC 0 0 0\n");
    expect_threads_agree("convert huge.xyz out.xyz -q", "out.xyz");
    cr_expect(strstr(err_text, "expected an atom count the file can hold") != NULL, "%s", err_text);
    /* through a pipe (no size known): arrays grow only with lines actually read */
    for (int q = 0; q < NTHREADS; ++q) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "cat huge.xyz | MDNL_DATA='%s' '%s' convert - out.xyz -q --threads %d",
                 MDNL_DATA_DIR, MDNL_BINARY, thread_counts[q]);
        cr_expect_eq(run_in_tmpdir(cmd), 3, "%s", err_text);
        cr_expect(strstr(err_text, "<stdin>:4: frame 0: expected 1000000000000 atom lines after the count on line 1, "
                                   "found 1 (the file ends)"),
                  "%s", err_text);
    }
}

/* 300,000 atoms: split by ranges of 65,536 lines; a species first seen in
 * the fourth piece, so the pieces' tables are merged. */
static traj split_frame(void)
{
    traj t = {.frames = 3, .truncate_at = -1};
    t.atoms[0] = 10, t.atoms[1] = 300000, t.atoms[2] = 40;
    return t;
}

Test(reader_pool, split_frame_matches_one_thread, .timeout = 300)
{
    traj t = split_frame();
    write_traj("big.extxyz", &t);
    expect_threads_agree("convert big.extxyz out.extxyz -q", "out.extxyz");
    cr_expect_eq(sh("grep -c '^Zr ' out.extxyz"), 0, "the late species is there");
}

/* Split frames back to back, small ones between: more split frames than
 * the scanner keeps in flight, and text buffers of every size handed from
 * frame to frame. */
Test(reader_pool, split_frames_in_a_row_match_one_thread, .timeout = 300)
{
    traj t = {.frames = 6, .truncate_at = -1};
    const int64_t atoms[] = {270000, 20, 270000, 270000, 30, 270000};
    for (int k = 0; k < t.frames; ++k)
        t.atoms[k] = atoms[k];
    write_traj("row.extxyz", &t);
    expect_threads_agree("convert row.extxyz out.extxyz -q", "out.extxyz");
}

Test(reader_pool, bad_line_inside_a_split_frame_is_reported_exactly, .timeout = 300)
{
    traj t = split_frame();
    t.bads[t.nbad++] = (bad){.frame = 1, .atom = 250001, .text = "Zr 1 2 3e"};
    t.bads[t.nbad++] = (bad){.frame = 1, .atom = 290000, .text = "Zr 1 2"};
    write_traj("big.extxyz", &t);
    expect_threads_agree("convert big.extxyz out.extxyz -q", "out.extxyz");
    cr_expect(strstr(err_text, "big.extxyz:250016: frame 1: expected a number for coordinate z of atom 250001") !=
                  NULL,
              "%s", err_text);
}

/* ---- LAMMPS dump ---- */

/* `frames` frames of `dump custom id type x y z` (ids shuffled, changing
 * counts); bad_frame gets bad_line as its atom line 3 (-1: none); the last
 * frame ends after `last_lines` of its lines when >= 0. */
static void write_dump(const char *name, int frames, int bad_frame, const char *bad_line, int last_lines)
{
    FILE *fp = create_in_tmpdir(name);
    uint64_t seed = 3;
    for (int k = 0; k < frames; ++k) {
        const int n = 40 + 13 * k;
        char *buf = NULL;
        size_t len = 0;
        FILE *mem = open_memstream(&buf, &len);
        cr_assert_not_null(mem);
        fprintf(mem, "ITEM: TIMESTEP\n%d\n%sITEM: NUMBER OF ATOMS\n%d\nITEM: BOX BOUNDS pp pp pp\n0 10\n0 11\n0 12\n",
                100 * k, k % 2 ? "ITEM: TIME\n0.5\n" : "", n);
        fprintf(mem, "ITEM: ATOMS id type x y z\n");
        for (int i = 0; i < n; ++i) {
            if (k == bad_frame && i == 3)
                fprintf(mem, "%s\n", bad_line);
            else
                fprintf(mem, "%d %d %.5f %.5f %.5f\n", (i * 17) % n + 1, 1 + i % 3, (double)(lcg(&seed) % 10000) * 1e-3,
                        (double)(lcg(&seed) % 11000) * 1e-3, (double)(lcg(&seed) % 12000) * 1e-3);
        }
        fclose(mem);
        size_t keep = len;
        if (k == frames - 1 && last_lines >= 0) {
            keep = 0;
            for (int l = 0; l < last_lines && keep < len; ++keep)
                l += buf[keep] == '\n';
        }
        fwrite(buf, 1, keep, fp);
        free(buf);
    }
    fclose(fp);
}

Test(reader_pool, lammps_dump_matches_one_thread)
{
    write_dump("t.lammpstrj", 9, -1, NULL, -1);
    expect_threads_agree("convert t.lammpstrj out.extxyz -q --types 1=Cu,2=O,3=H", "out.extxyz");
    expect_threads_agree("convert t.lammpstrj out.extxyz -q --frames 2::3", "out.extxyz");
    cr_assert_eq(sh("gzip -k t.lammpstrj"), 0);
    cr_assert_eq(mdnl("convert t.lammpstrj ref.xyz -q --threads 1"), 0, "%s", err_text);
    expect_stdin_matches("t.lammpstrj.gz", "", "ref.xyz", "out.xyz");
}

Test(reader_pool, lammps_dump_errors_match_one_thread)
{
    const int frames[] = {0, 4, 8};
    for (int i = 0; i < 3; ++i) {
        write_dump("bad.lammpstrj", 9, frames[i], "4 1 1.0 zz 3.0", -1);
        expect_threads_agree("convert bad.lammpstrj out.xyz -q", "out.xyz");
        cr_expect(strstr(err_text, "expected a finite number for coordinate y of atom 3") != NULL, "%s", err_text);
        write_dump("bad.lammpstrj", 9, frames[i], "ITEM: ATOMS id type x y z", -1);
        expect_threads_agree("convert bad.lammpstrj out.xyz -q", "out.xyz");
    }
    for (int cut = 1; cut < 14; cut += 3) { /* inside the header, and inside the atoms */
        write_dump("cut.lammpstrj", 5, -1, NULL, cut);
        expect_threads_agree("convert cut.lammpstrj out.xyz -q", "out.xyz");
        expect_threads_agree("convert cut.lammpstrj out.xyz -q --frames ::3", "out.xyz");
    }
}

/* 10, 300,000 and 40 atoms: the middle frame split across the workers,
 * its ids a permutation (ordered by id after its pieces are put together),
 * a type first seen in its fourth piece; atom `bad_atom` of frame 1 is
 * bad_line (-1: none). */
static void write_big_dump(const char *name, int64_t bad_atom, const char *bad_line)
{
    FILE *fp = create_in_tmpdir(name);
    uint64_t seed = 11;
    const int64_t sizes[3] = {10, 300000, 40};
    for (int k = 0; k < 3; ++k) {
        const int64_t n = sizes[k];
        fprintf(fp,
                "ITEM: TIMESTEP\n%d\nITEM: NUMBER OF ATOMS\n%lld\nITEM: BOX BOUNDS pp pp pp\n0 10\n0 11\n0 12\n"
                "ITEM: ATOMS id type x y z\n",
                100 * k, (long long)n);
        for (int64_t i = 0; i < n; ++i) {
            if (k == 1 && i == bad_atom) {
                fprintf(fp, "%s\n", bad_line);
                continue;
            }
            fprintf(fp, "%lld %lld %.5f %.5f %.5f\n", (long long)((i * 7919) % n + 1),
                    (long long)(i > 200000 ? 4 : 1 + i % 3), (double)(lcg(&seed) % 10000) * 1e-3,
                    (double)(lcg(&seed) % 11000) * 1e-3, (double)(lcg(&seed) % 12000) * 1e-3);
        }
    }
    fclose(fp);
}

Test(reader_pool, lammps_dump_split_frame_matches_one_thread, .timeout = 300)
{
    write_big_dump("big.lammpstrj", -1, NULL);
    expect_threads_agree("convert big.lammpstrj out.extxyz -q --types 1=Cu,2=O,3=H,4=Zr", "out.extxyz");
    cr_expect_eq(sh("grep -c '^Zr ' out.extxyz"), 0, "the late type is there");
    /* frame 1 line 9 + i + 1 after frame 0's 19 lines: atom 250001 is line 250030 */
    write_big_dump("bad.lammpstrj", 250001, "12 1 1.0 2.0 3e");
    expect_threads_agree("convert bad.lammpstrj out.xyz -q", "out.xyz");
    cr_expect(strstr(err_text, "bad.lammpstrj:250030: frame 1: expected a finite number for coordinate z of atom "
                               "250001") != NULL,
              "%s", err_text);
    write_big_dump("twice.lammpstrj", 123456, "1 1 1.0 2.0 3.0"); /* id 1 twice: found once all is parsed */
    expect_threads_agree("convert twice.lammpstrj out.xyz -q", "out.xyz");
    cr_expect(strstr(err_text, "frame 1: expected distinct atom ids, found id 1 twice") != NULL, "%s", err_text);
}

/* ---- GRO ---- */

Test(reader_pool, gro_matches_one_thread)
{
    cr_assert_eq(sh("cp '%s/gro/liquid-4frames.gro' t.gro && gzip -k t.gro", MDNL_DATA_DIR), 0, "%s", err_text);
    expect_threads_agree("convert t.gro out.extxyz -q", "out.extxyz");
    expect_threads_agree("convert t.gro.gz out.extxyz -q --frames 1::2", "out.extxyz");
    /* a bad atom line in frame 2 (and one in frame 3), a bad count in frame 1, a cut last frame */
    cr_assert_eq(sh("(n=$(sed -n 2p t.gro | tr -d ' '); a=$((2 * (n + 3) + 10)); b=$((3 * (n + 3) + 7)); "
                    "sed -e \"${a}s/\\./x/\" -e \"${b}s/\\./x/\" t.gro > bad.gro)"),
                 0, "%s", err_text);
    expect_threads_agree("convert bad.gro out.extxyz -q", "out.extxyz");
    cr_expect(strstr(err_text, "frame 2") != NULL, "%s", err_text);
    cr_assert_eq(sh("(n=$(sed -n 2p t.gro | tr -d ' '); sed -e \"$((n + 5))s/.*/ 12x/\" t.gro > count.gro)"), 0);
    expect_threads_agree("convert count.gro out.extxyz -q", "out.extxyz");
    cr_expect(strstr(err_text, "frame 1: expected the number of atoms") != NULL, "%s", err_text);
    cr_assert_eq(sh("(head -n -5 t.gro > cut.gro)"), 0);
    expect_threads_agree("convert cut.gro out.extxyz -q", "out.extxyz");
    expect_threads_agree("convert cut.gro out.extxyz -q --frames ::2", "out.extxyz");
}

/* ---- PDB ---- */

/* `frames` models of changing sizes; a CRYST1 before the first and a new one
 * inside model 4 (the cell of every model after it); END-separated frames
 * (no MODEL records) when `ends`; frame bad_frame gets bad_line as its atom
 * line 3 (-1: none); the file ends `cut` bytes early when > 0. */
static void write_pdb(const char *name, int frames, bool ends, int bad_frame, const char *bad_line, long cut)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    cr_assert_not_null(mem);
    uint64_t seed = 5;
    static const char *const el[] = {"CU", "O", "H", "ZR"};
    fprintf(mem, "TITLE     pool test\nCRYST1   20.000   21.000   22.000  90.00  90.00  90.00 P 1           1\n");
    for (int k = 0; k < frames; ++k) {
        if (!ends)
            fprintf(mem, "MODEL     %4d\n", k + 1);
        const int n = 30 + 17 * k + (k % 3) * 50;
        for (int i = 0; i < n; ++i) {
            if (k == 4 && i == 5)
                fprintf(mem, "CRYST1   18.000   19.500   23.000  80.00  95.00 100.00 P 1           1\n");
            if (k == bad_frame && i == 3) {
                fprintf(mem, "%s\n", bad_line);
                continue;
            }
            const char *e = el[(i * 5 + k) % (i > 40 ? 4 : 3)];
            fprintf(mem, "%-6s%5d %-4s LIQ X   1    %8.3f%8.3f%8.3f  1.00  0.00          %2s\n",
                    i % 7 ? "ATOM" : "HETATM", i + 1, e, (double)(lcg(&seed) % 20000) * 1e-3,
                    (double)(lcg(&seed) % 21000) * 1e-3, (double)(lcg(&seed) % 22000) * 1e-3, e);
            if (i % 25 == 24)
                fprintf(mem, "TER\n");
        }
        fprintf(mem, ends ? "END\n" : "ENDMDL\n");
    }
    if (!ends)
        fprintf(mem, "CONECT    1    2\nEND\n");
    fclose(mem);
    FILE *fp = create_in_tmpdir(name);
    fwrite(buf, 1, cut > 0 && (size_t)cut < len ? len - (size_t)cut : len, fp);
    fclose(fp);
    free(buf);
}

Test(reader_pool, pdb_matches_one_thread)
{
    for (int ends = 0; ends < 2; ++ends) {
        write_pdb("t.pdb", 12, ends, -1, NULL, 0);
        expect_threads_agree("convert t.pdb out.extxyz -q", "out.extxyz");
        cr_expect(strstr(out_text, "") != NULL);
        expect_threads_agree("convert t.pdb out.extxyz -q --frames 1:11:3", "out.extxyz");
        expect_threads_agree("convert t.pdb out.extxyz -q --frames 6:", "out.extxyz");
        expect_threads_agree("neighbors t.pdb -c 3 -o nl.tsv -q", "nl.tsv");
        expect_threads_agree("info t.pdb --json", NULL);
        cr_expect(strstr(out_text, "\"nframes\":12") != NULL, "%s", out_text);
    }
    /* the cell of model 4 holds for the models after it */
    cr_assert_eq(mdnl("convert t.pdb out.extxyz -q --threads 4 --frames 7"), 0, "%s", err_text);
    char buf[1 << 16], p[512];
    snprintf(p, sizeof p, "%s/out.extxyz", tmpdir);
    slurp(p, buf, sizeof buf);
    cr_expect(strstr(buf, "Lattice=\"18") != NULL, "%.300s", buf);
    cr_assert_eq(sh("gzip -k t.pdb"), 0);
    cr_assert_eq(mdnl("convert t.pdb ref.xyz -q --threads 1"), 0, "%s", err_text);
    expect_stdin_matches("t.pdb.gz", "--format pdb", "ref.xyz", "out.xyz");
}

Test(reader_pool, pdb_errors_match_one_thread)
{
    static const char *const lines[] = {
        "ATOM      4 CU   LIQ X   1       1.000   zz      3.000  1.00  0.00          CU",
        "CRYST1    0.000   21.000   22.000  90.00  90.00  90.00 P 1           1",
        "MODEL        99",
        "ATOM      4      LIQ X   1       1.000   2.000   3.000  1.00  0.00            ", /* no name */
    };
    const int frames[] = {0, 5, 11};
    for (int l = 0; l < 4; ++l)
        for (int i = 0; i < 3; ++i) {
            write_pdb("bad.pdb", 12, false, frames[i], lines[l], 0);
            const int rc = expect_threads_agree("convert bad.pdb out.xyz -q", "out.xyz");
            cr_expect_eq(rc, 3, "%s", lines[l]);
            char where[64];
            snprintf(where, sizeof where, "frame %d:", frames[i]);
            cr_expect(strstr(err_text, where) != NULL, "%s: %s", lines[l], err_text);
            /* a bad frame not selected: skipping's check and message */
            expect_threads_agree("convert bad.pdb out.xyz -q --frames 1::2", "out.xyz");
            expect_threads_agree("convert bad.pdb out.xyz -q --frames 0:5", "out.xyz");
        }
    for (long cut = 1; cut < 400; cut += 57) { /* inside the last model, in CONECT / END */
        write_pdb("cut.pdb", 6, false, -1, NULL, cut);
        expect_threads_agree("convert cut.pdb out.xyz -q", "out.xyz");
        expect_threads_agree("convert cut.pdb out.xyz -q --frames ::2", "out.xyz");
    }
    write_file("empty.pdb", "");
    expect_threads_agree("convert empty.pdb out.xyz -q --format pdb", "out.xyz");
    write_file("remark.pdb", "REMARK nothing\nREMARK here\n");
    expect_threads_agree("convert remark.pdb out.xyz -q", "out.xyz");
    cr_expect(strstr(err_text, "expected ATOM or HETATM records, found none") != NULL, "%s", err_text);
    /* long stretches outside the models (dropped by the scanner as they come), a cell among them */
    FILE *fp = create_in_tmpdir("remarks.pdb");
    for (int m = 0; m < 2; ++m) {
        for (int i = 0; i < 60000; ++i)
            fprintf(fp, "REMARK   %d line %d\n", m, i);
        if (m == 1)
            fprintf(fp, "CRYST1   30.000   31.000   32.000  90.00  90.00  90.00 P 1           1\n");
        fprintf(fp, "MODEL     %4d\n", m + 1);
        for (int i = 0; i < 40; ++i)
            fprintf(fp, "ATOM  %5d CU   LIQ X   1    %8.3f%8.3f%8.3f  1.00  0.00          CU\n", i + 1, 0.5 * i,
                    0.25 * i + m, 0.125 * i);
        fprintf(fp, "ENDMDL\n");
    }
    for (int i = 0; i < 60000; ++i)
        fprintf(fp, "CONECT%5d%5d\n", i % 40 + 1, (i + 1) % 40 + 1);
    fclose(fp);
    cr_assert_eq(expect_threads_agree("convert remarks.pdb out.extxyz -q", "out.extxyz"), 0, "%s", err_text);
    cr_assert_eq(sh("grep -c 'Lattice=\"30' out.extxyz"), 0, "the cell between the models holds for model 2");
    fp = create_in_tmpdir("none.pdb");
    for (int i = 0; i < 100000; ++i)
        fputs("REMARK\n", fp);
    fclose(fp);
    expect_threads_agree("convert none.pdb out.xyz -q", "out.xyz");
    cr_expect(strstr(err_text, "none.pdb:100000: expected ATOM or HETATM records") != NULL, "%s", err_text);
    write_file("tail.pdb", "MODEL 1\nATOM      1 CU   LIQ X   1       1.000   2.000   3.000  1.00  0.00          CU\n"
                           "ENDMDL\nCRYST1    0.000 bad\n");
    expect_threads_agree("convert tail.pdb out.xyz -q", "out.xyz");
    cr_expect(strstr(err_text, "tail.pdb:4: frame 1: expected a b c") != NULL, "%s", err_text);
}

/* ---- the frame allocator (a pipeline's pinned memory once its engine is up) ---- */

/* Blocks carry the allocator's mark; the blocks the test's own thread (the
 * reader's caller) allocates are counted: it allocates only when a parsed
 * frame is copied into the caller's frame and does not fit. */
typedef struct tagged {
    atomic_long blocks, caller_blocks;
    pthread_t caller;
} tagged;

#define TAG_MAGIC 0x6d646e6c74616721ull
#define TAG_HEAD 64

static void *tagged_alloc(size_t bytes, const char *what, void *ctx)
{
    (void)what;
    tagged *t = ctx;
    unsigned char *b = malloc(bytes + TAG_HEAD);
    cr_assert_not_null(b);
    const uint64_t magic = TAG_MAGIC;
    memcpy(b, &magic, sizeof magic);
    atomic_fetch_add(&t->blocks, 1);
    if (pthread_equal(pthread_self(), t->caller))
        atomic_fetch_add(&t->caller_blocks, 1);
    return b + TAG_HEAD;
}

static void tagged_free(void *p, void *ctx)
{
    (void)ctx;
    if (p) {
        unsigned char *b = (unsigned char *)p - TAG_HEAD;
        memset(b, 0, sizeof(uint64_t));
        free(b);
    }
}

static bool is_tagged(const void *p)
{
    uint64_t magic;
    memcpy(&magic, (const unsigned char *)p - TAG_HEAD, sizeof magic);
    return magic == TAG_MAGIC;
}

Test(reader_pool, frames_follow_the_allocator_the_caller_switches_to)
{
    /* growing frames, so that a copy into the caller's frame must allocate */
    traj t = {.frames = 16, .truncate_at = -1};
    for (int k = 0; k < t.frames; ++k)
        t.atoms[k] = 100 + 250 * k;
    write_traj("grow.extxyz", &t);
    char path[512];
    snprintf(path, sizeof path, "%s/grow.extxyz", tmpdir);
    const int workers = 4, in_flight = workers + 2, before = 3;
    tagged tag = {.caller = pthread_self()};
    const mdnl_frame_allocator alloc = {.alloc = tagged_alloc, .free = tagged_free, .ctx = &tag};
    mdnl_reader *one, *pool;
    mdnl_read_options o1 = {.threads = 1}, o4 = {.threads = workers};
    cr_assert_eq(mdnl_reader_open(path, &o1, &one), MDNL_OK, "%s", mdnl_last_error());
    cr_assert_eq(mdnl_reader_open(path, &o4, &pool), MDNL_OK, "%s", mdnl_last_error());
    mdnl_frame ref = {0}, f = {0};
    for (int k = 0; k < t.frames; ++k) {
        if (k == before) { /* the engine is up: its memory from now on */
            mdnl_frame_free(&f);
            f.pos_alloc = &alloc;
        }
        const long caller0 = atomic_load(&tag.caller_blocks);
        const void *old = f.pos;
        cr_assert_eq(mdnl_reader_next(one, &ref), MDNL_OK, "%s", mdnl_last_error());
        cr_assert_eq(mdnl_reader_next(pool, &f), MDNL_OK, "%s", mdnl_last_error());
        /* a copy lands in the caller's own arrays, grown on the caller's thread when too small */
        const bool copied = f.pos == old || atomic_load(&tag.caller_blocks) != caller0;
        cr_assert_eq(f.natoms, ref.natoms);
        cr_expect_eq(memcmp(f.pos, ref.pos, (size_t)f.natoms * sizeof *f.pos), 0, "frame %d", k);
        cr_expect_eq(memcmp(f.species, ref.species, (size_t)f.natoms * sizeof *f.species), 0, "frame %d", k);
        cr_expect_eq(f.nspecies, ref.nspecies);
        if (k >= before) {
            cr_expect(f.pos_alloc == &alloc && is_tagged(f.pos), "frame %d: in the new allocator's memory", k);
            if (k >= before + in_flight) /* parsed after the switch: handed over, not copied */
                cr_expect(!copied, "frame %d was copied into the caller's frame", k);
        }
    }
    cr_expect_eq(mdnl_reader_next(pool, &f), MDNL_END);
    cr_expect_gt(atomic_load(&tag.blocks), 0);
    mdnl_frame_free(&f);
    mdnl_frame_free(&ref);
    mdnl_reader_close(pool);
    mdnl_reader_close(one);
}

/* 10, 300,000 and 40 atoms in GRO's layout; a name first seen in the
 * middle frame's fourth piece; line bad_line (1-based, > 0) replaced by
 * bad_text. */
static void write_big_gro(const char *name, long bad_line, const char *bad_text)
{
    FILE *fp = create_in_tmpdir(name);
    uint64_t seed = 13;
    const int64_t sizes[3] = {10, 300000, 40};
    long line = 0;
    static const char *const names[] = {"CU", "O", "H"};
    for (int k = 0; k < 3; ++k) {
        const int64_t n = sizes[k];
        fprintf(fp, "big t= %d.5 step= %d\n%5lld\n", k, 10 * k, (long long)n);
        line += 2;
        for (int64_t i = 0; i < n; ++i) {
            if (++line == bad_line) {
                fprintf(fp, "%s\n", bad_text);
                continue;
            }
            fprintf(fp, "%5lld%-5s%5s%5lld%8.3f%8.3f%8.3f\n", (long long)(i / 3 + 1) % 100000, "LIQ",
                    i > 200000 ? "ZR" : names[(i * 7) % 3], (long long)(i + 1) % 100000,
                    (double)(lcg(&seed) % 5000) * 1e-3, (double)(lcg(&seed) % 5000) * 1e-3,
                    (double)(lcg(&seed) % 5000) * 1e-3);
        }
        if (++line == bad_line)
            fprintf(fp, "%s\n", bad_text);
        else
            fprintf(fp, "   5.00000   5.00000   5.00000\n");
    }
    fclose(fp);
}

Test(reader_pool, gro_split_frame_matches_one_thread, .timeout = 300)
{
    write_big_gro("big.gro", -1, NULL);
    expect_threads_agree("convert big.gro out.extxyz -q", "out.extxyz");
    cr_expect_eq(sh("grep -c '^ZR ' out.extxyz"), 0, "the late name is there");
    /* frame 0: 13 lines; frame 1: title, count, atom i on line 16 + i */
    write_big_gro("bad.gro", 16 + 250001, "  123LIQ     CU  124   1.000   x.000   3.000");
    expect_threads_agree("convert bad.gro out.xyz -q", "out.xyz");
    cr_expect(strstr(err_text, "bad.gro:250017: frame 1: expected a finite number for coordinate y of atom 250001") !=
                  NULL,
              "%s", err_text);
    write_big_gro("box.gro", 16 + 300000, "   5.00000   5.00000"); /* the split frame's box line */
    expect_threads_agree("convert box.gro out.xyz -q", "out.xyz");
    cr_expect(strstr(err_text, "box.gro:300016: frame 1: expected 3 or 9 numbers on the box line") != NULL, "%s",
              err_text);
    write_big_gro("first.gro", 16, "  123LIQ     CU  124   1.000"); /* the first atom line sets the layout */
    expect_threads_agree("convert first.gro out.xyz -q", "out.xyz");
}

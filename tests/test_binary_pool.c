/* test_binary_pool.c — XTC, DCD and TRR frames decoded by worker threads
 * (io/binary_pool.c under io/xtc_reader.c, io/dcd_reader.c and
 * io/trr_reader.c): the frames, the files mdnl writes from them and the
 * errors are one thread's, for 2, 3 and 8 threads; frames a --frames
 * selection leaves out are not decoded; positions land in memory of the
 * caller's frame allocator, and one thread decodes into the caller's frame.
 *
 * Inputs: data/binary/ (MDAnalysis' XTC, DCD and TRR), a larger DCD and XTC
 * made with `mdnl gen` and `mdnl convert`, and TRRs written here (float and
 * double, with velocity-only frames between), corrupted at the first, a
 * middle and the last frame. */
#define _POSIX_C_SOURCE 200809L
#include "cli_test_util.h"

#include "frame.h"
#include "reader.h"
#include "xdr.h"

#include <math.h>
#include <stdint.h>

TestSuite(binary_pool, .init = make_tmpdir, .fini = remove_tmpdir);

#define BIN MDNL_DATA_DIR "/binary/"

static const int thread_counts[] = {2, 3, 8};
#define NTHREADS (int)(sizeof thread_counts / sizeof *thread_counts)

static void tmp_path(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s%s%s", name[0] == '/' ? "" : tmpdir, name[0] == '/' ? "" : "/", name);
}

static void write_bytes(const char *name, const uint8_t *b, size_t n)
{
    char p[512];
    tmp_path(p, sizeof p, name);
    FILE *fp = fopen(p, "wb");
    cr_assert_not_null(fp);
    cr_assert_eq(fwrite(b, 1, n, fp), n);
    fclose(fp);
}

/* The bytes of a file (in tmpdir unless absolute); the caller frees. */
static uint8_t *read_bytes(const char *name, size_t *n)
{
    char p[512];
    tmp_path(p, sizeof p, name);
    FILE *fp = fopen(p, "rb");
    cr_assert_not_null(fp, "%s", p);
    fseek(fp, 0, SEEK_END);
    *n = (size_t)ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *b = malloc(*n + 1);
    cr_assert_eq(fread(b, 1, *n, fp), *n);
    fclose(fp);
    return b;
}

/* ---- inputs ---- */

/* A TRR of `nframes` frames with positions of `natoms` atoms in `real`-byte
 * reals (4 or 8), a triclinic box, velocities in every second frame and a
 * velocity-only frame before every third one. x_at[k] gets the offset of
 * frame k's x block, head_at[k] of its header. */
static void make_trr(const char *name, int nframes, int natoms, int real, int64_t *x_at, int64_t *head_at)
{
    const size_t cap = (size_t)nframes * 2 * (24 + 52 + 16 + 72 + 2 * 24 * (size_t)natoms);
    uint8_t *b = calloc(1, cap);
    size_t p = 0;
    uint32_t seed = 12345;
    int k = 0;
    for (int rec = 0; k < nframes; ++rec) {
        const bool vonly = rec % 3 == 2, with_v = !vonly && k % 2 == 1;
        const int32_t vec = 3 * natoms * real;
        mdnl_put_be32(b + p, 1993), mdnl_put_be32(b + p + 4, 13), mdnl_put_be32(b + p + 8, 12);
        memcpy(b + p + 12, "GMX_trn_file", 12);
        if (!vonly)
            head_at[k] = (int64_t)p;
        p += 24;
        const int32_t v[13] = {0, 0, 9 * real, 0, 0, 0, 0, vonly ? 0 : vec, vonly || with_v ? vec : 0, 0, natoms,
                               100 * rec, 0};
        for (int q = 0; q < 13; ++q)
            mdnl_put_be32(b + p + 4 * q, (uint32_t)v[q]);
        p += 52;
        const double t = 0.5 * rec;
        if (real == 4) {
            mdnl_put_be_f32(b + p, (float)t), mdnl_put_be_f32(b + p + 4, 0);
        } else {
            uint64_t u;
            memcpy(&u, &t, 8);
            mdnl_put_be32(b + p, (uint32_t)(u >> 32)), mdnl_put_be32(b + p + 4, (uint32_t)u);
            memset(b + p + 8, 0, 8);
        }
        p += 2 * (size_t)real;
        const int blocks = 1 + (vonly ? 0 : 1) + (vonly || with_v ? 1 : 0);
        for (int blk = 0; blk < blocks; ++blk) {
            const int nvals = blk == 0 ? 9 : 3 * natoms;
            if (blk == 1 && !vonly)
                x_at[k] = (int64_t)p;
            for (int q = 0; q < nvals; ++q) {
                double val;
                if (blk == 0)
                    val = q == 0 ? 3.0 : q == 4 ? 3.25 : q == 8 ? 3.5 : q == 3 ? 0.5 : 0.0;
                else {
                    seed = seed * 1664525u + 1013904223u;
                    val = 3.0 * (seed >> 8) / 16777216.0;
                }
                if (real == 4) {
                    mdnl_put_be_f32(b + p, (float)val);
                } else {
                    uint64_t u;
                    memcpy(&u, &val, 8);
                    mdnl_put_be32(b + p, (uint32_t)(u >> 32)), mdnl_put_be32(b + p + 4, (uint32_t)u);
                }
                p += (size_t)real;
            }
        }
        if (!vonly)
            ++k;
    }
    cr_assert(p <= cap);
    write_bytes(name, b, p);
    free(b);
}

/* big.dcd: 12 frames of 1,024 atoms (noisy graphene sheets), by `mdnl gen`
 * and `mdnl convert`. */
static void make_big_dcd(void)
{
    for (int s = 1; s <= 12; ++s)
        cr_assert_eq(mdnl("gen graphene --nx 16 --ny 16 --noise 0.05 --seed %d -o g%02d.extxyz -q", s, s), 0, "%s",
                     err_text);
    cr_assert_eq(sh("cat g*.extxyz > big.extxyz && rm g*.extxyz"), 0);
    cr_assert_eq(mdnl("convert big.extxyz big.dcd -q"), 0, "%s", err_text);
}

/* big.xtc: big.extxyz (make_big_dcd's) by `mdnl convert`. */
static void make_big_xtc(void)
{
    make_big_dcd();
    cr_assert_eq(mdnl("convert big.extxyz big.xtc -q"), 0, "%s", err_text);
}

/* XTC layout (compressed frames, more than 9 atoms): frame k's offset, from
 * the byte counts of the frames before it. */
static int64_t xtc_frame_at(const char *name, int k)
{
    size_t n;
    uint8_t *b = read_bytes(name, &n);
    size_t at = 0;
    for (int q = 0; q < k; ++q) {
        cr_assert(at + 92 <= n && mdnl_be32(b + at) == 1995 && mdnl_be32(b + at + 4) > 9, "frame %d", q);
        at += 92 + ((mdnl_be32(b + at + 88) + 3) & ~3u);
    }
    cr_assert(at + 92 <= n && mdnl_be32(b + at) == 1995, "frame %d at %zu", k, at);
    free(b);
    return (int64_t)at;
}

/* DCD layout of a file with a unit cell: frame k's offset. */
static int64_t dcd_frame_at(const char *name, int64_t natoms, int nframes, int k)
{
    size_t n;
    free(read_bytes(name, &n));
    const int64_t frame_bytes = 56 + 3 * (8 + 4 * natoms);
    return (int64_t)n - (int64_t)(nframes - k) * frame_bytes;
}

/* ---- reading ---- */

typedef struct frames {
    int n;
    mdnl_frame f[64];
} frames;

static mdnl_reader *open_reader(const char *name, int threads)
{
    char p[512];
    tmp_path(p, sizeof p, name);
    mdnl_read_options ro = {.threads = threads};
    mdnl_reader *r = NULL;
    cr_assert_eq(mdnl_reader_open(p, &ro, &r), MDNL_OK, "%s", mdnl_last_error());
    return r;
}

/* Every frame of `name` read with `threads` workers; the status that ended
 * the reading, its message in msg. */
static mdnl_status read_frames(const char *name, int threads, frames *out, char *msg, size_t cap)
{
    mdnl_reader *r = open_reader(name, threads);
    out->n = 0;
    mdnl_status st;
    for (;;) {
        cr_assert(out->n < 64);
        mdnl_frame *f = &out->f[out->n];
        memset(f, 0, sizeof *f);
        if ((st = mdnl_reader_next(r, f)) != MDNL_OK)
            break;
        out->n++;
    }
    mdnl_frame_free(&out->f[out->n]);
    snprintf(msg, cap, "%s", st == MDNL_END ? "" : mdnl_last_error());
    mdnl_reader_close(r);
    return st;
}

static void free_frames(frames *fr)
{
    for (int k = 0; k < fr->n; ++k)
        mdnl_frame_free(&fr->f[k]);
    fr->n = 0;
}

static void expect_same_frame(const mdnl_frame *a, const mdnl_frame *b, const char *what)
{
    cr_expect_eq(a->index, b->index, "%s", what);
    cr_expect_eq(a->natoms, b->natoms, "%s", what);
    cr_expect_eq(a->step, b->step, "%s", what);
    cr_expect(a->time == b->time, "%s: time", what);
    cr_expect(memcmp(&a->box, &b->box, sizeof a->box) == 0, "%s: box", what);
    cr_expect(a->natoms == b->natoms && memcmp(a->pos, b->pos, (size_t)a->natoms * sizeof *a->pos) == 0,
              "%s frame %lld: positions differ", what, (long long)a->index);
    cr_expect(a->nspecies == 1 && b->nspecies == 1 && !strcmp(b->symbols[0], "X"), "%s", what);
}

/* Frames, the final status and its message: for 2, 3 and 8 threads those of
 * one thread. Returns how many frames one thread read. */
static int expect_threads_agree(const char *name, mdnl_status want_end, const char *want_in_message)
{
    static frames one, many;
    char m1[1024], mt[1024];
    mdnl_status s1 = read_frames(name, 1, &one, m1, sizeof m1);
    cr_expect_eq(s1, want_end, "%s: %s", name, m1);
    if (want_in_message)
        cr_expect(strstr(m1, want_in_message) != NULL, "%s: \"%s\" lacks \"%s\"", name, m1, want_in_message);
    for (int t = 0; t < NTHREADS; ++t) {
        mdnl_status st = read_frames(name, thread_counts[t], &many, mt, sizeof mt);
        char what[600];
        snprintf(what, sizeof what, "%s, %d threads", name, thread_counts[t]);
        cr_expect_eq(st, s1, "%s: %s", what, mt);
        cr_expect_str_eq(mt, m1, "%s", what);
        cr_expect_eq(many.n, one.n, "%s", what);
        for (int k = 0; k < one.n && k < many.n; ++k)
            expect_same_frame(&one.f[k], &many.f[k], what);
        free_frames(&many);
    }
    const int n = one.n;
    free_frames(&one);
    return n;
}

/* `mdnl ARGS --threads T` writes the same bytes and stderr for T = 1, 2, 3
 * and 8 (OUT is the output's name in ARGS, "%s" its place). */
static void expect_cli_agrees(const char *args_fmt, int want_status)
{
    char args[512];
    static char first_err[sizeof err_text];
    size_t n1 = 0;
    uint8_t *out1 = NULL;
    static const int all[] = {1, 2, 3, 8};
    for (int t = 0; t < 4; ++t) {
        snprintf(args, sizeof args, args_fmt, "out.bin");
        int rc = mdnl("%s --threads %d -q", args, all[t]);
        cr_expect_eq(rc, want_status, "%s --threads %d: %s", args, all[t], err_text);
        if (want_status != 0) {
            char p[512];
            snprintf(p, sizeof p, "%s/out.bin", tmpdir);
            cr_expect(access(p, F_OK) != 0, "%s --threads %d left an output", args, all[t]);
            expect_one_error_line();
            if (t == 0)
                memcpy(first_err, err_text, sizeof first_err);
            else
                cr_expect_str_eq(err_text, first_err, "%s --threads %d", args, all[t]);
            continue;
        }
        size_t n;
        uint8_t *out = read_bytes("out.bin", &n);
        if (t == 0) {
            out1 = out, n1 = n;
            cr_expect(n1 > 0, "%s: empty output", args);
            continue;
        }
        cr_expect(n == n1 && memcmp(out, out1, n) == 0, "%s: --threads %d writes other bytes", args, all[t]);
        free(out);
    }
    free(out1);
    char p[512];
    snprintf(p, sizeof p, "%s/out.bin", tmpdir);
    unlink(p); /* err_text stays the last run's */
}

/* ---- same frames, same bytes ---- */

Test(binary_pool, dcd_frames_and_outputs_are_one_threads_for_any_thread_count)
{
    static const char *const fixtures[] = {BIN "w60-cell.dcd", BIN "w60-cell-be.dcd", BIN "w60-nocell.dcd",
                                           BIN "mixture.dcd"};
    for (int k = 0; k < 4; ++k) {
        cr_expect_eq(expect_threads_agree(fixtures[k], MDNL_END, NULL), k == 3 ? 10 : 3, "%s", fixtures[k]);
        char args[600];
        snprintf(args, sizeof args, "convert %s %%s --to extxyz", fixtures[k]);
        expect_cli_agrees(args, 0);
    }
    make_big_dcd();
    cr_expect_eq(expect_threads_agree("big.dcd", MDNL_END, NULL), 12);
    expect_cli_agrees("convert big.dcd %s --to extxyz", 0);
    expect_cli_agrees("convert big.dcd %s --to extxyz --frames 1:11:3", 0);
    expect_cli_agrees("neighbors big.dcd -c 1.6 -o %s", 0);
    expect_cli_agrees("rdf big.dcd --rmax 5 --bins 50 -o %s", 0);
}

Test(binary_pool, trr_frames_and_outputs_are_one_threads_for_any_thread_count)
{
    cr_expect_eq(expect_threads_agree(BIN "w60.trr", MDNL_END, NULL), 3);
    expect_cli_agrees("convert " BIN "w60.trr %s --to extxyz", 0);
    int64_t x_at[40], head_at[40];
    make_trr("f.trr", 40, 300, 4, x_at, head_at);
    make_trr("d.trr", 17, 1000, 8, x_at, head_at);
    cr_expect_eq(expect_threads_agree("f.trr", MDNL_END, NULL), 40);
    cr_expect_eq(expect_threads_agree("d.trr", MDNL_END, NULL), 17);
    expect_cli_agrees("convert f.trr %s --to extxyz", 0);
    expect_cli_agrees("convert d.trr %s --to extxyz --frames 2::5", 0);
    expect_cli_agrees("neighbors d.trr -c 3 -o %s", 0);
    cr_assert_eq(mdnl("info d.trr --json --threads 3"), 0, "%s", err_text);
    cr_expect(strstr(out_text, "\"nframes\":17") != NULL, "%s", out_text);
}

Test(binary_pool, xtc_frames_and_outputs_are_one_threads_for_any_thread_count)
{
    static const char *const fixtures[] = {BIN "w60.xtc", BIN "w5.xtc", BIN "w60-p100.xtc", BIN "mixture.xtc"};
    for (int k = 0; k < 4; ++k) {
        cr_expect_eq(expect_threads_agree(fixtures[k], MDNL_END, NULL), k == 3 ? 10 : 3, "%s", fixtures[k]);
        char args[600];
        snprintf(args, sizeof args, "convert %s %%s --to extxyz", fixtures[k]);
        expect_cli_agrees(args, 0);
    }
    make_big_xtc();
    cr_expect_eq(expect_threads_agree("big.xtc", MDNL_END, NULL), 12);
    expect_cli_agrees("convert big.xtc %s --to extxyz", 0);
    expect_cli_agrees("convert big.xtc %s --to extxyz --frames 1:11:3", 0);
    expect_cli_agrees("neighbors big.xtc -c 1.6 -o %s", 0);
    expect_cli_agrees("rdf big.xtc --rmax 5 --bins 50 -o %s", 0);
}

/* ---- the same errors ---- */

/* A copy of `src` (tmpdir) as `dst` with `n` bytes at `at` replaced, or cut
 * at `at` when bytes is NULL. */
static void corrupt(const char *src, const char *dst, int64_t at, const void *bytes, size_t n)
{
    size_t size;
    uint8_t *b = read_bytes(src, &size);
    cr_assert((size_t)at + (bytes ? n : 0) <= size);
    if (bytes)
        memcpy(b + at, bytes, n);
    write_bytes(dst, b, bytes ? size : (size_t)at);
    free(b);
}

static const int positions[3] = {0, 5, 11}; /* first, middle, last of 12 frames */

Test(binary_pool, dcd_bad_frame_is_reported_in_order_with_one_threads_message)
{
    make_big_dcd();
    const int64_t n = 1024, rec = 8 + 4 * n;
    const uint8_t bad_marker[4] = {1, 2, 3, 4}, nan[4] = {0, 0, 0xc0, 0x7f}; /* little-endian NaN */
    for (int q = 0; q < 3; ++q) {
        const int k = positions[q];
        const int64_t at = dcd_frame_at("big.dcd", n, 12, k);
        char want[64];
        snprintf(want, sizeof want, "bad.dcd: frame %d, byte ", k);
        /* the Y record's start marker */
        corrupt("big.dcd", "bad.dcd", at + 56 + rec, bad_marker, 4);
        cr_expect_eq(expect_threads_agree("bad.dcd", MDNL_ERR_INPUT, want), k);
        expect_cli_agrees("convert bad.dcd %s --to extxyz", 3);
        cr_expect(strstr(err_text, "found a marker of") != NULL, "%s", err_text);
        /* the Z record's end marker */
        corrupt("big.dcd", "bad.dcd", at + 56 + 3 * rec - 4, bad_marker, 4);
        cr_expect_eq(expect_threads_agree("bad.dcd", MDNL_ERR_INPUT, "expected the end marker"), k);
        /* a NaN as the unit cell's A */
        const uint8_t nan64[8] = {0, 0, 0, 0, 0, 0, 0xf8, 0x7f};
        corrupt("big.dcd", "bad.dcd", at + 4, nan64, 8);
        cr_expect_eq(expect_threads_agree("bad.dcd", MDNL_ERR_INPUT, "expected a unit cell"), k);
        /* a NaN at atom 700 of Z */
        corrupt("big.dcd", "bad.dcd", at + 56 + 2 * rec + 4 + 4 * 700, nan, 4);
        cr_expect_eq(expect_threads_agree("bad.dcd", MDNL_ERR_INPUT, "non-finite one at atom 700"), k);
        expect_cli_agrees("neighbors bad.dcd -c 1.6 -o %s", 3);
        /* cut inside the frame (frames after it are gone with it; a file
         * without one whole frame is refused when it is opened) */
        corrupt("big.dcd", "bad.dcd", at + 100, NULL, 0);
        if (k > 0)
            cr_expect_eq(expect_threads_agree("bad.dcd", MDNL_ERR_INPUT, "(truncated frame)"), k);
        expect_cli_agrees("convert bad.dcd %s --to extxyz", 3);
        cr_expect(strstr(err_text, want) != NULL, "%s", err_text);
    }
}

Test(binary_pool, trr_bad_frame_is_reported_in_order_with_one_threads_message)
{
    int64_t x_at[12], head_at[12];
    make_trr("good.trr", 12, 500, 4, x_at, head_at);
    const uint8_t bad_magic[4] = {0, 0, 0x07, 0xca}, nan[4] = {0x7f, 0xc0, 0, 0}; /* big-endian NaN */
    for (int q = 0; q < 3; ++q) {
        const int k = positions[q];
        char want[64];
        snprintf(want, sizeof want, "bad.trr: frame %d, byte ", k);
        /* the header: found in order by the reading thread */
        corrupt("good.trr", "bad.trr", head_at[k], bad_magic, 4);
        cr_expect_eq(expect_threads_agree("bad.trr", MDNL_ERR_INPUT, want), k);
        expect_cli_agrees("convert bad.trr %s --to extxyz", 3);
        cr_expect(strstr(err_text, "magic number 1993") != NULL, "%s", err_text);
        /* a NaN at atom 321: found by a worker */
        corrupt("good.trr", "bad.trr", x_at[k] + 4 * (3 * 321 + 1), nan, 4);
        cr_expect_eq(expect_threads_agree("bad.trr", MDNL_ERR_INPUT, "non-finite one at atom 321"), k);
        expect_cli_agrees("convert bad.trr %s --to extxyz", 3);
        cr_expect(strstr(err_text, want) != NULL, "%s", err_text);
        /* a NaN in the box */
        corrupt("good.trr", "bad.trr", x_at[k] - 36 + 8, nan, 4);
        cr_expect_eq(expect_threads_agree("bad.trr", MDNL_ERR_INPUT, "finite box"), k);
        /* cut inside the frame's positions */
        corrupt("good.trr", "bad.trr", x_at[k] + 40, NULL, 0);
        cr_expect_eq(expect_threads_agree("bad.trr", MDNL_ERR_INPUT, "(truncated frame)"), k);
        expect_cli_agrees("convert bad.trr %s --to extxyz", 3);
        cr_expect(strstr(err_text, want) != NULL, "%s", err_text);
    }
}

Test(binary_pool, xtc_bad_frame_is_reported_in_order_with_one_threads_message)
{
    make_big_xtc();
    const uint8_t bad_magic[4] = {0, 0, 0x07, 0xca}, small5[4] = {0, 0, 0, 5}, huge[4] = {0x7f, 0, 0, 0};
    const uint8_t nan[4] = {0x7f, 0xc0, 0, 0}; /* big-endian NaN */
    for (int q = 0; q < 3; ++q) {
        const int k = positions[q];
        const int64_t at = xtc_frame_at("big.xtc", k);
        char want[64];
        snprintf(want, sizeof want, "bad.xtc: frame %d, byte ", k);
        /* the header: found in order by the reading thread */
        corrupt("big.xtc", "bad.xtc", at, bad_magic, 4);
        cr_expect_eq(expect_threads_agree("bad.xtc", MDNL_ERR_INPUT, want), k);
        expect_cli_agrees("convert bad.xtc %s --to extxyz", 3);
        cr_expect(strstr(err_text, "magic number 1995") != NULL, "%s", err_text);
        /* a byte count past the end of the file */
        corrupt("big.xtc", "bad.xtc", at + 88, huge, 4);
        cr_expect_eq(expect_threads_agree("bad.xtc", MDNL_ERR_INPUT, "compressed byte count within"), k);
        /* a small-number size index out of range: found by a worker */
        corrupt("big.xtc", "bad.xtc", at + 84, small5, 4);
        cr_expect_eq(expect_threads_agree("bad.xtc", MDNL_ERR_INPUT, "small-number size index"), k);
        expect_cli_agrees("convert bad.xtc %s --to extxyz", 3);
        cr_expect(strstr(err_text, want) != NULL, "%s", err_text);
        /* a NaN in the box */
        corrupt("big.xtc", "bad.xtc", at + 16 + 4 * 4, nan, 4);
        cr_expect_eq(expect_threads_agree("bad.xtc", MDNL_ERR_INPUT, "finite box"), k);
        expect_cli_agrees("neighbors bad.xtc -c 1.6 -o %s", 3);
        /* cut inside the frame's compressed coordinates */
        corrupt("big.xtc", "bad.xtc", at + 100, NULL, 0);
        cr_expect_eq(expect_threads_agree("bad.xtc", MDNL_ERR_INPUT, "compressed byte count within"), k);
        expect_cli_agrees("convert bad.xtc %s --to extxyz", 3);
        cr_expect(strstr(err_text, want) != NULL, "%s", err_text);
    }
}

/* ---- selections ---- */

/* A frame --frames leaves out is not decoded (its NaN goes unseen, as with
 * one thread) but a frame that cannot be found still fails; a skip walks
 * over an undecodable frame. */
Test(binary_pool, frames_left_out_are_not_decoded)
{
    int64_t x_at[12], head_at[12];
    make_trr("good.trr", 12, 500, 4, x_at, head_at);
    const uint8_t nan[4] = {0x7f, 0xc0, 0, 0}, bad_magic[4] = {0, 0, 0x07, 0xca};
    corrupt("good.trr", "nan.trr", x_at[5] + 12, nan, 4);
    corrupt("good.trr", "magic.trr", head_at[5], bad_magic, 4);
    make_big_xtc();
    const uint8_t dnan[4] = {0, 0, 0xc0, 0x7f}, small5[4] = {0, 0, 0, 5};
    corrupt("big.dcd", "nan.dcd", dcd_frame_at("big.dcd", 1024, 12, 5) + 56 + 4 + 40, dnan, 4);
    /* XTC: an undecodable frame (its small-number size index) and a bad header */
    corrupt("big.xtc", "nan.xtc", xtc_frame_at("big.xtc", 5) + 84, small5, 4);
    corrupt("big.xtc", "magic.xtc", xtc_frame_at("big.xtc", 5), bad_magic, 4);
    static const char *const ext[3] = {"trr", "dcd", "xtc"}, *const good_file[3] = {"good.trr", "big.dcd", "big.xtc"};
    static const char *const undecodable[3] = {"non-finite", "non-finite", "small-number size index"};
    for (int e = 0; e < 3; ++e) {
        const char *good = good_file[e];
        for (int t = 1; t <= 3; t += 2) {
            cr_assert_eq(mdnl("convert %s want.extxyz --frames 0::2 -q", good), 0, "%s", err_text);
            cr_expect_eq(mdnl("convert nan.%s got.extxyz --frames 0::2 --threads %d -q", ext[e], t), 0, "%s %d: %s",
                         ext[e], t, err_text);
            cr_expect_eq(sh("cmp want.extxyz got.extxyz"), 0, "%s, %d threads", ext[e], t);
            cr_expect_eq(mdnl("convert nan.%s got.extxyz --frames 5 --threads %d -q", ext[e], t), 3, "%s", ext[e]);
            cr_expect(strstr(err_text, "frame 5, byte") && strstr(err_text, undecodable[e]), "%s", err_text);
            /* a reader without a selection: next, skip over the bad frame, next */
            char p[512];
            snprintf(p, sizeof p, "nan.%s", ext[e]);
            mdnl_reader *r = open_reader(p, t);
            mdnl_frame f = {0};
            for (int k = 0; k < 5; ++k)
                cr_assert_eq(mdnl_reader_next(r, &f), MDNL_OK, "%s", mdnl_last_error());
            cr_expect_eq(mdnl_reader_skip(r), MDNL_OK, "%s: %s", p, mdnl_last_error());
            cr_expect_eq(mdnl_reader_next(r, &f), MDNL_OK, "%s: %s", p, mdnl_last_error());
            cr_expect_eq(f.index, 6);
            mdnl_frame_free(&f);
            mdnl_reader_close(r);
        }
        sh("rm -f want.extxyz got.extxyz");
    }
    for (int t = 1; t <= 3; t += 2)
        for (int e = 0; e < 3; e += 2) {
            cr_expect_eq(mdnl("convert magic.%s got.extxyz --frames 0::2 --threads %d -q", ext[e], t), 3, "%s: %s",
                         ext[e], err_text);
            char want[64];
            snprintf(want, sizeof want, "magic.%s: frame 5, byte", ext[e]);
            cr_expect(strstr(err_text, want) != NULL, "%s", err_text);
        }
}

/* ---- memory ---- */

typedef struct counting {
    int allocs, frees;
    void *live[64];
} counting;

static void *count_alloc(size_t bytes, const char *what, void *ctx)
{
    counting *c = ctx;
    void *p = mdnl_malloc(bytes, what);
    cr_assert(c->allocs - c->frees < 64);
    for (int k = 0; k < 64; ++k)
        if (!c->live[k]) {
            c->live[k] = p;
            break;
        }
    c->allocs++;
    return p;
}

static void count_free(void *p, void *ctx)
{
    counting *c = ctx;
    if (!p)
        return;
    for (int k = 0; k < 64; ++k)
        if (c->live[k] == p) {
            c->live[k] = NULL;
            c->frees++;
            free(p);
            return;
        }
    cr_assert_fail("freed positions the allocator did not allocate");
}

static bool owns(const counting *c, const void *p)
{
    for (int k = 0; k < 64; ++k)
        if (c->live[k] == p)
            return true;
    return false;
}

/* Positions come from the frame's allocator (pinned memory on the CUDA
 * backend), from a bounded number of allocations, and follow a change of
 * allocator (the pipeline's, once its engine is up) with the same values. */
Test(binary_pool, positions_come_from_the_frames_allocator)
{
    int64_t x_at[40], head_at[40];
    make_trr("f.trr", 40, 300, 4, x_at, head_at);
    static frames one;
    char msg[1024];
    cr_assert_eq(read_frames("f.trr", 1, &one, msg, sizeof msg), MDNL_END, "%s", msg);
    counting a = {0}, b = {0};
    const mdnl_frame_allocator alloc_a = {count_alloc, count_free, &a}, alloc_b = {count_alloc, count_free, &b};
    mdnl_reader *r = open_reader("f.trr", 3);
    mdnl_frame f[2] = {{.pos_alloc = &alloc_a}, {.pos_alloc = &alloc_a}};
    for (int k = 0; k < 40; ++k) {
        mdnl_frame *g = &f[k % 2];
        if (k == 20) { /* the pipeline frees a slot's frame and gives it another allocator */
            mdnl_frame_free(&f[0]), mdnl_frame_free(&f[1]);
            f[0].pos_alloc = f[1].pos_alloc = &alloc_b;
        }
        cr_assert_eq(mdnl_reader_next(r, g), MDNL_OK, "frame %d: %s", k, mdnl_last_error());
        expect_same_frame(&one.f[k], g, "allocator");
        cr_expect(owns(k < 20 ? &a : &b, g->pos), "frame %d: positions not from the frame's allocator", k);
    }
    cr_expect_eq(mdnl_reader_next(r, &f[0]), MDNL_END);
    /* 2 caller frames + a window of at most 6 jobs, not one per frame */
    cr_expect(a.allocs <= 8, "%d allocations for 20 frames", a.allocs);
    cr_expect(b.allocs <= 8, "%d allocations for 20 frames", b.allocs);
    mdnl_reader_close(r);
    mdnl_frame_free(&f[0]), mdnl_frame_free(&f[1]);
    cr_expect_eq(a.allocs, a.frees, "every position array freed");
    cr_expect_eq(b.allocs, b.frees, "every position array freed");
    free_frames(&one);
}

/* One thread decodes straight into the caller's frame: reading every frame
 * into one frame allocates its positions once (no frame of the pool's to
 * swap with), with the frames of several threads. */
Test(binary_pool, one_thread_decodes_into_the_callers_frame)
{
    int64_t x_at[40], head_at[40];
    make_trr("f.trr", 40, 300, 4, x_at, head_at);
    make_big_xtc();
    static const char *const names[3] = {"f.trr", "big.dcd", "big.xtc"};
    static frames many;
    for (int e = 0; e < 3; ++e) {
        char msg[1024];
        cr_assert_eq(read_frames(names[e], 3, &many, msg, sizeof msg), MDNL_END, "%s", msg);
        counting a = {0};
        const mdnl_frame_allocator alloc = {count_alloc, count_free, &a};
        mdnl_reader *r = open_reader(names[e], 1);
        mdnl_frame f = {.pos_alloc = &alloc};
        int k = 0;
        mdnl_status st;
        while ((st = mdnl_reader_next(r, &f)) == MDNL_OK) {
            cr_assert(k < many.n, "%s", names[e]);
            expect_same_frame(&many.f[k], &f, names[e]);
            cr_expect(owns(&a, f.pos), "%s frame %d: positions not from the frame's allocator", names[e], k);
            ++k;
        }
        cr_expect_eq(st, MDNL_END, "%s: %s", names[e], mdnl_last_error());
        cr_expect_eq(k, many.n, "%s", names[e]);
        cr_expect_eq(a.allocs, 1, "%s: %d allocations of positions for %d frames", names[e], a.allocs, k);
        mdnl_reader_close(r);
        mdnl_frame_free(&f);
        cr_expect_eq(a.allocs, a.frees, "every position array freed");
        free_frames(&many);
    }
}

/* Counting while frames are read ahead by workers. */
Test(binary_pool, count_mid_read_is_the_files)
{
    int64_t x_at[40], head_at[40];
    make_trr("f.trr", 30, 100, 8, x_at, head_at);
    make_big_xtc();
    static const char *const names[3] = {"f.trr", "big.dcd", "big.xtc"};
    static const int64_t want[3] = {30, 12, 12};
    for (int e = 0; e < 3; ++e) {
        mdnl_reader *r = open_reader(names[e], 3);
        mdnl_frame f = {0};
        for (int k = 0; k < 2; ++k)
            cr_assert_eq(mdnl_reader_next(r, &f), MDNL_OK, "%s", mdnl_last_error());
        int64_t n = -1;
        cr_expect_eq(mdnl_reader_count(r, &n), MDNL_OK, "%s", mdnl_last_error());
        cr_expect_eq(n, want[e], "%s", names[e]);
        int64_t k = 2;
        while (mdnl_reader_next(r, &f) == MDNL_OK)
            cr_expect_eq(f.index, k++);
        cr_expect_eq(k, want[e], "%s", names[e]);
        mdnl_frame_free(&f);
        mdnl_reader_close(r);
    }
}

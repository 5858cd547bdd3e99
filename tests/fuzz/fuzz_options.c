/* fuzz_options.c — the option parsers: mdnl_parse_options (src/cli.c: every
 * option kind, --box, the numeric ranges), then, on what it accepts, the
 * --pair parser (kernels/potential.c) and the --frames selection (resolved
 * against a fixed 5-frame XYZ file, frames read to the end).
 *
 * The input is split at NUL bytes into at most 24 arguments. Every failure
 * must be MDNL_ERR_USAGE (the file is valid, so nothing else may come back)
 * with a one-line message; what is accepted must be in range. */
#include "fuzz_common.h"

#include "cli.h"
#include "potential.h"

#include <math.h>

#define MAX_ARGS 24

static const char *allowed_all =
    "backend,method,frames,box,no-pbc,group,quiet,json,progress,no-progress,output,cutoff,list,pair,per-atom,"
    "neighbors,read-only,rmax,bins,pairs,volume,plot,to,nx,ny,bond,noise,vacuum,seed,sizes";

static const char *frames_file(void)
{
    static const char *path;
    if (!path) {
        static const char five[] = "2\nStep=0\nC 0 0 0\nC 1 0 0\n2\nStep=1\nC 0 0 0\nC 1 0 0\n"
                                   "2\nStep=2\nC 0 0 0\nC 1 0 0\n2\nStep=3\nC 0 0 0\nC 1 0 0\n"
                                   "2\nStep=4\nC 0 0 0\nC 1 0 0\n";
        path = fuzz_scratch(".frames.xyz");
        fuzz_write_file(path, (const uint8_t *)five, sizeof five - 1);
    }
    return path;
}

static void check_frames(mdnl_opts *o)
{
    mdnl_frames *fs = NULL;
    mdnl_status st = mdnl_frames_open(o, frames_file(), &fs);
    fuzz_check_error(st, MDNL_ERR_USAGE, "--frames");
    if (st != MDNL_OK)
        return;
    int64_t n = -1, seen = 0, last = -1;
    st = mdnl_frames_count(fs, &n);
    fuzz_check_error(st, MDNL_ERR_USAGE, NULL);
    mdnl_frame f;
    memset(&f, 0, sizeof f);
    while ((st = mdnl_frames_next(fs, &f)) == MDNL_OK) {
        if (f.index <= last || f.index < 0 || f.index >= 5)
            fuzz_fail("--frames", "frame indices not increasing within the file");
        last = f.index;
        ++seen;
    }
    fuzz_check_error(st, MDNL_ERR_USAGE, NULL);
    if (st == MDNL_END && n >= 0 && seen != n)
        fuzz_fail("--frames", "mdnl_frames_count disagrees with the frames yielded");
    mdnl_frame_free(&f);
    mdnl_frames_close(fs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* argv[0] is the command; arguments are NUL-separated pieces of a copy. */
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "fuzz";
    for (size_t p = 0; p <= size && argc < MAX_ARGS + 1;) {
        argv[argc++] = buf + p;
        p += strlen(buf + p) + 1;
    }
    argv[argc] = NULL;
    mdnl_opts o;
    mdnl_status st = mdnl_parse_options("fuzz", allowed_all, argc, argv, 1, &o);
    fuzz_check_error(st, MDNL_ERR_USAGE, NULL);
    if (st == MDNL_OK) {
        if (o.has_cutoff && !(isfinite(o.cutoff) && o.cutoff > 0))
            fuzz_fail("--cutoff", "accepted a value out of range");
        if (o.has_rmax && !(isfinite(o.rmax) && o.rmax > 0))
            fuzz_fail("--rmax", "accepted a value out of range");
        if (o.has_bins && !(o.bins >= 1 && o.bins <= 1000000000LL))
            fuzz_fail("--bins", "accepted a value out of range");
        if (o.has_box && !(mdnl_box_volume(&o.box) > 0 && isfinite(mdnl_box_volume(&o.box))))
            fuzz_fail("--box", "accepted a cell without a finite positive volume");
        if (o.pair) {
            mdnl_potential pot;
            st = mdnl_potential_parse(o.pair, o.has_cutoff ? o.cutoff : 2.5, &pot);
            fuzz_check_error(st, MDNL_ERR_USAGE, "--pair");
            if (st == MDNL_OK &&
                !(isfinite(pot.lj3) && isfinite(pot.lj4) && isfinite(pot.offset) && pot.cutoff > 0))
                fuzz_fail("--pair", "accepted parameters that give non-finite constants");
            if (st == MDNL_OK) {
                char desc[256];
                mdnl_potential_describe(&pot, desc, sizeof desc);
            }
        }
        if (o.frames)
            check_frames(&o);
    }
    mdnl_clear_error();
    free(buf);
    return 0;
}

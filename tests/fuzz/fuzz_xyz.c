/* fuzz_xyz.c — the XYZ / extended XYZ reader (io/xyz_reader.c) on arbitrary
 * bytes. The input is written to a scratch file (the reader's only entry
 * point is a path: it sizes its checks by the file's size) and read twice:
 * once counting the frames and parsing every one, once alternating skip and
 * parse. Every failure must be MDNL_ERR_INPUT with a one-line message that
 * starts with the path; every parsed frame must be finite and consistent. */
#include "fuzz_common.h"

#include "frame.h"
#include "xyz_reader.h"

#include <math.h>

#define MAX_FRAMES 256

static void pass(const char *path, int alternate)
{
    mdnl_xyz_reader *r = NULL;
    mdnl_status st = mdnl_xyz_open(path, &r);
    fuzz_check_error(st, MDNL_ERR_INPUT, path);
    if (st != MDNL_OK)
        return;
    mdnl_frame f;
    memset(&f, 0, sizeof f);
    int64_t counted = -1, seen = 0;
    if (!alternate) {
        st = mdnl_xyz_count(r, &counted);
        fuzz_check_error(st, MDNL_ERR_INPUT, path);
    }
    for (int k = 0; k < MAX_FRAMES; ++k) {
        st = alternate && (k & 1) ? mdnl_xyz_skip(r) : mdnl_xyz_next(r, &f);
        fuzz_check_error(st, MDNL_ERR_INPUT, path);
        if (st != MDNL_OK)
            break;
        ++seen;
        if (!(alternate && (k & 1)))
            fuzz_check_frame(&f);
    }
    /* A clean read to the end sees exactly the frames that count reported. */
    if (!alternate && counted >= 0 && st == MDNL_END && seen != counted)
        fuzz_fail("count", "mdnl_xyz_count disagrees with the frames read");
    mdnl_frame_free(&f);
    mdnl_xyz_close(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_scratch(".xyz");
    fuzz_write_file(path, data, size);
    pass(path, 0);
    pass(path, 1);
    mdnl_clear_error();
    return 0;
}

/* fuzz_binary.h — what the binary-trajectory harnesses share (fuzz_xtc.c,
 * fuzz_trr.c, fuzz_dcd.c): the input is written to a scratch file (the
 * readers size their checks by the file's size) and read twice through the
 * reader's own entry points: counting then parsing every frame, then
 * alternating skip and parse, in both unit modes. Every failure must be
 * MDNL_ERR_INPUT with a one-line message starting with the path; every
 * parsed frame must be finite and consistent. */
#ifndef MDNL_FUZZ_BINARY_H
#define MDNL_FUZZ_BINARY_H

#include "fuzz_common.h"

#define MAX_FRAMES 64

#define FUZZ_BINARY_HARNESS(name, ext)                                                                           \
    static void pass(const char *path, int alternate)                                                          \
    {                                                                                                          \
        mdnl_##name##_reader *r = NULL;                                                                        \
        mdnl_status st = mdnl_##name##_open(path, alternate, &r);                                              \
        fuzz_check_error(st, MDNL_ERR_INPUT, path);                                                            \
        if (st != MDNL_OK)                                                                                     \
            return;                                                                                            \
        mdnl_frame f;                                                                                          \
        memset(&f, 0, sizeof f);                                                                               \
        int64_t counted = -1, seen = 0;                                                                        \
        if (!alternate) {                                                                                      \
            st = mdnl_##name##_count(r, &counted);                                                             \
            fuzz_check_error(st, MDNL_ERR_INPUT, path);                                                        \
        }                                                                                                      \
        for (int k = 0; k < MAX_FRAMES; ++k) {                                                                 \
            st = alternate && (k & 1) ? mdnl_##name##_skip(r) : mdnl_##name##_next(r, &f);                     \
            fuzz_check_error(st, MDNL_ERR_INPUT, path);                                                        \
            if (st != MDNL_OK)                                                                                 \
                break;                                                                                         \
            ++seen;                                                                                            \
            if (!(alternate && (k & 1)))                                                                       \
                fuzz_check_frame(&f);                                                                          \
        }                                                                                                      \
        if (!alternate && counted >= 0 && st == MDNL_END && seen != counted)                                   \
            fuzz_fail("count", "the count disagrees with the frames read");                                    \
        mdnl_frame_free(&f);                                                                                   \
        mdnl_##name##_close(r);                                                                                \
    }                                                                                                          \
    int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)                                               \
    {                                                                                                          \
        const char *path = fuzz_scratch(ext);                                                                  \
        fuzz_write_file(path, data, size);                                                                     \
        pass(path, 0);                                                                                         \
        pass(path, 1);                                                                                         \
        mdnl_clear_error();                                                                                    \
        return 0;                                                                                              \
    }

#endif

/* fuzz_common.h — helpers shared by the fuzz harnesses (tests/fuzz/README.md).
 *
 * Each harness defines LLVMFuzzerTestOneInput(). Built with clang and
 * -fsanitize=fuzzer (MDNL_FUZZ=ON) it is a libFuzzer binary; built with any
 * compiler together with fuzz_replay.c it is a replay program that feeds
 * every file of the corpus directories given on its command line through
 * the same function (the CTest regression run, gcc included).
 *
 * The oracle, besides the sanitizers: every failure must be the status the
 * contract names (SPEC §7) with a one-line, non-empty message; anything else
 * aborts, which libFuzzer reports as a crash. */
#ifndef MDNL_FUZZ_COMMON_H
#define MDNL_FUZZ_COMMON_H

#define _POSIX_C_SOURCE 200809L
#include "frame.h"
#include "mdnl.h"

#include <math.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with a message: the harness found a contract violation. */
static inline void fuzz_fail(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz: contract violation: %s: %s\n", what, detail ? detail : "");
    abort();
}

/* A failing status must be `want` and carry a one-line message. */
static inline void fuzz_check_error(mdnl_status st, mdnl_status want, const char *prefix)
{
    if (st == MDNL_OK || st == MDNL_END)
        return;
    const char *m = mdnl_last_error();
    if (st != want) {
        char buf[1200];
        snprintf(buf, sizeof buf, "status %d, expected %d (%s)", (int)st, (int)want, m);
        fuzz_fail("wrong exit status", buf);
    }
    if (!m[0])
        fuzz_fail("empty error message", NULL);
    if (strchr(m, '\n'))
        fuzz_fail("error message spans lines", m);
    if (prefix && strncmp(m, prefix, strlen(prefix)) != 0)
        fuzz_fail("error message does not start with the path", m);
}

/* A scratch file name for this process, in $TMPDIR (else /tmp). */
static inline const char *fuzz_scratch(const char *ext)
{
    static char path[4][512];
    static int slot;
    const char *dir = getenv("TMPDIR");
    char *p = path[slot++ & 3];
    snprintf(p, sizeof path[0], "%s/mdnl-fuzz-%ld%s", dir && *dir ? dir : "/tmp", (long)getpid(), ext);
    return p;
}

/* Writes bytes to path; aborts when the scratch file cannot be written. */
static inline void fuzz_write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *fp = fopen(path, "wb");
    if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0)
        fuzz_fail("cannot write the scratch file", path);
}

/* The invariants every frame a reader returns must keep (frame.h): atoms
 * within the capacity, finite coordinates, species indices within the
 * frame's species, terminated symbols, a lattice behind every periodic axis,
 * finite lattice edges. */
static inline void fuzz_check_frame(const mdnl_frame *f)
{
    if (f->natoms < 0 || f->natoms > f->capacity)
        fuzz_fail("frame", "natoms out of range");
    if (f->nspecies < 0 || f->nspecies > MDNL_MAX_SPECIES)
        fuzz_fail("frame", "nspecies out of range");
    for (int64_t i = 0; i < f->natoms; ++i) {
        for (int k = 0; k < 3; ++k)
            if (!isfinite(f->pos[i][k]))
                fuzz_fail("frame", "non-finite coordinate accepted");
        if (f->species[i] < 0 || f->species[i] >= f->nspecies)
            fuzz_fail("frame", "species index out of range");
    }
    for (int s = 0; s < f->nspecies; ++s)
        if (memchr(f->symbols[s], '\0', MDNL_SYMBOL_LEN) == NULL)
            fuzz_fail("frame", "unterminated symbol");
    for (int a = 0; a < 3; ++a) {
        if (f->box.pbc[a] && !f->box.has_lattice)
            fuzz_fail("frame", "periodic axis without a lattice");
        for (int b = 0; b < 3; ++b)
            if (!isfinite(f->box.h[a][b]))
                fuzz_fail("frame", "non-finite lattice accepted");
    }
}

/* Reads path as `format` (NULL: detected) through io/reader.h twice: count
 * and every frame (at most 256), then alternating skip and next. Every
 * failure must be an input error naming the path; every frame must keep
 * frame.h's invariants; a clean read sees the counted frames. For the
 * harnesses of the text formats (fuzz_lammps_dump.c, fuzz_gro.c, ...). */
#include "reader.h"
static inline void fuzz_reader_passes(const char *path, const char *format)
{
    for (int alternate = 0; alternate < 2; ++alternate) {
        const mdnl_read_options opt = {.format = format, .types = "1=Cu,2=O"};
        mdnl_reader *r = NULL;
        mdnl_status st = mdnl_reader_open(path, &opt, &r);
        fuzz_check_error(st, MDNL_ERR_INPUT, path);
        if (st != MDNL_OK)
            continue;
        mdnl_frame f;
        memset(&f, 0, sizeof f);
        int64_t counted = -1, seen = 0;
        if (!alternate) {
            st = mdnl_reader_count(r, &counted);
            fuzz_check_error(st, MDNL_ERR_INPUT, path);
            if (st != MDNL_OK)
                counted = -1;
        }
        for (int k = 0; k < 256; ++k) {
            const int skip = alternate && (k & 1);
            st = skip ? mdnl_reader_skip(r) : mdnl_reader_next(r, &f);
            fuzz_check_error(st, MDNL_ERR_INPUT, path);
            if (st != MDNL_OK)
                break;
            ++seen;
            if (!skip)
                fuzz_check_frame(&f);
        }
        if (!alternate && counted >= 0 && st == MDNL_END && seen != counted)
            fuzz_fail("count", "mdnl_reader_count disagrees with the frames read");
        mdnl_frame_free(&f);
        mdnl_reader_close(r);
    }
    mdnl_clear_error();
}

#endif

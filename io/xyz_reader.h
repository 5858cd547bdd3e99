/* xyz_reader.h — streaming reader of XYZ and extended XYZ (the ASE/extxyz
 * convention). One frame is parsed at a time out of the lines of a byte
 * stream (io/stream.h: a plain file, standard input, or gzip / xz / zstd
 * content), so a trajectory of any length needs memory for one frame only. Numbers are
 * parsed by a hand-written float parser, not by strtod per field: results
 * equal strtod's bit for bit (fast for up to 19 digits and |exponent| <= 27,
 * strtod beyond); ~500 MB/s of "%.10f" or "%.17g" text on one core
 * (tools/bench_xyz_read.sh). Reached through io/reader.h.
 *
 * Accepted: plain XYZ (count, comment, "Sym x y z [more columns]") and
 * extended XYZ keys, case-insensitive: Lattice="9 numbers" (rows are the
 * lattice vectors), pbc="T T F" / [True, True, False] / "1 1 0",
 * Properties=...:species:S:1:...:pos:R:3:... in any order (Z:I:1 when there is
 * no species column; other columns skipped), Step=, Time=. A Lattice without
 * pbc is periodic in x, y, z; words without "=" are plain comment text.
 * Species are kept as text ("C", or "6" for atomic numbers).
 *
 * Every error is MDNL_ERR_INPUT with one line
 * "FILE:LINE: frame K: expected ..., found ..." ("PATH: ..." for a missing
 * file or a directory). A count larger than the file could hold
 * (file size / 8 + 1) is rejected before anything is allocated; for a pipe or
 * compressed content, whose size is unknown, arrays grow only as atom lines
 * are actually read. */
#ifndef MDNL_XYZ_READER_H
#define MDNL_XYZ_READER_H

#include "frame.h"
#include "mdnl.h"
#include "stream.h"

#include <stdbool.h>
#include <stddef.h>

MDNL_BEGIN_C

typedef struct mdnl_xyz_reader mdnl_xyz_reader;

/* MDNL_ERR_INPUT for a missing file or a directory ("PATH: ..."). */
mdnl_status mdnl_xyz_open(const char *path, mdnl_xyz_reader **out);
/* The same over a stream already open, borrowed until mdnl_xyz_close (the
 * caller closes it after); `path` is opened again by mdnl_xyz_count. */
mdnl_status mdnl_xyz_open_stream(mdnl_stream *in, const char *path, mdnl_xyz_reader **out);
/* Parses the next frame into f; MDNL_END after the last one. Errors name
 * "FILE:LINE: frame K: expected ..., found ...". */
mdnl_status mdnl_xyz_next(mdnl_xyz_reader *r, mdnl_frame *f);
/* Skips the next frame, checking only that its lines exist. */
mdnl_status mdnl_xyz_skip(mdnl_xyz_reader *r);
/* Counts the frames of the file with a separate scan (the cursor stays). */
mdnl_status mdnl_xyz_count(mdnl_xyz_reader *r, int64_t *n);

/* Reads through the reader pool of io/text_pool.h with `threads` parsing
 * threads (> 1; 1: this thread, as always), started at the first read.
 * Before the first read only. */
mdnl_status mdnl_xyz_set_threads(mdnl_xyz_reader *r, int threads);
/* With the pool: the frames the caller will read (a Python slice, stop < 0:
 * to the end); the others are skipped without parsing. */
void mdnl_xyz_select(mdnl_xyz_reader *r, int64_t start, int64_t stop, int64_t step);

/* Whether a frame read so far had extended-XYZ keys (Lattice, pbc or
 * Properties): "extxyz" rather than plain "xyz". */
int mdnl_xyz_extended(const mdnl_xyz_reader *r);
void mdnl_xyz_close(mdnl_xyz_reader *r); /* NULL is a no-op */

/* What an extended XYZ frame holds beyond species, positions, Lattice, pbc,
 * Step and Time, kept (for `convert` to extended XYZ) when asked. */
typedef struct mdnl_xyz_extras {
    char *properties; /* the other Properties entries in order ("forces:R:3:charge:R:1"), "" if none */
    char *info;       /* the other key=value pairs of the comment as written ("energy=-1.5 note=\"a b\"") */
    char *text;       /* the extra columns of atom i: text[offset[i] .. offset[i+1]) */
    int64_t *offset;  /* [natoms + 1] when properties is not empty */
    int64_t natoms;   /* atoms with extra columns (0 when properties is empty) */
} mdnl_xyz_extras;

/* Keeps the extras of every frame read from now on (off by default: the
 * columns past the ones used are then not even read). */
void mdnl_xyz_keep_extras(mdnl_xyz_reader *r, bool on);
/* The extras of the last frame read, NULL when it has none or they are not
 * kept; valid until the next read. */
const mdnl_xyz_extras *mdnl_xyz_frame_extras(const mdnl_xyz_reader *r);

/* The fast float parser: parses [s, end) as a whole token. Returns 1 and
 * stores the value (possibly inf or nan) when the token is a number. */
int mdnl_parse_double(const char *s, const char *end, double *out);

MDNL_END_C

#endif

/* reader.h — one streaming interface over every input format.
 *
 * A reader yields one frame at a time; memory is bounded by the largest
 * frame, never by the number of frames. The format is chosen by content
 * (the HDF5 signature, XTC's and TRR's magic numbers, DCD's first record),
 * else by extension (.h5, .h5md, .hdf5 -> H5MD; .xtc, .trr, .dcd; anything
 * else -> XYZ / extended XYZ). Overrides such as --box and --no-pbc are
 * applied by the caller (src/frames.c), not here.
 */
#ifndef MDNL_READER_H
#define MDNL_READER_H

#include "frame.h"
#include "mdnl.h"

MDNL_BEGIN_C

typedef struct mdnl_reader mdnl_reader;

typedef struct mdnl_read_options {
    const char *group; /* H5MD particle group; NULL: the default of SPEC §6 */
    bool coords_checked; /* the caller checks every coordinate for finiteness itself: the H5MD
                            reader skips its own pass (XYZ checks while it parses, at no cost) */
    bool units_native;   /* XTC / TRR: keep nm (default: converted to Å) */
} mdnl_read_options;

/* Length unit of the frames' positions and box: "Å", or "nm" for XTC / TRR
 * read with units_native (their native unit). */
const char *mdnl_reader_units(const mdnl_reader *r);

/* Opens `path`. Errors: MDNL_ERR_INPUT for a missing file, a directory or an
 * unreadable header (message "PATH: ..."). The caller closes the reader. */
mdnl_status mdnl_reader_open(const char *path, const mdnl_read_options *opt, mdnl_reader **out);

/* Reads the next frame into f (reusing its arrays). Returns MDNL_END when the
 * file has no more frames, MDNL_ERR_INPUT with "FILE:LINE: ..." (XYZ) or
 * "FILE: frame K, DATASET: ..." (H5MD) when the frame is malformed. */
mdnl_status mdnl_reader_next(mdnl_reader *r, mdnl_frame *f);

/* Skips the next frame without parsing its atoms; MDNL_END at the end. */
mdnl_status mdnl_reader_skip(mdnl_reader *r);

/* Number of frames in the file, without moving the cursor. For XYZ this
 * scans the file's count lines once and caches the answer. */
mdnl_status mdnl_reader_count(mdnl_reader *r, int64_t *nframes);

/* "h5md", "extxyz" (a frame read so far had extended-XYZ keys), "xyz", "xtc", "trr" or "dcd". */
const char *mdnl_reader_format(const mdnl_reader *r);

void mdnl_reader_close(mdnl_reader *r); /* NULL is a no-op */

MDNL_END_C

#endif

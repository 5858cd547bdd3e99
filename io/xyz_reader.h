/* xyz_reader.h — streaming reader of XYZ and extended XYZ (the ASE/extxyz
 * convention). One frame is parsed at a time out of a fixed read buffer, so a
 * trajectory of any length needs memory for one frame only. Numbers are
 * parsed by a hand-written float parser (exact for up to 19 significant
 * digits and |exponent| <= 22, strtod beyond), not by strtod per field.
 * Reached through io/reader.h. */
#ifndef MDNL_XYZ_READER_H
#define MDNL_XYZ_READER_H

#include "frame.h"
#include "mdnl.h"

#include <stddef.h>

MDNL_BEGIN_C

typedef struct mdnl_xyz_reader mdnl_xyz_reader;

/* MDNL_ERR_INPUT for a missing file or a directory ("PATH: ..."). */
mdnl_status mdnl_xyz_open(const char *path, mdnl_xyz_reader **out);
/* Parses the next frame into f; MDNL_END after the last one. Errors name
 * "FILE:LINE: frame K: expected ..., found ...". */
mdnl_status mdnl_xyz_next(mdnl_xyz_reader *r, mdnl_frame *f);
/* Skips the next frame, checking only that its lines exist. */
mdnl_status mdnl_xyz_skip(mdnl_xyz_reader *r);
/* Counts the frames of the file with a separate scan (the cursor stays). */
mdnl_status mdnl_xyz_count(mdnl_xyz_reader *r, int64_t *n);
void mdnl_xyz_close(mdnl_xyz_reader *r); /* NULL is a no-op */

/* The fast float parser: parses [s, end) as a whole token. Returns 1 and
 * stores the value (possibly inf or nan) when the token is a number. */
int mdnl_parse_double(const char *s, const char *end, double *out);

MDNL_END_C

#endif

/* h5md_reader.h — the H5MD backend of the streaming reader (io/reader.h).
 *
 * Reads /particles/<group>/position/{value,step,time}, the box of
 * /particles/<group>/box and the species of /particles/<group>/species of an
 * H5MD 1.0 or 1.1 file, one frame at a time by hyperslab: memory is bounded
 * by one frame (plus the dataset's chunk cache), never by the number of
 * frames. What is accepted:
 *
 *  - position/value: [T][N][3] of any float or integer type (read as double).
 *  - position/step: integer [T], or a scalar increment with an optional
 *    `offset` attribute (step of frame i = offset + i*step, H5MD 1.1).
 *    position/time: likewise with float; it may be absent (has_time false).
 *  - box: attributes `dimension` (3) and `boundary` ("periodic"/"none" per
 *    axis, fixed- or variable-length strings); `edges` as a dataset [3]
 *    (diagonal) or [3][3] (rows are lattice vectors), or a time-dependent
 *    group edges/{value [T'][3] or [T'][3][3], step, time}. A time-dependent
 *    element sampled at other steps than position is matched by step: frame
 *    i uses the latest sample whose step is not after frame i's step.
 *    `edges` may be absent only when every axis is "none".
 *  - species: a dataset [N] or a time-dependent group species/value [T'][N]
 *    of integers or fixed-length strings. Integer code k reads as the symbol
 *    names[k] when the species object has mdnl's `names` attribute (a string
 *    array, written by io/h5md_writer.c), else as the number in decimal.
 *    Without species every atom is "X".
 *
 * Only the file named is read, and only what it stores (issue 54): a file
 * holding an external or user-defined link anywhere is refused at open (soft
 * links resolve inside the file and are followed), and so is any dataset
 * the reader opens with external raw storage or a virtual layout, a type
 * other than IEEE floats of 4/8 bytes, whole-byte integers of 1-8 bytes or
 * strings of at most 4 KiB, a layout other than contiguous/chunked/compact,
 * a filter other than deflate/shuffle/fletcher32/szip, or an extent the
 * file does not hold in full (contiguous/compact bytes inside the file,
 * every chunk written: unwritten chunks are refused, not read as fill
 * values; unfiltered chunks stored at their layout's size).
 *
 * Errors are MDNL_ERR_INPUT with one line "FILE: frame K, DATASET: expected
 * ..., found ..." ("FILE: DATASET: ..." for problems found at open). HDF5's
 * own error printing is switched off. The Debian HDF5 is built thread-safe,
 * so a reader and a writer may run on different threads.
 */
#ifndef MDNL_H5MD_READER_H
#define MDNL_H5MD_READER_H

#include "frame.h"
#include "mdnl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

MDNL_BEGIN_C

typedef struct mdnl_h5md_reader mdnl_h5md_reader;

/* True when the first bytes of `path` carry the HDF5 signature (at offset 0;
 * user blocks are not looked for). False for a missing or short file. */
bool mdnl_h5md_is_hdf5(const char *path);

/* Whether the HDF5 library in use serializes its own API calls (built with
 * --enable-threadsafe, as Debian's is); if not, callers must keep HDF5 calls
 * of different threads apart themselves. */
bool mdnl_hdf5_threadsafe(void);

/* Opens `path` and the particle group `group` (NULL: the only group under
 * /particles, else "all", else an error listing the groups) and checks every
 * dataset's rank, shape and type against the others. MDNL_ERR_INPUT for a
 * missing or non-HDF5 file ("PATH: ...") or a malformed layout. The caller
 * closes *out with mdnl_h5md_close(). */
mdnl_status mdnl_h5md_open(const char *path, const char *group, mdnl_h5md_reader **out);

/* Reads the next frame into f (reusing its arrays): positions, species and
 * symbols (rebuilt each frame), box, step/time, index. MDNL_END after the
 * last frame. */
mdnl_status mdnl_h5md_next(mdnl_h5md_reader *r, mdnl_frame *f);

/* Moves past the next frame without reading it; MDNL_END at the end. */
mdnl_status mdnl_h5md_skip(mdnl_h5md_reader *r);

/* Moves the cursor to frame k (0 <= k <= nframes); the next call of
 * mdnl_h5md_next() reads frame k. MDNL_ERR_USAGE when out of range. */
mdnl_status mdnl_h5md_seek(mdnl_h5md_reader *r, int64_t k);

/* Whether mdnl_h5md_next checks that every coordinate is finite (on by
 * default). That pass over the positions costs about as much as reading
 * them (a 2.4 MB frame leaves the cache between the two): a caller that
 * checks every coordinate itself anyway (mdnl run: mdnl_geom_prepare or the
 * device wrap, both naming the frame and the atom) turns it off. */
void mdnl_h5md_set_finite_check(mdnl_h5md_reader *r, bool on);
/* Worker threads that read and decode the positions ahead of the frame
 * asked for (default 1: on the calling thread), and of them the ones that
 * read a frame stored whole straight into the caller's frame (copy; 0:
 * threads). Frames, values and errors are the same for every count. Takes
 * effect before the first read only. */
void mdnl_h5md_set_threads(mdnl_h5md_reader *r, int threads, int copy);
int64_t mdnl_h5md_nframes(const mdnl_h5md_reader *r);
int64_t mdnl_h5md_natoms(const mdnl_h5md_reader *r);
/* The selected particle group's name; valid until mdnl_h5md_close(). */
const char *mdnl_h5md_group(const mdnl_h5md_reader *r);

void mdnl_h5md_close(mdnl_h5md_reader *r); /* NULL is a no-op */

/* The names of the groups under /particles of `path`, comma-separated, into
 * buf (truncated to size, always NUL-terminated). MDNL_ERR_INPUT when the
 * file or /particles cannot be opened. */
mdnl_status mdnl_h5md_list_groups(const char *path, char *buf, size_t size);

MDNL_END_C

#endif

/* dcd_reader.h — streaming reader of DCD trajectories (CHARMM, NAMD, LAMMPS,
 * OpenMM, MDAnalysis), written from the format's public description
 * (docs/formats.md): Fortran unformatted records with 4-byte length
 * markers in either byte order (detected from the first marker, 84), the
 * CORD header, the title block, the atom count, then per frame an optional
 * unit cell record and the X, Y and Z float records. Positions are Å, read
 * as they are.
 *
 * The unit cell is read as MDAnalysis' DCDReader reads it: the 6 doubles
 * are A, gamma, B, beta, alpha, C; three angle values in [-1, 1] are cosines
 * (CHARMM, NAMD > 2.5), otherwise degrees, and a negative length or an angle
 * above 180 means the 6 numbers are the symmetric box matrix (new CHARMM).
 * A cell of zero lengths is an open frame; any other cell is periodic in x, y
 * and z, with a along x and b in the xy plane.
 *
 * Refused with a clear message: fixed atoms (NAMNF > 0), 8-byte record
 * markers. A fourth-dimension record (CHARMM) is skipped. Step of frame k is
 * ISTART + k * NSAVC; time is step * DELTA in ps (DELTA is in AKMA units,
 * 0.04888821 ps, as MDAnalysis). XTC-style errors: "FILE: frame K, byte
 * OFFSET: expected ..., found ...". Frames have a fixed size, so worker
 * threads read and decode them themselves (io/binary_pool.h), in file order
 * and with one thread's errors. Reached through io/reader.h. */
#ifndef MDNL_DCD_READER_H
#define MDNL_DCD_READER_H

#include "frame.h"
#include "mdnl.h"

#include <stdbool.h>
#include <stdint.h>

MDNL_BEGIN_C

typedef struct mdnl_dcd_reader mdnl_dcd_reader;

/* Whether the first bytes are a DCD header record (marker 84, "CORD"). */
bool mdnl_dcd_sniff(const unsigned char *head, size_t n);

/* `native` is accepted for the table's sake: DCD is Å already. */
mdnl_status mdnl_dcd_open(const char *path, bool native, mdnl_dcd_reader **out);
mdnl_status mdnl_dcd_next(mdnl_dcd_reader *r, mdnl_frame *f);
mdnl_status mdnl_dcd_skip(mdnl_dcd_reader *r);
/* Workers decoding frames (--threads; <= 1: the calling thread), and the
 * frames that will be read (io/binary_pool.h); before the first read. */
void mdnl_dcd_set_threads(mdnl_dcd_reader *r, int threads);
void mdnl_dcd_select(mdnl_dcd_reader *r, int64_t start, int64_t stop, int64_t step);
/* Frames from the file size (a truncated last frame counts; reading it is
 * the error). */
mdnl_status mdnl_dcd_count(mdnl_dcd_reader *r, int64_t *n);
void mdnl_dcd_close(mdnl_dcd_reader *r);

/* The lattice (rows a, b, c) of a DCD unit cell record, as described above.
 * Returns false (box untouched) when the cell is not finite or not a cell. */
bool mdnl_dcd_cell_to_box(const double uc[6], mdnl_box *box);

MDNL_END_C

#endif

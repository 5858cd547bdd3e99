/* reader.h — one streaming interface over every input format.
 *
 * A reader yields one frame at a time; memory is bounded by the largest
 * frame, never by the number of frames. The format is found from the
 * content where it can be (io/reader.c's table: the HDF5 signature,
 * "ITEM: TIMESTEP", a LAMMPS data header, a GRO or PDB layout, the XDR magic
 * numbers of XTC / TRR, DCD's 84 + "CORD"), else from the extension (after a
 * .gz / .xz / .zst suffix), else it is an error naming the formats mdnl
 * reads; mdnl_read_options.format overrides both. Text formats read through
 * io/stream.h, so they may be gzip, xz or zstd compressed and "-" is standard
 * input. Overrides such as --box and --no-pbc are applied by the caller
 * (src/cli.c), not here.
 */
#ifndef MDNL_READER_H
#define MDNL_READER_H

#include "frame.h"
#include "mdnl.h"
#include "stream.h"

#include <stdbool.h>

MDNL_BEGIN_C

typedef struct mdnl_reader mdnl_reader;

typedef struct mdnl_read_options {
    const char *group;  /* H5MD particle group; NULL: the default of SPEC §6 */
    const char *format; /* a format name of the table (mdnl_reader_formats); NULL: detect */
    const char *types;  /* LAMMPS type -> species, "1=Cu,2=O"; NULL: the type numbers as text */
    const char *atom_style; /* LAMMPS data: atomic, charge, molecular or full; NULL: the file's comment */
    bool units_native;  /* keep nm in GRO, XTC and TRR (--units native); false: convert to Å */
    bool keep_extras;   /* extended XYZ: keep the other per-atom columns and comment keys */
    bool coords_checked; /* the caller checks every coordinate for finiteness itself: the H5MD
                            reader skips its own pass (XYZ checks while it parses, at no cost) */
    int threads;        /* worker threads a reader may parse or decode with (--threads); 0 or 1: the
                           calling thread only, as always. Text formats: io/text_pool.h */
    int copy_threads;   /* of those, the ones that only copy bytes (H5MD frames read whole into
                           the caller's frame: memory-bound); 0: threads */
} mdnl_read_options;

/* Opens `path`. Errors: MDNL_ERR_INPUT for a missing file, a directory or an
 * unreadable header (message "PATH: ..."). The caller closes the reader. */
mdnl_status mdnl_reader_open(const char *path, const mdnl_read_options *opt, mdnl_reader **out);

/* Reads the next frame into f (reusing its arrays). Returns MDNL_END when the
 * file has no more frames, MDNL_ERR_INPUT with "FILE:LINE: ..." (XYZ) or
 * "FILE: frame K, DATASET: ..." (H5MD) when the frame is malformed. */
mdnl_status mdnl_reader_next(mdnl_reader *r, mdnl_frame *f);

/* Skips the next frame without parsing its atoms; MDNL_END at the end. */
mdnl_status mdnl_reader_skip(mdnl_reader *r);

/* The frames the caller will read: start, start + step, ... before stop
 * (stop < 0: to the end), a hint a reader may use to skip the others
 * without parsing them (the text reader pool does; io/text_pool.h) and to
 * read nothing past stop. Before the first read only. */
void mdnl_reader_select(mdnl_reader *r, int64_t start, int64_t stop, int64_t step);

/* Number of frames in the file, without moving the cursor. For XYZ this
 * scans the file's count lines once and caches the answer. */
mdnl_status mdnl_reader_count(mdnl_reader *r, int64_t *nframes);

/* The format read, exactly: "xyz", "extxyz", "h5md", "lammps-dump",
 * "lammps-data", "gro", "pdb", "xtc", "trr", "dcd", with "+gzip", "+xz" or "+zstd" for compressed
 * content ("extxyz+gzip"). Valid while the reader is open. */
const char *mdnl_reader_format(const mdnl_reader *r);

/* What a format tells beyond frames, by key, or NULL when it has nothing:
 * "units" (the length unit of the positions as read: "angstrom (converted
 * from nm)" or "nm (native)" for every format with `nm`, else the format's
 * own answer), "masses" (LAMMPS data: "1:63.546 2:15.999").
 * Valid while the reader is open. */
const char *mdnl_reader_info(const mdnl_reader *r, const char *key);

/* With keep_extras, what the last frame held beyond what mdnl_frame holds
 * (extended XYZ: other Properties columns and comment keys; xyz_reader.h),
 * or NULL. Valid until the next read. */
struct mdnl_xyz_extras;
const struct mdnl_xyz_extras *mdnl_reader_extras(const mdnl_reader *r);

/* The names of the formats mdnl reads, comma separated ("xyz, extxyz, ..."). */
const char *mdnl_reader_formats(void);

void mdnl_reader_close(mdnl_reader *r); /* NULL is a no-op */

/* ---- for format implementers ----
 *
 * A format is one row of the table in io/reader.c: define a
 * `const mdnl_format mdnl_format_NAME = {...}` in its reader's .c file and
 * add `&mdnl_format_NAME` to `formats[]` there (its declaration is the
 * MDNL_FORMAT(NAME) line above the table). reader.c does the rest: sniffing,
 * extensions, --format, compression and standard input, counting, errors.
 *
 * sniff(head, n) looks at the first n bytes of the content (n <=
 * MDNL_STREAM_HEAD, fewer only for a shorter file; decompressed already) and
 * answers MDNL_SNIFF_SURE (a magic number, an unmistakable header: wins over
 * the extension), MDNL_SNIFF_MAYBE (plausible: used when no extension
 * decides) or MDNL_SNIFF_NO.
 *
 * open(in, &state): a `stream` format gets in->stream (positioned at the
 * first byte, owned by the reader: never closed by the format); a format
 * without `stream` (H5MD, XTC, TRR, DCD: seekable files) gets in->stream ==
 * NULL and opens in->path itself, and reader.c refuses standard input, pipes
 * and compressed content for it (sniffing it read only the stream's buffered
 * head, so nothing of a pipe is lost before that error). Errors name in->name ("<stdin>" for "-"). next/skip as
 * mdnl_reader_next/skip. count may be NULL: reader.c then counts by skipping
 * through a second reader on the same path (a regular file only). info (may
 * be NULL) answers mdnl_reader_info; name (may be NULL) refines the format's
 * name after open (XYZ -> "extxyz"); select (may be NULL) takes
 * mdnl_reader_select's hint. */
enum { MDNL_SNIFF_NO = 0, MDNL_SNIFF_MAYBE = 1, MDNL_SNIFF_SURE = 2 };

typedef struct mdnl_format_input {
    const char *path;             /* as the user gave it; "-" for standard input */
    const char *name;             /* for messages: the path, or "<stdin>" */
    mdnl_stream *stream;          /* stream formats only; borrowed */
    const mdnl_read_options *opt; /* never NULL */
} mdnl_format_input;

typedef struct mdnl_format {
    const char *name;       /* as --format and info spell it: "lammps-dump" */
    const char *extensions; /* space separated, lower case, with the dot: ".lammpstrj .dump" */
    bool stream;            /* reads through io/stream.h (text, or binary that never seeks) */
    bool nm;                /* lengths are nm in the file: Å once read unless units_native */
    int (*sniff)(const unsigned char *head, size_t n);
    mdnl_status (*open)(const mdnl_format_input *in, void **state);
    mdnl_status (*next)(void *state, mdnl_frame *f);
    mdnl_status (*skip)(void *state);
    mdnl_status (*count)(void *state, int64_t *nframes);
    const char *(*info)(void *state, const char *key);
    const char *(*name_of)(void *state);
    void (*close)(void *state); /* NULL state is a no-op */
    void (*select)(void *state, int64_t start, int64_t stop, int64_t step); /* may be NULL */
} mdnl_format;

MDNL_END_C

#endif

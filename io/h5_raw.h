/* h5_raw.h — decoding an HDF5 chunk from the file's own bytes, without the
 * HDF5 library: pread at the chunk's address, then the filter pipeline
 * undone (fletcher32 verified and stripped, deflate inflated with zlib,
 * shuffle reversed), as HDF5's H5Z filters do. The H5MD reader's workers
 * call this in parallel (the serial HDF5 library is not thread-safe: the
 * one thread that calls HDF5 gathers the chunks' addresses, sizes and
 * filter masks first). io/chunk_pool.c's mdnl_shuffle_deflate is the
 * writing twin.
 *
 * Every size the file gives is checked before it is used: the chunk must
 * lie inside the file, be no larger than its decoded size allows, and
 * decode to exactly the chunk's size; anything else is an input error with
 * a one-line reason, never an overflow or a giant allocation. */
#ifndef MDNL_H5_RAW_H
#define MDNL_H5_RAW_H

#include "chunk_pool.h"
#include "mdnl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

MDNL_BEGIN_C

enum { MDNL_RAW_DEFLATE = 1, MDNL_RAW_SHUFFLE = 2, MDNL_RAW_FLETCHER32 = 3 };
enum { MDNL_RAW_MAX_FILTERS = 8 };

/* A dataset's filter pipeline in the order HDF5 applies it when writing. */
typedef struct mdnl_raw_filters {
    int n;
    int id[MDNL_RAW_MAX_FILTERS];         /* MDNL_RAW_* */
    unsigned elsize[MDNL_RAW_MAX_FILTERS]; /* shuffle: the element size */
} mdnl_raw_filters;

/* One stored chunk: its address in the file, its stored bytes, and the
 * filters it skipped (bit i: filter i of the pipeline not applied). */
typedef struct mdnl_raw_chunk {
    uint64_t addr, size;
    unsigned mask;
} mdnl_raw_chunk;

/* Outcome of mdnl_raw_decode. */
enum { MDNL_RAW_OK = 0, MDNL_RAW_BAD = 1, MDNL_RAW_NOMEM = 2, MDNL_RAW_IO = 3 };

/* Reads chunk c of file descriptor fd (a file of file_size bytes) and undoes
 * the filters f into exactly `bytes` bytes; *out points at them, in a or b
 * (the caller's scratch, grown as needed, reused from chunk to chunk), or
 * in `into` (NULL: unused) when no filter applies to the chunk.
 * MDNL_RAW_BAD (corrupt or inconsistent data) and MDNL_RAW_IO (a read that
 * failed) write a reason into why (why_size bytes, NUL-terminated). Safe to
 * call from several threads with different scratch. */
int mdnl_raw_decode(int fd, int64_t file_size, const mdnl_raw_chunk *c, const mdnl_raw_filters *f, size_t bytes,
                    unsigned char *into, mdnl_pool_buf *a, mdnl_pool_buf *b, const unsigned char **out, char *why,
                    size_t why_size);

/* Reads n bytes at offset off of fd into dst (short reads continued); the
 * same outcomes as mdnl_raw_decode, MDNL_RAW_BAD for bytes past the end. */
int mdnl_raw_pread(int fd, uint64_t off, size_t n, void *dst, char *why, size_t why_size);

/* HDF5's Fletcher-32 checksum (H5_checksum_fletcher32) of n bytes. */
uint32_t mdnl_fletcher32(const void *data, size_t n);

MDNL_END_C

#endif

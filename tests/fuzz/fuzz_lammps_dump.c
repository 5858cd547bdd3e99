/* fuzz_lammps_dump.c — the lammps-dump reader on arbitrary bytes, through io/reader.h
 * with --format lammps-dump (so the sniff cannot steer the bytes elsewhere): the
 * input is written to a scratch file and read twice by fuzz_reader_passes
 * (fuzz_common.h). The bytes may be gzip, xz or zstd: the stream layer
 * (io/stream.c) is fuzzed on the way. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_scratch(".lammpstrj");
    fuzz_write_file(path, data, size);
    fuzz_reader_passes(path, "lammps-dump");
    return 0;
}

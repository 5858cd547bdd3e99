/* fuzz_detect.c — format detection (io/reader.c) and the byte stream
 * (io/stream.c) on arbitrary bytes: the input is written to a scratch file
 * without a telling extension and read with the format left to the sniffs,
 * so every format's sniff and every decompressor sees it. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_scratch(".in");
    fuzz_write_file(path, data, size);
    fuzz_reader_passes(path, NULL);
    return 0;
}

/* fuzz_dcd.c — the DCD reader (io/dcd_reader.c) on arbitrary bytes, through
 * fuzz_binary.h: count and read every frame, then alternate skip and read. */
#include "fuzz_binary.h"

#include "dcd_reader.h"

FUZZ_BINARY_HARNESS(dcd, ".dcd")

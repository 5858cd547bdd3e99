/* fuzz_xtc.c — the XTC reader (io/xtc_reader.c) on arbitrary bytes, through
 * fuzz_binary.h: count and read every frame, then alternate skip and read. */
#include "fuzz_binary.h"

#include "xtc_reader.h"

FUZZ_BINARY_HARNESS(xtc, ".xtc")

/* fuzz_trr.c — the TRR reader (io/trr_reader.c) on arbitrary bytes, through
 * fuzz_binary.h: count and read every frame, then alternate skip and read. */
#include "fuzz_binary.h"

#include "trr_reader.h"

FUZZ_BINARY_HARNESS(trr, ".trr")

/* bench_rdf_main.c — a stand-alone driver for mdnl_bench_rdf() until the CLI's
 * `mdnl bench` calls it. Build (from the repository root, after the CMake build):
 *   cc -std=c11 -O2 -fopenmp -Isrc -Iio -Ikernels -DMDNL_HAVE_CUDA=1 tools/bench_rdf_main.c \
 *      build/libmdnl_lib.a -L/usr/local/cuda/lib64 -lcudart_static -lstdc++ -lhdf5 -lm -ldl -lrt -lpthread \
 *      -o build/bench_rdf
 * Usage: bench_rdf [--json] */
#include "bench_rdf.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int json = argc > 1 && strcmp(argv[1], "--json") == 0;
    mdnl_status st = mdnl_bench_rdf(stdout, json);
    if (st != MDNL_OK)
        fprintf(stderr, "bench_rdf: error: %s\n", mdnl_last_error());
    return (int)st;
}

/* bench_energy_main.c — a stand-alone driver for mdnl_bench_energy until
 * `mdnl bench` (src/main.c) calls it. Built by hand against the library:
 *
 *   gcc -O2 -std=c11 -Isrc -Iio -Ikernels -c tools/bench_energy_main.c -o build/bench_energy_main.o
 *   nvcc -arch=sm_90 build/bench_energy_main.o build/libmdnl_lib.a -o build/bench_energy \
 *        -L/usr/lib/x86_64-linux-gnu/hdf5/serial -lhdf5 -lgomp -lm
 *
 *   build/bench_energy [NSIDE] [--json]     (NSIDE 64: lj-1m, the default)
 */
#include "bench_energy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int nside = 64, json = 0;
    for (int k = 1; k < argc; ++k) {
        if (strcmp(argv[k], "--json") == 0)
            json = 1;
        else
            nside = atoi(argv[k]);
    }
    mdnl_status st = mdnl_bench_energy_size(stdout, json, nside);
    if (st != MDNL_OK) {
        fprintf(stderr, "bench_energy: error: %s\n", mdnl_last_error());
        return (int)st;
    }
    return 0;
}

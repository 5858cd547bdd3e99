/* bench_main.c — a stand-alone driver for mdnl_bench_run (bench/bench.c),
 * for profiling the neighbor-list kernels under ncu without the CLI. Usage:
 *   bench_main [--sizes graphene-17k,graphene-1m,lj-1m] [--json]
 * Built by tools/bench/build.sh against the libraries of build/. */
#include "bench.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *sizes[8];
    int nsizes = 0, json = 0;
    static char buf[256];
    for (int a = 1; a < argc; ++a) {
        if (strcmp(argv[a], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[a], "--sizes") == 0 && a + 1 < argc) {
            strncpy(buf, argv[++a], sizeof buf - 1);
            for (char *tok = strtok(buf, ","); tok && nsizes < 8; tok = strtok(NULL, ","))
                sizes[nsizes++] = tok;
        } else {
            fprintf(stderr, "usage: bench_main [--sizes a,b,...] [--json]\n");
            return 2;
        }
    }
    mdnl_status st = mdnl_bench_run(sizes, nsizes, json, stdout);
    if (st != MDNL_OK) {
        fprintf(stderr, "mdnl: error: %s\n", mdnl_last_error());
        return (int)st;
    }
    return 0;
}

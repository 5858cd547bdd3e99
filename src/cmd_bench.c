#define _POSIX_C_SOURCE 200809L
/* cmd_bench.c — `mdnl bench`: the GPU benchmarks (validated against the CPU
 * twins first), on systems built in memory. */
#include "bench.h"
#include "cli.h"

#include <stdlib.h>
#include <string.h>

mdnl_status mdnl_cmd_bench(int argc, char **argv)
{
    mdnl_opts o;
    mdnl_status st = mdnl_parse_options("bench", "sizes,json,quiet", argc, argv, 2, &o);
    if (st != MDNL_OK)
        return st;
    if (o.npositional)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl bench: unexpected argument \"%s\"", o.positional[0]);
    const char *names[16];
    int n = 0;
    char buf[256];
    if (o.sizes) {
        snprintf(buf, sizeof buf, "%s", o.sizes);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (n == 16)
                return mdnl_error(MDNL_ERR_USAGE, "--sizes: at most 16 systems");
            names[n++] = t;
        }
    }
    return mdnl_bench_run(names, n, o.json, stdout);
}

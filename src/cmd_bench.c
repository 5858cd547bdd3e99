/* cmd_bench.c — `mdnl bench`: the benchmarks of every kernel family on
 * systems built in memory, each validated against its CPU twin before it is
 * timed: neighbor lists (bench/bench.c), energies (bench/bench_energy.c),
 * histograms (bench/bench_rdf.c). */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include "bench_energy.h"
#include "bench_rdf.h"
#include "cli.h"
#include "systems.h"

#include <stdlib.h>
#include <string.h>

/* Runs one benchmark into a memory stream and copies its JSON object (minus
 * the trailing newline) to stdout after `key`. */
typedef mdnl_status (*bench_fn)(void *arg, FILE *out, int json);

static mdnl_status run_json(const char *key, int first, bench_fn fn, void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory for the benchmark output");
    mdnl_status st = fn(arg, mem, 1);
    fclose(mem);
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
        buf[--len] = '\0';
    if (st == MDNL_OK)
        printf("%s\"%s\":%s", first ? "" : ",", key, len ? buf : "null");
    free(buf);
    return st;
}

typedef struct nlist_args {
    const char *const *names;
    int n;
} nlist_args;

static mdnl_status bench_nlist(void *arg, FILE *out, int json)
{
    nlist_args *a = arg;
    return mdnl_bench_run(a->names, a->n, json, out);
}

/* arg: NULL for lj-1m (and graphene-1m for the histograms), non-NULL for
 * lj-100k alone. */
static mdnl_status bench_energy(void *arg, FILE *out, int json)
{
    return arg ? mdnl_bench_energy_size(out, json, 29) : mdnl_bench_energy(out, json);
}

static mdnl_status bench_rdf(void *arg, FILE *out, int json) { return mdnl_bench_rdf_cases(out, json, arg != NULL); }

/* energy and histograms on the shuffled liquid */
static mdnl_status bench_energy_liquid(void *arg, FILE *out, int json)
{
    (void)arg;
    return mdnl_bench_energy_system(out, json, "lj-1m-liquid");
}
static mdnl_status bench_rdf_liquid(void *arg, FILE *out, int json)
{
    (void)arg;
    return mdnl_bench_rdf_system(out, json, "lj-1m-liquid");
}

mdnl_status mdnl_cmd_bench(int argc, char **argv)
{
    mdnl_opts o;
    mdnl_status st = mdnl_parse_options("bench", mdnl_command_options("bench"), argc, argv, 2, &o);
    if (st != MDNL_OK)
        return st;
    mdnl_systems_set_data_dir(o.data_dir);
    if (o.npositional)
        return mdnl_error(MDNL_ERR_USAGE, "mdnl bench: unexpected argument \"%s\"", o.positional[0]);
    if (o.sizes && strcmp(o.sizes, "rdf") == 0) { /* the histogram benchmark alone */
        if ((st = mdnl_bench_check(NULL, 0)) != MDNL_OK)
            return st;
        if (!o.json)
            return mdnl_bench_rdf(stdout, 0);
        printf("{");
        if ((st = run_json("rdf", 1, bench_rdf, NULL)) == MDNL_OK)
            printf("}\n");
        return st;
    }
    const char *names[16];
    int n = 0;
    char buf[256];
    bool lj = true, rdf = true, small = false, nlist = true, liquid = !o.sizes;
    if (o.sizes) {
        snprintf(buf, sizeof buf, "%s", o.sizes);
        lj = rdf = nlist = false;
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            if (strcmp(t, "lj-100k") == 0) { /* energy and histograms only */
                small = true;
                continue;
            }
            if (n == 16)
                return mdnl_error(MDNL_ERR_USAGE, "--sizes: at most 16 systems");
            names[n++] = t;
            nlist = true;
            lj = lj || strcmp(t, "lj-1m") == 0;
            liquid = liquid || strcmp(t, "lj-1m-liquid") == 0;
            rdf = rdf || strcmp(t, "lj-1m") == 0 || strcmp(t, "graphene-1m") == 0;
        }
    }
    /* every family needs the device, lj-100k's energy and histograms too */
    if ((st = mdnl_bench_check(names, n)) != MDNL_OK)
        return st;
    nlist_args na = {names, n};
    static const int one = 1;
    if (o.json) {
        int first = 1;
        printf("{");
        if (nlist && (st = run_json("neighbors", first, bench_nlist, &na)) != MDNL_OK)
            return st;
        first = first && !nlist;
        if (lj && (st = run_json("energy", first, bench_energy, NULL)) != MDNL_OK)
            return st;
        first = first && !lj;
        if (rdf && (st = run_json("rdf", first, bench_rdf, NULL)) != MDNL_OK)
            return st;
        first = first && !rdf;
        if (liquid && ((st = run_json("energy_liquid", first, bench_energy_liquid, NULL)) != MDNL_OK ||
                       (st = run_json("rdf_liquid", 0, bench_rdf_liquid, NULL)) != MDNL_OK))
            return st;
        first = first && !liquid;
        if (small && ((st = run_json("energy_100k", first, bench_energy, (void *)&one)) != MDNL_OK ||
                      (st = run_json("rdf_100k", 0, bench_rdf, (void *)&one)) != MDNL_OK))
            return st;
        printf("}\n");
        return MDNL_OK;
    }
    if (nlist && (st = mdnl_bench_run(names, n, 0, stdout)) != MDNL_OK)
        return st;
    if (lj) {
        printf("\n");
        if ((st = mdnl_bench_energy(stdout, 0)) != MDNL_OK)
            return st;
    }
    if (rdf) { /* the RDF benchmark runs lj-1m and graphene-1m together */
        printf("\n");
        if ((st = mdnl_bench_rdf(stdout, 0)) != MDNL_OK)
            return st;
    }
    if (liquid) { /* energy and histograms on the shuffled LAMMPS liquid */
        printf("\n");
        if ((st = mdnl_bench_energy_system(stdout, 0, "lj-1m-liquid")) != MDNL_OK)
            return st;
        printf("\n");
        if ((st = mdnl_bench_rdf_system(stdout, 0, "lj-1m-liquid")) != MDNL_OK)
            return st;
    }
    if (small) { /* lj-100k: the size of the `mdnl run` benchmark */
        printf("\n");
        if ((st = mdnl_bench_energy_size(stdout, 0, 29)) != MDNL_OK)
            return st;
        printf("\n");
        st = mdnl_bench_rdf_cases(stdout, 0, 1);
    }
    return st;
}

/* main.c — the mdnl command: dispatches to a subcommand, prints its error as
 * one line on stderr and exits with the status (SPEC §7). The only place
 * that calls exit. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

typedef struct command {
    const char *name;
    mdnl_status (*run)(int argc, char **argv);
    const char *help;
} command;

static const char common_help[] =
    "Common options:\n"
    "  --frames START:STOP:STEP  frames to use (Python slice; K alone is frame K); indices stay the file's\n"
    "  --box a,b,c | --box ax,ay,az,bx,by,bz,cx,cy,cz\n"
    "                            cell override (rows are lattice vectors), periodic in x, y, z\n"
    "  --no-pbc                  treat every axis as open\n"
    "  --group NAME              H5MD particle group\n"
    "  --quiet                   no summary on stderr\n"
    "  --json                    a one-object summary on stdout\n"
    "  --progress | --no-progress  progress bar on stderr (default: on a terminal with >1 frame)\n"
    "  -h, --help                this help\n";

static const command commands[] = {
    {"neighbors", mdnl_cmd_neighbors,
     "usage: mdnl neighbors INPUT -c CUT [--list half|full] [-o OUT.tsv|-] [options]\n"
     "Every pair closer than CUT in every selected frame, as a TSV table\n"
     "  # frame i j distance   (0-based indices; half list: i < j, i = j for self images)\n"
     "Options:\n"
     "  -c, --cutoff CUT          neighbor cutoff (required, > 0)\n"
     "  --list half|full          half list (default) or both directions\n"
     "  -o, --output FILE         TSV output (default: standard output; - is standard output)\n"
     "  --backend auto|cpu|cuda   where to compute (auto: the GPU when present)\n"
     "  --method auto|brute-atomic|brute-noatomic|cell\n"},
    {"info", mdnl_cmd_info,
     "usage: mdnl info INPUT [--json]\n"
     "Atoms, frames, species, cell and periodicity of the first frame.\n"},
    {"gen", mdnl_cmd_gen,
     "usage: mdnl gen graphene --nx NX --ny NY [--bond 1.42] [--noise S --seed K] [--vacuum 20] -o OUT\n"
     "A periodic rectangular graphene sheet of NX x NY four-atom cells (a = bond*sqrt(3), b = 3*bond),\n"
     "periodic in x and y, open in z, written as extended XYZ (--to xyz for plain XYZ).\n"
     "  --noise S --seed K        Gaussian displacement of standard deviation S on every coordinate\n"},
};

static void print_usage(FILE *fp)
{
    fprintf(fp, "mdnl %s — neighbor lists, pair energies and RDFs of molecular-dynamics frames\n"
                "usage: mdnl COMMAND [options]   (mdnl COMMAND --help for each)\n"
                "commands:\n"
                "  neighbors INPUT -c CUT      neighbor lists as TSV\n"
                "  info INPUT [--json]         what a trajectory holds\n"
                "  gen graphene --nx --ny -o   generate a graphene sheet\n"
                "  --version                   print the version\n",
            MDNL_VERSION);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return MDNL_ERR_USAGE;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("mdnl %s\n", MDNL_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        print_usage(stdout);
        return 0;
    }
    for (size_t k = 0; k < sizeof commands / sizeof *commands; ++k) {
        if (strcmp(argv[1], commands[k].name) != 0)
            continue;
        mdnl_status st = commands[k].run(argc, argv);
        if (st == MDNL_END) { /* -h / --help */
            fputs(commands[k].help, stdout);
            fputs(common_help, stdout);
            return 0;
        }
        if (st != MDNL_OK) {
            fprintf(stderr, "mdnl: error: %s\n", mdnl_last_error());
            return st;
        }
        return 0;
    }
    fprintf(stderr, "mdnl: error: unknown command \"%s\" (see mdnl --help)\n", argv[1]);
    return MDNL_ERR_USAGE;
}

/* main.c — the mdnl command: dispatches to a subcommand, prints its error as
 * one line on stderr and exits with the status (SPEC §7). The only place
 * that calls exit. */
#include "cli.h"
#include "h5md_writer.h"
#include "mpi_split.h"
#include "output_file.h"

#include <stdio.h>
#include <string.h>

typedef struct command {
    const char *name;
    mdnl_status (*run)(int argc, char **argv);
    const char *help;
} command;

/* Each command's own usage and options; mdnl_print_option_help (cli.c) adds
 * the shared options it takes, from the same list its parser accepts. */
static const command commands[] = {
    {"run", mdnl_cmd_run,
     "usage: mdnl run INPUT [-c CUT] [--neighbors [--list half|full] [--with shift,vector]] [--pair SPEC]\n"
     "                [--rmax R --bins B [--pairs A-B,...] [--volume V]] -o RESULTS.h5|DIR/ [options]\n"
     "       mdnl run INPUT --read-only [options]\n"
     "Every selected frame through neighbors, energy and the histogram in one streaming pass:\n"
     "reading frame k+1, computing frame k and writing frame k-1 overlap (memory stays a few\n"
     "frames). Give at least one of --neighbors, --pair, --rmax/--bins. Lengths (CUT, R, V, the\n"
     "--pair lengths) are in the input's length unit, energies in the unit of the --pair parameters.\n"
     "Options:\n"
     "  -c, --cutoff CUT          neighbor and potential cutoff (required with --neighbors or --pair)\n"
     "  --neighbors               store every frame's neighbor list\n"
     "  --list half|full          half list (default) or both directions (with --neighbors)\n"
     "  --with shift,vector       each pair's image shift S and/or vector D too (with --neighbors; as\n"
     "                            mdnl neighbors --with)\n"
     "  --pair lj:epsilon=E,sigma=S[,shift=yes|no] | morse:d0=D,alpha=A,r0=R[,shift=yes|no]\n"
     "                            total pair energy per frame (as mdnl energy)\n"
     "  --rmax R --bins B         RDF averaged over the frames (as mdnl rdf)\n"
     "  --pairs C-C,C-H           partial RDFs for species pairs (default: the total)\n"
     "  --volume V                RDF normalisation volume (open frames; overrides the cell volume)\n"
     "  -o, --output RESULTS.h5   one HDF5 file: /observables/potential_energy, /rdf/<total|A-B>,\n"
     "                            /neighbors (layout as in the single commands)\n"
     "  -o, --output DIR/         a directory (trailing slash, or one that exists) of TSV tables in\n"
     "                            the single commands' formats: energy.tsv, rdf.tsv, neighbors.tsv\n"
     "  --read-only               read and parse every selected frame, compute and write nothing\n"
     "                            (the I/O floor for benchmarks; also a quick check that every frame parses)\n"
     "--json summary: frames, atoms (per frame; atoms_max when it changes), output, pairs, energy\n"
     "first/last/mean/min/max, busy seconds per stage (read, compute, write), wall seconds and\n"
     "frames/s; ranks and frames_per_rank.\n"
     "Under mpirun -n P (or srun) the selected frames are split into P contiguous blocks, one\n"
     "per rank (GPU: local rank mod devices); rank 0 writes the one result, the same as one\n"
     "process's (README: running on a cluster).\n"
     "SIGINT, SIGTERM and SIGHUP remove the temporary outputs (.NAME.tmp-PID-N) and exit 130, 143, 129.\n"},
    {"neighbors", mdnl_cmd_neighbors,
     "usage: mdnl neighbors INPUT -c CUT [--list half|full] [--with shift,vector]\n"
     "                      [-o OUT.tsv|OUT.h5|-] [options]\n"
     "Every pair closer than CUT in every selected frame, as a TSV table\n"
     "  # frame i j distance   (0-based indices; half list: i < j, i = j for self images)\n"
     "Options:\n"
     "  -c, --cutoff CUT          neighbor cutoff in the input's length unit (required, > 0)\n"
     "  --list half|full          half list (default) or both directions\n"
     "  --with shift,vector       add each pair's integer image shift S (columns S0 S1 S2) and/or its\n"
     "                            vector D = r_j - r_i + S.cell (Dx Dy Dz, 17 digits), relative to\n"
     "                            the positions as given (ASE's neighbor_list S and D)\n"
     "  -o, --output FILE         TSV output (default: standard output; - is standard output),\n"
     "                            or HDF5 (.h5/.h5md/.hdf5): one CSR per frame under /neighbors\n"
     "                            (with --with: /neighbors/shift [P][3] int32, /neighbors/vector\n"
     "                            [P][3] float64)\n"},
    {"energy", mdnl_cmd_energy,
     "usage: mdnl energy INPUT -c CUT --pair SPEC [--pair-coeff A-B:PARAMS ...] [--per-atom]\n"
     "                   [-o OUT.tsv|OUT.h5|-] [options]\n"
     "Pair-potential energy of every selected frame: TSV # frame step energy, or with\n"
     "--per-atom # frame i energy (half of each pair to each atom, as LAMMPS compute pe/atom).\n"
     "Energies are in the energy unit of the --pair parameters (epsilon, d0); lengths in the\n"
     "input's length unit.\n"
     "Options:\n"
     "  -c, --cutoff CUT          potential cutoff in the input's length unit (required, > 0)\n"
     "  --pair lj:epsilon=E,sigma=S[,shift=yes|no][,cut=R][,mix=geometric|arithmetic]\n"
     "  --pair morse:d0=D,alpha=A,r0=R[,shift=yes|no][,cut=R]\n"
     "                            shifted to zero at the cutoff unless shift=no (LAMMPS pair_modify shift yes);\n"
     "                            cut: this spec's cutoff (default -c)\n"
     "  --pair-coeff A-B:PARAMS[,cut=R]\n"
     "                            parameters of the pair of species A and B (LAMMPS pair_coeff; repeatable,\n"
     "                            at most 3 species named); unset LJ pairs mixed by mix= (default geometric,\n"
     "                            LAMMPS pair_modify mix); each pair shifted and cut at its own cutoff\n"
     "  --per-atom                per-atom energies instead of totals\n"
     "  -o, --output FILE         TSV (default standard output) or HDF5: /observables/potential_energy,\n"
     "                            /particles/all/potential_energy with --per-atom\n"},
    {"coord", mdnl_cmd_coord,
     "usage: mdnl coord INPUT -c CUT [--pairs A-B,...] [-o OUT.tsv|OUT.h5|-] [--histogram HIST.tsv]\n"
     "Coordination numbers: the neighbors of every atom within CUT (the length of its row in a\n"
     "full neighbor list; periodic images count), counted while traversing the cells (no list\n"
     "stored). TSV # frame i count, or with --pairs # frame i count:A-B ... (the B neighbors of\n"
     "an A atom; 0 for atoms of other species).\n"
     "Options:\n"
     "  -c, --cutoff CUT          neighbor cutoff in the input's length unit (required, > 0)\n"
     "  --pairs A-B,C-D           per species pair columns (at most 8; default: every neighbor)\n"
     "  -o, --output FILE         TSV (default standard output) or HDF5: /coordination/<total|A-B>/{frame,\n"
     "                            step,value [frames][atoms],histogram}\n"
     "  --histogram FILE          TSV # count atoms (per pair: atoms:A-B, A atoms only), over all frames\n"},
    {"rdf", mdnl_cmd_rdf,
     "usage: mdnl rdf INPUT --rmax R --bins B [--pairs A-B,...] [-o OUT.tsv|OUT.h5|-] [--plot OUT.svg]\n"
     "                [--per-frame]\n"
     "Radial distribution function averaged over the selected frames. Pair distances below R are\n"
     "binned into B uniform bins on [0, R) while the cells are traversed (no list stored; R may\n"
     "exceed half the box: images count). TSV # r_lo r_hi r g n (per pair: g:A-B n:A-B); open\n"
     "frames without --volume give # r_lo r_hi r count count_per_atom n. Distances are in the\n"
     "input's length unit.\n"
     "Options:\n"
     "  --rmax R --bins B         histogram range (input length unit) and bin count (required)\n"
     "  --pairs C-C,C-H           partial RDFs for species pairs (default: the total)\n"
     "  --volume V                normalisation volume (open frames; overrides the cell volume)\n"
     "  -o, --output FILE         TSV (default standard output) or HDF5 /rdf/<total|A-B>/{r_lo,r_hi,r,g,n,counts}\n"
     "  --plot OUT.svg            an SVG plot of g(r) and n(r) (.svg only; not the -o file)\n"
     "  --per-frame               also every frame's g(r) and counts: HDF5 /rdf/<name>/{frame,step,g_frames,\n"
     "                            counts_frames} [frames][bins], and with --plot a heat map of g(r, frame)\n"
     "                            below the mean (needs -o FILE.h5 or --plot)\n"},
    {"info", mdnl_cmd_info,
     "usage: mdnl info INPUT [--json] [options]\n"
     "Atoms, frames, species, cell and periodicity of the first frame; the format read (xyz,\n"
     "extxyz, h5md, lammps-dump, lammps-data, gro, pdb, xtc, trr, dcd; +gzip, +xz or +zstd when\n"
     "compressed), the length unit, where the species come from, and a LAMMPS data file's masses.\n"
     "Reads its input once, so INPUT may be - or a pipe (not for H5MD, XTC, TRR, DCD).\n"},
    {"gen", mdnl_cmd_gen,
     "usage: mdnl gen graphene --nx NX --ny NY [--bond 1.42] [--noise S --seed K] [--vacuum 20] -o OUT\n"
     "A periodic rectangular graphene sheet of NX x NY four-atom cells (a = bond*sqrt(3), b = 3*bond),\n"
     "periodic in x and y, open in z, written as extended XYZ. Lengths are in Angstrom.\n"
     "Options:\n"
     "  --nx NX --ny NY           cells along x and y (required)\n"
     "  --bond B                  C-C bond length (default 1.42)\n"
     "  --noise S --seed K        Gaussian displacement of standard deviation S on every coordinate\n"
     "  --vacuum V                cell height along z (default 20)\n"
     "  --to xyz|extxyz           plain XYZ instead of extended XYZ (default extxyz)\n"
     "  -o, --output OUT          the file (- for standard output; required)\n"},
    {"convert", mdnl_cmd_convert,
    "usage: mdnl convert INPUT OUTPUT [--to xyz|extxyz|h5md|xtc|dcd|lammps-dump] [options]\n"
    "Copies the selected frames of any input mdnl reads to XYZ, extended XYZ, H5MD, XTC, DCD or a\n"
    "LAMMPS dump, by --to or OUTPUT's extension: .xyz -> plain XYZ, .extxyz -> extended XYZ,\n"
    ".h5/.h5md/.hdf5 -> H5MD 1.1, .xtc -> XTC (nm, precision 1000), .dcd -> DCD (Å, unit cell),\n"
    ".lammpstrj/.lammpsdump/.dump -> dump custom (id type element x y z); - -> extended XYZ on\n"
    "standard output. Any other extension is a usage error (exit 2). XTC, DCD and H5MD need a file,\n"
    "not standard output. H5MD: positions and box edges carry the unit \"Angstrom\" and time \"ps\",\n"
    "the values are the input's unchanged; without a time in the input, time = step. Extended XYZ\n"
    "keeps the input's extra per-atom arrays and keys; other outputs drop them with a warning.\n"
    "Options:\n"
    "  --to xyz|extxyz|h5md|xtc|dcd|lammps-dump  the output format, whatever OUTPUT's extension\n"},
    {"bench", mdnl_cmd_bench,
     "usage: mdnl bench [--sizes graphene-17k,graphene-1m,graphene-1m-shuffled,lj-1m,lj-100k,lj-1m-liquid,\n"
     "                  lj-1m-liquid-sorted,cu-131k\n"
     "                  | --sizes rdf] [--json] [--data DIR]\n"
     "GPU benchmark of the kernels on built-in systems: neighbor-list methods, energy (fused and\n"
     "from a list, each reduction), histograms (each variant and traversal; --sizes rdf: only\n"
     "these, on lj-1m and graphene-1m). Each result is\n"
     "checked against the CPU twin, then timed with CUDA events (median of repeats).\n"
     "Prints ms per method and stage, atoms/s, pairs/s, bytes written and the ratio to the\n"
     "bandwidth floor (bytes moved / the device's theoretical bandwidth, 2 x memory clock x\n"
     "bus width, printed in the header). --sizes limits every benchmark to the systems\n"
     "named (energy: lj-1m; histograms: lj-1m and graphene-1m, run together when either is;\n"
     "lj-100k: energy and histograms on 97,556 LJ atoms, no neighbor lists; lj-1m-liquid: also the\n"
     "energy and histograms on it). Every system builds full and half lists. The liquids read\n"
     "lj-liquid-131k.h5md from --data DIR, else from ../data or ../../data beside the binary,\n"
     "else from ./data.\n"
     "Needs a CUDA device (exit 4 without one, whatever --sizes).\n"
     "Options:\n"
     "  --sizes LIST              the systems (above)\n"
     "  --data DIR                the folder of lj-liquid-131k.h5md\n"},
};

static void print_usage(FILE *fp)
{
    fprintf(fp,
            "mdnl %s — neighbor lists, pair energies and RDFs of molecular-dynamics frames\n"
            "usage: mdnl COMMAND [options]   (mdnl COMMAND --help for each)\n"
            "commands:\n"
            "  run INPUT ... -o OUT.h5|DIR/  neighbors, energy and RDF in one streaming pass\n"
            "  neighbors INPUT -c CUT        neighbor lists as TSV\n"
            "  energy INPUT -c CUT --pair    pair energies (LJ, Morse)\n"
            "  coord INPUT -c CUT            coordination numbers per atom and their histogram\n"
            "  rdf INPUT --rmax --bins       radial distribution functions\n"
            "  info INPUT [--json]           what a trajectory holds\n"
            "  gen graphene --nx --ny -o     generate a graphene sheet\n"
            "  convert INPUT OUTPUT          XYZ / extended XYZ / H5MD / XTC / DCD / LAMMPS dump\n"
            "  bench [--sizes ...]           GPU benchmark of the kernels\n"
            "  --version                     print the version\n"
            "INPUT: XYZ, extended XYZ, H5MD, LAMMPS dump and data, GRO, PDB, XTC, TRR, DCD (detected;\n"
            "--format NAME); text formats plain or gzip / xz / zstd; - is standard input.\n"
            "Lengths are in the input's length unit, energies in the unit of the --pair parameters.\n",
            MDNL_VERSION);
}

int main(int argc, char **argv)
{
    mdnl_temp_install_signals(); /* SIGINT/SIGTERM/SIGHUP remove the temporary outputs (output_file.h) */
    mdnl_hdf5_no_exit_handler(); /* a close that failed on a full disk must not crash at exit */
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
        /* under mpirun every rank agrees on the outcome; rank 0 alone speaks */
        const bool speak = mdnl_mpi_end(&st);
        if (st == MDNL_END) { /* -h / --help */
            if (speak) {
                fputs(commands[k].help, stdout);
                mdnl_print_option_help(stdout, commands[k].name);
            }
            st = MDNL_OK;
        }
        if (st != MDNL_OK && speak)
            fprintf(stderr, "mdnl: error: %s\n", mdnl_last_error());
        mdnl_mpi_finish(); /* after rank 0 spoke: no rank exits (and ends the job) before */
        return st == MDNL_OK ? 0 : st;
    }
    /* through mdnl_error, which keeps the message on one line whatever argv[1] holds */
    mdnl_error(MDNL_ERR_USAGE, "unknown command \"%s\" (see mdnl --help)", argv[1]);
    fprintf(stderr, "mdnl: error: %s\n", mdnl_last_error());
    return MDNL_ERR_USAGE;
}

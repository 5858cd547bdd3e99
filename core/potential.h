/* potential.h — pair potentials (SPEC §4) and the one pair-energy function
 * that the CPU twin and the CUDA kernels share (energy.h).
 *
 *   lj:epsilon=E,sigma=S[,shift=yes|no]       U = 4E[(S/r)^12 - (S/r)^6]
 *   morse:d0=D,alpha=A,r0=R[,shift=yes|no]    U = D[e^(-2A(r-R)) - 2e^(-A(r-R))]
 *
 * U is zero at r >= cutoff and, with shift=yes (the default), U(cutoff) is
 * subtracted below it, as LAMMPS `pair_modify shift yes` does; the shift is
 * computed from the double cutoff, like LAMMPS.
 *
 * Precision. A pair's energy is a function of its float distance d =
 * sqrtf(mdnl_pair_d2(...)), the exact value that neighbor lists store, so the
 * fused path (from d2 while traversing cells) and the from-list path (from d)
 * see the same argument bit for bit. From d on, everything is double, in the
 * same operation order as LAMMPS' pair_lj_cut.cpp / pair_morse.cpp. On the
 * device the double products and sums are written with __dmul_rn/__dadd_rn
 * so that nvcc cannot contract them into FMAs: the LJ energy of a pair is
 * then bit-identical on the host (built with -ffp-contract=off) and the
 * device; Morse differs by at most the last bit of exp(). The error against
 * LAMMPS' all-double evaluation is the float rounding of positions and of d
 * (about 1e-7 relative in r), which SPEC §4's 1e-6 relative to sum |u_ij|
 * leaves room for.
 */
#ifndef MDNL_POTENTIAL_H
#define MDNL_POTENTIAL_H

#include "frame.h"
#include "geometry.h"
#include "mdnl.h"

#include <math.h>
#include <stdint.h>

MDNL_BEGIN_C

typedef enum mdnl_potential_kind {
    MDNL_POTENTIAL_NONE = 0, /* a zero-initialised struct: every pair has zero energy */
    MDNL_POTENTIAL_LJ = 1,
    MDNL_POTENTIAL_MORSE = 2,
} mdnl_potential_kind;

/* A parsed potential. Plain data: copy it by value (also to the device, as a
 * kernel argument). */
typedef struct mdnl_potential {
    mdnl_potential_kind kind;
    int shift;       /* 1: U(cutoff) is subtracted (shift=yes, the default) */
    double cutoff;   /* the neighbor cutoff the potential is used with */
    double epsilon;  /* lj */
    double sigma;    /* lj */
    double d0;       /* morse */
    double alpha;    /* morse */
    double r0;       /* morse */
    double lj3;      /* lj: 4 E S^12 (LAMMPS' lj3) */
    double lj4;      /* lj: 4 E S^6  (LAMMPS' lj4) */
    double offset;   /* U(cutoff) unshifted when shift, else 0 */
} mdnl_potential;

/* Parses a --pair SPEC for use with `cutoff` (> 0, finite). Returns
 * MDNL_ERR_USAGE, with a message that names the offending parameter and
 * value (`--pair: lj needs sigma > 0, got "-1"`), for an unknown potential,
 * an unknown, missing, repeated, non-numeric, non-finite or non-positive
 * parameter, or a shift other than yes/no. `p` is written only on success. */
mdnl_status mdnl_potential_parse(const char *spec, double cutoff, mdnl_potential *p);

/* Fills `p` from parameters directly (no string): kind LJ uses a=epsilon,
 * b=sigma; kind MORSE uses a=d0, b=alpha, c=r0. Validates like the parser. */
mdnl_status mdnl_potential_make(mdnl_potential_kind kind, double a, double b, double c, int shift, double cutoff,
                                mdnl_potential *p);

/* "lj:epsilon=1,sigma=1,shift=yes" style description; writes at most `size`
 * bytes and returns `buf`. */
const char *mdnl_potential_describe(const mdnl_potential *p, char *buf, size_t size);

/* ---- shared host/device arithmetic ---- */

/* MDNL_DADD, MDNL_DSUB, MDNL_DMUL (no FMA contraction on the device) are in geometry.h. */

/* Unshifted LJ and Morse energies at distance r (double), in LAMMPS'
 * operation order. Kernels specialised on the kind call these directly. */
MDNL_HD double mdnl_lj_raw(const mdnl_potential *p, double r)
{
    const double r2inv = 1.0 / MDNL_DMUL(r, r);
    const double r6inv = MDNL_DMUL(MDNL_DMUL(r2inv, r2inv), r2inv);
    return MDNL_DMUL(r6inv, MDNL_DSUB(MDNL_DMUL(p->lj3, r6inv), p->lj4));
}

MDNL_HD double mdnl_morse_raw(const mdnl_potential *p, double r)
{
    const double dexp = exp(-MDNL_DMUL(p->alpha, MDNL_DSUB(r, p->r0)));
    return MDNL_DMUL(p->d0, MDNL_DSUB(MDNL_DMUL(dexp, dexp), MDNL_DMUL(2.0, dexp)));
}

/* Unshifted energy at distance r, dispatching on the kind. */
MDNL_HD double mdnl_potential_raw(const mdnl_potential *p, double r)
{
    if (p->kind == MDNL_POTENTIAL_LJ)
        return mdnl_lj_raw(p, r);
    if (p->kind == MDNL_POTENTIAL_MORSE)
        return mdnl_morse_raw(p, r);
    return 0.0;
}

/* Energy of a pair at float distance d (as stored in a neighbor list). The
 * caller has already applied the cutoff (d2 < g->cutoff2). */
MDNL_HD double mdnl_pair_energy_d(const mdnl_potential *p, float d)
{
    return MDNL_DSUB(mdnl_potential_raw(p, (double)d), p->offset);
}

/* Energy of a pair from its squared distance (mdnl_pair_d2): the fused paths'
 * entry point, equal bit for bit to mdnl_pair_energy_d(p, sqrtf(d2)). */
MDNL_HD double mdnl_pair_energy(const mdnl_potential *p, float d2)
{
    return mdnl_pair_energy_d(p, sqrtf(d2));
}

/* ---- per-pair parameters (--pair-coeff, SPEC §4) ----
 *
 * The --pair SPEC gives the parameters of every pair, and may carry
 * cut=R (that spec's cutoff; default -c) and mix=geometric|arithmetic (how
 * unset LJ pairs between named species are mixed; default geometric, as
 * LAMMPS `pair_modify mix`). Each --pair-coeff A-B:PARAMS (LAMMPS
 * `pair_coeff`) sets the pair of species A and B: every parameter of the
 * --pair kind, optionally cut=R (default: the --pair cutoff) and
 * shift=yes|no (default: the --pair shift). Species named in a --pair-coeff
 * are types 1.., every other species is type 0 (the --pair parameters).
 * An unset pair (a, b) is, for LJ, mixed from the pairs (a, a) and (b, b)
 * (each set, or the --pair parameters): epsilon = sqrt(e_a e_b); sigma and
 * cut = sqrt(x_a x_b) (geometric) or (x_a + x_b) / 2 (arithmetic), as
 * LAMMPS' mix_energy/mix_distance; for Morse (LAMMPS does not mix Morse)
 * the --pair parameters. Every pair is shifted at its own cutoff. The
 * traversal runs at the largest cutoff (mdnl_pair_table.max_cutoff) and a
 * pair (i, j) counts when its float d2 < cut2[type_i][type_j]. */
#define MDNL_PAIR_TYPES_MAX 4 /* named species + 1 */
#define MDNL_PAIR_COEFF_MAX 16

typedef enum mdnl_mix_rule {
    MDNL_MIX_GEOMETRIC = 0,
    MDNL_MIX_ARITHMETIC = 1,
} mdnl_mix_rule;

/* Plain data, copied by value (to the device as a kernel argument). */
typedef struct mdnl_pair_table {
    int ntypes;         /* 1: one pair type, every pair is p[0] */
    int mix;            /* mdnl_mix_rule */
    double max_cutoff;  /* the traversal's cutoff: the largest pair cutoff */
    char names[MDNL_PAIR_TYPES_MAX][MDNL_SYMBOL_LEN]; /* names[t] of type t >= 1 */
    float cut2[MDNL_PAIR_TYPES_MAX * MDNL_PAIR_TYPES_MAX]; /* (float)(cut * cut), as mdnl_geom.cutoff2 */
    mdnl_potential p[MDNL_PAIR_TYPES_MAX * MDNL_PAIR_TYPES_MAX]; /* [a * ntypes + b], symmetric */
} mdnl_pair_table;

/* Parses --pair `spec` (with cut= and mix=) and the `ncoeff` --pair-coeff
 * strings against the cutoff -c. MDNL_ERR_USAGE naming the offending option
 * and value for a malformed spec or coeff, a pair given twice, or more than
 * MDNL_PAIR_TYPES_MAX - 1 species named. */
mdnl_status mdnl_pair_table_parse(const char *spec, const char *const *coeffs, int ncoeff, double cutoff,
                                  mdnl_pair_table *t);

/* The type of every atom of frame f (types[f->natoms]). MDNL_ERR_INPUT
 * ("INPUT: frame N: --pair-coeff names species X, which the frame does not
 * have") when a named species is not among the frame's. */
mdnl_status mdnl_pair_table_types(const mdnl_pair_table *t, const char *input, const mdnl_frame *f,
                                  int32_t *types);

/* Energy of a pair of types a, b at squared float distance d2 (below the
 * traversal's cutoff): 0 at or beyond the pair's own cutoff. */
MDNL_HD double mdnl_pair_table_energy(const mdnl_pair_table *t, int a, int b, float d2)
{
    const int k = a * t->ntypes + b;
    return d2 < t->cut2[k] ? mdnl_pair_energy(&t->p[k], d2) : 0.0;
}

MDNL_END_C

#endif

/* lammps_common.h — what the LAMMPS dump and data readers share: the
 * --types map from type numbers to species names and the conversion of a
 * LAMMPS box (bounds and tilts) into lattice vectors. */
#ifndef MDNL_LAMMPS_COMMON_H
#define MDNL_LAMMPS_COMMON_H

#include "frame.h"
#include "mdnl.h"

#include <stdbool.h>

#define MDNL_LAMMPS_MAX_TYPES 256

/* type -> species name, from --types "1=Cu,2=O" */
typedef struct mdnl_lammps_types {
    int n;
    long long type[MDNL_LAMMPS_MAX_TYPES];
    char name[MDNL_LAMMPS_MAX_TYPES][MDNL_SYMBOL_LEN];
} mdnl_lammps_types;

/* Parses spec (NULL: an empty map). MDNL_ERR_USAGE naming --types on a
 * malformed spec. */
mdnl_status mdnl_lammps_types_parse(const char *spec, mdnl_lammps_types *t);

/* The species of the type token [s, e): its --types name, else the token
 * itself; the index in f->symbols, or -1 with an error recorded. */
int32_t mdnl_lammps_species(mdnl_frame *f, const mdnl_lammps_types *t, const char *s, const char *e);

/* The lattice of LAMMPS' box: lo/hi per axis and the tilts xy, xz, yz (0 for
 * an orthogonal box), as rows a = (xhi-xlo, 0, 0), b = (xy, yhi-ylo, 0),
 * c = (xz, yz, zhi-zlo) (the LAMMPS Howto triclinic page). */
void mdnl_lammps_cell(const double lo[3], const double hi[3], double xy, double xz, double yz, mdnl_box *box);

/* The id column of a frame's rows and the scratch to sort them; the
 * arrays grow as rows are read. Zero-initialise; free with
 * mdnl_lammps_ids_free. */
typedef struct mdnl_lammps_ids {
    int64_t *id;
    struct mdnl_lammps_id_row *scratch;
    int64_t cap;
} mdnl_lammps_ids;

/* Room for n ids; MDNL_ERR_RESOURCE when memory runs out. */
mdnl_status mdnl_lammps_ids_reserve(mdnl_lammps_ids *ids, int64_t n);

/* Puts the frame's rows (positions and species) in order of ids->id[0 ..
 * f->natoms); an id twice is MDNL_ERR_INPUT "NAME: frame K: expected
 * distinct atom ids, found id N twice". */
mdnl_status mdnl_lammps_order_by_id(mdnl_lammps_ids *ids, mdnl_frame *f, const char *name, int64_t frame);

void mdnl_lammps_ids_free(mdnl_lammps_ids *ids);

#endif

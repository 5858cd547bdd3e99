/* h5_error.h — what HDF5 said: the innermost message of its error stack, for
 * the one-line errors of the H5MD reader and writer (SPEC §7). */
#ifndef MDNL_H5_ERROR_H
#define MDNL_H5_ERROR_H

/* The innermost message of HDF5's error stack for this thread, or "no detail
 * from HDF5"; valid until the next call on this thread. */
const char *mdnl_h5_reason(void);

#endif

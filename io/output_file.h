/* output_file.h — results are written under a temporary name in the target's
 * directory and renamed when complete, so a failed run leaves no partial
 * file (SPEC §7). "-" means standard output (text only). */
#ifndef MDNL_OUTPUT_FILE_H
#define MDNL_OUTPUT_FILE_H

#include "mdnl.h"

#include <stdio.h>

MDNL_BEGIN_C

typedef struct mdnl_ofile {
    FILE *fp;      /* write here */
    char *path;    /* final name, owned */
    char *tmp;     /* temporary name, owned; NULL for stdout */
} mdnl_ofile;

/* Opens a temporary file beside `path` for writing (or wraps stdout for "-").
 * MDNL_ERR_INPUT when the directory cannot be written. */
mdnl_status mdnl_ofile_open(mdnl_ofile *o, const char *path);

/* Flushes, closes and renames onto the final name. On failure the temporary
 * file is removed and MDNL_ERR_RESOURCE returned (disk full, ...). */
mdnl_status mdnl_ofile_commit(mdnl_ofile *o);

/* Closes and removes the temporary file; safe on a zeroed or committed struct. */
void mdnl_ofile_abort(mdnl_ofile *o);

/* A fresh temporary name beside `path` for writers that open files themselves
 * (HDF5): "DIR/.NAME.tmp-PID-N". The caller frees it and renames it with
 * mdnl_commit_rename() or removes it with mdnl_temp_remove().
 *
 * Every name handed out is kept in a fixed table until it is renamed or
 * removed, so that a signal (mdnl_temp_install_signals) can remove it. A
 * name left by a process killed outright (SIGKILL) is removed by the next
 * mdnl_temp_name for the same `path`: any ".NAME.tmp-PID-N" beside it whose
 * PID is not a running process. */
char *mdnl_temp_name(const char *path);
mdnl_status mdnl_commit_rename(const char *tmp, const char *path);
void mdnl_temp_remove(const char *tmp); /* unlink and forget */

/* A directory made for outputs (mdnl run -o DIR/): removed, when empty, by a
 * signal after the files; forgotten when committed or removed. */
void mdnl_temp_dir_made(const char *dir);
void mdnl_temp_dir_forget(const char *dir);

/* SIGINT, SIGTERM and SIGHUP: remove every temporary file and directory in
 * the table and _exit(128 + signal) (130, 143, 129), as shells report a
 * process killed by the signal. Async-signal-safe: the handler only reads
 * the table, unlinks, rmdirs and _exits. Called once by main. */
void mdnl_temp_install_signals(void);

MDNL_END_C

#endif

/* output_file.h — every output of mdnl goes through this module (TSV, XYZ,
 * SVG, the HDF5 writers, `mdnl run -o DIR/`), so that what `-o` names is
 * treated one way everywhere (SPEC §7):
 *
 *   - a regular file, or a name that does not exist yet: written under an
 *     unguessable temporary name beside it (".NAME.tmp-PID-RANDOM", created
 *     with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0666 less the umask, or the mode
 *     of the file it replaces), fsync'ed and renamed over the target when
 *     complete: a failed run leaves no partial file;
 *   - "-" (standard output), a character device (/dev/null) or a FIFO:
 *     written in place as a stream, never replaced; HDF5 cannot be written
 *     there (it needs to seek) and is refused before any work;
 *   - a symbolic link: followed (to its final target, even a dangling one),
 *     and the file it points to is replaced, as a shell's `>` would; the link
 *     stays;
 *   - a directory, a block device or a socket where a file is expected, the
 *     input itself (same device and inode, whatever the spelling or a hard
 *     link) and the same output named twice: usage errors (exit 2), found by
 *     mdnl_output_check before anything is computed.
 *
 * A temporary file is locked (an open-file-description lock, which holds
 * across PID namespaces and is released by the kernel when its owner dies)
 * from its creation to its rename or removal. A later run to the same output
 * removes a ".NAME.tmp-PID-RANDOM" of its own user only when nobody holds that
 * lock and the file is not new and empty (its creator may not have locked it
 * yet): what a run killed outright (SIGKILL, a crash, a power cut) left.
 * Where the file system has no such locks, nothing is removed. */
#ifndef MDNL_OUTPUT_FILE_H
#define MDNL_OUTPUT_FILE_H

#include "mdnl.h"

#include <stdbool.h>
#include <stdio.h>

MDNL_BEGIN_C

typedef struct mdnl_ofile {
    FILE *fp;    /* write here */
    char *path;  /* the name given, owned; NULL for standard output */
    char *tmp;   /* temporary name, owned; NULL for a stream */
} mdnl_ofile;

/* What an output must be (mdnl_output_check). */
typedef enum mdnl_output_kind {
    MDNL_OUTPUT_TEXT, /* a file or a stream ("-", a character device, a FIFO) */
    MDNL_OUTPUT_HDF5, /* a file: HDF5 needs to seek */
    MDNL_OUTPUT_DIR,  /* a directory, existing or to be made (mdnl run -o DIR/) */
} mdnl_output_kind;

/* Checks the `n` outputs a command will write (paths[k] of kinds[k]; NULL
 * paths are skipped) against what exists, against the input file `input`
 * (NULL: none) and against each other, before any work: MDNL_ERR_USAGE "PATH:
 * ..." for a directory where a file is expected (or a file where a directory
 * is), HDF5 onto standard output, a character device or a FIFO, a block
 * device or a socket, an output that is the input, and an output named twice
 * (two names of one character device excepted: /dev/null twice is fine). */
mdnl_status mdnl_output_check(const char *input, int n, const char *const *paths, const mdnl_output_kind *kinds);

/* Opens `path` for writing as described above (standard output for "-").
 * MDNL_ERR_INPUT when it cannot be created, MDNL_ERR_USAGE for a directory
 * or another node that cannot be written. The caller ends o with _commit or
 * _abort. */
mdnl_status mdnl_ofile_open(mdnl_ofile *o, const char *path);

/* Flushes and, for a file, fsyncs, renames it onto the final name and closes
 * it. On failure the temporary file is removed and MDNL_ERR_RESOURCE returned
 * (disk full, ...). */
mdnl_status mdnl_ofile_commit(mdnl_ofile *o);

/* Closes and removes the temporary file; safe on a zeroed or committed struct. */
void mdnl_ofile_abort(mdnl_ofile *o);

/* For writers that open files themselves (HDF5): creates, exclusively and
 * locked, a temporary file for `path` (symbolic links followed) and returns
 * its name in *tmp (the caller frees it). The file exists, empty, when this
 * returns; the writer opens it by name, truncating (H5F_ACC_TRUNC), then
 * proves with mdnl_temp_is_ours that it opened that very file. End it with
 * mdnl_commit_rename() or mdnl_temp_remove(). MDNL_ERR_INPUT when the
 * directory cannot be written, MDNL_ERR_USAGE for an output that is not a
 * regular file (mdnl_output_check finds those first). */
mdnl_status mdnl_temp_create(const char *path, char **tmp);

/* Whether the open descriptor fd is the file mdnl_temp_create made as tmp
 * (MDNL_ERR_INPUT naming `path` when it is not: the name was replaced). */
mdnl_status mdnl_temp_is_ours(const char *path, const char *tmp, int fd);

/* fsyncs the temporary file and renames it onto `path`'s target. From the
 * first rename of the process on, SIGINT, SIGTERM and SIGHUP no longer stop
 * it: the command finishes its commits and exits with its own status (an
 * output in place is never reported as a killed run). */
mdnl_status mdnl_commit_rename(const char *tmp, const char *path);
void mdnl_temp_remove(const char *tmp); /* unlink and forget */

/* A directory made for outputs (mdnl run -o DIR/): removed, when empty, by a
 * signal after the files; forgotten when committed or removed. */
void mdnl_temp_dir_made(const char *dir);
void mdnl_temp_dir_forget(const char *dir);

/* SIGINT, SIGTERM and SIGHUP: remove every temporary file and directory in
 * the table and _exit(128 + signal) (130, 143, 129), as shells report a
 * process killed by the signal; once the first output was renamed into
 * place, the signal is ignored instead (mdnl_commit_rename). Async-signal-
 * safe: the handler only reads the table, unlinks, rmdirs and _exits. Called
 * once by main. */
void mdnl_temp_install_signals(void);

MDNL_END_C

#endif

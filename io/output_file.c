/* output_file.c — write-then-rename output files (see output_file.h). */
#define _POSIX_C_SOURCE 200809L
#include "output_file.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* ---- the table of temporary names, for the signal handler ----
 *
 * A slot's path is written while its state is FREE and published by the
 * atomic store of FILE or DIR; the handler reads only published slots. A
 * name longer than a slot, or beyond the table, is not registered (a signal
 * then leaves it behind, to be cleaned as a stale name by the next run). */
#define TEMP_SLOTS 64
#define TEMP_PATH 1024
enum { TEMP_FREE, TEMP_FILE, TEMP_DIR };
static char temp_paths[TEMP_SLOTS][TEMP_PATH];
static atomic_int temp_state[TEMP_SLOTS];
static pthread_mutex_t temp_mu = PTHREAD_MUTEX_INITIALIZER;

static void temp_register(const char *path, int kind)
{
    if (strlen(path) >= TEMP_PATH)
        return;
    pthread_mutex_lock(&temp_mu);
    for (int k = 0; k < TEMP_SLOTS; ++k)
        if (atomic_load(&temp_state[k]) == TEMP_FREE) {
            memcpy(temp_paths[k], path, strlen(path) + 1);
            atomic_store(&temp_state[k], kind);
            break;
        }
    pthread_mutex_unlock(&temp_mu);
}

static void temp_forget(const char *path, int kind)
{
    pthread_mutex_lock(&temp_mu);
    for (int k = 0; k < TEMP_SLOTS; ++k)
        if (atomic_load(&temp_state[k]) == kind && strcmp(temp_paths[k], path) == 0) {
            atomic_store(&temp_state[k], TEMP_FREE);
            break;
        }
    pthread_mutex_unlock(&temp_mu);
}

static void on_signal(int sig)
{
    for (int k = 0; k < TEMP_SLOTS; ++k)
        if (atomic_load(&temp_state[k]) == TEMP_FILE)
            unlink(temp_paths[k]);
    for (int k = 0; k < TEMP_SLOTS; ++k)
        if (atomic_load(&temp_state[k]) == TEMP_DIR)
            rmdir(temp_paths[k]); /* only when empty: what the run made and left nothing in */
    _exit(128 + sig);
}

void mdnl_temp_install_signals(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigfillset(&sa.sa_mask); /* one handler at a time: the first signal wins */
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; ++k) {
        struct sigaction old;
        /* a signal the parent ignores (nohup, a background job's SIGINT) stays ignored */
        if (sigaction(sigs[k], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(sigs[k], &sa, NULL);
    }
}

void mdnl_temp_dir_made(const char *dir) { temp_register(dir, TEMP_DIR); }

void mdnl_temp_dir_forget(const char *dir) { temp_forget(dir, TEMP_DIR); }

void mdnl_temp_remove(const char *tmp)
{
    unlink(tmp);
    temp_forget(tmp, TEMP_FILE);
}

/* Removes ".BASE.tmp-PID-N" files in `dir` (dirlen bytes of it, "" for the
 * working directory) whose PID is not a running process: what a run killed
 * with SIGKILL left behind. */
static void remove_stale(const char *dir, size_t dirlen, const char *base)
{
    char dpath[TEMP_PATH], prefix[TEMP_PATH], victim[2 * TEMP_PATH];
    if (dirlen + 1 >= sizeof dpath || strlen(base) + 8 >= sizeof prefix)
        return;
    snprintf(dpath, sizeof dpath, "%.*s", dirlen ? (int)dirlen : 1, dirlen ? dir : ".");
    int np = snprintf(prefix, sizeof prefix, ".%s.tmp-", base);
    DIR *d = opendir(dpath);
    if (!d)
        return;
    const pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, (size_t)np) != 0)
            continue;
        /* PID-N, both decimal, nothing after */
        char *end;
        errno = 0;
        long pid = strtol(e->d_name + np, &end, 10);
        if (errno || end == e->d_name + np || *end != '-' || pid <= 0 || pid == (long)self)
            continue;
        const char *n = end + 1;
        if (!*n || n[strspn(n, "0123456789")] != '\0')
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue; /* alive, or not ours to know (EPERM): leave it */
        snprintf(victim, sizeof victim, "%.*s%s", (int)dirlen, dir, e->d_name);
        unlink(victim);
    }
    closedir(d);
}

char *mdnl_temp_name(const char *path)
{
    static _Thread_local unsigned counter;
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(path) + 64;
    char *tmp = mdnl_malloc(n, "temporary file name");
    if (!tmp)
        return NULL;
    remove_stale(path, dirlen, base);
    snprintf(tmp, n, "%.*s.%s.tmp-%ld-%u", (int)dirlen, path, base, (long)getpid(), counter++);
    temp_register(tmp, TEMP_FILE);
    return tmp;
}

mdnl_status mdnl_commit_rename(const char *tmp, const char *path)
{
    if (rename(tmp, path) != 0) {
        int e = errno;
        mdnl_temp_remove(tmp);
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: cannot rename the finished output into place: %s", path,
                          strerror(e));
    }
    temp_forget(tmp, TEMP_FILE);
    return MDNL_OK;
}

mdnl_status mdnl_ofile_open(mdnl_ofile *o, const char *path)
{
    memset(o, 0, sizeof *o);
    if (strcmp(path, "-") == 0) {
        o->fp = stdout;
        return MDNL_OK;
    }
    o->path = strdup(path);
    o->tmp = mdnl_temp_name(path);
    if (!o->path || !o->tmp) {
        mdnl_ofile_abort(o);
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory naming %s", path);
    }
    o->fp = fopen(o->tmp, "wb");
    if (!o->fp) {
        int e = errno;
        mdnl_ofile_abort(o);
        return mdnl_error(MDNL_ERR_INPUT, "%s: cannot create the output file: %s", path, strerror(e));
    }
    setvbuf(o->fp, NULL, _IOFBF, 1 << 20);
    return MDNL_OK;
}

mdnl_status mdnl_ofile_commit(mdnl_ofile *o)
{
    if (!o->tmp) { /* stdout */
        if (fflush(stdout) != 0)
            return mdnl_error(MDNL_ERR_RESOURCE, "standard output: write failed: %s", strerror(errno));
        o->fp = NULL;
        return MDNL_OK;
    }
    int bad = ferror(o->fp) != 0;
    int e = errno;
    if (fclose(o->fp) != 0) {
        bad = 1;
        e = errno;
    }
    o->fp = NULL;
    if (bad) {
        mdnl_status st = mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed: %s", o->path, strerror(e));
        mdnl_ofile_abort(o);
        return st;
    }
    mdnl_status st = mdnl_commit_rename(o->tmp, o->path);
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return st;
}

void mdnl_ofile_abort(mdnl_ofile *o)
{
    if (o->fp && o->fp != stdout)
        fclose(o->fp);
    if (o->tmp)
        mdnl_temp_remove(o->tmp);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
}

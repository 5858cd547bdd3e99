/* output_file.c — every output file of mdnl (see output_file.h). */
#define _GNU_SOURCE /* F_OFD_SETLK: open-file-description locks */
#include "output_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* ---- the table of temporary names, for the signal handler ----
 *
 * A slot's path is written while its state is FREE and published by the
 * atomic store of FILE or DIR; the handler reads only published slots. A
 * FILE slot also keeps the final name the file is renamed to and, for HDF5
 * temporaries, the descriptor that holds the file's lock. */
#define TEMP_SLOTS 64
#define TEMP_PATH 4096
enum { TEMP_FREE, TEMP_FILE, TEMP_DIR };
static char temp_paths[TEMP_SLOTS][TEMP_PATH];
static atomic_int temp_state[TEMP_SLOTS];
static char *temp_target[TEMP_SLOTS]; /* the name renamed onto; owned */
static int temp_fd[TEMP_SLOTS];       /* the lock holder owned by the table, or -1 */
static pthread_mutex_t temp_mu = PTHREAD_MUTEX_INITIALIZER;

/* RUNNING until the first rename or the first signal, whichever comes first
 * (a compare-and-swap decides): a signal while RUNNING removes the
 * temporaries and exits 128 + signal; once COMMITTING, signals are ignored
 * and the command ends with its own status; a commit that finds DYING waits
 * for the handler's _exit instead of renaming. */
enum { PHASE_RUNNING, PHASE_COMMITTING, PHASE_DYING };
static atomic_int phase;

static bool temp_register(const char *path, int kind, char *target, int fd)
{
    if (strlen(path) >= TEMP_PATH)
        return false;
    bool done = false;
    pthread_mutex_lock(&temp_mu);
    for (int k = 0; k < TEMP_SLOTS && !done; ++k)
        if (atomic_load(&temp_state[k]) == TEMP_FREE) {
            memcpy(temp_paths[k], path, strlen(path) + 1);
            temp_target[k] = target;
            temp_fd[k] = fd;
            atomic_store(&temp_state[k], kind);
            done = true;
        }
    pthread_mutex_unlock(&temp_mu);
    return done;
}

/* Forgets `path`; returns its slot's lock descriptor (or -1) for the caller
 * to close once the name is gone, and its target in *target (or frees it). */
static int temp_forget(const char *path, int kind, char **target)
{
    int fd = -1;
    char *t = NULL;
    pthread_mutex_lock(&temp_mu);
    for (int k = 0; k < TEMP_SLOTS; ++k)
        if (atomic_load(&temp_state[k]) == kind && strcmp(temp_paths[k], path) == 0) {
            atomic_store(&temp_state[k], TEMP_FREE);
            fd = temp_fd[k];
            t = temp_target[k];
            temp_target[k] = NULL;
            break;
        }
    pthread_mutex_unlock(&temp_mu);
    if (target)
        *target = t;
    else
        free(t);
    return fd;
}

/* The slot of a registered file: its target and lock descriptor. */
static bool temp_lookup(const char *path, const char **target, int *fd)
{
    bool found = false;
    pthread_mutex_lock(&temp_mu);
    for (int k = 0; k < TEMP_SLOTS && !found; ++k)
        if (atomic_load(&temp_state[k]) == TEMP_FILE && strcmp(temp_paths[k], path) == 0) {
            *target = temp_target[k];
            *fd = temp_fd[k];
            found = true;
        }
    pthread_mutex_unlock(&temp_mu);
    return found;
}

static void on_signal(int sig)
{
    int expected = PHASE_RUNNING;
    if (!atomic_compare_exchange_strong(&phase, &expected, PHASE_DYING))
        return; /* COMMITTING: an output is in place, the run finishes; DYING: another thread's handler exits */
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
    sa.sa_flags = SA_RESTART; /* an ignored signal must not fail the write it interrupted */
    sigfillset(&sa.sa_mask);  /* one handler at a time on a thread */
    for (size_t k = 0; k < sizeof sigs / sizeof *sigs; ++k) {
        struct sigaction old;
        /* a signal the parent ignores (nohup, a background job's SIGINT) stays ignored */
        if (sigaction(sigs[k], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(sigs[k], &sa, NULL);
    }
}

void mdnl_temp_dir_made(const char *dir) { temp_register(dir, TEMP_DIR, NULL, -1); }

void mdnl_temp_dir_forget(const char *dir) { temp_forget(dir, TEMP_DIR, NULL); }

void mdnl_temp_remove(const char *tmp)
{
    unlink(tmp);
    int fd = temp_forget(tmp, TEMP_FILE, NULL);
    if (fd >= 0)
        close(fd); /* after the unlink: the lock is held as long as the name exists */
}

/* ---- what a path names ---- */

/* `path` with its symbolic links followed to the final name, which may not
 * exist (a dangling link names the file it would create). NULL with errno
 * (ELOOP, ENOMEM, ...) on failure. *sb and *exists describe the final name. */
static char *resolve_links(const char *path, struct stat *sb, bool *exists)
{
    char *p = strdup(path);
    for (int hop = 0; p && hop < 40; ++hop) {
        if (lstat(p, sb) != 0) {
            *exists = false;
            return p;
        }
        if (!S_ISLNK(sb->st_mode)) {
            *exists = true;
            return p;
        }
        char link[TEMP_PATH];
        ssize_t n = readlink(p, link, sizeof link - 1);
        if (n < 0) {
            free(p);
            return NULL;
        }
        link[n] = '\0';
        const char *slash = strrchr(p, '/');
        size_t dirlen = link[0] == '/' || !slash ? 0 : (size_t)(slash - p + 1);
        char *next = malloc(dirlen + (size_t)n + 1);
        if (next) {
            memcpy(next, p, dirlen);
            memcpy(next + dirlen, link, (size_t)n + 1);
        }
        free(p);
        p = next;
    }
    if (p) {
        free(p);
        errno = ELOOP;
    }
    return NULL;
}

static const char *node_name(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISCHR(m)  ? "a character device"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "a regular file";
}

/* What the check compares: the final file (device, inode), or for a name
 * that does not exist yet its directory and last component. */
typedef struct identity {
    bool std_out, exists;
    struct stat sb;
    char *name; /* resolved, owned */
} identity;

static mdnl_status identify(const char *path, identity *id)
{
    memset(id, 0, sizeof *id);
    if (strcmp(path, "-") == 0) {
        id->std_out = true;
        return MDNL_OK;
    }
    /* "DIR/" names DIR: without the slash a regular file there is found, not ENOTDIR */
    size_t len = strlen(path);
    while (len > 1 && path[len - 1] == '/')
        --len;
    char *bare = strndup(path, len);
    id->name = bare ? resolve_links(bare, &id->sb, &id->exists) : NULL;
    free(bare);
    if (!id->name)
        return mdnl_error(MDNL_ERR_USAGE, "%s: cannot resolve the output's symbolic links: %s", path, strerror(errno));
    if (!id->exists) { /* compare by the directory it will be made in, and its name */
        const char *slash = strrchr(id->name, '/');
        char *dir = slash ? strndup(id->name, (size_t)(slash - id->name) + 1) : strdup(".");
        if (!dir || stat(dir, &id->sb) != 0)
            memset(&id->sb, 0, sizeof id->sb);
        free(dir);
    }
    return MDNL_OK;
}

static const char *last_component(const char *p)
{
    const char *slash = strrchr(p, '/');
    return slash ? slash + 1 : p;
}

static bool same_output(const identity *a, const identity *b)
{
    if (a->std_out || b->std_out)
        return a->std_out && b->std_out;
    if (a->exists != b->exists || a->sb.st_dev != b->sb.st_dev || a->sb.st_ino != b->sb.st_ino)
        return false;
    if (!a->exists)
        return a->sb.st_ino != 0 && strcmp(last_component(a->name), last_component(b->name)) == 0;
    return !S_ISCHR(a->sb.st_mode); /* /dev/null twice is harmless */
}

mdnl_status mdnl_output_check(const char *input, int n, const char *const *paths, const mdnl_output_kind *kinds)
{
    enum { MAX_OUT = 8 };
    identity ids[MAX_OUT];
    memset(ids, 0, sizeof ids);
    struct stat in_sb;
    const bool has_input = input && stat(input, &in_sb) == 0;
    mdnl_status st = MDNL_OK;
    int k = 0;
    for (; k < n && k < MAX_OUT && st == MDNL_OK; ++k) {
        const char *p = paths[k];
        if (!p || (st = identify(p, &ids[k])) != MDNL_OK)
            continue;
        const identity *id = &ids[k];
        const mode_t m = id->sb.st_mode;
        if (kinds[k] == MDNL_OUTPUT_HDF5 && (id->std_out || (id->exists && (S_ISCHR(m) || S_ISFIFO(m)))))
            st = mdnl_error(MDNL_ERR_USAGE, "%s: HDF5 needs a regular file it can seek in, found %s", p,
                            id->std_out ? "standard output" : node_name(m));
        else if (kinds[k] == MDNL_OUTPUT_DIR && id->exists && !S_ISDIR(m))
            st = mdnl_error(MDNL_ERR_USAGE, "%s: expected a directory for the output tables, found %s", p,
                            node_name(m));
        else if (kinds[k] != MDNL_OUTPUT_DIR && id->exists && !S_ISREG(m) && !S_ISCHR(m) && !S_ISFIFO(m))
            st = mdnl_error(MDNL_ERR_USAGE, "%s: expected an output file, found %s", p, node_name(m));
        else if (has_input && id->exists && id->sb.st_dev == in_sb.st_dev && id->sb.st_ino == in_sb.st_ino)
            st = mdnl_error(MDNL_ERR_USAGE, "%s: the output is the input file %s", p, input);
        for (int j = 0; j < k && st == MDNL_OK; ++j)
            if (paths[j] && same_output(&ids[j], id))
                st = mdnl_error(MDNL_ERR_USAGE, "%s: the same output is named twice (%s and %s)", p, paths[j], p);
    }
    for (int j = 0; j < k; ++j)
        free(ids[j].name);
    return st;
}

/* ---- temporary files ---- */

#define RAND_HEX 16 /* hexadecimal digits of randomness in a temporary name */
#define BASE_MAX 200 /* characters of the target's name kept in its temporary name */

/* Whether `s` is "PID-HEX", the tail of a temporary name after its prefix. */
static bool temp_tail(const char *s)
{
    size_t d = strspn(s, "0123456789");
    if (d == 0 || d > 10 || s[d] != '-')
        return false;
    s += d + 1;
    return strspn(s, "0123456789abcdef") == RAND_HEX && s[RAND_HEX] == '\0';
}

/* Removes the provably stale temporaries of `base` in directory `dir`: ours
 * by user, regular, not new-and-empty, and unlocked (their creator is gone;
 * a live one holds the lock from before its first byte). */
static void remove_stale(const char *dir, const char *prefix)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return;
    int lfd = dup(dfd);
    DIR *d = lfd < 0 ? NULL : fdopendir(lfd);
    if (!d) {
        if (lfd >= 0)
            close(lfd);
        close(dfd);
        return;
    }
    const size_t np = strlen(prefix);
    const time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, prefix, np) != 0 || !temp_tail(e->d_name + np))
            continue;
        int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat sb, again;
        struct flock fl = {.l_type = F_RDLCK, .l_whence = SEEK_SET};
        if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_uid == geteuid() &&
            (sb.st_size > 0 || now - sb.st_mtime > 60) && fcntl(fd, F_OFD_SETLK, &fl) == 0 &&
            fstatat(dfd, e->d_name, &again, AT_SYMLINK_NOFOLLOW) == 0 && again.st_dev == sb.st_dev &&
            again.st_ino == sb.st_ino)
            unlinkat(dfd, e->d_name, 0);
        close(fd);
    }
    closedir(d);
    close(dfd);
}

static void random_hex(char out[RAND_HEX + 1])
{
    static const char hex[] = "0123456789abcdef";
    static atomic_uint counter;
    unsigned char b[RAND_HEX / 2];
    if (getrandom(b, sizeof b, GRND_NONBLOCK) != (ssize_t)sizeof b) {
        /* no entropy yet (early boot): unguessable enough, and O_EXCL is the guard either way */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t x = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15u ^ (uint64_t)ts.tv_sec ^
                     ((uint64_t)getpid() << 32) ^ atomic_fetch_add(&counter, 1u) * 0xbf58476d1ce4e5b9u;
        memcpy(b, &x, sizeof b);
    }
    for (size_t k = 0; k < sizeof b; ++k) {
        out[2 * k] = hex[b[k] >> 4];
        out[2 * k + 1] = hex[b[k] & 15];
    }
    out[RAND_HEX] = '\0';
}

/* Creates and locks the temporary file of `path`; *tmp its name, *fd its
 * descriptor (read-write), *target the final name (owned). */
static mdnl_status create_temp(const char *path, char **tmp, int *fd, char **target)
{
    *tmp = *target = NULL;
    *fd = -1;
    struct stat sb;
    bool exists = false;
    char *t = resolve_links(path, &sb, &exists);
    if (!t)
        return mdnl_error(MDNL_ERR_USAGE, "%s: cannot resolve the output's symbolic links: %s", path, strerror(errno));
    if (exists && !S_ISREG(sb.st_mode)) {
        mdnl_status st = mdnl_error(MDNL_ERR_USAGE, "%s: expected an output file, found %s", path, node_name(sb.st_mode));
        free(t);
        return st;
    }
    const char *slash = strrchr(t, '/');
    const size_t dirlen = slash ? (size_t)(slash - t + 1) : 0;
    const char *base = t + dirlen;
    const size_t blen = strlen(base) < BASE_MAX ? strlen(base) : BASE_MAX;
    const size_t cap = dirlen + blen + 64;
    char *name = malloc(cap), *dir = strndup(t, dirlen ? dirlen : 0);
    if (!name || !dir) {
        free(name);
        free(dir);
        free(t);
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory naming %s", path);
    }
    char prefix[BASE_MAX + 8];
    snprintf(prefix, sizeof prefix, ".%.*s.tmp-", (int)blen, base);
    remove_stale(dirlen ? dir : ".", prefix);
    free(dir);
    int e = 0;
    for (int attempt = 0; attempt < 100; ++attempt) {
        char rnd[RAND_HEX + 1];
        random_hex(rnd);
        snprintf(name, cap, "%.*s%s%ld-%s", (int)dirlen, t, prefix, (long)getpid(), rnd);
        *fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0666);
        if (*fd >= 0 || (e = errno) != EEXIST)
            break;
    }
    if (*fd < 0) {
        free(name);
        free(t);
        return mdnl_error(MDNL_ERR_INPUT, "%s: cannot create the output file: %s", path, strerror(e));
    }
    /* before the first byte: a cleaner treats an unlocked, non-empty temporary file as stale */
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    while (fcntl(*fd, F_OFD_SETLKW, &fl) != 0 && errno == EINTR) {
    }
    if (exists)
        (void)fchmod(*fd, sb.st_mode & 0777); /* a replaced file keeps its permissions, as with `>` */
    *tmp = name;
    *target = t;
    return MDNL_OK;
}

mdnl_status mdnl_temp_create(const char *path, char **tmp)
{
    char *target;
    int fd;
    mdnl_status st = create_temp(path, tmp, &fd, &target);
    if (st != MDNL_OK)
        return st;
    if (!temp_register(*tmp, TEMP_FILE, target, fd)) {
        unlink(*tmp);
        close(fd);
        free(target);
        free(*tmp);
        *tmp = NULL;
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: too many outputs open at once", path);
    }
    return MDNL_OK;
}

mdnl_status mdnl_temp_is_ours(const char *path, const char *tmp, int fd)
{
    const char *target;
    int own = -1;
    struct stat a, b;
    if (temp_lookup(tmp, &target, &own) && own >= 0 && fstat(own, &a) == 0 && fstat(fd, &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        return MDNL_OK;
    return mdnl_error(MDNL_ERR_INPUT, "%s: the temporary file %s was replaced while it was being created", path, tmp);
}

mdnl_status mdnl_commit_rename(const char *tmp, const char *path)
{
    const char *target = NULL;
    int fd = -1;
    if (!temp_lookup(tmp, &target, &fd))
        return mdnl_error(MDNL_ERR_INTERNAL, "%s: no temporary file %s to commit", path, tmp);
    if (fd >= 0 && fsync(fd) != 0 && errno != EINVAL) {
        int e = errno;
        mdnl_temp_remove(tmp);
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed: %s", path, strerror(e));
    }
    int expected = PHASE_RUNNING;
    if (!atomic_compare_exchange_strong(&phase, &expected, PHASE_COMMITTING) && expected == PHASE_DYING)
        for (;;)
            pause(); /* a signal came first: its handler is removing the temporaries and exiting */
    if (rename(tmp, target) != 0) {
        int e = errno;
        mdnl_temp_remove(tmp);
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: cannot rename the finished output into place: %s", path,
                          strerror(e));
    }
    fd = temp_forget(tmp, TEMP_FILE, NULL);
    if (fd >= 0)
        close(fd);
    return MDNL_OK;
}

/* ---- mdnl_ofile ---- */

mdnl_status mdnl_ofile_open(mdnl_ofile *o, const char *path)
{
    memset(o, 0, sizeof *o);
    if (strcmp(path, "-") == 0) {
        o->fp = stdout;
        return MDNL_OK;
    }
    if (!(o->path = strdup(path)))
        return mdnl_error(MDNL_ERR_RESOURCE, "out of host memory naming %s", path);
    struct stat sb;
    if (stat(path, &sb) == 0 && (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode))) {
        /* a stream: written in place (a FIFO waits here for its reader, as a shell's `>` does) */
        int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0 || !(o->fp = fdopen(fd, "wb"))) {
            int e = errno;
            if (fd >= 0)
                close(fd);
            mdnl_ofile_abort(o);
            return mdnl_error(MDNL_ERR_INPUT, "%s: cannot open the output for writing: %s", path, strerror(e));
        }
        return MDNL_OK;
    }
    char *target;
    int fd;
    mdnl_status st = create_temp(path, &o->tmp, &fd, &target);
    if (st != MDNL_OK) {
        mdnl_ofile_abort(o);
        return st;
    }
    if (!temp_register(o->tmp, TEMP_FILE, target, -1) || !(o->fp = fdopen(fd, "wb"))) {
        int e = errno;
        unlink(o->tmp);
        close(fd);
        temp_forget(o->tmp, TEMP_FILE, NULL);
        free(o->tmp);
        o->tmp = NULL;
        mdnl_ofile_abort(o);
        return mdnl_error(MDNL_ERR_RESOURCE, "%s: cannot open the output: %s", path, e ? strerror(e) : "too many outputs");
    }
    setvbuf(o->fp, NULL, _IOFBF, 1 << 20);
    return MDNL_OK;
}

mdnl_status mdnl_ofile_commit(mdnl_ofile *o)
{
    const char *name = o->path ? o->path : "standard output";
    int bad = fflush(o->fp) != 0 || ferror(o->fp);
    int e = errno;
    if (!bad && o->tmp && fsync(fileno(o->fp)) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        mdnl_status st = mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed: %s", name, strerror(e));
        mdnl_ofile_abort(o);
        return st;
    }
    mdnl_status st = MDNL_OK;
    if (o->tmp)
        st = mdnl_commit_rename(o->tmp, o->path); /* on failure the temporary is gone */
    if (o->fp != stdout && fclose(o->fp) != 0 && st == MDNL_OK && !o->tmp)
        st = mdnl_error(MDNL_ERR_RESOURCE, "%s: write failed: %s", name, strerror(errno));
    o->fp = NULL;
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return st;
}

void mdnl_ofile_abort(mdnl_ofile *o)
{
    if (o->tmp)
        mdnl_temp_remove(o->tmp); /* before the close: the name goes while its lock is held */
    if (o->fp && o->fp != stdout)
        fclose(o->fp);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
}

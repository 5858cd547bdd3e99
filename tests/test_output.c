/* test_output.c — io/output_file.c through the built binary (MDNL_BINARY),
 * as a user runs it: what `-o` (and --plot, convert's OUTPUT) may name.
 *
 *   - a character device and a FIFO are written in place as streams, and
 *     stay what they are; HDF5 onto them (or onto standard output) is exit 2
 *     before any work;
 *   - a directory where a file is expected, the input itself (./x, an
 *     absolute path, a hard link) and one output named twice are exit 2
 *     before any work, for every command;
 *   - symbolic links: a planted one at the predictable temporary names of
 *     the past is never followed; -o naming a link replaces what it points
 *     to and keeps the link;
 *   - a full disk is exit 4 with one line and nothing left, HDF5 included
 *     (no crash in the library's exit handler); a device that fails writes
 *     is exit 4;
 *   - a SIGTERM that arrives once the output is in place does not turn the
 *     run into exit 143.
 *
 * Device nodes are private (mknod in the test's directory, never the system's /dev);
 * the tests that need mknod or mount skip only when the kernel says EPERM. */
#define _GNU_SOURCE /* F_SETPIPE_SZ */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_test_util.h"

TestSuite(output, .init = make_tmpdir, .fini = remove_tmpdir);

#define GRAPHENE MDNL_DATA_DIR "/graphene-periodic.extxyz"

static void nap(long microseconds)
{
    struct timespec ts = {microseconds / 1000000, (microseconds % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void tmp_path(char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", tmpdir, name); }

static mode_t node_type(const char *name)
{
    char p[512];
    struct stat sb;
    tmp_path(p, sizeof p, name);
    return lstat(p, &sb) == 0 ? (sb.st_mode & S_IFMT) : 0;
}

/* A private character device (1,3 is the null device; 1,7 the full one) in
 * tmpdir; skips the test when this kernel refuses mknod to us. */
static void make_chardev(const char *name, unsigned minor)
{
    char p[512];
    tmp_path(p, sizeof p, name);
    if (mknod(p, S_IFCHR | 0666, makedev(1, minor)) != 0) {
        if (errno == EPERM)
            cr_skip_test("mknod of a character device: EPERM (not root, or a user namespace)");
        cr_assert_fail("mknod %s: %s", p, strerror(errno));
    }
}

static void make_fifo(const char *name)
{
    char p[512];
    tmp_path(p, sizeof p, name);
    cr_assert_eq(mkfifo(p, 0644), 0, "mkfifo %s: %s", p, strerror(errno));
}

/* The directory holds exactly the named entries (NULL-terminated) besides
 * the captured streams: nothing partial, no temporary file. */
static void expect_only(const char *const *names)
{
    int n = 0;
    for (; names[n]; ++n)
        cr_expect_neq(node_type(names[n]), 0, "%s is missing", names[n]);
    cr_expect_eq(dir_entries(), n, "expected only the %d named entries in %s", n, tmpdir);
}

static void copy_input(const char *name)
{
    cr_assert_eq(sh("cp '%s' %s", GRAPHENE, name), 0);
}

/* ---- streams ---- */

Test(output, character_device_is_written_as_a_stream_and_stays_a_device)
{
    make_chardev("null", 3);
    cr_assert_eq(mdnl("neighbors '%s' -c 2 -o null --quiet", GRAPHENE), 0, "%s", err_text);
    cr_assert_eq(mdnl("energy '%s' -c 3 --pair lj:epsilon=1,sigma=1 -o null --quiet", GRAPHENE), 0, "%s", err_text);
    cr_assert_eq(mdnl("rdf '%s' --rmax 4 --bins 10 -o null --plot null --quiet", GRAPHENE), 0, "%s", err_text);
    /* no extension: convert needs --to (issue 57: never a silent fallback) */
    cr_assert_eq(mdnl("convert '%s' null --to extxyz --quiet", GRAPHENE), 0, "%s", err_text);
    cr_assert_eq(mdnl("gen graphene --nx 2 --ny 2 -o null --quiet"), 0, "%s", err_text);
    cr_expect_eq(node_type("null"), S_IFCHR, "the device node was replaced");
    static const char *const only[] = {"null", NULL};
    expect_only(only);
}

Test(output, device_that_fails_writes_is_exit_4)
{
    make_chardev("full", 7);
    cr_assert_eq(mdnl("neighbors '%s' -c 2 -o full --quiet", GRAPHENE), 4, "%s", err_text);
    expect_one_error_line();
    cr_expect_eq(node_type("full"), S_IFCHR);
}

Test(output, fifo_is_streamed_to_its_reader)
{
    make_fifo("pipe");
    cr_assert_eq(mdnl("neighbors '%s' -c 2 -o want.tsv --quiet", GRAPHENE), 0, "%s", err_text);
    /* a reader drains the FIFO while mdnl writes into it */
    cr_assert_eq(sh("(timeout 60 cat pipe > got.tsv & MDNL_DATA='%s' '%s' neighbors '%s' -c 2 -o pipe --quiet; rc=$?; wait; "
                    "exit $rc)",
                    MDNL_DATA_DIR, MDNL_BINARY, GRAPHENE),
                 0, "%s", err_text);
    static char want[1 << 16], got[1 << 16];
    char p[512];
    tmp_path(p, sizeof p, "want.tsv");
    slurp(p, want, sizeof want);
    tmp_path(p, sizeof p, "got.tsv");
    slurp(p, got, sizeof got);
    cr_expect(strlen(want) > 1000 && strcmp(want, got) == 0, "the FIFO's reader got %zu bytes, expected %zu",
              strlen(got), strlen(want));
    cr_expect_eq(node_type("pipe"), S_IFIFO, "the FIFO was replaced");
}

Test(output, hdf5_onto_a_stream_is_a_usage_error_before_any_work)
{
    make_fifo("f.h5");
    make_chardev("d.h5", 3);
    /* a FIFO nobody reads: opening it would block for ever, so these must be refused before */
    const char *const cmds[] = {
        "neighbors '" GRAPHENE "' -c 2 -o f.h5",
        "energy '" GRAPHENE "' -c 3 --pair lj:epsilon=1,sigma=1 -o d.h5",
        "rdf '" GRAPHENE "' --rmax 4 --bins 10 -o f.h5",
        "run '" GRAPHENE "' -c 2 --neighbors -o d.h5",
        "convert '" GRAPHENE "' f.h5",
        "convert '" GRAPHENE "' - --to h5md",
    };
    for (size_t k = 0; k < sizeof cmds / sizeof *cmds; ++k) {
        cr_expect_eq(mdnl("%s", cmds[k]), 2, "%s: %s", cmds[k], err_text);
        expect_one_error_line();
        cr_expect(strstr(err_text, "HDF5") != NULL || strstr(err_text, "standard output") != NULL, "%s: %s",
                  cmds[k], err_text);
    }
    cr_expect_eq(node_type("f.h5"), S_IFIFO);
    cr_expect_eq(node_type("d.h5"), S_IFCHR);
}

/* ---- directories, the input itself, an output twice ---- */

Test(output, existing_directory_is_refused_before_any_work)
{
    cr_assert_eq(sh("mkdir d && touch file.txt"), 0);
    /* the damaged cell would be refused with exit 3 by the work: 2 proves the check came first */
    const char *const cmds[] = {
        "neighbors '" MDNL_DATA_DIR "/bad/tiny-cell.extxyz' -c 2 -o d",
        "neighbors '" MDNL_DATA_DIR "/bad/tiny-cell.extxyz' -c 2 -o d/",
        "energy '" MDNL_DATA_DIR "/bad/tiny-cell.extxyz' -c 3 --pair lj:epsilon=1,sigma=1 -o d",
        "rdf '" MDNL_DATA_DIR "/bad/tiny-cell.extxyz' --rmax 4 --bins 10 --plot d",
        "convert '" MDNL_DATA_DIR "/bad/tiny-cell.extxyz' d --to extxyz",
        "gen graphene --nx 2 --ny 2 -o d",
        "run '" MDNL_DATA_DIR "/bad/tiny-cell.extxyz' -c 2 --neighbors -o file.txt/",
    };
    for (size_t k = 0; k < sizeof cmds / sizeof *cmds; ++k) {
        cr_expect_eq(mdnl("%s", cmds[k]), 2, "%s: %s", cmds[k], err_text);
        expect_one_error_line();
    }
    static const char *const only[] = {"d", "file.txt", NULL};
    expect_only(only);
}

Test(output, output_that_is_the_input_is_refused_for_every_command)
{
    copy_input("g.extxyz");
    cr_assert_eq(mdnl("convert g.extxyz g.h5 --quiet"), 0, "%s", err_text);
    cr_assert_eq(sh("ln g.extxyz hard.extxyz && ln g.h5 hard.h5 && ln -s g.extxyz soft.extxyz"), 0);
    char abs_x[512], abs_h[512];
    tmp_path(abs_x, sizeof abs_x, "g.extxyz");
    tmp_path(abs_h, sizeof abs_h, "g.h5");
    const char *const xyz_outs[] = {"./g.extxyz", abs_x, "hard.extxyz", "soft.extxyz"};
    const char *const h5_outs[] = {"./g.h5", abs_h, "hard.h5"};
    for (size_t k = 0; k < 4; ++k) {
        const char *o = xyz_outs[k];
        cr_expect_eq(mdnl("neighbors g.extxyz -c 2 -o '%s'", o), 2, "neighbors -o %s: %s", o, err_text);
        expect_one_error_line();
        cr_expect_eq(mdnl("energy g.extxyz -c 3 --pair lj:epsilon=1,sigma=1 -o '%s'", o), 2, "energy -o %s", o);
        cr_expect_eq(mdnl("rdf g.extxyz --rmax 4 --bins 10 -o '%s'", o), 2, "rdf -o %s", o);
        cr_expect_eq(mdnl("rdf g.extxyz --rmax 4 --bins 10 -o r.tsv --plot '%s'", o), 2, "rdf --plot %s", o);
        cr_expect_eq(mdnl("convert g.extxyz '%s'", o), 2, "convert to %s", o);
    }
    for (size_t k = 0; k < 3; ++k) {
        const char *o = h5_outs[k];
        cr_expect_eq(mdnl("run g.h5 -c 2 --neighbors -o '%s'", o), 2, "run -o %s: %s", o, err_text);
        expect_one_error_line();
        cr_expect_eq(mdnl("neighbors g.h5 -c 2 -o '%s'", o), 2, "neighbors -o %s", o);
        cr_expect_eq(mdnl("convert g.h5 '%s'", o), 2, "convert to %s", o);
    }
    /* the input is untouched */
    cr_expect_eq(sh("cmp g.extxyz '%s'", GRAPHENE), 0, "the input was replaced");
    cr_expect_eq(mdnl("info g.h5"), 0, "the HDF5 input was damaged: %s", err_text);
    static const char *const only[] = {"g.extxyz", "g.h5", "hard.extxyz", "hard.h5", "soft.extxyz", NULL};
    expect_only(only);
}

Test(output, one_output_named_twice_is_refused)
{
    const char *const cmds[] = {
        "rdf '" GRAPHENE "' --rmax 4 --bins 10 -o r.tsv --plot r.tsv",
        "rdf '" GRAPHENE "' --rmax 4 --bins 10 -o r.tsv --plot ./r.tsv",
        "rdf '" GRAPHENE "' --rmax 4 --bins 10 -o - --plot -",
    };
    for (size_t k = 0; k < sizeof cmds / sizeof *cmds; ++k) {
        cr_expect_eq(mdnl("%s", cmds[k]), 2, "%s: %s", cmds[k], err_text);
        expect_one_error_line();
        cr_expect(strstr(err_text, "named twice") != NULL, "%s", err_text);
    }
    cr_expect_eq(dir_entries(), 0);
}

/* ---- symbolic links ---- */

/* The old temporary names were ".NAME.tmp-PID-N": a link planted there by
 * someone who guessed the PID was followed. The child plants them for its
 * own PID, which exec keeps, then becomes mdnl. */
Test(output, planted_symlinks_at_predictable_temp_names_are_not_followed)
{
    write_file("victim", "precious\n");
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (chdir(tmpdir) != 0)
            _exit(120);
        char name[128];
        for (int k = 0; k < 4; ++k) {
            snprintf(name, sizeof name, ".out.tsv.tmp-%ld-%d", (long)getpid(), k);
            if (symlink("victim", name) != 0)
                _exit(121);
        }
        int fd = open(".stderr", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(122);
        execl(MDNL_BINARY, MDNL_BINARY, "neighbors", GRAPHENE, "-c", "2", "-o", "out.tsv", "--quiet", (char *)NULL);
        _exit(123);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d", status);
    char p[512], text[64];
    tmp_path(p, sizeof p, "victim");
    slurp(p, text, sizeof text);
    cr_expect_str_eq(text, "precious\n", "the planted link's target was written");
    cr_expect_eq(node_type("out.tsv"), S_IFREG);
}

Test(output, output_through_a_symlink_replaces_its_target_and_keeps_the_link)
{
    cr_assert_eq(sh("mkdir sub && echo old > sub/target.tsv && chmod 640 sub/target.tsv && "
                    "ln -s sub/target.tsv link.tsv && ln -s sub/new.tsv dangling.tsv"),
                 0);
    cr_assert_eq(mdnl("neighbors '%s' -c 2 -o link.tsv --quiet", GRAPHENE), 0, "%s", err_text);
    cr_assert_eq(mdnl("neighbors '%s' -c 2 -o dangling.tsv --quiet", GRAPHENE), 0, "%s", err_text);
    cr_expect_eq(node_type("link.tsv"), S_IFLNK, "the link was replaced");
    cr_expect_eq(node_type("dangling.tsv"), S_IFLNK, "the dangling link was replaced");
    cr_expect_eq(sh("head -1 sub/target.tsv | grep -q '^# frame' && head -1 sub/new.tsv | grep -q '^# frame'"), 0,
                 "the links' targets do not hold the table");
    char p[512];
    struct stat sb;
    tmp_path(p, sizeof p, "sub/target.tsv");
    cr_assert_eq(stat(p, &sb), 0);
    cr_expect_eq(sb.st_mode & 0777, 0640, "the replaced file's mode %o, expected 640", sb.st_mode & 0777);
    cr_expect_eq(sh("ls -A sub | wc -l | grep -qx 2"), 0, "temporary files left in sub/");
}

/* ---- a full disk ---- */

Test(output, full_filesystem_is_exit_4_for_tsv_and_hdf5_without_a_crash)
{
    char mnt[512];
    tmp_path(mnt, sizeof mnt, "mnt");
    cr_assert_eq(mkdir(mnt, 0777), 0);
    if (sh("mount -t tmpfs -o size=64k tmpfs mnt") != 0) {
        rmdir(mnt);
        cr_skip_test("mount of a tmpfs refused: %s", err_text);
    }
    copy_input("g.extxyz");
    const char *const cmds[] = {
        "neighbors g.extxyz -c 3 -o mnt/n.tsv",
        "neighbors g.extxyz -c 2 -o mnt/n.h5",
        "convert g.extxyz mnt/c.h5",
        "energy g.extxyz -c 3 --pair lj:epsilon=1,sigma=1 --per-atom -o mnt/e.h5",
        "run g.extxyz -c 4 --neighbors -o mnt/r.h5",
        "run g.extxyz -c 4 --neighbors -o mnt/dir/",
    };
    for (size_t k = 0; k < sizeof cmds / sizeof *cmds; ++k) {
        cr_expect_eq(mdnl("%s --quiet", cmds[k]), 4, "%s: %s", cmds[k], err_text);
        expect_one_error_line();
        cr_expect_eq(sh("test -z \"$(ls -A mnt)\""), 0, "%s left files in the full file system", cmds[k]);
    }
    cr_expect_eq(sh("umount mnt"), 0, "%s", err_text);
}

/* ---- signals after the commit ---- */

/* mdnl's standard output is a pipe that is already full, so the --json
 * summary, printed after the output was renamed into place, blocks: the
 * SIGTERM then surely arrives after the commit. */
Test(output, sigterm_after_the_commit_exits_0_with_the_output_in_place)
{
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    fcntl(fds[1], F_SETPIPE_SZ, 4096);
    fcntl(fds[1], F_SETFL, O_NONBLOCK);
    char fill[4096];
    memset(fill, 'x', sizeof fill);
    while (write(fds[1], fill, sizeof fill) > 0) {
    }
    while (write(fds[1], fill, 1) > 0) {
    }
    fcntl(fds[1], F_SETFL, 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        if (chdir(tmpdir) != 0 || dup2(fds[1], 1) < 0)
            _exit(120);
        close(fds[0]);
        int fd = open(".stderr", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(121);
        execl(MDNL_BINARY, MDNL_BINARY, "neighbors", GRAPHENE, "-c", "2", "-o", "out.tsv", "--json", (char *)NULL);
        _exit(122);
    }
    close(fds[1]);
    char p[512];
    tmp_path(p, sizeof p, "out.tsv");
    struct stat sb;
    for (int k = 0; stat(p, &sb) != 0; ++k) {
        int status;
        cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "mdnl ended before writing its summary (status %d)", status);
        cr_assert(k < 6000, "no out.tsv after 30 s");
        nap(5000);
    }
    nap(200000);
    int status;
    cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "mdnl did not block on its full standard output");
    cr_assert_eq(kill(pid, SIGTERM), 0);
    nap(200000);
    char buf[8192];
    while (read(fds[0], buf, sizeof buf) > 0) {
    }
    close(fds[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d (exit %d): a committed run reported as killed",
              status, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    cr_expect_eq(sh("head -1 out.tsv | grep -q '^# frame'"), 0);
}

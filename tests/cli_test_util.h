/* cli_test_util.h — what the tests that run the mdnl binary share: a
 * temporary directory per test (the suite's .init/.fini), reading a file
 * whole, and running mdnl or a shell command from that directory with its
 * stdout and stderr captured in out_text and err_text. Everything is static:
 * each test file includes it once (test_cli.c, test_run.c, test_guard.c,
 * test_mpi.c). */
#ifndef MDNL_CLI_TEST_UTIL_H
#define MDNL_CLI_TEST_UTIL_H

#include <criterion/criterion.h>
#include <dirent.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MDNL_TEST_UNUSED __attribute__((unused))

static char tmpdir[256];
static MDNL_TEST_UNUSED char out_text[1 << 16], err_text[1 << 16];

static MDNL_TEST_UNUSED void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/mdnl-test-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static MDNL_TEST_UNUSED void remove_tmpdir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_expect_eq(system(cmd), 0);
}

static MDNL_TEST_UNUSED void slurp(const char *path, char *buf, size_t cap)
{
    FILE *fp = fopen(path, "rb");
    size_t n = fp ? fread(buf, 1, cap - 1, fp) : 0;
    buf[n] = '\0';
    if (fp)
        fclose(fp);
}

/* Runs `cmdline` from the tmp directory; stdout/stderr land in
 * out_text/err_text; returns the exit status (128 when killed). */
static MDNL_TEST_UNUSED int run_in_tmpdir(const char *cmdline)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cd '%s' && %s >'%s/.stdout' 2>'%s/.stderr'", tmpdir, cmdline, tmpdir, tmpdir);
    int rc = system(cmd);
    char p[512];
    snprintf(p, sizeof p, "%s/.stdout", tmpdir);
    slurp(p, out_text, sizeof out_text);
    snprintf(p, sizeof p, "%s/.stderr", tmpdir);
    slurp(p, err_text, sizeof err_text);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}

/* A shell command, printf-style. */
static MDNL_TEST_UNUSED int sh(const char *fmt, ...)
{
    char args[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    return run_in_tmpdir(args);
}

/* `mdnl ARGS`, printf-style. */
static MDNL_TEST_UNUSED int mdnl(const char *fmt, ...)
{
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "MDNL_DATA='%s' '%s' %s", MDNL_DATA_DIR, MDNL_BINARY, args);
    return run_in_tmpdir(cmd);
}

/* tmpdir/name with `text` as its content. */
static MDNL_TEST_UNUSED void write_file(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", tmpdir, name);
    FILE *fp = fopen(p, "wb");
    cr_assert_not_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static MDNL_TEST_UNUSED int count_lines(const char *s)
{
    int n = 0;
    for (; *s; ++s)
        n += *s == '\n';
    return n;
}

/* The directory holds only the named files (and the captured streams). */
static MDNL_TEST_UNUSED int dir_entries(void)
{
    DIR *d = opendir(tmpdir);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, ".stdout") &&
            strcmp(e->d_name, ".stderr"))
            ++n;
    closedir(d);
    return n;
}

/* SPEC §7: one line on stderr, "mdnl: error: ...". */
static MDNL_TEST_UNUSED void expect_one_error_line(void)
{
    cr_expect_eq(count_lines(err_text), 1, "stderr should be one line, got: %s", err_text);
    cr_expect(strncmp(err_text, "mdnl: error: ", 13) == 0, "stderr: %s", err_text);
}

#endif

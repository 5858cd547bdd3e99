/* test_guard.c — the guards against runaway work and leftover files, on the
 * CPU backend, through the built binary (MDNL_BINARY) as a user runs it:
 *
 *   - the work guard (core/geometry.h): damaged cells of data/bad/ are
 *     refused by every computing command with exit 3 and one line naming the
 *     input, the frame and the cell, within a second, leaving no output;
 *     --max-pairs raises the limit (and lowers it); a stored list beyond the
 *     host's memory is exit 4;
 *   - signals (io/output_file.h): SIGINT, SIGTERM and SIGHUP during a long
 *     run exit 130, 143 and 129 and leave neither the temporary nor the final
 *     output (nor a directory the run made);
 *   - SIGKILL leaves a ".NAME.tmp-PID-RANDOM" that the next run to the same
 *     output removes, while a temporary file whose lock is held (a live run,
 *     whatever PID its name says) or that is new and empty is kept.
 *
 * The GPU twin of the first part is in test_geometry_gpu.c. */
#define _GNU_SOURCE /* F_OFD_SETLK */
#include "geometry.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_test_util.h"


TestSuite(guard, .init = make_tmpdir, .fini = remove_tmpdir);

static void nap(long microseconds)
{
    struct timespec ts = {microseconds / 1000000, (microseconds % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Starts `mdnl ARGV...` in tmpdir with stdout and stderr to files there;
 * returns the child's pid. */
static pid_t start(const char *const *args)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        char path[512];
        if (chdir(tmpdir) != 0)
            _exit(120);
        snprintf(path, sizeof path, "%s/.stdout", tmpdir);
        int out = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        snprintf(path, sizeof path, "%s/.stderr", tmpdir);
        int err = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
            _exit(121);
        char *argv[40];
        int n = 0;
        argv[n++] = (char *)MDNL_BINARY;
        for (; args[n - 1] && n < 39; ++n)
            argv[n] = (char *)args[n - 1];
        argv[n] = NULL;
        execv(MDNL_BINARY, argv);
        _exit(122);
    }
    return pid;
}

/* Waits for pid at most `limit` seconds (then kills it and fails); returns
 * the raw wait status. */
static int wait_for(pid_t pid, double limit)
{
    const double t0 = now();
    int status = 0;
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return status;
        cr_assert(r == 0, "waitpid: %s", strerror(errno));
        if (now() - t0 > limit) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            cr_assert_fail("mdnl still ran after %.0f s", limit);
        }
        nap(2000);
    }
}

/* A file of the tmp directory, whole. */
static void slurp_tmp(const char *name, char *buf, size_t cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    slurp(path, buf, cap);
}

/* Names in `dir` (relative to tmpdir, "" for tmpdir itself) other than the
 * test's own .stdout/.stderr and inputs named in `keep` (NULL-terminated),
 * space-separated into buf; returns their count. */
static int leftovers(const char *dir, const char *const *keep, char *buf, size_t cap)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, dir);
    buf[0] = '\0';
    DIR *d = opendir(path);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *s = e->d_name;
        if (!strcmp(s, ".") || !strcmp(s, "..") || !strcmp(s, ".stdout") || !strcmp(s, ".stderr"))
            continue;
        bool kept = false;
        for (int k = 0; keep && keep[k]; ++k)
            kept = kept || strcmp(s, keep[k]) == 0;
        if (kept)
            continue;
        ++n;
        strncat(buf, s, cap - strlen(buf) - 2);
        strncat(buf, " ", cap - strlen(buf) - 1);
    }
    closedir(d);
    return n;
}

/* Whether a temporary name of `pid` (".NAME.tmp-PID-RANDOM") exists in
 * tmpdir/dir; its name in name[cap] when name is not NULL. */
static bool temp_of(const char *dir, pid_t pid, char *name, size_t cap)
{
    char path[512], tag[64];
    snprintf(path, sizeof path, "%s/%s", tmpdir, dir);
    snprintf(tag, sizeof tag, ".tmp-%ld-", (long)pid);
    DIR *d = opendir(path);
    if (!d)
        return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL)
        if ((found = e->d_name[0] == '.' && strstr(e->d_name, tag) != NULL) && name)
            snprintf(name, cap, "%s", e->d_name);
    closedir(d);
    return found;
}

/* ---- the work guard ---- */

static const char *const damaged[] = {"tiny-cell.extxyz", "near-parallel-cell.extxyz", "tiny-cell-pbc-ttf.extxyz",
                                      "tiny-cell-second-frame.extxyz", "dense-cell.extxyz"};

/* Runs one command on a data/bad/ fixture; expects exit 3 within a second,
 * one stderr line naming the input, the frame and the cell, and no file. */
static void expect_refused(const char *file, int frame, const char *const *cmd)
{
    char input[512];
    snprintf(input, sizeof input, "%s/bad/%s", MDNL_DATA_DIR, file);
    const char *args[24];
    int n = 0;
    args[n++] = cmd[0];
    args[n++] = input;
    for (int k = 1; cmd[k]; ++k)
        args[n++] = cmd[k];
    args[n++] = "--backend";
    args[n++] = "cpu";
    args[n] = NULL;
    const double t0 = now();
    int status = wait_for(start(args), 10.0);
    const double secs = now() - t0;
    char err[4096], left[1024], want[600];
    slurp_tmp(".stderr", err, sizeof err);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 3, "%s %s: status %d, stderr %s", cmd[0], file, status,
              err);
    snprintf(want, sizeof want, "mdnl: error: %s: frame %d: cell a=(", input, frame);
    cr_expect(strncmp(err, want, strlen(want)) == 0, "%s %s: expected \"%s...\", got %s", cmd[0], file, want, err);
    cr_expect(strstr(err, "--max-pairs") != NULL && strchr(err, '\n') == err + strlen(err) - 1,
              "%s %s: expected one line pointing at --max-pairs, got %s", cmd[0], file, err);
    cr_expect(secs < 1.0, "%s %s: refused after %.2f s", cmd[0], file, secs);
    cr_expect_eq(leftovers("", NULL, left, sizeof left), 0, "%s %s: left %s", cmd[0], file, left);
}

Test(guard, damaged_cells_are_refused_by_every_command_within_a_second)
{
    const char *const neighbors[] = {"neighbors", "-c", "2.0", "-o", "out.tsv", NULL};
    const char *const neighbors_h5[] = {"neighbors", "-c", "2.0", "-o", "out.h5", NULL};
    const char *const energy[] = {"energy", "-c", "2.0", "--pair", "lj:epsilon=1,sigma=1", "-o", "out.tsv", NULL};
    const char *const rdf[] = {"rdf", "--rmax", "2.0", "--bins", "20", "-o", "out.tsv", "--plot", "out.svg", NULL};
    const char *const run_h5[] = {"run", "-c", "2.0", "--neighbors", "--pair", "lj:epsilon=1,sigma=1",
                                  "--rmax", "3", "--bins", "30", "-o", "out.h5", NULL};
    const char *const run_rdf_only[] = {"run", "--rmax", "2.0", "--bins", "30", "-o", "outdir/", NULL};
    const char *const *cmds[] = {neighbors, neighbors_h5, energy, rdf, run_h5, run_rdf_only};
    for (size_t f = 0; f < sizeof damaged / sizeof *damaged; ++f)
        for (size_t c = 0; c < sizeof cmds / sizeof *cmds; ++c)
            expect_refused(damaged[f], strstr(damaged[f], "second-frame") ? 1 : 0, cmds[c]);
}

/* dense-cell.extxyz: 2 atoms in a 0.02 Å cube expect 1.68e7 pairs below
 * 2.0, over the default of 1e7; raised, they run, and the histogram holds
 * what the estimate said (~the ideal-gas count: g = 1 in every bin). */
Test(guard, max_pairs_raises_the_limit)
{
    char input[512], out[1 << 14], err[4096];
    snprintf(input, sizeof input, "%s/bad/dense-cell.extxyz", MDNL_DATA_DIR);
    const char *const args[] = {"rdf", input, "--rmax", "2.0", "--bins", "4", "--max-pairs", "1e8",
                                "--backend", "cpu", "-o", "rdf.tsv", NULL};
    int status = wait_for(start(args), 30.0);
    slurp_tmp(".stderr", err, sizeof err);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, err);
    slurp_tmp("rdf.tsv", out, sizeof out);
    double lo, hi, r, g, n, sum = 0;
    int rows = 0;
    const char *p = strchr(out, '\n');
    while (p && sscanf(p + 1, "%lf %lf %lf %lf %lf", &lo, &hi, &r, &g, &n) == 5) {
        cr_expect(g > 0.99 && g < 1.01, "bin [%g, %g): g = %g", lo, hi, g);
        sum = n;
        ++rows;
        p = strchr(p + 1, '\n');
    }
    cr_expect_eq(rows, 4, "%s", out);
    /* n at r_max: ordered pairs per atom, estimated 1.68e7 / 2 */
    cr_expect(sum > 0.95 * 8.38e6 && sum < 1.05 * 8.38e6, "n(r_max) = %g", sum);

    /* the same with energy, and --max-pairs=VALUE */
    const char *const energy[] = {"energy", input, "-c", "2", "--pair", "lj:epsilon=1,sigma=1", "--max-pairs=2e7",
                                  "--backend", "cpu", "-o", "e.tsv", NULL};
    status = wait_for(start(energy), 30.0);
    slurp_tmp(".stderr", err, sizeof err);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, err);
}

Test(guard, max_pairs_lowers_the_limit_and_rejects_bad_values)
{
    char input[512], err[4096];
    snprintf(input, sizeof input, "%s/graphene-periodic.extxyz", MDNL_DATA_DIR);
    /* 1,152 atoms at 2.0 Å: 3 neighbours each, about 3.5e3 pairs; a limit
     * of 100 refuses the frame, one of 1e5 keeps it */
    const char *const low[] = {"neighbors", input, "-c", "2.0", "--max-pairs", "100", "--backend", "cpu",
                               "-o", "nl.tsv", NULL};
    int status = wait_for(start(low), 10.0);
    slurp_tmp(".stderr", err, sizeof err);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 3, "status %d: %s", status, err);
    cr_expect(strstr(err, "frame 0: cell a=(59.0283 0 0)") && strstr(err, "limit of 100 pairs"), "%s", err);
    const char *const ok[] = {"neighbors", input, "-c", "2.0", "--max-pairs", "1e5", "--backend", "cpu",
                              "-o", "nl.tsv", NULL};
    status = wait_for(start(ok), 10.0);
    slurp_tmp(".stderr", err, sizeof err);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, err);
    static const char *const bad[] = {"0", "-5", "nan", "abc", "inf"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; ++k) {
        const char *const args[] = {"neighbors", input, "-c", "2.0", "--max-pairs", bad[k], "-o", "x.tsv", NULL};
        status = wait_for(start(args), 10.0);
        slurp_tmp(".stderr", err, sizeof err);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 2, "--max-pairs %s: status %d: %s", bad[k], status,
                  err);
        cr_expect(strstr(err, "--max-pairs") != NULL, "--max-pairs %s: %s", bad[k], err);
    }
}

/* The estimate itself: a 1M-atom LJ liquid at r_max 4σ (the RDF benchmark)
 * expects ~2.3e8 ordered pairs, within the default limit; 3 atoms in a
 * 1e-3 Å cube expect 3e11, beyond it. No positions are needed: the grid of
 * a periodic frame depends on the box only. */
Test(guard, estimate_matches_the_density_and_the_default_keeps_the_benchmarks)
{
    mdnl_frame f = {0};
    mdnl_geom g;
    mdnl_wrap_params wp;
    f.natoms = 1000000;
    f.box.has_lattice = true;
    f.box.pbc[0] = f.box.pbc[1] = f.box.pbc[2] = true;
    const double L = cbrt(1000000 / 0.8442);
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = L;
    const double tlo[3] = {0, 0, 0}, thi[3] = {L, L, L};
    cr_assert_eq(mdnl_geom_begin(&f, 4.0, &g, &wp), MDNL_OK);
    cr_assert_eq(mdnl_geom_finish(&f, 4.0, &g, tlo, thi, f.natoms), MDNL_OK, "%s", mdnl_last_error());
    mdnl_work w;
    mdnl_work_estimate(&g, &w);
    const double want = 1e6 * 0.8442 * 4.0 / 3.0 * 3.14159265358979 * 64.0;
    cr_expect(w.pairs > 0.999 * want && w.pairs < 1.001 * want, "pairs %g, want %g", w.pairs, want);
    cr_expect(w.shifts == 27.0, "shifts %g", w.shifts);
    cr_expect(w.candidates < MDNL_WORK_CANDIDATES_PER_PAIR * mdnl_work_max_pairs(f.natoms), "candidates %g",
              w.candidates);
    /* the neighbour benchmark: 2.5σ */
    cr_assert_eq(mdnl_geom_begin(&f, 2.5, &g, &wp), MDNL_OK);
    cr_expect_eq(mdnl_geom_finish(&f, 2.5, &g, tlo, thi, f.natoms), MDNL_OK, "%s", mdnl_last_error());

    f.natoms = 3;
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 1e-3;
    const double t3[3] = {1e-3, 1e-3, 1e-3};
    cr_assert_eq(mdnl_geom_begin(&f, 2.0, &g, &wp), MDNL_OK);
    cr_expect_eq(mdnl_geom_finish(&f, 2.0, &g, tlo, t3, f.natoms), MDNL_ERR_INPUT);
    mdnl_work_estimate(&g, &w);
    cr_expect(w.pairs > 2.9e11 && w.pairs < 3.1e11, "pairs %g", w.pairs);
    /* regrid is guarded too (mdnl run grids r_max from the cutoff's grid) */
    f.box.h[0][0] = f.box.h[1][1] = f.box.h[2][2] = 1.0;
    cr_assert_eq(mdnl_geom_begin(&f, 0.5, &g, &wp), MDNL_OK);
    cr_assert_eq(mdnl_geom_finish(&f, 0.5, &g, tlo, t3, f.natoms), MDNL_OK, "%s", mdnl_last_error());
    mdnl_geom big;
    cr_expect_eq(mdnl_geom_regrid(&g, 300.0, &big), MDNL_ERR_INPUT); /* 9 / 1 * 1.1e8 = 1e9 pairs */
    cr_expect_eq(mdnl_geom_regrid(&g, 10.0, &big), MDNL_OK, "%s", mdnl_last_error());
}

/* What the fuzzer (tools/fuzz_lattice.py) found beyond the density estimate:
 * 1,152 atoms bunched in 51 Å of a 2.2e5 Å periodic axis, with a second
 * periodic axis of 0.0044 Å. The uniform density says 2e4 pairs; each atom
 * really meets ~900 images of each neighbour along the tiny axis (1e8 pairs,
 * 10+ s on the CPU). The default refuses a cutoff of more than 100 periodic
 * widths; an explicit limit lifts that rule, keeping the pair counts. */
Test(guard, cutoff_of_hundreds_of_widths_is_refused_by_default_only)
{
    mdnl_frame f = {0};
    mdnl_geom g;
    mdnl_wrap_params wp;
    f.natoms = 1152;
    f.box.has_lattice = true;
    f.box.pbc[0] = f.box.pbc[1] = true;
    f.box.h[0][0] = 0.0044, f.box.h[1][1] = 221896, f.box.h[2][2] = 219;
    const double tlo[3] = {0, 0, 10}, thi[3] = {0.0044, 51, 10};
    cr_assert_eq(mdnl_geom_begin(&f, 2.0, &g, &wp), MDNL_OK);
    cr_expect_eq(mdnl_geom_finish(&f, 2.0, &g, tlo, thi, f.natoms), MDNL_ERR_INPUT);
    cr_expect(strstr(mdnl_last_error(), "(455 widths)") != NULL, "%s", mdnl_last_error());
    /* explicit: only the counts, here the bunched atoms' 1e8 pairs (51 Å of
     * the 2.2e5 Å axis: the density of the cluster, not of the cell) */
    mdnl_work_set_limit(1e9);
    cr_expect_eq(mdnl_geom_finish(&f, 2.0, &g, tlo, thi, f.natoms), MDNL_OK, "%s", mdnl_last_error());
    mdnl_work w;
    mdnl_work_estimate(&g, &w);
    cr_expect(w.pairs > 5e7 && w.pairs < 3e8, "pairs %g", w.pairs);
    mdnl_work_set_limit(1e7);
    cr_expect_eq(mdnl_geom_finish(&f, 2.0, &g, tlo, thi, f.natoms), MDNL_ERR_INPUT);
    /* by default, 100 atoms of that cell with a cutoff of 0.4 (91 widths)
     * pass: 1e7 candidate pairs */
    mdnl_work_set_limit(0);
    f.natoms = 100;
    cr_assert_eq(mdnl_geom_begin(&f, 0.4, &g, &wp), MDNL_OK);
    cr_expect_eq(mdnl_geom_finish(&f, 0.4, &g, tlo, thi, f.natoms), MDNL_OK, "%s", mdnl_last_error());
}

/* ---- signals ---- */

/* A 10,000-atom sheet (generated once per test) that takes tens of seconds
 * to finish with the large cutoffs below: signals always land mid-run. */
static void make_sheet(void)
{
    const char *const args[] = {"gen", "graphene", "--nx", "50", "--ny", "50", "-o", "sheet.extxyz", NULL};
    int status = wait_for(start(args), 30.0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "mdnl gen failed: %d", status);
}

/* Starts args, waits until its temporary output exists in `dir` and a little
 * longer (so that the run is computing), sends sig; expects exit 128 + sig
 * and nothing left but the input (a directory the run made removed too). */
static void signal_mid_run(const char *const *args, const char *dir, int sig)
{
    pid_t pid = start(args);
    const double t0 = now();
    while (!temp_of(dir, pid, NULL, 0)) {
        int status;
        cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "%s ended before its output was opened (status %d)", args[0],
                     status);
        if (now() - t0 > 20) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            cr_assert_fail("%s: no temporary output in %s after 20 s", args[0], *dir ? dir : ".");
        }
        nap(5000);
    }
    nap(300000);
    int status;
    cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "%s finished before the signal", args[0]);
    cr_assert_eq(kill(pid, sig), 0);
    status = wait_for(pid, 10.0);
    char err[4096], left[1024];
    slurp_tmp(".stderr", err, sizeof err);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sig, "%s, signal %d: status %d (exit %d), stderr %s",
              args[0], sig, status, WIFEXITED(status) ? WEXITSTATUS(status) : -1, err);
    static const char *const keep[] = {"sheet.extxyz", NULL};
    cr_expect_eq(leftovers("", keep, left, sizeof left), 0, "%s, signal %d: left %s", args[0], sig, left);
}

Test(guard, sigint_during_neighbors_removes_the_temporary_tsv_and_exits_130)
{
    make_sheet();
    /* ~4,300 neighbours per atom: a 2e7-row table that takes long to write
     * (on one thread: 16 format it in 0.3 s, and the signal then came as
     * the output was put in place, when it is ignored by design) */
    const char *const args[] = {"neighbors", "sheet.extxyz", "-c", "60", "--max-pairs", "1e12", "--backend",
                                "cpu", "--threads", "1", "-o", "out.tsv", NULL};
    signal_mid_run(args, "", SIGINT);
}

Test(guard, sigterm_during_run_removes_the_temporary_h5_and_exits_143)
{
    make_sheet();
    /* pipeline threads busy with a 2e9-pair histogram while HDF5 holds the file open */
    const char *const args[] = {"run", "sheet.extxyz", "-c", "2", "--pair", "lj:epsilon=1,sigma=1", "--rmax", "400",
                                "--bins", "100", "--max-pairs", "1e13", "--backend", "cpu", "-o", "out.h5", NULL};
    signal_mid_run(args, "", SIGTERM);
}

Test(guard, sighup_during_run_to_a_directory_removes_it_and_exits_129)
{
    make_sheet();
    const char *const args[] = {"run", "sheet.extxyz", "-c", "60", "--neighbors", "--rmax", "400", "--bins", "100",
                                "--max-pairs", "1e13", "--backend", "cpu", "-o", "outdir/", NULL};
    signal_mid_run(args, "outdir", SIGHUP);
}

Test(guard, sigint_during_rdf_to_stdout_exits_130)
{
    make_sheet();
    /* one thread: 2e9 pairs take seconds on any host (16 threads finished
     * them in ~0.7 s, and the signal came as the outputs were written) */
    const char *const args[] = {"rdf", "sheet.extxyz", "--rmax", "400", "--bins", "100", "--max-pairs", "1e13",
                                "--backend", "cpu", "--threads", "1", "--plot", "g.svg", NULL};
    pid_t pid = start(args);
    nap(700000); /* no temporary file to wait for: rdf opens its outputs at the end */
    int status;
    cr_assert_eq(waitpid(pid, &status, WNOHANG), 0, "rdf finished before the signal");
    cr_assert_eq(kill(pid, SIGINT), 0);
    status = wait_for(pid, 10.0);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 130, "status %d", status);
}

/* ---- SIGKILL and stale names ---- */

/* A file of tmpdir/dir named like a temporary output (".NAME.tmp-PID-" and
 * 16 hexadecimal digits) holding `text`; with `lock`, this test holds its
 * open-file-description lock (as a live run in another PID namespace
 * would, whatever the PID in its name) and the descriptor stays open. */
static void plant_temp(const char *dir, const char *name, const char *text, bool lock)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s%s%s", tmpdir, dir, *dir ? "/" : "", name);
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
    cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    if (lock) {
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
        cr_assert_eq(fcntl(fd, F_OFD_SETLK, &fl), 0, "F_OFD_SETLK: %s", strerror(errno));
    } else {
        close(fd);
    }
}

static bool exists_tmp(const char *name)
{
    char path[512];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    return lstat(path, &sb) == 0;
}

Test(guard, sigkill_leaves_an_unlocked_temp_that_the_next_run_removes_and_a_locked_one_stays)
{
    make_sheet();
    const char *const slow[] = {"neighbors", "sheet.extxyz", "-c", "60", "--max-pairs", "1e12",
                                "--backend", "cpu", "-o", "out.tsv", NULL};
    pid_t pid = start(slow);
    const double t0 = now();
    char killed[256] = "";
    while (!temp_of("", pid, killed, sizeof killed)) {
        cr_assert(now() - t0 < 20, "no temporary output after 20 s");
        nap(5000);
    }
    /* rows reach the file (a new, empty temporary file is kept: its creator may not have locked it yet) */
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, killed);
    struct stat sb;
    while (stat(path, &sb) == 0 && sb.st_size == 0) {
        cr_assert(now() - t0 < 60, "no rows written after 60 s");
        nap(5000);
    }
    kill(pid, SIGKILL);
    int status = wait_for(pid, 10.0);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    cr_assert(exists_tmp(killed), "SIGKILL left no %s", killed);
    cr_expect(strlen(killed) == strlen(".out.tsv.tmp-") + (size_t)snprintf(NULL, 0, "%ld", (long)pid) + 17,
              "temporary name %s: expected .out.tsv.tmp-PID- and 16 random digits", killed);

    /* a live run's file (locked), whose PID means nothing here (another PID
     * namespace: a dead PID of ours); a new, empty, unlocked one (its creator
     * may not have locked it yet); names that only look alike */
    pid_t dead = fork();
    cr_assert(dead >= 0);
    if (dead == 0)
        _exit(0);
    waitpid(dead, NULL, 0);
    char live[128], fresh[128];
    snprintf(live, sizeof live, ".out.tsv.tmp-%ld-0123456789abcdef", (long)dead);
    snprintf(fresh, sizeof fresh, ".out.tsv.tmp-%ld-fedcba9876543210", (long)dead);
    plant_temp("", live, "# frame\ti\tj\tdistance\n", true);
    plant_temp("", fresh, "", false);
    const char *const lookalikes[] = {".out.tsv.tmp-x-0123456789abcdef", ".out.tsv.tmp-1-0123456789abcdef-extra",
                                      ".out.tsv.tmp-1-0", ".other.tsv.tmp-1-0123456789abcdef"};
    for (size_t k = 0; k < sizeof lookalikes / sizeof *lookalikes; ++k)
        plant_temp("", lookalikes[k], "x", false);

    char input[512], err[4096];
    snprintf(input, sizeof input, "%s/graphene-periodic.extxyz", MDNL_DATA_DIR);
    const char *const quick[] = {"neighbors", input, "-c", "2.0", "--backend", "cpu", "-o", "out.tsv", NULL};
    status = wait_for(start(quick), 10.0);
    slurp_tmp(".stderr", err, sizeof err);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, err);
    cr_expect(!exists_tmp(killed), "the stale %s is still there", killed);
    cr_expect(exists_tmp(live), "the locked (live) %s was removed", live);
    cr_expect(exists_tmp(fresh), "the new, empty %s was removed", fresh);
    for (size_t k = 0; k < sizeof lookalikes / sizeof *lookalikes; ++k)
        cr_expect(exists_tmp(lookalikes[k]), "%s was removed", lookalikes[k]);
    cr_expect(exists_tmp("out.tsv"), "no out.tsv");
}

/* The same in a directory output of mdnl run: an unlocked temporary table
 * inside DIR/ is removed when a run writes that table again. */
Test(guard, stale_temp_in_a_run_directory_is_removed)
{
    char path[512];
    snprintf(path, sizeof path, "%s/outdir", tmpdir);
    cr_assert_eq(mkdir(path, 0777), 0);
    plant_temp("outdir", ".energy.tsv.tmp-1-00000000deadbeef", "partial", false);
    char input[512], err[4096], left[1024];
    snprintf(input, sizeof input, "%s/trajectory-3frames.extxyz", MDNL_DATA_DIR);
    const char *const args[] = {"run", input, "-c", "2.5", "--pair", "lj:epsilon=1,sigma=1",
                                "--backend", "cpu", "-o", "outdir/", NULL};
    int status = wait_for(start(args), 10.0);
    slurp_tmp(".stderr", err, sizeof err);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d: %s", status, err);
    static const char *const keep[] = {"energy.tsv", NULL};
    cr_expect_eq(leftovers("outdir", keep, left, sizeof left), 0, "left in outdir: %s", left);
}

/* The memory half: with the pair limit lifted, a stored list that cannot fit
 * in the host's memory (~5e11 pairs of 12 atoms in a 0.0021 Å cube, which the
 * image cap of 1000 widths still admits: terabytes) is exit 4 (resources),
 * before anything is built; nothing is left. */
Test(guard, stored_list_beyond_host_memory_is_exit_4)
{
    char input[512], err[4096], left[1024];
    snprintf(input, sizeof input, "%s/bad/thin-cell-952-images.extxyz", MDNL_DATA_DIR);
    const char *const neighbors[] = {"neighbors", input, "-c", "2.0", "--max-pairs", "1e15",
                                     "--backend", "cpu", "-o", "out.tsv", NULL};
    const char *const run[] = {"run", input, "-c", "2.0", "--neighbors", "--max-pairs", "1e15",
                               "--backend", "cpu", "-o", "out.h5", NULL};
    const char *const *cmds[] = {neighbors, run};
    for (int c = 0; c < 2; ++c) {
        const double t0 = now();
        int status = wait_for(start(cmds[c]), 10.0);
        slurp_tmp(".stderr", err, sizeof err);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 4, "%s: status %d: %s", cmds[c][0], status, err);
        cr_expect(strstr(err, "frame 0: the neighbor list would take an estimated") != NULL &&
                      strchr(err, '\n') == err + strlen(err) - 1,
                  "%s: %s", cmds[c][0], err);
        cr_expect(now() - t0 < 1.0, "%s took %.2f s", cmds[c][0], now() - t0);
        cr_expect_eq(leftovers("", NULL, left, sizeof left), 0, "%s: left %s", cmds[c][0], left);
    }
}

/* ---- the occupancy guard (issue 54) ---- */

/* The candidates the cell traversal tests, counted the slow way: for every
 * atom, every stencil offset, the atoms of the cell it lands on (cyclic on a
 * periodic axis, skipped off an open one). */
static double brute_candidates(const mdnl_geom *g, const float (*pos4)[4], int64_t n)
{
    int64_t *count = calloc((size_t)g->ncells, sizeof *count);
    int(*cell)[3] = malloc((size_t)n * sizeof *cell);
    cr_assert(count && cell);
    for (int64_t i = 0; i < n; ++i) {
        for (int k = 0; k < 3; ++k)
            cell[i][k] = mdnl_cell_coord(g, pos4[i][0], pos4[i][1], pos4[i][2], k);
        ++count[((int64_t)cell[i][0] * g->ncell[1] + cell[i][1]) * g->ncell[2] + cell[i][2]];
    }
    double total = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int dx = -g->stencil[0]; dx <= g->stencil[0]; ++dx)
            for (int dy = -g->stencil[1]; dy <= g->stencil[1]; ++dy)
                for (int dz = -g->stencil[2]; dz <= g->stencil[2]; ++dz) {
                    const int d[3] = {dx, dy, dz};
                    int c[3];
                    bool inside = true;
                    for (int k = 0; k < 3; ++k) {
                        c[k] = cell[i][k] + d[k];
                        if (g->pbc[k])
                            c[k] = ((c[k] % g->ncell[k]) + g->ncell[k]) % g->ncell[k];
                        else
                            inside = inside && c[k] >= 0 && c[k] < g->ncell[k];
                    }
                    if (inside)
                        total += (double)count[((int64_t)c[0] * g->ncell[1] + c[1]) * g->ncell[2] + c[2]];
                }
    free(count);
    free(cell);
    return total;
}

/* Clumped atoms in a triclinic cell, periodic on every axis or on two, at
 * cutoffs whose stencils are 1, 2 and more than the grid (ncell 1 or 2):
 * the O(cells) window sums equal the brute count, and the densest cell is
 * the clump's. */
Test(guard, occupancy_counts_exactly_the_candidates_of_the_traversal)
{
    const int64_t n = 600;
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, n), MDNL_OK);
    f.natoms = n;
    f.box.has_lattice = true;
    const double h[3][3] = {{20, 0, 0}, {3, 18, 0}, {-2, 4, 16}};
    memcpy(f.box.h, h, sizeof h);
    unsigned seed = 54;
    for (int64_t i = 0; i < n; ++i)
        for (int k = 0; k < 3; ++k) {
            seed = seed * 1103515245u + 12345u;
            const double u = (double)(seed >> 8) / 16777216.0;
            /* half the atoms in a clump near (5, 5, 5), the rest anywhere (and outside the cell) */
            f.pos[i][k] = i < n / 2 ? 5.0 + 0.3 * u : -10.0 + 40.0 * u;
        }
    float(*pos4)[4] = malloc((size_t)n * sizeof *pos4);
    cr_assert_not_null(pos4);
    const double cutoffs[] = {2.0, 3.0, 7.0, 25.0};
    for (int open = 0; open < 2; ++open) {
        f.box.pbc[0] = f.box.pbc[1] = true;
        f.box.pbc[2] = !open;
        for (size_t c = 0; c < sizeof cutoffs / sizeof *cutoffs; ++c) {
            mdnl_geom g;
            mdnl_work_set_limit(1e12);
            cr_assert_eq(mdnl_geom_prepare(&f, cutoffs[c], &g, pos4), MDNL_OK, "%s", mdnl_last_error());
            mdnl_work_set_limit(0);
            mdnl_occupancy o;
            cr_assert_eq(mdnl_work_occupancy(&g, (const float(*)[4])pos4, NULL, &o), MDNL_OK);
            const double want = brute_candidates(&g, (const float(*)[4])pos4, n);
            cr_expect(o.candidates == want, "open z %d, cutoff %g (grid %dx%dx%d, stencil %d %d %d): %g candidates, "
                      "brute force %g", open, cutoffs[c], g.ncell[0], g.ncell[1], g.ncell[2], g.stencil[0],
                      g.stencil[1], g.stencil[2], o.candidates, want);
            cr_expect(o.densest_count >= n / 2 || g.ncells < 8, "densest cell holds %lld", (long long)o.densest_count);
            /* the double positions of a device run land in the same cells, but for atoms on a cell's edge */
            mdnl_occupancy od;
            cr_assert_eq(mdnl_work_occupancy(&g, NULL, (const double(*)[3])f.pos, &od), MDNL_OK);
            cr_expect(fabs(od.candidates - want) <= 0.02 * want, "from doubles: %g, brute %g", od.candidates, want);
        }
    }
    free(pos4);
    mdnl_frame_free(&f);
}

/* The sampled screen with every atom in the sample (strata of one atom):
 * its pairs are the exact count's and its candidates bound the exact ones
 * from above, in a clumped triclinic cell (stencils 1 to more than the
 * grid) and in a long cell whose 50 to 100 cells along x are merged into
 * at most 16, periodic or open. */
Test(guard, sampled_screen_of_every_atom_bounds_the_exact_count)
{
    const int64_t n = 2048;
    mdnl_frame f = {0};
    cr_assert_eq(mdnl_frame_reserve(&f, n), MDNL_OK);
    f.natoms = n;
    f.box.has_lattice = true;
    float(*pos4)[4] = malloc((size_t)n * sizeof *pos4);
    cr_assert_not_null(pos4);
    const double cells[2][3][3] = {{{20, 0, 0}, {3, 18, 0}, {-2, 4, 16}}, {{200, 0, 0}, {0, 12, 0}, {1, 0, 11}}};
    const double cutoffs[] = {2.0, 3.0, 4.0, 7.0, 25.0};
    for (int shape = 0; shape < 2; ++shape) {
        memcpy(f.box.h, cells[shape], sizeof cells[shape]);
        unsigned seed = 59;
        for (int64_t i = 0; i < n; ++i)
            for (int k = 0; k < 3; ++k) {
                seed = seed * 1103515245u + 12345u;
                const double u = (double)(seed >> 8) / 16777216.0;
                /* a quarter of the atoms in a clump, the rest anywhere along the cell's diagonal */
                f.pos[i][k] = i < n / 4 ? 5.0 + 0.3 * u : -10.0 + (cells[shape][0][k] + 40.0) * u;
            }
        for (int open = 0; open < 2; ++open) {
            f.box.pbc[1] = f.box.pbc[2] = true;
            f.box.pbc[0] = !open;
            for (size_t c = 0; c < sizeof cutoffs / sizeof *cutoffs; ++c) {
                mdnl_geom g;
                mdnl_work_set_limit(1e12);
                cr_assert_eq(mdnl_geom_prepare(&f, cutoffs[c], &g, pos4), MDNL_OK, "%s", mdnl_last_error());
                mdnl_work_set_limit(0);
                for (int from_doubles = 0; from_doubles < 2; ++from_doubles) {
                    const float(*p4)[4] = from_doubles ? NULL : (const float(*)[4])pos4;
                    const double(*pd)[3] = from_doubles ? (const double(*)[3])f.pos : NULL;
                    mdnl_occupancy exact, sampled;
                    cr_assert_eq(mdnl_work_occupancy(&g, p4, pd, &exact), MDNL_OK);
                    cr_assert_eq(mdnl_work_occupancy_sampled(&g, p4, pd, 12345u + c, &sampled), MDNL_OK);
                    cr_expect(sampled.pairs == exact.pairs && sampled.candidates >= exact.candidates,
                              "shape %d, open x %d, cutoff %g (grid %dx%dx%d, stencil %d %d %d), doubles %d: sampled "
                              "%g pairs %g candidates, exact %g %g",
                              shape, open, cutoffs[c], g.ncell[0], g.ncell[1], g.ncell[2], g.stencil[0], g.stencil[1],
                              g.stencil[2], from_doubles, sampled.pairs, sampled.candidates, exact.pairs,
                              exact.candidates);
                }
            }
        }
    }
    free(pos4);
    mdnl_frame_free(&f);
}

/* Runs every computing command on `input`; each must be refused with exit 3
 * within `limit` s, naming the input, the densest cell and its count. */
static void expect_stacked_refused(const char *input, const char *count)
{
    const char *const neighbors[] = {"neighbors", input, "-c", "3", "-o", "out.tsv", "--backend", "cpu", NULL};
    const char *const energy[] = {"energy", input, "-c", "3", "--pair", "lj:epsilon=1,sigma=1", "-o", "out.tsv",
                                  "--backend", "cpu", NULL};
    const char *const rdf[] = {"rdf", input, "--rmax", "5", "--bins", "10", "-o", "out.tsv", "--backend", "cpu", NULL};
    const char *const run[] = {"run", input, "-c", "3", "--pair", "lj:epsilon=1,sigma=1", "--rmax", "5", "--bins",
                               "10", "-o", "out.h5", "--backend", "cpu", NULL};
    const char *const *cmds[] = {neighbors, energy, rdf, run};
    for (size_t c = 0; c < sizeof cmds / sizeof *cmds; ++c) {
        int status = wait_for(start(cmds[c]), 120.0);
        char err[4096], left[1024], want[700];
        slurp_tmp(".stderr", err, sizeof err);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 3, "%s: status %d, stderr %s", cmds[c][0], status, err);
        snprintf(want, sizeof want, "mdnl: error: %s: frame 0: %s atoms are in one cell", input, count);
        cr_expect(strncmp(err, want, strlen(want)) == 0, "%s: expected \"%s...\", got %s", cmds[c][0], want, err);
        cr_expect(strstr(err, "atom 0 at 0 0 0") && strstr(err, "--max-pairs"), "%s: %s", cmds[c][0], err);
        cr_expect(strchr(err, '\n') == err + strlen(err) - 1, "one line: %s", err);
        const char *const keep[] = {"stacked.xyz", NULL};
        cr_expect_eq(leftovers("", keep, left, sizeof left), 0, "%s: left %s", cmds[c][0], left);
    }
}

/* 100k atoms at the origin of a 100 Å periodic box (800 KB of XYZ): every
 * command ran for minutes (rdf, energy) or grew a list to 1.7 GB before exit
 * 4 (neighbors). The extent estimate saw the whole box; the cells' occupancy
 * sees one cell holding everything. */
Test(guard, atoms_stacked_at_one_point_are_refused_naming_the_densest_cell)
{
    char path[512];
    snprintf(path, sizeof path, "%s/stacked.xyz", tmpdir);
    FILE *fp = fopen(path, "w");
    cr_assert_not_null(fp);
    fprintf(fp, "100000\nLattice=\"100 0 0 0 100 0 0 0 100\" Properties=species:S:1:pos:R:3 pbc=\"T T T\"\n");
    for (int i = 0; i < 100000; ++i)
        fputs("C 0 0 0\n", fp);
    cr_assert_eq(fclose(fp), 0);
    expect_stacked_refused("stacked.xyz", "100000 of 100000");
}

/* The same from a 63 KB gzip H5MD: 2M atoms at the origin of a periodic box. */
Test(guard, two_million_zeros_of_a_small_h5md_are_refused_naming_the_densest_cell)
{
    char input[512];
    snprintf(input, sizeof input, "%s/h5md/bad_zeros_2m_gzip.h5md", MDNL_DATA_DIR);
    expect_stacked_refused(input, "2000000 of 2000000");
}

/* ---- hostile and damaged H5MD through every reading command (issue 54) ---- */

/* Files that point outside themselves, declare what they do not hold, or
 * were damaged by one flipped byte: `run` (its reader on a thread of its
 * own), `rdf`, `info` and `convert` each exit 3 with one line naming the
 * file, within seconds, and leave nothing behind. Before: SIGSEGV in
 * H5Dread on the reader thread (flips, self-referencing VDS), exit 0 with
 * another file's bytes as coordinates (external link, external storage),
 * or no end (10^12 declared frames). */
Test(guard, hostile_h5md_is_exit_3_from_every_reading_command)
{
    static const char *const files[] = {"bad_flip_type_size.h5md",  "bad_flip_chunk_count.h5md",
                                        "bad_flip_chunk_dim.h5md",  "bad_flip_species_type.h5md", "bad_vds_self.h5md",
                                        "bad_external_link.h5md",   "bad_external_storage.h5md",
                                        "bad_declared_frames.h5md", "bad_declared_contiguous.h5md"};
    for (size_t i = 0; i < sizeof files / sizeof *files; ++i) {
        char input[512];
        snprintf(input, sizeof input, "%s/h5md/%s", MDNL_DATA_DIR, files[i]);
        const char *const run[] = {"run", input, "--rmax", "2", "--bins", "4", "-o", "out.h5", "--backend", "cpu", NULL};
        const char *const rdf[] = {"rdf", input, "--rmax", "2", "--bins", "4", "-o", "out.tsv", "--backend", "cpu", NULL};
        const char *const info[] = {"info", input, NULL};
        const char *const convert[] = {"convert", input, "out.h5", NULL};
        const char *const *cmds[] = {run, rdf, info, convert};
        for (size_t c = 0; c < sizeof cmds / sizeof *cmds; ++c) {
            int status = wait_for(start(cmds[c]), 60.0);
            char err[4096], left[1024], want[600];
            slurp_tmp(".stderr", err, sizeof err);
            cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 3, "%s %s: status %d, stderr %s", cmds[c][0],
                      files[i], status, err);
            snprintf(want, sizeof want, "mdnl: error: %s: ", input);
            cr_expect(strncmp(err, want, strlen(want)) == 0 && strchr(err, '\n') == err + strlen(err) - 1,
                      "%s %s: expected one line \"%s...\", got %s", cmds[c][0], files[i], want, err);
            cr_expect_eq(leftovers("", NULL, left, sizeof left), 0, "%s %s: left %s", cmds[c][0], files[i], left);
        }
    }
}

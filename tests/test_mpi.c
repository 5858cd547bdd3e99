/* test_mpi.c — `mpirun -n P mdnl run` (src/mpi_split.c) as a user runs it,
 * on the CPU backend: the same HDF5 datasets and TSV bytes as one process
 * with 1, 2 and 3 ranks, XYZ and H5MD input, --frames applied first; one
 * JSON object with ranks and frames_per_rank; one progress bar; a bad frame
 * in the middle ends the job with exit 3, the single process's message
 * once, and no file. Runs MDNL_BINARY under MDNL_MPIEXEC. In a build
 * without MPI the launcher tests skip, and a launcher's environment is
 * refused instead. */
#define _POSIX_C_SOURCE 200809L
#include <hdf5.h>

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_test_util.h"


#define NFRAMES 9
#define NCELL 3 /* 4 * 3^3 = 108 atoms */

/* A 9-frame periodic trajectory of two species whose box changes every
 * frame (so that the per-frame RDF normalisation makes the sum over frames
 * order-sensitive), with frame `bad` (-1: none) holding "abc" for a
 * coordinate. Deterministic jitter. */
static void write_traj(const char *path, int bad, int bad2)
{
    FILE *fp = fopen(path, "w");
    cr_assert_not_null(fp);
    unsigned long long s = 12345;
    const int n = 4 * NCELL * NCELL * NCELL;
    for (int f = 0; f < NFRAMES; ++f) {
        const double a = 1.70 + 0.01 * f, L = a * NCELL;
        fprintf(fp, "%d\nLattice=\"%.6f 0 0 0 %.6f 0 0 0 %.6f\" Properties=species:S:1:pos:R:3 Step=%d Time=%.1f "
                    "pbc=\"T T T\"\n",
                n, L, L, L, 10 * f, 0.5 * f);
        static const double basis[4][3] = {{0, 0, 0}, {0.5, 0.5, 0}, {0.5, 0, 0.5}, {0, 0.5, 0.5}};
        int k = 0;
        for (int x = 0; x < NCELL; ++x)
            for (int y = 0; y < NCELL; ++y)
                for (int z = 0; z < NCELL; ++z)
                    for (int b = 0; b < 4; ++b, ++k) {
                        double p[3];
                        for (int d = 0; d < 3; ++d) {
                            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
                            double u = (double)(s >> 11) / 9007199254740992.0 - 0.5;
                            p[d] = a * ((d == 0 ? x : d == 1 ? y : z) + basis[b][d]) + 0.15 * u;
                        }
                        if ((f == bad || f == bad2) && k == 7)
                            fprintf(fp, "%s abc %.9f %.9f\n", k % 3 ? "Ar" : "Kr", p[1], p[2]);
                        else
                            fprintf(fp, "%s %.9f %.9f %.9f\n", k % 3 ? "Ar" : "Kr", p[0], p[1], p[2]);
                    }
    }
    fclose(fp);
}

#ifdef MDNL_HAVE_MPI

/* Each test's mpiruns keep Open MPI's session directory in a folder of
 * their own beside the test's: Criterion runs tests at once, and
 * concurrent mpiruns sharing /tmp/ompi.<host>.<uid> race as one creates
 * it while another removes it ("ORTE_ERROR_LOG: Error in file
 * util/session_dir.c at line 107", open-mpi/ompi#8510; seen once in CI's
 * ASan pass). */
static char ompi_tmpdir[300];

static void mpi_init(void)
{
    make_tmpdir();
    snprintf(ompi_tmpdir, sizeof ompi_tmpdir, "%s.ompi", tmpdir);
    cr_assert_eq(mkdir(ompi_tmpdir, 0700), 0, "%s", ompi_tmpdir);
    cr_assert_eq(setenv("OMPI_MCA_orte_tmpdir_base", ompi_tmpdir, 1), 0);
}

static void mpi_fini(void)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", ompi_tmpdir);
    cr_expect_eq(system(cmd), 0);
    remove_tmpdir();
}

/* A rank that waits for a dead one fails the test instead of hanging. */
TestSuite(mpi, .init = mpi_init, .fini = mpi_fini, .timeout = 240);

#define MPIRUN MDNL_MPIEXEC " --oversubscribe --allow-run-as-root -q --bind-to none -n"

static void fixtures(void)
{
    char p[512];
    snprintf(p, sizeof p, "%s/traj.extxyz", tmpdir);
    write_traj(p, -1, -1);
    cr_assert_eq(sh("'%s' convert traj.extxyz traj.h5 --quiet", MDNL_BINARY), 0, "%s", err_text);
}

/* ---- comparing results files ---- */

typedef struct dset_list {
    int n;
    char name[64][256];
} dset_list;

static herr_t collect(hid_t o, const char *name, const H5O_info_t *info, void *op)
{
    (void)o;
    dset_list *l = op;
    if (info->type == H5O_TYPE_DATASET && l->n < 64)
        snprintf(l->name[l->n++], 256, "%s", name);
    return 0;
}

/* The raw bytes of a dataset (its own type, no conversion) and its shape. */
static void *read_raw(hid_t file, const char *name, size_t *bytes, char *shape, size_t cap)
{
    hid_t d = H5Dopen2(file, name, H5P_DEFAULT);
    cr_assert_geq(d, 0, "dataset %s", name);
    hid_t t = H5Dget_type(d), s = H5Dget_space(d);
    hsize_t dims[8];
    int rank = H5Sget_simple_extent_dims(s, dims, NULL);
    size_t n = (size_t)H5Sget_simple_extent_npoints(s) * H5Tget_size(t);
    int len = snprintf(shape, cap, "class %d size %zu:", (int)H5Tget_class(t), H5Tget_size(t));
    for (int k = 0; k < rank; ++k)
        len += snprintf(shape + len, cap - (size_t)len, " %llu", (unsigned long long)dims[k]);
    void *buf = malloc(n ? n : 1);
    if (n)
        cr_assert_geq(H5Dread(d, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), 0, "read %s", name);
    H5Tclose(t);
    H5Sclose(s);
    H5Dclose(d);
    *bytes = n;
    return buf;
}

/* Every dataset of a and b: the same names, shapes, types and bytes. */
static void expect_same_h5(const char *a, const char *b)
{
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/%s", tmpdir, a);
    snprintf(pb, sizeof pb, "%s/%s", tmpdir, b);
    hid_t fa = H5Fopen(pa, H5F_ACC_RDONLY, H5P_DEFAULT), fb = H5Fopen(pb, H5F_ACC_RDONLY, H5P_DEFAULT);
    cr_assert_geq(fa, 0, "%s", pa);
    cr_assert_geq(fb, 0, "%s", pb);
    static dset_list la, lb;
    la.n = lb.n = 0;
    H5Ovisit(fa, H5_INDEX_NAME, H5_ITER_INC, collect, &la);
    H5Ovisit(fb, H5_INDEX_NAME, H5_ITER_INC, collect, &lb);
    cr_assert_eq(la.n, lb.n, "%s has %d datasets, %s %d", a, la.n, b, lb.n);
    cr_assert_gt(la.n, 5);
    for (int k = 0; k < la.n; ++k) {
        cr_assert_str_eq(la.name[k], lb.name[k]);
        size_t na, nb;
        char sa[128], sb[128];
        void *ba = read_raw(fa, la.name[k], &na, sa, sizeof sa), *bb = read_raw(fb, lb.name[k], &nb, sb, sizeof sb);
        cr_expect_str_eq(sa, sb, "%s: shape/type %s vs %s", la.name[k], sa, sb);
        cr_expect(na == nb && memcmp(ba, bb, na) == 0, "%s: %s and %s differ", la.name[k], a, b);
        free(ba);
        free(bb);
    }
    H5Fclose(fa);
    H5Fclose(fb);
}

static void expect_same_file(const char *a, const char *b)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cmp '%s/%s' '%s/%s'", tmpdir, a, tmpdir, b);
    cr_expect_eq(system(cmd), 0, "%s and %s differ", a, b);
}

static const char *const WORK = "--backend cpu -c 2.2 --pair lj:epsilon=1,sigma=1 --neighbors --list full "
                                "--rmax 3.5 --bins 40";

static void same_as_one_process(const char *input, const char *extra)
{
    fixtures();
    cr_assert_eq(sh("'%s' run %s %s %s -o one.h5 --quiet", MDNL_BINARY, input, WORK, extra), 0, "%s", err_text);
    cr_assert_eq(sh("'%s' run %s %s %s -o one/ --quiet", MDNL_BINARY, input, WORK, extra), 0, "%s", err_text);
    for (int p = 1; p <= 3; ++p) {
        cr_assert_eq(sh("%s %d '%s' run %s %s %s -o p%d.h5 --quiet", MPIRUN, p, MDNL_BINARY, input, WORK, extra, p),
                     0, "%d ranks: %s", p, err_text);
        cr_expect_str_empty(err_text, "%d ranks: %s", p, err_text);
        char name[32];
        snprintf(name, sizeof name, "p%d.h5", p);
        expect_same_h5("one.h5", name);
        cr_assert_eq(sh("%s %d '%s' run %s %s %s -o p%d/ --quiet", MPIRUN, p, MDNL_BINARY, input, WORK, extra, p),
                     0, "%d ranks: %s", p, err_text);
        for (int k = 0; k < 3; ++k) {
            static const char *const t[] = {"energy.tsv", "neighbors.tsv", "rdf.tsv"};
            char a[64], b[64];
            snprintf(a, sizeof a, "one/%s", t[k]);
            snprintf(b, sizeof b, "p%d/%s", p, t[k]);
            expect_same_file(a, b);
        }
    }
}

Test(mpi, xyz_same_datasets_as_one_process) { same_as_one_process("traj.extxyz", ""); }

Test(mpi, h5md_same_datasets_as_one_process) { same_as_one_process("traj.h5", ""); }

/* Partial RDFs, and --frames selects before the split (4 frames over 3 ranks). */
Test(mpi, frames_and_pairs_before_the_split) { same_as_one_process("traj.h5", "--frames 1::2 --pairs Ar-Ar,Ar-Kr"); }

/* The lists' image shifts and vectors travel with them (--with). */
Test(mpi, shifts_and_vectors_same_as_one_process) { same_as_one_process("traj.extxyz", "--with shift,vector"); }

/* More ranks than frames: the empty ranks take part and add nothing. */
Test(mpi, more_ranks_than_frames) { same_as_one_process("traj.extxyz", "--frames 4:6"); }

/* The frames_per_rank member of the JSON line (integers). */
static void frames_per_rank(const char *json, long long *v, int *n)
{
    const char *p = strstr(json, "\"frames_per_rank\":[");
    cr_assert_not_null(p, "%s", json);
    p += strlen("\"frames_per_rank\":[");
    *n = 0;
    while (*p && *p != ']') {
        char *end;
        v[(*n)++] = strtoll(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
}

Test(mpi, one_json_object_with_ranks)
{
    fixtures();
    for (int p = 1; p <= 3; ++p) {
        cr_assert_eq(sh("%s %d '%s' run traj.h5 %s -o r.h5 --json", MPIRUN, p, MDNL_BINARY, WORK), 0, "%s", err_text);
        /* one line, one object, from rank 0 */
        cr_expect_eq(strchr(out_text, '\n'), out_text + strlen(out_text) - 1, "one line expected: %s", out_text);
        cr_expect_not_null(strstr(out_text, "\"frames\":9,"), "%s", out_text);
        char want[32];
        snprintf(want, sizeof want, "\"ranks\":%d,", p);
        cr_expect_not_null(strstr(out_text, want), "%s", out_text);
        long long v[8];
        int n = 0;
        frames_per_rank(out_text, v, &n);
        cr_expect_eq(n, p);
        long long sum = 0;
        for (int k = 0; k < n; ++k) {
            sum += v[k];
            cr_expect(v[k] == 9 / p + (k < 9 % p), "rank %d: %lld frames", k, v[k]);
        }
        cr_expect_eq(sum, 9);
    }
    /* the energy statistics of every frame, summed in frame order: the single process's */
    cr_assert_eq(sh("'%s' run traj.h5 %s -o s.h5 --json", MDNL_BINARY, WORK), 0);
    char one[1 << 12];
    const char *e = strstr(out_text, "\"energy\":{");
    cr_assert_not_null(e);
    snprintf(one, sizeof one, "%.*s", (int)(strchr(e, '}') - e), e);
    cr_assert_eq(sh("%s 3 '%s' run traj.h5 %s -o r.h5 --json", MPIRUN, MDNL_BINARY, WORK), 0);
    cr_expect_not_null(strstr(out_text, one), "%s not in %s", one, out_text);
}

Test(mpi, one_progress_bar_counting_every_rank)
{
    fixtures();
    cr_assert_eq(sh("%s 3 '%s' run traj.extxyz %s -o r.h5 --progress", MPIRUN, MDNL_BINARY, WORK), 0, "%s", err_text);
    cr_expect_not_null(strstr(err_text, "9/9 frames"), "%s", err_text);
    /* one bar: the final count shows once */
    const char *first = strstr(err_text, "9/9 frames");
    cr_expect_null(first ? strstr(first + 1, "9/9 frames") : NULL, "%s", err_text);
    /* one summary line */
    cr_expect_not_null(strstr(err_text, "mdnl run: 9 frame(s)"), "%s", err_text);
}

static bool dir_has_only(const char *keep1, const char *keep2)
{
    DIR *d = opendir(tmpdir);
    struct dirent *e;
    bool ok = true;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, ".stdout") &&
            strcmp(e->d_name, ".stderr") && strcmp(e->d_name, keep1) && strcmp(e->d_name, keep2)) {
            fprintf(stderr, "left behind: %s\n", e->d_name);
            ok = false;
        }
    closedir(d);
    return ok;
}

/* A bad frame at `bad` (and bad2): every rank count gives the single
 * process's exit status and message, once, and leaves nothing. */
static void bad_frame(const char *input, const char *make, int bad, int bad2, const char *out)
{
    char p[512];
    snprintf(p, sizeof p, "%s/bad.extxyz", tmpdir);
    write_traj(p, bad, bad2);
    if (make)
        cr_assert_eq(sh("%s", make), 0, "%s", err_text);
    int rc1 = sh("'%s' run %s %s -o %s", MDNL_BINARY, input, WORK, out);
    cr_assert_eq(rc1, 3, "%s", err_text);
    static char one[sizeof err_text];
    snprintf(one, sizeof one, "%s", err_text);
    cr_assert_not_null(strstr(one, "mdnl: error: "));
    cr_assert_eq(strchr(one, '\n'), one + strlen(one) - 1, "one line: %s", one);
    for (int np = 1; np <= 3; ++np) {
        int rc = sh("%s %d '%s' run %s %s -o %s", MPIRUN, np, MDNL_BINARY, input, WORK, out);
        cr_expect_eq(rc, 3, "%d ranks: exit %d: %s", np, rc, err_text);
        cr_expect_str_eq(err_text, one, "%d ranks", np);
        cr_expect(dir_has_only(input, "bad.extxyz"), "%d ranks left a file", np);
    }
}

/* XYZ: frame 5 lies in rank 1's block of 2 and rank 2's of 3. */
Test(mpi, xyz_bad_frame_in_the_middle) { bad_frame("bad.extxyz", NULL, 5, -1, "r.h5"); }

/* Two bad frames (1 and 7, different blocks): the first one is reported. */
Test(mpi, xyz_first_bad_frame_wins) { bad_frame("bad.extxyz", NULL, 7, 1, "r/"); }

/* H5MD: a NaN coordinate in frame 4 (the reader skips its finiteness pass in
 * `run`; the wrap rejects it naming the frame and atom). */
Test(mpi, h5md_bad_frame_in_the_middle)
{
    fixtures();
    char p[512];
    snprintf(p, sizeof p, "%s/traj.h5", tmpdir);
    hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    cr_assert_geq(f, 0);
    hid_t d = H5Dopen2(f, "/particles/all/position/value", H5P_DEFAULT);
    cr_assert_geq(d, 0);
    hid_t fs = H5Dget_space(d);
    hsize_t start[3] = {4, 11, 1}, count[3] = {1, 1, 1};
    H5Sselect_hyperslab(fs, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t ms = H5Screate_simple(3, count, NULL);
    double nan = strtod("nan", NULL);
    cr_assert_geq(H5Dwrite(d, H5T_NATIVE_DOUBLE, ms, fs, H5P_DEFAULT, &nan), 0);
    H5Sclose(ms);
    H5Sclose(fs);
    H5Dclose(d);
    H5Fclose(f);
    bad_frame("traj.h5", "rm traj.extxyz", -1, -1, "r.h5");
}

/* Files whose frames cannot be counted (a truncated XYZ frame): rank 0
 * takes every frame and stops where one process stops; --read-only too. */
Test(mpi, uncountable_and_read_only)
{
    static const char *const bad[] = {"second-frame-truncated.xyz", "truncated.xyz", "count-beyond-lines.xyz"};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; ++k) {
        int rc1 = sh("'%s' run '%s/bad/%s' --backend cpu -c 2 --neighbors -o r.h5", MDNL_BINARY, MDNL_DATA_DIR, bad[k]);
        static char one[sizeof err_text];
        snprintf(one, sizeof one, "%s", err_text);
        cr_assert_eq(rc1, 3, "%s", one);
        int rc = sh("%s 3 '%s' run '%s/bad/%s' --backend cpu -c 2 --neighbors -o r.h5", MPIRUN, MDNL_BINARY,
                    MDNL_DATA_DIR, bad[k]);
        cr_expect_eq(rc, 3, "%s: %s", bad[k], err_text);
        cr_expect_str_eq(err_text, one, "%s", bad[k]);
        cr_expect(dir_has_only("", ""), "%s left a file", bad[k]);
    }
    fixtures();
    cr_assert_eq(sh("%s 2 '%s' run traj.extxyz --read-only --json", MPIRUN, MDNL_BINARY), 0, "%s", err_text);
    cr_expect_not_null(strstr(out_text, "\"frames\":9,\"atoms\":108,\"atoms_max\":108"), "%s", out_text);
    cr_expect_not_null(strstr(out_text, "\"ranks\":2,\"frames_per_rank\":[5,4]"), "%s", out_text);
}

/* A failure before the split on one rank only is still agreed: an output
 * directory that cannot be made stops every rank, said once. */
Test(mpi, output_failure_said_once)
{
    fixtures();
    cr_assert_eq(sh("touch blocker"), 0);
    int rc1 = sh("'%s' run traj.h5 %s -o blocker/sub/", MDNL_BINARY, WORK);
    static char one[sizeof err_text];
    snprintf(one, sizeof one, "%s", err_text);
    cr_assert_neq(rc1, 0);
    int rc = sh("%s 3 '%s' run traj.h5 %s -o blocker/sub/", MPIRUN, MDNL_BINARY, WORK);
    cr_expect_eq(rc, rc1);
    cr_expect_str_eq(err_text, one);
}

/* A resource failure on ranks other than 0 only (no spool file in $TMPDIR):
 * exit 4 with their message, said once by rank 0, no output left. */
Test(mpi, resource_failure_on_other_ranks)
{
    fixtures();
    cr_assert_eq(sh("touch blocker && rm traj.extxyz"), 0);
    int rc = sh("%s 3 -x TMPDIR=%s/blocker/tmp '%s' run traj.h5 %s -o r.h5", MPIRUN, tmpdir, MDNL_BINARY,
                WORK);
    cr_expect_eq(rc, 4, "%s", err_text);
    cr_expect_not_null(strstr(err_text, "mdnl: error: "), "%s", err_text);
    cr_expect_not_null(strstr(err_text, "/blocker/tmp: cannot create the rank's spool file"), "%s", err_text);
    cr_expect_eq(strchr(err_text, '\n'), err_text + strlen(err_text) - 1, "one line: %s", err_text);
    cr_expect(dir_has_only("traj.h5", "blocker"));
}

#else /* no MPI in this build */

TestSuite(mpi, .init = make_tmpdir, .fini = remove_tmpdir, .timeout = 60);

Test(mpi, launcher_tests_need_an_mpi_build)
{
    cr_skip_test("this build has no MPI (MDNL_MPI=OFF or OpenMPI not found): nothing to launch");
}

/* Launched as two ranks, a build without MPI refuses, said by rank 0 only. */
Test(mpi, several_ranks_refused_without_mpi)
{
    char p[512];
    snprintf(p, sizeof p, "%s/t.extxyz", tmpdir);
    write_traj(p, -1, -1);
    int rc = sh("OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=0 '%s' run t.extxyz --backend cpu -c 2 --neighbors -o r.h5",
                MDNL_BINARY);
    cr_expect_eq(rc, 2, "%s", err_text);
    cr_expect_not_null(strstr(err_text, "built without MPI"), "%s", err_text);
    rc = sh("OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_RANK=1 '%s' run t.extxyz --backend cpu -c 2 --neighbors -o r.h5",
            MDNL_BINARY);
    cr_expect_eq(rc, 2);
    cr_expect_str_empty(err_text);
    /* one process runs as before */
    cr_expect_eq(sh("'%s' run t.extxyz --backend cpu -c 2 --neighbors -o r.h5 --json", MDNL_BINARY), 0, "%s",
                 err_text);
    cr_expect_not_null(strstr(out_text, "\"ranks\":1,\"frames_per_rank\":[9]"), "%s", out_text);
}

#endif

/* fuzz_replay.c — main() for the replay builds of the harnesses: runs every
 * regular file of each directory (or each file) named on the command line
 * through LLVMFuzzerTestOneInput, in name order, and prints how many ran.
 * Any contract violation aborts inside the harness. */
#define _POSIX_C_SOURCE 200809L
#include "fuzz_common.h"

#include <dirent.h>
#include <sys/stat.h>

static int run_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, fp)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb, cap *= 2;
        }
    }
    fclose(fp);
    if (!buf)
        return -1;
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(int argc, char **argv)
{
    long ran = 0;
    for (int a = 1; a < argc; ++a) {
        struct stat st;
        if (stat(argv[a], &st) != 0) {
            fprintf(stderr, "fuzz_replay: no such file or directory: %s\n", argv[a]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[a]) != 0)
                return 1;
            ++ran;
            continue;
        }
        DIR *d = opendir(argv[a]);
        if (!d)
            return 1;
        char **names = NULL;
        size_t n = 0, cap = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            if (n == cap) {
                cap = cap ? cap * 2 : 256;
                names = realloc(names, cap * sizeof *names);
                if (!names)
                    return 1;
            }
            names[n++] = strdup(e->d_name);
        }
        closedir(d);
        qsort(names, n, sizeof *names, by_name);
        for (size_t k = 0; k < n; ++k) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", argv[a], names[k]);
            if (run_file(path) != 0)
                return 1;
            ++ran;
            free(names[k]);
        }
        free(names);
    }
    /* the harnesses' scratch files (fuzz_scratch) */
    static const char *const exts[] = {".xyz", ".frames.xyz", ".h5"};
    for (size_t k = 0; k < sizeof exts / sizeof *exts; ++k)
        unlink(fuzz_scratch(exts[k]));
    if (ran == 0) {
        fprintf(stderr, "fuzz_replay: no inputs\n");
        return 1;
    }
    printf("fuzz_replay: %ld inputs, no contract violation\n", ran);
    return 0;
}

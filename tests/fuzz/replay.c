/* tests/fuzz/replay.c -- run a libFuzzer target without libFuzzer.
 *
 *   replay_TARGET PATH...   (files, or directories whose files are read)
 *
 * Feeds every file to LLVMFuzzerTestOneInput once, in sorted order, so the
 * seed and regression corpora are replayed by every `make test` with the
 * normal compiler (gcc) and flags. A target reports a violated invariant by
 * abort(), which ends this program with a signal: run.sh counts it as failed.
 * Prints "N passed, 0 failed" when every input ran. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static int n_run;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "replay: cannot open %s\n", path); return -1; }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (n == cap) buf = realloc(buf, cap *= 2);
        size_t k = fread(buf + n, 1, cap - n, f);
        if (k == 0) break;
        n += k;
    }
    fclose(f);
    /* libFuzzer hands out a buffer of exactly `size` bytes: copy so that ASan
     * (when enabled) catches reads past the end */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    n_run++;
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path)
{
    struct stat sb;
    if (stat(path, &sb)) { fprintf(stderr, "replay: no such path %s\n", path); return -1; }
    if (!S_ISDIR(sb.st_mode)) return run_file(path);
    DIR *d = opendir(path);
    if (!d) return -1;
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        names = realloc(names, (n + 1) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(path) + strlen(names[i]) + 2;
        char *p = malloc(len);
        snprintf(p, len, "%s/%s", path, names[i]);
        rc |= run_path(p);
        free(p);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    int rc = 0;
    for (int i = 1; i < argc; i++) rc |= run_path(argv[i]);
    if (n_run == 0) { fprintf(stderr, "replay: no inputs\n"); rc = -1; }
    printf("%d passed, %d failed\n", n_run, rc ? 1 : 0);
    return rc ? 1 : 0;
}

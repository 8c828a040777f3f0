/*
 * replay: a main() for the libFuzzer harnesses in the ordinary (gcc) build.
 * Linked with one fuzz_<name>.c, it feeds every file of the given corpus
 * directories, in name order, through LLVMFuzzerTestOneInput, so ctest runs
 * each harness's invariant checks on its seed corpus (and on every input a
 * fuzzing run found and added) without clang. A harness reports a violation
 * by aborting; LLVMFuzzerTestOneInput returning non-zero is a failure too.
 *
 * Usage: fuzz_replay_<name> [--min N] DIR...   (fails with fewer than N
 * files in all, default 3, so an emptied or mistyped corpus cannot pass)
 *
 * Each input is copied into a buffer of exactly its size, so a sanitizer
 * build (SB_SANITIZE) sees any read past its end.
 */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "sb_alloc.h"

/* The input being replayed, named on stderr if the harness aborts on it. */
static char replay_current[8192];

static void replay_on_abort(int sig)
{
    static const char msg[] = "replay: the harness aborted on ";
    (void)!write(2, msg, sizeof msg - 1);
    (void)!write(2, replay_current, strlen(replay_current));
    (void)!write(2, "\n", 1);
    signal(sig, SIG_DFL);
    raise(sig);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads path whole into an exact-size buffer (*n bytes; never NULL). */
static uint8_t *replay_read(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, len = 0;
    uint8_t *buf = sb_xmalloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap)
            buf = sb_xrealloc(buf, cap *= 2);
    }
    fclose(f);
    uint8_t *exact = sb_xmalloc(len ? len : 1);
    memcpy(exact, buf, len);
    free(buf);
    *n = len;
    return exact;
}

/* Replays one directory; returns the number of files, or -1 on an error. */
static int replay_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open corpus %s\n", dir);
        return -1;
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        names = sb_xrealloc(names, (n + 1) * sizeof *names);
        names[n++] = sb_xstrdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, replay_cmp);
    int files = 0, failed = 0;
    for (size_t i = 0; i < n; i++) {
        char *path = replay_current;
        snprintf(path, sizeof replay_current, "%s/%s", dir, names[i]);
        size_t len = 0;
        uint8_t *data = replay_read(path, &len);
        if (!data) {
            fprintf(stderr, "replay: cannot read %s\n", path);
            failed = 1;
        } else {
            int rc = LLVMFuzzerTestOneInput(data, len);
            free(data);
            if (rc != 0) {
                fprintf(stderr, "replay: %s: LLVMFuzzerTestOneInput returned %d\n", path, rc);
                failed = 1;
            }
            files++;
        }
        free(names[i]);
    }
    free(names);
    return failed ? -1 : files;
}

int main(int argc, char **argv)
{
    long min = 3;
    int total = 0, i = 1;
    signal(SIGABRT, replay_on_abort);
    if (argc > 2 && !strcmp(argv[1], "--min")) {
        min = strtol(argv[2], NULL, 10);
        i = 3;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: %s [--min N] DIR...\n", argv[0]);
        return 2;
    }
    for (; i < argc; i++) {
        int n = replay_dir(argv[i]);
        if (n < 0)
            return 1;
        printf("replayed %d inputs from %s\n", n, argv[i]);
        total += n;
    }
    if (total < min) {
        fprintf(stderr, "replay: only %d inputs (at least %ld expected)\n", total, min);
        return 1;
    }
    return 0;
}

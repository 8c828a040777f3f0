/*
 * sb_bench_opts: the command line the bench clients share (see
 * sb_bench_opts.h). Each client's main() keeps its own options, usage text,
 * checks of what goes together, and output.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_bench_opts.h"

int sb_bench_parse_args(int argc, char **argv, const char *prog, struct sb_bench_opts *o, sb_bench_opt_fn own,
                        void *arg, void (*usage)(void))
{
    memset(o, 0, sizeof *o);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json")) {
            o->json = true;
            continue;
        }
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage();
            return 0;
        }
        if (i + 1 >= argc) {
            usage();
            return 2;
        }
        char *v = argv[++i];
        int bad = 0;
        if (!strcmp(a, "--url"))
            o->url = v;
        else if (!strcmp(a, "--body-file"))
            o->body_file = v;
        else if (!strcmp(a, "--body"))
            o->body = v;
        else if (!strcmp(a, "-H") || !strcmp(a, "--header")) {
            if (o->nheaders == SB_BENCH_MAX_HEADERS || !strchr(v, ':'))
                bad = 1;
            else
                o->headers[o->nheaders++] = v;
        } else
            bad = own(arg, a, v);
        if (bad) {
            fprintf(stderr, "%s: bad argument %s %s\n", prog, a, v);
            usage();
            return 2;
        }
    }
    return -1;
}

int sb_bench_parse_double(const char *s, double min, double max, double *out)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= min && v <= max))
        return -EINVAL;
    *out = v;
    return 0;
}

int sb_bench_parse_int(const char *s, long min, long max, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max)
        return -EINVAL;
    *out = (int)v;
    return 0;
}

char *sb_bench_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 4096;
            if (cap > (size_t)SB_BENCH_MAX_BODY + 1)
                goto fail;
            buf = sb_xrealloc(buf, cap);
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    if (ferror(f))
        goto fail;
    fclose(f);
    *len = n;
    return buf;
fail:
    free(buf);
    fclose(f);
    return NULL;
}

int sb_bench_body(const struct sb_bench_opts *o, const char *prog, const char **body, size_t *len, char **owned)
{
    *owned = NULL;
    if (o->body_file) {
        *owned = sb_bench_read_file(o->body_file, len);
        if (!*owned) {
            fprintf(stderr, "%s: cannot read --body-file %s\n", prog, o->body_file);
            return -1;
        }
        *body = *owned;
    } else if (o->body) {
        *body = o->body;
        *len = strlen(o->body);
    }
    return 0;
}

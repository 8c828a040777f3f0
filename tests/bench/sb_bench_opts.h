/*
 * sb_bench_opts: the command line the bench clients share (sb-load,
 * sb-stream): --url, --body, --body-file, -H/--header, --json and
 * -h/--help, read by one loop that hands every other "NAME VALUE" pair to
 * the client's own parser; the value parsers for numbers; and the request
 * body, given inline or read whole from a file.
 */
#ifndef SB_BENCH_OPTS_H
#define SB_BENCH_OPTS_H

#include <stdbool.h>
#include <stddef.h>

#define SB_BENCH_MAX_HEADERS 64
#define SB_BENCH_MAX_BODY (64L * 1024 * 1024)

struct sb_bench_opts {
    const char *url;                           /* --url, or NULL */
    const char *body;                          /* --body, or NULL (argv's) */
    const char *body_file;                     /* --body-file, or NULL (argv's) */
    const char *headers[SB_BENCH_MAX_HEADERS]; /* -H 'Name: value' (argv's) */
    size_t nheaders;
    bool json; /* --json: one JSON line instead of text */
};

/*
 * A client's own option: name and its value (argv's, which the parser may
 * keep and modify). 0 when taken, a negative errno when the name is unknown
 * or the value is bad.
 */
typedef int (*sb_bench_opt_fn)(void *arg, const char *name, char *value);

/*
 * Reads argv into o (zeroed first) and through own(arg, ...). Every option
 * but --json and -h takes a value. A bad one prints "<prog>: bad argument
 * NAME VALUE" and usage(). Returns -1 to run, or the status main exits with:
 * 0 after -h/--help (usage printed), 2 after a usage error.
 */
int sb_bench_parse_args(int argc, char **argv, const char *prog, struct sb_bench_opts *o, sb_bench_opt_fn own,
                        void *arg, void (*usage)(void));

/* s as a number within min..max (a double, or a long that fits an int). 0 or -EINVAL. */
int sb_bench_parse_double(const char *s, double min, double max, double *out) __attribute__((warn_unused_result));
int sb_bench_parse_int(const char *s, long min, long max, int *out) __attribute__((warn_unused_result));

/* The whole file (owned, not NUL-terminated) and its length; NULL when it cannot be read or passes
 * SB_BENCH_MAX_BODY. */
char *sb_bench_read_file(const char *path, size_t *len);

/*
 * The request body o names, if any: --body as given, or --body-file read
 * whole (*owned is then the buffer to free; NULL otherwise). *body and *len
 * are left alone when neither is given. 0, or -1 after printing
 * "<prog>: cannot read --body-file F".
 */
int sb_bench_body(const struct sb_bench_opts *o, const char *prog, const char **body, size_t *len, char **owned)
    __attribute__((warn_unused_result));

#endif

/*
 * fuzz_multipart: libFuzzer harness for fe_multipart (POST /v1/files bodies).
 *
 * Input: the first line (up to '\n'; a trailing '\r' is dropped) is the
 * boundary, the rest is the body. Besides "no crash, no leak, no UB" it checks
 * on every successful parse that the parts lie in order inside the body, that
 * no part's data contains the delimiter, and that re-serialising the parts
 * canonically parses back to the same parts. The line is also fed to
 * fe_multipart_boundary() as "multipart/form-data; boundary=<line>".
 *
 * tests/unit/frontend/test_multipart.c includes this file and replays the seed corpus
 * (tests/fuzz/corpus/multipart/) through LLVMFuzzerTestOneInput, so CI runs
 * the same checks without clang.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_multipart.h"
#include "fuzz.h"

#define FUZZ_MULTIPART_MAX_PARTS 32

typedef struct fuzz_buf {
    unsigned char *p;
    size_t n, cap;
} fuzz_buf_t;

static void fuzz_buf_put(fuzz_buf_t *b, const void *s, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        FUZZ_REQUIRE(b->p != NULL);
    }
    if (n)
        memcpy(b->p + b->n, s, n);
    b->n += n;
}

static void fuzz_buf_puts(fuzz_buf_t *b, const char *s)
{
    fuzz_buf_put(b, s, strlen(s));
}

static void fuzz_buf_quoted(fuzz_buf_t *b, const char *s)
{
    fuzz_buf_puts(b, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fuzz_buf_puts(b, "\\");
        fuzz_buf_put(b, s, 1);
    }
    fuzz_buf_puts(b, "\"");
}

static int fuzz_streq_null(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Serialises mp canonically (CRLF, quoted parameters) with the same boundary. */
static void fuzz_multipart_serialise(const fe_multipart_t *mp, const char *boundary, fuzz_buf_t *b)
{
    fuzz_buf_puts(b, "--");
    fuzz_buf_puts(b, boundary);
    for (size_t i = 0; i < mp->n; i++) {
        const fe_multipart_part_t *p = &mp->parts[i];
        fuzz_buf_puts(b, "\r\nContent-Disposition: form-data; name=");
        fuzz_buf_quoted(b, p->name);
        if (p->filename) {
            fuzz_buf_puts(b, "; filename=");
            fuzz_buf_quoted(b, p->filename);
        }
        fuzz_buf_puts(b, "\r\n");
        if (p->content_type) {
            fuzz_buf_puts(b, "Content-Type: ");
            fuzz_buf_puts(b, p->content_type);
            fuzz_buf_puts(b, "\r\n");
        }
        fuzz_buf_puts(b, "\r\n");
        fuzz_buf_put(b, p->data, p->len);
        fuzz_buf_puts(b, "\r\n--");
        fuzz_buf_puts(b, boundary);
    }
    fuzz_buf_puts(b, "--\r\n");
}

/*
 * Parses body with boundary and checks the invariants above; aborts on a
 * violation. Returns what fe_multipart_parse returned.
 */
static int fuzz_multipart_check(const unsigned char *body, size_t len, const char *boundary, size_t max_parts)
{
    fe_multipart_t mp, again;
    char err[160];
    int rc = fe_multipart_parse(body, len, boundary, max_parts, &mp, err, sizeof err);
    if (rc != 0) {
        FUZZ_REQUIRE(rc == -EINVAL);
        FUZZ_REQUIRE(mp.n == 0 && mp.parts == NULL);
        FUZZ_REQUIRE(err[0] != '\0');
        return rc;
    }
    FUZZ_REQUIRE(mp.n >= 1 && mp.n <= max_parts);

    /* A boundary parse accepted must round-trip through the Content-Type extractor. */
    char ct[160], extracted[FE_MULTIPART_BOUNDARY_MAX + 1];
    snprintf(ct, sizeof ct, "Multipart/Form-Data ; Boundary=\"%s\"", boundary);
    FUZZ_REQUIRE(fe_multipart_boundary(ct, extracted, sizeof extracted) == 0);
    FUZZ_REQUIRE(strcmp(extracted, boundary) == 0);

    char needle[4 + FE_MULTIPART_BOUNDARY_MAX + 1];
    snprintf(needle, sizeof needle, "\r\n--%s", boundary);
    size_t prev_end = 0;
    for (size_t i = 0; i < mp.n; i++) {
        const fe_multipart_part_t *p = &mp.parts[i];
        FUZZ_REQUIRE(p->name && p->name[0]);
        FUZZ_REQUIRE(p->data != NULL);
        /* compare offsets, not pointers, to stay within defined behaviour */
        size_t off = (size_t)((uintptr_t)p->data - (uintptr_t)body);
        FUZZ_REQUIRE((uintptr_t)p->data >= (uintptr_t)body && off <= len && p->len <= len - off);
        FUZZ_REQUIRE(off >= prev_end);
        FUZZ_REQUIRE(memmem(p->data, p->len, needle, strlen(needle)) == NULL);
        prev_end = off + p->len;
    }
    FUZZ_REQUIRE(fe_multipart_get(&mp, mp.parts[0].name) == &mp.parts[0]);

    fuzz_buf_t b = {0};
    fuzz_multipart_serialise(&mp, boundary, &b);
    rc = fe_multipart_parse(b.p, b.n, boundary, max_parts, &again, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "re-parse failed: %s\n", err);
    FUZZ_REQUIRE(rc == 0);
    FUZZ_REQUIRE(again.n == mp.n);
    for (size_t i = 0; i < mp.n; i++) {
        const fe_multipart_part_t *x = &mp.parts[i], *y = &again.parts[i];
        FUZZ_REQUIRE(strcmp(x->name, y->name) == 0);
        FUZZ_REQUIRE(fuzz_streq_null(x->filename, y->filename));
        FUZZ_REQUIRE(fuzz_streq_null(x->content_type, y->content_type));
        FUZZ_REQUIRE(x->len == y->len && (x->len == 0 || memcmp(x->data, y->data, x->len) == 0));
    }
    fe_multipart_clear(&again);
    free(b.p);
    fe_multipart_clear(&mp);
    FUZZ_REQUIRE(mp.n == 0 && mp.parts == NULL);
    fe_multipart_clear(&mp); /* idempotent */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    if (!nl)
        return 0;
    size_t line = (size_t)(nl - data), blen = line;
    if (blen && data[blen - 1] == '\r')
        blen--;
    /* Slightly longer than the RFC maximum, so over-long boundaries are exercised too. */
    if (blen > FE_MULTIPART_BOUNDARY_MAX + 8)
        return 0;
    char boundary[FE_MULTIPART_BOUNDARY_MAX + 9];
    memcpy(boundary, data, blen);
    boundary[blen] = '\0';
    fuzz_multipart_check(nl + 1, size - line - 1, boundary, FUZZ_MULTIPART_MAX_PARTS);

    /* The same line as the parameter part of a Content-Type header. */
    char ct[sizeof "multipart/form-data; boundary=" + FE_MULTIPART_BOUNDARY_MAX + 8];
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", boundary);
    char out[FE_MULTIPART_BOUNDARY_MAX + 1];
    if (fe_multipart_boundary(ct, out, sizeof out) == 0) {
        FUZZ_REQUIRE(out[0] != '\0' && strlen(out) <= FE_MULTIPART_BOUNDARY_MAX);
        if (strcmp(out, boundary) != 0)
            fuzz_multipart_check(nl + 1, size - line - 1, out, FUZZ_MULTIPART_MAX_PARTS);
    }
    return 0;
}

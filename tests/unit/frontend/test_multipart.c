/*
 * Unit tests for fe_multipart: boundary extraction, bodies as sent by curl -F
 * and by Node's FormData (undici), binary data that looks like a delimiter,
 * filename*, empty files, every rejection path, truncation at every offset,
 * and a replay of the fuzzing seed corpus through the libFuzzer harness
 * (included below, so its invariant checks run here too).
 *
 * Usage: test_multipart [corpus-dir]; the default corpus directory is found
 * from this file's path.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fe_multipart.h"
#include "sb_test.h"

#include "../fuzz/fuzz_multipart.c"

#define MAXP 16

/* Parses a string body; returns rc and leaves err filled. */
static int parse_str(const char *body, const char *boundary, fe_multipart_t *mp, char *err, size_t errsz)
{
    return fe_multipart_parse((const unsigned char *)body, strlen(body), boundary, MAXP, mp, err, errsz);
}

/* Expects a rejection whose message contains want. */
static void expect_reject(const char *body, const char *boundary, const char *want, int line)
{
    fe_multipart_t mp;
    char err[160] = "unset";
    int rc = parse_str(body, boundary, &mp, err, sizeof err);
    CHECK_INT(rc, -EINVAL);
    CHECK(mp.n == 0 && mp.parts == NULL);
    if (rc != -EINVAL || !strstr(err, want))
        fprintf(stderr, "  (line %d: err=\"%s\", want \"%s\")\n", line, err, want);
    CHECK(strstr(err, want) != NULL);
    fe_multipart_clear(&mp);
}
#define REJECT(body, boundary, want) expect_reject(body, boundary, want, __LINE__)

static int data_is(const fe_multipart_part_t *p, const void *want, size_t n)
{
    return p && p->len == n && (n == 0 || memcmp(p->data, want, n) == 0);
}

static void test_boundary(void)
{
    char b[FE_MULTIPART_BOUNDARY_MAX + 1];
    CHECK_INT(
        fe_multipart_boundary("multipart/form-data; boundary=------------------------78a9f467e5dc7e4d", b, sizeof b),
        0);
    CHECK_STR(b, "------------------------78a9f467e5dc7e4d");
    CHECK_INT(fe_multipart_boundary("multipart/form-data; boundary=----formdata-undici-001630116577", b, sizeof b), 0);
    CHECK_STR(b, "----formdata-undici-001630116577");
    CHECK_INT(fe_multipart_boundary("multipart/form-data; boundary=\"----formdata-undici-001630116577\"", b, sizeof b),
              0);
    CHECK_STR(b, "----formdata-undici-001630116577");
    CHECK_INT(
        fe_multipart_boundary("  MULTIPART/Form-Data ;charset=utf-8;  BOUNDARY = \"a b:c?=d\" ; x=y", b, sizeof b), 0);
    CHECK_STR(b, "a b:c?=d");
    CHECK_INT(fe_multipart_boundary("multipart/form-data; boundary=\"a\\bc\"", b, sizeof b), 0); /* quoted-pair */
    CHECK_STR(b, "abc");
    CHECK_INT(fe_multipart_boundary("multipart/form-data;boundary=x;", b, sizeof b), 0);
    CHECK_STR(b, "x");

    char b70[71], hdr[128];
    memset(b70, 'z', 70);
    b70[70] = '\0';
    snprintf(hdr, sizeof hdr, "multipart/form-data; boundary=%s", b70);
    CHECK_INT(fe_multipart_boundary(hdr, b, sizeof b), 0);
    CHECK_STR(b, b70);
    CHECK_INT(fe_multipart_boundary(hdr, b, 70), -EINVAL); /* no room for the NUL */
    snprintf(hdr, sizeof hdr, "multipart/form-data; boundary=%sz", b70);
    CHECK_INT(fe_multipart_boundary(hdr, b, sizeof b), -EINVAL); /* 71 chars */

    static const char *const bad[] = {
        "application/json",
        "multipart/mixed; boundary=abc",
        "multipart/form-dataX; boundary=abc",
        "multipart/form-data",
        "multipart/form-data; charset=utf-8",
        "multipart/form-data; boundary=",
        "multipart/form-data; boundary=\"\"",
        "multipart/form-data; boundary=\"abc ",
        "multipart/form-data; boundary=\"abc \"", /* may not end in a space */
        "multipart/form-data; boundary=a@b",      /* '@' is not a bchar */
        "multipart/form-data; boundary=abc; boundary=abc",
        "multipart/form-data; boundary=\"abc\"def",
        "multipart/form-data; =abc",
        "multipart/form-data; boundary",
        "multipart/form-data boundary=abc",
        "multipart/form-data; boundary=\"a\tb\"",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = fe_multipart_boundary(bad[i], b, sizeof b);
        if (rc != -EINVAL)
            fprintf(stderr, "  accepted bad Content-Type: %s\n", bad[i]);
        CHECK_INT(rc, -EINVAL);
    }
    CHECK_INT(fe_multipart_boundary(NULL, b, sizeof b), -EINVAL);
    CHECK_INT(fe_multipart_boundary("multipart/form-data; boundary=x", NULL, 0), -EINVAL);
}

/* Exactly what curl 7.88 sent for: curl -F purpose=fine-tune -F file=@data.jsonl */
static const char curl_body[] = "--------------------------78a9f467e5dc7e4d\r\n"
                                "Content-Disposition: form-data; name=\"purpose\"\r\n"
                                "\r\n"
                                "fine-tune\r\n"
                                "--------------------------78a9f467e5dc7e4d\r\n"
                                "Content-Disposition: form-data; name=\"file\"; filename=\"data.jsonl\"\r\n"
                                "Content-Type: application/octet-stream\r\n"
                                "\r\n"
                                "{\"a\":1}\n{\"b\":2}\n\r\n"
                                "--------------------------78a9f467e5dc7e4d--\r\n";

/* Exactly what Node 20's fetch() sent for a FormData with a Blob holding "{\r\n--\0}" named ré"sumé.jsonl. */
static const char node_body[] =
    "------formdata-undici-001630116577\r\n"
    "Content-Disposition: form-data; name=\"purpose\"\r\n"
    "\r\n"
    "assistants\r\n"
    "------formdata-undici-001630116577\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"r\xc3\xa9%22sum\xc3\xa9.jsonl\"\r\n"
    "Content-Type: application/jsonl\r\n"
    "\r\n"
    "{\r\n--\0}\r\n"
    "------formdata-undici-001630116577--\r\n";

static void test_clients(void)
{
    fe_multipart_t mp;
    char err[160], b[FE_MULTIPART_BOUNDARY_MAX + 1];

    CHECK_INT(
        fe_multipart_boundary("multipart/form-data; boundary=------------------------78a9f467e5dc7e4d", b, sizeof b),
        0);
    CHECK_INT(fe_multipart_parse((const unsigned char *)curl_body, sizeof curl_body - 1, b, MAXP, &mp, err, sizeof err),
              0);
    CHECK_INT(mp.n, 2);
    const fe_multipart_part_t *p = fe_multipart_get(&mp, "purpose");
    CHECK(p && !p->filename && !p->content_type && data_is(p, "fine-tune", 9));
    p = fe_multipart_get(&mp, "file");
    CHECK(p != NULL);
    if (p) {
        CHECK_STR(p->filename, "data.jsonl");
        CHECK_STR(p->content_type, "application/octet-stream");
        CHECK(data_is(p, "{\"a\":1}\n{\"b\":2}\n", 16));
    }
    CHECK(fe_multipart_get(&mp, "nope") == NULL);
    CHECK(fe_multipart_get(NULL, "file") == NULL);
    fe_multipart_clear(&mp);
    CHECK(mp.parts == NULL && mp.n == 0);
    fe_multipart_clear(&mp);
    fe_multipart_clear(NULL);

    /* undici, with the boundary quoted in the header (as some proxies rewrite it) */
    CHECK_INT(fe_multipart_boundary("multipart/form-data; boundary=\"----formdata-undici-001630116577\"", b, sizeof b),
              0);
    CHECK_INT(fe_multipart_parse((const unsigned char *)node_body, sizeof node_body - 1, b, MAXP, &mp, err, sizeof err),
              0);
    CHECK_INT(mp.n, 2);
    p = fe_multipart_get(&mp, "purpose");
    CHECK(p && data_is(p, "assistants", 10));
    p = fe_multipart_get(&mp, "file");
    CHECK(p != NULL);
    if (p) {
        CHECK_STR(p->filename, "r\xc3\xa9%22sum\xc3\xa9.jsonl"); /* WHATWG %22 is not decoded */
        CHECK_STR(p->content_type, "application/jsonl");
        CHECK(data_is(p, "{\r\n--\0}", 7));
    }
    fe_multipart_clear(&mp);
}

static void test_binary(void)
{
    /* Everything between the headers and the last CRLF before "--B0undary--" is data,
     * including near-misses of the delimiter. */
    static const char data[] = "\0\r\n--\r\n--B0und\r\n-B0undary\n--B0undary\r--B0undary x--B0undary\r\n\r\n\0\xff";
    static const char head[] = "--B0undary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.bin\"\r\n"
                               "Content-Type: application/octet-stream\r\n\r\n";
    static const char tail[] = "\r\n--B0undary--";
    unsigned char body[512];
    size_t n = 0;
    memcpy(body + n, head, sizeof head - 1), n += sizeof head - 1;
    memcpy(body + n, data, sizeof data - 1), n += sizeof data - 1;
    memcpy(body + n, tail, sizeof tail - 1), n += sizeof tail - 1;
    fe_multipart_t mp;
    char err[160];
    CHECK_INT(fe_multipart_parse(body, n, "B0undary", MAXP, &mp, err, sizeof err), 0);
    CHECK_INT(mp.n, 1);
    if (mp.n == 1) {
        CHECK(data_is(&mp.parts[0], data, sizeof data - 1));
        CHECK(mp.parts[0].data == body + sizeof head - 1); /* borrowed, not copied */
    }
    fe_multipart_clear(&mp);
    CHECK_INT(fuzz_multipart_check(body, n, "B0undary", MAXP), 0);

    /* A line that starts with the full delimiter but continues is malformed, not data. */
    REJECT("--B\r\nContent-Disposition: form-data; name=a\r\n\r\nx\r\n--BB\r\n--B--", "B", "malformed boundary line");
}

static void test_filenames(void)
{
    fe_multipart_t mp;
    char err[160];
    CHECK_INT(parse_str("--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"fallback.txt\"; "
                        "filename*=UTF-8''r%C3%A9sum%c3%a9%20%E2%82%AC.jsonl\r\n\r\n{}\r\n--XyZ--",
                        "XyZ", &mp, err, sizeof err),
              0);
    CHECK(mp.n == 1 && mp.parts[0].filename);
    if (mp.n == 1)
        CHECK_STR(mp.parts[0].filename, "r\xc3\xa9sum\xc3\xa9 \xe2\x82\xac.jsonl");
    fe_multipart_clear(&mp);

    /* filename* alone, with a language tag; the order of parameters does not matter */
    CHECK_INT(parse_str("--XyZ\r\ncontent-disposition: FORM-DATA; FILENAME*=utf-8'en-GB'a%2Fb.txt; NAME=file\r\n\r\n"
                        "\r\n--XyZ--",
                        "XyZ", &mp, err, sizeof err),
              0);
    if (mp.n == 1) {
        CHECK_STR(mp.parts[0].name, "file");
        CHECK_STR(mp.parts[0].filename, "a/b.txt"); /* returned as sent: never a path */
    }
    fe_multipart_clear(&mp);

    /* quoted-pair escapes, empty filename (a browser's "no file chosen") */
    CHECK_INT(
        parse_str("--XyZ\r\nContent-Disposition: form-data; name=\"a\\\"b\\\\c\"; filename=\"\"\r\n\r\nv\r\n--XyZ--",
                  "XyZ", &mp, err, sizeof err),
        0);
    if (mp.n == 1) {
        CHECK_STR(mp.parts[0].name, "a\"b\\c");
        CHECK_STR(mp.parts[0].filename, "");
    }
    fe_multipart_clear(&mp);

    REJECT("--X\r\nContent-Disposition: form-data; name=f; filename*=ISO-8859-1''caf%E9\r\n\r\nv\r\n--X--", "X",
           "invalid filename*");
    REJECT("--X\r\nContent-Disposition: form-data; name=f; filename*=UTF-8''a%00b\r\n\r\nv\r\n--X--", "X",
           "invalid filename*");
    REJECT("--X\r\nContent-Disposition: form-data; name=f; filename*=UTF-8''a%C3%28\r\n\r\nv\r\n--X--", "X",
           "invalid filename*");
    REJECT("--X\r\nContent-Disposition: form-data; name=f; filename*=UTF-8''a%4\r\n\r\nv\r\n--X--", "X",
           "invalid filename*");
    REJECT("--X\r\nContent-Disposition: form-data; name=f; filename*=UTF-8''a\"b\r\n\r\nv\r\n--X--", "X",
           "malformed Content-Disposition");
    REJECT("--X\r\nContent-Disposition: form-data; name=f; filename*=UTF-8'a b\r\n\r\nv\r\n--X--", "X",
           "invalid filename*");
    REJECT("--X\r\nContent-Disposition: form-data; name=f; filename*=UTF8''ab\r\n\r\nv\r\n--X--", "X",
           "invalid filename*");
    REJECT("--X\r\nContent-Disposition: form-data; name=f; filename=\"\xc3\x28\"\r\n\r\nv\r\n--X--", "X",
           "not valid UTF-8");
    REJECT("--X\r\nContent-Disposition: form-data; name=f; filename=a; filename=b\r\n\r\nv\r\n--X--", "X",
           "duplicate filename");
    REJECT("--X\r\nContent-Disposition: form-data; name=\"unterminated\r\n\r\nv\r\n--X--", "X",
           "malformed Content-Disposition");
}

static void test_shapes(void)
{
    fe_multipart_t mp;
    char err[160];

    /* empty file */
    CHECK_INT(parse_str("--X\r\nContent-Disposition: form-data; name=\"file\"; filename=\"empty.txt\"\r\n"
                        "Content-Type: text/plain\r\n\r\n\r\n--X--\r\n",
                        "X", &mp, err, sizeof err),
              0);
    CHECK(mp.n == 1 && mp.parts[0].len == 0 && mp.parts[0].data != NULL);
    fe_multipart_clear(&mp);

    /* RFC 2046 "headers [CRLF body]": a part with no body shares its CRLF with the delimiter */
    CHECK_INT(parse_str("--X\r\nContent-Disposition: form-data; name=a\r\n\r\n--X\r\n"
                        "Content-Disposition: form-data; name=b\r\n\r\nbb\r\n--X--",
                        "X", &mp, err, sizeof err),
              0);
    CHECK_INT(mp.n, 2);
    if (mp.n == 2) {
        CHECK(mp.parts[0].len == 0);
        CHECK(data_is(&mp.parts[1], "bb", 2));
    }
    fe_multipart_clear(&mp);

    /* preamble (with a near-miss), transport padding, bare-LF headers, epilogue; ignored headers */
    CHECK_INT(parse_str("this is --X preamble\r\n--X \t\n"
                        "Content-Disposition: form-data; name=a\n"
                        "X-Whatever: 1\n"
                        "Content-Transfer-Encoding: Binary\n\n"
                        "l1\nl2\n--X\r\n--X--  trailing garbage\r\n--X\r\nmore",
                        "X", &mp, err, sizeof err),
              0);
    CHECK_INT(mp.n, 1);
    if (mp.n == 1)
        CHECK(data_is(&mp.parts[0], "l1\nl2\n--X", 9)); /* "\n--X" without CR is data */
    fe_multipart_clear(&mp);

    /* duplicate names are allowed; get() returns the first */
    CHECK_INT(parse_str("--X\r\nContent-Disposition: form-data; name=f\r\n\r\n1\r\n--X\r\n"
                        "Content-Disposition: form-data; name=f\r\n\r\n2\r\n--X--",
                        "X", &mp, err, sizeof err),
              0);
    CHECK(mp.n == 2 && fe_multipart_get(&mp, "f") == &mp.parts[0]);
    fe_multipart_clear(&mp);

    /* a NULL err buffer is fine */
    CHECK_INT(parse_str("garbage", "X", &mp, NULL, 0), -EINVAL);
    CHECK_INT(parse_str("garbage", "X", &mp, err, 1), -EINVAL);
    CHECK(err[0] == '\0');
}

static void test_rejections(void)
{
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\n\r\nno end\r\n--X", "X", "missing closing boundary");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\n\r\nno end\r\n--X\r", "X", "missing closing boundary");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\n\r\nno end\r\n--X-", "X", "missing closing boundary");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\n\r\nno end\r\n", "X", "missing closing boundary");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\n\r\nno end\n--X--", "X", "missing closing boundary");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\n", "X", "truncated headers");
    /* found by the fuzzer: after a bare-LF blank line "--X" is neither a delimiter nor data */
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\n\n--X\r\nContent-Disposition: form-data; name=b\r\n"
           "\r\nx\r\n--X--",
           "X", "data starts with the boundary");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\n\r\n\r\n--X \r\n", "X", "truncated headers");
    REJECT("", "X", "not found");
    REJECT("\x01\x02garbage\xff", "X", "not found");
    REJECT("--X--\r\n", "X", "no parts");
    REJECT("--Xy\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--X--", "X", "malformed boundary line");
    REJECT("--X\r\nContent-Disposition form-data; name=a\r\n\r\nv\r\n--X--", "X", "header line without ':'");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\nbogus\r\n\r\nv\r\n--X--", "X", "without ':'");
    REJECT("--X\r\nContent Disposition: form-data; name=a\r\n\r\nv\r\n--X--", "X", "invalid header name");
    REJECT("--X\r\n: form-data; name=a\r\n\r\nv\r\n--X--", "X", "invalid header name");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\nContent-Type: text/plain;\r\n "
           "charset=utf-8\r\n\r\nv\r\n--X--",
           "X", "folded header");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\rb\r\n\r\nv\r\n--X--", "X", "control character");
    REJECT("--X\r\nContent-Type: text/plain\r\n\r\nv\r\n--X--", "X", "missing Content-Disposition");
    REJECT("--X\r\n\r\nv\r\n--X--", "X", "missing Content-Disposition");
    REJECT("--X\r\nContent-Disposition: attachment; name=a\r\n\r\nv\r\n--X--", "X", "not form-data");
    REJECT("--X\r\nContent-Disposition: form-datum; name=a\r\n\r\nv\r\n--X--", "X", "not form-data");
    REJECT("--X\r\nContent-Disposition: form-data; filename=a\r\n\r\nv\r\n--X--", "X", "without a name");
    REJECT("--X\r\nContent-Disposition: form-data; name=\"\"\r\n\r\nv\r\n--X--", "X", "invalid part name");
    REJECT("--X\r\nContent-Disposition: form-data; name=a; name=b\r\n\r\nv\r\n--X--", "X", "duplicate name");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\nContent-Disposition: form-data; name=a\r\n\r\nv\r\n--X--",
           "X", "duplicate Content-Disposition");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\nContent-Type: a/b\r\nContent-Type: a/b\r\n\r\nv\r\n--X--",
           "X", "duplicate Content-Type");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\nContent-Type:  \r\n\r\nv\r\n--X--", "X",
           "invalid Content-Type");
    REJECT("--X\r\nContent-Disposition: form-data; name=a\r\nContent-Transfer-Encoding: base64\r\n\r\nv\r\n--X--", "X",
           "Content-Transfer-Encoding");
    REJECT("--X\r\nContent-Disposition: form-data; name=a b\r\n\r\nv\r\n--X--", "X", "malformed Content-Disposition");

    /* invalid boundaries given to parse */
    char b71[72];
    memset(b71, 'b', 71);
    b71[71] = '\0';
    REJECT("--X\r\n", b71, "invalid multipart boundary");
    REJECT("--X\r\n", "", "invalid multipart boundary");
    REJECT("--X\r\n", "a\r\nb", "invalid multipart boundary");
    fe_multipart_t mp;
    char err[64];
    CHECK_INT(fe_multipart_parse((const unsigned char *)"x", 1, NULL, MAXP, &mp, err, sizeof err), -EINVAL);
    CHECK(mp.n == 0 && mp.parts == NULL);
}

static void test_limits(void)
{
    fe_multipart_t mp;
    char err[160];
    const char *three = "--X\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n"
                        "--X\r\nContent-Disposition: form-data; name=b\r\n\r\n2\r\n"
                        "--X\r\nContent-Disposition: form-data; name=c\r\n\r\n3\r\n--X--";
    CHECK_INT(fe_multipart_parse((const unsigned char *)three, strlen(three), "X", 3, &mp, err, sizeof err), 0);
    CHECK_INT(mp.n, 3);
    fe_multipart_clear(&mp);
    CHECK_INT(fe_multipart_parse((const unsigned char *)three, strlen(three), "X", 2, &mp, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "too many parts") != NULL);
    CHECK(mp.n == 0 && mp.parts == NULL);
    CHECK_INT(fe_multipart_parse((const unsigned char *)three, strlen(three), "X", 0, &mp, err, sizeof err), -EINVAL);

    /* header block: exactly FE_MULTIPART_HEADER_MAX bytes is fine, one more is not */
    static const char cd[] = "Content-Disposition: form-data; name=a\r\n";
    static const char pad[] = "X-Pad: ";
    char *body = malloc(FE_MULTIPART_HEADER_MAX + 64);
    for (int extra = 0; extra <= 1; extra++) {
        size_t filler = FE_MULTIPART_HEADER_MAX - (sizeof cd - 1) - (sizeof pad - 1) - 2 - 2 + (size_t)extra;
        size_t n = 0;
        memcpy(body, "--X\r\n", 5), n = 5;
        memcpy(body + n, cd, sizeof cd - 1), n += sizeof cd - 1;
        memcpy(body + n, pad, sizeof pad - 1), n += sizeof pad - 1;
        memset(body + n, 'p', filler), n += filler;
        memcpy(body + n, "\r\n\r\nv\r\n--X--", 13), n += 13;
        int rc = fe_multipart_parse((unsigned char *)body, n, "X", MAXP, &mp, err, sizeof err);
        CHECK_INT(rc, extra ? -EINVAL : 0);
        if (extra)
            CHECK(strstr(err, "headers larger than") != NULL);
        fe_multipart_clear(&mp);
    }
    free(body);

    /* many parts, and a big pathological body: both must stay linear */
    size_t nparts = 5000, cap = nparts * 64 + 16, n = 0;
    body = malloc(cap);
    for (size_t i = 0; i < nparts; i++)
        n += (size_t)snprintf(body + n, cap - n, "--X\r\nContent-Disposition: form-data; name=p%zu\r\n\r\nv\r\n", i);
    n += (size_t)snprintf(body + n, cap - n, "--X--");
    CHECK_INT(fe_multipart_parse((unsigned char *)body, n, "X", nparts, &mp, err, sizeof err), 0);
    CHECK_INT(mp.n, nparts);
    fe_multipart_clear(&mp);
    free(body);

    const char *bnd = "----formdata-undici-001630116577";
    static const char h[] = "------formdata-undici-001630116577\r\nContent-Disposition: form-data; name=f\r\n\r\n";
    size_t big = 32u << 20;
    body = malloc(big);
    memcpy(body, h, sizeof h - 1);
    /* data made of delimiter near-misses: "\r\n------formdata-undici-00163011657" over and over */
    static const char miss[] = "\r\n------formdata-undici-00163011657";
    size_t at = sizeof h - 1, end = big - 64;
    while (at + sizeof miss - 1 <= end) {
        memcpy(body + at, miss, sizeof miss - 1);
        at += sizeof miss - 1;
    }
    n = at + (size_t)snprintf(body + at, big - at, "\r\n--%s--", bnd);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_INT(fe_multipart_parse((unsigned char *)body, n, bnd, MAXP, &mp, err, sizeof err), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(mp.n == 1 && mp.parts[0].len == at - (sizeof h - 1));
    fe_multipart_clear(&mp);
    printf("multipart: %zu MiB of delimiter near-misses parsed in %.1f ms\n", n >> 20,
           (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    free(body);
}

/* Every prefix of a valid body either fails cleanly or parses; the full body parses. */
static void test_truncation(const char *body, size_t len, const char *boundary, size_t min_ok)
{
    int ok = 1;
    size_t first_ok = len + 1;
    for (size_t cut = 0; cut <= len; cut++) {
        /* a fresh heap copy of exactly cut bytes, so ASan sees any overread */
        unsigned char *copy = malloc(cut ? cut : 1);
        memcpy(copy, body, cut);
        int rc = fuzz_multipart_check(copy, cut, boundary, MAXP);
        if (rc == 0 && first_ok > len)
            first_ok = cut;
        if (rc != 0 && rc != -EINVAL)
            ok = 0;
        if (cut == len && rc != 0)
            ok = 0;
        free(copy);
    }
    CHECK(ok);
    /* nothing parses before the closing delimiter is complete */
    CHECK_INT(first_ok, min_ok);
}

static void test_corpus(const char *dir)
{
    DIR *d = opendir(dir);
    CHECK(d != NULL);
    if (!d) {
        fprintf(stderr, "  cannot open corpus %s\n", dir);
        return;
    }
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[4096 + 260]; /* dir (< 4096) + / + d_name (< 256) */
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        CHECK(f != NULL);
        if (!f)
            continue;
        unsigned char *buf = malloc(1 << 20);
        size_t n = fread(buf, 1, 1 << 20, f);
        fclose(f);
        unsigned char *exact = malloc(n ? n : 1); /* exact size, so ASan sees any overread */
        memcpy(exact, buf, n);
        free(buf);
        CHECK_INT(LLVMFuzzerTestOneInput(exact, n), 0);
        free(exact);
        files++;
    }
    closedir(d);
    CHECK(files >= 5);
    printf("multipart: replayed %d corpus files from %s\n", files, dir);
}

int main(int argc, char **argv)
{
    test_boundary();
    test_clients();
    test_binary();
    test_filenames();
    test_shapes();
    test_rejections();
    test_limits();

    size_t curl_len = sizeof curl_body - 1, node_len = sizeof node_body - 1;
    test_truncation(curl_body, curl_len, "------------------------78a9f467e5dc7e4d", curl_len - 2);
    test_truncation(node_body, node_len, "----formdata-undici-001630116577", node_len - 2);

    char dir[4096];
    if (argc > 1) {
        snprintf(dir, sizeof dir, "%s", argv[1]);
    } else {
        /* __FILE__ is .../tests/unit/frontend/test_multipart.c under CMake */
        static const char self[] = "tests/unit/frontend/test_multipart.c";
        const char *file = __FILE__;
        size_t fl = strlen(file), sl = sizeof self - 1;
        int root = fl >= sl && strcmp(&file[fl - sl], self) == 0;
        snprintf(dir, sizeof dir, "%.*stests/fuzz/corpus/multipart", root ? (int)(fl - sl) : 0, file);
    }
    test_corpus(dir);
    return sb_test_finish("multipart");
}

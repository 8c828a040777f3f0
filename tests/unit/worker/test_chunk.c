/*
 * test_chunk: static chunking (wtool_chunk.c): the chunking_strategy read
 * with OpenAI's defaults and bounds; chunks at most max bytes (4 a token),
 * never splitting a character, ending at the best break (paragraph, line,
 * sentence, space), starting on a word, overlapping the previous chunk by
 * about the overlap, covering every word of the text, and always moving
 * forward.
 */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_buf.h"
#include "sb_test.h"
#include "sb_utf8.h"
#include "wtool_chunk.h"

static int params(const char *json, int *max, int *overlap)
{
    json_t *s = json ? json_loads(json, 0, NULL) : NULL;
    char why[256] = "";
    int rc = sb_chunk_params(s, max, overlap, why, sizeof why);
    if (rc < 0)
        CHECK(why[0] != '\0');
    json_decref(s);
    return rc;
}

static void test_params(void)
{
    int max = 0, overlap = 0;
    CHECK_INT(params(NULL, &max, &overlap), 0);
    CHECK_INT(max, 800);
    CHECK_INT(overlap, 400);
    CHECK_INT(params("{\"type\":\"auto\"}", &max, &overlap), 0);
    CHECK_INT(max, 800);
    CHECK_INT(params("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":100,\"chunk_overlap_tokens\":50}}",
                     &max, &overlap),
              0);
    CHECK_INT(max, 100);
    CHECK_INT(overlap, 50);
    CHECK_INT(params("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":4096,\"chunk_overlap_tokens\":0}}",
                     &max, &overlap),
              0);
    CHECK_INT(max, 4096);
    CHECK_INT(overlap, 0);
    /* No overlap given: 400, cut to half a small size. */
    CHECK_INT(params("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":300}}", &max, &overlap), 0);
    CHECK_INT(max, 300);
    CHECK_INT(overlap, 150);
    CHECK_INT(params("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":2000.0}}", &max, &overlap), 0);
    CHECK_INT(max, 2000);
    CHECK_INT(overlap, 400);

    CHECK_INT(params("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":99}}", &max, &overlap), -EINVAL);
    CHECK_INT(params("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":4097}}", &max, &overlap), -EINVAL);
    CHECK_INT(params("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":1000,\"chunk_overlap_tokens\":501}}",
                     &max, &overlap),
              -EINVAL);
    CHECK_INT(params("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":\"800\"}}", &max, &overlap), -EINVAL);
    CHECK_INT(params("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":800.5}}", &max, &overlap), -EINVAL);
    CHECK_INT(params("{\"type\":\"static\",\"static\":{\"chunk_overlap_tokens\":-1}}", &max, &overlap), -EINVAL);
    CHECK_INT(params("{\"type\":\"static\"}", &max, &overlap), -EINVAL);
    CHECK_INT(params("{\"type\":\"semantic\"}", &max, &overlap), -EINVAL);
    CHECK_INT(params("[]", &max, &overlap), -EINVAL);

    CHECK_INT(sb_chunk_tokens(0), 0);
    CHECK_INT(sb_chunk_tokens(8), 2);
    CHECK_INT(sb_chunk_tokens(9), 3);
}

static bool space(char c)
{
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* The invariants every chunking keeps, for text and its chunks. */
static void check_chunks(const char *text, const sb_chunk_t *c, size_t n, int max_tokens)
{
    size_t len = strlen(text), max = (size_t)max_tokens * SB_CHUNK_BYTES_PER_TOKEN;
    for (size_t i = 0; i < n; i++) {
        CHECK(c[i].len > 0 && c[i].len <= max);
        CHECK(c[i].off + c[i].len <= len);
        CHECK(!space(text[c[i].off]) && !space(text[c[i].off + c[i].len - 1]));
        /* Whole characters: no chunk starts on a continuation byte, and the next byte does not continue one. */
        CHECK(((unsigned char)text[c[i].off] & 0xC0) != 0x80);
        CHECK(((unsigned char)text[c[i].off + c[i].len] & 0xC0) != 0x80);
        char *copy = strndup(text + c[i].off, c[i].len);
        CHECK(sb_utf8_fix(copy) == 0);
        free(copy);
        if (i > 0) {
            CHECK(c[i].off > c[i - 1].off); /* always forward */
            CHECK(c[i].off <= c[i - 1].off + c[i - 1].len + 8);
        }
    }
    /* Every non-space byte is in some chunk. */
    size_t covered = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i].off > covered)
            for (size_t k = covered; k < c[i].off; k++)
                CHECK(space(text[k]));
        if (c[i].off + c[i].len > covered)
            covered = c[i].off + c[i].len;
    }
    for (size_t k = covered; k < len; k++)
        CHECK(space(text[k]));
}

static void test_short_and_empty(void)
{
    sb_chunk_t *c;
    size_t n;
    sb_chunk_split("  hello world \n", 15, 800, 400, &c, &n);
    CHECK_INT(n, 1);
    CHECK_INT(c[0].off, 2);
    CHECK_INT(c[0].len, 11);
    free(c);
    sb_chunk_split(" \n\t ", 4, 800, 400, &c, &n);
    CHECK_INT(n, 0);
    CHECK(c == NULL);
    sb_chunk_split("", 0, 800, 400, &c, &n);
    CHECK_INT(n, 0);
}

/* Words of 5 letters and a space: "w0000 w0001 ...". */
static char *words(size_t count)
{
    sb_buf_t b = {0};
    char w[16];
    for (size_t i = 0; i < count; i++) {
        int k = snprintf(w, sizeof w, "%sw%04zu", i ? " " : "", i % 10000);
        sb_buf_add(&b, w, (size_t)k);
    }
    return b.p;
}

static void test_words_and_overlap(void)
{
    /* 2000 words, 12000 bytes; 100 tokens = 400 bytes a chunk, 50 tokens = 200 bytes of overlap. */
    char *t = words(2000);
    sb_chunk_t *c;
    size_t n;
    sb_chunk_split(t, strlen(t), 100, 50, &c, &n);
    check_chunks(t, c, n, 100);
    /* About 12000 / (400 - 200) chunks. */
    CHECK(n >= 55 && n <= 70);
    for (size_t i = 0; i + 1 < n; i++) {
        /* Each starts on a word, about 200 bytes before the previous one ended. */
        CHECK(c[i + 1].off == 0 || t[c[i + 1].off - 1] == ' ');
        size_t prev_end = c[i].off + c[i].len;
        CHECK(prev_end > c[i + 1].off);
        CHECK(prev_end - c[i + 1].off >= 190 && prev_end - c[i + 1].off <= 206);
        /* Ends on a word: the next byte is a space. */
        CHECK(t[c[i].off + c[i].len] == ' ');
    }
    free(c);
    /* No overlap: the chunks tile the text. */
    sb_chunk_split(t, strlen(t), 100, 0, &c, &n);
    check_chunks(t, c, n, 100);
    for (size_t i = 0; i + 1 < n; i++)
        CHECK_INT(c[i + 1].off, c[i].off + c[i].len + 1);
    CHECK(n >= 30 && n <= 32);
    free(c);
    free(t);
}

static void test_breaks(void)
{
    /* 300 bytes of words, a paragraph break, more words: at 100 tokens (400 bytes) the first chunk ends at the
     * paragraph, not at the last space before 400. */
    sb_buf_t b = {0};
    char *w = words(50); /* 299 bytes */
    sb_buf_add(&b, w, strlen(w));
    sb_buf_add(&b, ".\n\n", 3);
    sb_buf_add(&b, w, strlen(w));
    sb_chunk_t *c;
    size_t n;
    sb_chunk_split(b.p, b.len, 100, 0, &c, &n);
    CHECK_INT(n, 2);
    CHECK_INT(c[0].len, strlen(w) + 1); /* the words and the full stop */
    CHECK_INT(c[1].off, strlen(w) + 3);
    free(c);
    /* A line break beats a sentence end, a sentence end beats a space. */
    b.len = 0;
    sb_buf_add(&b, w, 250);
    sb_buf_add(&b, "\n", 1);
    sb_buf_add(&b, w, 60);
    sb_buf_add(&b, ". ", 2);
    sb_buf_add(&b, w, 200);
    sb_chunk_split(b.p, b.len, 100, 0, &c, &n);
    CHECK(n >= 2);
    CHECK_INT(c[0].len, 250);
    free(c);
    b.len = 0;
    sb_buf_add(&b, w, 250);
    sb_buf_add(&b, ". ", 2);
    sb_buf_add(&b, w, 200);
    sb_chunk_split(b.p, b.len, 100, 0, &c, &n);
    CHECK(n >= 2);
    CHECK_INT(c[0].len, 251);
    free(c);
    /* A break before half the window is not taken: the chunk is filled instead. */
    b.len = 0;
    sb_buf_add(&b, "Intro.\n\n", 8);
    sb_buf_add(&b, w, 299);
    sb_buf_add(&b, w, 299);
    sb_chunk_split(b.p, b.len, 100, 0, &c, &n);
    CHECK(n >= 2 && c[0].len > 350);
    check_chunks(b.p, c, n, 100);
    free(c);
    sb_buf_free(&b);
    free(w);
}

static void test_utf8_without_spaces(void)
{
    /* 3-byte characters and no whitespace at all: cut between characters. */
    sb_buf_t b = {0};
    for (int i = 0; i < 1000; i++)
        sb_buf_add(&b, i % 2 ? "\xe6\x96\x87" : "\xe5\xad\x97", 3); /* 文字 */
    sb_chunk_t *c;
    size_t n;
    sb_chunk_split(b.p, b.len, 100, 50, &c, &n);
    check_chunks(b.p, c, n, 100);
    CHECK(n >= 14 && n <= 17);
    for (size_t i = 0; i < n; i++)
        CHECK(c[i].off % 3 == 0 && c[i].len % 3 == 0);
    free(c);
    /* 4-byte characters at the smallest size: still whole. */
    b.len = 0;
    for (int i = 0; i < 500; i++)
        sb_buf_add(&b, "\xf0\x9f\x98\x80", 4);
    sb_chunk_split(b.p, b.len, 1, 0, &c, &n);
    check_chunks(b.p, c, n, 1);
    CHECK_INT(n, 500);
    free(c);
    sb_buf_free(&b);
}

static void test_out_of_range_arguments(void)
{
    /* Overlap at or past the size is treated as none; the text is still consumed. */
    char *t = words(300);
    sb_chunk_t *c;
    size_t n;
    sb_chunk_split(t, strlen(t), 10, 10, &c, &n);
    check_chunks(t, c, n, 10);
    CHECK(n > 0);
    free(c);
    sb_chunk_split(t, strlen(t), 10, 9, &c, &n);
    check_chunks(t, c, n, 10);
    free(c);
    sb_chunk_split(t, strlen(t), 0, -3, &c, &n);
    check_chunks(t, c, n, 1);
    free(c);
    free(t);
}

int main(void)
{
    test_params();
    test_short_and_empty();
    test_words_and_overlap();
    test_breaks();
    test_utf8_without_spaces();
    test_out_of_range_arguments();
    return sb_test_finish("test_chunk");
}

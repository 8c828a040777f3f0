/*
 * fuzz_extract: libFuzzer harness for file search's text readers
 * (wtool_extract.c: plain text and HTML, an uploaded file's bytes) and the
 * chunker that cuts what they return (wtool_chunk.c).
 *
 * Input: one byte of settings, then the file. Bits 0-2 pick the MIME type
 * the upload declared (text/plain, text/markdown, text/csv,
 * application/json, text/html, text/html with charset ISO-8859-1, HTML
 * with charset UTF-16LE, none with a ".htm" name); bits 3-7 the chunk
 * size (1 to 32 tokens, overlap a third of it). Checked besides "no crash,
 * no leak, no UB": 0 with a text that is valid UTF-8, holds a non-space
 * and fits SB_EXTRACT_TEXT_MAX, or -EINVAL with no text and a reason; the
 * chunks are non-empty spans of the text, at most the size, without
 * leading or trailing spaces, on character boundaries, always moving
 * forward and covering every non-space byte.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_utf8.h"
#include "wtool_chunk.h"
#include "wtool_extract.h"

static int space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const char *const mimes[] = {"text/plain",
                                        "text/markdown",
                                        "text/csv",
                                        "application/json",
                                        "text/html",
                                        "text/html; charset=ISO-8859-1",
                                        "text/html; charset=UTF-16LE",
                                        NULL};
    const char *mime = mimes[data[0] & 7];
    int max = 1 + (data[0] >> 3), overlap = max / 3;
    char *text = NULL, why[256] = "";
    int rc =
        sb_extract_text(mime, mime ? "upload" : "page.htm", (const char *)data + 1, size - 1, &text, why, sizeof why);
    FUZZ_REQUIRE(rc == 0 || rc == -EINVAL);
    if (rc < 0) {
        FUZZ_REQUIRE(text == NULL && why[0]);
        return 0;
    }
    size_t len = strlen(text);
    FUZZ_REQUIRE(len > 0 && len <= SB_EXTRACT_TEXT_MAX);
    FUZZ_REQUIRE(sb_utf8_fix(text) == 0);
    sb_chunk_t *c = NULL;
    size_t n = 0;
    sb_chunk_split(text, len, max, overlap, &c, &n);
    FUZZ_REQUIRE(n > 0);
    size_t covered = 0;
    for (size_t i = 0; i < n; i++) {
        FUZZ_REQUIRE(c[i].len > 0 && c[i].len <= (size_t)max * SB_CHUNK_BYTES_PER_TOKEN);
        FUZZ_REQUIRE(c[i].off + c[i].len <= len);
        FUZZ_REQUIRE(!space(text[c[i].off]) && !space(text[c[i].off + c[i].len - 1]));
        FUZZ_REQUIRE(((unsigned char)text[c[i].off] & 0xC0) != 0x80);
        FUZZ_REQUIRE(((unsigned char)text[c[i].off + c[i].len] & 0xC0) != 0x80);
        FUZZ_REQUIRE(i == 0 || c[i].off > c[i - 1].off);
        for (size_t k = covered; k < c[i].off; k++)
            FUZZ_REQUIRE(space(text[k]));
        if (c[i].off + c[i].len > covered)
            covered = c[i].off + c[i].len;
    }
    for (size_t k = covered; k < len; k++)
        FUZZ_REQUIRE(space(text[k]));
    free(c);
    free(text);
    return 0;
}

/*
 * fuzz_regex: libFuzzer harness for sb_regex, which compiles ECMA-262
 * patterns from client JSON schemas ("pattern") into POSIX EREs and runs them
 * on model output or request values.
 *
 * Input: the pattern up to the first '\n', then the subject. The pattern is
 * used only when it is valid UTF-8 without NUL (what a JSON string gives
 * after the callers' NUL check); the subject is cut to its longest valid
 * UTF-8 prefix (sb_regex_search's contract). Checked besides "no crash, no
 * leak, no UB": a refused pattern comes with a message; a compiled one
 * answers 0 or 1 on the subject, on the empty string, and on the subject
 * repeated to 4 KiB; and run-all's -timeout catches a pattern/subject pair
 * slow enough to stall a worker (the header promises well under 100 ms for
 * 100 KB).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_alloc.h"
#include "sb_regex.h"

/* Length of the longest prefix of s[0..n) that is valid UTF-8 (RFC 3629:
 * no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t fuzz_utf8_prefix(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        size_t k;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            k = 1, cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2, cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3, cp = c & 0x07;
        } else {
            break;
        }
        if (n - i <= k) /* the sequence is cut short */
            break;
        bool ok = true;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                ok = false;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if (!ok || (k == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (k == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            break;
        i += k + 1;
    }
    return i;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nl = memchr(data, '\n', size);
    size_t plen = nl ? (size_t)(nl - data) : size;
    if (memchr(data, '\0', plen) || fuzz_utf8_prefix(data, plen) != plen)
        return 0;
    char *pattern = sb_xstrndup((const char *)data, plen);
    const uint8_t *rest = nl ? nl + 1 : data + size;
    size_t slen = fuzz_utf8_prefix(rest, (size_t)(data + size - rest));
    /* A NUL after the subject, as every caller's (jansson) string has:
     * regexec with REG_STARTEND reads only [0, len), but the sanitizers'
     * regexec interceptor checks strlen(subject) + 1 bytes regardless. */
    char *subject = sb_xstrndup((const char *)rest, slen);

    char err[256] = "";
    sb_regex_t *re = sb_regex_compile(pattern, err, sizeof err);
    if (!re) {
        FUZZ_REQUIRE(err[0] != '\0');
    } else {
        int rc = sb_regex_search(re, subject, slen);
        FUZZ_REQUIRE(rc == 0 || rc == 1);
        rc = sb_regex_search(re, "", 0);
        FUZZ_REQUIRE(rc == 0 || rc == 1);
        if (slen > 0) {
            size_t times = 4096 / slen + 1, n = times * slen;
            char *big = sb_xmalloc(n + 1);
            for (size_t i = 0; i < times; i++)
                memcpy(big + i * slen, subject, slen);
            big[n] = '\0';
            rc = sb_regex_search(re, big, n);
            FUZZ_REQUIRE(rc == 0 || rc == 1);
            free(big);
        }
        sb_regex_destroy(&re);
        FUZZ_REQUIRE(re == NULL);
    }
    free(subject);
    free(pattern);
    return 0;
}

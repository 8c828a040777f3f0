/*
 * fuzz_scrub: libFuzzer harness for sb_scrub, which takes the operator's
 * credentials out of upstream error text (any upstream, or anything between
 * it and the worker, writes those bytes) before a reply, a log or a row.
 *
 * Input: the first line is a secret (used when SB_SCRUB_MIN_SECRET bytes or
 * more), the rest the upstream's text. Checked besides "no crash, no UB, no
 * leak":
 *   - the secret never survives: not in the output, whatever surrounds it
 *     (also when the text is the secret glued to itself or cut short);
 *   - a provider-key shape planted in the text (after "key=") never survives;
 *   - scrubbing is idempotent (scrubbing the output changes nothing), and
 *     sb_scrub_found agrees with whether the text changed;
 *   - the output is never longer than the text plus one marker per byte
 *     (markers replace at least one byte each, runs are merged).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_scrub.h"

static size_t fuzz_count(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    /* Text is NUL-terminated: cut at the first NUL, as a C string would be. */
    char *in = malloc(size + 1);
    memcpy(in, data, size);
    in[size] = '\0';
    char *nl = strchr(in, '\n');
    const char *secret = NULL;
    const char *text = in;
    if (nl) {
        *nl = '\0';
        secret = in;
        text = nl + 1;
    }
    sb_scrub_t *s = sb_scrub_new();
    bool have = secret && strlen(secret) >= SB_SCRUB_MIN_SECRET && sb_scrub_add(s, secret);

    char *out = sb_scrub_text(s, text, NULL);
    FUZZ_REQUIRE(out);
    FUZZ_REQUIRE(strlen(out) <= strlen(text) * (sizeof SB_SCRUB_MARKER) + sizeof SB_SCRUB_MARKER);
    if (have)
        FUZZ_REQUIRE(strstr(out, secret) == NULL);
    FUZZ_REQUIRE(sb_scrub_found(s, text, NULL) == (strcmp(out, text) != 0));
    char *again = sb_scrub_text(s, out, NULL);
    FUZZ_REQUIRE(strcmp(again, out) == 0);
    free(again);
    free(out);

    /* The secret glued around the text, and a planted OpenAI-shaped key. */
    if (have) {
        size_t n = strlen(text), k = strlen(secret);
        char *glued = malloc(2 * k + n + 80);
        int m = snprintf(glued, 2 * k + n + 80, "%s%s key=sk-proj-AbC123dEf456GhI789jKl %s", secret, text, secret);
        FUZZ_REQUIRE(m > 0);
        char *o = sb_scrub_text(s, glued, NULL);
        FUZZ_REQUIRE(strstr(o, secret) == NULL);
        /* the planted one is gone (the text may hold copies without a word
         * boundary, which are not key-shaped and stay) */
        FUZZ_REQUIRE(fuzz_count(o, "sk-proj-AbC123dEf456GhI789jKl") <
                     fuzz_count(glued, "sk-proj-AbC123dEf456GhI789jKl"));
        free(o);
        free(glued);
    }
    sb_scrub_destroy(&s);
    free(in);
    return 0;
}

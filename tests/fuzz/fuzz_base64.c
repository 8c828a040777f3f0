/*
 * fuzz_base64: libFuzzer harness for sb_base64_decode, which decodes
 * client-supplied base64: file contents (input_file file_data, Gemini
 * inlineData) and data URLs.
 *
 * Input: the text to decode. Checked besides "no crash, no leak, no UB": a
 * decode succeeds exactly when the text is canonical-alphabet base64 of a
 * length that is a multiple of 4 with padding only at the end; the output
 * length is 3 per 4 characters minus the padding; and re-encoding the output
 * gives the input back whenever the input's unused padding bits are zero
 * (always for what sb_base64_encode made). Encoding the raw input and
 * decoding it must round-trip exactly.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_base64.h"

static bool fuzz_b64_alpha(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
}

/* What a strict RFC 4648 decoder accepts: a multiple of 4 characters of
 * the alphabet, of which at most the last two are padding. */
static bool fuzz_b64_valid(const char *s, size_t n, size_t *pad)
{
    *pad = 0;
    while (*pad < n && s[n - 1 - *pad] == '=')
        (*pad)++;
    if (n % 4 || *pad > 2)
        return false;
    for (size_t i = 0; i < n - *pad; i++)
        if (!fuzz_b64_alpha(s[i]))
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    size_t out_len = (size_t)-1;
    unsigned char *out = sb_base64_decode(text, size, &out_len);
    size_t pad;
    bool valid = fuzz_b64_valid(text, size, &pad);
    FUZZ_REQUIRE((out != NULL) == valid);
    if (out) {
        FUZZ_REQUIRE(out_len == size / 4 * 3 - pad);
        FUZZ_REQUIRE(out[out_len] == '\0');
        size_t elen = 0;
        char *enc = sb_base64_encode(out, out_len, &elen);
        FUZZ_REQUIRE(elen == size);
        /* It may differ only in the character before the padding, whose
         * unused low bits the decoder ignores. */
        if (memcmp(enc, text, size) != 0)
            FUZZ_REQUIRE(pad > 0 && memcmp(enc, text, size - pad - 1) == 0 &&
                         memcmp(enc + size - pad, text + size - pad, pad) == 0);
        free(enc);
        free(out);
    }
    size_t elen = 0, dlen = 0;
    char *enc = sb_base64_encode(data, size, &elen);
    FUZZ_REQUIRE(elen == 4 * ((size + 2) / 3) && strlen(enc) == elen);
    unsigned char *dec = sb_base64_decode(enc, elen, &dlen);
    FUZZ_REQUIRE(dec != NULL && dlen == size && memcmp(dec, data, size) == 0);
    free(dec);
    free(enc);
    return 0;
}

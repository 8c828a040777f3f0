/*
 * fuzz_dataurl: libFuzzer harness for sb_dataurl_parse and the sb_base64
 * dialects its payloads are decoded in: data URLs come from clients
 * (image_url, file_data) and sealed tokens and protobuf bytes from clients
 * and upstreams.
 *
 * Input: the URL (cut at the first NUL, as a C string from JSON would be).
 * Checked besides "no crash, no leak, no UB": a split succeeds exactly for
 * "data:" (any case) with a comma after it, and its parts tile the URL (type,
 * parameters, ";base64", comma, payload); the lower-cased type fits a buffer
 * exactly when it is shorter. The payload, and the whole input, are decoded
 * in every dialect: sb_base64_check agrees with decoding, no output passes
 * sb_base64_decoded_max, and the dialects nest (strict within lenient, either
 * alphabet within ANY, padded and unpadded within PAD_OPTIONAL) with the same
 * bytes; strict text re-encodes to itself. The input's bytes encode and
 * decode back in every encoding dialect.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz.h"
#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_dataurl.h"

/* Decodes text in a dialect; checks the agreements every decode has. */
static unsigned char *fuzz_dec(const char *text, size_t len, unsigned flags, size_t *n)
{
    *n = 0;
    unsigned char *out = sb_base64_decode_flags(text, len, flags, n);
    FUZZ_REQUIRE((sb_base64_check(text, len, flags) == 0) == (out != NULL));
    if (out)
        FUZZ_REQUIRE(*n <= sb_base64_decoded_max(len) && out[*n] == '\0');
    return out;
}

/* If `narrow` accepts text, `wide` accepts it with the same bytes. */
static void fuzz_nests(const char *text, size_t len, unsigned narrow, unsigned wide)
{
    size_t a, b;
    unsigned char *x = fuzz_dec(text, len, narrow, &a);
    unsigned char *y = fuzz_dec(text, len, wide, &b);
    if (x)
        FUZZ_REQUIRE(y && a == b && !memcmp(x, y, a));
    free(x);
    free(y);
}

static void fuzz_base64_dialects(const char *text, size_t len)
{
    static const unsigned alphabets[] = {0, SB_BASE64_URL};
    static const unsigned paddings[] = {0, SB_BASE64_NOPAD};
    for (size_t i = 0; i < 2; i++) {
        for (size_t j = 0; j < 2; j++) {
            unsigned f = alphabets[i] | paddings[j];
            fuzz_nests(text, len, f | SB_BASE64_STRICT, f);
            fuzz_nests(text, len, f, (f & ~SB_BASE64_NOPAD) | SB_BASE64_PAD_OPTIONAL);
            fuzz_nests(text, len, f, f | SB_BASE64_ANY);
            /* Strict text is canonical: it re-encodes to itself. */
            size_t n;
            unsigned char *raw = fuzz_dec(text, len, f | SB_BASE64_STRICT, &n);
            if (raw) {
                size_t elen;
                char *again = sb_base64_encode_flags(raw, n, f, &elen);
                FUZZ_REQUIRE(elen == len && !memcmp(again, text, len));
                free(again);
                free(raw);
            }
        }
    }
    fuzz_nests(text, len, SB_BASE64_ANY | SB_BASE64_PAD_OPTIONAL | SB_BASE64_STRICT,
               SB_BASE64_ANY | SB_BASE64_PAD_OPTIONAL);
}

static void fuzz_round_trip(const uint8_t *data, size_t size)
{
    static const unsigned dialects[] = {0, SB_BASE64_URL, SB_BASE64_NOPAD, SB_BASE64_URL | SB_BASE64_NOPAD};
    for (size_t d = 0; d < 4; d++) {
        size_t elen, dlen;
        char *e = sb_base64_encode_flags(data, size, dialects[d], &elen);
        FUZZ_REQUIRE(elen == sb_base64_encoded_len(size, dialects[d]) && strlen(e) == elen);
        unsigned char *back = fuzz_dec(e, elen, dialects[d] | SB_BASE64_STRICT, &dlen);
        FUZZ_REQUIRE(back && dlen == size && !memcmp(back, data, size));
        free(back);
        free(e);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *url = sb_xmalloc(size + 1);
    memcpy(url, data, size);
    url[size] = '\0';
    size_t len = strlen(url);

    sb_dataurl_t u;
    int rc = sb_dataurl_parse(url, &u);
    const char *comma = len >= 5 ? strchr(url + 5, ',') : NULL;
    bool want = len >= 5 && !strncasecmp(url, "data:", 5) && comma;
    FUZZ_REQUIRE(rc == (want ? 0 : -EINVAL));
    if (rc == 0) {
        FUZZ_REQUIRE(u.mime == url + 5 && !memchr(u.mime, ';', u.mime_len) && !memchr(u.mime, ',', u.mime_len));
        FUZZ_REQUIRE(u.params == u.mime + u.mime_len && (u.params_len == 0 || u.params[0] == ';'));
        FUZZ_REQUIRE(u.params + u.params_len + (u.base64 ? 7 : 0) == comma);
        FUZZ_REQUIRE(u.payload == comma + 1 && u.payload_len == strlen(u.payload));
        char mime[16];
        int mrc = sb_dataurl_mime(&u, mime, sizeof mime);
        FUZZ_REQUIRE(mrc == (u.mime_len < sizeof mime ? 0 : -ENAMETOOLONG));
        FUZZ_REQUIRE(strlen(mime) == (mrc == 0 ? u.mime_len : 0));
        FUZZ_REQUIRE(sb_dataurl_mime_is(&u, "") && (mrc < 0 || sb_dataurl_mime_is(&u, mime)));
        fuzz_base64_dialects(u.payload, u.payload_len);
    }
    fuzz_base64_dialects((const char *)data, size);
    fuzz_round_trip(data, size);
    free(url);
    return 0;
}

/*
 * Unit test of sb_base64: the standard padded dialect every caller used
 * before (file data, data URLs), and the flags that the sealed tokens
 * (base64url, unpadded, strict) and the emulator (either alphabet, padding
 * optional) take: what each accepts and refuses, and that encoding then
 * decoding gives the bytes back in each.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sb_base64.h"
#include "sb_test.h"

/* Decodes text with flags: the bytes as a new string, or NULL when refused. */
static char *dec(const char *text, unsigned flags)
{
    size_t n = 0;
    unsigned char *out = sb_base64_decode_flags(text, strlen(text), flags, &n);
    int rc = sb_base64_check(text, strlen(text), flags);
    CHECK_INT(rc, out ? 0 : -EINVAL);
    if (out)
        CHECK_INT(strlen((char *)out), n); /* the test texts decode to text */
    return (char *)out;
}

#define CHECK_DEC(text, flags, want)                                                                                   \
    do {                                                                                                               \
        char *got_ = dec(text, flags);                                                                                 \
        CHECK_STR(got_, want);                                                                                         \
        free(got_);                                                                                                    \
    } while (0)
#define CHECK_REFUSED(text, flags)                                                                                     \
    do {                                                                                                               \
        char *got_ = dec(text, flags);                                                                                 \
        CHECK(got_ == NULL);                                                                                           \
        free(got_);                                                                                                    \
    } while (0)

static void test_standard(void)
{
    size_t n = 0;
    char *e = sb_base64_encode("hello", 5, &n);
    CHECK_STR(e, "aGVsbG8=");
    CHECK_INT(n, 8);
    free(e);
    e = sb_base64_encode("", 0, NULL);
    CHECK_STR(e, "");
    free(e);
    e = sb_base64_encode("\xfb\xff", 2, NULL);
    CHECK_STR(e, "+/8=");
    free(e);
    CHECK_DEC("aGVsbG8=", 0, "hello");
    CHECK_DEC("aGk=", 0, "hi");
    CHECK_DEC("aGVs", 0, "hel");
    CHECK_DEC("", 0, "");
    CHECK_DEC("aGl=", 0, "hi");  /* unused bits set: accepted unless strict */
    CHECK_REFUSED("aGVsbG8", 0); /* padding required */
    CHECK_REFUSED("aG=k", 0);
    CHECK_REFUSED("a===", 0);
    CHECK_REFUSED("====", 0);
    CHECK_REFUSED("aGk-", 0); /* url alphabet */
    CHECK_REFUSED("aG k", 0);
    CHECK_REFUSED("aGVsbG8=\n", 0);
    /* A NUL inside is a character outside the alphabet. */
    size_t len = 0;
    CHECK(sb_base64_decode("aG\0k", 4, &len) == NULL);
}

static void test_flags(void)
{
    /* Unpadded base64url, strict: the sealed tokens. */
    unsigned tok = SB_BASE64_URL | SB_BASE64_NOPAD | SB_BASE64_STRICT;
    size_t n = 0;
    char *e = sb_base64_encode_flags("\xfb\xff", 2, tok, &n);
    CHECK_STR(e, "-_8");
    CHECK_INT(n, 3);
    CHECK_INT(sb_base64_encoded_len(2, tok), 3);
    CHECK_INT(sb_base64_encoded_len(2, 0), 4);
    free(e);
    CHECK_DEC("aGk", tok, "hi");
    CHECK_REFUSED("aGk=", tok); /* no '=' at all */
    CHECK_REFUSED("aGl", tok);  /* unused bits set */
    CHECK_REFUSED("aGk+", tok); /* standard alphabet */
    CHECK_REFUSED("a", tok);    /* 1 mod 4 */
    CHECK_DEC("aGl", SB_BASE64_URL | SB_BASE64_NOPAD, "hi");

    /* The emulator's readings: padding optional, either alphabet, strict bits. */
    CHECK_DEC("aGk", SB_BASE64_PAD_OPTIONAL, "hi");
    CHECK_DEC("aGk=", SB_BASE64_PAD_OPTIONAL, "hi");
    CHECK_REFUSED("aG=", SB_BASE64_PAD_OPTIONAL);       /* padding that does not complete the group */
    CHECK_REFUSED("aGVsbG8==", SB_BASE64_PAD_OPTIONAL); /* one '=' too many */
    CHECK_REFUSED("a", SB_BASE64_PAD_OPTIONAL);
    CHECK_REFUSED("-_8", SB_BASE64_PAD_OPTIONAL);
    unsigned any = SB_BASE64_ANY | SB_BASE64_PAD_OPTIONAL;
    char *mixed = dec("-_+/", any);
    CHECK(mixed && !memcmp(mixed, "\xfb\xff\xbf", 3));
    free(mixed);
    CHECK_DEC("aGl", any, "hi");
    CHECK_REFUSED("aGl", any | SB_BASE64_STRICT);
    CHECK_DEC("aGk", any | SB_BASE64_STRICT, "hi");
    CHECK_DEC("aGk=", any | SB_BASE64_STRICT, "hi");

    /* Into a caller's buffer, sized by sb_base64_decoded_max. */
    unsigned char buf[8];
    CHECK(sb_base64_decoded_max(7) <= sizeof buf);
    CHECK_INT(sb_base64_decode_into("aGVsbG8", 7, SB_BASE64_NOPAD, buf, &n), 0);
    CHECK_INT(n, 5);
    CHECK(!memcmp(buf, "hello", 5));
    CHECK_INT(sb_base64_decode_into("aGVsbG8=", 8, SB_BASE64_NOPAD, buf, &n), -EINVAL);
}

static void test_round_trip(void)
{
    static const unsigned dialects[] = {0, SB_BASE64_URL, SB_BASE64_NOPAD, SB_BASE64_URL | SB_BASE64_NOPAD};
    unsigned char data[64];
    for (size_t i = 0; i < sizeof data; i++)
        data[i] = (unsigned char)(i * 37 + 250);
    for (size_t d = 0; d < sizeof dialects / sizeof dialects[0]; d++) {
        for (size_t len = 0; len <= sizeof data; len++) {
            size_t elen = 0, dlen = 0;
            char *e = sb_base64_encode_flags(data, len, dialects[d], &elen);
            CHECK_INT(elen, sb_base64_encoded_len(len, dialects[d]));
            CHECK_INT(strlen(e), elen);
            unsigned char *back = sb_base64_decode_flags(e, elen, dialects[d] | SB_BASE64_STRICT, &dlen);
            CHECK(back && dlen == len && !memcmp(back, data, len));
            CHECK(dlen <= sb_base64_decoded_max(elen));
            free(back);
            free(e);
        }
    }
}

int main(void)
{
    test_standard();
    test_flags();
    test_round_trip();
    return sb_test_finish("test_base64");
}

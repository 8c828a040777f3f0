/* Unit tests for sb_seal: key parsing, round trips, binding to the context,
 * and refusal of every tampered, truncated, foreign or malformed token. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sb_id.h"
#include "sb_seal.h"
#include "sb_test.h"

#define CTX "acct:42|reasoning"
/* The bytes 00..1f, as hex and as standard base64. */
#define KEY_HEX "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define KEY_B64 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
/* Sealed by an independent implementation (Python cryptography AESGCM) with
 * KEY_HEX, nonce a0..ab, context CTX, AAD = 0x01 | key_id | CTX: pins the
 * token format. */
#define KAT_TOKEN "AWMNzSmgoaKjpKWmp6ipqquOfRBBKucizQcE9LxpE6653Bss_v5NcGqqyjNfBVmWmw"
#define KAT_PLAIN "hello, reasoning"

static const char b64url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/* Test-side base64url, independent of the module's own. */
static char *enc(const unsigned char *in, size_t n)
{
    char *out = malloc(n / 3 * 4 + 5);
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        acc = acc << 8 | in[i];
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out[o++] = b64url[(acc >> bits) & 63];
        }
    }
    if (bits > 0)
        out[o++] = b64url[(acc << (6 - bits)) & 63];
    out[o] = '\0';
    return out;
}

static unsigned char *dec(const char *s, size_t *n)
{
    size_t len = strlen(s);
    unsigned char *out = malloc(len + 1);
    uint32_t acc = 0;
    int bits = 0;
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        const char *p = strchr(b64url, s[i]);
        if (!p || !s[i]) {
            free(out);
            return NULL;
        }
        acc = acc << 6 | (uint32_t)(p - b64url);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[(*n)++] = (unsigned char)(acc >> bits);
        }
    }
    return out;
}

/* sb_seal_open, checking the out-parameters are cleared whenever it fails. */
static int open_tok(const sb_seal_key_t *key, const char *ctx, const char *tok)
{
    void *p = (void *)1;
    size_t l = 99;
    int rc = sb_seal_open(key, ctx, tok, &p, &l);
    if (rc == 0) {
        free(p);
    } else {
        CHECK(p == NULL);
        CHECK_INT(l, 0);
    }
    return rc;
}

static void round_trip(const sb_seal_key_t *key, size_t n)
{
    unsigned char *plain = malloc(n ? n : 1);
    if (n)
        sb_random_bytes(plain, n);
    char *tok = sb_seal(key, CTX, n ? plain : NULL, n);
    CHECK(tok != NULL);
    if (!tok) {
        free(plain);
        return;
    }
    size_t raw = SB_SEAL_HEADER_LEN + n + SB_SEAL_TAG_LEN;
    CHECK_INT(strlen(tok), raw / 3 * 4 + (raw % 3 ? raw % 3 + 1 : 0));
    CHECK_INT(strspn(tok, b64url), strlen(tok)); /* printable, no padding */
    void *out = NULL;
    size_t out_len = 0;
    CHECK_INT(sb_seal_open(key, CTX, tok, &out, &out_len), 0);
    CHECK_INT(out_len, n);
    CHECK(out != NULL);
    if (out) {
        CHECK(memcmp(out, plain, n) == 0);
        CHECK(((char *)out)[n] == '\0');
    }
    free(out);
    free(tok);
    free(plain);
}

static void test_key_parse(void)
{
    sb_seal_key_t k, k2;
    CHECK_INT(sb_seal_key_parse(KEY_HEX, &k), 0);
    for (int i = 0; i < SB_SEAL_KEY_LEN; i++)
        CHECK_INT(k.k[i], i);
    /* key_id = SHA-256(00..1f)[0..4) */
    CHECK(memcmp(k.key_id, "\x63\x0d\xcd\x29", 4) == 0);

    char upper[] = KEY_HEX;
    for (char *c = upper; *c; c++)
        if (*c >= 'a' && *c <= 'f')
            *c = (char)(*c - 'a' + 'A');
    CHECK_INT(sb_seal_key_parse(upper, &k2), 0);
    CHECK(memcmp(&k, &k2, sizeof k) == 0);

    CHECK_INT(sb_seal_key_parse("base64:" KEY_B64, &k2), 0);
    CHECK(memcmp(&k, &k2, sizeof k) == 0);
    char unpadded[] = "base64:" KEY_B64;
    unpadded[strlen(unpadded) - 1] = '\0';
    CHECK_INT(sb_seal_key_parse(unpadded, &k2), 0);
    CHECK(memcmp(&k, &k2, sizeof k) == 0);

    char buf[80];
    memcpy(buf, KEY_HEX, 63);
    buf[63] = '\0';
    CHECK_INT(sb_seal_key_parse(buf, &k2), -EINVAL); /* 63 */
    memcpy(buf, KEY_HEX "0", 66);
    CHECK_INT(sb_seal_key_parse(buf, &k2), -EINVAL); /* 65 */
    memcpy(buf, KEY_HEX "00", 67);
    CHECK_INT(sb_seal_key_parse(buf, &k2), -EINVAL); /* 66 */
    for (const char *bad = "gG -x\n\x80"; *bad; bad++) {
        memcpy(buf, KEY_HEX, 65);
        buf[17] = *bad;
        CHECK_INT(sb_seal_key_parse(buf, &k2), -EINVAL);
    }
    memset(&k2, 0x55, sizeof k2);
    CHECK_INT(sb_seal_key_parse("", &k2), -EINVAL);
    sb_seal_key_t zero;
    memset(&zero, 0, sizeof zero);
    CHECK(memcmp(&k2, &zero, sizeof zero) == 0); /* nothing left behind on failure */
    memset(&k2, 0x55, sizeof k2);
    CHECK_INT(sb_seal_key_parse("ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffxg", &k2), -EINVAL);
    CHECK(memcmp(&k2, &zero, sizeof zero) == 0); /* not even the 31 bytes parsed before the bad digit */
    CHECK_INT(sb_seal_key_parse(NULL, &k2), -EINVAL);
    CHECK_INT(sb_seal_key_parse(KEY_HEX, NULL), -EINVAL);
    CHECK_INT(sb_seal_key_parse(" " KEY_HEX, &k2), -EINVAL);
    CHECK_INT(sb_seal_key_parse(KEY_HEX "\n", &k2), -EINVAL);
    CHECK_INT(sb_seal_key_parse("base64:", &k2), -EINVAL);
    CHECK_INT(sb_seal_key_parse("base64:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==", &k2), -EINVAL); /* 31 */
    CHECK_INT(sb_seal_key_parse("base64:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g", &k2), -EINVAL); /* 33 */
    CHECK_INT(sb_seal_key_parse("base64:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh-=", &k2), -EINVAL); /* '-' */
    CHECK_INT(sb_seal_key_parse("base64:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9=", &k2), -EINVAL); /* bits */
    CHECK_INT(sb_seal_key_parse("base64:=AECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", &k2), -EINVAL);
    CHECK_INT(sb_seal_key_parse("base64:" KEY_B64 "=", &k2), -EINVAL);

    sb_seal_key_wipe(&k);
    CHECK(memcmp(&k, &zero, sizeof zero) == 0);
    sb_seal_key_wipe(NULL);
}

/* Flips every bit of the decoded token in turn and re-encodes: each must be
 * refused, as malformed (version, key_id) or as failing authentication. */
static void test_bit_flips(const sb_seal_key_t *key, const char *tok)
{
    size_t n = 0;
    unsigned char *raw = dec(tok, &n);
    CHECK(raw != NULL);
    if (!raw)
        return;
    int refused = 0;
    for (size_t i = 0; i < n; i++) {
        for (int b = 0; b < 8; b++) {
            raw[i] ^= (unsigned char)(1u << b);
            char *t = enc(raw, n);
            int rc = open_tok(key, CTX, t);
            if (i < 1 + SB_SEAL_KEY_ID_LEN)
                CHECK_INT(rc, -EINVAL);
            else
                CHECK_INT(rc, -EBADMSG);
            refused += rc != 0;
            free(t);
            raw[i] ^= (unsigned char)(1u << b);
        }
    }
    CHECK_INT(refused, (long long)n * 8);
    /* Sanity: the unmodified re-encoding still opens. */
    char *t = enc(raw, n);
    CHECK_STR(t, tok);
    CHECK_INT(open_tok(key, CTX, t), 0);
    free(t);
    free(raw);
}

static void test_truncation(const sb_seal_key_t *key, const char *tok)
{
    size_t len = strlen(tok);
    char *t = malloc(len + 1);
    for (size_t i = 0; i < len; i++) {
        memcpy(t, tok, i);
        t[i] = '\0';
        int rc = open_tok(key, CTX, t);
        CHECK(rc == -EINVAL || rc == -EBADMSG);
    }
    free(t);
    /* Extended by one character, and by one decoded byte: both refused. */
    char *ext = malloc(len + 4);
    for (const char *c = "AQ_-"; *c; c++) {
        memcpy(ext, tok, len);
        ext[len] = *c;
        ext[len + 1] = '\0';
        CHECK(open_tok(key, CTX, ext) != 0);
        ext[len + 1] = 'A';
        ext[len + 2] = '\0';
        CHECK(open_tok(key, CTX, ext) != 0);
    }
    free(ext);
}

static void test_garbage(const sb_seal_key_t *key, const char *tok)
{
    CHECK_INT(open_tok(key, CTX, ""), -EINVAL);
    CHECK_INT(open_tok(key, CTX, "A"), -EINVAL);
    CHECK_INT(open_tok(key, CTX, "!!!!"), -EINVAL);
    CHECK_INT(open_tok(key, CTX, "===="), -EINVAL);
    CHECK_INT(open_tok(key, CTX, "not a token at all, definitely not base64url!!"), -EINVAL);

    size_t len = strlen(tok);
    char *t = malloc(len + 3);
    /* One non-alphabet character anywhere in an otherwise valid token. */
    for (const char *c = "=+/ .\n\t\x7f\x80\xff"; *c; c++) {
        for (size_t i = 0; i < len; i += 7) {
            memcpy(t, tok, len + 1);
            t[i] = *c;
            CHECK_INT(open_tok(key, CTX, t), -EINVAL);
        }
    }
    /* Padding or a trailing newline appended. */
    memcpy(t, tok, len);
    memcpy(t + len, "==", 3);
    CHECK_INT(open_tok(key, CTX, t), -EINVAL);
    memcpy(t + len, "\n", 2);
    CHECK_INT(open_tok(key, CTX, t), -EINVAL);
    free(t);

    /* Random well-formed base64url of plausible lengths: never opens. */
    unsigned char rnd[256];
    for (size_t n = 0; n < sizeof rnd; n++) {
        sb_random_bytes(rnd, n);
        char *r = enc(rnd, n);
        CHECK(open_tok(key, CTX, r) != 0);
        free(r);
        /* The same bytes, but with a valid header: reaches the tag check. */
        if (n >= SB_SEAL_HEADER_LEN + SB_SEAL_TAG_LEN) {
            rnd[0] = SB_SEAL_VERSION;
            memcpy(rnd + 1, key->key_id, SB_SEAL_KEY_ID_LEN);
            r = enc(rnd, n);
            CHECK_INT(open_tok(key, CTX, r), -EBADMSG);
            free(r);
        }
    }
    /* Random raw bytes as a C string (no NUL inside), any length. */
    char junk[300];
    for (size_t n = 0; n < sizeof junk; n++) {
        sb_random_bytes(junk, n);
        for (size_t i = 0; i < n; i++)
            if (!junk[i])
                junk[i] = 'A';
        junk[n] = '\0';
        CHECK(open_tok(key, CTX, junk) != 0);
    }
}

int main(void)
{
    test_key_parse();

    sb_seal_key_t key, other;
    CHECK_INT(sb_seal_key_parse(KEY_HEX, &key), 0);
    CHECK_INT(sb_seal_key_parse("ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100", &other), 0);
    CHECK(memcmp(key.key_id, other.key_id, SB_SEAL_KEY_ID_LEN) != 0);

    /* Known answer from an independent implementation. */
    void *out = NULL;
    size_t out_len = 0;
    CHECK_INT(sb_seal_open(&key, CTX, KAT_TOKEN, &out, &out_len), 0);
    CHECK_INT(out_len, strlen(KAT_PLAIN));
    CHECK_STR(out, KAT_PLAIN);
    free(out);
    CHECK_INT(open_tok(&key, "acct:43|reasoning", KAT_TOKEN), -EBADMSG);

    round_trip(&key, 0);
    round_trip(&key, 1);
    round_trip(&key, 15);
    round_trip(&key, 16);
    round_trip(&key, 17);
    round_trip(&key, 64 * 1024);

    /* Random nonce: the same plaintext seals differently, both open. */
    char *a = sb_seal(&key, CTX, "same", 4);
    char *b = sb_seal(&key, CTX, "same", 4);
    CHECK(a && b && strcmp(a, b) != 0);
    CHECK_INT(open_tok(&key, CTX, a), 0);
    CHECK_INT(open_tok(&key, CTX, b), 0);
    free(a);
    free(b);

    char *tok = sb_seal(&key, CTX, "hello world", 11);
    CHECK(tok != NULL);
    if (!tok)
        return sb_test_finish("seal");

    /* Bound to the context: another account, a prefix, empty. */
    CHECK_INT(open_tok(&key, "acct:43|reasoning", tok), -EBADMSG);
    CHECK_INT(open_tok(&key, "acct:4", tok), -EBADMSG);
    CHECK_INT(open_tok(&key, CTX "x", tok), -EBADMSG);
    CHECK_INT(open_tok(&key, "", tok), -EBADMSG);
    char *empty_ctx = sb_seal(&key, "", "x", 1);
    CHECK(empty_ctx != NULL);
    CHECK_INT(open_tok(&key, "", empty_ctx), 0);
    CHECK_INT(open_tok(&key, CTX, empty_ctx), -EBADMSG);
    free(empty_ctx);

    /* Another key: unknown key_id. Same key_id but other material: tag fails. */
    CHECK_INT(open_tok(&other, CTX, tok), -EINVAL);
    sb_seal_key_t forged = other;
    memcpy(forged.key_id, key.key_id, SB_SEAL_KEY_ID_LEN);
    CHECK_INT(open_tok(&forged, CTX, tok), -EBADMSG);

    test_bit_flips(&key, tok);
    test_truncation(&key, tok);
    test_garbage(&key, tok);

    /* Non-canonical encoding: 44 raw bytes leave 2 unused bits in the last
     * character; setting them must be refused, not silently ignored. */
    size_t tl = strlen(tok);
    char *nc = malloc(tl + 1);
    memcpy(nc, tok, tl + 1);
    const char *pos = strchr(b64url, nc[tl - 1]);
    CHECK(pos && ((pos - b64url) & 3) == 0);
    nc[tl - 1] = b64url[(pos - b64url) | 1];
    CHECK_INT(open_tok(&key, CTX, nc), -EINVAL);
    free(nc);

    /* Truncation of a large token at a few points. */
    unsigned char *big = calloc(1, 64 * 1024);
    char *bt = sb_seal(&key, CTX, big, 64 * 1024);
    CHECK(bt != NULL);
    if (bt) {
        size_t bl = strlen(bt);
        size_t cuts[] = {bl - 1, bl - 2, bl - 3, bl - 22, bl / 2, 44, 43};
        for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
            char saved = bt[cuts[i]];
            bt[cuts[i]] = '\0';
            int rc = open_tok(&key, CTX, bt);
            CHECK(rc == -EINVAL || rc == -EBADMSG);
            bt[cuts[i]] = saved;
        }
        CHECK_INT(open_tok(&key, CTX, bt), 0);
        free(bt);
    }
    free(big);

    /* Limits and argument checks. */
    CHECK(sb_seal(&key, NULL, "x", 1) == NULL);
    CHECK(sb_seal(&key, CTX, NULL, 1) == NULL);
    CHECK(sb_seal(&key, CTX, tok, SB_SEAL_MAX_PLAIN + 1) == NULL); /* refused before reading */
    CHECK_INT(open_tok(&key, NULL, tok), -EINVAL);
    CHECK_INT(open_tok(&key, CTX, NULL), -EINVAL);
    CHECK_INT(sb_seal_open(&key, CTX, tok, NULL, &out_len), -EINVAL);
    size_t huge = (SB_SEAL_HEADER_LEN + SB_SEAL_MAX_PLAIN + SB_SEAL_TAG_LEN) / 3 * 4 + 8;
    char *h = malloc(huge + 1);
    memset(h, 'A', huge);
    h[huge] = '\0';
    CHECK_INT(open_tok(&key, CTX, h), -EINVAL); /* over the limit: refused before decoding */
    free(h);

    free(tok);
    sb_seal_key_wipe(&key);
    sb_seal_key_wipe(&other);
    return sb_test_finish("seal");
}

/*
 * fuzz_seal: libFuzzer harness for sb_seal_open, which opens tokens clients
 * hand back (reasoning encrypted_content, sealed call ids, thinking
 * signatures): every byte of a token is hostile.
 *
 * Input: the token (cut at the first NUL, as a C string from JSON would
 * be). It is opened with a fixed key under two contexts; the seeds hold
 * tokens sealed with that key, so mutations start from real ones. Checked
 * besides "no crash, no leak, no UB": a refusal is -EINVAL or -EBADMSG with
 * *plain NULL and *len 0; an opened token's plaintext is NUL-terminated and
 * shorter than the token, and opens under one context only. Then the input
 * itself is sealed, opens back to itself, and a copy with one character
 * changed (position and value from the input) is refused. The input is also
 * given to sb_seal_key_parse (configuration text, but cheap to cover).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_alloc.h"
#include "sb_seal.h"

#define FUZZ_SEAL_KEY "4242424242424242424242424242424242424242424242424242424242424242"
#define FUZZ_SEAL_CTX "acct:1|reasoning"

/* Opens token under ctx; returns sb_seal_open's result after the checks. */
static int fuzz_seal_open(const sb_seal_key_t *key, const char *ctx, const char *token)
{
    void *plain = (void *)1;
    size_t len = 1;
    int rc = sb_seal_open(key, ctx, token, &plain, &len);
    if (rc != 0) {
        FUZZ_REQUIRE(rc == -EINVAL || rc == -EBADMSG);
        FUZZ_REQUIRE(plain == NULL && len == 0);
        return rc;
    }
    FUZZ_REQUIRE(plain != NULL && len < strlen(token) && ((char *)plain)[len] == '\0');
    free(plain);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sb_seal_key_t key;
    FUZZ_REQUIRE(sb_seal_key_parse(FUZZ_SEAL_KEY, &key) == 0);
    char *text = sb_xstrndup((const char *)data, size);

    int a = fuzz_seal_open(&key, FUZZ_SEAL_CTX, text);
    int b = fuzz_seal_open(&key, "acct:2|reasoning", text);
    FUZZ_REQUIRE(!(a == 0 && b == 0));

    sb_seal_key_t parsed;
    if (sb_seal_key_parse(text, &parsed) == 0)
        sb_seal_key_wipe(&parsed);

    if (size <= 4096) {
        char *token = sb_seal(&key, FUZZ_SEAL_CTX, data, size);
        FUZZ_REQUIRE(token != NULL);
        void *plain = NULL;
        size_t len = 0;
        FUZZ_REQUIRE(sb_seal_open(&key, FUZZ_SEAL_CTX, token, &plain, &len) == 0);
        FUZZ_REQUIRE(len == size && memcmp(plain, data, size) == 0);
        free(plain);
        size_t tl = strlen(token);
        size_t at = size >= 2 ? ((size_t)data[0] << 8 | data[1]) % tl : 0;
        char was = token[at];
        token[at] = size >= 3 ? (char)data[2] : 'A';
        if (token[at] == '\0')
            token[at] = '!';
        /* Even the last character's unused bits count: they must be zero. */
        if (token[at] != was)
            FUZZ_REQUIRE(fuzz_seal_open(&key, FUZZ_SEAL_CTX, token) != 0);
        free(token);
    }
    sb_seal_key_wipe(&key);
    free(text);
    return 0;
}

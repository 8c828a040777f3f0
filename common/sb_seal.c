/*
 * sb_seal: AES-256-GCM sealing of small blobs bound to an owner context, as
 * base64url tokens. See sb_seal.h for the token format. Tokens come back from
 * clients, so sb_seal_open treats every byte as hostile: lengths are bounded
 * before anything is allocated, the base64url decoder is strict, and a failed
 * tag check wipes the unauthenticated plaintext before returning.
 */
#include "sb_seal.h"

#include <errno.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_hex.h"

#define SB_SEAL_MIN_RAW (SB_SEAL_HEADER_LEN + SB_SEAL_TAG_LEN)
#define SB_SEAL_MAX_RAW (SB_SEAL_HEADER_LEN + SB_SEAL_MAX_PLAIN + SB_SEAL_TAG_LEN)
#define SB_SEAL_BASE64_PREFIX "base64:"

/* Tokens are unpadded base64url with one accepted encoding per byte string:
 * any character outside the alphabet (including '='), a length of 1 mod 4,
 * or non-zero unused trailing bits is refused. */
#define SB_SEAL_B64 (SB_BASE64_URL | SB_BASE64_NOPAD | SB_BASE64_STRICT)

/* Key material from "base64:<44 chars with padding, or 43 without>" into
 * out[SB_SEAL_KEY_LEN]. */
static int sb_seal_key_parse_base64(const char *b64, unsigned char *out)
{
    size_t n = strlen(b64);
    if (n % 4 == 0) { /* padded form: strip at most two trailing '=' */
        for (int pad = 0; pad < 2 && n > 0 && b64[n - 1] == '='; pad++)
            n--;
    }
    /* 32 bytes encode to 43 unpadded characters; checking first bounds buf. */
    if (n != sb_base64_encoded_len(SB_SEAL_KEY_LEN, SB_BASE64_NOPAD))
        return -EINVAL;
    unsigned char buf[SB_SEAL_KEY_LEN + 2];
    size_t len = 0;
    int rc = sb_base64_decode_into(b64, n, SB_BASE64_NOPAD | SB_BASE64_STRICT, buf, &len);
    if (rc == 0 && len == SB_SEAL_KEY_LEN)
        memcpy(out, buf, SB_SEAL_KEY_LEN);
    else
        rc = -EINVAL;
    OPENSSL_cleanse(buf, sizeof buf);
    return rc;
}

int sb_seal_key_parse(const char *text, sb_seal_key_t *key)
{
    if (!key)
        return -EINVAL;
    memset(key, 0, sizeof *key);
    if (!text)
        return -EINVAL;

    int rc = 0;
    size_t prefix = strlen(SB_SEAL_BASE64_PREFIX);
    if (strncmp(text, SB_SEAL_BASE64_PREFIX, prefix) == 0) {
        rc = sb_seal_key_parse_base64(text + prefix, key->k);
        if (rc < 0)
            goto fail;
    } else {
        if (strlen(text) != 2 * SB_SEAL_KEY_LEN) {
            rc = -EINVAL;
            goto fail;
        }
        for (size_t i = 0; i < SB_SEAL_KEY_LEN; i++) {
            int hi = sb_hex_digit((unsigned char)text[2 * i]);
            int lo = sb_hex_digit((unsigned char)text[2 * i + 1]);
            if (hi < 0 || lo < 0) {
                rc = -EINVAL;
                goto fail;
            }
            key->k[i] = (unsigned char)(hi << 4 | lo);
        }
    }

    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (EVP_Digest(key->k, SB_SEAL_KEY_LEN, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen < SB_SEAL_KEY_ID_LEN) {
        rc = -EINVAL;
        goto fail;
    }
    memcpy(key->key_id, md, SB_SEAL_KEY_ID_LEN);
    return 0;

fail:
    OPENSSL_cleanse(key, sizeof *key);
    return rc;
}

void sb_seal_key_wipe(sb_seal_key_t *key)
{
    if (key)
        OPENSSL_cleanse(key, sizeof *key);
}

/* Sets up ctx for AES-256-GCM with key and nonce (encrypt or decrypt) and
 * feeds the additional data: header[0..5) (version | key_id) then context.
 * Returns 0 or -EIO. */
static int sb_seal_gcm_begin(EVP_CIPHER_CTX *ctx, bool enc, const sb_seal_key_t *key, const unsigned char *header,
                             const char *context, const unsigned char *nonce)
{
    size_t ctx_len = strlen(context);
    int outl = 0;
    if (ctx_len > INT_MAX)
        return -EIO;
    if (EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL, enc) != 1 ||
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, SB_SEAL_NONCE_LEN, NULL) != 1 ||
        EVP_CipherInit_ex(ctx, NULL, NULL, key->k, nonce, enc) != 1 ||
        EVP_CipherUpdate(ctx, NULL, &outl, header, 1 + SB_SEAL_KEY_ID_LEN) != 1)
        return -EIO;
    if (ctx_len > 0 && EVP_CipherUpdate(ctx, NULL, &outl, (const unsigned char *)context, (int)ctx_len) != 1)
        return -EIO;
    return 0;
}

char *sb_seal(const sb_seal_key_t *key, const char *context, const void *plain, size_t len)
{
    if (!key || !context || (!plain && len > 0) || len > SB_SEAL_MAX_PLAIN)
        return NULL;

    size_t raw_len = SB_SEAL_HEADER_LEN + len + SB_SEAL_TAG_LEN;
    unsigned char *raw = sb_xmalloc(raw_len);
    char *token = NULL;
    EVP_CIPHER_CTX *ctx = NULL;
    unsigned char *nonce = raw + 1 + SB_SEAL_KEY_ID_LEN;
    unsigned char *ct = raw + SB_SEAL_HEADER_LEN;
    int outl = 0, finl = 0;

    raw[0] = SB_SEAL_VERSION;
    memcpy(raw + 1, key->key_id, SB_SEAL_KEY_ID_LEN);
    if (RAND_bytes(nonce, SB_SEAL_NONCE_LEN) != 1)
        goto fail;

    ctx = EVP_CIPHER_CTX_new();
    if (!ctx || sb_seal_gcm_begin(ctx, true, key, raw, context, nonce) < 0)
        goto fail;
    if (len > 0 && EVP_EncryptUpdate(ctx, ct, &outl, plain, (int)len) != 1)
        goto fail;
    if (EVP_EncryptFinal_ex(ctx, ct + outl, &finl) != 1 || (size_t)outl + (size_t)finl != len)
        goto fail;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, SB_SEAL_TAG_LEN, ct + len) != 1)
        goto fail;

    token = sb_base64_encode_flags(raw, raw_len, SB_SEAL_B64, NULL);

fail:
    EVP_CIPHER_CTX_free(ctx);
    free(raw);
    return token;
}

int sb_seal_open(const sb_seal_key_t *key, const char *context, const char *token, void **plain, size_t *len)
{
    if (plain)
        *plain = NULL;
    if (len)
        *len = 0;
    if (!key || !context || !token || !plain || !len)
        return -EINVAL;

    /* Bound the length before allocating anything: strnlen stops early on a
     * huge token. */
    size_t max_tok = sb_base64_encoded_len(SB_SEAL_MAX_RAW, SB_SEAL_B64);
    size_t tok_len = strnlen(token, max_tok + 1);
    if (tok_len < sb_base64_encoded_len(SB_SEAL_MIN_RAW, SB_SEAL_B64) || tok_len > max_tok)
        return -EINVAL;

    int rc = -EINVAL;
    unsigned char *raw = sb_xmalloc(sb_base64_decoded_max(tok_len));
    unsigned char *out = NULL;
    EVP_CIPHER_CTX *ctx = NULL;
    size_t raw_len = 0, ct_len = 0;
    unsigned char tag[SB_SEAL_TAG_LEN];
    int outl = 0, finl = 0;

    if (sb_base64_decode_into(token, tok_len, SB_SEAL_B64, raw, &raw_len) < 0 || raw_len < SB_SEAL_MIN_RAW)
        goto fail;
    if (raw[0] != SB_SEAL_VERSION || memcmp(raw + 1, key->key_id, SB_SEAL_KEY_ID_LEN) != 0)
        goto fail;

    ct_len = raw_len - SB_SEAL_MIN_RAW;
    const unsigned char *nonce = raw + 1 + SB_SEAL_KEY_ID_LEN;
    const unsigned char *ct = raw + SB_SEAL_HEADER_LEN;
    memcpy(tag, ct + ct_len, SB_SEAL_TAG_LEN);

    rc = -EIO;
    out = sb_xmalloc(ct_len + 1);
    ctx = EVP_CIPHER_CTX_new();
    if (!ctx || sb_seal_gcm_begin(ctx, false, key, raw, context, nonce) < 0)
        goto fail;
    if (ct_len > 0 && EVP_DecryptUpdate(ctx, out, &outl, ct, (int)ct_len) != 1)
        goto fail;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, SB_SEAL_TAG_LEN, tag) != 1)
        goto fail;
    if (EVP_DecryptFinal_ex(ctx, out + outl, &finl) != 1) {
        rc = -EBADMSG; /* the tag did not verify */
        goto fail;
    }
    if ((size_t)outl + (size_t)finl != ct_len)
        goto fail;

    out[ct_len] = '\0';
    *plain = out;
    *len = ct_len;
    out = NULL;
    rc = 0;

fail:
    if (out) {
        OPENSSL_cleanse(out, ct_len + 1); /* unauthenticated plaintext */
        free(out);
    }
    EVP_CIPHER_CTX_free(ctx);
    free(raw);
    return rc;
}

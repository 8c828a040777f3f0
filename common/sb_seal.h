/*
 * sb_seal: authenticated encryption (AES-256-GCM) of small blobs bound to an
 * owner. Used for opaque values the gateway hands to clients and must take
 * back later unchanged, e.g. reasoning items' `encrypted_content` (OpenAI
 * Responses API, include:["reasoning.encrypted_content"]): the client stores
 * the token, returns it in a later request, and the gateway opens it in memory
 * only. A token that was altered, or sealed for another context (another
 * account), is refused.
 *
 * Token format, as printable base64url without padding:
 *   version(1) | key_id(4) | nonce(12) | ciphertext(len) | tag(16)
 * The GCM additional data is version | key_id | context, so the context (the
 * owner binding, e.g. "acct:42|reasoning") is authenticated but never stored
 * in the token.
 *
 * A nonce is random per seal (96 bits), so one key should seal well under
 * 2^32 tokens before it is rotated; key_id lets a future rotation tell keys
 * apart.
 */
#ifndef SB_SEAL_H
#define SB_SEAL_H

#include <stddef.h>

#define SB_SEAL_KEY_LEN 32
#define SB_SEAL_KEY_ID_LEN 4
#define SB_SEAL_NONCE_LEN 12
#define SB_SEAL_TAG_LEN 16
#define SB_SEAL_VERSION 1
/* Bytes of a token before the ciphertext: version, key_id, nonce. */
#define SB_SEAL_HEADER_LEN (1 + SB_SEAL_KEY_ID_LEN + SB_SEAL_NONCE_LEN)
/* Largest plaintext sealed or opened: keeps every length within OpenSSL's int
 * lengths and bounds what an untrusted token can make us allocate. */
#define SB_SEAL_MAX_PLAIN ((size_t)16 * 1024 * 1024)

typedef struct sb_seal_key {
    unsigned char k[SB_SEAL_KEY_LEN];
    unsigned char key_id[SB_SEAL_KEY_ID_LEN]; /* first 4 bytes of SHA-256(k) */
} sb_seal_key_t;

/* Parses a key from configuration: exactly 64 hex digits (either case), or
 * "base64:" followed by standard base64 (padding optional) of exactly 32 bytes.
 * No surrounding whitespace is allowed. Fills *key (k and key_id) and returns
 * 0, or returns -EINVAL and leaves *key zeroed. */
int sb_seal_key_parse(const char *text, sb_seal_key_t *key) __attribute__((warn_unused_result));

/* Seals plain[0..len) bound to context (a NUL-terminated string, borrowed; it
 * is the GCM additional data and is not stored in the token). plain may be
 * NULL when len is 0. Returns a new NUL-terminated base64url token owned by
 * the caller (free()), or NULL when context is NULL, len exceeds
 * SB_SEAL_MAX_PLAIN, or the CSPRNG or cipher fails. */
char *sb_seal(const sb_seal_key_t *key, const char *context, const void *plain, size_t len)
    __attribute__((warn_unused_result));

/* Opens a token (untrusted input of any length and bytes; NUL-terminated)
 * with the same context it was sealed for. On success returns 0 and sets
 * *plain to a new buffer owned by the caller (free()) holding *len bytes plus
 * a NUL terminator for convenience. On failure *plain is NULL, *len is 0 and
 * the result is:
 *   -EINVAL   malformed token (bad characters, too short, too long), wrong
 *             version, key_id not this key's, or NULL token/context;
 *   -EBADMSG  authentication failed: tampered, or sealed for another context;
 *   -EIO      the cipher failed internally.
 * No unauthenticated plaintext is ever returned or left in memory. */
int sb_seal_open(const sb_seal_key_t *key, const char *context, const char *token, void **plain, size_t *len)
    __attribute__((warn_unused_result));

/* Wipes the key material (OPENSSL_cleanse); NULL-safe. */
void sb_seal_key_wipe(sb_seal_key_t *key);

#endif

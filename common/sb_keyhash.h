/*
 * sb_keyhash: API key generation and hashing. Keys are stored only as a
 * SHA-256 hex digest plus a short display prefix; the secret is shown once.
 */
#ifndef SB_KEYHASH_H
#define SB_KEYHASH_H

#include <stdbool.h>
#include <stddef.h>

#define SB_KEY_PREFIX "sk-sb-"
#define SB_KEY_LEN 54         /* "sk-sb-" + 48 base62 characters */
#define SB_KEY_HASH_HEX 65    /* 64 hex digits + NUL */
#define SB_KEY_DISPLAY_LEN 12 /* leading characters kept for display */

/* Admin keys (the admin API; never for generation): another prefix, so
 * neither kind passes for the other. */
#define SB_ADMIN_KEY_PREFIX "sk-sbadmin-"
#define SB_ADMIN_KEY_LEN 59 /* "sk-sbadmin-" + 48 base62 characters */

/* Writes a new random key (NUL-terminated) into out[SB_KEY_LEN + 1]. */
void sb_key_generate(char out[SB_KEY_LEN + 1]);
/* ... and a new admin key into out[SB_ADMIN_KEY_LEN + 1]. */
void sb_admin_key_generate(char out[SB_ADMIN_KEY_LEN + 1]);
/* True when key has the shape of an admin key. */
bool sb_admin_key_well_formed(const char *key, size_t len);

/* SHA-256 hex digest of key[0..len). */
void sb_key_hash(const char *key, size_t len, char out[SB_KEY_HASH_HEX]);

/* True when key has the shape of a Switchboard key (prefix, length, alphabet);
 * a cheap pre-check before any lookup. */
bool sb_key_well_formed(const char *key, size_t len);

/* "sk-sb-AbCd…wxyz": leading and trailing characters only, for display. */
void sb_key_display(const char *key, char *out, size_t out_size);

#endif

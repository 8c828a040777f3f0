/*
 * sb_id: random identifiers with a type prefix, e.g. "resp_3f9a...", drawn from
 * the OpenSSL CSPRNG so they are unguessable (stored objects are addressed by
 * them).
 */
#ifndef SB_ID_H
#define SB_ID_H

#include <stddef.h>

#define SB_ID_MAX 80

/* Writes prefix + 2*nbytes hex digits into out (size >= SB_ID_MAX). nbytes <= 32. */
void sb_id_new(char *out, size_t out_size, const char *prefix, size_t nbytes);

/* Fills buf with n cryptographically random bytes; aborts if the CSPRNG fails. */
void sb_random_bytes(void *buf, size_t n);

#endif

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

/* The same, time-ordered: prefix, then the creation time as 12 hex digits
 * (milliseconds since the epoch, big-endian, so ids sort by creation), then
 * 2*nbytes random hex digits as above. For the ids of rows inserted at
 * request rate (request_log, stored responses and chat completions): a
 * B-tree index on a random key puts every insert on a random leaf page,
 * which at any real table size means a page read and, after each
 * checkpoint, a full-page image in the WAL per row; ordered keys all land
 * on the index's rightmost pages. The time they reveal is no secret (the
 * object's created_at says it too); unguessability rests on the random part. */
void sb_id_new_ordered(char *out, size_t out_size, const char *prefix, size_t nbytes);

/* Fills buf with n cryptographically random bytes; aborts if the CSPRNG fails. */
void sb_random_bytes(void *buf, size_t n);

#endif

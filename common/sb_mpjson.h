/*
 * sb_mpjson: lossless conversion between jansson values and msgpack bytes.
 * The canonical request and events are JSON-shaped (the Responses superset);
 * msgpack is how they cross ZeroMQ. Decoding is untrusted-input safe: depth
 * and size are bounded, non-string map keys and ext types are rejected.
 */
#ifndef SB_MPJSON_H
#define SB_MPJSON_H

#include <jansson.h>
#include <msgpack.h>
#include <stddef.h>

/* Appends the msgpack encoding of v to pk. v is borrowed. */
void sb_mpjson_pack(msgpack_packer *pk, const json_t *v);

/* Encodes v into a new buffer (*out owned by caller, free()). Returns 0. */
int sb_mpjson_encode(const json_t *v, char **out, size_t *out_len) __attribute__((warn_unused_result));

/* Decodes exactly one msgpack value filling data[0..len). On success returns 0
 * and *out is a new reference owned by the caller; on malformed input returns
 * -EINVAL (or -E2BIG over the depth limit) and *out is NULL. */
int sb_mpjson_decode(const void *data, size_t len, json_t **out) __attribute__((warn_unused_result));

#endif

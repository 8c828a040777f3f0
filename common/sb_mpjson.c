/*
 * sb_mpjson: jansson <-> msgpack. Integers stay integers, reals stay reals,
 * strings are UTF-8 (msgpack str); bin is accepted on decode as a string only
 * if it is valid UTF-8 (jansson checks).
 */
#include "sb_mpjson.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_protocol.h"

void sb_mpjson_pack(msgpack_packer *pk, const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        msgpack_pack_map(pk, json_object_size(v));
        const char *key;
        json_t *val;
        json_object_foreach ((json_t *)v, key, val) {
            size_t kl = strlen(key);
            msgpack_pack_str(pk, kl);
            msgpack_pack_str_body(pk, key, kl);
            sb_mpjson_pack(pk, val);
        }
        break;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        msgpack_pack_array(pk, n);
        for (size_t i = 0; i < n; i++)
            sb_mpjson_pack(pk, json_array_get(v, i));
        break;
    }
    case JSON_STRING: {
        size_t n = json_string_length(v);
        msgpack_pack_str(pk, n);
        msgpack_pack_str_body(pk, json_string_value(v), n);
        break;
    }
    case JSON_INTEGER:
        msgpack_pack_int64(pk, json_integer_value(v));
        break;
    case JSON_REAL:
        msgpack_pack_double(pk, json_real_value(v));
        break;
    case JSON_TRUE:
        msgpack_pack_true(pk);
        break;
    case JSON_FALSE:
        msgpack_pack_false(pk);
        break;
    case JSON_NULL:
        msgpack_pack_nil(pk);
        break;
    }
}

int sb_mpjson_encode(const json_t *v, char **out, size_t *out_len)
{
    msgpack_sbuffer sbuf;
    msgpack_sbuffer_init(&sbuf);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sbuf, msgpack_sbuffer_write);
    sb_mpjson_pack(&pk, v);
    if (!sbuf.data) { /* msgpack_sbuffer leaves data NULL only if nothing was written */
        msgpack_sbuffer_destroy(&sbuf);
        return -EINVAL;
    }
    *out = sbuf.data;
    *out_len = sbuf.size;
    return 0;
}

static int sb_mpjson_from_object(const msgpack_object *o, int depth, json_t **out)
{
    *out = NULL;
    if (depth > SB_MAX_MSGPACK_DEPTH)
        return -E2BIG;
    switch (o->type) {
    case MSGPACK_OBJECT_NIL:
        *out = json_null();
        return 0;
    case MSGPACK_OBJECT_BOOLEAN:
        *out = json_boolean(o->via.boolean);
        return 0;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
        if (o->via.u64 > (uint64_t)INT64_MAX)
            return -EINVAL;
        *out = json_integer((json_int_t)o->via.u64);
        return 0;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
        *out = json_integer((json_int_t)o->via.i64);
        return 0;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
        *out = json_real(o->via.f64);
        return *out ? 0 : -EINVAL; /* jansson refuses NaN and infinities */
    /* msgpack-c may leave ptr NULL for an empty str or bin (the first string
     * of a message, e.g. [""]): jansson refuses NULL, so "" stands in (found
     * by tests/fuzz/fuzz_mpjson). */
    case MSGPACK_OBJECT_STR:
        *out = json_stringn(o->via.str.size ? o->via.str.ptr : "", o->via.str.size);
        return *out ? 0 : -EINVAL; /* invalid UTF-8 */
    case MSGPACK_OBJECT_BIN:
        *out = json_stringn(o->via.bin.size ? o->via.bin.ptr : "", o->via.bin.size);
        return *out ? 0 : -EINVAL;
    case MSGPACK_OBJECT_ARRAY: {
        json_t *arr = json_array();
        for (uint32_t i = 0; i < o->via.array.size; i++) {
            json_t *item;
            int rc = sb_mpjson_from_object(&o->via.array.ptr[i], depth + 1, &item);
            if (rc < 0) {
                json_decref(arr);
                return rc;
            }
            json_array_append_new(arr, item);
        }
        *out = arr;
        return 0;
    }
    case MSGPACK_OBJECT_MAP: {
        json_t *obj = json_object();
        for (uint32_t i = 0; i < o->via.map.size; i++) {
            const msgpack_object_kv *kv = &o->via.map.ptr[i];
            const char *key = kv->key.via.str.size ? kv->key.via.str.ptr : ""; /* as for strings above */
            if (kv->key.type != MSGPACK_OBJECT_STR || memchr(key, 0, kv->key.via.str.size)) {
                json_decref(obj);
                return -EINVAL;
            }
            json_t *val;
            int rc = sb_mpjson_from_object(&kv->val, depth + 1, &val);
            if (rc < 0) {
                json_decref(obj);
                return rc;
            }
            if (json_object_setn_new(obj, key, kv->key.via.str.size, val) < 0) {
                json_decref(obj);
                return -EINVAL;
            }
        }
        *out = obj;
        return 0;
    }
    default:
        return -EINVAL;
    }
}

/* Big-endian unsigned of n (1, 2 or 4) bytes. */
static uint64_t sb_mpjson_be(const unsigned char *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++)
        v = v << 8 | p[i];
    return v;
}

/*
 * Checks that data[0..len) is exactly one msgpack value whose every array
 * and map count is backed by bytes: each element takes at least one byte, so
 * elements still to read can never outnumber the bytes left. msgpack-c
 * allocates a container's elements from its header's count before reading
 * them, so without this a 5-byte map32 header claiming 2^32 entries made it
 * ask for 128 GiB (found by tests/fuzz/fuzz_mpjson). Iterative: no recursion
 * however deep the input. Returns 0 or -EINVAL.
 */
static int sb_mpjson_precheck(const unsigned char *p, size_t len)
{
    uint64_t pending = 1; /* values still to read */
    size_t i = 0;
    while (pending > 0) {
        if (i >= len)
            return -EINVAL;
        unsigned char b = p[i++];
        uint64_t skip = 0, count = 0; /* payload bytes; elements it adds */
        int hdr = 0;                  /* bytes of a length or count field */
        if (b <= 0x7f || b >= 0xe0 || b == 0xc0 || b == 0xc2 || b == 0xc3) {
            /* fixint, nil, bool */
        } else if (b <= 0x8f) {
            count = 2u * (b & 0x0f);
        } else if (b <= 0x9f) {
            count = b & 0x0f;
        } else if (b <= 0xbf) {
            skip = b & 0x1f;
        } else if (b == 0xc4 || b == 0xd9) { /* bin8, str8 */
            hdr = 1;
        } else if (b == 0xc5 || b == 0xda) {
            hdr = 2;
        } else if (b == 0xc6 || b == 0xdb) {
            hdr = 4;
        } else if (b >= 0xc7 && b <= 0xc9) { /* ext8/16/32: length, type, data */
            hdr = b == 0xc7 ? 1 : b == 0xc8 ? 2 : 4;
            skip = 1;
        } else if (b == 0xca) {
            skip = 4;
        } else if (b == 0xcb) {
            skip = 8;
        } else if (b >= 0xcc && b <= 0xd3) { /* uint8..64, int8..64 */
            skip = 1u << ((b - 0xcc) & 3);
        } else if (b >= 0xd4 && b <= 0xd8) { /* fixext 1..16: type, data */
            skip = 1 + (1u << (b - 0xd4));
        } else if (b >= 0xdc && b <= 0xdf) { /* array16/32, map16/32 */
            int n = (b == 0xdc || b == 0xde) ? 2 : 4;
            if (len - i < (size_t)n)
                return -EINVAL;
            count = sb_mpjson_be(p + i, n) * (b >= 0xde ? 2 : 1);
            i += (size_t)n;
        } else {
            return -EINVAL; /* 0xc1: never used */
        }
        if (hdr) {
            if (len - i < (size_t)hdr)
                return -EINVAL;
            skip += sb_mpjson_be(p + i, hdr);
            i += (size_t)hdr;
        }
        if (skip > len - i)
            return -EINVAL;
        i += (size_t)skip;
        pending = pending - 1 + count;
        if (pending > len - i)
            return -EINVAL;
    }
    return i == len ? 0 : -EINVAL;
}

/* The zone's chunk: its malloc (with msgpack's chunk header) stays under
 * glibc's largest per-thread cached size (1032 bytes). */
#define SB_MPJSON_ZONE_CHUNK 960

int sb_mpjson_decode(const void *data, size_t len, json_t **out)
{
    *out = NULL;
    if (!data || len == 0 || len > SB_MAX_FRAME_BYTES)
        return -EINVAL;
    if (sb_mpjson_precheck(data, len) < 0)
        return -EINVAL;
    /* The zone holds the object tree (strings stay in data). msgpack_unpack_next
     * would make one of 8 KiB per message: beyond malloc's per-thread cache,
     * so every frame took malloc's slow path and often a consolidation of its
     * small free chunks. Chunks of SB_MPJSON_ZONE_CHUNK stay within it. */
    msgpack_zone zone;
    if (!msgpack_zone_init(&zone, SB_MPJSON_ZONE_CHUNK))
        return -ENOMEM;
    msgpack_object obj;
    size_t off = 0;
    msgpack_unpack_return ret = msgpack_unpack(data, len, &off, &zone, &obj);
    int rc = -EINVAL;
    if (ret == MSGPACK_UNPACK_SUCCESS && off == len)
        rc = sb_mpjson_from_object(&obj, 0, out);
    msgpack_zone_destroy(&zone);
    return rc;
}

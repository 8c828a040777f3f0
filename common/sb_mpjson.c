/*
 * sb_mpjson: jansson <-> msgpack. Integers stay integers, reals stay reals,
 * strings are UTF-8 (msgpack str); bin is accepted on decode as a string only
 * if it is valid UTF-8 (jansson checks).
 */
#include "sb_mpjson.h"

#include <errno.h>
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
        json_object_foreach((json_t *)v, key, val) {
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
    case MSGPACK_OBJECT_STR:
        *out = json_stringn(o->via.str.ptr, o->via.str.size);
        return *out ? 0 : -EINVAL; /* invalid UTF-8 */
    case MSGPACK_OBJECT_BIN:
        *out = json_stringn(o->via.bin.ptr, o->via.bin.size);
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
            if (kv->key.type != MSGPACK_OBJECT_STR || memchr(kv->key.via.str.ptr, 0, kv->key.via.str.size)) {
                json_decref(obj);
                return -EINVAL;
            }
            json_t *val;
            int rc = sb_mpjson_from_object(&kv->val, depth + 1, &val);
            if (rc < 0) {
                json_decref(obj);
                return rc;
            }
            if (json_object_setn_new(obj, kv->key.via.str.ptr, kv->key.via.str.size, val) < 0) {
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

int sb_mpjson_decode(const void *data, size_t len, json_t **out)
{
    *out = NULL;
    if (!data || len == 0 || len > SB_MAX_FRAME_BYTES)
        return -EINVAL;
    msgpack_unpacked result;
    msgpack_unpacked_init(&result);
    size_t off = 0;
    msgpack_unpack_return ret = msgpack_unpack_next(&result, data, len, &off);
    int rc = -EINVAL;
    if (ret == MSGPACK_UNPACK_SUCCESS && off == len)
        rc = sb_mpjson_from_object(&result.data, 0, out);
    msgpack_unpacked_destroy(&result);
    return rc;
}

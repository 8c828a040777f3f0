/*
 * sb_evbatch: encoding and decoding EVENT bodies that hold one event or a
 * batch of them (sb_evbatch.h). Each event is packed once into a growing
 * buffer; the array header is put in front when the batch is sent.
 */
#include "sb_evbatch.h"

#include <errno.h>
#include <msgpack.h>
#include <stdbool.h>

#include "sb_mpjson.h"

/* Sends events[from..to), already packed back to back in items. */
static int sb_evbatch_flush(const msgpack_sbuffer *items, size_t from, size_t to, sb_evbatch_send_fn send, void *arg)
{
    if (to - from == 1)
        return send(items->data, items->size, from, to, arg);
    msgpack_sbuffer out;
    msgpack_sbuffer_init(&out);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &out, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, to - from);
    msgpack_sbuffer_write(&out, items->data, items->size);
    int rc = send(out.data, out.size, from, to, arg);
    msgpack_sbuffer_destroy(&out);
    return rc;
}

int sb_evbatch_encode(const json_t *events, size_t from, size_t to, sb_evbatch_send_fn send, void *arg)
{
    msgpack_sbuffer items;
    msgpack_sbuffer_init(&items);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &items, msgpack_sbuffer_write);
    int rc = 0;
    size_t start = from;
    for (size_t i = from; i < to && rc == 0; i++) {
        sb_mpjson_pack(&pk, json_array_get(events, i));
        if (items.size >= SB_EVBATCH_MAX_BYTES || i + 1 == to) {
            rc = sb_evbatch_flush(&items, start, i + 1, send, arg);
            msgpack_sbuffer_clear(&items);
            start = i + 1;
        }
    }
    msgpack_sbuffer_destroy(&items);
    return rc;
}

int sb_evbatch_decode(const void *data, size_t len, json_t **out)
{
    *out = NULL;
    json_t *v = NULL;
    if (sb_mpjson_decode(data, len, &v) < 0)
        return -EINVAL;
    if (json_is_object(v)) {
        *out = json_array();
        json_array_append_new(*out, v);
        return 0;
    }
    size_t n = json_array_size(v);
    bool ok = json_is_array(v) && n > 0 && n <= SB_EVBATCH_MAX_EVENTS;
    for (size_t i = 0; ok && i < n; i++)
        ok = json_is_object(json_array_get(v, i));
    if (!ok) {
        json_decref(v);
        return -EINVAL;
    }
    *out = v;
    return 0;
}

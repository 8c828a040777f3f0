/* fe_call_ids: sealed tool call ids (see fe_call_ids.h). */
#include "fe_call_ids.h"

#include <string.h>

#include "fe_reasoning.h"
#include "sb_alloc.h"
#include "sb_event.h"

static bool fe_call_ids_is(const json_t *item, const char *type)
{
    const char *t = json_string_value(json_object_get(item, "type"));
    return t && !strcmp(t, type);
}

/* Does the item hold something only its upstream can verify? */
static bool fe_call_ids_signed(const json_t *item)
{
    static const char *const fields[] = {"signature", "redacted", "upstream_encrypted_content", "thought_signature"};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        json_t *v = json_object_get(item, fields[i]);
        if (v && !json_is_null(v) && !json_is_false(v))
            return true;
    }
    return false;
}

void fe_call_ids_seal(const fe_sealer_t *seal, json_t *style_state, json_t *ev)
{
    enum sb_event_type t = sb_event_type_of(ev);
    json_t *item = json_object_get(ev, "item");
    if (!seal->key || (t != SB_EV_ITEM_ADDED && t != SB_EV_ITEM_DONE) || !json_is_object(item) ||
        !json_is_object(style_state))
        return;
    if (fe_call_ids_is(item, "reasoning")) {
        /* The reasoning the next call depends on (Anthropic: the thinking
         * block its assistant turn must open with). */
        if (t == SB_EV_ITEM_DONE && fe_call_ids_signed(item))
            json_object_set_new(style_state, "call_ids_reasoning", json_deep_copy(item));
        return;
    }
    const char *orig = json_string_value(json_object_get(item, "call_id"));
    if (!fe_call_ids_is(item, "function_call") || !orig)
        return;
    json_t *cache = json_object_get(style_state, "call_ids");
    json_t *known = json_object_get(cache, orig);
    if (known) {
        json_object_set(item, "call_id", known);
        return;
    }
    json_t *sig = json_object_get(item, "thought_signature");
    json_t *reasoning = json_object_get(style_state, "call_ids_reasoning");
    if (!json_is_string(sig) && !reasoning)
        return;
    json_t *payload = json_pack("{s:s, s:s}", "type", "call_id", "call_id", orig);
    if (json_is_string(sig))
        json_object_set(payload, "thought_signature", sig);
    if (reasoning)
        json_object_set(payload, "reasoning", reasoning);
    char *token = fe_reasoning_seal(seal, payload);
    json_decref(payload);
    if (!token)
        return;
    if (!cache) {
        cache = json_object();
        json_object_set_new(style_state, "call_ids", cache);
    }
    json_t *sealed = json_sprintf(FE_CALL_ID_PREFIX "%s", token);
    free(token);
    json_object_set_new(cache, orig, json_incref(sealed));
    json_object_set_new(item, "call_id", sealed);
    /* Only the first call after the reasoning carries it back. */
    json_object_del(style_state, "call_ids_reasoning");
}

void fe_call_ids_seal_event(fe_request_t *r, json_t *ev)
{
    fe_sealer_t seal = fe_reasoning_sealer(r);
    fe_call_ids_seal(&seal, r->parsed.style_state, ev);
}

/* The index of the item with this id, or -1. */
static long fe_call_ids_find(const json_t *items, const char *id)
{
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it) {
        const char *other = json_string_value(json_object_get(it, "id"));
        if (other && !strcmp(other, id))
            return (long)i;
    }
    return -1;
}

void fe_call_ids_open(const fe_request_t *r, json_t *items)
{
    if (!r->srv->seal_ready)
        return;
    for (size_t i = 0; i < json_array_size(items); i++) {
        json_t *it = json_array_get(items, i);
        bool call = fe_call_ids_is(it, "function_call");
        const char *id = json_string_value(json_object_get(it, "call_id"));
        if ((!call && !fe_call_ids_is(it, "function_call_output")) || !id ||
            strncmp(id, FE_CALL_ID_PREFIX, strlen(FE_CALL_ID_PREFIX)) != 0)
            continue;
        fe_error_t err;
        memset(&err, 0, sizeof err);
        json_t *opened = fe_reasoning_open_token(r, id + strlen(FE_CALL_ID_PREFIX), "call_id", &err);
        json_t *orig = json_object_get(opened, "call_id");
        if (!fe_call_ids_is(opened, "call_id") || !json_is_string(orig)) {
            json_decref(opened); /* not one of ours: an ordinary id */
            continue;
        }
        json_object_set(it, "call_id", orig);
        json_t *sig = json_object_get(opened, "thought_signature");
        if (call && json_is_string(sig) && !json_object_get(it, "thought_signature"))
            json_object_set(it, "thought_signature", sig);
        json_t *reasoning = json_object_get(opened, "reasoning");
        const char *rid = json_string_value(json_object_get(reasoning, "id"));
        long at = rid ? fe_call_ids_find(items, rid) : -1;
        if (call && json_is_object(reasoning) && rid && at < 0) {
            json_array_insert(items, i, reasoning);
            i++;
        } else if (call && json_is_object(reasoning) && at >= 0 &&
                   !fe_call_ids_signed(json_array_get(items, (size_t)at))) {
            /* The client echoed the reasoning in plain form (store off, no
             * encrypted_content asked for): the signed one replaces it. */
            json_array_set(items, (size_t)at, reasoning);
        }
        json_decref(opened);
    }
}

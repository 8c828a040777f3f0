/* fe_reasoning: sealed reasoning items (see fe_reasoning.h). */
#include "fe_reasoning.h"

#include <stdlib.h>
#include <string.h>

#include "sb_event.h"
#include "sb_log.h"
#include "sb_seal.h"

/* The seal's associated data: the owner, and what the blob is. */
static void fe_reasoning_context(const fe_sealer_t *s, char *buf, size_t len)
{
    snprintf(buf, len, "acct:%lld|reasoning", s->account_id);
}

fe_sealer_t fe_reasoning_sealer(const fe_request_t *r)
{
    fe_sealer_t s = {.key = r->srv->seal_ready ? &r->srv->seal_key : NULL,
                     .account_id = (long long)json_integer_value(json_object_get(r->key, "account_id"))};
    return s;
}

static bool fe_reasoning_is(const json_t *it)
{
    const char *type = json_string_value(json_object_get(it, "type"));
    return type && !strcmp(type, "reasoning");
}

static const char *const fe_reasoning_private[] = {"signature", "redacted", "upstream_encrypted_content",
                                                   "thought_signature", NULL};

void fe_reasoning_strip_private(json_t *item)
{
    for (size_t i = 0; fe_reasoning_private[i]; i++)
        json_object_del(item, fe_reasoning_private[i]);
}

char *fe_reasoning_seal(const fe_sealer_t *s, const json_t *item)
{
    if (!s->key)
        return NULL;
    char ctx[64];
    fe_reasoning_context(s, ctx, sizeof ctx);
    char *plain = json_dumps(item, JSON_COMPACT);
    char *token = plain ? sb_seal(s->key, ctx, plain, strlen(plain)) : NULL;
    free(plain);
    return token;
}

char *fe_reasoning_seal_item(const fe_request_t *r, const json_t *item)
{
    fe_sealer_t s = fe_reasoning_sealer(r);
    return fe_reasoning_seal(&s, item);
}

json_t *fe_reasoning_open_token(const fe_request_t *r, const char *token, const char *param, fe_error_t *err)
{
    fe_sealer_t s = fe_reasoning_sealer(r);
    return fe_reasoning_open(&s, token, param, err);
}

json_t *fe_reasoning_open(const fe_sealer_t *s, const char *token, const char *param, fe_error_t *err)
{
    if (!s->key) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", param,
                     "unsupported parameter: encrypted reasoning is not configured on this gateway.");
        return NULL;
    }
    char ctx[64];
    fe_reasoning_context(s, ctx, sizeof ctx);
    void *plain = NULL;
    size_t len = 0;
    json_t *opened = NULL;
    if (sb_seal_open(s->key, ctx, token, &plain, &len) == 0)
        opened = json_loadb(plain, len, 0, NULL);
    free(plain);
    if (!json_is_object(opened)) {
        json_decref(opened);
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_encrypted_content", param,
                     "The encrypted content in '%.60s' could not be verified.", param);
        return NULL;
    }
    return opened;
}

int fe_reasoning_open_items(const fe_request_t *r, json_t *items, fe_error_t *err)
{
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it) {
        const char *token = json_string_value(json_object_get(it, "encrypted_content"));
        if (!fe_reasoning_is(it) || !token)
            continue;
        const char *id = json_string_value(json_object_get(it, "id"));
        json_t *opened = fe_reasoning_open_token(r, token, "input", err);
        if (!opened)
            return -1;
        const char *opened_id = json_string_value(json_object_get(opened, "id"));
        if (!fe_reasoning_is(opened) || (id && opened_id && strcmp(id, opened_id) != 0)) {
            json_decref(opened);
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_encrypted_content", "input",
                         "The encrypted content for item %.64s could not be verified.", id ? id : "(no id)");
            return -1;
        }
        json_array_set_new(items, i, opened);
    }
    return 0;
}

json_t *fe_reasoning_seal_items(const fe_sealer_t *s, const json_t *items)
{
    json_t *out = json_array();
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it) {
        if (!fe_reasoning_is(it)) {
            json_t *copy = json_deep_copy(it);
            fe_reasoning_strip_private(copy);
            json_array_append_new(out, copy);
            continue;
        }
        char *token = fe_reasoning_seal(s, it);
        if (!token) {
            sb_error("reasoning sealing asked for but failed (is a reasoning key configured?)");
            json_decref(out);
            return NULL;
        }
        json_t *summary = json_object_get(it, "summary");
        json_t *sealed =
            json_pack("{s:s, s:O, s:o, s:s}", "type", "reasoning", "id", json_object_get(it, "id"), "summary",
                      json_is_array(summary) ? json_incref(summary) : json_array(), "encrypted_content", token);
        free(token);
        json_array_append_new(out, sealed);
    }
    return out;
}

/*
 * fe_responses_bg: a background response's snapshot (fe_responses_bg.h).
 */
#include "fe_responses_bg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_responses_tools.h"
#include "sb_alloc.h"

/* style_state keys that are the pipeline's scratch, not render flags. */
static const char *const fe_rbg_scratch[] = {"rendered", "call_ids", "call_ids_reasoning"};

json_t *fe_responses_bg_snapshot(const fe_parsed_t *p, const fe_responses_bg_meta_t *meta)
{
    json_t *canonical = json_copy(p->canonical);
    json_object_del(canonical, "input");
    json_t *tools = json_object_get(canonical, "tools");
    if (tools)
        json_object_set_new(canonical, "tools", fe_responses_tools_public(tools));
    json_t *state = json_copy(p->style_state);
    for (size_t i = 0; i < sizeof fe_rbg_scratch / sizeof fe_rbg_scratch[0]; i++)
        json_object_del(state, fe_rbg_scratch[i]);
    json_t *snap = json_pack("{s:i, s:s, s:s, s:o, s:o, s:b, s:I, s:s, s:I, s:I, s:b}", "v", 1, "response_id",
                             p->response_id, "model_id", p->model_id ? p->model_id : "", "canonical", canonical,
                             "style_state", state, "seal_reasoning", p->seal_reasoning, "start_ms",
                             (json_int_t)meta->start_ms, "request_id", meta->request_id, "account_id",
                             (json_int_t)meta->account_id, "key_id", (json_int_t)meta->key_id, "stream", meta->stream);
    if (p->previous_response_id)
        json_object_set_new(snap, "previous_response_id", json_string(p->previous_response_id));
    if (p->prompt_ref)
        json_object_set(snap, "prompt_ref", p->prompt_ref);
    if (p->conversation_id)
        json_object_set_new(snap, "conversation_id", json_string(p->conversation_id));
    if (meta->requested_model)
        json_object_set_new(snap, "requested_model", json_string(meta->requested_model));
    if (meta->trace_id[0])
        json_object_set_new(snap, "trace_id", json_string(meta->trace_id));
    return snap;
}

int fe_responses_bg_restore(const json_t *snap, fe_parsed_t *out, fe_responses_bg_meta_t *meta)
{
    const char *id = json_string_value(json_object_get(snap, "response_id"));
    const char *model = json_string_value(json_object_get(snap, "model_id"));
    const char *request_id = json_string_value(json_object_get(snap, "request_id"));
    json_t *canonical = json_object_get(snap, "canonical");
    json_t *state = json_object_get(snap, "style_state");
    if (json_integer_value(json_object_get(snap, "v")) != 1 || !id || !model || !request_id ||
        !json_is_object(canonical) || !json_is_object(state) || strlen(id) >= sizeof out->response_id ||
        strlen(request_id) >= sizeof meta->request_id)
        return -1;
    memset(meta, 0, sizeof *meta);
    snprintf(out->response_id, sizeof out->response_id, "%s", id);
    free(out->model_id);
    out->model_id = sb_xstrdup(model);
    json_decref(out->canonical);
    out->canonical = json_deep_copy(canonical);
    json_object_set_new(out->canonical, "input", json_array());
    json_decref(out->style_state);
    out->style_state = json_deep_copy(state);
    const char *prev = json_string_value(json_object_get(snap, "previous_response_id"));
    free(out->previous_response_id);
    out->previous_response_id = prev ? sb_xstrdup(prev) : NULL;
    const char *conv = json_string_value(json_object_get(snap, "conversation_id"));
    free(out->conversation_id);
    out->conversation_id = conv ? sb_xstrdup(conv) : NULL;
    json_t *prompt = json_object_get(snap, "prompt_ref");
    json_decref(out->prompt_ref);
    out->prompt_ref = prompt ? json_deep_copy(prompt) : NULL;
    out->seal_reasoning = json_is_true(json_object_get(snap, "seal_reasoning"));
    out->store = true;
    out->background = true;
    out->n = 1;
    meta->start_ms = (int64_t)json_integer_value(json_object_get(snap, "start_ms"));
    snprintf(meta->request_id, sizeof meta->request_id, "%s", request_id);
    meta->account_id = (long long)json_integer_value(json_object_get(snap, "account_id"));
    meta->key_id = (long long)json_integer_value(json_object_get(snap, "key_id"));
    meta->stream = json_is_true(json_object_get(snap, "stream"));
    const char *req_model = json_string_value(json_object_get(snap, "requested_model"));
    meta->requested_model = req_model ? sb_xstrdup(req_model) : NULL;
    const char *trace = json_string_value(json_object_get(snap, "trace_id"));
    if (trace && strlen(trace) < sizeof meta->trace_id)
        snprintf(meta->trace_id, sizeof meta->trace_id, "%s", trace);
    return 0;
}

/*
 * provider_openai_responses_parse: the openai-responses adapter's response
 * side (provider_openai_responses.h).
 *
 * Responses response -> canonical events: each output item in order as
 * item_added (a partial item), its deltas (text, arguments, reasoning text),
 * item_done (the item, upstream id kept, generated when missing). Reasoning
 * items have their encrypted_content moved to the private
 * upstream_encrypted_content (the gateway renders its own sealed
 * encrypted_content). Built-in tool call items pass through. Then usage
 * (output_tokens_details.reasoning_tokens) and completed with the response's
 * model; status "incomplete" keeps incomplete_details.reason; status "failed"
 * becomes an error event from error.code (rate_limit_exceeded 429,
 * server_error 502, invalid_* 400, ...).
 *
 * A count ({base_url}/responses/input_tokens):
 * {"object":"response.input_tokens","input_tokens":N} -> usage + completed.
 *
 * Upstream HTTP errors go through sb_provider_error_for_status (Retry-After
 * passed on); a 401's text is never passed on, as OpenAI quotes part of the
 * key in it, nor is any message that contains the credential.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "provider_openai_responses.h"
#include "provider_util.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_job.h"

/* The id prefix OpenAI uses for an item type (for the rare item without one). */
static const char *sb_oresp_id_prefix(const char *type)
{
    static const char *const prefixes[][2] = {
        {"message", "msg_"},
        {"function_call", "fc_"},
        {"reasoning", "rs_"},
        {"web_search_call", "ws_"},
        {"file_search_call", "fs_"},
        {"code_interpreter_call", "ci_"},
        {"image_generation_call", "ig_"},
        {"mcp_call", "mcp_"},
        {"mcp_list_tools", "mcpl_"},
    };
    for (size_t i = 0; type && i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strcmp(type, prefixes[i][0]))
            return prefixes[i][1];
    return "item_";
}

/*
 * One upstream output item -> a canonical item (new reference): the upstream
 * id kept (`id` is used when the item has none, else a fresh one), a
 * reasoning item's encrypted_content moved to upstream_encrypted_content.
 * `complete` checks what a finished item must have. NULL when malformed.
 */
json_t *sb_oresp_item(const json_t *up, const char *id, bool complete)
{
    const char *type = json_string_value(json_object_get(up, "type"));
    if (!json_is_object(up) || !type)
        return NULL;
    json_t *it = json_deep_copy(up);
    if (!json_is_string(json_object_get(it, "id")) || json_string_length(json_object_get(it, "id")) == 0) {
        char fresh[SB_ID_MAX];
        if (!id) {
            sb_id_new(fresh, sizeof fresh, sb_oresp_id_prefix(type), 16);
            id = fresh;
        }
        json_object_set_new(it, "id", json_string(id));
    }
    if (!strcmp(type, "reasoning")) {
        /* Never shown as is: the gateway renders its own sealed
         * encrypted_content, and sends this one back to this upstream. */
        json_t *enc = json_object_get(it, "encrypted_content");
        if (json_is_string(enc))
            json_object_set(it, "upstream_encrypted_content", enc);
        json_object_del(it, "encrypted_content");
        if (!json_is_array(json_object_get(it, "summary")))
            json_object_set_new(it, "summary", json_array());
    } else if (!strcmp(type, "function_call")) {
        if (complete &&
            (!json_is_string(json_object_get(it, "call_id")) || !json_is_string(json_object_get(it, "name"))))
            goto fail;
        const json_t *args = json_object_get(it, "arguments");
        if (!json_is_string(args)) {
            char *s = args && !json_is_null(args) ? json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
            json_object_set_new(it, "arguments", json_string(s ? s : ""));
            free(s);
        }
    } else if (!strcmp(type, "message")) {
        if (complete && !json_is_array(json_object_get(it, "content")))
            goto fail;
        if (!json_is_string(json_object_get(it, "role")))
            json_object_set_new(it, "role", json_string("assistant"));
    }
    return it;
fail:
    json_decref(it);
    return NULL;
}

/* The partial item an item_added carries for a complete item. */
json_t *sb_oresp_partial(const json_t *it)
{
    const char *type = json_string_value(json_object_get(it, "type"));
    const json_t *id = json_object_get(it, "id");
    if (!strcmp(type, "message"))
        return json_pack("{s:s, s:O, s:O, s:s, s:[]}", "type", "message", "id", id, "role", json_object_get(it, "role"),
                         "status", "in_progress", "content");
    if (!strcmp(type, "function_call"))
        return json_pack("{s:s, s:O, s:O, s:O, s:s, s:s}", "type", "function_call", "id", id, "call_id",
                         json_object_get(it, "call_id"), "name", json_object_get(it, "name"), "arguments", "", "status",
                         "in_progress");
    if (!strcmp(type, "reasoning"))
        return json_pack("{s:s, s:O, s:[]}", "type", "reasoning", "id", id, "summary");
    return json_deep_copy(it); /* built-in tool calls: nothing streams */
}

/* item_added, the deltas a streaming renderer needs, item_done (steals it). */
static void sb_oresp_emit_item(json_t *out, int index, json_t *it)
{
    const char *type = json_string_value(json_object_get(it, "type"));
    json_array_append_new(out, sb_event_item_added(index, sb_oresp_partial(it)));
    size_t i;
    const json_t *part;
    if (!strcmp(type, "message")) {
        json_array_foreach (json_object_get(it, "content"), i, part) {
            const json_t *text = json_object_get(part, "text");
            if (sb_oresp_is(json_string_value(json_object_get(part, "type")), "output_text") && json_is_string(text) &&
                json_string_length(text) > 0)
                json_array_append_new(
                    out, sb_event_text_delta(index, (int)i, json_string_value(text), json_string_length(text)));
        }
    } else if (!strcmp(type, "function_call")) {
        const json_t *args = json_object_get(it, "arguments");
        if (json_string_length(args) > 0)
            json_array_append_new(out, sb_event_args_delta(index, json_string_value(args), json_string_length(args)));
    } else if (!strcmp(type, "reasoning")) {
        json_array_foreach (json_object_get(it, "content"), i, part) {
            const json_t *text = json_object_get(part, "text");
            if (json_is_string(text) && json_string_length(text) > 0)
                json_array_append_new(
                    out, sb_event_reasoning_delta(index, json_string_value(text), json_string_length(text)));
        }
    }
    json_array_append_new(out, sb_event_item_done(index, it));
}

static bool sb_oresp_is_quota(const json_t *root)
{
    const json_t *e = json_object_get(root, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *type = json_string_value(json_object_get(e, "type"));
    return sb_oresp_is(code, "insufficient_quota") || sb_oresp_is(type, "insufficient_quota");
}

/* An upstream message that may be passed on: NULL when it contains the
 * route's credential (a misconfigured proxy may echo the request). */
static const char *sb_oresp_safe_message(const json_t *job, const char *msg)
{
    const char *ref = sb_job_route_str(job, "credential_ref");
    const char *cred = ref && *ref ? getenv(ref) : NULL;
    if (msg && cred && *cred && strstr(msg, cred))
        return NULL;
    return msg;
}

/*
 * The error event for a response that failed after a 2xx (status "failed",
 * or a streamed "error" event): error.code decides the status, the upstream
 * code is kept as the event's code.
 */
json_t *sb_oresp_failed(const json_t *job, const json_t *error)
{
    const char *code = json_string_value(json_object_get(error, "code"));
    const char *msg = sb_oresp_safe_message(job, json_string_value(json_object_get(error, "message")));
    long status = 502; /* server_error and anything unknown: the upstream failed */
    bool quota = false;
    if (sb_oresp_is(code, "invalid_api_key")) {
        status = 401; /* the route's credential, in band: the operator's problem */
    } else if (sb_oresp_is(code, "rate_limit_exceeded")) {
        status = 429;
    } else if (sb_oresp_is(code, "insufficient_quota")) {
        status = 429;
        quota = true;
    } else if (sb_oresp_is(code, "vector_store_timeout")) {
        status = 408; /* -> 504 timeout */
    } else if (code && (!strncmp(code, "invalid_", 8) || !strncmp(code, "image_", 6) ||
                        !strcmp(code, "empty_image_file") || !strcmp(code, "failed_to_download_image") ||
                        !strcmp(code, "unsupported_image_media_type") || !strcmp(code, "context_length_exceeded"))) {
        status = 400; /* the input was refused: the client's to fix */
    }
    json_t *ev = sb_provider_upstream_error(status, error, msg ? msg : "upstream response failed", quota, -1);
    if (code && json_is_null(json_object_get(ev, "code")))
        json_object_set_new(ev, "code", json_string(code));
    return ev;
}

/* usage -> the usage event, or NULL without one. */
json_t *sb_oresp_usage(const json_t *usage)
{
    if (!json_is_object(usage))
        return NULL;
    return sb_event_usage(
        json_integer_value(json_object_get(usage, "input_tokens")),
        json_integer_value(json_object_get(usage, "output_tokens")),
        json_integer_value(json_object_get(json_object_get(usage, "output_tokens_details"), "reasoning_tokens")));
}

/* A response object's outcome: the final event (completed, or error).
 * `status` is the response's status when it has none (a stream's terminal
 * event names it too). */
json_t *sb_oresp_outcome(const json_t *job, const json_t *response, const char *status, int64_t upstream_us)
{
    if (json_is_string(json_object_get(response, "status")))
        status = json_string_value(json_object_get(response, "status"));
    const char *model = json_string_value(json_object_get(response, "model"));
    if (!model)
        model = json_string_value(json_object_get(job, "model"));
    if (!status || !strcmp(status, "completed"))
        return sb_event_completed("completed", NULL, model, upstream_us);
    if (!strcmp(status, "incomplete")) {
        const char *reason =
            json_string_value(json_object_get(json_object_get(response, "incomplete_details"), "reason"));
        return sb_event_completed("incomplete", reason, model, upstream_us);
    }
    if (!strcmp(status, "failed"))
        return sb_oresp_failed(job, json_object_get(response, "error"));
    /* queued / in_progress (background was never asked for), cancelled. */
    char *msg = sb_xasprintf("upstream response ended with status '%.32s'", status);
    json_t *ev = sb_event_error(502, SB_ERR_UPSTREAM, NULL, msg);
    free(msg);
    return ev;
}

/* The error event for an upstream HTTP error status. */
static json_t *sb_oresp_http_error(const json_t *job, const sb_provider_response_t *resp, const json_t *root)
{
    /* A 401/403 never reaches the client with its text (OpenAI's quotes part
     * of the key: "Incorrect API key provided: sk-...abcd"); the status
     * mapping logs it, scrubbed, for the operator. */
    const char *msg = resp->status == 401 || resp->status == 403
                          ? sb_provider_error_message(root)
                          : sb_oresp_safe_message(job, sb_provider_error_message(root));
    return sb_provider_upstream_error(resp->status, root, msg, sb_oresp_is_quota(root), resp->retry_after);
}

void sb_oresp_parse_response(const json_t *job, const sb_provider_response_t *resp, json_t *events)
{
    json_t *out = json_array(); /* events of a good response; appended only at the end */
    json_t *final = NULL;
    json_t *root = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, NULL);
    if (resp->status < 200 || resp->status >= 300) {
        final = sb_oresp_http_error(job, resp, root);
        goto done;
    }
    if (!json_is_object(root)) {
        final = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned malformed JSON");
        goto done;
    }
    const json_t *output = json_object_get(root, "output");
    const char *status = json_string_value(json_object_get(root, "status"));
    if (!json_is_array(output) && !sb_oresp_is(status, "failed")) {
        /* Some proxies answer 200 with an error body. */
        const char *m = sb_oresp_safe_message(job, sb_provider_error_message(root));
        final = sb_provider_upstream_error(502, root, m ? m : "upstream response has no output", false, -1);
        goto done;
    }
    final = sb_oresp_outcome(job, root, NULL, resp->upstream_us);
    if (sb_event_type_of(final) == SB_EV_ERROR)
        goto done;
    size_t i;
    const json_t *up;
    json_array_foreach (output, i, up) {
        json_t *it = sb_oresp_item(up, NULL, true);
        if (!it) {
            json_decref(final);
            final = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed output item");
            goto done;
        }
        sb_oresp_emit_item(out, (int)i, it);
    }
    json_t *usage = sb_oresp_usage(json_object_get(root, "usage"));
    if (usage)
        json_array_append_new(out, usage);
    json_array_extend(events, out);
done:
    json_array_append_new(events, final);
    json_decref(out);
    json_decref(root);
}

/* {"object":"response.input_tokens","input_tokens":N} -> usage + completed. */
void sb_oresp_parse_count_response(const json_t *job, const sb_provider_response_t *resp, json_t *events)
{
    json_t *root = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, NULL);
    const json_t *n = json_object_get(root, "input_tokens");
    if (resp->status < 200 || resp->status >= 300) {
        json_array_append_new(events, sb_oresp_http_error(job, resp, root));
    } else if (!json_is_integer(n) || json_integer_value(n) < 0) {
        /* Some proxies answer 200 with an error body. */
        const char *m = sb_oresp_safe_message(job, sb_provider_error_message(root));
        json_array_append_new(events, sb_provider_error_for_status(
                                          502, m ? m : "upstream count response has no input_tokens", false, -1));
    } else {
        sb_provider_count_result(job, json_integer_value(n), resp->upstream_us, events);
    }
    json_decref(root);
}

/*
 * provider_gemini_parse: the "gemini" adapter's response side
 * (provider_gemini.h): one state machine for a whole response
 * (parse_response, here) or a stream of chunks (provider_gemini_stream.c);
 * Google's errors; the countTokens reply.
 *
 * GenerateContentResponse -> canonical events, per candidate in part order:
 * a run of thought parts -> one reasoning item, a run of text parts -> one
 * message item, each functionCall -> one function_call item. A part carrying
 * a thoughtSignature ends its item, and the signature goes on the item as the
 * private field thought_signature (the frontend strips it from plain output
 * and keeps it in stored and sealed items), so it comes back on the next turn
 * exactly where Gemini put it. Several candidates: tagged "choice", each
 * closed by choice_done; then usage and completed.
 *
 * Token counting: {"totalTokens": N} -> usage + completed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "provider_gemini.h"
#include "provider_util.h"
#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_job.h"

/* Most candidates a response may carry: an index beyond it is a broken
 * upstream, and must not size an allocation. */
#define SB_GEM_MAX_CANDIDATES 256

void sb_gem_state_init(sb_gem_state_t *st, const json_t *job, bool streaming)
{
    memset(st, 0, sizeof *st);
    st->job = job;
    st->streaming = streaming;
    st->multi = json_integer_value(json_object_get(sb_job_request(job), "n")) > 1;
    st->status = "completed";
}

void sb_gem_state_clear(sb_gem_state_t *st)
{
    for (size_t i = 0; i < st->n_cands; i++)
        free(st->cands[i].text.p);
    free(st->cands);
    json_decref(st->usage);
    free(st->model);
    json_decref(st->final);
}

void sb_gem_fail(sb_gem_state_t *st, json_t *ev)
{
    if (st->final)
        json_decref(ev);
    else
        st->final = ev;
}

static void sb_gem_emit(const sb_gem_state_t *st, json_t *out, int k, json_t *ev)
{
    if (st->multi)
        sb_event_set_choice(ev, k);
    json_array_append_new(out, ev);
}

/* Attaches a thoughtSignature (borrowed; may be NULL) to an item. */
static void sb_gem_sign(json_t *item, const json_t *sig)
{
    if (json_is_string(sig))
        json_object_set(item, "thought_signature", (json_t *)sig);
}

static void sb_gem_open_item(const sb_gem_state_t *st, json_t *out, int k, sb_gem_cand_t *c, enum sb_gem_open kind)
{
    c->open = kind;
    c->open_index = c->next_item++;
    c->text.len = 0;
    json_t *item;
    if (kind == SB_GEM_OPEN_REASONING) {
        sb_id_new(c->id, sizeof c->id, "rs_", 16);
        item = json_pack("{s:s, s:s, s:[], s:[]}", "type", "reasoning", "id", c->id, "summary", "content");
    } else {
        sb_id_new(c->id, sizeof c->id, "msg_", 16);
        item = json_pack("{s:s, s:s, s:s, s:s, s:[]}", "type", "message", "id", c->id, "role", "assistant", "status",
                         "in_progress", "content");
    }
    sb_gem_emit(st, out, k, sb_event_item_added(c->open_index, item));
}

/* Ends the open item, if any, with its complete form (and sig). */
static void sb_gem_close_item(const sb_gem_state_t *st, json_t *out, int k, sb_gem_cand_t *c, const json_t *sig)
{
    if (c->open == SB_GEM_OPEN_NONE)
        return;
    /* The deltas were jansson strings, so their concatenation is UTF-8. */
    json_t *text = json_stringn(c->text.p ? c->text.p : "", c->text.len);
    json_t *item;
    if (c->open == SB_GEM_OPEN_REASONING)
        item = json_pack("{s:s, s:s, s:[], s:[{s:s, s:o}]}", "type", "reasoning", "id", c->id, "summary", "content",
                         "type", "reasoning_text", "text", text);
    else
        item =
            json_pack("{s:s, s:s, s:s, s:s, s:[{s:s, s:o, s:[]}]}", "type", "message", "id", c->id, "role", "assistant",
                      "status", "completed", "content", "type", "output_text", "text", text, "annotations");
    sb_gem_sign(item, sig);
    sb_gem_emit(st, out, k, sb_event_item_done(c->open_index, item));
    c->open = SB_GEM_OPEN_NONE;
}

static int sb_gem_function_call_out(const sb_gem_state_t *st, json_t *out, int k, sb_gem_cand_t *c, const json_t *fc,
                                    const json_t *sig)
{
    const json_t *name = json_object_get(fc, "name");
    const json_t *args = json_object_get(fc, "args");
    if (!json_is_string(name) || (args && !json_is_null(args) && !json_is_object(args)))
        return -EINVAL;
    char *s = json_is_object(args) ? json_dumps(args, JSON_COMPACT) : NULL;
    json_t *arguments = json_string(s ? s : "{}");
    free(s);
    char call_id[SB_ID_MAX], id[SB_ID_MAX];
    const char *given = json_string_value(json_object_get(fc, "id"));
    if (given && *given)
        snprintf(call_id, sizeof call_id, "%s", given);
    if (!given || !*given || strlen(given) >= sizeof call_id)
        sb_id_new(call_id, sizeof call_id, "call_", SB_GEM_CALL_ID_BYTES);
    sb_id_new(id, sizeof id, "fc_", 16);
    int index = c->next_item++;
    /* The signature is on the added item too: the frontend seals it into the
     * call id the client sees from the call's first event on. */
    json_t *added = json_pack("{s:s, s:s, s:s, s:O, s:s, s:s}", "type", "function_call", "id", id, "call_id", call_id,
                              "name", name, "arguments", "", "status", "in_progress");
    sb_gem_sign(added, sig);
    sb_gem_emit(st, out, k, sb_event_item_added(index, added));
    sb_gem_emit(st, out, k, sb_event_args_delta(index, json_string_value(arguments), json_string_length(arguments)));
    json_t *item = json_pack("{s:s, s:s, s:s, s:O, s:o, s:s}", "type", "function_call", "id", id, "call_id", call_id,
                             "name", name, "arguments", arguments, "status", "completed");
    sb_gem_sign(item, sig);
    sb_gem_emit(st, out, k, sb_event_item_done(index, item));
    return 0;
}

/* One response part of candidate k. Parts other than text, thought and
 * functionCall (code execution, inline media) answer tools this adapter
 * never enables; they are skipped. */
static void sb_gem_part_out(sb_gem_state_t *st, json_t *out, int k, sb_gem_cand_t *c, const json_t *part)
{
    const json_t *sig = json_object_get(part, "thoughtSignature");
    if (!json_is_string(sig) || json_string_length(sig) == 0)
        sig = NULL;
    const json_t *fc = json_object_get(part, "functionCall");
    if (fc) {
        sb_gem_close_item(st, out, k, c, NULL);
        if (!json_is_object(fc) || sb_gem_function_call_out(st, out, k, c, fc, sig) < 0)
            sb_gem_fail(st, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed function call"));
        return;
    }
    const json_t *text = json_object_get(part, "text");
    if (!json_is_string(text))
        return;
    enum sb_gem_open kind =
        json_is_true(json_object_get(part, "thought")) ? SB_GEM_OPEN_REASONING : SB_GEM_OPEN_MESSAGE;
    size_t len = json_string_length(text);
    if (len == 0 && !sig)
        return;
    /* An empty part that only carries a signature (streams end a run that
     * way) signs the item before it. */
    if (len == 0 && c->open != SB_GEM_OPEN_NONE) {
        sb_gem_close_item(st, out, k, c, sig);
        return;
    }
    if (c->open != kind) {
        sb_gem_close_item(st, out, k, c, NULL);
        sb_gem_open_item(st, out, k, c, kind);
    }
    if (len > 0) {
        sb_buf_add(&c->text, json_string_value(text), len);
        const char *s = json_string_value(text);
        sb_gem_emit(st, out, k,
                    kind == SB_GEM_OPEN_REASONING ? sb_event_reasoning_delta(c->open_index, s, len)
                                                  : sb_event_text_delta(c->open_index, 0, s, len));
    }
    if (sig) /* a signature ends its run */
        sb_gem_close_item(st, out, k, c, sig);
}

/* finishReason -> status and incomplete_reason. Returns -1 for the reasons
 * that mean the model's output is unusable (a broken function call). */
static int sb_gem_finish_reason(const char *finish, const char **status, const char **reason)
{
    static const char *const filtered[] = {"SAFETY",
                                           "RECITATION",
                                           "BLOCKLIST",
                                           "PROHIBITED_CONTENT",
                                           "SPII",
                                           "IMAGE_SAFETY",
                                           "IMAGE_PROHIBITED_CONTENT",
                                           "IMAGE_RECITATION"};
    static const char *const broken[] = {"MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS"};
    *status = "completed";
    *reason = NULL;
    if (!finish)
        return 0;
    if (!strcmp(finish, "MAX_TOKENS")) {
        *status = "incomplete";
        *reason = "max_output_tokens";
        return 0;
    }
    for (size_t i = 0; i < sizeof filtered / sizeof filtered[0]; i++) {
        if (!strcmp(finish, filtered[i])) {
            *status = "incomplete";
            *reason = "content_filter";
            return 0;
        }
    }
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++)
        if (!strcmp(finish, broken[i]))
            return -1;
    return 0; /* STOP, and OTHER/LANGUAGE/...: what came is the answer */
}

/* Closes candidate k: its open item, its choice_done. */
static void sb_gem_end_candidate(sb_gem_state_t *st, json_t *out, int k, sb_gem_cand_t *c, const char *finish)
{
    const char *status, *reason;
    if (sb_gem_finish_reason(finish, &status, &reason) < 0) {
        char *msg = sb_xasprintf("the model produced an unusable function call (finishReason %.40s)", finish);
        sb_gem_fail(st, sb_event_error(502, SB_ERR_UPSTREAM, NULL, msg));
        free(msg);
        return;
    }
    sb_gem_close_item(st, out, k, c, NULL);
    c->done = true;
    if (st->multi)
        json_array_append_new(out, sb_event_choice_done(k, status, reason));
    if (reason && !strcmp(st->status, "completed")) {
        st->status = status;
        st->reason = reason;
    }
}

static sb_gem_cand_t *sb_gem_cand(sb_gem_state_t *st, size_t k)
{
    if (k >= st->n_cands) {
        st->cands = sb_xrealloc(st->cands, (k + 1) * sizeof *st->cands);
        memset(st->cands + st->n_cands, 0, (k + 1 - st->n_cands) * sizeof *st->cands);
        st->n_cands = k + 1;
    }
    return &st->cands[k];
}

/* The error event for a Google error body (root: {"error":{...}}, or a
 * one-element array of it) with this HTTP status. */
static json_t *sb_gem_error_event(long status, const json_t *root, long retry_after)
{
    if (json_is_array(root))
        root = json_array_get(root, 0);
    const json_t *details = json_object_get(json_object_get(root, "error"), "details");
    size_t i;
    const json_t *d;
    json_array_foreach (details, i, d) {
        const char *reason = json_string_value(json_object_get(d, "reason"));
        if (reason && !strcmp(reason, "API_KEY_INVALID"))
            /* Google says a bad key with a 400: it is the gateway's key, not
             * the client's, so it goes the way of a 401 (a 502 for the
             * client, the cause in the operator's log). */
            return sb_provider_error_for_status(401, sb_provider_error_message(root), false, -1);
        static const char retry_info[] = "google.rpc.RetryInfo";
        const char *type = json_string_value(json_object_get(d, "@type"));
        const char *delay = json_string_value(json_object_get(d, "retryDelay"));
        size_t tn = type ? strlen(type) : 0, rn = sizeof retry_info - 1;
        if (retry_after < 0 && status == 429 && delay && tn >= rn && !strcmp(type + tn - rn, retry_info)) {
            /* A Duration in JSON: "37s", "0.5s". */
            char *end;
            double secs = strtod(delay, &end);
            if (end != delay && !strcmp(end, "s") && secs >= 0 && secs < 86400) {
                retry_after = (long)secs;
                if ((double)retry_after < secs) /* round up: never retry early */
                    retry_after++;
            }
        }
    }
    return sb_provider_upstream_error(status, root, sb_provider_error_message(root), false, retry_after);
}

/* One GenerateContentResponse: the whole response, or one stream chunk. */
void sb_gem_chunk(sb_gem_state_t *st, json_t *out, const json_t *root)
{
    if (st->final)
        return;
    st->any_chunk = true;
    if (!json_is_object(root)) {
        sb_gem_fail(st, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned malformed JSON"));
        return;
    }
    const json_t *error = json_object_get(root, "error");
    if (error) { /* an error in the middle of a stream, or in a 200 body */
        json_int_t code = json_integer_value(json_object_get(error, "code"));
        sb_gem_fail(st, sb_gem_error_event(code >= 400 && code < 600 ? (long)code : 502, root, -1));
        return;
    }
    const char *model = json_string_value(json_object_get(root, "modelVersion"));
    if (model && *model) {
        free(st->model);
        st->model = sb_xstrdup(model);
    }
    const json_t *usage = json_object_get(root, "usageMetadata");
    if (json_is_object(usage)) {
        json_decref(st->usage);
        st->usage = json_incref((json_t *)usage);
    }
    const json_t *cands = json_object_get(root, "candidates");
    if (json_array_size(cands) == 0) {
        const char *block = json_string_value(json_object_get(json_object_get(root, "promptFeedback"), "blockReason"));
        if (block) {
            char *msg = sb_xasprintf("Gemini blocked the prompt (blockReason %.40s)", block);
            sb_gem_fail(st, sb_event_error(400, SB_ERR_INVALID_REQUEST, "content_filter", msg));
            free(msg);
        }
        return;
    }
    size_t pos;
    const json_t *cand;
    json_array_foreach (cands, pos, cand) {
        const json_t *index = json_object_get(cand, "index");
        json_int_t k = json_is_integer(index) ? json_integer_value(index) : (json_int_t)pos;
        if (k < 0 || k >= SB_GEM_MAX_CANDIDATES) {
            sb_gem_fail(st, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a candidate out of range"));
            return;
        }
        if (k > 0 && !st->multi)
            continue; /* one choice asked for; an extra one has nowhere to go */
        sb_gem_cand_t *c = sb_gem_cand(st, (size_t)k);
        if (c->done)
            continue;
        c->seen = true;
        st->any_candidate = true;
        size_t i;
        const json_t *part;
        json_array_foreach (json_object_get(json_object_get(cand, "content"), "parts"), i, part) {
            sb_gem_part_out(st, out, (int)k, c, part);
            if (st->final)
                return;
        }
        const char *finish = json_string_value(json_object_get(cand, "finishReason"));
        if (finish && strcmp(finish, "FINISH_REASON_UNSPECIFIED")) {
            sb_gem_end_candidate(st, out, (int)k, c, finish);
            if (st->final)
                return;
        }
    }
}

/* usageMetadata -> usage: thoughts are output tokens Gemini counts apart;
 * tool-use prompt tokens (search results read) are input. */
static json_t *sb_gem_usage(const json_t *u)
{
    json_int_t thoughts = json_integer_value(json_object_get(u, "thoughtsTokenCount"));
    return sb_event_usage(json_integer_value(json_object_get(u, "promptTokenCount")) +
                              json_integer_value(json_object_get(u, "toolUsePromptTokenCount")),
                          json_integer_value(json_object_get(u, "candidatesTokenCount")) + thoughts, thoughts);
}

/* The end of the response: closes what is open, appends usage and completed,
 * or the error that ended it. */
void sb_gem_end(sb_gem_state_t *st, json_t *out, int64_t upstream_us)
{
    if (!st->final && !st->any_candidate)
        sb_gem_fail(st, sb_event_error(502, SB_ERR_UPSTREAM, NULL,
                                       st->any_chunk ? "upstream response has no candidates"
                                                     : "upstream returned an empty response"));
    for (size_t k = 0; !st->final && k < st->n_cands; k++) {
        sb_gem_cand_t *c = &st->cands[k];
        if (!c->seen || c->done)
            continue;
        if (st->streaming) /* every stream ends with a finishReason */
            sb_gem_fail(st,
                        sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream stream ended before the response did"));
        else
            sb_gem_end_candidate(st, out, (int)k, c, NULL);
    }
    if (st->final) {
        json_array_append_new(out, st->final);
        st->final = NULL;
        return;
    }
    if (st->usage)
        json_array_append_new(out, sb_gem_usage(st->usage));
    const char *model = st->model ? st->model : json_string_value(json_object_get(st->job, "model"));
    json_array_append_new(out, sb_event_completed(st->status, st->reason, model, upstream_us));
}

void sb_gem_parse_response(const json_t *job, const sb_provider_response_t *resp, json_t *events)
{
    json_t *root = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, NULL);
    if (resp->status < 200 || resp->status >= 300) {
        json_array_append_new(events, sb_gem_error_event(resp->status, root, resp->retry_after));
        json_decref(root);
        return;
    }
    sb_gem_state_t st;
    sb_gem_state_init(&st, job, false);
    if (json_array_size(json_object_get(root, "candidates")) > 1)
        st.multi = true;
    json_t *out = json_array(); /* appended only when the response is good */
    sb_gem_chunk(&st, out, root);
    sb_gem_end(&st, out, resp->upstream_us);
    json_t *last = json_array_get(out, json_array_size(out) - 1);
    if (sb_event_type_of(last) == SB_EV_ERROR)
        json_array_append(events, last);
    else
        json_array_extend(events, out);
    json_decref(out);
    sb_gem_state_clear(&st);
    json_decref(root);
}

/* CountTokensResponse {"totalTokens": N, ...} -> usage + completed. proto3
 * JSON leaves a zero out, so an object without totalTokens counts 0. */
void sb_gem_parse_count_response(const json_t *job, const sb_provider_response_t *resp, json_t *events)
{
    json_t *root = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, NULL);
    const json_t *n = json_object_get(root, "totalTokens");
    if (resp->status < 200 || resp->status >= 300)
        json_array_append_new(events, sb_gem_error_event(resp->status, root, resp->retry_after));
    else if (json_is_object(json_object_get(root, "error")))
        json_array_append_new(events, sb_gem_error_event(502, root, -1));
    else if (!json_is_object(root) || (n && (!json_is_integer(n) || json_integer_value(n) < 0)))
        json_array_append_new(
            events, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed countTokens response"));
    else
        sb_provider_count_result(job, n ? json_integer_value(n) : 0, resp->upstream_us, events);
    json_decref(root);
}

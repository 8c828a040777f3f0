/*
 * emu_openai_chat: OpenAI Chat Completions (POST /v1/chat/completions) and the
 * OpenAI model list (GET /v1/models).
 *
 * The request is first validated the way the real API does it
 * (emu_openai_chat_check.c); emu_answer.c, shared with the other protocols,
 * decides the answer. The reply is deterministic, a function of the request
 * and the directives in its last user message: "You said: <last user
 * text>" with an acknowledgement of each attachment, "Tool result: <tool
 * content>", a CALL directive's tool calls, a call forced by tool_choice with
 * arguments generated from the tool's schema, structured output generated from
 * response_format, or a refusal; plus n choices, reasoning_content, stop and
 * length cuts, logprobs, usage. Everything is described at the top of main.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu_internal.h"
#include "sb_alloc.h"
#include "sb_id.h"

#define MSG_MAX 512

/* ---- request text ------------------------------------------------------------------ */

/* The text of a message: a string content, or its text parts joined by one space. Owned. */
static char *message_text(const json_t *m)
{
    json_t *content = json_object_get(m, "content");
    if (json_is_string(content))
        return sb_xstrdup(json_string_value(content));
    char *out = sb_xstrdup("");
    if (!json_is_array(content))
        return out;
    size_t i;
    json_t *part;
    bool first = true;
    json_array_foreach (content, i, part) {
        const char *type = json_string_value(json_object_get(part, "type"));
        const char *text = json_string_value(json_object_get(part, "text"));
        if (!type || strcmp(type, "text") || !text)
            continue;
        char *joined = sb_xasprintf("%s%s%s", out, first ? "" : " ", text);
        free(out);
        out = joined;
        first = false;
    }
    return out;
}

/*
 * The acknowledgements of a user message's attachments joined by one space
 * ("" if none; owned), adding their prompt-token cost to *tokens. Called for
 * every user message (for usage); only the last one's text is kept.
 */
static char *message_acks(const json_t *m, long long *tokens)
{
    char *out = sb_xstrdup("");
    json_t *content = json_object_get(m, "content");
    size_t i;
    json_t *part;
    json_array_foreach (content, i, part) {
        char *ack = sb_emu_part_ack(part, tokens);
        if (!ack)
            continue;
        char *joined = sb_xasprintf("%s%s%s", out, *out ? " " : "", ack);
        free(out);
        free(ack);
        out = joined;
    }
    return out;
}

/* Function tools for the engine (owned array, borrowing names and parameter schemas). */
static struct sb_emu_fn *read_fns(const json_t *body, size_t *nfns)
{
    json_t *tools = json_object_get(body, "tools");
    struct sb_emu_fn *fns = sb_xcalloc(json_array_size(tools) + 1, sizeof *fns);
    *nfns = 0;
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        json_t *fn = json_object_get(t, "function");
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (!name)
            continue;
        fns[*nfns].name = name;
        fns[*nfns].schema = json_object_get(fn, "parameters");
        (*nfns)++;
    }
    return fns;
}

/*
 * The tool results that end the conversation (its trailing role "tool"
 * messages), each named after the call it answers: the assistant tool_calls
 * entry with its tool_call_id. Owned array (sb_emu_tool_results_free).
 */
static struct sb_emu_tool_result *read_results(const json_t *messages, size_t *n)
{
    size_t nmsg = json_array_size(messages), first = nmsg;
    while (first > 0 &&
           !strcmp(json_string_value(json_object_get(json_array_get(messages, first - 1), "role")), "tool"))
        first--;
    *n = nmsg - first;
    struct sb_emu_tool_result *out = sb_xcalloc(*n + 1, sizeof *out);
    for (size_t i = first; i < nmsg; i++) {
        json_t *m = json_array_get(messages, i);
        const char *id = json_string_value(json_object_get(m, "tool_call_id"));
        out[i - first].text = message_text(m);
        for (size_t j = first; j-- > 0 && id && !out[i - first].name;) {
            size_t k;
            json_t *tc;
            json_array_foreach (json_object_get(json_array_get(messages, j), "tool_calls"), k, tc) {
                const char *tid = json_string_value(json_object_get(tc, "id"));
                if (tid && !strcmp(tid, id)) {
                    out[i - first].name = json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
                    break;
                }
            }
        }
    }
    return out;
}

/* The function tool_choice forces ("required": the first function tool), or NULL. */
static const char *forced_tool(const json_t *body)
{
    json_t *choice = json_object_get(body, "tool_choice");
    if (json_is_string(choice) && !strcmp(json_string_value(choice), "required")) {
        size_t i;
        json_t *t;
        json_array_foreach (json_object_get(body, "tools"), i, t) {
            const char *name = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
            if (name && !strcmp(json_string_value(json_object_get(t, "type")), "function"))
                return name;
        }
        return NULL;
    }
    const char *type = json_string_value(json_object_get(choice, "type"));
    if (type && !strcmp(type, "function"))
        return json_string_value(json_object_get(json_object_get(choice, "function"), "name"));
    return NULL;
}

/* ---- the answer ---------------------------------------------------------------------- */

/* The engine's answer (emu_answer.c) plus what only Chat Completions has. */
struct chat_answer {
    const char *model;
    char id[SB_ID_MAX];
    long long created;
    const char *service_tier;
    const struct sb_emu_answer *a; /* borrowed */
    size_t n;
    char (*call_ids)[SB_ID_MAX]; /* owned, a->ncalls entries */
    bool logprobs;
    bool top_logprobs; /* top_logprobs >= 1: each entry lists its own token */
    long long prompt_tokens, completion_tokens, reasoning_tokens;
};

/* Choice i's content, or NULL (tool calls, refusal). */
static const char *choice_content(const struct chat_answer *a, size_t i)
{
    const struct sb_emu_choice *c = &a->a->choices[i];
    return c->finish == SB_EMU_FINISH_REFUSAL ? NULL : c->text;
}

static const char *choice_refusal(const struct chat_answer *a, size_t i)
{
    const struct sb_emu_choice *c = &a->a->choices[i];
    return c->finish == SB_EMU_FINISH_REFUSAL ? c->text : NULL;
}

static const char *finish_reason(const struct chat_answer *a, size_t i)
{
    switch (a->a->choices[i].finish) {
    case SB_EMU_FINISH_LENGTH:
        return "length";
    case SB_EMU_FINISH_TOOL_CALLS:
        return "tool_calls";
    default:
        return "stop";
    }
}

/* ---- serialisation ------------------------------------------------------------------ */

static json_t *usage_json(const struct chat_answer *a)
{
    return json_pack("{s:I, s:I, s:I, s:{s:i, s:i}, s:{s:I, s:i, s:i, s:i}}", "prompt_tokens",
                     (json_int_t)a->prompt_tokens, "completion_tokens", (json_int_t)a->completion_tokens,
                     "total_tokens", (json_int_t)(a->prompt_tokens + a->completion_tokens), "prompt_tokens_details",
                     "cached_tokens", 0, "audio_tokens", 0, "completion_tokens_details", "reasoning_tokens",
                     (json_int_t)a->reasoning_tokens, "audio_tokens", 0, "accepted_prediction_tokens", 0,
                     "rejected_prediction_tokens", 0);
}

static json_t *tool_calls_json(const struct chat_answer *a)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < a->a->ncalls; i++)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", a->call_ids[i], "type", "function",
                                             "function", "name", a->a->calls[i].name, "arguments",
                                             a->a->calls[i].arguments));
    return arr;
}

/* One logprobs entry: the piece is the token, logprob 0 (the emulator is certain). */
static json_t *logprob_entry(const char *p, size_t len, bool top)
{
    json_t *bytes = json_array();
    for (size_t i = 0; i < len; i++)
        json_array_append_new(bytes, json_integer((unsigned char)p[i]));
    json_t *e = json_pack("{s:s%, s:f, s:o}", "token", p, len, "logprob", 0.0, "bytes", bytes);
    json_t *tops = json_array();
    if (top)
        json_array_append_new(tops, json_deep_copy(e));
    json_object_set_new(e, "top_logprobs", tops);
    return e;
}

/* choices[].logprobs for text (content or refusal) sent whole or as one piece. */
static json_t *logprobs_json(const struct chat_answer *a, const char *text, size_t len, bool refusal, bool whole)
{
    json_t *list = json_array();
    if (whole) {
        const char *p = text;
        while (*p) {
            size_t l = sb_emu_next_word_piece(p);
            json_array_append_new(list, logprob_entry(p, l, a->top_logprobs));
            p += l;
        }
    } else {
        json_array_append_new(list, logprob_entry(text, len, a->top_logprobs));
    }
    return refusal ? json_pack("{s:n, s:o}", "content", "refusal", list)
                   : json_pack("{s:o, s:n}", "content", list, "refusal");
}

static void reply_complete(struct sb_emu_reply *rep, const struct chat_answer *a)
{
    json_t *choices = json_array();
    for (size_t i = 0; i < a->n; i++) {
        const char *content = choice_content(a, i), *refusal = choice_refusal(a, i);
        json_t *msg = json_pack("{s:s, s:s?}", "role", "assistant", "content", content);
        if (a->a->reasoning)
            json_object_set_new(msg, "reasoning_content", json_string(a->a->reasoning));
        json_object_set_new(msg, "refusal", refusal ? json_string(refusal) : json_null());
        json_object_set_new(msg, "annotations", json_array());
        if (a->a->ncalls)
            json_object_set_new(msg, "tool_calls", tool_calls_json(a));
        json_t *lp = json_null();
        if (a->logprobs && (content || refusal)) {
            json_decref(lp);
            lp = refusal ? logprobs_json(a, refusal, 0, true, true) : logprobs_json(a, content, 0, false, true);
        }
        json_array_append_new(choices, json_pack("{s:I, s:o, s:o, s:s}", "index", (json_int_t)i, "message", msg,
                                                 "logprobs", lp, "finish_reason", finish_reason(a, i)));
    }
    json_t *body = json_pack("{s:s, s:s, s:I, s:s, s:o, s:o, s:s, s:n}", "id", a->id, "object", "chat.completion",
                             "created", (json_int_t)a->created, "model", a->model, "choices", choices, "usage",
                             usage_json(a), "service_tier", a->service_tier, "system_fingerprint");
    sb_emu_reply_json(rep, 200, body);
    json_decref(body);
}

static json_t *chunk_json(const struct chat_answer *a, json_t *choices /* stolen */, bool with_usage_null)
{
    json_t *c = json_pack("{s:s, s:s, s:I, s:s, s:s, s:n, s:o}", "id", a->id, "object", "chat.completion.chunk",
                          "created", (json_int_t)a->created, "model", a->model, "service_tier", a->service_tier,
                          "system_fingerprint", "choices", choices);
    if (with_usage_null)
        json_object_set_new(c, "usage", json_null());
    return c;
}

static void push_delta(struct sb_emu_reply *rep, const struct chat_answer *a, size_t index, json_t *delta,
                       json_t *logprobs /* stolen; NULL = null */, const char *finish, bool usage_null)
{
    json_t *choice = json_pack("{s:I, s:o, s:o, s:s?}", "index", (json_int_t)index, "delta", delta, "logprobs",
                               logprobs ? logprobs : json_null(), "finish_reason", finish);
    json_t *chunk = chunk_json(a, json_pack("[o]", choice), usage_null);
    sb_emu_reply_sse_json(rep, chunk);
    json_decref(chunk);
}

/* Streams text word by word as delta.<field>; with logprobs on content/refusal. */
static void stream_text(struct sb_emu_reply *rep, const struct chat_answer *a, size_t index, const char *field,
                        const char *text, bool include_usage)
{
    bool is_refusal = !strcmp(field, "refusal");
    bool with_lp = a->logprobs && (is_refusal || !strcmp(field, "content"));
    const char *p = text;
    while (*p) {
        size_t len = sb_emu_next_word_piece(p);
        push_delta(rep, a, index, json_pack("{s:s%}", field, p, len),
                   with_lp ? logprobs_json(a, p, len, is_refusal, false) : NULL, NULL, include_usage);
        p += len;
    }
}

static void reply_stream(struct sb_emu_reply *rep, const struct chat_answer *a, bool include_usage)
{
    rep->status = 200;
    rep->stream = true;
    rep->content_type = "text/event-stream; charset=utf-8";
    const struct sb_emu_answer *e = a->a;
    for (size_t i = 0; i < a->n; i++) {
        const char *content = choice_content(a, i), *refusal = choice_refusal(a, i);
        bool role_sent = true;
        if (refusal)
            push_delta(rep, a, i, json_pack("{s:s, s:n, s:s}", "role", "assistant", "content", "refusal", ""), NULL,
                       NULL, include_usage);
        else if (e->ncalls == 0)
            push_delta(rep, a, i, json_pack("{s:s, s:s, s:n}", "role", "assistant", "content", "", "refusal"), NULL,
                       NULL, include_usage);
        else if (e->reasoning)
            push_delta(rep, a, i, json_pack("{s:s, s:n, s:n}", "role", "assistant", "content", "refusal"), NULL, NULL,
                       include_usage);
        else
            role_sent = false; /* the first tool call delta carries the role */
        if (e->reasoning)
            stream_text(rep, a, i, "reasoning_content", e->reasoning, include_usage);
        if (refusal)
            stream_text(rep, a, i, "refusal", refusal, include_usage);
        else if (content)
            stream_text(rep, a, i, "content", content, include_usage);
        for (size_t k = 0; k < e->ncalls; k++) {
            json_t *head = json_pack("[{s:I, s:s, s:s, s:{s:s, s:s}}]", "index", (json_int_t)k, "id", a->call_ids[k],
                                     "type", "function", "function", "name", e->calls[k].name, "arguments", "");
            json_t *delta = k == 0 && !role_sent ? json_pack("{s:s, s:n, s:o, s:n}", "role", "assistant", "content",
                                                             "tool_calls", head, "refusal")
                                                 : json_pack("{s:o}", "tool_calls", head);
            push_delta(rep, a, i, delta, NULL, NULL, include_usage);
            const char *p = e->calls[k].arguments;
            while (*p) {
                size_t len = sb_emu_next_args_piece(p);
                push_delta(rep, a, i,
                           json_pack("{s:[{s:I, s:{s:s%}}]}", "tool_calls", "index", (json_int_t)k, "function",
                                     "arguments", p, len),
                           NULL, NULL, include_usage);
                p += len;
            }
        }
        push_delta(rep, a, i, json_object(), NULL, finish_reason(a, i), include_usage);
    }
    if (include_usage) {
        json_t *chunk = chunk_json(a, json_array(), false);
        json_object_set_new(chunk, "usage", usage_json(a));
        sb_emu_reply_sse_json(rep, chunk);
        json_decref(chunk);
    }
    sb_emu_reply_chunk(rep, "data: [DONE]\n\n");
}

/* Endless ([[emu:endless]]): the role delta and the content deltas, then SB_EMU_ENDLESS_TEXT deltas forever. */
static void reply_endless(struct sb_emu_reply *rep, const struct chat_answer *a, bool include_usage)
{
    sb_emu_reply_stream_start(rep);
    push_delta(rep, a, 0, json_pack("{s:s, s:s, s:n}", "role", "assistant", "content", "", "refusal"), NULL, NULL,
               include_usage);
    const char *content = choice_content(a, 0);
    if (content)
        stream_text(rep, a, 0, "content", content, include_usage);
    json_t *choice = json_pack("{s:i, s:{s:s}, s:n, s:n}", "index", 0, "delta", "content", SB_EMU_ENDLESS_TEXT,
                               "logprobs", "finish_reason");
    sb_emu_reply_endless(rep, "data: ", chunk_json(a, json_pack("[o]", choice), include_usage), "\n\n", NULL, 0);
}

static void context_error(struct sb_emu_call *call, long long tokens, long long limit)
{
    char msg[MSG_MAX];
    snprintf(msg, sizeof msg,
             "This model's maximum context length is %lld tokens. However, your messages resulted in %lld tokens. "
             "Please reduce the length of the messages.",
             limit, tokens);
    sb_emu_openai_error(&call->reply, 400, msg, "invalid_request_error", "messages", "context_length_exceeded");
}

/* A stream that fails after its first chunk with OpenAI's in-stream error. */
static void leak_error(struct sb_emu_call *call, int status, const char *message, bool stream)
{
    if (!stream) {
        sb_emu_openai_leak_error(call, status, message);
        return;
    }
    struct sb_emu_reply *rep = &call->reply;
    sb_emu_reply_stream_start(rep);
    json_t *first =
        json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:{s:s, s:s}, s:n, s:n}]}", "id", "chatcmpl-leak", "object",
                  "chat.completion.chunk", "created", (json_int_t)time(NULL), "model", call->model ? call->model : "",
                  "choices", "index", 0, "delta", "role", "assistant", "content", "", "logprobs", "finish_reason");
    sb_emu_reply_sse_json(rep, first);
    json_decref(first);
    json_t *err =
        json_pack("{s:{s:s, s:s, s:n, s:n}}", "error", "message", message, "type", "server_error", "param", "code");
    sb_emu_reply_sse_json(rep, err);
    json_decref(err);
}

static const struct sb_emu_fault_errors chat_errors = {.status = sb_emu_openai_status_error,
                                                       .context = context_error,
                                                       .context_window = 128000,
                                                       .leak = leak_error,
                                                       .auth = sb_emu_openai_auth_error};

/* ---- the handler ------------------------------------------------------------------------ */

void sb_emu_openai_chat_handle(struct sb_emu_call *call)
{
    struct sb_emu_reply *rep = &call->reply;
    struct sb_emu_answer ans = {0};
    struct chat_answer a = {0};
    struct sb_emu_fn *fns = NULL;
    struct sb_emu_tool_result *results = NULL;
    size_t nresults = 0;
    char *user_text = NULL, *acks = NULL, *tool_text = NULL;
    char err[MSG_MAX];

    call->protocol = "openai-chat";
    sb_emu_call_set_model_from_body(call);
    if (sb_emu_openai_check_auth(call))
        return;
    if (!sb_emu_openai_chat_check(call))
        return;

    json_t *body = call->json;
    json_t *messages = json_object_get(body, "messages");
    size_t nmsg = json_array_size(messages);
    json_t *last = json_array_get(messages, nmsg - 1);
    json_t *last_user = NULL;
    long long prompt = 0;
    for (size_t i = 0; i < nmsg; i++) {
        json_t *m = json_array_get(messages, i);
        char *t = message_text(m);
        prompt += 4 + (long long)sb_emu_count_words(t);
        free(t);
        if (!strcmp(json_string_value(json_object_get(m, "role")), "user")) {
            last_user = m;
            free(acks);
            acks = message_acks(m, &prompt);
        }
    }

    /* Directives come from the last user message, whichever message is last. */
    user_text = last_user ? message_text(last_user) : sb_xstrdup("");
    if (sb_emu_answer_begin(&ans, user_text, err, sizeof err) < 0) {
        sb_emu_openai_invalid(call, "messages", NULL, "%s", err);
        goto done;
    }
    bool stream = json_is_true(json_object_get(body, "stream"));
    if (sb_emu_fault_stage(call, &ans.d, stream, prompt, &chat_errors))
        goto done;
    if (ans.d.malformed) {
        if (stream) {
            sb_emu_reply_stream_start(rep);
            sb_emu_reply_chunk(rep, "data: {\"id\":\"chatcmpl-malformed\",\"object\":\n\n");
        } else {
            sb_emu_reply_malformed(rep, "{\"id\":\"chatcmpl-malformed\", this is not JSON");
        }
        goto done;
    }

    if (!strcmp(json_string_value(json_object_get(last, "role")), "tool"))
        tool_text = message_text(last);
    json_t *n = json_object_get(body, "n");
    struct sb_emu_ask ask = {.user_text = user_text,
                             .acks = acks ? acks : "",
                             .tool_text = tool_text,
                             .n = json_is_integer(n) ? (size_t)json_integer_value(n) : 1};
    fns = read_fns(body, &ask.nfns);
    ask.fns = fns;
    ask.forced = forced_tool(body);
    json_t *tc = json_object_get(body, "tool_choice");
    ask.no_calls = json_is_string(tc) && !strcmp(json_string_value(tc), "none");
    results = read_results(messages, &nresults);
    ask.results = results;
    ask.nresults = nresults;
    json_t *rf = json_object_get(body, "response_format");
    const char *rf_type = json_string_value(json_object_get(rf, "type"));
    if (rf_type && strcmp(rf_type, "text")) {
        json_t *schema = json_object_get(json_object_get(rf, "json_schema"), "schema");
        ask.format = json_is_object(schema) ? SB_EMU_FMT_SCHEMA : SB_EMU_FMT_JSON;
        ask.schema = schema;
    }
    const char *effort = json_string_value(json_object_get(body, "reasoning_effort"));
    if (effort && strcmp(effort, "none"))
        ask.reasoning = effort;
    json_t *mt = json_object_get(body, "max_completion_tokens");
    if (!json_is_integer(mt))
        mt = json_object_get(body, "max_tokens");
    ask.max_words = json_is_integer(mt) ? (long long)json_integer_value(mt) : 0;
    ask.stop = json_object_get(body, "stop");
    int rc = sb_emu_answer_make(call, &ask, &ans, err, sizeof err);
    if (rc < 0) {
        sb_emu_openai_invalid(call, rc == -ENOENT ? "tools" : "messages", NULL, "%s", err);
        goto done;
    }

    a.a = &ans;
    a.n = ans.n;
    a.model = json_string_value(json_object_get(body, "model"));
    sb_id_new(a.id, sizeof a.id, "chatcmpl-", 15);
    a.created = (long long)time(NULL);
    const char *tier = json_string_value(json_object_get(body, "service_tier"));
    a.service_tier = tier && strcmp(tier, "auto") ? tier : "default";
    a.logprobs = json_is_true(json_object_get(body, "logprobs"));
    json_t *top = json_object_get(body, "top_logprobs");
    a.top_logprobs = json_is_integer(top) && json_integer_value(top) > 0;
    a.prompt_tokens = prompt;
    a.reasoning_tokens = ans.reasoning_tokens;
    a.completion_tokens = ans.output_tokens + ans.reasoning_tokens;
    a.call_ids = sb_xcalloc(ans.ncalls + 1, sizeof *a.call_ids);
    for (size_t k = 0; k < ans.ncalls; k++)
        sb_id_new(a.call_ids[k], sizeof a.call_ids[k], "call_", 12);

    if (stream) {
        json_t *sopts = json_object_get(body, "stream_options");
        bool include_usage = json_is_true(json_object_get(sopts, "include_usage"));
        if (ans.d.endless)
            reply_endless(rep, &a, include_usage);
        else
            reply_stream(rep, &a, include_usage);
        sb_emu_stream_faults(rep, &ans.d);
    } else {
        reply_complete(rep, &a);
    }

done:
    sb_emu_answer_free(&ans);
    free(a.call_ids);
    free(fns);
    sb_emu_tool_results_free(results, nresults);
    free(user_text);
    free(acks);
    free(tool_text);
}

/* ---- GET /v1/models ------------------------------------------------------------- */

static const char *const emu_models[] = {"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o4-mini", NULL};

void sb_emu_openai_models_handle(struct sb_emu_call *call)
{
    call->protocol = "openai";
    if (sb_emu_openai_check_auth(call))
        return;
    json_t *data = json_array();
    for (size_t i = 0; emu_models[i]; i++)
        json_array_append_new(data, json_pack("{s:s, s:s, s:I, s:s}", "id", emu_models[i], "object", "model", "created",
                                              (json_int_t)1715367049, "owned_by", "emulator"));
    json_t *body = json_pack("{s:s, s:o}", "object", "list", "data", data);
    sb_emu_reply_json(&call->reply, 200, body);
    json_decref(body);
}

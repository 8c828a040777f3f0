/*
 * emu_anthropic: Anthropic Messages (POST /v1/messages, POST
 * /v1/messages/count_tokens, GET /v1/models for Anthropic clients).
 *
 * emu_anthropic_check.c validates headers and body; this file reduces the
 * request to what the emulated model reads (the last user turn with text, its
 * images and documents, a trailing tool_result, tools, tool_choice, thinking,
 * output_config.format), lets emu_answer.c decide the answer and writes a
 * Message: a signed thinking block when thinking is on, then text or tool_use
 * blocks, stop_reason, usage. With stream:true the same answer goes out as
 * Messages SSE events (message_start ... message_stop). Everything is
 * documented at the top of main.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "sb_alloc.h"
#include "sb_id.h"

#define MSG_MAX 512

struct msg_reply {
    const json_t *body;
    struct sb_emu_answer *a;
    char id[SB_ID_MAX];
    char srv_id[SB_ID_MAX];      /* server_tool_use id of a web search */
    char (*tool_ids)[SB_ID_MAX]; /* owned, a->ncalls entries */
    char *signature;             /* owned; of a->reasoning */
    long long input_tokens;
};

/* ---- reading the request ---------------------------------------------------------- */

/* Text blocks of a content (or the string) joined by one space; owned. */
static char *blocks_text(const json_t *content)
{
    if (json_is_string(content))
        return sb_xstrdup(json_string_value(content));
    char *out = sb_xstrdup("");
    size_t i;
    json_t *b;
    json_array_foreach (content, i, b) {
        const char *type = json_string_value(json_object_get(b, "type"));
        const char *text = json_string_value(json_object_get(b, "text"));
        if (!type || strcmp(type, "text") || !text)
            continue;
        char *joined = sb_xasprintf("%s%s%s", out, *out ? " " : "", text);
        free(out);
        out = joined;
    }
    return out;
}

/* Everything a message says (text blocks and tool_result contents), for token counting; owned. */
static char *message_words(const json_t *m)
{
    json_t *content = json_object_get(m, "content");
    char *out = blocks_text(content);
    size_t i;
    json_t *b;
    json_array_foreach (content, i, b) {
        const char *type = json_string_value(json_object_get(b, "type"));
        if (!type || strcmp(type, "tool_result"))
            continue;
        char *t = blocks_text(json_object_get(b, "content"));
        char *joined = sb_xasprintf("%s%s%s", out, *out && *t ? " " : "", t);
        free(t);
        free(out);
        out = joined;
    }
    return out;
}

static bool has_text(const json_t *content)
{
    if (json_is_string(content))
        return true;
    size_t i;
    json_t *b;
    json_array_foreach (content, i, b) {
        const char *type = json_string_value(json_object_get(b, "type"));
        if (type && !strcmp(type, "text"))
            return true;
    }
    return false;
}

static char *source_ack(const json_t *block, bool document, long long *tokens)
{
    json_t *src = json_object_get(block, "source");
    const char *st = json_string_value(json_object_get(src, "type"));
    const char *title = json_string_value(json_object_get(block, "title"));
    if (!st)
        return NULL;
    if (!strcmp(st, "base64")) {
        const char *mt = json_string_value(json_object_get(src, "media_type"));
        const char *data = json_string_value(json_object_get(src, "data"));
        return document ? sb_emu_ack_file_data(title, mt, data, tokens) : sb_emu_ack_image_data(mt, data, tokens);
    }
    if (!strcmp(st, "text"))
        return sb_emu_ack_file_text(title, json_string_value(json_object_get(src, "media_type")),
                                    json_string_value(json_object_get(src, "data")), tokens);
    const char *ref = json_string_value(json_object_get(src, !strcmp(st, "url") ? "url" : "file_id"));
    if (!ref)
        return sb_xasprintf("[file: %s]", title && *title ? title : "content");
    return document ? sb_emu_ack_file_ref(ref) : sb_emu_ack_image_ref(ref, tokens);
}

/* Acknowledgements of a message's image and document blocks; owned. */
static char *message_acks(const json_t *m, long long *tokens)
{
    char *acks = sb_xstrdup("");
    size_t i;
    json_t *b;
    json_array_foreach (json_object_get(m, "content"), i, b) {
        const char *type = json_string_value(json_object_get(b, "type"));
        if (type && (!strcmp(type, "image") || !strcmp(type, "document")))
            sb_emu_acks_append(&acks, source_ack(b, type[0] == 'd', tokens));
    }
    return acks;
}

/* The content of the last tool_result of a final user turn that has no text; owned, or NULL. */
static char *final_tool_result(const json_t *messages)
{
    json_t *last = json_array_get(messages, json_array_size(messages) - 1);
    json_t *content = json_object_get(last, "content");
    if (strcmp(json_string_value(json_object_get(last, "role")), "user") || has_text(content))
        return NULL;
    json_t *result = NULL;
    size_t i;
    json_t *b;
    json_array_foreach (content, i, b) {
        const char *type = json_string_value(json_object_get(b, "type"));
        if (type && !strcmp(type, "tool_result"))
            result = b;
    }
    return result ? blocks_text(json_object_get(result, "content")) : NULL;
}

/* The name of the tool_use block with this id in an assistant turn before the last message, or NULL. */
static const char *tool_use_name(const json_t *messages, const char *id)
{
    size_t n = json_array_size(messages);
    for (size_t j = n ? n - 1 : 0; j-- > 0 && id;) {
        size_t i;
        json_t *b;
        json_array_foreach (json_object_get(json_array_get(messages, j), "content"), i, b) {
            const char *type = json_string_value(json_object_get(b, "type"));
            const char *bid = json_string_value(json_object_get(b, "id"));
            if (type && !strcmp(type, "tool_use") && bid && !strcmp(bid, id))
                return json_string_value(json_object_get(b, "name"));
        }
    }
    return NULL;
}

/*
 * Every tool_result block of a final user turn (text beside them or not),
 * each named after the tool_use it answers. Owned array (sb_emu_tool_results_free).
 */
static struct sb_emu_tool_result *read_results(const json_t *messages, size_t *n)
{
    json_t *last = json_array_get(messages, json_array_size(messages) - 1);
    json_t *content = json_object_get(last, "content");
    struct sb_emu_tool_result *out = sb_xcalloc(json_array_size(content) + 1, sizeof *out);
    *n = 0;
    if (strcmp(json_string_value(json_object_get(last, "role")), "user"))
        return out;
    size_t i;
    json_t *b;
    json_array_foreach (content, i, b) {
        const char *type = json_string_value(json_object_get(b, "type"));
        if (!type || strcmp(type, "tool_result"))
            continue;
        out[*n].name = tool_use_name(messages, json_string_value(json_object_get(b, "tool_use_id")));
        out[*n].text = blocks_text(json_object_get(b, "content"));
        (*n)++;
    }
    return out;
}

static bool is_web_search(const json_t *tool)
{
    const char *t = json_string_value(json_object_get(tool, "type"));
    return t && !strncmp(t, "web_search_", 11);
}

/* Function tools for the engine (owned array); returns the forced tool; *search when web search may run. */
static const char *read_tools(const json_t *body, struct sb_emu_fn **fns, size_t *nfns, bool *search)
{
    json_t *tools = json_object_get(body, "tools");
    json_t *tc = json_object_get(body, "tool_choice");
    const char *mode = json_string_value(json_object_get(tc, "type"));
    *fns = sb_xcalloc(json_array_size(tools) + 1, sizeof **fns);
    *nfns = 0;
    bool have_search = false;
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        if (is_web_search(t)) {
            have_search = true;
            continue;
        }
        (*fns)[*nfns].name = json_string_value(json_object_get(t, "name"));
        (*fns)[*nfns].schema = json_object_get(t, "input_schema");
        (*nfns)++;
    }
    const char *forced = NULL;
    if (mode && !strcmp(mode, "any") && *nfns > 0)
        forced = (*fns)[0].name;
    else if (mode && !strcmp(mode, "tool"))
        forced = json_string_value(json_object_get(tc, "name"));
    *search = have_search && !forced && !(mode && !strcmp(mode, "none"));
    return forced;
}

/* Prompt tokens: 4 + words per message and for the system prompt, plus attachments of user turns. */
static long long prompt_tokens(const json_t *body)
{
    long long prompt = 0;
    json_t *sys = json_object_get(body, "system");
    if (sys && !json_is_null(sys)) {
        char *t = blocks_text(sys);
        prompt += 4 + (long long)sb_emu_count_words(t);
        free(t);
    }
    size_t i;
    json_t *m;
    json_array_foreach (json_object_get(body, "messages"), i, m) {
        char *t = message_words(m);
        prompt += 4 + (long long)sb_emu_count_words(t);
        free(t);
        if (!strcmp(json_string_value(json_object_get(m, "role")), "user"))
            free(message_acks(m, &prompt));
    }
    return prompt;
}

/* ---- writing the reply ------------------------------------------------------------------ */

static const char *stop_reason(const struct sb_emu_answer *a)
{
    switch (a->choices[0].finish) {
    case SB_EMU_FINISH_LENGTH:
        return "max_tokens";
    case SB_EMU_FINISH_TOOL_CALLS:
        return "tool_use";
    case SB_EMU_FINISH_STOP_SEQUENCE:
        return "stop_sequence";
    case SB_EMU_FINISH_REFUSAL:
        return "refusal";
    case SB_EMU_FINISH_STOP:
        break;
    }
    return "end_turn";
}

static json_t *usage_json(const struct msg_reply *x, bool start)
{
    long long out = start ? 1 : x->a->output_tokens + x->a->reasoning_tokens;
    json_t *u = json_pack("{s:I, s:i, s:i, s:I, s:s}", "input_tokens", (json_int_t)x->input_tokens,
                          "cache_creation_input_tokens", 0, "cache_read_input_tokens", 0, "output_tokens",
                          (json_int_t)out, "service_tier", "standard");
    if (x->a->searched)
        json_object_set_new(u, "server_tool_use", json_pack("{s:i}", "web_search_requests", 1));
    return u;
}

static json_t *tool_input(const char *arguments)
{
    json_t *v = json_loads(arguments, JSON_DECODE_ANY, NULL);
    if (json_is_object(v))
        return v;
    json_decref(v);
    return json_object();
}

static json_t *search_blocks(const struct msg_reply *x)
{
    char *url = sb_xasprintf("https://emulator.invalid/search?q=%zu", strlen(x->a->clean));
    json_t *blocks =
        json_pack("[{s:s, s:s, s:s, s:{s:s}}, {s:s, s:s, s:[{s:s, s:s, s:s, s:s, s:n}]}]", "type", "server_tool_use",
                  "id", x->srv_id, "name", "web_search", "input", "query", x->a->clean, "type",
                  "web_search_tool_result", "tool_use_id", x->srv_id, "content", "type", "web_search_result", "url",
                  url, "title", "Emulated result", "encrypted_content", "emu-search", "page_age");
    free(url);
    return blocks;
}

static json_t *content_json(const struct msg_reply *x)
{
    json_t *content = json_array();
    if (x->a->reasoning)
        json_array_append_new(content, json_pack("{s:s, s:s, s:s}", "type", "thinking", "thinking", x->a->reasoning,
                                                 "signature", x->signature));
    if (x->a->searched) {
        json_t *blocks = search_blocks(x);
        json_array_extend(content, blocks);
        json_decref(blocks);
    }
    for (size_t k = 0; k < x->a->ncalls; k++)
        json_array_append_new(content,
                              json_pack("{s:s, s:s, s:s, s:o}", "type", "tool_use", "id", x->tool_ids[k], "name",
                                        x->a->calls[k].name, "input", tool_input(x->a->calls[k].arguments)));
    if (!x->a->ncalls)
        json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", x->a->choices[0].text));
    return content;
}

static json_t *message_json(const struct msg_reply *x, bool start)
{
    const char *seq = x->a->choices[0].stop_seq;
    json_t *m = json_pack("{s:s, s:s, s:s, s:O, s:o}", "id", x->id, "type", "message", "role", "assistant", "model",
                          json_object_get(x->body, "model"), "content", start ? json_array() : content_json(x));
    json_object_set_new(m, "stop_reason", start ? json_null() : json_string(stop_reason(x->a)));
    json_object_set_new(m, "stop_sequence", !start && seq ? json_string(seq) : json_null());
    json_object_set_new(m, "usage", usage_json(x, start));
    return m;
}

/* ---- streaming -------------------------------------------------------------------------- */

static void emit(struct sb_emu_reply *rep, const char *type, json_t *ev /* stolen */)
{
    json_t *full = json_pack("{s:s}", "type", type);
    json_object_update(full, ev);
    json_decref(ev);
    sb_emu_reply_sse(rep, type, full, "\n\n");
    json_decref(full);
}

static void block_start(struct sb_emu_reply *rep, size_t index, json_t *block)
{
    emit(rep, "content_block_start", json_pack("{s:I, s:o}", "index", (json_int_t)index, "content_block", block));
    if (index == 0)
        emit(rep, "ping", json_object());
}

static void block_delta(struct sb_emu_reply *rep, size_t index, json_t *delta)
{
    emit(rep, "content_block_delta", json_pack("{s:I, s:o}", "index", (json_int_t)index, "delta", delta));
}

static void block_stop(struct sb_emu_reply *rep, size_t index)
{
    emit(rep, "content_block_stop", json_pack("{s:I}", "index", (json_int_t)index));
}

static void stream_words(struct sb_emu_reply *rep, size_t index, const char *dtype, const char *field, const char *t)
{
    while (*t) {
        size_t len = sb_emu_next_word_piece(t);
        block_delta(rep, index, json_pack("{s:s, s:s%}", "type", dtype, field, t, len));
        t += len;
    }
}

static void reply_stream(struct sb_emu_reply *rep, const struct msg_reply *x)
{
    sb_emu_reply_stream_start(rep);
    emit(rep, "message_start", json_pack("{s:o}", "message", message_json(x, true)));
    size_t index = 0;
    if (x->a->reasoning) {
        block_start(rep, index, json_pack("{s:s, s:s}", "type", "thinking", "thinking", ""));
        stream_words(rep, index, "thinking_delta", "thinking", x->a->reasoning);
        block_delta(rep, index, json_pack("{s:s, s:s}", "type", "signature_delta", "signature", x->signature));
        block_stop(rep, index++);
    }
    if (x->a->searched) {
        json_t *blocks = search_blocks(x);
        json_t *use = json_array_get(blocks, 0), *result = json_array_get(blocks, 1);
        json_t *input = json_incref(json_object_get(use, "input"));
        json_object_set_new(use, "input", json_object());
        block_start(rep, index, json_incref(use));
        char *partial = json_dumps(input, JSON_COMPACT);
        block_delta(rep, index, json_pack("{s:s, s:s}", "type", "input_json_delta", "partial_json", partial));
        free(partial);
        json_decref(input);
        block_stop(rep, index++);
        block_start(rep, index, json_incref(result));
        block_stop(rep, index++);
        json_decref(blocks);
    }
    for (size_t k = 0; k < x->a->ncalls; k++) {
        block_start(rep, index,
                    json_pack("{s:s, s:s, s:s, s:{}}", "type", "tool_use", "id", x->tool_ids[k], "name",
                              x->a->calls[k].name, "input"));
        block_delta(rep, index, json_pack("{s:s, s:s}", "type", "input_json_delta", "partial_json", ""));
        const char *p = x->a->calls[k].arguments;
        while (*p) {
            size_t len = sb_emu_next_args_piece(p);
            block_delta(rep, index, json_pack("{s:s, s:s%}", "type", "input_json_delta", "partial_json", p, len));
            p += len;
        }
        block_stop(rep, index++);
    }
    if (!x->a->ncalls) {
        block_start(rep, index, json_pack("{s:s, s:s}", "type", "text", "text", ""));
        stream_words(rep, index, "text_delta", "text", x->a->choices[0].text);
        block_stop(rep, index++);
    }
    const char *seq = x->a->choices[0].stop_seq;
    json_t *usage = json_pack("{s:I}", "output_tokens", (json_int_t)(x->a->output_tokens + x->a->reasoning_tokens));
    emit(rep, "message_delta",
         json_pack("{s:{s:s, s:o}, s:o}", "delta", "stop_reason", stop_reason(x->a), "stop_sequence",
                   seq ? json_string(seq) : json_null(), "usage", usage));
    emit(rep, "message_stop", json_object());
}

/* Endless ([[emu:endless]]): a text block whose text_delta events never stop (no content_block_stop, no
 * message_delta, no message_stop). */
static void reply_endless(struct sb_emu_reply *rep, const struct msg_reply *x)
{
    sb_emu_reply_stream_start(rep);
    emit(rep, "message_start", json_pack("{s:o}", "message", message_json(x, true)));
    block_start(rep, 0, json_pack("{s:s, s:s}", "type", "text", "text", ""));
    const char *text = x->a->ncalls == 0 && x->a->choices[0].text ? x->a->choices[0].text : "";
    stream_words(rep, 0, "text_delta", "text", text);
    sb_emu_reply_endless(rep, "event: content_block_delta\ndata: ",
                         json_pack("{s:s, s:i, s:{s:s, s:s}}", "type", "content_block_delta", "index", 0, "delta",
                                   "type", "text_delta", "text", SB_EMU_ENDLESS_TEXT),
                         "\n\n", NULL, 0);
}

/* ---- errors ------------------------------------------------------------------------------- */

/* Anthropic has one 429 (rate_limit_error, with retry-after) whether the limit is a rate or a spend: quota changes
 * nothing. */
static void status_error(struct sb_emu_call *call, int status, const struct sb_emu_directives *d)
{
    const char *type = status == 401   ? "authentication_error"
                       : status == 402 ? "billing_error"
                       : status == 403 ? "permission_error"
                       : status == 404 ? "not_found_error"
                       : status == 413 ? "request_too_large"
                       : status == 429 ? "rate_limit_error"
                       : status == 504 ? "timeout_error"
                       : status == 529 ? "overloaded_error"
                       : status >= 500 ? "api_error"
                                       : "invalid_request_error";
    if (status == 529)
        sb_emu_anthropic_error(call, status, type, "Overloaded");
    else
        sb_emu_anthropic_error(call, status, type, SB_EMU_STATUS_MESSAGE_FMT, status);
    struct sb_emu_directives plain = d ? *d : (struct sb_emu_directives){.retry_after = -1};
    plain.quota = false;
    int retry = sb_emu_retry_after(&plain, status);
    if (retry >= 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", retry);
        sb_emu_reply_header(&call->reply, "retry-after", v);
    }
}

static void context_error(struct sb_emu_call *call, long long tokens, long long limit)
{
    sb_emu_anthropic_error(call, 400, "invalid_request_error", "prompt is too long: %lld tokens > %lld maximum", tokens,
                           limit);
}

/* [[emu:bad_key]] / [[emu:key_forbidden]]: Anthropic quotes nothing of the key. */
static void auth_error(struct sb_emu_call *call, int auth, const char *credential)
{
    (void)credential;
    if (auth == 403)
        sb_emu_anthropic_error(call, 403, "permission_error",
                               "Your API key does not have permission to use the specified resource.");
    else
        sb_emu_anthropic_error(call, 401, "authentication_error", "invalid x-api-key");
}

/* [[emu:leak_key]]: a stream fails after message_start with an error event. */
static void leak_error(struct sb_emu_call *call, int status, const char *message, bool stream)
{
    const char *type = status == 401   ? "authentication_error"
                       : status == 403 ? "permission_error"
                       : status == 404 ? "not_found_error"
                       : status == 429 ? "rate_limit_error"
                       : status >= 500 ? "api_error"
                                       : "invalid_request_error";
    if (!stream) {
        sb_emu_anthropic_error(call, status, type, "%s", message);
        return;
    }
    struct sb_emu_reply *rep = &call->reply;
    sb_emu_reply_stream_start(rep);
    emit(rep, "message_start",
         json_pack("{s:{s:s, s:s, s:s, s:s, s:[], s:n, s:n, s:{s:i, s:i}}}", "message", "id", "msg_leak", "type",
                   "message", "role", "assistant", "model", call->model ? call->model : "", "content", "stop_reason",
                   "stop_sequence", "usage", "input_tokens", 1, "output_tokens", 1));
    emit(rep, "error", json_pack("{s:{s:s, s:s}}", "error", "type", "api_error", "message", message));
}

static const struct sb_emu_fault_errors messages_errors = {
    .status = status_error, .context = context_error, .context_window = 200000, .leak = leak_error, .auth = auth_error};
static const struct sb_emu_fault_errors count_errors = {.status = status_error, .leak = leak_error, .auth = auth_error};

/* ---- handlers ------------------------------------------------------------------------------ */

static bool start(struct sb_emu_call *call, bool count)
{
    call->protocol = "anthropic";
    sb_emu_call_set_model_from_body(call);
    sb_emu_reply_header(&call->reply, "request-id", call->request_id);
    return sb_emu_anthropic_check_headers(call) && sb_emu_anthropic_check(call, count);
}

/* The text of the last user message that has text (owned, NULL if none); its acknowledgements into *acks. */
static char *last_user_text(const json_t *messages, char **acks)
{
    char *user_text = NULL;
    long long ignored = 0;
    size_t i;
    json_t *m;
    json_array_foreach (messages, i, m) {
        if (strcmp(json_string_value(json_object_get(m, "role")), "user") || !has_text(json_object_get(m, "content")))
            continue;
        free(user_text);
        user_text = blocks_text(json_object_get(m, "content"));
        if (acks) {
            free(*acks);
            *acks = message_acks(m, &ignored);
        }
    }
    return user_text;
}

void sb_emu_anthropic_messages_handle(struct sb_emu_call *call)
{
    struct sb_emu_reply *rep = &call->reply;
    struct sb_emu_answer a = {0};
    struct msg_reply x = {0};
    struct sb_emu_fn *fns = NULL;
    struct sb_emu_tool_result *results = NULL;
    size_t nresults = 0;
    char *user_text = NULL, *acks = NULL, *tool_text = NULL;
    char err[MSG_MAX], label[32];

    if (!start(call, false))
        return;
    const json_t *body = call->json;
    json_t *messages = json_object_get(body, "messages");
    user_text = last_user_text(messages, &acks);
    tool_text = final_tool_result(messages);

    if (sb_emu_answer_begin(&a, user_text ? user_text : "", err, sizeof err) < 0) {
        sb_emu_anthropic_error(call, 400, "invalid_request_error", "%s", err);
        goto done;
    }
    bool stream = json_is_true(json_object_get(body, "stream"));
    if (sb_emu_fault_stage(call, &a.d, stream, prompt_tokens(body), &messages_errors))
        goto done;
    if (a.d.malformed) {
        if (stream) {
            sb_emu_reply_stream_start(rep);
            sb_emu_reply_chunk(rep, "event: message_start\ndata: {\"type\":\"message_start\",\n\n");
        } else {
            sb_emu_reply_malformed(rep, "{\"id\":\"msg_malformed\", this is not JSON");
        }
        goto done;
    }

    struct sb_emu_ask ask = {
        .user_text = user_text, .acks = acks ? acks : "", .tool_text = tool_text, .n = 1, .objects_only = true};
    ask.forced = read_tools(body, &fns, &ask.nfns, &ask.search);
    ask.fns = fns;
    const char *tc_type = json_string_value(json_object_get(json_object_get(body, "tool_choice"), "type"));
    ask.no_calls = tc_type && !strcmp(tc_type, "none");
    results = read_results(messages, &nresults);
    ask.results = results;
    ask.nresults = nresults;
    json_t *format = json_object_get(json_object_get(body, "output_config"), "format");
    if (!format || json_is_null(format))
        format = json_object_get(body, "output_format");
    if (json_is_object(format)) {
        ask.format = SB_EMU_FMT_SCHEMA;
        ask.schema = json_object_get(format, "schema");
    }
    json_t *thinking = json_object_get(body, "thinking");
    const char *ttype = json_string_value(json_object_get(thinking, "type"));
    if (ttype && !strcmp(ttype, "enabled")) {
        snprintf(label, sizeof label, "%lld",
                 (long long)json_integer_value(json_object_get(thinking, "budget_tokens")));
        ask.reasoning = label;
    } else if (ttype && (!strcmp(ttype, "adaptive") || !strcmp(ttype, "between_tools"))) {
        ask.reasoning = ttype;
    }
    ask.max_words = (long long)json_integer_value(json_object_get(body, "max_tokens"));
    ask.stop = json_object_get(body, "stop_sequences");
    if (sb_emu_answer_make(call, &ask, &a, err, sizeof err) < 0) {
        sb_emu_anthropic_error(call, 400, "invalid_request_error", "%s", err);
        goto done;
    }

    x.body = body;
    x.a = &a;
    x.input_tokens = prompt_tokens(body);
    sb_id_new(x.id, sizeof x.id, "msg_", 12);
    sb_id_new(x.srv_id, sizeof x.srv_id, "srvtoolu_", 12);
    x.tool_ids = sb_xcalloc(a.ncalls + 1, sizeof *x.tool_ids);
    for (size_t k = 0; k < a.ncalls; k++)
        sb_id_new(x.tool_ids[k], sizeof x.tool_ids[k], "toolu_", 12);
    if (a.reasoning)
        x.signature = sb_emu_anthropic_signature(a.reasoning);

    if (stream) {
        if (a.d.endless)
            reply_endless(rep, &x);
        else
            reply_stream(rep, &x);
        sb_emu_stream_faults(rep, &a.d);
    } else {
        json_t *msg = message_json(&x, false);
        sb_emu_reply_json(rep, 200, msg);
        json_decref(msg);
    }

done:
    sb_emu_answer_free(&a);
    free(x.tool_ids);
    free(x.signature);
    free(fns);
    sb_emu_tool_results_free(results, nresults);
    free(user_text);
    free(acks);
    free(tool_text);
}

void sb_emu_anthropic_count_handle(struct sb_emu_call *call)
{
    if (!start(call, true))
        return;
    char *user_text = last_user_text(json_object_get(call->json, "messages"), NULL);
    struct sb_emu_directives d;
    char *clean = NULL;
    char err[MSG_MAX];
    long long tokens = prompt_tokens(call->json);
    if (sb_emu_directives_parse(user_text ? user_text : "", &d, &clean, err, sizeof err) < 0) {
        sb_emu_anthropic_error(call, 400, "invalid_request_error", "%s", err);
    } else if (!sb_emu_fault_stage(call, &d, false, tokens, &count_errors)) {
        if (d.malformed) {
            sb_emu_reply_malformed(&call->reply, "{\"input_tokens\": this is not JSON");
        } else {
            json_t *r = json_pack("{s:I}", "input_tokens", (json_int_t)tokens);
            sb_emu_reply_json(&call->reply, 200, r);
            json_decref(r);
        }
    }
    free(clean);
    free(user_text);
}

void sb_emu_anthropic_models_handle(struct sb_emu_call *call)
{
    call->protocol = "anthropic";
    sb_emu_reply_header(&call->reply, "request-id", call->request_id);
    if (!sb_emu_anthropic_check_headers(call))
        return;
    static const char *const ids[] = {"claude-emu-1", "claude-sonnet-4-5", "claude-haiku-4-5", NULL};
    json_t *data = json_array();
    for (size_t i = 0; ids[i]; i++)
        json_array_append_new(data, json_pack("{s:s, s:s, s:s, s:s}", "type", "model", "id", ids[i], "display_name",
                                              ids[i], "created_at", "2025-01-01T00:00:00Z"));
    json_t *r = json_pack("{s:o, s:b, s:s, s:s}", "data", data, "has_more", 0, "first_id", ids[0], "last_id", ids[2]);
    sb_emu_reply_json(&call->reply, 200, r);
    json_decref(r);
}

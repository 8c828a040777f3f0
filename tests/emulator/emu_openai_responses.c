/*
 * emu_openai_responses: OpenAI Responses (POST /v1/responses).
 *
 * emu_openai_responses_check.c validates the request; this file reduces it
 * to what the emulated model reads (the last user message, its attachments,
 * a trailing function_call_output, tools, text.format, reasoning), lets
 * emu_answer.c decide the answer, and writes a Response object: reasoning,
 * web_search_call, message and function_call (or, when a scenario calls a
 * custom tool, custom_tool_call) output items with ids, usage, status
 * "incomplete" on a length cut. Reasoning asked with include
 * ["reasoning.encrypted_content"] comes back as opaque "emu-enc:<base64>"
 * content; when such an item is sent back, the reply text says so
 * (" [reasoning seen: <text>]"), proving it reached the upstream. With
 * stream:true the same answer goes out as Responses SSE events.
 * POST /v1/responses/input_tokens counts an input as usage would. Everything
 * is documented at the top of main.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu_internal.h"
#include "sb_alloc.h"
#include "sb_id.h"

#define MSG_MAX 512
#define ENC_PREFIX "emu-enc:"
#define INCLUDE_ENCRYPTED "reasoning.encrypted_content"

/* What the reply is made of, once decided (one shape for stream and non-stream). */
struct resp_reply {
    const json_t *body;
    struct sb_emu_answer *a;
    char id[SB_ID_MAX];
    long long created;
    char rs_id[SB_ID_MAX], ws_id[SB_ID_MAX], msg_id[SB_ID_MAX];
    char (*fc_ids)[SB_ID_MAX];   /* owned, a->ncalls entries */
    char (*call_ids)[SB_ID_MAX]; /* owned, a->ncalls entries */
    bool encrypted;              /* include reasoning.encrypted_content */
    bool summary;                /* reasoning.summary asked */
    bool obfuscation;            /* stream_options.include_obfuscation (default true) */
    long long input_tokens;
    long seq; /* streaming: the next sequence_number */
};

/* ---- reading the request ------------------------------------------------------------ */

/* Text parts (input_text / output_text) of a message's content joined by one space; owned. */
static char *content_text(const json_t *content)
{
    if (json_is_string(content))
        return sb_xstrdup(json_string_value(content));
    char *out = sb_xstrdup("");
    size_t i;
    json_t *part;
    json_array_foreach (content, i, part) {
        const char *type = json_string_value(json_object_get(part, "type"));
        const char *text = json_string_value(json_object_get(part, "text"));
        if (!type || !text || (strcmp(type, "input_text") && strcmp(type, "output_text")))
            continue;
        char *joined = sb_xasprintf("%s%s%s", out, *out ? " " : "", text);
        free(out);
        out = joined;
    }
    return out;
}

/* The text of any input item, for token counting and tool results; owned. */
static char *item_text(const json_t *item)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    if (!type || !strcmp(type, "message"))
        return content_text(json_object_get(item, "content"));
    if (!strcmp(type, "function_call_output") || !strcmp(type, "custom_tool_call_output"))
        return content_text(json_object_get(item, "output"));
    return sb_xstrdup("");
}

static bool is_tool_output(const json_t *item)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    return type && (!strcmp(type, "function_call_output") || !strcmp(type, "custom_tool_call_output"));
}

/*
 * The tool outputs that end the input (its trailing function_call_output and
 * custom_tool_call_output items), each named after the function_call or
 * custom_tool_call item with its call_id. Owned array (sb_emu_tool_results_free).
 */
static struct sb_emu_tool_result *read_results(const json_t *input, size_t *n)
{
    size_t nitems = json_array_size(input), first = nitems;
    while (first > 0 && is_tool_output(json_array_get(input, first - 1)))
        first--;
    *n = nitems - first;
    struct sb_emu_tool_result *out = sb_xcalloc(*n + 1, sizeof *out);
    for (size_t i = first; i < nitems; i++) {
        json_t *item = json_array_get(input, i);
        const char *cid = json_string_value(json_object_get(item, "call_id"));
        out[i - first].text = item_text(item);
        for (size_t j = first; j-- > 0 && cid;) {
            json_t *c = json_array_get(input, j);
            const char *t = json_string_value(json_object_get(c, "type"));
            const char *ccid = json_string_value(json_object_get(c, "call_id"));
            if (t && (!strcmp(t, "function_call") || !strcmp(t, "custom_tool_call")) && ccid && !strcmp(ccid, cid)) {
                out[i - first].name = json_string_value(json_object_get(c, "name"));
                break;
            }
        }
    }
    return out;
}

static bool is_user_message(const json_t *item)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    const char *role = json_string_value(json_object_get(item, "role"));
    return (!type || !strcmp(type, "message")) && role && !strcmp(role, "user");
}

/* Acknowledgements of a user message's image and file parts (and their token cost). Owned. */
static char *message_acks(const json_t *item, long long *tokens)
{
    char *acks = sb_xstrdup("");
    size_t i;
    json_t *part;
    json_array_foreach (json_object_get(item, "content"), i, part) {
        const char *type = json_string_value(json_object_get(part, "type"));
        if (!type)
            continue;
        if (!strcmp(type, "input_image")) {
            const char *url = json_string_value(json_object_get(part, "image_url"));
            const char *fid = json_string_value(json_object_get(part, "file_id"));
            sb_emu_acks_append(&acks, url ? sb_emu_ack_image_url(url, tokens) : sb_emu_ack_image_ref(fid, tokens));
        } else if (!strcmp(type, "input_file")) {
            const char *data = json_string_value(json_object_get(part, "file_data"));
            const char *name = json_string_value(json_object_get(part, "filename"));
            const char *ref = json_string_value(json_object_get(part, "file_id"));
            if (!ref)
                ref = json_string_value(json_object_get(part, "file_url"));
            struct sb_emu_data_url du;
            if (data && sb_emu_data_url_parse(data, &du) == 0) {
                char *b64 = sb_xstrndup(du.data, du.data_len);
                sb_emu_acks_append(&acks, sb_emu_ack_file_data(name, du.mime, b64, tokens));
                free(b64);
            } else if (ref) {
                sb_emu_acks_append(&acks, sb_emu_ack_file_ref(ref));
            }
        }
    }
    return acks;
}

/* " [reasoning seen: <text>]" for every reasoning item sent back with our encrypted content; owned. */
static char *reasoning_seen(const json_t *input)
{
    char *out = sb_xstrdup("");
    size_t i;
    json_t *item;
    json_array_foreach (input, i, item) {
        const char *type = json_string_value(json_object_get(item, "type"));
        const char *enc = json_string_value(json_object_get(item, "encrypted_content"));
        if (!type || strcmp(type, "reasoning") || !enc || strncmp(enc, ENC_PREFIX, strlen(ENC_PREFIX)))
            continue;
        const char *b64 = enc + strlen(ENC_PREFIX);
        unsigned char *text = NULL;
        size_t n = 0;
        if (sb_emu_base64_decode(b64, strlen(b64), &text, &n) < 0)
            continue;
        char *joined = sb_xasprintf("%s [reasoning seen: %s]", out, (char *)text);
        free(text);
        free(out);
        out = joined;
    }
    return out;
}

static bool includes(const json_t *body, const char *what)
{
    size_t i;
    json_t *v;
    json_array_foreach (json_object_get(body, "include"), i, v) {
        if (json_is_string(v) && !strcmp(json_string_value(v), what))
            return true;
    }
    return false;
}

static bool is_web_search(const char *t)
{
    return !strcmp(t, "web_search") || !strcmp(t, "web_search_preview") || !strcmp(t, "web_search_2025_08_26") ||
           !strcmp(t, "web_search_preview_2025_03_11");
}

/*
 * Tools as the engine sees them: fns gets every function and custom tool in
 * the order offered (owned array; custom ones marked: only a scenario calls
 * them); returns the forced function (tool_choice "required" = the first
 * function, or {"type":"function","name"}), sets *none for tool_choice
 * "none" and *search when a web search tool may be used.
 */
static const char *read_tools(const json_t *body, struct sb_emu_fn **fns, size_t *nfns, bool *none, bool *search)
{
    json_t *tools = json_object_get(body, "tools");
    json_t *choice = json_object_get(body, "tool_choice");
    *fns = sb_xcalloc(json_array_size(tools) + 1, sizeof **fns);
    *nfns = 0;
    bool have_search = false;
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        const char *type = json_string_value(json_object_get(t, "type"));
        if (!strcmp(type, "function")) {
            (*fns)[*nfns].name = json_string_value(json_object_get(t, "name"));
            (*fns)[*nfns].schema = json_object_get(t, "parameters");
            (*nfns)++;
        } else if (!strcmp(type, "custom")) {
            (*fns)[*nfns].name = json_string_value(json_object_get(t, "name"));
            (*fns)[*nfns].custom = true;
            (*nfns)++;
        } else if (is_web_search(type)) {
            have_search = true;
        }
    }
    const char *forced = NULL;
    const char *mode = json_string_value(choice);
    const char *ctype = json_string_value(json_object_get(choice, "type"));
    if (mode && !strcmp(mode, "required")) {
        for (size_t k = 0; k < *nfns && !forced; k++)
            if (!(*fns)[k].custom)
                forced = (*fns)[k].name;
    } else if (ctype && !strcmp(ctype, "function"))
        forced = json_string_value(json_object_get(choice, "name"));
    *none = mode && !strcmp(mode, "none");
    *search = have_search && !forced && !*none;
    return forced;
}

/* ---- writing the reply --------------------------------------------------------------- */

static json_t *or_default(const json_t *v, json_t *dflt /* stolen */)
{
    if (v && !json_is_null(v)) {
        json_decref(dflt);
        return json_deep_copy(v);
    }
    return dflt;
}

static json_t *usage_json(const struct resp_reply *x)
{
    long long out = x->a->output_tokens + x->a->reasoning_tokens;
    return json_pack("{s:I, s:{s:i}, s:I, s:{s:I}, s:I}", "input_tokens", (json_int_t)x->input_tokens,
                     "input_tokens_details", "cached_tokens", 0, "output_tokens", (json_int_t)out,
                     "output_tokens_details", "reasoning_tokens", (json_int_t)x->a->reasoning_tokens, "total_tokens",
                     (json_int_t)(x->input_tokens + out));
}

static bool incomplete(const struct resp_reply *x)
{
    return x->a->ncalls == 0 && x->a->choices[0].finish == SB_EMU_FINISH_LENGTH;
}

/* The Response object; final: with status, usage and incomplete_details. output is stolen. */
static json_t *response_json(const struct resp_reply *x, bool final, json_t *output)
{
    const json_t *b = x->body;
    json_t *reasoning = json_object_get(b, "reasoning");
    json_t *text = json_object_get(b, "text");
    const char *tier = json_string_value(json_object_get(b, "service_tier"));
    const char *status = !final ? "in_progress" : incomplete(x) ? "incomplete" : "completed";
    json_t *r = json_pack("{s:s, s:s, s:I, s:s, s:b, s:n}", "id", x->id, "object", "response", "created_at",
                          (json_int_t)x->created, "status", status, "background", 0, "error");
    json_object_set_new(r, "incomplete_details",
                        final && incomplete(x) ? json_pack("{s:s}", "reason", "max_output_tokens") : json_null());
    json_object_set_new(r, "instructions", or_default(json_object_get(b, "instructions"), json_null()));
    json_object_set_new(r, "max_output_tokens", or_default(json_object_get(b, "max_output_tokens"), json_null()));
    json_object_set_new(r, "max_tool_calls", or_default(json_object_get(b, "max_tool_calls"), json_null()));
    json_object_set_new(r, "model", json_copy(json_object_get(b, "model")));
    json_object_set_new(r, "output", output);
    json_object_set_new(r, "parallel_tool_calls", or_default(json_object_get(b, "parallel_tool_calls"), json_true()));
    json_object_set_new(r, "previous_response_id", json_null());
    json_object_set_new(r, "prompt_cache_key", or_default(json_object_get(b, "prompt_cache_key"), json_null()));
    json_object_set_new(r, "reasoning",
                        json_pack("{s:o, s:o}", "effort", or_default(json_object_get(reasoning, "effort"), json_null()),
                                  "summary", or_default(json_object_get(reasoning, "summary"), json_null())));
    json_object_set_new(r, "safety_identifier", or_default(json_object_get(b, "safety_identifier"), json_null()));
    json_object_set_new(r, "service_tier", json_string(tier && strcmp(tier, "auto") ? tier : "default"));
    json_object_set_new(r, "store", or_default(json_object_get(b, "store"), json_true()));
    json_object_set_new(r, "temperature", or_default(json_object_get(b, "temperature"), json_real(1.0)));
    json_object_set_new(r, "text",
                        json_pack("{s:o, s:o}", "format",
                                  or_default(json_object_get(text, "format"), json_pack("{s:s}", "type", "text")),
                                  "verbosity", or_default(json_object_get(text, "verbosity"), json_string("medium"))));
    json_object_set_new(r, "tool_choice", or_default(json_object_get(b, "tool_choice"), json_string("auto")));
    json_object_set_new(r, "tools", or_default(json_object_get(b, "tools"), json_array()));
    json_object_set_new(r, "top_logprobs", or_default(json_object_get(b, "top_logprobs"), json_integer(0)));
    json_object_set_new(r, "top_p", or_default(json_object_get(b, "top_p"), json_real(1.0)));
    json_object_set_new(r, "truncation", or_default(json_object_get(b, "truncation"), json_string("disabled")));
    json_object_set_new(r, "usage", final ? usage_json(x) : json_null());
    json_object_set_new(r, "user", or_default(json_object_get(b, "user"), json_null()));
    json_object_set_new(r, "metadata", or_default(json_object_get(b, "metadata"), json_object()));
    return r;
}

static json_t *summary_json(const struct resp_reply *x)
{
    json_t *s = json_array();
    if (x->summary)
        json_array_append_new(s, json_pack("{s:s, s:s}", "type", "summary_text", "text", x->a->reasoning));
    return s;
}

static json_t *reasoning_item(const struct resp_reply *x)
{
    json_t *item = json_pack("{s:s, s:s, s:o}", "id", x->rs_id, "type", "reasoning", "summary", summary_json(x));
    if (x->encrypted) {
        char *b64 = sb_emu_base64_encode(x->a->reasoning, strlen(x->a->reasoning));
        char *enc = sb_xasprintf(ENC_PREFIX "%s", b64);
        json_object_set_new(item, "encrypted_content", json_string(enc));
        free(enc);
        free(b64);
    } else {
        json_object_set_new(item, "content",
                            json_pack("[{s:s, s:s}]", "type", "reasoning_text", "text", x->a->reasoning));
    }
    return item;
}

static json_t *web_search_item(const struct resp_reply *x, bool done)
{
    json_t *item = json_pack("{s:s, s:s, s:s}", "id", x->ws_id, "type", "web_search_call", "status",
                             done ? "completed" : "in_progress");
    if (done)
        json_object_set_new(item, "action", json_pack("{s:s, s:s}", "type", "search", "query", x->a->clean));
    return item;
}

static json_t *text_part(const struct resp_reply *x, const char *text)
{
    if (x->a->choices[0].finish == SB_EMU_FINISH_REFUSAL)
        return json_pack("{s:s, s:s}", "type", "refusal", "refusal", text);
    return json_pack("{s:s, s:[], s:[], s:s}", "type", "output_text", "annotations", "logprobs", "text", text);
}

static json_t *message_item(const struct resp_reply *x, const char *status, json_t *content /* stolen */)
{
    return json_pack("{s:s, s:s, s:s, s:o, s:s}", "id", x->msg_id, "type", "message", "status", status, "content",
                     content, "role", "assistant");
}

static json_t *call_item(const struct resp_reply *x, size_t k, bool done)
{
    if (x->a->calls[k].custom)
        return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "id", x->fc_ids[k], "type", "custom_tool_call", "status",
                         done ? "completed" : "in_progress", "call_id", x->call_ids[k], "input",
                         done ? x->a->calls[k].arguments : "", "name", x->a->calls[k].name);
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "id", x->fc_ids[k], "type", "function_call", "status",
                     done ? "completed" : "in_progress", "arguments", done ? x->a->calls[k].arguments : "", "call_id",
                     x->call_ids[k], "name", x->a->calls[k].name);
}

static json_t *output_json(const struct resp_reply *x)
{
    json_t *out = json_array();
    if (x->a->reasoning)
        json_array_append_new(out, reasoning_item(x));
    if (x->a->searched)
        json_array_append_new(out, web_search_item(x, true));
    for (size_t k = 0; k < x->a->ncalls; k++)
        json_array_append_new(out, call_item(x, k, true));
    if (!x->a->ncalls)
        json_array_append_new(out, message_item(x, incomplete(x) ? "incomplete" : "completed",
                                                json_pack("[o]", text_part(x, x->a->choices[0].text))));
    return out;
}

/* ---- streaming ---------------------------------------------------------------------------- */

/* Sends one event; ev is stolen and gets "type" and "sequence_number" first. */
static void emit(struct sb_emu_reply *rep, struct resp_reply *x, const char *type, json_t *ev)
{
    json_t *full = json_pack("{s:s, s:I}", "type", type, "sequence_number", (json_int_t)x->seq++);
    json_object_update(full, ev);
    json_decref(ev);
    sb_emu_reply_sse(rep, type, full, "\n\n");
    json_decref(full);
}

/* A delta event's fields, with the obfuscation padding OpenAI adds unless told not to. */
static json_t *delta_ev(const struct resp_reply *x, const char *item_id, size_t oi, json_t *extra /* stolen */)
{
    json_t *ev = json_pack("{s:s, s:I}", "item_id", item_id, "output_index", (json_int_t)oi);
    json_object_update(ev, extra);
    json_decref(extra);
    if (x->obfuscation)
        json_object_set_new(ev, "obfuscation", json_string("emu"));
    return ev;
}

/* Streams text word by word: <prefix>.delta events, then <prefix>.done carrying the whole text in done_field. */
static void stream_words(struct sb_emu_reply *rep, struct resp_reply *x, const char *item_id, size_t oi,
                         const char *index_name, const char *prefix, const char *text, const char *done_field,
                         bool logprobs)
{
    char type[96];
    snprintf(type, sizeof type, "%s.delta", prefix);
    const char *p = text;
    while (*p) {
        size_t len = sb_emu_next_word_piece(p);
        json_t *extra = json_pack("{s:i, s:s%}", index_name, 0, "delta", p, len);
        if (logprobs)
            json_object_set_new(extra, "logprobs", json_array());
        emit(rep, x, type, delta_ev(x, item_id, oi, extra));
        p += len;
    }
    snprintf(type, sizeof type, "%s.done", prefix);
    json_t *done = json_pack("{s:s, s:I, s:i, s:s}", "item_id", item_id, "output_index", (json_int_t)oi, index_name, 0,
                             done_field, text);
    if (logprobs)
        json_object_set_new(done, "logprobs", json_array());
    emit(rep, x, type, done);
}

static void stream_item_added(struct sb_emu_reply *rep, struct resp_reply *x, size_t oi, json_t *item)
{
    emit(rep, x, "response.output_item.added", json_pack("{s:I, s:o}", "output_index", (json_int_t)oi, "item", item));
}

static void stream_item_done(struct sb_emu_reply *rep, struct resp_reply *x, size_t oi, json_t *item)
{
    emit(rep, x, "response.output_item.done", json_pack("{s:I, s:o}", "output_index", (json_int_t)oi, "item", item));
}

static void stream_reasoning(struct sb_emu_reply *rep, struct resp_reply *x, size_t oi)
{
    stream_item_added(rep, x, oi, json_pack("{s:s, s:s, s:[]}", "id", x->rs_id, "type", "reasoning", "summary"));
    if (x->summary) {
        emit(rep, x, "response.reasoning_summary_part.added",
             json_pack("{s:s, s:I, s:i, s:{s:s, s:s}}", "item_id", x->rs_id, "output_index", (json_int_t)oi,
                       "summary_index", 0, "part", "type", "summary_text", "text", ""));
        stream_words(rep, x, x->rs_id, oi, "summary_index", "response.reasoning_summary_text", x->a->reasoning, "text",
                     false);
        emit(rep, x, "response.reasoning_summary_part.done",
             json_pack("{s:s, s:I, s:i, s:{s:s, s:s}}", "item_id", x->rs_id, "output_index", (json_int_t)oi,
                       "summary_index", 0, "part", "type", "summary_text", "text", x->a->reasoning));
    }
    if (!x->encrypted) {
        emit(rep, x, "response.content_part.added",
             json_pack("{s:s, s:I, s:i, s:{s:s, s:s}}", "item_id", x->rs_id, "output_index", (json_int_t)oi,
                       "content_index", 0, "part", "type", "reasoning_text", "text", ""));
        stream_words(rep, x, x->rs_id, oi, "content_index", "response.reasoning_text", x->a->reasoning, "text", false);
        emit(rep, x, "response.content_part.done",
             json_pack("{s:s, s:I, s:i, s:{s:s, s:s}}", "item_id", x->rs_id, "output_index", (json_int_t)oi,
                       "content_index", 0, "part", "type", "reasoning_text", "text", x->a->reasoning));
    }
    stream_item_done(rep, x, oi, reasoning_item(x));
}

static void stream_search(struct sb_emu_reply *rep, struct resp_reply *x, size_t oi)
{
    stream_item_added(rep, x, oi, web_search_item(x, false));
    static const char *const phases[] = {"response.web_search_call.in_progress", "response.web_search_call.searching",
                                         "response.web_search_call.completed"};
    for (size_t i = 0; i < 3; i++)
        emit(rep, x, phases[i], json_pack("{s:I, s:s}", "output_index", (json_int_t)oi, "item_id", x->ws_id));
    stream_item_done(rep, x, oi, web_search_item(x, true));
}

static void stream_message(struct sb_emu_reply *rep, struct resp_reply *x, size_t oi)
{
    const char *text = x->a->choices[0].text;
    bool refusal = x->a->choices[0].finish == SB_EMU_FINISH_REFUSAL;
    stream_item_added(rep, x, oi, message_item(x, "in_progress", json_array()));
    emit(rep, x, "response.content_part.added",
         json_pack("{s:s, s:I, s:i, s:o}", "item_id", x->msg_id, "output_index", (json_int_t)oi, "content_index", 0,
                   "part", text_part(x, "")));
    if (refusal)
        stream_words(rep, x, x->msg_id, oi, "content_index", "response.refusal", text, "refusal", false);
    else
        stream_words(rep, x, x->msg_id, oi, "content_index", "response.output_text", text, "text", true);
    emit(rep, x, "response.content_part.done",
         json_pack("{s:s, s:I, s:i, s:o}", "item_id", x->msg_id, "output_index", (json_int_t)oi, "content_index", 0,
                   "part", text_part(x, text)));
    stream_item_done(rep, x, oi,
                     message_item(x, incomplete(x) ? "incomplete" : "completed", json_pack("[o]", text_part(x, text))));
}

/* A function call's arguments (a custom tool call's input) in pieces, then its .done event. */
static void stream_call(struct sb_emu_reply *rep, struct resp_reply *x, size_t oi, size_t k)
{
    bool custom = x->a->calls[k].custom;
    stream_item_added(rep, x, oi, call_item(x, k, false));
    const char *p = x->a->calls[k].arguments;
    while (*p) {
        size_t len = sb_emu_next_args_piece(p);
        emit(rep, x, custom ? "response.custom_tool_call_input.delta" : "response.function_call_arguments.delta",
             delta_ev(x, x->fc_ids[k], oi, json_pack("{s:s%}", "delta", p, len)));
        p += len;
    }
    if (custom)
        emit(rep, x, "response.custom_tool_call_input.done",
             json_pack("{s:s, s:I, s:s}", "item_id", x->fc_ids[k], "output_index", (json_int_t)oi, "input",
                       x->a->calls[k].arguments));
    else
        emit(rep, x, "response.function_call_arguments.done",
             json_pack("{s:s, s:I, s:s, s:s}", "item_id", x->fc_ids[k], "output_index", (json_int_t)oi, "name",
                       x->a->calls[k].name, "arguments", x->a->calls[k].arguments));
    stream_item_done(rep, x, oi, call_item(x, k, true));
}

static void reply_stream(struct sb_emu_reply *rep, struct resp_reply *x)
{
    sb_emu_reply_stream_start(rep);
    emit(rep, x, "response.created", json_pack("{s:o}", "response", response_json(x, false, json_array())));
    emit(rep, x, "response.in_progress", json_pack("{s:o}", "response", response_json(x, false, json_array())));
    size_t oi = 0;
    if (x->a->reasoning)
        stream_reasoning(rep, x, oi++);
    if (x->a->searched)
        stream_search(rep, x, oi++);
    for (size_t k = 0; k < x->a->ncalls; k++)
        stream_call(rep, x, oi++, k);
    if (!x->a->ncalls)
        stream_message(rep, x, oi++);
    emit(rep, x, incomplete(x) ? "response.incomplete" : "response.completed",
         json_pack("{s:o}", "response", response_json(x, true, output_json(x))));
}

/* Endless ([[emu:endless]]): a message whose output_text deltas never stop (no .done, no response.completed). */
static void reply_endless(struct sb_emu_reply *rep, struct resp_reply *x)
{
    sb_emu_reply_stream_start(rep);
    emit(rep, x, "response.created", json_pack("{s:o}", "response", response_json(x, false, json_array())));
    emit(rep, x, "response.in_progress", json_pack("{s:o}", "response", response_json(x, false, json_array())));
    stream_item_added(rep, x, 0, message_item(x, "in_progress", json_array()));
    emit(rep, x, "response.content_part.added",
         json_pack("{s:s, s:I, s:i, s:o}", "item_id", x->msg_id, "output_index", (json_int_t)0, "content_index", 0,
                   "part",
                   json_pack("{s:s, s:[], s:[], s:s}", "type", "output_text", "annotations", "logprobs", "text", "")));
    const char *text = x->a->ncalls == 0 && x->a->choices[0].finish != SB_EMU_FINISH_REFUSAL && x->a->choices[0].text
                           ? x->a->choices[0].text
                           : "";
    const char *type = "response.output_text.delta";
    for (const char *p = text; *p;) {
        size_t len = sb_emu_next_word_piece(p);
        emit(
            rep, x, type,
            delta_ev(x, x->msg_id, 0, json_pack("{s:i, s:s%, s:[]}", "content_index", 0, "delta", p, len, "logprobs")));
        p += len;
    }
    json_t *ev = json_pack("{s:s, s:I}", "type", type, "sequence_number", (json_int_t)0);
    json_t *fields = delta_ev(
        x, x->msg_id, 0, json_pack("{s:i, s:s, s:[]}", "content_index", 0, "delta", SB_EMU_ENDLESS_TEXT, "logprobs"));
    json_object_update(ev, fields);
    json_decref(fields);
    sb_emu_reply_endless(rep, "event: response.output_text.delta\ndata: ", ev, "\n\n", "sequence_number", x->seq);
}

/* ---- the handler ----------------------------------------------------------------------- */

static void context_error(struct sb_emu_call *call, long long tokens, long long limit)
{
    (void)tokens;
    (void)limit;
    sb_emu_openai_error(&call->reply, 400,
                        "Your input exceeds the context window of this model. Please adjust your input and try again.",
                        "invalid_request_error", "input", "context_length_exceeded");
}

/* [[emu:leak_key]]: a stream fails after response.created with an "error" event. */
static void leak_error(struct sb_emu_call *call, int status, const char *message, bool stream)
{
    if (!stream) {
        sb_emu_openai_leak_error(call, status, message);
        return;
    }
    struct sb_emu_reply *rep = &call->reply;
    sb_emu_reply_stream_start(rep);
    json_t *created =
        json_pack("{s:s, s:i, s:{s:s, s:s, s:I, s:s, s:s, s:[], s:n}}", "type", "response.created", "sequence_number",
                  0, "response", "id", "resp_leak", "object", "response", "created_at", (json_int_t)time(NULL),
                  "status", "in_progress", "model", call->model ? call->model : "", "output", "error");
    sb_emu_reply_sse(rep, "response.created", created, "\n\n");
    json_decref(created);
    json_t *err = json_pack("{s:s, s:s, s:s, s:n, s:i}", "type", "error", "code", "server_error", "message", message,
                            "param", "sequence_number", 1);
    sb_emu_reply_sse(rep, "error", err, "\n\n");
    json_decref(err);
}

static const struct sb_emu_fault_errors responses_errors = {.status = sb_emu_openai_status_error,
                                                            .context = context_error,
                                                            .context_window = 128000,
                                                            .leak = leak_error,
                                                            .auth = sb_emu_openai_auth_error};
static const struct sb_emu_fault_errors count_errors = {
    .status = sb_emu_openai_status_error, .leak = leak_error, .auth = sb_emu_openai_auth_error};

/* The conversation as the model reads it. All strings owned (NULL when absent). */
struct resp_input {
    char *user_text, *acks, *tool_text, *seen;
    struct sb_emu_tool_result *results; /* the trailing tool outputs (scenarios) */
    size_t nresults;
    long long prompt; /* input tokens: instructions, every item, attachments */
};

/* Reads body's instructions and input (a string input is one user message). */
static void read_input(const json_t *body, struct resp_input *in)
{
    memset(in, 0, sizeof *in);
    json_t *input = json_object_get(body, "input");
    const char *instructions = json_string_value(json_object_get(body, "instructions"));
    if (instructions)
        in->prompt += 4 + (long long)sb_emu_count_words(instructions);
    if (json_is_string(input)) {
        in->user_text = sb_xstrdup(json_string_value(input));
        in->acks = sb_xstrdup("");
        in->prompt += 4 + (long long)sb_emu_count_words(in->user_text);
        return;
    }
    size_t i;
    json_t *item;
    json_array_foreach (input, i, item) {
        char *t = item_text(item);
        in->prompt += 4 + (long long)sb_emu_count_words(t);
        if (is_user_message(item)) {
            free(in->user_text);
            free(in->acks);
            in->user_text = t;
            in->acks = message_acks(item, &in->prompt);
        } else {
            free(t);
        }
    }
    json_t *last = json_array_get(input, json_array_size(input) - 1);
    if (is_tool_output(last))
        in->tool_text = item_text(last);
    if (json_is_array(input)) {
        in->seen = reasoning_seen(input);
        in->results = read_results(input, &in->nresults);
    }
}

static void resp_input_free(struct resp_input *in)
{
    free(in->user_text);
    free(in->acks);
    free(in->tool_text);
    free(in->seen);
    sb_emu_tool_results_free(in->results, in->nresults);
}

void sb_emu_openai_responses_handle(struct sb_emu_call *call)
{
    call->protocol = "openai-responses";
    struct sb_emu_reply *rep = &call->reply;
    struct sb_emu_answer a = {0};
    struct resp_reply x = {0};
    struct sb_emu_fn *fns = NULL;
    char err[MSG_MAX];

    sb_emu_call_set_model_from_body(call);
    if (sb_emu_openai_check_auth(call) || !sb_emu_openai_responses_check(call, false))
        return;
    const json_t *body = call->json;
    struct resp_input in;
    read_input(body, &in);
    const char *user_text = in.user_text, *acks = in.acks, *tool_text = in.tool_text, *seen = in.seen;
    long long prompt = in.prompt;

    if (sb_emu_answer_begin(&a, user_text ? user_text : "", err, sizeof err) < 0) {
        sb_emu_openai_invalid(call, "input", NULL, "%s", err);
        goto done;
    }
    bool stream = json_is_true(json_object_get(body, "stream"));
    if (sb_emu_fault_stage(call, &a.d, stream, prompt, &responses_errors))
        goto done;
    if (a.d.malformed) {
        if (stream) {
            sb_emu_reply_stream_start(rep);
            sb_emu_reply_chunk(rep, "event: response.created\ndata: {\"type\":\"response.created\",\n\n");
        } else {
            sb_emu_reply_malformed(rep, "{\"id\":\"resp_malformed\", this is not JSON");
        }
        goto done;
    }

    struct sb_emu_ask ask = {.user_text = user_text, .acks = acks ? acks : "", .tool_text = tool_text, .n = 1};
    ask.extra = seen && *seen ? seen : NULL;
    ask.forced = read_tools(body, &fns, &ask.nfns, &ask.no_calls, &ask.search);
    ask.fns = fns;
    ask.results = in.results;
    ask.nresults = in.nresults;
    json_t *format = json_object_get(json_object_get(body, "text"), "format");
    const char *ftype = json_string_value(json_object_get(format, "type"));
    if (ftype && !strcmp(ftype, "json_schema")) {
        ask.format = SB_EMU_FMT_SCHEMA;
        ask.schema = json_object_get(format, "schema");
    } else if (ftype && !strcmp(ftype, "json_object")) {
        ask.format = SB_EMU_FMT_JSON;
    }
    json_t *reasoning = json_object_get(body, "reasoning");
    const char *effort = json_string_value(json_object_get(reasoning, "effort"));
    if (effort && strcmp(effort, "none"))
        ask.reasoning = effort;
    json_t *mot = json_object_get(body, "max_output_tokens");
    ask.max_words = json_is_integer(mot) ? (long long)json_integer_value(mot) : 0;
    if (sb_emu_answer_make(call, &ask, &a, err, sizeof err) < 0) {
        sb_emu_openai_invalid(call, "input", NULL, "%s", err);
        goto done;
    }

    x.body = body;
    x.a = &a;
    x.input_tokens = prompt;
    sb_id_new(x.id, sizeof x.id, "resp_", 24);
    sb_id_new(x.rs_id, sizeof x.rs_id, "rs_", 24);
    sb_id_new(x.ws_id, sizeof x.ws_id, "ws_", 24);
    sb_id_new(x.msg_id, sizeof x.msg_id, "msg_", 24);
    x.created = (long long)time(NULL);
    x.encrypted = includes(body, INCLUDE_ENCRYPTED);
    const char *summary = json_string_value(json_object_get(reasoning, "summary"));
    if (!summary)
        summary = json_string_value(json_object_get(reasoning, "generate_summary"));
    x.summary = summary != NULL;
    x.obfuscation = !json_is_false(json_object_get(json_object_get(body, "stream_options"), "include_obfuscation"));
    x.fc_ids = sb_xcalloc(a.ncalls + 1, sizeof *x.fc_ids);
    x.call_ids = sb_xcalloc(a.ncalls + 1, sizeof *x.call_ids);
    for (size_t k = 0; k < a.ncalls; k++) {
        sb_id_new(x.fc_ids[k], sizeof x.fc_ids[k], a.calls[k].custom ? "ctc_" : "fc_", 24);
        sb_id_new(x.call_ids[k], sizeof x.call_ids[k], "call_", 12);
    }

    if (stream) {
        if (a.d.endless)
            reply_endless(rep, &x);
        else
            reply_stream(rep, &x);
        sb_emu_stream_faults(rep, &a.d);
    } else {
        json_t *resp = response_json(&x, true, output_json(&x));
        sb_emu_reply_json(rep, 200, resp);
        json_decref(resp);
    }

done:
    sb_emu_answer_free(&a);
    free(x.fc_ids);
    free(x.call_ids);
    free(fns);
    resp_input_free(&in);
}

/* POST /v1/responses/input_tokens: the input token count a response to the
 * same input would report in usage. */
void sb_emu_openai_responses_count_handle(struct sb_emu_call *call)
{
    call->protocol = "openai-responses";
    sb_emu_call_set_model_from_body(call);
    if (sb_emu_openai_check_auth(call) || !sb_emu_openai_responses_check(call, true))
        return;
    struct resp_input in;
    read_input(call->json, &in);
    struct sb_emu_directives d;
    char *clean = NULL;
    char err[MSG_MAX];
    if (sb_emu_directives_parse(in.user_text ? in.user_text : "", &d, &clean, err, sizeof err) < 0) {
        sb_emu_openai_invalid(call, "input", NULL, "%s", err);
    } else if (!sb_emu_fault_stage(call, &d, false, in.prompt, &count_errors)) {
        if (d.malformed) {
            sb_emu_reply_malformed(&call->reply, "{\"object\":\"response.input_tokens\", this is not JSON");
        } else {
            json_t *r =
                json_pack("{s:s, s:I}", "object", "response.input_tokens", "input_tokens", (json_int_t)in.prompt);
            sb_emu_reply_json(&call->reply, 200, r);
            json_decref(r);
        }
    }
    free(clean);
    resp_input_free(&in);
}

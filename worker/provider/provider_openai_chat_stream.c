/*
 * provider_openai_chat_stream: the openai-chat adapter's stream side
 * (provider_openai_chat.h): Server-Sent Events, each data field one
 * chat.completion.chunk, the last one "[DONE]".
 *
 * Streaming (request.stream): each "data:" chunk is translated as it comes,
 * per choice index (tagged "choice", item indices per choice, when n > 1):
 *   delta.reasoning_content / .reasoning -> a reasoning item: item_added, then
 *                                   reasoning_delta per piece
 *   delta.content                 -> a message item: item_added (partial),
 *                                   text_delta (content_index 0) per piece
 *   delta.refusal                 -> the same message's refusal part (there is
 *                                   no refusal delta: it shows in item_done)
 *   delta.tool_calls[]            -> per index, a function_call item: item_added
 *                                   once its id and name came, then args_delta
 *                                   per arguments piece
 *   a new kind of output closes the open reasoning or message item
 *   (item_done); tool calls stay open until the choice ends, since servers
 *   may interleave their pieces
 *   finish_reason                 -> item_done for what is open; the status
 *                                   (length: incomplete max_output_tokens,
 *                                   content_filter: incomplete content_filter)
 *                                   goes in choice_done (n > 1) and completed
 *   usage (the include_usage chunk, or any chunk's) -> one usage event at the
 *                                   end, from the latest
 *   [DONE]                        -> choices still open end "completed"; usage;
 *                                   completed at the end of the body
 *   {"error":{...}}               -> the final error (status from error.code
 *                                   when it is an HTTP status, as vLLM sends
 *                                   it, else 502); the rest is ignored
 * The item_done items are exactly those of the same answer sent whole. A data
 * line that is not JSON aborts the transfer (the worker reports it); a body
 * that ends before [DONE] with a choice unfinished is a 502; a 2xx body that
 * is plain JSON (a server that ignored "stream") is translated whole.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h" /* SB_PROVIDER_MAX_BODY only: the parser's limit on a response */
#include "provider_openai_chat.h"
#include "provider_util.h"
#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_job.h"
#include "sb_sse.h"

/* Most choices a stream may carry: an index beyond it is a broken upstream,
 * and must not size an allocation. */
#define SB_CHAT_MAX_CHOICES 256

/* The buffer as a JSON string (new reference). Its pieces were jansson
 * strings, so their concatenation is UTF-8. */
static json_t *sb_chat_buf_string(const sb_buf_t *b)
{
    json_t *s = json_stringn(b->p ? b->p : "", b->len);
    return s ? s : json_string("");
}

/* One tool call of a choice, from its first delta to the choice's end. */
typedef struct sb_chat_call {
    json_int_t index;   /* the upstream's tool_calls[].index */
    int item;           /* its item_index, -1 until its id and name are known */
    char id[SB_ID_MAX]; /* the item's id */
    json_t *call_id;    /* the upstream's id, NULL until seen */
    json_t *name;       /* NULL until seen */
    sb_buf_t args;      /* the arguments so far */
} sb_chat_call_t;

/* The reasoning or message item a choice is writing. */
enum sb_chat_open { SB_CHAT_OPEN_NONE, SB_CHAT_OPEN_REASONING, SB_CHAT_OPEN_MESSAGE };

typedef struct sb_chat_choice {
    bool seen;     /* some chunk carried this choice */
    bool finished; /* its finish_reason came: items closed */
    int next_item;
    enum sb_chat_open open;
    int open_item;
    char open_id[SB_ID_MAX];
    sb_buf_t text;         /* the open item's text (reasoning or output_text) */
    sb_buf_t refusal;      /* the open message's refusal */
    sb_chat_call_t *calls; /* open until the choice ends: servers may interleave their pieces */
    size_t n_calls;
    const char *status, *reason; /* once finished */
} sb_chat_choice_t;

enum sb_chat_stream_state {
    SB_CHAT_STREAM_START,  /* only whitespace so far: an event stream, or a plain JSON body? */
    SB_CHAT_STREAM_SSE,    /* reading events */
    SB_CHAT_STREAM_JSON,   /* a plain JSON body (the upstream ignored "stream"): buffered, translated at the end */
    SB_CHAT_STREAM_DONE,   /* [DONE], or a whole end: items and usage sent, completed waits for finish */
    SB_CHAT_STREAM_FAILED, /* a final error sent; nothing after it counts */
};

typedef struct sb_chat_stream {
    const json_t *job; /* borrowed */
    enum sb_chat_stream_state state;
    json_t *events; /* borrowed: where this feed's (or finish's) events go */
    bool multi;     /* n > 1: events tagged with their choice, a choice_done each */
    json_int_t n;   /* the choices asked for */
    sb_chat_choice_t *choices;
    size_t n_choices;
    json_t *usage;       /* the latest usage object */
    sb_sse_reader_t sse; /* SSE: lines and events (common/sb_sse.h) */
    sb_buf_t body;       /* JSON: the whole body */
} sb_chat_stream_t;

void *sb_chat_stream_new(const json_t *job)
{
    sb_chat_stream_t *s = sb_xcalloc(1, sizeof *s);
    s->job = job;
    s->n = json_integer_value(json_object_get(sb_job_request(job), "n"));
    s->multi = s->n > 1;
    /* The limit of a whole body, on a line or an event's data: an absurd
     * one is -E2BIG, which the worker reports. */
    sb_sse_init(&s->sse, SB_PROVIDER_MAX_BODY, 0);
    return s;
}

/* Frees what a choice holds; it keeps its flags and status. */
static void sb_chat_choice_clear(sb_chat_choice_t *c)
{
    for (size_t i = 0; i < c->n_calls; i++) {
        json_decref(c->calls[i].call_id);
        json_decref(c->calls[i].name);
        sb_buf_free(&c->calls[i].args);
    }
    free(c->calls);
    c->calls = NULL;
    c->n_calls = 0;
    sb_buf_free(&c->text);
    sb_buf_free(&c->refusal);
}

void sb_chat_stream_destroy(void *state)
{
    sb_chat_stream_t *s = state;
    if (!s)
        return;
    for (size_t k = 0; k < s->n_choices; k++)
        sb_chat_choice_clear(&s->choices[k]);
    free(s->choices);
    json_decref(s->usage);
    sb_sse_free(&s->sse);
    sb_buf_free(&s->body);
    free(s);
}

/* Sends an event of choice k (tagged when there are several). */
static void sb_chat_stream_emit(sb_chat_stream_t *s, int k, json_t *ev)
{
    if (s->multi)
        sb_event_set_choice(ev, k);
    json_array_append_new(s->events, ev);
}

/* Ends the stream with a final error (stolen). */
static void sb_chat_stream_fail(sb_chat_stream_t *s, json_t *final)
{
    json_array_append_new(s->events, final);
    s->state = SB_CHAT_STREAM_FAILED;
}

static sb_chat_choice_t *sb_chat_stream_choice(sb_chat_stream_t *s, size_t k)
{
    if (k >= s->n_choices) {
        s->choices = sb_xrealloc(s->choices, (k + 1) * sizeof *s->choices);
        memset(s->choices + s->n_choices, 0, (k + 1 - s->n_choices) * sizeof *s->choices);
        s->n_choices = k + 1;
    }
    return &s->choices[k];
}

/* Closes choice k's open reasoning or message item with its complete form. */
static void sb_chat_stream_close(sb_chat_stream_t *s, int k, sb_chat_choice_t *c)
{
    if (c->open == SB_CHAT_OPEN_NONE)
        return;
    json_t *text = c->text.len > 0 ? sb_chat_buf_string(&c->text) : NULL;
    json_t *item;
    if (c->open == SB_CHAT_OPEN_REASONING) {
        item = sb_chat_reasoning_item(c->open_id, text);
    } else {
        json_t *refusal = c->refusal.len > 0 ? sb_chat_buf_string(&c->refusal) : NULL;
        item = sb_chat_message_item(c->open_id, true, text, refusal);
        json_decref(refusal);
    }
    json_decref(text);
    sb_chat_stream_emit(s, k, sb_event_item_done(c->open_item, item));
    c->open = SB_CHAT_OPEN_NONE;
    c->text.len = 0;
    c->refusal.len = 0;
}

/* A piece of reasoning, content or refusal text for choice k: goes to the
 * open item of its kind, else closes the open one and opens its own. A
 * refusal has no delta event: it shows in the message's item_done. */
static void sb_chat_stream_piece(sb_chat_stream_t *s, int k, sb_chat_choice_t *c, enum sb_chat_open kind, bool refusal,
                                 const char *p, size_t n)
{
    if (n == 0)
        return;
    if (c->open != kind) {
        sb_chat_stream_close(s, k, c);
        c->open = kind;
        c->open_item = c->next_item++;
        sb_chat_new_id(c->open_id, sizeof c->open_id, kind == SB_CHAT_OPEN_REASONING ? "rs_" : "msg_");
        sb_chat_stream_emit(
            s, k,
            sb_event_item_added(c->open_item, kind == SB_CHAT_OPEN_REASONING
                                                  ? sb_chat_reasoning_item(c->open_id, NULL)
                                                  : sb_chat_message_item(c->open_id, false, NULL, NULL)));
    }
    if (refusal) {
        sb_buf_add(&c->refusal, p, n);
        return;
    }
    sb_buf_add(&c->text, p, n);
    sb_chat_stream_emit(s, k,
                        kind == SB_CHAT_OPEN_REASONING ? sb_event_reasoning_delta(c->open_item, p, n)
                                                       : sb_event_text_delta(c->open_item, 0, p, n));
}

/* The call a tool_calls[] entry continues, or NULL for a new one. Without an
 * index (some servers leave it out) an entry belongs to the latest call
 * unless it brings another id. */
static sb_chat_call_t *sb_chat_stream_find_call(sb_chat_choice_t *c, const json_t *index, const json_t *id)
{
    if (json_is_integer(index)) {
        for (size_t i = c->n_calls; i > 0; i--)
            if (c->calls[i - 1].index == json_integer_value(index))
                return &c->calls[i - 1];
        return NULL;
    }
    if (c->n_calls == 0)
        return NULL;
    sb_chat_call_t *last = &c->calls[c->n_calls - 1];
    return !id || !last->call_id || json_equal((json_t *)id, last->call_id) ? last : NULL;
}

/* One tool_calls[] entry of choice k's delta: a new call or the next piece
 * of one. A call's item opens once its id and name are known (servers send
 * both with the first piece); arguments that came before go out then, later
 * ones as they come. Returns 0, or -EINVAL for an entry that is no object. */
static int sb_chat_stream_tool_call(sb_chat_stream_t *s, int k, sb_chat_choice_t *c, const json_t *tc)
{
    if (!json_is_object(tc))
        return -EINVAL;
    const json_t *index = json_object_get(tc, "index");
    const json_t *id = json_object_get(tc, "id");
    const json_t *fn = json_object_get(tc, "function");
    const json_t *name = json_object_get(fn, "name");
    const json_t *args = json_object_get(fn, "arguments");
    if (!json_is_string(id) || json_string_length(id) == 0)
        id = NULL;
    if (!json_is_string(name) || json_string_length(name) == 0)
        name = NULL;
    sb_chat_call_t *call = sb_chat_stream_find_call(c, index, id);
    if (!call) {
        c->calls = sb_xrealloc(c->calls, (c->n_calls + 1) * sizeof *c->calls);
        call = &c->calls[c->n_calls];
        memset(call, 0, sizeof *call);
        call->index = json_is_integer(index) ? json_integer_value(index) : (json_int_t)c->n_calls;
        call->item = -1;
        c->n_calls++;
    }
    /* The first id and name stay: some servers repeat them in every piece. */
    if (!call->call_id && id)
        call->call_id = json_incref((json_t *)id);
    if (!call->name && name)
        call->name = json_incref((json_t *)name);
    char *dumped = NULL; /* arguments as an object (some servers): compact JSON */
    if (args && !json_is_null(args) && !json_is_string(args))
        dumped = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
    const char *piece = dumped ? dumped : json_string_value(args);
    size_t n = dumped ? strlen(dumped) : json_string_length(args);
    if (n > 0)
        sb_buf_add(&call->args, piece, n);
    if (call->item < 0 && call->call_id && call->name) {
        call->item = c->next_item++;
        sb_chat_new_id(call->id, sizeof call->id, "fc_");
        sb_chat_stream_emit(
            s, k, sb_event_item_added(call->item, sb_chat_call_item(call->id, call->call_id, call->name, NULL)));
        if (call->args.len > 0)
            sb_chat_stream_emit(s, k, sb_event_args_delta(call->item, call->args.p, call->args.len));
    } else if (call->item >= 0 && n > 0) {
        sb_chat_stream_emit(s, k, sb_event_args_delta(call->item, piece, n));
    }
    free(dumped);
    return 0;
}

/* Choice k is over (its finish_reason, or the end of the stream with choice
 * NULL): its open items close, tool calls last, and with several choices its
 * choice_done follows. A call that never got its id and name fails the
 * stream, as it fails a whole response. */
static void sb_chat_stream_end_choice(sb_chat_stream_t *s, int k, sb_chat_choice_t *c, const json_t *choice)
{
    sb_chat_stream_close(s, k, c);
    for (size_t i = 0; i < c->n_calls; i++) {
        sb_chat_call_t *call = &c->calls[i];
        if (call->item < 0) {
            sb_chat_stream_fail(s,
                                sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed tool call"));
            return;
        }
        json_t *args = sb_chat_buf_string(&call->args);
        sb_chat_stream_emit(
            s, k, sb_event_item_done(call->item, sb_chat_call_item(call->id, call->call_id, call->name, args)));
        json_decref(args);
    }
    sb_chat_finish(choice, &c->status, &c->reason);
    c->finished = true;
    sb_chat_choice_clear(c);
    if (s->multi)
        json_array_append_new(s->events, sb_event_choice_done(k, c->status, c->reason));
}

/* The error event for an {"error":{...}} chunk. vLLM puts the HTTP status it
 * would have answered with in error.code; OpenAI sends a server_error. */
static json_t *sb_chat_stream_error(const json_t *root)
{
    json_int_t code = json_integer_value(json_object_get(json_object_get(root, "error"), "code"));
    bool quota = sb_chat_is_quota(root);
    long status = quota ? 429 : code >= 400 && code < 600 ? (long)code : 502;
    const char *m = sb_provider_error_message(root);
    return sb_provider_upstream_error(status, root, m ? m : "upstream stream reported an error", quota, -1);
}

/* One chat.completion.chunk. */
static void sb_chat_stream_chunk(sb_chat_stream_t *s, const json_t *root)
{
    const json_t *error = json_object_get(root, "error");
    if (error && !json_is_null(error)) { /* an error in the middle of a stream */
        sb_chat_stream_fail(s, sb_chat_stream_error(root));
        return;
    }
    /* The include_usage chunk (choices []), or usage on the last chunk
     * (llama.cpp): one usage event at the end, from the latest. */
    const json_t *usage = json_object_get(root, "usage");
    if (json_is_object(usage)) {
        json_decref(s->usage);
        s->usage = json_incref((json_t *)usage);
    }
    size_t pos;
    const json_t *choice;
    json_array_foreach (json_object_get(root, "choices"), pos, choice) {
        const json_t *index = json_object_get(choice, "index");
        json_int_t k = json_is_integer(index) ? json_integer_value(index) : (json_int_t)pos;
        if (k < 0 || k >= SB_CHAT_MAX_CHOICES) {
            sb_chat_stream_fail(s,
                                sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a choice out of range"));
            return;
        }
        if (k > 0 && !s->multi)
            continue; /* one choice asked for; an extra one has nowhere to go */
        sb_chat_choice_t *c = sb_chat_stream_choice(s, (size_t)k);
        if (c->finished)
            continue;
        c->seen = true;
        const json_t *delta = json_object_get(choice, "delta");
        /* As in a whole message: reasoning_content wins over reasoning. */
        const json_t *reasoning = json_object_get(delta, "reasoning_content");
        if (!json_is_string(reasoning))
            reasoning = json_object_get(delta, "reasoning");
        sb_chat_stream_piece(s, (int)k, c, SB_CHAT_OPEN_REASONING, false, json_string_value(reasoning),
                             json_string_length(reasoning));
        json_t *text = sb_chat_response_text(json_object_get(delta, "content"));
        sb_chat_stream_piece(s, (int)k, c, SB_CHAT_OPEN_MESSAGE, false, json_string_value(text),
                             json_string_length(text));
        json_decref(text);
        const json_t *refusal = json_object_get(delta, "refusal");
        sb_chat_stream_piece(s, (int)k, c, SB_CHAT_OPEN_MESSAGE, true, json_string_value(refusal),
                             json_string_length(refusal));
        const json_t *tool_calls = json_object_get(delta, "tool_calls");
        if (json_array_size(tool_calls) > 0)
            sb_chat_stream_close(s, (int)k, c);
        size_t i;
        const json_t *tc;
        json_array_foreach (tool_calls, i, tc) {
            if (sb_chat_stream_tool_call(s, (int)k, c, tc) < 0) {
                sb_chat_stream_fail(
                    s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed tool call"));
                return;
            }
        }
        const json_t *finish = json_object_get(choice, "finish_reason");
        if (json_is_string(finish) && json_string_length(finish) > 0) {
            sb_chat_stream_end_choice(s, (int)k, c, choice);
            if (s->state == SB_CHAT_STREAM_FAILED)
                return;
        }
    }
}

/* The answer is over ([DONE], or the end of a stream that finished every
 * choice): closes the choices still open, sends usage. */
static void sb_chat_stream_end(sb_chat_stream_t *s)
{
    bool any = false;
    for (size_t k = 0; k < s->n_choices; k++) {
        sb_chat_choice_t *c = &s->choices[k];
        if (!c->seen)
            continue;
        any = true;
        if (!c->finished)
            sb_chat_stream_end_choice(s, (int)k, c, NULL);
        if (s->state == SB_CHAT_STREAM_FAILED)
            return;
    }
    if (!any) {
        sb_chat_stream_fail(s, sb_provider_error_for_status(502, "upstream response has no choices", false, -1));
        return;
    }
    if (s->usage)
        json_array_append_new(s->events, sb_chat_usage(s->usage));
    s->state = SB_CHAT_STREAM_DONE;
}

/* Whether a stream that ended without [DONE] still ended whole: the choice
 * (each of the n asked for) came and ended with its finish_reason. */
static bool sb_chat_stream_whole(const sb_chat_stream_t *s)
{
    size_t want = s->multi ? (size_t)s->n : 1;
    if (s->n_choices < want)
        return false;
    for (size_t k = 0; k < s->n_choices; k++) {
        const sb_chat_choice_t *c = &s->choices[k];
        if ((k < want && !c->seen) || (c->seen && !c->finished))
            return false;
    }
    return true;
}

/* One event's data. Returns 0, or -EBADMSG for data that is not a JSON
 * object (the worker then reports a response it could not parse). */
static int sb_chat_stream_event(sb_chat_stream_t *s, const char *data, size_t len)
{
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        sb_chat_stream_end(s);
        return 0;
    }
    json_t *root = json_loadb(data, len, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return -EBADMSG;
    }
    sb_chat_stream_chunk(s, root);
    json_decref(root);
    return 0;
}

/* One SSE event (sb_sse_event_fn). An event without data is nothing; after
 * [DONE] or a final error the reader stops, and the rest is ignored. */
static int sb_chat_stream_sse_event(void *arg, const char *event, const char *data, size_t len)
{
    (void)event; /* chat streams name no events; the chunk says what it is */
    sb_chat_stream_t *s = arg;
    int rc = len > 0 ? sb_chat_stream_event(s, data, len) : 0;
    if (rc < 0)
        return rc;
    return s->state == SB_CHAT_STREAM_SSE ? 0 : SB_SSE_STOP;
}

int sb_chat_stream_feed(void *state, const char *data, size_t len, json_t *events)
{
    sb_chat_stream_t *s = state;
    s->events = events;
    if (s->state == SB_CHAT_STREAM_START) {
        size_t i = 0;
        while (i < len && isspace((unsigned char)data[i]))
            i++;
        if (i == len)
            return 0;
        /* An event stream opens with a field or a comment, never with '{'. */
        s->state = data[i] == '{' ? SB_CHAT_STREAM_JSON : SB_CHAT_STREAM_SSE;
        data += i;
        len -= i;
    }
    switch (s->state) {
    case SB_CHAT_STREAM_SSE: {
        /* Lines end in LF, CRLF or CR, anywhere in a chunk or across chunks;
         * events go out as their blank line arrives. */
        int rc = sb_sse_feed(&s->sse, data, len, sb_chat_stream_sse_event, s);
        return rc < 0 ? rc : 0;
    }
    case SB_CHAT_STREAM_JSON:
        if (len > SB_PROVIDER_MAX_BODY - s->body.len)
            return -E2BIG;
        sb_buf_add(&s->body, data, len);
        return 0;
    default:
        return 0; /* over: nothing after [DONE] or an error counts */
    }
}

void sb_chat_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events)
{
    sb_chat_stream_t *s = state;
    s->events = events;
    if (s->state == SB_CHAT_STREAM_JSON) {
        sb_provider_response_t r = *resp;
        r.body = s->body.p ? s->body.p : "";
        r.body_len = s->body.len;
        sb_chat_parse_response(s->job, &r, events);
        return;
    }
    if (s->state == SB_CHAT_STREAM_SSE) {
        /* A last line without its line end, a last event without its blank
         * line, still count. */
        int rc = sb_sse_finish(&s->sse, sb_chat_stream_sse_event, s);
        if (rc < 0)
            sb_chat_stream_fail(s, sb_event_error(502, SB_ERR_UPSTREAM, NULL,
                                                  rc == -E2BIG ? "upstream response too large"
                                                               : "upstream returned a malformed stream event"));
        else if (s->state == SB_CHAT_STREAM_SSE && sb_chat_stream_whole(s))
            sb_chat_stream_end(s); /* no [DONE], but nothing is missing */
    }
    switch (s->state) {
    case SB_CHAT_STREAM_START:
    case SB_CHAT_STREAM_SSE:
        sb_chat_stream_fail(
            s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream stream ended before the response was complete"));
        break;
    case SB_CHAT_STREAM_DONE: {
        const char *status = "completed", *reason = NULL; /* the first incomplete choice's */
        for (size_t k = 0; k < s->n_choices; k++) {
            const sb_chat_choice_t *c = &s->choices[k];
            if (c->seen && c->status && !strcmp(c->status, "incomplete")) {
                status = c->status;
                reason = c->reason;
                break;
            }
        }
        json_array_append_new(
            events,
            sb_event_completed(status, reason, json_string_value(json_object_get(s->job, "model")), resp->upstream_us));
        break;
    }
    case SB_CHAT_STREAM_JSON:
    case SB_CHAT_STREAM_FAILED:
        break; /* its final event is out */
    }
}

/*
 * fe_style: the plug-in interface of the request styles (Responses, Chat
 * Completions, Messages, Generate Content), as nginx's protocol modules fill
 * ngx_http_upstream_t's callbacks: a style translates its wire format to the
 * canonical request and the result back, and renders its stream; the
 * pipeline (pipeline/fe_generate.c) does everything else.
 *
 * A style never sees the request object. Its hooks take narrow arguments:
 *   parse(in, body, out, err)   what it reads of the HTTP request (fe_style_in_t)
 *                               and the JSON body -> the parsed request (fe_parsed_t)
 *   render(result, ctx)         the collected result (fe_collect.h) and a render
 *                               context (fe_render_ctx_t) -> the reply body
 *   stream->event(s, ev, out)   the same context, the result so far and the
 *                               renderer's own state (fe_stream_ctx_t)
 * so each style and each renderer is tested with a few structs
 * (tests/unit/frontend/test_style_<s>.c, test_stream_<s>.c). What differs
 * between styles and the pipeline must name (the parameters of its errors,
 * how a key is sent) is data in the vtable.
 *
 * Ownership: every pointer in fe_style_in_t, fe_render_ctx_t and
 * fe_stream_ctx_t is borrowed for the call. fe_parsed_t's pointers are owned
 * by the parsed request (fe_parsed_free).
 */
#ifndef FE_STYLE_H
#define FE_STYLE_H

#include <event2/buffer.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fe_collect.h"
#include "fe_error.h"
#include "sb_db.h"
#include "sb_http.h"
#include "sb_id.h"
#include "sb_seal.h"

struct fe_request;
struct fe_stream_style;

/* Sealing for one caller (pipeline/fe_reasoning.h seals and opens with it):
 * the gateway's reasoning key and the caller's account, which every token is
 * bound to. */
typedef struct fe_sealer {
    const sb_seal_key_t *key; /* NULL: no reasoning key is configured */
    long long account_id;
} fe_sealer_t;

/* What a style's parse reads of the HTTP request besides its body. */
typedef struct fe_style_in {
    const sb_http_req_t *http; /* headers and query string (fe_style_in_header, _query); NULL: none */
    const char *path;          /* the path as routed (Generate Content reads its ":method") */
    const char *path_arg;      /* the route's {} segment (Generate Content's model), or NULL */
    bool count_tokens;         /* the body of a token-count endpoint (fe_style_t.render_count) */
    fe_sealer_t seal;          /* opens the tokens a client hands back (thinking signatures...) */
} fe_style_in_t;

/* What a style's parse fills: the canonical request and the reply's shape.
 * Part of the request (r->parsed). Before parse: store true, n 1,
 * style_state an empty object, the rest zero (fe_parsed_init). */
typedef struct fe_parsed {
    json_t *canonical;           /* canonical request (sb_job.h "request"); its input is this request's own, owned */
    char *model_id;              /* the model asked for (after a fallback: the one answering), owned */
    char *previous_response_id;  /* owned */
    char *conversation_id;       /* the conversation the request reads and extends (Responses), owned */
    json_t *prompt_ref;          /* the request's prompt {id, version, variables}, owned */
    char response_id[SB_ID_MAX]; /* the reply's id, in the style's form ("resp_...", "chatcmpl-...") */
    bool store;                  /* store the result (fe_style_t.store) */
    bool stream;                 /* answer as a stream (fe_stream.h) */
    bool background;             /* a background response (Responses; pipeline/fe_bg.h, docs/background.md) */
    const struct fe_stream_style *stream_style; /* set by parse when not style->stream */
    bool seal_reasoning;                        /* return reasoning items with encrypted_content */
    int n;                                      /* choices asked for (Chat Completions n); 1 otherwise */
    json_t *style_state; /* per-style extras for rendering (the pipeline keeps scratch there too), owned */
} fe_parsed_t;

/* What render and a stream renderer read besides the result. */
typedef struct fe_render_ctx {
    const fe_parsed_t *parsed; /* what parse filled; render may cache in parsed->style_state */
    int64_t start_ms;          /* when the request arrived (Unix ms): the reply's creation time */
    const char *request_id;    /* the gateway's request id (Anthropic's error body carries it) */
    fe_sealer_t seal;          /* seals reasoning for the caller's account */
} fe_render_ctx_t;

/* What a stream renderer's hooks get (fe_stream_style_t). */
typedef struct fe_stream_ctx {
    fe_render_ctx_t render;     /* as the final render gets it */
    const fe_collect_t *result; /* the events folded so far (fe_collect) */
    void *state;                /* the renderer's own: state_size bytes, zeroed at the start */
} fe_stream_ctx_t;

/* How one style renders a stream (pipeline/fe_stream.c drives it). Every
 * hook appends its bytes to out. */
typedef struct fe_stream_style {
    const char *content_type;
    size_t state_size; /* the renderer's per-stream state (s->state) */
    /* The first bytes of the stream (may append nothing). */
    void (*open)(fe_stream_ctx_t *s, struct evbuffer *out);
    /* One non-final canonical event (already folded into s->result). */
    void (*event)(fe_stream_ctx_t *s, const json_t *ev, struct evbuffer *out);
    /* The job completed; rendered is the non-streamed body (style->render). */
    void (*close)(fe_stream_ctx_t *s, const json_t *rendered, struct evbuffer *out);
    /* The job failed after the stream had started. */
    void (*fail)(fe_stream_ctx_t *s, const fe_error_t *e, struct evbuffer *out);
    /* Something that keeps proxies from cutting a quiet stream. */
    void (*keepalive)(fe_stream_ctx_t *s, struct evbuffer *out);
    /* Frees what the state points to (optional). */
    void (*state_free)(void *state);
} fe_stream_style_t;

/* Keeps a rendered result (store/fe_responses_store.c, fe_chat_store.c):
 * issues one database write and calls done(res, err, r) when it is over. A
 * store module reads the request (its key, context, the raw body); the
 * style only names which one keeps its results. */
typedef void (*fe_store_fn)(struct fe_request *r, const json_t *rendered, sb_db_cb done);

/* An inbound API style. */
typedef struct fe_style {
    const char *name;
    /* How a key is sent, for the 401 of a request that has none
     * ("Invalid API Key: no API key provided. Send it as %s."). */
    const char *key_hint;
    /* The parameter that limits the output, and the one that holds the
     * input, as the style names them (the 400s of the size checks). */
    const char *max_tokens_param;
    const char *input_param;
    /* The parameters a model's capability refusals name (fe_features.c):
     * the structured-output format, the reasoning effort, the parts. */
    const char *format_param;
    const char *effort_param;
    const char *parts_param;
    /* The presented key, or NULL (sets *len). */
    const char *(*key)(sb_http_req_t *http, size_t *len);
    /* The style's error body; request_id may be NULL (new reference). */
    json_t *(*error_body)(const fe_error_t *e, const char *request_id);
    /* The body -> out: 0, or -1 with err set (in the style's wording). */
    int (*parse)(const fe_style_in_t *in, json_t *body, fe_parsed_t *out, fe_error_t *err);
    /* A successful result -> the reply's body (new reference), or NULL when
     * it cannot be rendered. */
    json_t *(*render)(const fe_collect_t *res, const fe_render_ctx_t *ctx);
    /* A token count's result -> the count endpoint's body (new reference).
     * NULL: the style has no count endpoint. */
    json_t *(*render_count)(const fe_collect_t *res, const fe_render_ctx_t *ctx);
    /* Keeps the rendered result when parsed.store; NULL: nothing to store. */
    fe_store_fn store;
    /* How the style streams; NULL: it cannot. */
    const fe_stream_style_t *stream;
} fe_style_t;

/* The styles (style/<style>/fe_<style>_parse.c). */
extern const fe_style_t fe_style_responses;
extern const fe_style_t fe_style_chat;
extern const fe_style_t fe_style_messages;
extern const fe_style_t fe_style_gemini; /* Generate Content */

/* Their stream renderers (style/<style>/fe_stream_<style>.c). */
extern const fe_stream_style_t fe_stream_responses;
extern const fe_stream_style_t fe_stream_chat;
extern const fe_stream_style_t fe_stream_messages;
extern const fe_stream_style_t fe_stream_gemini;       /* ?alt=sse */
extern const fe_stream_style_t fe_stream_gemini_array; /* Google's default: one streamed JSON array */

/* A header of the request (borrowed), or NULL when absent or in has no
 * HTTP request. */
const char *fe_style_in_header(const fe_style_in_t *in, const char *name);

/* A query-string parameter (decoded) into buf: 0, or -1 when absent, too
 * long, or in has no HTTP request. */
int fe_style_in_query(const fe_style_in_t *in, const char *name, char *buf, size_t len);

/* A parsed request as parse expects it (store true, n 1, an empty
 * style_state), and its release (p zeroed). */
void fe_parsed_init(fe_parsed_t *p);
void fe_parsed_free(fe_parsed_t *p);

#endif

/*
 * wtool_image_parse: the image upstream's answer read into image events
 * (wtool_image.h): OpenAI's ImagesResponse ({created, data:[{b64_json,
 * revised_prompt}], usage, background, output_format, quality, size}), its
 * event stream (image_generation.partial_image / image_edit.partial_image,
 * then *.completed), Gemini's GenerateContentResponse (the first image
 * among candidates[0]'s parts), and error bodies of both.
 *
 * The body comes in pieces as the transfer delivers it. A 2xx body is
 * told apart by its first byte that is not white space: '{' is one JSON
 * document (read whole at the end: the image is in it), anything else an
 * event stream (read event by event, so partial images go out as they
 * come). That holds whatever was asked for: a compatible server that
 * answers a stream request with one JSON body still works. A non-2xx body
 * is an error, read whole at the end.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_sse.h"
#include "wtool_image.h"

/* Most bytes of an error body read (the message is in the first few hundred). */
#define SB_IMAGE_ERROR_BODY_MAX (1024u * 1024u)
/* Room an event or a JSON answer has besides its image. */
#define SB_IMAGE_EVENT_SLACK (64u * 1024u)
#define SB_IMAGE_BODY_SLACK (1024u * 1024u)

enum sb_image_mode {
    SB_IMAGE_MODE_WAIT = 0, /* 2xx, nothing but white space seen yet (kept in body) */
    SB_IMAGE_MODE_JSON,     /* 2xx, one JSON document: kept in body, read at finish */
    SB_IMAGE_MODE_SSE,      /* 2xx, an event stream: read as it comes */
    SB_IMAGE_MODE_ERROR,    /* not 2xx: the error body, kept (up to a cap) in body */
};

struct sb_image_parser {
    enum sb_image_api api;
    int max_partials; /* partial images passed on */
    size_t max_b64;
    size_t body_max; /* JSON mode */
    json_t *scrub;   /* {"route":{"credential_ref"}}: what sb_provider_scrub needs to know the route's secret */
    long status;
    bool have_status;
    enum sb_image_mode mode;
    sb_buf_t body;
    bool over;           /* the error body passed its cap (the rest was dropped) */
    sb_sse_reader_t sse; /* SSE mode */
    int partials;        /* partial images appended */
    bool done;           /* the outcome is appended */
    json_t *events;      /* the caller's array, during a feed or finish */
};

/* ---- helpers ------------------------------------------------------------------------------------ */

/* s cut to SB_IMAGE_MESSAGE_MAX bytes on a UTF-8 boundary (new string). */
static char *sb_image_clip(const char *s)
{
    size_t n = strlen(s);
    if (n <= SB_IMAGE_MESSAGE_MAX)
        return sb_xstrdup(s);
    n = SB_IMAGE_MESSAGE_MAX;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return sb_xstrndup(s, n);
}

/* Upstream text made fit to pass on: scrubbed whole (a cut must not keep
 * half a secret), then cut. New string. */
static char *sb_image_clean(const sb_image_parser_t *p, const char *s)
{
    char *scrubbed = sb_provider_scrub(p->scrub, s);
    char *out = sb_image_clip(scrubbed);
    free(scrubbed);
    return out;
}

/* Appends the error outcome. message and detail are upstream text (cleaned
 * here) or the gateway's own words; code and detail may be NULL. */
static void sb_image_fail(sb_image_parser_t *p, long status, const char *message, const char *code, const char *detail)
{
    if (p->done)
        return;
    char *msg = sb_image_clean(p, message);
    json_t *ev = json_pack("{s:s, s:I, s:s}", "type", SB_IMAGE_EV_ERROR, "status", (json_int_t)status, "message",
                           msg ? msg : "");
    free(msg);
    if (ev && code) {
        char *c = sb_image_clean(p, code);
        json_object_set_new(ev, "code", json_string(c));
        free(c);
    }
    if (ev && detail) {
        char *d = sb_image_clean(p, detail);
        json_object_set_new(ev, "operator_detail", json_string(d));
        free(d);
    }
    if (!ev) /* a message jansson refused (not UTF-8 after a cut): the gateway's words instead */
        ev = json_pack("{s:s, s:I, s:s}", "type", SB_IMAGE_EV_ERROR, "status", (json_int_t)status, "message",
                       "the image upstream failed");
    json_array_append_new(p->events, ev);
    p->done = true;
}

/* The same with the gateway's own formatted words, status 502 (a 2xx answer that is unusable). */
static void sb_image_bad(sb_image_parser_t *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_image_bad(sb_image_parser_t *p, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sb_image_fail(p, 502, msg, NULL, NULL);
}

/* An error object in a 2xx answer ({"error":{message,code|status}} or an
 * error event of the stream): a 502 with the upstream's words. */
static void sb_image_fail_object(sb_image_parser_t *p, const json_t *root)
{
    const char *msg = sb_provider_error_message(root);
    const json_t *e = json_object_get(root, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    if (!code)
        code = json_string_value(json_object_get(e, "status"));
    if (!code)
        code = json_string_value(json_object_get(root, "code"));
    sb_image_fail(p, 502, msg && *msg ? msg : "the image upstream reported an error", code, NULL);
}

/* Checks an image's base64 (a JSON string of the answer). Returns its
 * format, or SB_IMAGE_NONE after appending the error outcome. */
static enum sb_image_format sb_image_check(sb_image_parser_t *p, const json_t *s)
{
    enum sb_image_format fmt = SB_IMAGE_NONE;
    int rc = sb_image_check_b64(json_string_value(s), json_string_length(s), p->max_b64, &fmt);
    if (rc == -E2BIG)
        sb_image_bad(p, "the image upstream's image is over %zu bytes of base64", p->max_b64);
    else if (rc == -EMEDIUMTYPE)
        sb_image_bad(p, "the image upstream's answer is not a PNG, JPEG or WEBP image");
    else if (rc < 0)
        sb_image_bad(p, "the image upstream's image is not valid base64");
    return rc < 0 ? SB_IMAGE_NONE : fmt;
}

/* A new event {type, b64, output_format, mime} for a checked image. */
static json_t *sb_image_event(const char *type, json_t *b64, enum sb_image_format fmt)
{
    json_t *ev = json_pack("{s:s, s:O, s:s, s:s}", "type", type, "b64", b64, "output_format", sb_image_format_name(fmt),
                           "mime", sb_image_format_mime(fmt));
    return ev;
}

/* Copies background, quality and size when the upstream gave them as
 * short strings (upstream text: scrubbed like the rest). */
static void sb_image_copy_settings(const sb_image_parser_t *p, json_t *ev, const json_t *from)
{
    static const char *const keys[] = {"background", "quality", "size"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(from, keys[i]);
        if (!json_is_string(v) || json_string_length(v) > 64)
            continue;
        char *clean = sb_image_clean(p, json_string_value(v));
        json_object_set_new(ev, keys[i], json_string(clean));
        free(clean);
    }
}

/* The integer fields names[] of from (non-negative) into a new object; NULL when none. */
static json_t *sb_image_ints(const json_t *from, const char *const *names, const char *const *as, size_t n)
{
    if (!json_is_object(from))
        return NULL;
    json_t *out = json_object();
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_object_get(from, names[i]);
        if (json_is_integer(v) && json_integer_value(v) >= 0)
            json_object_set_new(out, as[i], json_integer(json_integer_value(v)));
    }
    if (json_object_size(out) == 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* OpenAI's usage, integers only (nothing else of the upstream's passes on). */
static json_t *sb_image_usage_openai(const json_t *u)
{
    static const char *const top[] = {"input_tokens", "output_tokens", "total_tokens"};
    static const char *const details[] = {"image_tokens", "text_tokens"};
    json_t *out = sb_image_ints(u, top, top, 3);
    if (!out)
        return NULL;
    json_t *in = sb_image_ints(json_object_get(u, "input_tokens_details"), details, details, 2);
    if (in)
        json_object_set_new(out, "input_tokens_details", in);
    json_t *o = sb_image_ints(json_object_get(u, "output_tokens_details"), details, details, 2);
    if (o)
        json_object_set_new(out, "output_tokens_details", o);
    return out;
}

/* ---- OpenAI ----------------------------------------------------------------------------------- */

/* The final image of an ImagesResponse or of a *.completed event (obj holds
 * b64_json and the settings; usage is obj's). */
static void sb_image_final(sb_image_parser_t *p, const json_t *obj, const json_t *root, const char *revised)
{
    json_t *b64 = json_object_get(obj, "b64_json");
    if (!json_is_string(b64)) {
        if (json_is_string(json_object_get(obj, "url")))
            sb_image_bad(p, "the image upstream answered with a URL, not the image (a dall-e model?)");
        else
            sb_image_bad(p, "the image upstream's answer has no image");
        return;
    }
    enum sb_image_format fmt = sb_image_check(p, b64);
    if (fmt == SB_IMAGE_NONE)
        return;
    json_t *ev = sb_image_event(SB_IMAGE_EV_IMAGE, b64, fmt);
    sb_image_copy_settings(p, ev, root);
    if (revised) {
        char *r = sb_image_clean(p, revised);
        json_object_set_new(ev, "revised_prompt", json_string(r));
        free(r);
    }
    json_t *usage = sb_image_usage_openai(json_object_get(root, "usage"));
    if (usage)
        json_object_set_new(ev, "usage", usage);
    json_array_append_new(p->events, ev);
    p->done = true;
}

/* A whole ImagesResponse. */
static void sb_image_openai_json(sb_image_parser_t *p, const json_t *root)
{
    const json_t *data = json_object_get(root, "data");
    if (json_is_object(json_object_get(root, "error")) && !json_is_array(data)) {
        sb_image_fail_object(p, root);
        return;
    }
    const json_t *first = json_array_get(data, 0);
    if (!json_is_object(first)) {
        sb_image_bad(p, "the image upstream's answer has no image");
        return;
    }
    sb_image_final(p, first, root, json_string_value(json_object_get(first, "revised_prompt")));
}

static bool sb_image_ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && !memcmp(s + n - t, tail, t);
}

/* One event of the stream (its data a JSON object). */
static void sb_image_openai_event(sb_image_parser_t *p, const char *name, const json_t *o)
{
    const char *type = json_string_value(json_object_get(o, "type"));
    if (!type)
        type = name;
    if (!strcmp(type, "error") || json_is_object(json_object_get(o, "error"))) {
        sb_image_fail_object(p, o);
        return;
    }
    bool ours = !strncmp(type, "image_generation.", 17) || !strncmp(type, "image_edit.", 11);
    if (ours && sb_image_ends_with(type, ".completed")) {
        sb_image_final(p, o, o, NULL);
        return;
    }
    if (!ours || !sb_image_ends_with(type, ".partial_image") || p->partials >= p->max_partials)
        return; /* other events (and partials past what was asked) are not the loop's */
    json_t *b64 = json_object_get(o, "b64_json");
    if (!json_is_string(b64)) {
        sb_image_bad(p, "the image upstream sent a partial image without its data");
        return;
    }
    enum sb_image_format fmt = sb_image_check(p, b64);
    if (fmt == SB_IMAGE_NONE)
        return;
    json_t *ev = sb_image_event(SB_IMAGE_EV_PARTIAL, b64, fmt);
    /* Ours, 0-based and rising: the upstream's own index is 0-based as well,
     * but nothing makes a misbehaving one keep to it. */
    json_object_set_new(ev, "partial_image_index", json_integer(p->partials++));
    sb_image_copy_settings(p, ev, o);
    json_array_append_new(p->events, ev);
}

static int sb_image_on_event(void *arg, const char *event, const char *data, size_t len)
{
    sb_image_parser_t *p = arg;
    if (p->done)
        return SB_SSE_STOP;
    if (len == 0 || (len == 6 && !memcmp(data, "[DONE]", 6)))
        return 0;
    json_t *o = json_loadb(data, len, 0, NULL);
    if (!json_is_object(o))
        sb_image_bad(p, "the image upstream sent a malformed event");
    else
        sb_image_openai_event(p, event, o);
    json_decref(o);
    return p->done ? SB_SSE_STOP : 0;
}

/* ---- Gemini ----------------------------------------------------------------------------------- */

/* A GenerateContentResponse: the first image among candidates[0]'s parts
 * that are not thoughts (Gemini 3 image models think in draft images). */
static void sb_image_gemini_json(sb_image_parser_t *p, const json_t *root)
{
    if (json_is_object(json_object_get(root, "error"))) {
        sb_image_fail_object(p, root);
        return;
    }
    const char *block = json_string_value(json_object_get(json_object_get(root, "promptFeedback"), "blockReason"));
    if (block) {
        char msg[160];
        snprintf(msg, sizeof msg, "the image upstream blocked the prompt (%.64s)", block);
        sb_image_fail(p, 502, msg, "blocked", NULL);
        return;
    }
    const json_t *cand = json_array_get(json_object_get(root, "candidates"), 0);
    const json_t *parts = json_object_get(json_object_get(cand, "content"), "parts");
    sb_buf_t text = {0};
    json_t *image = NULL;
    const char *mime = NULL;
    size_t i;
    const json_t *part;
    json_array_foreach (parts, i, part) {
        if (json_is_true(json_object_get(part, "thought")))
            continue;
        const json_t *t = json_object_get(part, "text");
        if (json_is_string(t) && text.len < SB_IMAGE_MESSAGE_MAX)
            sb_buf_add(&text, json_string_value(t), json_string_length(t));
        const json_t *inl = json_object_get(part, "inlineData");
        if (!inl)
            inl = json_object_get(part, "inline_data");
        const json_t *data = json_object_get(inl, "data");
        if (!image && json_is_string(data)) {
            image = (json_t *)data;
            mime = json_string_value(json_object_get(inl, "mimeType"));
        }
    }
    (void)mime; /* the bytes say what the image is */
    char *said = text.len ? sb_image_clean(p, text.p) : NULL;
    sb_buf_free(&text);
    if (!image) {
        const char *finish = json_string_value(json_object_get(cand, "finishReason"));
        char msg[SB_IMAGE_MESSAGE_MAX + 160];
        snprintf(msg, sizeof msg, "the image upstream returned no image%s%.64s%s%s%s", finish ? " (finishReason " : "",
                 finish ? finish : "", finish ? ")" : "", said ? ": " : "", said ? said : "");
        bool safety = finish && (strstr(finish, "SAFETY") || !strcmp(finish, "PROHIBITED_CONTENT") ||
                                 !strcmp(finish, "BLOCKLIST") || !strcmp(finish, "SPII"));
        sb_image_fail(p, 502, msg, safety ? "blocked" : NULL, NULL);
        free(said);
        return;
    }
    enum sb_image_format fmt = sb_image_check(p, image);
    if (fmt == SB_IMAGE_NONE) {
        free(said);
        return;
    }
    json_t *ev = sb_image_event(SB_IMAGE_EV_IMAGE, image, fmt);
    if (said) {
        json_t *s = json_string(said);
        if (s)
            json_object_set_new(ev, "text", s);
        free(said);
    }
    static const char *const from[] = {"promptTokenCount", "candidatesTokenCount", "totalTokenCount"};
    static const char *const as[] = {"input_tokens", "output_tokens", "total_tokens"};
    json_t *usage = sb_image_ints(json_object_get(root, "usageMetadata"), from, as, 3);
    if (usage)
        json_object_set_new(ev, "usage", usage);
    json_array_append_new(p->events, ev);
    p->done = true;
}

/* ---- the parser ------------------------------------------------------------------------------- */

static bool sb_image_2xx(long status)
{
    return status >= 200 && status < 300;
}

sb_image_parser_t *sb_image_parser_new(const sb_image_req_t *req, const json_t *route, size_t max_b64)
{
    sb_image_parser_t *p = sb_xcalloc(1, sizeof *p);
    p->api = req->api == SB_IMAGE_API_GEMINI ? SB_IMAGE_API_GEMINI : SB_IMAGE_API_OPENAI;
    p->max_partials = req->stream ? req->partial_images : 0;
    p->max_b64 = max_b64 ? max_b64 : SB_IMAGE_MAX_B64;
    p->body_max = 2 * p->max_b64 + SB_IMAGE_BODY_SLACK;
    const char *ref = json_string_value(json_object_get(route, "credential_ref"));
    p->scrub = ref ? json_pack("{s:{s:s}}", "route", "credential_ref", ref) : json_object();
    if (!p->scrub)
        p->scrub = json_object();
    sb_sse_init(&p->sse, p->max_b64 + SB_IMAGE_EVENT_SLACK, 0);
    return p;
}

void sb_image_parser_destroy(sb_image_parser_t **pp)
{
    if (!pp || !*pp)
        return;
    sb_image_parser_t *p = *pp;
    sb_buf_free(&p->body);
    sb_sse_free(&p->sse);
    json_decref(p->scrub);
    free(p);
    *pp = NULL;
}

/* Event stream bytes. */
static void sb_image_feed_sse(sb_image_parser_t *p, const char *data, size_t len)
{
    int rc = sb_sse_feed(&p->sse, data, len, sb_image_on_event, p);
    if (rc == -E2BIG)
        sb_image_bad(p, "an event of the image upstream's stream is over %zu bytes", p->sse.max);
}

/* JSON document bytes, kept for finish. */
static void sb_image_feed_json(sb_image_parser_t *p, const char *data, size_t len)
{
    if (p->body.len + len > p->body_max)
        sb_image_bad(p, "the image upstream's answer is over %zu bytes", p->body_max);
    else if (len)
        sb_buf_add(&p->body, data, len);
}

/* 2xx bytes before the answer's kind is known: white space is kept; the
 * first other byte decides. */
static void sb_image_feed_wait(sb_image_parser_t *p, const char *data, size_t len)
{
    size_t i = 0;
    while (i < len && data[i] && strchr(" \t\r\n", data[i]))
        i++;
    /* The same bound as a JSON answer's, on the white space before it
     * (however the body is cut into pieces, the outcome is the same). */
    if (p->body.len + i > p->body_max) {
        sb_image_bad(p, "the image upstream's answer is over %zu bytes", p->body_max);
        return;
    }
    if (i == len) {
        if (len)
            sb_buf_add(&p->body, data, len);
        return;
    }
    if (data[i] == '{' || p->api == SB_IMAGE_API_GEMINI) {
        p->mode = SB_IMAGE_MODE_JSON;
        sb_image_feed_json(p, data, len);
        return;
    }
    /* The white space kept so far is the stream's start: a blank line, say. */
    p->mode = SB_IMAGE_MODE_SSE;
    if (p->body.len)
        sb_image_feed_sse(p, p->body.p, p->body.len);
    sb_buf_free(&p->body);
    if (!p->done)
        sb_image_feed_sse(p, data, len);
}

/* The first status seen is the response's. */
static void sb_image_take_status(sb_image_parser_t *p, long status)
{
    if (p->have_status)
        return;
    p->have_status = true;
    p->status = status;
    if (!sb_image_2xx(status))
        p->mode = SB_IMAGE_MODE_ERROR;
}

int sb_image_parser_feed(sb_image_parser_t *p, long status, const char *data, size_t len, json_t *events)
{
    if (p->done)
        return 1;
    sb_image_take_status(p, status);
    p->events = events;
    switch (p->mode) {
    case SB_IMAGE_MODE_ERROR:
        if (p->body.len + len > SB_IMAGE_ERROR_BODY_MAX) {
            p->over = true;
            len = SB_IMAGE_ERROR_BODY_MAX - p->body.len;
        }
        if (len)
            sb_buf_add(&p->body, data, len);
        break;
    case SB_IMAGE_MODE_WAIT:
        sb_image_feed_wait(p, data, len);
        break;
    case SB_IMAGE_MODE_JSON:
        sb_image_feed_json(p, data, len);
        break;
    case SB_IMAGE_MODE_SSE:
        sb_image_feed_sse(p, data, len);
        break;
    }
    if (p->done)
        sb_buf_free(&p->body); /* nothing more is read: let a large answer go now */
    p->events = NULL;
    return p->done ? 1 : 0;
}

/* A non-2xx body: the upstream's message, or a generic one. */
static void sb_image_http_error(sb_image_parser_t *p)
{
    json_t *root = p->over || !p->body.len ? NULL : json_loadb(p->body.p, p->body.len, 0, NULL);
    const char *msg = json_is_object(root) ? sb_provider_error_message(root) : NULL;
    const json_t *e = json_object_get(root, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    if (!code)
        code = json_string_value(json_object_get(e, "status"));
    char generic[96];
    if (p->status == 401 || p->status == 403) {
        /* The route's credential failed: the operator's to fix, not the
         * model's or the client's to read about. */
        snprintf(generic, sizeof generic, "the image upstream refused the gateway's credential (HTTP %ld)", p->status);
        sb_image_fail(p, p->status, generic, NULL, msg && *msg ? msg : NULL);
    } else if (msg && *msg) {
        sb_image_fail(p, p->status, msg, code, NULL);
    } else {
        snprintf(generic, sizeof generic, "the image upstream returned HTTP %ld", p->status);
        sb_image_fail(p, p->status, generic, code, NULL);
    }
    json_decref(root);
}

void sb_image_parser_finish(sb_image_parser_t *p, long status, json_t *events)
{
    if (p->done)
        return;
    sb_image_take_status(p, status);
    p->events = events;
    switch (p->mode) {
    case SB_IMAGE_MODE_ERROR:
        sb_image_http_error(p);
        break;
    case SB_IMAGE_MODE_WAIT:
        sb_image_bad(p, "the image upstream's answer was empty");
        break;
    case SB_IMAGE_MODE_JSON: {
        json_error_t jerr;
        json_t *root = json_loadb(p->body.p, p->body.len, 0, &jerr);
        if (!json_is_object(root))
            sb_image_bad(p, "the image upstream's answer is not a JSON object");
        else if (p->api == SB_IMAGE_API_GEMINI)
            sb_image_gemini_json(p, root);
        else
            sb_image_openai_json(p, root);
        json_decref(root);
        break;
    }
    case SB_IMAGE_MODE_SSE: {
        int rc = sb_sse_finish(&p->sse, sb_image_on_event, p);
        if (rc == -E2BIG)
            sb_image_bad(p, "an event of the image upstream's stream is over %zu bytes", p->sse.max);
        sb_image_bad(p, "the image upstream's stream ended before the image");
        break;
    }
    }
    p->done = true;
    sb_buf_free(&p->body);
    p->events = NULL;
}

void sb_image_parse(const sb_image_req_t *req, const json_t *route, size_t max_b64, long status, const char *body,
                    size_t len, json_t *events)
{
    sb_image_parser_t *p = sb_image_parser_new(req, route, max_b64);
    (void)sb_image_parser_feed(p, status, body, len, events);
    sb_image_parser_finish(p, status, events);
    sb_image_parser_destroy(&p);
}

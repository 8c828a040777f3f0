/*
 * emu_gemini: the Gemini API (Generative Language, v1beta and v1):
 * POST models/{model}:generateContent, :streamGenerateContent (?alt=sse for
 * SSE, else a streamed JSON array), :countTokens, GET models and
 * models/{model}.
 *
 * Auth is an API key in x-goog-api-key or ?key=, answered like Google (403
 * without one, 400 API_KEY_INVALID for a wrong one). emu_gemini_check.c
 * validates the body; this file reduces it to what the emulated model reads
 * (the last user turn with text, its inline and file data, a trailing
 * functionResponse, function declarations, toolConfig, generationConfig),
 * lets emu_answer.c decide and writes GenerateContentResponse candidates with
 * usageMetadata. Function calls carry a thoughtSignature when the model
 * thinks, which the next request must send back. Everything is documented at
 * the top of main.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu_embed.h"
#include "emu_image.h"
#include "emu_internal.h"
#include "sb_alloc.h"
#include "sb_id.h"

#define MSG_MAX 512
#define SSE_END "\r\n\r\n"

struct gem_reply {
    const json_t *req;
    struct sb_emu_answer *a;
    const char *model;
    char response_id[SB_ID_MAX];
    long long prompt_tokens;
    bool thinking;         /* signatures on function calls, thoughtsTokenCount */
    bool include_thoughts; /* a thought part first */
    json_t *image;         /* an image model's inlineData part after the text (emu_gemini_image.c), or NULL */
    bool image_only;       /* responseModalities without TEXT: the image is the only part */
};

static const char *status_name(int code)
{
    switch (code) {
    case 400:
        return "INVALID_ARGUMENT";
    case 401:
        return "UNAUTHENTICATED";
    case 403:
        return "PERMISSION_DENIED";
    case 404:
        return "NOT_FOUND";
    case 409:
        return "ABORTED";
    case 429:
        return "RESOURCE_EXHAUSTED";
    case 499:
        return "CANCELLED";
    case 500:
        return "INTERNAL";
    case 501:
        return "UNIMPLEMENTED";
    case 503:
        return "UNAVAILABLE";
    case 504:
        return "DEADLINE_EXCEEDED";
    }
    return code >= 500 ? "INTERNAL" : "FAILED_PRECONDITION";
}

/* ---- auth ------------------------------------------------------------------------------- */

static bool check_auth(struct sb_emu_call *call)
{
    const char *key = sb_emu_required_key(call->emu);
    if (!key)
        return true;
    const char *given = sb_emu_call_header(call, "x-goog-api-key");
    char *query_key = given ? NULL : sb_emu_call_query_param(call, "key");
    if (!given)
        given = query_key;
    bool ok = given && !strcmp(given, key);
    if (!given && sb_emu_call_header(call, "Authorization")) {
        sb_emu_gemini_error(&call->reply, 401, "UNAUTHENTICATED", NULL,
                            "Request had invalid authentication credentials. Expected OAuth 2 access token, login "
                            "cookie or other valid authentication credential. See "
                            "https://developers.google.com/identity/sign-in/web/devconsole-project.");
    } else if (!given) {
        sb_emu_gemini_error(&call->reply, 403, "PERMISSION_DENIED", NULL,
                            "Method doesn't allow unregistered callers (callers without established identity). Please "
                            "use API Key or other form of API consumer identity to call this API.");
    } else if (!ok) {
        const char *msg = "API key not valid. Please pass a valid API key.";
        json_t *details =
            json_pack("[{s:s, s:s, s:s, s:{s:s}}, {s:s, s:s, s:s}]", "@type",
                      "type.googleapis.com/google.rpc.ErrorInfo", "reason", "API_KEY_INVALID", "domain",
                      "googleapis.com", "metadata", "service", "generativelanguage.googleapis.com", "@type",
                      "type.googleapis.com/google.rpc.LocalizedMessage", "locale", "en-US", "message", msg);
        sb_emu_gemini_error(&call->reply, 400, "INVALID_ARGUMENT", details, "%s", msg);
    }
    free(query_key);
    return ok;
}

/* ---- reading the request ------------------------------------------------------------------ */

static bool is_thought(const json_t *part)
{
    return json_is_true(sb_emu_gget(part, "thought"));
}

/* Non-thought text parts joined by one space; owned. */
static char *parts_text(const json_t *content)
{
    char *out = sb_xstrdup("");
    size_t i;
    json_t *p;
    json_array_foreach (sb_emu_gget(content, "parts"), i, p) {
        const char *t = json_string_value(sb_emu_gget(p, "text"));
        if (!t || is_thought(p))
            continue;
        char *joined = sb_xasprintf("%s%s%s", out, *out ? " " : "", t);
        free(out);
        out = joined;
    }
    return out;
}

static bool has_text(const json_t *content)
{
    size_t i;
    json_t *p;
    json_array_foreach (sb_emu_gget(content, "parts"), i, p) {
        if (json_string_value(sb_emu_gget(p, "text")) && !is_thought(p))
            return true;
    }
    return false;
}

static bool is_user(const json_t *content)
{
    const char *r = json_string_value(sb_emu_gget(content, "role"));
    return !r || !*r || !strcmp(r, "user");
}

/* "audio/mpeg" -> "mp3", "audio/x-wav" -> "wav", else the subtype. */
static void audio_format(const char *mime, char *out, size_t outlen)
{
    const char *sub = strchr(mime, '/');
    sub = sub ? sub + 1 : mime;
    if (!strcasecmp(sub, "mpeg") || !strcasecmp(sub, "mp3"))
        sub = "mp3";
    else if (!strcasecmp(sub, "x-wav") || !strcasecmp(sub, "wave") || !strcasecmp(sub, "wav"))
        sub = "wav";
    snprintf(out, outlen, "%s", sub);
}

/* Acknowledgements of a content's inlineData / fileData parts; owned. */
static char *content_acks(const json_t *content, long long *tokens)
{
    char *acks = sb_xstrdup("");
    size_t i;
    json_t *p;
    json_array_foreach (sb_emu_gget(content, "parts"), i, p) {
        json_t *blob = sb_emu_gget(p, "inlineData"), *fd = sb_emu_gget(p, "fileData");
        if (blob) {
            const char *mime = json_string_value(sb_emu_gget(blob, "mimeType"));
            const char *data = json_string_value(sb_emu_gget(blob, "data"));
            char fmt[32];
            if (!mime || !data)
                continue;
            if (!strncasecmp(mime, "image/", 6)) {
                sb_emu_acks_append(&acks, sb_emu_ack_image_data(mime, data, tokens));
            } else if (!strncasecmp(mime, "audio/", 6)) {
                audio_format(mime, fmt, sizeof fmt);
                sb_emu_acks_append(&acks, sb_emu_ack_audio(fmt, data, tokens));
            } else {
                sb_emu_acks_append(&acks, sb_emu_ack_file_data(NULL, mime, data, tokens));
            }
        } else if (fd) {
            const char *mime = json_string_value(sb_emu_gget(fd, "mimeType"));
            const char *uri = json_string_value(sb_emu_gget(fd, "fileUri"));
            if (!uri)
                continue;
            if (mime && !strncasecmp(mime, "image/", 6))
                sb_emu_acks_append(&acks, sb_emu_ack_image_ref(uri, tokens));
            else
                sb_emu_acks_append(&acks, sb_emu_ack_file_ref(uri));
        }
    }
    return acks;
}

/*
 * The text of a functionResponse's response: a single string value reads as
 * that string (so {"result":"sunny"} gives "sunny"), anything else as its
 * compact JSON. Owned.
 */
static char *response_text(const json_t *resp)
{
    if (json_object_size(resp) == 1) {
        const char *k;
        json_t *v;
        json_object_foreach ((json_t *)resp, k, v) {
            if (json_is_string(v))
                return sb_xstrdup(json_string_value(v));
        }
    }
    char *s = json_dumps(resp, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    return s ? s : sb_xstrdup("{}");
}

/*
 * Every functionResponse of the last content (text beside them or not), named
 * as the response names its function. Owned array (sb_emu_tool_results_free).
 */
static struct sb_emu_tool_result *read_results(const json_t *contents, size_t *n)
{
    json_t *parts = sb_emu_gget(json_array_get(contents, json_array_size(contents) - 1), "parts");
    struct sb_emu_tool_result *out = sb_xcalloc(json_array_size(parts) + 1, sizeof *out);
    *n = 0;
    size_t i;
    json_t *p;
    json_array_foreach (parts, i, p) {
        json_t *fr = sb_emu_gget(p, "functionResponse");
        if (!fr)
            continue;
        out[*n].name = json_string_value(sb_emu_gget(fr, "name"));
        out[*n].text = response_text(sb_emu_gget(fr, "response"));
        (*n)++;
    }
    return out;
}

/* The text of the last functionResponse of a final user turn without text (response_text); owned, or NULL. */
static char *final_function_response(const json_t *contents)
{
    json_t *last = json_array_get(contents, json_array_size(contents) - 1);
    if (!is_user(last) || has_text(last))
        return NULL;
    json_t *resp = NULL;
    size_t i;
    json_t *p;
    json_array_foreach (sb_emu_gget(last, "parts"), i, p) {
        json_t *fr = sb_emu_gget(p, "functionResponse");
        if (fr)
            resp = sb_emu_gget(fr, "response");
    }
    return resp ? response_text(resp) : NULL;
}

static long long prompt_tokens(const json_t *req)
{
    long long prompt = 0;
    json_t *sys = sb_emu_gget(req, "systemInstruction");
    if (json_is_object(sys)) {
        char *t = parts_text(sys);
        prompt += 4 + (long long)sb_emu_count_words(t);
        free(t);
    }
    size_t i;
    json_t *c;
    json_array_foreach (sb_emu_gget(req, "contents"), i, c) {
        char *t = parts_text(c);
        prompt += 4 + (long long)sb_emu_count_words(t);
        free(t);
        if (is_user(c))
            free(content_acks(c, &prompt));
    }
    return prompt;
}

/*
 * Function declarations for the engine. fns (owned) borrows names and schemas;
 * converted Gemini Schemas are kept alive in *owned (an array). Returns the
 * function mode ANY forces (the first allowed name, else the first declared).
 */
static const char *read_tools(const json_t *req, struct sb_emu_fn **fns, size_t *nfns, json_t **owned, bool *none,
                              bool *search)
{
    size_t cap = 1, i, k;
    json_t *t, *d;
    json_array_foreach (sb_emu_gget(req, "tools"), i, t) {
        cap += json_array_size(sb_emu_gget(t, "functionDeclarations"));
    }
    *fns = sb_xcalloc(cap, sizeof **fns);
    *nfns = 0;
    *owned = json_array();
    bool have_search = false;
    json_array_foreach (sb_emu_gget(req, "tools"), i, t) {
        if (sb_emu_gget(t, "googleSearch") || sb_emu_gget(t, "googleSearchRetrieval"))
            have_search = true;
        json_array_foreach (sb_emu_gget(t, "functionDeclarations"), k, d) {
            json_t *pj = sb_emu_gget(d, "parametersJsonSchema"), *p = sb_emu_gget(d, "parameters");
            const json_t *schema = NULL;
            if (json_is_object(pj)) {
                schema = pj;
            } else if (json_is_object(p)) {
                json_t *conv = sb_emu_gemini_schema_to_json(p);
                json_array_append_new(*owned, conv);
                schema = conv;
            }
            (*fns)[*nfns].name = json_string_value(sb_emu_gget(d, "name"));
            (*fns)[*nfns].schema = schema;
            (*nfns)++;
        }
    }
    json_t *fcc = sb_emu_gget(sb_emu_gget(req, "toolConfig"), "functionCallingConfig");
    const char *mode = json_string_value(sb_emu_gget(fcc, "mode"));
    const char *forced = NULL;
    if (mode && !strcasecmp(mode, "ANY")) {
        forced = json_string_value(json_array_get(sb_emu_gget(fcc, "allowedFunctionNames"), 0));
        if (!forced && *nfns > 0)
            forced = (*fns)[0].name;
    }
    *none = mode && !strcasecmp(mode, "NONE");
    *search = have_search && !forced;
    return forced;
}

/* ---- writing the reply --------------------------------------------------------------------- */

static const char *finish_reason(enum sb_emu_finish f)
{
    switch (f) {
    case SB_EMU_FINISH_LENGTH:
        return "MAX_TOKENS";
    case SB_EMU_FINISH_REFUSAL:
        return "SAFETY";
    default:
        return "STOP";
    }
}

static bool refused(const struct gem_reply *x)
{
    return x->a->choices[0].finish == SB_EMU_FINISH_REFUSAL;
}

static json_t *usage_json(const struct gem_reply *x, bool final)
{
    long long image = x->image ? SB_EMU_GEMINI_IMAGE_TOKENS * (long long)x->a->n : 0;
    long long cand = final && !refused(x) ? (x->image_only ? 0 : x->a->output_tokens) + image : 0;
    long long thoughts = final ? x->a->reasoning_tokens : 0;
    json_t *u = json_pack("{s:I}", "promptTokenCount", (json_int_t)x->prompt_tokens);
    if (final && !refused(x))
        json_object_set_new(u, "candidatesTokenCount", json_integer(cand));
    json_object_set_new(u, "totalTokenCount", json_integer(x->prompt_tokens + cand + thoughts));
    if (thoughts > 0)
        json_object_set_new(u, "thoughtsTokenCount", json_integer(thoughts));
    if (final && image > 0)
        json_object_set_new(u, "candidatesTokensDetails",
                            json_pack("[{s:s, s:I}]", "modality", "IMAGE", "tokenCount", (json_int_t)image));
    json_object_set_new(u, "promptTokensDetails",
                        json_pack("[{s:s, s:I}]", "modality", "TEXT", "tokenCount", (json_int_t)x->prompt_tokens));
    return u;
}

static json_t *call_parts(const struct gem_reply *x)
{
    json_t *parts = json_array();
    for (size_t j = 0; j < x->a->ncalls; j++) {
        json_t *args = json_loads(x->a->calls[j].arguments, JSON_DECODE_ANY, NULL);
        if (!json_is_object(args)) {
            json_decref(args);
            args = json_object();
        }
        json_t *p = json_pack("{s:{s:s, s:o}}", "functionCall", "name", x->a->calls[j].name, "args", args);
        if (x->thinking && j == 0) {
            char *sig = sb_emu_gemini_signature(x->a->calls[j].name);
            json_object_set_new(p, "thoughtSignature", json_string(sig));
            free(sig);
        }
        json_array_append_new(parts, p);
    }
    return parts;
}

/* One candidate with parts (stolen) and, when final, its finishReason. */
static json_t *candidate_json(const struct gem_reply *x, size_t k, json_t *parts, bool final)
{
    if (refused(x)) {
        json_decref(parts);
        return json_pack("{s:s, s:I, s:[{s:s, s:s, s:b}]}", "finishReason", "SAFETY", "index", (json_int_t)k,
                         "safetyRatings", "category", "HARM_CATEGORY_DANGEROUS_CONTENT", "probability", "HIGH",
                         "blocked", 1);
    }
    json_t *c = json_pack("{s:{s:o, s:s}}", "content", "parts", parts, "role", "model");
    if (final)
        json_object_set_new(c, "finishReason", json_string(finish_reason(x->a->choices[k].finish)));
    json_object_set_new(c, "index", json_integer((json_int_t)k));
    if (final && x->a->searched)
        json_object_set_new(c, "groundingMetadata",
                            json_pack("{s:[s], s:[{s:{s:s, s:s}}]}", "webSearchQueries", x->a->clean, "groundingChunks",
                                      "web", "uri", "https://emulator.invalid/search", "title", "Emulated result"));
    return c;
}

static json_t *thought_part(const struct gem_reply *x)
{
    return json_pack("{s:s, s:b}", "text", x->a->reasoning, "thought", 1);
}

static json_t *response_json(const struct gem_reply *x, json_t *candidates, bool final)
{
    return json_pack("{s:o, s:o, s:s, s:s}", "candidates", candidates, "usageMetadata", usage_json(x, final),
                     "modelVersion", x->model, "responseId", x->response_id);
}

static json_t *full_response(const struct gem_reply *x)
{
    json_t *cands = json_array();
    for (size_t k = 0; k < x->a->n; k++) {
        json_t *parts = json_array();
        if (x->include_thoughts && x->a->reasoning)
            json_array_append_new(parts, thought_part(x));
        if (x->a->ncalls) {
            json_t *cp = call_parts(x);
            json_array_extend(parts, cp);
            json_decref(cp);
        } else if (x->a->choices[k].text && !x->image_only) {
            json_array_append_new(parts, json_pack("{s:s}", "text", x->a->choices[k].text));
        }
        if (x->image)
            json_array_append(parts, x->image);
        json_array_append_new(cands, candidate_json(x, k, parts, true));
    }
    return response_json(x, cands, true);
}

/* ---- streaming ------------------------------------------------------------------------------- */

/* Each chunk is one GenerateContentResponse: an SSE event, or an element of a streamed JSON array. */
static void push_chunk(struct sb_emu_reply *rep, bool sse, bool *first, json_t *chunk /* stolen */)
{
    if (sse) {
        sb_emu_reply_sse(rep, NULL, chunk, SSE_END);
    } else {
        char *s = json_dumps(chunk, JSON_COMPACT | JSON_PRESERVE_ORDER);
        char *piece = sb_xasprintf("%s%s", *first ? "[" : ",\r\n", s ? s : "{}");
        sb_emu_reply_chunk(rep, piece);
        free(piece);
        free(s);
    }
    *first = false;
    json_decref(chunk);
}

static void reply_stream(struct sb_emu_reply *rep, const struct gem_reply *x, bool sse)
{
    sb_emu_reply_stream_start(rep);
    if (!sse)
        rep->content_type = "application/json; charset=UTF-8";
    bool first = true;
    for (size_t k = 0; k < x->a->n; k++) {
        bool last_cand = k + 1 == x->a->n;
        if (refused(x)) {
            push_chunk(rep, sse, &first,
                       response_json(x, json_pack("[o]", candidate_json(x, k, json_array(), true)), last_cand));
            continue;
        }
        if (x->include_thoughts && x->a->reasoning)
            push_chunk(rep, sse, &first,
                       response_json(
                           x, json_pack("[o]", candidate_json(x, k, json_pack("[o]", thought_part(x)), false)), false));
        if (x->a->ncalls) {
            push_chunk(rep, sse, &first,
                       response_json(x, json_pack("[o]", candidate_json(x, k, call_parts(x), true)), last_cand));
            continue;
        }
        if (x->image_only) {
            push_chunk(
                rep, sse, &first,
                response_json(x, json_pack("[o]", candidate_json(x, k, json_pack("[O]", x->image), true)), last_cand));
            continue;
        }
        const char *p = x->a->choices[k].text;
        do {
            size_t len = sb_emu_next_word_piece(p);
            bool last = p[len] == '\0';
            json_t *parts = json_pack("[{s:s%}]", "text", p, len);
            if (last && x->image)
                json_array_append(parts, x->image);
            push_chunk(rep, sse, &first,
                       response_json(x, json_pack("[o]", candidate_json(x, k, parts, last)), last && last_cand));
            p += len;
        } while (*p);
    }
    if (!sse)
        sb_emu_reply_chunk(rep, "]");
}

/*
 * Endless ([[emu:endless]]): one chunk per word of the text, none final, then
 * chunks of SB_EMU_ENDLESS_TEXT forever (no finishReason; a JSON array that
 * never closes).
 */
static void reply_endless(struct sb_emu_reply *rep, const struct gem_reply *x, bool sse)
{
    sb_emu_reply_stream_start(rep);
    if (!sse)
        rep->content_type = "application/json; charset=UTF-8";
    bool first = true;
    const char *text = x->a->ncalls == 0 && x->a->choices[0].text ? x->a->choices[0].text : "";
    if (!*text)
        text = SB_EMU_ENDLESS_TEXT;
    for (const char *p = text; *p;) {
        size_t len = sb_emu_next_word_piece(p);
        push_chunk(rep, sse, &first,
                   response_json(
                       x, json_pack("[o]", candidate_json(x, 0, json_pack("[{s:s%}]", "text", p, len), false)), false));
        p += len;
    }
    json_t *chunk = response_json(
        x, json_pack("[o]", candidate_json(x, 0, json_pack("[{s:s}]", "text", SB_EMU_ENDLESS_TEXT), false)), false);
    sb_emu_reply_endless(rep, sse ? "data: " : ",\r\n", chunk, sse ? SSE_END : "", NULL, 0);
}

/* ---- handlers ------------------------------------------------------------------------------- */

#define QUOTA_MESSAGE                                                                                                  \
    "You exceeded your current quota, please check your plan and billing details. For more information on this "       \
    "error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."

/*
 * [[emu:status=NNN]]. Google says when to retry in a RetryInfo detail; the
 * emulator also sends the Retry-After header. A quota 429 has Google's real
 * message with QuotaFailure and Help details (RetryInfo only with retry_after).
 */
static void status_error(struct sb_emu_call *call, int status, const struct sb_emu_directives *d)
{
    struct sb_emu_reply *rep = &call->reply;
    int retry = sb_emu_retry_after(d, status);
    json_t *details = json_array();
    if (status == 429 && d && d->quota) {
        json_array_append_new(details,
                              json_pack("{s:s, s:[{s:s, s:s, s:{s:s, s:s}, s:s}]}", "@type",
                                        "type.googleapis.com/google.rpc.QuotaFailure", "violations", "quotaMetric",
                                        "generativelanguage.googleapis.com/generate_content_requests", "quotaId",
                                        "GenerateRequestsPerDayPerProjectPerModel", "quotaDimensions", "location",
                                        "global", "model", call->model ? call->model : "emu-model", "quotaValue", "0"));
        json_array_append_new(details,
                              json_pack("{s:s, s:[{s:s, s:s}]}", "@type", "type.googleapis.com/google.rpc.Help",
                                        "links", "description", "Learn more about Gemini API quotas", "url",
                                        "https://ai.google.dev/gemini-api/docs/rate-limits"));
    }
    if (retry >= 0) {
        char delay[24];
        snprintf(delay, sizeof delay, "%ds", retry);
        json_array_append_new(
            details, json_pack("{s:s, s:s}", "@type", "type.googleapis.com/google.rpc.RetryInfo", "retryDelay", delay));
    }
    if (json_array_size(details) == 0) {
        json_decref(details);
        details = NULL;
    }
    if (status == 429 && d && d->quota)
        sb_emu_gemini_error(rep, status, status_name(status), details, QUOTA_MESSAGE);
    else
        sb_emu_gemini_error(rep, status, status_name(status), details, SB_EMU_STATUS_MESSAGE_FMT, status);
    if (retry >= 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", retry);
        sb_emu_reply_header(rep, "Retry-After", v);
    }
}

static void context_error(struct sb_emu_call *call, long long tokens, long long limit)
{
    sb_emu_gemini_error(&call->reply, 400, "INVALID_ARGUMENT", NULL,
                        "The input token count (%lld) exceeds the maximum number of tokens allowed (%lld).", tokens,
                        limit);
}

/* Google's answer to a key it does not know: 400 INVALID_ARGUMENT with an API_KEY_INVALID ErrorInfo. */
static void key_invalid_error(struct sb_emu_reply *rep)
{
    const char *msg = "API key not valid. Please pass a valid API key.";
    json_t *details = json_pack("[{s:s, s:s, s:s, s:{s:s}}, {s:s, s:s, s:s}]", "@type",
                                "type.googleapis.com/google.rpc.ErrorInfo", "reason", "API_KEY_INVALID", "domain",
                                "googleapis.com", "metadata", "service", "generativelanguage.googleapis.com", "@type",
                                "type.googleapis.com/google.rpc.LocalizedMessage", "locale", "en-US", "message", msg);
    sb_emu_gemini_error(rep, 400, "INVALID_ARGUMENT", details, "%s", msg);
}

/* [[emu:bad_key]]: Google's bad-key 400; [[emu:key_forbidden]]: its 403 for a key it has blocked. */
static void auth_error(struct sb_emu_call *call, int auth, const char *credential)
{
    (void)credential;
    if (auth == 403)
        sb_emu_gemini_error(&call->reply, 403, "PERMISSION_DENIED", NULL,
                            "Your API key was reported as leaked. Please use another API key.");
    else
        key_invalid_error(&call->reply);
}

/* [[emu:leak_key]]: a stream fails after its first chunk with an {"error":{...}} chunk. */
static void leak_error(struct sb_emu_call *call, int status, const char *message, bool stream)
{
    if (!stream) {
        sb_emu_gemini_error(&call->reply, status, status_name(status), NULL, "%s", message);
        return;
    }
    struct sb_emu_reply *rep = &call->reply;
    char *alt = sb_emu_call_query_param(call, "alt");
    bool sse = alt && !strcmp(alt, "sse"), first = true;
    free(alt);
    sb_emu_reply_stream_start(rep);
    if (!sse)
        rep->content_type = "application/json; charset=UTF-8";
    push_chunk(rep, sse, &first,
               json_pack("{s:[{s:{s:[{s:s}], s:s}, s:i}], s:s}", "candidates", "content", "parts", "text", "You",
                         "role", "model", "index", 0, "modelVersion", call->model ? call->model : ""));
    push_chunk(rep, sse, &first,
               json_pack("{s:{s:i, s:s, s:s}}", "error", "code", 500, "message", message, "status", "INTERNAL"));
    if (!sse)
        sb_emu_reply_chunk(rep, "]");
}

static const struct sb_emu_fault_errors generate_errors = {.status = status_error,
                                                           .context = context_error,
                                                           .context_window = 1048576,
                                                           .leak = leak_error,
                                                           .auth = auth_error};
const struct sb_emu_fault_errors sb_emu_gemini_plain_errors = {
    .status = status_error, .leak = leak_error, .auth = auth_error};

/* The text of the last user content that has text (owned, NULL if none); its acknowledgements into *acks. */
static char *last_user_text(const json_t *contents, char **acks)
{
    char *user_text = NULL;
    long long ignored = 0;
    size_t i;
    json_t *c;
    json_array_foreach (contents, i, c) {
        if (!is_user(c) || !has_text(c))
            continue;
        free(user_text);
        user_text = parts_text(c);
        if (acks) {
            free(*acks);
            *acks = content_acks(c, &ignored);
        }
    }
    return user_text;
}

static void generate(struct sb_emu_call *call, const char *model, bool stream, bool sse)
{
    struct sb_emu_reply *rep = &call->reply;
    struct sb_emu_answer a = {0};
    struct gem_reply x = {0};
    struct sb_emu_fn *fns = NULL;
    struct sb_emu_tool_result *results = NULL;
    size_t nresults = 0;
    json_t *owned = NULL;
    char *user_text = NULL, *acks = NULL, *tool_text = NULL;
    char err[MSG_MAX], label[32];

    const json_t *req = call->json;
    if (!sb_emu_gemini_check(call, req, false) || !sb_emu_gemini_image_check(call, model, req))
        return;
    json_t *contents = sb_emu_gget(req, "contents");
    user_text = last_user_text(contents, &acks);
    tool_text = final_function_response(contents);

    if (sb_emu_answer_begin(&a, user_text ? user_text : "", err, sizeof err) < 0) {
        sb_emu_gemini_error(rep, 400, "INVALID_ARGUMENT", NULL, "%s", err);
        goto done;
    }
    if (sb_emu_fault_stage(call, &a.d, stream, prompt_tokens(req), &generate_errors))
        goto done;
    if (a.d.malformed) {
        if (stream) {
            sb_emu_reply_stream_start(rep);
            sb_emu_reply_chunk(rep, sse ? "data: {\"candidates\": [{\"content\":" SSE_END : "[{\"candidates\": [");
        } else {
            sb_emu_reply_malformed(rep, "{\"candidates\": [ this is not JSON");
        }
        goto done;
    }

    json_t *gen = sb_emu_gget(req, "generationConfig");
    struct sb_emu_ask ask = {
        .user_text = user_text, .acks = acks ? acks : "", .tool_text = tool_text, .objects_only = true};
    ask.forced = read_tools(req, &fns, &ask.nfns, &owned, &ask.no_calls, &ask.search);
    ask.fns = fns;
    results = read_results(contents, &nresults);
    ask.results = results;
    ask.nresults = nresults;
    const char *mime = json_string_value(sb_emu_gget(gen, "responseMimeType"));
    json_t *rs = sb_emu_gget(gen, "responseSchema"), *rjs = sb_emu_gget(gen, "responseJsonSchema");
    if (mime && (!strcasecmp(mime, "application/json") || !strcasecmp(mime, "text/x.enum"))) {
        ask.format = !strcasecmp(mime, "text/x.enum") ? SB_EMU_FMT_ENUM : SB_EMU_FMT_JSON;
        if (json_is_object(rjs)) {
            ask.schema = rjs;
        } else if (json_is_object(rs)) {
            json_t *conv = sb_emu_gemini_schema_to_json(rs);
            json_array_append_new(owned, conv);
            ask.schema = conv;
        }
        if (ask.schema && ask.format == SB_EMU_FMT_JSON)
            ask.format = SB_EMU_FMT_SCHEMA;
    }
    x.thinking = sb_emu_gemini_thinking(req);
    json_t *tc = sb_emu_gget(gen, "thinkingConfig");
    x.include_thoughts = json_is_true(sb_emu_gget(tc, "includeThoughts"));
    if (x.thinking) {
        json_t *level = sb_emu_gget(tc, "thinkingLevel"), *budget = sb_emu_gget(tc, "thinkingBudget");
        long long b = json_is_integer(budget)  ? json_integer_value(budget)
                      : json_is_string(budget) ? atoll(json_string_value(budget))
                                               : -1;
        if (json_is_string(level)) {
            size_t n = 0;
            for (const char *p = json_string_value(level); *p && n + 1 < sizeof label; p++)
                label[n++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
            label[n] = '\0';
        } else if (b < 0) {
            snprintf(label, sizeof label, "dynamic");
        } else {
            snprintf(label, sizeof label, "%lld", b);
        }
        ask.reasoning = label;
    }
    json_t *cc = sb_emu_gget(gen, "candidateCount");
    ask.n = cc ? (size_t)(json_is_string(cc) ? atoll(json_string_value(cc)) : json_integer_value(cc)) : 1;
    json_t *mot = sb_emu_gget(gen, "maxOutputTokens");
    ask.max_words = mot ? (json_is_string(mot) ? atoll(json_string_value(mot)) : json_integer_value(mot)) : 0;
    ask.stop = sb_emu_gget(gen, "stopSequences");
    if (sb_emu_answer_make(call, &ask, &a, err, sizeof err) < 0) {
        sb_emu_gemini_error(rep, 400, "INVALID_ARGUMENT", NULL, "%s", err);
        goto done;
    }

    bool with_text = true;
    if (a.ncalls == 0 && a.choices[0].finish != SB_EMU_FINISH_REFUSAL &&
        sb_emu_gemini_image_wanted(model, req, &with_text)) {
        x.image = sb_emu_gemini_image_part(req, a.clean ? a.clean : "");
        x.image_only = !with_text;
    }
    x.req = req;
    x.a = &a;
    x.model = model;
    x.prompt_tokens = prompt_tokens(req);
    sb_id_new(x.response_id, sizeof x.response_id, "", 11);
    if (stream) {
        if (a.d.endless)
            reply_endless(rep, &x, sse);
        else
            reply_stream(rep, &x, sse);
        sb_emu_stream_faults(rep, &a.d);
    } else {
        json_t *r = full_response(&x);
        sb_emu_reply_json(rep, 200, r);
        json_decref(r);
    }

done:
    json_decref(x.image);
    sb_emu_answer_free(&a);
    json_decref(owned);
    free(fns);
    sb_emu_tool_results_free(results, nresults);
    free(user_text);
    free(acks);
    free(tool_text);
}

static void count_tokens(struct sb_emu_call *call)
{
    const json_t *body = call->json;
    const json_t *req =
        json_is_object(body) && sb_emu_gget(body, "generateContentRequest") && !sb_emu_gget(body, "contents")
            ? sb_emu_gget(body, "generateContentRequest")
            : body;
    if (!sb_emu_gemini_check(call, req, true))
        return;
    long long n = prompt_tokens(req);
    char *user_text = last_user_text(sb_emu_gget(req, "contents"), NULL);
    struct sb_emu_directives d;
    char *clean = NULL;
    char err[MSG_MAX];
    if (sb_emu_directives_parse(user_text ? user_text : "", &d, &clean, err, sizeof err) < 0) {
        sb_emu_gemini_error(&call->reply, 400, "INVALID_ARGUMENT", NULL, "%s", err);
    } else if (!sb_emu_fault_stage(call, &d, false, n, &sb_emu_gemini_plain_errors)) {
        if (d.malformed) {
            sb_emu_reply_malformed(&call->reply, "{\"totalTokens\": this is not JSON");
        } else {
            json_t *r = json_pack("{s:I, s:[{s:s, s:I}]}", "totalTokens", (json_int_t)n, "promptTokensDetails",
                                  "modality", "TEXT", "tokenCount", (json_int_t)n);
            sb_emu_reply_json(&call->reply, 200, r);
            json_decref(r);
        }
    }
    free(clean);
    free(user_text);
}

static const char *const emu_models[] = {"emu-model", "gemini-2.5-flash", "gemini-2.5-pro", NULL};

static json_t *model_json(const char *id)
{
    char *name = sb_xasprintf("models/%s", id);
    json_t *m = json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:[s, s, s], s:f, s:f, s:f, s:i, s:b}", "name", name,
                          "version", "001", "displayName", id, "description", "Switchboard upstream emulator model",
                          "inputTokenLimit", 1048576, "outputTokenLimit", 65536, "supportedGenerationMethods",
                          "generateContent", "streamGenerateContent", "countTokens", "temperature", 1.0,
                          "maxTemperature", 2.0, "topP", 0.95, "topK", 64, "thinking", 1);
    free(name);
    return m;
}

static void not_found(struct sb_emu_call *call, const char *what)
{
    sb_emu_gemini_error(&call->reply, 404, "NOT_FOUND", NULL, "%s", what);
}

/* The model of a ".../models/{model}:{method}" path (the route of faults and stats), before auth is checked. */
static void set_path_model(struct sb_emu_call *call)
{
    const char *name = strstr(call->path, "/models/");
    const char *colon = name ? strchr(name + 8, ':') : NULL;
    if (colon && colon > name + 8) {
        char *model = sb_xstrndup(name + 8, (size_t)(colon - (name + 8)));
        sb_emu_call_set_model(call, model);
        free(model);
    }
}

void sb_emu_gemini_route(struct sb_emu_call *call, bool is_get)
{
    call->protocol = "gemini";
    if (!is_get)
        set_path_model(call);
    if (!check_auth(call))
        return;
    const char *p = call->path;
    const char *version = "v1beta";
    if (!strncmp(p, "/v1beta/", 8)) {
        p += 8;
    } else if (!strncmp(p, "/v1/", 4)) {
        p += 4;
        version = "v1";
    } else {
        not_found(call, "Method not found.");
        return;
    }
    if (!strcmp(p, "models") && is_get) {
        json_t *list = json_array();
        for (size_t i = 0; emu_models[i]; i++)
            json_array_append_new(list, model_json(emu_models[i]));
        json_t *r = json_pack("{s:o}", "models", list);
        sb_emu_reply_json(&call->reply, 200, r);
        json_decref(r);
        return;
    }
    if (strncmp(p, "models/", 7) != 0 || !p[7]) {
        not_found(call, "Method not found.");
        return;
    }
    const char *name = p + 7;
    const char *colon = strchr(name, ':');
    if (!colon) {
        if (!is_get) {
            not_found(call, "Method not found.");
            return;
        }
        for (size_t i = 0; emu_models[i]; i++) {
            if (!strcmp(emu_models[i], name)) {
                json_t *m = model_json(name);
                sb_emu_reply_json(&call->reply, 200, m);
                json_decref(m);
                return;
            }
        }
        char *msg = sb_xasprintf("models/%s is not found for API version %s, or is not supported for "
                                 "generateContent. Call ListModels to see the list of available models and their "
                                 "supported methods.",
                                 name, version);
        not_found(call, msg);
        free(msg);
        return;
    }
    char *model = sb_xstrndup(name, (size_t)(colon - name));
    const char *method = colon + 1;
    if (is_get || !*model) {
        not_found(call, "Method not found.");
    } else if (!strcmp(method, "generateContent")) {
        generate(call, model, false, false);
    } else if (!strcmp(method, "streamGenerateContent")) {
        char *alt = sb_emu_call_query_param(call, "alt");
        generate(call, model, true, alt && !strcmp(alt, "sse"));
        free(alt);
    } else if (!strcmp(method, "countTokens")) {
        count_tokens(call);
    } else if (!strcmp(method, "embedContent") || !strcmp(method, "batchEmbedContents")) {
        sb_emu_gemini_embed_handle(call, model, method[0] == 'b', &sb_emu_gemini_plain_errors);
    } else {
        not_found(call, "Method not found.");
    }
    free(model);
}

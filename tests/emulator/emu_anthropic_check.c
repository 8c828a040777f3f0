/*
 * emu_anthropic_check: validation of an Anthropic Messages request (POST
 * /v1/messages and /v1/messages/count_tokens) the way the real API does it.
 *
 * Headers first (x-api-key when a key is configured, anthropic-version,
 * anthropic-beta syntax), then the body with the API's pydantic-style
 * messages ("max_tokens: Field required", "messages.0.content.0.text.foo:
 * Extra inputs are not permitted"), every content block shape, tools and
 * tool_choice, thinking and its constraints, structured output, and the
 * conversation rules a gateway most easily breaks: every tool_result answers
 * a tool_use of the previous assistant turn (and the reverse), thinking
 * blocks carry a signature this emulator issued, and with thinking enabled
 * the assistant turn before a tool result starts with its thinking block.
 * Errors are Anthropic's {"type":"error","error":{type,message},"request_id"}.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu_check.h"
#include "emu_internal.h"
#include "sb_alloc.h"

#define PATH_MAX_LEN 160
#define SIG_PREFIX "emu-sig:"
#define STRUCTURED_BETA "structured-outputs-2025-11-13"
#define THINKING_DOCS "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"

void sb_emu_anthropic_error(struct sb_emu_call *call, int status, const char *type, const char *fmt, ...)
{
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *e = json_pack("{s:s, s:{s:s, s:s}, s:s}", "type", "error", "error", "type", type, "message", msg,
                          "request_id", call->request_id);
    sb_emu_reply_json(&call->reply, status, e);
    json_decref(e);
}

/* 400 invalid_request_error; always returns false. */
static bool invalid(struct sb_emu_call *call, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool invalid(struct sb_emu_call *call, const char *fmt, ...)
{
    char msg[640];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sb_emu_anthropic_error(call, 400, "invalid_request_error", "%s", msg);
    return false;
}

char *sb_emu_anthropic_signature(const char *thinking)
{
    char *b64 = sb_emu_base64_encode(thinking, strlen(thinking));
    char *sig = sb_xasprintf(SIG_PREFIX "%s", b64);
    free(b64);
    return sig;
}

/* ---- headers ------------------------------------------------------------------------ */

/* A beta name looks like "some-feature-2025-01-31". */
static bool valid_beta(const char *s, size_t len)
{
    if (len < 12)
        return false;
    const char *date = s + len - 10; /* YYYY-MM-DD */
    for (size_t i = 0; i < 10; i++) {
        bool dash = i == 4 || i == 7;
        if (dash ? date[i] != '-' : !isdigit((unsigned char)date[i]))
            return false;
    }
    if (s[len - 11] != '-')
        return false;
    for (size_t i = 0; i + 11 < len; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
            return false;
    return true;
}

/* The request's API version (validated by sb_emu_anthropic_check_headers). */
static bool version_2026(const struct sb_emu_call *call)
{
    const char *v = sb_emu_call_header(call, "anthropic-version");
    return v && !strcmp(v, "2026-10-21");
}

/*
 * The key comes in x-api-key or, as the SDKs send it since API version
 * 2026-10-21, in "Authorization: Bearer"; with both, x-api-key counts.
 */
bool sb_emu_anthropic_check_headers(struct sb_emu_call *call)
{
    const char *key = sb_emu_required_key(call->emu);
    if (key) {
        const char *got = sb_emu_call_header(call, "x-api-key");
        const char *auth = sb_emu_call_header(call, "Authorization");
        if (!got && auth && !strncmp(auth, "Bearer ", 7))
            got = auth + 7;
        if (!got) {
            sb_emu_anthropic_error(call, 401, "authentication_error", "x-api-key header is required");
            return false;
        }
        if (strcmp(got, key)) {
            sb_emu_anthropic_error(call, 401, "authentication_error", "invalid x-api-key");
            return false;
        }
    }
    const char *version = sb_emu_call_header(call, "anthropic-version");
    if (!version)
        return invalid(call, "anthropic-version: header is required");
    if (strcmp(version, "2023-06-01") && strcmp(version, "2023-01-01") && strcmp(version, "2026-10-21"))
        return invalid(call, "anthropic-version: \"%.64s\" is not a valid version", version);
    const char *beta = sb_emu_call_header(call, "anthropic-beta");
    for (const char *p = beta; p && *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t len = strcspn(p, ",");
        size_t tl = len;
        while (tl > 0 && p[tl - 1] == ' ')
            tl--;
        if (tl && !valid_beta(p, tl))
            return invalid(call,
                           "Unexpected value(s) `%.*s` for the `anthropic-beta` header. Please consult our "
                           "documentation at docs.anthropic.com or try again without the header.",
                           (int)(tl > 64 ? 64 : tl), p);
        p += len;
    }
    return true;
}

/* Does the anthropic-beta header list name? */
static bool has_beta(const struct sb_emu_call *call, const char *name)
{
    const char *beta = sb_emu_call_header(call, "anthropic-beta");
    size_t n = strlen(name);
    for (const char *p = beta; p && (p = strstr(p, name)); p += n)
        if ((p == beta || p[-1] == ',' || p[-1] == ' ') && (p[n] == '\0' || p[n] == ',' || p[n] == ' '))
            return true;
    return false;
}

/* ---- field helpers (pydantic's messages) ----------------------------------------------- */

/* pydantic's type and "Field required" errors. */
static bool wrong_type(struct sb_emu_call *call, const json_t *v, const char *path, enum sb_emu_want w)
{
    static const char *names[] = {"a valid string", "a valid boolean",    "a valid integer",
                                  "a valid number", "a valid dictionary", "a valid list"};
    (void)v; /* pydantic does not say what it got */
    return invalid(call, "%s: Input should be %s", path, names[w]);
}

static bool field_required(struct sb_emu_call *call, const char *path)
{
    return invalid(call, "%s: Field required", path);
}

static const struct sb_emu_words words = {.missing = field_required, .wrong_type = wrong_type};

static bool check_type(struct sb_emu_call *call, const json_t *v, const char *path, enum sb_emu_want w)
{
    return sb_emu_check_type(call, &words, v, path, w);
}

/* obj.name of type w; absent (or null when optional) is fine unless required. */
static bool field(struct sb_emu_call *call, const json_t *obj, const char *prefix, const char *name, enum sb_emu_want w,
                  bool required)
{
    return sb_emu_check_field(call, &words, obj, prefix, name, w, required);
}

/* Every key of obj is in allowed: "<prefix>.<key>: Extra inputs are not permitted". */
static bool extras(struct sb_emu_call *call, const json_t *obj, const char *prefix, const char *const *allowed)
{
    const char *key = sb_emu_extra_key(obj, allowed);
    if (!key)
        return true;
    char path[PATH_MAX_LEN];
    sb_emu_path_join(path, sizeof path, prefix, key);
    return invalid(call, "%s: Extra inputs are not permitted", path);
}

static bool number_range(struct sb_emu_call *call, const json_t *obj, const char *name, enum sb_emu_want w, double min,
                         double max)
{
    json_t *v = json_object_get(obj, name);
    if (!v || json_is_null(v))
        return true;
    if (!check_type(call, v, name, w))
        return false;
    double d = json_number_value(v);
    if (d < min)
        return invalid(call, "%s: Input should be greater than or equal to %g", name, min);
    if (d > max)
        return invalid(call, "%s: Input should be less than or equal to %g", name, max);
    return true;
}

static bool tag_mismatch(struct sb_emu_call *call, const char *path, const char *tag, const char *expected)
{
    return invalid(call, "%s: Input tag '%.64s' found using 'type' does not match any of the expected tags: %s", path,
                   tag, expected);
}

static bool valid_base64(const char *s)
{
    unsigned char *bytes = NULL;
    size_t n = 0;
    if (!*s || sb_emu_base64_decode(s, strlen(s), &bytes, &n) < 0)
        return false;
    free(bytes);
    return n > 0;
}

/* ---- content blocks -------------------------------------------------------------------- */

static bool check_block(struct sb_emu_call *call, const json_t *b, const char *path, const char *role, bool nested);

/* A block's own fields, reported under "<path>.<type>.<field>" as the API does. */
static bool block_fields(struct sb_emu_call *call, const json_t *b, const char *path, const char *type,
                         const char *const *allowed, char *tpath, size_t tlen)
{
    sb_emu_pathf(tpath, tlen, "%s.%s", path, type);
    return extras(call, b, tpath, allowed);
}

static bool check_source(struct sb_emu_call *call, const json_t *src, const char *path, bool document)
{
    if (!check_type(call, src, path, SB_EMU_W_OBJECT) || !field(call, src, path, "type", SB_EMU_W_STRING, true))
        return false;
    const char *t = json_string_value(json_object_get(src, "type"));
    char sp[PATH_MAX_LEN], fp[PATH_MAX_LEN];
    sb_emu_pathf(sp, sizeof sp, "%s.%s", path, t);
    if (!strcmp(t, "base64")) {
        static const char *const keys[] = {"type", "media_type", "data", NULL};
        static const char *const images[] = {"image/jpeg", "image/png", "image/gif", "image/webp", NULL};
        if (!extras(call, src, sp, keys) || !field(call, src, sp, "media_type", SB_EMU_W_STRING, true) ||
            !field(call, src, sp, "data", SB_EMU_W_STRING, true))
            return false;
        const char *mt = json_string_value(json_object_get(src, "media_type"));
        sb_emu_pathf(fp, sizeof fp, "%s.media_type", sp);
        if (document && strcmp(mt, "application/pdf"))
            return invalid(call, "%s: Input should be 'application/pdf'", fp);
        if (!document && !sb_emu_in_list(mt, images))
            return invalid(call, "%s: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", fp);
        if (!valid_base64(json_string_value(json_object_get(src, "data"))))
            return invalid(call, "%s.data: Invalid base64 data", sp);
        return true;
    }
    if (!strcmp(t, "url")) {
        static const char *const keys[] = {"type", "url", NULL};
        return extras(call, src, sp, keys) && field(call, src, sp, "url", SB_EMU_W_STRING, true);
    }
    if (!strcmp(t, "file")) {
        static const char *const keys[] = {"type", "file_id", NULL};
        return extras(call, src, sp, keys) && field(call, src, sp, "file_id", SB_EMU_W_STRING, true);
    }
    if (document && !strcmp(t, "text")) {
        static const char *const keys[] = {"type", "media_type", "data", NULL};
        if (!extras(call, src, sp, keys) || !field(call, src, sp, "media_type", SB_EMU_W_STRING, true) ||
            !field(call, src, sp, "data", SB_EMU_W_STRING, true))
            return false;
        if (strcmp(json_string_value(json_object_get(src, "media_type")), "text/plain"))
            return invalid(call, "%s.media_type: Input should be 'text/plain'", sp);
        return true;
    }
    if (document && !strcmp(t, "content")) {
        static const char *const keys[] = {"type", "content", NULL};
        if (!extras(call, src, sp, keys))
            return false;
        json_t *c = json_object_get(src, "content");
        sb_emu_pathf(fp, sizeof fp, "%s.content", sp);
        if (!c)
            return invalid(call, "%s: Field required", fp);
        if (json_is_string(c))
            return true;
        if (!check_type(call, c, fp, SB_EMU_W_ARRAY))
            return false;
        size_t i;
        json_t *blk;
        json_array_foreach (c, i, blk) {
            char bp[PATH_MAX_LEN];
            sb_emu_pathf(bp, sizeof bp, "%s.%zu", fp, i);
            if (!check_block(call, blk, bp, "user", true))
                return false;
        }
        return true;
    }
    return tag_mismatch(call, path, t,
                        document ? "'base64', 'text', 'content', 'url', 'file'" : "'base64', 'url', 'file'");
}

/* content of a tool_result: a string or text / image / document blocks. */
static bool check_tool_result_content(struct sb_emu_call *call, const json_t *c, const char *path)
{
    if (!c || json_is_string(c))
        return true;
    if (!check_type(call, c, path, SB_EMU_W_ARRAY))
        return false;
    size_t i;
    json_t *blk;
    json_array_foreach (c, i, blk) {
        char bp[PATH_MAX_LEN];
        sb_emu_pathf(bp, sizeof bp, "%s.%zu", path, i);
        if (!check_block(call, blk, bp, "user", true))
            return false;
    }
    return true;
}

/*
 * One content block. nested: inside a tool_result or a document, where only
 * text, image and document blocks are allowed.
 */
static bool check_block(struct sb_emu_call *call, const json_t *b, const char *path, const char *role, bool nested)
{
    if (!check_type(call, b, path, SB_EMU_W_OBJECT) || !field(call, b, path, "type", SB_EMU_W_STRING, true))
        return false;
    const char *t = json_string_value(json_object_get(b, "type"));
    bool user = !strcmp(role, "user");
    char tp[PATH_MAX_LEN], fp[PATH_MAX_LEN];
    if (!strcmp(t, "text")) {
        static const char *const keys[] = {"type", "text", "cache_control", "citations", NULL};
        if (!block_fields(call, b, path, t, keys, tp, sizeof tp) ||
            !field(call, b, tp, "text", SB_EMU_W_STRING, true) ||
            !field(call, b, tp, "cache_control", SB_EMU_W_OBJECT, false) ||
            !field(call, b, tp, "citations", SB_EMU_W_ARRAY, false))
            return false;
        if (json_string_length(json_object_get(b, "text")) == 0)
            return invalid(call, "messages: text content blocks must be non-empty");
        return true;
    }
    if (!strcmp(t, "image") || !strcmp(t, "document")) {
        static const char *const ikeys[] = {"type", "source", "cache_control", NULL};
        static const char *const dkeys[] = {"type", "source", "title", "context", "citations", "cache_control", NULL};
        bool doc = t[0] == 'd';
        if (!block_fields(call, b, path, t, doc ? dkeys : ikeys, tp, sizeof tp) ||
            !field(call, b, tp, "source", SB_EMU_W_OBJECT, true) ||
            !field(call, b, tp, "cache_control", SB_EMU_W_OBJECT, false) ||
            (doc && (!field(call, b, tp, "title", SB_EMU_W_STRING, false) ||
                     !field(call, b, tp, "context", SB_EMU_W_STRING, false) ||
                     !field(call, b, tp, "citations", SB_EMU_W_OBJECT, false))))
            return false;
        sb_emu_pathf(fp, sizeof fp, "%s.source", tp);
        return check_source(call, json_object_get(b, "source"), fp, doc);
    }
    if (nested)
        return tag_mismatch(call, path, t, "'text', 'image', 'document'");
    if (!strcmp(t, "tool_result")) {
        static const char *const keys[] = {"type", "tool_use_id", "content", "is_error", "cache_control", NULL};
        if (!block_fields(call, b, path, t, keys, tp, sizeof tp) ||
            !field(call, b, tp, "tool_use_id", SB_EMU_W_STRING, true) ||
            !field(call, b, tp, "is_error", SB_EMU_W_BOOL, false) ||
            !field(call, b, tp, "cache_control", SB_EMU_W_OBJECT, false))
            return false;
        if (!user)
            return invalid(call, "%s: `tool_result` blocks can only be in `user` messages", path);
        sb_emu_pathf(fp, sizeof fp, "%s.content", tp);
        return check_tool_result_content(call, json_object_get(b, "content"), fp);
    }
    if (!strcmp(t, "tool_use")) {
        static const char *const keys[] = {"type", "id", "name", "input", "cache_control", NULL};
        if (!block_fields(call, b, path, t, keys, tp, sizeof tp) || !field(call, b, tp, "id", SB_EMU_W_STRING, true) ||
            !field(call, b, tp, "name", SB_EMU_W_STRING, true) || !field(call, b, tp, "input", SB_EMU_W_OBJECT, true) ||
            !field(call, b, tp, "cache_control", SB_EMU_W_OBJECT, false))
            return false;
        if (user)
            return invalid(call, "%s: `tool_use` blocks can only be in `assistant` messages", path);
        const char *id = json_string_value(json_object_get(b, "id"));
        for (const char *p = id; *p; p++)
            if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-')
                return invalid(call, "%s.id: String should match pattern '^[a-zA-Z0-9_-]+$'", tp);
        return true;
    }
    if (!strcmp(t, "thinking") || !strcmp(t, "redacted_thinking")) {
        static const char *const tkeys[] = {"type", "thinking", "signature", NULL};
        static const char *const rkeys[] = {"type", "data", NULL};
        bool redacted = t[0] == 'r';
        if (!block_fields(call, b, path, t, redacted ? rkeys : tkeys, tp, sizeof tp))
            return false;
        if (redacted ? !field(call, b, tp, "data", SB_EMU_W_STRING, true)
                     : (!field(call, b, tp, "thinking", SB_EMU_W_STRING, true) ||
                        !field(call, b, tp, "signature", SB_EMU_W_STRING, true)))
            return false;
        if (user)
            return invalid(call, "%s: `%s` blocks can only be in `assistant` messages", path, t);
        return true;
    }
    return tag_mismatch(call, path, t,
                        "'text', 'image', 'document', 'tool_use', 'tool_result', 'thinking', 'redacted_thinking'");
}

/* True if m's content is empty ("" or []). */
static bool empty_content(const json_t *content)
{
    return (json_is_string(content) && json_string_length(content) == 0) ||
           (json_is_array(content) && json_array_size(content) == 0);
}

static bool check_message(struct sb_emu_call *call, const json_t *m, size_t i, bool last)
{
    char path[PATH_MAX_LEN], cp[PATH_MAX_LEN];
    sb_emu_pathf(path, sizeof path, "messages.%zu", i);
    static const char *const keys[] = {"role", "content", NULL};
    if (!check_type(call, m, path, SB_EMU_W_OBJECT))
        return false;
    json_t *role = json_object_get(m, "role");
    if (!role)
        return invalid(call, "%s.role: Field required", path);
    const char *rv = json_string_value(role);
    if (!rv || (strcmp(rv, "user") && strcmp(rv, "assistant") && strcmp(rv, "system")))
        return invalid(call, "%s.role: Input should be 'user', 'assistant' or 'system'", path);
    if (!extras(call, m, path, keys))
        return false;
    const char *r = json_string_value(role);
    json_t *content = json_object_get(m, "content");
    sb_emu_pathf(cp, sizeof cp, "%s.content", path);
    if (!content)
        return invalid(call, "%s: Field required", cp);
    if (!json_is_string(content) && !json_is_array(content))
        return invalid(call, "%s: Input should be a valid list", cp);
    if (empty_content(content) && !(last && !strcmp(r, "assistant")))
        return invalid(call,
                       "messages.%zu: all messages must have non-empty content except for the optional final "
                       "assistant message",
                       i);
    size_t k;
    json_t *b;
    json_array_foreach (content, k, b) {
        char bp[PATH_MAX_LEN];
        sb_emu_pathf(bp, sizeof bp, "%s.%zu", cp, k);
        if (!strcmp(r, "system")) {
            /* System messages in the conversation carry text only, like the top-level system prompt. */
            const char *st = json_string_value(json_object_get(b, "type"));
            if (json_is_object(b) && st && strcmp(st, "text"))
                return tag_mismatch(call, bp, st, "'text'");
            if (!check_block(call, b, bp, "user", true))
                return false;
            continue;
        }
        if (!check_block(call, b, bp, r, false))
            return false;
        /* API version 2026-10-21 tightened what each role may carry. */
        const char *t = json_string_value(json_object_get(b, "type"));
        if (version_2026(call) && !strcmp(r, "assistant") && !strcmp(t, "document"))
            return invalid(
                call, "%s: `document` blocks are not allowed in `assistant` messages in API version 2026-10-21", bp);
        if (version_2026(call) && !strcmp(r, "user") && !strcmp(t, "text") &&
            json_array_size(json_object_get(b, "citations")) > 0)
            return invalid(call,
                           "%s.text.citations: `citations` are not allowed on `text` blocks in `user` messages in API "
                           "version 2026-10-21",
                           bp);
    }
    return true;
}

/* ---- the conversation ----------------------------------------------------------------- */

static bool block_is(const json_t *b, const char *type)
{
    const char *t = json_string_value(json_object_get(b, "type"));
    return t && !strcmp(t, type);
}

static bool has_tool_use(const json_t *m, const char *id)
{
    size_t k;
    json_t *b;
    json_array_foreach (json_object_get(m, "content"), k, b) {
        const char *bid = json_string_value(json_object_get(b, "id"));
        if (block_is(b, "tool_use") && bid && (!id || !strcmp(bid, id)))
            return true;
    }
    return false;
}

static bool has_tool_result(const json_t *m, const char *id)
{
    size_t k;
    json_t *b;
    json_array_foreach (json_object_get(m, "content"), k, b) {
        const char *bid = json_string_value(json_object_get(b, "tool_use_id"));
        if (block_is(b, "tool_result") && bid && (!id || !strcmp(bid, id)))
            return true;
    }
    return false;
}

static const char *role_of(const json_t *m)
{
    return json_string_value(json_object_get(m, "role"));
}

static bool check_conversation(struct sb_emu_call *call, const json_t *messages, bool thinking)
{
    size_t n = json_array_size(messages);
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(messages, i);
        json_t *prev = i > 0 ? json_array_get(messages, i - 1) : NULL;
        size_t k;
        json_t *b;
        json_array_foreach (json_object_get(m, "content"), k, b) {
            if (block_is(b, "tool_result")) {
                const char *id = json_string_value(json_object_get(b, "tool_use_id"));
                if (!prev || strcmp(role_of(prev), "assistant") || !has_tool_use(prev, id))
                    return invalid(call,
                                   "messages.%zu.content.%zu: unexpected `tool_use_id` found in `tool_result` blocks: "
                                   "%.64s. Each `tool_result` block must have a corresponding `tool_use` block in the "
                                   "previous message.",
                                   i, k, id);
            } else if (block_is(b, "thinking")) {
                const char *text = json_string_value(json_object_get(b, "thinking"));
                const char *sig = json_string_value(json_object_get(b, "signature"));
                char *want = sb_emu_anthropic_signature(text);
                bool ok = !strcmp(want, sig);
                free(want);
                if (!ok)
                    return invalid(call, "messages.%zu.content.%zu: Invalid `signature` in `thinking` block", i, k);
            }
        }
        if (!strcmp(role_of(m), "assistant") && has_tool_use(m, NULL) && i + 1 < n) {
            json_t *next = json_array_get(messages, i + 1);
            json_array_foreach (json_object_get(m, "content"), k, b) {
                const char *id = json_string_value(json_object_get(b, "id"));
                if (block_is(b, "tool_use") && (strcmp(role_of(next), "user") || !has_tool_result(next, id)))
                    return invalid(call,
                                   "messages.%zu: `tool_use` ids were found without `tool_result` blocks immediately "
                                   "after: %.64s. Each `tool_use` block must have a corresponding `tool_result` block "
                                   "in the next message.",
                                   i, id);
            }
        }
    }
    /* With thinking on, the assistant turn before a final tool result must open with its thinking. */
    if (thinking && n >= 2) {
        json_t *last = json_array_get(messages, n - 1), *prev = json_array_get(messages, n - 2);
        if (!strcmp(role_of(last), "user") && has_tool_result(last, NULL) && !strcmp(role_of(prev), "assistant") &&
            has_tool_use(prev, NULL)) {
            json_t *first = json_array_get(json_object_get(prev, "content"), 0);
            if (!block_is(first, "thinking") && !block_is(first, "redacted_thinking"))
                return invalid(call,
                               "messages.%zu.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                               "`%.32s`. When `thinking` is enabled, a final `assistant` message must start with a "
                               "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). "
                               "We recommend you include thinking blocks from previous turns. To avoid this "
                               "requirement, disable `thinking`. Please consult our documentation at " THINKING_DOCS,
                               n - 2, json_string_value(json_object_get(first, "type")));
        }
    }
    return true;
}

/* ---- parameters ----------------------------------------------------------------------- */

static bool valid_tool_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
            return false;
    return true;
}

static bool is_web_search(const json_t *tool)
{
    const char *t = json_string_value(json_object_get(tool, "type"));
    return t && !strncmp(t, "web_search_", 11);
}

static bool check_tools(struct sb_emu_call *call, const json_t *body)
{
    json_t *tools = json_object_get(body, "tools");
    if (!tools || json_is_null(tools))
        return true;
    if (!check_type(call, tools, "tools", SB_EMU_W_ARRAY))
        return false;
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        char path[PATH_MAX_LEN], tp[PATH_MAX_LEN];
        sb_emu_pathf(path, sizeof path, "tools.%zu", i);
        if (!check_type(call, t, path, SB_EMU_W_OBJECT))
            return false;
        if (is_web_search(t)) {
            static const char *const keys[] = {
                "type",          "name",          "max_uses", "allowed_domains", "blocked_domains",
                "user_location", "cache_control", NULL};
            sb_emu_pathf(tp, sizeof tp, "%s.%s", path, json_string_value(json_object_get(t, "type")));
            if (!extras(call, t, tp, keys) || !field(call, t, tp, "name", SB_EMU_W_STRING, true) ||
                !field(call, t, tp, "max_uses", SB_EMU_W_INT, false))
                return false;
            if (strcmp(json_string_value(json_object_get(t, "name")), "web_search"))
                return invalid(call, "%s.name: Input should be 'web_search'", tp);
            continue;
        }
        json_t *type = json_object_get(t, "type");
        if (type && !json_is_null(type) && (!json_is_string(type) || strcmp(json_string_value(type), "custom")))
            return tag_mismatch(call, path, json_is_string(type) ? json_string_value(type) : "?",
                                "'custom', 'web_search_20250305'");
        static const char *const keys[] = {"type",          "name",   "description", "input_schema",
                                           "cache_control", "strict", NULL};
        sb_emu_pathf(tp, sizeof tp, "%s.custom", path);
        if (!extras(call, t, tp, keys) || !field(call, t, tp, "name", SB_EMU_W_STRING, true) ||
            !field(call, t, tp, "description", SB_EMU_W_STRING, false) ||
            !field(call, t, tp, "input_schema", SB_EMU_W_OBJECT, true) ||
            !field(call, t, tp, "strict", SB_EMU_W_BOOL, false) ||
            !field(call, t, tp, "cache_control", SB_EMU_W_OBJECT, false))
            return false;
        if (!valid_tool_name(json_string_value(json_object_get(t, "name"))))
            return invalid(call, "%s.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", tp);
        json_t *stype = json_object_get(json_object_get(t, "input_schema"), "type");
        if (!json_is_string(stype) || strcmp(json_string_value(stype), "object"))
            return invalid(call, "%s.input_schema.type: Input should be 'object'", tp);
        for (size_t j = 0; j < i; j++) {
            const char *other = json_string_value(json_object_get(json_array_get(tools, j), "name"));
            if (other && !strcmp(other, json_string_value(json_object_get(t, "name"))))
                return invalid(call, "tools: Tool names must be unique.");
        }
    }
    return true;
}

static bool has_custom_tool(const json_t *tools, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        const char *n = json_string_value(json_object_get(t, "name"));
        if (!is_web_search(t) && n && !strcmp(n, name))
            return true;
    }
    return false;
}

static bool check_tool_choice(struct sb_emu_call *call, const json_t *body)
{
    json_t *tc = json_object_get(body, "tool_choice");
    if (!tc || json_is_null(tc))
        return true;
    if (!check_type(call, tc, "tool_choice", SB_EMU_W_OBJECT) ||
        !field(call, tc, "tool_choice", "type", SB_EMU_W_STRING, true))
        return false;
    const char *t = json_string_value(json_object_get(tc, "type"));
    char tp[PATH_MAX_LEN];
    sb_emu_pathf(tp, sizeof tp, "tool_choice.%s", t);
    if (!strcmp(t, "auto") || !strcmp(t, "any") || !strcmp(t, "none")) {
        static const char *const keys[] = {"type", "disable_parallel_tool_use", NULL};
        static const char *const none_keys[] = {"type", NULL};
        if (!extras(call, tc, tp, strcmp(t, "none") ? keys : none_keys) ||
            !field(call, tc, tp, "disable_parallel_tool_use", SB_EMU_W_BOOL, false))
            return false;
    } else if (!strcmp(t, "tool")) {
        static const char *const keys[] = {"type", "name", "disable_parallel_tool_use", NULL};
        if (!extras(call, tc, tp, keys) || !field(call, tc, tp, "name", SB_EMU_W_STRING, true) ||
            !field(call, tc, tp, "disable_parallel_tool_use", SB_EMU_W_BOOL, false))
            return false;
    } else {
        return tag_mismatch(call, "tool_choice", t, "'auto', 'any', 'tool', 'none'");
    }
    json_t *tools = json_object_get(body, "tools");
    if (json_array_size(tools) == 0 && strcmp(t, "none"))
        return invalid(call, "tool_choice may only be specified while providing tools.");
    if (!strcmp(t, "tool") && !has_custom_tool(tools, json_string_value(json_object_get(tc, "name"))))
        return invalid(call, "tool_choice.tool.name: Tool '%.64s' not found in the provided tools.",
                       json_string_value(json_object_get(tc, "name")));
    return true;
}

/* thinking; *enabled says whether the model thinks (enabled or adaptive). */
static bool check_thinking(struct sb_emu_call *call, const json_t *body, bool count, bool *enabled)
{
    *enabled = false;
    json_t *th = json_object_get(body, "thinking");
    if (!th || json_is_null(th))
        return true;
    if (!check_type(call, th, "thinking", SB_EMU_W_OBJECT) ||
        !field(call, th, "thinking", "type", SB_EMU_W_STRING, true))
        return false;
    const char *t = json_string_value(json_object_get(th, "type"));
    if (!strcmp(t, "disabled") || !strcmp(t, "between_tools")) {
        static const char *const keys[] = {"type", NULL};
        *enabled = t[0] == 'b';
        return extras(call, th, t[0] == 'd' ? "thinking.disabled" : "thinking.between_tools", keys);
    }
    if (!strcmp(t, "adaptive")) {
        static const char *const keys[] = {"type", "display", NULL};
        *enabled = true;
        json_t *display = json_object_get(th, "display");
        if (json_is_string(display) && strcmp(json_string_value(display), "summarized") &&
            strcmp(json_string_value(display), "omitted"))
            return invalid(call, "thinking.adaptive.display: Input should be 'summarized' or 'omitted'");
        return extras(call, th, "thinking.adaptive", keys);
    }
    if (strcmp(t, "enabled"))
        return tag_mismatch(call, "thinking", t, "'enabled', 'disabled', 'adaptive', 'between_tools'");
    static const char *const keys[] = {"type", "budget_tokens", NULL};
    if (!extras(call, th, "thinking.enabled", keys) ||
        !field(call, th, "thinking.enabled", "budget_tokens", SB_EMU_W_INT, true))
        return false;
    *enabled = true;
    json_int_t budget = json_integer_value(json_object_get(th, "budget_tokens"));
    if (budget < 1024)
        return invalid(call, "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024");
    json_t *mt = json_object_get(body, "max_tokens");
    if (!count && json_is_integer(mt) && json_integer_value(mt) <= budget)
        return invalid(call, "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                             "documentation at " THINKING_DOCS "#max-tokens-and-context-window-size");
    return true;
}

static bool check_format(struct sb_emu_call *call, const json_t *f, const char *path)
{
    static const char *const keys[] = {"type", "schema", NULL};
    char tp[PATH_MAX_LEN];
    if (!check_type(call, f, path, SB_EMU_W_OBJECT) || !field(call, f, path, "type", SB_EMU_W_STRING, true))
        return false;
    const char *t = json_string_value(json_object_get(f, "type"));
    if (strcmp(t, "json_schema"))
        return tag_mismatch(call, path, t, "'json_schema'");
    sb_emu_pathf(tp, sizeof tp, "%s.json_schema", path);
    return extras(call, f, tp, keys) && field(call, f, tp, "schema", SB_EMU_W_OBJECT, true);
}

static bool check_output(struct sb_emu_call *call, const json_t *body)
{
    json_t *oc = json_object_get(body, "output_config");
    json_t *of = json_object_get(body, "output_format");
    if (oc && !json_is_null(oc)) {
        static const char *const keys[] = {"format", "effort", NULL};
        static const char *const efforts[] = {"low", "medium", "high", "xhigh", "max", NULL};
        if (!check_type(call, oc, "output_config", SB_EMU_W_OBJECT) || !extras(call, oc, "output_config", keys) ||
            !field(call, oc, "output_config", "effort", SB_EMU_W_STRING, false))
            return false;
        json_t *effort = json_object_get(oc, "effort");
        if (json_is_string(effort) && !sb_emu_in_list(json_string_value(effort), efforts))
            return invalid(call, "output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max'");
        json_t *f = json_object_get(oc, "format");
        if (f && !json_is_null(f) && !check_format(call, f, "output_config.format"))
            return false;
    }
    if (of && !json_is_null(of)) {
        if (!check_format(call, of, "output_format"))
            return false;
        if (json_object_get(oc, "format") && !json_is_null(json_object_get(oc, "format")))
            return invalid(call, "Cannot specify both `output_format` and `output_config.format`. Please use only "
                                 "`output_config.format`.");
    }
    return true;
}

static bool check_system(struct sb_emu_call *call, const json_t *body)
{
    json_t *sys = json_object_get(body, "system");
    if (!sys || json_is_null(sys) || json_is_string(sys))
        return true;
    if (!json_is_array(sys))
        return invalid(call, "system: Input should be a valid list");
    size_t i;
    json_t *b;
    json_array_foreach (sys, i, b) {
        char path[PATH_MAX_LEN];
        sb_emu_pathf(path, sizeof path, "system.%zu", i);
        if (!check_type(call, b, path, SB_EMU_W_OBJECT) || !field(call, b, path, "type", SB_EMU_W_STRING, true))
            return false;
        if (strcmp(json_string_value(json_object_get(b, "type")), "text"))
            return tag_mismatch(call, path, json_string_value(json_object_get(b, "type")), "'text'");
        if (!check_block(call, b, path, "user", true))
            return false;
    }
    return true;
}

bool sb_emu_anthropic_check(struct sb_emu_call *call, bool count)
{
    if (!call->json)
        return invalid(call, "There was an error parsing the body of your request. Please make sure it is valid JSON.");
    if (!json_is_object(call->json))
        return invalid(call, "Input should be a valid dictionary");
    const json_t *body = call->json;
    static const char *const keys[] = {
        "model",       "messages",      "max_tokens",   "system",          "metadata",      "stop_sequences",
        "stream",      "temperature",   "top_p",        "top_k",           "tools",         "tool_choice",
        "thinking",    "output_config", "service_tier", "output_format",   "cache_control", "container",
        "diagnostics", "inference_geo", "speed",        "user_profile_id", "workspace_id",  NULL};
    static const char *const count_keys[] = {"model",    "messages",      "system",        "tools", "tool_choice",
                                             "thinking", "output_config", "output_format", NULL};
    if (!field(call, body, "", "model", SB_EMU_W_STRING, true) ||
        !field(call, body, "", "messages", SB_EMU_W_ARRAY, true) ||
        (!count && !field(call, body, "", "max_tokens", SB_EMU_W_INT, true)))
        return false;
    /* output_format is the structured-outputs beta's parameter: without the beta it does not exist. */
    if (json_object_get(body, "output_format") && !has_beta(call, STRUCTURED_BETA))
        return invalid(call, "output_format: Extra inputs are not permitted");
    if (!extras(call, body, "", count ? count_keys : keys))
        return false;
    static const char *const removed[] = {"temperature", "top_p", "top_k", NULL};
    for (size_t r = 0; !count && version_2026(call) && removed[r]; r++)
        if (json_object_get(body, removed[r]))
            return invalid(call, "%s: Extra inputs are not permitted", removed[r]);
    if (json_string_length(json_object_get(body, "model")) == 0)
        return invalid(call, "model: String should have at least 1 character");
    if (!number_range(call, body, "max_tokens", SB_EMU_W_INT, 1, 1e9) ||
        !number_range(call, body, "temperature", SB_EMU_W_NUMBER, 0, 1) ||
        !number_range(call, body, "top_p", SB_EMU_W_NUMBER, 0, 1) ||
        !number_range(call, body, "top_k", SB_EMU_W_INT, 0, 1e9) ||
        !field(call, body, "", "stream", SB_EMU_W_BOOL, false) ||
        !field(call, body, "", "stop_sequences", SB_EMU_W_ARRAY, false) ||
        !field(call, body, "", "metadata", SB_EMU_W_OBJECT, false) ||
        !field(call, body, "", "service_tier", SB_EMU_W_STRING, false) ||
        !field(call, body, "", "cache_control", SB_EMU_W_OBJECT, false) ||
        !field(call, body, "", "diagnostics", SB_EMU_W_OBJECT, false) ||
        !field(call, body, "", "inference_geo", SB_EMU_W_STRING, false) ||
        !field(call, body, "", "speed", SB_EMU_W_STRING, false) ||
        !field(call, body, "", "user_profile_id", SB_EMU_W_STRING, false) ||
        !field(call, body, "", "workspace_id", SB_EMU_W_STRING, false))
        return false;
    json_t *speed = json_object_get(body, "speed");
    if (json_is_string(speed) && strcmp(json_string_value(speed), "standard") &&
        strcmp(json_string_value(speed), "fast"))
        return invalid(call, "speed: Input should be 'standard' or 'fast'");
    json_t *tier = json_object_get(body, "service_tier");
    if (json_is_string(tier) && strcmp(json_string_value(tier), "auto") &&
        strcmp(json_string_value(tier), "standard_only"))
        return invalid(call, "service_tier: Input should be 'auto' or 'standard_only'");
    size_t i;
    json_t *v;
    json_array_foreach (json_object_get(body, "stop_sequences"), i, v) {
        char path[PATH_MAX_LEN];
        sb_emu_pathf(path, sizeof path, "stop_sequences.%zu", i);
        if (!check_type(call, v, path, SB_EMU_W_STRING))
            return false;
    }
    json_t *md = json_object_get(body, "metadata");
    if (json_is_object(md)) {
        static const char *const mkeys[] = {"user_id", NULL};
        if (!extras(call, md, "metadata", mkeys) || !field(call, md, "metadata", "user_id", SB_EMU_W_STRING, false))
            return false;
    }
    bool thinking = false;
    if (!check_system(call, body) || !check_tools(call, body) || !check_tool_choice(call, body) ||
        !check_thinking(call, body, count, &thinking) || !check_output(call, body))
        return false;
    json_t *messages = json_object_get(body, "messages");
    if (json_array_size(messages) == 0)
        return invalid(call, "messages: List should have at least 1 item after validation, not 0");
    size_t n = json_array_size(messages);
    json_array_foreach (messages, i, v) {
        if (!check_message(call, v, i, i + 1 == n))
            return false;
    }
    if (thinking) {
        json_t *temp = json_object_get(body, "temperature");
        if (json_is_number(temp) && json_number_value(temp) != 1.0)
            return invalid(call, "`temperature` may only be set to 1 when thinking is enabled. Please consult our "
                                 "documentation at " THINKING_DOCS "#feature-compatibility");
        json_t *topk = json_object_get(body, "top_k");
        if (topk && !json_is_null(topk))
            return invalid(call, "`top_k` must be unset when thinking is enabled. Please consult our documentation "
                                 "at " THINKING_DOCS "#feature-compatibility");
        const char *tct = json_string_value(json_object_get(json_object_get(body, "tool_choice"), "type"));
        if (tct && (!strcmp(tct, "any") || !strcmp(tct, "tool")))
            return invalid(call, "Thinking may not be enabled when tool_choice forces tool use.");
    }
    return check_conversation(call, messages, thinking);
}

/*
 * wtool_mcp_parse: the pure half of the MCP client (wtool_mcp.h): reading
 * the answer to one JSON-RPC request out of what a server sent back (one
 * JSON message, a batch, or an event stream of them), and turning the
 * results of tools/list and tools/call into what the tool loop hands on.
 * Every byte here comes from a server a client named, so nothing is
 * asserted on it and every size is bounded; an error message quoted from a
 * server is cut and cleaned before it goes anywhere.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sb_alloc.h"
#include "sb_utf8.h"
#include "wtool_mcp.h"

#define MCP_READER_MAX_DEFAULT (4u * 1024u * 1024u)

static const char *const mcp_versions[] = {"2025-06-18", "2025-03-26", "2024-11-05"};

const char *sb_mcp_known_version(const char *v)
{
    if (!v)
        return NULL;
    for (size_t i = 0; i < sizeof mcp_versions / sizeof mcp_versions[0]; i++)
        if (strcmp(v, mcp_versions[i]) == 0)
            return mcp_versions[i];
    return NULL;
}

/* A server's message, fit to quote: at most SB_MCP_MESSAGE_MAX bytes, no
 * control character (a log line or an SSE frame stays one line), valid
 * UTF-8 (a cut in the middle of a character becomes '?'). */
static void mcp_clean_message(char *out, size_t out_len, const char *msg)
{
    size_t n = 0;
    if (!out_len)
        return;
    for (; msg && msg[n] && n < SB_MCP_MESSAGE_MAX && n + 1 < out_len; n++) {
        unsigned char c = (unsigned char)msg[n];
        out[n] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
    }
    out[n] = '\0';
    sb_utf8_fix(out);
}

static void mcp_set_error(sb_mcp_reader_t *r, int rc, const char *msg)
{
    r->done = true;
    r->rc = rc;
    snprintf(r->error, sizeof r->error, "%s", msg);
}

/* A JSON-RPC error object as "MCP error <code>: <message>". */
static void mcp_rpc_error(sb_mcp_reader_t *r, const json_t *error)
{
    char msg[SB_MCP_MESSAGE_MAX + 1];
    const json_t *code = json_object_get(error, "code");
    const char *text = json_string_value(json_object_get(error, "message"));
    long long c = json_is_integer(code) ? json_integer_value(code) : 0LL;
    /* The TypeScript SDK's McpError already says "MCP error <code>: " in its
     * message: said once is enough. */
    char prefix[48];
    int k = snprintf(prefix, sizeof prefix, "MCP error %lld: ", c);
    if (text && k > 0 && strncmp(text, prefix, (size_t)k) == 0)
        text += k;
    mcp_clean_message(msg, sizeof msg, text && *text ? text : "(no message)");
    r->done = true;
    r->rc = -EPROTO;
    snprintf(r->error, sizeof r->error, "MCP error %lld: %s", c, msg);
}

/* One JSON-RPC message: the answer (r->done set) or something to skip. */
static void mcp_message(sb_mcp_reader_t *r, const json_t *msg)
{
    if (!json_is_object(msg) || json_object_get(msg, "method"))
        return; /* not a message, or a request or notification from the server: not ours to answer here */
    const json_t *id = json_object_get(msg, "id");
    const json_t *result = json_object_get(msg, "result");
    const json_t *error = json_object_get(msg, "error");
    bool ours = json_is_integer(id) && json_integer_value(id) == r->id;
    if (!ours && !(json_is_null(id) && error))
        return; /* a response to some other request */
    if (json_is_object(error) && !result) {
        mcp_rpc_error(r, error);
    } else if (json_is_object(result) && !error && ours) {
        r->done = true;
        r->rc = 0;
        r->result = json_incref((json_t *)result);
    } else {
        mcp_set_error(r, -EBADMSG, "malformed MCP answer (a response without a result object or an error)");
    }
}

/* One JSON text: a message or a batch of them. false when it is not JSON. */
static bool mcp_text(sb_mcp_reader_t *r, const char *p, size_t n)
{
    json_t *v = json_loadb(p, n, JSON_DECODE_ANY, NULL);
    if (!v)
        return false;
    if (json_is_array(v)) {
        size_t i;
        json_t *m;
        json_array_foreach (v, i, m) {
            if (r->done)
                break;
            mcp_message(r, m);
        }
    } else {
        mcp_message(r, v);
    }
    json_decref(v);
    return true;
}

static bool mcp_blank(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r' && p[i] != '\n')
            return false;
    return true;
}

/* One event of a stream. Servers name their events "message" or leave them
 * unnamed; an event with empty data (a resumption primer) is nothing. */
static int mcp_event(void *arg, const char *event, const char *data, size_t len)
{
    sb_mcp_reader_t *r = arg;
    if ((*event && strcmp(event, "message") != 0) || mcp_blank(data, len))
        return 0;
    if (!mcp_text(r, data, len))
        r->bad = true;
    return r->done ? SB_SSE_STOP : 0;
}

void sb_mcp_reader_init(sb_mcp_reader_t *r, const char *content_type, int64_t id, size_t max)
{
    memset(r, 0, sizeof *r);
    r->id = id;
    r->max = max ? max : MCP_READER_MAX_DEFAULT;
    r->sse_mode = content_type && strncasecmp(content_type, "text/event-stream", 17) == 0;
    if (r->sse_mode)
        sb_sse_init(&r->sse, r->max, 0);
}

int sb_mcp_reader_feed(sb_mcp_reader_t *r, const char *p, size_t n)
{
    if (r->done)
        return r->rc < 0 ? r->rc : 1;
    if (!r->sse_mode) {
        if (n > r->max - r->body.len) {
            mcp_set_error(r, -E2BIG, "MCP answer too large");
            return r->rc;
        }
        sb_buf_add(&r->body, p, n);
        return 0;
    }
    int rc = sb_sse_feed(&r->sse, p, n, mcp_event, r);
    if (rc < 0 && !r->done)
        mcp_set_error(r, rc == -E2BIG ? -E2BIG : -EBADMSG,
                      rc == -E2BIG ? "MCP answer too large" : "malformed MCP event stream");
    if (r->done)
        return r->rc < 0 ? r->rc : 1;
    return 0;
}

int sb_mcp_reader_finish(sb_mcp_reader_t *r, json_t **result, char *err, size_t err_len)
{
    *result = NULL;
    if (!r->done) {
        if (r->sse_mode) {
            int rc = sb_sse_finish(&r->sse, mcp_event, r);
            if (rc < 0 && !r->done)
                mcp_set_error(r, rc == -E2BIG ? -E2BIG : -EBADMSG, "malformed MCP event stream");
            if (!r->done)
                mcp_set_error(r, -EBADMSG,
                              r->bad ? "malformed MCP answer (an event that is not JSON)"
                                     : "MCP answer without a response to the request");
        } else if (r->body.len == 0 || mcp_blank(r->body.p, r->body.len)) {
            mcp_set_error(r, -EBADMSG, "MCP server sent no response");
        } else if (!mcp_text(r, r->body.p, r->body.len)) {
            mcp_set_error(r, -EBADMSG, "malformed MCP answer (not JSON)");
        } else if (!r->done) {
            mcp_set_error(r, -EBADMSG, "MCP answer without a response to the request");
        }
    }
    if (r->rc == 0) {
        *result = r->result;
        r->result = NULL;
        if (err_len)
            err[0] = '\0';
    } else if (err_len) {
        snprintf(err, err_len, "%s", r->error);
    }
    return r->rc;
}

void sb_mcp_reader_free(sb_mcp_reader_t *r)
{
    if (r->sse_mode)
        sb_sse_free(&r->sse);
    sb_buf_free(&r->body);
    json_decref(r->result);
    r->result = NULL;
}

int sb_mcp_parse_answer(const char *body, size_t len, const char *content_type, int64_t id, size_t max, json_t **result,
                        char *err, size_t err_len)
{
    sb_mcp_reader_t r;
    sb_mcp_reader_init(&r, content_type, id, max);
    if (len) {
        int rc = sb_mcp_reader_feed(&r, body, len);
        (void)rc; /* finish reports the outcome, whatever feed said */
    }
    int rc = sb_mcp_reader_finish(&r, result, err, err_len);
    sb_mcp_reader_free(&r);
    return rc;
}

int sb_mcp_tools_page(const json_t *result, json_t *tools, char **cursor)
{
    *cursor = NULL;
    const json_t *list = json_object_get(result, "tools");
    if (!json_is_array(list))
        return -EBADMSG;
    size_t i;
    const json_t *t;
    json_array_foreach (list, i, t) {
        if (json_array_size(tools) >= SB_MCP_MAX_TOOLS)
            break;
        const json_t *name = json_object_get(t, "name");
        if (!json_is_string(name) || json_string_length(name) == 0)
            continue;
        const json_t *schema = json_object_get(t, "inputSchema");
        const json_t *desc = json_object_get(t, "description");
        const json_t *ann = json_object_get(t, "annotations");
        json_t *o = json_object();
        json_object_set(o, "name", (json_t *)name);
        if (json_is_object(schema))
            json_object_set_new(o, "input_schema", json_deep_copy(schema));
        else
            json_object_set_new(o, "input_schema", json_pack("{s:s}", "type", "object"));
        if (json_is_string(desc))
            json_object_set(o, "description", (json_t *)desc);
        if (json_is_object(ann))
            json_object_set_new(o, "annotations", json_deep_copy(ann));
        json_array_append_new(tools, o);
    }
    const char *next = json_string_value(json_object_get(result, "nextCursor"));
    if (next && *next)
        *cursor = sb_xstrdup(next);
    return 0;
}

/* Appends v's compact JSON to b (nothing when it cannot be encoded). */
static void mcp_add_json(sb_buf_t *b, const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (s) {
        sb_buf_add(b, s, strlen(s));
        free(s);
    }
}

void sb_mcp_call_output(const json_t *result, json_t **output, bool *is_error)
{
    sb_buf_t b = {0};
    const json_t *content = json_object_get(result, "content");
    *is_error = json_is_true(json_object_get(result, "isError"));
    if (json_is_array(content)) {
        size_t i;
        const json_t *part;
        json_array_foreach (content, i, part) {
            if (i)
                sb_buf_add(&b, "\n", 1);
            const json_t *text = json_object_get(part, "text");
            if (json_is_string(json_object_get(part, "type")) &&
                strcmp(json_string_value(json_object_get(part, "type")), "text") == 0 && json_is_string(text))
                sb_buf_add(&b, json_string_value(text), json_string_length(text));
            else
                mcp_add_json(&b, part);
        }
    } else if (json_object_get(result, "structuredContent")) {
        mcp_add_json(&b, json_object_get(result, "structuredContent"));
    }
    /* The parts came out of jansson, so the text is UTF-8; a NUL inside a
     * text part is kept (json_stringn takes a length). */
    *output = json_stringn(b.p ? b.p : "", b.len);
    if (!*output)
        *output = json_string("");
    sb_buf_free(&b);
}

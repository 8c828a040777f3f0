/*
 * wtool_mcp: a client of one remote MCP server for one job, on the worker's
 * loop (MCP's Streamable HTTP transport: JSON-RPC 2.0 over POST, answered
 * with application/json or a text/event-stream; Mcp-Session-Id kept and
 * sent; protocol version negotiated in initialize). A session runs
 * initialize -> notifications/initialized once, lazily, before its first
 * tools/list or tools/call, and serialises nothing: calls may overlap once
 * initialized. Every transfer goes through sb_upstream_fetch with the SSRF
 * guard and the output cap; nothing here logs a header value, an argument
 * or a result.
 *
 * A failing server (refused, slow, an HTTP error, a JSON-RPC error, a
 * malformed answer, an oversized one) is reported through the callback as
 * an error string: it never ends the job.
 */
#ifndef WTOOL_MCP_H
#define WTOOL_MCP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sb_buf.h"
#include "sb_sse.h"
#include "upstream.h"

struct sb_ssrf;
typedef struct sb_mcp sb_mcp_t;

typedef struct sb_mcp_cfg {
    const char *server_url;      /* borrowed; the tool's server_url */
    const json_t *headers;       /* borrowed object name -> string value, or NULL */
    const char *authorization;   /* borrowed bearer token (sent as "Authorization: Bearer ..."), or NULL */
    const struct sb_ssrf *guard; /* borrowed */
    int64_t timeout_ms;          /* per JSON-RPC request (<= 0: 30 s) */
    int64_t connect_timeout_ms;  /* <= 0: 10 s */
    size_t max_bytes;            /* most bytes of one answer (0: 4 MiB) */
} sb_mcp_cfg_t;

/* tools: new reference to an array of {"name","input_schema","description"?,"annotations"?}
 * (OpenAI's mcp_list_tools shape) or NULL; error: NULL on success, else a
 * short message (borrowed, valid during the call). */
typedef void (*sb_mcp_list_cb)(void *arg, json_t *tools, const char *error);
/* output: the tool result as text (the text contents joined with "\n",
 * other contents as their JSON), new reference to a string, or NULL;
 * is_error: the tool said isError (output holds its text); error: a
 * protocol/transport failure (output NULL). bytes_in: answer bytes read. */
typedef void (*sb_mcp_call_cb)(void *arg, json_t *output, bool is_error, const char *error, size_t bytes_in);

/* cfg and what it points to are copied (the guard is borrowed: it must
 * outlive the client and its last DELETE). NULL, with why set (a short
 * message without the URL or any header value), when the URL is not
 * http(s), when the guard refuses it, or when cfg->headers is not an object
 * of strings whose names are HTTP tokens and whose values hold no control
 * character (framing and transport headers such as Content-Length, Host,
 * Mcp-Session-Id are refused too). A header with an empty value is not
 * sent; with cfg->authorization set, an Authorization among the headers is
 * dropped. */
sb_mcp_t *sb_mcp_new(sb_upstream_t *up, const sb_mcp_cfg_t *cfg, char *why, size_t why_len);
/* Cancels what is in flight (no callback runs), ends the session (a DELETE
 * with its Mcp-Session-Id, not waited for) and frees. NULL-safe. May be
 * called from inside one of this client's callbacks; not from inside an
 * upstream on_data callback (sb_upstream_cancel's rule). */
void sb_mcp_destroy(sb_mcp_t **m);

/* tools/list, every page (cursor), after initialize if not done. The
 * callback runs exactly once, later (never inside this call). 0 or a
 * negative code (then no callback). */
int sb_mcp_list(sb_mcp_t *m, sb_mcp_list_cb cb, void *arg) __attribute__((warn_unused_result));
/* tools/call name with arguments (an object, borrowed). Same rules. */
int sb_mcp_call(sb_mcp_t *m, const char *name, const json_t *arguments, sb_mcp_call_cb cb, void *arg)
    __attribute__((warn_unused_result));

/*
 * What tool_log's outcome is for an error string a callback gave:
 * "timeout" (the server did not answer in time), "blocked" (the SSRF guard
 * refused the address it resolved to or a redirect), else "error"; "ok" for
 * NULL.
 */
const char *sb_mcp_error_outcome(const char *error);

/* ---- the pure part: parsing what a server answers (untrusted bytes; unit-tested and fuzzed) ---- */

/* Protocol versions this client speaks; it asks for the first. */
#define SB_MCP_PROTOCOL_VERSION "2025-06-18"
/* Most bytes of an error message quoted from a server. */
#define SB_MCP_MESSAGE_MAX 200
/* Most pages of tools/list read, and most tools kept. */
#define SB_MCP_MAX_PAGES 20
#define SB_MCP_MAX_TOOLS 1024

/* The protocol version if v is one this client knows (a static string), else NULL. */
const char *sb_mcp_known_version(const char *v);

/*
 * An incremental reader of the answer to one JSON-RPC request: the body of
 * an HTTP 2xx response to a POST, either one JSON-RPC message or a batch
 * (application/json, or any other content type), or a text/event-stream
 * whose events each carry one message or batch. The response whose id is
 * `id` is the answer; notifications and requests from the server, and
 * responses to other ids, are skipped; an error response with a null id
 * (the server could not read the request) is taken as the answer too.
 */
typedef struct sb_mcp_reader {
    sb_sse_reader_t sse; /* stream mode */
    sb_buf_t body;       /* JSON mode: the body so far */
    int64_t id;
    size_t max;     /* most bytes of a JSON body or of one event */
    bool sse_mode;  /* the content type was text/event-stream */
    bool bad;       /* some event's data was not JSON (a stream without the answer is then "malformed") */
    bool done;      /* the answer was read (a result or an error) */
    int rc;         /* when done or failed: 0, -EPROTO (JSON-RPC error), -EBADMSG, -E2BIG */
    json_t *result; /* when done with rc 0: the response's result object */
    char error[SB_MCP_MESSAGE_MAX + 64];
} sb_mcp_reader_t;

/* content_type: the response's Content-Type, or NULL. max 0: 4 MiB. */
void sb_mcp_reader_init(sb_mcp_reader_t *r, const char *content_type, int64_t id, size_t max);
/* Bytes of the body. 0: go on; 1: the answer is in (the rest of the body
 * may be ignored); a negative code: the body is refused (error set). */
int sb_mcp_reader_feed(sb_mcp_reader_t *r, const char *p, size_t n) __attribute__((warn_unused_result));
/* The body ended. 0 with *result (new reference, an object) or a negative
 * code with err set: -EPROTO "MCP error <code>: <message>" (the message
 * cut to SB_MCP_MESSAGE_MAX bytes, control characters as spaces),
 * -EBADMSG (malformed, or no answer to the request), -E2BIG. */
int sb_mcp_reader_finish(sb_mcp_reader_t *r, json_t **result, char *err, size_t err_len)
    __attribute__((warn_unused_result));
void sb_mcp_reader_free(sb_mcp_reader_t *r);

/* The whole of a body at once, as the reader reads it (init, feed, finish). */
int sb_mcp_parse_answer(const char *body, size_t len, const char *content_type, int64_t id, size_t max, json_t **result,
                        char *err, size_t err_len) __attribute__((warn_unused_result));

/*
 * One tools/list result: its tools, as OpenAI's mcp_list_tools shows them
 * ({"name","input_schema","description"?,"annotations"?}; a tool without a
 * string name is skipped, a missing input schema is {"type":"object"}), are
 * appended to tools until it holds SB_MCP_MAX_TOOLS; *cursor is set to a
 * copy of nextCursor (malloc'd) or NULL. 0, or -EBADMSG when result has no
 * tools array.
 */
int sb_mcp_tools_page(const json_t *result, json_t *tools, char **cursor) __attribute__((warn_unused_result));

/*
 * One tools/call result as text: its content parts, text parts as their
 * text and any other part as its compact JSON, joined by "\n" (no content
 * array: structuredContent's JSON, or ""). *output is a new reference to a
 * string; *is_error is the result's isError.
 */
void sb_mcp_call_output(const json_t *result, json_t **output, bool *is_error);

#endif

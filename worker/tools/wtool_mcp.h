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

#include "upstream.h"

struct sb_ssrf;
typedef struct sb_mcp sb_mcp_t;

typedef struct sb_mcp_cfg {
    const char *server_url;             /* borrowed; the tool's server_url */
    const json_t *headers;              /* borrowed object name -> string value, or NULL */
    const char *authorization;          /* borrowed bearer token (sent as "Authorization: Bearer ..."), or NULL */
    const struct sb_ssrf *guard;        /* borrowed */
    int64_t timeout_ms;                 /* per JSON-RPC request */
    int64_t connect_timeout_ms;
    size_t max_bytes;                   /* most bytes of one answer */
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

/* cfg and what it points to are copied. NULL only on a bad URL (why set). */
sb_mcp_t *sb_mcp_new(sb_upstream_t *up, const sb_mcp_cfg_t *cfg, char *why, size_t why_len);
/* Cancels what is in flight (no callback runs), ends the session (a DELETE
 * with its Mcp-Session-Id, not waited for) and frees. NULL-safe. */
void sb_mcp_destroy(sb_mcp_t **m);

/* tools/list, every page (cursor), after initialize if not done. The
 * callback runs exactly once, later (never inside this call). 0 or a
 * negative code (then no callback). */
int sb_mcp_list(sb_mcp_t *m, sb_mcp_list_cb cb, void *arg) __attribute__((warn_unused_result));
/* tools/call name with arguments (an object, borrowed). Same rules. */
int sb_mcp_call(sb_mcp_t *m, const char *name, const json_t *arguments, sb_mcp_call_cb cb, void *arg)
    __attribute__((warn_unused_result));

#endif

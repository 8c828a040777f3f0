/*
 * wtool_mcp: one job's client of one remote MCP server (see wtool_mcp.h):
 * the session (initialize, notifications/initialized, the session id and
 * protocol version sent on every later request, a new session when the
 * server says the old one expired) and the requests the tool loop makes on
 * it (tools/list page by page, tools/call), each one HTTP POST through
 * sb_upstream_fetch. Answers are read as they arrive by the pure reader of
 * wtool_mcp_parse.c; once the response to the request is in, the rest of
 * the transfer is dropped (a server that keeps its stream open after
 * answering costs nothing).
 *
 * Callbacks run from the upstream's on_done, never inside sb_mcp_list or
 * sb_mcp_call, and only after every pointer to the finished request is gone
 * from the client, so a callback may free the client (the `alive` flag
 * tells the code that called it to touch nothing more).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sb_alloc.h"
#include "sb_ssrf.h"
#include "wtool_mcp.h"

/* Most custom headers, and most bytes of one, a client may ask for. */
#define MCP_MAX_HEADERS 64
#define MCP_MAX_HEADER_BYTES 8192
/* Redirects followed (each one re-checked by the guard). */
#define MCP_MAX_REDIRECTS 3
/* The session's DELETE at the end: small and short. */
#define MCP_DELETE_TIMEOUT_MS 5000
#define MCP_ERR_LEN (SB_MCP_MESSAGE_MAX + 64)

/* Where the session is. */
enum mcp_state {
    MCP_IDLE,         /* no session: the next request starts one */
    MCP_INITIALIZING, /* initialize in flight */
    MCP_NOTIFYING,    /* notifications/initialized in flight */
    MCP_READY,        /* requests go out at once, with the session's id and version */
};

enum mcp_kind { MCP_INIT, MCP_NOTIFY, MCP_LIST, MCP_CALL };

struct mcp_op {
    struct mcp_op *next; /* in m->ops (MCP_LIST, MCP_CALL only) */
    sb_mcp_t *m;
    enum mcp_kind kind;
    /* what the tool loop asked for */
    sb_mcp_list_cb list_cb;
    sb_mcp_call_cb call_cb;
    void *arg;
    char *name;      /* tools/call */
    json_t *args;    /* tools/call arguments (a copy) */
    json_t *tools;   /* tools/list: the pages so far */
    char *cursor;    /* tools/list: the next page's cursor */
    int pages;       /* tools/list: pages asked for */
    bool retried;    /* already sent again after an expired session */
    bool waiting;    /* waits for the session to be ready */
    bool doomed;     /* waited for a session that failed: its callback is due */
    size_t bytes_in; /* answer bytes over all its transfers */
    /* the transfer in flight */
    sb_upstream_xfer_t *xfer;
    int64_t id;
    char *sent_sid; /* the session id it carried, or NULL */
    long status;    /* the status of the response being read */
    bool aborted;   /* on_data stopped the transfer itself (answer in, an error status, or a refused body) */
    bool reading;   /* rd initialised */
    sb_mcp_reader_t rd;
    char ctype[128]; /* the response's Content-Type */
    char *sid;       /* initialize: the response's Mcp-Session-Id */
    bool bad_sid;    /* initialize: a session id that is not visible ASCII */
};

struct sb_mcp {
    sb_upstream_t *up;
    char *url;
    char **hdrs; /* "Name: value": the client's headers and the Authorization */
    size_t n_hdrs;
    const struct sb_ssrf *guard;
    int64_t timeout_ms, connect_timeout_ms;
    size_t max_bytes;
    enum mcp_state state;
    char *sid;                 /* Mcp-Session-Id, when the server gave one */
    const char *version;       /* negotiated (static) */
    struct mcp_op *session_op; /* MCP_INIT / MCP_NOTIFY in flight */
    struct mcp_op *ops;        /* list and call requests, in flight or waiting */
    int64_t next_id;
    bool *alive; /* set while a callback runs: cleared if it frees m */
};

/* ---- configuration ------------------------------------------------------------------------ */

static bool mcp_is_token(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c <= 0x20 || c >= 0x7f || strchr("\"(),/:;<=>?@[\\]{}", c))
            return false;
    }
    return true;
}

static bool mcp_value_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            return false;
    }
    return true;
}

/* Headers the transport sets itself, or that would change the framing. */
static bool mcp_reserved_header(const char *name)
{
    static const char *const reserved[] = {
        "content-length", "transfer-encoding",
        "host",           "connection",
        "upgrade",        "te",
        "trailer",        "expect",
        "keep-alive",     "proxy-connection",
        "content-type",   "accept",
        "mcp-session-id", "mcp-protocol-version",
        "last-event-id",
    };
    for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
        if (strcasecmp(name, reserved[i]) == 0)
            return true;
    return false;
}

static void mcp_add_header(sb_mcp_t *m, char *line)
{
    m->hdrs = sb_xrealloc(m->hdrs, (m->n_hdrs + 1) * sizeof *m->hdrs);
    m->hdrs[m->n_hdrs++] = line;
}

/* cfg->headers and cfg->authorization as header lines; -EINVAL with why. */
static int mcp_headers(sb_mcp_t *m, const sb_mcp_cfg_t *cfg, char *why, size_t why_len)
{
    if (cfg->headers && !json_is_object(cfg->headers)) {
        snprintf(why, why_len, "MCP headers must be an object");
        return -EINVAL;
    }
    if (json_object_size(cfg->headers) > MCP_MAX_HEADERS) {
        snprintf(why, why_len, "too many MCP headers");
        return -EINVAL;
    }
    const char *name;
    json_t *v;
    json_object_foreach ((json_t *)cfg->headers, name, v) {
        /* why names the header (the client's own key) but never its value */
        if (!mcp_is_token(name) || strlen(name) > 256) {
            snprintf(why, why_len, "MCP header name is not a valid HTTP header name");
            return -EINVAL;
        }
        if (mcp_reserved_header(name)) {
            snprintf(why, why_len, "MCP header %s may not be set", name);
            return -EINVAL;
        }
        if (!json_is_string(v) || json_string_length(v) > MCP_MAX_HEADER_BYTES ||
            !mcp_value_ok(json_string_value(v), json_string_length(v))) {
            snprintf(why, why_len, "MCP header %s must be a string without control characters", name);
            return -EINVAL;
        }
        if (json_string_length(v) == 0 || (cfg->authorization && strcasecmp(name, "authorization") == 0))
            continue;
        mcp_add_header(m, sb_xasprintf("%s: %s", name, json_string_value(v)));
    }
    if (cfg->authorization) {
        size_t n = strlen(cfg->authorization);
        if (n > MCP_MAX_HEADER_BYTES || !mcp_value_ok(cfg->authorization, n)) {
            snprintf(why, why_len, "MCP authorization must be a token without control characters");
            return -EINVAL;
        }
        if (n)
            mcp_add_header(m, sb_xasprintf("Authorization: Bearer %s", cfg->authorization));
    }
    return 0;
}

sb_mcp_t *sb_mcp_new(sb_upstream_t *up, const sb_mcp_cfg_t *cfg, char *why, size_t why_len)
{
    const char *url = cfg->server_url;
    if (!url || (strncasecmp(url, "https://", 8) != 0 && strncasecmp(url, "http://", 7) != 0) ||
        !mcp_value_ok(url, strlen(url)) || strchr(url, ' ')) {
        snprintf(why, why_len, "MCP server_url must be an http(s) URL");
        return NULL;
    }
    if (cfg->guard && sb_ssrf_check_url(cfg->guard, url, why, why_len) != 0)
        return NULL;
    sb_mcp_t *m = sb_xcalloc(1, sizeof *m);
    if (mcp_headers(m, cfg, why, why_len) != 0) {
        sb_mcp_destroy(&m);
        return NULL;
    }
    m->up = up;
    m->url = sb_xstrdup(url);
    m->guard = cfg->guard;
    m->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 30000;
    m->connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 10000;
    m->max_bytes = cfg->max_bytes ? cfg->max_bytes : 4u * 1024u * 1024u;
    m->next_id = 1;
    return m;
}

/* ---- requests ------------------------------------------------------------------------------ */

static void mcp_op_reset_xfer(struct mcp_op *op)
{
    if (op->reading)
        sb_mcp_reader_free(&op->rd);
    op->reading = false;
    free(op->sent_sid);
    op->sent_sid = NULL;
    free(op->sid);
    op->sid = NULL;
    op->bad_sid = false;
    op->status = 0;
    op->aborted = false;
    op->ctype[0] = '\0';
}

static void mcp_op_free(struct mcp_op *op)
{
    if (!op)
        return;
    if (op->xfer)
        sb_upstream_cancel(op->m->up, &op->xfer);
    mcp_op_reset_xfer(op);
    free(op->name);
    json_decref(op->args);
    json_decref(op->tools);
    free(op->cursor);
    free(op);
}

/* The JSON-RPC text of op's next request (id set for a request). */
static char *mcp_op_body(sb_mcp_t *m, struct mcp_op *op)
{
    json_t *msg = NULL;
    if (op->kind == MCP_NOTIFY)
        return sb_xstrdup("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    op->id = m->next_id++;
    if (op->kind == MCP_INIT) {
        msg = json_pack("{s:s,s:I,s:s,s:{s:s,s:{},s:{s:s,s:s}}}", "jsonrpc", "2.0", "id", (json_int_t)op->id, "method",
                        "initialize", "params", "protocolVersion", SB_MCP_PROTOCOL_VERSION, "capabilities",
                        "clientInfo", "name", "switchboard", "version", "1");
    } else if (op->kind == MCP_LIST) {
        msg = json_pack("{s:s,s:I,s:s}", "jsonrpc", "2.0", "id", (json_int_t)op->id, "method", "tools/list");
        if (op->cursor)
            json_object_set_new(msg, "params", json_pack("{s:s}", "cursor", op->cursor));
    } else {
        msg = json_pack("{s:s,s:I,s:s,s:{s:s,s:O}}", "jsonrpc", "2.0", "id", (json_int_t)op->id, "method", "tools/call",
                        "params", "name", op->name, "arguments", op->args);
    }
    char *s = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    json_decref(msg);
    return s;
}

static int mcp_on_data(long status, const char *data, size_t len, void *arg);
static void mcp_on_done(const sb_upstream_result_t *res, void *arg);
static void mcp_on_header(const char *name, size_t name_len, const char *value, size_t value_len, void *arg);

/* Starts op's next POST. 0, or a negative code (nothing started). */
static int mcp_send(sb_mcp_t *m, struct mcp_op *op)
{
    mcp_op_reset_xfer(op);
    char *body = mcp_op_body(m, op);
    if (!body)
        return -ENOMEM;
    const char *hdrs[MCP_MAX_HEADERS + 8];
    size_t n = 0;
    char *sid_line = NULL, *ver_line = NULL;
    hdrs[n++] = "Content-Type: application/json";
    hdrs[n++] = "Accept: application/json, text/event-stream";
    if (op->kind != MCP_INIT && m->sid) {
        sid_line = sb_xasprintf("Mcp-Session-Id: %s", m->sid);
        hdrs[n++] = sid_line;
        op->sent_sid = sb_xstrdup(m->sid);
    }
    if (op->kind != MCP_INIT && m->version) {
        ver_line = sb_xasprintf("MCP-Protocol-Version: %s", m->version);
        hdrs[n++] = ver_line;
    }
    for (size_t i = 0; i < m->n_hdrs && n < sizeof hdrs / sizeof hdrs[0]; i++)
        hdrs[n++] = m->hdrs[i];
    sb_fetch_req_t req = {
        .method = "POST",
        .url = m->url,
        .headers = hdrs,
        .n_headers = n,
        .body = body,
        .body_len = strlen(body),
        .max_bytes = m->max_bytes,
        .max_redirects = MCP_MAX_REDIRECTS,
        .guard = m->guard,
    };
    sb_upstream_cbs_t cbs = {.on_data = mcp_on_data, .on_done = mcp_on_done, .on_header = mcp_on_header};
    int rc = sb_upstream_fetch(m->up, &req, m->timeout_ms, m->connect_timeout_ms, &cbs, op, &op->xfer);
    free(body);
    free(sid_line);
    free(ver_line);
    if (rc != 0)
        op->xfer = NULL;
    return rc;
}

/* ---- callbacks to the tool loop ----------------------------------------------------------- */

/* Unlinks op from m->ops and frees it, then runs its callback with
 * tools/output (references taken over) or err. Returns false when the
 * callback freed m (the caller must then touch nothing of it). */
static bool mcp_finish(sb_mcp_t *m, struct mcp_op *op, json_t *tools, json_t *output, bool is_error, const char *err)
{
    for (struct mcp_op **p = &m->ops; *p; p = &(*p)->next)
        if (*p == op) {
            *p = op->next;
            break;
        }
    char errbuf[MCP_ERR_LEN];
    snprintf(errbuf, sizeof errbuf, "%s", err ? err : "");
    enum mcp_kind kind = op->kind;
    sb_mcp_list_cb list_cb = op->list_cb;
    sb_mcp_call_cb call_cb = op->call_cb;
    void *arg = op->arg;
    size_t bytes_in = op->bytes_in;
    mcp_op_free(op);

    bool alive = true, *outer = m->alive;
    m->alive = &alive;
    if (kind == MCP_LIST)
        list_cb(arg, err ? NULL : tools, err ? errbuf : NULL);
    else
        call_cb(arg, err ? NULL : output, is_error, err ? errbuf : NULL, bytes_in);
    if (!alive) {
        if (outer)
            *outer = false;
        return false;
    }
    m->alive = outer;
    return true;
}

/* The session could not be set up: every request waiting for it fails
 * with err, and the next request starts a new one. false when a callback
 * freed m. */
static bool mcp_session_fail(sb_mcp_t *m, const char *err)
{
    char errbuf[MCP_ERR_LEN];
    snprintf(errbuf, sizeof errbuf, "%s", err);
    mcp_op_free(m->session_op);
    m->session_op = NULL;
    m->state = MCP_IDLE;
    free(m->sid);
    m->sid = NULL;
    m->version = NULL;
    /* Marked first: a callback may make a new request, which waits for a
     * new session and must not get this one's error. */
    for (struct mcp_op *op = m->ops; op; op = op->next)
        if (op->waiting)
            op->doomed = true;
    for (;;) {
        struct mcp_op *op = m->ops;
        while (op && !op->doomed)
            op = op->next;
        if (!op)
            return true;
        if (!mcp_finish(m, op, NULL, NULL, false, errbuf))
            return false;
    }
}

/* Starts the session's initialize. 0, or a negative code. */
static int mcp_session_start(sb_mcp_t *m)
{
    struct mcp_op *op = sb_xcalloc(1, sizeof *op);
    op->m = m;
    op->kind = MCP_INIT;
    int rc = mcp_send(m, op);
    if (rc != 0) {
        mcp_op_free(op);
        return rc;
    }
    m->session_op = op;
    m->state = MCP_INITIALIZING;
    return 0;
}

/* The session is ready: every waiting request goes out. false when a
 * callback freed m. */
static bool mcp_session_ready(sb_mcp_t *m)
{
    m->state = MCP_READY;
    for (;;) {
        struct mcp_op *op = m->ops;
        while (op && !op->waiting)
            op = op->next;
        if (!op)
            return true;
        op->waiting = false;
        if (mcp_send(m, op) != 0 && !mcp_finish(m, op, NULL, NULL, false, "could not start the MCP request"))
            return false;
    }
}

/* Queues op (already linked in m->ops) behind the session, or sends it. 0 or a negative code. */
static int mcp_dispatch(sb_mcp_t *m, struct mcp_op *op)
{
    if (m->state == MCP_READY)
        return mcp_send(m, op);
    op->waiting = true;
    if (m->state == MCP_IDLE) {
        int rc = mcp_session_start(m);
        if (rc != 0) {
            op->waiting = false;
            return rc;
        }
    }
    return 0;
}

/* ---- transfers ----------------------------------------------------------------------------- */

static void mcp_on_header(const char *name, size_t name_len, const char *value, size_t value_len, void *arg)
{
    struct mcp_op *op = arg;
    if (!name) { /* a new response (a redirect's, a 1xx's): forget the last one's headers */
        op->ctype[0] = '\0';
        free(op->sid);
        op->sid = NULL;
        op->bad_sid = false;
        return;
    }
    if (name_len == 12 && strncasecmp(name, "content-type", 12) == 0) {
        size_t n = value_len < sizeof op->ctype - 1 ? value_len : sizeof op->ctype - 1;
        memcpy(op->ctype, value, n);
        op->ctype[n] = '\0';
    } else if (op->kind == MCP_INIT && name_len == 14 && strncasecmp(name, "mcp-session-id", 14) == 0) {
        free(op->sid);
        op->sid = NULL;
        op->bad_sid = value_len == 0 || value_len > 1024;
        for (size_t i = 0; i < value_len && !op->bad_sid; i++)
            op->bad_sid = (unsigned char)value[i] < 0x21 || (unsigned char)value[i] > 0x7e;
        if (!op->bad_sid)
            op->sid = sb_xstrndup(value, value_len);
    }
}

static int mcp_on_data(long status, const char *data, size_t len, void *arg)
{
    struct mcp_op *op = arg;
    op->bytes_in += len;
    op->status = status;
    if (status < 200 || status > 299 || op->kind == MCP_NOTIFY) {
        /* the status says it all: the body of an error (or of a 202) is not read */
        op->aborted = true;
        return -ECANCELED;
    }
    if (!op->reading) {
        sb_mcp_reader_init(&op->rd, op->ctype[0] ? op->ctype : NULL, op->id, op->m->max_bytes);
        op->reading = true;
    }
    int rc = sb_mcp_reader_feed(&op->rd, data, len);
    if (rc == 0)
        return 0;
    op->aborted = true; /* the answer is in (1), or the body is refused (< 0) */
    return -ECANCELED;
}

/* The transfer's outcome as an error string, or NULL when an answer (or a
 * 2xx for a notification) came. *expired: a 404 to a request that carried
 * a session id. */
static const char *mcp_transfer_error(struct mcp_op *op, const sb_upstream_result_t *res, char *buf, size_t len,
                                      bool *expired)
{
    *expired = false;
    bool whole = res->outcome == SB_UPSTREAM_OK || (res->outcome == SB_UPSTREAM_ABORTED && op->aborted);
    if (!whole) {
        switch (res->outcome) {
        case SB_UPSTREAM_TIMEOUT:
            return "MCP server timed out";
        case SB_UPSTREAM_CONNECT_FAILED:
            return "could not connect to the MCP server";
        case SB_UPSTREAM_BLOCKED:
            return "MCP server address refused (SSRF guard)";
        case SB_UPSTREAM_ABORTED:
            snprintf(buf, len, "MCP answer over %zu bytes", op->m->max_bytes);
            return buf;
        default:
            return "MCP transfer failed";
        }
    }
    long status = op->status ? op->status : res->status;
    if (status < 200 || status > 299) {
        *expired = status == 404 && op->sent_sid;
        snprintf(buf, len, "MCP server answered HTTP %ld", status);
        return buf;
    }
    return NULL;
}

/* The answer to a request that came back whole: its result or an error. */
static json_t *mcp_answer(struct mcp_op *op, char *err, size_t err_len)
{
    json_t *result = NULL;
    if (!op->reading) { /* no body byte came */
        sb_mcp_reader_init(&op->rd, op->ctype[0] ? op->ctype : NULL, op->id, op->m->max_bytes);
        op->reading = true;
    }
    int rc = sb_mcp_reader_finish(&op->rd, &result, err, err_len);
    if (rc == -E2BIG)
        snprintf(err, err_len, "MCP answer over %zu bytes", op->m->max_bytes);
    return rc == 0 ? result : NULL;
}

/* initialize or notifications/initialized ended. */
static void mcp_session_step(sb_mcp_t *m, struct mcp_op *op, const char *err, json_t *result)
{
    if (err) {
        mcp_session_fail(m, err);
        return;
    }
    if (op->kind == MCP_INIT) {
        const char *v = sb_mcp_known_version(json_string_value(json_object_get(result, "protocolVersion")));
        if (!v) {
            mcp_session_fail(m, "MCP server does not speak a known protocol version");
            return;
        }
        if (op->bad_sid) {
            mcp_session_fail(m, "MCP server sent an invalid session id");
            return;
        }
        m->version = v;
        free(m->sid);
        m->sid = op->sid;
        op->sid = NULL;
        op->kind = MCP_NOTIFY;
        m->state = MCP_NOTIFYING;
        if (mcp_send(m, op) != 0)
            mcp_session_fail(m, "could not start the MCP request");
        return;
    }
    mcp_op_free(op);
    m->session_op = NULL;
    mcp_session_ready(m);
}

/* A 404 to a request sent in a session: the server ended it. The first
 * request to see that for the current session drops it; the request goes
 * out again, once, in a new session. false when a callback freed m. */
static bool mcp_expired(sb_mcp_t *m, struct mcp_op *op)
{
    op->retried = true;
    if (m->state == MCP_READY && m->sid && strcmp(m->sid, op->sent_sid) == 0) {
        free(m->sid);
        m->sid = NULL;
        m->version = NULL;
        m->state = MCP_IDLE;
    }
    if (mcp_dispatch(m, op) != 0)
        return mcp_finish(m, op, NULL, NULL, false, "could not start the MCP request");
    return true;
}

static void mcp_on_done(const sb_upstream_result_t *res, void *arg)
{
    struct mcp_op *op = arg;
    sb_mcp_t *m = op->m;
    char buf[MCP_ERR_LEN];
    bool expired;
    op->xfer = NULL; /* freed by the upstream once this returns */
    const char *err = mcp_transfer_error(op, res, buf, sizeof buf, &expired);
    json_t *result = NULL;
    if (!err && op->kind != MCP_NOTIFY) {
        result = mcp_answer(op, buf, sizeof buf);
        if (!result)
            err = buf;
    }
    if (op->kind == MCP_INIT || op->kind == MCP_NOTIFY) {
        mcp_session_step(m, op, err, result);
        json_decref(result);
        return;
    }
    if (err && expired && !op->retried) {
        mcp_expired(m, op);
        return;
    }
    if (err) {
        mcp_finish(m, op, NULL, NULL, false, err);
        return;
    }
    if (op->kind == MCP_CALL) {
        json_t *output;
        bool is_error;
        sb_mcp_call_output(result, &output, &is_error);
        json_decref(result);
        mcp_finish(m, op, NULL, output, is_error, NULL);
        return;
    }
    char *cursor = NULL;
    int rc = sb_mcp_tools_page(result, op->tools, &cursor);
    json_decref(result);
    if (rc != 0) {
        mcp_finish(m, op, NULL, NULL, false, "malformed MCP answer (tools/list without tools)");
        return;
    }
    /* a next page, unless the bound is hit or the server repeats a cursor (a loop) */
    bool more = cursor && op->pages < SB_MCP_MAX_PAGES && json_array_size(op->tools) < SB_MCP_MAX_TOOLS &&
                !(op->cursor && strcmp(op->cursor, cursor) == 0);
    free(op->cursor);
    op->cursor = cursor;
    if (more) {
        op->pages++;
        if (mcp_send(m, op) != 0)
            mcp_finish(m, op, NULL, NULL, false, "could not start the MCP request");
        return;
    }
    json_t *tools = op->tools;
    op->tools = NULL;
    mcp_finish(m, op, tools, NULL, false, NULL);
}

/* ---- the API ------------------------------------------------------------------------------ */

static struct mcp_op *mcp_op_new(sb_mcp_t *m, enum mcp_kind kind, void *arg)
{
    struct mcp_op *op = sb_xcalloc(1, sizeof *op);
    op->m = m;
    op->kind = kind;
    op->arg = arg;
    op->next = m->ops;
    m->ops = op;
    return op;
}

/* Unlinks and frees an op that never started (no callback). */
static void mcp_op_drop(sb_mcp_t *m, struct mcp_op *op)
{
    for (struct mcp_op **p = &m->ops; *p; p = &(*p)->next)
        if (*p == op) {
            *p = op->next;
            break;
        }
    mcp_op_free(op);
}

int sb_mcp_list(sb_mcp_t *m, sb_mcp_list_cb cb, void *arg)
{
    if (!m || !cb)
        return -EINVAL;
    struct mcp_op *op = mcp_op_new(m, MCP_LIST, arg);
    op->list_cb = cb;
    op->tools = json_array();
    op->pages = 1;
    int rc = mcp_dispatch(m, op);
    if (rc != 0)
        mcp_op_drop(m, op);
    return rc;
}

int sb_mcp_call(sb_mcp_t *m, const char *name, const json_t *arguments, sb_mcp_call_cb cb, void *arg)
{
    if (!m || !name || !cb || (arguments && !json_is_object(arguments)))
        return -EINVAL;
    struct mcp_op *op = mcp_op_new(m, MCP_CALL, arg);
    op->call_cb = cb;
    op->name = sb_xstrdup(name);
    op->args = arguments ? json_deep_copy(arguments) : json_object();
    int rc = mcp_dispatch(m, op);
    if (rc != 0)
        mcp_op_drop(m, op);
    return rc;
}

static int mcp_ignore_data(long status, const char *data, size_t len, void *arg)
{
    (void)status, (void)data, (void)len, (void)arg;
    return 0;
}

static void mcp_ignore_done(const sb_upstream_result_t *res, void *arg)
{
    (void)res, (void)arg;
}

/* The session's DELETE, not waited for: its callbacks know nothing of m. */
static void mcp_delete_session(sb_mcp_t *m)
{
    const char *hdrs[MCP_MAX_HEADERS + 8];
    size_t n = 0;
    char *sid_line = sb_xasprintf("Mcp-Session-Id: %s", m->sid);
    char *ver_line = m->version ? sb_xasprintf("MCP-Protocol-Version: %s", m->version) : NULL;
    hdrs[n++] = sid_line;
    if (ver_line)
        hdrs[n++] = ver_line;
    for (size_t i = 0; i < m->n_hdrs && n < sizeof hdrs / sizeof hdrs[0]; i++)
        hdrs[n++] = m->hdrs[i];
    sb_fetch_req_t req = {
        .method = "DELETE",
        .url = m->url,
        .headers = hdrs,
        .n_headers = n,
        .max_bytes = 4096,
        .guard = m->guard,
    };
    sb_upstream_cbs_t cbs = {.on_data = mcp_ignore_data, .on_done = mcp_ignore_done};
    int64_t timeout = m->timeout_ms < MCP_DELETE_TIMEOUT_MS ? m->timeout_ms : MCP_DELETE_TIMEOUT_MS;
    sb_upstream_xfer_t *x = NULL;
    if (sb_upstream_fetch(m->up, &req, timeout, m->connect_timeout_ms, &cbs, NULL, &x) != 0)
        x = NULL; /* best effort: the server ends an idle session by itself */
    free(sid_line);
    free(ver_line);
}

void sb_mcp_destroy(sb_mcp_t **mp)
{
    sb_mcp_t *m = mp ? *mp : NULL;
    if (!m)
        return;
    *mp = NULL;
    if (m->alive)
        *m->alive = false;
    while (m->ops) {
        struct mcp_op *op = m->ops;
        m->ops = op->next;
        mcp_op_free(op);
    }
    mcp_op_free(m->session_op);
    if (m->sid && m->up)
        mcp_delete_session(m);
    for (size_t i = 0; i < m->n_hdrs; i++)
        free(m->hdrs[i]);
    free(m->hdrs);
    free(m->url);
    free(m->sid);
    free(m);
}

const char *sb_mcp_error_outcome(const char *error)
{
    if (!error)
        return "ok";
    if (strcmp(error, "MCP server timed out") == 0)
        return "timeout";
    if (strcmp(error, "MCP server address refused (SSRF guard)") == 0)
        return "blocked";
    return "error";
}

/*
 * test_mcp: the pure half of the worker's MCP client (worker/tools/
 * wtool_mcp.h): the answer to one JSON-RPC request read out of a JSON body,
 * a batch or an event stream (notifications, server requests and other
 * ids skipped; the JSON-RPC error as "MCP error <code>: <message>", cut
 * and cleaned; malformed, cut and oversized answers refused), the same
 * stream fed in pieces, tools/list pages and tools/call results as the
 * tool loop gets them, and the configuration checks of sb_mcp_new (header
 * names and values, reserved headers, the URL) that never echo a value.
 * Then the session (wtool_mcp.c) through the real upstream fetch against a
 * fake MCP server on 127.0.0.1: one initialize for requests made before it
 * is done, the session id and protocol version on every later request, the
 * custom headers and the bearer, pages, a new session once on a 404, the
 * initialize failures, the page bound, the timeout, the size cap, callbacks
 * never inside the API and none after the client is freed in one of them,
 * the DELETE at the end.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sb_alloc.h"
#include "sb_ssrf.h"
#include "sb_test.h"
#include "upstream.h"
#include "wtool_mcp.h"

/* Parses body (NUL-terminated) as content type ct for id; returns the rc
 * and leaves the result (or NULL) in *out and the error in err. */
static int parse(const char *body, const char *ct, int64_t id, json_t **out, char *err, size_t err_len)
{
    return sb_mcp_parse_answer(body, strlen(body), ct, id, 0, out, err, err_len);
}

static void test_json_answer(void)
{
    json_t *r;
    char err[300];
    int rc =
        parse("{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"tools\":[]}}", "application/json", 3, &r, err, sizeof err);
    CHECK_INT(rc, 0);
    CHECK(json_is_array(json_object_get(r, "tools")));
    CHECK_STR(err, "");
    json_decref(r);

    /* parameters on the type, no type at all, and a batch with a notification first */
    rc = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":1}}", "application/json; charset=utf-8", 1, &r, err,
               sizeof err);
    CHECK_INT(rc, 0);
    CHECK_INT(json_integer_value(json_object_get(r, "a")), 1);
    json_decref(r);
    rc = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":2}}", NULL, 1, &r, err, sizeof err);
    CHECK_INT(rc, 0);
    CHECK_INT(json_integer_value(json_object_get(r, "a")), 2);
    json_decref(r);
    rc = parse(
        "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}},"
        "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"x\":0}},{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"a\":3}}]",
        "application/json", 7, &r, err, sizeof err);
    CHECK_INT(rc, 0);
    CHECK_INT(json_integer_value(json_object_get(r, "a")), 3);
    json_decref(r);
}

static void test_sse_answer(void)
{
    json_t *r;
    char err[300];
    /* a priming event (empty data), a progress notification, a server request
     * with our id (a request, not a response), another id, then ours */
    const char *s =
        "id: 0\ndata: \n\n"
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n"
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n\n"
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"b\":0}}\n\n"
        "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"id\":5,\"result\":{\"b\":1}}\r\n\r\n"
        "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"b\":2}}\n\n";
    int rc = parse(s, "text/event-stream", 5, &r, err, sizeof err);
    CHECK_INT(rc, 0);
    CHECK_INT(json_integer_value(json_object_get(r, "b")), 1); /* the first answer counts */
    json_decref(r);

    /* other event names are not MCP messages; an unnamed event is */
    rc = parse("event: endpoint\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"c\":1}}\n\n"
               "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"c\":2}}\n\n",
               "text/event-stream; charset=utf-8", 1, &r, err, sizeof err);
    CHECK_INT(rc, 0);
    CHECK_INT(json_integer_value(json_object_get(r, "c")), 2);
    json_decref(r);

    /* the last event without its blank line still counts */
    rc = parse("data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}", "text/event-stream", 1, &r, err, sizeof err);
    CHECK_INT(rc, 0);
    json_decref(r);
}

/* The reader fed byte by byte says 1 as soon as the answer's event ends. */
static void test_incremental(void)
{
    const char *s = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"ok\":true}}\n\n"
                    "event: message\ndata: {broken";
    size_t end = strstr(s, "\n\n") - s + 2;
    sb_mcp_reader_t rd;
    sb_mcp_reader_init(&rd, "text/event-stream", 2, 0);
    size_t i;
    int rc = 0;
    for (i = 0; i < strlen(s) && rc == 0; i++)
        rc = sb_mcp_reader_feed(&rd, s + i, 1);
    CHECK_INT(rc, 1);
    CHECK_INT(i, end);
    json_t *r;
    char err[300];
    CHECK_INT(sb_mcp_reader_finish(&rd, &r, err, sizeof err), 0);
    CHECK(json_is_true(json_object_get(r, "ok")));
    json_decref(r);
    sb_mcp_reader_free(&rd);

    /* JSON bodies are only read whole */
    const char *j = "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}";
    sb_mcp_reader_init(&rd, "application/json", 2, 0);
    CHECK_INT(sb_mcp_reader_feed(&rd, j, 10), 0);
    CHECK_INT(sb_mcp_reader_feed(&rd, j + 10, strlen(j) - 10), 0);
    CHECK_INT(sb_mcp_reader_finish(&rd, &r, err, sizeof err), 0);
    CHECK(json_is_object(r));
    json_decref(r);
    sb_mcp_reader_free(&rd);
}

static void test_rpc_error(void)
{
    json_t *r = (json_t *)1;
    char err[300];
    int rc = parse("{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}",
                   "application/json", 4, &r, err, sizeof err);
    CHECK_INT(rc, -EPROTO);
    CHECK(r == NULL);
    CHECK_STR(err, "MCP error -32601: Method not found");

    /* an error with a null id (the server could not read the request), in a stream */
    rc = parse("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse "
               "error\"}}\n\n",
               "text/event-stream", 4, &r, err, sizeof err);
    CHECK_INT(rc, -EPROTO);
    CHECK_STR(err, "MCP error -32700: Parse error");

    /* a message with control characters and over the bound: one clean line, cut */
    char body[2000];
    char msg[800];
    memset(msg, 'x', sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    memcpy(msg, "line1\\nline2\\r\\u0007", 20);
    snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1,\"message\":\"%s\"}}", msg);
    rc = parse(body, "application/json", 1, &r, err, sizeof err);
    CHECK_INT(rc, -EPROTO);
    CHECK(strncmp(err, "MCP error 1: line1 line2  x", 27) == 0);
    CHECK_INT(strlen(err), strlen("MCP error 1: ") + SB_MCP_MESSAGE_MAX);
    CHECK(!strchr(err, '\n') && !strchr(err, '\r') && !strchr(err, '\a'));

    /* a cut in the middle of a UTF-8 character is no invalid text */
    char euro[SB_MCP_MESSAGE_MAX * 3 + 1] = "";
    for (int i = 0; i < SB_MCP_MESSAGE_MAX; i++)
        strncat(euro, "\xe2\x82\xac", sizeof euro - strlen(euro) - 1);
    snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":2,\"message\":\"%s\"}}", euro);
    rc = parse(body, "application/json", 1, &r, err, sizeof err);
    CHECK_INT(rc, -EPROTO);
    json_t *check = json_string(err);
    CHECK(check != NULL); /* jansson takes only valid UTF-8 */
    json_decref(check);

    /* no message, a code that is not an integer */
    rc = parse("{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\"}}", "application/json", 1, &r, err, sizeof err);
    CHECK_INT(rc, -EPROTO);
    CHECK_STR(err, "MCP error 0: (no message)");
}

static void test_malformed(void)
{
    json_t *r = (json_t *)1;
    char err[300];
    struct {
        const char *body, *ct, *err;
    } cases[] = {
        {"", "application/json", "MCP server sent no response"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}", "application/json", "malformed MCP answer (not JSON)"},
        {"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}", "application/json",
         "MCP answer without a response to the request"},
        {"{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":{}}", "application/json",
         "MCP answer without a response to the request"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[1]}", "application/json",
         "malformed MCP answer (a response without a result object or an error)"},
        {"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1}}", "application/json",
         "malformed MCP answer (a response without a result object or an error)"},
        {"{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}", "application/json",
         "MCP answer without a response to the request"},
        {"42", "application/json", "MCP answer without a response to the request"},
        {"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n", "text/event-stream",
         "MCP answer without a response to the request"},
        /* a stream cut in the middle of the answer's event */
        {"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"res", "text/event-stream",
         "malformed MCP answer (an event that is not JSON)"},
        {"", "text/event-stream", "MCP answer without a response to the request"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = parse(cases[i].body, cases[i].ct, 1, &r, err, sizeof err);
        CHECK_INT(rc, -EBADMSG);
        CHECK(r == NULL);
        CHECK_STR(err, cases[i].err);
    }
}

static void test_huge(void)
{
    size_t n = 3u * 1024u * 1024u;
    char *big = malloc(n + 100);
    json_t *r = (json_t *)1;
    char err[300];
    /* a JSON body over the bound */
    int k = snprintf(big, 100, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"");
    memset(big + k, 'a', n);
    memcpy(big + k + n, "\"}}", 4);
    CHECK_INT(sb_mcp_parse_answer(big, strlen(big), "application/json", 1, 1024 * 1024, &r, err, sizeof err), -E2BIG);
    CHECK(r == NULL);
    CHECK_STR(err, "MCP answer too large");
    /* under a larger bound, the same body reads */
    CHECK_INT(sb_mcp_parse_answer(big, strlen(big), "application/json", 1, 4 * 1024 * 1024, &r, err, sizeof err), 0);
    CHECK_INT(json_string_length(json_object_get(r, "t")), n);
    json_decref(r);
    /* an event over the bound */
    k = snprintf(big, 100, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"t\":\"");
    memset(big + k, 'a', n);
    memcpy(big + k + n, "\"}}\n\n", 6);
    CHECK_INT(sb_mcp_parse_answer(big, strlen(big), "text/event-stream", 1, 1024 * 1024, &r, err, sizeof err), -E2BIG);
    CHECK(r == NULL);
    free(big);
}

static void test_tools_page(void)
{
    json_error_t je;
    json_t *res = json_loads("{\"tools\":["
                             "{\"name\":\"add\",\"description\":\"Adds\",\"inputSchema\":{\"type\":\"object\","
                             "\"properties\":{\"a\":{\"type\":\"number\"}}},\"annotations\":{\"readOnlyHint\":true},"
                             "\"title\":\"Add\"},"
                             "{\"description\":\"nameless\"},{\"name\":\"\"},{\"name\":5},"
                             "{\"name\":\"bare\"}],\"nextCursor\":\"p2\"}",
                             0, &je);
    json_t *tools = json_array();
    char *cursor;
    CHECK_INT(sb_mcp_tools_page(res, tools, &cursor), 0);
    CHECK_STR(cursor, "p2");
    CHECK_INT(json_array_size(tools), 2);
    json_t *t0 = json_array_get(tools, 0), *t1 = json_array_get(tools, 1);
    CHECK_STR(json_string_value(json_object_get(t0, "name")), "add");
    CHECK_STR(json_string_value(json_object_get(t0, "description")), "Adds");
    CHECK(json_is_object(json_object_get(json_object_get(t0, "input_schema"), "properties")));
    CHECK(json_is_true(json_object_get(json_object_get(t0, "annotations"), "readOnlyHint")));
    CHECK(json_object_get(t0, "title") == NULL && json_object_get(t0, "inputSchema") == NULL);
    CHECK_STR(json_string_value(json_object_get(json_object_get(t1, "input_schema"), "type")), "object");
    CHECK(json_object_get(t1, "description") == NULL && json_object_get(t1, "annotations") == NULL);
    free(cursor);
    json_decref(res);

    /* the last page; and a result without tools */
    res = json_loads("{\"tools\":[{\"name\":\"c\"}]}", 0, &je);
    CHECK_INT(sb_mcp_tools_page(res, tools, &cursor), 0);
    CHECK(cursor == NULL);
    CHECK_INT(json_array_size(tools), 3);
    json_decref(res);
    res = json_loads("{\"tool\":[]}", 0, &je);
    CHECK_INT(sb_mcp_tools_page(res, tools, &cursor), -EBADMSG);
    json_decref(res);

    /* the bound on tools kept */
    res = json_loads("{\"tools\":[]}", 0, &je);
    json_t *list = json_object_get(res, "tools");
    for (int i = 0; i < SB_MCP_MAX_TOOLS + 10; i++)
        json_array_append_new(list, json_pack("{s:s}", "name", "t"));
    CHECK_INT(sb_mcp_tools_page(res, tools, &cursor), 0);
    CHECK_INT(json_array_size(tools), SB_MCP_MAX_TOOLS);
    json_decref(res);
    json_decref(tools);
}

static void test_call_output(void)
{
    json_error_t je;
    json_t *out;
    bool is_error;
    json_t *res = json_loads("{\"content\":[{\"type\":\"text\",\"text\":\"5\"},{\"type\":\"text\",\"text\":\"six\"},"
                             "{\"type\":\"image\",\"data\":\"AA==\",\"mimeType\":\"image/png\"}]}",
                             0, &je);
    sb_mcp_call_output(res, &out, &is_error);
    CHECK_STR(json_string_value(out), "5\nsix\n{\"type\":\"image\",\"data\":\"AA==\",\"mimeType\":\"image/png\"}");
    CHECK(!is_error);
    json_decref(out);
    json_decref(res);

    res = json_loads("{\"content\":[{\"type\":\"text\",\"text\":\"boom\"}],\"isError\":true}", 0, &je);
    sb_mcp_call_output(res, &out, &is_error);
    CHECK_STR(json_string_value(out), "boom");
    CHECK(is_error);
    json_decref(out);
    json_decref(res);

    res = json_loads("{\"structuredContent\":{\"n\":1},\"isError\":\"yes\"}", 0, &je);
    sb_mcp_call_output(res, &out, &is_error);
    CHECK_STR(json_string_value(out), "{\"n\":1}");
    CHECK(!is_error); /* only a true isError counts */
    json_decref(out);
    json_decref(res);

    res = json_loads("{\"content\":[]}", 0, &je);
    sb_mcp_call_output(res, &out, &is_error);
    CHECK_STR(json_string_value(out), "");
    json_decref(out);
    json_decref(res);
}

static void test_versions(void)
{
    CHECK_STR(sb_mcp_known_version("2025-06-18"), "2025-06-18");
    CHECK_STR(sb_mcp_known_version("2025-03-26"), "2025-03-26");
    CHECK_STR(sb_mcp_known_version("2024-11-05"), "2024-11-05");
    CHECK(sb_mcp_known_version("2024-10-07") == NULL);
    CHECK(sb_mcp_known_version("2025-06-18x") == NULL);
    CHECK(sb_mcp_known_version(NULL) == NULL);
    CHECK_STR(sb_mcp_error_outcome(NULL), "ok");
    CHECK_STR(sb_mcp_error_outcome("MCP server timed out"), "timeout");
    CHECK_STR(sb_mcp_error_outcome("MCP server address refused (SSRF guard)"), "blocked");
    CHECK_STR(sb_mcp_error_outcome("MCP server answered HTTP 500"), "error");
}

/* sb_mcp_new refuses bad configuration without quoting a value. */
static void test_config(void)
{
    char why[200];
    json_error_t je;
    struct {
        const char *url, *headers, *auth;
        bool ok;
    } cases[] = {
        {"http://127.0.0.1:1/mcp", NULL, NULL, true},
        {"https://mcp.example.com/mcp", "{\"X-Tenant\":\"t1\",\"X-Empty\":\"\"}", "tok", true},
        {"ftp://x/", NULL, NULL, false},
        {"javascript:1", NULL, NULL, false},
        {"http://a/\r\nX: y", NULL, NULL, false},
        {"https://a/", "{\"Bad Name\":\"SECRETVALUE\"}", NULL, false},
        {"https://a/", "{\"X-A\":\"SECRET\\r\\nX-B: 1\"}", NULL, false},
        {"https://a/", "{\"X-A\":\"SECRET\\u0000\"}", NULL, false},
        {"https://a/", "{\"X-A\":5}", NULL, false},
        {"https://a/", "{\"Content-Length\":\"SECRETVALUE\"}", NULL, false},
        {"https://a/", "{\"mcp-session-id\":\"SECRETVALUE\"}", NULL, false},
        {"https://a/", "{\"Host\":\"SECRETVALUE\"}", NULL, false},
        {"https://a/", "[]", NULL, false},
        {"https://a/", NULL, "SECRET\nVALUE", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *h = cases[i].headers ? json_loads(cases[i].headers, JSON_ALLOW_NUL, &je) : NULL;
        sb_mcp_cfg_t cfg = {.server_url = cases[i].url, .headers = h, .authorization = cases[i].auth};
        why[0] = '\0';
        sb_mcp_t *m = sb_mcp_new(NULL, &cfg, why, sizeof why);
        CHECK((m != NULL) == cases[i].ok);
        if (!cases[i].ok) {
            CHECK(why[0] != '\0');
            CHECK(!strstr(why, "SECRET"));
        }
        sb_mcp_destroy(&m);
        CHECK(m == NULL);
        json_decref(h);
    }
    /* misuse is refused without a callback */
    sb_mcp_cfg_t cfg = {.server_url = "http://127.0.0.1:1/mcp"};
    sb_mcp_t *m = sb_mcp_new(NULL, &cfg, why, sizeof why);
    CHECK_INT(sb_mcp_list(NULL, NULL, NULL), -EINVAL);
    json_t *arr = json_array();
    CHECK_INT(sb_mcp_call(m, "x", arr, NULL, NULL), -EINVAL);
    json_decref(arr);
    sb_mcp_destroy(&m);
}

/* ---- the session, against a fake MCP server on 127.0.0.1 --------------------------------- */

/*
 * The fake server (evhttp, on the test's loop) behaves by path:
 *   /json /sse     a session server answering JSON, or event streams with a
 *                  notification and another id's response before the answer;
 *                  tools/list in three pages (4 tools); tools/call echo ->
 *                  its text, slow -> after 300 ms, rpcerr -> a JSON-RPC error
 *   /nosession     the same without session ids
 *   /expire1       the first request after initialize gets 404 (expired)
 *   /always404     every request in a session gets 404
 *   /badversion    initialize answers protocol version 1999-01-01
 *   /badsid        initialize answers a session id with a space in it
 *   /notify500     notifications/initialized gets 500
 *   /loop          tools/list's nextCursor is always the same
 *   /endless       tools/list always has a next page
 */
static struct event_base *base;
static int srv_port;
static struct {
    int init, notify, list, call, del, other;
    int session;   /* the live session's number */
    bool expired1; /* /expire1 has answered its 404 */
    bool init_had_sid, init_had_version;
    char sid[64], version[32], tenant[32], auth[64], accept[64];
} st;

struct slow_reply {
    struct evhttp_request *req;
    struct event *ev;
    char *body;
};

static void srv_send(struct evhttp_request *req, int code, const char *ctype, const char *body)
{
    struct evbuffer *b = evbuffer_new();
    if (body)
        evbuffer_add(b, body, strlen(body));
    if (ctype)
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
    evhttp_send_reply(req, code, code < 300 ? "OK" : "Error", b);
    evbuffer_free(b);
}

static void srv_slow_fire(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what;
    struct slow_reply *s = arg;
    evhttp_connection_set_closecb(evhttp_request_get_connection(s->req), NULL, NULL);
    srv_send(s->req, 200, "application/json", s->body);
    event_free(s->ev);
    free(s->body);
    free(s);
}

/* The client went away first (a timeout): drop the pending reply. */
static void srv_slow_gone(struct evhttp_connection *c, void *arg)
{
    (void)c;
    struct slow_reply *s = arg;
    event_free(s->ev);
    free(s->body);
    free(s);
}

static void srv_copy_header(struct evhttp_request *req, const char *name, char *out, size_t len)
{
    const char *v = evhttp_find_header(evhttp_request_get_input_headers(req), name);
    snprintf(out, len, "%s", v ? v : "");
}

/* The answer to one request: as JSON, or in an event stream after noise. */
static void srv_answer(struct evhttp_request *req, bool sse, json_t *answer)
{
    char *a = json_dumps(answer, JSON_COMPACT);
    if (!sse) {
        srv_send(req, 200, "application/json", a);
    } else {
        char *body = sb_xasprintf("event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","
                                  "\"params\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\"id\":999999,\"result\":{}}\n\n"
                                  "event: message\ndata: %s\n\n",
                                  a);
        srv_send(req, 200, "text/event-stream", body);
        free(body);
    }
    free(a);
    json_decref(answer);
}

static void srv_on_request(struct evhttp_request *req, void *arg)
{
    (void)arg;
    char path[64];
    snprintf(path, sizeof path, "%s", evhttp_request_get_uri(req));
    if (evhttp_request_get_command(req) == EVHTTP_REQ_DELETE) {
        st.del++;
        srv_send(req, 200, NULL, NULL);
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t n = evbuffer_get_length(in);
    json_t *msg = json_loadb((const char *)evbuffer_pullup(in, (ssize_t)n), n, 0, NULL);
    const char *method = json_string_value(json_object_get(msg, "method"));
    json_t *id = json_object_get(msg, "id");
    const char *sid = evhttp_find_header(evhttp_request_get_input_headers(req), "Mcp-Session-Id");
    bool sse = strcmp(path, "/sse") == 0;
    srv_copy_header(req, "MCP-Protocol-Version", st.version, sizeof st.version);
    srv_copy_header(req, "X-Tenant", st.tenant, sizeof st.tenant);
    srv_copy_header(req, "Authorization", st.auth, sizeof st.auth);
    srv_copy_header(req, "Accept", st.accept, sizeof st.accept);
    snprintf(st.sid, sizeof st.sid, "%s", sid ? sid : "");
    if (!method) {
        st.other++;
        srv_send(req, 400, NULL, NULL);
    } else if (strcmp(method, "initialize") == 0) {
        st.init++;
        st.init_had_sid = sid != NULL;
        st.init_had_version = st.version[0] != '\0';
        char s[32];
        snprintf(s, sizeof s, "s%d", ++st.session);
        if (strcmp(path, "/badsid") == 0)
            evhttp_add_header(evhttp_request_get_output_headers(req), "Mcp-Session-Id", "a b");
        else if (strcmp(path, "/nosession") != 0)
            evhttp_add_header(evhttp_request_get_output_headers(req), "Mcp-Session-Id", s);
        const char *v = strcmp(path, "/badversion") == 0 ? "1999-01-01" : "2025-06-18";
        srv_answer(req, sse,
                   json_pack("{s:s,s:O,s:{s:s,s:{},s:{s:s,s:s}}}", "jsonrpc", "2.0", "id", id, "result",
                             "protocolVersion", v, "capabilities", "serverInfo", "name", "fake", "version", "1"));
    } else if (strcmp(method, "notifications/initialized") == 0) {
        st.notify++;
        srv_send(req, strcmp(path, "/notify500") == 0 ? 500 : 202, NULL, NULL);
    } else if (strcmp(path, "/nosession") != 0 &&
               (!sid || strtol(sid + 1, NULL, 10) != st.session || strcmp(path, "/always404") == 0 ||
                (strcmp(path, "/expire1") == 0 && !st.expired1))) {
        st.expired1 = true;
        if (strcmp(method, "tools/call") == 0)
            st.call++;
        srv_send(req, 404, "application/json",
                 "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32001,\"message\":\"gone\"}}");
    } else if (strcmp(method, "tools/list") == 0) {
        st.list++;
        const char *cursor = json_string_value(json_object_get(json_object_get(msg, "params"), "cursor"));
        json_t *res;
        if (strcmp(path, "/loop") == 0) {
            res = json_pack("{s:[{s:s}],s:s}", "tools", "name", "t", "nextCursor", "same");
        } else if (strcmp(path, "/endless") == 0) {
            char next[32];
            snprintf(next, sizeof next, "c%d", st.list);
            res = json_pack("{s:[{s:s}],s:s}", "tools", "name", "t", "nextCursor", next);
        } else if (!cursor) {
            res = json_pack("{s:[{s:s},{s:s}],s:s}", "tools", "name", "a", "name", "b", "nextCursor", "p2");
        } else if (strcmp(cursor, "p2") == 0) {
            res = json_pack("{s:[{s:s}],s:s}", "tools", "name", "c", "nextCursor", "p3");
        } else {
            res = json_pack("{s:[{s:s,s:s}]}", "tools", "name", "d", "description", "last");
        }
        srv_answer(req, sse, json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result", res));
    } else if (strcmp(method, "tools/call") == 0) {
        st.call++;
        json_t *params = json_object_get(msg, "params");
        const char *name = json_string_value(json_object_get(params, "name"));
        const char *text = json_string_value(json_object_get(json_object_get(params, "arguments"), "text"));
        json_t *res = json_pack("{s:s,s:O,s:{s:[{s:s,s:s}]}}", "jsonrpc", "2.0", "id", id, "result", "content", "type",
                                "text", "text", text ? text : "");
        if (name && strcmp(name, "rpcerr") == 0) {
            json_decref(res);
            srv_answer(req, sse,
                       json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id, "error", "code", -32602,
                                 "message", "bad\nargs"));
        } else if (name && strcmp(name, "slow") == 0) {
            struct slow_reply *s = sb_xcalloc(1, sizeof *s);
            s->req = req;
            s->body = json_dumps(res, JSON_COMPACT);
            json_decref(res);
            s->ev = evtimer_new(base, srv_slow_fire, s);
            struct timeval tv = {0, 300000};
            evtimer_add(s->ev, &tv);
            evhttp_connection_set_closecb(evhttp_request_get_connection(req), srv_slow_gone, s);
        } else {
            srv_answer(req, sse, res);
        }
    } else {
        st.other++;
        srv_send(req, 200, "application/json", "{}");
    }
    json_decref(msg);
}

static sb_upstream_t *up;
static sb_ssrf_t *guard;
static bool in_api; /* inside sb_mcp_list/sb_mcp_call */
static int pending; /* callbacks still expected */

/* What a callback got. */
struct got {
    int calls;
    bool inside; /* ran inside an API call */
    json_t *tools, *output;
    bool is_error;
    char error[300];
    size_t bytes_in;
    sb_mcp_t **destroy; /* frees this client in the callback */
    sb_mcp_t *relist;   /* lists again on this client in the callback, into *next */
    struct got *next;
    int init_seen; /* initialize requests the server had seen when the callback ran */
};

static void start_list(sb_mcp_t *m, struct got *g);

static void got_done(struct got *g)
{
    g->calls++;
    g->inside = g->inside || in_api;
    g->init_seen = st.init;
    if (g->destroy)
        sb_mcp_destroy(g->destroy);
    if (g->relist)
        start_list(g->relist, g->next);
    if (--pending == 0)
        event_base_loopbreak(base);
}

static void on_list(void *arg, json_t *tools, const char *error)
{
    struct got *g = arg;
    g->tools = tools;
    snprintf(g->error, sizeof g->error, "%s", error ? error : "");
    got_done(g);
}

static void on_call(void *arg, json_t *output, bool is_error, const char *error, size_t bytes_in)
{
    struct got *g = arg;
    g->output = output;
    g->is_error = is_error;
    snprintf(g->error, sizeof g->error, "%s", error ? error : "");
    g->bytes_in = bytes_in;
    got_done(g);
}

static void got_free(struct got *g)
{
    json_decref(g->tools);
    json_decref(g->output);
    memset(g, 0, sizeof *g);
}

static sb_mcp_t *mcp_at(const char *path, const json_t *headers, const char *auth, int64_t timeout_ms, size_t max)
{
    char url[128], why[200];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", srv_port, path);
    sb_mcp_cfg_t cfg = {.server_url = url,
                        .headers = headers,
                        .authorization = auth,
                        .guard = guard,
                        .timeout_ms = timeout_ms ? timeout_ms : 3000,
                        .connect_timeout_ms = 1000,
                        .max_bytes = max};
    sb_mcp_t *m = sb_mcp_new(up, &cfg, why, sizeof why);
    CHECK(m != NULL);
    return m;
}

static void start_list(sb_mcp_t *m, struct got *g)
{
    in_api = true;
    int rc = sb_mcp_list(m, on_list, g);
    in_api = false;
    CHECK_INT(rc, 0);
    if (rc == 0)
        pending++;
}

static void start_call(sb_mcp_t *m, const char *name, const char *text, struct got *g)
{
    json_t *args = json_pack("{s:s}", "text", text);
    in_api = true;
    int rc = sb_mcp_call(m, name, args, on_call, g);
    in_api = false;
    json_decref(args);
    CHECK_INT(rc, 0);
    if (rc == 0)
        pending++;
}

/* Runs the loop until every expected callback ran (or 5 s). */
static void run(void)
{
    struct timeval tv = {5, 0};
    event_base_loopexit(base, &tv);
    if (pending)
        event_base_dispatch(base);
    CHECK_INT(pending, 0);
    pending = 0;
}

/* Runs the loop for ms (transfers nobody waits for). */
static void run_for(int ms)
{
    struct timeval tv = {0, ms * 1000};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
}

static void test_session(const char *path)
{
    memset(&st, 0, sizeof st);
    json_t *h = json_pack("{s:s}", "X-Tenant", "t1");
    sb_mcp_t *m = mcp_at(path, h, "tok", 0, 0);
    json_decref(h);
    struct got l = {0}, c1 = {0}, c2 = {0};
    /* three requests before the session is up: one initialize */
    start_list(m, &l);
    start_call(m, "echo", "one", &c1);
    start_call(m, "echo", "h\xc3\xa9 \"two\"", &c2);
    CHECK_INT(l.calls + c1.calls + c2.calls, 0); /* never inside the call */
    run();
    CHECK(!l.inside && !c1.inside && !c2.inside);
    CHECK_STR(l.error, "");
    CHECK_INT(json_array_size(l.tools), 4);
    CHECK_STR(json_string_value(json_object_get(json_array_get(l.tools, 3), "name")), "d");
    CHECK_STR(json_string_value(json_object_get(json_array_get(l.tools, 3), "description")), "last");
    CHECK_STR(json_string_value(c1.output), "one");
    CHECK_STR(json_string_value(c2.output), "h\xc3\xa9 \"two\"");
    CHECK(c1.bytes_in > 0 && !c1.is_error);
    CHECK_INT(st.init, 1);
    CHECK_INT(st.notify, 1);
    CHECK_INT(st.list, 3);
    CHECK_INT(st.call, 2);
    CHECK(!st.init_had_sid && !st.init_had_version);
    CHECK_STR(st.sid, "s1");
    CHECK_STR(st.version, "2025-06-18");
    CHECK_STR(st.tenant, "t1");
    CHECK_STR(st.auth, "Bearer tok");
    CHECK_STR(st.accept, "application/json, text/event-stream");
    got_free(&l);
    got_free(&c1);
    got_free(&c2);

    /* the session is kept; a JSON-RPC error comes cleaned */
    start_call(m, "rpcerr", "", &c1);
    run();
    CHECK_STR(c1.error, "MCP error -32602: bad args");
    CHECK(c1.output == NULL);
    CHECK_INT(st.init, 1);
    got_free(&c1);

    /* the end: a DELETE of the session */
    sb_mcp_destroy(&m);
    run_for(100);
    CHECK_INT(st.del, 1);
}

static void test_session_expiry(void)
{
    /* a 404 in a session: a new one, and the request again, once */
    memset(&st, 0, sizeof st);
    sb_mcp_t *m = mcp_at("/expire1", NULL, NULL, 0, 0);
    struct got g = {0};
    start_call(m, "echo", "again", &g);
    run();
    CHECK_STR(g.error, "");
    CHECK_STR(json_string_value(g.output), "again");
    CHECK_INT(st.init, 2);
    CHECK_INT(st.call, 2);
    CHECK_STR(st.sid, "s2");
    got_free(&g);
    sb_mcp_destroy(&m);
    run_for(50);

    /* a server that always says 404: one retry, then the error */
    memset(&st, 0, sizeof st);
    m = mcp_at("/always404", NULL, NULL, 0, 0);
    start_call(m, "echo", "x", &g);
    run();
    CHECK_STR(g.error, "MCP server answered HTTP 404");
    CHECK_INT(st.init, 2);
    CHECK_INT(st.call, 2);
    got_free(&g);
    sb_mcp_destroy(&m);
    run_for(50);

    /* no session at all: no session header, no DELETE */
    memset(&st, 0, sizeof st);
    m = mcp_at("/nosession", NULL, NULL, 0, 0);
    start_call(m, "echo", "free", &g);
    run();
    CHECK_STR(json_string_value(g.output), "free");
    CHECK_STR(st.sid, "");
    CHECK_STR(st.version, "2025-06-18");
    got_free(&g);
    sb_mcp_destroy(&m);
    run_for(50);
    CHECK_INT(st.del, 0);
}

static void test_session_failures(void)
{
    struct {
        const char *path, *err;
        int notify;
    } cases[] = {
        {"/badversion", "MCP server does not speak a known protocol version", 0},
        {"/badsid", "MCP server sent an invalid session id", 0},
        {"/notify500", "MCP server answered HTTP 500", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memset(&st, 0, sizeof st);
        sb_mcp_t *m = mcp_at(cases[i].path, NULL, NULL, 0, 0);
        struct got a = {0}, b = {0}, c = {0};
        start_list(m, &a);
        start_call(m, "echo", "x", &b);
        /* a request made in a failure's callback waits for a new session of its own */
        a.relist = m;
        a.next = &c;
        run();
        CHECK_STR(a.error, cases[i].err);
        CHECK_STR(b.error, cases[i].err);
        CHECK_STR(c.error, cases[i].err);
        CHECK(!c.inside);
        CHECK_INT(c.init_seen, 2); /* failed by its own session, not by the first one's error */
        CHECK(a.tools == NULL && b.output == NULL);
        CHECK_INT(st.notify, 2 * cases[i].notify);
        CHECK_INT(st.list + st.call, 0);
        CHECK_INT(st.init, 2);
        got_free(&a);
        got_free(&b);
        got_free(&c);
        /* and so does the next request */
        start_list(m, &a);
        run();
        CHECK_STR(a.error, cases[i].err);
        CHECK_INT(st.init, 3);
        got_free(&a);
        sb_mcp_destroy(&m);
    }
    run_for(50);
    CHECK_INT(st.del, 0);
}

static void test_pages_bound(void)
{
    memset(&st, 0, sizeof st);
    sb_mcp_t *m = mcp_at("/loop", NULL, NULL, 0, 0);
    struct got g = {0};
    start_list(m, &g);
    run();
    CHECK_STR(g.error, "");
    CHECK_INT(st.list, 2); /* the repeated cursor ends it */
    CHECK_INT(json_array_size(g.tools), 2);
    got_free(&g);
    sb_mcp_destroy(&m);

    memset(&st, 0, sizeof st);
    m = mcp_at("/endless", NULL, NULL, 0, 0);
    start_list(m, &g);
    run();
    CHECK_STR(g.error, "");
    CHECK_INT(st.list, SB_MCP_MAX_PAGES);
    CHECK_INT(json_array_size(g.tools), SB_MCP_MAX_PAGES);
    got_free(&g);
    sb_mcp_destroy(&m);
    run_for(50);
}

static void test_limits(void)
{
    /* the per-request timeout; the session stays usable */
    memset(&st, 0, sizeof st);
    sb_mcp_t *m = mcp_at("/json", NULL, NULL, 150, 0);
    struct got a = {0}, b = {0};
    start_call(m, "slow", "late", &a);
    run();
    CHECK_STR(a.error, "MCP server timed out");
    CHECK_STR(sb_mcp_error_outcome(a.error), "timeout");
    got_free(&a);
    start_call(m, "echo", "fine", &a);
    run();
    CHECK_STR(json_string_value(a.output), "fine");
    CHECK_INT(st.init, 1);
    got_free(&a);
    sb_mcp_destroy(&m);

    /* an answer over max_bytes */
    m = mcp_at("/sse", NULL, NULL, 0, 512);
    char big[2048];
    memset(big, 'b', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    start_call(m, "echo", big, &a);
    run();
    CHECK_STR(a.error, "MCP answer over 512 bytes");
    got_free(&a);

    /* freed inside a callback, with another request in flight: that one never calls back */
    start_call(m, "echo", "first", &a);
    start_call(m, "slow", "never", &b);
    a.destroy = &m;
    pending--; /* b's callback must not come */
    run();
    run_for(400);
    CHECK_INT(a.calls, 1);
    CHECK_INT(b.calls, 0);
    CHECK(m == NULL);
    got_free(&a);
    got_free(&b);

    /* nobody listening */
    char why[200];
    sb_mcp_cfg_t cfg = {
        .server_url = "http://127.0.0.1:1/mcp", .guard = guard, .timeout_ms = 1000, .connect_timeout_ms = 500};
    m = sb_mcp_new(up, &cfg, why, sizeof why);
    start_list(m, &a);
    run();
    CHECK_STR(a.error, "could not connect to the MCP server");
    got_free(&a);
    sb_mcp_destroy(&m);

    /* a guard that does not allow the address: refused before anything starts */
    sb_ssrf_t *strict = sb_ssrf_new();
    sb_ssrf_allow_http(strict, true);
    cfg.guard = strict;
    m = sb_mcp_new(up, &cfg, why, sizeof why);
    CHECK(m == NULL);
    CHECK(why[0] != '\0');
    sb_ssrf_destroy(&strict);
}

static void test_sessions(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    base = event_base_new();
    struct evhttp *srv = evhttp_new(base);
    evhttp_set_allowed_methods(srv, EVHTTP_REQ_POST | EVHTTP_REQ_DELETE);
    evhttp_set_gencb(srv, srv_on_request, NULL);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(srv, "127.0.0.1", 0);
    CHECK(bs != NULL);
    struct sockaddr_in sin;
    socklen_t sl = sizeof sin;
    getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sin, &sl);
    srv_port = ntohs(sin.sin_port);
    up = sb_upstream_new(base);
    guard = sb_ssrf_new();
    CHECK_INT(sb_ssrf_allow_cidr(guard, "127.0.0.0/8"), 0);
    sb_ssrf_allow_http(guard, true);

    test_session("/json");
    test_session("/sse");
    test_session_expiry();
    test_session_failures();
    test_pages_bound();
    test_limits();

    sb_upstream_destroy(&up);
    sb_ssrf_destroy(&guard);
    evhttp_free(srv);
    event_base_free(base);
    curl_global_cleanup();
}

int main(void)
{
    test_json_answer();
    test_sse_answer();
    test_incremental();
    test_rpc_error();
    test_malformed();
    test_huge();
    test_tools_page();
    test_call_output();
    test_versions();
    test_config();
    test_sessions();
    return sb_test_finish("test_mcp");
}

/*
 * test_mcp: the pure half of the worker's MCP client (worker/tools/
 * wtool_mcp.h): the answer to one JSON-RPC request read out of a JSON body,
 * a batch or an event stream (notifications, server requests and other
 * ids skipped; the JSON-RPC error as "MCP error <code>: <message>", cut
 * and cleaned; malformed, cut and oversized answers refused), the same
 * stream fed in pieces, tools/list pages and tools/call results as the
 * tool loop gets them, and the configuration checks of sb_mcp_new (header
 * names and values, reserved headers, the URL) that never echo a value.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_test.h"
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
    return sb_test_finish("test_mcp");
}

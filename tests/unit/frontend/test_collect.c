/*
 * Unit tests for fe_collect's tool_log handling (docs/tools.md): a tool_log
 * event becomes one tool_calls row (kind and outcome from the contract's
 * lists only, strings cut, numbers clamped, the error redacted and cut to
 * FE_COLLECT_TOOL_ERROR_MAX characters), never output and never rendered
 * (fe_collect_renders); the rows survive a fallback, marked with the model
 * that made them, and name the response once it is stored; the request log
 * row carries them (fe_reqlog_row_json).
 */
#include <stdlib.h>
#include <string.h>

#include "fe_collect.h"
#include "fe_reqlog.h"
#include "sb_event.h"
#include "sb_test.h"

static json_t *tool_log(const char *kind, const char *outcome, const char *error)
{
    json_t *f = json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:i, s:i}", "kind", kind, "server", "deepwiki", "name",
                          "ask_question", "item_id", "mcp_1", "duration_ms", 42, "outcome", outcome, "bytes_in", 1000,
                          "bytes_out", 20);
    if (error)
        json_object_set_new(f, "error", json_string(error));
    return sb_event_tool_log(f);
}

static char *dump(const json_t *v)
{
    return v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
}

static void test_row(void)
{
    json_t *ev = tool_log("mcp_call", "timeout", "timed out after 30000 ms");
    json_t *row = fe_collect_tool_row(ev, 1714557600123);
    char *s = dump(row);
    CHECK_STR(s, "{\"bytes_in\":1000,\"bytes_out\":20,\"duration_ms\":42,\"error\":\"timed out after 30000 ms\","
                 "\"item_id\":\"mcp_1\",\"kind\":\"mcp_call\",\"name\":\"ask_question\",\"outcome\":\"timeout\","
                 "\"server\":\"deepwiki\",\"ts_ms\":1714557600123}");
    free(s);
    json_decref(row);
    json_decref(ev);

    /* Every kind and outcome of the contract; nothing else. */
    static const char *const kinds[] = {"mcp_list_tools", "mcp_call",         "web_search",  "open_page",
                                        "find_in_page",   "code_interpreter", "file_search", "image_generation"};
    static const char *const outcomes[] = {"ok", "error", "timeout", "denied", "blocked", "ok", "error", "ok"};
    for (size_t i = 0; i < 8; i++) {
        ev = tool_log(kinds[i], outcomes[i], NULL);
        row = fe_collect_tool_row(ev, 1);
        CHECK_STR(json_string_value(json_object_get(row, "kind")), kinds[i]);
        CHECK_STR(json_string_value(json_object_get(row, "outcome")), outcomes[i]);
        CHECK(json_object_get(row, "error") == NULL);
        json_decref(row);
        json_decref(ev);
    }
    ev = tool_log("computer_use", "ok", NULL); /* not a kind the gateway runs */
    CHECK(fe_collect_tool_row(ev, 1) == NULL);
    json_decref(ev);
    ev = tool_log("web_search", "OK", NULL);
    CHECK(fe_collect_tool_row(ev, 1) == NULL);
    json_decref(ev);
    ev = json_pack("{s:s, s:i, s:s}", "type", "tool_log", "kind", 7, "outcome", "ok");
    CHECK(fe_collect_tool_row(ev, 1) == NULL);
    json_decref(ev);

    /* Hostile values: wrong types dropped, numbers clamped, strings cut. */
    char longname[600];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    ev = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I, s:f, s:s, s:s}", "type", "tool_log", "kind", "web_search", "outcome",
                   "error", "server", longname, "name", 3, "duration_ms", (json_int_t)1 << 40, "bytes_in", -5.0,
                   "item_id", "", "error", "");
    row = fe_collect_tool_row(ev, 1);
    CHECK_INT((long long)json_string_length(json_object_get(row, "server")), 256);
    CHECK(json_object_get(row, "name") == NULL);
    CHECK(json_object_get(row, "item_id") == NULL); /* empty: absent */
    CHECK(json_object_get(row, "error") == NULL);
    CHECK_INT((long long)json_integer_value(json_object_get(row, "duration_ms")), 2147483647);
    CHECK_INT((long long)json_integer_value(json_object_get(row, "bytes_in")), 0);
    CHECK(json_object_get(row, "bytes_out") == NULL);
    json_decref(row);
    json_decref(ev);
}

static void test_error_text(void)
{
    /* Cut to 300 characters (not bytes), never inside a character. */
    char text[801];
    for (int i = 0; i < 400; i++)
        memcpy(text + 2 * i, "\xc3\xa9", 2); /* é, 2 bytes */
    text[800] = '\0';
    json_t *ev = tool_log("open_page", "error", text);
    json_t *row = fe_collect_tool_row(ev, 1);
    const char *e = json_string_value(json_object_get(row, "error"));
    CHECK(e != NULL);
    CHECK_INT((long long)(e ? strlen(e) : 0), 600);
    json_decref(row);
    json_decref(ev);

    /* Anything shaped like a credential is redacted (the worker never puts
     * one there; this is the second line). */
    ev = tool_log("mcp_list_tools", "error",
                  "401 from server: Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123456789 rejected");
    row = fe_collect_tool_row(ev, 1);
    e = json_string_value(json_object_get(row, "error"));
    CHECK(e && strstr(e, "abcdefghijklmnop") == NULL);
    CHECK(e && strstr(e, "[redacted]") != NULL);
    CHECK(e && strncmp(e, "401 from server", 15) == 0);
    json_decref(row);
    json_decref(ev);
    /* A key near the cut is redacted before the cut, so no half of it stays. */
    char tail[400];
    memset(tail, 'x', 280);
    tail[280] = ' ';
    snprintf(tail + 281, sizeof tail - 281, "sk-proj-%s", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789");
    ev = tool_log("mcp_call", "error", tail);
    row = fe_collect_tool_row(ev, 1);
    e = json_string_value(json_object_get(row, "error"));
    CHECK(e && strstr(e, "sk-proj") == NULL && strstr(e, "ABCDEF") == NULL);
    json_decref(row);
    json_decref(ev);
}

static void test_collect(void)
{
    fe_collect_t c;
    fe_collect_init(&c);
    json_t *ev = tool_log("mcp_list_tools", "ok", NULL);
    CHECK(!fe_collect_renders(ev));
    CHECK(!fe_collect_event(&c, ev));
    json_decref(ev);
    ev = tool_log("mcp_call", "error", "tool failed");
    CHECK(!fe_collect_event(&c, ev));
    json_decref(ev);
    ev = tool_log("bogus", "ok", NULL); /* no row */
    CHECK(!fe_collect_event(&c, ev));
    json_decref(ev);
    CHECK_INT((long long)json_array_size(c.tool_calls), 2);
    CHECK_INT((long long)json_array_size(c.items), 0); /* not output */
    json_t *text = sb_event_text_delta(0, 0, "hi", 2);
    CHECK(fe_collect_renders(text));
    json_decref(text);

    /* A fallback: the rows stay, named after the model that failed. */
    fe_collect_restart(&c, "m-first");
    CHECK(!c.done && !c.failed && c.upstream_us == -1);
    CHECK_INT((long long)json_array_size(c.tool_calls), 2);
    CHECK_STR(json_string_value(json_object_get(json_array_get(c.tool_calls, 1), "model")), "m-first");
    ev = tool_log("web_search", "ok", NULL);
    fe_collect_event(&c, ev);
    json_decref(ev);
    fe_collect_restart(&c, "m-second"); /* a second fallback does not rename the first's */
    CHECK_STR(json_string_value(json_object_get(json_array_get(c.tool_calls, 0), "model")), "m-first");
    CHECK_STR(json_string_value(json_object_get(json_array_get(c.tool_calls, 2), "model")), "m-second");

    /* Stored: every row names the response. */
    fe_collect_tool_calls_stored(&c, "resp_abc");
    CHECK_STR(json_string_value(json_object_get(json_array_get(c.tool_calls, 0), "response_id")), "resp_abc");
    CHECK_STR(json_string_value(json_object_get(json_array_get(c.tool_calls, 2), "response_id")), "resp_abc");

    /* The final event still ends the job; the rows are unchanged. */
    ev = sb_event_completed("completed", NULL, "m", 5);
    CHECK(fe_collect_event(&c, ev));
    json_decref(ev);
    CHECK_INT((long long)json_array_size(c.tool_calls), 3);

    /* The request log row carries a copy of them. */
    fe_reqlog_row_t row = {.request_id = "req_1",
                           .ts_ms = 1000,
                           .account_id = 3,
                           .model = "m",
                           .path = "/v1/responses",
                           .status = 200,
                           .upstream_ms = -1,
                           .tool_calls = c.tool_calls};
    json_t *j = fe_reqlog_row_json(&row, "fe1");
    json_t *calls = json_object_get(j, "tool_calls");
    CHECK_INT((long long)json_array_size(calls), 3);
    CHECK(calls != c.tool_calls);
    CHECK_STR(json_string_value(json_object_get(json_array_get(calls, 1), "kind")), "mcp_call");
    CHECK_STR(json_string_value(json_object_get(j, "frontend")), "fe1");
    json_decref(j);
    row.tool_calls = NULL;
    j = fe_reqlog_row_json(&row, "fe1");
    CHECK(json_object_get(j, "tool_calls") == NULL);
    json_decref(j);
    fe_collect_free(&c);

    /* At most FE_COLLECT_TOOL_CALLS_MAX rows per request. */
    fe_collect_init(&c);
    ev = tool_log("web_search", "ok", NULL);
    for (int i = 0; i < FE_COLLECT_TOOL_CALLS_MAX + 5; i++)
        fe_collect_event(&c, ev);
    json_decref(ev);
    CHECK_INT((long long)json_array_size(c.tool_calls), FE_COLLECT_TOOL_CALLS_MAX);
    fe_collect_free(&c);
}

int main(void)
{
    test_row();
    test_error_text();
    test_collect();
    return sb_test_finish("collect");
}

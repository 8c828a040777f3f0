/* test_stream_messages: the Messages stream renderer
 * (style/messages/fe_stream_messages.c) fed canonical events through its
 * narrow hooks: the exact events @anthropic-ai/sdk's MessageStream
 * accumulates (message_start, content blocks started strictly in order with
 * their deltas, message_delta with the stop reason and usage, message_stop),
 * deltas of a later item held until the one before is done, thinking blocks
 * signed with the same token as the final message, Anthropic's ping and its
 * error event; the built-in tools' blocks and citations. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_stream_harness.h"
#include "sb_alloc.h"
#include "sb_event.h"

#define MESSAGE_START                                                                                                  \
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\","      \
    "\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":"     \
    "{\"input_tokens\":0,\"output_tokens\":0,\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0}}}\n\n"

/* Text, then a tool call whose argument deltas arrive while the text is
 * still open: held until the text block stops, then streamed in order. */
static void test_text_then_call(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_messages, NULL, "msg_1", NULL);
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"m_0\","
                   "\"role\":\"assistant\",\"content\":[]}}");
    char *got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, MESSAGE_START);
    free(got);

    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"Hi\"}");
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\" there\"}");
    got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                           "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
                           "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                           "\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n"
                           "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                           "\"delta\":{\"type\":\"text_delta\",\"text\":\" there\"}}\n\n");
    free(got);

    /* The call's first arguments arrive before the text is done: held. */
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\","
                   "\"call_id\":\"toolu_1\",\"name\":\"get_weather\",\"arguments\":\"\"}}");
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":1,\"delta\":\"{\\\"city\\\":\"}");
    got = fe_sh_take(&h);
    CHECK_STR(got, "");
    free(got);

    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"m_0\","
                   "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi there\","
                   "\"annotations\":[]}]}}");
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":1,\"delta\":\"\\\"Paris\\\"}\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\","
                   "\"call_id\":\"toolu_1\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}");
    got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(
        got, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
             "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":"
             "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{}}}\n\n"
             "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":"
             "{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\":\"}}\n\n"
             "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":"
             "{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"Paris\\\"}\"}}\n\n"
             "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n");
    free(got);

    fe_sh_feed(&h, "{\"type\":\"usage\",\"input_tokens\":5,\"output_tokens\":7,\"reasoning_tokens\":0}");
    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"completed\"}"));
    json_t *rendered = fe_sh_complete(&h);
    got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
                           "\"tool_use\",\"stop_sequence\":null},\"usage\":{\"input_tokens\":5,\"output_tokens\":7,"
                           "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0}}\n\n"
                           "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    free(got);
    /* The blocks streamed are the final message's. */
    const json_t *content = json_object_get(rendered, "content");
    CHECK_INT(json_array_size(content), 2);
    CHECK_STR(json_string_value(json_object_get(json_array_get(content, 0), "text")), "Hi there");
    CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(content, 1), "input"), "city")),
              "Paris");
    json_decref(rendered);
    fe_sh_free(&h);
}

/* A message delivered whole gets its block and one delta at its end; a call
 * without arguments still gets an empty input_json_delta, as Anthropic
 * sends; a length stop is max_tokens. */
static void test_whole_items(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_messages, NULL, "msg_1", NULL);
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"role\":\"assistant\","
                   "\"content\":[{\"type\":\"output_text\",\"text\":\"A\"},{\"type\":\"output_text\",\"text\":"
                   "\"B\"}]}}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"function_call\",\"call_id\":"
                   "\"toolu_2\",\"name\":\"now\",\"arguments\":\"\"}}");
    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":"
                         "\"max_output_tokens\"}"));
    json_decref(fe_sh_complete(&h));
    char *got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(
        got, MESSAGE_START
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":"
        "{\"type\":\"text\",\"text\":\"\"}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":"
        "\"text_delta\",\"text\":\"A\"}}\n\n"
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":"
        "{\"type\":\"text\",\"text\":\"\"}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
        "\"text_delta\",\"text\":\"B\"}}\n\n"
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n"
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":"
        "{\"type\":\"tool_use\",\"id\":\"toolu_2\",\"name\":\"now\",\"input\":{}}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":"
        "\"input_json_delta\",\"partial_json\":\"\"}}\n\n"
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n"
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\","
        "\"stop_sequence\":null},\"usage\":{\"input_tokens\":0,\"output_tokens\":0,\"cache_creation_input_tokens\":0,"
        "\"cache_read_input_tokens\":0}}\n\n"
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    free(got);
    fe_sh_free(&h);

    fe_sh_init(&h, &fe_style_messages, NULL, "msg_1", NULL);
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"cut\"}");
    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":"
                         "\"max_output_tokens\"}"));
    json_decref(fe_sh_complete(&h));
    got = fe_sh_take(&h);
    /* An item that never finished is left out, as the final message leaves it. */
    CHECK(strstr(got, "\"stop_reason\":\"max_tokens\"") != NULL);
    CHECK(strstr(got, "content_block_stop") != NULL);
    free(got);
    fe_sh_free(&h);
}

/* Reasoning: a thinking block whose text streams as thinking_delta and whose
 * signature_delta is the token of the final message's block (sealed once);
 * display "omitted" sends no thinking text. No key: no thinking block. */
static void test_thinking(void)
{
    sb_seal_key_t key;
    if (sb_seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &key) != 0)
        abort();
    for (int omitted = 0; omitted < 2; omitted++) {
        fe_sh_t h;
        fe_sh_init(&h, &fe_style_messages, NULL, "msg_1", &key);
        if (omitted)
            json_object_set_new(h.parsed.style_state, "thinking_omitted", json_true());
        fe_sh_feed(&h, "{\"type\":\"reasoning_delta\",\"item_index\":0,\"delta\":\"hmm\"}");
        fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\","
                       "\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"hmm\"}]}}");
        fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"message\",\"content\":"
                       "[{\"type\":\"output_text\",\"text\":\"ok\"}]}}");
        CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"completed\"}"));
        json_t *rendered = fe_sh_complete(&h);
        char *got = fe_sh_take(&h);
        const char *p = got;
        char name[64];
        static const char *const order[] = {"message_start",       "content_block_start", "content_block_delta",
                                            "content_block_delta", "content_block_stop",  "content_block_start",
                                            "content_block_delta", "content_block_stop",  "message_delta",
                                            "message_stop"};
        size_t n = 0;
        const char *sig = NULL;
        json_t *data;
        while ((data = fe_sh_next_sse(&p, "\n\n", name, sizeof name))) {
            CHECK(n < 10 - (size_t)omitted);
            size_t i = omitted && n >= 2 ? n + 1 : n; /* omitted: no thinking_delta */
            CHECK_STR(name, i < 10 ? order[i] : "");
            CHECK_STR(json_string_value(json_object_get(data, "type")), name);
            const json_t *delta = json_object_get(data, "delta");
            if (i == 1)
                CHECK_STR(json_string_value(json_object_get(json_object_get(data, "content_block"), "type")),
                          "thinking");
            if (i == 2)
                CHECK_STR(json_string_value(json_object_get(delta, "thinking")), "hmm");
            if (i == 3) {
                CHECK_STR(json_string_value(json_object_get(delta, "type")), "signature_delta");
                sig = json_string_value(json_object_get(delta, "signature"));
                const json_t *block = json_array_get(json_object_get(rendered, "content"), 0);
                CHECK_STR(sig, json_string_value(json_object_get(block, "signature")));
                CHECK_STR(json_string_value(json_object_get(block, "thinking")), omitted ? "" : "hmm");
            }
            json_decref(data);
            n++;
        }
        CHECK_INT(n, 10 - omitted);
        CHECK(sig != NULL);
        json_decref(rendered);
        free(got);
        fe_sh_free(&h);
    }

    fe_sh_t h;
    fe_sh_init(&h, &fe_style_messages, NULL, "msg_1", NULL);
    fe_sh_feed(&h, "{\"type\":\"reasoning_delta\",\"item_index\":0,\"delta\":\"hmm\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\","
                   "\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"hmm\"}]}}");
    char *got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, MESSAGE_START);
    free(got);
    fe_sh_free(&h);
}

/* A failure after message_start: Anthropic's error event, its body carrying
 * the request id; keep-alives are Anthropic's ping, byte for byte. */
static void test_failure_and_ping(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_messages, NULL, "msg_1", NULL);
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"x\"}");
    free(fe_sh_take(&h));
    fe_error_t e;
    fe_error_set(&e, 529, SB_ERR_OVERLOADED, NULL, NULL, "Overloaded");
    fe_sh_fail(&h, &e);
    char *got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\","
                           "\"message\":\"Overloaded\"},\"request_id\":\"req_test\"}\n\n");
    free(got);
    fe_stream_messages.keepalive(&h.sc, h.out);
    got = fe_sh_take(&h);
    CHECK_STR(got, "event: ping\ndata: {\"type\": \"ping\"}\n\n");
    free(got);
    CHECK_STR(fe_stream_messages.content_type, "text/event-stream; charset=utf-8");
    fe_sh_free(&h);
}

/* What @anthropic-ai/sdk's MessageStream makes of the events in text: the
 * content blocks started, their text, citations and input deltas applied
 * (input parsed at the block's stop). New array. */
static json_t *accumulate(const char *text)
{
    json_t *content = json_array(), *ev;
    json_t *partial = json_object(); /* block index -> input JSON text so far */
    const char *p = text;
    char name[64], key[16];
    while ((ev = fe_sh_next_sse(&p, "\n\n", name, sizeof name))) {
        json_t *idx = json_object_get(ev, "index");
        json_t *block = json_array_get(content, (size_t)json_integer_value(idx));
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(idx));
        json_t *delta = json_object_get(ev, "delta");
        const char *dt = json_string_value(json_object_get(delta, "type"));
        if (!strcmp(name, "content_block_start")) {
            json_array_append_new(content, json_deep_copy(json_object_get(ev, "content_block")));
        } else if (!strcmp(name, "content_block_delta") && dt && !strcmp(dt, "text_delta")) {
            char *t = sb_xasprintf("%s%s", json_string_value(json_object_get(block, "text")),
                                   json_string_value(json_object_get(delta, "text")));
            json_object_set_new(block, "text", json_string(t));
            free(t);
        } else if (!strcmp(name, "content_block_delta") && dt && !strcmp(dt, "citations_delta")) {
            if (!json_object_get(block, "citations"))
                json_object_set_new(block, "citations", json_array());
            json_array_append(json_object_get(block, "citations"), json_object_get(delta, "citation"));
        } else if (!strcmp(name, "content_block_delta") && dt && !strcmp(dt, "input_json_delta")) {
            const char *was = json_string_value(json_object_get(partial, key));
            char *t = sb_xasprintf("%s%s", was ? was : "", json_string_value(json_object_get(delta, "partial_json")));
            json_object_set_new(partial, key, json_string(t));
            free(t);
        } else if (!strcmp(name, "content_block_stop") && json_object_get(partial, key)) {
            const char *js = json_string_value(json_object_get(partial, key));
            json_object_set_new(block, "input", *js ? json_loads(js, 0, NULL) : json_object());
        }
        json_decref(ev);
    }
    json_decref(partial);
    return content;
}

#define EV_START(i, block)                                                                                             \
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":" #i ",\"content_block\":" block    \
    "}\n\n"
#define EV_DELTA(i, delta)                                                                                             \
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":" #i ",\"delta\":" delta "}\n\n"
#define EV_STOP(i) "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":" #i "}\n\n"

#define CITE_EX                                                                                                        \
    "{\"type\":\"web_search_result_location\",\"url\":\"https://e.x/\",\"title\":\"Ex\",\"encrypted_index\":"          \
    "\"aHR0cHM6Ly9lLngv\",\"cited_text\":\"[Ex](https://e.x/)\"}"

/* Built-in tools the gateway ran: a listing shows nothing; a web search is
 * server_tool_use (once its query is known) + web_search_tool_result; a
 * message's citations go out as citations_delta, as annotation_added brings
 * them and the rest at its end; an MCP call's arguments stream into
 * mcp_tool_use, then mcp_tool_result. What the SDK accumulates is the
 * non-streamed message. */
static void test_builtin_tools(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_messages, NULL, "msg_1", NULL);
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"mcp_list_tools\",\"id\":\"mcpl_1\","
                   "\"server_label\":\"docs\",\"tools\":[]}}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"mcp_list_tools\",\"id\":\"mcpl_1\","
                   "\"server_label\":\"docs\",\"tools\":[]}}");
    fe_sh_feed(&h, "{\"type\":\"tool_log\",\"kind\":\"mcp_list_tools\",\"server\":\"docs\",\"outcome\":\"ok\"}");
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":1,\"item\":{\"type\":\"web_search_call\",\"id\":"
                   "\"ws_1\",\"status\":\"in_progress\"}}");
    fe_sh_feed(&h, "{\"type\":\"item_progress\",\"item_index\":1,\"status\":\"searching\"}");
    char *got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, MESSAGE_START);
    free(got);

    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_1\","
                   "\"status\":\"completed\",\"action\":{\"type\":\"search\",\"query\":\"hours\",\"sources\":[{"
                   "\"type\":\"url\",\"url\":\"https://e.x/\",\"title\":\"Ex\"}]},\"sb_output\":\"secret text\"}}");
    got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(
        got, EV_START(0, "{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{}}")
                 EV_DELTA(0, "{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"query\\\":\\\"hours\\\"}\"}")
                     EV_STOP(0) EV_START(1, "{\"type\":\"web_search_tool_result\",\"tool_use_id\":\"srvtoolu_1\","
                                            "\"content\":[{\"type\":\"web_search_result\",\"url\":\"https://e.x/\","
                                            "\"title\":\"Ex\",\"encrypted_content\":\"aHR0cHM6Ly9lLngv\",\"page_age\":"
                                            "null}]}") EV_STOP(1));
    free(got);

    /* The answer: its first citation comes once its text went out. */
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":2,\"item\":{\"type\":\"message\",\"id\":\"msg_a\","
                   "\"role\":\"assistant\",\"content\":[]}}");
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":2,\"content_index\":0,\"delta\":\"See [Ex](https://\"}");
    fe_sh_feed(&h, "{\"type\":\"annotation_added\",\"item_index\":2,\"content_index\":0,\"annotation_index\":0,"
                   "\"annotation\":{\"type\":\"url_citation\",\"start_index\":4,\"end_index\":22,\"url\":"
                   "\"https://e.x/\",\"title\":\"Ex\"}}");
    got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, EV_START(2, "{\"type\":\"text\",\"text\":\"\"}")
                               EV_DELTA(2, "{\"type\":\"text_delta\",\"text\":\"See [Ex](https://\"}"));
    free(got);
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":2,\"content_index\":0,\"delta\":\"e.x/) and "
                   "https://e.x/.\"}");
    got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, EV_DELTA(2, "{\"type\":\"text_delta\",\"text\":\"e.x/) and https://e.x/.\"}")
                               EV_DELTA(2, "{\"type\":\"citations_delta\",\"citation\":" CITE_EX "}"));
    free(got);
    /* An MCP call held while the message is open. */
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":3,\"item\":{\"type\":\"mcp_call\",\"id\":\"mcp_9\","
                   "\"server_label\":\"docs\",\"name\":\"lookup\",\"arguments\":\"\"}}");
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":3,\"delta\":\"{\\\"k\\\":\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":2,\"item\":{\"type\":\"message\",\"id\":\"msg_a\","
                   "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"See [Ex](https://e.x/) "
                   "and https://e.x/.\",\"annotations\":[{\"type\":\"url_citation\",\"start_index\":4,\"end_index\":"
                   "22,\"url\":\"https://e.x/\",\"title\":\"Ex\"},{\"type\":\"url_citation\",\"start_index\":27,"
                   "\"end_index\":39,\"url\":\"https://e.x/\",\"title\":\"Ex\"}]}]}}");
    got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(
        got, EV_DELTA(2, "{\"type\":\"citations_delta\",\"citation\":{\"type\":\"web_search_result_location\",\"url\":"
                         "\"https://e.x/\",\"title\":\"Ex\",\"encrypted_index\":\"aHR0cHM6Ly9lLngv\",\"cited_text\":"
                         "\"https://e.x/\"}}") EV_STOP(2)
                 EV_START(3, "{\"type\":\"mcp_tool_use\",\"id\":\"mcptoolu_9\",\"name\":\"lookup\",\"server_name\":"
                             "\"docs\",\"input\":{}}")
                     EV_DELTA(3, "{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"k\\\":\"}"));
    free(got);
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":3,\"delta\":\"1}\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":3,\"item\":{\"type\":\"mcp_call\",\"id\":\"mcp_9\","
                   "\"server_label\":\"docs\",\"name\":\"lookup\",\"arguments\":\"{\\\"k\\\":1}\",\"output\":"
                   "\"found\",\"error\":null,\"status\":\"completed\"}}");
    fe_sh_feed(&h, "{\"type\":\"usage\",\"input_tokens\":5,\"output_tokens\":7,\"reasoning_tokens\":0}");
    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"completed\"}"));
    json_t *rendered = fe_sh_complete(&h);
    got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(
        got,
        EV_DELTA(3, "{\"type\":\"input_json_delta\",\"partial_json\":\"1}\"}") EV_STOP(3) EV_START(
            4, "{\"type\":\"mcp_tool_result\",\"tool_use_id\":\"mcptoolu_9\",\"is_error\":false,\"content\":[{"
               "\"type\":\"text\",\"text\":\"found\"}]}")
            EV_STOP(
                4) "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\","
                   "\"stop_sequence\":null},\"usage\":{\"input_tokens\":5,\"output_tokens\":7,"
                   "\"cache_creation_input_tokens\":0,\"cache_read_input_tokens\":0,\"server_tool_use\":{"
                   "\"web_search_requests\":1}}}\n\n"
                   "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n");
    free(got);
    json_decref(rendered);

    /* Everything the stream wrote, accumulated, is the final message. */
    fe_sh_free(&h);
    /* With a key, the first result's encrypted_content seals the item once:
     * the stream's block and the final message's carry the same token. */
    sb_seal_key_t key;
    if (sb_seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &key) != 0)
        abort();
    fe_sh_init(&h, &fe_style_messages, NULL, "msg_1", &key);
    static const char *const events[] = {
        "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_5\",\"status\":"
        "\"completed\",\"action\":{\"type\":\"search\",\"query\":\"p\",\"sources\":[{\"type\":\"url\",\"url\":"
        "\"https://e.x/\"}]},\"sb_output\":\"text\"}}",
        "{\"type\":\"item_added\",\"item_index\":1,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_2\",\"status\":"
        "\"in_progress\",\"action\":{\"type\":\"search\",\"query\":\"q\"}}}",
        "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_2\",\"status\":"
        "\"failed\",\"action\":{\"type\":\"search\",\"query\":\"q\",\"sources\":[]}}}",
        "{\"type\":\"item_done\",\"item_index\":2,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_3\",\"status\":"
        "\"completed\",\"action\":{\"type\":\"open_page\",\"url\":\"https://e.x/\"}}}",
        "{\"type\":\"text_delta\",\"item_index\":3,\"content_index\":0,\"delta\":\"See [Ex](https://e.x/)\"}",
        "{\"type\":\"item_done\",\"item_index\":3,\"item\":{\"type\":\"message\",\"role\":\"assistant\",\"content\":"
        "[{\"type\":\"output_text\",\"text\":\"See [Ex](https://e.x/)\",\"annotations\":[{\"type\":"
        "\"url_citation\",\"start_index\":4,\"end_index\":22,\"url\":\"https://e.x/\",\"title\":\"Ex\"}]}]}}",
        "{\"type\":\"item_done\",\"item_index\":4,\"item\":{\"type\":\"mcp_call\",\"id\":\"mcp_4\",\"server_label\":"
        "\"docs\",\"name\":\"lookup\",\"arguments\":\"{}\",\"output\":null,\"error\":\"down\",\"status\":"
        "\"failed\"}}",
    };
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++)
        fe_sh_feed(&h, events[i]);
    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"completed\"}"));
    rendered = fe_sh_complete(&h);
    got = fe_sh_take(&h);
    json_t *joined = accumulate(got);
    CHECK_INT(json_array_size(joined), 7);
    CHECK(json_equal(joined, json_object_get(rendered, "content")));
    if (!json_equal(joined, json_object_get(rendered, "content"))) {
        char *a = json_dumps(joined, JSON_COMPACT), *b = json_dumps(json_object_get(rendered, "content"), JSON_COMPACT);
        fprintf(stderr, "  streamed: %s\n  final:    %s\n", a, b);
        free(a);
        free(b);
    }
    const char *token = json_string_value(json_object_get(
        json_array_get(json_object_get(json_array_get(json_object_get(rendered, "content"), 1), "content"), 0),
        "encrypted_content"));
    CHECK(token && strlen(token) > 40 && strstr(got, token) != NULL);
    CHECK(strstr(got, "sb_output") == NULL);
    /* The search's block went out at item_added, before its results. */
    CHECK(strstr(got, "\"srvtoolu_2\"") < strstr(got, "web_search_tool_result_error"));
    json_decref(joined);
    json_decref(rendered);
    free(got);
    fe_sh_free(&h);
}

int main(void)
{
    test_text_then_call();
    test_whole_items();
    test_thinking();
    test_failure_and_ping();
    test_builtin_tools();
    return sb_test_finish("stream_messages");
}

/* test_items: Responses input normalisation (the built-in tool items of
 * docs/tools.md too), ids, part walking and the call_id check (fe_items.c).
 * The route table is test_router.c's. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fe_items.h"
#include "sb_test.h"

static json_t *norm(const char *text, fe_error_t *err)
{
    json_t *in = json_loads(text, JSON_DECODE_ANY, NULL);
    memset(err, 0, sizeof *err);
    json_t *out = fe_items_normalize(in, "input", err);
    json_decref(in);
    return out;
}

static void test_normalize(void)
{
    fe_error_t err;
    json_t *items = norm("\"hello\"", &err);
    CHECK_STR(json_string_value(
                  json_object_get(json_array_get(json_object_get(json_array_get(items, 0), "content"), 0), "text")),
              "hello");
    json_decref(items);
    items = norm("[{\"role\":\"assistant\",\"content\":\"a\"},{\"type\":\"message\",\"role\":\"developer\","
                 "\"content\":[{\"type\":\"input_text\",\"text\":\"d\"},{\"type\":\"input_image\","
                 "\"image_url\":\"data:image/png;base64,AAAA\",\"detail\":\"low\"},{\"type\":\"input_file\","
                 "\"file_id\":\"file-1\"}]},{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\","
                 "\"arguments\":\"{}\"},{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"ok\"}]",
                 &err);
    CHECK_INT(json_array_size(items), 4);
    CHECK_STR(json_string_value(
                  json_object_get(json_array_get(json_object_get(json_array_get(items, 0), "content"), 0), "type")),
              "output_text");
    fe_items_assign_ids(items);
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it)
        CHECK(json_is_string(json_object_get(it, "id")));
    CHECK(strncmp(json_string_value(json_object_get(json_array_get(items, 2), "id")), "fc_", 3) == 0);
    CHECK_INT(fe_items_check_calls(items, &err), 0);
    json_decref(items);

    const char *bad[] = {
        "42",
        "[1]",
        "[{\"role\":\"robot\",\"content\":\"x\"}]",
        "[{\"role\":\"user\",\"content\":5}]",
        "[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":\"ftp://x\"}]}]",
        "[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":\"data:text/plain;base64,AA\"}]}]",
        "[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":{}}]}]",
        "[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\",\"file_data\":\"data:a/b;base64,AA\"}]}]",
        "[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\",\"file_url\":\"https://x\"}]}]",
        "[{\"type\":\"function_call\",\"name\":\"f\"}]",
        "[{\"type\":\"function_call_output\",\"call_id\":\"\",\"output\":\"x\"}]",
        "[{\"type\":\"item_reference\",\"id\":\"x\"}]",
        "[{\"type\":\"reasoning\",\"summary\":\"x\"}]"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        json_t *out = norm(bad[k], &err);
        CHECK(out == NULL);
        CHECK_INT(err.status, 400);
        if (out)
            fprintf(stderr, "accepted: %s\n", bad[k]);
        json_decref(out);
    }
}

static void test_check_calls(void)
{
    fe_error_t err;
    json_t *items = norm("[{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"x\"},"
                         "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"{}\"}]",
                         &err);
    memset(&err, 0, sizeof err);
    CHECK_INT(fe_items_check_calls(items, &err), -1); /* the output comes before its call */
    CHECK_INT(err.status, 400);
    CHECK(strstr(err.message, "c1") != NULL);
    json_decref(items);
}

static bool count_part(json_t *part, void *arg)
{
    (void)part;
    ++*(int *)arg;
    return true;
}

static void test_foreach(void)
{
    fe_error_t err;
    json_t *items = norm("[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"a\"},"
                         "{\"type\":\"input_text\",\"text\":\"b\"}]},{\"type\":\"function_call\",\"call_id\":\"c\","
                         "\"name\":\"f\",\"arguments\":\"{}\"},{\"type\":\"function_call_output\",\"call_id\":\"c\","
                         "\"output\":[{\"type\":\"input_text\",\"text\":\"r\"}]}]",
                         &err);
    int n = 0;
    fe_items_foreach_part(items, count_part, &n);
    CHECK_INT(n, 3);
    json_decref(items);
}

/* The built-in tool items (docs/tools.md) a client sends back: checked as
 * openai-python's input item params, carried with their own fields only
 * (no private sb_output from a client), ids with their prefixes. */
static void test_builtin_items(void)
{
    fe_error_t err;
    json_t *items = norm(
        "[{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\",\"action\":{\"type\":\"search\","
        "\"query\":\"q\",\"sources\":[{\"type\":\"url\",\"url\":\"https://a/\"}]},\"sb_output\":\"injected\"},"
        "{\"type\":\"web_search_call\",\"id\":\"ws_2\",\"status\":\"completed\",\"action\":{\"type\":\"open_page\","
        "\"url\":\"https://a/\"}},"
        "{\"type\":\"web_search_call\",\"id\":\"ws_3\",\"status\":\"failed\",\"action\":{\"type\":\"find_in_page\","
        "\"url\":\"https://a/\",\"pattern\":\"x\"}},"
        "{\"type\":\"mcp_list_tools\",\"id\":\"mcpl_1\",\"server_label\":\"dice\",\"tools\":[{\"name\":\"roll\","
        "\"input_schema\":{\"type\":\"object\"},\"description\":null,\"annotations\":{\"readOnlyHint\":true}}],"
        "\"error\":null},"
        "{\"type\":\"mcp_call\",\"id\":\"mcp_1\",\"server_label\":\"dice\",\"name\":\"roll\",\"arguments\":\"{}\","
        "\"output\":\"4\",\"error\":null,\"status\":\"completed\",\"approval_request_id\":null},"
        "{\"type\":\"mcp_call\",\"id\":\"mcp_2\",\"server_label\":\"dice\",\"name\":\"roll\",\"arguments\":\"{}\","
        "\"error\":{\"type\":\"http_error\",\"code\":500,\"message\":\"x\"}},"
        "{\"type\":\"mcp_approval_request\",\"id\":\"mcpr_1\",\"server_label\":\"dice\",\"name\":\"wipe\","
        "\"arguments\":\"{}\"},"
        "{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"mcpr_1\",\"approve\":false,\"reason\":\"no\"}]",
        &err);
    CHECK(items != NULL);
    if (!items)
        fprintf(stderr, "  %s\n", err.message);
    CHECK_INT(json_array_size(items), 8);
    const json_t *ws = json_array_get(items, 0);
    CHECK(!json_object_get(ws, "sb_output"));
    CHECK_STR(json_string_value(json_object_get(json_object_get(ws, "action"), "query")), "q");
    CHECK_INT(json_array_size(json_object_get(json_object_get(ws, "action"), "sources")), 1);
    CHECK_STR(json_string_value(json_object_get(json_array_get(items, 4), "output")), "4");
    CHECK(json_is_object(json_object_get(json_array_get(items, 5), "error")));
    CHECK_STR(json_string_value(json_object_get(json_array_get(items, 7), "reason")), "no");
    CHECK(json_is_false(json_object_get(json_array_get(items, 7), "approve")));
    fe_items_assign_ids(items);
    CHECK_STR(json_string_value(json_object_get(json_array_get(items, 4), "id")), "mcp_1"); /* kept */
    CHECK(strncmp(json_string_value(json_object_get(json_array_get(items, 7), "id")) ?: "", "mcpa_", 5) == 0);
    json_decref(items);

    /* Ids given where the item has none: each type's prefix. */
    json_t *bare = json_pack("[{s:s}, {s:s}, {s:s}, {s:s}, {s:s}]", "type", "web_search_call", "type", "mcp_list_tools",
                             "type", "mcp_call", "type", "mcp_approval_request", "type", "mcp_approval_response");
    fe_items_assign_ids(bare);
    const char *prefixes[] = {"ws_", "mcpl_", "mcp_", "mcpr_", "mcpa_"};
    for (size_t i = 0; i < 5; i++) {
        const char *id = json_string_value(json_object_get(json_array_get(bare, i), "id"));
        CHECK(id && strncmp(id, prefixes[i], strlen(prefixes[i])) == 0);
        CHECK(id && (i == 1 || strncmp(id, "mcpl_", 5) != 0));
    }
    json_decref(bare);

    struct {
        const char *item, *code, *param;
    } bad[] = {
        {"{\"type\":\"web_search_call\",\"status\":\"completed\",\"action\":{\"type\":\"search\"}}",
         "missing_required_parameter", "input[0].id"},
        {"{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"action\":{\"type\":\"search\"}}",
         "missing_required_parameter", "input[0].status"},
        {"{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"done\",\"action\":{\"type\":\"search\"}}",
         "invalid_value", "input[0].status"},
        {"{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\"}", "missing_required_parameter",
         "input[0].action"},
        {"{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\",\"action\":{\"type\":\"browse\"}}",
         "invalid_value", "input[0].action.type"},
        {"{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\",\"action\":{\"type\":"
         "\"find_in_page\",\"url\":\"https://a/\"}}",
         "missing_required_parameter", "input[0].action.pattern"},
        {"{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\",\"action\":{\"type\":\"search\","
         "\"sources\":[{\"type\":\"url\"}]}}",
         "missing_required_parameter", "input[0].action.sources[0].url"},
        {"{\"type\":\"mcp_list_tools\",\"id\":\"mcpl_1\",\"server_label\":\"s\"}", "missing_required_parameter",
         "input[0].tools"},
        {"{\"type\":\"mcp_list_tools\",\"id\":\"mcpl_1\",\"server_label\":\"s\",\"tools\":[{\"name\":\"t\"}]}",
         "missing_required_parameter", "input[0].tools[0].input_schema"},
        {"{\"type\":\"mcp_list_tools\",\"id\":\"mcpl_1\",\"server_label\":\"s\",\"tools\":[],\"error\":5}",
         "invalid_type", "input[0].error"},
        {"{\"type\":\"mcp_call\",\"id\":\"mcp_1\",\"server_label\":\"s\",\"name\":\"t\"}", "missing_required_parameter",
         "input[0].arguments"},
        {"{\"type\":\"mcp_call\",\"id\":\"mcp_1\",\"server_label\":\"s\",\"name\":\"t\",\"arguments\":{}}",
         "invalid_type", "input[0].arguments"},
        {"{\"type\":\"mcp_call\",\"id\":\"mcp_1\",\"server_label\":\"s\",\"name\":\"t\",\"arguments\":\"{}\","
         "\"status\":\"exploded\"}",
         "invalid_value", "input[0].status"},
        {"{\"type\":\"mcp_approval_request\",\"id\":\"mcpr_1\",\"name\":\"t\",\"arguments\":\"{}\"}",
         "missing_required_parameter", "input[0].server_label"},
        {"{\"type\":\"mcp_approval_response\",\"approve\":true}", "missing_required_parameter",
         "input[0].approval_request_id"},
        {"{\"type\":\"mcp_approval_response\",\"approval_request_id\":\"mcpr_1\",\"approve\":\"yes\"}", "invalid_type",
         "input[0].approve"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "[%s]", bad[i].item);
        json_t *out = norm(text, &err);
        CHECK(out == NULL);
        CHECK_INT(err.status, 400);
        CHECK_STR(err.code, bad[i].code);
        CHECK_STR(err.param, bad[i].param);
        if (out || strcmp(err.param, bad[i].param) != 0)
            fprintf(stderr, "  %s: %s\n", text, err.message);
        json_decref(out);
    }
}

int main(void)
{
    test_normalize();
    test_builtin_items();
    test_check_calls();
    test_foreach();
    return sb_test_finish("items");
}

/* test_style_messages: the Messages style (style/messages/fe_messages_*.c)
 * through its narrow hooks (fe_style.h), with no request or server: the
 * anthropic-version header, body -> canonical request, result -> message
 * object, and thinking blocks sealed and opened again. */
#include <jansson.h>
#include <stdlib.h>

#include "fe_style.h"
#include "sb_alloc.h"
#include "sb_test.h"

static sb_seal_key_t key;
static bool seal_ready; /* the gateway has a reasoning key */

/* What the hooks get: the HTTP input parse reads (its head holds the
 * anthropic-version header), the parsed request, the result render reads. */
typedef struct {
    sb_http_req_t *http;
    fe_style_in_t in;
    fe_parsed_t parsed;
    fe_collect_t result;
} req_t;

static void req_init(req_t *r, const char *version)
{
    memset(r, 0, sizeof *r);
    char head[256];
    int n = snprintf(head, sizeof head, "POST /v1/messages HTTP/1.1\r\nHost: t\r\n%s%s%s\r\n",
                     version ? "anthropic-version: " : "", version ? version : "", version ? "\r\n" : "");
    r->http = sb_http_req_parse_detached(head, (size_t)n);
    r->in.http = r->http;
    r->in.path = "/v1/messages";
    r->in.seal.key = seal_ready ? &key : NULL;
    r->in.seal.account_id = 7;
    fe_parsed_init(&r->parsed);
    fe_collect_init(&r->result);
}

static void req_free(req_t *r)
{
    sb_http_req_destroy(r->http);
    fe_parsed_free(&r->parsed);
    fe_collect_free(&r->result);
}

static json_t *render(req_t *r)
{
    fe_render_ctx_t ctx = {.parsed = &r->parsed, .start_ms = 1700000000000, .request_id = "req_1", .seal = r->in.seal};
    return fe_style_messages.render(&r->result, &ctx);
}

static json_t *render_count(req_t *r)
{
    fe_render_ctx_t ctx = {.parsed = &r->parsed, .start_ms = 1700000000000, .request_id = "req_1", .seal = r->in.seal};
    return fe_style_messages.render_count(&r->result, &ctx);
}

/* Parses text with a fresh request (kept in *r for inspection). */
static int parse(req_t *r, const char *version, const char *text, fe_error_t *err)
{
    req_init(r, version);
    json_t *body = json_loads(text, 0, NULL);
    if (!body) {
        fprintf(stderr, "bad test JSON: %s\n", text);
        return -2;
    }
    memset(err, 0, sizeof *err);
    int rc = fe_style_messages.parse(&r->in, body, &r->parsed, err);
    json_decref(body);
    return rc;
}

/* Expects a 400 whose message contains needle. */
static void parse_fails(const char *version, const char *text, const char *needle)
{
    req_t r;
    fe_error_t err;
    int rc = parse(&r, version, text, &err);
    CHECK_INT(rc, -1);
    CHECK_INT(err.status, 400);
    CHECK(strstr(err.message, needle) != NULL);
    if (rc != -1 || !strstr(err.message, needle))
        fprintf(stderr, "  body %s\n  message \"%s\" lacks \"%s\"\n", text, err.message, needle);
    req_free(&r);
}

#define MIN "\"model\":\"m\",\"max_tokens\":100,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]"

static void test_version(void)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r, "2023-06-01", "{" MIN "}", &err), 0);
    CHECK(!r.parsed.store);
    CHECK(strncmp(r.parsed.response_id, "msg_", 4) == 0 && strlen(r.parsed.response_id) == 28);
    CHECK_STR(r.parsed.model_id, "m");
    CHECK_INT(json_integer_value(json_object_get(r.parsed.canonical, "max_output_tokens")), 100);
    req_free(&r);
    CHECK_INT(parse(&r, "2026-10-21", "{" MIN "}", &err), 0);
    req_free(&r);
    parse_fails(NULL, "{" MIN "}", "anthropic-version: header is required");
    parse_fails("2023-01-01", "{" MIN "}", "is not a valid version");
    parse_fails("yesterday", "{" MIN "}", "is not a valid version");
    parse_fails("2023-13-01", "{" MIN "}", "is not a valid version");
}

static const json_t *item(const req_t *r, size_t i)
{
    return json_array_get(json_object_get(r->parsed.canonical, "input"), i);
}

static const char *item_str(const req_t *r, size_t i, const char *key)
{
    return json_string_value(json_object_get(item(r, i), key));
}

static const char *part_str(const req_t *r, size_t i, size_t j, const char *key)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(item(r, i), "content"), j), key));
}

static void test_parse(void)
{
    req_t r;
    fe_error_t err;
    const char *body =
        "{\"model\":\"emu\",\"max_tokens\":8192,"
        "\"system\":[{\"type\":\"text\",\"text\":\"Be terse.\"},{\"type\":\"text\",\"text\":\"Be kind.\","
        "\"cache_control\":{\"type\":\"ephemeral\"}}],"
        "\"messages\":["
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"look\"},"
        "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":\"image/png\",\"data\":\"AAAA\"}},"
        "{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"https://x.test/c.png\"}},"
        "{\"type\":\"document\",\"source\":{\"type\":\"base64\",\"media_type\":\"application/pdf\",\"data\":\"JVBE\"}},"
        "{\"type\":\"document\",\"title\":\"notes.txt\",\"source\":{\"type\":\"text\",\"media_type\":\"text/plain\","
        "\"data\":\"hello\"}}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"calling\"},"
        "{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"get_weather\",\"input\":{\"city\":\"Paris\"}}]},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"toolu_1\",\"is_error\":true,"
        "\"content\":[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}]},"
        "{\"type\":\"text\",\"text\":\"and?\"}]}],"
        "\"tools\":[{\"name\":\"get_weather\",\"description\":\"w\",\"input_schema\":{\"type\":\"object\","
        "\"properties\":{\"city\":{\"type\":\"string\"}}}}],"
        "\"tool_choice\":{\"type\":\"tool\",\"name\":\"get_weather\",\"disable_parallel_tool_use\":true},"
        "\"temperature\":0.5,\"top_p\":0.9,\"top_k\":40,\"stop_sequences\":[\"STOP\"],"
        "\"metadata\":{\"user_id\":\"u-1\"},\"service_tier\":\"auto\",\"stream\":false,"
        "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":5000},"
        "\"output_config\":{\"format\":{\"type\":\"json_schema\",\"schema\":{\"type\":\"object\","
        "\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"],\"additionalProperties\":false}}}}";
    CHECK_INT(parse(&r, "2023-06-01", body, &err), 0);
    if (err.status)
        fprintf(stderr, "  %s\n", err.message);
    const json_t *c = r.parsed.canonical;
    CHECK_STR(json_string_value(json_object_get(c, "instructions")), "Be terse.\n\nBe kind.");
    CHECK_INT(json_array_size(json_object_get(c, "input")), 5);
    /* user: text, two images, two files in one message */
    CHECK_STR(item_str(&r, 0, "role"), "user");
    CHECK_STR(part_str(&r, 0, 0, "type"), "input_text");
    CHECK_STR(part_str(&r, 0, 1, "image_url"), "data:image/png;base64,AAAA");
    CHECK_STR(part_str(&r, 0, 2, "image_url"), "https://x.test/c.png");
    CHECK_STR(part_str(&r, 0, 3, "file_data"), "data:application/pdf;base64,JVBE");
    CHECK_STR(part_str(&r, 0, 3, "filename"), "document.pdf");
    CHECK_STR(part_str(&r, 0, 4, "file_data"), "data:text/plain;base64,aGVsbG8=");
    CHECK_STR(part_str(&r, 0, 4, "filename"), "notes.txt");
    /* assistant: text, then the call */
    CHECK_STR(item_str(&r, 1, "role"), "assistant");
    CHECK_STR(part_str(&r, 1, 0, "type"), "output_text");
    CHECK_STR(item_str(&r, 2, "type"), "function_call");
    CHECK_STR(item_str(&r, 2, "call_id"), "toolu_1");
    CHECK_STR(item_str(&r, 2, "arguments"), "{\"city\":\"Paris\"}");
    /* user: the result, then text */
    CHECK_STR(item_str(&r, 3, "type"), "function_call_output");
    CHECK_STR(item_str(&r, 3, "output"), "Error: a\nb");
    CHECK_STR(item_str(&r, 4, "role"), "user");
    CHECK_STR(part_str(&r, 4, 0, "text"), "and?");
    const json_t *tool = json_array_get(json_object_get(c, "tools"), 0);
    CHECK_STR(json_string_value(json_object_get(tool, "type")), "function");
    CHECK_STR(json_string_value(json_object_get(tool, "name")), "get_weather");
    CHECK(json_is_false(json_object_get(tool, "strict")));
    CHECK_STR(json_string_value(json_object_get(json_object_get(c, "tool_choice"), "name")), "get_weather");
    CHECK(json_is_false(json_object_get(c, "parallel_tool_calls")));
    CHECK(json_real_value(json_object_get(c, "temperature")) == 0.5);
    CHECK_INT(json_integer_value(json_object_get(c, "top_k")), 40);
    CHECK_STR(json_string_value(json_array_get(json_object_get(c, "stop"), 0)), "STOP");
    CHECK_STR(json_string_value(json_object_get(c, "user")), "u-1");
    CHECK_STR(json_string_value(json_object_get(json_object_get(c, "reasoning"), "effort")), "medium");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(c, "reasoning"), "budget_tokens")), 5000);
    const json_t *fmt = json_object_get(json_object_get(c, "text"), "format");
    CHECK_STR(json_string_value(json_object_get(fmt, "type")), "json_schema");
    CHECK_STR(json_string_value(json_object_get(fmt, "name")), "output");
    CHECK(json_is_true(json_object_get(fmt, "strict")));
    req_free(&r);

    /* tool_choice any / auto / none, thinking budgets and adaptive */
    CHECK_INT(parse(&r, "2023-06-01",
                    "{" MIN ",\"tool_choice\":{\"type\":\"any\"},\"thinking\":{\"type\":"
                    "\"enabled\",\"budget_tokens\":1024},\"max_tokens\":2000}",
                    &err),
              0);
    CHECK_STR(json_string_value(json_object_get(r.parsed.canonical, "tool_choice")), "required");
    CHECK_STR(json_string_value(json_object_get(json_object_get(r.parsed.canonical, "reasoning"), "effort")), "low");
    req_free(&r);
    CHECK_INT(parse(&r, "2023-06-01",
                    "{" MIN ",\"tool_choice\":{\"type\":\"none\"},\"thinking\":{\"type\":"
                    "\"enabled\",\"budget_tokens\":20000},\"max_tokens\":30000}",
                    &err),
              0);
    CHECK_STR(json_string_value(json_object_get(r.parsed.canonical, "tool_choice")), "none");
    CHECK_STR(json_string_value(json_object_get(json_object_get(r.parsed.canonical, "reasoning"), "effort")), "high");
    req_free(&r);
    CHECK_INT(parse(&r, "2023-06-01", "{" MIN ",\"thinking\":{\"type\":\"disabled\"}}", &err), 0);
    CHECK(json_object_get(r.parsed.canonical, "reasoning") == NULL);
    CHECK(json_object_get(r.parsed.canonical, "instructions") == NULL);
    req_free(&r);
    CHECK_INT(parse(&r, "2023-06-01",
                    "{" MIN ",\"system\":\"sys\",\"thinking\":{\"type\":\"adaptive\"},"
                    "\"output_config\":{\"effort\":\"high\"}}",
                    &err),
              0);
    CHECK_STR(json_string_value(json_object_get(r.parsed.canonical, "instructions")), "sys");
    CHECK_STR(json_string_value(json_object_get(json_object_get(r.parsed.canonical, "reasoning"), "effort")), "high");
    req_free(&r);
    /* a tool_result with an image keeps parts */
    CHECK_INT(parse(&r, "2023-06-01",
                    "{\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":"
                    "\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{}}]},{\"role\":\"user\",\"content\":[{"
                    "\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":[{\"type\":\"text\",\"text\":\"x\"},"
                    "{\"type\":\"image\",\"source\":{\"type\":\"url\",\"url\":\"https://x.test/i.png\"}}]}]}]}",
                    &err),
              0);
    CHECK(json_is_array(json_object_get(item(&r, 1), "output")));
    CHECK_INT(json_array_size(json_object_get(item(&r, 1), "output")), 2);
    CHECK_STR(item_str(&r, 0, "arguments"), "{}");
    req_free(&r);
    /* a tool_reference (Claude Code's ToolSearch loading a deferred tool):
     * the tool is offered in full here, so the model is told it is loaded */
    CHECK_INT(
        parse(&r, "2023-06-01",
              "{\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":"
              "\"tool_use\",\"id\":\"t1\",\"name\":\"ToolSearch\",\"input\":{}}]},{\"role\":\"user\",\"content\":[{"
              "\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":[{\"type\":\"tool_reference\","
              "\"tool_name\":\"WebSearch\"}]}]}]}",
              &err),
        0);
    CHECK_STR(item_str(&r, 1, "output"), "Tool 'WebSearch' is loaded and can be called.");
    req_free(&r);
    parse_fails("2023-06-01",
                "{\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":"
                "\"tool_use\",\"id\":\"t1\",\"name\":\"f\",\"input\":{}}]},{\"role\":\"user\",\"content\":[{"
                "\"type\":\"tool_result\",\"tool_use_id\":\"t1\",\"content\":[{\"type\":\"tool_reference\"}]}]}]}",
                "must be text, image, document or tool_reference");
}

static void test_parse_errors(void)
{
    parse_fails("2023-06-01", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                "max_tokens: Field required");
    parse_fails("2023-06-01", "{\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                "model: Field required");
    parse_fails("2023-06-01", "{\"model\":\"m\",\"max_tokens\":5}", "messages: Field required");
    parse_fails("2023-06-01", "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[]}", "at least one message");
    parse_fails("2023-06-01", "{\"model\":\"m\",\"max_tokens\":0,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                "greater than or equal to 1");
    parse_fails("2023-06-01",
                "{\"model\":\"m\",\"max_tokens\":1.5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
                "valid integer");
    parse_fails("2023-06-01", "{\"model\":\"m\",\"max_tokens\":5,\"input\":\"x\"}",
                "input: Extra inputs are not permitted");
    parse_fails("2023-06-01", "{\"model\":\"m\",\"contents\":[]}", "contents: Extra inputs");
    parse_fails("2023-06-01", "{" MIN ",\"frobnicate\":1}", "frobnicate: Extra inputs are not permitted");
    parse_fails("2023-06-01", "{" MIN ",\"stream\":\"yes\"}", "stream: Input should be a valid boolean");
    parse_fails("2023-06-01", "{" MIN ",\"container\":{\"skills\":[{\"type\":\"anthropic\"}]}}",
                "unsupported parameter");
    parse_fails("2023-06-01", "{" MIN ",\"container\":5}", "container: Input should be a valid string");
    parse_fails("2023-06-01",
                "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"system\",\"content\":\"x\"}]}",
                "role 'user' or 'assistant' is required");
    parse_fails("2023-06-01", "{" MIN ",\"mcp_servers\":{}}", "mcp_servers: Input should be a valid list");
    parse_fails("2023-06-01", "{" MIN ",\"context_management\":{\"edits\":[{\"type\":\"x\"}]}}",
                "context_management.edits.0.type");
    { /* what Claude Code sends: accepted; a system message between turns is a system item */
        req_t r;
        fe_error_t err;
        CHECK_INT(parse(&r, "2023-06-01",
                        "{" MIN ",\"context_management\":{\"edits\":[{\"type\":\"clear_thinking_20251015\",\"keep\":"
                        "\"all\"}]},\"inference_geo\":\"us\",\"speed\":\"fast\",\"cache_control\":{\"type\":"
                        "\"ephemeral\"}}",
                        &err),
                  0);
        req_free(&r);
        CHECK_INT(parse(&r, "2023-06-01",
                        "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"x\"},"
                        "{\"role\":\"system\",\"content\":[{\"type\":\"text\",\"text\":\"env\"}]}]}",
                        &err),
                  0);
        json_t *last = json_array_get(json_object_get(r.parsed.canonical, "input"), 1);
        CHECK_STR(json_string_value(json_object_get(last, "role")), "system");
        req_free(&r);
    }
    parse_fails("2023-06-01", "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}",
                "messages.0.role");
    parse_fails("2023-06-01", "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"\"}]}",
                "non-empty content");
    parse_fails("2023-06-01", "{" MIN ",\"temperature\":1.5}", "temperature: Input should be less than or equal to 1");
    parse_fails("2023-06-01", "{" MIN ",\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"search\"}]}",
                "tools.0.name: Input should be 'web_search'");
    parse_fails("2023-06-01", "{" MIN ",\"tools\":[{\"type\":\"bash_20250124\",\"name\":\"bash\"}]}",
                "unsupported parameter");
    parse_fails("2023-06-01", "{" MIN ",\"tools\":[{\"name\":\"f\"}]}", "input_schema");
    parse_fails("2023-06-01",
                "{" MIN
                ",\"tools\":[{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}}],\"tool_choice\":{\"type\":"
                "\"tool\",\"name\":\"g\"}}",
                "not found");
    parse_fails("2023-06-01", "{" MIN ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":500}}", "1024");
    parse_fails("2023-06-01", "{" MIN ",\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2000}}",
                "`max_tokens` must be greater than `thinking.budget_tokens`");
    parse_fails("2023-06-01", "{" MIN ",\"metadata\":{\"session\":\"x\"}}", "metadata.session");
    parse_fails("2023-06-01", "{" MIN ",\"output_config\":{\"format\":{\"type\":\"json_schema\"}}}",
                "output_config.format.schema");
    parse_fails(
        "2023-06-01",
        "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"tool_use\","
        "\"id\":\"t\",\"name\":\"f\",\"input\":{}}]}]}",
        "only allowed in assistant messages");
    parse_fails("2023-06-01",
                "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image\","
                "\"source\":{\"type\":\"base64\",\"media_type\":\"image/tiff\",\"data\":\"AAAA\"}}]}]}",
                "media_type");
    parse_fails("2023-06-01",
                "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":"
                "\"thinking\",\"thinking\":\"t\",\"signature\":\"bogus\"}]}]}",
                "Invalid `signature` in `thinking` block");
}

/* A result of three items: reasoning, message, call. */
static void result_items(req_t *r, const char *args)
{
    json_array_append_new(r->result.items,
                          json_pack("{s:s, s:s, s:[], s:[{s:s, s:s}]}", "type", "reasoning", "id", "rs_1", "summary",
                                    "content", "type", "reasoning_text", "text", "Reasoning about it"));
    json_array_append_new(r->result.items,
                          json_pack("{s:s, s:s, s:s, s:[{s:s, s:s, s:[]}]}", "type", "message", "id", "msg_x", "role",
                                    "assistant", "content", "type", "output_text", "text", "Hello", "annotations"));
    if (args)
        json_array_append_new(r->result.items, json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "function_call", "id",
                                                         "fc_1", "call_id", "call_1", "name", "f", "arguments", args));
    snprintf(r->result.status, sizeof r->result.status, "completed");
    r->result.input_tokens = 11;
    r->result.output_tokens = 7;
}

static void test_render(void)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r, "2023-06-01", "{" MIN "}", &err), 0);
    result_items(&r, "{\"x\":1}");
    json_t *out = render(&r);
    CHECK_STR(json_string_value(json_object_get(out, "type")), "message");
    CHECK_STR(json_string_value(json_object_get(out, "role")), "assistant");
    CHECK_STR(json_string_value(json_object_get(out, "model")), "m");
    CHECK_STR(json_string_value(json_object_get(out, "id")), r.parsed.response_id);
    CHECK_STR(json_string_value(json_object_get(out, "stop_reason")), "tool_use");
    CHECK(json_is_null(json_object_get(out, "stop_sequence")));
    json_t *u = json_object_get(out, "usage");
    CHECK_INT(json_integer_value(json_object_get(u, "input_tokens")), 11);
    CHECK_INT(json_integer_value(json_object_get(u, "output_tokens")), 7);
    CHECK_INT(json_integer_value(json_object_get(u, "cache_read_input_tokens")), 0);
    json_t *content = json_object_get(out, "content");
    CHECK_INT(json_array_size(content), 3);
    json_t *th = json_array_get(content, 0);
    CHECK_STR(json_string_value(json_object_get(th, "type")), "thinking");
    CHECK_STR(json_string_value(json_object_get(th, "thinking")), "Reasoning about it");
    CHECK(json_string_length(json_object_get(th, "signature")) > 20);
    CHECK_STR(json_string_value(json_object_get(json_array_get(content, 1), "text")), "Hello");
    json_t *tu = json_array_get(content, 2);
    CHECK_STR(json_string_value(json_object_get(tu, "type")), "tool_use");
    CHECK_STR(json_string_value(json_object_get(tu, "id")), "call_1");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(tu, "input"), "x")), 1);

    /* The signature opens to the same reasoning item for the same account... */
    char *sig = sb_xasprintf("%s", json_string_value(json_object_get(th, "signature")));
    req_free(&r);
    json_decref(out);
    char *body = sb_xasprintf("{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"q\"},"
                              "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":\"Reasoning "
                              "about it\",\"signature\":\"%s\"},{\"type\":\"text\",\"text\":\"Hello\"}]},"
                              "{\"role\":\"user\",\"content\":\"next\"}]}",
                              sig);
    CHECK_INT(parse(&r, "2023-06-01", body, &err), 0);
    CHECK_STR(item_str(&r, 1, "type"), "reasoning");
    CHECK_STR(item_str(&r, 1, "id"), "rs_1");
    CHECK_STR(part_str(&r, 1, 0, "text"), "Reasoning about it");
    req_free(&r);
    free(body);
    /* ...but not when tampered with, nor for another account. */
    sig[strlen(sig) / 2] = sig[strlen(sig) / 2] == 'A' ? 'B' : 'A';
    body =
        sb_xasprintf("{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"assistant\",\"content\":[{\"type\":"
                     "\"thinking\",\"thinking\":\"x\",\"signature\":\"%s\"}]}]}",
                     sig);
    parse_fails("2023-06-01", body, "Invalid `signature`");
    free(body);
    free(sig);

    /* max_tokens, refusal, invalid arguments, no sealing key */
    CHECK_INT(parse(&r, "2023-06-01", "{" MIN "}", &err), 0);
    result_items(&r, NULL);
    snprintf(r.result.status, sizeof r.result.status, "incomplete");
    snprintf(r.result.incomplete_reason, sizeof r.result.incomplete_reason, "max_output_tokens");
    out = render(&r);
    CHECK_STR(json_string_value(json_object_get(out, "stop_reason")), "max_tokens");
    json_decref(out);
    req_free(&r);
    CHECK_INT(parse(&r, "2023-06-01", "{" MIN "}", &err), 0);
    json_array_append_new(r.result.items, json_pack("{s:s, s:s, s:[{s:s, s:s}]}", "type", "message", "role",
                                                    "assistant", "content", "type", "refusal", "refusal", "No."));
    snprintf(r.result.status, sizeof r.result.status, "completed");
    out = render(&r);
    CHECK_STR(json_string_value(json_object_get(out, "stop_reason")), "refusal");
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(out, "content"), 0), "text")), "No.");
    json_decref(out);
    req_free(&r);
    seal_ready = false;
    CHECK_INT(parse(&r, "2023-06-01", "{" MIN "}", &err), 0);
    result_items(&r, "not json");
    out = render(&r);
    content = json_object_get(out, "content");
    CHECK_INT(json_array_size(content), 2); /* no thinking block without a key */
    CHECK_STR(json_string_value(json_object_get(json_array_get(content, 0), "type")), "text");
    CHECK_INT(json_object_size(json_object_get(json_array_get(content, 1), "input")), 0);
    CHECK_STR(json_string_value(json_object_get(out, "stop_reason")), "tool_use");
    json_decref(out);
    req_free(&r);
    seal_ready = true;
}

/* count_tokens: the same parse without max_tokens and the output-only
 * fields; the reply is {"input_tokens": N}. */
static void test_count(void)
{
    req_t r;
    fe_error_t err;
    req_init(&r, "2023-06-01");
    r.in.count_tokens = true;
    json_t *body = json_loads("{\"model\":\"m\",\"system\":\"Be brief.\",\"messages\":[{\"role\":\"user\","
                              "\"content\":\"hi\"}],\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048},"
                              "\"tools\":[{\"name\":\"f\",\"input_schema\":{\"type\":\"object\"}}],"
                              "\"tool_choice\":{\"type\":\"auto\"}}",
                              0, NULL);
    memset(&err, 0, sizeof err);
    CHECK_INT(fe_style_messages.parse(&r.in, body, &r.parsed, &err), 0);
    json_decref(body);
    CHECK_STR(r.parsed.model_id, "m");
    CHECK(json_object_get(r.parsed.canonical, "max_output_tokens") == NULL);
    CHECK_STR(json_string_value(json_object_get(r.parsed.canonical, "instructions")), "Be brief.");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(r.parsed.canonical, "reasoning"), "budget_tokens")),
              2048);
    CHECK_INT(json_array_size(json_object_get(r.parsed.canonical, "tools")), 1);
    r.result.input_tokens = 42;
    json_t *out = render_count(&r);
    char *text = json_dumps(out, JSON_COMPACT);
    CHECK_STR(text, "{\"input_tokens\":42}");
    free(text);
    json_decref(out);
    req_free(&r);

    static const struct {
        const char *body, *needle;
    } bad[] = {
        {"{\"model\":\"m\",\"max_tokens\":10,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
         "max_tokens: Extra inputs are not permitted"},
        {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"stream\":false}",
         "stream: Extra inputs are not permitted"},
        {"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"temperature\":1}",
         "temperature: Extra inputs are not permitted"},
        {"{\"model\":\"m\"}", "messages: Field required"},
        {"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", "model: Field required"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        req_init(&r, "2023-06-01");
        r.in.count_tokens = true;
        body = json_loads(bad[i].body, 0, NULL);
        memset(&err, 0, sizeof err);
        CHECK_INT(fe_style_messages.parse(&r.in, body, &r.parsed, &err), -1);
        CHECK_INT(err.status, 400);
        CHECK(strstr(err.message, bad[i].needle) != NULL);
        if (!strstr(err.message, bad[i].needle))
            fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", err.message, bad[i].needle);
        json_decref(body);
        req_free(&r);
    }
}

/* ---- built-in tools (docs/tools.md, "Other styles") ---- */

/* got equals the JSON text expect (printed both when not). */
static void check_json(const json_t *got, const char *expect)
{
    json_error_t jerr;
    json_t *want = json_loads(expect, 0, &jerr);
    if (!want) {
        fprintf(stderr, "bad expected JSON: %s: %s\n", jerr.text, expect);
        abort();
    }
    bool same = json_equal((json_t *)got, want);
    CHECK(same);
    if (!same) {
        char *g = got ? json_dumps(got, JSON_COMPACT) : NULL;
        fprintf(stderr, "  got:      %s\n  expected: %s\n", g ? g : "(null)", expect);
        free(g);
    }
    json_decref(want);
}

/* Parses MIN plus extra top-level fields; the canonical tools then. */
static const json_t *parse_tools(req_t *r, const char *extra)
{
    fe_error_t err;
    char *body = sb_xasprintf("{" MIN ",%s}", extra);
    int rc = parse(r, "2023-06-01", body, &err);
    CHECK_INT(rc, 0);
    if (rc != 0)
        fprintf(stderr, "  body %s\n  error \"%s\"\n", body, err.message);
    free(body);
    return json_object_get(r->parsed.canonical, "tools");
}

/* Web search server tools -> the canonical web_search tool. */
static void test_server_tools(void)
{
    req_t r;
    const json_t *tools = parse_tools(
        &r, "\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"web_search\",\"max_uses\":3,\"allowed_domains\":"
            "[\"a.example\"],\"user_location\":{\"type\":\"approximate\",\"city\":\"Paris\",\"country\":\"FR\","
            "\"region\":null},\"cache_control\":{\"type\":\"ephemeral\"}},{\"name\":\"f\",\"input_schema\":{\"type\":"
            "\"object\"}}]");
    CHECK_INT(json_array_size(tools), 2);
    check_json(json_array_get(tools, 0), "{\"type\":\"web_search\",\"filters\":{\"allowed_domains\":[\"a.example\"]},"
                                         "\"user_location\":{\"type\":\"approximate\",\"city\":\"Paris\","
                                         "\"country\":\"FR\"}}");
    CHECK_STR(json_string_value(json_object_get(json_array_get(tools, 1), "type")), "function");
    CHECK_INT(json_integer_value(json_object_get(r.parsed.canonical, "max_tool_calls")), 3);
    req_free(&r);

    /* The later versions; blocked_domains as the canonical filter the
     * gateway's search applies; forcing the tool by name. */
    tools = parse_tools(&r, "\"tools\":[{\"type\":\"web_search_20260209\",\"name\":\"web_search\",\"blocked_domains\":"
                            "[\"b.example\"]}],\"tool_choice\":{\"type\":\"tool\",\"name\":\"web_search\"}");
    check_json(tools, "[{\"type\":\"web_search\",\"filters\":{\"blocked_domains\":[\"b.example\"]}}]");
    check_json(json_object_get(r.parsed.canonical, "tool_choice"), "{\"type\":\"web_search\"}");
    CHECK(!json_object_get(r.parsed.canonical, "max_tool_calls"));
    req_free(&r);
    tools = parse_tools(&r, "\"tools\":[{\"type\":\"web_search_20260318\",\"name\":\"web_search\","
                            "\"response_inclusion\":\"full\",\"defer_loading\":false}]");
    check_json(tools, "[{\"type\":\"web_search\"}]");
    req_free(&r);

    parse_fails("2023-06-01",
                "{" MIN
                ",\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"web_search\",\"allowed_domains\":[\"a\"],"
                "\"blocked_domains\":[\"b\"]}]}",
                "Cannot specify both allowed_domains and blocked_domains");
    parse_fails("2023-06-01",
                "{" MIN ",\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"web_search\",\"max_uses\":0}]}",
                "tools.0.max_uses: Input should be greater than 0");
    parse_fails("2023-06-01",
                "{" MIN ",\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"web_search\",\"depth\":2}]}",
                "tools.0.depth: Extra inputs are not permitted");
    parse_fails("2023-06-01",
                "{" MIN
                ",\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"web_search\",\"user_location\":{\"type\":"
                "\"exact\"}}]}",
                "tools.0.user_location");
    parse_fails("2023-06-01",
                "{" MIN ",\"tools\":[{\"type\":\"web_search_20250305\",\"name\":\"web_search\"},{\"type\":"
                "\"web_search_20260209\",\"name\":\"web_search\"}]}",
                "Tool names must be unique");
    parse_fails("2023-06-01", "{" MIN ",\"tools\":[{\"type\":\"web_fetch_20250910\",\"name\":\"web_fetch\"}]}",
                "unsupported parameter");
}

/* mcp_servers, with mcp-client-2025-04-04's tool_configuration or
 * mcp-client-2025-11-20's mcp_toolset entries -> canonical mcp tools. */
static void test_mcp_servers(void)
{
    req_t r;
    const json_t *tools = parse_tools(
        &r, "\"mcp_servers\":[{\"type\":\"url\",\"url\":\"https://mcp.example/mcp\",\"name\":\"docs\","
            "\"authorization_token\":\"tok\",\"tool_configuration\":{\"enabled\":true,\"allowed_tools\":[\"search\"]}},"
            "{\"type\":\"url\",\"url\":\"https://off.example\",\"name\":\"off\",\"tool_configuration\":{\"enabled\":"
            "false}},{\"type\":\"url\",\"url\":\"https://all.example\",\"name\":\"all\"}]");
    check_json(tools, "[{\"type\":\"mcp\",\"server_label\":\"docs\",\"server_url\":\"https://mcp.example/mcp\","
                      "\"authorization\":\"tok\",\"allowed_tools\":[\"search\"],\"require_approval\":\"never\"},"
                      "{\"type\":\"mcp\",\"server_label\":\"all\",\"server_url\":\"https://all.example\","
                      "\"require_approval\":\"never\"}]");
    req_free(&r);

    /* Toolsets: an allowlist, all tools, nothing enabled (the server is not
     * offered). */
    tools = parse_tools(
        &r, "\"mcp_servers\":[{\"type\":\"url\",\"url\":\"https://a.example\",\"name\":\"a\"},{\"type\":\"url\","
            "\"url\":\"https://b.example\",\"name\":\"b\"},{\"type\":\"url\",\"url\":\"https://c.example\",\"name\":"
            "\"c\"}],\"tools\":[{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"a\",\"default_config\":{\"enabled\":"
            "false},\"configs\":{\"x\":{\"enabled\":true},\"y\":{\"enabled\":false}}},{\"type\":\"mcp_toolset\","
            "\"mcp_server_name\":\"b\",\"configs\":{\"z\":{\"defer_loading\":true}}},{\"type\":\"mcp_toolset\","
            "\"mcp_server_name\":\"c\",\"default_config\":{\"enabled\":false}}]");
    check_json(tools, "[{\"type\":\"mcp\",\"server_label\":\"a\",\"server_url\":\"https://a.example\","
                      "\"allowed_tools\":[\"x\"],\"require_approval\":\"never\"},{\"type\":\"mcp\",\"server_label\":"
                      "\"b\",\"server_url\":\"https://b.example\",\"require_approval\":\"never\"}]");
    req_free(&r);

#define SRV "\"mcp_servers\":[{\"type\":\"url\",\"url\":\"https://a.example\",\"name\":\"a\"}]"
    parse_fails("2023-06-01",
                "{" MIN "," SRV
                ",\"tools\":[{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"a\",\"configs\":{\"x\":{\"enabled\":"
                "false}}}]}",
                "disabling single tools of an MCP server is not supported");
    parse_fails("2023-06-01", "{" MIN "," SRV ",\"tools\":[{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"b\"}]}",
                "references MCP server 'b', which is not in mcp_servers");
    parse_fails("2023-06-01",
                "{" MIN "," SRV
                ",\"tools\":[{\"type\":\"mcp_toolset\",\"mcp_server_name\":\"a\"},{\"type\":\"mcp_toolset\","
                "\"mcp_server_name\":\"a\"}]}",
                "referenced by more than one mcp_toolset");
    parse_fails("2023-06-01",
                "{" MIN
                ",\"mcp_servers\":[{\"type\":\"url\",\"url\":\"https://a.example\",\"name\":\"a\"},{\"type\":\"url\","
                "\"url\":\"https://b.example\",\"name\":\"b\"}],\"tools\":[{\"type\":\"mcp_toolset\","
                "\"mcp_server_name\":\"a\"}]}",
                "MCP server 'b' must be referenced by exactly one mcp_toolset");
    parse_fails("2023-06-01",
                "{" MIN
                ",\"mcp_servers\":[{\"type\":\"url\",\"url\":\"https://a.example\",\"name\":\"a\"},{\"type\":\"url\","
                "\"url\":\"https://b.example\",\"name\":\"a\"}]}",
                "MCP server names must be unique");
    parse_fails("2023-06-01", "{" MIN ",\"mcp_servers\":[{\"type\":\"stdio\",\"url\":\"x\",\"name\":\"a\"}]}",
                "mcp_servers.0.type: Input should be 'url'");
    parse_fails("2023-06-01", "{" MIN ",\"mcp_servers\":[{\"type\":\"url\",\"name\":\"a\"}]}",
                "mcp_servers.0.url: Field required");
    parse_fails("2023-06-01",
                "{" MIN ",\"mcp_servers\":[{\"type\":\"url\",\"url\":\"https://a.example\",\"name\":\"a\","
                "\"tool_configuration\":{\"allowed_tools\":\"x\"}}]}",
                "mcp_servers.0.tool_configuration.allowed_tools");
#undef SRV
}

#define TURN_Q "{\"role\":\"user\",\"content\":\"q\"}"

/* Server tool blocks an assistant turn sends back -> the built-in items, in
 * order. */
static void test_server_history(void)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r, "2023-06-01",
                    "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[" TURN_Q ",{\"role\":\"assistant\",\"content\":["
                    "{\"type\":\"text\",\"text\":\"Let me look.\"},"
                    "{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_1\",\"name\":\"web_search\",\"input\":{\"query\":"
                    "\"weather\"},\"caller\":{\"type\":\"direct\"}},"
                    "{\"type\":\"web_search_tool_result\",\"tool_use_id\":\"srvtoolu_1\",\"content\":[{\"type\":"
                    "\"web_search_result\",\"url\":\"https://w.example/a\",\"title\":\"A\",\"encrypted_content\":"
                    "\"opaque\",\"page_age\":null},{\"type\":\"web_search_result\",\"url\":\"https://w.example/b\","
                    "\"title\":\"B\",\"encrypted_content\":\"x\"}]},"
                    "{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_2\",\"name\":\"web_search\",\"input\":{\"query\":"
                    "\"again\"}},"
                    "{\"type\":\"web_search_tool_result\",\"tool_use_id\":\"srvtoolu_2\",\"content\":{\"type\":"
                    "\"web_search_tool_result_error\",\"error_code\":\"max_uses_exceeded\"}},"
                    "{\"type\":\"text\",\"text\":\"Sunny.\",\"citations\":[{\"type\":\"web_search_result_location\","
                    "\"url\":\"https://w.example/a\",\"title\":\"A\",\"encrypted_index\":\"e\",\"cited_text\":\"s\"}]},"
                    "{\"type\":\"mcp_tool_use\",\"id\":\"mcptoolu_7\",\"name\":\"lookup\",\"server_name\":\"docs\","
                    "\"input\":{\"k\":1}},"
                    "{\"type\":\"mcp_tool_result\",\"tool_use_id\":\"mcptoolu_7\",\"is_error\":false,\"content\":[{"
                    "\"type\":\"text\",\"text\":\"one\"},{\"type\":\"text\",\"text\":\"two\"}]},"
                    "{\"type\":\"mcp_tool_use\",\"id\":\"mcptoolu_8\",\"name\":\"lookup\",\"server_name\":\"docs\","
                    "\"input\":{}},"
                    "{\"type\":\"mcp_tool_result\",\"tool_use_id\":\"mcptoolu_8\",\"is_error\":true,\"content\":"
                    "\"boom\"}]}," TURN_Q "]}",
                    &err),
              0);
    check_json(json_object_get(r.parsed.canonical, "input"),
               "[{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"q\"}]},"
               "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":"
               "\"Let me look.\"}]},"
               "{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\",\"action\":{\"type\":"
               "\"search\",\"query\":\"weather\",\"sources\":[{\"type\":\"url\",\"url\":\"https://w.example/a\","
               "\"title\":\"A\"},{\"type\":\"url\",\"url\":\"https://w.example/b\",\"title\":\"B\"}]}},"
               "{\"type\":\"web_search_call\",\"id\":\"ws_2\",\"status\":\"failed\",\"action\":{\"type\":\"search\","
               "\"query\":\"again\",\"sources\":[]}},"
               "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":"
               "\"Sunny.\"}]},"
               "{\"type\":\"mcp_call\",\"id\":\"mcp_7\",\"server_label\":\"docs\",\"name\":\"lookup\",\"arguments\":"
               "\"{\\\"k\\\":1}\",\"output\":\"one\\ntwo\",\"error\":null,\"status\":\"completed\"},"
               "{\"type\":\"mcp_call\",\"id\":\"mcp_8\",\"server_label\":\"docs\",\"name\":\"lookup\",\"arguments\":"
               "\"{}\",\"output\":null,\"error\":\"boom\",\"status\":\"failed\"},"
               "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"q\"}]}]");
    req_free(&r);

    parse_fails("2023-06-01",
                "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":"
                "\"server_tool_use\",\"id\":\"s\",\"name\":\"web_search\",\"input\":{}}]}]}",
                "only allowed in assistant messages");
    parse_fails("2023-06-01",
                "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[" TURN_Q ",{\"role\":\"assistant\",\"content\":[{"
                "\"type\":\"server_tool_use\",\"id\":\"s\",\"name\":\"web_fetch\",\"input\":{}}]}]}",
                "the server tool 'web_fetch' is not supported");
    parse_fails("2023-06-01",
                "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[" TURN_Q ",{\"role\":\"assistant\",\"content\":[{"
                "\"type\":\"web_search_tool_result\",\"tool_use_id\":\"srvtoolu_9\",\"content\":[]}]}]}",
                "must follow the server_tool_use block");
    parse_fails("2023-06-01",
                "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[" TURN_Q ",{\"role\":\"assistant\",\"content\":[{"
                "\"type\":\"mcp_tool_use\",\"id\":\"mcptoolu_1\",\"name\":\"x\",\"input\":{}}]}]}",
                "server_name");
    parse_fails("2023-06-01",
                "{\"model\":\"m\",\"max_tokens\":5,\"messages\":[" TURN_Q ",{\"role\":\"assistant\",\"content\":[{"
                "\"type\":\"mcp_tool_result\",\"tool_use_id\":\"mcptoolu_1\",\"content\":\"x\"}]}]}",
                "must follow the mcp_tool_use block");
}

/* A tool-running result: searches, a cited answer, MCP calls. */
static void result_tools(req_t *r)
{
    json_error_t jerr;
    json_t *items = json_loads(
        "[{\"type\":\"mcp_list_tools\",\"id\":\"mcpl_1\",\"server_label\":\"docs\",\"tools\":[]},"
        "{\"type\":\"web_search_call\",\"id\":\"ws_abc\",\"status\":\"completed\",\"action\":{\"type\":\"search\","
        "\"query\":\"caf\\u00e9 hours\",\"sources\":[{\"type\":\"url\",\"url\":\"https://e.x/\",\"title\":\"Ex\"},"
        "{\"type\":\"url\",\"url\":\"https://f.x/\"}]},\"sb_output\":\"1. Ex https://e.x/ Open 8-6\"},"
        "{\"type\":\"web_search_call\",\"id\":\"ws_open\",\"status\":\"completed\",\"action\":{\"type\":"
        "\"open_page\",\"url\":\"https://e.x/\"}},"
        "{\"type\":\"web_search_call\",\"id\":\"ws_bad\",\"status\":\"failed\",\"action\":{\"type\":\"search\","
        "\"query\":\"x\",\"sources\":[]}},"
        "{\"type\":\"mcp_call\",\"id\":\"mcp_1\",\"server_label\":\"docs\",\"name\":\"lookup\",\"arguments\":"
        "\"{\\\"k\\\":1}\",\"output\":\"found\",\"error\":null,\"status\":\"completed\"},"
        "{\"type\":\"mcp_call\",\"id\":\"mcp_2\",\"server_label\":\"docs\",\"name\":\"lookup\",\"arguments\":\"\","
        "\"output\":null,\"error\":\"down\",\"status\":\"failed\"},"
        "{\"type\":\"message\",\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
        "\"text\":\"Voil\\u00e0 [Ex](https://e.x/) fin\",\"annotations\":[{\"type\":\"url_citation\","
        "\"start_index\":6,\"end_index\":24,\"url\":\"https://e.x/\",\"title\":\"Ex\"},{\"type\":\"url_citation\","
        "\"start_index\":6,\"end_index\":99,\"url\":\"https://e.x/\",\"title\":\"Ex\"}]}]}]",
        0, &jerr);
    if (!items) {
        fprintf(stderr, "bad result JSON: %s\n", jerr.text);
        abort();
    }
    json_array_extend(r->result.items, items);
    json_decref(items);
    snprintf(r->result.status, sizeof r->result.status, "completed");
}

/* The blocks of built-in items and citations; encrypted_content is the
 * base64 of the URL without a key, and with one the first result's seals
 * the item (what the model was given), which a later turn restores. */
static void test_server_render(void)
{
    req_t r;
    fe_error_t err;
    seal_ready = false;
    CHECK_INT(parse(&r, "2023-06-01", "{" MIN "}", &err), 0);
    result_tools(&r);
    json_t *out = render(&r);
    check_json(
        json_object_get(out, "content"),
        "[{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_abc\",\"name\":\"web_search\",\"input\":{\"query\":"
        "\"caf\\u00e9 hours\"}},"
        "{\"type\":\"web_search_tool_result\",\"tool_use_id\":\"srvtoolu_abc\",\"content\":[{\"type\":"
        "\"web_search_result\",\"url\":\"https://e.x/\",\"title\":\"Ex\",\"encrypted_content\":\"aHR0cHM6Ly9lLngv\","
        "\"page_age\":null},{\"type\":\"web_search_result\",\"url\":\"https://f.x/\",\"title\":\"https://f.x/\","
        "\"encrypted_content\":\"aHR0cHM6Ly9mLngv\",\"page_age\":null}]},"
        "{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_bad\",\"name\":\"web_search\",\"input\":{\"query\":\"x\"}},"
        "{\"type\":\"web_search_tool_result\",\"tool_use_id\":\"srvtoolu_bad\",\"content\":{\"type\":"
        "\"web_search_tool_result_error\",\"error_code\":\"unavailable\"}},"
        "{\"type\":\"mcp_tool_use\",\"id\":\"mcptoolu_1\",\"name\":\"lookup\",\"server_name\":\"docs\",\"input\":"
        "{\"k\":1}},"
        "{\"type\":\"mcp_tool_result\",\"tool_use_id\":\"mcptoolu_1\",\"is_error\":false,\"content\":[{\"type\":"
        "\"text\",\"text\":\"found\"}]},"
        "{\"type\":\"mcp_tool_use\",\"id\":\"mcptoolu_2\",\"name\":\"lookup\",\"server_name\":\"docs\",\"input\":{}},"
        "{\"type\":\"mcp_tool_result\",\"tool_use_id\":\"mcptoolu_2\",\"is_error\":true,\"content\":[{\"type\":"
        "\"text\",\"text\":\"down\"}]},"
        "{\"type\":\"text\",\"text\":\"Voil\\u00e0 [Ex](https://e.x/) fin\",\"citations\":[{\"type\":"
        "\"web_search_result_location\",\"url\":\"https://e.x/\",\"title\":\"Ex\",\"encrypted_index\":"
        "\"aHR0cHM6Ly9lLngv\",\"cited_text\":\"[Ex](https://e.x/)\"}]}]");
    check_json(json_object_get(out, "usage"), "{\"input_tokens\":0,\"output_tokens\":0,\"cache_creation_input_tokens\":"
                                              "0,\"cache_read_input_tokens\":0,\"server_tool_use\":{"
                                              "\"web_search_requests\":2}}");
    CHECK_STR(json_string_value(json_object_get(out, "stop_reason")), "end_turn");
    char *text = json_dumps(out, 0);
    CHECK(strstr(text, "sb_output") == NULL && strstr(text, "Open 8-6") == NULL); /* private, never plain */
    free(text);
    json_decref(out);
    req_free(&r);

    /* cited_text is at most 150 characters of the cited span. */
    CHECK_INT(parse(&r, "2023-06-01", "{" MIN "}", &err), 0);
    char long_text[400];
    memset(long_text, 'a', 300);
    long_text[300] = '\0';
    json_array_append_new(r.result.items, json_pack("{s:s, s:s, s:[{s:s, s:s, s:[{s:s, s:i, s:i, s:s}]}]}", "type",
                                                    "message", "role", "assistant", "content", "type", "output_text",
                                                    "text", long_text, "annotations", "type", "url_citation",
                                                    "start_index", 10, "end_index", 290, "url", "https://e.x/"));
    snprintf(r.result.status, sizeof r.result.status, "completed");
    out = render(&r);
    json_t *cite = json_array_get(json_object_get(json_array_get(json_object_get(out, "content"), 0), "citations"), 0);
    CHECK_INT((long long)json_string_length(json_object_get(cite, "cited_text")), 150);
    CHECK(json_is_null(json_object_get(cite, "title")));
    CHECK(!json_object_get(json_object_get(out, "usage"), "server_tool_use"));
    json_decref(out);
    req_free(&r);

    /* With a key: the first result seals the item; sent back, it restores
     * the item with what the model was given (sb_output). */
    seal_ready = true;
    CHECK_INT(parse(&r, "2023-06-01", "{" MIN "}", &err), 0);
    result_tools(&r);
    out = render(&r);
    json_t *content = json_object_get(out, "content");
    json_t *first = json_array_get(json_object_get(json_array_get(content, 1), "content"), 0);
    CHECK(json_string_length(json_object_get(first, "encrypted_content")) > 40);
    json_t *turn = json_pack("{s:s, s:[O, O]}", "role", "assistant", "content", json_array_get(content, 0),
                             json_array_get(content, 1));
    char *turn_text = json_dumps(turn, JSON_COMPACT);
    char *body = sb_xasprintf("{\"model\":\"m\",\"max_tokens\":5,\"messages\":[" TURN_Q ",%s," TURN_Q "]}", turn_text);
    json_decref(turn);
    free(turn_text);
    json_decref(out);
    req_free(&r);
    CHECK_INT(parse(&r, "2023-06-01", body, &err), 0);
    CHECK_STR(item_str(&r, 1, "type"), "web_search_call");
    CHECK_STR(item_str(&r, 1, "id"), "ws_abc");
    CHECK_STR(item_str(&r, 1, "sb_output"), "1. Ex https://e.x/ Open 8-6");
    req_free(&r);
    /* Another account's request cannot open it: the blocks are read as
     * they are. */
    req_init(&r, "2023-06-01");
    r.in.seal.account_id = 8;
    json_t *jb = json_loads(body, 0, NULL);
    memset(&err, 0, sizeof err);
    CHECK_INT(fe_style_messages.parse(&r.in, jb, &r.parsed, &err), 0);
    CHECK_STR(item_str(&r, 1, "id"), "ws_abc");
    CHECK(!json_object_get(item(&r, 1), "sb_output"));
    CHECK_INT(json_array_size(json_object_get(json_object_get(item(&r, 1), "action"), "sources")), 2);
    json_decref(jb);
    req_free(&r);
    free(body);
}

int main(void)
{
    if (sb_seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &key) != 0)
        return 1;
    seal_ready = true;
    test_version();
    test_parse();
    test_parse_errors();
    test_render();
    test_count();
    test_server_tools();
    test_mcp_servers();
    test_server_history();
    test_server_render();
    return sb_test_finish("test_style_messages");
}

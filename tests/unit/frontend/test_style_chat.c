/* test_style_chat: the Chat Completions style (style/chat/fe_chat_*.c)
 * through its narrow hooks (fe_style.h), with no request or server:
 * messages, tools, response_format and sampling -> the canonical request,
 * OpenAI's 400s, and a result -> chat.completion (one choice per n, tool
 * calls, reasoning_content, usage, a stored completion's metadata). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fe_style.h"
#include "sb_event.h"
#include "sb_test.h"

/* What the hooks get: the HTTP input, the parsed request, the result. */
typedef struct {
    fe_style_in_t in;
    fe_parsed_t parsed;
    fe_collect_t result;
} req_t;

static void req_init(req_t *r)
{
    memset(r, 0, sizeof *r);
    r->in.path = "/v1/chat/completions";
    r->in.seal.account_id = 7;
    fe_parsed_init(&r->parsed);
    fe_collect_init(&r->result);
}

static void req_free(req_t *r)
{
    fe_parsed_free(&r->parsed);
    fe_collect_free(&r->result);
}

static int parse(req_t *r, const char *text, fe_error_t *err)
{
    req_init(r);
    json_error_t jerr;
    json_t *body = json_loads(text, 0, &jerr);
    if (!body) {
        fprintf(stderr, "bad test JSON: %s: %s\n", jerr.text, text);
        return -2;
    }
    memset(err, 0, sizeof *err);
    int rc = fe_style_chat.parse(&r->in, body, &r->parsed, err);
    json_decref(body);
    return rc;
}

/* Expects a 400 with code and param, whose message contains needle. */
static void parse_fails(const char *text, const char *code, const char *param, const char *needle)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r, text, &err), -1);
    CHECK_INT(err.status, 400);
    CHECK_STR(err.code, code);
    CHECK_STR(err.param, param);
    CHECK(strstr(err.message, needle) != NULL);
    if (!strstr(err.message, needle))
        fprintf(stderr, "  body %s\n  message \"%s\" lacks \"%s\"\n", text, err.message, needle);
    req_free(&r);
}

static const json_t *item(const req_t *r, size_t i)
{
    return json_array_get(json_object_get(r->parsed.canonical, "input"), i);
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void test_parse(void)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r,
                    "{\"model\":\"gpt\",\"messages\":["
                    "{\"role\":\"system\",\"content\":\"Be terse.\"},"
                    "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"look\"},"
                    "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://x.test/a.png\",\"detail\":\"low\"}}]},"
                    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":"
                    "\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}]},"
                    "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":[{\"type\":\"text\",\"text\":\"4\"},"
                    "{\"type\":\"text\",\"text\":\"2\"}]}],"
                    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":"
                    "\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}}}],"
                    "\"tool_choice\":\"required\",\"n\":2,\"stop\":\"END\",\"max_completion_tokens\":50,"
                    "\"temperature\":0.2,\"seed\":3,\"user\":\"u\",\"reasoning_effort\":\"low\",\"store\":false,"
                    "\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                    "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"out\",\"schema\":"
                    "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\"}},\"required\":[\"x\"],"
                    "\"additionalProperties\":false},\"strict\":true}}}",
                    &err),
              0);
    if (err.status)
        fprintf(stderr, "  %s\n", err.message);
    const json_t *c = r.parsed.canonical;
    CHECK_STR(r.parsed.model_id, "gpt");
    CHECK(!r.parsed.store);
    CHECK(r.parsed.stream);
    CHECK_INT(r.parsed.n, 2);
    CHECK(json_is_true(json_object_get(r.parsed.style_state, "include_usage")));
    CHECK(strncmp(r.parsed.response_id, "chatcmpl-", 9) == 0 && strlen(r.parsed.response_id) == 9 + 12 + 48);
    CHECK_INT(json_array_size(json_object_get(c, "input")), 4);
    CHECK_STR(str(item(&r, 0), "role"), "system");
    CHECK_STR(str(json_array_get(json_object_get(item(&r, 0), "content"), 0), "type"), "input_text");
    const json_t *img = json_array_get(json_object_get(item(&r, 1), "content"), 1);
    CHECK_STR(str(img, "type"), "input_image");
    CHECK_STR(str(img, "image_url"), "https://x.test/a.png");
    CHECK_STR(str(img, "detail"), "low");
    /* An assistant turn with only tool calls is the calls alone. */
    CHECK_STR(str(item(&r, 2), "type"), "function_call");
    CHECK_STR(str(item(&r, 2), "call_id"), "call_1");
    CHECK_STR(str(item(&r, 2), "arguments"), "{\"a\":1}");
    CHECK_STR(str(item(&r, 3), "type"), "function_call_output");
    CHECK_STR(str(item(&r, 3), "output"), "42");
    const json_t *tool = json_array_get(json_object_get(c, "tools"), 0);
    CHECK_STR(str(tool, "name"), "f");
    CHECK(json_is_false(json_object_get(tool, "strict"))); /* non-strict unless asked */
    CHECK_STR(str(c, "tool_choice"), "required");
    CHECK_STR(json_string_value(json_array_get(json_object_get(c, "stop"), 0)), "END");
    CHECK_INT(json_integer_value(json_object_get(c, "max_output_tokens")), 50);
    CHECK_INT(json_integer_value(json_object_get(c, "seed")), 3);
    CHECK_STR(str(c, "user"), "u");
    CHECK_STR(str(json_object_get(c, "reasoning"), "effort"), "low");
    const json_t *fmt = json_object_get(json_object_get(c, "text"), "format");
    CHECK_STR(str(fmt, "type"), "json_schema");
    CHECK_STR(str(fmt, "name"), "out");
    CHECK(json_is_true(json_object_get(fmt, "strict")));
    req_free(&r);

    /* Defaults: stored, one choice, no stream; max_tokens is the older name. */
    CHECK_INT(
        parse(&r, "{\"model\":\"gpt\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"max_tokens\":9}", &err),
        0);
    CHECK(r.parsed.store);
    CHECK(!r.parsed.stream);
    CHECK_INT(r.parsed.n, 1);
    CHECK_INT(json_integer_value(json_object_get(r.parsed.canonical, "max_output_tokens")), 9);
    CHECK_STR(str(json_array_get(json_object_get(item(&r, 0), "content"), 0), "text"), "hi");
    req_free(&r);
}

static void test_parse_errors(void)
{
#define MSGS "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]"
    parse_fails("{\"model\":\"m\"," MSGS ",\"input\":\"x\"}", "unsupported_parameter", "input",
                "'input' belongs to the Responses API");
    parse_fails("{\"model\":\"m\"," MSGS ",\"frobnicate\":1}", "unknown_parameter", "frobnicate",
                "Unrecognized request argument supplied: frobnicate");
    parse_fails("{\"model\":\"m\",\"messages\":[]}", "invalid_value", "messages", "non-empty array");
    parse_fails("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":null}]}", "", "messages.[0].content",
                "expected a string, got null");
    parse_fails("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[]}]}", "empty_array",
                "messages[0].content", "empty array");
    parse_fails("{\"model\":\"m\",\"messages\":[{\"role\":\"bot\",\"content\":\"x\"}]}", "invalid_value",
                "messages[0].role", "expected one of");
    parse_fails("{\"model\":\"m\"," MSGS ",\"n\":17}", "invalid_value", "n", "from 1 to 16");
    parse_fails("{\"model\":\"m\"," MSGS ",\"logprobs\":true}", "unsupported_parameter", "logprobs",
                "not available on this gateway");
    parse_fails("{\"model\":\"m\"," MSGS ",\"stream_options\":{\"include_usage\":true}}", "invalid_value",
                "stream_options", "only allowed when 'stream' is enabled");
    parse_fails("{\"model\":\"m\"," MSGS ",\"tools\":[{\"type\":\"web_search\"}]}", "unsupported_parameter", "tools[0]",
                "only supported in the Responses API");
    parse_fails("{\"model\":\"m\"," MSGS ",\"modalities\":[\"text\",\"audio\"]}", "unsupported_parameter", "modalities",
                "audio output is not supported");
#undef MSGS
}

/* Feeds one event (JSON text) into r's result. */
static void event(req_t *r, const char *text)
{
    json_t *ev = json_loads(text, 0, NULL);
    CHECK(ev != NULL);
    fe_collect_event(&r->result, ev);
    json_decref(ev);
}

static json_t *render(req_t *r)
{
    fe_render_ctx_t ctx = {.parsed = &r->parsed, .start_ms = 1700000000999, .request_id = "req_1"};
    return fe_style_chat.render(&r->result, &ctx);
}

static void test_render(void)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r,
                    "{\"model\":\"gpt\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"n\":2,"
                    "\"metadata\":{\"k\":\"v\"}}",
                    &err),
              0);
    event(&r, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"content\":[{\"type\":"
              "\"reasoning_text\",\"text\":\"think\"}]}}");
    event(&r, "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"message\",\"content\":[{\"type\":"
              "\"output_text\",\"text\":\"Hel\"},{\"type\":\"output_text\",\"text\":\"lo\"}]}}");
    event(&r, "{\"type\":\"item_done\",\"item_index\":2,\"item\":{\"type\":\"function_call\",\"call_id\":\"call_9\","
              "\"name\":\"f\",\"arguments\":\"{}\"}}");
    event(&r, "{\"type\":\"choice_done\",\"choice\":0,\"status\":\"completed\"}");
    event(&r, "{\"type\":\"item_done\",\"choice\":1,\"item_index\":0,\"item\":{\"type\":\"message\",\"content\":"
              "[{\"type\":\"refusal\",\"refusal\":\"No.\"}]}}");
    event(&r, "{\"type\":\"choice_done\",\"choice\":1,\"status\":\"incomplete\",\"incomplete_reason\":"
              "\"content_filter\"}");
    event(&r, "{\"type\":\"usage\",\"input_tokens\":10,\"output_tokens\":6,\"reasoning_tokens\":2}");
    event(&r, "{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":\"content_filter\"}");
    json_t *out = render(&r);
    CHECK_STR(str(out, "id"), r.parsed.response_id);
    CHECK_STR(str(out, "object"), "chat.completion");
    CHECK_INT(json_integer_value(json_object_get(out, "created")), 1700000000);
    CHECK_STR(str(out, "model"), "gpt");
    CHECK(json_is_null(json_object_get(out, "system_fingerprint")));
    const json_t *choices = json_object_get(out, "choices");
    CHECK_INT(json_array_size(choices), 2);
    const json_t *c0 = json_array_get(choices, 0), *m0 = json_object_get(c0, "message");
    CHECK_INT(json_integer_value(json_object_get(c0, "index")), 0);
    CHECK_STR(str(c0, "finish_reason"), "tool_calls");
    CHECK_STR(str(m0, "role"), "assistant");
    CHECK_STR(str(m0, "content"), "Hello");
    CHECK(json_is_null(json_object_get(m0, "refusal")));
    CHECK_STR(str(m0, "reasoning_content"), "think");
    const json_t *tc = json_array_get(json_object_get(m0, "tool_calls"), 0);
    CHECK_STR(str(tc, "id"), "call_9");
    CHECK_STR(str(tc, "type"), "function");
    CHECK_STR(str(json_object_get(tc, "function"), "name"), "f");
    const json_t *c1 = json_array_get(choices, 1), *m1 = json_object_get(c1, "message");
    CHECK_STR(str(c1, "finish_reason"), "content_filter");
    CHECK(json_is_null(json_object_get(m1, "content")));
    CHECK_STR(str(m1, "refusal"), "No.");
    CHECK(!json_object_get(m1, "tool_calls"));
    const json_t *u = json_object_get(out, "usage");
    CHECK_INT(json_integer_value(json_object_get(u, "prompt_tokens")), 10);
    CHECK_INT(json_integer_value(json_object_get(u, "completion_tokens")), 6);
    CHECK_INT(json_integer_value(json_object_get(u, "total_tokens")), 16);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(u, "completion_tokens_details"), "reasoning_tokens")),
              2);
    /* A stored completion shows its metadata. */
    CHECK_STR(str(json_object_get(out, "metadata"), "k"), "v");
    json_decref(out);
    r.parsed.store = false;
    out = render(&r);
    CHECK(!json_object_get(out, "metadata"));
    json_decref(out);
    req_free(&r);

    /* A cut message is "length". */
    CHECK_INT(parse(&r, "{\"model\":\"gpt\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", &err), 0);
    event(&r, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"content\":[{\"type\":"
              "\"output_text\",\"text\":\"cu\"}]}}");
    event(&r, "{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":\"max_output_tokens\"}");
    out = render(&r);
    CHECK_STR(str(json_array_get(json_object_get(out, "choices"), 0), "finish_reason"), "length");
    json_decref(out);
    req_free(&r);
}

/* What the pipeline reads of the style as data. */
static void test_vtable(void)
{
    CHECK_STR(fe_style_chat.name, "chat");
    CHECK_STR(fe_style_chat.key_hint, "'Authorization: Bearer <API_KEY>'");
    CHECK_STR(fe_style_chat.max_tokens_param, "max_tokens");
    CHECK_STR(fe_style_chat.input_param, "messages");
    CHECK(fe_style_chat.store != NULL);
    CHECK(fe_style_chat.stream == &fe_stream_chat);
    CHECK(fe_style_chat.render_count == NULL);
    fe_error_t e;
    fe_error_set(&e, 429, SB_ERR_QUOTA, "insufficient_quota", NULL, "quota");
    json_t *body = fe_style_chat.error_body(&e, "req_1");
    char *text = json_dumps(body, JSON_COMPACT);
    CHECK_STR(text, "{\"error\":{\"message\":\"quota\",\"type\":\"insufficient_quota\",\"param\":null,\"code\":"
                    "\"insufficient_quota\"}}");
    free(text);
    json_decref(body);
}

int main(void)
{
    test_parse();
    test_parse_errors();
    test_render();
    test_vtable();
    return sb_test_finish("style_chat");
}

/* test_style_responses: the Responses style (style/responses/fe_responses_*.c)
 * through its narrow hooks (fe_style.h), with no request or server: bodies
 * -> the canonical request (input, tools and namespace tools, include,
 * reasoning, text, store, previous_response_id, prompt), OpenAI's 400s and
 * 404s, and a result -> the Response object (its echo of the request,
 * usage, incomplete details, namespaced calls, sealed reasoning). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fe_style.h"
#include "sb_event.h"
#include "sb_test.h"

static sb_seal_key_t key;

/* What the hooks get: the HTTP input, the parsed request, the result. */
typedef struct {
    fe_style_in_t in;
    fe_parsed_t parsed;
    fe_collect_t result;
} req_t;

static int parse_with(req_t *r, const sb_seal_key_t *k, const char *text, fe_error_t *err)
{
    memset(r, 0, sizeof *r);
    r->in.path = "/v1/responses";
    r->in.seal.key = k;
    r->in.seal.account_id = 7;
    fe_parsed_init(&r->parsed);
    fe_collect_init(&r->result);
    json_error_t jerr;
    json_t *body = json_loads(text, 0, &jerr);
    if (!body) {
        fprintf(stderr, "bad test JSON: %s: %s\n", jerr.text, text);
        return -2;
    }
    memset(err, 0, sizeof *err);
    int rc = fe_style_responses.parse(&r->in, body, &r->parsed, err);
    json_decref(body);
    return rc;
}

static int parse(req_t *r, const char *text, fe_error_t *err)
{
    return parse_with(r, &key, text, err);
}

static void req_free(req_t *r)
{
    fe_parsed_free(&r->parsed);
    fe_collect_free(&r->result);
}

/* Expects status with code and param, whose message contains needle. */
static void parse_fails(const char *text, int status, const char *code, const char *param, const char *needle)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r, text, &err), -1);
    CHECK_INT(err.status, status);
    CHECK_STR(err.code, code);
    CHECK_STR(err.param, param);
    CHECK(strstr(err.message, needle) != NULL);
    if (!strstr(err.message, needle))
        fprintf(stderr, "  body %s\n  message \"%s\" lacks \"%s\"\n", text, err.message, needle);
    req_free(&r);
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
                    "{\"model\":\"gpt\",\"input\":\"hi\",\"instructions\":\"Be terse.\",\"max_output_tokens\":100,"
                    "\"temperature\":0.5,\"top_p\":0.9,\"store\":false,\"previous_response_id\":\"resp_0\","
                    "\"include\":[\"reasoning.encrypted_content\"],\"reasoning\":{\"effort\":\"high\",\"summary\":"
                    "\"auto\"},\"text\":{\"format\":{\"type\":\"json_object\"},\"verbosity\":\"low\"},"
                    "\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":{\"type\":\"object\","
                    "\"properties\":{},\"additionalProperties\":false}},{\"type\":\"namespace\",\"name\":\"ns\","
                    "\"tools\":[{\"type\":\"function\",\"name\":\"g\",\"parameters\":{\"type\":\"object\"}}]}],"
                    "\"tool_choice\":\"auto\",\"truncation\":\"auto\",\"safety_identifier\":\"s1\","
                    "\"prompt_cache_key\":\"p1\",\"metadata\":{\"k\":\"v\"},\"stream\":true}",
                    &err),
              0);
    if (err.status)
        fprintf(stderr, "  %s\n", err.message);
    const json_t *c = r.parsed.canonical;
    CHECK_STR(r.parsed.model_id, "gpt");
    CHECK(!r.parsed.store);
    CHECK(r.parsed.stream);
    CHECK(r.parsed.seal_reasoning);
    CHECK_STR(r.parsed.previous_response_id, "resp_0");
    CHECK(strncmp(r.parsed.response_id, "resp_", 5) == 0 && strlen(r.parsed.response_id) == 5 + 48);
    const json_t *in0 = json_array_get(json_object_get(c, "input"), 0);
    CHECK_STR(str(in0, "type"), "message");
    CHECK_STR(str(in0, "role"), "user");
    CHECK_STR(str(json_array_get(json_object_get(in0, "content"), 0), "text"), "hi");
    CHECK_STR(str(c, "instructions"), "Be terse.");
    CHECK_INT(json_integer_value(json_object_get(c, "max_output_tokens")), 100);
    CHECK_STR(str(json_object_get(c, "reasoning"), "effort"), "high");
    CHECK_STR(str(json_object_get(c, "reasoning"), "summary"), "auto");
    CHECK_STR(str(json_object_get(json_object_get(c, "text"), "format"), "type"), "json_object");
    CHECK_STR(str(json_object_get(c, "text"), "verbosity"), "low");
    const json_t *tools = json_object_get(c, "tools");
    CHECK_INT(json_array_size(tools), 2);
    CHECK(json_is_true(json_object_get(json_array_get(tools, 0), "strict"))); /* strict when the schema allows */
    /* A namespace tool becomes a flat function tool, its names kept. */
    CHECK_STR(str(json_array_get(tools, 1), "name"), "ns__g");
    const json_t *hit = json_object_get(json_object_get(r.parsed.style_state, "namespaced"), "ns__g");
    CHECK_STR(json_string_value(json_array_get(hit, 0)), "ns");
    CHECK_STR(json_string_value(json_array_get(hit, 1)), "g");
    CHECK_STR(str(json_object_get(c, "metadata"), "k"), "v");
    /* What the Response object echoes as sent. */
    const json_t *echo = json_object_get(r.parsed.style_state, "echo");
    CHECK_STR(str(echo, "truncation"), "auto");
    CHECK_STR(str(echo, "safety_identifier"), "s1");
    CHECK_STR(str(echo, "prompt_cache_key"), "p1");
    req_free(&r);

    /* A prompt may stand for the input; items keep their ids. */
    CHECK_INT(parse(&r,
                    "{\"model\":\"gpt\",\"prompt\":{\"id\":\"pmpt_1\",\"version\":\"2\",\"variables\":{\"x\":\"y\"}}}",
                    &err),
              0);
    CHECK_STR(str(r.parsed.prompt_ref, "id"), "pmpt_1");
    CHECK(r.parsed.store);
    CHECK_INT(json_array_size(json_object_get(r.parsed.canonical, "input")), 0);
    req_free(&r);
}

static void test_parse_errors(void)
{
    parse_fails("{\"model\":\"m\",\"input\":\"x\",\"n\":2}", 400, "unsupported_parameter", "n",
                "exactly one generation");
    parse_fails("{\"model\":\"m\",\"messages\":[]}", 400, "unsupported_parameter", "messages",
                "'messages' belongs to Chat Completions");
    parse_fails("{\"model\":\"m\",\"input\":\"x\",\"frobnicate\":1}", 400, "unknown_parameter", "frobnicate",
                "Unknown parameter: 'frobnicate'.");
    parse_fails("{\"model\":\"m\"}", 400, "missing_required_parameter", "input", "input");
    parse_fails("{\"model\":\"m\",\"input\":\"x\",\"background\":true}", 400, "unsupported_parameter", "background",
                "background responses");
    parse_fails("{\"model\":\"m\",\"input\":\"x\",\"conversation\":\"conv_1\"}", 404, "", "conversation",
                "Conversation with id 'conv_1' not found.");
    parse_fails("{\"model\":\"m\",\"input\":\"x\",\"reasoning\":{\"effort\":\"huge\"}}", 400, "invalid_value",
                "reasoning.effort", "expected one of");
    parse_fails("{\"model\":\"m\",\"input\":\"x\",\"truncation\":\"sometimes\"}", 400, "invalid_value", "truncation",
                "expected 'auto' or 'disabled'");
    parse_fails("{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"gizmo\"}]}", 400, "invalid_value", "tools[0]",
                "not a supported tool type");
    /* Encrypted reasoning needs a key on the gateway. */
    req_t r;
    fe_error_t err;
    CHECK_INT(
        parse_with(&r, NULL, "{\"model\":\"m\",\"input\":\"x\",\"include\":[\"reasoning.encrypted_content\"]}", &err),
        -1);
    CHECK_STR(err.code, "unsupported_parameter");
    CHECK(strstr(err.message, "encrypted reasoning is not configured") != NULL);
    req_free(&r);
}

static void event(req_t *r, const char *text)
{
    json_t *ev = json_loads(text, 0, NULL);
    CHECK(ev != NULL);
    fe_collect_event(&r->result, ev);
    json_decref(ev);
}

static json_t *render(req_t *r)
{
    fe_render_ctx_t ctx = {.parsed = &r->parsed, .start_ms = 1700000000999, .request_id = "req_1", .seal = r->in.seal};
    return fe_style_responses.render(&r->result, &ctx);
}

static void test_render(void)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r,
                    "{\"model\":\"gpt\",\"input\":\"hi\",\"instructions\":\"I\",\"max_output_tokens\":100,"
                    "\"tools\":[{\"type\":\"namespace\",\"name\":\"ns\",\"tools\":[{\"type\":\"function\",\"name\":"
                    "\"g\"}]}],\"safety_identifier\":\"s1\",\"user\":\"u1\",\"metadata\":{\"k\":\"v\"}}",
                    &err),
              0);
    event(&r, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":"
              "[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"hmm\"}],\"signature\":\"up\"}}");
    event(&r, "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\","
              "\"call_id\":\"call_1\",\"name\":\"ns__g\",\"arguments\":\"{}\",\"status\":\"completed\"}}");
    event(&r, "{\"type\":\"usage\",\"input_tokens\":10,\"output_tokens\":6,\"reasoning_tokens\":2}");
    event(&r, "{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":\"max_output_tokens\"}");
    json_t *out = render(&r);
    CHECK_STR(str(out, "id"), r.parsed.response_id);
    CHECK_STR(str(out, "object"), "response");
    CHECK_INT(json_integer_value(json_object_get(out, "created_at")), 1700000000);
    CHECK_STR(str(out, "status"), "incomplete");
    CHECK(json_is_null(json_object_get(out, "completed_at"))); /* only a completed response has it */
    CHECK_STR(str(json_object_get(out, "incomplete_details"), "reason"), "max_output_tokens");
    CHECK_STR(str(out, "model"), "gpt");
    CHECK_STR(str(out, "instructions"), "I");
    CHECK(json_is_null(json_object_get(out, "error")));
    CHECK(json_is_null(json_object_get(out, "previous_response_id")));
    CHECK_STR(str(out, "truncation"), "disabled");
    CHECK_STR(str(out, "safety_identifier"), "s1");
    CHECK(json_is_null(json_object_get(out, "prompt_cache_key")));
    CHECK_STR(str(out, "user"), "u1");
    CHECK_STR(str(json_object_get(out, "metadata"), "k"), "v");
    CHECK_INT(json_integer_value(json_object_get(out, "max_output_tokens")), 100);
    CHECK(json_is_true(json_object_get(out, "store")));
    CHECK_STR(str(json_object_get(json_object_get(out, "text"), "format"), "type"), "text");
    const json_t *u = json_object_get(out, "usage");
    CHECK_INT(json_integer_value(json_object_get(u, "total_tokens")), 16);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(u, "output_tokens_details"), "reasoning_tokens")), 2);
    const json_t *output = json_object_get(out, "output");
    CHECK_INT(json_array_size(output), 2);
    /* Plain reasoning, private fields stripped; the call with its own name. */
    const json_t *rs = json_array_get(output, 0);
    CHECK_STR(str(json_array_get(json_object_get(rs, "content"), 0), "text"), "hmm");
    CHECK(!json_object_get(rs, "signature"));
    const json_t *call = json_array_get(output, 1);
    CHECK_STR(str(call, "name"), "g");
    CHECK_STR(str(call, "namespace"), "ns");
    json_decref(out);

    /* Sealed reasoning: encrypted_content, no plain content. */
    r.parsed.seal_reasoning = true;
    out = render(&r);
    rs = json_array_get(json_object_get(out, "output"), 0);
    CHECK(json_string_length(json_object_get(rs, "encrypted_content")) > 20);
    CHECK(!json_object_get(rs, "content"));
    json_decref(out);
    req_free(&r);

    /* A completed response has completed_at; a prompt is echoed. */
    CHECK_INT(parse(&r, "{\"model\":\"gpt\",\"prompt\":{\"id\":\"pmpt_1\"},\"input\":\"x\"}", &err), 0);
    event(&r, "{\"type\":\"completed\",\"status\":\"completed\"}");
    out = render(&r);
    CHECK_STR(str(out, "status"), "completed");
    CHECK(json_is_integer(json_object_get(out, "completed_at")));
    CHECK(json_is_null(json_object_get(out, "incomplete_details")));
    CHECK_STR(str(json_object_get(out, "prompt"), "id"), "pmpt_1");
    json_decref(out);
    req_free(&r);
}

static void test_vtable(void)
{
    CHECK_STR(fe_style_responses.name, "responses");
    CHECK_STR(fe_style_responses.key_hint, "'Authorization: Bearer <API_KEY>'");
    CHECK_STR(fe_style_responses.max_tokens_param, "max_output_tokens");
    CHECK_STR(fe_style_responses.input_param, "input");
    CHECK(fe_style_responses.store != NULL);
    CHECK(fe_style_responses.stream == &fe_stream_responses);
    CHECK(fe_style_responses.render_count == NULL);
    /* The other styles' data, read by the pipeline the same way. */
    CHECK_STR(fe_style_messages.key_hint, "the 'x-api-key' header");
    CHECK_STR(fe_style_messages.max_tokens_param, "max_tokens");
    CHECK_STR(fe_style_messages.input_param, "messages");
    CHECK_STR(fe_style_gemini.key_hint, "the 'x-goog-api-key' header");
    CHECK_STR(fe_style_gemini.max_tokens_param, "generationConfig.maxOutputTokens");
    CHECK_STR(fe_style_gemini.input_param, "contents");
    CHECK(fe_style_messages.store == NULL && fe_style_gemini.store == NULL);
    fe_error_t e;
    fe_error_set(&e, 404, SB_ERR_NOT_FOUND, "model_not_found", "model", "nope");
    json_t *body = fe_style_responses.error_body(&e, "req_1");
    char *text = json_dumps(body, JSON_COMPACT);
    CHECK_STR(text, "{\"error\":{\"message\":\"nope\",\"type\":\"invalid_request_error\",\"param\":\"model\",\"code\":"
                    "\"model_not_found\"}}");
    free(text);
    json_decref(body);
}

int main(void)
{
    if (sb_seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &key) != 0)
        return 1;
    test_parse();
    test_parse_errors();
    test_render();
    test_vtable();
    return sb_test_finish("style_responses");
}

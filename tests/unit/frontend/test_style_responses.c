/* test_style_responses: the Responses style (style/responses/fe_responses_*.c)
 * through its narrow hooks (fe_style.h), with no request or server: bodies
 * -> the canonical request (input, tools and namespace tools, include,
 * reasoning, text, store, previous_response_id, prompt), OpenAI's 400s and
 * 404s, and a result -> the Response object (its echo of the request,
 * usage, incomplete details, namespaced calls, sealed reasoning), and the
 * built-in tools the gateway runs (docs/tools.md): their checks, the
 * reserved function names, no MCP secret in what a client sees again, and
 * web search sources shown only when included. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fe_responses_bg.h"
#include "fe_responses_render.h"
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
    CHECK(strncmp(r.parsed.response_id, "resp_", 5) == 0 && strlen(r.parsed.response_id) == 5 + 12 + 48);
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

static void test_parse_conversation(void)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r, "{\"model\":\"m\",\"input\":\"x\",\"conversation\":{\"id\":\"conv_9\"}}", &err), 0);
    CHECK_STR(r.parsed.conversation_id, "conv_9");
    fe_render_ctx_t ctx = {.parsed = &r.parsed, .start_ms = 1, .request_id = "req"};
    json_t *obj = fe_responses_object(&r.result, &ctx, "in_progress", NULL);
    CHECK_STR(str(json_object_get(obj, "conversation"), "id"), "conv_9");
    json_decref(obj);
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
    parse_fails("{\"model\":\"m\",\"input\":\"x\",\"background\":true,\"store\":false}", 400, "invalid_value",
                "background", "requires 'store' to be true");
    parse_fails("{\"model\":\"m\",\"input\":\"x\",\"background\":\"yes\"}", 400, "invalid_type", "background", "");
    parse_fails("{\"model\":\"m\",\"input\":\"x\",\"conversation\":\"conv_1\",\"previous_response_id\":\"resp_1\"}",
                400, "mutually_exclusive_parameters", "conversation", "'previous_response_id' or 'conversation'");
    parse_fails("{\"model\":\"m\",\"input\":\"x\",\"conversation\":{\"id\":\"\"}}", 400, "invalid_value",
                "conversation.id", "expected a conversation id");
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

#define MCP_TOOL                                                                                                       \
    "{\"type\":\"mcp\",\"server_label\":\"dice\",\"server_url\":\"https://mcp.example/sse\",\"allowed_tools\":"        \
    "{\"tool_names\":[\"roll\"],\"read_only\":false},\"headers\":{\"X-Api-Key\":\"hdr-secret-1\"},"                    \
    "\"authorization\":\"tok-secret-2\",\"require_approval\":{\"never\":{\"tool_names\":[\"roll\"]},\"always\":"       \
    "{\"tool_names\":[\"wipe\"]}},\"server_description\":\"Dice.\"}"

/* Built-in tools the gateway runs: their shapes as OpenAI takes them, on
 * to the canonical request unchanged (secrets included, for the worker). */
static void test_builtin_tools(void)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r,
                    "{\"model\":\"m\",\"input\":\"x\",\"tools\":[" MCP_TOOL ",{\"type\":\"web_search\",\"filters\":"
                    "{\"allowed_domains\":[\"example.com\"]},\"user_location\":{\"type\":\"approximate\",\"city\":"
                    "\"Paris\",\"country\":\"FR\",\"region\":null,\"timezone\":\"Europe/Paris\"},"
                    "\"search_context_size\":\"low\",\"external_web_access\":false},{\"type\":"
                    "\"web_search_2025_08_26\"},{\"type\":\"web_search_preview\",\"search_context_size\":\"high\","
                    "\"user_location\":{\"type\":\"approximate\"}},{\"type\":\"web_search_preview_2025_03_11\"},"
                    "{\"type\":\"mcp\",\"server_label\":\"two\",\"server_url\":\"http://10.0.0.1/mcp\","
                    "\"allowed_tools\":[\"a\",\"b\"],\"require_approval\":\"never\"}]}",
                    &err),
              0);
    if (err.status)
        fprintf(stderr, "  %s\n", err.message);
    const json_t *tools = json_object_get(r.parsed.canonical, "tools");
    CHECK_INT(json_array_size(tools), 6);
    json_t *sent = json_loads(MCP_TOOL, 0, NULL);
    CHECK(json_equal(json_array_get(tools, 0), sent)); /* unchanged: the worker needs headers and authorization */
    json_decref(sent);
    CHECK_STR(str(json_array_get(tools, 2), "type"), "web_search_2025_08_26");
    req_free(&r);

    const char *body = "{\"model\":\"m\",\"input\":\"x\",\"tools\":[%s]}";
    struct {
        const char *tool, *code, *param, *needle;
    } bad[] = {
        {"{\"type\":\"mcp\",\"server_url\":\"https://a/\"}", "missing_required_parameter", "tools[0].server_label",
         "Missing required parameter: 'tools[0].server_label'."},
        {"{\"type\":\"mcp\",\"server_label\":5,\"server_url\":\"https://a/\"}", "invalid_type", "tools[0].server_label",
         "expected a string, but got an integer"},
        {"{\"type\":\"mcp\",\"server_label\":\"s\"}", "missing_required_parameter", "tools[0].server_url",
         "'tools[0].server_url'"},
        {"{\"type\":\"mcp\",\"server_label\":\"s\",\"connector_id\":\"connector_gmail\"}", "unsupported_parameter",
         "tools[0].connector_id", "connectors are not available"},
        {"{\"type\":\"mcp\",\"server_label\":\"s\",\"tunnel_id\":\"t1\"}", "unsupported_parameter",
         "tools[0].tunnel_id", "tunnels are not available"},
        {"{\"type\":\"mcp\",\"server_label\":\"s\",\"server_url\":\"ftp://a/\"}", "invalid_value",
         "tools[0].server_url", "http:// or https://"},
        {"{\"type\":\"mcp\",\"server_label\":\"s\",\"server_url\":\"https://a/\",\"headers\":{\"A\":1}}",
         "invalid_type", "tools[0].headers.A", "expected a string"},
        {"{\"type\":\"mcp\",\"server_label\":\"s\",\"server_url\":\"https://a/\",\"authorization\":[]}", "invalid_type",
         "tools[0].authorization", "expected a string"},
        {"{\"type\":\"mcp\",\"server_label\":\"s\",\"server_url\":\"https://a/\",\"allowed_tools\":[1]}",
         "invalid_type", "tools[0].allowed_tools[0]", "expected a string"},
        {"{\"type\":\"mcp\",\"server_label\":\"s\",\"server_url\":\"https://a/\",\"allowed_tools\":{\"names\":[]}}",
         "unknown_parameter", "tools[0].allowed_tools.names", "Unknown parameter"},
        {"{\"type\":\"mcp\",\"server_label\":\"s\",\"server_url\":\"https://a/\",\"require_approval\":\"sometimes\"}",
         "invalid_value", "tools[0].require_approval", "'always', 'never'"},
        {"{\"type\":\"mcp\",\"server_label\":\"s\",\"server_url\":\"https://a/\",\"require_approval\":{\"always\":"
         "{\"tool_names\":\"x\"}}}",
         "invalid_type", "tools[0].require_approval.always.tool_names", "expected an array"},
        {"{\"type\":\"mcp\",\"server_label\":\"s\",\"server_url\":\"https://a/\",\"defer_loading\":true}",
         "unsupported_parameter", "tools[0].defer_loading", "tool search"},
        {"{\"type\":\"mcp\",\"server_label\":\"s\",\"server_url\":\"https://a/\",\"sever_description\":\"x\"}",
         "unknown_parameter", "tools[0].sever_description", "Unknown parameter: 'tools[0].sever_description'."},
        {"{\"type\":\"mcp\",\"server_label\":\"s\",\"server_url\":\"https://a/\"},{\"type\":\"mcp\",\"server_label\":"
         "\"s\",\"server_url\":\"https://b/\"}",
         "invalid_value", "tools[1].server_label", "used by tools[0] too"},
        {"{\"type\":\"web_search\",\"search_context_size\":\"huge\"}", "invalid_value", "tools[0].search_context_size",
         "'low', 'medium', 'high'"},
        {"{\"type\":\"web_search\",\"filters\":{\"allowed_domains\":\"a.com\"}}", "invalid_type",
         "tools[0].filters.allowed_domains", "expected an array"},
        {"{\"type\":\"web_search\",\"filters\":{\"blocked_domains\":[]}}", "unknown_parameter",
         "tools[0].filters.blocked_domains", "Unknown parameter"},
        {"{\"type\":\"web_search\",\"user_location\":{\"type\":\"exact\"}}", "invalid_value",
         "tools[0].user_location.type", "'approximate'"},
        {"{\"type\":\"web_search\",\"user_location\":{\"city\":3}}", "invalid_type", "tools[0].user_location.city",
         "expected a string"},
        {"{\"type\":\"web_search\",\"external_web_access\":\"no\"}", "invalid_type", "tools[0].external_web_access",
         "expected a boolean"},
        {"{\"type\":\"web_search_preview\",\"filters\":{}}", "unknown_parameter", "tools[0].filters",
         "Unknown parameter"},
        {"{\"type\":\"web_search_preview\",\"user_location\":{\"city\":\"Paris\"}}", "missing_required_parameter",
         "tools[0].user_location.type", "'tools[0].user_location.type'"},
        {"{\"type\":\"web_search_preview\",\"search_content_types\":[\"video\"]}", "invalid_value",
         "tools[0].search_content_types[0]", "'video'"},
        /* The names the worker offers built-in tools under are the gateway's. */
        {"{\"type\":\"function\",\"name\":\"sb__web_search\",\"parameters\":{\"type\":\"object\"}}", "invalid_value",
         "tools[0].name", "function names starting with 'sb__' are reserved by this gateway"},
        {"{\"type\":\"namespace\",\"name\":\"sb\",\"tools\":[{\"type\":\"function\",\"name\":\"x\"}]}", "invalid_value",
         "tools[0].name", "reserved by this gateway"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, body, bad[i].tool);
        parse_fails(text, 400, bad[i].code, bad[i].param, bad[i].needle);
    }
    /* A name that merely contains the prefix is the client's. */
    CHECK_INT(parse(&r,
                    "{\"model\":\"m\",\"input\":\"x\",\"tools\":[{\"type\":\"function\",\"name\":\"my_sb__f\","
                    "\"parameters\":{\"type\":\"object\"}}]}",
                    &err),
              0);
    req_free(&r);
}

/* What a client sees again of a request with MCP secrets (the Response
 * object, streamed or not, and the body stored for GET) has none of them;
 * a web search's sources show only when included; sb_output never. */
static void test_builtin_render(void)
{
    for (int include = 0; include < 2; include++) {
        req_t r;
        fe_error_t err;
        char text[1024];
        snprintf(text, sizeof text, "{\"model\":\"m\",\"input\":\"x\",\"tools\":[" MCP_TOOL "]%s}",
                 include ? ",\"include\":[\"web_search_call.action.sources\"]" : "");
        CHECK_INT(parse(&r, text, &err), 0);
        CHECK(json_is_true(json_object_get(r.parsed.style_state, "include_sources")) == (include == 1));
        event(&r, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_1\","
                  "\"status\":\"completed\",\"action\":{\"type\":\"search\",\"query\":\"q\",\"sources\":[{\"type\":"
                  "\"url\",\"url\":\"https://a.example/\"}]},\"sb_output\":\"page text\"}}");
        event(&r, "{\"type\":\"completed\",\"status\":\"completed\"}");
        json_t *out = render(&r);
        char *dumped = json_dumps(out, JSON_COMPACT);
        CHECK(strstr(dumped, "secret") == NULL);
        CHECK(strstr(dumped, "page text") == NULL);
        CHECK((strstr(dumped, "\"sources\"") != NULL) == (include == 1));
        const json_t *t = json_array_get(json_object_get(out, "tools"), 0);
        CHECK_STR(str(t, "server_label"), "dice");
        CHECK_STR(str(t, "server_url"), "https://mcp.example/sse");
        CHECK(!json_object_get(t, "headers") && !json_object_get(t, "authorization"));
        CHECK(json_is_object(json_object_get(t, "require_approval")));
        /* The request the worker gets still has them. */
        const json_t *ct = json_array_get(json_object_get(r.parsed.canonical, "tools"), 0);
        CHECK_STR(str(ct, "authorization"), "tok-secret-2");
        CHECK_STR(str(json_object_get(ct, "headers"), "X-Api-Key"), "hdr-secret-1");
        /* The stored item keeps what the next turn replays. */
        CHECK_STR(str(json_array_get(r.result.items, 0), "sb_output"), "page text");
        free(dumped);
        json_decref(out);
        req_free(&r);
    }
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

/* A background request's snapshot (fe_responses_bg.h): restored, it
 * renders the same Response object; MCP secrets never reach it. */
static void test_background_snapshot(void)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r,
                    "{\"model\":\"m\",\"input\":\"x\",\"background\":true,\"instructions\":\"Be brief.\","
                    "\"previous_response_id\":\"resp_p\",\"metadata\":{\"k\":\"v\"},\"tools\":[{\"type\":\"mcp\","
                    "\"server_label\":\"s\",\"server_url\":\"https://mcp.example/\",\"authorization\":\"tok-secret\","
                    "\"headers\":{\"X-Key\":\"hdr-secret\"},\"require_approval\":\"never\"}]}",
                    &err),
              0);
    CHECK(r.parsed.background);
    CHECK(r.parsed.store);
    CHECK(r.parsed.conversation_id == NULL);
    fe_responses_bg_meta_t meta = {.start_ms = 1700000000123LL, .account_id = 7, .key_id = 9, .stream = true};
    snprintf(meta.request_id, sizeof meta.request_id, "%s", "req_1");
    json_t *snap = fe_responses_bg_snapshot(&r.parsed, &meta);
    char *text = json_dumps(snap, JSON_COMPACT);
    CHECK(text && !strstr(text, "tok-secret") && !strstr(text, "hdr-secret"));
    CHECK(text && !strstr(text, "\"input\""));
    free(text);

    fe_parsed_t p;
    fe_parsed_init(&p);
    fe_responses_bg_meta_t back;
    CHECK_INT(fe_responses_bg_restore(snap, &p, &back), 0);
    CHECK_STR(p.response_id, r.parsed.response_id);
    CHECK_STR(p.model_id, "m");
    CHECK_STR(p.previous_response_id, "resp_p");
    CHECK(p.background && p.store);
    CHECK_INT(back.start_ms, 1700000000123LL);
    CHECK_STR(back.request_id, "req_1");
    CHECK_INT(back.account_id, 7);
    CHECK_INT(back.key_id, 9);
    CHECK(back.stream);
    fe_render_ctx_t a = {.parsed = &r.parsed, .start_ms = meta.start_ms, .request_id = "req_1"};
    fe_render_ctx_t b = {.parsed = &p, .start_ms = back.start_ms, .request_id = back.request_id};
    json_t *qa = fe_responses_object(&r.result, &a, "queued", NULL);
    json_t *qb = fe_responses_object(&r.result, &b, "queued", NULL);
    CHECK(json_equal(qa, qb));
    CHECK_STR(str(qb, "status"), "queued");
    CHECK(json_is_true(json_object_get(qb, "background")));
    CHECK_INT(json_array_size(json_object_get(qb, "output")), 0);
    CHECK_STR(str(qb, "instructions"), "Be brief.");
    json_decref(qa);
    json_decref(qb);
    free(back.requested_model);
    fe_parsed_free(&p);
    /* Not a snapshot. */
    fe_parsed_init(&p);
    json_t *bad = json_pack("{s:i}", "v", 2);
    CHECK_INT(fe_responses_bg_restore(bad, &p, &back), -1);
    json_decref(bad);
    fe_parsed_free(&p);
    json_decref(snap);
    req_free(&r);
}

int main(void)
{
    if (sb_seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &key) != 0)
        return 1;
    test_parse();
    test_parse_errors();
    test_parse_conversation();
    test_render();
    test_builtin_tools();
    test_builtin_render();
    test_vtable();
    test_background_snapshot();
    return sb_test_finish("style_responses");
}

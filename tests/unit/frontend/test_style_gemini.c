/* test_style_gemini: the Generate Content style's translation
 * (style/gemini/fe_gemini_*.c) through its narrow hooks (fe_style.h), with
 * no request or server: request bodies -> canonical request, Google's Schema
 * -> JSON Schema, error texts, and results -> candidates, with thought
 * signatures that must come back intact; googleSearch -> the gateway's web
 * search, and its items and citations -> groundingMetadata. */
#include <jansson.h>
#include <stdlib.h>

#include "fe_style.h"
#include "sb_alloc.h"
#include "sb_test.h"

static sb_seal_key_t key;

/* What the hooks get: the HTTP input parse reads, the parsed request, the
 * result render reads. */
typedef struct {
    fe_style_in_t in;
    fe_parsed_t parsed;
    fe_collect_t result;
} req_t;

/* A request as the router and auth would leave it: path, model, account. */
static req_t *req_new(long long account)
{
    req_t *r = calloc(1, sizeof *r);
    r->in.path = "/v1beta/models/m1:generateContent";
    r->in.path_arg = "m1";
    r->in.seal.key = &key;
    r->in.seal.account_id = account;
    fe_parsed_init(&r->parsed);
    fe_collect_init(&r->result);
    return r;
}

static void req_free(req_t *r)
{
    fe_parsed_free(&r->parsed);
    fe_collect_free(&r->result);
    free(r);
}

static json_t *render(req_t *r)
{
    fe_render_ctx_t ctx = {.parsed = &r->parsed, .start_ms = 1700000000000, .request_id = "req_1", .seal = r->in.seal};
    return fe_style_gemini.render(&r->result, &ctx);
}

static json_t *render_count(req_t *r)
{
    fe_render_ctx_t ctx = {.parsed = &r->parsed, .start_ms = 1700000000000, .request_id = "req_1", .seal = r->in.seal};
    return fe_style_gemini.render_count(&r->result, &ctx);
}

/* Parses text; returns 0 or -1 (err filled). */
static int parse(req_t *r, const char *text, fe_error_t *err)
{
    json_error_t jerr;
    json_t *body = json_loads(text, 0, &jerr);
    if (!body) {
        fprintf(stderr, "bad test JSON: %s: %s\n", jerr.text, text);
        return -2;
    }
    memset(err, 0, sizeof *err);
    json_decref(r->parsed.canonical);
    r->parsed.canonical = NULL;
    free(r->parsed.model_id);
    r->parsed.model_id = NULL;
    int rc = fe_style_gemini.parse(&r->in, body, &r->parsed, err);
    json_decref(body);
    return rc;
}

static const json_t *input(const req_t *r, size_t i)
{
    return json_array_get(json_object_get(r->parsed.canonical, "input"), i);
}

static const char *str(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static void test_basics(void)
{
    req_t *r = req_new(1);
    fe_error_t err;
    CHECK_INT(parse(r,
                    "{\"contents\":[{\"parts\":[{\"text\":\"hi\"}]},{\"role\":\"model\",\"parts\":[{\"text\":\"yo\"}]},"
                    "{\"role\":\"user\",\"parts\":[{\"text\":\"a\"},{\"text\":\"b\"}]}],"
                    "\"system_instruction\":{\"parts\":[{\"text\":\"s1\"},{\"text\":\"s2\"}]},"
                    "\"generationConfig\":{\"temperature\":0.5,\"top_k\":40,\"maxOutputTokens\":\"64\","
                    "\"stopSequences\":[\"x\"],\"candidateCount\":3,\"seed\":1}}",
                    &err),
              0);
    CHECK_STR(r->parsed.model_id, "m1");
    CHECK(!r->parsed.store);
    CHECK(r->parsed.response_id[0] != '\0');
    CHECK_INT(r->parsed.n, 3);
    const json_t *c = r->parsed.canonical;
    CHECK_STR(str(c, "instructions"), "s1\ns2");
    CHECK_INT(json_integer_value(json_object_get(c, "top_k")), 40);
    CHECK_INT(json_integer_value(json_object_get(c, "max_output_tokens")), 64);
    CHECK_INT(json_integer_value(json_object_get(c, "seed")), 1);
    CHECK_STR(json_string_value(json_array_get(json_object_get(c, "stop"), 0)), "x");
    CHECK_INT(json_array_size(json_object_get(c, "input")), 3);
    CHECK_STR(str(input(r, 0), "role"), "user");
    CHECK_STR(str(json_array_get(json_object_get(input(r, 0), "content"), 0), "type"), "input_text");
    CHECK_STR(str(input(r, 1), "role"), "assistant");
    CHECK_STR(str(json_array_get(json_object_get(input(r, 1), "content"), 0), "type"), "output_text");
    CHECK_INT(json_array_size(json_object_get(input(r, 2), "content")), 2);

    /* Media: URL-safe unpadded base64 becomes standard padded base64. */
    CHECK_INT(parse(r,
                    "{\"contents\":[{\"parts\":[{\"inlineData\":{\"mimeType\":\"image/PNG\",\"data\":\"-_8\"}},"
                    "{\"inline_data\":{\"mime_type\":\"audio/mpeg\",\"data\":\"AAAA\"}},"
                    "{\"inlineData\":{\"mimeType\":\"text/plain; charset=utf-8\",\"data\":\"aGk=\"}},"
                    "{\"fileData\":{\"mimeType\":\"image/jpeg\",\"fileUri\":\"https://x/y.jpg\"}}]}]}",
                    &err),
              0);
    const json_t *parts = json_object_get(input(r, 0), "content");
    CHECK_STR(str(json_array_get(parts, 0), "image_url"), "data:image/png;base64,+/8=");
    CHECK_STR(str(json_object_get(json_array_get(parts, 1), "input_audio"), "format"), "mp3");
    CHECK_STR(str(json_array_get(parts, 2), "filename"), "file.txt");
    CHECK_STR(str(json_array_get(parts, 2), "file_data"), "data:text/plain;base64,aGk=");
    CHECK_STR(str(json_array_get(parts, 3), "image_url"), "https://x/y.jpg");
    req_free(r);
}

static void test_errors(void)
{
    req_t *r = req_new(1);
    fe_error_t err;
    CHECK_INT(parse(r, "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"foo\":1}", &err), -1);
    CHECK_INT(err.status, 400);
    CHECK_STR(err.message, "Invalid JSON payload received. Unknown name \"foo\": Cannot find field.");
    CHECK_INT(parse(r, "{\"contents\":[{\"parts\":[{\"text\":\"x\",\"bogus\":2}]}]}", &err), -1);
    CHECK_STR(err.message, "Invalid JSON payload received. Unknown name \"bogus\" at 'contents[0].parts[0]': Cannot "
                           "find field.");
    CHECK_INT(parse(r, "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"temperature\":\"hot\"}}",
                    &err),
              -1);
    CHECK_STR(err.message, "Invalid value at 'generation_config.temperature' (TYPE_FLOAT), \"hot\"");
    const char *bad[] = {
        "{}",
        "{\"contents\":[]}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        "{\"contents\":[{\"role\":\"assistant\",\"parts\":[{\"text\":\"x\"}]}]}",
        "{\"contents\":[{\"parts\":[]}]}",
        "{\"contents\":[{\"parts\":[{}]}]}",
        "{\"contents\":[{\"parts\":[{\"text\":\"x\",\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"AAAA\"}}]}]}",
        "{\"contents\":[{\"parts\":[{\"inlineData\":{\"mimeType\":\"video/mp4\",\"data\":\"AAAA\"}}]}]}",
        "{\"contents\":[{\"parts\":[{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"A\"}}]}]}",
        "{\"contents\":[{\"parts\":[{\"fileData\":{\"mimeType\":\"image/png\",\"fileUri\":\"gs://b/x.png\"}}]}]}",
        "{\"contents\":[{\"parts\":[{\"functionCall\":{\"name\":\"f\"}}]}]}",
        "{\"contents\":[{\"parts\":[{\"functionResponse\":{\"name\":\"f\",\"response\":{}}}]}]}",
        "{\"contents\":[{\"parts\":[{\"text\":\"x\",\"thoughtSignature\":\"abc\"}]}]}",
        "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"text\":\"x\",\"thoughtSignature\":\"abc\"}]}]}",
        "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"cachedContent\":\"cachedContents/1\"}",
        "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"tools\":[{\"googleMaps\":{}}]}",
        "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"candidateCount\":9}}",
        "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"responseMimeType\":\"text/csv\"}}",
        "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"responseSchema\":{\"type\":\"STRING\"}}"
        "}",
        "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"responseMimeType\":\"application/"
        "json\","
        "\"responseSchema\":{\"type\":\"WORD\"}}}",
        "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"thinkingConfig\":{\"thinkingBudget\":-"
        "2}}}",
        "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"stopSequences\":[\"1\",\"2\",\"3\","
        "\"4\","
        "\"5\",\"6\"]}}",
        "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"SOME\"}}"
        "}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = parse(r, bad[i], &err);
        CHECK_INT(rc, -1);
        CHECK_INT(err.status, 400);
        if (rc != -1)
            fprintf(stderr, "  accepted: %s\n", bad[i]);
    }
    /* safetySettings are kept for a Gemini upstream (canonical safety_settings). */
    CHECK_INT(parse(r,
                    "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"safetySettings\":[{\"category\":\"a\","
                    "\"threshold\":\"b\"}],\"labels\":{\"team\":\"t\"}}",
                    &err),
              0);
    CHECK(json_array_size(json_object_get(r->parsed.canonical, "safety_settings")) == 1);
    /* Google's stand-in signatures are accepted and stand for nothing. */
    CHECK_INT(parse(r,
                    "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"x\"}]},{\"role\":\"model\",\"parts\":"
                    "[{\"functionCall\":{\"id\":\"c1\",\"name\":\"f\",\"args\":{}},\"thoughtSignature\":"
                    "\"skip_thought_signature_validator\"}]},{\"role\":\"user\",\"parts\":[{\"functionResponse\":"
                    "{\"id\":\"c1\",\"name\":\"f\",\"response\":{}}}]}],\"tools\":[{\"functionDeclarations\":"
                    "[{\"name\":\"f\"}]}]}",
                    &err),
              0);
    /* A streaming path streams; without alt=sse as one JSON array. */
    r->in.path = "/v1beta/models/m1:streamGenerateContent";
    CHECK_INT(parse(r, "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}]}", &err), 0);
    CHECK(r->parsed.stream);
    CHECK(r->parsed.stream_style == &fe_stream_gemini_array);
    req_free(r);
}

static void test_schema_and_tools(void)
{
    req_t *r = req_new(1);
    fe_error_t err;
    CHECK_INT(
        parse(r,
              "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"responseMimeType\":"
              "\"application/json\",\"responseSchema\":{\"type\":\"OBJECT\",\"properties\":{\"a\":{\"type\":"
              "\"STRING\",\"nullable\":true,\"enum\":[\"x\",\"y\"],\"format\":\"enum\"},\"b\":{\"type\":\"ARRAY\","
              "\"items\":{\"type\":\"INTEGER\",\"minimum\":1},\"maxItems\":\"3\"},\"c\":{\"anyOf\":[{\"type\":"
              "\"NUMBER\"}],\"nullable\":true}},\"required\":[\"a\"],\"propertyOrdering\":[\"a\",\"b\"]}}}",
              &err),
        0);
    json_t *expect = json_loads("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":[\"string\",\"null\"],\"enum\":"
                                "[\"x\",\"y\",null]},\"b\":{\"type\":\"array\",\"items\":{\"type\":\"integer\","
                                "\"minimum\":1},\"maxItems\":3},\"c\":{\"anyOf\":[{\"type\":\"number\"},{\"type\":"
                                "\"null\"}]}},\"required\":[\"a\"]}",
                                0, NULL);
    const json_t *fmt = json_object_get(json_object_get(r->parsed.canonical, "text"), "format");
    CHECK_STR(str(fmt, "type"), "json_schema");
    CHECK_STR(str(fmt, "name"), "response");
    CHECK(json_is_false(json_object_get(fmt, "strict")));
    CHECK(json_equal(json_object_get(fmt, "schema"), expect));
    json_decref(expect);

    CHECK_INT(parse(r,
                    "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"responseMimeType\":"
                    "\"application/json\"}}",
                    &err),
              0);
    CHECK_STR(str(json_object_get(json_object_get(r->parsed.canonical, "text"), "format"), "type"), "json_object");

    /* ANY with two of three functions keeps those two and requires a call. */
    CHECK_INT(
        parse(r,
              "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"tools\":[{\"functionDeclarations\":["
              "{\"name\":\"f\",\"parameters\":{\"type\":\"OBJECT\",\"properties\":{\"q\":{\"type\":\"STRING\"}}}},"
              "{\"name\":\"g\"},{\"name\":\"h\",\"parametersJsonSchema\":{\"type\":\"object\"}}]}],"
              "\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"ANY\",\"allowedFunctionNames\":[\"f\",\"h\"]}}}",
              &err),
        0);
    const json_t *tools = json_object_get(r->parsed.canonical, "tools");
    CHECK_INT(json_array_size(tools), 2);
    CHECK_STR(str(json_array_get(tools, 0), "name"), "f");
    CHECK_STR(str(json_array_get(tools, 1), "name"), "h");
    CHECK(json_is_false(json_object_get(json_array_get(tools, 0), "strict")));
    CHECK_STR(str(json_object_get(
                      json_object_get(json_object_get(json_array_get(tools, 0), "parameters"), "properties"), "q"),
                  "type"),
              "string");
    CHECK_STR(json_string_value(json_object_get(r->parsed.canonical, "tool_choice")), "required");

    /* thinkingBudget -> effort. */
    static const struct {
        const char *budget, *effort;
    } efforts[] = {{"0", "none"}, {"-1", "medium"}, {"100", "low"}, {"8000", "medium"}, {"30000", "high"}};
    for (size_t i = 0; i < sizeof efforts / sizeof efforts[0]; i++) {
        char body[256];
        snprintf(body, sizeof body,
                 "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{"
                 "\"thinkingConfig\":{\"thinkingBudget\":%s}}}",
                 efforts[i].budget);
        CHECK_INT(parse(r, body, &err), 0);
        CHECK_STR(str(json_object_get(r->parsed.canonical, "reasoning"), "effort"), efforts[i].effort);
    }
    req_free(r);
}

static void test_calls(void)
{
    req_t *r = req_new(1);
    fe_error_t err;
    /* Two parallel calls of one function without ids, answered in order;
     * {"result": "..."} is the output itself, anything else compact JSON. */
    CHECK_INT(parse(r,
                    "{\"contents\":[{\"parts\":[{\"text\":\"go\"}]},{\"role\":\"model\",\"parts\":["
                    "{\"functionCall\":{\"name\":\"f\",\"args\":{\"i\":1}}},{\"functionCall\":{\"name\":\"f\","
                    "\"args\":{\"i\":2}}}]},{\"role\":\"user\",\"parts\":[{\"text\":\"after\"},"
                    "{\"functionResponse\":{\"name\":\"f\",\"response\":{\"result\":\"one\"}}},"
                    "{\"functionResponse\":{\"name\":\"f\",\"response\":{\"v\":[2]}}}]}]}",
                    &err),
              0);
    CHECK_INT(json_array_size(json_object_get(r->parsed.canonical, "input")), 6);
    const char *id1 = str(input(r, 1), "call_id"), *id2 = str(input(r, 2), "call_id");
    CHECK(id1 && id2 && strcmp(id1, id2) != 0);
    CHECK_STR(str(input(r, 1), "arguments"), "{\"i\":1}");
    CHECK_STR(str(input(r, 3), "type"), "function_call_output");
    CHECK_STR(str(input(r, 3), "call_id"), id1);
    CHECK_STR(str(input(r, 3), "output"), "one");
    CHECK_STR(str(input(r, 4), "call_id"), id2);
    CHECK_STR(str(input(r, 4), "output"), "{\"v\":[2]}");
    CHECK_STR(str(input(r, 5), "type"), "message"); /* the text after the results */

    /* A third response has no call left to answer. */
    CHECK_INT(parse(r,
                    "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"f\"}}]},"
                    "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"name\":\"f\",\"response\":{}}},"
                    "{\"functionResponse\":{\"name\":\"f\",\"response\":{}}}]}]}",
                    &err),
              -1);
    /* Ids given are kept. */
    CHECK_INT(parse(r,
                    "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"id\":\"c9\",\"name\":\"f\"}}]},"
                    "{\"role\":\"user\",\"parts\":[{\"functionResponse\":{\"id\":\"c9\",\"name\":\"f\",\"response\":{"
                    "\"output\":\"ok\"}}}]}]}",
                    &err),
              0);
    CHECK_STR(str(input(r, 0), "call_id"), "c9");
    CHECK_STR(str(input(r, 0), "arguments"), "{}");
    CHECK_STR(str(input(r, 1), "call_id"), "c9");
    CHECK_STR(str(input(r, 1), "output"), "ok");
    req_free(r);
}

/* A finished result for render: items of choice 0. */
static void set_result(req_t *r, const char *items, const char *status, const char *reason)
{
    json_decref(r->result.items);
    r->result.items = json_loads(items, 0, NULL);
    r->result.done = true;
    snprintf(r->result.status, sizeof r->result.status, "%s", status);
    snprintf(r->result.incomplete_reason, sizeof r->result.incomplete_reason, "%s", reason);
    r->result.input_tokens = 10;
    r->result.output_tokens = 7;
    r->result.reasoning_tokens = 3;
}

static const char *const RS_ITEM = "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],\"content\":[{\"type\":"
                                   "\"reasoning_text\",\"text\":\"hmm\"}]}";

static void test_render(void)
{
    req_t *r = req_new(7);
    fe_error_t err;
    CHECK_INT(parse(r,
                    "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"thinkingConfig\":{"
                    "\"includeThoughts\":true}}}",
                    &err),
              0);
    char items[1024];
    snprintf(
        items, sizeof items,
        "[%s,{\"type\":\"message\",\"id\":\"m\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
        "\"text\":\"hello\"},{\"type\":\"refusal\",\"refusal\":\"no\"}]},{\"type\":\"function_call\",\"id\":\"fc\","
        "\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\",\"thought_signature\":\"up-sig\"}]",
        RS_ITEM);
    set_result(r, items, "completed", "");
    json_t *out = render(r);
    const json_t *cand = json_array_get(json_object_get(out, "candidates"), 0);
    const json_t *parts = json_object_get(json_object_get(cand, "content"), "parts");
    CHECK_INT(json_array_size(parts), 4);
    CHECK_STR(str(json_array_get(parts, 0), "text"), "hmm");
    CHECK(json_is_true(json_object_get(json_array_get(parts, 0), "thought")));
    CHECK(json_is_string(json_object_get(json_array_get(parts, 0), "thoughtSignature")));
    CHECK_STR(str(json_array_get(parts, 1), "text"), "hello");
    CHECK(!json_object_get(json_array_get(parts, 1), "thoughtSignature"));
    CHECK_STR(str(json_array_get(parts, 2), "text"), "no");
    const json_t *fc = json_object_get(json_array_get(parts, 3), "functionCall");
    CHECK_STR(str(fc, "id"), "call_1");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(fc, "args"), "a")), 1);
    CHECK(json_is_string(json_object_get(json_array_get(parts, 3), "thoughtSignature")));
    char *text = json_dumps(out, JSON_COMPACT);
    CHECK(strstr(text, "up-sig") == NULL); /* the upstream's private signature is only inside the seal */
    free(text);
    CHECK_STR(str(cand, "finishReason"), "STOP");
    const json_t *usage = json_object_get(out, "usageMetadata");
    CHECK_INT(json_integer_value(json_object_get(usage, "candidatesTokenCount")), 4);
    CHECK_INT(json_integer_value(json_object_get(usage, "thoughtsTokenCount")), 3);
    CHECK_INT(json_integer_value(json_object_get(usage, "totalTokenCount")), 17);
    CHECK_STR(str(out, "modelVersion"), "m1");

    /* The model turn comes back: reasoning and the call (with its private
     * signature) are restored from the seals. */
    json_t *body = json_pack("{s:[{s:[{s:s}]}, O, {s:[{s:{s:s, s:s, s:{}}}]}]}", "contents", "parts", "text", "x",
                             json_object_get(cand, "content"), "parts", "functionResponse", "name", "f", "id", "call_1",
                             "response");
    json_decref(out);
    memset(&err, 0, sizeof err);
    json_decref(r->parsed.canonical);
    r->parsed.canonical = NULL;
    free(r->parsed.model_id);
    r->parsed.model_id = NULL;
    CHECK_INT(fe_style_gemini.parse(&r->in, body, &r->parsed, &err), 0);
    if (err.status)
        fprintf(stderr, "  %s\n", err.message);
    CHECK_STR(str(input(r, 1), "type"), "reasoning");
    CHECK_STR(str(input(r, 1), "id"), "rs_1");
    CHECK_STR(str(input(r, 2), "type"), "message");
    CHECK_INT(json_array_size(json_object_get(input(r, 2), "content")), 2);
    CHECK_STR(str(input(r, 3), "type"), "function_call");
    CHECK_STR(str(input(r, 3), "thought_signature"), "up-sig");
    CHECK_STR(str(input(r, 4), "type"), "function_call_output");

    /* Another account cannot open them. */
    req_t *other = req_new(8);
    memset(&err, 0, sizeof err);
    CHECK_INT(fe_style_gemini.parse(&other->in, body, &other->parsed, &err), -1);
    CHECK(strstr(err.message, "thought signature") != NULL);
    req_free(other);
    json_decref(body);

    /* Without includeThoughts: no thought part; the reasoning rides on the
     * call's signature together with the call; MAX_TOKENS when cut. */
    CHECK_INT(parse(r, "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}]}", &err), 0);
    snprintf(
        items, sizeof items,
        "[%s,{\"type\":\"function_call\",\"id\":\"fc\",\"call_id\":\"call_2\",\"name\":\"f\",\"arguments\":\"{}\"}]",
        RS_ITEM);
    set_result(r, items, "incomplete", "max_output_tokens");
    out = render(r);
    cand = json_array_get(json_object_get(out, "candidates"), 0);
    parts = json_object_get(json_object_get(cand, "content"), "parts");
    CHECK_INT(json_array_size(parts), 1);
    CHECK_STR(str(cand, "finishReason"), "MAX_TOKENS");
    const char *sig = str(json_array_get(parts, 0), "thoughtSignature");
    CHECK(sig != NULL);
    char buf[4096];
    snprintf(buf, sizeof buf,
             "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"id\":\"call_2\","
             "\"name\":\"f\",\"args\":{}},\"thoughtSignature\":\"%s\"}]}]}",
             sig ? sig : "");
    CHECK_INT(parse(r, buf, &err), 0);
    CHECK_STR(str(input(r, 0), "type"), "reasoning");
    CHECK_STR(str(input(r, 1), "call_id"), "call_2");
    /* The same signature on a text part, or on another call, is refused. */
    snprintf(buf, sizeof buf,
             "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"text\":\"t\",\"thoughtSignature\":\"%s\"}]}]}",
             sig ? sig : "");
    CHECK_INT(parse(r, buf, &err), -1);
    snprintf(buf, sizeof buf,
             "{\"contents\":[{\"role\":\"model\",\"parts\":[{\"functionCall\":{\"name\":\"g\"},"
             "\"thoughtSignature\":\"%s\"}]}]}",
             sig ? sig : "");
    CHECK_INT(parse(r, buf, &err), -1);
    json_decref(out);

    /* A content filter stop is SAFETY; reasoning alone leaves an empty text
     * part carrying its signature. */
    snprintf(items, sizeof items, "[%s]", RS_ITEM);
    set_result(r, items, "incomplete", "content_filter");
    out = render(r);
    cand = json_array_get(json_object_get(out, "candidates"), 0);
    CHECK_STR(str(cand, "finishReason"), "SAFETY");
    parts = json_object_get(json_object_get(cand, "content"), "parts");
    CHECK_STR(str(json_array_get(parts, 0), "text"), "");
    CHECK(json_is_string(json_object_get(json_array_get(parts, 0), "thoughtSignature")));
    json_decref(out);
    req_free(r);
}

/* countTokens: {contents} or {generateContentRequest}, parsed as a
 * generation; the reply is {"totalTokens": N}. */
static void test_count(void)
{
    req_t *r = req_new(1);
    r->in.path = "/v1beta/models/m1:countTokens";
    r->in.count_tokens = true;
    fe_error_t err;
    CHECK_INT(parse(r, "{\"contents\":[{\"parts\":[{\"text\":\"hi\"}]}]}", &err), 0);
    CHECK_STR(r->parsed.model_id, "m1");
    CHECK_STR(str(input(r, 0), "role"), "user");
    CHECK_INT(parse(r,
                    "{\"generateContentRequest\":{\"model\":\"models/m1\",\"contents\":[{\"role\":\"user\","
                    "\"parts\":[{\"text\":\"hi\"}]}],\"systemInstruction\":{\"parts\":[{\"text\":\"S\"}]},"
                    "\"generationConfig\":{\"temperature\":0.5}}}",
                    &err),
              0);
    CHECK_STR(str(r->parsed.canonical, "instructions"), "S");
    CHECK_STR(str(input(r, 0), "role"), "user");
    r->result.input_tokens = 17;
    json_t *out = render_count(r);
    char *text = json_dumps(out, JSON_COMPACT);
    CHECK_STR(text, "{\"totalTokens\":17}");
    free(text);
    json_decref(out);

    static const struct {
        const char *body, *needle;
    } bad[] = {
        {"{}", "contents is not specified"},
        {"{\"contents\":[]}", "contents is not specified"},
        {"{\"generateContentRequest\":{}}", "contents is not specified"},
        {"{\"contents\":[{\"parts\":[{\"text\":\"a\"}]}],\"generateContentRequest\":{\"contents\":[]}}",
         "cannot both be set"},
        {"{\"contents\":[{\"parts\":[{\"text\":\"a\"}]}],\"generationConfig\":{}}",
         "Unknown name \"generationConfig\""},
        {"{\"generateContentRequest\":[]}", "generate_content_request"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(parse(r, bad[i].body, &err), -1);
        CHECK_INT(err.status, 400);
        CHECK(strstr(err.message, bad[i].needle) != NULL);
        if (!strstr(err.message, bad[i].needle))
            fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", err.message, bad[i].needle);
    }
    req_free(r);
}

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

/* googleSearch (and googleSearchRetrieval) -> the canonical web_search tool
 * the gateway runs, excludeDomains as its blocked_domains; what the search
 * cannot honour is a 400. */
static void test_google_search(void)
{
    req_t *r = req_new(7);
    fe_error_t err;
    CHECK_INT(parse(r,
                    "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"tools\":[{\"googleSearch\":{\"excludeDomains\":"
                    "[\"a.example\"],\"searchTypes\":{\"webSearch\":{}}},\"functionDeclarations\":[{\"name\":\"f\"}]},"
                    "{\"google_search_retrieval\":{\"dynamic_retrieval_config\":{\"mode\":\"MODE_DYNAMIC\","
                    "\"dynamicThreshold\":0.3}}},{\"googleSearch\":{\"excludeDomains\":[\"b.example\"]}}],"
                    "\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"ANY\",\"allowedFunctionNames\":[\"f\"]}}}",
                    &err),
              0);
    json_t *tools = json_object_get(r->parsed.canonical, "tools");
    CHECK_INT(json_array_size(tools), 2);
    check_json(json_array_get(tools, 0),
               "{\"type\":\"web_search\",\"filters\":{\"blocked_domains\":[\"a.example\",\"b.example\"]}}");
    CHECK_STR(str(json_array_get(tools, 1), "name"), "f");
    check_json(json_object_get(r->parsed.canonical, "tool_choice"), "{\"type\":\"function\",\"name\":\"f\"}");
    CHECK_INT(
        parse(r, "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"tools\":[{\"googleSearchRetrieval\":{}}]}", &err),
        0);
    check_json(json_object_get(r->parsed.canonical, "tools"), "[{\"type\":\"web_search\"}]");
    /* ANY with several names keeps the search beside the functions it names. */
    CHECK_INT(parse(r,
                    "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"tools\":[{\"googleSearch\":{},"
                    "\"functionDeclarations\":[{\"name\":\"f\"},{\"name\":\"g\"},{\"name\":\"h\"}]}],\"toolConfig\":{"
                    "\"functionCallingConfig\":{\"mode\":\"ANY\",\"allowedFunctionNames\":[\"f\",\"h\"]}}}",
                    &err),
              0);
    tools = json_object_get(r->parsed.canonical, "tools");
    CHECK_INT(json_array_size(tools), 3);
    CHECK_STR(str(json_array_get(tools, 0), "type"), "web_search");
    CHECK_STR(str(json_array_get(tools, 2), "name"), "h");

    static const struct {
        const char *body, *needle;
    } bad[] = {
        {"\"tools\":[{\"googleSearch\":{\"timeRangeFilter\":{\"startTime\":\"2024-01-01T00:00:00Z\"}}}]",
         "time_range_filter"},
        {"\"tools\":[{\"googleSearch\":{\"searchTypes\":{\"imageSearch\":{}}}}]", "image search"},
        {"\"tools\":[{\"googleSearch\":{\"blockingConfidence\":\"BLOCK_LOW_AND_ABOVE\"}}]", "blocking_confidence"},
        {"\"tools\":[{\"googleSearch\":{\"excludeDomains\":[3]}}]", "exclude_domains[0]"},
        {"\"tools\":[{\"googleSearch\":{\"depth\":1}}]", "Unknown name \"depth\" at 'tools[0].google_search'"},
        {"\"tools\":[{\"googleSearchRetrieval\":{\"dynamicRetrievalConfig\":{\"mode\":\"ALWAYS\"}}}]", "mode"},
        {"\"tools\":[{\"googleSearch\":{}}],\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"ANY\"}}",
         "ANY needs function declarations"},
        {"\"tools\":[{\"googleSearch\":{}}],\"toolConfig\":{\"functionCallingConfig\":{\"mode\":\"ANY\","
         "\"allowedFunctionNames\":[\"web_search\"]}}",
         "is not declared in tools"},
        {"\"tools\":[{\"urlContext\":{}}]", "only functionDeclarations, googleSearch and codeExecution are"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *body = sb_xasprintf("{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],%s}", bad[i].body);
        int rc = parse(r, body, &err);
        CHECK_INT(rc, -1);
        CHECK_INT(err.status, 400);
        CHECK(strstr(err.message, bad[i].needle) != NULL);
        if (rc != -1 || !strstr(err.message, bad[i].needle))
            fprintf(stderr, "  body %s\n  message \"%s\" lacks \"%s\"\n", body, err.message, bad[i].needle);
        free(body);
    }
    req_free(r);
}

/* Web searches and citations -> the candidate's groundingMetadata; the tool
 * items make no part. Segment indexes are UTF-8 bytes of the part's text. */
static void test_grounding(void)
{
    req_t *r = req_new(7);
    fe_error_t err;
    CHECK_INT(parse(r, "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"tools\":[{\"googleSearch\":{}}]}", &err), 0);
    json_error_t jerr;
    json_t *items = json_loads(
        "[{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\",\"action\":{\"type\":\"search\","
        "\"query\":\"caf\\u00e9 hours\",\"sources\":[{\"type\":\"url\",\"url\":\"https://e.x/a\",\"title\":\"Ex A\"},"
        "{\"type\":\"url\",\"url\":\"https://f.x/b\"}]},\"sb_output\":\"private\"},"
        "{\"type\":\"web_search_call\",\"id\":\"ws_2\",\"status\":\"completed\",\"action\":{\"type\":\"open_page\","
        "\"url\":\"https://e.x/a\"}},"
        "{\"type\":\"mcp_call\",\"id\":\"mcp_1\",\"server_label\":\"d\",\"name\":\"n\",\"arguments\":\"{}\","
        "\"output\":\"o\",\"error\":null,\"status\":\"completed\"},"
        "{\"type\":\"message\",\"id\":\"m\",\"role\":\"assistant\",\"content\":["
        "{\"type\":\"output_text\",\"text\":\"Intro.\",\"annotations\":[]},"
        "{\"type\":\"output_text\",\"text\":\"Caf\\u00e9 [A](https://e.x/a) and https://g.x/.\",\"annotations\":["
        "{\"type\":\"url_citation\",\"start_index\":5,\"end_index\":23,\"url\":\"https://e.x/a\",\"title\":\"Ex A\"},"
        "{\"type\":\"url_citation\",\"start_index\":5,\"end_index\":23,\"url\":\"https://f.x/b\",\"title\":\"F\"},"
        "{\"type\":\"url_citation\",\"start_index\":28,\"end_index\":40,\"url\":\"https://g.x/\",\"title\":\"G\"},"
        "{\"type\":\"url_citation\",\"start_index\":40,\"end_index\":99,\"url\":\"https://g.x/\",\"title\":\"G\"}]}"
        "]}]",
        0, &jerr);
    if (!items)
        abort();
    json_array_extend(r->result.items, items);
    json_decref(items);
    snprintf(r->result.status, sizeof r->result.status, "completed");
    json_t *out = render(r);
    json_t *cand = json_array_get(json_object_get(out, "candidates"), 0);
    check_json(json_object_get(cand, "content"),
               "{\"parts\":[{\"text\":\"Intro.\"},{\"text\":\"Caf\\u00e9 [A](https://e.x/a) and https://g.x/.\"}],"
               "\"role\":\"model\"}");
    /* "Café " is 6 bytes for 5 code points. */
    check_json(json_object_get(cand, "groundingMetadata"),
               "{\"webSearchQueries\":[\"caf\\u00e9 hours\"],\"groundingChunks\":[{\"web\":{\"uri\":\"https://e.x/a\","
               "\"title\":\"Ex A\"}},{\"web\":{\"uri\":\"https://f.x/b\",\"title\":\"f.x\"}},{\"web\":{\"uri\":"
               "\"https://g.x/\",\"title\":\"G\"}}],\"groundingSupports\":[{\"segment\":{\"partIndex\":1,"
               "\"startIndex\":6,\"endIndex\":24,\"text\":\"[A](https://e.x/a)\"},\"groundingChunkIndices\":[0,1]},"
               "{\"segment\":{\"partIndex\":1,\"startIndex\":29,\"endIndex\":41,\"text\":\"https://g.x/\"},"
               "\"groundingChunkIndices\":[2]}]}");
    char *text = json_dumps(out, 0);
    CHECK(strstr(text, "private") == NULL);
    free(text);
    json_decref(out);

    /* A search without citations: queries and chunks only; nothing at all
     * without web search. */
    fe_collect_free(&r->result);
    fe_collect_init(&r->result);
    json_array_append_new(r->result.items,
                          json_pack("{s:s, s:s, s:{s:s, s:s, s:[{s:s, s:s}]}}", "type", "web_search_call", "status",
                                    "completed", "action", "type", "search", "query", "q", "sources", "type", "url",
                                    "url", "http://h.x:8080/p"));
    json_array_append_new(r->result.items, json_pack("{s:s, s:s, s:[{s:s, s:s}]}", "type", "message", "role",
                                                     "assistant", "content", "type", "output_text", "text", "ok"));
    out = render(r);
    check_json(json_object_get(json_array_get(json_object_get(out, "candidates"), 0), "groundingMetadata"),
               "{\"webSearchQueries\":[\"q\"],\"groundingChunks\":[{\"web\":{\"uri\":\"http://h.x:8080/p\",\"title\":"
               "\"h.x\"}}]}");
    json_decref(out);
    fe_collect_free(&r->result);
    fe_collect_init(&r->result);
    json_array_append_new(r->result.items, json_pack("{s:s, s:s, s:[{s:s, s:s}]}", "type", "message", "role",
                                                     "assistant", "content", "type", "output_text", "text", "ok"));
    out = render(r);
    CHECK(!json_object_get(json_array_get(json_object_get(out, "candidates"), 0), "groundingMetadata"));
    json_decref(out);
    req_free(r);
}

int main(void)
{
    if (sb_seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &key) != 0) {
        fprintf(stderr, "key parse failed\n");
        return 1;
    }
    test_basics();
    test_errors();
    test_schema_and_tools();
    test_calls();
    test_render();
    test_count();
    test_google_search();
    test_grounding();
    return sb_test_finish("style_gemini");
}

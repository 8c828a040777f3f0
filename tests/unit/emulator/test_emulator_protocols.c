/*
 * Unit test of the upstream emulator's other protocols: OpenAI Responses,
 * Anthropic Messages and Gemini generateContent (test_emulator.c covers Chat
 * Completions and the server core). libsbemulator runs in-process on
 * ephemeral loopback ports (its event loop on a helper thread) and libcurl
 * drives it over real HTTP. For each protocol: the reply shape, auth and
 * header errors in the provider's own error body, unknown fields, CALL tool
 * calls and the tool-result round trip, structured output, reasoning /
 * thinking with its signature or encrypted content round trip, attachments,
 * stop and length reasons, directives, streaming event sequences and the
 * journal (credential headers by name only); and the fault modes in each
 * provider's own shape (status and Retry-After, quota, context length,
 * endless streams, resets, trickle, route faults on generation and token
 * counting, per-model counters).
 */
#include <curl/curl.h>
#include <event2/event.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu.h"
#include "sb_test.h"

#define KEY "sk-emu-test"

struct server {
    struct event_base *base;
    struct sb_emu *open_emu;  /* no key */
    struct sb_emu *keyed_emu; /* --require-key KEY */
    struct event *stop_ev;
    int stop_pipe[2];
    pthread_t thread;
};

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopbreak(arg);
}

static void *loop_main(void *arg)
{
    struct server *s = arg;
    event_base_dispatch(s->base);
    return NULL;
}

static int server_start(struct server *s)
{
    memset(s, 0, sizeof *s);
    s->base = event_base_new();
    struct sb_emu_config open_cfg = {.host = "127.0.0.1", .port = 0};
    struct sb_emu_config keyed_cfg = {.host = "127.0.0.1", .port = 0, .require_key = KEY};
    s->open_emu = sb_emu_new(s->base, &open_cfg);
    s->keyed_emu = sb_emu_new(s->base, &keyed_cfg);
    if (!s->open_emu || !s->keyed_emu || pipe(s->stop_pipe) < 0)
        return -1;
    s->stop_ev = event_new(s->base, s->stop_pipe[0], EV_READ, on_stop, s->base);
    event_add(s->stop_ev, NULL);
    return pthread_create(&s->thread, NULL, loop_main, s) == 0 ? 0 : -1;
}

static void server_stop(struct server *s)
{
    if (write(s->stop_pipe[1], "x", 1) != 1)
        return;
    pthread_join(s->thread, NULL);
    event_free(s->stop_ev);
    close(s->stop_pipe[0]);
    close(s->stop_pipe[1]);
    sb_emu_destroy(&s->open_emu);
    sb_emu_destroy(&s->keyed_emu);
    event_base_free(s->base);
}

/* ---- a tiny blocking HTTP client ------------------------------------------------- */

struct resp {
    long status;
    char *body;
    size_t len;
    char *headers;
    size_t hlen;
    json_t *json; /* the body parsed, or NULL */
    CURLcode rc;
    size_t pieces;       /* body callbacks (one per read) */
    size_t small_pieces; /* of those, the ones of at most 16 bytes (a trickled body) */
};

static size_t append(char **buf, size_t *len, const char *data, size_t n)
{
    *buf = realloc(*buf, *len + n + 1);
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
    return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct resp *r = arg;
    r->pieces++;
    if (size * nmemb <= 16)
        r->small_pieces++;
    return append(&r->body, &r->len, data, size * nmemb);
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    struct resp *r = arg;
    return append(&r->headers, &r->hlen, data, size * nmemb);
}

/*
 * Bodies are written with single quotes for readability: ' becomes " and a
 * backtick becomes \" (a quote inside a JSON string).
 */
static char *unquote(const char *sq)
{
    size_t n = strlen(sq);
    char *out = malloc(2 * n + 1), *o = out;
    for (const char *p = sq; *p; p++) {
        if (*p == '\'') {
            *o++ = '"';
        } else if (*p == '`') {
            *o++ = '\\';
            *o++ = '"';
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}

/*
 * One request; headers is a NULL-terminated list ("Name: value"); Content-Type JSON is added with a body.
 * timeout_ms bounds the whole transfer (an endless stream ends with CURLE_OPERATION_TIMEDOUT).
 */
static struct resp http_timeout(struct sb_emu *emu, const char *method, const char *path, const char *sq_body,
                                const char *const *headers, long timeout_ms)
{
    struct resp r = {0};
    r.body = calloc(1, 1);
    r.headers = calloc(1, 1);
    char url[512];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", sb_emu_port(emu), path);
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    char *body = sq_body ? unquote(sq_body) : NULL;
    if (body)
        h = curl_slist_append(h, "Content-Type: application/json");
    for (size_t i = 0; headers && headers[i]; i++)
        h = curl_slist_append(h, headers[i]);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    r.rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(body);
    r.json = json_loads(r.body, 0, NULL);
    return r;
}

static struct resp http(struct sb_emu *emu, const char *method, const char *path, const char *sq_body,
                        const char *const *headers)
{
    return http_timeout(emu, method, path, sq_body, headers, 5000L);
}

static void resp_free(struct resp *r)
{
    free(r->body);
    free(r->headers);
    json_decref(r->json);
}

/* A JSON value by a path of keys and indexes: "a.b.0.c". */
static json_t *at(json_t *root, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", path);
    json_t *cur = root;
    for (char *tok = strtok(buf, "."); tok && cur; tok = strtok(NULL, ".")) {
        if (json_is_array(cur))
            cur = json_array_get(cur, (size_t)strtoul(tok, NULL, 10));
        else
            cur = json_object_get(cur, tok);
    }
    return cur;
}

static const char *s_at(json_t *root, const char *path)
{
    return json_string_value(at(root, path));
}

static long long i_at(json_t *root, const char *path)
{
    return json_integer_value(at(root, path));
}

static bool starts_with(const char *s, const char *prefix)
{
    return s && !strncmp(s, prefix, strlen(prefix));
}

static bool contains(const char *s, const char *needle)
{
    return s && strstr(s, needle);
}

#define CHECK_PREFIX(s, prefix)                                                                                        \
    do {                                                                                                               \
        const char *cp_s_ = (s);                                                                                       \
        if (!starts_with(cp_s_, prefix))                                                                               \
            fprintf(stderr, "  got:    %s\n  wanted: %s...\n", cp_s_ ? cp_s_ : "(null)", prefix);                      \
        CHECK(starts_with(cp_s_, prefix));                                                                             \
    } while (0)

/* ---- SSE ---------------------------------------------------------------------------- */

#define MAX_EVENTS 256

struct sse {
    size_t n;
    char *names[MAX_EVENTS]; /* "event:" lines, or NULL */
    json_t *data[MAX_EVENTS];
    bool crlf; /* events ended with \r\n\r\n */
};

static void sse_parse(const char *body, struct sse *out)
{
    memset(out, 0, sizeof *out);
    const char *p = body;
    while (*p && out->n < MAX_EVENTS) {
        const char *end = strstr(p, "\r\n\r\n");
        const char *lf = strstr(p, "\n\n");
        size_t seplen = 2;
        if (end && (!lf || end < lf)) {
            seplen = 4;
            out->crlf = true;
        } else {
            end = lf;
        }
        if (!end)
            break;
        char *ev = strndup(p, (size_t)(end - p));
        for (char *line = strtok(ev, "\r\n"); line; line = strtok(NULL, "\r\n")) {
            if (!strncmp(line, "event: ", 7))
                out->names[out->n] = strdup(line + 7);
            else if (!strncmp(line, "data: ", 6))
                out->data[out->n] = json_loads(line + 6, 0, NULL);
        }
        free(ev);
        out->n++;
        p = end + seplen;
    }
}

static void sse_free(struct sse *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->names[i]);
        json_decref(s->data[i]);
    }
}

static const char *const RESP_AUTH[] = {"Authorization: Bearer " KEY, NULL};
static const char *const ANT_HEADERS[] = {"x-api-key: " KEY, "anthropic-version: 2023-06-01", NULL};
static const char *const GEM_HEADERS[] = {"x-goog-api-key: " KEY, NULL};

#define WEATHER_RESP_TOOL                                                                                              \
    "{'type':'function','name':'get_weather','parameters':{'type':'object','properties':{'city':{'type':'string'}},"   \
    "'required':['city'],'additionalProperties':false}}"

/* ======================================================================================= */
/* OpenAI Responses                                                                          */
/* ======================================================================================= */

static struct resp responses(struct sb_emu *emu, const char *sq)
{
    return http(emu, "POST", "/v1/responses", sq, RESP_AUTH);
}

static void expect_openai_400(struct sb_emu *emu, const char *sq, int status, const char *msg_prefix, const char *param,
                              const char *code)
{
    struct resp r = responses(emu, sq);
    CHECK_INT(r.status, status);
    CHECK_STR(s_at(r.json, "error.type"), "invalid_request_error");
    CHECK_PREFIX(s_at(r.json, "error.message"), msg_prefix);
    if (param)
        CHECK_STR(s_at(r.json, "error.param"), param);
    if (code)
        CHECK_STR(s_at(r.json, "error.code"), code);
    resp_free(&r);
}

/* The text of the message item of a Response (the last output item). */
static const char *resp_text(json_t *j)
{
    json_t *out = json_object_get(j, "output");
    json_t *msg = json_array_get(out, json_array_size(out) - 1);
    return s_at(msg, "content.0.text");
}

static void test_responses_shape(struct sb_emu *emu)
{
    struct resp r =
        responses(emu, "{'model':'gpt-x','instructions':'be brief','store':false,"
                       "'input':[{'role':'user','content':[{'type':'input_text','text':'hello  world'}]}]}");
    CHECK_INT(r.status, 200);
    json_t *j = r.json;
    CHECK_PREFIX(s_at(j, "id"), "resp_");
    CHECK_STR(s_at(j, "object"), "response");
    CHECK(json_is_integer(at(j, "created_at")));
    CHECK_STR(s_at(j, "status"), "completed");
    CHECK_STR(s_at(j, "model"), "gpt-x");
    CHECK(json_is_null(at(j, "error")));
    CHECK(json_is_null(at(j, "incomplete_details")));
    CHECK_STR(s_at(j, "instructions"), "be brief");
    CHECK(json_is_false(at(j, "store")));
    CHECK_INT(json_array_size(at(j, "output")), 1);
    CHECK_PREFIX(s_at(j, "output.0.id"), "msg_");
    CHECK_STR(s_at(j, "output.0.type"), "message");
    CHECK_STR(s_at(j, "output.0.role"), "assistant");
    CHECK_STR(s_at(j, "output.0.status"), "completed");
    CHECK_STR(s_at(j, "output.0.content.0.type"), "output_text");
    CHECK_STR(s_at(j, "output.0.content.0.text"), "You said: hello  world");
    CHECK(json_is_array(at(j, "output.0.content.0.annotations")));
    /* input: 4 + 2 (instructions) + 4 + 2 (message); output: 4 words */
    CHECK_INT(i_at(j, "usage.input_tokens"), 12);
    CHECK_INT(i_at(j, "usage.output_tokens"), 4);
    CHECK_INT(i_at(j, "usage.total_tokens"), 16);
    CHECK_INT(i_at(j, "usage.output_tokens_details.reasoning_tokens"), 0);
    CHECK_INT(i_at(j, "usage.input_tokens_details.cached_tokens"), 0);
    resp_free(&r);

    /* A string input is one user message. */
    r = responses(emu, "{'model':'m','input':'just text'}");
    CHECK_STR(resp_text(r.json), "You said: just text");
    resp_free(&r);

    /* Attachments are acknowledged as in Chat Completions. */
    r = responses(emu, "{'model':'m','input':[{'role':'user','content':[{'type':'input_text','text':'look'},"
                       "{'type':'input_image','image_url':'data:image/png;base64,aGVsbG8=','detail':'auto'},"
                       "{'type':'input_image','image_url':'https://x/c.png'},"
                       "{'type':'input_file','filename':'a.txt','file_data':'data:text/plain;base64,aGVsbG8='},"
                       "{'type':'input_file','file_id':'file-abc'}]}]}");
    CHECK_INT(r.status, 200);
    CHECK_STR(resp_text(r.json), "You said: look [image: data:image/png, 5 bytes] [image: https://x/c.png] "
                                 "[file: a.txt, text/plain, 5 bytes: hello] [file: file-abc]");
    CHECK_INT(i_at(r.json, "usage.input_tokens"), 4 + 1 + 85 + 85);
    resp_free(&r);

    /* POST /v1/responses/input_tokens: usage.input_tokens of the same input,
     * only the parameters that endpoint takes. */
    r = http(emu, "POST", "/v1/responses/input_tokens",
             "{'model':'gpt-x','instructions':'be brief',"
             "'input':[{'role':'user','content':[{'type':'input_text','text':'hello  world'}]}]}",
             RESP_AUTH);
    CHECK_INT(r.status, 200);
    CHECK_STR(s_at(r.json, "object"), "response.input_tokens");
    CHECK_INT(i_at(r.json, "input_tokens"), 12);
    resp_free(&r);
    r = http(emu, "POST", "/v1/responses/input_tokens", "{'input':'just text'}", RESP_AUTH);
    CHECK_INT(r.status, 200);
    CHECK_INT(i_at(r.json, "input_tokens"), 4 + 2);
    resp_free(&r);
    r = http(emu, "POST", "/v1/responses/input_tokens", "{'model':'m','input':'x','max_output_tokens':16}", RESP_AUTH);
    CHECK_INT(r.status, 400);
    CHECK_STR(s_at(r.json, "error.message"), "Unknown parameter: 'max_output_tokens'.");
    resp_free(&r);
}

static void test_responses_errors(struct sb_emu *emu, struct sb_emu *keyed)
{
    struct resp r = http(keyed, "POST", "/v1/responses", "{'model':'m','input':'x'}", NULL);
    CHECK_INT(r.status, 401);
    CHECK_STR(s_at(r.json, "error.code"), "invalid_api_key");
    resp_free(&r);
    r = http(keyed, "POST", "/v1/responses", "{'model':'m','input':'x'}", RESP_AUTH);
    CHECK_INT(r.status, 200);
    resp_free(&r);

    expect_openai_400(emu, "{'model':'m','input':'x','foo':1}", 400, "Unknown parameter: 'foo'.", "foo",
                      "unknown_parameter");
    expect_openai_400(emu, "{'model':'m','input':[{'role':'user','content':'x','foo':1}]}", 400,
                      "Unknown parameter: 'input[0].foo'.", "input[0].foo", "unknown_parameter");
    expect_openai_400(emu, "{'model':'m','input':[{'role':'user','content':[{'type':'text','text':'x'}]}]}", 400,
                      "Invalid value: 'text'.", "input[0].content[0].type", "invalid_value");
    expect_openai_400(emu, "{'model':'m','input':[{'role':'assistant','content':[{'type':'input_text','text':'x'}]}]}",
                      400, "Invalid value: 'input_text'. Supported values are: 'output_text' and 'refusal'.", NULL,
                      NULL);
    /* A Chat Completions tool or response_format sent to Responses. */
    expect_openai_400(emu, "{'model':'m','input':'x','tools':[{'type':'function','function':{'name':'f'}}]}", 400,
                      "Missing required parameter: 'tools[0].name'.", "tools[0].name", NULL);
    expect_openai_400(emu, "{'model':'m','input':'x','response_format':{'type':'json_object'}}", 400,
                      "Unknown parameter: 'response_format'.", NULL, NULL);
    expect_openai_400(emu, "{'model':'m','input':'x','max_output_tokens':5}", 400,
                      "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16",
                      "max_output_tokens", NULL);
    expect_openai_400(emu, "{'model':'m','input':'x','temperature':'hot'}", 400,
                      "Invalid type for 'temperature': expected a number, but got a string instead.", NULL,
                      "invalid_type");
    expect_openai_400(emu, "{'model':'m','input':'x','include':['reasoning.everything']}", 400,
                      "Invalid value:", "include[0]", NULL);
    /* Nothing is stored: previous_response_id fails as after store:false. */
    expect_openai_400(emu, "{'model':'m','input':'x','store':false,'previous_response_id':'resp_123'}", 400,
                      "Previous response with id 'resp_123' not found.", "previous_response_id",
                      "previous_response_not_found");
    expect_openai_400(emu, "{'model':'m','input':'x','stream_options':{'include_obfuscation':false}}", 400,
                      "The 'stream_options' parameter is only allowed when 'stream' is enabled.", NULL, NULL);

    r = responses(emu, "{'model':'m','input':'x [[emu:status=503]]'}");
    CHECK_INT(r.status, 503);
    CHECK_STR(s_at(r.json, "error.message"), "emulated upstream error 503");
    CHECK_STR(s_at(r.json, "error.type"), "server_error");
    resp_free(&r);
    r = responses(emu, "{'model':'m','input':'x [[emu:status=429]]'}");
    CHECK_INT(r.status, 429);
    CHECK(contains(r.headers, "Retry-After: 1"));
    resp_free(&r);
    r = responses(emu, "{'model':'m','input':'x [[emu:malformed]]'}");
    CHECK_INT(r.status, 200);
    CHECK(r.json == NULL);
    resp_free(&r);
    expect_openai_400(emu, "{'model':'m','input':'x [[emu:nope]]'}", 400, "unknown emulator directive", NULL, NULL);
}

static void test_responses_tools(struct sb_emu *emu)
{
    struct resp r = responses(emu, "{'model':'m','tools':[" WEATHER_RESP_TOOL "],"
                                   "'input':'CALL get_weather {`city`:`Paris`}'}");
    CHECK_INT(r.status, 200);
    json_t *fc = at(r.json, "output.0");
    CHECK_STR(s_at(fc, "type"), "function_call");
    CHECK_PREFIX(s_at(fc, "id"), "fc_");
    CHECK_PREFIX(s_at(fc, "call_id"), "call_");
    CHECK_STR(s_at(fc, "name"), "get_weather");
    CHECK_STR(s_at(fc, "arguments"), "{\"city\":\"Paris\"}");
    CHECK_STR(s_at(fc, "status"), "completed");
    CHECK_STR(s_at(r.json, "status"), "completed");
    resp_free(&r);

    /* The round trip: the call and its output come back as items. */
    r = responses(emu, "{'model':'m','store':false,'tools':[" WEATHER_RESP_TOOL "],'input':["
                       "{'role':'user','content':'CALL get_weather {`city`:`Paris`}'},"
                       "{'type':'function_call','call_id':'call_1','name':'get_weather','arguments':'{}'},"
                       "{'type':'function_call_output','call_id':'call_1','output':'sunny, 21C'}]}");
    CHECK_INT(r.status, 200);
    CHECK_STR(resp_text(r.json), "Tool result: sunny, 21C");
    resp_free(&r);
    r = responses(
        emu, "{'model':'m','tools':[" WEATHER_RESP_TOOL "],'input':["
             "{'role':'user','content':'x'},"
             "{'type':'function_call','call_id':'call_1','name':'get_weather','arguments':'{}'},"
             "{'type':'function_call_output','call_id':'call_1','output':[{'type':'input_text','text':'rain'}]}]}");
    CHECK_STR(resp_text(r.json), "Tool result: rain");
    resp_free(&r);
    expect_openai_400(emu,
                      "{'model':'m','input':[{'role':'user','content':'x'},"
                      "{'type':'function_call_output','call_id':'call_9','output':'x'}]}",
                      400, "No tool call found for function call output with call_id call_9.", "input", NULL);
    expect_openai_400(emu,
                      "{'model':'m','input':[{'role':'user','content':'x'},"
                      "{'type':'function_call','call_id':'call_9','name':'f','arguments':'{}'}]}",
                      400, "No tool output found for function call call_9.", "input", NULL);
    expect_openai_400(emu, "{'model':'m','tools':[" WEATHER_RESP_TOOL "],'input':'CALL nope {}'}", 400,
                      "CALL directive: function 'nope' is not among the request's tools", NULL, NULL);

    /* tool_choice forces a call with arguments generated from the schema. */
    r = responses(emu, "{'model':'m','tools':[" WEATHER_RESP_TOOL "],'tool_choice':"
                       "{'type':'function','name':'get_weather'},'input':'Paris'}");
    CHECK_STR(s_at(r.json, "output.0.arguments"), "{\"city\":\"Paris\"}");
    resp_free(&r);
    expect_openai_400(emu,
                      "{'model':'m','tools':[" WEATHER_RESP_TOOL "],'tool_choice':{'type':'function',"
                      "'name':'nope'},'input':'x'}",
                      400, "Tool choice 'function' not found in 'tools' parameter.", "tool_choice", NULL);

    /* A built-in web search passes through: a web_search_call item, then the answer. */
    r = responses(emu, "{'model':'m','tools':[{'type':'web_search'}],'input':'weather in Oslo'}");
    CHECK_INT(r.status, 200);
    CHECK_STR(s_at(r.json, "output.0.type"), "web_search_call");
    CHECK_PREFIX(s_at(r.json, "output.0.id"), "ws_");
    CHECK_STR(s_at(r.json, "output.0.status"), "completed");
    CHECK_STR(s_at(r.json, "output.0.action.query"), "weather in Oslo");
    CHECK_STR(resp_text(r.json), "Searched: weather in Oslo");
    resp_free(&r);
}

static void test_responses_structured_reasoning(struct sb_emu *emu)
{
    struct resp r = responses(emu, "{'model':'m','text':{'format':{'type':'json_schema','name':'card','strict':true,"
                                   "'schema':{'type':'object','properties':{'title':{'type':'string'},'n':{'type':"
                                   "'integer'}},'required':['title','n'],'additionalProperties':false}}},"
                                   "'input':'Ada [[emu:latency=1]]'}");
    CHECK_INT(r.status, 200);
    CHECK_STR(resp_text(r.json), "{\"title\":\"Ada\",\"n\":0}");
    CHECK_STR(s_at(r.json, "text.format.name"), "card");
    resp_free(&r);
    r = responses(emu, "{'model':'m','text':{'format':{'type':'json_schema','name':'card','schema':{'type':'object',"
                       "'properties':{'title':{'type':'string'}},'required':['title']}}},"
                       "'input':'Ada [[emu:schema_violation]]'}");
    CHECK_STR(resp_text(r.json), "{}");
    resp_free(&r);
    expect_openai_400(emu,
                      "{'model':'m','text':{'format':{'type':'json_schema','json_schema':{'name':'x'}}},"
                      "'input':'x'}",
                      400, "Missing required parameter: 'text.format.name'.", NULL, NULL);

    /* Reasoning in the clear: a reasoning item with reasoning_text content. */
    r = responses(emu, "{'model':'m','reasoning':{'effort':'low'},'input':'why'}");
    CHECK_STR(s_at(r.json, "output.0.type"), "reasoning");
    CHECK_PREFIX(s_at(r.json, "output.0.id"), "rs_");
    CHECK_INT(json_array_size(at(r.json, "output.0.summary")), 0);
    CHECK_STR(s_at(r.json, "output.0.content.0.type"), "reasoning_text");
    CHECK_STR(s_at(r.json, "output.0.content.0.text"), "Reasoning (low) about: why");
    CHECK(at(r.json, "output.0.encrypted_content") == NULL);
    CHECK_INT(i_at(r.json, "usage.output_tokens_details.reasoning_tokens"), 4);
    CHECK_INT(i_at(r.json, "usage.output_tokens"), 4 + 3); /* reasoning + "You said: why" */
    resp_free(&r);
    r = responses(emu, "{'model':'m','reasoning':{'effort':'high','summary':'auto'},'input':'why'}");
    CHECK_STR(s_at(r.json, "output.0.summary.0.type"), "summary_text");
    CHECK_STR(s_at(r.json, "output.0.summary.0.text"), "Reasoning (high) about: why");
    resp_free(&r);

    /* Encrypted reasoning (store:false + include) and its round trip. */
    r = responses(emu, "{'model':'m','store':false,'include':['reasoning.encrypted_content'],"
                       "'reasoning':{'effort':'medium'},'input':'why'}");
    const char *enc = s_at(r.json, "output.0.encrypted_content");
    CHECK_STR(enc, "emu-enc:UmVhc29uaW5nIChtZWRpdW0pIGFib3V0OiB3aHk="); /* "Reasoning (medium) about: why" */
    CHECK(at(r.json, "output.0.content") == NULL);
    resp_free(&r);
    r = responses(emu, "{'model':'m','store':false,'include':['reasoning.encrypted_content'],'input':["
                       "{'role':'user','content':'why'},"
                       "{'type':'reasoning','id':'rs_1','summary':[],"
                       "'encrypted_content':'emu-enc:UmVhc29uaW5nIChtZWRpdW0pIGFib3V0OiB3aHk='},"
                       "{'type':'message','role':'assistant','content':[{'type':'output_text','text':'because'}]},"
                       "{'role':'user','content':'and then'}]}");
    CHECK_INT(r.status, 200);
    CHECK_STR(resp_text(r.json), "You said: and then [reasoning seen: Reasoning (medium) about: why]");
    resp_free(&r);
    expect_openai_400(emu,
                      "{'model':'m','store':false,'input':[{'role':'user','content':'why'},"
                      "{'type':'reasoning','id':'rs_1','summary':[],'encrypted_content':'gAAAAAbogusbogusDQ=='},"
                      "{'role':'user','content':'x'}]}",
                      400, "The encrypted content gAAA...DQ== could not be verified.", NULL,
                      "invalid_encrypted_content");
    expect_openai_400(emu,
                      "{'model':'m','store':false,'input':[{'role':'user','content':'why'},"
                      "{'type':'reasoning','id':'rs_1','summary':[]},{'role':'user','content':'x'}]}",
                      404, "Item with id 'rs_1' not found. Items are not persisted when `store` is set to false.",
                      "input", NULL);
    expect_openai_400(emu,
                      "{'model':'m','input':[{'role':'user','content':'why'},"
                      "{'type':'reasoning','id':'rs_1','summary':[],'encrypted_content':'emu-enc:eA=='}]}",
                      400, "Item 'rs_1' of type 'reasoning' was provided without its required following item.", NULL,
                      NULL);
}

static void test_responses_length_refusal(struct sb_emu *emu)
{
    struct resp r = responses(emu, "{'model':'m','input':'one two three [[emu:length]]'}");
    CHECK_STR(s_at(r.json, "status"), "incomplete");
    CHECK_STR(s_at(r.json, "incomplete_details.reason"), "max_output_tokens");
    CHECK_STR(s_at(r.json, "output.0.status"), "incomplete");
    CHECK_STR(resp_text(r.json), "You");
    resp_free(&r);
    r = responses(emu, "{'model':'m','max_output_tokens':16,'input':'a b c d e f g h i j k l m n o p q r s'}");
    CHECK_STR(s_at(r.json, "status"), "incomplete");
    CHECK_STR(resp_text(r.json), "You said: a b c d e f g h i j k l m n");
    CHECK_INT(i_at(r.json, "max_output_tokens"), 16);
    resp_free(&r);
    r = responses(emu, "{'model':'m','input':'bad [[emu:refuse]]'}");
    CHECK_STR(s_at(r.json, "output.0.content.0.type"), "refusal");
    CHECK_STR(s_at(r.json, "output.0.content.0.refusal"), "I'm sorry, I can't help with that.");
    resp_free(&r);
}

static void test_responses_stream(struct sb_emu *emu)
{
    struct resp r = responses(emu, "{'model':'m','stream':true,'reasoning':{'effort':'low'},'input':'hi there'}");
    CHECK_INT(r.status, 200);
    CHECK(contains(r.headers, "text/event-stream"));
    struct sse s;
    sse_parse(r.body, &s);
    CHECK(s.n > 8);
    CHECK_STR(s.names[0], "response.created");
    CHECK_STR(s.names[1], "response.in_progress");
    CHECK_STR(s.names[s.n - 1], "response.completed");
    char text[256] = "", reasoning[256] = "";
    bool seq_ok = true;
    for (size_t i = 0; i < s.n; i++) {
        CHECK_STR(s_at(s.data[i], "type"), s.names[i]);
        seq_ok = seq_ok && i_at(s.data[i], "sequence_number") == (long long)i;
        if (!strcmp(s.names[i], "response.output_text.delta"))
            strncat(text, s_at(s.data[i], "delta"), sizeof text - strlen(text) - 1);
        if (!strcmp(s.names[i], "response.reasoning_text.delta"))
            strncat(reasoning, s_at(s.data[i], "delta"), sizeof reasoning - strlen(reasoning) - 1);
    }
    CHECK(seq_ok);
    CHECK_STR(text, "You said: hi there");
    CHECK_STR(reasoning, "Reasoning (low) about: hi there");
    CHECK_STR(s_at(s.data[0], "response.status"), "in_progress");
    json_t *done = s.data[s.n - 1];
    CHECK_STR(s_at(done, "response.status"), "completed");
    CHECK_STR(s_at(done, "response.output.1.content.0.text"), "You said: hi there");
    CHECK_INT(i_at(done, "response.usage.output_tokens_details.reasoning_tokens"), 5);
    sse_free(&s);
    resp_free(&r);

    r = responses(emu, "{'model':'m','stream':true,'tools':[" WEATHER_RESP_TOOL "],"
                       "'input':'CALL get_weather {`city`:`Paris`}'}");
    sse_parse(r.body, &s);
    char args[128] = "";
    bool added = false, args_done = false;
    for (size_t i = 0; i < s.n; i++) {
        if (!strcmp(s.names[i], "response.output_item.added"))
            added = !strcmp(s_at(s.data[i], "item.type"), "function_call") &&
                    !strcmp(s_at(s.data[i], "item.arguments"), "");
        if (!strcmp(s.names[i], "response.function_call_arguments.delta"))
            strncat(args, s_at(s.data[i], "delta"), sizeof args - strlen(args) - 1);
        if (!strcmp(s.names[i], "response.function_call_arguments.done"))
            args_done = !strcmp(s_at(s.data[i], "arguments"), "{\"city\":\"Paris\"}");
    }
    CHECK(added);
    CHECK(args_done);
    CHECK_STR(args, "{\"city\":\"Paris\"}");
    sse_free(&s);
    resp_free(&r);

    r = responses(emu, "{'model':'m','stream':true,'input':'a b [[emu:length]]'}");
    sse_parse(r.body, &s);
    CHECK_STR(s.names[s.n - 1], "response.incomplete");
    CHECK_STR(s_at(s.data[s.n - 1], "response.incomplete_details.reason"), "max_output_tokens");
    sse_free(&s);
    resp_free(&r);
}

/* ======================================================================================= */
/* Anthropic Messages                                                                        */
/* ======================================================================================= */

#define WEATHER_ANT_TOOL                                                                                               \
    "{'name':'get_weather','description':'w','input_schema':{'type':'object','properties':{'city':{'type':'string'}}," \
    "'required':['city']}}"

static struct resp messages(struct sb_emu *emu, const char *sq)
{
    return http(emu, "POST", "/v1/messages", sq, ANT_HEADERS);
}

static void expect_ant_error(struct resp *r, int status, const char *type, const char *msg_prefix)
{
    CHECK_INT(r->status, status);
    CHECK_STR(s_at(r->json, "type"), "error");
    CHECK_STR(s_at(r->json, "error.type"), type);
    CHECK_PREFIX(s_at(r->json, "error.message"), msg_prefix);
    CHECK_PREFIX(s_at(r->json, "request_id"), "req_");
    resp_free(r);
}

static void expect_ant_400(struct sb_emu *emu, const char *sq, const char *msg_prefix)
{
    struct resp r = messages(emu, sq);
    expect_ant_error(&r, 400, "invalid_request_error", msg_prefix);
}

/* The text of the last content block. */
static const char *ant_text(json_t *j)
{
    json_t *c = json_object_get(j, "content");
    return s_at(json_array_get(c, json_array_size(c) - 1), "text");
}

static void test_anthropic_shape(struct sb_emu *emu)
{
    struct resp r = messages(emu, "{'model':'claude-x','max_tokens':100,'system':'be brief',"
                                  "'messages':[{'role':'user','content':'hello  world'}]}");
    CHECK_INT(r.status, 200);
    json_t *j = r.json;
    CHECK_PREFIX(s_at(j, "id"), "msg_");
    CHECK_STR(s_at(j, "type"), "message");
    CHECK_STR(s_at(j, "role"), "assistant");
    CHECK_STR(s_at(j, "model"), "claude-x");
    CHECK_INT(json_array_size(at(j, "content")), 1);
    CHECK_STR(s_at(j, "content.0.type"), "text");
    CHECK_STR(s_at(j, "content.0.text"), "You said: hello  world");
    CHECK_STR(s_at(j, "stop_reason"), "end_turn");
    CHECK(json_is_null(at(j, "stop_sequence")));
    CHECK_INT(i_at(j, "usage.input_tokens"), 6 + 6);
    CHECK_INT(i_at(j, "usage.output_tokens"), 4);
    CHECK_INT(i_at(j, "usage.cache_creation_input_tokens"), 0);
    CHECK_INT(i_at(j, "usage.cache_read_input_tokens"), 0);
    CHECK(contains(r.headers, "request-id: req_"));
    resp_free(&r);

    /* Images and documents are acknowledged like Chat attachments. */
    r = messages(emu,
                 "{'model':'c','max_tokens':100,'messages':[{'role':'user','content':["
                 "{'type':'text','text':'look'},"
                 "{'type':'image','source':{'type':'base64','media_type':'image/png','data':'aGVsbG8='}},"
                 "{'type':'image','source':{'type':'url','url':'https://x/c.png'}},"
                 "{'type':'document','title':'notes.txt','source':{'type':'text','media_type':'text/plain',"
                 "'data':'hello'}},"
                 "{'type':'document','source':{'type':'base64','media_type':'application/pdf','data':'JVBERg=='}}]}]}");
    CHECK_INT(r.status, 200);
    CHECK_STR(ant_text(r.json), "You said: look [image: data:image/png, 5 bytes] [image: https://x/c.png] "
                                "[file: notes.txt, text/plain, 5 bytes: hello] [file: file, application/pdf, 4 bytes]");
    resp_free(&r);

    /* System messages inside the conversation (API 2026-10-21 SDKs type them) count but are not echoed. */
    r = messages(emu, "{'model':'c','max_tokens':100,'messages':[{'role':'system','content':'be terse'},"
                      "{'role':'user','content':'hi'},{'role':'system','content':[{'type':'text','text':'ok'}]}]}");
    CHECK_INT(r.status, 200);
    CHECK_STR(ant_text(r.json), "You said: hi");
    CHECK_INT(i_at(r.json, "usage.input_tokens"), 6 + 5 + 5);
    resp_free(&r);
    expect_ant_400(emu,
                   "{'model':'c','max_tokens':100,'messages':[{'role':'system','content':[{'type':'image',"
                   "'source':{'type':'url','url':'https://x'}}]},{'role':'user','content':'hi'}]}",
                   "messages.0.content.0: Input tag 'image' found using 'type' does not match any of the expected "
                   "tags: 'text'");

    r = http(emu, "POST", "/v1/messages/count_tokens",
             "{'model':'c','messages':[{'role':'user','content':'one two three'}]}", ANT_HEADERS);
    CHECK_INT(r.status, 200);
    CHECK_INT(i_at(r.json, "input_tokens"), 7);
    resp_free(&r);
    r = http(emu, "GET", "/v1/models", NULL, ANT_HEADERS);
    CHECK_STR(s_at(r.json, "data.0.type"), "model");
    CHECK(json_is_false(at(r.json, "has_more")));
    resp_free(&r);
}

static void test_anthropic_errors(struct sb_emu *emu, struct sb_emu *keyed)
{
    const char *body = "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'x'}]}";
    static const char *const no_key[] = {"anthropic-version: 2023-06-01", NULL};
    static const char *const bad_key[] = {"x-api-key: nope", "anthropic-version: 2023-06-01", NULL};
    static const char *const bearer[] = {"Authorization: Bearer " KEY, "anthropic-version: 2023-06-01", NULL};
    static const char *const no_version[] = {"x-api-key: " KEY, NULL};
    static const char *const bad_version[] = {"x-api-key: " KEY, "anthropic-version: 2024-10-22", NULL};
    static const char *const bad_beta[] = {"x-api-key: " KEY, "anthropic-version: 2023-06-01",
                                           "anthropic-beta: everything", NULL};
    struct resp r = http(keyed, "POST", "/v1/messages", body, no_key);
    expect_ant_error(&r, 401, "authentication_error", "x-api-key header is required");
    r = http(keyed, "POST", "/v1/messages", body, bad_key);
    expect_ant_error(&r, 401, "authentication_error", "invalid x-api-key");
    /* Since API version 2026-10-21 the SDKs send the key as a bearer token; the API takes both. */
    r = http(keyed, "POST", "/v1/messages", body, bearer);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(keyed, "POST", "/v1/messages", body, no_version);
    expect_ant_error(&r, 400, "invalid_request_error", "anthropic-version: header is required");
    r = http(keyed, "POST", "/v1/messages", body, bad_version);
    expect_ant_error(&r, 400, "invalid_request_error", "anthropic-version: \"2024-10-22\" is not a valid version");
    r = http(keyed, "POST", "/v1/messages", body, bad_beta);
    expect_ant_error(&r, 400, "invalid_request_error", "Unexpected value(s) `everything` for the `anthropic-beta`");
    r = http(keyed, "POST", "/v1/messages", body, ANT_HEADERS);
    CHECK_INT(r.status, 200);
    resp_free(&r);

    /* 2026-10-21: no sampling parameters, no document in assistant turns, no citations in user text. */
    static const char *const v2026[] = {"x-api-key: " KEY, "anthropic-version: 2026-10-21", NULL};
    r = http(keyed, "POST", "/v1/messages", body, v2026);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(keyed, "POST", "/v1/messages",
             "{'model':'c','max_tokens':10,'temperature':1.0,'messages':[{'role':'user','content':'x'}]}", v2026);
    expect_ant_error(&r, 400, "invalid_request_error", "temperature: Extra inputs are not permitted");
    r = http(keyed, "POST", "/v1/messages",
             "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'x'},{'role':'assistant','content':"
             "[{'type':'document','source':{'type':'text','media_type':'text/plain','data':'d'}}]},"
             "{'role':'user','content':'y'}]}",
             v2026);
    expect_ant_error(&r, 400, "invalid_request_error",
                     "messages.1.content.0: `document` blocks are not allowed in `assistant` messages");
    r = http(keyed, "POST", "/v1/messages",
             "{'model':'c','max_tokens':10,'temperature':0.5,'messages':[{'role':'user','content':'x'}]}", ANT_HEADERS);
    CHECK_INT(r.status, 200); /* 2023-06-01 still takes them */
    resp_free(&r);

    expect_ant_400(emu, "{'model':'c','messages':[{'role':'user','content':'x'}]}", "max_tokens: Field required");
    expect_ant_400(emu, "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'x'}],'foo':1}",
                   "foo: Extra inputs are not permitted");
    expect_ant_400(emu,
                   "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':[{'type':'text',"
                   "'text':'x','foo':1}]}]}",
                   "messages.0.content.0.text.foo: Extra inputs are not permitted");
    expect_ant_400(emu, "{'model':'c','max_tokens':10,'messages':[{'role':'tool','content':'x'}]}",
                   "messages.0.role: Input should be 'user', 'assistant' or 'system'");
    expect_ant_400(emu, "{'model':'c','max_tokens':10,'messages':[]}",
                   "messages: List should have at least 1 item after validation, not 0");
    expect_ant_400(emu,
                   "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':[{'type':'image_url',"
                   "'image_url':{'url':'https://x'}}]}]}",
                   "messages.0.content.0: Input tag 'image_url' found using 'type' does not match");
    expect_ant_400(emu,
                   "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':[{'type':'image',"
                   "'source':{'type':'base64','media_type':'image/bmp','data':'aGVsbG8='}}]}]}",
                   "messages.0.content.0.image.source.base64.media_type: Input should be 'image/jpeg'");
    expect_ant_400(emu, "{'model':'c','max_tokens':10,'temperature':1.5,'messages':[{'role':'user','content':'x'}]}",
                   "temperature: Input should be less than or equal to 1");
    expect_ant_400(emu,
                   "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'x'}],"
                   "'output_format':{'type':'json_schema','schema':{'type':'object'}}}",
                   "output_format: Extra inputs are not permitted");
    expect_ant_400(emu,
                   "{'model':'c','max_tokens':10,'tool_choice':{'type':'any'},"
                   "'messages':[{'role':'user','content':'x'}]}",
                   "tool_choice may only be specified while providing tools.");

    r = messages(emu, "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'x [[emu:status=529]]'}]}");
    expect_ant_error(&r, 529, "overloaded_error", "Overloaded");
    r = messages(emu, "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'x [[emu:status=429]]'}]}");
    CHECK(contains(r.headers, "retry-after: 1"));
    expect_ant_error(&r, 429, "rate_limit_error", "emulated upstream error 429");
    r = messages(emu, "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'x [[emu:status=500]]'}]}");
    expect_ant_error(&r, 500, "api_error", "emulated upstream error 500");
}

static void test_anthropic_tools(struct sb_emu *emu)
{
    struct resp r = messages(emu, "{'model':'c','max_tokens':100,'tools':[" WEATHER_ANT_TOOL "],"
                                  "'messages':[{'role':'user','content':'CALL get_weather {`city`:`Paris`}'}]}");
    CHECK_INT(r.status, 200);
    CHECK_STR(s_at(r.json, "stop_reason"), "tool_use");
    CHECK_STR(s_at(r.json, "content.0.type"), "tool_use");
    CHECK_PREFIX(s_at(r.json, "content.0.id"), "toolu_");
    CHECK_STR(s_at(r.json, "content.0.name"), "get_weather");
    CHECK_STR(s_at(r.json, "content.0.input.city"), "Paris");
    resp_free(&r);

    r = messages(emu, "{'model':'c','max_tokens':100,'tools':[" WEATHER_ANT_TOOL "],'messages':["
                      "{'role':'user','content':'CALL get_weather {`city`:`Paris`}'},"
                      "{'role':'assistant','content':[{'type':'tool_use','id':'toolu_1','name':'get_weather',"
                      "'input':{'city':'Paris'}}]},"
                      "{'role':'user','content':[{'type':'tool_result','tool_use_id':'toolu_1','content':"
                      "[{'type':'text','text':'sunny'}]}]}]}");
    CHECK_INT(r.status, 200);
    CHECK_STR(ant_text(r.json), "Tool result: sunny");
    CHECK_STR(s_at(r.json, "stop_reason"), "end_turn");
    resp_free(&r);
    expect_ant_400(emu,
                   "{'model':'c','max_tokens':100,'tools':[" WEATHER_ANT_TOOL "],'messages':["
                   "{'role':'user','content':'x'},"
                   "{'role':'assistant','content':[{'type':'tool_use','id':'toolu_1','name':'get_weather',"
                   "'input':{}}]},"
                   "{'role':'user','content':[{'type':'tool_result','tool_use_id':'toolu_1','content':'a'},"
                   "{'type':'tool_result','tool_use_id':'toolu_2','content':'b'}]}]}",
                   "messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_2. Each "
                   "`tool_result` block must have a corresponding `tool_use` block in the previous message.");
    expect_ant_400(emu,
                   "{'model':'c','max_tokens':100,'tools':[" WEATHER_ANT_TOOL "],'messages':["
                   "{'role':'user','content':'x'},"
                   "{'role':'assistant','content':[{'type':'tool_use','id':'toolu_1','name':'get_weather',"
                   "'input':{}}]},{'role':'user','content':'no result'}]}",
                   "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1.");
    expect_ant_400(emu,
                   "{'model':'c','max_tokens':100,'tools':[" WEATHER_ANT_TOOL "],"
                   "'messages':[{'role':'user','content':'CALL get_weather [1]'}]}",
                   "CALL directive: arguments for 'get_weather' must be a JSON object");

    /* tool_choice tool / any: a call with arguments generated from input_schema. */
    r = messages(emu,
                 "{'model':'c','max_tokens':100,'tools':[" WEATHER_ANT_TOOL "],"
                 "'tool_choice':{'type':'tool','name':'get_weather'},'messages':[{'role':'user','content':'Oslo'}]}");
    CHECK_STR(s_at(r.json, "content.0.input.city"), "Oslo");
    resp_free(&r);

    /* Structured output: output_config.format, and the beta output_format with its header. */
    r = messages(emu, "{'model':'c','max_tokens':100,'output_config':{'format':{'type':'json_schema','schema':"
                      "{'type':'object','properties':{'title':{'type':'string'}},'required':['title'],"
                      "'additionalProperties':false}}},'messages':[{'role':'user','content':'Ada'}]}");
    CHECK_INT(r.status, 200);
    CHECK_STR(ant_text(r.json), "{\"title\":\"Ada\"}");
    resp_free(&r);
    /* schema_violation_once: the first request with the tag breaks the schema, a retry does not. */
    const char *once = "{'model':'c','max_tokens':100,'output_config':{'format':{'type':'json_schema','schema':"
                       "{'type':'object','properties':{'title':{'type':'string'}},'required':['title']}}},"
                       "'messages':[{'role':'user','content':'Ada [[emu:schema_violation_once=ant-once-1]]'}]}";
    r = messages(emu, once);
    CHECK_STR(ant_text(r.json), "{}");
    resp_free(&r);
    r = messages(emu, once);
    CHECK_STR(ant_text(r.json), "{\"title\":\"Ada\"}");
    resp_free(&r);
    static const char *const beta[] = {"x-api-key: " KEY, "anthropic-version: 2023-06-01",
                                       "anthropic-beta: structured-outputs-2025-11-13", NULL};
    r = http(emu, "POST", "/v1/messages",
             "{'model':'c','max_tokens':100,'output_format':{'type':'json_schema','schema':{'type':'object',"
             "'properties':{'title':{'type':'string'}}}},'messages':[{'role':'user','content':'Ada'}]}",
             beta);
    CHECK_INT(r.status, 200);
    CHECK_STR(ant_text(r.json), "{\"title\":\"Ada\"}");
    resp_free(&r);

    /* Web search (a server tool) passes through. */
    r = messages(emu, "{'model':'c','max_tokens':100,'tools':[{'type':'web_search_20250305','name':'web_search'}],"
                      "'messages':[{'role':'user','content':'weather in Oslo'}]}");
    CHECK_STR(s_at(r.json, "content.0.type"), "server_tool_use");
    CHECK_STR(s_at(r.json, "content.0.input.query"), "weather in Oslo");
    CHECK_STR(s_at(r.json, "content.1.type"), "web_search_tool_result");
    CHECK_STR(ant_text(r.json), "Searched: weather in Oslo");
    resp_free(&r);
}

static void test_anthropic_thinking(struct sb_emu *emu)
{
    struct resp r = messages(emu, "{'model':'c','max_tokens':2000,'thinking':{'type':'enabled','budget_tokens':1024},"
                                  "'tools':[" WEATHER_ANT_TOOL "],"
                                  "'messages':[{'role':'user','content':'CALL get_weather {`city`:`Paris`}'}]}");
    CHECK_INT(r.status, 200);
    CHECK_STR(s_at(r.json, "content.0.type"), "thinking");
    const char *thinking = s_at(r.json, "content.0.thinking");
    CHECK_STR(thinking, "Reasoning (1024) about: CALL get_weather {\"city\":\"Paris\"}");
    CHECK_PREFIX(s_at(r.json, "content.0.signature"), "emu-sig:");
    CHECK_STR(s_at(r.json, "content.1.type"), "tool_use");
    char *prior = json_dumps(json_array_get(json_object_get(r.json, "content"), 0), JSON_COMPACT);
    char *tool_use = json_dumps(json_array_get(json_object_get(r.json, "content"), 1), JSON_COMPACT);
    resp_free(&r);

    /* The signed thinking block comes back before the tool_use: accepted. */
    char body[4096];
    json_t *tu = json_loads(tool_use, 0, NULL);
    snprintf(body, sizeof body,
             "{\"model\":\"c\",\"max_tokens\":2000,\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":1024},"
             "\"tools\":[{\"name\":\"get_weather\",\"input_schema\":{\"type\":\"object\"}}],\"messages\":["
             "{\"role\":\"user\",\"content\":\"weather\"},{\"role\":\"assistant\",\"content\":[%s,%s]},"
             "{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"tool_use_id\":\"%s\","
             "\"content\":\"rain\"}]}]}",
             prior, tool_use, s_at(tu, "id"));
    json_t *req = json_loads(body, 0, NULL);
    CHECK(req != NULL);
    char *ok_body = json_dumps(req, JSON_COMPACT);
    r = messages(emu, ok_body);
    CHECK_INT(r.status, 200);
    CHECK_STR(s_at(r.json, "content.0.type"), "thinking");
    CHECK_STR(s_at(r.json, "content.0.thinking"), "Reasoning (1024) about: weather");
    CHECK_STR(ant_text(r.json), "Tool result: rain");
    resp_free(&r);

    /* A tampered signature: 400. */
    json_t *msgs = json_object_get(req, "messages");
    json_t *blk = json_array_get(json_object_get(json_array_get(msgs, 1), "content"), 0);
    json_object_set_new(blk, "signature", json_string("emu-sig:dGFtcGVyZWQ="));
    char *bad_body = json_dumps(req, JSON_COMPACT);
    r = messages(emu, bad_body);
    expect_ant_error(&r, 400, "invalid_request_error", "messages.1.content.0: Invalid `signature` in `thinking` block");
    /* The thinking block dropped: 400 (thinking enabled, the tool_use turn must start with it). */
    json_array_remove(json_object_get(json_array_get(msgs, 1), "content"), 0);
    char *dropped = json_dumps(req, JSON_COMPACT);
    r = messages(emu, dropped);
    expect_ant_error(&r, 400, "invalid_request_error",
                     "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`.");
    free(prior);
    free(tool_use);
    free(ok_body);
    free(bad_body);
    free(dropped);
    json_decref(tu);
    json_decref(req);

    expect_ant_400(emu,
                   "{'model':'c','max_tokens':2000,'thinking':{'type':'enabled','budget_tokens':100},"
                   "'messages':[{'role':'user','content':'x'}]}",
                   "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024");
    expect_ant_400(emu,
                   "{'model':'c','max_tokens':1024,'thinking':{'type':'enabled','budget_tokens':1024},"
                   "'messages':[{'role':'user','content':'x'}]}",
                   "`max_tokens` must be greater than `thinking.budget_tokens`.");
    expect_ant_400(emu,
                   "{'model':'c','max_tokens':2000,'temperature':0.5,'thinking':{'type':'enabled',"
                   "'budget_tokens':1024},'messages':[{'role':'user','content':'x'}]}",
                   "`temperature` may only be set to 1 when thinking is enabled.");
    r = messages(emu, "{'model':'c','max_tokens':2000,'thinking':{'type':'enabled','budget_tokens':1500},"
                      "'messages':[{'role':'user','content':'deep'}]}");
    CHECK_INT(i_at(r.json, "usage.output_tokens"), 4 + 3); /* "Reasoning (1500) about: deep" + "You said: deep" */
    resp_free(&r);
}

static void test_anthropic_stops(struct sb_emu *emu)
{
    struct resp r =
        messages(emu, "{'model':'c','max_tokens':2,'messages':[{'role':'user','content':'one two three'}]}");
    CHECK_STR(s_at(r.json, "stop_reason"), "max_tokens");
    CHECK_STR(ant_text(r.json), "You said:");
    resp_free(&r);
    r = messages(emu, "{'model':'c','max_tokens':50,'messages':[{'role':'user','content':'one two [[emu:length]]'}]}");
    CHECK_STR(s_at(r.json, "stop_reason"), "max_tokens");
    CHECK_STR(ant_text(r.json), "You");
    resp_free(&r);
    r = messages(emu, "{'model':'c','max_tokens':50,'stop_sequences':['END','two'],"
                      "'messages':[{'role':'user','content':'one two three'}]}");
    CHECK_STR(s_at(r.json, "stop_reason"), "stop_sequence");
    CHECK_STR(s_at(r.json, "stop_sequence"), "two");
    CHECK_STR(ant_text(r.json), "You said: one ");
    resp_free(&r);
    r = messages(emu, "{'model':'c','max_tokens':50,'messages':[{'role':'user','content':'bad [[emu:refuse]]'}]}");
    CHECK_STR(s_at(r.json, "stop_reason"), "refusal");
    resp_free(&r);
}

static void test_anthropic_stream(struct sb_emu *emu)
{
    struct resp r = messages(emu, "{'model':'c','max_tokens':2000,'stream':true,'thinking':{'type':'enabled',"
                                  "'budget_tokens':1024},'messages':[{'role':'user','content':'hi there'}]}");
    CHECK_INT(r.status, 200);
    CHECK(contains(r.headers, "text/event-stream"));
    struct sse s;
    sse_parse(r.body, &s);
    CHECK_STR(s.names[0], "message_start");
    CHECK_STR(s_at(s.data[0], "message.role"), "assistant");
    CHECK_INT(json_array_size(at(s.data[0], "message.content")), 0);
    CHECK_STR(s.names[1], "content_block_start");
    CHECK_STR(s_at(s.data[1], "content_block.type"), "thinking");
    CHECK_STR(s.names[2], "ping");
    CHECK_STR(s.names[s.n - 2], "message_delta");
    CHECK_STR(s_at(s.data[s.n - 2], "delta.stop_reason"), "end_turn");
    CHECK_STR(s.names[s.n - 1], "message_stop");
    char text[256] = "", thinking[256] = "";
    const char *sig = NULL;
    for (size_t i = 0; i < s.n; i++) {
        CHECK_STR(s_at(s.data[i], "type"), s.names[i]);
        if (strcmp(s.names[i], "content_block_delta"))
            continue;
        const char *dt = s_at(s.data[i], "delta.type");
        if (!strcmp(dt, "text_delta"))
            strncat(text, s_at(s.data[i], "delta.text"), sizeof text - strlen(text) - 1);
        else if (!strcmp(dt, "thinking_delta"))
            strncat(thinking, s_at(s.data[i], "delta.thinking"), sizeof thinking - strlen(thinking) - 1);
        else if (!strcmp(dt, "signature_delta"))
            sig = s_at(s.data[i], "delta.signature");
    }
    CHECK_STR(text, "You said: hi there");
    CHECK_STR(thinking, "Reasoning (1024) about: hi there");
    CHECK_PREFIX(sig, "emu-sig:");
    sse_free(&s);
    resp_free(&r);

    r = messages(emu, "{'model':'c','max_tokens':100,'stream':true,'tools':[" WEATHER_ANT_TOOL "],"
                      "'messages':[{'role':'user','content':'CALL get_weather {`city`:`Paris`}'}]}");
    sse_parse(r.body, &s);
    char json[128] = "";
    for (size_t i = 0; i < s.n; i++)
        if (!strcmp(s.names[i], "content_block_delta"))
            strncat(json, s_at(s.data[i], "delta.partial_json"), sizeof json - strlen(json) - 1);
    CHECK_STR(json, "{\"city\":\"Paris\"}");
    CHECK_STR(s_at(s.data[1], "content_block.type"), "tool_use");
    CHECK_STR(s_at(s.data[s.n - 2], "delta.stop_reason"), "tool_use");
    sse_free(&s);
    resp_free(&r);
}

/* ======================================================================================= */
/* Gemini                                                                                    */
/* ======================================================================================= */

#define WEATHER_GEM_TOOL                                                                                               \
    "{'functionDeclarations':[{'name':'get_weather','description':'w','parameters':{'type':'OBJECT','properties':"     \
    "{'city':{'type':'STRING'}},'required':['city']}}]}"

static struct resp gemini(struct sb_emu *emu, const char *method, const char *sq)
{
    char path[128];
    snprintf(path, sizeof path, "/v1beta/models/gemini-x:%s", method);
    return http(emu, "POST", path, sq, GEM_HEADERS);
}

static void expect_google_error(struct resp *r, int code, const char *status, const char *msg_prefix)
{
    CHECK_INT(r->status, code);
    CHECK_INT(i_at(r->json, "error.code"), code);
    CHECK_STR(s_at(r->json, "error.status"), status);
    CHECK_PREFIX(s_at(r->json, "error.message"), msg_prefix);
    resp_free(r);
}

static void expect_gem_400(struct sb_emu *emu, const char *sq, const char *msg_prefix)
{
    struct resp r = gemini(emu, "generateContent", sq);
    expect_google_error(&r, 400, "INVALID_ARGUMENT", msg_prefix);
}

static void test_gemini_shape(struct sb_emu *emu)
{
    struct resp r = gemini(emu, "generateContent",
                           "{'systemInstruction':{'parts':[{'text':'be brief'}]},"
                           "'contents':[{'role':'user','parts':[{'text':'hello  world'}]}]}");
    CHECK_INT(r.status, 200);
    json_t *j = r.json;
    CHECK_STR(s_at(j, "candidates.0.content.role"), "model");
    CHECK_STR(s_at(j, "candidates.0.content.parts.0.text"), "You said: hello  world");
    CHECK_STR(s_at(j, "candidates.0.finishReason"), "STOP");
    CHECK_INT(i_at(j, "candidates.0.index"), 0);
    CHECK_INT(i_at(j, "usageMetadata.promptTokenCount"), 6 + 6);
    CHECK_INT(i_at(j, "usageMetadata.candidatesTokenCount"), 4);
    CHECK_INT(i_at(j, "usageMetadata.totalTokenCount"), 16);
    CHECK(at(j, "usageMetadata.thoughtsTokenCount") == NULL);
    CHECK_STR(s_at(j, "modelVersion"), "gemini-x");
    CHECK(json_string_length(at(j, "responseId")) > 0);
    resp_free(&r);

    /* snake_case names are accepted, as by proto3 JSON; no role means user. */
    r = gemini(emu, "generateContent",
               "{'contents':[{'parts':[{'text':'a b c d'}]}],"
               "'generation_config':{'max_output_tokens':3}}");
    CHECK_INT(r.status, 200);
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.text"), "You said: a");
    CHECK_STR(s_at(r.json, "candidates.0.finishReason"), "MAX_TOKENS");
    resp_free(&r);

    r = gemini(emu, "generateContent",
               "{'contents':[{'role':'user','parts':[{'text':'look'},"
               "{'inlineData':{'mimeType':'image/png','data':'aGVsbG8='}},"
               "{'inlineData':{'mimeType':'audio/wav','data':'aGVsbG8='}},"
               "{'inlineData':{'mimeType':'text/plain','data':'aGVsbG8='}},"
               "{'fileData':{'mimeType':'application/pdf','fileUri':'https://x/d.pdf'}}]}]}");
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.text"),
              "You said: look [image: data:image/png, 5 bytes] [audio: wav, 5 bytes] "
              "[file: file, text/plain, 5 bytes: hello] [file: https://x/d.pdf]");
    resp_free(&r);

    r = gemini(emu, "generateContent",
               "{'contents':[{'parts':[{'text':'hi'}]}],'generationConfig':"
               "{'candidateCount':2,'stopSequences':['hi']}}");
    CHECK_INT(json_array_size(at(r.json, "candidates")), 2);
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.text"), "You said: ");
    CHECK_STR(s_at(r.json, "candidates.0.finishReason"), "STOP");
    CHECK_INT(i_at(r.json, "candidates.1.index"), 1);
    resp_free(&r);
    r = gemini(emu, "generateContent",
               "{'contents':[{'parts':[{'text':'hello'}]}],'generationConfig':"
               "{'candidateCount':2}}");
    CHECK_STR(s_at(r.json, "candidates.1.content.parts.0.text"), "You said: hello #1");
    resp_free(&r);
    r = gemini(emu, "generateContent", "{'contents':[{'parts':[{'text':'a b [[emu:length]]'}]}]}");
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.text"), "You");
    CHECK_STR(s_at(r.json, "candidates.0.finishReason"), "MAX_TOKENS");
    resp_free(&r);
    r = gemini(emu, "generateContent", "{'contents':[{'parts':[{'text':'bad [[emu:refuse]]'}]}]}");
    CHECK_STR(s_at(r.json, "candidates.0.finishReason"), "SAFETY");
    CHECK(at(r.json, "candidates.0.content") == NULL);
    resp_free(&r);

    r = gemini(emu, "countTokens", "{'contents':[{'parts':[{'text':'one two three'}]}]}");
    CHECK_INT(i_at(r.json, "totalTokens"), 7);
    resp_free(&r);
    r = http(emu, "GET", "/v1beta/models", NULL, GEM_HEADERS);
    CHECK_STR(s_at(r.json, "models.0.name"), "models/emu-model");
    resp_free(&r);
    r = http(emu, "GET", "/v1beta/models/nope", NULL, GEM_HEADERS);
    expect_google_error(&r, 404, "NOT_FOUND", "models/nope is not found for API version v1beta");
}

static void test_gemini_errors(struct sb_emu *emu, struct sb_emu *keyed)
{
    const char *body = "{'contents':[{'parts':[{'text':'x'}]}]}";
    struct resp r = http(keyed, "POST", "/v1beta/models/g:generateContent", body, NULL);
    expect_google_error(&r, 403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers");
    static const char *const bad[] = {"x-goog-api-key: nope", NULL};
    r = http(keyed, "POST", "/v1beta/models/g:generateContent", body, bad);
    CHECK_STR(s_at(r.json, "error.details.0.reason"), "API_KEY_INVALID");
    expect_google_error(&r, 400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.");
    r = http(keyed, "POST", "/v1beta/models/g:generateContent?key=" KEY, body, NULL);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(keyed, "POST", "/v1beta/models/g:generateContent", body, GEM_HEADERS);
    CHECK_INT(r.status, 200);
    resp_free(&r);

    r = gemini(emu, "generateContent", "{'contents':[{'parts':[{'text':'x'}]}],'foo':1}");
    CHECK_STR(s_at(r.json, "error.details.0.@type"), "type.googleapis.com/google.rpc.BadRequest");
    expect_google_error(&r, 400, "INVALID_ARGUMENT",
                        "Invalid JSON payload received. Unknown name \"foo\": Cannot find field.");
    r = gemini(emu, "generateContent", "{'contents':[{'parts':[{'text':'x'}]}],'generationConfig':{'max_tokens':5}}");
    CHECK_STR(s_at(r.json, "error.details.0.fieldViolations.0.field"), "generation_config");
    expect_google_error(&r, 400, "INVALID_ARGUMENT",
                        "Invalid JSON payload received. Unknown name \"max_tokens\" at 'generation_config': Cannot "
                        "find field.");
    /* JSON Schema keywords the Schema proto lacks are unknown names too. */
    expect_gem_400(emu,
                   "{'contents':[{'parts':[{'text':'x'}]}],'tools':[{'functionDeclarations':[{'name':'f',"
                   "'parameters':{'type':'object','additionalProperties':false}}]}]}",
                   "Invalid JSON payload received. Unknown name \"additionalProperties\" at "
                   "'tools[0].function_declarations[0].parameters': Cannot find field.");
    expect_gem_400(emu, "{'contents':[{'role':'assistant','parts':[{'text':'x'}]}]}",
                   "Please use a valid role: user, model.");
    expect_gem_400(emu, "{'contents':[]}", "* GenerateContentRequest.contents: contents is not specified");
    expect_gem_400(emu, "{'contents':[{'parts':[{}]}]}",
                   "* GenerateContentRequest.contents[0].parts[0].data: required oneof field 'data' must have one "
                   "initialized field");
    expect_gem_400(emu, "{'contents':[{'parts':[{'inlineData':{'mimeType':'image/png','data':'***'}}]}]}",
                   "Invalid value at 'contents[0].parts[0].inline_data.data' (TYPE_BYTES), Base64 decoding failed");
    expect_gem_400(emu,
                   "{'contents':[{'parts':[{'text':'x'}]}],'toolConfig':{'functionCallingConfig':"
                   "{'mode':'SOMETIMES'}}}",
                   "Invalid value at 'tool_config.function_calling_config.mode'");

    r = gemini(emu, "generateContent", "{'contents':[{'parts':[{'text':'x [[emu:status=503]]'}]}]}");
    expect_google_error(&r, 503, "UNAVAILABLE", "emulated upstream error 503");
    r = gemini(emu, "generateContent", "{'contents':[{'parts':[{'text':'x [[emu:status=429]]'}]}]}");
    CHECK(contains(r.headers, "Retry-After: 1"));
    expect_google_error(&r, 429, "RESOURCE_EXHAUSTED", "emulated upstream error 429");
}

static void test_gemini_tools(struct sb_emu *emu)
{
    struct resp r = gemini(emu, "generateContent",
                           "{'tools':[" WEATHER_GEM_TOOL "],'contents':[{'role':'user',"
                           "'parts':[{'text':'CALL get_weather {`city`:`Paris`}'}]}]}");
    CHECK_INT(r.status, 200);
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.functionCall.name"), "get_weather");
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.functionCall.args.city"), "Paris");
    CHECK(at(r.json, "candidates.0.content.parts.0.thoughtSignature") == NULL); /* not thinking */
    CHECK_STR(s_at(r.json, "candidates.0.finishReason"), "STOP");
    resp_free(&r);

    r = gemini(emu, "generateContent",
               "{'tools':[" WEATHER_GEM_TOOL "],'contents':["
               "{'role':'user','parts':[{'text':'weather?'}]},"
               "{'role':'model','parts':[{'functionCall':{'name':'get_weather','args':"
               "{'city':'Paris'}}}]},"
               "{'role':'user','parts':[{'functionResponse':{'name':'get_weather','response':"
               "{'result':'sunny'}}}]}]}");
    CHECK_INT(r.status, 200);
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.text"), "Tool result: sunny");
    resp_free(&r);
    expect_gem_400(emu,
                   "{'contents':[{'role':'user','parts':[{'text':'x'}]},{'role':'user','parts':"
                   "[{'functionResponse':{'name':'f','response':{}}}]}]}",
                   "Please ensure that function response turn comes immediately after a function call turn.");
    expect_gem_400(emu,
                   "{'contents':[{'role':'user','parts':[{'text':'x'}]},{'role':'model','parts':"
                   "[{'functionCall':{'name':'f','args':{}}}]},{'role':'user','parts':[{'functionResponse':"
                   "{'name':'g','response':{}}}]}]}",
                   "* GenerateContentRequest.contents[2].parts[0].function_response.name: function response 'g'");
    expect_gem_400(emu,
                   "{'contents':[{'role':'user','parts':[{'text':'x'}]},{'role':'model','parts':"
                   "[{'functionCall':{'name':'f','args':{}}},{'functionCall':{'name':'f','args':{}}}]},"
                   "{'role':'user','parts':[{'functionResponse':{'name':'f','response':{}}}]}]}",
                   "Please ensure that the number of function response parts is equal to the number of function "
                   "call parts of the function call turn.");

    /* ANY forces a call, arguments generated from the (OpenAPI-style) parameters. */
    r = gemini(emu, "generateContent",
               "{'tools':[" WEATHER_GEM_TOOL "],'toolConfig':{'functionCallingConfig':"
               "{'mode':'ANY','allowedFunctionNames':['get_weather']}},"
               "'contents':[{'parts':[{'text':'Oslo'}]}]}");
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.functionCall.args.city"), "Oslo");
    resp_free(&r);

    /* Structured output: responseSchema (OpenAPI subset) and responseJsonSchema. */
    r = gemini(emu, "generateContent",
               "{'contents':[{'parts':[{'text':'Ada'}]}],'generationConfig':{"
               "'responseMimeType':'application/json','responseSchema':{'type':'OBJECT',"
               "'properties':{'title':{'type':'STRING'},'n':{'type':'INTEGER',"
               "'nullable':true}},'required':['title','n']}}}");
    CHECK_INT(r.status, 200);
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.text"), "{\"title\":\"Ada\",\"n\":0}");
    resp_free(&r);
    r = gemini(emu, "generateContent",
               "{'contents':[{'parts':[{'text':'Ada'}]}],'generationConfig':{"
               "'responseMimeType':'application/json','responseJsonSchema':{'type':'object',"
               "'properties':{'title':{'type':'string'}},'required':['title'],"
               "'additionalProperties':false}}}");
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.text"), "{\"title\":\"Ada\"}");
    resp_free(&r);
    r = gemini(emu, "generateContent",
               "{'contents':[{'parts':[{'text':'Ada'}]}],'generationConfig':{"
               "'responseMimeType':'text/x.enum','responseSchema':{'type':'STRING',"
               "'enum':['red','green']}}}");
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.text"), "red");
    resp_free(&r);
    expect_gem_400(emu,
                   "{'contents':[{'parts':[{'text':'x'}]}],'generationConfig':{'responseSchema':"
                   "{'type':'STRING'}}}",
                   "* GenerateContentRequest.generation_config.response_mime_type:");
}

static void test_gemini_thinking(struct sb_emu *emu)
{
    struct resp r = gemini(emu, "generateContent",
                           "{'contents':[{'parts':[{'text':'why'}]}],'generationConfig':"
                           "{'thinkingConfig':{'includeThoughts':true,'thinkingBudget':1024}}}");
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.text"), "Reasoning (1024) about: why");
    CHECK(json_is_true(at(r.json, "candidates.0.content.parts.0.thought")));
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.1.text"), "You said: why");
    CHECK_INT(i_at(r.json, "usageMetadata.thoughtsTokenCount"), 4);
    CHECK_INT(i_at(r.json, "usageMetadata.totalTokenCount"), 5 + 3 + 4);
    resp_free(&r);
    /* Thinking without includeThoughts: counted, not shown. */
    r = gemini(emu, "generateContent",
               "{'contents':[{'parts':[{'text':'why'}]}],'generationConfig':"
               "{'thinkingConfig':{'thinkingLevel':'low'}}}");
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.text"), "You said: why");
    CHECK_INT(i_at(r.json, "usageMetadata.thoughtsTokenCount"), 4);
    resp_free(&r);

    /* A function call while thinking carries a thought signature, required back on the next turn. */
    r = gemini(emu, "generateContent",
               "{'tools':[" WEATHER_GEM_TOOL "],'generationConfig':{'thinkingConfig':"
               "{'thinkingBudget':-1}},'contents':[{'role':'user','parts':[{'text':"
               "'CALL get_weather {`city`:`Paris`}'}]}]}");
    const char *sig = s_at(r.json, "candidates.0.content.parts.0.thoughtSignature");
    CHECK_STR(sig, "ZW11LXRzOmdldF93ZWF0aGVy"); /* base64("emu-ts:get_weather") */
    resp_free(&r);
    const char *with_sig =
        "{'tools':[" WEATHER_GEM_TOOL "],'generationConfig':{'thinkingConfig':{'thinkingBudget':-1}},'contents':["
        "{'role':'user','parts':[{'text':'weather?'}]},"
        "{'role':'model','parts':[{'functionCall':{'name':'get_weather','args':{'city':'Paris'}},"
        "'thoughtSignature':'ZW11LXRzOmdldF93ZWF0aGVy'}]},"
        "{'role':'user','parts':[{'functionResponse':{'name':'get_weather','response':{'result':'rain'}}}]}]}";
    r = gemini(emu, "generateContent", with_sig);
    CHECK_INT(r.status, 200);
    CHECK_STR(s_at(r.json, "candidates.0.content.parts.0.text"), "Tool result: rain");
    resp_free(&r);
    expect_gem_400(emu,
                   "{'tools':[" WEATHER_GEM_TOOL "],'generationConfig':{'thinkingConfig':{'thinkingBudget':-1}},"
                   "'contents':[{'role':'user','parts':[{'text':'weather?'}]},"
                   "{'role':'model','parts':[{'functionCall':{'name':'get_weather','args':{}}}]},"
                   "{'role':'user','parts':[{'functionResponse':{'name':'get_weather','response':{}}}]}]}",
                   "Function call is missing a thought_signature in functionCall parts.");
    expect_gem_400(emu,
                   "{'tools':[" WEATHER_GEM_TOOL "],'generationConfig':{'thinkingConfig':{'thinkingBudget':-1}},"
                   "'contents':[{'role':'user','parts':[{'text':'weather?'}]},"
                   "{'role':'model','parts':[{'functionCall':{'name':'get_weather','args':{}},"
                   "'thoughtSignature':'b3RoZXI='}]},"
                   "{'role':'user','parts':[{'functionResponse':{'name':'get_weather','response':{}}}]}]}",
                   "* GenerateContentRequest.contents[1].parts[0].thought_signature: Thought signature is not valid.");
    expect_gem_400(emu,
                   "{'contents':[{'parts':[{'text':'x'}]}],'generationConfig':{'thinkingConfig':"
                   "{'thinkingBudget':1024,'thinkingLevel':'low'}}}",
                   "* GenerateContentRequest.generation_config.thinking_config:");
}

static void test_gemini_stream(struct sb_emu *emu)
{
    struct resp r = http(emu, "POST", "/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
                         "{'contents':[{'parts':[{'text':'hi there'}]}]}", GEM_HEADERS);
    CHECK_INT(r.status, 200);
    CHECK(contains(r.headers, "text/event-stream"));
    struct sse s;
    sse_parse(r.body, &s);
    CHECK(s.crlf);
    CHECK_INT(s.n, 4); /* "You", " said:", " hi", " there" */
    char text[128] = "";
    for (size_t i = 0; i < s.n; i++) {
        strncat(text, s_at(s.data[i], "candidates.0.content.parts.0.text"), sizeof text - strlen(text) - 1);
        CHECK_STR(s_at(s.data[i], "modelVersion"), "gemini-x");
    }
    CHECK_STR(text, "You said: hi there");
    CHECK(at(s.data[0], "candidates.0.finishReason") == NULL);
    CHECK_STR(s_at(s.data[s.n - 1], "candidates.0.finishReason"), "STOP");
    CHECK_INT(i_at(s.data[s.n - 1], "usageMetadata.candidatesTokenCount"), 4);
    sse_free(&s);
    resp_free(&r);

    /* Without alt=sse: one JSON array of the same chunks. */
    r = http(emu, "POST", "/v1beta/models/gemini-x:streamGenerateContent",
             "{'contents':[{'parts':[{'text':'hi there'}]}]}", GEM_HEADERS);
    CHECK(json_is_array(r.json));
    CHECK_INT(json_array_size(r.json), 4);
    CHECK_STR(s_at(r.json, "3.candidates.0.finishReason"), "STOP");
    resp_free(&r);
}

/* ======================================================================================= */
/* Fault modes in every protocol                                                             */
/* ======================================================================================= */

static struct resp put_fault(struct sb_emu *emu, const char *model, const char *sq_body)
{
    char path[256];
    snprintf(path, sizeof path, "/_emu/faults/%s", model);
    return http(emu, "PUT", path, sq_body, NULL);
}

static long long model_stat(struct sb_emu *emu, const char *model, const char *field)
{
    struct resp r = http(emu, "GET", "/_emu/stats", NULL, NULL);
    json_t *m = json_object_get(json_object_get(r.json, "by_model"), model);
    long long v = m ? json_integer_value(json_object_get(m, field)) : -1;
    resp_free(&r);
    return v;
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + strlen(needle), needle))
        n++;
    return n;
}

static void test_faults_responses(struct sb_emu *emu)
{
    struct resp r = responses(emu, "{'model':'m','input':'x [[emu:status=503]] [[emu:retry_after=4]]'}");
    CHECK_INT(r.status, 503);
    CHECK(contains(r.headers, "Retry-After: 4\r\n"));
    CHECK_STR(s_at(r.json, "error.type"), "server_error");
    CHECK_STR(s_at(r.json, "error.message"), "emulated upstream error 503");
    resp_free(&r);
    r = responses(emu, "{'model':'m','input':'[[emu:quota]]'}");
    CHECK_INT(r.status, 429);
    CHECK(!contains(r.headers, "Retry-After"));
    CHECK_STR(s_at(r.json, "error.type"), "insufficient_quota");
    CHECK_STR(s_at(r.json, "error.code"), "insufficient_quota");
    CHECK_PREFIX(s_at(r.json, "error.message"), "You exceeded your current quota");
    resp_free(&r);

    /* Context window: the Responses API's own wording, param input. */
    r = responses(emu, "{'model':'m','input':'x [[emu:context_exceeded]]'}");
    CHECK_INT(r.status, 400);
    CHECK_STR(s_at(r.json, "error.message"),
              "Your input exceeds the context window of this model. Please adjust your input and try again.");
    CHECK_STR(s_at(r.json, "error.type"), "invalid_request_error");
    CHECK_STR(s_at(r.json, "error.param"), "input");
    CHECK_STR(s_at(r.json, "error.code"), "context_length_exceeded");
    resp_free(&r);
    r = put_fault(emu, "resp-ctx", "{'directives':'context=5'}");
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = responses(emu, "{'model':'resp-ctx','input':'a'}"); /* 4 + 1 */
    CHECK_INT(r.status, 200);
    CHECK_INT(i_at(r.json, "usage.input_tokens"), 5);
    resp_free(&r);
    r = responses(emu, "{'model':'resp-ctx','input':'a b'}");
    CHECK_INT(r.status, 400);
    CHECK_STR(s_at(r.json, "error.code"), "context_length_exceeded");
    resp_free(&r);

    /* Endless: created, in_progress, the message item and part, the deltas of the answer, then " more" deltas with
     * sequence numbers that keep counting; never a .done or response.completed. */
    r = http_timeout(emu, "POST", "/v1/responses",
                     "{'model':'m','stream':true,'input':'go [[emu:endless]] [[emu:chunk_delay=5]]'}", RESP_AUTH, 500);
    CHECK(r.rc == CURLE_OPERATION_TIMEDOUT);
    struct sse s;
    sse_parse(r.body, &s);
    CHECK(s.n >= 20);
    size_t more = 0;
    for (size_t i = 0; i < s.n; i++) {
        CHECK_INT(i_at(s.data[i], "sequence_number"), (long long)i);
        CHECK(!contains(s.names[i], ".done") && !contains(s.names[i], "completed"));
        if (s_at(s.data[i], "delta") && !strcmp(s_at(s.data[i], "delta"), " more")) {
            CHECK_STR(s.names[i], "response.output_text.delta");
            more++;
        }
    }
    CHECK(more >= 10);
    CHECK_STR(s.names[0], "response.created");
    CHECK_STR(s_at(s.data[4], "delta"), "You");
    sse_free(&s);
    resp_free(&r);

    /* reset_after=2: two events, then the connection is reset. */
    r = responses(emu, "{'model':'m','stream':true,'input':'a b [[emu:reset_after=2]]'}");
    CHECK(r.rc == CURLE_RECV_ERROR);
    sse_parse(r.body, &s);
    CHECK_INT(s.n, 2);
    CHECK_STR(s.names[1], "response.in_progress");
    sse_free(&s);
    resp_free(&r);

    /* A trickled plain reply arrives whole, in small pieces. */
    r = responses(emu, "{'model':'m','input':'slow [[emu:trickle=2]]'}");
    CHECK(r.rc == CURLE_OK);
    CHECK_INT(r.status, 200);
    CHECK_STR(resp_text(r.json), "You said: slow");
    CHECK(r.small_pieces * 4 >= r.len / 16);
    resp_free(&r);

    /* input_tokens: route faults and in-band faults apply; the counters count it. */
    r = put_fault(emu, "resp-count", "{'directives':'status=503','count':1}");
    resp_free(&r);
    r = http(emu, "POST", "/v1/responses/input_tokens", "{'model':'resp-count','input':'x'}", RESP_AUTH);
    CHECK_INT(r.status, 503);
    CHECK_STR(s_at(r.json, "error.type"), "server_error");
    resp_free(&r);
    r = http(emu, "POST", "/v1/responses/input_tokens", "{'model':'resp-count','input':'x'}", RESP_AUTH);
    CHECK_INT(r.status, 200);
    CHECK_INT(i_at(r.json, "input_tokens"), 5);
    resp_free(&r);
    r = http(emu, "POST", "/v1/responses/input_tokens", "{'model':'resp-count','input':'x [[emu:malformed]]'}",
             RESP_AUTH);
    CHECK_INT(r.status, 200);
    CHECK(r.json == NULL);
    resp_free(&r);
    CHECK_INT(model_stat(emu, "resp-count", "requests"), 3);
    CHECK_INT(model_stat(emu, "resp-count", "faults"), 2);
}

static void test_faults_anthropic(struct sb_emu *emu)
{
    struct resp r = messages(emu, "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'x "
                                  "[[emu:status=503]] [[emu:retry_after=3]]'}]}");
    CHECK(contains(r.headers, "retry-after: 3\r\n"));
    expect_ant_error(&r, 503, "api_error", "emulated upstream error 503");
    r = messages(emu, "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'x [[emu:status=500]]'}]}");
    CHECK(!contains(r.headers, "retry-after"));
    expect_ant_error(&r, 500, "api_error", "emulated upstream error 500");
    /* Anthropic has one kind of 429: quota changes nothing, retry-after stays. */
    r = messages(emu, "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'x [[emu:quota]]'}]}");
    CHECK(contains(r.headers, "retry-after: 1\r\n"));
    expect_ant_error(&r, 429, "rate_limit_error", "emulated upstream error 429");

    /* 1 user message of 2 words = 6 tokens; forced: 200000 + 6. */
    r = messages(emu,
                 "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'x [[emu:context_exceeded]]'}]}");
    CHECK_STR(s_at(r.json, "error.message"), "prompt is too long: 200006 tokens > 200000 maximum");
    expect_ant_error(&r, 400, "invalid_request_error", "prompt is too long");
    r = messages(emu, "{'model':'c','max_tokens':10,'system':'s','messages':[{'role':'user','content':'a b c "
                      "[[emu:context=9]]'}]}"); /* 5 + 8 = 13 */
    CHECK_STR(s_at(r.json, "error.message"), "prompt is too long: 13 tokens > 9 maximum");
    expect_ant_error(&r, 400, "invalid_request_error", "prompt is too long");

    /* Endless: message_start, the text block, its deltas, then " more" deltas; never a stop. */
    r = http_timeout(emu, "POST", "/v1/messages",
                     "{'model':'c','max_tokens':10,'stream':true,'messages':[{'role':'user','content':'go "
                     "[[emu:endless]] [[emu:chunk_delay=5]]'}]}",
                     ANT_HEADERS, 500);
    CHECK(r.rc == CURLE_OPERATION_TIMEDOUT);
    struct sse s;
    sse_parse(r.body, &s);
    CHECK(s.n >= 20);
    CHECK_STR(s.names[0], "message_start");
    CHECK_STR(s.names[1], "content_block_start");
    size_t more = 0;
    for (size_t i = 0; i < s.n; i++) {
        CHECK(strcmp(s.names[i], "content_block_stop") && strcmp(s.names[i], "message_delta") &&
              strcmp(s.names[i], "message_stop"));
        if (!strcmp(s.names[i], "content_block_delta") && !strcmp(s_at(s.data[i], "delta.text"), " more"))
            more++;
    }
    CHECK(more >= 10);
    sse_free(&s);
    resp_free(&r);

    /* reset: part of the body, then the connection is reset. */
    r = messages(emu, "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'x [[emu:reset]]'}]}");
    CHECK(r.rc == CURLE_RECV_ERROR);
    CHECK(r.len > 0 && r.json == NULL);
    resp_free(&r);

    /* A trickled stream still ends with message_stop. */
    r = messages(emu, "{'model':'c','max_tokens':10,'stream':true,'messages':[{'role':'user','content':'a "
                      "[[emu:trickle=1]]'}]}");
    CHECK(r.rc == CURLE_OK);
    sse_parse(r.body, &s);
    CHECK_STR(s.names[s.n - 1], "message_stop");
    CHECK(r.small_pieces * 4 >= r.len / 16);
    sse_free(&s);
    resp_free(&r);

    /* count_tokens: a route fault (overloaded), then the count. */
    r = put_fault(emu, "ant-count", "{'directives':'status=529','count':1}");
    resp_free(&r);
    r = http(emu, "POST", "/v1/messages/count_tokens",
             "{'model':'ant-count','messages':[{'role':'user','content':'a b'}]}", ANT_HEADERS);
    expect_ant_error(&r, 529, "overloaded_error", "Overloaded");
    r = http(emu, "POST", "/v1/messages/count_tokens",
             "{'model':'ant-count','messages':[{'role':'user','content':'a b'}]}", ANT_HEADERS);
    CHECK_INT(r.status, 200);
    CHECK_INT(i_at(r.json, "input_tokens"), 6);
    resp_free(&r);
    CHECK_INT(model_stat(emu, "ant-count", "requests"), 2);
    CHECK_INT(model_stat(emu, "ant-count", "faults"), 1);
}

static void test_faults_gemini(struct sb_emu *emu)
{
    struct resp r = gemini(emu, "generateContent",
                           "{'contents':[{'parts':[{'text':'x [[emu:status=503]] [[emu:retry_after=2]]'}]}]}");
    CHECK(contains(r.headers, "Retry-After: 2\r\n"));
    CHECK_STR(s_at(r.json, "error.details.0.@type"), "type.googleapis.com/google.rpc.RetryInfo");
    CHECK_STR(s_at(r.json, "error.details.0.retryDelay"), "2s");
    expect_google_error(&r, 503, "UNAVAILABLE", "emulated upstream error 503");
    r = gemini(emu, "generateContent", "{'contents':[{'parts':[{'text':'x [[emu:status=429]]'}]}]}");
    CHECK(contains(r.headers, "Retry-After: 1\r\n"));
    CHECK_STR(s_at(r.json, "error.details.0.retryDelay"), "1s");
    expect_google_error(&r, 429, "RESOURCE_EXHAUSTED", "emulated upstream error 429");
    r = gemini(emu, "generateContent", "{'contents':[{'parts':[{'text':'x [[emu:status=500]]'}]}]}");
    CHECK(at(r.json, "error.details") == NULL);
    expect_google_error(&r, 500, "INTERNAL", "emulated upstream error 500");

    /* Quota: Google's wording with QuotaFailure and Help details; RetryInfo only when asked. */
    r = gemini(emu, "generateContent", "{'contents':[{'parts':[{'text':'x [[emu:quota]]'}]}]}");
    CHECK(!contains(r.headers, "Retry-After"));
    CHECK_STR(s_at(r.json, "error.details.0.@type"), "type.googleapis.com/google.rpc.QuotaFailure");
    CHECK_STR(s_at(r.json, "error.details.0.violations.0.quotaDimensions.model"), "gemini-x");
    CHECK_STR(s_at(r.json, "error.details.1.@type"), "type.googleapis.com/google.rpc.Help");
    CHECK(at(r.json, "error.details.2") == NULL);
    expect_google_error(&r, 429, "RESOURCE_EXHAUSTED",
                        "You exceeded your current quota, please check your plan and billing details.");
    r = gemini(emu, "generateContent", "{'contents':[{'parts':[{'text':'x [[emu:quota]] [[emu:retry_after=9]]'}]}]}");
    CHECK(contains(r.headers, "Retry-After: 9\r\n"));
    CHECK_STR(s_at(r.json, "error.details.2.retryDelay"), "9s");
    expect_google_error(&r, 429, "RESOURCE_EXHAUSTED", "You exceeded your current quota");

    /* Context: 4 + 2 = 6 tokens; forced: 1048576 + 6. A route context=N counts the same way. */
    r = gemini(emu, "generateContent", "{'contents':[{'parts':[{'text':'x [[emu:context_exceeded]]'}]}]}");
    CHECK_STR(s_at(r.json, "error.message"),
              "The input token count (1048582) exceeds the maximum number of tokens allowed (1048576).");
    expect_google_error(&r, 400, "INVALID_ARGUMENT", "The input token count");
    r = put_fault(emu, "gem-ctx", "{'directives':'context=6'}");
    resp_free(&r);
    r = http(emu, "POST", "/v1beta/models/gem-ctx:generateContent", "{'contents':[{'parts':[{'text':'a b'}]}]}",
             GEM_HEADERS);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(emu, "POST", "/v1beta/models/gem-ctx:generateContent", "{'contents':[{'parts':[{'text':'a b c'}]}]}",
             GEM_HEADERS);
    CHECK_STR(s_at(r.json, "error.message"),
              "The input token count (7) exceeds the maximum number of tokens allowed (6).");
    expect_google_error(&r, 400, "INVALID_ARGUMENT", "The input token count");

    /* Endless by route (the model is the one in the path), once: SSE chunks without finishReason. */
    r = put_fault(emu, "gem-endless", "{'directives':'endless chunk_delay=5','count':1}");
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http_timeout(emu, "POST", "/v1beta/models/gem-endless:streamGenerateContent?alt=sse",
                     "{'contents':[{'parts':[{'text':'go'}]}]}", GEM_HEADERS, 500);
    CHECK(r.rc == CURLE_OPERATION_TIMEDOUT);
    struct sse s;
    sse_parse(r.body, &s);
    CHECK(s.crlf);
    CHECK(s.n >= 20);
    size_t more = 0;
    for (size_t i = 0; i < s.n; i++) {
        CHECK(at(s.data[i], "candidates.0.finishReason") == NULL);
        if (!strcmp(s_at(s.data[i], "candidates.0.content.parts.0.text"), " more"))
            more++;
    }
    CHECK(more >= 10);
    sse_free(&s);
    resp_free(&r);
    r = http(emu, "POST", "/v1beta/models/gem-endless:streamGenerateContent?alt=sse",
             "{'contents':[{'parts':[{'text':'go'}]}]}", GEM_HEADERS);
    CHECK(r.rc == CURLE_OK);
    CHECK(contains(r.body, "\"finishReason\":\"STOP\""));
    resp_free(&r);
    CHECK_INT(model_stat(emu, "gem-endless", "requests"), 2);
    CHECK_INT(model_stat(emu, "gem-endless", "faults"), 1);

    /* Endless as a JSON array: it opens and never closes. */
    r = http_timeout(emu, "POST", "/v1beta/models/gemini-x:streamGenerateContent",
                     "{'contents':[{'parts':[{'text':'go [[emu:endless]] [[emu:chunk_delay=5]]'}]}]}", GEM_HEADERS,
                     300);
    CHECK(r.rc == CURLE_OPERATION_TIMEDOUT);
    CHECK(r.body[0] == '[');
    CHECK(r.json == NULL);
    CHECK(count_of(r.body, ",\r\n{\"candidates\"") >= 10);
    CHECK(!contains(r.body, "finishReason"));
    resp_free(&r);

    /* reset_after on a stream, reset on a plain reply. */
    r = http(emu, "POST", "/v1beta/models/gemini-x:streamGenerateContent?alt=sse",
             "{'contents':[{'parts':[{'text':'a b c [[emu:reset_after=1]]'}]}]}", GEM_HEADERS);
    CHECK(r.rc == CURLE_RECV_ERROR);
    CHECK_INT(count_of(r.body, "data: "), 1);
    resp_free(&r);
    r = gemini(emu, "generateContent", "{'contents':[{'parts':[{'text':'a [[emu:reset]]'}]}]}");
    CHECK(r.rc == CURLE_RECV_ERROR);
    resp_free(&r);

    /* A trickled JSON-array stream arrives whole. */
    r = http(emu, "POST", "/v1beta/models/gemini-x:streamGenerateContent",
             "{'contents':[{'parts':[{'text':'hi [[emu:trickle=1]]'}]}]}", GEM_HEADERS);
    CHECK(r.rc == CURLE_OK);
    CHECK(json_is_array(r.json));
    CHECK_STR(s_at(r.json, "2.candidates.0.finishReason"), "STOP");
    CHECK(r.small_pieces * 4 >= r.len / 16);
    resp_free(&r);

    /* countTokens: a route fault on the model in the path. */
    r = put_fault(emu, "gem-count", "{'directives':'status=503 retry_after=5','count':1}");
    resp_free(&r);
    r = http(emu, "POST", "/v1beta/models/gem-count:countTokens", "{'contents':[{'parts':[{'text':'a b'}]}]}",
             GEM_HEADERS);
    CHECK(contains(r.headers, "Retry-After: 5\r\n"));
    expect_google_error(&r, 503, "UNAVAILABLE", "emulated upstream error 503");
    r = http(emu, "POST", "/v1beta/models/gem-count:countTokens", "{'contents':[{'parts':[{'text':'a b'}]}]}",
             GEM_HEADERS);
    CHECK_INT(r.status, 200);
    CHECK_INT(i_at(r.json, "totalTokens"), 6);
    resp_free(&r);
    CHECK_INT(model_stat(emu, "gem-count", "requests"), 2);
    CHECK_INT(model_stat(emu, "gem-count", "faults"), 1);
}

/* ======================================================================================= */
/* The journal                                                                               */
/* ======================================================================================= */

static json_t *last_journal_entry(struct sb_emu *emu, struct resp *keep)
{
    *keep = http(emu, "GET", "/_emu/requests?limit=1", NULL, NULL);
    return at(keep->json, "requests.0");
}

static void test_journal(struct sb_emu *keyed)
{
    static const char *const beta[] = {"x-api-key: " KEY, "anthropic-version: 2023-06-01",
                                       "anthropic-beta: interleaved-thinking-2025-05-14", NULL};
    struct resp r = http(keyed, "POST", "/v1/messages",
                         "{'model':'c','max_tokens':10,'messages':[{'role':'user','content':'journal me'}]}", beta);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    struct resp j;
    json_t *e = last_journal_entry(keyed, &j);
    CHECK_STR(s_at(e, "method"), "POST");
    CHECK_STR(s_at(e, "path"), "/v1/messages");
    CHECK_STR(s_at(e, "protocol"), "anthropic");
    CHECK_STR(s_at(e, "auth_header"), "x-api-key");
    CHECK_STR(s_at(e, "headers.x-api-key"), "[redacted]");
    CHECK_STR(s_at(e, "headers.anthropic-version"), "2023-06-01");
    CHECK_STR(s_at(e, "headers.anthropic-beta"), "interleaved-thinking-2025-05-14");
    CHECK_STR(s_at(e, "body.messages.0.content"), "journal me");
    CHECK_INT(i_at(e, "status"), 200);
    CHECK(!contains(j.body, KEY));
    resp_free(&j);

    r = http(keyed, "POST", "/v1beta/models/g:generateContent?key=" KEY, "{'contents':[{'parts':[{'text':'x'}]}]}",
             NULL);
    resp_free(&r);
    e = last_journal_entry(keyed, &j);
    CHECK_STR(s_at(e, "path"), "/v1beta/models/g:generateContent");
    CHECK_STR(s_at(e, "query"), "key=[redacted]");
    CHECK_STR(s_at(e, "auth_header"), "?key");
    CHECK_STR(s_at(e, "protocol"), "gemini");
    CHECK(!contains(j.body, KEY));
    resp_free(&j);

    r = http(keyed, "POST", "/v1beta/models/g:generateContent", "{'contents':[{'parts':[{'text':'x'}]}]}", GEM_HEADERS);
    resp_free(&r);
    e = last_journal_entry(keyed, &j);
    CHECK_STR(s_at(e, "headers.x-goog-api-key"), "[redacted]");
    CHECK_STR(s_at(e, "auth_header"), "x-goog-api-key");
    resp_free(&j);

    r = http(keyed, "POST", "/v1/responses", "{'model':'m','input':'x'}", RESP_AUTH);
    resp_free(&r);
    e = last_journal_entry(keyed, &j);
    CHECK_STR(s_at(e, "protocol"), "openai-responses");
    CHECK_STR(s_at(e, "headers.authorization"), "[redacted]");
    CHECK_STR(s_at(e, "body.input"), "x");
    CHECK(!contains(j.body, KEY));
    resp_free(&j);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct server s;
    if (server_start(&s) < 0) {
        fprintf(stderr, "cannot start the emulator\n");
        return 1;
    }
    test_responses_shape(s.open_emu);
    test_responses_errors(s.open_emu, s.keyed_emu);
    test_responses_tools(s.open_emu);
    test_responses_structured_reasoning(s.open_emu);
    test_responses_length_refusal(s.open_emu);
    test_responses_stream(s.open_emu);
    test_anthropic_shape(s.open_emu);
    test_anthropic_errors(s.open_emu, s.keyed_emu);
    test_anthropic_tools(s.open_emu);
    test_anthropic_thinking(s.open_emu);
    test_anthropic_stops(s.open_emu);
    test_anthropic_stream(s.open_emu);
    test_gemini_shape(s.open_emu);
    test_gemini_errors(s.open_emu, s.keyed_emu);
    test_gemini_tools(s.open_emu);
    test_gemini_thinking(s.open_emu);
    test_gemini_stream(s.open_emu);
    test_journal(s.keyed_emu);
    test_faults_responses(s.open_emu);
    test_faults_anthropic(s.open_emu);
    test_faults_gemini(s.open_emu);
    server_stop(&s);
    curl_global_cleanup();
    return sb_test_finish("emulator_protocols");
}

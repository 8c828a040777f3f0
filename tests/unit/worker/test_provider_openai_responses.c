/* Unit tests for the openai-responses adapter: canonical job -> exact
 * upstream request, Responses bodies and SSE streams -> exact canonical
 * event sequences, error mapping. */
#include <stdlib.h>
#include <string.h>

#include "provider.h"
#include "sb_provider_test.h"

static const sb_provider_t *P = &sb_provider_openai_responses;

/* The route of every job here. */
static const char route[] = "{\"provider\":\"openai-responses\",\"base_url\":\"https://api.example.test/v1/\","
                            "\"upstream_model\":\"gpt-5\",\"credential_ref\":null,\"timeout_ms\":60000}";

/*
 * Request side.
 */

static void test_request_basic(void)
{
    /* store false always; metadata, n never; the rest as is. */
    CHECK_BODY("{\"instructions\":\"Be brief.\",\"input\":[{\"type\":\"message\",\"role\":\"user\","
               "\"content\":[{\"type\":\"input_text\",\"text\":\"Hi\"}]}],"
               "\"max_output_tokens\":64,\"temperature\":0.5,\"top_p\":1,\"n\":1,\"user\":\"u1\","
               "\"metadata\":{\"k\":\"v\"},\"max_tool_calls\":3,\"stream\":false}",
               "{\"model\":\"gpt-5\",\"instructions\":\"Be brief.\",\"input\":[{\"type\":\"message\",\"role\":\"user\","
               "\"content\":[{\"type\":\"input_text\",\"text\":\"Hi\"}]}],\"max_output_tokens\":64,"
               "\"temperature\":0.5,\"top_p\":1,\"user\":\"u1\",\"max_tool_calls\":3,\"store\":false,"
               "\"stream\":false}");
    /* Nothing but input. */
    CHECK_BODY("{\"input\":[]}", "{\"model\":\"gpt-5\",\"input\":[],\"store\":false,\"stream\":false}");

    /* URL, headers: no credential_ref means no Authorization. */
    json_t *job = job_with("{\"input\":[]}");
    sb_provider_request_t req;
    json_t *err;
    json_t *body = build(job, &req, &err);
    CHECK(body != NULL);
    CHECK_STR(req.url, "https://api.example.test/v1/responses");
    CHECK_INT(req.n_headers, 2);
    CHECK_STR(req.headers[0], "Content-Type: application/json");
    CHECK_STR(req.headers[1], "Accept: application/json");
    json_decref(body);
    sb_provider_request_clear(&req);

    /* credential_ref names an environment variable: a Bearer credential. */
    json_object_set_new((json_t *)json_object_get(job, "route"), "credential_ref", json_string("SB_TEST_ORESP_KEY"));
    setenv("SB_TEST_ORESP_KEY", "sk-test-resp-123", 1);
    body = build(job, &req, &err);
    CHECK(body != NULL);
    CHECK_INT(req.n_headers, 3);
    CHECK_STR(req.headers[2], "Authorization: Bearer sk-test-resp-123");
    CHECK(strstr(req.body, "sk-test") == NULL);
    json_decref(body);
    sb_provider_request_clear(&req);
    unsetenv("SB_TEST_ORESP_KEY");
    body = build(job, &req, &err);
    CHECK(body == NULL);
    CHECK_INT(json_integer_value(json_object_get(err, "status")), 502);
    CHECK_STR(json_string_value(json_object_get(err, "message")),
              "upstream credential 'SB_TEST_ORESP_KEY' is not configured");
    json_decref(err);
    sb_provider_request_clear(&req);
    json_decref(job);

    /* Streaming asks for SSE. */
    job = job_with("{\"input\":[],\"stream\":true}");
    body = build(job, &req, &err);
    CHECK(json_is_true(json_object_get(body, "stream")));
    CHECK_STR(req.headers[1], "Accept: text/event-stream");
    json_decref(body);
    sb_provider_request_clear(&req);
    json_decref(job);

    CHECK(sb_provider_lookup("openai-responses") == P);
    CHECK(!P->supports_n);
}

static void test_request_include(void)
{
    /* Reasoning requested: include encrypted reasoning. */
    CHECK_BODY("{\"input\":[],\"reasoning\":{\"effort\":\"high\",\"summary\":\"auto\"}}",
               "{\"model\":\"gpt-5\",\"input\":[],\"reasoning\":{\"effort\":\"high\",\"summary\":\"auto\"},"
               "\"include\":[\"reasoning.encrypted_content\"],\"store\":false,\"stream\":false}");
    CHECK_BODY("{\"input\":[],\"reasoning\":{\"summary\":\"concise\"}}",
               "{\"model\":\"gpt-5\",\"input\":[],\"reasoning\":{\"summary\":\"concise\"},"
               "\"include\":[\"reasoning.encrypted_content\"],\"store\":false,\"stream\":false}");
    /* Effort none is no reasoning: no include (models without reasoning
     * refuse it). */
    CHECK_BODY("{\"input\":[],\"reasoning\":{\"effort\":\"none\"}}",
               "{\"model\":\"gpt-5\",\"input\":[],\"reasoning\":{\"effort\":\"none\"},\"store\":false,"
               "\"stream\":false}");
    /* A model marked as reasoning reasons by default: include anyway. */
    CHECK_BODY_CAPS("{\"input\":[]}", "{\"reasoning\":true}",
                    "{\"model\":\"gpt-5\",\"input\":[],\"include\":[\"reasoning.encrypted_content\"],"
                    "\"store\":false,\"stream\":false}");
    CHECK_BODY_CAPS("{\"input\":[]}", "{\"reasoning\":false}",
                    "{\"model\":\"gpt-5\",\"input\":[],\"store\":false,\"stream\":false}");
    /* top_logprobs needs the logprobs include to return anything. */
    CHECK_BODY("{\"input\":[],\"top_logprobs\":2}",
               "{\"model\":\"gpt-5\",\"input\":[],\"top_logprobs\":2,"
               "\"include\":[\"message.output_text.logprobs\"],\"store\":false,\"stream\":false}");
}

static void test_request_reasoning_items(void)
{
    /* This upstream's reasoning goes back as encrypted_content, without
     * content or private fields, its id and summary kept; include follows. */
    CHECK_BODY("{\"input\":[{\"type\":\"message\",\"role\":\"user\",\"id\":\"msg_gw1\","
               "\"content\":[{\"type\":\"input_text\",\"text\":\"Q\"}]},"
               "{\"type\":\"reasoning\",\"id\":\"rs_up1\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"S\"}],"
               "\"content\":[{\"type\":\"reasoning_text\",\"text\":\"secret\"}],\"status\":\"completed\","
               "\"upstream_encrypted_content\":\"gAAAAenc\",\"signature\":\"sig\"},"
               "{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"msg_up1\",\"status\":\"completed\","
               "\"content\":[{\"type\":\"output_text\",\"text\":\"A\",\"annotations\":[]}]}]}",
               "{\"model\":\"gpt-5\",\"input\":[{\"type\":\"message\",\"role\":\"user\","
               "\"content\":[{\"type\":\"input_text\",\"text\":\"Q\"}]},"
               "{\"type\":\"reasoning\",\"id\":\"rs_up1\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"S\"}],"
               "\"encrypted_content\":\"gAAAAenc\"},"
               "{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"msg_up1\",\"status\":\"completed\","
               "\"content\":[{\"type\":\"output_text\",\"text\":\"A\",\"annotations\":[]}]}],"
               "\"include\":[\"reasoning.encrypted_content\"],\"store\":false,\"stream\":false}");

    /* Another provider's reasoning (a thinking signature, a Gemini thought
     * signature, plain text) cannot be verified: dropped, and with it the
     * reason to include. */
    CHECK_BODY(
        "{\"input\":[{\"type\":\"reasoning\",\"id\":\"rs_a\",\"summary\":[],"
        "\"content\":[{\"type\":\"reasoning_text\",\"text\":\"t\"}],\"signature\":\"EqQB...\"},"
        "{\"type\":\"reasoning\",\"id\":\"rs_b\",\"summary\":[],\"redacted\":true},"
        "{\"type\":\"reasoning\",\"id\":\"rs_c\",\"summary\":[],\"thought_signature\":\"CiQB\"},"
        "{\"type\":\"reasoning\",\"id\":\"rs_d\",\"summary\":[],\"upstream_encrypted_content\":\"\"},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"msg_01Anthropic\","
        "\"content\":[{\"type\":\"output_text\",\"text\":\"A\"}]}]}",
        "{\"model\":\"gpt-5\",\"input\":[{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"msg_01Anthropic\","
        "\"content\":[{\"type\":\"output_text\",\"text\":\"A\"}]}],\"store\":false,\"stream\":false}");
}

static void test_request_items(void)
{
    /* Text parts follow the role; ids only where OpenAI pairs items
     * (assistant messages, function calls with OpenAI's prefixes); private
     * fields on calls dropped; images and files as is. */
    CHECK_BODY("{\"input\":[{\"type\":\"message\",\"role\":\"system\",\"id\":\"msg_s\","
               "\"content\":[{\"type\":\"input_text\",\"text\":\"sys\"}]},"
               "{\"type\":\"message\",\"role\":\"developer\",\"content\":\"dev\"},"
               "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"output_text\",\"text\":\"u\"},"
               "{\"type\":\"input_image\",\"image_url\":\"https://x.test/a.png\",\"detail\":\"low\"},"
               "{\"type\":\"input_file\",\"filename\":\"a.pdf\",\"file_data\":\"data:application/pdf;base64,JVBE\"},"
               "{\"type\":\"input_file\",\"file_id\":\"file_1\"}]},"
               "{\"type\":\"message\",\"role\":\"assistant\",\"id\":\"toolu_x\",\"phase\":\"commentary\","
               "\"content\":[{\"type\":\"input_text\",\"text\":\"a\"},{\"type\":\"refusal\",\"refusal\":\"no\"}]},"
               "{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"{}\","
               "\"status\":\"completed\",\"thought_signature\":\"CiQB\"},"
               "{\"type\":\"function_call\",\"id\":\"toolu_2\",\"call_id\":\"toolu_2\",\"name\":\"g\",\"arguments\":{"
               "\"a\":1}},"
               "{\"type\":\"function_call_output\",\"id\":\"fco_1\",\"call_id\":\"call_1\",\"output\":\"42\"},"
               "{\"type\":\"function_call_output\",\"call_id\":\"toolu_2\",\"output\":[{\"type\":\"input_text\","
               "\"text\":\"r\"},"
               "{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64,iVBO\"}]},"
               "{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\","
               "\"action\":{\"type\":\"search\",\"query\":\"q\"},\"signature\":\"x\"}]}",
               "{\"model\":\"gpt-5\",\"input\":[{\"type\":\"message\",\"role\":\"system\","
               "\"content\":[{\"type\":\"input_text\",\"text\":\"sys\"}]},"
               "{\"type\":\"message\",\"role\":\"developer\",\"content\":\"dev\"},"
               "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"u\"},"
               "{\"type\":\"input_image\",\"image_url\":\"https://x.test/a.png\",\"detail\":\"low\"},"
               "{\"type\":\"input_file\",\"filename\":\"a.pdf\",\"file_data\":\"data:application/pdf;base64,JVBE\"},"
               "{\"type\":\"input_file\",\"file_id\":\"file_1\"}]},"
               "{\"type\":\"message\",\"role\":\"assistant\",\"phase\":\"commentary\","
               "\"content\":[{\"type\":\"output_text\",\"text\":\"a\"},{\"type\":\"refusal\",\"refusal\":\"no\"}]},"
               "{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\",\"name\":\"f\",\"arguments\":\"{}\","
               "\"status\":\"completed\"},"
               "{\"type\":\"function_call\",\"call_id\":\"toolu_2\",\"name\":\"g\",\"arguments\":\"{\\\"a\\\":1}\"},"
               "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"42\"},"
               "{\"type\":\"function_call_output\",\"call_id\":\"toolu_2\",\"output\":[{\"type\":\"input_text\","
               "\"text\":\"r\"},"
               "{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64,iVBO\"}]},"
               "{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":\"completed\","
               "\"action\":{\"type\":\"search\",\"query\":\"q\"}}],\"store\":false,\"stream\":false}");
}

static void test_request_tools_and_format(void)
{
    /* Function tools as they are (strict false when absent: Responses would
     * default it to true); built-in tools unchanged; tool_choice,
     * parallel_tool_calls as is. */
    CHECK_BODY(
        "{\"input\":[],\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"description\":\"d\","
        "\"parameters\":{\"type\":\"object\"},\"strict\":true},"
        "{\"type\":\"function\",\"name\":\"g\",\"parameters\":{}},"
        "{\"type\":\"web_search\",\"search_context_size\":\"low\"},"
        "{\"type\":\"file_search\",\"vector_store_ids\":[\"vs_1\"]},"
        "{\"type\":\"code_interpreter\",\"container\":{\"type\":\"auto\"}},"
        "{\"type\":\"image_generation\",\"quality\":\"low\"},"
        "{\"type\":\"mcp\",\"server_label\":\"x\",\"server_url\":\"https://mcp.test\","
        "\"require_approval\":\"never\"}],"
        "\"tool_choice\":{\"type\":\"web_search\"},\"parallel_tool_calls\":false}",
        "{\"model\":\"gpt-5\",\"input\":[],\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"description\":\"d\","
        "\"parameters\":{\"type\":\"object\"},\"strict\":true},"
        "{\"type\":\"function\",\"name\":\"g\",\"parameters\":{},\"strict\":false},"
        "{\"type\":\"web_search\",\"search_context_size\":\"low\"},"
        "{\"type\":\"file_search\",\"vector_store_ids\":[\"vs_1\"]},"
        "{\"type\":\"code_interpreter\",\"container\":{\"type\":\"auto\"}},"
        "{\"type\":\"image_generation\",\"quality\":\"low\"},"
        "{\"type\":\"mcp\",\"server_label\":\"x\",\"server_url\":\"https://mcp.test\","
        "\"require_approval\":\"never\"}],"
        "\"tool_choice\":{\"type\":\"web_search\"},\"parallel_tool_calls\":false,\"store\":false,"
        "\"stream\":false}");
    CHECK_BODY("{\"input\":[],\"tools\":[],\"tool_choice\":\"none\"}",
               "{\"model\":\"gpt-5\",\"input\":[],\"tool_choice\":\"none\",\"store\":false,\"stream\":false}");

    /* Structured output passes through, with verbosity. */
    CHECK_BODY("{\"input\":[],\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"person\",\"strict\":true,"
               "\"schema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"
               "\"required\":[\"name\"],\"additionalProperties\":false}},\"verbosity\":\"low\"}}",
               "{\"model\":\"gpt-5\",\"input\":[],\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"person\","
               "\"strict\":true,\"schema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"
               "\"required\":[\"name\"],\"additionalProperties\":false}},\"verbosity\":\"low\"},\"store\":false,"
               "\"stream\":false}");
    CHECK_BODY("{\"input\":[],\"text\":{\"format\":{\"type\":\"json_object\"}}}",
               "{\"model\":\"gpt-5\",\"input\":[],\"text\":{\"format\":{\"type\":\"json_object\"}},\"store\":false,"
               "\"stream\":false}");
}

static void test_request_refused(void)
{
    CHECK_UNSUPPORTED("{\"input\":[],\"stop\":[\"END\"]}",
                      "'stop' is not supported by provider openai-responses (the Responses API has no stop sequences)");
    CHECK_UNSUPPORTED("{\"input\":[],\"stop\":\"END\"}",
                      "'stop' is not supported by provider openai-responses (the Responses API has no stop sequences)");
    CHECK_UNSUPPORTED("{\"input\":[],\"seed\":7}",
                      "'seed' is not supported by provider openai-responses (the Responses API has no seed)");
    /* null and an empty stop list ask for nothing. */
    CHECK_BODY("{\"input\":[],\"stop\":[],\"seed\":null}",
               "{\"model\":\"gpt-5\",\"input\":[],\"store\":false,\"stream\":false}");
    CHECK_UNSUPPORTED(
        "{\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
        "\"text\":\"x\"},{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"UklG\",\"format\":\"wav\"}}]}]}",
        "input_audio (input item 0, content part 1) is not supported by provider openai-responses: "
        "the Responses API takes no audio input");
    CHECK_UNSUPPORTED("{\"input\":[{\"type\":\"function_call_output\",\"call_id\":\"c\",\"output\":[{\"type\":"
                      "\"input_audio\",\"input_audio\":{\"data\":\"UklG\",\"format\":\"wav\"}}]}]}",
                      "input_audio (input item 0, content part 0) is not supported by provider openai-responses: "
                      "the Responses API takes no audio input");
    CHECK_INVALID("{\"input\":[],\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"x\"}}}", NULL,
                  "text.format json_schema needs name and schema");
    CHECK_INVALID("{\"input\":[{\"type\":\"message\",\"role\":\"tool\",\"content\":[]}]}", NULL,
                  "input item 0 has an unsupported role");
    /* The job's shape is sb_job_check's, run before the adapter (as the worker
     * does), in the words all four adapters share: this adapter's own check
     * said "input item 0: function_call items need call_id and name". */
    CHECK_INVALID("{\"input\":[{\"type\":\"function_call\",\"call_id\":\"c\"}]}", NULL,
                  "function_call items need call_id and name");
    CHECK_INVALID("{\"input\":{}}", NULL, "request.input must be an array of items");
    CHECK_INVALID("{\"input\":[],\"max_output_tokens\":\"many\"}", NULL,
                  "request.max_output_tokens has the wrong type");
    CHECK_INVALID("{\"input\":[],\"n\":0}", NULL, "request.n must be at least 1");

    json_t *job = job_with("{\"input\":[]}");
    json_object_del((json_t *)json_object_get(job, "route"), "upstream_model");
    sb_provider_request_t req;
    json_t *err;
    CHECK(build(job, &req, &err) == NULL);
    CHECK_STR(json_string_value(json_object_get(err, "message")), "route has no upstream_model");
    json_decref(err);
    sb_provider_request_clear(&req);
    json_decref(job);
}

/*
 * Response side.
 */

/* Replaces generated ids ("<prefix><hex>") by their prefix, so sequences
 * can be compared; upstream ids stay. */
static void normalize_ids(json_t *events)
{
    size_t i;
    json_t *ev;
    json_array_foreach (events, i, ev) {
        json_t *item = json_object_get(ev, "item");
        const char *id = json_string_value(json_object_get(item, "id"));
        if (!id)
            continue;
        const char *us = strchr(id, '_');
        if (us && strlen(us + 1) == 32 && strspn(us + 1, "0123456789abcdef") == 32) {
            char prefix[16];
            snprintf(prefix, sizeof prefix, "%.*s", (int)(us - id + 1), id);
            json_object_set_new(item, "id", json_string(prefix));
        }
    }
}

static void test_response_text(void)
{
    /* A message (ids, annotations, logprobs kept), usage with reasoning
     * tokens, completed with the model that answered. */
    CHECK_EVENTS(
        200,
        "{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"completed\",\"model\":\"gpt-5-2025-08-07\","
        "\"output\":[{\"type\":\"message\",\"id\":\"msg_up\",\"status\":\"completed\",\"role\":\"assistant\","
        "\"content\":[{\"type\":\"output_text\",\"text\":\"Hello\",\"annotations\":[{\"type\":\"url_citation\","
        "\"url\":\"https://x.test\",\"title\":\"X\",\"start_index\":0,\"end_index\":5}],\"logprobs\":[]}]}],"
        "\"usage\":{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":25,"
        "\"output_tokens_details\":{\"reasoning_tokens\":20},\"total_tokens\":35}}",
        "[{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_up\","
        "\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}},"
        "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"Hello\"},"
        "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_up\","
        "\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
        "\"text\":\"Hello\",\"annotations\":[{\"type\":\"url_citation\",\"url\":\"https://x.test\","
        "\"title\":\"X\",\"start_index\":0,\"end_index\":5}],\"logprobs\":[]}]}},"
        "{\"type\":\"usage\",\"input_tokens\":10,\"output_tokens\":25,\"reasoning_tokens\":20},"
        "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,"
        "\"model\":\"gpt-5-2025-08-07\",\"upstream_us\":42}]");

    /* A refusal part is kept; missing ids are generated; no usage, no model:
     * the job's model. */
    CHECK_EVENTS(
        200,
        "{\"status\":\"completed\",\"output\":[{\"type\":\"message\",\"role\":\"assistant\","
        "\"content\":[{\"type\":\"refusal\",\"refusal\":\"I can't help with that.\"}]}]}",
        "[{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
        "\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}},"
        "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
        "\"role\":\"assistant\",\"content\":[{\"type\":\"refusal\",\"refusal\":\"I can't help with that.\"}]}},"
        "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,"
        "\"model\":\"public-model\",\"upstream_us\":42}]");
}

static void test_response_reasoning_and_tools(void)
{
    /* Reasoning: encrypted_content becomes the private
     * upstream_encrypted_content; then a function call and a built-in tool
     * call, in order, ids kept. */
    CHECK_EVENTS(
        200,
        "{\"status\":\"completed\",\"model\":\"o4-mini\",\"output\":["
        "{\"type\":\"reasoning\",\"id\":\"rs_up\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"Thinking\"}],"
        "\"encrypted_content\":\"gAAAAB\"},"
        "{\"type\":\"web_search_call\",\"id\":\"ws_up\",\"status\":\"completed\","
        "\"action\":{\"type\":\"search\",\"query\":\"weather\"}},"
        "{\"type\":\"function_call\",\"id\":\"fc_up\",\"call_id\":\"call_up\",\"name\":\"get_weather\","
        "\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\",\"status\":\"completed\"}],"
        "\"usage\":{\"input_tokens\":5,\"output_tokens\":7,\"output_tokens_details\":{\"reasoning_tokens\":3}}}",
        "[{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_up\",\"summary\":[]}},"
        "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_up\","
        "\"summary\":[{\"type\":\"summary_text\",\"text\":\"Thinking\"}],\"upstream_encrypted_content\":\"gAAAAB\"}},"
        "{\"type\":\"item_added\",\"item_index\":1,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_up\","
        "\"status\":\"completed\",\"action\":{\"type\":\"search\",\"query\":\"weather\"}}},"
        "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_up\","
        "\"status\":\"completed\",\"action\":{\"type\":\"search\",\"query\":\"weather\"}}},"
        "{\"type\":\"item_added\",\"item_index\":2,\"item\":{\"type\":\"function_call\",\"id\":\"fc_up\","
        "\"call_id\":\"call_up\",\"name\":\"get_weather\",\"arguments\":\"\",\"status\":\"in_progress\"}},"
        "{\"type\":\"args_delta\",\"item_index\":2,\"delta\":\"{\\\"city\\\":\\\"Paris\\\"}\"},"
        "{\"type\":\"item_done\",\"item_index\":2,\"item\":{\"type\":\"function_call\",\"id\":\"fc_up\","
        "\"call_id\":\"call_up\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\","
        "\"status\":\"completed\"}},"
        "{\"type\":\"usage\",\"input_tokens\":5,\"output_tokens\":7,\"reasoning_tokens\":3},"
        "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,\"model\":\"o4-mini\","
        "\"upstream_us\":42}]");

    /* Reasoning text content streams as reasoning_delta. */
    CHECK_EVENTS(200,
                 "{\"status\":\"completed\",\"model\":\"gpt-oss\",\"output\":[{\"type\":\"reasoning\",\"id\":\"rs_2\","
                 "\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"hmm\"}]}]}",
                 "[{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_2\","
                 "\"summary\":[]}},"
                 "{\"type\":\"reasoning_delta\",\"item_index\":0,\"delta\":\"hmm\"},"
                 "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_2\","
                 "\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"hmm\"}]}},"
                 "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,\"model\":\"gpt-oss\","
                 "\"upstream_us\":42}]");

    /* A function call without call_id is malformed. */
    CHECK_EVENTS(200,
                 "{\"status\":\"completed\",\"output\":[{\"type\":\"function_call\",\"id\":\"fc_1\",\"name\":\"f\","
                 "\"arguments\":\"{}\"}]}",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"upstream returned a malformed output item\"}]");
}

/* The reasoning item a response returns, fed back as input, reaches the
 * upstream as its own encrypted_content: the stateless round trip. */
static void test_reasoning_round_trip(void)
{
    json_t *events =
        parse_for("{\"input\":[]}", 200,
                  "{\"status\":\"completed\",\"model\":\"o3\",\"output\":[{\"type\":\"reasoning\","
                  "\"id\":\"rs_abc\",\"summary\":[],\"encrypted_content\":\"gAAAA-round-trip\"},"
                  "{\"type\":\"message\",\"id\":\"msg_abc\",\"role\":\"assistant\",\"status\":\"completed\","
                  "\"content\":[{\"type\":\"output_text\",\"text\":\"4\",\"annotations\":[]}]}]}",
                  -1);
    json_t *input = json_array();
    size_t i;
    json_t *ev;
    json_array_foreach (events, i, ev) {
        if (!strcmp(json_string_value(json_object_get(ev, "type")), "item_done"))
            json_array_append(input, json_object_get(ev, "item"));
    }
    CHECK_INT(json_array_size(input), 2);
    json_t *job = job_with("{}");
    json_t *request = (json_t *)json_object_get(job, "request");
    json_object_set_new(request, "input", input);
    sb_provider_request_t req;
    json_t *err;
    json_t *body = build(job, &req, &err);
    CHECK_JSON(body,
               "{\"model\":\"gpt-5\",\"input\":[{\"type\":\"reasoning\",\"id\":\"rs_abc\",\"summary\":[],"
               "\"encrypted_content\":\"gAAAA-round-trip\"},"
               "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"4\","
               "\"annotations\":[]}],\"id\":\"msg_abc\",\"status\":\"completed\"}],"
               "\"include\":[\"reasoning.encrypted_content\"],\"store\":false,\"stream\":false}");
    json_decref(body);
    sb_provider_request_clear(&req);
    json_decref(job);
    json_decref(events);
}

static void test_response_status(void)
{
    /* incomplete keeps its reason. */
    CHECK_EVENTS(200,
                 "{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},"
                 "\"model\":\"gpt-5\",\"output\":[{\"type\":\"message\",\"id\":\"msg_1\",\"status\":\"incomplete\","
                 "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Once\","
                 "\"annotations\":[]}]}],\"usage\":{\"input_tokens\":3,\"output_tokens\":16}}",
                 "[{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\","
                 "\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}},"
                 "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"Once\"},"
                 "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\","
                 "\"status\":\"incomplete\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
                 "\"text\":\"Once\",\"annotations\":[]}]}},"
                 "{\"type\":\"usage\",\"input_tokens\":3,\"output_tokens\":16,\"reasoning_tokens\":0},"
                 "{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":\"max_output_tokens\","
                 "\"model\":\"gpt-5\",\"upstream_us\":42}]");
    CHECK_EVENTS(200,
                 "{\"status\":\"incomplete\",\"incomplete_details\":{\"reason\":\"content_filter\"},\"output\":[]}",
                 "[{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":\"content_filter\","
                 "\"model\":\"public-model\",\"upstream_us\":42}]");

    /* failed -> an error event by error.code. */
    CHECK_EVENTS(200,
                 "{\"status\":\"failed\",\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"Slow down.\"},"
                 "\"output\":[]}",
                 "[{\"type\":\"error\",\"status\":429,\"kind\":\"rate_limit\",\"code\":\"rate_limit_exceeded\","
                 "\"message\":\"Slow down.\"}]");
    CHECK_EVENTS(200,
                 "{\"status\":\"failed\",\"error\":{\"code\":\"server_error\",\"message\":\"Oops.\"},\"output\":[]}",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":\"server_error\","
                 "\"message\":\"Oops.\"}]");
    CHECK_EVENTS(200, "{\"status\":\"failed\",\"error\":{\"code\":\"invalid_prompt\",\"message\":\"Flagged.\"}}",
                 "[{\"type\":\"error\",\"status\":400,\"kind\":\"invalid_request\",\"code\":\"invalid_prompt\","
                 "\"message\":\"Flagged.\"}]");
    CHECK_EVENTS(200,
                 "{\"status\":\"failed\",\"error\":{\"code\":\"vector_store_timeout\",\"message\":\"Slow store.\"}}",
                 "[{\"type\":\"error\",\"status\":504,\"kind\":\"timeout\",\"code\":\"vector_store_timeout\","
                 "\"message\":\"Slow store.\"}]");
    CHECK_EVENTS(200, "{\"status\":\"failed\",\"error\":null}",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"upstream response failed\"}]");
    /* A response that is not over (background was never asked for). */
    CHECK_EVENTS(200, "{\"status\":\"in_progress\",\"output\":[]}",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"upstream response ended with status 'in_progress'\"}]");
}

static void test_response_errors(void)
{
    /* 401: OpenAI quotes part of the key; the text is never passed on (a 502:
     * the route's credential is the operator's problem, not the client's). */
    CHECK_EVENTS(401,
                 "{\"error\":{\"message\":\"Incorrect API key provided: sk-proj-****abcd.\","
                 "\"type\":\"invalid_request_error\",\"code\":\"invalid_api_key\"}}",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"upstream authentication failed\"}]");
    /* 429 with Retry-After; quota is its own kind. */
    CHECK_EVENTS_RETRY(429,
                       "{\"error\":{\"message\":\"Rate limit reached.\",\"type\":\"requests\","
                       "\"code\":\"rate_limit_exceeded\"}}",
                       7,
                       "[{\"type\":\"error\",\"status\":429,\"kind\":\"rate_limit\",\"code\":null,"
                       "\"message\":\"Rate limit reached.\",\"retry_after\":7}]");
    CHECK_EVENTS(429,
                 "{\"error\":{\"message\":\"You exceeded your current quota.\",\"type\":\"insufficient_quota\","
                 "\"code\":\"insufficient_quota\"}}",
                 "[{\"type\":\"error\",\"status\":429,\"kind\":\"insufficient_quota\",\"code\":null,"
                 "\"message\":\"You exceeded your current quota.\"}]");
    CHECK_EVENTS(400,
                 "{\"error\":{\"message\":\"Unsupported parameter: 'temperature'.\",\"type\":\"invalid_request_error\","
                 "\"param\":\"temperature\",\"code\":\"unsupported_parameter\"}}",
                 "[{\"type\":\"error\",\"status\":400,\"kind\":\"invalid_request\",\"code\":null,"
                 "\"message\":\"Unsupported parameter: 'temperature'.\"}]");
    CHECK_EVENTS(500, "{\"error\":{\"message\":\"The server had an error.\",\"type\":\"server_error\"}}",
                 "[{\"type\":\"error\",\"status\":500,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"The server had an error.\"}]");
    CHECK_EVENTS_RETRY(503, "<html>overloaded</html>", 30,
                       "[{\"type\":\"error\",\"status\":503,\"kind\":\"overloaded\",\"code\":null,"
                       "\"message\":\"upstream returned HTTP 503\",\"retry_after\":30}]");
    /* Malformed 2xx bodies are the upstream's fault: 502. */
    CHECK_EVENTS(200, "{\"status\":\"completed\",\"output\":[",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"upstream returned malformed JSON\"}]");
    CHECK_EVENTS(200, "",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"upstream returned malformed JSON\"}]");
    CHECK_EVENTS(200, "{\"error\":{\"message\":\"proxy said no\"}}",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"proxy said no\"}]");
    CHECK_EVENTS(200, "{\"status\":\"completed\",\"output\":[42]}",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"upstream returned a malformed output item\"}]");

    /* A message echoing the credential is never passed on. */
    json_t *job = job_with("{\"input\":[]}");
    json_object_set_new((json_t *)json_object_get(job, "route"), "credential_ref", json_string("SB_TEST_ORESP_KEY2"));
    setenv("SB_TEST_ORESP_KEY2", "sk-secret-999", 1);
    const char *body = "{\"error\":{\"message\":\"bad header Authorization: Bearer sk-secret-999\"}}";
    json_t *events = json_array();
    sb_provider_response_t resp = {.status = 400, .body = body, .body_len = strlen(body), .retry_after = -1};
    P->parse_response(job, &resp, events);
    char *dump = json_dumps(events, JSON_COMPACT);
    CHECK(dump && strstr(dump, "sk-secret") == NULL);
    CHECK_STR(json_string_value(json_object_get(json_array_get(events, 0), "message")), "upstream returned HTTP 400");
    free(dump);
    json_decref(events);
    unsetenv("SB_TEST_ORESP_KEY2");
    json_decref(job);
}

/*
 * Streaming, through the per-job parser as the worker drives it.
 */

/* Feeds `body` to a streaming parser in chunks of `chunk` bytes (0: whole)
 * and finishes with `status`; returns the events, ids normalized. */
static json_t *stream(const char *body, size_t chunk, long status)
{
    json_t *job = job_with("{\"input\":[],\"stream\":true}");
    sb_provider_parser_t *p = sb_provider_parser_new(P, job);
    json_t *events = json_array();
    size_t len = strlen(body), step = chunk ? chunk : len;
    int rc = 0;
    for (size_t off = 0; off < len && rc == 0; off += step)
        rc = sb_provider_parser_feed(p, status, body + off, off + step > len ? len - off : step, events);
    if (rc < 0)
        json_array_append_new(events, json_pack("{s:s, s:i}", "type", "feed_failed", "rc", rc));
    else {
        sb_provider_response_t resp = {.status = status, .retry_after = -1, .upstream_us = 99};
        sb_provider_parser_finish(p, &resp, events);
    }
    sb_provider_parser_destroy(&p);
    json_decref(job);
    normalize_ids(events);
    return events;
}

static const char *const sse_ok =
    "event: response.created\n"
    "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\","
    "\"status\":\"in_progress\",\"output\":[]}}\n\n"
    ": keep-alive\n\n"
    "event: response.output_item.added\n"
    "data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"reasoning\","
    "\"id\":\"rs_s\",\"summary\":[]}}\n\n"
    "data: {\"type\":\"response.reasoning_summary_text.delta\",\"output_index\":0,\"delta\":\"Plan\"}\n\n"
    "data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"reasoning\","
    "\"id\":\"rs_s\",\"summary\":[{\"type\":\"summary_text\",\"text\":\"Plan\"}],\"encrypted_content\":\"gAAA\"}}\n\n"
    "data: {\"type\":\"response.output_item.added\",\"output_index\":1,\"item\":{\"type\":\"message\","
    "\"id\":\"msg_s\",\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}}\n\n"
    "data: {\"type\":\"response.content_part.added\",\"output_index\":1,\"content_index\":0,"
    "\"part\":{\"type\":\"output_text\",\"text\":\"\",\"annotations\":[]}}\n\n"
    "data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_s\",\"output_index\":1,\"content_index\":0,"
    "\"delta\":\"Hel\"}\n\n"
    "data: {\"type\":\"response.output_text.delta\",\"item_id\":\"msg_s\",\"output_index\":1,\"content_index\":0,"
    "\"delta\":\"lo \\u00e9\"}\n\n"
    "data: {\"type\":\"response.output_item.done\",\"output_index\":1,\"item\":{\"type\":\"message\","
    "\"id\":\"msg_s\",\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
    "\"text\":\"Hello \\u00e9\",\"annotations\":[]}]}}\n\n"
    "data: {\"type\":\"response.output_item.added\",\"output_index\":2,\"item\":{\"type\":\"function_call\","
    "\"id\":\"fc_s\",\"call_id\":\"call_s\",\"name\":\"f\",\"arguments\":\"\",\"status\":\"in_progress\"}}\n\n"
    "data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":2,\"delta\":\"{\\\"a\\\":\"}\n\n"
    "data: {\"type\":\"response.function_call_arguments.delta\",\"output_index\":2,\"delta\":\"1}\"}\n\n"
    "data: {\"type\":\"response.output_item.done\",\"output_index\":2,\"item\":{\"type\":\"function_call\","
    "\"id\":\"fc_s\",\"call_id\":\"call_s\",\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\","
    "\"status\":\"completed\"}}\n\n"
    "event: response.completed\n"
    "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\","
    "\"model\":\"gpt-5-mini\",\"output\":[],\"usage\":{\"input_tokens\":4,\"output_tokens\":9,"
    "\"output_tokens_details\":{\"reasoning_tokens\":2}}}}\n\n";

static const char *const sse_ok_events =
    "[{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_s\",\"summary\":[]}},"
    "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_s\","
    "\"summary\":[{\"type\":\"summary_text\",\"text\":\"Plan\"}],\"upstream_encrypted_content\":\"gAAA\"}},"
    "{\"type\":\"item_added\",\"item_index\":1,\"item\":{\"type\":\"message\",\"id\":\"msg_s\","
    "\"status\":\"in_progress\",\"role\":\"assistant\",\"content\":[]}},"
    "{\"type\":\"text_delta\",\"item_index\":1,\"content_index\":0,\"delta\":\"Hel\"},"
    "{\"type\":\"text_delta\",\"item_index\":1,\"content_index\":0,\"delta\":\"lo \\u00e9\"},"
    "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"message\",\"id\":\"msg_s\","
    "\"status\":\"completed\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\","
    "\"text\":\"Hello \\u00e9\",\"annotations\":[]}]}},"
    "{\"type\":\"item_added\",\"item_index\":2,\"item\":{\"type\":\"function_call\",\"id\":\"fc_s\","
    "\"call_id\":\"call_s\",\"name\":\"f\",\"arguments\":\"\",\"status\":\"in_progress\"}},"
    "{\"type\":\"args_delta\",\"item_index\":2,\"delta\":\"{\\\"a\\\":\"},"
    "{\"type\":\"args_delta\",\"item_index\":2,\"delta\":\"1}\"},"
    "{\"type\":\"item_done\",\"item_index\":2,\"item\":{\"type\":\"function_call\",\"id\":\"fc_s\","
    "\"call_id\":\"call_s\",\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\",\"status\":\"completed\"}},"
    "{\"type\":\"usage\",\"input_tokens\":4,\"output_tokens\":9,\"reasoning_tokens\":2},"
    "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,\"model\":\"gpt-5-mini\","
    "\"upstream_us\":99}]";

/* s with every "\n" replaced by "\r\n" (owned). */
static char *crlf(const char *s)
{
    size_t n = strlen(s), k = 0;
    char *out = malloc(2 * n + 1);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n')
            out[k++] = '\r';
        out[k++] = s[i];
    }
    out[k] = '\0';
    return out;
}

static void test_stream(void)
{
    /* Whole, byte by byte, in odd chunks, with CRLF line ends: the same. */
    size_t chunks[] = {0, 1, 7, 64};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        json_t *events = stream(sse_ok, chunks[i], 200);
        CHECK_JSON(events, sse_ok_events);
        json_decref(events);
    }
    char *body = crlf(sse_ok);
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        json_t *events = stream(body, chunks[i], 200);
        CHECK_JSON(events, sse_ok_events);
        json_decref(events);
    }
    free(body);

    /* No blank line after the last event; ids missing upstream are
     * generated once and kept from item_added to item_done. */
    json_t *events =
        stream("data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"message\","
               "\"role\":\"assistant\",\"content\":[]}}\n\n"
               "data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":\"message\","
               "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"x\"}]}}\n\n"
               "data: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\","
               "\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"model\":\"gpt-5\"}}",
               5, 200);
    const char *a = json_string_value(json_object_get(json_object_get(json_array_get(events, 0), "item"), "id"));
    const char *b = json_string_value(json_object_get(json_object_get(json_array_get(events, 1), "item"), "id"));
    CHECK(a && b && !strcmp(a, "msg_") && !strcmp(a, b));
    CHECK_JSON(json_array_get(events, 2), "{\"type\":\"completed\",\"status\":\"incomplete\","
                                          "\"incomplete_reason\":\"max_output_tokens\",\"model\":\"gpt-5\","
                                          "\"upstream_us\":99}");
    CHECK_INT(json_array_size(events), 3);
    json_decref(events);

    /* response.failed and a bare error event end the stream with an error. */
    events = stream("data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\","
                    "\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"Slow down.\"}}}\n\n",
                    0, 200);
    CHECK_JSON(events, "[{\"type\":\"error\",\"status\":429,\"kind\":\"rate_limit\",\"code\":\"rate_limit_exceeded\","
                       "\"message\":\"Slow down.\"}]");
    json_decref(events);
    events = stream("event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"boom\","
                    "\"param\":null,\"sequence_number\":3}\n\n"
                    "data: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\"}}\n\n",
                    0, 200);
    CHECK_JSON(events, "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":\"server_error\","
                       "\"message\":\"boom\"}]");
    json_decref(events);

    /* Cut short: an error after what did arrive. */
    events = stream("data: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"type\":\"message\","
                    "\"id\":\"msg_c\",\"role\":\"assistant\",\"content\":[]}}\n\n"
                    "data: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"content_index\":0,"
                    "\"delta\":\"par\"}\n\n",
                    0, 200);
    CHECK_INT(json_array_size(events), 3);
    CHECK_JSON(json_array_get(events, 2), "{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\","
                                          "\"code\":null,\"message\":\"upstream stream ended before the response "
                                          "was complete\"}");
    json_decref(events);

    /* Malformed event data aborts the transfer. */
    events = stream("data: {not json}\n\n", 0, 200);
    CHECK_JSON(events, "[{\"type\":\"feed_failed\",\"rc\":-74}]");
    json_decref(events);

    /* An upstream that ignored "stream" answers JSON: translated whole. */
    events =
        stream("  {\"status\":\"completed\",\"model\":\"gpt-5\",\"output\":[{\"type\":\"message\",\"id\":\"msg_j\","
               "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"hi\"}]}]}",
               3, 200);
    CHECK_INT(json_array_size(events), 4);
    CHECK_JSON(json_array_get(events, 3), "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,"
                                          "\"model\":\"gpt-5\",\"upstream_us\":99}");
    json_decref(events);

    /* A long line (a generated image, a few MB of base64) in small chunks:
     * scanned once, not once per chunk. */
    size_t big = 4u << 20;
    const char *head = "data: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":{\"type\":"
                       "\"image_generation_call\",\"id\":\"ig_1\",\"status\":\"completed\",\"result\":\"";
    const char *tail = "\"}}\n\ndata: {\"type\":\"response.completed\",\"response\":{\"status\":\"completed\","
                       "\"model\":\"gpt-5\"}}\n\n";
    size_t nh = strlen(head), nt = strlen(tail);
    char *long_body = malloc(nh + big + nt + 1);
    memcpy(long_body, head, nh);
    memset(long_body + nh, 'A', big);
    memcpy(long_body + nh + big, tail, nt + 1);
    events = stream(long_body, 4096, 200);
    free(long_body);
    CHECK_INT(json_array_size(events), 3);
    json_t *img = json_object_get(json_array_get(events, 1), "item");
    CHECK_STR(json_string_value(json_object_get(img, "id")), "ig_1");
    CHECK_INT(json_string_length(json_object_get(img, "result")), big);
    CHECK_STR(json_string_value(json_object_get(json_array_get(events, 2), "type")), "completed");
    json_decref(events);

    /* Error statuses are buffered and translated as a whole. */
    events = stream("{\"error\":{\"message\":\"Rate limit reached.\"}}", 4, 429);
    CHECK_JSON(events, "[{\"type\":\"error\",\"status\":429,\"kind\":\"rate_limit\",\"code\":null,"
                       "\"message\":\"Rate limit reached.\"}]");
    json_decref(events);
}

/* Token counting: POST /responses/input_tokens with the request cut to the
 * fields that endpoint takes; input_tokens -> usage + completed. */
static void test_count(void)
{
    CHECK(P->build_count_request != NULL && P->parse_count_response != NULL);
    json_t *job =
        job_with("{\"op\":\"count_tokens\",\"instructions\":\"Be brief.\",\"input\":[{\"type\":\"message\","
                 "\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"Hi\"}]}],"
                 "\"max_output_tokens\":64,\"temperature\":0.5,\"user\":\"u1\",\"stream\":true,"
                 "\"reasoning\":{\"effort\":\"low\"},\"parallel_tool_calls\":false,\"truncation\":\"auto\","
                 "\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":{}}],\"tool_choice\":\"auto\","
                 "\"text\":{\"format\":{\"type\":\"json_object\"}}}");
    sb_provider_request_t req;
    memset(&req, 0, sizeof req);
    json_t *err = NULL;
    CHECK(P->build_count_request(job, &req, &err) == 0);
    CHECK(err == NULL);
    CHECK_STR(req.url, "https://api.example.test/v1/responses/input_tokens");
    CHECK_STR(req.headers[1], "Accept: application/json");
    json_t *body = req.body ? json_loads(req.body, 0, NULL) : NULL;
    CHECK_JSON(body, "{\"model\":\"gpt-5\",\"instructions\":\"Be brief.\",\"input\":[{\"type\":\"message\","
                     "\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"Hi\"}]}],"
                     "\"tools\":[{\"type\":\"function\",\"name\":\"f\",\"parameters\":{},\"strict\":false}],"
                     "\"tool_choice\":\"auto\",\"text\":{\"format\":{\"type\":\"json_object\"}},"
                     "\"reasoning\":{\"effort\":\"low\"},\"parallel_tool_calls\":false,\"truncation\":\"auto\"}");
    json_decref(body);
    sb_provider_request_clear(&req);
    json_decref(job);

    json_t *events = parse_count(200, "{\"object\":\"response.input_tokens\",\"input_tokens\":12}");
    CHECK_JSON(events, "[{\"type\":\"usage\",\"input_tokens\":12,\"output_tokens\":0,\"reasoning_tokens\":0},"
                       "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,"
                       "\"model\":\"public-model\",\"upstream_us\":42}]");
    json_decref(events);
    events = parse_count(200, "{\"object\":\"response.input_tokens\"}");
    CHECK_JSON(events, "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                       "\"message\":\"upstream count response has no input_tokens\"}]");
    json_decref(events);
    events =
        parse_count(400, "{\"error\":{\"message\":\"Unknown parameter: 'x'.\",\"type\":\"invalid_request_error\"}}");
    CHECK_JSON(events, "[{\"type\":\"error\",\"status\":400,\"kind\":\"invalid_request\",\"code\":null,"
                       "\"message\":\"Unknown parameter: 'x'.\"}]");
    json_decref(events);
}

/* Context-length errors become one canonical error (400 invalid_request,
 * code context_length_exceeded, "context length exceeded: " + the
 * upstream's message): as an HTTP error, a failed response, a failed stream. */
#define CTX_ERR(msg)                                                                                                   \
    "[{\"type\":\"error\",\"status\":400,\"kind\":\"invalid_request\",\"code\":\"context_length_exceeded\","           \
    "\"message\":\"context length exceeded: " msg "\"}]"
static void test_context_length(void)
{
    CHECK_EVENTS(400,
                 "{\"error\":{\"message\":\"Your input exceeds the context window of this model. Please adjust your "
                 "input and try again.\",\"type\":\"invalid_request_error\",\"param\":\"input\","
                 "\"code\":\"context_length_exceeded\"}}",
                 CTX_ERR("Your input exceeds the context window of this model. Please adjust your input and try "
                         "again."));
    CHECK_EVENTS(200,
                 "{\"status\":\"failed\",\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"Your input "
                 "exceeds the context window of this model.\"},\"output\":[]}",
                 CTX_ERR("Your input exceeds the context window of this model."));
    json_t *events = stream("data: {\"type\":\"response.failed\",\"response\":{\"status\":\"failed\","
                            "\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"Too long.\"}}}\n\n",
                            0, 200);
    CHECK_JSON(events, CTX_ERR("Too long."));
    json_decref(events);
    /* Other input refusals keep their own code. */
    CHECK_EVENTS(200, "{\"status\":\"failed\",\"error\":{\"code\":\"invalid_prompt\",\"message\":\"Flagged.\"}}",
                 "[{\"type\":\"error\",\"status\":400,\"kind\":\"invalid_request\",\"code\":\"invalid_prompt\","
                 "\"message\":\"Flagged.\"}]");
}

int main(void)
{
    sb_ptest = (sb_ptest_t){.provider = P, .route = route, .normalize_ids = normalize_ids};
    test_request_basic();
    test_request_include();
    test_request_reasoning_items();
    test_request_items();
    test_request_tools_and_format();
    test_request_refused();
    test_response_text();
    test_response_reasoning_and_tools();
    test_reasoning_round_trip();
    test_response_status();
    test_response_errors();
    test_stream();
    test_context_length();
    test_count();
    return sb_test_finish("provider_openai_responses");
}

/* Unit tests for the openai-chat adapter: canonical job -> exact upstream
 * request, chat responses (whole and streamed as SSE) -> exact canonical
 * event sequences, error mapping. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"
#include "sb_provider_test.h"

/* The route of every job here. */
static const char route[] = "{\"provider\":\"openai-chat\",\"base_url\":\"http://127.0.0.1:18080/v1/\","
                            "\"upstream_model\":\"llama-3\",\"credential_ref\":null,\"timeout_ms\":60000}";

static void test_request_basic(void)
{
    CHECK_BODY("{\"instructions\":\"Be brief.\",\"input\":[{\"type\":\"message\",\"role\":\"user\","
               "\"content\":[{\"type\":\"input_text\",\"text\":\"Hi\"}]}],"
               "\"max_output_tokens\":64,\"temperature\":0.5,\"top_p\":1,\"stop\":[\"END\"],\"seed\":7,"
               "\"n\":1,\"user\":\"u1\",\"metadata\":{\"k\":\"v\"},\"reasoning\":{\"effort\":\"low\"},"
               "\"text\":{\"format\":{\"type\":\"text\"}},\"stream\":false}",
               "{\"model\":\"llama-3\",\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
               "{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":64,\"temperature\":0.5,\"top_p\":1,"
               "\"stop\":[\"END\"],\"seed\":7,\"n\":1,\"user\":\"u1\",\"reasoning_effort\":\"low\","
               "\"stream\":false}");

    /* URL, headers: no credential_ref means no Authorization. */
    json_t *job = job_with("{\"input\":[]}");
    sb_provider_request_t req;
    json_t *err;
    json_t *body = build(job, &req, &err);
    CHECK(body != NULL);
    CHECK_STR(req.url, "http://127.0.0.1:18080/v1/chat/completions");
    CHECK_INT(req.n_headers, 2);
    CHECK_STR(req.headers[0], "Content-Type: application/json");
    CHECK_STR(req.headers[1], "Accept: application/json");
    json_decref(body);
    sb_provider_request_clear(&req);

    /* credential_ref names an environment variable. */
    json_object_set_new((json_t *)json_object_get(job, "route"), "credential_ref", json_string("SB_TEST_CHAT_KEY"));
    setenv("SB_TEST_CHAT_KEY", "sk-test-123", 1);
    body = build(job, &req, &err);
    CHECK(body != NULL);
    CHECK_INT(req.n_headers, 3);
    CHECK_STR(req.headers[2], "Authorization: Bearer sk-test-123");
    json_decref(body);
    sb_provider_request_clear(&req);
    unsetenv("SB_TEST_CHAT_KEY");
    body = build(job, &req, &err);
    CHECK(body == NULL);
    CHECK_INT(json_integer_value(json_object_get(err, "status")), 502);
    CHECK_STR(json_string_value(json_object_get(err, "kind")), "upstream_error");
    CHECK_STR(json_string_value(json_object_get(err, "message")),
              "upstream credential 'SB_TEST_CHAT_KEY' is not configured");
    json_decref(err);
    sb_provider_request_clear(&req);
    json_decref(job);
}

static void test_request_roles_and_content(void)
{
    /* Same roles; several text parts join with "\n"; images and files make
     * an array of parts; output_text in assistant turns. */
    CHECK_BODY(
        "{\"input\":["
        "{\"type\":\"message\",\"role\":\"developer\",\"content\":[{\"type\":\"input_text\",\"text\":\"Rules\"}]},"
        "{\"type\":\"message\",\"role\":\"system\",\"content\":[{\"type\":\"input_text\",\"text\":\"S\"}]},"
        "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"a\"},"
        "{\"type\":\"input_text\",\"text\":\"b\"}]},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"ok\"}]},"
        "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"What is this?\"},"
        "{\"type\":\"input_image\",\"image_url\":\"https://x/cat.png\",\"detail\":\"low\"},"
        "{\"type\":\"input_image\",\"image_url\":\"data:image/png;base64,AAAA\"},"
        "{\"type\":\"input_file\",\"file_id\":\"file_1\"}]},"
        "{\"type\":\"message\",\"role\":\"user\",\"content\":[]}]}",
        "{\"model\":\"llama-3\",\"stream\":false,\"messages\":["
        "{\"role\":\"developer\",\"content\":\"Rules\"},"
        "{\"role\":\"system\",\"content\":\"S\"},"
        "{\"role\":\"user\",\"content\":\"a\\nb\"},"
        "{\"role\":\"assistant\",\"content\":\"ok\"},"
        "{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"What is this?\"},"
        "{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://x/cat.png\",\"detail\":\"low\"}},"
        "{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,AAAA\"}},"
        "{\"type\":\"file\",\"file\":{\"file_id\":\"file_1\"}}]},"
        "{\"role\":\"user\",\"content\":\"\"}]}");
}

static void test_request_tool_calls(void)
{
    /* A text turn followed by two calls: one assistant message with both
     * tool_calls; reasoning dropped (and does not break the merge); outputs
     * become tool messages; a call with no assistant turn before it gets a
     * new assistant message with null content. */
    CHECK_BODY(
        "{\"instructions\":\"sys\",\"input\":["
        "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"weather?\"}]},"
        "{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[]},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Checking.\"}]},"
        "{\"type\":\"reasoning\",\"id\":\"rs_2\",\"summary\":[]},"
        "{\"type\":\"function_call\",\"call_id\":\"call_1\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":"
        "\\\"Paris\\\"}\"},"
        "{\"type\":\"function_call\",\"call_id\":\"call_2\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":"
        "\\\"Rome\\\"}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_1\",\"output\":\"18C\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_2\",\"output\":[{\"type\":\"input_text\",\"text\":"
        "\"21C\"}]},"
        "{\"type\":\"function_call\",\"call_id\":\"call_3\",\"name\":\"now\",\"arguments\":\"{}\"},"
        "{\"type\":\"function_call\",\"call_id\":\"call_4\",\"name\":\"today\",\"arguments\":\"{}\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_3\",\"output\":\"noon\"},"
        "{\"type\":\"function_call_output\",\"call_id\":\"call_4\",\"output\":{\"d\":1}}]}",
        "{\"model\":\"llama-3\",\"stream\":false,\"messages\":["
        "{\"role\":\"system\",\"content\":\"sys\"},"
        "{\"role\":\"user\",\"content\":\"weather?\"},"
        "{\"role\":\"assistant\",\"content\":\"Checking.\",\"tool_calls\":["
        "{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":"
        "\\\"Paris\\\"}\"}},"
        "{\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":"
        "\\\"Rome\\\"}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_1\",\"content\":\"18C\"},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_2\",\"content\":\"21C\"},"
        "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
        "{\"id\":\"call_3\",\"type\":\"function\",\"function\":{\"name\":\"now\",\"arguments\":\"{}\"}},"
        "{\"id\":\"call_4\",\"type\":\"function\",\"function\":{\"name\":\"today\",\"arguments\":\"{}\"}}]},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_3\",\"content\":\"noon\"},"
        "{\"role\":\"tool\",\"tool_call_id\":\"call_4\",\"content\":\"{\\\"d\\\":1}\"}]}");
}

static void test_request_tools_and_format(void)
{
    CHECK_BODY("{\"input\":[],\"tools\":[{\"type\":\"function\",\"name\":\"get_weather\",\"description\":\"Weather\","
               "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}},\"strict\":true},"
               "{\"type\":\"function\",\"name\":\"now\"}],"
               "\"tool_choice\":{\"type\":\"function\",\"name\":\"get_weather\"},\"parallel_tool_calls\":false,"
               "\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"out\",\"schema\":{\"type\":\"object\"},"
               "\"strict\":true}}}",
               "{\"model\":\"llama-3\",\"stream\":false,\"messages\":[],"
               "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather\","
               "\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}}},\"strict\":true}},"
               "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}],"
               "\"tool_choice\":{\"type\":\"function\",\"function\":{\"name\":\"get_weather\"}},"
               "\"parallel_tool_calls\":false,"
               "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"out\",\"schema\":{\"type\":"
               "\"object\"},\"strict\":true}}}");
    CHECK_BODY("{\"input\":[],\"tools\":[{\"type\":\"function\",\"name\":\"f\"}],\"tool_choice\":\"required\","
               "\"text\":{\"format\":{\"type\":\"json_object\"}}}",
               "{\"model\":\"llama-3\",\"stream\":false,\"messages\":[],"
               "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],\"tool_choice\":\"required\","
               "\"response_format\":{\"type\":\"json_object\"}}");
    /* No tools: tool_choice and parallel_tool_calls are not sent. */
    CHECK_BODY("{\"input\":[],\"tools\":[],\"tool_choice\":\"auto\",\"parallel_tool_calls\":true}",
               "{\"model\":\"llama-3\",\"stream\":false,\"messages\":[]}");
}

/* n goes through unless the route says the upstream cannot do it (the
 * worker then fans out); a route with capabilities that say nothing of n, or
 * say true, keeps it. */
static void test_request_n(void)
{
    CHECK_BODY("{\"input\":[],\"n\":3}", "{\"model\":\"llama-3\",\"stream\":false,\"messages\":[],\"n\":3}");
    CHECK_BODY_CAPS("{\"input\":[],\"n\":3}", "{\"n\":true}",
                    "{\"model\":\"llama-3\",\"stream\":false,\"messages\":[],\"n\":3}");
    CHECK_BODY_CAPS("{\"input\":[],\"n\":3}", "{}", "{\"model\":\"llama-3\",\"stream\":false,\"messages\":[],\"n\":3}");
    CHECK_BODY_CAPS("{\"input\":[],\"n\":3}", "{\"n\":false,\"vision\":true}",
                    "{\"model\":\"llama-3\",\"stream\":false,\"messages\":[]}");
    CHECK_BODY_CAPS("{\"input\":[],\"n\":1}", "{\"n\":false}",
                    "{\"model\":\"llama-3\",\"stream\":false,\"messages\":[]}");
}

/* json_schema with a description, reasoning effort, and what never goes up
 * (metadata). */
static void test_request_format_and_effort(void)
{
    CHECK_BODY("{\"input\":[],\"metadata\":{\"team\":\"x\"},\"reasoning\":{\"effort\":\"high\"},"
               "\"text\":{\"format\":{\"type\":\"json_schema\",\"name\":\"person\",\"description\":\"A person\","
               "\"schema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"
               "\"required\":[\"name\"],\"additionalProperties\":false},\"strict\":true}}}",
               "{\"model\":\"llama-3\",\"stream\":false,\"messages\":[],\"reasoning_effort\":\"high\","
               "\"response_format\":{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"person\","
               "\"description\":\"A person\",\"schema\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":"
               "\"string\"}},\"required\":[\"name\"],\"additionalProperties\":false},\"strict\":true}}}");
    CHECK_BODY("{\"input\":[],\"reasoning\":{\"effort\":\"none\"}}",
               "{\"model\":\"llama-3\",\"stream\":false,\"messages\":[],\"reasoning_effort\":\"none\"}");
}

static void test_request_files_and_audio(void)
{
    /* Text files become text parts (here with the text around them, so the
     * content collapses to one string); a PDF stays a file part. */
    CHECK_BODY(
        "{\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":["
        "{\"type\":\"input_text\",\"text\":\"Summarize:\"},"
        "{\"type\":\"input_file\",\"filename\":\"notes.txt\","
        "\"file_data\":\"data:text/plain;base64,aGVsbG8Kd29ybGQ=\"},"
        "{\"type\":\"input_file\",\"filename\":\"a.json\",\"file_data\":\"data:application/json;base64,eyJhIjoxfQ==\"},"
        "{\"type\":\"input_file\",\"filename\":\"README.MD\","
        "\"file_data\":\"data:application/octet-stream;base64,IyBUaXRsZQ==\"},"
        "{\"type\":\"input_file\",\"filename\":\"t.csv\",\"file_data\":\"data:text/csv;charset=utf-8;base64,"
        "aGVsbG8Kd29ybGQ=\"}]}]}",
        "{\"model\":\"llama-3\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":"
        "\"Summarize:\\nnotes.txt:\\nhello\\nworld\\na.json:\\n{\\\"a\\\":1}\\nREADME.MD:\\n# Title\\n"
        "t.csv:\\nhello\\nworld\"}]}");
    CHECK_BODY(
        "{\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":["
        "{\"type\":\"input_text\",\"text\":\"Read these\"},"
        "{\"type\":\"input_file\",\"filename\":\"paper.pdf\","
        "\"file_data\":\"data:application/pdf;base64,JVBERi0xLjQ=\"},"
        "{\"type\":\"input_file\",\"filename\":\"blob.bin\","
        "\"file_data\":\"data:application/octet-stream;base64,//4AYmlu\"},"
        "{\"type\":\"input_file\",\"filename\":\"n.txt\",\"file_data\":\"data:text/plain;base64,aGVsbG8Kd29ybGQ=\"},"
        "{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"UklGRg==\",\"format\":\"wav\"}}]}]}",
        "{\"model\":\"llama-3\",\"stream\":false,\"messages\":[{\"role\":\"user\",\"content\":["
        "{\"type\":\"text\",\"text\":\"Read these\"},"
        "{\"type\":\"file\",\"file\":{\"filename\":\"paper.pdf\",\"file_data\":\"data:application/pdf;base64,"
        "JVBERi0xLjQ=\"}},"
        "{\"type\":\"file\",\"file\":{\"filename\":\"blob.bin\",\"file_data\":\"data:application/octet-stream;base64,"
        "//4AYmlu\"}},"
        "{\"type\":\"text\",\"text\":\"n.txt:\\nhello\\nworld\"},"
        "{\"type\":\"input_audio\",\"input_audio\":{\"data\":\"UklGRg==\",\"format\":\"wav\"}}]}]}");
    CHECK_REFUSED("{\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_file\","
                  "\"filename\":\"x.txt\",\"file_data\":\"data:text/plain;base64,@@@\"}]}]}",
                  400, "input_file 'x.txt' (content part 0) has malformed base64 file_data");
    CHECK_REFUSED("{\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_file\","
                  "\"filename\":\"x.txt\",\"file_data\":\"data:text/plain;base64,//4AYmlu\"}]}]}",
                  400, "input_file 'x.txt' (content part 0) is not UTF-8 text");
    CHECK_REFUSED("{\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_audio\","
                  "\"input_audio\":{\"data\":\"UklGRg==\"}}]}]}",
                  400, "input_audio (content part 0) needs input_audio.data and .format");
}

/* Refusal parts of assistant turns stay content parts (the API rejects an
 * assistant message with null content and no tool calls). */
static void test_request_refusal(void)
{
    CHECK_BODY(
        "{\"input\":["
        "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"q\"}]},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"refusal\",\"refusal\":\"No.\"}]},"
        "{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Partly\"},"
        "{\"type\":\"refusal\",\"refusal\":\"not all\"}]}]}",
        "{\"model\":\"llama-3\",\"stream\":false,\"messages\":["
        "{\"role\":\"user\",\"content\":\"q\"},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"refusal\",\"refusal\":\"No.\"}]},"
        "{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"Partly\"},"
        "{\"type\":\"refusal\",\"refusal\":\"not all\"}]}]}");
    CHECK_REFUSED("{\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"refusal\","
                  "\"refusal\":\"x\"}]}]}",
                  400, "content part type 'refusal' is not supported by provider openai-chat");
}

static void test_request_refused(void)
{
    CHECK_REFUSED("{\"input\":[{\"type\":\"web_search_call\"}]}", 400,
                  "input item type 'web_search_call' is not supported by provider openai-chat");
    /* A built-in tool is an unsupported parameter here, as on Anthropic and
     * Gemini: 400 invalid_request with code unsupported_parameter. */
    CHECK_UNSUPPORTED("{\"input\":[],\"tools\":[{\"type\":\"web_search\"}]}",
                      "tool type 'web_search' is not supported by provider openai-chat");
    CHECK_REFUSED("{\"input\":[{\"type\":\"message\",\"role\":\"robot\",\"content\":[]}]}", 400,
                  "input item 0 has an unsupported role");
    CHECK_REFUSED("{\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":7}]}", 400,
                  "message content must be an array of parts");
    CHECK_REFUSED("{\"input\":[{\"type\":\"function_call\",\"name\":\"f\"}]}", 400,
                  "function_call items need call_id and name");
    CHECK_REFUSED("{\"input\":[],\"temperature\":\"hot\"}", 400, "request.temperature has the wrong type");
    CHECK_REFUSED("{\"input\":\"hi\"}", 400, "request.input must be an array of items");
    CHECK_REFUSED("{\"input\":[],\"n\":0}", 400, "request.n must be at least 1");
    CHECK_REFUSED("{\"input\":[],\"n\":\"2\"}", 400, "request.n has the wrong type");

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

/* Replaces each item id by "<prefix>" after checking it has that prefix, so
 * event sequences compare exactly. */
static void normalize_ids(json_t *events)
{
    size_t i;
    json_t *ev;
    json_array_foreach (events, i, ev) {
        json_t *item = json_object_get(ev, "item");
        const char *id = json_string_value(json_object_get(item, "id"));
        if (!id)
            continue;
        const char *prefixes[] = {"msg_", "fc_", "rs_"};
        for (size_t k = 0; k < 3; k++) {
            size_t n = strlen(prefixes[k]);
            if (!strncmp(id, prefixes[k], n) && strlen(id) == n + 32) {
                json_object_set_new(item, "id", json_string(prefixes[k]));
                break;
            }
        }
    }
}

/* The events for a response to {"input":[]}. */
static json_t *parse(long status, const char *body, long retry_after)
{
    return parse_for("{\"input\":[]}", status, body, retry_after);
}

static void test_response_text(void)
{
    CHECK_EVENTS(
        200,
        "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"model\":\"llama-3\",\"choices\":[{\"index\":0,"
        "\"message\":{\"role\":\"assistant\",\"content\":\"Hello there\"},\"finish_reason\":\"stop\"}],"
        "\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3,\"total_tokens\":12}}",
        "[{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
        "\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}},"
        "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"Hello there\"},"
        "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
        "\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\","
        "\"text\":\"Hello there\",\"annotations\":[]}]}},"
        "{\"type\":\"usage\",\"input_tokens\":9,\"output_tokens\":3,\"reasoning_tokens\":0},"
        "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,"
        "\"model\":\"public-model\",\"upstream_us\":42}]");

    /* The same id in item_added and item_done. */
    json_t *job = job_with("{\"input\":[]}");
    json_t *events = json_array();
    const char *body = "{\"choices\":[{\"message\":{\"content\":\"x\"},\"finish_reason\":\"stop\"}]}";
    sb_provider_response_t resp = {.status = 200, .body = body, .body_len = strlen(body), .retry_after = -1};
    sb_provider_openai_chat.parse_response(job, &resp, events);
    const char *a = json_string_value(json_object_get(json_object_get(json_array_get(events, 0), "item"), "id"));
    const char *b = json_string_value(json_object_get(json_object_get(json_array_get(events, 2), "item"), "id"));
    CHECK(a && b && !strncmp(a, "msg_", 4) && !strcmp(a, b));
    json_decref(events);
    json_decref(job);
}

static void test_response_tool_calls(void)
{
    /* Tool calls and no content: only function_call items; reasoning tokens
     * in usage. */
    CHECK_EVENTS(200,
                 "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
                 "{\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":\"{"
                 "\\\"city\\\":\\\"Paris\\\"}\"}},"
                 "{\"id\":\"call_b\",\"type\":\"function\",\"function\":{\"name\":\"now\",\"arguments\":\"\"}}]},"
                 "\"finish_reason\":\"tool_calls\"}],"
                 "\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":15,\"completion_tokens_details\":{\"reasoning_"
                 "tokens\":5}}}",
                 "[{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_\","
                 "\"call_id\":\"call_a\",\"name\":\"get_weather\",\"arguments\":\"\",\"status\":\"in_progress\"}},"
                 "{\"type\":\"args_delta\",\"item_index\":0,\"delta\":\"{\\\"city\\\":\\\"Paris\\\"}\"},"
                 "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_\","
                 "\"call_id\":\"call_a\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\","
                 "\"status\":\"completed\"}},"
                 "{\"type\":\"item_added\",\"item_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc_\","
                 "\"call_id\":\"call_b\",\"name\":\"now\",\"arguments\":\"\",\"status\":\"in_progress\"}},"
                 "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc_\","
                 "\"call_id\":\"call_b\",\"name\":\"now\",\"arguments\":\"\",\"status\":\"completed\"}},"
                 "{\"type\":\"usage\",\"input_tokens\":20,\"output_tokens\":15,\"reasoning_tokens\":5},"
                 "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,"
                 "\"model\":\"public-model\",\"upstream_us\":42}]");

    /* Text and a tool call: message item first, then the call. */
    json_t *events = parse(200,
                           "{\"choices\":[{\"message\":{\"content\":\"Let me check.\",\"tool_calls\":[{\"id\":\"c1\","
                           "\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
                           "\"finish_reason\":\"tool_calls\"}]}",
                           -1);
    CHECK_INT(json_array_size(events), 7);
    CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(events, 0), "item"), "type")),
              "message");
    CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(events, 3), "item"), "type")),
              "function_call");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(events, 3), "item_index")), 1);
    json_decref(events);
}

static void test_response_finish_reasons(void)
{
    CHECK_EVENTS(
        200,
        "{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"Once upon\"},\"finish_reason\":\"length\"}]}",
        "[{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
        "\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}},"
        "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"Once upon\"},"
        "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
        "\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\","
        "\"text\":\"Once upon\",\"annotations\":[]}]}},"
        "{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":\"max_output_tokens\","
        "\"model\":\"public-model\",\"upstream_us\":42}]");
    CHECK_EVENTS(200, "{\"choices\":[{\"message\":{\"content\":\"\"},\"finish_reason\":\"content_filter\"}]}",
                 "[{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":\"content_filter\","
                 "\"model\":\"public-model\",\"upstream_us\":42}]");
    /* A refusal is a content part of its own. */
    CHECK_EVENTS(200,
                 "{\"choices\":[{\"message\":{\"content\":null,\"refusal\":\"I can't help with that.\"},"
                 "\"finish_reason\":\"stop\"}]}",
                 "[{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
                 "\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}},"
                 "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
                 "\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"refusal\","
                 "\"refusal\":\"I can't help with that.\"}]}},"
                 "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,"
                 "\"model\":\"public-model\",\"upstream_us\":42}]");
    /* vLLM/DeepSeek reasoning_content becomes a reasoning item first. */
    CHECK_EVENTS(200,
                 "{\"choices\":[{\"message\":{\"reasoning_content\":\"think\",\"content\":\"42\"},"
                 "\"finish_reason\":\"stop\"}]}",
                 "[{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_\","
                 "\"summary\":[],\"content\":[]}},"
                 "{\"type\":\"reasoning_delta\",\"item_index\":0,\"delta\":\"think\"},"
                 "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_\","
                 "\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"think\"}]}},"
                 "{\"type\":\"item_added\",\"item_index\":1,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
                 "\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}},"
                 "{\"type\":\"text_delta\",\"item_index\":1,\"content_index\":0,\"delta\":\"42\"},"
                 "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
                 "\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\","
                 "\"text\":\"42\",\"annotations\":[]}]}},"
                 "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,"
                 "\"model\":\"public-model\",\"upstream_us\":42}]");
}

static void test_response_reasoning_and_refusal(void)
{
    /* Newer vLLM says "reasoning"; with a refusal the message carries it. */
    CHECK_EVENTS(200,
                 "{\"choices\":[{\"message\":{\"reasoning\":\"hmm\",\"content\":null,\"refusal\":\"No.\"},"
                 "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":9,"
                 "\"completion_tokens_details\":{\"reasoning_tokens\":7}}}",
                 "[{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_\","
                 "\"summary\":[],\"content\":[]}},"
                 "{\"type\":\"reasoning_delta\",\"item_index\":0,\"delta\":\"hmm\"},"
                 "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_\","
                 "\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"hmm\"}]}},"
                 "{\"type\":\"item_added\",\"item_index\":1,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
                 "\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}},"
                 "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
                 "\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"refusal\","
                 "\"refusal\":\"No.\"}]}},"
                 "{\"type\":\"usage\",\"input_tokens\":3,\"output_tokens\":9,\"reasoning_tokens\":7},"
                 "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,"
                 "\"model\":\"public-model\",\"upstream_us\":42}]");
    /* reasoning_content wins over reasoning when both are there. */
    json_t *events = parse(200,
                           "{\"choices\":[{\"message\":{\"reasoning_content\":\"a\",\"reasoning\":\"b\","
                           "\"content\":\"x\"},\"finish_reason\":\"stop\"}]}",
                           -1);
    CHECK_STR(json_string_value(json_object_get(json_array_get(events, 1), "delta")), "a");
    json_decref(events);
}

/* n choices: each tagged, item indices from 0 per choice, a choice_done
 * each, one usage, and an incomplete final when one choice was cut. */
static void test_response_choices(void)
{
    CHECK_EVENTS_FOR(
        "{\"input\":[],\"n\":3}",
        "{\"choices\":[{\"index\":0,\"message\":{\"content\":\"Hi\"},\"finish_reason\":\"stop\"},"
        "{\"index\":1,\"message\":{\"reasoning_content\":\"r\",\"content\":\"Hi #1\"},\"finish_reason\":\"length\"},"
        "{\"index\":2,\"message\":{\"content\":null,\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\","
        "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}],"
        "\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":12}}",
        "[{\"type\":\"item_added\",\"choice\":0,\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
        "\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}},"
        "{\"type\":\"text_delta\",\"choice\":0,\"item_index\":0,\"content_index\":0,\"delta\":\"Hi\"},"
        "{\"type\":\"item_done\",\"choice\":0,\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
        "\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\","
        "\"text\":\"Hi\",\"annotations\":[]}]}},"
        "{\"type\":\"choice_done\",\"choice\":0,\"status\":\"completed\",\"incomplete_reason\":null},"
        "{\"type\":\"item_added\",\"choice\":1,\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_\","
        "\"summary\":[],\"content\":[]}},"
        "{\"type\":\"reasoning_delta\",\"choice\":1,\"item_index\":0,\"delta\":\"r\"},"
        "{\"type\":\"item_done\",\"choice\":1,\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_\","
        "\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"r\"}]}},"
        "{\"type\":\"item_added\",\"choice\":1,\"item_index\":1,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
        "\"role\":\"assistant\",\"status\":\"in_progress\",\"content\":[]}},"
        "{\"type\":\"text_delta\",\"choice\":1,\"item_index\":1,\"content_index\":0,\"delta\":\"Hi #1\"},"
        "{\"type\":\"item_done\",\"choice\":1,\"item_index\":1,\"item\":{\"type\":\"message\",\"id\":\"msg_\","
        "\"role\":\"assistant\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\","
        "\"text\":\"Hi #1\",\"annotations\":[]}]}},"
        "{\"type\":\"choice_done\",\"choice\":1,\"status\":\"incomplete\",\"incomplete_reason\":"
        "\"max_output_tokens\"},"
        "{\"type\":\"item_added\",\"choice\":2,\"item_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_\","
        "\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"\",\"status\":\"in_progress\"}},"
        "{\"type\":\"args_delta\",\"choice\":2,\"item_index\":0,\"delta\":\"{}\"},"
        "{\"type\":\"item_done\",\"choice\":2,\"item_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_\","
        "\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"{}\",\"status\":\"completed\"}},"
        "{\"type\":\"choice_done\",\"choice\":2,\"status\":\"completed\",\"incomplete_reason\":null},"
        "{\"type\":\"usage\",\"input_tokens\":4,\"output_tokens\":12,\"reasoning_tokens\":0},"
        "{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":\"max_output_tokens\","
        "\"model\":\"public-model\",\"upstream_us\":42}]");
    /* n asked for but one choice came back: still tagged, with its choice_done. */
    CHECK_EVENTS_FOR("{\"input\":[],\"n\":2}",
                     "{\"choices\":[{\"message\":{\"content\":\"\"},\"finish_reason\":\"stop\"}]}",
                     "[{\"type\":\"choice_done\",\"choice\":0,\"status\":\"completed\",\"incomplete_reason\":null},"
                     "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,"
                     "\"model\":\"public-model\",\"upstream_us\":42}]");
    /* A bad choice anywhere fails the response. */
    CHECK_EVENTS_FOR("{\"input\":[],\"n\":2}",
                     "{\"choices\":[{\"message\":{\"content\":\"a\"},\"finish_reason\":\"stop\"},{\"index\":1}]}",
                     "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\","
                     "\"code\":null,\"message\":\"upstream response has no choices\"}]");
}

static void test_response_errors(void)
{
    CHECK_EVENTS(400, "{\"error\":{\"message\":\"Invalid 'messages[0].role'\",\"type\":\"invalid_request_error\"}}",
                 "[{\"type\":\"error\",\"status\":400,\"kind\":\"invalid_request\",\"code\":null,"
                 "\"message\":\"Invalid 'messages[0].role'\"}]");
    CHECK_EVENTS(401, "{\"error\":{\"message\":\"Incorrect API key provided\",\"code\":\"invalid_api_key\"}}",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"upstream authentication failed\"}]");
    CHECK_EVENTS(403, "not json",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"upstream authentication failed\"}]");
    CHECK_EVENTS(404, "{\"error\":\"model 'x' not found\"}", /* Ollama's shape */
                 "[{\"type\":\"error\",\"status\":404,\"kind\":\"not_found\",\"code\":null,"
                 "\"message\":\"model 'x' not found\"}]");
    CHECK_EVENTS_RETRY(429, "{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\"}}", 20,
                       "[{\"type\":\"error\",\"status\":429,\"kind\":\"rate_limit\",\"code\":null,"
                       "\"message\":\"Rate limit reached\",\"retry_after\":20}]");
    CHECK_EVENTS(429,
                 "{\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\","
                 "\"code\":\"insufficient_quota\"}}",
                 "[{\"type\":\"error\",\"status\":429,\"kind\":\"insufficient_quota\",\"code\":null,"
                 "\"message\":\"You exceeded your current quota\"}]");
    CHECK_EVENTS(500, "{\"error\":{\"message\":\"The server had an error\"}}",
                 "[{\"type\":\"error\",\"status\":500,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"The server had an error\"}]");
    CHECK_EVENTS(503, "{\"error\":{\"message\":\"The engine is currently overloaded\"}}",
                 "[{\"type\":\"error\",\"status\":503,\"kind\":\"overloaded\",\"code\":null,"
                 "\"message\":\"The engine is currently overloaded\"}]");
    CHECK_EVENTS(504, "<html>gateway timeout</html>",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"upstream returned HTTP 504\"}]");
    CHECK_EVENTS(200, "{\"choices\":[{\"message\":",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\","
                 "\"code\":null,\"message\":\"upstream returned malformed JSON\"}]");
    CHECK_EVENTS(200, "",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\","
                 "\"code\":null,\"message\":\"upstream returned malformed JSON\"}]");
    CHECK_EVENTS(200, "{\"object\":\"list\"}",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\","
                 "\"code\":null,\"message\":\"upstream response has no choices\"}]");
    CHECK_EVENTS(200, "{\"choices\":[{\"message\":{\"tool_calls\":[{\"type\":\"function\"}]}}]}",
                 "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\","
                 "\"code\":null,\"message\":\"upstream returned a malformed tool call\"}]");
}

/* The events the per-job parser keeps of a chat body for a count job. */
static json_t *count_events(const json_t *job, long status, const char *body)
{
    json_t *events = json_array();
    sb_provider_parser_t *p = sb_provider_parser_new(&sb_provider_openai_chat, job);
    CHECK(sb_provider_parser_feed(p, status, body, strlen(body), events) == 0);
    sb_provider_response_t resp = {.status = status, .retry_after = -1, .upstream_us = 42};
    sb_provider_parser_finish(p, &resp, events);
    sb_provider_parser_destroy(&p);
    return events;
}

/* Token counting without a counting endpoint: the count job becomes a
 * generation of one output token (no stream, no n), and the parser keeps
 * only its usage (prompt_tokens is the count) and a completed final. */
static void test_count(void)
{
    CHECK(sb_provider_openai_chat.build_count_request == NULL);
    CHECK(sb_provider_openai_chat.parse_count_response == NULL);
    json_t *job = job_with("{\"op\":\"count_tokens\",\"input\":[{\"type\":\"message\",\"role\":\"user\","
                           "\"content\":[{\"type\":\"input_text\",\"text\":\"Hi\"}]}],"
                           "\"max_output_tokens\":500,\"stream\":true,\"n\":3,\"temperature\":0.5}");
    json_t *gen = sb_provider_count_job(job);
    sb_provider_request_t req;
    json_t *err;
    json_t *body = build(gen, &req, &err);
    CHECK_JSON(body, "{\"model\":\"llama-3\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],"
                     "\"max_tokens\":1,\"temperature\":0.5,\"stream\":false}");
    CHECK_STR(req.url, "http://127.0.0.1:18080/v1/chat/completions");
    json_decref(body);
    sb_provider_request_clear(&req);
    /* The original job is untouched. */
    CHECK_INT(json_integer_value(json_object_get(json_object_get(job, "request"), "max_output_tokens")), 500);

    json_t *events = count_events(gen, 200,
                                  "{\"id\":\"c1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,"
                                  "\"message\":{\"role\":\"assistant\",\"content\":\"You\"},"
                                  "\"finish_reason\":\"length\"}],"
                                  "\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":1,\"total_tokens\":10}}");
    CHECK_JSON(events, "[{\"type\":\"usage\",\"input_tokens\":9,\"output_tokens\":1,\"reasoning_tokens\":0},"
                       "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,"
                       "\"model\":\"public-model\",\"upstream_us\":42}]");
    json_decref(events);
    /* No usage: nothing was counted. */
    events = count_events(gen, 200,
                          "{\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"You\"},"
                          "\"finish_reason\":\"stop\"}]}");
    CHECK_JSON(events, "[{\"type\":\"error\",\"status\":502,\"kind\":\"upstream_error\",\"code\":null,"
                       "\"message\":\"the upstream reported no token usage: the input could not be counted\"}]");
    json_decref(events);
    /* Errors pass as they are. */
    events = count_events(gen, 404, "{\"error\":{\"message\":\"model not found\"}}");
    CHECK_JSON(events, "[{\"type\":\"error\",\"status\":404,\"kind\":\"not_found\",\"code\":null,"
                       "\"message\":\"model not found\"}]");
    json_decref(events);
    json_decref(gen);
    json_decref(job);
}

/*
 * Streaming: the parser as the worker drives it. JSON here is written with '
 * for " (sb_ptest.single_quotes is on for these tests).
 */

/* SSE text from lines, ' turned into " (each line gets eol; "" is the blank
 * line that ends an event). Owned. */
static char *sse(const char *const *lines, size_t n, const char *eol)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++)
        total += strlen(lines[i]) + strlen(eol);
    char *out = malloc(total), *p = out;
    for (size_t i = 0; i < n; i++) {
        for (const char *c = lines[i]; *c; c++)
            *p++ = *c == '\'' ? '"' : *c;
        memcpy(p, eol, strlen(eol));
        p += strlen(eol);
    }
    *p = '\0';
    return out;
}
#define SSE(lines) sse((lines), sizeof(lines) / sizeof(lines)[0], "\n")

/* The events of streaming `text` (sent as is) with status 200 to a job with
 * `request`, in chunks of `chunk` bytes (0: all at once); every feed must
 * succeed. Ids as generated. */
static json_t *stream_raw(const char *request, const char *text, size_t chunk)
{
    json_t *job = job_with(request);
    sb_provider_parser_t *p = sb_provider_parser_new(&sb_provider_openai_chat, job);
    json_t *events = json_array();
    size_t len = strlen(text), step = chunk ? chunk : (len ? len : 1);
    for (size_t off = 0; off < len; off += step) {
        size_t n = len - off < step ? len - off : step;
        CHECK(sb_provider_parser_feed(p, 200, text + off, n, events) == 0);
    }
    sb_provider_response_t resp = {.status = 200, .retry_after = -1, .upstream_us = 42};
    sb_provider_parser_finish(p, &resp, events);
    sb_provider_parser_destroy(&p);
    CHECK(p == NULL);
    json_decref(job);
    return events;
}

#define STREAM_REQ "{'input':[],'stream':true}"
#define STREAM_REQ_N2 "{'input':[],'stream':true,'n':2}"

/* The same, ids normalized. */
static json_t *stream_for(const char *request, const char *text, size_t chunk)
{
    json_t *events = stream_raw(request, text, chunk);
    normalize_ids(events);
    return events;
}

static json_t *stream_events(const char *text, size_t chunk)
{
    return stream_for(STREAM_REQ, text, chunk);
}

/* Upstream lines: a data line and the blank line after it; a chunk with
 * choices; one choice of a chunk (finish: null or 'reason'); the usage
 * chunk of stream_options.include_usage. */
#define D(json) "data: " json, ""
#define CHUNK(choices)                                                                                                 \
    "{'id':'chatcmpl-1','object':'chat.completion.chunk','created':1,'model':'llama-3','choices':[" choices "]}"
#define CH(i, delta, finish) "{'index':" #i ",'delta':{" delta "},'logprobs':null,'finish_reason':" finish "}"
#define USAGE_CHUNK(in, out, r)                                                                                        \
    "{'id':'chatcmpl-1','object':'chat.completion.chunk','created':1,'model':'llama-3','choices':[],"                  \
    "'usage':{'prompt_tokens':" #in ",'completion_tokens':" #out ",'total_tokens':0,"                                  \
    "'completion_tokens_details':{'reasoning_tokens':" #r "}}}"
#define DONE "data: [DONE]", ""

/* Expected events. T is NC (no choice) or C0, C1: the choice tag. */
#define NC ""
#define C0 "'choice':0,"
#define C1 "'choice':1,"
#define MSG_ADDED(T, i)                                                                                                \
    "{" T "'type':'item_added','item_index':" #i ",'item':{'type':'message','id':'msg_','role':'assistant',"           \
    "'status':'in_progress','content':[]}}"
#define MSG_DONE(T, i, parts)                                                                                          \
    "{" T "'type':'item_done','item_index':" #i ",'item':{'type':'message','id':'msg_','role':'assistant',"            \
    "'status':'completed','content':[" parts "]}}"
#define TEXT_PART(t) "{'type':'output_text','text':'" t "','annotations':[]}"
#define REFUSAL_PART(t) "{'type':'refusal','refusal':'" t "'}"
#define TEXT_DELTA(T, i, t) "{" T "'type':'text_delta','item_index':" #i ",'content_index':0,'delta':'" t "'}"
#define RS_ADDED(T, i)                                                                                                 \
    "{" T "'type':'item_added','item_index':" #i ",'item':{'type':'reasoning','id':'rs_','summary':[],'content':[]}}"
#define RS_DELTA(T, i, t) "{" T "'type':'reasoning_delta','item_index':" #i ",'delta':'" t "'}"
#define RS_DONE(T, i, t)                                                                                               \
    "{" T "'type':'item_done','item_index':" #i ",'item':{'type':'reasoning','id':'rs_','summary':[],"                 \
    "'content':[{'type':'reasoning_text','text':'" t "'}]}}"
#define FC_ADDED(T, i, call, name)                                                                                     \
    "{" T "'type':'item_added','item_index':" #i ",'item':{'type':'function_call','id':'fc_','call_id':'" call "',"    \
    "'name':'" name "','arguments':'','status':'in_progress'}}"
#define ARGS_DELTA(T, i, t) "{" T "'type':'args_delta','item_index':" #i ",'delta':'" t "'}"
#define FC_DONE(T, i, call, name, args)                                                                                \
    "{" T "'type':'item_done','item_index':" #i ",'item':{'type':'function_call','id':'fc_','call_id':'" call "',"     \
    "'name':'" name "','arguments':'" args "','status':'completed'}}"
#define CHOICE_DONE(k, status, reason)                                                                                 \
    "{'type':'choice_done','choice':" #k ",'status':'" status "','incomplete_reason':" reason "}"
#define USAGE(in, out, r) "{'type':'usage','input_tokens':" #in ",'output_tokens':" #out ",'reasoning_tokens':" #r "}"
#define COMPLETED_AS(status, reason)                                                                                   \
    "{'type':'completed','status':'" status "','incomplete_reason':" reason ",'model':'public-model','upstream_us':"   \
    "42}"
#define COMPLETED COMPLETED_AS("completed", "null")
#define ERR(status, kind, msg)                                                                                         \
    "[{'type':'error','status':" #status ",'kind':'" kind "','code':null,'message':'" msg "'}]"

/* A streaming job asks for a stream and its usage; others do not, and a
 * count job never streams. */
static void test_stream_request(void)
{
    json_t *job = job_with(STREAM_REQ);
    sb_provider_request_t req;
    json_t *err;
    json_t *body = build(job, &req, &err);
    CHECK_JSON(body, "{'model':'llama-3','messages':[],'stream':true,'stream_options':{'include_usage':true}}");
    CHECK_INT(req.n_headers, 2);
    CHECK_STR(req.headers[1], "Accept: text/event-stream");
    json_decref(body);
    sb_provider_request_clear(&req);
    json_decref(job);

    CHECK_BODY("{'input':[],'stream':false}", "{'model':'llama-3','messages':[],'stream':false}");
    CHECK_BODY("{'input':[],'stream':null}", "{'model':'llama-3','messages':[],'stream':false}");

    job = job_with("{'op':'count_tokens','input':[],'stream':true}");
    body = build(job, &req, &err);
    CHECK_JSON(body, "{'model':'llama-3','messages':[],'stream':false}");
    CHECK_STR(req.headers[1], "Accept: application/json");
    json_decref(body);
    sb_provider_request_clear(&req);
    json_t *gen = sb_provider_count_job(job);
    body = build(gen, &req, &err);
    CHECK_JSON(body, "{'model':'llama-3','messages':[],'max_tokens':1,'stream':false}");
    json_decref(body);
    sb_provider_request_clear(&req);
    json_decref(gen);
    json_decref(job);
}

static const char *const text_lines[] = {
    ": OPENROUTER PROCESSING",
    D(CHUNK(CH(0, "'role':'assistant','content':'','refusal':null", "null"))),
    D(CHUNK(CH(0, "'content':'Hel'", "null"))),
    "event: message",
    "id: 3",
    D(CHUNK(CH(0, "'content':'lo'", "null"))),
    /* One event's data over two lines: joined with a line end. */
    "data: {'choices':[{'index':0,",
    "data: 'delta':{'content':' there'}}]}",
    "",
    D(CHUNK(CH(0, "", "'stop'"))),
    D(USAGE_CHUNK(9, 3, 0)),
    DONE,
};

static void test_stream_text(void)
{
    /* Whole, byte by byte, in odd chunks; with LF, CRLF and CR line ends:
     * the same events. */
    static const char *const eols[] = {"\n", "\r\n", "\r"};
    static const size_t chunks[] = {0, 1, 2, 7, 64};
    for (size_t e = 0; e < sizeof eols / sizeof eols[0]; e++) {
        char *text = sse(text_lines, sizeof text_lines / sizeof text_lines[0], eols[e]);
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            json_t *events = stream_events(text, chunks[c]);
            CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), TEXT_DELTA(NC, 0, "Hel"), TEXT_DELTA(NC, 0, "lo"),
                                      TEXT_DELTA(NC, 0, " there"), MSG_DONE(NC, 0, TEXT_PART("Hello there")),
                                      USAGE(9, 3, 0), COMPLETED));
            json_decref(events);
        }
        free(text);
    }

    /* Events go out as their chunk arrives, not at the end: after the
     * second content chunk, its delta is out. */
    char *text = SSE(text_lines);
    const char *lo = strstr(text, "\"content\":\"lo\"");
    size_t upto = lo ? (size_t)(strstr(lo, "\n\n") - text) + 2 : 0;
    json_t *job = job_with(STREAM_REQ);
    sb_provider_parser_t *p = sb_provider_parser_new(&sb_provider_openai_chat, job);
    json_t *events = json_array();
    CHECK(sb_provider_parser_feed(p, 200, text, upto, events) == 0);
    normalize_ids(events);
    CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), TEXT_DELTA(NC, 0, "Hel"), TEXT_DELTA(NC, 0, "lo")));
    json_array_clear(events);
    /* The rest, with the data line of [DONE] last and unterminated. */
    size_t len = strlen(text) - 2;
    CHECK(sb_provider_parser_feed(p, 200, text + upto, len - upto, events) == 0);
    sb_provider_response_t resp = {.status = 200, .retry_after = -1, .upstream_us = 42};
    sb_provider_parser_finish(p, &resp, events);
    normalize_ids(events);
    CHECK_JSON(events, EVENTS(TEXT_DELTA(NC, 0, " there"), MSG_DONE(NC, 0, TEXT_PART("Hello there")), USAGE(9, 3, 0),
                              COMPLETED));
    json_decref(events);
    sb_provider_parser_destroy(&p);
    json_decref(job);
    free(text);

    /* Item ids: generated as for a whole response, the same in item_added
     * and item_done. */
    text = SSE(text_lines);
    events = stream_raw(STREAM_REQ, text, 5);
    const char *a = json_string_value(json_object_get(json_object_get(json_array_get(events, 0), "item"), "id"));
    const char *b = json_string_value(json_object_get(json_object_get(json_array_get(events, 4), "item"), "id"));
    CHECK(a && b && !strncmp(a, "msg_", 4) && strlen(a) == 4 + 32 && !strcmp(a, b));
    json_decref(events);
    free(text);

    /* Without include_usage (a server that ignores it): no usage event.
     * Content as an array of parts (some servers) is its text. */
    const char *const no_usage[] = {
        D(CHUNK(CH(0, "'role':'assistant'", "null"))),
        D(CHUNK(CH(0, "'content':[{'type':'text','text':'Hi'}]", "null"))),
        D(CHUNK(CH(0, "'content':null", "'stop'"))),
        DONE,
    };
    text = SSE(no_usage);
    events = stream_events(text, 0);
    CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), TEXT_DELTA(NC, 0, "Hi"), MSG_DONE(NC, 0, TEXT_PART("Hi")), COMPLETED));
    json_decref(events);
    free(text);

    /* Usage on the last choice chunk (llama.cpp) rather than its own: one
     * usage event, at the end, with reasoning tokens. */
    const char *const usage_inline[] = {
        D(CHUNK(CH(0, "'content':'Hi'", "null"))),
        D("{'choices':[" CH(0, "", "'stop'") "],'usage':{'prompt_tokens':5,'completion_tokens':7,"
                                             "'completion_tokens_details':{'reasoning_tokens':4}}}"),
        DONE,
    };
    text = SSE(usage_inline);
    events = stream_events(text, 0);
    CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), TEXT_DELTA(NC, 0, "Hi"), MSG_DONE(NC, 0, TEXT_PART("Hi")),
                              USAGE(5, 7, 4), COMPLETED));
    json_decref(events);
    free(text);
}

/* reasoning_content (vLLM, DeepSeek) or reasoning (newer vLLM) pieces: a
 * reasoning item, closed when the content starts. */
static void test_stream_reasoning(void)
{
    const char *const lines[] = {
        D(CHUNK(CH(0, "'role':'assistant','content':''", "null"))),
        D(CHUNK(CH(0, "'reasoning_content':'Let me'", "null"))),
        D(CHUNK(CH(0, "'reasoning_content':' think.','content':null", "null"))),
        D(CHUNK(CH(0, "'reasoning_content':null,'content':'42'", "null"))),
        D(CHUNK(CH(0, "'content':'!'", "null"))),
        D(CHUNK(CH(0, "", "'stop'"))),
        D(USAGE_CHUNK(3, 9, 6)),
        DONE,
    };
    char *text = SSE(lines);
    json_t *events = stream_events(text, 3);
    CHECK_JSON(events, EVENTS(RS_ADDED(NC, 0), RS_DELTA(NC, 0, "Let me"), RS_DELTA(NC, 0, " think."),
                              RS_DONE(NC, 0, "Let me think."), MSG_ADDED(NC, 1), TEXT_DELTA(NC, 1, "42"),
                              TEXT_DELTA(NC, 1, "!"), MSG_DONE(NC, 1, TEXT_PART("42!")), USAGE(3, 9, 6), COMPLETED));
    json_decref(events);
    free(text);

    /* "reasoning"; reasoning_content wins when a server sends both; the
     * reasoning item closes with the choice when no content follows. */
    const char *const both[] = {
        D(CHUNK(CH(0, "'reasoning':'a'", "null"))),
        D(CHUNK(CH(0, "'reasoning_content':'b','reasoning':'b'", "null"))),
        D(CHUNK(CH(0, "", "'length'"))),
        DONE,
    };
    text = SSE(both);
    events = stream_events(text, 0);
    CHECK_JSON(events, EVENTS(RS_ADDED(NC, 0), RS_DELTA(NC, 0, "a"), RS_DELTA(NC, 0, "b"), RS_DONE(NC, 0, "ab"),
                              COMPLETED_AS("incomplete", "'max_output_tokens'")));
    json_decref(events);
    free(text);
}

static void test_stream_tool_calls(void)
{
    /* Two parallel calls whose argument pieces interleave: both items open
     * as their first piece comes, each piece goes to its own item, both
     * close with the choice. */
    const char *const lines[] = {
        D(CHUNK(CH(0,
                   "'role':'assistant','content':null,'tool_calls':[{'index':0,'id':'call_a','type':'function',"
                   "'function':{'name':'get_weather','arguments':''}}]",
                   "null"))),
        D(CHUNK(CH(0,
                   "'tool_calls':[{'index':1,'id':'call_b','type':'function','function':{'name':'get_time',"
                   "'arguments':''}}]",
                   "null"))),
        D(CHUNK(CH(0, "'tool_calls':[{'index':0,'function':{'arguments':'{\\'city\\':'}}]", "null"))),
        D(CHUNK(CH(0, "'tool_calls':[{'index':1,'function':{'arguments':'{\\'tz\\':'}}]", "null"))),
        D(CHUNK(CH(0, "'tool_calls':[{'index':0,'function':{'arguments':' \\'Paris\\'}'}}]", "null"))),
        D(CHUNK(CH(0, "'tool_calls':[{'index':1,'function':{'arguments':' \\'CET\\'}'}}]", "null"))),
        D(CHUNK(CH(0, "", "'tool_calls'"))),
        D(USAGE_CHUNK(20, 15, 0)),
        DONE,
    };
    char *text = SSE(lines);
    json_t *events = stream_events(text, 0);
    CHECK_JSON(events,
               EVENTS(FC_ADDED(NC, 0, "call_a", "get_weather"), FC_ADDED(NC, 1, "call_b", "get_time"),
                      ARGS_DELTA(NC, 0, "{\\'city\\':"), ARGS_DELTA(NC, 1, "{\\'tz\\':"),
                      ARGS_DELTA(NC, 0, " \\'Paris\\'}"), ARGS_DELTA(NC, 1, " \\'CET\\'}"),
                      FC_DONE(NC, 0, "call_a", "get_weather", "{\\'city\\': \\'Paris\\'}"),
                      FC_DONE(NC, 1, "call_b", "get_time", "{\\'tz\\': \\'CET\\'}"), USAGE(20, 15, 0), COMPLETED));
    json_decref(events);
    free(text);

    /* Text first: the message closes when the first call starts. Pieces of
     * two calls in one delta; a server repeating id and name in every piece
     * (the first ones stay). */
    const char *const mixed[] = {
        D(CHUNK(CH(0, "'role':'assistant','content':'Checking.'", "null"))),
        D(CHUNK(CH(0,
                   "'tool_calls':[{'index':0,'id':'c1','type':'function','function':{'name':'f','arguments':'{'}},"
                   "{'index':1,'id':'c2','type':'function','function':{'name':'g','arguments':''}}]",
                   "null"))),
        D(CHUNK(CH(0, "'tool_calls':[{'index':0,'id':'c1','function':{'name':'f','arguments':'}'}}]", "null"))),
        D(CHUNK(CH(0, "", "'tool_calls'"))),
        DONE,
    };
    text = SSE(mixed);
    events = stream_events(text, 4);
    CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), TEXT_DELTA(NC, 0, "Checking."), MSG_DONE(NC, 0, TEXT_PART("Checking.")),
                              FC_ADDED(NC, 1, "c1", "f"), ARGS_DELTA(NC, 1, "{"), FC_ADDED(NC, 2, "c2", "g"),
                              ARGS_DELTA(NC, 1, "}"), FC_DONE(NC, 1, "c1", "f", "{}"), FC_DONE(NC, 2, "c2", "g", ""),
                              COMPLETED));
    json_decref(events);
    free(text);

    /* No index (some servers): an entry with a new id is a new call, one
     * without continues the latest. The name coming after the first piece:
     * the item opens then, with the arguments so far. */
    const char *const no_index[] = {
        D(CHUNK(CH(0, "'tool_calls':[{'id':'c1','type':'function','function':{'arguments':'{\\'a\\''}}]", "null"))),
        D(CHUNK(CH(0, "'tool_calls':[{'function':{'name':'f','arguments':':1}'}}]", "null"))),
        D(CHUNK(
            CH(0, "'tool_calls':[{'id':'c2','type':'function','function':{'name':'g','arguments':'{}'}}]", "null"))),
        D(CHUNK(CH(0, "", "'tool_calls'"))),
        DONE,
    };
    text = SSE(no_index);
    events = stream_events(text, 0);
    CHECK_JSON(events, EVENTS(FC_ADDED(NC, 0, "c1", "f"), ARGS_DELTA(NC, 0, "{\\'a\\':1}"), FC_ADDED(NC, 1, "c2", "g"),
                              ARGS_DELTA(NC, 1, "{}"), FC_DONE(NC, 0, "c1", "f", "{\\'a\\':1}"),
                              FC_DONE(NC, 1, "c2", "g", "{}"), COMPLETED));
    json_decref(events);
    free(text);

    /* A call that never got its name fails at the choice's end, as in a
     * whole response; an entry that is no object at once. */
    const char *const nameless[] = {
        D(CHUNK(CH(0, "'tool_calls':[{'index':0,'id':'c1','type':'function','function':{'arguments':'{}'}}]", "null"))),
        D(CHUNK(CH(0, "", "'tool_calls'"))),
        DONE,
    };
    text = SSE(nameless);
    events = stream_events(text, 0);
    CHECK_JSON(events, ERR(502, "upstream_error", "upstream returned a malformed tool call"));
    json_decref(events);
    free(text);
    const char *const not_object[] = {
        D(CHUNK(CH(0, "'content':'x'", "null"))),
        D(CHUNK(CH(0, "'tool_calls':[7]", "null"))),
        DONE,
    };
    text = SSE(not_object);
    events = stream_events(text, 0);
    CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), TEXT_DELTA(NC, 0, "x"), MSG_DONE(NC, 0, TEXT_PART("x")),
                              "{'type':'error','status':502,'kind':'upstream_error','code':null,"
                              "'message':'upstream returned a malformed tool call'}"));
    json_decref(events);
    free(text);
}

/* A refusal streams as delta.refusal: a message whose refusal part shows in
 * its item_done (there is no refusal delta). */
static void test_stream_refusal(void)
{
    const char *const lines[] = {
        D(CHUNK(CH(0, "'role':'assistant','content':null,'refusal':''", "null"))),
        D(CHUNK(CH(0, "'refusal':'I cannot'", "null"))),
        D(CHUNK(CH(0, "'refusal':' help with that.'", "null"))),
        D(CHUNK(CH(0, "", "'stop'"))),
        DONE,
    };
    char *text = SSE(lines);
    json_t *events = stream_events(text, 0);
    CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), MSG_DONE(NC, 0, REFUSAL_PART("I cannot help with that.")), COMPLETED));
    json_decref(events);
    free(text);
}

/* n = 2, the choices interleaved: events tagged, item indices per choice, a
 * choice_done each as its finish_reason comes, one usage, an incomplete
 * final because choice 1 was cut. */
static void test_stream_choices(void)
{
    const char *const lines[] = {
        D(CHUNK(CH(0, "'role':'assistant','content':''", "null") "," CH(1, "'role':'assistant','content':''", "null"))),
        D(CHUNK(CH(1, "'reasoning_content':'hmm'", "null"))),
        D(CHUNK(CH(0, "'content':'Hi'", "null"))),
        D(CHUNK(CH(1, "'content':'Hello'", "null"))),
        D(CHUNK(CH(0, "'content':' you'", "null"))),
        D(CHUNK(CH(0, "", "'stop'"))),
        D(CHUNK(CH(1, "'content':' there'", "null"))),
        D(CHUNK(CH(1, "", "'length'"))),
        D(USAGE_CHUNK(4, 12, 1)),
        DONE,
    };
    char *text = SSE(lines);
    json_t *events = stream_for(STREAM_REQ_N2, text, 1);
    CHECK_JSON(events,
               EVENTS(RS_ADDED(C1, 0), RS_DELTA(C1, 0, "hmm"), MSG_ADDED(C0, 0), TEXT_DELTA(C0, 0, "Hi"),
                      RS_DONE(C1, 0, "hmm"), MSG_ADDED(C1, 1), TEXT_DELTA(C1, 1, "Hello"), TEXT_DELTA(C0, 0, " you"),
                      MSG_DONE(C0, 0, TEXT_PART("Hi you")), CHOICE_DONE(0, "completed", "null"),
                      TEXT_DELTA(C1, 1, " there"), MSG_DONE(C1, 1, TEXT_PART("Hello there")),
                      CHOICE_DONE(1, "incomplete", "'max_output_tokens'"), USAGE(4, 12, 1),
                      COMPLETED_AS("incomplete", "'max_output_tokens'")));
    json_decref(events);
    free(text);

    /* A choice without its finish_reason before [DONE] ends completed. */
    const char *const open[] = {
        D(CHUNK(CH(0, "'content':'a'", "null"))),
        D(CHUNK(CH(1, "'content':'b'", "'content_filter'"))),
        DONE,
    };
    text = SSE(open);
    events = stream_for(STREAM_REQ_N2, text, 0);
    CHECK_JSON(events, EVENTS(MSG_ADDED(C0, 0), TEXT_DELTA(C0, 0, "a"), MSG_ADDED(C1, 0), TEXT_DELTA(C1, 0, "b"),
                              MSG_DONE(C1, 0, TEXT_PART("b")), CHOICE_DONE(1, "incomplete", "'content_filter'"),
                              MSG_DONE(C0, 0, TEXT_PART("a")), CHOICE_DONE(0, "completed", "null"),
                              COMPLETED_AS("incomplete", "'content_filter'")));
    json_decref(events);
    free(text);

    /* One choice asked for: another index has nowhere to go. An index out
     * of any range fails. */
    const char *const extra[] = {
        D(CHUNK(CH(0, "'content':'a'", "null") "," CH(1, "'content':'b'", "null"))),
        D(CHUNK(CH(0, "", "'stop'") "," CH(1, "", "'stop'"))),
        DONE,
    };
    text = SSE(extra);
    events = stream_events(text, 0);
    CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), TEXT_DELTA(NC, 0, "a"), MSG_DONE(NC, 0, TEXT_PART("a")), COMPLETED));
    json_decref(events);
    free(text);
    const char *const range[] = {D(CHUNK(CH(100000, "'content':'a'", "null"))), DONE};
    text = SSE(range);
    events = stream_for(STREAM_REQ_N2, text, 0);
    CHECK_JSON(events, ERR(502, "upstream_error", "upstream returned a choice out of range"));
    json_decref(events);
    free(text);
}

/* finish_reason length and content_filter: an incomplete answer. */
static void test_stream_finish_reasons(void)
{
    const char *const length[] = {
        D(CHUNK(CH(0, "'content':'Once upon'", "null"))),
        D(CHUNK(CH(0, "", "'length'"))),
        D(USAGE_CHUNK(2, 2, 0)),
        DONE,
    };
    char *text = SSE(length);
    json_t *events = stream_events(text, 0);
    CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), TEXT_DELTA(NC, 0, "Once upon"), MSG_DONE(NC, 0, TEXT_PART("Once upon")),
                              USAGE(2, 2, 0), COMPLETED_AS("incomplete", "'max_output_tokens'")));
    json_decref(events);
    free(text);
    const char *const filtered[] = {D(CHUNK(CH(0, "'content':''", "'content_filter'"))), DONE};
    text = SSE(filtered);
    events = stream_events(text, 0);
    CHECK_JSON(events, EVENTS(COMPLETED_AS("incomplete", "'content_filter'")));
    json_decref(events);
    free(text);
}

/* Errors: an error object mid-stream, a malformed data line, an early end,
 * an error status. */
static void test_stream_errors(void)
{
    /* OpenAI's mid-stream server_error: what came before stays, then the
     * error; what comes after is ignored. */
    const char *const mid[] = {
        D(CHUNK(CH(0, "'content':'Hi'", "null"))),
        D("{'error':{'message':'The server had an error while processing your request.','type':'server_error',"
          "'param':null,'code':null}}"),
        D(CHUNK(CH(0, "'content':' there'", "'stop'"))),
        DONE,
    };
    char *text = SSE(mid);
    json_t *events = stream_events(text, 6);
    CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), TEXT_DELTA(NC, 0, "Hi"),
                              "{'type':'error','status':502,'kind':'upstream_error','code':null,"
                              "'message':'The server had an error while processing your request.'}"));
    json_decref(events);
    free(text);
    /* vLLM's, with the HTTP status in code; one without a message. */
    const char *const vllm[] = {
        D("{'error':{'object':'error','message':'max_tokens is too large','type':'BadRequestError','param':null,"
          "'code':400}}"),
    };
    text = SSE(vllm);
    events = stream_events(text, 0);
    CHECK_JSON(events, ERR(400, "invalid_request", "max_tokens is too large"));
    json_decref(events);
    free(text);
    events = stream_events("data: {\"error\":{}}\n\n", 0);
    CHECK_JSON(events, ERR(502, "upstream_error", "upstream stream reported an error"));
    json_decref(events);

    /* A data line that is not JSON aborts the transfer at once (the worker
     * then reports "could not be parsed"); what came before it is out. */
    const char *bad[] = {
        "data: {\"id\":\"chatcmpl-malformed\",\"object\":\n\n", /* the emulator's [[emu:malformed]] */
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [1,2]\n\n",
        "data: {\"choices\":[]}\n\ndata: nonsense\n\ndata: [DONE]\n\n",
    };
    const size_t n_before[] = {0, 2, 0};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *job = job_with(STREAM_REQ);
        sb_provider_parser_t *p = sb_provider_parser_new(&sb_provider_openai_chat, job);
        events = json_array();
        CHECK_INT(sb_provider_parser_feed(p, 200, bad[i], strlen(bad[i]), events), -EBADMSG);
        CHECK_INT(json_array_size(events), n_before[i]);
        sb_provider_parser_destroy(&p);
        json_decref(events);
        json_decref(job);
    }
    /* The same as the unterminated last line: an error event. */
    events = stream_events("data: {\"choices\":[]}\n\ndata: {oops", 0);
    CHECK_JSON(events, ERR(502, "upstream_error", "upstream returned a malformed stream event"));
    json_decref(events);

    /* Cut off: before [DONE] with the choice unfinished, or with nothing at
     * all, is a 502. */
    const char *const cut[] = {
        D(CHUNK(CH(0, "'content':'Hi'", "null"))),
    };
    text = SSE(cut);
    events = stream_events(text, 0);
    CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), TEXT_DELTA(NC, 0, "Hi"),
                              "{'type':'error','status':502,'kind':'upstream_error','code':null,"
                              "'message':'upstream stream ended before the response was complete'}"));
    json_decref(events);
    free(text);
    events = stream_events("", 0);
    CHECK_JSON(events, ERR(502, "upstream_error", "upstream stream ended before the response was complete"));
    json_decref(events);
    events = stream_events(": ping\n\n\n", 0);
    CHECK_JSON(events, ERR(502, "upstream_error", "upstream stream ended before the response was complete"));
    json_decref(events);
    /* n = 2 and only choice 0 finished: cut off too. */
    const char *const half[] = {D(CHUNK(CH(0, "'content':'a'", "'stop'")))};
    text = SSE(half);
    events = stream_for(STREAM_REQ_N2, text, 0);
    CHECK_JSON(events, EVENTS(MSG_ADDED(C0, 0), TEXT_DELTA(C0, 0, "a"), MSG_DONE(C0, 0, TEXT_PART("a")),
                              CHOICE_DONE(0, "completed", "null"),
                              "{'type':'error','status':502,'kind':'upstream_error','code':null,"
                              "'message':'upstream stream ended before the response was complete'}"));
    json_decref(events);
    free(text);
    /* Every choice finished but no [DONE] (a lax server): complete. */
    const char *const no_done[] = {D(CHUNK(CH(0, "'content':'a'", "'stop'"))), D(USAGE_CHUNK(1, 1, 0))};
    text = SSE(no_done);
    events = stream_events(text, 0);
    CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), TEXT_DELTA(NC, 0, "a"), MSG_DONE(NC, 0, TEXT_PART("a")), USAGE(1, 1, 0),
                              COMPLETED));
    json_decref(events);
    free(text);
    /* [DONE] without any choice. */
    const char *const empty[] = {D(USAGE_CHUNK(1, 0, 0)), DONE};
    text = SSE(empty);
    events = stream_events(text, 0);
    CHECK_JSON(events, ERR(502, "upstream_error", "upstream response has no choices"));
    json_decref(events);
    free(text);

    /* A non-2xx answer to a streaming job is a plain error body. */
    json_t *job = job_with(STREAM_REQ);
    sb_provider_parser_t *p = sb_provider_parser_new(&sb_provider_openai_chat, job);
    events = json_array();
    const char *body = "{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\"}}";
    CHECK(sb_provider_parser_feed(p, 429, body, strlen(body), events) == 0);
    sb_provider_response_t resp = {.status = 429, .retry_after = 3, .upstream_us = 42};
    sb_provider_parser_finish(p, &resp, events);
    CHECK_JSON(events, "[{'type':'error','status':429,'kind':'rate_limit','code':null,'message':'Rate limit reached',"
                       "'retry_after':3}]");
    json_decref(events);
    sb_provider_parser_destroy(&p);
    json_decref(job);

    /* An absurd line is refused (-E2BIG) rather than buffered on. */
    job = job_with(STREAM_REQ);
    p = sb_provider_parser_new(&sb_provider_openai_chat, job);
    events = json_array();
    size_t mib = 1024 * 1024;
    char *x = malloc(mib);
    memset(x, 'x', mib);
    memcpy(x, "data: ", 6);
    int rc = 0;
    for (size_t sent = 0; rc == 0 && sent <= SB_PROVIDER_MAX_BODY; sent += mib)
        rc = sb_provider_parser_feed(p, 200, x, mib, events);
    CHECK_INT(rc, -E2BIG);
    free(x);
    sb_provider_parser_destroy(&p);
    json_decref(events);
    json_decref(job);

    /* The stream state is freed cleanly mid-event (a cancelled job). */
    job = job_with(STREAM_REQ_N2);
    p = sb_provider_parser_new(&sb_provider_openai_chat, job);
    events = json_array();
    const char *part = "data: {\"choices\":[{\"index\":1,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\","
                       "\"function\":{\"name\":\"f\",\"arguments\":\"{\"}}]}},{\"index\":0,\"delta\":"
                       "{\"reasoning\":\"r\"}}]}\n\ndata: {\"choi";
    CHECK(sb_provider_parser_feed(p, 200, part, strlen(part), events) == 0);
    CHECK_INT(json_array_size(events), 4);
    sb_provider_parser_destroy(&p);
    json_decref(events);
    json_decref(job);
}

/* A 2xx body that is plain JSON (a server that ignored "stream"): the
 * whole-response translation, in any chunks. */
static void test_stream_plain_json(void)
{
    const char *body = "{'id':'chatcmpl-1','object':'chat.completion','choices':[{'index':0,"
                       "'message':{'role':'assistant','content':'Hello'},'finish_reason':'stop'}],"
                       "'usage':{'prompt_tokens':9,'completion_tokens':1}}";
    char *whole = Q(body);
    char *spaced = malloc(strlen(whole) + 4);
    memcpy(spaced, " \r\n", 3);
    memcpy(spaced + 3, whole, strlen(whole) + 1);
    const size_t chunks[] = {0, 1, 9};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        json_t *events = stream_events(spaced, chunks[c]);
        CHECK_JSON(events, EVENTS(MSG_ADDED(NC, 0), TEXT_DELTA(NC, 0, "Hello"), MSG_DONE(NC, 0, TEXT_PART("Hello")),
                                  USAGE(9, 1, 0), COMPLETED));
        json_decref(events);
    }
    free(spaced);
    free(whole);
    /* Its errors are those of a whole response. */
    json_t *events = stream_events("{\"choices\":[{\"message\":", 0);
    CHECK_JSON(events, ERR(502, "upstream_error", "upstream returned malformed JSON"));
    json_decref(events);
}

/* The events of `type` in events (new array). */
static json_t *only(const json_t *events, const char *type)
{
    json_t *out = json_array();
    size_t i;
    json_t *ev;
    json_array_foreach (events, i, ev) {
        const char *t = json_string_value(json_object_get(ev, "type"));
        if (t && !strcmp(t, type))
            json_array_append(out, ev);
    }
    return out;
}

/* The streamed answer (SSE text) ends in the same items as the same answer
 * sent whole (a body written with '), and so in the same item_added,
 * choice_done, usage and completed events, so that a stored streamed answer
 * equals a non-streamed one. Only the deltas differ. */
#define CHECK_SAME(request, text, body) check_same((request), (text), (body), __FILE__, __LINE__)
static void check_same(const char *request, const char *text, const char *whole_body, const char *file, int line)
{
    char *body = Q(whole_body);
    json_t *streamed = stream_for(request, text, 3);
    json_t *whole = parse_raw(request, 200, body, -1);
    static const char *const types[] = {"item_done", "item_added", "choice_done", "usage", "completed"};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        json_t *a = only(streamed, types[t]), *b = only(whole, types[t]);
        sb_test_checks++;
        if (!json_equal(a, b) || (t == 0 && json_array_size(a) == 0)) {
            sb_test_failures++;
            char *sa = json_dumps(a, JSON_COMPACT | JSON_SORT_KEYS);
            char *sb = json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS);
            fprintf(stderr, "%s:%d: %s differ\n  streamed: %s\n  whole:    %s\n", file, line, types[t], sa, sb);
            free(sa);
            free(sb);
        }
        json_decref(a);
        json_decref(b);
    }
    json_decref(streamed);
    json_decref(whole);
    free(body);
}

static void test_stream_same_items(void)
{
    /* Reasoning, text with a refusal, two interleaved calls. */
    const char *const lines[] = {
        D(CHUNK(CH(0, "'role':'assistant','content':''", "null"))),
        D(CHUNK(CH(0, "'reasoning_content':'Let me'", "null"))),
        D(CHUNK(CH(0, "'reasoning_content':' think.'", "null"))),
        D(CHUNK(CH(0, "'content':'It is'", "null"))),
        D(CHUNK(CH(0, "'content':' sunny.'", "null"))),
        D(CHUNK(CH(0, "'refusal':'Not all.'", "null"))),
        D(CHUNK(CH(0,
                   "'tool_calls':[{'index':0,'id':'call_a','type':'function','function':{'name':'get_weather',"
                   "'arguments':'{\\'city\\':'}}]",
                   "null"))),
        D(CHUNK(CH(0,
                   "'tool_calls':[{'index':1,'id':'call_b','type':'function','function':{'name':'now',"
                   "'arguments':''}}]",
                   "null"))),
        D(CHUNK(CH(0, "'tool_calls':[{'index':0,'function':{'arguments':'\\'Paris\\'}'}}]", "null"))),
        D(CHUNK(CH(0, "", "'tool_calls'"))),
        D(USAGE_CHUNK(20, 15, 5)),
        DONE,
    };
    char *text = SSE(lines);
    CHECK_SAME(
        STREAM_REQ, text,
        "{'choices':[{'index':0,'message':{'role':'assistant','reasoning_content':'Let me think.',"
        "'content':'It is sunny.','refusal':'Not all.','tool_calls':["
        "{'id':'call_a','type':'function','function':{'name':'get_weather','arguments':'{\\'city\\':\\'Paris\\'}'}},"
        "{'id':'call_b','type':'function','function':{'name':'now','arguments':''}}]},"
        "'finish_reason':'tool_calls'}],"
        "'usage':{'prompt_tokens':20,'completion_tokens':15,'completion_tokens_details':{'reasoning_tokens':5}}}");
    free(text);

    /* n = 2 (the choices one after the other, so that the orders match):
     * tags, per-choice item indices, choice_done, the incomplete final. */
    const char *const two[] = {
        D(CHUNK(CH(0, "'role':'assistant','content':''", "null"))),
        D(CHUNK(CH(0, "'content':'a b'", "null"))),
        D(CHUNK(CH(0, "", "'stop'"))),
        D(CHUNK(CH(1, "'reasoning':'r'", "null"))),
        D(CHUNK(CH(1, "'content':'c'", "null"))),
        D(CHUNK(CH(1, "'tool_calls':[{'index':0,'id':'c1','type':'function','function':{'name':'f','arguments':'{}'}}]",
                   "null"))),
        D(CHUNK(CH(1, "", "'length'"))),
        D(USAGE_CHUNK(4, 12, 1)),
        DONE,
    };
    text = SSE(two);
    CHECK_SAME(
        STREAM_REQ_N2, text,
        "{'choices':[{'index':0,'message':{'role':'assistant','content':'a b'},'finish_reason':'stop'},"
        "{'index':1,'message':{'role':'assistant','reasoning':'r','content':'c','tool_calls':[{'id':'c1',"
        "'type':'function','function':{'name':'f','arguments':'{}'}}]},'finish_reason':'length'}],"
        "'usage':{'prompt_tokens':4,'completion_tokens':12,'completion_tokens_details':{'reasoning_tokens':1}}}");
    free(text);
}

/* Context-length errors, however a Chat Completions server says it, become
 * one canonical error: 400 invalid_request, code context_length_exceeded,
 * the upstream's message after "context length exceeded: ". Written with
 * escaped double quotes: the upstream texts have apostrophes. */
#define CTX_ERR(msg)                                                                                                   \
    "[{\"type\":\"error\",\"status\":400,\"kind\":\"invalid_request\",\"code\":\"context_length_exceeded\","           \
    "\"message\":\"context length exceeded: " msg "\"}]"
static void test_context_length(void)
{
    /* OpenAI: error.code. */
    CHECK_EVENTS(400,
                 "{\"error\":{\"message\":\"This model's maximum context length is 8192 tokens. However, your "
                 "messages resulted in 9000 tokens. Please reduce the length of the messages.\","
                 "\"type\":\"invalid_request_error\",\"param\":\"messages\",\"code\":\"context_length_exceeded\"}}",
                 CTX_ERR("This model's maximum context length is 8192 tokens. However, your messages resulted in "
                         "9000 tokens. Please reduce the length of the messages."));
    /* vLLM (older: the fields at the top, the HTTP status as code). */
    CHECK_EVENTS(400,
                 "{\"object\":\"error\",\"message\":\"This model's maximum context length is 2048 tokens. However, "
                 "you requested 3000 tokens.\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}",
                 CTX_ERR("This model's maximum context length is 2048 tokens. However, you requested 3000 tokens."));
    /* llama.cpp: its own error type. */
    CHECK_EVENTS(400,
                 "{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context size, try "
                 "increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":5000,\"n_ctx\":4096}}",
                 CTX_ERR("the request exceeds the available context size, try increasing it"));
    /* Case does not matter in the message; a 200 error body counts too. */
    CHECK_EVENTS(400, "{\"error\":{\"message\":\"Input is longer than the Context Length of this model\"}}",
                 CTX_ERR("Input is longer than the Context Length of this model"));
    CHECK_EVENTS(200, "{\"error\":{\"message\":\"too long\",\"code\":\"context_length_exceeded\"}}",
                 CTX_ERR("too long"));
    /* Not one: another 400, and a 500 that mentions the words. */
    CHECK_EVENTS(400, "{\"error\":{\"message\":\"max_tokens must be at least 1\",\"type\":\"BadRequestError\"}}",
                 "[{\"type\":\"error\",\"status\":400,\"kind\":\"invalid_request\",\"code\":null,"
                 "\"message\":\"max_tokens must be at least 1\"}]");
    CHECK_EVENTS(500, "{\"error\":{\"message\":\"context length table corrupt\"}}",
                 "[{\"type\":\"error\",\"status\":500,\"kind\":\"upstream_error\",\"code\":null,"
                 "\"message\":\"context length table corrupt\"}]");
    /* vLLM's mid-stream error object. */
    json_t *events =
        stream_raw("{\"input\":[],\"stream\":true}",
                   "data: {\"error\":{\"object\":\"error\",\"message\":\"This model's maximum context "
                   "length is 2048 tokens.\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}\n\n",
                   0);
    CHECK_JSON(events, CTX_ERR("This model's maximum context length is 2048 tokens."));
    json_decref(events);
}

int main(void)
{
    sb_ptest = (sb_ptest_t){.provider = &sb_provider_openai_chat, .route = route, .normalize_ids = normalize_ids};
    test_request_basic();
    test_request_roles_and_content();
    test_request_tool_calls();
    test_request_tools_and_format();
    test_request_n();
    test_request_format_and_effort();
    test_request_files_and_audio();
    test_request_refusal();
    test_request_refused();
    test_response_text();
    test_response_tool_calls();
    test_response_finish_reasons();
    test_response_reasoning_and_refusal();
    test_response_choices();
    test_response_errors();
    test_count();
    test_context_length();
    sb_ptest.single_quotes = true; /* the stream tests write JSON with ' */
    test_stream_request();
    test_stream_text();
    test_stream_reasoning();
    test_stream_tool_calls();
    test_stream_refusal();
    test_stream_choices();
    test_stream_finish_reasons();
    test_stream_errors();
    test_stream_plain_json();
    test_stream_same_items();
    return sb_test_finish("provider_openai_chat");
}

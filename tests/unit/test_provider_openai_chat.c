/* Unit tests for the openai-chat adapter: canonical job -> exact upstream
 * request, chat responses -> exact canonical event sequences, error mapping. */
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
    CHECK_REFUSED("{\"input\":[],\"tools\":[{\"type\":\"web_search\"}]}", 400,
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
        "\"model\":\"public-model\",\"upstream_ms\":42}]");

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
                 "\"model\":\"public-model\",\"upstream_ms\":42}]");

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
        "\"model\":\"public-model\",\"upstream_ms\":42}]");
    CHECK_EVENTS(200, "{\"choices\":[{\"message\":{\"content\":\"\"},\"finish_reason\":\"content_filter\"}]}",
                 "[{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":\"content_filter\","
                 "\"model\":\"public-model\",\"upstream_ms\":42}]");
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
                 "\"model\":\"public-model\",\"upstream_ms\":42}]");
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
                 "\"model\":\"public-model\",\"upstream_ms\":42}]");
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
                 "\"model\":\"public-model\",\"upstream_ms\":42}]");
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
        "\"model\":\"public-model\",\"upstream_ms\":42}]");
    /* n asked for but one choice came back: still tagged, with its choice_done. */
    CHECK_EVENTS_FOR("{\"input\":[],\"n\":2}",
                     "{\"choices\":[{\"message\":{\"content\":\"\"},\"finish_reason\":\"stop\"}]}",
                     "[{\"type\":\"choice_done\",\"choice\":0,\"status\":\"completed\",\"incomplete_reason\":null},"
                     "{\"type\":\"completed\",\"status\":\"completed\",\"incomplete_reason\":null,"
                     "\"model\":\"public-model\",\"upstream_ms\":42}]");
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
                 "[{\"type\":\"error\",\"status\":401,\"kind\":\"authentication\",\"code\":null,"
                 "\"message\":\"Incorrect API key provided\"}]");
    CHECK_EVENTS(403, "not json",
                 "[{\"type\":\"error\",\"status\":403,\"kind\":\"permission\",\"code\":null,"
                 "\"message\":\"upstream returned HTTP 403\"}]");
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
    sb_provider_response_t resp = {.status = status, .retry_after = -1, .upstream_ms = 42};
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
                       "\"model\":\"public-model\",\"upstream_ms\":42}]");
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
    return sb_test_finish("provider_openai_chat");
}

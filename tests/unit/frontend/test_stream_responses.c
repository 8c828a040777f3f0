/* test_stream_responses: the Responses stream renderer
 * (style/responses/fe_stream_responses.c) fed canonical events through its
 * narrow hooks: the event sequence of docs/streaming.md and the Open
 * Responses specification (every event "event: <type>" + "data: {...}" of
 * that type, sequence_number rising by 1 from 0), the exact bytes of the
 * item events the openai SDKs accumulate, namespaced calls shown as OpenAI
 * shows them, sealed reasoning, and the error + response.failed ending. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_stream_harness.h"
#include "sb_alloc.h"
#include "sb_event.h"

/* The events of text (all of them), each checked for the Responses framing:
 * "event: T" whose data has "type":T first and the next sequence_number.
 * Returns a new array of the data objects; names[i] gets each type. */
static json_t *events(const char *text, long long *seq)
{
    json_t *all = json_array();
    const char *p = text;
    for (;;) {
        char name[96];
        json_t *data = fe_sh_next_sse(&p, "\n\n", name, sizeof name);
        if (!data)
            break;
        CHECK_STR(json_string_value(json_object_get(data, "type")), name);
        CHECK_INT(json_integer_value(json_object_get(data, "sequence_number")), (*seq)++);
        const char *first = json_object_iter_key(json_object_iter(data));
        CHECK_STR(first, "type"); /* the SDKs switch on it; the spec lists it first */
        json_array_append_new(all, data);
    }
    CHECK(*p == '\0'); /* nothing but whole events */
    return all;
}

static const char *type_at(const json_t *evs, size_t i)
{
    return json_string_value(json_object_get(json_array_get(evs, i), "type"));
}

/* A message streamed as text deltas. */
static void test_text(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_responses, NULL, "resp_1", NULL);
    long long seq = 0;
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\","
                   "\"role\":\"assistant\",\"content\":[],\"status\":\"in_progress\"}}");
    char *got = fe_sh_take(&h);
    json_t *evs = events(got, &seq);
    /* The stream opens with the response in progress, then the item. */
    CHECK_INT(json_array_size(evs), 3);
    CHECK_STR(type_at(evs, 0), "response.created");
    CHECK_STR(type_at(evs, 1), "response.in_progress");
    for (size_t i = 0; i < 2; i++) {
        const json_t *resp = json_object_get(json_array_get(evs, i), "response");
        CHECK_STR(json_string_value(json_object_get(resp, "id")), "resp_1");
        CHECK_STR(json_string_value(json_object_get(resp, "object")), "response");
        CHECK_STR(json_string_value(json_object_get(resp, "status")), "in_progress");
        CHECK_INT(json_integer_value(json_object_get(resp, "created_at")), 1700000000);
        CHECK(json_is_null(json_object_get(resp, "completed_at")));
        CHECK(json_is_null(json_object_get(resp, "usage")));
        CHECK_INT(json_array_size(json_object_get(resp, "output")), 0);
        CHECK_STR(json_string_value(json_object_get(resp, "model")), "m");
    }
    const char *added = strstr(got, "event: response.output_item.added\n");
    FE_SH_CHECK_BYTES(added ? added : "",
                      "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
                      "\"sequence_number\":2,\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\","
                      "\"role\":\"assistant\",\"content\":[],\"status\":\"in_progress\"}}\n\n");
    json_decref(evs);
    free(got);

    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"Hi\"}");
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\" there\"}");
    got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, "event: response.content_part.added\ndata: {\"type\":\"response.content_part.added\","
                           "\"sequence_number\":3,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
                           "\"part\":{\"type\":\"output_text\",\"text\":\"\",\"annotations\":[]}}\n\n"
                           "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
                           "\"sequence_number\":4,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
                           "\"delta\":\"Hi\",\"logprobs\":[]}\n\n"
                           "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\","
                           "\"sequence_number\":5,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
                           "\"delta\":\" there\",\"logprobs\":[]}\n\n");
    free(got);

    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\","
                   "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi there\","
                   "\"annotations\":[]}],\"status\":\"completed\"}}");
    got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\","
                           "\"sequence_number\":6,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
                           "\"text\":\"Hi there\",\"logprobs\":[]}\n\n"
                           "event: response.content_part.done\ndata: {\"type\":\"response.content_part.done\","
                           "\"sequence_number\":7,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,"
                           "\"part\":{\"type\":\"output_text\",\"text\":\"Hi there\",\"annotations\":[]}}\n\n"
                           "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\","
                           "\"sequence_number\":8,\"output_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\","
                           "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi there\","
                           "\"annotations\":[]}],\"status\":\"completed\"}}\n\n");
    free(got);
    seq = 9;

    fe_sh_feed(&h, "{\"type\":\"usage\",\"input_tokens\":5,\"output_tokens\":2,\"reasoning_tokens\":0}");
    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"completed\"}"));
    json_t *rendered = fe_sh_complete(&h);
    got = fe_sh_take(&h);
    evs = events(got, &seq);
    CHECK_INT(json_array_size(evs), 1);
    CHECK_STR(type_at(evs, 0), "response.completed");
    const json_t *resp = json_object_get(json_array_get(evs, 0), "response");
    CHECK(json_equal(resp, rendered)); /* the final event is the non-streamed response */
    CHECK_STR(json_string_value(json_object_get(resp, "status")), "completed");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(resp, "usage"), "total_tokens")), 7);
    CHECK_STR(
        json_string_value(json_object_get(
            json_array_get(json_object_get(json_array_get(json_object_get(resp, "output"), 0), "content"), 0), "text")),
        "Hi there");
    json_decref(evs);
    json_decref(rendered);
    free(got);
    fe_sh_free(&h);
}

/* A call of a namespace tool: shown with its own name and namespace, its
 * arguments as deltas then done; a message delivered whole still gets its
 * part added, one whole delta and the done events; a length stop ends with
 * response.incomplete. */
static void test_call_and_whole_items(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_responses, NULL, "resp_2", NULL);
    json_object_set_new(h.parsed.style_state, "namespaced", json_pack("{s:[s, s]}", "ns__f", "ns", "f"));
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\","
                   "\"call_id\":\"call_1\",\"name\":\"ns__f\",\"arguments\":\"\"}}");
    free(fe_sh_take(&h));
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":0,\"delta\":\"{\\\"a\\\":\"}");
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":0,\"delta\":\"1}\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\","
                   "\"call_id\":\"call_1\",\"name\":\"ns__f\",\"arguments\":\"{\\\"a\\\":1}\",\"status\":"
                   "\"completed\"}}");
    char *got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(
        got,
        "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\","
        "\"sequence_number\":3,\"item_id\":\"fc_1\",\"output_index\":0,\"delta\":\"{\\\"a\\\":\"}\n\n"
        "event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\","
        "\"sequence_number\":4,\"item_id\":\"fc_1\",\"output_index\":0,\"delta\":\"1}\"}\n\n"
        "event: response.function_call_arguments.done\ndata: {\"type\":\"response.function_call_arguments.done\","
        "\"sequence_number\":5,\"item_id\":\"fc_1\",\"output_index\":0,\"arguments\":\"{\\\"a\\\":1}\"}\n\n"
        "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":6,"
        "\"output_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\",\"call_id\":\"call_1\","
        "\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\",\"status\":\"completed\",\"namespace\":\"ns\"}}\n\n");
    free(got);

    /* A message that came whole (no item_added, no deltas). */
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"message\",\"id\":\"msg_2\","
                   "\"role\":\"assistant\",\"content\":[{\"type\":\"refusal\",\"refusal\":\"No.\"}],\"status\":"
                   "\"completed\"}}");
    got = fe_sh_take(&h);
    long long seq = 7;
    json_t *evs = events(got, &seq);
    static const char *const whole[] = {"response.output_item.added", "response.content_part.added",
                                        "response.refusal.delta",     "response.refusal.done",
                                        "response.content_part.done", "response.output_item.done"};
    CHECK_INT(json_array_size(evs), 6);
    for (size_t i = 0; i < 6; i++)
        CHECK_STR(type_at(evs, i), whole[i]);
    CHECK_STR(json_string_value(json_object_get(json_array_get(evs, 2), "delta")), "No.");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(evs, 0), "output_index")), 1);
    json_decref(evs);
    free(got);

    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":"
                         "\"max_output_tokens\"}"));
    json_decref(fe_sh_complete(&h));
    got = fe_sh_take(&h);
    evs = events(got, &seq);
    CHECK_STR(type_at(evs, 0), "response.incomplete");
    const json_t *resp = json_object_get(json_array_get(evs, 0), "response");
    CHECK_STR(json_string_value(json_object_get(resp, "status")), "incomplete");
    CHECK_STR(json_string_value(json_object_get(json_object_get(resp, "incomplete_details"), "reason")),
              "max_output_tokens");
    const json_t *call = json_array_get(json_object_get(resp, "output"), 0);
    CHECK_STR(json_string_value(json_object_get(call, "name")), "f");
    CHECK_STR(json_string_value(json_object_get(call, "namespace")), "ns");
    json_decref(evs);
    free(got);
    fe_sh_free(&h);
}

/* Reasoning streams as reasoning_text deltas; with include
 * ["reasoning.encrypted_content"] the done item carries the sealed item and
 * no plain content, and private upstream fields never show. */
static void test_reasoning(void)
{
    sb_seal_key_t key;
    if (sb_seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &key) != 0)
        abort();
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_responses, NULL, "resp_3", &key);
    h.parsed.seal_reasoning = true;
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\","
                   "\"summary\":[],\"signature\":\"up\"}}");
    fe_sh_feed(&h, "{\"type\":\"reasoning_delta\",\"item_index\":0,\"delta\":\"hmm\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\","
                   "\"summary\":[],\"content\":[{\"type\":\"reasoning_text\",\"text\":\"hmm\"}],\"signature\":"
                   "\"up\"}}");
    char *got = fe_sh_take(&h);
    CHECK(strstr(got, "\"up\"") == NULL); /* the upstream's signature stays private */
    long long seq = 0;
    json_t *evs = events(got, &seq);
    static const char *const order[] = {"response.created",           "response.in_progress",
                                        "response.output_item.added", "response.content_part.added",
                                        "response.reasoning.delta",   "response.reasoning.done",
                                        "response.content_part.done", "response.output_item.done"};
    CHECK_INT(json_array_size(evs), 8);
    for (size_t i = 0; i < 8 && i < json_array_size(evs); i++)
        CHECK_STR(type_at(evs, i), order[i]);
    const json_t *item = json_object_get(json_array_get(evs, 2), "item");
    CHECK_INT(json_array_size(json_object_get(item, "summary")), 0);
    CHECK(!json_object_get(item, "content"));
    CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(evs, 3), "part"), "type")),
              "reasoning_text");
    CHECK_STR(json_string_value(json_object_get(json_array_get(evs, 5), "text")), "hmm");
    item = json_object_get(json_array_get(evs, 7), "item");
    CHECK(json_string_length(json_object_get(item, "encrypted_content")) > 20);
    CHECK(!json_object_get(item, "content"));
    json_decref(evs);
    free(got);
    fe_sh_free(&h);
}

/* A failure after the stream started: OpenAI's "error" event, then
 * response.failed with what was completed and the error. */
static void test_failure(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_responses, NULL, "resp_4", NULL);
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"x\"}");
    free(fe_sh_take(&h));
    fe_error_t e;
    fe_error_set(&e, 502, SB_ERR_UPSTREAM, "upstream_error", NULL, "upstream failed");
    fe_sh_fail(&h, &e);
    char *got = fe_sh_take(&h);
    const char *fail = "event: error\ndata: {\"type\":\"error\",\"sequence_number\":2,\"error\":{\"message\":"
                       "\"upstream failed\",\"type\":\"server_error\",\"param\":null,\"code\":\"upstream_error\"}}\n\n";
    CHECK(strncmp(got, fail, strlen(fail)) == 0);
    if (strncmp(got, fail, strlen(fail)) != 0)
        fprintf(stderr, "  got:\n%s\n", got);
    long long seq = 2;
    json_t *evs = events(got, &seq);
    CHECK_STR(type_at(evs, 1), "response.failed");
    const json_t *resp = json_object_get(json_array_get(evs, 1), "response");
    CHECK_STR(json_string_value(json_object_get(resp, "status")), "failed");
    CHECK_STR(json_string_value(json_object_get(json_object_get(resp, "error"), "code")), "upstream_error");
    CHECK_STR(json_string_value(json_object_get(json_object_get(resp, "error"), "message")), "upstream failed");
    json_decref(evs);
    free(got);
    fe_stream_responses.keepalive(&h.sc, h.out);
    got = fe_sh_take(&h);
    CHECK_STR(got, ": keep-alive\n\n");
    free(got);
    CHECK_STR(fe_stream_responses.content_type, "text/event-stream; charset=utf-8");
    fe_sh_free(&h);
}

int main(void)
{
    test_text();
    test_call_and_whole_items();
    test_reasoning();
    test_failure();
    return sb_test_finish("stream_responses");
}

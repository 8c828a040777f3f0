/* test_stream_responses: the Responses stream renderer
 * (style/responses/fe_stream_responses.c) fed canonical events through its
 * narrow hooks: the event sequence of docs/streaming.md and the Open
 * Responses specification (every event "event: <type>" + "data: {...}" of
 * that type, sequence_number rising by 1 from 0), the exact bytes of the
 * item events the openai SDKs accumulate, namespaced calls shown as OpenAI
 * shows them, sealed reasoning, the error + response.failed ending, and the
 * built-in tool items the gateway runs (docs/tools.md): web search, MCP
 * lists, calls and approval requests, annotations, each streamed event the
 * Open Responses document defines validated against it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_stream_harness.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_jschema.h"

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

/* The Open Responses document (/work/shared/spec, beside the checkout), for
 * the events it defines; NULL (and the spec checks skipped, said once) when
 * it is not there. */
static json_t *spec_components(void)
{
    static json_t *components;
    static bool tried;
    if (tried)
        return components;
    tried = true;
    const char *tail = "tests/unit/frontend/test_stream_responses.c";
    const char *file = __FILE__;
    size_t n = strlen(file), t = strlen(tail);
    char *path = n >= t && !strcmp(file + n - t, tail)
                     ? sb_xasprintf("%.*s../shared/spec/openresponses-openapi.json", (int)(n - t), file)
                     : sb_xstrdup("/work/shared/spec/openresponses-openapi.json");
    json_t *spec = json_load_file(path, 0, NULL);
    if (!spec)
        fprintf(stderr, "note: %s not found: events not checked against the Open Responses document\n", path);
    free(path);
    components = json_incref(json_object_get(spec, "components"));
    json_decref(spec);
    return components;
}

/* Each event of evs whose type the Open Responses document defines (a
 * components schema whose "type" property is that one value) validates
 * against it (sb_jschema: $ref, anyOf, required, types; oneOf is not
 * checked). Returns how many were checked. */
static int spec_check(const json_t *evs)
{
    json_t *components = spec_components();
    if (!components)
        return 0;
    int checked = 0;
    size_t i;
    json_t *ev;
    json_array_foreach (evs, i, ev) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        const char *name;
        json_t *schema, *hit = NULL;
        json_object_foreach (json_object_get(components, "schemas"), name, schema) {
            json_t *e = json_object_get(json_object_get(json_object_get(schema, "properties"), "type"), "enum");
            if (json_array_size(e) == 1 && type && !strcmp(json_string_value(json_array_get(e, 0)) ?: "", type)) {
                hit = json_pack("{s:o, s:O}", "$ref", json_sprintf("#/components/schemas/%s", name), "components",
                                components);
                break;
            }
        }
        if (!hit)
            continue;
        char err[256];
        sb_jschema_t *js = sb_jschema_new(hit, err, sizeof err);
        CHECK(js != NULL);
        if (!js)
            fprintf(stderr, "  spec schema for %s: %s\n", type, err);
        int rc = js ? sb_jschema_validate(js, ev, err, sizeof err) : 0;
        CHECK_INT(rc, 0);
        if (rc != 0) {
            char *text = json_dumps(ev, JSON_COMPACT);
            fprintf(stderr, "  %s: %s\n", text, err);
            free(text);
        }
        checked++;
        sb_jschema_destroy(&js);
        json_decref(hit);
    }
    return checked;
}

/* The types of evs are exactly want (n of them). */
static void check_types(const json_t *evs, const char *const *want, size_t n)
{
    CHECK_INT(json_array_size(evs), n);
    for (size_t i = 0; i < n && i < json_array_size(evs); i++) {
        CHECK_STR(type_at(evs, i), want[i]);
    }
}

/* text holds block (whole events, byte for byte). */
static void check_has(const char *text, const char *block)
{
    CHECK(strstr(text, block) != NULL);
    if (!strstr(text, block))
        fprintf(stderr, "  missing:\n%s\n", block);
}

#define WS_DONE                                                                                                        \
    "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_1\",\"status\":"      \
    "\"completed\",\"action\":{\"type\":\"search\",\"query\":\"q\",\"sources\":[{\"type\":\"url\",\"url\":"            \
    "\"https://a.example/\"}]},\"sb_output\":\"the page text\"}}"
#define CITE(i, s, e)                                                                                                  \
    "{\"type\":\"url_citation\",\"start_index\":" #s ",\"end_index\":" #e ",\"url\":\"https://a.example/\","           \
    "\"title\":\"A" #i "\"}"

/* A web search then a message citing it, in one lifecycle: the search's
 * in_progress / searching / completed events, its private sb_output and
 * (not included) its sources never shown; the message's annotations as
 * response.output_text.annotation.added, those only the done item brings
 * sent before its text is done; tool_log renders nothing. */
static void test_web_search(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_responses, NULL, "resp_5", NULL);
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_1\","
                   "\"status\":\"in_progress\"}}");
    fe_sh_feed(&h, "{\"type\":\"item_progress\",\"item_index\":0,\"status\":\"searching\"}");
    fe_sh_feed(&h, "{\"type\":\"item_progress\",\"item_index\":0,\"status\":\"pondering\"}"); /* no such event */
    fe_sh_feed(&h, WS_DONE);
    fe_sh_feed(&h, "{\"type\":\"item_progress\",\"item_index\":0,\"status\":\"searching\"}"); /* after done: none */
    fe_sh_feed(&h, "{\"type\":\"tool_log\",\"kind\":\"web_search\",\"server\":\"searxng\",\"name\":\"q\","
                   "\"item_id\":\"ws_1\",\"duration_ms\":12,\"outcome\":\"ok\",\"bytes_in\":10,\"bytes_out\":900}");
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":1,\"item\":{\"type\":\"message\",\"id\":\"msg_1\","
                   "\"role\":\"assistant\",\"content\":[],\"status\":\"in_progress\"}}");
    fe_sh_feed(&h, "{\"type\":\"annotation_added\",\"item_index\":1,\"content_index\":0,\"annotation_index\":0,"
                   "\"annotation\":" CITE(0, 4, 27) "}");
    fe_sh_feed(&h,
               "{\"type\":\"text_delta\",\"item_index\":1,\"content_index\":0,\"delta\":\"See [A](https://a.example/)"
               " and [B](https://a.example/).\"}");
    fe_sh_feed(&h,
               "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"message\",\"id\":\"msg_1\","
               "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"See [A](https://a.example/)"
               " and [B](https://a.example/).\",\"annotations\":[" CITE(0, 4, 27) "," CITE(
                   1, 32, 55) "]}],"
                              "\"status\":\"completed\"}}");
    fe_sh_feed(&h, "{\"type\":\"usage\",\"input_tokens\":50,\"output_tokens\":9,\"reasoning_tokens\":0}");
    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"completed\"}"));
    json_t *rendered = fe_sh_complete(&h);
    char *got = fe_sh_take(&h);
    long long seq = 0;
    json_t *evs = events(got, &seq); /* sequence_number rising by 1 from 0 over the whole stream */
    static const char *const want[] = {"response.created",
                                       "response.in_progress",
                                       "response.output_item.added",
                                       "response.web_search_call.in_progress",
                                       "response.web_search_call.searching",
                                       "response.web_search_call.completed",
                                       "response.output_item.done",
                                       "response.output_item.added",
                                       "response.content_part.added",
                                       "response.output_text.annotation.added",
                                       "response.output_text.delta",
                                       "response.output_text.annotation.added",
                                       "response.output_text.done",
                                       "response.content_part.done",
                                       "response.output_item.done",
                                       "response.completed"};
    check_types(evs, want, sizeof want / sizeof want[0]);
    check_has(got, "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
                   "\"sequence_number\":2,\"output_index\":0,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_1\","
                   "\"status\":\"in_progress\",\"action\":{\"type\":\"search\"}}}\n\n"
                   "event: response.web_search_call.in_progress\ndata: {\"type\":"
                   "\"response.web_search_call.in_progress\",\"sequence_number\":3,\"item_id\":\"ws_1\","
                   "\"output_index\":0}\n\n"
                   "event: response.web_search_call.searching\ndata: {\"type\":\"response.web_search_call.searching\","
                   "\"sequence_number\":4,\"item_id\":\"ws_1\",\"output_index\":0}\n\n"
                   "event: response.web_search_call.completed\ndata: {\"type\":\"response.web_search_call.completed\","
                   "\"sequence_number\":5,\"item_id\":\"ws_1\",\"output_index\":0}\n\n"
                   "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\","
                   "\"sequence_number\":6,\"output_index\":0,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_1\","
                   "\"status\":\"completed\",\"action\":{\"type\":\"search\",\"query\":\"q\"}}}\n\n");
    check_has(got,
              "event: response.output_text.annotation.added\ndata: {\"type\":"
              "\"response.output_text.annotation.added\",\"sequence_number\":9,\"item_id\":\"msg_1\","
              "\"output_index\":1,\"content_index\":0,\"annotation_index\":0,\"annotation\":" CITE(0, 4, 27) "}\n\n");
    check_has(got,
              "event: response.output_text.annotation.added\ndata: {\"type\":"
              "\"response.output_text.annotation.added\",\"sequence_number\":11,\"item_id\":\"msg_1\","
              "\"output_index\":1,\"content_index\":0,\"annotation_index\":1,\"annotation\":" CITE(1, 32, 55) "}\n\n");
    CHECK(strstr(got, "the page text") == NULL); /* sb_output stays private */
    CHECK(strstr(got, "\"sources\"") == NULL);   /* not asked for */
    CHECK(strstr(got, "tool_log") == NULL && strstr(got, "searxng") == NULL);
    CHECK(spec_check(evs) >= 10 || !spec_components());
    /* The final event is the non-streamed response, the search in it as shown. */
    const json_t *resp = json_object_get(json_array_get(evs, json_array_size(evs) - 1), "response");
    CHECK(json_equal(resp, rendered));
    const json_t *ws = json_array_get(json_object_get(resp, "output"), 0);
    CHECK(!json_object_get(ws, "sb_output"));
    CHECK(!json_object_get(json_object_get(ws, "action"), "sources"));
    CHECK_INT(json_array_size(json_object_get(
                  json_array_get(json_object_get(json_array_get(json_object_get(resp, "output"), 1), "content"), 0),
                  "annotations")),
              2);
    /* The stored result keeps what the next turn needs. */
    CHECK_STR(json_string_value(json_object_get(json_array_get(h.result.items, 0), "sb_output")), "the page text");
    json_decref(evs);
    json_decref(rendered);
    free(got);
    fe_sh_free(&h);

    /* With include ["web_search_call.action.sources"]: the sources show. */
    fe_sh_init(&h, &fe_style_responses, NULL, "resp_6", NULL);
    json_object_set_new(h.parsed.style_state, "include_sources", json_true());
    fe_sh_feed(&h, WS_DONE); /* delivered whole: added, in_progress, completed, done */
    got = fe_sh_take(&h);
    seq = 0;
    evs = events(got, &seq);
    static const char *const whole[] = {"response.created",
                                        "response.in_progress",
                                        "response.output_item.added",
                                        "response.web_search_call.in_progress",
                                        "response.web_search_call.completed",
                                        "response.output_item.done"};
    check_types(evs, whole, sizeof whole / sizeof whole[0]);
    CHECK_STR(json_string_value(
                  json_object_get(json_object_get(json_object_get(json_array_get(evs, 2), "item"), "action"), "type")),
              "search");
    const json_t *done = json_object_get(json_array_get(evs, 5), "item");
    CHECK_STR(json_string_value(json_object_get(
                  json_array_get(json_object_get(json_object_get(done, "action"), "sources"), 0), "url")),
              "https://a.example/");
    CHECK(!json_object_get(done, "sb_output"));
    json_decref(evs);
    free(got);
    fe_sh_free(&h);
}

/* MCP: a server's tool list (completed), another's that failed, a call
 * whose arguments stream (completed), a call delivered whole that failed,
 * an approval request (added and done only). */
static void test_mcp(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_responses, NULL, "resp_7", NULL);
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"mcp_list_tools\",\"id\":\"mcpl_1\","
                   "\"server_label\":\"dice\"}}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"mcp_list_tools\",\"id\":\"mcpl_1\","
                   "\"server_label\":\"dice\",\"tools\":[{\"name\":\"roll\",\"input_schema\":{\"type\":\"object\"}}],"
                   "\"error\":null}}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"mcp_list_tools\",\"id\":\"mcpl_2\","
                   "\"server_label\":\"down\",\"tools\":[],\"error\":\"connection refused\"}}");
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":2,\"item\":{\"type\":\"mcp_call\",\"id\":\"mcp_1\","
                   "\"server_label\":\"dice\",\"name\":\"roll\",\"arguments\":\"\",\"status\":\"in_progress\"}}");
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":2,\"delta\":\"{\\\"n\\\":\"}");
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":2,\"delta\":\"2}\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":2,\"item\":{\"type\":\"mcp_call\",\"id\":\"mcp_1\","
                   "\"server_label\":\"dice\",\"name\":\"roll\",\"arguments\":\"{\\\"n\\\":2}\",\"output\":\"4\","
                   "\"error\":null,\"status\":\"completed\",\"approval_request_id\":null}}");
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":3,\"item\":{\"type\":\"mcp_call\",\"id\":\"mcp_2\","
                   "\"server_label\":\"dice\",\"name\":\"roll\",\"arguments\":\"\"}}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":3,\"item\":{\"type\":\"mcp_call\",\"id\":\"mcp_2\","
                   "\"server_label\":\"dice\",\"name\":\"roll\",\"arguments\":\"{}\",\"output\":null,"
                   "\"error\":\"tool error: no dice\",\"status\":\"failed\",\"approval_request_id\":null}}");
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":4,\"item\":{\"type\":\"mcp_approval_request\",\"id\":"
                   "\"mcpr_1\",\"server_label\":\"dice\",\"name\":\"wipe\",\"arguments\":\"{}\"}}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":4,\"item\":{\"type\":\"mcp_approval_request\",\"id\":"
                   "\"mcpr_1\",\"server_label\":\"dice\",\"name\":\"wipe\",\"arguments\":\"{}\"}}");
    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"completed\"}"));
    json_t *rendered = fe_sh_complete(&h);
    char *got = fe_sh_take(&h);
    long long seq = 0;
    json_t *evs = events(got, &seq);
    static const char *const want[] = {
        "response.created", "response.in_progress",
        /* 0: the list */
        "response.output_item.added", "response.mcp_list_tools.in_progress", "response.mcp_list_tools.completed",
        "response.output_item.done",
        /* 1: the failed list, delivered whole */
        "response.output_item.added", "response.mcp_list_tools.in_progress", "response.mcp_list_tools.failed",
        "response.output_item.done",
        /* 2: the call */
        "response.output_item.added", "response.mcp_call.in_progress", "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.delta", "response.mcp_call_arguments.done", "response.mcp_call.completed",
        "response.output_item.done",
        /* 3: the failed call: its arguments as one delta */
        "response.output_item.added", "response.mcp_call.in_progress", "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done", "response.mcp_call.failed", "response.output_item.done",
        /* 4: the approval request */
        "response.output_item.added", "response.output_item.done", "response.completed"};
    check_types(evs, want, sizeof want / sizeof want[0]);
    check_has(got, "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
                   "\"sequence_number\":2,\"output_index\":0,\"item\":{\"type\":\"mcp_list_tools\",\"id\":\"mcpl_1\","
                   "\"server_label\":\"dice\",\"tools\":[]}}\n\n"
                   "event: response.mcp_list_tools.in_progress\ndata: {\"type\":"
                   "\"response.mcp_list_tools.in_progress\",\"sequence_number\":3,\"item_id\":\"mcpl_1\","
                   "\"output_index\":0}\n\n"
                   "event: response.mcp_list_tools.completed\ndata: {\"type\":\"response.mcp_list_tools.completed\","
                   "\"sequence_number\":4,\"item_id\":\"mcpl_1\",\"output_index\":0}\n\n");
    check_has(got, "event: response.mcp_list_tools.failed\ndata: {\"type\":\"response.mcp_list_tools.failed\","
                   "\"sequence_number\":8,\"item_id\":\"mcpl_2\",\"output_index\":1}\n\n"
                   "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\","
                   "\"sequence_number\":9,\"output_index\":1,\"item\":{\"type\":\"mcp_list_tools\",\"id\":\"mcpl_2\","
                   "\"server_label\":\"down\",\"tools\":[],\"error\":\"connection refused\"}}\n\n");
    check_has(got, "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
                   "\"sequence_number\":10,\"output_index\":2,\"item\":{\"type\":\"mcp_call\",\"id\":\"mcp_1\","
                   "\"server_label\":\"dice\",\"name\":\"roll\",\"arguments\":\"\",\"status\":\"in_progress\","
                   "\"output\":null,\"error\":null}}\n\n"
                   "event: response.mcp_call.in_progress\ndata: {\"type\":\"response.mcp_call.in_progress\","
                   "\"sequence_number\":11,\"item_id\":\"mcp_1\",\"output_index\":2}\n\n"
                   "event: response.mcp_call_arguments.delta\ndata: {\"type\":\"response.mcp_call_arguments.delta\","
                   "\"sequence_number\":12,\"item_id\":\"mcp_1\",\"output_index\":2,\"delta\":\"{\\\"n\\\":\"}\n\n"
                   "event: response.mcp_call_arguments.delta\ndata: {\"type\":\"response.mcp_call_arguments.delta\","
                   "\"sequence_number\":13,\"item_id\":\"mcp_1\",\"output_index\":2,\"delta\":\"2}\"}\n\n"
                   "event: response.mcp_call_arguments.done\ndata: {\"type\":\"response.mcp_call_arguments.done\","
                   "\"sequence_number\":14,\"item_id\":\"mcp_1\",\"output_index\":2,\"arguments\":"
                   "\"{\\\"n\\\":2}\"}\n\n"
                   "event: response.mcp_call.completed\ndata: {\"type\":\"response.mcp_call.completed\","
                   "\"sequence_number\":15,\"item_id\":\"mcp_1\",\"output_index\":2}\n\n"
                   "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\","
                   "\"sequence_number\":16,\"output_index\":2,\"item\":{\"type\":\"mcp_call\",\"id\":\"mcp_1\","
                   "\"server_label\":\"dice\",\"name\":\"roll\",\"arguments\":\"{\\\"n\\\":2}\",\"output\":\"4\","
                   "\"error\":null,\"status\":\"completed\",\"approval_request_id\":null}}\n\n");
    check_has(got, "event: response.mcp_call_arguments.delta\ndata: {\"type\":\"response.mcp_call_arguments.delta\","
                   "\"sequence_number\":19,\"item_id\":\"mcp_2\",\"output_index\":3,\"delta\":\"{}\"}\n\n"
                   "event: response.mcp_call_arguments.done\ndata: {\"type\":\"response.mcp_call_arguments.done\","
                   "\"sequence_number\":20,\"item_id\":\"mcp_2\",\"output_index\":3,\"arguments\":\"{}\"}\n\n"
                   "event: response.mcp_call.failed\ndata: {\"type\":\"response.mcp_call.failed\","
                   "\"sequence_number\":21,\"item_id\":\"mcp_2\",\"output_index\":3}\n\n");
    check_has(got, "event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\","
                   "\"sequence_number\":23,\"output_index\":4,\"item\":{\"type\":\"mcp_approval_request\",\"id\":"
                   "\"mcpr_1\",\"server_label\":\"dice\",\"name\":\"wipe\",\"arguments\":\"{}\"}}\n\n");
    CHECK(strstr(got, "function_call_arguments") == NULL);
    spec_check(evs);
    const json_t *resp = json_object_get(json_array_get(evs, json_array_size(evs) - 1), "response");
    CHECK(json_equal(resp, rendered));
    CHECK_INT(json_array_size(json_object_get(resp, "output")), 5);
    json_decref(evs);
    json_decref(rendered);
    free(got);
    fe_sh_free(&h);
}

/* Chat's and Gemini's renderers write nothing for the new canonical events
 * (their switch defaults). The Messages style renders annotations as
 * citations (test_stream_messages.c). */
static void test_other_styles_ignore(void)
{
    const fe_style_t *styles[] = {&fe_style_chat, &fe_style_gemini};
    for (size_t k = 0; k < sizeof styles / sizeof styles[0]; k++) {
        fe_sh_t h;
        fe_sh_init(&h, styles[k], NULL, "r_1", NULL);
        fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\","
                       "\"role\":\"assistant\",\"content\":[],\"status\":\"in_progress\"}}");
        fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"Hi\"}");
        free(fe_sh_take(&h));
        fe_sh_feed(&h, "{\"type\":\"item_progress\",\"item_index\":0,\"status\":\"searching\"}");
        fe_sh_feed(&h, "{\"type\":\"annotation_added\",\"item_index\":0,\"content_index\":0,\"annotation_index\":0,"
                       "\"annotation\":" CITE(0, 0, 2) "}");
        fe_sh_feed(&h, "{\"type\":\"tool_log\",\"kind\":\"mcp_call\",\"server\":\"dice\",\"outcome\":\"ok\"}");
        char *got = fe_sh_take(&h);
        CHECK_STR(got, "");
        free(got);
        fe_sh_free(&h);
    }
}

int main(void)
{
    test_text();
    test_call_and_whole_items();
    test_reasoning();
    test_failure();
    test_web_search();
    test_mcp();
    test_other_styles_ignore();
    return sb_test_finish("stream_responses");
}

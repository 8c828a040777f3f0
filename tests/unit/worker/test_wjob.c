/*
 * test_wjob: one job's life (wjob.c), against the fake broker and upstream of
 * sb_worker_test.h: its events and final event, cancel, jobs refused on
 * receipt, strict structured output (the hold, the retry, the failure), n
 * choices natively or by fan-out, and count jobs.
 */
#include "sb_worker_test.h"

static void test_simple_job(void)
{
    setenv("SB_TEST_WORKER_KEY", "sk-worker-test", 1);
    send_job("job_simple", make_job("openai-chat", "fast", srv_port, "SB_TEST_WORKER_KEY"), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_simple", 3000));
    static const char *const want[] = {"item_added", "text_delta", "item_done", "usage", "completed"};
    int k = 0;
    for (int i = 0; i < n_events; i++) {
        if (strcmp(events[i].job_id, "job_simple"))
            continue;
        CHECK(k < 5);
        if (k >= 5)
            break;
        CHECK_STR(sb_event_type_name(sb_event_type_of(events[i].ev)), want[k]);
        CHECK(events[i].final == (k == 4));
        k++;
    }
    CHECK_INT(k, 5);
    const got_event_t *g = final_of("job_simple");
    CHECK(g && sb_event_type_of(g->ev) == SB_EV_COMPLETED);
    if (g) {
        CHECK_STR(json_string_value(json_object_get(g->ev, "model")), "public-model");
        CHECK_STR(json_string_value(json_object_get(g->ev, "status")), "completed");
    }
    /* What the upstream saw. */
    srv_rec_t *r = &srv_recs[srv_n - 1];
    CHECK_STR(r->path, "/v1/chat/completions");
    CHECK_STR(r->auth, "Bearer sk-worker-test");
    /* The upstream answered: the final header says so, and only it. */
    CHECK_STR(final_upstream("job_simple"), "ok");
    CHECK(!partial_has_upstream("job_simple"));
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(r->body, "messages"), 0), "content")),
              "Hi");
}

/* Sequential jobs to one upstream share one pooled connection. */
static void test_reuse(void)
{
    send_job("job_reuse1", make_job("openai-chat", "fast", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_reuse1", 3000));
    send_job("job_reuse2", make_job("openai-chat", "fast", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_reuse2", 3000));
    CHECK(final_type("job_reuse2") == SB_EV_COMPLETED);
    CHECK(srv_n >= 2 && srv_recs[srv_n - 1].peer_port == srv_recs[srv_n - 2].peer_port);
}

static void test_concurrent(void)
{
    int first = srv_n;
    send_job("job_c1", make_job("openai-chat", "slow300", srv_port, NULL), 0);
    send_job("job_c2", make_job("openai-chat", "slow300", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_c1", 3000));
    CHECK(run_until(has_final, "job_c2", 3000));
    CHECK_INT(srv_n, first + 2);
    srv_rec_t *a = &srv_recs[first], *b = &srv_recs[first + 1];
    /* Overlap: both requests reached the upstream before either was answered. */
    int64_t last_recv = a->recv_us > b->recv_us ? a->recv_us : b->recv_us;
    int64_t first_reply = a->reply_us < b->reply_us ? a->reply_us : b->reply_us;
    CHECK(last_recv < first_reply);
    CHECK(final_type("job_c1") == SB_EV_COMPLETED);
    CHECK(final_type("job_c2") == SB_EV_COMPLETED);
}

static void test_cancel(sb_worker_t *w)
{
    int want = srv_n + 1;
    send_job("job_cancel", make_job("openai-chat", "hang", srv_port, NULL), 0);
    CHECK(run_until(has_requests, &want, 3000));
    srv_rec_t *r = &srv_recs[want - 1];
    CHECK_INT(sb_worker_inflight(w), 1);
    run_for(20);
    CHECK(!srv_closed(r)); /* still waiting upstream */
    broker_send(SB_CMD_CANCEL, json_pack("{s:s}", "job_id", "job_cancel"), NULL);
    CHECK(run_until(has_final, "job_cancel", 3000));
    check_final_error("job_cancel", 499, "cancelled", "job cancelled");
    CHECK_STR(final_upstream("job_cancel"), ""); /* no verdict on the upstream */
    /* The upstream request's connection was closed. */
    CHECK(run_until(rec_closed, r, 3000));
    CHECK_INT(sb_worker_inflight(w), 0);
    /* A CANCEL for a job that is over is ignored. */
    broker_send(SB_CMD_CANCEL, json_pack("{s:s}", "job_id", "job_cancel"), NULL);
    run_for(50);
    CHECK_INT(count_events("job_cancel"), 1);
}

static void test_bad_jobs(void)
{
    send_job("job_provider", make_job("carrier-pigeon", "fast", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_provider", 3000));
    check_final_error("job_provider", 501, "server_error", "provider kind 'carrier-pigeon' is not supported");

    unsetenv("SB_TEST_MISSING_KEY");
    send_job("job_cred", make_job("openai-chat", "fast", srv_port, "SB_TEST_MISSING_KEY"), 0);
    CHECK(run_until(has_final, "job_cred", 3000));
    check_final_error("job_cred", 502, "upstream_error", "upstream credential 'SB_TEST_MISSING_KEY' is not configured");
    CHECK_STR(final_upstream("job_provider"), "");
    CHECK_STR(final_upstream("job_cred"), "");

    /* A body that is not msgpack. */
    json_t *gh = json_pack("{s:s}", "job_id", "job_garbage");
    CHECK_INT(sb_wire_send(broker, worker_id, SB_CMD_JOB, gh, "\xc1", 1), 0);
    json_decref(gh);
    sb_zsock_ev_poke(broker_watch);
    CHECK(run_until(has_final, "job_garbage", 3000));
    check_final_error("job_garbage", 400, "invalid_request", "job body is not a valid msgpack job");

    /* No body at all, and a job that is not an object. */
    json_t *h = json_pack("{s:s}", "job_id", "job_nobody");
    CHECK_INT(sb_wire_send(broker, worker_id, SB_CMD_JOB, h, NULL, 0), 0);
    json_decref(h);
    sb_zsock_ev_poke(broker_watch);
    CHECK(run_until(has_final, "job_nobody", 3000));
    check_final_error("job_nobody", 400, "invalid_request", "job body");
    send_job("job_array", json_pack("[i]", 1), 0);
    CHECK(run_until(has_final, "job_array", 3000));
    check_final_error("job_array", 400, "invalid_request", "job body");

    /* Translation errors come from the adapter (web search, MCP, the code
     * interpreter, file search and image generation are the tool loop's; a
     * built-in tool only an upstream runs is the adapter's). */
    json_t *job = make_job("openai-chat", "fast", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "tools", json_pack("[{s:s}]", "type", "computer_use_preview"));
    send_job("job_tool", job, 0);
    CHECK(run_until(has_final, "job_tool", 3000));
    check_final_error("job_tool", 400, "invalid_request",
                      "unsupported parameter: tool type 'computer_use_preview' is not supported");
    CHECK_STR(final_upstream("job_tool"), "");

    /* A job whose shape is wrong (sb_job_check on receipt): refused before
     * any upstream request, in the words the adapters used. */
    int before = srv_n;
    job = make_job("openai-chat", "fast", srv_port, NULL);
    json_array_append_new((json_t *)json_object_get(sb_job_request(job), "input"), json_pack("{s:s}", "role", "user"));
    send_job("job_untyped", job, 0);
    CHECK(run_until(has_final, "job_untyped", 3000));
    check_final_error("job_untyped", 400, "invalid_request", "input item 1 has no type");
    CHECK_STR(final_upstream("job_untyped"), "");
    CHECK_INT(srv_n, before);

    /* An operation the worker does not know. */
    job = make_job("openai-chat", "fast", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "op", json_string("embed"));
    send_job("job_op", job, 0);
    CHECK(run_until(has_final, "job_op", 3000));
    check_final_error("job_op", 400, "invalid_request", "job request.op is not supported");
}

static void test_strict_valid(void)
{
    int first = srv_n;
    send_job("job_sv", make_format_job("json_ok", true), 0);
    CHECK(run_until(has_final, "job_sv", 3000));
    check_completed("job_sv");
    CHECK_INT(srv_n, first + 1);
    CHECK_INT(count_events("job_sv"), 5);
    CHECK_STR(job_text("job_sv", 0), srv_json_ok);
    /* What the upstream saw. */
    json_t *rf = json_object_get(srv_recs[first].body, "response_format");
    CHECK_STR(json_string_value(json_object_get(rf, "type")), "json_schema");
    CHECK(json_is_true(json_object_get(json_object_get(rf, "json_schema"), "strict")));

    /* Not strict: a violation passes through untouched, with no retry. */
    first = srv_n;
    send_job("job_nonstrict", make_format_job("json_bad", false), 0);
    CHECK(run_until(has_final, "job_nonstrict", 3000));
    check_completed("job_nonstrict");
    CHECK_INT(srv_n, first + 1);
    CHECK_STR(job_text("job_nonstrict", 0), srv_json_bad);

    /* A refusal is the model declining, not a violation. */
    first = srv_n;
    send_job("job_refuse", make_format_job("refuse", true), 0);
    CHECK(run_until(has_final, "job_refuse", 3000));
    check_completed("job_refuse");
    CHECK_INT(srv_n, first + 1);
}

static void test_strict_retry(void)
{
    int first = srv_n;
    send_job("job_once", make_format_job("json_once_a", true), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_once", 3000));
    check_completed("job_once");
    CHECK_INT(srv_n, first + 2); /* the upstream saw 2 requests */
    /* Only the second attempt's events reached the broker. */
    CHECK_INT(count_events("job_once"), 5);
    CHECK_STR(job_text("job_once", 0), srv_json_ok);
    if (srv_n == first + 2)
        CHECK(json_equal(srv_recs[first].body, srv_recs[first + 1].body));
}

static void test_strict_fail(void)
{
    int first = srv_n;
    send_job("job_bad", make_format_job("json_bad", true), 0);
    CHECK(run_until(has_final, "job_bad", 3000));
    check_final_error("job_bad", 502, "upstream_error",
                      "The model's output did not match the JSON schema 'person' after 2 attempts: "
                      "$.age: expected integer, got string");
    const got_event_t *g = final_of("job_bad");
    CHECK(g && !strcmp(json_string_value(json_object_get(g->ev, "code")) ?: "", "invalid_structured_output"));
    CHECK(g && strstr(json_string_value(json_object_get(g->ev, "message")) ?: "", "age"));
    CHECK_STR(final_upstream("job_bad"), "ok"); /* the model's fault, not the route's */
    run_for(50);
    CHECK_INT(srv_n, first + 2); /* exactly 2 upstream requests */
}

static void test_strict_tool(void)
{
    json_t *tool = J("{\"type\":\"function\",\"name\":\"get_weather\",\"strict\":true,\"parameters\":{"
                     "\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"],"
                     "\"additionalProperties\":false}}");
    int first = srv_n;
    json_t *job = make_job("openai-chat", "tool_once_b", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "tools", json_pack("[O]", tool));
    send_job("job_tool_once", job, 0);
    CHECK(run_until(has_final, "job_tool_once", 3000));
    check_completed("job_tool_once");
    CHECK_INT(srv_n, first + 2);
    json_t *evs = job_events("job_tool_once");
    const json_t *done = json_array_get(evs, 2);
    CHECK(sb_event_type_of(done) == SB_EV_ITEM_DONE);
    CHECK_STR(json_string_value(json_object_get(json_object_get(done, "item"), "arguments")), "{\"city\":\"Paris\"}");
    json_decref(evs);

    /* The same tool without strict: bad arguments pass through. */
    json_object_set_new(tool, "strict", json_false());
    first = srv_n;
    job = make_job("openai-chat", "tool_once_c", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "tools", json_pack("[O]", tool));
    send_job("job_tool_loose", job, 0);
    CHECK(run_until(has_final, "job_tool_loose", 3000));
    check_completed("job_tool_loose");
    CHECK_INT(srv_n, first + 1);
    json_decref(tool);
}

/* An unusable strict schema is refused before any upstream request. */
static void test_strict_unusable(void)
{
    int first = srv_n;
    json_t *job = make_format_job("json_ok", true);
    json_object_set_new(json_object_get(json_object_get((json_t *)sb_job_request(job), "text"), "format"), "schema",
                        J("{\"type\":\"string\",\"pattern\":\"(?=x)\"}")); /* lookahead: unsupported */
    send_job("job_unusable", job, 0);
    CHECK(run_until(has_final, "job_unusable", 3000));
    check_final_error("job_unusable", 400, "invalid_request",
                      "text.format.schema 'person' is not a usable JSON Schema: ");
    run_for(20);
    CHECK_INT(srv_n, first);
}

/* Cancelling while the retry is upstream stops it. */
static void test_strict_cancel_retry(sb_worker_t *w)
{
    int first = srv_n, want = srv_n + 2;
    send_job("job_retry_cancel", make_format_job("json_hang_c", true), 0);
    CHECK(run_until(has_requests, &want, 3000));
    run_for(20);
    CHECK_INT(sb_worker_inflight(w), 1);
    CHECK(!has_final("job_retry_cancel"));
    broker_send(SB_CMD_CANCEL, json_pack("{s:s}", "job_id", "job_retry_cancel"), NULL);
    CHECK(run_until(has_final, "job_retry_cancel", 3000));
    check_final_error("job_retry_cancel", 499, "cancelled", "job cancelled");
    CHECK(run_until(rec_closed, &srv_recs[first + 1], 3000));
    CHECK_INT(sb_worker_inflight(w), 0);
    run_for(50);
    CHECK_INT(srv_n, first + 2);

    /* And the retry keeps to the job's deadline. */
    first = srv_n;
    send_job("job_retry_deadline", make_format_job("json_hang_d", true), sb_now_ms() + 400);
    CHECK(run_until(has_final, "job_retry_deadline", 3000));
    check_final_error("job_retry_deadline", 504, "timeout", "timeout: upstream did not answer within ");
    CHECK_INT(srv_n, first + 2);
    CHECK(run_until(rec_closed, &srv_recs[first + 1], 3000));
}

/* An upstream that can do n gets one request with n. */
static void test_n_native(void)
{
    int first = srv_n;
    json_t *job = make_job("openai-chat", "multi", srv_port, NULL);
    set_n(job, 2, "{\"n\":true}");
    send_job("job_native_n", job, 0);
    CHECK(run_until(has_final, "job_native_n", 3000));
    check_completed("job_native_n");
    CHECK_INT(srv_n, first + 1);
    CHECK_INT(json_integer_value(json_object_get(srv_recs[first].body, "n")), 2);
    CHECK_STR(job_text("job_native_n", 0), "Hello");
    CHECK_STR(job_text("job_native_n", 1), "Hello #1");
}

/* capabilities {"n":false}: n concurrent requests without n, merged. */
static void test_fanout(void)
{
    int first = srv_n;
    json_t *job = make_job("openai-chat", "single_a", srv_port, NULL);
    set_n(job, 3, "{\"n\":false}");
    send_job("job_fan", job, 0);
    CHECK(run_until(has_final, "job_fan", 3000));
    check_completed("job_fan");
    CHECK_INT(srv_n, first + 3);
    int64_t last_recv = 0, first_reply = INT64_MAX;
    for (int i = first; i < srv_n; i++) {
        CHECK(json_object_get(srv_recs[i].body, "n") == NULL);
        if (srv_recs[i].recv_us > last_recv)
            last_recv = srv_recs[i].recv_us;
        if (srv_recs[i].reply_us < first_reply)
            first_reply = srv_recs[i].reply_us;
    }
    CHECK(last_recv < first_reply); /* concurrent */

    /* Choices 0..2, each with its items (index 0) and a choice_done; one
     * usage summed over the calls; the final last. */
    json_t *evs = job_events("job_fan");
    int done[3] = {0}, usage = 0;
    bool text_seen[3] = {false};
    size_t i;
    json_t *ev;
    json_array_foreach (evs, i, ev) {
        enum sb_event_type t = sb_event_type_of(ev);
        int k = sb_event_choice(ev);
        CHECK(k >= 0 && k < 3);
        if (k < 0 || k > 2)
            continue;
        if (t == SB_EV_ITEM_ADDED || t == SB_EV_TEXT_DELTA || t == SB_EV_ITEM_DONE) {
            CHECK(json_is_integer(json_object_get(ev, "choice")));
            CHECK_INT(json_integer_value(json_object_get(ev, "item_index")), 0);
            CHECK(!done[k]);
            text_seen[k] |= t == SB_EV_TEXT_DELTA;
        } else if (t == SB_EV_CHOICE_DONE) {
            done[k]++;
            CHECK_STR(json_string_value(json_object_get(ev, "status")), "completed");
        } else if (t == SB_EV_USAGE) {
            usage++;
            CHECK_INT(json_integer_value(json_object_get(ev, "input_tokens")), 15);
            CHECK_INT(json_integer_value(json_object_get(ev, "output_tokens")), 6);
        }
        CHECK((t == SB_EV_COMPLETED) == (i == json_array_size(evs) - 1));
    }
    for (int k = 0; k < 3; k++) {
        CHECK_INT(done[k], 1);
        CHECK(text_seen[k]);
        CHECK(job_text("job_fan", k) && !strncmp(job_text("job_fan", k), "Hello ", 6));
    }
    CHECK_INT(usage, 1);
    CHECK_INT(json_array_size(evs), 3 * 4 + 2);
    json_decref(evs);

    /* Without the capability flag the same model refuses n (one request). */
    first = srv_n;
    job = make_job("openai-chat", "single_b", srv_port, NULL);
    set_n(job, 3, NULL);
    send_job("job_fan_nocap", job, 0);
    CHECK(run_until(has_final, "job_fan_nocap", 3000));
    check_final_error("job_fan_nocap", 400, "invalid_request", "n must be 1 for this model");
    CHECK_INT(srv_n, first + 1);
}

/* One failing call fails the job and cancels the others. */
static void test_fanout_fail(void)
{
    int first = srv_n;
    json_t *job = make_job("openai-chat", "single_fail", srv_port, NULL);
    set_n(job, 3, "{\"n\":false}");
    send_job("job_fan_fail", job, 0);
    CHECK(run_until(has_final, "job_fan_fail", 3000));
    check_final_error("job_fan_fail", 500, "upstream_error", "boom");
    CHECK_STR(final_upstream("job_fan_fail"), "failed");
    CHECK_INT(srv_n, first + 3);
    for (int i = first; i < first + 3; i++)
        if (srv_recs[i].req) /* the two left hanging */
            CHECK(run_until(rec_closed, &srv_recs[i], 3000));
}

/* Validation applies to each call of a fan-out: one bad choice retries alone. */
static void test_fanout_strict(void)
{
    int first = srv_n;
    json_t *job = make_format_job("json_once_fan", true);
    set_n(job, 3, "{\"n\":false}");
    send_job("job_fan_strict", job, 0);
    CHECK(run_until(has_final, "job_fan_strict", 3000));
    check_completed("job_fan_strict");
    CHECK_INT(srv_n, first + 4);
    for (int k = 0; k < 3; k++)
        CHECK_STR(job_text("job_fan_strict", k), srv_json_ok);
}

/* A count job on an upstream without a counting endpoint: one one-token
 * generation (never fanned out, never strict-checked or retried), and only
 * its usage and completed go back. */
static void test_count_by_generation(void)
{
    int first = srv_n;
    json_t *job = make_format_job("json_bad", true); /* strict would retry json_bad */
    set_n(job, 3, "{\"n\":false}");                  /* a fan-out would make 3 calls */
    json_object_set_new((json_t *)sb_job_request(job), "op", json_string(SB_JOB_OP_COUNT_TOKENS));
    json_object_set_new((json_t *)sb_job_request(job), "max_output_tokens", json_integer(500));
    send_job("job_count", job, 0);
    CHECK(run_until(has_final, "job_count", 3000));
    check_completed("job_count");
    CHECK_INT(srv_n, first + 1);
    CHECK_INT(json_integer_value(json_object_get(srv_recs[first].body, "max_tokens")), 1);
    CHECK(json_object_get(srv_recs[first].body, "n") == NULL);
    CHECK(json_object_get(srv_recs[first].body, "op") == NULL);
    json_t *evs = job_events("job_count");
    CHECK_INT(json_array_size(evs), 2);
    CHECK(sb_event_type_of(json_array_get(evs, 0)) == SB_EV_USAGE);
    CHECK_INT(json_integer_value(json_object_get(json_array_get(evs, 0), "input_tokens")), 5);
    json_decref(evs);
}

/* Streamed strict output cannot be held back: the events go on as they come,
 * the check runs at the end, and a violation ends the stream with 502 after
 * one attempt (a retry could not take back what the client has seen). */
static void test_stream_strict(void)
{
    int first = srv_n;
    json_t *job = make_format_job("json_bad", true);
    json_object_set_new((json_t *)sb_job_request(job), "stream", json_true());
    send_job("job_stream_strict", job, 0);
    CHECK(run_until(has_final, "job_stream_strict", 3000));
    /* item_added, text_delta, item_done, usage went out before the check. */
    check_final_error_after("job_stream_strict", 4, 502, "upstream_error",
                            "The model's output did not match the JSON schema 'person' after 1 attempts: ");
    CHECK_INT(srv_n, first + 1);
    CHECK_STR(job_text("job_stream_strict", 0), srv_json_bad); /* it was streamed */

    first = srv_n;
    job = make_format_job("json_ok", true);
    json_object_set_new((json_t *)sb_job_request(job), "stream", json_true());
    send_job("job_stream_strict_ok", job, 0);
    CHECK(run_until(has_final, "job_stream_strict_ok", 3000));
    check_completed("job_stream_strict_ok");
    CHECK_STR(job_text("job_stream_strict_ok", 0), srv_json_ok);
    CHECK_INT(srv_n, first + 1);
}

int main(void)
{
    sb_worker_t *w = sb_wt_start();
    test_simple_job();
    test_reuse();
    test_concurrent();
    test_cancel(w);
    test_bad_jobs();
    test_strict_valid();
    test_strict_retry();
    test_strict_fail();
    test_strict_tool();
    test_strict_unusable();
    test_strict_cancel_retry(w);
    test_n_native();
    test_fanout();
    test_fanout_fail();
    test_fanout_strict();
    test_count_by_generation();
    test_stream_strict();
    return sb_wt_finish(&w, "wjob");
}

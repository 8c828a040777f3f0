/*
 * fe_generate: the pipeline shared by every generation endpoint, whatever its
 * style: parse -> model and permission -> preparation (prompt template,
 * stored context, feature and call-id checks, sealed reasoning, files) ->
 * job on the broker -> events collected -> stored -> rendered. Styles only
 * translate. A token-count endpoint (r->count_tokens) runs the same pipeline
 * with a count-only job (request.op "count_tokens", sb_job.h) and renders
 * the count from the usage event.
 *
 * The order lives here and only here: fe_generate_steps[] lists the
 * preparation steps {flag, needed, run}; fe_generate_prepare runs the first
 * one not yet started whose needed(r) holds, handing it the continuation
 * (itself), and submits the job when none is left. A step that fails ends
 * the request itself. A failed job may fall back to the next model of its
 * chain (fe_fallback.h decides which; this file looks it up and submits
 * again).
 */
#include "fe_generate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_bg.h"
#include "fe_body.h"
#include "fe_call_ids.h"
#include "fe_fallback.h"
#include "fe_features.h"
#include "fe_files_resolve.h"
#include "fe_items.h"
#include "fe_limits.h"
#include "fe_metrics.h"
#include "fe_prompt.h"
#include "fe_reasoning.h"
#include "fe_request_db.h"
#include "fe_sql.h"
#include "fe_sql_conversations.h"
#include "fe_stream.h"
#include "fe_tokens.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_job.h"
#include "sb_log.h"
#include "sb_time.h"

/* Deadline slack past the job's own deadline: the broker and worker answer
 * first in every normal case; this only catches a lost broker. */
#define FE_DEADLINE_SLACK_MS 2000

/* The preparation steps (r->prepared: those started; one that fails ends
 * the request, so a started step is either running or done). */
enum {
    FE_PREP_PROMPT = 1,        /* prompt template expanded */
    FE_PREP_CONTEXT = 2,       /* previous_response_id's items loaded */
    FE_PREP_CHECKED = 4,       /* features, call ids, reasoning checked; job_input built */
    FE_PREP_FILES = 8,         /* file_id parts resolved to their content */
    FE_PREP_ADMIT = 16,        /* admitted under the key's rate limits and quota (fe_limits.h) */
    FE_PREP_CONVERSATION = 32, /* the conversation's items loaded (Responses `conversation`) */
};

static void fe_generate_submit(fe_request_t *r);
static void fe_generate_job_over(fe_request_t *r);
static void fe_generate_fall_back(fe_request_t *r);

/* What the style's render and stream hooks see of r (fe_style.h). */
static fe_render_ctx_t fe_generate_render_ctx(const fe_request_t *r)
{
    fe_render_ctx_t ctx = {
        .parsed = &r->parsed, .start_ms = r->start_ms, .request_id = r->request_id, .seal = fe_reasoning_sealer(r)};
    return ctx;
}

static void fe_generate_on_deadline(evutil_socket_t fd, short what, void *arg)
{
    fe_request_t *r = arg;
    if (r->state != FE_REQ_RUNNING)
        return;
    fe_broker_cancel(r->srv->broker, r->request_id);
    fe_error_t e;
    fe_error_set(&e, 504, SB_ERR_TIMEOUT, "timeout", NULL, "timeout: the request exceeded its deadline");
    if (r->parsed.stream)
        fe_stream_fail(r, &e);
    else
        fe_request_fail(r, &e);
}

void fe_generate_stored(const PGresult *res, const char *err, void *arg)
{
    fe_request_t *r = arg;
    if (!fe_request_release(r))
        return;
    json_t *body = json_object_get(r->parsed.style_state, "rendered");
    if (err) {
        sb_error("storing %s failed: %s", r->parsed.response_id, err);
        fe_error_t e;
        fe_error_set(&e, 500, SB_ERR_SERVER, "store_failed", NULL,
                     "The response was generated but could not be stored; retry the request");
        if (r->parsed.stream)
            fe_stream_fail(r, &e);
        else
            fe_request_fail(r, &e);
        return;
    }
    fe_collect_tool_calls_stored(&r->result, r->parsed.response_id);
    if (r->parsed.stream)
        fe_stream_complete(r, body);
    else
        fe_request_reply_json(r, 200, json_incref(body));
}

static void fe_generate_deliver(fe_request_t *r, json_t *rendered);

static void fe_generate_on_turn(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
        fe_request_log_line(r, SB_LOG_WARN, "conversation %s is gone; its turn was not kept",
                            r->parsed.conversation_id);
    json_t *rendered = json_incref(json_object_get(r->parsed.style_state, "turn_rendered"));
    json_object_del(r->parsed.style_state, "turn_rendered");
    fe_generate_deliver(r, rendered);
}

/* Appends the request's own input items and its output items to its
 * conversation as one turn (sb_conversation_append: whole, never
 * interleaved with another turn), then delivers rendered (stolen). */
static void fe_generate_append_turn(fe_request_t *r, json_t *rendered)
{
    json_object_set_new(r->parsed.style_state, "turn_rendered", rendered);
    json_t *items = json_deep_copy(json_object_get(r->parsed.canonical, "input"));
    if (!json_is_array(items)) {
        json_decref(items);
        items = json_array();
    }
    json_array_extend(items, r->result.items);
    char *text = json_dumps(items, JSON_COMPACT);
    json_decref(items);
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[3] = {r->parsed.conversation_id, account, text};
    fe_request_set_state(r, FE_REQ_STORING);
    fe_request_db_query(r, FE_SQL_CONV_APPEND, 3, params, "Conversations are temporarily unavailable, retry later",
                        fe_generate_on_turn);
    free(text);
}

/* The job is over and the lease released: render, store, reply. */
static void fe_generate_finish(fe_request_t *r)
{
    fe_error_t e;
    if (!r->result.done)
        fe_error_set(&e, 502, SB_ERR_UPSTREAM, "incomplete_stream", NULL,
                     "the upstream stream ended without a final event");
    else if (r->result.failed)
        e = r->result.error;
    json_t *rendered = NULL;
    if (r->result.done && !r->result.failed) {
        fe_render_ctx_t ctx = fe_generate_render_ctx(r);
        rendered = r->count_tokens ? r->style->render_count(&r->result, &ctx) : r->style->render(&r->result, &ctx);
        if (!rendered)
            fe_error_set(&e, 500, SB_ERR_SERVER, NULL, NULL, "could not render the response");
    }
    if (!rendered) {
        if (r->parsed.stream)
            fe_stream_fail(r, &e);
        else
            fe_request_fail(r, &e);
        return;
    }
    if (r->parsed.conversation_id && !r->count_tokens) {
        /* The turn goes into its conversation before anyone sees the end,
         * so the next turn (on any frontend) reads it. */
        fe_generate_append_turn(r, rendered);
        return;
    }
    fe_generate_deliver(r, rendered);
}

/* Stores (when asked) and replies the rendered result (stolen). */
static void fe_generate_deliver(fe_request_t *r, json_t *rendered)
{
    if (r->parsed.store && r->parsed.response_id[0] && r->style->store && !r->count_tokens) {
        json_object_set(r->parsed.style_state, "rendered", rendered);
        fe_request_set_state(r, FE_REQ_STORING);
        fe_request_hold(r);
        r->style->store(r, rendered, fe_generate_stored);
        json_decref(rendered);
        return;
    }
    if (r->parsed.stream) {
        fe_stream_complete(r, rendered);
        json_decref(rendered);
        return;
    }
    fe_request_reply_json(r, 200, rendered);
}

static void fe_generate_on_event(const json_t *ev, bool final, void *arg)
{
    fe_request_t *r = arg;
    if (r->state != FE_REQ_RUNNING)
        return;
    fe_call_ids_seal_event(r, (json_t *)ev); /* the decoded event is this callback's to change */
    if (!fe_collect_event(&r->result, ev) && !final) {
        if (r->parsed.stream && fe_collect_renders(ev)) /* a tool_log is the request log's alone */
            fe_stream_event(r, ev);
        return;
    }
    if (r->deadline)
        event_del(r->deadline);
    if (r->result.failed) {
        fe_generate_fall_back(r);
        return;
    }
    fe_generate_job_over(r);
}

/* The job is over with no fallback to try: release the lease, then render,
 * store and reply (or fail). */
static void fe_generate_job_over(fe_request_t *r)
{
    /* The lease is released before the client sees the end, so its next
     * request finds the slot free on any frontend. */
    fe_request_set_state(r, FE_REQ_STORING);
    fe_limits_release(r, fe_generate_finish);
}

static json_t *fe_generate_route(const fe_request_t *r)
{
    return sb_job_route_from_model(r->model);
}

/* The request's job (new reference, or NULL), and its timeout. */
static json_t *fe_generate_job(fe_request_t *r, int64_t *timeout_out)
{
    /* The worker gets the full context with files and reasoning resolved;
     * the canonical request keeps this request's own input for storage. */
    json_t *request = json_copy(r->parsed.canonical);
    json_object_set(request, "input", r->job_input);
    if (r->count_tokens)
        json_object_set_new(request, "op", json_string(SB_JOB_OP_COUNT_TOKENS));
    else if (r->parsed.n > 1)
        json_object_set_new(request, "n", json_integer(r->parsed.n));
    if (r->parsed.stream || r->parsed.background)            /* a background job's events are kept as they come */
        json_object_set_new(request, "stream", json_true()); /* the worker streams from the upstream */
    else
        json_object_del(request, "stream");
    json_t *timeout = json_object_get(r->model, "timeout_ms");
    int64_t timeout_ms = json_is_integer(timeout) && json_integer_value(timeout) > 0 ? json_integer_value(timeout)
                                                                                     : r->srv->cfg.default_timeout_ms;
    /* What the worker's tool loop needs from the database (docs/tools.md);
     * from this model's record, so a fallback's job gets its own. */
    json_t *tools_config = fe_features_tools_config(r->model, json_object_get(request, "tools"));
    json_t *job =
        sb_job_new(r->request_id, r->parsed.model_id,
                   (long long)json_integer_value(json_object_get(r->key, "account_id")), fe_generate_route(r), request);
    if (job && tools_config)
        json_object_set(job, "tools_config", tools_config);
    if (job) { /* W3C Trace Context: the worker's span is a child of this request's */
        char tp[SB_TRACEPARENT_LEN + 1];
        sb_trace_format(&r->trace, tp, sizeof tp);
        json_object_set_new(job, "trace", json_pack("{s:s, s:s?}", "traceparent", tp, "tracestate", r->tracestate));
    }
    json_decref(tools_config);
    *timeout_out = timeout_ms;
    return job;
}

/* Submits (or, for a fallback, submits again) the request's job. */
static void fe_generate_submit(fe_request_t *r)
{
    int64_t timeout_ms = 0;
    json_t *job = fe_generate_job(r, &timeout_ms);
    int64_t deadline = sb_now_ms() + timeout_ms;
    fe_request_set_state(r, FE_REQ_RUNNING);
    r->submitted = true;
    char client[32] = ""; /* the key, for the broker's per-client circuit breakers */
    const json_t *key_id = json_object_get(r->key, "key_id");
    if (json_is_integer(key_id))
        snprintf(client, sizeof client, "key:%lld", (long long)json_integer_value(key_id));
    int rc = job ? fe_broker_submit(r->srv->broker, r->request_id, r->parsed.model_id, client[0] ? client : NULL,
                                    deadline, job, fe_generate_on_event, r)
                 : -1;
    json_decref(job);
    if (rc < 0) {
        fe_error_t e;
        fe_error_set(&e, 503, SB_ERR_OVERLOADED, "broker_unavailable", NULL,
                     "The gateway could not queue the request, retry later");
        e.retry_after = 1;
        fe_request_fail(r, &e);
        return;
    }
    if (r->parsed.stream && !r->stream_out) {
        fe_render_ctx_t ctx = fe_generate_render_ctx(r);
        fe_stream_begin(r, &ctx);
    }
    if (!r->deadline) /* a fallback's job reuses the timer */
        r->deadline = evtimer_new(r->srv->base, fe_generate_on_deadline, r);
    struct timeval tv = {(timeout_ms + FE_DEADLINE_SLACK_MS) / 1000,
                         ((timeout_ms + FE_DEADLINE_SLACK_MS) % 1000) * 1000};
    evtimer_add(r->deadline, &tv);
}

/* The context a previous response or a conversation hands the request (one
 * JSON array of items), or its 404. */
static void fe_generate_on_context(fe_request_t *r, const PGresult *res)
{
    json_t *items = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!json_is_array(items)) {
        json_decref(items);
        if (r->parsed.conversation_id)
            fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, "conversation", "Conversation with id '%.128s' not found.",
                             r->parsed.conversation_id);
        else
            fe_request_failf(r, 404, SB_ERR_NOT_FOUND, "previous_response_not_found", "previous_response_id",
                             "Previous response with id '%s' not found.", r->parsed.previous_response_id);
        return;
    }
    r->context = items;
    r->prep_done(r);
}

/* Loads the context by stmt ($1 the id, $2 the account). */
static void fe_generate_load_items(fe_request_t *r, const char *stmt, const char *id, const char *unavailable,
                                   fe_request_then_fn done)
{
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[2] = {id, account};
    r->prep_done = done;
    fe_request_db_query(r, stmt, 2, params, unavailable, fe_generate_on_context);
}

/* Step: the previous response's context and output items. */
static void fe_generate_load_context(fe_request_t *r, fe_request_then_fn done)
{
    fe_generate_load_items(r, FE_SQL_RESPONSE_CONTEXT, r->parsed.previous_response_id,
                           "Stored responses are temporarily unavailable, retry later", done);
}

/* Step: the conversation's items (a request has one or the other). */
static void fe_generate_load_conversation(fe_request_t *r, fe_request_then_fn done)
{
    fe_generate_load_items(r, FE_SQL_CONV_ITEMS, r->parsed.conversation_id,
                           "Conversations are temporarily unavailable, retry later", done);
}

/* Output limit and context length of r->model against the request: sets
 * r->est_tokens; -1 with *err set (400) when it does not fit. */
static int fe_generate_check_size(fe_request_t *r, fe_error_t *err)
{
    json_int_t context = json_integer_value(json_object_get(r->model, "context_length"));
    json_int_t max_out = json_integer_value(json_object_get(r->model, "max_output_tokens"));
    const json_t *asked = json_object_get(r->parsed.canonical, "max_output_tokens");
    json_int_t want = json_is_integer(asked) ? json_integer_value(asked) : 0;
    if (max_out > 0 && want > max_out && !r->count_tokens) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_value", r->style->max_tokens_param,
                     "%s is too large: %lld. The model '%.100s' supports at most %lld output tokens.",
                     r->style->max_tokens_param, (long long)want, r->parsed.model_id, (long long)max_out);
        return -1;
    }
    r->est_tokens = fe_tokens_request(r->parsed.canonical, r->job_input);
    if (context > 0 && r->est_tokens + want > context && !r->count_tokens) { /* a count says how far over */
        char also[96] = "";
        if (want > 0)
            snprintf(also, sizeof also, " and %s asks for %lld more", r->style->max_tokens_param, (long long)want);
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "context_length_exceeded", r->style->input_param,
                     "context length exceeded: the model '%.100s' has a context length of %lld tokens, but the "
                     "input has at least %lld tokens%s. Shorten the input or lower the output limit.",
                     r->parsed.model_id, (long long)context, (long long)r->est_tokens, also);
        return -1;
    }
    return 0;
}

/* Step: the synchronous checks on the whole context; builds r->job_input. */
static void fe_generate_check(fe_request_t *r, fe_request_then_fn done)
{
    fe_error_t err;
    memset(&err, 0, sizeof err);
    json_t *input = r->context ? json_deep_copy(r->context) : json_array();
    json_t *own = json_deep_copy(json_object_get(r->parsed.canonical, "input"));
    json_array_extend(input, own);
    json_decref(own);
    r->job_input = input;
    fe_call_ids_open(r, input);
    if (fe_features_check(r, input, &err) < 0 || fe_items_check_calls(input, &err) < 0 ||
        fe_generate_check_size(r, &err) < 0 || fe_reasoning_open_items(r, input, &err) < 0) {
        fe_request_fail(r, &err);
        return;
    }
    done(r);
}

/* A request that will be stored checks that it can be before it spends an
 * upstream call: with the database unreachable it would be generated (and
 * paid for) and then fail at the store. It gets a fast, retryable 503 in
 * its style's body instead; store:false requests go on. sb_db_available
 * reads the pool's connection states, no round trip. Returns true when the
 * request was answered. */
static bool fe_generate_store_blocked(fe_request_t *r)
{
    if (!r->parsed.store || !r->parsed.response_id[0] || !r->style->store || r->count_tokens ||
        sb_db_available(r->srv->db))
        return false;
    fe_error_t e;
    fe_error_set(&e, 503, SB_ERR_SERVER, "store_unavailable", NULL,
                 "Stored responses are temporarily unavailable (the database cannot be reached), so the request "
                 "was not sent to the model; retry later, or send store:false");
    e.retry_after = 1;
    fe_request_fail(r, &e);
    return true;
}

static bool fe_generate_has_prompt(const fe_request_t *r)
{
    return r->parsed.prompt_ref != NULL;
}

static bool fe_generate_has_previous(const fe_request_t *r)
{
    return r->parsed.previous_response_id != NULL;
}

static bool fe_generate_has_conversation(const fe_request_t *r)
{
    return r->parsed.conversation_id != NULL;
}

static bool fe_generate_always(const fe_request_t *r)
{
    (void)r;
    return true;
}

/* A key with any limit is admitted under them; a count spends nothing. */
static bool fe_generate_is_limited(const fe_request_t *r)
{
    return json_is_true(json_object_get(r->key, "limited")) && !r->count_tokens;
}

/* The preparation steps, in the order they run. run(r, done) ends with
 * done(r) (at once or from a callback) or ends the request. */
static const struct fe_generate_step {
    unsigned flag;
    bool (*needed)(const fe_request_t *r);
    void (*run)(fe_request_t *r, fe_request_then_fn done);
} fe_generate_steps[] = {
    {FE_PREP_PROMPT, fe_generate_has_prompt, fe_prompt_expand},
    {FE_PREP_CONTEXT, fe_generate_has_previous, fe_generate_load_context},
    {FE_PREP_CONVERSATION, fe_generate_has_conversation, fe_generate_load_conversation},
    {FE_PREP_CHECKED, fe_generate_always, fe_generate_check},
    {FE_PREP_FILES, fe_generate_always, fe_files_resolve},
    {FE_PREP_ADMIT, fe_generate_is_limited, fe_limits_admit},
};

/* Runs the next preparation step, or submits the job when they are done;
 * every step's continuation. */
static void fe_generate_prepare(fe_request_t *r)
{
    if (r->state == FE_REQ_DONE)
        return;
    for (size_t i = 0; i < sizeof fe_generate_steps / sizeof fe_generate_steps[0]; i++) {
        const struct fe_generate_step *st = &fe_generate_steps[i];
        if ((r->prepared & st->flag) || !st->needed(r))
            continue;
        r->prepared |= st->flag;
        fe_request_set_state(r, FE_REQ_PREPARE);
        st->run(r, fe_generate_prepare);
        return;
    }
    if (fe_generate_store_blocked(r))
        return;
    if (r->parsed.background) {
        /* Written queued and left to a worker (fe_bg.h). */
        int64_t timeout_ms = 0;
        json_t *job = fe_generate_job(r, &timeout_ms);
        if (!job) {
            fe_request_failf(r, 500, SB_ERR_SERVER, NULL, NULL, "could not build the job");
            return;
        }
        fe_bg_submit(r, job, sb_now_ms() + timeout_ms);
        json_decref(job);
        return;
    }
    fe_generate_submit(r);
}

/* A fallback model's record arrived: if it can take the request as the first
 * model did, the request becomes its (the answer names it; the request log
 * keeps the one asked for) and the job is submitted again; else the next
 * model of the chain is tried. */
static void fe_generate_on_fallback_model(json_t *rec, const char *err, void *arg)
{
    fe_request_t *r = arg;
    if (!fe_request_release(r))
        return;
    char *id = fe_fallback_pop(r);
    const char *skip = fe_fallback_unusable(r, id, rec, err);
    fe_error_t why;
    memset(&why, 0, sizeof why);
    if (!skip) {
        /* The next model must take this request as the first one did. */
        json_t *first = r->model;
        char *first_id = r->parsed.model_id;
        r->model = rec;
        r->parsed.model_id = id;
        bool fits = fe_features_check(r, r->job_input, &why) == 0 && fe_generate_check_size(r, &why) == 0;
        r->model = first;
        r->parsed.model_id = first_id;
        if (!fits)
            skip = why.message;
    }
    if (skip) {
        fe_request_log_line(r, SB_LOG_INFO, "fallback model %s skipped: %s", id, skip);
        free(id);
        fe_generate_fall_back(r);
        return;
    }
    fe_request_log_line(r, SB_LOG_INFO, "model %s failed (%d %s); falling back to %s", r->parsed.model_id,
                        r->result.error.status, r->result.error.code[0] ? r->result.error.code : r->result.error.kind,
                        id);
    fe_collect_restart(&r->result, r->parsed.model_id); /* tool calls it made keep its name */
    if (!r->requested_model) {
        r->requested_model = r->parsed.model_id;
        fe_metrics_fallback(r->requested_model);
    } else
        free(r->parsed.model_id);
    r->parsed.model_id = id;
    json_decref(r->model);
    r->model = json_incref(rec);
    fe_generate_submit(r);
}

/* The job failed: the next model of the chain is looked up (its record may
 * come back at once, from the cache), or, with none left, the failure ends
 * the request. */
static void fe_generate_fall_back(fe_request_t *r)
{
    const char *id = fe_fallback_next(r);
    if (!id) {
        fe_generate_job_over(r);
        return;
    }
    fe_request_set_state(r, FE_REQ_MODEL);
    fe_request_hold(r);
    fe_auth_lookup_model(r->srv->auth, id, fe_generate_on_fallback_model, r);
}

static void fe_generate_on_model(json_t *rec, const char *err, void *arg)
{
    fe_request_t *r = arg;
    if (!fe_request_release(r))
        return;
    if (err) {
        fe_request_failf(r, 503, SB_ERR_SERVER, "service_unavailable", NULL,
                         "The model registry is temporarily unavailable, retry later");
        return;
    }
    if (json_is_true(json_object_get(rec, "missing")) || !json_is_true(json_object_get(rec, "enabled"))) {
        fe_request_failf(r, 404, SB_ERR_NOT_FOUND, "model_not_found", "model",
                         "model not found: The model '%s' does not exist or is not enabled.", r->parsed.model_id);
        return;
    }
    if (!fe_auth_key_allows(r->key, r->parsed.model_id)) {
        fe_request_failf(r, 403, SB_ERR_PERMISSION, "model_not_allowed", "model",
                         "Your key's token group does not have access to model '%s'.", r->parsed.model_id);
        return;
    }
    r->model = json_incref(rec);
    json_t *fallbacks = json_object_get(rec, "fallbacks");
    if (json_array_size(fallbacks) > 0)
        r->fallbacks = json_deep_copy(fallbacks);
    fe_generate_prepare(r);
}

/* The request ended (its cleanup): a job still on the broker (the client
 * left while it ran) is cancelled, and the tokens the request used go into
 * its request-log row. */
static void fe_generate_on_end(fe_request_t *r, void *arg)
{
    (void)arg;
    if (r->submitted)
        fe_broker_cancel(r->srv->broker, r->request_id); /* a no-op once the job's final event came */
    fe_limits_usage(r, &r->log_tokens_in, &r->log_tokens_out);
}

void fe_generate_count_tokens(fe_request_t *r)
{
    r->count_tokens = true;
    fe_generate_start(r);
}

void fe_generate_start(fe_request_t *r)
{
    fe_error_t err;
    fe_request_cleanup_add(r, fe_generate_on_end, NULL);
    r->body = fe_body_json(sb_http_req_body(r->http), r->srv->cfg.max_body_bytes, r->srv->cfg.max_json_depth, &err);
    if (!r->body) {
        fe_request_fail(r, &err);
        return;
    }
    r->parsed.style_state = json_object();
    memset(&err, 0, sizeof err);
    fe_style_in_t in = {.http = r->http,
                        .path = r->path,
                        .path_arg = r->path_arg,
                        .count_tokens = r->count_tokens,
                        .seal = fe_reasoning_sealer(r)};
    if (r->style->parse(&in, r->body, &r->parsed, &err) < 0) {
        fe_request_fail(r, &err);
        return;
    }
    if (r->count_tokens) { /* one count, nothing to keep */
        r->parsed.store = false;
        r->parsed.n = 1;
        r->parsed.stream = false;
    }
    if (r->parsed.stream && !r->style->stream) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", "stream",
                         "unsupported parameter: streaming is not available for this endpoint");
        return;
    }
    if (json_is_true(json_object_get(r->key, "zdr"))) {
        r->parsed.store = false;                       /* zero-data-retention accounts are never stored */
        r->parsed.seal_reasoning = r->srv->seal_ready; /* and get their reasoning back sealed */
    }
    if (r->parsed.background && (!r->parsed.store || r->count_tokens)) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_value", "background",
                         "Background mode requires 'store' to be true%s.",
                         r->count_tokens ? "" : " (this account's responses are never stored)");
        return;
    }
    fe_request_set_state(r, FE_REQ_MODEL);
    fe_request_hold(r);
    fe_auth_lookup_model(r->srv->auth, r->parsed.model_id, fe_generate_on_model, r);
}

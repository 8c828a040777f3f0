/*
 * wjob: the life of one job, from JOB to its one final EVENT.
 *
 * A job's path: sb_wjob_receive() validates it (its shape once, with
 * sb_job_check, so the adapters need not), builds the upstream request
 * with its provider adapter and starts its call(s) (wcall.c; state UPSTREAM).
 * Body bytes go through each call's sb_provider_parser; when a call's attempt
 * is over, sb_wjob_on_call_final() turns its final event into the job's
 * (strict check, fan-out merge) and sb_wjob_end() sends the job's final
 * event (state DONE). A DONE job is freed by the session's reap event
 * (worker.c), after the callback that ended it has returned: the upstream and
 * zmq callbacks that end jobs are never left holding a freed job.
 *
 * A job has one upstream call, except a fan-out: n > 1 choices from an
 * upstream that cannot do n (route.capabilities.n false) is n concurrent
 * calls without n, whose events are tagged with their choice and merged (one
 * usage, a choice_done each, one completed). The first call to fail fails the
 * job and cancels the rest.
 *
 * Strict structured output (strict.h): a call's events are held until its
 * final event and checked; valid output is passed on, invalid output retries
 * the call once (the same request, a fresh timeout cut to the job's deadline)
 * and then fails the job with 502 invalid_structured_output. Jobs without
 * strict schemas pass events on as they come, as before.
 *
 * A count job (request.op "count_tokens") is one call, never strict: to the
 * adapter's counting endpoint, or, for an adapter without one, a one-token
 * generation (sb_provider_count_job) whose usage is the count. A file
 * search job (request.op "vs_ingest", "vs_search") calls no model: it is
 * wtool_vsjob.h's, which hands back its events.
 *
 * Retries after transient upstream failures are each call's own (wcall.c).
 * The final EVENT's header carries "upstream": "failed" when a call's last
 * attempt found the route failed (retry.h), else "ok" when the upstream
 * answered, and nothing when the job never reached it or was interrupted
 * (cancel, shutdown).
 */
#include <czmq.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_evbatch.h"
#include "sb_log.h"
#include "sb_mpjson.h"
#include "sb_trace.h"
#include "wbg.h"
#include "worker_internal.h"
#include "wtool_vsjob.h"

/* Most upstream calls one fanned-out job may make (OpenAI's own limit on n). */
#define SB_WORKER_MAX_FANOUT 128
/* Upstream attempts per call when strict output does not validate. */
#define SB_WORKER_STRICT_ATTEMPTS 2

static const char *const sb_wjob_state_names[] = {"new", "upstream", "done"};

static void sb_wjob_set_state(sb_wjob_t *j, enum sb_wjob_state state)
{
    sb_wjob_log(j, SB_LOG_DEBUG, "%s -> %s", sb_wjob_state_names[j->state], sb_wjob_state_names[state]);
    j->state = state;
}

void sb_wjob_free(sb_wjob_t *j)
{
    sb_wloop_free(&j->loop);
    sb_vsjob_cancel(&j->vs);
    sb_wbg_release(&j->bg);
    for (int i = 0; i < j->n_calls; i++)
        sb_wcall_clear(&j->calls[i]);
    free(j->calls);
    free(j->route_key);
    sb_strict_destroy(&j->strict);
    sb_provider_request_clear(&j->req);
    json_decref(j->events);
    json_decref(j->own_job);
    json_decref(j->job);
    free(j);
}

/* What sb_wjob_send_events hands each batch. */
typedef struct {
    sb_wjob_t *j;
    const json_t *events;
    const char *upstream;
} sb_wjob_batch_t;

/* Sends one batch (sb_evbatch.h) as one EVENT: final when its last event is;
 * upstream ("ok"/"failed", or NULL to leave it out) goes into a final
 * batch's header. A failed send is logged: the broker notices the job's
 * silence, nobody else is left to tell. */
static int sb_wjob_send_batch(const char *body, size_t len, size_t from, size_t to, void *arg)
{
    sb_wjob_batch_t *b = arg;
    bool final = sb_event_is_final(json_array_get(b->events, to - 1));
    json_t *hdr =
        json_pack("{s:s, s:b, s:I}", "job_id", b->j->job_id, "final", final, "seq", (json_int_t)b->j->link->ready_seq);
    if (b->upstream && final)
        json_object_set_new(hdr, "upstream", json_string(b->upstream));
    sb_wbg_append(b->j->bg, b->events, from, to); /* a background job's events are kept too */
    int rc = sb_wlink_send(b->j->link, SB_CMD_EVENT, hdr, body, len);
    if (rc < 0)
        sb_wjob_log(b->j, SB_LOG_ERROR, "could not send %zu event(s): %s", to - from, strerror(-rc));
    json_decref(hdr);
    return 0;
}

/* Sends events[0..n) of the job's pending events, batched. */
static void sb_wjob_send_events(sb_wjob_t *j, size_t n, const char *upstream)
{
    sb_wjob_batch_t b = {j, j->events, upstream};
    if (n > 0)
        (void)sb_evbatch_encode(j->events, 0, n, sb_wjob_send_batch, &b);
}

/* A streamed job: sends the pending events up to (not including) the first
 * final one. A non-streamed job's client sees nothing before the end, so its
 * events wait for the final one: until then every call may still be retried
 * (a fan-out's finished choices do not stop the others' retries). */
static void sb_wjob_flush_partial(sb_wjob_t *j)
{
    if (!j->stream)
        return;
    size_t n = 0;
    while (n < json_array_size(j->events) && !sb_event_is_final(json_array_get(j->events, n)))
        n++;
    if (n == 0)
        return;
    sb_wjob_send_events(j, n, NULL);
    j->sent = true;
    for (; n > 0; n--)
        json_array_remove(j->events, 0);
}

/* What the final header says about the upstream: "failed" when any call's
 * last attempt found the route failed, "ok" when one reached an answering
 * upstream, NULL when none reached it or the job was interrupted. */
static const char *sb_wjob_upstream(const sb_wjob_t *j)
{
    if (j->interrupted)
        return NULL;
    bool ok = false;
    for (int i = 0; i < j->n_calls; i++) {
        if (j->calls[i].route == SB_RETRY_ROUTE_FAILED)
            return "failed";
        ok |= j->calls[i].route == SB_RETRY_ROUTE_OK;
    }
    return ok ? "ok" : NULL;
}

void sb_wjob_end(sb_wjob_t *j, bool send, json_t *final)
{
    sb_worker_t *w = j->w;
    for (int i = 0; i < j->n_calls; i++)
        sb_wcall_cancel(&j->calls[i]);
    sb_wloop_stop(j->loop);
    sb_vsjob_cancel(&j->vs);
    if (send) {
        if (final)
            json_array_append_new(j->events, final);
        size_t n = json_array_size(j->events), i = 0;
        while (i < n && !sb_event_is_final(json_array_get(j->events, i)))
            i++;
        if (i == n) {
            sb_wjob_log(j, SB_LOG_ERROR, "provider produced no final event");
            json_array_append_new(
                j->events, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream response could not be translated"));
        } else {
            while (json_array_size(j->events) > i + 1)
                json_array_remove(j->events, i + 1);
        }
        const json_t *last = json_array_get(j->events, json_array_size(j->events) - 1);
        const char *upstream = sb_wjob_upstream(j);
        if (sb_event_type_of(last) == SB_EV_ERROR)
            sb_debug("job %s: error %lld %s%s%s", j->job_id,
                     (long long)json_integer_value(json_object_get(last, "status")),
                     json_string_value(json_object_get(last, "kind")), upstream ? ", upstream " : "",
                     upstream ? upstream : "");
        else
            sb_wjob_log(j, SB_LOG_DEBUG, "%s in %lld us", json_string_value(json_object_get(last, "status")),
                        (long long)json_integer_value(json_object_get(last, "upstream_us")));
        sb_wjob_send_events(j, json_array_size(j->events), upstream);
        json_array_clear(j->events);
        j->sent = true;
    } else {
        json_decref(final);
        sb_wjob_log(j, SB_LOG_INFO, "abandoned");
        if (j->bg) {
            /* Nobody is told, but a background response must not stay in
             * progress: it ends failed (docs/background.md). */
            json_t *lost = json_pack("[o]", sb_event_error(502, SB_ERR_UPSTREAM, "worker_interrupted",
                                                           "the worker running this response stopped before its end"));
            sb_wbg_append(j->bg, lost, 0, 1);
            json_decref(lost);
        }
    }
    j->link->njobs--; /* out of the table: its credit is free again */
    j->link = NULL;   /* the link may go before the reap frees the job */
    sb_worker_credit_changed(w);
    sb_wjob_set_state(j, SB_WJOB_DONE);
    j->next_reap = w->reap_list;
    w->reap_list = j;
    event_active(w->reap, EV_TIMEOUT, 0);
}

/* Ends a job that is in the table. */
static void sb_wjob_finish(sb_wjob_t *j, json_t *final)
{
    sb_map_remove(j->w->jobs, j->job_id);
    sb_wjob_end(j, true, final);
}

/*
 * What its calls tell the job (sb_wcall_ops_t).
 */

/* Moves a call's events, up to its first final one, to the job and sends
 * them. In a fan-out they are tagged with the call's choice and usage is
 * summed into the job instead (sent once, at the end); anything the upstream
 * sent for other choices (it was not asked for any) is dropped. */
static void sb_wjob_pass(sb_wcall_t *c)
{
    sb_wjob_t *j = c->j;
    if (c->events != j->events) {
        size_t n = 0;
        json_t *ev;
        while (n < json_array_size(c->events) && !sb_event_is_final(ev = json_array_get(c->events, n))) {
            n++;
            if (c->seen)
                json_array_append(c->seen, ev);
            if (c->choice >= 0) {
                enum sb_event_type t = sb_event_type_of(ev);
                if (t == SB_EV_USAGE) {
                    j->have_usage = true;
                    j->usage_in += json_integer_value(json_object_get(ev, "input_tokens"));
                    j->usage_out += json_integer_value(json_object_get(ev, "output_tokens"));
                    j->usage_reasoning += json_integer_value(json_object_get(ev, "reasoning_tokens"));
                    continue;
                }
                if (t == SB_EV_CHOICE_DONE || sb_event_choice(ev) > 0)
                    continue;
                sb_event_set_choice(ev, c->choice);
            }
            json_array_append(j->events, ev);
        }
        if (n == json_array_size(c->events))
            json_array_clear(c->events);
        else
            for (; n > 0; n--)
                json_array_remove(c->events, 0);
    }
    sb_wjob_flush_partial(j);
}

/* A strict call's attempt ended with `final` (completed): checks its output.
 * Returns 0 when valid. When not: 1 after restarting the call for its next
 * attempt, or -1 with *err set to the job's final error (no attempt left, or
 * the retry could not start). */
static int sb_wjob_check_strict(sb_wcall_t *c, const json_t *final, json_t **err)
{
    sb_wjob_t *j = c->j;
    char what[160], why[512];
    if (sb_strict_check(j->strict, c->seen ? c->seen : c->events, final, what, sizeof what, why, sizeof why) == 0)
        return 0;
    char choice[32] = "";
    if (c->choice >= 0)
        snprintf(choice, sizeof choice, " (choice %d)", c->choice);
    json_array_clear(c->events); /* invalid output goes nowhere (streamed: no further) */
    /* A stream has shown this attempt already: no retry can take it back. */
    if (c->attempt < SB_WORKER_STRICT_ATTEMPTS && !j->stream) {
        /* `what` names a schema, never the output. */
        sb_wjob_log(j, SB_LOG_WARN, "model output%s did not match %s on attempt %d; retrying", choice, what,
                    c->attempt);
        c->attempt++;
        return sb_wcall_start(c, err) == 0 ? 1 : -1;
    }
    sb_wjob_log(j, SB_LOG_WARN, "model output%s did not match %s after %d attempts", choice, what, c->attempt);
    char *msg = sb_xasprintf("The model's output did not match %s after %d attempts: %s", what, c->attempt, why);
    *err = sb_event_error(502, SB_ERR_UPSTREAM, "invalid_structured_output", msg);
    free(msg);
    return -1;
}

/*
 * A call's attempt is over and its final event is in c->events: validate
 * (strict), retry, or pass the events on; then end the job when this was its
 * last call (or its final is an error, which ends a fan-out at once).
 */
static void sb_wjob_on_call_final(sb_wcall_t *c)
{
    sb_wjob_t *j = c->j;
    if (c->idle)
        event_del(c->idle);
    json_t *final = sb_wcall_take_final(c);
    if (c->seen && sb_event_type_of(final) == SB_EV_COMPLETED)
        sb_wjob_pass(c); /* the rest of the stream, so the check sees all of it */
    if (sb_event_type_of(final) == SB_EV_COMPLETED) {
        c->upstream_us += json_integer_value(json_object_get(final, "upstream_us"));
        json_t *err = NULL;
        int rc = j->strict ? sb_wjob_check_strict(c, final, &err) : 0;
        if (rc > 0) { /* retrying */
            json_decref(final);
            return;
        }
        if (rc < 0) {
            json_decref(final);
            final = err;
        }
    }
    j->calls_open--;
    if (sb_event_type_of(final) == SB_EV_ERROR) {
        if (c->events != j->events)
            json_array_clear(c->events); /* held (unsent) output of a failed call goes nowhere */
        sb_wjob_finish(j, final);        /* cancels the other calls of a fan-out */
        return;
    }
    sb_wjob_pass(c);
    if (c->choice < 0) {
        json_object_set_new(final, "upstream_us", json_integer(c->upstream_us));
        sb_wjob_finish(j, final);
        return;
    }
    /* One choice of a fan-out. */
    const char *status = json_string_value(json_object_get(final, "status"));
    const char *reason = NULL;
    if (status && !strcmp(status, "incomplete")) {
        const char *r = json_string_value(json_object_get(final, "incomplete_reason"));
        reason = r && !strcmp(r, "max_output_tokens") ? "max_output_tokens"
                 : r && !strcmp(r, "content_filter")  ? "content_filter"
                                                      : NULL;
        if (!j->incomplete) {
            j->incomplete = true;
            j->incomplete_reason = reason;
        }
    } else {
        status = "completed";
    }
    json_array_append_new(j->events, sb_event_choice_done(c->choice, status, reason));
    json_decref(final);
    if (c->upstream_us > j->upstream_us)
        j->upstream_us = c->upstream_us;
    sb_wjob_flush_partial(j);
    if (j->calls_open > 0)
        return;
    if (j->have_usage)
        json_array_append_new(j->events, sb_event_usage(j->usage_in, j->usage_out, j->usage_reasoning));
    sb_wjob_finish(j, sb_event_completed(j->incomplete ? "incomplete" : "completed", j->incomplete_reason,
                                         json_string_value(json_object_get(j->job, "model")), j->upstream_us));
}

/* New events from a call's parser: passed on at once, unless the job's
 * output is held (strict and not streamed: checked at the call's end). */
static void sb_wjob_on_call_events(sb_wcall_t *c)
{
    if (!c->j->strict || c->j->stream)
        sb_wjob_pass(c);
}

/* A call's retry could not start: the job ends with err. */
static void sb_wjob_on_call_fail(sb_wcall_t *c, json_t *err)
{
    sb_wjob_finish(c->j, err);
}

/* A file search operation is over: its events, then its final one, end the job. */
static void sb_wjob_on_vsjob(void *arg, json_t *events)
{
    sb_wjob_t *j = arg;
    j->vs = NULL; /* it frees itself when this returns */
    size_t n = json_array_size(events);
    for (size_t i = 0; i + 1 < n; i++)
        json_array_append(j->events, json_array_get(events, i));
    json_t *final = n ? json_incref(json_array_get(events, n - 1)) : NULL;
    json_decref(events);
    sb_wjob_finish(j, final);
}

static const sb_wloop_ops_t sb_wjob_loop_ops = {
    .flush = sb_wjob_flush_partial,
    .finish = sb_wjob_finish,
};

static const sb_wcall_ops_t sb_wjob_call_ops = {
    .on_events = sb_wjob_on_call_events,
    .on_final = sb_wjob_on_call_final,
    .on_fail = sb_wjob_on_call_fail,
};

/*
 * Job start.
 */

/* How many upstream calls the job needs: request.n when it asks for several
 * choices of an upstream that cannot do n, else 1. Returns 0 with *err set
 * when n is out of range for a fan-out. */
static int sb_wjob_fanout(const sb_provider_t *provider, const json_t *job, json_t **err)
{
    const json_t *n = json_object_get(sb_job_request(job), "n");
    const json_t *caps = json_object_get(sb_job_route(job), "capabilities");
    bool native = provider->supports_n && !json_is_false(json_object_get(caps, "n"));
    if (!json_is_integer(n) || json_integer_value(n) <= 1 || native)
        return 1; /* a bad n is the adapter's to refuse */
    if (json_integer_value(n) > SB_WORKER_MAX_FANOUT) {
        *err = sb_wjob_error(400, SB_ERR_INVALID_REQUEST, "request.n must be at most %d for this model",
                             SB_WORKER_MAX_FANOUT);
        return 0;
    }
    return (int)json_integer_value(n);
}

/* Takes a NEW job from its body to running calls, or to DONE with an error
 * event. */
static void sb_wjob_start(sb_wjob_t *j, const zframe_t *body, long long deadline_ms)
{
    sb_worker_t *w = j->w;
    json_t *err = NULL;
    if (w->state != SB_WORKER_ACTIVE) {
        err = sb_event_error(503, SB_ERR_OVERLOADED, NULL, "worker is shutting down");
        goto fail;
    }
    if (j->link->njobs > w->credits) { /* this job is already counted; each broker has our credits at most */
        err = sb_event_error(503, SB_ERR_OVERLOADED, NULL, "worker is at capacity");
        goto fail;
    }
    if (!body || sb_mpjson_decode(zframe_data((zframe_t *)body), zframe_size((zframe_t *)body), &j->job) < 0 ||
        !json_is_object(j->job)) {
        err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, "job body is not a valid msgpack job");
        goto fail;
    }
    sb_trace_t trace;
    if (sb_trace_parse(json_string_value(json_object_get(json_object_get(j->job, "trace"), "traceparent")), &trace) ==
        0)
        memcpy(j->trace_id, trace.trace_id, sizeof j->trace_id);
    /* File search's ingestion and search (wtool_vsjob.h) call no model. */
    if (sb_vsjob_is_op(sb_job_request(j->job))) {
        sb_vs_env_t env = {
            .base = w->base, .db = w->db, .up = w->upstream, .connect_timeout_ms = w->connect_timeout_ms};
        if (sb_vsjob_start(&env, j->job, deadline_ms, sb_wjob_on_vsjob, j, &j->vs, &err) < 0)
            goto fail;
        sb_wjob_set_state(j, SB_WJOB_UPSTREAM);
        return;
    }
    const char *kind = sb_job_route_str(j->job, "provider");
    if (!kind) {
        err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, "job route has no provider");
        goto fail;
    }
    j->provider = sb_provider_lookup(kind);
    if (!j->provider) {
        err = sb_wjob_error(501, SB_ERR_SERVER, "provider kind '%s' is not supported", kind);
        goto fail;
    }
    const json_t *op = json_object_get(sb_job_request(j->job), "op");
    if (op && !sb_job_is_count(j->job) && !(json_is_string(op) && !strcmp(json_string_value(op), "generate"))) {
        err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, "job request.op is not supported");
        goto fail;
    }
    /* A count generates nothing to check, and asks for one count. */
    bool count = sb_job_is_count(j->job);
    bool count_endpoint = count && j->provider->build_count_request && j->provider->parse_count_response;
    /* The frontend checks schemas too, but a worker trusts no job. */
    if (!count && sb_strict_new(sb_job_request(j->job), &j->strict, &err) < 0)
        goto fail;
    j->stream = !count && json_is_true(json_object_get(sb_job_request(j->job), "stream"));
    int n_calls = count ? 1 : sb_wjob_fanout(j->provider, j->job, &err);
    if (n_calls == 0)
        goto fail;
    /* The job's shape (sb_job.h), checked once here so the adapters can take
     * it as given; refused as an adapter refused it (400 invalid_request).
     * After the checks that came before the adapter (provider, op, strict
     * schemas, fan-out size), so a job's first error is what it was; before
     * anything reads its items (the count's generation job, the adapter). */
    if (sb_job_check(j->job, &err) < 0)
        goto fail;
    j->deadline_ms = deadline_ms;
    j->route_key = sb_retry_budget_key(j->job);
    if (!count && n_calls == 1) {
        /* Built-in tools the gateway runs: the tool loop makes the calls. */
        int rc = sb_wloop_start(j, &sb_wjob_loop_ops, &err);
        if (rc < 0)
            goto fail;
        if (rc == 0) {
            sb_wjob_set_state(j, SB_WJOB_UPSTREAM);
            return;
        }
    }
    j->call_job = j->job;
    if (n_calls > 1) { /* a shallow copy: only request.n differs */
        json_t *request = json_copy((json_t *)sb_job_request(j->job));
        json_object_del(request, "n");
        j->own_job = json_copy(j->job);
        json_object_set_new(j->own_job, "request", request);
        j->call_job = j->own_job;
    } else if (count && !count_endpoint) {
        /* No counting endpoint (OpenAI Chat, vLLM, llama.cpp, Ollama): the
         * count is the prompt_tokens of a generation cut to one output
         * token, exact as the upstream counts it, and it costs that token. */
        j->own_job = sb_provider_count_job(j->job);
        j->call_job = j->own_job;
    }
    int built = count_endpoint ? j->provider->build_count_request(j->call_job, &j->req, &err)
                               : j->provider->build_request(j->call_job, &j->req, &err);
    if (built < 0) {
        if (!err)
            err = sb_event_error(500, SB_ERR_SERVER, NULL, "could not build the upstream request");
        goto fail;
    }
    sb_provider_request_add_trace(&j->req, j->job);
    j->calls = sb_xcalloc((size_t)n_calls, sizeof *j->calls);
    j->n_calls = n_calls;
    for (int i = 0; i < n_calls; i++) {
        sb_wcall_t *c = &j->calls[i];
        c->j = j;
        c->ops = &sb_wjob_call_ops;
        c->choice = n_calls > 1 ? i : -1;
        c->attempt = 1;
        c->events = (n_calls == 1 && !j->strict) ? json_incref(j->events) : json_array();
        if (j->strict && j->stream)
            c->seen = json_array();
    }
    for (int i = 0; i < n_calls; i++) {
        if (sb_wcall_start(&j->calls[i], &err) < 0)
            goto fail; /* ending the job cancels the calls already started */
        j->calls_open++;
        sb_retry_budget_deposit(w->budget, j->route_key); /* a call the client asked for */
    }
    if (!j->strict && w->retry_max <= 0) /* no retry will need it; curl has its own copy */
        sb_provider_request_clear(&j->req);
    sb_wjob_log(j, SB_LOG_DEBUG, "%s %s, %d call(s), timeout %lld ms%s%s", kind,
                json_string_value(json_object_get(j->job, "model")), n_calls, (long long)j->calls[0].timeout_ms,
                j->strict ? ", strict output" : "", count ? ", token count" : "");
    sb_wjob_set_state(j, SB_WJOB_UPSTREAM);
    return;
fail:
    sb_wjob_finish(j, err);
}

void sb_wjob_receive(sb_worker_t *w, sb_wlink_t *link, const sb_wire_msg_t *msg)
{
    const char *job_id = sb_wire_header_str(msg, "job_id");
    if (!job_id || !*job_id || strlen(job_id) > SB_JOB_ID_MAX) {
        sb_warn("dropped a JOB without a usable job_id");
        return;
    }
    sb_wjob_t *held = sb_map_get(w->jobs, job_id);
    if (held && held->link == link) {
        sb_warn("job %s: dropped a duplicate JOB", job_id);
        return;
    }
    if (held) {
        /* Resubmitted through another broker: its frontend counts the copy
         * it sent to the first one as lost (that broker went away before we
         * noticed). That copy's events could reach nobody. */
        sb_wjob_log(held, SB_LOG_INFO, "resubmitted through the broker at %s: dropping the copy from %s",
                    link->endpoint, held->link->endpoint);
        sb_map_remove(w->jobs, job_id);
        sb_wjob_end(held, false, NULL);
    }
    sb_wjob_t *j = sb_xcalloc(1, sizeof *j);
    j->w = w;
    j->link = link;
    link->njobs++;
    sb_worker_credit_changed(w);
    j->state = SB_WJOB_NEW;
    snprintf(j->job_id, sizeof j->job_id, "%s", job_id);
    j->events = json_array();
    sb_map_put(w->jobs, j->job_id, j);
    const char *bg = sb_wire_header_str(msg, "background");
    if (bg) {
        if (!*bg || strlen(bg) > SB_RESPONSE_ID_MAX) {
            sb_wjob_finish(j, sb_event_error(400, SB_ERR_INVALID_REQUEST, "bad_job",
                                             "malformed job: background must name a response"));
            return;
        }
        if (!w->db) {
            sb_error("job %s: a background job, and this worker has no --database", job_id);
            sb_wjob_finish(j, sb_event_error(503, SB_ERR_OVERLOADED, "no_database",
                                             "this worker cannot run background responses"));
            return;
        }
        j->bg = sb_wbg_new(w->base, w->db, bg, job_id, w->name);
    }
    sb_wjob_start(j, msg->body, sb_wire_header_int(msg, "deadline_ms", 0));
}

void sb_wjob_cancel(sb_worker_t *w, const sb_wlink_t *link, const sb_wire_msg_t *msg)
{
    const char *job_id = sb_wire_header_str(msg, "job_id");
    sb_wjob_t *j = job_id ? sb_map_get(w->jobs, job_id) : NULL;
    if (!j || j->link != link)
        return;            /* already over (its final event is on its way), or another broker's copy */
    j->interrupted = true; /* a pending retry dies with it */
    sb_wjob_finish(j, sb_event_error(499, "cancelled", NULL, "job cancelled"));
}

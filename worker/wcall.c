/*
 * wcall: one upstream call of a job, from its first attempt to the final
 * event it hands its job: the attempt (a transfer through upstream.h whose
 * body goes through a fresh sb_provider_parser), the streaming idle timer,
 * and the retry decision. What the events then mean for the job (the strict
 * hold, a fan-out's merge, the job's end) is wjob.c's, told through the
 * sb_wcall_ops_t the job handed in.
 *
 * Upstream retries (retry.h): an attempt that ends with a transient failure
 * (no connection, a broken transfer, HTTP 408/429/500/502/503/504/529) is
 * retried after a jittered backoff, honouring Retry-After as a floor, when
 * all of these hold: no event of the job has left for the broker (a streamed
 * job sends as it goes; a non-streamed one holds every event until its final
 * one, so the client has seen nothing), the call has retries left
 * (--retry-max), the retry would start at least SB_WORKER_RETRY_MIN_LEFT_MS
 * before the job's deadline (without one: the delay is within the route's
 * timeout), and the route's retry budget has a token (retry_budget.h; every
 * call that starts deposits, every retry withdraws). Each call of a fan-out
 * retries on its own; a cancel ends the job, pending retry included. The
 * strict-output retry (wjob.c) is separate and spends no budget. Every
 * attempt gets a fresh timeout: the route's, cut to what is left of the
 * deadline.
 */
#include <czmq.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_log.h"
#include "sb_time.h"
#include "wmetrics.h"
#include "worker_internal.h"

#define SB_WORKER_DEFAULT_ROUTE_TIMEOUT_MS 60000
/* A retry must start at least this long before the job's deadline: one with
 * less left could only turn the upstream's error into a timeout. */
#define SB_WORKER_RETRY_MIN_LEFT_MS 100

static int sb_wcall_on_data(long status, const char *data, size_t len, void *arg);
static void sb_wcall_on_done(const sb_upstream_result_t *res, void *arg);

/* The upstream timeout: the route's, cut to what is left before the job's
 * deadline (absolute epoch ms, 0 = none). <= 0 means already too late. */
static int64_t sb_wcall_timeout(const json_t *job, long long deadline_ms)
{
    const json_t *t = json_object_get(sb_job_route(job), "timeout_ms");
    int64_t timeout =
        json_is_integer(t) && json_integer_value(t) > 0 ? json_integer_value(t) : SB_WORKER_DEFAULT_ROUTE_TIMEOUT_MS;
    if (deadline_ms > 0) {
        int64_t left = deadline_ms - sb_now_ms();
        if (left < timeout)
            timeout = left;
    }
    return timeout;
}

/* (Re)arms a streaming call's idle timer. */
static void sb_wcall_arm_idle(sb_wcall_t *c)
{
    if (!c->idle)
        return;
    int64_t ms = c->j->w->stream_idle_ms;
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    event_add(c->idle, &tv);
}

/* A streaming upstream said nothing for stream_idle_ms: it is stuck. The
 * call ends with a timeout, which ends the job (and, in a fan-out, the other
 * calls); the client gets the style's error event. */
static void sb_wcall_on_idle(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sb_wcall_t *c = arg;
    if (!c->xfer)
        return;
    sb_upstream_cancel(c->j->w->upstream, &c->xfer);
    c->route = SB_RETRY_ROUTE_FAILED;
    sb_wjob_log(c->j, SB_LOG_WARN, "upstream stream idle for %lld ms; ending it", (long long)c->j->w->stream_idle_ms);
    json_array_append_new(c->events,
                          sb_wjob_error(504, SB_ERR_TIMEOUT, "timeout: the upstream stream sent nothing for %lld ms",
                                        (long long)c->j->w->stream_idle_ms));
    c->ops->on_final(c);
}

int sb_wcall_start(sb_wcall_t *c, json_t **err)
{
    sb_wjob_t *j = c->j;
    c->timeout_ms = sb_wcall_timeout(j->job, j->deadline_ms);
    if (c->timeout_ms <= 0) {
        bool first = c->attempt == 1 && c->retries == 0;
        *err = sb_event_error(504, SB_ERR_TIMEOUT, NULL,
                              first ? "timeout: the job's deadline passed before it reached the upstream"
                                    : "timeout: the job's deadline passed before the retry could start");
        return -ETIMEDOUT;
    }
    sb_provider_parser_destroy(&c->parser);
    c->parser = sb_provider_parser_new(j->provider, j->call_job);
    c->feed_error = 0;
    sb_upstream_cbs_t cbs = {.on_data = sb_wcall_on_data, .on_done = sb_wcall_on_done};
    if (sb_upstream_start(j->w->upstream, &j->req, c->timeout_ms, j->w->connect_timeout_ms, &cbs, c, &c->xfer) < 0) {
        *err = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream request could not be started");
        return -EIO;
    }
    if (j->stream && j->w->stream_idle_ms > 0 && !c->idle)
        c->idle = evtimer_new(j->w->base, sb_wcall_on_idle, c);
    sb_wcall_arm_idle(c);
    return 0;
}

json_t *sb_wcall_take_final(sb_wcall_t *c)
{
    size_t n = json_array_size(c->events), i = 0;
    while (i < n && !sb_event_is_final(json_array_get(c->events, i)))
        i++;
    if (i == n) {
        sb_wjob_log(c->j, SB_LOG_ERROR, "provider produced no final event");
        return sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream response could not be translated");
    }
    json_t *final = json_incref(json_array_get(c->events, i));
    while (json_array_size(c->events) > i)
        json_array_remove(c->events, i);
    return final;
}

/* Upstream body bytes: buffered (or, streaming, translated) by the parser;
 * what it produces goes to the job, which passes it on or holds it. */
static int sb_wcall_on_data(long status, const char *data, size_t len, void *arg)
{
    sb_wcall_t *c = arg;
    int rc = sb_provider_parser_feed(c->parser, status, data, len, c->events);
    if (rc < 0) {
        c->feed_error = rc;
        return rc;
    }
    sb_wcall_arm_idle(c);
    c->ops->on_events(c);
    return 0;
}

/* A call's retry timer: its next attempt. */
static void sb_wcall_on_retry(evutil_socket_t fd, short what, void *arg)
{
    sb_wcall_t *c = arg;
    json_t *err = NULL;
    if (sb_wcall_start(c, &err) < 0)
        c->ops->on_fail(c, err);
}

/* The first final event among a call's events (borrowed), or NULL. */
static const json_t *sb_wcall_peek_final(const sb_wcall_t *c)
{
    for (size_t i = 0; i < json_array_size(c->events); i++)
        if (sb_event_is_final(json_array_get(c->events, i)))
            return json_array_get(c->events, i);
    return NULL;
}

/*
 * An attempt is over and its events (the final one included) are in
 * c->events: records what it says about the route and, when its failure is
 * transient and the rules (top of file) allow, drops its events and arms
 * the retry timer. Returns true when a retry is pending.
 */
static bool sb_wcall_retry(sb_wcall_t *c, const sb_upstream_result_t *res)
{
    sb_wjob_t *j = c->j;
    sb_worker_t *w = j->w;
    const json_t *final = sb_wcall_peek_final(c);
    sb_retry_verdict_t v = sb_retry_classify(res->outcome, res->status, final);
    c->route = v.route;
    if (!v.transient || w->retry_max <= 0)
        return false;
    char why[160];
    if (res->outcome == SB_UPSTREAM_OK)
        snprintf(why, sizeof why, "upstream %ld", res->status);
    else if (res->outcome == SB_UPSTREAM_CONNECT_FAILED)
        snprintf(why, sizeof why, "upstream connection failed (%s)", res->detail);
    else
        snprintf(why, sizeof why, "upstream transfer failed (%s)", res->detail);
    char choice[32] = "";
    if (c->choice >= 0)
        snprintf(choice, sizeof choice, " (choice %d)", c->choice);
    if (c->retries >= w->retry_max) {
        sb_info("job %s%s: %s; no retry left after %d", j->job_id, choice, why, c->retries);
        return false;
    }
    if (j->sent) {
        sb_info("job %s%s: %s; not retried: the client has seen part of the answer", j->job_id, choice, why);
        return false;
    }
    const json_t *ra = json_object_get(final, "retry_after");
    long retry_after = json_is_integer(ra) ? (long)json_integer_value(ra) : res->retry_after;
    int64_t delay = sb_retry_backoff_ms(c->retries + 1, w->retry_base_ms, w->retry_cap_ms, retry_after);
    if (j->deadline_ms > 0 ? sb_now_ms() + delay + SB_WORKER_RETRY_MIN_LEFT_MS > j->deadline_ms
                           : delay > sb_wcall_timeout(j->job, 0)) {
        sb_info("job %s%s: %s; not retried: a retry after %lld ms would pass the deadline", j->job_id, choice, why,
                (long long)delay);
        return false;
    }
    if (!c->retry_timer && !(c->retry_timer = evtimer_new(w->base, sb_wcall_on_retry, c)))
        return false;
    if (!sb_retry_budget_withdraw(w->budget, j->route_key)) {
        if (sb_retry_budget_warn_due(w->budget, j->route_key, sb_mono_ms())) {
            const char *provider = sb_job_route_str(j->job, "provider");
            const char *url = sb_job_route_str(j->job, "base_url");
            const char *model = sb_job_route_str(j->job, "upstream_model");
            sb_warn("retry budget of route %s %s %s exhausted: not retrying (job %s%s: %s)", provider ? provider : "",
                    url ? url : "", model ? model : "", j->job_id, choice, why);
        }
        return false;
    }
    c->retries++;
    sb_info("job %s%s: retry %d of %d after %lld ms: %s", j->job_id, choice, c->retries, w->retry_max, (long long)delay,
            why);
    /* Nothing of this attempt has left (j->sent is false): it goes nowhere. */
    json_array_clear(c->events);
    if (c->seen)
        json_array_clear(c->seen);
    if (c->idle)
        event_del(c->idle);
    struct timeval tv = {.tv_sec = delay / 1000, .tv_usec = (delay % 1000) * 1000};
    if (evtimer_add(c->retry_timer, &tv) < 0)
        sb_wcall_on_retry(-1, 0, c); /* only on a libevent failure: retry at once rather than lose the call */
    return true;
}

/* The attempt's transfer is over (upstream.h): its outcome becomes the
 * call's final event, then a retry or the job's turn. */
static void sb_wcall_on_done(const sb_upstream_result_t *res, void *arg)
{
    sb_wcall_t *c = arg;
    c->xfer = NULL; /* upstream frees it when we return */
    json_t *final = NULL;
    switch (res->outcome) {
    case SB_UPSTREAM_OK: {
        sb_provider_response_t resp = {
            .status = res->status, .retry_after = res->retry_after, .upstream_us = res->elapsed_us};
        sb_provider_parser_finish(c->parser, &resp, c->events);
        break;
    }
    case SB_UPSTREAM_TIMEOUT:
        final = sb_wjob_error(504, SB_ERR_TIMEOUT, "timeout: upstream did not answer within %lld ms",
                              (long long)c->timeout_ms);
        break;
    case SB_UPSTREAM_CONNECT_FAILED:
        final = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream connection failed");
        break;
    case SB_UPSTREAM_ABORTED:
        final = c->feed_error == -E2BIG
                    ? sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream response too large")
                    : sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream response could not be parsed");
        break;
    case SB_UPSTREAM_FAILED:
    case SB_UPSTREAM_BLOCKED: /* LLM calls are unguarded: for completeness only */
        final = sb_wjob_error(502, SB_ERR_UPSTREAM, "upstream request failed: %s", res->detail);
        break;
    }
    if (final)
        json_array_append_new(c->events, final);
    static const char *const outcomes[] = {[SB_UPSTREAM_TIMEOUT] = "timeout",
                                           [SB_UPSTREAM_CONNECT_FAILED] = "connect_failed",
                                           [SB_UPSTREAM_ABORTED] = "aborted",
                                           [SB_UPSTREAM_FAILED] = "failed",
                                           [SB_UPSTREAM_BLOCKED] = "blocked"};
    char status[16];
    snprintf(status, sizeof status, "%ld", (long)res->status);
    const char *model = json_string_value(json_object_get(c->j->job, "model"));
    sb_wmetrics_upstream_call(model, res->outcome == SB_UPSTREAM_OK ? status : outcomes[res->outcome]);
    if (sb_wcall_retry(c, res)) {
        sb_wmetrics_retry(model);
        return;
    }
    c->ops->on_final(c);
}

void sb_wcall_cancel(sb_wcall_t *c)
{
    sb_upstream_cancel(c->j->w->upstream, &c->xfer);
    if (c->idle)
        event_del(c->idle);
    if (c->retry_timer)
        event_del(c->retry_timer);
}

void sb_wcall_clear(sb_wcall_t *c)
{
    sb_upstream_cancel(c->j->w->upstream, &c->xfer);
    sb_provider_parser_destroy(&c->parser);
    json_decref(c->events);
    json_decref(c->seen);
    if (c->idle)
        event_free(c->idle);
    if (c->retry_timer)
        event_free(c->retry_timer);
}

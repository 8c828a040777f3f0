/*
 * wtool_embed: one embedding call (wtool_embed.h): its inputs cut into
 * batches, SB_EMBED_PARALLEL of them in flight on the worker's upstream
 * (sb_upstream_start: the operator's route, no SSRF guard), each batch's
 * answer read by wtool_embed_wire.c into its place in the result, a
 * transient failure retried with backoff, and the caller told once, from
 * the loop. Nothing starts inside sb_embed_start: a zero timer starts the
 * first batches, so even a route that cannot embed is reported from the
 * loop, never from inside the call.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_event.h"
#include "sb_job.h"
#include "sb_log.h"
#include "sb_time.h"
#include "wtool_embed.h"

#define DEFAULT_TIMEOUT_MS 60000
/* First retry's backoff; doubled for the next. */
#define BACKOFF_MS 500
/* Longest Retry-After honoured (longer: the batch fails now). */
#define RETRY_AFTER_MAX_S 10

struct batch {
    sb_embed_t *e; /* borrowed: the call whose array holds this batch */
    size_t from, n;
    int retries;
    sb_upstream_xfer_t *xfer; /* borrowed while in flight */
    struct event *retry;      /* owned; pending while it waits to retry */
    sb_buf_t body;
    long status; /* as on_data saw it */
};

struct sb_embed {
    sb_embed_env_t env;
    json_t *route;                  /* owned reference */
    json_t *job;                    /* owned: {"route":...}, what scrubbing and the 401 log line read */
    const sb_embed_input_t *inputs; /* borrowed */
    size_t n;
    bool query;
    long long deadline_ms;
    int64_t timeout_ms; /* one request's: route.timeout_ms */
    struct batch *batches;
    size_t n_batches, next, in_flight, done;
    float *vecs; /* owned until handed to cb */
    size_t dim;
    int64_t tokens, upstream_us;
    struct event *kick; /* owned; starts the first batches from the loop */
    sb_embed_cb cb;
    void *arg;
};

static void stop_all(sb_embed_t *e)
{
    for (size_t i = 0; i < e->n_batches; i++) {
        struct batch *b = &e->batches[i];
        if (b->xfer)
            sb_upstream_cancel(e->env.up, &b->xfer);
        if (b->retry)
            event_del(b->retry);
    }
    if (e->kick)
        event_del(e->kick);
}

static void embed_free(sb_embed_t *e)
{
    for (size_t i = 0; i < e->n_batches; i++) {
        if (e->batches[i].retry)
            event_free(e->batches[i].retry);
        sb_buf_free(&e->batches[i].body);
    }
    free(e->batches);
    if (e->kick)
        event_free(e->kick);
    free(e->vecs);
    json_decref(e->route);
    json_decref(e->job);
    free(e);
}

void sb_embed_cancel(sb_embed_t **ep)
{
    if (!ep || !*ep)
        return;
    stop_all(*ep);
    embed_free(*ep);
    *ep = NULL;
}

/* The end: the caller is told (err NULL: the vectors are theirs) and the call is freed. */
static void deliver(sb_embed_t *e, json_t *err)
{
    stop_all(e);
    float *vecs = NULL;
    if (!err) {
        vecs = e->vecs;
        e->vecs = NULL;
    }
    e->cb(e->arg, vecs, e->dim, e->tokens, e->upstream_us, err);
    embed_free(e);
}

/* This request's timeout: the route's, cut to what the deadline leaves (<= 0: none left). */
static int64_t request_timeout(const sb_embed_t *e)
{
    int64_t t = e->timeout_ms;
    if (e->deadline_ms > 0) {
        int64_t left = e->deadline_ms - sb_now_ms();
        if (left < t)
            t = left;
    }
    return t;
}

static bool batch_start(struct batch *b);

/* Starts batches while fewer than SB_EMBED_PARALLEL are in flight; stops
 * when one could not start (the call has ended and is freed). */
static void pump(sb_embed_t *e)
{
    while (e->next < e->n_batches && e->in_flight < SB_EMBED_PARALLEL) {
        e->in_flight++;
        if (!batch_start(&e->batches[e->next++]))
            return;
    }
}

static int on_data(long status, const char *data, size_t len, void *arg)
{
    struct batch *b = arg;
    b->status = status;
    if (b->body.len + len > SB_EMBED_MAX_ANSWER)
        return -E2BIG;
    sb_buf_add(&b->body, data, len);
    return 0;
}

/* The error event for an upstream's HTTP error answer (its message scrubbed
 * of credentials, a 401/403 logged for the operator with the route). */
static json_t *status_error(sb_embed_t *e, const struct batch *b, long status, long retry_after)
{
    json_t *root = json_loadb(b->body.p ? b->body.p : "", b->body.len, 0, NULL);
    const json_t *eo = json_object_get(root, "error");
    const char *code = json_string_value(json_object_get(eo, "code"));
    const char *type = json_string_value(json_object_get(eo, "type"));
    bool quota = (code && !strcmp(code, "insufficient_quota")) || (type && !strcmp(type, "insufficient_quota"));
    const json_t *prev = sb_provider_set_current_job(e->job);
    json_t *ev = sb_provider_upstream_error(status, root, sb_provider_error_message(root), quota, retry_after);
    sb_provider_set_current_job(prev);
    json_decref(root);
    return ev;
}

static bool transient(const sb_upstream_result_t *res, long status)
{
    if (res->outcome == SB_UPSTREAM_CONNECT_FAILED)
        return true;
    return res->outcome == SB_UPSTREAM_OK &&
           (status == 429 || status == 500 || status == 502 || status == 503 || status == 504);
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)batch_start(arg);
}

/* Schedules a retry of b when the failure is transient and time allows.
 * True when scheduled. */
static bool schedule_retry(struct batch *b, const sb_upstream_result_t *res, long status)
{
    sb_embed_t *e = b->e;
    if (!transient(res, status) || b->retries >= SB_EMBED_RETRIES)
        return false;
    int64_t delay = (int64_t)BACKOFF_MS << b->retries;
    if (res->retry_after >= 0) {
        if (res->retry_after > RETRY_AFTER_MAX_S)
            return false;
        delay = res->retry_after * 1000;
    }
    /* A retry needs time for itself after the wait. */
    if (e->deadline_ms > 0 && e->deadline_ms - sb_now_ms() < delay + 1000)
        return false;
    b->retries++;
    if (!b->retry)
        b->retry = evtimer_new(e->env.base, on_retry, b);
    struct timeval tv = {.tv_sec = delay / 1000, .tv_usec = (delay % 1000) * 1000};
    evtimer_add(b->retry, &tv);
    return true;
}

static void on_done(const sb_upstream_result_t *res, void *arg)
{
    struct batch *b = arg;
    sb_embed_t *e = b->e;
    b->xfer = NULL; /* freed by upstream when this returns */
    e->upstream_us += res->elapsed_us;
    long status = res->outcome == SB_UPSTREAM_OK ? res->status : b->status;
    json_t *err = NULL;
    switch (res->outcome) {
    case SB_UPSTREAM_OK:
        break;
    case SB_UPSTREAM_TIMEOUT:
        err = sb_event_error(504, SB_ERR_TIMEOUT, NULL, "timeout: the embeddings upstream did not answer in time");
        break;
    case SB_UPSTREAM_ABORTED:
        err = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "the embeddings upstream's answer is too large");
        break;
    case SB_UPSTREAM_CONNECT_FAILED:
        if (schedule_retry(b, res, status))
            return;
        err = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "the embeddings upstream is unreachable");
        break;
    default:
        err = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "the embeddings upstream transfer failed");
        break;
    }
    if (!err && (status < 200 || status > 299)) {
        if (schedule_retry(b, res, status)) {
            sb_buf_free(&b->body);
            return;
        }
        err = status_error(e, b, status, res->retry_after);
    }
    if (err) {
        deliver(e, err);
        return;
    }
    size_t dim = e->dim;
    float *vecs = NULL;
    int64_t tokens = 0;
    char why[160];
    if (sb_embed_parse(sb_embed_api_of(e->route), b->body.p ? b->body.p : "", b->body.len, b->n, &dim, &vecs, &tokens,
                       why, sizeof why) < 0) {
        char *msg = sb_xasprintf("the embeddings upstream's answer is not valid: %s", why);
        deliver(e, sb_event_error(502, SB_ERR_UPSTREAM, NULL, msg));
        free(msg);
        return;
    }
    sb_buf_free(&b->body);
    if (!e->vecs) {
        e->dim = dim;
        e->vecs = sb_xcalloc(e->n * dim, sizeof *e->vecs);
    }
    memcpy(e->vecs + b->from * dim, vecs, b->n * dim * sizeof *vecs);
    free(vecs);
    e->tokens += tokens;
    e->in_flight--;
    if (++e->done == e->n_batches) {
        deliver(e, NULL);
        return;
    }
    pump(e);
}

/* Starts (or restarts) b's request. False when it could not: the call has
 * then ended with an error and is freed. */
static bool batch_start(struct batch *b)
{
    sb_embed_t *e = b->e;
    sb_buf_free(&b->body);
    b->status = 0;
    int64_t timeout = request_timeout(e);
    if (timeout <= 0) {
        deliver(e, sb_event_error(504, SB_ERR_TIMEOUT, NULL,
                                  "timeout: the job's deadline passed before its embeddings were made"));
        return false;
    }
    sb_provider_request_t req = {0};
    json_t *err = NULL;
    if (sb_embed_build(e->route, e->inputs + b->from, b->n, e->query, &req, &err) < 0) {
        sb_provider_request_clear(&req);
        deliver(e, err ? err : sb_event_error(500, SB_ERR_SERVER, NULL, "could not build the embeddings request"));
        return false;
    }
    sb_upstream_cbs_t cbs = {.on_data = on_data, .on_done = on_done};
    int rc = sb_upstream_start(e->env.up, &req, timeout, e->env.connect_timeout_ms, &cbs, b, &b->xfer);
    sb_provider_request_clear(&req); /* upstream has its own copy; the credential is wiped with it */
    if (rc < 0) {
        sb_warn("embeddings: could not start an upstream transfer: %s", strerror(-rc));
        deliver(e, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "could not start the embeddings request"));
        return false;
    }
    return true;
}

static void on_kick(evutil_socket_t fd, short what, void *arg)
{
    sb_embed_t *e = arg;
    if (e->n_batches == 0) {
        deliver(e, sb_event_error(500, SB_ERR_SERVER, NULL, "no text to embed"));
        return;
    }
    pump(e);
}

sb_embed_t *sb_embed_start(const sb_embed_env_t *env, const json_t *route, const sb_embed_input_t *inputs, size_t n,
                           bool query, long long deadline_ms, sb_embed_cb cb, void *arg)
{
    sb_embed_t *e = sb_xcalloc(1, sizeof *e);
    e->env = *env;
    e->route = json_incref((json_t *)route);
    e->job = json_pack("{s:O}", "route", route ? route : json_null());
    e->inputs = inputs;
    e->n = n;
    e->query = query;
    e->deadline_ms = deadline_ms;
    const json_t *t = json_object_get(route, "timeout_ms");
    e->timeout_ms = json_is_integer(t) && json_integer_value(t) > 0 ? json_integer_value(t) : DEFAULT_TIMEOUT_MS;
    e->n_batches = (n + SB_EMBED_BATCH - 1) / SB_EMBED_BATCH;
    e->batches = sb_xcalloc(e->n_batches ? e->n_batches : 1, sizeof *e->batches);
    for (size_t i = 0; i < e->n_batches; i++) {
        e->batches[i].e = e;
        e->batches[i].from = i * SB_EMBED_BATCH;
        e->batches[i].n = n - i * SB_EMBED_BATCH < SB_EMBED_BATCH ? n - i * SB_EMBED_BATCH : SB_EMBED_BATCH;
    }
    e->cb = cb;
    e->arg = arg;
    e->kick = evtimer_new(env->base, on_kick, e);
    struct timeval zero = {0, 0};
    evtimer_add(e->kick, &zero);
    return e;
}

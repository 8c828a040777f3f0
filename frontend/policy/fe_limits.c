/* fe_limits: admission and release of a request's lease (see fe_limits.h). */
#include "fe_limits.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_limits_batch.h"
#include "fe_limits_block.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_log.h"

/* A lease outlives its request's deadline by this much before it expires
 * (only leases of a frontend that died get that far). */
#define FE_LIMITS_LEASE_SLACK_MS 60000

static const char *fe_limits_what(const char *what)
{
    if (!strcmp(what, "requests"))
        return "requests per minute";
    if (!strcmp(what, "tokens"))
        return "tokens per minute";
    return "concurrent requests";
}

/* Columns of an admission's row (FE_SQL_LIMIT_ADMIT). */
enum {
    FE_LIMITS_ORD,
    FE_LIMITS_ADMITTED,
    FE_LIMITS_KIND,
    FE_LIMITS_SCOPE,
    FE_LIMITS_WHAT,
    FE_LIMITS_LIMIT,
    FE_LIMITS_WAIT
};

static void fe_limits_refuse(fe_request_t *r, const PGresult *res, int row)
{
    const char *kind = PQgetvalue(res, row, FE_LIMITS_KIND), *scope = PQgetvalue(res, row, FE_LIMITS_SCOPE);
    const char *what = PQgetvalue(res, row, FE_LIMITS_WHAT);
    long long limit = strtoll(PQgetvalue(res, row, FE_LIMITS_LIMIT), NULL, 10);
    long long wait_ms = strtoll(PQgetvalue(res, row, FE_LIMITS_WAIT), NULL, 10);
    fe_error_t e;
    if (!strcmp(kind, "quota")) {
        fe_error_set(&e, 429, SB_ERR_QUOTA, "insufficient_quota", NULL,
                     "You exceeded your current quota of %lld tokens, please check your plan and usage.", limit);
        e.no_retry = true;
    } else {
        int secs = (int)((wait_ms + 999) / 1000);
        if (secs < 1)
            secs = 1;
        fe_error_set(&e, 429, SB_ERR_RATE_LIMIT, "rate_limit_exceeded", NULL,
                     "Rate limit reached for your %s on %s: limit %lld. Please try again in %d s.",
                     !strcmp(scope, "group") ? "token group" : "API key", fe_limits_what(what), limit, secs);
        e.retry_after = secs;
    }
    fe_request_fail(r, &e);
}

/* The request ended (its cleanup): a lease still held (the client left, the
 * deadline passed) is released; after fe_limits_release it is a no-op. */
static void fe_limits_on_end(fe_request_t *r, void *arg)
{
    (void)arg;
    fe_limits_release(r, NULL);
}

static void fe_limits_on_admit(const PGresult *res, int row, const char *err, void *arg)
{
    fe_request_t *r = arg;
    if (!fe_request_release(r))
        return;
    if (err) {
        sb_error("limit admission failed: %s", err);
        fe_request_failf(r, 503, SB_ERR_SERVER, "service_unavailable", NULL,
                         "The service is temporarily unable to check rate limits, retry later");
        return;
    }
    if (PQgetvalue(res, row, FE_LIMITS_ADMITTED)[0] != 't') {
        fe_limits_refuse(r, res, row);
        return;
    }
    r->lease = true;
    fe_request_cleanup_add(r, fe_limits_on_end, NULL);
    r->prep_done(r);
}

/* The request's key id. */
static long long fe_limits_key_id(const fe_request_t *r)
{
    return (long long)json_integer_value(json_object_get(r->key, "key_id"));
}

void fe_limits_admit(fe_request_t *r, fe_request_then_fn done)
{
    /* The reservation: the input estimate plus the output limit asked for,
     * corrected to the real count when the request ends. */
    const json_t *max_out = json_object_get(r->parsed.canonical, "max_output_tokens");
    int64_t reserve = r->est_tokens + (json_is_integer(max_out) ? (int64_t)json_integer_value(max_out) : 0);
    json_t *timeout = json_object_get(r->model, "timeout_ms");
    long long ms = json_is_integer(timeout) ? (long long)json_integer_value(timeout) : r->srv->cfg.default_timeout_ms;
    /* A background response's lease outlives its request (the finalizer's
     * request_log row frees it), so it is never a block's. */
    if (!r->parsed.background && fe_limits_block_take(r->srv->limit_blocks, fe_limits_key_id(r), reserve,
                                                      ms + FE_LIMITS_LEASE_SLACK_MS, &r->taken)) {
        /* Admitted from the key's capacity block: no round trip. */
        r->lease = true;
        fe_request_cleanup_add(r, fe_limits_on_end, NULL);
        done(r);
        return;
    }
    json_t *row =
        json_pack("{s:s, s:I, s:I, s:I}", "request_id", r->request_id, "key_id", (json_int_t)fe_limits_key_id(r),
                  "tokens", (json_int_t)reserve, "ttl_ms", (json_int_t)(ms + FE_LIMITS_LEASE_SLACK_MS));
    r->prep_done = done;
    fe_request_hold(r);
    fe_storebatch_add_row(fe_limits_batch_admit(r->srv->limits, fe_limits_key_id(r)), row, fe_limits_on_admit, r);
}

void fe_limits_usage(const fe_request_t *r, int64_t *in, int64_t *out)
{
    if (r->result.usage_seen) {
        *in = r->result.input_tokens;
        *out = r->result.output_tokens;
        return;
    }
    *in = *out = 0;
    if (!r->submitted)
        return;
    /* No usage from upstream: the job was cut short (client gone, deadline)
     * or failed. What was streamed was generated; the input was read unless
     * the upstream refused the request outright. */
    *out = fe_tokens_total(&r->result.streamed);
    *in = r->result.failed && *out == 0 ? 0 : r->est_tokens;
}

struct fe_limits_wait {
    fe_request_t *r;
    fe_request_then_fn then;
};

static void fe_limits_on_release(const PGresult *res, int row, const char *err, void *arg)
{
    (void)res;
    (void)row;
    struct fe_limits_wait *w = arg;
    fe_request_t *r = w->r;
    fe_request_then_fn then = w->then;
    free(w);
    if (err)
        fe_request_log_line(r, SB_LOG_WARN, "releasing its lease failed (it will expire): %s", err);
    if (!fe_request_release(r) || !then)
        return;
    then(r);
}

void fe_limits_release(fe_request_t *r, fe_request_then_fn then)
{
    if (!r->lease) {
        if (then)
            then(r);
        return;
    }
    r->lease = false;
    int64_t in, out;
    fe_limits_usage(r, &in, &out);
    if (r->taken.block) {
        fe_limits_block_put(&r->taken, in + out);
        if (then)
            then(r);
        return;
    }
    json_t *row = json_pack("{s:s, s:I}", "request_id", r->request_id, "tokens", (json_int_t)(in + out));
    struct fe_limits_wait *w = sb_xcalloc(1, sizeof *w);
    w->r = r;
    w->then = then;
    fe_request_hold(r);
    fe_storebatch_add_row(fe_limits_batch_release(r->srv->limits, fe_limits_key_id(r)), row, fe_limits_on_release, w);
}

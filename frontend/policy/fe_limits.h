/*
 * fe_limits: rate limits and quotas for one request, kept in PostgreSQL
 * (schema/003_limits.sql, docs/limits.md). A key whose key, group or
 * account has any limit ("limited" in its key record) is admitted by
 * sb_limit_admit before its job is submitted, which leases it a concurrency
 * slot and reserves its estimated tokens; the lease is released with the
 * real token count before the client sees the end of the answer, so a
 * client's next request finds the slot free on any frontend. Admissions
 * and releases of one key that arrive together go to the database as one
 * batch (fe_limits_batch.h, schema/007_limit_batches.sql), each request
 * judged in order as if alone. A key busy on this frontend is admitted
 * from a block of its capacity taken in advance (fe_limits_block.h), with
 * no round trip at all.
 */
#ifndef FE_LIMITS_H
#define FE_LIMITS_H

#include <stdint.h>

#include "fe_request.h"

/* The admission step of fe_generate: admitted, it calls done(r) (and the
 * lease is released when the request ends, if not before); refused, it ends
 * the request with a 429 (rate limit with Retry-After, or insufficient
 * quota). */
void fe_limits_admit(fe_request_t *r, fe_request_then_fn done);

/* Tokens the request used, for its lease and its request_log row: the
 * upstream's usage, or, when none came (an aborted stream), the input
 * estimate plus the estimate of the output streamed so far. */
void fe_limits_usage(const fe_request_t *r, int64_t *in, int64_t *out);

/* Releases the lease (no-op without one) and calls then(r) once the
 * database has answered; then runs at once when there is nothing to
 * release. A failed release is logged, never fatal: the lease expires. */
void fe_limits_release(fe_request_t *r, fe_request_then_fn then);

#endif

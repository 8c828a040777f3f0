/*
 * fe_request_db: a request's database query in its bracket. Every endpoint
 * and preparation step that asks PostgreSQL something does the same three
 * things around sb_db_query: hold the request while the query is out,
 * release it when the answer comes (and stop if the request has ended
 * meanwhile, its client gone), and answer a database error with a 503 in
 * the request's style. This is that bracket, once.
 */
#ifndef FE_REQUEST_DB_H
#define FE_REQUEST_DB_H

#include <libpq-fe.h>

#include "fe_request.h"

/* The answer of a query, for a request that goes on; res is borrowed for
 * the call. */
typedef void (*fe_request_db_cb)(fe_request_t *r, const PGresult *res);

/* Runs the prepared statement stmt with n params (copied) for r. When it
 * answers: if r has ended, nothing; on a database error, r ends with 503
 * service_unavailable and the message unavailable (a static string, e.g.
 * "Files are temporarily unavailable, retry later"); else cb(r, res). The
 * caller sets r's state (QUERY for an endpoint). */
void fe_request_db_query(fe_request_t *r, const char *stmt, int n, const char *const *params, const char *unavailable,
                         fe_request_db_cb cb);

#endif

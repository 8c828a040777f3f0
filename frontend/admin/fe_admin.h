/*
 * fe_admin: the frontend's admin listener (--admin-listen; off unless
 * given, and never the public port): the sb_admin port's /metrics,
 * /healthz and /readyz, with the frontend's readiness (PostgreSQL reachable,
 * the broker answering, not draining) and the gauges read at scrape time
 * (connections, streams, the pool, the request log writer, the broker).
 */
#ifndef FE_ADMIN_H
#define FE_ADMIN_H

#include <stddef.h>

struct fe_server;
typedef struct fe_admin fe_admin_t;

fe_admin_t *fe_admin_new(struct fe_server *srv, const char *host, int port, char *err, size_t errlen);
void fe_admin_free(fe_admin_t **a);

#endif

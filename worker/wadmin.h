/*
 * wadmin: the worker's admin port (--admin-listen; off unless given): the
 * sb_admin port on the worker's loop, with its readiness
 * (sb_worker_not_ready) and the gauges read at scrape time (jobs in flight,
 * the broker session, draining).
 */
#ifndef SB_WADMIN_H
#define SB_WADMIN_H

#include <event2/event.h>
#include <stddef.h>

#include "worker.h"

typedef struct sb_wadmin sb_wadmin_t;

sb_wadmin_t *sb_wadmin_new(struct event_base *base, sb_worker_t *w, const char *host, int port, char *err,
                           size_t errlen);
void sb_wadmin_free(sb_wadmin_t **a);

#endif

/*
 * sb_zsock_ev: drives a czmq socket from a libevent loop. ZMQ_FD is
 * edge-triggered and only says "look at ZMQ_EVENTS"; this module does the
 * looking, hands each received message to a callback, and must be poked after
 * every send on the socket (a send can consume the readiness notice).
 */
#ifndef SB_ZSOCK_EV_H
#define SB_ZSOCK_EV_H

#include <czmq.h>
#include <event2/event.h>

#include "sb_wire.h"

typedef struct sb_zsock_ev sb_zsock_ev_t;

/* Called once per received message; the callback takes ownership of *msg
 * (it may leave it, then it is destroyed after the call). */
typedef void (*sb_zsock_ev_fn)(sb_wire_msg_t **msg, void *arg);

/* sock is borrowed and must outlive the watcher. is_router: frames carry a
 * routing id. Returns NULL on failure. */
sb_zsock_ev_t *sb_zsock_ev_new(struct event_base *base, zsock_t *sock, bool is_router, sb_zsock_ev_fn fn, void *arg);
void sb_zsock_ev_poke(sb_zsock_ev_t *w);
void sb_zsock_ev_destroy(sb_zsock_ev_t **w);

#endif

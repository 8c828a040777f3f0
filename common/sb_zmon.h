/*
 * sb_zmon: tells a libevent loop when a czmq socket's TCP connection comes
 * up or goes down (zmq_socket_monitor, read without blocking). A peer that
 * dies closes its connection: this is how a frontend or a worker learns a
 * broker is gone at once, rather than after the heartbeat liveness period
 * (which still covers a peer that vanishes without closing anything).
 */
#ifndef SB_ZMON_H
#define SB_ZMON_H

#include <czmq.h>
#include <event2/event.h>
#include <stdbool.h>

typedef struct sb_zmon sb_zmon_t;

/* up: true once a connection is ready for messages (ZMQ_EVENT_HANDSHAKE_SUCCEEDED), false when it
 * closes (ZMQ_EVENT_DISCONNECTED). */
typedef void (*sb_zmon_fn)(bool up, void *arg);

/* Watches sock (borrowed; it must outlive the monitor). Call before
 * connecting the socket so no event is missed. NULL on failure. */
sb_zmon_t *sb_zmon_new(struct event_base *base, zsock_t *sock, sb_zmon_fn fn, void *arg);
/* Stops watching; fn is not called again. NULL-safe. */
void sb_zmon_destroy(sb_zmon_t **m);

#endif

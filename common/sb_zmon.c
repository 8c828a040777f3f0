/* sb_zmon: connection events of a zmq socket, on a libevent loop. */
#include "sb_zmon.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zmq.h>

#include "sb_alloc.h"
#include "sb_log.h"

struct sb_zmon {
    zsock_t *sock; /* borrowed: the socket watched */
    zsock_t *pair; /* owned: receives the monitor's events */
    struct event *ev;
    sb_zmon_fn fn;
    void *arg;
};

/* Monitor events, as libzmq 4.3 sends them: frame 1 is 6 bytes (uint16
 * event, uint32 value, native byte order), frame 2 the endpoint. */
static void sb_zmon_on_fd(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sb_zmon_t *m = arg;
    void *raw = zsock_resolve(m->pair);
    for (int i = 0; i < 64; i++) {
        zmq_msg_t part;
        zmq_msg_init(&part);
        if (zmq_msg_recv(&part, raw, ZMQ_DONTWAIT) < 0) {
            zmq_msg_close(&part);
            return;
        }
        uint16_t event = 0;
        if (zmq_msg_size(&part) >= sizeof event)
            memcpy(&event, zmq_msg_data(&part), sizeof event);
        bool more = zmq_msg_more(&part);
        zmq_msg_close(&part);
        while (more) { /* the endpoint frame: not needed */
            zmq_msg_init(&part);
            if (zmq_msg_recv(&part, raw, ZMQ_DONTWAIT) < 0) {
                zmq_msg_close(&part);
                break;
            }
            more = zmq_msg_more(&part);
            zmq_msg_close(&part);
        }
        if (event == ZMQ_EVENT_HANDSHAKE_SUCCEEDED)
            m->fn(true, m->arg);
        else if (event == ZMQ_EVENT_DISCONNECTED)
            m->fn(false, m->arg);
    }
    event_active(m->ev, EV_READ, 0); /* more waiting: after other events */
}

sb_zmon_t *sb_zmon_new(struct event_base *base, zsock_t *sock, sb_zmon_fn fn, void *arg)
{
    static atomic_uint seq;
    char ep[64];
    snprintf(ep, sizeof ep, "inproc://sb-zmon-%u", atomic_fetch_add(&seq, 1));
    if (zmq_socket_monitor(zsock_resolve(sock), ep, ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED) < 0) {
        sb_warn("zmq_socket_monitor: %s", zmq_strerror(zmq_errno()));
        return NULL;
    }
    sb_zmon_t *m = sb_xcalloc(1, sizeof *m);
    m->sock = sock;
    m->fn = fn;
    m->arg = arg;
    m->pair = zsock_new(ZMQ_PAIR);
    if (!m->pair || zsock_connect(m->pair, "%s", ep) < 0)
        goto fail;
    zsock_set_linger(m->pair, 0);
    m->ev = event_new(base, zsock_fd(m->pair), EV_READ | EV_PERSIST, sb_zmon_on_fd, m);
    if (!m->ev || event_add(m->ev, NULL) < 0)
        goto fail;
    event_active(m->ev, EV_READ, 0);
    return m;
fail:
    sb_zmon_destroy(&m);
    return NULL;
}

void sb_zmon_destroy(sb_zmon_t **pm)
{
    if (!pm || !*pm)
        return;
    sb_zmon_t *m = *pm;
    if (m->ev)
        event_free(m->ev);
    (void)zmq_socket_monitor(zsock_resolve(m->sock), NULL, 0);
    zsock_destroy(&m->pair);
    free(m);
    *pm = NULL;
}

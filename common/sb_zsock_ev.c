/* sb_zsock_ev: edge-triggered ZMQ_FD handling for libevent. */
#include "sb_zsock_ev.h"

#include <errno.h>

#include "sb_alloc.h"
#include "sb_log.h"

/* Messages handled per wake-up before yielding to other events. */
#define SB_ZSOCK_EV_BUDGET 256

struct sb_zsock_ev {
    zsock_t *sock;
    bool is_router;
    struct event *ev;
    sb_zsock_ev_fn fn;
    void *arg;
};

static void sb_zsock_ev_on_fd(evutil_socket_t fd, short what, void *arg)
{
    sb_zsock_ev_t *w = arg;
    for (int i = 0; i < SB_ZSOCK_EV_BUDGET; i++) {
        sb_wire_msg_t *msg = NULL;
        int rc = sb_wire_recv(w->sock, w->is_router, &msg);
        if (rc == -EAGAIN)
            return;
        if (rc == -EPROTO) {
            sb_warn("dropped a malformed protocol message");
            continue;
        }
        w->fn(&msg, w->arg);
        sb_wire_msg_destroy(&msg);
    }
    /* Budget spent with messages still waiting: come back after other events. */
    event_active(w->ev, EV_READ, 0);
}

sb_zsock_ev_t *sb_zsock_ev_new(struct event_base *base, zsock_t *sock, bool is_router, sb_zsock_ev_fn fn, void *arg)
{
    sb_zsock_ev_t *w = sb_xcalloc(1, sizeof *w);
    w->sock = sock;
    w->is_router = is_router;
    w->fn = fn;
    w->arg = arg;
    w->ev = event_new(base, zsock_fd(sock), EV_READ | EV_PERSIST, sb_zsock_ev_on_fd, w);
    if (!w->ev || event_add(w->ev, NULL) < 0) {
        if (w->ev)
            event_free(w->ev);
        free(w);
        return NULL;
    }
    /* Messages may already be queued before the fd ever signals. */
    event_active(w->ev, EV_READ, 0);
    return w;
}

void sb_zsock_ev_poke(sb_zsock_ev_t *w)
{
    if (w)
        event_active(w->ev, EV_READ, 0);
}

void sb_zsock_ev_destroy(sb_zsock_ev_t **w)
{
    if (!w || !*w)
        return;
    event_free((*w)->ev);
    free(*w);
    *w = NULL;
}

/*
 * fe_broker_link: one broker connection.
 *
 * ZMQ_IMMEDIATE: a message is queued only on a connection that is up, so a
 * send to a broker that is down fails at once (the caller tries another)
 * instead of waiting in the pipe for a broker that may come back as a new
 * instance, or as the same one after its jobs were resubmitted elsewhere.
 * The connection monitor (sb_zmon) says when the connection closes: the
 * broker's routing id for us dies with it (a reconnection is a new peer to
 * the broker, which then cannot deliver our jobs' events), so every job on
 * the link is lost at that moment, not 2.5 s later.
 */
#include "fe_broker_link.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_log.h"
#include "sb_time.h"
#include "sb_zmon.h"
#include "sb_zsock_ev.h"

static void fe_blink_down(fe_blink_t *l, const char *why)
{
    if (!l->alive)
        return;
    l->alive = false;
    l->ops->on_down(l, why, l->arg);
}

static void fe_blink_on_conn(bool up, void *arg)
{
    fe_blink_t *l = arg;
    if (up) { /* say hello at once: the link is usable from the broker's answer on */
        sb_debug("broker at %s: connected", l->endpoint);
        (void)fe_blink_send(l, SB_CMD_HEARTBEAT, NULL, NULL, 0);
    } else
        fe_blink_down(l, "its connection closed");
}

static void fe_blink_on_msg(sb_wire_msg_t **pmsg, void *arg)
{
    fe_blink_t *l = arg;
    const sb_wire_msg_t *msg = *pmsg;
    l->last_heard_ms = sb_mono_ms();
    if (!l->alive) {
        sb_info("broker reachable at %s", l->endpoint);
        l->alive = true;
    }
    const char *epoch = sb_wire_header_str(msg, "epoch");
    if (epoch && *epoch && strlen(epoch) <= SB_EPOCH_MAX && strcmp(l->epoch, epoch) != 0) {
        char old[SB_EPOCH_MAX + 1];
        memcpy(old, l->epoch, sizeof old);
        snprintf(l->epoch, sizeof l->epoch, "%s", epoch);
        if (!old[0])
            sb_info("broker at %s: epoch %s", l->endpoint, epoch);
        else
            l->ops->on_epoch(l, old, l->arg);
    }
    l->ops->on_msg(l, msg, l->arg);
}

static void fe_blink_close(fe_blink_t *l)
{
    sb_zmon_destroy(&l->mon);
    sb_zsock_ev_destroy(&l->watch);
    zsock_destroy(&l->sock);
}

static int fe_blink_open(fe_blink_t *l, struct event_base *base)
{
    l->sock = zsock_new(ZMQ_DEALER);
    if (!l->sock)
        return -ENOMEM;
    zsock_set_sndtimeo(l->sock, 0);
    zsock_set_rcvtimeo(l->sock, 0);
    zsock_set_linger(l->sock, 0);
    zsock_set_sndhwm(l->sock, 100000);
    zsock_set_rcvhwm(l->sock, 100000);
    zsock_set_immediate(l->sock, 1);
    zsock_set_ipv6(l->sock, 1);
    l->mon = sb_zmon_new(base, l->sock, fe_blink_on_conn, l);
    if (zsock_connect(l->sock, "%s", l->endpoint) < 0) {
        sb_error("cannot connect to broker endpoint %s", l->endpoint);
        fe_blink_close(l);
        return -EINVAL;
    }
    l->watch = sb_zsock_ev_new(base, l->sock, false, fe_blink_on_msg, l);
    if (!l->watch) {
        fe_blink_close(l);
        return -ENOMEM;
    }
    return 0;
}

fe_blink_t *fe_blink_new(struct event_base *base, const char *endpoint, const fe_blink_ops_t *ops, void *arg)
{
    fe_blink_t *l = sb_xcalloc(1, sizeof *l);
    l->endpoint = sb_xstrdup(endpoint);
    l->ops = ops;
    l->arg = arg;
    l->last_heard_ms = sb_mono_ms();
    if (fe_blink_open(l, base) < 0) {
        fe_blink_destroy(&l);
        return NULL;
    }
    /* Say hello at once (it fails until connected; the next beat retries). */
    (void)fe_blink_send(l, SB_CMD_HEARTBEAT, NULL, NULL, 0);
    return l;
}

void fe_blink_destroy(fe_blink_t **pl)
{
    if (!pl || !*pl)
        return;
    fe_blink_close(*pl);
    free((*pl)->endpoint);
    free(*pl);
    *pl = NULL;
}

bool fe_blink_usable(const fe_blink_t *l)
{
    return l->sock && l->alive && !l->leaving && l->epoch[0] &&
           sb_mono_ms() - l->last_heard_ms <= (int64_t)SB_HEARTBEAT_INTERVAL_MS * SB_HEARTBEAT_LIVENESS;
}

int fe_blink_send(fe_blink_t *l, int cmd, const json_t *hdr, const void *body, size_t len)
{
    if (!l->sock)
        return -ENOTCONN;
    int rc = sb_wire_send(l->sock, NULL, cmd, hdr, body, len);
    sb_zsock_ev_poke(l->watch);
    return rc;
}

void fe_blink_beat(fe_blink_t *l, struct event_base *base)
{
    int64_t silent = sb_mono_ms() - l->last_heard_ms;
    if (silent > (int64_t)SB_HEARTBEAT_INTERVAL_MS * SB_HEARTBEAT_LIVENESS) {
        if (l->alive)
            sb_warn("broker at %s silent for %lld ms: reconnecting", l->endpoint, (long long)silent);
        fe_blink_down(l, "it was silent too long");
        /* A fresh socket drops whatever was queued for the silent broker. */
        fe_blink_close(l);
        if (fe_blink_open(l, base) < 0)
            sb_error("cannot recreate the socket for broker %s", l->endpoint);
        l->last_heard_ms = sb_mono_ms();
    }
    if (l->sock && fe_blink_send(l, SB_CMD_HEARTBEAT, NULL, NULL, 0) < 0)
        sb_debug("heartbeat to %s not sent", l->endpoint);
}

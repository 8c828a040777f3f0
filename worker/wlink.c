/*
 * wlink: the worker's session with one broker: its DEALER, the connection
 * monitor, READY and what is counted per READY (seq, JOBs received, the
 * window last told). What a message means is worker.c's; a job's events go
 * back on its link (wjob.c).
 */
#include <errno.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_log.h"
#include "sb_time.h"
#include "sb_zmon.h"
#include "worker_internal.h"

/* Messages queued per direction before a send would fail (zmq's 1000 is
 * small once streams send one event per token). */
#define SB_WLINK_HWM 100000

static void sb_wlink_on_msg(sb_wire_msg_t **msg, void *arg)
{
    sb_wlink_t *l = arg;
    l->last_heard_ms = sb_mono_ms();
    l->on_msg(l, *msg);
}

static void sb_wlink_on_conn(bool up, void *arg)
{
    sb_wlink_t *l = arg;
    l->on_conn(l, up);
}

static void sb_wlink_close(sb_wlink_t *l, int linger_ms)
{
    sb_zmon_destroy(&l->mon);
    sb_zsock_ev_destroy(&l->watch);
    if (l->sock)
        zsock_set_linger(l->sock, linger_ms);
    zsock_destroy(&l->sock);
}

static int sb_wlink_open(sb_wlink_t *l)
{
    l->sock = zsock_new(ZMQ_DEALER);
    if (!l->sock)
        goto fail;
    /* Never block the loop on a send: a full pipe fails with EAGAIN. */
    zsock_set_sndtimeo(l->sock, 0);
    zsock_set_sndhwm(l->sock, SB_WLINK_HWM);
    zsock_set_rcvhwm(l->sock, SB_WLINK_HWM);
    zsock_set_linger(l->sock, 0);
    zsock_set_ipv6(l->sock, 1);
    l->mon = sb_zmon_new(l->w->base, l->sock, sb_wlink_on_conn, l);
    if (zsock_connect(l->sock, "%s", l->endpoint) < 0) {
        sb_error("cannot connect to broker endpoint %s", l->endpoint);
        goto fail;
    }
    l->watch = sb_zsock_ev_new(l->w->base, l->sock, false, sb_wlink_on_msg, l);
    if (!l->watch)
        goto fail;
    l->last_heard_ms = sb_mono_ms();
    return 0;
fail:
    sb_wlink_close(l, 0);
    return -EIO;
}

sb_wlink_t *sb_wlink_new(sb_worker_t *w, const char *endpoint, sb_wlink_msg_fn on_msg, sb_wlink_conn_fn on_conn)
{
    sb_wlink_t *l = sb_xcalloc(1, sizeof *l);
    l->w = w;
    l->endpoint = sb_xstrdup(endpoint);
    l->window_sent = -1;
    l->on_msg = on_msg;
    l->on_conn = on_conn;
    if (sb_wlink_open(l) < 0) {
        sb_wlink_destroy(&l, 0);
        return NULL;
    }
    return l;
}

void sb_wlink_destroy(sb_wlink_t **pl, int linger_ms)
{
    if (!pl || !*pl)
        return;
    sb_wlink_close(*pl, linger_ms);
    free((*pl)->endpoint);
    free(*pl);
    *pl = NULL;
}

int sb_wlink_reopen(sb_wlink_t *l)
{
    sb_wlink_close(l, 0);
    l->epoch[0] = '\0'; /* whichever broker answers the fresh socket holds none of our jobs */
    return sb_wlink_open(l);
}

int sb_wlink_send(sb_wlink_t *l, int cmd, const json_t *header, const void *body, size_t len)
{
    if (!l->sock)
        return -ENOTCONN;
    int rc = sb_wire_send(l->sock, NULL, cmd, header, body, len);
    sb_zsock_ev_poke(l->watch);
    return rc;
}

void sb_wlink_send_ready(sb_wlink_t *l)
{
    sb_worker_t *w = l->w;
    l->ready_seq++;
    l->got = 0;
    l->window_sent = -1;
    json_t *hdr = json_pack("{s:O, s:i, s:s, s:I}", "models", w->models, "credits", w->credits, "name", w->name, "seq",
                            (json_int_t)l->ready_seq);
    int rc = sb_wlink_send(l, SB_CMD_READY, hdr, NULL, 0);
    if (rc < 0)
        sb_warn("could not send READY to %s: %s", l->endpoint, strerror(-rc));
    json_decref(hdr);
    sb_worker_credit_changed(w);
}

bool sb_wlink_connected(const sb_wlink_t *l)
{
    return l->epoch[0] && sb_mono_ms() - l->last_heard_ms < (int64_t)l->w->heartbeat_ms * l->w->liveness;
}

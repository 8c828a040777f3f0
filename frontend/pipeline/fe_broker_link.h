/*
 * fe_broker_link: the frontend's connection to one broker (a DEALER, its
 * watch, its connection monitor, liveness and epoch). fe_broker.c keeps one
 * per broker and decides what a link's news means for the jobs; a link
 * reports through the ops it is given and never calls up.
 */
#ifndef FE_BROKER_LINK_H
#define FE_BROKER_LINK_H

#include <czmq.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sb_protocol.h"
#include "sb_wire.h"

typedef struct fe_blink fe_blink_t;

typedef struct fe_blink_ops {
    /* A message arrived (after liveness and the epoch are noted). */
    void (*on_msg)(fe_blink_t *l, const sb_wire_msg_t *msg, void *arg);
    /* The link stopped being usable (its connection closed, or it was silent
     * for the liveness period): every job on it is lost. */
    void (*on_down)(fe_blink_t *l, const char *why, void *arg);
    /* The broker's epoch changed from a known one: it restarted. */
    void (*on_epoch)(fe_blink_t *l, const char *old_epoch, void *arg);
} fe_blink_ops_t;

struct fe_blink {
    char *endpoint;
    zsock_t *sock;
    struct sb_zsock_ev *watch;
    struct sb_zmon *mon;
    int64_t last_heard_ms;        /* monotonic */
    bool alive;                   /* heard from since it was last down */
    char epoch[SB_EPOCH_MAX + 1]; /* the instance heard from last; "": none yet */
    size_t njobs;                 /* outstanding jobs submitted through it */
    bool leaving;                 /* no longer listed: gets no new job, closed once its jobs are done */
    const fe_blink_ops_t *ops;
    void *arg;
};

fe_blink_t *fe_blink_new(struct event_base *base, const char *endpoint, const fe_blink_ops_t *ops, void *arg);
void fe_blink_destroy(fe_blink_t **l);

/* Usable for a new job: heard from within the liveness period, connected,
 * and its epoch known. */
bool fe_blink_usable(const fe_blink_t *l);

/* Sends one message; 0 or a negative errno (-EAGAIN: not connected, or the
 * pipe is full). */
int fe_blink_send(fe_blink_t *l, int cmd, const json_t *hdr, const void *body, size_t len);

/* The heartbeat tick: sends a HEARTBEAT; a link silent for the liveness
 * period goes down (on_down) and gets a fresh socket. */
void fe_blink_beat(fe_blink_t *l, struct event_base *base);

#endif

/*
 * sb_wire: sending and receiving protocol messages (sb_protocol.h) on czmq
 * sockets. Receiving never asserts on content: a malformed message is
 * dropped and reported as -EPROTO.
 */
#ifndef SB_WIRE_H
#define SB_WIRE_H

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>

typedef struct {
    zframe_t *routing_id; /* owned; set only when received on a ROUTER */
    int cmd;              /* SB_CMD_* */
    json_t *header;       /* owned; NULL when the message had no header frame */
    zframe_t *body;       /* owned; NULL when the message had no body frame */
} sb_wire_msg_t;

void sb_wire_msg_destroy(sb_wire_msg_t **msg);

/* Frames a protocol message may have: [routing id] cmd [header [body]]. */
#define SB_WIRE_MAX_FRAMES 4

/* Reads the frames of the next message on a libzmq socket handle into
 * f[0..max) (a longer message is read to its end and dropped). Returns the
 * number of frames (each to be closed by the caller with zmq_msg_close),
 * -EAGAIN when no message waits, -EPROTO when one had more than max frames.
 * Only the first frame is read with ZMQ_DONTWAIT: the rest of a message
 * arrives with it. There is no ZMQ_EVENTS check first: a read that finds
 * nothing does the same work (it processes the socket's pending commands,
 * which re-arms its edge-triggered ZMQ_FD), so a check would double it for
 * every message. */
int sb_wire_recv_frames(void *handle, zmq_msg_t *f, int max) __attribute__((warn_unused_result));

/* Receives one message without blocking. Returns 0 with *out set, -EAGAIN when
 * nothing is waiting, -EPROTO when a malformed message was read and dropped. */
int sb_wire_recv(zsock_t *sock, bool is_router, sb_wire_msg_t **out) __attribute__((warn_unused_result));

/* Sends [routing_id] cmd [header] [body]. routing_id (borrowed) is for ROUTER
 * sockets, NULL on DEALER. header is borrowed and may be NULL (then no body
 * either). body bytes are copied. Returns 0 or -errno (e.g. -EHOSTUNREACH when
 * a ROUTER_MANDATORY peer is gone, -EAGAIN when the pipe is full). */
int sb_wire_send(zsock_t *sock, zframe_t *routing_id, int cmd, const json_t *header, const void *body, size_t body_len)
    __attribute__((warn_unused_result));

/* Header helpers. */
const char *sb_wire_header_str(const sb_wire_msg_t *msg, const char *key);
long long sb_wire_header_int(const sb_wire_msg_t *msg, const char *key, long long dflt);
bool sb_wire_header_bool(const sb_wire_msg_t *msg, const char *key);

#endif

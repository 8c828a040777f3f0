/*
 * fuzz_wire: libFuzzer harness for sb_wire_recv, which takes apart every
 * ZeroMQ message a broker, frontend or worker receives: [routing id]
 * command [header (msgpack map)] [body]. Peers are the gateway's own
 * processes, but a frame that arrives malformed (a bug, a version skew, a
 * stray client on the port) must be dropped as -EPROTO, never trusted.
 *
 * Input: byte 0 bit 0 says whether to receive as a ROUTER (the first frame
 * is then the routing id); the rest is a sequence of frames, each a length
 * byte (255: the rest of the input) and that many bytes. The frames are sent
 * as one message over an inproc PAIR socket and received with sb_wire_recv.
 * Checked besides "no crash, no leak, no UB": the result is 0 with a
 * message whose header (if any) is an object, or -EPROTO with none; the
 * header helpers answer on it; and a message received whole is sent back
 * with sb_wire_send and received again unchanged.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_wire.h"

static zsock_t *fuzz_wire_in, *fuzz_wire_out;

/* Receives one message, waiting up to 5 s for inproc to deliver it. Polls in
 * short steps: libFuzzer's SIGALRM (its -timeout watchdog) interrupts a
 * poll, or the receive itself (sb_wire_recv's -EAGAIN, as a loop sees it:
 * the message stays queued), now and then; that is a retry, not a missing
 * or malformed message (a 10-minute run under load hit it once). */
static int fuzz_wire_recv(bool router, sb_wire_msg_t **msg)
{
    int rc = -EAGAIN;
    for (int i = 0; i < 500 && rc == -EAGAIN; i++) {
        if (!(zsock_events(fuzz_wire_in) & ZMQ_POLLIN)) {
            zmq_pollitem_t item = {.socket = zsock_resolve(fuzz_wire_in), .events = ZMQ_POLLIN};
            (void)zmq_poll(&item, 1, 10);
            continue;
        }
        rc = sb_wire_recv(fuzz_wire_in, router, msg);
    }
    FUZZ_REQUIRE(rc != -EAGAIN);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!fuzz_wire_in) {
        zsys_set_logstream(NULL); /* no czmq chatter on stdout */
        zsys_handler_set(NULL);
        fuzz_wire_in = zsock_new_pair("@inproc://fuzz-wire");
        fuzz_wire_out = zsock_new_pair(">inproc://fuzz-wire");
        FUZZ_REQUIRE(fuzz_wire_in && fuzz_wire_out);
    }
    bool router = data[0] & 1;
    zmsg_t *zmsg = zmsg_new();
    for (size_t i = 1; i < size;) {
        size_t n = data[i++];
        if (n == 255 || n > size - i)
            n = size - i;
        zmsg_addmem(zmsg, data + i, n);
        i += n;
    }
    if (zmsg_size(zmsg) == 0) {
        zmsg_destroy(&zmsg);
        return 0;
    }
    FUZZ_REQUIRE(zmsg_send(&zmsg, fuzz_wire_out) == 0);

    sb_wire_msg_t *msg = (sb_wire_msg_t *)1;
    int rc = fuzz_wire_recv(router, &msg);
    if (rc != 0) {
        FUZZ_REQUIRE(rc == -EPROTO && msg == NULL);
        return 0;
    }
    FUZZ_REQUIRE(msg != NULL);
    FUZZ_REQUIRE(!msg->header || json_is_object(msg->header));
    FUZZ_REQUIRE(!msg->body || msg->header); /* a body only after a header */
    FUZZ_REQUIRE(!router || msg->routing_id);
    (void)sb_wire_header_str(msg, "job_id");
    (void)sb_wire_header_int(msg, "deadline_ms", -1);
    (void)sb_wire_header_bool(msg, "stream");

    /* Send it back as the peer would and receive it again. */
    rc = sb_wire_send(fuzz_wire_out, msg->routing_id, msg->cmd, msg->header, msg->body ? zframe_data(msg->body) : NULL,
                      msg->body ? zframe_size(msg->body) : 0);
    FUZZ_REQUIRE(rc == 0);
    sb_wire_msg_t *again = NULL;
    rc = fuzz_wire_recv(router, &again);
    FUZZ_REQUIRE(rc == 0 && again);
    FUZZ_REQUIRE(again->cmd == msg->cmd);
    FUZZ_REQUIRE(json_equal(again->header, msg->header) || (!again->header && !msg->header));
    if (msg->header) /* sb_wire_send sends a body only with a header */
        FUZZ_REQUIRE((again->body != NULL) == (msg->body != NULL) && (!msg->body || zframe_eq(again->body, msg->body)));
    if (router)
        FUZZ_REQUIRE(zframe_eq(again->routing_id, msg->routing_id));
    sb_wire_msg_destroy(&again);
    sb_wire_msg_destroy(&msg);
    FUZZ_REQUIRE(msg == NULL);
    return 0;
}

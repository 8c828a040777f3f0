/* Unit tests for sb_wire over a real inproc DEALER/ROUTER pair. */
#include <errno.h>

#include "sb_protocol.h"
#include "sb_test.h"
#include "sb_wire.h"

int main(void)
{
    zsock_t *router = zsock_new_router("inproc://wire-test");
    zsock_t *dealer = zsock_new_dealer("inproc://wire-test");
    CHECK(router && dealer);
    zsock_set_router_mandatory(router, 1);

    json_t *hdr = json_pack("{s:s, s:s, s:I}", "job_id", "job_1", "model", "m", "deadline_ms", (json_int_t)123);
    CHECK_INT(sb_wire_send(dealer, NULL, SB_CMD_SUBMIT, hdr, "body", 4), 0);
    zsock_set_rcvtimeo(router, 1000);
    zpoller_t *p = zpoller_new(router, NULL);
    CHECK(zpoller_wait(p, 1000) == router);
    sb_wire_msg_t *msg = NULL;
    CHECK_INT(sb_wire_recv(router, true, &msg), 0);
    CHECK(msg && msg->routing_id);
    CHECK_INT(msg->cmd, SB_CMD_SUBMIT);
    CHECK_STR(sb_wire_header_str(msg, "job_id"), "job_1");
    CHECK_INT(sb_wire_header_int(msg, "deadline_ms", 0), 123);
    CHECK(msg->body && zframe_size(msg->body) == 4 && memcmp(zframe_data(msg->body), "body", 4) == 0);

    /* Reply through the routing id; then to an unknown id fails loudly. */
    CHECK_INT(sb_wire_send(router, msg->routing_id, SB_CMD_HEARTBEAT, NULL, NULL, 0), 0);
    zframe_t *ghost = zframe_new("nobody", 6);
    CHECK_INT(sb_wire_send(router, ghost, SB_CMD_HEARTBEAT, NULL, NULL, 0), -EHOSTUNREACH);
    zframe_destroy(&ghost);
    sb_wire_msg_destroy(&msg);

    zpoller_t *pd = zpoller_new(dealer, NULL);
    CHECK(zpoller_wait(pd, 1000) == dealer);
    CHECK_INT(sb_wire_recv(dealer, false, &msg), 0);
    CHECK(msg && msg->cmd == SB_CMD_HEARTBEAT && msg->header == NULL);
    sb_wire_msg_destroy(&msg);

    /* A malformed message (two-byte command frame) is dropped, not fatal. */
    zstr_send(dealer, "xx");
    CHECK(zpoller_wait(p, 1000) == router);
    CHECK_INT(sb_wire_recv(router, true, &msg), -EPROTO);
    CHECK(msg == NULL);
    CHECK_INT(sb_wire_recv(router, true, &msg), -EAGAIN);

    json_decref(hdr);
    zpoller_destroy(&p);
    zpoller_destroy(&pd);
    zsock_destroy(&dealer);
    zsock_destroy(&router);
    return sb_test_finish("wire");
}

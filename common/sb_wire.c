/* sb_wire: protocol framing over czmq zmsg. */
#include "sb_wire.h"

#include <errno.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_mpjson.h"
#include "sb_protocol.h"

void sb_wire_msg_destroy(sb_wire_msg_t **msg)
{
    if (!msg || !*msg)
        return;
    zframe_destroy(&(*msg)->routing_id);
    zframe_destroy(&(*msg)->body);
    json_decref((*msg)->header);
    free(*msg);
    *msg = NULL;
}

int sb_wire_recv(zsock_t *sock, bool is_router, sb_wire_msg_t **out)
{
    *out = NULL;
    if (!(zsock_events(sock) & ZMQ_POLLIN))
        return -EAGAIN;
    zmsg_t *zmsg = zmsg_recv(sock);
    if (!zmsg)
        return -EAGAIN;
    sb_wire_msg_t *msg = sb_xcalloc(1, sizeof *msg);
    if (is_router) {
        msg->routing_id = zmsg_pop(zmsg);
        if (!msg->routing_id)
            goto malformed;
    }
    zframe_t *cmd = zmsg_pop(zmsg);
    if (!cmd || zframe_size(cmd) != 1) {
        zframe_destroy(&cmd);
        goto malformed;
    }
    msg->cmd = zframe_data(cmd)[0];
    zframe_destroy(&cmd);
    zframe_t *hdr = zmsg_pop(zmsg);
    if (hdr) {
        json_t *h = NULL;
        int rc = zframe_size(hdr) ? sb_mpjson_decode(zframe_data(hdr), zframe_size(hdr), &h) : -EINVAL;
        zframe_destroy(&hdr);
        if (rc < 0 || !json_is_object(h)) {
            json_decref(h);
            goto malformed;
        }
        msg->header = h;
        msg->body = zmsg_pop(zmsg);
    }
    if (zmsg_size(zmsg) != 0)
        goto malformed;
    zmsg_destroy(&zmsg);
    *out = msg;
    return 0;
malformed:
    zmsg_destroy(&zmsg);
    sb_wire_msg_destroy(&msg);
    return -EPROTO;
}

int sb_wire_send(zsock_t *sock, zframe_t *routing_id, int cmd, const json_t *header, const void *body, size_t body_len)
{
    zmsg_t *zmsg = zmsg_new();
    if (routing_id)
        zmsg_addmem(zmsg, zframe_data(routing_id), zframe_size(routing_id));
    unsigned char c = (unsigned char)cmd;
    zmsg_addmem(zmsg, &c, 1);
    if (header) {
        char *buf;
        size_t len;
        if (sb_mpjson_encode(header, &buf, &len) < 0) {
            zmsg_destroy(&zmsg);
            return -EINVAL;
        }
        zmsg_addmem(zmsg, buf, len);
        free(buf);
        if (body)
            zmsg_addmem(zmsg, body, body_len);
    }
    if (zmsg_send(&zmsg, sock) != 0) {
        int err = errno ? errno : EIO;
        zmsg_destroy(&zmsg);
        return -err;
    }
    return 0;
}

const char *sb_wire_header_str(const sb_wire_msg_t *msg, const char *key)
{
    return json_string_value(json_object_get(msg->header, key));
}

long long sb_wire_header_int(const sb_wire_msg_t *msg, const char *key, long long dflt)
{
    json_t *v = json_object_get(msg->header, key);
    return json_is_integer(v) ? (long long)json_integer_value(v) : dflt;
}

bool sb_wire_header_bool(const sb_wire_msg_t *msg, const char *key)
{
    return json_is_true(json_object_get(msg->header, key));
}

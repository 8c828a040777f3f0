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

int sb_wire_recv_frames(void *handle, zmq_msg_t *f, int max)
{
    zmq_msg_init(&f[0]);
    if (zmq_msg_recv(&f[0], handle, ZMQ_DONTWAIT) < 0) {
        zmq_msg_close(&f[0]);
        return -EAGAIN;
    }
    int n = 1;
    bool more = zmq_msg_more(&f[0]), too_long = false;
    while (more) {
        zmq_msg_t extra;
        zmq_msg_t *m = n < max ? &f[n] : &extra;
        zmq_msg_init(m);
        if (zmq_msg_recv(m, handle, 0) < 0) {
            zmq_msg_close(m);
            break;
        }
        more = zmq_msg_more(m);
        if (m == &extra) {
            too_long = true;
            zmq_msg_close(m);
        } else {
            n++;
        }
    }
    if (too_long) {
        for (int i = 0; i < n; i++)
            zmq_msg_close(&f[i]);
        return -EPROTO;
    }
    return n;
}

int sb_wire_recv(zsock_t *sock, bool is_router, sb_wire_msg_t **out)
{
    *out = NULL;
    zmq_msg_t f[SB_WIRE_MAX_FRAMES];
    int n = sb_wire_recv_frames(zsock_resolve(sock), f, SB_WIRE_MAX_FRAMES);
    if (n < 0)
        return n;
    sb_wire_msg_t *msg = sb_xcalloc(1, sizeof *msg);
    int i = 0, rc = -EPROTO;
    if (is_router)
        msg->routing_id = zframe_new(zmq_msg_data(&f[i]), zmq_msg_size(&f[i])), i++;
    if (i >= n || zmq_msg_size(&f[i]) != 1)
        goto done;
    msg->cmd = ((const unsigned char *)zmq_msg_data(&f[i]))[0];
    i++;
    if (i < n) {
        json_t *h = NULL;
        int hrc = zmq_msg_size(&f[i]) ? sb_mpjson_decode(zmq_msg_data(&f[i]), zmq_msg_size(&f[i]), &h) : -EINVAL;
        if (hrc < 0 || !json_is_object(h)) {
            json_decref(h);
            goto done;
        }
        msg->header = h;
        i++;
        if (i < n)
            msg->body = zframe_new(zmq_msg_data(&f[i]), zmq_msg_size(&f[i])), i++;
    }
    if (i == n)
        rc = 0;
done:
    for (int k = 0; k < n; k++)
        zmq_msg_close(&f[k]);
    if (rc < 0)
        sb_wire_msg_destroy(&msg);
    *out = msg;
    return rc;
}

/* Sends one frame; more: another follows. */
static int sb_wire_send_frame(void *handle, const void *data, size_t len, bool more)
{
    if (zmq_send(handle, data, len, more ? ZMQ_SNDMORE : 0) < 0)
        return -(zmq_errno() ? zmq_errno() : EIO);
    return 0;
}

int sb_wire_send(zsock_t *sock, zframe_t *routing_id, int cmd, const json_t *header, const void *body, size_t body_len)
{
    void *handle = zsock_resolve(sock);
    char *buf = NULL;
    size_t len = 0;
    if (header && sb_mpjson_encode(header, &buf, &len) < 0)
        return -EINVAL;
    unsigned char c = (unsigned char)cmd;
    bool has_body = header && body;
    /* Once the first frame is taken, ZeroMQ takes the rest of the message:
     * a multipart message is delivered whole or not at all. */
    int rc = 0;
    if (routing_id)
        rc = sb_wire_send_frame(handle, zframe_data(routing_id), zframe_size(routing_id), true);
    if (rc == 0)
        rc = sb_wire_send_frame(handle, &c, 1, header != NULL);
    if (rc == 0 && header)
        rc = sb_wire_send_frame(handle, buf, len, has_body);
    if (rc == 0 && has_body)
        rc = sb_wire_send_frame(handle, body, body_len, false);
    free(buf);
    return rc;
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

/*
 * sb_stream_http: the streaming benchmark's HTTP/1.x response decoder. Unlike
 * sb-load's parser, which only finds where a response ends, it hands the body
 * bytes on (de-chunked) as they arrive, so SSE events can be split and
 * timestamped at the read that completes them. Bytes come from the server
 * under test: nothing here asserts, a malformed response is SB_STREAM_ERROR.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sb_http_lines.h"
#include "sb_stream.h"

void sb_stream_resp_reset(struct sb_stream_resp *r)
{
    memset(r, 0, sizeof *r);
    r->state = SB_STREAM_RESP_STATUS;
    r->content_length = -1;
}

static int parse_status_line(struct sb_stream_resp *r, const char *line)
{
    bool http10;
    if (sb_http_status_line(line, &r->status, &http10) < 0)
        return -EINVAL;
    r->keep_alive = !http10;
    return 0;
}

static int parse_header(struct sb_stream_resp *r, const char *line)
{
    const char *v;
    if (sb_http_header_is(line, "Content-Length", &v)) {
        long long n;
        if (sb_http_content_length(v, &n) < 0)
            return -EINVAL;
        r->content_length = n;
    } else if (sb_http_header_is(line, "Transfer-Encoding", &v)) {
        if (sb_http_has_token(v, "chunked"))
            r->chunked = true;
    } else if (sb_http_header_is(line, "Connection", &v)) {
        if (sb_http_has_token(v, "close"))
            r->keep_alive = false;
        else if (sb_http_has_token(v, "keep-alive"))
            r->keep_alive = true;
    } else if (sb_http_header_is(line, "Content-Type", &v)) {
        r->event_stream = strncasecmp(v, "text/event-stream", 17) == 0;
    }
    return 0;
}

/* Headers are done: decide how the body is delimited. */
static void start_body(struct sb_stream_resp *r)
{
    if (r->status == 204 || r->status == 304) {
        r->state = SB_STREAM_RESP_COMPLETE;
    } else if (r->chunked) {
        r->state = SB_STREAM_RESP_CHUNK_SIZE;
    } else if (r->content_length >= 0) {
        r->left = (uint64_t)r->content_length;
        r->state = r->left == 0 ? SB_STREAM_RESP_COMPLETE : SB_STREAM_RESP_BODY;
    } else {
        r->state = SB_STREAM_RESP_UNTIL_EOF;
        r->keep_alive = false;
    }
}

/* Moves up to want bytes from in to body; returns how many. */
static uint64_t move_up_to(struct evbuffer *in, struct evbuffer *body, uint64_t want)
{
    size_t have = evbuffer_get_length(in);
    size_t n = want < have ? (size_t)want : have;
    if (n)
        evbuffer_remove_buffer(in, body, n);
    return n;
}

enum sb_stream_parse sb_stream_resp_feed(struct sb_stream_resp *r, struct evbuffer *in, struct evbuffer *body)
{
    bool err = false;
    char *line = NULL;
    for (;;) {
        switch (r->state) {
        case SB_STREAM_RESP_STATUS:
            if (!(line = sb_http_read_line(in, &err)))
                goto again;
            if (parse_status_line(r, line) < 0)
                goto fail;
            r->state = SB_STREAM_RESP_HEADERS;
            break;
        case SB_STREAM_RESP_HEADERS:
            if (!(line = sb_http_read_line(in, &err)))
                goto again;
            if (line[0] == '\0') {
                if (r->status < 200) /* interim response: the real one follows */
                    sb_stream_resp_reset(r);
                else
                    start_body(r);
            } else if (parse_header(r, line) < 0) {
                goto fail;
            }
            break;
        case SB_STREAM_RESP_BODY: {
            uint64_t n = move_up_to(in, body, r->left);
            r->left -= n;
            r->body_bytes += n;
            if (r->left)
                goto again;
            r->state = SB_STREAM_RESP_COMPLETE;
            break;
        }
        case SB_STREAM_RESP_CHUNK_SIZE: {
            if (!(line = sb_http_read_line(in, &err)))
                goto again;
            char *end = NULL;
            errno = 0;
            unsigned long long n = strtoull(line, &end, 16);
            if (errno || end == line || (*end && *end != ';' && *end != ' ' && *end != '\t') || n > (1ULL << 40))
                goto fail;
            r->left = n;
            r->state = n == 0 ? SB_STREAM_RESP_TRAILERS : SB_STREAM_RESP_CHUNK_DATA;
            break;
        }
        case SB_STREAM_RESP_CHUNK_DATA: {
            uint64_t n = move_up_to(in, body, r->left);
            r->left -= n;
            r->body_bytes += n;
            if (r->left)
                goto again;
            r->state = SB_STREAM_RESP_CHUNK_END;
            break;
        }
        case SB_STREAM_RESP_CHUNK_END: {
            unsigned char crlf[2];
            size_t have = evbuffer_get_length(in);
            if (have == 0)
                goto again;
            evbuffer_copyout(in, crlf, have < 2 ? have : 2);
            if (crlf[0] == '\n') {
                evbuffer_drain(in, 1);
            } else if (crlf[0] != '\r') {
                goto fail;
            } else if (have < 2) {
                goto again;
            } else if (crlf[1] == '\n') {
                evbuffer_drain(in, 2);
            } else {
                goto fail;
            }
            r->state = SB_STREAM_RESP_CHUNK_SIZE;
            break;
        }
        case SB_STREAM_RESP_TRAILERS:
            if (!(line = sb_http_read_line(in, &err)))
                goto again;
            if (line[0] == '\0')
                r->state = SB_STREAM_RESP_COMPLETE;
            break;
        case SB_STREAM_RESP_UNTIL_EOF:
            r->body_bytes += move_up_to(in, body, UINT64_MAX);
            return SB_STREAM_AGAIN;
        case SB_STREAM_RESP_COMPLETE:
            return SB_STREAM_DONE;
        }
        free(line);
        line = NULL;
    }
again:
    return err ? SB_STREAM_ERROR : SB_STREAM_AGAIN;
fail:
    free(line);
    return SB_STREAM_ERROR;
}

enum sb_stream_parse sb_stream_resp_eof(struct sb_stream_resp *r)
{
    if (r->state == SB_STREAM_RESP_UNTIL_EOF || r->state == SB_STREAM_RESP_COMPLETE) {
        r->state = SB_STREAM_RESP_COMPLETE;
        return SB_STREAM_DONE;
    }
    return SB_STREAM_ERROR;
}

/*
 * sb_load_http: the load tool's own HTTP/1.x response parser. It only needs
 * to find where each response ends on a keep-alive connection (status line,
 * headers, then a Content-Length body, a chunked body, or a body that runs to
 * connection close) and to read the status. Bytes come from the peer, so
 * nothing here asserts: malformed input is SB_LOAD_ERROR.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sb_http_lines.h"
#include "sb_load.h"

void sb_load_resp_reset(struct sb_load_resp *r, bool head_request)
{
    memset(r, 0, sizeof *r);
    r->state = SB_LOAD_RESP_STATUS;
    r->content_length = -1;
    r->head = head_request;
}

static int parse_status_line(struct sb_load_resp *r, const char *line)
{
    if (sb_http_status_line(line, &r->status, &r->http10) < 0)
        return -EINVAL;
    r->keep_alive = !r->http10;
    return 0;
}

static int parse_header(struct sb_load_resp *r, const char *line)
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
    }
    return 0;
}

/* Headers are done: decide how the body is delimited. */
static void start_body(struct sb_load_resp *r)
{
    bool no_body = r->head || r->status == 204 || r->status == 304 || (r->status >= 100 && r->status < 200);
    if (no_body)
        r->state = SB_LOAD_RESP_COMPLETE;
    else if (r->chunked)
        r->state = SB_LOAD_RESP_CHUNK_SIZE;
    else if (r->content_length >= 0)
        r->state = r->content_length == 0 ? SB_LOAD_RESP_COMPLETE : SB_LOAD_RESP_BODY;
    else {
        r->state = SB_LOAD_RESP_UNTIL_EOF;
        r->keep_alive = false;
    }
}

static size_t drain_up_to(struct evbuffer *in, uint64_t want)
{
    size_t have = evbuffer_get_length(in);
    size_t n = want < have ? (size_t)want : have;
    evbuffer_drain(in, n);
    return n;
}

enum sb_load_parse sb_load_resp_feed(struct sb_load_resp *r, struct evbuffer *in)
{
    bool err = false;
    char *line = NULL;
    for (;;) {
        switch (r->state) {
        case SB_LOAD_RESP_STATUS:
            if (!(line = sb_http_read_line(in, &err)))
                goto again;
            if (parse_status_line(r, line) < 0)
                goto fail;
            free(line);
            line = NULL;
            r->state = SB_LOAD_RESP_HEADERS;
            break;
        case SB_LOAD_RESP_HEADERS:
            if (!(line = sb_http_read_line(in, &err)))
                goto again;
            if (line[0] == '\0') {
                free(line);
                line = NULL;
                if (r->status >= 100 && r->status < 200) { /* interim response: the real one follows */
                    bool head = r->head;
                    sb_load_resp_reset(r, head);
                    break;
                }
                start_body(r);
                break;
            }
            if (parse_header(r, line) < 0)
                goto fail;
            free(line);
            line = NULL;
            break;
        case SB_LOAD_RESP_BODY: {
            size_t n = drain_up_to(in, (uint64_t)r->content_length - r->body_bytes);
            r->body_bytes += n;
            if (r->body_bytes == (uint64_t)r->content_length)
                r->state = SB_LOAD_RESP_COMPLETE;
            else
                goto again;
            break;
        }
        case SB_LOAD_RESP_CHUNK_SIZE: {
            if (!(line = sb_http_read_line(in, &err)))
                goto again;
            char *end = NULL;
            errno = 0;
            unsigned long long n = strtoull(line, &end, 16);
            if (errno || end == line || (*end && *end != ';' && *end != ' ' && *end != '\t') || n > (1ULL << 40))
                goto fail;
            free(line);
            line = NULL;
            r->chunk_left = n;
            r->state = n == 0 ? SB_LOAD_RESP_TRAILERS : SB_LOAD_RESP_CHUNK_DATA;
            break;
        }
        case SB_LOAD_RESP_CHUNK_DATA: {
            size_t n = drain_up_to(in, r->chunk_left);
            r->chunk_left -= n;
            r->body_bytes += n;
            if (r->chunk_left)
                goto again;
            r->state = SB_LOAD_RESP_CHUNK_END;
            break;
        }
        case SB_LOAD_RESP_CHUNK_END: {
            char crlf[2];
            size_t have = evbuffer_copyout(in, crlf, 2) < 0 ? 0 : evbuffer_get_length(in);
            if (have >= 1 && crlf[0] == '\n') {
                evbuffer_drain(in, 1);
            } else if (have >= 2 && crlf[0] == '\r' && crlf[1] == '\n') {
                evbuffer_drain(in, 2);
            } else if (have >= 2 || (have == 1 && crlf[0] != '\r')) {
                goto fail;
            } else {
                goto again;
            }
            r->state = SB_LOAD_RESP_CHUNK_SIZE;
            break;
        }
        case SB_LOAD_RESP_TRAILERS:
            if (!(line = sb_http_read_line(in, &err)))
                goto again;
            if (line[0] == '\0')
                r->state = SB_LOAD_RESP_COMPLETE;
            free(line);
            line = NULL;
            break;
        case SB_LOAD_RESP_UNTIL_EOF:
            r->body_bytes += drain_up_to(in, UINT64_MAX);
            return SB_LOAD_AGAIN;
        case SB_LOAD_RESP_COMPLETE:
            return SB_LOAD_DONE;
        }
    }
again:
    return err ? SB_LOAD_ERROR : SB_LOAD_AGAIN;
fail:
    free(line);
    return SB_LOAD_ERROR;
}

enum sb_load_parse sb_load_resp_eof(struct sb_load_resp *r)
{
    if (r->state == SB_LOAD_RESP_UNTIL_EOF || r->state == SB_LOAD_RESP_COMPLETE) {
        r->state = SB_LOAD_RESP_COMPLETE;
        return SB_LOAD_DONE;
    }
    return SB_LOAD_ERROR;
}

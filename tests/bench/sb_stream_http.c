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

#include "sb_stream.h"

#define LINE_MAX_BYTES (64 * 1024)

void sb_stream_resp_reset(struct sb_stream_resp *r)
{
    memset(r, 0, sizeof *r);
    r->state = SB_STREAM_RESP_STATUS;
    r->content_length = -1;
}

/* Next CRLF (or LF) line, or NULL (*err set when the line is too long). */
static char *read_line(struct evbuffer *in, bool *err)
{
    size_t len = 0;
    char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF);
    if (!line && evbuffer_get_length(in) > LINE_MAX_BYTES)
        *err = true;
    return line;
}

static bool header_is(const char *line, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncasecmp(line, name, n) != 0 || line[n] != ':')
        return false;
    const char *v = line + n + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    *value = v;
    return true;
}

static bool has_token(const char *value, const char *token)
{
    size_t n = strlen(token);
    for (const char *p = value; *p; p++)
        if (strncasecmp(p, token, n) == 0)
            return true;
    return false;
}

static int parse_status_line(struct sb_stream_resp *r, const char *line)
{
    if (strncmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') || line[8] != ' ')
        return -EINVAL;
    r->keep_alive = line[7] == '1';
    const char *s = line + 9;
    if (s[0] < '1' || s[0] > '5' || s[1] < '0' || s[1] > '9' || s[2] < '0' || s[2] > '9' ||
        (s[3] != ' ' && s[3] != '\0'))
        return -EINVAL;
    r->status = (s[0] - '0') * 100 + (s[1] - '0') * 10 + (s[2] - '0');
    return 0;
}

static int parse_header(struct sb_stream_resp *r, const char *line)
{
    const char *v;
    if (header_is(line, "Content-Length", &v)) {
        char *end = NULL;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (errno || end == v || n < 0)
            return -EINVAL;
        while (*end == ' ' || *end == '\t')
            end++;
        if (*end)
            return -EINVAL;
        r->content_length = n;
    } else if (header_is(line, "Transfer-Encoding", &v)) {
        if (has_token(v, "chunked"))
            r->chunked = true;
    } else if (header_is(line, "Connection", &v)) {
        if (has_token(v, "close"))
            r->keep_alive = false;
        else if (has_token(v, "keep-alive"))
            r->keep_alive = true;
    } else if (header_is(line, "Content-Type", &v)) {
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
            if (!(line = read_line(in, &err)))
                goto again;
            if (parse_status_line(r, line) < 0)
                goto fail;
            r->state = SB_STREAM_RESP_HEADERS;
            break;
        case SB_STREAM_RESP_HEADERS:
            if (!(line = read_line(in, &err)))
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
            if (!(line = read_line(in, &err)))
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
            if (!(line = read_line(in, &err)))
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

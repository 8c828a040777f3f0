/*
 * provider_gemini_stream: the "gemini" adapter's stream hooks. Streaming
 * (alt=sse) runs the same translation as a whole response
 * (provider_gemini_parse.c) chunk by chunk: every data event is a
 * GenerateContentResponse holding the next parts, so one state machine
 * (sb_gem_state_t) serves both and their events are identical.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h" /* SB_PROVIDER_MAX_BODY only: the parser's limit on a response */
#include "provider_gemini.h"
#include "provider_util.h"
#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_event.h"

/* The state machine, and the SSE framing around it. */
typedef struct sb_gem_stream {
    sb_gem_state_t st;
    sb_buf_t line; /* a line not yet ended */
    sb_buf_t data; /* data lines of the event being read */
} sb_gem_stream_t;

void *sb_gem_stream_new(const json_t *job)
{
    sb_gem_stream_t *s = sb_xcalloc(1, sizeof *s);
    sb_gem_state_init(&s->st, job, true);
    return s;
}

void sb_gem_stream_destroy(void *state)
{
    sb_gem_stream_t *s = state;
    if (!s)
        return;
    sb_gem_state_clear(&s->st);
    sb_buf_free(&s->line);
    sb_buf_free(&s->data);
    free(s);
}

/* The event whose data has been read: one chunk. A chunk that is not JSON
 * aborts the transfer (-EBADMSG; the worker reports it). */
static int sb_gem_dispatch(sb_gem_stream_t *s, json_t *events)
{
    if (s->data.len == 0)
        return 0;
    json_t *chunk = json_loadb(s->data.p, s->data.len, 0, NULL);
    s->data.len = 0;
    if (!chunk)
        return -EBADMSG;
    sb_gem_chunk(&s->st, events, chunk);
    json_decref(chunk);
    return 0;
}

/* One complete line in s->line (without its "\n"). */
static int sb_gem_line(sb_gem_stream_t *s, json_t *events)
{
    char *p = s->line.p ? s->line.p : "";
    size_t n = s->line.len;
    s->line.len = 0;
    if (n > 0 && p[n - 1] == '\r')
        n--;
    if (n == 0)
        return sb_gem_dispatch(s, events);
    if (n < 5 || strncmp(p, "data:", 5))
        return 0; /* comments, event:, id:, retry: */
    size_t skip = (n > 5 && p[5] == ' ') ? 6 : 5;
    if (s->data.len > 0)
        sb_buf_add(&s->data, "\n", 1);
    if (s->data.len + (n - skip) > SB_PROVIDER_MAX_BODY)
        return -E2BIG;
    sb_buf_add(&s->data, p + skip, n - skip);
    return 0;
}

int sb_gem_stream_feed(void *state, const char *data, size_t len, json_t *events)
{
    sb_gem_stream_t *s = state;
    while (len > 0) {
        const char *nl = memchr(data, '\n', len);
        size_t n = nl ? (size_t)(nl - data) : len;
        if (s->line.len + n > SB_PROVIDER_MAX_BODY)
            return -E2BIG;
        sb_buf_add(&s->line, data, n);
        if (!nl)
            break;
        data += n + 1;
        len -= n + 1;
        int rc = sb_gem_line(s, events);
        if (rc < 0)
            return rc;
    }
    return 0;
}

void sb_gem_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events)
{
    sb_gem_stream_t *s = state;
    /* A last event without its blank line still counts. */
    int rc = s->line.len > 0 ? sb_gem_line(s, events) : 0;
    if (rc == 0)
        rc = sb_gem_dispatch(s, events);
    if (rc < 0)
        sb_gem_fail(&s->st, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed stream event"));
    sb_gem_end(&s->st, events, resp->upstream_ms);
}

/*
 * provider_gemini_stream: the "gemini" adapter's stream hooks. Streaming
 * (alt=sse) runs the same translation as a whole response
 * (provider_gemini_parse.c) chunk by chunk: every data event is a
 * GenerateContentResponse holding the next parts, so one state machine
 * (sb_gem_state_t) serves both and their events are identical.
 */
#include <errno.h>
#include <stdlib.h>

#include "provider.h" /* SB_PROVIDER_MAX_BODY only: the parser's limit on a response */
#include "provider_gemini.h"
#include "provider_util.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_sse.h"

/* The state machine, and the SSE reader around it. */
typedef struct sb_gem_stream {
    sb_gem_state_t st;
    sb_sse_reader_t sse; /* LF-only lines, as Google's streams were always read; limit SB_PROVIDER_MAX_BODY */
    json_t *events;      /* borrowed: the current feed's or finish's */
} sb_gem_stream_t;

void *sb_gem_stream_new(const json_t *job)
{
    sb_gem_stream_t *s = sb_xcalloc(1, sizeof *s);
    sb_gem_state_init(&s->st, job, true);
    sb_sse_init(&s->sse, SB_PROVIDER_MAX_BODY, SB_SSE_LF_ONLY);
    return s;
}

void sb_gem_stream_destroy(void *state)
{
    sb_gem_stream_t *s = state;
    if (!s)
        return;
    sb_gem_state_clear(&s->st);
    sb_sse_free(&s->sse);
    free(s);
}

/* sb_sse's callback: an event whose data has been read, one chunk. Data of
 * nothing but empty data lines is no chunk (as it always was here). A chunk
 * that is not JSON aborts the transfer (-EBADMSG; the worker reports it). */
static int sb_gem_on_sse(void *arg, const char *event, const char *data, size_t len)
{
    (void)event;
    sb_gem_stream_t *s = arg;
    size_t blank = 0;
    while (blank < len && data[blank] == '\n')
        blank++;
    if (blank == len)
        return 0;
    json_t *chunk = json_loadb(data, len, 0, NULL);
    if (!chunk)
        return -EBADMSG;
    sb_gem_chunk(&s->st, s->events, chunk);
    json_decref(chunk);
    return 0;
}

int sb_gem_stream_feed(void *state, const char *data, size_t len, json_t *events)
{
    sb_gem_stream_t *s = state;
    s->events = events;
    int rc = sb_sse_feed(&s->sse, data, len, sb_gem_on_sse, s);
    return rc < 0 ? rc : 0;
}

void sb_gem_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events)
{
    sb_gem_stream_t *s = state;
    s->events = events;
    /* A last event without its blank line still counts. */
    if (sb_sse_finish(&s->sse, sb_gem_on_sse, s) < 0)
        sb_gem_fail(&s->st, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed stream event"));
    sb_gem_end(&s->st, events, resp->upstream_us);
}

/*
 * provider: the adapter registry and the per-job parser that hides streaming
 * (and counting) from the worker. It drives the adapters through their
 * vtables; what the adapters call back (status mapping, credentials, URLs,
 * scrubbing) is in provider_util.c, so no adapter calls into this file.
 */
#include "provider.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_job.h"

static const sb_provider_t *const sb_providers[] = {
    &sb_provider_openai_chat,
    &sb_provider_openai_responses,
    &sb_provider_anthropic,
    &sb_provider_gemini,
};

const sb_provider_t *sb_provider_lookup(const char *kind)
{
    if (!kind)
        return NULL;
    for (size_t i = 0; i < sizeof sb_providers / sizeof sb_providers[0]; i++)
        if (!strcmp(sb_providers[i]->kind, kind))
            return sb_providers[i];
    return NULL;
}

/*
 * The parser.
 */

struct sb_provider_parser {
    const sb_provider_t *provider;
    const json_t *job;
    void *stream;   /* adapter state while streaming a 2xx body, else NULL */
    bool streaming; /* the job asked for a stream and the adapter can */
    bool count;     /* a count job: the body is a count (or a generation's usage) */
    char *buf;      /* buffered body (non-streaming or non-2xx) */
    size_t len, cap;
};

/* A count made by a one-token generation (sb_provider_count_job): only its
 * usage and final event go on. A generation that completed without usage
 * has counted nothing: a 502. */
static void sb_provider_count_generated(const sb_provider_t *provider, const json_t *job,
                                        const sb_provider_response_t *resp, json_t *events)
{
    json_t *all = json_array();
    provider->parse_response(job, resp, all);
    json_t *usage = NULL, *final = NULL;
    size_t i;
    json_t *ev;
    json_array_foreach (all, i, ev) {
        enum sb_event_type t = sb_event_type_of(ev);
        if (t == SB_EV_USAGE && !usage)
            usage = ev;
        if (sb_event_is_final(ev)) {
            final = ev;
            break;
        }
    }
    if (final && sb_event_type_of(final) == SB_EV_COMPLETED && !usage) {
        json_array_append_new(events, sb_event_error(502, SB_ERR_UPSTREAM, NULL,
                                                     "the upstream reported no token usage: the input could not "
                                                     "be counted"));
    } else if (final) {
        /* A one-token cut is the point, not an incomplete answer. */
        if (sb_event_type_of(final) == SB_EV_COMPLETED) {
            json_object_set_new(final, "status", json_string("completed"));
            json_object_set_new(final, "incomplete_reason", json_null());
        }
        if (usage && sb_event_type_of(final) == SB_EV_COMPLETED)
            json_array_append(events, usage);
        json_array_append(events, final);
    }
    json_decref(all);
}

json_t *sb_provider_count_job(const json_t *job)
{
    json_t *request = json_copy((json_t *)sb_job_request(job));
    if (!request)
        request = json_object();
    json_object_set_new(request, "max_output_tokens", json_integer(1));
    json_object_del(request, "stream");
    json_object_del(request, "n");
    json_t *copy = json_copy((json_t *)job);
    json_object_set_new(copy, "request", request);
    return copy;
}

sb_provider_parser_t *sb_provider_parser_new(const sb_provider_t *provider, const json_t *job)
{
    sb_provider_parser_t *p = sb_xcalloc(1, sizeof *p);
    p->provider = provider;
    p->job = job;
    p->count = sb_job_is_count(job);
    p->streaming = !p->count && provider->stream_new && provider->stream_feed && provider->stream_finish &&
                   json_is_true(json_object_get(sb_job_request(job), "stream"));
    return p;
}

void sb_provider_parser_destroy(sb_provider_parser_t **pp)
{
    if (!pp || !*pp)
        return;
    sb_provider_parser_t *p = *pp;
    if (p->stream && p->provider->stream_destroy)
        p->provider->stream_destroy(p->stream);
    free(p->buf);
    free(p);
    *pp = NULL;
}

int sb_provider_parser_feed(sb_provider_parser_t *p, long status, const char *data, size_t len, json_t *events)
{
    if (p->streaming && status >= 200 && status < 300) {
        if (!p->stream)
            p->stream = p->provider->stream_new(p->job);
        if (!p->stream)
            return -ENOMEM;
        size_t from = json_array_size(events);
        const json_t *outer = sb_provider_set_current_job(p->job);
        int rc = p->provider->stream_feed(p->stream, data, len, events);
        sb_provider_set_current_job(outer);
        sb_provider_scrub_events(p->job, events, from);
        return rc;
    }
    if (len > SB_PROVIDER_MAX_BODY - p->len)
        return -E2BIG;
    if (p->len + len + 1 > p->cap) {
        size_t cap = p->cap ? p->cap : 4096;
        while (cap < p->len + len + 1)
            cap *= 2;
        p->buf = sb_xrealloc(p->buf, cap);
        p->cap = cap;
    }
    memcpy(p->buf + p->len, data, len);
    p->len += len;
    p->buf[p->len] = '\0';
    return 0;
}

static void sb_provider_parser_finish_events(sb_provider_parser_t *p, const sb_provider_response_t *resp,
                                             json_t *events);

/* Every event an adapter makes while it runs goes through the scrubber, and
 * the status mapping knows the job (for its credential and the log line). */
void sb_provider_parser_finish(sb_provider_parser_t *p, const sb_provider_response_t *resp, json_t *events)
{
    size_t from = json_array_size(events);
    const json_t *outer = sb_provider_set_current_job(p->job);
    sb_provider_parser_finish_events(p, resp, events);
    sb_provider_set_current_job(outer);
    sb_provider_scrub_events(p->job, events, from);
}

static void sb_provider_parser_finish_events(sb_provider_parser_t *p, const sb_provider_response_t *resp,
                                             json_t *events)
{
    if (p->streaming && resp->status >= 200 && resp->status < 300) {
        if (!p->stream)
            p->stream = p->provider->stream_new(p->job);
        if (p->stream) {
            p->provider->stream_finish(p->stream, resp, events);
            return;
        }
    }
    sb_provider_response_t r = *resp;
    r.body = p->buf ? p->buf : "";
    r.body_len = p->len;
    if (!p->count)
        p->provider->parse_response(p->job, &r, events);
    else if (p->provider->build_count_request && p->provider->parse_count_response)
        p->provider->parse_count_response(p->job, &r, events);
    else
        sb_provider_count_generated(p->provider, p->job, &r, events);
}

/*
 * fuzz_provider.h: the body of the four upstream-reply harnesses
 * (fuzz_provider_<kind>.c). An upstream's bytes are untrusted: a hostile or
 * broken server, or a proxy in between, can send anything. Each harness
 * drives one adapter exactly as worker.c does: a per-job
 * sb_provider_parser_t fed the body in chunks, then finished once (not
 * after a feed error, as the worker aborts the transfer then).
 *
 * Input: a 4-byte header, then the upstream body.
 *   byte 0  flags: 1 the job asks for a stream (SSE), 2 request.n = 2,
 *           4 a count_tokens job, 8 Retry-After: 7 on the response
 *   byte 1-2 the HTTP status, big-endian (any value, 0 included)
 *   byte 3  feed chunk size; 0 feeds the body in one call. Splitting moves
 *           line ends, CRLF pairs and UTF-8 sequences across feeds.
 *
 * Checked besides "no crash, no leak, no UB": every event the adapter emits
 * is an object of a known type; when the parse finishes, exactly one final
 * event (completed or error) was emitted, and it is the last (provider.h's
 * contract, which the frontends rely on); an error event carries a status
 * in 400..599 and a message; the parser refuses no body below
 * SB_PROVIDER_MAX_BODY; a text delta follows its item's item_added; and a
 * message's item_done holds exactly the text its deltas streamed (except
 * where the upstream sends its own done item: see below).
 */
#ifndef FUZZ_PROVIDER_H
#define FUZZ_PROVIDER_H

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "provider.h"
#include "sb_event.h"
#include "sb_job.h"
#include "sb_log.h"

enum {
    FUZZ_PROVIDER_STREAM = 1,
    FUZZ_PROVIDER_N2 = 2,
    FUZZ_PROVIDER_COUNT = 4,
    FUZZ_PROVIDER_RETRY_AFTER = 8,
};

/* A minimal canonical job for provider (sb_job.h): what the parse reads is
 * request.stream, request.n, request.op and the public model. */
static json_t *fuzz_provider_job(const sb_provider_t *provider, unsigned flags)
{
    json_t *request = json_pack("{s:[{s:s, s:s, s:[{s:s, s:s}]}]}", "input", "type", "message", "role", "user",
                                "content", "type", "input_text", "text", "hello");
    if (flags & FUZZ_PROVIDER_STREAM)
        json_object_set_new(request, "stream", json_true());
    if (flags & FUZZ_PROVIDER_N2)
        json_object_set_new(request, "n", json_integer(2));
    if (flags & FUZZ_PROVIDER_COUNT)
        json_object_set_new(request, "op", json_string(SB_JOB_OP_COUNT_TOKENS));
    json_t *route = json_pack("{s:s, s:s, s:s, s:i}", "provider", provider->kind, "base_url", "http://127.0.0.1:9/v1",
                              "upstream_model", "upstream-model", "timeout_ms", 60000);
    return json_pack("{s:s, s:s, s:i, s:o, s:o}", "request_id", "req_fuzz", "model", "fuzz-model", "account_id", 1,
                     "route", route, "request", request);
}

/* The streamed text of one message part so far, under "choice/item/part"
 * in seen; "choice/item" marks an item_added. */
static void fuzz_provider_key(char *buf, size_t len, const json_t *ev, long long part)
{
    long long item = json_integer_value(json_object_get(ev, "item_index"));
    if (part < 0)
        snprintf(buf, len, "%d/%lld", sb_event_choice(ev), item);
    else
        snprintf(buf, len, "%d/%lld/%lld", sb_event_choice(ev), item, part);
}

/* Stream consistency: a text delta belongs to an item already added, and,
 * for an adapter that assembles the done item from the deltas (all but
 * openai-responses, whose upstream sends its own done item, passed on as
 * sent), a message's done item holds exactly the text its deltas streamed:
 * clients that stream and clients that read the final object see the same
 * text. */
static void fuzz_provider_check_text(json_t *seen, const json_t *ev, enum sb_event_type t)
{
    char key[96];
    if (t == SB_EV_ITEM_ADDED) {
        fuzz_provider_key(key, sizeof key, ev, -1);
        json_object_set_new(seen, key, json_true());
    } else if (t == SB_EV_TEXT_DELTA) {
        fuzz_provider_key(key, sizeof key, ev, -1);
        FUZZ_REQUIRE(json_object_get(seen, key) != NULL);
        fuzz_provider_key(key, sizeof key, ev, json_integer_value(json_object_get(ev, "content_index")));
        const json_t *delta = json_object_get(ev, "delta");
        FUZZ_REQUIRE(json_is_string(delta));
        const json_t *sofar = json_object_get(seen, key);
        json_object_set_new(seen, key,
                            json_sprintf("%s%s", sofar ? json_string_value(sofar) : "", json_string_value(delta)));
    } else if (t == SB_EV_ITEM_DONE && !json_is_true(json_object_get(seen, "passthrough"))) {
        const json_t *item = json_object_get(ev, "item");
        const char *type = json_string_value(json_object_get(item, "type"));
        if (!type || strcmp(type, "message"))
            return;
        size_t i;
        const json_t *part;
        json_array_foreach (json_object_get(item, "content"), i, part) {
            fuzz_provider_key(key, sizeof key, ev, (long long)i);
            const json_t *streamed = json_object_get(seen, key);
            const char *ptype = json_string_value(json_object_get(part, "type"));
            if (!streamed || !ptype || strcmp(ptype, "output_text"))
                continue;
            const char *text = json_string_value(json_object_get(part, "text"));
            if (!text || strcmp(text, json_string_value(streamed)) != 0)
                fprintf(stderr, "streamed %s: \"%s\", done: \"%s\"\n", key, json_string_value(streamed),
                        text ? text : "(none)");
            FUZZ_REQUIRE(text && !strcmp(text, json_string_value(streamed)));
        }
    }
}

/* Checks the events appended since *checked; counts final events. */
static void fuzz_provider_check_events(const json_t *events, size_t *checked, int *finals, json_t *seen)
{
    for (; *checked < json_array_size(events); (*checked)++) {
        const json_t *ev = json_array_get(events, *checked);
        FUZZ_REQUIRE(json_is_object(ev));
        enum sb_event_type t = sb_event_type_of(ev);
        FUZZ_REQUIRE(t != SB_EV_UNKNOWN);
        fuzz_provider_check_text(seen, ev, t);
        if (t == SB_EV_ERROR) {
            json_int_t status = json_integer_value(json_object_get(ev, "status"));
            FUZZ_REQUIRE(status >= 400 && status <= 599);
            FUZZ_REQUIRE(json_is_string(json_object_get(ev, "message")));
            FUZZ_REQUIRE(json_is_string(json_object_get(ev, "kind")));
        }
        if (sb_event_is_final(ev))
            (*finals)++;
    }
}

static int fuzz_provider_run(const sb_provider_t *provider, const uint8_t *data, size_t size)
{
    static int logging;
    if (!logging++)
        sb_log_init("fuzz"); /* SB_LOG_LEVEL=error keeps a fuzzing run quiet (run-all sets it) */
    if (size < 4)
        return 0;
    unsigned flags = data[0];
    long status = (long)data[1] << 8 | data[2];
    size_t chunk = data[3];
    const char *body = (const char *)data + 4;
    size_t len = size - 4;

    json_t *job = fuzz_provider_job(provider, flags);
    json_t *events = json_array();
    json_t *seen = json_object();
    if (!strcmp(provider->kind, "openai-responses"))
        json_object_set_new(seen, "passthrough", json_true());
    sb_provider_parser_t *p = sb_provider_parser_new(provider, job);
    FUZZ_REQUIRE(p != NULL);
    size_t checked = 0;
    int finals = 0, rc = 0;
    size_t off = 0;
    do {
        size_t n = chunk && len - off > chunk ? chunk : len - off;
        rc = sb_provider_parser_feed(p, status, body + off, n, events);
        off += n;
        fuzz_provider_check_events(events, &checked, &finals, seen);
        /* nothing is final before the body has ended */
        FUZZ_REQUIRE(finals <= 1);
    } while (rc == 0 && off < len);
    /* a body this small is never refused for its size */
    FUZZ_REQUIRE(rc != -E2BIG);
    if (rc == 0) {
        sb_provider_response_t resp = {
            .status = status,
            .body = NULL,
            .body_len = 0,
            .retry_after = (flags & FUZZ_PROVIDER_RETRY_AFTER) ? 7 : -1,
            .upstream_us = 12,
        };
        sb_provider_parser_finish(p, &resp, events);
        fuzz_provider_check_events(events, &checked, &finals, seen);
        FUZZ_REQUIRE(finals == 1);
        FUZZ_REQUIRE(sb_event_is_final(json_array_get(events, json_array_size(events) - 1)));
    }
    sb_provider_parser_destroy(&p);
    FUZZ_REQUIRE(p == NULL);
    json_decref(seen);
    json_decref(events);
    json_decref(job);
    return 0;
}

#endif

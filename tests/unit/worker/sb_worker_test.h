/*
 * sb_worker_test: the harness the worker's unit tests (test_worker.c: the
 * broker session, test_wjob.c: a job's life, test_wcall.c: an upstream
 * call's life) share: the real worker library on one libevent loop against a
 * real HTTP server on 127.0.0.1 (a tiny evhttp server answering like OpenAI
 * Chat Completions) and a fake broker ROUTER on an inproc endpoint, all in the
 * test's process and on the same loop. sb_wt_start() sets them up and returns
 * a worker that has sent READY; sb_wt_finish() tears them down. Everything is
 * static, so each test binary has its own fakes and its own sb_test counts.
 *
 * The fake upstream picks its behaviour from the request's "model":
 *   fast       200 at once          slow300   200 after 300 ms
 *   hang       never answers        ratelimit 429 with Retry-After: 3
 * and for structured output and choices ("<kind>_<tag>": the tag keeps each
 * test's request count apart):
 *   json_ok      content {"name":"Ann","age":30}
 *   json_bad     content {"name":"Ann","age":"thirty"} (violates the schema)
 *   json_once_*  json_bad for the first request of that model, then json_ok
 *   json_hang_*  json_bad for the first request, then never answers
 *   tool_once_*  a get_weather call with {"city":5} first, then {"city":"Paris"}
 *   refuse       a refusal
 *   multi        honours n: n choices, choice k >= 1 says "Hello #k"
 *   single_*     400 for n != 1; else "Hello <request number>" after 100 ms
 *   single_fail  the second request gets 500, the others never answer
 * and for upstream resilience (retries, the retry budget, route outcomes):
 *   fail503_once_*    503 for the first request, then 200
 *   fail503_always    always 503
 *   fail503_hang_*    503 for the first request, then never answers
 *   fail503_second_*  the first request 200 at once, the second 503 after
 *                     100 ms, later ones 200 after 100 ms (a fan-out)
 *   ratelimit_once_*  429 with Retry-After: 1 for the first request, then 200
 *   reset_once_*      the first request's connection is closed without a
 *                     reply, then 200
 *   stream_reset_*    a streamed 200 that sends one text chunk, then closes
 *   ctx_exceeded      OpenAI's 400 context_length_exceeded
 * Request counts per model leave out "warm" requests: any request whose user
 * text is "warm" is answered 200 at once, whatever the model, so that a test
 * can earn a route its retry budget (0.2 per call) before the real request.
 *
 * A second listener (srv_fresh_port) answers the same way but closes every
 * connection after its reply ("Connection: close"), so every request to it
 * comes on a fresh connection: curl re-sends a request by itself when a
 * reused connection turns out dead, which would hide the worker's own retry
 * of a reset.
 */
#ifndef SB_WORKER_TEST_H
#define SB_WORKER_TEST_H

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sb_evbatch.h"
#include "sb_event.h"
#include "sb_job.h"
#include "sb_mpjson.h"
#include "sb_protocol.h"
#include "sb_test.h"
#include "sb_time.h"
#include "sb_wire.h"
#include "sb_zsock_ev.h"
#include "worker.h"

static struct event_base *base;

/*
 * Fake upstream.
 */

typedef struct {
    struct evhttp_request *req; /* while unanswered */
    char model[32];
    bool warm;  /* a "warm" request (not counted per model) */
    bool close; /* from the fresh listener: the reply closes the connection */
    int code;   /* status of a delayed reply; 0: 200 */
    char auth[128];
    char path[64];
    json_t *body;
    int64_t recv_us, reply_us;
    evutil_socket_t fd; /* the request's connection */
    int peer_port;      /* the client's port: equal ports, same connection */
    char *reply;        /* body of a delayed 200, owned */
} srv_rec_t;

static struct evhttp *srv, *srv_fresh;
static int srv_port, srv_fresh_port;
static srv_rec_t srv_recs[256];
static int srv_n;

static const char *srv_ok_body =
    "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":"
    "\"assistant\",\"content\":\"Hello!\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":5,"
    "\"completion_tokens\":2,\"total_tokens\":7}}";

static inline void srv_reply(srv_rec_t *r, int code, const char *body)
{
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, body, strlen(body));
    evhttp_add_header(evhttp_request_get_output_headers(r->req), "Content-Type", "application/json");
    if (r->close)
        evhttp_add_header(evhttp_request_get_output_headers(r->req), "Connection", "close");
    r->reply_us = sb_mono_us();
    evhttp_send_reply(r->req, code, code == 200 ? "OK" : "Error", b);
    evbuffer_free(b);
    r->req = NULL;
}

static inline void srv_on_delay(evutil_socket_t fd, short what, void *arg)
{
    srv_rec_t *r = arg;
    srv_reply(r, r->code ? r->code : 200, r->reply ? r->reply : srv_ok_body);
}

/* How many requests for this model the server has seen, this one included
 * ("warm" ones left out). */
static inline int srv_count(const char *model)
{
    int n = 0;
    for (int i = 0; i < srv_n; i++)
        n += !strcmp(srv_recs[i].model, model) && !srv_recs[i].warm;
    return n;
}

/* A chat completion with `choices` (stolen) and usage prompt 5 / completion 2
 * per choice; returns the body (owned). */
static inline char *srv_completion(json_t *choices)
{
    size_t n = json_array_size(choices);
    json_t *body = json_pack("{s:s, s:s, s:o, s:{s:i, s:i}}", "id", "chatcmpl-x", "object", "chat.completion",
                             "choices", choices, "usage", "prompt_tokens", 5, "completion_tokens", (int)(2 * n));
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return s;
}

static inline json_t *srv_choice(int index, const char *content)
{
    return json_pack("{s:i, s:{s:s, s:s}, s:s}", "index", index, "message", "role", "assistant", "content", content,
                     "finish_reason", "stop");
}

static inline void srv_reply_choice(srv_rec_t *r, const char *content)
{
    char *body = srv_completion(json_pack("[o]", srv_choice(0, content)));
    srv_reply(r, 200, body);
    free(body);
}

static const char *const srv_json_ok = "{\"name\":\"Ann\",\"age\":30}";
static const char *const srv_json_bad = "{\"name\":\"Ann\",\"age\":\"thirty\"}";

static inline void srv_reply_tool(srv_rec_t *r, const char *args)
{
    json_t *choice = json_pack("{s:i, s:{s:s, s:n, s:[{s:s, s:s, s:{s:s, s:s}}]}, s:s}", "index", 0, "message", "role",
                               "assistant", "content", "tool_calls", "id", "call_1", "type", "function", "function",
                               "name", "get_weather", "arguments", args, "finish_reason", "tool_calls");
    char *body = srv_completion(json_pack("[o]", choice));
    srv_reply(r, 200, body);
    free(body);
}

/* The structured-output and choices models (see the top of the file).
 * Returns false for a model it does not know. */
static inline bool srv_structured(srv_rec_t *r)
{
    const char *m = r->model;
    int nth = srv_count(m);
    if (!strcmp(m, "json_ok")) {
        srv_reply_choice(r, srv_json_ok);
    } else if (!strcmp(m, "json_bad")) {
        srv_reply_choice(r, srv_json_bad);
    } else if (!strncmp(m, "json_once_", 10)) {
        srv_reply_choice(r, nth == 1 ? srv_json_bad : srv_json_ok);
    } else if (!strncmp(m, "json_hang_", 10)) {
        if (nth == 1)
            srv_reply_choice(r, srv_json_bad);
    } else if (!strncmp(m, "tool_once_", 10)) {
        srv_reply_tool(r, nth == 1 ? "{\"city\":5}" : "{\"city\":\"Paris\"}");
    } else if (!strcmp(m, "refuse")) {
        json_t *choice = json_pack("{s:i, s:{s:s, s:n, s:s}, s:s}", "index", 0, "message", "role", "assistant",
                                   "content", "refusal", "I can't help with that.", "finish_reason", "stop");
        char *body = srv_completion(json_pack("[o]", choice));
        srv_reply(r, 200, body);
        free(body);
    } else if (!strcmp(m, "multi")) {
        json_int_t n = json_integer_value(json_object_get(r->body, "n"));
        json_t *choices = json_array();
        for (int k = 0; k < (n > 0 ? n : 1); k++) {
            char text[32];
            snprintf(text, sizeof text, k ? "Hello #%d" : "Hello", k);
            json_array_append_new(choices, srv_choice(k, text));
        }
        char *body = srv_completion(choices);
        srv_reply(r, 200, body);
        free(body);
    } else if (!strcmp(m, "single_fail")) {
        if (nth == 2)
            srv_reply(r, 500, "{\"error\":{\"message\":\"boom\"}}");
    } else if (!strncmp(m, "single_", 7)) {
        const json_t *n = json_object_get(r->body, "n");
        if (n && json_integer_value(n) != 1) {
            srv_reply(r, 400, "{\"error\":{\"message\":\"n must be 1 for this model\"}}");
            return true;
        }
        char text[32];
        snprintf(text, sizeof text, "Hello %d", nth);
        r->reply = srv_completion(json_pack("[o]", srv_choice(0, text)));
        struct timeval tv = {0, 100000};
        event_base_once(base, -1, EV_TIMEOUT, srv_on_delay, r, &tv);
    } else {
        return false;
    }
    return true;
}

/* Closes a request's connection without an answer (a crashed or restarted
 * upstream). The request stays unanswered; srv_stop frees it. */
static inline void srv_hang_up(srv_rec_t *r)
{
    shutdown(r->fd, SHUT_RDWR);
}

/* A streamed 200 written by hand: the head and one chunk of one SSE event
 * (the start of a message), then the connection closes mid-stream. */
static inline void srv_stream_then_reset(srv_rec_t *r)
{
    static const char head[] =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
    static const char event[] =
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,"
        "\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n";
    char buf[512];
    int n = snprintf(buf, sizeof buf, "%s%zx\r\n%s\r\n", head, sizeof event - 1, event);
    CHECK(send(r->fd, buf, (size_t)n, MSG_NOSIGNAL) == n);
    srv_hang_up(r);
}

/* The resilience models (see the top of the file). Returns false for a
 * model it does not know. */
static inline bool srv_resilience(srv_rec_t *r)
{
    static const char *const overloaded = "{\"error\":{\"message\":\"The engine is currently overloaded\"}}";
    const char *m = r->model;
    int nth = srv_count(m);
    if (!strncmp(m, "fail503_once_", 13)) {
        srv_reply(r, nth == 1 ? 503 : 200, nth == 1 ? overloaded : srv_ok_body);
    } else if (!strcmp(m, "fail503_always")) {
        srv_reply(r, 503, overloaded);
    } else if (!strncmp(m, "fail503_hang_", 13)) {
        if (nth == 1)
            srv_reply(r, 503, overloaded);
    } else if (!strncmp(m, "fail503_second_", 15)) {
        if (nth == 1) {
            srv_reply_choice(r, "Hello 1");
            return true;
        }
        char text[32];
        snprintf(text, sizeof text, "Hello %d", nth);
        r->code = nth == 2 ? 503 : 200;
        r->reply = nth == 2 ? strdup(overloaded) : srv_completion(json_pack("[o]", srv_choice(0, text)));
        struct timeval tv = {0, 100000};
        event_base_once(base, -1, EV_TIMEOUT, srv_on_delay, r, &tv);
    } else if (!strncmp(m, "ratelimit_once_", 15)) {
        if (nth == 1) {
            evhttp_add_header(evhttp_request_get_output_headers(r->req), "Retry-After", "1");
            srv_reply(r, 429, "{\"error\":{\"message\":\"Rate limit reached for requests\",\"type\":\"requests\"}}");
        } else {
            srv_reply(r, 200, srv_ok_body);
        }
    } else if (!strncmp(m, "reset_once_", 11)) {
        if (nth == 1)
            srv_hang_up(r);
        else
            srv_reply(r, 200, srv_ok_body);
    } else if (!strncmp(m, "stream_reset_", 13)) {
        srv_stream_then_reset(r);
    } else if (!strcmp(m, "ctx_exceeded")) {
        srv_reply(r, 400,
                  "{\"error\":{\"message\":\"This model's maximum context length is 8192 tokens. However, your "
                  "messages resulted in 9000 tokens.\",\"type\":\"invalid_request_error\",\"param\":\"messages\","
                  "\"code\":\"context_length_exceeded\"}}");
    } else {
        return false;
    }
    return true;
}

/* evhttp does not watch a connection while its request waits for an answer,
 * so ask the socket itself: EOF means the client closed it. */
static inline bool srv_closed(const srv_rec_t *r)
{
    if (r->fd < 0)
        return false;
    char c;
    ssize_t n = recv(r->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static inline void srv_on_request(struct evhttp_request *req, void *arg)
{
    if (srv_n == (int)(sizeof srv_recs / sizeof srv_recs[0])) {
        evhttp_send_error(req, 500, "full");
        return;
    }
    srv_rec_t *r = &srv_recs[srv_n++];
    memset(r, 0, sizeof *r);
    r->req = req;
    r->recv_us = sb_mono_us();
    snprintf(r->path, sizeof r->path, "%s", evhttp_request_get_uri(req));
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    snprintf(r->auth, sizeof r->auth, "%s", auth ? auth : "");
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    r->body = json_loadb((const char *)evbuffer_pullup(in, -1), len, 0, NULL);
    snprintf(r->model, sizeof r->model, "%s", json_string_value(json_object_get(r->body, "model")) ?: "");
    char *peer = NULL;
    ev_uint16_t peer_port = 0;
    evhttp_connection_get_peer(evhttp_request_get_connection(req), &peer, &peer_port);
    r->peer_port = peer_port;
    r->fd = bufferevent_getfd(evhttp_connection_get_bufferevent(evhttp_request_get_connection(req)));
    r->close = arg != NULL;
    const char *text =
        json_string_value(json_object_get(json_array_get(json_object_get(r->body, "messages"), 0), "content"));
    r->warm = text && !strcmp(text, "warm");

    if (r->warm || !strcmp(r->model, "fast")) {
        srv_reply(r, 200, srv_ok_body);
    } else if (!strcmp(r->model, "slow300")) {
        struct timeval tv = {0, 300000};
        event_base_once(base, -1, EV_TIMEOUT, srv_on_delay, r, &tv);
    } else if (!strcmp(r->model, "ratelimit")) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", "3");
        srv_reply(r, 429, "{\"error\":{\"message\":\"Rate limit reached for requests\",\"type\":\"requests\"}}");
    } else if (!strcmp(r->model, "hang")) {
        /* answered (or freed) at teardown */
    } else if (srv_structured(r) || srv_resilience(r)) {
        /* answered (or not) there */
    } else {
        srv_reply(r, 404, "{\"error\":{\"message\":\"no such model\"}}");
    }
}

/* A listener on 127.0.0.1 (any port); fresh: every reply closes its
 * connection. Returns the port. */
static inline int srv_listen(struct evhttp **h, bool fresh)
{
    *h = evhttp_new(base);
    evhttp_set_gencb(*h, srv_on_request, fresh ? (void *)*h : NULL);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(*h, "127.0.0.1", 0);
    CHECK(bs != NULL);
    struct sockaddr_in sin;
    socklen_t sl = sizeof sin;
    getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sin, &sl);
    return ntohs(sin.sin_port);
}

static inline void srv_start(void)
{
    srv_port = srv_listen(&srv, false);
    srv_fresh_port = srv_listen(&srv_fresh, true);
}

static inline void srv_stop(void)
{
    for (int i = 0; i < srv_n; i++) {
        if (srv_recs[i].req) /* frees a request whose connection is gone */
            srv_reply(&srv_recs[i], 200, srv_ok_body);
        json_decref(srv_recs[i].body);
        free(srv_recs[i].reply);
    }
    evhttp_free(srv);
    evhttp_free(srv_fresh);
}

/*
 * Fake broker.
 */

#define SB_TEST_MAX_EVENTS 4096

typedef struct {
    char job_id[64];
    bool final;
    char upstream[16]; /* the header's "upstream", "" when absent */
    json_t *ev;
    int64_t at_us;
} got_event_t;

static zsock_t *broker;
static sb_zsock_ev_t *broker_watch;
static zframe_t *worker_id; /* routing id of the worker's latest READY */
static int readies, heartbeats;
static long long last_hb_seq = -1; /* the "seq" of the worker's latest HEARTBEAT */
static json_t *last_ready;
static bool broker_silent;
static long long last_window = -1; /* the worker's latest CREDIT window (several brokers) */
static got_event_t events[SB_TEST_MAX_EVENTS];
static int n_events;

static inline void broker_on_msg(sb_wire_msg_t **pmsg, void *arg)
{
    sb_wire_msg_t *m = *pmsg;
    switch (m->cmd) {
    case SB_CMD_READY:
        readies++;
        zframe_destroy(&worker_id);
        worker_id = zframe_dup(m->routing_id);
        json_decref(last_ready);
        last_ready = json_incref(m->header);
        break;
    case SB_CMD_HEARTBEAT:
        heartbeats++;
        last_hb_seq = sb_wire_header_int(m, "seq", -1);
        if (!broker_silent) {
            CHECK_INT(sb_wire_send(broker, m->routing_id, SB_CMD_HEARTBEAT, NULL, NULL, 0), 0);
            sb_zsock_ev_poke(broker_watch);
        }
        break;
    case SB_CMD_EVENT: {
        /* One message may carry a batch (sb_evbatch.h): one entry per event,
         * only the batch's last one final. */
        json_t *evs = NULL;
        CHECK(m->body != NULL);
        if (m->body)
            CHECK_INT(sb_evbatch_decode(zframe_data(m->body), zframe_size(m->body), &evs), 0);
        size_t n = evs ? json_array_size(evs) : 1;
        for (size_t i = 0; i < n; i++) {
            got_event_t *g = &events[n_events++ % SB_TEST_MAX_EVENTS];
            snprintf(g->job_id, sizeof g->job_id, "%s", sb_wire_header_str(m, "job_id") ?: "");
            g->final = sb_wire_header_bool(m, "final") && i + 1 == n;
            snprintf(g->upstream, sizeof g->upstream, "%s", g->final ? sb_wire_header_str(m, "upstream") ?: "" : "");
            g->ev = evs ? json_incref(json_array_get(evs, i)) : NULL;
            g->at_us = sb_mono_us();
        }
        json_decref(evs);
        break;
    }
    case SB_CMD_CREDIT:
        last_window = sb_wire_header_int(m, "window", -1);
        break;
    default:
        CHECK(!"unexpected command from the worker");
    }
}

static inline void broker_send(int cmd, json_t *hdr, json_t *body)
{
    char *buf = NULL;
    size_t len = 0;
    if (body)
        CHECK_INT(sb_mpjson_encode(body, &buf, &len), 0);
    CHECK(worker_id != NULL);
    CHECK_INT(sb_wire_send(broker, worker_id, cmd, hdr, buf, len), 0);
    sb_zsock_ev_poke(broker_watch);
    free(buf);
    json_decref(hdr);
    json_decref(body);
}

/* A job whose user message is `text`. */
static inline json_t *make_job_text(const char *provider, const char *upstream_model, int port,
                                    const char *credential_ref, const char *text)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", port);
    json_t *route = json_pack("{s:s, s:s, s:s, s:s?, s:i}", "provider", provider, "base_url", url, "upstream_model",
                              upstream_model, "credential_ref", credential_ref, "timeout_ms", 10000);
    json_t *request = json_pack("{s:[{s:s, s:s, s:[{s:s, s:s}]}], s:b}", "input", "type", "message", "role", "user",
                                "content", "type", "input_text", "text", text, "stream", false);
    return sb_job_new("req_1", "public-model", 1, route, request);
}

static inline json_t *make_job(const char *provider, const char *upstream_model, int port, const char *credential_ref)
{
    return make_job_text(provider, upstream_model, port, credential_ref, "Hi");
}

static inline void send_job(const char *job_id, json_t *job, long long deadline_ms)
{
    broker_send(
        SB_CMD_JOB,
        json_pack("{s:s, s:s, s:I}", "job_id", job_id, "model", "public-model", "deadline_ms", (json_int_t)deadline_ms),
        job);
}

/*
 * Loop helpers.
 */

static inline void on_tick(evutil_socket_t fd, short what, void *arg)
{
}

/* Runs the loop until cond() holds or timeout_ms pass; returns cond(). */
static inline bool run_until(bool (*cond)(void *), void *arg, int timeout_ms)
{
    int64_t end = sb_mono_ms() + timeout_ms;
    while (!cond(arg) && sb_mono_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    return cond(arg);
}

static inline void run_for(int ms)
{
    int64_t end = sb_mono_ms() + ms;
    while (sb_mono_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
}

static inline const got_event_t *final_of(const char *job_id)
{
    for (int i = 0; i < n_events && i < SB_TEST_MAX_EVENTS; i++)
        if (!strcmp(events[i].job_id, job_id) && events[i].final)
            return &events[i];
    return NULL;
}

static inline int count_events(const char *job_id)
{
    int n = 0;
    for (int i = 0; i < n_events && i < SB_TEST_MAX_EVENTS; i++)
        n += !strcmp(events[i].job_id, job_id);
    return n;
}

static inline enum sb_event_type final_type(const char *job_id)
{
    const got_event_t *g = final_of(job_id);
    return g ? sb_event_type_of(g->ev) : SB_EV_UNKNOWN;
}

/* The final header's "upstream" ("" when absent or no final yet). */
static inline const char *final_upstream(const char *job_id)
{
    const got_event_t *g = final_of(job_id);
    return g ? g->upstream : "";
}

/* Whether any non-final event of job_id carried "upstream". */
static inline bool partial_has_upstream(const char *job_id)
{
    for (int i = 0; i < n_events && i < SB_TEST_MAX_EVENTS; i++)
        if (!strcmp(events[i].job_id, job_id) && !events[i].final && events[i].upstream[0])
            return true;
    return false;
}

static inline bool has_final(void *job_id)
{
    return final_of(job_id) != NULL;
}
static inline bool has_readies(void *n)
{
    return readies >= *(int *)n;
}
static inline bool has_requests(void *n)
{
    return srv_n >= *(int *)n;
}
static inline bool rec_closed(void *r)
{
    return srv_closed(r);
}
static inline bool flag_set(void *b)
{
    return *(bool *)b;
}

/* The final event of job_id must be an error with this status and kind,
 * after `before` other events. */
static inline void check_final_error_after(const char *job_id, int before, int status, const char *kind,
                                           const char *message_prefix)
{
    const got_event_t *g = final_of(job_id);
    CHECK(g != NULL);
    if (!g)
        return;
    CHECK(sb_event_type_of(g->ev) == SB_EV_ERROR);
    CHECK_INT(json_integer_value(json_object_get(g->ev, "status")), status);
    CHECK_STR(json_string_value(json_object_get(g->ev, "kind")), kind);
    const char *msg = json_string_value(json_object_get(g->ev, "message"));
    CHECK(msg && !strncmp(msg, message_prefix, strlen(message_prefix)));
    if (!msg || strncmp(msg, message_prefix, strlen(message_prefix)))
        fprintf(stderr, "  job %s message: %s\n", job_id, msg ? msg : "(null)");
    CHECK_INT(count_events(job_id), before + 1);
}

/* The job's only event must be an error with this status and kind. */
static inline void check_final_error(const char *job_id, int status, const char *kind, const char *message_prefix)
{
    check_final_error_after(job_id, 0, status, kind, message_prefix);
}

static bool stopped;
static inline void on_stopped(void *arg)
{
    stopped = true;
}

/*
 * Strict structured output and choices.
 */

static const char *const person_schema =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}},"
    "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}";

static inline json_t *J(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    CHECK(v != NULL);
    return v;
}

/* A job for `model` whose request asks for text.format json_schema 'person'. */
static inline json_t *make_format_job(const char *model, bool strict)
{
    json_t *job = make_job("openai-chat", model, srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "text",
                        json_pack("{s:{s:s, s:s, s:o, s:b}}", "format", "type", "json_schema", "name", "person",
                                  "schema", J(person_schema), "strict", strict));
    return job;
}

/* Sets request.n and route.capabilities (a JSON text, or NULL for none). */
static inline void set_n(json_t *job, int n, const char *caps)
{
    json_object_set_new((json_t *)sb_job_request(job), "n", json_integer(n));
    if (caps)
        json_object_set_new((json_t *)sb_job_route(job), "capabilities", J(caps));
}

/* The events of job_id in arrival order (borrowed, in a new array). */
static inline json_t *job_events(const char *job_id)
{
    json_t *arr = json_array();
    for (int i = 0; i < n_events && i < SB_TEST_MAX_EVENTS; i++)
        if (!strcmp(events[i].job_id, job_id))
            json_array_append(arr, events[i].ev);
    return arr;
}

/* The output text of the first message item_done of job_id for choice k. */
static inline const char *job_text(const char *job_id, int k)
{
    for (int i = 0; i < n_events && i < SB_TEST_MAX_EVENTS; i++) {
        const json_t *ev = events[i].ev;
        if (strcmp(events[i].job_id, job_id) || sb_event_type_of(ev) != SB_EV_ITEM_DONE || sb_event_choice(ev) != k)
            continue;
        const json_t *item = json_object_get(ev, "item");
        if (!strcmp(json_string_value(json_object_get(item, "type")) ?: "", "message"))
            return json_string_value(json_object_get(json_array_get(json_object_get(item, "content"), 0), "text"));
    }
    return NULL;
}

static inline void check_completed(const char *job_id)
{
    const got_event_t *g = final_of(job_id);
    CHECK(g && sb_event_type_of(g->ev) == SB_EV_COMPLETED);
    if (g && sb_event_type_of(g->ev) != SB_EV_COMPLETED) {
        char *d = json_dumps(g->ev, JSON_COMPACT);
        fprintf(stderr, "  job %s final: %s\n", job_id, d);
        free(d);
    }
}

/*
 * Upstream resilience.
 */

/* Five successful calls on the route of `model` at `port`: one retry token. */
static inline void warm_route(const char *model, int port)
{
    for (int i = 0; i < 5; i++) {
        char id[64];
        snprintf(id, sizeof id, "warm_%s_%d_%d", model, port, i);
        send_job(id, make_job_text("openai-chat", model, port, NULL, "warm"), 0);
        CHECK(run_until(has_final, id, 3000));
        check_completed(id);
    }
}

/*
 * Setup.
 */

static struct event *sb_wt_tick;

/* The worker's configuration in every test: a short heartbeat, connect
 * timeout, stream idle timeout and retry backoff, so the tests run fast. */
static sb_worker_config_t sb_wt_cfg = {.endpoint = "inproc://test-worker-broker",
                                       .models = " m1, m2 ,",
                                       .credits = 4,
                                       .name = "test-worker",
                                       .heartbeat_ms = 50,
                                       .connect_timeout_ms = 500,
                                       .stream_idle_ms = 300,
                                       .retry_base_ms = 20,
                                       .retry_cap_ms = 80,
                                       .on_stopped = on_stopped};

/* Starts the loop, the fake upstream, the fake broker and a worker (with
 * sb_wt_cfg), and waits for the worker's READY. */
static inline sb_worker_t *sb_wt_start(void)
{
    zsys_handler_set(NULL);
    signal(SIGPIPE, SIG_IGN); /* the fake upstream writes to connections it has closed */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    base = event_base_new();
    sb_wt_tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval tv = {0, 10000};
    event_add(sb_wt_tick, &tv);
    srv_start();

    broker = zsock_new(ZMQ_ROUTER);
    zsock_set_router_mandatory(broker, 1);
    CHECK(zsock_bind(broker, "inproc://test-worker-broker") == 0);
    broker_watch = sb_zsock_ev_new(base, broker, true, broker_on_msg, NULL);

    sb_worker_t *w = sb_worker_new(&sb_wt_cfg, base);
    CHECK(w != NULL);
    int one = 1;
    CHECK(run_until(has_readies, &one, 2000));
    return w;
}

/* Destroys the worker (if still there) and everything sb_wt_start made;
 * returns the test's exit status. */
static inline int sb_wt_finish(sb_worker_t **w, const char *name)
{
    sb_worker_destroy(w);
    for (int i = 0; i < n_events && i < SB_TEST_MAX_EVENTS; i++)
        json_decref(events[i].ev);
    json_decref(last_ready);
    zframe_destroy(&worker_id);
    sb_zsock_ev_destroy(&broker_watch);
    zsock_destroy(&broker);
    srv_stop();
    event_free(sb_wt_tick);
    event_base_free(base);
    curl_global_cleanup();
    return sb_test_finish(name);
}

#endif

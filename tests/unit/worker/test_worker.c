/*
 * test_worker: the real worker library on one libevent loop against a real
 * HTTP server on 127.0.0.1 (a tiny evhttp server answering like OpenAI Chat
 * Completions) and a fake broker ROUTER on an inproc endpoint, all in this
 * process and on the same loop.
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

static void srv_reply(srv_rec_t *r, int code, const char *body)
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

static void srv_on_delay(evutil_socket_t fd, short what, void *arg)
{
    srv_rec_t *r = arg;
    srv_reply(r, r->code ? r->code : 200, r->reply ? r->reply : srv_ok_body);
}

/* How many requests for this model the server has seen, this one included
 * ("warm" ones left out). */
static int srv_count(const char *model)
{
    int n = 0;
    for (int i = 0; i < srv_n; i++)
        n += !strcmp(srv_recs[i].model, model) && !srv_recs[i].warm;
    return n;
}

/* A chat completion with `choices` (stolen) and usage prompt 5 / completion 2
 * per choice; returns the body (owned). */
static char *srv_completion(json_t *choices)
{
    size_t n = json_array_size(choices);
    json_t *body = json_pack("{s:s, s:s, s:o, s:{s:i, s:i}}", "id", "chatcmpl-x", "object", "chat.completion",
                             "choices", choices, "usage", "prompt_tokens", 5, "completion_tokens", (int)(2 * n));
    char *s = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    return s;
}

static json_t *srv_choice(int index, const char *content)
{
    return json_pack("{s:i, s:{s:s, s:s}, s:s}", "index", index, "message", "role", "assistant", "content", content,
                     "finish_reason", "stop");
}

static void srv_reply_choice(srv_rec_t *r, const char *content)
{
    char *body = srv_completion(json_pack("[o]", srv_choice(0, content)));
    srv_reply(r, 200, body);
    free(body);
}

static const char *const srv_json_ok = "{\"name\":\"Ann\",\"age\":30}";
static const char *const srv_json_bad = "{\"name\":\"Ann\",\"age\":\"thirty\"}";

static void srv_reply_tool(srv_rec_t *r, const char *args)
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
static bool srv_structured(srv_rec_t *r)
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
static void srv_hang_up(srv_rec_t *r)
{
    shutdown(r->fd, SHUT_RDWR);
}

/* A streamed 200 written by hand: the head and one chunk of one SSE event
 * (the start of a message), then the connection closes mid-stream. */
static void srv_stream_then_reset(srv_rec_t *r)
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
static bool srv_resilience(srv_rec_t *r)
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
static bool srv_closed(const srv_rec_t *r)
{
    if (r->fd < 0)
        return false;
    char c;
    ssize_t n = recv(r->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

static void srv_on_request(struct evhttp_request *req, void *arg)
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
static int srv_listen(struct evhttp **h, bool fresh)
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

static void srv_start(void)
{
    srv_port = srv_listen(&srv, false);
    srv_fresh_port = srv_listen(&srv_fresh, true);
}

static void srv_stop(void)
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
static got_event_t events[SB_TEST_MAX_EVENTS];
static int n_events;

static void broker_on_msg(sb_wire_msg_t **pmsg, void *arg)
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
        got_event_t *g = &events[n_events++ % SB_TEST_MAX_EVENTS];
        snprintf(g->job_id, sizeof g->job_id, "%s", sb_wire_header_str(m, "job_id") ?: "");
        g->final = sb_wire_header_bool(m, "final");
        snprintf(g->upstream, sizeof g->upstream, "%s", sb_wire_header_str(m, "upstream") ?: "");
        g->ev = NULL;
        CHECK(m->body != NULL);
        if (m->body)
            CHECK_INT(sb_mpjson_decode(zframe_data(m->body), zframe_size(m->body), &g->ev), 0);
        g->at_us = sb_mono_us();
        break;
    }
    default:
        CHECK(!"unexpected command from the worker");
    }
}

static void broker_send(int cmd, json_t *hdr, json_t *body)
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
static json_t *make_job_text(const char *provider, const char *upstream_model, int port, const char *credential_ref,
                             const char *text)
{
    char url[64];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", port);
    json_t *route = json_pack("{s:s, s:s, s:s, s:s?, s:i}", "provider", provider, "base_url", url, "upstream_model",
                              upstream_model, "credential_ref", credential_ref, "timeout_ms", 10000);
    json_t *request = json_pack("{s:[{s:s, s:s, s:[{s:s, s:s}]}], s:b}", "input", "type", "message", "role", "user",
                                "content", "type", "input_text", "text", text, "stream", false);
    return sb_job_new("req_1", "public-model", 1, route, request);
}

static json_t *make_job(const char *provider, const char *upstream_model, int port, const char *credential_ref)
{
    return make_job_text(provider, upstream_model, port, credential_ref, "Hi");
}

static void send_job(const char *job_id, json_t *job, long long deadline_ms)
{
    broker_send(
        SB_CMD_JOB,
        json_pack("{s:s, s:s, s:I}", "job_id", job_id, "model", "public-model", "deadline_ms", (json_int_t)deadline_ms),
        job);
}

/*
 * Loop helpers.
 */

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
}

/* Runs the loop until cond() holds or timeout_ms pass; returns cond(). */
static bool run_until(bool (*cond)(void *), void *arg, int timeout_ms)
{
    int64_t end = sb_mono_ms() + timeout_ms;
    while (!cond(arg) && sb_mono_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    return cond(arg);
}

static void run_for(int ms)
{
    int64_t end = sb_mono_ms() + ms;
    while (sb_mono_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
}

static const got_event_t *final_of(const char *job_id)
{
    for (int i = 0; i < n_events && i < SB_TEST_MAX_EVENTS; i++)
        if (!strcmp(events[i].job_id, job_id) && events[i].final)
            return &events[i];
    return NULL;
}

static int count_events(const char *job_id)
{
    int n = 0;
    for (int i = 0; i < n_events && i < SB_TEST_MAX_EVENTS; i++)
        n += !strcmp(events[i].job_id, job_id);
    return n;
}

static enum sb_event_type final_type(const char *job_id)
{
    const got_event_t *g = final_of(job_id);
    return g ? sb_event_type_of(g->ev) : SB_EV_UNKNOWN;
}

/* The final header's "upstream" ("" when absent or no final yet). */
static const char *final_upstream(const char *job_id)
{
    const got_event_t *g = final_of(job_id);
    return g ? g->upstream : "";
}

/* Whether any non-final event of job_id carried "upstream". */
static bool partial_has_upstream(const char *job_id)
{
    for (int i = 0; i < n_events && i < SB_TEST_MAX_EVENTS; i++)
        if (!strcmp(events[i].job_id, job_id) && !events[i].final && events[i].upstream[0])
            return true;
    return false;
}

static bool has_final(void *job_id)
{
    return final_of(job_id) != NULL;
}
static bool has_readies(void *n)
{
    return readies >= *(int *)n;
}
static bool has_requests(void *n)
{
    return srv_n >= *(int *)n;
}
static bool rec_closed(void *r)
{
    return srv_closed(r);
}
static bool flag_set(void *b)
{
    return *(bool *)b;
}

/* The final event of job_id must be an error with this status and kind,
 * after `before` other events. */
static void check_final_error_after(const char *job_id, int before, int status, const char *kind,
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
static void check_final_error(const char *job_id, int status, const char *kind, const char *message_prefix)
{
    check_final_error_after(job_id, 0, status, kind, message_prefix);
}

static bool stopped;
static void on_stopped(void *arg)
{
    stopped = true;
}

/*
 * Tests.
 */

static void test_ready(void)
{
    int one = 1;
    CHECK(run_until(has_readies, &one, 2000));
    CHECK_INT(json_integer_value(json_object_get(last_ready, "credits")), 4);
    CHECK_STR(json_string_value(json_object_get(last_ready, "name")), "test-worker");
    json_t *models = json_object_get(last_ready, "models");
    CHECK_INT(json_array_size(models), 2);
    CHECK_STR(json_string_value(json_array_get(models, 0)), "m1");
    CHECK_STR(json_string_value(json_array_get(models, 1)), "m2");
}

static void test_simple_job(void)
{
    setenv("SB_TEST_WORKER_KEY", "sk-worker-test", 1);
    send_job("job_simple", make_job("openai-chat", "fast", srv_port, "SB_TEST_WORKER_KEY"), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_simple", 3000));
    static const char *const want[] = {"item_added", "text_delta", "item_done", "usage", "completed"};
    int k = 0;
    for (int i = 0; i < n_events; i++) {
        if (strcmp(events[i].job_id, "job_simple"))
            continue;
        CHECK(k < 5);
        if (k >= 5)
            break;
        CHECK_STR(sb_event_type_name(sb_event_type_of(events[i].ev)), want[k]);
        CHECK(events[i].final == (k == 4));
        k++;
    }
    CHECK_INT(k, 5);
    const got_event_t *g = final_of("job_simple");
    CHECK(g && sb_event_type_of(g->ev) == SB_EV_COMPLETED);
    if (g) {
        CHECK_STR(json_string_value(json_object_get(g->ev, "model")), "public-model");
        CHECK_STR(json_string_value(json_object_get(g->ev, "status")), "completed");
    }
    /* What the upstream saw. */
    srv_rec_t *r = &srv_recs[srv_n - 1];
    CHECK_STR(r->path, "/v1/chat/completions");
    CHECK_STR(r->auth, "Bearer sk-worker-test");
    /* The upstream answered: the final header says so, and only it. */
    CHECK_STR(final_upstream("job_simple"), "ok");
    CHECK(!partial_has_upstream("job_simple"));
    CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(r->body, "messages"), 0), "content")),
              "Hi");
}

/* Sequential jobs to one upstream share one pooled connection. */
static void test_reuse(void)
{
    send_job("job_reuse1", make_job("openai-chat", "fast", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_reuse1", 3000));
    send_job("job_reuse2", make_job("openai-chat", "fast", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_reuse2", 3000));
    CHECK(final_type("job_reuse2") == SB_EV_COMPLETED);
    CHECK(srv_n >= 2 && srv_recs[srv_n - 1].peer_port == srv_recs[srv_n - 2].peer_port);
}

static void test_concurrent(void)
{
    int first = srv_n;
    send_job("job_c1", make_job("openai-chat", "slow300", srv_port, NULL), 0);
    send_job("job_c2", make_job("openai-chat", "slow300", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_c1", 3000));
    CHECK(run_until(has_final, "job_c2", 3000));
    CHECK_INT(srv_n, first + 2);
    srv_rec_t *a = &srv_recs[first], *b = &srv_recs[first + 1];
    /* Overlap: both requests reached the upstream before either was answered. */
    int64_t last_recv = a->recv_us > b->recv_us ? a->recv_us : b->recv_us;
    int64_t first_reply = a->reply_us < b->reply_us ? a->reply_us : b->reply_us;
    CHECK(last_recv < first_reply);
    CHECK(final_type("job_c1") == SB_EV_COMPLETED);
    CHECK(final_type("job_c2") == SB_EV_COMPLETED);
}

static void test_cancel(sb_worker_t *w)
{
    int want = srv_n + 1;
    send_job("job_cancel", make_job("openai-chat", "hang", srv_port, NULL), 0);
    CHECK(run_until(has_requests, &want, 3000));
    srv_rec_t *r = &srv_recs[want - 1];
    CHECK_INT(sb_worker_inflight(w), 1);
    run_for(20);
    CHECK(!srv_closed(r)); /* still waiting upstream */
    broker_send(SB_CMD_CANCEL, json_pack("{s:s}", "job_id", "job_cancel"), NULL);
    CHECK(run_until(has_final, "job_cancel", 3000));
    check_final_error("job_cancel", 499, "cancelled", "job cancelled");
    CHECK_STR(final_upstream("job_cancel"), ""); /* no verdict on the upstream */
    /* The upstream request's connection was closed. */
    CHECK(run_until(rec_closed, r, 3000));
    CHECK_INT(sb_worker_inflight(w), 0);
    /* A CANCEL for a job that is over is ignored. */
    broker_send(SB_CMD_CANCEL, json_pack("{s:s}", "job_id", "job_cancel"), NULL);
    run_for(50);
    CHECK_INT(count_events("job_cancel"), 1);
}

static void test_deadline(void)
{
    int want = srv_n + 1;
    send_job("job_deadline", make_job("openai-chat", "hang", srv_port, NULL), sb_now_ms() + 300);
    CHECK(run_until(has_final, "job_deadline", 3000));
    check_final_error("job_deadline", 504, "timeout", "timeout: upstream did not answer within ");
    CHECK_STR(final_upstream("job_deadline"), "failed");
    CHECK(srv_n == want);
    CHECK(run_until(rec_closed, &srv_recs[want - 1], 3000));
    /* Already past its deadline: refused without an upstream request. */
    send_job("job_late", make_job("openai-chat", "fast", srv_port, NULL), sb_now_ms() - 1);
    CHECK(run_until(has_final, "job_late", 3000));
    check_final_error("job_late", 504, "timeout", "timeout: ");
    CHECK_STR(final_upstream("job_late"), ""); /* never reached it */
    CHECK_INT(srv_n, want);
}

static void test_unreachable(void)
{
    /* A port that was just free: connection refused. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fd, (struct sockaddr *)&sin, sizeof sin);
    socklen_t sl = sizeof sin;
    getsockname(fd, (struct sockaddr *)&sin, &sl);
    close(fd);
    send_job("job_unreach", make_job("openai-chat", "fast", ntohs(sin.sin_port), NULL), 0);
    CHECK(run_until(has_final, "job_unreach", 7000));
    check_final_error("job_unreach", 502, "upstream_error", "upstream connection failed");
    CHECK_STR(final_upstream("job_unreach"), "failed");
}

static void test_upstream_errors(void)
{
    send_job("job_429", make_job("openai-chat", "ratelimit", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_429", 3000));
    check_final_error("job_429", 429, "rate_limit", "Rate limit reached for requests");
    const got_event_t *g = final_of("job_429");
    CHECK(g && json_integer_value(json_object_get(g->ev, "retry_after")) == 3);
    CHECK_STR(final_upstream("job_429"), "ok"); /* busy, not broken */

    send_job("job_404", make_job("openai-chat", "nope", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_404", 3000));
    check_final_error("job_404", 404, "not_found", "no such model");
    CHECK_STR(final_upstream("job_404"), "ok");
}

static void test_bad_jobs(void)
{
    send_job("job_provider", make_job("carrier-pigeon", "fast", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_provider", 3000));
    check_final_error("job_provider", 501, "server_error", "provider kind 'carrier-pigeon' is not supported");

    unsetenv("SB_TEST_MISSING_KEY");
    send_job("job_cred", make_job("openai-chat", "fast", srv_port, "SB_TEST_MISSING_KEY"), 0);
    CHECK(run_until(has_final, "job_cred", 3000));
    check_final_error("job_cred", 502, "upstream_error", "upstream credential 'SB_TEST_MISSING_KEY' is not configured");
    CHECK_STR(final_upstream("job_provider"), "");
    CHECK_STR(final_upstream("job_cred"), "");

    /* A body that is not msgpack. */
    json_t *gh = json_pack("{s:s}", "job_id", "job_garbage");
    CHECK_INT(sb_wire_send(broker, worker_id, SB_CMD_JOB, gh, "\xc1", 1), 0);
    json_decref(gh);
    sb_zsock_ev_poke(broker_watch);
    CHECK(run_until(has_final, "job_garbage", 3000));
    check_final_error("job_garbage", 400, "invalid_request", "job body is not a valid msgpack job");

    /* No body at all, and a job that is not an object. */
    json_t *h = json_pack("{s:s}", "job_id", "job_nobody");
    CHECK_INT(sb_wire_send(broker, worker_id, SB_CMD_JOB, h, NULL, 0), 0);
    json_decref(h);
    sb_zsock_ev_poke(broker_watch);
    CHECK(run_until(has_final, "job_nobody", 3000));
    check_final_error("job_nobody", 400, "invalid_request", "job body");
    send_job("job_array", json_pack("[i]", 1), 0);
    CHECK(run_until(has_final, "job_array", 3000));
    check_final_error("job_array", 400, "invalid_request", "job body");

    /* Translation errors come from the adapter. */
    json_t *job = make_job("openai-chat", "fast", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "tools", json_pack("[{s:s}]", "type", "web_search"));
    send_job("job_tool", job, 0);
    CHECK(run_until(has_final, "job_tool", 3000));
    check_final_error("job_tool", 400, "invalid_request", "tool type 'web_search' is not supported");
    CHECK_STR(final_upstream("job_tool"), "");

    /* An operation the worker does not know. */
    job = make_job("openai-chat", "fast", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "op", json_string("embed"));
    send_job("job_op", job, 0);
    CHECK(run_until(has_final, "job_op", 3000));
    check_final_error("job_op", 400, "invalid_request", "job request.op is not supported");
}

static long long ready_seq(void)
{
    return sb_wire_header_int(&(sb_wire_msg_t){.header = last_ready}, "seq", -1);
}

/* A restarted broker answers each message buffered while it was down with
 * RECONNECT: the worker registers once (the RECONNECTs echoing a seq older
 * than its latest READY are ignored), and its heartbeats carry that seq. */
static void test_reconnect_burst(void)
{
    long long seq = ready_seq();
    CHECK(seq >= 1);
    int before = readies;
    for (int i = 0; i < 10; i++)
        broker_send(SB_CMD_RECONNECT, json_pack("{s:s, s:I}", "epoch", "e1", "seq", (json_int_t)seq), NULL);
    int want = before + 1;
    CHECK(run_until(has_readies, &want, 2000));
    run_for(300);
    CHECK_INT(readies, before + 1);
    CHECK_INT(ready_seq(), seq + 1);
    CHECK_INT(last_hb_seq, seq + 1);
    /* One answering a message sent since that READY is real: READY again. */
    broker_send(SB_CMD_RECONNECT, json_pack("{s:s, s:I}", "epoch", "e1", "seq", (json_int_t)seq + 1), NULL);
    want = before + 2;
    CHECK(run_until(has_readies, &want, 2000));
    run_for(100);
    CHECK_INT(readies, before + 2);
    CHECK_INT(ready_seq(), seq + 2);
    /* One without a seq (nothing to match) is taken as real. */
    broker_send(SB_CMD_RECONNECT, NULL, NULL);
    want = before + 3;
    CHECK(run_until(has_readies, &want, 2000));
}

/* A message from a broker with another epoch than the one our jobs came
 * from: those jobs are gone with their broker, so they are abandoned (no
 * events) rather than run to the end for nobody. */
static void test_epoch_change(sb_worker_t *w)
{
    broker_send(SB_CMD_HEARTBEAT, json_pack("{s:s}", "epoch", "e1"), NULL);
    send_job("job_old_epoch", make_job("openai-chat", "slow300", srv_port, NULL), 0);
    int want = srv_n + 1;
    CHECK(run_until(has_requests, &want, 3000));
    CHECK_INT(sb_worker_inflight(w), 1);
    int before = readies;
    broker_send(SB_CMD_HEARTBEAT, json_pack("{s:s}", "epoch", "e2"), NULL);
    run_for(600); /* the upstream would have answered by now */
    CHECK_INT(sb_worker_inflight(w), 0);
    CHECK_INT(count_events("job_old_epoch"), 0);
    CHECK_INT(readies, before); /* that broker knows us: no READY needed */
    /* Jobs of the new broker run. */
    send_job("job_new_epoch", make_job("openai-chat", "fast", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_new_epoch", 3000));
    CHECK(final_type("job_new_epoch") == SB_EV_COMPLETED);
}

static void test_reconnect(void)
{
    int want = readies + 1;
    broker_send(SB_CMD_RECONNECT, NULL, NULL);
    CHECK(run_until(has_readies, &want, 2000));

    /* A broker that goes silent: the worker drops its socket and comes back
     * with READY on a new connection (a new routing id). */
    zframe_t *old = zframe_dup(worker_id);
    want = readies + 1;
    broker_silent = true;
    CHECK(run_until(has_readies, &want, 3000));
    broker_silent = false;
    CHECK(!zframe_eq(old, worker_id));
    zframe_destroy(&old);
    /* And it works on the new connection. */
    send_job("job_after", make_job("openai-chat", "fast", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_after", 3000));
    CHECK(final_type("job_after") == SB_EV_COMPLETED);
}

static void test_drain(sb_worker_t *w)
{
    send_job("job_drain", make_job("openai-chat", "slow300", srv_port, NULL), 0);
    int want = srv_n + 1;
    CHECK(run_until(has_requests, &want, 3000));
    sb_worker_stop(w);
    CHECK(sb_worker_state(w) == SB_WORKER_DRAINING);
    send_job("job_refused", make_job("openai-chat", "fast", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_refused", 3000));
    check_final_error("job_refused", 503, "overloaded", "worker is shutting down");
    CHECK_STR(final_upstream("job_refused"), "");
    CHECK(!stopped);
    CHECK(run_until(flag_set, &stopped, 3000));
    CHECK(run_until(has_final, "job_drain", 3000));
    CHECK(final_type("job_drain") == SB_EV_COMPLETED);
    CHECK(sb_worker_state(w) == SB_WORKER_STOPPED);
}

/* A second stop while draining fails what is left with 503. */
static void test_forced_stop(sb_worker_t *w)
{
    send_job("job_forced", make_job("openai-chat", "hang", srv_port, NULL), 0);
    int want = srv_n + 1;
    CHECK(run_until(has_requests, &want, 3000));
    stopped = false;
    sb_worker_stop(w);
    run_for(20);
    CHECK(!stopped);
    sb_worker_stop(w);
    CHECK(run_until(flag_set, &stopped, 3000));
    CHECK(run_until(has_final, "job_forced", 3000));
    check_final_error("job_forced", 503, "overloaded", "worker is shutting down");
    CHECK_STR(final_upstream("job_forced"), "");
    CHECK(run_until(rec_closed, &srv_recs[want - 1], 3000));
}

/*
 * Strict structured output and choices.
 */

static const char *const person_schema =
    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"age\":{\"type\":\"integer\"}},"
    "\"required\":[\"name\",\"age\"],\"additionalProperties\":false}";

static json_t *J(const char *text)
{
    json_t *v = json_loads(text, 0, NULL);
    CHECK(v != NULL);
    return v;
}

/* A job for `model` whose request asks for text.format json_schema 'person'. */
static json_t *make_format_job(const char *model, bool strict)
{
    json_t *job = make_job("openai-chat", model, srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "text",
                        json_pack("{s:{s:s, s:s, s:o, s:b}}", "format", "type", "json_schema", "name", "person",
                                  "schema", J(person_schema), "strict", strict));
    return job;
}

/* Sets request.n and route.capabilities (a JSON text, or NULL for none). */
static void set_n(json_t *job, int n, const char *caps)
{
    json_object_set_new((json_t *)sb_job_request(job), "n", json_integer(n));
    if (caps)
        json_object_set_new((json_t *)sb_job_route(job), "capabilities", J(caps));
}

/* The events of job_id in arrival order (borrowed, in a new array). */
static json_t *job_events(const char *job_id)
{
    json_t *arr = json_array();
    for (int i = 0; i < n_events && i < SB_TEST_MAX_EVENTS; i++)
        if (!strcmp(events[i].job_id, job_id))
            json_array_append(arr, events[i].ev);
    return arr;
}

/* The output text of the first message item_done of job_id for choice k. */
static const char *job_text(const char *job_id, int k)
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

static void check_completed(const char *job_id)
{
    const got_event_t *g = final_of(job_id);
    CHECK(g && sb_event_type_of(g->ev) == SB_EV_COMPLETED);
    if (g && sb_event_type_of(g->ev) != SB_EV_COMPLETED) {
        char *d = json_dumps(g->ev, JSON_COMPACT);
        fprintf(stderr, "  job %s final: %s\n", job_id, d);
        free(d);
    }
}

static void test_strict_valid(void)
{
    int first = srv_n;
    send_job("job_sv", make_format_job("json_ok", true), 0);
    CHECK(run_until(has_final, "job_sv", 3000));
    check_completed("job_sv");
    CHECK_INT(srv_n, first + 1);
    CHECK_INT(count_events("job_sv"), 5);
    CHECK_STR(job_text("job_sv", 0), srv_json_ok);
    /* What the upstream saw. */
    json_t *rf = json_object_get(srv_recs[first].body, "response_format");
    CHECK_STR(json_string_value(json_object_get(rf, "type")), "json_schema");
    CHECK(json_is_true(json_object_get(json_object_get(rf, "json_schema"), "strict")));

    /* Not strict: a violation passes through untouched, with no retry. */
    first = srv_n;
    send_job("job_nonstrict", make_format_job("json_bad", false), 0);
    CHECK(run_until(has_final, "job_nonstrict", 3000));
    check_completed("job_nonstrict");
    CHECK_INT(srv_n, first + 1);
    CHECK_STR(job_text("job_nonstrict", 0), srv_json_bad);

    /* A refusal is the model declining, not a violation. */
    first = srv_n;
    send_job("job_refuse", make_format_job("refuse", true), 0);
    CHECK(run_until(has_final, "job_refuse", 3000));
    check_completed("job_refuse");
    CHECK_INT(srv_n, first + 1);
}

static void test_strict_retry(void)
{
    int first = srv_n;
    send_job("job_once", make_format_job("json_once_a", true), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_once", 3000));
    check_completed("job_once");
    CHECK_INT(srv_n, first + 2); /* the upstream saw 2 requests */
    /* Only the second attempt's events reached the broker. */
    CHECK_INT(count_events("job_once"), 5);
    CHECK_STR(job_text("job_once", 0), srv_json_ok);
    if (srv_n == first + 2)
        CHECK(json_equal(srv_recs[first].body, srv_recs[first + 1].body));
}

static void test_strict_fail(void)
{
    int first = srv_n;
    send_job("job_bad", make_format_job("json_bad", true), 0);
    CHECK(run_until(has_final, "job_bad", 3000));
    check_final_error("job_bad", 502, "upstream_error",
                      "The model's output did not match the JSON schema 'person' after 2 attempts: "
                      "$.age: expected integer, got string");
    const got_event_t *g = final_of("job_bad");
    CHECK(g && !strcmp(json_string_value(json_object_get(g->ev, "code")) ?: "", "invalid_structured_output"));
    CHECK(g && strstr(json_string_value(json_object_get(g->ev, "message")) ?: "", "age"));
    CHECK_STR(final_upstream("job_bad"), "ok"); /* the model's fault, not the route's */
    run_for(50);
    CHECK_INT(srv_n, first + 2); /* exactly 2 upstream requests */
}

static void test_strict_tool(void)
{
    json_t *tool = J("{\"type\":\"function\",\"name\":\"get_weather\",\"strict\":true,\"parameters\":{"
                     "\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"],"
                     "\"additionalProperties\":false}}");
    int first = srv_n;
    json_t *job = make_job("openai-chat", "tool_once_b", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "tools", json_pack("[O]", tool));
    send_job("job_tool_once", job, 0);
    CHECK(run_until(has_final, "job_tool_once", 3000));
    check_completed("job_tool_once");
    CHECK_INT(srv_n, first + 2);
    json_t *evs = job_events("job_tool_once");
    const json_t *done = json_array_get(evs, 2);
    CHECK(sb_event_type_of(done) == SB_EV_ITEM_DONE);
    CHECK_STR(json_string_value(json_object_get(json_object_get(done, "item"), "arguments")), "{\"city\":\"Paris\"}");
    json_decref(evs);

    /* The same tool without strict: bad arguments pass through. */
    json_object_set_new(tool, "strict", json_false());
    first = srv_n;
    job = make_job("openai-chat", "tool_once_c", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "tools", json_pack("[O]", tool));
    send_job("job_tool_loose", job, 0);
    CHECK(run_until(has_final, "job_tool_loose", 3000));
    check_completed("job_tool_loose");
    CHECK_INT(srv_n, first + 1);
    json_decref(tool);
}

/* An unusable strict schema is refused before any upstream request. */
static void test_strict_unusable(void)
{
    int first = srv_n;
    json_t *job = make_format_job("json_ok", true);
    json_object_set_new(json_object_get(json_object_get((json_t *)sb_job_request(job), "text"), "format"), "schema",
                        J("{\"type\":\"string\",\"pattern\":\"(?=x)\"}")); /* lookahead: unsupported */
    send_job("job_unusable", job, 0);
    CHECK(run_until(has_final, "job_unusable", 3000));
    check_final_error("job_unusable", 400, "invalid_request",
                      "text.format.schema 'person' is not a usable JSON Schema: ");
    run_for(20);
    CHECK_INT(srv_n, first);
}

/* Cancelling while the retry is upstream stops it. */
static void test_strict_cancel_retry(sb_worker_t *w)
{
    int first = srv_n, want = srv_n + 2;
    send_job("job_retry_cancel", make_format_job("json_hang_c", true), 0);
    CHECK(run_until(has_requests, &want, 3000));
    run_for(20);
    CHECK_INT(sb_worker_inflight(w), 1);
    CHECK(!has_final("job_retry_cancel"));
    broker_send(SB_CMD_CANCEL, json_pack("{s:s}", "job_id", "job_retry_cancel"), NULL);
    CHECK(run_until(has_final, "job_retry_cancel", 3000));
    check_final_error("job_retry_cancel", 499, "cancelled", "job cancelled");
    CHECK(run_until(rec_closed, &srv_recs[first + 1], 3000));
    CHECK_INT(sb_worker_inflight(w), 0);
    run_for(50);
    CHECK_INT(srv_n, first + 2);

    /* And the retry keeps to the job's deadline. */
    first = srv_n;
    send_job("job_retry_deadline", make_format_job("json_hang_d", true), sb_now_ms() + 400);
    CHECK(run_until(has_final, "job_retry_deadline", 3000));
    check_final_error("job_retry_deadline", 504, "timeout", "timeout: upstream did not answer within ");
    CHECK_INT(srv_n, first + 2);
    CHECK(run_until(rec_closed, &srv_recs[first + 1], 3000));
}

/* An upstream that can do n gets one request with n. */
static void test_n_native(void)
{
    int first = srv_n;
    json_t *job = make_job("openai-chat", "multi", srv_port, NULL);
    set_n(job, 2, "{\"n\":true}");
    send_job("job_native_n", job, 0);
    CHECK(run_until(has_final, "job_native_n", 3000));
    check_completed("job_native_n");
    CHECK_INT(srv_n, first + 1);
    CHECK_INT(json_integer_value(json_object_get(srv_recs[first].body, "n")), 2);
    CHECK_STR(job_text("job_native_n", 0), "Hello");
    CHECK_STR(job_text("job_native_n", 1), "Hello #1");
}

/* capabilities {"n":false}: n concurrent requests without n, merged. */
static void test_fanout(void)
{
    int first = srv_n;
    json_t *job = make_job("openai-chat", "single_a", srv_port, NULL);
    set_n(job, 3, "{\"n\":false}");
    send_job("job_fan", job, 0);
    CHECK(run_until(has_final, "job_fan", 3000));
    check_completed("job_fan");
    CHECK_INT(srv_n, first + 3);
    int64_t last_recv = 0, first_reply = INT64_MAX;
    for (int i = first; i < srv_n; i++) {
        CHECK(json_object_get(srv_recs[i].body, "n") == NULL);
        if (srv_recs[i].recv_us > last_recv)
            last_recv = srv_recs[i].recv_us;
        if (srv_recs[i].reply_us < first_reply)
            first_reply = srv_recs[i].reply_us;
    }
    CHECK(last_recv < first_reply); /* concurrent */

    /* Choices 0..2, each with its items (index 0) and a choice_done; one
     * usage summed over the calls; the final last. */
    json_t *evs = job_events("job_fan");
    int done[3] = {0}, usage = 0;
    bool text_seen[3] = {false};
    size_t i;
    json_t *ev;
    json_array_foreach (evs, i, ev) {
        enum sb_event_type t = sb_event_type_of(ev);
        int k = sb_event_choice(ev);
        CHECK(k >= 0 && k < 3);
        if (k < 0 || k > 2)
            continue;
        if (t == SB_EV_ITEM_ADDED || t == SB_EV_TEXT_DELTA || t == SB_EV_ITEM_DONE) {
            CHECK(json_is_integer(json_object_get(ev, "choice")));
            CHECK_INT(json_integer_value(json_object_get(ev, "item_index")), 0);
            CHECK(!done[k]);
            text_seen[k] |= t == SB_EV_TEXT_DELTA;
        } else if (t == SB_EV_CHOICE_DONE) {
            done[k]++;
            CHECK_STR(json_string_value(json_object_get(ev, "status")), "completed");
        } else if (t == SB_EV_USAGE) {
            usage++;
            CHECK_INT(json_integer_value(json_object_get(ev, "input_tokens")), 15);
            CHECK_INT(json_integer_value(json_object_get(ev, "output_tokens")), 6);
        }
        CHECK((t == SB_EV_COMPLETED) == (i == json_array_size(evs) - 1));
    }
    for (int k = 0; k < 3; k++) {
        CHECK_INT(done[k], 1);
        CHECK(text_seen[k]);
        CHECK(job_text("job_fan", k) && !strncmp(job_text("job_fan", k), "Hello ", 6));
    }
    CHECK_INT(usage, 1);
    CHECK_INT(json_array_size(evs), 3 * 4 + 2);
    json_decref(evs);

    /* Without the capability flag the same model refuses n (one request). */
    first = srv_n;
    job = make_job("openai-chat", "single_b", srv_port, NULL);
    set_n(job, 3, NULL);
    send_job("job_fan_nocap", job, 0);
    CHECK(run_until(has_final, "job_fan_nocap", 3000));
    check_final_error("job_fan_nocap", 400, "invalid_request", "n must be 1 for this model");
    CHECK_INT(srv_n, first + 1);
}

/* One failing call fails the job and cancels the others. */
static void test_fanout_fail(void)
{
    int first = srv_n;
    json_t *job = make_job("openai-chat", "single_fail", srv_port, NULL);
    set_n(job, 3, "{\"n\":false}");
    send_job("job_fan_fail", job, 0);
    CHECK(run_until(has_final, "job_fan_fail", 3000));
    check_final_error("job_fan_fail", 500, "upstream_error", "boom");
    CHECK_STR(final_upstream("job_fan_fail"), "failed");
    CHECK_INT(srv_n, first + 3);
    for (int i = first; i < first + 3; i++)
        if (srv_recs[i].req) /* the two left hanging */
            CHECK(run_until(rec_closed, &srv_recs[i], 3000));
}

/* Validation applies to each call of a fan-out: one bad choice retries alone. */
static void test_fanout_strict(void)
{
    int first = srv_n;
    json_t *job = make_format_job("json_once_fan", true);
    set_n(job, 3, "{\"n\":false}");
    send_job("job_fan_strict", job, 0);
    CHECK(run_until(has_final, "job_fan_strict", 3000));
    check_completed("job_fan_strict");
    CHECK_INT(srv_n, first + 4);
    for (int k = 0; k < 3; k++)
        CHECK_STR(job_text("job_fan_strict", k), srv_json_ok);
}

/* A count job on an upstream without a counting endpoint: one one-token
 * generation (never fanned out, never strict-checked or retried), and only
 * its usage and completed go back. */
static void test_count_by_generation(void)
{
    int first = srv_n;
    json_t *job = make_format_job("json_bad", true); /* strict would retry json_bad */
    set_n(job, 3, "{\"n\":false}");                  /* a fan-out would make 3 calls */
    json_object_set_new((json_t *)sb_job_request(job), "op", json_string(SB_JOB_OP_COUNT_TOKENS));
    json_object_set_new((json_t *)sb_job_request(job), "max_output_tokens", json_integer(500));
    send_job("job_count", job, 0);
    CHECK(run_until(has_final, "job_count", 3000));
    check_completed("job_count");
    CHECK_INT(srv_n, first + 1);
    CHECK_INT(json_integer_value(json_object_get(srv_recs[first].body, "max_tokens")), 1);
    CHECK(json_object_get(srv_recs[first].body, "n") == NULL);
    CHECK(json_object_get(srv_recs[first].body, "op") == NULL);
    json_t *evs = job_events("job_count");
    CHECK_INT(json_array_size(evs), 2);
    CHECK(sb_event_type_of(json_array_get(evs, 0)) == SB_EV_USAGE);
    CHECK_INT(json_integer_value(json_object_get(json_array_get(evs, 0), "input_tokens")), 5);
    json_decref(evs);
}

/* A streamed job whose upstream sends nothing is ended by the stream idle
 * timeout (300 ms here) with a 504, and its upstream request is closed. */
static void test_stream_idle(sb_worker_t *w)
{
    int want = srv_n + 1;
    json_t *job = make_job("openai-chat", "hang", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "stream", json_true());
    int64_t t0 = sb_mono_ms();
    send_job("job_stream_idle", job, sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_stream_idle", 3000));
    int64_t took = sb_mono_ms() - t0;
    check_final_error("job_stream_idle", 504, "timeout", "timeout: the upstream stream sent nothing for 300 ms");
    CHECK_STR(final_upstream("job_stream_idle"), "failed");
    CHECK(took >= 250 && took < 2000);
    CHECK(srv_n == want);
    CHECK(run_until(rec_closed, &srv_recs[want - 1], 3000));
    CHECK_INT(sb_worker_inflight(w), 0);
    /* A job that does not stream has no idle limit, only its timeout. */
    send_job("job_nostream_slow", make_job("openai-chat", "slow300", srv_port, NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_nostream_slow", 3000));
    check_completed("job_nostream_slow");
}

/* Streamed strict output cannot be held back: the events go on as they come,
 * the check runs at the end, and a violation ends the stream with 502 after
 * one attempt (a retry could not take back what the client has seen). */
static void test_stream_strict(void)
{
    int first = srv_n;
    json_t *job = make_format_job("json_bad", true);
    json_object_set_new((json_t *)sb_job_request(job), "stream", json_true());
    send_job("job_stream_strict", job, 0);
    CHECK(run_until(has_final, "job_stream_strict", 3000));
    /* item_added, text_delta, item_done, usage went out before the check. */
    check_final_error_after("job_stream_strict", 4, 502, "upstream_error",
                            "The model's output did not match the JSON schema 'person' after 1 attempts: ");
    CHECK_INT(srv_n, first + 1);
    CHECK_STR(job_text("job_stream_strict", 0), srv_json_bad); /* it was streamed */

    first = srv_n;
    job = make_format_job("json_ok", true);
    json_object_set_new((json_t *)sb_job_request(job), "stream", json_true());
    send_job("job_stream_strict_ok", job, 0);
    CHECK(run_until(has_final, "job_stream_strict_ok", 3000));
    check_completed("job_stream_strict_ok");
    CHECK_STR(job_text("job_stream_strict_ok", 0), srv_json_ok);
    CHECK_INT(srv_n, first + 1);
}

/*
 * Upstream resilience: retries, the retry budget, route outcomes, context
 * errors. The worker here retries after 20..80 ms (retry_base_ms 20,
 * retry_cap_ms 80) up to twice per call, within a budget of 0.2 retries per
 * call and route, which starts empty: a test earns its route one retry with
 * five "warm" calls first.
 */

/* Five successful calls on the route of `model` at `port`: one retry token. */
static void warm_route(const char *model, int port)
{
    for (int i = 0; i < 5; i++) {
        char id[64];
        snprintf(id, sizeof id, "warm_%s_%d_%d", model, port, i);
        send_job(id, make_job_text("openai-chat", model, port, NULL, "warm"), 0);
        CHECK(run_until(has_final, id, 3000));
        check_completed(id);
    }
}

/* A 503 is retried once the route has a token, and the client sees only
 * the answer of the attempt that worked. Without a token it is not. */
static void test_retry_503(void)
{
    warm_route("fail503_once_a", srv_port);
    int first = srv_n;
    send_job("job_r503", make_job("openai-chat", "fail503_once_a", srv_port, NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_r503", 3000));
    check_completed("job_r503");
    CHECK_INT(srv_n, first + 2);
    CHECK_INT(count_events("job_r503"), 5);
    CHECK_STR(job_text("job_r503", 0), "Hello!");
    CHECK_STR(final_upstream("job_r503"), "ok");
    if (srv_n == first + 2) /* the same request again */
        CHECK(json_equal(srv_recs[first].body, srv_recs[first + 1].body));

    /* A route nobody has called yet has no budget: no retry. */
    first = srv_n;
    send_job("job_r503_cold", make_job("openai-chat", "fail503_once_b", srv_port, NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_r503_cold", 3000));
    check_final_error("job_r503_cold", 503, "overloaded", "The engine is currently overloaded");
    CHECK_STR(final_upstream("job_r503_cold"), "failed");
    run_for(200);
    CHECK_INT(srv_n, first + 1);
}

/* A streamed job is retried too while nothing of it has been sent. */
static void test_retry_stream_before_events(void)
{
    warm_route("fail503_once_c", srv_port);
    int first = srv_n;
    json_t *job = make_job("openai-chat", "fail503_once_c", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "stream", json_true());
    send_job("job_r503_stream", job, sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_r503_stream", 3000));
    check_completed("job_r503_stream");
    CHECK_INT(srv_n, first + 2);
    CHECK_STR(job_text("job_r503_stream", 0), "Hello!");
}

/* ... but not once the client has seen an event: a stream that breaks after
 * its first chunk ends with an error, after what was sent. */
static void test_no_retry_after_events(void)
{
    warm_route("stream_reset_a", srv_port);
    int first = srv_n;
    json_t *job = make_job("openai-chat", "stream_reset_a", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "stream", json_true());
    send_job("job_stream_reset", job, sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_stream_reset", 3000));
    CHECK(count_events("job_stream_reset") >= 2); /* item_added, text_delta "Hel" */
    const got_event_t *g = final_of("job_stream_reset");
    CHECK(g && sb_event_type_of(g->ev) == SB_EV_ERROR);
    CHECK(g && json_integer_value(json_object_get(g->ev, "status")) == 502);
    CHECK_STR(final_upstream("job_stream_reset"), "failed");
    run_for(300);
    CHECK_INT(srv_n, first + 1);
}

/* A connection closed without a reply is retried. The listener closes every
 * connection after its answer, so the first attempt was on a fresh one and
 * curl did not re-send it by itself: the second request is the worker's. */
static void test_retry_reset(void)
{
    warm_route("reset_once_a", srv_fresh_port);
    int first = srv_n;
    send_job("job_reset", make_job("openai-chat", "reset_once_a", srv_fresh_port, NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_reset", 3000));
    check_completed("job_reset");
    CHECK_INT(srv_n, first + 2);
    CHECK_STR(final_upstream("job_reset"), "ok");
    if (srv_n == first + 2)
        CHECK(srv_recs[first].peer_port != srv_recs[first + 1].peer_port);
}

/* Retry-After is the floor of the delay. */
static void test_retry_after(void)
{
    warm_route("ratelimit_once_a", srv_port);
    int first = srv_n;
    send_job("job_ra", make_job("openai-chat", "ratelimit_once_a", srv_port, NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_ra", 4000));
    check_completed("job_ra");
    CHECK_INT(srv_n, first + 2);
    if (srv_n == first + 2) {
        int64_t gap_ms = (srv_recs[first + 1].recv_us - srv_recs[first].reply_us) / 1000;
        /* 10 ms of slack: libevent may time with a coarse clock, a tick
         * behind the one sb_mono_us reads. */
        CHECK(gap_ms >= 990);
        CHECK(gap_ms < 1500); /* Retry-After, not Retry-After on top of a backoff of seconds */
        if (gap_ms < 990 || gap_ms >= 1500)
            fprintf(stderr, "  retry came %lld ms after the 429\n", (long long)gap_ms);
    }
}

/* No retry that would start past the deadline: the 429 goes to the client
 * at once rather than after a 1 s wait the client cannot afford. */
static void test_retry_deadline(void)
{
    warm_route("ratelimit_once_b", srv_port);
    int first = srv_n;
    int64_t t0 = sb_mono_ms();
    send_job("job_ra_late", make_job("openai-chat", "ratelimit_once_b", srv_port, NULL), sb_now_ms() + 700);
    CHECK(run_until(has_final, "job_ra_late", 3000));
    CHECK(sb_mono_ms() - t0 < 500);
    check_final_error("job_ra_late", 429, "rate_limit", "Rate limit reached for requests");
    CHECK_STR(final_upstream("job_ra_late"), "ok");
    run_for(1200);
    CHECK_INT(srv_n, first + 1);

    /* A retry's transfer gets what is left before the deadline, not the
     * route's 10 s: a retry that hangs ends at the job's deadline. */
    warm_route("fail503_hang_a", srv_port);
    first = srv_n;
    t0 = sb_mono_ms();
    send_job("job_retry_hang", make_job("openai-chat", "fail503_hang_a", srv_port, NULL), sb_now_ms() + 800);
    CHECK(run_until(has_final, "job_retry_hang", 3000));
    int64_t took = sb_mono_ms() - t0;
    check_final_error("job_retry_hang", 504, "timeout", "timeout: upstream did not answer within ");
    CHECK(took >= 700 && took < 1500);
    CHECK_STR(final_upstream("job_retry_hang"), "failed");
    CHECK_INT(srv_n, first + 2);
    /* "... within <ms> ms": the retry's timeout, cut to the deadline. */
    const got_event_t *g = final_of("job_retry_hang");
    static const char prefix[] = "timeout: upstream did not answer within ";
    const char *msg = g ? json_string_value(json_object_get(g->ev, "message")) : NULL;
    long long ms = msg && !strncmp(msg, prefix, sizeof prefix - 1) ? strtoll(msg + sizeof prefix - 1, NULL, 10) : 0;
    CHECK(ms > 0 && ms < 800);
    if (srv_n == first + 2)
        CHECK(run_until(rec_closed, &srv_recs[first + 1], 3000));
}

/* A cancel while a retry waits: the retry never happens. */
static void test_retry_cancel(void)
{
    warm_route("ratelimit_once_c", srv_port);
    int first = srv_n, want = srv_n + 1;
    send_job("job_ra_cancel", make_job("openai-chat", "ratelimit_once_c", srv_port, NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_requests, &want, 3000));
    run_for(200); /* the 429 is in; the retry waits out Retry-After: 1 */
    CHECK(!has_final("job_ra_cancel"));
    broker_send(SB_CMD_CANCEL, json_pack("{s:s}", "job_id", "job_ra_cancel"), NULL);
    CHECK(run_until(has_final, "job_ra_cancel", 3000));
    check_final_error("job_ra_cancel", 499, "cancelled", "job cancelled");
    CHECK_STR(final_upstream("job_ra_cancel"), "");
    run_for(1200);
    CHECK_INT(srv_n, first + 1);
}

/* N jobs against an upstream that always fails: at most 1.2 N requests
 * (the budget), at least N, and the budget is used (a retry happened). */
static void test_retry_budget(void)
{
    enum { N = 10 };
    int first = srv_n;
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof id, "job_down_%d", i);
        send_job(id, make_job("openai-chat", "fail503_always", srv_port, NULL), sb_now_ms() + 5000);
        CHECK(run_until(has_final, id, 3000));
        check_final_error(id, 503, "overloaded", "The engine is currently overloaded");
        CHECK_STR(final_upstream(id), "failed");
    }
    run_for(200);
    int requests = srv_n - first;
    CHECK(requests >= N);
    CHECK(requests <= N * 12 / 10);
    CHECK(requests > N);
    if (requests <= N || requests > N * 12 / 10)
        fprintf(stderr, "  %d jobs made %d upstream requests\n", N, requests);
}

/* Each call of a fan-out retries on its own, even after another choice has
 * finished (a non-streamed job has sent nothing yet). */
static void test_retry_fanout(void)
{
    warm_route("fail503_second_a", srv_port);
    int first = srv_n;
    json_t *job = make_job("openai-chat", "fail503_second_a", srv_port, NULL);
    set_n(job, 3, "{\"n\":false}");
    send_job("job_fan_retry", job, sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_fan_retry", 3000));
    check_completed("job_fan_retry");
    CHECK_INT(srv_n, first + 4);
    for (int k = 0; k < 3; k++)
        CHECK(job_text("job_fan_retry", k) && !strncmp(job_text("job_fan_retry", k), "Hello ", 6));
    CHECK_STR(final_upstream("job_fan_retry"), "ok");
}

/* The upstream's context-length error is the canonical one; never retried. */
static void test_context_exceeded(void)
{
    warm_route("ctx_exceeded", srv_port);
    int first = srv_n;
    send_job("job_ctx", make_job("openai-chat", "ctx_exceeded", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_ctx", 3000));
    check_final_error("job_ctx", 400, "invalid_request",
                      "context length exceeded: This model's maximum context length is 8192 tokens.");
    const got_event_t *g = final_of("job_ctx");
    CHECK(g && !strcmp(json_string_value(json_object_get(g->ev, "code")) ?: "", "context_length_exceeded"));
    CHECK_STR(final_upstream("job_ctx"), "ok");
    run_for(100);
    CHECK_INT(srv_n, first + 1);
}

/* A host that takes no connections fails within the connect timeout (500 ms
 * here), not the route's 10 s, as a connection failure. */
static void test_connect_timeout(void)
{
    /* A listener whose accept queue is full: the kernel drops new SYNs. */
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(lfd, (struct sockaddr *)&sin, sizeof sin) == 0);
    CHECK(listen(lfd, 0) == 0);
    socklen_t sl = sizeof sin;
    getsockname(lfd, (struct sockaddr *)&sin, &sl);
    int fill[3];
    for (int i = 0; i < 3; i++) {
        fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fill[i], (struct sockaddr *)&sin, sizeof sin);
    }
    run_for(50);
    int64_t t0 = sb_mono_ms();
    send_job("job_blackhole", make_job("openai-chat", "fast", ntohs(sin.sin_port), NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_blackhole", 4000));
    int64_t took = sb_mono_ms() - t0;
    check_final_error("job_blackhole", 502, "upstream_error", "upstream connection failed");
    CHECK(took >= 400 && took < 2000);
    CHECK_STR(final_upstream("job_blackhole"), "failed");
    for (int i = 0; i < 3; i++)
        close(fill[i]);
    close(lfd);
}

int main(void)
{
    zsys_handler_set(NULL);
    signal(SIGPIPE, SIG_IGN); /* the fake upstream writes to connections it has closed */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    base = event_base_new();
    struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
    struct timeval tv = {0, 10000};
    event_add(tick, &tv);
    srv_start();

    broker = zsock_new(ZMQ_ROUTER);
    zsock_set_router_mandatory(broker, 1);
    CHECK(zsock_bind(broker, "inproc://test-worker-broker") == 0);
    broker_watch = sb_zsock_ev_new(base, broker, true, broker_on_msg, NULL);

    sb_worker_config_t cfg = {.endpoint = "inproc://test-worker-broker",
                              .models = " m1, m2 ,",
                              .credits = 4,
                              .name = "test-worker",
                              .heartbeat_ms = 50,
                              .connect_timeout_ms = 500,
                              .stream_idle_ms = 300,
                              .retry_base_ms = 20,
                              .retry_cap_ms = 80,
                              .on_stopped = on_stopped};
    sb_worker_t *w = sb_worker_new(&cfg, base);
    CHECK(w != NULL);

    test_ready();
    test_simple_job();
    test_reuse();
    test_concurrent();
    test_cancel(w);
    test_deadline();
    test_unreachable();
    test_upstream_errors();
    test_bad_jobs();
    test_strict_valid();
    test_strict_retry();
    test_strict_fail();
    test_strict_tool();
    test_strict_unusable();
    test_strict_cancel_retry(w);
    test_n_native();
    test_fanout();
    test_fanout_fail();
    test_fanout_strict();
    test_count_by_generation();
    test_stream_idle(w);
    test_stream_strict();
    test_retry_503();
    test_retry_stream_before_events();
    test_no_retry_after_events();
    test_retry_reset();
    test_retry_after();
    test_retry_deadline();
    test_retry_cancel();
    test_retry_budget();
    test_retry_fanout();
    test_context_exceeded();
    test_connect_timeout();
    test_reconnect_burst();
    test_epoch_change(w);
    test_reconnect();
    test_drain(w);
    sb_worker_destroy(&w);
    CHECK(w == NULL);

    /* A second worker for the forced stop. */
    int want = readies + 1;
    w = sb_worker_new(&cfg, base);
    CHECK(run_until(has_readies, &want, 2000));
    test_forced_stop(w);
    sb_worker_destroy(&w);

    /* A bad endpoint fails cleanly. */
    sb_worker_config_t bad = {.endpoint = "nonsense://x"};
    CHECK(sb_worker_new(&bad, base) == NULL);

    for (int i = 0; i < n_events && i < SB_TEST_MAX_EVENTS; i++)
        json_decref(events[i].ev);
    json_decref(last_ready);
    zframe_destroy(&worker_id);
    sb_zsock_ev_destroy(&broker_watch);
    zsock_destroy(&broker);
    srv_stop();
    event_free(tick);
    event_base_free(base);
    curl_global_cleanup();
    return sb_test_finish("worker");
}

/*
 * sb_emu_test: what the emulator unit tests (test_emulator.c,
 * test_emulator_faults.c) share: libsbemulator on an ephemeral loopback port
 * with its event loop on a helper thread, a small blocking libcurl client,
 * and readers for its stats and Chat Completions answers and streams.
 */
#ifndef SB_EMU_TEST_H
#define SB_EMU_TEST_H

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "emu.h"
#include "sb_test.h"
#include "sb_time.h"

#define KEY "sk-emu-test"

struct server {
    struct event_base *base;
    struct sb_emu *open_emu;  /* no key */
    struct sb_emu *keyed_emu; /* --require-key KEY, 4 KiB body limit */
    struct event *stop_ev;
    int stop_pipe[2];
    pthread_t thread;
};

static inline void on_stop(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopbreak(arg);
}

static inline void *loop_main(void *arg)
{
    struct server *s = arg;
    event_base_dispatch(s->base);
    return NULL;
}

static inline int server_start(struct server *s)
{
    memset(s, 0, sizeof *s);
    s->base = event_base_new();
    struct sb_emu_config open_cfg = {.host = "127.0.0.1", .port = 0};
    struct sb_emu_config keyed_cfg = {.host = "127.0.0.1", .port = 0, .require_key = KEY, .max_body = 4096};
    s->open_emu = sb_emu_new(s->base, &open_cfg);
    s->keyed_emu = sb_emu_new(s->base, &keyed_cfg);
    if (!s->open_emu || !s->keyed_emu || pipe(s->stop_pipe) < 0)
        return -1;
    s->stop_ev = event_new(s->base, s->stop_pipe[0], EV_READ, on_stop, s->base);
    event_add(s->stop_ev, NULL);
    return pthread_create(&s->thread, NULL, loop_main, s) == 0 ? 0 : -1;
}

static inline void server_stop(struct server *s)
{
    if (write(s->stop_pipe[1], "x", 1) != 1)
        return;
    pthread_join(s->thread, NULL);
    event_free(s->stop_ev);
    close(s->stop_pipe[0]);
    close(s->stop_pipe[1]);
    sb_emu_destroy(&s->open_emu);
    sb_emu_destroy(&s->keyed_emu);
    CHECK(s->open_emu == NULL);
    event_base_free(s->base);
}

/* ---- a tiny blocking HTTP client ------------------------------------------------- */

struct resp {
    long status;
    char *body;
    size_t len;
    char *headers;
    size_t hlen;
    CURLcode rc;
};

static inline size_t append(char **buf, size_t *len, const char *data, size_t n)
{
    *buf = realloc(*buf, *len + n + 1);
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
    return n;
}

static inline size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct resp *r = arg;
    return append(&r->body, &r->len, data, size * nmemb);
}

static inline size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    struct resp *r = arg;
    return append(&r->headers, &r->hlen, data, size * nmemb);
}

static inline int port_of(struct sb_emu *emu)
{
    return sb_emu_port(emu);
}

/* One request; content_type NULL sends application/json when there is a body. */
static inline struct resp http(struct sb_emu *emu, const char *method, const char *path, const char *body,
                               const char *auth, const char *content_type, long timeout_ms)
{
    struct resp r = {0};
    r.body = calloc(1, 1);
    r.headers = calloc(1, 1);
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port_of(emu), path);
    CURL *c = curl_easy_init();
    struct curl_slist *h = NULL;
    if (body)
        h = curl_slist_append(h, content_type ? content_type : "Content-Type: application/json");
    if (auth)
        h = curl_slist_append(h, auth);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms ? timeout_ms : 5000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    r.rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    return r;
}

static inline void resp_free(struct resp *r)
{
    free(r->body);
    free(r->headers);
}

static inline json_t *chat(struct sb_emu *emu, const char *body, long *status)
{
    struct resp r = http(emu, "POST", "/v1/chat/completions", body, NULL, NULL, 0);
    *status = r.status;
    json_t *j = json_loads(r.body, 0, NULL);
    resp_free(&r);
    return j;
}

static const char *jstr(json_t *root, const char *path_fmt)
{
    json_t *v = json_object_get(root, path_fmt);
    return json_string_value(v);
}

static inline json_t *first_message(json_t *resp)
{
    return json_object_get(json_array_get(json_object_get(resp, "choices"), 0), "message");
}

static inline json_t *get_stats(struct sb_emu *emu)
{
    struct resp r = http(emu, "GET", "/_emu/stats", NULL, NULL, NULL, 0);
    json_t *j = json_loads(r.body, 0, NULL);
    resp_free(&r);
    return j;
}

static inline long long stat_of(struct sb_emu *emu, const char *name)
{
    json_t *s = get_stats(emu);
    long long v = json_integer_value(json_object_get(s, name));
    json_decref(s);
    return v;
}

static inline long long usage_of(json_t *resp, const char *field)
{
    return json_integer_value(json_object_get(json_object_get(resp, "usage"), field));
}

/* Per-choice text accumulated from an SSE body, and the order the fields arrived in. */
struct streamed {
    char content[4][512];
    char reasoning[4][512];
    char refusal[4][512];
    int first_content_event[4], last_reasoning_event[4];
    int content_with_logprobs;
    const char *finish[4];
    json_t *finish_keep;
    bool usage;
    bool done;
};

static inline void parse_stream(char *body, struct streamed *out)
{
    memset(out, 0, sizeof *out);
    out->finish_keep = json_array();
    for (int i = 0; i < 4; i++)
        out->first_content_event[i] = -1;
    int ev = 0;
    for (char *line = strtok(body, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "data: ", 6) != 0)
            continue;
        ev++;
        if (!strcmp(line + 6, "[DONE]")) {
            out->done = true;
            break;
        }
        json_t *c = json_loads(line + 6, 0, NULL);
        CHECK(c != NULL);
        if (json_is_object(json_object_get(c, "usage")))
            out->usage = true;
        json_t *ch = json_array_get(json_object_get(c, "choices"), 0);
        size_t idx = (size_t)json_integer_value(json_object_get(ch, "index"));
        if (ch && idx < 4) {
            json_t *delta = json_object_get(ch, "delta");
            const char *piece = json_string_value(json_object_get(delta, "content"));
            if (piece && *piece) {
                strncat(out->content[idx], piece, sizeof out->content[idx] - strlen(out->content[idx]) - 1);
                if (out->first_content_event[idx] < 0)
                    out->first_content_event[idx] = ev;
                if (json_is_object(json_object_get(ch, "logprobs")))
                    out->content_with_logprobs++;
            }
            piece = json_string_value(json_object_get(delta, "reasoning_content"));
            if (piece) {
                strncat(out->reasoning[idx], piece, sizeof out->reasoning[idx] - strlen(out->reasoning[idx]) - 1);
                out->last_reasoning_event[idx] = ev;
            }
            piece = json_string_value(json_object_get(delta, "refusal"));
            if (piece)
                strncat(out->refusal[idx], piece, sizeof out->refusal[idx] - strlen(out->refusal[idx]) - 1);
            json_t *fr = json_object_get(ch, "finish_reason");
            if (json_is_string(fr)) {
                json_array_append(out->finish_keep, fr);
                out->finish[idx] = json_string_value(fr);
            }
        }
        json_decref(c);
    }
}

#endif

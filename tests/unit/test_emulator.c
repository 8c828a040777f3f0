/*
 * Unit test of the upstream emulator: libsbemulator runs in-process on an
 * ephemeral loopback port (its event loop on a helper thread, which alone
 * touches the event_base), and libcurl drives it over real HTTP.
 */
#include <curl/curl.h>
#include <event2/event.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "emu.h"
#include "sb_test.h"
#include "sb_time.h"

#define KEY "sk-emu-test"

struct server {
    struct event_base *base;
    struct sb_emu *open_emu;   /* no key */
    struct sb_emu *keyed_emu;  /* --require-key KEY, 4 KiB body limit */
    struct event *stop_ev;
    int stop_pipe[2];
    pthread_t thread;
};

static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    event_base_loopbreak(arg);
}

static void *loop_main(void *arg)
{
    struct server *s = arg;
    event_base_dispatch(s->base);
    return NULL;
}

static int server_start(struct server *s)
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

static void server_stop(struct server *s)
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

static size_t append(char **buf, size_t *len, const char *data, size_t n)
{
    *buf = realloc(*buf, *len + n + 1);
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
    return n;
}

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
    struct resp *r = arg;
    return append(&r->body, &r->len, data, size * nmemb);
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
    struct resp *r = arg;
    return append(&r->headers, &r->hlen, data, size * nmemb);
}

static int port_of(struct sb_emu *emu)
{
    return sb_emu_port(emu);
}

/* One request; content_type NULL sends application/json when there is a body. */
static struct resp http(struct sb_emu *emu, const char *method, const char *path, const char *body,
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

static void resp_free(struct resp *r)
{
    free(r->body);
    free(r->headers);
}

static json_t *chat(struct sb_emu *emu, const char *body, long *status)
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

static json_t *first_message(json_t *resp)
{
    return json_object_get(json_array_get(json_object_get(resp, "choices"), 0), "message");
}

static json_t *get_stats(struct sb_emu *emu)
{
    struct resp r = http(emu, "GET", "/_emu/stats", NULL, NULL, NULL, 0);
    json_t *j = json_loads(r.body, 0, NULL);
    resp_free(&r);
    return j;
}

static long long stat_of(struct sb_emu *emu, const char *name)
{
    json_t *s = get_stats(emu);
    long long v = json_integer_value(json_object_get(s, name));
    json_decref(s);
    return v;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_echo(struct sb_emu *emu)
{
    long st;
    json_t *j = chat(emu, "{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                          "{\"role\":\"user\",\"content\":\"hello  world\"}]}", &st);
    CHECK_INT(st, 200);
    CHECK(j != NULL);
    CHECK(!strncmp(jstr(j, "id") ? jstr(j, "id") : "", "chatcmpl-", 9));
    CHECK_STR(jstr(j, "object"), "chat.completion");
    CHECK_STR(jstr(j, "model"), "gpt-x");
    CHECK(json_is_integer(json_object_get(j, "created")));
    CHECK(json_is_null(json_object_get(j, "system_fingerprint")));
    json_t *choice = json_array_get(json_object_get(j, "choices"), 0);
    CHECK_INT(json_integer_value(json_object_get(choice, "index")), 0);
    CHECK_STR(jstr(choice, "finish_reason"), "stop");
    CHECK(json_is_null(json_object_get(choice, "logprobs")));
    json_t *msg = first_message(j);
    CHECK_STR(jstr(msg, "role"), "assistant");
    CHECK_STR(jstr(msg, "content"), "You said: hello  world");
    CHECK(json_is_null(json_object_get(msg, "refusal")));
    json_t *u = json_object_get(j, "usage");
    CHECK_INT(json_integer_value(json_object_get(u, "prompt_tokens")), (4 + 2) + (4 + 2));
    CHECK_INT(json_integer_value(json_object_get(u, "completion_tokens")), 4);
    CHECK_INT(json_integer_value(json_object_get(u, "total_tokens")), 16);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(u, "completion_tokens_details"), "reasoning_tokens")),
              0);
    json_decref(j);

    /* Text parts are joined by one space; n gives n choices. */
    j = chat(emu, "{\"model\":\"m\",\"n\":3,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
                  "\"text\":\"a\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"data:,\"}},{\"type\":\"text\","
                  "\"text\":\"b\"}]}]}", &st);
    CHECK_INT(st, 200);
    CHECK_INT(json_array_size(json_object_get(j, "choices")), 3);
    CHECK_INT(json_integer_value(json_object_get(json_array_get(json_object_get(j, "choices"), 2), "index")), 2);
    CHECK_STR(jstr(first_message(j), "content"), "You said: a b");
    json_decref(j);
}

static void test_validation(struct sb_emu *emu)
{
    long st;
    json_t *j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"robot\",\"content\":\"hi\"}]}", &st);
    CHECK_INT(st, 400);
    json_t *err = json_object_get(j, "error");
    CHECK_STR(jstr(err, "type"), "invalid_request_error");
    CHECK_STR(jstr(err, "param"), "messages[0].role");
    CHECK(jstr(err, "message") && strstr(jstr(err, "message"), "robot"));
    json_decref(j);

    static const char *const bad[] = {
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",                       /* no model */
        "{\"model\":\"\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",          /* empty model */
        "{\"model\":\"m\",\"messages\":[]}",                                             /* empty messages */
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":5}]}",             /* content type */
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}",                          /* no content */
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"video\"}]}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}",          /* no tool_call_id */
        "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"content\":\"x\",\"tool_call_id\":\"c\"}]}",
        "{\"model\":\"m\",\"bogus\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"temperature\":3,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"extra\":1}]}",
        "[1,2]",
        "{not json",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        j = chat(emu, bad[i], &st);
        CHECK_INT(st, 400);
        CHECK(json_is_object(json_object_get(j, "error")));
        if (st != 400)
            fprintf(stderr, "  case %zu: %s\n", i, bad[i]);
        json_decref(j);
    }

    /* Wrong content type. */
    struct resp r = http(emu, "POST", "/v1/chat/completions",
                         "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL,
                         "Content-Type: text/plain", 0);
    CHECK_INT(r.status, 400);
    resp_free(&r);

    /* Assistant with tool_calls and null content, answered by a tool message. */
    j = chat(emu, "{\"model\":\"m\",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
                  "\"messages\":[{\"role\":\"user\",\"content\":\"CALL f {}\"},{\"role\":\"assistant\","
                  "\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{"
                  "\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"call_1\","
                  "\"content\":\"sunny\"}]}", &st);
    CHECK_INT(st, 200);
    CHECK_STR(jstr(first_message(j), "content"), "Tool result: sunny");
    json_decref(j);
}

static void test_auth_and_limits(struct sb_emu *keyed)
{
    const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    struct resp r = http(keyed, "POST", "/v1/chat/completions", body, NULL, NULL, 0);
    CHECK_INT(r.status, 401);
    CHECK_STR(r.body, "{\"error\":{\"message\":\"Incorrect API key provided\",\"type\":\"invalid_request_error\","
                      "\"param\":null,\"code\":\"invalid_api_key\"}}");
    resp_free(&r);
    r = http(keyed, "POST", "/v1/chat/completions", body, "Authorization: Bearer wrong", NULL, 0);
    CHECK_INT(r.status, 401);
    resp_free(&r);
    r = http(keyed, "POST", "/v1/chat/completions", body, "Authorization: Bearer " KEY, NULL, 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(keyed, "GET", "/v1/models", NULL, "Authorization: Bearer " KEY, NULL, 0);
    CHECK_INT(r.status, 200);
    json_t *j = json_loads(r.body, 0, NULL);
    CHECK_STR(jstr(j, "object"), "list");
    CHECK(json_array_size(json_object_get(j, "data")) > 0);
    CHECK_STR(jstr(json_array_get(json_object_get(j, "data"), 0), "owned_by"), "emulator");
    json_decref(j);
    resp_free(&r);
    /* The control endpoints need no key. */
    r = http(keyed, "GET", "/_emu/health", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "{\"ok\":true}");
    resp_free(&r);
    /* Body over the limit (4 KiB here). */
    char *big = malloc(8192);
    memset(big, 'a', 8191);
    big[8191] = '\0';
    memcpy(big, "{\"x\":\"", 6);
    r = http(keyed, "POST", "/v1/chat/completions", big, "Authorization: Bearer " KEY, NULL, 0);
    CHECK_INT(r.status, 413);
    resp_free(&r);
    free(big);
}

static void test_directives(struct sb_emu *emu)
{
    long st;
    /* CALL with the tool declared. */
    json_t *j = chat(emu, "{\"model\":\"m\",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
                          "\"parameters\":{\"type\":\"object\"}}}],\"messages\":[{\"role\":\"user\",\"content\":"
                          "\"CALL get_weather {\\\"city\\\":\\\"Paris\\\"}\"}]}", &st);
    CHECK_INT(st, 200);
    json_t *choice = json_array_get(json_object_get(j, "choices"), 0);
    CHECK_STR(jstr(choice, "finish_reason"), "tool_calls");
    json_t *msg = json_object_get(choice, "message");
    CHECK(json_is_null(json_object_get(msg, "content")));
    json_t *tc = json_array_get(json_object_get(msg, "tool_calls"), 0);
    CHECK(!strncmp(jstr(tc, "id") ? jstr(tc, "id") : "", "call_", 5));
    CHECK_STR(jstr(tc, "type"), "function");
    CHECK_STR(jstr(json_object_get(tc, "function"), "name"), "get_weather");
    CHECK_STR(jstr(json_object_get(tc, "function"), "arguments"), "{\"city\":\"Paris\"}");
    json_decref(j);

    /* CALL of an undeclared tool. */
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"CALL nope {}\"}]}", &st);
    CHECK_INT(st, 400);
    json_decref(j);

    /* status=503 and status=429 (with Retry-After). */
    struct resp r = http(emu, "POST", "/v1/chat/completions",
                         "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x [[emu:status=503]]\"}]}",
                         NULL, NULL, 0);
    CHECK_INT(r.status, 503);
    j = json_loads(r.body, 0, NULL);
    CHECK_STR(jstr(json_object_get(j, "error"), "message"), "emulated upstream error 503");
    CHECK_STR(jstr(json_object_get(j, "error"), "type"), "server_error");
    json_decref(j);
    resp_free(&r);
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:status=429]]\"}]}", NULL, NULL, 0);
    CHECK_INT(r.status, 429);
    CHECK(strstr(r.headers, "Retry-After: 2\r\n") != NULL);
    resp_free(&r);

    /* length, max_tokens. */
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a b c [[emu:length]]\"}]}", &st);
    CHECK_STR(jstr(first_message(j), "content"), "You");
    CHECK_STR(jstr(json_array_get(json_object_get(j, "choices"), 0), "finish_reason"), "length");
    json_decref(j);
    j = chat(emu, "{\"model\":\"m\",\"max_tokens\":3,\"messages\":[{\"role\":\"user\",\"content\":\"a b c\"}]}", &st);
    CHECK_STR(jstr(first_message(j), "content"), "You said: a");
    CHECK_STR(jstr(json_array_get(json_object_get(j, "choices"), 0), "finish_reason"), "length");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "usage"), "completion_tokens")), 3);
    json_decref(j);

    /* Directives are removed from the echo. */
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a [[emu:latency=200]] b\"}]}", &st);
    CHECK_STR(jstr(first_message(j), "content"), "You said: a b");
    json_decref(j);

    /* latency. */
    int64_t t0 = sb_mono_ms();
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:latency=250]]\"}]}", &st);
    CHECK_INT(st, 200);
    CHECK(sb_mono_ms() - t0 >= 250);
    json_decref(j);

    /* malformed. */
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:malformed]]\"}]}", NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    j = json_loads(r.body, 0, NULL);
    CHECK(j == NULL);
    json_decref(j);
    resp_free(&r);

    /* Unknown directive. */
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:bogus]]\"}]}", &st);
    CHECK_INT(st, 400);
    json_decref(j);
}

static void test_stream(struct sb_emu *emu)
{
    struct resp r = http(emu, "POST", "/v1/chat/completions",
                         "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                         "\"messages\":[{\"role\":\"user\",\"content\":\"one two\"}]}",
                         NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.headers, "text/event-stream") != NULL);
    char content[256] = "";
    int events = 0, usage_seen = 0;
    const char *finish = NULL;
    json_t *last_finish = NULL;
    for (char *line = strtok(r.body, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "data: ", 6) != 0)
            continue;
        events++;
        if (!strcmp(line + 6, "[DONE]"))
            break;
        json_t *c = json_loads(line + 6, 0, NULL);
        CHECK(c != NULL);
        CHECK_STR(jstr(c, "object"), "chat.completion.chunk");
        json_t *ch = json_array_get(json_object_get(c, "choices"), 0);
        const char *piece = json_string_value(json_object_get(json_object_get(ch, "delta"), "content"));
        if (piece)
            strncat(content, piece, sizeof content - strlen(content) - 1);
        if (json_is_string(json_object_get(ch, "finish_reason"))) {
            json_decref(last_finish);
            last_finish = json_incref(json_object_get(ch, "finish_reason"));
        }
        if (json_is_object(json_object_get(c, "usage")))
            usage_seen = 1;
        json_decref(c);
    }
    finish = json_string_value(last_finish);
    CHECK_STR(content, "You said: one two");
    CHECK_STR(finish, "stop");
    CHECK(usage_seen);
    CHECK(events >= 6);
    json_decref(last_finish);
    resp_free(&r);
}

static void test_journal_and_hang(struct sb_emu *emu)
{
    struct resp r = http(emu, "DELETE", "/_emu/requests", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"journal-model\",\"messages\":[{\"role\":\"user\",\"content\":\"remember me\"}]}",
             "Authorization: Bearer upstream-key", NULL, 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(emu, "GET", "/_emu/requests?limit=5", NULL, NULL, NULL, 0);
    json_t *j = json_loads(r.body, 0, NULL);
    json_t *reqs = json_object_get(j, "requests");
    CHECK_INT(json_array_size(reqs), 1);
    json_t *e = json_array_get(reqs, 0);
    CHECK_STR(jstr(e, "method"), "POST");
    CHECK_STR(jstr(e, "path"), "/v1/chat/completions");
    CHECK_STR(jstr(json_object_get(e, "headers"), "authorization"), "Bearer upstream-key");
    CHECK_STR(jstr(json_object_get(e, "headers"), "content-type"), "application/json");
    CHECK_STR(jstr(json_object_get(e, "body"), "model"), "journal-model");
    CHECK_STR(jstr(json_array_get(json_object_get(json_object_get(e, "body"), "messages"), 0), "content"),
              "remember me");
    CHECK_INT(json_integer_value(json_object_get(e, "status")), 200);
    CHECK(json_is_integer(json_object_get(e, "time")));
    json_decref(j);
    resp_free(&r);

    /* A hung request whose client gives up: closed_by_client, nothing left open. */
    long long closed_before = stat_of(emu, "closed_by_client");
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:hang]]\"}]}", NULL, NULL, 300);
    CHECK(r.rc == CURLE_OPERATION_TIMEDOUT);
    resp_free(&r);
    long long open = -1, closed = -1;
    for (int i = 0; i < 100; i++) {
        open = stat_of(emu, "open_requests");
        closed = stat_of(emu, "closed_by_client");
        if (open == 0 && closed == closed_before + 1)
            break;
        usleep(20000);
    }
    CHECK_INT(open, 0);
    CHECK_INT(closed, closed_before + 1);

    /* A stream that hangs mid-way, then the client leaves. */
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"a b c "
             "[[emu:hang_after=2]]\"}]}", NULL, NULL, 300);
    CHECK(r.rc == CURLE_OPERATION_TIMEDOUT);
    CHECK(strstr(r.body, "data: ") != NULL);
    resp_free(&r);
    for (int i = 0; i < 100; i++) {
        open = stat_of(emu, "open_requests");
        closed = stat_of(emu, "closed_by_client");
        if (open == 0 && closed == closed_before + 2)
            break;
        usleep(20000);
    }
    CHECK_INT(open, 0);
    CHECK_INT(closed, closed_before + 2);

    /* drop: the connection closes with no reply. */
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:drop]]\"}]}", NULL, NULL, 0);
    CHECK(r.rc == CURLE_GOT_NOTHING);
    resp_free(&r);
    CHECK_INT(stat_of(emu, "open_requests"), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* the emulator may write to a client that already left */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct server s;
    if (server_start(&s) < 0) {
        fprintf(stderr, "cannot start the emulator\n");
        return 1;
    }
    CHECK(port_of(s.open_emu) > 0);
    test_echo(s.open_emu);
    test_validation(s.open_emu);
    test_auth_and_limits(s.keyed_emu);
    test_directives(s.open_emu);
    test_stream(s.open_emu);
    test_journal_and_hang(s.open_emu);
    server_stop(&s);
    curl_global_cleanup();
    return sb_test_finish("emulator");
}

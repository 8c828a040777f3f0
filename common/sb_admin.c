/*
 * sb_admin: the admin port (see sb_admin.h). Small limits: a scraper or a
 * probe sends a few hundred bytes and no body.
 */
#include "sb_admin.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_evbase.h"
#include "sb_log.h"
#include "sb_metrics.h"

struct sb_admin {
    sb_admin_config_t cfg;
    char host[64];
    struct event_base *base; /* borrowed, or owned by the thread */
    sb_http_t *http;
    bool own_base;
    bool threaded;
    pthread_t thread;
    int stop_pipe[2];
    struct event *stop_ev;
};

int sb_admin_parse_listen(const char *spec, char *host, size_t hostlen, int *port)
{
    const char *colon = spec ? strrchr(spec, ':') : NULL;
    if (!colon || colon == spec || (size_t)(colon - spec) >= hostlen)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || v < 0 || v > 65535)
        return -1;
    memcpy(host, spec, (size_t)(colon - spec));
    host[colon - spec] = '\0';
    *port = (int)v;
    return 0;
}

void sb_admin_reply_text(sb_http_req_t *req, int status, const char *content_type, const char *body, size_t len)
{
    sb_http_req_add_header(req, "Content-Type", content_type);
    sb_http_req_add_header(req, "Cache-Control", "no-store");
    sb_http_reply(req, status, body, len);
}

static void sb_admin_handle(sb_http_req_t *req, void *arg)
{
    sb_admin_t *a = arg;
    const sb_http_err_t *e = sb_http_req_error(req);
    if (e) {
        sb_admin_reply_text(req, e->status, "text/plain; charset=utf-8", e->message, strlen(e->message));
        return;
    }
    const char *path = sb_http_req_path(req);
    const char *method = sb_http_req_method(req);
    bool own = !strcmp(path, "/metrics") || !strcmp(path, "/healthz") || !strcmp(path, "/readyz");
    if (!own && a->cfg.other) {
        a->cfg.other(req, a->cfg.other_arg);
        return;
    }
    if (!own) {
        static const char nf[] = "not found\n";
        sb_admin_reply_text(req, 404, "text/plain; charset=utf-8", nf, sizeof nf - 1);
        return;
    }
    if (strcmp(method, "GET") != 0) {
        static const char na[] = "method not allowed\n";
        sb_http_req_add_header(req, "Allow", "GET");
        sb_http_req_close_after(req); /* a body we do not read */
        sb_admin_reply_text(req, 405, "text/plain; charset=utf-8", na, sizeof na - 1);
        return;
    }
    if (!strcmp(path, "/healthz")) {
        sb_admin_reply_text(req, 200, "text/plain; charset=utf-8", "ok\n", 3);
        return;
    }
    if (!strcmp(path, "/readyz")) {
        char why[256] = "", line[260];
        bool ready = !a->cfg.ready || a->cfg.ready(a->cfg.ready_arg, why, sizeof why);
        if (ready) {
            sb_admin_reply_text(req, 200, "text/plain; charset=utf-8", "ready\n", 6);
        } else {
            int n = snprintf(line, sizeof line, "%s\n", why);
            sb_admin_reply_text(req, 503, "text/plain; charset=utf-8", line, (size_t)n);
        }
        return;
    }
    sb_buf_t out = {0};
    sb_metrics_render(&out);
    sb_admin_reply_text(req, 200, "text/plain; version=0.0.4; charset=utf-8", out.p ? out.p : "", out.len);
    sb_buf_free(&out);
}

static int sb_admin_listen(sb_admin_t *a, const sb_admin_config_t *cfg, char *err, size_t errlen)
{
    a->cfg = *cfg;
    snprintf(a->host, sizeof a->host, "%s", cfg->host ? cfg->host : "127.0.0.1");
    a->cfg.host = a->host;
    sb_http_limits_t lim = {
        .host = a->host,
        .port = cfg->port,
        .max_connections = 256,
        .max_per_source = 64,
        .read_deadline_ms = 10000,
        .idle_timeout_ms = 30000,
        .write_timeout_ms = 30000,
        .max_head = 16384,
        .body_budget = 16u << 20, /* the frontend's admin API reads small JSON bodies */
    };
    a->http = sb_http_new(a->base, &lim, sb_admin_handle, a, err, errlen);
    return a->http ? 0 : -1;
}

sb_admin_t *sb_admin_new(struct event_base *base, const sb_admin_config_t *cfg, char *err, size_t errlen)
{
    sb_admin_t *a = sb_xcalloc(1, sizeof *a);
    a->base = base;
    a->stop_pipe[0] = a->stop_pipe[1] = -1;
    if (sb_admin_listen(a, cfg, err, errlen) < 0) {
        free(a);
        return NULL;
    }
    sb_info("admin port on %s:%d (/metrics /healthz /readyz)", a->host, cfg->port);
    return a;
}

static void sb_admin_on_stop(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

static void *sb_admin_main(void *arg)
{
    sb_admin_t *a = arg;
    event_base_dispatch(a->base);
    return NULL;
}

sb_admin_t *sb_admin_start_thread(const sb_admin_config_t *cfg, char *err, size_t errlen)
{
    sb_admin_t *a = sb_xcalloc(1, sizeof *a);
    a->stop_pipe[0] = a->stop_pipe[1] = -1;
    a->base = sb_evbase_new();
    a->own_base = a->base != NULL;
    if (!a->base || pipe2(a->stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        snprintf(err, errlen, "cannot set up the admin loop");
        goto fail;
    }
    a->stop_ev = event_new(a->base, a->stop_pipe[0], EV_READ, sb_admin_on_stop, a->base);
    if (!a->stop_ev || event_add(a->stop_ev, NULL) < 0 || sb_admin_listen(a, cfg, err, errlen) < 0)
        goto fail;
    if (pthread_create(&a->thread, NULL, sb_admin_main, a) != 0) {
        snprintf(err, errlen, "cannot start the admin thread");
        goto fail;
    }
    a->threaded = true;
    sb_info("admin port on %s:%d (/metrics /healthz /readyz)", a->host, cfg->port);
    return a;
fail:
    sb_admin_free(&a);
    return NULL;
}

void sb_admin_free(sb_admin_t **pa)
{
    if (!pa || !*pa)
        return;
    sb_admin_t *a = *pa;
    if (a->threaded) {
        ssize_t n = write(a->stop_pipe[1], "x", 1);
        (void)n;
        pthread_join(a->thread, NULL);
    }
    sb_http_free(&a->http);
    if (a->stop_ev)
        event_free(a->stop_ev);
    if (a->stop_pipe[0] >= 0) {
        close(a->stop_pipe[0]);
        close(a->stop_pipe[1]);
    }
    if (a->own_base)
        event_base_free(a->base);
    free(a);
    *pa = NULL;
}

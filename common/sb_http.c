/*
 * sb_http: the server half of the frontend's HTTP/1.1 layer (sb_http.h):
 * the listener, peer addresses and their connection counts, and admission:
 * a per-address cap, and at the total cap shedding a waiting connection of
 * the heaviest address so that one client cannot hold every slot. A
 * connection refused at accept gets a short plain JSON 503 (no style can be
 * known before its request line) and is closed.
 */
#include "sb_http_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sb_alloc.h"
#include "sb_log.h"
#include "sb_time.h"

static sb_http_source_t *sb_http_source_get(sb_http_t *h, const char *addr)
{
    sb_http_source_t *s = sb_map_get(h->sources, addr);
    if (!s) {
        s = sb_xcalloc(1, sizeof *s);
        snprintf(s->addr, sizeof s->addr, "%s", addr);
        sb_map_put(h->sources, addr, s);
    }
    return s;
}

typedef struct {
    sb_http_source_t *heaviest;
} sb_http_heavy_t;

static void sb_http_find_heaviest(const char *key, void *value, void *arg)
{
    (void)key;
    sb_http_heavy_t *hv = arg;
    sb_http_source_t *s = value;
    if (!hv->heaviest || s->conns > hv->heaviest->conns)
        hv->heaviest = s;
}

/* At the total cap: closes the oldest waiting connection of the heaviest
 * address, when that address holds more than the newcomer's (+1). */
static bool sb_http_shed(sb_http_t *h, const sb_http_source_t *newcomer)
{
    sb_http_heavy_t hv = {NULL};
    sb_map_foreach(h->sources, sb_http_find_heaviest, &hv);
    int mine = newcomer ? newcomer->conns : 0;
    if (!hv.heaviest || hv.heaviest->conns <= mine + 1)
        return false;
    sb_http_conn_t *victim = NULL;
    for (sb_http_conn_t *c = hv.heaviest->list; c; c = c->src_next)
        if (sb_http_conn_idle(c))
            victim = c; /* the list is newest first: the last one found is the oldest */
    if (!victim)
        return false;
    h->shed++;
    int64_t now = sb_now_ms();
    if (now - h->last_shed_log_ms > 10000) {
        h->last_shed_log_ms = now;
        sb_warn("at the connection cap (%d): shedding waiting connections of %s (%d open); %lu shed so far",
                h->lim.max_connections, hv.heaviest->addr, hv.heaviest->conns, h->shed);
    }
    sb_http_conn_close(victim);
    return true;
}

static void sb_http_refuse(sb_http_t *h, evutil_socket_t fd, const char *why)
{
    char msg[512];
    char body[256];
    int blen = snprintf(body, sizeof body,
                        "{\"error\":{\"message\":\"%s\",\"type\":\"server_error\",\"param\":null,"
                        "\"code\":\"too_many_connections\"}}",
                        why);
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                     "Connection: close\r\nContent-Length: %d\r\n\r\n%s",
                     blen, body);
    /* Best effort: a fresh socket's send buffer takes it whole. */
    if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
        sb_debug("refused connection: %s", strerror(errno));
    close(fd);
    h->refused++;
    int64_t now = sb_now_ms();
    if (now - h->last_shed_log_ms > 10000) {
        h->last_shed_log_ms = now;
        sb_warn("refusing connections: %s (%lu refused so far)", why, h->refused);
    }
}

static void sb_http_on_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
    (void)l;
    (void)salen;
    sb_http_t *h = arg;
    char addr[SB_HTTP_PEER_MAX] = "?";
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, addr, sizeof addr);
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, addr, sizeof addr);
    sb_http_source_t *src = sb_map_get(h->sources, addr);
    const char *refuse = NULL;
    if (src && h->lim.max_per_source > 0 && src->conns >= h->lim.max_per_source)
        refuse = "Too many open connections from this address; retry shortly.";
    else if (h->open >= h->lim.max_connections && !sb_http_shed(h, src))
        refuse = "This gateway instance has too many open connections; retry shortly.";
    /* A refused connection is answered in the style of its request when it
     * sends the head soon (a few slots over the cap for that); beyond those,
     * at once in plain JSON. */
    int grace = h->lim.max_connections / 16 > 8 ? h->lim.max_connections / 16 : 8;
    if (refuse && (h->refusing >= grace || (src && src->refusing >= grace / 2 + 1))) {
        sb_http_refuse(h, fd, refuse);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    src = sb_http_source_get(h, addr);
    sb_http_conn_new(h, fd, src, refuse); /* it joins src; it leaves it when it closes */
    if (refuse)
        h->refused++;
}

static void sb_http_on_listen_error(struct evconnlistener *l, void *arg)
{
    (void)l;
    (void)arg;
    int e = EVUTIL_SOCKET_ERROR();
    /* EMFILE and the like: the listener goes on; the next accept may work. */
    sb_warn("accept failed: %s", evutil_socket_error_to_string(e));
}

sb_http_t *sb_http_new(struct event_base *base, const sb_http_limits_t *lim, sb_http_handler_fn fn, void *arg,
                       char *err, size_t errlen)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)lim->port)};
    if (inet_pton(AF_INET, lim->host, &sin.sin_addr) != 1) {
        snprintf(err, errlen, "bad listen address %s", lim->host);
        return NULL;
    }
    sb_http_t *h = sb_xcalloc(1, sizeof *h);
    h->base = base;
    h->lim = *lim;
    h->fn = fn;
    h->arg = arg;
    h->sources = sb_map_new();
    h->listener = evconnlistener_new_bind(base, sb_http_on_accept, h,
                                          LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT, 1024,
                                          (struct sockaddr *)&sin, sizeof sin);
    if (!h->listener) {
        snprintf(err, errlen, "cannot listen on %s:%d", lim->host, lim->port);
        sb_http_free(&h);
        return NULL;
    }
    evconnlistener_set_error_cb(h->listener, sb_http_on_listen_error);
    return h;
}

void sb_http_stop_accepting(sb_http_t *h)
{
    if (h && h->listener) {
        evconnlistener_free(h->listener);
        h->listener = NULL;
    }
}

void sb_http_drain(sb_http_t *h)
{
    if (!h)
        return;
    h->draining = true;
    for (sb_http_conn_t *c = h->conns, *next; c; c = next) {
        next = c->next;
        if (c->state == FE_C_HEAD && !c->req && c->first_byte_ms == 0)
            sb_http_conn_close(c);
    }
}

void sb_http_free(sb_http_t **ph)
{
    if (!ph || !*ph)
        return;
    sb_http_t *h = *ph;
    sb_http_stop_accepting(h);
    while (h->conns)
        sb_http_conn_close(h->conns);
    sb_http_spare_free(h);
    sb_map_destroy(&h->sources);
    free(h);
    *ph = NULL;
}

int sb_http_open(const sb_http_t *h)
{
    return h ? h->open : 0;
}

size_t sb_http_body_bytes(const sb_http_t *h)
{
    return h ? h->body_used : 0;
}

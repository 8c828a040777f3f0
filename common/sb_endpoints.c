/* sb_endpoints: a list of broker endpoints, names resolved on the loop. */
#include "sb_endpoints.h"

#include <arpa/inet.h>
#include <event2/dns.h>
#include <event2/util.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "sb_alloc.h"
#include "sb_log.h"

#define SB_DNS_PREFIX "dns://"

typedef struct sb_endpoints_name sb_endpoints_name_t;

/* One dns:// entry: its name, port, and the addresses it resolved to last. */
struct sb_endpoints_name {
    sb_endpoints_t *e;
    char *host;
    char port[8];
    char **found; /* "tcp://ADDR:PORT", owned; NULL until it first resolves */
    size_t nfound;
    struct sb_endpoints_ask *ask; /* the question out now, or NULL */
};

/* One question to the resolver. libevent calls back even for a cancelled
 * one, later, from the loop: the question lives until then, and forgets its
 * name when the name goes first. */
typedef struct sb_endpoints_ask {
    sb_endpoints_name_t *nm; /* NULL: the endpoints were destroyed meanwhile */
    struct evdns_getaddrinfo_request *req;
} sb_endpoints_ask_t;

struct sb_endpoints {
    struct event_base *base;
    struct evdns_base *dns; /* NULL: no dns:// entry */
    struct event *timer;
    sb_endpoints_fn fn;
    void *arg;
    char **fixed; /* the plain entries */
    size_t nfixed;
    sb_endpoints_name_t *names;
    size_t nnames;
    char **set; /* the whole set now, sorted */
    size_t nset;
};

static void sb_strv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int sb_strcmp_p(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Rebuilds the set from the entries; calls fn when it changed. */
static void sb_endpoints_rebuild(sb_endpoints_t *e, bool notify)
{
    size_t cap = e->nfixed;
    for (size_t i = 0; i < e->nnames; i++)
        cap += e->names[i].nfound;
    char **set = sb_xcalloc(cap ? cap : 1, sizeof *set);
    size_t n = 0;
    for (size_t i = 0; i < e->nfixed; i++)
        set[n++] = sb_xstrdup(e->fixed[i]);
    for (size_t i = 0; i < e->nnames; i++)
        for (size_t k = 0; k < e->names[i].nfound; k++)
            set[n++] = sb_xstrdup(e->names[i].found[k]);
    qsort(set, n, sizeof *set, sb_strcmp_p);
    size_t u = 0; /* drop duplicates */
    for (size_t i = 0; i < n; i++) {
        if (u > 0 && !strcmp(set[u - 1], set[i]))
            free(set[i]);
        else
            set[u++] = set[i];
    }
    if (u == 0) {
        sb_strv_free(set, u);
        return;
    }
    char **old = e->set;
    size_t nold = e->nset;
    e->set = set;
    e->nset = u;
    /* Both sorted: one walk finds who joined and who left. */
    for (size_t i = 0, k = 0; notify && e->fn && (i < nold || k < u);) {
        int c = i == nold ? 1 : k == u ? -1 : strcmp(old[i], set[k]);
        if (c < 0)
            e->fn(old[i++], false, e->arg);
        else if (c > 0)
            e->fn(set[k++], true, e->arg);
        else
            i++, k++;
    }
    sb_strv_free(old, nold);
}

static void sb_endpoints_on_answer(int result, struct evutil_addrinfo *res, void *arg)
{
    sb_endpoints_ask_t *ask = arg;
    sb_endpoints_name_t *nm = ask->nm;
    free(ask);
    if (!nm || result == EVUTIL_EAI_CANCEL) {
        if (res)
            evutil_freeaddrinfo(res);
        return;
    }
    nm->ask = NULL;
    if (result != 0 || !res) {
        sb_warn("broker name %s: %s; keeping its %zu address(es)", nm->host, evutil_gai_strerror(result), nm->nfound);
        if (res)
            evutil_freeaddrinfo(res);
        return;
    }
    char **found = NULL;
    size_t n = 0;
    for (struct evutil_addrinfo *ai = res; ai && n < SB_ENDPOINTS_MAX; ai = ai->ai_next) {
        char addr[INET6_ADDRSTRLEN] = "";
        if (ai->ai_family == AF_INET)
            inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, addr, sizeof addr);
        else if (ai->ai_family == AF_INET6)
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, addr, sizeof addr);
        if (!addr[0])
            continue;
        found = sb_xrealloc(found, (n + 1) * sizeof *found);
        found[n++] = ai->ai_family == AF_INET6 ? sb_xasprintf("tcp://[%s]:%s", addr, nm->port)
                                               : sb_xasprintf("tcp://%s:%s", addr, nm->port);
    }
    evutil_freeaddrinfo(res);
    if (n == 0) {
        free(found);
        return;
    }
    sb_strv_free(nm->found, nm->nfound);
    nm->found = found;
    nm->nfound = n;
    sb_endpoints_rebuild(nm->e, true);
}

void sb_endpoints_refresh(sb_endpoints_t *e)
{
    /* libevent reads /etc/hosts once, when the resolver is made: read it
     * again, so a changed entry is seen (resolv.conf's servers stay). */
    evdns_base_clear_host_addresses(e->dns);
    if (evdns_base_load_hosts(e->dns, "/etc/hosts") < 0)
        sb_debug("/etc/hosts not read: only localhost is known from it");
    for (size_t i = 0; i < e->nnames; i++) {
        sb_endpoints_name_t *nm = &e->names[i];
        if (nm->ask)
            continue;
        struct evutil_addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
        sb_endpoints_ask_t *ask = sb_xcalloc(1, sizeof *ask);
        ask->nm = nm;
        nm->ask = ask;
        struct evdns_getaddrinfo_request *req =
            evdns_getaddrinfo(e->dns, nm->host, nm->port, &hints, sb_endpoints_on_answer, ask);
        if (nm->ask) /* the answer did not come at once (an answer at once has freed ask) */
            ask->req = req;
    }
}

static void sb_endpoints_on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sb_endpoints_refresh(arg);
}

/* "dns://NAME:PORT" into nm; -1 when malformed. */
static int sb_endpoints_parse_name(const char *s, size_t len, sb_endpoints_name_t *nm)
{
    s += strlen(SB_DNS_PREFIX);
    len -= strlen(SB_DNS_PREFIX);
    const char *colon = memrchr(s, ':', len);
    if (!colon || colon == s || (size_t)(colon - s) > 253)
        return -1;
    size_t plen = len - (size_t)(colon - s) - 1;
    if (plen == 0 || plen > 5)
        return -1;
    long port = 0;
    for (size_t i = 0; i < plen; i++) {
        if (colon[1 + i] < '0' || colon[1 + i] > '9')
            return -1;
        port = port * 10 + (colon[1 + i] - '0');
    }
    if (port < 1 || port > 65535)
        return -1;
    nm->host = sb_xstrndup(s, (size_t)(colon - s));
    snprintf(nm->port, sizeof nm->port, "%ld", port);
    return 0;
}

sb_endpoints_t *sb_endpoints_new(struct event_base *base, const char *spec, sb_endpoints_fn fn, void *arg, char *err,
                                 size_t errlen)
{
    sb_endpoints_t *e = sb_xcalloc(1, sizeof *e);
    e->base = base;
    e->fn = fn;
    e->arg = arg;
    e->fixed = sb_xcalloc(SB_ENDPOINTS_MAX, sizeof *e->fixed);
    e->names = sb_xcalloc(SB_ENDPOINTS_MAX, sizeof *e->names);
    const char *p = spec ? spec : "";
    size_t count = 0;
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        while (len > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }
        while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
            len--;
        if (len == 0 || ++count > SB_ENDPOINTS_MAX) {
            snprintf(err, errlen, len == 0 ? "empty entry in the broker list" : "more than %d brokers",
                     SB_ENDPOINTS_MAX);
            goto fail;
        }
        if (len > strlen(SB_DNS_PREFIX) && !strncmp(p, SB_DNS_PREFIX, strlen(SB_DNS_PREFIX))) {
            sb_endpoints_name_t *nm = &e->names[e->nnames];
            if (sb_endpoints_parse_name(p, len, nm) < 0) {
                snprintf(err, errlen, "%.*s: expected dns://NAME:PORT", (int)(len > 200 ? 200 : len), p);
                goto fail;
            }
            nm->e = e;
            e->nnames++;
        } else {
            e->fixed[e->nfixed++] = sb_xstrndup(p, len);
        }
        if (!end)
            break;
        p = end + 1;
    }
    if (e->nnames > 0) {
        e->dns = evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS | EVDNS_BASE_DISABLE_WHEN_INACTIVE);
        if (!e->dns) {
            snprintf(err, errlen, "cannot start a DNS resolver (/etc/resolv.conf)");
            goto fail;
        }
        e->timer = event_new(base, -1, EV_PERSIST, sb_endpoints_on_timer, e);
        struct timeval tv = {SB_ENDPOINTS_REFRESH_MS / 1000, (SB_ENDPOINTS_REFRESH_MS % 1000) * 1000};
        if (!e->timer || event_add(e->timer, &tv) < 0) {
            snprintf(err, errlen, "cannot start the DNS refresh timer");
            goto fail;
        }
    }
    sb_endpoints_rebuild(e, false);
    if (e->nnames > 0)
        sb_endpoints_refresh(e);
    return e;
fail:
    sb_endpoints_destroy(&e);
    return NULL;
}

const char *const *sb_endpoints_list(const sb_endpoints_t *e, size_t *n)
{
    *n = e->nset;
    return (const char *const *)e->set;
}

void sb_endpoints_destroy(sb_endpoints_t **pe)
{
    if (!pe || !*pe)
        return;
    sb_endpoints_t *e = *pe;
    e->fn = NULL;
    if (e->timer)
        event_free(e->timer);
    for (size_t i = 0; i < e->nnames; i++) {
        sb_endpoints_ask_t *ask = e->names[i].ask;
        if (ask) { /* its callback still comes, and frees it */
            ask->nm = NULL;
            if (ask->req)
                evdns_getaddrinfo_cancel(ask->req);
        }
    }
    if (e->dns)
        evdns_base_free(e->dns, 0);
    for (size_t i = 0; i < e->nnames; i++) {
        free(e->names[i].host);
        sb_strv_free(e->names[i].found, e->names[i].nfound);
    }
    free(e->names);
    sb_strv_free(e->fixed, e->nfixed);
    sb_strv_free(e->set, e->nset);
    free(e);
    *pe = NULL;
}

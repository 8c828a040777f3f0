/*
 * sb_endpoints: the brokers a frontend or a worker connects to, from a list
 * such as "tcp://10.0.0.1:5555,tcp://10.0.0.2:5555" or one name resolving to
 * every broker, "dns://sb-broker:5555" (a Kubernetes headless Service). A
 * dns:// entry is resolved without blocking the loop (libevent's evdns, which
 * reads /etc/resolv.conf and /etc/hosts) at start and every
 * SB_ENDPOINTS_REFRESH_MS, and stands for "tcp://ADDRESS:PORT" for each
 * address; other entries are ZeroMQ endpoints, kept as written.
 */
#ifndef SB_ENDPOINTS_H
#define SB_ENDPOINTS_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#define SB_ENDPOINTS_MAX 64
#define SB_ENDPOINTS_REFRESH_MS 5000

typedef struct sb_endpoints sb_endpoints_t;

/* The set changed (a name resolved to other addresses): called once per
 * endpoint that joined it (listed) or left it (!listed); ep is borrowed for
 * the call. The set never becomes empty: a name that does not resolve keeps
 * its previous addresses. */
typedef void (*sb_endpoints_fn)(const char *ep, bool listed, void *arg);

/* Parses spec. NULL with err set when it is malformed (empty, an empty
 * entry, too many, a dns:// entry without NAME:PORT). */
sb_endpoints_t *sb_endpoints_new(struct event_base *base, const char *spec, sb_endpoints_fn fn, void *arg, char *err,
                                 size_t errlen);
void sb_endpoints_destroy(sb_endpoints_t **e);

/* The set now (borrowed until the next change): the plain entries at once,
 * dns:// ones once resolved. */
const char *const *sb_endpoints_list(const sb_endpoints_t *e, size_t *n);

/* Resolves the names again now (e.g. a broker went away: it may be back
 * at another address). */
void sb_endpoints_refresh(sb_endpoints_t *e);

#endif

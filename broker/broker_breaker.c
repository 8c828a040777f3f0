/*
 * broker_breaker: the circuit breaker's state machine (model-wide or per
 * client), the model-wide breaker's weighing of failures by client, and the
 * set of breakers (see broker_breaker.h). A breaker exists only while it has
 * something to remember (failures counted, a circuit not CLOSED, tickets
 * outstanding); sb_breakers_prune frees the others, so a healthy route costs
 * nothing between jobs. Per-client breakers are also capped in number.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_breaker.h"
#include "sb_alloc.h"
#include "sb_log.h"
#include "sb_map.h"

/* One client's failures in the model-wide breaker's current run. */
struct sb_breaker_run_entry {
    char *client;
    int failures;
};

struct sb_breaker {
    char *model;
    char *client;        /* per-client breaker: its client; NULL: model-wide */
    int threshold;       /* failures in a row that open the circuit */
    int64_t cooldown_ms; /* as configured; the actual one backs off on re-opens */
    enum sb_breaker_state state;
    int failures;          /* failed outcomes in a row (failed probes included) */
    int reopens;           /* failed probes in a row: the cooldown is doubled this often (capped) */
    int64_t open_until;    /* while OPEN: when HALF_OPEN starts (monotonic ms) */
    uint64_t next_ticket;  /* the ticket the next dispatch gets; starts at 1 */
    uint64_t epoch_start;  /* tickets below this were dispatched before the circuit last opened */
    uint64_t probe_ticket; /* while PROBING: the probe's ticket; 0 otherwise */
    size_t outstanding;    /* tickets handed out and not yet ended */

    /* Model-wide only: the current run of failures in a row while CLOSED,
     * weighed by client. `counted` is what is compared with the threshold:
     * each named client adds at most ceil(threshold/2), a job without a
     * client always adds 1. Cleared by an ok and when the circuit opens.
     * At most max(threshold, 2) entries: each new one adds 1 to counted. */
    int counted;
    bool run_anonymous; /* a job without a client failed in this run */
    struct sb_breaker_run_entry *run;
    size_t run_len, run_cap;

    /* Per-client only: links in the set's use order (head: most recent). */
    sb_breaker_t *lru_prev, *lru_next;
};

struct sb_breakers {
    sb_map_t *by_model;                /* model -> model-wide sb_breaker_t (owning) */
    sb_map_t *by_client;               /* sb_breakers_client_key(model, client) -> per-client sb_breaker_t (owning) */
    sb_breaker_t *lru_head, *lru_tail; /* per-client breakers, most recently used first */
    size_t clients_max;
    int threshold; /* 0: disabled */
    int cooldown_ms;
};

static const char *const sb_breaker_state_names[] = {
    [SB_BREAKER_CLOSED] = "closed",
    [SB_BREAKER_OPEN] = "open",
    [SB_BREAKER_HALF_OPEN] = "half-open",
    [SB_BREAKER_PROBING] = "probing",
};

const char *sb_breaker_state_name(enum sb_breaker_state state)
{
    if ((size_t)state >= sizeof sb_breaker_state_names / sizeof sb_breaker_state_names[0])
        return "?";
    return sb_breaker_state_names[state];
}

sb_breaker_t *sb_breaker_new(const char *model, int threshold, int cooldown_ms)
{
    assert(threshold >= 1 && cooldown_ms >= 1);
    sb_breaker_t *br = sb_xcalloc(1, sizeof *br);
    br->model = sb_xstrdup(model);
    br->client = NULL;
    br->threshold = threshold;
    br->cooldown_ms = cooldown_ms;
    br->state = SB_BREAKER_CLOSED;
    br->next_ticket = 1;
    br->epoch_start = 1;
    return br;
}

sb_breaker_t *sb_breaker_new_client(const char *model, const char *client, int threshold, int cooldown_ms)
{
    assert(client);
    sb_breaker_t *br = sb_breaker_new(model, threshold, cooldown_ms);
    br->client = sb_xstrdup(client);
    return br;
}

static void sb_breaker_run_clear(sb_breaker_t *br)
{
    for (size_t i = 0; i < br->run_len; i++)
        free(br->run[i].client);
    br->run_len = 0;
    br->counted = 0;
    br->run_anonymous = false;
}

void sb_breaker_destroy(sb_breaker_t **pbr)
{
    if (!pbr || !*pbr)
        return;
    sb_breaker_t *br = *pbr;
    sb_breaker_run_clear(br);
    free(br->run);
    free(br->model);
    free(br->client);
    free(br);
    *pbr = NULL;
}

/* Logs name a per-client breaker by model and client. */
#define SB_BREAKER_WHO_FMT "model %s%s%s"
#define SB_BREAKER_WHO(br) (br)->model, (br)->client ? ", client " : "", (br)->client ? (br)->client : ""

/* The cooldown for the current opening: the configured one, doubled for each
 * failed probe in a row, at most SB_BREAKER_BACKOFF_MAX times it. */
static int64_t sb_breaker_cooldown(const sb_breaker_t *br)
{
    int64_t mult = 1;
    for (int i = 0; i < br->reopens && mult < SB_BREAKER_BACKOFF_MAX; i++)
        mult *= 2;
    return br->cooldown_ms * mult;
}

static bool sb_breaker_move_ok(enum sb_breaker_state from, enum sb_breaker_state to)
{
    switch (from) {
    case SB_BREAKER_CLOSED:
        return to == SB_BREAKER_OPEN;
    case SB_BREAKER_OPEN:
        return to == SB_BREAKER_HALF_OPEN;
    case SB_BREAKER_HALF_OPEN:
        return to == SB_BREAKER_PROBING;
    case SB_BREAKER_PROBING:
        return to == SB_BREAKER_CLOSED || to == SB_BREAKER_OPEN || to == SB_BREAKER_HALF_OPEN;
    }
    return false;
}

/* The one place a breaker changes state, and logs it: opening at warn,
 * half-open and closing at info, the probe going out at debug. */
static void sb_breaker_set_state(sb_breaker_t *br, enum sb_breaker_state state, int64_t now)
{
    bool ok = sb_breaker_move_ok(br->state, state);
    assert(ok);
    (void)ok;
    enum sb_breaker_state from = br->state;
    br->state = state;
    switch (state) {
    case SB_BREAKER_OPEN: {
        int64_t cooldown = sb_breaker_cooldown(br);
        br->open_until = now + cooldown;
        /* Whatever is still running was dispatched before this: its outcome
         * says nothing about the next probe. */
        br->epoch_start = br->next_ticket;
        br->probe_ticket = 0;
        if (br->client)
            sb_warn(SB_BREAKER_WHO_FMT ": circuit opened for this client: its jobs failed upstream %d time(s) in a "
                                       "row%s; refusing its jobs (only) for %lld ms",
                    SB_BREAKER_WHO(br), br->failures, from == SB_BREAKER_PROBING ? " (the probe failed)" : "",
                    (long long)cooldown);
        else
            sb_warn("model %s: circuit opened for every client: its upstream failed %d time(s) in a row%s%s; "
                    "refusing its jobs for %lld ms",
                    br->model, br->failures, from == SB_BREAKER_PROBING ? " (the probe failed)" : "",
                    br->run_anonymous || from == SB_BREAKER_PROBING ? "" : " for several clients", (long long)cooldown);
        sb_breaker_run_clear(br);
        break;
    }
    case SB_BREAKER_HALF_OPEN:
        br->probe_ticket = 0;
        if (from == SB_BREAKER_OPEN)
            sb_info(SB_BREAKER_WHO_FMT ": circuit half-open: the next job probes the upstream", SB_BREAKER_WHO(br));
        else
            sb_info(SB_BREAKER_WHO_FMT
                    ": circuit half-open again: the probe ended without an outcome; the next job probes",
                    SB_BREAKER_WHO(br));
        break;
    case SB_BREAKER_PROBING:
        sb_debug(SB_BREAKER_WHO_FMT ": circuit probing: job ticket %llu is the probe", SB_BREAKER_WHO(br),
                 (unsigned long long)br->probe_ticket);
        break;
    case SB_BREAKER_CLOSED:
        br->probe_ticket = 0;
        br->failures = 0;
        br->reopens = 0;
        sb_breaker_run_clear(br);
        sb_info(SB_BREAKER_WHO_FMT ": circuit closed: the probe reached the upstream", SB_BREAKER_WHO(br));
        break;
    }
}

enum sb_breaker_state sb_breaker_tick(sb_breaker_t *br, int64_t now)
{
    if (br->state == SB_BREAKER_OPEN && now >= br->open_until)
        sb_breaker_set_state(br, SB_BREAKER_HALF_OPEN, now);
    return br->state;
}

enum sb_breaker_state sb_breaker_state_of(const sb_breaker_t *br)
{
    return br->state;
}

bool sb_breaker_allow_submit(sb_breaker_t *br, int64_t now, size_t queued)
{
    switch (sb_breaker_tick(br, now)) {
    case SB_BREAKER_CLOSED:
        return true;
    case SB_BREAKER_HALF_OPEN:
        return queued == 0;
    default:
        return false;
    }
}

bool sb_breaker_allow_dispatch(sb_breaker_t *br, int64_t now)
{
    enum sb_breaker_state s = sb_breaker_tick(br, now);
    return s == SB_BREAKER_CLOSED || s == SB_BREAKER_HALF_OPEN;
}

uint64_t sb_breaker_on_dispatch(sb_breaker_t *br, int64_t now)
{
    bool allowed = sb_breaker_allow_dispatch(br, now);
    assert(allowed); /* the broker asked first */
    (void)allowed;
    uint64_t ticket = br->next_ticket++;
    br->outstanding++;
    if (br->state == SB_BREAKER_HALF_OPEN) {
        br->probe_ticket = ticket;
        sb_breaker_set_state(br, SB_BREAKER_PROBING, now);
    }
    return ticket;
}

bool sb_breaker_is_probe(const sb_breaker_t *br, uint64_t ticket)
{
    return br->state == SB_BREAKER_PROBING && ticket != 0 && ticket == br->probe_ticket;
}

void sb_breaker_on_abandon(sb_breaker_t *br, uint64_t ticket)
{
    if (sb_breaker_is_probe(br, ticket))
        sb_breaker_set_state(br, SB_BREAKER_HALF_OPEN, 0);
}

/* A failure while CLOSED, by client (NULL: unknown). Returns whether the
 * circuit should open now. A per-client breaker counts every failure; a
 * model-wide one weighs them (see the header): it opens once the run counts
 * threshold and more than one client failed in it. */
static bool sb_breaker_count_failure(sb_breaker_t *br, const char *client)
{
    br->failures++;
    if (br->client)
        return br->failures >= br->threshold;
    if (!client) {
        br->run_anonymous = true;
        br->counted++;
    } else {
        int cap = (br->threshold + 1) / 2;
        size_t i = 0;
        while (i < br->run_len && strcmp(br->run[i].client, client) != 0)
            i++;
        if (i == br->run_len) {
            if (br->run_len == br->run_cap) {
                br->run_cap = br->run_cap ? 2 * br->run_cap : 4;
                br->run = sb_xrealloc(br->run, br->run_cap * sizeof br->run[0]);
            }
            br->run[i].client = sb_xstrdup(client);
            br->run[i].failures = 0;
            br->run_len++;
        }
        if (br->run[i].failures < cap)
            br->counted++;
        br->run[i].failures++;
    }
    /* Jobs without a client cannot be told apart: they count as several. */
    return br->counted >= br->threshold && (br->run_anonymous || br->run_len >= 2);
}

bool sb_breaker_on_outcome(sb_breaker_t *br, uint64_t ticket, enum sb_breaker_outcome outcome, int64_t now)
{
    return sb_breaker_on_outcome_from(br, ticket, outcome, NULL, now);
}

bool sb_breaker_on_outcome_from(sb_breaker_t *br, uint64_t ticket, enum sb_breaker_outcome outcome, const char *client,
                                int64_t now)
{
    assert(ticket != 0 && ticket < br->next_ticket && br->outstanding > 0);
    br->outstanding--;
    sb_breaker_tick(br, now);
    if (sb_breaker_is_probe(br, ticket)) {
        switch (outcome) {
        case SB_BREAKER_OK:
            sb_breaker_set_state(br, SB_BREAKER_CLOSED, now);
            return false;
        case SB_BREAKER_FAILED:
            br->failures++;
            br->reopens++;
            sb_breaker_set_state(br, SB_BREAKER_OPEN, now);
            return true;
        case SB_BREAKER_NO_OUTCOME:
            sb_breaker_set_state(br, SB_BREAKER_HALF_OPEN, now);
            return false;
        }
        return false;
    }
    /* Not the probe: only jobs dispatched while CLOSED since the last
     * opening count (in OPEN and HALF_OPEN every such job is older). */
    if (br->state != SB_BREAKER_CLOSED || ticket < br->epoch_start)
        return false;
    switch (outcome) {
    case SB_BREAKER_OK:
        if (br->failures)
            sb_debug(SB_BREAKER_WHO_FMT ": upstream ok after %d failure(s) in a row", SB_BREAKER_WHO(br), br->failures);
        br->failures = 0;
        sb_breaker_run_clear(br);
        return false;
    case SB_BREAKER_FAILED:
        if (!sb_breaker_count_failure(br, client)) {
            if (br->client)
                sb_debug(SB_BREAKER_WHO_FMT ": upstream failed (%d/%d in a row)", SB_BREAKER_WHO(br), br->failures,
                         br->threshold);
            else
                sb_debug("model %s: upstream failed (%d in a row from %zu named client(s)%s, counting %d/%d)",
                         br->model, br->failures, br->run_len, br->run_anonymous ? " and unnamed ones" : "",
                         br->counted, br->threshold);
            return false;
        }
        sb_breaker_set_state(br, SB_BREAKER_OPEN, now);
        return true;
    case SB_BREAKER_NO_OUTCOME:
        return false;
    }
    return false;
}

int64_t sb_breaker_retry_after_ms(sb_breaker_t *br, int64_t now)
{
    if (sb_breaker_tick(br, now) != SB_BREAKER_OPEN)
        return 0;
    return br->open_until - now;
}

int sb_breaker_retry_after_s(sb_breaker_t *br, int64_t now)
{
    int64_t ms = sb_breaker_retry_after_ms(br, now);
    int64_t s = (ms + 999) / 1000;
    if (s < 1)
        s = 1;
    return s > INT32_MAX ? INT32_MAX : (int)s;
}

int sb_breaker_failures(const sb_breaker_t *br)
{
    return br->failures;
}

const char *sb_breaker_model(const sb_breaker_t *br)
{
    return br->model;
}

const char *sb_breaker_client(const sb_breaker_t *br)
{
    return br->client;
}

/*
 * The set.
 */

sb_breakers_t *sb_breakers_new(int threshold, int cooldown_ms)
{
    assert(threshold >= 0 && cooldown_ms >= 1);
    sb_breakers_t *bs = sb_xcalloc(1, sizeof *bs);
    bs->by_model = sb_map_new();
    bs->by_client = sb_map_new();
    bs->clients_max = SB_BREAKER_CLIENTS_MAX;
    bs->threshold = threshold;
    bs->cooldown_ms = cooldown_ms;
    return bs;
}

/* The by_client key: the client's length first, so that no (model, client)
 * pair can spell another's key whatever bytes either holds. */
static char *sb_breakers_client_key(const char *model, const char *client)
{
    return sb_xasprintf("%zu:%s%s", strlen(client), client, model);
}

static void sb_breakers_lru_unlink(sb_breakers_t *bs, sb_breaker_t *br)
{
    if (br->lru_prev)
        br->lru_prev->lru_next = br->lru_next;
    else
        bs->lru_head = br->lru_next;
    if (br->lru_next)
        br->lru_next->lru_prev = br->lru_prev;
    else
        bs->lru_tail = br->lru_prev;
    br->lru_prev = br->lru_next = NULL;
}

static void sb_breakers_lru_push(sb_breakers_t *bs, sb_breaker_t *br)
{
    br->lru_prev = NULL;
    br->lru_next = bs->lru_head;
    if (bs->lru_head)
        bs->lru_head->lru_prev = br;
    else
        bs->lru_tail = br;
    bs->lru_head = br;
}

/* Unlinks and frees a per-client breaker (its map entry is the caller's). */
static void sb_breakers_drop_client(sb_breakers_t *bs, sb_breaker_t *br)
{
    sb_breakers_lru_unlink(bs, br);
    sb_breaker_destroy(&br);
}

static int sb_breakers_free_one(const char *key, void *value, void *arg)
{
    sb_breaker_t *br = value;
    sb_breaker_destroy(&br);
    return 1;
}

void sb_breakers_destroy(sb_breakers_t **pbs)
{
    if (!pbs || !*pbs)
        return;
    sb_breakers_t *bs = *pbs;
    sb_map_remove_if(bs->by_model, sb_breakers_free_one, NULL);
    sb_map_destroy(&bs->by_model);
    sb_map_remove_if(bs->by_client, sb_breakers_free_one, NULL);
    sb_map_destroy(&bs->by_client);
    free(bs);
    *pbs = NULL;
}

bool sb_breakers_enabled(const sb_breakers_t *bs)
{
    return bs->threshold > 0;
}

sb_breaker_t *sb_breakers_find(const sb_breakers_t *bs, const char *model)
{
    return sb_map_get(bs->by_model, model);
}

sb_breaker_t *sb_breakers_get(sb_breakers_t *bs, const char *model)
{
    if (!sb_breakers_enabled(bs))
        return NULL;
    sb_breaker_t *br = sb_map_get(bs->by_model, model);
    if (!br) {
        br = sb_breaker_new(model, bs->threshold, bs->cooldown_ms);
        sb_map_put(bs->by_model, model, br);
    }
    return br;
}

sb_breaker_t *sb_breakers_find_client(const sb_breakers_t *bs, const char *model, const char *client)
{
    if (!client || !sb_map_size(bs->by_client))
        return NULL;
    char *key = sb_breakers_client_key(model, client);
    sb_breaker_t *br = sb_map_get(bs->by_client, key);
    free(key);
    return br;
}

/* Drops least recently used per-client breakers with no ticket outstanding
 * (never keep) until at most clients_max are held or none can go. Those
 * with tickets out are bounded by the jobs in flight. */
static void sb_breakers_evict(sb_breakers_t *bs, const sb_breaker_t *keep)
{
    sb_breaker_t *br = bs->lru_tail;
    while (br && sb_map_size(bs->by_client) > bs->clients_max) {
        sb_breaker_t *prev = br->lru_prev;
        if (br != keep && br->outstanding == 0) {
            if (br->state != SB_BREAKER_CLOSED || br->failures)
                sb_info(SB_BREAKER_WHO_FMT ": forgetting this client's circuit (%s, %d failure(s)): over %zu "
                                           "client circuits",
                        SB_BREAKER_WHO(br), sb_breaker_state_name(br->state), br->failures, bs->clients_max);
            char *key = sb_breakers_client_key(br->model, br->client);
            sb_map_remove(bs->by_client, key);
            free(key);
            sb_breakers_drop_client(bs, br);
        }
        br = prev;
    }
}

sb_breaker_t *sb_breakers_get_client(sb_breakers_t *bs, const char *model, const char *client)
{
    if (!sb_breakers_enabled(bs) || !client)
        return NULL;
    char *key = sb_breakers_client_key(model, client);
    sb_breaker_t *br = sb_map_get(bs->by_client, key);
    if (br) {
        sb_breakers_lru_unlink(bs, br);
        sb_breakers_lru_push(bs, br);
    } else {
        br = sb_breaker_new_client(model, client, bs->threshold, bs->cooldown_ms);
        sb_map_put(bs->by_client, key, br);
        sb_breakers_lru_push(bs, br);
        sb_breakers_evict(bs, br);
    }
    free(key);
    return br;
}

void sb_breakers_set_clients_max(sb_breakers_t *bs, size_t max)
{
    assert(max >= 1);
    bs->clients_max = max;
    sb_breakers_evict(bs, NULL);
}

size_t sb_breakers_clients(const sb_breakers_t *bs)
{
    return sb_map_size(bs->by_client);
}

static void sb_breakers_tick_one(const char *key, void *value, void *arg)
{
    sb_breaker_tick(value, *(const int64_t *)arg);
}

void sb_breakers_tick(sb_breakers_t *bs, int64_t now)
{
    sb_map_foreach(bs->by_model, sb_breakers_tick_one, &now);
    sb_map_foreach(bs->by_client, sb_breakers_tick_one, &now);
}

static bool sb_breaker_forgettable(const sb_breaker_t *br)
{
    return br->state == SB_BREAKER_CLOSED && !br->failures && !br->outstanding;
}

static int sb_breakers_prune_one(const char *key, void *value, void *arg)
{
    sb_breaker_t *br = value;
    if (!sb_breaker_forgettable(br))
        return 0;
    sb_breaker_destroy(&br);
    return 1;
}

static int sb_breakers_prune_client(const char *key, void *value, void *arg)
{
    sb_breaker_t *br = value;
    if (!sb_breaker_forgettable(br))
        return 0;
    sb_breakers_drop_client(arg, br);
    return 1;
}

void sb_breakers_prune(sb_breakers_t *bs)
{
    sb_map_remove_if(bs->by_model, sb_breakers_prune_one, NULL);
    sb_map_remove_if(bs->by_client, sb_breakers_prune_client, bs);
}

struct sb_breakers_describe_ctx {
    int64_t now;
    char *buf;
    size_t size, off, count;
};

static void sb_breakers_describe_one(const char *key, void *value, void *arg)
{
    struct sb_breakers_describe_ctx *c = arg;
    sb_breaker_t *br = value;
    enum sb_breaker_state s = sb_breaker_tick(br, c->now);
    if (s == SB_BREAKER_CLOSED)
        return;
    c->count++;
    if (c->off >= c->size)
        return;
    const char *lb = br->client ? "[" : "", *client = br->client ? br->client : "", *rb = br->client ? "]" : "";
    int n;
    if (s == SB_BREAKER_OPEN)
        n = snprintf(c->buf + c->off, c->size - c->off, " %s%s%s%s=open(%ds)", br->model, lb, client, rb,
                     sb_breaker_retry_after_s(br, c->now));
    else
        n = snprintf(c->buf + c->off, c->size - c->off, " %s%s%s%s=%s", br->model, lb, client, rb,
                     sb_breaker_state_name(s));
    c->off = n < 0 ? c->size : c->off + (size_t)n;
}

size_t sb_breakers_describe(sb_breakers_t *bs, int64_t now, char *buf, size_t size)
{
    struct sb_breakers_describe_ctx c = {.now = now, .buf = buf, .size = size};
    if (size)
        buf[0] = '\0';
    sb_map_foreach(bs->by_model, sb_breakers_describe_one, &c);
    sb_map_foreach(bs->by_client, sb_breakers_describe_one, &c);
    if (c.off >= size && size >= 5)
        memcpy(buf + size - 5, " ...", 5);
    return c.count;
}

struct sb_breakers_each_ctx {
    void (*fn)(const sb_breaker_t *br, void *arg);
    void *arg;
};

static void sb_breakers_each_one(const char *key, void *value, void *arg)
{
    (void)key;
    struct sb_breakers_each_ctx *c = arg;
    c->fn(value, c->arg);
}

void sb_breakers_each(sb_breakers_t *bs, void (*fn)(const sb_breaker_t *br, void *arg), void *arg)
{
    struct sb_breakers_each_ctx c = {fn, arg};
    sb_map_foreach(bs->by_model, sb_breakers_each_one, &c);
    sb_map_foreach(bs->by_client, sb_breakers_each_one, &c);
}

/*
 * broker_breaker: the per-route circuit breaker's state machine and the set
 * of breakers by model (see broker_breaker.h). A breaker exists only while
 * its route has something to remember (failures counted, a circuit not
 * CLOSED, tickets outstanding); sb_breakers_prune frees the others, so a
 * healthy route costs nothing between jobs.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_breaker.h"
#include "sb_alloc.h"
#include "sb_log.h"
#include "sb_map.h"

struct sb_breaker {
    char *model;
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
};

struct sb_breakers {
    sb_map_t *by_model; /* model -> sb_breaker_t (owning) */
    int threshold;      /* 0: disabled */
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
    br->threshold = threshold;
    br->cooldown_ms = cooldown_ms;
    br->state = SB_BREAKER_CLOSED;
    br->next_ticket = 1;
    br->epoch_start = 1;
    return br;
}

void sb_breaker_destroy(sb_breaker_t **pbr)
{
    if (!pbr || !*pbr)
        return;
    free((*pbr)->model);
    free(*pbr);
    *pbr = NULL;
}

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
        sb_warn("model %s: circuit opened: its upstream failed %d time(s) in a row%s; refusing its jobs for %lld ms",
                br->model, br->failures, from == SB_BREAKER_PROBING ? " (the probe failed)" : "", (long long)cooldown);
        break;
    }
    case SB_BREAKER_HALF_OPEN:
        br->probe_ticket = 0;
        if (from == SB_BREAKER_OPEN)
            sb_info("model %s: circuit half-open: the next job probes the upstream", br->model);
        else
            sb_info("model %s: circuit half-open again: the probe ended without an outcome; the next job probes",
                    br->model);
        break;
    case SB_BREAKER_PROBING:
        sb_debug("model %s: circuit probing: job ticket %llu is the probe", br->model,
                 (unsigned long long)br->probe_ticket);
        break;
    case SB_BREAKER_CLOSED:
        br->probe_ticket = 0;
        br->failures = 0;
        br->reopens = 0;
        sb_info("model %s: circuit closed: the probe reached the upstream", br->model);
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

bool sb_breaker_on_outcome(sb_breaker_t *br, uint64_t ticket, enum sb_breaker_outcome outcome, int64_t now)
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
            sb_debug("model %s: upstream ok after %d failure(s) in a row", br->model, br->failures);
        br->failures = 0;
        return false;
    case SB_BREAKER_FAILED:
        br->failures++;
        if (br->failures < br->threshold) {
            sb_debug("model %s: upstream failed (%d/%d in a row)", br->model, br->failures, br->threshold);
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

/*
 * The set.
 */

sb_breakers_t *sb_breakers_new(int threshold, int cooldown_ms)
{
    assert(threshold >= 0 && cooldown_ms >= 1);
    sb_breakers_t *bs = sb_xcalloc(1, sizeof *bs);
    bs->by_model = sb_map_new();
    bs->threshold = threshold;
    bs->cooldown_ms = cooldown_ms;
    return bs;
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

static void sb_breakers_tick_one(const char *key, void *value, void *arg)
{
    sb_breaker_tick(value, *(const int64_t *)arg);
}

void sb_breakers_tick(sb_breakers_t *bs, int64_t now)
{
    sb_map_foreach(bs->by_model, sb_breakers_tick_one, &now);
}

static int sb_breakers_prune_one(const char *key, void *value, void *arg)
{
    sb_breaker_t *br = value;
    if (br->state != SB_BREAKER_CLOSED || br->failures || br->outstanding)
        return 0;
    sb_breaker_destroy(&br);
    return 1;
}

void sb_breakers_prune(sb_breakers_t *bs)
{
    sb_map_remove_if(bs->by_model, sb_breakers_prune_one, NULL);
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
    int n;
    if (s == SB_BREAKER_OPEN)
        n = snprintf(c->buf + c->off, c->size - c->off, " %s=open(%ds)", br->model,
                     sb_breaker_retry_after_s(br, c->now));
    else
        n = snprintf(c->buf + c->off, c->size - c->off, " %s=%s", br->model, sb_breaker_state_name(s));
    c->off = n < 0 ? c->size : c->off + (size_t)n;
}

size_t sb_breakers_describe(sb_breakers_t *bs, int64_t now, char *buf, size_t size)
{
    struct sb_breakers_describe_ctx c = {.now = now, .buf = buf, .size = size};
    if (size)
        buf[0] = '\0';
    sb_map_foreach(bs->by_model, sb_breakers_describe_one, &c);
    if (c.off >= size && size >= 5)
        memcpy(buf + size - 5, " ...", 5);
    return c.count;
}

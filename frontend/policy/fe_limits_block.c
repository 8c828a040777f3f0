/* fe_limits_block: one limited key's capacity block per key id (fe_limits_block.h). */
#include "fe_limits_block.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_sql.h"
#include "sb_alloc.h"
#include "sb_id.h"
#include "sb_log.h"
#include "sb_map.h"
#include "sb_time.h"

/* The block's rows in PostgreSQL outlive the longest lease a request asked
 * for by this much; they are renewed when less than half of it is left. */
#define FE_LIMITS_BLOCK_RENEW_MS 60000
/* After an exchange that failed or granted too little to admit a request. */
#define FE_LIMITS_BLOCK_RETRY_MS 1000
/* A key's second admission within this long asks for a block. */
#define FE_LIMITS_BLOCK_DEMAND_MS 1000
/* Requests asked for per exchange: twice those of the last period, within these. */
#define FE_LIMITS_BLOCK_WANT_MIN 4
#define FE_LIMITS_BLOCK_WANT_MAX 4096

struct fe_limits_blocks {
    struct event_base *base;
    fe_limits_batch_t *writers;
    char prefix[24];  /* "blk_" + 16 hex digits: this process's blocks */
    sb_map_t *blocks; /* key id -> fe_limits_block_t */
};

struct fe_limits_block {
    fe_limits_blocks_t *bs;
    long long key_id;
    char id[FE_LIMITS_BLOCK_ID_MAX];
    int64_t req, tok;                      /* unspent requests and tokens; -1: no limit there */
    int slots_free;                        /* held and unused; -1: no concurrency limit */
    int slots_held;                        /* slot rows held in PostgreSQL */
    int busy;                              /* requests admitted from the block still running */
    int64_t tok_diff;                      /* real - reserved of ended requests, not yet reported */
    int64_t ret_req, ret_tok;              /* to give back: unspent cells of an earlier grant, no longer spent */
    int ret_slots;                         /* slots to give back (not among the free ones) */
    int slots_owed;                        /* busy slots over a lowered limit: they go back as their requests end */
    int64_t sent_req, sent_tok, sent_diff; /* what the exchange in flight gives back and reports */
    int sent_slots;
    int64_t grant_req, grant_tok; /* the last grant: the low-water marks are half of it */
    int64_t spent;                /* the key's admissions here since the last exchange */
    int64_t unit;                 /* the largest reservation among them */
    int64_t ttl_ms;               /* the longest lease a request of the key asked for */
    int64_t sent_us, sent_ttl_ms; /* the exchange in flight */
    int64_t cells_until_us;       /* req and tok are spent before this or given back */
    int64_t rows_until_us;        /* the rows' lifetime in PostgreSQL (an estimate on the safe side) */
    int64_t last_demand_us;       /* the key's last admission here */
    int64_t retry_at_us;          /* no exchange asking for more before this */
    bool exchanging;
    struct event *timer;
};

fe_limits_blocks_t *fe_limits_blocks_new(struct event_base *base, fe_limits_batch_t *writers)
{
    fe_limits_blocks_t *bs = sb_xcalloc(1, sizeof *bs);
    bs->base = base;
    bs->writers = writers;
    sb_id_new(bs->prefix, sizeof bs->prefix, "blk_", 8);
    bs->blocks = sb_map_new();
    return bs;
}

static void fe_limits_block_free(fe_limits_block_t *b)
{
    if (b->timer)
        event_free(b->timer);
    free(b);
}

static int fe_limits_block_drop(const char *key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    fe_limits_block_free(value);
    return 1;
}

void fe_limits_blocks_free(fe_limits_blocks_t **pbs)
{
    if (!pbs || !*pbs)
        return;
    fe_limits_blocks_t *bs = *pbs;
    sb_map_remove_if(bs->blocks, fe_limits_block_drop, NULL);
    sb_map_destroy(&bs->blocks);
    free(bs);
    *pbs = NULL;
}

static int64_t fe_limits_pos(int64_t v)
{
    return v > 0 ? v : 0;
}

/* Whether the block holds nothing: it may go (a new one is made on demand). */
static bool fe_limits_block_empty(const fe_limits_block_t *b)
{
    return !b->exchanging && b->busy == 0 && b->slots_held == 0 && b->req <= 0 && b->tok <= 0 && b->tok_diff == 0 &&
           b->ret_req == 0 && b->ret_tok == 0 && b->ret_slots == 0;
}

static void fe_limits_block_on_exchange(const PGresult *res, int row, const char *err, void *arg);

/* Sends the block's exchange: what is to go back goes, with the token
 * difference of the ended requests. With want, a new block sized by the
 * last period's admissions is asked for, and the current one is spent
 * meanwhile (what is left of it goes back with the next exchange); without,
 * the current cells and the free slots go back now. */
static void fe_limits_block_exchange(fe_limits_block_t *b, bool want)
{
    if (b->exchanging)
        return;
    if (!want) {
        b->ret_req += fe_limits_pos(b->req);
        b->ret_tok += fe_limits_pos(b->tok);
        b->req = b->req < 0 ? -1 : 0;
        b->tok = b->tok < 0 ? -1 : 0;
        if (b->slots_free > 0) {
            b->ret_slots += b->slots_free;
            b->slots_free = 0;
        }
    }
    int64_t want_req = 0, want_tok = 0, want_slots = 0;
    if (want) {
        want_req = 2 * b->spent;
        if (want_req < FE_LIMITS_BLOCK_WANT_MIN)
            want_req = FE_LIMITS_BLOCK_WANT_MIN;
        if (want_req > FE_LIMITS_BLOCK_WANT_MAX)
            want_req = FE_LIMITS_BLOCK_WANT_MAX;
        want_tok = want_req * (b->unit > 0 ? b->unit : 1);
        int target = b->busy / 2 + 2;
        want_slots = target > b->slots_free ? target - (b->slots_free > 0 ? b->slots_free : 0) : 0;
    }
    b->sent_req = b->ret_req;
    b->sent_tok = b->ret_tok;
    b->sent_slots = b->ret_slots;
    b->sent_diff = b->tok_diff;
    b->sent_us = sb_mono_us();
    b->sent_ttl_ms = b->ttl_ms + FE_LIMITS_BLOCK_RENEW_MS;
    /* have_*: what is kept once the answer comes (the current cells go back then). */
    json_t *row =
        json_pack("{s:s, s:I, s:i, s:I, s:I, s:i, s:I, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:I}", "block", b->id,
                  "key_id", (json_int_t)b->key_id, "slots_held", b->slots_held, "ret_req", (json_int_t)b->sent_req,
                  "ret_tok", (json_int_t)b->sent_tok, "ret_slots", b->sent_slots, "tok_diff", (json_int_t)b->sent_diff,
                  "have_req", 0, "have_tok", 0, "have_slots", b->slots_free > 0 ? b->slots_free : 0, "want_req",
                  (json_int_t)want_req, "want_tok", (json_int_t)want_tok, "want_slots", (json_int_t)want_slots, "unit",
                  (json_int_t)(b->unit > 0 ? b->unit : 1), "ttl_ms", (json_int_t)b->sent_ttl_ms);
    b->spent = 0;
    b->unit = 0;
    b->exchanging = true;
    fe_storebatch_add_row(fe_limits_batch_block(b->bs->writers, b->key_id), row, fe_limits_block_on_exchange, b);
}

/* Whether a request reserving `reserve` tokens, whose lease lasts ttl_ms,
 * can be admitted from the block now. */
static bool fe_limits_block_fits(const fe_limits_block_t *b, int64_t reserve, int64_t ttl_ms, int64_t now)
{
    if (b->req == 0 || b->slots_free == 0 || (b->tok >= 0 && b->tok < reserve))
        return false;
    if ((b->req > 0 || b->tok >= 0) && now >= b->cells_until_us)
        return false;
    if ((b->slots_free > 0 || b->tok >= 0) && now + ttl_ms * 1000 > b->rows_until_us)
        return false;
    return b->rows_until_us > 0;
}

static void fe_limits_block_arm(fe_limits_block_t *b)
{
    if (!evtimer_pending(b->timer, NULL)) {
        struct timeval tv = {0, FE_LIMITS_BLOCK_HOLD_MS * 1000};
        evtimer_add(b->timer, &tv);
    }
}

/* Every FE_LIMITS_BLOCK_HOLD_MS while the block holds anything: cells past
 * their time go back (with a new block when the key was busy), idle slots
 * and pending corrections are reported, rows running requests hold are
 * renewed, and an empty block goes. */
static void fe_limits_block_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fe_limits_block_t *b = arg;
    int64_t now = sb_mono_us();
    bool idle = now - b->last_demand_us >= FE_LIMITS_BLOCK_HOLD_MS * 1000;
    bool pending = b->ret_req || b->ret_tok || b->ret_slots || b->tok_diff;
    if (!b->exchanging) {
        if ((b->req > 0 || b->tok > 0) && now >= b->cells_until_us)
            fe_limits_block_exchange(b, b->spent > 0 && now >= b->retry_at_us);
        else if (idle && (pending || (b->slots_free > 0 && b->busy == 0)))
            fe_limits_block_exchange(b, false);
        else if (b->slots_held > 0 && b->rows_until_us - now < (b->ttl_ms + FE_LIMITS_BLOCK_RENEW_MS / 2) * 1000)
            fe_limits_block_exchange(b, !idle); /* renewal; a busy key keeps its block */
    }
    if (fe_limits_block_empty(b)) {
        char key[24];
        snprintf(key, sizeof key, "%lld", b->key_id);
        sb_map_remove(b->bs->blocks, key);
        fe_limits_block_free(b);
        return;
    }
    fe_limits_block_arm(b);
}

static void fe_limits_block_on_exchange(const PGresult *res, int row, const char *err, void *arg)
{
    fe_limits_block_t *b = arg;
    b->exchanging = false;
    int64_t now = sb_mono_us();
    if (err) {
        /* Nothing changed in the database: what went back is sent again. */
        sb_warn("capacity block exchange of key %lld failed: %s", b->key_id, err);
        b->retry_at_us = now + FE_LIMITS_BLOCK_RETRY_MS * 1000;
        fe_limits_block_arm(b);
        return;
    }
    b->slots_held -= b->sent_slots;
    b->ret_req -= b->sent_req;
    b->ret_tok -= b->sent_tok;
    b->ret_slots -= b->sent_slots;
    b->tok_diff -= b->sent_diff;
    int64_t req = strtoll(PQgetvalue(res, row, 1), NULL, 10);
    int64_t tok = strtoll(PQgetvalue(res, row, 2), NULL, 10);
    int slots = (int)strtol(PQgetvalue(res, row, 3), NULL, 10);
    /* What is left of the current cells goes back with the next exchange. */
    b->ret_req += fe_limits_pos(b->req);
    b->ret_tok += fe_limits_pos(b->tok);
    b->req = req;
    b->tok = tok;
    b->grant_req = req;
    b->grant_tok = tok;
    if (slots < -1) {
        /* Over a lowered concurrency limit: free slots go back. */
        int back = -slots < b->slots_free ? -slots : b->slots_free;
        if (back > 0) {
            b->slots_free -= back;
            b->ret_slots += back;
        }
        b->slots_owed = -slots - back;
    } else if (slots < 0) {
        /* No concurrency limit (any more): rows still held go back. */
        b->slots_free = -1;
        b->ret_slots = b->slots_held;
        b->slots_owed = 0;
    } else {
        b->slots_owed = 0;
        b->slots_free = (b->slots_free > 0 ? b->slots_free : 0) + slots;
        b->slots_held += slots;
    }
    b->cells_until_us = b->sent_us + FE_LIMITS_BLOCK_HOLD_MS * 1000;
    b->rows_until_us = b->sent_us + b->sent_ttl_ms * 1000;
    if (b->req == 0 || (b->tok >= 0 && b->tok < 1) || b->slots_free == 0)
        b->retry_at_us = now + FE_LIMITS_BLOCK_RETRY_MS * 1000;
    fe_limits_block_arm(b);
}

static fe_limits_block_t *fe_limits_block_get(fe_limits_blocks_t *bs, long long key_id)
{
    char key[24];
    snprintf(key, sizeof key, "%lld", key_id);
    fe_limits_block_t *b = sb_map_get(bs->blocks, key);
    if (b)
        return b;
    b = sb_xcalloc(1, sizeof *b);
    b->bs = bs;
    b->key_id = key_id;
    snprintf(b->id, sizeof b->id, "%s_%lld", bs->prefix, key_id);
    b->timer = evtimer_new(bs->base, fe_limits_block_tick, b);
    sb_map_put(bs->blocks, key, b);
    return b;
}

bool fe_limits_block_take(fe_limits_blocks_t *bs, long long key_id, int64_t reserve, int64_t ttl_ms,
                          fe_limits_taken_t *t)
{
    fe_limits_block_t *b = fe_limits_block_get(bs, key_id);
    int64_t now = sb_mono_us();
    int64_t prev = b->last_demand_us;
    b->last_demand_us = now;
    b->spent++;
    if (reserve > b->unit)
        b->unit = reserve;
    if (ttl_ms > b->ttl_ms)
        b->ttl_ms = ttl_ms;
    fe_limits_block_arm(b);
    if (!fe_limits_block_fits(b, reserve, ttl_ms, now)) {
        if (!b->exchanging && now >= b->retry_at_us && prev > 0 && now - prev < FE_LIMITS_BLOCK_DEMAND_MS * 1000)
            fe_limits_block_exchange(b, true);
        return false;
    }
    memset(t, 0, sizeof *t);
    t->block = b;
    snprintf(t->id, sizeof t->id, "%s", b->id);
    if (b->req > 0)
        b->req--;
    t->reserved = -1;
    if (b->tok >= 0) {
        b->tok -= reserve;
        t->reserved = reserve;
    }
    if (b->slots_free > 0) {
        b->slots_free--;
        t->slot = true;
    }
    b->busy++;
    /* Below half of the last grant (or out of slots, or half the cells'
     * time gone): the next block is asked for now, so it comes before
     * this one runs out. */
    if (now >= b->retry_at_us &&
        ((b->req >= 0 && b->req * 2 < b->grant_req) || (b->tok >= 0 && b->tok * 2 < b->grant_tok) ||
         b->slots_free == 0 || now >= b->cells_until_us - FE_LIMITS_BLOCK_HOLD_MS * 500))
        fe_limits_block_exchange(b, true);
    return true;
}

void fe_limits_block_put(fe_limits_taken_t *t, int64_t used)
{
    fe_limits_block_t *b = t->block;
    if (!b)
        return;
    b->busy--;
    if (t->slot && b->slots_owed > 0) {
        b->slots_owed--;
        b->ret_slots++;
    } else if (t->slot && b->slots_free >= 0) {
        b->slots_free++;
    }
    if (t->reserved >= 0)
        b->tok_diff += used - t->reserved;
    t->block = NULL;
    fe_limits_block_arm(b);
}

struct fe_limits_return {
    sb_db_t *db;
    int failed;
};

static void fe_limits_block_return(const char *key, void *value, void *arg)
{
    (void)key;
    fe_limits_block_t *b = value;
    struct fe_limits_return *ret = arg;
    if (b->exchanging) /* what it gives back is in flight; its rows expire if it fails */
        return;
    int64_t rreq = b->ret_req + fe_limits_pos(b->req), rtok = b->ret_tok + fe_limits_pos(b->tok);
    int rslots = b->ret_slots + (b->slots_free > 0 ? b->slots_free : 0);
    int64_t diff = b->tok_diff;
    if (rreq == 0 && rtok == 0 && rslots == 0 && diff == 0)
        return;
    char p[8][24];
    snprintf(p[0], sizeof p[0], "%lld", b->key_id);
    snprintf(p[1], sizeof p[1], "%d", b->slots_held);
    snprintf(p[2], sizeof p[2], "%lld", (long long)rreq);
    snprintf(p[3], sizeof p[3], "%lld", (long long)rtok);
    snprintf(p[4], sizeof p[4], "%d", rslots);
    snprintf(p[5], sizeof p[5], "%lld", (long long)diff);
    snprintf(p[6], sizeof p[6], "%d", FE_LIMITS_BLOCK_RENEW_MS);
    const char *params[] = {b->id, p[0], p[1], p[2], p[3], p[4], p[5], p[6]};
    if (sb_db_exec_blocking(ret->db,
                            "SELECT * FROM sb_limit_block($1, $2::bigint, $3::integer, $4::bigint, $5::bigint, "
                            "$6::integer, $7::bigint, 0, 0, 0, 0, 0, 0, 1, $8::integer)",
                            8, params) != 0)
        ret->failed++;
}

static void fe_limits_block_flush_one(const char *key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    fe_limits_block_t *b = value;
    fe_limits_block_exchange(b, false);
    fe_limits_block_arm(b);
}

void fe_limits_blocks_flush(fe_limits_blocks_t *bs)
{
    sb_map_foreach(bs->blocks, fe_limits_block_flush_one, NULL);
}

void fe_limits_blocks_return_all(fe_limits_blocks_t *bs, sb_db_t *db)
{
    struct fe_limits_return ret = {db, 0};
    sb_map_foreach(bs->blocks, fe_limits_block_return, &ret);
    if (ret.failed)
        sb_warn("%d capacity blocks could not be given back at shutdown (they expire)", ret.failed);
}

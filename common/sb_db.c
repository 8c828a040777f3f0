/*
 * sb_db: non-blocking libpq pool.
 *
 * Each connection is a small state machine (fe_conn_state). Queries wait in
 * one FIFO and go to the first idle connection; a connection runs one query
 * at a time and always drains results to NULL before the next. A broken
 * connection fails its query and reconnects asynchronously (PQconnectStart)
 * after a back-off, so the loop never blocks after start-up.
 */
#include "sb_db.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_log.h"

#define FE_DB_RECONNECT_MS 1000

enum fe_conn_state {
    FE_CONN_DOWN,       /* no connection; a reconnect timer is pending */
    FE_CONN_CONNECTING, /* PQconnectPoll in progress */
    FE_CONN_PREPARING,  /* sending PREPAREs, one at a time (prep_next) */
    FE_CONN_IDLE,       /* ready for a query */
    FE_CONN_BUSY,       /* a query is running; results being drained */
};

typedef struct fe_query {
    struct fe_query *next;
    char *stmt;
    int nparams;
    char **params;
    sb_db_cb cb;
    void *arg;
} fe_query_t;

typedef struct fe_conn {
    sb_db_t *db;
    PGconn *pg;
    enum fe_conn_state state;
    struct event *io;    /* socket readiness; recreated per connection */
    struct event *timer; /* reconnect back-off */
    int prep_next;       /* index of the next statement to prepare */
    bool is_listener;
    fe_query_t *query; /* running query (BUSY) */
    PGresult *result;  /* first result of the running query */
    char *error;       /* first error of the running query */
} fe_conn_t;

struct sb_db {
    struct event_base *base;
    char *dsn;
    const sb_db_stmt_t *stmts;
    int nstmts;
    fe_conn_t *conns;
    int nconns;
    fe_query_t *head, *tail;
    int queued;
    fe_conn_t *listener;
    const char *channel;
    sb_db_notify_cb notify_cb;
    void *notify_arg;
    struct event *kick; /* runs dispatch from the loop */
};

static void fe_conn_io(evutil_socket_t fd, short what, void *arg);
static void fe_conn_start(fe_conn_t *c);
static void sb_db_dispatch(sb_db_t *db);

static void fe_conn_set_state(fe_conn_t *c, enum fe_conn_state s)
{
    c->state = s;
}

static void fe_query_free(fe_query_t *q)
{
    for (int i = 0; i < q->nparams; i++)
        free(q->params[i]);
    free(q->params);
    free(q->stmt);
    free(q);
}

static void fe_conn_watch(fe_conn_t *c, short what)
{
    if (c->io)
        event_free(c->io);
    c->io = event_new(c->db->base, PQsocket(c->pg), what | EV_PERSIST, fe_conn_io, c);
    event_add(c->io, NULL);
}

/* Ends the running query: the callback sees the first result or the error. */
static void fe_conn_finish_query(fe_conn_t *c)
{
    fe_query_t *q = c->query;
    c->query = NULL;
    if (q) {
        q->cb(c->error ? NULL : c->result, c->error, q->arg);
        fe_query_free(q);
    }
    PQclear(c->result);
    c->result = NULL;
    free(c->error);
    c->error = NULL;
}

static void fe_conn_reconnect_cb(evutil_socket_t fd, short what, void *arg)
{
    fe_conn_start(arg);
}

static void fe_conn_fail(fe_conn_t *c, const char *why)
{
    sb_warn("database connection lost: %s", why);
    if (c->query && !c->error)
        c->error = sb_xstrdup("database unavailable");
    fe_conn_finish_query(c);
    if (c->io) {
        event_free(c->io);
        c->io = NULL;
    }
    PQfinish(c->pg);
    c->pg = NULL;
    fe_conn_set_state(c, FE_CONN_DOWN);
    struct timeval tv = {FE_DB_RECONNECT_MS / 1000, (FE_DB_RECONNECT_MS % 1000) * 1000};
    evtimer_add(c->timer, &tv);
    /* With no healthy connection left, waiting queries fail now rather than hang. */
    if (!c->is_listener)
        event_active(c->db->kick, 0, 0);
}

/* Flushes outgoing data; waits for writability while libpq has more. */
static int fe_conn_flush(fe_conn_t *c)
{
    int rc = PQflush(c->pg);
    if (rc < 0)
        return -1;
    fe_conn_watch(c, rc == 1 ? (EV_READ | EV_WRITE) : EV_READ);
    return 0;
}

static void fe_conn_prepare_next(fe_conn_t *c)
{
    sb_db_t *db = c->db;
    if (c->is_listener) {
        char sql[128];
        snprintf(sql, sizeof sql, "LISTEN %s", db->channel);
        if (!PQsendQuery(c->pg, sql) || fe_conn_flush(c) < 0) {
            fe_conn_fail(c, PQerrorMessage(c->pg));
            return;
        }
        c->prep_next = db->nstmts; /* nothing else to prepare */
        fe_conn_set_state(c, FE_CONN_PREPARING);
        return;
    }
    if (c->prep_next >= db->nstmts) {
        fe_conn_set_state(c, FE_CONN_IDLE);
        fe_conn_watch(c, EV_READ);
        sb_db_dispatch(db);
        return;
    }
    const sb_db_stmt_t *s = &db->stmts[c->prep_next++];
    if (!PQsendPrepare(c->pg, s->name, s->sql, 0, NULL) || fe_conn_flush(c) < 0)
        fe_conn_fail(c, PQerrorMessage(c->pg));
    else
        fe_conn_set_state(c, FE_CONN_PREPARING);
}

static void fe_conn_start(fe_conn_t *c)
{
    c->pg = PQconnectStart(c->db->dsn);
    if (!c->pg || PQstatus(c->pg) == CONNECTION_BAD) {
        fe_conn_fail(c, c->pg ? PQerrorMessage(c->pg) : "out of memory");
        return;
    }
    PQsetnonblocking(c->pg, 1);
    c->prep_next = 0;
    fe_conn_set_state(c, FE_CONN_CONNECTING);
    fe_conn_watch(c, EV_WRITE);
}

static void fe_conn_poll_connect(fe_conn_t *c)
{
    switch (PQconnectPoll(c->pg)) {
    case PGRES_POLLING_READING:
        fe_conn_watch(c, EV_READ);
        break;
    case PGRES_POLLING_WRITING:
        fe_conn_watch(c, EV_WRITE);
        break;
    case PGRES_POLLING_OK:
        PQsetnonblocking(c->pg, 1);
        if (c->is_listener && c->db->notify_cb)
            c->db->notify_cb(NULL, c->db->notify_arg); /* may have missed notifications */
        fe_conn_prepare_next(c);
        break;
    default:
        fe_conn_fail(c, PQerrorMessage(c->pg));
    }
}

/* Reads what arrived; returns true when the current command's results are
 * fully drained (PQgetResult returned NULL). */
static bool fe_conn_drain(fe_conn_t *c, bool *failed)
{
    *failed = false;
    if (!PQconsumeInput(c->pg)) {
        *failed = true;
        return false;
    }
    while (!PQisBusy(c->pg)) {
        PGresult *r = PQgetResult(c->pg);
        if (!r)
            return true;
        ExecStatusType st = PQresultStatus(r);
        if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && !c->error)
            c->error = sb_xstrdup(PQresultErrorMessage(r));
        if (!c->result && (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK))
            c->result = r;
        else
            PQclear(r);
    }
    return false;
}

static void fe_conn_notifies(fe_conn_t *c)
{
    PGnotify *n;
    while ((n = PQnotifies(c->pg)) != NULL) {
        if (c->db->notify_cb)
            c->db->notify_cb(n->extra ? n->extra : "", c->db->notify_arg);
        PQfreemem(n);
    }
}

static void fe_conn_io(evutil_socket_t fd, short what, void *arg)
{
    fe_conn_t *c = arg;
    bool failed;
    if (c->state == FE_CONN_CONNECTING) {
        fe_conn_poll_connect(c);
        return;
    }
    if ((what & EV_WRITE) && fe_conn_flush(c) < 0) {
        fe_conn_fail(c, PQerrorMessage(c->pg));
        return;
    }
    if (!(what & EV_READ))
        return;
    switch (c->state) {
    case FE_CONN_PREPARING:
        if (fe_conn_drain(c, &failed)) {
            if (c->error) {
                sb_error("preparing statements failed: %s", c->error);
                free(c->error);
                c->error = NULL;
            }
            PQclear(c->result);
            c->result = NULL;
            if (c->is_listener) {
                fe_conn_set_state(c, FE_CONN_IDLE);
                fe_conn_watch(c, EV_READ);
            } else {
                fe_conn_prepare_next(c);
            }
        }
        break;
    case FE_CONN_BUSY:
        if (fe_conn_drain(c, &failed)) {
            fe_conn_finish_query(c);
            fe_conn_set_state(c, FE_CONN_IDLE);
            sb_db_dispatch(c->db);
        }
        break;
    case FE_CONN_IDLE:
        /* Notifications (listener) or an unexpected close. */
        if (!PQconsumeInput(c->pg))
            failed = true;
        else {
            failed = false;
            fe_conn_notifies(c);
        }
        break;
    default:
        failed = false;
    }
    if (c->is_listener && c->pg)
        fe_conn_notifies(c);
    if (failed || (c->pg && PQstatus(c->pg) == CONNECTION_BAD))
        fe_conn_fail(c, c->pg ? PQerrorMessage(c->pg) : "connection closed");
}

static void sb_db_dispatch(sb_db_t *db)
{
    for (int i = 0; i < db->nconns && db->head; i++) {
        fe_conn_t *c = &db->conns[i];
        if (c->state != FE_CONN_IDLE)
            continue;
        fe_query_t *q = db->head;
        db->head = q->next;
        if (!db->head)
            db->tail = NULL;
        db->queued--;
        c->query = q;
        if (!PQsendQueryPrepared(c->pg, q->stmt, q->nparams, (const char *const *)q->params, NULL, NULL, 0) ||
            fe_conn_flush(c) < 0) {
            fe_conn_fail(c, PQerrorMessage(c->pg));
            continue;
        }
        fe_conn_set_state(c, FE_CONN_BUSY);
    }
}

/* Runs from the loop after sb_db_query: dispatch, or fail at once when every
 * connection is down (callers must not wait for a reconnect that may be far). */
static void sb_db_kick_cb(evutil_socket_t fd, short what, void *arg)
{
    sb_db_t *db = arg;
    bool any_up = false;
    for (int i = 0; i < db->nconns; i++)
        if (db->conns[i].state != FE_CONN_DOWN)
            any_up = true;
    if (!any_up) {
        while (db->head) {
            fe_query_t *q = db->head;
            db->head = q->next;
            db->queued--;
            q->cb(NULL, "database unavailable", q->arg);
            fe_query_free(q);
        }
        db->tail = NULL;
        return;
    }
    sb_db_dispatch(db);
}

static void fe_conn_init(sb_db_t *db, fe_conn_t *c, bool listener)
{
    c->db = db;
    c->is_listener = listener;
    c->timer = evtimer_new(db->base, fe_conn_reconnect_cb, c);
}

sb_db_t *sb_db_new(struct event_base *base, const char *dsn, int nconns, const sb_db_stmt_t *stmts, int nstmts,
                   char *err, size_t errlen)
{
    /* Fail fast on a bad DSN or unreachable server before going asynchronous. */
    PGconn *probe = PQconnectdb(dsn);
    if (PQstatus(probe) != CONNECTION_OK) {
        snprintf(err, errlen, "%s", PQerrorMessage(probe));
        PQfinish(probe);
        return NULL;
    }
    PQfinish(probe);

    sb_db_t *db = sb_xcalloc(1, sizeof *db);
    db->base = base;
    db->dsn = sb_xstrdup(dsn);
    db->stmts = stmts;
    db->nstmts = nstmts;
    db->nconns = nconns;
    db->conns = sb_xcalloc((size_t)nconns, sizeof *db->conns);
    db->kick = event_new(base, -1, 0, sb_db_kick_cb, db);
    for (int i = 0; i < nconns; i++) {
        fe_conn_init(db, &db->conns[i], false);
        fe_conn_start(&db->conns[i]);
    }
    return db;
}

static void fe_conn_close(fe_conn_t *c)
{
    if (c->query) {
        c->error = c->error ? c->error : sb_xstrdup("shutting down");
        fe_conn_finish_query(c);
    }
    if (c->io)
        event_free(c->io);
    if (c->timer)
        event_free(c->timer);
    PQfinish(c->pg);
}

void sb_db_destroy(sb_db_t **pdb)
{
    if (!pdb || !*pdb)
        return;
    sb_db_t *db = *pdb;
    for (int i = 0; i < db->nconns; i++)
        fe_conn_close(&db->conns[i]);
    while (db->head) {
        fe_query_t *q = db->head;
        db->head = q->next;
        q->cb(NULL, "shutting down", q->arg);
        fe_query_free(q);
    }
    if (db->listener) {
        fe_conn_close(db->listener);
        free(db->listener);
    }
    event_free(db->kick);
    free(db->conns);
    free(db->dsn);
    free(db);
    *pdb = NULL;
}

void sb_db_query(sb_db_t *db, const char *stmt, int nparams, const char *const *params, sb_db_cb cb, void *arg)
{
    fe_query_t *q = sb_xcalloc(1, sizeof *q);
    q->stmt = sb_xstrdup(stmt);
    q->nparams = nparams;
    q->params = sb_xcalloc((size_t)nparams + 1, sizeof *q->params);
    for (int i = 0; i < nparams; i++)
        q->params[i] = params[i] ? sb_xstrdup(params[i]) : NULL;
    q->cb = cb;
    q->arg = arg;
    if (db->tail)
        db->tail->next = q;
    else
        db->head = q;
    db->tail = q;
    db->queued++;
    event_active(db->kick, 0, 0);
}

int sb_db_listen(sb_db_t *db, const char *channel, sb_db_notify_cb cb, void *arg)
{
    if (db->listener)
        return -EEXIST;
    db->channel = channel;
    db->notify_cb = cb;
    db->notify_arg = arg;
    db->listener = sb_xcalloc(1, sizeof *db->listener);
    fe_conn_init(db, db->listener, true);
    fe_conn_start(db->listener);
    return 0;
}

int sb_db_exec_blocking(sb_db_t *db, const char *sql, int nparams, const char *const *params)
{
    PGconn *pg = PQconnectdb(db->dsn);
    int rc = -EIO;
    if (PQstatus(pg) == CONNECTION_OK) {
        PGresult *r = PQexecParams(pg, sql, nparams, NULL, params, NULL, NULL, 0);
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
            rc = 0;
        else
            sb_error("blocking statement failed: %s", PQresultErrorMessage(r));
        PQclear(r);
    } else {
        sb_error("blocking connection failed: %s", PQerrorMessage(pg));
    }
    PQfinish(pg);
    return rc;
}

bool sb_db_available(const sb_db_t *db)
{
    for (int i = 0; i < db->nconns; i++) {
        enum fe_conn_state s = db->conns[i].state;
        if (s == FE_CONN_PREPARING || s == FE_CONN_IDLE || s == FE_CONN_BUSY)
            return true;
    }
    return false;
}

void sb_db_usage(const sb_db_t *db, sb_db_usage_t *u)
{
    *u = (sb_db_usage_t){.total = db->nconns, .queued = db->queued};
    for (int i = 0; i < db->nconns; i++) {
        enum fe_conn_state s = db->conns[i].state;
        if (s == FE_CONN_BUSY)
            u->busy++;
        else if (s == FE_CONN_IDLE)
            u->idle++;
        else
            u->down++;
    }
}

int sb_db_pending(const sb_db_t *db)
{
    int n = db->queued;
    for (int i = 0; i < db->nconns; i++)
        n += db->conns[i].query ? 1 : 0;
    return n;
}

int sb_db_stmt_join(sb_db_stmt_t *out, int max, const sb_db_stmt_set_t *sets, size_t nsets)
{
    int n = 0;
    for (size_t i = 0; i < nsets; i++)
        for (int k = 0; k < sets[i].count && n < max; k++)
            out[n++] = sets[i].stmts[k];
    return n;
}

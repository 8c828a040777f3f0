/*
 * worker_internal: the worker's private types, shared by its three files and
 * by nothing else (tests and main.c see only worker.h).
 *
 * The files are layered, each calling only downward:
 *   worker.c  the broker session: socket, READY, heartbeats, liveness,
 *             reconnects, drain, and the safe-point reap of finished jobs;
 *   wjob.c    one job's life: receive, check, fan-out, the strict hold, the
 *             final event;
 *   wcall.c   one upstream call's life: an attempt, its idle timer, the
 *             retry decision.
 * A call reports to its job through the sb_wcall_ops_t its job hands in (as
 * upstream.h reports to a call through sb_upstream_cbs_t), and a job writes to
 * the broker through sb_worker_send() below, so no file names a function of
 * the file above it.
 *
 * Ownership: the worker owns its jobs (the `jobs` table holds the running
 * ones, `reap_list` the finished ones, never both); a job owns its calls (one
 * array); a call borrows its job and its running transfer from upstream.
 */
#ifndef SB_WORKER_INTERNAL_H
#define SB_WORKER_INTERNAL_H

#include <czmq.h>
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "provider.h"
#include "retry.h"
#include "retry_budget.h"
#include "sb_event.h"
#include "sb_job.h"
#include "sb_map.h"
#include "sb_protocol.h"
#include "sb_wire.h"
#include "sb_zsock_ev.h"
#include "strict.h"
#include "upstream.h"
#include "worker.h"

typedef struct sb_wjob sb_wjob_t;
typedef struct sb_wlink sb_wlink_t;
typedef struct sb_wcall sb_wcall_t;
typedef struct sb_wloop sb_wloop_t;
struct sb_ssrf;

#define SB_WORKER_LINKS_MAX 64 /* as SB_ENDPOINTS_MAX */

/*
 * One broker's session (wlink.c): the worker serves every broker it is
 * given (docs/protocol.md, "Several brokers"); each job belongs to the link
 * it came on, and its events go back there.
 */
struct sb_wlink {
    sb_worker_t *w; /* borrowed: the session it belongs to */
    char *endpoint;
    zsock_t *sock;                /* owned DEALER; NULL between a failed reopen and the next beat */
    sb_zsock_ev_t *watch;         /* owned watch of sock on the loop */
    struct sb_zmon *mon;          /* owned: says when the connection closes */
    int64_t last_heard_ms;        /* monotonic; any message from the broker counts */
    char epoch[SB_EPOCH_MAX + 1]; /* the broker instance we serve; "": not heard from one yet */
    long long ready_seq;          /* READYs sent; in our headers so RECONNECTs can be matched to them */
    long long got;                /* JOBs received since the latest READY */
    long long window_sent;        /* the window last told (-1: none since READY) */
    int njobs;                    /* jobs in the table that came on this link */
    bool leaving;                 /* no longer listed: closed once it has no job (it may still send some) */
    /* What the socket reports, to worker.c. */
    void (*on_msg)(sb_wlink_t *l, const sb_wire_msg_t *msg);
    void (*on_conn)(sb_wlink_t *l, bool up); /* true: connected; false: the connection closed */
};

typedef void (*sb_wlink_msg_fn)(sb_wlink_t *l, const sb_wire_msg_t *msg);
typedef void (*sb_wlink_conn_fn)(sb_wlink_t *l, bool up);

sb_wlink_t *sb_wlink_new(sb_worker_t *w, const char *endpoint, sb_wlink_msg_fn on_msg, sb_wlink_conn_fn on_conn);
/* Closes the socket (queued messages get linger_ms to leave) and frees it. */
void sb_wlink_destroy(sb_wlink_t **l, int linger_ms);
/* A fresh socket (the broker was silent): -EIO when it cannot be opened. */
int sb_wlink_reopen(sb_wlink_t *l);
/* Sends one message to the link's broker: 0, or a negative errno
 * (-ENOTCONN without a socket, -EAGAIN when the pipe is full). */
int sb_wlink_send(sb_wlink_t *l, int cmd, const json_t *header, const void *body, size_t len);
/* Announces the worker: READY with the next seq (the count of JOBs and the
 * window start again). */
void sb_wlink_send_ready(sb_wlink_t *l);
bool sb_wlink_connected(const sb_wlink_t *l);

/*
 * The session (worker.c).
 */

struct sb_worker {
    struct event_base *base; /* borrowed from the caller; outlives the worker */
    enum sb_worker_state state;
    char *name;     /* owned; announced in READY */
    json_t *models; /* owned array of strings, for READY */
    int credits;
    int heartbeat_ms;
    int liveness;
    int64_t connect_timeout_ms;
    int64_t drain_ms;
    int64_t stream_idle_ms;
    int retry_max;
    int64_t retry_base_ms;
    int64_t retry_cap_ms;
    sb_retry_budget_t *budget; /* owned; per-route retry tokens, spent by calls */
    struct sb_ssrf *guard;     /* owned; every URL a tool fetches for a client or a model (sb_ssrf.h) */
    int64_t tool_timeout_ms;   /* one tool step (an MCP request, a search, a page) */
    int tool_max_iterations;   /* model calls one tool loop may make */
    size_t tool_output_max;    /* bytes of one tool output the model (and the item) gets */
    struct sb_db *db;          /* owned; the tool data plane (wsql.h), NULL without --database */
    int sandbox_uid_base;      /* the code interpreter's uid range (0: the sandbox's default) */
    int sandbox_uid_count;
    void (*on_stopped)(void *arg); /* the caller's, from the config */
    void *arg;

    struct sb_endpoints *endpoints;              /* owned: the brokers, as listed or resolved */
    struct sb_wlink *links[SB_WORKER_LINKS_MAX]; /* owned: one session per broker */
    size_t nlinks;
    struct event *credit;      /* owned; tells each broker its window (several brokers only) */
    struct event *heartbeat;   /* owned, persistent */
    struct event *drain_timer; /* owned; pending while DRAINING */
    struct event *reap;        /* owned; frees DONE jobs and checks for STOPPED, at a safe point */
    struct event *db_beat;     /* owned; stamps worker_heartbeats while there is a database (wbg.h) */
    sb_upstream_t *upstream;   /* owned; every call's transfers */
    sb_map_t *jobs;            /* owned table job_id -> sb_wjob_t (owned), NEW and UPSTREAM jobs */
    sb_wjob_t *reap_list;      /* owned DONE jobs, linked by next_reap */
};

/* The jobs running here changed: with several brokers, each is told its
 * window at the next turn of the loop (worker.c). */
static inline void sb_worker_credit_changed(sb_worker_t *w)
{
    if (w->credit)
        event_active(w->credit, EV_TIMEOUT, 0);
}

/* A log line of job j: its request id (the job id) and trace id are fields
 * of the line (sb_log.h). */
#define sb_wjob_log(j, level, ...) sb_log_req(level, (j)->job_id, (j)->trace_id, __VA_ARGS__)

/* An error event whose message is printf-formatted (new reference); out of
 * memory aborts. */
static inline json_t *sb_wjob_error(int status, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline json_t *sb_wjob_error(int status, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        abort(); /* out of memory */
    va_end(ap);
    json_t *ev = sb_event_error(status, kind, NULL, msg);
    free(msg);
    return ev;
}

/*
 * One upstream call (wcall.c).
 */

/* What a call tells its job. The job hands these in (wjob.c), so the call
 * never calls up into the job's file. */
typedef struct sb_wcall_ops {
    /* The parser added events to c->events (a chunk of body arrived): the job
     * passes them on now, or holds them. */
    void (*on_events)(sb_wcall_t *c);
    /* The attempt is over, its final event is among c->events, and no retry
     * is pending (the idle timer and a failed transfer end here too). */
    void (*on_final)(sb_wcall_t *c);
    /* A retry's attempt could not start; err (stolen) is the job's final
     * error event. */
    void (*on_fail)(sb_wcall_t *c, json_t *err);
} sb_wcall_ops_t;

/*
 * One upstream call of a job: the job's only one, or one choice of a fan-out.
 * A call is running while it has an xfer (an attempt) or its retry timer is
 * pending; it is over once its final event has been passed on or has ended
 * the job.
 */
struct sb_wcall {
    sb_wjob_t *j;                 /* borrowed: the job whose `calls` array holds this call */
    const sb_wcall_ops_t *ops;    /* borrowed (static in wjob.c) */
    int choice;                   /* the choice it produces in a fan-out, else -1 (events go on untagged) */
    int attempt;                  /* 1, then 2 on the strict-output retry */
    int retries;                  /* upstream retries after transient failures so far (retry.h) */
    enum sb_retry_route route;    /* what its latest attempt said about the route */
    sb_provider_parser_t *parser; /* owned; a fresh one per attempt */
    sb_upstream_xfer_t *xfer;     /* borrowed from upstream while running */
    struct event *retry_timer;    /* owned; pending while it waits to retry */
    /* Owned reference: the attempt's events not yet passed on. For the plain
     * case (one call, nothing strict) the job's own `events`, so nothing is
     * moved. */
    json_t *events;
    /* Owned: a streamed strict call's events as passed on, kept for the check
     * at its end (a stream cannot be held back); NULL otherwise. */
    json_t *seen;
    struct event *idle;  /* owned; streaming: fires when the upstream is quiet for stream_idle_ms */
    int64_t timeout_ms;  /* this attempt's total upstream timeout */
    int64_t upstream_us; /* summed over attempts */
    int feed_error;      /* why the parser refused the body, or 0 */
};

/* Starts (or restarts, for a retry) a call's transfer with a fresh parser
 * and a timeout cut to the job's deadline. Returns 0, or a negative code with
 * *err set to the job's final error event. */
int sb_wcall_start(sb_wcall_t *c, json_t **err) __attribute__((warn_unused_result));
/* Takes the first final event out of a call's events, dropping anything
 * after it; a missing one becomes a 502. Returns it (new reference). */
json_t *sb_wcall_take_final(sb_wcall_t *c);
/* Stops a call: its transfer, idle timer and pending retry. Idempotent. */
void sb_wcall_cancel(sb_wcall_t *c);
/* Frees what a call owns (it is an element of its job's array). */
void sb_wcall_clear(sb_wcall_t *c);

/*
 * One job (wjob.c).
 */

/* A job's life. Jobs in the `jobs` table are NEW or UPSTREAM; DONE ones are
 * on the reap list. sb_wjob_set_state() is the one place it changes. */
enum sb_wjob_state {
    SB_WJOB_NEW,      /* received; being validated, its request built */
    SB_WJOB_UPSTREAM, /* its upstream call(s) are running (a strict retry included) */
    SB_WJOB_DONE,     /* final event sent (or job abandoned); waits for the reap */
};

struct sb_wjob {
    sb_worker_t *w;   /* borrowed: the session that owns the job */
    sb_wlink_t *link; /* borrowed: the broker it came from; its events go there */
    enum sb_wjob_state state;
    char job_id[SB_JOB_ID_MAX + 1];
    char trace_id[33];             /* the job's W3C trace id (job.trace), for its log lines; "": none */
    json_t *job;                   /* owned: the decoded job body; NULL if it would not decode */
    const sb_provider_t *provider; /* static adapter table */
    json_t *own_job;               /* owned: what the calls send when it is not job: a fan-out's job without
                                      request.n, or a count's one-token generation; else NULL */
    const json_t *call_job;        /* borrowed: what the calls send: job or own_job */
    sb_strict_t *strict;           /* owned: the strict schemas; NULL: nothing to check */
    bool stream;                   /* request.stream: events go on as they come, strict output is checked at the end */
    bool sent;                     /* an event has left for the broker: no retry can be invisible any more */
    bool interrupted;              /* ended by a cancel or shutdown: the header says nothing of the upstream */
    char *route_key;               /* owned: its retry budget's route (retry_budget.h) */
    sb_provider_request_t req;     /* owned: built once; kept while a call may still (re)start */
    long long deadline_ms;         /* absolute epoch ms, 0 = none */
    sb_wcall_t *calls;             /* owned array of n_calls */
    int n_calls;
    int calls_open; /* calls not over yet */
    json_t *events; /* owned: events passed on and not yet sent */
    /* A fan-out's merge of its calls' usage and completed events. */
    bool have_usage;
    int64_t usage_in, usage_out, usage_reasoning;
    const char *incomplete_reason; /* the first incomplete choice's (static string), or NULL */
    bool incomplete;
    int64_t upstream_us;       /* the slowest call's */
    sb_wloop_t *loop;          /* owned: the tool loop that makes this job's calls (wloop.c), or NULL */
    struct sb_vsjob *vs;       /* owned: a file search operation (request.op vs_*; wtool_vsjob.h), or NULL */
    struct sb_wbg *bg;         /* owned until the job ends: a background job's event writer (wbg.h), or NULL */
    struct sb_wjob *next_reap; /* the next DONE job on the worker's reap list */
};

/* A JOB from the broker: checks its header, enters it in the `jobs` table
 * and starts it (or answers it at once with a final error event). */
void sb_wjob_receive(sb_worker_t *w, sb_wlink_t *link, const sb_wire_msg_t *msg);
/* A CANCEL from the broker: ends the job it names, if still running and
 * from that broker, with a 499 error event. */
void sb_wjob_cancel(sb_worker_t *w, const sb_wlink_t *link, const sb_wire_msg_t *msg);
/* Moves a job to DONE and onto the reap list. With send, first makes the
 * pending events end in exactly one final event (final, if given, is appended
 * and stolen; anything after a first final is dropped; a missing final
 * becomes a 502) and sends them. Without send the job is abandoned silently.
 * The caller has taken the job out of the `jobs` table. */
void sb_wjob_end(sb_wjob_t *j, bool send, json_t *final);
/*
 * The tool loop (wloop.c, docs/tools.md): a job whose request has built-in
 * tools the gateway runs makes its model calls there. The job hands in how
 * the loop sends its events and ends it.
 */
typedef struct sb_wloop_ops {
    void (*flush)(sb_wjob_t *j);                 /* a streamed job sends its pending events */
    void (*finish)(sb_wjob_t *j, json_t *final); /* ends the job with `final` (stolen) */
} sb_wloop_ops_t;
/* 1: the job has no tool the gateway runs (nothing done); 0: the loop runs
 * the job (j->loop, j->calls set; it ends the job through ops); -EINVAL
 * with *err a final error event. Needs j's strict, stream, deadline and
 * route key set. */
int sb_wloop_start(sb_wjob_t *j, const sb_wloop_ops_t *ops, json_t **err) __attribute__((warn_unused_result));
/* The job is ending: its tool steps are cancelled (no callback runs). NULL-safe. */
void sb_wloop_stop(sb_wloop_t *l);
void sb_wloop_free(sb_wloop_t **l);

/* Frees a DONE job: only from the reap (or destroy), never inside a callback
 * of the job's own calls. */
void sb_wjob_free(sb_wjob_t *j);

#endif

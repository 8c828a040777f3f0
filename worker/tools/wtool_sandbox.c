/*
 * wtool_sandbox: one sandbox of the code interpreter on the worker's loop
 * (see wtool_sandbox.h): its interpreter process (started on the first
 * exec, again after one died or was killed), the requests written to it,
 * the frames read back (wtool_sandbox_frames.c), the wall-time timer, and
 * the result handed to the caller's callback from the loop.
 *
 * An interpreter that is killed (timeout, a broken protocol, destroy) is
 * moved to the sandbox's dying list until its pidfd says bwrap is gone, so
 * the loop never blocks on a child; only destroy waits, briefly, for what
 * it has just killed.
 */
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_buf.h"
#include "sb_log.h"
#include "sb_time.h"
#include "wtool_sandbox.h"
#include "wtool_sandbox_internal.h"

#define SB_SANDBOX_DIAG_MAX 512
#define SB_SANDBOX_READ_CHUNK 65536
/* Most bytes read from one channel per loop wakeup, so one sandbox cannot hold the loop. */
#define SB_SANDBOX_READ_BUDGET (1024 * 1024)
/* How long destroy waits for a killed bwrap to be reaped. */
#define SB_SANDBOX_REAP_WAIT_MS 2000

typedef enum sb_sandbox_state {
    SB_SANDBOX_IDLE,    /* no exec in flight (an interpreter may be up, or none) */
    SB_SANDBOX_RUNNING, /* an exec's request is queued and its timer armed: waiting for the reply or the end */
    SB_SANDBOX_DONE,    /* the exec's result is made; its callback runs from ev_done */
} sb_sandbox_state_t;

/* One interpreter: the process tree and its channels on the loop. */
typedef struct sb_sandbox_interp {
    sb_sandbox_t *owner;
    sb_sandbox_proc_t proc;
    struct event *ev_pid, *ev_reply, *ev_diag, *ev_in;
    sb_buf_t out; /* requests not yet written, from out_off */
    size_t out_off;
    sb_sandbox_reader_t reader;
    char diag[SB_SANDBOX_DIAG_MAX]; /* the start of bwrap's and python's own stderr */
    size_t diag_len;
    bool ready;                     /* the driver said it is up */
    bool answered;                  /* it replied to an exec: it holds the code's variables */
    struct sb_sandbox_interp *next; /* on the dying list */
} sb_sandbox_interp_t;

typedef struct sb_sandbox_item {
    char *rel;
    unsigned char *data;
    size_t len;
    bool sent; /* to the current interpreter */
} sb_sandbox_item_t;

struct sb_sandbox {
    struct event_base *base;
    sb_sandbox_config_t cfg; /* resolved; bwrap and python point at our copies */
    char *bwrap, *python;
    sb_sandbox_limits_t lim;
    char *limits_json;
    sb_sandbox_state_t state;
    sb_sandbox_interp_t *cur;   /* the interpreter in use, or NULL */
    sb_sandbox_interp_t *dying; /* killed, not reaped yet */
    bool state_lost;            /* an interpreter holding variables was lost: the next one is a restart */
    sb_sandbox_item_t *items;
    size_t n_items;
    struct event *ev_timer, *ev_done;
    bool start_phase; /* the timer waits for the interpreter to come up (start_ms), not for the code */
    int64_t exec_id;
    int64_t t0;
    sb_sandbox_cb cb;
    void *cb_arg;
    sb_sandbox_result_t result;
    bool in_cb;
    bool destroyed; /* destroy was called from the callback: freed when it returns */
};

void sb_sandbox_config_resolve(const sb_sandbox_config_t *in, sb_sandbox_config_t *out)
{
    static const sb_sandbox_config_t none;
    *out = in ? *in : none;
#define SB_SANDBOX_DEFAULT(f, v)                                                                                       \
    do {                                                                                                               \
        if (out->f <= 0)                                                                                               \
            out->f = (v);                                                                                              \
    } while (0)
    if (!out->bwrap)
        out->bwrap = "/usr/bin/bwrap";
    if (!out->python)
        out->python = "/usr/bin/python3";
    SB_SANDBOX_DEFAULT(memory_bytes, 1024LL * 1024 * 1024);
    SB_SANDBOX_DEFAULT(cpu_seconds, 30);
    SB_SANDBOX_DEFAULT(wall_ms, 30000);
    SB_SANDBOX_DEFAULT(start_ms, 10000);
    SB_SANDBOX_DEFAULT(max_procs, 64);
    SB_SANDBOX_DEFAULT(max_file_bytes, 64LL * 1024 * 1024);
    SB_SANDBOX_DEFAULT(workdir_bytes, 256LL * 1024 * 1024);
    SB_SANDBOX_DEFAULT(tmp_bytes, 64LL * 1024 * 1024);
    if (out->max_output_bytes == 0)
        out->max_output_bytes = 64 * 1024;
    SB_SANDBOX_DEFAULT(max_files, 32);
    SB_SANDBOX_DEFAULT(max_files_bytes, 16LL * 1024 * 1024);
    SB_SANDBOX_DEFAULT(max_images, 8);
    SB_SANDBOX_DEFAULT(max_image_bytes, 4LL * 1024 * 1024);
    SB_SANDBOX_DEFAULT(uid_base, 200000);
    SB_SANDBOX_DEFAULT(uid_count, 1000);
#undef SB_SANDBOX_DEFAULT
}

static void sb_sandbox_on_timer(evutil_socket_t fd, short what, void *arg);
static void sb_sandbox_on_done(evutil_socket_t fd, short what, void *arg);
static void sb_sandbox_on_pid(evutil_socket_t fd, short what, void *arg);
static void sb_sandbox_on_reply(evutil_socket_t fd, short what, void *arg);
static void sb_sandbox_on_diag(evutil_socket_t fd, short what, void *arg);
static void sb_sandbox_on_in(evutil_socket_t fd, short what, void *arg);

sb_sandbox_t *sb_sandbox_new(struct event_base *base, const sb_sandbox_config_t *cfg)
{
    sb_sandbox_t *s = sb_xcalloc(1, sizeof *s);
    s->base = base;
    sb_sandbox_config_resolve(cfg, &s->cfg);
    s->bwrap = sb_xstrdup(s->cfg.bwrap);
    s->python = sb_xstrdup(s->cfg.python);
    s->cfg.bwrap = s->bwrap;
    s->cfg.python = s->python;
    s->lim.max_logs = s->cfg.max_output_bytes;
    s->lim.max_images = (size_t)s->cfg.max_images;
    s->lim.max_image_bytes = (size_t)s->cfg.max_image_bytes;
    s->lim.max_files = (size_t)s->cfg.max_files;
    s->lim.max_files_bytes = (size_t)s->cfg.max_files_bytes;
    s->limits_json = sb_xasprintf("{\"out\":%zu,\"files\":%d,\"files_bytes\":%lld,\"images\":%d,\"image_bytes\":%lld,"
                                  "\"cpu\":%d,\"nproc\":%d}",
                                  s->cfg.max_output_bytes, s->cfg.max_files, s->cfg.max_files_bytes, s->cfg.max_images,
                                  s->cfg.max_image_bytes, s->cfg.cpu_seconds, s->cfg.max_procs);
    s->ev_timer = evtimer_new(base, sb_sandbox_on_timer, s);
    s->ev_done = event_new(base, -1, 0, sb_sandbox_on_done, s);
    if (!s->ev_timer || !s->ev_done)
        abort(); /* libevent fails here only without memory */
    return s;
}

static void sb_sandbox_event_free(struct event **ev)
{
    if (*ev)
        event_free(*ev);
    *ev = NULL;
}

/* Closes the channels of ip (the pidfd and its event stay, for the reap). */
static void sb_sandbox_interp_close_io(sb_sandbox_interp_t *ip)
{
    sb_sandbox_event_free(&ip->ev_reply);
    sb_sandbox_event_free(&ip->ev_diag);
    sb_sandbox_event_free(&ip->ev_in);
    sb_sandbox_proc_close_io(&ip->proc);
    sb_buf_free(&ip->out);
    ip->out_off = 0;
    sb_sandbox_reader_free(&ip->reader);
}

static void sb_sandbox_interp_free(sb_sandbox_interp_t *ip)
{
    sb_sandbox_interp_close_io(ip);
    sb_sandbox_event_free(&ip->ev_pid);
    sb_sandbox_proc_close(&ip->proc);
    free(ip);
}

/* Starts an interpreter as s->cur. 0, or a negative errno with why set. */
static int sb_sandbox_interp_start(sb_sandbox_t *s, char *why, size_t why_len)
{
    sb_sandbox_interp_t *ip = sb_xcalloc(1, sizeof *ip);
    ip->owner = s;
    int rc = sb_sandbox_spawn(&s->cfg, s->limits_json, &ip->proc, why, why_len);
    if (rc != 0) {
        free(ip);
        return rc;
    }
    sb_sandbox_reader_init(&ip->reader, sb_sandbox_frame_max(&s->lim));
    ip->ev_pid = event_new(s->base, ip->proc.pidfd, EV_READ, sb_sandbox_on_pid, ip);
    ip->ev_reply = event_new(s->base, ip->proc.fd_reply, EV_READ | EV_PERSIST, sb_sandbox_on_reply, ip);
    ip->ev_diag = event_new(s->base, ip->proc.fd_diag, EV_READ | EV_PERSIST, sb_sandbox_on_diag, ip);
    ip->ev_in = event_new(s->base, ip->proc.fd_in, EV_WRITE | EV_PERSIST, sb_sandbox_on_in, ip);
    if (!ip->ev_pid || !ip->ev_reply || !ip->ev_diag || !ip->ev_in || event_add(ip->ev_pid, NULL) != 0 ||
        event_add(ip->ev_reply, NULL) != 0 || event_add(ip->ev_diag, NULL) != 0) {
        snprintf(why, why_len, "the loop refused the sandbox's events");
        sb_sandbox_proc_kill(&ip->proc);
        int st;
        (void)sb_sandbox_proc_reap(&ip->proc, SB_SANDBOX_REAP_WAIT_MS, &st);
        sb_sandbox_interp_free(ip);
        return -ENOMEM;
    }
    s->cur = ip;
    return 0;
}

/* Kills ip (s->cur or not) and puts it on the dying list; its on_pid frees it. */
static void sb_sandbox_interp_kill(sb_sandbox_t *s, sb_sandbox_interp_t *ip)
{
    sb_sandbox_proc_kill(&ip->proc);
    sb_sandbox_interp_close_io(ip);
    if (ip->answered)
        s->state_lost = true;
    if (s->cur == ip)
        s->cur = NULL;
    ip->next = s->dying;
    s->dying = ip;
}

/* Ends the exec in flight with s->result (status and logs set by the caller). */
static void sb_sandbox_finish(sb_sandbox_t *s)
{
    if (s->state != SB_SANDBOX_RUNNING)
        return;
    if (!s->result.logs)
        s->result.logs = sb_xstrdup("");
    s->result.duration_ms = sb_mono_ms() - s->t0;
    s->state = SB_SANDBOX_DONE;
    evtimer_del(s->ev_timer);
    event_active(s->ev_done, 0, 0);
}

/* Ends the exec in flight with a status and a note of ours (no output of the code). */
static void sb_sandbox_fail(sb_sandbox_t *s, sb_sandbox_status_t st, char *logs)
{
    if (s->state != SB_SANDBOX_RUNNING) {
        free(logs);
        return;
    }
    bool restarted = s->result.restarted;
    sb_sandbox_result_clear(&s->result);
    s->result.status = st;
    s->result.logs = logs;
    s->result.restarted = restarted;
    sb_sandbox_finish(s);
}

/* What ended bwrap, for a note: "exited with status 1", "killed by signal 9 (KILL)". */
static void sb_sandbox_describe_exit(int status, char *buf, size_t len)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + NSIG) {
        /* bwrap passes on a signal that ended its child as 128 + the signal */
        int sig = WEXITSTATUS(status) - 128;
        const char *name = sigabbrev_np(sig);
        snprintf(buf, len, "was killed by signal %d (SIG%s)", sig, name ? name : "?");
    } else if (WIFEXITED(status)) {
        snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        const char *name = sigabbrev_np(WTERMSIG(status));
        snprintf(buf, len, "was killed by signal %d (SIG%s)", WTERMSIG(status), name ? name : "?");
    } else {
        snprintf(buf, len, "ended");
    }
}

/* The first line of what bwrap or python said before the driver was up,
 * as printable ASCII (it goes into a result and a log line). */
static void sb_sandbox_diag_line(const sb_sandbox_interp_t *ip, char *buf, size_t len)
{
    size_t k = 0;
    for (size_t i = 0; i < ip->diag_len && k + 1 < len; i++) {
        unsigned char c = (unsigned char)ip->diag[i];
        if (c == '\n') {
            if (k > 0)
                break;
            continue;
        }
        buf[k++] = (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    buf[k] = '\0';
}

static void sb_sandbox_handle_frame(sb_sandbox_interp_t *ip, const char *line, size_t len)
{
    sb_sandbox_t *s = ip->owner;
    sb_sandbox_result_t r;
    sb_sandbox_frame_kind_t kind;
    int64_t id;
    const char *why = NULL;
    if (sb_sandbox_parse_frame(line, len, &s->lim, &kind, &id, &r, &why) != 0) {
        sb_sandbox_interp_kill(s, ip);
        sb_sandbox_fail(s, SB_SANDBOX_KILLED,
                        sb_xasprintf("[sandbox] the interpreter's reply was refused (%s); it was stopped, and the "
                                     "next run starts a new one (variables are lost)",
                                     why));
        return;
    }
    if (kind == SB_SANDBOX_FRAME_READY) {
        ip->ready = true;
        if (s->state == SB_SANDBOX_RUNNING && s->cur == ip && s->start_phase) {
            s->start_phase = false;
            struct timeval tv = {s->cfg.wall_ms / 1000, (s->cfg.wall_ms % 1000) * 1000};
            evtimer_add(s->ev_timer, &tv);
        }
        return;
    }
    if (s->state != SB_SANDBOX_RUNNING || s->cur != ip || id != s->exec_id) {
        /* a reply nobody asked for: the code wrote to the channel itself */
        sb_sandbox_result_clear(&r);
        sb_sandbox_interp_kill(s, ip);
        sb_sandbox_fail(s, SB_SANDBOX_KILLED,
                        sb_xstrdup("[sandbox] the interpreter sent a reply out of turn; it was stopped, and the next "
                                   "run starts a new one (variables are lost)"));
        return;
    }
    ip->answered = true;
    r.restarted = s->result.restarted;
    sb_sandbox_result_clear(&s->result);
    s->result = r;
    sb_sandbox_finish(s);
}

/* Reads what the driver wrote, up to the budget; frames are handled as
 * they complete. 0 while the channel is open, 1 at its end (EOF or
 * error), -1 when ip was killed meanwhile (do not touch its channels). */
static int sb_sandbox_interp_read(sb_sandbox_interp_t *ip)
{
    char chunk[SB_SANDBOX_READ_CHUNK];
    size_t total = 0;
    while (total < SB_SANDBOX_READ_BUDGET) {
        ssize_t n = recv(ip->proc.fd_reply, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return 0;
        if (n <= 0)
            return 1;
        total += (size_t)n;
        if (sb_sandbox_reader_feed(&ip->reader, chunk, (size_t)n) != 0) {
            sb_sandbox_t *s = ip->owner;
            size_t max = ip->reader.max;
            sb_sandbox_interp_kill(s, ip);
            sb_sandbox_fail(s, SB_SANDBOX_KILLED,
                            sb_xasprintf("[sandbox] the interpreter's reply was over %zu bytes; it was stopped, and "
                                         "the next run starts a new one (variables are lost)",
                                         max));
            return -1;
        }
        for (;;) {
            const char *line;
            size_t len;
            int k = sb_sandbox_reader_next(&ip->reader, &line, &len);
            if (k == 0)
                break;
            sb_sandbox_t *s = ip->owner;
            if (k < 0) {
                sb_sandbox_interp_kill(s, ip);
                sb_sandbox_fail(s, SB_SANDBOX_KILLED,
                                sb_xstrdup("[sandbox] the interpreter's reply was over the size limit; it was "
                                           "stopped, and the next run starts a new one (variables are lost)"));
                return -1;
            }
            sb_sandbox_handle_frame(ip, line, len);
            if (ip->ev_reply == NULL) /* killed while handling */
                return -1;
        }
    }
    return 0;
}

static void sb_sandbox_on_reply(evutil_socket_t fd, short what, void *arg)
{
    sb_sandbox_interp_t *ip = arg;
    /* at the channel's end the process's end follows (the pidfd); if the
     * code closed the channel and goes on, the wall timer ends it */
    if (sb_sandbox_interp_read(ip) == 1)
        event_del(ip->ev_reply);
}

static void sb_sandbox_on_diag(evutil_socket_t fd, short what, void *arg)
{
    sb_sandbox_interp_t *ip = arg;
    char chunk[4096];
    for (int i = 0; i < 16; i++) {
        ssize_t n = recv(fd, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n <= 0) {
            event_del(ip->ev_diag);
            return;
        }
        size_t room = sizeof ip->diag - ip->diag_len;
        size_t k = (size_t)n < room ? (size_t)n : room;
        memcpy(ip->diag + ip->diag_len, chunk, k);
        ip->diag_len += k;
    }
}

static void sb_sandbox_on_in(evutil_socket_t fd, short what, void *arg)
{
    sb_sandbox_interp_t *ip = arg;
    while (ip->out_off < ip->out.len) {
        ssize_t n = send(fd, ip->out.p + ip->out_off, ip->out.len - ip->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0) {
            /* the driver is gone: its end is seen on the reply channel and the pidfd */
            ip->out_off = ip->out.len;
            break;
        }
        ip->out_off += (size_t)n;
    }
    sb_buf_free(&ip->out);
    ip->out_off = 0;
    event_del(ip->ev_in);
}

/* Queues one request (a JSON object, consumed) for the driver. */
static void sb_sandbox_send(sb_sandbox_interp_t *ip, json_t *req)
{
    char *text = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!text)
        abort(); /* the request is built here from valid UTF-8: only out of memory */
    sb_buf_add(&ip->out, text, strlen(text));
    sb_buf_add(&ip->out, "\n", 1);
    free(text);
    event_add(ip->ev_in, NULL);
}

static void sb_sandbox_on_pid(evutil_socket_t fd, short what, void *arg)
{
    sb_sandbox_interp_t *ip = arg;
    sb_sandbox_t *s = ip->owner;
    int status = 0;
    if (sb_sandbox_proc_reap(&ip->proc, 0, &status) == 0) {
        event_add(ip->ev_pid, NULL);
        return;
    }
    if (s->cur != ip) {
        for (sb_sandbox_interp_t **pp = &s->dying; *pp; pp = &(*pp)->next) {
            if (*pp == ip) {
                *pp = ip->next;
                break;
            }
        }
        sb_sandbox_interp_free(ip);
        return;
    }
    /* a reply written just before the end is still in the channel */
    if (sb_sandbox_interp_read(ip) < 0) {
        /* killed while reading: it is on the dying list but already reaped */
        for (sb_sandbox_interp_t **pp = &s->dying; *pp; pp = &(*pp)->next) {
            if (*pp == ip) {
                *pp = ip->next;
                break;
            }
        }
        sb_sandbox_interp_free(ip);
        return;
    }
    s->cur = NULL;
    if (ip->answered)
        s->state_lost = true;
    if (s->state == SB_SANDBOX_RUNNING) {
        char how[96], diag[SB_SANDBOX_DIAG_MAX];
        sb_sandbox_describe_exit(status, how, sizeof how);
        sb_sandbox_diag_line(ip, diag, sizeof diag);
        if (!ip->ready) {
            sb_warn("sandbox: the interpreter %s before it was up: %s", how, diag);
            sb_sandbox_fail(
                s, SB_SANDBOX_UNAVAILABLE,
                sb_xasprintf("[sandbox] the sandbox could not start: bwrap %s%s%s", how, diag[0] ? ": " : "", diag));
        } else {
            sb_sandbox_fail(s, SB_SANDBOX_KILLED,
                            sb_xasprintf("[sandbox] the interpreter %s (its memory, CPU time or process limit, or "
                                         "a crash); the next run starts a new one (variables are lost)",
                                         how));
        }
    }
    sb_sandbox_interp_free(ip);
}

static void sb_sandbox_on_timer(evutil_socket_t fd, short what, void *arg)
{
    sb_sandbox_t *s = arg;
    if (s->state != SB_SANDBOX_RUNNING)
        return;
    if (s->cur)
        sb_sandbox_interp_kill(s, s->cur);
    if (s->start_phase)
        sb_sandbox_fail(s, SB_SANDBOX_UNAVAILABLE,
                        sb_xasprintf("[sandbox] the sandbox did not start within %d ms", s->cfg.start_ms));
    else
        sb_sandbox_fail(s, SB_SANDBOX_TIMEOUT,
                        sb_xasprintf("[sandbox] the code ran longer than the limit of %d ms and was stopped; the next "
                                     "run starts a new interpreter (variables are lost)",
                                     s->cfg.wall_ms));
}

static void sb_sandbox_free_all(sb_sandbox_t *s)
{
    if (s->cur)
        sb_sandbox_interp_kill(s, s->cur);
    while (s->dying) {
        sb_sandbox_interp_t *ip = s->dying;
        s->dying = ip->next;
        int st;
        sb_sandbox_proc_kill(&ip->proc);
        if (sb_sandbox_proc_reap(&ip->proc, SB_SANDBOX_REAP_WAIT_MS, &st) == 0)
            sb_warn("sandbox: bwrap (pid %d) did not end within %d ms of SIGKILL; left to the kernel",
                    (int)ip->proc.pid, SB_SANDBOX_REAP_WAIT_MS);
        sb_sandbox_interp_free(ip);
    }
    for (size_t i = 0; i < s->n_items; i++) {
        free(s->items[i].rel);
        free(s->items[i].data);
    }
    free(s->items);
    sb_sandbox_result_clear(&s->result);
    sb_sandbox_event_free(&s->ev_timer);
    sb_sandbox_event_free(&s->ev_done);
    free(s->limits_json);
    free(s->bwrap);
    free(s->python);
    free(s);
}

static void sb_sandbox_on_done(evutil_socket_t fd, short what, void *arg)
{
    sb_sandbox_t *s = arg;
    if (s->state != SB_SANDBOX_DONE)
        return;
    sb_sandbox_result_t r = s->result;
    memset(&s->result, 0, sizeof s->result);
    sb_sandbox_cb cb = s->cb;
    void *cb_arg = s->cb_arg;
    s->cb = NULL;
    s->cb_arg = NULL;
    s->state = SB_SANDBOX_IDLE;
    s->in_cb = true;
    cb(cb_arg, &r);
    s->in_cb = false;
    sb_sandbox_result_clear(&r);
    if (s->destroyed)
        sb_sandbox_free_all(s);
}

void sb_sandbox_destroy(sb_sandbox_t **sp)
{
    if (!sp || !*sp)
        return;
    sb_sandbox_t *s = *sp;
    *sp = NULL;
    if (s->in_cb) {
        /* the callback's caller frees it when the callback returns; an exec
         * the callback started is cancelled */
        s->destroyed = true;
        if (s->state != SB_SANDBOX_IDLE) {
            evtimer_del(s->ev_timer);
            event_del(s->ev_done);
            s->state = SB_SANDBOX_IDLE;
        }
        return;
    }
    sb_sandbox_free_all(s);
}

int sb_sandbox_put(sb_sandbox_t *s, const char *path, const void *data, size_t len)
{
    const char *rel;
    if (!s || (!data && len) || sb_sandbox_check_path(path, &rel) != 0)
        return -EINVAL;
    json_t *utf8 = json_string(rel); /* the path travels in JSON */
    if (!utf8)
        return -EINVAL;
    json_decref(utf8);
    if (s->state != SB_SANDBOX_IDLE || s->destroyed)
        return -EBUSY;
    if (len > (size_t)s->cfg.max_file_bytes)
        return -EFBIG;
    sb_sandbox_item_t *it = NULL;
    for (size_t i = 0; i < s->n_items; i++)
        if (strcmp(s->items[i].rel, rel) == 0)
            it = &s->items[i];
    if (!it) {
        s->items = sb_xrealloc(s->items, (s->n_items + 1) * sizeof *s->items);
        it = &s->items[s->n_items++];
        it->rel = sb_xstrdup(rel);
    } else {
        free(it->data);
    }
    it->data = sb_xmalloc(len ? len : 1);
    if (len)
        memcpy(it->data, data, len);
    it->len = len;
    it->sent = false;
    return 0;
}

int sb_sandbox_exec(sb_sandbox_t *s, const char *code, sb_sandbox_cb cb, void *arg)
{
    if (!s || !code || !cb)
        return -EINVAL;
    if (s->state != SB_SANDBOX_IDLE || s->destroyed)
        return -EBUSY;
    json_t *req = json_pack("{s:s, s:I, s:s}", "op", "exec", "id", (json_int_t)(s->exec_id + 1), "code", code);
    if (!req)
        return -EINVAL; /* not UTF-8 */
    s->exec_id++;
    s->cb = cb;
    s->cb_arg = arg;
    s->t0 = sb_mono_ms();
    sb_sandbox_result_clear(&s->result);
    s->state = SB_SANDBOX_RUNNING;
    if (!s->cur) {
        char why[256];
        if (sb_sandbox_interp_start(s, why, sizeof why) != 0) {
            json_decref(req);
            sb_warn("sandbox: %s", why);
            sb_sandbox_fail(s, SB_SANDBOX_UNAVAILABLE, sb_xasprintf("[sandbox] %s", why));
            return 0;
        }
        s->result.restarted = s->state_lost;
        s->state_lost = false;
        for (size_t i = 0; i < s->n_items; i++)
            s->items[i].sent = false;
    }
    sb_sandbox_interp_t *ip = s->cur;
    for (size_t i = 0; i < s->n_items; i++) {
        sb_sandbox_item_t *it = &s->items[i];
        if (it->sent)
            continue;
        char *b64 = sb_base64_encode(it->data, it->len, NULL);
        json_t *put = json_pack("{s:s, s:s, s:s}", "op", "put", "path", it->rel, "data", b64);
        free(b64);
        sb_sandbox_send(ip, put);
        it->sent = true;
    }
    sb_sandbox_send(ip, req);
    s->start_phase = !ip->ready;
    int ms = s->start_phase ? s->cfg.start_ms : s->cfg.wall_ms;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(s->ev_timer, &tv);
    return 0;
}

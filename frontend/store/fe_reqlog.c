/*
 * fe_reqlog: batched request_log inserts, with an on-disk spool for when the
 * database is away (the loss bound is in fe_reqlog.h).
 *
 * Spool files, per frontend name, in the spool dir:
 *   reqlog-<name>.spool   rows appended while the database is away (one
 *                         compact JSON object per line, O_APPEND)
 *   reqlog-<name>.replay  the spool being replayed: the spool is renamed to
 *                         it (atomically) when a replay starts, so rows
 *                         spooled meanwhile go to a fresh spool; unlinked
 *                         once every batch in it was written
 *   reqlog-<name>.lock    flock'd while the frontend runs
 *   reqlog-<name>.journal.<n>  the journal: while the database is up, each
 *                         row is appended here as its request ends, before
 *                         the reply leaves, one segment per tick; a segment
 *                         is unlinked once every row in it is in the
 *                         database or the spool. At start, segments left by
 *                         a dead process are moved into the spool.
 * A replay interrupted by a failure or a death starts again from the top of
 * the replay file; rows already written are skipped by ON CONFLICT.
 */
#include "fe_reqlog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fe_sql.h"
#include "sb_alloc.h"
#include "sb_log.h"
#include "sb_time.h"

#define FE_REQLOG_FLUSH_MS 100
#define FE_REQLOG_BATCH_MAX 500
#define FE_REQLOG_BUFFER_MAX 200000               /* rows held in memory while the database is away */
#define FE_REQLOG_SPOOL_MAX (256LL * 1024 * 1024) /* bytes in the spool files, both together */

struct fe_reqlog {
    sb_db_t *db;
    char *frontend;
    json_t *buffer;   /* rows waiting */
    json_t *inflight; /* batch being written, NULL if none */
    struct event *timer;
    /* spool; spool_path NULL = memory only */
    char *spool_path, *replay_path;
    int spool_fd, lock_fd;
    long long spool_bytes;    /* in the spool and the replay file */
    bool spool_dirty;         /* appended since the last fdatasync */
    long long dropped;        /* rows refused because the spool was full */
    FILE *replay;             /* replay file being read, NULL when none is open */
    json_t *replaying;        /* replay batch being written, NULL if none */
    int64_t waiting_since_us; /* when the oldest row in memory came (monotonic); 0: none */
    int64_t batch_taken_us;   /* when the batch in flight was taken */
    long long written;        /* rows written since start */
    /* journal; journal_prefix NULL = none (no spool) */
    char *journal_prefix; /* "<dir>/reqlog-<name>.journal." */
    int journal_fd;       /* the open segment, -1: none yet */
    long long journal_seg;
    long long row_seq; /* the sequence number of the newest row (rows carry it as "_seq") */
    struct fe_reqlog_seg {
        long long seg, max_seq;
    } * segs; /* closed segments not yet unlinked, oldest first */
    size_t nsegs;
};

/* ---- spool ------------------------------------------------------------------ */

static int fe_reqlog_write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Appends rows (a JSON array) to the spool in one write. Returns how many
 * rows are safe on disk; the others are dropped (cap reached or a write
 * error), counted and logged. */
static size_t fe_reqlog_spool_rows(fe_reqlog_t *l, const json_t *rows)
{
    size_t n = json_array_size(rows), kept = 0, len = 0, cap = 0;
    char *buf = NULL;
    for (size_t i = 0; i < n; i++) {
        char *line = json_dumps(json_array_get(rows, i), JSON_COMPACT);
        if (!line)
            continue;
        size_t ll = strlen(line);
        if (l->spool_bytes + (long long)(len + ll + 1) > FE_REQLOG_SPOOL_MAX) {
            free(line);
            break;
        }
        if (len + ll + 1 > cap) {
            cap = (len + ll + 1) * 2;
            buf = sb_xrealloc(buf, cap);
        }
        memcpy(buf + len, line, ll);
        buf[len + ll] = '\n';
        len += ll + 1;
        kept++;
        free(line);
    }
    if (len > 0 && fe_reqlog_write_all(l->spool_fd, buf, len) < 0) {
        sb_error("request log spool %s: write failed (%s); %zu rows lost", l->spool_path, strerror(errno), kept);
        kept = 0;
    } else if (len > 0) {
        l->spool_bytes += (long long)len;
        l->spool_dirty = true;
    }
    free(buf);
    if (kept < n) {
        if (l->dropped == 0)
            sb_error("request log spool full (%lld bytes) or failing: dropping rows until it drains",
                     FE_REQLOG_SPOOL_MAX);
        l->dropped += (long long)(n - kept);
    }
    return kept;
}

/* Moves every buffered row to the spool. */
static void fe_reqlog_spool_buffer(fe_reqlog_t *l)
{
    if (json_array_size(l->buffer) == 0)
        return;
    fe_reqlog_spool_rows(l, l->buffer);
    json_array_clear(l->buffer);
    if (!l->inflight)
        l->waiting_since_us = 0; /* on disk now; the spool's size tells the rest */
}

static int fe_reqlog_open_spool_file(fe_reqlog_t *l)
{
    l->spool_fd = open(l->spool_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    return l->spool_fd < 0 ? -errno : 0;
}

static void fe_reqlog_replay_next(fe_reqlog_t *l);

static void fe_reqlog_on_replayed(const PGresult *res, const char *err, void *arg)
{
    fe_reqlog_t *l = arg;
    size_t n = json_array_size(l->replaying);
    json_decref(l->replaying);
    l->replaying = NULL;
    if (err) {
        /* From the top next time; what landed is skipped by ON CONFLICT. */
        sb_warn("request log replay of %zu rows not written (%s); will retry", n, err);
        if (l->replay) {
            fclose(l->replay);
            l->replay = NULL;
        }
        return;
    }
    fe_reqlog_replay_next(l);
}

/* Sends the next batch of the replay file, or finishes it: unlinked, and
 * its bytes no longer count against the cap. */
static void fe_reqlog_replay_next(fe_reqlog_t *l)
{
    if (!l->replay)
        return;
    json_t *batch = json_array();
    char *line = NULL;
    size_t cap = 0;
    ssize_t got;
    while (json_array_size(batch) < FE_REQLOG_BATCH_MAX && (got = getline(&line, &cap, l->replay)) > 0) {
        json_error_t jerr;
        json_t *row = json_loadb(line, (size_t)got, 0, &jerr);
        if (json_is_object(row) && json_is_string(json_object_get(row, "request_id")))
            json_array_append_new(batch, row);
        else {
            /* A line cut short by a crash mid-write: nothing to recover. */
            sb_warn("request log replay: skipping an unreadable spool line (%s)", jerr.text);
            json_decref(row);
        }
    }
    free(line);
    if (json_array_size(batch) == 0) {
        json_decref(batch);
        fclose(l->replay);
        l->replay = NULL;
        struct stat st;
        long long size = stat(l->replay_path, &st) == 0 ? (long long)st.st_size : 0;
        if (unlink(l->replay_path) < 0)
            sb_error("request log replay: cannot remove %s: %s", l->replay_path, strerror(errno));
        l->spool_bytes -= size;
        if (l->spool_bytes < 0)
            l->spool_bytes = 0;
        if (l->dropped)
            sb_error("request log spool drained; %lld rows were dropped while it was full", l->dropped);
        l->dropped = 0;
        sb_info("request log spool replayed");
        return;
    }
    l->replaying = batch;
    char *text = json_dumps(batch, JSON_COMPACT);
    const char *params[1] = {text};
    sb_db_query(l->db, FE_SQL_REQLOG_INSERT, 1, params, fe_reqlog_on_replayed, l);
    free(text);
}

/* Starts a replay when the database is back and something is spooled: the
 * leftover replay file first, else the spool, renamed to be the replay file
 * (new rows then go to a fresh spool). */
static void fe_reqlog_replay_start(fe_reqlog_t *l)
{
    if (!l->spool_path || l->replay || l->replaying || !sb_db_available(l->db))
        return;
    if (access(l->replay_path, F_OK) != 0) {
        struct stat st;
        if (fstat(l->spool_fd, &st) < 0 || st.st_size == 0)
            return;
        if (rename(l->spool_path, l->replay_path) < 0) {
            sb_error("request log spool: cannot rename %s: %s", l->spool_path, strerror(errno));
            return;
        }
        if (l->spool_dirty)
            fdatasync(l->spool_fd);
        l->spool_dirty = false;
        close(l->spool_fd);
        if (fe_reqlog_open_spool_file(l) < 0) {
            sb_error("request log spool: cannot reopen %s: %s", l->spool_path, strerror(errno));
            rename(l->replay_path, l->spool_path); /* keep appending to what we have */
            l->spool_fd = open(l->spool_path, O_WRONLY | O_APPEND | O_CLOEXEC);
            return;
        }
    }
    l->replay = fopen(l->replay_path, "re");
    if (!l->replay) {
        sb_error("request log replay: cannot open %s: %s", l->replay_path, strerror(errno));
        return;
    }
    sb_info("replaying the request log spool %s", l->replay_path);
    fe_reqlog_replay_next(l);
}

static void fe_reqlog_journal_recover(fe_reqlog_t *l, const char *dir, const char *name);

int fe_reqlog_spool_open(fe_reqlog_t *l, const char *dir, char *err, size_t errlen)
{
    char name[64];
    size_t o = 0;
    for (const char *p = l->frontend; *p && o + 1 < sizeof name; p++) /* a name is not a path */
        name[o++] = (*p == '/' || *p == '\\' || *p == '.') ? '_' : *p;
    name[o] = '\0';
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        int e = errno;
        snprintf(err, errlen, "cannot create the spool dir %s: %s", dir, strerror(e));
        return -e;
    }
    char *lock_path = sb_xasprintf("%s/reqlog-%s.lock", dir, name);
    l->lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    int e = l->lock_fd < 0 ? errno : 0;
    if (!e && flock(l->lock_fd, LOCK_EX | LOCK_NB) < 0)
        e = errno;
    if (e) {
        snprintf(err, errlen, "cannot lock %s: %s (another frontend named '%s' on this spool dir?)", lock_path,
                 strerror(e), l->frontend);
        free(lock_path);
        return -e;
    }
    free(lock_path);
    l->spool_path = sb_xasprintf("%s/reqlog-%s.spool", dir, name);
    l->replay_path = sb_xasprintf("%s/reqlog-%s.replay", dir, name);
    if (fe_reqlog_open_spool_file(l) < 0) {
        e = errno;
        snprintf(err, errlen, "cannot open the spool %s: %s", l->spool_path, strerror(e));
        return -e;
    }
    fe_reqlog_journal_recover(l, dir, name);
    l->journal_prefix = sb_xasprintf("%s/reqlog-%s.journal.", dir, name);
    struct stat st;
    l->spool_bytes = 0;
    if (fstat(l->spool_fd, &st) == 0)
        l->spool_bytes += (long long)st.st_size;
    if (stat(l->replay_path, &st) == 0)
        l->spool_bytes += (long long)st.st_size;
    if (l->spool_bytes > 0)
        sb_info("request log spool holds %lld bytes from an earlier run; replaying when the database answers",
                l->spool_bytes);
    return 0; /* the first tick replays */
}

/* ---- journal ---------------------------------------------------------------- */

static char *fe_reqlog_seg_path(const fe_reqlog_t *l, long long seg)
{
    return sb_xasprintf("%s%lld", l->journal_prefix, seg);
}

/* Appends one row to the open segment (opened first if none): on disk in the
 * page cache when this returns, so a SIGKILL loses it not. */
static void fe_reqlog_journal_row(fe_reqlog_t *l, const json_t *row)
{
    if (l->journal_fd < 0) {
        char *path = fe_reqlog_seg_path(l, ++l->journal_seg);
        l->journal_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
        if (l->journal_fd < 0)
            sb_error("request log journal %s: %s; rows wait in memory only", path, strerror(errno));
        free(path);
        if (l->journal_fd < 0)
            return;
    }
    char *line = json_dumps(row, JSON_COMPACT);
    size_t n = line ? strlen(line) : 0;
    if (line) {
        line[n] = '\n'; /* over the NUL: the line is written by length */
        if (fe_reqlog_write_all(l->journal_fd, line, n + 1) < 0)
            sb_warn("request log journal: write failed: %s", strerror(errno));
    }
    free(line);
}

/* The sequence number of the oldest row not yet in the database or the
 * spool (rows wait in order: the batch in flight, then the buffer); past
 * the newest when there is none. */
static long long fe_reqlog_pending_seq(const fe_reqlog_t *l)
{
    const json_t *first =
        l->inflight && json_array_size(l->inflight) ? json_array_get(l->inflight, 0) : json_array_get(l->buffer, 0);
    return first ? (long long)json_integer_value(json_object_get(first, "_seq")) : l->row_seq + 1;
}

/* On the tick: closes the open segment (its rows are all added), and
 * unlinks the closed ones whose rows are all safe elsewhere. */
static void fe_reqlog_journal_tick(fe_reqlog_t *l)
{
    if (!l->journal_prefix)
        return;
    if (l->journal_fd >= 0) {
        close(l->journal_fd);
        l->journal_fd = -1;
        l->segs = sb_xrealloc(l->segs, (l->nsegs + 1) * sizeof *l->segs);
        l->segs[l->nsegs++] = (struct fe_reqlog_seg){l->journal_seg, l->row_seq};
    }
    long long pending = fe_reqlog_pending_seq(l);
    size_t gone = 0;
    while (gone < l->nsegs && l->segs[gone].max_seq < pending) {
        char *path = fe_reqlog_seg_path(l, l->segs[gone].seg);
        if (unlink(path) < 0 && errno != ENOENT)
            sb_warn("request log journal: cannot remove %s: %s", path, strerror(errno));
        free(path);
        gone++;
    }
    if (gone) {
        memmove(l->segs, l->segs + gone, (l->nsegs - gone) * sizeof *l->segs);
        l->nsegs -= gone;
    }
}

/* At start: segments a dead process left go into the spool (appended in
 * segment order), to be replayed; a row already written is skipped there. */
static void fe_reqlog_journal_recover(fe_reqlog_t *l, const char *dir, const char *name)
{
    char *prefix = sb_xasprintf("reqlog-%s.journal.", name);
    DIR *d = opendir(dir);
    size_t moved = 0;
    for (struct dirent *de; d && (de = readdir(d)) != NULL;) {
        if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
            continue;
        char *path = sb_xasprintf("%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "re");
        char buf[65536];
        size_t got;
        bool ok = f != NULL;
        while (ok && (got = fread(buf, 1, sizeof buf, f)) > 0)
            ok = fe_reqlog_write_all(l->spool_fd, buf, got) == 0;
        if (f)
            fclose(f);
        if (ok && fdatasync(l->spool_fd) == 0 && unlink(path) == 0)
            moved++;
        else
            sb_error("request log journal %s: not moved to the spool: %s", path, strerror(errno));
        free(path);
    }
    if (d)
        closedir(d);
    free(prefix);
    if (moved)
        sb_info("request log: %zu journal segment(s) of an earlier run moved to the spool", moved);
}

/* ---- the database path ----------------------------------------------------- */

static void fe_reqlog_on_written(const PGresult *res, const char *err, void *arg)
{
    fe_reqlog_t *l = arg;
    if (!l->inflight)
        return; /* the batch was taken over by the blocking shutdown flush */
    if (err && l->spool_path) {
        /* Safe on disk until the database is back (fe_reqlog_replay_start). */
        sb_warn("request log batch of %zu rows not written (%s); spooled", json_array_size(l->inflight), err);
        fe_reqlog_spool_rows(l, l->inflight);
        json_decref(l->inflight);
    } else if (err) {
        /* Put the batch back in front; it is retried on the next tick. */
        sb_warn("request log batch of %zu rows not written (%s); will retry", json_array_size(l->inflight), err);
        json_array_extend(l->inflight, l->buffer);
        json_decref(l->buffer);
        l->buffer = l->inflight;
    } else {
        l->written += (long long)json_array_size(l->inflight);
        json_decref(l->inflight);
    }
    l->inflight = NULL;
    /* What is left came after the batch was taken, at the earliest. */
    l->waiting_since_us = json_array_size(l->buffer) ? l->batch_taken_us : 0;
}

static void fe_reqlog_tick(evutil_socket_t fd, short what, void *arg)
{
    fe_reqlog_t *l = arg;
    fe_reqlog_journal_tick(l);
    if (l->spool_path) {
        if (!sb_db_available(l->db))
            fe_reqlog_spool_buffer(l); /* rows that came before the pool noticed the outage */
        if (l->spool_dirty) {
            /* The fsync policy: once per tick while rows are being spooled. */
            if (fdatasync(l->spool_fd) < 0)
                sb_warn("request log spool: fdatasync failed: %s", strerror(errno));
            l->spool_dirty = false;
        }
        fe_reqlog_replay_start(l);
    }
    if (l->inflight || json_array_size(l->buffer) == 0)
        return;
    size_t n = json_array_size(l->buffer);
    if (n <= FE_REQLOG_BATCH_MAX) {
        l->inflight = l->buffer;
        l->buffer = json_array();
    } else {
        l->inflight = json_array();
        for (size_t i = 0; i < FE_REQLOG_BATCH_MAX; i++)
            json_array_append(l->inflight, json_array_get(l->buffer, i));
        json_t *rest = json_array();
        for (size_t i = FE_REQLOG_BATCH_MAX; i < n; i++)
            json_array_append(rest, json_array_get(l->buffer, i));
        json_decref(l->buffer);
        l->buffer = rest;
    }
    l->batch_taken_us = sb_mono_us();
    char *text = json_dumps(l->inflight, JSON_COMPACT);
    const char *params[1] = {text};
    sb_db_query(l->db, FE_SQL_REQLOG_INSERT, 1, params, fe_reqlog_on_written, l);
    free(text);
}

fe_reqlog_t *fe_reqlog_new(struct event_base *base, sb_db_t *db, const char *frontend_name)
{
    fe_reqlog_t *l = sb_xcalloc(1, sizeof *l);
    l->db = db;
    l->frontend = sb_xstrdup(frontend_name);
    l->buffer = json_array();
    l->spool_fd = -1;
    l->lock_fd = -1;
    l->journal_fd = -1;
    l->timer = event_new(base, -1, EV_PERSIST, fe_reqlog_tick, l);
    struct timeval tv = {0, FE_REQLOG_FLUSH_MS * 1000};
    event_add(l->timer, &tv);
    return l;
}

static json_t *fe_reqlog_id_or_null(long long v)
{
    return v > 0 ? json_integer(v) : json_null();
}

json_t *fe_reqlog_row_json(const fe_reqlog_row_t *r, const char *frontend)
{
    json_t *row = json_pack(
        "{s:s, s:I, s:o, s:o, s:s?, s:s?, s:s, s:i, s:i, s:o, s:I, s:I, s:I, s:o, s:s?, s:b, s:s}", "request_id",
        r->request_id, "ts_ms", (json_int_t)r->ts_ms, "key_id", fe_reqlog_id_or_null(r->key_id), "account_id",
        fe_reqlog_id_or_null(r->account_id), "model", r->model, "requested_model", r->requested_model, "path", r->path,
        "status", r->status, "latency_ms", r->latency_ms, "upstream_latency_ms",
        r->upstream_ms >= 0 ? json_integer(r->upstream_ms) : json_null(), "tokens_in", (json_int_t)r->tokens_in,
        "tokens_out", (json_int_t)r->tokens_out, "reasoning_tokens", (json_int_t)r->reasoning_tokens,
        "tokens_estimated", r->tokens_estimated > 0 ? json_integer(r->tokens_estimated) : json_null(), "error",
        r->error, "stream", r->stream, "frontend", frontend);
    if (!row) {
        /* Only invalid UTF-8 in model/path/error can get here: keep the row, lose the text. */
        row =
            json_pack("{s:s, s:I, s:o, s:o, s:s, s:i, s:i, s:s, s:b, s:s}", "request_id", r->request_id, "ts_ms",
                      (json_int_t)r->ts_ms, "key_id", fe_reqlog_id_or_null(r->key_id), "account_id",
                      fe_reqlog_id_or_null(r->account_id), "path", "(invalid utf-8)", "status", r->status, "latency_ms",
                      r->latency_ms, "error", "(invalid utf-8)", "stream", r->stream, "frontend", frontend);
    }
    if (r->trace_id && r->trace_id[0])
        json_object_set_new(row, "trace_id", json_string(r->trace_id));
    if (r->limit_block) { /* the draw trigger moves the reservation out of the block (schema/008) */
        json_object_set_new(row, "limit_block", json_string(r->limit_block));
        json_object_set_new(row, "tokens_reserved", json_integer(r->tokens_reserved));
    }
    /* A copy: the request (and its result) is freed before the batch is written. */
    if (json_array_size(r->tool_calls) > 0)
        json_object_set_new(row, "tool_calls", json_deep_copy(r->tool_calls));
    return row;
}

void fe_reqlog_add(fe_reqlog_t *l, const fe_reqlog_row_t *r)
{
    if (json_array_size(l->buffer) >= FE_REQLOG_BUFFER_MAX) {
        sb_error("request log buffer full (%d rows): database unreachable for too long; dropping the oldest row",
                 FE_REQLOG_BUFFER_MAX);
        json_array_remove(l->buffer, 0);
    }
    json_t *row = fe_reqlog_row_json(r, l->frontend);
    json_object_set_new(row, "_seq", json_integer(++l->row_seq));
    json_array_append_new(l->buffer, row);
    if (!l->waiting_since_us)
        l->waiting_since_us = sb_mono_us();
    /* The database is away: the row goes to disk now, so a frontend that
     * dies during the outage loses none (the fsync follows on the tick). */
    if (l->spool_path && !sb_db_available(l->db)) {
        fe_reqlog_spool_buffer(l);
        return;
    }
    /* Up: to the journal now, before the reply leaves, so a frontend killed
     * right after answering still has the row (replayed at its next start). */
    if (l->journal_prefix)
        fe_reqlog_journal_row(l, row);
    if (json_array_size(l->buffer) >= FE_REQLOG_BATCH_MAX)
        event_active(l->timer, EV_TIMEOUT, 0);
}

size_t fe_reqlog_flush_blocking(fe_reqlog_t *l)
{
    if (l->inflight) {
        /* The async write may or may not land; rewriting it is harmless (ON CONFLICT). */
        json_array_extend(l->inflight, l->buffer);
        json_decref(l->buffer);
        l->buffer = l->inflight;
        l->inflight = NULL;
    }
    if (json_array_size(l->buffer) == 0)
        return 0;
    char *text = json_dumps(l->buffer, JSON_COMPACT);
    const char *params[1] = {text};
    int rc = sb_db_exec_blocking(l->db, fe_sql_reqlog_insert_sql, 1, params);
    free(text);
    if (rc == 0) {
        json_array_clear(l->buffer);
        fe_reqlog_journal_tick(l); /* every row is written: the journal goes */
        return 0;
    }
    size_t n = json_array_size(l->buffer);
    if (l->spool_path) { /* replayed by the next start */
        n -= fe_reqlog_spool_rows(l, l->buffer);
        if (fdatasync(l->spool_fd) < 0)
            sb_warn("request log spool: fdatasync failed: %s", strerror(errno));
        l->spool_dirty = false;
        json_array_clear(l->buffer);
        fe_reqlog_journal_tick(l); /* in the spool now */
    }
    return n;
}

void fe_reqlog_destroy(fe_reqlog_t **pl)
{
    if (!pl || !*pl)
        return;
    fe_reqlog_t *l = *pl;
    event_free(l->timer);
    json_decref(l->buffer);
    json_decref(l->inflight);
    json_decref(l->replaying);
    if (l->replay)
        fclose(l->replay);
    if (l->spool_fd >= 0) {
        if (l->spool_dirty)
            fdatasync(l->spool_fd);
        close(l->spool_fd);
    }
    if (l->journal_fd >= 0)
        close(l->journal_fd);
    free(l->journal_prefix);
    free(l->segs);
    if (l->lock_fd >= 0)
        close(l->lock_fd);
    free(l->spool_path);
    free(l->replay_path);
    free(l->frontend);
    free(l);
    *pl = NULL;
}

void fe_reqlog_stats(const fe_reqlog_t *l, fe_reqlog_stats_t *st)
{
    st->waiting = (long long)(json_array_size(l->buffer) + (l->inflight ? json_array_size(l->inflight) : 0));
    st->written = l->written;
    st->dropped = l->dropped;
    st->spool_bytes = l->spool_bytes;
    st->lag_us = st->waiting && l->waiting_since_us ? sb_mono_us() - l->waiting_since_us : 0;
}

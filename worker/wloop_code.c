/*
 * wloop_code: the code interpreter's steps (wloop_tools.h). One sandbox per
 * response (wtool_sandbox.h): made at the first call, its container's files
 * put in first (a container named by id: read from the database; "auto":
 * the container is made then, with the files of container.file_ids; never
 * for a response that does not call the tool), then the calls run in it one
 * at a time, in the order the model made them, so variables persist from one
 * call to the next within the response. What the code writes under
 * /mnt/data is stored as the container's files and cited where the answer
 * links it (container_file_citation). The sandbox ends with the response:
 * a later response on the same container gets its files, not its variables
 * (workers are stateless; docs/tools.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_buf.h"
#include "sb_id.h"
#include "sb_log.h"
#include "wloop_tools.h"
#include "wsql_containers.h"
#include "wtool_sandbox.h"

/* Most images of one call shown (the rest are counted). */
#define SB_WCI_MAX_IMAGES 8

enum sb_wci_state {
    SB_WCI_NEW,     /* nothing done yet: the first call loads the container */
    SB_WCI_LOADING, /* the container's files are being read (or it is being made) */
    SB_WCI_READY,   /* the sandbox holds the files; calls run */
    SB_WCI_FAILED,  /* the container cannot be used (why): every call fails */
};

typedef struct sb_wci {
    sb_wloop_t *l;
    enum sb_wci_state state;
    char container_id[SB_ID_MAX];
    bool make;  /* container "auto": made at the first call */
    bool reuse; /* container "auto" with the chain's container: made anew if that one is gone */
    char *why;  /* SB_WCI_FAILED: the reason */
    sb_sandbox_t *sbx;
    sb_wdbq_t *q;
    sb_wexec_t *running; /* the call in the sandbox (or storing its files), or NULL */
} sb_wci_t;

/* One call's state (e->step). */
typedef struct sb_wcode {
    size_t code_sent; /* bytes of code shown as deltas */
    bool queued;      /* its arguments are in: it waits for or has the sandbox */
    char *text;       /* what the model will be told, once run */
    int writes;       /* file writes not yet answered */
    sb_wdbq_t **qs;   /* their tokens */
    size_t n_qs;
} sb_wcode_t;

static void sb_wci_pump(sb_wci_t *ci);
static void sb_wci_load(sb_wci_t *ci);

static sb_wci_t *sb_wci_of(sb_wloop_t *l)
{
    if (l->ci)
        return l->ci;
    sb_wci_t *ci = sb_xcalloc(1, sizeof *ci);
    ci->l = l;
    const json_t *c = json_object_get(l->plan->code_interpreter, "container");
    size_t n = json_array_size(l->plan->containers);
    if (json_is_string(c) && strcmp(json_string_value(c), "auto") != 0) {
        snprintf(ci->container_id, sizeof ci->container_id, "%s", json_string_value(c));
    } else if (n > 0) {
        /* "auto" reuses the container the chain's newest code ran in, as
         * OpenAI's; if it has expired since, a new one is made (below). */
        snprintf(ci->container_id, sizeof ci->container_id, "%s",
                 json_string_value(json_array_get(l->plan->containers, n - 1)));
        ci->reuse = true;
    } else {
        sb_id_new(ci->container_id, sizeof ci->container_id, "cntr_", 24);
        ci->make = true;
    }
    l->ci = ci;
    return ci;
}

json_t *sb_wloop_code_item(sb_wloop_t *l, sb_wexec_t *e)
{
    sb_wci_t *ci = sb_wci_of(l);
    char id[SB_ID_MAX];
    sb_id_new(id, sizeof id, "ci_", 24);
    e->log_server = "sandbox";
    e->step = sb_xcalloc(1, sizeof(sb_wcode_t));
    return json_pack("{s:s, s:s, s:s, s:s, s:s, s:n}", "type", "code_interpreter_call", "id", id, "status",
                     "in_progress", "code", "", "container_id", ci->container_id, "outputs");
}

/* Shows the code written since the last delta. */
static void sb_wcode_delta(sb_wexec_t *e, const char *code)
{
    sb_wcode_t *c = e->step;
    size_t n = strlen(code);
    if (!c || n <= c->code_sent)
        return;
    sb_wloop_emit(e->l, sb_event_args_delta(e->index, code + c->code_sent, n - c->code_sent));
    c->code_sent = n;
}

void sb_wloop_code_args(sb_wexec_t *e, const char *delta, size_t len)
{
    /* The arguments so far are the call's item's; they are kept here as
     * they come, so the code streams while the model writes it. */
    const char *so_far = json_string_value(json_object_get(e->item, "sb_args"));
    char *all = sb_xasprintf("%s%.*s", so_far ? so_far : "", (int)len, delta ? delta : "");
    json_object_set_new(e->item, "sb_args", json_string(all));
    char *code = sb_tool_code_partial(all, strlen(all));
    sb_wcode_delta(e, code);
    free(code);
    free(all);
}

static void sb_wcode_free(sb_wcode_t *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->n_qs; i++)
        sb_wdbq_forget(&c->qs[i]);
    free(c->qs);
    free(c->text);
    free(c);
}

/* The call is over: its item, its log row, what the model is told. */
static void sb_wcode_end(sb_wexec_t *e, const char *outcome, const char *error)
{
    sb_wloop_t *l = e->l;
    sb_wcode_t *c = e->step;
    char *text = c && c->text ? c->text : NULL;
    char *fallback = NULL;
    if (!text)
        text = fallback = sb_xasprintf("Error: the code could not be run: %s", error ? error : "unknown error");
    json_object_set_new(e->item, "sb_output", json_string(text));
    json_object_del(e->item, "sb_error");
    json_object_del(e->item, "sb_args");
    sb_wloop_log(l, e, "code_interpreter", NULL, outcome, strlen(text), error);
    e->step = NULL;
    if (l->ci && l->ci->running == e)
        l->ci->running = NULL;
    sb_wexec_finish(e, text);
    sb_wcode_free(c);
    free(fallback);
    if (l->ci)
        sb_wci_pump(l->ci);
}

static void sb_wcode_fail(sb_wexec_t *e, const char *why)
{
    json_object_set_new(e->item, "status", json_string("failed"));
    json_object_set_new(e->item, "outputs", json_array());
    sb_wcode_end(e, "error", why);
}

/* A written file stored: its id, for the citation. */
static void sb_wcode_on_put(const PGresult *res, const char *err, void *owner)
{
    sb_wexec_t *e = owner;
    sb_wcode_t *c = e->step;
    c->writes--;
    if (!err && res && PQntuples(res) == 1) {
        const char *path = PQgetvalue(res, 0, 1);
        const char *slash = strrchr(path, '/');
        const char *name = slash ? slash + 1 : path;
        char *url = sb_xasprintf("sandbox:%s", path);
        json_array_append_new(e->l->sources,
                              json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:s}}", "type", "url", "url", url, "title",
                                        name, "annotation", "type", "container_file_citation", "container_id",
                                        e->l->ci ? e->l->ci->container_id : "", "file_id", PQgetvalue(res, 0, 0),
                                        "filename", name));
        free(url);
    }
    if (c->writes == 0)
        sb_wcode_end(e, json_is_true(json_object_get(e->item, "sb_error")) ? "error" : "ok", NULL);
}

static void sb_wcode_on_result(void *arg, sb_sandbox_result_t *res)
{
    sb_wci_t *ci = arg;
    sb_wexec_t *e = ci->running;
    if (!e)
        return;
    sb_wcode_t *c = e->step;
    sb_wloop_t *l = ci->l;
    json_t *outputs = json_array();
    const char *logs = res->logs ? res->logs : "";
    if (*logs)
        json_array_append_new(outputs, json_pack("{s:s, s:s}", "type", "logs", "logs", logs));
    size_t i;
    for (i = 0; i < res->n_images && i < SB_WCI_MAX_IMAGES; i++) {
        char *url = sb_xasprintf("data:image/png;base64,%s", res->images[i]);
        json_array_append_new(outputs, json_pack("{s:s, s:s}", "type", "image", "url", url));
        free(url);
    }
    json_object_set_new(e->item, "outputs", outputs);
    bool unavailable = res->status == SB_SANDBOX_UNAVAILABLE;
    json_object_set_new(e->item, "status", json_string(unavailable ? "failed" : "completed"));
    if (res->status != SB_SANDBOX_OK)
        json_object_set_new(e->item, "sb_error", json_true());

    /* What the model reads: the notebook's output, then what happened. */
    sb_buf_t b = {0};
    sb_buf_add(&b, logs, strlen(logs));
    const char *note = res->status == SB_SANDBOX_TIMEOUT  ? "\n[The code was stopped: it ran out of time.]"
                       : res->status == SB_SANDBOX_KILLED ? "\n[The code was stopped: it went over a resource limit.]"
                       : unavailable                      ? "\n[The sandbox is unavailable.]"
                                                          : "";
    sb_buf_add(&b, note, strlen(note));
    if (res->restarted) {
        static const char r[] = "\n[The interpreter was restarted: earlier variables are gone; files remain.]";
        sb_buf_add(&b, r, sizeof r - 1);
    }
    if (res->n_images > 0) {
        char *t = sb_xasprintf("\n[%zu image(s) shown to the user.]", res->n_images);
        sb_buf_add(&b, t, strlen(t));
        free(t);
    }
    for (i = 0; i < res->n_files; i++) {
        char *t = sb_xasprintf("\n[Saved %s]", res->files[i].path);
        sb_buf_add(&b, t, strlen(t));
        free(t);
    }
    if (res->files_truncated) {
        static const char ft[] = "\n[Some files were not saved: too many or too large.]";
        sb_buf_add(&b, ft, sizeof ft - 1);
    }
    if (b.len == 0) {
        static const char none[] = "[The code ran and printed nothing.]";
        sb_buf_add(&b, none, sizeof none - 1);
    }
    sb_buf_add(&b, "", 1);
    c->text = sb_wloop_cap(l, b.p);
    free(b.p);

    /* The files it wrote become the container's. */
    char account[32];
    snprintf(account, sizeof account, "%lld", (long long)json_integer_value(json_object_get(l->j->job, "account_id")));
    for (i = 0; i < res->n_files; i++) {
        /* Kept in the sandbox's own list too: an interpreter restarted
         * after a timeout or a crash gets them back. */
        if (sb_sandbox_put(ci->sbx, res->files[i].path, res->files[i].data, res->files[i].len) < 0)
            sb_warn("container %s: %s not kept for a restart", ci->container_id, res->files[i].path);
        char id[SB_ID_MAX];
        sb_id_new(id, sizeof id, "cfile_", 16);
        char *data = sb_base64_encode(res->files[i].data, res->files[i].len, NULL);
        const char *params[] = {id, ci->container_id, account, res->files[i].path, data};
        c->qs = sb_xrealloc(c->qs, (c->n_qs + 1) * sizeof *c->qs);
        c->qs[c->n_qs++] = sb_wdbq_run(l, SB_WSQL_CONTAINER_FILE_PUT, 5, params, sb_wcode_on_put, e);
        c->writes++;
        free(data);
    }
    if (c->writes == 0)
        sb_wcode_end(e, res->status == SB_SANDBOX_OK ? "ok" : "error", NULL);
}

/* The container's files are in (or it failed). */
static void sb_wci_on_files(const PGresult *res, const char *err, void *owner)
{
    sb_wci_t *ci = owner;
    ci->q = NULL;
    if (!err && res && PQntuples(res) == 0 && ci->reuse) {
        /* The chain's container has expired (or is gone): a new one. */
        ci->reuse = false;
        ci->make = true;
        sb_id_new(ci->container_id, sizeof ci->container_id, "cntr_", 24);
        for (sb_wexec_t *x = ci->l->execs; x; x = x->next)
            if (x->kind == SB_TOOL_CODE && x->item)
                json_object_set_new(x->item, "container_id", json_string(ci->container_id));
        sb_wci_load(ci);
        return;
    }
    if (err || !res || PQntuples(res) == 0) {
        ci->state = SB_WCI_FAILED;
        ci->why = sb_xasprintf(err        ? "the container could not be read"
                               : ci->make ? "the container could not be made"
                                          : "the container %.64s was not found or has expired",
                               ci->container_id);
        sb_wci_pump(ci);
        return;
    }
    /* The container's memory_limit, up to 4 GiB a process (16g and 64g
     * are held to that: docs/containers.md). */
    const char *mem =
        json_string_value(json_object_get(json_object_get(ci->l->plan->code_interpreter, "container"), "memory_limit"));
    sb_worker_t *w = ci->l->j->w;
    sb_sandbox_config_t cfg = {
        .wall_ms = (int)w->tool_timeout_ms,
        .memory_bytes = mem && strcmp(mem, "1g") != 0 ? 4LL << 30 : 1LL << 30,
        .uid_base = w->sandbox_uid_base,
        .uid_count = w->sandbox_uid_count,
    };
    ci->sbx = sb_sandbox_new(ci->l->j->w->base, &cfg);
    for (int r = 0; ci->sbx && r < PQntuples(res); r++) {
        if (PQgetisnull(res, r, 0))
            continue;
        const char *path = PQgetvalue(res, r, 0);
        if (!strncmp(path, "/mnt/data/", 10))
            path += 10;
        size_t len = 0;
        const char *b64 = PQgetvalue(res, r, 1);
        unsigned char *bytes = sb_base64_decode(b64, strlen(b64), &len);
        if (bytes && sb_sandbox_put(ci->sbx, path, bytes, len) < 0)
            sb_warn("container %s: file %s not put in the sandbox", ci->container_id, path);
        free(bytes);
    }
    if (!ci->sbx) {
        ci->state = SB_WCI_FAILED;
        ci->why = sb_xstrdup("the sandbox could not be made");
    } else {
        ci->state = SB_WCI_READY;
    }
    sb_wci_pump(ci);
}

static void sb_wci_load(sb_wci_t *ci)
{
    sb_wloop_t *l = ci->l;
    if (!l->j->w->db) {
        ci->state = SB_WCI_FAILED;
        ci->why = sb_xstrdup("the code interpreter needs the worker's database (--database)");
        return;
    }
    ci->state = SB_WCI_LOADING;
    char account[32];
    snprintf(account, sizeof account, "%lld", (long long)json_integer_value(json_object_get(l->j->job, "account_id")));
    if (!ci->make) {
        const char *params[] = {ci->container_id, account};
        ci->q = sb_wdbq_run(l, SB_WSQL_CONTAINER_FILES, 2, params, sb_wci_on_files, ci);
        return;
    }
    const json_t *c = json_object_get(l->plan->code_interpreter, "container");
    const char *mem = json_string_value(json_object_get(c, "memory_limit"));
    /* file_ids as a text[] literal: each id quoted, its quotes and
     * backslashes escaped (a parameter, never SQL). */
    sb_buf_t ids = {0};
    sb_buf_add(&ids, "{", 1);
    size_t i;
    const json_t *id;
    json_array_foreach (json_object_get(c, "file_ids"), i, id) {
        const char *s = json_string_value(id);
        if (!s)
            continue;
        if (ids.len > 1)
            sb_buf_add(&ids, ",", 1);
        sb_buf_add(&ids, "\"", 1);
        for (; *s; s++) {
            if (*s == '"' || *s == '\\')
                sb_buf_add(&ids, "\\", 1);
            sb_buf_add(&ids, s, 1);
        }
        sb_buf_add(&ids, "\"", 1);
    }
    sb_buf_add(&ids, "}", 2);
    char name[96];
    snprintf(name, sizeof name, "auto (%s)", l->j->job_id);
    const char *params[] = {ci->container_id, account, name, mem ? mem : "1g", ids.p};
    ci->q = sb_wdbq_run(l, SB_WSQL_CONTAINER_CREATE, 5, params, sb_wci_on_files, ci);
    free(ids.p);
}

/* Moves the calls along: loads the container at the first, then runs the
 * queued calls one at a time. */
static void sb_wci_pump(sb_wci_t *ci)
{
    sb_wloop_t *l = ci->l;
    if (ci->running || l->state == SB_WLOOP_DONE)
        return;
    sb_wexec_t *next = NULL;
    for (sb_wexec_t *e = l->execs; e && !next; e = e->next)
        if (e->kind == SB_TOOL_CODE && e->step && ((sb_wcode_t *)e->step)->queued)
            next = e;
    if (!next)
        return;
    if (ci->state == SB_WCI_NEW)
        sb_wci_load(ci);
    if (ci->state == SB_WCI_LOADING)
        return;
    if (ci->state == SB_WCI_FAILED) {
        sb_wcode_fail(next, ci->why);
        return;
    }
    ci->running = next;
    ((sb_wcode_t *)next->step)->queued = false;
    const char *code = json_string_value(json_object_get(next->item, "code"));
    if (sb_sandbox_exec(ci->sbx, code ? code : "", sb_wcode_on_result, ci) < 0) {
        ci->running = NULL;
        sb_wcode_fail(next, "the sandbox could not run the code");
    }
}

void sb_wloop_code_start(sb_wexec_t *e, const json_t *args)
{
    sb_wloop_t *l = e->l;
    sb_wcode_t *c = e->step;
    const char *code = json_string_value(json_object_get(args, "code"));
    json_object_del(e->item, "sb_args");
    json_object_set_new(e->item, "code", json_string(code ? code : ""));
    sb_wcode_delta(e, code ? code : "");
    json_t *p = sb_event_item_progress(e->index, "interpreting");
    json_object_set_new(p, "code", json_string(code ? code : ""));
    sb_wloop_emit(l, p);
    if (!code || !*code) {
        sb_wcode_fail(e, "the call has no code");
        return;
    }
    c->queued = true;
    sb_wci_pump(sb_wci_of(l));
}

void sb_wloop_code_cancel(sb_wexec_t *e)
{
    sb_wloop_t *l = e->l;
    if (l->ci && l->ci->running == e)
        l->ci->running = NULL; /* its result, if it comes, is dropped */
    sb_wcode_free(e->step);
    e->step = NULL;
}

void sb_wloop_code_free(sb_wloop_t *l)
{
    sb_wci_t *ci = l->ci;
    if (!ci)
        return;
    sb_wdbq_forget(&ci->q);
    sb_sandbox_destroy(&ci->sbx);
    free(ci->why);
    free(ci);
    l->ci = NULL;
}

/*
 * emu_faults: fault injection, per request and per route.
 *
 * A fault is asked for in-band ([[emu:status=503]], [[emu:trickle=100]], ...
 * in the last user message) or per route: PUT /_emu/faults/{model} gives a
 * directive list that the next `count` requests for that upstream model (or
 * every one, until cleared) behave as if they carried. Both go through the
 * same parser (emu_directives.c); sb_emu_fault_stage, run by every protocol
 * handler, merges them (the request's own values win), answers the error
 * faults in the provider's own body and leaves the delivery faults (latency,
 * hang, drop, trickle, reset, endless) on the reply for emu_server.c.
 *
 * This file also keeps the per-model counters of GET /_emu/stats
 * ("by_model"): requests that reached a protocol handler for each model, and
 * how many of them got an injected fault, so tests can count upstream
 * attempts exactly. Tables are small arrays scanned linearly: a test run
 * configures a handful of routes and talks to a few dozen models.
 */
#include "emu_faults.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sb_alloc.h"

#define ERR_MAX 256

struct fault_route {
    char *model;      /* owned */
    char *directives; /* owned: the list as given */
    struct sb_emu_directives d;
    long count;     /* as given; 0 = every request until cleared */
    long remaining; /* requests still to fault when count > 0 */
};

struct model_stats {
    char *model; /* owned */
    unsigned long long requests, faults;
};

struct sb_emu_faults {
    struct fault_route *routes;
    size_t nroutes, routes_cap;
    struct model_stats *stats;
    size_t nstats, stats_cap;
};

struct sb_emu_faults *sb_emu_faults_new(void)
{
    return sb_xcalloc(1, sizeof(struct sb_emu_faults));
}

static void route_free(struct fault_route *r)
{
    free(r->model);
    free(r->directives);
}

static void clear_routes(struct sb_emu_faults *f)
{
    for (size_t i = 0; i < f->nroutes; i++)
        route_free(&f->routes[i]);
    f->nroutes = 0;
}

void sb_emu_faults_reset_stats(struct sb_emu_faults *f)
{
    for (size_t i = 0; i < f->nstats; i++)
        free(f->stats[i].model);
    f->nstats = 0;
}

void sb_emu_faults_destroy(struct sb_emu_faults **fp)
{
    if (!fp || !*fp)
        return;
    struct sb_emu_faults *f = *fp;
    clear_routes(f);
    sb_emu_faults_reset_stats(f);
    free(f->routes);
    free(f->stats);
    free(f);
    *fp = NULL;
}

static struct fault_route *find_route(struct sb_emu_faults *f, const char *model)
{
    for (size_t i = 0; i < f->nroutes; i++)
        if (!strcmp(f->routes[i].model, model))
            return &f->routes[i];
    return NULL;
}

static void remove_route(struct sb_emu_faults *f, struct fault_route *r)
{
    size_t i = (size_t)(r - f->routes);
    route_free(r);
    memmove(&f->routes[i], &f->routes[i + 1], (f->nroutes - i - 1) * sizeof *f->routes);
    f->nroutes--;
}

bool sb_emu_faults_take(struct sb_emu_faults *f, const char *model, struct sb_emu_directives *out)
{
    struct fault_route *r = model ? find_route(f, model) : NULL;
    if (!r)
        return false;
    *out = r->d;
    if (r->count > 0 && --r->remaining <= 0)
        remove_route(f, r);
    return true;
}

void sb_emu_faults_note(struct sb_emu_faults *f, const char *model, bool faulted)
{
    struct model_stats *s = NULL;
    for (size_t i = 0; i < f->nstats && !s; i++)
        if (!strcmp(f->stats[i].model, model))
            s = &f->stats[i];
    if (!s) {
        if (f->nstats >= SB_EMU_FAULTS_MAX_MODELS)
            return;
        if (f->nstats == f->stats_cap) {
            f->stats_cap = f->stats_cap ? f->stats_cap * 2 : 16;
            f->stats = sb_xrealloc(f->stats, f->stats_cap * sizeof *f->stats);
        }
        s = &f->stats[f->nstats++];
        s->model = sb_xstrdup(model);
        s->requests = s->faults = 0;
    }
    s->requests++;
    if (faulted)
        s->faults++;
}

json_t *sb_emu_faults_by_model(const struct sb_emu_faults *f)
{
    json_t *o = json_object();
    for (size_t i = 0; i < f->nstats; i++)
        json_object_set_new(o, f->stats[i].model,
                            json_pack("{s:I, s:I}", "requests", (json_int_t)f->stats[i].requests, "faults",
                                      (json_int_t)f->stats[i].faults));
    return o;
}

/* ---- the control endpoint ---------------------------------------------------------- */

static json_t *route_json(const struct fault_route *r)
{
    return json_pack("{s:s, s:I, s:o}", "directives", r->directives, "count", (json_int_t)r->count, "remaining",
                     r->count > 0 ? json_integer(r->remaining) : json_null());
}

static json_t *error_json(int *status, int code, const char *msg)
{
    *status = code;
    return json_pack("{s:s}", "error", msg);
}

/* PUT /_emu/faults/{model} {"directives":"...","count":N}. */
static json_t *put_route(struct sb_emu_faults *f, const char *model, const char *body, size_t body_len, int *status)
{
    char err[ERR_MAX];
    json_error_t jerr;
    json_t *req = body_len ? json_loadb(body, body_len, 0, &jerr) : NULL;
    json_t *out = NULL;
    if (!json_is_object(req)) {
        out = error_json(status, 400, "body must be a JSON object {\"directives\":\"...\",\"count\":N}");
        goto done;
    }
    const char *list = json_string_value(json_object_get(req, "directives"));
    if (!list) {
        out = error_json(status, 400, "\"directives\" must be a string, e.g. \"status=503 retry_after=2\"");
        goto done;
    }
    json_t *jc = json_object_get(req, "count");
    if (jc && !json_is_null(jc) && (!json_is_integer(jc) || json_integer_value(jc) < 0)) {
        out = error_json(status, 400, "\"count\" must be an integer >= 0 (0 or absent: every request)");
        goto done;
    }
    long count = json_is_integer(jc) ? (long)json_integer_value(jc) : 0;
    struct sb_emu_directives d;
    if (sb_emu_directives_parse_list(list, &d, err, sizeof err) < 0) {
        out = error_json(status, 400, err);
        goto done;
    }
    struct fault_route *r = find_route(f, model);
    if (!r) {
        if (f->nroutes >= SB_EMU_FAULTS_MAX_ROUTES) {
            out = error_json(status, 400, "too many fault routes; DELETE /_emu/faults first");
            goto done;
        }
        if (f->nroutes == f->routes_cap) {
            f->routes_cap = f->routes_cap ? f->routes_cap * 2 : 8;
            f->routes = sb_xrealloc(f->routes, f->routes_cap * sizeof *f->routes);
        }
        r = &f->routes[f->nroutes++];
        r->model = sb_xstrdup(model);
    } else {
        free(r->directives);
    }
    r->directives = sb_xstrdup(list);
    r->d = d;
    r->count = count;
    r->remaining = count;
    out = route_json(r);
    json_object_set_new(out, "model", json_string(model));
    *status = 200;

done:
    json_decref(req);
    return out;
}

json_t *sb_emu_faults_control(struct sb_emu_faults *f, const char *method, const char *model, const char *body,
                              size_t body_len, int *status)
{
    if (model && !*model)
        return error_json(status, 404, "no model in the path: /_emu/faults/{upstream_model}");
    if (!model && !strcmp(method, "GET")) {
        json_t *list = json_object();
        for (size_t i = 0; i < f->nroutes; i++)
            json_object_set_new(list, f->routes[i].model, route_json(&f->routes[i]));
        *status = 200;
        return json_pack("{s:o}", "faults", list);
    }
    if (!model && !strcmp(method, "DELETE")) {
        size_t n = f->nroutes;
        clear_routes(f);
        *status = 200;
        return json_pack("{s:b, s:I}", "ok", 1, "removed", (json_int_t)n);
    }
    if (model && !strcmp(method, "GET")) {
        struct fault_route *r = find_route(f, model);
        if (!r)
            return error_json(status, 404, "no faults for this model");
        *status = 200;
        return route_json(r);
    }
    if (model && !strcmp(method, "PUT"))
        return put_route(f, model, body, body_len, status);
    if (model && !strcmp(method, "DELETE")) {
        struct fault_route *r = find_route(f, model);
        if (r)
            remove_route(f, r);
        *status = 200;
        return json_pack("{s:b, s:I}", "ok", 1, "removed", (json_int_t)(r ? 1 : 0));
    }
    return error_json(status, 405, "method not allowed: GET|DELETE /_emu/faults, GET|PUT|DELETE /_emu/faults/{model}");
}

/* ---- the stage every handler runs -------------------------------------------------- */

int sb_emu_retry_after(const struct sb_emu_directives *d, int status)
{
    if (d && d->retry_after >= 0)
        return d->retry_after;
    if (status == 429 && !(d && d->quota))
        return 1;
    return -1;
}

/*
 * The credential a request carried, the way its provider reads it: x-api-key,
 * then x-goog-api-key, then a bearer token (the value after "Bearer "), then
 * Gemini's ?key=. Sets *header to the carrier's name and *raw to the header's
 * whole value. Owned ("" when none).
 */
static char *request_credential(const struct sb_emu_call *call, const char **header, const char **raw)
{
    static const char *const names[] = {"x-api-key", "x-goog-api-key", "Authorization"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = sb_emu_call_header(call, names[i]);
        if (!v)
            continue;
        *header = names[i];
        *raw = v;
        return sb_xstrdup(i == 2 && !strncasecmp(v, "Bearer ", 7) ? v + 7 : v);
    }
    char *q = sb_emu_call_query_param(call, "key");
    *header = q ? "?key" : "none";
    *raw = "";
    return q ? q : sb_xstrdup("");
}

/* [[emu:leak_key]]: the kind of message a careless OpenAI-compatible proxy
 * writes (LiteLLM's "Received API Key = ..."), quoting the credential both
 * bare and as its header carried it. Owned. */
static char *leak_message(const struct sb_emu_call *call)
{
    const char *header = NULL, *raw = NULL;
    char *cred = request_credential(call, &header, &raw);
    char *msg = sb_xasprintf("Authentication Error, key not allowed to access model %s. Received API Key = %s "
                             "(from %s: %s)",
                             call->model ? call->model : "(none)", cred, header, raw);
    free(cred);
    return msg;
}

bool sb_emu_fault_stage(struct sb_emu_call *call, struct sb_emu_directives *d, bool stream, long long prompt_tokens,
                        const struct sb_emu_fault_errors *errs)
{
    struct sb_emu_reply *rep = &call->reply;
    struct sb_emu_directives route;
    if (call->model && sb_emu_faults_take(sb_emu_faults_of(call->emu), call->model, &route))
        sb_emu_directives_merge(d, &route);
    if (d->quota && !d->status)
        d->status = 429;

    rep->delay_ms = d->latency_ms;
    rep->hang = d->hang;
    rep->drop = d->drop;
    rep->trickle_ms = d->trickle_ms;
    rep->reset = d->reset;
    bool faulted =
        d->latency_ms > 0 || d->hang || d->drop || d->trickle_ms > 0 || d->reset || d->malformed || d->status != 0;
    if (stream)
        faulted = faulted || d->endless || d->reset_after >= 0 || d->hang_after >= 0 || d->drop_after >= 0;

    faulted = faulted || d->auth_fault || d->leak_key;

    bool decided = false;
    long long limit = d->context_limit >= 0 ? d->context_limit : errs->context_window;
    if (d->auth_fault && errs->auth) {
        const char *header = NULL, *raw = NULL;
        char *cred = request_credential(call, &header, &raw);
        errs->auth(call, d->auth_fault, cred);
        free(cred);
        decided = true;
    } else if (d->leak_key && errs->leak) {
        char *msg = leak_message(call);
        errs->leak(call, d->status ? d->status : 400, msg, stream);
        free(msg);
        decided = true;
    } else if (errs->context && (d->context_exceeded || (d->context_limit >= 0 && prompt_tokens > d->context_limit))) {
        /* Forced with a short input, the count still has to read as over the limit. */
        long long tokens = prompt_tokens > limit ? prompt_tokens : limit + prompt_tokens;
        errs->context(call, tokens, limit);
        faulted = decided = true;
    } else if (d->status) {
        errs->status(call, d->status, d);
        decided = true;
    }
    call->faulted = faulted;
    return decided;
}

void sb_emu_stream_faults(struct sb_emu_reply *rep, const struct sb_emu_directives *d)
{
    if (d->chunk_delay_ms >= 0)
        rep->chunk_delay_ms = d->chunk_delay_ms;
    else
        rep->chunk_delay_ms = rep->endless_json ? SB_EMU_ENDLESS_DELAY_MS : 0;
    rep->hang_after = d->hang_after;
    rep->drop_after = d->drop_after;
    rep->reset_after = d->reset_after;
}

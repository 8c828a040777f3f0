/*
 * fe_admin_api: see fe_admin_api.h. One call: route, key shape, key lookup,
 * body (when the route takes one), the operation, the reply. A client that
 * leaves while a query is out is forgotten; the call is freed when the
 * query's answer comes.
 */
#include "fe_admin_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_body.h"
#include "fe_server.h"
#include "fe_sql_admin.h"
#include "sb_alloc.h"
#include "sb_http_parse.h"
#include "sb_id.h"
#include "sb_keyhash.h"
#include "sb_log.h"

#define FE_ADMIN_PREFIX "/admin/v1/"
#define FE_ADMIN_BODY_MAX (1u << 20)
#define FE_ADMIN_SEGMENTS 8

typedef struct {
    const char *method;
    const char *pattern; /* "{name}" segments become arguments of that name */
    const char *op;      /* sb_admin_api's operation; NULL: whoami */
    bool body;           /* takes a JSON object body */
} fe_admin_route_t;

static const fe_admin_route_t fe_admin_routes[] = {
    {"GET", "/admin/v1/whoami", NULL, false},
    {"GET", "/admin/v1/live", "live", false}, /* asked of the broker, not the database */
    {"GET", "/admin/v1/accounts", "accounts.list", false},
    {"POST", "/admin/v1/accounts", "accounts.create", true},
    {"POST", "/admin/v1/accounts/{name}/enable", "accounts.enable", false},
    {"POST", "/admin/v1/accounts/{name}/disable", "accounts.disable", false},
    {"GET", "/admin/v1/groups", "groups.list", false},
    {"POST", "/admin/v1/groups", "groups.create", true},
    {"POST", "/admin/v1/groups/{group}/models", "groups.allow", true},
    {"DELETE", "/admin/v1/groups/{group}/models/{model}", "groups.deny", false},
    {"GET", "/admin/v1/keys", "keys.list", false},
    {"POST", "/admin/v1/keys", "keys.create", true},
    {"POST", "/admin/v1/keys/{id}/enable", "keys.enable", false},
    {"POST", "/admin/v1/keys/{id}/disable", "keys.disable", false},
    {"POST", "/admin/v1/keys/{id}/group", "keys.move", true},
    {"GET", "/admin/v1/models", "models.list", false},
    {"PUT", "/admin/v1/models/{id}", "models.put", true},
    {"POST", "/admin/v1/models/{id}/enable", "models.enable", false},
    {"POST", "/admin/v1/models/{id}/disable", "models.disable", false},
    {"GET", "/admin/v1/limits", "limits.list", false},
    {"PUT", "/admin/v1/limits/keys/{id}", "limits.key", true},
    {"PUT", "/admin/v1/limits/groups/{name}", "limits.group", true},
    {"PUT", "/admin/v1/limits/accounts/{name}", "limits.quota", true},
    {"POST", "/admin/v1/limits/accounts/{name}/reset_usage", "limits.reset_usage", false},
    {"GET", "/admin/v1/request_log", "request_log", false},
    {"GET", "/admin/v1/usage", "usage", false},
    {"GET", "/admin/v1/tool_calls", "tool_calls", false},
    {"GET", "/admin/v1/audit", "audit", false},
    {"GET", "/admin/v1/admin_keys", "admin_keys.list", false},
    {"GET", "/admin/v1/search_backends", "search_backends.list", false},
    {"POST", "/admin/v1/search_backends", "search_backends.create", true},
    {"POST", "/admin/v1/search_backends/{name}/default", "search_backends.default", false},
    {"POST", "/admin/v1/search_backends/{name}/enable", "search_backends.enable", false},
    {"POST", "/admin/v1/search_backends/{name}/disable", "search_backends.disable", false},
    {"DELETE", "/admin/v1/search_backends/{name}", "search_backends.remove", false},
    {"GET", "/admin/v1/prompts", "prompts.list", false},
    {"GET", "/admin/v1/prompts/{id}", "prompts.get", false},
    {"POST", "/admin/v1/prompts", "prompts.create", true},
    {"POST", "/admin/v1/prompts/{id}/versions", "prompts.version", true},
    {"POST", "/admin/v1/prompts/{id}/current", "prompts.current", true},
};

/* Query parameters the read operations take (anything else is ignored). */
static const char *const fe_admin_query_names[] = {"since", "until", "key_id", "account", "model",    "status",
                                                   "style", "q",     "limit",  "bucket",  "resource", "version"};

typedef struct {
    fe_server_t *srv;
    sb_http_req_t *http; /* NULL once the client left */
    const fe_admin_route_t *route;
    json_t *args; /* the operation's arguments, owned */
    long long admin_id;
    char secret[SB_KEY_LEN + 1]; /* keys.create: the new key, shown once */
    bool pending;                /* a query or the body read is out */
} fe_admin_call_t;

static void fe_admin_call_free(fe_admin_call_t *c)
{
    json_decref(c->args);
    explicit_bzero(c->secret, sizeof c->secret);
    free(c);
}

static void fe_admin_reply_text(fe_admin_call_t *c, int status, const char *body, size_t len)
{
    if (!c->http)
        return;
    sb_http_req_add_header(c->http, "Content-Type", "application/json");
    sb_http_req_add_header(c->http, "Cache-Control", "no-store");
    sb_http_reply(c->http, status, body, len);
    c->http = NULL;
}

/* An error in the API's body: {"error":{"message","type","code"}}. */
static void fe_admin_fail(fe_admin_call_t *c, int status, const char *type, const char *code, const char *message)
{
    json_t *e = json_pack("{s:{s:s, s:s, s:s}}", "error", "message", message, "type", type, "code", code);
    char *text = json_dumps(e, JSON_COMPACT);
    json_decref(e);
    fe_admin_reply_text(c, status, text, strlen(text));
    free(text);
}

static void fe_admin_on_gone(void *arg)
{
    fe_admin_call_t *c = arg;
    c->http = NULL;
    if (!c->pending)
        fe_admin_call_free(c);
}

/* The answer of a query arrived: false when the client left meanwhile (the
 * call is then freed). */
static bool fe_admin_back(fe_admin_call_t *c)
{
    c->pending = false;
    if (c->http)
        return true;
    fe_admin_call_free(c);
    return false;
}

/* Splits path into at most max segments in place; the count, or -1. */
static int fe_admin_split(char *path, char **seg, int max)
{
    int n = 0;
    for (char *p = strtok(path, "/"); p; p = strtok(NULL, "/")) {
        if (n == max)
            return -1;
        seg[n++] = p;
    }
    return n;
}

/* "%2F" (kept encoded by sb_http so that it never splits a path) back to
 * '/', in place. */
static void fe_admin_unslash(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (r[0] == '%' && r[1] == '2' && (r[2] == 'F' || r[2] == 'f')) {
            *w++ = '/';
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
}

/* The route matching path (any method: *bad_method says when only the
 * method differs), with its named segments set in args. */
static const fe_admin_route_t *fe_admin_match(const char *method, const char *path, json_t *args, bool *bad_method)
{
    char pbuf[1024];
    if (strlen(path) >= sizeof pbuf)
        return NULL;
    char *pseg[FE_ADMIN_SEGMENTS];
    snprintf(pbuf, sizeof pbuf, "%s", path);
    int np = fe_admin_split(pbuf, pseg, FE_ADMIN_SEGMENTS);
    *bad_method = false;
    for (size_t i = 0; np > 0 && i < sizeof fe_admin_routes / sizeof fe_admin_routes[0]; i++) {
        const fe_admin_route_t *rt = &fe_admin_routes[i];
        char rbuf[128], *rseg[FE_ADMIN_SEGMENTS];
        snprintf(rbuf, sizeof rbuf, "%s", rt->pattern);
        if (fe_admin_split(rbuf, rseg, FE_ADMIN_SEGMENTS) != np)
            continue;
        int k = 0;
        while (k < np && (rseg[k][0] == '{' || !strcmp(rseg[k], pseg[k])))
            k++;
        if (k < np)
            continue;
        if (strcmp(rt->method, method) != 0) {
            *bad_method = true;
            continue;
        }
        for (k = 0; k < np; k++) {
            if (rseg[k][0] != '{')
                continue;
            rseg[k][strlen(rseg[k]) - 1] = '\0';
            fe_admin_unslash(pseg[k]);
            json_object_set_new(args, rseg[k] + 1, json_string(pseg[k]));
        }
        return rt;
    }
    return NULL;
}

static void fe_admin_on_api(const PGresult *res, const char *err, void *arg)
{
    fe_admin_call_t *c = arg;
    if (!fe_admin_back(c))
        return;
    if (err || PQntuples(res) != 1) {
        sb_error("admin API %s: %.*s", c->route->op, err ? (int)strcspn(err, "\n") : 9, err ? err : "no answer");
        fe_admin_fail(c, 500, "server_error", "database_error", "The operation failed; see the frontend's log.");
        fe_admin_call_free(c);
        return;
    }
    int status = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
    const char *body = PQgetvalue(res, 0, 1);
    if (c->secret[0] && status == 201) {
        /* The one time the key is shown. */
        json_t *j = json_loads(body, 0, NULL);
        json_object_set_new(j, "key", json_string(c->secret));
        char *text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        fe_admin_reply_text(c, status, text, strlen(text));
        explicit_bzero(text, strlen(text));
        free(text);
    } else {
        fe_admin_reply_text(c, status, body, strlen(body));
    }
    fe_admin_call_free(c);
}

/* The broker's live state (queues, credits, circuits), or 503. */
static void fe_admin_on_live(const json_t *stats, void *arg)
{
    fe_admin_call_t *c = arg;
    if (!fe_admin_back(c))
        return;
    if (!stats) {
        fe_admin_fail(c, 503, "server_error", "broker_unavailable", "The broker did not answer; retry later.");
    } else {
        json_t *j = json_pack("{s:O}", "broker", stats);
        char *text = json_dumps(j, JSON_COMPACT);
        json_decref(j);
        fe_admin_reply_text(c, 200, text, strlen(text));
        free(text);
    }
    fe_admin_call_free(c);
}

static void fe_admin_run(fe_admin_call_t *c)
{
    if (!strcmp(c->route->op, "live")) {
        c->pending = true;
        fe_broker_stats(c->srv->broker, 2000, fe_admin_on_live, c);
        return;
    }
    if (!strcmp(c->route->op, "prompts.create")) { /* the id is ours to make, as sbctl's is */
        char id[SB_ID_MAX];
        sb_id_new(id, sizeof id, "pmpt_", 16);
        json_object_set_new(c->args, "new_id", json_string(id));
    }
    if (!strcmp(c->route->op, "keys.create")) {
        char hash[SB_KEY_HASH_HEX], display[64];
        sb_key_generate(c->secret);
        sb_key_hash(c->secret, strlen(c->secret), hash);
        sb_key_display(c->secret, display, sizeof display);
        json_object_set_new(c->args, "hash", json_string(hash));
        json_object_set_new(c->args, "display", json_string(display));
    }
    char actor[48];
    snprintf(actor, sizeof actor, "admin-key:%lld", c->admin_id);
    char *args = json_dumps(c->args, JSON_COMPACT);
    const char *params[] = {actor, c->route->op, args};
    c->pending = true;
    sb_db_query(c->srv->db, FE_SQL_ADMIN_API, 3, params, fe_admin_on_api, c);
    free(args);
}

static void fe_admin_on_body(sb_http_req_t *req, const sb_http_err_t *herr, void *arg)
{
    fe_admin_call_t *c = arg;
    (void)req;
    if (!fe_admin_back(c))
        return;
    if (herr) {
        sb_http_req_close_after(c->http);
        fe_admin_fail(c, herr->status, "invalid_request_error", herr->code, herr->message);
        fe_admin_call_free(c);
        return;
    }
    fe_error_t e;
    json_t *body = NULL;
    if (evbuffer_get_length(sb_http_req_body(c->http)) > 0)
        body = fe_body_json(sb_http_req_body(c->http), FE_ADMIN_BODY_MAX, 16, &e);
    else
        fe_error_set(&e, 400, "invalid_request_error", "missing_body", NULL, "A JSON object body is required.");
    if (!body) {
        fe_admin_fail(c, e.status, "invalid_request_error", e.code[0] ? e.code : "invalid_json", e.message);
        fe_admin_call_free(c);
        return;
    }
    /* The path's names win over the body's. */
    json_object_update(body, c->args);
    json_decref(c->args);
    c->args = body;
    fe_admin_run(c);
}

static void fe_admin_on_auth(const PGresult *res, const char *err, void *arg)
{
    fe_admin_call_t *c = arg;
    if (!fe_admin_back(c))
        return;
    if (err) {
        fe_admin_fail(c, 503, "server_error", "database_unavailable", "The database is unreachable; retry later.");
        fe_admin_call_free(c);
        return;
    }
    if (PQntuples(res) != 1) {
        fe_admin_fail(c, 401, "authentication_error", "invalid_admin_key", "Unknown or disabled admin key.");
        fe_admin_call_free(c);
        return;
    }
    c->admin_id = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
    if (!c->route->op) {
        char body[64];
        int n = snprintf(body, sizeof body, "{\"admin_key_id\":%lld}", c->admin_id);
        fe_admin_reply_text(c, 200, body, (size_t)n);
        fe_admin_call_free(c);
        return;
    }
    if (c->route->body) {
        c->pending = true;
        sb_http_req_read_body(c->http, FE_ADMIN_BODY_MAX, fe_admin_on_body, c);
        return;
    }
    fe_admin_run(c);
}

bool fe_admin_api_handle(sb_http_req_t *req, fe_server_t *srv)
{
    const char *path = sb_http_req_path(req);
    if (strncmp(path, FE_ADMIN_PREFIX, strlen(FE_ADMIN_PREFIX)) != 0)
        return false;
    fe_admin_call_t *c = sb_xcalloc(1, sizeof *c);
    c->srv = srv;
    c->http = req;
    c->args = json_object();
    sb_http_req_on_gone(req, fe_admin_on_gone, c);
    bool bad_method = false;
    c->route = fe_admin_match(sb_http_req_method(req), path, c->args, &bad_method);
    if (!c->route) {
        sb_http_req_close_after(req); /* a body we do not read */
        fe_admin_fail(c, bad_method ? 405 : 404, "invalid_request_error",
                      bad_method ? "method_not_allowed" : "not_found",
                      bad_method ? "This endpoint does not take that method." : "No such admin endpoint.");
        fe_admin_call_free(c);
        return true;
    }
    const char *query = sb_http_req_query(req);
    for (size_t i = 0; query && !c->route->body && i < sizeof fe_admin_query_names / sizeof fe_admin_query_names[0];
         i++) {
        char v[256];
        if (sb_http_query_get(query, fe_admin_query_names[i], v, sizeof v) == 0 && v[0])
            json_object_set_new(c->args, fe_admin_query_names[i], json_string(v));
    }
    const char *auth = sb_http_req_header(req, "authorization");
    const char *key = auth && !strncasecmp(auth, "Bearer ", 7) ? auth + 7 : NULL;
    if (key && sb_key_well_formed(key, strlen(key))) {
        sb_http_req_close_after(req);
        fe_admin_fail(c, 403, "permission_error", "generation_key",
                      "API keys cannot use the admin API; use an admin key (sbctl admin-key create).");
        fe_admin_call_free(c);
        return true;
    }
    if (!key || !sb_admin_key_well_formed(key, strlen(key))) {
        sb_http_req_close_after(req);
        fe_admin_fail(c, 401, "authentication_error", "invalid_admin_key",
                      "An admin key is required: Authorization: Bearer sk-sbadmin-...");
        fe_admin_call_free(c);
        return true;
    }
    char hash[SB_KEY_HASH_HEX];
    sb_key_hash(key, strlen(key), hash);
    const char *params[] = {hash};
    c->pending = true;
    sb_db_query(srv->db, FE_SQL_ADMIN_AUTH, 1, params, fe_admin_on_auth, c);
    return true;
}

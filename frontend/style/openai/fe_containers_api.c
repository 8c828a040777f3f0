/* fe_containers_api: the Containers API's containers (see fe_containers_api.h). */
#include "fe_containers_api.h"

#include <stdlib.h>
#include <string.h>

#include "fe_body.h"
#include "fe_container_path.h"
#include "fe_list.h"
#include "fe_params.h"
#include "fe_request_db.h"
#include "fe_sql_containers.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_utf8.h"

static const char *const fe_containers_memory_limits[] = {"1g", "4g", "16g", "64g", NULL};

void fe_containers_not_found(fe_request_t *r, const char *id)
{
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "Container with id '%.128s' not found.", id);
}

void fe_containers_expired(fe_request_t *r)
{
    fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, NULL, NULL, "Container is expired.");
}

/* Every query of these endpoints; a database error is "Containers are ... unavailable". */
static void fe_containers_query(fe_request_t *r, const char *stmt, int n, const char *const *params,
                                fe_request_db_cb cb)
{
    fe_request_set_state(r, FE_REQ_QUERY);
    fe_request_db_query(r, stmt, n, params, "Containers are temporarily unavailable, retry later", cb);
}

/* ---- the create request --------------------------------------------------------- */

static int fe_containers_parse_expiry(const json_t *body, fe_container_spec_t *spec, fe_error_t *err)
{
    spec->minutes = FE_CONTAINER_DEFAULT_MINUTES;
    const json_t *ea = fe_params_typed(body, "expires_after", FE_P_OBJECT | FE_P_NULL, err);
    if (!ea)
        return json_object_get(body, "expires_after") ? -1 : 0;
    if (json_is_null(ea))
        return 0;
    static const char *const keys[] = {"anchor", "minutes", NULL};
    if (fe_params_only_nested(ea, "expires_after", keys, err) < 0)
        return -1;
    const json_t *anchor = json_object_get(ea, "anchor"), *minutes = json_object_get(ea, "minutes");
    if (!anchor || !minutes) {
        const char *which = !anchor ? "expires_after.anchor" : "expires_after.minutes";
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", which,
                     "Missing required parameter: '%s'.", which);
        return -1;
    }
    if (!json_is_string(anchor) || strcmp(json_string_value(anchor), "last_active_at") != 0) {
        fe_params_invalid(err, "expires_after.anchor",
                          "Invalid value for 'expires_after.anchor': expected 'last_active_at'.");
        return -1;
    }
    if (!json_is_integer(minutes)) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_type", "expires_after.minutes",
                     "Invalid type for 'expires_after.minutes': expected an integer, but got %s instead.",
                     fe_params_got(minutes));
        return -1;
    }
    json_int_t m = json_integer_value(minutes);
    if (m < 1 || m > FE_CONTAINER_MAX_MINUTES) {
        bool low = m < 1;
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, low ? "integer_below_min_value" : "integer_above_max_value",
                     "expires_after.minutes",
                     "Invalid 'expires_after.minutes': integer %s value. Expected a value %s %d, but got %lld "
                     "instead.",
                     low ? "below minimum" : "above maximum", low ? ">=" : "<=", low ? 1 : FE_CONTAINER_MAX_MINUTES,
                     (long long)m);
        return -1;
    }
    spec->minutes = (int)m;
    return 0;
}

static int fe_containers_parse_file_ids(const json_t *body, fe_container_spec_t *spec, fe_error_t *err)
{
    const json_t *ids = fe_params_typed(body, "file_ids", FE_P_ARRAY, err);
    if (!ids)
        return json_object_get(body, "file_ids") ? -1 : 0;
    if (json_array_size(ids) > FE_CONTAINER_MAX_FILES) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "array_above_max_length", "file_ids",
                     "Invalid 'file_ids': array too long. Expected an array with maximum length %d, but got an "
                     "array with length %zu instead.",
                     FE_CONTAINER_MAX_FILES, json_array_size(ids));
        return -1;
    }
    size_t i;
    const json_t *id;
    json_array_foreach (ids, i, id) {
        if (!json_is_string(id) || json_string_length(id) == 0 || json_string_length(id) > 128) {
            char param[32];
            snprintf(param, sizeof param, "file_ids[%zu]", i);
            fe_params_invalid(err, param, "Invalid value for '%s': expected a file id (a non-empty string).", param);
            return -1;
        }
    }
    spec->file_ids = json_array_size(ids) ? ids : NULL;
    return 0;
}

/* network_policy: only "disabled" can be kept, since the sandbox runs in a
 * network namespace of its own; an allowlist is refused rather than
 * accepted and silently not honoured. */
static int fe_containers_parse_network(const json_t *body, fe_container_spec_t *spec, fe_error_t *err)
{
    const json_t *np = fe_params_typed(body, "network_policy", FE_P_OBJECT | FE_P_NULL, err);
    if (!np)
        return json_object_get(body, "network_policy") ? -1 : 0;
    if (json_is_null(np))
        return 0;
    const json_t *type = json_object_get(np, "type");
    if (!type) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", "network_policy.type",
                     "Missing required parameter: 'network_policy.type'.");
        return -1;
    }
    const char *t = json_string_value(type);
    if (t && !strcmp(t, "allowlist")) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_value", "network_policy.type",
                     "Unsupported value: 'network_policy.type' does not support 'allowlist' with this gateway: "
                     "code interpreter containers have no network access. Supported values are: 'disabled'.");
        return -1;
    }
    if (!t || strcmp(t, "disabled") != 0) {
        fe_params_invalid(err, "network_policy.type",
                          "Invalid value for 'network_policy.type': expected 'disabled' or 'allowlist'.");
        return -1;
    }
    static const char *const keys[] = {"type", NULL};
    if (fe_params_only_nested(np, "network_policy", keys, err) < 0)
        return -1;
    spec->network_policy = "{\"type\":\"disabled\"}";
    return 0;
}

int fe_containers_parse_create(const json_t *body, fe_container_spec_t *spec, fe_error_t *err)
{
    memset(spec, 0, sizeof *spec);
    spec->memory_limit = "1g";
    static const char *const allowed[] = {"name",           "expires_after", "file_ids", "memory_limit",
                                          "network_policy", "skills",        NULL};
    if (!json_is_object(body)) {
        fe_params_invalid(err, NULL, "The request body must be a JSON object.");
        return -1;
    }
    if (fe_params_only(body, allowed, "Unknown parameter: '%s'.", err) < 0)
        return -1;
    const json_t *name = fe_params_require(body, "name", err);
    if (!name)
        return -1;
    if (!json_is_string(name)) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_type", "name",
                     "Invalid type for 'name': expected a string, but got %s instead.", fe_params_got(name));
        return -1;
    }
    if (json_string_length(name) == 0 || json_string_length(name) > FE_CONTAINER_NAME_MAX) {
        bool empty = json_string_length(name) == 0;
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, empty ? "empty_string" : "string_above_max_length", "name",
                     empty ? "Invalid 'name': empty string. Expected a string with minimum length 1, but got an empty "
                             "string instead."
                           : "Invalid 'name': string too long. Expected a string with maximum length %d, but got a "
                             "string with length %zu instead.",
                     FE_CONTAINER_NAME_MAX, json_string_length(name));
        return -1;
    }
    spec->name = json_string_value(name);
    if (fe_containers_parse_expiry(body, spec, err) < 0 || fe_containers_parse_file_ids(body, spec, err) < 0 ||
        fe_containers_parse_network(body, spec, err) < 0)
        return -1;
    const json_t *ml = fe_params_typed(body, "memory_limit", FE_P_STRING | FE_P_NULL, err);
    if (!ml && json_object_get(body, "memory_limit"))
        return -1;
    if (json_is_string(ml)) {
        bool known = false;
        for (size_t i = 0; fe_containers_memory_limits[i] && !known; i++)
            known = !strcmp(json_string_value(ml), fe_containers_memory_limits[i]);
        if (!known) {
            fe_params_invalid(err, "memory_limit",
                              "Invalid value: '%.64s'. Supported values are: '1g', '4g', '16g', and '64g'.",
                              json_string_value(ml));
            return -1;
        }
        spec->memory_limit = json_string_value(ml);
    }
    /* Skills are files of instructions the model loads on demand; nothing
     * here offers them to the model, so any is refused rather than dropped. */
    const json_t *skills = fe_params_typed(body, "skills", FE_P_ARRAY | FE_P_NULL, err);
    if (!skills && json_object_get(body, "skills"))
        return -1;
    if (json_array_size(skills) > 0) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_value", "skills",
                     "Unsupported value: 'skills' is not supported with this gateway; send an empty list or omit it.");
        return -1;
    }
    return 0;
}

json_t *fe_containers_copy_plan(const json_t *file_ids, const json_t *found, fe_error_t *err)
{
    json_t *by_path = json_object(); /* path -> entry: a later file at a path replaces an earlier one */
    json_t *order = json_array();    /* paths in first-seen order */
    json_int_t total = 0;
    size_t i;
    const json_t *idv;
    json_array_foreach (file_ids, i, idv) {
        const char *fid = json_string_value(idv);
        const json_t *meta = json_object_get(found, fid ? fid : "");
        if (!fid || !meta) {
            fe_error_set(err, 404, SB_ERR_NOT_FOUND, NULL, "file_ids", "No such File object: %.128s", fid ? fid : "");
            goto fail;
        }
        char path[FE_CONTAINER_PATH_MAX];
        if (fe_container_path(json_string_value(json_object_get(meta, "filename")), path, sizeof path) != 0) {
            fe_params_invalid(err, "file_ids", "File %.128s has a filename that is not usable as a container path.",
                              fid);
            goto fail;
        }
        json_t *old = json_object_get(by_path, path);
        if (old)
            total -= json_integer_value(json_object_get(old, "bytes"));
        else
            json_array_append_new(order, json_string(path));
        char cid[SB_ID_MAX];
        sb_id_new(cid, sizeof cid, "cfile_", 16);
        json_int_t bytes = json_integer_value(json_object_get(meta, "bytes"));
        total += bytes;
        json_object_set_new(by_path, path,
                            json_pack("{s:s, s:s, s:s, s:I}", "file_id", fid, "id", cid, "path", path, "bytes", bytes));
    }
    if (json_array_size(order) > FE_CONTAINER_MAX_FILES || total > FE_CONTAINER_MAX_BYTES) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "container_too_large", "file_ids",
                     "The files total %lld bytes in %zu files; a container holds at most %lld bytes in %d files.",
                     (long long)total, json_array_size(order), FE_CONTAINER_MAX_BYTES, FE_CONTAINER_MAX_FILES);
        goto fail;
    }
    json_t *plan = json_array();
    json_array_foreach (order, i, idv) {
        json_t *e = json_object_get(by_path, json_string_value(idv));
        json_object_del(e, "bytes");
        json_array_append(plan, e);
    }
    json_decref(by_path);
    json_decref(order);
    return plan;
fail:
    json_decref(by_path);
    json_decref(order);
    return NULL;
}

/* ---- POST /v1/containers -------------------------------------------------------- */

static void fe_containers_on_created(fe_request_t *r, const PGresult *res)
{
    json_t *c = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!c) {
        fe_request_failf(r, 500, SB_ERR_SERVER, NULL, NULL, "The container could not be stored.");
        return;
    }
    fe_request_reply_json(r, 200, c);
}

/* Inserts the container r->body asks for, with plan's files (stolen). */
static void fe_containers_insert(fe_request_t *r, json_t *plan)
{
    fe_container_spec_t spec;
    fe_error_t err;
    if (fe_containers_parse_create(r->body, &spec, &err) < 0) { /* checked before: cannot fail now */
        json_decref(plan);
        fe_request_fail(r, &err);
        return;
    }
    char id[SB_ID_MAX], account[24], minutes[16];
    sb_id_new(id, sizeof id, "cntr_", 24);
    fe_request_account(r, account, sizeof account);
    snprintf(minutes, sizeof minutes, "%d", spec.minutes);
    char *files = json_dumps(plan, JSON_COMPACT);
    json_decref(plan);
    const char *params[7] = {id, account, spec.name, spec.memory_limit, minutes, spec.network_policy, files};
    fe_containers_query(r, FE_SQL_CONTAINER_CREATE, 7, params, fe_containers_on_created);
    free(files);
}

/* The files of file_ids the account holds: id, filename, bytes. */
static void fe_containers_on_meta(fe_request_t *r, const PGresult *res)
{
    json_t *found = json_object();
    for (int i = 0; i < PQntuples(res); i++)
        json_object_set_new(found, PQgetvalue(res, i, 0),
                            json_pack("{s:s, s:I}", "filename", PQgetvalue(res, i, 1), "bytes",
                                      (json_int_t)strtoll(PQgetvalue(res, i, 2), NULL, 10)));
    fe_error_t err;
    json_t *plan = fe_containers_copy_plan(json_object_get(r->body, "file_ids"), found, &err);
    json_decref(found);
    if (!plan) {
        fe_request_fail(r, &err);
        return;
    }
    fe_containers_insert(r, plan);
}

void fe_containers_create(fe_request_t *r)
{
    fe_error_t err;
    memset(&err, 0, sizeof err);
    r->body = fe_body_json(sb_http_req_body(r->http), r->srv->cfg.max_body_bytes, r->srv->cfg.max_json_depth, &err);
    fe_container_spec_t spec;
    if (!r->body || fe_containers_parse_create(r->body, &spec, &err) < 0) {
        fe_request_fail(r, &err);
        return;
    }
    if (!spec.file_ids) {
        fe_containers_insert(r, json_array());
        return;
    }
    char account[24];
    fe_request_account(r, account, sizeof account);
    char *ids = json_dumps(spec.file_ids, JSON_COMPACT);
    const char *params[2] = {account, ids};
    fe_containers_query(r, FE_SQL_CONTAINER_FILES_META, 2, params, fe_containers_on_meta);
    free(ids);
}

/* ---- GET/DELETE /v1/containers/{id} ------------------------------------------- */

static void fe_containers_on_get(fe_request_t *r, const PGresult *res)
{
    json_t *c = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!c) {
        fe_containers_not_found(r, r->path_arg);
        return;
    }
    fe_request_reply_json(r, 200, c);
}

static void fe_containers_by_id(fe_request_t *r, const char *stmt, fe_request_db_cb cb)
{
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[2] = {r->path_arg, account};
    fe_containers_query(r, stmt, 2, params, cb);
}

void fe_containers_get(fe_request_t *r)
{
    fe_containers_by_id(r, FE_SQL_CONTAINER_RETRIEVE, fe_containers_on_get);
}

static void fe_containers_on_delete(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_containers_not_found(r, r->path_arg);
        return;
    }
    fe_request_reply_json(r, 200,
                          json_pack("{s:s, s:s, s:b}", "id", r->path_arg, "object", "container.deleted", "deleted", 1));
}

void fe_containers_delete(fe_request_t *r)
{
    fe_containers_by_id(r, FE_SQL_CONTAINER_DELETE, fe_containers_on_delete);
}

/* ---- GET /v1/containers ----------------------------------------------------------- */

static void fe_containers_on_list(fe_request_t *r, const PGresult *res)
{
    json_t *data = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    fe_list_reply(r, data, r->list_limit);
}

void fe_containers_list(fe_request_t *r)
{
    fe_list_query_t q;
    fe_error_t e;
    if (fe_list_parse(r, 100, 20, "desc", &q, &e) < 0) {
        fe_request_fail(r, &e);
        return;
    }
    r->list_limit = q.limit;
    sb_utf8_fix(q.after); /* a cursor that is not text is no container's id */
    /* The name filter fits the buffer whatever its length (the query string
     * is within the header limit), so a long one is told from an absent one:
     * one no container can have, or not text, matches nothing. */
    size_t cap = r->srv->cfg.max_header_bytes + 1;
    char *name = sb_xmalloc(cap);
    bool has_name = fe_request_query_get(r, "name", name, cap) == 0;
    if (has_name && (strlen(name) > FE_CONTAINER_NAME_MAX || sb_utf8_fix(name) > 0)) {
        free(name);
        fe_list_reply(r, json_array(), q.limit);
        return;
    }
    char account[24], limit[16];
    fe_request_account(r, account, sizeof account);
    snprintf(limit, sizeof limit, "%d", q.limit + 1);
    const char *params[5] = {account, limit, q.order, q.after[0] ? q.after : NULL, has_name ? name : NULL};
    fe_containers_query(r, FE_SQL_CONTAINER_LIST, 5, params, fe_containers_on_list);
    free(name);
}

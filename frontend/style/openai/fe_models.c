/*
 * fe_models: GET /v1/models and GET /v1/models/{id}, the models the key's
 * token group may call. OpenAI's and Anthropic's APIs share these paths; a
 * request carrying `anthropic-version` is Anthropic's (fe_models_style: its
 * x-api-key auth, its list shape {data:[{type,id,display_name,created_at}],
 * has_more, first_id, last_id}, its errors), any other is OpenAI's
 * ({object:"list", data:[{id, object:"model", created, owned_by}]}), so both
 * SDKs' and real clients' model discovery work. Google's list is
 * fe_gemini_models.c.
 */
#include "fe_models.h"

#include <string.h>
#include <time.h>

#include "fe_auth.h"
#include "fe_request_db.h"
#include "fe_sql.h"
#include "sb_event.h"

const fe_style_t *fe_models_style(sb_http_req_t *http, const fe_style_t *dflt)
{
    const char *v = sb_http_req_header(http, "anthropic-version");
    return v ? &fe_style_messages : dflt;
}

static bool fe_models_anthropic(const fe_request_t *r)
{
    return r->style == &fe_style_messages;
}

/* One model as the caller's API shows it. */
static json_t *fe_models_entry(const fe_request_t *r, const char *id, const json_t *created)
{
    if (!fe_models_anthropic(r))
        return json_pack("{s:s, s:s, s:O, s:s}", "id", id, "object", "model", "created", created, "owned_by",
                         "switchboard");
    char at[32] = "1970-01-01T00:00:00Z";
    time_t t = (time_t)json_integer_value(created);
    struct tm tm;
    if (gmtime_r(&t, &tm))
        strftime(at, sizeof at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_pack("{s:s, s:s, s:s, s:s}", "type", "model", "id", id, "display_name", id, "created_at", at);
}

static void fe_models_on_list(fe_request_t *r, const PGresult *res)
{
    json_t *all = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    json_t *data = json_array();
    size_t i;
    json_t *m;
    json_array_foreach (all, i, m) {
        const char *id = json_string_value(json_object_get(m, "id"));
        if (!id || !fe_auth_key_allows(r->key, id))
            continue;
        if (r->path_arg && strcmp(r->path_arg, id) != 0)
            continue;
        json_array_append_new(data, fe_models_entry(r, id, json_object_get(m, "created")));
    }
    json_decref(all);
    if (r->path_arg) { /* GET /v1/models/{id} */
        json_t *one = json_incref(json_array_get(data, 0));
        json_decref(data);
        if (!one) {
            fe_request_failf(r, 404, SB_ERR_NOT_FOUND, "model_not_found", "model",
                             "The model '%.100s' does not exist or you do not have access to it.", r->path_arg);
            return;
        }
        fe_request_reply_json(r, 200, one);
        return;
    }
    size_t n = json_array_size(data);
    if (fe_models_anthropic(r)) {
        json_t *first = json_object_get(json_array_get(data, 0), "id");
        json_t *last = json_object_get(json_array_get(data, n ? n - 1 : 0), "id");
        fe_request_reply_json(
            r, 200,
            json_pack("{s:o, s:b, s:O?, s:O?}", "data", data, "has_more", 0, "first_id", first, "last_id", last));
        return;
    }
    fe_request_reply_json(r, 200, json_pack("{s:s, s:o}", "object", "list", "data", data));
}

void fe_models_list(fe_request_t *r)
{
    fe_request_set_state(r, FE_REQ_QUERY);
    fe_request_db_query(r, FE_SQL_MODEL_LIST, 0, NULL, "The model list is temporarily unavailable, retry later",
                        fe_models_on_list);
}

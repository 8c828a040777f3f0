/* fe_fallback: the next model of the chain (see fe_fallback.h). */
#include "fe_fallback.h"

#include <stdlib.h>
#include <string.h>

#include "fe_features.h"
#include "sb_alloc.h"
#include "sb_log.h"

static bool fe_fallback_retryable(int status)
{
    return status == 429 || status == 500 || status == 502 || status == 503 || status == 529;
}

static void fe_fallback_on_model(json_t *rec, const char *err, void *arg);

/* Looks up the next model of the chain; false when the chain is used up. */
static bool fe_fallback_next(fe_request_t *r)
{
    if (json_array_size(r->fallbacks) == 0)
        return false;
    const char *id = json_string_value(json_array_get(r->fallbacks, 0));
    if (!id) {
        json_array_remove(r->fallbacks, 0);
        return fe_fallback_next(r);
    }
    fe_request_set_state(r, FE_REQ_MODEL);
    fe_request_hold(r);
    fe_auth_lookup_model(r->srv->auth, id, fe_fallback_on_model, r); /* may call back at once */
    return true;
}

/* The failed job's error ends the request after all. */
static void fe_fallback_give_up(fe_request_t *r)
{
    fe_request_set_state(r, FE_REQ_RUNNING);
    fe_generate_job_over(r);
}

static void fe_fallback_on_model(json_t *rec, const char *err, void *arg)
{
    fe_request_t *r = arg;
    if (!fe_request_release(r))
        return;
    char *id = sb_xstrdup(json_string_value(json_array_get(r->fallbacks, 0)));
    json_array_remove(r->fallbacks, 0);
    fe_error_t why;
    memset(&why, 0, sizeof why);
    const char *skip = NULL;
    if (err)
        skip = "model registry unavailable";
    else if (json_is_true(json_object_get(rec, "missing")) || !json_is_true(json_object_get(rec, "enabled")))
        skip = "not found or disabled";
    else if (!fe_auth_key_allows(r->key, id))
        skip = "not allowed to the key's token group";
    if (!skip) {
        /* The next model must take this request as the first one did. */
        json_t *first = r->model;
        char *first_id = r->parsed.model_id;
        r->model = rec;
        r->parsed.model_id = id;
        bool fits = fe_features_check(r, r->job_input, &why) == 0 && fe_generate_check_size(r, &why) == 0;
        r->model = first;
        r->parsed.model_id = first_id;
        if (!fits)
            skip = why.message;
    }
    if (skip) {
        sb_info("request %s: fallback model %s skipped: %s", r->request_id, id, skip);
        free(id);
        if (!fe_fallback_next(r))
            fe_fallback_give_up(r);
        return;
    }
    sb_info("request %s: model %s failed (%d %s); falling back to %s", r->request_id, r->parsed.model_id,
            r->result.error.status, r->result.error.code[0] ? r->result.error.code : r->result.error.kind, id);
    if (!r->requested_model)
        r->requested_model = r->parsed.model_id;
    else
        free(r->parsed.model_id);
    r->parsed.model_id = id;
    json_decref(r->model);
    r->model = json_incref(rec);
    fe_collect_free(&r->result);
    fe_collect_init(&r->result);
    fe_generate_submit(r);
}

bool fe_fallback_try(fe_request_t *r)
{
    if (!r->result.failed || r->stream_started || !fe_fallback_retryable(r->result.error.status))
        return false;
    return fe_fallback_next(r);
}

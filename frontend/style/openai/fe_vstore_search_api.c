/* fe_vstore_search_api: a vector store's search (see fe_vstore_search_api.h). */
#include "fe_vstore_search_api.h"

#include <string.h>

#include "fe_broker.h"
#include "fe_vstore_jobs.h"
#include "fe_vstore_params.h"
#include "fe_vstores_api.h"
#include "sb_event.h"
#include "sb_time.h"

/* Past the job's own deadline: the broker answers first in every normal
 * case; this only catches a lost broker (as fe_generate's). */
#define FE_VSTORE_SEARCH_SLACK_MS 2000

/* The results page: the worker's vs_results (search_query, data); the
 * queries asked when it reports none. */
static json_t *fe_vstore_search_page(fe_request_t *r)
{
    const json_t *s = fe_vstores_scratch(r);
    const json_t *results = json_object_get(s, "results");
    json_t *queries = json_object_get(results, "search_query");
    json_t *data = json_object_get(results, "data");
    if (json_is_array(queries)) {
        json_incref(queries);
    } else {
        const json_t *q = json_object_get(json_object_get(s, "request"), "query");
        queries = json_is_array(q) ? json_deep_copy(q) : json_pack("[O]", q);
    }
    return json_pack("{s:s, s:o, s:o, s:b, s:n}", "object", "vector_store.search_results.page", "search_query",
                     queries ? queries : json_array(), "data", json_is_array(data) ? json_incref(data) : json_array(),
                     "has_more", 0, "next_page");
}

static void fe_vstore_search_on_event(const json_t *ev, bool final, void *arg)
{
    fe_request_t *r = arg;
    if (r->state != FE_REQ_RUNNING)
        return;
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (type && !strcmp(type, "vs_results"))
        json_object_set_new(fe_vstores_scratch(r), "results", json_deep_copy(ev));
    if (!final)
        return;
    if (r->deadline)
        event_del(r->deadline);
    if (sb_event_type_of(ev) == SB_EV_ERROR) {
        fe_error_t e;
        fe_error_from_event(&e, ev);
        fe_request_fail(r, &e);
        return;
    }
    fe_request_reply_json(r, 200, fe_vstore_search_page(r));
}

static void fe_vstore_search_on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fe_request_t *r = arg;
    if (r->state != FE_REQ_RUNNING)
        return;
    fe_broker_cancel(r->srv->broker, r->request_id);
    fe_request_failf(r, 504, SB_ERR_TIMEOUT, "timeout", NULL, "timeout: the search exceeded its deadline");
}

/* The store is the caller's and r->model its embedding model: submit. */
static void fe_vstore_search_submit(fe_request_t *r)
{
    json_t *request = json_incref(json_object_get(fe_vstores_scratch(r), "request"));
    json_t *job = fe_vstore_jobs_new(r->request_id, r->model, fe_vstores_account_id(r), request);
    char client[32];
    fe_vstores_client(r, client, sizeof client);
    fe_request_set_state(r, FE_REQ_RUNNING);
    r->submitted = true;
    int rc = job ? fe_broker_submit(r->srv->broker, r->request_id, json_string_value(json_object_get(r->model, "id")),
                                    client[0] ? client : NULL, sb_now_ms() + FE_VSTORE_SEARCH_DEADLINE_MS, job,
                                    fe_vstore_search_on_event, r)
                 : -1;
    json_decref(job);
    if (rc < 0) {
        fe_error_t e;
        fe_error_set(&e, 503, SB_ERR_OVERLOADED, "broker_unavailable", NULL,
                     "The gateway could not queue the search, retry later");
        e.retry_after = 1;
        fe_request_fail(r, &e);
        return;
    }
    r->deadline = evtimer_new(r->srv->base, fe_vstore_search_on_deadline, r);
    int64_t ms = FE_VSTORE_SEARCH_DEADLINE_MS + FE_VSTORE_SEARCH_SLACK_MS;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(r->deadline, &tv);
}

/* The request ended: a search still on the broker (its client left) is
 * cancelled; a no-op once its final event came. */
static void fe_vstore_search_on_end(fe_request_t *r, void *arg)
{
    (void)arg;
    if (r->submitted)
        fe_broker_cancel(r->srv->broker, r->request_id);
}

void fe_vstore_search_start(fe_request_t *r)
{
    static const char *const keys[] = {"query", "filters", "max_num_results", "ranking_options", "rewrite_query", NULL};
    fe_request_cleanup_add(r, fe_vstore_search_on_end, NULL);
    json_t *body = fe_vstores_body(r, keys);
    if (!body)
        return;
    fe_error_t err;
    memset(&err, 0, sizeof err);
    json_t *request = fe_vstore_params_search(body, r->path_arg, &err);
    if (!request) {
        fe_request_fail(r, &err);
        return;
    }
    json_object_set_new(fe_vstores_scratch(r), "request", request);
    fe_vstores_use(r, fe_vstore_search_submit);
}

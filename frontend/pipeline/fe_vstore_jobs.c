/* fe_vstore_jobs: vs_ingest and vs_search jobs on the broker (see fe_vstore_jobs.h). */
#include "fe_vstore_jobs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_sql_vstores.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_job.h"
#include "sb_log.h"
#include "sb_time.h"

json_t *fe_vstore_jobs_new(const char *request_id, const json_t *model, long long account_id, json_t *request)
{
    const char *id = json_string_value(json_object_get(model, "id"));
    json_t *route = sb_job_route_from_model(model); /* as a generation's job carries it */
    if (!id || !route) {
        json_decref(route);
        json_decref(request);
        return NULL;
    }
    return sb_job_new(request_id, id, account_id, route, request);
}

/* One ingestion job's sink: what it needs after its request is gone. */
typedef struct {
    fe_server_t *srv;
    char *vector_store_id;
    char *file_id;
} fe_vstore_ingest_t;

static void fe_vstore_ingest_free(fe_vstore_ingest_t *in)
{
    free(in->vector_store_id);
    free(in->file_id);
    free(in);
}

static void fe_vstore_jobs_on_failed_row(const PGresult *res, const char *err, void *arg)
{
    (void)res;
    (void)arg;
    if (err)
        sb_warn("vector store file not marked failed: %s", err);
}

/* The row of in, still in progress, becomes failed with a server_error. */
static void fe_vstore_jobs_mark_failed(const fe_vstore_ingest_t *in, const char *why)
{
    char message[600];
    snprintf(message, sizeof message, "The file could not be ingested: %.512s", why && *why ? why : "unknown error");
    const char *params[3] = {in->vector_store_id, in->file_id, message};
    sb_db_query(in->srv->db, FE_SQL_VSTORE_INGEST_FAILED, 3, params, fe_vstore_jobs_on_failed_row, NULL);
}

/* The job's events: the worker writes the outcome itself, so only an error
 * event matters here. The frontend's own shutdown fails every job it still
 * tracks with "shutting_down", but the jobs go on on the workers: those
 * rows are left to them. */
static void fe_vstore_jobs_on_ingest_event(const json_t *ev, bool final, void *arg)
{
    fe_vstore_ingest_t *in = arg;
    if (!final)
        return;
    if (sb_event_type_of(ev) == SB_EV_ERROR) {
        const char *code = json_string_value(json_object_get(ev, "code"));
        const char *message = json_string_value(json_object_get(ev, "message"));
        if (!code || strcmp(code, "shutting_down") != 0) {
            sb_info("ingestion of %s into %s failed: %s", in->file_id, in->vector_store_id,
                    message ? message : "(no message)");
            fe_vstore_jobs_mark_failed(in, message);
        }
    }
    fe_vstore_ingest_free(in);
}

void fe_vstore_jobs_ingest(fe_server_t *srv, const json_t *model, long long account_id, const char *client,
                           const char *vector_store_id, const json_t *files)
{
    json_t *seen = json_object(); /* a file named twice was attached once (its first mention) */
    size_t i;
    const json_t *f;
    json_array_foreach (files, i, f) {
        const char *file_id = json_string_value(json_object_get(f, "file_id"));
        if (!file_id || json_object_get(seen, file_id))
            continue;
        json_object_set_new(seen, file_id, json_true());
        fe_vstore_ingest_t *in = sb_xcalloc(1, sizeof *in);
        in->srv = srv;
        in->vector_store_id = sb_xstrdup(vector_store_id);
        in->file_id = sb_xstrdup(file_id);
        char job_id[SB_ID_MAX];
        sb_id_new_ordered(job_id, sizeof job_id, "req_", 16);
        json_t *request = json_pack("{s:s, s:s, s:s, s:O}", "op", "vs_ingest", "vector_store_id", vector_store_id,
                                    "file_id", file_id, "chunking_strategy", json_object_get(f, "chunking_strategy"));
        json_t *job = request ? fe_vstore_jobs_new(job_id, model, account_id, request) : NULL;
        int rc =
            job ? fe_broker_submit(srv->broker, job_id, json_string_value(json_object_get(model, "id")), client,
                                   sb_now_ms() + FE_VSTORE_INGEST_DEADLINE_MS, job, fe_vstore_jobs_on_ingest_event, in)
                : -1;
        json_decref(job);
        if (rc < 0) {
            sb_warn("ingestion of %s into %s not queued (%d)", file_id, vector_store_id, rc);
            fe_vstore_jobs_mark_failed(in, "the gateway could not queue the ingestion job");
            fe_vstore_ingest_free(in);
        }
    }
    json_decref(seen);
}

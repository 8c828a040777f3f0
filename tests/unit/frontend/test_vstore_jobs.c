/*
 * Unit tests for fe_vstore_jobs_new: the envelope of a Vector Stores job (a
 * vs_ingest or vs_search request under the embedding model) carries the
 * model record's route as a generation's job does, and passes the worker's
 * shape check (sb_job_check).
 */
#include <string.h>

#include "fe_vstore_jobs.h"
#include "sb_job.h"
#include "sb_test.h"

static void test_envelope(void)
{
    json_t *model = json_loads("{\"id\":\"emu-embed\",\"enabled\":true,\"provider\":\"openai-chat\","
                               "\"base_url\":\"http://127.0.0.1:1/v1\",\"upstream_model\":\"text-embedding-3-small\","
                               "\"credential_ref\":\"SB_EMU_UPSTREAM_KEY\",\"capabilities\":{\"n\":false},"
                               "\"timeout_ms\":5000,\"max_output_tokens\":null,\"fallbacks\":[\"x\"]}",
                               0, NULL);
    json_t *request = json_pack("{s:s, s:s, s:s}", "op", "vs_ingest", "vector_store_id", "vs_1", "file_id", "file-1");
    json_t *job = fe_vstore_jobs_new("req_1", model, 42, request);
    CHECK(job != NULL);
    CHECK_STR(json_string_value(json_object_get(job, "request_id")), "req_1");
    CHECK_STR(json_string_value(json_object_get(job, "model")), "emu-embed");
    CHECK_INT(json_integer_value(json_object_get(job, "account_id")), 42);
    CHECK_STR(sb_job_route_str(job, "provider"), "openai-chat");
    CHECK_STR(sb_job_route_str(job, "base_url"), "http://127.0.0.1:1/v1");
    CHECK_STR(sb_job_route_str(job, "upstream_model"), "text-embedding-3-small");
    CHECK_STR(sb_job_route_str(job, "credential_ref"), "SB_EMU_UPSTREAM_KEY");
    CHECK_INT(json_integer_value(json_object_get(sb_job_route(job), "timeout_ms")), 5000);
    CHECK(json_is_false(json_object_get(json_object_get(sb_job_route(job), "capabilities"), "n")));
    CHECK(json_object_get(sb_job_route(job), "fallbacks") == NULL); /* the route only, not the record */
    CHECK_STR(json_string_value(json_object_get(sb_job_request(job), "op")), "vs_ingest");
    json_t *err = NULL;
    CHECK_INT(sb_job_check(job, &err), 0);
    CHECK(err == NULL);
    json_decref(job);

    /* No credential: null, as a generation's route says it. */
    json_object_del(model, "credential_ref");
    job = fe_vstore_jobs_new("req_2", model, 1, json_pack("{s:s}", "op", "vs_search"));
    CHECK(json_is_null(json_object_get(sb_job_route(job), "credential_ref")));
    json_decref(job);

    /* A record without an id makes no job (and the request is freed). */
    json_object_del(model, "id");
    CHECK(fe_vstore_jobs_new("req_3", model, 1, json_pack("{s:s}", "op", "vs_search")) == NULL);
    json_decref(model);
}

int main(void)
{
    test_envelope();
    return sb_test_finish("vstore_jobs");
}

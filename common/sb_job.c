/* sb_job: construction of and access to the canonical job object. */
#include "sb_job.h"

#include <string.h>

json_t *sb_job_new(const char *request_id, const char *model, long long account_id, json_t *route, json_t *request)
{
    return json_pack("{s:s, s:s, s:I, s:o, s:o}", "request_id", request_id, "model", model, "account_id",
                     (json_int_t)account_id, "route", route, "request", request);
}

const json_t *sb_job_request(const json_t *job)
{
    const json_t *r = json_object_get(job, "request");
    return json_is_object(r) ? r : NULL;
}

const json_t *sb_job_route(const json_t *job)
{
    const json_t *r = json_object_get(job, "route");
    return json_is_object(r) ? r : NULL;
}

const char *sb_job_route_str(const json_t *job, const char *field)
{
    return json_string_value(json_object_get(sb_job_route(job), field));
}

bool sb_job_is_count(const json_t *job)
{
    const char *op = json_string_value(json_object_get(sb_job_request(job), "op"));
    return op && !strcmp(op, SB_JOB_OP_COUNT_TOKENS);
}

/* sb_job: construction of, access to and the shape check of the canonical job object. */
#include "sb_job.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sb_event.h"
#include "sb_item.h"

json_t *sb_job_route_from_model(const json_t *m)
{
    json_t *cred = json_object_get(m, "credential_ref");
    json_t *caps = json_object_get(m, "capabilities");
    json_t *max_out = json_object_get(m, "max_output_tokens");
    return json_pack("{s:O, s:O, s:O, s:O, s:O, s:o, s:O}", "provider", json_object_get(m, "provider"), "base_url",
                     json_object_get(m, "base_url"), "upstream_model", json_object_get(m, "upstream_model"),
                     "credential_ref", cred ? cred : json_null(), "timeout_ms", json_object_get(m, "timeout_ms"),
                     "capabilities", json_is_object(caps) ? json_incref(caps) : json_object(), "max_output_tokens",
                     max_out ? max_out : json_null());
}

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

/* The check's refusal: the error event an adapter's sb_provider_invalid makes. */
__attribute__((format(printf, 2, 3))) static int sb_job_refuse(json_t **err, const char *fmt, ...)
{
    char msg[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    *err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, msg);
    return -EINVAL;
}

/* One input item (index i). */
static int sb_job_check_item(const json_t *item, size_t i, json_t **err)
{
    if (!json_is_string(json_object_get(item, "type")))
        return sb_job_refuse(err, "input item %zu has no type", i);
    switch (sb_item_type_of(item)) {
    case SB_ITEM_MESSAGE:
        if (sb_role_of(item) == SB_ROLE_UNKNOWN)
            return sb_job_refuse(err, "input item %zu has an unsupported role", i);
        break;
    case SB_ITEM_FUNCTION_CALL:
        if (!json_is_string(json_object_get(item, "call_id")) || !json_is_string(json_object_get(item, "name")))
            return sb_job_refuse(err, "function_call items need call_id and name");
        break;
    case SB_ITEM_FUNCTION_CALL_OUTPUT:
        if (!json_is_string(json_object_get(item, "call_id")))
            return sb_job_refuse(err, "function_call_output items need call_id");
        break;
    case SB_ITEM_REASONING:
    case SB_ITEM_UNKNOWN:
        break; /* the adapter's to judge */
    }
    return 0;
}

int sb_job_check(const json_t *job, json_t **err)
{
    *err = NULL;
    const json_t *request = sb_job_request(job);
    if (!request)
        return sb_job_refuse(err, "job has no request");
    const json_t *input = json_object_get(request, "input");
    if (input && !json_is_null(input) && !json_is_array(input))
        return sb_job_refuse(err, "request.input must be an array of items");
    size_t i;
    const json_t *item;
    json_array_foreach (input, i, item) {
        if (sb_job_check_item(item, i, err) < 0)
            return -EINVAL;
    }
    const json_t *tools = json_object_get(request, "tools");
    if (tools && !json_is_null(tools) && !json_is_array(tools))
        return sb_job_refuse(err, "request.tools must be an array");
    const json_t *tool;
    json_array_foreach (tools, i, tool) {
        const char *type = json_string_value(json_object_get(tool, "type"));
        if (type && !strcmp(type, "function") && !json_is_string(json_object_get(tool, "name")))
            return sb_job_refuse(err, "function tool %zu has no name", i);
    }
    return 0;
}

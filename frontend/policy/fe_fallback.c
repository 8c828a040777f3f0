/* fe_fallback: the next model of the chain (see fe_fallback.h). */
#include "fe_fallback.h"

#include <stdbool.h>
#include <stdlib.h>

#include "fe_auth.h"
#include "sb_alloc.h"

static bool fe_fallback_retryable(int status)
{
    return status == 429 || status == 500 || status == 502 || status == 503 || status == 529;
}

const char *fe_fallback_next(fe_request_t *r)
{
    if (!r->result.failed || r->stream_started || !fe_fallback_retryable(r->result.error.status))
        return NULL;
    while (json_array_size(r->fallbacks) > 0) {
        const char *id = json_string_value(json_array_get(r->fallbacks, 0));
        if (id)
            return id;
        json_array_remove(r->fallbacks, 0);
    }
    return NULL;
}

char *fe_fallback_pop(fe_request_t *r)
{
    char *id = sb_xstrdup(json_string_value(json_array_get(r->fallbacks, 0)));
    json_array_remove(r->fallbacks, 0);
    return id;
}

const char *fe_fallback_unusable(const fe_request_t *r, const char *id, const json_t *rec, const char *err)
{
    if (err)
        return "model registry unavailable";
    if (json_is_true(json_object_get(rec, "missing")) || !json_is_true(json_object_get(rec, "enabled")))
        return "not found or disabled";
    if (!fe_auth_key_allows(r->key, id))
        return "not allowed to the key's token group";
    return NULL;
}

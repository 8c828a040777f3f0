/* fe_list: list pagination (see fe_list.h). */
#include "fe_list.h"

#include <stdlib.h>
#include <string.h>

#include "fe_params.h"
#include "sb_event.h"

int fe_list_parse(const fe_request_t *r, int max_limit, int dflt_limit, const char *dflt_order, fe_list_query_t *q,
                  fe_error_t *err)
{
    memset(q, 0, sizeof *q);
    q->limit = dflt_limit;
    snprintf(q->order, sizeof q->order, "%s", dflt_order);
    char buf[160];
    if (fe_request_query_get(r, "limit", buf, sizeof buf) == 0) {
        char *end = NULL;
        long v = strtol(buf, &end, 10);
        if (!*buf || *end || v < 1 || v > max_limit) {
            fe_params_invalid(err, "limit", "Invalid value for 'limit': expected an integer from 1 to %d.", max_limit);
            return -1;
        }
        q->limit = (int)v;
    }
    if (fe_request_query_get(r, "order", buf, sizeof buf) == 0) {
        if (strcmp(buf, "asc") != 0 && strcmp(buf, "desc") != 0) {
            fe_params_invalid(err, "order", "Invalid value for 'order': expected 'asc' or 'desc'.");
            return -1;
        }
        memcpy(q->order, buf, strlen(buf) + 1); /* "asc" or "desc": fits */
    }
    if (fe_request_query_get(r, "after", q->after, sizeof q->after) < 0)
        q->after[0] = '\0';
    if (fe_request_query_get(r, "before", q->before, sizeof q->before) < 0)
        q->before[0] = '\0';
    return 0;
}

void fe_list_reply(fe_request_t *r, json_t *data, int limit)
{
    if (!json_is_array(data)) {
        json_decref(data);
        data = json_array();
    }
    bool more = json_array_size(data) > (size_t)limit;
    while (json_array_size(data) > (size_t)limit)
        json_array_remove(data, json_array_size(data) - 1);
    size_t n = json_array_size(data);
    json_t *first = n ? json_object_get(json_array_get(data, 0), "id") : NULL;
    json_t *last = n ? json_object_get(json_array_get(data, n - 1), "id") : NULL;
    fe_request_reply_json(r, 200,
                          json_pack("{s:s, s:o, s:O?, s:O?, s:b}", "object", "list", "data", data, "first_id", first,
                                    "last_id", last, "has_more", more));
}

json_t *fe_list_page(const json_t *all, const fe_list_query_t *q)
{
    size_t n = json_array_size(all);
    bool desc = !strcmp(q->order, "desc");
    json_t *out = json_array();
    bool started = q->after[0] == '\0';
    for (size_t k = 0; k < n && json_array_size(out) <= (size_t)q->limit; k++) {
        json_t *it = json_array_get(all, desc ? n - 1 - k : k);
        const char *id = json_string_value(json_object_get(it, "id"));
        if (!started) {
            started = id && !strcmp(id, q->after);
            continue;
        }
        if (q->before[0] && id && !strcmp(id, q->before))
            break;
        json_array_append(out, it);
    }
    return out;
}

void fe_list_reply_all(fe_request_t *r, json_t *all, int max_limit, int dflt_limit, const char *dflt_order,
                       void (*show)(json_t *page))
{
    fe_list_query_t q;
    fe_error_t e;
    if (fe_list_parse(r, max_limit, dflt_limit, dflt_order, &q, &e) < 0) {
        json_decref(all);
        fe_request_fail(r, &e);
        return;
    }
    json_t *page = fe_list_page(all, &q);
    json_decref(all);
    if (show)
        show(page);
    fe_list_reply(r, page, q.limit);
}

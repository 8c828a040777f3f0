/*
 * wtool_vsfilter: the pure half of file search (wtool_vsearch.h): a search
 * request checked, attribute filters checked and applied, and the array
 * literals its statements take. Unit-tested (test_vsearch.c) and the
 * request checker fuzzed (tests/fuzz/fuzz_vsearch_params.c): a filter is a
 * client's JSON.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_event.h"
#include "wtool_vsearch.h"

static json_t *invalid(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *invalid(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, msg);
}

/* ---- filters ------------------------------------------------------------------------ */

static const char *const comparisons[] = {"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"};

static bool is_comparison(const char *type)
{
    for (size_t i = 0; i < sizeof comparisons / sizeof comparisons[0]; i++)
        if (!strcmp(type, comparisons[i]))
            return true;
    return false;
}

static bool scalar(const json_t *v)
{
    return json_is_string(v) || json_is_number(v) || json_is_boolean(v);
}

static int check_node(const json_t *f, int depth, int *nodes, char *why, size_t why_len)
{
    if (++*nodes > SB_VS_MAX_FILTER_NODES || depth > SB_VS_MAX_FILTER_DEPTH) {
        snprintf(why, why_len, "filters may hold at most %d filters, nested at most %d deep", SB_VS_MAX_FILTER_NODES,
                 SB_VS_MAX_FILTER_DEPTH);
        return -EINVAL;
    }
    const char *type = json_string_value(json_object_get(f, "type"));
    if (!json_is_object(f) || !type) {
        snprintf(why, why_len, "a filter must be an object with a type");
        return -EINVAL;
    }
    if (!strcmp(type, "and") || !strcmp(type, "or")) {
        const json_t *list = json_object_get(f, "filters");
        if (!json_is_array(list) || json_array_size(list) == 0) {
            snprintf(why, why_len, "a compound filter ('%s') needs a non-empty filters array", type);
            return -EINVAL;
        }
        size_t i;
        const json_t *sub;
        json_array_foreach (list, i, sub)
            if (check_node(sub, depth + 1, nodes, why, why_len) < 0)
                return -EINVAL;
        return 0;
    }
    if (!is_comparison(type)) {
        snprintf(why, why_len, "a filter's type must be one of eq, ne, gt, gte, lt, lte, in, nin, and, or");
        return -EINVAL;
    }
    if (!json_is_string(json_object_get(f, "key"))) {
        snprintf(why, why_len, "a comparison filter needs a string key");
        return -EINVAL;
    }
    const json_t *v = json_object_get(f, "value");
    if (!strcmp(type, "in") || !strcmp(type, "nin")) {
        size_t i;
        const json_t *e;
        bool ok = json_is_array(v);
        json_array_foreach (v, i, e)
            ok = ok && (json_is_string(e) || json_is_number(e));
        if (!ok) {
            snprintf(why, why_len, "the value of an '%s' filter must be an array of strings and numbers", type);
            return -EINVAL;
        }
        return 0;
    }
    if (!scalar(v)) {
        snprintf(why, why_len, "the value of an '%s' filter must be a string, a number or a boolean", type);
        return -EINVAL;
    }
    return 0;
}

int sb_vs_filter_check(const json_t *filter, char *why, size_t why_len)
{
    int nodes = 0;
    char buf[200];
    int rc = check_node(filter, 0, &nodes, buf, sizeof buf);
    if (rc < 0 && why && why_len)
        snprintf(why, why_len, "%s", buf);
    return rc;
}

/* Equal values of one type; numbers as numbers (1 equals 1.0). */
static bool same(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return json_number_value(a) == json_number_value(b);
    if (json_is_string(a) && json_is_string(b))
        return json_string_length(a) == json_string_length(b) &&
               !memcmp(json_string_value(a), json_string_value(b), json_string_length(a));
    if (json_is_boolean(a) && json_is_boolean(b))
        return json_is_true(a) == json_is_true(b);
    return false;
}

/* Orders a against b: -1, 0, 1, or 2 when they do not compare (types). */
static int order(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        return x < y ? -1 : x > y ? 1 : 0;
    }
    if (json_is_string(a) && json_is_string(b)) {
        size_t la = json_string_length(a), lb = json_string_length(b);
        int c = memcmp(json_string_value(a), json_string_value(b), la < lb ? la : lb);
        if (c == 0)
            c = la < lb ? -1 : la > lb ? 1 : 0;
        return c < 0 ? -1 : c > 0 ? 1 : 0;
    }
    return 2;
}

static bool match_comparison(const char *type, const json_t *attr, const json_t *value)
{
    if (!strcmp(type, "eq"))
        return attr && same(attr, value);
    if (!strcmp(type, "ne"))
        return !attr || !same(attr, value);
    if (!strcmp(type, "in") || !strcmp(type, "nin")) {
        bool found = false;
        size_t i;
        const json_t *e;
        json_array_foreach (value, i, e)
            found = found || (attr && same(attr, e));
        return type[0] == 'i' ? found : !found;
    }
    int o = attr ? order(attr, value) : 2;
    if (o == 2)
        return false;
    if (!strcmp(type, "gt"))
        return o > 0;
    if (!strcmp(type, "gte"))
        return o >= 0;
    if (!strcmp(type, "lt"))
        return o < 0;
    return o <= 0; /* lte */
}

bool sb_vs_filter_match(const json_t *f, const json_t *attributes)
{
    const char *type = json_string_value(json_object_get(f, "type"));
    if (!type)
        return false;
    bool and = !strcmp(type, "and");
    if (and || !strcmp(type, "or")) {
        size_t i;
        const json_t *sub;
        json_array_foreach (json_object_get(f, "filters"), i, sub) {
            if (sb_vs_filter_match(sub, attributes) != and)
                return !and;
        }
        return and;
    }
    const char *key = json_string_value(json_object_get(f, "key"));
    const json_t *attr = key ? json_object_get(attributes, key) : NULL;
    if (json_is_null(attr))
        attr = NULL;
    return match_comparison(type, attr, json_object_get(f, "value"));
}

/* ---- the request -------------------------------------------------------------------- */

void sb_vs_params_clear(sb_vs_params_t *p)
{
    json_decref(p->store_ids);
    json_decref(p->queries);
    json_decref(p->filter);
    memset(p, 0, sizeof *p);
}

/* A number member in [lo, hi] into *out (kept when absent or null). */
static int number_in(const json_t *o, const char *key, double lo, double hi, double *out, const char *where,
                     json_t **err)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < lo ||
        json_number_value(v) > hi) {
        *err = hi < 1e300 ? invalid("Invalid '%s%s': expected a number from %g to %g.", where, key, lo, hi)
                          : invalid("Invalid '%s%s': expected a number of at least %g.", where, key, lo);
        return -EINVAL;
    }
    *out = json_number_value(v);
    return 0;
}

static int parse_ranking(const json_t *ro, sb_vs_params_t *p, json_t **err)
{
    if (!ro || json_is_null(ro))
        return 0;
    if (!json_is_object(ro)) {
        *err = invalid("Invalid 'ranking_options': expected an object.");
        return -EINVAL;
    }
    const json_t *ranker = json_object_get(ro, "ranker");
    const char *r = json_string_value(ranker);
    if (ranker && !json_is_null(ranker) &&
        (!r || (strcmp(r, "auto") && strcmp(r, "none") && strcmp(r, "default-2024-11-15")))) {
        *err = invalid("Invalid 'ranking_options.ranker': expected one of 'none', 'auto', 'default-2024-11-15'.");
        return -EINVAL;
    }
    if (number_in(ro, "score_threshold", 0, 1, &p->threshold, "ranking_options.", err) < 0)
        return -EINVAL;
    const json_t *hs = json_object_get(ro, "hybrid_search");
    if (!hs || json_is_null(hs))
        return 0;
    if (!json_is_object(hs)) {
        *err = invalid("Invalid 'ranking_options.hybrid_search': expected an object.");
        return -EINVAL;
    }
    if (number_in(hs, "embedding_weight", 0, 1e300, &p->ew, "ranking_options.hybrid_search.", err) < 0 ||
        number_in(hs, "text_weight", 0, 1e300, &p->tw, "ranking_options.hybrid_search.", err) < 0)
        return -EINVAL;
    if (p->ew + p->tw <= 0 || !isfinite(p->ew + p->tw)) {
        *err = invalid("Invalid 'ranking_options.hybrid_search': embedding_weight and text_weight may not both be 0.");
        return -EINVAL;
    }
    return 0;
}

int sb_vs_params_parse(const json_t *params, sb_vs_params_t *p, json_t **err)
{
    memset(p, 0, sizeof *p);
    *err = NULL;
    p->max_results = SB_VS_DEFAULT_RESULTS;
    p->ew = SB_VS_DEFAULT_EMBEDDING_WEIGHT;
    p->tw = SB_VS_DEFAULT_TEXT_WEIGHT;
    if (!json_is_object(params)) {
        *err = invalid("the search request must be an object");
        goto fail;
    }
    const json_t *ids = json_object_get(params, "vector_store_ids");
    size_t i;
    const json_t *v;
    bool ok = json_is_array(ids) && json_array_size(ids) <= SB_VS_MAX_STORES;
    json_array_foreach (ids, i, v)
        ok = ok && json_is_string(v) && json_string_length(v) > 0;
    if (!ok) {
        *err =
            invalid("Invalid 'vector_store_ids': expected an array of at most %d vector store ids.", SB_VS_MAX_STORES);
        goto fail;
    }
    p->store_ids = json_incref((json_t *)ids);

    const json_t *q = json_object_get(params, "query");
    p->queries = json_array();
    if (json_is_string(q))
        json_array_append(p->queries, (json_t *)q);
    else if (json_is_array(q) && json_array_size(q) <= SB_VS_MAX_QUERIES)
        json_array_foreach (q, i, v)
            json_array_append(p->queries, json_is_string(v) ? (json_t *)v : json_null());
    ok = json_array_size(p->queries) > 0;
    json_array_foreach (p->queries, i, v)
        ok = ok && json_is_string(v) && json_string_length(v) > 0;
    if (!ok) {
        *err = invalid("Invalid 'query': expected a non-empty string or an array of 1 to %d non-empty strings.",
                       SB_VS_MAX_QUERIES);
        goto fail;
    }

    const json_t *n = json_object_get(params, "max_num_results");
    if (n && !json_is_null(n)) {
        double d = json_is_number(n) ? json_number_value(n) : 0;
        if (d < 1 || d > SB_VS_MAX_RESULTS || d != (double)(int)d) {
            *err = invalid("Invalid 'max_num_results': expected an integer from 1 to %d.", SB_VS_MAX_RESULTS);
            goto fail;
        }
        p->max_results = (int)d;
    }
    if (parse_ranking(json_object_get(params, "ranking_options"), p, err) < 0)
        goto fail;
    const json_t *f = json_object_get(params, "filters");
    if (f && !json_is_null(f)) {
        char why[200];
        if (sb_vs_filter_check(f, why, sizeof why) < 0) {
            *err = invalid("Invalid 'filters': %s.", why);
            goto fail;
        }
        p->filter = json_incref((json_t *)f);
    }
    const json_t *rw = json_object_get(params, "rewrite_query");
    if (rw && !json_is_null(rw) && !json_is_boolean(rw)) {
        *err = invalid("Invalid 'rewrite_query': expected a boolean.");
        goto fail;
    }
    return 0;
fail:
    sb_vs_params_clear(p);
    return -EINVAL;
}

/* ---- array literals ---------------------------------------------------------------- */

char *sb_vs_pg_text_array(const char *const *items, const size_t *lens, size_t n)
{
    sb_buf_t b = {0};
    sb_buf_add(&b, "{", 1);
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb_buf_add(&b, ",", 1);
        sb_buf_add(&b, "\"", 1);
        /* Inside quotes only '"' and '\' need a backslash. */
        const char *s = items[i], *end = s + (lens ? lens[i] : strlen(s));
        while (s < end) {
            const char *q = s;
            while (q < end && *q != '"' && *q != '\\')
                q++;
            sb_buf_add(&b, s, (size_t)(q - s));
            if (q == end)
                break;
            sb_buf_add(&b, "\\", 1);
            sb_buf_add(&b, q, 1);
            s = q + 1;
        }
        sb_buf_add(&b, "\"", 1);
    }
    sb_buf_add(&b, "}", 1);
    return b.p;
}

char *sb_vs_pg_real_array(const float *v, size_t n)
{
    sb_buf_t b = {0};
    sb_buf_add(&b, "{", 1);
    char num[32];
    for (size_t i = 0; i < n; i++) {
        /* 9 significant digits: a float32 reads back exactly. */
        int len = snprintf(num, sizeof num, "%s%.9g", i ? "," : "", isfinite(v[i]) ? (double)v[i] : 0.0);
        sb_buf_add(&b, num, (size_t)len);
    }
    sb_buf_add(&b, "}", 1);
    return b.p;
}

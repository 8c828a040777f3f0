/* fe_vstore_params: the Vector Stores API's field checks (see fe_vstore_params.h). */
#include "fe_vstore_params.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fe_params.h"
#include "sb_event.h"

/* OpenAI's wording of a field of the wrong type. */
static int fe_vstore_type_error(fe_error_t *err, const char *param, const char *expected, const json_t *got)
{
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_type", param,
                 "Invalid type for '%s': expected %s, but got %s instead.", param, expected, fe_params_got(got));
    return -1;
}

static int fe_vstore_missing(fe_error_t *err, const char *param)
{
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", param,
                 "Missing required parameter: '%s'.", param);
    return -1;
}

/* An integer field in [lo, hi], with OpenAI's range wording. */
static int fe_vstore_int_in(const json_t *v, const char *param, json_int_t lo, json_int_t hi, fe_error_t *err)
{
    if (!json_is_integer(v))
        return fe_vstore_type_error(err, param, "an integer", v);
    json_int_t n = json_integer_value(v);
    if (n < lo) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "integer_below_min_value", param,
                     "Invalid '%s': integer below minimum value. Expected a value >= %lld, but got %lld instead.",
                     param, (long long)lo, (long long)n);
        return -1;
    }
    if (n > hi) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "integer_above_max_value", param,
                     "Invalid '%s': integer above maximum value. Expected a value <= %lld, but got %lld instead.",
                     param, (long long)hi, (long long)n);
        return -1;
    }
    return 0;
}

/* Refuses a key of obj outside allowed, naming it with its path. */
static int fe_vstore_only(const json_t *obj, const char *param, const char *const *allowed, fe_error_t *err)
{
    return fe_params_only_nested(obj, param, allowed, err);
}

/* Characters (code points) of n bytes of UTF-8 (jansson holds only valid
 * UTF-8): the bytes that do not continue a sequence. */
static size_t fe_vstore_utf8_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

static size_t fe_vstore_chars(const json_t *s)
{
    return fe_vstore_utf8_chars(json_string_value(s), json_string_length(s));
}

json_t *fe_vstore_params_chunking(const json_t *v, const char *param, fe_error_t *err)
{
    json_int_t max = FE_VSTORE_CHUNK_DEFAULT_MAX, overlap = FE_VSTORE_CHUNK_DEFAULT_OVERLAP;
    if (v && !json_is_null(v)) {
        char p[192];
        if (!json_is_object(v))
            return fe_vstore_type_error(err, param, "an object", v), NULL;
        const json_t *type = json_object_get(v, "type");
        if (!type) {
            snprintf(p, sizeof p, "%.128s.type", param);
            return fe_vstore_missing(err, p), NULL;
        }
        const char *t = json_string_value(type);
        if (t && !strcmp(t, "auto")) {
            static const char *const auto_keys[] = {"type", NULL};
            if (fe_vstore_only(v, param, auto_keys, err) < 0)
                return NULL;
        } else if (t && !strcmp(t, "static")) {
            static const char *const static_keys[] = {"type", "static", NULL};
            static const char *const inner_keys[] = {"max_chunk_size_tokens", "chunk_overlap_tokens", NULL};
            if (fe_vstore_only(v, param, static_keys, err) < 0)
                return NULL;
            const json_t *st = json_object_get(v, "static");
            snprintf(p, sizeof p, "%.128s.static", param);
            if (!st)
                return fe_vstore_missing(err, p), NULL;
            if (!json_is_object(st))
                return fe_vstore_type_error(err, p, "an object", st), NULL;
            if (fe_vstore_only(st, p, inner_keys, err) < 0)
                return NULL;
            const json_t *m = json_object_get(st, "max_chunk_size_tokens");
            const json_t *o = json_object_get(st, "chunk_overlap_tokens");
            snprintf(p, sizeof p, "%.128s.static.max_chunk_size_tokens", param);
            if (!m)
                return fe_vstore_missing(err, p), NULL;
            if (fe_vstore_int_in(m, p, FE_VSTORE_CHUNK_MIN, FE_VSTORE_CHUNK_MAX, err) < 0)
                return NULL;
            max = json_integer_value(m);
            snprintf(p, sizeof p, "%.128s.static.chunk_overlap_tokens", param);
            if (!o)
                return fe_vstore_missing(err, p), NULL;
            if (fe_vstore_int_in(o, p, 0, FE_VSTORE_CHUNK_MAX, err) < 0)
                return NULL;
            overlap = json_integer_value(o);
            if (overlap > max / 2) {
                fe_params_invalid(err, p,
                                  "Invalid '%s': chunk_overlap_tokens must not exceed half of max_chunk_size_tokens "
                                  "(%lld), but got %lld.",
                                  p, (long long)(max / 2), (long long)overlap);
                return NULL;
            }
        } else {
            snprintf(p, sizeof p, "%.128s.type", param);
            fe_params_invalid(err, p, "Invalid value for '%s': expected one of 'auto', 'static'.", p);
            return NULL;
        }
    }
    return json_pack("{s:s, s:{s:I, s:I}}", "type", "static", "static", "max_chunk_size_tokens", max,
                     "chunk_overlap_tokens", overlap);
}

int fe_vstore_params_attributes(const json_t *v, const char *param, fe_error_t *err)
{
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_object(v))
        return fe_vstore_type_error(err, param, "an object", v);
    if (json_object_size(v) > 16) {
        fe_params_invalid(err, param, "Invalid '%s': too many properties, expected at most 16.", param);
        return -1;
    }
    const char *k;
    json_t *val;
    json_object_foreach ((json_t *)v, k, val) {
        bool ok = fe_vstore_utf8_chars(k, strlen(k)) <= 64 &&
                  ((json_is_string(val) && fe_vstore_chars(val) <= 512) || json_is_number(val) || json_is_boolean(val));
        if (!ok) {
            fe_params_invalid(err, param,
                              "Invalid '%s' entry '%.64s': keys are at most 64 characters, values strings of at "
                              "most 512 characters, numbers or booleans.",
                              param, k);
            return -1;
        }
    }
    return 0;
}

int fe_vstore_params_expires_after(const json_t *v, const char *param, bool nullable, fe_error_t *err)
{
    if (!v || (nullable && json_is_null(v)))
        return 0;
    if (!json_is_object(v))
        return fe_vstore_type_error(err, param, "an object", v);
    static const char *const keys[] = {"anchor", "days", NULL};
    if (fe_vstore_only(v, param, keys, err) < 0)
        return -1;
    char p[192];
    const json_t *anchor = json_object_get(v, "anchor");
    snprintf(p, sizeof p, "%.128s.anchor", param);
    if (!anchor)
        return fe_vstore_missing(err, p);
    if (!json_is_string(anchor) || strcmp(json_string_value(anchor), "last_active_at") != 0) {
        fe_params_invalid(err, p, "Invalid value for '%s': expected 'last_active_at'.", p);
        return -1;
    }
    const json_t *days = json_object_get(v, "days");
    snprintf(p, sizeof p, "%.128s.days", param);
    if (!days)
        return fe_vstore_missing(err, p);
    return fe_vstore_int_in(days, p, 1, 365, err);
}

/* ---- filters ------------------------------------------------------------------- */

static const char *const fe_vstore_comparisons[] = {"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", NULL};

static bool fe_vstore_in(const char *s, const char *const *list)
{
    for (; s && *list; list++)
        if (!strcmp(s, *list))
            return true;
    return false;
}

/* A comparison's value: in/nin an array (up to 128) of strings and numbers,
 * the others one string, number or boolean. */
static int fe_vstore_filter_value(const json_t *value, bool list, const char *param, fe_error_t *err)
{
    if (!list) {
        if (json_is_string(value) || json_is_number(value) || json_is_boolean(value))
            return 0;
        return fe_vstore_type_error(err, param, "a string, number or boolean", value);
    }
    if (!json_is_array(value))
        return fe_vstore_type_error(err, param, "an array", value);
    if (json_array_size(value) > 128) {
        fe_params_invalid(err, param, "Invalid '%s': expected at most 128 values.", param);
        return -1;
    }
    size_t i;
    const json_t *it;
    json_array_foreach (value, i, it) {
        if (!json_is_string(it) && !json_is_number(it)) {
            char p[192];
            snprintf(p, sizeof p, "%.128s[%zu]", param, i);
            return fe_vstore_type_error(err, p, "a string or number", it);
        }
    }
    return 0;
}

static int fe_vstore_filter(const json_t *f, const char *param, int depth, int *nodes, fe_error_t *err)
{
    if (!json_is_object(f))
        return fe_vstore_type_error(err, param, "an object", f);
    if (++*nodes > FE_VSTORE_FILTER_MAX_NODES) {
        fe_params_invalid(err, param, "Invalid '%s': too many filters, expected at most %d in all.", param,
                          FE_VSTORE_FILTER_MAX_NODES);
        return -1;
    }
    char p[192];
    const json_t *type = json_object_get(f, "type");
    snprintf(p, sizeof p, "%.128s.type", param);
    if (!type)
        return fe_vstore_missing(err, p);
    const char *t = json_string_value(type);
    if (t && (!strcmp(t, "and") || !strcmp(t, "or"))) {
        static const char *const keys[] = {"type", "filters", NULL};
        if (fe_vstore_only(f, param, keys, err) < 0)
            return -1;
        if (depth >= FE_VSTORE_FILTER_MAX_DEPTH) {
            fe_params_invalid(err, param, "Invalid '%s': filters nested too deep, expected at most %d levels.", param,
                              FE_VSTORE_FILTER_MAX_DEPTH);
            return -1;
        }
        const json_t *list = json_object_get(f, "filters");
        snprintf(p, sizeof p, "%.128s.filters", param);
        if (!list)
            return fe_vstore_missing(err, p);
        if (!json_is_array(list))
            return fe_vstore_type_error(err, p, "an array", list);
        size_t i;
        const json_t *sub;
        json_array_foreach (list, i, sub) {
            snprintf(p, sizeof p, "%.128s.filters[%zu]", param, i);
            if (fe_vstore_filter(sub, p, depth + 1, nodes, err) < 0)
                return -1;
        }
        return 0;
    }
    if (!fe_vstore_in(t, fe_vstore_comparisons)) {
        fe_params_invalid(err, p,
                          "Invalid value for '%s': expected one of 'eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', "
                          "'nin', 'and', 'or'.",
                          p);
        return -1;
    }
    static const char *const keys[] = {"type", "key", "value", NULL};
    if (fe_vstore_only(f, param, keys, err) < 0)
        return -1;
    const json_t *key = json_object_get(f, "key");
    snprintf(p, sizeof p, "%.128s.key", param);
    if (!key)
        return fe_vstore_missing(err, p);
    if (!json_is_string(key))
        return fe_vstore_type_error(err, p, "a string", key);
    if (json_string_length(key) == 0 || fe_vstore_chars(key) > 64) {
        fe_params_invalid(err, p, "Invalid '%s': expected a string of 1 to 64 characters.", p);
        return -1;
    }
    const json_t *value = json_object_get(f, "value");
    snprintf(p, sizeof p, "%.128s.value", param);
    if (!value)
        return fe_vstore_missing(err, p);
    return fe_vstore_filter_value(value, !strcmp(t, "in") || !strcmp(t, "nin"), p, err);
}

int fe_vstore_params_filters(const json_t *v, const char *param, fe_error_t *err)
{
    if (!v || json_is_null(v))
        return 0;
    int nodes = 0;
    return fe_vstore_filter(v, param, 0, &nodes, err);
}

/* ---- the files a request attaches ------------------------------------------------- */

/* A file id as given: a non-empty string of at most 128 characters. */
static int fe_vstore_file_id(const json_t *v, const char *param, fe_error_t *err)
{
    if (!v)
        return fe_vstore_missing(err, param);
    if (!json_is_string(v))
        return fe_vstore_type_error(err, param, "a string", v);
    if (json_string_length(v) == 0 || json_string_length(v) > 128) {
        fe_params_invalid(err, param, "Invalid '%s': expected a file ID of 1 to 128 characters.", param);
        return -1;
    }
    return 0;
}

/* Appends {file_id, attributes, chunking_strategy} for one file. attrs and
 * cs are checked already (cs resolved); borrowed. */
static void fe_vstore_add(json_t *out, const json_t *file_id, const json_t *attrs, const json_t *cs)
{
    json_array_append_new(out, json_pack("{s:O, s:o, s:O}", "file_id", file_id, "attributes",
                                         json_is_object(attrs) ? json_deep_copy(attrs) : json_object(),
                                         "chunking_strategy", cs));
}

/* file_ids: an array of up to FE_VSTORE_MAX_FILES ids, each attached with
 * attrs and cs. */
static int fe_vstore_file_ids(const json_t *ids, const json_t *attrs, const json_t *cs, json_t *out, fe_error_t *err)
{
    if (!json_is_array(ids))
        return fe_vstore_type_error(err, "file_ids", "an array", ids);
    if (json_array_size(ids) > FE_VSTORE_MAX_FILES) {
        fe_params_invalid(err, "file_ids", "Invalid 'file_ids': expected an array of at most %d file IDs.",
                          FE_VSTORE_MAX_FILES);
        return -1;
    }
    size_t i;
    const json_t *id;
    json_array_foreach (ids, i, id) {
        char p[32];
        snprintf(p, sizeof p, "file_ids[%zu]", i);
        if (fe_vstore_file_id(id, p, err) < 0)
            return -1;
        fe_vstore_add(out, id, attrs, cs);
    }
    return 0;
}

/* files: an array of {file_id, attributes, chunking_strategy}; the batch's
 * own attributes and strategy are for a file that gives none. */
static int fe_vstore_files(const json_t *files, const json_t *attrs, const json_t *cs, json_t *out, fe_error_t *err)
{
    if (!json_is_array(files))
        return fe_vstore_type_error(err, "files", "an array", files);
    if (json_array_size(files) > FE_VSTORE_MAX_FILES) {
        fe_params_invalid(err, "files", "Invalid 'files': expected an array of at most %d files.", FE_VSTORE_MAX_FILES);
        return -1;
    }
    size_t i;
    const json_t *f;
    json_array_foreach (files, i, f) {
        char p[32], q[192];
        snprintf(p, sizeof p, "files[%zu]", i);
        if (!json_is_object(f))
            return fe_vstore_type_error(err, p, "an object", f);
        static const char *const keys[] = {"file_id", "attributes", "chunking_strategy", NULL};
        if (fe_vstore_only(f, p, keys, err) < 0)
            return -1;
        snprintf(q, sizeof q, "%.128s.file_id", p);
        if (fe_vstore_file_id(json_object_get(f, "file_id"), q, err) < 0)
            return -1;
        const json_t *own_attrs = json_object_get(f, "attributes");
        snprintf(q, sizeof q, "%.128s.attributes", p);
        if (fe_vstore_params_attributes(own_attrs, q, err) < 0)
            return -1;
        const json_t *own_cs = json_object_get(f, "chunking_strategy");
        json_t *resolved = NULL;
        if (own_cs && !json_is_null(own_cs)) {
            snprintf(q, sizeof q, "%.128s.chunking_strategy", p);
            if (!(resolved = fe_vstore_params_chunking(own_cs, q, err)))
                return -1;
        }
        fe_vstore_add(out, json_object_get(f, "file_id"), own_attrs && !json_is_null(own_attrs) ? own_attrs : attrs,
                      resolved ? resolved : cs);
        json_decref(resolved);
    }
    return 0;
}

json_t *fe_vstore_params_attach(const json_t *body, enum fe_vstore_attach mode, fe_error_t *err)
{
    const json_t *attrs = mode == FE_VSTORE_ATTACH_STORE ? NULL : json_object_get(body, "attributes");
    if (fe_vstore_params_attributes(attrs, "attributes", err) < 0)
        return NULL;
    json_t *cs = fe_vstore_params_chunking(json_object_get(body, "chunking_strategy"), "chunking_strategy", err);
    if (!cs)
        return NULL;
    json_t *out = json_array();
    const json_t *ids = json_object_get(body, "file_ids");
    const json_t *files = json_object_get(body, "files");
    int rc = 0;
    switch (mode) {
    case FE_VSTORE_ATTACH_ONE:
        rc = fe_vstore_file_id(json_object_get(body, "file_id"), "file_id", err);
        if (rc == 0)
            fe_vstore_add(out, json_object_get(body, "file_id"), attrs, cs);
        break;
    case FE_VSTORE_ATTACH_STORE:
        if (ids && !json_is_null(ids))
            rc = fe_vstore_file_ids(ids, NULL, cs, out, err);
        break;
    case FE_VSTORE_ATTACH_BATCH:
        if (ids && files) {
            fe_params_invalid(err, "files", "Invalid request: 'file_ids' and 'files' are mutually exclusive.");
            rc = -1;
        } else if (!ids && !files) {
            rc = fe_vstore_missing(err, "file_ids");
        } else {
            rc = ids ? fe_vstore_file_ids(ids, attrs, cs, out, err) : fe_vstore_files(files, attrs, cs, out, err);
            if (rc == 0 && json_array_size(out) == 0) {
                fe_params_invalid(err, ids ? "file_ids" : "files",
                                  "Invalid '%s': expected an array of at least 1 item.", ids ? "file_ids" : "files");
                rc = -1;
            }
        }
        break;
    }
    json_decref(cs);
    if (rc < 0) {
        json_decref(out);
        return NULL;
    }
    return out;
}

/* ---- search ------------------------------------------------------------------- */

/* query: a non-empty string, or an array of 1..FE_VSTORE_MAX_QUERIES of them. */
static int fe_vstore_query(const json_t *q, fe_error_t *err)
{
    if (!q || json_is_null(q))
        return fe_vstore_missing(err, "query");
    if (json_is_string(q)) {
        if (json_string_length(q) == 0 || json_string_length(q) > 16384) {
            fe_params_invalid(err, "query", "Invalid 'query': expected a string of 1 to 16384 bytes.");
            return -1;
        }
        return 0;
    }
    if (!json_is_array(q))
        return fe_vstore_type_error(err, "query", "a string or an array", q);
    if (json_array_size(q) == 0 || json_array_size(q) > FE_VSTORE_MAX_QUERIES) {
        fe_params_invalid(err, "query", "Invalid 'query': expected an array of 1 to %d strings.",
                          FE_VSTORE_MAX_QUERIES);
        return -1;
    }
    size_t i;
    const json_t *s;
    json_array_foreach (q, i, s) {
        char p[32];
        snprintf(p, sizeof p, "query[%zu]", i);
        if (!json_is_string(s))
            return fe_vstore_type_error(err, p, "a string", s);
        if (json_string_length(s) == 0 || json_string_length(s) > 16384) {
            fe_params_invalid(err, p, "Invalid '%s': expected a string of 1 to 16384 bytes.", p);
            return -1;
        }
    }
    return 0;
}

/* A number field of an object in [lo, hi] (absent and null allowed). */
static int fe_vstore_number_in(const json_t *obj, const char *key, const char *param, double lo, double hi,
                               fe_error_t *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_number(v))
        return fe_vstore_type_error(err, param, "a number", v);
    double d = json_number_value(v);
    if (!isfinite(d) || d < lo || d > hi) {
        fe_params_invalid(err, param, "Invalid '%s': expected a number from %g to %g, but got %g.", param, lo, hi, d);
        return -1;
    }
    return 0;
}

/* ranking_options {ranker, score_threshold 0..1, hybrid_search
 * {embedding_weight, text_weight} (non-negative, not both 0)}. */
static int fe_vstore_ranking(const json_t *ro, fe_error_t *err)
{
    if (!ro || json_is_null(ro))
        return 0;
    if (!json_is_object(ro))
        return fe_vstore_type_error(err, "ranking_options", "an object", ro);
    static const char *const keys[] = {"ranker", "score_threshold", "hybrid_search", NULL};
    if (fe_vstore_only(ro, "ranking_options", keys, err) < 0)
        return -1;
    static const char *const rankers[] = {"none", "auto", "default-2024-11-15", NULL};
    const json_t *ranker = json_object_get(ro, "ranker");
    if (ranker && !json_is_null(ranker) && !fe_vstore_in(json_string_value(ranker), rankers)) {
        fe_params_invalid(err, "ranking_options.ranker",
                          "Invalid value for 'ranking_options.ranker': expected one of 'none', 'auto', "
                          "'default-2024-11-15'.");
        return -1;
    }
    if (fe_vstore_number_in(ro, "score_threshold", "ranking_options.score_threshold", 0, 1, err) < 0)
        return -1;
    const json_t *hs = json_object_get(ro, "hybrid_search");
    if (!hs || json_is_null(hs))
        return 0;
    if (!json_is_object(hs))
        return fe_vstore_type_error(err, "ranking_options.hybrid_search", "an object", hs);
    static const char *const hkeys[] = {"embedding_weight", "text_weight", NULL};
    if (fe_vstore_only(hs, "ranking_options.hybrid_search", hkeys, err) < 0)
        return -1;
    for (const char *const *k = hkeys; *k; k++) {
        char p[96];
        snprintf(p, sizeof p, "ranking_options.hybrid_search.%.32s", *k);
        if (!json_object_get(hs, *k))
            return fe_vstore_missing(err, p);
        if (fe_vstore_number_in(hs, *k, p, 0, 1e6, err) < 0)
            return -1;
    }
    if (json_number_value(json_object_get(hs, "embedding_weight")) +
            json_number_value(json_object_get(hs, "text_weight")) <=
        0) {
        fe_params_invalid(err, "ranking_options.hybrid_search",
                          "Invalid 'ranking_options.hybrid_search': the weights must not both be 0.");
        return -1;
    }
    return 0;
}

json_t *fe_vstore_params_search(const json_t *body, const char *vector_store_id, fe_error_t *err)
{
    static const char *const keys[] = {"query", "filters", "max_num_results", "ranking_options", "rewrite_query", NULL};
    if (fe_params_only(body, keys, "Unknown parameter: '%s'.", err) < 0)
        return NULL;
    const json_t *query = json_object_get(body, "query");
    if (fe_vstore_query(query, err) < 0)
        return NULL;
    const json_t *filters = json_object_get(body, "filters");
    if (fe_vstore_params_filters(filters, "filters", err) < 0)
        return NULL;
    json_int_t max = FE_VSTORE_DEFAULT_RESULTS;
    const json_t *m = json_object_get(body, "max_num_results");
    if (m && !json_is_null(m)) {
        if (fe_vstore_int_in(m, "max_num_results", 1, FE_VSTORE_MAX_RESULTS, err) < 0)
            return NULL;
        max = json_integer_value(m);
    }
    const json_t *ro = json_object_get(body, "ranking_options");
    if (fe_vstore_ranking(ro, err) < 0)
        return NULL;
    const json_t *rw = json_object_get(body, "rewrite_query");
    if (rw && !json_is_null(rw) && !json_is_boolean(rw))
        return fe_vstore_type_error(err, "rewrite_query", "a boolean", rw), NULL;
    json_t *req = json_pack("{s:s, s:[s], s:O, s:I, s:b}", "op", "vs_search", "vector_store_ids", vector_store_id,
                            "query", query, "max_num_results", max, "rewrite_query", json_is_true(rw));
    if (filters && !json_is_null(filters))
        json_object_set(req, "filters", (json_t *)filters);
    if (ro && !json_is_null(ro))
        json_object_set(req, "ranking_options", (json_t *)ro);
    return req;
}

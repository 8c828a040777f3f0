/*
 * Unit tests for fe_vstore_params: the Vector Stores API's field checks
 * (chunking strategies resolved to their static form and their bounds,
 * attributes, expiry policies, the files each attach endpoint takes,
 * filters, and the search request as the job carries it), each refusal
 * with its status, param and code.
 */
#include <stdlib.h>
#include <string.h>

#include "fe_vstore_params.h"
#include "sb_test.h"

static json_t *J(const char *text)
{
    json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
    if (!v) {
        fprintf(stderr, "bad test JSON: %s\n", text);
        exit(2);
    }
    return v;
}

/* A refusal: 400 with that param (and code when given). */
static void check_refused(const fe_error_t *e, const char *param, const char *code)
{
    CHECK_INT(e->status, 400);
    CHECK_STR(e->param, param);
    if (code)
        CHECK_STR(e->code, code);
}

static json_t *chunking(const char *text, fe_error_t *e)
{
    json_t *v = text ? J(text) : NULL;
    memset(e, 0, sizeof *e);
    json_t *out = fe_vstore_params_chunking(v, "chunking_strategy", e);
    json_decref(v);
    return out;
}

static void test_chunking(void)
{
    fe_error_t e;
    const char *cases[] = {NULL, "null", "{\"type\":\"auto\"}"};
    for (size_t i = 0; i < 3; i++) { /* absent, null and auto are 800/400 */
        json_t *cs = chunking(cases[i], &e);
        CHECK(cs != NULL);
        CHECK_STR(json_string_value(json_object_get(cs, "type")), "static");
        json_t *st = json_object_get(cs, "static");
        CHECK_INT(json_integer_value(json_object_get(st, "max_chunk_size_tokens")), 800);
        CHECK_INT(json_integer_value(json_object_get(st, "chunk_overlap_tokens")), 400);
        json_decref(cs);
    }
    json_t *cs =
        chunking("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":100,\"chunk_overlap_tokens\":50}}", &e);
    CHECK(cs != NULL);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(cs, "static"), "max_chunk_size_tokens")), 100);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(cs, "static"), "chunk_overlap_tokens")), 50);
    json_decref(cs);
    cs = chunking("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":4096,\"chunk_overlap_tokens\":0}}", &e);
    CHECK(cs != NULL);
    json_decref(cs);

    CHECK(!chunking("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":99,\"chunk_overlap_tokens\":0}}", &e));
    check_refused(&e, "chunking_strategy.static.max_chunk_size_tokens", "integer_below_min_value");
    CHECK(
        !chunking("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":4097,\"chunk_overlap_tokens\":0}}", &e));
    check_refused(&e, "chunking_strategy.static.max_chunk_size_tokens", "integer_above_max_value");
    CHECK(
        !chunking("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":800,\"chunk_overlap_tokens\":401}}", &e));
    check_refused(&e, "chunking_strategy.static.chunk_overlap_tokens", "invalid_value");
    CHECK(
        !chunking("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":800,\"chunk_overlap_tokens\":-1}}", &e));
    check_refused(&e, "chunking_strategy.static.chunk_overlap_tokens", "integer_below_min_value");
    CHECK(!chunking("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":800}}", &e));
    check_refused(&e, "chunking_strategy.static.chunk_overlap_tokens", "missing_required_parameter");
    CHECK(!chunking("{\"type\":\"static\"}", &e));
    check_refused(&e, "chunking_strategy.static", "missing_required_parameter");
    CHECK(!chunking("{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":\"800\",\"chunk_overlap_tokens\":1}}",
                    &e));
    check_refused(&e, "chunking_strategy.static.max_chunk_size_tokens", "invalid_type");
    CHECK(!chunking("{\"type\":\"other\"}", &e));
    check_refused(&e, "chunking_strategy.type", "invalid_value");
    CHECK(!chunking("{}", &e));
    check_refused(&e, "chunking_strategy.type", "missing_required_parameter");
    CHECK(!chunking("{\"type\":\"auto\",\"static\":{}}", &e));
    check_refused(&e, "chunking_strategy.static", "unknown_parameter");
    CHECK(!chunking("\"auto\"", &e));
    check_refused(&e, "chunking_strategy", "invalid_type");
}

static int attributes(const char *text, fe_error_t *e)
{
    json_t *v = J(text);
    memset(e, 0, sizeof *e);
    int rc = fe_vstore_params_attributes(v, "attributes", e);
    json_decref(v);
    return rc;
}

static void test_attributes(void)
{
    fe_error_t e;
    CHECK_INT(attributes("null", &e), 0);
    CHECK_INT(attributes("{\"a\":\"x\",\"n\":1.5,\"i\":3,\"b\":false}", &e), 0);
    CHECK_INT(attributes("{\"a\":[1]}", &e), -1);
    check_refused(&e, "attributes", "invalid_value");
    CHECK_INT(attributes("{\"a\":null}", &e), -1);
    CHECK_INT(attributes("[]", &e), -1);
    check_refused(&e, "attributes", "invalid_type");
    /* 16 keys pass, 17 do not; a key of 64 characters passes, 65 does not */
    char buf[2200];
    size_t n = 0;
    n += (size_t)snprintf(buf + n, sizeof buf - n, "{");
    for (int i = 0; i < 17; i++)
        n += (size_t)snprintf(buf + n, sizeof buf - n, "%s\"k%d\":1", i ? "," : "", i);
    snprintf(buf + n, sizeof buf - n, "}");
    CHECK_INT(attributes(buf, &e), -1);
    char *cut = strstr(buf, ",\"k16\"");
    memcpy(cut, "}", 2);
    CHECK_INT(attributes(buf, &e), 0);
    char key[70];
    memset(key, 'k', 64);
    key[64] = '\0';
    snprintf(buf, sizeof buf, "{\"%s\":1}", key);
    CHECK_INT(attributes(buf, &e), 0);
    snprintf(buf, sizeof buf, "{\"%sk\":1}", key);
    CHECK_INT(attributes(buf, &e), -1);
    /* values: 512 characters (counted as code points, not bytes) */
    char val[2048];
    size_t k = 0;
    for (int i = 0; i < 512; i++) {
        memcpy(val + k, "\xc3\xa9", 2); /* é */
        k += 2;
    }
    val[k] = '\0';
    snprintf(buf, sizeof buf, "{\"s\":\"%s\"}", val);
    CHECK_INT(attributes(buf, &e), 0);
    snprintf(buf, sizeof buf, "{\"s\":\"%sx\"}", val);
    CHECK_INT(attributes(buf, &e), -1);
}

static int expires(const char *text, bool nullable, fe_error_t *e)
{
    json_t *v = J(text);
    memset(e, 0, sizeof *e);
    int rc = fe_vstore_params_expires_after(v, "expires_after", nullable, e);
    json_decref(v);
    return rc;
}

static void test_expires_after(void)
{
    fe_error_t e;
    CHECK_INT(expires("{\"anchor\":\"last_active_at\",\"days\":7}", false, &e), 0);
    CHECK_INT(expires("null", true, &e), 0);
    CHECK_INT(expires("null", false, &e), -1);
    CHECK_INT(expires("{\"anchor\":\"created_at\",\"days\":7}", false, &e), -1);
    check_refused(&e, "expires_after.anchor", "invalid_value");
    CHECK_INT(expires("{\"anchor\":\"last_active_at\"}", false, &e), -1);
    check_refused(&e, "expires_after.days", "missing_required_parameter");
    CHECK_INT(expires("{\"anchor\":\"last_active_at\",\"days\":0}", false, &e), -1);
    check_refused(&e, "expires_after.days", "integer_below_min_value");
    CHECK_INT(expires("{\"anchor\":\"last_active_at\",\"days\":366}", false, &e), -1);
    check_refused(&e, "expires_after.days", "integer_above_max_value");
    CHECK_INT(expires("{\"anchor\":\"last_active_at\",\"days\":1,\"minutes\":2}", false, &e), -1);
    check_refused(&e, "expires_after.minutes", "unknown_parameter");
}

static int filters(const char *text, fe_error_t *e)
{
    json_t *v = J(text);
    memset(e, 0, sizeof *e);
    int rc = fe_vstore_params_filters(v, "filters", e);
    json_decref(v);
    return rc;
}

static void test_filters(void)
{
    fe_error_t e;
    CHECK_INT(filters("null", &e), 0);
    CHECK_INT(filters("{\"type\":\"eq\",\"key\":\"k\",\"value\":\"v\"}", &e), 0);
    CHECK_INT(filters("{\"type\":\"gte\",\"key\":\"n\",\"value\":3}", &e), 0);
    CHECK_INT(filters("{\"type\":\"ne\",\"key\":\"b\",\"value\":true}", &e), 0);
    CHECK_INT(filters("{\"type\":\"in\",\"key\":\"k\",\"value\":[\"a\",2]}", &e), 0);
    CHECK_INT(filters("{\"type\":\"and\",\"filters\":[{\"type\":\"eq\",\"key\":\"a\",\"value\":1},"
                      "{\"type\":\"or\",\"filters\":[{\"type\":\"nin\",\"key\":\"b\",\"value\":[\"x\"]}]}]}",
                      &e),
              0);
    CHECK_INT(filters("{\"type\":\"in\",\"key\":\"k\",\"value\":\"a\"}", &e), -1);
    check_refused(&e, "filters.value", "invalid_type");
    CHECK_INT(filters("{\"type\":\"eq\",\"key\":\"k\",\"value\":[1]}", &e), -1);
    check_refused(&e, "filters.value", "invalid_type");
    CHECK_INT(filters("{\"type\":\"in\",\"key\":\"k\",\"value\":[true]}", &e), -1);
    check_refused(&e, "filters.value[0]", "invalid_type");
    CHECK_INT(filters("{\"type\":\"like\",\"key\":\"k\",\"value\":1}", &e), -1);
    check_refused(&e, "filters.type", "invalid_value");
    CHECK_INT(filters("{\"type\":\"eq\",\"value\":1}", &e), -1);
    check_refused(&e, "filters.key", "missing_required_parameter");
    CHECK_INT(filters("{\"type\":\"eq\",\"key\":\"k\"}", &e), -1);
    check_refused(&e, "filters.value", "missing_required_parameter");
    CHECK_INT(
        filters("{\"type\":\"and\",\"filters\":[{\"type\":\"eq\",\"key\":\"k\",\"value\":1},{\"type\":\"x\"}]}", &e),
        -1);
    check_refused(&e, "filters.filters[1].type", "invalid_value");
    CHECK_INT(filters("{\"type\":\"or\",\"filters\":{}}", &e), -1);
    check_refused(&e, "filters.filters", "invalid_type");
    CHECK_INT(filters("{\"type\":\"eq\",\"key\":\"k\",\"value\":1,\"extra\":1}", &e), -1);
    check_refused(&e, "filters.extra", "unknown_parameter");

    /* Nesting: FE_VSTORE_FILTER_MAX_DEPTH compound levels pass, one more does not. */
    char buf[4096];
    for (int depth = FE_VSTORE_FILTER_MAX_DEPTH; depth <= FE_VSTORE_FILTER_MAX_DEPTH + 1; depth++) {
        size_t n = 0;
        for (int i = 0; i < depth; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "{\"type\":\"and\",\"filters\":[");
        n += (size_t)snprintf(buf + n, sizeof buf - n, "{\"type\":\"eq\",\"key\":\"k\",\"value\":1}");
        for (int i = 0; i < depth; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "]}");
        CHECK_INT(filters(buf, &e), depth <= FE_VSTORE_FILTER_MAX_DEPTH ? 0 : -1);
    }
    /* Count: FE_VSTORE_FILTER_MAX_NODES filters in all (the compound is one). */
    for (int count = FE_VSTORE_FILTER_MAX_NODES - 1; count <= FE_VSTORE_FILTER_MAX_NODES; count++) {
        size_t n = (size_t)snprintf(buf, sizeof buf, "{\"type\":\"or\",\"filters\":[");
        for (int i = 0; i < count; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s{\"type\":\"eq\",\"key\":\"k\",\"value\":%d}",
                                  i ? "," : "", i);
        snprintf(buf + n, sizeof buf - n, "]}");
        CHECK_INT(filters(buf, &e), count < FE_VSTORE_FILTER_MAX_NODES ? 0 : -1);
    }
}

static json_t *attach(const char *text, enum fe_vstore_attach mode, fe_error_t *e)
{
    json_t *v = J(text);
    memset(e, 0, sizeof *e);
    json_t *out = fe_vstore_params_attach(v, mode, e);
    json_decref(v);
    return out;
}

static json_int_t max_tokens(const json_t *file)
{
    return json_integer_value(json_object_get(json_object_get(json_object_get(file, "chunking_strategy"), "static"),
                                              "max_chunk_size_tokens"));
}

static void test_attach(void)
{
    fe_error_t e;
    /* one file: its attributes and strategy */
    json_t *a = attach("{\"file_id\":\"file-1\",\"attributes\":{\"k\":\"v\"}}", FE_VSTORE_ATTACH_ONE, &e);
    CHECK(json_array_size(a) == 1);
    CHECK_STR(json_string_value(json_object_get(json_array_get(a, 0), "file_id")), "file-1");
    CHECK_STR(json_string_value(json_object_get(json_object_get(json_array_get(a, 0), "attributes"), "k")), "v");
    CHECK_INT(max_tokens(json_array_get(a, 0)), 800);
    json_decref(a);
    CHECK(!attach("{}", FE_VSTORE_ATTACH_ONE, &e));
    check_refused(&e, "file_id", "missing_required_parameter");
    CHECK(!attach("{\"file_id\":7}", FE_VSTORE_ATTACH_ONE, &e));
    check_refused(&e, "file_id", "invalid_type");
    CHECK(!attach("{\"file_id\":\"\"}", FE_VSTORE_ATTACH_ONE, &e));
    check_refused(&e, "file_id", "invalid_value");

    /* a store: file_ids optional, no attributes */
    a = attach("{}", FE_VSTORE_ATTACH_STORE, &e);
    CHECK(json_is_array(a) && json_array_size(a) == 0);
    json_decref(a);
    a = attach("{\"file_ids\":[\"f1\",\"f2\"],\"chunking_strategy\":{\"type\":\"static\",\"static\":"
               "{\"max_chunk_size_tokens\":200,\"chunk_overlap_tokens\":100}}}",
               FE_VSTORE_ATTACH_STORE, &e);
    CHECK(json_array_size(a) == 2);
    CHECK_INT(max_tokens(json_array_get(a, 1)), 200);
    CHECK(json_object_size(json_object_get(json_array_get(a, 1), "attributes")) == 0);
    json_decref(a);
    CHECK(!attach("{\"file_ids\":[\"f1\",3]}", FE_VSTORE_ATTACH_STORE, &e));
    check_refused(&e, "file_ids[1]", "invalid_type");
    CHECK(!attach("{\"file_ids\":\"f1\"}", FE_VSTORE_ATTACH_STORE, &e));
    check_refused(&e, "file_ids", "invalid_type");

    /* a batch: file_ids or files, the batch's attributes and strategy for those giving none */
    a = attach("{\"file_ids\":[\"f1\"],\"attributes\":{\"x\":1}}", FE_VSTORE_ATTACH_BATCH, &e);
    CHECK(json_integer_value(json_object_get(json_object_get(json_array_get(a, 0), "attributes"), "x")) == 1);
    json_decref(a);
    a = attach("{\"files\":[{\"file_id\":\"f1\"},{\"file_id\":\"f2\",\"attributes\":{\"y\":2},\"chunking_strategy\":"
               "{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":300,\"chunk_overlap_tokens\":0}}}],"
               "\"attributes\":{\"x\":1},\"chunking_strategy\":{\"type\":\"static\",\"static\":"
               "{\"max_chunk_size_tokens\":500,\"chunk_overlap_tokens\":0}}}",
               FE_VSTORE_ATTACH_BATCH, &e);
    CHECK(json_array_size(a) == 2);
    CHECK(json_integer_value(json_object_get(json_object_get(json_array_get(a, 0), "attributes"), "x")) == 1);
    CHECK_INT(max_tokens(json_array_get(a, 0)), 500);
    CHECK(json_object_get(json_object_get(json_array_get(a, 1), "attributes"), "x") == NULL);
    CHECK(json_integer_value(json_object_get(json_object_get(json_array_get(a, 1), "attributes"), "y")) == 2);
    CHECK_INT(max_tokens(json_array_get(a, 1)), 300);
    json_decref(a);
    CHECK(!attach("{\"file_ids\":[\"f1\"],\"files\":[{\"file_id\":\"f2\"}]}", FE_VSTORE_ATTACH_BATCH, &e));
    check_refused(&e, "files", "invalid_value");
    CHECK(!attach("{}", FE_VSTORE_ATTACH_BATCH, &e));
    check_refused(&e, "file_ids", "missing_required_parameter");
    CHECK(!attach("{\"file_ids\":[]}", FE_VSTORE_ATTACH_BATCH, &e));
    check_refused(&e, "file_ids", "invalid_value");
    CHECK(!attach("{\"files\":[{\"file_id\":\"f1\",\"attributes\":{\"a\":{}}}]}", FE_VSTORE_ATTACH_BATCH, &e));
    check_refused(&e, "files[0].attributes", "invalid_value");
    CHECK(!attach("{\"files\":[{\"id\":\"f1\"}]}", FE_VSTORE_ATTACH_BATCH, &e));
    check_refused(&e, "files[0].id", "unknown_parameter");
    CHECK(!attach("{\"files\":[{\"file_id\":\"f1\",\"chunking_strategy\":{\"type\":\"static\"}}]}",
                  FE_VSTORE_ATTACH_BATCH, &e));
    check_refused(&e, "files[0].chunking_strategy.static", "missing_required_parameter");
    /* FE_VSTORE_MAX_FILES ids pass, one more does not */
    json_t *body = json_object(), *ids = json_array();
    for (int i = 0; i < FE_VSTORE_MAX_FILES; i++)
        json_array_append_new(ids, json_string("file-x"));
    json_object_set_new(body, "file_ids", ids);
    memset(&e, 0, sizeof e);
    a = fe_vstore_params_attach(body, FE_VSTORE_ATTACH_BATCH, &e);
    CHECK(json_array_size(a) == FE_VSTORE_MAX_FILES);
    json_decref(a);
    json_array_append_new(ids, json_string("file-y"));
    CHECK(fe_vstore_params_attach(body, FE_VSTORE_ATTACH_BATCH, &e) == NULL);
    check_refused(&e, "file_ids", "invalid_value");
    json_decref(body);
}

static json_t *search(const char *text, fe_error_t *e)
{
    json_t *v = J(text);
    memset(e, 0, sizeof *e);
    json_t *out = fe_vstore_params_search(v, "vs_1", e);
    json_decref(v);
    return out;
}

static void test_search(void)
{
    fe_error_t e;
    json_t *q = search("{\"query\":\"cats\"}", &e);
    CHECK(q != NULL);
    CHECK_STR(json_string_value(json_object_get(q, "op")), "vs_search");
    CHECK_STR(json_string_value(json_array_get(json_object_get(q, "vector_store_ids"), 0)), "vs_1");
    CHECK_STR(json_string_value(json_object_get(q, "query")), "cats");
    CHECK_INT(json_integer_value(json_object_get(q, "max_num_results")), 10);
    CHECK(json_is_false(json_object_get(q, "rewrite_query")));
    CHECK(json_object_get(q, "filters") == NULL && json_object_get(q, "ranking_options") == NULL);
    json_decref(q);
    q = search("{\"query\":[\"a\",\"b\"],\"max_num_results\":50,\"rewrite_query\":true,\"filters\":{\"type\":\"eq\","
               "\"key\":\"k\",\"value\":1},\"ranking_options\":{\"ranker\":\"auto\",\"score_threshold\":0.5,"
               "\"hybrid_search\":{\"embedding_weight\":0.7,\"text_weight\":0.3}}}",
               &e);
    CHECK(q != NULL);
    CHECK(json_array_size(json_object_get(q, "query")) == 2);
    CHECK_INT(json_integer_value(json_object_get(q, "max_num_results")), 50);
    CHECK(json_is_true(json_object_get(q, "rewrite_query")));
    CHECK_STR(json_string_value(json_object_get(json_object_get(q, "filters"), "key")), "k");
    CHECK(json_number_value(json_object_get(json_object_get(q, "ranking_options"), "score_threshold")) == 0.5);
    json_decref(q);

    CHECK(!search("{}", &e));
    check_refused(&e, "query", "missing_required_parameter");
    CHECK(!search("{\"query\":\"\"}", &e));
    check_refused(&e, "query", "invalid_value");
    CHECK(!search("{\"query\":[]}", &e));
    check_refused(&e, "query", "invalid_value");
    CHECK(!search("{\"query\":[\"a\",1]}", &e));
    check_refused(&e, "query[1]", "invalid_type");
    CHECK(!search("{\"query\":\"a\",\"max_num_results\":0}", &e));
    check_refused(&e, "max_num_results", "integer_below_min_value");
    CHECK(!search("{\"query\":\"a\",\"max_num_results\":51}", &e));
    check_refused(&e, "max_num_results", "integer_above_max_value");
    CHECK(!search("{\"query\":\"a\",\"ranking_options\":{\"score_threshold\":1.5}}", &e));
    check_refused(&e, "ranking_options.score_threshold", "invalid_value");
    CHECK(!search("{\"query\":\"a\",\"ranking_options\":{\"ranker\":\"best\"}}", &e));
    check_refused(&e, "ranking_options.ranker", "invalid_value");
    CHECK(!search("{\"query\":\"a\",\"ranking_options\":{\"hybrid_search\":{\"embedding_weight\":1}}}", &e));
    check_refused(&e, "ranking_options.hybrid_search.text_weight", "missing_required_parameter");
    CHECK(!search("{\"query\":\"a\",\"ranking_options\":{\"hybrid_search\":{\"embedding_weight\":0,"
                  "\"text_weight\":0}}}",
                  &e));
    check_refused(&e, "ranking_options.hybrid_search", "invalid_value");
    CHECK(!search("{\"query\":\"a\",\"rewrite_query\":\"yes\"}", &e));
    check_refused(&e, "rewrite_query", "invalid_type");
    CHECK(!search("{\"query\":\"a\",\"filters\":{\"type\":\"eq\"}}", &e));
    check_refused(&e, "filters.key", "missing_required_parameter");
    CHECK(!search("{\"query\":\"a\",\"top_k\":3}", &e));
    check_refused(&e, "top_k", "unknown_parameter");
}

int main(void)
{
    test_chunking();
    test_attributes();
    test_expires_after();
    test_filters();
    test_attach();
    test_search();
    return sb_test_finish("vstore_params");
}

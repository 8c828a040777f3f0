/*
 * Unit tests for fe_containers_api's pure half: the POST /v1/containers
 * body checks (OpenAI's parameters, codes and params; what this gateway
 * refuses: a network allowlist, skills) and the plan of the /v1/files
 * files a create copies in (paths, replacement at one path, missing files,
 * a container's limits).
 */
#include <stdlib.h>
#include <string.h>

#include "fe_containers_api.h"
#include "sb_test.h"

static json_t *parse(const char *text)
{
    json_error_t je;
    json_t *v = json_loads(text, 0, &je);
    if (!v)
        fprintf(stderr, "bad test JSON: %s\n", je.text);
    return v;
}

/* Parses text as a create body and expects a 400 with code and param. */
static void check_refused(const char *text, int status, const char *code, const char *param)
{
    json_t *body = parse(text);
    fe_container_spec_t spec;
    fe_error_t err;
    memset(&err, 0, sizeof err);
    CHECK_INT(fe_containers_parse_create(body, &spec, &err), -1);
    CHECK_INT(err.status, status);
    CHECK_STR(err.code, code);
    CHECK_STR(err.param, param);
    CHECK(err.message[0] != '\0');
    json_decref(body);
}

static void test_defaults(void)
{
    json_t *body = parse("{\"name\":\"c1\"}");
    fe_container_spec_t spec;
    fe_error_t err;
    CHECK_INT(fe_containers_parse_create(body, &spec, &err), 0);
    CHECK_STR(spec.name, "c1");
    CHECK_STR(spec.memory_limit, "1g");
    CHECK_INT(spec.minutes, 20);
    CHECK(spec.file_ids == NULL);
    CHECK(spec.network_policy == NULL);
    json_decref(body);
}

static void test_full(void)
{
    json_t *body = parse("{\"name\":\"c2\",\"expires_after\":{\"anchor\":\"last_active_at\",\"minutes\":5},"
                         "\"file_ids\":[\"file-a\",\"file-b\"],\"memory_limit\":\"16g\","
                         "\"network_policy\":{\"type\":\"disabled\"},\"skills\":[]}");
    fe_container_spec_t spec;
    fe_error_t err;
    CHECK_INT(fe_containers_parse_create(body, &spec, &err), 0);
    CHECK_INT(spec.minutes, 5);
    CHECK_STR(spec.memory_limit, "16g");
    CHECK_INT(json_array_size(spec.file_ids), 2);
    CHECK_STR(spec.network_policy, "{\"type\":\"disabled\"}");
    json_decref(body);
    /* Explicit nulls are the defaults; an empty file_ids is none. */
    body = parse("{\"name\":\"c3\",\"expires_after\":null,\"memory_limit\":null,\"network_policy\":null,"
                 "\"file_ids\":[],\"skills\":null}");
    CHECK_INT(fe_containers_parse_create(body, &spec, &err), 0);
    CHECK_INT(spec.minutes, 20);
    CHECK(spec.file_ids == NULL);
    json_decref(body);
}

static void test_refusals(void)
{
    check_refused("{}", 400, "missing_required_parameter", "name");
    check_refused("{\"name\":null}", 400, "missing_required_parameter", "name");
    check_refused("{\"name\":7}", 400, "invalid_type", "name");
    check_refused("{\"name\":\"\"}", 400, "empty_string", "name");
    char longname[400] = "{\"name\":\"";
    memset(longname + strlen(longname), 'x', 257);
    memcpy(longname + 9 + 257, "\"}", 3);
    check_refused(longname, 400, "string_above_max_length", "name");
    check_refused("{\"name\":\"c\",\"color\":1}", 400, "unknown_parameter", "color");
    check_refused("{\"name\":\"c\",\"expires_after\":5}", 400, "invalid_type", "expires_after");
    check_refused("{\"name\":\"c\",\"expires_after\":{\"minutes\":5}}", 400, "missing_required_parameter",
                  "expires_after.anchor");
    check_refused("{\"name\":\"c\",\"expires_after\":{\"anchor\":\"last_active_at\"}}", 400,
                  "missing_required_parameter", "expires_after.minutes");
    check_refused("{\"name\":\"c\",\"expires_after\":{\"anchor\":\"created_at\",\"minutes\":5}}", 400, "invalid_value",
                  "expires_after.anchor");
    check_refused("{\"name\":\"c\",\"expires_after\":{\"anchor\":\"last_active_at\",\"minutes\":0}}", 400,
                  "integer_below_min_value", "expires_after.minutes");
    check_refused("{\"name\":\"c\",\"expires_after\":{\"anchor\":\"last_active_at\",\"minutes\":10081}}", 400,
                  "integer_above_max_value", "expires_after.minutes");
    check_refused("{\"name\":\"c\",\"expires_after\":{\"anchor\":\"last_active_at\",\"minutes\":1.5}}", 400,
                  "invalid_type", "expires_after.minutes");
    check_refused("{\"name\":\"c\",\"expires_after\":{\"anchor\":\"last_active_at\",\"minutes\":5,\"x\":1}}", 400,
                  "unknown_parameter", "expires_after.x");
    check_refused("{\"name\":\"c\",\"file_ids\":\"file-a\"}", 400, "invalid_type", "file_ids");
    check_refused("{\"name\":\"c\",\"file_ids\":[\"file-a\",3]}", 400, "invalid_value", "file_ids[1]");
    check_refused("{\"name\":\"c\",\"file_ids\":[\"\"]}", 400, "invalid_value", "file_ids[0]");
    check_refused("{\"name\":\"c\",\"memory_limit\":\"2g\"}", 400, "invalid_value", "memory_limit");
    check_refused("{\"name\":\"c\",\"memory_limit\":4}", 400, "invalid_type", "memory_limit");
    check_refused("{\"name\":\"c\",\"network_policy\":{\"type\":\"allowlist\",\"allowed_domains\":[\"a.com\"]}}", 400,
                  "unsupported_value", "network_policy.type");
    check_refused("{\"name\":\"c\",\"network_policy\":{\"type\":\"open\"}}", 400, "invalid_value",
                  "network_policy.type");
    check_refused("{\"name\":\"c\",\"network_policy\":{}}", 400, "missing_required_parameter", "network_policy.type");
    check_refused("{\"name\":\"c\",\"network_policy\":{\"type\":\"disabled\",\"x\":1}}", 400, "unknown_parameter",
                  "network_policy.x");
    check_refused("{\"name\":\"c\",\"skills\":[{\"type\":\"skill_reference\",\"skill_id\":\"s\"}]}", 400,
                  "unsupported_value", "skills");
    check_refused("{\"name\":\"c\",\"skills\":{}}", 400, "invalid_type", "skills");

    /* More ids than a container holds. */
    json_t *body = parse("{\"name\":\"c\"}"), *ids = json_array();
    for (int i = 0; i < FE_CONTAINER_MAX_FILES + 1; i++)
        json_array_append_new(ids, json_sprintf("file-%d", i));
    json_object_set_new(body, "file_ids", ids);
    fe_container_spec_t spec;
    fe_error_t err;
    CHECK_INT(fe_containers_parse_create(body, &spec, &err), -1);
    CHECK_STR(err.code, "array_above_max_length");
    json_decref(body);
}

static json_t *meta(const char *filename, long long bytes)
{
    return json_pack("{s:s, s:I}", "filename", filename, "bytes", (json_int_t)bytes);
}

static void test_copy_plan(void)
{
    json_t *found = json_object();
    json_object_set_new(found, "file-a", meta("a.csv", 10));
    json_object_set_new(found, "file-b", meta("dir/b.txt", 20));
    json_object_set_new(found, "file-c", meta("a.csv", 30)); /* the same path as file-a */
    json_object_set_new(found, "file-bad", meta("..", 1));
    json_object_set_new(found, "file-big", meta("big.bin", FE_CONTAINER_MAX_BYTES));

    fe_error_t err;
    json_t *ids = parse("[\"file-a\",\"file-b\",\"file-c\"]");
    json_t *plan = fe_containers_copy_plan(ids, found, &err);
    CHECK(plan != NULL);
    CHECK_INT(json_array_size(plan), 2);
    json_t *first = json_array_get(plan, 0), *second = json_array_get(plan, 1);
    CHECK_STR(json_string_value(json_object_get(first, "path")), "/mnt/data/a.csv");
    CHECK_STR(json_string_value(json_object_get(first, "file_id")), "file-c"); /* the later one wins */
    CHECK_STR(json_string_value(json_object_get(second, "path")), "/mnt/data/b.txt");
    const char *cid = json_string_value(json_object_get(first, "id"));
    CHECK(cid && strncmp(cid, "cfile_", 6) == 0 && strlen(cid) == 6 + 32);
    CHECK(json_object_get(first, "bytes") == NULL);
    CHECK(strcmp(cid, json_string_value(json_object_get(second, "id"))) != 0);
    json_decref(plan);
    json_decref(ids);

    ids = parse("[\"file-a\",\"file-missing\"]");
    CHECK(fe_containers_copy_plan(ids, found, &err) == NULL);
    CHECK_INT(err.status, 404);
    CHECK(strstr(err.message, "file-missing") != NULL);
    json_decref(ids);

    ids = parse("[\"file-bad\"]");
    CHECK(fe_containers_copy_plan(ids, found, &err) == NULL);
    CHECK_INT(err.status, 400);
    json_decref(ids);

    /* Within the byte limit alone, over it with one more byte. */
    ids = parse("[\"file-big\"]");
    plan = fe_containers_copy_plan(ids, found, &err);
    CHECK(plan != NULL);
    json_decref(plan);
    json_decref(ids);
    ids = parse("[\"file-big\",\"file-a\"]");
    CHECK(fe_containers_copy_plan(ids, found, &err) == NULL);
    CHECK_INT(err.status, 400);
    CHECK_STR(err.code, "container_too_large");
    json_decref(ids);

    /* A replaced file's bytes are not counted twice. */
    json_object_set_new(found, "file-big2", meta("big.bin", 5));
    ids = parse("[\"file-big\",\"file-big2\",\"file-a\"]");
    plan = fe_containers_copy_plan(ids, found, &err);
    CHECK(plan != NULL);
    CHECK_INT(json_array_size(plan), 2);
    json_decref(plan);
    json_decref(ids);

    /* More distinct files than a container holds. */
    ids = json_array();
    for (int i = 0; i <= FE_CONTAINER_MAX_FILES; i++) {
        char id[32], name[32];
        snprintf(id, sizeof id, "file-n%d", i);
        snprintf(name, sizeof name, "n%d.txt", i);
        json_object_set_new(found, id, meta(name, 1));
        json_array_append_new(ids, json_string(id));
    }
    CHECK(fe_containers_copy_plan(ids, found, &err) == NULL);
    CHECK_STR(err.code, "container_too_large");
    json_array_remove(ids, 0);
    plan = fe_containers_copy_plan(ids, found, &err);
    CHECK_INT(json_array_size(plan), FE_CONTAINER_MAX_FILES);
    json_decref(plan);
    json_decref(ids);
    json_decref(found);
}

int main(void)
{
    test_defaults();
    test_full();
    test_refusals();
    test_copy_plan();
    return sb_test_finish("containers_api");
}

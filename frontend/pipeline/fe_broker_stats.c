/* fe_broker_stats: several brokers' STATS answers as one. */
#include "fe_broker_stats.h"

#include <string.h>

static json_int_t fe_stat_int(const json_t *o, const char *key)
{
    return json_integer_value(json_object_get(o, key));
}

static void fe_stat_add(json_t *o, const char *key, json_int_t v)
{
    json_object_set_new(o, key, json_integer(fe_stat_int(o, key) + v));
}

static void fe_stat_max(json_t *o, const char *key, json_int_t v)
{
    if (v > fe_stat_int(o, key))
        json_object_set_new(o, key, json_integer(v));
}

/* Healthier circuits rank lower. */
static int fe_circuit_rank(const char *c)
{
    static const char *const order[] = {"closed", "half-open", "probing", "open"};
    for (int i = 0; i < 4; i++)
        if (c && !strcmp(c, order[i]))
            return i;
    return 0;
}

static void fe_stats_merge_model(json_t *by_model, const json_t *m)
{
    const char *name = json_string_value(json_object_get(m, "model"));
    if (!name)
        return;
    json_t *acc = json_object_get(by_model, name);
    if (!acc) {
        json_object_set_new(by_model, name, json_deep_copy(m));
        return;
    }
    fe_stat_add(acc, "queued", fe_stat_int(m, "queued"));
    fe_stat_add(acc, "credits_used", fe_stat_int(m, "credits_used"));
    fe_stat_max(acc, "workers", fe_stat_int(m, "workers"));
    if (fe_stat_int(m, "credits_free") < fe_stat_int(acc, "credits_free"))
        json_object_set_new(acc, "credits_free", json_integer(fe_stat_int(m, "credits_free")));
    const char *c = json_string_value(json_object_get(m, "circuit"));
    if (fe_circuit_rank(c) > fe_circuit_rank(json_string_value(json_object_get(acc, "circuit"))))
        json_object_set_new(acc, "circuit", json_string(c));
}

json_t *fe_broker_stats_merge(const json_t *answers)
{
    json_t *out = json_pack("{s:i, s:i, s:i}", "workers", 0, "jobs_in_flight", 0, "client_circuits_open", 0);
    json_t *by_model = json_object();
    size_t i;
    const json_t *a;
    json_array_foreach (answers, i, a) {
        const json_t *st = json_object_get(a, "stats");
        fe_stat_max(out, "workers", fe_stat_int(st, "workers"));
        fe_stat_add(out, "jobs_in_flight", fe_stat_int(st, "jobs_in_flight"));
        fe_stat_add(out, "client_circuits_open", fe_stat_int(st, "client_circuits_open"));
        size_t k;
        const json_t *m;
        json_array_foreach (json_object_get(st, "models"), k, m)
            fe_stats_merge_model(by_model, m);
    }
    json_t *models = json_array();
    const char *name;
    json_t *m;
    json_object_foreach (by_model, name, m)
        json_array_append(models, m);
    json_decref(by_model);
    json_object_set_new(out, "models", models);
    json_object_set(out, "brokers", (json_t *)answers);
    return out;
}

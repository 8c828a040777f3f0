/*
 * emu_schema_gen: JSON Schema support for the emulated model.
 *
 * Three jobs, all deterministic:
 *   - sb_emu_schema_instance() writes an instance that satisfies a schema: the
 *     structured output of response_format json_schema, and the arguments of a
 *     tool call forced by tool_choice;
 *   - sb_emu_schema_violate() breaks such an instance on purpose, for the
 *     [[emu:schema_violation]] directives that test a gateway's
 *     validate-and-retry;
 *   - sb_emu_schema_strict_check() applies OpenAI's strict-mode rules (every
 *     object closed with additionalProperties:false and listing every property
 *     in required) to tool parameters and response formats with strict:true.
 *
 * The generator covers the JSON Schema subset structured outputs use (see the
 * list in main.c). It is not a solver: "pattern" is served from a small table
 * of common patterns and otherwise ignored, and uniqueItems, not, if/then/else
 * and dependencies are not honoured.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "sb_alloc.h"

#define GEN_DEEP 8       /* past this depth, take the shortest way out (recursive schemas) */
#define GEN_MAX_DEPTH 32 /* hard stop: null */
#define REF_MAX_HOPS 16

struct gen {
    const json_t *root;
    const char *text; /* goes into the first free-form string */
    bool text_used;
};

/* ---- references ------------------------------------------------------------------ */

/* Resolves a local reference ("#", "#/$defs/x", "#/definitions/x", any JSON pointer); NULL if unknown. */
static const json_t *resolve_ref(const json_t *root, const char *ref)
{
    if (ref[0] != '#')
        return NULL;
    const json_t *cur = root;
    const char *p = ref + 1;
    if (*p == '\0')
        return root;
    if (*p != '/')
        return NULL;
    while (*p == '/' && cur) {
        p++;
        size_t len = strcspn(p, "/");
        char tok[256];
        size_t o = 0;
        for (size_t i = 0; i < len && o + 1 < sizeof tok; i++) {
            if (p[i] == '~' && i + 1 < len && (p[i + 1] == '0' || p[i + 1] == '1')) {
                tok[o++] = p[i + 1] == '0' ? '~' : '/';
                i++;
            } else {
                tok[o++] = p[i];
            }
        }
        tok[o] = '\0';
        if (json_is_object(cur)) {
            cur = json_object_get(cur, tok);
        } else if (json_is_array(cur)) {
            char *end = NULL;
            long idx = strtol(tok, &end, 10);
            cur = (*tok && *end == '\0' && idx >= 0) ? json_array_get(cur, (size_t)idx) : NULL;
        } else {
            cur = NULL;
        }
        p += len;
    }
    return cur;
}

/* Follows "$ref" chains (siblings of "$ref" are ignored). Unknown references read as {}. */
static const json_t *deref(const json_t *root, const json_t *s)
{
    for (int hops = 0; hops < REF_MAX_HOPS && json_is_object(s); hops++) {
        const char *ref = json_string_value(json_object_get(s, "$ref"));
        if (!ref)
            return s;
        s = resolve_ref(root, ref);
    }
    return json_is_object(s) || json_is_boolean(s) ? s : NULL;
}

static bool contains_ref(const json_t *s, int depth)
{
    if (depth > 16)
        return true;
    if (json_is_object(s)) {
        if (json_object_get(s, "$ref"))
            return true;
        const char *k;
        json_t *v;
        json_object_foreach ((json_t *)s, k, v) {
            if (contains_ref(v, depth + 1))
                return true;
        }
    } else if (json_is_array(s)) {
        size_t i;
        json_t *v;
        json_array_foreach (s, i, v) {
            if (contains_ref(v, depth + 1))
                return true;
        }
    }
    return false;
}

/* ---- types ------------------------------------------------------------------------ */

static bool type_allows(const json_t *s, const char *t)
{
    /* "number" admits integers too. */
    json_t *type = json_object_get(s, "type");
    if (json_is_string(type)) {
        const char *n = json_string_value(type);
        return !strcmp(n, t) || (!strcmp(t, "integer") && !strcmp(n, "number"));
    }
    size_t i;
    json_t *v;
    json_array_foreach (type, i, v) {
        const char *n = json_string_value(v);
        if (n && (!strcmp(n, t) || (!strcmp(t, "integer") && !strcmp(n, "number"))))
            return true;
    }
    return false;
}

/* The type to generate: the first non-null one (null itself when deep and allowed), else inferred. */
static const char *pick_type(const json_t *s, bool deep)
{
    json_t *type = json_object_get(s, "type");
    if (json_is_string(type))
        return json_string_value(type);
    if (json_is_array(type) && json_array_size(type) > 0) {
        if (deep && type_allows(s, "null"))
            return "null";
        size_t i;
        json_t *v;
        json_array_foreach (type, i, v) {
            if (json_is_string(v) && strcmp(json_string_value(v), "null"))
                return json_string_value(v);
        }
        return "null";
    }
    if (json_object_get(s, "properties") || json_object_get(s, "required") ||
        json_object_get(s, "additionalProperties"))
        return "object";
    if (json_object_get(s, "items") || json_object_get(s, "prefixItems") || json_object_get(s, "minItems") ||
        json_object_get(s, "maxItems"))
        return "array";
    if (json_object_get(s, "minimum") || json_object_get(s, "maximum") || json_object_get(s, "exclusiveMinimum") ||
        json_object_get(s, "exclusiveMaximum") || json_object_get(s, "multipleOf"))
        return "number";
    return "string";
}

/* ---- strings ------------------------------------------------------------------------ */

struct kv {
    const char *key;
    const char *value;
};

static const struct kv formats[] = {
    {"date-time", "2024-01-01T00:00:00Z"},
    {"date", "2024-01-01"},
    {"time", "00:00:00Z"},
    {"duration", "P1D"},
    {"email", "emu@example.com"},
    {"idn-email", "emu@example.com"},
    {"hostname", "example.com"},
    {"idn-hostname", "example.com"},
    {"ipv4", "127.0.0.1"},
    {"ipv6", "::1"},
    {"uuid", "00000000-0000-4000-8000-000000000000"},
    {"uri", "https://example.com/emu"},
    {"uri-reference", "https://example.com/emu"},
    {"iri", "https://example.com/emu"},
    {"iri-reference", "https://example.com/emu"},
};

/* Patterns common in structured-output schemas, each with a matching value. */
static const struct kv patterns[] = {
    {"^[a-z]+$", "emu"},
    {"^[A-Z]+$", "EMU"},
    {"^[a-zA-Z]+$", "emu"},
    {"^[A-Za-z]+$", "emu"},
    {"^[a-z0-9]+$", "emu"},
    {"^[a-zA-Z0-9]+$", "emu"},
    {"^[A-Za-z0-9]+$", "emu"},
    {"^[a-zA-Z0-9_-]+$", "emu"},
    {"^[A-Za-z0-9_-]+$", "emu"},
    {"^[a-z0-9-]+$", "emu"},
    {"^[a-z0-9_]+$", "emu"},
    {"^[a-z][a-z0-9_]*$", "emu"},
    {"^[A-Z]{2}$", "EM"},
    {"^[A-Z]{3}$", "EMU"},
    {"^\\d+$", "0"},
    {"^[0-9]+$", "0"},
    {"^-?\\d+$", "0"},
    {"^\\d{4}-\\d{2}-\\d{2}$", "2024-01-01"},
    {"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", "2024-01-01"},
    {"^\\d{2}:\\d{2}$", "00:00"},
    {"^[0-9]{2}:[0-9]{2}$", "00:00"},
    {"^\\S+@\\S+\\.\\S+$", "emu@example.com"},
    {"^[^@]+@[^@]+\\.[^@]+$", "emu@example.com"},
    {"^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$", "emu@example.com"},
    {"^https?://", "https://example.com/emu"},
    {"^https?://.*$", "https://example.com/emu"},
    {"^https?://\\S+$", "https://example.com/emu"},
    {"^\\+?[0-9]{7,15}$", "+15555550100"},
    {"^\\+?[1-9]\\d{1,14}$", "+15555550100"},
    {"^#[0-9a-fA-F]{6}$", "#000000"},
    {"^#[0-9A-Fa-f]{6}$", "#000000"},
    {"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", "00000000-0000-4000-8000-000000000000"},
    {"^@[a-zA-Z0-9_]+$", "@emu"},
};

static const char *table_lookup(const struct kv *t, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].key, key))
            return t[i].value;
    return NULL;
}

static json_t *gen_string(struct gen *g, const json_t *s)
{
    const char *format = json_string_value(json_object_get(s, "format"));
    const char *pattern = json_string_value(json_object_get(s, "pattern"));
    const char *v = NULL;
    if (format)
        v = table_lookup(formats, sizeof formats / sizeof *formats, format);
    if (!v && pattern)
        v = table_lookup(patterns, sizeof patterns / sizeof *patterns, pattern);
    if (!v) {
        v = g->text_used ? "emu" : g->text;
        g->text_used = true;
    }
    json_t *minl = json_object_get(s, "minLength"), *maxl = json_object_get(s, "maxLength");
    size_t len = sb_emu_utf8_length(v);
    size_t bytes = strlen(v);
    size_t want = len;
    if (json_is_integer(minl) && json_integer_value(minl) > 0 && (size_t)json_integer_value(minl) > want)
        want = (size_t)json_integer_value(minl) > 4096 ? 4096 : (size_t)json_integer_value(minl);
    if (json_is_integer(maxl) && json_integer_value(maxl) >= 0 && (size_t)json_integer_value(maxl) < want)
        want = (size_t)json_integer_value(maxl);
    if (want < len)
        bytes = sb_emu_utf8_prefix(v, want);
    char *out = sb_xmalloc(bytes + (want > len ? want - len : 0) + 1);
    memcpy(out, v, bytes);
    size_t o = bytes;
    for (size_t i = len; i < want; i++)
        out[o++] = 'x';
    out[o] = '\0';
    json_t *j = json_stringn(out, o);
    free(out);
    return j ? j : json_string("emu");
}

/* ---- numbers ------------------------------------------------------------------------ */

static json_t *number_json(double v, bool integer)
{
    if (integer || (v == floor(v) && fabs(v) < 9007199254740992.0))
        return json_integer((json_int_t)v);
    return json_real(v);
}

/* The smallest allowed value >= 0 in the schema's range (the largest one if the range is all negative). */
static json_t *gen_number(const json_t *s, bool integer)
{
    const double big = 9.0e15;
    double lo = -INFINITY, hi = INFINITY;
    bool lo_x = false, hi_x = false; /* exclusive bounds */
    json_t *min = json_object_get(s, "minimum"), *max = json_object_get(s, "maximum");
    json_t *xmin = json_object_get(s, "exclusiveMinimum"), *xmax = json_object_get(s, "exclusiveMaximum");
    if (json_is_number(min)) {
        lo = json_number_value(min);
        lo_x = json_is_true(xmin); /* draft 4 boolean form */
    }
    if (json_is_number(max)) {
        hi = json_number_value(max);
        hi_x = json_is_true(xmax);
    }
    if (json_is_number(xmin) && json_number_value(xmin) >= lo) {
        lo = json_number_value(xmin);
        lo_x = true;
    }
    if (json_is_number(xmax) && json_number_value(xmax) <= hi) {
        hi = json_number_value(xmax);
        hi_x = true;
    }
    lo = fmax(lo, -big);
    hi = fmin(hi, big);
    json_t *mo = json_object_get(s, "multipleOf");
    double m = json_is_number(mo) && json_number_value(mo) > 0 ? json_number_value(mo) : 0;

    double v;
    if (integer || m > 0) {
        /* A grid of allowed values: multiples of unit. A fractional multipleOf on an integer is ignored. */
        double unit = integer ? (m >= 1 && m == floor(m) ? m : 1) : m;
        double first = lo_x ? (floor(lo / unit) + 1) * unit : ceil(lo / unit) * unit;
        double last = hi_x ? (ceil(hi / unit) - 1) * unit : floor(hi / unit) * unit;
        v = first > 0 ? first : 0;
        if (v > last)
            v = last; /* the range is all negative: the allowed value closest to 0 */
    } else if ((lo < 0 || (lo == 0 && !lo_x)) && (hi > 0 || (hi == 0 && !hi_x))) {
        v = 0;
    } else if (lo >= 0) {
        v = lo_x ? lo + 1 : lo;
        if (v > hi || (hi_x && v >= hi))
            v = (lo + hi) / 2;
    } else {
        v = hi_x ? hi - 1 : hi;
        if (v < lo || (lo_x && v <= lo))
            v = (lo + hi) / 2;
    }
    return number_json(v, integer);
}

/* ---- the generator -------------------------------------------------------------------- */

static json_t *gen(struct gen *g, const json_t *schema, int depth);

/* allOf: one schema with the branches' keywords merged in (properties and required unioned). Owned. */
static json_t *merge_all_of(struct gen *g, const json_t *s)
{
    json_t *merged = json_copy((json_t *)s);
    json_object_del(merged, "allOf");
    size_t i;
    json_t *branch;
    json_array_foreach (json_object_get(s, "allOf"), i, branch) {
        const json_t *b = deref(g->root, branch);
        if (!json_is_object(b))
            continue;
        const char *k;
        json_t *v;
        json_object_foreach ((json_t *)b, k, v) {
            json_t *have = json_object_get(merged, k);
            if (!strcmp(k, "properties") && json_is_object(v)) {
                if (!json_is_object(have)) {
                    json_object_set_new(merged, k, json_object());
                    have = json_object_get(merged, k);
                }
                json_object_update_missing(have, v);
            } else if (!strcmp(k, "required") && json_is_array(v)) {
                if (!json_is_array(have)) {
                    json_object_set_new(merged, k, json_array());
                    have = json_object_get(merged, k);
                }
                json_array_extend(have, v);
            } else if (!have && strcmp(k, "allOf")) {
                json_object_set(merged, k, v);
            }
        }
    }
    return merged;
}

static bool in_required(const json_t *required, const char *key)
{
    size_t i;
    json_t *r;
    json_array_foreach (required, i, r) {
        if (json_is_string(r) && !strcmp(json_string_value(r), key))
            return true;
    }
    return false;
}

static json_t *gen_object(struct gen *g, const json_t *s, int depth, bool deep)
{
    json_t *out = json_object();
    json_t *props = json_object_get(s, "properties");
    json_t *required = json_object_get(s, "required");
    const char *k;
    json_t *sub;
    json_object_foreach (props, k, sub) {
        if (deep && !in_required(required, k))
            continue;
        json_object_set_new(out, k, gen(g, sub, depth + 1));
    }
    size_t i;
    json_t *r;
    json_array_foreach (required, i, r) {
        const char *name = json_string_value(r);
        if (name && !json_object_get(out, name))
            json_object_set_new(out, name, gen(g, json_object_get(props, name), depth + 1));
    }
    json_t *minp = json_object_get(s, "minProperties");
    json_t *ap = json_object_get(s, "additionalProperties");
    size_t min_props = json_is_integer(minp) && json_integer_value(minp) > 0 ? (size_t)json_integer_value(minp) : 0;
    for (int n = 1; !json_is_false(ap) && json_object_size(out) < min_props && n < 64; n++) {
        char key[32];
        snprintf(key, sizeof key, "emu_%d", n);
        if (!json_object_get(out, key))
            json_object_set_new(out, key, gen(g, json_is_object(ap) ? ap : NULL, depth + 1));
    }
    return out;
}

static json_t *gen_array(struct gen *g, const json_t *s, int depth, bool deep)
{
    json_t *items = json_object_get(s, "items");
    json_t *prefix = json_object_get(s, "prefixItems");
    if (json_is_array(items)) { /* draft 4 tuple form */
        prefix = items;
        items = json_object_get(s, "additionalItems");
    }
    json_t *minv = json_object_get(s, "minItems"), *maxv = json_object_get(s, "maxItems");
    long long min = json_is_integer(minv) && json_integer_value(minv) > 0 ? json_integer_value(minv) : 0;
    long long count = deep ? min : (min > 1 ? min : 1);
    if (json_is_integer(maxv) && json_integer_value(maxv) >= 0 && count > json_integer_value(maxv))
        count = json_integer_value(maxv);
    if (count > 256)
        count = 256;
    json_t *out = json_array();
    for (long long i = 0; i < count; i++) {
        json_t *is = (size_t)i < json_array_size(prefix) ? json_array_get(prefix, (size_t)i) : items;
        json_array_append_new(out, gen(g, is, depth + 1));
    }
    return out;
}

static json_t *gen(struct gen *g, const json_t *schema, int depth)
{
    if (depth > GEN_MAX_DEPTH)
        return json_null();
    const json_t *s = schema ? deref(g->root, schema) : NULL;
    if (!json_is_object(s)) /* absent, true, false, or an unknown reference: anything goes */
        return gen_string(g, NULL);
    bool deep = depth > GEN_DEEP;

    json_t *c = json_object_get(s, "const");
    if (c)
        return json_deep_copy(c);
    json_t *e = json_object_get(s, "enum");
    if (json_is_array(e) && json_array_size(e) > 0)
        return json_deep_copy(json_array_get(e, 0));

    json_t *any = json_object_get(s, "anyOf");
    if (!json_is_array(any))
        any = json_object_get(s, "oneOf");
    if (json_is_array(any) && json_array_size(any) > 0) {
        json_t *pick = json_array_get(any, 0);
        if (deep) {
            size_t i;
            json_t *b;
            json_array_foreach (any, i, b) {
                const json_t *db = deref(g->root, b);
                if (json_is_object(db) && (type_allows(db, "null") || !contains_ref(db, 0))) {
                    pick = b;
                    break;
                }
            }
        }
        return gen(g, pick, depth + 1);
    }
    if (json_is_array(json_object_get(s, "allOf"))) {
        json_t *merged = merge_all_of(g, s);
        json_t *out = gen(g, merged, depth + 1);
        json_decref(merged);
        return out;
    }

    const char *t = pick_type(s, deep);
    if (!strcmp(t, "object"))
        return gen_object(g, s, depth, deep);
    if (!strcmp(t, "array"))
        return gen_array(g, s, depth, deep);
    if (!strcmp(t, "integer"))
        return gen_number(s, true);
    if (!strcmp(t, "number"))
        return gen_number(s, false);
    if (!strcmp(t, "boolean"))
        return json_true();
    if (!strcmp(t, "null"))
        return json_null();
    return gen_string(g, s);
}

json_t *sb_emu_schema_instance(const json_t *schema, const char *text)
{
    struct gen g = {.root = schema, .text = text ? text : "", .text_used = false};
    return gen(&g, schema, 0);
}

/* ---- violations ------------------------------------------------------------------------ */

json_t *sb_emu_schema_violate(const json_t *schema, json_t *instance)
{
    const json_t *s = deref(schema, schema);
    if (!json_is_object(s)) {
        json_decref(instance);
        return NULL;
    }
    json_t *required = json_object_get(s, "required");
    if (json_is_object(instance)) {
        size_t i;
        json_t *r;
        json_array_foreach (required, i, r) {
            if (json_is_string(r) && json_object_get(instance, json_string_value(r))) {
                json_object_del(instance, json_string_value(r));
                return instance;
            }
        }
        if (json_is_false(json_object_get(s, "additionalProperties"))) {
            json_object_set_new(instance, "emu_violation", json_true());
            return instance;
        }
    }
    json_decref(instance);
    if (json_object_get(s, "type")) {
        if (!type_allows(s, "integer"))
            return json_integer(42);
        if (!type_allows(s, "string"))
            return json_string("emu_violation");
        if (!type_allows(s, "object"))
            return json_object();
        if (!type_allows(s, "array"))
            return json_array();
    }
    json_t *e = json_object_get(s, "enum");
    if (json_object_get(s, "const") || json_is_array(e))
        return json_string("emu_violation_not_allowed_value");
    return NULL;
}

/* ---- strict mode ------------------------------------------------------------------------ */

#define STRICT_MAX_PATH 48

struct strict_path {
    const char *key[STRICT_MAX_PATH]; /* NULL: an index */
    size_t idx[STRICT_MAX_PATH];
    size_t len;
};

/* The path as Python prints a tuple: (), ('a',), ('a', 'b', 0). */
static void path_repr(const struct strict_path *p, char *out, size_t outlen)
{
    size_t o = 0;
    o += (size_t)snprintf(out + o, outlen - o, "(");
    for (size_t i = 0; i < p->len && o < outlen; i++) {
        if (p->key[i])
            o += (size_t)snprintf(out + o, outlen - o, "%s'%s'", i ? ", " : "", p->key[i]);
        else
            o += (size_t)snprintf(out + o, outlen - o, "%s%zu", i ? ", " : "", p->idx[i]);
    }
    if (o < outlen)
        snprintf(out + o, outlen - o, "%s)", p->len == 1 ? "," : "");
}

static int strict_fail(const struct strict_path *p, char *err, size_t errlen, const char *what, const char *key)
{
    char ctx[256];
    path_repr(p, ctx, sizeof ctx);
    if (key)
        snprintf(err, errlen, "In context=%s, %s Missing '%.64s'.", ctx, what, key);
    else
        snprintf(err, errlen, "In context=%s, %s", ctx, what);
    return -EINVAL;
}

static int strict_walk(const json_t *s, struct strict_path *p, char *err, size_t errlen);

static int strict_child(const json_t *s, struct strict_path *p, const char *key, const char *key2, size_t idx,
                        bool use_idx, char *err, size_t errlen)
{
    if (p->len + 2 > STRICT_MAX_PATH)
        return 0;
    size_t saved = p->len;
    p->key[p->len++] = key;
    if (key2) {
        p->key[p->len++] = key2;
    } else if (use_idx) {
        p->key[p->len] = NULL;
        p->idx[p->len++] = idx;
    }
    int rc = strict_walk(s, p, err, errlen);
    p->len = saved;
    return rc;
}

static int strict_walk(const json_t *s, struct strict_path *p, char *err, size_t errlen)
{
    if (!json_is_object(s))
        return 0;
    json_t *props = json_object_get(s, "properties");
    bool is_object = type_allows(s, "object") || (!json_object_get(s, "type") && json_is_object(props));
    if (is_object) {
        if (!json_is_false(json_object_get(s, "additionalProperties")))
            return strict_fail(p, err, errlen, "'additionalProperties' is required to be supplied and to be false.",
                               NULL);
        json_t *required = json_object_get(s, "required");
        const char *k;
        json_t *v;
        json_object_foreach (props, k, v) {
            if (!in_required(required, k))
                return strict_fail(p, err, errlen,
                                   "'required' is required to be supplied and to be an array including every key in "
                                   "properties.",
                                   k);
        }
    }
    const char *k;
    json_t *v;
    json_object_foreach (props, k, v) {
        if (strict_child(v, p, "properties", k, 0, false, err, errlen) < 0)
            return -EINVAL;
    }
    json_t *items = json_object_get(s, "items");
    if (json_is_object(items) && strict_child(items, p, "items", NULL, 0, false, err, errlen) < 0)
        return -EINVAL;
    static const char *const lists[] = {"anyOf", "oneOf", "allOf", "prefixItems"};
    for (size_t l = 0; l < sizeof lists / sizeof *lists; l++) {
        size_t i;
        json_array_foreach (json_object_get(s, lists[l]), i, v) {
            if (strict_child(v, p, lists[l], NULL, i, true, err, errlen) < 0)
                return -EINVAL;
        }
    }
    static const char *const defs[] = {"$defs", "definitions"};
    for (size_t d = 0; d < 2; d++) {
        json_object_foreach (json_object_get(s, defs[d]), k, v) {
            if (strict_child(v, p, defs[d], k, 0, false, err, errlen) < 0)
                return -EINVAL;
        }
    }
    return 0;
}

int sb_emu_schema_strict_check(const json_t *schema, char *err, size_t errlen)
{
    struct strict_path p = {.len = 0};
    return strict_walk(schema, &p, err, errlen);
}

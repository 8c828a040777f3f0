/*
 * sb_jschema: compile once, validate many times.
 *
 * sb_jschema_new() deep-copies the schema, walks every subschema once to
 * type-check the keywords it knows, resolves each $ref to a pointer into the
 * copy (map: ref string -> json_t *), and compiles each pattern with
 * sb_regex (map: pattern string -> sb_regex_t *; ECMA-262 translation,
 * limits and the glibc workarounds live there). It then rejects $ref cycles
 * that consume no input (a cycle through $ref/anyOf alone), which would
 * otherwise recurse forever. Validation walks the schema JSON directly and
 * only looks things up.
 */
#include "sb_jschema.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_map.h"
#include "sb_regex.h"

#define SB_JSCHEMA_PATH_MAX 512
/* Length of the reason kept from a failed anyOf branch. */
#define SB_JSCHEMA_BRANCH_ERR 256

struct sb_jschema {
    json_t *root;    /* owned deep copy of the schema */
    sb_map_t *regex; /* pattern -> sb_regex_t * (owned) */
    sb_map_t *refs;  /* $ref string -> json_t * inside root (borrowed) */
};

static void sb_jschema_errf(char *err, size_t errsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sb_jschema_errf(char *err, size_t errsz, const char *fmt, ...)
{
    if (!err || !errsz)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsz, fmt, ap);
    va_end(ap);
}

/* ---- small helpers ---------------------------------------------------- */

/* A path for messages, built by push/pop around recursion; silently
 * truncated if it does not fit. */
struct sb_jschema_path {
    char buf[SB_JSCHEMA_PATH_MAX];
    size_t len;
};

static size_t sb_jschema_path_push(struct sb_jschema_path *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static size_t sb_jschema_path_push(struct sb_jschema_path *p, const char *fmt, ...)
{
    size_t old = p->len;
    size_t room = sizeof p->buf - old;
    if (room > 1) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(p->buf + old, room, fmt, ap);
        va_end(ap);
        p->len = (n < 0) ? old : ((size_t)n >= room ? sizeof p->buf - 1 : old + (size_t)n);
        p->buf[p->len] = '\0';
    }
    return old;
}

static void sb_jschema_path_pop(struct sb_jschema_path *p, size_t old)
{
    p->len = old;
    p->buf[old] = '\0';
}

/* Appends an instance path step for object key k: ".name" for identifiers,
 * otherwise ["k"] with JSON escaping. */
static size_t sb_jschema_path_key(struct sb_jschema_path *p, const char *k)
{
    int ident = (*k != '\0') && !(*k >= '0' && *k <= '9');
    for (const char *c = k; *c && ident; c++)
        ident = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_';
    if (ident)
        return sb_jschema_path_push(p, ".%s", k);
    size_t old = sb_jschema_path_push(p, "[\"");
    for (const unsigned char *c = (const unsigned char *)k; *c; c++) {
        if (*c == '"' || *c == '\\')
            sb_jschema_path_push(p, "\\%c", *c);
        else if (*c < 0x20)
            sb_jschema_path_push(p, "\\u%04x", *c);
        else
            sb_jschema_path_push(p, "%c", *c);
    }
    sb_jschema_path_push(p, "\"]");
    return old;
}

/* Appends a JSON pointer step ("/k" with ~0 ~1) for schema locations. */
static size_t sb_jschema_path_ptr(struct sb_jschema_path *p, const char *k)
{
    size_t old = sb_jschema_path_push(p, "/");
    for (const char *c = k; *c; c++) {
        if (*c == '~')
            sb_jschema_path_push(p, "~0");
        else if (*c == '/')
            sb_jschema_path_push(p, "~1");
        else
            sb_jschema_path_push(p, "%c", *c);
    }
    return old;
}

/* The path as shown in a message: a long one keeps its head and tail, so the
 * reason after it is never cut off by the message size. */
static const char *sb_jschema_path_show(const struct sb_jschema_path *p, char out[160])
{
    if (p->len < 160)
        return p->buf;
    snprintf(out, 160, "%.60s...%s", p->buf, p->buf + p->len - 90);
    return out;
}

static void sb_jschema_ptr_key(const void *ptr, char key[32])
{
    snprintf(key, 32, "%p", ptr);
}

/* ---- numbers ---------------------------------------------------------- */

static int sb_jschema_is_integral(double d)
{
    if (!isfinite(d))
        return 0;
    if (d >= 9007199254740992.0 || d <= -9007199254740992.0)
        return 1; /* every double beyond 2^53 is an integer */
    return (double)(long long)d == d;
}

/* Exact comparison of an integer with a double (no rounding of i). */
static int sb_jschema_cmp_int_real(json_int_t i, double d)
{
    if (d >= 9223372036854775808.0)
        return -1;
    if (d < -9223372036854775808.0)
        return 1;
    json_int_t t = (json_int_t)d; /* truncates toward zero; exact here */
    if ((double)t > d)
        t--; /* now floor(d) */
    if (i < t)
        return -1;
    if (i > t)
        return 1;
    return d > (double)t ? -1 : 0;
}

/* Numeric comparison across integer/real: 1 == 1.0. Both must be numbers. */
static int sb_jschema_num_cmp(const json_t *a, const json_t *b)
{
    if (json_is_integer(a) && json_is_integer(b)) {
        json_int_t x = json_integer_value(a), y = json_integer_value(b);
        return x < y ? -1 : x > y;
    }
    if (json_is_real(a) && json_is_real(b)) {
        double x = json_real_value(a), y = json_real_value(b);
        return x < y ? -1 : x > y;
    }
    if (json_is_integer(a))
        return sb_jschema_cmp_int_real(json_integer_value(a), json_real_value(b));
    return -sb_jschema_cmp_int_real(json_integer_value(b), json_real_value(a));
}

/* Shortest "%g" form that reads back as the same double. */
static void sb_jschema_fmt_num(const json_t *n, char *buf, size_t sz)
{
    if (json_is_integer(n)) {
        snprintf(buf, sz, "%" JSON_INTEGER_FORMAT, json_integer_value(n));
        return;
    }
    double d = json_real_value(n);
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sz, "%.*g", prec, d);
        if (strtod(buf, NULL) == d)
            return;
    }
}

/* JSON equality for enum/const: numbers by value, objects by key set. */
static int sb_jschema_equal(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b))
        return sb_jschema_num_cmp(a, b) == 0;
    if (json_typeof(a) != json_typeof(b))
        return 0;
    switch (json_typeof(a)) {
    case JSON_STRING:
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    case JSON_ARRAY: {
        size_t n = json_array_size(a);
        if (n != json_array_size(b))
            return 0;
        for (size_t i = 0; i < n; i++)
            if (!sb_jschema_equal(json_array_get(a, i), json_array_get(b, i)))
                return 0;
        return 1;
    }
    case JSON_OBJECT: {
        if (json_object_size(a) != json_object_size(b))
            return 0;
        const char *k;
        json_t *v;
        json_object_foreach ((json_t *)a, k, v) {
            const json_t *w = json_object_get(b, k);
            if (!w || !sb_jschema_equal(v, w))
                return 0;
        }
        return 1;
    }
    default:
        return 1; /* true, false, null: same type is equal */
    }
}

/* A non-negative integer keyword value (1.0 counts), clamped to UINT64_MAX. */
static int sb_jschema_count(const json_t *v, uint64_t *out)
{
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        *out = (uint64_t)json_integer_value(v);
        return 0;
    }
    if (json_is_real(v) && json_real_value(v) >= 0 && sb_jschema_is_integral(json_real_value(v))) {
        double d = json_real_value(v);
        *out = d >= 18446744073709551615.0 ? UINT64_MAX : (uint64_t)d;
        return 0;
    }
    return -1;
}

/* Hex digit value, or -1 (for %-escapes in $ref). */
static int sb_jschema_hex(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
        return (c | 0x20) - 'a' + 10;
    return -1;
}

/* ---- compile ---------------------------------------------------------- */

struct sb_jschema_work {
    const json_t *target;
    const char *ref; /* inside s->root */
};

struct sb_jschema_cc {
    sb_jschema_t *s;
    sb_map_t *seen; /* "%p" of schema objects already walked (and, later, cycle state) */
    struct sb_jschema_work *work;
    size_t nwork, capwork;
    struct sb_jschema_path path; /* JSON pointer of the schema being walked */
    char *err;
    size_t errsz;
};

static int sb_jschema_cc_fail(struct sb_jschema_cc *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sb_jschema_cc_fail(struct sb_jschema_cc *c, const char *fmt, ...)
{
    if (c->err && c->errsz) {
        char show[160];
        int n = snprintf(c->err, c->errsz, "schema at #%s: ", sb_jschema_path_show(&c->path, show));
        if (n >= 0 && (size_t)n < c->errsz) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->err + n, c->errsz - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -EINVAL;
}

static const char *const sb_jschema_types[] = {"null", "boolean", "object", "array", "number", "string", "integer"};

static int sb_jschema_type_known(const json_t *t)
{
    if (!json_is_string(t))
        return 0;
    for (size_t i = 0; i < sizeof sb_jschema_types / sizeof *sb_jschema_types; i++)
        if (!strcmp(json_string_value(t), sb_jschema_types[i]))
            return 1;
    return 0;
}

/* Resolves a local $ref ("#", "" or "#/json/pointer", %-encoded) in root. */
static int sb_jschema_resolve(struct sb_jschema_cc *c, const char *ref, const json_t **out)
{
    if (ref[0] != '#' && ref[0] != '\0')
        return sb_jschema_cc_fail(c, "$ref \"%s\": only local references (\"#...\") are supported", ref);
    const char *frag = ref[0] ? ref + 1 : ref;
    if (*frag == '\0') {
        *out = c->s->root;
        return 0;
    }
    if (*frag != '/')
        return sb_jschema_cc_fail(c, "$ref \"%s\": anchors / $id fragments are not supported", ref);
    /* percent-decode the fragment */
    size_t n = strlen(frag);
    char *dec = sb_xmalloc(n + 1), *d = dec;
    int rc = 0;
    for (const char *p = frag; *p; p++) {
        if (*p == '%') {
            int h1 = sb_jschema_hex(p[1]), h2 = h1 < 0 ? -1 : sb_jschema_hex(p[2]);
            if (h2 < 0 || (h1 == 0 && h2 == 0)) {
                rc = sb_jschema_cc_fail(c, "$ref \"%s\": bad %%-escape", ref);
                goto done;
            }
            *d++ = (char)(h1 * 16 + h2);
            p += 2;
        } else {
            *d++ = *p;
        }
    }
    *d = '\0';
    const json_t *cur = c->s->root;
    for (char *tok = dec + 1;;) {
        char *slash = strchr(tok, '/');
        if (slash)
            *slash = '\0';
        /* unescape ~1 -> '/', ~0 -> '~' in place */
        char *w = tok;
        for (char *r = tok; *r; r++) {
            if (*r == '~') {
                if (r[1] != '0' && r[1] != '1') {
                    rc = sb_jschema_cc_fail(c, "$ref \"%s\": bad ~-escape in JSON pointer", ref);
                    goto done;
                }
                *w++ = r[1] == '0' ? '~' : '/';
                r++;
            } else {
                *w++ = *r;
            }
        }
        *w = '\0';
        const json_t *next = NULL;
        if (json_is_object(cur)) {
            next = json_object_get(cur, tok);
        } else if (json_is_array(cur) && tok[0] >= '0' && tok[0] <= '9' && (tok[0] != '0' || !tok[1])) {
            char *e;
            unsigned long long i = strtoull(tok, &e, 10);
            if (!*e && i < json_array_size(cur))
                next = json_array_get(cur, (size_t)i);
        }
        if (!next) {
            rc = sb_jschema_cc_fail(c, "$ref \"%s\": target not found", ref);
            goto done;
        }
        cur = next;
        if (!slash)
            break;
        tok = slash + 1;
    }
    *out = cur;
done:
    free(dec);
    return rc;
}

static int sb_jschema_cc_pattern(struct sb_jschema_cc *c, const json_t *v)
{
    const char *pat = json_string_value(v);
    if (strlen(pat) != json_string_length(v))
        return sb_jschema_cc_fail(c, "'pattern' contains a NUL character");
    if (sb_map_get(c->s->regex, pat))
        return 0;
    char msg[256];
    sb_regex_t *re = sb_regex_compile(pat, msg, sizeof msg);
    if (!re)
        return sb_jschema_cc_fail(c, "%s", msg);
    sb_map_put(c->s->regex, pat, re);
    return 0;
}

static int sb_jschema_cc_ref(struct sb_jschema_cc *c, const char *ref)
{
    if (sb_map_get(c->s->refs, ref))
        return 0;
    const json_t *target = NULL;
    int rc = sb_jschema_resolve(c, ref, &target);
    if (rc)
        return rc;
    sb_map_put(c->s->refs, ref, (void *)target);
    if (c->nwork == c->capwork) {
        c->capwork = c->capwork ? c->capwork * 2 : 8;
        c->work = sb_xrealloc(c->work, c->capwork * sizeof *c->work);
    }
    c->work[c->nwork++] = (struct sb_jschema_work){target, ref};
    return 0;
}

static int sb_jschema_cc_schema(struct sb_jschema_cc *c, const json_t *sch, int depth);

/* Walks a keyword whose value is an object of schemas ($defs, properties). */
static int sb_jschema_cc_schema_map(struct sb_jschema_cc *c, const json_t *sch, const char *kw, int depth)
{
    const json_t *m = json_object_get(sch, kw);
    if (!m)
        return 0;
    if (!json_is_object(m))
        return sb_jschema_cc_fail(c, "'%s' must be an object", kw);
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)m, k, v) {
        size_t old = sb_jschema_path_ptr(&c->path, kw);
        sb_jschema_path_ptr(&c->path, k);
        int rc = sb_jschema_cc_schema(c, v, depth + 1);
        sb_jschema_path_pop(&c->path, old);
        if (rc)
            return rc;
    }
    return 0;
}

static int sb_jschema_cc_sub(struct sb_jschema_cc *c, const json_t *v, const char *kw, int depth)
{
    size_t old = sb_jschema_path_ptr(&c->path, kw);
    int rc = sb_jschema_cc_schema(c, v, depth + 1);
    sb_jschema_path_pop(&c->path, old);
    return rc;
}

/* Checks one schema object's keywords and walks its subschemas. */
static int sb_jschema_cc_schema(struct sb_jschema_cc *c, const json_t *sch, int depth)
{
    if (json_is_boolean(sch))
        return 0;
    if (!json_is_object(sch))
        return sb_jschema_cc_fail(c, "a schema must be an object or a boolean");
    if (depth > SB_JSCHEMA_MAX_DEPTH)
        return sb_jschema_cc_fail(c, "schema nested deeper than %d levels", SB_JSCHEMA_MAX_DEPTH);
    char key[32];
    sb_jschema_ptr_key(sch, key);
    if (sb_map_get(c->seen, key))
        return 0;
    sb_map_put(c->seen, key, (void *)1);

    const json_t *v;
    int rc;
    if ((v = json_object_get(sch, "type"))) {
        int ok = sb_jschema_type_known(v);
        if (json_is_array(v)) {
            ok = 1;
            for (size_t i = 0; i < json_array_size(v); i++)
                ok &= sb_jschema_type_known(json_array_get(v, i));
        }
        if (!ok)
            return sb_jschema_cc_fail(c, "'type' must be a type name or an array of type names");
    }
    if ((v = json_object_get(sch, "required"))) {
        int ok = json_is_array(v);
        for (size_t i = 0; ok && i < json_array_size(v); i++)
            ok = json_is_string(json_array_get(v, i));
        if (!ok)
            return sb_jschema_cc_fail(c, "'required' must be an array of strings");
    }
    if ((v = json_object_get(sch, "enum")) && !json_is_array(v))
        return sb_jschema_cc_fail(c, "'enum' must be an array");
    static const char *const counts[] = {"minLength", "maxLength", "minItems", "maxItems"};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        uint64_t n;
        if ((v = json_object_get(sch, counts[i])) && sb_jschema_count(v, &n))
            return sb_jschema_cc_fail(c, "'%s' must be a non-negative integer", counts[i]);
    }
    static const char *const bounds[] = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
    for (size_t i = 0; i < sizeof bounds / sizeof *bounds; i++) {
        if ((v = json_object_get(sch, bounds[i])) && !json_is_number(v))
            return sb_jschema_cc_fail(c, "'%s' must be a number%s", bounds[i],
                                      json_is_boolean(v) ? " (the draft-4 boolean form is not supported)" : "");
    }
    if ((v = json_object_get(sch, "pattern"))) {
        if (!json_is_string(v))
            return sb_jschema_cc_fail(c, "'pattern' must be a string");
        if ((rc = sb_jschema_cc_pattern(c, v)))
            return rc;
    }
    if ((v = json_object_get(sch, "$id")) && depth > 0 && (!json_is_string(v) || json_string_value(v)[0] != '#'))
        return sb_jschema_cc_fail(c, "'$id' in a subschema (a base URI change) is not supported");
    if (json_object_get(sch, "$dynamicRef") || json_object_get(sch, "$recursiveRef"))
        return sb_jschema_cc_fail(c, "$dynamicRef / $recursiveRef are not supported");
    if ((v = json_object_get(sch, "$ref"))) {
        if (!json_is_string(v))
            return sb_jschema_cc_fail(c, "'$ref' must be a string");
        if ((rc = sb_jschema_cc_ref(c, json_string_value(v))))
            return rc;
    }
    if ((rc = sb_jschema_cc_schema_map(c, sch, "properties", depth)) ||
        (rc = sb_jschema_cc_schema_map(c, sch, "$defs", depth)) ||
        (rc = sb_jschema_cc_schema_map(c, sch, "definitions", depth)))
        return rc;
    if ((v = json_object_get(sch, "additionalProperties")) &&
        (rc = sb_jschema_cc_sub(c, v, "additionalProperties", depth)))
        return rc;
    if ((v = json_object_get(sch, "items"))) {
        if (json_is_array(v))
            return sb_jschema_cc_fail(c, "array-form 'items' (tuple validation) is not supported");
        if ((rc = sb_jschema_cc_sub(c, v, "items", depth)))
            return rc;
    }
    if ((v = json_object_get(sch, "anyOf"))) {
        if (!json_is_array(v) || json_array_size(v) == 0)
            return sb_jschema_cc_fail(c, "'anyOf' must be a non-empty array");
        for (size_t i = 0; i < json_array_size(v); i++) {
            size_t old = sb_jschema_path_push(&c->path, "/anyOf/%zu", i);
            rc = sb_jschema_cc_schema(c, json_array_get(v, i), depth + 1);
            sb_jschema_path_pop(&c->path, old);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Depth-first search over the edges that do not consume input ($ref and
 * anyOf); reaching a schema that is still on the stack is a cycle. State in
 * c->seen under "c%p": 1 on the stack, 2 done. */
static int sb_jschema_cc_cycle(struct sb_jschema_cc *c, const json_t *sch, const char *via, int depth)
{
    if (!json_is_object(sch))
        return 0;
    char key[40];
    key[0] = 'c';
    sb_jschema_ptr_key(sch, key + 1);
    intptr_t st = (intptr_t)sb_map_get(c->seen, key);
    if (st == 2)
        return 0;
    if (st == 1)
        return sb_jschema_cc_fail(c, "$ref cycle: \"%s\" leads back to a schema being applied, without consuming input",
                                  via);
    if (depth > SB_JSCHEMA_MAX_DEPTH)
        return sb_jschema_cc_fail(c, "chain of $ref/anyOf deeper than %d levels", SB_JSCHEMA_MAX_DEPTH);
    sb_map_put(c->seen, key, (void *)1);
    const json_t *v = json_object_get(sch, "$ref");
    int rc = 0;
    if (json_is_string(v))
        rc = sb_jschema_cc_cycle(c, sb_map_get(c->s->refs, json_string_value(v)), json_string_value(v), depth + 1);
    v = json_object_get(sch, "anyOf");
    for (size_t i = 0; !rc && i < json_array_size(v); i++)
        rc = sb_jschema_cc_cycle(c, json_array_get(v, i), "anyOf", depth + 1);
    sb_map_put(c->seen, key, (void *)2);
    return rc;
}

static void sb_jschema_free_regex(const char *key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    sb_regex_t *re = value;
    sb_regex_destroy(&re);
}

sb_jschema_t *sb_jschema_new(const json_t *schema, char *err, size_t errsz)
{
    sb_jschema_errf(err, errsz, "%s", "");
    if (!schema) {
        sb_jschema_errf(err, errsz, "no schema");
        return NULL;
    }
    sb_jschema_t *s = sb_xcalloc(1, sizeof *s);
    s->root = json_deep_copy(schema);
    s->regex = sb_map_new();
    s->refs = sb_map_new();
    struct sb_jschema_cc c = {.s = s, .seen = sb_map_new(), .err = err, .errsz = errsz};
    if (!s->root) {
        sb_jschema_errf(err, errsz, "cannot copy the schema");
        goto fail;
    }
    if (sb_jschema_cc_schema(&c, s->root, 0))
        goto fail;
    /* Walk $ref targets not reached through the tree (e.g. "#/x/y" into an
     * unknown keyword); each may add more. */
    for (size_t i = 0; i < c.nwork; i++) {
        sb_jschema_path_pop(&c.path, 0);
        sb_jschema_path_push(&c.path, "%s", c.work[i].ref[0] == '#' ? c.work[i].ref + 1 : "");
        if (sb_jschema_cc_schema(&c, c.work[i].target, 1))
            goto fail;
    }
    for (size_t i = 0; i < c.nwork; i++) {
        sb_jschema_path_pop(&c.path, 0);
        sb_jschema_path_push(&c.path, "%s", c.work[i].ref[0] == '#' ? c.work[i].ref + 1 : "");
        if (sb_jschema_cc_cycle(&c, c.work[i].target, c.work[i].ref, 0))
            goto fail;
    }
    sb_map_destroy(&c.seen);
    free(c.work);
    return s;
fail:
    sb_map_destroy(&c.seen);
    free(c.work);
    sb_jschema_destroy(&s);
    return NULL;
}

void sb_jschema_destroy(sb_jschema_t **ps)
{
    if (!ps || !*ps)
        return;
    sb_jschema_t *s = *ps;
    if (s->regex) {
        sb_map_foreach(s->regex, sb_jschema_free_regex, NULL);
        sb_map_destroy(&s->regex);
    }
    sb_map_destroy(&s->refs);
    json_decref(s->root);
    free(s);
    *ps = NULL;
}

/* ---- validate --------------------------------------------------------- */

struct sb_jschema_vc {
    const sb_jschema_t *s;
    struct sb_jschema_path path; /* instance path, "$..." */
    char *err;
    size_t errsz;
    size_t fail_len; /* path length where the reported failure happened */
    long steps;
};

static int sb_jschema_vc_fail(struct sb_jschema_vc *v, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int sb_jschema_vc_fail(struct sb_jschema_vc *v, int rc, const char *fmt, ...)
{
    v->fail_len = v->path.len;
    if (v->err && v->errsz) {
        char show[160];
        int n = snprintf(v->err, v->errsz, "%s: ", sb_jschema_path_show(&v->path, show));
        if (n >= 0 && (size_t)n < v->errsz) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(v->err + n, v->errsz - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

static const char *sb_jschema_type_of(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    default:
        return "null";
    }
}

static int sb_jschema_type_match(const char *t, const json_t *j)
{
    switch (t[0]) {
    case 'n':
        return t[1] == 'u' && t[2] == 'l' ? json_is_null(j) : json_is_number(j);
    case 'b':
        return json_is_boolean(j);
    case 'o':
        return json_is_object(j);
    case 'a':
        return json_is_array(j);
    case 's':
        return json_is_string(j);
    case 'i':
        return json_is_integer(j) || (json_is_real(j) && sb_jschema_is_integral(json_real_value(j)));
    default:
        return 0;
    }
}

static int sb_jschema_v_schema(struct sb_jschema_vc *v, const json_t *sch, const json_t *inst, int depth);

static int sb_jschema_v_type(struct sb_jschema_vc *v, const json_t *t, const json_t *inst)
{
    if (json_is_string(t)) {
        if (sb_jschema_type_match(json_string_value(t), inst))
            return 0;
        return sb_jschema_vc_fail(v, -1, "expected %s, got %s", json_string_value(t), sb_jschema_type_of(inst));
    }
    size_t n = json_array_size(t);
    for (size_t i = 0; i < n; i++)
        if (sb_jschema_type_match(json_string_value(json_array_get(t, i)), inst))
            return 0;
    char want[128] = "";
    size_t len = 0;
    for (size_t i = 0; i < n && len < sizeof want; i++) {
        const char *sep = i == 0 ? "" : i + 1 == n ? " or " : ", ";
        int w = snprintf(want + len, sizeof want - len, "%s%s", sep, json_string_value(json_array_get(t, i)));
        len += w > 0 ? (size_t)w : 0;
    }
    return sb_jschema_vc_fail(v, -1, "expected %s, got %s", n ? want : "no type at all", sb_jschema_type_of(inst));
}

static int sb_jschema_v_string(struct sb_jschema_vc *v, const json_t *sch, const json_t *inst)
{
    const char *str = json_string_value(inst);
    size_t bytes = json_string_length(inst);
    const json_t *k;
    uint64_t lim;
    if (json_object_get(sch, "minLength") || json_object_get(sch, "maxLength")) {
        uint64_t cps = 0;
        for (size_t i = 0; i < bytes; i++)
            cps += ((unsigned char)str[i] & 0xC0) != 0x80;
        if ((k = json_object_get(sch, "minLength")) && sb_jschema_count(k, &lim) == 0 && cps < lim)
            return sb_jschema_vc_fail(v, -1, "string length %llu is less than minLength %llu", (unsigned long long)cps,
                                      (unsigned long long)lim);
        if ((k = json_object_get(sch, "maxLength")) && sb_jschema_count(k, &lim) == 0 && cps > lim)
            return sb_jschema_vc_fail(v, -1, "string length %llu is greater than maxLength %llu",
                                      (unsigned long long)cps, (unsigned long long)lim);
    }
    if ((k = json_object_get(sch, "pattern"))) {
        const sb_regex_t *re = sb_map_get(v->s->regex, json_string_value(k));
        int rc = sb_regex_search(re, str, bytes);
        if (rc == -E2BIG)
            return sb_jschema_vc_fail(v, -E2BIG, "string too long to match against pattern \"%s\"",
                                      json_string_value(k));
        if (rc == 0)
            return sb_jschema_vc_fail(v, -1, "string does not match pattern \"%s\"", json_string_value(k));
        if (rc < 0)
            return sb_jschema_vc_fail(v, -ENOMEM, "regexec failed for pattern \"%s\"", json_string_value(k));
    }
    return 0;
}

static int sb_jschema_v_number(struct sb_jschema_vc *v, const json_t *sch, const json_t *inst)
{
    static const struct {
        const char *kw;
        int bad_lo, bad_hi; /* cmp(instance, limit) in [bad_lo, bad_hi] fails */
        const char *what;
    } rules[] = {
        {"minimum", -1, -1, "less than minimum"},
        {"exclusiveMinimum", -1, 0, "not greater than exclusiveMinimum"},
        {"maximum", 1, 1, "greater than maximum"},
        {"exclusiveMaximum", 0, 1, "not less than exclusiveMaximum"},
    };
    for (size_t i = 0; i < sizeof rules / sizeof *rules; i++) {
        const json_t *k = json_object_get(sch, rules[i].kw);
        if (!k)
            continue;
        int cmp = sb_jschema_num_cmp(inst, k);
        if (cmp >= rules[i].bad_lo && cmp <= rules[i].bad_hi) {
            char a[40], b[40];
            sb_jschema_fmt_num(inst, a, sizeof a);
            sb_jschema_fmt_num(k, b, sizeof b);
            return sb_jschema_vc_fail(v, -1, "%s is %s %s", a, rules[i].what, b);
        }
    }
    return 0;
}

static int sb_jschema_v_array(struct sb_jschema_vc *v, const json_t *sch, const json_t *inst, int depth)
{
    size_t n = json_array_size(inst);
    const json_t *k;
    uint64_t lim;
    if ((k = json_object_get(sch, "minItems")) && sb_jschema_count(k, &lim) == 0 && n < lim)
        return sb_jschema_vc_fail(v, -1, "array has %zu items, fewer than minItems %llu", n, (unsigned long long)lim);
    if ((k = json_object_get(sch, "maxItems")) && sb_jschema_count(k, &lim) == 0 && n > lim)
        return sb_jschema_vc_fail(v, -1, "array has %zu items, more than maxItems %llu", n, (unsigned long long)lim);
    if ((k = json_object_get(sch, "items"))) {
        for (size_t i = 0; i < n; i++) {
            size_t old = sb_jschema_path_push(&v->path, "[%zu]", i);
            int rc = sb_jschema_v_schema(v, k, json_array_get(inst, i), depth + 1);
            sb_jschema_path_pop(&v->path, old);
            if (rc)
                return rc;
        }
    }
    return 0;
}

static int sb_jschema_v_object(struct sb_jschema_vc *v, const json_t *sch, const json_t *inst, int depth)
{
    const json_t *req = json_object_get(sch, "required");
    for (size_t i = 0; i < json_array_size(req); i++) {
        const char *name = json_string_value(json_array_get(req, i));
        if (!json_object_get(inst, name))
            return sb_jschema_vc_fail(v, -1, "missing required property \"%s\"", name);
    }
    const json_t *props = json_object_get(sch, "properties");
    const json_t *addl = json_object_get(sch, "additionalProperties");
    if (!props && !addl)
        return 0;
    const char *k;
    json_t *val;
    json_object_foreach ((json_t *)inst, k, val) {
        const json_t *sub = props ? json_object_get(props, k) : NULL;
        if (!sub && !addl)
            continue;
        size_t old = sb_jschema_path_key(&v->path, k);
        int rc;
        if (!sub && json_is_false(addl))
            rc = sb_jschema_vc_fail(v, -1, "additional property not allowed (additionalProperties is false)");
        else
            rc = sb_jschema_v_schema(v, sub ? sub : addl, val, depth + 1);
        sb_jschema_path_pop(&v->path, old);
        if (rc)
            return rc;
    }
    return 0;
}

/* The first branch that passes wins. On failure the reason reported is the
 * one from the branch that failed deepest in the instance, which is usually
 * the branch the value was meant for. */
static int sb_jschema_v_anyof(struct sb_jschema_vc *v, const json_t *any, const json_t *inst, int depth)
{
    char best[SB_JSCHEMA_BRANCH_ERR] = "", tmp[SB_JSCHEMA_BRANCH_ERR];
    size_t best_len = 0, best_i = 0;
    char *err = v->err;
    size_t errsz = v->errsz;
    int rc = -1;
    for (size_t i = 0; i < json_array_size(any); i++) {
        tmp[0] = '\0';
        v->err = err ? tmp : NULL;
        v->errsz = err ? sizeof tmp : 0;
        v->fail_len = 0;
        rc = sb_jschema_v_schema(v, json_array_get(any, i), inst, depth + 1);
        if (rc != -1) {
            v->err = err;
            v->errsz = errsz;
            if (rc != 0)
                sb_jschema_errf(err, errsz, "%s", tmp); /* a limit was hit: report it as is */
            return rc;
        }
        if (i == 0 || v->fail_len > best_len) {
            memcpy(best, tmp, sizeof best);
            best_len = v->fail_len;
            best_i = i;
        }
    }
    v->err = err;
    v->errsz = errsz;
    rc = sb_jschema_vc_fail(v, -1, "value matches no anyOf branch (branch %zu: %s)", best_i, best);
    if (best_len > v->fail_len)
        v->fail_len = best_len;
    return rc;
}

/* Applies one schema to one instance; 0 valid, -1 invalid, or a negative
 * errno when a limit was hit. Keywords are checked type first so the most
 * basic mismatch is the one reported. */
static int sb_jschema_v_schema(struct sb_jschema_vc *v, const json_t *sch, const json_t *inst, int depth)
{
    if (++v->steps > SB_JSCHEMA_MAX_STEPS)
        return sb_jschema_vc_fail(v, -E2BIG, "validation needed more than %ld steps", (long)SB_JSCHEMA_MAX_STEPS);
    if (depth > SB_JSCHEMA_MAX_DEPTH)
        return sb_jschema_vc_fail(v, -ELOOP, "nesting deeper than %d schema levels", SB_JSCHEMA_MAX_DEPTH);
    if (json_is_true(sch))
        return 0;
    if (!json_is_object(sch))
        return sb_jschema_vc_fail(v, -1, "no value is allowed here (schema is false)");
    const json_t *k;
    int rc = 0;
    if ((k = json_object_get(sch, "type")) && (rc = sb_jschema_v_type(v, k, inst)))
        return rc;
    if ((k = json_object_get(sch, "enum"))) {
        size_t i, n = json_array_size(k);
        for (i = 0; i < n && !sb_jschema_equal(json_array_get(k, i), inst); i++)
            ;
        if (i == n)
            return sb_jschema_vc_fail(v, -1, "value is not one of the enum values");
    }
    if ((k = json_object_get(sch, "const")) && !sb_jschema_equal(k, inst))
        return sb_jschema_vc_fail(v, -1, "value does not equal the const value");
    switch (json_typeof(inst)) {
    case JSON_STRING:
        rc = sb_jschema_v_string(v, sch, inst);
        break;
    case JSON_INTEGER:
    case JSON_REAL:
        rc = sb_jschema_v_number(v, sch, inst);
        break;
    case JSON_ARRAY:
        rc = sb_jschema_v_array(v, sch, inst, depth);
        break;
    case JSON_OBJECT:
        rc = sb_jschema_v_object(v, sch, inst, depth);
        break;
    default:
        break;
    }
    if (rc)
        return rc;
    if ((k = json_object_get(sch, "anyOf")) && (rc = sb_jschema_v_anyof(v, k, inst, depth)))
        return rc;
    if ((k = json_object_get(sch, "$ref")))
        rc = sb_jschema_v_schema(v, sb_map_get(v->s->refs, json_string_value(k)), inst, depth + 1);
    return rc;
}

int sb_jschema_validate(const sb_jschema_t *s, const json_t *instance, char *err, size_t errsz)
{
    if (!s || !instance) {
        sb_jschema_errf(err, errsz, "no schema or no instance");
        return -EINVAL;
    }
    struct sb_jschema_vc v = {.s = s, .err = err, .errsz = errsz};
    sb_jschema_path_push(&v.path, "$");
    sb_jschema_errf(err, errsz, "%s", "");
    return sb_jschema_v_schema(&v, s->root, instance, 0);
}

/* ---- OpenAI strict mode ----------------------------------------------- */

/* The context is rendered like the Python tuple OpenAI prints:
 * (), ('items',), ('properties', 'name'), ('anyOf', 0). */
struct sb_jschema_sc {
    char ctx[SB_JSCHEMA_PATH_MAX]; /* "'properties', 'name'" */
    size_t len;
    int n;
    char *err;
    size_t errsz;
};

static size_t sb_jschema_sc_push(struct sb_jschema_sc *c, const char *key, long idx)
{
    size_t old = c->len;
    struct sb_jschema_path p;
    memcpy(p.buf, c->ctx, c->len + 1);
    p.len = c->len;
    if (c->n)
        sb_jschema_path_push(&p, ", ");
    if (!key) {
        sb_jschema_path_push(&p, "%ld", idx);
    } else {
        /* Python repr: single quotes unless the text has ' and no " */
        char q = strchr(key, '\'') && !strchr(key, '"') ? '"' : '\'';
        sb_jschema_path_push(&p, "%c", q);
        for (const unsigned char *k = (const unsigned char *)key; *k; k++) {
            if (*k == q || *k == '\\')
                sb_jschema_path_push(&p, "\\%c", *k);
            else if (*k == '\n')
                sb_jschema_path_push(&p, "\\n");
            else if (*k < 0x20)
                sb_jschema_path_push(&p, "\\x%02x", *k);
            else
                sb_jschema_path_push(&p, "%c", *k);
        }
        sb_jschema_path_push(&p, "%c", q);
    }
    memcpy(c->ctx, p.buf, p.len + 1);
    c->len = p.len;
    c->n++;
    return old;
}

static void sb_jschema_sc_pop(struct sb_jschema_sc *c, size_t old)
{
    c->len = old;
    c->ctx[old] = '\0';
    c->n--;
}

static int sb_jschema_sc_fail(struct sb_jschema_sc *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sb_jschema_sc_fail(struct sb_jschema_sc *c, const char *fmt, ...)
{
    if (c->err && c->errsz) {
        int n = snprintf(c->err, c->errsz, "Invalid schema: In context=(%s%s), ", c->ctx, c->n == 1 ? "," : "");
        if (n >= 0 && (size_t)n < c->errsz) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(c->err + n, c->errsz - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return -EINVAL;
}

static int sb_jschema_sc_schema(struct sb_jschema_sc *c, const json_t *sch, int depth);

static int sb_jschema_sc_sub(struct sb_jschema_sc *c, const json_t *sch, const char *k1, const char *k2, long idx,
                             int depth)
{
    size_t old = sb_jschema_sc_push(c, k1, 0);
    if (k2 || idx >= 0)
        sb_jschema_sc_push(c, k2, idx);
    int rc = sb_jschema_sc_schema(c, sch, depth + 1);
    if (k2 || idx >= 0)
        c->n--;
    sb_jschema_sc_pop(c, old);
    return rc;
}

static int sb_jschema_sc_has_type(const json_t *t, const char *name)
{
    if (json_is_string(t))
        return !strcmp(json_string_value(t), name);
    for (size_t i = 0; i < json_array_size(t); i++)
        if (json_is_string(json_array_get(t, i)) && !strcmp(json_string_value(json_array_get(t, i)), name))
            return 1;
    return 0;
}

static int sb_jschema_sc_schema(struct sb_jschema_sc *c, const json_t *sch, int depth)
{
    static const char *const allowed[] = {"type",
                                          "properties",
                                          "required",
                                          "additionalProperties",
                                          "enum",
                                          "const",
                                          "anyOf",
                                          "items",
                                          "$ref",
                                          "$defs",
                                          "definitions",
                                          "minLength",
                                          "maxLength",
                                          "pattern",
                                          "minimum",
                                          "maximum",
                                          "exclusiveMinimum",
                                          "exclusiveMaximum",
                                          "minItems",
                                          "maxItems",
                                          "title",
                                          "description",
                                          "$comment",
                                          "$schema"};
    if (!json_is_object(sch))
        return sb_jschema_sc_fail(c, "schema must be a JSON Schema object, got %s.",
                                  json_is_boolean(sch) ? "a boolean schema" : sb_jschema_type_of(sch));
    if (depth > SB_JSCHEMA_MAX_DEPTH)
        return sb_jschema_sc_fail(c, "schema is nested deeper than %d levels.", SB_JSCHEMA_MAX_DEPTH);
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)sch, k, v) {
        size_t i = 0;
        while (i < sizeof allowed / sizeof *allowed && strcmp(k, allowed[i]))
            i++;
        if (i == sizeof allowed / sizeof *allowed)
            return sb_jschema_sc_fail(c, "'%s' is not permitted.", k);
    }
    const json_t *type = json_object_get(sch, "type");
    if (!type && !json_object_get(sch, "anyOf") && !json_object_get(sch, "$ref") && !json_object_get(sch, "enum") &&
        !json_object_get(sch, "const"))
        return sb_jschema_sc_fail(c, "schema must have a 'type' key.");
    const json_t *props = json_object_get(sch, "properties");
    if (sb_jschema_sc_has_type(type, "object") || props) {
        const json_t *addl = json_object_get(sch, "additionalProperties");
        if (!json_is_false(addl))
            return sb_jschema_sc_fail(c, "'additionalProperties' is required to be supplied and to be false.");
        const json_t *req = json_object_get(sch, "required");
        if (props && !json_is_object(props))
            return sb_jschema_sc_fail(c, "'properties' must be an object.");
        if (req && !json_is_array(req))
            return sb_jschema_sc_fail(c, "'required' must be an array.");
        json_object_foreach ((json_t *)props, k, v) {
            size_t i = 0;
            while (i < json_array_size(req) &&
                   !(json_is_string(json_array_get(req, i)) && !strcmp(json_string_value(json_array_get(req, i)), k)))
                i++;
            if (i == json_array_size(req))
                return sb_jschema_sc_fail(c,
                                          "'required' is required to be supplied and to be an array including every "
                                          "key in properties. Missing '%s'.",
                                          k);
        }
        for (size_t i = 0; i < json_array_size(req); i++) {
            const json_t *r = json_array_get(req, i);
            if (!json_is_string(r) || !json_object_get(props, json_string_value(r)))
                return sb_jschema_sc_fail(c, "Extra required key '%s' supplied.",
                                          json_is_string(r) ? json_string_value(r) : "?");
        }
    }
    int rc;
    json_object_foreach ((json_t *)props, k, v) {
        if ((rc = sb_jschema_sc_sub(c, v, "properties", k, -1, depth)))
            return rc;
    }
    static const char *const maps[] = {"$defs", "definitions"};
    for (size_t m = 0; m < 2; m++) {
        const json_t *defs = json_object_get(sch, maps[m]);
        if (defs && !json_is_object(defs))
            return sb_jschema_sc_fail(c, "'%s' must be an object.", maps[m]);
        json_object_foreach ((json_t *)defs, k, v) {
            if ((rc = sb_jschema_sc_sub(c, v, maps[m], k, -1, depth)))
                return rc;
        }
    }
    if ((v = json_object_get(sch, "items")) && (rc = sb_jschema_sc_sub(c, v, "items", NULL, -1, depth)))
        return rc;
    const json_t *any = json_object_get(sch, "anyOf");
    for (size_t i = 0; i < json_array_size(any); i++)
        if ((rc = sb_jschema_sc_sub(c, json_array_get(any, i), "anyOf", NULL, (long)i, depth)))
            return rc;
    return 0;
}

int sb_jschema_check_strict(const json_t *schema, char *err, size_t errsz)
{
    struct sb_jschema_sc c = {.err = err, .errsz = errsz};
    sb_jschema_errf(err, errsz, "%s", "");
    const json_t *type = json_is_object(schema) ? json_object_get(schema, "type") : NULL;
    if (!json_is_string(type) || strcmp(json_string_value(type), "object")) {
        sb_jschema_errf(err, errsz,
                        "Invalid schema: schema must be a JSON Schema of 'type: \"object\"', got 'type: \"%s\"'.",
                        json_is_string(type) ? json_string_value(type) : "None");
        return -EINVAL;
    }
    int rc = sb_jschema_sc_schema(&c, schema, 0);
    if (rc)
        return rc;
    char msg[256];
    sb_jschema_t *s = sb_jschema_new(schema, msg, sizeof msg);
    if (!s) {
        sb_jschema_errf(err, errsz, "Invalid schema: %s", msg);
        return -EINVAL;
    }
    sb_jschema_destroy(&s);
    return 0;
}

/* In place on a private copy; the walk mirrors sb_jschema_sc_schema() so
 * that what it closes is exactly what the checker would ask about. */
static void sb_jschema_close_walk(json_t *sch, int depth)
{
    if (!json_is_object(sch) || depth > SB_JSCHEMA_MAX_DEPTH)
        return;
    json_t *props = json_object_get(sch, "properties");
    if ((sb_jschema_sc_has_type(json_object_get(sch, "type"), "object") || props) &&
        !json_object_get(sch, "additionalProperties"))
        json_object_set_new(sch, "additionalProperties", json_false());
    const char *k;
    json_t *v;
    if (json_is_object(props))
        json_object_foreach (props, k, v)
            sb_jschema_close_walk(v, depth + 1);
    static const char *const maps[] = {"$defs", "definitions"};
    for (size_t m = 0; m < 2; m++) {
        json_t *defs = json_object_get(sch, maps[m]);
        if (json_is_object(defs))
            json_object_foreach (defs, k, v)
                sb_jschema_close_walk(v, depth + 1);
    }
    sb_jschema_close_walk(json_object_get(sch, "items"), depth + 1);
    json_t *any = json_object_get(sch, "anyOf");
    for (size_t i = 0; i < json_array_size(any); i++)
        sb_jschema_close_walk(json_array_get(any, i), depth + 1);
}

json_t *sb_jschema_close_objects(const json_t *schema)
{
    json_t *copy = schema ? json_deep_copy(schema) : NULL;
    if (copy)
        sb_jschema_close_walk(copy, 0);
    return copy;
}

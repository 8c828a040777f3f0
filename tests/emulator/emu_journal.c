/*
 * emu_journal: a bounded ring of the last N requests received on /v1/..., as
 * JSON objects, so integration tests can assert on exactly what the gateway
 * sent upstream (headers, body). Served by GET /_emu/requests. The entry of a
 * request (sb_emu_journal_entry) is made here too, so that the rule "a
 * credential never reaches the journal" lives beside the journal.
 */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "sb_alloc.h"
#include "sb_time.h"

struct sb_emu_journal {
    json_t **ring; /* owned references */
    size_t cap;
    size_t head; /* index of the oldest entry */
    size_t count;
};

struct sb_emu_journal *sb_emu_journal_new(size_t capacity)
{
    if (capacity == 0)
        return NULL;
    struct sb_emu_journal *j = sb_xcalloc(1, sizeof *j);
    j->ring = sb_xcalloc(capacity, sizeof *j->ring);
    j->cap = capacity;
    return j;
}

void sb_emu_journal_clear(struct sb_emu_journal *j)
{
    for (size_t i = 0; i < j->count; i++) {
        size_t idx = (j->head + i) % j->cap;
        json_decref(j->ring[idx]);
        j->ring[idx] = NULL;
    }
    j->head = 0;
    j->count = 0;
}

void sb_emu_journal_destroy(struct sb_emu_journal **jp)
{
    if (!jp || !*jp)
        return;
    sb_emu_journal_clear(*jp);
    free((*jp)->ring);
    free(*jp);
    *jp = NULL;
}

void sb_emu_journal_add(struct sb_emu_journal *j, json_t *entry)
{
    if (!entry)
        return;
    if (j->count == j->cap) {
        json_decref(j->ring[j->head]);
        j->ring[j->head] = entry;
        j->head = (j->head + 1) % j->cap;
        return;
    }
    j->ring[(j->head + j->count) % j->cap] = entry;
    j->count++;
}

json_t *sb_emu_journal_list(const struct sb_emu_journal *j, size_t limit)
{
    json_t *arr = json_array();
    size_t n = (limit == 0 || limit > j->count) ? j->count : limit;
    for (size_t i = j->count - n; i < j->count; i++)
        json_array_append(arr, j->ring[(j->head + i) % j->cap]);
    return arr;
}

size_t sb_emu_journal_size(const struct sb_emu_journal *j)
{
    return j->count;
}

/*
 * Headers that carry a credential, in the order a provider would read them
 * (Anthropic takes x-api-key over a bearer token): the journal keeps their
 * names, never their values.
 */
static const char *const credential_headers[] = {
    "x-api-key", "x-goog-api-key", "authorization", "api-key", "proxy-authorization", "x-subscription-token", NULL};

/* Rank of a credential header (lower wins), or -1 if lower is not one. */
static int credential_rank(const char *lower)
{
    for (int i = 0; credential_headers[i]; i++)
        if (!strcmp(lower, credential_headers[i]))
            return i;
    return -1;
}

/* The query string with the value of "key" (Gemini's ?key=) replaced; owned, or NULL. */
static char *redact_query(const char *query, bool *had_key)
{
    *had_key = false;
    if (!query)
        return NULL;
    char *out = sb_xstrdup("");
    const char *p = query;
    while (*p) {
        size_t len = strcspn(p, "&");
        bool is_key = len >= 4 && !strncmp(p, "key=", 4);
        char *joined = is_key ? sb_xasprintf("%s%skey=[redacted]", out, *out ? "&" : "")
                              : sb_xasprintf("%s%s%.*s", out, *out ? "&" : "", (int)len, p);
        *had_key = *had_key || is_key;
        free(out);
        out = joined;
        p += len;
        if (*p == '&')
            p++;
    }
    return out;
}

json_t *sb_emu_journal_entry(const struct sb_emu_call *call, uint64_t seq)
{
    json_t *headers = json_object();
    int auth_rank = -1;
    struct evkeyvalq *in = evhttp_request_get_input_headers(call->req);
    for (struct evkeyval *kv = in->tqh_first; kv; kv = kv->next.tqe_next) {
        char *lower = sb_xstrdup(kv->key);
        for (char *p = lower; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p - 'A' + 'a');
        const char *value = kv->value;
        int rank = credential_rank(lower);
        if (rank >= 0) {
            value = "[redacted]";
            if (auth_rank < 0 || rank < auth_rank)
                auth_rank = rank;
        }
        json_t *prev = json_object_get(headers, lower);
        if (prev && json_is_string(prev)) {
            char *joined = sb_xasprintf("%s, %s", json_string_value(prev), value);
            json_object_set_new(headers, lower, json_string(joined));
            free(joined);
        } else {
            json_object_set_new(headers, lower, json_string(value));
        }
        free(lower);
    }
    bool query_key = false;
    char *q = redact_query(call->query, &query_key);
    const char *auth_header = auth_rank >= 0 ? credential_headers[auth_rank] : query_key ? "?key" : NULL;
    json_t *e =
        json_pack("{s:I, s:I, s:s, s:s, s:s?, s:o, s:s?, s:O?, s:I}", "seq", (json_int_t)seq, "time",
                  (json_int_t)sb_now_ms(), "method", call->method, "path", call->path, "query", q, "headers", headers,
                  "auth_header", auth_header, "body", call->json, "body_bytes", (json_int_t)call->body_len);
    free(q);
    return e;
}

/*
 * provider_util: what the adapters call back while they translate. Building
 * an upstream request (headers, a JSON body), copying typed fields from the
 * canonical request, the canonical error events (a malformed job, an
 * unsupported parameter, an upstream HTTP status, a context overflow), the
 * route's credential and URL, data URLs, and the scrubbing of upstream error
 * text: no credential of the operator leaves the worker in an event or a log
 * line.
 *
 * It is kept apart from provider.c (the registry and the per-job parser) so
 * that the adapters depend on this file and provider.c depends on the
 * adapters, never both ways: the registry names every adapter's vtable, and
 * nothing here names one.
 */
#include "provider_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sb_alloc.h"
#include "sb_dataurl.h"
#include "sb_event.h"
#include "sb_job.h"
#include "sb_log.h"
#include "sb_scrub.h"
#include "sb_trace.h"

void sb_provider_request_clear(sb_provider_request_t *req)
{
    free(req->url);
    for (size_t i = 0; i < req->n_headers; i++)
        free(req->headers[i]);
    free(req->headers);
    free(req->body);
    memset(req, 0, sizeof *req);
}

void sb_provider_request_add_header(sb_provider_request_t *req, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *h = NULL;
    int n = vasprintf(&h, fmt, ap);
    va_end(ap);
    if (n < 0)
        abort(); /* out of memory: the one policy (sb_alloc.h) */
    req->headers = sb_xrealloc(req->headers, (req->n_headers + 1) * sizeof *req->headers);
    req->headers[req->n_headers++] = h;
}

int sb_provider_request_set_json(sb_provider_request_t *req, const json_t *body, bool stream, json_t **err)
{
    req->body = json_dumps(body, JSON_COMPACT);
    if (!req->body) {
        *err = sb_event_error(500, SB_ERR_SERVER, NULL, "could not encode the upstream request");
        return -1;
    }
    req->body_len = strlen(req->body);
    sb_provider_request_add_header(req, "Content-Type: application/json");
    sb_provider_request_add_header(req, "Accept: %s", stream ? "text/event-stream" : "application/json");
    return 0;
}

/*
 * Scrubbing.
 */

/* Every credential this worker has used or can see in its environment; one
 * per process, like the worker's one loop. Made on first use. */
static sb_scrub_t *sb_provider_scrubber;
/* The job whose upstream response an adapter is translating right now (the
 * parser sets it around each adapter call), or NULL. */
static const json_t *sb_provider_current_job;

static sb_scrub_t *sb_provider_scrub_table(void)
{
    if (!sb_provider_scrubber) {
        sb_provider_scrubber = sb_scrub_new();
        sb_scrub_add_env(sb_provider_scrubber);
    }
    return sb_provider_scrubber;
}

/* The job's own credential (borrowed from environ), or NULL. */
static const char *sb_provider_job_secret(const json_t *job)
{
    const char *ref = job ? sb_job_route_str(job, "credential_ref") : NULL;
    return ref && *ref ? getenv(ref) : NULL;
}

const json_t *sb_provider_set_current_job(const json_t *job)
{
    const json_t *outer = sb_provider_current_job;
    sb_provider_current_job = job;
    return outer;
}

char *sb_provider_scrub(const json_t *job, const char *text)
{
    if (!job)
        job = sb_provider_current_job;
    return sb_scrub_text(sb_provider_scrub_table(), text, sb_provider_job_secret(job));
}

void sb_provider_scrub_events(const json_t *job, json_t *events, size_t from)
{
    const char *extra = sb_provider_job_secret(job);
    sb_scrub_t *table = sb_provider_scrub_table();
    for (size_t i = from; i < json_array_size(events); i++) {
        json_t *ev = json_array_get(events, i);
        if (sb_event_type_of(ev) != SB_EV_ERROR)
            continue;
        const char *key;
        json_t *v;
        json_object_foreach (ev, key, v) {
            const char *text = json_string_value(v);
            if (!text || !sb_scrub_found(table, text, extra))
                continue;
            char *clean = sb_scrub_text(table, text, extra);
            json_string_set(v, clean);
            free(clean);
        }
    }
}

/*
 * Shared helpers.
 */

void sb_provider_count_result(const json_t *job, int64_t count, int64_t upstream_us, json_t *events)
{
    json_array_append_new(events, sb_event_usage(count, 0, 0));
    json_array_append_new(
        events, sb_event_completed("completed", NULL, json_string_value(json_object_get(job, "model")), upstream_us));
}

/* Longest upstream message kept in an error event; longer ones are cut at a
 * UTF-8 boundary (a misbehaving upstream must not bloat every error). */
#define SB_PROVIDER_MAX_MESSAGE 1024

static char *sb_provider_clip(const char *s)
{
    size_t n = strlen(s);
    if (n <= SB_PROVIDER_MAX_MESSAGE)
        return sb_xstrdup(s);
    n = SB_PROVIDER_MAX_MESSAGE;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return sb_xstrndup(s, n);
}

/*
 * The upstream refused the route's credential (HTTP 401/403, or its in-band
 * equivalent). That is the operator's credential failing, not the client's:
 * the client gets a 502 with a generic message (an "Incorrect API key" 401
 * would make its SDK blame its own key), and the operator's log gets the
 * upstream's own words, scrubbed. Not retried: retry.c takes any 4xx as final.
 */
static json_t *sb_provider_auth_failed(long status, const char *message)
{
    const json_t *job = sb_provider_current_job;
    char *cause = sb_provider_scrub(job, message && *message ? message : "(no message)");
    char *clipped = sb_provider_clip(cause);
    const char *provider = job ? sb_job_route_str(job, "provider") : NULL;
    const char *base = job ? sb_job_route_str(job, "base_url") : NULL;
    const char *model = job ? sb_job_route_str(job, "upstream_model") : NULL;
    const char *rid = job ? json_string_value(json_object_get(job, "request_id")) : NULL;
    char *line =
        sb_xasprintf("upstream authentication failed: route %s %s %s (credential %s), request %s: "
                     "HTTP %ld: %s",
                     provider ? provider : "-", base ? base : "-", model ? model : "-",
                     job && sb_job_route_str(job, "credential_ref") ? sb_job_route_str(job, "credential_ref") : "-",
                     rid ? rid : "-", status, clipped);
    char *clean = sb_provider_scrub(job, line); /* the route's URL could carry a key too */
    sb_warn("%s", clean);
    free(clean);
    free(line);
    free(clipped);
    free(cause);
    return sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream authentication failed");
}

json_t *sb_provider_error_for_status(long status, const char *message, bool quota, long retry_after)
{
    int out = 502;
    const char *kind = SB_ERR_UPSTREAM;
    bool keep = true; /* pass the upstream's message through */
    switch (status) {
    case 400:
    case 422: /* some compatible servers say 422 for validation errors */
        out = 400;
        kind = SB_ERR_INVALID_REQUEST;
        break;
    case 401:
    case 403:
        return sb_provider_auth_failed(status, message);
    case 404:
        out = 404;
        kind = SB_ERR_NOT_FOUND;
        break;
    case 408:
        out = 504;
        kind = SB_ERR_TIMEOUT;
        break;
    case 413:
        out = 413;
        kind = SB_ERR_TOO_LARGE;
        break;
    case 429:
        out = 429;
        kind = quota ? SB_ERR_QUOTA : SB_ERR_RATE_LIMIT;
        break;
    case 500:
        out = 500;
        kind = SB_ERR_UPSTREAM;
        break;
    case 502:
        out = 502;
        kind = SB_ERR_UPSTREAM;
        break;
    case 503:
        out = 503;
        kind = SB_ERR_OVERLOADED;
        break;
    default:
        /* Other 5xx, 3xx (redirects are not followed) and unexpected 4xx are
         * the upstream misbehaving, not the client: a gateway error. */
        out = 502;
        kind = SB_ERR_UPSTREAM;
        keep = false;
        break;
    }
    char *msg = NULL;
    if (keep && message && *message) {
        /* Scrubbed whole, then clipped: a clip must not split a secret. */
        char *clean = sb_provider_scrub(NULL, message);
        msg = sb_provider_clip(clean);
        free(clean);
    } else {
        msg = sb_xasprintf("upstream returned HTTP %ld", status);
    }
    json_t *ev = sb_event_error(out, kind, NULL, msg);
    free(msg);
    if (ev && retry_after >= 0)
        json_object_set_new(ev, "retry_after", json_integer(retry_after));
    return ev;
}

/* Whether an upstream error says the input is longer than the model's
 * context window (the rules are listed at sb_provider_upstream_error). */
static bool sb_provider_is_context_error(long status, const json_t *root, const char *message)
{
    const json_t *e = json_object_get(root, "error");
    if (!json_is_object(e))
        e = root; /* the error object itself, or an old vLLM body with its fields at the top */
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *type = json_string_value(json_object_get(e, "type"));
    const char *gstatus = json_string_value(json_object_get(e, "status"));
    if ((code && !strcmp(code, "context_length_exceeded")) || (type && !strcmp(type, "exceed_context_size_error")))
        return true;
    if (status != 400 || !message)
        return false;
    if (strcasestr(message, "context length"))
        return true;
    static const char anthropic[] = "prompt is too long";
    if (type && !strcmp(type, "invalid_request_error") && !strncmp(message, anthropic, sizeof anthropic - 1))
        return true;
    return gstatus && !strcmp(gstatus, "INVALID_ARGUMENT") && strstr(message, "exceeds the maximum number of tokens");
}

json_t *sb_provider_upstream_error(long status, const json_t *root, const char *message, bool quota, long retry_after)
{
    if (!sb_provider_is_context_error(status, root, message))
        return sb_provider_error_for_status(status, message, quota, retry_after);
    static const char generic[] = "the input is longer than the model's context window";
    char *clean = sb_provider_scrub(NULL, message && *message ? message : generic);
    char *clipped = sb_provider_clip(clean);
    free(clean);
    char *msg = sb_xasprintf("context length exceeded: %s", clipped);
    json_t *ev = sb_event_error(400, SB_ERR_INVALID_REQUEST, "context_length_exceeded", msg);
    free(msg);
    free(clipped);
    return ev;
}

int sb_provider_credential(const json_t *job, const char **value, json_t **err)
{
    *value = NULL;
    *err = NULL;
    const char *ref = sb_job_route_str(job, "credential_ref");
    if (!ref || !*ref)
        return 0;
    const char *v = getenv(ref);
    /* A CR or LF would split the Authorization header: refuse it. */
    if (!v || !*v || strpbrk(v, "\r\n")) {
        char *msg = sb_xasprintf("upstream credential '%s' is not configured", ref);
        *err = sb_event_error(502, SB_ERR_UPSTREAM, NULL, msg);
        free(msg);
        return -ENOENT;
    }
    /* Known from now on, whatever later quotes it. */
    sb_scrub_add(sb_provider_scrub_table(), v);
    *value = v;
    return 0;
}

char *sb_provider_url(const json_t *job, const char *path)
{
    const char *base = sb_job_route_str(job, "base_url");
    if (!base || !*base)
        return NULL;
    size_t n = strlen(base);
    while (n > 0 && base[n - 1] == '/')
        n--;
    return sb_xasprintf("%.*s%s", (int)n, base, path);
}

const char *sb_provider_error_message(const json_t *body)
{
    const json_t *e = json_object_get(body, "error");
    if (json_is_string(e))
        return json_string_value(e);
    const char *m = json_string_value(json_object_get(e, "message"));
    if (m)
        return m;
    return json_string_value(json_object_get(body, "message"));
}

int sb_provider_data_url(const char *url, char *mime, size_t mimesz, const char **payload)
{
    sb_dataurl_t u;
    if (sb_dataurl_parse(url, &u) < 0 || !u.base64)
        return -EINVAL; /* an adapter sends on only base64 payloads */
    /* A type too long to be one we care about reads as "" (no type). */
    (void)sb_dataurl_mime(&u, mime, mimesz);
    *payload = u.payload;
    return 0;
}

static json_t *sb_provider_verror(const char *code, const char *prefix, const char *fmt, va_list ap)
{
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        abort(); /* out of memory */
    char *full = sb_xasprintf("%s%s", prefix, msg);
    json_t *ev = sb_event_error(400, SB_ERR_INVALID_REQUEST, code, full);
    free(full);
    free(msg);
    return ev;
}

json_t *sb_provider_invalid(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *ev = sb_provider_verror(NULL, "", fmt, ap);
    va_end(ap);
    return ev;
}

json_t *sb_provider_unsupported(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *ev = sb_provider_verror("unsupported_parameter", "unsupported parameter: ", fmt, ap);
    va_end(ap);
    return ev;
}

int sb_provider_copy(json_t *dst, const json_t *request, const char *from, const char *to, enum sb_provider_want want,
                     json_t **err)
{
    const json_t *v = json_object_get(request, from);
    if (!v || json_is_null(v))
        return 0;
    bool ok = false;
    switch (want) {
    case SB_PROVIDER_NUMBER:
        ok = json_is_number(v);
        break;
    case SB_PROVIDER_INTEGER:
        ok = json_is_integer(v);
        break;
    case SB_PROVIDER_STRING:
        ok = json_is_string(v);
        break;
    case SB_PROVIDER_BOOL:
        ok = json_is_boolean(v);
        break;
    case SB_PROVIDER_STOP:
    case SB_PROVIDER_STOP_LIST:
        ok = json_is_string(v) || json_is_array(v);
        break;
    }
    if (!ok) {
        *err = sb_provider_invalid("request.%s has the wrong type", from);
        return -EINVAL;
    }
    if (want == SB_PROVIDER_STOP_LIST && json_is_string(v))
        json_object_set_new(dst, to, json_pack("[O]", v));
    else
        json_object_set(dst, to, (json_t *)v);
    return 0;
}

int sb_provider_copy_n(json_t *dst, const json_t *job, const char *to, json_t **err)
{
    const json_t *n = json_object_get(sb_job_request(job), "n");
    if (!n || json_is_null(n))
        return 0;
    if (!json_is_integer(n)) {
        *err = sb_provider_invalid("request.n has the wrong type");
        return -EINVAL;
    }
    if (json_integer_value(n) < 1) {
        *err = sb_provider_invalid("request.n must be at least 1");
        return -EINVAL;
    }
    if (!json_is_false(json_object_get(json_object_get(sb_job_route(job), "capabilities"), "n")))
        json_object_set(dst, to, (json_t *)n);
    return 0;
}

static bool sb_provider_has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), m = strlen(suffix);
    return n >= m && !strcasecmp(name + n - m, suffix);
}

bool sb_provider_is_text_file(const char *mime, const char *filename)
{
    if (!strncmp(mime, "text/", 5) || !strcmp(mime, "application/json"))
        return true;
    if (*mime && strcmp(mime, "application/octet-stream"))
        return false;
    static const char *const exts[] = {".txt", ".md", ".csv", ".json"};
    for (size_t i = 0; filename && i < sizeof exts / sizeof exts[0]; i++)
        if (sb_provider_has_suffix(filename, exts[i]))
            return true;
    return false;
}

void sb_provider_request_add_trace(sb_provider_request_t *req, const json_t *job)
{
    const json_t *trace = json_object_get(job, "trace");
    sb_trace_t t;
    if (sb_trace_parse(json_string_value(json_object_get(trace, "traceparent")), &t) < 0)
        return;
    sb_trace_span(&t); /* the worker's span: this call's parent */
    char tp[SB_TRACEPARENT_LEN + 1];
    sb_trace_format(&t, tp, sizeof tp);
    sb_provider_request_add_header(req, "traceparent: %s", tp);
    const char *state = json_string_value(json_object_get(trace, "tracestate"));
    if (sb_tracestate_ok(state))
        sb_provider_request_add_header(req, "tracestate: %s", state);
}

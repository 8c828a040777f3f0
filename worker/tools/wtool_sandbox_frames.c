/*
 * wtool_sandbox_frames: the worker's reader of what the sandbox's driver
 * writes back (see wtool_sandbox.h): the byte stream cut into lines, each
 * line one JSON frame, each frame checked field by field against the
 * configured limits. The bytes come from a process that runs untrusted code
 * (the code can write to the driver's reply channel itself), so nothing
 * here trusts them: a bad frame is refused with a fixed message, and the
 * sandbox is then killed by the caller; it can spoil only its own result.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_base64.h"
#include "wtool_sandbox.h"

#define SB_SANDBOX_PATH_MAX 4096
#define SB_SANDBOX_LOGS_SLACK 256 /* the driver's "[output truncated ...]" note */
#define SB_SANDBOX_WORKDIR "/mnt/data/"

size_t sb_sandbox_frame_max(const sb_sandbox_limits_t *lim)
{
    /* JSON escapes one byte as at most 6 ("\u001f"), base64 is 4 per 3;
     * every list item gets room for its quotes, keys and a long path */
    size_t logs = (lim->max_logs + SB_SANDBOX_LOGS_SLACK) * 6;
    size_t images = lim->max_images * ((lim->max_image_bytes / 3 + 1) * 4 + 16);
    size_t files =
        (lim->max_files_bytes / 3 + lim->max_files + 1) * 4 + lim->max_files * (SB_SANDBOX_PATH_MAX * 6 + 64);
    return logs + images + files + 4096;
}

void sb_sandbox_reader_init(sb_sandbox_reader_t *r, size_t max)
{
    memset(r, 0, sizeof *r);
    r->max = max;
}

void sb_sandbox_reader_free(sb_sandbox_reader_t *r)
{
    free(r->buf);
    memset(r, 0, sizeof *r);
}

int sb_sandbox_reader_feed(sb_sandbox_reader_t *r, const char *p, size_t n)
{
    if (n == 0)
        return 0;
    /* the unfinished frame (after the last newline) must stay within max,
     * so a writer that never sends a newline cannot grow the buffer */
    const char *nl = memrchr(p, '\n', n);
    size_t pending = nl ? (size_t)(p + n - nl - 1) : r->len - r->tail + n;
    if (pending > r->max)
        return -E2BIG;
    if (r->start > 0 && r->len + n > r->cap) {
        memmove(r->buf, r->buf + r->start, r->len - r->start);
        r->len -= r->start;
        r->tail -= r->start;
        r->start = 0;
    }
    if (r->len + n > r->cap) {
        size_t cap = r->cap ? r->cap : 4096;
        while (cap < r->len + n)
            cap *= 2;
        r->buf = sb_xrealloc(r->buf, cap);
        r->cap = cap;
    }
    memcpy(r->buf + r->len, p, n);
    if (nl)
        r->tail = r->len + (size_t)(nl - p) + 1;
    r->len += n;
    return 0;
}

int sb_sandbox_reader_next(sb_sandbox_reader_t *r, const char **line, size_t *len)
{
    size_t avail = r->len - r->start;
    const char *from = r->buf + r->start;
    const char *nl = avail > r->scan ? memchr(from + r->scan, '\n', avail - r->scan) : NULL;
    if (!nl) {
        r->scan = avail;
        return avail > r->max ? -E2BIG : 0;
    }
    size_t n = (size_t)(nl - from);
    if (n > r->max)
        return -E2BIG;
    *line = from;
    *len = n;
    r->start += n + 1;
    r->scan = 0;
    if (r->start == r->len) /* all read: the next feed starts at 0 (the line stays where it is) */
        r->start = r->len = r->tail = 0;
    return 1;
}

int sb_sandbox_check_path(const char *path, const char **rel)
{
    if (!path)
        return -EINVAL;
    if (strncmp(path, SB_SANDBOX_WORKDIR, strlen(SB_SANDBOX_WORKDIR)) == 0)
        path += strlen(SB_SANDBOX_WORKDIR);
    size_t n = strlen(path);
    if (n == 0 || n > SB_SANDBOX_PATH_MAX || path[0] == '/')
        return -EINVAL;
    const char *comp = path;
    for (size_t i = 0; i <= n; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c == '/' || c == '\0') {
            size_t k = (size_t)(path + i - comp);
            if (k == 0 || (k == 1 && comp[0] == '.') || (k == 2 && comp[0] == '.' && comp[1] == '.'))
                return -EINVAL;
            comp = path + i + 1;
        } else if (c < 0x20 || c == 0x7f) {
            return -EINVAL;
        }
    }
    *rel = path;
    return 0;
}

/* The decoded length of valid padded base64 of n characters. */
static size_t sb_sandbox_b64_len(const char *t, size_t n)
{
    size_t pad = n >= 1 && t[n - 1] == '=' ? (n >= 2 && t[n - 2] == '=' ? 2 : 1) : 0;
    return n / 4 * 3 - pad;
}

/* An image: standard base64 of a PNG of at most max bytes. */
static int sb_sandbox_check_image(const json_t *v, size_t max)
{
    static const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    const char *t = json_string_value(v);
    size_t n = json_string_length(v);
    if (!t || n < 12 || sb_base64_check(t, n, 0) != 0 || sb_sandbox_b64_len(t, n) > max)
        return -EBADMSG;
    unsigned char head[9];
    size_t k;
    if (sb_base64_decode_into(t, 12, 0, head, &k) != 0 || k < 8 || memcmp(head, png, 8) != 0)
        return -EBADMSG;
    return 0;
}

static int sb_sandbox_get_flag(const json_t *o, const char *key, bool *out)
{
    const json_t *v = json_object_get(o, key);
    if (!v)
        return 0;
    if (!json_is_boolean(v))
        return -EBADMSG;
    *out = json_is_true(v);
    return 0;
}

static int sb_sandbox_parse_images(const json_t *arr, const sb_sandbox_limits_t *lim, sb_sandbox_result_t *out,
                                   const char **why)
{
    if (!arr)
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > lim->max_images) {
        *why = "images is not a list within the limit";
        return -EBADMSG;
    }
    size_t n = json_array_size(arr);
    out->images = sb_xcalloc(n ? n : 1, sizeof *out->images);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(arr, i);
        if (sb_sandbox_check_image(v, lim->max_image_bytes) != 0) {
            *why = "an image is not a base64 PNG within the limit";
            return -EBADMSG;
        }
        out->images[out->n_images++] = sb_xstrndup(json_string_value(v), json_string_length(v));
    }
    return 0;
}

static int sb_sandbox_parse_files(const json_t *arr, const sb_sandbox_limits_t *lim, sb_sandbox_result_t *out,
                                  const char **why)
{
    if (!arr)
        return 0;
    if (!json_is_array(arr) || json_array_size(arr) > lim->max_files) {
        *why = "files is not a list within the limit";
        return -EBADMSG;
    }
    size_t n = json_array_size(arr), total = 0;
    out->files = sb_xcalloc(n ? n : 1, sizeof *out->files);
    for (size_t i = 0; i < n; i++) {
        const json_t *f = json_array_get(arr, i);
        const char *path = json_string_value(json_object_get(f, "path"));
        const json_t *d = json_object_get(f, "data");
        const char *rel;
        if (!json_is_object(f) || !path || strncmp(path, SB_SANDBOX_WORKDIR, strlen(SB_SANDBOX_WORKDIR)) != 0 ||
            strlen(path) != json_string_length(json_object_get(f, "path")) || sb_sandbox_check_path(path, &rel) != 0) {
            *why = "a file's path is not under /mnt/data";
            return -EBADMSG;
        }
        const char *t = json_string_value(d);
        size_t tn = json_string_length(d);
        if (!t || sb_base64_check(t, tn, 0) != 0) {
            *why = "a file's data is not base64";
            return -EBADMSG;
        }
        size_t len = sb_sandbox_b64_len(t, tn);
        if (len > lim->max_files_bytes - total) {
            *why = "the files are over the byte limit";
            return -EBADMSG;
        }
        total += len;
        sb_sandbox_file_t *o = &out->files[out->n_files++];
        o->path = sb_xstrdup(path);
        o->data = sb_base64_decode(t, tn, &o->len);
        if (!o->data) { /* checked above; kept as a refusal, not an assumption */
            *why = "a file's data is not base64";
            return -EBADMSG;
        }
    }
    return 0;
}

static int sb_sandbox_parse_reply(const json_t *o, const sb_sandbox_limits_t *lim, int64_t *id,
                                  sb_sandbox_result_t *out, const char **why)
{
    const json_t *jid = json_object_get(o, "id");
    const char *status = json_string_value(json_object_get(o, "status"));
    const json_t *logs = json_object_get(o, "logs");
    if (!json_is_integer(jid)) {
        *why = "the reply has no id";
        return -EBADMSG;
    }
    *id = json_integer_value(jid);
    if (status && strcmp(status, "ok") == 0) {
        out->status = SB_SANDBOX_OK;
    } else if (status && strcmp(status, "error") == 0) {
        out->status = SB_SANDBOX_ERROR;
    } else {
        *why = "the reply's status is not ok or error";
        return -EBADMSG;
    }
    if (!json_is_string(logs) || json_string_length(logs) > lim->max_logs + SB_SANDBOX_LOGS_SLACK ||
        strlen(json_string_value(logs)) != json_string_length(logs)) {
        *why = "the reply's logs are not text within the limit";
        return -EBADMSG;
    }
    out->logs = sb_xstrndup(json_string_value(logs), json_string_length(logs));
    if (sb_sandbox_get_flag(o, "logs_truncated", &out->logs_truncated) != 0 ||
        sb_sandbox_get_flag(o, "images_truncated", &out->images_truncated) != 0 ||
        sb_sandbox_get_flag(o, "files_truncated", &out->files_truncated) != 0) {
        *why = "a flag of the reply is not a boolean";
        return -EBADMSG;
    }
    int rc = sb_sandbox_parse_images(json_object_get(o, "images"), lim, out, why);
    if (rc == 0)
        rc = sb_sandbox_parse_files(json_object_get(o, "files"), lim, out, why);
    return rc;
}

int sb_sandbox_parse_frame(const char *line, size_t len, const sb_sandbox_limits_t *lim, sb_sandbox_frame_kind_t *kind,
                           int64_t *id, sb_sandbox_result_t *out, const char **why)
{
    memset(out, 0, sizeof *out);
    *id = 0;
    json_error_t jerr;
    json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(o)) {
        json_decref(o);
        *why = "the frame is not a JSON object";
        return -EBADMSG;
    }
    int rc = 0;
    const char *op = json_string_value(json_object_get(o, "op"));
    if (op && strcmp(op, "ready") == 0) {
        *kind = SB_SANDBOX_FRAME_READY;
    } else if (op) {
        *why = "the frame's op is unknown";
        rc = -EBADMSG;
    } else {
        *kind = SB_SANDBOX_FRAME_REPLY;
        rc = sb_sandbox_parse_reply(o, lim, id, out, why);
    }
    json_decref(o);
    if (rc != 0) {
        sb_sandbox_result_clear(out);
        *id = 0;
    }
    return rc;
}

void sb_sandbox_result_clear(sb_sandbox_result_t *r)
{
    if (!r)
        return;
    free(r->logs);
    for (size_t i = 0; i < r->n_images; i++)
        free(r->images[i]);
    free(r->images);
    for (size_t i = 0; i < r->n_files; i++) {
        free(r->files[i].path);
        free(r->files[i].data);
    }
    free(r->files);
    memset(r, 0, sizeof *r);
}

const char *sb_sandbox_status_name(sb_sandbox_status_t st)
{
    switch (st) {
    case SB_SANDBOX_OK:
        return "ok";
    case SB_SANDBOX_ERROR:
        return "error";
    case SB_SANDBOX_TIMEOUT:
        return "timeout";
    case SB_SANDBOX_KILLED:
        return "killed";
    case SB_SANDBOX_UNAVAILABLE:
        return "unavailable";
    }
    return "unknown";
}

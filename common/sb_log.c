/*
 * sb_log: see sb_log.h. A line is built in a buffer and written with one
 * write(2), so lines from several threads never interleave.
 */
#include "sb_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "sb_utf8.h"

static const char *sb_log_component = "switchboard";
static enum sb_log_level sb_log_min = SB_LOG_INFO;
static bool sb_log_text;

void sb_log_init(const char *component)
{
    sb_log_component = component;
    const char *lvl = getenv("SB_LOG_LEVEL");
    if (lvl && !strcmp(lvl, "debug"))
        sb_log_min = SB_LOG_DEBUG;
    else if (lvl && !strcmp(lvl, "warn"))
        sb_log_min = SB_LOG_WARN;
    else if (lvl && !strcmp(lvl, "error"))
        sb_log_min = SB_LOG_ERROR;
    const char *fmt = getenv("SB_LOG_FORMAT");
    sb_log_text = fmt && !strcmp(fmt, "text");
}

bool sb_log_enabled(enum sb_log_level level)
{
    return level >= sb_log_min;
}

/* s as the inside of a JSON string (valid UTF-8 already), into out. */
static size_t sb_log_escape(char *out, size_t cap, const char *s)
{
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p && o + 7 < cap; p++) {
        if (*p == '"' || *p == '\\') {
            out[o++] = '\\';
            out[o++] = (char)*p;
        } else if (*p == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else if (*p < 0x20 || *p == 0x7f) {
            o += (size_t)snprintf(out + o, cap - o, "\\u%04x", *p);
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o] = '\0';
    return o;
}

static void sb_log_write(enum sb_log_level level, const char *rid, const char *tid, const char *fmt, va_list ap)
{
    static const char *upper[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    static const char *lower[] = {"debug", "info", "warn", "error"};
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    char msg[2048];
    vsnprintf(msg, sizeof msg, fmt, ap);
    char line[6 * sizeof msg + 512];
    int n;
    if (sb_log_text) {
        n = snprintf(line, sizeof line, "%s.%03ldZ %s[%d] %s %s%s%s%s\n", ts, (long)(tv.tv_usec / 1000),
                     sb_log_component, (int)getpid(), upper[level], rid && rid[0] ? "[" : "", rid ? rid : "",
                     rid && rid[0] ? "] " : "", msg);
    } else {
        sb_utf8_fix(msg);
        char esc[6 * sizeof msg + 8];
        sb_log_escape(esc, sizeof esc, msg);
        n = snprintf(line, sizeof line,
                     "{\"time\":\"%s.%03ldZ\",\"level\":\"%s\",\"component\":\"%s\",\"pid\":%d,\"msg\":\"%s\"", ts,
                     (long)(tv.tv_usec / 1000), lower[level], sb_log_component, (int)getpid(), esc);
        /* Ids are ours (printable ASCII, checked where they come in). */
        if (n > 0 && rid && rid[0] && (size_t)n < sizeof line)
            n += snprintf(line + n, sizeof line - (size_t)n, ",\"request_id\":\"%.80s\"", rid);
        if (n > 0 && tid && tid[0] && (size_t)n < sizeof line)
            n += snprintf(line + n, sizeof line - (size_t)n, ",\"trace_id\":\"%.32s\"", tid);
        if (n > 0 && (size_t)n < sizeof line - 2)
            n += snprintf(line + n, sizeof line - (size_t)n, "}\n");
    }
    if (n <= 0)
        return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}

void sb_log(enum sb_log_level level, const char *fmt, ...)
{
    if (level < sb_log_min)
        return;
    va_list ap;
    va_start(ap, fmt);
    sb_log_write(level, NULL, NULL, fmt, ap);
    va_end(ap);
}

void sb_log_req(enum sb_log_level level, const char *request_id, const char *trace_id, const char *fmt, ...)
{
    if (level < sb_log_min)
        return;
    va_list ap;
    va_start(ap, fmt);
    sb_log_write(level, request_id, trace_id, fmt, ap);
    va_end(ap);
}

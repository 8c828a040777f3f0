/*
 * sb_log: structured logging to stderr, one event per line. By default each
 * line is a JSON object, as container platforms expect:
 *   {"time":"2026-11-21T10:00:00.123Z","level":"info","component":"frontend",
 *    "pid":123,"msg":"...","request_id":"req_..","trace_id":"4bf9.."}
 * (request_id and trace_id only on a request's events, sb_log_req).
 * SB_LOG_FORMAT=text gives "2026-11-21T10:00:00.123Z frontend[123] INFO msg"
 * for a terminal. SB_LOG_LEVEL=debug|info|warn|error sets the threshold.
 * Secrets (API keys, upstream credentials) must never be passed here; log
 * key ids or display prefixes. Thread-safe (one write per line).
 */
#ifndef SB_LOG_H
#define SB_LOG_H

#include <stdbool.h>

enum sb_log_level { SB_LOG_DEBUG = 0, SB_LOG_INFO = 1, SB_LOG_WARN = 2, SB_LOG_ERROR = 3 };

/* Sets the component name printed on each line and reads SB_LOG_LEVEL and
 * SB_LOG_FORMAT. */
void sb_log_init(const char *component);
/* Whether a line at level would be written (to skip building its fields). */
bool sb_log_enabled(enum sb_log_level level);
void sb_log(enum sb_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An event of one request: request_id and trace_id (either may be NULL or
 * "") become fields of the line. */
void sb_log_req(enum sb_log_level level, const char *request_id, const char *trace_id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define sb_debug(...) sb_log(SB_LOG_DEBUG, __VA_ARGS__)
#define sb_info(...) sb_log(SB_LOG_INFO, __VA_ARGS__)
#define sb_warn(...) sb_log(SB_LOG_WARN, __VA_ARGS__)
#define sb_error(...) sb_log(SB_LOG_ERROR, __VA_ARGS__)

#endif

/*
 * sb_log: one-line structured logging to stderr. Secrets (API keys, upstream
 * credentials) must never be passed here; log key ids or display prefixes.
 */
#ifndef SB_LOG_H
#define SB_LOG_H

enum sb_log_level { SB_LOG_DEBUG = 0, SB_LOG_INFO = 1, SB_LOG_WARN = 2, SB_LOG_ERROR = 3 };

/* Sets the component name printed on each line and reads SB_LOG_LEVEL. */
void sb_log_init(const char *component);
void sb_log(enum sb_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define sb_debug(...) sb_log(SB_LOG_DEBUG, __VA_ARGS__)
#define sb_info(...) sb_log(SB_LOG_INFO, __VA_ARGS__)
#define sb_warn(...) sb_log(SB_LOG_WARN, __VA_ARGS__)
#define sb_error(...) sb_log(SB_LOG_ERROR, __VA_ARGS__)

#endif

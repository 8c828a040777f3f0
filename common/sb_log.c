/*
 * sb_log: timestamped lines "2026-11-21T10:00:00.123Z frontend[123] INFO msg".
 */
#include "sb_log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static const char *sb_log_component = "switchboard";
static enum sb_log_level sb_log_min = SB_LOG_INFO;

void sb_log_init(const char *component)
{
    sb_log_component = component;
    const char *lvl = getenv("SB_LOG_LEVEL");
    if (!lvl)
        return;
    if (!strcmp(lvl, "debug"))
        sb_log_min = SB_LOG_DEBUG;
    else if (!strcmp(lvl, "warn"))
        sb_log_min = SB_LOG_WARN;
    else if (!strcmp(lvl, "error"))
        sb_log_min = SB_LOG_ERROR;
}

void sb_log(enum sb_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR"};
    if (level < sb_log_min)
        return;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    gmtime_r(&tv.tv_sec, &tm);
    char ts[32];
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s.%03ldZ %s[%d] %s %s\n", ts, (long)(tv.tv_usec / 1000), sb_log_component, (int)getpid(),
            names[level], msg);
}

/* server/log.c -- one-line structured logs (key=value) on stderr.
 *
 * Each line is written with a single fputs of a formatted buffer, so lines
 * from different threads do not interleave. Callers pass key=value pairs in
 * the format; values that may contain spaces are quoted by the caller.
 * Request bodies are never logged above debug level.
 */
#include "srv.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int srv_log_level = SRV_LOG_INFO;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

int srv_log_level_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcasecmp(s, level_names[i]) == 0) return i;
    if (strcasecmp(s, "warning") == 0) return SRV_LOG_WARN;
    return -1;
}

void srv_log_line(int level, const char *fmt, ...)
{
    char buf[2048];
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    int n = snprintf(buf, sizeof buf, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s ",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000L,
                     level_names[level < 0 ? 0 : level > 3 ? 3 : level]);
    if (n < 0) return;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof buf - 2) len = sizeof buf - 2;
    buf[len++] = '\n';
    buf[len] = '\0';
    fputs(buf, stderr);
}

double srv_now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int64_t srv_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

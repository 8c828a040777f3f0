/*
 * sb_http_lines: response-head parsing shared by sb-load and sb-stream.
 */
#include "sb_http_lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

char *sb_http_read_line(struct evbuffer *in, bool *err)
{
    size_t len = 0;
    char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF);
    if (!line && evbuffer_get_length(in) > SB_HTTP_LINE_MAX)
        *err = true;
    return line;
}

bool sb_http_header_is(const char *line, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncasecmp(line, name, n) != 0 || line[n] != ':')
        return false;
    const char *v = line + n + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    *value = v;
    return true;
}

bool sb_http_has_token(const char *value, const char *token)
{
    size_t n = strlen(token);
    for (const char *p = value; *p; p++)
        if (strncasecmp(p, token, n) == 0)
            return true;
    return false;
}

int sb_http_status_line(const char *line, int *status, bool *http10)
{
    if (strncmp(line, "HTTP/1.", 7) != 0 || (line[7] != '0' && line[7] != '1') || line[8] != ' ')
        return -EINVAL;
    const char *s = line + 9;
    if (s[0] < '1' || s[0] > '5' || s[1] < '0' || s[1] > '9' || s[2] < '0' || s[2] > '9' ||
        (s[3] != ' ' && s[3] != '\0'))
        return -EINVAL;
    *http10 = line[7] == '0';
    *status = (s[0] - '0') * 100 + (s[1] - '0') * 10 + (s[2] - '0');
    return 0;
}

int sb_http_content_length(const char *value, long long *n)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(value, &end, 10);
    if (errno || end == value || v < 0)
        return -EINVAL;
    while (*end == ' ' || *end == '\t')
        end++;
    if (*end)
        return -EINVAL;
    *n = v;
    return 0;
}

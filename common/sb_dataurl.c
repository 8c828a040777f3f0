/*
 * sb_dataurl: the data URL split (see sb_dataurl.h).
 */
#include "sb_dataurl.h"

#include <ctype.h>
#include <errno.h>
#include <string.h>
#include <strings.h>

#define SB_DATAURL_BASE64 ";base64"

int sb_dataurl_parse(const char *url, sb_dataurl_t *out)
{
    memset(out, 0, sizeof *out);
    out->mime = out->params = out->payload = "";
    if (strncasecmp(url, "data:", 5) != 0)
        return -EINVAL;
    const char *meta = url + 5;
    const char *comma = strchr(meta, ',');
    if (!comma)
        return -EINVAL;
    size_t meta_len = (size_t)(comma - meta);
    size_t marker = strlen(SB_DATAURL_BASE64);
    out->base64 = meta_len >= marker && strncasecmp(comma - marker, SB_DATAURL_BASE64, marker) == 0;
    if (out->base64)
        meta_len -= marker;
    out->mime = meta;
    out->mime_len = strcspn(meta, ";,"); /* never past meta_len: ";base64" starts with ';' */
    out->params = meta + out->mime_len;
    out->params_len = meta_len - out->mime_len;
    out->payload = comma + 1;
    out->payload_len = strlen(out->payload);
    return 0;
}

int sb_dataurl_mime(const sb_dataurl_t *u, char *out, size_t size)
{
    if (size == 0)
        return -ENAMETOOLONG;
    if (u->mime_len >= size) {
        out[0] = '\0';
        return -ENAMETOOLONG;
    }
    for (size_t i = 0; i < u->mime_len; i++)
        out[i] = (char)tolower((unsigned char)u->mime[i]);
    out[u->mime_len] = '\0';
    return 0;
}

bool sb_dataurl_mime_is(const sb_dataurl_t *u, const char *prefix)
{
    size_t n = strlen(prefix);
    return n <= u->mime_len && strncasecmp(u->mime, prefix, n) == 0;
}

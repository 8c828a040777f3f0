/* fe_container_path: a client's filename as a container path (see fe_container_path.h). */
#include "fe_container_path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_utf8.h"

int fe_container_path(const char *filename, char *out, size_t outsz)
{
    if (!filename || !out || outsz < FE_CONTAINER_PATH_MAX)
        return -EINVAL;
    const char *name = filename;
    for (const char *p = filename; *p; p++)
        if (*p == '/' || *p == '\\')
            name = p + 1;
    size_t n = strlen(name);
    if (n == 0 || n > FE_CONTAINER_FILENAME_MAX || !strcmp(name, ".") || !strcmp(name, ".."))
        return -EINVAL;
    /* Invalid UTF-8 would not be text PostgreSQL stores; sb_utf8_fix
     * counts what it would replace, on a copy. */
    char *copy = sb_xstrdup(name);
    size_t bad = sb_utf8_fix(copy);
    free(copy);
    if (bad > 0)
        return -EINVAL;
    size_t dl = sizeof FE_CONTAINER_DIR - 1;
    memcpy(out, FE_CONTAINER_DIR, dl);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        out[dl + i] = c < 0x20 || c == 0x7f ? '_' : (char)c;
    }
    out[dl + n] = '\0';
    return 0;
}

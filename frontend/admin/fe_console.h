/*
 * fe_console: the web console, served by the frontend's admin listener at
 * /console/ (and / redirects there). Its files (frontend/admin/console:
 * HTML, CSS and plain JavaScript, no framework) are compiled into the binary
 * by console/embed.cmake. The page is a client of the admin API on the same
 * origin; its Content-Security-Policy allows nothing but this origin's own
 * files and API, and no inline script.
 */
#ifndef FE_CONSOLE_H
#define FE_CONSOLE_H

#include <stdbool.h>
#include <stddef.h>

#include "sb_http.h"

typedef struct {
    const char *path; /* "/console/index.html" */
    const char *content_type;
    const unsigned char *data;
    size_t len;
} fe_console_file_t;

/* The embedded files (generated). */
extern const fe_console_file_t fe_console_files[];
extern const size_t fe_console_nfiles;

/* Serves req when it is the console's (true), else leaves it (false). */
bool fe_console_serve(sb_http_req_t *req);

#endif

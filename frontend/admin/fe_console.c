/*
 * fe_console: see fe_console.h.
 */
#include "fe_console.h"

#include <string.h>

#define FE_CONSOLE_CSP                                                                                                 \
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "                    \
    "form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

bool fe_console_serve(sb_http_req_t *req)
{
    const char *path = sb_http_req_path(req);
    if (!strcmp(path, "/") || !strcmp(path, "/console")) {
        sb_http_req_add_header(req, "Location", "/console/");
        sb_http_reply(req, 302, NULL, 0);
        return true;
    }
    if (!strcmp(path, "/favicon.ico")) {
        sb_http_reply(req, 204, NULL, 0);
        return true;
    }
    if (strncmp(path, "/console/", 9) != 0)
        return false;
    const char *want = strcmp(path, "/console/") ? path : "/console/index.html";
    for (size_t i = 0; i < fe_console_nfiles; i++) {
        const fe_console_file_t *f = &fe_console_files[i];
        if (strcmp(f->path, want) != 0)
            continue;
        if (strcmp(sb_http_req_method(req), "GET") != 0) {
            sb_http_req_add_header(req, "Allow", "GET");
            sb_http_req_close_after(req);
            sb_http_reply(req, 405, NULL, 0);
            return true;
        }
        sb_http_req_add_header(req, "Content-Type", f->content_type);
        sb_http_req_add_header(req, "Content-Security-Policy", FE_CONSOLE_CSP);
        sb_http_req_add_header(req, "X-Content-Type-Options", "nosniff");
        sb_http_req_add_header(req, "Referrer-Policy", "no-referrer");
        sb_http_req_add_header(req, "X-Frame-Options", "DENY");
        sb_http_req_add_header(req, "Cache-Control", "no-cache");
        sb_http_reply(req, 200, f->data, f->len);
        return true;
    }
    return false;
}

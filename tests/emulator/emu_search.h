/*
 * emu_search: the emulator's web for the gateway's web search tests: a
 * search backend over a small fixed corpus of made-up topics, answering in
 * SearXNG's JSON shape (GET /_search/search?q=...&format=json) and in Brave
 * Search's (GET /_search/brave/res/v1/web/search, X-Subscription-Token),
 * and the corpus's pages themselves (GET /_pages/<name>.html, real HTML with
 * head, scripts, styles and navigation), so that a search, an opened page
 * and a find_in_page all reach something real on loopback. emu_routes.c
 * hands it every /_search/... and /_pages/... request; the corpus is the
 * table in emu_search_pages.c. Documented at the top of main.c.
 */
#ifndef SB_EMU_SEARCH_H
#define SB_EMU_SEARCH_H

#include <stddef.h>

struct sb_emu_call;

/* One entry of the corpus: a page the emulator serves (name set), or a
 * result that only exists in search answers (url set, on a made-up domain). */
struct sb_emu_doc {
    const char *name;     /* served at /_pages/<name>.html; NULL for an external result */
    const char *url;      /* an external result's absolute URL; NULL for a page */
    const char *title;    /* the result's and the page's title */
    const char *snippet;  /* the result's content / description */
    const char *keywords; /* more words a query may match (space-separated) */
    const char *body;     /* the page's <main> HTML (pages only) */
};

extern const struct sb_emu_doc sb_emu_docs[];
extern const size_t sb_emu_ndocs;

/* GET /_search/... and /_pages/...: fills call->reply. */
void sb_emu_search_handle(struct sb_emu_call *call);

#endif

/*
 * fe_list: cursor pagination as OpenAI's list endpoints do it: query
 * parameters limit, order (asc|desc), after (an id); replies
 * {"object":"list","data":[...],"first_id","last_id","has_more"}.
 */
#ifndef FE_LIST_H
#define FE_LIST_H

#include "fe_request.h"

typedef struct {
    int limit;        /* 1..max */
    char order[8];    /* "asc" | "desc" */
    char after[136];  /* "" when absent */
    char before[136]; /* "" when absent */
} fe_list_query_t;

/* Reads the query string. dflt_order is "asc" or "desc". 0, or -1 with err (400). */
int fe_list_parse(const fe_request_t *r, int max_limit, int dflt_limit, const char *dflt_order, fe_list_query_t *q,
                  fe_error_t *err);

/* Replies with a list body from data (stolen), which holds up to limit + 1
 * entries in order (the extra one only tells has_more). */
void fe_list_reply(fe_request_t *r, json_t *data, int limit);

/* Pages an in-memory array (borrowed) by q: order, after/before by "id".
 * Returns a new array of up to limit + 1 entries for fe_list_reply. */
json_t *fe_list_page(const json_t *all, const fe_list_query_t *q);

/* The whole list endpoint's reply from every entry (all, stolen, in
 * order): the query read (max_limit, dflt_limit, dflt_order as
 * fe_list_parse), the page cut, each entry of it passed to show (may be
 * NULL: shown as stored), and the reply sent (or the query's 400). */
void fe_list_reply_all(fe_request_t *r, json_t *all, int max_limit, int dflt_limit, const char *dflt_order,
                       void (*show)(json_t *page));

#endif

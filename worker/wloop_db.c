/*
 * wloop_db: the database token every data tool step's query goes through
 * (wloop_tools.h), so a step that ends before its query answers is never
 * called back: the token outlives the step and frees itself with the answer.
 */
#include <stdlib.h>

#include "sb_alloc.h"
#include "sb_db.h"
#include "wloop_tools.h"

struct sb_wdbq {
    sb_wdbq_cb cb;
    void *owner; /* NULL once the step has gone: the answer is dropped */
};

static void sb_wdbq_on_result(const PGresult *res, const char *err, void *arg)
{
    sb_wdbq_t *q = arg;
    if (q->owner)
        q->cb(res, err, q->owner);
    free(q);
}

sb_wdbq_t *sb_wdbq_run(sb_wloop_t *l, const char *stmt, int n, const char *const *params, sb_wdbq_cb cb, void *owner)
{
    sb_wdbq_t *q = sb_xcalloc(1, sizeof *q);
    q->cb = cb;
    q->owner = owner;
    sb_db_query(l->j->w->db, stmt, n, params, sb_wdbq_on_result, q);
    return q;
}

void sb_wdbq_forget(sb_wdbq_t **q)
{
    if (q && *q) {
        (*q)->owner = NULL;
        *q = NULL;
    }
}

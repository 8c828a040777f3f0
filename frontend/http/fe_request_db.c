/* fe_request_db: the hold -> query -> release bracket (see fe_request_db.h). */
#include "fe_request_db.h"

#include <stdlib.h>

#include "sb_alloc.h"
#include "sb_db.h"
#include "sb_event.h"

/* What the answer needs besides r: sb_db_query carries one pointer. */
struct fe_request_db_wait {
    fe_request_t *r;
    const char *unavailable;
    fe_request_db_cb cb;
};

static void fe_request_db_on_answer(const PGresult *res, const char *err, void *arg)
{
    struct fe_request_db_wait w = *(struct fe_request_db_wait *)arg;
    free(arg);
    if (!fe_request_release(w.r))
        return;
    if (err) {
        fe_request_failf(w.r, 503, SB_ERR_SERVER, "service_unavailable", NULL, "%s", w.unavailable);
        return;
    }
    w.cb(w.r, res);
}

void fe_request_db_query(fe_request_t *r, const char *stmt, int n, const char *const *params, const char *unavailable,
                         fe_request_db_cb cb)
{
    struct fe_request_db_wait *w = sb_xcalloc(1, sizeof *w);
    w->r = r;
    w->unavailable = unavailable;
    w->cb = cb;
    fe_request_hold(r);
    sb_db_query(r->srv->db, stmt, n, params, fe_request_db_on_answer, w);
}

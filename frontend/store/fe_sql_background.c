/* fe_sql_background: background responses' statements (fe_sql_background.h). */
#include "fe_sql_background.h"

static const char fe_sql_bg_create[] = "SELECT sb_background_create($1::jsonb)";

static const char fe_sql_bg_drop[] = "DELETE FROM responses WHERE id = $1 AND status = 'queued'";

static const char fe_sql_bg_get[] =
    "SELECT r.body, b.state, b.snapshot, b.finished_at IS NOT NULL, b.finalized_at IS NOT NULL "
    "FROM responses r LEFT JOIN background_responses b ON b.response_id = r.id "
    "WHERE r.id = $1 AND r.account_id = $2";

static const char fe_sql_bg_events[] =
    "SELECT b.state, COALESCE((SELECT json_agg(e.event ORDER BY e.seq) FROM (SELECT seq, event "
    "  FROM background_events WHERE response_id = b.response_id AND seq >= $2::integer ORDER BY seq "
    "  LIMIT 500) e), '[]'::json), b.finalized_at IS NOT NULL, b.error "
    "FROM background_responses b WHERE b.response_id = $1 AND b.account_id = $3";

static const char fe_sql_bg_cancel[] = "SELECT outcome, state, job_id FROM sb_background_cancel($1, $2::bigint)";

static const char fe_sql_bg_fail[] = "SELECT sb_background_fail($1, $2::jsonb)";

static const char fe_sql_bg_sweep[] =
    "SELECT response_id FROM sb_background_sweep($1::integer, $2::integer, $3::integer)";

static const char fe_sql_bg_load[] =
    "SELECT b.snapshot, b.state, b.error, b.finalized_at IS NOT NULL, r.body, "
    "  COALESCE((SELECT json_agg(e.event ORDER BY e.seq) FROM background_events e "
    "    WHERE e.response_id = b.response_id), '[]'::json) "
    "FROM background_responses b JOIN responses r ON r.id = b.response_id WHERE b.response_id = $1";

static const char fe_sql_bg_finalize[] = "SELECT sb_background_finalize($1::jsonb)";

const sb_db_stmt_t fe_sql_background_statements[] = {
    {FE_SQL_BG_CREATE, fe_sql_bg_create},     {FE_SQL_BG_DROP, fe_sql_bg_drop},
    {FE_SQL_BG_GET, fe_sql_bg_get},           {FE_SQL_BG_EVENTS, fe_sql_bg_events},
    {FE_SQL_BG_CANCEL, fe_sql_bg_cancel},     {FE_SQL_BG_FAIL, fe_sql_bg_fail},
    {FE_SQL_BG_SWEEP, fe_sql_bg_sweep},       {FE_SQL_BG_LOAD, fe_sql_bg_load},
    {FE_SQL_BG_FINALIZE, fe_sql_bg_finalize},
};
const int fe_sql_background_statement_count =
    (int)(sizeof fe_sql_background_statements / sizeof fe_sql_background_statements[0]);

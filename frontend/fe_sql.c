/* fe_sql: the frontend's prepared statements. */
#include "fe_sql.h"

/* $1 key hash -> one row: key id, account id, usable (key and account enabled),
 * zero-data-retention flag, allowed model ids as a JSON array. */
static const char fe_sql_key_lookup[] =
    "SELECT k.id, k.account_id, (k.enabled AND a.enabled), a.zero_data_retention, "
    "       COALESCE((SELECT json_agg(gm.model_id) FROM group_models gm WHERE gm.group_id = k.group_id), '[]') "
    "FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = $1";

/* $1 model id -> the model and its route as one JSON object. */
static const char fe_sql_model_lookup[] =
    "SELECT json_build_object('id', id, 'enabled', enabled, 'provider', provider, 'base_url', base_url, "
    "  'upstream_model', upstream_model, 'credential_ref', credential_ref, 'capabilities', capabilities, "
    "  'context_length', context_length, 'max_output_tokens', max_output_tokens, 'timeout_ms', timeout_ms, "
    "  'created', extract(epoch FROM created_at)::bigint) "
    "FROM models WHERE id = $1";

static const char fe_sql_model_list[] =
    "SELECT COALESCE(json_agg(json_build_object('id', id, 'created', extract(epoch FROM created_at)::bigint) "
    "  ORDER BY id), '[]') FROM models WHERE enabled";

/* $1 JSON array of rows. Idempotent on request_id so a retried batch cannot
 * write a row twice. */
const char fe_sql_reqlog_insert_sql[] =
    "INSERT INTO request_log (request_id, ts, key_id, account_id, model, path, status, latency_ms, "
    "  upstream_latency_ms, tokens_in, tokens_out, reasoning_tokens, error, stream, frontend) "
    "SELECT request_id, to_timestamp(ts_ms / 1000.0), key_id, account_id, model, path, status, latency_ms, "
    "  upstream_latency_ms, tokens_in, tokens_out, reasoning_tokens, error, stream, frontend "
    "FROM jsonb_to_recordset($1::jsonb) AS x(request_id text, ts_ms bigint, key_id bigint, account_id bigint, "
    "  model text, path text, status int, latency_ms int, upstream_latency_ms int, tokens_in int, tokens_out int, "
    "  reasoning_tokens int, error text, stream boolean, frontend text) "
    "ON CONFLICT (request_id) DO NOTHING";

/* $1 response id, $2 account id -> the response's context (input items, then
 * output items) as one JSON array; no row when absent or another account's. */
static const char fe_sql_response_context[] =
    "SELECT COALESCE((SELECT jsonb_agg(i.item ORDER BY i.kind = 'output', i.seq) FROM response_items i "
    "  WHERE i.response_id = r.id), '[]'::jsonb) FROM responses r WHERE r.id = $1 AND r.account_id = $2";

/* $1 id, $2 account, $3 key, $4 model, $5 status, $6 previous id, $7 body,
 * $8 input items (JSON array), $9 output items (JSON array). One statement,
 * so the response and its items are stored atomically. */
static const char fe_sql_response_save[] =
    "WITH r AS (INSERT INTO responses (id, account_id, key_id, model, status, previous_response_id, body) "
    "  VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb) RETURNING id) "
    "INSERT INTO response_items (response_id, kind, seq, item) "
    "SELECT r.id, 'input', x.ord - 1, x.item FROM r, jsonb_array_elements($8::jsonb) WITH ORDINALITY AS x(item, ord) "
    "UNION ALL "
    "SELECT r.id, 'output', y.ord - 1, y.item FROM r, jsonb_array_elements($9::jsonb) WITH ORDINALITY AS y(item, ord)";

static const char fe_sql_response_get[] = "SELECT body FROM responses WHERE id = $1 AND account_id = $2";

static const char fe_sql_response_delete[] = "DELETE FROM responses WHERE id = $1 AND account_id = $2 RETURNING id";

const fe_db_stmt_t fe_sql_statements[] = {
    {FE_SQL_KEY_LOOKUP, fe_sql_key_lookup},
    {FE_SQL_MODEL_LOOKUP, fe_sql_model_lookup},
    {FE_SQL_MODEL_LIST, fe_sql_model_list},
    {FE_SQL_REQLOG_INSERT, fe_sql_reqlog_insert_sql},
    {FE_SQL_RESPONSE_CONTEXT, fe_sql_response_context},
    {FE_SQL_RESPONSE_SAVE, fe_sql_response_save},
    {FE_SQL_RESPONSE_GET, fe_sql_response_get},
    {FE_SQL_RESPONSE_DELETE, fe_sql_response_delete},
};
const int fe_sql_statement_count = (int)(sizeof fe_sql_statements / sizeof fe_sql_statements[0]);

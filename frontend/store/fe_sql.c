/* fe_sql: the frontend's prepared statements. */
#include "fe_sql.h"

#include <string.h>

#include "fe_sql_admin.h"
#include "fe_sql_background.h"
#include "fe_sql_containers.h"
#include "fe_sql_conversations.h"
#include "fe_sql_vstores.h"

/* $1 key hash -> one row: key id, account id, usable (key and account enabled),
 * zero-data-retention flag, allowed model ids as a JSON array. */
static const char fe_sql_key_lookup[] =
    "SELECT k.id, k.account_id, (k.enabled AND a.enabled), a.zero_data_retention, "
    "       COALESCE((SELECT json_agg(gm.model_id) FROM group_models gm WHERE gm.group_id = k.group_id), '[]'), "
    "       num_nonnulls(k.rpm_limit, k.tpm_limit, k.concurrency_limit, g.rpm_limit, g.tpm_limit, "
    "                    g.concurrency_limit, a.quota_tokens) > 0 "
    "FROM api_keys k JOIN accounts a ON a.id = k.account_id JOIN token_groups g ON g.id = k.group_id "
    "WHERE k.key_hash = $1";

/* $1: a JSON array of one key's admissions [{request_id, key_id, tokens
 * (reserved), ttl_ms (lease lifetime)}] -> per element: ord (1-based),
 * admitted, kind, scope, what, limit, retry_after_ms (schema/003, 007). */
static const char fe_sql_limit_admit[] =
    "SELECT ord, admitted, kind, scope, what, limit_value, retry_after_ms FROM sb_limit_admit_batch($1::jsonb)";

/* $1: a JSON array of one key's releases [{request_id, tokens (used: input
 * + output)}] -> ord per element. */
static const char fe_sql_limit_release[] = "SELECT ord FROM sb_limit_release_batch($1::jsonb)";

/* $1: a JSON array of exchanges of one key's capacity block
 * (fe_limits_block.h, schema/008_limit_blocks.sql) -> per element: ord,
 * requests, tokens and slots granted (-1: no limit in that dimension). */
static const char fe_sql_limit_block[] = "SELECT ord, req, tok, slots FROM sb_limit_block_batch($1::jsonb)";

/* $1 model id -> the model and its route as one JSON object, with what its
 * gateway-run tools use: tools_config.web_search is the deployment's default
 * search backend {kind, base_url, credential_ref} when it is enabled, else
 * null (schema/004_tools.sql). It is cached with the model (fe_auth.h) and
 * dropped with it when sb_config announces a change to either table. */
static const char fe_sql_model_lookup[] =
    "SELECT json_build_object('id', id, 'enabled', enabled, 'provider', provider, 'base_url', base_url, "
    "  'upstream_model', upstream_model, 'credential_ref', credential_ref, 'capabilities', capabilities, "
    "  'context_length', context_length, 'max_output_tokens', max_output_tokens, 'timeout_ms', timeout_ms, "
    "  'fallbacks', to_json(fallbacks), 'created', extract(epoch FROM created_at)::bigint, "
    "  'tools_config', json_build_object('web_search', "
    "    (SELECT json_build_object('kind', b.kind, 'base_url', b.base_url, 'credential_ref', b.credential_ref) "
    "     FROM search_backends b WHERE b.is_default AND b.enabled))) "
    "FROM models WHERE id = $1";

static const char fe_sql_model_list[] =
    "SELECT COALESCE(json_agg(json_build_object('id', id, 'created', extract(epoch FROM created_at)::bigint) "
    "  ORDER BY id), '[]') FROM models WHERE enabled";

/* $1 JSON array of rows. Idempotent on request_id so a retried batch cannot
 * write a row twice. A row's tool_calls (an array, or absent) are its
 * request's tool_calls rows (fe_reqlog.h): inserted in the same statement,
 * and only for the request_log rows this statement inserted, so they too
 * land exactly once. A tool call's model is its own when the request fell
 * back to another model after it, else the request's. */
const char fe_sql_reqlog_insert_sql[] =
    "WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(request_id text, ts_ms bigint, key_id bigint, "
    "  account_id bigint, model text, requested_model text, path text, status int, latency_ms int, "
    "  upstream_latency_ms int, tokens_in int, tokens_out int, reasoning_tokens int, tokens_estimated int, "
    "  error text, stream boolean, frontend text, limit_block text, tokens_reserved bigint, tool_calls jsonb, "
    "  trace_id text)), "
    "ins AS (INSERT INTO request_log (request_id, ts, key_id, account_id, model, requested_model, path, status, "
    "  latency_ms, upstream_latency_ms, tokens_in, tokens_out, reasoning_tokens, tokens_estimated, error, stream, "
    "  frontend, limit_block, tokens_reserved, trace_id) "
    "  SELECT request_id, to_timestamp(ts_ms / 1000.0), key_id, account_id, model, requested_model, path, status, "
    "    latency_ms, upstream_latency_ms, tokens_in, tokens_out, reasoning_tokens, tokens_estimated, error, stream, "
    "    frontend, limit_block, tokens_reserved, trace_id FROM x "
    "  ON CONFLICT (request_id) DO NOTHING RETURNING request_id) "
    "INSERT INTO tool_calls (created_at, request_id, response_id, account_id, key_id, model, kind, server, name, "
    "  item_id, duration_ms, outcome, bytes_in, bytes_out, error) "
    "SELECT COALESCE(to_timestamp(t.ts_ms / 1000.0), to_timestamp(x.ts_ms / 1000.0)), x.request_id, t.response_id, "
    "  x.account_id, x.key_id, COALESCE(t.model, x.model), t.kind, t.server, t.name, t.item_id, t.duration_ms, "
    "  t.outcome, t.bytes_in, t.bytes_out, t.error "
    "FROM x JOIN ins ON ins.request_id = x.request_id "
    "CROSS JOIN LATERAL jsonb_to_recordset(CASE jsonb_typeof(x.tool_calls) WHEN 'array' THEN x.tool_calls "
    "  ELSE '[]'::jsonb END) AS t(ts_ms bigint, response_id text, model text, kind text, server text, name text, "
    "  item_id text, duration_ms int, outcome text, bytes_in bigint, bytes_out bigint, error text) "
    "WHERE t.kind IS NOT NULL AND t.outcome IS NOT NULL";

/* $1 response id, $2 account id -> what a follow-up request inherits: the
 * response's context, its own input, then its output, as one JSON array; no
 * row when absent or another account's. */
static const char fe_sql_response_context[] =
    "SELECT COALESCE((SELECT jsonb_agg(i.item ORDER BY CASE i.kind WHEN 'context' THEN 0 WHEN 'input' THEN 1 "
    "  ELSE 2 END, i.seq) FROM response_items i WHERE i.response_id = r.id), '[]'::jsonb) "
    "FROM responses r WHERE r.id = $1 AND r.account_id = $2";

/* $1 id, $2 account, $3 key, $4 model, $5 status, $6 previous id, $7 body,
 * $8 inherited context, $9 this request's input, $10 output (JSON arrays).
 * One statement, so the response and its items are stored atomically. */
/* $1: a JSON array of stored answers (fe_storebatch.h), each {id,
 * account_id, key_id, model, status, previous_response_id, body, context,
 * input, output}: the responses and their items, in one statement. */
static const char fe_sql_response_save[] =
    "WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(id text, account_id bigint, key_id bigint, "
    "  model text, status text, previous_response_id text, body jsonb, context jsonb, input jsonb, output jsonb)), "
    "r AS (INSERT INTO responses (id, account_id, key_id, model, status, previous_response_id, body) "
    "  SELECT id, account_id, key_id, model, status, previous_response_id, body FROM x RETURNING id) "
    "INSERT INTO response_items (response_id, kind, seq, item) "
    "SELECT r.id, 'context', c.ord - 1, c.item FROM r JOIN x ON x.id = r.id, "
    "  jsonb_array_elements(x.context) WITH ORDINALITY AS c(item, ord) "
    "UNION ALL "
    "SELECT r.id, 'input', i.ord - 1, i.item FROM r JOIN x ON x.id = r.id, "
    "  jsonb_array_elements(x.input) WITH ORDINALITY AS i(item, ord) "
    "UNION ALL "
    "SELECT r.id, 'output', o.ord - 1, o.item FROM r JOIN x ON x.id = r.id, "
    "  jsonb_array_elements(x.output) WITH ORDINALITY AS o(item, ord)";

/* $1 response id, $2 account -> the request's own input items (JSON array). */
static const char fe_sql_response_input_items[] =
    "SELECT COALESCE((SELECT jsonb_agg(i.item ORDER BY i.seq) FROM response_items i "
    "  WHERE i.response_id = r.id AND i.kind = 'input'), '[]'::jsonb) "
    "FROM responses r WHERE r.id = $1 AND r.account_id = $2";

/* $1 prompt id, $2 account, $3 version or NULL (current) -> version, body. */
static const char fe_sql_prompt_get[] =
    "SELECT v.version, v.body FROM prompts p JOIN prompt_versions v ON v.prompt_id = p.id "
    "WHERE p.id = $1 AND p.account_id = $2 AND v.version = COALESCE($3::int, p.current_version)";

/* The file object as OpenAI returns it. */
#define FE_SQL_FILE_JSON                                                                                               \
    "json_build_object('id', f.id, 'object', 'file', 'bytes', f.bytes, 'created_at', "                                 \
    "  extract(epoch FROM f.created_at)::bigint, 'filename', f.filename, 'purpose', f.purpose, "                       \
    "  'status', 'processed', 'expires_at', NULL, 'status_details', NULL)"

/* $1 id, $2 account, $3 filename, $4 purpose, $5 mime type, $6 content (base64). */
static const char fe_sql_file_insert[] =
    "WITH f AS (INSERT INTO files (id, account_id, filename, purpose, mime_type, bytes, content) "
    "  SELECT $1, $2, $3, $4, $5, length(d.c), d.c FROM (SELECT decode($6, 'base64') AS c) d "
    "  RETURNING *) SELECT " FE_SQL_FILE_JSON " FROM f";

static const char fe_sql_file_get[] = "SELECT " FE_SQL_FILE_JSON " FROM files f WHERE f.id = $1 AND f.account_id = $2";

/* $1 id, $2 account -> mime type, filename, content as base64 (one line). */
static const char fe_sql_file_content[] =
    "SELECT mime_type, filename, translate(encode(content, 'base64'), E'\\n', '') FROM files "
    "WHERE id = $1 AND account_id = $2";

static const char fe_sql_file_delete[] = "DELETE FROM files WHERE id = $1 AND account_id = $2 RETURNING id";

/* $1 account, $2 limit + 1, $3 'asc'|'desc', $4 after id or NULL, $5 purpose or NULL -> file objects. */
static const char fe_sql_file_list[] =
    "SELECT COALESCE(json_agg(x.o ORDER BY x.n), '[]') FROM (SELECT " FE_SQL_FILE_JSON " AS o, "
    "  row_number() OVER (ORDER BY CASE WHEN $3 = 'asc' THEN f.created_at END ASC, "
    "    CASE WHEN $3 <> 'asc' THEN f.created_at END DESC, f.id) AS n "
    "  FROM files f WHERE f.account_id = $1 AND ($5::text IS NULL OR f.purpose = $5) "
    "  AND ($4::text IS NULL OR (CASE WHEN $3 = 'asc' THEN (f.created_at, f.id) > "
    "      (SELECT a.created_at, a.id FROM files a WHERE a.id = $4 AND a.account_id = $1) "
    "    ELSE (f.created_at, f.id) < (SELECT a.created_at, a.id FROM files a WHERE a.id = $4 AND a.account_id = $1) "
    "END)) "
    "  ORDER BY n LIMIT $2::int) x";

/* $1 account, $2 JSON array of file ids -> id, filename, mime type, base64 content. */
static const char fe_sql_files_resolve[] =
    "SELECT id, filename, mime_type, translate(encode(content, 'base64'), E'\\n', '') FROM files "
    "WHERE account_id = $1 AND id IN (SELECT jsonb_array_elements_text($2::jsonb))";

/* $1 id, $2 account, $3 key, $4 model, $5 body, $6 request messages, $7 metadata. */
/* $1: a JSON array of stored chat completions (fe_storebatch.h), each {id,
 * account_id, key_id, model, body, messages, metadata (or null)}. */
static const char fe_sql_chat_save[] =
    "INSERT INTO chat_completions (id, account_id, key_id, model, body, messages, metadata) "
    "SELECT id, account_id, key_id, model, body, messages, COALESCE(metadata, '{}'::jsonb) "
    "FROM jsonb_to_recordset($1::jsonb) AS x(id text, account_id bigint, key_id bigint, model text, body jsonb, "
    "  messages jsonb, metadata jsonb)";

static const char fe_sql_chat_get[] = "SELECT body FROM chat_completions WHERE id = $1 AND account_id = $2";

static const char fe_sql_chat_messages[] = "SELECT messages FROM chat_completions WHERE id = $1 AND account_id = $2";

static const char fe_sql_chat_delete[] = "DELETE FROM chat_completions WHERE id = $1 AND account_id = $2 RETURNING id";

/* $1 id, $2 account, $3 metadata object -> the updated body. */
static const char fe_sql_chat_update[] =
    "UPDATE chat_completions SET metadata = $3::jsonb, body = jsonb_set(body, '{metadata}', $3::jsonb) "
    "WHERE id = $1 AND account_id = $2 RETURNING body";

/* $1 account, $2 limit + 1, $3 'asc'|'desc', $4 after id or NULL, $5 model or NULL -> bodies. */
static const char fe_sql_chat_list[] =
    "SELECT COALESCE(json_agg(x.body ORDER BY x.n), '[]') FROM (SELECT c.body, "
    "  row_number() OVER (ORDER BY CASE WHEN $3 = 'asc' THEN c.created_at END ASC, "
    "    CASE WHEN $3 <> 'asc' THEN c.created_at END DESC, c.id) AS n "
    "  FROM chat_completions c WHERE c.account_id = $1 AND ($5::text IS NULL OR c.model = $5) "
    "  AND ($4::text IS NULL OR (CASE WHEN $3 = 'asc' THEN (c.created_at, c.id) > "
    "      (SELECT a.created_at, a.id FROM chat_completions a WHERE a.id = $4 AND a.account_id = $1) "
    "    ELSE (c.created_at, c.id) < (SELECT a.created_at, a.id FROM chat_completions a "
    "      WHERE a.id = $4 AND a.account_id = $1) END)) "
    "  ORDER BY n LIMIT $2::int) x";

static const char fe_sql_response_get[] = "SELECT body FROM responses WHERE id = $1 AND account_id = $2";

static const char fe_sql_response_delete[] = "DELETE FROM responses WHERE id = $1 AND account_id = $2 RETURNING id";

static const sb_db_stmt_t fe_sql_statements[] = {
    {FE_SQL_KEY_LOOKUP, fe_sql_key_lookup},
    {FE_SQL_LIMIT_ADMIT, fe_sql_limit_admit},
    {FE_SQL_LIMIT_RELEASE, fe_sql_limit_release},
    {FE_SQL_LIMIT_BLOCK, fe_sql_limit_block},
    {FE_SQL_MODEL_LOOKUP, fe_sql_model_lookup},
    {FE_SQL_MODEL_LIST, fe_sql_model_list},
    {FE_SQL_REQLOG_INSERT, fe_sql_reqlog_insert_sql},
    {FE_SQL_RESPONSE_CONTEXT, fe_sql_response_context},
    {FE_SQL_RESPONSE_SAVE, fe_sql_response_save},
    {FE_SQL_RESPONSE_GET, fe_sql_response_get},
    {FE_SQL_RESPONSE_DELETE, fe_sql_response_delete},
    {FE_SQL_RESPONSE_INPUT_ITEMS, fe_sql_response_input_items},
    {FE_SQL_PROMPT_GET, fe_sql_prompt_get},
    {FE_SQL_FILE_INSERT, fe_sql_file_insert},
    {FE_SQL_FILE_GET, fe_sql_file_get},
    {FE_SQL_FILE_CONTENT, fe_sql_file_content},
    {FE_SQL_FILE_DELETE, fe_sql_file_delete},
    {FE_SQL_FILE_LIST, fe_sql_file_list},
    {FE_SQL_FILES_RESOLVE, fe_sql_files_resolve},
    {FE_SQL_CHAT_SAVE, fe_sql_chat_save},
    {FE_SQL_CHAT_GET, fe_sql_chat_get},
    {FE_SQL_CHAT_MESSAGES, fe_sql_chat_messages},
    {FE_SQL_CHAT_DELETE, fe_sql_chat_delete},
    {FE_SQL_CHAT_UPDATE, fe_sql_chat_update},
    {FE_SQL_CHAT_LIST, fe_sql_chat_list},
};
static const int fe_sql_statement_count = (int)(sizeof fe_sql_statements / sizeof fe_sql_statements[0]);

/* The concatenation is built once, at the first call (start-up, before any
 * connection is made), and never freed: it lives as long as the process. */
const sb_db_stmt_t *fe_sql_all(int *count)
{
    static sb_db_stmt_t all[FE_SQL_MAX_STATEMENTS];
    static int n;
    if (n == 0) {
        const sb_db_stmt_set_t sets[] = {
            {fe_sql_statements, fe_sql_statement_count},
            {fe_sql_container_statements, fe_sql_container_statement_count},
            {fe_sql_vstore_statements, fe_sql_vstore_statement_count},
            {fe_sql_background_statements, fe_sql_background_statement_count},
            {fe_sql_conversation_statements, fe_sql_conversation_statement_count},
            {fe_sql_admin_statements, fe_sql_admin_statement_count},
        };
        n = sb_db_stmt_join(all, FE_SQL_MAX_STATEMENTS, sets, sizeof sets / sizeof sets[0]);
    }
    *count = n;
    return all;
}

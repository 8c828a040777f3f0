/* fe_sql_containers: the Containers API's statements (fe_sql_containers.h). */
#include "fe_sql_containers.h"

/* The statements read as SQL, their shared parts on lines of their own. */
/* clang-format off */
/* Whether the container row c has been idle past its expiry (as
 * worker/tools/wsql_containers.c decides it: running up to the minute). */
#define FE_SQL_EXPIRED(c) \
    "(" c ".last_active_at + make_interval(mins => " c ".expires_minutes) < now())"

/* The container object as OpenAI shows it, of the row c. */
#define FE_SQL_CONTAINER_JSON \
    "json_build_object('id', c.id, 'object', 'container', 'name', c.name, " \
    "  'status', CASE WHEN " \
    FE_SQL_EXPIRED("c") \
    " THEN 'expired' ELSE 'running' END, " \
    "  'created_at', extract(epoch FROM c.created_at)::bigint, " \
    "  'last_active_at', extract(epoch FROM c.last_active_at)::bigint, " \
    "  'expires_after', json_build_object('anchor', 'last_active_at', 'minutes', c.expires_minutes), " \
    "  'memory_limit', c.memory_limit, " \
    "  'network_policy', COALESCE(c.network_policy, '{\"type\":\"disabled\"}'))"

/* The container file object as OpenAI shows it, of the row f. */
#define FE_SQL_CFILE_JSON \
    "json_build_object('id', f.id, 'object', 'container.file', 'bytes', f.bytes, 'container_id', f.container_id, " \
    "  'created_at', extract(epoch FROM f.created_at)::bigint, 'path', f.path, 'source', f.source)"

/* Ordering of a page of table t by order parameter o: created_at then id,
 * both ways, so that rows made by one statement (a create's copied files
 * share its now()) still page without repeats or gaps. */
#define FE_SQL_PAGE_ORDER(t, o) \
    "ORDER BY CASE WHEN " o " = 'asc' THEN " t ".created_at END ASC, " \
    "  CASE WHEN " o " = 'asc' THEN " t ".id END ASC, " \
    "  CASE WHEN " o " <> 'asc' THEN " t ".created_at END DESC, " \
    "  CASE WHEN " o " <> 'asc' THEN " t ".id END DESC"

/* The prologue of the container file statements ($1 container, $2
 * account): k is the container (one row, or none when it is not the
 * account's) with whether it is expired; t marks a running one active. A
 * data-modifying WITH runs whether or not the query reads it. */
#define FE_SQL_CFILE_USE \
    "WITH k AS (SELECT c.id, " \
    FE_SQL_EXPIRED("c") \
    " AS expired FROM containers c WHERE c.id = $1 AND c.account_id = $2), " \
    "t AS (UPDATE containers u SET last_active_at = now() FROM k " \
    "  WHERE u.id = k.id AND NOT k.expired RETURNING u.id) "

static const char fe_sql_container_get[] =
    "SELECT "
    FE_SQL_CONTAINER_JSON
    " FROM containers c WHERE c.id = $1 AND c.account_id = $2";

/* A retrieve is a use: the touched row when running, else the row as it is. */
static const char fe_sql_container_retrieve[] =
    "WITH k AS (SELECT * FROM containers WHERE id = $1 AND account_id = $2), "
    "t AS (UPDATE containers u SET last_active_at = now() FROM k WHERE u.id = k.id AND NOT "
    FE_SQL_EXPIRED("k")
    " RETURNING u.*) "
    "SELECT "
    FE_SQL_CONTAINER_JSON
    " FROM (SELECT * FROM t UNION ALL SELECT * FROM k WHERE NOT EXISTS (SELECT 1 FROM t)) c";

/* The container and its copied files in one statement: both or neither. A
 * file deleted since the caller looked it up is skipped. */
static const char fe_sql_container_create[] =
    "WITH c AS (INSERT INTO containers (id, account_id, name, memory_limit, expires_minutes, network_policy) "
    "  VALUES ($1, $2, $3, $4, $5::int, $6::jsonb) RETURNING *), "
    "f AS (INSERT INTO container_files (id, container_id, path, source, bytes, content) "
    "  SELECT x.id, c.id, x.path, 'user', s.bytes, s.content "
    "  FROM c CROSS JOIN jsonb_to_recordset($7::jsonb) AS x(file_id text, id text, path text) "
    "  JOIN files s ON s.id = x.file_id AND s.account_id = $2 RETURNING 1) "
    "SELECT "
    FE_SQL_CONTAINER_JSON
    " FROM c";

static const char fe_sql_container_files_meta[] =
    "SELECT id, filename, bytes FROM files WHERE account_id = $1 "
    "AND id IN (SELECT jsonb_array_elements_text($2::jsonb))";

static const char fe_sql_container_list[] =
    "SELECT COALESCE(json_agg(x.o ORDER BY x.n), '[]') FROM (SELECT "
    FE_SQL_CONTAINER_JSON
    " AS o, row_number() OVER ("
    FE_SQL_PAGE_ORDER("c", "$3")
    ") AS n "
    "  FROM containers c WHERE c.account_id = $1 AND ($5::text IS NULL OR c.name = $5) "
    "  AND ($4::text IS NULL OR (CASE WHEN $3 = 'asc' THEN (c.created_at, c.id) > "
    "      (SELECT a.created_at, a.id FROM containers a WHERE a.id = $4 AND a.account_id = $1) "
    "    ELSE (c.created_at, c.id) < (SELECT a.created_at, a.id FROM containers a "
    "      WHERE a.id = $4 AND a.account_id = $1) END)) "
    "  ORDER BY n LIMIT $2::int) x";

static const char fe_sql_container_delete[] =
    "DELETE FROM containers WHERE id = $1 AND account_id = $2 RETURNING id";

static const char fe_sql_cfile_source[] =
    "SELECT "
    FE_SQL_EXPIRED("c")
    ", s.filename, s.bytes FROM containers c LEFT JOIN files s ON s.id = $3 AND s.account_id = $2 "
    "WHERE c.id = $1 AND c.account_id = $2";

/* The container row is locked (FOR UPDATE) so that uploads to one
 * container take turns; the limits count the container's other files (a
 * file at the same path is about to be replaced). A statement's snapshot
 * is taken before it waits for the lock, so two uploads racing at the
 * limit may both pass: the limits are a guard against abuse, not a quota
 * to the byte. */
static const char fe_sql_cfile_insert[] =
    "WITH k AS (SELECT c.id, "
    FE_SQL_EXPIRED("c")
    " AS expired FROM containers c WHERE c.id = $1 AND c.account_id = $2 FOR UPDATE), "
    "d AS (SELECT decode($5::text, 'base64') AS content WHERE $5::text IS NOT NULL "
    "  UNION ALL SELECT s.content FROM files s WHERE $5::text IS NULL AND s.id = $6 AND s.account_id = $2), "
    "o AS (SELECT count(*) AS n, COALESCE(sum(f.bytes), 0) AS total FROM container_files f "
    "  JOIN k ON f.container_id = k.id WHERE f.path <> $4::text), "
    "v AS (SELECT k.id, CASE WHEN k.expired THEN 'expired' "
    "  WHEN NOT EXISTS (SELECT 1 FROM d) THEN 'file_missing' "
    "  WHEN o.n + 1 > $7::int THEN 'too_many' "
    "  WHEN o.total + (SELECT length(d.content) FROM d) > $8::bigint THEN 'too_large' "
    "  ELSE 'ok' END AS outcome FROM k, o), "
    "t AS (UPDATE containers u SET last_active_at = now() FROM v WHERE u.id = v.id AND v.outcome = 'ok' "
    "  RETURNING u.id), "
    "i AS (INSERT INTO container_files (id, container_id, path, source, bytes, content) "
    "  SELECT $3, t.id, $4::text, 'user', length(d.content), d.content FROM t, d "
    "  ON CONFLICT (container_id, path) DO UPDATE SET id = EXCLUDED.id, source = EXCLUDED.source, "
    "    bytes = EXCLUDED.bytes, content = EXCLUDED.content, created_at = now() RETURNING *) "
    "SELECT v.outcome, (SELECT "
    FE_SQL_CFILE_JSON
    " FROM i f) FROM v";

static const char fe_sql_cfile_list[] =
    FE_SQL_CFILE_USE
    "SELECT k.expired, CASE WHEN k.expired THEN NULL ELSE "
    "  (SELECT COALESCE(json_agg(x.o ORDER BY x.n), '[]') FROM (SELECT "
    FE_SQL_CFILE_JSON
    " AS o, row_number() OVER ("
    FE_SQL_PAGE_ORDER("f", "$4")
    ") AS n "
    "    FROM container_files f WHERE f.container_id = k.id "
    "    AND ($5::text IS NULL OR (CASE WHEN $4 = 'asc' THEN (f.created_at, f.id) > "
    "        (SELECT a.created_at, a.id FROM container_files a WHERE a.id = $5 AND a.container_id = k.id) "
    "      ELSE (f.created_at, f.id) < (SELECT a.created_at, a.id FROM container_files a "
    "        WHERE a.id = $5 AND a.container_id = k.id) END)) "
    "    ORDER BY n LIMIT $3::int) x) END FROM k";

static const char fe_sql_cfile_get[] =
    FE_SQL_CFILE_USE
    "SELECT k.expired, CASE WHEN k.expired THEN NULL ELSE (SELECT "
    FE_SQL_CFILE_JSON
    " FROM container_files f WHERE f.container_id = k.id AND f.id = $3) END FROM k";

static const char fe_sql_cfile_content[] =
    FE_SQL_CFILE_USE
    "SELECT k.expired, f.path, translate(encode(f.content, 'base64'), E'\\n', '') FROM k "
    "LEFT JOIN container_files f ON f.container_id = k.id AND f.id = $3 AND NOT k.expired";

static const char fe_sql_cfile_delete[] =
    FE_SQL_CFILE_USE
    ", d AS (DELETE FROM container_files f USING k WHERE f.container_id = k.id AND f.id = $3 "
    "  AND NOT k.expired RETURNING f.id) "
    "SELECT k.expired, (SELECT d.id FROM d) FROM k";

/* clang-format on */

const sb_db_stmt_t fe_sql_container_statements[] = {
    {FE_SQL_CONTAINER_GET, fe_sql_container_get},
    {FE_SQL_CONTAINER_RETRIEVE, fe_sql_container_retrieve},
    {FE_SQL_CONTAINER_CREATE, fe_sql_container_create},
    {FE_SQL_CONTAINER_FILES_META, fe_sql_container_files_meta},
    {FE_SQL_CONTAINER_LIST, fe_sql_container_list},
    {FE_SQL_CONTAINER_DELETE, fe_sql_container_delete},
    {FE_SQL_CFILE_SOURCE, fe_sql_cfile_source},
    {FE_SQL_CFILE_INSERT, fe_sql_cfile_insert},
    {FE_SQL_CFILE_LIST, fe_sql_cfile_list},
    {FE_SQL_CFILE_GET, fe_sql_cfile_get},
    {FE_SQL_CFILE_CONTENT, fe_sql_cfile_content},
    {FE_SQL_CFILE_DELETE, fe_sql_cfile_delete},
};
const int fe_sql_container_statement_count =
    (int)(sizeof fe_sql_container_statements / sizeof fe_sql_container_statements[0]);

/* wsql_containers: the code interpreter's statements (wsql_containers.h). */
#include "wsql_containers.h"

/* $1 container id, $2 account -> one row per file: path, content as
 * base64 (a row with a NULL path when the container has no file), or no row
 * when the container is another account's, gone or expired. Reading marks
 * the container active. */
static const char sb_wsql_container_files[] =
    "WITH c AS (UPDATE containers SET last_active_at = now() WHERE id = $1 AND account_id = $2::bigint "
    "  AND last_active_at + make_interval(mins => expires_minutes) >= now() RETURNING id) "
    "SELECT f.path, translate(encode(f.content, 'base64'), E'\\n', '') FROM c LEFT JOIN container_files f ON c.id = "
    "f.container_id "
    "ORDER BY f.path";

/* container "auto": $1 new container id, $2 account, $3 name, $4 memory
 * limit, $5 file ids (a text[] literal) copied in from the account's
 * uploaded files -> the copied files: path, content as base64 (a row with a
 * NULL path when none). A file's name is its last path component (no "/"
 * or "\\"), and a name that is empty, "." or "..", has a control
 * character or is over 255 bytes is not copied (as the Containers API's
 * fe_container_path refuses it); at most 100 files (the API's cap). */
static const char sb_wsql_container_create[] =
    "WITH c AS (INSERT INTO containers (id, account_id, name, memory_limit) VALUES ($1, $2::bigint, $3, $4) "
    "  RETURNING id), "
    "named AS (SELECT f.id, regexp_replace(f.filename, '^.*[/\\\\]', '') AS name, f.bytes, f.content, f.created_at "
    "  FROM files f WHERE f.id = ANY($5::text[]) AND f.account_id = $2::bigint), "
    "ins AS (INSERT INTO container_files (id, container_id, path, source, bytes, content) "
    "  SELECT DISTINCT ON (n.name) 'cfile_' || md5(random()::text || n.id), c.id, '/mnt/data/' || n.name, "
    "    'user', n.bytes, n.content FROM c, named n "
    "  WHERE n.name NOT IN ('', '.', '..') AND n.name !~ '[[:cntrl:]]' AND octet_length(n.name) <= 255 "
    "  ORDER BY n.name, n.created_at DESC LIMIT 100 "
    "  RETURNING path, content) "
    "SELECT ins.path, translate(encode(ins.content, 'base64'), E'\\n', '') FROM c LEFT JOIN ins ON true";

/* A file the code wrote: $1 new file id, $2 container, $3 account, $4 path,
 * $5 content as base64 -> the file's id and path (the path's existing row is
 * replaced: a new id, as OpenAI's), or no row when the container is not
 * the account's or the file would take it over the Containers API's caps
 * (100 files, 64 MiB). */
static const char sb_wsql_container_file_put[] =
    "INSERT INTO container_files (id, container_id, path, source, bytes, content) "
    "SELECT $1, c.id, $4, 'assistant', length(decode($5, 'base64')), decode($5, 'base64') "
    "FROM containers c WHERE c.id = $2 AND c.account_id = $3::bigint "
    "  AND (SELECT count(*) FROM container_files x WHERE x.container_id = c.id AND x.path <> $4) < 100 "
    "  AND (SELECT COALESCE(sum(x.bytes), 0) FROM container_files x WHERE x.container_id = c.id AND x.path <> $4) "
    "      + length(decode($5, 'base64')) <= 67108864 "
    "ON CONFLICT (container_id, path) DO UPDATE SET id = EXCLUDED.id, source = 'assistant', "
    "  bytes = EXCLUDED.bytes, content = EXCLUDED.content, created_at = now() RETURNING id, path";

const sb_db_stmt_t sb_wsql_container_statements[] = {
    {SB_WSQL_CONTAINER_FILES, sb_wsql_container_files},
    {SB_WSQL_CONTAINER_CREATE, sb_wsql_container_create},
    {SB_WSQL_CONTAINER_FILE_PUT, sb_wsql_container_file_put},
};
const int sb_wsql_container_statement_count =
    (int)(sizeof sb_wsql_container_statements / sizeof sb_wsql_container_statements[0]);

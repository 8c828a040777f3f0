/* fe_sql_vstores: the Vector Stores API's statements (fe_sql_vstores.h). */
#include "fe_sql_vstores.h"

/* A vector store v has expired when it has an expiry policy and was last
 * active more than that many days ago (OpenAI's only anchor is
 * last_active_at). */
#define FE_SQL_VSTORE_EXPIRED                                                                                          \
    "(v.expires_after IS NOT NULL AND "                                                                                \
    " v.last_active_at + make_interval(days => (v.expires_after->>'days')::int) < now())"

/* The vector store object as OpenAI shows it, from the row v and the file
 * counts f (in_progress, completed, failed, cancelled, total, usage_bytes). */
#define FE_SQL_VSTORE_JSON                                                                                             \
    "json_build_object('id', v.id, 'object', 'vector_store', 'name', v.name, "                                         \
    "  'created_at', extract(epoch FROM v.created_at)::bigint, "                                                       \
    "  'last_active_at', extract(epoch FROM v.last_active_at)::bigint, 'metadata', v.metadata, "                       \
    "  'expires_after', v.expires_after, 'expires_at', CASE WHEN v.expires_after IS NULL THEN NULL ELSE "              \
    "    extract(epoch FROM v.last_active_at + make_interval(days => (v.expires_after->>'days')::int))::bigint END, "  \
    "  'status', CASE WHEN " FE_SQL_VSTORE_EXPIRED " THEN 'expired' WHEN f.in_progress > 0 THEN 'in_progress' "        \
    "    ELSE 'completed' END, "                                                                                       \
    "  'usage_bytes', f.usage_bytes, "                                                                                 \
    "  'file_counts', json_build_object('in_progress', f.in_progress, 'completed', f.completed, "                      \
    "    'failed', f.failed, 'cancelled', f.cancelled, 'total', f.total))"

/* The counts FE_SQL_VSTORE_JSON reads, over the files of the store v. */
#define FE_SQL_VSTORE_COUNTS                                                                                           \
    "LATERAL (SELECT count(*) FILTER (WHERE status = 'in_progress') AS in_progress, "                                  \
    "  count(*) FILTER (WHERE status = 'completed') AS completed, count(*) FILTER (WHERE status = 'failed') AS "       \
    "failed, "                                                                                                         \
    "  count(*) FILTER (WHERE status = 'cancelled') AS cancelled, count(*) AS total, "                                 \
    "  COALESCE(sum(usage_bytes), 0)::bigint AS usage_bytes FROM vector_store_files WHERE vector_store_id = v.id) f"

/* The vector store file object, from the vector_store_files row vf. */
#define FE_SQL_VSTORE_FILE_JSON                                                                                        \
    "json_build_object('id', vf.file_id, 'object', 'vector_store.file', 'usage_bytes', vf.usage_bytes, "               \
    "  'created_at', extract(epoch FROM vf.created_at)::bigint, 'vector_store_id', vf.vector_store_id, "               \
    "  'status', vf.status, 'last_error', vf.last_error, 'attributes', vf.attributes, "                                \
    "  'chunking_strategy', vf.chunking_strategy)"

/* The file batch object, from the batch row b and the counts g of its files
 * (in_progress, completed, failed, cancelled, total). A batch whose every
 * file failed has failed; one cancelled while files were in progress is
 * cancelled. */
#define FE_SQL_VSTORE_BATCH_JSON                                                                                       \
    "json_build_object('id', b.id, 'object', 'vector_store.files_batch', "                                             \
    "  'created_at', extract(epoch FROM b.created_at)::bigint, 'vector_store_id', b.vector_store_id, "                 \
    "  'status', CASE WHEN b.cancelled THEN 'cancelled' WHEN g.in_progress > 0 THEN 'in_progress' "                    \
    "    WHEN g.total > 0 AND g.failed = g.total THEN 'failed' ELSE 'completed' END, "                                 \
    "  'file_counts', json_build_object('in_progress', g.in_progress, 'completed', g.completed, "                      \
    "    'failed', g.failed, 'cancelled', g.cancelled, 'total', g.total))"

#define FE_SQL_VSTORE_BATCH_COUNTS                                                                                     \
    "LATERAL (SELECT count(*) FILTER (WHERE status = 'in_progress') AS in_progress, "                                  \
    "  count(*) FILTER (WHERE status = 'completed') AS completed, count(*) FILTER (WHERE status = 'failed') AS "       \
    "failed, "                                                                                                         \
    "  count(*) FILTER (WHERE status = 'cancelled') AS cancelled, count(*) AS total "                                  \
    "  FROM vector_store_files WHERE batch_id = b.id) g"

/* The files a request attaches, from the JSON array $P of {file_id,
 * attributes, chunking_strategy} (the frontend's checked and completed
 * copy): req, one row per distinct file id (its first mention); found, those
 * that are files of account $2 with their filename; missing, the first one
 * that is not. */
#define FE_SQL_VSTORE_REQ(P)                                                                                           \
    "req AS (SELECT DISTINCT ON (x.f->>'file_id') x.f->>'file_id' AS file_id, x.ord, "                                 \
    "  COALESCE(NULLIF(x.f->'attributes', 'null'::jsonb), '{}'::jsonb) AS attributes, "                                \
    "  x.f->'chunking_strategy' AS cs "                                                                                \
    "  FROM jsonb_array_elements(" P "::jsonb) WITH ORDINALITY AS x(f, ord) ORDER BY x.f->>'file_id', x.ord), "        \
    "found AS (SELECT req.*, fl.filename FROM req JOIN files fl ON fl.id = req.file_id AND fl.account_id = $2), "      \
    "missing AS (SELECT req.file_id FROM req WHERE NOT EXISTS (SELECT 1 FROM found WHERE found.file_id = "             \
    "req.file_id) "                                                                                                    \
    "  ORDER BY req.ord LIMIT 1)"

/* $1 vector store id, $2 account -> the vector store object. */
static const char fe_sql_vstore_get[] = "SELECT " FE_SQL_VSTORE_JSON " FROM vector_stores v, " FE_SQL_VSTORE_COUNTS
                                        " WHERE v.id = $1 AND v.account_id = $2";

/* $1 new id, $2 account, $3 name, $4 metadata, $5 expires_after, $6
 * embedding model, $7 files to attach (FE_SQL_VSTORE_REQ) -> missing file
 * id, vector store object. When a file is missing nothing is written and
 * the object is NULL; else the store and its files (in_progress) are one
 * insert. */
static const char fe_sql_vstore_create[] = "WITH " FE_SQL_VSTORE_REQ(
    "$7") ", "
          "v AS (INSERT INTO vector_stores (id, account_id, name, metadata, expires_after, embedding_model) "
          "  SELECT $1, $2, $3, COALESCE($4::jsonb, '{}'::jsonb), $5::jsonb, $6 WHERE NOT EXISTS (SELECT 1 FROM "
          "missing) "
          "  RETURNING *), "
          "vf AS (INSERT INTO vector_store_files (vector_store_id, file_id, filename, attributes, chunking_strategy) "
          "  SELECT v.id, found.file_id, found.filename, found.attributes, found.cs FROM v, found RETURNING file_id) "
          "SELECT (SELECT file_id FROM missing), (SELECT " FE_SQL_VSTORE_JSON " FROM v, "
          "  (SELECT count(*) AS in_progress, 0 AS completed, 0 AS failed, 0 AS cancelled, count(*) AS total, "
          "   0::bigint AS usage_bytes FROM vf) f)";

/* $1 account, $2 limit + 1, $3 'asc'|'desc', $4 after id or NULL -> vector
 * store objects (JSON array) by created_at, then id. */
static const char fe_sql_vstore_list[] =
    "SELECT COALESCE(json_agg(x.o ORDER BY x.n), '[]') FROM (SELECT " FE_SQL_VSTORE_JSON " AS o, "
    "  row_number() OVER (ORDER BY CASE WHEN $3 = 'asc' THEN v.created_at END ASC, "
    "    CASE WHEN $3 <> 'asc' THEN v.created_at END DESC, "
    "    CASE WHEN $3 = 'asc' THEN v.id END ASC, CASE WHEN $3 <> 'asc' THEN v.id END DESC) AS n "
    "  FROM vector_stores v, " FE_SQL_VSTORE_COUNTS " WHERE v.account_id = $1 "
    "  AND ($4::text IS NULL OR (CASE WHEN $3 = 'asc' THEN (v.created_at, v.id) > "
    "      (SELECT a.created_at, a.id FROM vector_stores a WHERE a.id = $4 AND a.account_id = $1) "
    "    ELSE (v.created_at, v.id) < (SELECT a.created_at, a.id FROM vector_stores a "
    "      WHERE a.id = $4 AND a.account_id = $1) END)) "
    "  ORDER BY n LIMIT $2::int) x";

/* $1 id, $2 account, $3 the changes {name?, metadata?, expires_after?} (a
 * key present sets it; null clears it) -> the vector store object. A
 * modification is activity: last_active_at moves (unless expired). */
static const char fe_sql_vstore_update[] =
    "WITH u AS (UPDATE vector_stores v SET "
    "  name = CASE WHEN $3::jsonb ? 'name' THEN $3::jsonb->>'name' ELSE v.name END, "
    "  metadata = CASE WHEN $3::jsonb ? 'metadata' THEN COALESCE(NULLIF($3::jsonb->'metadata', 'null'::jsonb), "
    "    '{}'::jsonb) ELSE v.metadata END, "
    "  expires_after = CASE WHEN $3::jsonb ? 'expires_after' THEN NULLIF($3::jsonb->'expires_after', 'null'::jsonb) "
    "    ELSE v.expires_after END, "
    "  last_active_at = CASE WHEN " FE_SQL_VSTORE_EXPIRED " THEN v.last_active_at ELSE now() END "
    "  WHERE v.id = $1 AND v.account_id = $2 RETURNING v.*) "
    "SELECT " FE_SQL_VSTORE_JSON " FROM u v, " FE_SQL_VSTORE_COUNTS;

/* $1 id, $2 account -> id. Its files, batches and chunks go with it
 * (ON DELETE CASCADE). */
static const char fe_sql_vstore_delete[] = "DELETE FROM vector_stores WHERE id = $1 AND account_id = $2 RETURNING id";

/* $1 id, $2 account -> embedding model, expired. The store is about to be
 * used (a search, a file attached): that is activity, so last_active_at
 * moves, unless it has expired already (an expired store stays expired). */
static const char fe_sql_vstore_use[] =
    "UPDATE vector_stores v SET last_active_at = CASE WHEN " FE_SQL_VSTORE_EXPIRED " THEN v.last_active_at "
    "  ELSE now() END "
    "WHERE v.id = $1 AND v.account_id = $2 "
    "RETURNING v.embedding_model, (v.expires_after IS NOT NULL AND v.last_active_at + "
    "  make_interval(days => (v.expires_after->>'days')::int) < now())";

/* $1 vector store id, $2 account, $3 batch id or NULL, $4 files to attach
 * (FE_SQL_VSTORE_REQ) -> store found, missing file id, the attached files'
 * objects (JSON array), the batch object (NULL without $3). When a file is
 * missing nothing is written. A file already in the store is attached
 * again: its row starts over (in_progress, no error, the new attributes,
 * strategy and batch) and its old chunks are dropped in the same
 * statement, so a search never mixes two ingestions. */
static const char fe_sql_vstore_files_add[] =
    "WITH v AS (SELECT id FROM vector_stores WHERE id = $1 AND account_id = $2), " FE_SQL_VSTORE_REQ(
        "$4") ", "
              "ok AS (SELECT v.id FROM v WHERE NOT EXISTS (SELECT 1 FROM missing)), "
              "b AS (INSERT INTO vector_store_file_batches (id, vector_store_id) SELECT $3, ok.id FROM ok "
              "  WHERE $3::text IS NOT NULL RETURNING *), "
              "gone AS (DELETE FROM vector_store_chunks c USING ok, found "
              "  WHERE c.vector_store_id = ok.id AND c.file_id = found.file_id), "
              "vf AS (INSERT INTO vector_store_files (vector_store_id, file_id, filename, batch_id, attributes, "
              "  chunking_strategy) SELECT ok.id, found.file_id, found.filename, $3, found.attributes, found.cs FROM "
              "ok, found "
              "  ON CONFLICT (vector_store_id, file_id) DO UPDATE SET filename = EXCLUDED.filename, "
              "    batch_id = EXCLUDED.batch_id, status = 'in_progress', last_error = NULL, "
              "    attributes = EXCLUDED.attributes, chunking_strategy = EXCLUDED.chunking_strategy, usage_bytes = 0, "
              "    created_at = now() "
              "  RETURNING *) "
              "SELECT (SELECT count(*) FROM v), (SELECT file_id FROM missing), "
              "  (SELECT COALESCE(json_agg(" FE_SQL_VSTORE_FILE_JSON "), '[]') FROM vf), "
              "  (SELECT " FE_SQL_VSTORE_BATCH_JSON
              " FROM b, (SELECT count(*) AS in_progress, 0 AS completed, 0 AS failed, "
              "    0 AS cancelled, count(*) AS total FROM vf) g)";

/* $1 vector store id, $2 account, $3 file id -> the vector store file object. */
static const char fe_sql_vstore_file_get[] =
    "SELECT " FE_SQL_VSTORE_FILE_JSON " FROM vector_store_files vf JOIN vector_stores v ON v.id = vf.vector_store_id "
    "WHERE vf.vector_store_id = $1 AND v.account_id = $2 AND vf.file_id = $3";

/* $1 vector store id, $2 account, $3 file id, $4 attributes (null: none)
 * -> the vector store file object. Chunks are searched by their file's
 * attributes, so a change applies to the next search at once. */
static const char fe_sql_vstore_file_update[] =
    "UPDATE vector_store_files vf SET attributes = COALESCE(NULLIF($4::jsonb, 'null'::jsonb), '{}'::jsonb) "
    "FROM vector_stores v WHERE v.id = vf.vector_store_id AND vf.vector_store_id = $1 AND v.account_id = $2 "
    "AND vf.file_id = $3 RETURNING " FE_SQL_VSTORE_FILE_JSON;

/* $1 vector store id, $2 account, $3 file id -> file id. Its chunks go with
 * it (ON DELETE CASCADE); the file itself stays in the Files API. */
static const char fe_sql_vstore_file_delete[] =
    "DELETE FROM vector_store_files vf USING vector_stores v WHERE v.id = vf.vector_store_id "
    "AND vf.vector_store_id = $1 AND v.account_id = $2 AND vf.file_id = $3 RETURNING vf.file_id";

/* $1 vector store id, $2 account, $3 limit + 1, $4 'asc'|'desc', $5 after
 * file id or NULL, $6 status or NULL, $7 batch id or NULL -> vector store
 * file objects (JSON array) by created_at, then file id; NULL when the store
 * (or the batch, in that store) is not the account's. */
static const char fe_sql_vstore_file_list[] =
    "SELECT CASE WHEN EXISTS (SELECT 1 FROM vector_stores WHERE id = $1 AND account_id = $2) "
    "  AND ($7::text IS NULL OR EXISTS (SELECT 1 FROM vector_store_file_batches WHERE id = $7 "
    "    AND vector_store_id = $1)) THEN "
    "(SELECT COALESCE(json_agg(x.o ORDER BY x.n), '[]') FROM (SELECT " FE_SQL_VSTORE_FILE_JSON " AS o, "
    "  row_number() OVER (ORDER BY CASE WHEN $4 = 'asc' THEN vf.created_at END ASC, "
    "    CASE WHEN $4 <> 'asc' THEN vf.created_at END DESC, "
    "    CASE WHEN $4 = 'asc' THEN vf.file_id END ASC, CASE WHEN $4 <> 'asc' THEN vf.file_id END DESC) AS n "
    "  FROM vector_store_files vf WHERE vf.vector_store_id = $1 "
    "  AND ($6::text IS NULL OR vf.status = $6) AND ($7::text IS NULL OR vf.batch_id = $7) "
    "  AND ($5::text IS NULL OR (CASE WHEN $4 = 'asc' THEN (vf.created_at, vf.file_id) > "
    "      (SELECT a.created_at, a.file_id FROM vector_store_files a WHERE a.vector_store_id = $1 AND a.file_id = $5) "
    "    ELSE (vf.created_at, vf.file_id) < (SELECT a.created_at, a.file_id FROM vector_store_files a "
    "      WHERE a.vector_store_id = $1 AND a.file_id = $5) END)) "
    "  ORDER BY n LIMIT $3::int) x) END";

/* $1 vector store id, $2 account, $3 file id -> the file's chunks' texts in
 * order (JSON array); no row when the file is not in the account's store. */
static const char fe_sql_vstore_file_content[] =
    "SELECT COALESCE((SELECT json_agg(c.text ORDER BY c.seq) FROM vector_store_chunks c "
    "  WHERE c.vector_store_id = vf.vector_store_id AND c.file_id = vf.file_id), '[]') "
    "FROM vector_store_files vf JOIN vector_stores v ON v.id = vf.vector_store_id "
    "WHERE vf.vector_store_id = $1 AND v.account_id = $2 AND vf.file_id = $3";

/* $1 vector store id, $2 account, $3 batch id -> the batch object. */
static const char fe_sql_vstore_batch_get[] =
    "SELECT " FE_SQL_VSTORE_BATCH_JSON " FROM vector_store_file_batches b "
    "JOIN vector_stores v ON v.id = b.vector_store_id, " FE_SQL_VSTORE_BATCH_COUNTS " "
    "WHERE b.id = $3 AND b.vector_store_id = $1 AND v.account_id = $2";

/* $1 vector store id, $2 account, $3 batch id -> the batch object after the
 * cancel. Its files still in progress become cancelled (a worker writes an
 * ingestion's result only while its row is in progress, so a late one does
 * not revive them); a batch with none left in progress is as it was. The
 * counts are read before the update (one snapshot), so its in-progress
 * files are counted as the cancelled ones they now are. */
static const char fe_sql_vstore_batch_cancel[] =
    "WITH b AS (UPDATE vector_store_file_batches b SET cancelled = b.cancelled OR EXISTS (SELECT 1 "
    "    FROM vector_store_files WHERE batch_id = b.id AND status = 'in_progress') "
    "  FROM vector_stores v WHERE v.id = b.vector_store_id AND b.id = $3 AND b.vector_store_id = $1 "
    "  AND v.account_id = $2 RETURNING b.*), "
    "c AS (UPDATE vector_store_files SET status = 'cancelled' WHERE batch_id IN (SELECT id FROM b) "
    "  AND status = 'in_progress') "
    "SELECT " FE_SQL_VSTORE_BATCH_JSON " FROM b, "
    "  LATERAL (SELECT 0 AS in_progress, count(*) FILTER (WHERE status = 'completed') AS completed, "
    "    count(*) FILTER (WHERE status = 'failed') AS failed, "
    "    count(*) FILTER (WHERE status IN ('in_progress', 'cancelled')) AS cancelled, count(*) AS total "
    "    FROM vector_store_files WHERE batch_id = b.id) g";

/* $1 vector store id, $2 file id, $3 message: an ingestion job the frontend
 * submitted ended in an error event (no worker, its deadline, the embeddings
 * upstream) before its worker settled the row. Only a row still in progress
 * changes: a worker's own completed/failed, a cancel or a later attach win. */
static const char fe_sql_vstore_ingest_failed[] =
    "UPDATE vector_store_files SET status = 'failed', "
    "  last_error = jsonb_build_object('code', 'server_error', 'message', $3::text) "
    "WHERE vector_store_id = $1 AND file_id = $2 AND status = 'in_progress'";

const sb_db_stmt_t fe_sql_vstore_statements[] = {
    {FE_SQL_VSTORE_GET, fe_sql_vstore_get},
    {FE_SQL_VSTORE_CREATE, fe_sql_vstore_create},
    {FE_SQL_VSTORE_LIST, fe_sql_vstore_list},
    {FE_SQL_VSTORE_UPDATE, fe_sql_vstore_update},
    {FE_SQL_VSTORE_DELETE, fe_sql_vstore_delete},
    {FE_SQL_VSTORE_USE, fe_sql_vstore_use},
    {FE_SQL_VSTORE_FILES_ADD, fe_sql_vstore_files_add},
    {FE_SQL_VSTORE_FILE_GET, fe_sql_vstore_file_get},
    {FE_SQL_VSTORE_FILE_UPDATE, fe_sql_vstore_file_update},
    {FE_SQL_VSTORE_FILE_DELETE, fe_sql_vstore_file_delete},
    {FE_SQL_VSTORE_FILE_LIST, fe_sql_vstore_file_list},
    {FE_SQL_VSTORE_FILE_CONTENT, fe_sql_vstore_file_content},
    {FE_SQL_VSTORE_BATCH_GET, fe_sql_vstore_batch_get},
    {FE_SQL_VSTORE_BATCH_CANCEL, fe_sql_vstore_batch_cancel},
    {FE_SQL_VSTORE_INGEST_FAILED, fe_sql_vstore_ingest_failed},
};
const int fe_sql_vstore_statement_count = (int)(sizeof fe_sql_vstore_statements / sizeof fe_sql_vstore_statements[0]);

/* wsql_vstores: file search's statements (wsql_vstores.h). */
#include "wsql_vstores.h"

static const char sb_wsql_vs_ingest_read[] =
    "SELECT vf.status, f.filename, f.mime_type, f.content, vf.chunking_strategy, vf.filename "
    "FROM vector_store_files vf JOIN vector_stores v ON v.id = vf.vector_store_id AND v.account_id = $3::bigint "
    "LEFT JOIN files f ON f.id = vf.file_id AND f.account_id = $3::bigint "
    "WHERE vf.vector_store_id = $1 AND vf.file_id = $2";

/* The UPDATE's row lock makes a second job for the same file (or a cancel
 * racing this one) wait and then find it no longer in progress: chunks are
 * written once, and a cancelled or deleted file is never revived. */
static const char sb_wsql_vs_ingest_write[] =
    "WITH f AS (UPDATE vector_store_files vf SET status = 'completed', last_error = NULL, usage_bytes = $7::bigint "
    "  FROM vector_stores v WHERE vf.vector_store_id = $1 AND vf.file_id = $2 AND vf.status = 'in_progress' "
    "  AND v.id = vf.vector_store_id AND v.account_id = $3::bigint RETURNING vf.file_id), "
    "ins AS (INSERT INTO vector_store_chunks (vector_store_id, file_id, seq, text, embedding) "
    "  SELECT $1, f.file_id, (t.ord - 1)::int, t.txt, ($5::real[])[(t.ord - 1) * $6::int + 1 : t.ord * $6::int] "
    "  FROM f, unnest($4::text[]) WITH ORDINALITY AS t(txt, ord) RETURNING 1) "
    "SELECT (SELECT count(*) FROM f), (SELECT count(*) FROM ins)";

static const char sb_wsql_vs_ingest_fail[] =
    "UPDATE vector_store_files vf SET status = 'failed', last_error = $4::jsonb FROM vector_stores v "
    "WHERE vf.vector_store_id = $1 AND vf.file_id = $2 AND vf.status = 'in_progress' "
    "AND v.id = vf.vector_store_id AND v.account_id = $3::bigint RETURNING 1";

/* A store past its expires_after ({"anchor":"last_active_at","days":N}) is
 * not searched, and so not made active again. */
static const char sb_wsql_vs_search_files[] =
    "WITH v AS (UPDATE vector_stores SET last_active_at = now() WHERE id = ANY($1::text[]) "
    "  AND account_id = $2::bigint AND (expires_after IS NULL OR jsonb_typeof(expires_after->'days') <> 'number' "
    "  OR last_active_at + (expires_after->>'days')::numeric * interval '1 day' >= now()) RETURNING id) "
    "SELECT vf.vector_store_id, vf.file_id, vf.filename, vf.attributes FROM vector_store_files vf "
    "JOIN v ON v.id = vf.vector_store_id WHERE vf.status = 'completed'";

/* Exact ranking (docs: file search): every chunk of the allowed files is
 * scored once (the materialised CTEs: the query is parsed once, not per
 * row, and a score written twice would be computed twice), as embedding_weight * cosine (a dot product: both vectors
 * are unit length; below 0 counts as 0) plus text_weight * ts_rank_cd normalised to [0, 1) (flag 32: rank / (rank +
 * 1)), over the weights' sum. A chunk whose embedding has another size than the query's (a store re-embedded with
 * another model) scores on its text alone. */
static const char sb_wsql_vs_search_rank[] =
    "WITH p AS MATERIALIZED (SELECT websearch_to_tsquery('english', $4) AS q, $3::real[] AS e, "
    "  $5::float8 AS ew, $6::float8 AS tw), "
    "s AS MATERIALIZED (SELECT c.id, ("
    "  CASE WHEN p.ew > 0 AND array_length(c.embedding, 1) = array_length(p.e, 1) THEN p.ew * LEAST(GREATEST("
    "    (SELECT sum(x::float8 * y) FROM unnest(c.embedding, p.e) AS t(x, y)), 0), 1) ELSE 0 END "
    "  + CASE WHEN p.tw > 0 THEN p.tw * ts_rank_cd(c.tsv, p.q, 32) ELSE 0 END) / (p.ew + p.tw) AS score "
    "  FROM p, unnest($1::text[], $2::text[]) AS a(store, file) "
    "  JOIN vector_store_chunks c ON c.vector_store_id = a.store AND c.file_id = a.file), "
    "top AS (SELECT id, score FROM s WHERE score >= $7::float8 ORDER BY score DESC, id LIMIT $8::int) "
    "SELECT c.vector_store_id, c.file_id, c.seq, c.text, top.score FROM top "
    "JOIN vector_store_chunks c ON c.id = top.id ORDER BY top.score DESC, top.id";

const sb_db_stmt_t sb_wsql_vstore_statements[] = {
    {SB_WSQL_VS_INGEST_READ, sb_wsql_vs_ingest_read}, {SB_WSQL_VS_INGEST_WRITE, sb_wsql_vs_ingest_write},
    {SB_WSQL_VS_INGEST_FAIL, sb_wsql_vs_ingest_fail}, {SB_WSQL_VS_SEARCH_FILES, sb_wsql_vs_search_files},
    {SB_WSQL_VS_SEARCH_RANK, sb_wsql_vs_search_rank},
};
const int sb_wsql_vstore_statement_count =
    (int)(sizeof sb_wsql_vstore_statements / sizeof sb_wsql_vstore_statements[0]);

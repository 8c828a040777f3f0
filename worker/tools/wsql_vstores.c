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

/* Exact ranking (wtool_vsearch.h): every chunk of the allowed files is
 * scored, as embedding_weight * cosine (a dot product: both vectors are
 * unit length; below 0 counts as 0) plus text_weight * ts_rank_cd
 * normalised to [0, 1) (flag 32: rank / (rank + 1)), over the weights'
 * sum. The two halves are separate passes: the cosine over every chunk
 * (reading only its embedding), the text rank over the chunks that match
 * the query (found through the GIN index: a tsvector is read only for
 * them, not for every chunk), then joined. Without embedding weight only
 * matching chunks are results; a chunk whose embedding has another size
 * than the query's (a store embedded at another size) scores on its text
 * alone. The CTEs are materialised so that the query is parsed once, not
 * per row, and no score is computed twice. The dot product is the
 * fastest exact form measured without an extension (sb-vstore-bench):
 * both arrays unnested in a select list (streamed, where unnest in FROM
 * fills a tuplestore per row) and multiplied as real (sum() accumulates
 * in double precision): 2.2 times the speed of unnest(a, b) in FROM with
 * double products. */
static const char sb_wsql_vs_search_rank[] =
    "WITH p AS MATERIALIZED (SELECT websearch_to_tsquery('english', $4) AS q, $3::real[] AS e, "
    "  $5::float8 AS ew, $6::float8 AS tw), "
    "a AS MATERIALIZED (SELECT store, file FROM unnest($1::text[], $2::text[]) AS a(store, file)), "
    "v AS MATERIALIZED (SELECT c.id, CASE WHEN array_length(c.embedding, 1) = array_length(p.e, 1) THEN "
    "  LEAST(GREATEST((SELECT sum(x * y) FROM (SELECT unnest(c.embedding) AS x, unnest(p.e) AS y) AS t), 0), 1) "
    "  ELSE 0 END AS sim "
    "  FROM p, a JOIN vector_store_chunks c ON c.vector_store_id = a.store AND c.file_id = a.file WHERE p.ew > 0), "
    "t AS MATERIALIZED (SELECT c.id, ts_rank_cd(c.tsv, (SELECT q FROM p), 32) AS tr FROM vector_store_chunks c "
    "  WHERE (SELECT tw FROM p) > 0 AND c.tsv @@ (SELECT q FROM p) AND c.vector_store_id = ANY($1::text[]) "
    "  AND (c.vector_store_id, c.file_id) IN (SELECT store, file FROM a)), "
    "s AS (SELECT COALESCE(v.id, t.id) AS id, (p.ew * COALESCE(v.sim, 0) + p.tw * COALESCE(t.tr, 0)) / (p.ew + p.tw) "
    "  AS score FROM p, v FULL JOIN t ON t.id = v.id), "
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

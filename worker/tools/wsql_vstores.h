/*
 * wsql_vstores: file search's statements (schema/006): a vector store
 * file read for ingestion, its chunks and status written, the files of the
 * stores a search covers, and one query's ranking over their chunks. Each
 * takes the job's account and scopes to it; every value is a parameter
 * (arrays travel as PostgreSQL array literals, made by sb_vs_pg_array).
 */
#ifndef WSQL_VSTORES_H
#define WSQL_VSTORES_H

#include "sb_db.h"

/* $1 store, $2 file, $3 account -> one row: status, the file's filename,
 * mime_type and content (bytea; NULL when the file is gone), the vector
 * store file's chunking_strategy and filename; no row when the store or
 * its file is not the account's. */
#define SB_WSQL_VS_INGEST_READ "vs_ingest_read"
/* $1 store, $2 file, $3 account, $4 text[] chunk texts, $5 real[] their
 * embeddings end to end, $6 the embeddings' size, $7 usage_bytes -> one
 * row: files updated (0 when the file is no longer in progress: nothing
 * is written), chunks written. One statement, so one transaction. */
#define SB_WSQL_VS_INGEST_WRITE "vs_ingest_write"
/* $1 store, $2 file, $3 account, $4 last_error (jsonb) -> a row when the
 * file was in progress and is now failed. */
#define SB_WSQL_VS_INGEST_FAIL "vs_ingest_fail"
/* $1 text[] store ids, $2 account -> one row per completed file of the
 * account's unexpired stores among them: store, file, filename, attributes
 * (jsonb). Marks the stores active. */
#define SB_WSQL_VS_SEARCH_FILES "vs_search_files"
/* $1 text[] stores and $2 text[] files (pairwise: the files that may
 * answer), $3 real[] the query's unit embedding, $4 the query text, $5
 * embedding weight, $6 text weight, $7 score threshold, $8 most rows ->
 * rows store, file, seq, text, score, best first (wtool_vsearch.h). */
#define SB_WSQL_VS_SEARCH_RANK "vs_search_rank"

extern const sb_db_stmt_t sb_wsql_vstore_statements[];
extern const int sb_wsql_vstore_statement_count;

#endif

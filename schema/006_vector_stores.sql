-- 006_vector_stores: file search's vector stores (docs/tools.md). A store
-- holds files (rows of `files`, attached with attributes and a chunking
-- strategy); a worker ingests each attached file (extract text, chunk,
-- embed) and writes its chunks here; search ranks chunks by full-text
-- match and embedding similarity. Idempotent.

-- embedding_model: the deployment model (models.id) whose embeddings route
-- ingested the store's chunks; a query is embedded with the same one.
CREATE TABLE IF NOT EXISTS vector_stores (
    id               text PRIMARY KEY,
    account_id       bigint NOT NULL REFERENCES accounts(id),
    name             text,
    metadata         jsonb NOT NULL DEFAULT '{}',
    expires_after    jsonb,
    embedding_model  text NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now(),
    last_active_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS vector_stores_account_idx ON vector_stores (account_id, created_at);

CREATE TABLE IF NOT EXISTS vector_store_file_batches (
    id               text PRIMARY KEY,
    vector_store_id  text NOT NULL REFERENCES vector_stores(id) ON DELETE CASCADE,
    cancelled        boolean NOT NULL DEFAULT false,
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- status: in_progress -> completed | failed (last_error {code, message}) |
-- cancelled. The file row in `files` may be deleted later: the chunks stay
-- searchable until the vector store file itself is deleted (as OpenAI's).
CREATE TABLE IF NOT EXISTS vector_store_files (
    vector_store_id    text NOT NULL REFERENCES vector_stores(id) ON DELETE CASCADE,
    file_id            text NOT NULL,
    filename           text NOT NULL,
    batch_id           text REFERENCES vector_store_file_batches(id) ON DELETE SET NULL,
    status             text NOT NULL DEFAULT 'in_progress'
                       CHECK (status IN ('in_progress', 'completed', 'cancelled', 'failed')),
    last_error         jsonb,
    attributes         jsonb NOT NULL DEFAULT '{}',
    chunking_strategy  jsonb NOT NULL,
    usage_bytes        bigint NOT NULL DEFAULT 0,
    created_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (vector_store_id, file_id)
);
CREATE INDEX IF NOT EXISTS vector_store_files_batch_idx ON vector_store_files (batch_id);

-- One chunk of an ingested file. tsv is for the text half of hybrid search;
-- embedding is the vector half, ranked exactly over real[] (pgvector is not
-- in Debian 12's archive; docs/tools.md says how far exact ranking goes).
CREATE TABLE IF NOT EXISTS vector_store_chunks (
    id               bigserial PRIMARY KEY,
    vector_store_id  text NOT NULL,
    file_id          text NOT NULL,
    seq              integer NOT NULL,
    text             text NOT NULL,
    tsv              tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    embedding        real[] NOT NULL,
    FOREIGN KEY (vector_store_id, file_id) REFERENCES vector_store_files (vector_store_id, file_id) ON DELETE CASCADE,
    UNIQUE (vector_store_id, file_id, seq)
);
CREATE INDEX IF NOT EXISTS vector_store_chunks_tsv_idx ON vector_store_chunks USING gin (tsv);
CREATE INDEX IF NOT EXISTS vector_store_chunks_store_idx ON vector_store_chunks (vector_store_id);

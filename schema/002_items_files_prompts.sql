-- 002: stored context split from a response's own input, uploaded files,
-- prompt templates with versions, and stored chat completions.
-- Idempotent: safe to apply twice.

-- response_items.kind gains 'context': items inherited through
-- previous_response_id. 'input' is now only what the request itself sent
-- (what GET /v1/responses/{id}/input_items lists); the model saw
-- context, then input, and produced output.
ALTER TABLE response_items DROP CONSTRAINT IF EXISTS response_items_kind_check;
ALTER TABLE response_items ADD CONSTRAINT response_items_kind_check
    CHECK (kind IN ('context', 'input', 'output'));

-- Uploaded files (POST /v1/files), scoped to the owning account. The content
-- lives in the row: files are small (the frontend caps them) and must be
-- readable by any frontend instance.
CREATE TABLE IF NOT EXISTS files (
    id          text PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts(id),
    filename    text NOT NULL,
    purpose     text NOT NULL,
    mime_type   text NOT NULL,
    bytes       bigint NOT NULL CHECK (bytes >= 0),
    content     bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS files_account_idx ON files (account_id, created_at);

-- Prompt templates (the "prompt" parameter of the Responses style). A
-- template has numbered versions; current_version is the one used when a
-- request names no version. A version's body is
--   {"instructions": "..."?, "input": [input items]?}
-- whose texts may hold {{variable}} placeholders.
CREATE TABLE IF NOT EXISTS prompts (
    id               text PRIMARY KEY,
    account_id       bigint NOT NULL REFERENCES accounts(id),
    name             text NOT NULL,
    current_version  integer NOT NULL DEFAULT 1,
    created_at       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (account_id, name)
);

CREATE TABLE IF NOT EXISTS prompt_versions (
    prompt_id   text NOT NULL REFERENCES prompts(id) ON DELETE CASCADE,
    version     integer NOT NULL CHECK (version > 0),
    body        jsonb NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (prompt_id, version)
);

-- Stored chat completions (Chat Completions style, store defaults to true).
-- body is the chat.completion object as returned; messages the request's
-- messages (GET /v1/chat/completions/{id}/messages).
CREATE TABLE IF NOT EXISTS chat_completions (
    id          text PRIMARY KEY,
    account_id  bigint NOT NULL REFERENCES accounts(id),
    key_id      bigint REFERENCES api_keys(id),
    model       text NOT NULL,
    body        jsonb NOT NULL,
    messages    jsonb NOT NULL,
    metadata    jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS chat_completions_account_idx ON chat_completions (account_id, created_at);

-- 005_containers: the code interpreter's containers (docs/tools.md): a
-- container is a set of files owned by an account, materialised into a
-- fresh sandbox for each code_interpreter call. The sandbox itself is never
-- kept: workers are stateless, so what lasts is the files. Idempotent.

-- status is not stored: a container is 'running' until it has been idle for
-- expires_minutes after last_active_at, then 'expired' (and stays so: an
-- expired container cannot be revived, as OpenAI's). Every use (a code
-- interpreter call, a file upload) moves last_active_at.
CREATE TABLE IF NOT EXISTS containers (
    id               text PRIMARY KEY,
    account_id       bigint NOT NULL REFERENCES accounts(id),
    name             text NOT NULL,
    memory_limit     text NOT NULL DEFAULT '1g' CHECK (memory_limit IN ('1g', '4g', '16g', '64g')),
    expires_minutes  integer NOT NULL DEFAULT 20 CHECK (expires_minutes BETWEEN 1 AND 10080),
    network_policy   jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    last_active_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS containers_account_idx ON containers (account_id, created_at);

-- A container's files. path is absolute inside the sandbox (/mnt/data/...);
-- source is 'user' (uploaded or copied from /v1/files) or 'assistant'
-- (written by the model's code). A path is unique in its container: code
-- rewriting a file replaces the row (a new id, as OpenAI's).
CREATE TABLE IF NOT EXISTS container_files (
    id            text PRIMARY KEY,
    container_id  text NOT NULL REFERENCES containers(id) ON DELETE CASCADE,
    path          text NOT NULL,
    source        text NOT NULL CHECK (source IN ('user', 'assistant')),
    bytes         bigint NOT NULL CHECK (bytes >= 0),
    content       bytea NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    UNIQUE (container_id, path)
);

-- 001_init: accounts, token groups, keys, models and their routes, stored
-- responses, and the request log. Idempotent: safe to apply twice.

CREATE TABLE IF NOT EXISTS accounts (
    id                   bigserial PRIMARY KEY,
    name                 text NOT NULL UNIQUE,
    enabled              boolean NOT NULL DEFAULT true,
    zero_data_retention  boolean NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL DEFAULT now()
);

-- A token group limits which models its keys may call.
CREATE TABLE IF NOT EXISTS token_groups (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- model_id '*' allows every model.
CREATE TABLE IF NOT EXISTS group_models (
    group_id  bigint NOT NULL REFERENCES token_groups(id) ON DELETE CASCADE,
    model_id  text NOT NULL,
    PRIMARY KEY (group_id, model_id)
);

-- Keys are stored only as a SHA-256 hex digest; display_prefix is the
-- leading characters shown in listings.
CREATE TABLE IF NOT EXISTS api_keys (
    id              bigserial PRIMARY KEY,
    account_id      bigint NOT NULL REFERENCES accounts(id),
    group_id        bigint NOT NULL REFERENCES token_groups(id),
    key_hash        text NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    display_prefix  text NOT NULL,
    name            text NOT NULL DEFAULT '',
    enabled         boolean NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- A model and its upstream route. credential_ref names an environment
-- variable (or configuration entry) of the worker holding the upstream secret;
-- the secret itself is never stored here.
CREATE TABLE IF NOT EXISTS models (
    id                 text PRIMARY KEY,
    enabled            boolean NOT NULL DEFAULT true,
    provider           text NOT NULL CHECK (provider IN ('openai-chat', 'openai-responses', 'anthropic', 'gemini')),
    base_url           text NOT NULL,
    upstream_model     text NOT NULL,
    credential_ref     text,
    capabilities       jsonb NOT NULL DEFAULT '{}'::jsonb,
    context_length     integer NOT NULL DEFAULT 128000 CHECK (context_length > 0),
    max_output_tokens  integer NOT NULL DEFAULT 16384 CHECK (max_output_tokens > 0),
    timeout_ms         integer NOT NULL DEFAULT 60000 CHECK (timeout_ms > 0),
    created_at         timestamptz NOT NULL DEFAULT now()
);

-- Stored responses, scoped to the owning account. body is the Response object
-- as returned to the client; the context items live in response_items.
CREATE TABLE IF NOT EXISTS responses (
    id                    text PRIMARY KEY,
    account_id            bigint NOT NULL REFERENCES accounts(id),
    key_id                bigint REFERENCES api_keys(id),
    model                 text NOT NULL,
    status                text NOT NULL,
    previous_response_id  text,
    body                  jsonb NOT NULL,
    created_at            timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS responses_account_idx ON responses (account_id, created_at);

-- kind 'input': the full context the response was generated from (earlier
-- turns included); kind 'output': its output items. Both in order (seq).
CREATE TABLE IF NOT EXISTS response_items (
    response_id  text NOT NULL REFERENCES responses(id) ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('input', 'output')),
    seq          integer NOT NULL,
    item         jsonb NOT NULL,
    PRIMARY KEY (response_id, kind, seq)
);

-- Exactly one row per request, failed ones included.
CREATE TABLE IF NOT EXISTS request_log (
    id                   bigserial PRIMARY KEY,
    request_id           text NOT NULL UNIQUE,
    ts                   timestamptz NOT NULL,
    key_id               bigint,
    account_id           bigint,
    model                text,
    path                 text NOT NULL,
    status               integer NOT NULL,
    latency_ms           integer NOT NULL,
    upstream_latency_ms  integer,
    tokens_in            integer NOT NULL DEFAULT 0,
    tokens_out           integer NOT NULL DEFAULT 0,
    reasoning_tokens     integer NOT NULL DEFAULT 0,
    error                text,
    stream               boolean NOT NULL DEFAULT false,
    frontend             text
);
CREATE INDEX IF NOT EXISTS request_log_ts_idx ON request_log (ts);
CREATE INDEX IF NOT EXISTS request_log_key_ts_idx ON request_log (key_id, ts);

-- Every change to what the frontends cache is announced on channel
-- 'sb_config' (payload: the table name); frontends LISTEN and drop their caches.
CREATE OR REPLACE FUNCTION sb_notify_config() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('sb_config', TG_TABLE_NAME);
    RETURN NULL;
END;
$$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['accounts', 'token_groups', 'group_models', 'api_keys', 'models'] LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I', t || '_notify', t);
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON %I '
                       'FOR EACH STATEMENT EXECUTE FUNCTION sb_notify_config()', t || '_notify', t);
    END LOOP;
END;
$$;

-- 014: the admin plane (issue 19): admin keys, the audit table, and the
-- rules of every administrative change as functions, called alike by sbctl
-- and by the frontends' admin API (one implementation of each rule).
--
-- Every sb_admin_* function takes the actor first ("admin-key:<id>",
-- "sbctl:<os user>") and records it for the transaction (sb.actor); the
-- audit trigger below writes one admin_audit row per row changed, with the
-- row before and after, secrets (key hashes) left out. A change made with
-- plain SQL is audited too, as "sql:<database user>". The tables' NOTIFY
-- triggers (001) still tell every frontend within the same transaction's
-- commit.

-- Admin keys: a separate key type ("sk-sbadmin-" + 48 base62), stored as its
-- SHA-256 and a display prefix, accepted only by the admin API and never for
-- generation.
CREATE TABLE IF NOT EXISTS admin_keys (
    id              bigserial PRIMARY KEY,
    name            text NOT NULL DEFAULT '',
    key_hash        text NOT NULL UNIQUE CHECK (key_hash ~ '^[0-9a-f]{64}$'),
    display_prefix  text NOT NULL,
    enabled         boolean NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS admin_audit (
    id           bigserial PRIMARY KEY,
    ts           timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor        text NOT NULL,
    action       text NOT NULL CHECK (action IN ('insert', 'update', 'delete')),
    resource     text NOT NULL,
    resource_id  text,
    before       jsonb,
    after        jsonb
);
CREATE INDEX IF NOT EXISTS admin_audit_ts_idx ON admin_audit (ts);

CREATE OR REPLACE FUNCTION sb_audit() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    b jsonb := CASE WHEN TG_OP <> 'INSERT' THEN to_jsonb(OLD) - 'key_hash' END;
    a jsonb := CASE WHEN TG_OP <> 'DELETE' THEN to_jsonb(NEW) - 'key_hash' END;
    r jsonb := COALESCE(a, b);
BEGIN
    IF TG_OP = 'UPDATE' AND a = b THEN
        RETURN NULL; -- nothing changed
    END IF;
    INSERT INTO admin_audit (actor, action, resource, resource_id, before, after)
    VALUES (COALESCE(NULLIF(current_setting('sb.actor', true), ''), 'sql:' || session_user), lower(TG_OP),
            TG_TABLE_NAME,
            COALESCE(r->>'id', r->>'group_id' || ':' || (r->>'model_id'), r->>'prompt_id' || ':' || (r->>'version')),
            b, a);
    RETURN NULL;
END;
$$;

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['accounts', 'token_groups', 'group_models', 'api_keys', 'models', 'search_backends',
                             'prompts', 'prompt_versions', 'admin_keys'] LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS %I ON %I', t || '_audit', t);
        EXECUTE format('CREATE TRIGGER %I AFTER INSERT OR UPDATE OR DELETE ON %I '
                       'FOR EACH ROW EXECUTE FUNCTION sb_audit()', t || '_audit', t);
    END LOOP;
END;
$$;

-- The rules. Each returns the rows it changed (none: not found, or already
-- there), so a caller tells "created" from "exists" and "done" from "no
-- such thing" the way sbctl always has.

CREATE OR REPLACE FUNCTION sb_admin_account_create(p_actor text, p_name text, p_zdr boolean)
RETURNS SETOF bigint LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    INSERT INTO accounts (name, zero_data_retention) VALUES (p_name, p_zdr)
    ON CONFLICT (name) DO NOTHING RETURNING id;
$$;

CREATE OR REPLACE FUNCTION sb_admin_account_set_enabled(p_actor text, p_name text, p_enabled boolean)
RETURNS SETOF bigint LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    UPDATE accounts SET enabled = p_enabled WHERE name = p_name RETURNING id;
$$;

CREATE OR REPLACE FUNCTION sb_admin_group_create(p_actor text, p_name text)
RETURNS SETOF bigint LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    INSERT INTO token_groups (name) VALUES (p_name) ON CONFLICT (name) DO NOTHING RETURNING id;
$$;

CREATE OR REPLACE FUNCTION sb_admin_group_allow(p_actor text, p_group bigint, p_model text)
RETURNS SETOF text LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    INSERT INTO group_models (group_id, model_id) VALUES (p_group, p_model) ON CONFLICT DO NOTHING RETURNING model_id;
$$;

CREATE OR REPLACE FUNCTION sb_admin_group_deny(p_actor text, p_group bigint, p_model text)
RETURNS SETOF text LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    DELETE FROM group_models WHERE group_id = p_group AND model_id = p_model RETURNING model_id;
$$;

CREATE OR REPLACE FUNCTION sb_admin_key_create(p_actor text, p_account bigint, p_group bigint, p_hash text,
                                               p_display text, p_name text)
RETURNS SETOF bigint LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    INSERT INTO api_keys (account_id, group_id, key_hash, display_prefix, name)
    VALUES (p_account, p_group, p_hash, p_display, p_name) RETURNING id;
$$;

CREATE OR REPLACE FUNCTION sb_admin_key_set_enabled(p_actor text, p_id bigint, p_enabled boolean)
RETURNS SETOF text LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    UPDATE api_keys SET enabled = p_enabled WHERE id = p_id RETURNING display_prefix;
$$;

CREATE OR REPLACE FUNCTION sb_admin_key_set_group(p_actor text, p_id bigint, p_group bigint)
RETURNS SETOF text LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    UPDATE api_keys SET group_id = p_group WHERE id = p_id RETURNING display_prefix;
$$;

-- Rate and concurrency limits of a key (p_key) or a token group (p_group):
-- for each limit, whether it was given and its new value (NULL: none).
CREATE OR REPLACE FUNCTION sb_admin_limits_set(p_actor text, p_key bigint, p_group text,
                                               rpm_given boolean, rpm integer, tpm_given boolean, tpm bigint,
                                               conc_given boolean, conc integer)
RETURNS TABLE (name text, rpm_limit integer, tpm_limit bigint, concurrency_limit integer) LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    WITH k AS (
        UPDATE api_keys SET rpm_limit = CASE WHEN rpm_given THEN rpm ELSE rpm_limit END,
                            tpm_limit = CASE WHEN tpm_given THEN tpm ELSE tpm_limit END,
                            concurrency_limit = CASE WHEN conc_given THEN conc ELSE concurrency_limit END
        WHERE p_key IS NOT NULL AND id = p_key
        RETURNING display_prefix, rpm_limit, tpm_limit, concurrency_limit),
    g AS (
        UPDATE token_groups SET rpm_limit = CASE WHEN rpm_given THEN rpm ELSE rpm_limit END,
                                tpm_limit = CASE WHEN tpm_given THEN tpm ELSE tpm_limit END,
                                concurrency_limit = CASE WHEN conc_given THEN conc ELSE concurrency_limit END
        WHERE p_key IS NULL AND token_groups.name = p_group
        RETURNING token_groups.name, rpm_limit, tpm_limit, concurrency_limit)
    SELECT * FROM k UNION ALL SELECT * FROM g;
$$;

-- An account's token quota (NULL: none), with what is used and remains.
CREATE OR REPLACE FUNCTION sb_admin_quota_set(p_actor text, p_account text, p_quota bigint)
RETURNS TABLE (quota_tokens bigint, tokens_used bigint, remaining bigint) LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    WITH a AS (UPDATE accounts SET quota_tokens = p_quota WHERE name = p_account RETURNING id, quota_tokens)
    SELECT a.quota_tokens, q.tokens_used, a.quota_tokens - q.tokens_used - q.tokens_in_flight
    FROM a JOIN quota_remaining q ON q.account_id = a.id;
$$;

CREATE OR REPLACE FUNCTION sb_admin_model_add(p_actor text, p_id text, p_provider text, p_base_url text,
                                              p_upstream_model text)
RETURNS SETOF text LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    INSERT INTO models (id, provider, base_url, upstream_model) VALUES (p_id, p_provider, p_base_url, p_upstream_model)
    ON CONFLICT (id) DO NOTHING RETURNING id;
$$;

-- The optional columns; NULL leaves a column alone (credential_ref '' clears
-- it; fallbacks is a comma-joined list, '' for none).
CREATE OR REPLACE FUNCTION sb_admin_model_update(p_actor text, p_id text, p_provider text, p_base_url text,
                                                 p_upstream_model text, p_credential_ref text, p_capabilities jsonb,
                                                 p_context_length integer, p_max_output_tokens integer,
                                                 p_timeout_ms integer, p_fallbacks text)
RETURNS SETOF text LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    UPDATE models SET
        provider = COALESCE(p_provider, provider),
        base_url = COALESCE(p_base_url, base_url),
        upstream_model = COALESCE(p_upstream_model, upstream_model),
        credential_ref = CASE WHEN p_credential_ref IS NULL THEN credential_ref ELSE NULLIF(p_credential_ref, '') END,
        capabilities = COALESCE(p_capabilities, capabilities),
        context_length = COALESCE(p_context_length, context_length),
        max_output_tokens = COALESCE(p_max_output_tokens, max_output_tokens),
        timeout_ms = COALESCE(p_timeout_ms, timeout_ms),
        fallbacks = COALESCE(string_to_array(p_fallbacks, ','), fallbacks)
    WHERE id = p_id RETURNING id;
$$;

-- A model added with capabilities.reasoning true and no explicit timeout
-- may think for minutes: it gets 600 s rather than the column's 60 s.
CREATE OR REPLACE FUNCTION sb_admin_model_reasoning_timeout(p_actor text, p_id text)
RETURNS SETOF text LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    UPDATE models SET timeout_ms = 600000
    WHERE id = p_id AND jsonb_typeof(capabilities) = 'object' AND capabilities->'reasoning' = 'true' RETURNING id;
$$;

CREATE OR REPLACE FUNCTION sb_admin_model_set_enabled(p_actor text, p_id text, p_enabled boolean)
RETURNS SETOF text LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    UPDATE models SET enabled = p_enabled WHERE id = p_id RETURNING id;
$$;

-- A fallback list checked against the models: each entry, whether it is the
-- model itself, repeated, known, enabled.
CREATE OR REPLACE FUNCTION sb_admin_model_fallback_check(p_id text, p_list text)
RETURNS TABLE (id text, self boolean, repeated boolean, known boolean, enabled boolean) LANGUAGE sql STABLE AS $$
    SELECT f.id, f.id = p_id, f.n > min(f.n) OVER (PARTITION BY f.id), m.id IS NOT NULL, COALESCE(m.enabled, true)
    FROM unnest(string_to_array(p_list, ',')) WITH ORDINALITY AS f(id, n)
    LEFT JOIN models m ON m.id = f.id ORDER BY f.n;
$$;

CREATE OR REPLACE FUNCTION sb_admin_admin_key_create(p_actor text, p_hash text, p_display text, p_name text)
RETURNS SETOF bigint LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    INSERT INTO admin_keys (key_hash, display_prefix, name) VALUES (p_hash, p_display, p_name) RETURNING id;
$$;

CREATE OR REPLACE FUNCTION sb_admin_admin_key_set_enabled(p_actor text, p_id bigint, p_enabled boolean)
RETURNS SETOF text LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    UPDATE admin_keys SET enabled = p_enabled WHERE id = p_id RETURNING display_prefix;
$$;

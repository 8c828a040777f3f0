-- 003_limits: rate limits per key and per token group, token quotas per
-- account, the in-flight leases that make them exact across frontend
-- instances, model fallback chains, and the views ops query.
-- Idempotent: safe to apply twice. docs/limits.md explains the design.

-- Limits. NULL = no limit. A group's limits are shared by all its keys.
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS rpm_limit integer CHECK (rpm_limit > 0);
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS tpm_limit bigint CHECK (tpm_limit > 0);
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS concurrency_limit integer CHECK (concurrency_limit > 0);
ALTER TABLE token_groups ADD COLUMN IF NOT EXISTS rpm_limit integer CHECK (rpm_limit > 0);
ALTER TABLE token_groups ADD COLUMN IF NOT EXISTS tpm_limit bigint CHECK (tpm_limit > 0);
ALTER TABLE token_groups ADD COLUMN IF NOT EXISTS concurrency_limit integer CHECK (concurrency_limit > 0);
-- The account's token allowance (input + output tokens, reasoning included
-- in output); usage draws it down. NULL = unlimited.
ALTER TABLE accounts ADD COLUMN IF NOT EXISTS quota_tokens bigint CHECK (quota_tokens >= 0);

-- Models to try, in order, when this one's upstream fails before the client
-- has seen a byte (sbctl model fallback).
ALTER TABLE models ADD COLUMN IF NOT EXISTS fallbacks text[] NOT NULL DEFAULT '{}';

-- The model the client asked for, when another one (a fallback) answered;
-- and the gateway's own estimate of the input tokens (docs/limits.md), next
-- to the upstream's count in tokens_in, so its error can be measured.
ALTER TABLE request_log ADD COLUMN IF NOT EXISTS requested_model text;
ALTER TABLE request_log ADD COLUMN IF NOT EXISTS tokens_estimated integer;

-- Tokens drawn from each account's quota. Kept by the request_log trigger
-- below, in the same transaction as the log rows: durable, and exactly once
-- per request (request_log.request_id is unique).
CREATE TABLE IF NOT EXISTS account_usage (
    account_id   bigint PRIMARY KEY REFERENCES accounts(id) ON DELETE CASCADE,
    tokens_used  bigint NOT NULL DEFAULT 0,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

-- Rate state per key or group: GCRA theoretical arrival times, in
-- microseconds since the epoch, for requests and for tokens. UNLOGGED: no
-- WAL; after a database crash the table is empty and every bucket starts
-- full again.
CREATE UNLOGGED TABLE IF NOT EXISTS limit_state (
    scope     text NOT NULL CHECK (scope IN ('key', 'group')),
    scope_id  bigint NOT NULL,
    req_tat   double precision NOT NULL DEFAULT 0,
    tok_tat   double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, scope_id)
);

-- One lease per admitted request of a limited key. Active while the request
-- runs (concurrency); its tokens (the estimate, then the real total once
-- released) count against the account's quota until the request's log row
-- lands and draws them for good. Leases of a frontend that died expire.
CREATE UNLOGGED TABLE IF NOT EXISTS limit_leases (
    request_id  text PRIMARY KEY,
    key_id      bigint NOT NULL,
    group_id    bigint NOT NULL,
    account_id  bigint NOT NULL,
    estimated   bigint NOT NULL,
    tokens      bigint NOT NULL,
    active      boolean NOT NULL DEFAULT true,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS limit_leases_key_idx ON limit_leases (key_id) WHERE active;
CREATE INDEX IF NOT EXISTS limit_leases_group_idx ON limit_leases (group_id) WHERE active;
CREATE INDEX IF NOT EXISTS limit_leases_account_idx ON limit_leases (account_id);

-- One GCRA step: with tat the bucket's theoretical arrival time, can a cost
-- of `cost` units pass under `per_minute` units per minute (burst: one
-- minute's worth)? Returns the new tat, or NULL with wait_us set.
CREATE OR REPLACE FUNCTION sb_gcra(tat double precision, now_us double precision, cost double precision,
                                   per_minute double precision, OUT new_tat double precision,
                                   OUT wait_us double precision)
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    t double precision := greatest(tat, now_us) + cost * 60e6 / per_minute;
BEGIN
    IF t - now_us <= 60e6 THEN
        new_tat := t;
        wait_us := 0;
    ELSE
        new_tat := NULL;
        wait_us := t - now_us - 60e6;
    END IF;
END;
$$;

-- Admission of one request of key p_key_id reserving p_tokens tokens (its
-- input estimate plus the output limit it asked for). All limits of the key, its group and its account are checked
-- under row locks (key, then group, then account: always that order), so
-- admissions from every frontend are serialised per scope and exact. Only
-- when all pass are the buckets charged and the lease written.
-- Returns one row: admitted, and for a refusal its kind ('quota' or
-- 'rate_limit'), scope ('key', 'group', 'account'), what ('requests',
-- 'tokens', 'concurrency', 'quota'), the limit, and the wait in ms.
-- The commit is asynchronous: rate state is not worth a WAL flush.
CREATE OR REPLACE FUNCTION sb_limit_admit(p_request_id text, p_key_id bigint, p_tokens bigint, p_ttl_ms integer)
RETURNS TABLE (admitted boolean, kind text, scope text, what text, limit_value bigint, retry_after_ms bigint)
LANGUAGE plpgsql AS $$
DECLARE
    k record;
    g record;
    quota bigint;
    now_us double precision := extract(epoch FROM clock_timestamp()) * 1e6;
    ks limit_state;
    gs limit_state;
    used bigint;
    n integer;
    step record;
    k_req double precision;
    k_tok double precision;
    g_req double precision;
    g_tok double precision;
    cost bigint := greatest(p_tokens, 1);
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    admitted := false;
    retry_after_ms := 0;
    SELECT id, group_id, account_id, rpm_limit, tpm_limit, concurrency_limit INTO k FROM api_keys WHERE id = p_key_id;
    IF NOT FOUND THEN
        admitted := true;
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT rpm_limit, tpm_limit, concurrency_limit INTO g FROM token_groups WHERE id = k.group_id;
    SELECT quota_tokens INTO quota FROM accounts WHERE id = k.account_id;

    -- Locks, in the fixed order. The state rows exist from the first request on.
    IF k.rpm_limit IS NOT NULL OR k.tpm_limit IS NOT NULL OR k.concurrency_limit IS NOT NULL THEN
        INSERT INTO limit_state (scope, scope_id) VALUES ('key', k.id) ON CONFLICT DO NOTHING;
        SELECT * INTO ks FROM limit_state WHERE limit_state.scope = 'key' AND scope_id = k.id FOR UPDATE;
    END IF;
    IF g.rpm_limit IS NOT NULL OR g.tpm_limit IS NOT NULL OR g.concurrency_limit IS NOT NULL THEN
        INSERT INTO limit_state (scope, scope_id) VALUES ('group', k.group_id) ON CONFLICT DO NOTHING;
        SELECT * INTO gs FROM limit_state WHERE limit_state.scope = 'group' AND scope_id = k.group_id FOR UPDATE;
    END IF;
    IF quota IS NOT NULL THEN
        INSERT INTO account_usage (account_id) VALUES (k.account_id) ON CONFLICT DO NOTHING;
        SELECT tokens_used INTO used FROM account_usage WHERE account_id = k.account_id FOR UPDATE;
    END IF;
    DELETE FROM limit_leases WHERE key_id = k.id AND expires_at < clock_timestamp();

    -- Quota first: waiting does not help there.
    IF quota IS NOT NULL THEN
        used := used + COALESCE((SELECT sum(tokens) FROM limit_leases
                                 WHERE account_id = k.account_id AND expires_at >= clock_timestamp()), 0);
        IF quota - used < cost THEN
            kind := 'quota'; scope := 'account'; what := 'quota'; limit_value := quota;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;

    kind := 'rate_limit';
    retry_after_ms := 1000; -- concurrency: a slot frees when a request ends
    what := 'concurrency';
    IF k.concurrency_limit IS NOT NULL THEN
        SELECT count(*) INTO n FROM limit_leases WHERE key_id = k.id AND active AND expires_at >= clock_timestamp();
        IF n >= k.concurrency_limit THEN
            scope := 'key'; limit_value := k.concurrency_limit;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;
    IF g.concurrency_limit IS NOT NULL THEN
        SELECT count(*) INTO n FROM limit_leases
        WHERE group_id = k.group_id AND active AND expires_at >= clock_timestamp();
        IF n >= g.concurrency_limit THEN
            scope := 'group'; limit_value := g.concurrency_limit;
            RETURN NEXT;
            RETURN;
        END IF;
    END IF;

    what := 'requests';
    IF k.rpm_limit IS NOT NULL THEN
        SELECT * INTO step FROM sb_gcra(ks.req_tat, now_us, 1, k.rpm_limit);
        IF step.new_tat IS NULL THEN
            scope := 'key'; limit_value := k.rpm_limit; retry_after_ms := ceil(step.wait_us / 1000);
            RETURN NEXT;
            RETURN;
        END IF;
        k_req := step.new_tat;
    END IF;
    IF g.rpm_limit IS NOT NULL THEN
        SELECT * INTO step FROM sb_gcra(gs.req_tat, now_us, 1, g.rpm_limit);
        IF step.new_tat IS NULL THEN
            scope := 'group'; limit_value := g.rpm_limit; retry_after_ms := ceil(step.wait_us / 1000);
            RETURN NEXT;
            RETURN;
        END IF;
        g_req := step.new_tat;
    END IF;

    what := 'tokens';
    IF k.tpm_limit IS NOT NULL THEN
        SELECT * INTO step FROM sb_gcra(ks.tok_tat, now_us, cost, k.tpm_limit);
        IF step.new_tat IS NULL THEN
            scope := 'key'; limit_value := k.tpm_limit; retry_after_ms := ceil(step.wait_us / 1000);
            RETURN NEXT;
            RETURN;
        END IF;
        k_tok := step.new_tat;
    END IF;
    IF g.tpm_limit IS NOT NULL THEN
        SELECT * INTO step FROM sb_gcra(gs.tok_tat, now_us, cost, g.tpm_limit);
        IF step.new_tat IS NULL THEN
            scope := 'group'; limit_value := g.tpm_limit; retry_after_ms := ceil(step.wait_us / 1000);
            RETURN NEXT;
            RETURN;
        END IF;
        g_tok := step.new_tat;
    END IF;

    -- Everything passed: charge and lease.
    IF ks.scope_id IS NOT NULL THEN
        UPDATE limit_state SET req_tat = COALESCE(k_req, req_tat), tok_tat = COALESCE(k_tok, tok_tat)
        WHERE limit_state.scope = 'key' AND scope_id = k.id;
    END IF;
    IF gs.scope_id IS NOT NULL THEN
        UPDATE limit_state SET req_tat = COALESCE(g_req, req_tat), tok_tat = COALESCE(g_tok, tok_tat)
        WHERE limit_state.scope = 'group' AND scope_id = k.group_id;
    END IF;
    INSERT INTO limit_leases (request_id, key_id, group_id, account_id, estimated, tokens, expires_at)
    VALUES (p_request_id, k.id, k.group_id, k.account_id, cost, cost,
            clock_timestamp() + make_interval(secs => p_ttl_ms / 1000.0))
    ON CONFLICT (request_id) DO NOTHING;
    admitted := true; kind := NULL; scope := NULL; what := NULL; limit_value := NULL; retry_after_ms := 0;
    RETURN NEXT;
END;
$$;

-- A leased request ended having used p_tokens (input + output): its
-- concurrency slot frees now, the token buckets are corrected from the
-- estimate to the real count, and the lease keeps the real count against
-- the quota until the log row draws it. A second call does nothing.
CREATE OR REPLACE FUNCTION sb_limit_release(p_request_id text, p_tokens bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    l limit_leases;
    k record;
    g record;
    diff double precision;
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT * INTO l FROM limit_leases WHERE request_id = p_request_id;
    IF NOT FOUND OR NOT l.active THEN
        RETURN;
    END IF;
    diff := greatest(p_tokens, 0) - l.estimated;
    SELECT tpm_limit INTO k FROM api_keys WHERE id = l.key_id;
    SELECT tpm_limit INTO g FROM token_groups WHERE id = l.group_id;
    IF diff <> 0 AND k.tpm_limit IS NOT NULL THEN
        UPDATE limit_state SET tok_tat = tok_tat + diff * 60e6 / k.tpm_limit
        WHERE scope = 'key' AND scope_id = l.key_id;
    END IF;
    IF diff <> 0 AND g.tpm_limit IS NOT NULL THEN
        UPDATE limit_state SET tok_tat = tok_tat + diff * 60e6 / g.tpm_limit
        WHERE scope = 'group' AND scope_id = l.group_id;
    END IF;
    UPDATE limit_leases SET active = false, tokens = greatest(p_tokens, 0),
                            expires_at = clock_timestamp() + interval '10 minutes'
    WHERE request_id = p_request_id AND active;
END;
$$;

-- The quota draw: every request_log row that lands (a retried batch inserts
-- nothing twice: ON CONFLICT DO NOTHING) adds its tokens to its account's
-- usage and retires its lease, in the log batch's own transaction.
CREATE OR REPLACE FUNCTION sb_request_log_draw() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO account_usage AS u (account_id, tokens_used, updated_at)
    SELECT account_id, sum(tokens_in::bigint + tokens_out::bigint), now()
    FROM inserted
    WHERE account_id IS NOT NULL
    GROUP BY account_id
    HAVING sum(tokens_in::bigint + tokens_out::bigint) > 0
    ORDER BY account_id
    ON CONFLICT (account_id) DO UPDATE SET tokens_used = u.tokens_used + EXCLUDED.tokens_used, updated_at = now();
    DELETE FROM limit_leases l USING inserted i WHERE l.request_id = i.request_id;
    RETURN NULL;
END;
$$;
DROP TRIGGER IF EXISTS request_log_draw ON request_log;
CREATE TRIGGER request_log_draw AFTER INSERT ON request_log REFERENCING NEW TABLE AS inserted
    FOR EACH STATEMENT EXECUTE FUNCTION sb_request_log_draw();

-- Ops views (UTC days and hours).

-- Usage per key per day.
CREATE OR REPLACE VIEW usage_per_key_daily AS
SELECT date_trunc('day', l.ts AT TIME ZONE 'UTC')::date AS day,
       l.account_id, a.name AS account, l.key_id, k.display_prefix AS key, k.name AS key_name,
       count(*) AS requests,
       count(*) FILTER (WHERE l.status >= 400) AS errors,
       sum(l.tokens_in)::bigint AS tokens_in,
       sum(l.tokens_out)::bigint AS tokens_out,
       sum(l.reasoning_tokens)::bigint AS reasoning_tokens
FROM request_log l
LEFT JOIN api_keys k ON k.id = l.key_id
LEFT JOIN accounts a ON a.id = l.account_id
WHERE l.key_id IS NOT NULL
GROUP BY 1, l.account_id, a.name, l.key_id, k.display_prefix, k.name;

-- Each account's quota, what is drawn, what running requests hold, and what is left.
CREATE OR REPLACE VIEW quota_remaining AS
SELECT a.id AS account_id, a.name AS account, a.quota_tokens,
       COALESCE(u.tokens_used, 0) AS tokens_used,
       COALESCE(f.tokens, 0) AS tokens_in_flight,
       a.quota_tokens - COALESCE(u.tokens_used, 0) - COALESCE(f.tokens, 0) AS tokens_remaining
FROM accounts a
LEFT JOIN account_usage u ON u.account_id = a.id
LEFT JOIN (SELECT account_id, sum(tokens)::bigint AS tokens FROM limit_leases
           WHERE expires_at >= now() GROUP BY account_id) f ON f.account_id = a.id;

-- Error rate per model per hour: 5xx are the gateway's or upstream's
-- failures; 429s and client errors are counted apart.
CREATE OR REPLACE VIEW model_error_rate AS
SELECT date_trunc('hour', ts AT TIME ZONE 'UTC') AS hour, model,
       count(*) AS requests,
       count(*) FILTER (WHERE status >= 500) AS server_errors,
       count(*) FILTER (WHERE status = 429) AS rate_limited,
       count(*) FILTER (WHERE status >= 400 AND status < 500 AND status NOT IN (429, 499)) AS client_errors,
       count(*) FILTER (WHERE status = 499) AS client_aborts,
       round(count(*) FILTER (WHERE status >= 500)::numeric / count(*), 4) AS error_rate
FROM request_log
WHERE model IS NOT NULL
GROUP BY 1, model;

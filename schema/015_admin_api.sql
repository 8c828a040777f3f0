-- 015: the admin API's operations (issue 19). The frontends' admin listener
-- maps each endpoint to one operation of sb_admin_api(actor, op, args) and
-- sends its answer as it comes: (HTTP status, JSON body). Changes go through
-- the sb_admin_* rules of 014, the ones sbctl calls, so both are audited
-- alike and neither has rules of its own. A bad argument is a 400 with the
-- reason, a name that does not exist a 404, a duplicate a 409.

CREATE OR REPLACE FUNCTION sb_admin_err(p_status int, p_code text, p_message text) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('error', jsonb_build_object('message', p_message, 'code', p_code,
        'type', CASE p_status WHEN 404 THEN 'not_found_error' WHEN 409 THEN 'conflict_error'
                              ELSE 'invalid_request_error' END));
$$;

-- Names as sbctl takes them (sb_cli.c): accounts and groups, model ids.
CREATE OR REPLACE FUNCTION sb_admin_name_ok(p text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT p IS NOT NULL AND p ~ '^[A-Za-z0-9][A-Za-z0-9._@:+-]{0,127}$';
$$;
CREATE OR REPLACE FUNCTION sb_admin_model_id_ok(p text) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
    SELECT p IS NOT NULL AND p ~ '^[A-Za-z0-9][A-Za-z0-9._@:+/-]{0,199}$';
$$;

-- A limit argument: absent (not given), null (none), or a positive integer.
CREATE OR REPLACE FUNCTION sb_admin_limit_arg(a jsonb, k text) RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    IF NOT a ? k OR jsonb_typeof(a->k) = 'null' THEN
        RETURN NULL;
    END IF;
    IF jsonb_typeof(a->k) <> 'number' OR (a->>k)::numeric <> floor((a->>k)::numeric) OR (a->>k)::numeric < 1 THEN
        RAISE EXCEPTION '% must be a positive integer or null', k USING ERRCODE = '22023';
    END IF;
    RETURN (a->>k)::bigint;
END;
$$;

CREATE OR REPLACE FUNCTION sb_admin_limits_json(p_rpm integer, p_tpm bigint, p_conc integer) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('rpm', p_rpm, 'tpm', p_tpm, 'concurrency', p_conc);
$$;

-- The request_log rows a filter selects ({since, until, key_id, account,
-- model, status, style, q}), newest first.
CREATE OR REPLACE FUNCTION sb_admin_log_rows(a jsonb) RETURNS SETOF request_log LANGUAGE sql STABLE AS $$
    SELECT l.* FROM request_log l
    WHERE l.ts >= COALESCE((a->>'since')::timestamptz, now() - interval '1 day')
      AND l.ts < COALESCE((a->>'until')::timestamptz, now() + interval '1 minute')
      AND (a->>'key_id' IS NULL OR l.key_id = (a->>'key_id')::bigint)
      AND (a->>'model' IS NULL OR l.model = a->>'model')
      AND (a->>'status' IS NULL OR CASE WHEN a->>'status' = 'error' THEN l.status >= 400
                                        ELSE l.status = (a->>'status')::int END)
      AND (a->>'style' IS NULL OR CASE a->>'style'
             WHEN 'responses' THEN l.path LIKE '/v1/responses%'
             WHEN 'chat' THEN l.path LIKE '/v1/chat/%'
             WHEN 'messages' THEN l.path LIKE '/v1/messages%'
             WHEN 'gemini' THEN l.path LIKE '/v1beta/%'
             ELSE false END)
      AND (a->>'q' IS NULL OR strpos(lower(COALESCE(l.error, '')), lower(a->>'q')) > 0)
      AND (a->>'account' IS NULL OR l.account_id = (SELECT id FROM accounts WHERE name = a->>'account'));
$$;

-- Search backends (004): the rules sbctl's search-backend commands and the
-- admin API share. The default moves under a lock that serialises such
-- moves (at most one default: a partial unique index, checked row by row,
-- so the old default is cleared first).
CREATE OR REPLACE FUNCTION sb_admin_search_backend_add(p_actor text, p_name text, p_kind text, p_base_url text,
                                                       p_credential_ref text)
RETURNS SETOF bigint LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    INSERT INTO search_backends (name, kind, base_url, credential_ref)
    VALUES (p_name, p_kind, p_base_url, NULLIF(p_credential_ref, '')) ON CONFLICT (name) DO NOTHING RETURNING id;
$$;

-- The backend's enabled flag when it is now the default; no row when it does not exist.
CREATE OR REPLACE FUNCTION sb_admin_search_backend_set_default(p_actor text, p_name text)
RETURNS SETOF boolean LANGUAGE plpgsql AS $$
DECLARE v_enabled boolean;
BEGIN
    PERFORM set_config('sb.actor', p_actor, true);
    LOCK TABLE search_backends IN SHARE ROW EXCLUSIVE MODE;
    SELECT b.enabled INTO v_enabled FROM search_backends b WHERE b.name = p_name;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    UPDATE search_backends SET is_default = false WHERE is_default AND name <> p_name;
    UPDATE search_backends SET is_default = true WHERE name = p_name AND NOT is_default;
    RETURN NEXT v_enabled;
END;
$$;

-- Whether it is the default; no row when it does not exist.
CREATE OR REPLACE FUNCTION sb_admin_search_backend_set_enabled(p_actor text, p_name text, p_enabled boolean)
RETURNS SETOF boolean LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    UPDATE search_backends SET enabled = p_enabled WHERE name = p_name RETURNING is_default;
$$;

-- Whether it was the default; no row when it did not exist.
CREATE OR REPLACE FUNCTION sb_admin_search_backend_remove(p_actor text, p_name text)
RETURNS SETOF boolean LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    DELETE FROM search_backends WHERE name = p_name RETURNING is_default;
$$;

-- Prompt templates (002): a body is {"instructions": TEXT, "input": [ITEM
-- objects]}, one or both. NULL when body is one, else why not.
CREATE OR REPLACE FUNCTION sb_admin_prompt_body_why(b jsonb) RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN b IS NULL OR jsonb_typeof(b) <> 'object' THEN 'expected a JSON object {"instructions": TEXT, "input": [ITEMS]}'
        WHEN EXISTS (SELECT 1 FROM jsonb_object_keys(b) k WHERE k NOT IN ('instructions', 'input'))
            THEN format('unknown key "%s" (a prompt body has only "instructions" and "input")',
                        (SELECT k FROM jsonb_object_keys(b) k WHERE k NOT IN ('instructions', 'input') LIMIT 1))
        WHEN b ? 'instructions' AND jsonb_typeof(b->'instructions') <> 'string' THEN '"instructions" must be a string'
        WHEN b ? 'input' AND jsonb_typeof(b->'input') <> 'array' THEN '"input" must be an array of input items'
        WHEN b ? 'input' AND EXISTS (SELECT 1 FROM jsonb_array_elements(b->'input') i WHERE jsonb_typeof(i) <> 'object')
            THEN '"input" items must be objects (input items)'
        WHEN NOT (b ? 'instructions' OR b ? 'input') THEN 'the body needs "instructions", "input" or both'
    END;
$$;

-- A new prompt with its version 1 (one statement: a prompt never exists
-- without it); no row when the account has a prompt of that name.
CREATE OR REPLACE FUNCTION sb_admin_prompt_create(p_actor text, p_account bigint, p_id text, p_name text, p_body jsonb)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE v_why text := sb_admin_prompt_body_why(p_body);
BEGIN
    IF v_why IS NOT NULL THEN
        RAISE EXCEPTION '%', v_why USING ERRCODE = '22023';
    END IF;
    PERFORM set_config('sb.actor', p_actor, true);
    RETURN QUERY
        WITH p AS (INSERT INTO prompts (id, account_id, name, current_version) VALUES (p_id, p_account, p_name, 1)
                   ON CONFLICT (account_id, name) DO NOTHING RETURNING id)
        INSERT INTO prompt_versions (prompt_id, version, body) SELECT p.id, 1, p_body FROM p RETURNING prompt_id;
END;
$$;

-- A new version (the highest + 1), current unless p_set_current is false;
-- no row when the prompt does not exist. The prompt's row lock serialises
-- two of them; the max is read by a later statement, after the lock.
CREATE OR REPLACE FUNCTION sb_admin_prompt_version(p_actor text, p_id text, p_body jsonb, p_set_current boolean)
RETURNS SETOF integer LANGUAGE plpgsql AS $$
DECLARE
    v_why text := sb_admin_prompt_body_why(p_body);
    v integer;
BEGIN
    IF v_why IS NOT NULL THEN
        RAISE EXCEPTION '%', v_why USING ERRCODE = '22023';
    END IF;
    PERFORM set_config('sb.actor', p_actor, true);
    PERFORM 1 FROM prompts WHERE id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO prompt_versions (prompt_id, version, body)
    SELECT p_id, COALESCE(max(version), 0) + 1, p_body FROM prompt_versions WHERE prompt_id = p_id
    RETURNING version INTO v;
    IF p_set_current THEN
        UPDATE prompts SET current_version = v WHERE id = p_id;
    END IF;
    RETURN NEXT v;
END;
$$;

-- No row when the prompt or that version does not exist.
CREATE OR REPLACE FUNCTION sb_admin_prompt_set_current(p_actor text, p_id text, p_version integer)
RETURNS SETOF text LANGUAGE sql AS $$
    SELECT set_config('sb.actor', p_actor, true);
    UPDATE prompts SET current_version = p_version
    WHERE id = p_id AND EXISTS (SELECT 1 FROM prompt_versions WHERE prompt_id = p_id AND version = p_version)
    RETURNING id;
$$;

-- A new quota period: the tokens drawn from an account's quota back to 0,
-- under the usage row's lock (so a draw committed before counts in full and
-- one after lands on the new period), audited by hand (account_usage is
-- usage, not configuration, so it has no audit trigger). The tokens used
-- before; no row when the account does not exist.
CREATE OR REPLACE FUNCTION sb_admin_usage_reset(p_actor text, p_account text)
RETURNS SETOF bigint LANGUAGE plpgsql AS $$
DECLARE
    v_aid bigint;
    v_was bigint;
BEGIN
    SELECT id INTO v_aid FROM accounts WHERE name = p_account;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT tokens_used INTO v_was FROM account_usage WHERE account_id = v_aid FOR UPDATE;
    UPDATE account_usage SET tokens_used = 0, updated_at = now() WHERE account_id = v_aid;
    INSERT INTO admin_audit (actor, action, resource, resource_id, before, after)
    VALUES (p_actor, 'update', 'account_usage', v_aid::text, jsonb_build_object('tokens_used', COALESCE(v_was, 0)),
            jsonb_build_object('tokens_used', 0));
    RETURN NEXT COALESCE(v_was, 0);
END;
$$;

CREATE OR REPLACE FUNCTION sb_admin_api(p_actor text, p_op text, a jsonb, OUT status int, OUT body jsonb)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_n bigint;
    v_id bigint;
    v_aid bigint;
    v_gid bigint;
    v_ok boolean;
    v_r record;
    v_lim int := LEAST(GREATEST(COALESCE((a->>'limit')::int, 100), 1), 1000);
BEGIN
    status := 200;
    CASE p_op
    WHEN 'accounts.list' THEN
        body := jsonb_build_object('data', COALESCE((SELECT jsonb_agg(jsonb_build_object(
            'id', x.id, 'name', x.name, 'enabled', x.enabled, 'zero_data_retention', x.zero_data_retention,
            'quota_tokens', x.quota_tokens, 'created_at', x.created_at,
            'keys', (SELECT count(*) FROM api_keys k WHERE k.account_id = x.id)) ORDER BY x.name)
            FROM accounts x), '[]'));
    WHEN 'accounts.create' THEN
        IF NOT sb_admin_name_ok(a->>'name') THEN
            status := 400; body := sb_admin_err(400, 'invalid_name', 'name: 1-128 characters of A-Z a-z 0-9 . _ @ : + -, starting with a letter or digit');
            RETURN;
        END IF;
        SELECT x INTO v_id FROM sb_admin_account_create(p_actor, a->>'name',
            COALESCE((a->>'zero_data_retention')::boolean, false)) x;
        IF v_id IS NULL THEN
            status := 409; body := sb_admin_err(409, 'exists', format('account %s already exists', a->>'name'));
            RETURN;
        END IF;
        status := 201;
        body := (SELECT jsonb_build_object('id', x.id, 'name', x.name, 'enabled', x.enabled,
                     'zero_data_retention', x.zero_data_retention) FROM accounts x WHERE x.id = v_id);
    WHEN 'accounts.enable', 'accounts.disable' THEN
        SELECT x INTO v_id FROM sb_admin_account_set_enabled(p_actor, a->>'name', p_op = 'accounts.enable') x;
        IF v_id IS NULL THEN
            status := 404; body := sb_admin_err(404, 'not_found', format('account %s does not exist', a->>'name'));
            RETURN;
        END IF;
        body := jsonb_build_object('name', a->>'name', 'enabled', p_op = 'accounts.enable');
    WHEN 'groups.list' THEN
        body := jsonb_build_object('data', COALESCE((SELECT jsonb_agg(jsonb_build_object(
            'id', g.id, 'name', g.name, 'created_at', g.created_at,
            'models', COALESCE((SELECT jsonb_agg(m.model_id ORDER BY m.model_id) FROM group_models m
                                WHERE m.group_id = g.id), '[]'),
            'keys', (SELECT count(*) FROM api_keys k WHERE k.group_id = g.id),
            'limits', sb_admin_limits_json(g.rpm_limit, g.tpm_limit, g.concurrency_limit)) ORDER BY g.name)
            FROM token_groups g), '[]'));
    WHEN 'groups.create' THEN
        IF NOT sb_admin_name_ok(a->>'name') THEN
            status := 400; body := sb_admin_err(400, 'invalid_name', 'name: 1-128 characters of A-Z a-z 0-9 . _ @ : + -, starting with a letter or digit');
            RETURN;
        END IF;
        SELECT x INTO v_id FROM sb_admin_group_create(p_actor, a->>'name') x;
        IF v_id IS NULL THEN
            status := 409; body := sb_admin_err(409, 'exists', format('group %s already exists', a->>'name'));
            RETURN;
        END IF;
        status := 201;
        body := jsonb_build_object('id', v_id, 'name', a->>'name', 'models', '[]'::jsonb);
    WHEN 'groups.allow', 'groups.deny' THEN
        SELECT g.id INTO v_gid FROM token_groups g WHERE g.name = a->>'group';
        IF v_gid IS NULL THEN
            status := 404; body := sb_admin_err(404, 'not_found', format('group %s does not exist', a->>'group'));
            RETURN;
        END IF;
        IF a->>'model' IS NULL OR (a->>'model' <> '*' AND NOT sb_admin_model_id_ok(a->>'model')) THEN
            status := 400; body := sb_admin_err(400, 'invalid_model', 'model: a model id, or "*" for every model');
            RETURN;
        END IF;
        IF p_op = 'groups.allow' THEN
            PERFORM sb_admin_group_allow(p_actor, v_gid, a->>'model');
        ELSE
            SELECT count(*) INTO v_n FROM sb_admin_group_deny(p_actor, v_gid, a->>'model');
            IF v_n = 0 THEN
                status := 404;
                body := sb_admin_err(404, 'not_found', format('group %s does not list model %s', a->>'group', a->>'model'));
                RETURN;
            END IF;
        END IF;
        body := jsonb_build_object('name', a->>'group', 'models', COALESCE((SELECT jsonb_agg(m.model_id ORDER BY m.model_id)
            FROM group_models m WHERE m.group_id = v_gid), '[]'));
    WHEN 'keys.list' THEN
        body := jsonb_build_object('data', COALESCE((SELECT jsonb_agg(jsonb_build_object(
            'id', k.id, 'display_prefix', k.display_prefix, 'name', k.name, 'account', x.name, 'group', g.name,
            'enabled', k.enabled, 'created_at', k.created_at,
            'limits', sb_admin_limits_json(k.rpm_limit, k.tpm_limit, k.concurrency_limit)) ORDER BY k.id DESC)
            FROM api_keys k JOIN accounts x ON x.id = k.account_id JOIN token_groups g ON g.id = k.group_id
            WHERE a->>'account' IS NULL OR x.name = a->>'account'), '[]'));
    WHEN 'keys.create' THEN
        SELECT x.id INTO v_aid FROM accounts x WHERE x.name = a->>'account';
        SELECT g.id INTO v_gid FROM token_groups g WHERE g.name = a->>'group';
        IF v_aid IS NULL OR v_gid IS NULL THEN
            status := 404;
            body := sb_admin_err(404, 'not_found', CASE WHEN v_aid IS NULL THEN format('account %s does not exist', a->>'account')
                                                         ELSE format('group %s does not exist', a->>'group') END);
            RETURN;
        END IF;
        SELECT x INTO v_id FROM sb_admin_key_create(p_actor, v_aid, v_gid, a->>'hash', a->>'display',
                                                  COALESCE(a->>'name', '')) x;
        status := 201;
        body := jsonb_build_object('id', v_id, 'display_prefix', a->>'display', 'name', COALESCE(a->>'name', ''),
                                   'account', a->>'account', 'group', a->>'group', 'enabled', true);
    WHEN 'keys.enable', 'keys.disable', 'keys.move' THEN
        IF p_op = 'keys.move' THEN
            SELECT g.id INTO v_gid FROM token_groups g WHERE g.name = a->>'group';
            IF v_gid IS NULL THEN
                status := 404; body := sb_admin_err(404, 'not_found', format('group %s does not exist', a->>'group'));
                RETURN;
            END IF;
            SELECT count(*) INTO v_n FROM sb_admin_key_set_group(p_actor, (a->>'id')::bigint, v_gid);
        ELSE
            SELECT count(*) INTO v_n FROM sb_admin_key_set_enabled(p_actor, (a->>'id')::bigint, p_op = 'keys.enable');
        END IF;
        IF v_n = 0 THEN
            status := 404; body := sb_admin_err(404, 'not_found', format('key %s does not exist', a->>'id'));
            RETURN;
        END IF;
        body := (SELECT jsonb_build_object('id', k.id, 'display_prefix', k.display_prefix, 'enabled', k.enabled,
                                           'group', g.name)
                 FROM api_keys k JOIN token_groups g ON g.id = k.group_id WHERE k.id = (a->>'id')::bigint);
    WHEN 'models.list' THEN
        body := jsonb_build_object('data', COALESCE((SELECT jsonb_agg(jsonb_build_object(
            'id', m.id, 'enabled', m.enabled, 'provider', m.provider, 'base_url', m.base_url,
            'upstream_model', m.upstream_model, 'credential_ref', m.credential_ref, 'capabilities', m.capabilities,
            'context_length', m.context_length, 'max_output_tokens', m.max_output_tokens,
            'timeout_ms', m.timeout_ms, 'fallbacks', to_jsonb(m.fallbacks), 'created_at', m.created_at) ORDER BY m.id)
            FROM models m), '[]'));
    WHEN 'models.put' THEN
        IF NOT sb_admin_model_id_ok(a->>'id') THEN
            status := 400; body := sb_admin_err(400, 'invalid_model', 'id: 1-200 characters of A-Z a-z 0-9 . _ @ : + - /');
            RETURN;
        END IF;
        IF a ? 'fallbacks' THEN
            IF jsonb_typeof(a->'fallbacks') <> 'array' THEN
                status := 400; body := sb_admin_err(400, 'invalid_fallbacks', 'fallbacks: an array of model ids');
                RETURN;
            END IF;
            FOR v_r IN SELECT * FROM sb_admin_model_fallback_check(a->>'id',
                         (SELECT string_agg(v, ',') FROM jsonb_array_elements_text(a->'fallbacks') v)) LOOP
                IF v_r.self OR v_r.repeated OR NOT v_r.known THEN
                    status := 400;
                    body := sb_admin_err(400, 'invalid_fallbacks', CASE WHEN v_r.self THEN 'a model cannot be its own fallback'
                        WHEN v_r.repeated THEN format('fallback %s is listed more than once', v_r.id)
                        ELSE format('fallback model %s does not exist', v_r.id) END);
                    RETURN;
                END IF;
            END LOOP;
        END IF;
        v_ok := EXISTS (SELECT 1 FROM models m WHERE m.id = a->>'id');
        IF NOT v_ok THEN
            IF a->>'provider' IS NULL OR a->>'base_url' IS NULL THEN
                status := 400;
                body := sb_admin_err(400, 'missing_field', 'a new model needs provider and base_url');
                RETURN;
            END IF;
            PERFORM sb_admin_model_add(p_actor, a->>'id', a->>'provider', a->>'base_url',
                                       COALESCE(a->>'upstream_model', a->>'id'));
        END IF;
        PERFORM sb_admin_model_update(p_actor, a->>'id', a->>'provider', a->>'base_url', a->>'upstream_model',
            a->>'credential_ref', a->'capabilities', (a->>'context_length')::int, (a->>'max_output_tokens')::int,
            (a->>'timeout_ms')::int,
            CASE WHEN a ? 'fallbacks' THEN COALESCE((SELECT string_agg(v, ',') FROM jsonb_array_elements_text(a->'fallbacks') v), '') END);
        IF NOT v_ok AND NOT a ? 'timeout_ms' THEN
            PERFORM sb_admin_model_reasoning_timeout(p_actor, a->>'id');
        END IF;
        IF a ? 'enabled' THEN
            PERFORM sb_admin_model_set_enabled(p_actor, a->>'id', (a->>'enabled')::boolean);
        END IF;
        status := CASE WHEN v_ok THEN 200 ELSE 201 END;
        body := (SELECT jsonb_build_object('id', m.id, 'enabled', m.enabled, 'provider', m.provider,
                     'base_url', m.base_url, 'upstream_model', m.upstream_model, 'credential_ref', m.credential_ref,
                     'capabilities', m.capabilities, 'context_length', m.context_length,
                     'max_output_tokens', m.max_output_tokens, 'timeout_ms', m.timeout_ms,
                     'fallbacks', to_jsonb(m.fallbacks))
                 FROM models m WHERE m.id = a->>'id');
    WHEN 'models.enable', 'models.disable' THEN
        SELECT count(*) INTO v_n FROM sb_admin_model_set_enabled(p_actor, a->>'id', p_op = 'models.enable');
        IF v_n = 0 THEN
            status := 404; body := sb_admin_err(404, 'not_found', format('model %s does not exist', a->>'id'));
            RETURN;
        END IF;
        body := jsonb_build_object('id', a->>'id', 'enabled', p_op = 'models.enable');
    WHEN 'limits.list' THEN
        body := jsonb_build_object(
            'accounts', COALESCE((SELECT jsonb_agg(jsonb_build_object('account', q.account, 'quota_tokens', q.quota_tokens,
                'tokens_used', q.tokens_used, 'tokens_in_flight', q.tokens_in_flight, 'remaining', q.tokens_remaining)
                ORDER BY q.account) FROM quota_remaining q WHERE q.quota_tokens IS NOT NULL), '[]'),
            'groups', COALESCE((SELECT jsonb_agg(jsonb_build_object('group', g.name) ||
                sb_admin_limits_json(g.rpm_limit, g.tpm_limit, g.concurrency_limit) ORDER BY g.name) FROM token_groups g
                WHERE g.rpm_limit IS NOT NULL OR g.tpm_limit IS NOT NULL OR g.concurrency_limit IS NOT NULL), '[]'),
            'keys', COALESCE((SELECT jsonb_agg(jsonb_build_object('key_id', k.id, 'display_prefix', k.display_prefix) ||
                sb_admin_limits_json(k.rpm_limit, k.tpm_limit, k.concurrency_limit) ORDER BY k.id) FROM api_keys k
                WHERE k.rpm_limit IS NOT NULL OR k.tpm_limit IS NOT NULL OR k.concurrency_limit IS NOT NULL), '[]'));
    WHEN 'limits.key', 'limits.group' THEN
        SELECT * INTO v_r FROM sb_admin_limits_set(p_actor,
            CASE WHEN p_op = 'limits.key' THEN (a->>'id')::bigint END,
            CASE WHEN p_op = 'limits.group' THEN a->>'name' END,
            a ? 'rpm', sb_admin_limit_arg(a, 'rpm')::int, a ? 'tpm', sb_admin_limit_arg(a, 'tpm'),
            a ? 'concurrency', sb_admin_limit_arg(a, 'concurrency')::int);
        IF NOT FOUND THEN
            status := 404;
            body := sb_admin_err(404, 'not_found', CASE WHEN p_op = 'limits.key' THEN format('key %s does not exist', a->>'id')
                                                         ELSE format('group %s does not exist', a->>'name') END);
            RETURN;
        END IF;
        body := sb_admin_limits_json(v_r.rpm_limit, v_r.tpm_limit, v_r.concurrency_limit);
    WHEN 'limits.quota' THEN
        SELECT * INTO v_r FROM sb_admin_quota_set(p_actor, a->>'name', sb_admin_limit_arg(a, 'quota_tokens'));
        IF NOT FOUND THEN
            status := 404; body := sb_admin_err(404, 'not_found', format('account %s does not exist', a->>'name'));
            RETURN;
        END IF;
        body := jsonb_build_object('quota_tokens', v_r.quota_tokens, 'tokens_used', v_r.tokens_used, 'remaining', v_r.remaining);
    WHEN 'limits.reset_usage' THEN
        SELECT x INTO v_n FROM sb_admin_usage_reset(p_actor, a->>'name') x;
        IF v_n IS NULL THEN
            status := 404; body := sb_admin_err(404, 'not_found', format('account %s does not exist', a->>'name'));
            RETURN;
        END IF;
        body := jsonb_build_object('account', a->>'name', 'tokens_used_before', v_n, 'tokens_used', 0);
    WHEN 'request_log' THEN
        body := jsonb_build_object('data', COALESCE((SELECT jsonb_agg(jsonb_build_object(
            'request_id', l.request_id, 'ts', l.ts, 'key_id', l.key_id, 'account_id', l.account_id, 'model', l.model,
            'requested_model', l.requested_model, 'path', l.path, 'status', l.status, 'latency_ms', l.latency_ms,
            'upstream_latency_ms', l.upstream_latency_ms, 'tokens_in', l.tokens_in, 'tokens_out', l.tokens_out,
            'error', l.error, 'stream', l.stream, 'frontend', l.frontend, 'trace_id', l.trace_id) ORDER BY l.ts DESC, l.id DESC)
            FROM (SELECT * FROM sb_admin_log_rows(a) x ORDER BY x.ts DESC, x.id DESC LIMIT v_lim) l), '[]'));
    WHEN 'usage' THEN
        -- Per day (or hour), key and model: requests, errors, tokens, mean total and gateway-added latency.
        body := jsonb_build_object('data', COALESCE((SELECT jsonb_agg(to_jsonb(u) ORDER BY u.bucket, u.model, u.key_id) FROM (
            SELECT date_trunc(CASE WHEN a->>'bucket' = 'hour' THEN 'hour' ELSE 'day' END, l.ts) AS bucket,
                   l.key_id, l.model, count(*) AS requests, count(*) FILTER (WHERE l.status >= 400) AS errors,
                   sum(l.tokens_in) AS tokens_in, sum(l.tokens_out) AS tokens_out,
                   round(avg(l.latency_ms)::numeric, 1) AS latency_ms,
                   round(avg(l.latency_ms - l.upstream_latency_ms)::numeric, 1) AS added_latency_ms
            FROM sb_admin_log_rows(a) l GROUP BY 1, 2, 3) u), '[]'));
    WHEN 'tool_calls' THEN
        body := jsonb_build_object('data', COALESCE((SELECT jsonb_agg(to_jsonb(t) - 'id' ORDER BY t.created_at DESC) FROM (
            SELECT * FROM tool_calls ORDER BY created_at DESC LIMIT v_lim) t), '[]'));
    WHEN 'audit' THEN
        body := jsonb_build_object('data', COALESCE((SELECT jsonb_agg(to_jsonb(x) ORDER BY x.id DESC) FROM (
            SELECT * FROM admin_audit WHERE a->>'resource' IS NULL OR resource = a->>'resource'
            ORDER BY id DESC LIMIT v_lim) x), '[]'));
    WHEN 'search_backends.list' THEN
        body := jsonb_build_object('data', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', b.id, 'name', b.name,
            'kind', b.kind, 'base_url', b.base_url, 'credential_ref', b.credential_ref, 'default', b.is_default,
            'enabled', b.enabled, 'created_at', b.created_at) ORDER BY b.name) FROM search_backends b), '[]'));
    WHEN 'search_backends.create' THEN
        IF NOT sb_admin_name_ok(a->>'name') OR a->>'kind' IS NULL OR a->>'base_url' IS NULL THEN
            status := 400;
            body := sb_admin_err(400, 'invalid_value', 'name (1-128 characters of A-Z a-z 0-9 . _ @ : + -), kind and base_url are required');
            RETURN;
        END IF;
        SELECT x INTO v_id FROM sb_admin_search_backend_add(p_actor, a->>'name', a->>'kind', a->>'base_url',
                                                            a->>'credential_ref') x;
        IF v_id IS NULL THEN
            status := 409; body := sb_admin_err(409, 'exists', format('search backend %s already exists', a->>'name'));
            RETURN;
        END IF;
        IF COALESCE((a->>'default')::boolean, false) THEN
            PERFORM sb_admin_search_backend_set_default(p_actor, a->>'name');
        END IF;
        status := 201;
        body := (SELECT jsonb_build_object('id', b.id, 'name', b.name, 'kind', b.kind, 'base_url', b.base_url,
                     'credential_ref', b.credential_ref, 'default', b.is_default, 'enabled', b.enabled)
                 FROM search_backends b WHERE b.id = v_id);
    WHEN 'search_backends.default', 'search_backends.enable', 'search_backends.disable', 'search_backends.remove' THEN
        SELECT count(*) INTO v_n FROM (
            SELECT sb_admin_search_backend_set_default(p_actor, a->>'name') WHERE p_op = 'search_backends.default'
            UNION ALL SELECT sb_admin_search_backend_set_enabled(p_actor, a->>'name', p_op = 'search_backends.enable')
                      WHERE p_op IN ('search_backends.enable', 'search_backends.disable')
            UNION ALL SELECT sb_admin_search_backend_remove(p_actor, a->>'name') WHERE p_op = 'search_backends.remove') x;
        IF v_n = 0 THEN
            status := 404; body := sb_admin_err(404, 'not_found', format('search backend %s does not exist', a->>'name'));
            RETURN;
        END IF;
        body := COALESCE((SELECT jsonb_build_object('name', b.name, 'default', b.is_default, 'enabled', b.enabled)
                          FROM search_backends b WHERE b.name = a->>'name'),
                         jsonb_build_object('name', a->>'name', 'deleted', true));
    WHEN 'prompts.list' THEN
        body := jsonb_build_object('data', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', p.id, 'name', p.name,
            'account', x.name, 'current_version', p.current_version,
            'versions', (SELECT count(*) FROM prompt_versions v WHERE v.prompt_id = p.id), 'created_at', p.created_at)
            ORDER BY x.name, p.name) FROM prompts p JOIN accounts x ON x.id = p.account_id
            WHERE a->>'account' IS NULL OR x.name = a->>'account'), '[]'));
    WHEN 'prompts.create' THEN
        SELECT x.id INTO v_aid FROM accounts x WHERE x.name = a->>'account';
        IF v_aid IS NULL THEN
            status := 404; body := sb_admin_err(404, 'not_found', format('account %s does not exist', a->>'account'));
            RETURN;
        END IF;
        IF NOT sb_admin_name_ok(a->>'name') THEN
            status := 400; body := sb_admin_err(400, 'invalid_name', 'name: 1-128 characters of A-Z a-z 0-9 . _ @ : + -, starting with a letter or digit');
            RETURN;
        END IF;
        SELECT count(*) INTO v_n FROM sb_admin_prompt_create(p_actor, v_aid, a->>'new_id', a->>'name', a->'body');
        IF v_n = 0 THEN
            status := 409;
            body := sb_admin_err(409, 'exists', format('account %s already has a prompt named %s', a->>'account', a->>'name'));
            RETURN;
        END IF;
        status := 201;
        body := jsonb_build_object('id', a->>'new_id', 'name', a->>'name', 'account', a->>'account', 'current_version', 1);
    WHEN 'prompts.version' THEN
        SELECT x INTO v_n FROM sb_admin_prompt_version(p_actor, a->>'id', a->'body',
                                                       COALESCE((a->>'set_current')::boolean, true)) x;
        IF v_n IS NULL THEN
            status := 404; body := sb_admin_err(404, 'not_found', format('prompt %s does not exist', a->>'id'));
            RETURN;
        END IF;
        status := 201;
        body := (SELECT jsonb_build_object('id', p.id, 'version', v_n, 'current_version', p.current_version)
                 FROM prompts p WHERE p.id = a->>'id');
    WHEN 'prompts.current' THEN
        SELECT count(*) INTO v_n FROM sb_admin_prompt_set_current(p_actor, a->>'id', (a->>'version')::int);
        IF v_n = 0 THEN
            status := 404; body := sb_admin_err(404, 'not_found', format('prompt %s has no version %s', a->>'id', a->>'version'));
            RETURN;
        END IF;
        body := jsonb_build_object('id', a->>'id', 'current_version', (a->>'version')::int);
    WHEN 'prompts.get' THEN
        body := (SELECT jsonb_build_object('id', p.id, 'name', p.name, 'current_version', p.current_version,
                     'version', v.version, 'body', v.body, 'created_at', v.created_at)
                 FROM prompts p JOIN prompt_versions v ON v.prompt_id = p.id
                 WHERE p.id = a->>'id' AND v.version = COALESCE((a->>'version')::int, p.current_version));
        IF body IS NULL THEN
            status := 404; body := sb_admin_err(404, 'not_found', format('prompt %s (that version) does not exist', a->>'id'));
        END IF;
    WHEN 'admin_keys.list' THEN
        body := jsonb_build_object('data', COALESCE((SELECT jsonb_agg(jsonb_build_object('id', k.id,
            'display_prefix', k.display_prefix, 'name', k.name, 'enabled', k.enabled, 'created_at', k.created_at)
            ORDER BY k.id) FROM admin_keys k), '[]'));
    ELSE
        status := 404; body := sb_admin_err(404, 'unknown_operation', format('no operation %s', p_op));
    END CASE;
EXCEPTION
    WHEN invalid_text_representation OR invalid_parameter_value OR numeric_value_out_of_range
         OR datetime_field_overflow OR invalid_datetime_format OR check_violation OR not_null_violation THEN
        status := 400; body := sb_admin_err(400, 'invalid_value', SQLERRM);
    WHEN unique_violation THEN
        status := 409; body := sb_admin_err(409, 'exists', SQLERRM);
    WHEN foreign_key_violation THEN
        status := 409; body := sb_admin_err(409, 'in_use', SQLERRM);
END;
$$;

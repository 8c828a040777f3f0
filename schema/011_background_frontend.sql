-- Background responses, the frontends' half (issue 18, docs/background.md):
-- creating one, cancelling it, failing one whose worker or deadline is
-- gone, and finalizing it (the final body, its output items and its one
-- request_log row, once).

-- $1: {id, account_id, key_id, model, previous_response_id, body, context,
-- input, job_id, snapshot, deadline_ms}: the response (queued), its context
-- and input items, and its background row, in one transaction.
CREATE OR REPLACE FUNCTION sb_background_create(p jsonb) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO responses (id, account_id, key_id, model, status, previous_response_id, body)
    VALUES (p->>'id', (p->>'account_id')::bigint, (p->>'key_id')::bigint, p->>'model', 'queued',
            p->>'previous_response_id', p->'body');
    INSERT INTO response_items (response_id, kind, seq, item)
    SELECT p->>'id', 'context', (c.ord - 1)::integer, c.item
    FROM jsonb_array_elements(COALESCE(p->'context', '[]'::jsonb)) WITH ORDINALITY AS c(item, ord)
    UNION ALL
    SELECT p->>'id', 'input', (i.ord - 1)::integer, i.item
    FROM jsonb_array_elements(COALESCE(p->'input', '[]'::jsonb)) WITH ORDINALITY AS i(item, ord);
    INSERT INTO background_responses (response_id, account_id, job_id, snapshot, deadline)
    VALUES (p->>'id', (p->>'account_id')::bigint, p->>'job_id', p->'snapshot',
            to_timestamp((p->>'deadline_ms')::bigint / 1000.0));
END;
$$;

-- Cancels an open background response of the account: -> outcome
-- ('cancelled' now, 'finished' already over (state says how), 'not_background',
-- 'not_found'), its state, its job id.
CREATE OR REPLACE FUNCTION sb_background_cancel(p_id text, p_account bigint,
                                                OUT outcome text, OUT state text, OUT job_id text)
LANGUAGE plpgsql AS $$
BEGIN
    SELECT b.state, b.job_id INTO state, job_id FROM background_responses b
    WHERE b.response_id = p_id AND b.account_id = p_account FOR UPDATE;
    IF NOT FOUND THEN
        outcome := CASE WHEN EXISTS (SELECT 1 FROM responses r WHERE r.id = p_id AND r.account_id = p_account)
                        THEN 'not_background' ELSE 'not_found' END;
        RETURN;
    END IF;
    IF state NOT IN ('queued', 'in_progress') THEN
        outcome := 'finished';
        RETURN;
    END IF;
    UPDATE background_responses b
    SET state = 'cancelled', cancel_requested_at = now(), finished_at = now(), updated_at = now(),
        error = jsonb_build_object('type', 'error', 'status', 499, 'kind', 'cancelled', 'code', 'cancelled',
                                   'message', 'the response was cancelled')
    WHERE b.response_id = p_id;
    PERFORM pg_notify('sb_background', p_id);
    outcome := 'cancelled';
    state := 'cancelled';
END;
$$;

-- Ends an open background response failed with the error event p_error
-- (its worker or its broker was lost, its deadline passed). True when it
-- was open.
CREATE OR REPLACE FUNCTION sb_background_fail(p_id text, p_error jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    UPDATE background_responses
    SET state = 'failed', error = p_error, finished_at = now(), updated_at = now()
    WHERE response_id = p_id AND state IN ('queued', 'in_progress');
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    PERFORM pg_notify('sb_background', p_id);
    RETURN true;
END;
$$;

-- The reaper and the finalizer's worklist: fails the open responses whose
-- deadline is past (by p_grace_ms) or whose worker has not stamped its
-- heartbeat for p_stale_ms, then returns (up to p_limit) the ids of those
-- over and not finalized, oldest first.
CREATE OR REPLACE FUNCTION sb_background_sweep(p_stale_ms integer, p_grace_ms integer, p_limit integer)
RETURNS TABLE (response_id text, account_id bigint) LANGUAGE plpgsql AS $$
BEGIN
    UPDATE background_responses b
    SET state = 'failed', finished_at = now(), updated_at = now(),
        error = CASE WHEN b.deadline < now() - make_interval(secs => p_grace_ms / 1000.0)
                     THEN jsonb_build_object('type', 'error', 'status', 504, 'kind', 'timeout',
                                             'code', 'timeout', 'message',
                                             'timeout: the response exceeded its deadline')
                     ELSE jsonb_build_object('type', 'error', 'status', 502, 'kind', 'upstream_error',
                                             'code', 'worker_lost', 'message',
                                             'the worker running this response stopped before its end') END
    WHERE b.finalized_at IS NULL AND b.state IN ('queued', 'in_progress')
      AND (b.deadline < now() - make_interval(secs => p_grace_ms / 1000.0)
           OR (b.state = 'in_progress' AND b.worker IS NOT NULL AND NOT EXISTS (
                 SELECT 1 FROM worker_heartbeats h
                 WHERE h.name = b.worker AND h.seen_at > now() - make_interval(secs => p_stale_ms / 1000.0))));
    RETURN QUERY
    SELECT b.response_id, b.account_id FROM background_responses b
    WHERE b.finalized_at IS NULL AND b.state NOT IN ('queued', 'in_progress')
    ORDER BY b.finished_at LIMIT p_limit;
END;
$$;

-- Finalizes an over background response once: p = {id, status, body,
-- output, log: request_log's row}. The first caller writes the final body
-- and status, the output items and the request_log row (whose insert draws
-- the usage and frees the admission's lease); later ones change nothing.
-- True when this call finalized it.
CREATE OR REPLACE FUNCTION sb_background_finalize(p jsonb) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    UPDATE background_responses
    SET finalized_at = now(), updated_at = now()
    WHERE response_id = p->>'id' AND finalized_at IS NULL AND state NOT IN ('queued', 'in_progress');
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    UPDATE responses SET body = p->'body', status = p->>'status' WHERE id = p->>'id';
    INSERT INTO response_items (response_id, kind, seq, item)
    SELECT p->>'id', 'output', (o.ord - 1)::integer, o.item
    FROM jsonb_array_elements(COALESCE(p->'output', '[]'::jsonb)) WITH ORDINALITY AS o(item, ord)
    ON CONFLICT DO NOTHING;
    INSERT INTO request_log (request_id, ts, key_id, account_id, model, requested_model, path, status,
                             latency_ms, upstream_latency_ms, tokens_in, tokens_out, reasoning_tokens,
                             tokens_estimated, error, stream, frontend)
    SELECT l.request_id, to_timestamp(l.ts_ms / 1000.0), l.key_id, l.account_id, l.model, l.requested_model,
           l.path, l.status, l.latency_ms, l.upstream_latency_ms, COALESCE(l.tokens_in, 0),
           COALESCE(l.tokens_out, 0), COALESCE(l.reasoning_tokens, 0), l.tokens_estimated, l.error,
           COALESCE(l.stream, false), l.frontend
    FROM jsonb_to_record(p->'log') AS l(request_id text, ts_ms bigint, key_id bigint, account_id bigint,
                                        model text, requested_model text, path text, status int,
                                        latency_ms int, upstream_latency_ms int, tokens_in int, tokens_out int,
                                        reasoning_tokens int, tokens_estimated int, error text, stream boolean,
                                        frontend text)
    ON CONFLICT (request_id) DO NOTHING;
    RETURN true;
END;
$$;

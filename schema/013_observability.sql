-- 013: observability (issue 19). request_log gets the W3C trace id of each
-- request (the client's traceparent, or one the frontend started), so a
-- trace seen in a client's or an upstream's tooling finds its row.
ALTER TABLE request_log ADD COLUMN IF NOT EXISTS trace_id text;
CREATE INDEX IF NOT EXISTS request_log_trace_idx ON request_log (trace_id) WHERE trace_id IS NOT NULL;

-- sb_background_finalize (012) again, now also writing the trace id of the
-- request_log row: p = {id, status, body, output, log, conversation?}.
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
                             tokens_estimated, error, stream, frontend, trace_id)
    SELECT l.request_id, to_timestamp(l.ts_ms / 1000.0), l.key_id, l.account_id, l.model, l.requested_model,
           l.path, l.status, l.latency_ms, l.upstream_latency_ms, COALESCE(l.tokens_in, 0),
           COALESCE(l.tokens_out, 0), COALESCE(l.reasoning_tokens, 0), l.tokens_estimated, l.error,
           COALESCE(l.stream, false), l.frontend, l.trace_id
    FROM jsonb_to_record(p->'log') AS l(request_id text, ts_ms bigint, key_id bigint, account_id bigint,
                                        model text, requested_model text, path text, status int,
                                        latency_ms int, upstream_latency_ms int, tokens_in int, tokens_out int,
                                        reasoning_tokens int, tokens_estimated int, error text, stream boolean,
                                        frontend text, trace_id text)
    ON CONFLICT (request_id) DO NOTHING;
    IF p ? 'conversation' THEN
        PERFORM sb_conversation_append(p->>'conversation', r.account_id,
            COALESCE((SELECT jsonb_agg(i.item ORDER BY i.seq) FROM response_items i
                      WHERE i.response_id = r.id AND i.kind = 'input'), '[]'::jsonb)
            || COALESCE(p->'output', '[]'::jsonb))
        FROM responses r WHERE r.id = p->>'id';
    END IF;
    RETURN true;
END;
$$;

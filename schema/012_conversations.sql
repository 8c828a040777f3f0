-- The Conversations API (issue 18): a conversation is an ordered list of
-- items, owned by an account; POST /v1/responses with `conversation` reads
-- them as its context and, when it completes, appends its input and output
-- items as one turn.
CREATE TABLE IF NOT EXISTS conversations (
    id          text PRIMARY KEY,
    account_id  bigint NOT NULL,
    metadata    jsonb NOT NULL DEFAULT '{}'::jsonb,
    next_seq    bigint NOT NULL DEFAULT 0,    -- items appended so far: the next item's seq
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS conversations_account_idx ON conversations (account_id, created_at);

CREATE TABLE IF NOT EXISTS conversation_items (
    conversation_id text NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    seq             bigint NOT NULL,
    item_id         text NOT NULL,
    item            jsonb NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (conversation_id, seq)
);
CREATE INDEX IF NOT EXISTS conversation_items_item_idx ON conversation_items (conversation_id, item_id);

-- Appends p_items (a JSON array of items, each with an "id") to the
-- account's conversation as one contiguous run: the conversation's row is
-- locked for it, so two turns appended at once never interleave (each
-- lands whole, in the order they commit). Returns the items appended, or
-- NULL when the conversation is not the account's (or gone).
CREATE OR REPLACE FUNCTION sb_conversation_append(p_id text, p_account bigint, p_items jsonb)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    SELECT next_seq INTO n FROM conversations WHERE id = p_id AND account_id = p_account FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO conversation_items (conversation_id, seq, item_id, item)
    SELECT p_id, n + i.ord - 1, COALESCE(i.item->>'id', ''), i.item
    FROM jsonb_array_elements(COALESCE(p_items, '[]'::jsonb)) WITH ORDINALITY AS i(item, ord);
    UPDATE conversations SET next_seq = n + jsonb_array_length(COALESCE(p_items, '[]'::jsonb)) WHERE id = p_id;
    RETURN COALESCE(p_items, '[]'::jsonb);
END;
$$;

-- The conversation object as the API shows it.
CREATE OR REPLACE FUNCTION sb_conversation_json(c conversations) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT jsonb_build_object('id', c.id, 'object', 'conversation', 'created_at',
                              extract(epoch FROM c.created_at)::bigint, 'metadata', c.metadata)
$$;

-- A new conversation of the account with its initial items -> its object.
CREATE OR REPLACE FUNCTION sb_conversation_create(p_id text, p_account bigint, p_metadata jsonb, p_items jsonb)
RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
    c conversations;
BEGIN
    INSERT INTO conversations (id, account_id, metadata) VALUES (p_id, p_account, COALESCE(p_metadata, '{}'::jsonb))
    RETURNING * INTO c;
    PERFORM sb_conversation_append(p_id, p_account, p_items);
    RETURN sb_conversation_json(c);
END;
$$;

-- Deletes an item (the first with that id) of the account's conversation ->
-- ('deleted', the conversation object), ('no_item', NULL) or
-- ('no_conversation', NULL).
CREATE OR REPLACE FUNCTION sb_conversation_item_delete(p_id text, p_account bigint, p_item text,
                                                       OUT outcome text, OUT conversation jsonb)
LANGUAGE plpgsql AS $$
DECLARE
    c conversations;
BEGIN
    SELECT * INTO c FROM conversations WHERE id = p_id AND account_id = p_account FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'no_conversation';
        RETURN;
    END IF;
    DELETE FROM conversation_items
    WHERE conversation_id = p_id AND seq = (SELECT min(seq) FROM conversation_items
                                            WHERE conversation_id = p_id AND item_id = p_item);
    IF NOT FOUND THEN
        outcome := 'no_item';
        RETURN;
    END IF;
    outcome := 'deleted';
    conversation := sb_conversation_json(c);
END;
$$;

-- sb_background_finalize (011) again, now also appending a conversation's
-- turn: p = {id, status, body, output, log, conversation?}.
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
    -- A response of a conversation: its turn (its own input, then its
    -- output) goes into the conversation with it.
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

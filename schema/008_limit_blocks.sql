-- 008_limit_blocks: capacity blocks (issue 17). A frontend that admits
-- many requests of one limited key takes a block of its capacity at once:
-- requests (cells of the key's and group's request buckets), tokens (cells
-- of their token buckets, and a reservation against the account's quota)
-- and concurrency slots, all charged here before the frontend spends them
-- on its own, without a round trip per request. What it has not spent
-- within 250 ms goes back (its cells are refunded), and every block is at
-- most an eighth of what is left of each limit, so keys near a limit (and
-- small limits: under 16 requests or 16 slots) are admitted one request at
-- a time by sb_limit_admit as before. docs/limits.md gives the bounds.
-- Idempotent.
--
-- A block b (an id the frontend makes: its name, a start nonce and the key)
-- lives in limit_leases as rows the other functions already count:
--   b            tokens reserved (not a slot: active false), counted by the
--                quota as every lease's tokens are;
--   b:1 .. b:n   the n concurrency slots the frontend holds (active, no
--                tokens), counted by sb_limit_admit's concurrency checks.
-- The reservation of a request admitted from a block stays in b's row until
-- the request's request_log row lands (its limit_block and tokens_reserved
-- say so), when the draw trigger below moves it to account_usage as the
-- real count: the same moment a lease of its own would have been retired.

ALTER TABLE request_log ADD COLUMN IF NOT EXISTS limit_block text;
ALTER TABLE request_log ADD COLUMN IF NOT EXISTS tokens_reserved bigint;

-- Whole cells a GCRA bucket (tat, per_minute, burst one minute) can still
-- take at now_us.
CREATE OR REPLACE FUNCTION sb_limit_cells(tat double precision, now_us double precision,
                                          per_minute double precision)
RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
    SELECT greatest(floor((60e6 - (greatest(tat, now_us) - now_us)) * per_minute / 60e6), 0)::bigint
$$;

-- The ids of block p_block's slot rows from..to.
CREATE OR REPLACE FUNCTION sb_limit_slot_ids(p_block text, p_from integer, p_to integer)
RETURNS text[] LANGUAGE sql IMMUTABLE AS $$
    SELECT COALESCE(array_agg(p_block || ':' || n), '{}') FROM generate_series(p_from, p_to) AS n
$$;

-- One exchange of frontend block p_block of key p_key_id. The frontend
-- holds p_slots_held slot rows; it gives back p_ret_req requests and
-- p_ret_tok tokens it did not spend and p_ret_slots slots it does not need,
-- reports p_tok_diff (real - reserved, summed over its requests that ended
-- since the last exchange; the token buckets are corrected by it, as
-- sb_limit_release does), and asks for p_want_req requests, p_want_tok
-- tokens and p_want_slots slots more, where one request reserves p_unit
-- tokens. p_have_* is what it keeps unspent (-1: that dimension was
-- unlimited). Each grant is the least of what was asked and an eighth of
-- what is left of every limit in its dimension; a dimension with no limit
-- answers -1, a block that would not hold one more request answers 0
-- everywhere, and slots below -1 ask for that many free slots back (a
-- concurrency limit was lowered under the block). The rows' lifetime becomes p_ttl_ms (a frontend that died
-- leaves its block until then). Locks as sb_limit_admit: key, group,
-- account, so exchanges and admissions cannot deadlock.
CREATE OR REPLACE FUNCTION sb_limit_block(p_block text, p_key_id bigint, p_slots_held integer,
                                          p_ret_req bigint, p_ret_tok bigint, p_ret_slots integer,
                                          p_tok_diff bigint, p_have_req bigint, p_have_tok bigint,
                                          p_have_slots integer, p_want_req bigint, p_want_tok bigint,
                                          p_want_slots integer, p_unit bigint, p_ttl_ms integer)
RETURNS TABLE (req bigint, tok bigint, slots integer)
LANGUAGE plpgsql AS $$
DECLARE
    k record;
    g record;
    quota bigint;
    used bigint;
    ks limit_state;
    gs limit_state;
    now_us double precision := extract(epoch FROM clock_timestamp()) * 1e6;
    expires timestamptz := clock_timestamp() + make_interval(secs => p_ttl_ms / 1000.0);
    keep integer := greatest(p_slots_held - greatest(p_ret_slots, 0), 0);
    tok_delta double precision := p_tok_diff - greatest(p_ret_tok, 0);
    req_avail bigint;
    tok_avail bigint;
    slot_avail bigint;
    n bigint;
    unit bigint := greatest(p_unit, 1);
BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    SELECT id, group_id, account_id, rpm_limit, tpm_limit, concurrency_limit INTO k FROM api_keys WHERE id = p_key_id;
    IF NOT FOUND THEN
        DELETE FROM limit_leases
        WHERE request_id = p_block OR request_id = ANY (sb_limit_slot_ids(p_block, 1, p_slots_held));
        req := 0; tok := 0; slots := 0;
        RETURN NEXT;
        RETURN;
    END IF;
    SELECT rpm_limit, tpm_limit, concurrency_limit INTO g FROM token_groups WHERE id = k.group_id;
    SELECT quota_tokens INTO quota FROM accounts WHERE id = k.account_id;

    -- Locks, in sb_limit_admit's order.
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

    -- What comes back: unspent cells are refunded, the token buckets
    -- corrected to what the ended requests really used.
    IF ks.scope_id IS NOT NULL THEN
        ks.req_tat := ks.req_tat - CASE WHEN k.rpm_limit IS NULL THEN 0
                                        ELSE greatest(p_ret_req, 0) * 60e6 / k.rpm_limit END;
        ks.tok_tat := ks.tok_tat + CASE WHEN k.tpm_limit IS NULL THEN 0 ELSE tok_delta * 60e6 / k.tpm_limit END;
    END IF;
    IF gs.scope_id IS NOT NULL THEN
        gs.req_tat := gs.req_tat - CASE WHEN g.rpm_limit IS NULL THEN 0
                                        ELSE greatest(p_ret_req, 0) * 60e6 / g.rpm_limit END;
        gs.tok_tat := gs.tok_tat + CASE WHEN g.tpm_limit IS NULL THEN 0 ELSE tok_delta * 60e6 / g.tpm_limit END;
    END IF;
    UPDATE limit_leases SET tokens = greatest(tokens - greatest(p_ret_tok, 0), 0) WHERE request_id = p_block;
    DELETE FROM limit_leases WHERE request_id = ANY (sb_limit_slot_ids(p_block, keep + 1, p_slots_held));
    DELETE FROM limit_leases WHERE key_id = k.id AND expires_at < clock_timestamp();

    -- What is left of each limit.
    IF k.rpm_limit IS NOT NULL THEN
        req_avail := sb_limit_cells(ks.req_tat, now_us, k.rpm_limit);
    END IF;
    IF g.rpm_limit IS NOT NULL THEN
        req_avail := least(COALESCE(req_avail, 9e18::bigint), sb_limit_cells(gs.req_tat, now_us, g.rpm_limit));
    END IF;
    IF k.tpm_limit IS NOT NULL THEN
        tok_avail := sb_limit_cells(ks.tok_tat, now_us, k.tpm_limit);
    END IF;
    IF g.tpm_limit IS NOT NULL THEN
        tok_avail := least(COALESCE(tok_avail, 9e18::bigint), sb_limit_cells(gs.tok_tat, now_us, g.tpm_limit));
    END IF;
    IF quota IS NOT NULL THEN
        n := quota - used - COALESCE((SELECT sum(tokens) FROM limit_leases
                                      WHERE account_id = k.account_id AND expires_at >= clock_timestamp()), 0);
        tok_avail := least(COALESCE(tok_avail, 9e18::bigint), greatest(n, 0));
    END IF;
    IF k.concurrency_limit IS NOT NULL THEN
        SELECT count(*) INTO n FROM limit_leases WHERE key_id = k.id AND active AND expires_at >= clock_timestamp();
        slot_avail := greatest(k.concurrency_limit - n, 0);
    END IF;
    IF g.concurrency_limit IS NOT NULL THEN
        SELECT count(*) INTO n FROM limit_leases
        WHERE group_id = k.group_id AND active AND expires_at >= clock_timestamp();
        slot_avail := least(COALESCE(slot_avail, 9e18::bigint), greatest(g.concurrency_limit - n, 0));
    END IF;

    -- The grants: an eighth of what is left at most, and only blocks worth
    -- having (two requests, two reservations, one slot).
    req := CASE WHEN req_avail IS NULL THEN -1 ELSE least(greatest(p_want_req, 0), req_avail / 8) END;
    IF req BETWEEN 0 AND 1 THEN req := 0; END IF;
    tok := CASE WHEN tok_avail IS NULL THEN -1 ELSE least(greatest(p_want_tok, 0), tok_avail / 8) END;
    IF tok >= 0 AND tok < 2 * unit THEN tok := 0; END IF;
    slots := CASE WHEN slot_avail IS NULL THEN -1 ELSE least(greatest(p_want_slots, 0), slot_avail / 8) END;
    -- Over a concurrency limit (it was lowered): the frontend gives back
    -- free slots, up to the excess (slots < -1 asks for -slots of them;
    -- -1 itself would read as "no limit", so one slot over asks for two).
    IF slot_avail IS NOT NULL AND slot_avail = 0 AND p_have_slots > 0 THEN
        SELECT count(*) INTO n FROM limit_leases WHERE key_id = k.id AND active AND expires_at >= clock_timestamp();
        n := CASE WHEN k.concurrency_limit IS NOT NULL THEN n - k.concurrency_limit ELSE 0 END;
        IF g.concurrency_limit IS NOT NULL THEN
            n := greatest(n, (SELECT count(*) FROM limit_leases WHERE group_id = k.group_id AND active
                                                                AND expires_at >= clock_timestamp())
                             - g.concurrency_limit);
        END IF;
        IF n > 0 THEN
            slots := -least(greatest(n, 2), p_have_slots + 1);
        END IF;
    END IF;
    -- With what the frontend keeps, would one more request fit? If not, the
    -- block is no use: nothing is granted.
    IF (req >= 0 AND greatest(p_have_req, 0) + req < 1)
       OR (tok >= 0 AND greatest(p_have_tok, 0) + tok < unit)
       OR (slots >= 0 AND greatest(p_have_slots, 0) + slots < 1) OR slots < -1 THEN
        req := least(req, 0); tok := least(tok, 0); slots := CASE WHEN slots < -1 THEN slots ELSE least(slots, 0) END;
    END IF;

    -- Charge what is granted.
    IF ks.scope_id IS NOT NULL THEN
        IF req > 0 AND k.rpm_limit IS NOT NULL THEN
            ks.req_tat := greatest(ks.req_tat, now_us) + req * 60e6 / k.rpm_limit;
        END IF;
        IF tok > 0 AND k.tpm_limit IS NOT NULL THEN
            ks.tok_tat := greatest(ks.tok_tat, now_us) + tok * 60e6 / k.tpm_limit;
        END IF;
        UPDATE limit_state SET req_tat = ks.req_tat, tok_tat = ks.tok_tat
        WHERE limit_state.scope = 'key' AND scope_id = k.id;
    END IF;
    IF gs.scope_id IS NOT NULL THEN
        IF req > 0 AND g.rpm_limit IS NOT NULL THEN
            gs.req_tat := greatest(gs.req_tat, now_us) + req * 60e6 / g.rpm_limit;
        END IF;
        IF tok > 0 AND g.tpm_limit IS NOT NULL THEN
            gs.tok_tat := greatest(gs.tok_tat, now_us) + tok * 60e6 / g.tpm_limit;
        END IF;
        UPDATE limit_state SET req_tat = gs.req_tat, tok_tat = gs.tok_tat
        WHERE limit_state.scope = 'group' AND scope_id = k.group_id;
    END IF;
    IF tok > 0 THEN
        INSERT INTO limit_leases AS l (request_id, key_id, group_id, account_id, estimated, tokens, active, expires_at)
        VALUES (p_block, k.id, k.group_id, k.account_id, 0, tok, false, expires)
        ON CONFLICT (request_id) DO UPDATE SET tokens = l.tokens + EXCLUDED.tokens, expires_at = EXCLUDED.expires_at;
    ELSE
        UPDATE limit_leases SET expires_at = expires WHERE request_id = p_block;
    END IF;
    DELETE FROM limit_leases WHERE request_id = p_block AND tokens <= 0;
    UPDATE limit_leases SET expires_at = expires WHERE request_id = ANY (sb_limit_slot_ids(p_block, 1, keep));
    IF slots > 0 THEN
        INSERT INTO limit_leases (request_id, key_id, group_id, account_id, estimated, tokens, active, expires_at)
        SELECT id, k.id, k.group_id, k.account_id, 0, 0, true, expires
        FROM unnest(sb_limit_slot_ids(p_block, keep + 1, keep + slots)) AS id
        ON CONFLICT (request_id) DO UPDATE SET active = true, expires_at = EXCLUDED.expires_at;
    END IF;
    RETURN NEXT;
END;
$$;

-- p: [{block, key_id, slots_held, ret_req, ret_tok, ret_slots, tok_diff,
-- have_req, have_tok, have_slots, want_req, want_tok, want_slots, unit,
-- ttl_ms}, ...], exchanges of one key's block (a frontend keeps one in
-- flight per key). One row per element, ord its 1-based position.
CREATE OR REPLACE FUNCTION sb_limit_block_batch(p jsonb)
RETURNS TABLE (ord integer, req bigint, tok bigint, slots integer)
LANGUAGE plpgsql AS $$
DECLARE
    r jsonb;
    a record;
BEGIN
    ord := 0;
    FOR r IN SELECT e.value FROM jsonb_array_elements(p) WITH ORDINALITY AS e(value, n) ORDER BY e.n LOOP
        ord := ord + 1;
        SELECT * INTO a FROM sb_limit_block(r->>'block', (r->>'key_id')::bigint, (r->>'slots_held')::integer,
                                            (r->>'ret_req')::bigint, (r->>'ret_tok')::bigint,
                                            (r->>'ret_slots')::integer, (r->>'tok_diff')::bigint,
                                            (r->>'have_req')::bigint, (r->>'have_tok')::bigint,
                                            (r->>'have_slots')::integer, (r->>'want_req')::bigint,
                                            (r->>'want_tok')::bigint, (r->>'want_slots')::integer,
                                            (r->>'unit')::bigint, (r->>'ttl_ms')::integer);
        req := a.req;
        tok := a.tok;
        slots := a.slots;
        RETURN NEXT;
    END LOOP;
END;
$$;

-- The quota draw (003_limits.sql's), now also moving the reservations of
-- requests admitted from a block out of the block's row as their real
-- counts land in account_usage: in one transaction, so the quota never
-- counts a request neither way. A block row left empty goes.
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
    UPDATE limit_leases l SET tokens = greatest(l.tokens - b.reserved, 0)
    FROM (SELECT limit_block, sum(COALESCE(tokens_reserved, 0)) AS reserved FROM inserted
          WHERE limit_block IS NOT NULL GROUP BY limit_block) b
    WHERE l.request_id = b.limit_block;
    DELETE FROM limit_leases l USING inserted i
    WHERE l.request_id = i.limit_block AND l.tokens <= 0 AND NOT l.active;
    RETURN NULL;
END;
$$;

-- 007_limit_batches: admissions and releases of one key's requests in one
-- statement (issue 17). A frontend sends the admissions of a key's requests
-- that arrive together as one batch (and their releases likewise): one
-- transaction takes the key's, group's and account's rows once for all of
-- them, where each request used to queue for those row locks behind the
-- others in a transaction of its own. Each request of a batch is admitted
-- (or released) exactly as alone, in the batch's order, by the functions of
-- 003_limits.sql, so the bounds of docs/limits.md hold unchanged. A batch
-- holds the requests of one key only: every transaction then locks key,
-- group and account once and in that order, and two batches cannot
-- deadlock. Idempotent.

-- p: [{request_id, key_id, tokens, ttl_ms}, ...], all of one key. One row
-- per element, ord its 1-based position, with sb_limit_admit's answer.
CREATE OR REPLACE FUNCTION sb_limit_admit_batch(p jsonb)
RETURNS TABLE (ord integer, admitted boolean, kind text, scope text, what text, limit_value bigint,
               retry_after_ms bigint)
LANGUAGE plpgsql AS $$
DECLARE
    r jsonb;
    a record;
BEGIN
    ord := 0;
    FOR r IN SELECT e.value FROM jsonb_array_elements(p) WITH ORDINALITY AS e(value, n) ORDER BY e.n LOOP
        ord := ord + 1;
        SELECT * INTO a FROM sb_limit_admit(r->>'request_id', (r->>'key_id')::bigint, (r->>'tokens')::bigint,
                                            (r->>'ttl_ms')::integer);
        admitted := a.admitted;
        kind := a.kind;
        scope := a.scope;
        what := a.what;
        limit_value := a.limit_value;
        retry_after_ms := a.retry_after_ms;
        RETURN NEXT;
    END LOOP;
END;
$$;

-- p: [{request_id, tokens}, ...], leases of one key's requests. One row per
-- element (ord, as above) once all are released.
CREATE OR REPLACE FUNCTION sb_limit_release_batch(p jsonb)
RETURNS TABLE (ord integer)
LANGUAGE plpgsql AS $$
DECLARE
    r jsonb;
BEGIN
    ord := 0;
    FOR r IN SELECT e.value FROM jsonb_array_elements(p) WITH ORDINALITY AS e(value, n) ORDER BY e.n LOOP
        ord := ord + 1;
        PERFORM sb_limit_release(r->>'request_id', (r->>'tokens')::bigint);
        RETURN NEXT;
    END LOOP;
END;
$$;

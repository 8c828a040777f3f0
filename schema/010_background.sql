-- Background responses (issue 18; docs/background.md): a job that runs to
-- its end on a worker whatever happens to its client or to the frontend
-- that took it. The frontend writes the response (status queued) and this
-- row before it answers; the worker that runs the job appends the job's
-- canonical events as they are produced and sets the state; any frontend
-- renders them (poll, resumed streams) and, once the job is over, writes
-- the final response and its request_log row (finalized_at).
CREATE TABLE IF NOT EXISTS background_responses (
    response_id   text PRIMARY KEY REFERENCES responses(id) ON DELETE CASCADE,
    account_id    bigint NOT NULL,
    job_id        text NOT NULL UNIQUE,          -- the request id: the broker's job id, request_log's request_id
    state         text NOT NULL DEFAULT 'queued'
                  CHECK (state IN ('queued', 'in_progress', 'completed', 'incomplete', 'failed', 'cancelled')),
    snapshot      jsonb NOT NULL,                -- what rendering needs (docs/background.md)
    events        integer NOT NULL DEFAULT 0,    -- canonical events appended so far
    error         jsonb,                         -- a failed or cancelled job's final error event
    worker        text,                          -- the worker running it (worker_heartbeats.name)
    deadline      timestamptz NOT NULL,
    cancel_requested_at timestamptz,
    finished_at   timestamptz,                   -- the final event landed
    finalized_at  timestamptz,                   -- the final response and request_log row are written
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
-- The reaper's and finalizer's scans: jobs not yet finalized.
CREATE INDEX IF NOT EXISTS background_responses_open_idx ON background_responses (deadline)
    WHERE finalized_at IS NULL;

-- A background job's canonical events (common/sb_event.h), in order: seq is
-- the event's index from 0. Appended by one worker, one batch at a time.
CREATE TABLE IF NOT EXISTS background_events (
    response_id text NOT NULL REFERENCES background_responses(response_id) ON DELETE CASCADE,
    seq         integer NOT NULL CHECK (seq >= 0),
    event       jsonb NOT NULL,
    PRIMARY KEY (response_id, seq)
);

-- Liveness of the workers that run background jobs: a worker stamps its row
-- every few seconds; a job whose worker's stamp is stale is failed by the
-- reaper (its events say whether anything was produced).
CREATE TABLE IF NOT EXISTS worker_heartbeats (
    name     text PRIMARY KEY,
    seen_at  timestamptz NOT NULL DEFAULT now()
);

-- $1 response id, $2 worker name, $3 JSON array of events (the next ones, in
-- order, from index $4), $5 the final state or NULL, $6 the final error
-- event or NULL. Appends only while the job is open (queued or
-- in_progress): a cancelled job's late events are dropped under the row's
-- lock, so a cancel and an append never interleave. Returns the state after
-- it, and notifies sb_background with the response id.
CREATE OR REPLACE FUNCTION sb_background_append(p_id text, p_worker text, p_events jsonb, p_from integer,
                                                p_final text, p_error jsonb)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    st text;
    n integer;
BEGIN
    SELECT state, events INTO st, n FROM background_responses WHERE response_id = p_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF st NOT IN ('queued', 'in_progress') THEN
        RETURN st;
    END IF;
    -- A batch sent again (its first answer lost) is appended once.
    INSERT INTO background_events (response_id, seq, event)
    SELECT p_id, p_from + (e.ord - 1)::integer, e.ev
    FROM jsonb_array_elements(COALESCE(p_events, '[]'::jsonb)) WITH ORDINALITY AS e(ev, ord)
    WHERE p_from + (e.ord - 1)::integer >= n
    ON CONFLICT DO NOTHING;
    UPDATE background_responses
    SET state = COALESCE(p_final, 'in_progress'),
        events = greatest(n, p_from + jsonb_array_length(COALESCE(p_events, '[]'::jsonb))),
        error = CASE WHEN p_final IS NOT NULL THEN p_error ELSE error END,
        worker = COALESCE(p_worker, worker),
        finished_at = CASE WHEN p_final IS NOT NULL THEN now() ELSE finished_at END,
        updated_at = now()
    WHERE response_id = p_id
    RETURNING state INTO st;
    PERFORM pg_notify('sb_background', p_id);
    RETURN st;
END;
$$;

-- 016: the finalizer's worklist (issue 17). Every frontend's sweep asks, twice
-- a second, for the background responses that are over and not finalized,
-- oldest first (sb_background_sweep, 011). The only index it had was 010's
-- open_idx on deadline, so the order needed a sort of every unfinalized row,
-- and whenever the statistics had been taken during a backlog the planner
-- read the whole table instead: 75-100 ms per sweep at 29,000 rows on the
-- benchmark's database, twice a second per frontend, growing with the table.
-- This index holds exactly the worklist, in its order, so the sweep reads
-- its first rows whatever the table's size or the statistics say.
CREATE INDEX IF NOT EXISTS background_responses_worklist_idx ON background_responses (finished_at)
    WHERE finalized_at IS NULL AND state NOT IN ('queued', 'in_progress');

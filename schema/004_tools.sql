-- 004_tools: built-in tools run by the gateway (docs/tools.md): the search
-- backends web search uses, and one row per tool call the workers made, for
-- ops. Idempotent: safe to apply twice.

-- Search backends (sbctl search-backend). Gateway-run web search uses the
-- default one, when it is enabled; with none, web search is unavailable on
-- the deployment. credential_ref names the workers' environment variable
-- holding the backend's API key (as models.credential_ref); the secret is
-- never stored here. base_url is the operator's: the SSRF guard does not
-- apply to it.
CREATE TABLE IF NOT EXISTS search_backends (
    id              bigserial PRIMARY KEY,
    name            text NOT NULL UNIQUE,
    kind            text NOT NULL CHECK (kind IN ('searxng', 'brave', 'tavily')),
    base_url        text NOT NULL,
    credential_ref  text,
    is_default      boolean NOT NULL DEFAULT false,
    enabled         boolean NOT NULL DEFAULT true,
    created_at      timestamptz NOT NULL DEFAULT now()
);
-- At most one default.
CREATE UNIQUE INDEX IF NOT EXISTS search_backends_one_default ON search_backends (is_default) WHERE is_default;

-- The frontends cache the default backend with each model record: a change
-- is announced on 'sb_config' like every other cached table (001_init.sql).
DROP TRIGGER IF EXISTS search_backends_notify ON search_backends;
CREATE TRIGGER search_backends_notify AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON search_backends
    FOR EACH STATEMENT EXECUTE FUNCTION sb_notify_config();

-- One row per built-in tool call a worker executed (MCP listing and calls,
-- searches, page opens and finds), written by the frontend in the same
-- batch (and statement) as its request's request_log row. Never any
-- argument or result content: names, sizes, timings and outcomes only.
--   kind     mcp_list_tools | mcp_call | web_search | open_page | find_in_page |
--            code_interpreter | file_search | image_generation (schema 005, 006)
--   server   the MCP server_label, or the search backend's kind
--   name     the MCP tool's name (NULL when the call has none, e.g. a listing)
--   item_id  the output item the call was shown as (mcp_..., ws_...)
--   outcome  ok | error | timeout | denied | blocked (the SSRF guard)
--   error    a short reason (at most 300 characters), NULL when ok
-- kind and outcome have no CHECK on purpose: a value a newer worker sends
-- must not make the request log's batch fail (the frontend checks them).
CREATE TABLE IF NOT EXISTS tool_calls (
    id           bigserial PRIMARY KEY,
    created_at   timestamptz NOT NULL DEFAULT now(),
    request_id   text NOT NULL,
    response_id  text,
    account_id   bigint,
    key_id       bigint,
    model        text,
    kind         text NOT NULL,
    server       text,
    name         text,
    item_id      text,
    duration_ms  integer,
    outcome      text NOT NULL,
    bytes_in     bigint,
    bytes_out    bigint,
    error        text
);
CREATE INDEX IF NOT EXISTS tool_calls_request_idx ON tool_calls (request_id);
CREATE INDEX IF NOT EXISTS tool_calls_created_idx ON tool_calls (created_at);
CREATE INDEX IF NOT EXISTS tool_calls_account_idx ON tool_calls (account_id, created_at);

-- Tool use per account per day (UTC), per tool kind and server.
CREATE OR REPLACE VIEW tool_use_daily AS
SELECT date_trunc('day', t.created_at AT TIME ZONE 'UTC')::date AS day,
       t.account_id, a.name AS account, t.kind, t.server,
       count(*) AS calls,
       count(*) FILTER (WHERE t.outcome <> 'ok') AS errors,
       round(avg(t.duration_ms))::integer AS avg_duration_ms
FROM tool_calls t
LEFT JOIN accounts a ON a.id = t.account_id
GROUP BY 1, t.account_id, a.name, t.kind, t.server;

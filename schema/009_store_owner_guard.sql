-- Stored chat completions and responses: the owner checked when an owner
-- row goes, not at every insert.
--
-- Their foreign keys to accounts and api_keys made every stored answer run
-- two referential-integrity checks, each a SELECT ... FOR KEY SHARE on the
-- owner's row: about 13 µs per row, a WAL record for the row lock, and,
-- as the frontend's group-commit writer keeps two batches in flight for
-- the same account, a MultiXact on that hot account row per batch. The
-- rows are inserted only by frontends, for the account and key that were
-- just authenticated (sb_key_lookup), and neither accounts nor keys are
-- deleted in operation (they are disabled: sbctl account disable, key
-- disable). What the keys protected is kept where it costs nothing per
-- request: deleting an account or key that still owns stored chat
-- completions or responses is refused, exactly as the foreign keys'
-- NO ACTION refused it (same SQLSTATE 23503).
ALTER TABLE chat_completions DROP CONSTRAINT IF EXISTS chat_completions_account_id_fkey;
ALTER TABLE chat_completions DROP CONSTRAINT IF EXISTS chat_completions_key_id_fkey;
ALTER TABLE responses DROP CONSTRAINT IF EXISTS responses_account_id_fkey;
ALTER TABLE responses DROP CONSTRAINT IF EXISTS responses_key_id_fkey;

CREATE OR REPLACE FUNCTION sb_store_owner_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'accounts' THEN
        IF EXISTS (SELECT 1 FROM chat_completions WHERE account_id = OLD.id)
           OR EXISTS (SELECT 1 FROM responses WHERE account_id = OLD.id) THEN
            RAISE EXCEPTION 'account % still owns stored chat completions or responses', OLD.id
                USING ERRCODE = 'foreign_key_violation';
        END IF;
    ELSIF EXISTS (SELECT 1 FROM chat_completions WHERE key_id = OLD.id)
          OR EXISTS (SELECT 1 FROM responses WHERE key_id = OLD.id) THEN
        RAISE EXCEPTION 'key % still owns stored chat completions or responses', OLD.id
            USING ERRCODE = 'foreign_key_violation';
    END IF;
    RETURN OLD;
END;
$$;

DROP TRIGGER IF EXISTS accounts_store_owner_guard ON accounts;
CREATE TRIGGER accounts_store_owner_guard BEFORE DELETE ON accounts
    FOR EACH ROW EXECUTE FUNCTION sb_store_owner_guard();
DROP TRIGGER IF EXISTS api_keys_store_owner_guard ON api_keys;
CREATE TRIGGER api_keys_store_owner_guard BEFORE DELETE ON api_keys
    FOR EACH ROW EXECUTE FUNCTION sb_store_owner_guard();

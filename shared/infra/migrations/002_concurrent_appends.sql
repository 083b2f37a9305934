-- Appends to different streams no longer wait for each other: the global advisory lock of 001
-- is gone, and readers of the whole log use transaction ids instead of commit order to never
-- skip an event (see EventStore.read_all).
--
-- Each event records the id of the transaction that wrote it. Rows written before this
-- migration committed one at a time in global_position order under the old lock, so they keep
-- that order as transaction 0, ahead of every later transaction; a constant default also spares
-- rewriting the table. New rows get the writer's id from the default set afterwards.
ALTER TABLE events ADD COLUMN transaction_id xid8 NOT NULL DEFAULT '0';
ALTER TABLE events ALTER COLUMN transaction_id SET DEFAULT pg_current_xact_id();

-- read_all scans the log in (transaction_id, global_position) order.
CREATE INDEX events_transaction_order ON events (transaction_id, global_position);

-- A consumer's read position in the whole log is that same pair; a position recorded before
-- this migration meant "every event up to this global_position", i.e. transaction 0's.
ALTER TABLE tracking ADD COLUMN transaction_id xid8 NOT NULL DEFAULT '0';

-- Appends one batch to a stream unless the stream has moved past p_expected; returns the
-- stream's version before the append (the batch was written only if that equals p_expected).
-- Each statement of a plpgsql function takes a fresh snapshot, so the version check sees every
-- append committed before it. Two appenders that both see the same version both insert the
-- same (stream_id, version) keys: the second waits on the unique index for the first to end
-- and fails with unique_violation if it committed (the client reports a ConcurrencyError).
-- read_all orders events by transaction id, so a stream's versions must rise with their
-- writers' ids: a transaction that got its id before the stream's last writer (it began
-- writing elsewhere, then appended after that writer committed) must retry in a new one.
CREATE OR REPLACE FUNCTION append_events(
    p_stream_id text, p_expected int, p_types text[], p_data bytea[], p_metadata bytea[]
) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    current_version int;
    last_writer xid8;
BEGIN
    SELECT version, transaction_id INTO current_version, last_writer
    FROM events WHERE stream_id = p_stream_id
    ORDER BY version DESC LIMIT 1;
    current_version := coalesce(current_version, 0);
    IF current_version <> p_expected THEN
        RETURN current_version;
    END IF;
    IF last_writer > pg_current_xact_id() THEN
        RAISE EXCEPTION 'stream % was last appended to by a newer transaction', p_stream_id
            USING ERRCODE = 'serialization_failure', HINT = 'Retry in a new transaction.';
    END IF;
    INSERT INTO events (stream_id, version, type, data, metadata)
    SELECT p_stream_id, p_expected + e.n, e.type, e.data, e.metadata
    FROM unnest(p_types, p_data, p_metadata) WITH ORDINALITY AS e(type, data, metadata, n)
    ORDER BY e.n;
    RETURN current_version;
END
$$;

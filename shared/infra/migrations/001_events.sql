-- The event log, the outbox of messages to publish, and consumers' read positions.

CREATE TABLE events (
    global_position bigserial PRIMARY KEY,
    stream_id text NOT NULL,
    version int NOT NULL,
    type text NOT NULL,
    data bytea NOT NULL,
    metadata bytea NOT NULL,
    recorded_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (stream_id, version)
);

CREATE TABLE outbox (
    id bigserial PRIMARY KEY,
    topic text NOT NULL,
    payload bytea NOT NULL,
    created_at timestamptz DEFAULT now()
);

CREATE TABLE tracking (
    consumer text PRIMARY KEY,
    position bigint NOT NULL
);

-- Appends one batch to a stream unless the stream has moved past p_expected; returns the
-- stream's version before the append (the batch was written only if that equals p_expected).
-- The advisory lock serialises appends until commit, so events commit in global_position order
-- and a reader of the whole log by position never skips one. Each statement of a plpgsql
-- function takes a fresh snapshot, so the version check sees every append committed before
-- the lock was granted.
CREATE FUNCTION append_events(
    p_stream_id text, p_expected int, p_types text[], p_data bytea[], p_metadata bytea[]
) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
    current_version int;
BEGIN
    PERFORM pg_advisory_xact_lock(111559182283891);  -- 0x6576656E7473, "events"
    SELECT coalesce(max(version), 0) INTO current_version
    FROM events WHERE stream_id = p_stream_id;
    IF current_version = p_expected THEN
        INSERT INTO events (stream_id, version, type, data, metadata)
        SELECT p_stream_id, p_expected + e.n, e.type, e.data, e.metadata
        FROM unnest(p_types, p_data, p_metadata) WITH ORDINALITY AS e(type, data, metadata, n)
        ORDER BY e.n;
    END IF;
    RETURN current_version;
END
$$;

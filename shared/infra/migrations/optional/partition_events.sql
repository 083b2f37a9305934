-- Partitions the event log by stream: `events` becomes a table partitioned by hash of
-- stream_id into `playtable.event_partitions` partitions (16 unless the session sets it), so
-- each partition's indexes, vacuum and checkpoints stay small as the log grows, and a stream
-- (one match or table) always lives in one partition. Not applied automatically: run it with
-- `playtable partition-events` when the log nears the size docs/performance.md ("Capacity") gives.
--
-- It rewrites the table under an ACCESS EXCLUSIVE lock (appends wait, nothing is lost): about
-- a minute per ten million events on the machine measured there, so in a quiet hour.
-- A partitioned table's unique keys must include the partition key: the primary key becomes
-- (stream_id, version), the old unique key; global_position keeps its sequence and gets a
-- plain index (it was the primary key, no other table refers to it). Everything that reads or
-- writes the log (append_events, read_all's (transaction_id, global_position) order) works
-- unchanged on the partitioned table.

DO $$
DECLARE
    partitions int := coalesce(nullif(current_setting('playtable.event_partitions', true), ''), '16')::int;
    remainder int;
BEGIN
    IF EXISTS (SELECT FROM pg_partitioned_table WHERE partrelid = 'events'::regclass) THEN
        RAISE NOTICE 'events is partitioned already';
        RETURN;
    END IF;
    LOCK TABLE events IN ACCESS EXCLUSIVE MODE;
    ALTER TABLE events RENAME TO events_unpartitioned;
    CREATE TABLE events (LIKE events_unpartitioned INCLUDING DEFAULTS INCLUDING STORAGE)
        PARTITION BY HASH (stream_id);
    FOR remainder IN 0 .. partitions - 1 LOOP
        EXECUTE format(
            'CREATE TABLE events_%s PARTITION OF events FOR VALUES WITH (MODULUS %s, REMAINDER %s)',
            remainder, partitions, remainder);
    END LOOP;
    INSERT INTO events SELECT * FROM events_unpartitioned;
    ALTER SEQUENCE events_global_position_seq OWNED BY events.global_position;
    DROP TABLE events_unpartitioned;
    ALTER TABLE events ADD PRIMARY KEY (stream_id, version);
    CREATE INDEX events_global_position ON events (global_position);
    CREATE INDEX events_transaction_order ON events (transaction_id, global_position);
END
$$;

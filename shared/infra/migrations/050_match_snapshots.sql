-- Folded states of each match at some versions (at creation, then whenever a move crosses a
-- multiple of the snapshot interval), so a replay to any version folds only a few events.
create table if not exists match_snapshots (
    match_id text not null references matches (match_id),
    version int not null,
    state bytea not null,
    primary key (match_id, version)
);

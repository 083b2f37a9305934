-- Which process publishes a match's events straight after committing them (its relay's token)
-- and up to which version (services/match/commit.py): the next move publishes its own events
-- directly only if that same process committed every event before them; otherwise it leaves
-- them to the relay, which publishes the whole outbox in id order (shared/outbox.py).
alter table matches add column if not exists publisher text;
alter table matches add column if not exists published_version int;

-- Commands one service sends another, kept until they have taken effect. Redis only carries
-- them: the sender re-drives every command still pending, so losing Redis (or a consumer that
-- could not act yet) only delays a command. The receiver marks it done in the same transaction
-- as its effect. ``subject`` names what the command creates (``match-<id>``), so the receiver
-- can tell "being created" from "unknown".
create table if not exists commands (
    command_id text primary key,
    topic text not null,
    subject text not null,
    payload bytea not null,
    attempts int not null default 0,
    next_attempt_at timestamptz not null default now(),
    created_at timestamptz not null default now(),
    done_at timestamptz,
    outcome text
);
create index if not exists commands_due on commands (next_attempt_at) where done_at is null;
create index if not exists commands_subject on commands (subject);

-- Webhook subscriptions, one delivery per (subscription, event) with its attempts, and the
-- events the dispatcher has handled.

CREATE TABLE webhook_subscriptions (
    id text PRIMARY KEY,
    url text NOT NULL,
    event_types text[] NOT NULL,              -- empty: every type
    table_id text,                            -- only this table's events and its match's
    match_id text,                            -- only this match's events
    enabled boolean NOT NULL DEFAULT true,
    disabled_reason text,
    secret text NOT NULL,
    previous_secret text,                     -- still signs until previous_secret_until
    previous_secret_until timestamptz,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE webhook_deliveries (
    id bigserial PRIMARY KEY,
    subscription_id text NOT NULL REFERENCES webhook_subscriptions ON DELETE CASCADE,
    event_key text NOT NULL,                  -- the webhook-id: stream_id:version:type
    stream_id text NOT NULL,
    event_type text NOT NULL,
    body bytea NOT NULL,
    occurred_at_ms bigint NOT NULL,
    status text NOT NULL DEFAULT 'pending',   -- pending | delivered | failed
    attempts int NOT NULL DEFAULT 0,          -- since it was last (re)activated
    due_at timestamptz NOT NULL DEFAULT now(),
    created_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (subscription_id, event_key)
);

CREATE INDEX webhook_deliveries_order ON webhook_deliveries (subscription_id, stream_id, id)
    WHERE status = 'pending';
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (due_at) WHERE status = 'pending';

CREATE TABLE webhook_attempts (
    id bigserial PRIMARY KEY,
    delivery_id bigint NOT NULL REFERENCES webhook_deliveries ON DELETE CASCADE,
    attempted_at timestamptz NOT NULL DEFAULT now(),
    status_code int,
    duration_ms double precision NOT NULL,
    error text
);

CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id, id);

CREATE TABLE webhook_handled (
    event_key text PRIMARY KEY
);

CREATE TABLE webhook_match_tables (
    match_id text PRIMARY KEY,
    table_id text NOT NULL
);

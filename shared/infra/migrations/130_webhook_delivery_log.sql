-- A subscription's delivery log is read in id order (the `after` cursor); its filters (status,
-- event type, `since`/`until` on created_at, which follows id order) are applied as it goes,
-- rather than indexed: every index is written again by each delivery's insert.
CREATE INDEX IF NOT EXISTS webhook_deliveries_log
    ON webhook_deliveries (subscription_id, id);

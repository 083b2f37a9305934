-- A failed attempt records no duration: timings of failures would measure the network for
-- whoever reads the delivery log (a port-scanning oracle).
ALTER TABLE webhook_attempts ALTER COLUMN duration_ms DROP NOT NULL;

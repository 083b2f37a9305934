-- A subscription's failure streak: attempts failed in a row since the first of them, which
-- disables it once long enough. A disabled subscription's deliveries are 'missed' (not sent)
-- until it is enabled again.
ALTER TABLE webhook_subscriptions ADD COLUMN IF NOT EXISTS failure_streak int NOT NULL DEFAULT 0;
ALTER TABLE webhook_subscriptions ADD COLUMN IF NOT EXISTS failing_since timestamptz;

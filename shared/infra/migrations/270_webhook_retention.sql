-- Deliveries that ended (delivered, failed) or were missed are deleted once older than their
-- retention (PLAYTABLE_WEBHOOK_KEEP_DELIVERED_S, _KEEP_MISSED_S), a batch at a time by the
-- webhook dispatchers: this index finds a status's oldest. Pending deliveries stay out of it.
CREATE INDEX IF NOT EXISTS webhook_deliveries_ended
    ON webhook_deliveries (status, created_at) WHERE status <> 'pending';

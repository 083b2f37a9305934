-- The W3C trace context of the event a delivery carries (its metadata's `traceparent`): each
-- attempt's span continues the trace of the move that recorded the event. NULL: not traced.
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS traceparent text;

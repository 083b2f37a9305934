-- Each pending command's last entry on its Redis stream: the re-driver publishes a command again
-- only once that entry can no longer take effect (lost, acknowledged without effect, or held by
-- a consumer that went silent), never while a live consumer still holds it or has yet to read it.
alter table commands add column if not exists entry_id text;

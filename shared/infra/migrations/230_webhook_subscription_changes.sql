-- Counts the subscriptions created (by the webhooks API, `playtable bench`, plain SQL): the
-- webhook dispatcher keeps the apps that have a subscription and skips, without writing, the
-- events of the others; it reads this count after each read of the streams and reloads the
-- apps when it moved, so an event committed after a subscription is never skipped. Deleting a
-- subscription leaves it: an app kept too long only costs a statement.
create table if not exists webhook_subscription_changes (
    only_row boolean primary key default true check (only_row),
    version bigint not null default 0
);
insert into webhook_subscription_changes (only_row) values (true) on conflict do nothing;

create or replace function webhook_subscriptions_created() returns trigger language plpgsql as $$
begin
    update webhook_subscription_changes set version = version + 1;
    return null;
end
$$;

drop trigger if exists webhook_subscriptions_created on webhook_subscriptions;
create trigger webhook_subscriptions_created after insert or update of app_id
    on webhook_subscriptions for each statement execute function webhook_subscriptions_created();

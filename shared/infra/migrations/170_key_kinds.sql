-- Keys have kinds, as payment APIs' publishable and secret keys: a publishable key is meant to
-- be shipped to browsers (it creates and joins tables and plays), a secret key stays on the
-- app's server (bots, re-seating, invitations, webhooks). Every key made before is secret.
alter table api_keys add column if not exists kind text not null default 'secret';

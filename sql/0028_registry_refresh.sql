-- Registries: when a fetch was last tried (the periodic refresh picks the stale ones), and the
-- public agent card's lookup by address (an unauthenticated read).
alter table registries add column attempted_at timestamptz;
create index registries_attempted_idx on registries ((coalesce(attempted_at, created_at)));
create index published_agents_public_address_idx on published_agents (address) where visibility = 'public';

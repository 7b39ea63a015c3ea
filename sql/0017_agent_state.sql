-- Agent state: the changes feed and memories (docs/agent-state.md).

-- The feed's order. Each organization's changes are numbered by one counter row, updated in
-- the transaction that writes them: the row lock serializes an organization's change-writing
-- transactions from the update to the commit, so a change becomes visible only after every
-- change with a lower seq has, and a reader that resumes after seq N can never miss a later
-- commit of a lower number. `pruned_through` is the highest seq the retention job deleted.
create table change_counters (
  org_id uuid primary key references orgs (id) on delete cascade,
  last_seq bigint not null default 0,
  pruned_through bigint not null default 0
);

create table changes (
  org_id uuid not null references orgs (id) on delete cascade,
  seq bigint not null,
  -- evt_<32 hex>; a mail event's id equals the id of its webhook event
  id text not null,
  type text not null,
  resource_type text not null,
  resource_id text not null,
  -- the mailbox addresses the change concerns (connection keys and the address filter)
  addresses text[] not null default '{}',
  data jsonb not null default '{}',
  occurred_at timestamptz not null default now(),
  primary key (org_id, seq)
);
create index changes_occurred_idx on changes (occurred_at);

-- The event id of an email is shared by its deliveries to several endpoints (and by its
-- change), so it is unique per endpoint, not globally.
alter table webhook_deliveries drop constraint webhook_deliveries_event_id_key;
create unique index webhook_deliveries_event_endpoint_key on webhook_deliveries (event_id, endpoint_id);

-- Durable JSON key-value data. function_id null = organization scope. Keys sort bytewise.
create table memories (
  org_id uuid not null references orgs (id) on delete cascade,
  function_id uuid,
  key text collate "C" not null,
  value jsonb not null,
  metadata jsonb not null default '{}',
  -- the seq of the change that wrote this version: increasing, never reused after a delete
  version bigint not null,
  size_bytes integer not null,
  expires_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint memories_key unique nulls not distinct (org_id, function_id, key)
);
create index memories_expiry_idx on memories (expires_at) where expires_at is not null;

-- Quota accounting, one row per organization, moved in the writing transaction.
create table memory_usage (
  org_id uuid primary key references orgs (id) on delete cascade,
  keys bigint not null default 0,
  bytes bigint not null default 0
);

-- Delivering inbound mail: endpoints, sender filters, recipient routes and the delivery history.

create table endpoints (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  kind text not null check (kind in ('http', 'function')),
  url text,
  function_id uuid,
  enabled boolean not null default true,
  -- null: the org-wide fallback slot
  domain_id uuid references domains (id) on delete cascade,
  is_route_target boolean not null default false,
  rules jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- DELETE deactivates: the row stays for the delivery history, the slot is freed
  deactivated_at timestamptz,
  check ((kind = 'http') = (url is not null) and (kind = 'function') = (function_id is not null))
);
create index endpoints_org_idx on endpoints (org_id, id desc) where deactivated_at is null;
-- The active-endpoint rule: one enabled default endpoint per domain slot and one fallback slot.
create unique index endpoints_slot_key on endpoints (org_id, coalesce(domain_id, '00000000-0000-0000-0000-000000000000'::uuid))
  where enabled and deactivated_at is null and not is_route_target;
-- A function has at most one endpoint.
create unique index endpoints_function_key on endpoints (org_id, function_id) where function_id is not null and deactivated_at is null;

create table filters (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  type text not null check (type in ('whitelist', 'blocklist')),
  pattern text not null check (pattern = lower(btrim(pattern)) and length(pattern) between 1 and 500),
  domain_id uuid references domains (id) on delete cascade,
  enabled boolean not null default true,
  created_at timestamptz not null default now()
);
create index filters_org_idx on filters (org_id, id desc);

-- Recipient routes: mail for a recipient address or pattern goes to one route-target endpoint.
create table recipient_routes (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  pattern text not null check (pattern = lower(btrim(pattern)) and length(pattern) between 1 and 500),
  endpoint_id uuid not null references endpoints (id) on delete cascade,
  created_at timestamptz not null default now()
);
create index recipient_routes_org_idx on recipient_routes (org_id, id desc);
create unique index recipient_routes_pattern_key on recipient_routes (org_id, pattern);

create table webhook_deliveries (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  email_id uuid references emails (id) on delete cascade,
  endpoint_id uuid not null references endpoints (id) on delete cascade,
  endpoint_url text not null,
  -- stable across retries and replays; receivers dedupe on it
  event_id text not null unique,
  event_type text not null,
  status text not null check (status in ('pending', 'delivered', 'header_confirmed', 'failed', 'skipped_by_rules')),
  attempt_count integer not null default 0,
  duration_ms integer,
  response_status integer,
  last_error text,
  last_error_code text,
  -- the event as first built; replays and retries send it again with the same id
  payload jsonb not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index webhook_deliveries_org_idx on webhook_deliveries (org_id, id desc);
create index webhook_deliveries_email_idx on webhook_deliveries (email_id, endpoint_id);

-- Endpoint test sends, for their per-minute and per-hour limits.
create table endpoint_tests (
  org_id uuid not null references orgs (id) on delete cascade,
  at timestamptz not null default now(),
  -- successful tests and tests to a verified-domain URL do not count against the per-minute limit
  counts_per_minute boolean not null
);
create index endpoint_tests_org_idx on endpoint_tests (org_id, at desc);

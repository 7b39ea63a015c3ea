-- Hosted functions: deployments, secrets, invocations with their logs, outbound activity and
-- test runs. A function's endpoint is an ordinary `kind: function` endpoint (0004).

create table functions (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null check (length(name) between 1 and 64),
  tags text[] not null default '{}',
  current_deployment_id uuid,
  -- the function's runtime key (SERVICE_API_KEY): an API key with no creator, revoked on delete
  runtime_key_id uuid not null references api_keys (id),
  runtime_key_sealed bytea not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  -- DELETE: reads are 404 from then on; the row stays for the deliveries that name it
  deleted_at timestamptz
);
create unique index functions_name_key on functions (org_id, name) where deleted_at is null;
create index functions_org_idx on functions (org_id, id desc) where deleted_at is null;

create table function_deployments (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  function_id uuid not null references functions (id) on delete cascade,
  status text not null check (status in ('deployed', 'failed')),
  -- {name, message, line, column} of a failed deploy
  deploy_error jsonb,
  code text not null,
  source_map text,
  bundle_bytes integer not null,
  gzip_bytes integer not null,
  -- time to check the module in a sandbox (and to bundle it, for a managed build)
  build_ms real not null,
  created_at timestamptz not null default now()
);
create index function_deployments_fn_idx on function_deployments (function_id, id desc);

-- Function secrets (function_id set) and organization secrets (function_id null), AES-GCM sealed.
create table function_secrets (
  org_id uuid not null references orgs (id) on delete cascade,
  function_id uuid references functions (id) on delete cascade,
  key text not null check (key ~ '^[A-Z_][A-Z0-9_]*$'),
  value_sealed bytea not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index function_secrets_key on function_secrets (org_id, coalesce(function_id, '00000000-0000-0000-0000-000000000000'::uuid), key);

create table function_invocations (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  function_id uuid not null references functions (id) on delete cascade,
  deployment_id uuid not null references function_deployments (id) on delete cascade,
  delivery_id uuid references webhook_deliveries (id) on delete set null,
  email_id uuid references emails (id) on delete set null,
  outcome text not null check (outcome in ('ok', 'exception', 'exceeded_cpu', 'exceeded_memory', 'exceeded_wall_clock', 'exceeded_limit', 'crashed')),
  cpu_ms real not null,
  wall_ms real not null,
  request_method text not null,
  request_url text not null,
  response_status integer,
  exception_name text,
  exception_message text,
  exception_stack text,
  logs_truncated boolean not null default false,
  subrequests integer not null default 0,
  created_at timestamptz not null default now()
);
create index function_invocations_fn_idx on function_invocations (function_id, id desc);
create index function_invocations_org_idx on function_invocations (org_id, created_at);

create table function_logs (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  function_id uuid not null references functions (id) on delete cascade,
  invocation_id uuid not null references function_invocations (id) on delete cascade,
  level text not null,
  message text not null,
  logged_at timestamptz not null
);
create index function_logs_fn_idx on function_logs (function_id, id desc);
create index function_logs_invocation_idx on function_logs (invocation_id, id);

-- Outbound effects of a function's calls to the API (email.sent, email.replied).
create table function_activity (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  function_id uuid not null references functions (id) on delete cascade,
  invocation_id uuid references function_invocations (id) on delete set null,
  delivery_id uuid,
  type text not null check (type in ('email.sent', 'email.replied')),
  email_id uuid not null,
  created_at timestamptz not null default now()
);
create index function_activity_fn_idx on function_activity (function_id, id desc);

-- POST /functions/{id}/test: the test email sent through the inbound path, for its trace.
create table function_test_runs (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  function_id uuid not null references functions (id) on delete cascade,
  email_id uuid,
  recipient text not null,
  created_at timestamptz not null default now()
);

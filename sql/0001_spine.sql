-- The spine: organizations, people, credentials, and the shared machinery of the HTTP layer
-- (idempotency records, rate-limit counters) and of the worker (jobs).

create table orgs (
  id uuid primary key,
  name text not null,
  plan text not null check (plan in ('free', 'agent', 'developer', 'power', 'platinum')),
  -- entitlements granted on top of the plan's own (operator command `admin org entitle`)
  extra_entitlements text[] not null default '{}',
  credit_balance_cents bigint not null default 0 check (credit_balance_cents >= 0),
  -- operator override of the plan's API requests per minute (null = the plan's)
  api_per_minute_override integer check (api_per_minute_override > 0),
  storage_used_bytes bigint not null default 0,
  emails_count integer not null default 0,
  created_at timestamptz not null default now()
);

create table users (
  id uuid primary key,
  email text not null,
  password_hash text,
  created_at timestamptz not null default now()
);
create unique index users_email_key on users (lower(email));

create table memberships (
  org_id uuid not null references orgs (id) on delete cascade,
  user_id uuid not null references users (id) on delete cascade,
  role text not null check (role in ('owner', 'admin', 'member')),
  created_at timestamptz not null default now(),
  primary key (org_id, user_id)
);
create index memberships_user_idx on memberships (user_id);

create table api_keys (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  -- the user whose current role the key borrows for owner/admin-only operations; null for
  -- keys minted without a person (zero-touch agent accounts, function runtimes)
  created_by uuid references users (id) on delete set null,
  name text not null,
  -- first characters of the key, shown in listings so people can tell keys apart
  hint text not null,
  -- sha256 of the whole key; the key itself is never stored
  hash bytea not null unique,
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);
create index api_keys_org_idx on api_keys (org_id, id desc);

create table managed_inboxes (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  address text not null unique check (address = lower(address)),
  created_at timestamptz not null default now()
);
create index managed_inboxes_org_idx on managed_inboxes (org_id, id desc);

create table webhook_secrets (
  org_id uuid primary key references orgs (id) on delete cascade,
  secret_sealed bytea not null,
  -- during a rotation deliveries are signed with both secrets until previous_expires_at
  previous_sealed bytea,
  previous_expires_at timestamptz,
  rotated_at timestamptz,
  created_at timestamptz not null default now()
);

create table credit_codes (
  id uuid primary key,
  code_hash bytea not null unique,
  amount_cents bigint not null check (amount_cents > 0),
  created_at timestamptz not null default now(),
  redeemed_by_org uuid references orgs (id) on delete set null,
  redeemed_at timestamptz
);

-- Stored outcomes of requests made with an Idempotency-Key. `scope` is the organization (or
-- the client address for public operations) plus the operation.
create table idempotency_keys (
  scope text not null,
  key text not null,
  request_hash text not null,
  response_status integer not null,
  -- sealed (AES-GCM) because a replayed response may carry a credential
  response_sealed bytea not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (scope, key)
);
create index idempotency_keys_expiry_idx on idempotency_keys (expires_at);

-- Fixed-window counters shared by every process. Each process leases a few requests at a time
-- (rate_limit_take) so the hot path rarely touches the database.
create table rate_limit_windows (
  bucket text not null,
  window_start bigint not null,
  used integer not null,
  primary key (bucket, window_start)
);

create function rate_limit_take(p_bucket text, p_width integer, p_want integer, p_limit integer)
returns table (granted integer, used integer, reset_ms integer)
language plpgsql as $$
declare
  v_now double precision := extract(epoch from clock_timestamp());
  v_window bigint := floor(v_now / p_width)::bigint * p_width;
  v_used integer;
begin
  insert into rate_limit_windows as w (bucket, window_start, used) values (p_bucket, v_window, 0)
  on conflict (bucket, window_start) do nothing;
  select w.used into v_used from rate_limit_windows w
   where w.bucket = p_bucket and w.window_start = v_window for update;
  granted := greatest(0, least(p_want, p_limit - v_used));
  used := v_used + granted;
  if granted > 0 then
    update rate_limit_windows w set used = rate_limit_take.used
     where w.bucket = p_bucket and w.window_start = v_window;
  end if;
  reset_ms := ceil(((v_window + p_width) - v_now) * 1000)::integer;
  return next;
end
$$;

-- The transactional outbox: every side effect is a job inserted with the write that causes it.
create table jobs (
  id uuid primary key,
  kind text not null,
  payload jsonb not null,
  -- jobs with the same key are not queued twice while one is pending (periodic tasks)
  dedupe_key text unique,
  status text not null default 'pending' check (status in ('pending', 'dead')),
  run_at timestamptz not null default now(),
  attempts integer not null default 0,
  max_attempts integer not null default 10,
  locked_by text,
  locked_at timestamptz,
  last_error text,
  created_at timestamptz not null default now()
);
create index jobs_due_idx on jobs (run_at) where status = 'pending' and locked_by is null;

-- Sending: one row per send request (immediate, scheduled or repeating). Each execution builds
-- a message, stores it as an outbound email, and hands it to the relay.

create table sends (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  -- scheduled → executing → executed | failed | canceled (scheduled sends);
  -- sending → queued | failed (immediate sends); a repeat keeps its last state between ticks
  status text not null check (status in ('sending', 'queued', 'scheduled', 'executing', 'executed', 'failed', 'canceled')),
  -- the validated request, replayed by every execution
  request jsonb not null,
  from_address text not null,
  scheduled_at timestamptz,
  repeat_every_minutes integer check (repeat_every_minutes > 0),
  repeat_next_at timestamptz,
  repeat_stopped_at timestamptz,
  repeat_stopped_by text,
  ticks integer not null default 0,
  thread_id uuid references threads (id) on delete set null,
  last_email_id uuid references emails (id) on delete set null,
  last_message_id text,
  accepted text[] not null default '{}',
  rejected text[] not null default '{}',
  relay_response text,
  error_code text,
  error_message text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index sends_org_idx on sends (org_id, id desc);
create index sends_org_created_idx on sends (org_id, created_at);

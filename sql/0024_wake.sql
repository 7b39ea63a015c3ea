-- Wake schedules and their runs (docs/agent-state.md).
create table wakes (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  target_type text not null check (target_type in ('function', 'endpoint', 'agent_connection')),
  target_id uuid not null,
  schedule_type text not null check (schedule_type in ('at', 'cron', 'every')),
  run_at timestamptz,
  cron text,
  time_zone text,
  every_minutes integer check (every_minutes > 0),
  command jsonb not null,
  dedupe_key text,
  enabled boolean not null default true,
  -- the slot the scheduler fires next (null: nothing more to fire)
  next_run_at timestamptz,
  last_run_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index wakes_org_idx on wakes (org_id, id desc);
create index wakes_due_idx on wakes (next_run_at) where enabled and next_run_at is not null;
create unique index wakes_dedupe_key on wakes (org_id, dedupe_key) where dedupe_key is not null;

create table wake_runs (
  -- the run_id: the same for every attempt of the run
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  wake_id uuid not null references wakes (id) on delete cascade,
  scheduled_for timestamptz not null,
  late boolean not null default false,
  manual boolean not null default false,
  status text not null default 'pending' check (status in ('pending', 'delivered', 'failed')),
  attempts integer not null default 0,
  response_status integer,
  last_error text,
  created_at timestamptz not null default now(),
  finished_at timestamptz
);
create index wake_runs_wake_idx on wake_runs (wake_id, id desc);
-- a scheduled slot fires once, however many schedulers race for it
create unique index wake_runs_slot_key on wake_runs (wake_id, scheduled_for) where not manual;

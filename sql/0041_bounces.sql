-- Bounces and complaints (docs/bounces.md). What became of each recipient of a send after the
-- relay took it: a bounce (hard or soft) or a complaint, keyed by the lowercased address:
-- {"x@example.com": {"status": "bounced", "bounce_type": "hard", "status_code": "5.1.1", ...}}.
alter table sends add column recipient_reports jsonb not null default '{}';

-- The addresses an organization no longer sends to: added by a hard bounce or a complaint, or
-- by hand; a send to one is refused by the suppression_list gate until it is deleted.
create table suppressions (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  -- lowercased
  address text not null,
  reason text not null check (reason in ('hard_bounce', 'complaint', 'manual')),
  -- the diagnostic code of the bounce, the feedback type of the complaint, or the note given by hand
  detail text,
  -- the send that bounced or was complained about
  send_id uuid references sends (id) on delete set null,
  created_at timestamptz not null default now(),
  unique (org_id, address)
);
create index suppressions_org_idx on suppressions (org_id, id desc);

-- A report names the message it is about; these find its send: the send whose last message it
-- is, or the repeating send whose thread it is in (an earlier tick).
create index sends_last_email_idx on sends (last_email_id);
create index sends_repeat_thread_idx on sends (thread_id) where repeat_every_minutes is not null;

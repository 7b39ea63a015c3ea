-- Email-native x402: one interaction per emailed challenge, and every step seen or sent in its thread.
create table x402_interactions (
  -- <uuid>@<payee-domain>
  id text primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  challenge_id uuid not null unique references x402_challenges (id) on delete cascade,
  payee_address text not null,
  -- pinned at creation: only a DKIM-aligned reply from this address can pay or decline
  payer_address text not null,
  payer_domain text not null,
  state text not null default 'awaiting_payment'
    check (state in ('awaiting_payment', 'verifying', '$completed', '$failed', '$expired')),
  -- settled, declined, rejected or expired once terminal
  outcome text,
  failure_reason text,
  failure_reasons text[],
  payer_org uuid references orgs (id) on delete set null,
  -- the inbound email whose payment step is being verified (a retried job resumes it)
  verifying_email_id uuid,
  send_id uuid,
  thread_id uuid,
  -- at most one notice per interaction for untrusted replies
  trust_notice_sent boolean not null default false,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index x402_interactions_org_idx on x402_interactions (org_id, created_at desc);

create table x402_interaction_steps (
  id uuid primary key,
  interaction_id text not null references x402_interactions (id) on delete cascade,
  step text not null,
  step_id uuid,
  direction text not null check (direction in ('sent', 'received')),
  -- received: the stored inbound email (each is handled once)
  email_id uuid unique,
  accepted boolean not null,
  reasons text[] not null default '{}',
  body jsonb not null,
  created_at timestamptz not null default now()
);
create index x402_interaction_steps_idx on x402_interaction_steps (interaction_id, created_at);

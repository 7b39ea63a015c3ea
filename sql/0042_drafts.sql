-- Drafts (issue 29): send-mail requests kept to be sent later, and sends held for a person's
-- approval. `request` is the send-mail body as given; `send_key` the Idempotency-Key its send
-- goes out under, so a draft is sent at most once however often it is approved or sent.
create table drafts (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  status text not null check (status in ('draft', 'pending_approval', 'sending', 'sent', 'rejected')),
  request jsonb not null,
  from_address text not null check (from_address = lower(from_address)),
  send_key text not null,
  send_id uuid,
  send_error jsonb,
  decided_via text check (decided_via in ('api', 'link')),
  decided_by uuid,
  decided_at timestamptz,
  rejection_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (org_id, send_key)
);
create index drafts_org_idx on drafts (org_id, id desc);

-- A sender address whose sends wait for an owner's or admin's approval; `notify_email` is mailed
-- a one-time approval link for each draft that starts waiting, on the authority of `set_by`.
create table approval_policies (
  org_id uuid not null references orgs (id) on delete cascade,
  address text not null check (address = lower(address)),
  notify_email text,
  set_by uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  primary key (org_id, address)
);

-- One-time approval links: the token's SHA-256 (the token has 256 random bits), the person who
-- made it (whose role is checked again when it is used), used at most once, before expires_at.
create table draft_approval_links (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  draft_id uuid not null references drafts (id) on delete cascade,
  token_hash bytea not null unique,
  created_by uuid,
  sent_to text,
  expires_at timestamptz not null,
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index draft_approval_links_draft_idx on draft_approval_links (draft_id);

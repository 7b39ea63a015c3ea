-- Receiving mail: domains, threads, stored messages and their raw bytes.

create table domains (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null check (name = lower(name)),
  status text not null default 'pending' check (status in ('pending', 'verified')),
  -- the value of the verification TXT record the owner publishes
  verification_token text not null,
  dkim_selector text not null,
  dkim_private_sealed bytea not null,
  dkim_public text not null,
  created_at timestamptz not null default now(),
  verified_at timestamptz,
  last_checked_at timestamptz,
  -- the last verification's per-record results
  checks jsonb not null default '{}'
);
create unique index domains_org_name_key on domains (org_id, name);
-- Several organizations may claim a name; only one can hold it verified.
create unique index domains_verified_name_key on domains (name) where status = 'verified';
create index domains_org_idx on domains (org_id, id desc);

alter table orgs add column content_discard_enabled boolean not null default false;

create table threads (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  subject text not null,
  -- the subject without Re:/Fwd: prefixes, lowercased: the last-resort grouping key
  subject_key text not null,
  participants text[] not null default '{}',
  message_count integer not null default 0,
  last_message_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index threads_org_idx on threads (org_id, last_message_at desc, id desc);
create index threads_subject_idx on threads (org_id, subject_key, last_message_at desc);

create table emails (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  thread_id uuid not null references threads (id) on delete cascade,
  direction text not null check (direction in ('inbound', 'outbound')),
  -- email.received, email.bounced, email.tls_report, email.dmarc_report, email.dmarc_failure
  event_type text not null,
  message_id text,
  in_reply_to text,
  "references" text[] not null default '{}',
  from_address text,
  from_name text,
  to_addresses jsonb not null default '[]',
  cc_addresses jsonb not null default '[]',
  reply_to jsonb not null default '[]',
  subject text not null default '',
  sent_at timestamptz,
  text_body text,
  html_body text,
  headers jsonb not null default '[]',
  attachments jsonb not null default '[]',
  -- SMTP envelope and session
  mail_from text,
  rcpt_to text[] not null default '{}',
  remote_ip text,
  helo text,
  tls boolean not null default false,
  -- SPF, DKIM, DMARC and ARC verdicts (mailauth)
  auth jsonb not null default '{}',
  size_bytes integer not null,
  received_at timestamptz not null default now(),
  content_discarded_at timestamptz
);
create index emails_org_idx on emails (org_id, id desc);
create index emails_thread_idx on emails (thread_id, id);
create index emails_message_id_idx on emails (org_id, message_id);

-- The exact bytes, apart from the metadata so that lists never read them.
create table email_contents (
  email_id uuid primary key references emails (id) on delete cascade,
  raw bytea not null
);

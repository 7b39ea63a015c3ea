-- Outbound mail under the sending API: the managed domain's DKIM key and the local outbox.

-- The DKIM key of the managed domain, generated on first use. The primary key makes concurrent
-- first uses agree on one key: every process inserts with "on conflict do nothing" and then
-- reads whichever row won.
create table managed_dkim_keys (
  domain text primary key check (domain = lower(domain)),
  selector text not null,
  -- the PKCS#8 PEM, sealed with the server key (AES-256-GCM)
  private_sealed bytea not null,
  -- base64 SPKI, the p= of the TXT record
  public_key text not null,
  created_at timestamptz not null default now()
);

-- What the embedded local relay (no SMTP_RELAY_URL) keeps instead of sending: one row per
-- recipient this service does not host, readable through GET /v1/outbound/outbox.
create table outbox_messages (
  id uuid primary key,
  -- null when the message was not sent on behalf of an organization
  org_id uuid references orgs (id) on delete cascade,
  envelope_from text not null,
  rcpt text not null,
  subject text,
  message_id text,
  raw text not null,
  created_at timestamptz not null default now()
);
create index outbox_messages_org_idx on outbox_messages (org_id, id desc);

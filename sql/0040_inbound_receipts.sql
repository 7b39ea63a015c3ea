-- Received messages, by a digest of their envelope and content, for a day: a client that sends a
-- message again because it never saw our 250 (the connection dropped after the commit) gets a 250
-- without a second copy (src/mail/inbound/receipts.ts). Pruned by the cleanup job.
create table inbound_receipts (
  digest bytea primary key,
  received_at timestamptz not null default now()
);
create index inbound_receipts_received_at on inbound_receipts (received_at);

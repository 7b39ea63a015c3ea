-- Accepted SMTP transactions waiting to be processed: the listener commits the exact bytes and
-- the envelope (and a mail.ingest job) before it answers 250; the worker parses,
-- authenticates, stores and routes them, and deletes the row in that same transaction.
create table inbound_queue (
  id uuid primary key,
  raw bytea not null,
  mail_from text not null,
  rcpt_to text[] not null,
  remote_ip text not null,
  helo text,
  tls boolean not null,
  received_at timestamptz not null default now()
);

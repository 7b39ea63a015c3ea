-- The web console's sign-ins (issue 30): a browser holds the session token in an HttpOnly cookie,
-- the service keeps its SHA-256 only. `org_id` is the organization the person is looking at now,
-- one they belong to; their role in it is read again on every request.
create table console_sessions (
  id uuid primary key,
  token_hash bytea not null unique,
  user_id uuid not null references users (id) on delete cascade,
  org_id uuid not null references orgs (id) on delete cascade,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null
);
create index console_sessions_expiry_idx on console_sessions (expires_at);

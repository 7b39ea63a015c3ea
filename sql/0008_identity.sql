-- Identity: the CLI device login, email-verified signups (CLI and agent), and agent connections.
-- Every secret (device code, signup token, invitation code, connection key) is stored as a
-- SHA-256 hash; verification codes (6 digits, so guessable offline from a plain hash) as an HMAC
-- under the server key.

-- First-party clients of the authorization server. Their grants are created by the CLI login,
-- the CLI signup and the agent signup, never by /oauth/authorize (which refuses them; their one
-- redirect URI, required by the table, is not a URL a browser could follow anyway). They
-- refresh their tokens at /oauth/token like any public client.
insert into oauth_clients (id, client_name, redirect_uris) values
  ('cli', 'Agent Mail CLI', '{urn:ietf:wg:oauth:2.0:oob}'),
  ('agent', 'Agent signup', '{urn:ietf:wg:oauth:2.0:oob}')
on conflict (id) do nothing;

-- RFC 8628 device authorization: one row per `cli login`. pending -> approved or denied in the
-- browser -> consumed by the one poll that receives the token set.
create table cli_device_codes (
  id uuid primary key,
  device_code_hash bytea not null unique,
  -- 8 characters of an unambiguous alphabet, stored without the dash
  user_code text not null unique check (user_code ~ '^[A-Z]{8}$'),
  client_name text check (client_name is null or char_length(client_name) between 1 and 100),
  device_name text check (device_name is null or char_length(device_name) between 1 and 100),
  status text not null default 'pending' check (status in ('pending', 'approved', 'denied', 'consumed')),
  user_id uuid references users (id) on delete cascade,
  org_id uuid references orgs (id) on delete cascade,
  grant_id uuid references oauth_grants (id) on delete set null,
  -- seconds a client waits between polls; raised by 5 on each slow_down (RFC 8628 section 3.5)
  interval_seconds integer not null,
  last_polled_at timestamptz,
  expires_at timestamptz not null,
  decided_at timestamptz,
  created_at timestamptz not null default now()
);
create index cli_device_codes_expiry_idx on cli_device_codes (expires_at);

-- The browser side of a device login: the page /cli/device, bound to the browser that loaded it
-- (a cookie) and to its form (a CSRF token), like the OAuth authorization page.
create table cli_device_pages (
  id uuid primary key,
  csrf_hash bytea not null,
  browser_hash bytea not null,
  -- set once the person has signed in and named a pending user code
  user_id uuid references users (id) on delete cascade,
  device_code_id uuid references cli_device_codes (id) on delete cascade,
  expires_at timestamptz not null,
  completed_at timestamptz,
  created_at timestamptz not null default now()
);
create index cli_device_pages_expiry_idx on cli_device_pages (expires_at);

-- An email-verified signup in progress (POST /v1/cli/signup/* and /v1/agent/signup/*).
create table signups (
  id uuid primary key,
  kind text not null check (kind in ('cli', 'agent')),
  token_hash bytea not null unique,
  email text not null,
  name text,
  org_name text,
  device_name text,
  -- HMAC of the current code; replaced by a resend
  code_hmac bytea not null,
  code_expires_at timestamptz not null,
  -- wrong codes so far (across resends); at the limit the signup is dead
  failed_attempts integer not null default 0,
  sends integer not null default 1,
  last_sent_at timestamptz not null default now(),
  expires_at timestamptz not null,
  completed_at timestamptz,
  created_at timestamptz not null default now()
);
create index signups_email_idx on signups (lower(email), created_at);
create index signups_expiry_idx on signups (expires_at);

-- An agent connection: a private invitation bound to one address of the organization, claimed
-- once by an agent runtime, which then holds a conn_ key for that address only.
create table agent_connections (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  address text not null check (address = lower(address)),
  label text check (label is null or char_length(label) between 1 and 100),
  created_by uuid references users (id) on delete set null,
  -- the email of the person who created the invitation, as the runtime is told at claim
  setup_owner_address text not null,
  invitation_hash bytea not null unique,
  invitation_expires_at timestamptz not null,
  claimed_at timestamptz,
  key_hash bytea unique,
  revoked_at timestamptz,
  revoked_reason text check (revoked_reason in ('reconnected', 'disconnected')),
  created_at timestamptz not null default now()
);
create index agent_connections_org_idx on agent_connections (org_id, address);
create index agent_connections_expiry_idx on agent_connections (invitation_expires_at) where claimed_at is null;
-- one live key per address: a reconnect revokes the previous one in the same transaction
create unique index agent_connections_live_key on agent_connections (address) where claimed_at is not null and revoked_at is null;

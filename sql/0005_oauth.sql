-- The OAuth 2.1 authorization server: dynamically registered public clients, pending sign-ins
-- of the authorization page, one-time codes, grants and their tokens. Every secret (code,
-- access token, refresh token, CSRF token, browser binding) is stored as a SHA-256 hash only.

create table oauth_clients (
  id text primary key,
  client_name text check (client_name is null or char_length(client_name) between 1 and 200),
  redirect_uris text[] not null check (cardinality(redirect_uris) between 1 and 20),
  created_at timestamptz not null default now()
);

-- An authorization request between the authorization page and the redirect back to the client.
-- It is bound to the browser that loaded the page (a cookie) and to the form (a CSRF token),
-- and it completes once: with a code or with access_denied.
create table oauth_authorization_requests (
  id uuid primary key,
  client_id text not null references oauth_clients (id) on delete cascade,
  redirect_uri text not null,
  code_challenge text not null,
  state text,
  scope text not null,
  csrf_hash bytea not null,
  browser_hash bytea not null,
  -- set once the person has signed in on the page (the organization picker comes next)
  user_id uuid references users (id) on delete cascade,
  expires_at timestamptz not null,
  completed_at timestamptz,
  created_at timestamptz not null default now()
);
create index oauth_authorization_requests_expiry_idx on oauth_authorization_requests (expires_at);

-- What a person authorized: one client acting in one organization with the person's current role.
-- Revoking a grant ends every token issued under it.
create table oauth_grants (
  id uuid primary key,
  client_id text not null references oauth_clients (id) on delete cascade,
  user_id uuid not null references users (id) on delete cascade,
  org_id uuid not null references orgs (id) on delete cascade,
  scope text not null,
  created_at timestamptz not null default now(),
  revoked_at timestamptz,
  revoked_reason text check (revoked_reason in ('revoked', 'refresh_token_reuse', 'code_reuse', 'membership_ended'))
);
create index oauth_grants_org_user_idx on oauth_grants (org_id, user_id);

create table oauth_codes (
  hash bytea primary key,
  client_id text not null references oauth_clients (id) on delete cascade,
  user_id uuid not null references users (id) on delete cascade,
  org_id uuid not null references orgs (id) on delete cascade,
  redirect_uri text not null,
  code_challenge text not null,
  scope text not null,
  expires_at timestamptz not null,
  -- set on the first exchange attempt, successful or not: a code works once
  used_at timestamptz,
  -- the grant a successful exchange created, revoked if the code is presented again
  grant_id uuid references oauth_grants (id) on delete set null,
  created_at timestamptz not null default now()
);
create index oauth_codes_expiry_idx on oauth_codes (expires_at);

create table oauth_tokens (
  hash bytea primary key,
  grant_id uuid not null references oauth_grants (id) on delete cascade,
  kind text not null check (kind in ('access', 'refresh')),
  expires_at timestamptz not null,
  -- refresh tokens: set when exchanged; presenting it again is reuse and revokes the grant
  used_at timestamptz,
  created_at timestamptz not null default now()
);
create index oauth_tokens_grant_idx on oauth_tokens (grant_id);
create index oauth_tokens_expiry_idx on oauth_tokens (expires_at);

-- Agents among agents: published agents, organization agent networks, registries of agents,
-- contacts and address notes (docs/networks.md). Addresses are stored lowercase.

-- An address an organization chooses to publish: seen by the members of its networks, and with
-- visibility public also in the built-in registry and as an A2A agent card.
create table published_agents (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  address text not null check (address = lower(address)),
  display_name text not null check (char_length(display_name) between 1 and 100),
  description text not null default '' check (char_length(description) <= 2000),
  skills text[] not null default '{}',
  -- whether other organizations may admit this agent as a contact (and so write to it first)
  accepts_contacts boolean not null default true,
  visibility text not null default 'networks' check (visibility in ('networks', 'public')),
  -- the last mail sent from the address (kept by the store of outbound mail)
  last_active_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (org_id, address)
);
create index published_agents_public_idx on published_agents (id) where visibility = 'public';

create table networks (
  id uuid primary key,
  -- the organization that created the network and manages its members
  owner_org_id uuid not null references orgs (id) on delete cascade,
  name text not null check (char_length(name) between 1 and 100),
  description text not null default '' check (char_length(description) <= 1000),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

-- The owner organization is a member too (status active). An invited organization becomes
-- active when one of its owners or admins accepts; can_view = it may browse the directory.
create table network_members (
  network_id uuid not null references networks (id) on delete cascade,
  org_id uuid not null references orgs (id) on delete cascade,
  status text not null check (status in ('invited', 'active')),
  can_view boolean not null default true,
  invited_at timestamptz not null default now(),
  joined_at timestamptz,
  primary key (network_id, org_id)
);
create index network_members_org_idx on network_members (org_id, network_id);

-- A registry an owner or admin added by URL; its agent cards are fetched by a job
-- (registries.fetch) and cached with their fetch time.
create table registries (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null check (char_length(name) between 1 and 100),
  url text not null,
  status text not null default 'pending' check (status in ('pending', 'ok', 'failed')),
  last_error text,
  fetched_at timestamptz,
  created_at timestamptz not null default now(),
  unique (org_id, url)
);

-- Cached agent cards: untrusted text from the registry's host, size-capped at fetch.
create table registry_agents (
  id uuid primary key,
  registry_id uuid not null references registries (id) on delete cascade,
  name text not null,
  description text not null default '',
  url text,
  skills text[] not null default '{}',
  card jsonb not null,
  fetched_at timestamptz not null
);
create index registry_agents_registry_idx on registry_agents (registry_id, id desc);

-- The correspondents of one of the organization's addresses (owner_address). The counters are
-- kept by the store of every email, inbound and outbound (src/contacts/counters.ts).
create table contacts (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  owner_address text not null check (owner_address = lower(owner_address)),
  address text not null check (address = lower(address)),
  name text,
  tags text[] not null default '{}',
  source text not null default 'manual' check (source in ('manual', 'network')),
  -- network admission: the network and published agent it came through, and the send grant it
  -- recorded (honoured by the reply-only gate while the agent still accepts contacts there)
  network_id uuid references networks (id) on delete set null,
  agent_id uuid references published_agents (id) on delete set null,
  grant_recorded_at timestamptz,
  first_seen_at timestamptz,
  last_contacted_at timestamptz,
  messages_received bigint not null default 0,
  messages_sent bigint not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (org_id, owner_address, address)
);
create index contacts_org_idx on contacts (org_id, id desc);
create index contacts_tags_idx on contacts using gin (tags);

-- Notes about an address, authored by a member (author_id = user, or the key without one), a
-- function (author_id = function) or an agent connection (author_id = connection,
-- author_address = its bound address, which alone may edit the note).
create table address_notes (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  address text not null check (address = lower(address)),
  body text not null check (char_length(body) between 1 and 10000),
  author_kind text not null check (author_kind in ('member', 'function', 'connection')),
  author_id uuid not null,
  author_address text,
  version integer not null default 1,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((author_kind = 'connection') = (author_address is not null))
);
create index address_notes_org_idx on address_notes (org_id, id desc);
create index address_notes_address_idx on address_notes (org_id, address, id desc);

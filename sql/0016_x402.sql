-- x402 payments as API objects: payout wallets, challenges, settlements (the at-most-once claim),
-- the ledger, spend policies, declined payments and per-payee settle caps.

create table x402_payout_addresses (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  network text not null check (network in ('base', 'base-sepolia')),
  -- EIP-55 checksummed
  address text not null,
  is_default boolean not null default false,
  created_at timestamptz not null default now(),
  unique (org_id, network, address)
);
create unique index x402_payout_addresses_default_key on x402_payout_addresses (org_id, network) where is_default;

create table x402_challenges (
  id uuid primary key,
  -- the payee
  org_id uuid not null references orgs (id) on delete cascade,
  network text not null check (network in ('base', 'base-sepolia')),
  amount numeric(78, 0) not null check (amount > 0),
  asset text not null,
  pay_to text not null,
  description text not null,
  max_timeout_seconds integer not null,
  interaction_id text not null,
  challenge_step_id uuid not null,
  challenge_nonce text not null,
  authorization_nonce text not null,
  expires_at timestamptz not null,
  status text not null default 'pending' check (status in ('pending', 'settled', 'failed')),
  settle_tx text,
  failure_reason text,
  failure_category text,
  failure_reasons text[],
  settled_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index x402_challenges_org_idx on x402_challenges (org_id, id desc);

-- The claim on one authorization: (chain, asset, from, nonce) is settled at most once, whichever
-- challenge it was presented for. A challenge has at most one settlement.
create table x402_settlements (
  id uuid primary key,
  challenge_id uuid not null unique references x402_challenges (id) on delete cascade,
  payee_org uuid not null references orgs (id) on delete cascade,
  payer_org uuid references orgs (id) on delete set null,
  network text not null,
  chain_id integer not null,
  -- lowercase hex, so the unique key does not depend on checksum casing
  asset text not null,
  payer text not null,
  nonce text not null,
  amount numeric(78, 0) not null,
  -- the verified payment payload, sent to the facilitator (by the request or, after a crash, the job)
  payment jsonb not null,
  status text not null default 'pending' check (status in ('pending', 'settled', 'failed')),
  tx_hash text,
  failure_reason text,
  attempts integer not null default 0,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (chain_id, asset, payer, nonce)
);
create index x402_settlements_payee_idx on x402_settlements (payee_org, created_at) where status <> 'failed';
create index x402_settlements_payer_idx on x402_settlements (payer_org, created_at) where status <> 'failed';

-- One row per organization and direction: the payee's `received`, and the payer's `sent` when the
-- payer is an organization of this service.
create table x402_ledger (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  settlement_id uuid not null references x402_settlements (id) on delete cascade,
  challenge_id uuid not null,
  direction text not null check (direction in ('received', 'sent')),
  status text not null check (status in ('pending', 'settled', 'failed')),
  amount numeric(78, 0) not null,
  asset text not null,
  network text not null,
  counterparty text not null,
  settle_tx text,
  failure_reason text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (settlement_id, direction)
);
create index x402_ledger_org_idx on x402_ledger (org_id, id desc);

create table x402_spend_policies (
  org_id uuid primary key references orgs (id) on delete cascade,
  paused boolean not null default false,
  per_payment_cap numeric(78, 0),
  daily_cap numeric(78, 0),
  -- null: any payee
  payee_allowlist text[],
  updated_at timestamptz not null default now()
);

create table x402_declined_payments (
  id uuid primary key,
  org_id uuid not null references orgs (id) on delete cascade,
  challenge_id uuid not null references x402_challenges (id) on delete cascade,
  network text not null,
  amount numeric(78, 0) not null,
  pay_to text not null,
  reasons text[] not null,
  created_at timestamptz not null default now()
);
create index x402_declined_payments_org_idx on x402_declined_payments (org_id, id desc);

-- Operator overrides of the default settle caps (null: the default).
create table x402_settle_caps (
  org_id uuid primary key references orgs (id) on delete cascade,
  daily numeric(78, 0),
  monthly numeric(78, 0),
  per_settle numeric(78, 0),
  updated_at timestamptz not null default now()
);

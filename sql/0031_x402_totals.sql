-- The settle caps (a payee's UTC day and month) and the spend policy's daily cap (a payer's UTC
-- day) read running totals instead of summing the period's settlements on every claim: that sum
-- grew with the period's volume (a payee's month could be hundreds of thousands of rows) and ran
-- under the payee's lock, so it bounded how fast one payee could be paid. A claim adds its amount
-- to the rows of its periods; a settlement that fails takes it off again (failed settlements do
-- not count). Rows are per organization, direction ('received' for the payee, 'sent' for a payer
-- of this service), span ('day', 'month') and the span's first UTC day; only the current spans are
-- read, and the cleanup job deletes old ones.
create table x402_totals (
  org_id uuid not null references orgs (id) on delete cascade,
  direction text not null check (direction in ('received', 'sent')),
  span text not null check (span in ('day', 'month')),
  start date not null,
  amount numeric(78, 0) not null,
  primary key (org_id, direction, span, start)
);

insert into x402_totals (org_id, direction, span, start, amount)
select payee_org, 'received', 'day', (created_at at time zone 'utc')::date, sum(amount)
  from x402_settlements where status <> 'failed' and created_at >= now() - interval '2 days' group by 1, 4
union all
select payee_org, 'received', 'month', date_trunc('month', created_at at time zone 'utc')::date, sum(amount)
  from x402_settlements where status <> 'failed' and created_at >= now() - interval '32 days' group by 1, 4
union all
select payer_org, 'sent', 'day', (created_at at time zone 'utc')::date, sum(amount)
  from x402_settlements where status <> 'failed' and payer_org is not null and created_at >= now() - interval '2 days' group by 1, 4;

-- they served only the sums: the ledger is the per-organization view of settlements
drop index x402_settlements_payee_idx;
drop index x402_settlements_payer_idx;

-- A claim adds to its totals only within their caps, checked on the rows as it updates them (so
-- concurrent claims cannot together pass a cap, with no lock held while the claim is decided).
-- When a total would pass its cap (another claim took the headroom since this one read the
-- totals), the claim's statement casts false to this domain: the check violation rolls the claim
-- back, and it is decided again on the new totals.
create domain x402_within_caps as boolean check (value);

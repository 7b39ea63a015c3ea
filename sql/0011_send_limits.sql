-- Operator overrides of the plan's send abuse limits (`admin org set-send-limits`); null = the plan's.
alter table orgs
  add column send_per_hour_override integer check (send_per_hour_override > 0),
  add column send_per_day_override integer check (send_per_day_override > 0);

-- The send limits (send_per_hour, send_per_day) read counters instead of counting the day's
-- sends on every send: that count visited a heap page for every two or three sends of the last
-- day (the rows are wide), so each send cost more than the one before. A send adds one to the
-- row of its minute and to the row of its hour; the hour's window sums at most 60 minute rows,
-- the day's at most 24 hour rows. Rows older than two days are deleted by the cleanup job.
create table send_counts (
  org_id uuid not null references orgs(id) on delete cascade,
  span text not null check (span in ('minute', 'hour')),
  start timestamptz not null,
  sends integer not null,
  primary key (org_id, span, start)
);
insert into send_counts (org_id, span, start, sends)
select org_id, 'minute', date_trunc('minute', created_at), count(*) from sends where created_at > now() - interval '1 hour' group by 1, 3
union all
select org_id, 'hour', date_trunc('hour', created_at), count(*) from sends where created_at > now() - interval '1 day' group by 1, 3;

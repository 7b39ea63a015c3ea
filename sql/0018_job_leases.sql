-- Job claims are leases (src/jobs/queue.ts): every few seconds each worker renews the leases it
-- holds (`where locked_by = $1`) and frees the expired ones of dead workers (`locked_at < ...`).
-- Only claimed jobs are in this index, a few per worker, so both stay cheap however long the
-- queue of pending jobs grows.
create index jobs_claimed_idx on jobs (locked_at, locked_by) where locked_by is not null;

-- Big mailboxes: indexed full-text search, threads listed by id, the reply lookup by
-- Message-ID, and a job queue that autovacuum keeps small.

-- A reply's thread is found by the Message-IDs it references (src/mail/threads.ts), looked up
-- by Message-ID first: with the organization first, a plan made on a table the planner takes
-- for empty could read the organization's entries of this index, or of emails_org_idx, and
-- filter them.
create index emails_message_id_org_idx on emails (message_id, org_id);
drop index emails_message_id_idx;

-- Search: PostgreSQL's own text search (tsvector, GIN), not trigrams. It is in every PostgreSQL
-- and in the embedded PGlite without an extension, its index is a fraction of a trigram index
-- over the same bodies and cheaper to keep up on every stored message, and it matches words,
-- as people search mail. The 'simple' configuration: no stemming and no stop words, mail
-- comes in every language. The sender's address counts whole and by its parts (`quinn`,
-- `finder`, `example`). The body counts up to its first 64 KB of text, which keeps a huge
-- message under the 1 MB limit of a tsvector.
alter table emails add column search tsvector generated always as (
  to_tsvector('simple', coalesce(subject, '') || ' ' || coalesce(from_name, '') || ' ' || coalesce(from_address, '') || ' ' ||
                        translate(coalesce(from_address, ''), '@.+_-', '     ') || ' ' || left(coalesce(text_body, ''), 65536))
) stored;

-- btree_gin puts the organization in the same index as the words, so a search reads the
-- organization's matches only. It is a trusted extension (PostgreSQL 13 and later), which the
-- owner of a database may create; the embedded PGlite loads it (src/db/embedded.ts). The
-- organization is indexed as text, and searched as text (src/emails/service.ts), so that this
-- is the one index that serves the search statements: without fresh statistics the planner
-- takes an organization for half a percent of the table and would rather read its entries of
-- emails_org_idx and test each message.
create extension if not exists btree_gin;
create index emails_search_idx on emails using gin ((org_id::text), search);

-- GET /v1/threads is ordered by id, as every list is; threads_org_idx (by last message) did not
-- serve it, so each page sorted all the organization's threads.
create index threads_org_id_idx on threads (org_id, id desc);

-- The jobs table is a queue: every job is inserted, updated by its claim and deleted, so its
-- dead rows grow at the rate of the work. Vacuum it after 1,000 dead rows whatever its size
-- (the default waits for a fifth of the table) and without the cost-based pauses: a pass over a
-- table of a few thousand rows takes milliseconds. (Where autovacuum is off, the worker's
-- maintenance job vacuums it: src/maintenance/planner.job.ts.)
alter table jobs set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
                      autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 1000,
                      autovacuum_vacuum_cost_delay = 0);

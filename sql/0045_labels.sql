-- Labels and read state on messages (issue 29): system labels the service sets (`inbound` and
-- `unread` on arrival, `sent` on a sent copy, `read` once marked) and an organization's own,
-- created first (the labels table). A message's labels are a sorted array of names on the row,
-- so a list reads them with the summary and filters by them without a join; a thread's are the
-- union of its messages'.
alter table emails add column labels text[] not null default '{}';

-- Mail stored before labels existed counts as read: an agent asking for `unread` after the
-- upgrade gets what arrived since, not its whole history.
update emails set labels = case when direction = 'inbound' then '{inbound,read}'::text[] else '{sent}'::text[] end;

-- label=unread newest first, the read every inbox-style agent makes: the organization's unread
-- mail in id order, however rare or common it is. The condition is a literal, and the list
-- writes it as one (src/mail/label-queries.ts), so generic plans of prepared statements use it.
-- The other system labels are common: a list by them walks emails_org_idx newest first.
create index emails_unread_idx on emails (org_id, id desc) where labels @> '{unread}'::text[];

-- A custom label: the organization as text, as in
-- emails_address_idx (0044), so that this is the index the statement names.
create index emails_labels_idx on emails using gin ((org_id::text), labels);

-- An organization's custom labels; system names are reserved (src/labels/model.ts).
create table labels (
  org_id uuid not null references orgs (id) on delete cascade,
  name text not null,
  created_at timestamptz not null default now(),
  primary key (org_id, name)
);

-- Search newest first without reading every match (issue 28). PostgreSQL's GIN returns a word's
-- matches in no order, so a newest-first page of a common word read and sorted every match, and
-- the organization in emails_search_idx (a btree_gin key) is one more posting list to intersect.
--
-- Each message's search vector carries its organization as one more lexeme, `org=<uuid>`
-- (src/mail/search-text.ts writes it; no query word can spell it: a query's words are runs of
-- letters and digits, or addresses with an @). A search asks for its words AND that lexeme, so
-- the index itself intersects the word with the organization, driven by the rarer of the two.
update emails set search = coalesce(search, ''::tsvector) || ('org=' || org_id::text)::tsvector;

-- On a server with the RUM extension (Debian: postgresql-15-rum; docs/operations.md), an
-- ordered full-text index: received_at is stored with each match in the posting lists
-- (order_by_attach), so the matches of a word in the organization come out sorted newest
-- first, without touching the table (src/mail/email-queries.ts orders by `received_at <=| t`).
-- RUM is not a trusted extension: where it is not installed, or the migrating role may not
-- create it, there is no ordered index and search keeps emails_search_idx (as the embedded
-- PGlite does); the service asks for the index by name.
do $$
begin
  if exists (select 1 from pg_available_extensions where name = 'rum') then
    begin
      create extension if not exists rum;
      create index emails_search_rum_idx on emails using rum (search rum_tsvector_addon_ops, received_at)
        with (attach = 'received_at', to = 'search', order_by_attach = 't');
    exception when insufficient_privilege or undefined_file then
      raise notice 'rum is not available to this role: search keeps emails_search_idx';
    end;
  end if;
end $$;

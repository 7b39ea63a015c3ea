-- Managed inboxes get an optional display name (the phrase of the From header when sending as
-- the inbox). Domains need no new column: 0002 already holds the DKIM key, the verification
-- token and the last checks.
alter table managed_inboxes add column display_name text
  check (display_name is null or (char_length(display_name) between 1 and 100 and display_name !~ '[[:cntrl:]]'));

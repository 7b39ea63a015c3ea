-- The reply without its quotes (src/mail/inbound/extract.ts): the new content of a received
-- message, without the quoted earlier messages, the "On … wrote:" line and a trailing
-- signature, computed once at ingest and stored here so that reads cost nothing. The full
-- bodies (text_body, html_body) stay as they are.
--
-- Messages stored before this migration, sent mail and messages whose content was discarded
-- keep null: null means "not extracted", an empty string "nothing new" (a reply that is all
-- quote). Adding nullable columns without a default rewrites no row.
alter table emails add column extracted_text text, add column extracted_html text;

-- compressed like the bodies they come from (0015); a server without lz4 keeps pglz
do $$
begin
  alter table emails alter column extracted_text set compression lz4,
                     alter column extracted_html set compression lz4;
exception when feature_not_supported then
  raise notice 'lz4 is not available on this server: TOAST compression stays pglz';
end $$;

-- Message bytes, bodies, headers and webhook payloads are compressed with lz4 instead of the
-- default pglz when they are stored out of line (TOAST). pglz dominated the database's CPU time
-- per stored message (about 700 of 900 us for a 10 KB message); lz4 compresses several times
-- faster at a similar ratio for mail. A server built without lz4 (the embedded PGlite) keeps
-- pglz: the change is an optimization, never a requirement.
do $$
begin
  alter table email_contents alter column raw set compression lz4;
  alter table emails alter column text_body set compression lz4,
                     alter column html_body set compression lz4,
                     alter column headers set compression lz4;
  alter table webhook_deliveries alter column payload set compression lz4;
  alter table outbox_messages alter column raw set compression lz4;
exception when feature_not_supported then
  raise notice 'lz4 is not available on this server: TOAST compression stays pglz';
end $$;

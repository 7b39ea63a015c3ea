-- Inbound mail is stored in the SMTP transaction itself (parsed, authenticated and committed
-- with its deliveries before the 250, many sessions per commit), so the queue of accepted but
-- unprocessed messages goes. A message still in it was accepted with a 250 and must not be
-- lost: the upgrade stops until the previous version's workers have drained it. The lock keeps
-- a listener of the previous version from queueing another one between the check and the drop.
lock table inbound_queue in access exclusive mode;

do $$
begin
  if exists (select from inbound_queue) then
    raise exception 'inbound_queue still holds % accepted messages: let the previous version drain it before upgrading',
      (select count(*) from inbound_queue);
  end if;
end $$;

drop table inbound_queue;
delete from jobs where kind = 'mail.ingest';

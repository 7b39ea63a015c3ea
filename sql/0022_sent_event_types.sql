-- The sender's copy of mail sent through the API was stored with event_type email.received.
-- It is email.sent, or email.replied when it answers a message the organization received (what
-- in_reply_to_email_id does). (An old repeat tick of a reply answers the previous tick, an
-- outbound message, so it becomes email.sent; new ticks of a reply are email.replied.)
update emails e
   set event_type = case
         when exists (select 1 from emails r where r.org_id = e.org_id and r.direction = 'inbound' and r.message_id = e.in_reply_to)
         then 'email.replied' else 'email.sent' end
 where e.direction = 'outbound' and e.event_type = 'email.received';

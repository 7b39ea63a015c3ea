-- The mail of one address and the mail since an instant, indexed (issue 28): GET /v1/emails with
-- inbox_id=, address= or a connection key, and its long-poll (wait=, with since=), read the
-- organization's mail newest first and tested every message against the address, so each read,
-- and each woken long-poll, cost the organization's whole mailbox (11 ms at 20,000 messages).

-- The addresses a message is of, as the address filter reads them (src/emails/service.ts
-- ofAddress, the same expression): an inbound copy's envelope recipients, stored lowercase, and
-- an outbound message's sender, lowercased. GIN: a message has several.
create index emails_address_idx on emails using gin ((case when direction = 'inbound' then rcpt_to else array[lower(from_address)] end));

-- A long-poll's since= reads the mail received after an instant.
create index emails_org_received_idx on emails (org_id, received_at);

-- The mail of one address, indexed (issue 28): GET /v1/emails with inbox_id=, address= or a
-- connection key, and its long-poll (wait=, with since=), read the organization's mail newest
-- first and tested every message against the address, so each read, and each woken long-poll,
-- cost the organization's whole mailbox (11 ms at 20,000 messages).
--
-- The addresses a message is of, as the address filter reads them (src/emails/service.ts
-- ofAddress, the same expression): an inbound copy's envelope recipients, stored lowercase, and
-- an outbound message's sender, lowercased; GIN, since a message has several. As with
-- emails_search_idx (0027), the organization is in the index as text and the list of an address
-- names it as text (listEmails), so that this is the one index that serves it: with statistics
-- taken before an organization's mail arrived, the planner would rather read its entries of
-- emails_org_idx and test each message. received_at (btree_gin) serves since=: a long-poll's
-- read after a wake reads the address's entries since its last answer.
create index emails_address_idx on emails using gin (
  (org_id::text), (case when direction = 'inbound' then rcpt_to else array[lower(from_address)] end), received_at);

-- A long-poll of the whole organization reads its mail since its last answer.
create index emails_org_received_idx on emails (org_id, received_at);

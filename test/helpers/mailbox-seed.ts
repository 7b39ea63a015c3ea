/**
 * The bulk import of the big-mailbox benchmark: `count` received messages for one organization,
 * written by `insert ... select from generate_series` in chunks, as the rows the store path
 * writes for an inbound message (src/mail/store.ts): a thread per five messages with its
 * counters and participants, the email with its parsed fields, headers, envelope and verdicts,
 * its exact bytes in email_contents, and the organization's storage counters. Storing a million
 * messages through SMTP would take the better part of an hour on two cores; this takes minutes.
 *
 * The messages: UUIDv7 ids one millisecond apart, ending a minute before now (newest last), so
 * mail stored later lists first; Message-IDs `<seed-N@bench.example>` (N from 0, the same in
 * every seeded mailbox); five per thread, each replying to the one before it (In-Reply-To,
 * References, "Re: "); 1,000 senders; a 60-word body drawn from a vocabulary of
 * 50,000 words `w1` to `w50000` whose rank follows a log-uniform law (w1 is in nearly every
 * message, w40000 in about one in 10,000), so searches for them hit from most of the mailbox
 * down to a handful of messages.
 */
import type { Sql } from '../../src/db/client'

export const VOCABULARY = 50_000

/** One message in this many of a seeded mailbox is unread: the rare label a mailbox's list filters by. */
export const UNREAD_EVERY = 1_000
const PER_THREAD = 5
const CHUNK = 50_000

/** A word of the vocabulary drawn as the bodies draw theirs. */
export const randomWord = () => `w${Math.floor(Math.exp(Math.random() * Math.log(VOCABULARY)))}`

/**
 * Seeds a mailbox. Past 100,000 messages the search indexes (GIN, and RUM where the server has
 * it: sql/0049) are dropped for the import and built again after it from their own
 * definitions, as bulk loads do: inserting a million messages into a GIN index one by one
 * takes ten times as long as building it.
 */
export async function seedMailbox(sql: Sql, o: { orgId: string; address: string; count: number; log?: (line: string) => void }): Promise<void> {
  const rebuild =
    o.count > 100_000
      ? await sql<{ name: string; def: string }[]>`
          select indexname as name, indexdef as def from pg_indexes where indexname in ('emails_search_idx', 'emails_search_rum_idx')`
      : []
  for (const index of rebuild) await sql`drop index ${sql(index.name)}`
  await insertMailbox(sql, o)
  for (const index of rebuild) {
    await sql.begin(async tx => {
      await tx`set local maintenance_work_mem = '256MB'`
      await tx.unsafe(index.def)
    })
    o.log?.(`${index.name} built`)
  }
}

async function insertMailbox(sql: Sql, o: { orgId: string; address: string; count: number; log?: (line: string) => void }): Promise<void> {
  const endMs = Date.now() - 60_000
  const startMs = endMs - o.count
  // messages [from, to) of the mailbox; `from` a multiple of PER_THREAD so threads never straddle chunks
  for (let from = 0; from < o.count; from += CHUNK) {
    const to = Math.min(o.count, from + CHUNK)
    // one statement per chunk: its rows are checked against each other's foreign keys at its end
    await sql`
      with seed as materialized (
        select i, i % ${PER_THREAD} as pos,
               -- UUIDv7: 48 bits of milliseconds, version 7, 74 random bits with the variant
               (lpad(to_hex(${startMs}::bigint + i), 12, '0') || '7' || substr(md5(i::text), 1, 3) || '8' || substr(md5(i::text), 4, 15))::uuid as id,
               (lpad(to_hex(${startMs}::bigint + i - i % ${PER_THREAD}), 12, '0') || '7' || substr(md5('t' || i / ${PER_THREAD}), 1, 3) || '9' || substr(md5('t' || i / ${PER_THREAD}), 4, 15))::uuid as thread_id,
               'sender' || (i / ${PER_THREAD}) % 1000 || '@example' || (i / ${PER_THREAD}) % 50 || '.com' as sender,
               to_timestamp((${startMs}::bigint + i) / 1000.0) as at,
               (select string_agg('w' || floor(exp(random() * ln(${VOCABULARY})))::int, ' ') from generate_series(1, 4) where i >= 0) as topic,
               (select string_agg('w' || floor(exp(random() * ln(${VOCABULARY})))::int, ' ') from generate_series(1, 60) where i >= 0) as body
          from generate_series(${from}::int, ${to - 1}::int) as i),
      new_threads as (
        insert into threads (id, org_id, subject, subject_key, participants, message_count, last_message_at, created_at)
        select thread_id, ${o.orgId}, 'About ' || topic, 'about ' || topic, array[sender, ${o.address}],
               least(${PER_THREAD}, ${o.count} - i), at + make_interval(secs => (least(${PER_THREAD}, ${o.count} - i) - 1) / 1000.0), at
          from seed where pos = 0),
      m as (
        select s.*, case when s.pos > 0 then 'Re: ' else '' end || 'About ' || f.topic as subject,
               '<seed-' || s.i || '@bench.example>' as message_id,
               case when s.pos > 0 then '<seed-' || s.i - 1 || '@bench.example>' end as in_reply_to,
               array(select '<seed-' || r || '@bench.example>' from generate_series(s.i - s.pos, s.i - 1) as r) as refs
          from seed s join seed f on f.i = s.i - s.pos),
      r as materialized (
        select m.*, convert_to(
                 'From: Sender ' || split_part(sender, '@', 1) || ' <' || sender || E'>\r\n' ||
                 'To: ' || ${o.address} || E'\r\n' ||
                 'Subject: ' || subject || E'\r\n' ||
                 'Message-ID: ' || message_id || E'\r\n' ||
                 coalesce('In-Reply-To: ' || in_reply_to || E'\r\n', '') ||
                 E'Content-Type: text/plain; charset=utf-8\r\n\r\n' || body || E'\r\n', 'UTF8') as raw
          from m),
      new_emails as (
        insert into emails (id, org_id, thread_id, direction, event_type, message_id, in_reply_to, "references",
                            from_address, from_name, to_addresses, subject, sent_at, text_body, headers,
                            mail_from, rcpt_to, remote_ip, helo, auth, size_bytes, received_at, search, labels)
        select id, ${o.orgId}, thread_id, 'inbound', 'email.received', message_id, in_reply_to, refs,
               sender, 'Sender ' || split_part(sender, '@', 1), jsonb_build_array(jsonb_build_object('address', ${o.address}::text, 'name', '')),
               subject, at, body || E'\n',
               jsonb_build_array(
                 jsonb_build_object('name', 'from', 'value', 'Sender ' || split_part(sender, '@', 1) || ' <' || sender || '>'),
                 jsonb_build_object('name', 'to', 'value', ${o.address}::text),
                 jsonb_build_object('name', 'subject', 'value', subject),
                 jsonb_build_object('name', 'message-id', 'value', message_id)),
               sender, array[${o.address}::text], '127.0.0.1', 'mx.' || split_part(sender, '@', 2),
               jsonb_build_object('spf', jsonb_build_object('result', 'pass', 'domain', split_part(sender, '@', 2)), 'dkim', '[]'::jsonb,
                                  'dmarc', jsonb_build_object('result', 'none', 'policy', null, 'domain', split_part(sender, '@', 2)), 'arc', jsonb_build_object('result', 'none')),
               octet_length(raw), at,
               -- the store writes the vector of src/mail/search-text.ts; for these plain words
               -- PostgreSQL's parser finds the same ones (the sender whole, and by its words)
               to_tsvector('simple', subject || ' Sender ' || split_part(sender, '@', 1) || ' ' || sender || ' ' ||
                                     translate(sender, '@.', '  ') || ' ' || body) || ('org=' || ${o.orgId})::tsvector,
               -- one message in UNREAD_EVERY is unread, the rest read (src/mail/label-queries.ts)
               case when i % ${UNREAD_EVERY} = 0 then '{inbound,unread}'::text[] else '{inbound,read}'::text[] end
          from r),
      new_contents as (insert into email_contents (email_id, raw) select id, raw from r)
      update orgs set storage_used_bytes = storage_used_bytes + (select sum(octet_length(raw)) from r), emails_count = emails_count + ${to - from}
       where id = ${o.orgId}`
    o.log?.(`seeded ${to} of ${o.count}`)
  }
}

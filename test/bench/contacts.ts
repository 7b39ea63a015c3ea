/**
 * Contacts' counters on the store path: every stored email carries one update of the contacts
 * it is between, in the store's own statement (src/contacts/counters.ts). This section stores
 * the same inbound messages (parsed once) into an organization whose senders are all contacts
 * of the recipient, and into one without contacts, sequentially, one transaction each, and
 * prints messages per second and the ratio. The organization without contacts is the baseline:
 * its statements still probe the contacts index, which costs nothing measurable next to the
 * email's own insert.
 */
import type { Sql } from '../../src/db/client'
import { insertOrg } from '../../src/account/org-queries'
import { NO_VERDICTS } from '../../src/mail/inbound/authenticate'
import { parseMail } from '../../src/mail/inbound/parse'
import { storeEmail } from '../../src/mail/store'
import { benchContext } from './common'

const MESSAGES = Number(process.env.BENCH_CONTACTS_MESSAGES ?? 2000)
const SENDERS = 200

async function storeAll(
  sql: Sql,
  orgId: string,
  owner: string,
  mails: { raw: Uint8Array; mail: Awaited<ReturnType<typeof parseMail>>; from: string }[],
): Promise<number> {
  const ctx = benchContext(sql)
  const started = performance.now()
  for (const m of mails) {
    await sql.begin(tx =>
      storeEmail(ctx, tx, {
        orgId,
        direction: 'inbound',
        eventType: 'email.received',
        mail: m.mail,
        raw: m.raw,
        mailFrom: m.from,
        rcptTo: [owner],
        auth: NO_VERDICTS,
      }),
    )
  }
  return MESSAGES / ((performance.now() - started) / 1000)
}

export async function contactsBench(sql: Sql) {
  const owner = 'agent@bench.example'
  const mails = await Promise.all(
    Array.from({ length: MESSAGES }, async (_, i) => {
      const from = `sender-${i % SENDERS}@peers.example`
      const text = `From: ${from}\r\nTo: ${owner}\r\nSubject: message ${i}\r\nMessage-ID: <${crypto.randomUUID()}@peers.example>\r\n\r\n${'x'.repeat(2000)}\r\n`
      const raw = new TextEncoder().encode(text)
      return { raw, mail: await parseMail(raw), from }
    }),
  )
  const withContacts = await sql.begin(tx => insertOrg(tx, { name: 'bench contacts', plan: 'developer' }))
  const without = await sql.begin(tx => insertOrg(tx, { name: 'bench no contacts', plan: 'developer' }))
  for (let i = 0; i < SENDERS; i++) {
    await sql`insert into contacts (id, org_id, owner_address, address) values (${crypto.randomUUID()}, ${withContacts}, ${owner}, ${`sender-${i}@peers.example`})`
  }
  // warm both paths, then alternate so the machine's load falls on both alike
  await storeAll(sql, without, owner, mails.slice(0, 50))
  const rounds = { baseline: [] as number[], contacts: [] as number[] }
  for (let round = 0; round < 2; round++) {
    rounds.baseline.push(await storeAll(sql, without, owner, mails))
    rounds.contacts.push(await storeAll(sql, withContacts, owner, mails))
  }
  const best = (xs: number[]) => Math.max(...xs)
  const [counted] = await sql<{ received: string }[]>`select sum(messages_received)::text as received from contacts where org_id = ${withContacts}`
  console.log(
    JSON.stringify({
      section: 'contacts',
      messages: MESSAGES,
      stored_per_second_without_contacts: Math.round(best(rounds.baseline)),
      stored_per_second_every_sender_a_contact: Math.round(best(rounds.contacts)),
      ratio: Math.round((best(rounds.contacts) / best(rounds.baseline)) * 100) / 100,
      counted_messages: Number(counted!.received),
    }),
  )
}

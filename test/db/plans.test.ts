/**
 * The plans of the big-mailbox statements, as PostgreSQL runs them, on tables that filled after
 * their statistics were taken (no autovacuum on this server): no sequential scan of the mail.
 *
 * Each test has a database of its own: migrated, analyzed while empty, then a mailbox of 30,000
 * messages imported (test/helpers/mailbox-seed.ts) and not analyzed. The mailbox is imported once,
 * into a template database, and each test gets a copy of it (`create database … template`, which
 * copies the files, the empty statistics included): the import is most of this file's time. The service's own functions (the
 * list, a thread, the cursor, search, storing a reply and a new message) run on a connection
 * that logs the plan of every statement it executes (auto_explain, as notices) and plans every
 * statement generically, as PostgreSQL does for a prepared statement after five executions:
 * the plan has to be right for any value, whatever the statistics say.
 *
 * And the hazard the worker's statistics job exists for: a statement planned while its table
 * held a handful of rows keeps that plan (a scan of the whole table) as the table fills, until
 * ANALYZE; refreshStatistics replaces it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { connectUrl, type Sql } from '../../src/db/client'
import { migrate } from '../../src/db/migrate'
import { refreshStatistics } from '../../src/db/statistics'
import { createContext } from '../../src/context'
import { ServerKeys } from '../../src/crypto'
import { memoryResolver } from '../../src/dns/resolver'
import { createOrgCommand } from '../../src/admin/commands'
import { createManagedInbox } from '../../src/inboxes/service'
import { getThread } from '../../src/emails/service'
import { listEmails, listThreads, searchEmails } from '../../src/mail/email-queries'
import { ingest } from '../../src/mail/inbound/ingest'
import { seedMailbox } from '../helpers/mailbox-seed'
import { testDatabase } from '../helpers/database'
import { TEST_SECRET, testConfig } from '../helpers/app'
import { rfc822 } from '../helpers/mail'
import { PLUGINS } from '../../src/plugins'

// auto_explain and a database of its own need the PostgreSQL server; the embedded fallback is neither.
const embedded = (await testDatabase()).kind === 'pglite'
const SIZE = 30_000
/** The mailbox of the labels' plans (issue 29 asks for them on 100,000 messages). */
const LABELED_SIZE = 100_000
const serverUrl = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres'
/** The server has RUM, so migrations made the ordered search index (sql/0049). */
const ordered = !embedded && (await hasRum(serverUrl))
const name = `agent_mail_plans_${process.pid}_${Date.now().toString(36)}`
const config = testConfig()

/** the database the seeded mailbox is imported into once, and copied from */
const TEMPLATE = `${name}_seeded`

let admin: ReturnType<typeof postgres>
let url: string
let sql: Sql
let made = 0
let seeded: Promise<Mailbox> | undefined

interface Mailbox {
  orgId: string
  address: string
}

/** Opens a new database `db`: a copy of `template`, or migrated and analyzed while empty (the planner knows nothing of what follows). */
async function openDatabase(db: string, template?: string): Promise<Sql> {
  if (sql) await sql.end({ timeout: 5 })
  url = Object.assign(new URL(serverUrl), { pathname: `/${db}` }).toString()
  await admin.unsafe(template ? `create database ${db} template ${template}` : `create database ${db}`)
  sql = connectUrl(url, 2)
  if (!template) {
    await migrate(sql)
    await sql`analyze`
  }
  return sql
}

/**
 * Drops the indexes of words from the open database, for a test that searches nothing: inserting
 * into them (RUM above all) is most of an import's time, and dropping an index leaves the
 * table's statistics as they were.
 */
const dropSearchIndexes = () => sql`drop index if exists emails_search_idx, emails_search_rum_idx`

/** A database of its own, empty. */
const freshDatabase = () => openDatabase(`${name}_${++made}`)

/** A database of its own holding a mailbox of SIZE messages its statistics do not know: a copy of the one imported once. */
async function seededDatabase(): Promise<Mailbox> {
  seeded ??= (async () => {
    await openDatabase(TEMPLATE)
    const box = await mailbox(SIZE)
    // a template cannot be copied while a session is connected to it (ending a client twice is harmless)
    await sql.end({ timeout: 5 })
    return box
  })()
  const box = await seeded
  await openDatabase(`${name}_${++made}`, TEMPLATE)
  return box
}

/** One connection that logs the plan of each statement it runs as a notice, planned as `planCache` says. */
function explaining(planCache: 'auto' | 'force_generic_plan') {
  const plans: string[] = []
  const client = postgres(url, {
    max: 1,
    onnotice: n => void (n.message?.includes('Query Text:') && plans.push(n.message)),
    types: { bigint: postgres.BigInt },
    transform: { undefined: null },
    connection: {
      session_preload_libraries: 'auto_explain',
      'auto_explain.log_min_duration': '0',
      'auto_explain.log_level': 'notice',
      plan_cache_mode: planCache,
    } as Record<string, string>,
  }) as unknown as Sql
  return { client, plans, take: () => plans.splice(0) }
}

async function hasRum(url: string) {
  const probe = postgres(url, { max: 1, onnotice: () => {} })
  try {
    return (await probe`select exists (select from pg_available_extensions where name = 'rum') as rum`)[0]!.rum as boolean
  } finally {
    await probe.end({ timeout: 5 })
  }
}

const mailPlans = (plans: string[]) => plans.filter(p => /\b(emails|threads)\b/.test(p))
const scansOfMail = (plans: string[]) => plans.filter(p => /Seq Scan on (emails|threads|email_contents)\b/.test(p))

async function mailbox(count: number): Promise<Mailbox> {
  const org = await createOrgCommand(sql, { plan: 'developer', name: `plans ${count}` })
  const inbox = await sql.begin(tx => createManagedInbox(tx, org.org_id, config.MANAGED_DOMAIN))
  await seedMailbox(sql, { orgId: org.org_id, address: inbox.address, count })
  return { orgId: org.org_id, address: inbox.address }
}

const message = (to: string, headers: Record<string, string>) => ({
  raw: new TextEncoder().encode(rfc822({ From: 'sam@sender.example', To: to, Date: new Date().toUTCString(), ...headers }, 'the figures for w17 look right\n')),
  mailFrom: 'sam@sender.example',
  rcptTo: [to],
  remoteIp: '127.0.0.1',
  tls: false,
})

beforeAll(() => {
  if (!embedded) admin = postgres(serverUrl, { max: 1, onnotice: () => {} })
})

afterAll(async () => {
  if (embedded) return
  await sql?.end({ timeout: 5 })
  for (let n = 1; n <= made; n++) await admin.unsafe(`drop database if exists ${name}_${n} with (force)`)
  await admin.unsafe(`drop database if exists ${TEMPLATE} with (force)`)
  await admin.end({ timeout: 5 })
})

describe.skipIf(embedded)('plans of the mailbox statements', () => {
  test('a statement planned on a nearly empty table reads it whole; refreshStatistics replaces the plan once the table grew', async () => {
    await freshDatabase()
    const tiny = await mailbox(20)
    // generic plans from the first execution on: PostgreSQL keeps one when it costs no more
    // than the plans for the values, which on a table of 20 rows it does not
    const session = explaining('force_generic_plan')
    try {
      const list = () => listEmails(session.client, tiny.orgId, { limit: 50, after: null }, { since: null, addresses: [] })
      session.take()
      await list()
      // made on 20 rows, the plan reads the table: kept, it would still read it at 30,000
      // (unless something else invalidates it meanwhile, as anything that overflows the
      // server's invalidation queue does, so that is not asserted)
      expect(scansOfMail(session.take())).not.toEqual([])
      await dropSearchIndexes()
      await seedMailbox(sql, { orgId: tiny.orgId, address: tiny.address, count: SIZE })
      expect((await refreshStatistics(sql)).analyzed).toContain('public.emails')
      await list()
      const plans = mailPlans(session.take())
      expect(plans).not.toEqual([])
      expect(scansOfMail(plans)).toEqual([])
    } finally {
      await session.client.end({ timeout: 5 })
    }
  }, 120_000)

  test('lists, threads, the cursor, search and the store keep index plans on a mailbox its statistics do not know', async () => {
    const big = await seededDatabase()
    const session = explaining('force_generic_plan')
    const ctx = createContext(config, session.client, new ServerKeys(TEST_SECRET), { plugins: PLUGINS, resolver: memoryResolver({}) })
    try {
      const plans = new Map<string, string[]>()
      const run = async (what: string, f: () => Promise<unknown>) => {
        session.take()
        await f()
        plans.set(what, mailPlans(session.take()))
      }
      const none = { since: null, addresses: [] }
      const first = await listEmails(session.client, big.orgId, { limit: 50, after: null }, none)
      await run('list', () => listEmails(session.client, big.orgId, { limit: 50, after: null }, none))
      await run('cursor', () => listEmails(session.client, big.orgId, { limit: 50, after: first.rows.at(-1)!.id }, none))
      const threadId = (first.rows[0] as { thread_id: string }).thread_id
      await run('thread filter', () => listEmails(session.client, big.orgId, { limit: 50, after: null }, { ...none, threadId }))
      await run('thread', () => getThread(session.client, big.orgId, threadId))
      await run('search, a word of most messages', () => searchEmails(session.client, big.orgId, 'w1', { limit: 50, after: null }))
      await run('search, a rare word', () => searchEmails(session.client, big.orgId, 'w45000', { limit: 50, after: null }))
      await run('search, a word of some messages', () => searchEmails(session.client, big.orgId, 'w300', { limit: 50, after: null }))
      await run('reply', () =>
        ingest(
          ctx,
          message(big.address, {
            Subject: 'Re: About it',
            'Message-ID': '<r1@sender.example>',
            'In-Reply-To': '<seed-500@bench.example>',
            References: '<seed-499@bench.example> <seed-500@bench.example>',
          }),
        ),
      )
      await run('new message', () => ingest(ctx, message(big.address, { Subject: 'Fresh', 'Message-ID': '<n1@sender.example>' })))

      for (const [what, found] of plans) {
        expect({ what, found: found.length > 0 }).toEqual({ what, found: true })
        expect({ what, scans: scansOfMail(found) }).toEqual({ what, scans: [] })
      }
      // the reply is looked up by its Message-IDs in the index, not by filtering the organization's mail
      const reply = plans.get('reply')!.join('\n')
      expect(reply).toMatch(/on emails_message_id_org_idx[^\n]*\n\s+Index Cond: \(message_id = r\.message_id\)/)
      expect(reply).not.toContain('emails_org_idx')
      // the thread's messages come from the thread's index entries alone
      expect(plans.get('thread')!.join('\n')).not.toContain('emails_org_idx')
      // a word of most messages fills its page from the newest messages, tested by the organization's index
      const common = plans.get('search, a word of most messages')!.join('\n')
      expect(common).toContain('emails_org_received_idx')
      expect(common).not.toMatch(/emails_search_(rum_)?idx/)
      // rarer words read the index of words, for the word and the organization's lexeme together
      for (const what of ['search, a rare word', 'search, a word of some messages'])
        expect(plans.get(what)!.join('\n')).toMatch(ordered ? /Index Scan using emails_search_rum_idx/ : /Bitmap Index Scan on emails_search_idx/)
      // the reply joined the seeded thread
      const [stored] = await sql<{ same: boolean }[]>`
        select r.thread_id = s.thread_id as same from emails r, emails s
         where r.org_id = ${big.orgId} and r.message_id = '<r1@sender.example>' and s.org_id = ${big.orgId} and s.message_id = '<seed-500@bench.example>'`
      expect(stored!.same).toBe(true)
    } finally {
      await session.client.end({ timeout: 5 })
    }
  }, 180_000)

  test.skipIf(!ordered)(
    'with RUM, the ordered index hands over the matches of a rarer and of a common word newest first, unsorted by the plan',
    async () => {
      const big = await seededDatabase()
      // another organization whose mail has every word: none of it is read
      await mailbox(2_000)
      const session = explaining('force_generic_plan')
      try {
        // w100 is in about one message in 17, w300 in one in 50, w45000 in a few
        for (const word of ['w100', 'w300', 'w45000']) {
          session.take()
          const found = await searchEmails(session.client, big.orgId, word, { limit: 50, after: null })
          const plan = mailPlans(session.take()).find(p => p.includes('emails_search_rum_idx'))
          expect({ word, plan: plan ?? null }).not.toEqual({ word, plan: null })
          // the index orders the matches (Order By), the plan sorts nothing and reads no other index of words
          expect(plan).toMatch(/Index Scan using emails_search_rum_idx on emails[^\n]*\n\s+Index Cond: \(search @@ \$1\)/)
          expect(plan).toContain('Order By: (received_at <=| ')
          expect(plan).not.toContain('Sort Key')
          expect(plan).not.toContain('emails_search_idx')
          // newest first, and of this organization only
          const truth = await sql<{ id: string }[]>`
          select id from emails where org_id = ${big.orgId} and search @@ ${word}::tsquery order by received_at desc, id desc limit 51`
          expect(found.rows.map(r => r.id)).toEqual(truth.map(r => r.id))
        }
        // a word of nearly every message fills its page from the newest messages: the index of words is not asked
        session.take()
        await searchEmails(session.client, big.orgId, 'w1', { limit: 50, after: null })
        expect(mailPlans(session.take()).join('\n')).not.toContain('emails_search_rum_idx')
      } finally {
        await session.client.end({ timeout: 5 })
      }
    },
    180_000,
  )

  test("a list of one address, and a long-poll's read of it since an instant, read that address's mail by index, not the organization's", async () => {
    const big = await seededDatabase()
    // another inbox of the same organization, with no mail: its long-polls wait while the big one fills
    const quiet = await sql.begin(tx => createManagedInbox(tx, big.orgId, config.MANAGED_DOMAIN))
    // statistics from before the mail came (the planner takes the organization for empty), and
    // every plan generic, as a prepared statement's may be: only the address's index serves it
    const session = explaining('force_generic_plan')
    try {
      const read = (since: Date | null) => listEmails(session.client, big.orgId, { limit: 10, after: null }, { since, addresses: [quiet.address] })
      session.take()
      expect((await read(null)).rows).toEqual([])
      expect((await read(new Date(Date.now() - 60_000))).rows).toEqual([])
      const plans = mailPlans(session.take()).join('\n')
      expect(plans).toContain('emails_address_idx')
      expect(plans).not.toContain('emails_org_idx')
      expect(scansOfMail([plans])).toEqual([])
      // and the address's own mail comes back, in any case of the address
      const own = await listEmails(session.client, big.orgId, { limit: 10, after: null }, { since: null, addresses: [big.address.toUpperCase()] })
      expect(own.rows.length).toBe(11) // limit + 1: there is more
    } finally {
      await session.client.end({ timeout: 5 })
    }
  }, 180_000)
  test('label=unread, newest first, reads emails_unread_idx on 100,000 messages; read walks the mailbox newest first; a custom label reads its index', async () => {
    const big = await seededDatabase()
    await dropSearchIndexes()
    await seedMailbox(sql, { ...big, count: LABELED_SIZE - SIZE })
    const session = explaining('force_generic_plan')
    try {
      const plans = new Map<string, string>()
      const run = async <T>(what: string, f: () => Promise<T>) => {
        session.take()
        const result = await f()
        plans.set(what, mailPlans(session.take()).join('\n'))
        return result
      }
      const page = { limit: 50, after: null }
      const unread = await run('unread', () => listEmails(session.client, big.orgId, page, { since: null, addresses: [], labels: ['unread'] }))
      // one message in UNREAD_EVERY of the seed is unread: a page, and the row that says more follow
      expect(unread.rows).toHaveLength(51)
      expect(unread.rows.every(r => r.labels.includes('unread'))).toBe(true)
      const edge = unread.rows[49]!.id
      await run('unread, the next page', () =>
        listEmails(session.client, big.orgId, { limit: 50, after: edge }, { since: null, addresses: [], labels: ['unread'] }),
      )
      await run('read', () => listEmails(session.client, big.orgId, page, { since: null, addresses: [], labels: ['read'] }))
      await run('a custom label', () => listEmails(session.client, big.orgId, page, { since: null, addresses: [], labels: ['project-x'] }))
      await run('unread and a custom label', () => listEmails(session.client, big.orgId, page, { since: null, addresses: [], labels: ['unread', 'project-x'] }))
      await run('unread threads', () => listThreads(session.client, big.orgId, page, ['unread']))
      for (const [what, plan] of plans) expect({ what, found: plan.length > 0, scans: scansOfMail([plan]) }).toEqual({ what, found: true, scans: [] })
      expect(plans.get('unread')).toContain('emails_unread_idx')
      expect(plans.get('unread')).not.toMatch(/Sort Key/)
      expect(plans.get('unread, the next page')).toContain('emails_unread_idx')
      expect(plans.get('read')).toContain('emails_org_idx')
      expect(plans.get('a custom label')).toContain('emails_labels_idx')
      expect(plans.get('unread threads')).toContain('emails_unread_idx')
    } finally {
      await session.client.end({ timeout: 5 })
    }
  }, 300_000)
})

/** Inbound mail is committed before the 250, many SMTP sessions per commit. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testSql } from '../../helpers/app'
import { until } from '../../helpers/until'
import { inboundHarness, managedAddress, type InboundHarness } from '../../helpers/mail'
import { EMAILS_CHANNEL } from '../../../src/events'
import { inboundCommits } from '../../../src/mail/inbound/ingest'
import { testDatabase } from '../../helpers/database'
import { holdOrgRow, inbound } from './helpers'

const embedded = (await testDatabase()).kind === 'pglite'

let h: InboundHarness

beforeAll(async () => {
  h = await inboundHarness()
})
afterAll(() => h.stop())

describe('stored before the 250, many sessions per commit', () => {
  test('the 250 follows the commit: the message, its thread and its delivery job are there when the client hears it', async () => {
    const sql = await testSql()
    const kai = await createOrg()
    const address = await managedAddress(h.ctx, kai.orgId)
    await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${crypto.randomUUID()}, ${kai.orgId}, 'http', 'https://hooks.example.com/in', true, '{}')`
    const info = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'committed', text: 'x' })
    expect(info.response).toStartWith('250 2.0.0')
    const [row] = await sql<{ thread_id: string; deliveries: number; jobs: number }[]>`
      select e.thread_id,
             (select count(*)::int from webhook_deliveries d where d.email_id = e.id) as deliveries,
             (select count(*)::int from jobs j join webhook_deliveries d on j.payload->>'delivery_id' = d.id::text where d.email_id = e.id) as jobs
        from emails e where e.org_id = ${kai.orgId} and e.subject = 'committed'`
    expect(row).toMatchObject({ deliveries: 1, jobs: 1 })
    expect(row!.thread_id).toBeString()
  })

  // Holding a row lock while other statements run needs a second connection, which PGlite does not have.
  test.skipIf(embedded)('messages that arrive while a batch is being written are stored together in the next transaction, in arrival order', async () => {
    const sql = await testSql()
    const { ingest } = await import('../../../src/mail/inbound/ingest')
    const gate = await createOrg()
    const gateAddress = await managedAddress(h.ctx, gate.orgId)
    const lea = await createOrg()
    const address = await managedAddress(h.ctx, lea.orgId)
    const notified: string[] = []
    const listening = await sql.listen(EMAILS_CHANNEL, orgId => void notified.push(orgId))
    const held = await holdOrgRow(gate.orgId)
    const queued: Promise<unknown>[] = []
    try {
      queued.push(ingest(h.ctx, inbound(gateAddress, { Subject: 'gate' })))
      await held.waiting()
      // one at a time into the queue, so the arrival order is known
      const arrive = async (m: ReturnType<typeof inbound>) => {
        queued.push(ingest(h.ctx, m))
        while (inboundCommits(h.ctx).pending < queued.length - 1) await Bun.sleep(2)
      }
      await arrive(inbound(address, { Subject: 'Plan', 'Message-ID': '<plan-1@sender.example>' }))
      await arrive(inbound(address, { Subject: 'Re: Plan', 'In-Reply-To': '<plan-1@sender.example>' }))
      for (const i of [1, 2, 3]) await arrive(inbound(address, { Subject: `Other ${i}` }))
    } finally {
      await held.release()
    }
    await Promise.all(queued)
    const rows = await sql<{ subject: string; thread_id: string; tx: string }[]>`
      select subject, thread_id, xmin::text as tx from emails where org_id = ${lea.orgId} order by id`
    expect(rows.map(r => r.subject)).toEqual(['Plan', 'Re: Plan', 'Other 1', 'Other 2', 'Other 3'])
    expect(new Set(rows.map(r => r.tx)).size).toBe(1)
    expect(rows[1]!.thread_id).toBe(rows[0]!.thread_id)
    // the batch counts its five messages in the organization's storage and notifies other processes, naming the address
    const [counters] = await sql<{ used: number; n: number; stored: number }[]>`
      select storage_used_bytes as used, emails_count as n, (select sum(size_bytes)::bigint from emails where org_id = ${lea.orgId}) as stored
        from orgs where id = ${lea.orgId}`
    expect([Number(counters!.used), counters!.n]).toEqual([Number(counters!.stored), 5])
    await until(
      async () => notified,
      n => n.includes(`${lea.orgId} ${address}`),
    )
    await listening.unlisten()
  })

  test.skipIf(embedded)(
    'a batch that cannot get a row lock gives up after the lock timeout: its sender gets 451, the mail queued behind it is stored',
    async () => {
      const stuck = await createOrg()
      const stuckAddress = await managedAddress(h.ctx, stuck.orgId)
      const next = await createOrg()
      const nextAddress = await managedAddress(h.ctx, next.orgId)
      const held = await holdOrgRow(stuck.orgId)
      try {
        const refused = h.transport
          .sendMail({ from: 'sam@sender.example', to: stuckAddress, subject: 'stuck', text: 'x' })
          .catch((e: { response?: string }) => e)
        await held.waiting()
        const stored = h.transport.sendMail({ from: 'sam@sender.example', to: nextAddress, subject: 'behind it', text: 'y' })
        expect(String(((await refused) as { response?: string }).response)).toStartWith('451 4.3.0')
        expect((await stored).response).toStartWith('250')
      } finally {
        await held.release()
      }
      expect((await h.request('GET', '/v1/emails', { key: stuck.key })).body.meta.total).toBe(0)
      expect((await h.latest(next)).subject).toBe('behind it')
    },
  )

  test.skipIf(embedded)('a batch with a message that cannot be stored: the others are stored once each, with their deliveries', async () => {
    const sql = await testSql()
    const { ingest } = await import('../../../src/mail/inbound/ingest')
    const gate = await createOrg()
    const gateAddress = await managedAddress(h.ctx, gate.orgId)
    const orgs = await Promise.all([createOrg(), createOrg()])
    const addresses = await Promise.all(orgs.map(o => managedAddress(h.ctx, o.orgId)))
    for (const o of orgs)
      await sql`insert into endpoints (id, org_id, kind, url, enabled, rules) values (${crypto.randomUUID()}, ${o.orgId}, 'http', 'https://hooks.example.com/in', true, '{}')`
    // resolved (as RCPT would have) to an organization that does not exist: its insert fails
    const ghost = `ghost-${crypto.randomUUID()}@${h.ctx.config.MANAGED_DOMAIN}`
    const poisoned = {
      ...inbound(ghost, { Subject: 'poison' }),
      recipients: [{ address: ghost, orgId: crypto.randomUUID(), storageLimit: null, headroom: null }],
    }
    const held = await holdOrgRow(gate.orgId)
    const results: Promise<unknown>[] = []
    try {
      results.push(ingest(h.ctx, inbound(gateAddress, { Subject: 'gate' })))
      await held.waiting()
      // one batch, the poisoned message between two good ones of two organizations, one of them to both
      for (const m of [inbound(addresses[0]!, { Subject: 'good 1' }), poisoned, { ...inbound(addresses[0]!, { Subject: 'good 2' }), rcptTo: addresses }]) {
        results.push(ingest(h.ctx, m).catch(error => error))
        while (inboundCommits(h.ctx).pending < results.length - 1) await Bun.sleep(2)
      }
    } finally {
      await held.release()
    }
    const [, first, failed, second] = await Promise.all(results)
    expect(failed).toBeInstanceOf(Error)
    expect(first).toMatchObject({ stored: [{ orgId: orgs[0]!.orgId }] })
    expect((second as { stored: unknown[] }).stored).toHaveLength(2)
    const counts = await sql<{ org_id: string; subject: string; emails: number; deliveries: number }[]>`
      select e.org_id, e.subject, count(distinct e.id)::int as emails, count(d.id)::int as deliveries
        from emails e left join webhook_deliveries d on d.email_id = e.id
       where e.org_id = any(${orgs.map(o => o.orgId)}::uuid[]) group by 1, 2`
    const rows = counts.map(c => `${c.org_id === orgs[0]!.orgId ? 'first' : 'second'} org: ${c.subject}, ${c.emails} email, ${c.deliveries} delivery`)
    expect(rows.sort()).toEqual(['first org: good 1, 1 email, 1 delivery', 'first org: good 2, 1 email, 1 delivery', 'second org: good 2, 1 email, 1 delivery'])
  })

  test('each message logs one structured line: what was stored where, its verdicts and its duration', async () => {
    const { ingest } = await import('../../../src/mail/inbound/ingest')
    const { setLogLevel } = await import('../../../src/log')
    const nia = await createOrg()
    const address = await managedAddress(h.ctx, nia.orgId)
    const lines: string[] = []
    const write = process.stdout.write
    process.stdout.write = ((chunk: string) => (lines.push(String(chunk)), true)) as typeof process.stdout.write
    setLogLevel('info')
    try {
      await ingest(h.ctx, inbound(address, { Subject: 'logged' }))
    } finally {
      setLogLevel((process.env.TEST_LOG_LEVEL as 'silent') ?? 'silent')
      process.stdout.write = write
    }
    const logged = lines.map(l => JSON.parse(l)).filter(l => l.msg === 'inbound message')
    expect(logged).toHaveLength(1)
    expect(logged[0]).toMatchObject({
      level: 'info',
      event_type: 'email.received',
      stored: [{ org_id: nia.orgId }],
      refused_storage_full: [],
      spf: 'none',
      dkim: ['none'],
      dmarc: 'none',
    })
    expect(logged[0].duration_ms).toBeNumber()
  })

  test('a message that cannot be stored fails alone: the others of its batch are stored', async () => {
    const { GroupCommit } = await import('../../../src/db/group-commit')
    const writes: number[][] = []
    const commits = new GroupCommit<number, number>(async batch => {
      writes.push(batch)
      if (batch.includes(13)) throw new Error('cannot store 13')
      return batch.map(n => n + 1)
    })
    const results = await Promise.allSettled([1, 13, 2, 3].map(n => commits.submit(n)))
    expect(results.map(r => (r.status === 'fulfilled' ? r.value : 'rejected'))).toEqual([2, 'rejected', 3, 4])
    // the lone first write, the batch that failed, then its items one by one
    expect(writes).toEqual([[1], [13, 2, 3], [13], [2], [3]])
  })
})

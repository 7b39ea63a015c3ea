/** Which recipients are accepted at RCPT, and where their copies go. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testSql } from '../../helpers/app'
import { inboundHarness, managedAddress, rfc822, type InboundHarness } from '../../helpers/mail'
import { inboundCommits } from '../../../src/mail/inbound/ingest'
import { testDatabase } from '../../helpers/database'
import { holdOrgRow, inbound } from './helpers'

const embedded = (await testDatabase()).kind === 'pglite'

let h: InboundHarness

beforeAll(async () => {
  h = await inboundHarness()
})
afterAll(() => h.stop())

describe('recipients', () => {
  test('one query resolves every recipient in order: managed inboxes, verified domains, refusals, storage headroom', async () => {
    const { resolveRecipients, replies } = await import('../../../src/mail/inbound/recipients')
    const { markDomainVerified } = await import('../../../src/domains/service')
    const sql = await testSql()
    const free = await createOrg({ plan: 'free' })
    const paid = await createOrg({ plan: 'developer' })
    const freeAddress = await managedAddress(h.ctx, free.orgId)
    const domain = `recv-${crypto.randomUUID().slice(0, 8)}.example.com`
    await markDomainVerified(sql, h.ctx.keys, h.ctx.config.MANAGED_DOMAIN, paid.orgId, domain)
    await sql`update orgs set storage_used_bytes = 1000 where id = ${free.orgId}`
    const ghost = `ghost-${crypto.randomUUID()}@${h.ctx.config.MANAGED_DOMAIN}`
    const resolved = await resolveRecipients(h.ctx, [`Someone@${domain.toUpperCase()}.`, ghost, freeAddress.toUpperCase(), 'x@elsewhere.example', freeAddress])
    expect(resolved).toEqual([
      { address: `someone@${domain}.`, orgId: paid.orgId, storageLimit: null, headroom: null },
      replies.unknownUser,
      { address: freeAddress, orgId: free.orgId, storageLimit: 100 * 1024 * 1024, headroom: 100 * 1024 * 1024 - 1000 },
      replies.relayDenied,
      { address: freeAddress, orgId: free.orgId, storageLimit: 100 * 1024 * 1024, headroom: 100 * 1024 * 1024 - 1000 },
    ])
    expect(await resolveRecipients(h.ctx, [])).toEqual([])
  })

  test('storage filled up between RCPT and DATA: that copy is refused, the other organization gets its own', async () => {
    const { ingest } = await import('../../../src/mail/inbound/ingest')
    const sql = await testSql()
    const full = await createOrg({ plan: 'free' })
    const roomy = await createOrg({ plan: 'free' })
    const fullAddress = await managedAddress(h.ctx, full.orgId)
    const roomyAddress = await managedAddress(h.ctx, roomy.orgId)
    const raw = new TextEncoder().encode(rfc822({ From: 'sam@sender.example', To: `${fullAddress}, ${roomyAddress}`, Subject: 'late' }, 'x\n'))
    await sql`update orgs set storage_used_bytes = 100 * 1024 * 1024 where id = ${full.orgId}`
    const result = await ingest(h.ctx, { raw, mailFrom: 'sam@sender.example', rcptTo: [fullAddress, roomyAddress], remoteIp: '127.0.0.1', tls: false })
    expect(result.refused).toEqual([full.orgId])
    expect((await h.request('GET', '/v1/emails', { key: full.key })).body.data).toEqual([])
    expect((await h.request('GET', '/v1/emails', { key: roomy.key })).body.data.map((e: { subject: string }) => e.subject)).toEqual(['late'])
    const [counters] = await sql<{ used: number; n: number }[]>`select storage_used_bytes as used, emails_count as n from orgs where id = ${roomy.orgId}`
    expect([Number(counters!.used), counters!.n]).toEqual([raw.byteLength, 1])
  })

  test.skipIf(embedded)('concurrent mail cannot take a free organization past its limit: the messages that no longer fit when stored are refused', async () => {
    const { ingest } = await import('../../../src/mail/inbound/ingest')
    const sql = await testSql()
    const org = await createOrg({ plan: 'free' })
    const address = await managedAddress(h.ctx, org.orgId)
    // the same size each, so that any two fit whichever order the batches take
    const messages = ['one', 'two', 'six'].map(subject => inbound(address, { Subject: subject }))
    const size = messages[0]!.raw.byteLength
    expect(new Set(messages.map(m => m.raw.byteLength))).toEqual(new Set([size]))
    const limit = 100 * 1024 * 1024
    // room for two of the three, and all three read that headroom before any of them is stored
    await sql`update orgs set storage_used_bytes = ${limit - 2 * size - 1}, emails_count = 0 where id = ${org.orgId}`
    const held = await holdOrgRow(org.orgId)
    const ingests = messages.map(m => ingest(h.ctx, m))
    try {
      // the first message's batch waits for the lock, the other two queue behind it
      await held.waiting()
      while (inboundCommits(h.ctx).pending < 2) await Bun.sleep(5)
    } finally {
      await held.release()
    }
    const results = await Promise.all(ingests)
    expect(results.map(r => r.stored.length).sort()).toEqual([0, 1, 1])
    expect(results.flatMap(r => r.refused)).toEqual([org.orgId])
    const [counters] = await sql<{ used: number; n: number }[]>`select storage_used_bytes as used, emails_count as n from orgs where id = ${org.orgId}`
    expect([Number(counters!.used), counters!.n]).toEqual([limit - 1, 2])
    expect((await h.request('GET', '/v1/emails', { key: org.key })).body.meta.total).toBe(2)
  })
})

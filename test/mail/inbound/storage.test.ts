/** Storage accounting and limits of inbound mail. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createOrg, testSql } from '../../helpers/app'
import { inboundHarness, managedAddress, type InboundHarness } from '../../helpers/mail'

let h: InboundHarness

beforeAll(async () => {
  h = await inboundHarness()
})
afterAll(() => h.stop())

describe('storage', () => {
  test('each stored message counts in /v1/account/storage', async () => {
    const erin = await createOrg()
    const address = await managedAddress(h.ctx, erin.orgId)
    await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'Count me', text: 'x'.repeat(5000) })
    const email = await h.latest(erin)
    const storage = (await h.request('GET', '/v1/account/storage', { key: erin.key })).body.data
    expect(storage.used_bytes).toBe(email.size_bytes)
    expect(storage.emails_count).toBe(1)
  })

  test('a free organization at its limit refuses mail with 452 4.2.2; a paid one does not', async () => {
    const free = await createOrg({ plan: 'free' })
    const address = await managedAddress(h.ctx, free.orgId)
    const sql = await testSql()
    await sql`update orgs set storage_used_bytes = 100 * 1024 * 1024 where id = ${free.orgId}`
    const err = await h.transport.sendMail({ from: 'sam@sender.example', to: address, subject: 'x', text: 'x' }).catch((e: { response?: string }) => e)
    expect(String(err.response)).toStartWith('452 4.2.2')
    const paid = await createOrg({ plan: 'developer' })
    const paidAddress = await managedAddress(h.ctx, paid.orgId)
    await sql`update orgs set storage_used_bytes = 100::bigint * 1024 * 1024 * 1024 where id = ${paid.orgId}`
    expect((await h.transport.sendMail({ from: 'sam@sender.example', to: paidAddress, subject: 'x', text: 'x' })).accepted).toEqual([paidAddress])
  })

  test('a message that passed RCPT but does not fit the headroom is refused at DATA with 452 4.2.2 and nothing is stored', async () => {
    const free = await createOrg({ plan: 'free' })
    const address = await managedAddress(h.ctx, free.orgId)
    const sql = await testSql()
    // 2 KB left; nodemailer declares no SIZE, so RCPT checks a size of 1 and accepts
    await sql`update orgs set storage_used_bytes = 100 * 1024 * 1024 - 2048 where id = ${free.orgId}`
    const err = await h.transport
      .sendMail({ from: 'sam@sender.example', to: address, subject: 'too big for what is left', text: 'z'.repeat(4096) })
      .catch((e: { response?: string }) => e)
    expect(String(err.response)).toStartWith('452 4.2.2')
    expect((await h.request('GET', '/v1/emails', { key: free.key })).body.meta.total).toBe(0)
  })

  test('a message over the size limit is refused with 552 5.3.4 and nothing is stored', async () => {
    const small = await inboundHarness({ SMTP_MAX_MESSAGE_BYTES: '4096' })
    try {
      const frank = await createOrg()
      const address = await managedAddress(small.ctx, frank.orgId)
      const err = await small.transport
        .sendMail({ from: 'sam@sender.example', to: address, subject: 'big', text: 'y'.repeat(10_000) })
        .catch((e: { response?: string }) => e)
      expect(String(err.response)).toMatch(/^552 5\.3\.4/)
      expect((await small.request('GET', '/v1/emails', { key: frank.key })).body.meta.total).toBe(0)
    } finally {
      await small.stop()
    }
  })
})
